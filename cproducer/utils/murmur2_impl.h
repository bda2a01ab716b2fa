/* Java's org.apache.kafka.common.utils.Utils.murmur2 (MurmurHash2, seed 0x9747b28c) and the
 * built-in partitioner's key choice: toPositive(murmur2(key)) % numPartitions. */
#ifndef CPRODUCER_MURMUR2_IMPL_H
#define CPRODUCER_MURMUR2_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline int32_t murmur2(const unsigned char *data, size_t length) {
    const uint32_t m = 0x5bd1e995u;
    const int r = 24;
    uint32_t h = 0x9747b28cu ^ (uint32_t)length;
    size_t n4 = length / 4;
    for (size_t i = 0; i < n4; i++) {
        const unsigned char *w = data + 4 * i; /* little-endian words, as Java assembles them */
        uint32_t k = (uint32_t)w[0] | ((uint32_t)w[1] << 8) | ((uint32_t)w[2] << 16) |
                     ((uint32_t)w[3] << 24);
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    const unsigned char *tail = data + 4 * n4;
    switch (length & 3) {
        case 3: h ^= (uint32_t)tail[2] << 16; /* fall through */
        case 2: h ^= (uint32_t)tail[1] << 8;  /* fall through */
        case 1: h ^= (uint32_t)tail[0]; h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

static inline int32_t murmur2_partition(const unsigned char *data, size_t length,
                                        int32_t num_partitions) {
    return (int32_t)(((uint32_t)murmur2(data, length) & 0x7fffffffu) % (uint32_t)num_partitions);
}

#endif
