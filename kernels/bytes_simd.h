/* kernels/bytes_simd.h - pieces of the byte-plane kernels shared by the AVX2 and AVX-512 files
 * (included after <immintrin.h>, compiled with each file's own flags). */
#ifndef GCK_BYTES_SIMD_H
#define GCK_BYTES_SIMD_H

#include <stddef.h>
#include <stdint.h>

#include "attributes.h"

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

#endif /* GCK_BYTES_SIMD_H */
