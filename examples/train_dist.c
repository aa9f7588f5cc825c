/* examples/train_dist.c - the demo's data-parallel mode over MPI (see train_dist.h); without MPI, --dist is refused. */
#include "train_dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GCK_TRAIN_MPI
#include <gradckpt/mpi.h>
#include <gradckpt/reduction.h>
#endif

int train_dist_split(int K, int ranks, int rank, int *first, int *count)
{
    int st[32], sz[32], nb = 0;
    if (K < 1 || ranks < 1 || rank < 0 || rank >= ranks || ranks > K || K >= (1 << 30))
        return -1;
    if (ranks == 1)
        return *first = 0, *count = K, 0;
    for (int b = 1 << 29, at = 0; b > 0; b >>= 1)
        if (K & b)
            st[nb] = at, sz[nb] = b, at += b, nb++;
    if (nb > ranks)
        return -1;
    while (nb < ranks) { /* nb < ranks <= K: some block holds 2 or more */
        int big = 0;
        for (int i = 1; i < nb; i++)
            big = sz[i] > sz[big] ? i : big;
        memmove(&st[big + 1], &st[big], (size_t)(nb - big) * sizeof *st);
        memmove(&sz[big + 1], &sz[big], (size_t)(nb - big) * sizeof *sz);
        sz[big] /= 2, sz[big + 1] = sz[big], st[big + 1] = st[big] + sz[big];
        nb++;
    }
    *first = st[rank], *count = sz[rank];
    return 0;
}

#ifdef GCK_TRAIN_MPI

int train_dist_start(train_dist *d, int on, int *argc, char ***argv)
{
    *d = (train_dist){.on = on, .rank = 0, .size = 1};
    if (!on)
        return 0;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    return 0;
}

void train_dist_end(const train_dist *d)
{
    if (d->on) {
        gck_mpi_free_scratch();
        MPI_Finalize();
    }
}

void train_dist_abort(const train_dist *d, int code)
{
    if (d->on) {
        fflush(stdout), fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, code);
        exit(code); /* MPI_Abort does not return; in case it does */
    }
}

int train_dist_any(const train_dist *d, int v)
{
    int in = v != 0, out = in;
    if (d->on)
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    return out;
}

int train_dist_same(const train_dist *d, uint64_t v)
{
    uint64_t mm[2] = {v, ~v}, out[2] = {v, ~v};
    if (d->on)
        MPI_Allreduce(mm, out, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD); /* max v and max ~v (= ~min v) */
    return out[0] == ~out[1];
}

void train_dist_share(const train_dist *d, double *all, int K)
{
    if (!d->on)
        return;
    int counts[64], displs[64];
    for (int r = 0; r < d->size && r < 64; r++)
        if (train_dist_split(K, d->size, r, &displs[r], &counts[r]) != 0)
            counts[r] = displs[r] = 0; /* cannot happen: the caller split K the same way */
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
}

void train_dist_barrier(const train_dist *d)
{
    if (d->on)
        MPI_Barrier(MPI_COMM_WORLD);
}

gck_status train_dist_flush_into(const train_dist *d, gck_checkpointer *cp, int first, const gck_flush_dst *dst,
                                 gck_clip_info *info)
{
    (void)d;
    gck_checkpoint *ck = NULL;
    gck_status st = gck_mpi_flush(cp, MPI_COMM_WORLD, (uint64_t)first, &ck);
    for (size_t i = 0; st == GCK_OK && i < dst->tensors.count; i++) {
        gck_tensor_view v;
        st = gck_checkpoint_find(ck, dst->layer_ids[i], &v);
        if (st == GCK_OK && (v.n != dst->tensors.lens[i] || v.dtype != dst->tensors.dtype))
            st = gck_report_error(GCK_ERR_DIMENSION_MISMATCH, "train: layer '%s' has %zu values, its buffer %zu",
                                  dst->layer_ids[i], v.n, dst->tensors.lens[i]);
        if (st == GCK_OK)
            memcpy(dst->tensors.data[i], v.values, v.n * gck_dtype_size(v.dtype));
    }
    if (st == GCK_OK) {
        info->total_norm = gck_checkpoint_norm_before_clip(ck);
        info->coef = gck_checkpoint_clip_coef(ck);
        info->clipped = info->coef < 1.0;
    }
    gck_checkpoint_release(ck); /* the history keeps it; released before the next flush so its memory is reused */
    return st;
}

#else /* no MPI: --dist is refused, the rest is one process */

int train_dist_start(train_dist *d, int on, int *argc, char ***argv)
{
    (void)argc, (void)argv;
    *d = (train_dist){.on = 0, .rank = 0, .size = 1};
    if (on) {
        fprintf(stderr, "train: --dist needs the demo built with MPI (libgradckpt_mpi); this build has none "
                        "(install OpenMPI and reconfigure)\n");
        return -1;
    }
    return 0;
}

void train_dist_end(const train_dist *d)
{
    (void)d;
}

void train_dist_abort(const train_dist *d, int code)
{
    (void)d, (void)code;
}

int train_dist_any(const train_dist *d, int v)
{
    (void)d;
    return v != 0;
}

int train_dist_same(const train_dist *d, uint64_t v)
{
    (void)d, (void)v;
    return 1;
}

void train_dist_share(const train_dist *d, double *all, int K)
{
    (void)d, (void)all, (void)K;
}

void train_dist_barrier(const train_dist *d)
{
    (void)d;
}

gck_status train_dist_flush_into(const train_dist *d, gck_checkpointer *cp, int first, const gck_flush_dst *dst,
                                 gck_clip_info *info)
{
    (void)d, (void)first;
    return gck_flush_into(cp, 0, dst, info, NULL);
}

#endif
