# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. The per-topic state, the waiting messages and the random
# source are shared by the producing threads without a lock: the GIL makes each update atomic.
"""The per-message work of the facade's ``produce()``: librdkafka's checks, queue accounting and
partitioning, then cproducer's ``send`` with the message itself as the completion callback.

Per message: str -> UTF-8, the queue limits (``BufferError`` when full, as librdkafka's
``RD_KAFKA_RESP_ERR__QUEUE_FULL``), librdkafka's partitioner in C (CRC-32, murmur2 or FNV-1a of
the key, or the topic's time-based sticky partition), one ``Message``, one ``send``. The partition
is always chosen here and passed to ``send`` explicitly, so a key lands where librdkafka puts it.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8String
from cpython.number cimport PyNumber_Index
from libc.stdint cimport uint64_t
from posix.time cimport CLOCK_MONOTONIC, CLOCK_REALTIME, clock_gettime, timespec

from cproducer.compat.confluent.message cimport DeliveryReports, Message, new_message
from cproducer.compat.confluent.partitioners cimport (
    hashed_partition,
    next_random,
    takes_sticky,
)
from cproducer.producer.internals.metadata_version cimport MetadataVersion

from cproducer import errors as _errors
from cproducer.compat.confluent.error import (
    MSG_SIZE_TOO_LARGE,
    MSG_TIMED_OUT,
    QUEUE_FULL,
    UNKNOWN_PARTITION,
    KafkaError,
    KafkaException,
    code_of,
    from_exception,
)
from cproducer.compat.confluent.partitioners import kind_of, seed

cdef int _MSG_SIZE_TOO_LARGE = MSG_SIZE_TOO_LARGE
cdef int _UNKNOWN_PARTITION = UNKNOWN_PARTITION
cdef int _MSG_TIMED_OUT = MSG_TIMED_OUT
cdef int _QUEUE_FULL = QUEUE_FULL


cdef inline long long _wall_ms() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_REALTIME, &ts)
    return <long long>ts.tv_sec * 1000 + ts.tv_nsec // 1000000


cdef inline long long _mono_ms() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <long long>ts.tv_sec * 1000 + ts.tv_nsec // 1000000


@cython.final
cdef class _Topic:
    cdef int count  # 0: the topic's metadata is not known yet
    cdef long long version
    cdef int sticky
    cdef long long sticky_since_ms
    cdef bytearray available  # available[p]: partition p has a leader
    # messages produced before the topic's metadata arrived, in order:
    # (message, headers, requested partition, produced at (monotonic ms))
    cdef list waiting


cdef object _utf8(object obj, str what):
    if obj is None or type(obj) is bytes:
        return obj
    if type(obj) is str:
        return PyUnicode_AsUTF8String(obj)
    if isinstance(obj, bytes):
        return bytes(obj)
    if isinstance(obj, str):
        return PyUnicode_AsUTF8String(obj)
    raise TypeError(f"{what} must be str, bytes or None, got {type(obj).__name__}")


cdef list _headers(object headers):
    # confluent-kafka's forms: a list of (key, value) tuples or a dict; keys are str, values
    # bytes, str (sent as UTF-8) or None
    cdef list out = []
    if isinstance(headers, list):
        items = headers
        for item in items:
            if type(item) is not tuple or len(<tuple>item) != 2:
                raise TypeError("Headers are expected to be a list of (key, value) tuples")
    elif isinstance(headers, dict):
        items = list((<dict>headers).items())
    else:
        raise TypeError(
            f"expected headers to be dict or list of (key, value) tuples, not "
            f"{type(headers).__name__}")
    for k, v in items:
        if type(k) is not str:
            k = str(k)
        if v is not None and type(v) is not bytes:
            if isinstance(v, str):
                v = PyUnicode_AsUTF8String(v)
            elif isinstance(v, bytes):
                v = bytes(v)
            else:
                raise TypeError(
                    f"expected header value to be None, binary, or unicode string, not "
                    f"{type(v).__name__}")
        out.append((k, v))
    return out


cdef object _unable(int code, exc=None):
    err = KafkaError(code)
    detail = f": {exc}" if exc is not None and str(exc) else ""
    return KafkaException(KafkaError(code, f"Unable to produce message: {err.str()}{detail}"))


@cython.final
cdef class ProducePath:
    """``produce()`` and ``produce_batch()`` of one facade ``Producer``.

    A message for a topic whose metadata is not known yet waits here, unpartitioned (librdkafka's
    UA partition), while the producer fetches the metadata; ``drain()`` (from the next produce,
    poll or flush) partitions and sends it, or fails it with ``_MSG_TIMED_OUT`` once it waited
    ``message.timeout.ms``. So ``produce()`` never waits for the network, as with librdkafka.
    """

    cdef object send
    cdef object metadata
    cdef MetadataVersion metadata_version  # the metadata's version, read in C
    cdef object wakeup
    cdef object topic_time_ms
    cdef object check_send
    cdef dict topics
    cdef DeliveryReports reports
    cdef public object default_callback
    cdef int kind
    cdef long long sticky_ms
    cdef uint64_t rng
    cdef long long max_count
    cdef long long max_size
    cdef long long message_timeout_ms
    cdef readonly long long waiting
    cdef bint draining
    cdef public object closed_reason
    # poll(): the facade's full poll, and whether poll(0) may answer here when nothing but
    # delivery reports can be due (no statistics timer)
    cdef public object poll_slow
    cdef public bint quick_poll

    def __init__(self, send, check_send, metadata, wakeup, topic_time_ms,
                 DeliveryReports reports, str partitioner, long long sticky_ms,
                 long long max_count, long long max_size, long long message_timeout_ms,
                 default_callback=None):
        """``send``: cproducer's ``KafkaProducer.send``; ``check_send``: what ``send`` refuses
        before looking at the record (closed, no open transaction); ``metadata``: its
        ``ProducerMetadata`` (``version``, ``fetch()``, ``add()``); ``wakeup``: wakes its I/O
        thread; ``topic_time_ms``: the producer's clock for when a topic was last used."""
        self.send = send
        self.check_send = check_send
        self.metadata = metadata
        self.metadata_version = metadata.version_cell
        self.wakeup = wakeup
        self.topic_time_ms = topic_time_ms
        self.topics = {}
        self.reports = reports
        self.default_callback = default_callback
        self.kind = kind_of(partitioner)
        self.sticky_ms = sticky_ms
        self.rng = seed()
        self.max_count = max_count
        self.max_size = max_size
        self.message_timeout_ms = message_timeout_ms
        self.waiting = 0
        self.draining = False
        self.closed_reason = None
        self.poll_slow = None
        self.quick_poll = False

    cdef _Topic _topic(self, str topic):
        cdef _Topic st = self.topics.get(topic)
        cdef long long version = self.metadata_version.value
        cdef int p
        if st is not None and st.version == version:
            return st
        if st is None:
            st = _Topic.__new__(_Topic)
            st.count = 0
            st.sticky = -1
            st.sticky_since_ms = 0
            st.waiting = []
            self.topics[topic] = st
        cluster = self.metadata.fetch()
        count = cluster.partition_count_for_topic(topic)
        if count is None:
            count = 0
            self.metadata.add(topic, self.topic_time_ms())  # the next update asks for it
            self.wakeup()
        if st.count != count:
            st.sticky = -1
        st.count = count
        st.available = bytearray(count)
        for p in range(count):
            st.available[p] = cluster.leader_for((topic, p)) is not None
        st.version = version
        return st

    cdef int _random(self, _Topic st) noexcept:
        # librdkafka's rd_kafka_msg_partitioner_random: a second draw when the first partition
        # has no leader
        cdef int p = <int>((next_random(&self.rng) >> 33) % <uint64_t>st.count)
        if not st.available[p]:
            p = <int>((next_random(&self.rng) >> 33) % <uint64_t>st.count)
        return p

    cdef int _partition(self, _Topic st, key) except? -2:
        cdef bint has_key = key is not None
        cdef Py_ssize_t klen = PyBytes_GET_SIZE(key) if has_key else 0
        cdef long long now
        cdef int p
        if takes_sticky(self.kind, self.sticky_ms, has_key, klen):
            # librdkafka's rd_kafka_msg_sticky_partition: a new random partition once
            # sticky.partitioning.linger.ms passed since the last pick, or when it lost its
            # leader
            now = _mono_ms()
            if (st.sticky < 0 or now - st.sticky_since_ms >= self.sticky_ms
                    or not st.available[st.sticky]):
                st.sticky = self._random(st)
                st.sticky_since_ms = now
            return st.sticky
        p = hashed_partition(
            self.kind, has_key,
            <const unsigned char*>PyBytes_AS_STRING(key) if has_key else NULL,
            klen, st.count)
        return self._random(st) if p < 0 else p

    def produce(self, str topic, value=None, key=None, int partition=-1, callback=None,
                on_delivery=None, timestamp=0, headers=None):
        """confluent-kafka's ``Producer.produce``."""
        cdef Py_ssize_t vlen
        cdef _Topic st
        cdef int part
        cdef Message m
        cdef long long ts
        if self.closed_reason is not None:
            raise RuntimeError(self.closed_reason)
        # an integer only: a C long long parameter would cut a float to whole ms, where
        # confluent-kafka raises "'float' object cannot be interpreted as an integer"
        ts = timestamp if type(timestamp) is int else PyNumber_Index(timestamp)
        if self.waiting:
            self.drain()
        if type(value) is not bytes:
            value = _utf8(value, "value")
        if type(key) is not bytes:
            key = _utf8(key, "key")
        if callback is None:
            callback = on_delivery if on_delivery is not None else self.default_callback
        elif not callable(callback):
            # refused here, not when poll() would call it
            raise TypeError(f"callback must be callable, got {type(callback).__name__}")
        if on_delivery is not None and not callable(on_delivery):
            raise TypeError(f"on_delivery must be callable, got {type(on_delivery).__name__}")
        hdrs = None if headers is None else _headers(headers)
        if partition < -1:
            raise _unable(_UNKNOWN_PARTITION)
        vlen = 0 if value is None else PyBytes_GET_SIZE(value)
        if not self.reports.reserve(vlen, self.max_count, self.max_size):
            raise BufferError("Local: Queue full")
        try:
            if ts == 0:
                ts = _wall_ms()
            st = self._topic(topic)
            if st.count == 0 or st.waiting:
                # no metadata yet (or earlier messages still wait for it: keep their order);
                # what send() would refuse at once is refused now (outside a transaction)
                self.check_send()
                m = new_message(self.reports, topic, key, value, vlen, -1, ts, callback)
                st.waiting.append((m, hdrs, partition, _mono_ms()))
                self.waiting += 1
                return
            part = self._partition(st, key) if partition == -1 else partition
            m = new_message(self.reports, topic, key, value, vlen, part, ts, callback)
            self.send(topic, value, key, hdrs, part, ts, m)
        except BaseException as exc:
            self.reports.release(vlen)
            if isinstance(exc, _errors.KafkaError):
                raise self._produce_error(exc) from exc
            raise

    def poll(self, double timeout=-1):
        """confluent-kafka's ``Producer.poll``: ``poll(0)`` in a produce loop is answered here
        (serving the ready reports); anything else goes to the facade's poll."""
        cdef DeliveryReports reports = self.reports
        if (timeout == 0 and self.quick_poll and self.closed_reason is None and not self.waiting
                and not reports.events):
            if not reports.ready:
                return 0
            return reports.serve()
        return self.poll_slow(timeout)

    def drain(self):
        """Send the messages whose topic's metadata arrived meanwhile; fail those that waited
        ``message.timeout.ms`` (``_MSG_TIMED_OUT``) or whose topic cannot be produced to.

        One thread drains at a time; a message leaves the waiting list only after it was handed
        to ``send``, so a produce() meanwhile (which sees the list non-empty) queues behind it
        and each thread's messages keep their order."""
        cdef _Topic st
        cdef Message m
        cdef list waiting
        cdef long long now = _mono_ms()
        cdef Py_ssize_t i
        cdef int part
        if self.draining:
            return
        self.draining = True
        try:
            for topic in list(self.topics):
                st = self.topics[topic]
                if not st.waiting:
                    continue
                st = self._topic(topic)
                if st.count == 0:
                    try:
                        self.metadata.maybe_throw_exception_for_topic(topic)
                    except _errors.KafkaError as exc:
                        self._fail_waiting(st, from_exception(exc), now + self.message_timeout_ms)
                        continue
                    self._fail_waiting(st, KafkaError(_MSG_TIMED_OUT), now)
                    continue
                waiting = st.waiting
                i = 0
                try:
                    while i < len(waiting):
                        m, hdrs, partition, _since = waiting[i]
                        i += 1
                        self.waiting -= 1
                        try:
                            part = self._partition(st, m._key) if partition == -1 else partition
                            m._partition = part
                            self.send(topic, m._value, m._key, hdrs, part, m._timestamp, m)
                        except _errors.KafkaError as exc:
                            err = self._produce_error(exc)
                            if isinstance(err, KafkaException):
                                m.complete_with(KafkaError(err.args[0].code()))
                            else:  # BufferError
                                m.complete_with(KafkaError(_QUEUE_FULL))
                finally:
                    del waiting[:i]
        finally:
            self.draining = False

    def purge_waiting(self, error):
        """Complete every message still waiting for its topic's metadata with ``error`` (as
        librdkafka's purge of its UA partitions: ``abort_transaction()``, ``purge()``)."""
        cdef _Topic st
        for st in list(self.topics.values()):
            self._fail_waiting(st, error, _mono_ms() + self.message_timeout_ms)

    cdef void _fail_waiting(self, _Topic st, error, long long now) except *:
        # the messages that waited message.timeout.ms (all of them when now is in the future)
        cdef Message m
        while st.waiting and now - (<tuple>st.waiting[0])[3] >= self.message_timeout_ms:
            m = (<tuple>st.waiting.pop(0))[0]
            self.waiting -= 1
            m.complete_with(error)

    cdef object _produce_error(self, exc):
        if isinstance(exc, _errors.BufferExhaustedError):
            return BufferError("Local: Queue full")
        if isinstance(exc, _errors.ProducerClosedError):
            return RuntimeError("Producer has been closed")
        if isinstance(exc, _errors.RecordTooLargeError):
            return _unable(_MSG_SIZE_TOO_LARGE)
        return _unable(code_of(exc), exc)

    def produce_batch(self, str topic, messages, int partition=-1, callback=None,
                      on_delivery=None):
        """confluent-kafka's ``Producer.produce_batch``, as documented: each dict may carry
        ``value``, ``key``, ``partition``, ``timestamp``, ``headers`` and ``callback``. A
        message that cannot be queued gets ``_error`` (a ``KafkaError``) in its dict; returns
        how many were queued."""
        cdef Py_ssize_t good = 0
        cdef dict d
        cdef object full = None
        if not isinstance(messages, list):
            raise TypeError("messages must be a list")
        if callback is None:
            callback = on_delivery
        # the whole list is checked before any message is queued, as confluent-kafka does
        for i, item in enumerate(<list>messages):
            if not isinstance(item, dict):
                raise TypeError(f"Message at index {i} must be a dict")
            for field in ("value", "key"):
                v = (<dict>item).get(field)
                if v is not None and not isinstance(v, (bytes, str)):
                    raise TypeError(f"Message {field} at index {i} must be bytes or str")
            p = (<dict>item).get("partition")
            if p is not None and type(p) is not int:
                raise TypeError(f"Message partition at index {i} must be int")
            cb = (<dict>item).get("callback")
            if cb is not None and not callable(cb):
                raise TypeError(f"Message callback at index {i} must be callable")
        for d in messages:
            if full is not None:
                # librdkafka's rd_kafka_produce_batch: once the queue was full, every later
                # message of the batch is refused too, even one that would fit
                d["_error"] = full
                continue
            p = d.get("partition")
            if p is None:
                p = partition
            try:
                self.produce(topic, d.get("value"), d.get("key"), p, d.get("callback") or callback,
                             None, d.get("timestamp") or 0, d.get("headers"))
                good += 1
            except BufferError:
                full = d["_error"] = _batch_error(_QUEUE_FULL)
            except KafkaException as exc:
                d["_error"] = _batch_error(exc.args[0].code())
        return good


cdef object _batch_error(int code):
    # confluent-kafka's wording: "Message failed: " and librdkafka's description of the code
    return KafkaError(code, f"Message failed: {KafkaError(code).str()}")
