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
# Exits non-zero on any failure, when a suite runs no test, or when a test
# is skipped that this machine can run: the only skip accepted is a kernel
# test of an ISA the CPU (or emulator) lacks (test_kernels_reduce.avx512 on a
# CPU without AVX-512), judged from /proc/cpuinfo, not from the library.
#   GCK_TEST_CROSS=0   skip 3 and 4      GCK_BUILD_ROOT=dir  where builds go (default build/)
#   GCK_VENV=dir       the Python environment of the tests (default build/venv, made by setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
root=${GCK_BUILD_ROOT:-build}
jobs=$(nproc)
cross=${GCK_TEST_CROSS:-1}
[ "$(uname -m)" = x86_64 ] || cross=0

GCK_SETUP_CROSS=$cross bash scripts/setup.sh
venv=${GCK_VENV:-build/venv}
python=$(cd "$venv/bin" && pwd)/python # test_interop, test_bench_compare and test_cli's Python checks

require=""
if [ "$(uname -m)" = x86_64 ]; then require="-DGRADCKPT_REQUIRE_ISAS=avx2;avx512"; fi

# The ISAs this CPU runs, from the kernel's view of it (flags the OS enabled).
native_isas() {
  local flags
  flags=" $(grep -m1 -E '^(flags|Features)' /proc/cpuinfo | cut -d: -f2) "
  local isas=scalar f ok
  if [[ "$flags" == *" avx2 "* && "$flags" == *" fma "* ]]; then isas+=" avx2"; fi
  ok=1
  for f in avx512f avx512dq avx512bw avx512vl; do [[ "$flags" == *" $f "* ]] || ok=0; done
  [ "$ok" = 1 ] && isas+=" avx512"
  if [[ "$flags" == *" asimd "* ]]; then isas+=" neon"; fi
  echo "$isas"
}

# check_skips LOG "ISAS": every test CTest did not run (skipped, disabled) must
# be one of an ISA outside ISAS (its name ends in .<isa> or .env_<isa>).
check_skips() {
  local log=$1 runnable=" $2 " bad=0 name isa
  while read -r name; do
    isa=${name##*.}
    isa=${isa#env_}
    case "$isa" in
      scalar|avx2|avx512|neon)
        if [[ "$runnable" != *" $isa "* ]]; then
          echo "    skipped, as it must be: $name (this CPU cannot run $isa)"
          continue
        fi ;;
    esac
    echo "FAIL: $name was not run, but this machine can run it" >&2
    bad=1
  done < <(sed -n '/^The following tests did not run:/,/^$/p' "$log" | sed -n -E 's/^[[:space:]]*[0-9]+ - ([^ ]+) \(.*\)$/\1/p')
  return "$bad"
}

run_suite() {  # name, build dir, ctest timeout, ISAs this machine runs, cmake args...
  local name=$1 dir=$2 timeout=$3 isas=$4; shift 4
  echo "==> [$name] configure + build ($dir)"
  cmake -S . -B "$dir" -G Ninja "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$jobs" >"$dir.build.log" 2>&1 || { tail -50 "$dir.build.log"; return 1; }
  echo "==> [$name] ctest"
  local rc=0
  ctest --test-dir "$dir" --output-on-failure --no-tests=error --timeout "$timeout" -j "$jobs" \
    2>&1 | tee "$dir.ctest.log" || rc=$?
  [ "$rc" = 0 ] || return "$rc"
  check_skips "$dir.ctest.log" "$isas"
}

mkdir -p "$root"
isas=$(native_isas)
run_suite native "$root/native" 600 "$isas" -DCMAKE_BUILD_TYPE=Release $require -DPython3_EXECUTABLE="$python"
GCK_BUILD_ROOT=$root GCK_VENV=$venv bash scripts/test_python.sh  # the Python package: pip install ./python, pytest
run_suite asan-ubsan "$root/asan" 900 "$isas" -DCMAKE_BUILD_TYPE=Debug -DGRADCKPT_SANITIZE="address;undefined" \
  -DGRADCKPT_BUILD_BENCH=OFF $require -DPython3_EXECUTABLE="$python"
if [ "$cross" = 1 ]; then
  # qemu-aarch64 runs NEON (ASIMD is part of AArch64): its tests must run and pass
  run_suite aarch64-qemu "$root/aarch64" 900 "scalar neon" -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake \
    -DCMAKE_BUILD_TYPE=Release -DGRADCKPT_BUILD_BENCH=OFF -DGRADCKPT_REQUIRE_ISAS=neon
  run_suite s390x-qemu "$root/s390x" 900 "scalar" -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-s390x.cmake \
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
