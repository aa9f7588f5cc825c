/* mpi/snapshot.c - sharded snapshots over MPI: each rank writes its share, rank 0 commits the index.
 *
 * Every step that can fail on one rank ends in an allgather of every rank's
 * status and message, so all ranks leave with the same status and the same
 * message (the first failing rank's) and none waits in a collective the
 * others skipped. */
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <gradckpt/mpi.h>
#include <gradckpt/reduction.h>

/* What one rank reports after a step: its status and message. */
#define GCK_MPI_MSG 512
typedef struct gck_mpi_report {
    int32_t status;
    char msg[GCK_MPI_MSG];
} gck_mpi_report;

/* The status of the lowest rank that failed in the step (st: this rank's;
 * its message is gck_last_error()), with that rank's message, on every rank:
 * an allreduce finds the rank, a broadcast sends its report. MPI errors
 * follow comm's handler. */
static gck_status gck_mpi_agree(MPI_Comm comm, gck_status st, const char *fn)
{
    int P = 1, me = 0;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    int key = st != GCK_OK ? me : P, low = P;
    MPI_Allreduce(&key, &low, 1, MPI_INT, MPI_MIN, comm);
    if (low == P)
        return GCK_OK;
    gck_mpi_report r = {.status = (int32_t)st};
    if (me == low)
        snprintf(r.msg, sizeof r.msg, "%s", gck_last_error());
    MPI_Bcast(&r, (int)sizeof r, MPI_BYTE, low, comm);
    return gck_report_error((gck_status)r.status, "%s: rank %d: %s", fn, low, r.msg);
}

gck_status gck_mpi_snapshot_save(const gck_snapshot *snap, const char *dir, MPI_Comm comm)
{
    static const char fn[] = "gck_mpi_snapshot_save";
    int P = 1, me = 0;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    /* 1. arguments, and every snapshot against rank 0's digests (nothing touched yet) */
    uint64_t d[2] = {0, 0}, d0[2];
    gck_status st = GCK_OK;
    if (snap == NULL || dir == NULL || dir[0] == '\0')
        st = gck_report_error(GCK_ERR_INVALID_ARGUMENT, "NULL snapshot or NULL or empty dir");
    else
        st = gck_snapshot_digest(snap, &d[0], &d[1]);
    memcpy(d0, d, sizeof d0);
    MPI_Bcast(d0, 2, MPI_UINT64_T, 0, comm);
    if (st == GCK_OK && d[0] != d0[0])
        st = gck_report_error(GCK_ERR_DIMENSION_MISMATCH,
                              "its snapshot differs from rank 0's in tensor names, dtypes or shapes or in optimizer "
                              "state names or sizes");
    else if (st == GCK_OK && d[1] != d0[1])
        st = gck_report_error(GCK_ERR_INVALID_ARGUMENT,
                              "its snapshot differs from rank 0's in values, step, loss cid or metadata (every rank "
                              "must hold the same replicated snapshot)");
    if ((st = gck_mpi_agree(comm, st, fn)) != GCK_OK)
        return st;
    /* 2. rank 0 picks the new generation (its shard names are new in dir) */
    uint64_t gen = 0;
    if (me == 0)
        st = gck_snapshot_sharded_begin(dir, &gen);
    if ((st = gck_mpi_agree(comm, st, fn)) != GCK_OK)
        return st;
    MPI_Bcast(&gen, 1, MPI_UINT64_T, 0, comm);
    /* 3. every rank's shard durable before 4. the commit */
    st = gck_snapshot_save_shard(snap, dir, gen, (size_t)me, (size_t)P);
    if ((st = gck_mpi_agree(comm, st, fn)) != GCK_OK)
        return st;
    if (me == 0)
        st = gck_snapshot_sharded_commit(snap, dir, gen, (size_t)P);
    return gck_mpi_agree(comm, st, fn);
}

gck_status gck_mpi_snapshot_load(const char *dir, MPI_Comm comm, const char *const *names, size_t n,
                                 gck_snapshot **out)
{
    gck_snapshot *s = NULL;
    gck_status st;
    if (out == NULL)
        st = gck_report_error(GCK_ERR_INVALID_ARGUMENT, "out is NULL");
    else
        st = gck_snapshot_load_sharded(dir, names, n, &s);
    st = gck_mpi_agree(comm, st, "gck_mpi_snapshot_load");
    if (st != GCK_OK) {
        gck_snapshot_destroy(s);
        return st;
    }
    *out = s;
    return GCK_OK;
}
