/* examples/train_progress.h - the demo's progress display and phase timers. */
#ifndef GCK_TRAIN_PROGRESS_H
#define GCK_TRAIN_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

/* compute: forward and backward; grads: gradckpt's gradient work (accumulate, finish the mean,
 * clip); optimizer: AdamW; save: snapshots into the store. */
enum { PHASE_COMPUTE, PHASE_GRADS, PHASE_OPTIM, PHASE_SAVE, PHASE_COUNT };

typedef struct train_progress {
    FILE *out;
    int tty;             /* a redrawn bar; else plain lines every `every` steps */
    int every;
    uint64_t first_step; /* steps before this one were done by an earlier run */
    uint64_t total_steps;
    uint64_t steps, clipped; /* steps done by this run, and how many of them were clipped */
    double start;        /* seconds, monotonic */
    double phase[PHASE_COUNT];
    /* step times by where a step lies in the save cycle (--save-every N, N >= 8): the save's own
     * step and the two after it, and the steps of the cycle's second half, which no save overlaps */
    uint64_t cycle;
    double step_start, near_s, far_s;
    uint64_t near_n, far_n;
} train_progress;

double train_now(void);
/* save_every: the run's --save-every (0: no saves) */
void train_progress_init(train_progress *p, FILE *out, uint64_t first_step, uint64_t total_steps, uint64_t save_every,
                         int quiet);
/* Adds the time since *t0 to phase and sets *t0 to now. */
void train_phase(train_progress *p, int phase, double *t0);
/* One step done, with its gradient's norm before clipping, whether clipping fired and its factor:
 * redraws the bar (terminal) or prints a line (every `every` steps, the last, and on a save). */
void train_progress_step(train_progress *p, uint64_t step, double loss, double gnorm, int clipped, double coef,
                         const char *note);
/* Ends the bar's line. */
void train_progress_end(train_progress *p);
/* "compute 41.2 s (83%), grads ... | 68.7 ms/step: compute 57.0, ..." into buf. */
void train_phase_summary(const train_progress *p, char *buf, size_t cap);
/* "steps near a save 66.1 ms, far from one 63.9 ms: ..." into buf; 0 when the run has no such figure. */
int train_cycle_summary(const train_progress *p, char *buf, size_t cap);
/* "clipping fired on 412 of 600 steps" into buf. */
void train_clip_summary(const train_progress *p, char *buf, size_t cap);

#endif /* GCK_TRAIN_PROGRESS_H */
