/* gradckpt/store.h - versioned snapshots in a directory, with lossless deltas and crash-safe bookkeeping. */
#ifndef GRADCKPT_STORE_H
#define GRADCKPT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/export.h>
#include <gradckpt/manager.h>
#include <gradckpt/snapshot.h>
#include <gradckpt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A directory of snapshot versions, kept by gck_manager's rules (full vs
 * delta, keep_every_n, bounded history, tags) but with real data:
 *
 * - a full version is a plain safetensors file (gck_snapshot_save), which any
 *   safetensors reader opens - unless compress_full is set: then it is
 *   stored as a delta against nothing (every tensor's byte planes coded as
 *   below; "v<N>-g<G>.packed.safetensors"), still a valid safetensors file
 *   whose tensors are U8 payloads;
 * - a delta version is a safetensors file too, holding only what changed
 *   against its base (the latest version at save time): a tensor or
 *   optimizer blob with the base's content id is a reference; one with the
 *   base's dtype and size is stored as the XOR of its bits with the base's,
 *   split into byte planes; anything else is stored whole (planes); an
 *   item's planes are one payload tensor (U8), for which the file records
 *   no content id (older files do): every item rebuilt from it is checked
 *   against the item's own recorded id, which a damaged payload fails;
 * - each byte plane is coded with what a sample of it says pays (coder
 *   GCK_STORE_CODER_AUTO): stored raw when its order-0 entropy is above
 *   zstd_max_entropy; zstd at zstd_level when it has long runs (frozen rows,
 *   sparse updates); rANS order-0 (htscodecs) when its entropy is low
 *   (exponent planes), where Huffman cannot go below one bit per byte -
 *   "zrans" when the plane's most common byte is at least half of it: the
 *   bitmap of the other bytes (zstd's Huffman stage; rANS without zstd)
 *   and those bytes (rANS), the same entropy in a third of the symbols
 *   (gck_sparse_split); zstd's Huffman stage alone otherwise. A build
 *   without htscodecs codes those planes with Huffman instead and refuses
 *   to read rANS and zrans planes (GCK_ERR_UNSUPPORTED), as one without
 *   zstd does for zstd planes and zstd-coded bitmaps. Deltas written since
 *   zrans (delta format 4) are refused as unknown by older readers;
 * - an f32 or bf16 tensor stored whole (every tensor of a coded full
 *   version, a new tensor in a delta) whose values have both signs has the
 *   byte planes of its values rotated left one bit (gck_xor_shuffle_rot):
 *   the exponent then fills the top plane and the sign bit joins the
 *   lowest, which lowers the planes' entropy of trained weights and first
 *   moments (0.2-0.7 % of a full version). A file holding such a tensor
 *   says format 5, which readers before it refuse as unknown;
 * - `manifest.json` lists the versions, tags, bases and content ids. Every
 *   change (save, tag, eviction) writes new data files first and then
 *   replaces the manifest atomically and durably, so after a crash at any
 *   point the store reopens in the old or the new state; files the manifest
 *   does not name are removed when a writer opens the store (or by gck_store_gc).
 *   A save costs three fsyncs, also one that evicts: the new data file
 *   (written under its final name) and the manifest's temporary file,
 *   fsynced together, then after the rename over manifest.json one fsync of
 *   the directory, which makes both names durable. This relies on the file
 *   system committing a directory's entries in the order they were made, as
 *   Linux's journaling file systems do.
 *
 * Eviction never rewrites a file and never leaves a version unrestorable.
 * An evicted version whose data file the chain of a retained version still
 * reads (a delta's base, or a base of that base) stays on disk as a *hidden
 * base*: the manifest records it (so a reopened store, read-only handles,
 * verify, gc and the cleanup at open keep its file), but it is not a
 * version any more - gck_store_versions, get, latest, find_tag and the
 * version counts of gck_store_stats_get leave it out, and restoring it is
 * GCK_ERR_NOT_FOUND as for any evicted version - while its file's size
 * counts in disk_bytes (and hidden_bytes). It is dropped, and its file
 * deleted after that commit, by the commit that drops the last retained
 * version whose chain reads it. A chain holds at most max_checkpoints files
 * (the version after a chain that long is full), which bounds the hidden
 * bases: without tags at most min(keep_every_n, max_checkpoints) - 1 (with
 * keep_every_n 0: max_checkpoints - 1), so at most 4 with the default policy
 * (the full version and the deltas below the oldest retained version of
 * its chain); each tagged delta keeps at most as many of its own chain. A
 * save never takes as its base the version it evicts: its base becomes that
 * version's retained base, or it is full (max_checkpoints = 1 gives full
 * versions). Tagged versions are never evicted.
 *
 * One writer at a time: gck_store_open takes an exclusive lock on
 * `<dir>/lock` (flock) and refuses a store that is open elsewhere, also in
 * the same process. Readers (gck_store_open_readonly) take no lock and write
 * nothing: any number of them may look at a store while its writer saves. A
 * store object is not thread-safe.
 *
 * The store keeps an in-memory copy of the latest version (the base of the
 * next delta) and one buffer for a delta's planes, reused from save to save
 * (so saves take no page faults): together up to twice the size of a
 * snapshot. So a delta save reads nothing from disk, a restore of the latest
 * copies it, and a restore of a version on its chain with fewer deltas
 * between it and the latest than between it and the chain's full version
 * undoes the deltas in between on a copy of the latest (reading those
 * deltas and the version's own file, not the lower part of the chain;
 * every content id is checked as for any restore). Encoding and a
 * restore's decoding spread tensors over OpenMP threads; the files and the
 * restored values are the same bytes on any thread count.
 */
typedef struct gck_store gck_store;

/** How the byte planes of deltas (and compressed full versions) are coded. */
enum {
    GCK_STORE_CODER_AUTO = 0, /**< per plane: raw, rANS order-0, Huffman or zstd (above); the default */
    GCK_STORE_CODER_ZSTD = 1  /**< every coded plane zstd at zstd_level (stores made before the others) */
};

typedef struct gck_store_config {
    gck_policy policy; /**< as gck_manager's; defaults from gck_policy_init */
    int zstd_level;    /**< -7..-1 (zstd's fast levels) or 1..19; default 1 */
    /**
     * A byte plane whose sampled order-0 entropy, as a fraction of 8 bits,
     * is above this is stored as plain bytes (coding it would gain little
     * and cost time). Default 0.97. In (0, 1]. Stores made before the
     * per-plane coder recorded 0.25 with GCK_STORE_CODER_ZSTD and keep it
     * until a configuration is given to gck_store_open.
     */
    double zstd_max_entropy;
    int coder;         /**< GCK_STORE_CODER_AUTO (default) or GCK_STORE_CODER_ZSTD */
    int compress_full; /**< 1: full versions coded as above (not plain safetensors); default 0 */
    /**
     * OpenMP threads that encode an asynchronous save on the store's
     * background thread (gck_store_save_async). Default 1: the save then
     * leaves the other cores to the training step it runs beside. 0: as a
     * synchronous save (omp_get_max_threads() for large states).
     */
    int async_threads;
} gck_store_config;

/**
 * Fills *c with the defaults (policy as gck_policy_init, zstd_level 1,
 * zstd_max_entropy 0.97, coder GCK_STORE_CODER_AUTO, compress_full 0,
 * async_threads 1). NULL is ignored. Thread-safe (touches only *c).
 */
GCK_API void gck_store_config_init(gck_store_config *c);

/**
 * Opens the store in `dir`, creating the directory (one level) and an empty
 * store if there is none. cfg NULL keeps the store's recorded configuration
 * (the defaults for a new store); a non-NULL cfg replaces it and is recorded.
 *
 * Ownership: *out is the caller's (gck_store_close).
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL, a config field out of its range); GCK_ERR_IO (cannot
 *         create or read the directory, or the store is open in another
 *         process or handle - the message says so); GCK_ERR_CORRUPT
 *         (unreadable manifest); GCK_ERR_UNSUPPORTED (newer store format, or
 *         zstd deltas in a build without zstd); GCK_ERR_NO_MEMORY.
 * Thread-safety: safe from any thread; the store is then one thread's.
 */
GCK_API gck_status gck_store_open(const char *dir, const gck_store_config *cfg, gck_store **out);

/**
 * Opens the store in `dir` for reading only, beside a writer that may be
 * saving to it (a training job) and any number of other readers:
 *
 * - no lock is taken and nothing is written, created or removed (no gc), so
 *   it works on a read-only directory or file system, never waits for or
 *   blocks the writer, and leaves the directory exactly as it was;
 * - the handle's view is the one manifest it read at open (a whole one: the
 *   writer replaces it by rename): gck_store_versions, get, latest,
 *   find_tag, config_get and stats_get answer from it and never change;
 * - gck_store_restore and gck_store_verify read the data files the view
 *   names. A writer never changes a data file and removes one only after
 *   committing a manifest that no longer names it, so what a reader finds is
 *   what was saved. When a file of a version's chain has gone since the
 *   view was read, the current manifest decides: a version the writer
 *   still retains (rebased by a writer of an older build) is rebuilt from
 *   its new files (same content, every check made); a version the writer
 *   evicted is GCK_ERR_NOT_FOUND with the message
 *   "version N was evicted meanwhile (...)". A file still named by the
 *   current manifest but missing is damage: GCK_ERR_IO, as for a writer;
 * - gck_store_save, tag, untag and gc are refused with
 *   GCK_ERR_INVALID_ARGUMENT ("... is open read-only") before anything is
 *   written.
 *
 * Ownership: *out is the caller's (gck_store_close).
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL, empty or over-long dir); GCK_ERR_IO
 *         (the directory cannot be read or is not a directory);
 *         GCK_ERR_NOT_FOUND (no manifest.json: not a store - none is
 *         created); GCK_ERR_CORRUPT (unreadable manifest); GCK_ERR_UNSUPPORTED
 *         (newer store format, zstd deltas in a build without zstd);
 *         GCK_ERR_NO_MEMORY.
 * Thread-safety: safe from any thread; the handle is then one thread's.
 */
GCK_API gck_status gck_store_open_readonly(const char *dir, gck_store **out);

/**
 * Waits for an asynchronous save in flight (gck_store_save_async), ends the
 * store's background thread, releases the lock (if it holds one) and frees
 * the store, in every case. NULL is fine (GCK_OK).
 * Returns GCK_OK, or the error of an asynchronous save nobody was told of
 * yet (gck_last_error() names it, prefixed "asynchronous save: "): close is
 * the last place such an error can be reported.
 * Ownership: pointers the store lent (entries, version infos) become invalid.
 * Thread-safety: the store's one thread; never while another call on it runs.
 */
GCK_API gck_status gck_store_close(gck_store *s);

/**
 * Saves `snap` as the next version with the given tags (copied; a repeated
 * tag is kept once). Full or delta and eviction follow the policy (above).
 * version_out may be NULL. The files an eviction drops are deleted after the
 * commit on a thread the save starts (see gck_store_wait).
 *
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL s/snap, tags NULL with n_tags > 0,
 *         a NULL or empty tag, a read-only handle); GCK_ERR_IO (the message names the file);
 *         GCK_ERR_CORRUPT (a base needed for the delta fails its check); GCK_ERR_NO_MEMORY. On error the store is unchanged: the
 *         manifest was not replaced and the files written for it are removed
 *         - except a GCK_ERR_IO whose message says "saved, but cannot sync":
 *         then only the final directory fsync failed and the version is saved
 *         (*version_out is set), its survival of a power loss unknown.
 *         An asynchronous save that failed and was not yet reported is
 *         reported here instead (message "asynchronous save: ..."), and this
 *         snapshot is then not saved.
 * Ownership: snap stays the caller's; nothing of it is kept (the store may
 *         keep a copy of its content in memory as the next delta's base).
 * Thread-safety: the store's one thread; waits first for an asynchronous
 *         save in flight.
 */
GCK_API gck_status gck_store_save(gck_store *s, const gck_snapshot *snap, const char *const *tags, size_t n_tags,
                                  uint64_t *version_out);

/**
 * Saves `snap` as gck_store_save does - same files, same fsyncs, same
 * manifest commit, so the same crash safety - but on the store's background
 * thread, and returns as soon as the snapshot is handed over: the caller
 * goes on training while the save encodes, writes and syncs. A save is
 * acknowledged (survives a crash) only once its completion has been
 * reported: gck_store_wait returning GCK_OK, or any later call on the store
 * returning (every call waits first).
 *
 * Memory is bounded: at most one snapshot is in flight. A second
 * asynchronous save while one is in flight first waits for it. Every other
 * call on the store (save, restore, tag, get, latest, versions, verify,
 * close, ...) also first waits for it, so their answers include it.
 *
 * The background thread encodes with cfg.async_threads OpenMP threads (its
 * own setting; the caller's threads are untouched).
 *
 * Tensors that borrow their bytes (gck_snapshot_add_tensor_ref, a file
 * mapping, gck_checkpoint_save's snapshot) are copied before this returns,
 * on the caller's thread, after the wait above - the one copy an
 * asynchronous save needs. The store keeps the buffers of that copy once
 * the save is done and copies the next borrowed snapshot's tensors of the
 * same name and size into them: a training job that saves the same
 * tensors again and again allocates (and faults in) that memory once. So
 * between asynchronous saves of borrowed snapshots the store holds one
 * copy of the tensors saved last (freed by gck_store_close), the memory a
 * save in flight holds anyway. Tensors in the snapshot's own memory (added
 * with gck_snapshot_add_tensor, or those of a loaded or restored snapshot)
 * pass to the store with it and are not copied.
 *
 * Ownership: snap passes to the store in every case - on success the store
 *         destroys it after saving it, on an error at once. The caller may
 *         change or free its own buffers, borrowed ones included, as soon
 *         as this returns. Tags are copied.
 * Errors (the save then does not happen, snap is destroyed): as
 *         gck_store_save's argument checks (GCK_ERR_INVALID_ARGUMENT); the
 *         previous asynchronous save's error if it failed and was not
 *         reported yet ("asynchronous save: ...");
 *         GCK_ERR_NO_MEMORY (also for the copy of borrowed tensors, naming
 *         the tensor); GCK_ERR_IO (no thread could be started). The
 *         save's own errors (I/O, corruption of a base, memory) are reported
 *         later, by gck_store_wait, the next save or gck_store_close - never
 *         lost; on such an error the store is unchanged exactly as for
 *         gck_store_save.
 * Thread-safety: the store's one thread; nobody may write the memory snap
 *         borrows until this returns.
 */
GCK_API gck_status gck_store_save_async(gck_store *s, gck_snapshot *snap, const char *const *tags, size_t n_tags);

/**
 * Waits until no asynchronous save is in flight and reports the last one:
 * GCK_OK when it succeeded (or none failed unreported), else its error,
 * once (gck_last_error() gives its message, prefixed "asynchronous save: ").
 * version_out (may be NULL) receives the version the last completed
 * asynchronous save became (0 when none completed; set also for the
 * "saved, but cannot sync" case of gck_store_save). It also waits until
 * the files the last commit dropped (evicted versions, hidden bases no
 * longer read) are deleted: a save deletes them on a thread of its own
 * after its commit, so that the save returns without waiting for the file
 * system (gck_store_gc and gck_store_close wait for it too). A deletion a
 * crash interrupts leaves garbage the next gck_store_open removes.
 * Errors: GCK_ERR_INVALID_ARGUMENT (s NULL), or the save's error.
 * Thread-safety: the store's one thread.
 */
GCK_API gck_status gck_store_wait(gck_store *s, uint64_t *version_out);

/**
 * Rebuilds a retained version, bit-identical to what was saved (every
 * tensor's content id, and the step, timestamp and the digest of every other
 * field the manifest records, are checked on the way). The bases of a
 * delta's chain are read and decoded but not hashed themselves: every
 * tensor of the version restored is, so a damaged base byte it uses is
 * found there (GCK_ERR_CORRUPT naming the version restored).
 * Ownership: *out is the caller's (gck_snapshot_destroy).
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL), GCK_ERR_NOT_FOUND (not retained;
 *         on a read-only handle also "version N was evicted meanwhile"),
 *         GCK_ERR_IO, GCK_ERR_CORRUPT (a file fails its checks; the message
 *         names it), GCK_ERR_UNSUPPORTED, GCK_ERR_NO_MEMORY.
 * Thread-safety: the store's one thread (every store call below waits first
 *         for an asynchronous save in flight; read-only handles of other
 *         processes may read at the same time).
 */
GCK_API gck_status gck_store_restore(gck_store *s, uint64_t version, gck_snapshot **out);

/**
 * Restores chosen tensors of a retained version straight into the caller's
 * memory, as gck_snapshot_load_into does for a file: the tensor named
 * names[i] (an optimizer blob as "__optimizer__/<param>") goes into dsts[i],
 * which holds exactly sizes[i] bytes, its byte size, in this CPU's byte
 * order; tensors not named are not read. Full and delta versions alike, with
 * no copy of a tensor beyond the one into dsts[i]: each tensor's bytes are
 * found where they are stored whole - a full version's file, read (pread)
 * straight into dsts[i]; a delta item stored raw, decoded into it; or the
 * store's in-memory copy of the latest version, copied into it - and every
 * delta above that, up to `version`, is decoded into dsts[i] in place (XOR
 * with what it holds, a chunk at a time). A full version's tensor whose next
 * delta stores an XOR is read into dsts[i] by the thread that then decodes
 * that delta into it (little-endian CPUs), so the reads run on every
 * thread. Every tensor's content id is then checked against the manifest (a
 * full file's bytes read into dsts[i] also against their own version's id,
 * as they are read; bytes a delta was decoded against are checked through
 * the rebuilt tensor's id). Dtypes are not compared. fields (may be
 * NULL) receives, on success only, a snapshot with the version's step,
 * timestamp, loss cid and user metadata and no tensors. The store is not
 * changed (its cache included).
 *
 * Errors, and what the destinations hold after them:
 * - detected before any destination is written (every dsts[i] untouched):
 *   GCK_ERR_INVALID_ARGUMENT (as gck_snapshot_load_into: NULL arrays, a NULL
 *   or repeated name, overlapping destinations, ...), GCK_ERR_NOT_FOUND (the
 *   version is not retained, or does not hold a name), GCK_ERR_DIMENSION_MISMATCH
 *   (sizes[i] differs; the message gives both), GCK_ERR_IO (a file of the
 *   version's chain cannot be opened or its header read), GCK_ERR_CORRUPT (a
 *   file's structure, or a chain that does not fit together: a delta against
 *   another base, a tensor missing from a base or stored there with another
 *   size), GCK_ERR_UNSUPPORTED, GCK_ERR_NO_MEMORY;
 * - detected while values are read or decoded: GCK_ERR_IO (a read fails),
 *   GCK_ERR_CORRUPT (a damaged compressed plane, a content id mismatch), the
 *   message naming the version and tensor. The destinations have then been
 *   written: every dsts[i] holds unspecified bytes and must be restored again
 *   or discarded (keeping them intact would need a second buffer, a copy).
 *
 * Ownership: writes dsts; keeps no reference; *fields is the caller's.
 * Thread-safety: as every store call, one thread at a time.
 */
GCK_API gck_status gck_store_restore_into(gck_store *s, uint64_t version, const char *const *names,
                                          void *const *dsts, const size_t *sizes, size_t n, gck_snapshot **fields);

/**
 * Rebuilds only the named tensors and optimizer blobs (as
 * "__optimizer__/<param>") of a retained version, as a new snapshot with the
 * version's step, timestamp, loss cid and metadata: only their bytes are
 * read from each file of the version's chain (full and delta alike; the
 * latest version is copied from the store's memory), through
 * gck_store_restore_into, so every content id is checked as there. n may
 * be 0 (the fields alone).
 * Ownership: *out is the caller's (gck_snapshot_destroy); names are not kept.
 * Errors (*out untouched, the store unchanged): GCK_ERR_INVALID_ARGUMENT
 *         (NULL, a NULL or repeated name), GCK_ERR_NOT_FOUND (the version is
 *         not retained or has no such tensor), and those of
 *         gck_store_restore_into (GCK_ERR_IO, GCK_ERR_CORRUPT,
 *         GCK_ERR_UNSUPPORTED, GCK_ERR_NO_MEMORY). On a read-only handle a
 *         version whose file a writer replaced since the handle opened is
 *         GCK_ERR_IO here (gck_store_restore follows the writer instead).
 * Thread-safety: the store's one thread.
 */
GCK_API gck_status gck_store_restore_select(gck_store *s, uint64_t version, const char *const *names, size_t n,
                                            gck_snapshot **out);

/**
 * Tags a retained version (durably; a tag already there is a no-op).
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL or empty tag, a read-only handle), GCK_ERR_NOT_FOUND,
 *         GCK_ERR_IO, GCK_ERR_NO_MEMORY; unchanged on error (but for the
 *         "saved, but cannot sync" case of gck_store_save).
 * Thread-safety: the store's one thread.
 */
GCK_API gck_status gck_store_tag(gck_store *s, uint64_t version, const char *tag);

/**
 * Removes `tag` from a retained version (durably); a tag it does not carry
 * is a no-op. With its last tag gone the version can be evicted again: this
 * is how a moving tag such as "best" is kept on one version.
 * Errors and thread-safety: as gck_store_tag.
 */
GCK_API gck_status gck_store_untag(gck_store *s, uint64_t version, const char *tag);

/*
 * The queries below read the store's state in memory (no file is opened).
 * Each first waits for an asynchronous save in flight, so its answer
 * includes it. Thread-safety: the store's one thread.
 */

/**
 * The newest retained version carrying `tag` into *version_out.
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL), GCK_ERR_NOT_FOUND (no version has it).
 */
GCK_API gck_status gck_store_find_tag(const gck_store *s, const char *tag, uint64_t *version_out);

/**
 * As gck_manager_versions: writes up to cap retained versions ascending into
 * out (may be NULL when cap is 0) and returns how many are retained (0 for NULL s).
 */
GCK_API size_t gck_store_versions(const gck_store *s, uint64_t *out, size_t cap);

/**
 * The bookkeeping entry of a retained version, or NULL (also for NULL s).
 * Ownership: borrowed from the store, valid until the next call that changes
 * it (save, save_async, tag, untag) or close.
 */
GCK_API const gck_entry *gck_store_get(const gck_store *s, uint64_t version);

/** The entry of the newest version, or NULL when empty (or s NULL). Borrowed as gck_store_get's. */
GCK_API const gck_entry *gck_store_latest(const gck_store *s);

/**
 * The recorded configuration (what the manifest holds) into *out.
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL).
 */
GCK_API gck_status gck_store_config_get(const gck_store *s, gck_store_config *out);

typedef struct gck_store_stats {
    size_t versions, full_versions, delta_versions;
    uint64_t logical_bytes; /**< sum of the retained versions' full_bytes */
    uint64_t disk_bytes;    /**< their data files' sizes, the hidden bases' and the manifest's */
    size_t hidden_bases;    /**< evicted versions kept as bases of retained ones (policy, above) */
    uint64_t hidden_bytes;  /**< their data files' sizes (part of disk_bytes) */
} gck_store_stats;

/**
 * Counts and sizes of the retained versions into *out (disk_bytes from the
 * sizes the manifest records, plus the hidden bases' and the manifest's own
 * size; hidden bases are not counted as versions).
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL).
 */
GCK_API gck_status gck_store_stats_get(const gck_store *s, gck_store_stats *out);

/** On-disk size of one retained version's data file (0 if not retained - a hidden base is not -, or s NULL). */
GCK_API uint64_t gck_store_version_disk_bytes(const gck_store *s, uint64_t version);

/**
 * What the manifest records about one retained version, readable without a
 * restore (no data file is opened). Every pointer is owned by the store and
 * stays valid until the next call that changes the store (gck_store_save,
 * gck_store_tag, gck_store_untag, gck_store_close), as gck_store_get's entry.
 */
typedef struct gck_version_info {
    uint64_t version;
    uint64_t step;            /**< the saved snapshot's step */
    uint64_t timestamp_secs;  /**< the saved snapshot's timestamp */
    int is_delta;             /**< 1: stored as a delta against delta_from */
    uint64_t delta_from;      /**< the delta's base version; 0 for a full version */
    uint64_t full_bytes;      /**< logical size: the bytes of every tensor and optimizer blob */
    uint64_t stored_bytes;    /**< the size of its data file */
    const char *file;         /**< its data file's name in the store directory */
    const char *const *tags;  /**< n_tags tags, in the order they were added */
    size_t n_tags;
    const char *const *tensor_names; /**< n_tensors names: the tensors in name order, then the
                                          optimizer blobs as "__optimizer__/<param>" */
    const char *const *content_ids;  /**< the content id of each, in the same order */
    size_t n_tensors;
} gck_version_info;

/**
 * Fills *out with what the manifest holds about `version` (see above).
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL), GCK_ERR_NOT_FOUND (not retained);
 *         *out is untouched on error.
 * Thread-safety: as every store call, one thread at a time.
 */
GCK_API gck_status gck_store_version_info(const gck_store *s, uint64_t version, gck_version_info *out);

/**
 * Re-reads every retained version from disk (not from memory) and checks
 * everything it stores: each file's structure and content ids, each rebuilt
 * tensor against the manifest's name and content id, and the version's
 * step and timestamp against the manifest's. Versions saved by this
 * library since it records them also carry a digest of every other field
 * (loss cid, user metadata, other "gradckpt." keys, each tensor's dtype and
 * shape, each blob's length), so an edited header field is found although
 * every content id still matches; versions of older manifests (no
 * "fields_digest") are checked for everything but that digest. n_checked
 * (may be NULL) receives how many versions passed before the first failure
 * (all of them on success). On a read-only handle a version a writer evicts
 * while it is checked is skipped (not counted, not a failure).
 * Errors: GCK_ERR_CORRUPT / GCK_ERR_IO naming the first bad version and
 *         file; GCK_ERR_INVALID_ARGUMENT; GCK_ERR_NO_MEMORY.
 * Ownership: keeps nothing; the store is not changed.
 * Thread-safety: the store's one thread.
 */
GCK_API gck_status gck_store_verify(gck_store *s, size_t *n_checked);

/**
 * Called by gck_store_verify_each once per version of the handle's view, in
 * ascending order: st is GCK_OK (every byte checked), GCK_ERR_NOT_FOUND
 * (read-only handles: a writer evicted it meanwhile; skipped, not a
 * failure), or the error that ends the verification (gck_last_error() holds
 * its message during the call).
 */
typedef void (*gck_store_verify_fn)(void *ctx, uint64_t version, gck_status st);

/**
 * gck_store_verify, reporting each version to fn (may be NULL) as it is
 * checked. Errors and thread-safety: as gck_store_verify.
 */
GCK_API gck_status gck_store_verify_each(gck_store *s, gck_store_verify_fn fn, void *ctx, size_t *n_checked);

/**
 * Removes files in the directory that the manifest does not name (left by a
 * crash: half-written temporaries, data files of an uncommitted save, files
 * of dropped versions whose unlink was lost). The hidden bases' files are
 * named: kept. bytes_freed may be NULL. Files that do not look
 * like the store's own are never touched.
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL, a read-only handle), GCK_ERR_IO.
 * Thread-safety: the store's one thread (the writer's lock keeps other
 *         writers out; read-only handles never need the files it removes).
 */
GCK_API gck_status gck_store_gc(gck_store *s, uint64_t *bytes_freed);

#ifdef __cplusplus
}
#endif

#endif /* GRADCKPT_STORE_H */
