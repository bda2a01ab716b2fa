# The lz4 frame of a compressed RecordBatch, compressed in C for the builder (lz4_frame.pyx).
#
# Frame => header (7 bytes, lz4_frame_header()), then blocks of at most LZ4_BLOCK_MAX input bytes,
# each [uint32 LE size (bit 31: stored uncompressed)][data], then the end mark (uint32 0).

cdef enum:
    LZ4_BLOCK_MAX = 65536  # Java's KafkaLZ4BlockOutputStream blocks (BD 0x40: 64 KiB)
    LZ4_BLOCK_HEADER = 4   # a block's size word
    # A value at least this large (in a record without headers) is compressed straight from the
    # caller's memory as blocks of its own: below it the copy into the stage is cheaper than the
    # extra lz4 call.
    LZ4_DIRECT_MIN = 8192


# the most bytes lz4_compress_stage writes for n bytes: every block stored as is, with its header
cdef inline Py_ssize_t lz4_blocks_bound(Py_ssize_t n) noexcept nogil:
    return n + LZ4_BLOCK_HEADER * ((n + LZ4_BLOCK_MAX - 1) // LZ4_BLOCK_MAX)


cdef bint lz4_in_c() except -1
cdef bytes lz4_frame_header()
cdef Py_ssize_t lz4_compress_stage(const unsigned char* src, Py_ssize_t n, unsigned char* dst,
                                   bint release_gil) except -1
