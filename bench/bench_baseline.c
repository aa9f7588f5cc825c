/* bench/bench_baseline.c - STREAM-style memory-bandwidth references: "ref_read_f64/1t/<n>".
 *
 * Built with -O3 -march=native -ffast-math (bench/CMakeLists.txt): the fastest
 * loops the compiler makes for the same traffic as the kernels, with no
 * ordering or rounding promises, so kernel GB/s / ref GB/s is the fraction of
 * the achievable bandwidth. Uses no gradckpt header beyond the shim's:
 *   ref_read   s += x[i]         1 array read          (sumsq, l2norm)
 *   ref_read2  s += a[i] + b[i]  2 arrays read         (dist2: on one Intel VM
 *                                  two streams read 0.88x one stream's GB/s)
 *   ref_rmw2   acc[i] += x[i]    2 read, 1 written     (add, axpy)
 *   ref_rmw1   x[i] *= s         1 read, 1 written     (scale)
 *   ref_add3   c[i] = a[i] + b[i]  2 read, 1 other written: STREAM's "add"
 *                                  (xor_shuffle, unshuffle_xor)
 *   ref_copy   c[i] = a[i]       1 read, 1 other written: STREAM's "copy"
 *                                  (the machine's copy limit; snapshot copies)
 *   ref_widen_f32  (double)x[i], the bits XORed together: only the f32 -> f64
 *                  widening every f32 reduction needs, no arithmetic
 *                  (in cache, the ceiling of sumsq/l2norm/dist2 f32)
 *   ref_read_16    s ^= x[i] over 2-byte elements: the read limit of the bf16
 *                  and f16 reductions (GB/s, beside ref_read_f32's)
 *   ref_read2_16   s ^= a[i] ^ b[i]: the same for dist2 of 2-byte elements
 *   ref_widen_bf16, ref_widen_f16  only the widening of 2-byte elements to
 *                  f64 (bf16: a 16-bit shift, f16: vcvtph2ps, then vcvtps2pd),
 *                  no arithmetic: the in-cache ceiling of their reductions
 *   ref_read2_16_busy<K>  ref_read2_16 with the 2-byte dist2 kernels'
 *                  prefetching and K vector integer adds per 16 elements:
 *                  a kernel of fixed arithmetic cost, whose GB/s out of cache
 *                  is the ceiling of any kernel as fast in cache (x86, AVX2)
 *   ref_cvt_ymm_16, ref_cvt_zmm_16  only the f32 -> f64 conversions the
 *                  AVX-512 2-byte reductions take per element, 4 per
 *                  vcvtps2pd in the ymm shape, 8 in the zmm one (x86 with
 *                  AVX-512): the in-cache ceiling of each shape, and with it
 *                  of AVX2 (the ymm shape) against AVX-512
 *   ref_sq_ymm_bf16, ref_sq_ymm_f16  the instructions AVX2's 2-byte sums of
 *                  squares take per 4 elements (bf16: an interleave with
 *                  zero words, f16: vcvtph2ps of 8 and an extract per 8;
 *                  then vcvtps2pd and an FMA into one of 8 registers) and
 *                  nothing else: no runs, folds, tails or prefetch, in 16
 *                  registers as AVX2 has them. The in-cache ceiling of those
 *                  kernels (x86, AVX2 with F16C)
 *   ref_sq_zmm_bf16, ref_sq_zmm_f16  the same for AVX-512's zmm shape (per 8
 *                  elements one vcvtps2pd and one FMA into a zmm; bf16 16 per
 *                  load and interleave, f16 8 per vcvtph2ps): with the ymm
 *                  ones, the best AVX2 ÷ AVX-512 ratio these sums can reach
 *                  (x86 with AVX-512)
 *   ref_pow_ymm_bf16, ref_pow_zmm_bf16  |x|^3 of bf16 elements summed with
 *                  SLEEF's pow, 4 or 8 lanes a call, as the p-norms of any
 *                  other p than 1, 2 and Inf call it: their ceiling (x86 with
 *                  AVX-512; pnorm benchmarks take p = 3)
 * ref_add3 writes lines it has not read, so the CPU also reads them first
 * (write-allocate): 4 transfers per element where rmw2 has 3, for the same
 * 3 counted arrays.
 */
#include <stdint.h>
#include <string.h>

#ifdef __AVX__
#include <immintrin.h>
#endif

#include "bench.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define A GCK_BENCH_A
#define B GCK_BENCH_B

/* Elements per OpenMP work item. Runs of 2 or more items use every thread
 * the shim allows (1 for "1t", 2 for "2t"); anything else is one plain call,
 * since even an if(0) parallel region costs a few hundred ns. */
#define REF_CHUNK ((size_t)1 << 16)

typedef double (*ref_chunk)(void *ctx, size_t lo, size_t len);

static double over_chunks(ref_chunk fn, void *ctx, int64_t n)
{
#ifdef _OPENMP
    const long long nchunks = (long long)(((size_t)n + REF_CHUNK - 1) / REF_CHUNK);
    if (nchunks >= 2 && omp_get_max_threads() > 1) {
        double s = 0;
#pragma omp parallel for schedule(static) reduction(+ : s)
        for (long long k = 0; k < nchunks; k++) {
            const size_t lo = (size_t)k * REF_CHUNK, left = (size_t)n - lo;
            s += fn(ctx, lo, left < REF_CHUNK ? left : REF_CHUNK);
        }
        return s;
    }
#endif
    return fn(ctx, 0, (size_t)n);
}

/* Read once so the compiler cannot turn the multiply into a negation. */
static volatile double ref_scale = GCK_BENCH_SCALE;

/* The read sum keeps 256 bytes of independent partial sums: a single vector
 * accumulator would make it add-latency bound in cache instead of load bound. */
#define REF_BODIES(T, sfx)                                                               \
    static double read_chunk_##sfx(void *c, size_t lo, size_t len)                       \
    {                                                                                    \
        enum { LANES = 256 / sizeof(T) };                                                \
        const T *x = A(T, c) + lo;                                                       \
        T part[LANES] = { 0 }, s = 0;                                                    \
        size_t i = 0;                                                                    \
        for (; i + LANES <= len; i += LANES)                                             \
            for (size_t k = 0; k < LANES; k++)                                           \
                part[k] += x[i + k];                                                     \
        for (; i < len; i++)                                                             \
            s += x[i];                                                                   \
        for (size_t k = 0; k < LANES; k++)                                               \
            s += part[k];                                                                \
        return (double)s;                                                                \
    }                                                                                    \
    static double read2_chunk_##sfx(void *c, size_t lo, size_t len)                      \
    {                                                                                    \
        enum { LANES = 256 / sizeof(T) };                                                \
        const T *a = A(T, c) + lo, *b = B(T, c) + lo;                                    \
        T part[LANES] = { 0 }, s = 0;                                                    \
        size_t i = 0;                                                                    \
        for (; i + LANES <= len; i += LANES)                                             \
            for (size_t k = 0; k < LANES; k++)                                           \
                part[k] += a[i + k] + b[i + k];                                          \
        for (; i < len; i++)                                                             \
            s += a[i] + b[i];                                                            \
        for (size_t k = 0; k < LANES; k++)                                               \
            s += part[k];                                                                \
        return (double)s;                                                                \
    }                                                                                    \
    static double rmw2_chunk_##sfx(void *c, size_t lo, size_t len)                       \
    {                                                                                    \
        T *acc = A(T, c) + lo;                                                           \
        const T *x = B(T, c) + lo;                                                       \
        for (size_t i = 0; i < len; i++)                                                 \
            acc[i] += x[i];                                                              \
        return 0;                                                                        \
    }                                                                                    \
    static double rmw1_chunk_##sfx(void *c, size_t lo, size_t len)                       \
    {                                                                                    \
        T *x = A(T, c) + lo;                                                             \
        const T s = (T)ref_scale;                                                        \
        for (size_t i = 0; i < len; i++)                                                 \
            x[i] *= s;                                                                   \
        return 0;                                                                        \
    }                                                                                    \
    static double add3_chunk_##sfx(void *c, size_t lo, size_t len)                       \
    {                                                                                    \
        T *dst = GCK_BENCH_C(T, c) + lo;                                                 \
        const T *a = A(T, c) + lo, *b = B(T, c) + lo;                                    \
        for (size_t i = 0; i < len; i++)                                                 \
            dst[i] = a[i] + b[i];                                                        \
        return 0;                                                                        \
    }                                                                                    \
    static double copy_chunk_##sfx(void *c, size_t lo, size_t len)                       \
    {                                                                                    \
        T *dst = GCK_BENCH_C(T, c) + lo;                                                 \
        const T *a = A(T, c) + lo;                                                       \
        for (size_t i = 0; i < len; i++)                                                 \
            dst[i] = a[i];                                                               \
        return 0;                                                                        \
    }                                                                                    \
    static double copy_##sfx(void *c, int64_t n) { return over_chunks(copy_chunk_##sfx, c, n); } \
    static double read_##sfx(void *c, int64_t n) { return over_chunks(read_chunk_##sfx, c, n); } \
    static double read2_##sfx(void *c, int64_t n) { return over_chunks(read2_chunk_##sfx, c, n); } \
    static double add3_##sfx(void *c, int64_t n) { return over_chunks(add3_chunk_##sfx, c, n); } \
    static double rmw2_##sfx(void *c, int64_t n) { return over_chunks(rmw2_chunk_##sfx, c, n); } \
    static double rmw1_##sfx(void *c, int64_t n) { return over_chunks(rmw1_chunk_##sfx, c, n); }

REF_BODIES(float, f32)
REF_BODIES(double, f64)

/* XOR keeps the converted values live without an FP add or multiply, so the
 * loop measures the widening alone. On x86 it is written out as 4-wide
 * vcvtps2pd from memory: compilers otherwise split 8-float loads with
 * vextractf128 or pick the zmm form, which on Zen 4 widens about 4 floats per
 * cycle where the 4-wide form from memory widens 5-6. */
static double widen_chunk_f32(void *c, size_t lo, size_t len)
{
    const float *x = A(float, c) + lo;
    uint64_t s = 0;
    size_t i = 0;
#ifdef __AVX__
    __m256d p[8];
    for (int k = 0; k < 8; k++)
        p[k] = _mm256_setzero_pd();
    for (; i + 32 <= len; i += 32)
        for (int k = 0; k < 8; k++)
            p[k] = _mm256_xor_pd(p[k], _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4 * k)));
    for (int k = 1; k < 8; k++)
        p[0] = _mm256_xor_pd(p[0], p[k]);
    uint64_t lanes[4];
    memcpy(lanes, &p[0], sizeof lanes);
    s = lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3];
#endif
    for (; i < len; i++) {
        const double d = x[i];
        uint64_t b;
        memcpy(&b, &d, sizeof b);
        s ^= b;
    }
    return (double)(s & 0xffff);
}

static double widen_f32(void *c, int64_t n) { return over_chunks(widen_chunk_f32, c, n); }

/* 2-byte elements: read (XOR of 16-byte vectors, no FP) and the widenings */
static double read_chunk_16(void *c, size_t lo, size_t len)
{
    const uint16_t *x = A(uint16_t, c) + lo;
    uint16_t part[128] = { 0 }, s = 0;
    size_t i = 0;
    for (; i + 128 <= len; i += 128)
        for (size_t k = 0; k < 128; k++)
            part[k] ^= x[i + k];
    for (; i < len; i++)
        s ^= x[i];
    for (size_t k = 0; k < 128; k++)
        s ^= part[k];
    return (double)s;
}

static double read2_chunk_16(void *c, size_t lo, size_t len)
{
    const uint16_t *a = A(uint16_t, c) + lo, *b = B(uint16_t, c) + lo;
    uint16_t part[128] = { 0 }, s = 0;
    size_t i = 0;
    for (; i + 128 <= len; i += 128)
        for (size_t k = 0; k < 128; k++)
            part[k] ^= a[i + k] ^ b[i + k];
    for (; i < len; i++)
        s ^= a[i] ^ b[i];
    for (size_t k = 0; k < 128; k++)
        s ^= part[k];
    return (double)s;
}

#ifdef __AVX2__
#define REF_WIDEN16(name, CVT4)                                                            \
    static double name(void *c, size_t lo, size_t len)                                     \
    {                                                                                      \
        const uint16_t *x = A(uint16_t, c) + lo;                                           \
        __m256d p[8];                                                                      \
        for (int k = 0; k < 8; k++)                                                        \
            p[k] = _mm256_setzero_pd();                                                    \
        for (size_t i = 0; i + 32 <= len; i += 32)                                         \
            for (int k = 0; k < 8; k++) {                                                  \
                const __m128i v = _mm_loadl_epi64((const __m128i *)(const void *)(x + i + 4 * k)); \
                p[k] = _mm256_xor_pd(p[k], _mm256_cvtps_pd(CVT4(v)));                      \
            }                                                                              \
        for (int k = 1; k < 8; k++)                                                        \
            p[0] = _mm256_xor_pd(p[0], p[k]);                                              \
        uint64_t lanes[4];                                                                 \
        memcpy(lanes, &p[0], sizeof lanes);                                                \
        return (double)((lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3]) & 0xffff);             \
    }
#define REF_CVT_BF16(v) _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(v), 16))
REF_WIDEN16(widen_chunk_bf16, REF_CVT_BF16)
REF_WIDEN16(widen_chunk_f16, _mm_cvtph_ps)
#else
/* without AVX2 the widenings are the plain read */
#define widen_chunk_bf16 read_chunk_16
#define widen_chunk_f16 read_chunk_16
#endif

#if defined(__AVX2__) && defined(__GNUC__)
/* Two streams read as ref_read2_16, prefetched as the 2-byte dist2 kernels
 * prefetch (each stripe of 64 elements: its two lines 2 KiB ahead into L1
 * and 2.5 KiB ahead into L2, GCK_PREFETCH16_L1 and _L2_PAIR in
 * kernels/kernels_internal.h), with K vector adds per 16 elements on 8
 * independent registers. The adds are asm so the compiler can neither fold
 * nor drop them: the cost per element is fixed, the access pattern is the
 * kernels'. Comparing a kernel's GB/s in cache with the busy reference that
 * runs as fast in cache shows the share of ref_read2_16 that arithmetic of
 * that cost leaves reachable out of cache. */
#define REF_ADD(r, t) __asm__ volatile("vpaddd %1, %0, %0" : "+x"(r) : "x"(t));
#define REF_ADD4(a, b, c, d) REF_ADD(a, b) REF_ADD(b, c) REF_ADD(c, d) REF_ADD(d, a)
#define REF_BUSY16(name, K)                                                                \
    static double name(void *c, size_t lo, size_t len)                                     \
    {                                                                                      \
        const uint16_t *a = A(uint16_t, c) + lo, *b = B(uint16_t, c) + lo;                 \
        __m256i s = _mm256_setzero_si256(), r0 = _mm256_set1_epi32(1), r1 = r0, r2 = r0,  \
                r3 = r0, r4 = r0, r5 = r0, r6 = r0, r7 = r0;                               \
        for (size_t i = 0; i + 64 <= len; i += 64) {                                       \
            const char *pa = (const char *)(a + i), *pb = (const char *)(b + i);           \
            __builtin_prefetch(pa + 2048, 0, 3);                                           \
            __builtin_prefetch(pa + 2048 + 64, 0, 3);                                      \
            __builtin_prefetch(pa + 2560, 0, 2);                                           \
            __builtin_prefetch(pa + 2560 + 64, 0, 2);                                      \
            __builtin_prefetch(pb + 2048, 0, 3);                                           \
            __builtin_prefetch(pb + 2048 + 64, 0, 3);                                      \
            __builtin_prefetch(pb + 2560, 0, 2);                                           \
            __builtin_prefetch(pb + 2560 + 64, 0, 2);                                      \
            for (int q = 0; q < 4; q++) {                                                  \
                s = _mm256_xor_si256(s, _mm256_loadu_si256((const __m256i *)(const void *)(a + i + 16 * q))); \
                s = _mm256_xor_si256(s, _mm256_loadu_si256((const __m256i *)(const void *)(b + i + 16 * q))); \
                for (int k = 0; k < (K); k += 8) {                                         \
                    REF_ADD4(r0, r1, r2, r3)                                               \
                    REF_ADD4(r4, r5, r6, r7)                                               \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
        s = _mm256_xor_si256(s, _mm256_xor_si256(_mm256_xor_si256(r0, r1), _mm256_xor_si256(r2, r3))); \
        s = _mm256_xor_si256(s, _mm256_xor_si256(_mm256_xor_si256(r4, r5), _mm256_xor_si256(r6, r7))); \
        return (double)(_mm256_extract_epi32(s, 0) & 0xffff);                              \
    }
REF_BUSY16(busy16_chunk, 16)
REF_BUSY16(busy24_chunk, 24)
REF_BUSY16(busy32_chunk, 32)
REF_BUSY16(busy40_chunk, 40)
static double busy16(void *c, int64_t n) { return over_chunks(busy16_chunk, c, n); }
static double busy24(void *c, int64_t n) { return over_chunks(busy24_chunk, c, n); }
static double busy32(void *c, int64_t n) { return over_chunks(busy32_chunk, c, n); }
static double busy40(void *c, int64_t n) { return over_chunks(busy40_chunk, c, n); }
#define REF_BUSY_ENTRIES                                                                   \
    , { "read2_16_busy16", busy16, 4 }, { "read2_16_busy24", busy24, 4 }, { "read2_16_busy32", busy32, 4 }, \
        { "read2_16_busy40", busy40, 4 }
#else
#define REF_BUSY_ENTRIES
#endif

#if defined(__AVX512F__) && defined(__GNUC__)
/* Per 16 elements, the vcvtps2pd each shape needs, straight from the input
 * (its bytes taken as floats) and nothing else: asm, so that the compiler
 * neither merges the repeated conversions nor drops their unused results. */
static double cvt_ymm_chunk(void *c, size_t lo, size_t len)
{
    const uint16_t *x = A(uint16_t, c) + lo;
    __m256d r0, r1, r2, r3;
    for (size_t i = 0; i + 16 <= len; i += 16)
        __asm__ volatile("vcvtps2pd %4, %0\n\tvcvtps2pd %5, %1\n\tvcvtps2pd %4, %2\n\tvcvtps2pd %5, %3"
                         : "=x"(r0), "=x"(r1), "=x"(r2), "=x"(r3)
                         : "m"(*(const __m128 *)(const void *)(x + i)), "m"(*(const __m128 *)(const void *)(x + i + 8)));
    return (double)x[0];
}
static double cvt_zmm_chunk(void *c, size_t lo, size_t len)
{
    const uint16_t *x = A(uint16_t, c) + lo;
    __m512d r0, r1;
    for (size_t i = 0; i + 16 <= len; i += 16)
        __asm__ volatile("vcvtps2pd %2, %0\n\tvcvtps2pd %2, %1"
                         : "=v"(r0), "=v"(r1)
                         : "m"(*(const __m256 *)(const void *)(x + i)));
    return (double)x[0];
}
static double cvt_ymm_16(void *c, int64_t n) { return over_chunks(cvt_ymm_chunk, c, n); }
static double cvt_zmm_16(void *c, int64_t n) { return over_chunks(cvt_zmm_chunk, c, n); }
#define REF_CVT_ENTRIES , { "cvt_ymm_16", cvt_ymm_16, 2 }, { "cvt_zmm_16", cvt_zmm_16, 2 }
#else
#define REF_CVT_ENTRIES
#endif

/* The 2-byte sums of squares' instruction streams, each one asm loop over 64
 * elements (128 bytes) per iteration so that the compiler adds nothing:
 * 16 elements per group G, run registers 8-15 in turn. */
#define REF_SQ_YMM_LOOP(G)                                                                         \
    "1:\n" G(0, 8, 9, 10, 11) G(32, 12, 13, 14, 15) G(64, 8, 9, 10, 11) G(96, 12, 13, 14, 15)     \
        "add $128, %0\n\tdec %1\n\tjnz 1b\n"
#define REF_SQ_CLOBBERS                                                                            \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",      \
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory"
/* name(c, n): the asm loop LOOP(G) over 64 elements per iteration, after ZERO. */
#define REF_SQ_DEFINE(name, LOOP, G, ZERO)                                                         \
    static double name##_chunk(void *c, size_t lo, size_t len)                                     \
    {                                                                                              \
        const uint16_t *x = A(uint16_t, c) + lo;                                                  \
        size_t steps = len / 64;                                                                   \
        if (steps > 0)                                                                             \
            __asm__ volatile(ZERO LOOP(G) : "+r"(x), "+r"(steps) : : REF_SQ_CLOBBERS);             \
        return 0.0;                                                                                \
    }                                                                                              \
    static double name(void *c, int64_t n) { return over_chunks(name##_chunk, c, n); }
#define REF_SQ_ZERO7 "vpxor %%xmm7, %%xmm7, %%xmm7\n\t"
/* sq_<s>_bf16 and sq_<s>_f16 of shape s (S: the infix of its macros), and their entries. */
#define REF_SQ_SHAPE(s, S)                                                                         \
    REF_SQ_DEFINE(sq_##s##_bf16, REF_SQ_##S##_LOOP, REF_SQ_##S##_BF16, REF_SQ_ZERO7)               \
    REF_SQ_DEFINE(sq_##s##_f16, REF_SQ_##S##_LOOP, REF_SQ_##S##_F16, "")
#define REF_SQ_ENTRIES(s) , { "sq_" #s "_bf16", sq_##s##_bf16, 2 }, { "sq_" #s "_f16", sq_##s##_f16, 2 }

#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__) && defined(__GNUC__)
#define REF_FMA4(a, b, c, d)                                                                       \
    "vfmadd231pd %%ymm0, %%ymm0, %%ymm" #a "\n\tvfmadd231pd %%ymm1, %%ymm1, %%ymm" #b "\n\t"        \
    "vfmadd231pd %%ymm2, %%ymm2, %%ymm" #c "\n\tvfmadd231pd %%ymm3, %%ymm3, %%ymm" #d "\n\t"
#define REF_CVT4                                                                                   \
    "vcvtps2pd %%xmm0, %%ymm0\n\tvcvtps2pd %%xmm1, %%ymm1\n\tvcvtps2pd %%xmm2, %%ymm2\n\t"           \
    "vcvtps2pd %%xmm3, %%ymm3\n\t"
#define REF_SQ_YMM_BF16(o, a, b, c, d)                                                             \
    "vpunpcklwd " #o "(%0), %%xmm7, %%xmm0\n\tvpunpckhwd " #o "(%0), %%xmm7, %%xmm1\n\t"            \
    "vpunpcklwd " #o "+16(%0), %%xmm7, %%xmm2\n\tvpunpckhwd " #o "+16(%0), %%xmm7, %%xmm3\n\t"      \
    REF_CVT4 REF_FMA4(a, b, c, d)
#define REF_SQ_YMM_F16(o, a, b, c, d)                                                              \
    "vcvtph2ps " #o "(%0), %%ymm0\n\tvcvtph2ps " #o "+16(%0), %%ymm2\n\t"                         \
    "vextractf128 $1, %%ymm0, %%xmm1\n\tvextractf128 $1, %%ymm2, %%xmm3\n\t" REF_CVT4             \
    REF_FMA4(a, b, c, d)
REF_SQ_SHAPE(ymm, YMM)
#define REF_SQ_YMM_ENTRIES REF_SQ_ENTRIES(ymm)
#else
#define REF_SQ_YMM_ENTRIES
#endif

#if defined(__AVX512F__) && defined(__GNUC__)
/* 16 elements at o widened to f32 in ymm0 and ymm1 (bf16: interleaved with
 * zero words, f16: vcvtph2ps of 8), then each widened into a zmm and its
 * square added into run register a or b; a group of 32 feeds a, b, c, d (8
 * zmm hold the 64 lanes). */
#define REF_SQ_ZMM_W_BF16(o) "vpunpcklwd " #o "(%0), %%ymm7, %%ymm0\n\tvpunpckhwd " #o "(%0), %%ymm7, %%ymm1\n\t"
#define REF_SQ_ZMM_W_F16(o) "vcvtph2ps " #o "(%0), %%ymm0\n\tvcvtph2ps " #o "+16(%0), %%ymm1\n\t"
#define REF_SQ_ZMM_PAIR(W, o, a, b)                                                                \
    W(o) "vcvtps2pd %%ymm0, %%zmm0\n\tvcvtps2pd %%ymm1, %%zmm1\n\t"                                \
         "vfmadd231pd %%zmm0, %%zmm0, %%zmm" #a "\n\tvfmadd231pd %%zmm1, %%zmm1, %%zmm" #b "\n\t"
#define REF_SQ_ZMM_BF16(o, a, b, c, d)                                                             \
    REF_SQ_ZMM_PAIR(REF_SQ_ZMM_W_BF16, o, a, b) REF_SQ_ZMM_PAIR(REF_SQ_ZMM_W_BF16, o+32, c, d)
#define REF_SQ_ZMM_F16(o, a, b, c, d)                                                              \
    REF_SQ_ZMM_PAIR(REF_SQ_ZMM_W_F16, o, a, b) REF_SQ_ZMM_PAIR(REF_SQ_ZMM_W_F16, o+32, c, d)
/* 32 elements per group here: two groups per 64-element iteration. */
#define REF_SQ_ZMM_LOOP(G) "1:\n" G(0, 8, 9, 10, 11) G(64, 12, 13, 14, 15) "add $128, %0\n\tdec %1\n\tjnz 1b\n"
REF_SQ_SHAPE(zmm, ZMM)
#define REF_SQ_ZMM_ENTRIES REF_SQ_ENTRIES(zmm)
#else
#define REF_SQ_ZMM_ENTRIES
#endif

#if defined(__AVX512F__) && defined(__GNUC__) && __has_include(<sleef.h>)
#include <sleef.h>
/* |x|^3 of bf16 elements summed, with SLEEF's pow as the library's p-norms
 * call it, in the ymm (4 a call) and zmm (8) shapes: no scaling, runs, masks
 * or tails (x86 with AVX-512; the bench links SLEEF through gradckpt). */
static double pow_ymm_chunk(void *c, size_t lo, size_t len)
{
    const uint16_t *x = A(uint16_t, c) + lo;
    const __m256d p = _mm256_set1_pd(3.0), m = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX));
    __m256d s0 = _mm256_setzero_pd(), s1 = s0;
    for (size_t i = 0; i + 8 <= len; i += 8) {
        const __m256 f = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(x + i))), 16));
        s0 = _mm256_add_pd(s0, Sleef_powd4_u10avx2(_mm256_and_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(f)), m), p));
        s1 = _mm256_add_pd(s1, Sleef_powd4_u10avx2(_mm256_and_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)), m), p));
    }
    const __m256d s = _mm256_add_pd(s0, s1);
    return _mm256_cvtsd_f64(s);
}
static double pow_zmm_chunk(void *c, size_t lo, size_t len)
{
    const uint16_t *x = A(uint16_t, c) + lo;
    const __m512d p = _mm512_set1_pd(3.0);
    __m512d s0 = _mm512_setzero_pd(), s1 = s0;
    for (size_t i = 0; i + 16 <= len; i += 16) {
        const __m512 f = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(x + i))), 16));
        s0 = _mm512_add_pd(s0, Sleef_powd8_u10avx512f(_mm512_abs_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(f))), p));
        s1 = _mm512_add_pd(s1, Sleef_powd8_u10avx512f(_mm512_abs_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(f, 1))), p));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}
static double pow_ymm_bf16(void *c, int64_t n) { return over_chunks(pow_ymm_chunk, c, n); }
static double pow_zmm_bf16(void *c, int64_t n) { return over_chunks(pow_zmm_chunk, c, n); }
#define REF_POW_ENTRIES , { "pow_ymm_bf16", pow_ymm_bf16, 2 }, { "pow_zmm_bf16", pow_zmm_bf16, 2 }
#else
#define REF_POW_ENTRIES
#endif

static double read_16(void *c, int64_t n) { return over_chunks(read_chunk_16, c, n); }
static double read2_16(void *c, int64_t n) { return over_chunks(read2_chunk_16, c, n); }
static double widen_bf16(void *c, int64_t n) { return over_chunks(widen_chunk_bf16, c, n); }
static double widen_f16(void *c, int64_t n) { return over_chunks(widen_chunk_f16, c, n); }

static const struct {
    const char *name;
    gck_bench_body body;
    size_t bytes; /* per element: 2 per array read */
} refs16[] = { { "read_16", read_16, 2 }, { "read2_16", read2_16, 4 }, { "widen_bf16", widen_bf16, 2 },
               { "widen_f16", widen_f16, 2 } REF_BUSY_ENTRIES REF_CVT_ENTRIES REF_SQ_YMM_ENTRIES
               REF_SQ_ZMM_ENTRIES REF_POW_ENTRIES };

static const gck_bench_op refs[] = {
    GCK_BENCH_OP(read, 1),
    GCK_BENCH_OP(read2, 2),
    { { "widen_f32", NULL }, 1, { widen_f32, NULL } },
    GCK_BENCH_OP(rmw2, 3),
    GCK_BENCH_OP(rmw1, 2),
};

static const gck_bench_op refs3[] = {
    GCK_BENCH_OP(add3, 3),
    GCK_BENCH_OP(copy, 2),
};

void gck_bench_register_baseline(int threads)
{
    static const gck_bench_family fam = { .prefix = "ref_", .suffix = "", .tag = "ref" };
    static const gck_bench_family fam3 = {
        .prefix = "ref_", .suffix = "", .tag = "ref", .prepare = gck_bench_prepare_arrays3,
    };
    gck_bench_add_ops(&fam, refs, GCK_BENCH_COUNT(refs), threads);
    gck_bench_add_ops(&fam3, refs3, GCK_BENCH_COUNT(refs3), threads);
    /* registered by baseline-built code: this file's -march=native may use
     * instructions valgrind cannot run (icount.py runs the registration) */
    for (size_t i = 0; i < GCK_BENCH_COUNT(refs16); i++)
        gck_bench_add_ref16(refs16[i].name, refs16[i].body, refs16[i].bytes, threads);
}
