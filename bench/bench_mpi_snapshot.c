/* bench/bench_mpi_snapshot.c - gck_mpi_snapshot_save beside one gck_snapshot_save of the same snapshot, in the
 * same run, under mpirun.
 *
 * Per size: every rank holds the same snapshot of L f32 tensors (by
 * reference) totalling MB; each iteration times the sharded save on all
 * ranks (each rank writes its share, rank 0 commits the index; the whole
 * collective, between barriers, the slowest rank's time), then rank 0 alone
 * saving the same snapshot as one file with gck_snapshot_save (the other
 * ranks wait at the barrier), interleaved. Both are durable (fsync). Prints
 * the medians and speed ratio = single-file time / sharded time (> 1: the
 * sharded save is faster). Files go to --dir (a real disk: on tmpfs fsync
 * costs nothing), removed at the end.
 *
 *   mpirun -np 2 build/native/bench/gradckpt-bench-mpi-snapshot --dir build/bench-tmp [--mb 16,64,256]
 *          [--reps 5] [--tensors 16]
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gradckpt/gradckpt.h>
#include <gradckpt/mpi.h>

#include "bench_mpi_timing.h"

static void check(gck_status st, int rank, const char *what)
{
    if (st != GCK_OK) {
        fprintf(stderr, "bench_mpi_snapshot: rank %d: %s: %s\n", rank, what, gck_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Removes the files of dir, then dir (rank 0). */
static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    char p[4096];
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    char mbs[256] = "16,64,256";
    const char *base = NULL;
    int reps = 5, nt = 16;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mb") == 0)
            snprintf(mbs, sizeof mbs, "%s", argv[i + 1]);
        else if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--tensors") == 0)
            nt = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--dir") == 0)
            base = argv[i + 1];
    }
    if (reps < 1 || nt < 1 || base == NULL) {
        if (rank == 0)
            fprintf(stderr, "bench_mpi_snapshot: --dir DIR is required; --reps and --tensors must be >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char dir[4096], single_dir[4096], single[4200];
    snprintf(dir, sizeof dir, "%s/sharded", base);
    snprintf(single_dir, sizeof single_dir, "%s/single", base);
    snprintf(single, sizeof single, "%s/model.safetensors", single_dir);
    int made_base = 0;
    if (rank == 0) {
        made_base = mkdir(base, 0777) == 0;
        mkdir(single_dir, 0777);
        printf("%-6s %5s %8s %12s %12s %10s\n", "ranks", "MB", "tensors", "sharded_ms", "single_ms", "ratio");
    }
    double *ts = malloc((size_t)reps * sizeof *ts), *t1 = malloc((size_t)reps * sizeof *t1);
    for (char *tok = strtok(mbs, ","); tok != NULL; tok = strtok(NULL, ",")) {
        const size_t mb = (size_t)atol(tok);
        const size_t n = mb * 1000000 / sizeof(float), per = n / (size_t)nt;
        float *x = malloc(n * sizeof *x);
        if (x == NULL || ts == NULL || t1 == NULL) {
            fprintf(stderr, "bench_mpi_snapshot: out of memory for %zu MB\n", mb);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (size_t i = 0; i < n; i++) /* the same values on every rank: a replicated snapshot */
            x[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
        gck_snapshot *s = NULL;
        check(gck_snapshot_create(1, &s), rank, "create");
        check(gck_snapshot_set_timestamp(s, 1), rank, "timestamp");
        for (int t = 0; t < nt; t++) {
            char name[32];
            snprintf(name, sizeof name, "layer%03d.weight", t);
            const int64_t len = (int64_t)(t + 1 == nt ? n - per * (size_t)(nt - 1) : per);
            check(gck_snapshot_add_tensor_ref(s, name, GCK_DTYPE_F32, &len, 1, x + per * (size_t)t), rank, name);
        }
        for (int it = -1; it < reps; it++) { /* one warm-up round: files created, pages cached */
            double a, b;
            gck_status st = GCK_OK;
            TIMED(a, st = gck_mpi_snapshot_save(s, dir, MPI_COMM_WORLD));
            check(st, rank, "gck_mpi_snapshot_save");
            TIMED(b, st = rank == 0 ? gck_snapshot_save(s, single) : GCK_OK);
            check(st, rank, "gck_snapshot_save");
            if (it >= 0)
                ts[it] = a, t1[it] = b;
        }
        const double ms = median(ts, reps), m1 = median(t1, reps);
        if (rank == 0)
            printf("%-6d %5zu %8d %12.3f %12.3f %10.2f\n", P, mb, nt, ms * 1e3, m1 * 1e3, m1 / ms);
        fflush(stdout);
        gck_snapshot_destroy(s);
        free(x);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        rm_dir(dir);
        rm_dir(single_dir);
        if (made_base)
            rmdir(base);
    }
    free(ts), free(t1);
    MPI_Finalize();
    return 0;
}
