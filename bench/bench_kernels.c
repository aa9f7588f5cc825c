/* bench/bench_kernels.c - every public kernel on every ISA: "sumsq_f64/avx512/1t/<n>".
 *
 * The benchmark list below has one line per public kernel, saying how it is
 * called and what it streams; the registration walks kernels/api_list.h and
 * takes each kernel's line, so a kernel listed there without a line here
 * does not compile. ISAs this build or CPU lacks are registered too and
 * reported as skipped. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gradckpt/isa.h>
#include <gradckpt/kernels.h>

#include "api_list.h"
#include "bench.h"

/* The pools a kernel's benchmark uses: reductions read x's arrays a (and b);
 * kernels that write update acc's array a from x's array b. */
typedef struct kctx {
    gck_bench_arrays *acc, *x;
} kctx;

#define KC(c) ((const kctx *)(c))
#define XA(T, c) GCK_BENCH_A(T, KC(c)->x)
#define XB(T, c) GCK_BENCH_B(T, KC(c)->x)
#define ACC(T, c) GCK_BENCH_A(T, KC(c)->acc)
#define OUT(T, c) GCK_BENCH_C(T, KC(c)->acc)

static const char *prepare_kctx(void *ctx, int64_t n, int threads)
{
    const char *e = gck_bench_prepare_arrays(KC(ctx)->acc, n, threads);
    return e != NULL ? e : gck_bench_prepare_arrays(KC(ctx)->x, n, threads);
}

/* Byte planes also write a third array, c. */
static const char *prepare_kctx3(void *ctx, int64_t n, int threads)
{
    return gck_bench_prepare_arrays3(KC(ctx)->x, n, threads);
}

/* Conversions write acc's array c. */
static const char *prepare_kctx_out(void *ctx, int64_t n, int threads)
{
    const char *e = gck_bench_prepare_arrays3(KC(ctx)->acc, n, threads);
    return e != NULL ? e : gck_bench_prepare_arrays(KC(ctx)->x, n, threads);
}

/* How a kernel is registered. */
typedef enum kb_kind {
    KB_THREADED, /* "<name>/<isa>/<t>t/<n>", 1 and 2 threads */
    KB_OUT,      /* the same, writing acc's array c (conversions) */
    KB_CALLER,   /* runs on the calling thread only: 1t */
    KB_HASH,     /* "<name>/1t/<bytes>": ISA-independent, sizes in bytes */
} kb_kind;

/* One benchmark family of a kernel. */
typedef struct kbench {
    gck_bench_body body;
    const char *suffix; /* after the kernel's name: "" or an element type ("_f32") */
    const char *acc_t, *x_t; /* element types, for the label: "f64", "f32->f64" */
    size_t acc, x;      /* element bytes of the written and the read pools */
    double bytes;       /* bytes read + written per element: bytes_per_second */
    kb_kind kind;
} kbench;

/* ---- the benchmark list -------------------------------------------------------
 * Elementwise bodies return 0: the kernels write memory the caller can see, so
 * the calls cannot be dropped. add grows acc by at most 1 per iteration, a
 * ramp that stays far from overflow; axpy alternates w = +-0.5 and scale,
 * div and scale_sumsq use -1, so values stay bounded (bench.h). */
#define SZ(t) sizeof(GCK_CT(t))
#define ONE(name, A, X, bytes, kind) \
    static const kbench bench_##name[] = {{bench_body_##name, "", #A, #X, SZ(A), SZ(X), (bytes), (kind)}, {0}};

/* reads x once */
#define REDUCE(name, X)                                                        \
    static double bench_body_##name(void *c, int64_t n)                        \
    {                                                                          \
        return gck_##name(XA(GCK_CT(X), c), (size_t)n);                        \
    }                                                                          \
    ONE(name, X, X, SZ(X), KB_THREADED)
/* reads a and b */
#define REDUCE2(name, X)                                                       \
    static double bench_body_##name(void *c, int64_t n)                        \
    {                                                                          \
        return gck_##name(XA(GCK_CT(X), c), XB(GCK_CT(X), c), (size_t)n);      \
    }                                                                          \
    ONE(name, X, X, 2 * SZ(X), KB_THREADED)
/* p = 3, the general path: a max |x| pass, then a pass of pow terms, so x
 * is read twice; and p = inf ("<name>_inf": max |x|, amax), one read */
#define PNORM(name, X)                                                         \
    static double bench_body_##name(void *c, int64_t n)                        \
    {                                                                          \
        return gck_##name(XA(GCK_CT(X), c), (size_t)n, 3.0);                   \
    }                                                                          \
    static double bench_body_##name##_inf(void *c, int64_t n)                  \
    {                                                                          \
        return gck_##name(XA(GCK_CT(X), c), (size_t)n, INFINITY);              \
    }                                                                          \
    static const kbench bench_##name[] = {                                     \
        {bench_body_##name, "", #X, #X, SZ(X), SZ(X), 2 * SZ(X), KB_THREADED}, \
        {bench_body_##name##_inf, "_inf", #X, #X, SZ(X), SZ(X), SZ(X), KB_THREADED}, {0}};
/* in place (dst = x, as a clip does): reads and writes x */
#define FUSED(name, X)                                                         \
    static double bench_body_##name(void *c, int64_t n)                        \
    {                                                                          \
        GCK_CT(X) *x = XA(GCK_CT(X), c);                                       \
        return gck_##name(x, x, (GCK_CT(X))GCK_BENCH_SCALE, (size_t)n);        \
    }                                                                          \
    ONE(name, X, X, 2 * SZ(X), KB_THREADED)
/* reads acc and x, writes acc */
#define ADD(name, A, X)                                                        \
    static double bench_body_##name(void *c, int64_t n)                        \
    {                                                                          \
        gck_##name(ACC(GCK_CT(A), c), XB(GCK_CT(X), c), (size_t)n);            \
        return 0;                                                              \
    }                                                                          \
    ONE(name, A, X, 2 * SZ(A) + SZ(X), KB_THREADED)
#define AXPY_BODY(name, A, X)                                                  \
    static double bench_body_##name(void *c, int64_t n)                        \
    {                                                                          \
        const GCK_CT(A) w = (GCK_CT(A))gck_bench_next_weight(KC(c)->acc);      \
        gck_##name(ACC(GCK_CT(A), c), w, XB(GCK_CT(X), c), (size_t)n);         \
        return 0;                                                              \
    }
/* reads acc and x, writes acc */
#define AXPY(name, A, X)                                                       \
    AXPY_BODY(name, A, X)                                                      \
    ONE(name, A, X, 2 * SZ(A) + SZ(X), KB_THREADED)
/* reads x, writes dst without reading it */
#define AXPY_INIT(name, A, X)                                                  \
    AXPY_BODY(name, A, X)                                                      \
    ONE(name, A, X, SZ(A) + SZ(X), KB_THREADED)
/* acc + (a + b): reads acc, a and b, writes acc (a tree merge closing two
 * levels) */
#define RFOLD(name, A, X)                                                      \
    static double bench_body_##name(void *c, int64_t n)                        \
    {                                                                          \
        const GCK_CT(X) *xs[2] = {XA(GCK_CT(X), c), XB(GCK_CT(X), c)};         \
        gck_##name(ACC(GCK_CT(A), c), xs, 2, (size_t)n);                       \
        return 0;                                                              \
    }                                                                          \
    ONE(name, A, X, 2 * SZ(A) + 2 * SZ(X), KB_THREADED)
/* reads and writes x */
#define SCALE(name, T)                                                         \
    static double bench_body_##name(void *c, int64_t n)                        \
    {                                                                          \
        gck_##name(ACC(GCK_CT(T), c), (GCK_CC(T))GCK_BENCH_SCALE, (size_t)n);  \
        return 0;                                                              \
    }                                                                          \
    ONE(name, T, T, 2 * SZ(T), KB_THREADED)
/* reads x, writes dst: an output array, not an input of other kernels (an
 * f32 -> f16 conversion into the 2-byte pool's a left f16 bit patterns
 * where the bf16 reductions read, tiny values against b's: dist2_bf16 then
 * measured its fallback for inputs far apart, not its common path) */
#define CONVERT(name, A, X)                                                    \
    static double bench_body_##name(void *c, int64_t n)                        \
    {                                                                          \
        gck_##name(OUT(GCK_CT(A), c), XB(GCK_CT(X), c), (size_t)n);            \
        return 0;                                                              \
    }                                                                          \
    ONE(name, A, X, SZ(A) + SZ(X), KB_OUT)
/* Byte planes of n elements of 4 (_f32) and 8 (_f64) bytes: the delta of b
 * against a into c, and back; reads a and b, writes c (3 arrays). */
#define BT_u8(T) uint8_t
#define BT_elem(T) GCK_CT(T)
#define SHUFFLE_BODY(name, T, OUT, IN)                                         \
    static double bench_body_##name##_##T(void *c, int64_t n)                  \
    {                                                                          \
        const gck_bench_arrays *p = KC(c)->x;                                  \
        gck_##name(GCK_BENCH_C(BT_##OUT(T), p), GCK_BENCH_B(BT_##IN(T), p),    \
                   GCK_BENCH_A(GCK_CT(T), p), (size_t)n, SZ(T));               \
        return (double)((const uint8_t *)GCK_BENCH_C(uint8_t, p))[0];          \
    }
/* the same with the planes given one pointer each (where they lie in c) */
#define PLANES_BODY(name, T)                                                   \
    static double bench_body_##name##_##T(void *c, int64_t n)                  \
    {                                                                          \
        const gck_bench_arrays *p = KC(c)->x;                                  \
        const uint8_t *pl[8];                                                  \
        for (size_t k = 0; k < SZ(T); k++)                                     \
            pl[k] = GCK_BENCH_B(uint8_t, p) + k * (size_t)n;                   \
        gck_##name(GCK_BENCH_C(GCK_CT(T), p), pl, GCK_BENCH_A(GCK_CT(T), p), (size_t)n, SZ(T)); \
        return (double)((const uint8_t *)GCK_BENCH_C(uint8_t, p))[0];          \
    }
#define BYTE_PLANES_APART(name)                                                \
    PLANES_BODY(name, f32)                                                     \
    PLANES_BODY(name, f64)                                                     \
    static const kbench bench_##name[] = {                                     \
        {bench_body_##name##_f32, "_f32", "f32", "f32", 4, 4, 3 * 4, KB_CALLER}, \
        {bench_body_##name##_f64, "_f64", "f64", "f64", 8, 8, 3 * 8, KB_CALLER}, {0}};
#define BYTE_PLANES(name, OUT, IN)                                             \
    SHUFFLE_BODY(name, f32, OUT, IN)                                           \
    SHUFFLE_BODY(name, f64, OUT, IN)                                           \
    static const kbench bench_##name[] = {                                     \
        {bench_body_##name##_f32, "_f32", "f32", "f32", 4, 4, 3 * 4, KB_CALLER}, \
        {bench_body_##name##_f64, "_f64", "f64", "f64", 8, 8, 3 * 8, KB_CALLER}, {0}};
/* The sparse split of n bytes (the first n bytes of the f32 pool's a: a
 * mantissa-heavy mix, about 7/8 of them kept) against fill 0x3f: reads x,
 * writes the bitmap and the values into c (n + n/8 bytes); the merge reads
 * them back (made by one untimed split per size) and writes n bytes of c. */
#define SPARSE_FILL 0x3f
static uint8_t *sparse_bits(const gck_bench_arrays *p) { return GCK_BENCH_C(uint8_t, p); }
/* c holds 4n bytes: the bitmap, the values (n bytes) and the merge's output fit from n = 8 */
static uint8_t *sparse_vals(const gck_bench_arrays *p, size_t n) { return GCK_BENCH_C(uint8_t, p) + n / 8 + 8; }
static double bench_body_sparse_split(void *c, int64_t n)
{
    const gck_bench_arrays *p = KC(c)->x;
    return (double)gck_sparse_split(sparse_bits(p), sparse_vals(p, (size_t)n), GCK_BENCH_A(uint8_t, p), (size_t)n,
                                    SPARSE_FILL);
}
static double bench_body_sparse_merge(void *c, int64_t n)
{
    const gck_bench_arrays *p = KC(c)->x;
    static const void *made_for;
    static int64_t made_n = -1;
    static size_t count;
    if (made_for != (const void *)GCK_BENCH_C(uint8_t, p) || made_n != n) { /* the first call of a size */
        count = gck_sparse_split(sparse_bits(p), sparse_vals(p, (size_t)n), GCK_BENCH_A(uint8_t, p), (size_t)n,
                                 SPARSE_FILL);
        made_for = GCK_BENCH_C(uint8_t, p), made_n = n;
    }
    uint8_t *dst = GCK_BENCH_C(uint8_t, p) + 2 * (size_t)n + 8;
    gck_sparse_merge(dst, sparse_bits(p), sparse_vals(p, (size_t)n), count, (size_t)n, SPARSE_FILL);
    return (double)dst[0];
}
#define SPARSE(name)                                                           \
    static const kbench bench_##name[] = {{bench_body_##name, "", "u8", "u8", 4, 4, 2.125, KB_CALLER}, {0}};

/* n bytes, byte-serial on every ISA */
#define HASH(name)                                                             \
    static double bench_body_##name(void *c, int64_t n)                        \
    {                                                                          \
        return (double)gck_##name(XA(unsigned char, c), (size_t)n, GCK_FNV1A64_INIT); \
    }                                                                          \
    static const kbench bench_##name[] = {{bench_body_##name, "", "bytes", "bytes", 1, 1, 1, KB_HASH}, {0}};

REDUCE(sumsq_f64, f64)
REDUCE(sumsq_f32, f32)
REDUCE(l2norm_f64, f64)
REDUCE(l2norm_f32, f32)
REDUCE2(dist2_f64, f64)
REDUCE2(dist2_f32, f32)
PNORM(pnorm_f64, f64)
PNORM(pnorm_f32, f32)
FUSED(div_sumsq_f64, f64)
FUSED(div_sumsq_f32, f32)
FUSED(scale_sumsq_f64, f64)
FUSED(scale_sumsq_f32, f32)
ADD(add_f64, f64, f64)
ADD(add_f32, f32, f32)
ADD(add_f32_to_f64, f64, f32)
ADD(add_f64_to_f32, f32, f64)
AXPY(axpy_f64, f64, f64)
AXPY(axpy_f32, f32, f32)
AXPY(axpy_f32_to_f64, f64, f32)
AXPY(axpy_f64_to_f32, f32, f64)
AXPY_INIT(axpy_init_f64, f64, f64)
AXPY_INIT(axpy_init_f32, f32, f32)
AXPY_INIT(axpy_init_f32_to_f64, f64, f32)
AXPY_INIT(axpy_init_f64_to_f32, f32, f64)
AXPY_INIT(axpy_init_nt_f64, f64, f64)
AXPY_INIT(axpy_init_nt_f32, f32, f32)
AXPY_INIT(scale_into_f64, f64, f64)
AXPY_INIT(scale_into_f32, f32, f32)
AXPY_INIT(scale_into_nt_f64, f64, f64)
AXPY_INIT(scale_into_nt_f32, f32, f32)
RFOLD(add_rfold_f64, f64, f64)
RFOLD(add_rfold_f32, f32, f32)
SCALE(scale_f64, f64)
SCALE(scale_f32, f32)
REDUCE(sumsq_bf16, bf16)
REDUCE(sumsq_f16, f16)
REDUCE(l2norm_bf16, bf16)
REDUCE(l2norm_f16, f16)
REDUCE2(dist2_bf16, bf16)
REDUCE2(dist2_f16, f16)
PNORM(pnorm_bf16, bf16)
PNORM(pnorm_f16, f16)
ADD(add_bf16_to_f32, f32, bf16)
ADD(add_f16_to_f32, f32, f16)
ADD(add_bf16_to_f64, f64, bf16)
ADD(add_f16_to_f64, f64, f16)
AXPY(axpy_bf16_to_f32, f32, bf16)
AXPY(axpy_f16_to_f32, f32, f16)
AXPY(axpy_bf16_to_f64, f64, bf16)
AXPY(axpy_f16_to_f64, f64, f16)
AXPY_INIT(axpy_init_bf16_to_f32, f32, bf16)
AXPY_INIT(axpy_init_f16_to_f32, f32, f16)
AXPY_INIT(axpy_init_bf16_to_f64, f64, bf16)
AXPY_INIT(axpy_init_f16_to_f64, f64, f16)
SCALE(scale_bf16, bf16)
SCALE(scale_f16, f16)
CONVERT(convert_f32_to_bf16, bf16, f32)
CONVERT(convert_f32_to_f16, f16, f32)
CONVERT(convert_bf16_to_f32, f32, bf16)
CONVERT(convert_f16_to_f32, f32, f16)
BYTE_PLANES(xor_shuffle, u8, elem)
BYTE_PLANES(unshuffle_xor, elem, u8)
BYTE_PLANES_APART(unshuffle_xor_planes)
BYTE_PLANES(xor_shuffle_rot, u8, elem)
BYTE_PLANES_APART(unshuffle_xor_rot_planes)
SPARSE(sparse_split)
SPARSE(sparse_merge)
HASH(fnv1a64)

/* ---- registration: the kernels of api_list.h, each with its line above ------- */
#define BENCH_ENTRY(name, shape, A, X) {#name, bench_##name},
static const struct {
    const char *name;
    const kbench *families;
} all_kernels[] = {GCK_API_KERNEL_LIST(BENCH_ENTRY)};

/* A context per pair of pools, alive for the whole run. */
static kctx *kctx_of(size_t acc, size_t x)
{
    static kctx ctxs[4][4]; /* indexed by log2(bytes) of acc and x: 1, 2, 4, 8 */
    const int ia = acc == 8 ? 3 : acc == 4 ? 2 : acc == 2 ? 1 : 0, ix = x == 8 ? 3 : x == 4 ? 2 : x == 2 ? 1 : 0;
    kctx *k = &ctxs[ia][ix];
    k->acc = gck_bench_arrays_of(acc);
    k->x = gck_bench_arrays_of(x);
    return k;
}

static void register_family(const char *kernel, const kbench *f, int threads)
{
    static const int64_t hash_sizes[] = {1024, 65536, 1048576};
    size_t nsizes;
    /* the 2-byte kernels (2-byte arrays only) also at 1 GiB: gck_bench_sizes16 */
    const int64_t *sizes = f->acc == 2 && f->x == 2 ? gck_bench_sizes16(threads, &nsizes) : gck_bench_sizes(threads, &nsizes);
    char name[128], label[64];
    if (f->kind == KB_HASH) {
        if (threads != 1)
            return;
        snprintf(name, sizeof name, "%s/1t", kernel);
        gck_bench_register(&(gck_bench_spec){
            .name = name,
            .body = f->body,
            .prepare = prepare_kctx,
            .ctx = kctx_of(f->acc, f->x),
            .threads = 1,
            .bytes_per_elem = f->bytes,
            .label = f->x_t,
            .sizes = hash_sizes,
            .nsizes = GCK_BENCH_COUNT(hash_sizes),
        });
        return;
    }
    if (f->kind == KB_CALLER && threads != 1)
        return; /* one thread by definition: no 2t variant */
    /* ISA-major inside a kernel, so one kernel's ISAs sit next to each other */
    for (int isa = 0; isa < GCK_ISA_COUNT; isa++) {
        snprintf(name, sizeof name, "%s%s/%s/%dt", kernel, f->suffix, gck_isa_name((gck_isa)isa), threads);
        if (strcmp(f->acc_t, f->x_t) == 0)
            snprintf(label, sizeof label, "%s %s", gck_isa_name((gck_isa)isa), f->x_t);
        else
            snprintf(label, sizeof label, "%s %s->%s", gck_isa_name((gck_isa)isa), f->x_t, f->acc_t);
        gck_bench_register(&(gck_bench_spec){
            .name = name,
            .body = f->body,
            .prepare = f->kind == KB_CALLER ? prepare_kctx3 : f->kind == KB_OUT ? prepare_kctx_out : prepare_kctx,
            .ctx = kctx_of(f->acc, f->x),
            .select_isa = 1,
            .isa = (gck_isa)isa,
            .threads = threads,
            .bytes_per_elem = f->bytes,
            .label = label,
            .sizes = sizes,
            .nsizes = nsizes,
        });
    }
}

void gck_bench_register_kernels(int threads)
{
    for (size_t k = 0; k < GCK_BENCH_COUNT(all_kernels); k++)
        for (const kbench *f = all_kernels[k].families; f->body != NULL; f++)
            register_family(all_kernels[k].name, f, threads);
}
