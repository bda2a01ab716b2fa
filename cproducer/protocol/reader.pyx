# cython: freethreading_compatible=True
# Free-threaded Python: a Reader is used by one thread (the one decoding a response); it has no
# shared state.
"""Reader: the bounds-checked reader of Kafka protocol responses, in C.

Every response the I/O thread handles is decoded through one: a Produce answer of six partitions
is some eighty reads, each a Python method call here too, but each read is a few C statements on
the buffer instead of a memoryview slice, a ``struct`` unpack and an ``int()``. The interface is
``primitives.Reader``'s (that module re-exports this class): big-endian fixed-width integers,
varints (zigzag for signed), strings and bytes with int16/int32 lengths or, in flexible versions,
"compact" ones (an unsigned varint of length + 1, 0 = null), arrays, tagged-field sections.

Any read past the end raises ``CorruptResponseError``; so does a varint longer than ten bytes or
wider than 64 bits, a string that is not UTF-8, and an array length larger than the bytes left.
"""

from cpython.memoryview cimport PyMemoryView_GET_BUFFER
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint32_t, uint64_t

from cproducer.utils.byte_utils cimport read_be16, read_be32, read_be64

from cproducer.errors import CorruptResponseError


cdef class Reader:
    """Reads a bytes-like object (through a memoryview of it) from ``pos``."""

    cdef readonly object view
    cdef public Py_ssize_t pos
    cdef const unsigned char* _p
    cdef Py_ssize_t _n

    def __cinit__(self, data, Py_ssize_t pos=0):
        # The bytes are read through the memoryview's own buffer, which lives as long as the
        # view, held here, is not released (no decoder releases one). No export of our own: a
        # Reader in a garbage cycle with its view (a traceback's frame) would keep the GC from
        # clearing the view.
        cdef Py_buffer* b
        view = data if isinstance(data, memoryview) else memoryview(data)
        if not view.c_contiguous:
            raise BufferError("a Reader needs a contiguous buffer")
        self.view = view if view.format == "B" and view.ndim == 1 else view.cast("B")
        b = PyMemoryView_GET_BUFFER(self.view)
        self._p = <const unsigned char*>b.buf
        self._n = b.len
        self.pos = pos

    cdef inline int _need(self, Py_ssize_t n) except -1:
        if n < 0 or self.pos < 0 or n > self._n - self.pos:
            raise CorruptResponseError(
                f"truncated response: needed {n} bytes at offset {self.pos}, "
                f"{self._n - self.pos} left"
            )
        return 0

    cdef uint64_t _uvarint(self) except? 0xFFFFFFFFFFFFFFFF:
        cdef uint64_t result = 0, b
        cdef int shift = 0
        while True:
            self._need(1)
            b = self._p[self.pos]
            self.pos += 1
            if shift == 63 and (b & 0x7E):
                raise CorruptResponseError("varint is too long")
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise CorruptResponseError("varint is too long")

    cdef Py_ssize_t _length(self, bint compact, bint wide) except? -2:
        # a length prefix: compact (uvarint of length + 1, 0 = null), else int32 (wide) or int16;
        # -1 for null
        cdef uint64_t u
        cdef Py_ssize_t start = self.pos
        if compact:
            u = self._uvarint()
            if u > <uint64_t>0x7FFFFFFFFFFFFFFF:
                self.pos = start
                raise CorruptResponseError(f"length {u - 1} cannot fit in this response")
            return <Py_ssize_t>u - 1
        if wide:
            self._need(4)
            self.pos += 4
            return read_be32(self._p + self.pos - 4)
        self._need(2)
        self.pos += 2
        return read_be16(self._p + self.pos - 2)

    def _take(self, Py_ssize_t n):
        self._need(n)
        out = self.view[self.pos:self.pos + n]
        self.pos += n
        return out

    def remaining(self):
        return self._n - self.pos

    def int8(self):
        self._need(1)
        self.pos += 1
        return <signed char>self._p[self.pos - 1]

    def boolean(self):
        self._need(1)
        self.pos += 1
        return self._p[self.pos - 1] != 0

    def int16(self):
        return self._length(False, False)

    def int32(self):
        return self._length(False, True)

    def uint32(self):
        self._need(4)
        self.pos += 4
        return <uint32_t>read_be32(self._p + self.pos - 4)

    def int64(self):
        self._need(8)
        self.pos += 8
        return read_be64(self._p + self.pos - 8)

    def uvarint(self):
        return self._uvarint()

    def varint(self):
        cdef uint64_t v = self._uvarint()
        return <int64_t>(v >> 1) ^ -<int64_t>(v & 1)

    cdef Py_ssize_t _sized(self, bint compact, bint wide) except? -2:
        # the length of a string or bytes field, its bytes checked to be there (-1: null); a
        # field cut short leaves pos at its start
        cdef Py_ssize_t start = self.pos
        cdef Py_ssize_t n = self._length(compact, wide)
        if n > 0:
            try:
                self._need(n)
            except CorruptResponseError:
                self.pos = start
                raise
        return n

    def string(self, bint compact=False):
        cdef Py_ssize_t start = self.pos
        cdef Py_ssize_t n = self._sized(compact, False)
        if n < 0:
            return None
        try:
            out = PyUnicode_DecodeUTF8(<const char*>(self._p + self.pos), n, NULL)
        except UnicodeDecodeError as exc:
            self.pos = start
            raise CorruptResponseError(f"string is not UTF-8: {exc}") from None
        self.pos += n
        return out

    def bytes_(self, bint compact=False):
        cdef Py_ssize_t n = self._sized(compact, True)
        if n < 0:
            return None
        self.pos += n
        return PyBytes_FromStringAndSize(<const char*>(self._p + self.pos - n), n)

    def array_length(self, bint compact=False):
        cdef Py_ssize_t n = self._length(compact, True)
        if n > self._n - self.pos:
            raise CorruptResponseError(
                f"array of {n} items cannot fit in {self._n - self.pos} bytes"
            )
        return n

    def array(self, read, bint compact=False):
        cdef Py_ssize_t n = self.array_length(compact)
        if n < 0:
            return None
        return [read(self) for _ in range(n)]

    cdef Py_ssize_t _tagged_size(self) except -1:
        # a tagged field's size, its bytes checked to be there
        cdef uint64_t size = self._uvarint()
        self._need(<Py_ssize_t>size if size <= <uint64_t>0x7FFFFFFFFFFFFFFF else -1)
        return <Py_ssize_t>size

    def tagged_fields(self):
        cdef uint64_t _i, count = self._uvarint()
        for _i in range(count):
            self._uvarint()  # tag
            self.pos += self._tagged_size()  # unknown tagged data: skipped

    def tagged_field_items(self):
        """A tagged-fields section as ``[(tag, data)]``, for the codecs that read some tags."""
        cdef uint64_t _i, count = self._uvarint()
        cdef uint64_t tag
        cdef Py_ssize_t size
        out = []
        for _i in range(count):
            tag = self._uvarint()
            size = self._tagged_size()
            out.append((tag, self.view[self.pos:self.pos + size]))
            self.pos += size
        return out

    def uuid(self):
        self._need(16)
        self.pos += 16
        return PyBytes_FromStringAndSize(<const char*>(self._p + self.pos - 16), 16)
