"""Shared helpers of the gradckpt Python tests (pytest; scripts/test_python.sh runs them)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import gradckpt

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def bits(x):
    """The bit pattern of a float (or of every element of an array) for exact comparisons."""
    if isinstance(x, float):
        return np.float64(x).view(np.uint64).item()
    a = np.ascontiguousarray(x)
    return a.view({4: np.uint32, 8: np.uint64, 2: np.uint16}[a.itemsize]).tobytes()


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def every_isa():
    """Runs the test body once per ISA this CPU has; restores the best one after."""
    isas = gradckpt.available_isas()
    best = gradckpt.isa()
    yield isas
    gradckpt.select_isa(best)


def run_python(code, env=None, timeout=120):
    """Runs code in a fresh interpreter (this one), returns stdout; fails the test on a non-zero exit."""
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r.stdout


def gradient_like(rng, shapes, dtype=np.float32, scale=0.01):
    """Arrays shaped like gradients: a bell shape around 0, a few large values."""
    out = []
    for n in shapes:
        a = (rng.standard_normal(n) * scale).astype(dtype)
        out.append(a)
    return out
