/* gradckpt/tensors.h - one call over a list of tensors on the caller's memory: norms, clipping, accumulation. */
#ifndef GRADCKPT_TENSORS_H
#define GRADCKPT_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/dtype.h>
#include <gradckpt/export.h>
#include <gradckpt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * What a trainer holds: its parameters' gradients as separate buffers (or
 * pieces of one contiguous buffer). These functions work on them in place,
 * one call per list, with no copy of the data and no allocation the caller
 * has to manage. The elementwise functions update a run of adjacent pieces
 * of one buffer (same dtypes, in every list of the call) as one array, so
 * a split buffer costs them no more than the whole one.
 *
 * Common rules for every function below.
 *
 * - A list names `count` tensors: data[i] points at lens[i] elements of
 *   dtype dtypes[i] (or of `dtype` for every tensor when dtypes is NULL).
 *   Supported dtypes: GCK_DTYPE_F32, GCK_DTYPE_F64, GCK_DTYPE_BF16 and
 *   GCK_DTYPE_F16 (the 2-byte floats as uint16_t bits, see kernels.h),
 *   except where a function says otherwise (see "bf16 and f16 lists"
 *   below); others give GCK_ERR_UNSUPPORTED naming the tensor's index and
 *   the dtypes allowed there. data[i] may be NULL only
 *   when lens[i] is 0; no alignment is needed. A list with count 0 is valid
 *   (its arrays may then be NULL); a NULL list pointer is
 *   GCK_ERR_INVALID_ARGUMENT. The same tensor may appear several times in a
 *   list that is only read.
 * - Tensors written by a call (add/axpy/axpy_init/scale targets, divided or
 *   clipped tensors) may not overlap each other or the inputs, except that
 *   an input may be the very same buffer as its target (x_i == acc_i, same
 *   dtype: in place). A partial overlap of x_i with its own target is
 *   GCK_ERR_INVALID_ARGUMENT; overlaps between different tensors are not
 *   detected and give unspecified values.
 * - Every argument is checked before any memory is touched: on error nothing
 *   was written, the status says why (GCK_ERR_INVALID_ARGUMENT: a NULL list,
 *   NULL arrays with count > 0, NULL data with a length, a partial overlap
 *   as above, a list of more than SIZE_MAX / 16 elements;
 *   GCK_ERR_DIMENSION_MISMATCH: two lists of different counts or lengths,
 *   naming the index and both values; GCK_ERR_UNSUPPORTED: a dtype;
 *   GCK_ERR_NO_MEMORY: scratch, see below) and gck_last_error() has the
 *   message, which names the tensor's index.
 * - Bit-reproducible: each per-tensor result is exactly what the single
 *   kernel of kernels.h returns for that tensor (gck_sumsq_f32, gck_pnorm_f64,
 *   ...), and each total combines the per-tensor results in list order by
 *   the rule stated below, so the result is the same on every ISA, for every
 *   OpenMP thread count and however the tensors are spread over threads.
 * - One call runs on OpenMP threads, across tensors and within big ones,
 *   balanced by bytes, when built with OpenMP, called outside a parallel
 *   region and the list holds GCK_PARALLEL_MIN elements or more in all;
 *   smaller calls run on the calling thread.
 * - Scratch: a call that runs on the calling thread allocates nothing,
 *   except for more than 64 tensors in gck_tensors_norm /
 *   gck_tensors_clip_by_norm with p other than 1, 2 and INFINITY (32 bytes
 *   per tensor), or with p = 2 when the summed squares overflow or
 *   underflow (8 bytes per tensor). A call on threads allocates its work
 *   list (about 40 bytes per 8 Ki - 128 Ki elements and per tensor). All of
 *   it is freed before returning; if an allocation fails:
 *   GCK_ERR_NO_MEMORY, and nothing was written.
 * - Flush-to-zero / denormals-are-zero set by the process: see kernels.h
 *   (results stay bit-identical across ISAs).
 *
 * bf16 and f16 lists (alone or mixed with F32 / F64 tensors in one list):
 *
 *   function                       16-bit tensors            element operation
 *   gck_tensors_sumsq, _norm       yes                       gck_sumsq_bf16 / _f16, gck_pnorm_bf16 / _f16
 *   gck_tensors_clip_by_norm,      yes (in place)            gck_scale_bf16 / _f16 by (float)coef
 *     gck_tensors_clip_with_norm
 *   gck_tensors_scale              yes (in place)            gck_scale_bf16 / _f16 by (float)s
 *   gck_tensors_add, _axpy,        x: yes; acc / dst: no,    gck_add_ / axpy_ / axpy_init_bf16_to_f32 /
 *     _axpy_init                   F32 or F64 only           _f64 and the f16 ones
 *   gck_tensors_div_sumsq          no                        (GCK_ERR_UNSUPPORTED)
 *   gck_tensors_axpy_div_sumsq     x: yes; acc: no           the axpy above, then div_sumsq of acc
 *
 * - Each 16-bit tensor is widened exactly to f32 by its kernels, so every
 *   per-tensor result and every total of a list equals, bit for bit, that of
 *   the same list with its 16-bit tensors converted to F32 (and the totals
 *   are combined by the F32 rules: their squares never overflow or
 *   underflow in f64).
 * - Scaling (and clipping) rounds twice, as PyTorch's x.mul_(s) of a bf16 /
 *   f16 tensor by an f32 scalar does: the f32 product, then to the 16-bit
 *   dtype (nearest even). PyTorch's clip_grad_norm_ over bf16-only grads
 *   computes the norm and coefficient in bf16 itself; here the total is the
 *   f64 one above and the coefficient is rounded to f32 (the Python
 *   binding's clip_grad_norm_ says how it matches torch).
 * - A 16-bit accumulator would round at every micro-batch: add, axpy and
 *   axpy_init take 16-bit inputs into F32 or F64 targets only; round the
 *   result once with gck_convert_f32_to_bf16 / _f16 when a 16-bit copy is
 *   wanted.
 * - gck_tensors_div_sumsq refuses 16-bit tensors: a mean belongs in the
 *   F32 / F64 buffers it was accumulated in (dividing a 16-bit tensor would
 *   round once more, after the squares were taken).
 *
 * Thread-safety: safe to call concurrently on lists that do not write the
 * same memory.
 */

/** A list of tensors on the caller's memory (see the common rules above). */
typedef struct gck_tensor_list {
    size_t count;            /**< number of tensors */
    void *const *data;       /**< count pointers (only read by read-only functions) */
    const size_t *lens;      /**< count element counts */
    gck_dtype dtype;         /**< every tensor's dtype when dtypes is NULL */
    const gck_dtype *dtypes; /**< optional: count per-tensor dtypes (mixed lists) */
} gck_tensor_list;

/** eps of gck_tensors_clip_by_norm as PyTorch's clip_grad_norm_ uses it. */
#define GCK_CLIP_EPS_DEFAULT 1e-6

/** gck_tensors_clip_by_norm flag: a NaN or infinite total norm fails with
 *  GCK_ERR_NONFINITE and no tensor is touched (torch's error_if_nonfinite). */
#define GCK_CLIP_ERROR_IF_NONFINITE 1u

/** What gck_tensors_clip_by_norm / gck_tensors_clip_with_norm found and did. */
typedef struct gck_clip_info {
    double total_norm; /**< the p-norm of all tensors before clipping (as gck_tensors_norm) */
    double coef;       /**< min(1, max_norm / (total_norm + eps)), NaN when that quotient is NaN
                            (a NaN total_norm, or 0/0, Inf/Inf); the factor applied when clipped */
    int clipped;       /**< 1 when the tensors were scaled by coef, 0 when left as they were */
} gck_clip_info;

/**
 * Sums of squares of every tensor in one call.
 *
 * per_tensor[i] (optional, count entries) receives exactly gck_sumsq_f32,
 * _f64, _bf16 or _f16 of tensor i; *total (optional) receives their sum in list
 * order, left to right: ((0 + s_0) + s_1) + ... (which, for F64 tensors, may
 * overflow to +Inf like gck_sumsq_f64; gck_tensors_norm never does).
 *
 * Ownership: reads the tensors; writes per_tensor and *total; keeps no reference.
 * Errors: see the common rules; per_tensor and total may both be NULL.
 * Thread-safety: see the common rules.
 */
GCK_API gck_status gck_tensors_sumsq(const gck_tensor_list *t, double *per_tensor, double *total);

/**
 * p-norms of every tensor and of all of them together, in one call (p as in
 * gck_pnorm_f64: 1, 2, INFINITY or any finite p > 0; PyTorch's norm_type).
 *
 * per_tensor[i] (optional) receives exactly gck_pnorm_f32/_f64/_bf16/_f16
 * (tensor i, p) (for p = 2: gck_l2norm_*). *total receives the p-norm of the tensors'
 * concatenation, combined from per-tensor results in list order:
 *   p = 2:   sqrt(((0 + s_0) + s_1) + ...) of the per-tensor sums of squares,
 *            except when that sum overflows or underflows while every norm
 *            is finite: then m * sqrt(sum (norm_i / m)^2), m the largest
 *            per-tensor norm (never a spurious Inf or 0);
 *   p = 1:   ((0 + n_0) + n_1) + ... of the per-tensor norms;
 *   p = Inf: the largest per-tensor norm;
 *   other p: m * pow(sum (n_i / m)^p, 1/p), m the largest per-tensor norm
 *            (PyTorch's norm of the per-tensor norms), with the kernels'
 *            reference pow (SLEEF's), not libm's, so it is the same
 *            wherever gck_pnorm_f64 is (every CPU with FMA, see kernels.h).
 * A NaN anywhere gives a NaN total; count 0 gives 0. p <= 0 or NaN is
 * GCK_ERR_INVALID_ARGUMENT.
 *
 * Ownership: reads the tensors; writes per_tensor and *total; keeps no reference.
 * Errors: see the common rules; total may not be NULL.
 * Thread-safety: see the common rules.
 */
GCK_API gck_status gck_tensors_norm(const gck_tensor_list *t, double p, double *per_tensor, double *total);

/**
 * Clips the tensors in place by their total p-norm, as PyTorch's
 * torch.nn.utils.clip_grad_norm_: total = gck_tensors_norm(t, p), coef =
 * max_norm / (total + eps), and every tensor is multiplied by coef (F64:
 * x * coef; F32: x * (float)coef; BF16 / F16: gck_scale_bf16 / _f16 with
 * (float)coef) when coef < 1 or coef is NaN (a NaN
 * total, as in torch, makes every element NaN unless
 * GCK_CLIP_ERROR_IF_NONFINITE is set); otherwise nothing is written. Pass
 * eps = GCK_CLIP_EPS_DEFAULT for torch's behaviour.
 *
 * flags: 0 or GCK_CLIP_ERROR_IF_NONFINITE (then a NaN or infinite total is
 * GCK_ERR_NONFINITE, *info still receives total_norm and coef with clipped
 * = 0, and no tensor is touched). The scaling pass (one read and write of
 * every tensor) runs only when clipping triggers. An infinite total gives
 * coef = 0, so finite elements become 0 and infinite ones NaN, as in torch.
 *
 * Ownership: reads and may write the tensors; writes *info (optional); keeps no reference.
 * Errors: see the common rules; GCK_ERR_INVALID_ARGUMENT for max_norm NaN
 *         or < 0, eps NaN or < 0, p as in gck_tensors_norm, unknown flags;
 *         GCK_ERR_NONFINITE as above.
 * Thread-safety: see the common rules.
 */
GCK_API gck_status gck_tensors_clip_by_norm(const gck_tensor_list *t, double max_norm, double p, double eps,
                                            unsigned flags, gck_clip_info *info);

/**
 * The clipping step of gck_tensors_clip_by_norm with a total norm the caller
 * already has (PyTorch's clip_grads_with_norm_): coef = max_norm /
 * (total_norm + eps), and every tensor is multiplied by coef exactly as
 * gck_tensors_clip_by_norm does when coef < 1 or NaN; otherwise nothing is
 * written. With total_norm from gck_tensors_norm(t, p) the two calls give
 * the same bits and the same *info as gck_tensors_clip_by_norm(t, max_norm,
 * p, ...), one read pass fewer when the norm is known anyway; for F32 lists
 * sqrt of gck_tensors_div_sumsq's *total is that norm for p = 2 (so a mean,
 * the norm and the clip take two passes). flags and *info as in
 * gck_tensors_clip_by_norm (GCK_CLIP_ERROR_IF_NONFINITE tests total_norm).
 *
 * Ownership: reads and may write the tensors; writes *info (optional); keeps no reference.
 * Errors: see the common rules; GCK_ERR_INVALID_ARGUMENT for max_norm or eps
 *         as in gck_tensors_clip_by_norm, total_norm < 0, unknown flags
 *         (a NaN total_norm is allowed: it makes every element NaN, as in
 *         torch, unless GCK_CLIP_ERROR_IF_NONFINITE is set);
 *         GCK_ERR_NONFINITE as in gck_tensors_clip_by_norm.
 * Thread-safety: see the common rules.
 */
GCK_API gck_status gck_tensors_clip_with_norm(const gck_tensor_list *t, double max_norm, double total_norm,
                                              double eps, unsigned flags, gck_clip_info *info);

/**
 * acc_i[j] = acc_i[j] + x_i[j] for every tensor i: micro-batch gradients
 * accumulated into the trainer's own buffers. The element operation is the
 * single kernel's for the pair of dtypes: gck_add_f32 (F32 += F32),
 * gck_add_f64 (F64 += F64), gck_add_f32_to_f64 (F64 += F32),
 * gck_add_f64_to_f32 (F32 += F64), gck_add_bf16_to_f32 / _f64 and
 * gck_add_f16_to_f32 / _f64 (F32 or F64 += BF16 or F16; a 16-bit acc is
 * GCK_ERR_UNSUPPORTED).
 *
 * Ownership: writes acc's tensors, reads x's; keeps no reference.
 * Errors: see the common rules (counts and lengths must match).
 * Thread-safety: see the common rules.
 */
GCK_API gck_status gck_tensors_add(const gck_tensor_list *acc, const gck_tensor_list *x);

/**
 * acc_i[j] = acc_i[j] + (x_i[j] * w) (two roundings, no FMA) for every
 * tensor i, with the single kernels gck_axpy_f32/_f64/_f32_to_f64/_f64_to_f32
 * and gck_axpy_bf16/_f16_to_f32/_f64 (w rounded to float for an F32
 * accumulator; x may be BF16 or F16, acc F32 or F64 only).
 *
 * Ownership: writes acc's tensors, reads x's; keeps no reference.
 * Errors: see the common rules.  Thread-safety: see the common rules.
 */
GCK_API gck_status gck_tensors_axpy(const gck_tensor_list *acc, double w, const gck_tensor_list *x);

/**
 * dst_i[j] = 0 + (x_i[j] * w) for every tensor i without reading dst: the
 * first term of an accumulation (gck_axpy_init_*; with w = 1 a copy that
 * turns -0 into +0, as accumulating into a zeroed buffer would). x may be
 * BF16 or F16 (widened exactly), dst F32 or F64 only.
 *
 * Ownership: writes dst's tensors, reads x's; keeps no reference.
 * Errors: see the common rules.  Thread-safety: see the common rules.
 */
GCK_API gck_status gck_tensors_axpy_init(const gck_tensor_list *dst, double w, const gck_tensor_list *x);

/**
 * t_i[j] = t_i[j] * s for every tensor i (gck_scale_f64 with s, gck_scale_f32
 * with (float)s, gck_scale_bf16 / _f16 with (float)s: PyTorch's mul_ of a
 * 16-bit tensor by an f32 scalar).
 *
 * Ownership: writes the tensors; keeps no reference.
 * Errors: see the common rules.  Thread-safety: see the common rules.
 */
GCK_API gck_status gck_tensors_scale(const gck_tensor_list *t, double s);

/**
 * Finishes a mean and measures it in one pass: t_i[j] = t_i[j] / d for every
 * tensor i (a correctly rounded division; F32 divides by (float)d), then
 * per_tensor[i] (optional) receives the sum of squares of the stored values,
 * exactly gck_sumsq_* of the result, and *total (optional) their
 * left-to-right sum in list order, as gck_tensors_sumsq. (gck_div_sumsq_*
 * per tensor.) For a list of F32 tensors sqrt(*total) is exactly the p = 2
 * total of gck_tensors_norm of the result (their squares can neither
 * overflow nor underflow in f64), ready for gck_tensors_clip_with_norm.
 *
 * Ownership: writes the tensors, per_tensor and *total; keeps no reference.
 * Errors: see the common rules; a BF16 or F16 tensor is GCK_ERR_UNSUPPORTED
 *         (F32 and F64 only).  Thread-safety: see the common rules.
 */
GCK_API gck_status gck_tensors_div_sumsq(const gck_tensor_list *t, double d, double *per_tensor, double *total);

/**
 * Adds the last micro-batch and finishes the mean in one pass over memory:
 * acc_i += w * x_i (as gck_tensors_axpy), then acc_i /= d with the sums of
 * squares of the result (as gck_tensors_div_sumsq), done block by block so
 * that each block is divided and measured while it is still in cache. The
 * values, per_tensor[i] and *total are bit for bit those of the two calls
 * made one after the other, for any thread count; the trainer saves the
 * read and write of the whole gradient that the second call would make.
 * x may be acc itself (the same buffers, as gck_tensors_axpy allows); acc
 * is F32 or F64, x any of the four (16-bit micro-batch gradients into f32
 * master buffers, as gck_tensors_axpy).
 *
 * Ownership: writes the acc tensors, per_tensor and *total; keeps no reference.
 * Errors: as gck_tensors_axpy (the acc/x pair rules); nothing is written on
 *         error.  Thread-safety: see the common rules.
 */
GCK_API gck_status gck_tensors_axpy_div_sumsq(const gck_tensor_list *acc, double w, const gck_tensor_list *x, double d,
                                              double *per_tensor, double *total);

#ifdef __cplusplus
}
#endif
#endif /* GRADCKPT_TENSORS_H */
