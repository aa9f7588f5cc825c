/* common/io.c - system calls of the durable writers, with an injectable failure. */
#include "io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static _Atomic long gck_io_countdown = -1;
static _Atomic int gck_io_errno = EIO;
static _Atomic(char *) gck_io_trace_buf; /* test hook: one letter per call */
static size_t gck_io_trace_cap;
static _Atomic size_t gck_io_trace_len;

void gck_io_trace(char *buf, size_t cap)
{
    atomic_store(&gck_io_trace_buf, NULL);
    gck_io_trace_cap = cap;
    atomic_store(&gck_io_trace_len, 0);
    if (buf != NULL && cap > 0) {
        buf[0] = '\0';
        atomic_store(&gck_io_trace_buf, buf);
    }
}

static void gck_io_note(char what)
{
    char *b = atomic_load(&gck_io_trace_buf);
    if (b == NULL)
        return;
    const size_t at = atomic_fetch_add(&gck_io_trace_len, 1);
    if (at + 1 < gck_io_trace_cap)
        b[at] = what, b[at + 1] = '\0';
}

void gck_io_fail_after(long k, int err)
{
    atomic_store(&gck_io_errno, err);
    atomic_store(&gck_io_countdown, k < 0 ? -1 : k);
}

/* 1 when this call must fail (errno is set). */
static int gck_io_should_fail(void)
{
    long c = atomic_load(&gck_io_countdown);
    while (c >= 0) {
        if (atomic_compare_exchange_weak(&gck_io_countdown, &c, c - 1)) {
            if (c == 0) {
                errno = atomic_load(&gck_io_errno);
                return 1;
            }
            return 0;
        }
    }
    return 0;
}

int gck_sys_open(const char *path, int flags, int mode)
{
    gck_io_note((flags & O_DIRECTORY) ? 'd' : 'o');
    return gck_io_should_fail() ? -1 : open(path, flags, mode);
}

ssize_t gck_sys_write(int fd, const void *p, size_t len)
{
    gck_io_note('w');
    return gck_io_should_fail() ? -1 : write(fd, p, len);
}

int gck_sys_fsync(int fd)
{
    gck_io_note('f');
    return gck_io_should_fail() ? -1 : fsync(fd);
}

int gck_sys_close(int fd)
{
    gck_io_note('c');
    if (gck_io_should_fail()) {
        const int e = errno;
        close(fd); /* the descriptor is gone either way, as with a real close error */
        errno = e;
        return -1;
    }
    return close(fd);
}

int gck_sys_rename(const char *from, const char *to)
{
    gck_io_note('r');
    return gck_io_should_fail() ? -1 : rename(from, to);
}

int gck_write_all(int fd, const void *p, size_t len)
{
    const char *c = p;
    while (len > 0) {
        const size_t chunk = len < ((size_t)1 << 30) ? len : ((size_t)1 << 30);
        const ssize_t w = gck_sys_write(fd, c, chunk);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        c += w;
        len -= (size_t)w;
    }
    return 0;
}

void gck_dirname(const char *path, char *buf, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(buf, cap, ".");
    else if (slash == path)
        snprintf(buf, cap, "/");
    else
        snprintf(buf, cap, "%.*s", (int)(slash - path), path);
}

gck_status gck_io_fail(const char *what, const char *path, int err)
{
    return gck_fail(GCK_ERR_IO, "%s '%.300s': %s", what, path, strerror(err));
}

int gck_sync_dir(const char *dir)
{
    const int dfd = gck_sys_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    int err = 0;
    if (dfd < 0 || gck_sys_fsync(dfd) != 0)
        err = errno;
    if (dfd >= 0)
        close(dfd);
    return err;
}

gck_status gck_write_unsynced(const char *path, int (*fill)(int fd, void *ctx), void *ctx, int *fd_out)
{
    /* O_TRUNC, not O_EXCL: a file of this name can only be the leftover of
     * a save that never committed (nothing refers to it), and reusing it
     * keeps a failed cleanup from blocking every later save */
    const int fd = gck_sys_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return gck_io_fail("cannot create", path, errno);
    const int err = fill(fd, ctx);
    if (err) {
        close(fd);
        unlink(path);
        return gck_io_fail("cannot write", path, err);
    }
    *fd_out = fd;
    return GCK_OK;
}

gck_status gck_pending_open(const char *path, int (*fill)(int fd, void *ctx), void *ctx, gck_pending *p)
{
    p->fd = -1;
    gck_dirname(path, p->dir, sizeof p->dir);
    if (snprintf(p->path, sizeof p->path, "%s", path) >= (int)sizeof p->path)
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "save: path '%.300s' is too long", path);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    /* O_EXCL with mode 0666 (less the umask), like any new file: mkstemp's
     * 0600 would leave the saved file unreadable to the group */
    int fd = -1;
    static _Atomic unsigned gck_tmp_counter;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        const unsigned k = atomic_fetch_add(&gck_tmp_counter, 1u);
        if (snprintf(p->tmp, sizeof p->tmp, "%s/.%s.tmp.%ld.%u", p->dir, base, (long)getpid(), k) >=
            (int)sizeof p->tmp)
            return gck_fail(GCK_ERR_INVALID_ARGUMENT, "save: path '%.300s' is too long", path);
        fd = gck_sys_open(p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0)
        return gck_io_fail("cannot create a temporary file next to", path, errno);
    const int err = fill(fd, ctx);
    if (err) {
        close(fd);
        unlink(p->tmp); /* the target was never touched */
        return gck_io_fail("cannot write", path, err);
    }
    p->fd = fd;
    return GCK_OK;
}

void gck_pending_abort(gck_pending *p)
{
    if (p->fd >= 0) {
        close(p->fd);
        unlink(p->tmp);
    }
    p->fd = -1;
}

gck_status gck_pending_commit(gck_pending *p, int sync_err, int *renamed)
{
    if (renamed != NULL)
        *renamed = 0;
    int err = sync_err;
    if (gck_sys_close(p->fd) != 0 && !err)
        err = errno;
    p->fd = -1;
    if (!err && gck_sys_rename(p->tmp, p->path) != 0)
        err = errno;
    if (err) {
        unlink(p->tmp); /* the target was never touched */
        return gck_io_fail("cannot write", p->path, err);
    }
    if (renamed != NULL)
        *renamed = 1;
    /* make the rename itself durable; if this fails the new file is already
     * in place, only its survival of a power loss is unknown */
    err = gck_sync_dir(p->dir);
    return err ? gck_io_fail("saved, but cannot sync the directory of", p->path, err) : GCK_OK;
}

gck_status gck_write_atomic(const char *path, int (*fill)(int fd, void *ctx), void *ctx, int *renamed)
{
    if (renamed != NULL)
        *renamed = 0;
    gck_pending p;
    GCK_TRY(gck_pending_open(path, fill, ctx, &p));
    const int err = gck_sys_fsync(p.fd) != 0 ? errno : 0;
    return gck_pending_commit(&p, err, renamed);
}
