/* examples/train_plainsave.c - the state as plain files on a background thread (--save-plain). */
#include "train_plainsave.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct train_plainsave {
    char dir[4096];
    unsigned char *buf;
    size_t cap, len;
    unsigned keep;
    unsigned long long k; /* files written */
    int pending, stop, failed;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
};

static int write_all(int fd, const unsigned char *b, size_t n)
{
    while (n > 0) {
        const ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w, n -= (size_t)w;
    }
    return 0;
}

/* One save: what the store's save does besides encoding (a new file, durable with its name, and
 * the oldest file dropped). */
static int write_one(train_plainsave *p)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/plain-%llu.bin", p->dir, p->k);
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    int rc = write_all(fd, p->buf, p->len) != 0 || fsync(fd) != 0 ? -1 : 0;
    close(fd);
    const int dfd = open(p->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0)
        rc = -1;
    if (dfd >= 0)
        close(dfd);
    if (p->k >= p->keep) {
        snprintf(path, sizeof path, "%s/plain-%llu.bin", p->dir, p->k - p->keep);
        (void)unlink(path);
    }
    p->k++;
    return rc;
}

static void *run(void *arg)
{
    train_plainsave *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->pending && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        if (!p->pending)
            break;
        pthread_mutex_unlock(&p->mu);
        const int rc = write_one(p); /* the buffer is this thread's until pending is cleared */
        pthread_mutex_lock(&p->mu);
        p->failed |= rc != 0;
        p->pending = 0;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

train_plainsave *train_plainsave_start(const char *dir, size_t bytes, unsigned keep)
{
    train_plainsave *p = calloc(1, sizeof *p);
    if (p == NULL || strlen(dir) >= sizeof p->dir || (p->buf = malloc(bytes ? bytes : 1)) == NULL) {
        fprintf(stderr, "train: --save-plain: cannot set up the writer\n");
        free(p);
        return NULL;
    }
    strcpy(p->dir, dir);
    p->cap = bytes, p->keep = keep ? keep : 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (pthread_create(&p->thread, NULL, run, p) != 0) {
        fprintf(stderr, "train: --save-plain: cannot start the writer's thread\n");
        free(p->buf), free(p);
        return NULL;
    }
    return p;
}

int train_plainsave_put(train_plainsave *p, const void *const *blocks, const size_t *sizes, size_t n)
{
    pthread_mutex_lock(&p->mu);
    while (p->pending)
        pthread_cond_wait(&p->cv, &p->mu);
    const int failed = p->failed;
    pthread_mutex_unlock(&p->mu);
    size_t at = 0;
    for (size_t i = 0; i < n && at + sizes[i] <= p->cap; i++)
        memcpy(p->buf + at, blocks[i], sizes[i]), at += sizes[i];
    pthread_mutex_lock(&p->mu);
    p->len = at, p->pending = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return failed ? -1 : 0;
}

int train_plainsave_end(train_plainsave *p)
{
    if (p == NULL)
        return 0;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    const int rc = p->failed ? -1 : 0;
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->buf), free(p);
    return rc;
}
