/* core/store.c - gck_store: versions of snapshots in a directory, delta-encoded, crash-safe. */
#include "store_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc_internal.h"
#include "io_internal.h"
#include "snapshot_internal.h"
#include "store_delta_internal.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* The background save of gck_store_save_async: one thread per store, made
 * at the first asynchronous save, and at most one snapshot waiting or being
 * saved. Every other call on the store first waits until none is in flight
 * (gck_quiesce), so the thread and the caller never touch the store's state
 * at the same time; only this struct is shared, under mu. */
typedef struct gck_async {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int started;         /* the thread exists */
    int stop;            /* close: the thread ends once idle */
    int busy;            /* a snapshot is queued or being saved */
    gck_snapshot *job;   /* the queued snapshot (the store's) */
    int job_copied;      /* its tensors' buffers are copies the store made of borrowed bytes */
    gck_snapshot *spare; /* the last such snapshot once saved: its buffers take the next save's copies */
    char **tags;         /* its tags (copies) */
    size_t n_tags;
    int unreported;      /* the last asynchronous save failed and nobody was told yet */
    gck_status result;   /* its status */
    uint64_t version;    /* the version the last completed asynchronous save became */
    char msg[GCK_ERROR_MAX];
} gck_async;

struct gck_store {
    char *dir;
    int lock_fd;
    gck_state cur;       /* the committed state (what manifest.json says) */
    uint64_t generation; /* bumped by every commit; part of new file names */
    gck_store_config cfg; /* zstd settings (the policy lives in m) */
    gck_delta_codec *codec;
    gck_snapshot *cache; /* content of cache_version (the latest), or NULL */
    uint64_t cache_version;
    gck_manifest_cache *mcache; /* texts of the committed manifest's versions (made at the first commit) */
    int readonly;        /* gck_store_open_readonly: no lock, m is a view of one manifest */
    gck_async *async;    /* made at the first gck_store_save_async */
    pthread_t reaper;    /* deletes the files the last commit dropped (gck_reap) */
    int reaper_live;     /* reaper runs or has not been joined */
    pid_t reaper_pid;    /* the process that started it (a forked child has no such thread) */
};

/* Waits until no asynchronous save is in flight (its result stays for
 * gck_store_wait, the next save or close). const: the async state is the
 * only thing touched, and it is not part of the store's value. */
static void gck_quiesce(const gck_store *s)
{
    gck_async *a = s != NULL ? s->async : NULL;
    if (a == NULL)
        return;
    pthread_mutex_lock(&a->mu);
    while (a->busy)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
}

/* ---- deleting dropped files in the background ----------------------------------
 *
 * The files a commit drops (evicted versions, hidden bases no chain reads)
 * are garbage from the moment the manifest's rename is durable, and no later
 * file takes their names (each holds its version and generation). Deleting
 * them on the caller's thread cost a save on ext4 about 0.3 ms per file of
 * 1.4 MB (freeing its pages and blocks), most of a small save's margin
 * over a bare durable write (small_save/store/default evicts a version per
 * save). So one thread per commit deletes them while the caller goes on; a
 * deletion lost to a crash leaves garbage that the next open removes, as
 * before. gck_reap_join waits for it: the next commit that drops files,
 * gc, wait and close. */
typedef struct gck_reap_job {
    char **paths;
    size_t n;
} gck_reap_job;

static void *gck_reap_run(void *arg)
{
    gck_reap_job *j = arg;
    for (size_t i = 0; i < j->n; i++) {
        (void)unlink(j->paths[i]);
        free(j->paths[i]);
    }
    free(j->paths);
    free(j);
    return NULL;
}

static void gck_reap_join(gck_store *s)
{
    if (s != NULL && s->reaper_live) {
        if (s->reaper_pid == getpid())
            pthread_join(s->reaper, NULL);
        s->reaper_live = 0;
    }
}

/* After gck_quiesce: the failed asynchronous save nobody was told of, as
 * this thread's error (and then reported), or GCK_OK. */
static gck_status gck_take_async_error(gck_store *s)
{
    gck_async *a = s->async;
    if (a == NULL || !a->unreported)
        return GCK_OK;
    a->unreported = 0;
    return gck_fail(a->result, "asynchronous save: %s", a->msg);
}

void gck_store_config_init(gck_store_config *c)
{
    if (c == NULL)
        return;
    gck_policy_init(&c->policy);
    c->zstd_level = 1;
    c->zstd_max_entropy = 0.97;
    c->coder = GCK_STORE_CODER_AUTO;
    c->compress_full = 0;
    c->async_threads = 1;
}

/* dir + "/" + name into buf; 0 when too long. */
static int gck_path(char *buf, const gck_store *s, const char *name)
{
    return snprintf(buf, PATH_MAX, "%s/%s", s->dir, name) < PATH_MAX;
}

static uint64_t gck_file_size(const gck_store *s, const char *name)
{
    char p[PATH_MAX];
    struct stat st;
    return gck_path(p, s, name) && stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Writes `next` as the manifest. *renamed = 1 once it is in place (then the
 * change has happened even if only the directory fsync failed after it). */
static gck_status gck_commit_with(gck_store *s, const gck_state *next, const int *fds, size_t n_fds, int *renamed)
{
    char p[PATH_MAX];
    *renamed = 0;
    if (!gck_path(p, s, GCK_MANIFEST_NAME)) {
        for (size_t i = 0; i < n_fds; i++)
            close(fds[i]);
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "store path '%.300s' is too long", s->dir);
    }
    if (s->mcache == NULL)
        s->mcache = gck_manifest_cache_create(); /* without it every version is serialized again */
    return gck_manifest_write(p, next, s->generation + 1, &s->cfg, s->mcache, fds, n_fds, renamed);
}

static gck_status gck_commit(gck_store *s, const gck_state *next, int *renamed)
{
    return gck_commit_with(s, next, NULL, 0, renamed);
}

/* Is `name` referenced by the committed manifest? */
static int gck_referenced(const gck_store *s, const char *name)
{
    for (size_t i = 0; i < s->cur.n; i++)
        if (strcmp(s->cur.recs[i]->file, name) == 0)
            return 1;
    return 0;
}

/* Leftovers of the store's own writers: temporaries of data files and of the
 * manifest (".<name>.tmp.<pid>.<k>") and data files no version names. */
static int gck_is_garbage(const gck_store *s, const char *name)
{
    if (gck_store_data_name_ok(name))
        return !gck_referenced(s, name);
    if (name[0] != '.' || strstr(name, ".tmp.") == NULL)
        return 0;
    char inner[NAME_MAX + 1];
    snprintf(inner, sizeof inner, "%.*s", (int)(strstr(name, ".tmp.") - name - 1), name + 1);
    return gck_store_data_name_ok(inner) || strcmp(inner, GCK_MANIFEST_NAME) == 0;
}

/* Changes need the writer's lock: refused on a read-only handle before anything is written. */
static gck_status gck_check_writable(const gck_store *s, const char *fn)
{
    if (s->readonly)
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "%s: store '%.300s' is open read-only (gck_store_open_readonly)", fn,
                        s->dir);
    return GCK_OK;
}

gck_status gck_store_gc(gck_store *s, uint64_t *bytes_freed)
{
    gck_quiesce(s);
    gck_reap_join(s);
    GCK_CHECK_ARG(s != NULL, "gck_store_gc: store is NULL");
    GCK_TRY(gck_check_writable(s, "gck_store_gc"));
    DIR *d = opendir(s->dir);
    if (d == NULL)
        return gck_io_fail("cannot list the store", s->dir, errno);
    uint64_t freed = 0;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!gck_is_garbage(s, de->d_name))
            continue;
        char p[PATH_MAX];
        struct stat st;
        if (!gck_path(p, s, de->d_name) || lstat(p, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (unlink(p) == 0) {
            freed += (uint64_t)st.st_size;
            removed = 1;
        }
    }
    closedir(d);
    if (removed)
        (void)gck_sync_dir(s->dir);
    if (bytes_freed != NULL)
        *bytes_freed = freed;
    return GCK_OK;
}

/* Ends the background thread (after gck_quiesce: it is idle) and frees its state. */
static void gck_async_end(gck_store *s)
{
    gck_async *a = s->async;
    if (a == NULL)
        return;
    if (a->started) {
        pthread_mutex_lock(&a->mu);
        a->stop = 1;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
        pthread_join(a->thread, NULL);
    }
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    gck_snapshot_destroy(a->spare);
    free(a);
    s->async = NULL;
}

gck_status gck_store_close(gck_store *s)
{
    if (s == NULL)
        return GCK_OK;
    gck_quiesce(s);
    const gck_status st = gck_take_async_error(s);
    gck_async_end(s);
    gck_reap_join(s);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the flock */
    gck_state_clear(&s->cur);
    gck_delta_codec_destroy(s->codec);
    gck_snapshot_destroy(s->cache);
    gck_manifest_cache_destroy(s->mcache);
    free(s->dir);
    free(s);
    return st;
}

static gck_status gck_check_config(const gck_store_config *cfg)
{
    GCK_CHECK_ARG(cfg->zstd_level >= -7 && cfg->zstd_level <= 19 && cfg->zstd_level != 0,
                  "store config: zstd_level %d is not in -7..-1 or 1..19", cfg->zstd_level);
    GCK_CHECK_ARG(cfg->zstd_max_entropy > 0.0 && cfg->zstd_max_entropy <= 1.0,
                  "store config: zstd_max_entropy %g is not in (0, 1]", cfg->zstd_max_entropy);
    GCK_CHECK_ARG(cfg->coder == GCK_STORE_CODER_AUTO || cfg->coder == GCK_STORE_CODER_ZSTD,
                  "store config: coder %d is not GCK_STORE_CODER_AUTO or GCK_STORE_CODER_ZSTD", cfg->coder);
    GCK_CHECK_ARG(cfg->compress_full == 0 || cfg->compress_full == 1, "store config: compress_full %d is not 0 or 1",
                  cfg->compress_full);
    GCK_CHECK_ARG(cfg->async_threads >= 0 && cfg->async_threads <= 1024,
                  "store config: async_threads %d is not in 0..1024", cfg->async_threads);
    return GCK_OK;
}

/* Takes the store's lock: one process (and one handle) at a time. */
static gck_status gck_lock(gck_store *s)
{
    char p[PATH_MAX];
    if (!gck_path(p, s, "lock"))
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "store path '%.300s' is too long", s->dir);
    s->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (s->lock_fd < 0)
        return gck_io_fail("cannot create the lock file", p, errno);
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        const int e = errno;
        if (e == EWOULDBLOCK)
            return gck_fail(GCK_ERR_IO, "store '%.300s' is open in another process or handle (lock '%.300s' is held)",
                            s->dir, p);
        return gck_io_fail("cannot lock", p, e);
    }
    return GCK_OK;
}

static gck_status gck_check_dir(const char *dir, gck_store **out, const char *fn)
{
    GCK_CHECK_ARG(dir != NULL && out != NULL, "%s: NULL argument", fn);
    GCK_CHECK_ARG(dir[0] != '\0', "%s: empty directory name", fn);
    GCK_CHECK_ARG(strlen(dir) < PATH_MAX - 64, "%s: directory name too long", fn);
    return GCK_OK;
}

/* A store object for dir holding nothing yet. */
static gck_status gck_store_new(const char *dir, const char *fn, gck_store **out)
{
    gck_store *s = gck_calloc(1, sizeof *s);
    if (s == NULL || (s->dir = gck_strdup(dir)) == NULL) {
        free(s);
        return gck_fail_ctx(gck_fail_oom("store", sizeof *s + strlen(dir) + 1), "%s", fn);
    }
    s->lock_fd = -1;
    *out = s;
    return GCK_OK;
}

gck_status gck_store_open(const char *dir, const gck_store_config *cfg, gck_store **out)
{
    GCK_TRY(gck_check_dir(dir, out, "gck_store_open"));
    if (cfg != NULL)
        GCK_TRY(gck_check_config(cfg));
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return gck_io_fail("cannot create the store directory", dir, errno);
    gck_store *s = NULL;
    GCK_TRY(gck_store_new(dir, "gck_store_open", &s));
    char p[PATH_MAX];
    gck_path(p, s, GCK_MANIFEST_NAME);
    int fresh = 0;
    gck_status st = gck_lock(s);
    if (st != GCK_OK)
        goto fail;
    st = gck_manifest_read(p, &s->cur, &s->generation, &s->cfg);
    if (st == GCK_ERR_NOT_FOUND) {
        gck_store_config_init(&s->cfg);
        st = gck_manager_create(&s->cfg.policy, &s->cur.m);
        fresh = 1;
    }
    if (st != GCK_OK)
        goto fail;
    if (cfg != NULL) {
        gck_manager_set_policy(s->cur.m, &cfg->policy);
        s->cfg = *cfg;
    }
    if ((st = gck_delta_codec_create(s->cfg.zstd_level, s->cfg.zstd_max_entropy, s->cfg.coder, &s->codec)) != GCK_OK)
        goto fail;
    /* record a new store (and a changed configuration) right away */
    if (fresh || cfg != NULL) {
        int renamed;
        st = gck_commit(s, &s->cur, &renamed);
        s->generation += renamed;
        if (st != GCK_OK)
            goto fail;
    }
    if ((st = gck_store_gc(s, NULL)) != GCK_OK)
        goto fail;
    *out = s;
    return GCK_OK;
fail:
    gck_store_close(s);
    return st;
}

gck_status gck_store_open_readonly(const char *dir, gck_store **out)
{
    GCK_TRY(gck_check_dir(dir, out, "gck_store_open_readonly"));
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return gck_io_fail("cannot open the store directory", dir, errno);
    if (!S_ISDIR(sb.st_mode))
        return gck_io_fail("cannot open the store directory", dir, ENOTDIR);
    gck_store *s = NULL;
    GCK_TRY(gck_store_new(dir, "gck_store_open_readonly", &s));
    s->readonly = 1;
    char p[PATH_MAX];
    gck_path(p, s, GCK_MANIFEST_NAME);
    /* one read of a file that is only ever replaced by rename: a whole manifest, old or new */
    gck_status st = gck_manifest_read(p, &s->cur, &s->generation, &s->cfg);
    if (st == GCK_ERR_NOT_FOUND)
        st = gck_fail(GCK_ERR_NOT_FOUND, "'%.300s' is not a store (no %s)", dir, GCK_MANIFEST_NAME);
    if (st != GCK_OK ||
        (st = gck_delta_codec_create(s->cfg.zstd_level, s->cfg.zstd_max_entropy, s->cfg.coder, &s->codec)) != GCK_OK) {
        gck_store_close(s);
        return st;
    }
    *out = s;
    return GCK_OK;
}

/* ---- reading versions ------------------------------------------------------------ */

/* A version as the store reads it: the manager's entry (its public view)
 * and the store's own record of it. */
typedef struct gck_ver {
    gck_entry pub;
    const gck_vrec *rec;
} gck_ver;

/* Version v of state m into *out; 0 when m does not retain it (a hidden
 * base is not retained: it cannot be restored, listed or tagged). */
static int gck_ver_of(const gck_state *m, uint64_t v, gck_ver *out)
{
    const gck_entry *e = gck_manager_get(m->m, v);
    const gck_vrec *r = gck_state_rec(m, v);
    if (e == NULL || r == NULL)
        return 0;
    *out = (gck_ver){*e, r};
    return 1;
}

/* The base v of a delta on a chain into *out: a retained version or a
 * hidden base; 0 when m has neither. */
static int gck_base_of(const gck_state *m, uint64_t v, gck_ver *out)
{
    const gck_entry *e = gck_state_entry(m, v);
    const gck_vrec *r = gck_state_rec(m, v);
    if (e == NULL || r == NULL)
        return 0;
    *out = (gck_ver){*e, r};
    return 1;
}

/* The version's file holds coded planes (a delta, or a full version saved with compress_full). */
static int gck_is_coded(const gck_ver *e)
{
    return e->pub.is_delta || gck_store_packed_name(e->rec->file);
}

/* check: the version is the one restored (not only a base on its way). */
static gck_status gck_load_file(const gck_store *s, const gck_ver *e, int check, gck_snapshot **out)
{
    char p[PATH_MAX];
    if (!gck_path(p, s, e->rec->file))
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "store path too long");
    /* mapped, not copied: a full version's bytes are all hashed and checked
     * here when it is the one restored; a delta's payloads are not, as every
     * tensor rebuilt from them is checked against its recorded content id */
    /* payloads the file records no id for (newer files) are not hashed either */
    GCK_TRY_CTX(gck_snapshot_load_whole(p, gck_is_coded(e) ? -1 : check != 0, out), "version %" PRIu64,
                e->pub.version);
    return GCK_OK;
}

/* Step, timestamp and (where recorded) the digest of every other field against the manifest. */
static gck_status gck_check_fields(const gck_ver *e, const gck_snapshot *snap)
{
    if (snap->step != e->rec->step || snap->timestamp != e->pub.timestamp_secs)
        return gck_fail(GCK_ERR_CORRUPT,
                        "version %" PRIu64 " (%.200s): step %" PRIu64 " and timestamp %" PRIu64
                        " differ from the manifest's %" PRIu64 " and %" PRIu64,
                        e->pub.version, e->rec->file, snap->step, snap->timestamp, e->rec->step, e->pub.timestamp_secs);
    if (e->rec->fields_digest[0] == '\0')
        return GCK_OK; /* a manifest written before digests were recorded */
    char d[24];
    gck_snapshot_fields_digest(snap, GCK_DELTA_KEY, d);
    if (strcmp(d, e->rec->fields_digest) != 0)
        return gck_fail(GCK_ERR_CORRUPT,
                        "version %" PRIu64 " (%.200s): metadata, loss cid, dtypes or shapes differ from what was saved "
                        "(digest %s, the manifest records %s)",
                        e->pub.version, e->rec->file, d, e->rec->fields_digest);
    return GCK_OK;
}

/* Every tensor of a rebuilt version against the manifest's names and ids. */
static gck_status gck_check_against_entry(const gck_ver *e, const gck_snapshot *snap)
{
    const size_t n = snap->tensors.n + snap->blobs.n;
    if (n != e->pub.n_tensor_names)
        return gck_fail(GCK_ERR_CORRUPT, "version %" PRIu64 ": %zu tensors, the manifest lists %zu", e->pub.version,
                        n, e->pub.n_tensor_names);
    const size_t pl = strlen(GCK_OPTIMIZER_PREFIX);
    for (size_t i = 0; i < n; i++) {
        const char *name = e->pub.tensor_names[i], *cid = NULL;
        int found = 0;
        if (strncmp(name, GCK_OPTIMIZER_PREFIX, pl) == 0) {
            const size_t k = gck_named_find(&snap->blobs, name + pl, &found);
            cid = found ? ((gck_snap_blob *)snap->blobs.items[k])->cid : NULL;
        } else {
            const size_t k = gck_named_find(&snap->tensors, name, &found);
            cid = found ? ((gck_snap_tensor *)snap->tensors.items[k])->cid : NULL;
        }
        if (cid == NULL || strcmp(cid, e->rec->cids[i]) != 0)
            return gck_fail(GCK_ERR_CORRUPT, "version %" PRIu64 ": tensor '%.200s' %s the manifest", e->pub.version,
                            name, cid ? "differs from" : "is missing but listed in");
    }
    return gck_check_fields(e, snap);
}

/* Rebuilds e given its base's content (NULL for a full version). With
 * `check` (e is the version restored) every tensor is hashed and checked
 * against the manifest; without it (e is only the base of the next level
 * of a chain) its bytes are not hashed: each tensor of the version restored
 * on it is, and a wrong base byte it uses makes that id differ. The
 * manifest's names, ids, step, timestamp and fields digest are compared
 * with the file's in both cases. */
static gck_status gck_rebuild(gck_store *s, const gck_ver *e, const gck_snapshot *base, int check,
                              gck_snapshot **out)
{
    gck_snapshot *file = NULL;
    GCK_TRY(gck_load_file(s, e, check, &file));
    gck_snapshot *r = file;
    if (gck_is_coded(e)) {
        r = NULL;
        const gck_status st = gck_delta_decode(s->codec, file, e->pub.is_delta ? base : NULL, check,
                                               e->pub.is_delta ? e->pub.delta_from : 0, &r);
        gck_snapshot_destroy(file);
        GCK_TRY_CTX(st, "version %" PRIu64 " (%s)", e->pub.version, e->rec->file);
    }
    const gck_status st = gck_check_against_entry(e, r);
    if (st != GCK_OK) {
        gck_snapshot_destroy(r);
        return st;
    }
    if (check)
        gck_snapshot_close_file(r); /* the version restored: the caller's; a base keeps it for the decoding */
    *out = r;
    return GCK_OK;
}

static gck_status gck_restore_back(gck_store *s, uint64_t v, gck_snapshot **out);

/* Content of version v in state m (files as m names them); from the
 * cache when allowed and it holds v or a version on v's chain, or (the
 * committed state) backwards from the cache when v is on the cached
 * version's chain nearer to it than to v's full version. */
static gck_status gck_restore_in(gck_store *s, const gck_state *m, uint64_t v, int use_cache, gck_snapshot **out)
{
    if (use_cache && m == &s->cur && s->cache != NULL && s->cache_version > v && gck_restore_back(s, v, out) == GCK_OK)
        return GCK_OK; /* else rebuilt forwards, which reports its own errors */
    /* the chain from v down to a full version (or the cached one) */
    size_t n = 0, cap = 8;
    gck_snapshot *cur = NULL;
    gck_ver e;
    int from_cache = 0;
    gck_status st = GCK_OK;
    gck_ver *chain = gck_malloc(cap * sizeof *chain);
    if (chain == NULL)
        return gck_fail_oom("restore: version chain", cap * sizeof *chain);
    if (!gck_ver_of(m, v, &e)) {
        st = gck_fail(GCK_ERR_NOT_FOUND, "version %" PRIu64 " is not retained", v);
        goto done;
    }
    for (;;) {
        if (use_cache && s->cache != NULL && e.pub.version == s->cache_version) {
            from_cache = 1;
            break;
        }
        if (n == cap) {
            gck_ver *nc = gck_realloc(chain, 2 * cap * sizeof *nc);
            if (nc == NULL) {
                st = gck_fail_oom("restore: version chain", 2 * cap * sizeof *nc);
                goto done;
            }
            chain = nc, cap *= 2;
        }
        chain[n++] = e;
        if (!e.pub.is_delta)
            break;
        const uint64_t base = e.pub.delta_from;
        if (!gck_base_of(m, base, &e)) {
            st = gck_fail(GCK_ERR_CORRUPT, "version %" PRIu64 ": its base %" PRIu64 " is not retained",
                          chain[n - 1].pub.version, base);
            goto done;
        }
    }
    if (from_cache && (st = gck_snapshot_clone(s->cache, &cur)) != GCK_OK)
        goto done;
    while (n > 0) {
        gck_snapshot *next = NULL;
        n--;
        st = gck_rebuild(s, &chain[n], cur, n == 0, &next); /* only v itself hashed */
        gck_snapshot_destroy(cur);
        cur = next;
        if (st != GCK_OK)
            goto done;
    }
    *out = cur;
    cur = NULL;
done:
    gck_snapshot_destroy(cur);
    free(chain);
    return st;
}

/* ---- readers beside a writer -------------------------------------------------------
 * A read-only handle reads the files its manifest names, without the lock. A
 * writer never changes a data file (every file is new, under a name with a new
 * generation) and removes one only after committing a manifest that no longer
 * names it, so a file the handle finds is the right one; a file it does not
 * find was dropped since the handle read its manifest: its version evicted
 * (with the last version whose chain read it, for a hidden base), or, by a
 * writer of a build that rebased on eviction, replaced. */

/* How many newer manifests a read of one version follows before giving up
 * (each means a writer changed that version's chain again meanwhile). */
#define GCK_READ_RETRIES 8

/* The first data file on v's chain in m that does not exist, or NULL. */
static const char *gck_chain_vanished(const gck_store *s, const gck_state *m, uint64_t v)
{
    gck_ver e;
    for (int more = gck_ver_of(m, v, &e); more; more = e.pub.is_delta && gck_base_of(m, e.pub.delta_from, &e)) {
        char p[PATH_MAX];
        struct stat sb;
        if (gck_path(p, s, e.rec->file) && stat(p, &sb) != 0 && errno == ENOENT)
            return e.rec->file;
    }
    return NULL;
}

static int gck_names_file(const gck_state *m, const char *file)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->recs[i]->file, file) == 0)
            return 1;
    return 0;
}

/* After `st`, a failed read of version v as manager m names it: for a
 * read-only handle whose file of v's chain is gone, follows the current
 * manifest - v still retained (rebased by a writer of a build that did so):
 * rebuilt (and checked) from the files that manifest names; v evicted (or
 * become a hidden base): GCK_ERR_NOT_FOUND "evicted meanwhile". The handle's
 * own view (s->cur) stays as it is. */
static gck_status gck_follow_writer(gck_store *s, const gck_state *m, uint64_t v, gck_status st,
                                    gck_snapshot **out)
{
    gck_state cur = {0};
    for (int tries = 0; s->readonly && st == GCK_ERR_IO && tries < GCK_READ_RETRIES; tries++) {
        const char *gone = gck_chain_vanished(s, m, v);
        if (gone == NULL)
            break; /* an I/O error of its own: reported as it is */
        char name[NAME_MAX + 1];
        snprintf(name, sizeof name, "%s", gone);
        char p[PATH_MAX];
        gck_store_config cfg;
        uint64_t gen;
        gck_state next = {0};
        gck_path(p, s, GCK_MANIFEST_NAME);
        const gck_status rs = gck_manifest_read(p, &next, &gen, &cfg);
        if (rs != GCK_OK) {
            st = rs;
            break;
        }
        if (gck_names_file(&next, name)) { /* still named: damage, not a writer's change */
            gck_state_clear(&next);
            st = gck_fail(GCK_ERR_IO, "version %" PRIu64 ": data file '%.300s/%.200s' is missing", v, s->dir, name);
            break;
        }
        if (gck_manager_get(next.m, v) == NULL) {
            gck_state_clear(&next);
            st = gck_fail(GCK_ERR_NOT_FOUND,
                          "version %" PRIu64 " was evicted meanwhile (a writer removed it after this read-only handle "
                          "read the manifest of '%.300s')",
                          v, s->dir);
            break;
        }
        gck_state_clear(&cur);
        cur = next, m = &cur;
        st = gck_restore_in(s, m, v, 0, out);
    }
    gck_state_clear(&cur);
    return st;
}

gck_status gck_store_restore(gck_store *s, uint64_t version, gck_snapshot **out)
{
    gck_quiesce(s);
    GCK_CHECK_ARG(s != NULL && out != NULL, "gck_store_restore: NULL argument");
    const gck_status st = gck_restore_in(s, &s->cur, version, 1, out);
    return st == GCK_OK ? st : gck_follow_writer(s, &s->cur, version, st, out);
}

gck_status gck_store_verify_each(gck_store *s, gck_store_verify_fn fn, void *ctx, size_t *n_checked)
{
    gck_quiesce(s);
    GCK_CHECK_ARG(s != NULL, "gck_store_verify: store is NULL");
    size_t ok = 0;
    gck_status st = GCK_OK;
    gck_snapshot *prev = NULL; /* the previous version: usually the next one's base */
    uint64_t prev_v = 0;
    for (size_t i = 0; i < s->cur.n; i++) {
        gck_ver e = {.rec = NULL};
        const uint64_t v = s->cur.recs[i]->version;
        if (s->cur.recs[i]->hidden)
            continue; /* checked as part of the chains that read it */
        gck_ver_of(&s->cur, v, &e); /* every other record's version is retained */
        gck_snapshot *cur = NULL;
        if (e.pub.is_delta && prev != NULL && e.pub.delta_from == prev_v)
            st = gck_rebuild(s, &e, prev, 1, &cur);
        else
            st = gck_restore_in(s, &s->cur, v, 0, &cur);
        if (st != GCK_OK)
            st = gck_follow_writer(s, &s->cur, v, st, &cur);
        gck_snapshot_destroy(prev);
        prev = cur, prev_v = v;
        /* evicted by a writer while this read-only handle looked: not damage */
        const int evicted = s->readonly && st == GCK_ERR_NOT_FOUND;
        ok += st == GCK_OK;
        if (fn != NULL)
            fn(ctx, v, st);
        if (evicted)
            st = GCK_OK, prev = NULL;
        if (st != GCK_OK)
            break;
    }
    gck_snapshot_destroy(prev);
    if (n_checked != NULL)
        *n_checked = ok;
    return st;
}

gck_status gck_store_verify(gck_store *s, size_t *n_checked)
{
    return gck_store_verify_each(s, NULL, NULL, n_checked);
}

/* ---- changing the store ---------------------------------------------------------- */

/* Files written for a change: until the commit each is open (fd, not yet
 * fsynced); on failure they are removed. Also the files a change replaces
 * (fd -1), removed after the commit. */
typedef struct gck_names {
    char **v;
    int *fd;
    size_t n, cap;
} gck_names;

static int gck_names_add(gck_names *l, char *name, int fd)
{
    if (l->n == l->cap) {
        const size_t nc = l->cap ? 2 * l->cap : 4;
        char **nv = gck_realloc(l->v, nc * sizeof *nv);
        if (nv != NULL)
            l->v = nv;
        int *nf = nv != NULL ? gck_realloc(l->fd, nc * sizeof *nf) : NULL;
        if (nf == NULL)
            return 0;
        l->fd = nf, l->cap = nc;
    }
    l->v[l->n] = name, l->fd[l->n] = fd;
    l->n++;
    return 1;
}

/* Closes what is still open, unlinks (when unlink_them) and frees every name. */
static void gck_names_drop(const gck_store *s, gck_names *l, int unlink_them)
{
    char p[PATH_MAX];
    for (size_t i = 0; i < l->n; i++) {
        if (l->fd[i] >= 0)
            close(l->fd[i]);
        if (unlink_them && gck_path(p, s, l->v[i]))
            unlink(p);
        free(l->v[i]);
    }
    free(l->v), free(l->fd);
    *l = (gck_names){0};
}

/* Deletes the files named in l (and frees l) on the reaper thread, or here
 * when no thread can be had or may be started (gck_store_may_thread). */
static void gck_reap(gck_store *s, gck_names *l)
{
    if (l->n == 0) {
        gck_names_drop(s, l, 0);
        return;
    }
    gck_reap_join(s); /* one deleting thread at a time */
    gck_reap_job *j = gck_calloc(1, sizeof *j);
    char **paths = j != NULL ? gck_calloc(l->n, sizeof *paths) : NULL;
    int ok = paths != NULL;
    for (size_t i = 0; ok && i < l->n; i++) {
        char p[PATH_MAX];
        ok = gck_path(p, s, l->v[i]) && (paths[i] = gck_strdup(p)) != NULL;
    }
    if (ok) {
        *j = (gck_reap_job){.paths = paths, .n = l->n};
        ok = gck_store_may_thread() && pthread_create(&s->reaper, NULL, gck_reap_run, j) == 0;
        if (ok) {
            s->reaper_live = 1;
            s->reaper_pid = getpid();
            gck_names_drop(s, l, 0);
            return;
        }
    }
    for (size_t i = 0; paths != NULL && i < l->n; i++)
        free(paths[i]);
    free(paths), free(j);
    gck_names_drop(s, l, 1);
}

/* Writes content (against base content, or full when base is NULL) as the
 * data file of version v, added to `written` (open, for the commit to
 * fsync); *name_out points at its name there. */
static gck_status gck_write_version(gck_store *s, uint64_t v, const gck_snapshot *content, gck_snapshot *base,
                                    int adopt, uint64_t base_v, gck_names *written, const char **name_out,
                                    uint64_t *bytes_out)
{
    char name[96], p[PATH_MAX];
    const int packed = base == NULL && s->cfg.compress_full;
    snprintf(name, sizeof name, "v%08" PRIu64 "-g%" PRIu64 "%s.safetensors", v, s->generation + 1,
             base ? ".delta" : packed ? ".packed" : "");
    if (!gck_path(p, s, name))
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "store path too long");
    gck_status st;
    /* Written under its final name, with neither a rename nor a directory
     * fsync of its own: no manifest names the file until the commit, so a
     * crash before it leaves only garbage that the next open removes. The
     * commit fsyncs it before the manifest's rename (the manifest naming
     * this file must never be durable while the file's bytes are not: a
     * power loss would leave a version whose data is empty or partial), and
     * its name becomes durable with the commit's single directory fsync. */
    int fd = -1;
    if (base != NULL || packed) {
        st = gck_delta_write(s->codec, content, base, adopt, base_v, p, &fd);
    } else {
        st = gck_snapshot_write_unsynced(content, p, &fd);
    }
    if (st != GCK_OK)
        return st;
    char *own = gck_strdup(name);
    if (own == NULL || !gck_names_add(written, own, fd)) {
        free(own);
        close(fd);
        unlink(p);
        return gck_fail_oom("store: name of a written file", sizeof name);
    }
    *name_out = own;
    *bytes_out = gck_file_size(s, name);
    return GCK_OK;
}

/* The base a save moves to when its planned base is the version it evicts:
 * the evicted version's own base when that is retained, else 0 (full). A
 * save never builds on the version it evicts: each such save would add one
 * hidden base to an ever longer chain. */
static uint64_t gck_new_base(const gck_manager *m, const gck_entry *evicted)
{
    if (evicted->is_delta && gck_manager_get(m, evicted->delta_from) != NULL)
        return evicted->delta_from;
    return 0;
}

/* How many data files a restore of retained version v reads: v's, and
 * its bases' down to a full version (hidden bases included). */
static size_t gck_chain_files(const gck_state *m, uint64_t v)
{
    gck_ver e;
    size_t n = 0;
    for (int more = gck_ver_of(m, v, &e); more; more = e.pub.is_delta && gck_base_of(m, e.pub.delta_from, &e))
        n++;
    return n;
}

/* Names and content ids of a snapshot as the manifest lists them (blobs as
 * "__optimizer__/<param>"), and its logical size. */
static gck_status gck_listing(const gck_snapshot *snap, char ***names, const char ***cids, size_t *n,
                              uint64_t *full_bytes)
{
    const size_t nt = snap->tensors.n, nb = snap->blobs.n;
    char **nv = gck_calloc(nt + nb + 1, sizeof *nv);
    const char **cv = gck_calloc(nt + nb + 1, sizeof *cv);
    uint64_t bytes = 0;
    gck_status st = GCK_OK;
    if (nv == NULL || cv == NULL) {
        st = gck_fail_oom("store: version listing", 2 * (nt + nb + 1) * sizeof *nv);
        goto done;
    }
    for (size_t i = 0; i < nt; i++) {
        const gck_snap_tensor *t = snap->tensors.items[i];
        nv[i] = gck_strdup(t->name);
        cv[i] = t->cid;
        bytes += t->nbytes;
        if (nv[i] == NULL) {
            st = gck_fail_oom("store: a tensor name", strlen(t->name) + 1);
            goto done;
        }
    }
    for (size_t i = 0; i < nb; i++) {
        const gck_snap_blob *b = snap->blobs.items[i];
        const size_t len = strlen(GCK_OPTIMIZER_PREFIX) + strlen(b->name) + 1;
        nv[nt + i] = gck_malloc(len);
        cv[nt + i] = b->cid;
        bytes += b->len;
        if (nv[nt + i] == NULL) {
            st = gck_fail_oom("store: an optimizer blob name", len);
            goto done;
        }
        snprintf(nv[nt + i], len, "%s%s", GCK_OPTIMIZER_PREFIX, b->name);
    }
    *names = nv, *cids = cv, *n = nt + nb, *full_bytes = bytes;
    return GCK_OK;
done:
    for (size_t i = 0; nv && i < nt + nb; i++)
        free(nv[i]);
    free(nv), free(cv);
    return st;
}

/* Replaces the committed state with `next` (already written as the manifest). */
static void gck_switch(gck_store *s, gck_state *next)
{
    gck_state_clear(&s->cur);
    s->cur = *next;
    *next = (gck_state){0};
    s->generation++;
}

/* The checks of a save's arguments (fn: the public name, for the message). */
static gck_status gck_check_save(const gck_store *s, const gck_snapshot *snap, const char *const *tags, size_t n_tags,
                                 const char *fn)
{
    GCK_CHECK_ARG(s != NULL && snap != NULL, "%s: NULL argument", fn);
    GCK_TRY(gck_check_writable(s, fn));
    GCK_CHECK_ARG(tags != NULL || n_tags == 0, "%s: tags is NULL with n_tags %zu", fn, n_tags);
    for (size_t i = 0; i < n_tags; i++)
        GCK_CHECK_ARG(tags[i] != NULL && tags[i][0] != '\0', "%s: tag %zu is NULL or empty", fn, i);
    return GCK_OK;
}

/* 1 when the policy makes the save after version v (of full_bytes, its
 * chain `chain` files long) a full version: then v is not kept in memory. */
static int gck_next_full(const gck_store *s, uint64_t v, uint64_t full_bytes, size_t chain)
{
    const gck_policy *pol = gck_manager_policy(s->cur.m);
    return (pol->keep_every_n > 0 && (v + 1) % pol->keep_every_n == 0) || pol->max_checkpoints <= 1 ||
           full_bytes <= pol->delta_threshold_bytes || chain >= pol->max_checkpoints;
}

/* A save, on the caller's thread or the background one (arguments checked). */
static gck_status gck_save_now(gck_store *s, const gck_snapshot *snap, const char *const *tags, size_t n_tags,
                               uint64_t *version_out)
{
    char **names = NULL;
    const char **cids = NULL;
    size_t n = 0;
    uint64_t full_bytes = 0;
    GCK_TRY(gck_listing(snap, &names, &cids, &n, &full_bytes));

    gck_plan p;
    gck_manager_plan(s->cur.m, full_bytes, &p);
    const gck_entry *evicted = p.evict ? gck_manager_get(s->cur.m, p.evicted) : NULL;
    /* a base this very save evicts is replaced (max_checkpoints 1 gives full versions) */
    if (p.is_delta && evicted != NULL && p.base == evicted->version) {
        p.base = gck_new_base(s->cur.m, evicted);
        p.is_delta = p.base != 0;
    }
    /* A chain is at most max_checkpoints files long: the next version after
     * one that long is full. That bounds the hidden bases without rewriting
     * a file (keep_every_n <= max_checkpoints, the usual case, never gets
     * here), and bounds what a restore reads. */
    const size_t max_chain = gck_manager_policy(s->cur.m)->max_checkpoints;
    if (p.is_delta && gck_chain_files(&s->cur, p.base) >= (max_chain > 1 ? max_chain : 1))
        p.is_delta = 0;
    /* a snapshot that carries a delta description itself cannot be a delta */
    if (gck_snapshot_sysmeta(snap, GCK_DELTA_KEY) != NULL)
        p.is_delta = 0;
    if (!p.is_delta)
        p.base = 0; /* a packed full version's description names base 0 */

    gck_names written = {0}, replaced = {0};
    gck_state next = {0};
    gck_snapshot *owned_base = NULL, *base = NULL;
    const char *name = NULL;
    uint64_t bytes = 0;
    int renamed = 0;
    gck_status st = GCK_OK;
    /* the usual case: the previous save's content, in memory; when the
     * next save is a delta on this one, the encoder also copies this
     * snapshot's values into it as it reads them (adopt; completed after
     * the commit, and no longer the base version's content if this save
     * fails) */
    int adopt = 0;
    if (p.is_delta && s->cache != NULL && s->cache_version == p.base) {
        base = s->cache;
        adopt = !gck_next_full(s, p.version, full_bytes, gck_chain_files(&s->cur, p.base) + 1) &&
                gck_snapshot_same_layout(s->cache, snap);
    } else if (p.is_delta && (st = gck_restore_in(s, &s->cur, p.base, 1, &owned_base)) != GCK_OK)
        goto done;
    else if (p.is_delta)
        base = owned_base;
    st = gck_write_version(s, p.version, snap, base, adopt, p.base, &written, &name, &bytes);
    gck_snapshot_destroy(owned_base);
    if (st != GCK_OK || (st = gck_state_clone(&s->cur, &next)) != GCK_OK)
        goto done;
    /* Eviction rewrites no file: the evicted version's record becomes a
     * hidden base, kept below while a retained version's chain reads it. */
    if (evicted != NULL) {
        gck_vrec *h = gck_vrec_hidden(gck_state_rec(&s->cur, evicted->version), evicted);
        if (h == NULL || (st = gck_state_put(&next, h)) != GCK_OK) {
            st = GCK_ERR_NO_MEMORY;
            goto done;
        }
    }
    if ((st = gck_manager_apply(next.m, &p, (const char *const *)names, n, full_bytes, snap->timestamp, NULL, 0)) !=
        GCK_OK)
        goto done;
    for (size_t i = 0; i < n_tags; i++)
        if ((st = gck_manager_add_tag(next.m, p.version, tags[i], 1)) != GCK_OK)
            goto done;
    char digest[24];
    gck_snapshot_fields_digest(snap, GCK_DELTA_KEY, digest);
    gck_vrec *rec = gck_vrec_new(p.version, snap->step, bytes, written.v[0], cids, n, digest);
    if (rec == NULL || (st = gck_state_put(&next, rec)) != GCK_OK) {
        st = GCK_ERR_NO_MEMORY;
        goto done;
    }
    /* the evicted version's record (unless a retained version's chain reads
     * its file) and the hidden bases no chain reads any more */
    gck_state_prune(&next);
    /* their files, deleted after the commit (a file is never rewritten:
     * each name stays with its version until the version is dropped) */
    for (size_t i = 0; i < s->cur.n; i++) {
        const gck_vrec *old = s->cur.recs[i];
        if (gck_state_rec(&next, old->version) != NULL)
            continue;
        char *f = gck_strdup(old->file);
        if (f == NULL || !gck_names_add(&replaced, f, -1)) {
            free(f);
            st = gck_fail_oom("store: names of dropped files", replaced.cap * sizeof(char *));
            goto done;
        }
    }
    /* The commit: the manifest's temporary file is written and fsynced (so
     * the rename can never be durable ahead of the manifest's bytes: a power
     * loss would leave an empty manifest.json, an unreadable store), renamed
     * over manifest.json (the atomic switch), and the directory fsynced once.
     * That one fsync makes the rename durable and, with it, the names of the
     * data files created above in the same directory. Journaling file systems
     * (ext4, xfs, btrfs) commit a directory's changes in the order they were
     * made, so no crash keeps the rename without those earlier names. So a
     * save costs three fsyncs, also when it evicts (an eviction writes no
     * file, and the files it drops are unlinked after the commit without a
     * fsync: an unlink lost to a crash leaves garbage the next open removes):
     * the data file, the manifest, the directory. The data file's fsync runs
     * together with the manifest's (neither may be missing when the rename
     * happens, and until then their order does not matter), so their device
     * flushes overlap. */
    st = gck_commit_with(s, &next, written.fd, written.n, &renamed);
    for (size_t i = 0; i < written.n; i++)
        written.fd[i] = -1; /* closed by the commit, whatever its outcome */
done:
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names), free(cids);
    if (st != GCK_OK && !renamed) {
        if (adopt)
            s->cache_version = 0; /* partly this snapshot's values: no version's content */
        gck_state_clear(&next);
        gck_names_drop(s, &written, 1);
        gck_names_drop(s, &replaced, 0);
        return st;
    }
    gck_switch(s, &next);
    gck_names_drop(s, &written, 0);
    /* the commit's directory fsync made the new files durable; the replaced
     * ones are deleted in the background (gck_reap) */
    gck_reap(s, &replaced);
    /* the next delta's base, kept in memory (in the previous one's buffers
     * when the layout is unchanged); without it the next save reads it back.
     * Not copied when the policy makes the next save full anyway (then the
     * buffers stay for a later save, marked as holding no version). */
    const int next_full = gck_next_full(s, p.version, full_bytes, gck_chain_files(&s->cur, p.version));
    const gck_status cs = next_full  ? GCK_OK
                          : adopt    ? gck_snapshot_overwrite_ids(s->cache, snap)
                          : s->cache ? gck_snapshot_overwrite(s->cache, snap)
                                     : GCK_ERR_NOT_FOUND;
    if (cs != GCK_OK) {
        gck_snapshot_destroy(s->cache);
        s->cache = NULL;
        if (gck_snapshot_clone(snap, &s->cache) != GCK_OK)
            s->cache = NULL;
    }
    s->cache_version = next_full ? 0 : p.version;
    if (version_out != NULL)
        *version_out = p.version;
    return st; /* an error here: saved, but the directory fsync failed (the message says so) */
}

gck_status gck_store_save(gck_store *s, const gck_snapshot *snap, const char *const *tags, size_t n_tags,
                          uint64_t *version_out)
{
    GCK_TRY(gck_check_save(s, snap, tags, n_tags, "gck_store_save"));
    gck_quiesce(s);
    GCK_TRY(gck_take_async_error(s));
    return gck_save_now(s, snap, tags, n_tags, version_out);
}

/* ---- asynchronous saves ---------------------------------------------------------- */

static void gck_tags_free(char **t, size_t n)
{
    for (size_t i = 0; t != NULL && i < n; i++)
        free(t[i]);
    free(t);
}

/* The background thread: saves each queued snapshot exactly as gck_store_save does. */
static void *gck_async_main(void *arg)
{
    gck_store *s = arg;
    gck_async *a = s->async;
#ifdef _OPENMP
    if (s->cfg.async_threads > 0) /* this thread's own OpenMP setting; the caller's is untouched */
        omp_set_num_threads(s->cfg.async_threads);
#endif
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (a->job == NULL && !a->stop)
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->job == NULL)
            break;
        gck_snapshot *snap = a->job;
        char **tags = a->tags;
        const size_t n_tags = a->n_tags;
        const int copied = a->job_copied;
        a->job = NULL, a->tags = NULL, a->n_tags = 0;
        pthread_mutex_unlock(&a->mu);
        uint64_t v = 0;
        const gck_status st = gck_save_now(s, snap, (const char *const *)tags, n_tags, &v);
        gck_tags_free(tags, n_tags);
        if (!copied)
            gck_snapshot_destroy(snap);
        pthread_mutex_lock(&a->mu);
        if (copied) {
            gck_snapshot_destroy(a->spare);
            a->spare = snap;
        }
        a->result = st;
        a->unreported = st != GCK_OK;
        a->version = v; /* set by a save that happened, also when only its final sync failed */
        if (st != GCK_OK)
            snprintf(a->msg, sizeof a->msg, "%s", gck_last_error());
        a->busy = 0;
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* The async state, made (and its thread started) at the first asynchronous save. */
static gck_status gck_async_start(gck_store *s)
{
    if (s->async != NULL)
        return GCK_OK;
    gck_async *a = gck_calloc(1, sizeof *a);
    if (a == NULL)
        return gck_fail_oom("asynchronous save state", sizeof *a);
    if (pthread_mutex_init(&a->mu, NULL) != 0) {
        free(a);
        return gck_fail(GCK_ERR_IO, "gck_store_save_async: cannot create a mutex");
    }
    if (pthread_cond_init(&a->cv, NULL) != 0) {
        pthread_mutex_destroy(&a->mu);
        free(a);
        return gck_fail(GCK_ERR_IO, "gck_store_save_async: cannot create a condition variable");
    }
    s->async = a;
    const int err = pthread_create(&a->thread, NULL, gck_async_main, s);
    if (err != 0) {
        gck_async_end(s);
        return gck_fail(GCK_ERR_IO, "gck_store_save_async: cannot start the background thread: %s", strerror(err));
    }
    a->started = 1;
    return GCK_OK;
}

gck_status gck_store_save_async(gck_store *s, gck_snapshot *snap, const char *const *tags, size_t n_tags)
{
    char **own = NULL;
    gck_status st = gck_check_save(s, snap, tags, n_tags, "gck_store_save_async");
    if (st != GCK_OK)
        goto fail;
    gck_quiesce(s); /* at most one snapshot in flight */
    if ((st = gck_take_async_error(s)) != GCK_OK || (st = gck_async_start(s)) != GCK_OK)
        goto fail;
    gck_async *a = s->async;
    /* The store reads the snapshot later, and bytes it borrows may change
     * meanwhile: they are copied now, into the buffers of the previous such
     * copy (already saved). Reused, those cost no page faults; new ones
     * did, every save (and, on a host that takes freed memory back, more). */
    /* Bytes in the snapshot's own arena (a restored or loaded snapshot's)
     * pass to the store with it: not copied. */
    int copied = 0;
    for (size_t i = 0; i < snap->tensors.n; i++)
        copied |= gck_snapshot_borrows_outside(snap, snap->tensors.items[i]);
    if (copied) {
        gck_snapshot *spare = a->spare;
        a->spare = NULL; /* the thread is idle (gck_quiesce): nobody else touches it */
        st = gck_snapshot_own_reusing(snap, spare, 1, "gck_store_save_async");
        gck_snapshot_destroy(spare);
        if (st != GCK_OK)
            goto fail;
    }
    own = gck_calloc(n_tags ? n_tags : 1, sizeof *own);
    if (own == NULL) {
        st = gck_fail_oom("gck_store_save_async: tags", (n_tags ? n_tags : 1) * sizeof *own);
        goto fail;
    }
    for (size_t i = 0; i < n_tags; i++)
        if ((own[i] = gck_strdup(tags[i])) == NULL) {
            st = gck_fail_oom("gck_store_save_async: a tag", strlen(tags[i]) + 1);
            goto fail;
        }
    pthread_mutex_lock(&a->mu);
    a->job = snap, a->tags = own, a->n_tags = n_tags, a->job_copied = copied;
    a->busy = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return GCK_OK;
fail:
    gck_tags_free(own, n_tags);
    gck_snapshot_destroy(snap);
    return st;
}

gck_status gck_store_wait(gck_store *s, uint64_t *version_out)
{
    GCK_CHECK_ARG(s != NULL, "gck_store_wait: store is NULL");
    gck_quiesce(s);
    gck_reap_join(s);
    if (version_out != NULL)
        *version_out = s->async != NULL ? s->async->version : 0;
    return gck_take_async_error(s);
}

/* Adds (add = 1) or removes a tag, committing the change. */
static gck_status gck_retag(gck_store *s, uint64_t version, const char *tag, int add, const char *fn)
{
    gck_quiesce(s);
    GCK_CHECK_ARG(s != NULL && tag != NULL, "%s: NULL argument", fn);
    GCK_TRY(gck_check_writable(s, fn));
    GCK_CHECK_ARG(tag[0] != '\0', "%s: empty tag", fn);
    const gck_entry *cur = gck_manager_get(s->cur.m, version);
    if (cur == NULL)
        return gck_fail(GCK_ERR_NOT_FOUND, "version %" PRIu64 " is not retained", version);
    int has = 0;
    for (size_t i = 0; i < cur->n_tags; i++)
        has |= strcmp(cur->tags[i], tag) == 0;
    if (add == has)
        return GCK_OK; /* nothing to change */
    gck_state next = {0};
    GCK_TRY(gck_state_clone(&s->cur, &next));
    gck_status st = GCK_OK;
    int renamed = 0;
    if (add && (st = gck_manager_add_tag(next.m, version, tag, 1)) != GCK_OK)
        goto done;
    if (!add)
        gck_manager_remove_tag(next.m, version, tag);
    st = gck_commit(s, &next, &renamed);
done:
    if (st != GCK_OK && !renamed) {
        gck_state_clear(&next);
        return st;
    }
    gck_switch(s, &next);
    return st; /* an error here: committed, but the directory fsync failed */
}

gck_status gck_store_tag(gck_store *s, uint64_t version, const char *tag)
{
    return gck_retag(s, version, tag, 1, "gck_store_tag");
}

gck_status gck_store_untag(gck_store *s, uint64_t version, const char *tag)
{
    return gck_retag(s, version, tag, 0, "gck_store_untag");
}

gck_status gck_store_find_tag(const gck_store *s, const char *tag, uint64_t *version_out)
{
    gck_quiesce(s);
    GCK_CHECK_ARG(s != NULL && tag != NULL && version_out != NULL, "gck_store_find_tag: NULL argument");
    for (size_t i = s->cur.n; i-- > 0;) {
        const gck_entry *e = gck_manager_get(s->cur.m, s->cur.recs[i]->version);
        for (size_t t = 0; e != NULL && t < e->n_tags; t++) /* NULL: a hidden base */
            if (strcmp(e->tags[t], tag) == 0) {
                *version_out = e->version;
                return GCK_OK;
            }
    }
    return gck_fail(GCK_ERR_NOT_FOUND, "no retained version is tagged '%.200s'", tag);
}

size_t gck_store_versions(const gck_store *s, uint64_t *out, size_t cap)
{
    gck_quiesce(s);
    return s != NULL ? gck_manager_versions(s->cur.m, out, cap) : 0;
}

const gck_entry *gck_store_get(const gck_store *s, uint64_t version)
{
    gck_quiesce(s);
    return s != NULL ? gck_manager_get(s->cur.m, version) : NULL;
}

const gck_entry *gck_store_latest(const gck_store *s)
{
    gck_quiesce(s);
    return s != NULL ? gck_manager_latest(s->cur.m) : NULL;
}

gck_status gck_store_config_get(const gck_store *s, gck_store_config *out)
{
    gck_quiesce(s);
    GCK_CHECK_ARG(s != NULL && out != NULL, "gck_store_config_get: NULL argument");
    *out = s->cfg;
    out->policy = *gck_manager_policy(s->cur.m);
    return GCK_OK;
}

gck_status gck_store_stats_get(const gck_store *s, gck_store_stats *out)
{
    gck_quiesce(s);
    GCK_CHECK_ARG(s != NULL && out != NULL, "gck_store_stats_get: NULL argument");
    const gck_manager_stats ms = gck_manager_stats_get(s->cur.m);
    *out = (gck_store_stats){.versions = ms.total_checkpoints, .full_versions = ms.full_checkpoints,
                             .delta_versions = ms.delta_checkpoints, .logical_bytes = ms.total_bytes,
                             .disk_bytes = gck_file_size(s, GCK_MANIFEST_NAME)};
    for (size_t i = 0; i < s->cur.n; i++) {
        const gck_vrec *r = s->cur.recs[i];
        out->disk_bytes += r->stored_bytes;
        out->hidden_bases += r->hidden != 0;
        out->hidden_bytes += r->hidden ? r->stored_bytes : 0;
    }
    return GCK_OK;
}

uint64_t gck_store_version_disk_bytes(const gck_store *s, uint64_t version)
{
    gck_quiesce(s);
    const gck_vrec *r = s != NULL ? gck_state_rec(&s->cur, version) : NULL;
    return r != NULL && !r->hidden ? r->stored_bytes : 0;
}

gck_status gck_store_version_info(const gck_store *s, uint64_t version, gck_version_info *out)
{
    gck_quiesce(s);
    GCK_CHECK_ARG(s != NULL && out != NULL, "gck_store_version_info: NULL argument");
    gck_ver ev;
    if (!gck_ver_of(&s->cur, version, &ev))
        return gck_fail(GCK_ERR_NOT_FOUND, "version %" PRIu64 " is not retained", version);
    const gck_ver *e = &ev;
    *out = (gck_version_info){
        .version = e->pub.version, .step = e->rec->step, .timestamp_secs = e->pub.timestamp_secs,
        .is_delta = e->pub.is_delta, .delta_from = e->pub.is_delta ? e->pub.delta_from : 0,
        .full_bytes = e->pub.full_bytes, .stored_bytes = e->rec->stored_bytes, .file = e->rec->file,
        .tags = e->pub.tags, .n_tags = e->pub.n_tags, .tensor_names = e->pub.tensor_names,
        .content_ids = (const char *const *)e->rec->cids, .n_tensors = e->pub.n_tensor_names};
    return GCK_OK;
}

/* ---- restoring into the caller's memory ------------------------------------------ */

/* A version's listing (names and content ids), sorted by name for lookups. */
typedef struct gck_listed {
    const char *name, *cid;
} gck_listed;

static int gck_listed_cmp(const void *pa, const void *pb)
{
    return strcmp(((const gck_listed *)pa)->name, ((const gck_listed *)pb)->name);
}

static gck_listed *gck_listing_of(const gck_ver *e)
{
    const size_t n = e->pub.n_tensor_names;
    gck_listed *l = gck_malloc((n ? n : 1) * sizeof *l);
    if (l == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        l[i] = (gck_listed){e->pub.tensor_names[i], e->rec->cids[i]};
    qsort(l, n, sizeof *l, gck_listed_cmp);
    return l;
}

static const char *gck_listed_cid(const gck_listed *l, const gck_ver *e, const char *name)
{
    const gck_listed key = {name, NULL};
    const gck_listed *f = bsearch(&key, l, e->pub.n_tensor_names, sizeof *l, gck_listed_cmp);
    return f ? f->cid : NULL;
}

/* One level of a version's chain, opened on first use. */
typedef struct gck_rlevel {
    gck_ver e;
    int cached;             /* the store's in-memory copy of e (the chain stops here) */
    gck_snapshot *delta;    /* e is a delta: its file (mapped) */
    gck_delta_index *index; /* and its description */
    gck_st_file *full;      /* e is full: its file (values not read) */
} gck_rlevel;

/* How one tensor is rebuilt: the bottom (a full file, the cache or a raw
 * item) and, above it, the items of the levels up to the target. */
typedef struct gck_rplan {
    size_t bottom;                /* its level */
    const gck_st_entry *fe;       /* bottom in a full file */
    const void *cache_data;       /* bottom in the cache */
    const char *bottom_cid;       /* the id the bottom's bytes have */
    const char *want;             /* the target's id (the manifest's) */
    int decoded;                  /* some level decodes (raw or xor): hash dst at the end */
} gck_rplan;

static gck_status gck_open_level(gck_store *s, gck_rlevel *lv)
{
    if (lv->cached || lv->delta != NULL || lv->full != NULL)
        return GCK_OK;
    char p[PATH_MAX];
    if (!gck_path(p, s, lv->e.rec->file))
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "store path too long");
    /* the caller's cleanup closes what was opened, also when a later step fails */
    if (!gck_is_coded(&lv->e)) {
        GCK_TRY_CTX(gck_st_open(p, &lv->full), "version %" PRIu64 " (%s)", lv->e.pub.version, lv->e.rec->file);
        return GCK_OK;
    }
    GCK_TRY_CTX(gck_snapshot_load_mmap_unhashed(p, &lv->delta), /* payloads are read as they are decoded */
                "version %" PRIu64 " (%s)", lv->e.pub.version, lv->e.rec->file);
    /* often only a few items' payloads are read: no read-around of each page
     * touched; an item about to be decoded asks for its pages (gck_will_read) */
    if (lv->delta->map != NULL)
        (void)posix_madvise(lv->delta->map, lv->delta->map_len, POSIX_MADV_RANDOM);
    GCK_TRY_CTX(gck_delta_index_open(lv->delta, lv->e.pub.is_delta ? lv->e.pub.delta_from : 0, &lv->index),
                "version %" PRIu64 " (%s)", lv->e.pub.version, lv->e.rec->file);
    return GCK_OK;
}

/* The cache's tensor or blob of that (manifest) name, or NULL. */
static const void *gck_cache_find(const gck_snapshot *c, const char *name, gck_dtype *dtype, size_t *nbytes,
                                  const char **cid)
{
    const size_t pl = strlen(GCK_OPTIMIZER_PREFIX);
    int found;
    if (strncmp(name, GCK_OPTIMIZER_PREFIX, pl) == 0) {
        const size_t k = gck_named_find(&c->blobs, name + pl, &found);
        if (!found)
            return NULL;
        const gck_snap_blob *b = c->blobs.items[k];
        *dtype = GCK_DTYPE_U8, *nbytes = b->len, *cid = b->cid;
        return b->data;
    }
    const size_t k = gck_named_find(&c->tensors, name, &found);
    if (!found)
        return NULL;
    const gck_snap_tensor *t = c->tensors.items[k];
    *dtype = t->dtype, *nbytes = t->nbytes, *cid = t->cid;
    return t->data;
}

/* Plans tensor `name` down the chain: every check that needs no value. */
static gck_status gck_plan_tensor(gck_store *s, gck_rlevel *lv, size_t nlev, const char *name, size_t size,
                                  const gck_delta_item **items, gck_rplan *pl)
{
    const size_t plen = strlen(GCK_OPTIMIZER_PREFIX);
    const int blob = strncmp(name, GCK_OPTIMIZER_PREFIX, plen) == 0;
    const uint64_t v = lv[0].e.pub.version;
    gck_dtype dt = GCK_DTYPE_U8;
    size_t nbytes = 0;
    for (size_t l = 0; l < nlev; l++) {
        GCK_TRY(gck_open_level(s, &lv[l]));
        gck_dtype ldt;
        size_t lbytes;
        int bottom = 1;
        if (lv[l].cached) {
            const char *cid = NULL;
            pl->cache_data = gck_cache_find(s->cache, name, &ldt, &lbytes, &cid);
            if (pl->cache_data == NULL)
                return gck_fail(GCK_ERR_CORRUPT, "version %" PRIu64 ": tensor '%.200s' is missing from version %" PRIu64,
                                v, name, lv[l].e.pub.version);
            pl->bottom_cid = cid;
        } else if (lv[l].full != NULL) {
            pl->fe = gck_st_find(lv[l].full, name);
            if (pl->fe == NULL)
                return gck_fail(GCK_ERR_CORRUPT, "version %" PRIu64 ": tensor '%.200s' is missing from %s", v, name,
                                lv[l].e.rec->file);
            ldt = pl->fe->dtype, lbytes = pl->fe->nbytes;
        } else {
            items[l] = gck_delta_index_find(lv[l].index, blob, blob ? name + plen : name);
            if (items[l] == NULL)
                return gck_fail(GCK_ERR_CORRUPT, "version %" PRIu64 ": tensor '%.200s' is missing from %s", v, name,
                                lv[l].e.rec->file);
            ldt = items[l]->dtype, lbytes = items[l]->nbytes;
            bottom = items[l]->enc == GCK_DELTA_RAW;
            pl->decoded |= items[l]->enc != GCK_DELTA_REF;
            pl->bottom_cid = items[l]->cid;
        }
        if (l == 0 && lbytes != size)
            return gck_fail(GCK_ERR_DIMENSION_MISMATCH,
                            "version %" PRIu64 ": tensor '%.200s' holds %zu bytes, its destination %zu", v, name,
                            lbytes, size);
        if (l > 0 && (ldt != dt || lbytes != nbytes))
            return gck_fail(GCK_ERR_CORRUPT, "version %" PRIu64 ": tensor '%.200s' differs in version %" PRIu64
                            " from the delta built on it", v, name, lv[l].e.pub.version);
        dt = ldt, nbytes = lbytes;
        if (bottom) {
            pl->bottom = l;
            return GCK_OK;
        }
    }
    return gck_fail(GCK_ERR_CORRUPT, "version %" PRIu64 ": the chain of tensor '%.200s' has no full version", v,
                    name);
}

static gck_status gck_restore_into_view(gck_store *s, uint64_t version, const char *const *names,
                                        void *const *dsts, const size_t *sizes, size_t n, gck_snapshot **fields,
                                        gck_rlevel *top);

/* What gck_restore_into_view's tensors are rebuilt from (read only while they are). */
typedef struct gck_rinto {
    gck_store *s;
    const gck_rlevel *lv;
    size_t nlev;
    const gck_delta_item *const *items;
    const gck_rplan *plan;
    const gck_st_entry *const *fb;
    const char *const *names;
    void *const *dsts;
    const size_t *sizes;
    uint64_t version;
} gck_rinto;

/* Tensor i of rb rebuilt on its destination (its bottom already there, or
 * in the cache or the mapped full file) through decoding slot `slot`, and
 * its content id checked; the outcome in *r. */
static void gck_rebuild_tensor(const gck_rinto *rb, size_t i, int slot, gck_carried *r)
{
    const gck_rplan *pl = &rb->plan[i];
    const gck_rlevel *lv = rb->lv;
    void *dst = rb->dsts[i];
    const size_t size = rb->sizes[i];
    /* the full bottom's bytes this tensor's delta is decoded against, read
     * into dst here, on the decoding thread, and decoded in place (XOR),
     * while they are in this core's cache. They used to be decoded from a
     * mapping of the full file, whose page tables were filled and then torn
     * down by one munmap on the calling thread: store_restore_into/adamw on
     * 2 threads (Zen 5 VM, 2 alternating runs) 23.1-23.9 -> 18.3-18.5 ms,
     * 1.43-1.45 -> 1.90 of the 1-thread speed, 1 thread unchanged. */
    if (rb->fb[i] != NULL && size > 0) {
        const gck_status st = gck_st_read_stored(lv[rb->nlev - 1].full, rb->fb[i], dst);
        if (st != GCK_OK) {
            gck_carry(r, gck_fail_ctx(st, "version %" PRIu64, lv[rb->nlev - 1].e.pub.version));
            return;
        }
    }
    if (pl->cache_data != NULL && size > 0)
        memcpy(dst, pl->cache_data, size);
    for (size_t l = pl->bottom + 1; l-- > 0;) {
        const gck_delta_item *it = rb->items[i * rb->nlev + l];
        if (it == NULL || (l == pl->bottom && it->enc != GCK_DELTA_RAW))
            continue;
        gck_status st = gck_delta_decode_into(rb->s->codec, slot, lv[l].index, it, dst);
        if (st != GCK_OK) {
            gck_carry(r, gck_fail_ctx(st, "version %" PRIu64 " (%s)", lv[l].e.pub.version, lv[l].e.rec->file));
            return;
        }
    }
    char got[24];
    const char *have = pl->bottom_cid;
    if (pl->decoded) {
        const gck_delta_item *top = rb->items[i * rb->nlev];
        gck_content_id(dst, size / gck_dtype_size(top->dtype), top->dtype, got);
        have = got;
    }
    if (have == NULL || strcmp(have, pl->want) != 0)
        gck_carry(r, gck_fail(GCK_ERR_CORRUPT, "version %" PRIu64 ": tensor '%.200s' rebuilt with content id "
                                   "%s, the manifest says %.40s", rb->version, rb->names[i], have ? have : "(none)",
                                   pl->want));
}

/* A read-only handle whose view lost a file of the version's chain to a
 * writer: the version is rebuilt from the current manifest as
 * gck_store_restore does (or reported evicted meanwhile) and the named
 * tensors copied out; rare, so the copy does not matter. */
static gck_status gck_restore_into_followed(gck_store *s, uint64_t version, const char *const *names,
                                            void *const *dsts, const size_t *sizes, size_t n, gck_status st,
                                            gck_snapshot **fields)
{
    gck_snapshot *snap = NULL, *f = NULL;
    if ((st = gck_follow_writer(s, &s->cur, version, st, &snap)) != GCK_OK)
        goto done;
    for (size_t i = 0; i < n; i++) {
        gck_tensor_info ti;
        const void *blob = NULL;
        size_t blen = 0;
        if (strncmp(names[i], GCK_OPTIMIZER_PREFIX, strlen(GCK_OPTIMIZER_PREFIX)) == 0 &&
            gck_snapshot_find_optimizer_state(snap, names[i] + strlen(GCK_OPTIMIZER_PREFIX), &blob, &blen) == GCK_OK)
            ti = (gck_tensor_info){.data = blob, .nbytes = blen};
        else if ((st = gck_snapshot_find_tensor(snap, names[i], &ti)) != GCK_OK)
            goto done;
        if (ti.nbytes != sizes[i]) {
            st = gck_fail(GCK_ERR_DIMENSION_MISMATCH, "version %" PRIu64 ": tensor '%.200s' has %zu bytes, not %zu",
                          version, names[i], ti.nbytes, sizes[i]);
            goto done;
        }
        if (sizes[i] > 0)
            memcpy(dsts[i], ti.data, sizes[i]);
    }
    if (fields != NULL) {
        if ((st = gck_snapshot_create(gck_snapshot_step(snap), &f)) != GCK_OK ||
            (st = gck_snapshot_copy_fields(f, snap, NULL)) != GCK_OK)
            goto done;
        *fields = f;
        f = NULL;
    }
done:
    gck_snapshot_destroy(f);
    gck_snapshot_destroy(snap);
    return st;
}

/* gck_store_restore_into; top (or NULL): the version's own level, already
 * opened by the caller, whose handles the restore takes over (and closes). */
static gck_status gck_restore_into_top(gck_store *s, uint64_t version, const char *const *names, void *const *dsts,
                                       const size_t *sizes, size_t n, gck_snapshot **fields, gck_rlevel *top)
{
    const gck_status st = gck_restore_into_view(s, version, names, dsts, sizes, n, fields, top);
    if (st != GCK_ERR_IO || !s->readonly || gck_chain_vanished(s, &s->cur, version) == NULL)
        return st;
    return gck_restore_into_followed(s, version, names, dsts, sizes, n, st, fields);
}

gck_status gck_store_restore_into(gck_store *s, uint64_t version, const char *const *names, void *const *dsts,
                                  const size_t *sizes, size_t n, gck_snapshot **fields)
{
    gck_quiesce(s);
    GCK_CHECK_ARG(s != NULL, "gck_store_restore_into: store is NULL");
    return gck_restore_into_top(s, version, names, dsts, sizes, n, fields, NULL);
}

static gck_status gck_restore_into_view(gck_store *s, uint64_t version, const char *const *names,
                                        void *const *dsts, const size_t *sizes, size_t n, gck_snapshot **fields,
                                        gck_rlevel *top)
{
    GCK_CHECK_ARG(s != NULL, "gck_store_restore_into: store is NULL");
    GCK_TRY(gck_check_dsts("gck_store_restore_into", names, dsts, sizes, n));
    gck_ver ev, x;
    if (!gck_ver_of(&s->cur, version, &ev))
        return gck_fail(GCK_ERR_NOT_FOUND, "version %" PRIu64 " is not retained", version);
    const gck_ver *e = &ev;
    /* the chain from the version down to a full one, or to the cached one */
    size_t nlev = 0;
    for (x = ev;; ) {
        nlev++;
        if ((s->cache != NULL && x.pub.version == s->cache_version) || !x.pub.is_delta)
            break;
        const uint64_t b = x.pub.delta_from;
        if (!gck_base_of(&s->cur, b, &x))
            return gck_fail(GCK_ERR_CORRUPT, "version %" PRIu64 ": its base %" PRIu64 " is not retained",
                            x.pub.version, b);
    }
    gck_rlevel *lv = gck_calloc(nlev, sizeof *lv);
    const gck_delta_item **items = gck_calloc(n * nlev + 1, sizeof *items); /* [tensor][level] */
    gck_rplan *plan = gck_calloc(n + 1, sizeof *plan);
    gck_listed *want = gck_listing_of(e), *bottom_ids = NULL;
    gck_snapshot *f = NULL;
    const gck_st_entry **fe = NULL;
    void **fd = NULL;
    const char **fw = NULL;
    const gck_st_entry **fb = NULL; /* [tensor]: its full bottom, read by the thread that decodes it */
    gck_carried *res = NULL;
    gck_status st = GCK_OK;
    if (lv == NULL || items == NULL || plan == NULL || want == NULL) {
        st = gck_fail_oom("restore plan", (n + 1) * nlev * sizeof *items);
        goto done;
    }
    x = ev;
    for (size_t l = 0; l < nlev; l++) {
        lv[l] = (gck_rlevel){.e = x, .cached = s->cache != NULL && x.pub.version == s->cache_version};
        if (l + 1 < nlev)
            gck_base_of(&s->cur, x.pub.delta_from, &x); /* checked above */
    }
    if (top != NULL && top->e.pub.version == version && !lv[0].cached) {
        /* its file opened once: parsing its header and description is
         * most of a partial restore's CPU (one 0.56 MB tensor of a delta on
         * a full version: 2.5 -> 1.6 ms with the files cached, 4.1 -> 2.6
         * ms from the disk) */
        lv[0].delta = top->delta, lv[0].index = top->index, lv[0].full = top->full;
        top->delta = NULL, top->index = NULL, top->full = NULL;
    }
    /* every name, size and level checked before the first byte is written */
    for (size_t i = 0; i < n; i++) {
        plan[i].want = gck_listed_cid(want, e, names[i]);
        if (plan[i].want == NULL) {
            st = gck_fail(GCK_ERR_NOT_FOUND, "version %" PRIu64 " has no tensor '%.200s'", version, names[i]);
            goto done;
        }
        if ((st = gck_plan_tensor(s, lv, nlev, names[i], sizes[i], &items[i * nlev], &plan[i])) != GCK_OK)
            goto done;
    }
    /* the fields of the version, from its own file (or the cache) */
    if (fields != NULL) {
        if ((st = gck_open_level(s, &lv[0])) != GCK_OK)
            goto done;
        const gck_snapshot *from = lv[0].cached ? s->cache : lv[0].delta;
        if (from == NULL)
            f = gck_st_take_fields(lv[0].full);
        else if ((st = gck_snapshot_create(from->step, &f)) != GCK_OK ||
                 (st = gck_snapshot_copy_fields(f, from, GCK_DELTA_KEY)) != GCK_OK)
            goto done;
    }
    /* the bottoms: full files read straight into the destinations (each
     * checked against its own version's id), cached tensors copied; but a
     * full bottom under an XOR item is not read at all: the item is decoded
     * against the bottom's bytes where the file is mapped (one pass writing
     * dst instead of a read, a hash and an XOR in place: adamw's version 1
     * into caller buffers 74 -> 47-51 ms on the Intel VM). Those bytes are
     * then checked through the rebuilt tensor's id, as a whole restore
     * checks a chain's bases. Little-endian CPUs: the mapped bytes are the
     * values. */
    fe = gck_calloc(n + 1, sizeof *fe);
    fd = gck_calloc(n + 1, sizeof *fd);
    fw = gck_calloc(n + 1, sizeof *fw);
    fb = gck_calloc(n + 1, sizeof *fb);
    res = gck_calloc(n + 1, sizeof *res);
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += sizes[i];
    int threads = 1; /* its decoding slots made before the first byte is written, as every allocation */
    if ((st = gck_delta_decode_threads(s->codec, total, n, &threads)) != GCK_OK)
        goto done;
    if (fe == NULL || fd == NULL || fw == NULL || fb == NULL || res == NULL ||
        (lv[nlev - 1].full != NULL && (bottom_ids = gck_listing_of(&lv[nlev - 1].e)) == NULL)) {
        st = gck_fail_oom("restore: bottom reads", (n + 1) * sizeof(void *));
        goto done;
    }
    size_t nf = 0;
    for (size_t i = 0; i < n; i++) {
        if (plan[i].fe != NULL && plan[i].bottom == nlev - 1) {
            plan[i].bottom_cid = gck_listed_cid(bottom_ids, &lv[nlev - 1].e, names[i]);
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
            /* a delta stores its XOR: the bytes as stored, read in the
             * decoding job (gck_rebuild_tensor) and checked through the
             * rebuilt tensor's id */
            const gck_delta_item *above = nlev > 1 ? items[i * nlev + nlev - 2] : NULL;
            if (above != NULL && above->enc == GCK_DELTA_XOR && sizes[i] > 0) {
                fb[i] = plan[i].fe;
                continue;
            }
#endif
            fe[nf] = plan[i].fe, fd[nf] = dsts[i], fw[nf] = plan[i].bottom_cid, nf++;
        }
    }
    if (nf > 0) {
        st = gck_st_read_into(lv[nlev - 1].full, fe, fd, fw, nf);
        if (st != GCK_OK) {
            st = gck_fail_ctx(st, "version %" PRIu64, lv[nlev - 1].e.pub.version);
            goto done;
        }
    }
    /* then each tensor's raw bottom and the levels above, in place, the
     * tensors on threads (each one's bytes are the same whichever thread
     * rebuilds it), the first failure in the callers' order reported */
    const gck_rinto rb = {s, lv, nlev, items, plan, fb, names, dsts, sizes, version};
    const long ln = (long)n;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (long i = 0; i < ln; i++)
        gck_rebuild_tensor(&rb, (size_t)i, gck_delta_slot(), &res[i]);
    for (size_t i = 0; i < n; i++)
        if (res[i].st != GCK_OK) {
            st = gck_carried_fail(&res[i]);
            goto done;
        }
    if (fields != NULL)
        *fields = f;
    f = NULL;
done:
    for (size_t l = 0; lv != NULL && l < nlev; l++) {
        gck_delta_index_free(lv[l].index);
        gck_snapshot_destroy(lv[l].delta);
        gck_st_close(lv[l].full);
    }
    free(lv), free(items), free(plan), free(want), free(bottom_ids), free(fe), free(fd), free(fw), free(fb), free(res);
    gck_snapshot_destroy(f);
    return st;
}

/* ---- restoring chosen tensors as a snapshot --------------------------------------- */

/* dtype, shape and size of tensor (or "__optimizer__/<param>" blob) `name`
 * of the version lv stands for, from its own file (or the cache); 0 when it
 * has none. */
static int gck_level_layout(const gck_store *s, const gck_rlevel *lv, const char *name, gck_dtype *dt,
                            const int64_t **shape, size_t *ndim, size_t *nbytes)
{
    const size_t pl = strlen(GCK_OPTIMIZER_PREFIX);
    const int blob = strncmp(name, GCK_OPTIMIZER_PREFIX, pl) == 0;
    *shape = NULL, *ndim = 0;
    if (lv->cached) {
        const char *cid;
        if (gck_cache_find(s->cache, name, dt, nbytes, &cid) == NULL)
            return 0;
        int found = 0;
        const size_t k = blob ? 0 : gck_named_find(&s->cache->tensors, name, &found);
        if (found) {
            const gck_snap_tensor *t = s->cache->tensors.items[k];
            *shape = t->shape, *ndim = t->ndim;
        }
        return 1;
    }
    if (lv->full != NULL) {
        const gck_st_entry *e = gck_st_find(lv->full, name);
        if (e == NULL)
            return 0;
        *dt = e->dtype, *nbytes = e->nbytes, *shape = e->shape, *ndim = e->ndim;
        return 1;
    }
    const gck_delta_item *it = gck_delta_index_find(lv->index, blob, blob ? name + pl : name);
    if (it == NULL)
        return 0;
    *dt = it->dtype, *nbytes = it->nbytes, *shape = it->shape, *ndim = it->ndim;
    return 1;
}

/* The most deltas a restore undoes backwards from the cache. */
#define GCK_BACK_MAX 64

/* Version v rebuilt backwards from the cached (latest) version when v is on
 * its chain and fewer deltas lie between them than between v and its full
 * version: on a copy of the cache, each delta above v is undone in
 * place (an XOR item is its own inverse; a REF item is the base's bytes),
 * and only v's own file is read besides those deltas (its fields and
 * shapes). Every tensor is then hashed and checked against the manifest, as
 * after a forward rebuild. Any failure - a tensor a delta stores raw or a
 * level lacks, damage - is returned, and the caller rebuilds forwards
 * (which reports its own errors). */
static gck_status gck_restore_back(gck_store *s, uint64_t v, gck_snapshot **out)
{
    const size_t plen = strlen(GCK_OPTIMIZER_PREFIX);
    gck_ver top, x, ups[GCK_BACK_MAX];
    size_t k = 0;
    if (!gck_ver_of(&s->cur, v, &top) || !gck_ver_of(&s->cur, s->cache_version, &x))
        return gck_fail(GCK_ERR_NOT_FOUND, "version %" PRIu64 " or the cached one is not retained", v);
    while (x.pub.version != v) { /* the deltas from the cached version down to v */
        if (!x.pub.is_delta || k == GCK_BACK_MAX)
            return gck_fail(GCK_ERR_NOT_FOUND, "version %" PRIu64 " is not on the cached version's chain", v);
        ups[k++] = x; /* a delta to undo; x moves to its base */
        if (!gck_base_of(&s->cur, x.pub.delta_from, &x) || x.pub.version < v)
            return gck_fail(GCK_ERR_NOT_FOUND, "version %" PRIu64 " is not on the cached version's chain", v);
    }
    /* An undo costs what a forward delta decode does; copying the cache
     * costs less than reading the full version (no file, no page-cache
     * lookups, and nothing read from a disk): backwards also when both
     * decode as many deltas. The version before the latest, a delta on a
     * full one (store_restore, 3 alternating runs, Zen 5 VM, tmpfs): adamw
     * 34.2-36.0 -> 27.1-27.3 ms on 1 thread, 17.8-18.7 -> 15.3-16.1 on 2;
     * bf16 21.6-23.4 -> 17.9-18.8 and 12.4-12.7 -> 10.7-11.3. */
    if (k >= gck_chain_files(&s->cur, v))
        return gck_fail(GCK_ERR_NOT_FOUND, "version %" PRIu64 ": a forward rebuild decodes no more", v);
    const size_t n = top.pub.n_tensor_names;
    gck_rlevel lv[GCK_BACK_MAX + 1];
    memset(lv, 0, sizeof lv);
    lv[0].e = top;
    for (size_t i = 0; i < k; i++)
        lv[i + 1].e = ups[i];
    void **dst = gck_calloc(n + 1, sizeof *dst);
    char **cid = gck_calloc(n + 1, sizeof *cid);
    gck_dtype *dt = gck_calloc(n + 1, sizeof *dt);
    size_t *nb = gck_calloc(n + 1, sizeof *nb);
    const void **src = gck_calloc(n + 1, sizeof *src);
    const gck_delta_item **its = gck_calloc(n * k + 1, sizeof *its); /* [level - 1][tensor] */
    gck_carried *res = gck_calloc(n + 1, sizeof *res);
    gck_snapshot *r = NULL;
    gck_status st = GCK_OK;
    if (dst == NULL || cid == NULL || dt == NULL || nb == NULL || src == NULL || its == NULL || res == NULL) {
        st = gck_fail_oom("restore from the cache: plan", (n + 1) * (6 * sizeof(void *) + sizeof *res));
        goto done;
    }
    /* v's fields and layout from its own file */
    if ((st = gck_open_level(s, &lv[0])) != GCK_OK)
        goto done;
    if (lv[0].full != NULL) {
        if ((r = gck_st_take_fields(lv[0].full)) == NULL) {
            st = gck_fail_oom("restore from the cache: fields", 0);
            goto done;
        }
    } else if ((st = gck_snapshot_create(lv[0].delta->step, &r)) != GCK_OK ||
               (st = gck_snapshot_copy_fields(r, lv[0].delta, GCK_DELTA_KEY)) != GCK_OK) {
        goto done;
    }
    /* each tensor made to v's measure and filled from the cache */
    for (size_t j = 0; j < n; j++) {
        const char *name = top.pub.tensor_names[j], *ccid;
        const int64_t *shape;
        size_t ndim, cn;
        gck_dtype cdt;
        src[j] = gck_cache_find(s->cache, name, &cdt, &cn, &ccid);
        if (!gck_level_layout(s, &lv[0], name, &dt[j], &shape, &ndim, &nb[j]) || src[j] == NULL || cdt != dt[j] ||
            cn != nb[j]) {
            st = gck_fail(GCK_ERR_NOT_FOUND, "version %" PRIu64 ": tensor '%.200s' differs in the cache", v, name);
            goto done;
        }
        if (strncmp(name, GCK_OPTIMIZER_PREFIX, plen) == 0) {
            gck_snap_blob *b = NULL;
            if ((st = gck_snapshot_new_blob(r, name + plen, nb[j], &b)) != GCK_OK)
                goto done;
            dst[j] = b->data, cid[j] = b->cid;
        } else {
            gck_snap_tensor *t = NULL;
            if ((st = gck_snapshot_new_tensor(r, name, dt[j], shape, ndim, nb[j], &t)) != GCK_OK)
                goto done;
            dst[j] = t->data, cid[j] = t->cid;
        }
    }
    /* every delta to undo opened and checked first: one that cannot be
     * undone (a tensor stored raw or missing) sends the caller forwards
     * before anything is copied */
    for (size_t l = 1; l <= k; l++) {
        if ((st = gck_open_level(s, &lv[l])) != GCK_OK)
            goto done;
        for (size_t j = 0; j < n; j++) {
            const char *name = top.pub.tensor_names[j];
            const int blob = strncmp(name, GCK_OPTIMIZER_PREFIX, plen) == 0;
            const gck_delta_item *it = its[(l - 1) * n + j] =
                gck_delta_index_find(lv[l].index, blob, blob ? name + plen : name);
            if (it == NULL || it->enc == GCK_DELTA_RAW || it->dtype != dt[j] || it->nbytes != nb[j]) {
                st = gck_fail(GCK_ERR_NOT_FOUND, "version %" PRIu64 ": tensor '%.200s' cannot be undone from %" PRIu64,
                              v, name, lv[l].e.pub.version);
                goto done;
            }
        }
    }
    /* the cache copied, then the deltas undone newest first, each step's
     * tensors on threads (each tensor's bytes are the same on any thread) */
    size_t total = 0;
    for (size_t j = 0; j < n; j++)
        total += nb[j];
    int threads = 1;
    if ((st = gck_delta_decode_threads(s->codec, total, n, &threads)) != GCK_OK)
        goto done;
    const long ln = (long)n;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (long j = 0; j < ln; j++)
        if (nb[j] > 0)
            memcpy(dst[j], src[j], nb[j]);
    for (size_t l = 1; l <= k; l++) {
        const gck_delta_index *index = lv[l].index;
        const gck_delta_item *const *lit = its + (l - 1) * n;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
        for (long j = 0; j < ln; j++)
            if (lit[j]->enc == GCK_DELTA_XOR)
                gck_carry(&res[j], gck_delta_decode_into(s->codec, gck_delta_slot(), index, lit[j], dst[j]));
        for (size_t j = 0; j < n; j++)
            if (res[j].st != GCK_OK) {
                st = gck_carried_fail(&res[j]);
                goto done;
            }
        gck_delta_index_free(lv[l].index), gck_snapshot_destroy(lv[l].delta); /* its pages no longer needed */
        lv[l].index = NULL, lv[l].delta = NULL;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (long j = 0; j < ln; j++)
        gck_content_id(dst[j], nb[j] / gck_dtype_size(dt[j]), dt[j], cid[j]);
    if ((st = gck_check_against_entry(&top, r)) != GCK_OK)
        goto done;
    *out = r;
    r = NULL;
done:
    for (size_t l = 0; l <= k; l++) {
        gck_delta_index_free(lv[l].index);
        gck_snapshot_destroy(lv[l].delta);
        gck_st_close(lv[l].full);
    }
    gck_snapshot_destroy(r);
    free(dst), free(cid), free(dt), free(nb), free(src), free(its), free(res);
    return st;
}

gck_status gck_store_restore_select(gck_store *s, uint64_t version, const char *const *names, size_t n,
                                    gck_snapshot **out)
{
    GCK_CHECK_ARG(s != NULL && out != NULL && (names != NULL || n == 0), "gck_store_restore_select: NULL argument");
    for (size_t i = 0; i < n; i++)
        GCK_CHECK_ARG(names[i] != NULL, "gck_store_restore_select: names[%zu] is NULL", i);
    gck_quiesce(s);
    gck_ver ev;
    if (!gck_ver_of(&s->cur, version, &ev))
        return gck_fail(GCK_ERR_NOT_FOUND, "version %" PRIu64 " is not retained", version);
    const size_t pl = strlen(GCK_OPTIMIZER_PREFIX);
    gck_rlevel top = {.e = ev, .cached = s->cache != NULL && version == s->cache_version};
    gck_snapshot *snap = NULL, *fields = NULL;
    gck_listed *want = gck_listing_of(&ev);
    void **dsts = gck_calloc(n + 1, sizeof *dsts);
    size_t *sizes = gck_calloc(n + 1, sizeof *sizes);
    char **cid_slot = gck_calloc(n + 1, sizeof *cid_slot); /* where each tensor's content id goes */
    const char **cids = gck_calloc(n + 1, sizeof *cids);     /* the manifest's */
    gck_status st = want && dsts && sizes && cid_slot && cids
                        ? GCK_OK
                        : gck_fail_oom("restore_select: plan", (n + 1) * 4 * sizeof *dsts);
    if (st != GCK_OK || (st = gck_open_level(s, &top)) != GCK_OK || (st = gck_snapshot_create(0, &snap)) != GCK_OK)
        goto done;
    /* the layout from the version's own file: each destination made to measure */
    for (size_t i = 0; i < n; i++) {
        gck_dtype dt;
        const int64_t *shape;
        size_t ndim, nbytes;
        if ((cids[i] = gck_listed_cid(want, &ev, names[i])) == NULL ||
            !gck_level_layout(s, &top, names[i], &dt, &shape, &ndim, &nbytes)) {
            st = gck_fail(GCK_ERR_NOT_FOUND, "version %" PRIu64 " has no tensor '%.200s'", version, names[i]);
            goto done;
        }
        if (strncmp(names[i], GCK_OPTIMIZER_PREFIX, pl) == 0) {
            gck_snap_blob *b = NULL;
            if ((st = gck_snapshot_new_blob(snap, names[i] + pl, nbytes, &b)) != GCK_OK)
                goto done;
            dsts[i] = b->data, cid_slot[i] = b->cid;
        } else {
            gck_snap_tensor *t = NULL;
            if ((st = gck_snapshot_new_tensor(snap, names[i], dt, shape, ndim, nbytes, &t)) != GCK_OK)
                goto done;
            dsts[i] = t->data, cid_slot[i] = t->cid;
        }
        sizes[i] = nbytes;
    }
    /* only their bytes read from each file of the chain, every content id checked */
    if ((st = gck_restore_into_top(s, version, names, dsts, sizes, n, &fields, &top)) != GCK_OK ||
        (st = gck_snapshot_copy_fields(snap, fields, NULL)) != GCK_OK)
        goto done;
    snap->step = fields->step;
    for (size_t i = 0; i < n; i++) /* equal to what was rebuilt: restore_into checked it */
        snprintf(cid_slot[i], 24, "%s", cids[i]);
    *out = snap;
    snap = NULL;
done:
    gck_delta_index_free(top.index);
    gck_snapshot_destroy(top.delta);
    gck_st_close(top.full);
    gck_snapshot_destroy(snap);
    gck_snapshot_destroy(fields);
    free(want), free(dsts), free(sizes), free(cid_slot), free(cids);
    return st;
}
