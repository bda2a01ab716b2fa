# RecordBatchBuilder at C level, for other extension modules (the accumulator, send_many).
# Keep the field and method order: modules built against this file index the object layout and
# the method table directly (add new members only at the end, then rebuild the cimporting modules).
#
# append_raw(timestamp, key, key_len, value, value_len, headers): key_len/value_len -1 = null;
# returns the record's offset delta, or -1 when Java's hasRoomFor would refuse it (nothing
# written). Raises (nothing written, builder usable): RuntimeError when closed, BufferError when a
# first record does not fit the physical buffer, TypeError/ValueError for bad headers or a
# timestamp < -1.
from libc.stdint cimport int16_t, int32_t, int64_t


cdef class RecordBatchBuilder:
    cdef object _holder
    cdef object _mv
    cdef unsigned char* _buf
    cdef Py_ssize_t _capacity
    cdef Py_ssize_t _write_limit
    cdef Py_ssize_t _pos
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

    cdef Py_ssize_t _estimated(self, Py_ssize_t uncompressed) noexcept
    cdef void _grow(self, Py_ssize_t needed) except *
    cdef int append_raw(self, int64_t timestamp, const unsigned char* key, Py_ssize_t key_len,
                        const unsigned char* value, Py_ssize_t value_len,
                        object headers) except -2
    cdef void _write_header(self) noexcept
    cdef bint is_full_c(self) noexcept
    cpdef int try_append(self, long long timestamp, object key, object value,
                         object headers=*) except -2
