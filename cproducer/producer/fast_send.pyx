# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. Its per-topic state dict and the metadata's last-use times
# are written without a lock, and it calls the accumulator and the partitioner, which keep the GIL.
"""The per-record fast path of ``KafkaProducer.send`` (Java's ``doSend`` without the detours).

Taken when the producer has no interceptors, serializers or custom partitioner and the record is
plain: bytes key/value (or None), no headers, the topic's metadata known and current. Everything
else, and every error, goes to the producer's Python path (``slow``), which raises the same clear
exceptions and then teaches this path the topic. The work per record is a few C checks, murmur2
for a keyed record, the size bound, one C-level ``RecordAccumulator.append`` and, when that made
or filled a batch, the Sender's wake-up: C flags when ``wakeup`` is the ``NetworkClient``'s
``SelectorWakeup.wakeup``. Other C paths (``cproducer.aio``) call ``send_c``, this path without the
Python-level call.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from posix.time cimport CLOCK_MONOTONIC, CLOCK_REALTIME, clock_gettime, timespec

from cproducer.network.selector_wakeup cimport SelectorWakeup, wake_for_data
from cproducer.producer.internals.record_accumulator cimport RecordAccumulator, RecordAppendResult
from cproducer.utils.murmur2 cimport murmur2_partition
from cproducer.record.record_batch_builder cimport NO_HEADERS_SIZE, size_upper_bound


cdef inline long long _clock_ms(int which) noexcept nogil:
    cdef timespec ts
    clock_gettime(which, &ts)
    return <long long>ts.tv_sec * 1000 + ts.tv_nsec // 1000000


cdef class FastSend:
    def __init__(self, RecordAccumulator acc, metadata, slow, wakeup, long long max_request_size,
                 long long total_memory, double max_block_ms, bint ignore_keys, clock=None):
        """``wakeup``: the function that wakes the Sender; when it is a ``SelectorWakeup``'s
        (the ``NetworkClient``'s), its flags are set in C instead of calling it."""
        self.acc = acc
        self.metadata = metadata
        self.metadata_version = metadata.version_cell
        self.topics_last_used = metadata._topics
        self.states = {}
        self.slow = slow
        self.wakeup = wakeup
        owner = getattr(wakeup, "__self__", None)
        self.waker = owner if isinstance(owner, SelectorWakeup) else None
        self.max_request_size = max_request_size
        self.total_memory = total_memory
        self.max_block_ms = max_block_ms
        self.ignore_keys = ignore_keys
        self.clock = clock
        self.divert = False

    def remember(self, str topic, int count, cluster, long long version):
        """The slow path found the topic's metadata: later sends take the fast path."""
        cdef _TopicState st = _TopicState.__new__(_TopicState)
        st.count = count
        st.cluster = cluster
        st.version = version
        st.last_used_ms = -1
        self.states[topic] = st

    def send(self, topic, value=None, key=None, headers=None, partition=None,
             timestamp_ms=None, callback=None):
        return self.send_c(topic, value, key, headers, partition, timestamp_ms, callback)

    cdef object send_c(self, topic, value, key, headers, partition, timestamp_ms, callback):
        cdef _TopicState st
        cdef Py_ssize_t klen = -1, vlen = -1, size
        cdef int part
        cdef long long now, ts
        cdef RecordAppendResult result
        st = self.states.get(topic)
        if (st is None or headers is not None or self.divert
                or st.version != self.metadata_version.value):
            return self.slow(topic, value, key, headers, partition, timestamp_ms, callback)
        if timestamp_ms is not None and type(timestamp_ms) is not int:
            return self.slow(topic, value, key, headers, partition, timestamp_ms, callback)
        if key is not None:
            if type(key) is not bytes:
                return self.slow(topic, value, key, headers, partition, timestamp_ms, callback)
            klen = PyBytes_GET_SIZE(key)
        if value is not None:
            if type(value) is not bytes:
                return self.slow(topic, value, key, headers, partition, timestamp_ms, callback)
            vlen = PyBytes_GET_SIZE(value)
        elif klen < 0:
            # neither key nor value: the slow path refuses it (kafka-python) or takes it (the
            # confluent facade)
            return self.slow(topic, value, key, headers, partition, timestamp_ms, callback)
        if partition is None:
            if klen >= 0 and not self.ignore_keys:
                part = murmur2_partition(<const unsigned char*>PyBytes_AS_STRING(key), klen,
                                         st.count)
            else:
                part = -1
        elif type(partition) is int and 0 <= <long long>partition < st.count:
            part = partition
        else:
            return self.slow(topic, value, key, headers, partition, timestamp_ms, callback)
        size = size_upper_bound(klen, vlen, NO_HEADERS_SIZE)
        if size > self.max_request_size or size > self.total_memory:
            return self.slow(topic, value, key, headers, partition, timestamp_ms, callback)
        # batches linger and expire on the monotonic clock; a record's default timestamp is the
        # wall clock's
        if self.clock is None:
            now = _clock_ms(CLOCK_MONOTONIC)
            ts = _clock_ms(CLOCK_REALTIME) if timestamp_ms is None else timestamp_ms
        else:
            now = self.clock.monotonic_ms()
            ts = self.clock.milliseconds() if timestamp_ms is None else timestamp_ms
        if now != st.last_used_ms:
            # the metadata's last use of the topic (its expiry), at the clock's resolution: one
            # int and dict write per millisecond, not per record
            self.topics_last_used[topic] = now
            st.last_used_ms = now
        result = self.acc.append(topic, part, ts, key, value, None, callback, self.max_block_ms,
                                 False, now, st.cluster)
        if result.batch_is_full or result.new_batch_created:
            if self.waker is not None:
                wake_for_data(self.waker)
            else:
                self.wakeup()
        return result.future
