# cython: freethreading_compatible=True
# Free-threaded Python: safe. Pure functions; the CRC table is written once, at import.
"""librdkafka's partitioners, placing each key where librdkafka would (rdkafka_msg.c).

The hash functions: ``consistent`` is CRC-32 (the zlib/IEEE polynomial) of the key modulo the
partition count; ``murmur2`` is Java's ``toPositive(murmur2(key)) % n``; ``fnv1a`` is 32-bit
FNV-1a taken as a signed int and made positive (Sarama's choice), modulo n.

Which messages skip the hash, as librdkafka decides in ``rd_kafka_msg_partitioner``:

- With ``sticky.partitioning.linger.ms`` > 0, a message goes to the topic's *sticky* partition
  (a random partition kept for that long) when its key is NULL, or empty under
  ``consistent_random``; except under ``consistent``, ``murmur2`` and ``fnv1a``, which never stick.
- Otherwise the partitioner runs on the key: the ``*_random`` variants pick a random partition
  for a NULL key (``consistent_random`` also for an empty one); ``consistent``, ``murmur2`` and
  ``fnv1a`` hash a NULL key as empty (``consistent``: partition 0); ``random`` is random.
- A random pick (also a new sticky partition) that lands on a partition without a leader is
  drawn once more; a sticky partition that lost its leader is replaced at once.

So an empty key ``b""`` is hashed by every partitioner except ``consistent_random`` and
``random``, and a NULL key is hashed only by ``consistent``, ``murmur2`` and ``fnv1a``.
"""

from libc.stdint cimport int32_t, uint32_t, uint64_t

from cproducer.utils.murmur2 cimport murmur2_hash

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE

import os

NAMES = ("random", "consistent", "consistent_random", "murmur2", "murmur2_random", "fnv1a",
         "fnv1a_random")

cdef uint32_t _CRC_TABLE[256]


cdef void _build_crc_table() noexcept:
    cdef uint32_t c
    cdef int i
    for i in range(256):
        c = <uint32_t>i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320u if c & 1 else c >> 1
        _CRC_TABLE[i] = c


_build_crc_table()


cdef uint32_t crc32(const unsigned char* data, Py_ssize_t length) noexcept nogil:
    cdef uint32_t c = 0xFFFFFFFFu
    cdef Py_ssize_t i
    for i in range(length):
        c = _CRC_TABLE[(c ^ data[i]) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFFu


cdef uint32_t fnv1a(const unsigned char* data, Py_ssize_t length) noexcept nogil:
    cdef uint32_t h = 0x811C9DC5u
    cdef Py_ssize_t i
    for i in range(length):
        h = (h ^ data[i]) * 0x01000193u
    # librdkafka negates a negative int32 result (INT32_MIN stays 0x80000000)
    if <int32_t>h < 0:
        h = <uint32_t>0 - h
    return h


cdef uint64_t next_random(uint64_t* state) noexcept nogil:
    # xorshift64*: uniform enough for picking partitions, one multiply per call
    cdef uint64_t x = state[0]
    x ^= x >> 12
    x ^= x << 25
    x ^= x >> 27
    state[0] = x
    return x * 0x2545F4914F6CDD1Du


cdef bint takes_sticky(int kind, long long sticky_ms, bint has_key,
                       Py_ssize_t key_len) noexcept nogil:
    if sticky_ms <= 0 or kind == P_CONSISTENT or kind == P_MURMUR2 or kind == P_FNV1A:
        return False
    return not has_key or (key_len == 0 and kind == P_CONSISTENT_RANDOM)


cdef int hashed_partition(int kind, bint has_key, const unsigned char* key, Py_ssize_t key_len,
                          int count) noexcept nogil:
    """The partition the key hashes to, or -1 when librdkafka picks a random one."""
    if not has_key:
        key_len = 0
    if kind == P_CONSISTENT:
        return <int>(crc32(key, key_len) % <uint32_t>count)
    if kind == P_CONSISTENT_RANDOM:
        if key_len == 0:
            return -1
        return <int>(crc32(key, key_len) % <uint32_t>count)
    if kind == P_MURMUR2 or (kind == P_MURMUR2_RANDOM and has_key):
        return <int>((<uint32_t>murmur2_hash(key, key_len) & 0x7fffffffu) % <uint32_t>count)
    if kind == P_FNV1A or (kind == P_FNV1A_RANDOM and has_key):
        return <int>(fnv1a(key, key_len) % <uint32_t>count)
    return -1


def kind_of(str name):
    """The partitioner's number for its librdkafka name."""
    try:
        return NAMES.index(name)
    except ValueError:
        raise ValueError(f"unknown partitioner {name!r}; librdkafka's are {', '.join(NAMES)}") \
            from None


def hash_partition(str partitioner, key, int count):
    """Where ``partitioner`` puts ``key`` (bytes, or None for a NULL key) among ``count``
    partitions when the message is hashed (not sticky); -1 when the choice is random."""
    cdef int kind = kind_of(partitioner)
    cdef bint has_key = key is not None
    cdef const unsigned char* data = NULL
    if count <= 0:
        raise ValueError(f"count must be > 0, got {count}")
    if has_key and not isinstance(key, bytes):
        raise TypeError(f"key must be bytes or None, got {type(key).__name__}")
    if has_key:
        data = <const unsigned char*>PyBytes_AS_STRING(key)
    return hashed_partition(kind, has_key, data, PyBytes_GET_SIZE(key) if has_key else 0, count)


def is_sticky(str partitioner, key, long long sticky_ms=10):
    """Whether librdkafka sends a message with this key to the sticky partition."""
    cdef bint has_key = key is not None
    return takes_sticky(kind_of(partitioner), sticky_ms, has_key, len(key) if has_key else 0)


def crc32_of(bytes data):
    return crc32(<const unsigned char*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))


def fnv1a_of(bytes data):
    return fnv1a(<const unsigned char*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))


def seed():
    """A random seed for ``next_random`` (never 0: xorshift would stay at 0)."""
    return int.from_bytes(os.urandom(8), "little") | 1
