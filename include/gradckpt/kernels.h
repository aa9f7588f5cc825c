/* gradckpt/kernels.h - the numeric kernels: reductions, elementwise updates, byte planes, hashing. */
#ifndef GRADCKPT_KERNELS_H
#define GRADCKPT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/export.h>
#include <gradckpt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Common rules for every kernel below.
 *
 * - Pure functions: they cannot fail, check nothing, allocate nothing, and
 *   keep no reference to their arguments (each states its preconditions;
 *   calls that break them are undefined behaviour, as for memcpy). n may be 0. Pointers need no alignment and
 *   may be NULL only when n is 0 (passing NULL with n > 0 is undefined
 *   behaviour, as for memcpy). Outputs may not overlap inputs unless stated.
 * - Bit-reproducible: for the same input every ISA (scalar, AVX2, AVX-512,
 *   NEON) and every OpenMP thread count returns the same bits. The order of
 *   operations is fixed by the scalar reference (kernels/scalar.c): 64 f64
 *   lane accumulators per block of 8192 elements, a fixed lane-folding tree,
 *   and a fixed pairwise tree over blocks. NaN payloads are not part of this
 *   promise: a NaN result is a NaN everywhere, its payload bits may differ.
 * - Reductions accumulate in f64 with a separate rounding for each multiply
 *   and add (no fused multiply-add); f32 inputs are widened exactly.
 * - Elementwise kernels round once per operation written in their comment,
 *   exactly as the plain C expression compiled with -ffp-contract=off.
 * - Non-finite values propagate; nothing traps.
 * - Flush-to-zero / denormals-are-zero. A process may set them (programs
 *   linked with -Ofast or -ffast-math do at startup: MXCSR.FTZ|DAZ on x86,
 *   FPCR.FZ on AArch64). The kernels neither set nor clear the mode; they
 *   compute under it, and then:
 *   - denormal inputs read as zero wherever arithmetic touches them: they
 *     add nothing to sums, sums of squares and norms (an array of denormals
 *     has norm 0; the rescaled pass of gck_l2norm_f64 cannot recover them),
 *     max |x| treats them as 0, an f32 denormal widens to 0, and
 *     acc + x with a denormal x gives acc (a zero or denormal acc gives +0);
 *   - results that would be denormal become zero with their sign: the
 *     elementwise results, the fused kernels' stored values, f64 -> f32
 *     roundings, and terms of reductions (squares of |x| < 2^-511);
 *   - the byte-plane functions and gck_fnv1a64 do no floating-point
 *     arithmetic and are unaffected.
 *   Bit-identity still holds: every ISA and OpenMP thread count gives the
 *   same bits under the mode (tests/test_kernels_ftz.c), because every ISA
 *   performs the same IEEE operations in the same order and scalar and
 *   vector instructions obey the same control bits. The mode is per
 *   thread, though: set it before the first OpenMP region (as -Ofast's
 *   startup code does; threads created later inherit it) or in every
 *   thread. Set on the calling thread only, after OpenMP's threads exist,
 *   it is missing on the worker threads, and calls of GCK_PARALLEL_MIN
 *   elements or more then mix the two modes and depend on the thread count.
 * - Arrays of GCK_PARALLEL_MIN elements or more are split into fixed blocks
 *   run on OpenMP threads (when built with OpenMP); the result is the same.
 * - In a process forked from one that loaded the library (multiprocessing's
 *   fork, a DataLoader worker), every call of the library runs on the calling
 *   thread alone, with the same bits: GCC's libgomp cannot start threads in
 *   such a child once the parent has used them, and a call there would hang.
 *
 * Thread-safety: every kernel is safe to call concurrently from any number of
 * threads on disjoint outputs.
 */

/** Arrays at least this long run on OpenMP threads (64 Ki elements: a
 *  fork/join costs a few microseconds, 256 KiB of f32 take ~10 us). */
#define GCK_PARALLEL_MIN ((size_t)1 << 16)

/** FNV-1a 64 offset basis: the starting value of a gck_fnv1a64 chain. */
#define GCK_FNV1A64_INIT UINT64_C(14695981039346656037)

/* ---- reductions (f64 accumulation) ---------------------------------------- */

/**
 * Sum of squares of x[0..n): sum x[i]*x[i]. Returns +0.0 for n == 0.
 *
 * Overflows to +Inf when the true sum exceeds DBL_MAX (use gck_l2norm_f64
 * for a norm that never does). A NaN anywhere gives NaN; an Inf gives +Inf.
 *
 * Ownership: reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API double gck_sumsq_f64(const double *x, size_t n);

/**
 * Sum of squares of the f32 array x[0..n), each element widened to f64 (the
 * squares are exact) and accumulated in f64. Cannot overflow for finite x.
 *
 * Ownership: reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API double gck_sumsq_f32(const float *x, size_t n);

/**
 * Euclidean norm sqrt(sum x[i]^2) of x[0..n), never overflowing or
 * underflowing for finite input: when the plain sum of squares overflows or
 * loses precision to underflow, a second pass over x scaled by a power of two
 * (exact) is used, as LAPACK's dnrm2 does. Within 2 ulp of the correctly
 * rounded norm; +Inf only when the true norm exceeds DBL_MAX, 0 only when
 * every element is zero. NaN in, NaN out; Inf (and no NaN) in, +Inf out.
 *
 * Ownership: reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API double gck_l2norm_f64(const double *x, size_t n);

/**
 * Euclidean norm of an f32 array, computed and returned in f64 (the f64 sum
 * of f32 squares cannot overflow or underflow, so one pass suffices).
 *
 * Ownership: reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API double gck_l2norm_f32(const float *x, size_t n);

/**
 * Squared distance sum (a[i] - b[i])^2 over [0..n). The difference is
 * rounded to f64, then squared and added. a and b may alias each other.
 *
 * Ownership: reads a and b; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API double gck_dist2_f64(const double *a, const double *b, size_t n);

/**
 * Squared distance of two f32 arrays: d = (double)a[i] - (double)b[i]
 * rounded to f64, then d*d accumulated in f64. a and b may alias.
 *
 * Ownership: reads a and b; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API double gck_dist2_f32(const float *a, const float *b, size_t n);

/**
 * p-norm (sum |x[i]|^p)^(1/p) of x[0..n), PyTorch's norm_type: p = 1 (sum of
 * |x|), 2 (gck_l2norm_f64), INFINITY (max |x|) and any finite p > 0.
 * Returns NaN for p <= 0 or p NaN, and +0.0 for n == 0. NaN in, NaN out.
 *
 * General p computes max |x| first and sums (|x| * s)^p with s a power of two
 * bringing the largest element to [1, 2) (for p > 900: s = 1/max), so no term
 * overflows; the powers come from SLEEF's 1-ulp vector pow (FMA variants).
 * Accuracy against MPFR (tests/test_kernels_accuracy.c): p = 1 is a
 * sum within the same bound as gck_sumsq_f64; general p is within 4 ulp for
 * p >= 1 and 4/p ulp for p < 1. Bit-identical across ISAs and thread counts
 * on any CPU with FMA (SLEEF's FMA variants agree across x86-64 and AArch64);
 * on an x86-64 CPU without FMA, where only the scalar path runs, general p
 * uses SLEEF's non-FMA pow and may differ from an FMA machine by 1 ulp.
 *
 * Ownership: reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API double gck_pnorm_f64(const double *x, size_t n, double p);
/** f32 version of gck_pnorm_f64: elements widened to f64, result in f64. */
GCK_API double gck_pnorm_f32(const float *x, size_t n, double p);

/* ---- fused update + sum of squares (one pass over memory) ----------------- */

/**
 * dst[i] = x[i] / d for i in [0..n), then returns the sum of squares of the
 * stored values: exactly gck_sumsq_f64(dst, n) afterwards, in one pass over
 * memory. Rounded as the true division (when d is a power of two whose
 * reciprocal is a normal number it multiplies by 1/d instead, which rounds
 * identically, faster). dst may equal x (in place) but may not partially
 * overlap it.
 *
 * Ownership: writes dst, reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API double gck_div_sumsq_f64(double *dst, const double *x, double d, size_t n);
/** f32 version: dst[i] = x[i] / d in float; returns gck_sumsq_f32 of dst. */
GCK_API double gck_div_sumsq_f32(float *dst, const float *x, float d, size_t n);

/**
 * dst[i] = x[i] * s for i in [0..n), then returns the sum of squares of the
 * stored values: exactly gck_sumsq_f64(dst, n) afterwards, in one pass.
 * With s = 1 this is a copy that also yields the sum of squares. dst may
 * equal x but may not partially overlap it.
 *
 * Ownership: writes dst, reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API double gck_scale_sumsq_f64(double *dst, const double *x, double s, size_t n);
/** f32 version: dst[i] = x[i] * s in float; returns gck_sumsq_f32 of dst. */
GCK_API double gck_scale_sumsq_f32(float *dst, const float *x, float s, size_t n);

/* ---- elementwise updates --------------------------------------------------- */

/**
 * acc[i] = acc[i] + x[i] for i in [0..n). x may equal acc exactly (doubling)
 * but may not partially overlap it.
 *
 * Ownership: writes acc, reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API void gck_add_f64(double *acc, const double *x, size_t n);
/** f32 version of gck_add_f64, computed in float. */
GCK_API void gck_add_f32(float *acc, const float *x, size_t n);

/**
 * acc[i] = acc[i] + (w * x[i]): two roundings, never a fused multiply-add,
 * so the result equals the plain C expression. x may equal acc exactly.
 *
 * Ownership: writes acc, reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API void gck_axpy_f64(double *acc, double w, const double *x, size_t n);
/** f32 version of gck_axpy_f64, computed in float. */
GCK_API void gck_axpy_f32(float *acc, float w, const float *x, size_t n);

/**
 * x[i] = x[i] * s for i in [0..n).
 *
 * Ownership: writes x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API void gck_scale_f64(double *x, double s, size_t n);
/** f32 version of gck_scale_f64, computed in float. */
GCK_API void gck_scale_f32(float *x, float s, size_t n);

/**
 * Mixed precision accumulation into f64: acc[i] = acc[i] + (double)x[i].
 * (The widening is exact, so this is one rounding.)
 *
 * Ownership: writes acc, reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API void gck_add_f32_to_f64(double *acc, const float *x, size_t n);
/** acc[i] = acc[i] + ((double)x[i] * w): two roundings, no FMA. */
GCK_API void gck_axpy_f32_to_f64(double *acc, double w, const float *x, size_t n);
/**
 * Mixed precision accumulation into f32: acc[i] = acc[i] + (float)x[i], the
 * input rounded to float first (round to nearest even).
 *
 * Ownership: writes acc, reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API void gck_add_f64_to_f32(float *acc, const double *x, size_t n);
/** acc[i] = acc[i] + ((float)x[i] * w), all in float: three roundings. */
GCK_API void gck_axpy_f64_to_f32(float *acc, float w, const double *x, size_t n);

/**
 * The first term of an accumulation: dst[i] = 0 + (x[i] * w), exactly what
 * gck_axpy_* gives into a zeroed buffer (-0 becomes +0, so sums of zeros
 * keep the sign the reference's "0 + t1 + t2 ..." gives), without reading
 * dst. With w = 1 it is 0 + x. dst and x may not overlap.
 *
 * Ownership: writes dst, reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API void gck_axpy_init_f64(double *dst, double w, const double *x, size_t n);
/** f32: dst[i] = 0 + (x[i] * w) in float. */
GCK_API void gck_axpy_init_f32(float *dst, float w, const float *x, size_t n);
/** dst[i] = 0 + ((double)x[i] * w). */
GCK_API void gck_axpy_init_f32_to_f64(double *dst, double w, const float *x, size_t n);
/** dst[i] = 0 + ((float)x[i] * w), all in float. */
GCK_API void gck_axpy_init_f64_to_f32(float *dst, float w, const double *x, size_t n);

/**
 * gck_axpy_init_f64 with streaming (non-temporal) stores where the ISA has
 * them (x86: AVX2, AVX-512; scalar and NEON store as usual): the same
 * values, written past the caches without first reading dst's lines. For a
 * buffer that will not be read again before it would have left the caches
 * (a pass over more data than the last-level cache holds); slower when it
 * is read again soon. The stores are complete when the call returns.
 *
 * Ownership, errors, thread-safety: as gck_axpy_init_f64.
 */
GCK_API void gck_axpy_init_nt_f64(double *dst, double w, const double *x, size_t n);
/** f32: gck_axpy_init_f32 with streaming stores (see gck_axpy_init_nt_f64). */
GCK_API void gck_axpy_init_nt_f32(float *dst, float w, const float *x, size_t n);

/**
 * dst[i] = x[i] * w: gck_scale_f64 of a copy of x, in one pass, bit for bit
 * (-0 stays -0 and NaN stays NaN, where gck_axpy_init_f64's 0 + x * w
 * turns -0 into +0). For writing scaled values into another buffer, as a
 * clip into the caller's gradient buffer does, without reading dst first
 * or computing anything else. dst and x may not overlap.
 *
 * Ownership: writes dst, reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API void gck_scale_into_f64(double *dst, double w, const double *x, size_t n);
/** f32: dst[i] = x[i] * w in float (gck_scale_f32 of a copy). */
GCK_API void gck_scale_into_f32(float *dst, float w, const float *x, size_t n);
/** gck_scale_into_f64 with streaming stores, as gck_axpy_init_nt_f64 is gck_axpy_init_f64's. */
GCK_API void gck_scale_into_nt_f64(double *dst, double w, const double *x, size_t n);
/** f32: gck_scale_into_f32 with streaming stores (see gck_axpy_init_nt_f64). */
GCK_API void gck_scale_into_nt_f32(float *dst, float w, const float *x, size_t n);

/**
 * acc[i] = acc[i] + (xs[0][i] + (xs[1][i] + ... + (xs[m-2][i] + xs[m-1][i]))):
 * m arrays folded from the right, then added to acc, in one pass over the
 * m + 1 arrays (one rounding per addition, in that order; m = 1 is
 * gck_add_f64, m = 0 leaves acc as it is). For summing a fixed tree of
 * partial sums without writing each intermediate sum to memory: the
 * checkpointer's tree order (GCK_REDUCE_TREE) merges the levels a
 * micro-batch closes with it. An xs[q] may equal another or acc exactly but
 * may not partially overlap acc.
 *
 * Ownership: writes acc, reads xs and the m arrays; keeps no reference.
 * Errors: none.  Thread-safety: see the common rules above.
 */
GCK_API void gck_add_rfold_f64(double *acc, const double *const *xs, size_t m, size_t n);
/** f32 version of gck_add_rfold_f64, computed in float. */
GCK_API void gck_add_rfold_f32(float *acc, const float *const *xs, size_t m, size_t n);

/* ---- 2-byte floats: bf16 and f16 ------------------------------------------
 *
 * Arrays of bf16 (bfloat16: 1 sign, 8 exponent, 7 mantissa bits) or f16
 * (IEEE binary16: 1, 5, 10) are passed as uint16_t, each element the value's
 * bits (native byte order, as torch and NumPy hold them). Every element is
 * first widened exactly to its f32 value:
 *   - bf16: the 16 bits become the high half of the float (a signalling NaN
 *     stays signalling, as in torch);
 *   - f16: the IEEE conversion, denormals exact, a NaN kept NaN (quiet).
 * The kernels then treat that f32 value as the f32 kernels treat a float, so
 * each equals its f32 kernel on the widened array bit for bit:
 * gck_sumsq_bf16(x, n) == gck_sumsq_f32(widened x, n), and so on. They read
 * half the bytes of the f32 kernels. Under flush-to-zero / denormals-are-zero
 * (common rules) a widened f32 denormal (bf16 denormals; no f16 value is an
 * f32 denormal) reads as zero wherever arithmetic touches it, as for f32.
 * No instruction that flushes denormals regardless of the mode (AVX-512
 * BF16's VCVTNEPS2BF16, VDPBF16PS) is used: the conversions below are
 * integer rounding on the bits (bf16) and F16C's VCVTPS2PH / VCVTPH2PS or
 * AArch64's FCVTN / FCVTL (f16), which round to nearest even by their
 * immediate, not by MXCSR, and keep denormals. */

/** gck_sumsq_f32 of the widened array: sum of x[i]^2 in f64. */
GCK_API double gck_sumsq_bf16(const uint16_t *x, size_t n);
/** f16 version of gck_sumsq_bf16. */
GCK_API double gck_sumsq_f16(const uint16_t *x, size_t n);
/** sqrt(gck_sumsq_bf16(x, n)), as gck_l2norm_f32 (the squares cannot overflow). */
GCK_API double gck_l2norm_bf16(const uint16_t *x, size_t n);
/** f16 version of gck_l2norm_bf16. */
GCK_API double gck_l2norm_f16(const uint16_t *x, size_t n);
/** gck_dist2_f32 of the widened arrays: sum of (a[i] - b[i])^2, the difference in f64.
 * Speed depends on the data, never the result: the AVX-512 and AVX2 kernels
 * subtract in f32 where that is exact (checked per element; always so for
 * nearby snapshots) and square with one FMA, which rounds as the f64
 * multiply and add do on an exact difference; a block with an element where
 * it is not (magnitudes about 2^16 apart for bf16, 2^13 for f16; Inf, NaN)
 * continues widened, about 5 % slower than widening throughout. */
GCK_API double gck_dist2_bf16(const uint16_t *a, const uint16_t *b, size_t n);
/** f16 version of gck_dist2_bf16. */
GCK_API double gck_dist2_f16(const uint16_t *a, const uint16_t *b, size_t n);
/** gck_pnorm_f32 of the widened array (p = INFINITY: max |x|; NaN if any element is NaN). */
GCK_API double gck_pnorm_bf16(const uint16_t *x, size_t n, double p);
/** f16 version of gck_pnorm_bf16. */
GCK_API double gck_pnorm_f16(const uint16_t *x, size_t n, double p);

/**
 * Mixed precision accumulation of bf16 / f16 inputs (the micro-batch path):
 * acc[i] = acc[i] + x[i] and acc[i] = acc[i] + (w * x[i]) with x[i] widened
 * exactly, computed in the accumulator's type (one rounding per operation,
 * no FMA). Equal to gck_add_f32 / gck_axpy_f32 (or the _f32_to_f64 forms) of
 * the widened array.
 *
 * Ownership: writes acc, reads x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API void gck_add_bf16_to_f32(float *acc, const uint16_t *x, size_t n);
/** f16 input version of gck_add_bf16_to_f32. */
GCK_API void gck_add_f16_to_f32(float *acc, const uint16_t *x, size_t n);
/** acc[i] = acc[i] + x[i] in f64. */
GCK_API void gck_add_bf16_to_f64(double *acc, const uint16_t *x, size_t n);
/** f16 input version of gck_add_bf16_to_f64. */
GCK_API void gck_add_f16_to_f64(double *acc, const uint16_t *x, size_t n);
/** acc[i] = acc[i] + (w * x[i]) in float: two roundings. */
GCK_API void gck_axpy_bf16_to_f32(float *acc, float w, const uint16_t *x, size_t n);
/** f16 input version of gck_axpy_bf16_to_f32. */
GCK_API void gck_axpy_f16_to_f32(float *acc, float w, const uint16_t *x, size_t n);
/** acc[i] = acc[i] + (w * x[i]) in f64: two roundings. */
GCK_API void gck_axpy_bf16_to_f64(double *acc, double w, const uint16_t *x, size_t n);
/** f16 input version of gck_axpy_bf16_to_f64. */
GCK_API void gck_axpy_f16_to_f64(double *acc, double w, const uint16_t *x, size_t n);
/** dst[i] = 0 + (w * x[i]) in float, without reading dst (see gck_axpy_init_f64). */
GCK_API void gck_axpy_init_bf16_to_f32(float *dst, float w, const uint16_t *x, size_t n);
/** f16 input version of gck_axpy_init_bf16_to_f32. */
GCK_API void gck_axpy_init_f16_to_f32(float *dst, float w, const uint16_t *x, size_t n);
/** dst[i] = 0 + (w * x[i]) in f64, without reading dst. */
GCK_API void gck_axpy_init_bf16_to_f64(double *dst, double w, const uint16_t *x, size_t n);
/** f16 input version of gck_axpy_init_bf16_to_f64. */
GCK_API void gck_axpy_init_f16_to_f64(double *dst, double w, const uint16_t *x, size_t n);

/**
 * In-place scale of a bf16 / f16 tensor as PyTorch's x.mul_(s) computes it:
 * x[i] = round(x[i] * s), the product of the widened value and s taken in
 * f32 (one rounding), then rounded to bf16 / f16 as gck_convert_f32_to_bf16
 * / _f16 round (a second rounding). This is what clipping a bf16 gradient
 * in torch does, bit for bit.
 *
 * Ownership: writes x; keeps no reference.  Errors: none.
 * Thread-safety: see the common rules above.
 */
GCK_API void gck_scale_bf16(uint16_t *x, float s, size_t n);
/** f16 version of gck_scale_bf16. */
GCK_API void gck_scale_f16(uint16_t *x, float s, size_t n);

/**
 * f32 -> bf16, rounding to nearest even on the bits: denormals round like
 * any value (both formats share the exponent range), a carry past the
 * largest finite bf16 gives Inf, +-Inf stay +-Inf, every NaN becomes 0xFFFF
 * (a quiet NaN; torch's vectorised conversion writes the same). Identical to
 * torch's x.to(torch.bfloat16) on every input (NaN payloads aside, as in the
 * common rules). Integer operations: no FPU mode changes the result.
 *
 * Ownership: writes dst, reads x; keeps no reference; they may not overlap.
 * Errors: none.  Thread-safety: see the common rules above.
 */
GCK_API void gck_convert_f32_to_bf16(uint16_t *dst, const float *x, size_t n);
/**
 * f32 -> f16, the IEEE conversion rounding to nearest even: |x| >= 65520
 * gives +-Inf, values below 2^-14 become f16 denormals (rounded in units of
 * 2^-24, below 2^-25 to +-0), a NaN keeps its sign and top payload bits and
 * becomes quiet. Identical to torch's .half() and NumPy's astype(float16).
 * f32 denormals give +-0 in any FPU mode.
 */
GCK_API void gck_convert_f32_to_f16(uint16_t *dst, const float *x, size_t n);
/** bf16 -> f32, exact (the widening every kernel above uses). */
GCK_API void gck_convert_bf16_to_f32(float *dst, const uint16_t *x, size_t n);
/** f16 -> f32, exact (the widening every kernel above uses). */
GCK_API void gck_convert_f16_to_f32(float *dst, const uint16_t *x, size_t n);

/* ---- byte planes (delta storage) ------------------------------------------- */

/**
 * Splits n elements of esz bytes (esz = 1, 2, 4 or 8) into esz byte planes of
 * n bytes each, XORed with a previous version b:
 *
 *     dst[k*n + i] = A[i*esz + k] ^ B[i*esz + k]    for k < esz, i < n,
 *
 * with A, B the bytes of a and b in memory order (the caller handles
 * endianness). b == NULL XORs with zero: a plain byte-plane shuffle. Grouping
 * byte k of every element together (and cancelling unchanged bytes against b)
 * makes the data far more compressible. dst receives n*esz bytes; the exact
 * inverse is gck_unshuffle_xor. Integer operations: every ISA writes the same
 * bytes. Runs on the calling thread only (no OpenMP split, whatever n; call
 * it from several threads on different tensors to parallelise). Streams at
 * memory bandwidth for large n.
 *
 * Ownership: writes dst[0..n*esz), reads a and b (n*esz bytes each); keeps
 *            no reference. No alignment is needed. a and b may alias each
 *            other (giving zeros).
 * Preconditions (as for every kernel, not checked): esz is 1, 2, 4 or 8;
 *            n*esz does not overflow size_t; dst and a are non-NULL when
 *            n > 0; dst overlaps neither a nor b. n == 0 touches nothing.
 * Thread-safety: safe to call concurrently on disjoint outputs.
 */
GCK_API void gck_xor_shuffle(uint8_t *dst, const void *a, const void *b, size_t n, size_t esz);

/**
 * The inverse of gck_xor_shuffle: rebuilds n elements of esz bytes from esz
 * byte planes of n bytes, XORing with b again:
 *
 *     D[i*esz + k] = src[k*n + i] ^ B[i*esz + k]    for k < esz, i < n,
 *
 * with D, B the bytes of dst and b (b == NULL: no XOR). So
 * gck_unshuffle_xor(x, planes, b, n, esz) after
 * gck_xor_shuffle(planes, a, b, n, esz) gives x == a byte for byte. Runs on
 * the calling thread only, at memory bandwidth for large n.
 *
 * Ownership: writes dst[0..n*esz) bytes, reads src and b (n*esz bytes each);
 *            keeps no reference. No alignment is needed.
 * Preconditions (not checked): esz is 1, 2, 4 or 8; n*esz does not overflow
 *            size_t; dst and src are non-NULL when n > 0; dst overlaps
 *            neither src nor b. n == 0 touches nothing.
 * Thread-safety: safe to call concurrently on disjoint outputs.
 */
GCK_API void gck_unshuffle_xor(void *dst, const uint8_t *src, const void *b, size_t n, size_t esz);

/**
 * gck_unshuffle_xor with each byte plane at its own address: plane k is the
 * n bytes at planes[k], so
 *
 *     D[i*esz + k] = planes[k][i] ^ B[i*esz + k]    for k < esz, i < n.
 *
 * A reader whose planes live in different buffers (some still in the file
 * it read, some decoded into scratch) rebuilds the values without first
 * copying the planes next to each other. Same bytes on every ISA, same
 * speed as gck_unshuffle_xor.
 *
 * Ownership: writes dst[0..n*esz), reads planes[0..esz) (n bytes each) and
 *            b; keeps no reference. No alignment is needed.
 * Preconditions (not checked): esz is 1, 2, 4 or 8; planes holds esz
 *            non-NULL pointers when n > 0; dst overlaps no plane and not b.
 *            Planes may overlap each other. n == 0 touches nothing.
 * Thread-safety: safe to call concurrently on disjoint outputs.
 */
GCK_API void gck_unshuffle_xor_planes(void *dst, const uint8_t *const *planes, const void *b, size_t n, size_t esz);

/**
 * gck_xor_shuffle with each element rotated left by one bit after the XOR,
 * the element read as an esz-byte little-endian integer:
 *
 *     X[k] = A[i*esz + k] ^ B[i*esz + k]
 *     dst[k*n + i] = (X[k] << 1 | X[(k + esz - 1) % esz] >> 7) & 0xFF
 *
 * For IEEE floats this moves the sign bit to the bottom of the lowest byte
 * plane and puts the whole exponent in the top plane (f32, bf16), where it
 * is coded on its own: for a trained model's values the planes' order-0
 * entropy drops (gradckpt's store uses it for coded full versions; ZipNN
 * does the same for bf16). Same bytes on every ISA; as fast as
 * gck_xor_shuffle from 1 MiB of data on (at 256 KiB of f32, AVX-512: 10 %
 * slower, the rotation's extra operations); the exact inverse is
 * gck_unshuffle_xor_rot_planes.
 * Ownership, preconditions and thread-safety as gck_xor_shuffle.
 */
GCK_API void gck_xor_shuffle_rot(uint8_t *dst, const void *a, const void *b, size_t n, size_t esz);

/**
 * The inverse of gck_xor_shuffle_rot, each plane at its own address: the
 * planes' element rotated right by one bit, then XORed with b:
 *
 *     R[k] = planes[k][i]
 *     D[i*esz + k] = (R[k] >> 1 | R[(k + 1) % esz] << 7) & 0xFF ^ B[i*esz + k]
 *
 * Same bytes on every ISA; as fast as gck_unshuffle_xor_planes from 1 MiB
 * of data on (at 256 KiB of f32, AVX-512: 25 % slower). Ownership,
 * preconditions and thread-safety as gck_unshuffle_xor_planes.
 */
GCK_API void gck_unshuffle_xor_rot_planes(void *dst, const uint8_t *const *planes, const void *b, size_t n,
                                          size_t esz);

/*
 * Splits n bytes x into a bitmap and the bytes that differ from `fill`:
 *
 *     bit i of bits (bit i % 8 of bits[i / 8], least significant first)
 *         = x[i] != fill,                     for i < n;
 *     vals[0..count) = the x[i] != fill, in order;   returns count.
 *
 * The bits of the last bitmap byte past n are 0. A byte plane that is mostly
 * one value (an XOR delta's exponent bytes) is then entropy-coded as the
 * bitmap and the few values: a third as many symbols for the same entropy.
 * Same bytes on every ISA (integer operations only).
 *
 * Ownership: writes bits[0..(n + 7) / 8) and vals[0..n): the bytes of vals
 * past the returned count are unspecified. Reads x[0..n).
 * Preconditions (not checked): bits, vals and x do not overlap.
 * n == 0 touches nothing and returns 0.
 * Thread-safety: safe to call concurrently on disjoint outputs.
 */
GCK_API size_t gck_sparse_split(uint8_t *bits, uint8_t *vals, const uint8_t *x, size_t n, uint8_t fill);

/*
 * The inverse of gck_sparse_split: dst[i] = the next of vals where bit i of
 * bits is set, else fill, for i < n. gck_sparse_merge(y, bits, vals, count,
 * n, fill) after count = gck_sparse_split(bits, vals, x, n, fill) gives
 * y == x. Same bytes on every ISA.
 *
 * Ownership: writes dst[0..n); reads bits[0..(n + 7) / 8) and vals[0..nvals).
 * Preconditions (not checked): nvals is the number of bits set among the
 * first n of bits (a decoder checks it against the values it decoded: the
 * kernel reads vals[0..nvals) and no further, but a wrong nvals gives wrong
 * bytes); dst overlaps neither input. n == 0 touches nothing.
 * Thread-safety: safe to call concurrently on disjoint outputs.
 */
GCK_API void gck_sparse_merge(uint8_t *dst, const uint8_t *bits, const uint8_t *vals, size_t nvals, size_t n,
                              uint8_t fill);

/* ---- hashing --------------------------------------------------------------- */

/**
 * FNV-1a 64 over the bytes data[0..len), continuing from h: for each byte,
 * h = (h ^ byte) * 1099511628211 (mod 2^64). Start a chain with
 * h = GCK_FNV1A64_INIT; feeding a buffer in pieces gives the same value as
 * feeding it at once. Byte-serial by definition (about 1 GB/s).
 *
 * Ownership: reads data; keeps no reference.  Errors: none.
 * Thread-safety: safe from any thread.
 */
GCK_API uint64_t gck_fnv1a64(const void *data, size_t len, uint64_t h);

#ifdef __cplusplus
}
#endif
#endif /* GRADCKPT_KERNELS_H */
