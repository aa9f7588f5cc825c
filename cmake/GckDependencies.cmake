# Third-party packages, all from Debian (scripts/setup.sh installs them).
find_package(PkgConfig REQUIRED)
if(GRADCKPT_OPENMP)
  find_package(OpenMP REQUIRED COMPONENTS C)
endif()

# The library's private dependencies, as imported targets (PkgConfig::<NAME>).
# SLEEF (vector pow for p-norms): Debian ships only a .pc file, no CMake package.
pkg_check_modules(SLEEF REQUIRED IMPORTED_TARGET GLOBAL sleef)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET GLOBAL libxxhash)
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET GLOBAL jansson)
if(GRADCKPT_WITH_ZSTD)
  pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET GLOBAL libzstd)
endif()
# htscodecs (rANS order-0 for the store's low-entropy planes): Debian ships no
# .pc file for it, so it is found by header and library (gck::htscodecs; the
# installed package config recreates the same target for static consumers).
if(GRADCKPT_WITH_HTSCODECS)
  find_path(HTSCODECS_INCLUDE_DIR htscodecs/rANS_static4x16.h)
  find_library(HTSCODECS_LIBRARY htscodecs)
  if(NOT HTSCODECS_INCLUDE_DIR OR NOT HTSCODECS_LIBRARY)
    message(FATAL_ERROR "htscodecs not found (Debian: libhtscodecs-dev, scripts/setup.sh installs it); "
                        "-DGRADCKPT_WITH_HTSCODECS=OFF builds without it")
  endif()
  add_library(gck::htscodecs UNKNOWN IMPORTED GLOBAL)
  set_target_properties(gck::htscodecs PROPERTIES IMPORTED_LOCATION "${HTSCODECS_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${HTSCODECS_INCLUDE_DIR}")
endif()

# Debian's cmocka 1.1.5 ships variables only, no imported target.
function(gck_find_cmocka)
  if(TARGET gck::cmocka)
    return()
  endif()
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET GLOBAL cmocka)
  add_library(gck::cmocka ALIAS PkgConfig::CMOCKA)
endfunction()

function(gck_find_mpfr)
  if(TARGET gck::mpfr)
    return()
  endif()
  pkg_check_modules(MPFR REQUIRED IMPORTED_TARGET GLOBAL mpfr)
  add_library(gck::mpfr ALIAS PkgConfig::MPFR)
endfunction()
