/* gradckpt/manager.h - versioned checkpoint bookkeeping: full vs delta, keep-every-n, bounded history. */
#ifndef GRADCKPT_MANAGER_H
#define GRADCKPT_MANAGER_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/export.h>
#include <gradckpt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/** When a version is stored full and how many are kept. */
typedef struct gck_policy {
    size_t max_checkpoints;         /**< default 10; 0 behaves as 1 (the seed's `>=` test) */
    uint64_t keep_every_n;          /**< default 5; version % n == 0 forces a full one; 0 = never */
    uint64_t delta_threshold_bytes; /**< default 1048576; full_bytes <= this is stored full */
} gck_policy;

/** Fills *p with the defaults above. NULL is ignored. Thread-safe. */
GCK_API void gck_policy_init(gck_policy *p);

/** One retained version. Every pointer is owned by the manager (or store). */
typedef struct gck_entry {
    uint64_t version;
    uint64_t timestamp_secs;
    const char *const *tensor_names;
    size_t n_tensor_names;
    uint64_t full_bytes;
    const char *const *tags;
    size_t n_tags;
    int is_delta;
    uint64_t delta_from; /**< valid when is_delta */
} gck_entry;

/**
 * The seed's checkpoint bookkeeping, exactly: it records versions, never
 * data. Versions start at 1 and grow by one per save. A save is full when no
 * entry is retained, or keep_every_n > 0 and version % keep_every_n == 0, or
 * full_bytes <= delta_threshold_bytes; otherwise it is a delta from the
 * latest retained version. Then, if max_checkpoints entries are held, the
 * oldest untagged entry is evicted (none when all are tagged: the list grows
 * past the bound) and the new entry is appended. Because the decision comes
 * before the eviction, a delta may name an evicted base (max_checkpoints =
 * 1): this type is bookkeeping only; gck_store keeps real data and never
 * does that.
 *
 * Thread-safety: one writer; concurrent readers of an unmodified manager are
 * fine.
 */
typedef struct gck_manager gck_manager;

/**
 * Creates an empty manager. p NULL means the defaults.
 * Ownership: *out is the caller's (gck_manager_destroy); *p is copied.
 * Errors: GCK_ERR_INVALID_ARGUMENT (out NULL), GCK_ERR_NO_MEMORY.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_manager_create(const gck_policy *p, gck_manager **out);

/**
 * Frees the manager and every entry; pointers it lent become invalid. NULL is fine.
 * Thread-safety: the writer's call; no reader may use the manager meanwhile.
 */
GCK_API void gck_manager_destroy(gck_manager *m);

/**
 * Records a new version (rules above) with copies of the names and tags.
 * version_out may be NULL.
 * Errors: GCK_ERR_INVALID_ARGUMENT (m NULL, names/tags NULL with a count > 0,
 *         a NULL string among them), GCK_ERR_NO_MEMORY. On error the manager
 *         is unchanged (nothing evicted, no version used).
 * Ownership: names and tags are copied; nothing of the caller's is kept.
 * Thread-safety: the one writer; entries borrowed before it may be freed by
 *         an eviction.
 */
GCK_API gck_status gck_manager_save(gck_manager *m, const char *const *tensor_names, size_t n_names,
                                    uint64_t full_bytes, uint64_t timestamp_secs, const char *const *tags,
                                    size_t n_tags, uint64_t *version_out);

/**
 * The entry of `version`, or NULL (also for m NULL).
 * Ownership: borrowed, valid until the next save, tag or destroy.
 * Thread-safety: a reader (see the type).
 */
GCK_API const gck_entry *gck_manager_get(const gck_manager *m, uint64_t version);

/** The entry with the highest version, or NULL when empty (or m NULL). Borrowed as gck_manager_get's; a reader. */
GCK_API const gck_entry *gck_manager_latest(const gck_manager *m);

/**
 * Writes up to cap retained versions, ascending, into out (NULL when cap is
 * 0) and returns how many are retained (which may exceed cap; 0 for m NULL).
 * Thread-safety: a reader.
 */
GCK_API size_t gck_manager_versions(const gck_manager *m, uint64_t *out, size_t cap);

/** The version the next save will get (1 for a new manager; 0 for NULL). A reader. */
GCK_API uint64_t gck_manager_next_version(const gck_manager *m);

/**
 * Appends `tag` (copied) to the version's tags, as the seed does (a repeated
 * tag is appended again). Tagged entries are never evicted.
 * Returns 1 if the version exists and the tag was added, else 0 (also for
 * NULL arguments or out of memory; gck_last_error() says which).
 * Ownership: tag is copied. Thread-safety: the one writer.
 */
GCK_API int gck_manager_tag(gck_manager *m, uint64_t version, const char *tag);

/** The seed's delta estimate between two retained versions. */
typedef struct gck_delta {
    uint64_t from_version, to_version;
    char **changed_tensors; /**< names in to_version absent from from_version, in to_version's order */
    size_t n_changed;
    uint64_t delta_bytes;   /**< (uint64_t)(full_bytes(to_version) * 0.3) */
} gck_delta;

/**
 * Fills *out (overwriting it; clear it with gck_delta_clear). v1 may be
 * equal to or greater than v2; the rule is the same.
 * Ownership: the names in *out are the caller's (gck_delta_clear).
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL), GCK_ERR_NOT_FOUND (either
 *         version not retained), GCK_ERR_NO_MEMORY. *out is untouched on error.
 * Thread-safety: a reader.
 */
GCK_API gck_status gck_manager_compute_delta(const gck_manager *m, uint64_t v1, uint64_t v2, gck_delta *out);

/** Frees the names of *d and zeroes it. NULL is fine. Thread-safe (touches only *d). */
GCK_API void gck_delta_clear(gck_delta *d);

/** delta_bytes / max(full_bytes, 1); 0 for NULL. Thread-safe (pure). */
GCK_API double gck_delta_compression_ratio(const gck_delta *d, uint64_t full_bytes);

/** Counts over the retained entries. */
typedef struct gck_manager_stats {
    size_t total_checkpoints, full_checkpoints, delta_checkpoints;
    uint64_t total_bytes; /**< sum of the retained entries' full_bytes */
} gck_manager_stats;

/** Stats of the retained entries (all zero for NULL). A reader. */
GCK_API gck_manager_stats gck_manager_stats_get(const gck_manager *m);

/** delta_checkpoints / max(total_checkpoints, 1); 0 for NULL. Thread-safe (pure). */
GCK_API double gck_manager_stats_delta_ratio(const gck_manager_stats *s);

#ifdef __cplusplus
}
#endif

#endif /* GRADCKPT_MANAGER_H */
