# Checks of a record's fields as given from Python (key, value, headers, timestamp, epoch): each
# raises TypeError/ValueError naming the bad argument. Inline for the builder's append.
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdint cimport int64_t


cdef inline int get_buffer(object obj, Py_buffer* view, str what) except -1:
    try:
        PyObject_GetBuffer(obj, view, PyBUF_SIMPLE)
    except TypeError:
        raise TypeError(f"{what} must be bytes-like or None, got {type(obj).__name__}") from None
    except BufferError as exc:
        raise TypeError(
            f"{what} must be bytes-like (a C-contiguous buffer) or None, got "
            f"{type(obj).__name__} ({exc})"
        ) from None
    return 0


# the length of a key/value (-1 for None)
cdef inline Py_ssize_t len_of(object obj, str what) except -2:
    cdef Py_buffer b
    cdef Py_ssize_t n
    if obj is None:
        return -1
    if type(obj) is bytes:
        return PyBytes_GET_SIZE(obj)
    get_buffer(obj, &b, what)
    n = b.len
    PyBuffer_Release(&b)
    return n


# the length of headers[i]'s value (-1 for None)
cdef inline Py_ssize_t header_value_len(object hvalue, Py_ssize_t i) except -2:
    cdef Py_buffer hv
    cdef Py_ssize_t n
    if hvalue is None:
        return -1
    if type(hvalue) is bytes:
        return PyBytes_GET_SIZE(hvalue)
    try:
        PyObject_GetBuffer(hvalue, &hv, PyBUF_SIMPLE)
    except (TypeError, BufferError) as exc:
        raise TypeError(
            f"headers[{i}][1] (value) must be bytes-like (a C-contiguous buffer) or None, "
            f"got {type(hvalue).__name__}"
            + ("" if isinstance(exc, TypeError) else f" ({exc})")
        ) from None
    n = hv.len
    PyBuffer_Release(&hv)
    return n


# headers[i]'s key as UTF-8 (its length in klen)
cdef inline const char* header_key_utf8(object hkey, Py_ssize_t i,
                                        Py_ssize_t* klen) except NULL:
    if not isinstance(hkey, str):
        raise TypeError(f"headers[{i}][0] (key) must be str, got {type(hkey).__name__}")
    try:
        return PyUnicode_AsUTF8AndSize(hkey, klen)
    except UnicodeEncodeError as exc:
        raise ValueError(f"headers[{i}][0] (key) cannot be encoded as UTF-8: {exc}") from None


cdef inline int check_timestamp(int64_t timestamp) except -1:
    if timestamp < 0 and timestamp != -1:
        raise ValueError(
            f"timestamp must be >= 0 (ms since the epoch) or -1 (none), got {timestamp}"
        )
    return 0


cdef inline int check_epoch(int producer_epoch) except -1:
    if producer_epoch < -32768 or producer_epoch > 32767:
        raise ValueError(f"producer_epoch must fit in an int16, got {producer_epoch}")
    return 0
