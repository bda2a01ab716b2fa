# cython: freethreading_compatible=True
# Free-threaded Python: no shared state: pure functions over the caller's keys.
"""Java's murmur2 and the keyed partition choice, one key or many in one call.

``partition_for_key(key, n)`` is ``toPositive(murmur2(key)) % n``: the partition the Java client
(and librdkafka's ``murmur2_random``) picks for a keyed record. The vector forms return a numpy
int32 array (-1 for a null key): a list/tuple of bytes-like, a numpy object or fixed-width ``S``
array, a pyarrow binary/string array, or Arrow-style ``(values buffer, offsets)``.
"""

import numpy as np

cimport numpy as cnp
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int32_t, int64_t, uint8_t


from cproducer.utils.murmur2 cimport murmur2_hash, murmur2_partition

cnp.import_array()


cdef inline void _check_n(int num_partitions) except *:
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be > 0, got {num_partitions}")


def murmur2(key):
    """Java's ``Utils.murmur2(key)``: a signed 32-bit int."""
    cdef const unsigned char[::1] view
    if isinstance(key, bytes):
        return murmur2_hash(<const unsigned char*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))
    try:
        view = memoryview(key).cast("B")
    except TypeError:
        raise TypeError(f"key must be bytes-like, got {type(key).__name__}") from None
    if view.shape[0] == 0:
        return murmur2_hash(NULL, 0)
    return murmur2_hash(&view[0], view.shape[0])


def to_positive(n):
    """Java's ``Utils.toPositive``: ``n & 0x7fffffff``."""
    return n & 0x7FFFFFFF


def partition_for_key(key, int num_partitions):
    """``toPositive(murmur2(key)) % num_partitions``."""
    _check_n(num_partitions)
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


cdef int32_t _partition_of_object(object key, int32_t n, Py_ssize_t index) except -2:
    cdef Py_buffer view
    cdef int32_t out
    if key is None:
        return -1
    if type(key) is bytes:
        return murmur2_partition(<const unsigned char*>PyBytes_AS_STRING(key),
                                 PyBytes_GET_SIZE(key), n)
    try:
        PyObject_GetBuffer(key, &view, PyBUF_SIMPLE)
    except (TypeError, BufferError):
        raise TypeError(
            f"keys[{index}] must be bytes-like or None, got {type(key).__name__}"
        ) from None
    out = murmur2_partition(<const unsigned char*>view.buf, view.len, n)
    PyBuffer_Release(&view)
    return out


def _from_sequence(keys, int32_t n):
    cdef Py_ssize_t i, count = len(keys)
    cdef cnp.ndarray[int32_t, ndim=1] out = np.empty(count, dtype=np.int32)
    for i in range(count):
        out[i] = _partition_of_object(keys[i], n, i)
    return out


def _from_fixed_width(cnp.ndarray arr, int32_t n):
    """numpy ``S`` array: items end at their first trailing NUL, as numpy returns them."""
    cdef cnp.ndarray contiguous = np.ascontiguousarray(arr)
    cdef const uint8_t[::1] data = contiguous.view(np.uint8).reshape(-1)
    cdef Py_ssize_t width = arr.dtype.itemsize, count = arr.shape[0], i, ln
    cdef cnp.ndarray[int32_t, ndim=1] out = np.empty(count, dtype=np.int32)
    cdef const unsigned char* base
    if width == 0:
        out[:] = murmur2_partition(NULL, 0, n)
        return out
    base = &data[0]
    with nogil:
        for i in range(count):
            ln = width
            while ln > 0 and base[i * width + ln - 1] == 0:
                ln -= 1
            out[i] = murmur2_partition(base + i * width, ln, n)
    return out


def partitions_for_buffer(values, offsets, int num_partitions, validity=None, Py_ssize_t offset=0):
    """Arrow-style keys: ``values`` (any buffer) + ``offsets`` (int32 or int64, length n+1), an
    optional Arrow validity bitmap (null -> -1) and an element ``offset`` into the bitmap."""
    _check_n(num_partitions)
    cdef const uint8_t[::1] data
    cdef const uint8_t[::1] bits
    cdef const int64_t[::1] off64
    cdef const int32_t[::1] off32
    cdef Py_ssize_t count, i, nbytes
    cdef int32_t n = num_partitions
    cdef bint wide, has_validity = validity is not None
    cdef const unsigned char* base
    cdef int64_t lo, hi
    offs = np.asarray(offsets)
    if offs.ndim != 1 or offs.shape[0] < 1 or offs.dtype not in (np.int32, np.int64):
        raise TypeError("offsets must be a 1-d int32 or int64 array of length n+1")
    wide = offs.dtype == np.int64
    count = offs.shape[0] - 1
    data = memoryview(values).cast("B") if len(memoryview(values)) else b"\0"
    nbytes = len(memoryview(values).cast("B"))
    if wide:
        off64 = np.ascontiguousarray(offs)
    else:
        off32 = np.ascontiguousarray(offs)
    if has_validity:
        bits = memoryview(validity).cast("B")
    cdef cnp.ndarray[int32_t, ndim=1] out = np.empty(count, dtype=np.int32)
    base = &data[0]
    with nogil:
        for i in range(count):
            if has_validity and not (bits[(i + offset) >> 3] >> ((i + offset) & 7)) & 1:
                out[i] = -1
                continue
            if wide:
                lo = off64[i]
                hi = off64[i + 1]
            else:
                lo = off32[i]
                hi = off32[i + 1]
            if lo < 0 or hi < lo or hi > nbytes:
                with gil:
                    raise ValueError(
                        f"offsets[{i}..{i + 1}] = {lo}..{hi} outside the values buffer"
                    )
            out[i] = murmur2_partition(base + lo, <size_t>(hi - lo), n)
    return out


def partitions_for_keys(keys, int num_partitions):
    """Partitions of many keys in one call (numpy int32, -1 for None/null keys)."""
    _check_n(num_partitions)
    if isinstance(keys, (list, tuple)):
        return _from_sequence(keys, num_partitions)
    if isinstance(keys, np.ndarray):
        if keys.ndim != 1:
            raise TypeError(f"keys must be 1-d, got {keys.ndim} dimensions")
        if keys.dtype.kind == "S":
            return _from_fixed_width(keys, num_partitions)
        if keys.dtype == object:
            return _from_sequence(keys, num_partitions)
        raise TypeError(f"keys: numpy arrays must be of object or S dtype, got {keys.dtype}")
    arrow = _arrow_buffers(keys)
    if arrow is not None:
        validity, offsets, data, offset = arrow
        return partitions_for_buffer(data, offsets, num_partitions, validity, offset)
    raise TypeError(
        "keys must be a list/tuple of bytes, a numpy object or S array, or a pyarrow "
        f"binary/string array; got {type(keys).__name__}"
    )


def _arrow_buffers(arr):
    """(validity or None, offsets ndarray sliced to the array, data buffer, bit offset) of a
    pyarrow binary/string/large_binary/large_string Array (or ChunkedArray of one chunk)."""
    mod = type(arr).__module__
    if not mod.startswith("pyarrow"):
        return None
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    t = arr.type
    if pa.types.is_binary(t) or pa.types.is_string(t):
        odt = np.int32
    elif pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        odt = np.int64
    else:
        raise TypeError(f"pyarrow arrays must be binary or string typed, got {t}")
    validity, offsets_buf, data = arr.buffers()[:3]
    offsets = np.frombuffer(offsets_buf, dtype=odt)[arr.offset : arr.offset + len(arr) + 1]
    if data is None:
        data = b""
    if arr.null_count == 0:
        validity = None
    return validity, offsets, data, arr.offset
