/* bench/bench_mpi_timing.h - timing helpers of the MPI benchmark programs (gradckpt-bench-mpi*). */
#ifndef GCK_BENCH_MPI_TIMING_H
#define GCK_BENCH_MPI_TIMING_H

#include <stdlib.h>

#include <mpi.h>

static inline int gck_bench_cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0, n) (sorts v). */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, gck_bench_cmp_d);
    return v[n / 2];
}

/* The slowest rank's time of the op run between barriers. */
#define TIMED(out, op)                                                                                          \
    do {                                                                                                        \
        MPI_Barrier(MPI_COMM_WORLD);                                                                            \
        const double t0_ = MPI_Wtime();                                                                         \
        op;                                                                                                     \
        double dt_ = MPI_Wtime() - t0_;                                                                         \
        MPI_Allreduce(MPI_IN_PLACE, &dt_, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);                              \
        out = dt_;                                                                                              \
    } while (0)

#endif
