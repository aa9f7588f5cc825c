#!/usr/bin/env python3
"""Tests of bench/ratios.py's store table on synthetic google-benchmark JSON.

    python3 tests/bench/test_store_ratios.py bench/ratios.py

Plain python3, no pytest: exits non-zero on any failure. No benchmark runs.
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

RATIOS = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                         os.path.join(os.path.dirname(__file__), "../../bench/ratios.py"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
_spec = importlib.util.spec_from_file_location("ratios", RATIOS)
ratios = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ratios)

failures = 0


def check(cond, what, detail=""):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures += 1
        if detail:
            print("     " + detail.replace("\n", "\n     "))


N = 16773120


def entry(name, rep, bps, real=1.0, cpu=1.0, **counters):
    e = {"name": name, "run_name": name, "run_type": "iteration", "repetitions": 3, "repetition_index": rep,
         "threads": 1, "iterations": 8, "real_time": real, "cpu_time": cpu, "time_unit": "ns",
         "bytes_per_second": bps}
    e.update(counters)
    return e


def run_doc():
    b = []
    for rep, jitter in enumerate((1.0, 0.5, 1.1)):  # medians: the 1.0 repetition
        b.append(entry(f"store_save/adamw/1t/{N}/iterations:8", rep, 2e9 * jitter, real=1.0, cpu=0.5,
                       disk_ratio=0.80, entropy_ratio=0.78, logical_bytes=4 * N))
        b.append(entry(f"store_save/adamw/2t/{N}/iterations:8", rep, 3e9 * jitter, disk_ratio=0.80,
                       entropy_ratio=0.78, logical_bytes=4 * N))
        b.append(entry(f"store_restore/adamw/1t/{N}", rep, 1.2e9 * jitter, disk_ratio=0.81, entropy_ratio=0.79))
        b.append(entry(f"store_full_save/adamw/1t/{N}/iterations:9", rep, 1e9 * jitter, disk_ratio=0.84,
                       entropy_ratio=0.83))
        b.append(entry(f"zstd_compress/adamw/delta/1t/{N}/iterations:8", rep, 0.4e9, disk_ratio=0.9,
                       entropy_ratio=0.78))
        b.append(entry(f"peer_zipnn_compress/adamw/delta/1t/{N}", rep, 0.5e9 * jitter, disk_ratio=0.82,
                       entropy_ratio=0.78))
        b.append(entry(f"peer_zipnn_decompress/adamw/delta/1t/{N}", rep, 0.8e9 * jitter, entropy_ratio=0.78))
        b.append(entry(f"peer_zipnn_compress/adamw/full/1t/{N}", rep, 0.5e9, disk_ratio=0.80, entropy_ratio=0.83))
        b.append(entry(f"store_save/finetune/1t/{N}/iterations:8", rep, 5e9, disk_ratio=0.036, entropy_ratio=0.035))
    # an aggregate and a failed run are ignored
    b.append(dict(entry(f"store_save/adamw/1t/{N}/iterations:8", 0, 9e9, disk_ratio=0.1),
                  run_type="aggregate", aggregate_name="median"))
    b.append(dict(entry(f"store_restore/sgd/1t/{N}", 0, 9e9), error_occurred=True))
    return {"context": {"num_cpus": 2, "load_avg": [1.0, 1.0, 1.0]}, "benchmarks": b}


def main():
    tmp = tempfile.mkdtemp(prefix="gck_store_ratios_")
    path = os.path.join(tmp, "store.json")
    with open(path, "w") as f:
        json.dump(run_doc(), f)
    _, res = ratios.store_results(path)
    s = res.get(("store_save", "adamw", "", 1), {})
    check(s.get("bytes_per_second") == 2e9, "median over repetitions, aggregates ignored", str(s))
    check(s.get("cpu_bytes_per_second") == 4e9, "CPU-time rate = bytes_per_second × real ÷ cpu", str(s))
    check(res.get(("zstd_compress", "adamw", "delta", 1), {}).get("disk_ratio") == 0.9, "peer kind parsed")
    check(("store_restore", "sgd", "", 1) not in res, "errored runs left out")
    sizes, speeds, targets = ratios.store_tables(res)
    check("| delta: gradckpt ÷ entropy | 1.026 |" in sizes, "delta ÷ entropy", sizes)
    check("| full: gradckpt ÷ ZipNN | 1.050 |" in sizes, "full ÷ ZipNN", sizes)
    check("| delta save 2t ÷ 1t | 1.50 |" in speeds, "2t ÷ 1t", speeds)
    check("| delta save ÷ ZipNN compress | ≈ 2.0 | 4.00 |" in targets, "save ÷ ZipNN", targets)
    check("| delta restore ÷ ZipNN decompress | ≈ 2.0 | 1.50 |" in targets, "restore ÷ ZipNN", targets)
    check("| finetune delta ÷ logical | ≤ 0.05 | – | 0.0360 |" in targets, "finetune delta", targets)
    check(ratios.store_tables({}) is None, "no store results: no table")
    # the script on a store-only file prints the store table alone
    p = subprocess.run([sys.executable, RATIOS, path], capture_output=True, text=True)
    check(p.returncode == 0 and "## Store" in p.stdout and "| kernel |" not in p.stdout,
          "ratios.py on a store run: the store table only", p.stdout + p.stderr)
    p = subprocess.run([sys.executable, RATIOS, path, "--cpu-time"], capture_output=True, text=True)
    check(p.returncode == 0 and "| delta save 1t | 4.00 |" in p.stdout, "--cpu-time speeds", p.stdout + p.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
