/* gradckpt/isa.h - which instruction set the kernels run on, chosen at run time, and on how many threads. */
#ifndef GRADCKPT_ISA_H
#define GRADCKPT_ISA_H

#include <gradckpt/export.h>
#include <gradckpt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Kernel instruction sets. Every ISA gives bit-identical results. */
typedef enum gck_isa {
    GCK_ISA_SCALAR = 0, /**< portable C reference; always available */
    GCK_ISA_AVX2,       /**< x86-64 AVX2 + FMA */
    GCK_ISA_AVX512,     /**< x86-64 AVX-512 F/DQ/BW/VL */
    GCK_ISA_NEON        /**< AArch64 Advanced SIMD */
} gck_isa;

/** Number of gck_isa values. */
#define GCK_ISA_COUNT 4

/**
 * The ISA the kernels use now.
 *
 * On first use the best available ISA is chosen (avx512 > avx2 > neon >
 * scalar). The environment variable GRADCKPT_ISA=scalar|avx2|avx512|neon,
 * read once at that moment, overrides the choice; a value that is unknown or
 * not available on this CPU/OS is reported in one line on stderr and the best
 * available ISA is used instead.
 *
 * Within AVX-512 the f32, bf16 and f16 sums of squares and of absolute
 * values (sumsq, l2norm, dist2 of f32, asum and the p = 1 norms) widen each
 * element to f64 either 4 per 256-bit register or 8 per 512-bit one. The
 * 512-bit shape is chosen on AMD family 1Ah (Zen 5) and later, whose
 * conversions run at full width; the 256-bit one elsewhere (Zen 4 splits a
 * 512-bit conversion in two; Intel cores read faster out of cache with it).
 * GRADCKPT_AVX512_WIDEN=ymm|zmm, read at the same moment, overrides that
 * choice (with the zmm shape the bf16/f16 reductions also prefetch further
 * ahead); another value is reported in one line on stderr. The shape changes
 * speed only: both give the same bits.
 *
 * Likewise, on x86 the elementwise kernels (add, axpy, scale, copies) walk
 * arrays of 2 MiB or more 4 pages of 4 KiB at a time, which kept an Intel
 * core's memory busy, except on AMD family 1Ah and later, where arrays of
 * 4 MiB or more are walked in order (1.3-1.5x faster there). GRADCKPT_PAGE_STREAMS=1|4 overrides that
 * choice, with the same bits either way.
 *
 * Ownership:     none.
 * Errors:        none.
 * Thread-safety: safe from any thread; first-use detection runs once.
 */
GCK_API gck_isa gck_isa_active(void);

/**
 * 1 if this build contains kernels for `isa` and this CPU and OS can run them
 * (CPUID feature bits and the OS-enabled register state, XCR0, on x86-64;
 * HWCAP on AArch64), else 0. Values outside the enum give 0.
 *
 * Ownership:     none.
 * Errors:        none.
 * Thread-safety: safe from any thread.
 */
GCK_API int gck_isa_available(gck_isa isa);

/**
 * Force the kernels onto `isa` (for tests, benchmarks, and debugging a CPU).
 *
 * Ownership:     none.
 * Errors:        GCK_ERR_INVALID_ARGUMENT for a value outside the enum;
 *                GCK_ERR_UNSUPPORTED when gck_isa_available(isa) is 0. On
 *                error the active ISA is unchanged and gck_last_error() says
 *                why.
 * Thread-safety: safe from any thread. A kernel call already running keeps
 *                the ISA it started with for its whole result.
 */
GCK_API gck_status gck_isa_select(gck_isa isa);

/**
 * Name of an ISA: "scalar", "avx2", "avx512" or "neon"; "unknown" for a
 * value outside the enum. Never NULL.
 *
 * Ownership:     static string; never free it.
 * Errors:        none.
 * Thread-safety: safe from any thread.
 */
GCK_API const char *gck_isa_name(gck_isa isa);

/**
 * Parse an ISA name as accepted by GRADCKPT_ISA (exact lower-case names).
 *
 * Ownership:     reads `name`; keeps no reference.
 * Errors:        GCK_ERR_INVALID_ARGUMENT when name or out is NULL or the
 *                name is not an ISA; *out is then unchanged.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_isa_from_name(const char *name, gck_isa *out);

/**
 * The number of threads a call of the library may run on: OpenMP's
 * omp_get_max_threads() for the calling thread (set with OMP_NUM_THREADS or
 * omp_set_num_threads; results never depend on it), 1 in a build without
 * OpenMP and in a process forked from one that loaded the library (a
 * fork-started multiprocessing or DataLoader worker), where every call runs
 * on the calling thread alone because GCC's libgomp cannot start threads
 * there (kernels.h).
 *
 * Thread-safety: safe from any thread.
 */
GCK_API int gck_max_threads(void);

#ifdef __cplusplus
}
#endif
#endif /* GRADCKPT_ISA_H */
