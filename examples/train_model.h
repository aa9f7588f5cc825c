/* examples/train_model.h - the demo's model: an MLP regressor, its synthetic data, forward and backward. */
#ifndef GCK_TRAIN_MODEL_H
#define GCK_TRAIN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define TRAIN_MAX_LAYERS 8

/* Shape of the network: dims[0] inputs, dims[1..nlayers-1] hidden (ReLU),
 * dims[nlayers] outputs (linear); trained on mean squared error against a
 * fixed random "teacher" network of the same shape. */
typedef struct train_shape {
    int nlayers;
    int dims[TRAIN_MAX_LAYERS + 1];
} train_shape;

/* Parameters (or gradients, or optimizer moments) of every layer, in one
 * block: layer l's biases b[l] (dims[l+1]) then its weights w[l] (dims[l] x
 * dims[l+1], input-major: row k holds the weights from input k, so updates
 * are elementwise loops). Biases come first so that the block's order is
 * the tensors' name order ("l0.bias" < "l0.weight" < "l1.bias" ...), the
 * order in which gck_checkpointer combines layer norms: a list of the
 * block's tensors in memory order then sums the same numbers in the same
 * order on both of the demo's gradient paths. */
typedef struct train_params {
    float *block;
    size_t count;
    float *w[TRAIN_MAX_LAYERS], *b[TRAIN_MAX_LAYERS];
} train_params;

int train_params_alloc(train_params *p, const train_shape *s);
void train_params_free(train_params *p);
/* Small random values from seed (He-style scale per layer). */
void train_params_init(train_params *p, const train_shape *s, uint64_t seed);

/* Scratch for one micro-batch of up to `rows` samples. */
typedef struct train_work {
    int rows;                     /* rows of the current batch (set by the caller, <= allocated) */
    float *x, *y;                 /* inputs, targets */
    float *act[TRAIN_MAX_LAYERS + 1]; /* act[0] = x, act[l+1] = layer l's output */
    float *delta[TRAIN_MAX_LAYERS + 1];
    float *wt[TRAIN_MAX_LAYERS];  /* output-major copies of the weights, for the backward pass */
} train_work;

int train_work_alloc(train_work *w, const train_shape *s, int rows);
void train_work_free(train_work *w);

/* The samples of global step `step`, micro-batch rows [first, first + rows):
 * inputs from the seed and the sample index alone, targets from the teacher,
 * so any step can be regenerated exactly (what makes resuming exact). */
void train_make_batch(train_work *w, const train_shape *s, const train_params *teacher, uint64_t seed,
                      uint64_t step, int first, int rows);

/* Refreshes w->wt from p (after every optimizer step). */
void train_transpose(train_work *w, const train_shape *s, const train_params *p);

/* Forward and backward on w's current batch: mean loss over its rows into
 * *loss, mean gradients into g. Every sum runs in a fixed order and each
 * output element is computed by one thread, so the result does not depend
 * on the OpenMP thread count. */
void train_forward_backward(train_work *w, const train_shape *s, const train_params *p, train_params *g,
                            double *loss);

/* Forward only (the teacher's labels). */
void train_forward(train_work *w, const train_shape *s, const train_params *p, int rows);

#endif /* GCK_TRAIN_MODEL_H */
