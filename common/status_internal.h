/* common/status_internal.h - setting the per-thread error message (internal). */
#ifndef GCK_STATUS_INTERNAL_H
#define GCK_STATUS_INTERNAL_H

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

#endif /* GCK_STATUS_INTERNAL_H */
