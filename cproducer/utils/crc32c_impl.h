/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as Kafka's RecordBatch v2 uses.
 *
 * Two paths: the SSE4.2 `crc32` instruction (three interleaved streams, combined with
 * precomputed shift tables), chosen at run time when the CPU has it, and a portable
 * slicing-by-8 table. crc32c_update(crc, p, n) continues a previous result (0 to start). */
#ifndef CPRODUCER_CRC32C_IMPL_H
#define CPRODUCER_CRC32C_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CP_CRC32C_POLY 0x82F63B78u

static uint32_t cp_crc32c_table[8][256];
static int cp_crc32c_ready = 0;
static int cp_crc32c_have_hw = 0;

/* multiply/shift helpers for combining streams: crc of (A || zeros(len)) from crc of A */
static uint32_t cp_gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    while (vec) {
        if (vec & 1) sum ^= *mat;
        vec >>= 1;
        mat++;
    }
    return sum;
}

static void cp_gf2_square(uint32_t *square, const uint32_t *mat) {
    for (int n = 0; n < 32; n++) square[n] = cp_gf2_times(mat, mat[n]);
}

/* operator that appends `len` zero bytes to a (raw, non-inverted) crc register */
static void cp_zeros_op(uint32_t *even, size_t len) {
    uint32_t odd[32];
    uint32_t row = 1;
    odd[0] = CP_CRC32C_POLY;
    for (int n = 1; n < 32; n++) { odd[n] = row; row <<= 1; }
    cp_gf2_square(even, odd);  /* 2 zero bits */
    cp_gf2_square(odd, even);  /* 4 zero bits */
    /* first squaring below gives 8 bits = one zero byte */
    do {
        cp_gf2_square(even, odd);
        len >>= 1;
        if (len == 0) return;
        cp_gf2_square(odd, even);
        len >>= 1;
    } while (len);
    memcpy(even, odd, sizeof(odd));
}

/* table form of an operator for fast application: 4 tables of 256 */
static void cp_zeros_tables(uint32_t zeros[4][256], size_t len) {
    uint32_t op[32];
    cp_zeros_op(op, len);
    for (uint32_t n = 0; n < 256; n++) {
        zeros[0][n] = cp_gf2_times(op, n);
        zeros[1][n] = cp_gf2_times(op, n << 8);
        zeros[2][n] = cp_gf2_times(op, n << 16);
        zeros[3][n] = cp_gf2_times(op, n << 24);
    }
}

static inline uint32_t cp_shift(uint32_t zeros[4][256], uint32_t crc) {
    return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^
           zeros[2][(crc >> 16) & 0xff] ^ zeros[3][crc >> 24];
}

#define CP_LONG 8192
#define CP_SHORT 256
static uint32_t cp_long_zeros[4][256];
static uint32_t cp_short_zeros[4][256];

static uint32_t cp_crc32c_sw(uint32_t crc, const unsigned char *p, size_t n) {
    uint32_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = cp_crc32c_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= c; /* little-endian */
        c = cp_crc32c_table[7][w & 0xff] ^ cp_crc32c_table[6][(w >> 8) & 0xff] ^
            cp_crc32c_table[5][(w >> 16) & 0xff] ^ cp_crc32c_table[4][(w >> 24) & 0xff] ^
            cp_crc32c_table[3][(w >> 32) & 0xff] ^ cp_crc32c_table[2][(w >> 40) & 0xff] ^
            cp_crc32c_table[1][(w >> 48) & 0xff] ^ cp_crc32c_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) c = cp_crc32c_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <nmmintrin.h>
#define CP_HAVE_X86 1

__attribute__((target("sse4.2")))
static uint32_t cp_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n) {
    uint64_t c0 = (uint32_t)~crc;
    while (n && ((uintptr_t)p & 7)) { c0 = _mm_crc32_u8((uint32_t)c0, *p++); n--; }
    /* three streams of CP_LONG bytes, then of CP_SHORT bytes */
    while (n >= 3 * CP_LONG) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *end = p + CP_LONG;
        do {
            uint64_t a, b, d;
            memcpy(&a, p, 8); memcpy(&b, p + CP_LONG, 8); memcpy(&d, p + 2 * CP_LONG, 8);
            c0 = _mm_crc32_u64(c0, a); c1 = _mm_crc32_u64(c1, b); c2 = _mm_crc32_u64(c2, d);
            p += 8;
        } while (p < end);
        c0 = cp_shift(cp_long_zeros, (uint32_t)c0) ^ c1;
        c0 = cp_shift(cp_long_zeros, (uint32_t)c0) ^ c2;
        p += 2 * CP_LONG;
        n -= 3 * CP_LONG;
    }
    while (n >= 3 * CP_SHORT) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *end = p + CP_SHORT;
        do {
            uint64_t a, b, d;
            memcpy(&a, p, 8); memcpy(&b, p + CP_SHORT, 8); memcpy(&d, p + 2 * CP_SHORT, 8);
            c0 = _mm_crc32_u64(c0, a); c1 = _mm_crc32_u64(c1, b); c2 = _mm_crc32_u64(c2, d);
            p += 8;
        } while (p < end);
        c0 = cp_shift(cp_short_zeros, (uint32_t)c0) ^ c1;
        c0 = cp_shift(cp_short_zeros, (uint32_t)c0) ^ c2;
        p += 2 * CP_SHORT;
        n -= 3 * CP_SHORT;
    }
    while (n >= 8) { uint64_t a; memcpy(&a, p, 8); c0 = _mm_crc32_u64(c0, a); p += 8; n -= 8; }
    while (n--) c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return ~(uint32_t)c0;
}
#else
#define CP_HAVE_X86 0
static uint32_t cp_crc32c_hw(uint32_t crc, const unsigned char *p, size_t n) {
    return cp_crc32c_sw(crc, p, n);
}
#endif

static void cp_crc32c_init(void) {
    if (cp_crc32c_ready) return;
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ CP_CRC32C_POLY : c >> 1;
        cp_crc32c_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = cp_crc32c_table[0][n];
        for (int k = 1; k < 8; k++) {
            c = cp_crc32c_table[0][c & 0xff] ^ (c >> 8);
            cp_crc32c_table[k][n] = c;
        }
    }
    cp_zeros_tables(cp_long_zeros, CP_LONG);
    cp_zeros_tables(cp_short_zeros, CP_SHORT);
#if CP_HAVE_X86
    __builtin_cpu_init();
    cp_crc32c_have_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
    cp_crc32c_ready = 1;
}

/* the entry point other modules use: best path available */
static inline uint32_t crc32c_update(uint32_t crc, const unsigned char *p, size_t n) {
    if (!cp_crc32c_ready) cp_crc32c_init();
    return cp_crc32c_have_hw ? cp_crc32c_hw(crc, p, n) : cp_crc32c_sw(crc, p, n);
}

#endif
