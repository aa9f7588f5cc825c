"""examples/python/train_torch.py: SIGKILLed at random moments (also mid-save) and resumed, it ends
with the uninterrupted run's weights bit for bit; 1 and 2 threads agree."""
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import gradckpt
from conftest import REPO

SCRIPT = os.path.join(REPO, "examples", "python", "train_torch.py")
ARGS = ["--steps", "36", "--save-every", "4"]
TIMEOUT = 480  # seconds for any one run, however loaded the machine (about 5 s on a quiet one)


def digest_of(out):
    m = re.search(r"weights digest: (fnv1a64:[0-9a-f]{16})", out)
    assert m, out
    return m.group(1)


def run(args):
    r = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def run_and_kill(args, rng, after_save=False):
    """Starts a run and SIGKILLs it at a random moment: after a random number of saves plus a
    random delay (mid-step or mid-save), or at a random time from the start; after_save: after
    its first save. True if it was killed (a run may finish first)."""
    p = subprocess.Popen([sys.executable, SCRIPT] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    deadline = time.monotonic() + TIMEOUT
    try:
        if not after_save and rng.random() < 0.3:
            time.sleep(rng.uniform(0.0, 4.0))  # maybe still importing, maybe training
        else:
            saves = 1 if after_save else rng.randint(1, 3)
            for line in p.stdout:
                if "saved" in line:
                    saves -= 1
                    if saves == 0:
                        break
                assert time.monotonic() < deadline
            time.sleep(rng.uniform(0.0, 0.08))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=60)
            return True
        return False
    finally:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=60)
        p.stdout.close()
        p.stderr.close()


def test_killed_and_resumed_equals_uninterrupted_and_threads_agree(tmp_path):
    ref = digest_of(run(["--dir", str(tmp_path / "ref"), "--threads", "1", "--quiet"] + ARGS))
    two = digest_of(run(["--dir", str(tmp_path / "two"), "--threads", "2", "--quiet"] + ARGS))
    assert two == ref, "1 and 2 threads give different weights"

    seed = int(os.environ.get("GCK_KILL_SEED", time.time_ns() % 100000))
    rng = random.Random(seed)
    run_dir = str(tmp_path / "killed")
    kills = 0
    for attempt in range(4):
        # A run that finished before its kill landed (its random moment came after the last
        # step: a fast machine) leaves nothing to resume: start afresh and kill it after a save.
        shutil.rmtree(run_dir, ignore_errors=True)
        killed = run_and_kill(["--dir", run_dir, "--threads", str(rng.choice((1, 2)))] + ARGS, rng,
                              after_save=attempt > 0)
        kills += killed
        if killed:
            break
    if not os.path.exists(os.path.join(run_dir, "config.json")):
        # killed before the run wrote its options: start it again
        killed = run_and_kill(["--dir", run_dir, "--threads", "1"] + ARGS, rng, after_save=True)
        kills += killed
    for _ in range(2):
        kills += run_and_kill(["--resume", run_dir, "--threads", str(rng.choice((1, 2)))], rng)
    out = run(["--resume", run_dir, "--threads", "2"])
    assert digest_of(out) == ref, f"resumed run differs (GCK_KILL_SEED={seed}, {kills} kills)"
    assert kills >= 1, f"no run was killed (GCK_KILL_SEED={seed})"
    with gradckpt.Store(os.path.join(run_dir, "store")) as st:
        assert st.verify() == len(st.versions)
        assert "best" in st.info("best")["tags"]
    final = gradckpt.load_file(os.path.join(run_dir, "final.safetensors"))
    assert "head.weight" in final
