/* examples/train_progress.c - a progress bar on a terminal, plain lines elsewhere, and where the time went. */
#include "train_progress.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const phase_names[PHASE_COUNT] = {"compute", "grads", "optimizer", "save"};

double train_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void train_progress_init(train_progress *p, FILE *out, uint64_t first_step, uint64_t total_steps, uint64_t save_every,
                         int quiet)
{
    memset(p, 0, sizeof *p);
    p->out = quiet ? NULL : out;
    p->tty = out != NULL && isatty(fileno(out));
    p->every = 10;
    p->first_step = first_step;
    p->total_steps = total_steps;
    p->start = p->step_start = train_now();
    p->cycle = save_every >= 8 ? save_every : 0;
}

void train_phase(train_progress *p, int phase, double *t0)
{
    const double t = train_now();
    p->phase[phase] += t - *t0;
    *t0 = t;
}

void train_phase_summary(const train_progress *p, char *buf, size_t cap)
{
    double total = 0;
    for (int i = 0; i < PHASE_COUNT; i++)
        total += p->phase[i];
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < PHASE_COUNT && at < cap; i++) {
        const int w = snprintf(buf + at, cap - at, "%s%s %.1f s (%.1f%%)", i ? ", " : "", phase_names[i],
                               p->phase[i], total > 0 ? 100.0 * p->phase[i] / total : 0.0);
        at += w > 0 ? (size_t)w : 0;
    }
    /* per step, in ms: what a comparison of the two gradient paths reads */
    const double ms = p->steps ? 1e3 / (double)p->steps : 0.0;
    for (int i = -1; i < PHASE_COUNT && at < cap; i++) {
        const int w = i < 0 ? snprintf(buf + at, cap - at, " | %.2f ms/step:", total * ms)
                            : snprintf(buf + at, cap - at, "%s %s %.3f", i ? "," : "", phase_names[i], p->phase[i] * ms);
        at += w > 0 ? (size_t)w : 0;
    }
}

/* The steps of a run with asynchronous saves differ only in how close they are to a save: the
 * cost of saving, read off one run's own steps, free of the run-to-run noise (other tenants, code
 * placement) that a comparison with a run without saves carries. */
int train_cycle_summary(const train_progress *p, char *buf, size_t cap)
{
    if (p->near_n == 0 || p->far_n == 0)
        return 0;
    const double near = p->near_s / (double)p->near_n, far = p->far_s / (double)p->far_n;
    double total = 0;
    for (int i = 0; i < PHASE_COUNT; i++)
        total += p->phase[i];
    snprintf(buf, cap,
             "save cycle: the save's step and the 2 after it %.2f ms, the cycle's second half %.2f ms: "
             "this run's steps took %.3fx the steps no save overlaps",
             1e3 * near, 1e3 * far, total / ((double)p->steps * far));
    return 1;
}

void train_clip_summary(const train_progress *p, char *buf, size_t cap)
{
    snprintf(buf, cap, "clipping fired on %llu of %llu steps this run", (unsigned long long)p->clipped,
             (unsigned long long)p->steps);
}

void train_progress_step(train_progress *p, uint64_t step, double loss, double gnorm, int clipped, double coef,
                         const char *note)
{
    p->steps++;
    p->clipped += clipped != 0;
    const double now = train_now(), took = now - p->step_start;
    p->step_start = now;
    if (p->cycle) {
        const uint64_t q = step % p->cycle; /* 0: the save's step */
        if (q <= 2)
            p->near_s += took, p->near_n++;
        else if (q > p->cycle / 2)
            p->far_s += took, p->far_n++;
    }
    if (p->out == NULL)
        return;
    const double elapsed = train_now() - p->start;
    const uint64_t done = step - p->first_step;
    const double rate = elapsed > 0 ? (double)done / elapsed : 0.0;
    double total = 0;
    for (int i = 0; i < PHASE_COUNT; i++)
        total += p->phase[i];
    const double pc = total > 0 ? 100.0 / total : 0.0;
    char clip[32] = "";
    if (clipped)
        snprintf(clip, sizeof clip, " clipped x%.3g", coef);
    if (p->tty) {
        char bar[31];
        const int fill = p->total_steps ? (int)(30 * step / p->total_steps) : 0;
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(p->out,
                "\r[%s] step %llu/%llu  loss %.5f  |g| %.3f%s  %.1f steps/s  compute %.0f%% grads %.0f%% "
                "optim %.0f%% save %.0f%%%s%s\033[K",
                bar, (unsigned long long)step, (unsigned long long)p->total_steps, loss, gnorm, clip, rate,
                p->phase[PHASE_COMPUTE] * pc, p->phase[PHASE_GRADS] * pc, p->phase[PHASE_OPTIM] * pc,
                p->phase[PHASE_SAVE] * pc, note ? "  " : "", note ? note : "");
        fflush(p->out);
        return;
    }
    if (step % (uint64_t)p->every != 0 && step != p->total_steps && note == NULL)
        return;
    /* grad_norm: the global L2 norm before clipping */
    fprintf(p->out, "step %llu/%llu loss %.6f grad_norm %.4f%s steps/s %.2f compute %.0f%% grads %.0f%% optim %.0f%% "
                    "save %.0f%%%s%s\n",
            (unsigned long long)step, (unsigned long long)p->total_steps, loss, gnorm, clip, rate,
            p->phase[PHASE_COMPUTE] * pc, p->phase[PHASE_GRADS] * pc, p->phase[PHASE_OPTIM] * pc,
            p->phase[PHASE_SAVE] * pc, note ? " " : "", note ? note : "");
    fflush(p->out);
}

void train_progress_end(train_progress *p)
{
    if (p->out != NULL && p->tty) {
        fputc('\n', p->out);
        fflush(p->out);
    }
}
