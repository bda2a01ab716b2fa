# cython: freethreading_compatible=True
# Free-threaded Python: safe without the GIL, as reader.pyx: a Writer is filled by one thread and
# the module keeps no mutable state.
"""Writer: the growable buffer that Kafka protocol requests are encoded into, in C.

Every request the I/O thread sends is written through one: a Produce request of six partitions is
some forty writes, each a Python method call here too, but each write is a few C statements on one
buffer instead of a ``struct`` pack and a ``bytearray`` concatenation. The interface is the one
``primitives`` exports (it re-exports this class): big-endian fixed-width integers, varints
(unsigned, and zigzag for signed), strings and bytes with int16/int32 length prefixes or, in
flexible versions, "compact" ones (an unsigned varint of length + 1, 0 = null), arrays,
tagged-field sections (always empty: the client sends no tagged fields), UUIDs.

Wire notes:

- an unsigned varint is 7 bits a byte, least significant group first, the high bit set on every
  byte but the last (2**64 - 1 is ten bytes); a signed one is zigzag-encoded first
  (``(v << 1) ^ (v >> 63)``: 0, -1, 1, -2 ... become 0, 1, 2, 3 ...);
- a null string is an int16 -1 (compact: 0), null bytes and null arrays an int32 -1 (compact: 0);
- a string's length is in UTF-8 bytes, at most 32767 in a non-compact string.

Bad input raises ``ValueError`` for a negative unsigned varint or a None non-nullable string, and
``struct.error`` with ``struct``'s own message for an integer out of its field's range or not an
integer (``struct`` is asked to pack it: the errors are the ones a ``struct``-based writer gives).
Values outside the C fast paths (an unsigned varint above 2**64 - 1, a signed one beyond 64 bits,
an object with ``__index__``) take a general path, on Python objects, and give the same bytes.

The buffer is the Writer's own (asyncpg's WriteBuffer idea): a small one inside the object,
moved to the heap and doubled when it fills. ``buf`` and ``getvalue()`` are copies of it, so a
caller's bytearray never aliases a buffer that a later write moves.

A bytes field can also be left out of the buffer (``bytes_part``): its length prefix is written
and the object itself becomes a part of its own in ``parts()``, which is how a Produce request
carries its record batches to the socket's gather write without copying them. ``request_frame``
turns a header and such parts into the frame the network layer queues.
"""

cimport cython
from cpython.buffer cimport PyBUF_RECORDS_RO, PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport (
    PyByteArray_AS_STRING,
    PyByteArray_CheckExact,
    PyByteArray_FromStringAndSize,
    PyByteArray_GET_SIZE,
)
from cpython.bytes cimport (
    PyBytes_AS_STRING,
    PyBytes_CheckExact,
    PyBytes_FromStringAndSize,
    PyBytes_GET_SIZE,
)
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_AsUnsignedLongLong, PyLong_Check
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.memoryview cimport PyMemoryView_FromObject, PyMemoryView_GET_BUFFER
from cpython.number cimport PyNumber_Index
from cpython.object cimport Py_TYPE
from cpython.pyport cimport PY_SSIZE_T_MAX
from cpython.unicode cimport PyUnicode_AsUTF8AndSize, PyUnicode_CheckExact
from libc.stdint cimport INT32_MAX, int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.limits cimport LLONG_MAX, LLONG_MIN
from libc.string cimport memcpy, memset

from cproducer.utils.byte_utils cimport write_be16, write_be32, write_be64, write_uvarint

import struct

# Only to raise: a value a fast path refuses is handed to ``struct``, which raises its own error
# for it (the exact one the Python writer raised) or accepts it (an object with ``__index__``).
_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")

cdef enum:
    # the buffer inside the object: a request header or a small request body fits, and the
    # object stays small enough for Python's small-object allocator
    SMALL_BUFFER = 256


cdef long long _as_int(object v, long long lo, long long hi, object fmt) except? -1:
    # v as a C integer in [lo, hi], else the error ``fmt.pack(v)`` raises
    cdef int overflow = 0
    cdef long long x
    if not PyLong_Check(v):
        fmt.pack(v)  # raises unless v has __index__
        v = PyNumber_Index(v)
    x = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow or x < lo or x > hi:
        fmt.pack(v)  # raises: out of range
        raise AssertionError(f"{fmt.format} accepted {v!r}")
    return x


cdef inline bint _is_byte_view(const Py_buffer* b) noexcept:
    # a 1-D, contiguous view of unsigned bytes: what a gather write and the send loop's
    # ``nbytes`` / slicing take as they are
    return (
        b.ndim == 1
        and b.itemsize == 1
        and b.format != NULL
        and b.format[0] == b'B'
        and b.format[1] == 0
        and (b.strides == NULL or b.strides[0] == 1)
    )


cdef Py_ssize_t _nbytes(object data) except -1:
    # what ``memoryview(data).nbytes`` is (and raises), without the view for the usual types
    cdef Py_buffer b
    cdef Py_ssize_t n
    if PyBytes_CheckExact(data):
        return PyBytes_GET_SIZE(data)
    if PyByteArray_CheckExact(data):
        return PyByteArray_GET_SIZE(data)
    if type(data) is memoryview:
        # the buffer asked for, not read off the view: a released view raises
        PyObject_GetBuffer(data, &b, PyBUF_RECORDS_RO)
        n = b.len
        PyBuffer_Release(&b)
        return n
    return memoryview(data).nbytes


@cython.final
cdef class Writer:
    """A growable byte buffer with typed writes; every write returns the Writer (chaining)."""

    cdef unsigned char* _buf
    cdef Py_ssize_t _length
    cdef Py_ssize_t _size
    # bytes_part: where the written bytes are cut, each cut's object after it
    cdef list _parts
    cdef unsigned char _small[SMALL_BUFFER]

    def __cinit__(self):
        self._buf = self._small
        self._size = SMALL_BUFFER
        self._length = 0

    def __dealloc__(self):
        if self._buf != self._small:
            PyMem_Free(self._buf)

    # ------------------------------------------------------------------ the buffer

    cdef inline int _reserve(self, Py_ssize_t n) except -1:
        if n > self._size - self._length:
            self._grow(n)
        return 0

    cdef int _grow(self, Py_ssize_t n) except -1:
        cdef Py_ssize_t need, size
        cdef unsigned char* p
        if n > PY_SSIZE_T_MAX - self._length:
            raise MemoryError()
        need = self._length + n
        size = self._size * 2 if self._size <= PY_SSIZE_T_MAX // 2 else need
        if size < need:
            size = need
        if self._buf == self._small:
            p = <unsigned char*>PyMem_Malloc(size)
            if p == NULL:
                raise MemoryError()
            memcpy(p, self._buf, self._length)
        else:
            p = <unsigned char*>PyMem_Realloc(self._buf, size)
            if p == NULL:
                raise MemoryError()
        self._buf = p
        self._size = size
        return 0

    cdef inline int _put(self, const void* data, Py_ssize_t n) except -1:
        self._reserve(n)
        memcpy(self._buf + self._length, data, n)
        self._length += n
        return 0

    cdef inline int _put_u8(self, unsigned char v) except -1:
        self._reserve(1)
        self._buf[self._length] = v
        self._length += 1
        return 0

    cdef inline int _put_be16(self, int16_t v) except -1:
        self._reserve(2)
        write_be16(self._buf + self._length, v)
        self._length += 2
        return 0

    cdef inline int _put_be32(self, int32_t v) except -1:
        self._reserve(4)
        write_be32(self._buf + self._length, v)
        self._length += 4
        return 0

    cdef inline int _put_uvarint(self, uint64_t v) except -1:
        self._reserve(10)
        self._length = write_uvarint(self._buf + self._length, v) - self._buf
        return 0

    cdef int _put_raw(self, object data) except -1:
        # ``bytearray += data``: any contiguous buffer
        cdef Py_buffer b
        if PyBytes_CheckExact(data):
            return self._put(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
        if PyByteArray_CheckExact(data):
            return self._put(PyByteArray_AS_STRING(data), PyByteArray_GET_SIZE(data))
        try:
            PyObject_GetBuffer(data, &b, PyBUF_SIMPLE)
        except Exception:
            name = Py_TYPE(data).tp_name.decode("utf-8", "replace")
            raise TypeError(f"can't concat {name} to bytearray") from None
        try:
            self._put(b.buf, b.len)
        finally:
            PyBuffer_Release(&b)
        return 0

    # ------------------------------------------------------------------ varints

    cdef int _put_uvarint_obj(self, object v) except -1:
        cdef int overflow = 0
        cdef long long x
        if PyLong_Check(v):
            x = PyLong_AsLongLongAndOverflow(v, &overflow)
            if overflow == 0:
                if x < 0:
                    raise ValueError("unsigned varint must be >= 0")
                return self._put_uvarint(<uint64_t>x)
            if overflow < 0:
                raise ValueError("unsigned varint must be >= 0")
            if v <= 0xFFFFFFFFFFFFFFFF:
                return self._put_uvarint(PyLong_AsUnsignedLongLong(v))
        # the general rule, on Python objects: an int of any size (more than ten bytes on the
        # wire above 2**64 - 1), or an object that compares and shifts like one
        if v < 0:
            raise ValueError("unsigned varint must be >= 0")
        while v >= 0x80:
            self._put_byte_obj((v & 0x7F) | 0x80)
            v >>= 7
        self._put_byte_obj(v)
        return 0

    cdef int _put_byte_obj(self, object v) except -1:
        # ``bytearray.append(v)``
        v = PyNumber_Index(v)
        if v < 0 or v > 255:
            raise ValueError("byte must be in range(0, 256)")
        return self._put_u8(<unsigned char>v)

    cdef int _put_length(self, object n, bint compact, bint wide) except -1:
        # a length prefix: None = null; compact: uvarint of n + 1; else int32 (wide) or int16
        cdef int overflow = 0
        cdef long long x
        if n is None:
            if compact:
                return self._put_u8(0)
            return self._put_be32(-1) if wide else self._put_be16(-1)
        if not compact:
            if wide:
                return self._put_be32(<int32_t>_as_int(n, -2147483648, 2147483647, _I32))
            return self._put_be16(<int16_t>_as_int(n, -32768, 32767, _I16))
        if PyLong_Check(n):
            x = PyLong_AsLongLongAndOverflow(n, &overflow)
            if overflow == 0 and x >= -1:
                return self._put_uvarint(<uint64_t>(x + 1))
        return self._put_uvarint_obj(n + 1)

    cdef int _put_size(self, Py_ssize_t n, bint compact, bint wide) except -1:
        # the length prefix of n bytes
        if compact:
            return self._put_uvarint(<uint64_t>n + 1)
        if wide:
            if n > INT32_MAX:
                _I32.pack(n)  # raises
            return self._put_be32(<int32_t>n)
        if n > 32767:
            _I16.pack(n)  # raises
        return self._put_be16(<int16_t>n)

    # ------------------------------------------------------------------ the typed writes

    def int8(self, v):
        self._put_u8(<unsigned char><signed char>_as_int(v, -128, 127, _I8))
        return self

    def boolean(self, bint v):
        self._put_u8(1 if v else 0)
        return self

    def int16(self, v):
        self._put_be16(<int16_t>_as_int(v, -32768, 32767, _I16))
        return self

    def int32(self, v):
        self._put_be32(<int32_t>_as_int(v, -2147483648, 2147483647, _I32))
        return self

    def uint32(self, v):
        self._put_be32(<int32_t><uint32_t>_as_int(v, 0, 4294967295, _U32))
        return self

    def int64(self, v):
        cdef int64_t x = <int64_t>_as_int(v, LLONG_MIN, LLONG_MAX, _I64)
        self._reserve(8)
        write_be64(self._buf + self._length, x)
        self._length += 8
        return self

    def uvarint(self, v):
        self._put_uvarint_obj(v)
        return self

    def varint(self, v):
        cdef int overflow = 0
        cdef long long x
        if PyLong_Check(v):
            x = PyLong_AsLongLongAndOverflow(v, &overflow)
            if overflow == 0:
                self._put_uvarint((<uint64_t>x << 1) ^ <uint64_t>(x >> 63))
                return self
        # beyond 64 bits: the zigzag rule on Python ints (a negative result is refused)
        self._put_uvarint_obj((v << 1) ^ (v >> 63) if v < 0 else v << 1)
        return self

    def raw(self, data):
        self._put_raw(data)
        return self

    def string(self, s, bint compact=False, bint nullable=False):
        cdef const char* p
        cdef Py_ssize_t n
        if s is None:
            if not nullable:
                raise ValueError("a non-nullable string is None")
            self._put_length(None, compact, False)
            return self
        if PyUnicode_CheckExact(s):
            # the str's own UTF-8 (for ASCII, its characters): no bytes object
            p = PyUnicode_AsUTF8AndSize(s, &n)
            self._put_size(n, compact, False)
            self._put(p, n)
            return self
        data = s.encode("utf-8")
        self._put_size(len(data), compact, False)
        self._put_raw(data)
        return self

    def bytes_(self, data, bint compact=False):
        if data is None:
            self._put_length(None, compact, True)
            return self
        self._put_size(_nbytes(data), compact, True)
        self._put_raw(data)
        return self

    def bytes_length(self, n, bint compact=False):
        """Only the length prefix of a bytes field (its content goes out as a separate part)."""
        self._put_length(n, compact, True)
        return self

    def bytes_part(self, data, bint compact=False):
        """A bytes field whose content is not copied: the length prefix is written, and the
        content (unless None or empty) becomes a part of its own in ``parts()``, between the
        bytes written before and after it. ``buf`` and ``getvalue()`` hold only written bytes."""
        cdef Py_ssize_t n
        if data is None:
            self._put_length(None, compact, True)
            return self
        n = _nbytes(data)
        self._put_size(n, compact, True)
        if n:
            if self._parts is None:
                self._parts = []
            self._parts.append(self._length)  # where the written bytes are cut
            self._parts.append(data)
        return self

    def array_length(self, n, bint compact=False):
        self._put_length(n, compact, True)
        return self

    def array(self, items, write, bint compact=False):
        self._put_length(None if items is None else len(items), compact, True)
        for item in items or ():
            write(self, item)
        return self

    def tagged_fields(self):
        self._put_u8(0)  # no tagged fields
        return self

    def uuid(self, value):
        if value is None:
            self._reserve(16)
            memset(self._buf + self._length, 0, 16)
            self._length += 16
        else:
            self._put_raw(value)
        return self

    # ------------------------------------------------------------------ the result

    @property
    def buf(self):
        """The bytes written so far, as a new bytearray."""
        return PyByteArray_FromStringAndSize(<char*>self._buf, self._length)

    def getvalue(self):
        return PyBytes_FromStringAndSize(<char*>self._buf, self._length)

    def parts(self):
        """The encoding as a list of parts: the written bytes (as bytes, cut where a
        ``bytes_part`` object goes), with each such object between them (``[getvalue()]`` when
        there is none)."""
        cdef Py_ssize_t i, start = 0, end
        cdef char* p = <char*>self._buf
        if self._parts is None:
            return [PyBytes_FromStringAndSize(p, self._length)]
        out = []
        for i in range(0, len(self._parts), 2):
            end = self._parts[i]
            out.append(PyBytes_FromStringAndSize(p + start, end - start))
            out.append(self._parts[i + 1])
            start = end
        out.append(PyBytes_FromStringAndSize(p + start, self._length - start))
        return out


cdef object _byte_view(object part, Py_ssize_t* nbytes):
    # ``memoryview(part).cast("B")`` (and its errors), without a new view for a part that is one
    # already (a record batch)
    cdef Py_buffer b
    cdef bint ok
    if type(part) is memoryview:
        # the buffer asked for, not read off the view: a released view raises
        PyObject_GetBuffer(part, &b, PyBUF_RECORDS_RO)
        ok = _is_byte_view(&b)
        nbytes[0] = b.len
        PyBuffer_Release(&b)
        if ok:
            return part
        view = part.cast("B")
    else:
        view = PyMemoryView_FromObject(part)
        if not (PyBytes_CheckExact(part) or PyByteArray_CheckExact(part)) and not _is_byte_view(
            PyMemoryView_GET_BUFFER(view)
        ):
            view = view.cast("B")
    nbytes[0] = PyMemoryView_GET_BUFFER(view).len
    return view


def request_frame(Writer header, list body):
    """A request frame as ``(parts, size)``: the int32 size, the header and the body's first part
    copied into the first part, then the body's other parts, uncopied, each as a 1-D byte
    memoryview (a part that is one already is passed on as it is); ``size`` counts every byte,
    the size prefix too. Empty parts are left out: there is nothing to write in them, and a send
    loop that goes part by part could wait on one forever (a write of nothing is no progress)."""
    cdef Py_ssize_t i, n, rest = 0, first_len
    cdef Py_buffer b0
    cdef unsigned char* p
    cdef bint has_first = len(body) > 0
    if header._parts is not None:
        raise ValueError("a request header has no separate parts")
    out = [None]
    for i in range(1, len(body)):
        view = _byte_view(body[i], &n)
        if n:
            out.append(view)
            rest += n
    if has_first:
        PyObject_GetBuffer(body[0], &b0, PyBUF_SIMPLE)
    else:
        b0.buf = NULL
        b0.len = 0
    try:
        first_len = 4 + header._length + b0.len
        if rest > INT32_MAX - (first_len - 4):
            _I32.pack(first_len - 4 + rest)  # raises
        first = PyBytes_FromStringAndSize(NULL, first_len)
        p = <unsigned char*>PyBytes_AS_STRING(first)
        write_be32(p, <int32_t>(first_len - 4 + rest))
        memcpy(p + 4, header._buf, header._length)
        if b0.len:
            memcpy(p + 4 + header._length, b0.buf, b0.len)
    finally:
        if has_first:
            PyBuffer_Release(&b0)
    out[0] = PyMemoryView_FromObject(first)
    return out, first_len + rest
