/* bench/bench.h - what the C benchmark files share: sizes, input arrays, op tables, registration. */
#ifndef GCK_BENCH_H
#define GCK_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shim.h"

/* Element counts: 16, 256 (per-call overhead), then 1 Ki .. 64 Mi by 4 (in
 * L1/L2 up to 16-64 Ki, in DRAM from 4-16 Mi on). 2-thread runs use only 4 Mi and up: below that one thread
 * is faster than starting a second one. */
const int64_t *gck_bench_sizes(int threads, size_t *count);

/* The same with 512 Mi elements (1 GiB of 2-byte values) added on 1 thread:
 * the 2-byte kernels and their references, whose 64 Mi arrays (128 MiB) a
 * large last-level cache may partly hold (480 MiB on the Intel VM of
 * README's third machine), so 64 Mi there mixes cache and DRAM. */
const int64_t *gck_bench_sizes16(int threads, size_t *count);

/*
 * Inputs shared by every benchmark of one element type: two arrays a and b of
 * random values in [-1, 1] (a sum of four uniforms: normal-ish, never
 * denormal), 64-byte aligned. They are allocated when a run first needs
 * n elements and reused by every smaller run (a prefix), so peak memory is
 * 2 x 64 Mi x (8 + 4) bytes = 1.5 GiB. Reductions read a (and b); elementwise
 * kernels update a (acc) from b (x).
 */
typedef struct gck_bench_arrays {
    size_t elem;   /* bytes per element: 1 (bytes), 2 (bf16/f16), 4 (f32) or 8 (f64) */
    size_t cap;    /* elements allocated */
    void *a, *b;
    void *c;       /* output of the kernels that write a third array; NULL until needed */
    size_t ccap;   /* elements of c */
    unsigned flip; /* elementwise bodies alternate a sign with it */
} gck_bench_arrays;

/* The arrays of `elem`-byte elements (1, 2, 4 or 8). */
gck_bench_arrays *gck_bench_arrays_of(size_t elem);
/* gck_bench_prepare for a gck_bench_arrays ctx: grows it to n elements. */
const char *gck_bench_prepare_arrays(void *ctx, int64_t n, int threads);
/* The same, and an output array c of n elements (filled once so its pages
 * exist; contents arbitrary): for kernels that read a and b and write a
 * separate array (STREAM's "add"). */
const char *gck_bench_prepare_arrays3(void *ctx, int64_t n, int threads);
void gck_bench_free_arrays(void);

#define GCK_BENCH_A(T, ctx) ((T *)((gck_bench_arrays *)(ctx))->a)
#define GCK_BENCH_B(T, ctx) ((const T *)((gck_bench_arrays *)(ctx))->b)
#define GCK_BENCH_C(T, ctx) ((T *)((gck_bench_arrays *)(ctx))->c)

/* The axpy weight of this iteration: alternating +-0.5 keeps acc a random
 * walk of rounding errors instead of a ramp, so values stay near [-1, 1]. */
static inline double gck_bench_next_weight(void *ctx)
{
    return (((gck_bench_arrays *)ctx)->flip ^= 1u) ? 0.5 : -0.5;
}
/* The scale factor: -1 keeps |x| unchanged for any number of iterations,
 * and no kernel special-cases it (OpenBLAS returns early for alpha == 1). */
#define GCK_BENCH_SCALE (-1.0)

/* One operation in f32 and f64: the row type of every bench file's table. */
typedef struct gck_bench_op {
    const char *name[2];    /* full op names, [0] f32, [1] f64: "sumsq_f32"   */
    int arrays;             /* arrays streamed per element, reads + writes    */
    gck_bench_body body[2]; /* ctx is gck_bench_arrays_of(4) / (8); NULL: none */
} gck_bench_op;

/* A row for ops named <op>_f32 / <op>_f64 with bodies of the same names. */
#define GCK_BENCH_OP(op, arrays) { { #op "_f32", #op "_f64" }, (arrays), { op##_f32, op##_f64 } }

/* How one table is registered. */
typedef struct gck_bench_family {
    const char *prefix;        /* before the op name: "ref_", "naive_", ""        */
    const char *suffix;        /* after it, before "/<threads>t": "/avx2" or ""   */
    const char *tag;           /* label "<tag> f64"                               */
    gck_bench_prepare prepare; /* NULL: gck_bench_prepare_arrays                  */
    int select_isa;
    gck_isa isa;
} gck_bench_family;

/* Registers every op of the table in both types as
 * "<prefix><name><suffix>/<threads>t/<n>" over gck_bench_sizes(threads). */
void gck_bench_add_ops(const gck_bench_family *fam, const gck_bench_op *ops, size_t nops, int threads);

/* Registers "ref_<name>/<threads>t/<n>" over 2-byte elements
 * (gck_bench_arrays_of(2)) over gck_bench_sizes16(threads); bytes_per_elem:
 * 2 per array the body reads. */
void gck_bench_add_ref16(const char *name, gck_bench_body body, size_t bytes_per_elem, int threads);

#define GCK_BENCH_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Model shapes (bench_models.c): the checkpointer's and the trainer's
 * benchmarks run on the same tensors and the same inputs. A model's buffers
 * are what a trainer holds: its micro-batch gradient `in` (one input reused
 * by every micro-batch, random in [-0.005, 0.005], the same values in every
 * run) and its gradient buffer `grad` (the target of accumulation, zeroed),
 * each one contiguous buffer of `params` floats with tensor t at in[t] /
 * grad[t], back to back.
 */
#define GCK_BENCH_NMODELS 5
typedef struct gck_bench_model {
    const char *name; /* gpt2s, small2k, small147, resnet50, gpt120k */
    size_t nt;        /* tensors */
    size_t *len;      /* their element counts */
    char **ids;       /* their names */
    size_t params;    /* sum of len */
    float *in_buf, *grad_buf; /* NULL until gck_bench_model_buffers */
    float **in, **grad;       /* nt pointers into them */
} gck_bench_model;

/* All GCK_BENCH_NMODELS models, shapes built on first use. */
gck_bench_model *gck_bench_models(void);
gck_bench_model *gck_bench_model_named(const char *name);
/* Allocates and fills m's buffers once (kept until freed): NULL, or a
 * message for the shim's SkipWithError. */
const char *gck_bench_model_buffers(gck_bench_model *m);
void gck_bench_model_free_buffers(gck_bench_model *m);

/* The hand loop of bench_trainer_hand.c: one step over a trainer's
 * contiguous gradient g of n floats with k micro-batches of input x;
 * returns the (float) global norm before clipping to max_norm. The f64sum
 * variant sums the squares in double. */
double gck_bench_hand_step(float *restrict g, const float *restrict x, size_t n, int k, float max_norm);
double gck_bench_hand_step_f64sum(float *restrict g, const float *restrict x, size_t n, int k, float max_norm);
double gck_bench_hand_step_fused(float *restrict g, const float *restrict x, size_t n, int k, float max_norm);
/* The same with the sum kept in s (n floats) and the clipped mean written
 * into g: the checkpointer path's three buffers. */
double gck_bench_hand_step_staged(float *restrict g, float *restrict s, const float *restrict x, size_t n, int k,
                                  float max_norm);

/* Each bench file registers its benchmarks for 1 or 2 threads. */
void gck_bench_register_kernels(int threads);
void gck_bench_register_baseline(int threads);
void gck_bench_register_naive(int threads);
void gck_bench_register_openblas(int threads);
void gck_bench_register_checkpointer(int threads);
void gck_bench_register_snapshot(int threads);
void gck_bench_register_store(int threads);
void gck_bench_register_trainer(int threads);
void gck_bench_register_orders(int threads);

#endif /* GCK_BENCH_H */
