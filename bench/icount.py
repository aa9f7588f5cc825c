#!/usr/bin/env python3
"""Instructions per element of gradckpt-bench benchmarks, counted by callgrind.

    python3 bench/icount.py --out OUT.txt [--filter REGEX] [--bench PATH] [--compare OLD.json]

A noise-free regression signal for a shared machine: each selected benchmark
runs alone under `valgrind --tool=callgrind`, collecting only inside the
function it measures (--toggle-collect) and dumping the counts after every
call (--dump-after), so each call's instruction count (Ir) is read on its
own (3 repetitions: 3 calls at least). The median over the calls after the
first (which may pay for lazy symbol binding) divided by the element count
is the figure; it is identical from run to run
on the same binary. Writes the table to OUT.txt and the numbers to OUT.json
(OUT.txt with .json for .txt) for an exact diff with --compare later.

What is counted, per benchmark name:
  <op>_<dt>/<isa>/1t/<n>          the public kernel gck_<op>_<dt> (inclusive:
                                  dispatch, block kernels, OpenMP glue); for
                                  xor_shuffle/unshuffle_xor gck_xor_shuffle/gck_unshuffle_xor
  fnv1a64/1t/<n>                  gck_fnv1a64 (n in bytes)
  naive_<op>_<dt>/1t/<n>          the plain C loop (the body function)
  openblas_<p><op>/1t/<n>         cblas_<p><op> (OpenBLAS picks its kernel from
                                  CPUID, which valgrind limits to AVX2)
  flush/<model>/.../1t/<params>   flush_body: k accumulates + flush, per parameter
Skipped, with a note: avx512 (valgrind cannot run AVX-512 and hides it from
CPUID; the library then refuses that ISA), neon on other CPUs, 2-thread runs
(valgrind serialises threads), ref_* (built -march=native, which may use
AVX-512) and anything else.

Default filter: 8 kernels on scalar and AVX2 at 64 Ki elements (about a minute).
The counts depend on the compiler and its flags: compare runs of one build
configuration.
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone

DEFAULT_FILTER = (r"^(sumsq_f32|sumsq_f64|l2norm_f32|dist2_f64|add_f32|axpy_f32|scale_f64|xor_shuffle_f32)"
                  r"/(scalar|avx2)/1t/65536$")
BENCH_CANDIDATES = ["build-bench/bench/gradckpt-bench", "build/bench/gradckpt-bench",
                    "build/release/bench/gradckpt-bench"]
KERNEL_RE = re.compile(r"^(sumsq|l2norm|dist2|add|axpy|scale|xor_shuffle|unshuffle_xor)_(f32|f64)/([a-z0-9]+)/1t/(\d+)$")


def target(name):
    """(function to count, elements per call) for a benchmark name, or (None, why)."""
    parts = name.split("/")
    if len(parts) >= 2 and parts[-2].endswith("t") and parts[-2] != "1t":
        return None, "multi-threaded: valgrind serialises threads"
    m = KERNEL_RE.match(name)
    if m:
        op, dt, isa, n = m.groups()
        if isa == "avx512":
            return None, "AVX-512: valgrind cannot run it"
        fn = f"gck_{op}" if op in ("xor_shuffle", "unshuffle_xor") else f"gck_{op}_{dt}"
        return fn, int(n)
    m = re.match(r"^fnv1a64/1t/(\d+)$", name)
    if m:
        return "gck_fnv1a64", int(m.group(1))
    m = re.match(r"^naive_((sumsq|dist2|axpy)_f(32|64))/1t/(\d+)$", name)
    if m:  # the static body in bench_naive.c; bench_kernels.c's namesake does not run
        return m.group(1), int(m.group(4))
    m = re.match(r"^openblas_([sd])(nrm2|dot_xx|dot_ab|axpy|scal)/1t/(\d+)$", name)
    if m:
        return f"cblas_{m.group(1)}{m.group(2).split('_')[0]}", int(m.group(3))
    m = re.match(r"^flush/[^/]+/k\d+/[^/]+/1t/(\d+)$", name)
    if m:
        return "flush_body", int(m.group(1))
    if name.startswith("ref_"):
        return None, "ref_* is built -march=native (may use AVX-512)"
    return None, "no counted function known for it"


def dump_costs(prefix):
    """Ir of every callgrind dump file prefix.N, in call order."""
    costs = []
    for path in sorted(glob.glob(prefix + ".*"), key=lambda p: int(p.rsplit(".", 1)[1])
                       if p.rsplit(".", 1)[1].isdigit() else -1):
        if not path.rsplit(".", 1)[1].isdigit():
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    costs.append(int(line.split()[1]))
                    break
    return costs


def count(bench, name, fn, min_time, timeout):
    tmp = tempfile.mkdtemp(prefix="gck-icount-")
    try:
        prefix = os.path.join(tmp, "cg.out")
        out_json = os.path.join(tmp, "res.json")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={prefix}",
               f"--toggle-collect={fn}", f"--dump-after={fn}",
               bench, f"--benchmark_filter=^{re.escape(name)}$", f"--benchmark_min_time={min_time}",
               "--benchmark_repetitions=3",  # at least 3 calls, whatever the timing
               f"--benchmark_out={out_json}", "--benchmark_out_format=json"]
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout} s"
        try:
            with open(out_json, encoding="utf-8") as f:
                doc = json.load(f)
            errs = [b.get("error_message", "error") for b in doc.get("benchmarks", []) if b.get("error_occurred")]
            if errs:
                return None, f"skipped by the benchmark: {errs[0]}"
        except (OSError, ValueError):
            pass
        if r.returncode != 0:
            tail = "\n".join((r.stderr or "").strip().splitlines()[-5:])
            return None, f"valgrind exited {r.returncode}: {tail}"
        costs = [c for c in dump_costs(prefix) if c > 0]
        if not costs:
            return None, f"{fn} was never called (inlined, or another name?)"
        return costs, None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def find_bench(arg):
    if arg:
        return arg
    for path in [os.environ.get("GCK_BENCH", "")] + BENCH_CANDIDATES:
        if path and os.access(path, os.X_OK):
            return path
    sys.exit("icount.py: no gradckpt-bench found (tried $GCK_BENCH, " + ", ".join(BENCH_CANDIDATES) +
             "); build it (bench/README.md) and pass --bench PATH")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, metavar="OUT.txt", help="table to write (and OUT.json next to it)")
    ap.add_argument("--filter", default=DEFAULT_FILTER, metavar="REGEX",
                    help="benchmark names to count (Python regex, searched); default: 8 kernels on "
                         "scalar and avx2 at 64 Ki elements")
    ap.add_argument("--bench", help="gradckpt-bench binary (default: $GCK_BENCH or build-bench/bench/...)")
    ap.add_argument("--min-time", default="0.005",
                    help="--benchmark_min_time under valgrind (default 0.005: a handful of calls)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per benchmark (default 600)")
    ap.add_argument("--compare", metavar="OLD.json", help="an earlier OUT.json: add its column and the change")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("icount.py: valgrind not found (Debian: apt-get install valgrind)")
    bench = find_bench(args.bench)
    try:
        os.nice(10)  # a shared machine; instruction counts do not depend on it
    except OSError:
        pass
    r = subprocess.run([bench, "--benchmark_list_tests"], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        sys.exit(f"icount.py: {bench} --benchmark_list_tests failed: {r.stderr.strip()}")
    try:
        rx = re.compile(args.filter)
    except re.error as e:
        sys.exit(f"icount.py: bad --filter: {e}")
    names = [n for n in r.stdout.split() if rx.search(n)]
    if not names:
        sys.exit(f"icount.py: no benchmark of {bench} matches {args.filter!r}")
    old = {}
    if args.compare:
        with open(args.compare, encoding="utf-8") as f:
            old = json.load(f).get("results", {})

    results, skipped = {}, {}
    for name in names:
        fn, n = target(name)
        if fn is None:
            skipped[name] = n
            print(f"  {name}: skipped ({n})", file=sys.stderr, flush=True)
            continue
        costs, err = count(bench, name, fn, args.min_time, args.timeout)
        if err:
            skipped[name] = err
            print(f"  {name}: skipped ({err})", file=sys.stderr, flush=True)
            continue
        later = costs[1:] or costs  # the first call may pay for lazy binding
        per_call = statistics.median(later)
        results[name] = {"function": fn, "elements": n,  # no call count: it varies with timing
                         "ir_per_call": per_call, "ir_first_call": costs[0],
                         "ir_min": min(later), "ir_max": max(later), "ir_per_element": per_call / n}
        print(f"  {name:34s} {per_call / n:9.4f} instructions/element ({len(costs)} calls)",
              file=sys.stderr, flush=True)

    vg = subprocess.run(["valgrind", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         check=False).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True, check=False).stdout.strip()
    ctx = {"date": datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds"),
           "bench": bench, "valgrind": vg, "git": rev + ("-dirty" if dirty else ""),
           "filter": args.filter, "min_time": args.min_time}

    lines = [f"# gradckpt-bench instruction counts (callgrind; {vg}; {bench}; git {ctx['git']}; {ctx['date']})", ""]
    header = ["benchmark", "counted function", "elements", "instructions/call", "instructions/element"]
    if old:
        header += ["old instructions/element", "change"]
    rows = []
    for name, v in results.items():
        row = [name, v["function"], str(v["elements"]), f"{v['ir_per_call']:.0f}",
               f"{v['ir_per_element']:.4f}"]
        if old:
            o = old.get(name, {}).get("ir_per_element")
            row += ["–" if o is None else f"{o:.4f}",
                    "–" if not o else f"{(v['ir_per_element'] / o - 1) * 100:+.2f} %"]
        rows.append(row)
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    unstable = [f"{n} ({v['ir_min']:.0f}..{v['ir_max']:.0f})" for n, v in results.items()
                if v["ir_max"] != v["ir_min"]]
    if skipped:
        lines += ["", "Skipped:"] + [f"- {n}: {why}" for n, why in skipped.items()]
    if unstable:
        lines += ["", "Calls after the first with differing counts (the median is reported): " + ", ".join(unstable)]
    text = "\n".join(lines) + "\n"
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    jpath = (args.out[:-4] if args.out.endswith(".txt") else args.out) + ".json"
    with open(jpath, "w", encoding="utf-8") as f:
        json.dump({"context": ctx, "results": results, "skipped": skipped}, f, indent=1, sort_keys=True)
        f.write("\n")
    print(text, end="")
    print(f"\nwrote {args.out} and {jpath}")
    if not results:
        sys.exit(1)


if __name__ == "__main__":
    main()
