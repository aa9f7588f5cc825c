# Cross-build for s390x (big-endian, scalar only) on a Debian x86-64 host; tests run under qemu.
#   cmake -S . -B build-s390x -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-s390x.cmake
#   cmake --build build-s390x && ctest --test-dir build-s390x --timeout 600
# Needs gcc-s390x-linux-gnu, qemu-user and the :s390x multiarch libraries
# (scripts/setup.sh installs them).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR s390x)
set(CMAKE_C_COMPILER s390x-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER s390x-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE s390x-linux-gnu)
# Without this pkg-config hands out the host's .pc files (x86-64 libraries).
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/s390x-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
# Plain qemu with the multiarch libc: '-L /usr/s390x-linux-gnu' mixes two
# glibc builds and hangs in pthread_create.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-s390x)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# Debian's security archive has no s390x build of libzstd, so libzstd-dev:s390x
# cannot be installed next to the (updated) native one: the store is tested
# here with uncompressed deltas (its byte-order handling is what this target
# proves).
set(GRADCKPT_WITH_ZSTD OFF CACHE BOOL "zstd for store deltas")
