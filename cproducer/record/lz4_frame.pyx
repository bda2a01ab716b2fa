# cython: freethreading_compatible=True
# Free-threaded Python: the module's globals are the lz4 functions (looked up once, then only
# read) and, in GIL builds only (CP_GIL_GUARDS_GLOBALS), one shared compressor state with its
# ``compressible`` flag; a free-threaded build makes a state per call.
"""Default-level lz4 for the record batch builder: blocks compressed in C into Java's frame.

The lz4 library's ``LZ4_compress_fast_extState`` is reached in the lz4 package's extension
(``compression.lz4_block_compress_address``) and called block by block into the layout
``lz4_frame.pxd`` describes: no Python call and no allocation per block. The GIL stays held for a
stage (microseconds of work: releasing it would let another thread keep it for a switch interval).

With the GIL, one compressor state serves every builder, so blocks after the first skip the
state's reset (the library's ``_fastReset`` variant). That variant still clears the state's hash
table before every block of LZ4_GAP_RESET_MIN or more; such a block goes through
``LZ4_resetStream_fast`` + ``LZ4_compress_fast_continue`` instead, which leave the table alone yet
make the block independent (as Java's reader requires), but only while the previous large block
shrank to half or less: on bytes lz4 hardly shrinks that path compresses worse.

Where the functions cannot be reached, or check wrong once against the library's decoder,
``lz4_in_c()`` is False and the builder uses the codec's StreamCompressor.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Calloc, PyMem_Free, PyMem_Malloc
from libc.stdint cimport uint32_t, uintptr_t
from libc.string cimport memcpy

from cproducer.record import compression as _compression

cdef extern from *:
    """
    #ifdef Py_GIL_DISABLED
    #define CP_GIL_GUARDS_GLOBALS 0
    #else
    #define CP_GIL_GUARDS_GLOBALS 1
    #endif
    """
    bint CP_GIL_GUARDS_GLOBALS

ctypedef int (*_lz4_compress_fn)(void* state, const char* src, char* dst, int src_size,
                                 int dst_capacity, int acceleration) noexcept nogil
ctypedef void (*_lz4_reset_fn)(void* state) noexcept nogil

cdef _lz4_compress_fn _lz4_block = NULL
cdef _lz4_compress_fn _lz4_block_fast = NULL  # the _fastReset variant (NULL: not in the library)
cdef _lz4_reset_fn _lz4_gap_reset = NULL  # LZ4_resetStream_fast (NULL: absent, or checked wrong)
cdef _lz4_compress_fn _lz4_continue = NULL  # LZ4_compress_fast_continue, after _lz4_gap_reset
cdef Py_ssize_t _lz4_state_size = 0
cdef bint _lz4_looked_up = False
cdef bytes _lz4_header = None
cdef void* _lz4_kept_state = NULL  # GIL builds: the shared state (used under the GIL only)
cdef bint _lz4_kept_compressible = True  # GIL builds: the shared state's last large block shrank

# blocks at least this long take the gap reset (lz4's _fastReset clears the whole table for them)
cdef Py_ssize_t LZ4_GAP_RESET_MIN = 4096
# a block this short is stored as it is: the call costs more than the bytes it could save
cdef Py_ssize_t LZ4_RAW_MAX = 64

if LZ4_BLOCK_MAX != _compression.LZ4_BLOCK_MAX:
    raise ImportError("lz4_frame.pxd's LZ4_BLOCK_MAX disagrees with compression.LZ4_BLOCK_MAX")


cdef Py_ssize_t _lz4_blocks(void* state, bint ready, const unsigned char* src, Py_ssize_t n,
                            unsigned char* dst, bint* compressible) noexcept nogil:
    # n bytes as blocks of at most 64 KiB, each stored as is when lz4 does not make it smaller;
    # at most n + 4 per block written; the bytes written. ``ready``: the state was initialized
    # by an earlier compression (no reset needed). ``compressible``: whether the last block of
    # LZ4_GAP_RESET_MIN or more shrank to half or less (read, and updated by every such block)
    cdef Py_ssize_t done = 0, chunk
    cdef unsigned char* p = dst
    cdef int c
    cdef uint32_t size
    cdef _lz4_compress_fn fn
    while done < n:
        chunk = min(n - done, LZ4_BLOCK_MAX)
        if chunk <= LZ4_RAW_MAX:
            c = 0  # too short to be worth an lz4 call: stored as it is
        elif (ready and chunk >= LZ4_GAP_RESET_MIN and compressible[0]
              and _lz4_continue != NULL):
            _lz4_gap_reset(state)
            c = _lz4_continue(state, <const char*>(src + done), <char*>(p + 4), <int>chunk,
                              <int>chunk - 1, 1)
        else:
            fn = _lz4_block_fast if ready and _lz4_block_fast != NULL else _lz4_block
            c = fn(state, <const char*>(src + done), <char*>(p + 4), <int>chunk, <int>chunk - 1,
                   1)
            ready = True
        if chunk >= LZ4_GAP_RESET_MIN:
            compressible[0] = 0 < c <= chunk // 2
        if c > 0:
            size = <uint32_t>c
        else:
            size = <uint32_t>chunk | 0x80000000u
            memcpy(p + 4, src + done, chunk)
            c = <int>chunk
        p[0] = <unsigned char>size
        p[1] = <unsigned char>(size >> 8)
        p[2] = <unsigned char>(size >> 16)
        p[3] = <unsigned char>(size >> 24)
        p += 4 + c
        done += chunk
    return p - dst


cdef Py_ssize_t lz4_compress_stage(const unsigned char* src, Py_ssize_t n, unsigned char* dst,
                                   bint release_gil) except -1:
    """``n`` bytes from ``src`` as lz4 blocks into ``dst`` (lz4_blocks_bound(n) bytes of room);
    the bytes written. ``release_gil``: a very large input, compressed without the GIL."""
    # the compressor state: with the GIL the shared one (the GIL held throughout), else one for
    # this call (a batch between blocks holds no state, only its buffers). The shared one is
    # zeroed when made, which is lz4's own initialization (LZ4_initStream is a memset to 0): a
    # stage whose first blocks are stored without an lz4 call must not leave it uninitialized
    # yet marked as ready, for the fast functions trust what they find in it.
    global _lz4_kept_state
    cdef void* state
    cdef Py_ssize_t written
    cdef bint compressible = True
    if CP_GIL_GUARDS_GLOBALS and not release_gil:
        if _lz4_kept_state == NULL:
            _lz4_kept_state = PyMem_Calloc(1, _lz4_state_size)
            if _lz4_kept_state == NULL:
                raise MemoryError()
        return _lz4_blocks(_lz4_kept_state, True, src, n, dst, &_lz4_kept_compressible)
    state = PyMem_Malloc(_lz4_state_size)
    if state == NULL:
        raise MemoryError()
    if release_gil:
        with nogil:
            written = _lz4_blocks(state, False, src, n, dst, &compressible)
    else:
        written = _lz4_blocks(state, False, src, n, dst, &compressible)
    PyMem_Free(state)
    return written


cdef bytes lz4_frame_header():
    """The frame's 7-byte header (after lz4_in_c() returned True)."""
    return _lz4_header


cdef bint lz4_in_c() except -1:
    """Whether lz4 is compressed here: the functions looked up once, and checked against the
    library's own decoder."""
    global _lz4_block, _lz4_block_fast, _lz4_state_size, _lz4_looked_up, _lz4_header
    global _lz4_gap_reset, _lz4_continue
    cdef _lz4_compress_fn fn, fast, cont
    cdef _lz4_reset_fn reset
    cdef void* state
    cdef bytes sample, out, again, linked
    cdef Py_ssize_t n, m = 0, k = 0
    if _lz4_looked_up:
        return _lz4_block != NULL
    _lz4_looked_up = True
    address, fast_address, size = _compression.lz4_block_compress_address()
    if not address or size <= 0:
        return False
    fn = <_lz4_compress_fn><uintptr_t>address
    fast = <_lz4_compress_fn><uintptr_t>fast_address
    reset_address, continue_address = _compression.lz4_gap_reset_addresses()
    reset = <_lz4_reset_fn><uintptr_t>reset_address
    cont = <_lz4_compress_fn><uintptr_t>continue_address
    sample = b"the records of a batch, " * 100 + bytes(range(256))
    state = PyMem_Malloc(size)
    if state == NULL:
        raise MemoryError()
    out = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(sample))
    again = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(sample))
    linked = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(sample))
    try:
        n = fn(state, PyBytes_AS_STRING(sample), PyBytes_AS_STRING(out),
               <int>PyBytes_GET_SIZE(sample), <int>PyBytes_GET_SIZE(sample) - 1, 1)
        if fast != NULL:  # the same block again on the now initialized state
            m = fast(state, PyBytes_AS_STRING(sample), PyBytes_AS_STRING(again),
                     <int>PyBytes_GET_SIZE(sample), <int>PyBytes_GET_SIZE(sample) - 1, 1)
        if reset != NULL and cont != NULL:
            # twice through the gap reset: the second block, whose bytes the table has just
            # seen, must decode on its own, not against the first
            for _ in range(2):
                reset(state)
                k = cont(state, PyBytes_AS_STRING(sample), PyBytes_AS_STRING(linked),
                         <int>PyBytes_GET_SIZE(sample), <int>PyBytes_GET_SIZE(sample) - 1, 1)
    finally:
        PyMem_Free(state)
    import lz4.block
    if n <= 0 or lz4.block.decompress(out[:n], uncompressed_size=len(sample)) != sample:
        return False
    if fast != NULL and (m <= 0 or lz4.block.decompress(again[:m], uncompressed_size=len(sample))
                         != sample):
        fast = NULL
    if cont != NULL and (k <= 0 or lz4.block.decompress(linked[:k], uncompressed_size=len(sample))
                         != sample):
        cont = NULL
    _lz4_header = _compression.lz4_frame_header()
    _lz4_state_size = size
    _lz4_block_fast = fast
    if cont != NULL:
        _lz4_gap_reset = reset
        _lz4_continue = cont
    _lz4_block = fn
    return True
