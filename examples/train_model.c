/* examples/train_model.c - MLP regressor: synthetic data, forward, backward (deterministic on any thread count). */
#include "train_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64: a counter-based generator, so sample i of step s needs no state. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Uniform in [-1, 1) from a 64-bit value (24 bits: exact in float). */
static float unit(uint64_t r)
{
    return (float)(int32_t)(r >> 40 & 0xffffff) / 8388608.0f - 1.0f;
}

static size_t layer_w(const train_shape *s, int l)
{
    return (size_t)s->dims[l] * (size_t)s->dims[l + 1];
}

int train_params_alloc(train_params *p, const train_shape *s)
{
    size_t n = 0;
    for (int l = 0; l < s->nlayers; l++)
        n += layer_w(s, l) + (size_t)s->dims[l + 1];
    memset(p, 0, sizeof *p);
    p->block = calloc(n, sizeof *p->block);
    if (p->block == NULL)
        return -1;
    p->count = n;
    float *at = p->block;
    for (int l = 0; l < s->nlayers; l++) {
        p->b[l] = at, at += s->dims[l + 1];
        p->w[l] = at, at += layer_w(s, l);
    }
    return 0;
}

void train_params_free(train_params *p)
{
    free(p->block);
    memset(p, 0, sizeof *p);
}

void train_params_init(train_params *p, const train_shape *s, uint64_t seed)
{
    for (int l = 0; l < s->nlayers; l++) {
        /* uniform with variance 2 / fan_in (He, for ReLU); sqrtf is correctly
         * rounded everywhere, so the start is the same on every machine */
        const float a = sqrtf(6.0f / (float)s->dims[l]);
        for (size_t i = 0; i < layer_w(s, l); i++)
            p->w[l][i] = a * unit(mix(seed ^ ((uint64_t)l << 56) ^ i));
        for (int j = 0; j < s->dims[l + 1]; j++)
            p->b[l][j] = 0.0f;
    }
}

int train_work_alloc(train_work *w, const train_shape *s, int rows)
{
    memset(w, 0, sizeof *w);
    w->rows = rows;
    int ok = 1;
    for (int l = 0; l <= s->nlayers; l++) {
        ok &= (w->act[l] = calloc((size_t)rows * (size_t)s->dims[l], sizeof(float))) != NULL;
        ok &= (w->delta[l] = calloc((size_t)rows * (size_t)s->dims[l], sizeof(float))) != NULL;
    }
    for (int l = 0; l < s->nlayers; l++)
        ok &= (w->wt[l] = malloc(layer_w(s, l) * sizeof(float))) != NULL;
    ok &= (w->y = calloc((size_t)rows * (size_t)s->dims[s->nlayers], sizeof(float))) != NULL;
    w->x = w->act[0];
    if (!ok)
        train_work_free(w);
    return ok ? 0 : -1;
}

void train_work_free(train_work *w)
{
    for (int l = 0; l <= TRAIN_MAX_LAYERS; l++)
        free(w->act[l]), free(w->delta[l]);
    for (int l = 0; l < TRAIN_MAX_LAYERS; l++)
        free(w->wt[l]);
    free(w->y);
    memset(w, 0, sizeof *w);
}

void train_transpose(train_work *w, const train_shape *s, const train_params *p)
{
    for (int l = 0; l < s->nlayers; l++) {
        const int in = s->dims[l], out = s->dims[l + 1];
#pragma omp parallel for schedule(static)
        for (int j = 0; j < out; j++)
            for (int k = 0; k < in; k++)
                w->wt[l][(size_t)j * in + k] = p->w[l][(size_t)k * out + j];
    }
}

/* out[r][:] = b + sum_k in[r][k] * w[k][:], then ReLU unless last. */
static void layer_forward(const float *in, float *out, const float *wl, const float *bl, int rows, int nin,
                          int nout, int relu)
{
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) {
        float *o = out + (size_t)r * nout;
        memcpy(o, bl, (size_t)nout * sizeof *o);
        for (int k = 0; k < nin; k++) {
            const float a = in[(size_t)r * nin + k];
            const float *wk = wl + (size_t)k * nout;
            for (int j = 0; j < nout; j++)
                o[j] += a * wk[j];
        }
        if (relu)
            for (int j = 0; j < nout; j++)
                o[j] = o[j] > 0.0f ? o[j] : 0.0f;
    }
}

void train_forward(train_work *w, const train_shape *s, const train_params *p, int rows)
{
    for (int l = 0; l < s->nlayers; l++)
        layer_forward(w->act[l], w->act[l + 1], p->w[l], p->b[l], rows, s->dims[l], s->dims[l + 1],
                      l + 1 < s->nlayers);
}

void train_make_batch(train_work *w, const train_shape *s, const train_params *teacher, uint64_t seed,
                      uint64_t step, int first, int rows)
{
    const int nin = s->dims[0], nout = s->dims[s->nlayers];
    for (int r = 0; r < rows; r++) {
        const uint64_t sample = mix(seed ^ mix(step * 1000003ULL + (uint64_t)(first + r)));
        for (int k = 0; k < nin; k++)
            w->x[(size_t)r * nin + k] = unit(mix(sample + (uint64_t)k));
    }
    train_forward(w, s, teacher, rows);
    /* the teacher's outputs are the targets */
    memcpy(w->y, w->act[s->nlayers], (size_t)rows * (size_t)nout * sizeof(float));
}

void train_forward_backward(train_work *w, const train_shape *s, const train_params *p, train_params *g,
                            double *loss)
{
    const int rows = w->rows, L = s->nlayers, nout = s->dims[L];
    train_forward(w, s, p, rows);
    /* d(mean over rows and outputs of (o - y)^2) / do */
    const float scale = 2.0f / ((float)rows * (float)nout);
    double total = 0.0;
    for (int r = 0; r < rows; r++) {
        double lr = 0.0;
        for (int j = 0; j < nout; j++) {
            const size_t i = (size_t)r * nout + j;
            const float e = w->act[L][i] - w->y[i];
            lr += (double)e * (double)e;
            w->delta[L][i] = scale * e;
        }
        total += lr;
    }
    *loss = total / ((double)rows * (double)nout);
    for (int l = L - 1; l >= 0; l--) {
        const int nin = s->dims[l], no = s->dims[l + 1];
        const float *in = w->act[l], *d = w->delta[l + 1];
        /* weight gradients: row k of g->w[l] = sum_r in[r][k] * d[r][:], r in order */
#pragma omp parallel for schedule(static)
        for (int k = 0; k < nin; k++) {
            float *gk = g->w[l] + (size_t)k * no;
            memset(gk, 0, (size_t)no * sizeof *gk);
            for (int r = 0; r < rows; r++) {
                const float a = in[(size_t)r * nin + k];
                const float *dr = d + (size_t)r * no;
                for (int j = 0; j < no; j++)
                    gk[j] += a * dr[j];
            }
        }
        float *gb = g->b[l];
        memset(gb, 0, (size_t)no * sizeof *gb);
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < no; j++)
                gb[j] += d[(size_t)r * no + j];
        if (l == 0)
            break;
        /* input deltas through the ReLU: d_in[r][:] = (sum_j d[r][j] * wt[j][:]) * (in > 0) */
        float *din = w->delta[l];
        const float *wt = w->wt[l];
#pragma omp parallel for schedule(static)
        for (int r = 0; r < rows; r++) {
            float *o = din + (size_t)r * nin;
            memset(o, 0, (size_t)nin * sizeof *o);
            for (int j = 0; j < no; j++) {
                const float dj = d[(size_t)r * no + j];
                const float *wj = wt + (size_t)j * nin;
                for (int k = 0; k < nin; k++)
                    o[k] += dj * wj[k];
            }
            for (int k = 0; k < nin; k++)
                o[k] = in[(size_t)r * nin + k] > 0.0f ? o[k] : 0.0f;
        }
    }
}
