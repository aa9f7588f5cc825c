/* common/io.c - system calls of the durable writers, with an injectable failure. */
#define _GNU_SOURCE /* pwritev, sync_file_range */
#include "io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
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
        memset(buf, 0, cap); /* terminated wherever the notes stop */
        atomic_store(&gck_io_trace_buf, buf);
    }
}

/* Each call writes only its own slot: writing the terminator after it too
 * let a call on another thread (the store's data-file fsync runs beside the
 * manifest's) overwrite the next slot with it and cut the trace short. */
static void gck_io_note(char what)
{
    char *b = atomic_load(&gck_io_trace_buf);
    if (b == NULL)
        return;
    const size_t at = atomic_fetch_add(&gck_io_trace_len, 1);
    if (at + 1 < gck_io_trace_cap)
        b[at] = what;
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

ssize_t gck_sys_writev(int fd, const struct iovec *iov, int n)
{
    gck_io_note('w');
    return gck_io_should_fail() ? -1 : writev(fd, iov, n);
}

ssize_t gck_sys_pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
    gck_io_note('w');
    return gck_io_should_fail() ? -1 : pwritev(fd, iov, n, off);
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

/* gck_writev_all at the file position (off < 0) or at offset off. */
static int gck_writev_at(int fd, struct iovec *iov, size_t n, off_t off)
{
    const long lim = sysconf(_SC_IOV_MAX);
    const size_t most = lim >= 16 && lim <= INT_MAX ? (size_t)lim : 16; /* 16: POSIX's least */
    while (n > 0 && iov->iov_len == 0)
        iov++, n--;
    while (n > 0) {
        const int k = (int)(n < most ? n : most);
        const ssize_t w = off < 0 ? gck_sys_writev(fd, iov, k) : gck_sys_pwritev(fd, iov, k, off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (off >= 0)
            off += (off_t)w;
        size_t left = (size_t)w; /* past the whole vectors written, into the next one */
        while (n > 0 && left >= iov->iov_len)
            left -= iov->iov_len, iov++, n--;
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return 0;
}

int gck_writev_all(int fd, struct iovec *iov, size_t n)
{
    return gck_writev_at(fd, iov, n, -1);
}

int gck_pwritev_all(int fd, struct iovec *iov, size_t n, uint64_t off)
{
    return off > (uint64_t)INT64_MAX ? EFBIG : gck_writev_at(fd, iov, n, (off_t)off);
}

void gck_start_writeback(int fd, uint64_t off, uint64_t len)
{
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    if (off <= (uint64_t)INT64_MAX && len <= (uint64_t)INT64_MAX - off) /* len 0: to the end */
        (void)sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd, (void)off, (void)len;
#endif
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

/* Locks a new temporary file for its writer (see gck_sweep_tmp): returns a
 * descriptor holding the lock until it is closed, after the rename, or -1
 * when the file system has no flock (the sweep's age rule then protects
 * it). *gone = 1 when a sweep removed the file before the lock was taken. */
static int gck_tmp_lock(int fd, int *gone)
{
    *gone = 0;
    int r;
    while ((r = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
    }
    struct stat sb;
    if (r != 0)
        return -1;
    if (fstat(fd, &sb) == 0 && sb.st_nlink == 0) {
        *gone = 1;
        return -1;
    }
    return dup(fd); /* the lock belongs to the open file, so it outlives close(fd) */
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
    /* its device write started now: the caller fsyncs it later, after
     * other work (the store writes its manifest first) */
    gck_start_writeback(fd, 0, 0);
    *fd_out = fd;
    return GCK_OK;
}

gck_status gck_pending_open(const char *path, int (*fill)(int fd, void *ctx), void *ctx, gck_pending *p)
{
    p->fd = -1;
    p->lock_fd = -1;
    gck_dirname(path, p->dir, sizeof p->dir);
    if (snprintf(p->path, sizeof p->path, "%s", path) >= (int)sizeof p->path)
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "save: path '%.300s' is too long", path);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    /* O_EXCL with mode 0666 (less the umask), like any new file: mkstemp's
     * 0600 would leave the saved file unreadable to the group */
    int fd = -1, lk = -1;
    static _Atomic unsigned gck_tmp_counter;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        const unsigned k = atomic_fetch_add(&gck_tmp_counter, 1u);
        if (snprintf(p->tmp, sizeof p->tmp, "%s/.%s" GCK_TMP_INFIX "%ld.%u", p->dir, base, (long)getpid(), k) >=
            (int)sizeof p->tmp)
            return gck_fail(GCK_ERR_INVALID_ARGUMENT, "save: path '%.300s' is too long", path);
        fd = gck_sys_open(p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
        int gone = 0;
        if (fd >= 0 && (lk = gck_tmp_lock(fd, &gone)) < 0 && gone) {
            close(fd); /* swept between its creation and the lock: take another name */
            fd = -1;
        }
    }
    if (fd < 0)
        return gck_io_fail("cannot create a temporary file next to", path, errno);
    const int err = fill(fd, ctx);
    if (err) {
        close(fd);
        unlink(p->tmp); /* the target was never touched */
        if (lk >= 0)
            close(lk);
        return gck_io_fail("cannot write", path, err);
    }
    p->fd = fd;
    p->lock_fd = lk;
    return GCK_OK;
}

void gck_pending_abort(gck_pending *p)
{
    if (p->fd >= 0) {
        close(p->fd);
        unlink(p->tmp);
    }
    if (p->lock_fd >= 0)
        close(p->lock_fd);
    p->fd = -1;
    p->lock_fd = -1;
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
    if (err)
        unlink(p->tmp); /* the target was never touched */
    /* the lock is released only after the rename (or the unlink), so a
     * sweep never takes a temporary file its writer is still using */
    if (p->lock_fd >= 0)
        close(p->lock_fd);
    p->lock_fd = -1;
    if (err)
        return gck_io_fail("cannot write", p->path, err);
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

/* The target name of a temporary file ".<target>.tmp.<pid>.<n>" (pid and n
 * decimal digits) into buf; 0 when name does not have that form. */
static int gck_tmp_target(const char *name, char *buf, size_t cap)
{
    const size_t len = strlen(name), il = strlen(GCK_TMP_INFIX);
    size_t end = len, digits = 0;
    while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9')
        end--, digits++;
    if (digits == 0 || end == 0 || name[end - 1] != '.')
        return 0;
    end--, digits = 0; /* the '.' before <n> */
    while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9')
        end--, digits++;
    /* end is at the pid's first digit; the infix ends with its '.' */
    if (digits == 0 || end < il + 2 || name[0] != '.' || strncmp(name + end - il, GCK_TMP_INFIX, il) != 0)
        return 0;
    const size_t tl = end - il - 1;
    if (tl == 0 || tl >= cap)
        return 0;
    memcpy(buf, name + 1, tl);
    buf[tl] = '\0';
    return 1;
}

/* Removes dir/name when it is a regular file nobody holds the lock of and
 * not modified for min_age seconds; counts what it removed or kept in *r. */
static gck_status gck_sweep_one(const char *dir, const char *name, uint64_t min_age, gck_sweep_result *r)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p)
        return GCK_OK; /* cannot be one of ours: it could not have been created */
    const int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return GCK_OK; /* gone meanwhile, a symbolic link, or unreadable: not touched */
    struct stat sb, now_sb;
    gck_status st = GCK_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return GCK_OK;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            r->live++; /* its writer is at work */
        close(fd);
        return GCK_OK;
    }
    const time_t now = time(NULL);
    if (min_age > 0 && (now < sb.st_mtime || (uint64_t)(now - sb.st_mtime) < min_age)) {
        r->young++;
    } else if (lstat(p, &now_sb) == 0 && now_sb.st_dev == sb.st_dev && now_sb.st_ino == sb.st_ino) {
        if (unlink(p) == 0) {
            r->removed++;
            r->bytes_freed += (uint64_t)sb.st_size;
        } else if (errno != ENOENT) {
            st = gck_io_fail("cannot remove the temporary file", p, errno);
        }
    }
    close(fd); /* releases the lock */
    return st;
}

gck_status gck_sweep_tmp(const char *dir, const char *target, uint64_t min_age_secs, gck_sweep_result *out)
{
    gck_sweep_result r = {0};
    DIR *d = opendir(dir);
    if (d == NULL)
        return gck_io_fail("cannot list", dir, errno);
    gck_status st = GCK_OK;
    struct dirent *de;
    char t[NAME_MAX + 1];
    while (st == GCK_OK && (de = readdir(d)) != NULL)
        if (gck_tmp_target(de->d_name, t, sizeof t) && (target == NULL || strcmp(t, target) == 0))
            st = gck_sweep_one(dir, de->d_name, min_age_secs, &r);
    closedir(d);
    if (out != NULL)
        *out = r;
    return st;
}
