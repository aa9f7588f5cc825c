# Flags every gradckpt object is built with (an INTERFACE target linked privately).
add_library(gck_build_flags INTERFACE)
# -ffp-contract=off: GCC fuses a*b+c into an FMA in GNU mode or under -mfma,
# which would make the scalar reference and the SIMD paths round differently.
target_compile_options(gck_build_flags INTERFACE
  -ffp-contract=off
  -fno-fast-math
  -fvisibility=hidden
  $<$<C_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wshadow -Wstrict-prototypes
     -Wmissing-prototypes -Wpointer-arith -Wcast-align -Wvla -Wformat=2>)
# Some targets (s390x) define FLT_EVAL_METHOD 1: under -std=c11 GCC then
# evaluates float expressions in double, so acc + w*x rounds once instead of
# twice. "fast" makes float arithmetic float, as on every other target.
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  target_compile_options(gck_build_flags INTERFACE -fexcess-precision=fast)
endif()
# POSIX names are hidden under -std=c11; request them where needed.
target_compile_definitions(gck_build_flags INTERFACE _POSIX_C_SOURCE=200809L)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(i[3-6]86|x86)$")
  # x87 excess precision would break bit-identity on 32-bit x86.
  target_compile_options(gck_build_flags INTERFACE -msse2 -mfpmath=sse)
endif()
