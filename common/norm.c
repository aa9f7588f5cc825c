/* common/norm.c - the total L2 norm rule (see norm_internal.h). */
#include "norm_internal.h"

static double gck_part(const double *v, size_t stride, size_t i)
{
    return *(const double *)(const void *)((const char *)v + i * stride);
}

double gck_l2_sum(const double *sumsq, size_t stride, size_t n)
{
    double total = 0.0;
    for (size_t i = 0; i < n; i++)
        total = total + gck_part(sumsq, stride, i);
    return total;
}

double gck_l2_rescaled(const double *norm, size_t stride, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double v = gck_part(norm, stride, i);
        m = v > m ? v : m;
    }
    if (m == 0.0 || isinf(m))
        return m;
    double s = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double r = gck_part(norm, stride, i) / m;
        s = s + r * r;
    }
    return m * sqrt(s);
}

double gck_l2_total(const double *sumsq, const double *norm, size_t stride, size_t n)
{
    const double total = gck_l2_sum(sumsq, stride, n);
    return gck_l2_sum_ok(total) ? sqrt(total) : gck_l2_rescaled(norm, stride, n);
}
