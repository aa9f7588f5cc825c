/* kernels/elementwise.h - the elementwise kernels and amax, written once over an ISA's ops header.
 *
 * Every ISA file (scalar.c, avx2.c, avx512.c, neon.c) includes its ops
 * header (ops_<isa>.h) and then this file, so each instance below is
 * compiled with that file's flags and becomes its gck_<slot>_<isa>. Only
 * macros and static functions, like every header an ISA file includes.
 *
 * The ops header describes one "step" of a loop in two widths, and the
 * operations on the vectors of a step:
 *   GCK_W64, GCK_W32      width tokens: a step of as many elements as one
 *                         vector holds doubles (w64), or floats (w32); the
 *                         scalar header maps both to one element (w1)
 *   GCK_LANES_<w>         elements per step
 *   gck_<w>_<t>           the vector of one step's elements of type t
 *                         (f64, f32; bf16, f16: storage only) as computed
 *                         with or stored
 *   gck_<w>_load_<t>(p), gck_<w>_store_<t>(p, v)          a full step
 *   gck_<w>_load_tail_<t>(p, k), ..._store_tail_<t>(p, v, k)
 *                         the first k < lanes elements (loads give +0.0 in
 *                         the other lanes and read nothing there)
 *   gck_<w>_cvt_<s>_<t>(v)   type s to type t, as the C conversion rounds
 *                         (widening is exact; same type: unchanged)
 *   add, mul, set1, zero  one IEEE operation per lane
 *   abs, max, hmax        |v|; a lane max (exact); the largest lane
 *   gck_<w>_nan_<t>, nan_none, nan_pair(acc, a, b), nan_any(acc)
 *                         whether a NaN was seen in a or b, for ISAs whose
 *                         max drops NaNs (x86); no-ops where max keeps them
 *   GCK_EW_UNROLL         steps per main-loop iteration
 *   GCK_EW_TAILS          1 if a step has more than one element
 *
 * Storage and compute types are separate: an instance names the type of each
 * array and the type it computes in, and the loads and stores convert. A new
 * input type (bf16, f16) is a new load and conversion in each ops header and
 * a new line in the instance list at the end of this file, not a new loop.
 *
 * Each kernel is the C expression of its comment in kernel_list.h, one
 * rounding per operation (the build's -ffp-contract=off keeps a multiply
 * and an add apart), on every element independently: the step width, the
 * unrolling and the tail handling cannot change a bit.
 */
#ifndef GCK_ELEMENTWISE_H
#define GCK_ELEMENTWISE_H

#include <math.h>
#include <stddef.h>

#include "kernels_internal.h"

#if !defined(GCK_W64) || !defined(GCK_W32) || !defined(GCK_EW_UNROLL) || !defined(GCK_EW_TAILS)
#error "include the ISA's ops header (ops_<isa>.h) before elementwise.h"
#endif

/* ---- names of the ops: width token w, type tokens t, s ---------------------- */
#define GCK_OP_(w, op, t) gck_##w##_##op##_##t
#define GCK_OP(w, op, t) GCK_OP_(w, op, t)
#define GCK_V_(w, t) gck_##w##_##t
#define GCK_V(w, t) GCK_V_(w, t)
#define GCK_CVT_(w, s, t) gck_##w##_cvt_##s##_##t
#define GCK_CVT(w, s, t) GCK_CVT_(w, s, t)
#define GCK_STEP_LANES_(w) GCK_LANES_##w
#define GCK_STEP_LANES(w) GCK_STEP_LANES_(w)

/* Array p of storage type s, read as compute type c, or written from it; m is
 * the step kind: full (k ignored) or tail (the first k elements). */
#define GCK_LD_full(w, s, p, k) GCK_OP(w, load, s)(p)
#define GCK_LD_tail(w, s, p, k) GCK_OP(w, load_tail, s)(p, k)
#define GCK_ST_full(w, s, p, v, k) GCK_OP(w, store, s)(p, v)
#define GCK_ST_tail(w, s, p, v, k) GCK_OP(w, store_tail, s)(p, v, k)
#define GCK_LD(w, m, s, c, p, k) GCK_CVT(w, s, c)(GCK_LD_##m(w, s, p, k))
#define GCK_ST(w, m, s, c, p, v, k) GCK_ST_##m(w, s, p, GCK_CVT(w, c, s)(v), k)

#if GCK_EW_TAILS
#define GCK_EW_IF_TAILS(...) __VA_ARGS__
#else
#define GCK_EW_IF_TAILS(...)
#endif

/* Kernels whose step costs more than its memory traffic (the 2-byte scale and
 * amax, f32 -> bf16 rounding) prefetch x GCK_PREFETCH16_L1 bytes ahead, one
 * line per 64 bytes of an iteration: out of cache, their work kept the
 * hardware prefetcher (which stops at every 4 KiB page) from running far
 * enough ahead (64 Mi elements, an Intel core: scale_bf16 AVX2 4.2x, AVX-512
 * 2.0x, scale_f16 1.6-2.0x, convert_f32_to_bf16 1.26x, amax_bf16 1.4x).
 * The same prefetch slowed the memory-bound kernels (add_f32 in L2 by 13 %,
 * convert_f32_to_f16 by 21 %), which therefore pass PF = 0. PF = 2 adds the
 * reductions' second prefetch into L2 (kernels_internal.h): amax, which
 * writes nothing, went from 0.79-0.85 to 0.94-1.15 of ref_read_16 with it,
 * and the 2-byte scales take it too (64 Mi, Intel VM, alternating builds:
 * scale_bf16 AVX-512 18.8-20.5 -> 24.2-25.2 GB/s, AVX2 20.3-20.8 ->
 * 21.8-23.0; scale_f16 21-22 -> 23-34; in L2 within 2 %; an earlier
 * measurement had found no gain for them). convert_f32_to_bf16 stays at 1:
 * with 2 it ran 0-10 % slower. amax over f32 and f64, which only reads,
 * takes 1: 64 Mi 10-12 -> 13-14 GB/s on both ISAs, in L2 alike or faster
 * (with 2, 25 % slower in L2 on AVX-512). amax of bf16 / f16 on the words
 * (GCK_EW_AMAX16) does a read loop's work and takes 0, as the memory-bound
 * kernels (Zen 5 VM, 64 Mi, AVX-512, 2 alternating rounds: PF 2 19.1-19.5,
 * 1 21.4-21.5, 0 21.8-22.8 G elements/s, ref_read_16 21.2-23.6; in L2 0 and
 * 1 alike, 2 10 % slower).
 * The scalar build (one element per iteration) takes none: GCC vectorizes
 * its loop only without the call, and scale_bf16 ran 2-3x slower with it. */
#define GCK_EW_PREFETCH(PF, p, bytes)                                          \
    do {                                                                       \
        if ((PF) && (bytes) >= 32) {                                           \
            _Pragma("GCC unroll 8")                                            \
            for (size_t b_ = 0; b_ < (bytes); b_ += 64) {                      \
                gck_prefetch_l1((const char *)(p) + b_, 1, GCK_PREFETCH16_L1); \
                if ((PF) > 1)                                                  \
                    gck_prefetch_l2((const char *)(p) + b_, 1, GCK_PREFETCH16_L2); \
            }                                                                  \
        }                                                                      \
    } while (0)

/* Arrays of at least GCK_EW_SEG_MIN bytes, on ISAs that set GCK_EW_SEGS
 * (x86), in kernels whose two arrays have elements of one size: the loop
 * walks GCK_EW_SEGS consecutive 4 KiB segments at a time, one unrolled
 * group of steps from each in turn, so that as many pages stream at once.
 * The hardware prefetcher follows each 4 KiB page on its own and stops at
 * its end, and one sequential stream kept too few lines in flight for one
 * core to reach the memory's speed. Intel VM, 64 Mi elements, AVX-512,
 * sequential -> four pages at a time: scale_f32 21-23 -> 29-30 GB/s,
 * scale_f64 24 -> 27-30, axpy_init_nt_f32 17-18 -> 23-25 (a plain read of
 * the same bytes took 19.5-22 ms, this copy 23 ms, glibc's memcpy, which
 * copies four pages at a time too, 26-27 ms), add_f32 and axpy_f32 4-8 %
 * faster; 64 Ki and 1 Mi elements unchanged. On Zen 5 the same walk ran at
 * 0.65-0.77 of the plain order on both ISAs (16 Mi and 64 Mi elements:
 * scale_f32, add_f32, axpy_init_f32, the f64 ones, AVX2's widening ones),
 * which there matches the plain C loops; over 2-4 MiB arrays, which the
 * L3 holds, the walk still paid there (axpy_f64 and add_f64 at 256 Ki:
 * 32.6-34.3 us against 36.7-39.3 in order; at 1 Mi, 8 MiB, in order 1.24x
 * faster). So where page_streams is 1 (gck_cpu_page_streams) arrays of
 * GCK_EW_ORDER_MIN or more are walked in order.
 * Not taken: kernels that
 * prefetch (PF; f32 -> bf16 ran 2-4 % slower in segments) and those between
 * element sizes (f32 -> f16 10 % slower on both ISAs), except the widening
 * ones where the ops header sets GCK_EW_SEGS_WIDEN (AVX2: bf16/f16 -> f32
 * 12-25 % faster in segments, 10.1-12.0 -> 14.7-18.8 GB/s at 16 Mi; on
 * AVX-512 5 % slower). Each element's value is
 * its step's, so the order of the steps changes no bit. Only the segments'
 * full steps: i_ ends at the first element left. */
#ifdef GCK_EW_SEGS
#define GCK_EW_SEG_MIN ((size_t)2 << 20)
/* Where page_streams is 1, arrays from this size on are walked in order. */
#define GCK_EW_ORDER_MIN ((size_t)4 << 20)
/* elements per segment: 4 KiB of the wider array */
#define GCK_EW_SEG_ELEMS(A, X) (4096 / (sizeof(GCK_CT(A)) > sizeof(GCK_CT(X)) ? sizeof(GCK_CT(A)) : sizeof(GCK_CT(X))))
#define GCK_EW_IF_SEGS(...) __VA_ARGS__
#define GCK_EW_SEG_LOOP(W, STEP, A, X, C, PF)                                  \
    do {                                                                       \
        const size_t s_ = GCK_EW_SEG_ELEMS(A, X);                              \
        _Static_assert(GCK_EW_SEG_ELEMS(A, X) % (GCK_EW_UNROLL * GCK_STEP_LANES(W)) == 0, \
                       "a segment is whole unrolled groups");                  \
        if ((PF) || n * sizeof(GCK_CT(X)) < GCK_EW_SEG_MIN ||                  \
            (GCK_TUNE(page_streams) < GCK_EW_SEGS && n * sizeof(GCK_CT(X)) >= GCK_EW_ORDER_MIN) || \
            !(sizeof(GCK_CT(A)) == sizeof(GCK_CT(X)) || (GCK_EW_SEGS_WIDEN && sizeof(GCK_CT(A)) > sizeof(GCK_CT(X))))) \
            break;                                                             \
        for (; i_ + GCK_EW_SEGS * s_ <= n; i_ += GCK_EW_SEGS * s_)             \
            for (size_t o_ = 0; o_ < s_; o_ += GCK_EW_UNROLL * l_) {           \
                _Pragma("GCC unroll 4")                                        \
                for (size_t q_ = 0; q_ < GCK_EW_SEGS; q_++) {                  \
                    const size_t j_ = i_ + q_ * s_ + o_;                       \
                    _Pragma("GCC unroll 8")                                    \
                    for (size_t u_ = 0; u_ < GCK_EW_UNROLL; u_++)              \
                        STEP(W, full, j_ + u_ * l_, l_, A, X, C);              \
                }                                                              \
            }                                                                  \
    } while (0)
#else
#define GCK_EW_IF_SEGS(...)
#endif

/* ---- the one loop ------------------------------------------------------------
 * STEP(w, m, j, k, A, X, C) updates elements [j, j + lanes) (a tail step: the
 * k elements [j, j + k)). GCK_EW_UNROLL steps per iteration, then single
 * steps, then at most one tail step. */
#define GCK_EW_LOOP(W, STEP, A, X, C) GCK_EW_LOOP_PF(W, STEP, A, X, C, 0)
#define GCK_EW_LOOP_PF(W, STEP, A, X, C, PF)                                   \
    do {                                                                       \
        const size_t l_ = GCK_STEP_LANES(W);                                        \
        size_t i_ = 0;                                                         \
        GCK_EW_IF_SEGS(GCK_EW_SEG_LOOP(W, STEP, A, X, C, PF);)                 \
        for (; i_ + GCK_EW_UNROLL * l_ <= n; i_ += GCK_EW_UNROLL * l_) {       \
            GCK_EW_PREFETCH(PF, x + i_, GCK_EW_UNROLL * l_ * sizeof *x);       \
            _Pragma("GCC unroll 8")                                            \
            for (size_t u_ = 0; u_ < GCK_EW_UNROLL; u_++)                      \
                STEP(W, full, i_ + u_ * l_, l_, A, X, C);                      \
        }                                                                      \
        for (; i_ + l_ <= n; i_ += l_)                                         \
            STEP(W, full, i_, l_, A, X, C);                                    \
        GCK_EW_IF_TAILS(if (i_ < n) STEP(W, tail, i_, n - i_, A, X, C);)       \
    } while (0)

/* ---- the steps: each is its kernel's C expression --------------------------- */
/* acc = acc + x */
#define GCK_EW_STEP_ADD(w, m, j, k, A, X, C)                                   \
    GCK_ST(w, m, A, C, acc + (j),                                              \
           GCK_OP(w, add, C)(GCK_LD(w, m, A, C, acc + (j), k), GCK_LD(w, m, X, C, x + (j), k)), k)
/* acc = acc + (w * x) */
#define GCK_EW_STEP_AXPY(w, m, j, k, A, X, C)                                  \
    GCK_ST(w, m, A, C, acc + (j),                                              \
           GCK_OP(w, add, C)(GCK_LD(w, m, A, C, acc + (j), k),                 \
                             GCK_OP(w, mul, C)(wv_, GCK_LD(w, m, X, C, x + (j), k))), k)
/* dst = 0 + (w * x): the +0 turns a -0 product into +0 (never folded away:
 * without -ffast-math signed zeros are kept) */
#define GCK_EW_STEP_AXPY_INIT(w, m, j, k, A, X, C)                             \
    GCK_ST(w, m, A, C, dst + (j),                                              \
           GCK_OP(w, add, C)(zv_, GCK_OP(w, mul, C)(wv_, GCK_LD(w, m, X, C, x + (j), k))), k)
/* dst = 0 + (w * x) as AXPY_INIT, a full step's store streaming (non-temporal) */
#define GCK_ST_NT_full(w, s, p, v, k) GCK_OP(w, store_nt, s)(p, v)
#define GCK_ST_NT_tail(w, s, p, v, k) GCK_OP(w, store_tail, s)(p, v, k)
#define GCK_EW_STEP_AXPY_INIT_NT(w, m, j, k, A, X, C)                          \
    GCK_ST_NT_##m(w, A, dst + (j),                                             \
                  GCK_CVT(w, C, A)(GCK_OP(w, add, C)(zv_, GCK_OP(w, mul, C)(wv_, GCK_LD(w, m, X, C, x + (j), k)))), k)
/* dst = x * w: gck_scale of a copy of x (-0 stays -0, where axpy_init's
 * 0 + x * w gives +0); plain and streaming stores */
#define GCK_EW_STEP_SCALE_INTO(w, m, j, k, A, X, C)                            \
    GCK_ST(w, m, A, C, dst + (j), GCK_OP(w, mul, C)(GCK_LD(w, m, X, C, x + (j), k), wv_), k)
#define GCK_EW_STEP_SCALE_INTO_NT(w, m, j, k, A, X, C)                         \
    GCK_ST_NT_##m(w, A, dst + (j), GCK_CVT(w, C, A)(GCK_OP(w, mul, C)(GCK_LD(w, m, X, C, x + (j), k), wv_)), k)
/* acc = acc + (x0 + (x1 + ... + (x_{m-2} + x_{m-1}))), xq = xl_[q] + xo_:
 * nx_ arrays (a constant where the kernel unrolls on it) */
#define GCK_EW_STEP_ADD_RFOLD(w, m, j, k, A, X, C)                             \
    {                                                                          \
        GCK_V(w, C) f_ = GCK_LD(w, m, X, C, xl_[nx_ - 1] + xo_ + (j), k);      \
        for (size_t p_ = nx_ - 1; p_-- > 0;)                                   \
            f_ = GCK_OP(w, add, C)(GCK_LD(w, m, X, C, xl_[p_] + xo_ + (j), k), f_); \
        GCK_ST(w, m, A, C, acc + (j), GCK_OP(w, add, C)(GCK_LD(w, m, A, C, acc + (j), k), f_), k); \
    }
/* x = x * s */
#define GCK_EW_STEP_SCALE(w, m, j, k, A, X, C)                                 \
    GCK_ST(w, m, A, C, x + (j), GCK_OP(w, mul, C)(GCK_LD(w, m, A, C, x + (j), k), sv_), k)
/* dst = x, converted through the compute type */
#define GCK_EW_STEP_CONVERT(w, m, j, k, A, X, C)                               \
    GCK_ST(w, m, A, C, dst + (j), GCK_LD(w, m, X, C, x + (j), k), k)

/* ---- the kernels: slot, step width, acc/dst storage, x storage, compute ---- */
#define GCK_EW_ADD(slot, W, A, X, C)                                           \
    static void GCK_ISA_FN(slot)(GCK_CT(A) * acc, const GCK_CT(X) *x, size_t n) \
    {                                                                          \
        GCK_EW_LOOP(W, GCK_EW_STEP_ADD, A, X, C);                              \
    }
/* The loop once per common m (2, 3, 4: a tree merge closing that many
 * levels), its inner fold then unrolled, and once for any m. The pointers
 * are copied to a local array first (HACKING, "Adding a kernel" 9): read
 * from the caller's array, the stores to acc made the compiler reload
 * them in every step. More than GCK_EW_RFOLD_LOCAL arrays read the
 * caller's array. */
#define GCK_EW_RFOLD_LOCAL 16
#define GCK_EW_RFOLD_CASE(K, W, A, X, C)                                       \
    case K: {                                                                  \
        const size_t nx_ = (K);                                                \
        GCK_EW_LOOP(W, GCK_EW_STEP_ADD_RFOLD, A, X, C);                        \
        return;                                                                \
    }
#define GCK_EW_ADD_RFOLD(slot, W, A, X, C)                                     \
    static void GCK_ISA_FN(slot)(GCK_CT(A) * acc, const GCK_CT(X) *const *xs, size_t m, size_t off, size_t n) \
    {                                                                          \
        if (m == 0)                                                            \
            return;                                                            \
        const GCK_CT(X) *x = xs[0] + off; /* the loop's prefetch names x */    \
        (void)x;                                                               \
        if (m > GCK_EW_RFOLD_LOCAL) {                                          \
            const GCK_CT(X) *const *xl_ = xs;                                  \
            const size_t xo_ = off, nx_ = m;                                   \
            GCK_EW_LOOP(W, GCK_EW_STEP_ADD_RFOLD, A, X, C);                    \
            return;                                                            \
        }                                                                      \
        const GCK_CT(X) *xl_[GCK_EW_RFOLD_LOCAL];                              \
        for (size_t q_ = 0; q_ < m; q_++)                                      \
            xl_[q_] = xs[q_] + off;                                            \
        const size_t xo_ = 0;                                                  \
        switch (m) {                                                           \
        GCK_EW_RFOLD_CASE(2, W, A, X, C)                                       \
        GCK_EW_RFOLD_CASE(3, W, A, X, C)                                       \
        GCK_EW_RFOLD_CASE(4, W, A, X, C)                                       \
        default: {                                                             \
            const size_t nx_ = m;                                              \
            GCK_EW_LOOP(W, GCK_EW_STEP_ADD_RFOLD, A, X, C);                    \
        }                                                                      \
        }                                                                      \
    }
#define GCK_EW_AXPY(slot, W, A, X, C)                                          \
    static void GCK_ISA_FN(slot)(GCK_CT(A) * acc, GCK_CT(C) w, const GCK_CT(X) *x, size_t n) \
    {                                                                          \
        const GCK_V(W, C) wv_ = GCK_OP(W, set1, C)(w);                         \
        GCK_EW_LOOP(W, GCK_EW_STEP_AXPY, A, X, C);                             \
    }
#define GCK_EW_AXPY_INIT(slot, W, A, X, C)                                     \
    static void GCK_ISA_FN(slot)(GCK_CT(A) * dst, GCK_CT(C) w, const GCK_CT(X) *x, size_t n) \
    {                                                                          \
        const GCK_V(W, C) wv_ = GCK_OP(W, set1, C)(w), zv_ = GCK_OP(W, zero, C)(); \
        GCK_EW_LOOP(W, GCK_EW_STEP_AXPY_INIT, A, X, C);                        \
    }
#define GCK_EW_SCALE_INTO(slot, W, A, X, C)                                    \
    static void GCK_ISA_FN(slot)(GCK_CT(A) * dst, GCK_CT(C) w, const GCK_CT(X) *x, size_t n) \
    {                                                                          \
        const GCK_V(W, C) wv_ = GCK_OP(W, set1, C)(w);                         \
        GCK_EW_LOOP(W, GCK_EW_STEP_SCALE_INTO, A, X, C);                       \
    }
/* A same-type dst = f(w, x) kernel (slot `base`, step STEP its streaming form) with streaming
 * stores: the elements before the first GCK_NT_ALIGN-aligned one of dst through base, the rest
 * in streaming full steps (and an ordinary tail), then the fence that orders them before
 * anything the caller does next. */
#define GCK_EW_AXPY_INIT_NT(slot, base, W, A, X, C) GCK_EW_NT(slot, base, GCK_EW_STEP_AXPY_INIT_NT, W, A, X, C)
#define GCK_EW_SCALE_INTO_NT(slot, base, W, A, X, C) GCK_EW_NT(slot, base, GCK_EW_STEP_SCALE_INTO_NT, W, A, X, C)
#define GCK_EW_NT(slot, base, STEP, W, A, X, C)                                \
    static void GCK_ISA_FN(slot##_body)(GCK_CT(A) * dst, GCK_CT(C) w, const GCK_CT(X) *x, size_t n) \
    {                                                                          \
        const GCK_V(W, C) wv_ = GCK_OP(W, set1, C)(w), zv_ = GCK_OP(W, zero, C)(); \
        (void)zv_; /* axpy_init's +0; scale_into has none */                   \
        GCK_EW_LOOP(W, STEP, A, X, C);                                         \
    }                                                                          \
    static void GCK_ISA_FN(slot)(GCK_CT(A) * dst, GCK_CT(C) w, const GCK_CT(X) *x, size_t n) \
    {                                                                          \
        const uintptr_t a_ = (uintptr_t)dst;                                   \
        size_t h_ = a_ % sizeof *dst != 0 ? n : (GCK_NT_ALIGN - a_ % GCK_NT_ALIGN) % GCK_NT_ALIGN / sizeof *dst; \
        h_ = h_ < n ? h_ : n;                                                  \
        GCK_ISA_FN(base)(dst, w, x, h_);                                       \
        if (h_ < n) {                                                          \
            GCK_ISA_FN(slot##_body)(dst + h_, w, x + h_, n - h_);              \
            gck_nt_fence();                                                    \
        }                                                                      \
    }
#define GCK_EW_SCALE(slot, W, A, C, PF)                                        \
    static void GCK_ISA_FN(slot)(GCK_CT(A) * x, GCK_CT(C) s, size_t n)         \
    {                                                                          \
        const GCK_V(W, C) sv_ = GCK_OP(W, set1, C)(s);                         \
        GCK_EW_LOOP_PF(W, GCK_EW_STEP_SCALE, A, A, C, PF);                     \
    }
/* x = x * s on bf16 where the ops header pairs steps (GCK_PAIR16_BF16): one
 * load of two steps' elements, widened by interleaving with zero words in
 * each 128-bit lane (two f32 vectors, the lanes' elements in a permuted but
 * fixed order) and rounded dwords packed back in-lane, which restores the
 * order: a third of the shuffles of widening and packing each step (AVX2,
 * 64 Mi: 0.87 -> 1.07 of ref_rmw1_f32; 1.4x in L2). Every element's value
 * is the step's (one multiply, one rounding); the tail goes step by step. */
#ifdef GCK_PAIR16_BF16
/* The paired kernels' loop: PAIR(j) does the 2 * lanes elements from j, x is
 * prefetched as PF says; i_ ends at the first element left (the tail, which
 * goes step by step). */
#define GCK_EW_PAIR_LOOP(PF, PAIR)                                             \
    const size_t l_ = 2 * GCK_STEP_LANES(GCK_W32);                             \
    size_t i_ = 0;                                                             \
    for (; i_ + GCK_EW_UNROLL / 2 * l_ <= n; i_ += GCK_EW_UNROLL / 2 * l_) {   \
        GCK_EW_PREFETCH(PF, x + i_, GCK_EW_UNROLL / 2 * l_ * sizeof *x);       \
        _Pragma("GCC unroll 4")                                                \
        for (size_t u_ = 0; u_ < GCK_EW_UNROLL / 2; u_++)                      \
            PAIR(i_ + u_ * l_);                                                \
    }
#define GCK_EW_PAIR_SCALE(j)                                                   \
    {                                                                          \
        GCK_V(GCK_W32, f32) lo_, hi_;                                          \
        gck_pair16_load_bf16(x + (j), &lo_, &hi_);                             \
        gck_pair16_store_bf16(x + (j), GCK_OP(GCK_W32, mul, f32)(lo_, sv_),    \
                              GCK_OP(GCK_W32, mul, f32)(hi_, sv_));            \
    }
#define GCK_EW_SCALE_BF16(slot, PF)                                            \
    GCK_EW_SCALE(slot##_steps, GCK_W32, bf16, f32, PF)                          \
    static void GCK_ISA_FN(slot)(uint16_t *x, float s, size_t n)              \
    {                                                                          \
        const GCK_V(GCK_W32, f32) sv_ = GCK_OP(GCK_W32, set1, f32)(s);         \
        GCK_EW_PAIR_LOOP(PF, GCK_EW_PAIR_SCALE)                                \
        GCK_ISA_FN(slot##_steps)(x + i_, s, n - i_);                           \
    }
#else
#define GCK_EW_SCALE_BF16(slot, PF) GCK_EW_SCALE(slot, GCK_W32, bf16, f32, PF)
#endif
#define GCK_EW_CONVERT(slot, W, A, X, C, PF)                                   \
    static void GCK_ISA_FN(slot)(GCK_CT(A) * dst, const GCK_CT(X) *x, size_t n) \
    {                                                                          \
        GCK_EW_LOOP_PF(W, GCK_EW_STEP_CONVERT, A, X, C, PF);                   \
    }
/* f32 -> bf16 where the ops header pairs steps (GCK_PAIR16_BF16): two steps'
 * rounded lanes packed in-lane and put in order by one permute, one full-width
 * store (a step alone narrows each vector across lanes and stores half a
 * vector). Zen 5 VM, 64 Ki elements, 3 alternating rounds: AVX2 74.8-76.6 ->
 * 88.2-88.5 GB/s, AVX-512 163-168 -> 170-172; 64 Mi within the memory's
 * noise. PF 0 gave AVX2 another 6 % in L2 there, but PF 1 was measured on an
 * Intel core (above) and stays. Each element's bits are the step's; the
 * tail goes step by step. */
#ifdef GCK_PAIR16_BF16
#define GCK_EW_PAIR_CONVERT(j)                                                 \
    gck_pair16_store_seq_bf16(dst + (j), GCK_OP(GCK_W32, load, f32)(x + (j)),  \
                              GCK_OP(GCK_W32, load, f32)(x + (j) + l_ / 2))
#define GCK_EW_CONVERT_BF16(slot, PF)                                          \
    GCK_EW_CONVERT(slot##_steps, GCK_W32, bf16, f32, f32, PF)                  \
    static void GCK_ISA_FN(slot)(uint16_t *dst, const float *x, size_t n)      \
    {                                                                          \
        GCK_EW_PAIR_LOOP(PF, GCK_EW_PAIR_CONVERT)                              \
        GCK_ISA_FN(slot##_steps)(dst + i_, x + i_, n - i_);                    \
    }
#else
#define GCK_EW_CONVERT_BF16(slot, PF) GCK_EW_CONVERT(slot, GCK_W32, bf16, f32, f32, PF)
#endif

/* ---- amax: max |x| as a double, NaN if any element is NaN --------------------
 * max is exact, so any grouping gives the reference's value; GCK_EW_UNROLL
 * running maxima keep the loop off the max latency. Lanes a tail step does
 * not load are +0.0, which no |x| max can be below. */
#define GCK_EW_AMAX_TAKE(W, X, C, v, mk)                                       \
    do {                                                                       \
        GCK_V(W, C) v_ = GCK_OP(W, abs, C)(v);                                 \
        nan_ = GCK_OP(W, nan_pair, C)(nan_, v_, v_);                           \
        m_[mk] = GCK_OP(W, max, C)(m_[mk], v_);                                \
    } while (0)
#define GCK_EW_AMAX(slot, W, X, C, PF)                                         \
    static double GCK_ISA_FN(slot)(const GCK_CT(X) *x, size_t n)               \
    {                                                                          \
        const size_t l_ = GCK_STEP_LANES(W);                                        \
        GCK_V(W, C) m_[GCK_EW_UNROLL];                                         \
        GCK_OP(W, nan, C) nan_ = GCK_OP(W, nan_none, C)();                     \
        for (size_t u_ = 0; u_ < GCK_EW_UNROLL; u_++)                          \
            m_[u_] = GCK_OP(W, zero, C)();                                     \
        size_t i_ = 0;                                                         \
        for (; i_ + GCK_EW_UNROLL * l_ <= n; i_ += GCK_EW_UNROLL * l_) {       \
            GCK_EW_PREFETCH(PF, x + i_, GCK_EW_UNROLL * l_ * sizeof *x);       \
            GCK_V(W, C) v_[GCK_EW_UNROLL];                                     \
            _Pragma("GCC unroll 8")                                            \
            for (size_t u_ = 0; u_ < GCK_EW_UNROLL; u_++)                      \
                v_[u_] = GCK_OP(W, abs, C)(GCK_LD(W, full, X, C, x + i_ + u_ * l_, l_)); \
            _Pragma("GCC unroll 8")                                            \
            for (size_t u_ = 0; u_ < GCK_EW_UNROLL; u_ += 2)                   \
                nan_ = GCK_OP(W, nan_pair, C)(nan_, v_[u_], v_[u_ + 1 < GCK_EW_UNROLL ? u_ + 1 : u_]); \
            _Pragma("GCC unroll 8")                                            \
            for (size_t u_ = 0; u_ < GCK_EW_UNROLL; u_++)                      \
                m_[u_] = GCK_OP(W, max, C)(m_[u_], v_[u_]);                    \
        }                                                                      \
        for (; i_ + l_ <= n; i_ += l_)                                         \
            GCK_EW_AMAX_TAKE(W, X, C, GCK_LD(W, full, X, C, x + i_, l_), 0);   \
        GCK_EW_IF_TAILS(if (i_ < n) GCK_EW_AMAX_TAKE(W, X, C, GCK_LD(W, tail, X, C, x + i_, n - i_), 0);) \
        if (GCK_OP(W, nan_any, C)(nan_))                                       \
            return NAN;                                                        \
        _Pragma("GCC unroll 8")                                                \
        for (size_t h_ = GCK_EW_UNROLL / 2; h_ >= 1; h_ /= 2)                  \
            for (size_t u_ = 0; u_ < h_; u_++)                                 \
                m_[u_] = GCK_OP(W, max, C)(m_[u_], m_[u_ + h_]);               \
        return (double)GCK_OP(W, hmax, C)(m_[0]);                              \
    }

/* ---- amax of bf16 / f16 on their 16-bit words ------------------------------
 * Both formats keep sign and magnitude apart: with the sign bit cleared, the
 * words of two non-NaN values order as the values' magnitudes, and every
 * NaN's word lies above Inf's (0x7f80 bf16, 0x7c00 f16). So the unsigned max
 * of the words is the word of max |x|, widened once at the end (exactly:
 * the f32 amax of the widened values, which the instances above define), or
 * above Inf's word when a NaN was seen: NAN, as there. Per vector of words
 * an and and a max, where widening first took a widening, an abs, a NaN
 * compare and a max per half. ISAs with 16-bit integer vectors define
 * GCK_U16_LANES and the gck_u16_* operations; the scalar reference keeps the
 * f32 definition. The last n % lanes words are taken one by one. */
#ifdef GCK_U16_LANES
#define GCK_EW_AMAX16(slot, X, INF_WORD, PF)                                   \
    static double GCK_ISA_FN(slot)(const uint16_t *x, size_t n)                \
    {                                                                          \
        const size_t l_ = GCK_U16_LANES;                                       \
        const gck_u16v abs_ = gck_u16_set1(0x7fff);                            \
        gck_u16v m_[GCK_EW_UNROLL];                                            \
        for (size_t u_ = 0; u_ < GCK_EW_UNROLL; u_++)                          \
            m_[u_] = gck_u16_set1(0);                                          \
        size_t i_ = 0;                                                         \
        for (; i_ + GCK_EW_UNROLL * l_ <= n; i_ += GCK_EW_UNROLL * l_) {       \
            GCK_EW_PREFETCH(PF, x + i_, GCK_EW_UNROLL * l_ * sizeof *x);       \
            _Pragma("GCC unroll 8")                                            \
            for (size_t u_ = 0; u_ < GCK_EW_UNROLL; u_++)                      \
                m_[u_] = gck_u16_max(m_[u_], gck_u16_and(gck_u16_load(x + i_ + u_ * l_), abs_)); \
        }                                                                      \
        for (; i_ + l_ <= n; i_ += l_)                                         \
            m_[0] = gck_u16_max(m_[0], gck_u16_and(gck_u16_load(x + i_), abs_)); \
        _Pragma("GCC unroll 8")                                                \
        for (size_t u_ = 1; u_ < GCK_EW_UNROLL; u_++)                          \
            m_[0] = gck_u16_max(m_[0], m_[u_]);                                \
        uint16_t m = gck_u16_hmax(m_[0]);                                      \
        for (; i_ < n; i_++) {                                                 \
            const uint16_t a_ = (uint16_t)(x[i_] & 0x7fffu);                   \
            m = a_ > m ? a_ : m;                                               \
        }                                                                      \
        return m > (INF_WORD) ? NAN : (double)gck_w1_cvt_##X##_f32(m);         \
    }
#endif

/* ---- the instances: every ISA's elementwise slots and amax ------------------
 * Mixed f64 <-> f32 kernels step as wide as an f64 vector and hold the f32
 * side in a half-width vector; amax_f32 takes the max in f32, where |x| is
 * exact, and widens once (widening is exact and monotonic). 2-byte inputs
 * (bf16, f16) are held in a vector of as many 16-bit lanes as the step has
 * elements and widened to the compute type by their load; bf16/f16 kernels
 * into f32, scale and amax compute in f32 (the widening is exact), into f64
 * in f64. */
/*         slot                  width    acc  x    compute */
GCK_EW_ADD(add_f64,              GCK_W64, f64, f64, f64)
GCK_EW_ADD(add_f32,              GCK_W32, f32, f32, f32)
GCK_EW_ADD(add_f32_to_f64,       GCK_W64, f64, f32, f64)
GCK_EW_ADD(add_f64_to_f32,       GCK_W64, f32, f64, f32)
GCK_EW_AXPY(axpy_f64,            GCK_W64, f64, f64, f64)
GCK_EW_AXPY(axpy_f32,            GCK_W32, f32, f32, f32)
GCK_EW_AXPY(axpy_f32_to_f64,     GCK_W64, f64, f32, f64)
GCK_EW_AXPY(axpy_f64_to_f32,     GCK_W64, f32, f64, f32)
GCK_EW_AXPY_INIT(axpy_init_f64,        GCK_W64, f64, f64, f64)
GCK_EW_AXPY_INIT(axpy_init_f32,        GCK_W32, f32, f32, f32)
GCK_EW_AXPY_INIT(axpy_init_f32_to_f64, GCK_W64, f64, f32, f64)
GCK_EW_AXPY_INIT(axpy_init_f64_to_f32, GCK_W64, f32, f64, f32)
/*                  slot              base of the unaligned head  width  acc  x  compute */
GCK_EW_AXPY_INIT_NT(axpy_init_nt_f64, axpy_init_f64, GCK_W64, f64, f64, f64)
GCK_EW_AXPY_INIT_NT(axpy_init_nt_f32, axpy_init_f32, GCK_W32, f32, f32, f32)
GCK_EW_SCALE_INTO(scale_into_f64,       GCK_W64, f64, f64, f64)
GCK_EW_SCALE_INTO(scale_into_f32,       GCK_W32, f32, f32, f32)
GCK_EW_SCALE_INTO_NT(scale_into_nt_f64, scale_into_f64, GCK_W64, f64, f64, f64)
GCK_EW_SCALE_INTO_NT(scale_into_nt_f32, scale_into_f32, GCK_W32, f32, f32, f32)
GCK_EW_ADD_RFOLD(add_rfold_f64,  GCK_W64, f64, f64, f64)
GCK_EW_ADD_RFOLD(add_rfold_f32,  GCK_W32, f32, f32, f32)
GCK_EW_SCALE(scale_f64,          GCK_W64, f64,      f64, 0)
GCK_EW_SCALE(scale_f32,          GCK_W32, f32,      f32, 0)
GCK_EW_AMAX(amax_f64,            GCK_W64,      f64, f64, 1)
GCK_EW_AMAX(amax_f32,            GCK_W32,      f32, f32, 1)
GCK_EW_ADD(add_bf16_to_f32,      GCK_W32, f32, bf16, f32)
GCK_EW_ADD(add_f16_to_f32,       GCK_W32, f32, f16, f32)
GCK_EW_ADD(add_bf16_to_f64,      GCK_W64, f64, bf16, f64)
GCK_EW_ADD(add_f16_to_f64,       GCK_W64, f64, f16, f64)
GCK_EW_AXPY(axpy_bf16_to_f32,    GCK_W32, f32, bf16, f32)
GCK_EW_AXPY(axpy_f16_to_f32,     GCK_W32, f32, f16, f32)
GCK_EW_AXPY(axpy_bf16_to_f64,    GCK_W64, f64, bf16, f64)
GCK_EW_AXPY(axpy_f16_to_f64,     GCK_W64, f64, f16, f64)
GCK_EW_AXPY_INIT(axpy_init_bf16_to_f32, GCK_W32, f32, bf16, f32)
GCK_EW_AXPY_INIT(axpy_init_f16_to_f32,  GCK_W32, f32, f16, f32)
GCK_EW_AXPY_INIT(axpy_init_bf16_to_f64, GCK_W64, f64, bf16, f64)
GCK_EW_AXPY_INIT(axpy_init_f16_to_f64,  GCK_W64, f64, f16, f64)
GCK_EW_SCALE_BF16(scale_bf16, 2)
GCK_EW_SCALE(scale_f16,          GCK_W32, f16,      f32, 2)
#ifdef GCK_U16_LANES
GCK_EW_AMAX16(amax_bf16, bf16, 0x7f80u, 0)
GCK_EW_AMAX16(amax_f16,  f16,  0x7c00u, 0)
#else
GCK_EW_AMAX(amax_bf16,           GCK_W32,      bf16, f32, 2)
GCK_EW_AMAX(amax_f16,            GCK_W32,      f16, f32, 2)
#endif
/*             slot                 width    dst   x    compute  prefetch */
GCK_EW_CONVERT_BF16(convert_f32_to_bf16, 1)
GCK_EW_CONVERT(convert_f32_to_f16,  GCK_W32, f16,  f32, f32, 0)
GCK_EW_CONVERT(convert_bf16_to_f32, GCK_W32, f32,  bf16, f32, 0)
GCK_EW_CONVERT(convert_f16_to_f32,  GCK_W32, f32,  f16, f32, 0)

#endif /* GCK_ELEMENTWISE_H */
