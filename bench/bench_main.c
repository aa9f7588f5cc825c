/* bench/bench_main.c - gradckpt-bench: registers every benchmark, then runs google-benchmark.
 * See bench/README.md for the names and bench/ratios.py for the ratios. */
#include <string.h>

#include <gradckpt/isa.h>

#include "bench.h"

int main(int argc, char **argv)
{
    /* Every 1-thread benchmark first: thread pools left spinning by a 2-thread
     * run (libgomp, OpenBLAS) would otherwise steal the core of the next one. */
    for (int threads = 1; threads <= 2; threads++) {
        gck_bench_register_kernels(threads);
        gck_bench_register_baseline(threads);
        gck_bench_register_naive(threads);
        gck_bench_register_checkpointer(threads);
        gck_bench_register_trainer(threads);
        gck_bench_register_orders(threads);
        gck_bench_register_snapshot(threads);
        gck_bench_register_store(threads);
#ifdef GCK_BENCH_OPENBLAS
        gck_bench_register_openblas(threads);
#endif
    }

    char isas[64] = "";
    for (int isa = 0; isa < GCK_ISA_COUNT; isa++) {
        if (gck_isa_available((gck_isa)isa)) {
            strcat(isas, isas[0] ? " " : "");
            strcat(isas, gck_isa_name((gck_isa)isa));
        }
    }
    gck_bench_context("gradckpt_isas_available", isas);

    const int rc = gck_bench_run(&argc, argv);
    gck_bench_free_arrays();
    for (size_t i = 0; i < GCK_BENCH_NMODELS; i++)
        gck_bench_model_free_buffers(&gck_bench_models()[i]);
    return rc;
}
