/* gradckpt/snapshot.h - training snapshots (tensors, step, optimizer state, metadata) as safetensors files. */
#ifndef GRADCKPT_SNAPSHOT_H
#define GRADCKPT_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/checkpoint.h>
#include <gradckpt/dtype.h>
#include <gradckpt/export.h>
#include <gradckpt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The state needed to resume a run: named tensors (any gck_dtype, with shape
 * and content id), the optimizer step, an optional loss content id,
 * optimizer-state blobs keyed by parameter name, a creation timestamp and a
 * string -> string map of user metadata. Not thread-safe while being
 * modified; concurrent readers of an unmodified snapshot are fine.
 */
typedef struct gck_snapshot gck_snapshot;

/** Reserved name prefix of optimizer blobs stored as U8 tensors. */
#define GCK_OPTIMIZER_PREFIX "__optimizer__/"
/** Prefix of gradckpt's own `__metadata__` keys; user keys may not use it. */
#define GCK_METADATA_PREFIX "gradckpt."
/** Longest tensor name, parameter name or metadata key accepted (bytes).
 *  Names, keys and metadata values must also be UTF-8 (no overlong forms,
 *  surrogates or code points above U+10FFFF), as a safetensors header is
 *  JSON: they are refused when added, so that a save never meets one. */
#define GCK_NAME_MAX 4096
/** Most dimensions a tensor may have. */
#define GCK_MAX_DIMS 32

/**
 * Creates an empty snapshot at `step`, timestamped now (seconds).
 *
 * Ownership: *out is the caller's; free with gck_snapshot_destroy.
 * Errors: GCK_ERR_INVALID_ARGUMENT (out NULL), GCK_ERR_NO_MEMORY.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_snapshot_create(uint64_t step, gck_snapshot **out);

/** Frees a snapshot and everything it owns. NULL is fine. */
GCK_API void gck_snapshot_destroy(gck_snapshot *s);

/**
 * Adds a tensor: its bytes (prod(shape) * gck_dtype_size(dtype), in this
 * CPU's byte order) are copied and its content id computed. ndim may be 0
 * (a scalar: one element); shape may be NULL only when ndim is 0.
 *
 * Ownership: copies name, shape and data; keeps no reference.
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL arguments, an empty, over-long
 *         or non-UTF-8 name, a name that is "__metadata__" or starts with
 *         "__optimizer__/", a name already present, an unknown dtype, a
 *         negative dimension, more than GCK_MAX_DIMS dimensions, or a byte
 *         size that overflows; GCK_ERR_NO_MEMORY. The snapshot is unchanged
 *         on error.
 * Thread-safety: one writer.
 */
GCK_API gck_status gck_snapshot_add_tensor(gck_snapshot *s, const char *name, gck_dtype dtype,
                                           const int64_t *shape, size_t ndim, const void *data);

/**
 * Adds a tensor by reference: the snapshot keeps `data` itself, not a copy
 * of its prod(shape) * gck_dtype_size(dtype) bytes (this CPU's byte order).
 * Name and shape are copied. The content id is computed here, once, from the
 * bytes as they are at this call; saving writes the bytes without hashing
 * them again. (gck_store_save needs every id before it writes anything: the
 * manifest lists them, and a tensor whose id equals the base version's is
 * stored as a reference without its bytes being read again. So an id taken
 * while writing would be a second read there; taken here, both
 * gck_store_save and gck_snapshot_save read the bytes once after the add.)
 *
 * What the caller guarantees: `data` stays allocated and unchanged from this
 * call until the last call that reads the snapshot's tensor bytes: those are
 * gck_snapshot_save and gck_store_save (and the caller's own reads through
 * gck_tensor_info.data). After that last read the caller may
 * change or free the memory; the snapshot must then only be destroyed
 * (gck_snapshot_destroy never touches borrowed memory) or asked for what is
 * not tensor data (step, metadata, names, shapes, content ids), never saved
 * again. Bytes changed between this call and a save are not detected here:
 * a file saved then carries the id of the old bytes and fails its content-id
 * check when loaded, and a store may record the tensor as unchanged.
 *
 * gck_snapshot_tensor and gck_snapshot_find_tensor report such a tensor with
 * data == the caller's pointer (never a copy), its nbytes, and the content
 * id computed at this call. Reference and copied tensors mix freely in one
 * snapshot; every other rule is gck_snapshot_add_tensor's.
 *
 * Ownership: borrows data (see above); copies name and shape.
 * Errors: as gck_snapshot_add_tensor (the snapshot is unchanged on error and
 *         keeps no reference to data then).
 * Thread-safety: one writer; the caller must not write data while a save of
 *         the snapshot runs on another thread.
 */
GCK_API gck_status gck_snapshot_add_tensor_ref(gck_snapshot *s, const char *name, gck_dtype dtype,
                                               const int64_t *shape, size_t ndim, const void *data);

/** One tensor for gck_snapshot_add_tensors_ref: the arguments of one
 *  gck_snapshot_add_tensor_ref call. */
typedef struct gck_tensor_ref {
    const char *name;
    gck_dtype dtype;
    const int64_t *shape; /**< ndim entries; NULL only when ndim is 0 */
    size_t ndim;
    const void *data;     /**< borrowed, as gck_snapshot_add_tensor_ref's */
} gck_tensor_ref;

/**
 * Adds n tensors by reference in one call: the same as n calls of
 * gck_snapshot_add_tensor_ref in list order (names, shapes, ids and the
 * borrowing rules alike), all or none, with the content ids computed on the
 * OpenMP threads (omp_get_max_threads(), or one below 256 KiB in all;
 * tensors spread over them, one tensor hashed by one thread, so the ids are
 * the same on any thread count).
 * A trainer's whole state in one call, hashed at up to the threads' memory
 * bandwidth instead of one core's.
 *
 * Ownership: borrows each data (see gck_snapshot_add_tensor_ref); copies
 *         names and shapes; keeps no reference to `tensors`.
 * Errors: GCK_ERR_INVALID_ARGUMENT for a NULL s, tensors NULL with n > 0,
 *         any entry gck_snapshot_add_tensor_ref would refuse (the message
 *         names it and its index), or two entries of one name;
 *         GCK_ERR_NO_MEMORY. On error the snapshot is unchanged and keeps no
 *         reference to any data.
 * Thread-safety: one writer, as gck_snapshot_add_tensor_ref; the call
 *         itself may use OpenMP threads.
 */
GCK_API gck_status gck_snapshot_add_tensors_ref(gck_snapshot *s, const gck_tensor_ref *tensors, size_t n);

/**
 * Makes s own the bytes of every tensor it does not own: each tensor added
 * with gck_snapshot_add_tensor_ref (or pointing into a file mapping of
 * gck_snapshot_load_mmap, or into a restore's shared buffer) gets a copy of
 * its bytes in memory of its own; the tensors s already owns are not
 * touched. Names, shapes, dtypes and content ids do not change (the bytes
 * are the same, so nothing is hashed again). One memcpy per borrowed tensor:
 * a snapshot built by reference and then owned costs one read for the ids
 * and one copy, as gck_snapshot_add_tensor does.
 *
 * The use: a snapshot built by reference that must outlive the buffers it
 * borrows; the caller may change or free them as soon as this returns.
 * (gck_store_save_async needs no such call: it copies borrowed bytes
 * itself, into buffers it reuses from one save to the next.)
 *
 * Ownership: s stays the caller's; it keeps no reference to the memory it
 *            borrowed before.
 * Errors: GCK_ERR_INVALID_ARGUMENT (s NULL); GCK_ERR_NO_MEMORY (naming the
 *         tensor). All or nothing: every buffer is allocated before any is
 *         used, so on error s is unchanged and still borrows.
 * Thread-safety: one writer; nobody may write the borrowed memory during
 *         the call.
 */
GCK_API gck_status gck_snapshot_own(gck_snapshot *s);

/**
 * A deep copy of s in new memory of its own: every tensor's bytes (borrowed
 * or not), content ids (not recomputed), optimizer blobs, step, timestamp,
 * loss cid and metadata. The copy borrows nothing, whatever s borrows.
 *
 * Ownership: *out is the caller's (gck_snapshot_destroy); s is only read.
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL); GCK_ERR_NO_MEMORY (*out untouched).
 * Thread-safety: safe while nobody modifies s or memory it borrows.
 */
GCK_API gck_status gck_snapshot_clone(const gck_snapshot *s, gck_snapshot **out);

/** Sets (or replaces) the loss content id. Errors: INVALID_ARGUMENT (NULL), NO_MEMORY. */
GCK_API gck_status gck_snapshot_set_loss_cid(gck_snapshot *s, const char *cid);

/**
 * Sets (or replaces) the optimizer-state blob of parameter `param` (copied).
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL s/param, blob NULL with len > 0,
 *         an empty, over-long or non-UTF-8 param; GCK_ERR_NO_MEMORY.
 *         Unchanged on error.
 */
GCK_API gck_status gck_snapshot_set_optimizer_state(gck_snapshot *s, const char *param, const void *blob,
                                                    size_t len);

/**
 * Sets (or replaces) a user metadata entry (both strings copied).
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL arguments, an empty, over-long
 *         or non-UTF-8 key, a non-UTF-8 value, or a key starting with
 *         "gradckpt."; GCK_ERR_NO_MEMORY. Unchanged on error.
 */
GCK_API gck_status gck_snapshot_set_metadata(gck_snapshot *s, const char *key, const char *value);

/**
 * Typed user metadata: the same string map as gck_snapshot_set_metadata
 * (same key rules, replacing any value), with the value written as text that
 * the getters below read back exactly, so a trainer's step, learning rate or
 * data-loader position needs no formatting of its own.
 *
 * u64: decimal digits ("%llu", e.g. "120000").
 * f64: every double round-trips bit for bit. A finite value is "%.17g" in
 *      the "C" locale whatever locale the program set ("0.001",
 *      "1.0000000000000001e-05", "-0", "4.9406564584124654e-324"); infinities
 *      are "inf" and "-inf"; the quiet NaN 0x7ff8000000000000 is "nan", its
 *      negative (what x86 arithmetic makes) "-nan", and any other NaN
 *      "nan:0x" followed by the 16 lowercase hex digits of its bits.
 *
 * Ownership: copies key (and the text); keeps no reference.
 * Errors: as gck_snapshot_set_metadata (the old value stays on error).
 * Thread-safety: one writer.
 */
GCK_API gck_status gck_snapshot_set_metadata_u64(gck_snapshot *s, const char *key, uint64_t value);
GCK_API gck_status gck_snapshot_set_metadata_f64(gck_snapshot *s, const char *key, double value);

/**
 * Reads a user metadata value as a number (set by the setters above, by
 * gck_snapshot_set_metadata, or by another writer of the file). Parsing is
 * strict, the whole value or nothing:
 *
 * u64: "0" or decimal digits without a leading zero, sign or space, at most
 *      UINT64_MAX.
 * f64: exactly "inf", "-inf", "nan", "-nan" or "nan:0x<16 hex digits of a
 *      NaN>", or a plain decimal "[-](digits[.digits]|.digits)[(e|E)[+|-]digits]"
 *      (no space, '+' sign, hex float or other spelling of inf/nan), read in
 *      the "C" locale and rounded correctly; a decimal beyond the largest
 *      double is refused, one below the smallest rounds as strtod rounds it.
 *
 * Ownership: writes *out only on success; keeps no reference.
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL s, key or out); GCK_ERR_NOT_FOUND
 *         (no user metadata under key; "gradckpt." keys are not user
 *         metadata); GCK_ERR_CORRUPT (the value is not of that form; the
 *         message quotes it).
 * Thread-safety: safe while nobody modifies s.
 */
GCK_API gck_status gck_snapshot_metadata_u64(const gck_snapshot *s, const char *key, uint64_t *out);
GCK_API gck_status gck_snapshot_metadata_f64(const gck_snapshot *s, const char *key, double *out);

/** Sets the creation timestamp (seconds since the epoch). Errors: INVALID_ARGUMENT (NULL). */
GCK_API gck_status gck_snapshot_set_timestamp(gck_snapshot *s, uint64_t unix_secs);

/**
 * Writes the snapshot as a safetensors file, atomically and durably: a
 * temporary file in the target's directory (`.<name>.tmp.<pid>.<n>`, locked
 * while it is written: see gck_snapshot_sweep_temporaries), every byte
 * written, fsync, rename over `path`, fsync of the directory. Tensors are laid out as the
 * reference writer lays them out (by dtype, widest first, then by name; the
 * JSON header padded with spaces to a multiple of 8 bytes); our fields go
 * into `__metadata__` under "gradckpt." keys (format, step, timestamp, loss
 * cid, per-tensor content ids); optimizer blobs are U8 tensors named
 * "__optimizer__/<param>". Values are written little-endian on any CPU.
 *
 * Ownership: reads s; keeps no reference.
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL); GCK_ERR_IO with the OS's reason
 *         (missing directory, permissions, disk full, ...): the target is
 *         then untouched and no temporary file is left — except when only
 *         the final fsync of the directory fails, where the new file is
 *         already in place (the message says so); GCK_ERR_NO_MEMORY.
 * Thread-safety: safe while nobody modifies s.
 */
GCK_API gck_status gck_snapshot_save(const gck_snapshot *s, const char *path);

/** What gck_snapshot_sweep_temporaries removed and kept. */
typedef struct gck_sweep_stats {
    size_t removed;       /**< temporary files removed */
    uint64_t bytes_freed; /**< their sizes in bytes */
    size_t live;          /**< kept: a live writer holds their lock */
    size_t young;         /**< kept: modified less than min_age_secs ago */
} gck_sweep_stats;

/**
 * Removes what interrupted saves left behind. Every save of this library
 * (gck_snapshot_save, gck_checkpoint_save, a store's data files and
 * manifest) writes `<dir>/.<name>.tmp.<pid>.<n>` (pid and n decimal)
 * next to its target `<dir>/<name>`, holds an exclusive flock(2) on it from
 * its creation until after it is renamed over the target, and removes it on
 * any error; only a writer that died (SIGKILL, power loss) leaves one.
 *
 * Removed: regular files in `dir` whose names have exactly that form, for
 * the target `name` (NULL: every target), whose lock nobody holds and that
 * were not modified in the last min_age_secs seconds (0: no age rule). Never
 * touched: any other name, symbolic links, directories, a file a live
 * writer holds locked, and files newer than min_age_secs - which also
 * protects writers on file systems without flock and of gradckpt versions
 * that took no lock (they modify the file as they write it).
 *
 * Ownership: out may be NULL.
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL or empty dir, a name that is empty
 *         or contains '/'); GCK_ERR_IO (dir cannot be listed, or a file
 *         cannot be removed: the message names it; files removed before it
 *         stay removed and are counted in *out).
 * Thread-safety: safe from any thread and beside any number of writers.
 */
GCK_API gck_status gck_snapshot_sweep_temporaries(const char *dir, const char *name, uint64_t min_age_secs,
                                                  gck_sweep_stats *out);

/**
 * Reads and validates a safetensors file (ours or another writer's): header
 * length within the file and at most 100 MB, a UTF-8 JSON object, known
 * dtypes, non-negative integer shapes and offsets, offsets in order from 0,
 * contiguous and ending at the end of the file, element count x size equal
 * to the byte span (overflow-checked), no duplicate names, no tensor called
 * "__metadata__", string-only metadata, and our content ids when present.
 * Files without our keys load with step and timestamp 0 and their
 * `__metadata__` as user metadata.
 *
 * Ownership: *out is the caller's (gck_snapshot_destroy).
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL); GCK_ERR_IO (cannot open/read);
 *         GCK_ERR_CORRUPT with the rule and the place that failed;
 *         GCK_ERR_UNSUPPORTED for a newer gradckpt format version, or a
 *         dtype newer safetensors versions define that gck_dtype lacks (F4,
 *         F6_E2M3, F6_E3M2, F8_E8M0, C64);
 *         GCK_ERR_NO_MEMORY. No allocation exceeds the file's size.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_snapshot_load(const char *path, gck_snapshot **out);

/**
 * gck_snapshot_load for large files, without copying the values: the file
 * is mapped read-only and tensor data points into the mapping (tensors whose
 * bytes are not aligned for their type, optimizer blobs, and every tensor on
 * a big-endian CPU are copied). Every structural rule of gck_snapshot_load
 * is checked. With verify = 0, content ids are taken from the file's
 * gradckpt.cid.* keys where present and the values are not read at load
 * time (pages come in as they are used); with verify = 1 every byte is
 * hashed and checked, as gck_snapshot_load does.
 *
 * Ownership: *out owns the mapping; it is unmapped by gck_snapshot_destroy.
 *            Changing or truncating the file while the snapshot is alive is
 *            undefined (as with any mapping; SIGBUS on truncation).
 * Errors: as gck_snapshot_load.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_snapshot_load_mmap(const char *path, int verify, gck_snapshot **out);

/**
 * Restores chosen tensors of a safetensors file straight into the caller's
 * memory (a trainer's weights and optimizer moments, say): the tensor named
 * names[i] is read into dsts[i], which holds exactly sizes[i] bytes - the
 * tensor's byte size in the file - in this CPU's byte order. A name is a
 * tensor name, or "__optimizer__/<param>" for an optimizer blob. Tensors not
 * named are not read. The bytes are read (pread) straight into dsts[i], with
 * no other copy, each piece hashed as it arrives, and every tensor's content
 * id is checked against the file's gradckpt.cid.<name> (a file from another
 * writer without recorded ids is read without that check). Dtypes are not
 * compared: dsts[i] receives the stored bytes. Large restores read tensors
 * on OpenMP threads.
 *
 * fields (may be NULL) receives, on success only, a new snapshot holding the
 * file's step, timestamp, loss cid and user metadata and no tensors, for
 * gck_snapshot_step, gck_snapshot_metadata_u64/_f64 and the like.
 *
 * Errors, and what the destinations hold after them:
 * - detected before any destination is written (every dsts[i] untouched):
 *   GCK_ERR_INVALID_ARGUMENT (path NULL; names, dsts or sizes NULL with
 *   n > 0; a NULL name or a name given twice; dsts[i] NULL with sizes[i] > 0;
 *   two destinations that overlap), GCK_ERR_IO (cannot open the file or read
 *   its header), GCK_ERR_CORRUPT (any structural rule of gck_snapshot_load),
 *   GCK_ERR_UNSUPPORTED (as gck_snapshot_load), GCK_ERR_NOT_FOUND (a name
 *   the file lacks), GCK_ERR_DIMENSION_MISMATCH (sizes[i] differs from the
 *   tensor's bytes; the message gives both), GCK_ERR_NO_MEMORY;
 * - detected while the values are read: GCK_ERR_IO (a read fails) and
 *   GCK_ERR_CORRUPT (a content id mismatch), the message naming the tensor.
 *   The destinations have then been written: every dsts[i] holds unspecified
 *   bytes (some or all of the file's) and must be restored again or
 *   discarded. Keeping them intact would need a second buffer, i.e. a copy.
 *
 * Ownership: writes dsts; keeps no reference; *fields is the caller's.
 * Thread-safety: safe from any thread, on destinations nobody else uses.
 */
GCK_API gck_status gck_snapshot_load_into(const char *path, const char *const *names, void *const *dsts,
                                          const size_t *sizes, size_t n, gck_snapshot **fields);

/* ---- sharded snapshots: a directory in the Hugging Face sharded layout ---------- */

/**
 * File name of a sharded snapshot's index inside its directory. Writing it
 * (atomically) is the commit of a sharded save. It is the Hugging Face
 * sharded layout: {"metadata": {...}, "weight_map": {name: shard file}}.
 * "metadata" holds "total_size" (the items' bytes, a JSON integer) and, as
 * strings, every key a single-file save writes to `__metadata__` (step,
 * timestamp, loss cid, user metadata, one gradckpt.cid.<name> per tensor
 * and optimizer blob) plus "gradckpt.generation", the commit's number.
 * "weight_map" maps every tensor name and every "__optimizer__/<param>" to
 * its shard, "model-g<generation>-<k>-of-<S>.safetensors" (k from 00001),
 * a safetensors file as gck_snapshot_save writes it, holding those items
 * only. Shard names are unique per commit, so a save never overwrites a
 * file the current commit names.
 */
#define GCK_SHARDED_INDEX "model.safetensors.index.json"

/**
 * Saves s as a sharded snapshot in directory `dir` (created if missing; its
 * parent must exist), written as num_writers writers would: every step of
 * the collective gck_mpi_snapshot_save in one process. The items (tensors
 * and optimizer blobs) go to S = min(num_writers, items) shards, balanced
 * by bytes: largest first (ties by name), each to the least-loaded shard
 * (ties to the lowest). The assignment depends on the names and byte sizes
 * only. Steps: gck_snapshot_sharded_begin, gck_snapshot_save_shard for
 * every shard, gck_snapshot_sharded_commit.
 *
 * A crash or error before the index is renamed into place leaves the
 * previous commit loadable; its files are removed by the next commit. One
 * writer per directory at a time (a second writer's commit removes the
 * first one's shards); never beside a gck_snapshot_load_sharded of it.
 *
 * Ownership: reads s; keeps no reference.
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL or empty arguments, num_writers 0);
 *         GCK_ERR_IO (the directory cannot be created, listed or written);
 *         GCK_ERR_CORRUPT (an existing index is malformed: its generation
 *         cannot be read); GCK_ERR_NO_MEMORY.
 * Thread-safety: safe from any thread on distinct directories.
 */
GCK_API gck_status gck_snapshot_save_sharded(const gck_snapshot *s, const char *dir, size_t num_writers);

/**
 * First step of a sharded save (done by one writer, e.g. MPI rank 0): makes
 * `dir` if it is missing (one level, then the parent is fsynced) and gives
 * the new commit's generation: one more than the largest generation of the
 * index and of every shard file in dir (uncommitted leftovers included), so
 * its shard names are new.
 *
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL or empty); GCK_ERR_IO;
 *         GCK_ERR_CORRUPT (the index is malformed); GCK_ERR_NO_MEMORY.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_snapshot_sharded_begin(const char *dir, uint64_t *generation);

/**
 * Writes shard `shard` (0-based) of s's items as assigned for num_writers
 * writers (see gck_snapshot_save_sharded), durably (temporary file, fsync,
 * rename, directory fsync), under its generation's name in dir. A shard
 * index >= S (more writers than items) writes nothing and succeeds. The
 * writers may be different processes or hosts holding equal snapshots
 * (same names, shapes and content ids; the index records the committing
 * writer's fields).
 *
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL or empty, num_writers 0,
 *         shard >= num_writers, generation 0); GCK_ERR_IO (the file is then
 *         absent); GCK_ERR_NO_MEMORY.
 * Thread-safety: safe from any thread (distinct shards, same s: fine).
 */
GCK_API gck_status gck_snapshot_save_shard(const gck_snapshot *s, const char *dir, uint64_t generation,
                                           size_t shard, size_t num_writers);

/**
 * The commit, once every shard of `generation` is durable: writes the index
 * atomically (temporary, fsync, rename, directory fsync), then removes the
 * shard files of other generations (best effort: a file that cannot be
 * removed is removed by the next commit, and the commit still succeeds).
 *
 * Errors: GCK_ERR_INVALID_ARGUMENT (as gck_snapshot_save_shard);
 *         GCK_ERR_IO: if the index was not renamed, the previous commit is
 *         intact; if only the directory fsync failed the new index is in
 *         place and the message says so; GCK_ERR_NO_MEMORY.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_snapshot_sharded_commit(const gck_snapshot *s, const char *dir, uint64_t generation,
                                               size_t num_writers);

/**
 * Loads a sharded snapshot directory (ours, or another writer's Hugging Face
 * index: then without our metadata, step 0, and content ids checked only
 * where the shard files record them): the index's fields and the items
 * named (tensor names and "__optimizer__/<param>"; names NULL with n 0: all
 * of weight_map). Only the shards holding them are opened, and only their
 * bytes read; each item's bytes are checked against the index's content id
 * (else the shard's). Every shard opened passes gck_snapshot_load's
 * structural rules.
 *
 * Ownership: *out is the caller's (gck_snapshot_destroy).
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL dir or out, names NULL with n > 0,
 *         a NULL name or one named twice); GCK_ERR_IO (the index or a shard
 *         it names cannot be opened or read: a missing shard);
 *         GCK_ERR_CORRUPT (an index that is not such a JSON object, a
 *         shard file name that is not a plain name, a shard lacking an item
 *         the index puts in it, any shard rule of gck_snapshot_load, a
 *         content id mismatch); GCK_ERR_NOT_FOUND (a name weight_map lacks);
 *         GCK_ERR_UNSUPPORTED (a newer format or an unknown dtype);
 *         GCK_ERR_NO_MEMORY. *out is untouched on error.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_snapshot_load_sharded(const char *dir, const char *const *names, size_t n,
                                             gck_snapshot **out);

/**
 * Two digests of s, for checking that processes hold the same snapshot
 * without sending it: *layout over the tensors' names, dtypes and shapes and
 * the optimizer blobs' names and lengths; *content over the step, the loss
 * cid, the user and "gradckpt." metadata and every item's content id. The
 * timestamp is left out. Equal snapshots give equal digests on every CPU.
 *
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL).
 * Thread-safety: safe beside other readers of s.
 */
GCK_API gck_status gck_snapshot_digest(const gck_snapshot *s, uint64_t *layout, uint64_t *content);

/** One tensor of a snapshot; pointers owned by the snapshot. */
typedef struct gck_tensor_info {
    const char *name;
    gck_dtype dtype;
    const int64_t *shape;
    size_t ndim;
    const void *data;       /**< this CPU's byte order */
    size_t nbytes;
    const char *content_id; /**< "xxh3:" + 16 hex digits of XXH3-64 over the little-endian bytes */
} gck_tensor_info;

/* Accessors; NULL s gives 0 / NULL. Borrowed pointers live as long as s. */
GCK_API uint64_t gck_snapshot_step(const gck_snapshot *s);
GCK_API uint64_t gck_snapshot_timestamp(const gck_snapshot *s);
GCK_API const char *gck_snapshot_loss_cid(const gck_snapshot *s); /**< NULL if unset */
GCK_API size_t gck_snapshot_num_tensors(const gck_snapshot *s);
/** Tensor i in name order. Errors: INVALID_ARGUMENT (NULL or index past the end). */
GCK_API gck_status gck_snapshot_tensor(const gck_snapshot *s, size_t i, gck_tensor_info *out);
/** Tensor by name. Errors: INVALID_ARGUMENT (NULL), NOT_FOUND. */
GCK_API gck_status gck_snapshot_find_tensor(const gck_snapshot *s, const char *name, gck_tensor_info *out);
GCK_API size_t gck_snapshot_num_optimizer_states(const gck_snapshot *s);
/** Blob i in parameter-name order. Errors: INVALID_ARGUMENT (NULL or index past the end). */
GCK_API gck_status gck_snapshot_optimizer_state(const gck_snapshot *s, size_t i, const char **param,
                                                const void **blob, size_t *len);
/** Blob by parameter name. Errors: INVALID_ARGUMENT (NULL), NOT_FOUND. */
GCK_API gck_status gck_snapshot_find_optimizer_state(const gck_snapshot *s, const char *param, const void **blob,
                                                     size_t *len);
/** User metadata value, or NULL if unset. */
GCK_API const char *gck_snapshot_metadata(const gck_snapshot *s, const char *key);
/** Number of user metadata entries, and entry i in key order (NULL past the end). */
GCK_API size_t gck_snapshot_num_metadata(const gck_snapshot *s);
GCK_API const char *gck_snapshot_metadata_key(const gck_snapshot *s, size_t i);

/**
 * Saves a checkpoint as a safetensors file (same atomic protocol as
 * gck_snapshot_save): one 1-D tensor per layer named by its id, the
 * checkpoint's step and created_at as the snapshot's step and timestamp, and
 * "gradckpt." keys for the id, the compressed size, the checksum (algorithm
 * and value) and every layer's step. The values are written from the
 * checkpoint's memory, not copied.
 *
 * Ownership: reads c; keeps no reference.
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL arguments or a layer id that is
 *         "__metadata__" or starts with "__optimizer__/"; GCK_ERR_IO;
 *         GCK_ERR_NO_MEMORY.
 * Thread-safety: safe from any thread (checkpoints are immutable).
 */
GCK_API gck_status gck_checkpoint_save(const gck_checkpoint *c, const char *path);

/**
 * Loads a checkpoint written by gck_checkpoint_save: every snapshot rule,
 * then the checkpoint's own keys; layer norms and the global norm are
 * recomputed from the values and the stored checksum is verified with its
 * algorithm.
 *
 * Ownership: *out is a new reference the caller releases.
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL); GCK_ERR_IO; GCK_ERR_CORRUPT (any
 *         snapshot rule, missing checkpoint keys, layers that are not 1-D
 *         F32/F64/BF16 of one dtype, a checksum mismatch); GCK_ERR_NO_MEMORY.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_checkpoint_load(const char *path, gck_checkpoint **out);

#ifdef __cplusplus
}
#endif
#endif /* GRADCKPT_SNAPSHOT_H */
