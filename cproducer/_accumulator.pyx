# cython: wraparound=True
"""RecordAccumulator, ProducerBatch, ProduceRequestResult, FutureRecordMetadata, RecordMetadata.

Java's ``producer.internals`` batching half, in Cython. Records are appended into per-partition
deques of ``ProducerBatch`` (each under its own lock), each batch writing straight into a buffer
from the ``BufferPool`` through a ``RecordBatchBuilder``. The Sender asks ``ready`` which nodes have
something to send, ``drain``s batches for them, and completes each batch's one
``ProduceRequestResult``; every record's light ``FutureRecordMetadata`` and callback reads from it.
Time is passed in (``now_ms``) by the caller: the clock is injectable.
"""

import logging
import random as _random
import threading
import time
from collections import deque

import numpy as np

cimport cython

from cpython.pythread cimport (
    NOWAIT_LOCK,
    WAIT_LOCK,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
)
from libc.stdint cimport int32_t, int64_t

from cproducer._partitioner cimport BuiltInPartitioner, StickyPartitionInfo
from cproducer._records cimport RecordBatchBuilder

from cproducer._records import estimate_size_in_bytes_upper_bound
from cproducer.cluster import TopicPartition
from cproducer.errors import KafkaError, KafkaTimeoutError, RecordTooLargeError

log = logging.getLogger("cproducer.accumulator")

cdef enum:
    STATE_IN_FLIGHT = 0
    STATE_SUCCEEDED = 1
    STATE_FAILED = 2
    STATE_SPLIT = 3


# ================================================================== results and futures


@cython.no_gc
cdef class RecordMetadata:
    cdef readonly str topic
    cdef readonly int partition
    cdef readonly long long offset
    cdef readonly long long timestamp
    cdef readonly int serialized_key_size
    cdef readonly int serialized_value_size

    def __init__(self, topic, partition, offset, timestamp, serialized_key_size=-1,
                 serialized_value_size=-1):
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.serialized_key_size = serialized_key_size
        self.serialized_value_size = serialized_value_size

    @property
    def topic_partition(self):
        return TopicPartition(self.topic, self.partition)

    def has_offset(self):
        return self.offset != -1

    def __eq__(self, other):
        if not isinstance(other, RecordMetadata):
            return NotImplemented
        return self._key() == (<RecordMetadata>other)._key()

    def __hash__(self):
        return hash(self._key())

    cdef tuple _key(self):
        return (self.topic, self.partition, self.offset, self.timestamp,
                self.serialized_key_size, self.serialized_value_size)

    def __repr__(self):
        return (f"RecordMetadata(topic={self.topic!r}, partition={self.partition}, "
                f"offset={self.offset}, timestamp={self.timestamp}, "
                f"serialized_key_size={self.serialized_key_size}, "
                f"serialized_value_size={self.serialized_value_size})")


_event_lock = threading.Lock()


cdef class ProduceRequestResult:
    """Completed once for a whole batch: base offset and log-append time, or an error."""
    cdef readonly object topic_partition
    cdef readonly long long base_offset
    cdef readonly long long log_append_time
    cdef readonly object error
    cdef object _record_errors
    cdef object _event
    cdef readonly bint completed
    cdef public object forward  # after a split: old relative offset -> (new batch, new offset)

    def __init__(self, topic_partition):
        self.topic_partition = topic_partition
        self.base_offset = -1
        self.log_append_time = -1
        self.error = None
        self._record_errors = None
        self._event = None  # made only when somebody waits before completion
        self.completed = False

    def set(self, long long base_offset, long long log_append_time, error=None,
            record_errors=None):
        self.base_offset = base_offset
        self.log_append_time = log_append_time
        self.error = error
        self._record_errors = record_errors

    def done(self):
        with _event_lock:
            if self.completed:
                raise RuntimeError("the result of this batch was already completed")
            self.completed = True
            event = self._event
        if event is not None:
            event.set()

    def wait(self, timeout=None):
        if self.completed:
            return True
        with _event_lock:
            if self.completed:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    cpdef object error_for(self, int relative_offset):
        if self.error is None:
            return None
        if self._record_errors is not None:
            return self._record_errors(relative_offset)
        return self.error


@cython.no_gc
cdef class FutureRecordMetadata:
    """One record's future: a reference into its batch's result, no heavyweight future."""
    cdef ProduceRequestResult _result
    cdef ProducerBatch _batch
    cdef int _rel
    cdef long long _create_ts
    cdef int _key_size
    cdef int _value_size

    cdef void _bind(self, ProducerBatch batch, int rel):
        self._batch = batch
        self._result = batch.result
        self._rel = rel

    cdef inline void _follow(self):
        # a split batch forwards each of its records to the batch it was re-appended to
        while self._result.forward is not None:
            batch, rel = self._result.forward[self._rel]
            self._bind(batch, rel)

    @property
    def is_done(self):
        self._follow()
        return self._result.completed

    @property
    def topic_partition(self):
        return self._result.topic_partition

    def done(self):
        return self.is_done

    cdef RecordMetadata _metadata(self):
        self._follow()
        cdef ProduceRequestResult r = self._result
        cdef RecordMetadata md = RecordMetadata.__new__(RecordMetadata)
        cdef ProducerBatch b = self._batch
        md.topic = b.topic
        md.partition = b.partition
        md.offset = -1 if r.base_offset < 0 else r.base_offset + self._rel
        md.timestamp = r.log_append_time if r.log_append_time != -1 else self._create_ts
        md.serialized_key_size = self._key_size
        md.serialized_value_size = self._value_size
        return md

    cdef object _error(self):
        self._follow()
        return self._result.error_for(self._rel)

    def get(self, timeout=None):
        """The RecordMetadata; raises the record's error, or KafkaTimeoutError."""
        cdef ProduceRequestResult r
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._follow()
            r = self._result
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not r.wait(remaining):
                raise KafkaTimeoutError(f"record not acknowledged within {timeout} s")
            if r.forward is None:  # not moved to a split batch meanwhile
                break
        err = self._error()
        if err is not None:
            raise err
        return self._metadata()

    def succeeded(self):
        return self.is_done and self._error() is None

    def failed(self):
        return self.is_done and self._error() is not None

    @property
    def exception(self):
        return self._error() if self.is_done else None

    @property
    def value(self):
        if self.is_done and self._error() is None:
            return self._metadata()
        return None

    def add_callback(self, fn, *args):
        """``fn(metadata, *args)`` once the record succeeded (at once if it already did)."""
        def on_completion(md, exc):
            if exc is None:
                fn(md, *args)
        self._batch._add_thunk(self, on_completion)
        return self

    def add_errback(self, fn, *args):
        """``fn(exception, *args)`` once the record failed (at once if it already did)."""
        def on_completion(md, exc):
            if exc is not None:
                fn(exc, *args)
        self._batch._add_thunk(self, on_completion)
        return self

    def __repr__(self):
        state = "done" if self.is_done else "pending"
        return f"<FutureRecordMetadata {self._result.topic_partition} {state}>"


cdef FutureRecordMetadata _new_future(ProducerBatch batch, int rel, long long ts, int ks, int vs):
    cdef FutureRecordMetadata f = FutureRecordMetadata.__new__(FutureRecordMetadata)
    f._batch = batch
    f._result = batch.result
    f._rel = rel
    f._create_ts = ts
    f._key_size = ks
    f._value_size = vs
    return f


# ================================================================== ProducerBatch


cdef inline int _size_of(object obj):
    return -1 if obj is None else len(obj)


cdef class ProducerBatch:
    """One batch of one partition: its builder, its records' callbacks, its one result."""

    def __init__(self, topic_partition, RecordBatchBuilder builder, long long created_ms,
                 bint is_splitting_batch=False):
        self.topic_partition = topic_partition
        self.topic = topic_partition[0]
        self.partition = topic_partition[1]
        self.builder = builder
        self.created_ms = created_ms
        self.last_attempt_ms = created_ms
        self.last_append_time = created_ms
        self.drained_ms = -1
        self.attempts = 0
        self.retry = False
        self.final_state = STATE_IN_FLIGHT
        self.result = ProduceRequestResult(topic_partition)
        self.thunks = []
        self.segments = []
        self.max_record_size = 0
        self.pooled_buffer = None
        self.is_splitting_batch = is_splitting_batch
        self.backoff_ms = 0
        self._lock = threading.Lock()

    cdef object _try_append(self, long long timestamp, object key, object value,
                            object headers, object callback, long long now):
        cdef int before = self.builder._pos
        cdef int rel = self.builder.try_append(timestamp, key, value, headers)
        cdef FutureRecordMetadata fut
        if rel < 0:
            return None
        if self.builder._pos - before > self.max_record_size:
            self.max_record_size = self.builder._pos - before
        self.last_append_time = now
        fut = _new_future(self, rel, timestamp, _size_of(key), _size_of(value))
        if callback is not None:
            # flat [future, callback, future, callback, ...]: no tuple per record
            self.thunks.append(fut)
            self.thunks.append(callback)
        return fut

    def try_append(self, long long timestamp, key, value, headers, callback, long long now_ms):
        return self._try_append(timestamp, key, value, headers, callback, now_ms)

    cdef void _add_thunk(self, object fut_obj, object fn) except *:
        cdef FutureRecordMetadata fut = fut_obj
        fut._follow()
        with self._lock:
            if self.final_state == STATE_IN_FLIGHT or self.final_state == STATE_SPLIT:
                if fut._batch is self:
                    self.thunks.append(fut)
                    self.thunks.append(fn)
                    return
        if fut._batch is not self:
            fut._batch._add_thunk(fut, fn)
            return
        _run_callback(fn, fut._metadata() if fut._error() is None else None, fut._error())

    def add_segment(self, segment):
        """A run of a send_many call's records: (batch_future, order, start, end, first_rel)."""
        self.segments.append(segment)

    # ---------------------------------------------------------- completion
    def complete(self, long long base_offset, long long log_append_time):
        """Success for every record; False (and nothing done) when already completed."""
        return self._done(base_offset, log_append_time, None, None)

    def complete_exceptionally(self, top_level_exception, record_exceptions=None):
        """Fail every record (``record_exceptions(i)`` gives record i's error when given)."""
        return self._done(-1, -1, top_level_exception, record_exceptions)

    def abort(self, exc):
        return self._done(-1, -1, exc, None)

    cdef bint _done(self, long long base_offset, long long log_append_time, object exc,
                    object record_exceptions) except *:
        cdef FutureRecordMetadata fut
        cdef ProduceRequestResult r = self.result
        with self._lock:
            if self.final_state != STATE_IN_FLIGHT:
                return False
            self.final_state = STATE_SUCCEEDED if exc is None else STATE_FAILED
            thunks, self.thunks = self.thunks, []
            segments = self.segments
        r.set(base_offset, log_append_time, exc, record_exceptions)
        cdef Py_ssize_t i
        cdef list flat = thunks
        for i in range(0, len(flat), 2):
            fut = flat[i]
            fn = flat[i + 1]
            if exc is None:
                _run_callback(fn, fut._metadata(), None)
            else:
                _run_callback(fn, None, fut._error())
        tp = self.topic_partition
        for bf, order, start, end, first_rel in segments:
            try:
                bf.complete_segment(order, start, end, tp.partition, base_offset, first_rel,
                                    None if exc is None else exc)
            except Exception:
                log.exception("error completing a send_many segment")
        r.done()
        return True

    # ---------------------------------------------------------- state
    def close(self):
        self.builder.close()

    def buffer(self):
        return self.builder.buffer()

    def set_producer_state(self, long long producer_id, int epoch, int base_sequence, bint txn):
        self.builder.set_producer_state(producer_id, epoch, base_sequence, txn)

    def reset_producer_state(self, long long producer_id, int epoch, int base_sequence, bint txn):
        self.builder.set_producer_state(producer_id, epoch, base_sequence, txn)

    def has_sequence(self):
        return self.builder._base_sequence != -1

    @property
    def base_sequence(self):
        return self.builder._base_sequence

    @property
    def producer_id(self):
        return self.builder._producer_id

    @property
    def producer_epoch(self):
        return self.builder._producer_epoch

    @property
    def record_count(self):
        return self.builder._count

    @property
    def estimated_size_in_bytes(self):
        return self.builder.estimated_size_in_bytes

    @property
    def is_done(self):
        return self.final_state != STATE_IN_FLIGHT

    def is_full(self):
        return self.builder.is_full_c()

    def in_retry(self):
        return self.attempts > 0

    def waited_time_ms(self, long long now_ms):
        return max(0, now_ms - self.last_attempt_ms)

    def has_reached_delivery_timeout(self, long long delivery_timeout_ms, long long now_ms):
        return delivery_timeout_ms <= now_ms - self.created_ms

    def reenqueued(self, long long now_ms, long long backoff_ms=0):
        self.attempts += 1
        self.last_attempt_ms = max(self.last_append_time, now_ms)
        self.last_append_time = max(self.last_append_time, now_ms)
        self.retry = True
        self.backoff_ms = backoff_ms

    def drained(self, long long now_ms):
        self.drained_ms = max(self.drained_ms, now_ms)

    def records(self):
        """(timestamp, key, value, headers) of every record, decoded from the batch."""
        return _decode_records(self)

    def split(self, int split_batch_size):
        """Java's ProducerBatch.split: the records re-appended into batches of split_batch_size;
        every record's future, callback and send_many segment moves to its new batch."""
        cdef ProducerBatch nb
        cdef FutureRecordMetadata fut
        cdef int rel, new_rel
        records = _decode_records(self)
        thunks_by_rel = {}
        with self._lock:
            if self.final_state != STATE_IN_FLIGHT:
                raise RuntimeError("cannot split a completed batch")
            self.final_state = STATE_SPLIT
            for i in range(0, len(self.thunks), 2):
                fut = self.thunks[i]
                thunks_by_rel.setdefault(fut._rel, []).append((fut, self.thunks[i + 1]))
            self.thunks = []
        batches = []
        placement = []  # old relative offset -> (batch index, new relative offset)
        forward = []  # old relative offset -> (new batch, new relative offset)
        nb = None
        for rel, (ts, key, value, headers) in enumerate(records):
            new_rel = -1 if nb is None else nb.builder.try_append(ts, key, value, headers)
            if new_rel < 0:
                size = max(split_batch_size, estimate_size_in_bytes_upper_bound(key, value,
                                                                                headers))
                builder = RecordBatchBuilder(bytearray(size), self.builder._codec,
                                             split_batch_size)
                nb = ProducerBatch(self.topic_partition, builder, self.created_ms, True)
                batches.append(nb)
                new_rel = nb.builder.try_append(ts, key, value, headers)
            placement.append((len(batches) - 1, new_rel))
            forward.append((nb, new_rel))
            for fut, fn in thunks_by_rel.get(rel, ()):
                nb.thunks.append(fut)
                nb.thunks.append(fn)
        for bf, order, start, end, first_rel in self.segments:
            i = start
            while i < end:
                bidx, new_rel = placement[first_rel + i - start]
                j = i + 1
                while j < end and placement[first_rel + j - start] == (bidx, new_rel + j - i):
                    j += 1
                (<ProducerBatch>batches[bidx]).segments.append((bf, order, i, j, new_rel))
                i = j
        if self.has_sequence():
            seq = self.builder._base_sequence
            for nb in batches:
                nb.builder.set_producer_state(self.builder._producer_id,
                                              self.builder._producer_epoch, seq,
                                              self.builder._transactional)
                seq += nb.builder._count
        # futures follow ``forward`` to their new batch; wake get() callers blocked on the old one
        self.result.forward = forward
        self.result.set(-1, -1, RecordTooLargeError("batch split"), None)
        self.result.done()
        return batches

    def __repr__(self):
        return (f"ProducerBatch({self.topic_partition}, records={self.record_count}, "
                f"state={self.final_state})")


cdef void _run_callback(object fn, object md, object exc):
    try:
        fn(md, exc)
    except Exception:
        log.exception("error in a record's completion callback")


def _read_varint(const unsigned char[:] buf, Py_ssize_t pos):
    cdef unsigned long long result = 0
    cdef int shift = 0
    cdef unsigned char b
    while True:
        b = buf[pos]
        pos += 1
        result |= <unsigned long long>(b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return <long long>((result >> 1) ^ -(result & 1)), pos


def _decode_records(ProducerBatch batch):
    from cproducer import compression

    cdef RecordBatchBuilder b = batch.builder
    if b._closed:
        data = bytes(b.buffer())
        body = data[61:]
        if b._codec:
            body = compression.decompress(b._codec, body)
    else:
        body = bytes(b._mv[61:b._pos])
    first_ts = b._first_ts
    out = []
    pos = 0
    view = memoryview(body)
    for _ in range(b._count):
        length, pos = _read_varint(view, pos)
        end = pos + length
        pos += 1  # attributes
        ts_delta, pos = _read_varint(view, pos)
        _offset_delta, pos = _read_varint(view, pos)
        klen, pos = _read_varint(view, pos)
        key = None if klen < 0 else body[pos:pos + klen]
        pos += max(klen, 0)
        vlen, pos = _read_varint(view, pos)
        value = None if vlen < 0 else body[pos:pos + vlen]
        pos += max(vlen, 0)
        nh, pos = _read_varint(view, pos)
        headers = []
        for _h in range(nh):
            hk, pos = _read_varint(view, pos)
            hkey = body[pos:pos + hk].decode("utf-8")
            pos += hk
            hv, pos = _read_varint(view, pos)
            headers.append((hkey, None if hv < 0 else body[pos:pos + hv]))
            pos += max(hv, 0)
        out.append((first_ts + ts_delta, key, value, headers or None))
        pos = end
    return out


# ================================================================== accumulator


@cython.no_gc
cdef class RecordAppendResult:
    def __init__(self, future, batch_is_full, new_batch_created, abort_for_new_batch,
                 appended_bytes):
        self.future = future
        self.batch_is_full = batch_is_full
        self.new_batch_created = new_batch_created
        self.abort_for_new_batch = abort_for_new_batch
        self.appended_bytes = appended_bytes


cdef RecordAppendResult _result(object future, bint full, bint new_batch, bint abort,
                                int appended):
    cdef RecordAppendResult r = RecordAppendResult.__new__(RecordAppendResult)
    r.future = future
    r.batch_is_full = full
    r.new_batch_created = new_batch
    r.abort_for_new_batch = abort
    r.appended_bytes = appended
    return r


class ReadyCheckResult:
    __slots__ = ("ready_nodes", "next_ready_check_delay_ms", "unknown_leader_topics")

    def __init__(self, ready_nodes, next_ready_check_delay_ms, unknown_leader_topics):
        self.ready_nodes = ready_nodes
        self.next_ready_check_delay_ms = next_ready_check_delay_ms
        self.unknown_leader_topics = unknown_leader_topics


cdef class FastLock:
    """A plain lock with a C-level uncontended path; blocks with the GIL released."""

    def __cinit__(self):
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError("cannot allocate a lock")

    def __dealloc__(self):
        if self._lock != NULL:
            PyThread_free_lock(self._lock)

    cdef void acquire_c(self) noexcept:
        if PyThread_acquire_lock(self._lock, NOWAIT_LOCK):
            return
        with nogil:
            PyThread_acquire_lock(self._lock, WAIT_LOCK)

    cdef void release_c(self) noexcept:
        PyThread_release_lock(self._lock)

    def __enter__(self):
        self.acquire_c()
        return self

    def __exit__(self, *exc):
        self.release_c()
        return False


cdef class PartitionDeque:
    """The batches of one partition, oldest first, under their own lock."""

    def __init__(self, tp):
        self.tp = tp
        self.batches = deque()
        self.lock = FastLock()


cdef class TopicInfo:
    def __init__(self, str topic, int batch_size, random):
        self.topic = topic
        self.compression_ratio = 1.0  # Java's CompressionRatioEstimator, per topic
        self.deques = {}
        self.partitioner = BuiltInPartitioner(topic, batch_size, random)
        self.lock = threading.Lock()

    cdef PartitionDeque get_or_create(self, int partition):
        cdef PartitionDeque dq = self.deques.get(partition)
        if dq is None:
            with self.lock:
                dq = self.deques.get(partition)
                if dq is None:
                    dq = PartitionDeque(TopicPartition(self.topic, partition))
                    self.deques[partition] = dq
        return dq


cdef bint _all_batches_full(PartitionDeque dq):
    # Java's allBatchesFull: the last batch is full (the others are, being older)
    if not dq.batches:
        return True
    return (<ProducerBatch>dq.batches[-1]).builder.is_full_c()


cdef class RecordAccumulator:
    def __init__(self, int batch_size, int compression_type, long long linger_ms,
                 long long retry_backoff_ms, long long retry_backoff_max_ms,
                 long long delivery_timeout_ms, buffer_pool,
                 bint partitioner_adaptive_partitioning_enable=True,
                 long long partitioner_availability_timeout_ms=0, transaction_manager=None,
                 random=None):
        self.batch_size = batch_size
        self.compression_type = compression_type
        self.linger_ms = linger_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = max(retry_backoff_max_ms, retry_backoff_ms)
        self.delivery_timeout_ms = delivery_timeout_ms
        self.pool = buffer_pool
        self.adaptive = partitioner_adaptive_partitioning_enable
        self.availability_timeout_ms = partitioner_availability_timeout_ms
        self.transaction_manager = transaction_manager
        self.random = random
        self.topic_infos = {}
        self.topic_lock = threading.Lock()
        self.incomplete = set()
        self.incomplete_lock = threading.Lock()
        self.muted = set()
        self.node_drain_index = {}
        self.node_stats = {}
        self.flushes_in_progress = 0
        self.appends_in_progress = 0
        self.closed = False
        self._jitter = _random.Random()

    cdef TopicInfo _topic_info(self, str topic):
        cdef TopicInfo ti = self.topic_infos.get(topic)
        if ti is None:
            with self.topic_lock:
                ti = self.topic_infos.get(topic)
                if ti is None:
                    ti = TopicInfo(topic, self.batch_size, self.random)
                    self.topic_infos[topic] = ti
        return ti

    def topic_info(self, str topic):
        return self._topic_info(topic)

    def deque_for(self, tp):
        """The PartitionDeque of a TopicPartition (created when missing)."""
        return self._topic_info(tp.topic).get_or_create(tp.partition)

    cdef object _try_append_dq(self, PartitionDeque dq, long long timestamp, key,
                               value, headers, callback, long long now):
        cdef ProducerBatch last
        cdef int before
        cdef FutureRecordMetadata fut
        if not dq.batches:
            return None
        last = dq.batches[-1]
        if last.final_state != STATE_IN_FLIGHT or last.builder._closed:
            return None
        before = last.builder._pos
        fut = last._try_append(timestamp, key, value, headers, callback, now)
        if fut is None:
            return None
        return _result(fut, len(dq.batches) > 1 or last.builder.is_full_c(), False, False,
                       last.builder._pos - before)

    cpdef object append(self, str topic, int partition, long long timestamp, key,
                        value, headers, callback, double max_time_to_block_ms,
                        bint abort_on_new_batch, long long now_ms, cluster):
        cdef TopicInfo ti = self._topic_info(topic)
        cdef StickyPartitionInfo info
        cdef BuiltInPartitioner bp = ti.partitioner
        cdef PartitionDeque dq
        cdef RecordAppendResult result
        cdef int effective
        cdef object buffer = None
        self.appends_in_progress += 1
        try:
            while True:
                if partition < 0:
                    info = bp.peek_current_partition_info(cluster)
                    effective = info.index
                else:
                    info = None
                    effective = partition
                dq = ti.get_or_create(effective)
                dq.lock.acquire_c()
                try:
                    if bp.is_partition_changed(info):
                        continue
                    result = self._try_append_dq(dq, timestamp, key, value, headers, callback,
                                                 now_ms)
                    if result is not None:
                        if info is not None:
                            bp.update_partition_info(info, result.appended_bytes, cluster,
                                                     _all_batches_full(dq))
                        return result
                finally:
                    dq.lock.release_c()
                if abort_on_new_batch:
                    return _result(None, False, False, True, 0)
                if buffer is None:
                    size = max(self.batch_size,
                               estimate_size_in_bytes_upper_bound(key, value, headers))
                    buffer = self.pool.allocate(size, max_time_to_block_ms)
                with dq.lock:
                    if bp.is_partition_changed(info):
                        continue
                    result = self._append_new_batch(dq, timestamp, key, value, headers,
                                                    callback, buffer, now_ms)
                    if result.new_batch_created:
                        buffer = None
                    if info is not None:
                        bp.update_partition_info(info, result.appended_bytes, cluster,
                                                 _all_batches_full(dq))
                    return result
        finally:
            if buffer is not None:
                self.pool.deallocate(buffer)
            self.appends_in_progress -= 1

    cdef object _append_new_batch(self, PartitionDeque dq, long long timestamp, key,
                                  value, headers, callback, buffer, long long now):
        cdef RecordAppendResult result
        cdef ProducerBatch batch
        cdef FutureRecordMetadata fut
        if self.closed:
            raise KafkaError("producer closed while send in progress")
        result = self._try_append_dq(dq, timestamp, key, value, headers, callback, now)
        if result is not None:
            return result  # another thread made a batch while we were allocating
        builder = RecordBatchBuilder(buffer, self.compression_type, self.batch_size, -1, -1, -1,
                                     False, self._topic_info(dq.tp[0]).compression_ratio)
        batch = ProducerBatch(dq.tp, builder, now)
        batch.pooled_buffer = buffer
        fut = batch._try_append(timestamp, key, value, headers, callback, now)
        dq.batches.append(batch)
        with self.incomplete_lock:
            self.incomplete.add(batch)
        return _result(fut, len(dq.batches) > 1 or builder.is_full_c(), True, False,
                       builder._pos)

    # ---------------------------------------------------------- columnar append (send_many)
    def new_batch_for(self, PartitionDeque dq, buffer, long long now_ms):
        """A new ProducerBatch in ``dq`` on ``buffer`` (call with dq.lock held)."""
        cdef ProducerBatch batch
        builder = RecordBatchBuilder(buffer, self.compression_type, self.batch_size, -1, -1, -1,
                                     False, self._topic_info(dq.tp[0]).compression_ratio)
        batch = ProducerBatch(dq.tp, builder, now_ms)
        batch.pooled_buffer = buffer
        dq.batches.append(batch)
        with self.incomplete_lock:
            self.incomplete.add(batch)
        return batch

    # ---------------------------------------------------------- ready / drain
    def update_node_latency_stats(self, int node_id, long long now_ms, bint can_drain):
        stats = self.node_stats.get(node_id)
        if stats is None:
            stats = [now_ms, now_ms]
            self.node_stats[node_id] = stats
        stats[0] = now_ms
        if can_drain:
            stats[1] = now_ms

    def ready(self, cluster, long long now_ms):
        cdef TopicInfo ti
        cdef PartitionDeque dq
        cdef ProducerBatch batch
        cdef long long waited, time_to_wait, next_delay = 2 ** 62
        cdef int idx, size
        cdef bint backing_off, full, exhausted = self.pool.queued > 0
        ready_nodes = set()
        unknown = set()
        for topic, ti in list(self.topic_infos.items()):
            queue_sizes = None
            ids = None
            idx = -1
            count = cluster.partition_count_for_topic(topic)
            if self.adaptive and count is not None and len(ti.deques) >= count:
                queue_sizes = np.zeros(len(ti.deques), dtype=np.int32)
                ids = np.zeros(len(ti.deques), dtype=np.int32)
            for part, dq in list(ti.deques.items()):
                leader = cluster.leader_for(dq.tp)
                if leader is not None and queue_sizes is not None:
                    idx += 1
                    ids[idx] = part
                with dq.lock:
                    if not dq.batches:
                        continue
                    batch = dq.batches[0]
                    waited = max(0, now_ms - batch.last_attempt_ms)
                    backing_off = batch.attempts > 0 and waited < batch.backoff_ms
                    size = len(dq.batches)
                    full = size > 1 or batch.builder.is_full_c()
                if leader is None:
                    unknown.add(topic)
                    continue
                if queue_sizes is not None:
                    queue_sizes[idx] = size
                    if self.availability_timeout_ms > 0:
                        stats = self.node_stats.get(leader.id)
                        if stats is not None and stats[0] - stats[1] > self.availability_timeout_ms:
                            idx -= 1
                if leader.id in ready_nodes or dq.tp in self.muted:
                    continue
                time_to_wait = batch.backoff_ms if backing_off else self.linger_ms
                sendable = (full or waited >= time_to_wait or exhausted or self.closed
                            or self.flushes_in_progress > 0)
                if sendable and not backing_off:
                    ready_nodes.add(leader.id)
                else:
                    next_delay = min(next_delay, max(time_to_wait - waited, 0))
            ti.partitioner.update_partition_load_stats(queue_sizes, ids, idx + 1)
        return ReadyCheckResult(ready_nodes, next_delay, unknown)

    cdef bint _should_stop_drain(self, ProducerBatch first, tp) except -1:
        tm = self.transaction_manager
        if tm is None:
            return False
        if not tm.is_send_to_partition_allowed(tp):
            return True
        if not tm.has_producer_id():
            return True
        if first.builder._base_sequence != -1:
            head = tm.next_batch_by_sequence(tp)
            if head is not None and head.base_sequence != first.builder._base_sequence:
                return True  # an earlier batch of this partition must be retried first
        return False

    def drain(self, cluster, node_ids, int max_request_size, long long now_ms):
        out = {}
        for node_id in node_ids:
            out[node_id] = self._drain_node(cluster, node_id, max_request_size, now_ms)
        return out

    cdef list _drain_node(self, cluster, int node_id, int max_size, long long now):
        cdef PartitionDeque dq
        cdef ProducerBatch first
        cdef TopicInfo ti
        cdef int size = 0, n, start, i
        ready = []
        parts = cluster.partitions_for_node(node_id)
        n = len(parts)
        if n == 0:
            return ready
        start = self.node_drain_index.get(node_id, 0) % n
        i = start
        tm = self.transaction_manager
        while True:
            part = parts[i]
            self.node_drain_index[node_id] = i  # Java's updateDrainIndex: where to resume
            i = (i + 1) % n
            ti = self.topic_infos.get(part.topic)
            dq = None if ti is None else ti.deques.get(part.partition)
            if dq is not None and dq.tp not in self.muted:
                first = None
                dq.lock.acquire_c()
                if dq.batches:
                    first = dq.batches[0]
                dq.lock.release_c()
                # Only this (the Sender) thread removes batches from the head, so ``first``
                # stays the head while we look at it without holding the lock.
                if first is not None and not (
                    first.attempts > 0 and now - first.last_attempt_ms < first.backoff_ms
                ):
                    if size + first.builder.estimated_size_in_bytes > max_size and ready:
                        break
                    if self._should_stop_drain(first, dq.tp):
                        break
                    dq.lock.acquire_c()
                    dq.batches.popleft()
                    dq.lock.release_c()
                    # sequence numbers and compression outside the lock: appenders to this
                    # partition never wait for them (the batch is out of the deque already)
                    if tm is not None and first.builder._base_sequence == -1:
                        tm.maybe_update_producer_id_and_epoch(dq.tp)
                        pid, epoch = tm.producer_id_and_epoch
                        first.builder.set_producer_state(
                            pid, epoch, tm.sequence_number(dq.tp), tm.is_transactional()
                        )
                        tm.increment_sequence_number(dq.tp, first.builder._count)
                        tm.add_in_flight_batch(first)
                    first.builder.close()
                    if self.compression_type != 0:
                        self._update_compression_ratio(ti, first.builder.compression_ratio)
                    size += first.builder._size
                    ready.append(first)
                    first.drained(now)
            if i == start:
                break
        return ready

    cdef void _update_compression_ratio(self, TopicInfo ti, double observed):
        # Java's CompressionRatioEstimator: worse ratios are taken at once (in steps of at least
        # 0.05), better ones slowly (at most 0.005 per batch)
        cdef double current = ti.compression_ratio
        if observed > current:
            ti.compression_ratio = max(current + 0.05, observed)
        elif observed < current:
            ti.compression_ratio = max(current - 0.005, observed)

    # ---------------------------------------------------------- retries, expiry, split
    def expired_batches(self, long long now_ms):
        cdef TopicInfo ti
        cdef PartitionDeque dq
        cdef ProducerBatch batch
        expired = []
        for ti in list(self.topic_infos.values()):
            for dq in list(ti.deques.values()):
                with dq.lock:
                    while dq.batches:
                        batch = dq.batches[0]
                        if self.delivery_timeout_ms <= now_ms - batch.created_ms:
                            dq.batches.popleft()
                            expired.append(batch)
                        else:
                            break
        return expired

    cdef long long _backoff(self, int attempts):
        # Java's ExponentialBackoff(retry.backoff.ms, 2, retry.backoff.max.ms, 0.2)
        cdef double exp, term, jitter
        if self.retry_backoff_ms >= self.retry_backoff_max_ms:
            return self.retry_backoff_max_ms
        exp = min(max(attempts, 0), 62)
        term = self.retry_backoff_ms * (2.0 ** exp)
        jitter = self._jitter.uniform(0.8, 1.2)
        return <long long>min(term * jitter, <double>self.retry_backoff_max_ms)

    def reenqueue(self, ProducerBatch batch, long long now_ms):
        cdef PartitionDeque dq = self.deque_for(batch.topic_partition)
        batch.reenqueued(now_ms, self._backoff(batch.attempts))
        with dq.lock:
            if self.transaction_manager is not None:
                self._insert_in_sequence_order(dq, batch)
            else:
                dq.batches.appendleft(batch)

    cdef void _insert_in_sequence_order(self, PartitionDeque dq, ProducerBatch batch):
        cdef ProducerBatch head
        ordered = []
        seq = batch.builder._base_sequence
        while dq.batches:
            head = dq.batches[0]
            if head.builder._base_sequence != -1 and head.builder._base_sequence < seq:
                ordered.append(dq.batches.popleft())
            else:
                break
        dq.batches.appendleft(batch)
        for head in reversed(ordered):
            dq.batches.appendleft(head)

    def split_and_reenqueue(self, ProducerBatch big):
        """A batch too large for the broker, split into batches of batch.size; returns how many."""
        cdef PartitionDeque dq = self.deque_for(big.topic_partition)
        cdef ProducerBatch nb
        batches = big.split(self.batch_size)
        with self.incomplete_lock:
            for nb in batches:
                self.incomplete.add(nb)
        tm = self.transaction_manager
        with dq.lock:
            for nb in reversed(batches):
                if tm is not None and nb.builder._base_sequence != -1:
                    tm.add_in_flight_batch(nb)
                    self._insert_in_sequence_order(dq, nb)
                else:
                    dq.batches.appendleft(nb)
        return len(batches)

    def deallocate(self, ProducerBatch batch):
        with self.incomplete_lock:
            self.incomplete.discard(batch)
        if not batch.is_splitting_batch and batch.pooled_buffer is not None:
            buf = batch.pooled_buffer
            batch.pooled_buffer = None
            self.pool.deallocate(buf, len(buf))

    def mute_partition(self, tp):
        self.muted.add(tp)

    def unmute_partition(self, tp):
        self.muted.discard(tp)

    # ---------------------------------------------------------- flush / close / abort
    def begin_flush(self):
        self.flushes_in_progress += 1

    def flush_in_progress(self):
        return self.flushes_in_progress > 0

    def await_flush_completion(self, timeout_s=None):
        """Wait for every batch incomplete now; False on timeout."""
        cdef ProducerBatch batch
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            with self.incomplete_lock:
                batches = list(self.incomplete)
            for batch in batches:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                while not batch.result.wait(remaining):
                    return False
            return True
        finally:
            self.flushes_in_progress -= 1

    def has_undrained(self):
        cdef TopicInfo ti
        cdef PartitionDeque dq
        for ti in list(self.topic_infos.values()):
            for dq in list(ti.deques.values()):
                if dq.batches:
                    return True
        return False

    def has_incomplete(self):
        return bool(self.incomplete)

    def incomplete_batches(self):
        with self.incomplete_lock:
            return list(self.incomplete)

    def abort_incomplete_batches(self, exc=None):
        """Fail every incomplete batch (drained or not) exactly once (forced close)."""
        if exc is None:
            exc = KafkaError("producer is closed forcefully")
        while True:
            self._abort_batches(exc, False)
            if self.appends_in_progress <= 0:
                break
            time.sleep(0.001)
        self._abort_batches(exc, False)
        self.topic_infos.clear()

    def abort_undrained_batches(self, exc):
        """Fail the batches that were never drained (still in the deques)."""
        self._abort_batches(exc, True)

    cdef void _abort_batches(self, exc, bint undrained_only) except *:
        cdef ProducerBatch batch
        cdef PartitionDeque dq
        for batch in self.incomplete_batches():
            if undrained_only and batch.builder._closed:
                continue
            dq = self.deque_for(batch.topic_partition)
            with dq.lock:
                try:
                    dq.batches.remove(batch)
                except ValueError:
                    pass
            if batch.abort(exc):
                self.deallocate(batch)

    def close(self):
        self.closed = True

    # ---------------------------------------------------------- observability
    def partitions_with_batches(self):
        cdef TopicInfo ti
        cdef PartitionDeque dq
        out = []
        for ti in list(self.topic_infos.values()):
            for dq in list(ti.deques.values()):
                if dq.batches:
                    out.append(dq.tp)
        return out

    def queue_size(self, tp):
        cdef TopicInfo ti = self.topic_infos.get(tp.topic)
        if ti is None or tp.partition not in ti.deques:
            return 0
        return len((<PartitionDeque>ti.deques[tp.partition]).batches)

    def batches_of(self, tp):
        cdef TopicInfo ti = self.topic_infos.get(tp.topic)
        if ti is None or tp.partition not in ti.deques:
            return []
        return list((<PartitionDeque>ti.deques[tp.partition]).batches)
