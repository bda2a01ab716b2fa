# RecordBatchBuilder at C level, for other extension modules (the accumulator, send_many), and
# the RecordBatch v2 layout as named offsets (the wire schema is in record_batch_builder.pyx).
#
# append_raw(timestamp, key, key_len, value, value_len, headers): key_len/value_len -1 = null;
# returns the record's offset delta, or -1 when Java's hasRoomFor would refuse it (nothing
# written). Raises (nothing written, builder usable): RuntimeError when closed, BufferError when a
# first record does not fit the physical buffer, TypeError/ValueError for bad headers or a
# timestamp < -1.
cimport cython
from libc.stdint cimport int16_t, int32_t, int64_t

# MAX_RECORD_OVERHEAD and NO_HEADERS_SIZE are cimported from here by the C send paths
from cproducer.record.record_size cimport (
    MAX_RECORD_OVERHEAD,
    NO_HEADERS_SIZE,
    record_size_upper_bound,
)
from cproducer.utils.memory_budget cimport MemoryBudget


# RecordBatch v2 header offsets (DefaultRecordBatch)
cdef enum:
    BASE_OFFSET_OFFSET = 0
    LENGTH_OFFSET = 8
    PARTITION_LEADER_EPOCH_OFFSET = 12
    MAGIC_OFFSET = 16
    CRC_OFFSET = 17
    ATTRIBUTES_OFFSET = 21
    LAST_OFFSET_DELTA_OFFSET = 23
    BASE_TIMESTAMP_OFFSET = 27
    MAX_TIMESTAMP_OFFSET = 35
    PRODUCER_ID_OFFSET = 43
    PRODUCER_EPOCH_OFFSET = 51
    BASE_SEQUENCE_OFFSET = 53
    RECORDS_COUNT_OFFSET = 57
    RECORDS_OFFSET = 61
    MAGIC = 2
    TRANSACTIONAL_FLAG = 0x10


# Java's AbstractRecords.estimateSizeInBytesUpperBound for magic 2, the one bound every append
# path checks a record against (max.request.size, buffer.memory, a new batch's size): the batch
# overhead + DefaultRecord.recordSizeUpperBound. ``headers_size`` counts the headers' bytes with
# their count varint (NO_HEADERS_SIZE without headers); a length < 0 is a null key or value.
cdef inline Py_ssize_t size_upper_bound(Py_ssize_t key_len, Py_ssize_t value_len,
                                        Py_ssize_t headers_size) noexcept:
    return RECORDS_OFFSET + record_size_upper_bound(key_len, value_len, headers_size)


# Not tracked by the cyclic GC: nothing it holds (the caller's buffer, views of it, private
# bytearrays, the budget, a codec's stream compressor) refers back to it, so it is never part
# of a cycle. One is made per batch and lives until its answer (milliseconds: it survives the
# young collections), so tracked it drove the older ones at 1,000 partitions.
@cython.no_gc
cdef class RecordBatchBuilder:
    cdef object _holder
    # the stage: where records are written, uncompressed (the caller's buffer or a private one)
    cdef object _mv
    cdef unsigned char* _buf     # the stage's bytes
    # _pos, _capacity: logical positions, as if every record were still in the stage: _pos is the
    # header plus every record written (compressed already or not), and the record byte at _pos
    # is at _buf[_pos - _woff]
    cdef Py_ssize_t _capacity
    cdef Py_ssize_t _write_limit
    cdef Py_ssize_t _stage_limit  # stage_size: the stage grows to it before it is compressed
    cdef Py_ssize_t _pos
    cdef Py_ssize_t _woff        # records compressed already: the stage holds _pos - _woff bytes
    cdef int _codec
    cdef int64_t _first_ts
    cdef int64_t _max_ts
    cdef int32_t _count
    cdef int64_t _producer_id
    cdef int16_t _producer_epoch
    cdef int32_t _base_sequence
    cdef bint _transactional
    cdef bint _closed
    cdef bint _appends_closed
    cdef object _out
    cdef Py_ssize_t _size
    cdef double _ratio
    cdef object _level
    cdef object _holder_mv       # the view of the caller's buffer (_mv may be a private one)
    cdef MemoryBudget _budget    # where private buffers are charged (see memory_budget.pyx)
    cdef Py_ssize_t _charged     # bytes charged to _budget now
    cdef bint _released          # release_memory() was called: no buffer() any more
    # compressed as records come (every codec but zstd): the stage's records go into _zout
    # ([header space][compressed records]) whenever the stage is full, and at close()
    cdef bint _streams
    cdef object _zout            # bytearray, or None before the first block
    cdef Py_ssize_t _zlen        # bytes of _zout in use, its header space included
    cdef Py_ssize_t _zcharged    # _zout's (or a closed batch's _out's) charge to _budget
    cdef object _stream          # the codec's StreamCompressor (None: not started, or lz4 in C)
    cdef bint _lz4_c             # lz4 compressed in C (chosen at the first block)
    cdef bint _ended             # the stream is ended (no more records: _zout is complete)

    cdef Py_ssize_t _estimated(self, Py_ssize_t uncompressed) noexcept
    cdef bint _grow(self, Py_ssize_t needed) except -1
    cdef void _release_charge(self) noexcept
    cdef bint _zreserve(self, Py_ssize_t extra, bint may_refuse) except -1
    cdef bint _flush_stage(self, bint may_refuse) except -1
    cdef bint _choose_lz4_c(self) except -1
    cdef bint _goes_direct(self, Py_ssize_t value_len, Py_ssize_t rest) except -1
    cdef int _append_value_direct(self, int32_t offset_delta, int64_t ts_delta,
                                  Py_ssize_t body, Py_ssize_t total,
                                  const unsigned char* key, Py_ssize_t key_len,
                                  const unsigned char* value, Py_ssize_t value_len) except -2
    cdef int _append_compressed(self, object out) except -1
    cdef void _to_holder(self) noexcept
    cdef int _end_stream(self) except -1
    cdef int finish_appends(self) except -1
    cpdef bytes open_records(self)
    cdef int append_raw(self, int64_t timestamp, const unsigned char* key, Py_ssize_t key_len,
                        const unsigned char* value, Py_ssize_t value_len,
                        object headers) except -2
    cdef void _write_header(self) noexcept
    cdef bint is_full_c(self) noexcept
    cpdef int try_append(self, long long timestamp, object key, object value,
                         object headers=*) except -2


# The builder's estimated_size_in_bytes and compression_ratio, for the modules that read them in
# C (the accumulator's drain, the Sender's per-request metrics); the properties return these.
cdef inline Py_ssize_t estimated_size_of(RecordBatchBuilder b) noexcept:
    return b._size if b._closed else b._estimated(b._pos - RECORDS_OFFSET)


cdef inline double compression_ratio_of(RecordBatchBuilder b) noexcept:
    # compressed / uncompressed size of the records section (1.0 before close)
    if not b._closed or b._pos <= RECORDS_OFFSET:
        return 1.0
    return (b._size - RECORDS_OFFSET) / <double>(b._pos - RECORDS_OFFSET)
