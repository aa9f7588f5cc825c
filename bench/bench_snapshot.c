/* bench/bench_snapshot.c - snapshot save/load against plain write()/read() of the same bytes.
 *
 * Names: "snapshot_{save,load,load_mmap,raw_write,raw_read,raw_read_reuse}/<model>/1t/<params>"
 * on /dev/shm (tmpfs: fsync costs nothing there, so save is measured
 * without fsync time, as the targets ask). bytes_per_second counts the
 * tensor bytes; divide save by raw_write and load by raw_read of the same
 * run. load verifies every content id (reads and hashes every byte);
 * load_mmap(verify = 0) reads only the header. raw_read allocates its
 * buffer each time, as a loader that returns new memory must, so it pays
 * the page faults; raw_read_reuse reads into one buffer faulted in once,
 * the bare page-cache copy. The two differ by the cost of a page fault,
 * which on a VM swings by 3x with the host's backing of guest memory
 * (ResNet-50 raw_read: 19 or 61 ms in consecutive runs here). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gradckpt/gradckpt.h>

#include "bench.h"

typedef struct snap_ctx {
    const char *model;
    size_t params;
    size_t ntensors;
    int op; /* 0 save, 1 load, 2 load_mmap, 3 raw_write, 4 raw_read, 5 raw_read_reuse */
    gck_snapshot *snap;
    float *raw;
    void *rbuf; /* raw_read_reuse's buffer */
    char path[128], rawpath[128];
} snap_ctx;

static snap_ctx *g_live;

static void snap_release(snap_ctx *f)
{
    gck_snapshot_destroy(f->snap);
    free(f->raw);
    free(f->rbuf);
    f->snap = NULL, f->raw = NULL, f->rbuf = NULL;
    unlink(f->path), unlink(f->rawpath);
}

/* Builds the snapshot and both files once per benchmark; only one lives. */
static const char *snap_prepare(void *ctx, int64_t n, int threads)
{
    (void)n, (void)threads;
    snap_ctx *f = ctx;
    if (f->snap != NULL)
        return NULL;
    if (g_live != NULL)
        snap_release(g_live);
    g_live = f;
    snprintf(f->path, sizeof f->path, "/dev/shm/gck_bench_%s.safetensors", f->model);
    snprintf(f->rawpath, sizeof f->rawpath, "/dev/shm/gck_bench_%s.raw", f->model);
    f->raw = malloc(f->params * sizeof(float));
    f->rbuf = f->op == 5 ? malloc(f->params * sizeof(float)) : NULL;
    if (f->raw == NULL || (f->op == 5 && f->rbuf == NULL))
        return "out of memory";
    if (f->rbuf != NULL)
        memset(f->rbuf, 1, f->params * sizeof(float));
    for (size_t i = 0; i < f->params; i++)
        f->raw[i] = (float)(i % 1000) * 0.001f;
    if (gck_snapshot_create(1, &f->snap) != GCK_OK)
        return gck_last_error();
    const size_t per = f->params / f->ntensors;
    char name[64];
    for (size_t t = 0; t < f->ntensors; t++) {
        const size_t len = t + 1 == f->ntensors ? f->params - per * t : per;
        const int64_t shape[1] = {(int64_t)len};
        snprintf(name, sizeof name, "layer%04zu.weight", t);
        if (gck_snapshot_add_tensor(f->snap, name, GCK_DTYPE_F32, shape, 1, f->raw + per * t) != GCK_OK)
            return gck_last_error();
    }
    /* Three untimed rounds of each write: the first writes of a few hundred
     * MB into tmpfs pay for fresh pages (1.4 s instead of 0.24 s for 500 MB
     * on this VM); the timed runs measure the steady state of both. A smoke
     * run only needs the files. */
    for (int r = 0; r < (gck_bench_smoke() ? 1 : 3); r++) {
        if (gck_snapshot_save(f->snap, f->path) != GCK_OK)
            return gck_last_error();
        const int fd = open(f->rawpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, f->raw, f->params * 4) != (ssize_t)(f->params * 4))
            return "cannot write the raw file";
        close(fd);
    }
    return NULL;
}

static double snap_body(void *ctx, int64_t n)
{
    (void)n;
    snap_ctx *f = ctx;
    const size_t bytes = f->params * 4;
    switch (f->op) {
    case 0:
        if (gck_snapshot_save(f->snap, f->path) != GCK_OK)
            abort();
        return 0;
    case 1:
    case 2: {
        gck_snapshot *l = NULL;
        if ((f->op == 1 ? gck_snapshot_load(f->path, &l) : gck_snapshot_load_mmap(f->path, 0, &l)) != GCK_OK)
            abort();
        const double k = (double)gck_snapshot_num_tensors(l);
        gck_snapshot_destroy(l);
        return k;
    }
    case 3: {
        const int fd = open(f->rawpath, O_WRONLY | O_TRUNC);
        if (fd < 0 || write(fd, f->raw, bytes) != (ssize_t)bytes)
            abort();
        fsync(fd);
        close(fd);
        return 0;
    }
    case 5: { /* into one buffer, faulted in by prepare */
        const int fd = open(f->rawpath, O_RDONLY);
        if (fd < 0 || read(fd, f->rbuf, bytes) != (ssize_t)bytes)
            abort();
        close(fd);
        return ((float *)f->rbuf)[bytes / 8];
    }
    default: {
        void *buf = malloc(bytes);
        const int fd = open(f->rawpath, O_RDONLY);
        if (buf == NULL || fd < 0 || read(fd, buf, bytes) != (ssize_t)bytes)
            abort();
        close(fd);
        const double v = ((float *)buf)[bytes / 8];
        free(buf);
        return v;
    }
    }
}

void gck_bench_register_snapshot(int threads)
{
    static const char *const ops[6] = {"save", "load", "load_mmap", "raw_write", "raw_read", "raw_read_reuse"};
    static snap_ctx ctx[2][2][6]; /* [threads - 1][model][op] */
    static const struct { const char *model; size_t params, ntensors; } models[2] = {
        {"resnet50", 25549352, 153}, {"gpt2s", 124439808, 148}};
    for (int m = 0; m < 2; m++)
        for (int o = 0; o < 6; o++) {
            if (threads != 1 && o != 1)
                continue; /* only load reads (and hashes) tensors on several threads */
            snap_ctx *f = &ctx[threads - 1][m][o];
            *f = (snap_ctx){.model = models[m].model, .params = models[m].params, .ntensors = models[m].ntensors,
                            .op = o};
            char name[96];
            snprintf(name, sizeof name, "snapshot_%s/%s/%dt", ops[o], models[m].model, threads);
            const int64_t size = (int64_t)models[m].params;
            gck_bench_register(&(gck_bench_spec){.name = name, .body = snap_body, .prepare = snap_prepare,
                                                 .ctx = f, .threads = threads, .bytes_per_elem = 4.0, .label = "f32",
                                                 .sizes = &size, .nsizes = 1});
        }
}
