/* examples/clip_in_place.c - the README's in-place clip, compiled and run by ctest (test_clip_in_place)
 * so the snippet cannot rot: a gradient buffer holding two tensors, clipped to a global L2 norm of 1.0
 * where it lies, with the norm before clipping reported. Exits 1 if anything is not as the README says. */
#include <math.h>
#include <stdio.h>

#include <gradckpt/gradckpt.h>

#define N_W 300 /* a 3 x 100 weight */
#define N_B 100 /* its bias */

int main(void)
{
    static float grad[N_W + N_B]; /* one buffer: the weight's gradient, then the bias's */
    for (int i = 0; i < N_W + N_B; i++)
        grad[i] = 0.01f * (float)(i % 17) - 0.05f;

    /* README: begin */
    void *ptrs[] = {grad, grad + N_W};
    size_t lens[] = {N_W, N_B};
    gck_tensor_list grads = {.count = 2, .data = ptrs, .lens = lens, .dtype = GCK_DTYPE_F32};
    gck_clip_info info;
    gck_status st = gck_tensors_clip_by_norm(&grads, 1.0, 2.0, GCK_CLIP_EPS_DEFAULT, 0, &info);
    /* README: end */

    double after = NAN;
    if (st != GCK_OK || gck_tensors_norm(&grads, 2.0, NULL, &after) != GCK_OK) {
        fprintf(stderr, "clip_in_place: %s\n", gck_last_error());
        return 1;
    }
    printf("norm before clipping %.6f, clipped %d (x%.6f), norm after %.6f\n", info.total_norm, info.clipped,
           info.coef, after);
    /* the data's norm is about 1.14: clipping fires, and leaves a norm of 1 (to float rounding) */
    return info.total_norm > 1.0 && info.clipped == 1 && info.coef == 1.0 / (info.total_norm + GCK_CLIP_EPS_DEFAULT) &&
                   fabs(after - 1.0) < 1e-5
               ? 0
               : 1;
}
