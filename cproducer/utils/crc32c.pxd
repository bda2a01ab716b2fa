# C-level CRC-32C for other extension modules: `from cproducer.utils.crc32c cimport crc32c_update`.
# The implementation is header-only (crc32c_impl.h), so no runtime import is needed.
from libc.stdint cimport uint32_t

cdef extern from "crc32c_impl.h":
    int cp_crc32c_have_hw
    void cp_crc32c_init() nogil
    uint32_t crc32c_update(uint32_t crc, const unsigned char *data, size_t length) nogil
    uint32_t cp_crc32c_sw(uint32_t crc, const unsigned char *data, size_t length) nogil
    uint32_t cp_crc32c_hw(uint32_t crc, const unsigned char *data, size_t length) nogil
