#!/usr/bin/env bash
# Benchmarks and the regression gate (bench/README.md, "Regression gate"):
#   scripts/bench.sh run OUT.json [FILTER] [REPS]   run gradckpt-bench, REPS (10) interleaved repetitions
#   scripts/bench.sh compare BASE.json NEW.json [compare.py options]
#   scripts/bench.sh gate BASE.json [FILTER] [REPS] run, then compare with BASE; compare's exit status
#   scripts/bench.sh gate-ab BASE_BENCH [FILTER] [ROUNDS]  the gate against another gradckpt-bench
#                                                   binary, the two run in turns (ROUNDS (4) x 2 repetitions)
#   scripts/bench.sh plot RESULTS.json OUTDIR [...] bench/plot.py RESULTS.json OUTDIR [...]
#   scripts/bench.sh peers OUT.json [...]           bench/peers.py --out OUT.json [...]
#   scripts/bench.sh icount OUT.txt [...]           bench/icount.py --out OUT.txt [...]
#   scripts/bench.sh rss [MODEL] [CHECKSUM]         peak RSS of flush/MODEL (resnet50), k = 1 and 16
# run and gate build build/bench-release (Release, GRADCKPT_BUILD_TESTS=OFF)
# first (GCK_BUILD_ROOT moves build/; CMAKE_BUILD_PARALLEL_LEVEL limits the
# jobs). Extra gradckpt-bench flags: GCK_BENCH_ARGS; extra compare.py options
# for gate: GCK_COMPARE_ARGS (e.g. "--metric time" for wall-clock time). Exit status 2: usage,
# build or input error; 1 (compare, gate): a regression.
set -euo pipefail
cd "$(dirname "$0")/.."

# The default set, about a minute at 10 repetitions: sumsq and axpy (f32, f64)
# on scalar, AVX2 and AVX-512, and the bandwidth references with the same
# traffic (ref_read, ref_rmw2), in L2 (64 Ki) and in L3 (256 Ki: 2-4 MB), 1 thread.
# Sizes in DRAM drift by tens of percent between runs on shared machines (a
# slower memory day looks like slower code); a code regression shows in cache.
DEFAULT_FILTER='^((sumsq|axpy)_f(32|64)/(scalar|avx2|avx512)|ref_(read|rmw2)_f(32|64))/1t/(65536|262144)$'

usage() {
  sed -n '2,16s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

build() {
  GCK_SETUP_CROSS=0 bash scripts/setup.sh
  local dir=${GCK_BUILD_ROOT:-build}/bench-release
  mkdir -p "$dir"
  { cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRADCKPT_BUILD_TESTS=OFF &&
    cmake --build "$dir" --target gck_bench; } >"$dir.build.log" 2>&1 ||
    { tail -30 "$dir.build.log" >&2; echo "bench.sh: build failed (log: $dir.build.log)" >&2; exit 2; }
  bench=$dir/bench/gradckpt-bench
  [ -x "$bench" ] || { echo "bench.sh: $bench was not built (google-benchmark missing?)" >&2; exit 2; }
}

# A VM that hands freed memory back to its host (virtio-balloon free page
# reporting) pays a host page fault on every page it touches again: on one
# such VM a store save ran at 0.3 GB/s instead of 0.8, the time in the
# kernel's page copies, and 2-thread restores were bimodal. Only a warning:
# the fix changes the machine (bench/README.md, "Run").
check_machine() {
  local p=/sys/module/page_reporting/parameters/page_reporting_order
  if [ -r "$p" ] && [ "$(cat "$p")" -le 10 ]; then
    echo "bench.sh: warning: free page reporting returns freed memory to the host (page_reporting_order $(cat "$p"));" \
      "benchmarks that allocate (store, snapshot, restore) will be slow and noisy (bench/README.md, \"Run\")" >&2
  fi
}

run() {  # OUT.json [FILTER] [REPS]
  (($# >= 1 && $# <= 3)) || usage
  local out=$1 filter=${2:-$DEFAULT_FILTER} reps=${3:-10}  # empty: the default
  build
  check_machine
  # shellcheck disable=SC2086  # GCK_BENCH_ARGS is a list of flags
  "$bench" --benchmark_filter="$filter" --benchmark_repetitions="$reps" \
    --benchmark_enable_random_interleaving=true --benchmark_min_time=0.1 \
    --benchmark_out="$out" --benchmark_out_format=json ${GCK_BENCH_ARGS:-}
}

py() {  # SCRIPT ARGS...: another bench/ script, which may not exist yet
  local script=$1; shift
  [ -f "$script" ] || { echo "bench.sh: $script does not exist (yet); nothing to run" >&2; exit 2; }
  python3 "$script" "$@"
}

[ $# -ge 1 ] || usage
cmd=$1; shift
case "$cmd" in
  run) run "$@" ;;
  compare)
    [ $# -ge 2 ] || usage
    python3 bench/compare.py "$@" ;;
  gate)
    (($# >= 1 && $# <= 3)) || usage
    [ -f "$1" ] || { echo "bench.sh: baseline $1 not found" >&2; exit 2; }
    new=$(mktemp --suffix=.json)
    trap 'rm -f "$new"' EXIT
    # The same set and repetitions as the baseline's run (an empty FILTER: the default).
    run "$new" "${2:-}" "${3:-}"
    rc=0
    # shellcheck disable=SC2086  # GCK_COMPARE_ARGS is a list of options
    python3 bench/compare.py "$1" "$new" ${GCK_COMPARE_ARGS:-} || rc=$?
    exit "$rc" ;;
  gate-ab)
    # The base binary (e.g. built by "run" in a worktree of the base commit)
    # and this tree's, in turns, so that both see the same machine: on a
    # shared VM the memory's speed drifts by 10-90 % within minutes, and a
    # gate against a baseline recorded earlier flagged dozens of unchanged
    # kernels (and the plain-C references) at once.
    (($# >= 1 && $# <= 3)) || usage
    [ -x "$1" ] || { echo "bench.sh: $1 is not an executable gradckpt-bench" >&2; exit 2; }
    base_bin=$1 filter=${2:-$DEFAULT_FILTER} rounds=${3:-4}
    build
    check_machine
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    for r in $(seq "$rounds"); do
      for side in base new; do
        bin=$bench
        [ "$side" = base ] && bin=$base_bin
        # shellcheck disable=SC2086  # GCK_BENCH_ARGS is a list of flags
        "$bin" --benchmark_filter="$filter" --benchmark_repetitions=2 \
          --benchmark_enable_random_interleaving=true --benchmark_min_time=0.1 \
          --benchmark_out="$tmp/$side.$r.json" --benchmark_out_format=json ${GCK_BENCH_ARGS:-} >/dev/null
      done
    done
    for side in base new; do
      python3 -c 'import json, sys
runs = [json.load(open(p)) for p in sys.argv[2:]]
out = runs[0]
for d in runs[1:]:
    out["benchmarks"] += d["benchmarks"]
json.dump(out, open(sys.argv[1], "w"))' "$tmp/$side.json" "$tmp/$side".[0-9]*.json
    done
    rc=0
    # shellcheck disable=SC2086  # GCK_COMPARE_ARGS is a list of options
    python3 bench/compare.py "$tmp/base.json" "$tmp/new.json" ${GCK_COMPARE_ARGS:-} || rc=$?
    exit "$rc" ;;
  plot)
    [ $# -ge 2 ] || usage
    py bench/plot.py "$@" ;;
  peers)
    [ $# -ge 1 ] || usage
    py bench/peers.py --out "$@" ;;
  icount)
    [ $# -ge 1 ] || usage
    py bench/icount.py --out "$@" ;;
  rss)
    # Each flush benchmark alone in its own process, so the process's peak
    # resident set (the peak_rss_mb counter) is that benchmark's memory.
    (($# <= 2)) || usage
    model=${1:-resnet50} checksum=${2:-xxh3}
    build
    for k in 1 16; do
      name="flush/$model/k$k/$checksum/1t"
      mb=$("$bench" --benchmark_filter="^$name/" --benchmark_min_time=0.3 --benchmark_format=json 2>/dev/null |
        sed -n 's/.*"peak_rss_mb": *\([0-9.e+]*\).*/\1/p' | head -n1)
      [ -n "$mb" ] || { echo "bench.sh: $name did not run (model $model, checksum $checksum?)" >&2; exit 2; }
      awk -v n="$name" -v mb="$mb" 'BEGIN { printf "%s: peak RSS %.1f MB (%.1f MiB)\n", n, mb, mb * 1e6 / 1048576 }'
    done ;;
  -h|--help|help) usage ;;
  *) echo "bench.sh: unknown command '$cmd'" >&2; usage ;;
esac
