/* examples/kernels_demo.c - runs every kernel once on a large array and prints what it got.
 * Usage: kernels_demo [N]   (default 16 Mi elements) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <gradckpt/gradckpt.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define RUN(label, bytes, expr)                                                                 \
    do {                                                                                        \
        const double t0_ = now_s();                                                             \
        expr;                                                                                   \
        const double dt_ = now_s() - t0_;                                                       \
        printf("  %-10s %8.2f ms  %6.1f GB/s", label, dt_ * 1e3, (double)(bytes) / dt_ / 1e9); \
    } while (0)

int main(int argc, char **argv)
{
    const size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : (size_t)16 << 20;
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    float *f = malloc(n * sizeof *f), *g = malloc(n * sizeof *g);
    if (!a || !b || !f || !g) {
        fprintf(stderr, "kernels_demo: cannot allocate %zu elements\n", n);
        return 1;
    }
    uint64_t s = 42;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        a[i] = (double)(s >> 11) * 0x1p-53 - 0.5;
        b[i] = a[i] * 0.5;
        f[i] = (float)a[i];
        g[i] = (float)b[i];
    }
    printf("gradckpt %s, active ISA: %s, n = %zu\n", gck_version_string(), gck_isa_name(gck_isa_active()), n);
    double r;
    RUN("sumsq_f64", n * 8, r = gck_sumsq_f64(a, n)); printf("  = %.17g\n", r);
    RUN("l2norm_f64", n * 8, r = gck_l2norm_f64(a, n)); printf("  = %.17g\n", r);
    RUN("dist2_f64", n * 16, r = gck_dist2_f64(a, b, n)); printf("  = %.17g\n", r);
    RUN("sumsq_f32", n * 4, r = gck_sumsq_f32(f, n)); printf("  = %.17g\n", r);
    RUN("l2norm_f32", n * 4, r = gck_l2norm_f32(f, n)); printf("  = %.17g\n", r);
    RUN("dist2_f32", n * 8, r = gck_dist2_f32(f, g, n)); printf("  = %.17g\n", r);
    RUN("add_f64", n * 24, gck_add_f64(b, a, n)); printf("  b[7] = %.17g\n", b[7]);
    RUN("axpy_f64", n * 24, gck_axpy_f64(b, 0.25, a, n)); printf("  b[7] = %.17g\n", b[7]);
    RUN("scale_f64", n * 16, gck_scale_f64(b, 0.5, n)); printf("  b[7] = %.17g\n", b[7]);
    RUN("add_f32", n * 12, gck_add_f32(g, f, n)); printf("  g[7] = %.9g\n", (double)g[7]);
    RUN("axpy_f32", n * 12, gck_axpy_f32(g, 0.25f, f, n)); printf("  g[7] = %.9g\n", (double)g[7]);
    RUN("scale_f32", n * 8, gck_scale_f32(g, 0.5f, n)); printf("  g[7] = %.9g\n", (double)g[7]);
    uint64_t h = 0;
    RUN("fnv1a64", n * 8, h = gck_fnv1a64(a, n * 8, GCK_FNV1A64_INIT)); printf("  = 0x%016llx\n", (unsigned long long)h);
    free(a), free(b), free(f), free(g);
    return 0;
}
