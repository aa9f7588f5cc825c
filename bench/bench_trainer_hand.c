/* bench/bench_trainer_hand.c - the hand loop: the plain C a trainer writes for accumulate, mean, global norm and clip.
 *
 * Built with -O3 -march=native -ffast-math (bench/CMakeLists.txt), like the
 * bandwidth references: float accumulation, float sum of squares in
 * whatever order the compiler likes, OpenMP loops over the whole contiguous
 * gradient buffer, as in llm.c's CPU trainer. The mean is fused into the
 * norm loop (one pass fewer than separate loops), so the hand loop makes
 * the same passes over memory as the trainer path it is compared with
 * (bench_trainer.c) and the ratio measures the kernels, not the pass count.
 * The f64 variant sums the squares in double, as the library does (every
 * value widened): the same loop's cost for an accurate norm. The fused
 * variant also folds the last micro-batch's add into that loop (k > 1),
 * one pass fewer, as the trainer path's gck_tensors_axpy_div_sumsq does.
 * Uses no gradckpt header beyond bench.h. */
#include <math.h>

#include "bench.h"

/* One step; ACC is the type of the sum of squares. */
#define HAND_STEP(name, ACC, FUSE)                                                            \
    double name(float *restrict g, const float *restrict x, size_t n, int k, float max_norm)  \
    {                                                                                         \
        const long long len = (long long)n;                                                   \
        long long i;                                                                          \
        /* the first micro-batch's backward writes the gradient, the others add to it */     \
        _Pragma("omp parallel for schedule(static)")                                          \
        for (i = 0; i < len; i++)                                                             \
            g[i] = x[i];                                                                      \
        for (int j = 1; j < k - (FUSE); j++) {                                                \
            _Pragma("omp parallel for schedule(static)")                                      \
            for (i = 0; i < len; i++)                                                         \
                g[i] += x[i];                                                                 \
        }                                                                                     \
        /* mean over the micro-batches and the global norm */                                \
        ACC ss = 0;                                                                           \
        if (k > 1) {                                                                          \
            const float fk = (float)k;                                                        \
            _Pragma("omp parallel for schedule(static) reduction(+ : ss)")                    \
            for (i = 0; i < len; i++) {                                                       \
                g[i] = ((FUSE) ? g[i] + x[i] : g[i]) / fk;                                    \
                ss += (ACC)g[i] * (ACC)g[i];                                                  \
            }                                                                                 \
        } else {                                                                              \
            _Pragma("omp parallel for schedule(static) reduction(+ : ss)")                    \
            for (i = 0; i < len; i++)                                                         \
                ss += (ACC)g[i] * (ACC)g[i];                                                  \
        }                                                                                     \
        const float norm = (float)sqrt((double)ss);                                           \
        /* clip as torch does: coef = max_norm / (norm + eps) when it is below 1 */          \
        const float coef = max_norm / (norm + 1e-6f);                                         \
        if (coef < 1.0f) {                                                                    \
            _Pragma("omp parallel for schedule(static)")                                      \
            for (i = 0; i < len; i++)                                                         \
                g[i] *= coef;                                                                 \
        }                                                                                     \
        return norm;                                                                          \
    }

HAND_STEP(gck_bench_hand_step, float, 0)
HAND_STEP(gck_bench_hand_step_f64sum, double, 0)
/* The last micro-batch's add fused into the mean + norm loop too: the
 * passes of the trainer path's gck_tensors_axpy_div_sumsq, written by hand. */
HAND_STEP(gck_bench_hand_step_fused, float, 1)

/* The hand loop with an accumulation buffer of its own, as any code that
 * holds the micro-batches' sum apart from the trainer's gradient must (the
 * checkpointer path: gck_accumulate_many copies, gck_flush_into finishes
 * into the trainer's buffer): the micro-batches are summed into s, their
 * mean and norm taken there, and the clipped values written into g. The
 * floor of that path's cost: three buffers where the hand loop has two. */
double gck_bench_hand_step_staged(float *restrict g, float *restrict s, const float *restrict x, size_t n, int k,
                                  float max_norm)
{
    const long long len = (long long)n;
    long long i;
#pragma omp parallel for schedule(static)
    for (i = 0; i < len; i++)
        s[i] = x[i];
    for (int j = 1; j < k; j++) {
#pragma omp parallel for schedule(static)
        for (i = 0; i < len; i++)
            s[i] += x[i];
    }
    float ss = 0;
    if (k > 1) {
        const float fk = (float)k;
#pragma omp parallel for schedule(static) reduction(+ : ss)
        for (i = 0; i < len; i++) {
            s[i] /= fk;
            ss += s[i] * s[i];
        }
    } else {
#pragma omp parallel for schedule(static) reduction(+ : ss)
        for (i = 0; i < len; i++)
            ss += s[i] * s[i];
    }
    const float norm = (float)sqrt((double)ss);
    const float coef = max_norm / (norm + 1e-6f);
    const float c = coef < 1.0f ? coef : 1.0f;
#pragma omp parallel for schedule(static)
    for (i = 0; i < len; i++)
        g[i] = s[i] * c;
    return norm;
}
