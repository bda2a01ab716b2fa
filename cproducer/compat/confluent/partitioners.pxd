# librdkafka's partitioners at C level, for the facade's produce path (see partitioners.pyx).
from libc.stdint cimport uint32_t, uint64_t

cdef enum:
    P_RANDOM = 0
    P_CONSISTENT = 1
    P_CONSISTENT_RANDOM = 2
    P_MURMUR2 = 3
    P_MURMUR2_RANDOM = 4
    P_FNV1A = 5
    P_FNV1A_RANDOM = 6

cdef uint32_t crc32(const unsigned char* data, Py_ssize_t length) noexcept nogil
cdef uint32_t fnv1a(const unsigned char* data, Py_ssize_t length) noexcept nogil
cdef uint64_t next_random(uint64_t* state) noexcept nogil
cdef bint takes_sticky(int kind, long long sticky_ms, bint has_key,
                       Py_ssize_t key_len) noexcept nogil
cdef int hashed_partition(int kind, bint has_key, const unsigned char* key, Py_ssize_t key_len,
                          int count) noexcept nogil
