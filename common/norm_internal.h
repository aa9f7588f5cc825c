/* common/norm_internal.h - the one rule for a total L2 norm from per-part results (internal).
 *
 * Shared by the checkpointer's global norm (core/checkpoint.c) and the list
 * functions' total (kernels/tensors.c), so the two can never disagree. */
#ifndef GCK_NORM_INTERNAL_H
#define GCK_NORM_INTERNAL_H

#include <math.h>
#include <stddef.h>

#include "attributes.h"

/* A plain sum of squares below this may hold squares that lost bits to
 * underflow (|x| < 2^-511); their total error is below n * 2^-1074, which is
 * negligible next to 2^-900 for any n < 2^100. */
#define GCK_NRM2_TINY 0x1p-900

/* 1 when sqrt(s) is the norm of values whose sum of squares is s: NaN, or
 * neither overflowed nor possibly hurt by underflow. */
static inline int gck_l2_sum_ok(double s)
{
    return isnan(s) || (s >= GCK_NRM2_TINY && s < INFINITY);
}

/* The parts' values v[0], v[k], v[2k] ... are `stride` bytes apart (so they
 * can be fields of an array of structs). */

/* ((0 + s_0) + s_1) + ... + s_{n-1}, left to right. */
GCK_INTERNAL double gck_l2_sum(const double *sumsq, size_t stride, size_t n);

/* The total norm of parts with these norms when their summed squares are
 * out of range (gck_l2_sum_ok false): m * sqrt(sum (norm_i / m)^2) with m the
 * largest norm, or m itself when m is 0 or +Inf. */
GCK_INTERNAL double gck_l2_rescaled(const double *norm, size_t stride, size_t n);

/* The whole rule: sqrt(gck_l2_sum(sumsq)) when that sum is in range, else
 * gck_l2_rescaled(norm). n == 0 gives 0 (the pointers are then not read). */
GCK_INTERNAL double gck_l2_total(const double *sumsq, const double *norm, size_t stride, size_t n);

#endif /* GCK_NORM_INTERNAL_H */
