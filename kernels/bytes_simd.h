/* kernels/bytes_simd.h - pieces of the byte-plane kernels shared by the AVX2 and AVX-512 files
 * (included after <immintrin.h>, compiled with each file's own flags). */
#ifndef GCK_BYTES_SIMD_H
#define GCK_BYTES_SIMD_H

#include <stddef.h>
#include <stdint.h>

#include <string.h>

#include "attributes.h"
#include "kernels_internal.h"

/* vpshufb control of one 16-byte lane: byte k of element e to k*(16/esz) + e,
 * or back (inv); each ISA broadcasts it to its register width. */
GCK_ALWAYS_INLINE void gck_plane_ctl_bytes(uint8_t c[16], size_t esz, int inv)
{
    const size_t u = 16 / esz;
    for (size_t e = 0; e < u; e++)
        for (size_t k = 0; k < esz; k++) {
            if (inv)
                c[e * esz + k] = (uint8_t)(k * u + e);
            else
                c[k * u + e] = (uint8_t)(e * esz + k);
        }
}

/* Defines `GCK_ALWAYS_INLINE void name(T *x, size_t esz)`: registers x[0..esz) as an
 * esz x esz matrix of (16/esz)-byte units per 128-bit lane (unit k of x[m] is
 * row m, column k), replaced by its transpose; P is the intrinsics prefix
 * (_mm256, _mm512), the same unpack network at either width. */
#define GCK_DEFINE_TRANSPOSE_UNITS(name, T, P)                                            \
    GCK_ALWAYS_INLINE void name(T *x, size_t esz)                                                    \
    {                                                                                     \
        if (esz == 2) {                                                                   \
            const T y0 = P##_unpacklo_epi64(x[0], x[1]), y1 = P##_unpackhi_epi64(x[0], x[1]); \
            x[0] = y0, x[1] = y1;                                                         \
        } else if (esz == 4) {                                                            \
            const T t0 = P##_unpacklo_epi32(x[0], x[1]), t1 = P##_unpackhi_epi32(x[0], x[1]); \
            const T t2 = P##_unpacklo_epi32(x[2], x[3]), t3 = P##_unpackhi_epi32(x[2], x[3]); \
            x[0] = P##_unpacklo_epi64(t0, t2), x[1] = P##_unpackhi_epi64(t0, t2);         \
            x[2] = P##_unpacklo_epi64(t1, t3), x[3] = P##_unpackhi_epi64(t1, t3);         \
        } else if (esz == 8) {                                                            \
            T a[8], c[8];                                                                 \
            for (int j = 0; j < 4; j++) {                                                 \
                a[2 * j] = P##_unpacklo_epi16(x[2 * j], x[2 * j + 1]);                    \
                a[2 * j + 1] = P##_unpackhi_epi16(x[2 * j], x[2 * j + 1]);                \
            }                                                                             \
            for (int j = 0; j < 2; j++) { /* columns (0,1) (2,3) (4,5) (6,7) */           \
                c[4 * j] = P##_unpacklo_epi32(a[4 * j], a[4 * j + 2]);                    \
                c[4 * j + 1] = P##_unpackhi_epi32(a[4 * j], a[4 * j + 2]);                \
                c[4 * j + 2] = P##_unpacklo_epi32(a[4 * j + 1], a[4 * j + 3]);            \
                c[4 * j + 3] = P##_unpackhi_epi32(a[4 * j + 1], a[4 * j + 3]);            \
            }                                                                             \
            for (int j = 0; j < 4; j++) {                                                 \
                x[2 * j] = P##_unpacklo_epi64(c[j], c[j + 4]);                            \
                x[2 * j + 1] = P##_unpackhi_epi64(c[j], c[j + 4]);                        \
            }                                                                             \
        }                                                                                 \
    }

/* The sparse split's and merge's 8-byte steps (pshufb through the rows of
 * sparse_tables.c). pack8 stores 8 bytes at vals + m, of which it keeps the
 * count of b's set bits: the rest lies below x's own offset, inside vals.
 * unpack8 reads vals[m..m + 8): the caller keeps m + 8 <= nvals. */
GCK_ALWAYS_INLINE size_t gck_sparse_pack8(uint8_t *vals, size_t m, const uint8_t *x, unsigned b)
{
    const __m128i v = _mm_loadl_epi64((const __m128i *)(const void *)x);
    const __m128i c = _mm_loadl_epi64((const __m128i *)(const void *)gck_sparse_pack_ctl[b]);
    _mm_storel_epi64((__m128i *)(void *)(vals + m), _mm_shuffle_epi8(v, c));
    return m + gck_sparse_count[b];
}

/* fill_hi: the fill byte in bytes 8..15, where unpack_ctl's 8 points */
GCK_ALWAYS_INLINE size_t gck_sparse_unpack8(uint8_t *dst, const uint8_t *vals, size_t m, unsigned b, __m128i fill_hi)
{
    const __m128i v = _mm_or_si128(_mm_loadl_epi64((const __m128i *)(const void *)(vals + m)), fill_hi);
    const __m128i c = _mm_loadl_epi64((const __m128i *)(const void *)gck_sparse_unpack_ctl[b]);
    _mm_storel_epi64((__m128i *)(void *)dst, _mm_shuffle_epi8(v, c));
    return m + gck_sparse_count[b];
}

/* gck_sparse_split_<isa> and gck_sparse_merge_<isa> over W bytes a step,
 * MASK(p, fill) the W-bit mask of p[0..W) != fill (bit j for byte j). */
#define GCK_DEFINE_SPARSE(isa, W, MASK)                                                    \
    static size_t gck_sparse_split_##isa(uint8_t *bits, uint8_t *vals, const uint8_t *x, size_t n, uint8_t fill) \
    {                                                                                      \
        size_t i = 0, m = 0;                                                               \
        for (; i + (W) <= n; i += (W)) {                                                   \
            const uint64_t k = MASK(x + i, fill);                                          \
            memcpy(bits + i / 8, &k, (W) / 8); /* little-endian: byte j holds bits 8j.. */ \
            for (size_t j = 0; j < (W) / 8; j++)                                           \
                m = gck_sparse_pack8(vals, m, x + i + 8 * j, (unsigned)(k >> (8 * j)) & 0xFF); \
        }                                                                                  \
        return gck_sparse_split_range(bits, vals, x, n, fill, i, m);                       \
    }                                                                                      \
    static void gck_sparse_merge_##isa(uint8_t *dst, const uint8_t *bits, const uint8_t *vals, size_t nvals, \
                                       size_t n, uint8_t fill)                             \
    {                                                                                      \
        const __m128i fh = _mm_set_epi64x((long long)(UINT64_C(0x0101010101010101) * fill), 0); \
        size_t i = 0, m = 0;                                                               \
        for (; i + (W) <= n && m + (W) <= nvals; i += (W)) {                               \
            uint64_t k = 0;                                                                \
            memcpy(&k, bits + i / 8, (W) / 8);                                             \
            for (size_t j = 0; j < (W) / 8; j++)                                           \
                m = gck_sparse_unpack8(dst + i + 8 * j, vals, m, (unsigned)(k >> (8 * j)) & 0xFF, fh); \
        }                                                                                  \
        gck_sparse_merge_range(dst, bits, vals, n, fill, i, m);                            \
    }

#endif /* GCK_BYTES_SIMD_H */
