# Sizes of a v2 record (Java's DefaultRecord.sizeInBytes and recordSizeUpperBound), inline for the
# builder's append and the producer's C send paths. Lengths < 0 are a null key or value; a
# ``headers_size`` counts the headers' bytes with their count varint (NO_HEADERS_SIZE without).
from libc.stdint cimport int32_t, int64_t, uint64_t

from cproducer.record.record_args cimport header_key_utf8, header_value_len
from cproducer.utils.byte_utils cimport uvarint_size, varint_size, varlong_size


cdef enum:
    MAX_RECORD_OVERHEAD = 21  # length varint 5 + attributes 1 + timestamp varlong 10 + offset 5
    NO_HEADERS_SIZE = 1  # a record without headers: the count varint 0
    # a record's body length is an int32 varint, and so is every key/value/header length in it
    MAX_RECORD_BODY = 0x7FFFFFFF - 5


# DefaultRecord.recordSizeUpperBound: the bound whatever the record's deltas
cdef inline Py_ssize_t record_size_upper_bound(Py_ssize_t key_len, Py_ssize_t value_len,
                                               Py_ssize_t headers_size) noexcept nogil:
    cdef Py_ssize_t size = MAX_RECORD_OVERHEAD + headers_size
    size += 1 if key_len < 0 else varint_size(<int32_t>key_len) + key_len
    size += 1 if value_len < 0 else varint_size(<int32_t>value_len) + value_len
    return size


# the bytes after a record's length varint: attributes .. headers
cdef inline Py_ssize_t record_body_size(int32_t offset_delta, int64_t timestamp_delta,
                                        Py_ssize_t key_len, Py_ssize_t value_len,
                                        Py_ssize_t headers_size) noexcept nogil:
    cdef Py_ssize_t size = 1 + varlong_size(timestamp_delta) + varint_size(offset_delta)
    size += 1 if key_len < 0 else varint_size(<int32_t>key_len) + key_len
    size += 1 if value_len < 0 else varint_size(<int32_t>value_len) + value_len
    return size + headers_size


# DefaultRecord.sizeInBytes: the body and its length varint
cdef inline Py_ssize_t record_size(Py_ssize_t body) noexcept nogil:
    return uvarint_size(<uint64_t>body << 1) + body


# a record's timestamp delta, wrapping like Java's long arithmetic (no C signed overflow)
cdef inline int64_t delta_from(int64_t timestamp, int64_t base) noexcept nogil:
    return <int64_t>(<uint64_t>timestamp - <uint64_t>base)


# the bytes ``headers`` take in a record, their count varint included; checks every header
cdef inline Py_ssize_t headers_size(object headers) except -1:
    cdef Py_ssize_t size, klen, vlen, i = 0
    if headers is None:
        return NO_HEADERS_SIZE
    if not isinstance(headers, (list, tuple)):
        raise TypeError(
            f"headers must be a list or tuple of (str, bytes or None) pairs, or None, "
            f"got {type(headers).__name__}"
        )
    size = uvarint_size(<uint64_t>len(headers) << 1)
    for header in headers:
        if not isinstance(header, (tuple, list)) or len(header) != 2:
            raise TypeError(
                f"headers[{i}] must be a (str, bytes or None) pair, got {header!r:.60}"
            )
        hkey, hvalue = header
        header_key_utf8(hkey, i, &klen)
        size += varint_size(<int32_t>klen) + klen
        vlen = header_value_len(hvalue, i)
        size += 1 if vlen < 0 else varint_size(<int32_t>vlen) + vlen
        i += 1
    return size
