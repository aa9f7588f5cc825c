/* gradckpt/mpi.h - libgradckpt_mpi: data-parallel flushes over MPI, bit-identical for any number of ranks. */
#ifndef GRADCKPT_MPI_H
#define GRADCKPT_MPI_H

#include <stdint.h>

#include <mpi.h>

#include <gradckpt/checkpoint.h>
#include <gradckpt/checkpointer.h>
#include <gradckpt/export.h>
#include <gradckpt/snapshot.h>
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
 * lengths, counts, ranges, configs, every rank's memory) so that a mismatch
 * fails on every rank with the same status; then a reduce-scatter (each rank sums one
 * contiguous slice of the gradients from every rank's blocks, in the tree's
 * operand order) and an allgather of the slices, in chunks, the next
 * chunk's messages in flight while one is summed. Each rank sends and
 * receives about (P - 1) / P of the gradient bytes per phase. With F32 or
 * F64 storage each rank finishes (mean, weighted mean) its own slice as it
 * sums it, straight into the memory of the checkpoint it will record
 * (gck_flush_stage), and the allgather delivers finished values there; the
 * layers' sums of squares combine from the slices' pieces (cut at the
 * kernels' 8192-element blocks) in the kernels' order, so only clipping
 * that fires and a checksum read the values again. F32, F64 or
 * BF16 storage (BF16: the f32 sums are exchanged and the finished values
 * rounded to bf16 once, at the flush, as gck_flush does); the byte order of
 * all ranks must agree.
 *
 * Memory: two chunks per peer of receive buffers (and for BF16 storage a
 * copy of the gradients), kept per thread for reuse (gck_mpi_free_scratch
 * frees them).
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

/**
 * Saves a sharded snapshot (gradckpt/snapshot.h, GCK_SHARDED_INDEX)
 * collectively over comm: every rank of comm calls it with its copy of the
 * same snapshot (replicated data parallel: equal tensor names, dtypes,
 * shapes, content ids, optimizer states, step, loss cid and metadata; the
 * timestamp may differ and rank 0's is recorded) and the same directory as
 * seen from that rank (on a file system every rank shares, e.g. NFS across
 * hosts). Rank r writes shard r of the assignment for P = size(comm)
 * writers (gck_snapshot_save_sharded: balanced by bytes, from names and
 * sizes only, so no data is sent), durably; once every rank's shard is
 * durable, rank 0 writes the index atomically: the commit. A rank killed or
 * failing before that leaves the previous commit loadable, and the next
 * commit removes the dead save's files.
 *
 * Exchange: every snapshot's digests (gck_snapshot_digest) are compared
 * with rank 0's before anything is written (an argument error or a mismatch
 * leaves dir untouched); rank 0 reads the directory for the new generation
 * and broadcasts it; after each step the ranks agree on a status. Each is a
 * small collective (an allreduce, and a broadcast of the failing rank's
 * status and message only on failure); no tensor bytes cross the network.
 *
 * Ownership: reads snap; keeps no reference.
 * Errors (the same status and message on every rank, naming the first rank
 * that failed): GCK_ERR_INVALID_ARGUMENT (NULL or empty arguments; a
 * snapshot differing from rank 0's in values, step, loss cid or metadata);
 * GCK_ERR_DIMENSION_MISMATCH (a snapshot differing from rank 0's in names,
 * dtypes or shapes); and those of gck_snapshot_sharded_begin,
 * gck_snapshot_save_shard and gck_snapshot_sharded_commit. MPI errors
 * follow comm's error handler (by default they abort the job).
 * Thread-safety: collective over comm; one save per directory at a time.
 */
GCK_API gck_status gck_mpi_snapshot_save(const gck_snapshot *snap, const char *dir, MPI_Comm comm);

/**
 * gck_snapshot_load_sharded on every rank of comm (each rank names its own
 * items: names NULL with n 0 for all of them; any number of ranks, whatever
 * the number that saved), then one agreement: if any rank failed, every rank
 * returns the first failing rank's status and message and *out is untouched
 * everywhere. Each rank reads only the shards holding its items, and only
 * those items' bytes. No save may run into dir meanwhile.
 *
 * Ownership: *out (on every rank) is the caller's.
 * Errors: those of gck_snapshot_load_sharded (GCK_ERR_INVALID_ARGUMENT also
 *         for a NULL out), the same on every rank.
 * Thread-safety: collective over comm.
 */
GCK_API gck_status gck_mpi_snapshot_load(const char *dir, MPI_Comm comm, const char *const *names, size_t n,
                                         gck_snapshot **out);

#ifdef __cplusplus
}
#endif
#endif /* GRADCKPT_MPI_H */
