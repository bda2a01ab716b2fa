# Raw writers of a v2 record's bytes (the layout is in record_batch_builder.pyx), inline for the
# builder's append. A copy of at least ``nogil_bytes`` releases the GIL: the builder's threshold.
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, int64_t
from libc.string cimport memcpy

from cproducer.record.record_args cimport header_key_utf8
from cproducer.utils.byte_utils cimport varint_size, write_varint, write_varlong


cdef inline unsigned char* copy_bytes(unsigned char* p, const void* src, Py_ssize_t n,
                                      Py_ssize_t nogil_bytes) noexcept:
    if n >= nogil_bytes:
        with nogil:
            memcpy(p, src, n)
    else:
        memcpy(p, src, n)
    return p + n


# a record from its length to its key (key_len -1: null): length, attributes, timestamp delta,
# offset delta, key length, key; returns where the value's length goes
cdef inline unsigned char* write_record_head(unsigned char* p, Py_ssize_t body,
                                             int64_t ts_delta, int32_t offset_delta,
                                             const unsigned char* key, Py_ssize_t key_len,
                                             Py_ssize_t nogil_bytes) noexcept:
    p = write_varint(p, <int32_t>body)
    p[0] = 0  # record attributes
    p = write_varlong(p + 1, ts_delta)
    p = write_varint(p, offset_delta)
    if key_len < 0:
        return write_varint(p, -1)
    return copy_bytes(write_varint(p, <int32_t>key_len), key, key_len, nogil_bytes)


cdef inline int _changed() except -1:
    raise RuntimeError("headers changed while the record was being written")


# Checked headers into exactly ``end - p`` bytes (their size was computed first): if another
# thread changed them meanwhile, RuntimeError and nothing written past ``end``.
cdef inline unsigned char* write_headers(unsigned char* p, unsigned char* end,
                                         object headers) except NULL:
    cdef Py_ssize_t klen, vlen, n, i = 0
    cdef const char* kp
    cdef Py_buffer hv
    n = len(headers)
    if end - p < varint_size(<int32_t>n):
        _changed()
    p = write_varint(p, <int32_t>n)
    for hkey, hvalue in headers:
        if i >= n:
            _changed()
        kp = header_key_utf8(hkey, i, &klen)
        if end - p < varint_size(<int32_t>klen) + klen:
            _changed()
        p = write_varint(p, <int32_t>klen)
        memcpy(p, kp, klen)
        p += klen
        if hvalue is None:
            if end - p < 1:
                _changed()
            p = write_varint(p, -1)
        elif type(hvalue) is bytes:
            vlen = PyBytes_GET_SIZE(hvalue)
            if end - p < varint_size(<int32_t>vlen) + vlen:
                _changed()
            p = write_varint(p, <int32_t>vlen)
            memcpy(p, PyBytes_AS_STRING(hvalue), vlen)
            p += vlen
        else:
            PyObject_GetBuffer(hvalue, &hv, PyBUF_SIMPLE)
            try:
                if end - p < varint_size(<int32_t>hv.len) + hv.len:
                    _changed()
                p = write_varint(p, <int32_t>hv.len)
                memcpy(p, hv.buf, hv.len)
                p += hv.len
            finally:
                PyBuffer_Release(&hv)
        i += 1
    if p != end:
        _changed()
    return p
