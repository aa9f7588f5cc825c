#!/usr/bin/env bash
# Installs what is missing, then builds and runs every test:
#   1. native release build, full CTest suite (every ISA this CPU runs), then
#      the Python package in a virtual environment (scripts/test_python.sh)
#   2. the same with AddressSanitizer + UndefinedBehaviorSanitizer
#   3. aarch64 (NEON) cross-build, full suite under qemu-aarch64
#   4. s390x (big-endian) cross-build, full suite under qemu-s390x
#   5. the snapshot loader and the store (damaged delta files and manifests)
#      under libFuzzer (clang, ASan+UBSan), 30 seconds each, seeded from
#      tests/fuzz/corpus*; any crash fails the run
# Exits non-zero on any failure or when a suite runs no test.
#   GCK_TEST_CROSS=0   skip 3 and 4      GCK_BUILD_ROOT=dir  where builds go (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
root=${GCK_BUILD_ROOT:-build}
jobs=$(nproc)
cross=${GCK_TEST_CROSS:-1}
[ "$(uname -m)" = x86_64 ] || cross=0

GCK_SETUP_CROSS=$cross bash scripts/setup.sh

require=""
if [ "$(uname -m)" = x86_64 ]; then require="-DGRADCKPT_REQUIRE_ISAS=avx2;avx512"; fi

run_suite() {  # name, build dir, ctest timeout, cmake args...
  local name=$1 dir=$2 timeout=$3; shift 3
  echo "==> [$name] configure + build ($dir)"
  cmake -S . -B "$dir" -G Ninja "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$jobs" >"$dir.build.log" 2>&1 || { tail -50 "$dir.build.log"; return 1; }
  echo "==> [$name] ctest"
  ctest --test-dir "$dir" --output-on-failure --no-tests=error --timeout "$timeout" -j "$jobs"
}

mkdir -p "$root"
run_suite native "$root/native" 600 -DCMAKE_BUILD_TYPE=Release $require
GCK_BUILD_ROOT=$root bash scripts/test_python.sh  # the Python package: pip install ./python, pytest
run_suite asan-ubsan "$root/asan" 900 -DCMAKE_BUILD_TYPE=Debug -DGRADCKPT_SANITIZE="address;undefined" \
  -DGRADCKPT_BUILD_BENCH=OFF $require
if [ "$cross" = 1 ]; then
  run_suite aarch64-qemu "$root/aarch64" 900 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake \
    -DCMAKE_BUILD_TYPE=Release -DGRADCKPT_BUILD_BENCH=OFF
  run_suite s390x-qemu "$root/s390x" 900 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-s390x.cmake \
    -DCMAKE_BUILD_TYPE=Release -DGRADCKPT_BUILD_BENCH=OFF
fi
if [ "${GCK_TEST_FUZZ:-1}" = 1 ]; then
  echo "==> [fuzz] configure + build ($root/fuzz)"
  CC=clang cmake -S . -B "$root/fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRADCKPT_FUZZ=ON \
    -DGRADCKPT_SANITIZE="address;undefined" -DGRADCKPT_BUILD_TESTS=OFF -DGRADCKPT_BUILD_BENCH=OFF \
    -DGRADCKPT_BUILD_TOOLS=OFF -DGRADCKPT_BUILD_EXAMPLES=OFF >"$root/fuzz.configure.log" 2>&1 \
    || { cat "$root/fuzz.configure.log"; exit 1; }
  cmake --build "$root/fuzz" --target fuzz_snapshot_load fuzz_store >"$root/fuzz.build.log" 2>&1 \
    || { tail -50 "$root/fuzz.build.log"; exit 1; }
  for target in fuzz_snapshot_load:tests/fuzz/corpus fuzz_store:tests/fuzz/corpus_store; do
    name=${target%%:*} corpus=${target#*:}
    echo "==> [fuzz] $name, 30 s"
    work=$(mktemp -d)
    # new inputs go to the scratch corpus; the repository's corpus is only read
    (cd "$work" && "$OLDPWD/$root/fuzz/tests/fuzz/$name" -max_total_time=30 -rss_limit_mb=2048 \
       -max_len=8192 -print_final_stats=1 "$work" "$OLDPWD/$corpus" >"$work/log" 2>&1) \
      || { tail -40 "$work/log"; echo "fuzz: $name crashed (inputs in $work)"; exit 1; }
    grep -E "^(Done|stat::number_of_executed_units)" "$work/log" || true
    rm -rf "$work"
  done
fi
echo "==> all suites passed"
