/* bench/bench_kernels.c - every public kernel on every ISA: "sumsq_f64/avx512/1t/<n>".
 * ISAs this build or CPU lacks are registered too and reported as skipped. */
#include <stdio.h>

#include <gradckpt/isa.h>
#include <gradckpt/kernels.h>

#include "bench.h"

#define A GCK_BENCH_A
#define B GCK_BENCH_B

/* Elementwise bodies return 0: the kernels write memory the caller can see,
 * so the calls cannot be dropped. add grows acc by at most 1 per iteration,
 * a ramp that stays far from overflow; axpy and scale keep |values| bounded
 * (see bench.h). */
#define KERNEL_BODIES(T, sfx)                                                           \
    static double sumsq_##sfx(void *c, int64_t n)                                       \
    {                                                                                   \
        return gck_sumsq_##sfx(A(T, c), (size_t)n);                                     \
    }                                                                                   \
    static double l2norm_##sfx(void *c, int64_t n)                                      \
    {                                                                                   \
        return gck_l2norm_##sfx(A(T, c), (size_t)n);                                    \
    }                                                                                   \
    static double dist2_##sfx(void *c, int64_t n)                                       \
    {                                                                                   \
        return gck_dist2_##sfx(A(T, c), B(T, c), (size_t)n);                            \
    }                                                                                   \
    static double add_##sfx(void *c, int64_t n)                                         \
    {                                                                                   \
        gck_add_##sfx(A(T, c), B(T, c), (size_t)n);                                     \
        return 0;                                                                       \
    }                                                                                   \
    static double axpy_##sfx(void *c, int64_t n)                                        \
    {                                                                                   \
        gck_axpy_##sfx(A(T, c), (T)gck_bench_next_weight(c), B(T, c), (size_t)n);       \
        return 0;                                                                       \
    }                                                                                   \
    static double scale_##sfx(void *c, int64_t n)                                       \
    {                                                                                   \
        gck_scale_##sfx(A(T, c), (T)GCK_BENCH_SCALE, (size_t)n);                        \
        return 0;                                                                       \
    }

KERNEL_BODIES(float, f32)
KERNEL_BODIES(double, f64)

/* Arrays streamed per element: sumsq reads x; dist2 reads a and b; add and
 * axpy read acc and x and write acc; scale reads and writes x. */
static const gck_bench_op kernels[] = {
    GCK_BENCH_OP(sumsq, 1), GCK_BENCH_OP(l2norm, 1), GCK_BENCH_OP(dist2, 2),
    GCK_BENCH_OP(add, 3),   GCK_BENCH_OP(axpy, 3),   GCK_BENCH_OP(scale, 2),
};

/* Byte planes of the elements of b XORed with a (the delta against the
 * previous version) into c, and back: read a and b, write c, 3 arrays. */
#define BYTES_BODIES(T, sfx)                                                            \
    static double xor_shuffle_##sfx(void *c, int64_t n)                                 \
    {                                                                                   \
        return (double)gck_xor_shuffle(GCK_BENCH_C(uint8_t, c), B(T, c), A(T, c),       \
                                       (size_t)n, sizeof(T));                           \
    }                                                                                   \
    static double unshuffle_xor_##sfx(void *c, int64_t n)                               \
    {                                                                                   \
        return (double)gck_unshuffle_xor(GCK_BENCH_C(T, c), B(uint8_t, c), A(T, c),     \
                                         (size_t)n, sizeof(T));                         \
    }

BYTES_BODIES(float, f32)
BYTES_BODIES(double, f64)

static const gck_bench_op byte_kernels[] = {
    GCK_BENCH_OP(xor_shuffle, 3),
    GCK_BENCH_OP(unshuffle_xor, 3),
};

static double fnv1a64(void *c, int64_t n)
{
    return (double)gck_fnv1a64(A(unsigned char, c), (size_t)n, GCK_FNV1A64_INIT);
}

/* Kernel-major, so one kernel's ISAs sit next to each other in the output. */
static void register_table(const gck_bench_op *ops, size_t nops, gck_bench_prepare prepare, int threads)
{
    for (size_t k = 0; k < nops; k++) {
        for (int isa = 0; isa < GCK_ISA_COUNT; isa++) {
            char suffix[32];
            snprintf(suffix, sizeof suffix, "/%s", gck_isa_name((gck_isa)isa));
            const gck_bench_family fam = {
                .prefix = "",
                .suffix = suffix,
                .tag = gck_isa_name((gck_isa)isa),
                .prepare = prepare,
                .select_isa = 1,
                .isa = (gck_isa)isa,
            };
            gck_bench_add_ops(&fam, &ops[k], 1, threads);
        }
    }
}

void gck_bench_register_kernels(int threads)
{
    register_table(kernels, GCK_BENCH_COUNT(kernels), NULL, threads);
    /* The byte-plane kernels run on the calling thread only: no 2t variant. */
    if (threads == 1)
        register_table(byte_kernels, GCK_BENCH_COUNT(byte_kernels), gck_bench_prepare_arrays3, threads);

    /* FNV-1a is byte-serial on every ISA and never threaded: one 1t family,
     * sizes in bytes. */
    if (threads == 1) {
        static const int64_t fnv_sizes[] = { 1024, 65536, 1048576 };
        gck_bench_register(&(gck_bench_spec){
            .name = "fnv1a64/1t",
            .body = fnv1a64,
            .prepare = gck_bench_prepare_arrays,
            .ctx = gck_bench_arrays_of(1),
            .threads = 1,
            .bytes_per_elem = 1.0,
            .label = "bytes",
            .sizes = fnv_sizes,
            .nsizes = GCK_BENCH_COUNT(fnv_sizes),
        });
    }
}
