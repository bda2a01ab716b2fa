# Shared inline helpers for Kafka wire formats in C buffers: big-endian integers written and
# read, (zigzag) varints written, with their sizes.
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t


cdef inline void write_be16(unsigned char *p, int16_t v) noexcept nogil:
    cdef uint16_t u = <uint16_t>v
    p[0] = <uint8_t>(u >> 8)
    p[1] = <uint8_t>u


cdef inline void write_be32(unsigned char *p, int32_t v) noexcept nogil:
    cdef uint32_t u = <uint32_t>v
    p[0] = <uint8_t>(u >> 24)
    p[1] = <uint8_t>(u >> 16)
    p[2] = <uint8_t>(u >> 8)
    p[3] = <uint8_t>u


cdef inline void write_be64(unsigned char *p, int64_t v) noexcept nogil:
    write_be32(p, <int32_t>(<uint64_t>v >> 32))
    write_be32(p + 4, <int32_t><uint32_t><uint64_t>v)


cdef inline int16_t read_be16(const unsigned char *p) noexcept nogil:
    return <int16_t>((<uint16_t>p[0] << 8) | p[1])


cdef inline int32_t read_be32(const unsigned char *p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3])


cdef inline int64_t read_be64(const unsigned char *p) noexcept nogil:
    return <int64_t>((<uint64_t><uint32_t>read_be32(p) << 32) | <uint32_t>read_be32(p + 4))


cdef inline int uvarint_size(uint64_t v) noexcept nogil:
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline int varint_size(int32_t v) noexcept nogil:
    # zigzag int32
    return uvarint_size(<uint32_t>((<uint32_t>v << 1) ^ <uint32_t>(v >> 31)))


cdef inline int varlong_size(int64_t v) noexcept nogil:
    return uvarint_size(<uint64_t>((<uint64_t>v << 1) ^ <uint64_t>(v >> 63)))


cdef inline unsigned char* write_uvarint(unsigned char *p, uint64_t v) noexcept nogil:
    while v >= 0x80:
        p[0] = <uint8_t>((v & 0x7F) | 0x80)
        p += 1
        v >>= 7
    p[0] = <uint8_t>v
    return p + 1


cdef inline unsigned char* write_varint(unsigned char *p, int32_t v) noexcept nogil:
    return write_uvarint(p, <uint32_t>((<uint32_t>v << 1) ^ <uint32_t>(v >> 31)))


cdef inline unsigned char* write_varlong(unsigned char *p, int64_t v) noexcept nogil:
    return write_uvarint(p, <uint64_t>((<uint64_t>v << 1) ^ <uint64_t>(v >> 63)))
