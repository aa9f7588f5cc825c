/* examples/train_dist.h - the demo's data-parallel mode (--dist): MPI ranks, the micro-batch split, the flush.
 *
 * Built with MPI (GCK_TRAIN_MPI: CMake found MPI and libgradckpt_mpi), these
 * functions run over MPI_COMM_WORLD; built without, train_dist_start refuses
 * --dist with a message and every other function is the one-process identity. */
#ifndef GCK_TRAIN_DIST_H
#define GCK_TRAIN_DIST_H

#include <stdint.h>

#include <gradckpt/gradckpt.h>

typedef struct train_dist {
    int on;          /* --dist: running under MPI */
    int rank, size;  /* 0, 1 when off */
} train_dist;

/* Starts MPI when `on` (MPI_Init, then the rank and size), else fills the
 * one-process values. Returns 0, or -1 with a message on stderr (a build
 * without MPI). */
int train_dist_start(train_dist *d, int on, int *argc, char ***argv);

/* Ends MPI (MPI_Finalize) after a run every rank ended the same way. */
void train_dist_end(const train_dist *d);

/* Ends the whole job from one rank after a failure only it saw (MPI_Abort;
 * exits). A no-op when off: the caller returns its error as usual. */
void train_dist_abort(const train_dist *d, int code);

/* Micro-batch range [*first, *first + *count) of `rank` among `ranks` for a
 * step of K micro-batches: the binary decomposition of K into aligned power-
 * of-two blocks (12 = [0,8) + [8,12)), the first largest block halved until
 * there are `ranks` blocks (12 over 4: 2,2,4,4), block r to rank r. These are
 * the ranges gck_mpi_flush takes (a power of two m, first a multiple of m).
 * One rank takes [0, K). Returns -1 when K cannot be cut so: more ranks than
 * K, or fewer than the number of bits set in K. */
int train_dist_split(int K, int ranks, int rank, int *first, int *count);

/* 1 when v is nonzero on some rank (a collective when on). */
int train_dist_any(const train_dist *d, int v);

/* 1 when every rank holds the same v (a collective when on). */
int train_dist_same(const train_dist *d, uint64_t v);

/* Every rank's entries of all[0, K) (its train_dist_split range) to every
 * rank: each rank's own are in place (a collective when on). */
void train_dist_share(const train_dist *d, double *all, int K);

/* Waits for every rank (a collective when on). */
void train_dist_barrier(const train_dist *d);

/* The step's gradient over all ranks: gck_mpi_flush of cp (tree order; this
 * rank holding micro-batches [first, ...)), its finished and clipped layers
 * copied into dst's tensors (named by dst's layer ids), *info as
 * gck_flush_into reports it. The checkpoint stays in cp's history. Errors:
 * gck_mpi_flush's (the same on every rank); GCK_ERR_NOT_FOUND /
 * GCK_ERR_DIMENSION_MISMATCH when dst does not match the checkpoint. */
gck_status train_dist_flush_into(const train_dist *d, gck_checkpointer *cp, int first, const gck_flush_dst *dst,
                                 gck_clip_info *info);

#endif /* GCK_TRAIN_DIST_H */
