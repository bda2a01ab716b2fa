# cython: wraparound=True
# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. The Sender updates a batch's attempts and
# final state without a lock (only the callbacks are under its FastLock).
"""ProducerBatch: one batch of one partition (Java's ``ProducerBatch``).

It owns its ``RecordBatchBuilder`` (writing into a pooled buffer), its records' callbacks and its
one ``ProduceRequestResult``. The callbacks are kept as a C array of ``RecordThunk`` (relative
offset, sizes, timestamp) beside a list of functions: completing a batch runs them in record
order without touching one future object per record. ``split`` re-appends the records into
smaller batches when the broker refuses the batch as too large; every record's future, callbacks
and send_many segment follow it.
"""

import logging

from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.ref cimport PyObject
from libc.string cimport memmove

from cproducer.producer.internals.produce_request_result cimport (
    FutureRecordMetadata,
    ProduceRequestResult,
    RecordCompletedFn,
    RecordMetadataMaker,
    new_future,
    new_record_metadata_maker,
    record_completion_of,
    record_offset,
    record_timestamp,
)
from cproducer.record.record_batch_reader cimport read_records
from cproducer.record.record_batch_builder cimport (
    RecordBatchBuilder,
    compression_ratio_of,
    estimated_size_of,
)
from cproducer.utils.fast_lock cimport FastLock

from cproducer.errors import IllegalStateError, RecordTooLargeError
from cproducer.record.record_batch_builder import estimate_size_in_bytes_upper_bound

log = logging.getLogger("cproducer.accumulator")

IN_FLIGHT = STATE_IN_FLIGHT
SUCCEEDED = STATE_SUCCEEDED
FAILED = STATE_FAILED
SPLIT = STATE_SPLIT
ABORTED = STATE_ABORTED
FINAL_STATE_NAMES = {
    STATE_IN_FLIGHT: "IN_FLIGHT",
    STATE_SUCCEEDED: "SUCCEEDED",
    STATE_FAILED: "FAILED",
    STATE_SPLIT: "SPLIT",
    STATE_ABORTED: "ABORTED",
}


# what one record's completion state costs: its thunk and its slot in the list of callbacks
cdef Py_ssize_t THUNK_BYTES = sizeof(RecordThunk) + sizeof(void*)


cdef inline int _size_of(object obj) except -2:
    return -1 if obj is None else len(obj)


cdef int _headers_size(object headers) except -2:
    # kafka-python's serialized_header_size: the keys' UTF-8 bytes plus the values' bytes
    cdef int size = 0
    for hkey, hvalue in headers:
        size += len((<str>hkey).encode("utf-8")) + (0 if hvalue is None else len(hvalue))
    return size if headers else -1


cdef class ProducerBatch:
    """One batch of one partition: its builder, its records' callbacks, its one result."""

    def __init__(self, topic_partition, RecordBatchBuilder builder, long long created_ms,
                 bint is_splitting_batch=False):
        if builder is None:
            raise TypeError("builder must be a RecordBatchBuilder, got None")
        try:
            topic, partition = topic_partition
        except (TypeError, ValueError):
            raise TypeError(
                f"topic_partition must be a (topic, partition) TopicPartition, got "
                f"{topic_partition!r}"
            ) from None
        self.topic_partition = topic_partition
        self.topic = topic
        self.partition = partition
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
        # None until send_many adds one: most batches never have one, and an empty list per
        # batch is one more object the cyclic GC tracks (and promotes: a batch lives for
        # milliseconds), which at 1,000 partitions means one per dozen records
        self.segments = None
        self.max_record_size = 0
        self.pooled_buffer = None
        self.is_splitting_batch = is_splitting_batch
        self.backoff_ms = 0
        self.leader_epoch = -1
        self._lock = FastLock()

    cdef object _try_append(self, long long timestamp, object key, object value,
                            object headers, object callback, long long now):
        cdef int before = self.builder._pos
        cdef int rel
        cdef FutureRecordMetadata fut
        if (callback is not None and len(self.thunks) == self.thunk_capacity
                and self.builder._count > 0 and not self._grow_thunks(True)):
            # no memory for the record's completion state: the batch is full (and sendable)
            close_for_record_appends(self.builder)
            return None
        rel = self.builder.try_append(timestamp, key, value, headers)
        if rel < 0:
            return None
        if self.builder._pos - before > self.max_record_size:
            self.max_record_size = self.builder._pos - before
        self.last_append_time = now
        if callback is not None and record_completion_of(callback) != NULL:
            # completed in C by its type's function (cproducer.aio's deliveries): the callback
            # is the record's handle, no FutureRecordMetadata is made for it
            self._push_thunk(len(self.thunks), rel, _size_of(key), _size_of(value),
                             -1 if headers is None else _headers_size(headers), timestamp,
                             callback)
            return callback
        fut = new_future(self, self.result, rel, timestamp, _size_of(key), _size_of(value),
                         -1 if headers is None else _headers_size(headers))
        if callback is not None:
            self._push_thunk(len(self.thunks), rel, fut._key_size, fut._value_size,
                             fut._header_size, timestamp, callback)
        return fut

    cdef int _push_thunk(self, Py_ssize_t at, int rel, int key_size, int value_size,
                         int header_size, long long timestamp, object fn) except -1:
        # insert fn and its record at index ``at`` of the thunks (the batch's lock held, or the
        # batch not yet shared)
        cdef Py_ssize_t n = len(self.thunks)
        if n == self.thunk_capacity:
            self._grow_thunks(False)
        if at < n:
            memmove(&self.thunk_data[at + 1], &self.thunk_data[at], (n - at) * sizeof(RecordThunk))
        self.thunk_data[at].rel = rel
        self.thunk_data[at].key_size = key_size
        self.thunk_data[at].value_size = value_size
        self.thunk_data[at].header_size = header_size
        self.thunk_data[at].timestamp = timestamp
        self.thunks.insert(at, fn)
        return 0

    cdef int _grow_thunks(self, bint may_refuse) except -1:
        # Room for more thunks, its memory (the C array and the list's slots) charged to the
        # builder's memory budget: 1, or 0 when may_refuse and the budget has no room now.
        cdef Py_ssize_t n = self.thunk_capacity
        cdef Py_ssize_t cap = 16 if n < 8 else 2 * n
        cdef Py_ssize_t charge = (cap - n) * THUNK_BYTES
        cdef RecordThunk* data
        if may_refuse:
            if not self.builder._budget.try_reserve(charge):
                return 0
        else:
            self.builder._budget.force_reserve(charge)
        data = <RecordThunk*>PyMem_Realloc(self.thunk_data, cap * sizeof(RecordThunk))
        if data == NULL:
            self.builder._budget.release(charge)
            raise MemoryError("cannot grow a batch's callback list")
        self.thunk_data = data
        self.thunk_capacity = cap
        self._thunk_charge += charge
        return 1

    cdef void _free_thunks(self) noexcept:
        # the thunks are gone (run, moved or dropped): their memory and its charge go back
        PyMem_Free(self.thunk_data)
        self.thunk_data = NULL
        self.thunk_capacity = 0
        if self._thunk_charge:
            self.builder._budget.release(self._thunk_charge)
            self._thunk_charge = 0

    def __dealloc__(self):
        if self.builder is not None:
            self._free_thunks()
        else:
            PyMem_Free(self.thunk_data)
            self.thunk_data = NULL

    @property
    def charged_memory(self):
        """Bytes this batch holds beyond its pooled buffer, charged to its memory budget: the
        builder's private buffers and the records' completion state."""
        return self.builder._charged + self._thunk_charge

    def try_append(self, long long timestamp, key, value, headers, callback, long long now_ms):
        """Append a record; its future, or None when the batch has no room for it.
        ``callback``: None or ``fn(metadata, exception)``, run once when the batch completes. A
        callback of a type completed in C (``register_record_completion``) is returned instead
        of a future."""
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
        return self._try_append(timestamp, key, value, headers, callback, now_ms)

    cdef void _add_thunk(self, object fut_obj, object fn) except *:
        # Register fn(metadata, exception) for one record: kept in record (append) order so the
        # batch's callbacks run in the order the records were appended; run at once when the
        # record is already complete. A split batch forwards to the record's new batch.
        cdef FutureRecordMetadata fut = fut_obj
        cdef ProducerBatch batch
        cdef Py_ssize_t i
        while True:
            fut._follow()
            batch = fut._batch
            with batch._lock:
                if batch.final_state == STATE_IN_FLIGHT:
                    i = len(batch.thunks)
                    while i > 0 and batch.thunk_data[i - 1].rel > fut._rel:
                        i -= 1
                    batch._push_thunk(i, fut._rel, fut._key_size, fut._value_size,
                                      fut._header_size, fut._create_ts, fn)
                    return
                if batch.final_state != STATE_SPLIT:
                    break
            # split meanwhile: its ``forward`` is set before its lock is released, follow it
        err = fut._error()
        _run_callback(fn, fut._metadata() if err is None else None, err)

    def add_completion_callback(self, future, fn):
        """Run ``fn(metadata, exception)`` once ``future``'s record completes (at once if it
        already did), in record order with the batch's other callbacks."""
        self._add_thunk(future, fn)

    def add_segment(self, segment):
        """A run of a send_many call's records: (batch_future, order, start, end, first_rel)."""
        if self.segments is None:
            self.segments = [segment]
        else:
            self.segments.append(segment)

    # ---------------------------------------------------------- completion
    def complete(self, long long base_offset, long long log_append_time):
        """Success for every record; False (and nothing done) when already completed."""
        return self._done(base_offset, log_append_time, None, None, STATE_SUCCEEDED)

    def complete_exceptionally(self, top_level_exception, record_exceptions=None):
        """Fail every record (``record_exceptions(i)`` gives record i's error when given);
        False (and nothing done) when already completed."""
        check_exception(top_level_exception, "top_level_exception")
        if record_exceptions is not None and not callable(record_exceptions):
            raise TypeError(
                f"record_exceptions must be an index -> exception function or None, "
                f"got {type(record_exceptions).__name__}"
            )
        return self._done(-1, -1, top_level_exception, record_exceptions, STATE_FAILED)

    def abort(self, exc):
        """Fail every record with ``exc`` (Java's abort: final state ABORTED); False when
        already completed."""
        check_exception(exc, "exc")
        close_for_record_appends(self.builder)
        return self._done(-1, -1, exc, None, STATE_ABORTED)

    cdef bint _done(self, long long base_offset, long long log_append_time, object exc,
                    object record_exceptions, int state) except *:
        cdef ProduceRequestResult r = self.result
        cdef Py_ssize_t i
        cdef list fns
        cdef Py_ssize_t charge
        cdef RecordThunk* data
        cdef RecordMetadataMaker maker
        cdef RecordCompletedFn completed
        cdef FastLock lock = self._lock
        lock.acquire_c()
        try:
            if self.final_state != STATE_IN_FLIGHT:
                log.debug("batch of %s already %s: %s ignored", self.topic_partition,
                          FINAL_STATE_NAMES[self.final_state], FINAL_STATE_NAMES[state])
                return False
            self.final_state = state
            fns = self.thunks
            data = self.thunk_data
            charge = self._thunk_charge
            self.thunks = []
            self.thunk_data = NULL
            self.thunk_capacity = 0
            self._thunk_charge = 0
            segments = self.segments
            # set before the lock is released: a callback added from now on runs at once and
            # reads this outcome
            r.set(base_offset, log_append_time, exc, record_exceptions)
        finally:
            lock.release_c()
        try:
            if exc is None and len(fns):
                maker = None
                for i in range(len(fns)):
                    fn = fns[i]
                    completed = record_completion_of(fn)
                    if completed != NULL:  # its fields, in C
                        _run_hook(completed, fn, self.topic, self.partition,
                                  self.topic_partition,
                                  record_offset(base_offset, data[i].rel),
                                  record_timestamp(log_append_time, data[i].timestamp), None)
                        continue
                    if maker is None:
                        maker = new_record_metadata_maker(self.topic, self.partition,
                                                          self.topic_partition, base_offset,
                                                          log_append_time)
                    _run_callback(fn, maker.make(data[i].rel, data[i].timestamp,
                                                 data[i].key_size, data[i].value_size,
                                                 data[i].header_size), None)
            else:
                for i in range(len(fns)):
                    fn = fns[i]
                    completed = record_completion_of(fn)
                    if completed != NULL:
                        _run_hook(completed, fn, None, -1, None, -1, -1,
                                  r.error_for(data[i].rel))
                    else:
                        _run_callback(fn, None, r.error_for(data[i].rel))
        finally:
            PyMem_Free(data)
            self.builder._budget.release(charge)
        tp = self.topic_partition
        for bf, order, start, end, first_rel in segments if segments is not None else ():
            try:
                if exc is None or record_exceptions is None:
                    bf.complete_segment(order, start, end, tp.partition, base_offset, first_rel,
                                        exc)
                else:
                    # the broker named the records at fault: each record its own error, one
                    # call per record (a refused batch's path, never the common one)
                    for i in range(end - start):
                        bf.complete_segment(order, start + i, start + i + 1, tp.partition,
                                            base_offset, first_rel + i,
                                            r.error_for(first_rel + i))
            except Exception:
                log.exception("error completing a send_many segment")
        r.done()
        return True

    # ---------------------------------------------------------- state
    def close(self):
        """Finish the batch (compress, header, CRC): no more appends."""
        self.builder.close()

    def close_for_record_appends(self):
        """No more records go in (the bytes stay open; close() finishes them)."""
        close_for_record_appends(self.builder)

    def buffer(self):
        """The finished batch (after close())."""
        return self.builder.buffer()

    def set_producer_state(self, long long producer_id, int epoch, int base_sequence,
                           bint is_transactional):
        """Java's setProducerState and resetProducerState in one: before close() it goes into
        the header close() writes; after close() the header and the CRC are rewritten in place
        (a batch re-sequenced for a new producer epoch)."""
        self.builder.set_producer_state(producer_id, epoch, base_sequence, is_transactional)

    def has_sequence(self):
        return self.builder._base_sequence != -1

    @property
    def base_sequence(self):
        return self.builder._base_sequence

    @property
    def last_sequence(self):
        """Java's lastSequence: base + count - 1, wrapping at 2**31 (-1 without a sequence)."""
        if self.builder._base_sequence == -1:
            return -1
        return (self.builder._base_sequence + self.builder._count - 1) & 0x7FFFFFFF

    @property
    def producer_id(self):
        return self.builder._producer_id

    @property
    def producer_epoch(self):
        return self.builder._producer_epoch

    @property
    def is_transactional(self):
        return self.builder._transactional

    @property
    def record_count(self):
        return self.builder._count

    @property
    def estimated_size_in_bytes(self):
        return self.builder.estimated_size_in_bytes

    @property
    def is_done(self):
        return self.final_state != STATE_IN_FLIGHT

    @property
    def is_closed(self):
        return self.builder._closed

    def is_full(self):
        return self.builder.is_full_c()

    def in_retry(self):
        return self.attempts > 0

    def waited_time_ms(self, long long now_ms):
        return max(0, now_ms - self.last_attempt_ms)

    def has_reached_delivery_timeout(self, long long delivery_timeout_ms, long long now_ms):
        return delivery_timeout_ms <= now_ms - self.created_ms

    def reenqueued(self, long long now_ms, long long backoff_ms=0):
        """Back in the queue for another attempt (``backoff_ms``: how long ready/drain skip it)."""
        self.attempts += 1
        self.last_attempt_ms = max(self.last_append_time, now_ms)
        self.last_append_time = max(self.last_append_time, now_ms)
        self.retry = True
        self.backoff_ms = backoff_ms

    def drained(self, long long now_ms):
        self.drained_ms = max(self.drained_ms, now_ms)

    def records(self):
        """(timestamp, key, value, headers) of every record, decoded from the batch."""
        return read_records(self.builder)

    def split(self, int split_batch_size):
        """Java's ProducerBatch.split: the records re-appended, in order, into new batches of
        ``split_batch_size`` on plain bytearrays (outside the pool, closed for appends, the
        original creation time, consecutive sequences when this batch had one). Every record's
        future, callbacks and send_many segment move to its new batch; this batch ends SPLIT."""
        cdef ProducerBatch nb = None
        cdef int rel, new_rel
        cdef Py_ssize_t i
        if split_batch_size <= 0:
            raise ValueError(f"split_batch_size must be > 0, got {split_batch_size}")
        batches = []
        with self._lock:
            if self.final_state != STATE_IN_FLIGHT:
                raise IllegalStateError(
                    f"cannot split a batch in state {FINAL_STATE_NAMES[self.final_state]}"
                )
            records = read_records(self.builder)
            thunks_by_rel = {}
            for i in range(len(self.thunks)):
                thunks_by_rel.setdefault(self.thunk_data[i].rel, []).append(
                    (self.thunks[i], self.thunk_data[i].key_size, self.thunk_data[i].value_size,
                     self.thunk_data[i].header_size, self.thunk_data[i].timestamp)
                )
            placement = []  # old relative offset -> (batch index, new relative offset)
            forward = []  # old relative offset -> (new batch, new relative offset)
            for rel, (ts, key, value, headers) in enumerate(records):
                new_rel = -1 if nb is None else nb.builder.try_append(ts, key, value, headers)
                if new_rel < 0:
                    if nb is not None:
                        close_for_record_appends(nb.builder)
                    size = max(split_batch_size,
                               estimate_size_in_bytes_upper_bound(key, value, headers))
                    builder = RecordBatchBuilder(bytearray(size), self.builder._codec, size,
                                                 compression_level=self.builder._level)
                    nb = ProducerBatch(self.topic_partition, builder, self.created_ms, True)
                    batches.append(nb)
                    new_rel = nb.builder.try_append(ts, key, value, headers)
                placement.append((len(batches) - 1, new_rel))
                forward.append((nb, new_rel))
                for fn, key_size, value_size, header_size, timestamp in thunks_by_rel.get(rel, ()):
                    nb._push_thunk(len(nb.thunks), new_rel, key_size, value_size, header_size,
                                   timestamp, fn)
            if nb is not None:
                close_for_record_appends(nb.builder)
            for bf, order, start, end, first_rel in (
                    self.segments if self.segments is not None else ()):
                i = start
                while i < end:
                    bidx, new_rel = placement[first_rel + i - start]
                    j = i + 1
                    while j < end and placement[first_rel + j - start] == (bidx, new_rel + j - i):
                        j += 1
                    (<ProducerBatch>batches[bidx]).add_segment((bf, order, i, j, new_rel))
                    i = j
            if self.builder._base_sequence != -1:
                seq = self.builder._base_sequence
                for nb in batches:
                    nb.builder.set_producer_state(self.builder._producer_id,
                                                  self.builder._producer_epoch, seq,
                                                  self.builder._transactional)
                    seq = (seq + nb.builder._count) & 0x7FFFFFFF
            # futures follow ``forward`` to their new batch (set before SPLIT is visible)
            self.result.forward = forward
            self.final_state = STATE_SPLIT
            self.thunks = []
            self._free_thunks()
            self.segments = None
            self.result.set(-1, -1, RecordTooLargeError(
                f"the batch of {self.topic_partition} was split into {len(batches)} batches"
            ), None)
        # wake get() callers blocked on this result: they re-wait on their new batch
        self.result.done()
        return batches

    def __repr__(self):
        return (f"ProducerBatch({self.topic_partition}, records={self.record_count}, "
                f"state={FINAL_STATE_NAMES[self.final_state]})")


cdef void _run_callback(object fn, object md, object exc):
    try:
        fn(md, exc)
    except Exception:
        log.exception("error in a record's completion callback")


cdef void _run_hook(RecordCompletedFn completed, object fn, str topic, int partition,
                    object topic_partition, long long offset, long long timestamp, object exc):
    try:
        completed(fn, topic, partition, topic_partition, offset, timestamp, exc)
    except Exception:
        log.exception("error in a record's completion callback")


# ------------------------------------------------------------------ the Sender's metrics
# (SenderMetrics.update_produce_request_metrics): one Produce request's batches summed in C, so
# the I/O thread does not run a Python loop reading seven properties of each batch

cdef struct TopicSums:
    PyObject* topic  # borrowed from a batch of the request's list
    long long records
    long long size
    double ratio
    long long batches


def produce_request_stats(list batches):
    """The sums and maxima ``SenderMetrics`` records for one Produce request's ``batches``:
    ``(records, size_sum, size_max, queue_sum, queue_max, biggest_sum, biggest_max, ratio_sum,
    per_topic)``, where size is ``estimated_size_in_bytes``, queue the ms from creation to drain
    (at least 0), biggest ``max_record_size``, ratio ``builder.compression_ratio`` (summed in the
    batches' order), and ``per_topic`` maps each topic, in the order of its first batch, to
    ``(records, size, ratio_sum, batches)``."""
    cdef Py_ssize_t n = len(batches), i, t, topics = 0
    cdef ProducerBatch batch
    cdef RecordBatchBuilder builder
    cdef long long records = 0, size_sum = 0, size_max = 0, queue_sum = 0, queue_max = 0
    cdef long long biggest_sum = 0, biggest_max = 0, size, queue, count
    cdef double ratio_sum = 0.0, ratio
    cdef TopicSums* sums = <TopicSums*>PyMem_Malloc((n if n else 1) * sizeof(TopicSums))
    if sums == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            batch = batches[i]
            builder = batch.builder
            count = builder._count
            size = estimated_size_of(builder)
            ratio = compression_ratio_of(builder)
            queue = batch.drained_ms - batch.created_ms
            if queue < 0:
                queue = 0
            records += count
            size_sum += size
            queue_sum += queue
            biggest_sum += batch.max_record_size
            ratio_sum += ratio
            if size > size_max:
                size_max = size
            if queue > queue_max:
                queue_max = queue
            if batch.max_record_size > biggest_max:
                biggest_max = batch.max_record_size
            # a request holds a few topics: a linear search beats a dict of boxed sums
            for t in range(topics):
                if (sums[t].topic == <PyObject*>batch.topic
                        or <str>sums[t].topic == batch.topic):
                    sums[t].records += count
                    sums[t].size += size
                    sums[t].ratio += ratio
                    sums[t].batches += 1
                    break
            else:
                sums[topics].topic = <PyObject*>batch.topic
                sums[topics].records = count
                sums[topics].size = size
                sums[topics].ratio = ratio
                sums[topics].batches = 1
                topics += 1
        per_topic = {}
        for t in range(topics):
            per_topic[<str>sums[t].topic] = (
                sums[t].records, sums[t].size, sums[t].ratio, sums[t].batches
            )
    finally:
        PyMem_Free(sums)
    return (records, size_sum, size_max, queue_sum, queue_max, biggest_sum, biggest_max,
            ratio_sum, per_topic)
