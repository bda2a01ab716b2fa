# cython: freethreading_compatible=True
# Free-threaded Python: no shared state: pure functions over the caller's buffer (the CPU check
# runs once, at import).
"""CRC-32C (Castagnoli) over any C-contiguous buffer, without copying it.

Kafka's RecordBatch v2 carries a CRC-32C of everything from ``attributes`` to the batch's end.
``crc32c`` uses the SSE4.2 instruction when the CPU has it (decided at import), else a
slicing-by-8 table; ``crc32c_table`` and ``crc32c_hw`` force one path (tests, benchmarks).
The GIL is released for buffers of 64 KiB and more.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport uint32_t

from cproducer.utils.crc32c cimport cp_crc32c_have_hw, cp_crc32c_hw, cp_crc32c_init, cp_crc32c_sw

cp_crc32c_init()

#: whether the hardware (SSE4.2) path is used
HAVE_HW = bool(cp_crc32c_have_hw)

cdef enum:
    _NOGIL_THRESHOLD = 65536


cdef uint32_t _run(object data, object crc, int path) except? 0xFFFFFFFF:
    cdef Py_buffer view
    cdef uint32_t out, start
    if not 0 <= crc <= 0xFFFFFFFF:
        raise ValueError(f"crc must be in 0..2**32-1, got {crc}")
    start = <uint32_t>crc
    try:
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    except BufferError:
        raise ValueError("data must be a C-contiguous buffer (pass a contiguous copy)") from None
    except TypeError:
        raise TypeError(
            "data must be a bytes-like object (bytes, bytearray, memoryview, numpy array), "
            f"got {type(data).__name__}"
        ) from None
    try:
        if view.len >= _NOGIL_THRESHOLD:
            with nogil:
                if path == 1:
                    out = cp_crc32c_hw(start, <const unsigned char*>view.buf, <size_t>view.len)
                else:
                    out = cp_crc32c_sw(start, <const unsigned char*>view.buf, <size_t>view.len)
        elif path == 1:
            out = cp_crc32c_hw(start, <const unsigned char*>view.buf, <size_t>view.len)
        else:
            out = cp_crc32c_sw(start, <const unsigned char*>view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return out


def crc32c(data, crc=0):
    """CRC-32C of ``data``, continuing ``crc`` (the result of an earlier call; 0 to start)."""
    return _run(data, crc, 1 if cp_crc32c_have_hw else 0)


def crc32c_table(data, crc=0):
    """CRC-32C on the portable slicing-by-8 path."""
    return _run(data, crc, 0)


def crc32c_hw(data, crc=0):
    """CRC-32C on the SSE4.2 path; RuntimeError when this CPU has no SSE4.2."""
    if not cp_crc32c_have_hw:
        raise RuntimeError("this CPU has no SSE4.2 crc32 instruction")
    return _run(data, crc, 1)
