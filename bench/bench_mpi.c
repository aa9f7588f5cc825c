/* bench/bench_mpi.c - gck_mpi_flush beside MPI_Allreduce(MPI_SUM) of the same buffers, in the same run, under mpirun.
 *
 * Not a google-benchmark program: under MPI every rank must run the same
 * iterations (a collective per iteration), so the counts are fixed and each
 * timing is the slowest rank's (MPI_MAX of the per-rank times, between
 * barriers). Per size: a checkpointer in tree order (mean, F32, checksum
 * none, history 1: steady state) holding one micro-batch per rank of L
 * layers; each iteration accumulates it (untimed), then times gck_mpi_flush
 * (the whole window: reduce-scatter, allgather, mean, norms, record), and
 * MPI_Allreduce(MPI_IN_PLACE, MPI_SUM) over a buffer of the same values,
 * interleaved. Prints the median of each and speed ratio = allreduce time /
 * flush time (>= 1: the flush is faster).
 *
 *   mpirun -np 2 build/native/bench/gradckpt-bench-mpi [--mb 1,16,64,256] [--reps 9] [--layers 16]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gradckpt/gradckpt.h>
#include <gradckpt/mpi.h>

#include "bench_mpi_timing.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    char mbs[256] = "1,16,64,256";
    int reps = 9, nl = 16;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mb") == 0)
            snprintf(mbs, sizeof mbs, "%s", argv[i + 1]);
        else if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--layers") == 0)
            nl = atoi(argv[i + 1]);
    }
    if (reps < 1 || nl < 1) {
        if (rank == 0)
            fprintf(stderr, "bench_mpi: --reps and --layers must be >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0)
        printf("%-6s %5s %6s %14s %14s %10s\n", "ranks", "MB", "layers", "mpi_flush_ms", "allreduce_ms",
               "ratio");
    double *tf = malloc((size_t)reps * sizeof *tf), *ta = malloc((size_t)reps * sizeof *ta);
    for (char *tok = strtok(mbs, ","); tok != NULL; tok = strtok(NULL, ",")) {
        const size_t mb = (size_t)atol(tok);
        const size_t n = mb * 1000000 / sizeof(float), per = n / (size_t)nl;
        float *x = malloc(n * sizeof *x), *ar = malloc(n * sizeof *ar);
        if (x == NULL || ar == NULL || tf == NULL || ta == NULL) {
            fprintf(stderr, "bench_mpi: out of memory for %zu MB\n", mb);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (size_t i = 0; i < n; i++)
            x[i] = (float)((i * 2654435761u + (size_t)rank * 97) % 1000) * 1e-3f - 0.5f;
        gck_config cfg;
        gck_config_init(&cfg);
        cfg.reduction = GCK_REDUCE_TREE;
        cfg.accumulation_mode = GCK_ACCUM_MEAN;
        cfg.dtype = GCK_DTYPE_F32;
        cfg.checksum = GCK_CHECKSUM_NONE;
        cfg.max_checkpoints = 1;
        gck_checkpointer *cp = NULL;
        if (gck_checkpointer_create(&cfg, &cp) != GCK_OK)
            MPI_Abort(MPI_COMM_WORLD, 1);
        char (*ids)[16] = malloc((size_t)nl * sizeof *ids);
        for (int l = 0; l < nl; l++)
            snprintf(ids[l], sizeof ids[l], "layer%03d", l);
        for (int it = -2; it < reps; it++) { /* two warm-up rounds: buffers, pages, connections */
            for (int l = 0; l < nl; l++) {
                const size_t len = l + 1 == nl ? n - per * (size_t)(nl - 1) : per;
                if (gck_accumulate_f32(cp, ids[l], x + per * (size_t)l, len, 0) != GCK_OK)
                    MPI_Abort(MPI_COMM_WORLD, 1);
            }
            memcpy(ar, x, n * sizeof *ar);
            double f, a;
            gck_status st = GCK_OK;
            TIMED(f, st = gck_mpi_flush(cp, MPI_COMM_WORLD, (uint64_t)rank, NULL));
            if (st != GCK_OK) {
                fprintf(stderr, "bench_mpi: rank %d: %s\n", rank, gck_last_error());
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            TIMED(a, MPI_Allreduce(MPI_IN_PLACE, ar, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
            if (it >= 0)
                tf[it] = f, ta[it] = a;
        }
        const double mf = median(tf, reps), ma = median(ta, reps);
        if (rank == 0)
            printf("%-6d %5zu %6d %14.3f %14.3f %10.2f\n", P, mb, nl, mf * 1e3, ma * 1e3, ma / mf);
        fflush(stdout);
        gck_checkpointer_destroy(cp);
        free(ids), free(x), free(ar);
    }
    free(tf), free(ta);
    gck_mpi_free_scratch();
    MPI_Finalize();
    return 0;
}
