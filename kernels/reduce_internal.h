/* kernels/reduce_internal.h - the reduction driver: blocks, chunks, pairwise combining (internal).
 *
 * One driver serves the single-array kernels (api.c) and the list functions
 * (tensors.c), so the combining order of kernels_internal.h is written once.
 * Baseline code only (api.c, tensors.c, scalar.c): the SIMD files never
 * include it. */
#ifndef GCK_REDUCE_INTERNAL_H
#define GCK_REDUCE_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels_internal.h"

/* ---- pairwise combining of block results ------------------------------------
 * A binary counter: push block results left to right, each with the number
 * of blocks it covers, merging the top two while they cover equally many;
 * finish folds what is left from the right. Pushing the results of aligned
 * power-of-two runs of blocks (and one shorter run at the end) gives exactly
 * the tree "left = largest power of two below m" over the blocks. */
typedef struct gck_pairwise {
    double v[64];
    uint64_t w[64]; /* blocks covered by v[k] */
    int top;
} gck_pairwise;

static inline void gck_pairwise_push(gck_pairwise *p, double v, uint64_t w)
{
    while (p->top > 0 && p->w[p->top - 1] == w) {
        p->top--;
        v = p->v[p->top] + v;
        w *= 2;
    }
    p->v[p->top] = v;
    p->w[p->top] = w;
    p->top++;
}

static inline double gck_pairwise_finish(gck_pairwise *p)
{
    if (p->top == 0)
        return 0.0;
    double v = p->v[--p->top];
    while (p->top > 0) {
        p->top--;
        v = p->v[p->top] + v;
    }
    return v;
}

/* Blocks covered by len elements. */
static inline uint64_t gck_blocks_of(size_t len)
{
    return (uint64_t)((len + GCK_BLOCK - 1) / GCK_BLOCK);
}

/* ---- max |x| of chunk results --------------------------------------------------
 * The fold of chunk maxima: exact, so any split gives the same value. Start
 * with *m = 0.0 and *nan = 0; the result is *nan ? NAN : *m. */
static inline void gck_amax_fold(double *m, int *nan, double v)
{
    *nan |= isnan(v);
    *m = v > *m ? v : *m;
}

/* ---- one reduction, described as data so one driver serves all of them ---- */
typedef enum gck_reduce_op {
    GCK_R_SUMSQ_F64,
    GCK_R_SUMSQ_F32,
    GCK_R_SCALED_F64,
    GCK_R_DIST2_F64,
    GCK_R_DIST2_F32,
    GCK_R_ASUM_F64,
    GCK_R_ASUM_F32,
    GCK_R_POWSUM_F64,
    GCK_R_POWSUM_F32,
    GCK_R_DIV_SUMSQ_F64, /* these four read a and write m (which may be a) */
    GCK_R_DIV_SUMSQ_F32,
    GCK_R_SCALE_SUMSQ_F64,
    GCK_R_SCALE_SUMSQ_F32,
    GCK_R_SUMSQ_BF16, /* the 2-byte floats: read a (and b) as uint16_t */
    GCK_R_SUMSQ_F16,
    GCK_R_DIST2_BF16,
    GCK_R_DIST2_F16,
    GCK_R_ASUM_BF16,
    GCK_R_ASUM_F16,
    GCK_R_POWSUM_BF16,
    GCK_R_POWSUM_F16,
    GCK_R_AXPY_DIV_SUMSQ_F32, /* m = (m + w * a) / s or * s, f32 */
    GCK_R_AXPY_SCALE_SUMSQ_F32
} gck_reduce_op;

typedef struct gck_reduce_args {
    const gck_kernel_table *t; /* read once per public call */
    gck_reduce_op op;
    const void *a, *b; /* inputs */
    void *m;           /* the array a fused kernel updates */
    double s, p;       /* scale / divisor, exponent */
    double w;          /* the axpy forms' weight */
} gck_reduce_args;

/* Pairwise result of the blocks covering [lo, lo + len), on this thread; lo
 * must be a multiple of GCK_BLOCK. For lo a multiple of c blocks (c a power
 * of two) and len <= c blocks this is a subtree of the whole array's tree. */
GCK_INTERNAL double gck_reduce_range(const gck_reduce_args *r, size_t lo, size_t len);

/* The whole array's result, on OpenMP threads when n is large. */
GCK_INTERNAL double gck_reduce(const gck_reduce_args *r, size_t n);

/* 1 when a call over n elements should open an OpenMP region. */
GCK_INTERNAL int gck_use_threads(size_t n);

/* Elements per OpenMP work item for a call over n elements: a power of two
 * of blocks, so chunks are aligned subtrees and the split never shows. */
GCK_INTERNAL size_t gck_chunk_elems(size_t n);

/* The element types of the norms (0 and 1 keep the old is_f32 meaning). */
typedef enum gck_elem { GCK_E_F64 = 0, GCK_E_F32 = 1, GCK_E_BF16, GCK_E_F16 } gck_elem;

/* max |x| of an array of elem; NaN if any element is NaN. */
GCK_INTERNAL double gck_amax(const gck_kernel_table *t, const void *x, gck_elem elem, size_t n);

/* gck_l2norm_f64 of x given s, the canonical sum of squares of x (its first
 * pass): sqrt(s) when in range, else the rescaled second pass. */
GCK_INTERNAL double gck_l2norm_f64_from(const gck_kernel_table *t, const double *x, size_t n, double s);

/* General p (finite, not 1 or 2): how gck_pnorm scales the terms of an array
 * whose largest |x| is m (finite, > 0): the scale s for the powsum blocks,
 * and k, the power of two to undo afterwards (k = INT_MIN: s = 1/m). */
typedef struct gck_pnorm_plan {
    double s;
    int k;
} gck_pnorm_plan;
GCK_INTERNAL gck_pnorm_plan gck_pnorm_plan_for(double m, double p);
/* The norm from the scaled powsum `sum` of that plan. */
GCK_INTERNAL double gck_pnorm_root(gck_pnorm_plan plan, double m, double sum, double p);

/* 1/d when it is exact and normal (d = +-2^k, |k| <= 1022; f32: 126), else 0.
 * Then x * (1/d) rounds exactly as x / d for every x (both round the same
 * real number once), also under FTZ/DAZ, since neither d nor 1/d is
 * subnormal: the fused divide kernels may multiply instead. */
GCK_INTERNAL double gck_exact_recip_f64(double d);
GCK_INTERNAL float gck_exact_recip_f32(float d);

/* The fused op computing dst = x / d (F32: (float)d) and its factor *s:
 * SCALE_SUMSQ by the exact reciprocal when there is one, else DIV_SUMSQ. */
GCK_INTERNAL gck_reduce_op gck_div_sumsq_op(int is_f32, double d, double *s);

/* The kernels' reference pow (SLEEF's FMA variant where the CPU has FMA, see
 * scalar.c), for baseline code outside the blocks: the same bits on every
 * CPU with FMA, unlike libm's pow. Looked up once per process. */
typedef double (*gck_pow_fn)(double, double);
GCK_INTERNAL gck_pow_fn gck_pow_ref(void);

#endif /* GCK_REDUCE_INTERNAL_H */
