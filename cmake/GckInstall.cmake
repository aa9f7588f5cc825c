# cmake --install: headers, both libraries, a CMake package and a pkg-config file.
include(CMakePackageConfigHelpers)

install(TARGETS gradckpt gradckpt_static EXPORT gradckptTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/gradckpt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/include/gradckpt/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gradckpt)

# The static library's private dependencies, for its consumers: as
# <prefix>:<module> pairs that recreate the PkgConfig::<prefix> targets it
# links (gradckptConfig.cmake), and as Requires.private (gradckpt.pc).
set(GCK_CONFIG_PC_DEPS "SLEEF:sleef" "XXHASH:libxxhash" "JANSSON:jansson")
if(GRADCKPT_WITH_ZSTD)
  list(APPEND GCK_CONFIG_PC_DEPS "ZSTD:libzstd")
endif()
set(GCK_PC_REQUIRES_PRIVATE "")
foreach(dep IN LISTS GCK_CONFIG_PC_DEPS)
  string(REGEX REPLACE "^[A-Z]+:" "" module "${dep}")
  string(APPEND GCK_PC_REQUIRES_PRIVATE " ${module}")
endforeach()
string(STRIP "${GCK_PC_REQUIRES_PRIVATE}" GCK_PC_REQUIRES_PRIVATE)
string(REPLACE ";" " " GCK_CONFIG_PC_DEPS "${GCK_CONFIG_PC_DEPS}")

set(GCK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/gradckpt)
install(EXPORT gradckptTargets NAMESPACE gradckpt:: DESTINATION ${GCK_CMAKE_DIR})
configure_package_config_file(cmake/gradckptConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/gradckptConfig.cmake INSTALL_DESTINATION ${GCK_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/gradckptConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gradckptConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/gradckptConfigVersion.cmake
        DESTINATION ${GCK_CMAKE_DIR})

set(GCK_PC_LIBS_PRIVATE "-lm")
if(GRADCKPT_WITH_HTSCODECS)
  string(APPEND GCK_PC_LIBS_PRIVATE " -lhtscodecs")
endif()
if(GRADCKPT_OPENMP)
  string(APPEND GCK_PC_LIBS_PRIVATE " ${OpenMP_C_FLAGS}")
endif()
# Relocatable: the prefix is found from the .pc file's own directory.
file(RELATIVE_PATH GCK_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/gradckpt.pc.in ${CMAKE_CURRENT_BINARY_DIR}/gradckpt.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gradckpt.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
