/* core/io_internal.h - the system calls behind durable files, with a failure hook for tests (internal). */
#ifndef GCK_IO_INTERNAL_H
#define GCK_IO_INTERNAL_H

#include <stddef.h>
#include <sys/types.h>

#include "status_internal.h"

/* open/write/fsync/close/rename as the file writers use them; each may be
 * made to fail by the hook below (setting errno). */
GCK_INTERNAL int gck_sys_open(const char *path, int flags, int mode);
GCK_INTERNAL ssize_t gck_sys_write(int fd, const void *p, size_t len);
GCK_INTERNAL int gck_sys_fsync(int fd);
GCK_INTERNAL int gck_sys_close(int fd);
GCK_INTERNAL int gck_sys_rename(const char *from, const char *to);

/* Test hook: the k-th of those calls from now (k = 0: the next) fails with
 * errno err, once; k < 0 disables. Lets tests make every step of a save fail
 * in turn and check what is left on disk. (A failing close still closes.) */
GCK_INTERNAL void gck_io_fail_after(long k, int err);

#endif /* GCK_IO_INTERNAL_H */
