/* examples/train.c - the demo job: trains an MLP on the CPU with micro-batch gradient accumulation
 * (gck_checkpointer, weighted by micro-batch size), global-norm clipping, AdamW, and snapshots in a
 * gck_store every N steps; `--resume DIR` continues from the latest version, bit for bit.
 * Run `train --help` for the options. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <gradckpt/gradckpt.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "train_model.h"
#include "train_progress.h"

#define MAX_MICRO 16

typedef struct options {
    const char *dir;
    int resume;
    uint64_t steps, save_every;
    train_shape shape;
    int batch, micro;
    double lr, clip;
    uint64_t seed;
    int threads;
    const char *plot;
    int quiet;
} options;

/* Everything a resumed run needs; saved in every snapshot. */
typedef struct run_state {
    train_params w, m, v;       /* weights, AdamW moments */
    uint64_t step;              /* optimizer steps done */
    float *loss_history;        /* loss of steps 1..step */
    size_t loss_cap;
    double best_loss;
    uint64_t best_version;      /* 0: none yet */
} run_state;

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: train [--dir DIR | --resume DIR] [options]\n"
            "Trains an MLP regressor on synthetic data with gradckpt: micro-batch accumulation\n"
            "(weighted by micro-batch size), global-norm clipping, AdamW, and a snapshot in a\n"
            "versioned store every --save-every steps (tagged 'best' at the lowest loss so far).\n"
            "\n"
            "  --dir DIR          store directory for a new run (default train-run)\n"
            "  --resume DIR       continue the run in DIR from its latest version\n"
            "  --steps N          total optimizer steps (default 600)\n"
            "  --save-every N     steps between snapshots (default 20)\n"
            "  --dims A,B,...     layer widths, inputs first (default 64,2048,1024,16: 2.2 M params)\n"
            "  --batch N          samples per step (default 128)\n"
            "  --micro N          micro-batches per step, of unequal sizes (default 4)\n"
            "  --lr X             AdamW learning rate (default 1e-3)\n"
            "  --clip X           global gradient norm bound (default 1.0)\n"
            "  --seed N           data, teacher and initial weights (default 42)\n"
            "  --threads N        OpenMP threads (default: OMP_NUM_THREADS or all cores)\n"
            "  --plot FILE.png    draw the loss curve with gnuplot at the end\n"
            "  --quiet            no progress output\n"
            "Killed at any point, --resume reaches the same weights as an uninterrupted run;\n"
            "the result does not depend on --threads.\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    const unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

static int parse_dims(const char *s, train_shape *sh)
{
    int n = 0;
    const char *p = s;
    while (*p && n <= TRAIN_MAX_LAYERS) {
        char *end = NULL;
        const long d = strtol(p, &end, 10);
        if (end == p || d < 1 || d > 65536)
            return -1;
        sh->dims[n++] = (int)d;
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            return -1;
    }
    if (*p || n < 2)
        return -1;
    sh->nlayers = n - 1;
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){.dir = "train-run", .steps = 600, .save_every = 20, .batch = 128, .micro = 4, .lr = 1e-3,
                   .clip = 1.0, .seed = 42};
    parse_dims("64,2048,1024,16", &o->shape);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t u = 0;
        int bad = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--quiet") == 0) {
            o->quiet = 1;
            continue;
        } else if (v == NULL) {
            fprintf(stderr, "train: %s needs a value (see --help)\n", a);
            return -1;
        } else if (strcmp(a, "--dir") == 0) {
            o->dir = v;
        } else if (strcmp(a, "--resume") == 0) {
            o->dir = v, o->resume = 1;
        } else if (strcmp(a, "--steps") == 0) {
            bad = parse_u64(v, &o->steps) || o->steps == 0;
        } else if (strcmp(a, "--save-every") == 0) {
            bad = parse_u64(v, &o->save_every) || o->save_every == 0;
        } else if (strcmp(a, "--dims") == 0) {
            bad = parse_dims(v, &o->shape);
        } else if (strcmp(a, "--batch") == 0) {
            bad = parse_u64(v, &u) || u < 1 || u > 65536, o->batch = (int)u;
        } else if (strcmp(a, "--micro") == 0) {
            bad = parse_u64(v, &u) || u < 1 || u > MAX_MICRO, o->micro = (int)u;
        } else if (strcmp(a, "--lr") == 0) {
            o->lr = strtod(v, NULL), bad = !(o->lr > 0);
        } else if (strcmp(a, "--clip") == 0) {
            o->clip = strtod(v, NULL), bad = !(o->clip > 0);
        } else if (strcmp(a, "--seed") == 0) {
            bad = parse_u64(v, &o->seed);
        } else if (strcmp(a, "--threads") == 0) {
            bad = parse_u64(v, &u) || u < 1 || u > 1024, o->threads = (int)u;
        } else if (strcmp(a, "--plot") == 0) {
            o->plot = v;
        } else {
            fprintf(stderr, "train: unknown option '%s' (see --help)\n", a);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "train: bad value '%s' for %s (see --help)\n", v, a);
            return -1;
        }
        i++;
    }
    if (o->micro > o->batch) {
        fprintf(stderr, "train: --micro %d exceeds --batch %d\n", o->micro, o->batch);
        return -1;
    }
    return 0;
}

/* Unequal micro-batch sizes summing to batch (the last one about half the
 * others), so only the weighted mean makes the step's gradient the batch mean. */
static void micro_sizes(int batch, int micro, int *rows)
{
    const int base = micro == 1 ? batch : (2 * batch) / (2 * micro - 1);
    for (int i = 0; i + 1 < micro; i++)
        rows[i] = base;
    rows[micro - 1] = batch - base * (micro - 1);
}

/* ---- run state <-> snapshot -------------------------------------------------------- */

static void layer_name(char *buf, size_t cap, const char *prefix, int l, int bias)
{
    snprintf(buf, cap, "%sl%d.%s", prefix, l, bias ? "bias" : "weight");
}

static const char *const g_prefix[3] = {"model.", "optim.adam_m.", "optim.adam_v."};

static int add_params(gck_snapshot *s, const train_shape *sh, const train_params *p, const char *prefix)
{
    char name[64];
    for (int l = 0; l < sh->nlayers; l++) {
        const int64_t ws[2] = {sh->dims[l], sh->dims[l + 1]}, bs = sh->dims[l + 1];
        layer_name(name, sizeof name, prefix, l, 0);
        if (gck_snapshot_add_tensor(s, name, GCK_DTYPE_F32, ws, 2, p->w[l]) != GCK_OK)
            return -1;
        layer_name(name, sizeof name, prefix, l, 1);
        if (gck_snapshot_add_tensor(s, name, GCK_DTYPE_F32, &bs, 1, p->b[l]) != GCK_OK)
            return -1;
    }
    return 0;
}

static void dims_string(const train_shape *sh, char *buf, size_t cap)
{
    size_t at = 0;
    for (int i = 0; i <= sh->nlayers && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%d", i ? "," : "", sh->dims[i]);
}

static gck_snapshot *state_snapshot(const options *o, const run_state *st)
{
    gck_snapshot *s = NULL;
    if (gck_snapshot_create(st->step, &s) != GCK_OK)
        return NULL;
    char buf[256];
    int ok = add_params(s, &o->shape, &st->w, g_prefix[0]) == 0 && add_params(s, &o->shape, &st->m, g_prefix[1]) == 0 &&
             add_params(s, &o->shape, &st->v, g_prefix[2]) == 0;
    const int64_t hs = (int64_t)st->step;
    ok = ok && gck_snapshot_add_tensor(s, "train.loss_history", GCK_DTYPE_F32, &hs, 1, st->loss_history) == GCK_OK;
    dims_string(&o->shape, buf, sizeof buf);
    ok = ok && gck_snapshot_set_metadata(s, "train.dims", buf) == GCK_OK;
    snprintf(buf, sizeof buf, "%d", o->batch);
    ok = ok && gck_snapshot_set_metadata(s, "train.batch", buf) == GCK_OK;
    snprintf(buf, sizeof buf, "%d", o->micro);
    ok = ok && gck_snapshot_set_metadata(s, "train.micro", buf) == GCK_OK;
    snprintf(buf, sizeof buf, "%a", o->lr); /* hex floats: exact through the round trip */
    ok = ok && gck_snapshot_set_metadata(s, "train.lr", buf) == GCK_OK;
    snprintf(buf, sizeof buf, "%a", o->clip);
    ok = ok && gck_snapshot_set_metadata(s, "train.clip", buf) == GCK_OK;
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)o->seed);
    ok = ok && gck_snapshot_set_metadata(s, "train.seed", buf) == GCK_OK;
    snprintf(buf, sizeof buf, "%a", st->best_loss);
    ok = ok && gck_snapshot_set_metadata(s, "train.best_loss", buf) == GCK_OK;
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)st->best_version);
    ok = ok && gck_snapshot_set_metadata(s, "train.best_version", buf) == GCK_OK;
    if (!ok) {
        fprintf(stderr, "train: cannot build the snapshot: %s\n", gck_last_error());
        gck_snapshot_destroy(s);
        return NULL;
    }
    return s;
}

static int copy_params(const gck_snapshot *s, const train_shape *sh, train_params *p, const char *prefix)
{
    char name[64];
    for (int l = 0; l < sh->nlayers; l++)
        for (int bias = 0; bias < 2; bias++) {
            gck_tensor_info t;
            layer_name(name, sizeof name, prefix, l, bias);
            const size_t want = bias ? (size_t)sh->dims[l + 1] * 4 : (size_t)sh->dims[l] * (size_t)sh->dims[l + 1] * 4;
            if (gck_snapshot_find_tensor(s, name, &t) != GCK_OK || t.dtype != GCK_DTYPE_F32 || t.nbytes != want) {
                fprintf(stderr, "train: the snapshot has no matching tensor '%s'\n", name);
                return -1;
            }
            memcpy(bias ? p->b[l] : p->w[l], t.data, want);
        }
    return 0;
}

/* The run's configuration as recorded in a snapshot (it wins over the command line). */
static int read_config(const gck_snapshot *s, options *o)
{
    const char *dims = gck_snapshot_metadata(s, "train.dims"), *b = gck_snapshot_metadata(s, "train.batch"),
               *m = gck_snapshot_metadata(s, "train.micro"), *lr = gck_snapshot_metadata(s, "train.lr"),
               *clip = gck_snapshot_metadata(s, "train.clip"), *seed = gck_snapshot_metadata(s, "train.seed");
    if (!dims || !b || !m || !lr || !clip || !seed || parse_dims(dims, &o->shape) != 0) {
        fprintf(stderr, "train: the latest version is not a snapshot of this demo\n");
        return -1;
    }
    o->batch = atoi(b), o->micro = atoi(m);
    o->lr = strtod(lr, NULL), o->clip = strtod(clip, NULL);
    return parse_u64(seed, &o->seed);
}

static int state_alloc(run_state *st, const train_shape *sh, uint64_t steps)
{
    memset(st, 0, sizeof *st);
    st->best_loss = INFINITY;
    st->loss_cap = steps ? steps : 1;
    st->loss_history = calloc(st->loss_cap, sizeof(float));
    return st->loss_history && train_params_alloc(&st->w, sh) == 0 && train_params_alloc(&st->m, sh) == 0 &&
                   train_params_alloc(&st->v, sh) == 0
               ? 0
               : -1;
}

static void state_free(run_state *st)
{
    train_params_free(&st->w), train_params_free(&st->m), train_params_free(&st->v);
    free(st->loss_history);
}

/* Loads the run from the store's latest version. */
static int state_restore(gck_store *store, options *o, run_state *st)
{
    const gck_entry *e = gck_store_latest(store);
    gck_snapshot *s = NULL;
    if (e == NULL || gck_store_restore(store, e->version, &s) != GCK_OK) {
        fprintf(stderr, "train: cannot restore '%s': %s\n", o->dir, e ? gck_last_error() : "the store is empty");
        return -1;
    }
    int rc = read_config(s, o);
    if (gck_snapshot_step(s) > o->steps)
        o->steps = gck_snapshot_step(s); /* already past the goal: nothing left to do */
    if (rc == 0 && state_alloc(st, &o->shape, o->steps) != 0) {
        fprintf(stderr, "train: out of memory\n");
        rc = -1;
    }
    for (int i = 0; rc == 0 && i < 3; i++)
        rc = copy_params(s, &o->shape, i == 0 ? &st->w : i == 1 ? &st->m : &st->v, g_prefix[i]);
    gck_tensor_info h;
    if (rc == 0 && (gck_snapshot_find_tensor(s, "train.loss_history", &h) != GCK_OK || h.dtype != GCK_DTYPE_F32 ||
                    h.nbytes != gck_snapshot_step(s) * 4)) {
        fprintf(stderr, "train: the snapshot's loss history is missing or has the wrong length\n");
        rc = -1;
    }
    if (rc == 0) {
        st->step = gck_snapshot_step(s);
        if (h.nbytes)
            memcpy(st->loss_history, h.data, h.nbytes);
        const char *bl = gck_snapshot_metadata(s, "train.best_loss"), *bv = gck_snapshot_metadata(s, "train.best_version");
        st->best_loss = bl ? strtod(bl, NULL) : INFINITY;
        rc = bv ? parse_u64(bv, &st->best_version) : 0;
    }
    gck_snapshot_destroy(s);
    return rc;
}

/* ---- the loop ---------------------------------------------------------------------- */

/* AdamW on every parameter with the step's (clipped, micro-batch-weighted) gradients. */
static int adamw(const options *o, run_state *st, const gck_checkpoint *ck, double b1t, double b2t)
{
    const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f, lr = (float)o->lr;
    const float c1 = (float)(1.0 - b1t), c2 = (float)(1.0 - b2t);
    char name[64];
    for (int l = 0; l < o->shape.nlayers; l++)
        for (int bias = 0; bias < 2; bias++) {
            gck_tensor_view g;
            layer_name(name, sizeof name, "", l, bias);
            if (gck_checkpoint_find(ck, name, &g) != GCK_OK)
                return -1;
            float *w = bias ? st->w.b[l] : st->w.w[l], *m = bias ? st->m.b[l] : st->m.w[l],
                  *v = bias ? st->v.b[l] : st->v.w[l];
            const float *gv = g.values;
            const int n = (int)g.n;
#pragma omp parallel for schedule(static)
            for (int i = 0; i < n; i++) {
                m[i] = b1 * m[i] + (1.0f - b1) * gv[i];
                v[i] = b2 * v[i] + (1.0f - b2) * (gv[i] * gv[i]);
                const float mh = m[i] / c1, vh = v[i] / c2;
                w[i] = w[i] - lr * (mh / (sqrtf(vh) + eps) + wd * w[i]);
            }
        }
    return 0;
}

static void draw_plot(const char *png, const run_state *st)
{
    char data[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(data, sizeof data, "%s/gck_train_loss.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    const int fd = mkstemp(data); /* the template is completed and opened here */
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        fprintf(stderr, "train: cannot write the plot data\n");
        return;
    }
    for (uint64_t i = 0; i < st->step; i++)
        fprintf(f, "%llu %.9g\n", (unsigned long long)(i + 1), (double)st->loss_history[i]);
    fclose(f);
    FILE *g = popen("gnuplot 2>/dev/null", "w");
    int rc = -1;
    if (g != NULL) {
        fprintf(g,
                "set terminal png size 900,500\nset output '%s'\nset logscale y\nset grid\n"
                "set xlabel 'step'\nset ylabel 'training loss (MSE)'\nset title 'gradckpt demo: loss'\n"
                "plot '%s' using 1:2 with lines lw 2 title 'loss'\n",
                png, data);
        rc = pclose(g);
    }
    remove(data);
    if (rc != 0)
        fprintf(stderr, "train: no plot: gnuplot is missing or failed (Debian: apt install gnuplot-nox)\n");
    else
        printf("plot: %s\n", png);
}

int main(int argc, char **argv)
{
    options o;
    if (parse_args(argc, argv, &o) != 0)
        return 2;
#ifdef _OPENMP
    if (o.threads > 0)
        omp_set_num_threads(o.threads);
#endif
    gck_store *store = NULL;
    if (gck_store_open(o.dir, NULL, &store) != GCK_OK) {
        fprintf(stderr, "train: cannot open the store '%s': %s\n", o.dir, gck_last_error());
        return 1;
    }
    run_state st;
    const gck_entry *latest = gck_store_latest(store);
    if (o.resume) {
        if (state_restore(store, &o, &st) != 0) {
            gck_store_close(store);
            return 1;
        }
    } else if (latest != NULL) {
        fprintf(stderr, "train: '%s' already holds a run (latest version %llu): continue it with --resume %s, "
                        "or choose another --dir\n",
                o.dir, (unsigned long long)latest->version, o.dir);
        gck_store_close(store);
        return 1;
    } else {
        if (state_alloc(&st, &o.shape, o.steps) != 0) {
            fprintf(stderr, "train: out of memory\n");
            gck_store_close(store);
            return 1;
        }
        train_params_init(&st.w, &o.shape, o.seed);
    }

    train_params teacher, grads;
    train_work work;
    int rows[MAX_MICRO];
    micro_sizes(o.batch, o.micro, rows);
    double weights[MAX_MICRO];
    for (int i = 0; i < o.micro; i++)
        weights[i] = rows[i];
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.accumulation_mode = GCK_ACCUM_WEIGHTED_MEAN;
    cfg.weights = weights, cfg.n_weights = (size_t)o.micro;
    cfg.clip_enabled = 1, cfg.clip_norm = o.clip;
    cfg.dtype = GCK_DTYPE_F32;
    cfg.checksum = GCK_CHECKSUM_NONE;
    cfg.max_checkpoints = 1;
    gck_checkpointer *cp = NULL;
    if (train_params_alloc(&teacher, &o.shape) != 0 || train_params_alloc(&grads, &o.shape) != 0 ||
        train_work_alloc(&work, &o.shape, o.batch) != 0 || gck_checkpointer_create(&cfg, &cp) != GCK_OK) {
        fprintf(stderr, "train: setup failed: %s\n", gck_last_error());
        return 1;
    }
    train_params_init(&teacher, &o.shape, o.seed ^ 0x7eac4e5ULL);
    for (int l = 0; l < o.shape.nlayers; l++) /* a teacher with biases: targets are not centred */
        for (int j = 0; j < o.shape.dims[l + 1]; j++)
            teacher.b[l][j] = 0.1f * (float)((j % 7) - 3);
    train_transpose(&work, &o.shape, &st.w);

    /* Adam's bias corrections as running products: the same bits however the run was split */
    double b1t = 1.0, b2t = 1.0;
    for (uint64_t i = 0; i < st.step; i++)
        b1t *= 0.9, b2t *= 0.999;

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    printf("gradckpt demo: %zu parameters (dims ", st.w.count);
    for (int i = 0; i <= o.shape.nlayers; i++)
        printf("%s%d", i ? "," : "", o.shape.dims[i]);
    printf("), batch %d in %d micro-batches, %llu steps, snapshot every %llu into '%s'%s\n", o.batch, o.micro,
           (unsigned long long)o.steps, (unsigned long long)o.save_every, o.dir,
           o.resume ? " (resumed)" : "");
    if (o.resume)
        printf("resumed at step %llu from version %llu\n", (unsigned long long)st.step,
               (unsigned long long)gck_store_latest(store)->version);
    fflush(stdout);

    train_progress pr;
    train_progress_init(&pr, stdout, st.step, o.steps, o.quiet);
    char names[2 * TRAIN_MAX_LAYERS][32];
    for (int l = 0; l < o.shape.nlayers; l++)
        for (int bias = 0; bias < 2; bias++)
            layer_name(names[2 * l + bias], sizeof names[0], "", l, bias);
    int rc = 0;
    double loss = NAN, gnorm = NAN;
    while (st.step < o.steps && !g_stop) {
        const uint64_t step = st.step + 1;
        double t0 = train_now();
        loss = 0.0;
        for (int mb = 0, first = 0; mb < o.micro; first += rows[mb], mb++) {
            work.rows = rows[mb];
            train_make_batch(&work, &o.shape, &teacher, o.seed, step, first, rows[mb]);
            double mb_loss = 0.0;
            train_forward_backward(&work, &o.shape, &st.w, &grads, &mb_loss);
            loss += mb_loss * rows[mb];
            for (int l = 0; l < o.shape.nlayers && rc == 0; l++) {
                const size_t nw = (size_t)o.shape.dims[l] * (size_t)o.shape.dims[l + 1];
                if (gck_accumulate_f32(cp, names[2 * l], grads.w[l], nw, step) != GCK_OK ||
                    gck_accumulate_f32(cp, names[2 * l + 1], grads.b[l], (size_t)o.shape.dims[l + 1], step) != GCK_OK)
                    rc = 1;
            }
        }
        loss /= o.batch;
        train_phase(&pr, PHASE_COMPUTE, &t0);
        gck_checkpoint *ck = NULL;
        if (rc == 0 && gck_flush(cp, (uint64_t)time(NULL), &ck) != GCK_OK)
            rc = 1;
        train_phase(&pr, PHASE_FLUSH, &t0);
        if (rc != 0) {
            fprintf(stderr, "\ntrain: step %llu: %s\n", (unsigned long long)step, gck_last_error());
            break;
        }
        gnorm = gck_checkpoint_global_norm(ck);
        b1t *= 0.9, b2t *= 0.999;
        if (adamw(&o, &st, ck, b1t, b2t) != 0)
            rc = 1;
        gck_checkpoint_release(ck);
        train_transpose(&work, &o.shape, &st.w);
        st.step = step;
        st.loss_history[step - 1] = (float)loss;
        train_phase(&pr, PHASE_OPTIM, &t0);

        const char *note = NULL;
        char notebuf[64];
        if (step % o.save_every == 0 || step == o.steps || g_stop) {
            const int best = loss < st.best_loss;
            const uint64_t old_best = st.best_version;
            if (best)
                st.best_loss = loss, st.best_version = gck_store_latest(store)
                                                           ? gck_store_latest(store)->version + 1
                                                           : 1; /* the version this save becomes */
            gck_snapshot *s = state_snapshot(&o, &st);
            const char *tags[] = {"best"};
            uint64_t v = 0;
            if (s == NULL || gck_store_save(store, s, tags, best ? 1 : 0, &v) != GCK_OK) {
                fprintf(stderr, "\ntrain: cannot save step %llu: %s\n", (unsigned long long)step, gck_last_error());
                rc = 1;
            } else if (best && old_best != 0 && gck_store_get(store, old_best) != NULL) {
                (void)gck_store_untag(store, old_best, "best"); /* the tag moves; the old version may go */
            }
            gck_snapshot_destroy(s);
            snprintf(notebuf, sizeof notebuf, "saved v%llu%s", (unsigned long long)v, best ? " (best)" : "");
            note = notebuf;
            train_phase(&pr, PHASE_SAVE, &t0);
        }
        train_progress_step(&pr, step, loss, gnorm, note);
        if (rc != 0)
            break;
    }
    train_progress_end(&pr);

    if (rc == 0) {
        char phases[256];
        train_phase_summary(&pr, phases, sizeof phases);
        gck_store_stats ss;
        gck_store_stats_get(store, &ss);
        const uint64_t digest = gck_fnv1a64(st.w.block, st.w.count * sizeof(float), 14695981039346656037ULL);
        if (g_stop)
            printf("interrupted at step %llu (saved): continue with --resume %s\n", (unsigned long long)st.step, o.dir);
        printf("done: step %llu/%llu, final loss %.6g, best %.6g (version %llu, tagged 'best')\n",
               (unsigned long long)st.step, (unsigned long long)o.steps,
               st.step ? (double)st.loss_history[st.step - 1] : NAN, st.best_loss,
               (unsigned long long)st.best_version);
        printf("time this run: %s\n", phases);
        printf("store '%s': %zu versions (%zu full, %zu delta), %.1f MB on disk for %.1f MB of snapshots (%.2f)\n",
               o.dir, ss.versions, ss.full_versions, ss.delta_versions, (double)ss.disk_bytes / 1e6,
               (double)ss.logical_bytes / 1e6, ss.logical_bytes ? (double)ss.disk_bytes / (double)ss.logical_bytes : 0.0);
        printf("weights digest: fnv1a64:%016llx\n", (unsigned long long)digest);
        if (o.plot != NULL)
            draw_plot(o.plot, &st);
        if (g_stop)
            rc = 130;
    }
    gck_checkpointer_destroy(cp);
    train_work_free(&work);
    train_params_free(&teacher), train_params_free(&grads);
    state_free(&st);
    gck_store_close(store);
    return rc;
}
