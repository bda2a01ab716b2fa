# cython: wraparound=True
# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. The appends- and flushes-in-progress counters (Java's
# AtomicInteger) are plain ints updated without a lock, and it calls the partitioner, which keeps
# the GIL.
"""RecordAccumulator: Java's ``RecordAccumulator``, the batching half of the producer.

Records are appended into per-partition deques of ``ProducerBatch`` (each deque under its own
lock), each batch writing straight into a buffer from the ``BufferPool`` through a
``RecordBatchBuilder``. The Sender asks ``ready`` which nodes have something to send, ``drain``s
batches for them, and completes each batch (``producer_batch``). Time is passed in (``now_ms``)
by the caller: the clock is injectable.
"""

import logging
import threading
import time

import numpy as np

cimport cython

from libc.limits cimport LLONG_MAX
from libc.stdint cimport int32_t

from cproducer.producer.internals.built_in_partitioner cimport (BuiltInPartitioner,
                                                                StickyPartitionInfo)
from cproducer.producer.internals.producer_batch cimport (STATE_IN_FLIGHT, ProducerBatch,
                                                          check_exception,
                                                          close_for_record_appends)

from cproducer.producer.internals.produce_request_result cimport ProduceRequestResult
from cproducer.producer.internals.topic_info cimport (MIN_BUFFER_BYTES, all_batches_full,
                                                      partition_changed)
from cproducer.record.record_batch_builder cimport (
    RECORDS_OFFSET,
    RecordBatchBuilder,
    estimated_size_of,
)
from cproducer.utils.fast_lock cimport FastLock
from cproducer.utils.memory_budget cimport MemoryBudget

from cproducer.producer.internals import topic_info as _topic_info_module
from cproducer.record import compression
from cproducer.utils.backoff import ExponentialBackoff
from cproducer.record.record_batch_builder import estimate_size_in_bytes_upper_bound
from cproducer.errors import (
    IllegalStateError,
    KafkaError,
    ProducerClosedError,
)
log = logging.getLogger("cproducer.accumulator")

# PartitionDeque and TopicInfo are topic_info's; still importable from here, where they were
globals().update(PartitionDeque=_topic_info_module.PartitionDeque,
                 TopicInfo=_topic_info_module.TopicInfo)

# What a batch's Python objects take besides its buffer (the ProducerBatch, its builder, result,
# lock, buffer views and lists), charged to buffer.memory
BATCH_OVERHEAD_BYTES = 1024

# the smallest buffer a batch starts in
MIN_BUFFER = MIN_BUFFER_BYTES

cdef inline Py_ssize_t _next_buffer_size(Py_ssize_t reached, Py_ssize_t batch_size) noexcept:
    # The buffer a partition's next batch starts with, from the bytes (header and uncompressed
    # records) its last drained batch reached: batch.size (0, from the pool's free list) for a
    # partition whose batches come near it, else a power of two with room for twice as much.
    # Java gives every batch batch.size at once, so memory follows batch.size times the
    # partitions with records, not the records: with a thousand partitions each batch holds a
    # few records and buffer.memory runs dry while it is mostly empty (KIP-782). A batch that
    # outgrows its buffer grows on memory from the pool (RecordBatchBuilder._grow), up to
    # batch.size as before.
    cdef Py_ssize_t size = MIN_BUFFER_BYTES
    if 2 * reached >= batch_size:
        return 0
    while size < 2 * reached:
        size <<= 1
    return size


# Java's RETRY_BACKOFF_EXP_BASE and RETRY_BACKOFF_JITTER (CommonClientConfigs)
RETRY_BACKOFF_EXP_BASE = 2
RETRY_BACKOFF_JITTER = 0.2


@cython.no_gc
@cython.freelist(8)
cdef class RecordAppendResult:
    """Java's RecordAppendResult: what append() did with a record (made by _result only)."""


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


cdef bint leader_changed_since_sent(object cluster, ProducerBatch batch) except -1:
    # KIP-951 (Java's hasLeaderChangedForTheOngoingRetry): a batch waiting to be retried goes at
    # once when its partition has a newer leader than the one it was sent to, as when the
    # broker's answer named the new leader (only looked up for batches backing off)
    return cluster.leader_epoch_for(batch.topic_partition) > batch.leader_epoch


cdef class RecordAccumulator:
    """Java's RecordAccumulator: per-partition deques of batches, filled by ``append`` (any
    thread), emptied by ``drain`` (the Sender). Every time is the caller's ``now_ms``."""

    def __init__(self, int batch_size, int compression_type, long long linger_ms,
                 long long retry_backoff_ms, long long retry_backoff_max_ms,
                 long long delivery_timeout_ms, buffer_pool,
                 bint partitioner_adaptive_partitioning_enable=True,
                 long long partitioner_availability_timeout_ms=0, transaction_manager=None,
                 random=None, compression_level=None, int max_batch_records=0):
        if batch_size <= 0:
            raise ValueError(f"batch_size must be > 0, got {batch_size}")
        if compression_type not in compression.NAMES:
            raise ValueError(
                f"compression_type must be one of {sorted(compression.NAMES)}, "
                f"got {compression_type}"
            )
        for name, v in (("linger_ms", linger_ms), ("retry_backoff_ms", retry_backoff_ms),
                        ("retry_backoff_max_ms", retry_backoff_max_ms),
                        ("delivery_timeout_ms", delivery_timeout_ms),
                        ("partitioner_availability_timeout_ms",
                         partitioner_availability_timeout_ms)):
            if v < 0:
                raise ValueError(f"{name} must be >= 0, got {v}")
        if not (hasattr(buffer_pool, "allocate") and hasattr(buffer_pool, "deallocate")):
            raise TypeError(
                f"buffer_pool must be a BufferPool (allocate/deallocate), got "
                f"{type(buffer_pool).__name__}"
            )
        if random is not None and not callable(random):
            raise TypeError(f"random must be callable or None, got {type(random).__name__}")
        if max_batch_records < 0:
            raise ValueError(f"max_batch_records must be >= 0, got {max_batch_records}")
        self.batch_size = batch_size
        # records per batch at most (0: no limit; librdkafka's batch.num.messages)
        self.max_batch_records = max_batch_records
        self.compression_type = compression_type
        self.compression_level = compression_level
        self.linger_ms = linger_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = retry_backoff_max_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.pool = buffer_pool
        # what a batch holds beyond its pooled buffer is charged to the pool too
        self._budget = buffer_pool if isinstance(buffer_pool, MemoryBudget) else None
        self.memory_wait_hook = None
        self.adaptive = partitioner_adaptive_partitioning_enable
        self.availability_timeout_ms = partitioner_availability_timeout_ms
        self.transaction_manager = transaction_manager
        self.random = random
        self.topic_infos = {}
        self.topic_lock = threading.Lock()
        self.incomplete = set()
        self.incomplete_lock = FastLock()
        self.muted = set()
        self.node_drain_index = {}
        self.node_stats = {}
        self.flushes_in_progress = 0
        self.appends_in_progress = 0
        self.closed = False
        # Java's ExponentialBackoff(retry.backoff.ms, 2, retry.backoff.max.ms, 0.2)
        self._jitter = ExponentialBackoff(retry_backoff_ms, RETRY_BACKOFF_EXP_BASE,
                                          max(retry_backoff_ms, retry_backoff_max_ms),
                                          RETRY_BACKOFF_JITTER)

    cdef TopicInfo _topic_info(self, str topic):
        cdef TopicInfo ti
        if topic is self._last_topic:  # the same str object as last time: no dict lookup
            return self._last_ti
        ti = self.topic_infos.get(topic)
        if ti is None:
            with self.topic_lock:
                ti = self.topic_infos.get(topic)
                if ti is None:
                    ti = TopicInfo(topic, self.batch_size, self.random)
                    self.topic_infos[topic] = ti
        # set the TopicInfo first: a reader that sees the new topic also sees its TopicInfo
        self._last_ti = ti
        self._last_topic = topic
        return ti

    def topic_info(self, str topic):
        """The topic's TopicInfo (deques, built-in partitioner), created when missing."""
        return self._topic_info(topic)

    def deque_for(self, tp):
        """The PartitionDeque of a TopicPartition (created when missing)."""
        return self._topic_info(tp.topic).get_or_create(tp.partition)

    cdef object _try_append_dq(self, PartitionDeque dq, long long timestamp, key,
                               value, headers, callback, long long now):
        # Java's tryAppend: into the last batch of the deque (call with dq.lock held)
        cdef ProducerBatch last
        cdef RecordBatchBuilder b
        cdef Py_ssize_t before
        cdef object fut  # the record's future (or its C-completed callback, see the batch)
        if self.closed:
            raise ProducerClosedError("producer closed while send in progress")
        if not dq.batches:
            return None
        last = dq.batches[-1]
        b = last.builder
        if last.final_state != STATE_IN_FLIGHT or b._closed:
            return None
        before = b._estimated(b._pos - RECORDS_OFFSET)
        fut = last._try_append(timestamp, key, value, headers, callback, now)
        if fut is None:
            # Java's tryAppend: the batch that refused a record is closed for appends (a
            # compressed one ends its stream now: only a partition's open batch holds a compressor)
            b.finish_appends()
            return None
        self._check_record_count(b)
        return _result(fut, len(dq.batches) > 1 or b.is_full_c(), False, False,
                       b._estimated(b._pos - RECORDS_OFFSET) - before)

    cpdef object append(self, str topic, int partition, long long timestamp, key,
                        value, headers, callback, double max_time_to_block_ms,
                        bint abort_on_new_batch, long long now_ms, cluster):
        """Java's append: into the partition's open batch, or a new one on memory from the pool
        (allocated outside any deque lock, waiting up to ``max_time_to_block_ms``). Partition -1
        lets the topic's built-in sticky partitioner choose. Returns a RecordAppendResult."""
        cdef TopicInfo ti
        cdef StickyPartitionInfo info
        cdef BuiltInPartitioner bp
        cdef PartitionDeque dq
        cdef RecordAppendResult result
        cdef int effective
        cdef object buffer = None
        if partition < -1:
            raise ValueError(
                f"partition must be >= 0, or -1 for the built-in partitioner, got {partition}"
            )
        ti = self._topic_info(topic)
        bp = ti.partitioner
        self.appends_in_progress += 1
        try:
            while True:
                if partition < 0:
                    # peeked before the deque lock: re-checked under it (partition_changed)
                    info = bp.peek_current_partition_info(cluster)
                    effective = info.index
                else:
                    info = None
                    effective = partition
                dq = ti.get_or_create(effective)
                dq.lock.acquire_c()
                try:
                    if partition_changed(bp, info, dq, cluster):
                        continue
                    result = self._try_append_dq(dq, timestamp, key, value, headers, callback,
                                                 now_ms)
                    if result is not None:
                        if info is not None:
                            # a queue with an incomplete batch does not switch (Java)
                            bp.update_partition_info(info, result.appended_bytes, cluster,
                                                     all_batches_full(dq))
                        return result
                finally:
                    dq.lock.release_c()
                if abort_on_new_batch:
                    # the caller's partitioner gets a say before a new batch is made
                    return _result(None, False, False, True, 0)
                if buffer is None:
                    size = dq.buffer_size
                    if size <= 0 or size > self.batch_size:
                        size = self.batch_size
                    size = max(size, estimate_size_in_bytes_upper_bound(key, value, headers))
                    # may block for memory: never under a deque lock, and with the Sender
                    # awake (it frees memory by sending; ready() sees the waiter)
                    if self.memory_wait_hook is not None and (
                            self.pool.queued > 0 or self.pool.available_memory < size):
                        self.memory_wait_hook()
                    buffer = self.pool.allocate(size, max_time_to_block_ms)
                dq.lock.acquire_c()
                try:
                    if partition_changed(bp, info, dq, cluster):
                        continue
                    result = self._append_new_batch(dq, timestamp, key, value, headers,
                                                    callback, buffer, now_ms)
                    if result.new_batch_created:
                        buffer = None  # the batch owns it now
                    if info is not None:
                        bp.update_partition_info(info, result.appended_bytes, cluster,
                                                 all_batches_full(dq))
                    return result
                finally:
                    dq.lock.release_c()
        finally:
            if buffer is not None:
                self.pool.deallocate(buffer)
            self.appends_in_progress -= 1

    cdef object _append_new_batch(self, PartitionDeque dq, long long timestamp, key,
                                  value, headers, callback, buffer, long long now):
        # Java's appendNewBatch (call with dq.lock held)
        cdef RecordAppendResult result
        cdef ProducerBatch batch
        cdef RecordBatchBuilder builder
        cdef object fut  # the record's future (or its C-completed callback, see the batch)
        result = self._try_append_dq(dq, timestamp, key, value, headers, callback, now)
        if result is not None:
            return result  # another thread made a batch while we were allocating
        batch = self._make_batch(dq, buffer, now)
        builder = batch.builder
        # the record first: if it is refused (bad input) nothing was registered and the caller
        # still owns the buffer
        fut = batch._try_append(timestamp, key, value, headers, callback, now)
        if fut is None:
            # cannot happen (the buffer holds the record's upper bound)
            raise IllegalStateError("a new batch refused its first record")
        self._check_record_count(builder)
        self._register_batch(dq, batch)
        return _result(fut, len(dq.batches) > 1 or builder.is_full_c(), True, False,
                       builder._estimated(builder._pos - RECORDS_OFFSET))

    cdef inline int _check_record_count(self, RecordBatchBuilder b) except -1:
        # a batch holding max_batch_records records takes no more (and is ready to send)
        if self.max_batch_records > 0 and b._count >= self.max_batch_records:
            b.finish_appends()
        return 0

    cdef ProducerBatch _new_batch(self, PartitionDeque dq, buffer, long long now):
        cdef ProducerBatch batch = self._make_batch(dq, buffer, now)
        self._register_batch(dq, batch)
        return batch

    cdef ProducerBatch _make_batch(self, PartitionDeque dq, buffer, long long now):
        cdef TopicInfo ti = self._topic_info(dq.tp[0])
        builder = RecordBatchBuilder(buffer, self.compression_type, self.batch_size, -1, -1, -1,
                                     False, ti.compression_ratio, self.compression_level,
                                     self._budget, self.batch_size)
        cdef ProducerBatch batch = ProducerBatch(dq.tp, builder, now)
        batch.pooled_buffer = buffer
        if self._budget is not None:
            # the batch's own objects count too (given back with its buffer in deallocate)
            (<MemoryBudget>self._budget).force_reserve(BATCH_OVERHEAD_BYTES)
        return batch

    cdef void _register_batch(self, PartitionDeque dq, ProducerBatch batch) except *:
        # at the tail of its deque (dq.lock held) and in the incomplete set
        cdef FastLock lock = self.incomplete_lock
        dq.batches.append(batch)
        lock.acquire_c()
        try:
            self.incomplete.add(batch)
        finally:
            lock.release_c()

    # ---------------------------------------------------------- columnar append (send_many)
    def new_batch_for(self, PartitionDeque dq, buffer, long long now_ms):
        """A new ProducerBatch in ``dq`` on ``buffer`` (call with dq.lock held). Once closed,
        the buffer goes back to the pool and ProducerClosedError is raised."""
        if self.closed:
            self.pool.deallocate(buffer)
            raise ProducerClosedError("producer closed while send in progress")
        return self._new_batch(dq, buffer, now_ms)

    # ---------------------------------------------------------- ready / drain
    def update_node_latency_stats(self, int node_id, long long now_ms, bint can_drain):
        """Java's updateNodeLatencyStats: the Sender found ``node_id`` with data to send and
        could (``can_drain``) or could not drain it; only kept when
        partitioner_availability_timeout_ms > 0."""
        if self.availability_timeout_ms <= 0:
            return
        stats = self.node_stats.get(node_id)
        if stats is None:
            stats = [now_ms, now_ms]  # [ready_time_ms, drain_time_ms]
            self.node_stats[node_id] = stats
        if can_drain:
            stats[1] = now_ms
        stats[0] = now_ms

    def ready(self, cluster, long long now_ms):
        """Java's ready: the nodes with a sendable batch (full, lingered, memory exhausted,
        flushing, closing, transaction completing; not backing off, not muted), the delay until
        the next check, and the topics with batches but no known leader. Also feeds the
        adaptive partitioner each topic's queue sizes (Java's partitionReady)."""
        cdef TopicInfo ti
        cdef PartitionDeque dq
        cdef ProducerBatch batch
        cdef long long waited = 0, time_to_wait, next_delay = LLONG_MAX
        cdef int idx, size = 0, part
        cdef Py_ssize_t n_infos
        cdef bint backing_off = False, full = False, sendable
        cdef bint exhausted = self.pool.queued > 0
        cdef bint completing = False
        cdef int32_t[::1] sizes_view
        cdef int32_t[::1] ids_view
        cdef tuple infos
        tm = self.transaction_manager
        if tm is not None:
            is_completing = getattr(tm, "is_completing", None)
            completing = is_completing is not None and bool(is_completing())
        ready_nodes = set()
        unknown = set()
        muted = self.muted
        check_muted = len(muted) > 0
        for topic, ti in list(self.topic_infos.items()):
            queue_sizes = None
            ids = None
            idx = -1
            deques = list(ti.deques.items())
            # the topic's partitions, sorted by id: found by index when ids are dense
            infos = tuple(cluster.partitions_for_topic(topic))
            n_infos = len(infos)
            if self.adaptive and len(deques) >= n_infos:
                # no adaptive stats until every partition has had a batch (Java)
                queue_sizes = np.zeros(len(deques), dtype=np.int32)
                ids = np.zeros(len(deques), dtype=np.int32)
                sizes_view = queue_sizes
                ids_view = ids
            for part, dq in deques:
                if 0 <= part < n_infos and infos[part].partition == part:
                    leader = infos[part].leader
                else:
                    leader = cluster.leader_for(dq.tp)
                if leader is not None and queue_sizes is not None:
                    idx += 1
                    ids_view[idx] = part
                dq.lock.acquire_c()
                batch = dq.batches[0] if dq.batches else None
                if batch is not None:
                    waited = max(0, now_ms - batch.last_attempt_ms)
                    backing_off = batch.attempts > 0 and waited < batch.backoff_ms
                    size = len(dq.batches)
                    full = size > 1 or batch.builder.is_full_c()
                dq.lock.release_c()
                if batch is None:
                    continue
                if backing_off and leader_changed_since_sent(cluster, batch):
                    backing_off = False
                if leader is None:
                    unknown.add(topic)
                    continue
                if queue_sizes is not None:
                    sizes_view[idx] = size
                if self.availability_timeout_ms > 0:
                    stats = self.node_stats.get(leader.id)
                    if stats is not None and stats[0] - stats[1] > self.availability_timeout_ms:
                        idx -= 1  # the node did not drain for too long: leave its partitions out
                # Java's batchReady
                if leader.id in ready_nodes or (check_muted and dq.tp in muted):
                    continue
                time_to_wait = batch.backoff_ms if backing_off else self.linger_ms
                sendable = (full or waited >= time_to_wait or exhausted or self.closed
                            or self.flushes_in_progress > 0 or completing)
                if sendable and not backing_off:
                    ready_nodes.add(leader.id)
                else:
                    next_delay = min(next_delay, max(time_to_wait - waited, 0))
            ti.partitioner.update_partition_load_stats(queue_sizes, ids, idx + 1)
        return ReadyCheckResult(ready_nodes, next_delay, unknown)

    def drain(self, cluster, node_ids, int max_request_size, long long now_ms):
        """Java's drain: for each node, batches of its partitions (starting where the last drain
        of that node stopped) up to ``max_request_size`` bytes (at least one batch), closed and,
        with a transaction manager, sequenced. {node_id: [ProducerBatch]}."""
        out = {}
        for node_id in node_ids:
            out[node_id] = self._drain_node(cluster, node_id, max_request_size, now_ms)
        return out

    cdef list _drain_node(self, cluster, int node_id, int max_size, long long now):
        # Java's drainBatchesForOneNode
        cdef PartitionDeque dq
        cdef ProducerBatch first, head
        cdef TopicInfo ti = None
        cdef RecordBatchBuilder b
        cdef long long size = 0
        cdef int n, start, i, visited = 0, p
        cdef bint stop
        cdef tuple parts
        cdef list by_partition
        cdef str topic, last_topic = None
        ready = []
        parts = tuple(cluster.partitions_for_node(node_id))
        n = len(parts)
        if n == 0:
            return ready
        start = self.node_drain_index.get(node_id, 0) % n
        i = start
        tm = self.transaction_manager
        # one call into the transaction manager per batch (its check and the batch's sequence,
        # one lock), not two: at 1,000 partitions a request holds ~1,000 batches, and each
        # Python call and lock section is paid per batch
        drain_batch = tm.drain_batch if tm is not None else None
        # the leader epochs read as a dict here, not with a Python call per batch (a cluster
        # without the map, e.g. a test's, is asked per batch)
        epochs_of = getattr(cluster, "leader_epochs", None)
        epochs = epochs_of() if epochs_of is not None else None
        muted = self.muted
        check_muted = len(muted) > 0
        try:
            while True:
                part = parts[i]
                visited = i  # Java's updateDrainIndex: where the next drain resumes
                i = (i + 1) % n
                topic = part.topic
                p = part.partition
                if topic is not last_topic:
                    ti = self.topic_infos.get(topic)
                    last_topic = topic
                dq = None
                if ti is not None:
                    by_partition = ti._by_partition
                    if 0 <= p < len(by_partition):
                        dq = <PartitionDeque>by_partition[p]
                if dq is not None and dq.batches and not (check_muted and dq.tp in muted):
                    first = None
                    stop = False
                    dq.lock.acquire_c()
                    try:
                        if dq.batches:
                            head = dq.batches[0]
                            # not while backing off
                            if not (head.attempts > 0
                                    and now - head.last_attempt_ms < head.backoff_ms
                                    and not leader_changed_since_sent(cluster, head)):
                                if size + estimated_size_of(head.builder) > max_size and ready:
                                    # a single batch larger than the request (compression
                                    # estimate) still goes, alone
                                    stop = True
                                elif drain_batch is not None and drain_batch(dq.tp, head):
                                    # Java's shouldStopDrainBatchesForPartition, where Java
                                    # ends the node's drain: a partition that waits for an
                                    # answer holds back only itself (a new topic's partitions
                                    # each send their first batch alone, all in one request).
                                    # A batch that may go got its sequence in the same call:
                                    # under this lock, so no record joins it afterwards
                                    pass
                                else:
                                    first = dq.batches.popleft()
                    finally:
                        dq.lock.release_c()
                    if stop:
                        break
                    if first is not None:
                        b = first.builder
                        # compression outside the lock: appenders to this partition never
                        # wait for it (only the Sender drains)
                        b.close()
                        dq.buffer_size = _next_buffer_size(b._pos, self.batch_size)
                        if epochs is not None:
                            first.leader_epoch = epochs.get(dq.tp, -1)
                        else:
                            first.leader_epoch = cluster.leader_epoch_for(dq.tp)
                        if b._codec != 0:
                            self._update_compression_ratio(ti, b.compression_ratio)
                        size += b._size
                        ready.append(first)
                        if now > first.drained_ms:
                            first.drained_ms = now
                if i == start:
                    break
        finally:
            self.node_drain_index[node_id] = visited
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
        """Java's expiredBatches: batches at the head of their deque that reached
        delivery_timeout_ms, removed from the deques (oldest first)."""
        cdef PartitionDeque dq
        cdef ProducerBatch batch
        expired = []
        for dq in self._all_deques():
            dq.lock.acquire_c()
            try:
                while dq.batches:
                    batch = dq.batches[0]
                    if self.delivery_timeout_ms <= now_ms - batch.created_ms:
                        dq.batches.popleft()
                        close_for_record_appends(batch.builder)
                        expired.append(batch)
                    else:
                        break
            finally:
                dq.lock.release_c()
        return expired

    cdef list _all_deques(self):
        # every partition's deque, a snapshot: appends may add topics and partitions meanwhile
        cdef TopicInfo ti
        cdef list out = []
        for ti in list(self.topic_infos.values()):
            out.extend(list(ti.deques.values()))
        return out

    cdef long long _backoff(self, int attempts):
        return self._jitter.backoff(attempts)

    def retry_backoff(self, int attempts):
        """The backoff before retry number ``attempts + 1`` (jittered), in ms."""
        return self._backoff(attempts)

    def reenqueue(self, ProducerBatch batch, long long now_ms):
        """Java's reenqueue: back at the front of its deque (in sequence order with a transaction
        manager), backing off for the exponential retry backoff of its attempt."""
        cdef PartitionDeque dq
        if self.transaction_manager is not None and batch.builder._base_sequence == -1:
            raise IllegalStateError(
                f"re-enqueueing a batch of {batch.topic_partition} without a sequence although "
                f"idempotence is enabled"
            )
        dq = self.deque_for(batch.topic_partition)
        batch.reenqueued(now_ms, self._backoff(batch.attempts))
        dq.lock.acquire_c()
        try:
            if self.transaction_manager is not None:
                self._insert_in_sequence_order(dq, batch)
            else:
                dq.batches.appendleft(batch)
        finally:
            dq.lock.release_c()

    cdef void _insert_in_sequence_order(self, PartitionDeque dq, ProducerBatch batch):
        # Java's insertInSequenceOrder: after the queued batches with a lower sequence
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
        """Java's splitAndReenqueue: a batch the broker found too large, split into batches of
        batch_size put back at the front of its deque (as never tried). Returns how many."""
        cdef PartitionDeque dq = self.deque_for(big.topic_partition)
        cdef TopicInfo ti = self._topic_info(big.topic)
        cdef ProducerBatch nb
        # the estimate goes back to the big batch's ratio (or 1.0): split less often (Java)
        ti.compression_ratio = max(1.0, big.builder.compression_ratio)
        batches = big.split(self.batch_size)
        tm = self.transaction_manager
        for nb in reversed(batches):
            with self.incomplete_lock:
                self.incomplete.add(nb)
            dq.lock.acquire_c()
            try:
                if tm is not None and nb.builder._base_sequence != -1:
                    tm.add_in_flight_batch(nb)  # they already have their sequences
                    self._insert_in_sequence_order(dq, nb)
                else:
                    dq.batches.appendleft(nb)
            finally:
                dq.lock.release_c()
        return len(batches)

    def deallocate(self, ProducerBatch batch):
        """The batch is done: out of the incomplete set, its pooled buffer back to the pool
        (once; split batches' buffers never came from the pool), its private buffers freed and
        their charge given back (its records' completion state went at completion)."""
        cdef FastLock lock = self.incomplete_lock
        lock.acquire_c()
        try:
            self.incomplete.discard(batch)
        finally:
            lock.release_c()
        # what the batch held beyond its buffer (a grown or compressed copy) goes back too
        batch.builder.release_memory()
        buf = batch.pooled_buffer
        if buf is None:
            if not batch.is_splitting_batch:
                log.debug("%r was already deallocated", batch)
            return
        batch.pooled_buffer = None
        if not batch.is_splitting_batch:
            self.pool.deallocate(buf, len(buf))
            if self._budget is not None:
                (<MemoryBudget>self._budget).release(BATCH_OVERHEAD_BYTES)

    def mute_partition(self, tp):
        self.muted.add(tp)

    def unmute_partition(self, tp):
        self.muted.discard(tp)

    # ---------------------------------------------------------- flush / close / abort
    def begin_flush(self):
        """Every batch is sendable at once until the matching await_flush_completion."""
        self.flushes_in_progress += 1

    def flush_in_progress(self):
        return self.flushes_in_progress > 0

    def await_flush_completion(self, timeout_s=None):
        """Wait for every batch incomplete now (and the batches they were split into); False
        on timeout. Ends the flush begun by begin_flush either way."""
        cdef ProducerBatch batch
        cdef ProduceRequestResult r
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            with self.incomplete_lock:
                pending = list(self.incomplete)
            seen = set()
            while pending:
                batch = pending.pop()
                r = batch.result
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not r.wait(remaining):
                    return False
                if r.forward is not None:
                    for nb, _rel in r.forward:
                        if id(nb) not in seen:
                            seen.add(id(nb))
                            pending.append(nb)
            return True
        finally:
            self.flushes_in_progress -= 1

    def has_undrained(self):
        cdef PartitionDeque dq
        for dq in self._all_deques():
            if dq.batches:
                return True
        return False

    def has_incomplete(self):
        return bool(self.incomplete)

    def incomplete_batches(self):
        """A snapshot of the batches not completed yet (drained or not)."""
        with self.incomplete_lock:
            return list(self.incomplete)

    def abort_incomplete_batches(self, exc=None):
        """Java's abortIncompleteBatches (forced close): fail every incomplete batch, drained
        or not, exactly once, until no append is in progress."""
        if exc is None:
            exc = KafkaError("producer is closed forcefully")
        check_exception(exc, "exc")
        while True:
            self._abort_batches(exc, False)
            if self.appends_in_progress <= 0:
                break
            time.sleep(0.0005)
        # an append that was running may have made one more batch
        self._abort_batches(exc, False)
        self._last_topic = None
        self._last_ti = None
        self.topic_infos.clear()

    def abort_undrained_batches(self, exc):
        """Java's abortUndrainedBatches: fail the batches never sent (no sequence yet with a
        transaction manager; not closed without one)."""
        check_exception(exc, "exc")
        self._abort_batches(exc, True)

    def abort_queued_batches(self, exc):
        """Take every batch out of the partition queues: those never sent are failed with
        ``exc`` here; those back in a queue for a retry are returned (they carry sequence
        numbers: the Sender fails them through the transaction manager). For an authentication
        failure, after which nothing queued can go out."""
        check_exception(exc, "exc")
        cdef PartitionDeque dq
        cdef ProducerBatch batch
        retried = []
        fresh = []
        for dq in self._all_deques():
            dq.lock.acquire_c()
            try:
                for batch in dq.batches:
                    close_for_record_appends(batch.builder)
                    (retried if batch.attempts > 0 else fresh).append(batch)
                dq.batches.clear()
            finally:
                dq.lock.release_c()
        for batch in fresh:
            if batch.abort(exc):
                self.deallocate(batch)
        return retried

    cdef void _abort_batches(self, exc, bint undrained_only) except *:
        cdef ProducerBatch batch
        cdef PartitionDeque dq
        cdef TopicInfo ti
        cdef bint abort
        tm = self.transaction_manager
        for batch in self.incomplete_batches():
            ti = self.topic_infos.get(batch.topic)
            dq = None if ti is None else ti.deques.get(batch.partition)
            abort = True
            if dq is not None:
                dq.lock.acquire_c()
            try:
                if undrained_only:
                    if tm is not None:
                        abort = batch.builder._base_sequence == -1
                    else:
                        abort = not batch.builder._closed
                if abort:
                    close_for_record_appends(batch.builder)
                    if dq is not None:
                        try:
                            dq.batches.remove(batch)
                        except ValueError:
                            pass
            finally:
                if dq is not None:
                    dq.lock.release_c()
            if abort and batch.abort(exc):
                self.deallocate(batch)

    def close(self):
        """Closing: no new appends; ready() treats every batch as sendable."""
        self.closed = True

    # ---------------------------------------------------------- observability
    def partitions_with_batches(self):
        cdef PartitionDeque dq
        return [dq.tp for dq in self._all_deques() if dq.batches]

    def queue_size(self, tp):
        """Batches queued (not drained) for ``tp``."""
        cdef TopicInfo ti = self.topic_infos.get(tp.topic)
        if ti is None or tp.partition not in ti.deques:
            return 0
        return len((<PartitionDeque>ti.deques[tp.partition]).batches)

    def batches_of(self, tp):
        cdef TopicInfo ti = self.topic_infos.get(tp.topic)
        if ti is None or tp.partition not in ti.deques:
            return []
        return list((<PartitionDeque>ti.deques[tp.partition]).batches)
