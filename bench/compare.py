#!/usr/bin/env python3
"""Regression gate: compare two gradckpt-bench (google-benchmark) JSON runs.

    python3 bench/compare.py BASE.json NEW.json [--threshold 0.05] [--alpha 0.01]
            [--metric time|cpu_time|bytes_per_second] [--filter REGEX] [--markdown]

Both runs must have used --benchmark_repetitions=N (N >= 5; 7 or more is
better): only the per-repetition entries (run_type "iteration") are used,
grouped by run_name; aggregates (mean/median/stddev) and benchmarks skipped
with an error are ignored. --metric time (the default) is real_time,
converted to ns via time_unit; cpu_time is the main thread's CPU time, which
time stolen by other processes on a shared machine does not inflate (but a
2-thread benchmark's main thread may sleep, so use it for 1-thread ones).

For every benchmark in both runs, with B and N the base and new samples:

    change = median(N) / median(B) - 1
    p      = two-sided Mann-Whitney U test of B against N

and "slower" means a larger time (time, cpu_time) or a smaller rate
(bytes_per_second). The verdict is

    REGRESSION   if  N is slower by more than the threshold:
                       times: change > +threshold, bytes_per_second: change < -threshold
                 and p < alpha
                 and the samples barely overlap: even the FASTEST new
                     repetition is slower than median(B)
                     (time: min(N) > median(B); rate: max(N) < median(B))
    IMPROVEMENT  the mirror image, B and N swapped: faster by more than the
                 threshold, p < alpha, and the fastest BASE repetition is
                 slower than median(N) (time: min(B) > median(N))
    same         otherwise

The threshold keeps small but real differences quiet; the U test asks for a
difference that repetitions agree on; the overlap rule stops a lucky cluster
of slow repetitions from carrying the test. It looks at the fast end only on
purpose: noise on a shared machine (preemption, neighbours' memory traffic)
only ever makes a repetition slower, so the fastest repetitions are the
trustworthy ones and the rule lets no slow outlier veto a real regression.
The U test itself is less forgiving with few repetitions: with 7 and 7, one
base repetition slower than every new one leaves p = 0.026 at best; with 10
and 10, p = 0.0015. On noisy machines use 10-15 repetitions.

With only 1 repetition on a side nothing is significant (said in the output);
with n and m repetitions the smallest possible p is 2 / C(n+m, n) (0.0079 for
5 and 5, 0.00058 for 7 and 7), so use N >= 5 with the default alpha 0.01.

The U test's p is exact (the distribution of U counted by dynamic
programming) when neither sample has ties and n*m <= 400, else the normal
approximation with tie and continuity correction. Benchmarks in only one run
are listed, not failed. Exit status: 1 if any REGRESSION, 0 otherwise, 2 for
usage or input errors (unreadable file, no per-repetition entries, no
benchmark in common). Standard library only.

No test on two separate runs can tell a slower machine from slower code: on
a shared machine the bandwidth moves between runs (out-of-cache runs here
moved by up to 40 % a minute apart). Gate on a quiet, pinned machine, or run
base and new back to back in one job (bench/README.md, "In CI").
"""
import argparse
import json
import math
import re
import statistics
import sys

TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
VERDICT_ORDER = {"REGRESSION": 0, "IMPROVEMENT": 1, "same": 2}
EXACT_MAX_PAIRS = 400  # n*m; the DP below is O((n*m)^2) integer additions at worst


class InputError(Exception):
    pass


def load(path, metric, pattern):
    """(samples {run_name: [value]}, context, errored names) of one JSON file."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot read google-benchmark JSON ({e})") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise InputError(f"{path}: no 'benchmarks' list; not google-benchmark JSON output")
    samples, errored, iterations = {}, set(), 0
    for b in doc["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue  # aggregates: the test needs the repetitions themselves
        iterations += 1
        name = b.get("run_name", b.get("name"))
        if pattern and not pattern.search(name):
            continue
        if b.get("error_occurred"):
            errored.add(name)  # e.g. an ISA this CPU lacks
            continue
        if metric in ("time", "cpu_time"):
            key, unit = "real_time" if metric == "time" else "cpu_time", b.get("time_unit", "ns")
            if unit not in TIME_UNITS or key not in b:
                raise InputError(f"{path}: {name}: no {key} or unknown time_unit {unit!r}")
            value = b[key] * TIME_UNITS[unit]
        elif metric in b:
            value = b[metric]
        else:
            continue  # this benchmark reports no such counter
        samples.setdefault(name, []).append(float(value))
    if iterations == 0:
        raise InputError(f"{path}: no per-repetition entries (run_type 'iteration'); "
                         "was it run with --benchmark_report_aggregates_only?")
    return samples, doc.get("context", {}), errored


def u_distribution(n, m):
    """Counts c[u] of the C(n+m, n) orderings of n x's and m y's having U = u
    (U = number of (x, y) pairs with x > y). c_{n,m}(u) = c_{n-1,m}(u - m) +
    c_{n,m-1}(u): the largest value is an x (beating all m y's) or a y."""
    prev = [[1] for _ in range(m + 1)]  # i = 0: U is always 0
    for i in range(1, n + 1):
        cur = [[1]]  # j = 0: U is always 0
        for j in range(1, m + 1):
            a, b = prev[j], cur[j - 1]  # (i-1, j) shifted by j; (i, j-1)
            c = [0] * (i * j + 1)
            for u, k in enumerate(a):
                c[u + j] += k
            for u, k in enumerate(b):
                c[u] += k
            cur.append(c)
        prev = cur
    return prev[m]


def mann_whitney_u(x, y):
    """Two-sided p of the Mann-Whitney U test; None if a sample is empty or
    has a single value (nothing can be significant then)."""
    n, m = len(x), len(y)
    if n < 2 or m < 2:
        return None
    u = sum((a > b) + 0.5 * (a == b) for a in x for b in y)
    pooled = sorted(x + y)
    ties = [pooled.count(v) for v in set(pooled)]
    if all(t == 1 for t in ties) and n * m <= EXACT_MAX_PAIRS:
        counts = u_distribution(n, m)
        k = int(min(u, n * m - u))  # the distribution is symmetric
        return min(1.0, 2 * sum(counts[: k + 1]) / sum(counts))
    total = n + m
    tie_term = sum(t ** 3 - t for t in ties) / (total * (total - 1))
    var = n * m / 12 * ((total + 1) - tie_term)
    if var <= 0:
        return 1.0  # every value equal
    z = max(0.0, abs(u - n * m / 2) - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(z / math.sqrt(2)))


def verdict(base, new, change, p, args):
    """The rule of the module docstring; 'slower' is a larger time or a smaller rate."""
    if p is None or p >= args.alpha:
        return "same"
    mb, mn = statistics.median(base), statistics.median(new)
    if args.metric != "bytes_per_second":
        slower = change > args.threshold and min(new) > mb
        faster = change < -args.threshold and min(base) > mn
    else:  # a rate: the fastest repetition is the largest
        slower = change < -args.threshold and max(new) < mb
        faster = change > args.threshold and max(base) < mn
    return "REGRESSION" if slower else "IMPROVEMENT" if faster else "same"


def fmt_value(v, metric):
    if metric != "bytes_per_second":
        for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
            if v >= scale:
                return f"{v / scale:.3g} {unit}"
        return f"{v:.3g} ns"
    return f"{v / 1e9:.3g} GB/s"


def fmt_p(p):
    return "n/a" if p is None else f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def print_table(header, rows, markdown):
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="The exact rule is in the module docstring and bench/README.md.")
    ap.add_argument("base", help="baseline google-benchmark JSON (--benchmark_repetitions >= 5)")
    ap.add_argument("new", help="new google-benchmark JSON, same benchmarks and repetitions")
    ap.add_argument("--threshold", type=float, default=0.10,
                    help="relative slowdown ignored however significant (default 0.10: above the drift between two runs of one build on a shared VM)")
    ap.add_argument("--alpha", type=float, default=0.01, help="significance level (default 0.01)")
    ap.add_argument("--metric", choices=["time", "cpu_time", "bytes_per_second"], default="cpu_time",
                    help="cpu_time (default: time the benchmark thread ran, so neighbours taking the "
                         "CPU do not count); time: real_time; or the bytes_per_second counter")
    ap.add_argument("--filter", metavar="REGEX", help="only run_names matching (re.search)")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args(argv)
    if args.threshold < 0 or not 0 < args.alpha <= 1:
        ap.error("need --threshold >= 0 and 0 < --alpha <= 1")
    try:
        pattern = re.compile(args.filter) if args.filter else None
    except re.error as e:
        ap.error(f"--filter: {e}")

    try:
        base, base_ctx, base_err = load(args.base, args.metric, pattern)
        new, new_ctx, new_err = load(args.new, args.metric, pattern)
    except InputError as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    common = [k for k in base if k in new]
    if not common:
        print(f"compare.py: no benchmark with {args.metric} in both {args.base} and {args.new}"
              + (f" matching {args.filter!r}" if args.filter else ""), file=sys.stderr)
        return 2

    # Comparisons across machines or under load measure the machine, not the code.
    for key in ("host_name", "num_cpus", "mhz_per_cpu"):
        if base_ctx.get(key) != new_ctx.get(key):
            print(f"warning: {key} differs: {base_ctx.get(key)} (base) vs {new_ctx.get(key)} (new)")
    if base_ctx.get("cpu_scaling_enabled") or new_ctx.get("cpu_scaling_enabled"):
        print("warning: CPU frequency scaling is enabled; pin the governor (cpupower frequency-set -g performance)")

    rows, single, weak = [], [], set()
    for name in common:
        b, n = base[name], new[name]
        mb, mn = statistics.median(b), statistics.median(n)
        change = mn / mb - 1 if mb else math.inf
        p = mann_whitney_u(b, n)
        if p is None:
            single.append(name)
        elif 2 / math.comb(len(b) + len(n), len(b)) >= args.alpha:
            weak.add((len(b), len(n)))
        rows.append((verdict(b, n, change, p, args), change, name, mb, mn, p, len(b), len(n)))

    def slowdown(change):  # > 0: slower, whatever the metric's direction
        return -change if args.metric == "bytes_per_second" else change

    # Regressions and the rest worst first, improvements best first.
    rows.sort(key=lambda r: (VERDICT_ORDER[r[0]],
                             slowdown(r[1]) if r[0] == "IMPROVEMENT" else -slowdown(r[1]), r[2]))
    unit = {"time": "median time", "cpu_time": "median CPU"}.get(args.metric, "median rate")
    print_table(["benchmark", f"base {unit}", f"new {unit}", "change", "p", "reps", "verdict"],
                [[name, fmt_value(mb, args.metric), fmt_value(mn, args.metric), f"{change * 100:+.1f}%",
                  fmt_p(p), f"{nb}/{nn}", v] for v, change, name, mb, mn, p, nb, nn in rows],
                args.markdown)

    print()
    if single:
        print(f"note: {len(single)} benchmark(s) have a single repetition on one side; not significant "
              "(run with --benchmark_repetitions=7): " + ", ".join(single))
    for nb, nn in sorted(weak):
        print(f"note: with {nb} and {nn} repetitions the smallest possible p is "
              f"{2 / math.comb(nb + nn, nb):.3g} >= alpha {args.alpha}: nothing can be significant")
    for label, names in (("only in base", [k for k in base if k not in new]),
                         ("only in new", [k for k in new if k not in base])):
        if names:
            print(f"{label} ({len(names)}, not compared): " + ", ".join(sorted(names)))
    errored = (base_err | new_err) - set(common)
    if errored:
        print(f"skipped with an error in a run ({len(errored)}, e.g. an ISA this CPU lacks): "
              + ", ".join(sorted(errored)[:8]) + (" ..." if len(errored) > 8 else ""))
    counts = {v: sum(r[0] == v for r in rows) for v in VERDICT_ORDER}
    print(f"{counts['REGRESSION']} regression(s), {counts['IMPROVEMENT']} improvement(s), "
          f"{counts['same']} same, of {len(rows)} compared (threshold {args.threshold:.0%}, "
          f"alpha {args.alpha}, metric {args.metric})")
    return 1 if counts["REGRESSION"] else 0


if __name__ == "__main__":
    sys.exit(main())
