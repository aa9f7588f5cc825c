/* core/io.c - system calls of the durable writers, with an injectable failure. */
#include "io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static _Atomic long gck_io_countdown = -1;
static _Atomic int gck_io_errno = EIO;

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
    return gck_io_should_fail() ? -1 : open(path, flags, mode);
}

ssize_t gck_sys_write(int fd, const void *p, size_t len)
{
    return gck_io_should_fail() ? -1 : write(fd, p, len);
}

int gck_sys_fsync(int fd)
{
    return gck_io_should_fail() ? -1 : fsync(fd);
}

int gck_sys_close(int fd)
{
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
    return gck_io_should_fail() ? -1 : rename(from, to);
}
