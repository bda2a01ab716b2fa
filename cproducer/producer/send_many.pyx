# cython: wraparound=True
# cython: freethreading_compatible=False
# Free-threaded Python: keeps the GIL. It works on the accumulator's deques and the partitioner,
# which keep the GIL.
"""Columnar send: many records appended in one C loop (``KafkaProducer.send_many``).

A column is either a Python sequence of bytes-like/None (kind "objects"), or one contiguous data
buffer with per-record start/end offsets and an optional validity mask (kind "buffer": numpy
fixed-width ``S`` arrays, Arrow binary/string arrays, ``(buffer, offsets)`` pairs); Arrow data is
read in place, no Python object per record. Records of one partition are appended in their
original order; each run of records that lands in one batch becomes one *segment* of that batch
(see ``batch_future.py``), so completion costs one numpy operation per batch, not a call per record.
"""

import numpy as np

from cproducer.errors import SerializationError

cimport numpy as cnp
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, int64_t, uint8_t

from cproducer.producer.internals.record_accumulator cimport (
    PartitionDeque,
    ProducerBatch,
    RecordAccumulator,
    TopicInfo,
)
from cproducer.producer.internals.built_in_partitioner cimport (BuiltInPartitioner,
                                                                StickyPartitionInfo)
from cproducer.utils.murmur2 cimport murmur2_partition
from cproducer.record.record_batch_builder cimport size_upper_bound

cnp.import_array()


cdef class Column:
    """Pointers and lengths of one column's values (keys or values)."""
    cdef object keep          # objects the pointers point into
    cdef list objects         # kind "objects": the elements
    cdef const uint8_t* data  # kind "buffer"
    cdef const int64_t* starts
    cdef const int64_t* ends
    cdef const uint8_t* valid
    cdef const int32_t* offsets32  # kind "offsets": Arrow's n + 1 offsets, int32 ...
    cdef const int64_t* offsets64  # ... or int64 (large_binary/large_string)
    cdef readonly Py_ssize_t n
    cdef readonly object lengths  # int64 array, -1 = null

    cdef inline bint get(self, Py_ssize_t i, const unsigned char** ptr, Py_ssize_t* length):
        """Pointer and length of element i; False for null."""
        cdef object item
        if self.objects is not None:
            item = self.objects[i]
            if item is None:
                return False
            ptr[0] = <const unsigned char*>PyBytes_AS_STRING(item)
            length[0] = PyBytes_GET_SIZE(item)
            return True
        if self.valid != NULL and not self.valid[i]:
            return False
        if self.offsets32 != NULL:
            ptr[0] = self.data + self.offsets32[i]
            length[0] = self.offsets32[i + 1] - self.offsets32[i]
        elif self.offsets64 != NULL:
            ptr[0] = self.data + self.offsets64[i]
            length[0] = self.offsets64[i + 1] - self.offsets64[i]
        else:
            ptr[0] = self.data + self.starts[i]
            length[0] = self.ends[i] - self.starts[i]
        return True


def objects_column(seq, str what):
    """Kind "objects": every element bytes or None (other bytes-likes are converted once)."""
    cdef Column col = Column.__new__(Column)
    cdef list items = list(seq)
    cdef Py_ssize_t i, n = len(items)
    cdef cnp.ndarray[int64_t, ndim=1] lengths = np.empty(n, dtype=np.int64)
    for i in range(n):
        item = items[i]
        if item is None:
            lengths[i] = -1
        elif type(item) is bytes:
            lengths[i] = PyBytes_GET_SIZE(item)
        elif isinstance(item, (bytearray, memoryview)):
            items[i] = bytes(item)
            lengths[i] = len(items[i])
        else:
            # send()'s error for the same value: SerializationError is a TypeError too
            hint = (" (send_many takes no serializer: encode str to bytes first, or pass a "
                    "pyarrow string array, read as UTF-8)") if isinstance(item, str) else ""
            raise SerializationError(f"{what}[{i}] must be bytes, bytearray, memoryview or None, "
                                     f"got {type(item).__name__}{hint}")
    col.objects = items
    col.keep = items
    col.n = n
    col.lengths = lengths
    return col


cdef object _values_view(Column col, object data):
    # the view of a column's data buffer, its first byte at col.data (an empty buffer has no
    # first byte: a one-byte stand-in is pointed at, never read)
    cdef const uint8_t[::1] d
    mv = memoryview(data).cast("B")
    d = mv if mv.nbytes else memoryview(b"\0")
    col.data = &d[0]
    return mv


cdef object _validity(Column col, object valid):
    # the validity mask (0 = null), one entry per record (col.n), at col.valid; the array, to be
    # kept alive with the column
    cdef const uint8_t[::1] v = np.ascontiguousarray(valid, dtype=np.uint8)
    if v.shape[0] != col.n:
        raise ValueError("the validity mask must have one entry per record")
    col.valid = &v[0] if col.n else NULL
    return v.base


def buffer_column(data, starts, ends, valid=None):
    """Kind "buffer": ``data`` (any contiguous buffer), int64 ``starts``/``ends``, optional
    uint8 ``valid`` (0 = null)."""
    cdef Column col = Column.__new__(Column)
    cdef const int64_t[::1] s = np.ascontiguousarray(starts, dtype=np.int64)
    cdef const int64_t[::1] e = np.ascontiguousarray(ends, dtype=np.int64)
    mv = _values_view(col, data)
    col.n = s.shape[0]
    if e.shape[0] != col.n:
        raise ValueError("starts and ends must have the same length")
    col.starts = &s[0] if col.n else NULL
    col.ends = &e[0] if col.n else NULL
    lengths = np.asarray(e) - np.asarray(s)
    if col.n and (lengths.min() < 0 or np.asarray(s).min() < 0
                  or np.asarray(e).max() > mv.nbytes):
        raise ValueError("offsets point outside the data buffer")
    keep = [mv, s, e]
    if valid is not None:
        v = _validity(col, valid)
        keep.append(v)
        lengths = np.where(v != 0, lengths, -1)
    col.keep = keep
    col.lengths = np.asarray(lengths, dtype=np.int64)
    return col


def offsets_column(data, offsets, Py_ssize_t first, Py_ssize_t n, bint wide, valid=None):
    """Kind "offsets": Arrow's layout read in place. ``offsets``: the offsets buffer's bytes
    (int32 entries, int64 when ``wide``: large_binary/large_string), of which entries ``first ..
    first + n`` (n + 1 of them) are this column's; ``data``: the values buffer they point into;
    ``valid``: None or a uint8 array (0 = null). One C pass checks the offsets and makes the
    lengths."""
    cdef Column col = Column.__new__(Column)
    cdef const uint8_t[::1] ob
    cdef cnp.ndarray[int64_t, ndim=1] lengths
    cdef int64_t* lp
    cdef Py_ssize_t i, size, width = 8 if wide else 4
    cdef int64_t a, b
    if n < 0 or first < 0:
        raise ValueError(f"bad slice of the offsets: first {first}, {n} records")
    mv = _values_view(col, data)
    size = mv.nbytes
    col.n = n
    om = memoryview(offsets).cast("B")
    if om.nbytes < (first + n + 1) * width:
        raise ValueError(f"the offsets buffer holds {om.nbytes // width} entries, "
                         f"needs {first + n + 1}")
    ob = om
    if wide:
        col.offsets64 = <const int64_t*>&ob[first * width]
    else:
        col.offsets32 = <const int32_t*>&ob[first * width]
    lengths = np.empty(n, dtype=np.int64)
    lp = <int64_t*>cnp.PyArray_DATA(lengths)
    for i in range(n):
        if wide:
            a, b = col.offsets64[i], col.offsets64[i + 1]
        else:
            a, b = col.offsets32[i], col.offsets32[i + 1]
        if a < 0 or b < a or b > size:
            raise ValueError("offsets point outside the data buffer")
        lp[i] = b - a
    keep = [mv, om]
    if valid is not None:
        keep.append(_validity(col, valid))
        for i in range(n):
            if not col.valid[i]:
                lp[i] = -1
    col.keep = keep
    col.lengths = lengths
    return col


def partition_order(partitions):
    """The stable order of the records by partition (a counting sort), or None when it is the
    call order already: every record in one partition, or a sticky (-1) record among them (where
    it lands depends on what was appended before it)."""
    cdef const int32_t[::1] p = partitions
    cdef Py_ssize_t i, n = p.shape[0]
    cdef int32_t v, hi = 0
    cdef bint mixed = False
    cdef cnp.ndarray[int64_t, ndim=1] order
    cdef int64_t* out
    cdef cnp.ndarray[int64_t, ndim=1] starts
    cdef int64_t* st
    for i in range(n):
        v = p[i]
        if v < 0:
            return None
        if v != p[0]:
            mixed = True
        if v > hi:
            hi = v
    if not mixed:
        return None
    starts = np.zeros(hi + 2, dtype=np.int64)
    st = <int64_t*>cnp.PyArray_DATA(starts)
    for i in range(n):
        st[p[i] + 1] += 1
    for i in range(hi + 1):
        st[i + 1] += st[i]
    order = np.empty(n, dtype=np.int64)
    out = <int64_t*>cnp.PyArray_DATA(order)
    for i in range(n):
        v = p[i]
        out[st[v]] = i
        st[v] += 1
    return order


def size_upper_bounds(key_lengths, value_lengths, headers_sizes):
    """Java's estimateSizeInBytesUpperBound per record (vectorized)."""
    cdef const int64_t[::1] kl = key_lengths
    cdef const int64_t[::1] vl = value_lengths
    cdef const int64_t[::1] hs = headers_sizes
    cdef Py_ssize_t i, n = vl.shape[0]
    cdef cnp.ndarray[int64_t, ndim=1] out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = size_upper_bound(kl[i], vl[i], hs[i])
    return out


def append_columns(RecordAccumulator acc, str topic, Column values, Column keys,
                   partitions, order, timestamps, long long timestamp, list headers,
                   batch_future, double max_block_ms, long long now, cluster, sizes,
                   wake=None):
    """Append every record (in ``order``) to the accumulator. Returns (appended, wakeup, error):
    records order[appended:] were not accepted (error says why; None when all were)."""
    cdef TopicInfo ti = acc._topic_info(topic)
    cdef BuiltInPartitioner bp = ti.partitioner
    cdef StickyPartitionInfo info = None
    cdef PartitionDeque dq = None
    cdef ProducerBatch batch = None
    cdef const int32_t[::1] parts = partitions
    cdef const int64_t[::1] ords
    cdef const int64_t[::1] tss
    cdef const int64_t[::1] sz = sizes
    cdef bint has_order = order is not None, has_ts = timestamps is not None
    cdef Py_ssize_t pos, j, n = values.n, seg_start = 0, klen = -1, vlen = 0, size
    cdef int p, cur_p = -2, rel, seg_rel = 0, before
    cdef const unsigned char* kp = NULL
    cdef const unsigned char* vp = NULL
    cdef bint locked = False, wakeup = False, has_key, has_value
    cdef long long ts
    cdef object hdr = None
    if has_order:
        ords = order
    if has_ts:
        tss = timestamps
    pos = 0
    try:
        while pos < n:
            j = ords[pos] if has_order else pos
            p = parts[j]
            if p < 0:
                info = bp.peek_current_partition_info(cluster)
                p = info.index
            else:
                info = None
            if p != cur_p or batch is None:
                # close the running segment, move to this partition's deque
                if batch is not None and pos > seg_start:
                    batch.add_segment((batch_future, order, seg_start, pos, seg_rel))
                    batch.last_append_time = now
                if locked:
                    dq.lock.release_c()
                    locked = False
                batch = None
                dq = ti.get_or_create(p)
                dq.lock.acquire_c()
                locked = True
                cur_p = p
                if dq.batches:
                    batch = dq.batches[-1]
                    if batch.final_state != 0 or batch.builder._closed:
                        batch = None
                seg_start = pos
                if batch is not None:
                    seg_rel = batch.builder._count
            has_key = keys is not None and keys.get(j, &kp, &klen)
            has_value = values.get(j, &vp, &vlen)
            ts = tss[j] if has_ts else timestamp
            if headers is not None:
                hdr = headers[j]
            rel = -1
            if batch is not None:
                before = batch.builder._pos
                rel = batch.builder.append_raw(ts, kp if has_key else NULL,
                                               klen if has_key else -1,
                                               vp if has_value else NULL,
                                               vlen if has_value else -1, hdr)
            if rel < 0:
                # a new batch: never wait for memory while holding the deque lock
                if batch is not None:
                    batch.builder.finish_appends()  # Java's tryAppend: full, closed for appends
                if batch is not None and pos > seg_start:
                    batch.add_segment((batch_future, order, seg_start, pos, seg_rel))
                    batch.last_append_time = now
                    # registered once: if the allocation below fails, the error path must not
                    # add these records again (the future would count them twice, never finish)
                    seg_start = pos
                dq.lock.release_c()
                locked = False
                # the buffer send() would start this partition's batch in (sized at the last
                # drain, RecordAccumulator._next_buffer_size): a chunk spread over many
                # partitions holds memory in proportion to its records, not to batch.size
                size = dq.buffer_size
                if size <= 0 or size > acc.batch_size:
                    size = acc.batch_size
                if size < sz[j]:
                    size = sz[j]
                if wake is not None and (acc.pool.queued > 0
                                         or acc.pool.available_memory < size):
                    wake()  # the Sender must drain and free memory while we wait for it
                buffer = acc.pool.allocate(size, max_block_ms)
                dq.lock.acquire_c()
                locked = True
                batch = acc.new_batch_for(dq, buffer, now)
                wakeup = True
                seg_start = pos
                seg_rel = 0
                before = batch.builder._pos
                rel = batch.builder.append_raw(ts, kp if has_key else NULL,
                                               klen if has_key else -1,
                                               vp if has_value else NULL,
                                               vlen if has_value else -1, hdr)
            pos += 1
            if batch.builder._pos - before > batch.max_record_size:
                batch.max_record_size = batch.builder._pos - before  # record-size-max
            if info is not None:
                # the sticky partition may switch: the next record then starts a new segment
                bp.update_partition_info(info, batch.builder._pos - before, cluster,
                                         batch.builder.is_full_c())
                if bp.is_partition_changed(info):
                    cur_p = -2
        if batch is not None and pos > seg_start:
            batch.add_segment((batch_future, order, seg_start, pos, seg_rel))
            batch.last_append_time = now
            if len(dq.batches) > 1 or batch.builder.is_full_c():
                wakeup = True
        return pos, wakeup, None
    except BaseException as exc:
        if batch is not None and pos > seg_start:
            batch.add_segment((batch_future, order, seg_start, pos, seg_rel))
        return pos, wakeup, exc
    finally:
        if locked:
            dq.lock.release_c()


def fill_segment(cnp.ndarray partitions, cnp.ndarray offsets, order, Py_ssize_t start,
                 Py_ssize_t end, int partition, long long first_offset):
    """A completed segment of a send_many call, in one C loop: for the k-th record i of
    ``order[start:end]`` (``range(start, end)`` when order is None), ``partitions[i] =
    partition`` and, when ``first_offset >= 0``, ``offsets[i] = first_offset + k``. The arrays
    are the call's own (``BatchFuture``): int32 and int64, contiguous, one entry per record."""
    _fill_segment(partitions, offsets, order, start, end, partition, first_offset)


cdef int _fill_segment(cnp.ndarray partitions, cnp.ndarray offsets, object order,
                       Py_ssize_t start, Py_ssize_t end, int partition,
                       long long first_offset) except -1:
    cdef int32_t* parts
    cdef int64_t* offs
    cdef const int64_t* ords = NULL
    cdef cnp.ndarray order_arr
    cdef Py_ssize_t k, i, n = partitions.shape[0]
    if (partitions.dtype.num != cnp.NPY_INT32 or offsets.dtype.num != cnp.NPY_INT64
            or not cnp.PyArray_IS_C_CONTIGUOUS(partitions)
            or not cnp.PyArray_IS_C_CONTIGUOUS(offsets) or offsets.shape[0] != n):
        raise TypeError("partitions must be contiguous int32 and offsets int64 of one length")
    if start < 0 or end < start:
        raise ValueError(f"bad segment [{start}, {end})")
    if order is not None:
        order_arr = <cnp.ndarray?>order
        if (order_arr.dtype.num != cnp.NPY_INT64 or not cnp.PyArray_IS_C_CONTIGUOUS(order_arr)
                or order_arr.shape[0] < end):
            raise TypeError("order must be a contiguous int64 array covering the segment")
        ords = <const int64_t*>cnp.PyArray_DATA(order_arr)
    elif end > n:
        raise ValueError(f"segment [{start}, {end}) is past the {n} records")
    parts = <int32_t*>cnp.PyArray_DATA(partitions)
    offs = <int64_t*>cnp.PyArray_DATA(offsets)
    for k in range(end - start):
        i = ords[start + k] if ords != NULL else start + k
        if i < 0 or i >= n:
            raise IndexError(f"order[{start + k}] = {i} is not a record of the call")
        parts[i] = partition
        if first_offset >= 0:
            offs[i] = first_offset + k
    return 0


cdef class SendManyCompletion:
    """Each record's partition, offset and error of one ``send_many`` call, filled one segment
    at a time (the call's records in one batch) as the batches complete; ``BatchFuture`` is its
    Python face and implements ``_finish``, which runs once, when the last record completed.

    The Sender thread completes every segment of a finished batch, so this is C, and without a
    lock: no Python code runs between reading and updating the counts, and this module keeps
    the GIL (see the top), so the Sender thread and a caller failing the records it could not
    append (``complete_segment`` from ``send_many``) never interleave here."""
    cdef readonly Py_ssize_t count
    cdef readonly cnp.ndarray partitions  # int32, -1 until its segment completed
    cdef readonly cnp.ndarray offsets     # int64, -1 when failed or unknown (acks=0)
    cdef readonly dict errors             # record index -> its exception
    cdef Py_ssize_t _remaining

    def __init__(self, Py_ssize_t count):
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        self.count = count
        self.partitions = np.full(count, -1, dtype=np.int32)
        self.offsets = np.full(count, -1, dtype=np.int64)
        self.errors = {}
        self._remaining = count
        if count == 0:
            self._finish()

    def complete_segment(self, order, Py_ssize_t start, Py_ssize_t end, int partition,
                         long long base_offset, long long first_rel_offset, error):
        """Records ``order[start:end]`` (``start..end-1`` without an order) completed: they
        sit at ``first_rel_offset...`` of a batch of ``partition`` written at ``base_offset``
        (-1: not known), or failed with ``error``."""
        cdef Py_ssize_t n = end - start
        cdef long long first = -1
        cdef Py_ssize_t k
        cdef const int64_t* ords
        if n > self._remaining:
            raise ValueError(
                f"a segment of {n} records, but only {self._remaining} of the call's "
                f"{self.count} are not complete"
            )
        if error is None and base_offset >= 0:
            first = base_offset + first_rel_offset
        _fill_segment(self.partitions, self.offsets, order, start, end, partition, first)
        if error is not None:
            if order is None:
                for k in range(start, end):
                    self.errors[k] = error
            else:
                ords = <const int64_t*>cnp.PyArray_DATA(<cnp.ndarray>order)
                for k in range(start, end):
                    self.errors[ords[k]] = error
        self._remaining -= n
        if self._remaining == 0:
            self._finish()

    def fail_all(self, error):
        """The call failed before any of its records was accepted: each fails with ``error``."""
        cdef Py_ssize_t i
        if self._remaining == 0:
            return
        for i in range(self.count):
            self.errors.setdefault(i, error)
        self._remaining = 0
        self._finish()

    def _finish(self):
        raise NotImplementedError("a subclass completes the call")


def partitions_of_column(Column keys, int num_partitions):
    """murmur2 partition of every key (-1 for null keys), one C loop."""
    cdef Py_ssize_t i
    cdef const unsigned char* kp = NULL
    cdef Py_ssize_t klen = 0
    cdef cnp.ndarray[int32_t, ndim=1] out = np.empty(keys.n, dtype=np.int32)
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be > 0, got {num_partitions}")
    for i in range(keys.n):
        if keys.get(i, &kp, &klen):
            out[i] = murmur2_partition(kp, klen, num_partitions)
        else:
            out[i] = -1
    return out
