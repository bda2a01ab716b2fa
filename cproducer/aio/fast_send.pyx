# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. Its random state and its counters are written without a
# lock, and it calls the engine's send, which keeps the GIL.
"""The per-record path of ``AIOKafkaProducer.send``, in C (as the engine's ``FastSend``).

Taken when the producer has no serializers and aiokafka's default partitioner, and the record is
plain: bytes key and/or value of at most about half a batch, no headers, the topic's partitions
known at the current metadata version, a transaction open if the producer is transactional, room
in the buffer for a new batch, no append waiting off the loop. The work: aiokafka's partition
choice (murmur2 of the key, or a random available partition), the record's future and its
``RecordDelivery``, one call of the engine's ``send``. Everything else goes to the producer's
Python path (``slow``), which does the same with every check and error of aiokafka, and may
wait.
"""

import asyncio
import os

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint64_t

from cproducer.aio.completions cimport LoopCompletions, RecordDelivery
from cproducer.utils.murmur2 cimport murmur2_partition

from cproducer import errors as engine_errors
from cproducer.aio.errors import translate
from cproducer.producer.internals.transaction_manager import IN_TRANSACTION

cdef object _Future = asyncio.Future


cdef class TopicPartitions:
    """A topic's partition ids as of one metadata version (for partitioning and checks)."""

    cdef readonly long long version
    cdef readonly int count
    cdef readonly tuple all
    cdef readonly frozenset all_set
    #: the partitions with a leader; all of them when none has one (as aiokafka picks)
    cdef readonly tuple available
    cdef readonly Py_ssize_t n_available

    def __init__(self, long long version, tuple all_ids, tuple available):
        self.version = version
        self.all = all_ids
        self.all_set = frozenset(all_ids)
        self.count = len(all_ids)
        self.available = available if available else all_ids
        self.n_available = len(self.available)


cdef class AioFastSend:
    cdef object engine_send
    cdef object slow
    cdef object pool
    cdef object metadata
    cdef LoopCompletions completions
    cdef object loop
    cdef object transaction_manager
    cdef dict topics
    cdef bint transactional
    cdef long long batch_size
    cdef Py_ssize_t small_record
    cdef uint64_t rng
    #: appends waiting off the loop (counted by the slow path): later records queue behind them
    cdef public int off_loop
    #: every send takes the slow path (the producer is stopping)
    cdef public bint divert

    def __init__(self, loop, engine_send, slow, pool, metadata, LoopCompletions completions,
                 transaction_manager,
                 dict topics, bint transactional, long long batch_size, Py_ssize_t small_record):
        self.loop = loop
        self.engine_send = engine_send
        self.slow = slow
        self.pool = pool
        self.metadata = metadata
        self.completions = completions
        self.transaction_manager = transaction_manager
        self.topics = topics
        self.transactional = transactional
        self.batch_size = batch_size
        self.small_record = small_record
        self.rng = int.from_bytes(os.urandom(8), "little") | 1
        self.off_loop = 0
        self.divert = False

    cdef inline uint64_t _random(self) noexcept:
        # xorshift64*: a random available partition per unkeyed record, as aiokafka's
        # random.choice, without a Python call
        cdef uint64_t x = self.rng
        x ^= x >> 12
        x ^= x << 25
        x ^= x >> 27
        self.rng = x
        return x * <uint64_t>0x2545F4914F6CDD1D

    async def send(self, topic, value=None, key=None, partition=None, timestamp_ms=None,
                   headers=None):
        cdef TopicPartitions st = self.topics.get(topic)
        cdef Py_ssize_t klen = 0, vlen = 0
        cdef int part
        cdef RecordDelivery delivery
        if (st is None or self.divert or self.off_loop or headers is not None
                or (key is None and value is None)
                or st.version != self.metadata.version
                or (self.transactional and self.transaction_manager.state != IN_TRANSACTION)):
            return await self.slow(topic, value, key, partition, timestamp_ms, headers)
        if key is not None:
            if type(key) is not bytes:
                return await self.slow(topic, value, key, partition, timestamp_ms, headers)
            klen = PyBytes_GET_SIZE(key)
        if value is not None:
            if type(value) is not bytes:
                return await self.slow(topic, value, key, partition, timestamp_ms, headers)
            vlen = PyBytes_GET_SIZE(value)
        if klen > self.small_record or vlen > self.small_record:
            return await self.slow(topic, value, key, partition, timestamp_ms, headers)
        if partition is None:
            if key is None:
                part = st.available[self._random() % <uint64_t>st.n_available]
            else:
                part = murmur2_partition(<const unsigned char*>PyBytes_AS_STRING(key), klen,
                                         st.count)
        elif type(partition) is int and 0 <= partition < st.count:
            part = partition
        else:
            return await self.slow(topic, value, key, partition, timestamp_ms, headers)
        # a new batch's buffer is free, so the engine's append cannot wait for memory (only this
        # thread appends: the free memory cannot shrink before the append)
        if self.pool.available_memory < self.batch_size:
            return await self.slow(topic, value, key, partition, timestamp_ms, headers)
        future = self.completions.new_future()
        delivery = RecordDelivery.__new__(RecordDelivery)
        delivery.completions = self.completions
        delivery.future = future
        try:
            self.engine_send(topic, value, key, None, part, timestamp_ms, delivery)
        except engine_errors.KafkaError as exc:
            raise translate(exc) from exc
        return future
