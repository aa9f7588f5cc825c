/* examples/train_progress.h - the demo's progress display and phase timers. */
#ifndef GCK_TRAIN_PROGRESS_H
#define GCK_TRAIN_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

enum { PHASE_COMPUTE, PHASE_FLUSH, PHASE_OPTIM, PHASE_SAVE, PHASE_COUNT };

typedef struct train_progress {
    FILE *out;
    int tty;             /* a redrawn bar; else plain lines every `every` steps */
    int every;
    uint64_t first_step; /* steps before this one were done by an earlier run */
    uint64_t total_steps;
    double start;        /* seconds, monotonic */
    double phase[PHASE_COUNT];
} train_progress;

double train_now(void);
void train_progress_init(train_progress *p, FILE *out, uint64_t first_step, uint64_t total_steps, int quiet);
/* Adds the time since *t0 to phase and sets *t0 to now. */
void train_phase(train_progress *p, int phase, double *t0);
/* One step done: redraws the bar (terminal) or prints a line (every `every` steps and the last). */
void train_progress_step(train_progress *p, uint64_t step, double loss, double gnorm, const char *note);
/* Ends the bar's line. */
void train_progress_end(train_progress *p);
/* "compute 41.2 s (83%), flush ..." into buf. */
void train_phase_summary(const train_progress *p, char *buf, size_t cap);

#endif /* GCK_TRAIN_PROGRESS_H */
