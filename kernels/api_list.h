/* kernels/api_list.h - every public kernel of <gradckpt/kernels.h>, by its literal name (an X-macro).
 *
 * X(name, shape, A, X): gck_<name> has the signature of `shape` (below) over
 * the dtype tokens A (the array it writes or accumulates into) and X (the
 * array it reads); see GCK_CT in kernel_list.h. The list drives:
 *   - kernels/api.c: a compile-time check that each gck_<name> exists with
 *     that signature;
 *   - tests/test_kernels_golden.c: a pinned digest of each kernel's results
 *     (and a check that kernels.h declares no kernel missing here);
 *   - bench/bench_kernels.c: one benchmark family per entry, on every ISA.
 * A new public kernel is a line here; the three then fail to build or to
 * pass until it has a signature, a pinned digest and a benchmark.
 */
#ifndef GCK_API_LIST_H
#define GCK_API_LIST_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/status.h>

#include "kernel_list.h"

/* The signatures, as function pointer types. */
#define GCK_SIG_REDUCE(A, X) double (*)(const GCK_CT(X) *, size_t)                      /* f(x, n)       */
#define GCK_SIG_REDUCE2(A, X) double (*)(const GCK_CT(X) *, const GCK_CT(X) *, size_t)  /* f(a, b, n)    */
#define GCK_SIG_PNORM(A, X) double (*)(const GCK_CT(X) *, size_t, double)               /* f(x, n, p)    */
#define GCK_SIG_FUSED(A, X) double (*)(GCK_CT(A) *, const GCK_CT(X) *, GCK_CT(A), size_t) /* f(dst, x, d, n) */
#define GCK_SIG_ADD(A, X) void (*)(GCK_CT(A) *, const GCK_CT(X) *, size_t)              /* f(acc, x, n)  */
#define GCK_SIG_AXPY(A, X) void (*)(GCK_CT(A) *, GCK_CT(A), const GCK_CT(X) *, size_t)  /* f(acc, w, x, n) */
#define GCK_SIG_AXPY_INIT(A, X) GCK_SIG_AXPY(A, X) /* f(dst, w, x, n): dst written, not read */
#define GCK_SIG_RFOLD(A, X) void (*)(GCK_CT(A) *, const GCK_CT(X) *const *, size_t, size_t) /* f(acc, xs, m, n) */
#define GCK_SIG_SCALE(A, X) void (*)(GCK_CT(A) *, GCK_CC(A), size_t)                    /* f(x, s, n)    */
#define GCK_SIG_CONVERT(A, X) void (*)(GCK_CT(A) *, const GCK_CT(X) *, size_t)          /* f(dst, x, n)  */
#define GCK_SIG_SHUFFLE(A, X) void (*)(uint8_t *, const void *, const void *, size_t, size_t)
#define GCK_SIG_UNSHUFFLE(A, X) void (*)(void *, const uint8_t *, const void *, size_t, size_t)
#define GCK_SIG_UNSHUFFLE_PLANES(A, X) void (*)(void *, const uint8_t *const *, const void *, size_t, size_t)
#define GCK_SIG_SPARSE_SPLIT(A, X) size_t (*)(uint8_t *, uint8_t *, const uint8_t *, size_t, uint8_t)
#define GCK_SIG_SPARSE_MERGE(A, X) void (*)(uint8_t *, const uint8_t *, const uint8_t *, size_t, size_t, uint8_t)
#define GCK_SIG_HASH(A, X) uint64_t (*)(const void *, size_t, uint64_t)                 /* f(data, len, h) */

#define GCK_API_KERNEL_LIST(X)                                                 \
    /* reductions, accumulated in f64 */                                       \
    X(sumsq_f64, REDUCE, f64, f64)                                             \
    X(sumsq_f32, REDUCE, f32, f32)                                             \
    X(l2norm_f64, REDUCE, f64, f64)                                            \
    X(l2norm_f32, REDUCE, f32, f32)                                            \
    X(dist2_f64, REDUCE2, f64, f64)                                            \
    X(dist2_f32, REDUCE2, f32, f32)                                            \
    X(pnorm_f64, PNORM, f64, f64)                                              \
    X(pnorm_f32, PNORM, f32, f32)                                              \
    /* fused update + sum of squares of the stored values */                   \
    X(div_sumsq_f64, FUSED, f64, f64)                                          \
    X(div_sumsq_f32, FUSED, f32, f32)                                          \
    X(scale_sumsq_f64, FUSED, f64, f64)                                        \
    X(scale_sumsq_f32, FUSED, f32, f32)                                        \
    /* elementwise */                                                          \
    X(add_f64, ADD, f64, f64)                                                  \
    X(add_f32, ADD, f32, f32)                                                  \
    X(add_f32_to_f64, ADD, f64, f32)                                           \
    X(add_f64_to_f32, ADD, f32, f64)                                           \
    X(axpy_f64, AXPY, f64, f64)                                                \
    X(axpy_f32, AXPY, f32, f32)                                                \
    X(axpy_f32_to_f64, AXPY, f64, f32)                                         \
    X(axpy_f64_to_f32, AXPY, f32, f64)                                         \
    X(axpy_init_f64, AXPY_INIT, f64, f64)                                      \
    X(axpy_init_f32, AXPY_INIT, f32, f32)                                      \
    X(axpy_init_f32_to_f64, AXPY_INIT, f64, f32)                               \
    X(axpy_init_f64_to_f32, AXPY_INIT, f32, f64)                               \
    X(axpy_init_nt_f64, AXPY_INIT, f64, f64)                                   \
    X(axpy_init_nt_f32, AXPY_INIT, f32, f32)                                   \
    X(scale_into_f64, AXPY_INIT, f64, f64)                                     \
    X(scale_into_f32, AXPY_INIT, f32, f32)                                     \
    X(scale_into_nt_f64, AXPY_INIT, f64, f64)                                  \
    X(scale_into_nt_f32, AXPY_INIT, f32, f32)                                  \
    X(add_rfold_f64, RFOLD, f64, f64)                                          \
    X(add_rfold_f32, RFOLD, f32, f32)                                          \
    X(scale_f64, SCALE, f64, f64)                                              \
    X(scale_f32, SCALE, f32, f32)                                              \
    /* 2-byte floats (bf16, f16): reductions, mixed accumulation, scale */    \
    X(sumsq_bf16, REDUCE, bf16, bf16)                                          \
    X(sumsq_f16, REDUCE, f16, f16)                                             \
    X(l2norm_bf16, REDUCE, bf16, bf16)                                         \
    X(l2norm_f16, REDUCE, f16, f16)                                            \
    X(dist2_bf16, REDUCE2, bf16, bf16)                                         \
    X(dist2_f16, REDUCE2, f16, f16)                                            \
    X(pnorm_bf16, PNORM, bf16, bf16)                                           \
    X(pnorm_f16, PNORM, f16, f16)                                              \
    X(add_bf16_to_f32, ADD, f32, bf16)                                         \
    X(add_f16_to_f32, ADD, f32, f16)                                           \
    X(add_bf16_to_f64, ADD, f64, bf16)                                         \
    X(add_f16_to_f64, ADD, f64, f16)                                           \
    X(axpy_bf16_to_f32, AXPY, f32, bf16)                                       \
    X(axpy_f16_to_f32, AXPY, f32, f16)                                         \
    X(axpy_bf16_to_f64, AXPY, f64, bf16)                                       \
    X(axpy_f16_to_f64, AXPY, f64, f16)                                         \
    X(axpy_init_bf16_to_f32, AXPY_INIT, f32, bf16)                             \
    X(axpy_init_f16_to_f32, AXPY_INIT, f32, f16)                               \
    X(axpy_init_bf16_to_f64, AXPY_INIT, f64, bf16)                             \
    X(axpy_init_f16_to_f64, AXPY_INIT, f64, f16)                               \
    X(scale_bf16, SCALE, bf16, bf16)                                           \
    X(scale_f16, SCALE, f16, f16)                                              \
    /* conversions, rounding to nearest even / widening exactly */             \
    X(convert_f32_to_bf16, CONVERT, bf16, f32)                                 \
    X(convert_f32_to_f16, CONVERT, f16, f32)                                   \
    X(convert_bf16_to_f32, CONVERT, f32, bf16)                                 \
    X(convert_f16_to_f32, CONVERT, f32, f16)                                   \
    /* bytes */                                                                \
    X(xor_shuffle, SHUFFLE, u8, u8)                                            \
    X(unshuffle_xor, UNSHUFFLE, u8, u8)                                        \
    X(unshuffle_xor_planes, UNSHUFFLE_PLANES, u8, u8)                          \
    X(xor_shuffle_rot, SHUFFLE, u8, u8)                                        \
    X(unshuffle_xor_rot_planes, UNSHUFFLE_PLANES, u8, u8)                      \
    X(sparse_split, SPARSE_SPLIT, u8, u8)                                      \
    X(sparse_merge, SPARSE_MERGE, u8, u8)                                      \
    X(fnv1a64, HASH, u8, u8)

#endif /* GCK_API_LIST_H */
