"""The single-array kernels: values against NumPy/math references, the same bits on every ISA and
thread count, zero-copy in place, argument errors, and the GIL released by long calls."""
import math
import sys
import threading
import time

import numpy as np
import pytest
import torch

import gradckpt
from conftest import bits, run_python

SIZES = [0, 1, 7, 16, 1000, 65537, 300001]
DTYPES = [np.float32, np.float64]


def ref_sumsq(x):
    return math.fsum(float(v) * float(v) for v in x.astype(np.float64))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dt", DTYPES)
def test_reductions_against_references(rng, n, dt):
    x = rng.standard_normal(n).astype(dt)
    y = rng.standard_normal(n).astype(dt)
    want = ref_sumsq(x)
    assert gradckpt.sumsq(x) == pytest.approx(want, rel=1e-12, abs=1e-300)
    assert gradckpt.l2norm(x) == pytest.approx(math.sqrt(want), rel=1e-12, abs=1e-300)
    d = x.astype(np.float64) - y.astype(np.float64)
    assert gradckpt.dist2(x, y) == pytest.approx(math.fsum(d * d), rel=1e-12, abs=1e-300)
    ax = np.abs(x.astype(np.float64))
    assert gradckpt.pnorm(x, 1) == pytest.approx(math.fsum(ax), rel=1e-12, abs=1e-300)
    assert gradckpt.pnorm(x, math.inf) == (float(ax.max()) if n else 0.0)
    if n:
        assert gradckpt.pnorm(x, 3.5) == pytest.approx(float(np.sum(ax ** 3.5) ** (1 / 3.5)), rel=1e-10)
    # torch tensors over the same memory give the same bits
    assert bits(gradckpt.sumsq(torch.from_numpy(x))) == bits(gradckpt.sumsq(x))


def test_l2norm_never_overflows():
    x = np.full(1000, 1e300)
    assert gradckpt.l2norm(x) == pytest.approx(1e300 * math.sqrt(1000), rel=1e-15)
    assert gradckpt.sumsq(x) == math.inf
    assert gradckpt.l2norm(np.full(10, 1e-300)) == pytest.approx(1e-300 * math.sqrt(10), rel=1e-15)


def test_nonfinite_propagates():
    x = np.array([1.0, np.nan, 2.0], np.float32)
    assert math.isnan(gradckpt.sumsq(x)) and math.isnan(gradckpt.l2norm(x))
    assert gradckpt.l2norm(np.array([1.0, np.inf])) == math.inf


@pytest.mark.parametrize("dt", DTYPES)
def test_elementwise_equal_numpy_bit_for_bit(rng, dt):
    n = 100003
    acc = rng.standard_normal(n).astype(dt)
    x = rng.standard_normal(n).astype(dt)
    want = acc + x
    out = gradckpt.add_(acc, x)
    assert out is acc and bits(acc) == bits(want)
    w = 0.37
    wt = dt(w)
    want = acc + (wt * x)
    gradckpt.axpy_(acc, w, x)
    assert bits(acc) == bits(want)
    want = acc * dt(-1.5)
    assert gradckpt.scale_(acc, -1.5) is acc
    assert bits(acc) == bits(want)


def test_mixed_precision_add_axpy(rng):
    acc64 = rng.standard_normal(1001)
    x32 = rng.standard_normal(1001).astype(np.float32)
    want = acc64 + x32.astype(np.float64)
    gradckpt.add_(acc64, x32)
    assert bits(acc64) == bits(want)
    want = acc64 + x32.astype(np.float64) * 0.25
    gradckpt.axpy_(acc64, 0.25, x32)
    assert bits(acc64) == bits(want)
    acc32 = rng.standard_normal(1001).astype(np.float32)
    x64 = rng.standard_normal(1001)
    want = acc32 + x64.astype(np.float32)
    gradckpt.add_(acc32, x64)
    assert bits(acc32) == bits(want)


def test_in_place_is_zero_copy(rng):
    a = rng.standard_normal(5000).astype(np.float32)
    view = a[1000:2000]  # a contiguous slice: its own memory is written
    before = a.copy()
    gradckpt.scale_(view, 2.0)
    assert np.shares_memory(view, a)
    assert bits(a[1000:2000]) == bits(before[1000:2000] * np.float32(2))
    assert bits(a[:1000]) == bits(before[:1000]) and bits(a[2000:]) == bits(before[2000:])
    t = torch.from_numpy(rng.standard_normal(777).astype(np.float32))
    ptr = t.data_ptr()
    want = t * 3
    gradckpt.scale_(t, 3.0)
    assert t.data_ptr() == ptr and torch.equal(t, want)
    # memoryview / array.array through the buffer protocol
    import array
    arr = array.array("d", [1.0, 2.0, 3.0])
    gradckpt.scale_(arr, 2.0)
    assert list(arr) == [2.0, 4.0, 6.0]
    assert gradckpt.sumsq(memoryview(arr)) == 56.0


def test_x_may_be_acc_itself():
    a = np.arange(10, dtype=np.float64)
    gradckpt.add_(a, a)
    assert list(a) == [2.0 * i for i in range(10)]
    with pytest.raises(gradckpt.InvalidArgumentError, match="overlaps"):
        gradckpt.add_(a[1:], a[:-1])


def test_fnv1a64_known_vectors():
    assert gradckpt.fnv1a64(b"") == gradckpt.FNV1A64_INIT
    assert gradckpt.fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert gradckpt.fnv1a64(b"foobar") == 0x85944171F73967E8
    h = gradckpt.fnv1a64(b"foo")
    assert gradckpt.fnv1a64(b"bar", h) == 0x85944171F73967E8
    x = np.arange(100, dtype=np.int64)
    assert gradckpt.fnv1a64(x) == gradckpt.fnv1a64(x.tobytes())


def test_every_isa_and_thread_count_same_bits(rng, every_isa):
    xs = [rng.standard_normal(n).astype(dt) for n in (1, 15, 8193, 200001) for dt in DTYPES]
    want = None
    for isa in every_isa:
        gradckpt.select_isa(isa)
        assert gradckpt.isa() == isa
        for t in (1, 2, 3):
            gradckpt.set_num_threads(t)
            got = [(bits(gradckpt.sumsq(x)), bits(gradckpt.l2norm(x)), bits(gradckpt.pnorm(x, 1.5)),
                    bits(gradckpt.dist2(x, x[::-1].copy()))) for x in xs]
            if want is None:
                want = got
            assert got == want, (isa, t)
    gradckpt.set_num_threads(2)


def test_omp_num_threads_does_not_change_bits():
    code = ("import numpy as np, gradckpt; x = np.random.default_rng(5).standard_normal(1 << 20)"
            ".astype(np.float32); print(gradckpt.sumsq(x).hex(), gradckpt.get_num_threads())")
    outs = [run_python(code, env={"OMP_NUM_THREADS": str(t)}).split() for t in (1, 2)]
    assert outs[0][0] == outs[1][0]
    assert (outs[0][1], outs[1][1]) == ("1", "2")


def test_isa_functions():
    assert gradckpt.isa() in gradckpt.available_isas()
    assert "scalar" in gradckpt.available_isas()
    with pytest.raises(gradckpt.InvalidArgumentError, match="unknown ISA"):
        gradckpt.select_isa("sse9")
    missing = [i for i in ("avx2", "avx512", "neon") if i not in gradckpt.available_isas()]
    for i in missing:
        with pytest.raises(gradckpt.UnsupportedError):
            gradckpt.select_isa(i)
    assert gradckpt.__version__.count(".") == 2


# ---- argument errors -----------------------------------------------------------


def test_wrong_dtype_raises_naming_the_argument():
    for bad in (np.arange(4), np.zeros(4, np.int32), np.zeros(4, np.uint16)):
        with pytest.raises(gradckpt.DTypeError, match="^x: expected float32, float64, bfloat16 or float16"):
            gradckpt.sumsq(bad)
    with pytest.raises(gradckpt.DTypeError, match="^x: unsupported element format"):
        gradckpt.sumsq(np.zeros(4, np.complex64))
    with pytest.raises(TypeError, match="^b: expected float32 like a"):
        gradckpt.dist2(np.zeros(3, np.float32), np.zeros(3))
    with pytest.raises(TypeError, match="^x:.*expected an array"):
        gradckpt.sumsq([1.0, 2.0])
    with pytest.raises(gradckpt.DTypeError, match="^x: expected float32, float64, bfloat16 or float16, got int64"):
        gradckpt.sumsq(torch.arange(3))
    with pytest.raises(gradckpt.DTypeError):
        gradckpt.sumsq(np.zeros(3, ">f4"))  # big-endian


def test_non_contiguous_raises_nothing_converted():
    x = np.zeros((10, 10), np.float32)
    with pytest.raises(gradckpt.InvalidArgumentError, match="^x: expected a C-contiguous"):
        gradckpt.sumsq(x[:, 1])
    with pytest.raises(ValueError, match="C-contiguous"):
        gradckpt.scale_(x.T, 2.0)
    with pytest.raises(gradckpt.InvalidArgumentError, match="^x: expected a C-contiguous tensor"):
        gradckpt.sumsq(torch.zeros(10, 10)[:, 0])
    assert not x.any()


def test_read_only_where_written():
    x = np.ones(8, np.float32)
    x.flags.writeable = False
    assert gradckpt.sumsq(x) == 8.0  # reading is fine
    with pytest.raises(gradckpt.InvalidArgumentError, match="^x: the array is read-only"):
        gradckpt.scale_(x, 2.0)
    acc = np.zeros(8, np.float32)
    with pytest.raises(gradckpt.InvalidArgumentError, match="^acc: the array is read-only"):
        gradckpt.add_(x, acc)
    with pytest.raises(gradckpt.InvalidArgumentError):
        gradckpt.scale_(bytes(16), 1.0)
    assert (x == 1).all()


def test_not_on_cpu():
    t = torch.zeros(4, device="meta")
    with pytest.raises(gradckpt.InvalidArgumentError, match="^x: expected a CPU tensor, got one on device 'meta'"):
        gradckpt.sumsq(t)


def test_length_mismatch_and_bad_p():
    with pytest.raises(gradckpt.DimensionMismatchError, match="x has 3 elements but acc has 4"):
        gradckpt.add_(np.zeros(4), np.zeros(3))
    with pytest.raises(gradckpt.DimensionMismatchError):
        gradckpt.dist2(np.zeros(4), np.zeros(5))
    for p in (0.0, -1.0, math.nan):
        with pytest.raises(gradckpt.InvalidArgumentError, match="p must be > 0"):
            gradckpt.pnorm(np.ones(3), p)


def test_dlpack_only_objects():
    class OnlyDLPack:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, **kw):
            return self.t.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    t = torch.arange(6, dtype=torch.float64)
    assert gradckpt.sumsq(OnlyDLPack(t)) == 55.0
    gradckpt.scale_(OnlyDLPack(t), 2.0)
    assert t[5].item() == 10.0
    with pytest.raises(gradckpt.InvalidArgumentError, match="C-contiguous"):
        gradckpt.sumsq(OnlyDLPack(t[::2]))


# ---- the GIL -----------------------------------------------------------------


def test_long_calls_release_the_gil(rng):
    """While one thread is inside a long gradckpt call, another thread runs Python.

    The switch interval is raised to 30 s, so the waiting thread gets the GIL
    during the call only if the call released it (never by a forced switch)."""
    big = rng.standard_normal(1 << 22).astype(np.float32)
    tensors = [big] * 96  # one C call over 1.6 GB of reads: long enough for any scheduler
    state = {"phase": "before", "seen_inside": 0}
    ready = threading.Event()

    def worker():
        state["phase"] = "inside"
        ready.set()
        try:
            state["norm"] = gradckpt.global_norm(tensors)
        finally:
            state["phase"] = "after"

    old = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        th = threading.Thread(target=worker)
        th.start()
        ready.wait()
        while state["phase"] != "after":
            if state["phase"] == "inside":
                state["seen_inside"] += 1
            time.sleep(0)  # let the worker take the GIL back when its call returns
        th.join()
    finally:
        sys.setswitchinterval(old)
    assert state["seen_inside"] > 0
    assert state["norm"] == pytest.approx(math.sqrt(96 * gradckpt.sumsq(big)), rel=1e-12)


def test_two_threads_run_kernels_at_once(rng):
    xs = [rng.standard_normal(1 << 20).astype(np.float32) for _ in range(4)]
    want = [gradckpt.sumsq(x) for x in xs]
    out = [[] for _ in range(2)]

    def work(k):
        for _ in range(20):
            out[k].append([gradckpt.sumsq(x) for x in xs])

    ths = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    for k in range(2):
        assert all(r == want for r in out[k])


def _acc_x_lists(rng, acc_dt, x_dt):
    """acc (float32/float64) and x (any kernel dtype) lists: sizes 0, 1, odd tails, large; misaligned starts;
    +-0, denormals, huge values, NaN and Inf."""
    sizes = [0, 1, 7, 33, 1000, 65537, 300001]
    acc, x = [], []
    for i, n in enumerate(sizes):
        a = (rng.standard_normal(n + 1) * 3.0).astype(acc_dt)[1:]  # misaligned by one element
        v = torch.from_numpy((rng.standard_normal(n + 1) * 3.0).astype(np.float32)[1:]).to(x_dt)
        if n >= 1000:
            fa, fx = np.finfo(acc_dt), torch.finfo(x_dt)
            a[:6] = [0.0, -0.0, fa.smallest_subnormal, fa.max / 4, -fa.smallest_normal, 1.0]
            v[:6] = torch.tensor([-0.0, fx.smallest_normal / 2, -fx.smallest_normal, fx.max / 4, 1e-30, 2.0],
                                 dtype=torch.float64).to(x_dt)
            if i == len(sizes) - 2:
                a[7], a[8] = np.nan, np.inf
                v[9], v[10] = -math.inf, math.nan
        acc.append(torch.from_numpy(a))
        x.append(v)
    return acc, x


@pytest.mark.parametrize("acc_dt", DTYPES)
@pytest.mark.parametrize("x_dt", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_tensors_axpy_div_sumsq_equals_axpy_then_div_sumsq(rng, every_isa, acc_dt, x_dt):
    acc, x = _acc_x_lists(rng, acc_dt, x_dt)
    for w, d in ((1.0, 3.0), (0.3, 1.0 / 7.0), (-2.5, 1e-300)):
        want = [a.clone() for a in acc]
        gradckpt.tensors_axpy_(want, w, x)
        want_total = gradckpt.tensors_div_sumsq_(want, d)
        for isa in every_isa:
            gradckpt.select_isa(isa)
            for t in (1, 2):
                gradckpt.set_num_threads(t)
                got = [a.clone() for a in acc]
                ptrs = [g.data_ptr() for g in got]
                total = gradckpt.tensors_axpy_div_sumsq_(got, w, x, d)
                assert bits(total) == bits(want_total), (isa, t, w, d)
                assert [g.data_ptr() for g in got] == ptrs
                for g, e in zip(got, want):
                    assert bits(g.numpy()) == bits(e.numpy()), (isa, t, w, d)
    gradckpt.set_num_threads(2)


def test_tensors_axpy_div_sumsq_x_is_acc_and_errors(rng):
    acc = [torch.from_numpy(rng.standard_normal(n).astype(np.float32)) for n in (5, 70000)]
    want = [a.clone() for a in acc]
    gradckpt.tensors_axpy_(want, 0.5, [w.clone() for w in want])
    want_total = gradckpt.tensors_div_sumsq_(want, 3.0)
    total = gradckpt.tensors_axpy_div_sumsq_(acc, 0.5, acc, 3.0)  # x is acc itself
    assert bits(total) == bits(want_total)
    assert bits(math.sqrt(total)) == bits(gradckpt.global_norm(acc))  # float32: exactly the list's norm
    assert all(torch.equal(a, w) for a, w in zip(acc, want))
    before = [a.clone() for a in acc]
    x16 = [a.to(torch.bfloat16) for a in acc]
    with pytest.raises(gradckpt.UnsupportedError):  # a 16-bit acc
        gradckpt.tensors_axpy_div_sumsq_([acc[0], x16[1]], 1.0, acc, 2.0)
    with pytest.raises(gradckpt.DimensionMismatchError):
        gradckpt.tensors_axpy_div_sumsq_(acc, 1.0, acc[:1], 2.0)
    with pytest.raises(gradckpt.DimensionMismatchError):
        gradckpt.tensors_axpy_div_sumsq_(acc, 1.0, [acc[0], acc[1][1:]], 2.0)
    with pytest.raises(gradckpt.DTypeError):
        gradckpt.tensors_axpy_div_sumsq_(acc, 1.0, [acc[0], torch.ones(70000, dtype=torch.int32)], 2.0)
    assert all(torch.equal(a, b) for a, b in zip(acc, before))  # nothing written on any error


def test_forked_worker_after_threads():
    """A worker forked after gradckpt ran its OpenMP threads (multiprocessing's
    fork, a DataLoader worker) gets the same bits on one thread, not a hang:
    libgomp cannot start a team in such a child."""
    out = run_python(
        "import multiprocessing as mp, numpy as np, gradckpt\n"
        "gradckpt.set_num_threads(2)\n"
        "x = np.random.default_rng(3).standard_normal(1 << 22).astype(np.float32)\n"
        "def norm(a):\n"
        "    return gradckpt.l2norm(a), gradckpt.get_num_threads()\n"
        "want = norm(x)\n"
        "with mp.get_context('fork').Pool(1) as p:\n"
        "    got = p.apply_async(norm, (x,)).get(timeout=60)\n"
        "print(got[0] == want[0], want[1], got[1])\n",
        timeout=120,
    )
    assert out.split() == ["True", "2", "1"]  # the child reports the one thread it runs on
