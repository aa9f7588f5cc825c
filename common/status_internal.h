/* common/status_internal.h - setting the per-thread error message (internal). */
#ifndef GCK_STATUS_INTERNAL_H
#define GCK_STATUS_INTERNAL_H

#include <stddef.h>

#include <gradckpt/status.h>

#include "attributes.h"

/* Capacity of the thread's message buffer; longer messages are cut with "...". */
#define GCK_ERROR_MAX 1024

/* Formats the message into this thread's buffer and returns s, so an error
 * path is one line: return gck_fail(GCK_ERR_IO, "cannot open '%s': %s", ...). */
GCK_INTERNAL gck_status gck_fail(gck_status s, const char *fmt, ...) GCK_PRINTF(2, 3);

#define GCK_CHECK_ARG(cond, ...) \
    do { if (!(cond)) return gck_fail(GCK_ERR_INVALID_ARGUMENT, __VA_ARGS__); } while (0)

#define GCK_TRY(expr) \
    do { gck_status gck_s_ = (expr); if (gck_s_ != GCK_OK) return gck_s_; } while (0)

/* Adds context to the thread's current message and returns s: the message
 * becomes "<formatted context>: <previous message>" (as zstd's
 * FORWARD_IF_ERROR), so an error names every level it passed through. */
GCK_INTERNAL gck_status gck_fail_ctx(gck_status s, const char *fmt, ...) GCK_PRINTF(2, 3);

/* GCK_TRY that adds context on the way up: on failure the message becomes
 * "<context>: <previous message>", the status is kept and returned.
 *   GCK_TRY_CTX(gck_load(path), "version %llu", v);                         */
#define GCK_TRY_CTX(expr, ...) \
    do { gck_status gck_s_ = (expr); if (gck_s_ != GCK_OK) return gck_fail_ctx(gck_s_, __VA_ARGS__); } while (0)

/* The one out-of-memory failure: GCK_ERR_NO_MEMORY with the message
 * "out of memory: <what> (<bytes> bytes)"; bytes 0 (the size is unknown, as
 * for an allocation inside jansson) drops the parenthesis. */
GCK_INTERNAL gck_status gck_fail_oom(const char *what, size_t bytes);

/* A failure carried from the thread it happened on to the one that
 * reports it (the message is per thread): gck_carry on the first (st and
 * this thread's message kept when st is not GCK_OK; returns st),
 * gck_carried_fail on the second (the same status and message there). A
 * zeroed gck_carried holds GCK_OK. */
typedef struct gck_carried {
    gck_status st;
    char msg[GCK_ERROR_MAX];
} gck_carried;
GCK_INTERNAL gck_status gck_carry(gck_carried *c, gck_status st);
GCK_INTERNAL gck_status gck_carried_fail(const gck_carried *c);

#endif /* GCK_STATUS_INTERNAL_H */
