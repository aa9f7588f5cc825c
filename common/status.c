/* common/status.c - status names and the thread-local last-error message. */
#include "status_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <gradckpt/version.h>

static _Thread_local char gck_error_buf[GCK_ERROR_MAX];

static const char *const gck_status_names[GCK_STATUS_COUNT] = {
    [GCK_OK] = "GCK_OK",
    [GCK_ERR_INVALID_ARGUMENT] = "GCK_ERR_INVALID_ARGUMENT",
    [GCK_ERR_NO_MEMORY] = "GCK_ERR_NO_MEMORY",
    [GCK_ERR_NO_ACCUMULATED_GRADIENTS] = "GCK_ERR_NO_ACCUMULATED_GRADIENTS",
    [GCK_ERR_NOT_FOUND] = "GCK_ERR_NOT_FOUND",
    [GCK_ERR_DIMENSION_MISMATCH] = "GCK_ERR_DIMENSION_MISMATCH",
    [GCK_ERR_NONFINITE] = "GCK_ERR_NONFINITE",
    [GCK_ERR_IO] = "GCK_ERR_IO",
    [GCK_ERR_CORRUPT] = "GCK_ERR_CORRUPT",
    [GCK_ERR_UNSUPPORTED] = "GCK_ERR_UNSUPPORTED",
};

const char *gck_status_name(gck_status s)
{
    /* Compare as unsigned: an out-of-range enum may hold any int. */
    unsigned v = (unsigned)s;
    if (v < GCK_STATUS_COUNT && gck_status_names[v] != NULL)
        return gck_status_names[v];
    return "GCK_ERR_UNKNOWN";
}

const char *gck_last_error(void)
{
    return gck_error_buf;
}

gck_status gck_fail(gck_status s, const char *fmt, ...)
{
    /* Format into a copy first: the arguments may include gck_last_error()
     * itself (wrapping a lower-level message). */
    char buf[GCK_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (len < 0) {
        snprintf(buf, sizeof buf, "%s", gck_status_name(s));
    } else if ((size_t)len >= sizeof buf) {
        memcpy(buf + sizeof buf - 4, "...", 4);
    }
    memcpy(gck_error_buf, buf, sizeof buf);
    return s;
}

gck_status gck_fail_ctx(gck_status s, const char *fmt, ...)
{
    char ctx[GCK_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    const int len = vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    if (len < 0)
        ctx[0] = '\0';
    /* gck_fail copies its arguments first, so the old message may be one of them */
    return gck_fail(s, "%s: %s", ctx, gck_error_buf);
}

gck_status gck_fail_oom(const char *what, size_t bytes)
{
    if (bytes == 0) /* an allocation inside a library (jansson), of a size we do not see */
        return gck_fail(GCK_ERR_NO_MEMORY, "out of memory: %s", what ? what : "allocation");
    return gck_fail(GCK_ERR_NO_MEMORY, "out of memory: %s (%zu bytes)", what ? what : "allocation", bytes);
}

const char *gck_version_string(void)
{
    return GCK_VERSION_STRING;
}

gck_status gck_carry(gck_carried *c, gck_status st)
{
    if (st != GCK_OK) {
        c->st = st;
        snprintf(c->msg, sizeof c->msg, "%s", gck_last_error());
    }
    return st;
}

gck_status gck_carried_fail(const gck_carried *c)
{
    return gck_fail(c->st, "%s", c->msg);
}
