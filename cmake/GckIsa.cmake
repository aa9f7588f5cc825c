# Which SIMD kernel files this compiler and target can build -> GCK_ISAS.
# Each ISA file is compiled with exactly these flags; the runtime detection in
# kernels/cpu.c checks the same feature set (CPUID bits + OS state).
include(CheckCSourceCompiles)

set(GCK_ISA_FLAGS_avx2   -mavx2 -mfma -mf16c)
set(GCK_ISA_FLAGS_avx512 -mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma -mf16c)
set(GCK_ISA_FLAGS_neon   "")   # Advanced SIMD is baseline on AArch64

set(GCK_ISA_PROBE_avx2 "#include <immintrin.h>
int main(void){__m256d a=_mm256_set1_pd(1);a=_mm256_fmadd_pd(a,a,a);return (int)_mm256_cvtsd_f64(a);}")
set(GCK_ISA_PROBE_avx512 "#include <immintrin.h>
int main(void){__m512d a=_mm512_set1_pd(1);__mmask8 m=_mm512_cmp_pd_mask(a,a,_CMP_EQ_OQ);
a=_mm512_mask_add_pd(a,m,a,a);__m256 f=_mm512_cvtpd_ps(a);return (int)_mm256_cvtss_f32(f)+(int)_mm512_reduce_add_pd(a);}")
set(GCK_ISA_PROBE_neon "#include <arm_neon.h>
int main(void){float64x2_t a=vdupq_n_f64(1);a=vaddq_f64(a,a);return (int)vgetq_lane_f64(a,0);}")

set(GCK_ARCH_CAN_avx2 OFF)
set(GCK_ARCH_CAN_avx512 OFF)
set(GCK_ARCH_CAN_neon OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(GCK_ARCH_CAN_avx2 ON)
  set(GCK_ARCH_CAN_avx512 ON)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(GCK_ARCH_CAN_neon ON)
endif()

set(GCK_ISAS "")
foreach(isa IN ITEMS avx2 avx512 neon)
  string(TOUPPER ${isa} ISA)
  set(GCK_HAVE_${ISA} 0)
  if(NOT GRADCKPT_ENABLE_${ISA} OR NOT GCK_ARCH_CAN_${isa})
    continue()
  endif()
  string(REPLACE ";" " " CMAKE_REQUIRED_FLAGS "${GCK_ISA_FLAGS_${isa}}")
  check_c_source_compiles("${GCK_ISA_PROBE_${isa}}" GCK_COMPILER_HAS_${ISA})
  unset(CMAKE_REQUIRED_FLAGS)
  if(GCK_COMPILER_HAS_${ISA})
    list(APPEND GCK_ISAS ${isa})
    set(GCK_HAVE_${ISA} 1)
  endif()
endforeach()

foreach(isa IN LISTS GRADCKPT_REQUIRE_ISAS)
  if(NOT isa IN_LIST GCK_ISAS)
    message(FATAL_ERROR "GRADCKPT_REQUIRE_ISAS lists '${isa}', but this compiler/target "
                        "cannot build it (ISAs built: scalar;${GCK_ISAS})")
  endif()
endforeach()
