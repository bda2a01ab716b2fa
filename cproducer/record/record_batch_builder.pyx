# cython: freethreading_compatible=True
# Free-threaded Python: a builder is used by one thread at a time, under its partition deque's
# native mutex (the accumulator's FastLock). The module's globals: constants and a test hook (the
# GIL release threshold); the shared lz4 state is lz4_frame's.
"""RecordBatchBuilder: Java's ``MemoryRecordsBuilder`` for RecordBatch v2 (magic 2).

Wire schema (all integers big-endian; varints zigzag-encoded, as ``DefaultRecord`` writes them):

    RecordBatch =>
      baseOffset           int64   @0     always 0 from a producer
      batchLength          int32   @8     bytes after this field
      partitionLeaderEpoch int32   @12    -1 from a producer
      magic                int8    @16    2
      crc                  uint32  @17    CRC-32C of attributes .. end
      attributes           int16   @21    bits 0-2 codec, 3 timestamp type, 4 transactional
      lastOffsetDelta      int32   @23
      baseTimestamp        int64   @27    first record's timestamp
      maxTimestamp         int64   @35
      producerId           int64   @43
      producerEpoch        int16   @51
      baseSequence         int32   @53
      recordCount          int32   @57
      records              @61     compressed as one stream when a codec is set
    Record =>
      length varint, attributes int8 (0), timestampDelta varlong, offsetDelta varint,
      keyLength varint (-1 = null), key, valueLength varint (-1 = null), value,
      headersCount varint, [headerKeyLength varint, headerKey utf-8,
                            headerValueLength varint (-1 = null), headerValue]

Records are written straight into a caller-supplied writable buffer (a pooled bytearray of
``batch.size``): no intermediate copy. With a codec, that buffer is the stage of a compressing
stream, as Java's batch writes through its compressor: when the next record does not fit, the
records in it are compressed (on the appending thread, as in Java) into the batch's compressed
output and the stage starts again, so a batch of very compressible records holds its compressed
bytes and one buffer of uncompressed ones, never all of them (zstd, whose frame carries its
content size, is compressed at once by ``close()``; lz4 compresses a value of 8 KiB or more
straight from the caller's memory, see LZ4_DIRECT_MIN). ``close()`` compresses what is left,
puts the compressed records back into the caller's buffer when they fit, fills the header and
the CRC, and ``buffer()`` exposes the finished batch as a view.

Errors: a bad argument raises TypeError/ValueError naming it; a first record the physical buffer
cannot hold raises BufferError; appending to a closed builder raises RuntimeError (Java's
IllegalStateException). In every case nothing is recorded and the builder stays usable.

A builder is not thread-safe: one thread appends at a time (the accumulator holds the partition's
lock). The GIL is released while very large keys/values are copied and while the CRC of a very
large batch is computed (see ``_nogil_bytes``); the codec libraries release it while they work.
"""

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.memoryview cimport PyMemoryView_GET_BUFFER
from cpython.bytearray cimport (
    PyByteArray_AS_STRING,
    PyByteArray_FromStringAndSize,
    PyByteArray_GET_SIZE,
    PyByteArray_Resize,
)
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t
from libc.string cimport memcpy

from cproducer.record.lz4_frame cimport (
    LZ4_BLOCK_MAX,
    LZ4_DIRECT_MIN,
    lz4_blocks_bound,
    lz4_compress_stage,
    lz4_frame_header,
    lz4_in_c,
)
from cproducer.record.record_args cimport check_epoch, check_timestamp, get_buffer, len_of
from cproducer.record.record_size cimport (
    MAX_RECORD_BODY,
    delta_from,
    headers_size,
    record_body_size,
    record_size,
)
from cproducer.record.record_writer cimport copy_bytes, write_headers, write_record_head
from cproducer.utils.crc32c cimport cp_crc32c_init, crc32c_update
from cproducer.utils.memory_budget cimport MemoryBudget
from cproducer.utils.byte_utils cimport write_be16, write_be32, write_be64, write_varint

from cproducer.record import compression as _compression

cdef MemoryBudget _UNLIMITED = MemoryBudget()  # builders made outside a producer

cp_crc32c_init()

# Copies and CRCs of at least this many bytes release the GIL: taking it back waits up to a switch
# interval, which only a copy of a few ms (~32 MiB) outweighs. Tunable (set_gil_release_threshold).
cdef Py_ssize_t _nogil_bytes = 32 << 20

RECORD_BATCH_OVERHEAD = RECORDS_OFFSET
COMPRESSION_RATE_ESTIMATION_FACTOR = 1.05
cdef double _RATE_FACTOR = 1.05  # Java's COMPRESSION_RATE_ESTIMATION_FACTOR
cdef int CODEC_GZIP = _compression.CODEC_GZIP
cdef int CODEC_LZ4 = _compression.CODEC_LZ4


def record_size_in_bytes(int offset_delta, long long timestamp_delta, key, value, headers=None):
    """Exact size of one record (length varint included), as ``DefaultRecord.sizeInBytes``."""
    return record_size(record_body_size(offset_delta, timestamp_delta, len_of(key, "key"),
                                        len_of(value, "value"), headers_size(headers)))


def estimate_size_in_bytes_upper_bound(key, value, headers=None):
    """Java's ``AbstractRecords.estimateSizeInBytesUpperBound`` for magic 2: the batch overhead
    + ``DefaultRecord.recordSizeUpperBound`` (``size_upper_bound`` in the .pxd)."""
    cdef Py_ssize_t klen = len_of(key, "key"), vlen = len_of(value, "value")
    return size_upper_bound(klen, vlen, headers_size(headers))


def headers_size_in_bytes(headers):
    """Bytes ``headers`` take in a record, their count varint included (checks every header:
    TypeError/ValueError naming the bad one)."""
    return headers_size(headers)


# not tracked by the cyclic GC (see the .pxd)
@cython.no_gc
cdef class RecordBatchBuilder:
    """Builds one RecordBatch v2 in a caller-supplied writable buffer.

    ``write_limit`` is the batch.size budget (default: the buffer's length); the first record
    always goes in when the physical buffer holds it, as in Java. With a codec, appends are
    bounded by Java's estimate (header + uncompressed bytes x ``compression_ratio_estimate`` x
    1.05); the records are written uncompressed into the caller's buffer, and compressed from
    there whenever the next one does not fit (zstd: they move to a larger private bytearray
    instead, compressed by ``close()``). A record larger than the caller's buffer moves the stage
    to a larger private bytearray (the caller's buffer is left alone). ``stage_size`` (default:
    the buffer's length): how large the stage may grow, on memory from the budget, before its
    records are compressed, or (uncompressed) the batch refuses the next record; a producer's
    batch starts in a small buffer and grows to batch.size.
    """

    def __init__(self, buffer, int compression_type=0, Py_ssize_t write_limit=-1,
                 long long producer_id=-1, int producer_epoch=-1, int base_sequence=-1,
                 bint is_transactional=False, double compression_ratio_estimate=1.0,
                 compression_level=None,
                 MemoryBudget memory_budget=None, Py_ssize_t stage_size=-1):
        cdef Py_buffer* pb
        if compression_type not in _compression.NAMES:
            raise ValueError(
                "compression_type must be "
                + ", ".join(f"{int(c)} ({n})" for c, n in _compression.NAMES.items())
                + f"; got {compression_type}"
            )
        check_epoch(producer_epoch)
        if not compression_ratio_estimate > 0.0:
            raise ValueError(
                f"compression_ratio_estimate must be > 0, got {compression_ratio_estimate}"
            )
        # A memoryview holds the buffer export: when this builder goes away (even through the
        # cyclic GC) the view releases it properly.
        try:
            mv = memoryview(buffer)
            if mv.readonly or not mv.c_contiguous:
                raise TypeError
            if mv.format != "B" or mv.ndim != 1:
                mv = mv.cast("B")
        except TypeError:
            raise TypeError(
                f"buffer must be a writable C-contiguous buffer (bytearray, memoryview of one, "
                f"numpy uint8 array), got {type(buffer).__name__}"
            ) from None
        pb = PyMemoryView_GET_BUFFER(mv)
        if pb.len < RECORDS_OFFSET:
            raise ValueError(
                f"buffer too small: a batch needs at least {RECORDS_OFFSET} bytes, got {pb.len}"
            )
        self._holder = buffer
        self._holder_mv = mv
        self._mv = mv
        self._budget = _UNLIMITED if memory_budget is None else memory_budget
        self._charged = 0
        self._released = False
        self._buf = <unsigned char*>pb.buf
        self._capacity = pb.len
        self._write_limit = self._capacity if write_limit < 0 else write_limit
        self._stage_limit = max(stage_size, self._capacity)
        self._pos = RECORDS_OFFSET
        self._codec = compression_type
        self._first_ts = -1
        self._max_ts = -1
        self._count = 0
        self._producer_id = producer_id
        self._producer_epoch = <int16_t>producer_epoch
        self._base_sequence = base_sequence
        self._transactional = is_transactional
        self._closed = False
        self._appends_closed = False
        self._out = None
        self._size = 0
        self._ratio = compression_ratio_estimate
        self._level = compression_level  # None: the codec's default (KIP-390)
        self._woff = 0
        self._streams = compression_type != 0 and compression_type != _compression.CODEC_ZSTD
        self._zout = None
        self._zlen = 0
        self._zcharged = 0
        self._stream = None
        self._lz4_c = False
        self._ended = False

    cdef bint _grow(self, Py_ssize_t needed) except -1:
        # A private stage for uncompressed records that outgrow the caller's buffer (``needed``:
        # the logical position to reach), charged to the memory budget; False (nothing changed)
        # when the budget has no room for it now.
        cdef Py_ssize_t staged = self._pos - self._woff
        cdef Py_ssize_t doubled = 2 * (self._capacity - self._woff)
        cdef Py_ssize_t capacity
        if self._capacity - self._woff < self._stage_limit:
            doubled = min(doubled, self._stage_limit)  # growing towards stage_size
        capacity = max(needed - self._woff, doubled)
        cdef object bigger
        cdef unsigned char* dst
        if not self._budget.try_reserve(capacity):
            return False
        try:
            bigger = PyByteArray_FromStringAndSize(NULL, capacity)
        except BaseException:
            self._budget.release(capacity)
            raise
        dst = <unsigned char*>PyByteArray_AS_STRING(bigger)
        copy_bytes(dst, self._buf, staged, _nogil_bytes)
        # the caller's buffer stays referenced by _holder (it goes back to the pool as usual);
        # an earlier private buffer is freed here, and its charge given back
        self._mv = memoryview(bigger)
        self._buf = dst
        self._capacity = self._woff + capacity
        self._release_charge()
        self._charged = capacity
        return True

    cdef bint _zreserve(self, Py_ssize_t extra, bint may_refuse) except -1:
        # room for ``extra`` more bytes of compressed output, charged to the memory budget;
        # False (nothing changed) when may_refuse and the budget has no room now
        cdef Py_ssize_t have = 0 if self._zout is None else PyByteArray_GET_SIZE(self._zout)
        cdef Py_ssize_t used = RECORDS_OFFSET if self._zout is None else self._zlen
        cdef Py_ssize_t capacity, charge
        cdef object bigger
        if used + extra <= have:
            return True
        capacity = max(used + extra, 2 * have, 4096)
        charge = capacity - have
        if may_refuse:
            if not self._budget.try_reserve(charge):
                return False
        else:
            self._budget.force_reserve(charge)
        try:
            bigger = PyByteArray_FromStringAndSize(NULL, capacity)
        except BaseException:
            self._budget.release(charge)
            raise
        if self._zout is not None:
            memcpy(PyByteArray_AS_STRING(bigger), PyByteArray_AS_STRING(self._zout), used)
        self._zout = bigger
        self._zlen = used
        self._zcharged += charge
        return True

    cdef bint _flush_stage(self, bint may_refuse) except -1:
        # Compress the stage's records into _zout and empty the stage; False (nothing changed)
        # when may_refuse and the budget has no room for the compressed bytes now.
        cdef Py_ssize_t staged = self._pos - self._woff - RECORDS_OFFSET
        cdef Py_ssize_t head = 0
        cdef unsigned char* dst
        if staged <= 0:
            return True
        if self._stream is None and not self._choose_lz4_c():
            self._stream = _compression.stream_compressor(self._codec, self._level)
        if self._lz4_c:
            if self._zlen <= RECORDS_OFFSET:  # nothing compressed yet: the frame starts
                head = PyBytes_GET_SIZE(lz4_frame_header())
            if not self._zreserve(head + lz4_blocks_bound(staged), may_refuse):
                return False
            dst = <unsigned char*>PyByteArray_AS_STRING(self._zout) + self._zlen
            if head:
                memcpy(dst, PyBytes_AS_STRING(lz4_frame_header()), head)
            self._zlen += head + lz4_compress_stage(self._buf + RECORDS_OFFSET, staged,
                                                    dst + head, staged >= _nogil_bytes)
        else:
            # a bound for what the codec makes of it, checked before it consumes the records
            # (snappy's worst case is the largest: 32 + n + n / 6 per chunk)
            if not self._zreserve(staged + staged // 5 + 64, may_refuse):
                return False
            raw = self._mv[RECORDS_OFFSET:RECORDS_OFFSET + staged]
            try:
                out = self._stream.compress(raw)
            finally:
                raw.release()
            self._append_compressed(out)
        self._woff = self._pos - RECORDS_OFFSET
        self._capacity = self._woff + PyMemoryView_GET_BUFFER(self._mv).len
        return True

    cdef bint _choose_lz4_c(self) except -1:
        # whether this batch's records are compressed by the C lz4 path (lz4 at its default
        # level, the library's function reachable); decided before the first block
        if not self._lz4_c and self._stream is None and self._zlen <= RECORDS_OFFSET:
            self._lz4_c = (
                self._codec == CODEC_LZ4
                and (self._level is None
                     or self._level == _compression.DEFAULT_LEVELS[self._codec])
                and lz4_in_c()
            )
        return self._lz4_c

    cdef bint _goes_direct(self, Py_ssize_t value_len, Py_ssize_t rest) except -1:
        # whether an lz4 record's value of ``value_len`` bytes (``rest``: the record's other
        # bytes) is compressed on its own (LZ4_DIRECT_MIN): not one that half the stage, or
        # half an lz4 block, could hold with others, nor one whose head the stage can hardly
        # hold; and only by the C lz4 path
        cdef Py_ssize_t room = (PyMemoryView_GET_BUFFER(self._mv).len - RECORDS_OFFSET) // 2
        return (value_len >= min(room, LZ4_BLOCK_MAX // 2) and rest <= room
                and self._choose_lz4_c())

    cdef int _append_value_direct(self, int32_t offset_delta, int64_t ts_delta,
                                  Py_ssize_t body, Py_ssize_t total,
                                  const unsigned char* key, Py_ssize_t key_len,
                                  const unsigned char* value, Py_ssize_t value_len) except -2:
        # append_raw for a large value of a record without headers, lz4 in C (LZ4_DIRECT_MIN):
        # the record's head (length .. value length) into the stage, the stage compressed, the
        # value compressed from the caller's memory, the headers count starting the next stage.
        # Every byte it may write is reserved first: -1 (nothing written) when the budget has no
        # room and the batch may refuse the record.
        cdef Py_ssize_t head_len = total - value_len - NO_HEADERS_SIZE
        cdef Py_ssize_t frame = 0
        cdef unsigned char* p
        cdef unsigned char* dst
        if self._pos + head_len > self._capacity:
            if not self._flush_stage(offset_delta > 0):
                self._appends_closed = True
                return -1
        if self._zlen <= RECORDS_OFFSET:
            frame = PyBytes_GET_SIZE(lz4_frame_header())
        if not self._zreserve(
            frame + lz4_blocks_bound(self._pos - self._woff - RECORDS_OFFSET + head_len)
            + lz4_blocks_bound(value_len),
            offset_delta > 0,
        ):
            self._appends_closed = True
            return -1
        p = write_record_head(self._buf + (self._pos - self._woff), body, ts_delta, offset_delta,
                              key, key_len, _nogil_bytes)
        write_varint(p, <int32_t>value_len)
        self._pos += head_len
        self._flush_stage(False)  # its room is reserved: it writes and returns True
        dst = <unsigned char*>PyByteArray_AS_STRING(self._zout) + self._zlen
        self._zlen += lz4_compress_stage(value, value_len, dst, value_len >= _nogil_bytes)
        self._pos += value_len
        self._woff += value_len
        self._capacity += value_len
        self._buf[self._pos - self._woff] = 0  # headers count: the stage is empty, it fits
        self._pos += NO_HEADERS_SIZE
        return 0

    cdef int _append_compressed(self, object out) except -1:
        cdef Py_buffer cb
        PyObject_GetBuffer(out, &cb, PyBUF_SIMPLE)
        try:
            self._zreserve(cb.len, False)
            memcpy(<unsigned char*>PyByteArray_AS_STRING(self._zout) + self._zlen, cb.buf, cb.len)
            self._zlen += cb.len
        finally:
            PyBuffer_Release(&cb)
        return 0

    cdef void _to_holder(self) noexcept:
        # the caller's buffer is the stage again (a private one is freed, its charge given back)
        cdef Py_buffer* holder = PyMemoryView_GET_BUFFER(self._holder_mv)
        self._mv = self._holder_mv
        self._buf = <unsigned char*>holder.buf
        self._capacity = self._woff + holder.len
        self._release_charge()

    cdef int _end_stream(self) except -1:
        # the stage's last records compressed and the stream ended (once): _zout is complete
        if self._ended or not self._streams or self._count == 0:
            return 0
        self._flush_stage(False)
        self._append_compressed(
            self._stream.finish() if self._stream is not None else _compression.LZ4_END_MARK
        )
        self._stream = None
        self._ended = True
        return 0

    cdef int finish_appends(self) except -1:
        """Java's closeForRecordAppends: no more records. A compressed batch ends its stream now
        (its compressor's memory goes with it: only a partition's open batch holds one)."""
        self._appends_closed = True
        self._end_stream()
        return 0

    cpdef bytes open_records(self):
        """The records section written so far, uncompressed (an open batch read back)."""
        cdef bytes staged = bytes(self._mv[RECORDS_OFFSET:self._pos - self._woff])
        if self._zout is None:
            return staged
        if self._ended:
            tail = b""
        elif self._stream is not None:
            tail = self._stream.tail()
        else:
            tail = _compression.LZ4_END_MARK
        compressed = bytes(self._zout[RECORDS_OFFSET:self._zlen]) + tail
        return _compression.decompress(self._codec, compressed) + staged

    cdef void _release_charge(self) noexcept:
        if self._charged:
            self._budget.release(self._charged)
            self._charged = 0

    def release_memory(self):
        """Free the private buffers (grown records, compressed output) and give their charge
        back to the memory budget: the batch is done. ``buffer()`` raises from now on."""
        self._out = None
        self._zout = None
        self._stream = None
        self._ended = True  # nothing more is compressed: the caller's buffer is not ours now
        self._appends_closed = True
        self._to_holder()
        if self._zcharged:
            self._budget.release(self._zcharged)
            self._zcharged = 0
        self._released = True

    @property
    def charged_memory(self):
        """Bytes this builder holds beyond the caller's buffer, charged to its memory budget."""
        return self._charged + self._zcharged

    cdef Py_ssize_t _estimated(self, Py_ssize_t uncompressed) noexcept:
        # Java's estimatedBytesWritten for ``uncompressed`` bytes of records. Java estimates all
        # of them from the topic's ratio. Where the codec hands out everything it was given
        # (lz4, snappy: no bytes held inside the compressor), the records already compressed
        # (the first _woff bytes) count what they really take and only the stage's records are
        # estimated. The topic's estimate rises at once on one worse batch and falls slowly
        # (CompressionRatioEstimator): on its own it closes batches of very compressible
        # records far below batch.size for many batches after every rise. gzip keeps up to
        # tens of KiB inside zlib until the stream ends: Java's estimate for all of it.
        if self._codec == 0:
            return RECORDS_OFFSET + uncompressed
        if self._zout is None or self._codec == CODEC_GZIP:
            return RECORDS_OFFSET + <Py_ssize_t>(uncompressed * self._ratio * _RATE_FACTOR)
        return self._zlen + <Py_ssize_t>((uncompressed - self._woff) * self._ratio * _RATE_FACTOR)

    cdef int append_raw(self, int64_t timestamp, const unsigned char* key, Py_ssize_t key_len,
                        const unsigned char* value, Py_ssize_t value_len,
                        object headers) except -2:
        """Append one record (key_len/value_len -1 = null); its offset delta, or -1 when Java's
        ``hasRoomFor`` would refuse it (the builder unchanged)."""
        cdef Py_ssize_t hsize = 1, body, total
        cdef int64_t ts_delta
        cdef int32_t offset_delta = self._count
        cdef unsigned char* p
        cdef unsigned char* end
        if self._closed:
            raise RuntimeError("the batch is closed: no more records can be appended")
        if self._appends_closed:
            return -1
        if timestamp < -1:
            check_timestamp(timestamp)
        if headers is not None:
            hsize = headers_size(headers)
        ts_delta = 0 if offset_delta == 0 else delta_from(timestamp, self._first_ts)
        body = record_body_size(offset_delta, ts_delta, key_len, value_len, hsize)
        if body > MAX_RECORD_BODY:
            raise ValueError(f"record too large: {body} bytes, a record is at most 2 GiB")
        total = record_size(body)
        if offset_delta > 0:
            # Java's hasRoomFor: the new record counts uncompressed ("be conservative")
            if self._estimated(self._pos - RECORDS_OFFSET) + total > self._write_limit:
                return -1
        if (value_len >= LZ4_DIRECT_MIN and hsize == NO_HEADERS_SIZE
                and self._codec == CODEC_LZ4 and self._goes_direct(value_len, total - value_len)):
            if self._append_value_direct(offset_delta, ts_delta, body, total, key, key_len,
                                         value, value_len) < 0:
                return -1
        else:
            if offset_delta > 0:
                if self._pos + total > self._capacity:
                    # Within write_limit (checked above), beyond the stage. A stage smaller
                    # than stage_size grows first, doubling: uncompressed records have nowhere
                    # else to go, and compressed ones are then compressed in blocks as large
                    # as from a stage of stage_size. Otherwise uncompressed records do not fit:
                    # the batch is full. Compressed ones (the estimated compressed size is
                    # within batch.size but the stage is full): a streaming codec compresses
                    # the stage's records and starts it again; a record still too large for it
                    # (or zstd's uncompressed records) moves the stage to a larger private
                    # buffer. All on memory from the budget; without it the batch is full
                    # (sendable at once: ready() sees it, its memory soon back).
                    if not (self._capacity - self._woff < self._stage_limit
                            and self._grow(self._pos + total)):
                        if self._codec == 0:
                            return -1
                        if self._streams and not self._flush_stage(True):
                            self._appends_closed = True
                            return -1
                        if (self._pos + total > self._capacity
                                and not self._grow(self._pos + total)):
                            self._appends_closed = True
                            return -1
            elif self._pos + total > self._capacity:
                raise BufferError(
                    f"buffer too small for this record: need {RECORDS_OFFSET + total} bytes, "
                    f"have {self._capacity}"
                )
            p = self._buf + (self._pos - self._woff)
            end = p + total
            p = write_record_head(p, body, ts_delta, offset_delta, key, key_len, _nogil_bytes)
            if value_len < 0:
                p = write_varint(p, -1)
            else:
                p = copy_bytes(write_varint(p, <int32_t>value_len), value, value_len,
                               _nogil_bytes)
            if headers is None:
                p[0] = 0
            else:
                write_headers(p, end, headers)
            self._pos += total
        if offset_delta == 0:
            self._first_ts = timestamp
            self._max_ts = timestamp
        elif timestamp > self._max_ts:
            self._max_ts = timestamp
        self._count += 1
        return offset_delta

    cpdef int try_append(self, long long timestamp, object key, object value,
                         object headers=None) except -2:
        """Append a record; its offset delta (0, 1, ...), or -1 when it does not fit in
        write_limit (nothing written). key/value: bytes-like or None; headers: None or a list of
        (str, bytes-like or None) pairs."""
        cdef Py_buffer kb, vb
        cdef bint kview = False, vview = False
        cdef const unsigned char* kp = NULL
        cdef const unsigned char* vp = NULL
        cdef Py_ssize_t kl = -1, vl = -1
        if type(key) is bytes:
            kp = <const unsigned char*>PyBytes_AS_STRING(key)
            kl = PyBytes_GET_SIZE(key)
        elif key is not None:
            get_buffer(key, &kb, "key")
            kview = True
            kp = <const unsigned char*>kb.buf
            kl = kb.len
        try:
            if type(value) is bytes:
                vp = <const unsigned char*>PyBytes_AS_STRING(value)
                vl = PyBytes_GET_SIZE(value)
            elif value is not None:
                get_buffer(value, &vb, "value")
                vview = True
                vp = <const unsigned char*>vb.buf
                vl = vb.len
            return self.append_raw(timestamp, kp, kl, vp, vl, headers)
        finally:
            if kview:
                PyBuffer_Release(&kb)
            if vview:
                PyBuffer_Release(&vb)

    def has_room_for(self, long long timestamp, key, value, headers=None):
        """Java's ``hasRoomFor``: whether try_append would take this record now."""
        cdef Py_ssize_t body, total
        cdef Py_ssize_t klen = len_of(key, "key"), vlen = len_of(value, "value")
        cdef Py_ssize_t hsize = headers_size(headers)
        if self._closed or self._appends_closed:
            return False
        if self._count == 0:
            return True
        body = record_body_size(self._count, delta_from(timestamp, self._first_ts), klen, vlen,
                                hsize)
        total = record_size(body)
        return (self._estimated(self._pos - RECORDS_OFFSET) + total <= self._write_limit
                and (self._codec != 0
                     or self._pos + total <= max(self._capacity, self._stage_limit)))

    def set_producer_state(self, long long producer_id, int producer_epoch, int base_sequence,
                           bint is_transactional):
        """Producer id/epoch/base sequence and the transactional flag. After close() the header
        fields and the CRC are rewritten in place (Java's reopenAndRewriteProducerState)."""
        check_epoch(producer_epoch)
        self._producer_id = producer_id
        self._producer_epoch = <int16_t>producer_epoch
        self._base_sequence = base_sequence
        self._transactional = is_transactional
        if self._closed:
            self._write_header()

    cdef void _write_header(self) noexcept:
        cdef unsigned char* h
        cdef int16_t attributes = <int16_t>(
            self._codec | (TRANSACTIONAL_FLAG if self._transactional else 0)
        )
        cdef uint32_t crc
        cdef size_t n = <size_t>(self._size - ATTRIBUTES_OFFSET)
        if self._out is None:
            h = self._buf
        else:
            h = <unsigned char*>PyByteArray_AS_STRING(self._out)
        write_be64(h + BASE_OFFSET_OFFSET, 0)
        write_be32(h + LENGTH_OFFSET, <int32_t>(self._size - PARTITION_LEADER_EPOCH_OFFSET))
        write_be32(h + PARTITION_LEADER_EPOCH_OFFSET, -1)
        h[MAGIC_OFFSET] = MAGIC
        write_be16(h + ATTRIBUTES_OFFSET, attributes)
        write_be32(h + LAST_OFFSET_DELTA_OFFSET, self._count - 1 if self._count > 0 else 0)
        write_be64(h + BASE_TIMESTAMP_OFFSET, self._first_ts)
        write_be64(h + MAX_TIMESTAMP_OFFSET, self._max_ts)
        write_be64(h + PRODUCER_ID_OFFSET, self._producer_id)
        write_be16(h + PRODUCER_EPOCH_OFFSET, self._producer_epoch)
        write_be32(h + BASE_SEQUENCE_OFFSET, self._base_sequence)
        write_be32(h + RECORDS_COUNT_OFFSET, self._count)
        if <Py_ssize_t>n >= _nogil_bytes:
            with nogil:
                crc = crc32c_update(0, h + ATTRIBUTES_OFFSET, n)
        else:
            crc = crc32c_update(0, h + ATTRIBUTES_OFFSET, n)
        write_be32(h + CRC_OFFSET, <int32_t>crc)

    def close(self):
        """Compress the records (when a codec is set), fill the header and the CRC. Idempotent.

        The stage's last records are compressed and the stream ended; the compressed records go
        into the caller's buffer when they fit (a private stage and the compressed output are
        freed, their charge given back: a sent batch holds what Java's would, about batch.size),
        otherwise (incompressible data) they stay in a bytearray of their own, charged to the
        memory budget. An empty builder closes to a 61-byte header with no records.
        """
        cdef Py_ssize_t n, spare
        cdef Py_buffer* holder
        if self._closed:
            return
        if self._released:
            raise RuntimeError("the batch's memory was released (release_memory())")
        if self._codec != 0 and self._count > 0:
            if self._streams:
                self._end_stream()
            else:
                raw = self._mv[RECORDS_OFFSET:self._pos]
                try:
                    compressed = _compression.compress(self._codec, raw, self._level)
                finally:
                    raw.release()
                self._append_compressed(compressed)
            n = self._zlen - RECORDS_OFFSET
            holder = PyMemoryView_GET_BUFFER(self._holder_mv)
            if RECORDS_OFFSET + n <= holder.len:
                copy_bytes(<unsigned char*>holder.buf + RECORDS_OFFSET,
                           <unsigned char*>PyByteArray_AS_STRING(self._zout) + RECORDS_OFFSET, n,
                           _nogil_bytes)
                self._zout = None
                self._budget.release(self._zcharged)
                self._zcharged = 0
            else:
                # its own bytearray, exactly the batch's size and charge
                spare = PyByteArray_GET_SIZE(self._zout) - (RECORDS_OFFSET + n)
                PyByteArray_Resize(self._zout, RECORDS_OFFSET + n)
                self._budget.release(spare)
                self._zcharged -= spare
                self._out = self._zout
                self._zout = None
            self._to_holder()
            self._size = RECORDS_OFFSET + n
        else:
            self._size = self._pos
        self._closed = True
        self._write_header()

    def buffer(self):
        """The finished batch (after close()): a view, no copy."""
        if not self._closed:
            raise RuntimeError("close() the builder before taking its buffer")
        if self._released:
            raise RuntimeError("the batch's memory was released (release_memory())")
        if self._out is not None:
            return memoryview(self._out)
        return self._mv[:self._size]

    @property
    def num_records(self):
        return self._count

    @property
    def size_in_bytes(self):
        """Bytes of the batch: the final size once closed, else header + records written."""
        return self._size if self._closed else self._pos

    @property
    def estimated_size_in_bytes(self):
        """Java's estimatedSizeInBytes: the final size once closed, else header + records
        written (x compression_ratio_estimate x 1.05 with a codec)."""
        return estimated_size_of(self)

    @property
    def uncompressed_size(self):
        """Header + records as written, before compression."""
        return self._pos

    @property
    def compression_ratio(self):
        """Compressed / uncompressed size of the records section (1.0 before close)."""
        return compression_ratio_of(self)

    @property
    def write_limit(self):
        return self._write_limit

    @property
    def capacity(self):
        """Bytes of the stage, where records are written (the caller's buffer, or a larger
        private one)."""
        return self._capacity - self._woff

    cdef bint is_full_c(self) noexcept:
        return self._closed or self._appends_closed or (
            self._count > 0 and self._estimated(self._pos - RECORDS_OFFSET) >= self._write_limit
        )

    def close_for_record_appends(self):
        """Java's ``closeForRecordAppends``: full from now on, even when empty (a compressed
        batch's stream ends now; close() still finishes the batch)."""
        self.finish_appends()

    @property
    def is_full(self):
        """Java's ``isFull``: closed, or a record is in and the estimate reached the limit."""
        return self.is_full_c()

    @property
    def is_closed(self):
        return self._closed

    @property
    def compression_type(self):
        return self._codec

    @property
    def first_timestamp(self):
        return self._first_ts

    @property
    def max_timestamp(self):
        return self._max_ts

    @property
    def last_offset_delta(self):
        """Offset delta of the last record (-1 while empty)."""
        return self._count - 1

    @property
    def producer_id(self):
        return self._producer_id

    @property
    def producer_epoch(self):
        return self._producer_epoch

    @property
    def base_sequence(self):
        return self._base_sequence

    @property
    def is_transactional(self):
        return self._transactional


def set_gil_release_threshold(Py_ssize_t nbytes):
    """Copies and CRCs of at least ``nbytes`` (default 32 MiB) release the GIL; returns the
    previous value. Lower it when other threads must run during appends of very large values."""
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    global _nogil_bytes
    old = _nogil_bytes
    _nogil_bytes = nbytes
    return old
