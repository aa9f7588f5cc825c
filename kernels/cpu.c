/* kernels/cpu.c - CPUID + XCR0 on x86-64, HWCAP on AArch64. */
#include "cpu.h"

#include <stdint.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>

/* XCR0 bits the OS must enable: SSE|AVX state (0x6) for AVX2; additionally
 * opmask|ZMM_Hi256|Hi16_ZMM (0xE0) for AVX-512. CPUID alone says the CPU has
 * the instructions, not that the OS saves their registers. Both paths also
 * need F16C (the f16 <-> f32 conversions). */
#define GCK_XCR0_AVX 0x6u
#define GCK_XCR0_AVX512 0xE6u

static uint64_t gck_xgetbv0(void)
{
    uint32_t lo, hi;
    /* Raw opcode form needs no -mxsave. */
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static int gck_x86_features(int want_avx512)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    const int osxsave = (c & bit_OSXSAVE) != 0, avx = (c & bit_AVX) != 0,
              fma = (c & bit_FMA) != 0, f16c = (c & bit_F16C) != 0;
    if (!osxsave || !avx || !fma || !f16c)
        return 0;
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    const uint64_t xcr0 = gck_xgetbv0();
    if (!want_avx512)
        return (b & bit_AVX2) && (xcr0 & GCK_XCR0_AVX) == GCK_XCR0_AVX;
    const unsigned need = bit_AVX2 | bit_AVX512F | bit_AVX512DQ | bit_AVX512BW | bit_AVX512VL;
    return (b & need) == need && (xcr0 & GCK_XCR0_AVX512) == GCK_XCR0_AVX512;
}
#endif

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#endif

int gck_cpu_has_fma(void)
{
#if defined(__x86_64__) || defined(_M_X64)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    return (c & bit_FMA) && (c & bit_OSXSAVE) && (gck_xgetbv0() & GCK_XCR0_AVX) == GCK_XCR0_AVX;
#elif defined(__i386__)
    return 0;
#else
    return 1;
#endif
}

/* The family of an AMD CPU (base + extended), 0 for any other. */
static unsigned gck_cpu_amd_family(void)
{
#if defined(__x86_64__) || defined(_M_X64)
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return 0;
    /* "AuthenticAMD" in EBX, EDX, ECX */
    if (b != 0x68747541u || d != 0x69746e65u || c != 0x444d4163u)
        return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    const unsigned base = (a >> 8) & 0xFu;
    return base + (base == 0xFu ? (a >> 20) & 0xFFu : 0u);
#else
    return 0;
#endif
}

int gck_cpu_zmm_widen(void)
{
    return gck_cpu_amd_family() >= 0x1Au;
}

int gck_cpu_page_streams(void)
{
    return gck_cpu_amd_family() >= 0x1Au ? 1 : 4;
}

int gck_cpu_can_run(gck_isa isa)
{
    switch (isa) {
    case GCK_ISA_SCALAR:
        return 1;
#if defined(__x86_64__) || defined(_M_X64)
    case GCK_ISA_AVX2:
        return gck_x86_features(0);
    case GCK_ISA_AVX512:
        return gck_x86_features(1);
#endif
#if defined(__aarch64__)
    case GCK_ISA_NEON:
#if defined(__linux__)
        return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#else
        return 1; /* Advanced SIMD is mandatory in AArch64 */
#endif
#endif
    default:
        return 0;
    }
}
