"""bfloat16 / float16 arrays: kernels, lists, the checkpointer and gradckpt.torch against torch and NumPy.

Norms equal those of the float32 copies bit for bit; scaling is bit-identical
to torch's mul_ (NaN payloads aside: any NaN equals any NaN); nothing is
copied (pointers kept, RSS flat).
"""
import gc
import math

import ml_dtypes
import numpy as np
import pytest
import torch
from torch import nn

import gradckpt
import gradckpt.torch as gt

HALF = [torch.bfloat16, torch.float16]
NP_OF = {torch.bfloat16: ml_dtypes.bfloat16, torch.float16: np.float16}


def specials(dt):
    """+-0, the smallest and largest denormals, the smallest normal, the largest finite, +-Inf, NaN, 1 and ties."""
    fi = torch.finfo(dt)
    vals = [0.0, -0.0, fi.smallest_normal, -fi.smallest_normal, fi.max, -fi.max, math.inf, -math.inf, math.nan,
            1.0, -1.0, 1.5, 3.0]
    t = torch.tensor(vals, dtype=dt)
    sub = torch.tensor([1, 2, 3, 0x7F if dt == torch.bfloat16 else 0x3FF, 0x8001], dtype=torch.int32).to(torch.int16)
    return torch.cat([t, sub.view(dt)])


def every_pattern(dt):
    """Every 16-bit pattern of dt (NaNs, infinities, denormals included)."""
    return torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dt)


def random_half(rng, n, dt, finite=True, scale=1.0, largest=True):
    x = torch.from_numpy((rng.standard_normal(n) * scale).astype(np.float32)).to(dt)
    if n >= 40:
        sp = specials(dt)
        if finite:
            sp = sp[torch.isfinite(sp.float())]
        if not largest:  # a norm of the largest finite value and more is inf in dt
            sp = sp[sp.float().abs() < torch.finfo(dt).max]
        idx = torch.from_numpy(rng.choice(n, len(sp), replace=False))
        x[idx] = sp
    return x


def same(a, b):
    """Bit-identical 16-bit tensors, any NaN equal to any NaN."""
    a, b = a.contiguous(), b.contiguous()
    an, bn = torch.isnan(a.float()), torch.isnan(b.float())
    return bool(torch.equal(an, bn)) and bool(torch.equal(a.view(torch.int16)[~an], b.view(torch.int16)[~bn]))


def fbits(x):
    return np.float64(x).view(np.uint64).item()


def ulp16(v, dt):
    """The spacing of dt at |v|."""
    e = math.frexp(abs(v))[1] - 1
    return 2.0 ** (e - (7 if dt == torch.bfloat16 else 10))


# ---- kernels on one array ----------------------------------------------------------


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("n", [0, 1, 7, 1000, 70003])
def test_reductions_equal_the_float32_copy(rng, dt, n):
    x = random_half(rng, n, dt, finite=True, scale=3.0)
    y = random_half(rng, n, dt, finite=True)
    xf, yf = x.float(), y.float()
    assert fbits(gradckpt.sumsq(x)) == fbits(gradckpt.sumsq(xf))
    assert fbits(gradckpt.l2norm(x)) == fbits(gradckpt.l2norm(xf))
    for p in (1.0, 3.0, 0.5, math.inf):
        assert fbits(gradckpt.pnorm(x, p)) == fbits(gradckpt.pnorm(xf, p))
    assert fbits(gradckpt.dist2(x, y)) == fbits(gradckpt.dist2(xf, yf))
    # NumPy float16 / ml_dtypes.bfloat16 arrays over the same memory give the same bits
    xn = x.view(torch.int16).numpy().view(NP_OF[dt])
    assert fbits(gradckpt.sumsq(xn)) == fbits(gradckpt.sumsq(x))
    assert fbits(gradckpt.pnorm(xn, 3.0)) == fbits(gradckpt.pnorm(x, 3.0))
    # and the value is the float64 sum of squares (any order: within 1e-12)
    want = float(np.sum(xf.double().numpy() ** 2))
    assert gradckpt.sumsq(x) == pytest.approx(want, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("dt", HALF)
def test_reductions_of_every_pattern(dt):
    x = every_pattern(dt)
    xf = x.float()
    fin = torch.isfinite(xf)
    for t in (x, x[fin].contiguous()):
        tf = t.float()
        for f in (gradckpt.sumsq, gradckpt.l2norm):
            a, b = f(t), f(tf)
            assert fbits(a) == fbits(b) or (math.isnan(a) and math.isnan(b))
        for p in (1.0, 3.0, math.inf):
            a, b = gradckpt.pnorm(t, p), gradckpt.pnorm(tf, p)
            assert fbits(a) == fbits(b) or (math.isnan(a) and math.isnan(b))
    assert math.isnan(gradckpt.sumsq(x)) and math.isinf(gradckpt.sumsq(x[fin | torch.isinf(xf)].contiguous()))


SCALES = [0.3, 1 / 3, -2.5, 0.999, 1 + 2 ** -8, 1 + 3 * 2 ** -9, 1 + 2 ** -11, 1 + 2 ** -12, 1e-30, 6e-8, 3e38, 65504.0,
          0.0, -0.0, 1.0, math.inf, -math.inf, math.nan, 1e-6 / 3]


@pytest.mark.parametrize("dt", HALF)
def test_scale_is_torch_mul_on_every_pattern(dt):
    x = every_pattern(dt)
    for s in SCALES:
        want = x.clone().mul_(s)
        got = x.clone()
        ptr = got.data_ptr()
        assert gradckpt.scale_(got, s) is got
        assert got.data_ptr() == ptr
        assert same(want, got), s
        # a 0-d float32 coefficient tensor (what clip_grad_norm_ multiplies by) rounds the same way
        want2 = x.clone().mul_(torch.tensor(s, dtype=torch.float32))
        assert same(want2, got), s


@pytest.mark.parametrize("dt", HALF)
def test_scale_numpy_and_ml_dtypes_in_place(rng, dt):
    x = random_half(rng, 5001, dt, finite=False)
    a = x.view(torch.int16).numpy().copy().view(NP_OF[dt])
    gradckpt.scale_(a, 0.37)
    assert same(torch.from_numpy(a.view(np.int16)).view(dt), x.clone().mul_(0.37))
    if dt == torch.float16:  # NumPy computes float16 * float32 in float32, then rounds: the same rule
        b = x.numpy().copy()
        assert same(torch.from_numpy((b * np.float32(0.37)).astype(np.float16)), x.clone().mul_(0.37))


@pytest.mark.parametrize("dt", HALF)
def test_add_axpy_into_float32_and_float64(rng, dt):
    x = random_half(rng, 70001, dt, finite=False)
    xn = x.view(torch.int16).numpy().view(NP_OF[dt])
    for adt in (torch.float32, torch.float64):
        acc0 = torch.from_numpy(rng.standard_normal(70001)).to(adt)
        acc = acc0.clone()
        gradckpt.add_(acc, x)
        assert same(acc, acc0 + x.to(adt)) if False else torch.equal(torch.isnan(acc), torch.isnan(acc0 + x.to(adt)))
        ok = ~torch.isnan(acc)
        assert torch.equal(acc[ok], (acc0 + x.to(adt))[ok])
        acc = acc0.clone()
        gradckpt.add_(acc, xn)  # the NumPy view of the same bits
        assert torch.equal(acc[ok], (acc0 + x.to(adt))[ok])
        w = 0.3
        acc = acc0.clone()
        gradckpt.axpy_(acc, w, x)
        wt = torch.tensor(w, dtype=adt)
        want = acc0 + x.to(adt) * wt  # two roundings, in acc's dtype (w rounded to float32 for float32)
        ok = ~torch.isnan(want)
        assert torch.equal(acc[ok], want[ok]) and torch.isnan(acc[~ok]).all()


def test_16bit_acc_and_other_errors():
    x = torch.ones(4, dtype=torch.bfloat16)
    with pytest.raises(gradckpt.DTypeError, match="^acc: expected float32 or float64 here, got bfloat16 "
                                                  r"\(16-bit values are accumulated"):
        gradckpt.add_(x, torch.ones(4))
    with pytest.raises(gradckpt.DTypeError, match="^acc: expected float32 or float64 here, got float16"):
        gradckpt.axpy_(np.ones(4, np.float16), 2.0, np.ones(4, np.float16))
    with pytest.raises(gradckpt.DTypeError, match="^x: expected float32, float64, bfloat16 or float16, got int16"):
        gradckpt.sumsq(np.zeros(4, np.int16))
    with pytest.raises(TypeError, match="^b: expected bfloat16 like a, got float16"):
        gradckpt.dist2(x, torch.ones(4, dtype=torch.float16))
    with pytest.raises(gradckpt.UnsupportedError, match="dtype BF16 is not supported \\(F32 or F64 here\\)"):
        gradckpt.tensors_div_sumsq_([x], 2.0)
    with pytest.raises(gradckpt.UnsupportedError, match="acc tensor 0: dtype F16"):
        gradckpt.tensors_add_([torch.ones(4, dtype=torch.float16)], [x])
    f = torch.ones(8)
    with pytest.raises(gradckpt.InvalidArgumentError, match="overlaps"):
        gradckpt.add_(f, f.view(torch.bfloat16)[:8])
    assert torch.equal(x, torch.ones(4, dtype=torch.bfloat16)) and torch.equal(f, torch.ones(8))


# ---- lists -----------------------------------------------------------------------------


@pytest.mark.parametrize("dt", HALF)
def test_list_norms_equal_the_float32_list(rng, dt):
    ts = [random_half(rng, n, dt, scale=0.01 * (i + 1)) for i, n in enumerate([0, 1, 300, 70000, 5, 200000])]
    fs = [t.float() for t in ts]
    for p in (2.0, 1.0, 3.0, math.inf):
        assert fbits(gradckpt.global_norm(ts, p)) == fbits(gradckpt.global_norm(fs, p))
    # mixed with float32 / float64 tensors and NumPy / ml_dtypes arrays in one list
    mixed = [ts[2], fs[3], ts[4].double(), ts[5].view(torch.int16).numpy().view(NP_OF[dt])]
    wide = [fs[2], fs[3], ts[4].double(), fs[5]]
    assert fbits(gradckpt.global_norm(mixed)) == fbits(gradckpt.global_norm(wide))


@pytest.mark.parametrize("dt", HALF)
def test_list_clip_scale_and_accumulate(rng, dt):
    ts = [random_half(rng, n, dt, scale=0.5) for n in (3, 70000, 1 << 17, 0, 9)]
    orig = [t.clone() for t in ts]
    ptrs = [t.data_ptr() for t in ts]
    total, coef, clipped = gradckpt.clip_info_(ts, 1.0)
    assert fbits(total) == fbits(gradckpt.global_norm([t.float() for t in orig]))
    assert clipped and coef == 1.0 / (total + 1e-6)
    for t, o in zip(ts, orig):  # torch's mul_ by the float32 coefficient
        assert same(t, o.clone().mul_(torch.tensor(coef, dtype=torch.float32)))
    assert [t.data_ptr() for t in ts] == ptrs
    gradckpt.tensors_scale_(ts, -0.7)
    for t, o in zip(ts, orig):
        assert same(t, o.clone().mul_(torch.tensor(coef, dtype=torch.float32)).mul_(-0.7))
    # micro-batch accumulation: 16-bit x into float32 / float64 accumulators
    for adt in (torch.float32, torch.float64):
        acc = [torch.zeros(t.numel(), dtype=adt) for t in ts]
        gradckpt.tensors_axpy_init_(acc, 1.0, orig)
        gradckpt.tensors_add_(acc, orig)
        gradckpt.tensors_axpy_(acc, 0.5, orig)
        for a, o in zip(acc, orig):
            x = o.to(adt)
            w = torch.tensor(0.5, dtype=adt)
            want = (x + x) + x * w
            assert torch.equal(a, want)


# ---- the checkpointer ----------------------------------------------------------------


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("storage", ["float32", "float64"])
def test_checkpointer_accumulates_16bit_as_their_float32_copies(rng, dt, storage):
    a = gradckpt.Checkpointer(mode="mean", dtype=storage, clip_norm=1.0)
    b = gradckpt.Checkpointer(mode="mean", dtype=storage, clip_norm=1.0)
    for mb in range(3):
        g = {"w": random_half(rng, 7000, dt), "b": random_half(rng, 33, dt)}
        a.accumulate("w", g["w"])
        a.accumulate_many({"b": g["b"].view(torch.int16).numpy().view(NP_OF[dt])})
        b.accumulate_many({k: v.float() for k, v in g.items()})
    ca, cb = a.flush(), b.flush()
    assert ca.global_norm == cb.global_norm
    for k in ("w", "b"):
        assert np.array_equal(ca[k].view(np.uint8), cb[k].view(np.uint8))
    # flush_into a 16-bit buffer is refused (storage dtype only), nothing changes
    a.accumulate("w", torch.ones(7000, dtype=dt))
    with pytest.raises(gradckpt.UnsupportedError):
        a.flush_into({"w": torch.zeros(7000, dtype=dt)})
    assert a.pending_count == 1


def bf16_reference(tensors, mode, weights):
    """BF16 storage, SPEC 1.3 in float32: every input widened to float32 (float64 rounded to it), summed in
    order ((0 + t1) + t2) + ... (weighted: r + t_i * float32(w_i)), divided by float32(count or sum of w),
    then rounded once to bfloat16. Returns (the float32 result, its bfloat16 rounding)."""
    r = torch.zeros(tensors[0].numel(), dtype=torch.float32)
    wsum = 0.0
    for i, x in enumerate(tensors):
        x = x.float()
        if mode == "weighted_mean":
            w = weights[i] if i < len(weights) else 1.0
            r = r + x * torch.tensor(w, dtype=torch.float32)
            wsum += w
        else:
            r = r + x
    if mode == "mean":
        r = r / torch.tensor(float(len(tensors)), dtype=torch.float32)
    elif mode == "weighted_mean" and wsum != 0.0:
        r = r / torch.tensor(wsum, dtype=torch.float32)
    return r, r.to(torch.bfloat16)


@pytest.mark.parametrize("mode", ["sum", "mean", "weighted_mean"])
@pytest.mark.parametrize("clip", [None, 0.5, 1e9])
def test_bfloat16_storage_equals_the_torch_reference(rng, mode, clip):
    """bfloat16 checkpoints: accumulated in float32 from bfloat16/float16/float32/float64 inputs, rounded once."""
    weights = [0.5, 3.0, 0.1]
    cp = gradckpt.Checkpointer(mode=mode, weights=weights, clip_norm=clip, dtype="bfloat16")
    layers = {"w": [random_half(rng, 70001, torch.bfloat16, largest=False) for _ in range(4)],  # denormals, -0
              "b": [random_half(rng, 33, torch.float16) for _ in range(4)],
              "a.f32": [torch.from_numpy(rng.standard_normal(1000).astype(np.float32)) for _ in range(4)],
              "a.f64": [torch.from_numpy(rng.standard_normal(7)) for _ in range(4)],
              "z": [torch.zeros(0, dtype=torch.bfloat16) for _ in range(4)]}
    for i in range(4):
        cp.accumulate_many({k: v[i] for k, v in layers.items()})
    ck = cp.flush(now=7)
    order = sorted(layers)
    assert (ck.dtype, ck.layers, ck.num_values) == ("bfloat16", order, 70001 + 33 + 1000 + 7)
    ref = {k: bf16_reference(v, mode, weights) for k, v in layers.items()}
    low = ref["w"][0].view(torch.int32) & 0xFFFF
    assert int((low == 0x8000).sum()) > 10  # ties: the rounding to nearest even is exercised
    # every norm is that of the rounded values: the layers' sums of squares added in layer-id order
    norm = gradckpt.global_norm([ref[k][1] for k in order])
    assert fbits(ck.norm_before_clip) == fbits(norm)
    assert norm == pytest.approx(math.sqrt(sum(float(ref[k][1].double().square().sum()) for k in order)), rel=1e-12)
    clipped = clip is not None and norm > clip
    coef = torch.tensor(clip / norm, dtype=torch.float32) if clipped else None
    assert ck.clip_coef == (clip / norm if clipped else 1.0)
    for k in order:
        want = (ref[k][0] * coef).to(torch.bfloat16) if clipped else ref[k][1]  # rounded once, from float32
        t = ck.torch(k)
        assert t.dtype == torch.bfloat16 and same(t, want), k
        v = ck[k]  # the NumPy view: ml_dtypes.bfloat16 over the same memory
        assert v.dtype == ml_dtypes.bfloat16 and not v.flags.writeable
        assert v.size == 0 or v.ctypes.data == t.data_ptr()
        assert same(torch.from_numpy(v.view(np.int16).copy()).view(torch.bfloat16), want)
        assert ck.layer_norm(k) == pytest.approx(float(want.double().norm()), rel=1e-12)
    assert ck.global_norm == pytest.approx(math.sqrt(sum(ck.layer_norm(k) ** 2 for k in order)), rel=1e-12)
    assert ck.verify()


def test_bfloat16_storage_flush_into_files_and_errors(tmp_path, rng):
    gs = [{"w": random_half(rng, 5000, torch.bfloat16, scale=0.5), "v": random_half(rng, 7, torch.bfloat16)}
          for _ in range(3)]
    a = gradckpt.Checkpointer(mode="mean", dtype="bfloat16", clip_norm=1.0, checksum="xxh3")
    b = gradckpt.Checkpointer(mode="mean", dtype="bf16", clip_norm=1.0, checksum="xxh3")
    for g in gs:
        a.accumulate_many(g)
        b.accumulate_many(g)
    ck = a.flush()
    # flush_into bfloat16 tensors and ml_dtypes arrays: flush's bits, the tensors written in place
    dst = {"w": torch.empty(5000, dtype=torch.bfloat16), "v": np.empty(7, ml_dtypes.bfloat16)}
    ptr = dst["w"].data_ptr()
    total, coef, clipped, rec = b.flush_into(dst)
    assert rec is None and clipped and b.latest is None and b.flush_count == 1 and dst["w"].data_ptr() == ptr
    assert (total, coef) == (ck.norm_before_clip, ck.clip_coef)
    assert same(dst["w"], ck.torch("w")) and dst["v"].tobytes() == ck["v"].tobytes()
    # a list in pending order (v, w), record=True: the same checkpoint as flush
    for g in gs:
        b.accumulate_many(g)
    out = [torch.empty(7, dtype=torch.bfloat16), torch.empty(5000, dtype=torch.bfloat16)]
    _, _, _, rec = b.flush_into(out, record=True)
    assert rec.dtype == "bfloat16" and rec.checksum == ck.checksum and same(out[1], ck.torch("w"))
    # any other dst dtype is refused, nothing written, the window kept
    for g in gs:
        b.accumulate_many(g)
    for bad in (torch.float32, torch.float16, torch.float64):
        d = {"w": torch.full((5000,), 9.0, dtype=bad), "v": torch.empty(7, dtype=torch.bfloat16)}
        with pytest.raises(gradckpt.UnsupportedError, match="BF16"):
            b.flush_into(d)
        assert bool((d["w"] == 9.0).all()) and b.pending_count == 6 and b.flush_count == 2
    # files: the bfloat16 values and their checksum survive save/load; views outlive the checkpointer
    path = str(tmp_path / "ck.safetensors")
    ck.save(path)
    back = gradckpt.Checkpoint.load(path)
    assert back.dtype == "bfloat16" and back.verify() and same(back.torch("w"), ck.torch("w"))
    t = ck.torch("w")
    del a, ck
    gc.collect()
    assert same(t, back.torch("w"))
    # NaN and Inf are stored (judged only with error_if_nonfinite): every NaN as 0xFFFF
    c = gradckpt.Checkpointer(dtype="bfloat16")
    c.accumulate("x", torch.tensor([math.inf, math.nan, -math.inf, 1.0], dtype=torch.float32))
    c.accumulate("x", torch.tensor([1.0, 1.0, -1.0, 3e38], dtype=torch.float32))  # 1 + 3e38: float32, rounded
    x = c.flush().torch("x")
    big = torch.tensor(3e38).to(torch.bfloat16).view(torch.int16).item()
    assert x.view(torch.int16).tolist() == [0x7F80, -1, -0x80, big]
    # float16 storage does not exist
    with pytest.raises(gradckpt.UnsupportedError, match="bfloat16"):
        gradckpt.Checkpointer(dtype="float16")


def bf16_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)).to(torch.bfloat16)


@pytest.mark.parametrize("mode", ["sum", "mean", "weighted_mean"])
@pytest.mark.parametrize("clip", [None, 0.5])
def test_gradient_accumulator_bfloat16_model_bit_for_bit(mode, clip):
    model = bf16_model()
    weights = [0.5, 2.0, 1.5, 0.25]
    xs = [torch.randn(5, 8, generator=torch.Generator().manual_seed(i)).to(torch.bfloat16) for i in range(4)]
    per = []
    for x in xs:
        model.zero_grad(set_to_none=True)
        model(x).float().square().sum().backward()
        per.append({n: p.grad.clone() for n, p in model.named_parameters()})
    model.zero_grad(set_to_none=True)
    acc = gt.GradientAccumulator(model.named_parameters(), mode=mode, clip_norm=clip,
                                 weights=weights if mode == "weighted_mean" else None)
    ptrs = None
    for _ in range(2):  # the second step writes into the gradient buffers the first one made
        for x in xs:
            model(x).float().square().sum().backward()
            assert acc.accumulate() == 4
        total = acc.step()
        names = sorted(n for n, _ in model.named_parameters())
        ref = {n: bf16_reference([g[n].reshape(-1) for g in per], mode, weights) for n in names}
        norm = gradckpt.global_norm([ref[n][1] for n in names])
        assert fbits(total) == fbits(norm)
        clipped = clip is not None and norm > clip
        assert clipped == (clip is not None)  # these gradients are large enough to be clipped
        assert acc.last_clip_coef == (clip / norm if clipped else 1.0)
        for n, p in model.named_parameters():
            want = (ref[n][0] * torch.tensor(clip / norm, dtype=torch.float32)).to(torch.bfloat16) if clipped \
                else ref[n][1]
            assert p.grad.dtype == torch.bfloat16 and p.grad.shape == p.shape
            assert same(p.grad.reshape(-1), want), n
        if ptrs is None:
            ptrs = [p.grad.data_ptr() for p in model.parameters()]
        assert [p.grad.data_ptr() for p in model.parameters()] == ptrs
        model.zero_grad(set_to_none=True)


def test_gradient_accumulator_bfloat16_step_copies_nothing():
    """step() finishes 16 M bfloat16 gradients into p.grad in place: RSS flat (after the C flush's staging
    buffers, allocated by the first step and reused), p.grad's memory kept."""
    def rss_kb():
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

    n, count = 16 * 1024 * 1024, 16
    ps = [nn.Parameter(torch.empty(n // count, dtype=torch.bfloat16)) for _ in range(count)]
    grads = [torch.full((n // count,), 1e-3 * (i + 1), dtype=torch.bfloat16) for i in range(count)]
    acc = gt.GradientAccumulator(ps, mode="mean", clip_norm=1.0)
    for p, g in zip(ps, grads):
        p.grad = g
    for _ in range(2):
        acc.accumulate(set_to_none=False)
    before = rss_kb()
    acc.step()  # the first flush allocates the checkpointer's float32 + bfloat16 staging (6 bytes a value)
    first = rss_kb() - before
    assert [p.grad.data_ptr() for p in ps] == [g.data_ptr() for g in grads]
    for _ in range(2):
        acc.accumulate(set_to_none=False)
    before = rss_kb()
    acc.step()
    grown = rss_kb() - before
    assert [p.grad.data_ptr() for p in ps] == [g.data_ptr() for g in grads]
    # a copy of our own would add at least 2 bytes a value (32 MB) more
    assert first < 6 * n // 1024 + 8 * 1024, f"the first step grew RSS by {first} kB"
    assert grown < 1024, f"RSS grew by {grown} kB"


def test_gradient_accumulator_refuses_float16_and_mixed_parameters_with_the_reason():
    with pytest.raises(gradckpt.InvalidArgumentError, match="no float16 storage"):
        gt.GradientAccumulator([("w", nn.Parameter(torch.ones(2, dtype=torch.float16)))])
    with pytest.raises(gradckpt.InvalidArgumentError, match="mix dtypes"):
        gt.GradientAccumulator([("w", nn.Parameter(torch.ones(2, dtype=torch.bfloat16))),
                                ("v", nn.Parameter(torch.ones(2)))])


# ---- gradckpt.torch ------------------------------------------------------------------------


def model_grads(rng, dt, shapes, scale=0.01, finite=True):
    ps, qs = [], []
    for n in shapes:
        g = random_half(rng, n, dt, finite=finite, scale=scale, largest=False)
        p, q = nn.Parameter(torch.zeros(n, dtype=dt)), nn.Parameter(torch.zeros(n, dtype=dt))
        p.grad, q.grad = g.clone(), g.clone()
        ps.append(p)
        qs.append(q)
    return ps, qs


@pytest.mark.parametrize("dt", HALF)
def test_clip_grad_norm_matches_torch(rng, dt):
    """Same dtype; total within one 16-bit ulp (ours exact); grads bit-identical to torch's
    clip_grads_with_norm_ with our total, and to clip_grad_norm_ whenever the totals agree."""
    shapes = [768 * 64, 768, 3072 * 16, 3072, 5, 1]
    agreed = 0
    for seed in range(12):
        r = np.random.default_rng(seed)
        ps, qs = model_grads(r, dt, shapes, scale=0.02)
        exact = gradckpt.global_norm([p.grad.float() for p in ps])
        ptrs = [p.grad.data_ptr() for p in ps]
        ours = gt.clip_grad_norm_(ps, 1.0)
        assert [p.grad.data_ptr() for p in ps] == ptrs
        assert ours.dtype == dt and ours.item() == torch.tensor(exact, dtype=dt).item()
        rs = [nn.Parameter(torch.zeros_like(q.grad)) for q in qs]
        for rr, q in zip(rs, qs):
            rr.grad = q.grad.clone()
        theirs = torch.nn.utils.clip_grad_norm_(qs, 1.0)
        assert theirs.dtype == dt
        assert abs(ours.item() - theirs.item()) <= ulp16(theirs.item(), dt)
        torch.nn.utils.clip_grads_with_norm_(rs, 1.0, ours)
        for p, rr in zip(ps, rs):
            assert same(p.grad, rr.grad)
        if ours.item() == theirs.item():
            agreed += 1
            for p, q in zip(ps, qs):
                assert same(p.grad, q.grad)
    assert agreed >= 6, agreed


@pytest.mark.parametrize("dt", HALF)
def test_clip_grad_norm_special_grads_as_torch(dt):
    fi = torch.finfo(dt)
    cases = {
        "zeros": [torch.zeros(10, dtype=dt), torch.tensor([-0.0], dtype=dt)],
        "denormals": [torch.tensor([1, 2, 0x8003], dtype=torch.int32).to(torch.int16).view(dt)],
        "nan": [torch.tensor([1.0, math.nan], dtype=dt), torch.ones(3, dtype=dt)],
        "inf": [torch.tensor([1.0, -math.inf], dtype=dt), torch.ones(3, dtype=dt)],
        "largest": [torch.tensor([fi.max, -fi.max, 1.0], dtype=dt)],
        "below_max_norm": [torch.full((4,), 0.25, dtype=dt)],
    }
    for name, grads in cases.items():
        for norm_type in (2.0, 1.0, math.inf):
            ps = [nn.Parameter(torch.zeros_like(g)) for g in grads]
            qs = [nn.Parameter(torch.zeros_like(g)) for g in grads]
            for p, q, g in zip(ps, qs, grads):
                p.grad, q.grad = g.clone(), g.clone()
            a = gt.clip_grad_norm_(ps, 1.0, norm_type)
            b = torch.nn.utils.clip_grad_norm_(qs, 1.0, norm_type)
            assert a.dtype == b.dtype, name
            exact = torch.tensor(gradckpt.global_norm([g.float() for g in grads], norm_type), dtype=dt)
            assert same(a.reshape(1), exact.reshape(1)), (name, norm_type, a, exact)
            if name == "denormals" and norm_type == 2.0 and dt == torch.bfloat16:
                assert b.item() == 0.0 < a.item()  # torch's float32 squares underflow; ours are exact
            else:
                assert same(a.reshape(1), b.reshape(1)), (name, norm_type, a, b)
            for p, q in zip(ps, qs):
                assert same(p.grad, q.grad), (name, norm_type)
            if not math.isfinite(b.item()):
                ps2 = [nn.Parameter(torch.zeros_like(g)) for g in grads]
                for p, g in zip(ps2, grads):
                    p.grad = g.clone()
                with pytest.raises(RuntimeError, match="non-finite"):
                    gt.clip_grad_norm_(ps2, 1.0, norm_type, error_if_nonfinite=True)
                for p, g in zip(ps2, grads):
                    assert same(p.grad, g)


def test_float16_total_overflows_as_in_torch():
    """An f16 total above 65504 is inf in torch's dtype: coefficient 0, as torch."""
    grads = [torch.full((4,), 40000.0, dtype=torch.float16)]
    ps = [nn.Parameter(torch.zeros(4, dtype=torch.float16))]
    qs = [nn.Parameter(torch.zeros(4, dtype=torch.float16))]
    ps[0].grad, qs[0].grad = grads[0].clone(), grads[0].clone()
    a = gt.clip_grad_norm_(ps, 1.0)
    b = torch.nn.utils.clip_grad_norm_(qs, 1.0)
    assert math.isinf(a.item()) and math.isinf(b.item())
    assert same(ps[0].grad, qs[0].grad)


def test_mixed_dtype_grads_promote_as_torch(rng):
    for dts, want in (((torch.bfloat16, torch.float32), torch.float32),
                      ((torch.bfloat16, torch.float16), torch.float32),
                      ((torch.float16, torch.float64), torch.float64)):
        ps, qs = [], []
        for i, dt in enumerate(dts * 2):
            g = torch.from_numpy(rng.standard_normal(1000 + i).astype(np.float32)).to(dt)
            p, q = nn.Parameter(torch.zeros_like(g)), nn.Parameter(torch.zeros_like(g))
            p.grad, q.grad = g.clone(), g.clone()
            ps.append(p)
            qs.append(q)
        a = gt.clip_grad_norm_(ps, 1.0)
        b = torch.nn.utils.clip_grad_norm_(qs, 1.0)
        assert a.dtype == b.dtype == want
        assert a.item() == pytest.approx(b.item(), rel=1e-2)
        for p, q in zip(ps, qs):  # 16-bit grads: within one ulp of theirs (the coefficients differ slightly)
            torch.testing.assert_close(p.grad.float(), q.grad.float(), rtol=1e-2, atol=0)


@pytest.mark.parametrize("dt", HALF)
def test_get_total_norm_and_clip_grads_with_norm(rng, dt):
    ts = [random_half(rng, n, dt, largest=False) for n in (100, 7000, 3)]
    t = gt.get_total_norm(ts)
    assert t.dtype == dt
    assert t.item() == torch.tensor(gradckpt.global_norm([x.float() for x in ts]), dtype=dt).item()
    theirs = torch.nn.utils.get_total_norm(ts)
    assert abs(t.item() - theirs.item()) <= ulp16(theirs.item(), dt)
    ps, qs = model_grads(rng, dt, (100, 7000, 3), scale=1.0)
    total = torch.nn.utils.get_total_norm([p.grad for p in ps])
    gt.clip_grads_with_norm_(ps, 1.0, total)
    torch.nn.utils.clip_grads_with_norm_(qs, 1.0, total)
    for p, q in zip(ps, qs):
        assert same(p.grad, q.grad)


def test_clip_of_16bit_grads_copies_nothing():
    """RSS grows by less than 1 MB while 32 M bfloat16 gradients (64 MB) are clipped."""
    def rss_kb():
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

    n, count = 32 * 1024 * 1024, 64
    flat = torch.full((n,), 1e-3, dtype=torch.bfloat16)
    chunks = flat.chunk(count)
    ps = [nn.Parameter(torch.empty(g.shape, dtype=torch.bfloat16)) for g in chunks]
    for p, g in zip(ps, chunks):
        p.grad = g
    warm = [nn.Parameter(torch.empty(1 << 20, dtype=torch.bfloat16))]
    warm[0].grad = torch.ones(1 << 20, dtype=torch.bfloat16)
    gt.clip_grad_norm_(warm, 0.5)
    gradckpt.clip_([p.grad for p in warm], 0.5)
    before = rss_kb()
    total = gt.clip_grad_norm_(ps, 1.0)
    gradckpt.clip_([p.grad for p in ps], 0.5)
    gradckpt.global_norm(flat.view(torch.int16).numpy().view(ml_dtypes.bfloat16))
    grown = rss_kb() - before
    assert total.dtype == torch.bfloat16
    assert total.item() == pytest.approx(float(torch.tensor(1e-3, dtype=torch.bfloat16)) * math.sqrt(n), rel=1e-2)
    assert grown < 1024, f"RSS grew by {grown} kB"
