#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a separate
# consumer project against it through find_package (shared and static) and
# through pkg-config. Usage: check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null

# --no-as-needed: every library the package asks for is recorded (checked below).
cmake -S "$src/tests/install/consumer" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCMAKE_EXE_LINKER_FLAGS=-Wl,--no-as-needed >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libgradckpt.so' | head -n 1)")
LD_LIBRARY_PATH="$libdir" "$tmp/cmake-build/consumer"
"$tmp/cmake-build/consumer_static"

pcdir="$libdir/pkgconfig"
cc -std=c11 "$src/tests/install/consumer/main.c" -o "$tmp/pc-consumer" -Wl,--no-as-needed \
   $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs gradckpt)
LD_LIBRARY_PATH="$libdir" "$tmp/pc-consumer"
cc -std=c11 "$src/tests/install/consumer/main.c" -o "$tmp/pc-consumer-static" -static-libgcc \
   $(PKG_CONFIG_PATH="$pcdir" pkg-config --static --cflags gradckpt) \
   "$libdir/libgradckpt.a" $(PKG_CONFIG_PATH="$pcdir" pkg-config --static --libs-only-other --libs-only-l gradckpt | sed 's/-lgradckpt//')
"$tmp/pc-consumer-static"
# The dependencies are private: a shared consumer is given libgradckpt only,
# so even linked --no-as-needed it records no other library of ours.
for exe in "$tmp/cmake-build/consumer" "$tmp/pc-consumer"; do
  if readelf -d "$exe" | grep -E 'NEEDED.*lib(sleef|xxhash|jansson|zstd|gomp)'; then
    echo "$exe links gradckpt's private dependencies directly" >&2
    exit 1
  fi
done
echo "install check passed (find_package shared+static, pkg-config shared+static, private dependencies)"
