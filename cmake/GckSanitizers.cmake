# GRADCKPT_SANITIZE=address;undefined -> instrument everything built here.
if(GRADCKPT_SANITIZE)
  string(REPLACE ";" "," _gck_san "${GRADCKPT_SANITIZE}")
  add_compile_options(-fsanitize=${_gck_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_gck_san})
endif()
