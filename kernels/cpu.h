/* kernels/cpu.h - raw CPU feature detection (no policy, no caching).
 *
 * Each call asks the CPU (CPUID, XGETBV, getauxval) again: only dispatch.c's
 * one-time probe calls these; everything else reads gck_cpu_features_get(). */
#ifndef GCK_CPU_H
#define GCK_CPU_H

#include "kernels_internal.h"

/* 1 if this CPU and OS can execute code built with the flags of that ISA's
 * kernel file (cmake/GckIsa.cmake), whether or not the file is compiled in. */
GCK_INTERNAL int gck_cpu_can_run(gck_isa isa);

/* 1 if the CPU has fused multiply-add (x86: the CPUID FMA bit with OS AVX
 * state; AArch64 and s390x always). */
GCK_INTERNAL int gck_cpu_has_fma(void);

/* 1 if the AVX-512 reductions should widen 8 elements per zmm rather than
 * 4 per ymm on this CPU: AMD family 1Ah (Zen 5) and later, whose
 * conversions run at full 512-bit width. Zen 4 splits a zmm conversion in
 * two and Intel cores took the ymm shape faster out of cache (kernels.h). */
GCK_INTERNAL int gck_cpu_zmm_widen(void);

/* How many 4 KiB pages the x86 elementwise kernels walk at once over large
 * arrays (elementwise.h): 4, whose streams kept an Intel core's memory busy,
 * but 1 on AMD family 1Ah and later (from 4 MiB on: GCK_EW_ORDER_MIN),
 * where the 4-page walk ran at 0.6-0.75 of the sequential one (Zen 5: scale_f32 at 16 Mi elements 2.5 against
 * 1.7 ms, the plain loop's time). */
GCK_INTERNAL int gck_cpu_page_streams(void);

#endif /* GCK_CPU_H */
