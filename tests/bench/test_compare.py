#!/usr/bin/env python3
"""Tests of bench/compare.py (the regression gate) on synthetic google-benchmark JSON.

    python3 tests/bench/test_compare.py bench/compare.py

Plain python3, no pytest: exits non-zero on the first failure. The random
samples use fixed seeds, so every run sees the same numbers.
"""
import importlib.util
import json
import math
import os
import random
import subprocess
import sys
import tempfile

COMPARE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                          os.path.join(os.path.dirname(__file__), "../../bench/compare.py"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
_spec = importlib.util.spec_from_file_location("compare", COMPARE)
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)

TMP = tempfile.mkdtemp(prefix="gck_compare_")
failures = 0


def check(cond, what, detail=""):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures += 1
        if detail:
            print("     " + detail.replace("\n", "\n     "))


def write(fname, benches, unit="ns", aggregates=True, errored=(), cpu=None):
    """benches: {name: [real_time, ...]} -> a google-benchmark 1.7.1 style JSON
    file with per-repetition entries (and, like the real thing, aggregates).
    cpu: {name: [cpu_time, ...]} where it is not real_time."""
    out = []
    for name, times in benches.items():
        for i, t in enumerate(times):
            out.append({"name": name, "run_name": name, "run_type": "iteration",
                        "repetitions": len(times), "repetition_index": i, "threads": 1,
                        "iterations": 1000, "real_time": t, "time_unit": unit,
                        "cpu_time": cpu[name][i] if cpu and name in cpu else t,
                        "bytes_per_second": 1e6 / t})
        if aggregates:  # a wrong median here would be noticed: compare.py must ignore it
            out.append({"name": name + "_median", "run_name": name, "run_type": "aggregate",
                        "aggregate_name": "median", "repetitions": len(times), "threads": 1,
                        "iterations": len(times), "real_time": 1e9, "cpu_time": 1e9,
                        "time_unit": unit, "bytes_per_second": 1.0})
    for name in errored:
        out.append({"name": name, "run_name": name, "run_type": "iteration", "repetitions": 7,
                    "repetition_index": 0, "threads": 1, "iterations": 0, "real_time": 0,
                    "cpu_time": 0, "time_unit": "ns", "error_occurred": True,
                    "error_message": "isa neon is not available"})
    path = os.path.join(TMP, fname)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"context": {"host_name": "test", "num_cpus": 2, "mhz_per_cpu": 1000,
                               "cpu_scaling_enabled": False}, "benchmarks": out}, f)
    return path


def run(*args):
    r = subprocess.run([sys.executable, COMPARE, *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def verdicts(output):
    """{benchmark: verdict} from the plain-text table."""
    res = {}
    for line in output.splitlines():
        cols = line.split()
        if len(cols) >= 2 and cols[-1] in ("REGRESSION", "IMPROVEMENT", "same"):
            res[cols[0]] = cols[-1]
    return res


def noisy(rng, center, rel_sd, n=7):
    return [center * (1 + rng.gauss(0, rel_sd)) for _ in range(n)]


# --- Mann-Whitney U p-values, computed by hand ---------------------------------
# Fully separated samples: only one of the C(n+m, n) orderings gives U = 0, so
# the two-sided p is 2 / C(n+m, n).
for n, m, want in ((3, 3, 0.1), (5, 5, 2 / 252), (7, 7, 2 / 3432), (2, 3, 0.2), (4, 6, 2 / 210)):
    p = compare.mann_whitney_u(list(range(n)), list(range(100, 100 + m)))
    check(math.isclose(p, want, rel_tol=1e-12), f"exact p, n={n} m={m} separated = {want:.6g}", f"got {p}")
# One swap: x = 1 2 4, y = 3 5 6 -> U(x>y) = 1; P(U <= 1) = (1 + 1) / 20, two-sided 0.2.
p = compare.mann_whitney_u([1, 2, 4], [3, 5, 6])
check(math.isclose(p, 0.2), "exact p, n=m=3 one swap = 0.2", f"got {p}")
# Identical ordering statistics both ways: p = 1.
p = compare.mann_whitney_u([1, 4, 5, 8], [2, 3, 6, 7])
check(math.isclose(p, 1.0), "exact p, balanced interleaving = 1", f"got {p}")
# Ties -> normal approximation with tie and continuity correction:
# x = 1 x5, y = 2 x5: U = 0, mean 12.5, var = 25/12 * (11 - 2*(125-5)/90) = 625/36,
# z = (12.5 - 0.5) / (25/6) = 2.88, p = erfc(2.88 / sqrt 2) = 0.0039768.
p = compare.mann_whitney_u([1] * 5, [2] * 5)
check(math.isclose(p, math.erfc(2.88 / math.sqrt(2)), rel_tol=1e-9) and abs(p - 0.0039768) < 1e-6,
      "tied p, 5 x 1 vs 5 x 2 = 0.0039768", f"got {p}")
check(compare.mann_whitney_u([3.0] * 5, [3.0] * 5) == 1.0, "all values equal: p = 1")
check(compare.mann_whitney_u([1.0], [2.0, 3.0, 4.0]) is None, "a single repetition: no p")
# The DP distribution sums to C(n+m, n) and is symmetric.
d = compare.u_distribution(6, 4)
check(sum(d) == math.comb(10, 4) and d == d[::-1], "U distribution n=6 m=4 sums to C(10,4), symmetric")

# --- the gate on synthetic runs ---------------------------------------------------
rng = random.Random(20261129)
names = ["sumsq_f32/avx2/1t/65536", "sumsq_f32/avx512/1t/65536", "axpy_f64/avx512/1t/16777216"]
base = {k: noisy(rng, 1000.0 * (i + 1), 0.01) for i, k in enumerate(names)}

# Identical distributions (the very same numbers): exit 0, all same.
b = write("base.json", base)
rc, out = run(b, write("same.json", base))
v = verdicts(out)
check(rc == 0 and len(v) == 3 and set(v.values()) == {"same"}, "identical runs: exit 0, all same", out)

# 30 % slower, 7 reps, 1 % noise: exit 1, only that one flagged.
slow = dict(base)
slow[names[1]] = [t * 1.30 * (1 + rng.gauss(0, 0.01)) for t in base[names[1]]]
rc, out = run(b, write("slow30.json", slow))
v = verdicts(out)
check(rc == 1 and v.get(names[1]) == "REGRESSION" and v.get(names[0]) == "same" and v.get(names[2]) == "same",
      "30% slower: exit 1, flagged, others same", out)
check(out.index(names[1]) < out.index(names[0]), "regressions are listed first")

# 3 % slower (significant, but below the 5 % threshold): not flagged ...
slow3 = dict(base)
slow3[names[0]] = [t * 1.03 * (1 + rng.gauss(0, 0.002)) for t in base[names[0]]]
s3 = write("slow3.json", slow3)
rc, out = run(b, s3)
check(rc == 0 and verdicts(out).get(names[0]) == "same", "3% slower: below threshold, not flagged", out)
# ... unless the threshold is lowered.
rc, out = run(b, s3, "--threshold", "0.02")
check(rc == 1 and verdicts(out).get(names[0]) == "REGRESSION", "3% slower with --threshold 0.02: flagged", out)

# Noisy but equal: same distribution, 25 % relative sd, different draws, 20 benchmarks.
nrng = random.Random(7)
many = [f"noisy_{i}/1t/65536" for i in range(20)]
rc, out = run(write("noisy_a.json", {k: noisy(nrng, 5000.0, 0.25) for k in many}),
              write("noisy_b.json", {k: noisy(nrng, 5000.0, 0.25) for k in many}))
v = verdicts(out)
check(rc == 0 and len(v) == 20 and set(v.values()) == {"same"}, "noisy but equal (20 pairs): nothing flagged", out)

# The overlap rule: significant and above threshold, but the fastest new
# repetition beats the base median, so it is not flagged.
ob = [100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114]
on = [101.5] + [t + 30 for t in ob[1:]]
rc, out = run(write("ov_a.json", {"ov/1t/1": ob}), write("ov_b.json", {"ov/1t/1": on}))
p = compare.mann_whitney_u(ob, on)
check(p < 0.01 and rc == 0 and verdicts(out).get("ov/1t/1") == "same",
      f"overlap rule: new min below base median -> same (p = {p:.2g})", out)

# Improvement: 30 % faster -> IMPROVEMENT, exit 0.
fast = dict(base)
fast[names[2]] = [t * 0.7 for t in base[names[2]]]
rc, out = run(b, write("fast.json", fast))
check(rc == 0 and verdicts(out).get(names[2]) == "IMPROVEMENT", "30% faster: improvement, exit 0", out)

# Units: the same times written in us compare equal to the ns baseline.
rc, out = run(b, write("us.json", {k: [t / 1000 for t in ts] for k, ts in base.items()}, unit="us"))
check(rc == 0 and set(verdicts(out).values()) == {"same"} and "+0.0%" in out, "time_unit us vs ns: same", out)

# bytes_per_second (higher is better): the 30 % slower run is a regression too.
rc, out = run(b, os.path.join(TMP, "slow30.json"), "--metric", "bytes_per_second")
check(rc == 1 and verdicts(out).get(names[1]) == "REGRESSION", "--metric bytes_per_second: flagged", out)

# cpu_time: 30 % more real time that is time stolen by other processes (CPU
# time unchanged) is a regression of real_time only.
stolen = write("stolen.json", {k: [t * 1.3 for t in ts] for k, ts in base.items()}, cpu=base)
rc, out = run(b, stolen, "--metric", "time")
check(rc == 1 and set(verdicts(out).values()) == {"REGRESSION"}, "stolen time: real_time regresses", out)
rc, out = run(b, stolen)
check(rc == 0 and set(verdicts(out).values()) == {"same"}, "stolen time: cpu_time (the default) same", out)

# --filter: the slowed benchmark filtered out -> exit 0; --markdown prints a table.
rc, out = run(b, os.path.join(TMP, "slow30.json"), "--filter", "avx2", "--markdown")
check(rc == 0 and "| benchmark |" in out and names[1] not in out, "--filter and --markdown", out)

# Benchmarks in only one file are listed, not failed; errored ones are ignored.
extra = dict(base)
extra["only_new/1t/1024"] = noisy(rng, 10.0, 0.01)
del extra[names[0]]
rc, out = run(write("base_err.json", base, errored=["sumsq_f32/neon/1t/65536"]),
              write("extra.json", extra, errored=["sumsq_f32/neon/1t/65536"]))
check(rc == 0 and "only in base (1" in out and names[0] in out and "only in new (1" in out
      and "only_new/1t/1024" in out and "sumsq_f32/neon" not in verdicts(out),
      "benchmarks in one file only: listed, exit 0", out)

# One repetition per benchmark: said so, not significant even for a 2x change.
one_b = write("one_a.json", {"x/1t/1": [100.0]}, aggregates=False)
one_n = write("one_b.json", {"x/1t/1": [200.0]}, aggregates=False)
rc, out = run(one_b, one_n)
check(rc == 0 and "single repetition" in out and verdicts(out).get("x/1t/1") == "same",
      "single repetition: noted, not significant", out)

# Input errors: exit 2.
rc, out = run(b, os.path.join(TMP, "missing.json"))
check(rc == 2, "missing file: exit 2", out)
rc, out = run(b, write("disjoint.json", {"other/1t/1": noisy(rng, 5.0, 0.01)}))
check(rc == 2 and "no benchmark" in out, "no common benchmark: exit 2", out)
bad = os.path.join(TMP, "bad.json")
with open(bad, "w", encoding="utf-8") as f:
    f.write("{not json")
rc, out = run(b, bad)
check(rc == 2, "malformed JSON: exit 2", out)
rc, out = run(b)
check(rc == 2, "missing argument: exit 2 (usage)", out)

print(f"\n{failures} failure(s)")
sys.exit(1 if failures else 0)
