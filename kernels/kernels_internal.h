/* kernels/kernels_internal.h - the kernel table, the canonical reduction shape (internal). */
#ifndef GCK_KERNELS_INTERNAL_H
#define GCK_KERNELS_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <gradckpt/isa.h>

#include "attributes.h"
#include "gck_isa_config.h"
#include "kernel_list.h"


/*
 * The canonical reduction shape. Every ISA reproduces it exactly.
 *
 * GCK_LANES = 64 f64 accumulators inside a block: element i of the block is
 *   added to lane (i mod 64), in increasing i, as lane = lane + term (a
 *   separate multiply and add: no FMA, so the scalar reference is plain C and
 *   needs no libm fma()). 64 is a multiple of every vector width (2 NEON,
 *   4 AVX2, 8 AVX-512 doubles), and 64 independent chains hide the 3-4 cycle
 *   add latency with 8 zmm accumulators on AVX-512; AVX2 (16 ymm registers)
 *   and NEON walk a block's lanes in two halves, which is the same order per
 *   lane. Elements past n in the last stripe are absent, so SIMD tails may
 *   load zeros there: lane + (+0) == lane exactly, since lanes start at +0.0
 *   and only ever add squares (>= +0 or NaN).
 * Runs: a lane's chain restarts every GCK_RUN = 512 elements (8 stripes of
 *   64): the run's lanes start at +0.0, take their 8 terms, and are then
 *   added into the block's lanes (block lane = block lane + run lane). Why:
 *   squares of f32 values (and of short f64 differences) are exact and have
 *   structured low bits (m^2 mod 8 is 0, 1 or 4), so long chains of
 *   similar-magnitude squares round with a bias: 128-term chains were
 *   measured 12 u off, 4 ulp on the norm. Chains of 8 keep the bias under a
 *   unit; the extra adds cost one vector add per stripe every 8 stripes.
 * Lane fold: for h = 32, 16, 8, 4, 2, 1: lane[j] = lane[j] + lane[j + h]
 *   (j < h); the block result is lane[0]. Halving matches how registers are
 *   folded (zmm pairs, then 256/128-bit halves, then adjacent lanes).
 * GCK_BLOCK = 8192 elements per block: long enough that the fold costs < 1 %
 *   of the block, short enough to be one OpenMP-free unit of work and to keep
 *   the outer lane chains at 16 runs (tests/test_kernels_accuracy.c states
 *   the error bound).
 * Blocks are combined by a pairwise tree: pairwise(b[0..m)) = b[0] for m == 1,
 *   else pairwise(b[0..h)) + pairwise(b[h..m)) with h the largest power of two
 *   below m. Every left subtree is an aligned power-of-two range, so groups of
 *   GCK_CHUNK_BLOCKS blocks can be reduced by any thread and combined by the
 *   same rule with the same result: thread count never changes the bits.
 *
 * NaN payloads are not reproduced (compilers may commute a + b); every NaN
 * result is a NaN on every ISA.
 */
#define GCK_LANES 64
#define GCK_BLOCK 8192
#define GCK_RUN 512 /* a multiple of GCK_LANES dividing GCK_BLOCK */
#define GCK_CHUNK_BLOCKS 16 /* one OpenMP work item: 128 Ki elements */

typedef struct gck_kernel_table {
    gck_isa isa;
    const char *name; /* == gck_isa_name(isa) */
#define GCK_SLOT(slot, ret, params) ret(*slot) params;
    GCK_KERNEL_LIST(GCK_SLOT)
#undef GCK_SLOT
} gck_kernel_table;

extern GCK_INTERNAL const gck_kernel_table gck_kernels_scalar; /* always present */
#if GCK_HAVE_AVX2
extern GCK_INTERNAL const gck_kernel_table gck_kernels_avx2;
#endif
#if GCK_HAVE_AVX512
extern GCK_INTERNAL const gck_kernel_table gck_kernels_avx512;
#endif
#if GCK_HAVE_NEON
extern GCK_INTERNAL const gck_kernel_table gck_kernels_neon;
#endif

/* ---- each ISA file's table, generated from the slot list --------------------
 * An ISA file starts with `#define GCK_ISA <isa>` (its name: scalar, avx2,
 * avx512, neon) before any include, defines one function gck_<slot>_<isa>
 * per slot of GCK_KERNEL_LIST (by hand or through elementwise.h), and ends
 * with GCK_DEFINE_KERNEL_TABLE(GCK_ISA_<ISA>). The prototypes below come from
 * the list too, so a function with another signature, a misnamed one or a
 * missing one does not compile. */
#define GCK_PASTE_(a, b) a##b
#define GCK_PASTE(a, b) GCK_PASTE_(a, b)
#define GCK_STR_(a) #a
#define GCK_STR(a) GCK_STR_(a)
#ifdef GCK_ISA
#define GCK_ISA_FN(slot) GCK_PASTE(gck_##slot##_, GCK_ISA)
#define GCK_KERNEL_PROTO(slot, ret, params) static ret GCK_ISA_FN(slot) params;
GCK_KERNEL_LIST(GCK_KERNEL_PROTO)
#undef GCK_KERNEL_PROTO
#define GCK_KERNEL_ENTRY(slot, ret, params) .slot = GCK_ISA_FN(slot),
#define GCK_DEFINE_KERNEL_TABLE(isa_enum)                                      \
    const gck_kernel_table GCK_PASTE(gck_kernels_, GCK_ISA) = {                 \
        .isa = (isa_enum), .name = GCK_STR(GCK_ISA), GCK_KERNEL_LIST(GCK_KERNEL_ENTRY)}
#endif

/* ---- CPU features, probed once -----------------------------------------------
 * dispatch.c owns the probe (cpu.c reads the raw bits): the first caller runs
 * it, every later one reads the same answers, so no kernel asks CPUID on a
 * hot path. */
typedef struct gck_cpu_features {
    unsigned char can_run[GCK_ISA_COUNT]; /* this CPU/OS runs code built with the ISA's flags */
    unsigned char fma;                    /* fused multiply-add usable (x86: CPUID + OS AVX state) */
} gck_cpu_features;
GCK_INTERNAL const gck_cpu_features *gck_cpu_features_get(void);
/* The probe's tuning choices, which change speed only, never a bit:
 *   zmm_widen     1 if the AVX-512 f32/bf16/f16 sums widen 8 per zmm
 *                 (gck_cpu_zmm_widen, GRADCKPT_AVX512_WIDEN);
 *   page_streams  1 or 4: pages the x86 elementwise kernels walk at once
 *                 (gck_cpu_page_streams, GRADCKPT_PAGE_STREAMS).
 * Relaxed atomics rather than gck_cpu_features fields, for the ISA files'
 * loops to read without a call (a call in a kernel cost tiny tensors 5-10 %
 * in saved registers), written once by the probe (gck_cpu_features_get). A
 * kernel reached before it (through gck_kernels_compiled) reads 0, the ymm
 * shape and the walk in order, which give the same bits. */
extern GCK_INTERNAL _Atomic unsigned char gck_tune_zmm_widen, gck_tune_page_streams;
#define GCK_TUNE(v) atomic_load_explicit(&gck_tune_##v, memory_order_relaxed)

/* The table for isa if it is compiled in and this CPU/OS can run it, else NULL. */
GCK_INTERNAL const gck_kernel_table *gck_kernels_for(gck_isa isa);
/* The table for isa if it is compiled in, whether or not the CPU can run it. */
GCK_INTERNAL const gck_kernel_table *gck_kernels_compiled(gck_isa isa);
/* The active table; never NULL. Read it once per public call. */
GCK_INTERNAL const gck_kernel_table *gck_kernels_active(void);

/* The lane fold of the canonical shape, shared by the scalar reference and
 * the SIMD tails that spill lanes to memory. */
static inline double gck_fold_lanes(double lane[GCK_LANES])
{
    for (size_t h = GCK_LANES / 2; h >= 1; h /= 2)
        for (size_t j = 0; j < h; j++)
            lane[j] = lane[j] + lane[j + h];
    return lane[0];
}

/* The 2-byte reductions prefetch each stripe's 128 bytes twice (and y's too
 * when it is not NULL): into L1 2 KiB ahead, into L2 8 KiB ahead. Their
 * widening keeps the core busy, so the hardware prefetcher, which stops at
 * every 4 KiB page, ran too little ahead: over 64 Mi bf16 elements (an
 * Intel core) sumsq read at 0.32-0.39 of the plain read loop's rate without
 * prefetching, about 0.7 with the L1 prefetch alone, 0.83 with both in the
 * zmm shape (0.91-1.01 in the ymm shape it now takes); 1-4 KiB and 6-16 KiB
 * measured alike, a non-temporal hint ran at half.
 * Two streams (dist2) take the L2 prefetch only 2.5 KiB ahead: with both at
 * 8 KiB dist2_bf16 read 0.78-0.80 of ref_read2_16 over 64 Mi elements (same
 * Intel VM), at 2-3 KiB 0.87-0.94, with the L1 prefetch alone 0.86-0.90.
 * One helper per stream count: a single one taking y or NULL left the test
 * of y + s against NULL in every stripe of dist2, and that loop shape read
 * 0.84-0.88 of ref_read2_16 on AVX2 where it now reads 0.89-0.92 (64 Mi
 * elements; AVX-512 gained about 2 %).
 * A prefetch past the end of the array is harmless: it never faults. */
#define GCK_PREFETCH16_L1 2048
#define GCK_PREFETCH16_L2 8192
#define GCK_PREFETCH16_L2_PAIR 2560
/* The lines lines of 64 bytes at p + dist: into L1, or into L2. The order
 * of the prefetches is part of the tuning: the 2-byte kernels issue both L1
 * lines before both L2 ones, the f32 kernels each line's L1 and L2 prefetch
 * together (one helper interleaving them for the 2-byte kernels too read
 * 64 Mi f16 elements at 6.6-7.9 GB/s instead of 10.9-11.3 on AVX-512,
 * 8.6-9.9 instead of 10.5-10.9 on AVX2; the f32 kernels grouped, 5 % below
 * interleaved). */
static inline void gck_prefetch_l1(const void *p, int lines, size_t dist)
{
    for (int k = 0; k < lines; k++)
        __builtin_prefetch((const char *)p + dist + 64 * k, 0, 3);
}
static inline void gck_prefetch_l2(const void *p, int lines, size_t dist)
{
    for (int k = 0; k < lines; k++)
        __builtin_prefetch((const char *)p + dist + 64 * k, 0, 2);
}
static inline void gck_prefetch_pair16(const uint16_t *x, const uint16_t *y)
{
    gck_prefetch_l1(x, 2, GCK_PREFETCH16_L1);
    gck_prefetch_l2(x, 2, GCK_PREFETCH16_L2_PAIR);
    gck_prefetch_l1(y, 2, GCK_PREFETCH16_L1);
    gck_prefetch_l2(y, 2, GCK_PREFETCH16_L2_PAIR);
}
static inline void gck_prefetch_stripe16(const uint16_t *x)
{
    gck_prefetch_l1(x, 2, GCK_PREFETCH16_L1);
    gck_prefetch_l2(x, 2, GCK_PREFETCH16_L2);
}

/* The f32 reductions (sumsq, asum, dist2 over f32 inputs) prefetch each
 * stripe's 4 lines per input: into L1 2 KiB ahead, and a single input also
 * into L2 4 KiB ahead. Without it, at 64 Mi elements on the Intel VM,
 * sumsq_f32 read 0.91 of ref_read_f32 and dist2_f32 0.80 of ref_read2_f32
 * (the f64 kernels 0.98-1.0); with it 1.0-1.1 and 0.93-0.96 (L1 at 1-3 KiB
 * alike, 4 KiB worse; L2 alone 2-8 KiB 0.8-0.9 for dist2; the L2 prefetch
 * for dist2 too cost 2-8 % in L2, for sumsq about 1 %). The fused f32
 * kernels (div/scale_sumsq, also after an axpy) take them too: 64 Mi
 * div_sumsq_f32 16.2 -> 23.7 GB/s on AVX2 (0.78 -> 1.14 of ref_rmw1_f32),
 * 18.5 -> 23.0-24.3 on AVX-512, 2-5 % slower in L2. */
#define GCK_PREFETCH32_L1 2048
#define GCK_PREFETCH32_L2 4096
static inline void gck_prefetch_stripe32(const float *x)
{
    for (int k = 0; k < 4; k++) {
        gck_prefetch_l1((const char *)x + 64 * k, 1, GCK_PREFETCH32_L1);
        gck_prefetch_l2((const char *)x + 64 * k, 1, GCK_PREFETCH32_L2);
    }
}
static inline void gck_prefetch_pair32(const float *x, const float *y)
{
    for (int k = 0; k < 4; k++) {
        gck_prefetch_l1((const char *)x + 64 * k, 1, GCK_PREFETCH32_L1);
        gck_prefetch_l1((const char *)y + 64 * k, 1, GCK_PREFETCH32_L1);
    }
}

/* ---- the reductions over floats: f32 and the 2-byte floats -------------------
 * sumsq, dist2, asum and powsum over f32, bf16 and f16 are one kernel per
 * term over the elements widened exactly to f64 (the 2-byte ones through
 * their f32 value), so each 2-byte kernel is the f32 kernel of the widened
 * array. A SIMD file defines GCK_FLOAT_LIKE_BLOCK(term, elem, a, b, s, p, n)
 * (always inline: term and elem are constants that fold away), the block
 * reduction of that term with b the second array of dist2 and s, p powsum's
 * scale and exponent, and gets the twelve slots from
 * GCK_DEFINE_FLOAT_LIKE_BLOCKS(). */
typedef enum gck_fl_term { GCK_FL_SUMSQ, GCK_FL_DIST2, GCK_FL_ASUM, GCK_FL_POWSUM } gck_fl_term;
typedef enum gck_fl_elem { GCK_FL_F32, GCK_FL_BF16, GCK_FL_F16 } gck_fl_elem;
#define GCK_FL_SLOTS(t, E)                                                     \
    static double GCK_ISA_FN(sumsq_##t##_block)(const GCK_CT(t) *x, size_t n)  \
    {                                                                          \
        return GCK_FLOAT_LIKE_BLOCK(GCK_FL_SUMSQ, E, x, NULL, 0.0, 0.0, n);    \
    }                                                                          \
    static double GCK_ISA_FN(dist2_##t##_block)(const GCK_CT(t) *a, const GCK_CT(t) *b, size_t n) \
    {                                                                          \
        return GCK_FLOAT_LIKE_BLOCK(GCK_FL_DIST2, E, a, b, 0.0, 0.0, n);       \
    }                                                                          \
    static double GCK_ISA_FN(asum_##t##_block)(const GCK_CT(t) *x, size_t n)   \
    {                                                                          \
        return GCK_FLOAT_LIKE_BLOCK(GCK_FL_ASUM, E, x, NULL, 0.0, 0.0, n);     \
    }                                                                          \
    static double GCK_ISA_FN(powsum_##t##_block)(const GCK_CT(t) *x, double p, double s, size_t n) \
    {                                                                          \
        return GCK_FLOAT_LIKE_BLOCK(GCK_FL_POWSUM, E, x, NULL, s, p, n);       \
    }
#define GCK_DEFINE_FLOAT_LIKE_BLOCKS()                                         \
    GCK_FL_SLOTS(f32, GCK_FL_F32) GCK_FL_SLOTS(bf16, GCK_FL_BF16) GCK_FL_SLOTS(f16, GCK_FL_F16)

/* The byte-plane kernels' definition for elements [i0, i1) of a call over n
 * elements (planes stay n bytes apart): the SIMD files' heads and tails. */
static inline void gck_xor_shuffle_range(uint8_t *dst, const void *a, const void *b, size_t n, size_t esz,
                                         size_t i0, size_t i1, int rot)
{
    const uint8_t *pa = a, *pb = b;
    for (size_t i = i0; i < i1; i++) {
        uint8_t t[8];
        for (size_t k = 0; k < esz; k++)
            t[k] = (uint8_t)(pa[i * esz + k] ^ (pb != NULL ? pb[i * esz + k] : 0));
        for (size_t k = 0; k < esz; k++) /* rot: the element rotated left one bit (byte k-1's top bit in) */
            dst[k * n + i] = rot ? (uint8_t)((t[k] << 1) | (t[(k + esz - 1) % esz] >> 7)) : t[k];
    }
}

/* The plane pointers into a local array, which no store of the kernel can
 * reach: read through the caller's array, every byte stored may change them
 * (uint8_t stores alias anything), so each is reloaded per access; the
 * scalar kernel ran 2-5x slower and AVX2's 30 % at 64 Ki f64 so. */
static inline void gck_planes_local(const uint8_t *pl[8], const uint8_t *const *planes, size_t esz)
{
    for (size_t k = 0; k < esz; k++)
        pl[k] = planes[k];
}

static inline void gck_unshuffle_xor_range(void *dst, const uint8_t *const *pl, const void *b, size_t esz, size_t i0,
                                           size_t i1, int rot)
{
    uint8_t *pd = dst;
    const uint8_t *pb = b;
    for (size_t i = i0; i < i1; i++)
        for (size_t k = 0; k < esz; k++) {
            /* rot: rotated back right one bit (byte k+1's low bit in at the top) */
            const uint8_t v = rot ? (uint8_t)((pl[k][i] >> 1) | (pl[(k + 1) % esz][i] << 7)) : pl[k][i];
            pd[i * esz + k] = (uint8_t)(v ^ (pb != NULL ? pb[i * esz + k] : 0));
        }
}

/* The sparse split and merge (kernel_list.h) over bytes [i0, n), i0 a
 * multiple of 8, m values already packed / taken: the reference and the
 * SIMD files' tails. The split stores a byte before it knows whether it
 * keeps it (at vals[m], m <= i < n) and keeps it by counting it. */
static inline size_t gck_sparse_split_range(uint8_t *bits, uint8_t *vals, const uint8_t *x, size_t n, uint8_t fill,
                                            size_t i0, size_t m)
{
    for (size_t i = i0; i < n; i += 8) {
        const size_t k = n - i < 8 ? n - i : 8;
        unsigned b = 0;
        for (size_t j = 0; j < k; j++) {
            const unsigned d = x[i + j] != fill;
            vals[m] = x[i + j];
            m += d;
            b |= d << j;
        }
        bits[i / 8] = (uint8_t)b;
    }
    return m;
}

static inline void gck_sparse_merge_range(uint8_t *dst, const uint8_t *bits, const uint8_t *vals, size_t n,
                                          uint8_t fill, size_t i0, size_t m)
{
    for (size_t i = i0; i < n; i++)
        dst[i] = bits[i / 8] >> (i % 8) & 1 ? vals[m++] : fill;
}

/* The SIMD files' 8-byte steps (sparse_tables.c): row b of pack_ctl gathers
 * the bytes whose bits are set in b; row b of unpack_ctl puts value k at the
 * k-th set bit and byte 8 (the fill) elsewhere. */
extern GCK_INTERNAL const uint8_t gck_sparse_pack_ctl[256][8];
extern GCK_INTERNAL const uint8_t gck_sparse_unpack_ctl[256][8];
extern GCK_INTERNAL const uint8_t gck_sparse_count[256];

/* Byte-plane outputs of at least this many bytes are written with
 * non-temporal stores (x86): a store that misses makes the CPU read the line
 * first, so a plain store stream costs 4 transfers per element where 3 are
 * needed (Zen 4, 16 Mi elements: plain stores reach ~0.65x the bytes/s of
 * acc += x, streaming ~0.9x). Below it the output likely still sits in L2/L3
 * when the caller reads it next (to compress it), and streaming would evict
 * it. 8 MiB: more than one core's share of a typical L3. */
#define GCK_BYTES_NT_MIN ((size_t)8 << 20)

/* The table entries of an ISA's byte-plane kernels, gck_xor_shuffle_<isa>
 * and gck_unshuffle_xor_<isa> (and their _rot forms), over always-inline
 * templates gck_xor_shuffle_<isa>_t(dst, a, b, n, ESZ, XB, ROT) and
 * gck_unshuffle_xor_<isa>_t(dst, planes, b, n, ESZ, XB, ROT) (plane k read
 * from planes[k]: the planes need not be adjacent): each (element size,
 * with or without b, rotated or not) gets its own instance with the
 * constants folded in. */
#define GCK_BYTES_DISPATCH(fn, d, s, b, n, esz, rot)                           \
    do {                                                                       \
        switch ((esz) * 2 + ((b) != NULL)) {                                   \
        case 2: fn(d, s, b, n, 1, 0, rot); break;                              \
        case 3: fn(d, s, b, n, 1, 1, rot); break;                              \
        case 4: fn(d, s, b, n, 2, 0, rot); break;                              \
        case 5: fn(d, s, b, n, 2, 1, rot); break;                              \
        case 8: fn(d, s, b, n, 4, 0, rot); break;                              \
        case 9: fn(d, s, b, n, 4, 1, rot); break;                              \
        case 16: fn(d, s, b, n, 8, 0, rot); break;                             \
        default: fn(d, s, b, n, 8, 1, rot); break;                             \
        }                                                                      \
    } while (0)

#define GCK_DEFINE_BYTES_ENTRIES(isa)                                                        \
    static void gck_xor_shuffle_##isa(uint8_t *dst, const void *a, const void *b, size_t n, size_t esz) \
    {                                                                                        \
        GCK_BYTES_DISPATCH(gck_xor_shuffle_##isa##_t, dst, (const uint8_t *)a, (const uint8_t *)b, n, esz, 0); \
    }                                                                                        \
    static void gck_unshuffle_xor_##isa(void *dst, const uint8_t *const *pl, const void *b, size_t n, size_t esz) \
    {                                                                                        \
        GCK_BYTES_DISPATCH(gck_unshuffle_xor_##isa##_t, (uint8_t *)dst, pl, (const uint8_t *)b, n, esz, 0); \
    }                                                                                        \
    static void gck_xor_shuffle_rot_##isa(uint8_t *dst, const void *a, const void *b, size_t n, size_t esz) \
    {                                                                                        \
        GCK_BYTES_DISPATCH(gck_xor_shuffle_##isa##_t, dst, (const uint8_t *)a, (const uint8_t *)b, n, esz, 1); \
    }                                                                                        \
    static void gck_unshuffle_xor_rot_##isa(void *dst, const uint8_t *const *pl, const void *b, size_t n, size_t esz) \
    {                                                                                        \
        GCK_BYTES_DISPATCH(gck_unshuffle_xor_##isa##_t, (uint8_t *)dst, pl, (const uint8_t *)b, n, esz, 1); \
    }

#endif /* GCK_KERNELS_INTERNAL_H */
