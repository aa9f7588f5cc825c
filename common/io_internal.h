/* common/io_internal.h - the system calls behind durable files, with a failure hook for tests (internal). */
#ifndef GCK_IO_INTERNAL_H
#define GCK_IO_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "status_internal.h"

/* open/write/fsync/close/rename as the file writers use them; each may be
 * made to fail by the hook below (setting errno). */
GCK_INTERNAL int gck_sys_open(const char *path, int flags, int mode);
GCK_INTERNAL ssize_t gck_sys_write(int fd, const void *p, size_t len);
GCK_INTERNAL ssize_t gck_sys_writev(int fd, const struct iovec *iov, int n);
GCK_INTERNAL ssize_t gck_sys_pwritev(int fd, const struct iovec *iov, int n, off_t off); /* traced as 'w' */
GCK_INTERNAL int gck_sys_fsync(int fd);
GCK_INTERNAL int gck_sys_close(int fd);
GCK_INTERNAL int gck_sys_rename(const char *from, const char *to);

/* Test hook: the k-th of those calls from now (k = 0: the next) fails with
 * errno err, once; k < 0 disables. Lets tests make every step of a save fail
 * in turn and check what is left on disk. (A failing close still closes.) */
GCK_INTERNAL void gck_io_fail_after(long k, int err);

/* Test hook: from now on each of those calls appends one letter to buf
 * (NUL-terminated, at most cap - 1 letters): 'o' open, 'd' open of a
 * directory, 'w' write, 'f' fsync, 'c' close, 'r' rename, so a test can
 * check a writer's order of system calls. buf NULL stops it. Calls on
 * several threads (the store's fsyncs run two at once) each take their own
 * letter, in the order they came; read buf once they have all returned. */
GCK_INTERNAL void gck_io_trace(char *buf, size_t cap);

/* write(2) until done (through gck_sys_write); 0 on success, else errno. */
GCK_INTERNAL int gck_write_all(int fd, const void *p, size_t len);

/* writev(2) until every vector is written (through gck_sys_writev, at most
 * sysconf(_SC_IOV_MAX) vectors per call; iov is advanced in place, so the caller's array
 * is consumed); 0 on success, else errno. One system call where a file is
 * many pieces: a store save of 48 small tensors made ~100 write calls. */
GCK_INTERNAL int gck_writev_all(int fd, struct iovec *iov, size_t n);
/* gck_writev_all at byte offset off of the file (pwritev: the file position
 * does not move), through gck_sys_pwritev; 0 on success, else errno. */
GCK_INTERNAL int gck_pwritev_all(int fd, struct iovec *iov, size_t n, uint64_t off);
/* Starts the device write of fd's bytes [off, off + len) (len 0: to the
 * end of the file) and returns without waiting (Linux sync_file_range;
 * elsewhere nothing), so that the fsync that makes them durable later
 * waits only for the rest. Advice only: it neither fails nor makes
 * anything durable, and a write error still comes from that fsync. */
GCK_INTERNAL void gck_start_writeback(int fd, uint64_t off, uint64_t len);

/* dir part of path ("." when none) into buf. */
GCK_INTERNAL void gck_dirname(const char *path, char *buf, size_t cap);

/* GCK_ERR_IO with "<what> '<path>': <strerror(err)>". */
GCK_INTERNAL gck_status gck_io_fail(const char *what, const char *path, int err);

/* The durable-file protocol of every writer: a new temporary file (O_EXCL,
 * mode 0666 less the umask) "<dir>/.<name>" GCK_TMP_INFIX "<pid>.<n>" next to
 * path "<dir>/<name>", filled by fill (which returns 0 or an errno), fsync,
 * close, rename over path, fsync of the directory. The writer holds an
 * exclusive flock on the temporary file from its creation until after the
 * rename, so gck_sweep_tmp can tell a live writer's file from a dead one's.
 * On any failure before the rename the target is untouched and the temporary
 * file removed; if only the directory fsync fails, the new file is in place
 * and the message says so and *renamed (may be NULL) is 1. */
GCK_INTERNAL gck_status gck_write_atomic(const char *path, int (*fill)(int fd, void *ctx), void *ctx,
                                         int *renamed);

/* A file written under its final name and left unsynced, for writers whose
 * commit comes later (the store's data files, named by a manifest written
 * after them): create (truncating a leftover), fill. *fd_out stays open for
 * the caller to fsync and close; the commit fsyncs the directory once for
 * every name it makes durable. On failure the file is removed. */
GCK_INTERNAL gck_status gck_write_unsynced(const char *path, int (*fill)(int fd, void *ctx), void *ctx,
                                           int *fd_out);

/* gck_write_atomic in two halves, so a commit can fsync other files together
 * with the temporary. gck_pending_open: the temporary created (O_EXCL, 0666
 * less the umask) and filled, fd open (on failure removed). The caller
 * fsyncs p->fd, then gck_pending_commit(p, errno of that fsync or 0): close,
 * rename over the path, fsync of the directory, with gck_write_atomic's
 * errors and *renamed; gck_pending_abort instead closes and removes it. */
typedef struct gck_pending {
    int fd;
    int lock_fd; /* holds the temporary's flock until after the rename (see gck_sweep_tmp) */
    char path[PATH_MAX], tmp[PATH_MAX], dir[PATH_MAX];
} gck_pending;
GCK_INTERNAL gck_status gck_pending_open(const char *path, int (*fill)(int fd, void *ctx), void *ctx, gck_pending *p);
GCK_INTERNAL gck_status gck_pending_commit(gck_pending *p, int sync_err, int *renamed);
GCK_INTERNAL void gck_pending_abort(gck_pending *p);

/* The middle of a temporary file's name (see gck_write_atomic). */
#define GCK_TMP_INFIX ".tmp."

typedef struct gck_sweep_result {
    size_t removed;       /* temporary files removed */
    uint64_t bytes_freed; /* their sizes */
    size_t live;          /* kept: their writer holds the lock */
    size_t young;         /* kept: modified less than min_age_secs ago */
} gck_sweep_result;

/* Removes the temporary files gck_write_atomic left in dir when its writer
 * died (names exactly ".<target>.tmp.<pid>.<n>"; target NULL: any target):
 * regular files only (no symbolic links), none whose lock a live writer
 * holds, none modified less than min_age_secs ago. *out may be NULL.
 * GCK_ERR_IO when dir cannot be listed or a file cannot be removed. */
GCK_INTERNAL gck_status gck_sweep_tmp(const char *dir, const char *target, uint64_t min_age_secs,
                                      gck_sweep_result *out);

/* fsync of a directory (after a rename or unlink in it); 0 or errno. */
GCK_INTERNAL int gck_sync_dir(const char *dir);

#endif /* GCK_IO_INTERNAL_H */
