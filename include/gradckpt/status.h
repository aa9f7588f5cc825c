/* gradckpt/status.h - status codes and the per-thread error message. */
#ifndef GRADCKPT_STATUS_H
#define GRADCKPT_STATUS_H

#include <gradckpt/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Result of every gradckpt function that can fail. The numeric values are
 * pinned: new codes are only ever added at the end.
 */
typedef enum gck_status {
    GCK_OK = 0,                       /**< success */
    GCK_ERR_INVALID_ARGUMENT,         /**< NULL pointer, bad config, bad name */
    GCK_ERR_NO_MEMORY,                /**< an allocation failed */
    GCK_ERR_NO_ACCUMULATED_GRADIENTS, /**< flush with nothing pending */
    GCK_ERR_NOT_FOUND,                /**< checkpoint / version / layer unknown */
    GCK_ERR_DIMENSION_MISMATCH,       /**< tensor length differs from its layer's */
    GCK_ERR_NONFINITE,                /**< NaN/Inf global norm when forbidden */
    GCK_ERR_IO,                       /**< the OS refused a read/write/fsync */
    GCK_ERR_CORRUPT,                  /**< a file fails validation or checksum */
    GCK_ERR_UNSUPPORTED               /**< ISA / dtype / format version not here */
} gck_status;

/** Number of gck_status values (one past the last). */
#define GCK_STATUS_COUNT 10

/**
 * Name of a status code, e.g. "GCK_ERR_DIMENSION_MISMATCH".
 *
 * A value outside the enum gives "GCK_ERR_UNKNOWN"; the result is never NULL.
 *
 * Ownership:     static string; never free it.
 * Errors:        none.
 * Thread-safety: safe from any thread.
 */
GCK_API const char *gck_status_name(gck_status s);

/**
 * Message describing this thread's most recent failure, e.g.
 * "dimension mismatch for layer 'fc1': expected 4, got 3".
 *
 * Every gradckpt call that returns a status other than GCK_OK sets it first;
 * successful calls leave it as it was (like errno). Before any failure on
 * this thread it is the empty string. Never NULL.
 *
 * Ownership:     thread-local buffer owned by the library; valid until this
 *                thread's next failing gradckpt call. Copy it to keep it.
 * Errors:        none.
 * Thread-safety: each thread sees only its own message.
 */
GCK_API const char *gck_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* GRADCKPT_STATUS_H */
