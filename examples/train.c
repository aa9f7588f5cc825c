/* examples/train.c - the demo job: trains an MLP on the CPU with micro-batch gradient accumulation
 * (weighted by micro-batch size), global-norm clipping, AdamW, and snapshots in a gck_store every N
 * steps; `--resume DIR` continues from the latest version, bit for bit. Run `train --help` for the
 * options.
 *
 * Two gradient paths (--path), over the same contiguous buffers: the model's parameters, AdamW
 * moments and gradients are each one block (train_params), cut into 2 tensors per layer.
 * - trainer (default): the step's gradient lives in the run's own block. Each micro-batch's
 *   gradient is accumulated into it in place (gck_tensors_axpy_init / gck_tensors_axpy, weighted
 *   by its rows); the last one, the mean and the sum of squares take one pass
 *   (gck_tensors_axpy_div_sumsq), then gck_tensors_clip_with_norm clips by that norm and reports
 *   it as the pre-clip norm. No library-owned copy.
 * - checkpointer: gck_accumulate_many_f32 hands each micro-batch to a gck_checkpointer (weighted
 *   mean), gck_flush_into finishes and clips into the same block and records the checkpoint in the
 *   checkpointer's history (one kept), as a job that wants checkpoints (norms, checksum) does.
 *   --reduce tree sums the micro-batches in GCK_REDUCE_TREE order instead of one after the other.
 * Both are the same arithmetic with --clip-eps 0 (the checkpointer clips by clip / norm when
 * norm > clip), so they then reach the same weights bit for bit; the trainer path's default eps
 * (1e-6, PyTorch's) changes the factor whenever clipping fires.
 * - --dist (under mpirun; train_dist.c): the checkpointer path in tree order, each step's
 *   micro-batches split over the ranks in aligned power-of-two ranges (train_dist_split) and
 *   reduced with gck_mpi_flush, so the weights are those of one process in tree order for any
 *   rank count. Micro-batch i of step s comes from (seed, s, i) alone, whichever rank makes it;
 *   the ranks share their losses to sum them in one order. Rank 0 alone opens the store for
 *   writing and saves; on --resume the others read the same version read-only beside it
 *   (gck_store_open_readonly), so the rank count may change between runs.
 * --grad-dtype bf16: the backward pass rounds each micro-batch's gradient to bf16 (one more block), and
 * both paths accumulate it widened to f32 (gck_axpy_init/axpy_bf16_to_f32 over the whole block, or
 * gck_accumulate_many_bf16); the finished gradient, the weights and AdamW's state stay f32.
 * Snapshots are built by reference to the blocks (gck_snapshot_add_tensor_ref) and saved on the
 * store's thread (gck_store_save_async, which copies them first) while training goes on;
 * the save is waited for before the next one and before the run ends (--sync-save: gck_store_save
 * straight from the blocks). Resuming restores straight into them (gck_store_restore_into); step,
 * learning rate, data position and gradient dtype are metadata. */
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

#include "train_dist.h"
#include "train_plainsave.h"
#include "train_model.h"
#include "train_progress.h"

#define MAX_MICRO 16
#define MAX_TENSORS (2 * TRAIN_MAX_LAYERS)

enum { PATH_TRAINER, PATH_CHECKPOINTER };
static const char *const g_path_name[2] = {"trainer", "checkpointer"};

typedef struct options {
    const char *dir;
    int resume;
    uint64_t steps, save_every;
    train_shape shape;
    int batch, micro;
    double lr, clip, clip_eps;
    uint64_t seed;
    int threads;
    int path;
    int path_set, clip_eps_set, grad_dtype_set; /* given on the command line */
    int tree, tree_set;         /* checkpointer path: GCK_REDUCE_TREE (--reduce tree; always with --dist) */
    int dist;                   /* --dist: data-parallel over MPI ranks (train_dist.h) */
    int mb_first, mb_count;     /* this process's micro-batches of each step: all of them unless --dist */
    int grad_bf16;              /* --grad-dtype bf16 */
    int sync_save;              /* --sync-save: gck_store_save instead of gck_store_save_async */
    int save_plain;             /* --save-plain: plain files on a thread instead of the store (train_plainsave.h) */
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
            "  --path P           trainer (default): gradients accumulated, averaged and clipped in\n"
            "                     the run's own buffer with gck_tensors_*; checkpointer:\n"
            "                     gck_accumulate_many_f32 + gck_flush_into, recording checkpoints\n"
            "  --grad-dtype D     f32 (default) or bf16: the backward pass rounds each micro-batch's\n"
            "                     gradient to bf16, accumulated in f32 (gck_axpy_*_bf16_to_f32, or\n"
            "                     gck_accumulate_many_bf16); weights and AdamW state stay f32\n"
            "  --steps N          total optimizer steps (default 600)\n"
            "  --save-every N     steps between snapshots (default 20; 0: no snapshots at all)\n"
            "  --sync-save        save in the training thread (gck_store_save); by default snapshots\n"
            "                     are saved on the store's thread (gck_store_save_async) while\n"
            "                     training goes on\n"
            "  --save-plain       measure the floor of a save: the state's bytes written as a plain\n"
            "                     file on a background thread (write, fsync, the file of ten saves\n"
            "                     ago unlinked) instead of into the store; no version is saved\n"
            "  --dims A,B,...     layer widths, inputs first (default 64,2048,1024,16: 2.2 M params)\n"
            "  --batch N          samples per step (default 128)\n"
            "  --micro N          micro-batches per step, of unequal sizes (default 4)\n"
            "  --lr X             AdamW learning rate (default 1e-3)\n"
            "  --clip X           global gradient norm bound (default 1.0)\n"
            "  --clip-eps X       trainer path: clip factor clip / (norm + X) (default 1e-6, PyTorch's);\n"
            "                     the checkpointer path's rule is clip / norm, i.e. 0\n"
            "  --seed N           data, teacher and initial weights (default 42)\n"
            "  --threads N        OpenMP threads (default: OMP_NUM_THREADS or all cores)\n"
            "  --plot FILE.png    draw the loss curve with gnuplot at the end\n"
            "  --quiet            no progress output\n"
            "  --reduce R         checkpointer path: the micro-batches' summation order, sequential\n"
            "                     (default) or tree (GCK_REDUCE_TREE, pairwise)\n"
            "  --dist             under mpirun: each step's micro-batches split over the ranks, the\n"
            "                     checkpointer in tree order reduced with gck_mpi_flush; the weights\n"
            "                     are those of --path checkpointer --reduce tree in one process, for\n"
            "                     any number of ranks P (popcount(micro) <= P <= micro); rank 0 saves\n"
            "Killed at any point, --resume reaches the same weights as an uninterrupted run (the\n"
            "run's path, shape and hyperparameters come from its snapshot); the result does not\n"
            "depend on --threads.\n");
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

static int parse_f64(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    *out = strtod(s, &end);
    return errno || end == s || *end ? -1 : 0;
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

static int parse_path(const char *s, int *path)
{
    for (int i = 0; i < 2; i++)
        if (strcmp(s, g_path_name[i]) == 0)
            return *path = i, 0;
    return -1;
}

static int parse_reduce(const char *s, int *tree)
{
    if (strcmp(s, "tree") == 0 || strcmp(s, "sequential") == 0)
        return *tree = s[0] == 't', 0;
    return -1;
}

static const char *const g_grad_dtype_name[2] = {"f32", "bf16"};

static int parse_grad_dtype(const char *s, int *bf16)
{
    for (int i = 0; i < 2; i++)
        if (strcmp(s, g_grad_dtype_name[i]) == 0)
            return *bf16 = i, 0;
    return -1;
}

static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){.dir = "train-run", .steps = 600, .save_every = 20, .batch = 128, .micro = 4, .lr = 1e-3,
                   .clip = 1.0, .clip_eps = GCK_CLIP_EPS_DEFAULT, .seed = 42, .path = PATH_TRAINER};
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
        } else if (strcmp(a, "--dist") == 0) {
            o->dist = 1;
            continue;
        } else if (strcmp(a, "--sync-save") == 0) {
            o->sync_save = 1;
            continue;
        } else if (strcmp(a, "--save-plain") == 0) {
            o->save_plain = 1;
            continue;
        } else if (v == NULL) {
            fprintf(stderr, "train: %s needs a value (see --help)\n", a);
            return -1;
        } else if (strcmp(a, "--dir") == 0) {
            o->dir = v;
        } else if (strcmp(a, "--resume") == 0) {
            o->dir = v, o->resume = 1;
        } else if (strcmp(a, "--path") == 0) {
            bad = parse_path(v, &o->path), o->path_set = 1;
        } else if (strcmp(a, "--grad-dtype") == 0) {
            bad = parse_grad_dtype(v, &o->grad_bf16), o->grad_dtype_set = 1;
        } else if (strcmp(a, "--steps") == 0) {
            bad = parse_u64(v, &o->steps) || o->steps == 0;
        } else if (strcmp(a, "--save-every") == 0) {
            bad = parse_u64(v, &o->save_every);
        } else if (strcmp(a, "--dims") == 0) {
            bad = parse_dims(v, &o->shape);
        } else if (strcmp(a, "--batch") == 0) {
            bad = parse_u64(v, &u) || u < 1 || u > 65536, o->batch = (int)u;
        } else if (strcmp(a, "--micro") == 0) {
            bad = parse_u64(v, &u) || u < 1 || u > MAX_MICRO, o->micro = (int)u;
        } else if (strcmp(a, "--lr") == 0) {
            bad = parse_f64(v, &o->lr) || !(o->lr > 0);
        } else if (strcmp(a, "--clip") == 0) {
            bad = parse_f64(v, &o->clip) || !(o->clip > 0) || isinf(o->clip);
        } else if (strcmp(a, "--clip-eps") == 0) {
            bad = parse_f64(v, &o->clip_eps) || !(o->clip_eps >= 0) || isinf(o->clip_eps), o->clip_eps_set = 1;
        } else if (strcmp(a, "--seed") == 0) {
            bad = parse_u64(v, &o->seed);
        } else if (strcmp(a, "--threads") == 0) {
            bad = parse_u64(v, &u) || u < 1 || u > 1024, o->threads = (int)u;
        } else if (strcmp(a, "--reduce") == 0) {
            bad = parse_reduce(v, &o->tree), o->tree_set = 1;
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
    if (o->save_plain && (o->dist || o->sync_save || o->resume)) {
        fprintf(stderr, "train: --save-plain is a measurement of one fresh run without --dist or --sync-save\n");
        return -1;
    }
    if (o->dist) { /* gck_mpi_flush: the checkpointer in tree order */
        if ((o->path_set && o->path != PATH_CHECKPOINTER) || (o->tree_set && !o->tree)) {
            fprintf(stderr, "train: --dist takes the checkpointer path in tree order (--path checkpointer "
                            "--reduce tree)\n");
            return -1;
        }
        o->path = PATH_CHECKPOINTER, o->tree = 1;
    }
    if (o->tree && o->path != PATH_CHECKPOINTER) {
        fprintf(stderr, "train: --reduce tree is the checkpointer path's (--path checkpointer)\n");
        return -1;
    }
    if (o->path == PATH_CHECKPOINTER) {
        if (o->clip_eps_set && o->clip_eps != 0.0) {
            fprintf(stderr, "train: --clip-eps is the trainer path's; the checkpointer clips by clip / norm "
                            "(--clip-eps 0)\n");
            return -1;
        }
        o->clip_eps = 0.0;
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

/* ---- the tensors of a parameter block ----------------------------------------------- */

/* Tensor k of a block, in block order: layer k / 2's biases (k even), then its weights. */
static int n_tensors(const train_shape *sh)
{
    return 2 * sh->nlayers;
}

static float *tensor_at(const train_params *p, int k)
{
    return k & 1 ? p->w[k / 2] : p->b[k / 2];
}

static size_t tensor_shape(const train_shape *sh, int k, int64_t shape[2])
{
    const int l = k / 2;
    if (!(k & 1))
        return shape[0] = sh->dims[l + 1], 1;
    shape[0] = sh->dims[l], shape[1] = sh->dims[l + 1];
    return 2;
}

static size_t tensor_len(const train_shape *sh, int k)
{
    int64_t shape[2];
    return tensor_shape(sh, k, shape) == 1 ? (size_t)shape[0] : (size_t)shape[0] * (size_t)shape[1];
}

static void tensor_name(char *buf, size_t cap, const char *prefix, int k)
{
    snprintf(buf, cap, "%sl%d.%s", prefix, k / 2, k & 1 ? "weight" : "bias");
}

/* ---- the step's gradient: the two paths ---------------------------------------------- */

typedef struct grad_path {
    int path;
    int n;                                /* tensors */
    char ids[MAX_TENSORS][16];            /* layer ids: the tensor names, in block (= name) order */
    const char *id_ptr[MAX_TENSORS];
    size_t lens[MAX_TENSORS];
    void *acc_data[MAX_TENSORS];          /* the finished gradient: pieces of the run's grad block */
    void *mb_data[MAX_TENSORS];           /* one micro-batch's gradient, written by the backward pass */
    const float *mb_values[MAX_TENSORS];
    gck_tensor_list acc, mb;
    double clip, clip_eps;
    gck_checkpointer *cp;                 /* checkpointer path only */
    gck_flush_dst dst;
    const train_dist *dist;               /* --dist: the flush is gck_mpi_flush over the ranks */
    int mb_first;                         /* --dist: this rank's first micro-batch of a step */
    /* --grad-dtype bf16: the micro-batch gradient rounded to bf16 (one block, cut as the f32 one) */
    size_t count;                         /* values in a block */
    float *acc_block;
    const float *mb_block;
    uint16_t *mb_bf16;
    const uint16_t *mb_bf16_at[MAX_TENSORS];
    void *mb16_data[MAX_TENSORS];
    gck_tensor_list mb16;                 /* the bf16 micro-batch gradient as a list */
    /* trainer path: the last micro-batch, the mean and the sum of squares in one pass */
    int last_mb;                          /* the step's last micro-batch */
    double wsum_all;                      /* the step's summed weights (rows) */
    int fused;                            /* 1: ss holds the finished gradient's sum of squares */
    double ss;
} grad_path;

/* --grad-dtype bf16: the bf16 copy of the micro-batch gradient block, its tensors at the f32 block's
 * offsets (the gradient stays contiguous, so the single-tensor kernels cover it in one call). */
static int grad_bf16_init(grad_path *g, const train_params *acc, const train_params *mb)
{
    g->count = mb->count, g->acc_block = acc->block, g->mb_block = mb->block;
    g->mb_bf16 = malloc((g->count ? g->count : 1) * sizeof *g->mb_bf16);
    if (g->mb_bf16 == NULL)
        return -1;
    for (int k = 0; k < g->n; k++) {
        g->mb_bf16_at[k] = g->mb_bf16 + (tensor_at(mb, k) - mb->block);
        g->mb16_data[k] = (void *)g->mb_bf16_at[k];
    }
    g->mb16 = (gck_tensor_list){.count = (size_t)g->n, .data = g->mb16_data, .lens = g->lens, .dtype = GCK_DTYPE_BF16};
    return 0;
}

static int grad_path_init(grad_path *g, const options *o, const train_params *acc, const train_params *mb,
                          const int *rows, const train_dist *dist)
{
    memset(g, 0, sizeof *g);
    g->path = o->path;
    g->dist = dist, g->mb_first = o->mb_first;
    g->n = n_tensors(&o->shape);
    g->clip = o->clip, g->clip_eps = o->clip_eps;
    g->last_mb = o->micro - 1;
    for (int i = 0; i < o->micro; i++)
        g->wsum_all += rows[i];
    for (int k = 0; k < g->n; k++) {
        tensor_name(g->ids[k], sizeof g->ids[k], "", k);
        g->id_ptr[k] = g->ids[k];
        g->lens[k] = tensor_len(&o->shape, k);
        g->acc_data[k] = tensor_at(acc, k);
        g->mb_data[k] = tensor_at(mb, k);
        g->mb_values[k] = tensor_at(mb, k);
    }
    g->acc = (gck_tensor_list){.count = (size_t)g->n, .data = g->acc_data, .lens = g->lens, .dtype = GCK_DTYPE_F32};
    g->mb = (gck_tensor_list){.count = (size_t)g->n, .data = g->mb_data, .lens = g->lens, .dtype = GCK_DTYPE_F32};
    if (o->grad_bf16 && grad_bf16_init(g, acc, mb) != 0)
        return -1;
    if (g->path != PATH_CHECKPOINTER)
        return 0;
    double weights[MAX_MICRO];
    for (int i = 0; i < o->mb_count; i++) /* --dist: the weights of this rank's micro-batches only */
        weights[i] = rows[o->mb_first + i];
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.accumulation_mode = GCK_ACCUM_WEIGHTED_MEAN;
    cfg.reduction = o->tree ? GCK_REDUCE_TREE : GCK_REDUCE_SEQUENTIAL;
    cfg.weights = weights, cfg.n_weights = (size_t)o->mb_count; /* copied */
    cfg.clip_enabled = 1, cfg.clip_norm = o->clip;
    cfg.dtype = GCK_DTYPE_F32;
    cfg.checksum = GCK_CHECKSUM_NONE;
    cfg.max_checkpoints = 1;
    g->dst = (gck_flush_dst){.layer_ids = g->id_ptr, .tensors = g->acc};
    return gck_checkpointer_create(&cfg, &g->cp) == GCK_OK ? 0 : -1;
}

static void grad_path_free(grad_path *g)
{
    gck_checkpointer_destroy(g->cp);
    g->cp = NULL;
    free(g->mb_bf16);
    g->mb_bf16 = NULL;
}

/* The end of the backward pass of a bf16-gradient model: the micro-batch's gradient rounded to bf16
 * (round to nearest even), as a bf16 trainer hands it over. Nothing for f32 gradients. */
static void grad_round(grad_path *g)
{
    if (g->mb_bf16 != NULL)
        gck_convert_f32_to_bf16(g->mb_bf16, g->mb_block, g->count);
}

/* Trainer path, the step's last micro-batch (not its first): acc += w * x, then acc /= the summed
 * weights with the sum of squares of the result, in one pass (gck_tensors_axpy_div_sumsq: the bits
 * of gck_tensors_axpy then gck_tensors_div_sumsq); grad_finish clips with that norm. */
static gck_status grad_add_last(grad_path *g, double w, const gck_tensor_list *x)
{
    g->fused = 1;
    return gck_tensors_axpy_div_sumsq(&g->acc, w, x, g->wsum_all, NULL, &g->ss);
}

/* grad_add for bf16 gradients: the same weighted accumulation, each value widened exactly to f32. */
static gck_status grad_add_bf16(grad_path *g, int mb, double w, uint64_t step)
{
    if (g->path == PATH_CHECKPOINTER)
        return gck_accumulate_many_bf16(g->cp, g->id_ptr, g->mb_bf16_at, g->lens, (size_t)g->n, step);
    if (mb == 0)
        gck_axpy_init_bf16_to_f32(g->acc_block, (float)w, g->mb_bf16, g->count);
    else if (mb == g->last_mb)
        return grad_add_last(g, w, &g->mb16);
    else
        gck_axpy_bf16_to_f32(g->acc_block, (float)w, g->mb_bf16, g->count);
    return GCK_OK;
}

/* Adds micro-batch `mb` (weight w, its rows) of optimizer step `step`. */
static gck_status grad_add(grad_path *g, int mb, double w, uint64_t step)
{
    if (g->mb_bf16 != NULL)
        return grad_add_bf16(g, mb, w, step);
    if (g->path == PATH_CHECKPOINTER)
        return gck_accumulate_many_f32(g->cp, g->id_ptr, g->mb_values, g->lens, (size_t)g->n, step);
    /* acc = 0 + mb * w for the first micro-batch (no zeroing pass), acc += mb * w after: exactly the
     * checkpointer's weighted accumulation */
    if (mb > 0 && mb == g->last_mb)
        return grad_add_last(g, w, &g->mb);
    return mb == 0 ? gck_tensors_axpy_init(&g->acc, w, &g->mb) : gck_tensors_axpy(&g->acc, w, &g->mb);
}

/* Finishes the step's gradient in the grad block: divided by the summed weights, clipped; *info
 * receives the pre-clip norm, the factor and whether clipping fired. */
static gck_status grad_finish(grad_path *g, double wsum, gck_clip_info *info)
{
    if (g->dist->on)
        return train_dist_flush_into(g->dist, g->cp, g->mb_first, &g->dst, info);
    if (g->path == PATH_CHECKPOINTER) {
        gck_checkpoint *ck = NULL;
        const gck_status st = gck_flush_into(g->cp, (uint64_t)time(NULL), &g->dst, info, &ck);
        gck_checkpoint_release(ck); /* before the next flush, so its memory is reused (see gck_flush) */
        return st;
    }
    if (g->fused) { /* divided and measured with the last micro-batch; sqrt(ss) is the f32 list's norm */
        g->fused = 0;
        return gck_tensors_clip_with_norm(&g->acc, g->clip, sqrt(g->ss), g->clip_eps, 0, info);
    }
    const gck_status st = gck_tensors_div_sumsq(&g->acc, wsum, NULL, NULL);
    return st != GCK_OK ? st : gck_tensors_clip_by_norm(&g->acc, g->clip, 2.0, g->clip_eps, 0, info);
}

/* ---- run state <-> snapshot -------------------------------------------------------- */

static const char *const g_prefix[3] = {"model.", "optim.adam_m.", "optim.adam_v."};

static const train_params *state_block(const run_state *st, int i)
{
    return i == 0 ? &st->w : i == 1 ? &st->m : &st->v;
}

static void dims_string(const train_shape *sh, char *buf, size_t cap)
{
    size_t at = 0;
    for (int i = 0; i <= sh->nlayers && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%d", i ? "," : "", sh->dims[i]);
}

/* A snapshot of the run that borrows its blocks and loss history (no copy): valid until saved. */
static gck_snapshot *state_snapshot(const options *o, const run_state *st)
{
    gck_snapshot *s = NULL;
    if (gck_snapshot_create(st->step, &s) != GCK_OK)
        return NULL;
    /* every tensor in one call: their ids are hashed on the OpenMP threads */
    const size_t nt = (size_t)n_tensors(&o->shape), n = 3 * nt + 1;
    gck_tensor_ref *refs = calloc(n, sizeof *refs);
    char (*names)[64] = calloc(n, sizeof *names);
    int64_t (*shapes)[2] = calloc(n, sizeof *shapes);
    int ok = refs != NULL && names != NULL && shapes != NULL;
    for (size_t i = 0; ok && i < 3; i++)
        for (size_t k = 0; k < nt; k++) {
            const size_t j = i * nt + k;
            const size_t nd = tensor_shape(&o->shape, (int)k, shapes[j]);
            tensor_name(names[j], sizeof names[j], g_prefix[i], (int)k);
            refs[j] = (gck_tensor_ref){names[j], GCK_DTYPE_F32, shapes[j], nd, tensor_at(state_block(st, (int)i), (int)k)};
        }
    if (ok) {
        shapes[n - 1][0] = (int64_t)st->step;
        refs[n - 1] = (gck_tensor_ref){"train.loss_history", GCK_DTYPE_F32, shapes[n - 1], 1, st->loss_history};
        ok = gck_snapshot_add_tensors_ref(s, refs, n) == GCK_OK;
    }
    free(refs), free(names), free(shapes);
    char dims[256];
    dims_string(&o->shape, dims, sizeof dims);
    ok = ok && gck_snapshot_set_metadata(s, "train.dims", dims) == GCK_OK &&
         gck_snapshot_set_metadata(s, "train.path", g_path_name[o->path]) == GCK_OK &&
         gck_snapshot_set_metadata(s, "train.reduce", o->tree ? "tree" : "sequential") == GCK_OK &&
         gck_snapshot_set_metadata(s, "train.grad_dtype", g_grad_dtype_name[o->grad_bf16]) == GCK_OK &&
         gck_snapshot_set_metadata_u64(s, "train.batch", (uint64_t)o->batch) == GCK_OK &&
         gck_snapshot_set_metadata_u64(s, "train.micro", (uint64_t)o->micro) == GCK_OK &&
         gck_snapshot_set_metadata_f64(s, "train.lr", o->lr) == GCK_OK &&
         gck_snapshot_set_metadata_f64(s, "train.clip", o->clip) == GCK_OK &&
         gck_snapshot_set_metadata_f64(s, "train.clip_eps", o->clip_eps) == GCK_OK &&
         gck_snapshot_set_metadata_u64(s, "train.seed", o->seed) == GCK_OK &&
         gck_snapshot_set_metadata_u64(s, "train.step", st->step) == GCK_OK &&
         /* the data loader's position: samples consumed; step s + 1 starts at sample s * batch */
         gck_snapshot_set_metadata_u64(s, "train.data_position", st->step * (uint64_t)o->batch) == GCK_OK &&
         gck_snapshot_set_metadata_f64(s, "train.best_loss", st->best_loss) == GCK_OK &&
         gck_snapshot_set_metadata_u64(s, "train.best_version", st->best_version) == GCK_OK;
    if (!ok) {
        fprintf(stderr, "train: cannot build the snapshot: %s\n", gck_last_error());
        gck_snapshot_destroy(s);
        return NULL;
    }
    return s;
}

/* The run's gradient dtype as recorded (snapshots of runs older than --grad-dtype have none: f32). */
static int read_grad_dtype(const gck_snapshot *s, options *o)
{
    const char *gd = gck_snapshot_metadata(s, "train.grad_dtype");
    int bf16 = 0;
    if (gd != NULL && parse_grad_dtype(gd, &bf16) != 0) {
        fprintf(stderr, "train: the latest version's gradient dtype '%s' is unknown\n", gd);
        return -1;
    }
    if (o->grad_dtype_set && o->grad_bf16 != bf16)
        fprintf(stderr, "train: the run in '%s' has %s gradients: --grad-dtype %s ignored\n", o->dir,
                g_grad_dtype_name[bf16], g_grad_dtype_name[o->grad_bf16]);
    o->grad_bf16 = bf16;
    return 0;
}

/* The run's configuration and position as recorded in a snapshot (they win over the command line). */
static int read_config(const gck_snapshot *s, options *o, uint64_t *step, double *best_loss, uint64_t *best_version)
{
    const char *dims = gck_snapshot_metadata(s, "train.dims"), *path = gck_snapshot_metadata(s, "train.path");
    const char *reduce = gck_snapshot_metadata(s, "train.reduce"); /* absent: a run from before the option */
    uint64_t batch = 0, micro = 0, pos = 0;
    int path_id = 0, tree = 0;
    if (!dims || !path || parse_dims(dims, &o->shape) != 0 || parse_path(path, &path_id) != 0 ||
        (reduce != NULL && parse_reduce(reduce, &tree) != 0) ||
        gck_snapshot_metadata_u64(s, "train.batch", &batch) != GCK_OK ||
        gck_snapshot_metadata_u64(s, "train.micro", &micro) != GCK_OK ||
        gck_snapshot_metadata_f64(s, "train.lr", &o->lr) != GCK_OK ||
        gck_snapshot_metadata_f64(s, "train.clip", &o->clip) != GCK_OK ||
        gck_snapshot_metadata_f64(s, "train.clip_eps", &o->clip_eps) != GCK_OK ||
        gck_snapshot_metadata_u64(s, "train.seed", &o->seed) != GCK_OK ||
        gck_snapshot_metadata_u64(s, "train.step", step) != GCK_OK ||
        gck_snapshot_metadata_u64(s, "train.data_position", &pos) != GCK_OK ||
        gck_snapshot_metadata_f64(s, "train.best_loss", best_loss) != GCK_OK ||
        gck_snapshot_metadata_u64(s, "train.best_version", best_version) != GCK_OK) {
        fprintf(stderr, "train: the latest version is not a snapshot of this demo (%s)\n", gck_last_error());
        return -1;
    }
    if (batch < 1 || batch > 65536 || micro < 1 || micro > MAX_MICRO || micro > batch || *step != gck_snapshot_step(s) ||
        pos != *step * batch) {
        fprintf(stderr, "train: the latest version's configuration is inconsistent (batch %llu, micro %llu, step "
                        "%llu, data position %llu)\n",
                (unsigned long long)batch, (unsigned long long)micro, (unsigned long long)*step,
                (unsigned long long)pos);
        return -1;
    }
    if (o->path_set && o->path != path_id)
        fprintf(stderr, "train: the run in '%s' takes the %s path: --path %s ignored\n", o->dir,
                g_path_name[path_id], g_path_name[o->path]);
    if (o->dist && (path_id != PATH_CHECKPOINTER || !tree)) {
        fprintf(stderr, "train: the run in '%s' takes the %s path in %s order: --dist needs a run started with "
                        "--dist or --path checkpointer --reduce tree\n",
                o->dir, g_path_name[path_id], tree ? "tree" : "sequential");
        return -1;
    }
    if (o->tree_set && o->tree != tree)
        fprintf(stderr, "train: the run in '%s' sums in %s order: --reduce ignored\n", o->dir,
                tree ? "tree" : "sequential");
    o->path = path_id, o->tree = tree;
    o->batch = (int)batch, o->micro = (int)micro;
    return read_grad_dtype(s, o);
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

/* Loads the run from the store's latest version: its configuration first (a restore of no
 * tensors, for the typed metadata), then every tensor straight into the newly sized blocks. */
static int state_restore(gck_store *store, options *o, run_state *st, uint64_t *version)
{
    const gck_entry *e = gck_store_latest(store);
    gck_snapshot *f = NULL;
    if (e == NULL || gck_store_restore_into(store, e->version, NULL, NULL, NULL, 0, &f) != GCK_OK) {
        fprintf(stderr, "train: cannot restore '%s': %s\n", o->dir, e ? gck_last_error() : "the store is empty");
        return -1;
    }
    *version = e->version;
    uint64_t step = 0, best_version = 0;
    double best_loss = INFINITY;
    int rc = read_config(f, o, &step, &best_loss, &best_version);
    gck_snapshot_destroy(f);
    if (rc != 0)
        return -1;
    if (step > o->steps)
        o->steps = step; /* already past the goal: nothing left to do */
    if (state_alloc(st, &o->shape, o->steps) != 0) {
        fprintf(stderr, "train: out of memory\n");
        return -1;
    }
    char names[3 * MAX_TENSORS + 1][64];
    const char *name_ptr[3 * MAX_TENSORS + 1];
    void *dsts[3 * MAX_TENSORS + 1];
    size_t sizes[3 * MAX_TENSORS + 1], n = 0;
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < n_tensors(&o->shape); k++, n++) {
            tensor_name(names[n], sizeof names[n], g_prefix[i], k);
            dsts[n] = tensor_at(state_block(st, i), k);
            sizes[n] = tensor_len(&o->shape, k) * sizeof(float);
        }
    snprintf(names[n], sizeof names[n], "train.loss_history");
    dsts[n] = st->loss_history, sizes[n] = step * sizeof(float), n++;
    for (size_t i = 0; i < n; i++)
        name_ptr[i] = names[i];
    if (gck_store_restore_into(store, e->version, name_ptr, dsts, sizes, n, NULL) != GCK_OK) {
        fprintf(stderr, "train: cannot restore version %llu of '%s': %s\n", (unsigned long long)e->version, o->dir,
                gck_last_error());
        state_free(st);
        return -1;
    }
    st->step = step, st->best_loss = best_loss, st->best_version = best_version;
    return 0;
}

/* ---- the loop ---------------------------------------------------------------------- */

/* AdamW on the whole parameter block with the step's finished gradient block g. */
static void adamw(const options *o, run_state *st, const float *g, double b1t, double b2t)
{
    const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f, lr = (float)o->lr;
    const float c1 = (float)(1.0 - b1t), c2 = (float)(1.0 - b2t);
    float *w = st->w.block, *m = st->m.block, *v = st->v.block;
    const long n = (long)st->w.count;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        m[i] = b1 * m[i] + (1.0f - b1) * g[i];
        v[i] = b2 * v[i] + (1.0f - b2) * (g[i] * g[i]);
        const float mh = m[i] / c1, vh = v[i] / c2;
        w[i] = w[i] - lr * (mh / (sqrtf(vh) + eps) + wd * w[i]);
    }
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
    fflush(stdout);
    /* a missing gnuplot closes the pipe: a write error, not a SIGPIPE ending the run unflushed */
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
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
    signal(SIGPIPE, old_pipe);
    remove(data);
    if (rc != 0)
        fprintf(stderr, "train: no plot: gnuplot is missing or failed (Debian: apt install gnuplot-nox)\n");
    else
        printf("plot: %s\n", png);
}

/* What an asynchronous save leaves to do once it is acknowledged: the previous 'best' version's tag to
 * remove (only after the new best is safely saved, so a crash never leaves the run without one). */
typedef struct saver {
    uint64_t untag; /* 0: none */
} saver;

/* Waits for the save in flight (nothing to wait for after a synchronous one), reports its failure,
 * then does what it left to do. Called before the next save and before the run ends. */
static int save_settle(gck_store *store, saver *sv)
{
    if (gck_store_wait(store, NULL) != GCK_OK) {
        fprintf(stderr, "\ntrain: a snapshot was not saved: %s\n", gck_last_error());
        return -1;
    }
    if (sv->untag != 0 && gck_store_get(store, sv->untag) != NULL)
        (void)gck_store_untag(store, sv->untag, "best"); /* the tag moves; the old version may go */
    sv->untag = 0;
    return 0;
}

/* Saves the run (tagging it 'best' when its loss is the lowest so far); returns -1 on failure. By
 * default the snapshot is handed to the store's thread (gck_store_save_async): it is built by
 * reference to the run's blocks, which the store copies before it returns (into the buffers of
 * the previous save's copy), since the next step changes them while the save runs. */
static int save_state(gck_store *store, const options *o, run_state *st, double loss, saver *sv, char *note,
                      size_t cap)
{
    if (save_settle(store, sv) != 0)
        return -1;
    const gck_entry *latest = gck_store_latest(store);
    const uint64_t next = latest ? latest->version + 1 : 1; /* the version this save becomes */
    const int best = loss < st->best_loss;
    const uint64_t old_best = st->best_version;
    if (best)
        st->best_loss = loss, st->best_version = next;
    gck_snapshot *s = state_snapshot(o, st);
    const char *tags[] = {"best"};
    uint64_t v = next;
    gck_status rc = s == NULL ? GCK_ERR_NO_MEMORY : GCK_OK;
    if (rc == GCK_OK && o->sync_save) {
        rc = gck_store_save(store, s, tags, best ? 1 : 0, &v);
        gck_snapshot_destroy(s); /* the borrowed blocks may change again from here */
        if (rc == GCK_OK && best && old_best != 0 && gck_store_get(store, old_best) != NULL)
            (void)gck_store_untag(store, old_best, "best");
    } else if (rc == GCK_OK) {
        rc = gck_store_save_async(store, s, tags, best ? 1 : 0); /* s is the store's from here */
        if (rc == GCK_OK && best && old_best != 0)
            sv->untag = old_best;
    }
    if (rc != GCK_OK) {
        fprintf(stderr, "\ntrain: cannot save step %llu: %s\n", (unsigned long long)st->step, gck_last_error());
        return -1;
    }
    snprintf(note, cap, "%s v%llu%s", o->sync_save ? "saved" : "saving", (unsigned long long)v,
             best ? " (best)" : "");
    return 0;
}

/* ---- --dist: ranks, the store, the split ------------------------------------------- */

/* --dist resume: rank 0 holds the store (it alone saves); the other ranks read the same latest
 * version beside it, read-only, once rank 0 has opened (and recovered) it. */
static int dist_open_readers(const options *o, const train_dist *d, gck_store **store)
{
    if (!d->on)
        return 0;
    train_dist_barrier(d);
    if (d->rank == 0 || !o->resume)
        return 0;
    if (gck_store_open_readonly(o->dir, store) != GCK_OK) {
        fprintf(stderr, "train: rank %d: cannot read the store '%s': %s\n", d->rank, o->dir, gck_last_error());
        return -1;
    }
    return 0;
}

/* This process's micro-batches of each step (all of them unless --dist), once every rank holds the
 * run; the readers close their view of the store. Returns -1 (the same on every rank) when the ranks
 * restored different versions or the micro-batches cannot be split over them. */
static int dist_split(options *o, const train_dist *d, gck_store **store, uint64_t step, uint64_t version)
{
    if (d->rank != 0) {
        gck_store_close(*store);
        *store = NULL;
    }
    if (!train_dist_same(d, step) || !train_dist_same(d, version)) {
        if (d->rank == 0)
            fprintf(stderr, "train: the ranks restored different versions of '%s'\n", o->dir);
        return -1;
    }
    if (train_dist_split(o->micro, d->size, d->rank, &o->mb_first, &o->mb_count) != 0) {
        int bits = 0;
        for (int k = o->micro; k; k &= k - 1)
            bits++;
        if (d->rank == 0)
            fprintf(stderr, "train: %d micro-batches per step cannot be split over %d ranks in aligned power-of-two "
                            "ranges (it takes %d to %d ranks)\n", o->micro, d->size, bits, o->micro);
        return -1;
    }
    return 0;
}

static void dist_describe(const options *o, const train_dist *d)
{
    printf("data-parallel: %d ranks (MPI), gck_mpi_flush; micro-batches per rank:", d->size);
    for (int r = 0, first = 0, count = 0; r < d->size; r++)
        if (train_dist_split(o->micro, d->size, r, &first, &count) == 0)
            printf(" %d", count);
    printf("\n");
}

int main(int argc, char **argv)
{
    options o;
    if (parse_args(argc, argv, &o) != 0)
        return 2;
    train_dist dist;
    if (train_dist_start(&dist, o.dist, &argc, &argv) != 0)
        return 2;
    const int lead = dist.rank == 0; /* prints and saves; the other ranks of --dist compute their share */
    if (!lead && freopen("/dev/null", "w", stdout) == NULL)
        train_dist_abort(&dist, 1);
#ifdef _OPENMP
    if (o.threads > 0)
        omp_set_num_threads(o.threads);
#endif
    gck_store *store = NULL;
    if (lead && gck_store_open(o.dir, NULL, &store) != GCK_OK) {
        fprintf(stderr, "train: cannot open the store '%s': %s\n", o.dir, gck_last_error());
        train_dist_abort(&dist, 1);
        return 1;
    }
    if (dist_open_readers(&o, &dist, &store) != 0)
        train_dist_abort(&dist, 1);
    run_state st;
    uint64_t resumed_from = 0;
    const gck_entry *latest = gck_store_latest(store);
    if (o.resume) {
        if (state_restore(store, &o, &st, &resumed_from) != 0) {
            gck_store_close(store);
            train_dist_abort(&dist, 1);
            return 1;
        }
    } else if (latest != NULL) {
        fprintf(stderr, "train: '%s' already holds a run (latest version %llu): continue it with --resume %s, "
                        "or choose another --dir\n",
                o.dir, (unsigned long long)latest->version, o.dir);
        gck_store_close(store);
        train_dist_abort(&dist, 1);
        return 1;
    } else {
        if (state_alloc(&st, &o.shape, o.steps) != 0) {
            fprintf(stderr, "train: out of memory\n");
            gck_store_close(store);
            train_dist_abort(&dist, 1);
            return 1;
        }
        train_params_init(&st.w, &o.shape, o.seed);
    }
    if (dist_split(&o, &dist, &store, st.step, resumed_from) != 0) {
        gck_store_close(store);
        state_free(&st);
        train_dist_end(&dist);
        return 2;
    }

    train_params teacher, mb_grads, grads;
    train_work work;
    int rows[MAX_MICRO];
    micro_sizes(o.batch, o.micro, rows);
    grad_path gp;
    if (train_params_alloc(&teacher, &o.shape) != 0 || train_params_alloc(&mb_grads, &o.shape) != 0 ||
        train_params_alloc(&grads, &o.shape) != 0 || train_work_alloc(&work, &o.shape, o.batch) != 0 ||
        grad_path_init(&gp, &o, &grads, &mb_grads, rows, &dist) != 0) {
        fprintf(stderr, "train: setup failed: %s\n", gck_last_error());
        train_dist_abort(&dist, 1);
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
    printf("), batch %d in %d micro-batches, %llu steps, snapshot every %llu (%s) into '%s'%s\n", o.batch, o.micro,
           (unsigned long long)o.steps, (unsigned long long)o.save_every,
           o.save_every == 0 ? "never" : o.sync_save ? "synchronous" : "asynchronous", o.dir,
           o.resume ? " (resumed)" : "");
    if (o.path == PATH_TRAINER)
        printf("gradient path: trainer (gck_tensors_* in place on the run's buffers; clip %g, eps %g)\n", o.clip,
               o.clip_eps);
    else
        printf("gradient path: checkpointer (gck_accumulate_many_%s + %s, a checkpoint per step; clip %g)\n",
               g_grad_dtype_name[o.grad_bf16], dist.on ? "gck_mpi_flush" : "gck_flush_into", o.clip);
    if (o.tree)
        printf("summation order: tree (GCK_REDUCE_TREE)\n");
    if (dist.on)
        dist_describe(&o, &dist);
    if (o.grad_bf16)
        printf("gradient dtype: bf16 (each micro-batch's gradient rounded to bf16, accumulated in f32; weights and "
               "AdamW state f32)\n");
    else
        printf("gradient dtype: f32\n");
    if (o.resume)
        printf("resumed at step %llu from version %llu\n", (unsigned long long)st.step,
               (unsigned long long)resumed_from);
    fflush(stdout);

    train_progress pr;
    train_progress_init(&pr, stdout, st.step, o.steps, o.save_every, o.quiet);
    int rc = 0, stop = 0;
    double loss = NAN;
    saver sv = {0};
    train_plainsave *plain = NULL; /* --save-plain */
    const void *plain_blocks[3] = {st.w.block, st.m.block, st.v.block};
    const size_t plain_bytes = st.w.count * sizeof(float), plain_sizes[3] = {plain_bytes, plain_bytes, plain_bytes};
    if (o.save_plain && (plain = train_plainsave_start(o.dir, 3 * plain_bytes, 10)) == NULL)
        rc = 1, stop = 1;
    while (st.step < o.steps && !stop) {
        const uint64_t step = st.step + 1;
        double t0 = train_now(), wsum = 0.0, mb_losses[MAX_MICRO];
        loss = 0.0;
        for (int mb = 0, first = 0; mb < o.micro && rc == 0; first += rows[mb], mb++) {
            if (mb < o.mb_first || mb >= o.mb_first + o.mb_count)
                continue; /* --dist: another rank's */
            work.rows = rows[mb];
            train_make_batch(&work, &o.shape, &teacher, o.seed, step, first, rows[mb]);
            double mb_loss = 0.0;
            train_forward_backward(&work, &o.shape, &st.w, &mb_grads, &mb_loss);
            grad_round(&gp);
            mb_losses[mb] = mb_loss;
            train_phase(&pr, PHASE_COMPUTE, &t0);
            rc = grad_add(&gp, mb, rows[mb], step) != GCK_OK;
            wsum = wsum + rows[mb];
            train_phase(&pr, PHASE_GRADS, &t0);
        }
        train_dist_share(&dist, mb_losses, o.micro); /* --dist: every rank's losses, to sum in one order */
        for (int mb = 0; mb < o.micro; mb++)
            loss += mb_losses[mb] * rows[mb];
        loss /= o.batch;
        gck_clip_info clip = {.total_norm = NAN};
        if (rc == 0)
            rc = grad_finish(&gp, wsum, &clip) != GCK_OK;
        train_phase(&pr, PHASE_GRADS, &t0);
        if (rc != 0) {
            fprintf(stderr, "\ntrain: step %llu: %s\n", (unsigned long long)step, gck_last_error());
            train_dist_abort(&dist, 1); /* --dist: the other ranks may be waiting in a collective */
            break;
        }
        b1t *= 0.9, b2t *= 0.999;
        adamw(&o, &st, grads.block, b1t, b2t);
        train_transpose(&work, &o.shape, &st.w);
        st.step = step;
        st.loss_history[step - 1] = (float)loss;
        train_phase(&pr, PHASE_OPTIM, &t0);

        const char *note = NULL;
        char notebuf[64];
        stop = train_dist_any(&dist, g_stop); /* --dist: every rank stops after the same step */
        if (o.save_every != 0 && (step % o.save_every == 0 || step == o.steps || stop)) {
            if (plain != NULL)
                rc = train_plainsave_put(plain, plain_blocks, plain_sizes, 3), snprintf(notebuf, sizeof notebuf, "written");
            else
                rc = lead ? save_state(store, &o, &st, loss, &sv, notebuf, sizeof notebuf) != 0 : 0;
            rc = train_dist_any(&dist, rc);
            note = notebuf;
            train_phase(&pr, PHASE_SAVE, &t0);
        }
        train_progress_step(&pr, step, loss, clip.total_norm, clip.clipped, clip.coef, note);
        if (rc != 0)
            break;
    }
    train_progress_end(&pr);
    if (lead && save_settle(store, &sv) != 0) /* every save acknowledged before the run reports */
        rc = 1;
    if (train_plainsave_end(plain) != 0) {
        fprintf(stderr, "train: --save-plain: a write failed\n");
        rc = 1;
    }
    rc = train_dist_any(&dist, rc); /* --dist: the ranks go on together */

    if (rc == 0) {
        char phases[512];
        train_phase_summary(&pr, phases, sizeof phases);
        gck_store_stats ss = {0};
        if (lead)
            gck_store_stats_get(store, &ss);
        const uint64_t digest = gck_fnv1a64(st.w.block, st.w.count * sizeof(float), 14695981039346656037ULL);
        if (!train_dist_same(&dist, digest)) {
            fprintf(stderr, "train: rank %d: the ranks' weights differ\n", dist.rank);
            rc = 1;
        }
        if (stop)
            printf("interrupted at step %llu (%s): continue with --resume %s\n", (unsigned long long)st.step,
                   o.save_every ? "saved" : "not saved: --save-every 0", o.dir);
        printf("done: step %llu/%llu, final loss %.6g, best %.6g (version %llu, tagged 'best')\n",
               (unsigned long long)st.step, (unsigned long long)o.steps,
               st.step ? (double)st.loss_history[st.step - 1] : NAN, st.best_loss,
               (unsigned long long)st.best_version);
        printf("time this run (%s path): %s\n", g_path_name[o.path], phases);
        if (train_cycle_summary(&pr, phases, sizeof phases))
            printf("%s\n", phases);
        train_clip_summary(&pr, phases, sizeof phases);
        printf("%s\n", phases);
        printf("store '%s': %zu versions (%zu full, %zu delta), %.1f MB on disk for %.1f MB of snapshots (%.2f)\n",
               o.dir, ss.versions, ss.full_versions, ss.delta_versions, (double)ss.disk_bytes / 1e6,
               (double)ss.logical_bytes / 1e6, ss.logical_bytes ? (double)ss.disk_bytes / (double)ss.logical_bytes : 0.0);
        printf("weights digest: fnv1a64:%016llx\n", (unsigned long long)digest);
        if (o.plot != NULL && lead)
            draw_plot(o.plot, &st);
        if (stop && rc == 0)
            rc = 130;
    }
    grad_path_free(&gp);
    train_work_free(&work);
    train_params_free(&teacher), train_params_free(&mb_grads), train_params_free(&grads);
    state_free(&st);
    gck_store_close(store);
    train_dist_end(&dist);
    return rc;
}
