# C-level murmur2 for other extension modules (header-only, no runtime import needed).
from libc.stdint cimport int32_t

cdef extern from "murmur2_impl.h":
    int32_t murmur2_hash "murmur2"(const unsigned char *data, size_t length) nogil
    int32_t murmur2_partition(const unsigned char *data, size_t length,
                              int32_t num_partitions) nogil
