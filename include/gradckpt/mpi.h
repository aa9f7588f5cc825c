/* gradckpt/mpi.h - libgradckpt_mpi: data-parallel flushes over MPI, bit-identical for any number of ranks. */
#ifndef GRADCKPT_MPI_H
#define GRADCKPT_MPI_H

#include <stdint.h>

#include <mpi.h>

#include <gradckpt/checkpoint.h>
#include <gradckpt/checkpointer.h>
#include <gradckpt/export.h>
#include <gradckpt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Closes one data-parallel flush window collectively over comm: every rank
 * of comm calls it. Rank r's checkpointer (configured with GCK_REDUCE_TREE)
 * holds micro-batches [first_index, first_index + m) of the window's K
 * global micro-batches, every pending layer m tensors, m a power of two and
 * first_index a multiple of m; the ranks' ranges tile [0, K) in any rank
 * order (m may differ between ranks; a communicator of one rank takes any
 * m with first_index 0). With GCK_ACCUM_WEIGHTED_MEAN each
 * rank's config holds the weights of its own micro-batches (w[0] for
 * first_index). The ranks' sums are combined in the tree order of
 * GCK_REDUCE_TREE over the global indices, then finished (mean, weighted
 * mean, norms, clipping, checksum) exactly as gck_flush finishes, so every
 * rank records the same checkpoint, bit for bit the one a single
 * checkpointer accumulating all K micro-batches in tree order records, for
 * any number of ranks. The checkpoint's step is the sum of the ranks'
 * global steps (a single process's global step when every rank accumulated
 * its share of every window), each layer's step that of the rank holding
 * micro-batch K - 1, created_at rank 0's wall clock (seconds since the
 * epoch). Each rank's own global step is unchanged; its flush count grows
 * by one.
 *
 * Exchange: one small MPI_Allgather first checks shapes (layer ids and
 * lengths, counts, ranges, configs) so that a mismatch fails on every rank
 * with the same status; then a reduce-scatter (each rank sums one
 * contiguous slice of the gradients from every rank's blocks, in the tree's
 * operand order) and an allgather of the slices, in chunks, the next
 * chunk's messages in flight while one is summed. Each rank sends and
 * receives about (P - 1) / P of the gradient bytes per phase. F32, F64 or
 * BF16 storage (BF16: the f32 sums are exchanged and the finished values
 * rounded to bf16 once, at the flush, as gck_flush does); the byte order of
 * all ranks must agree.
 *
 * Memory: a copy of the gradients and two chunks per peer of receive
 * buffers, kept per thread for reuse (gck_mpi_free_scratch frees them).
 *
 * Ownership: *out (optional) receives a new reference as gck_flush's.
 * Errors (the same status on every rank, the message names the rank and
 * what differs): GCK_ERR_INVALID_ARGUMENT for NULL cp, a checkpointer not
 * in GCK_REDUCE_TREE, layers with different tensor counts, m not a power of
 * two, first_index not a multiple of m, ranges that overlap or leave gaps,
 * different configs (mode, dtype, clipping, checksum, error_if_nonfinite);
 * GCK_ERR_DIMENSION_MISMATCH for different pending layer ids or lengths;
 * GCK_ERR_NO_ACCUMULATED_GRADIENTS when some rank has nothing pending;
 * GCK_ERR_UNSUPPORTED for more than INT_MAX elements;
 * GCK_ERR_NONFINITE as gck_flush; GCK_ERR_NO_MEMORY. On error every rank's
 * checkpointer is unchanged. MPI errors follow comm's error handler (by
 * default they abort the job).
 * Thread-safety: one owner per checkpointer; MPI must be initialized with
 * the thread level the caller's use of comm needs.
 */
GCK_API gck_status gck_mpi_flush(gck_checkpointer *cp, MPI_Comm comm, uint64_t first_index, gck_checkpoint **out);

/** Frees the calling thread's gck_mpi_flush buffers (they come back on the next call). */
GCK_API void gck_mpi_free_scratch(void);

#ifdef __cplusplus
}
#endif
#endif /* GRADCKPT_MPI_H */
