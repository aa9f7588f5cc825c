# GRADCKPT_SANITIZE=address;undefined -> instrument everything built here.
if(GRADCKPT_SANITIZE)
  string(REPLACE ";" "," _gck_san "${GRADCKPT_SANITIZE}")
  add_compile_options(-fsanitize=${_gck_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_gck_san})
endif()

# GRADCKPT_FUZZ: coverage instrumentation for everything; the fuzz targets add
# the libFuzzer main themselves.
if(GRADCKPT_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GRADCKPT_FUZZ needs clang (CC=clang), not ${CMAKE_C_COMPILER_ID}")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
