"""gradckpt for PyTorch: a faster, bit-reproducible ``clip_grad_norm_``, micro-batch accumulation, files and state.

    from gradckpt.torch import clip_grad_norm_
    total = clip_grad_norm_(model.parameters(), max_norm=1.0)   # torch.nn.utils.clip_grad_norm_'s signature

``clip_grad_norm_``, ``get_total_norm`` and ``clip_grads_with_norm_`` have
torch 2.x's signatures and semantics; float32/float64/bfloat16/float16 CPU
gradients are clipped in ONE call of the C library over the whole list (the
norm of every gradient as if concatenated, combined in list order: the same
bits on every ISA and thread count). Gradients of another device or dtype, or a
``norm_type`` / ``max_norm`` the C library does not take (p <= 0, a negative
max_norm), go to torch's own function, with a one-time warning.
"""
from __future__ import annotations

import json
import math
import os
import types
import warnings
from typing import Any, Dict, Iterable, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import torch

from . import _gradckpt
from . import NonFiniteError, Snapshot, Store, InvalidArgumentError

_TensorOrTensors = Union[torch.Tensor, Iterable[torch.Tensor]]

_warned: set = set()


def _warn_once(what: str, why: str) -> None:
    if what in _warned:
        return
    _warned.add(what)
    warnings.warn(f"gradckpt.torch.{what}: {why}; torch.nn.utils.{what} handles it instead "
                  "(gradckpt takes float32/float64/bfloat16/float16 C-contiguous CPU tensors, norm_type > 0)",
                  RuntimeWarning, stacklevel=3)


def _nonfinite(norm_type: float) -> NonFiniteError:
    return NonFiniteError(
        f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
        "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
        "`error_if_nonfinite=False`")


def _as_list(parameters: _TensorOrTensors, warn_empty_generator: bool = False) -> list:
    if isinstance(parameters, torch.Tensor):
        return [parameters]
    is_generator = isinstance(parameters, types.GeneratorType)
    out = list(parameters)
    if warn_empty_generator and is_generator and not out:
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    return out


def _torch_get_total_norm():
    fn = getattr(torch.nn.utils, "get_total_norm", None)
    if fn is None:  # torch < 2.6
        from torch.nn.utils.clip_grad import _get_total_norm as fn  # type: ignore[attr-defined,no-redef]
    return fn


def _torch_clip_grads_with_norm():
    fn = getattr(torch.nn.utils, "clip_grads_with_norm_", None)
    if fn is None:
        from torch.nn.utils.clip_grad import _clip_grads_with_norm_ as fn  # type: ignore[attr-defined,no-redef]
    return fn


def clip_grad_norm_(parameters: _TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: Optional[bool] = None) -> torch.Tensor:
    """Clips the gradient norm of parameters in place, as ``torch.nn.utils.clip_grad_norm_``.

    The norm of every ``p.grad`` (parameters without one are skipped) as if
    concatenated; when ``coef = max_norm / (total + 1e-6)`` is below 1 every
    gradient is multiplied by it. ``norm_type`` may be ``inf`` or any p > 0.
    With ``error_if_nonfinite`` a NaN/inf total raises ``RuntimeError``
    (gradckpt.NonFiniteError) and no gradient is touched. Returns the total
    norm (before clipping) as a 0-d tensor of the gradients' dtype.

    float32/float64 C-contiguous CPU gradients: ONE call of the C library's
    ``gck_tensors_clip_by_norm`` over all of them, bit-identical on every ISA
    and thread count; the norm is accumulated in float64 (torch: in the
    gradients' dtype), so results agree with torch's to ~1e-7 relative.

    bfloat16/float16 gradients (read and scaled in place, no copy) follow
    torch's semantics: the returned total has torch's dtype (the gradients'
    16-bit dtype when they all share it; float32 when mixed with float32 or
    each other; float64 with float64), the coefficient is computed from that
    returned total exactly as torch computes it (``clamp(max_norm / (total +
    1e-6), max=1)`` in that dtype) and every gradient becomes
    ``(g.float() * float32(coef)).to(g.dtype)`` (torch's ``mul_``). The one
    intended difference: the norm itself is exact (every element widened,
    summed in float64, rounded once to the result dtype) where torch rounds
    each per-tensor norm to 16 bits first; when the two totals round to the
    same 16-bit value (usually) the gradients are bit-identical to torch's,
    and they always are to ``torch.nn.utils.clip_grads_with_norm_(params,
    max_norm, <the returned total>)``.

    Anything else is passed to torch's own function (one warning).
    ``foreach`` is accepted for compatibility (the C call always covers the
    whole list).
    """
    params = _as_list(parameters, warn_empty_generator=True)
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if not (norm_type > 0) or not (max_norm >= 0):
        _warn_once("clip_grad_norm_", f"norm_type {norm_type} / max_norm {max_norm}")
        return torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type, error_if_nonfinite, foreach)
    try:
        r = _gradckpt._torch_clip_params(params, max_norm, norm_type, error_if_nonfinite)
    except NonFiniteError:
        raise _nonfinite(norm_type) from None
    if r is None:
        _warn_once("clip_grad_norm_", "a gradient of another device, dtype or layout")
        return torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type, error_if_nonfinite, foreach)
    total, dtype, count, scaled = r
    if count == 0:
        return torch.tensor(0.0)
    total_t = torch.tensor(total, dtype=dtype)
    if not scaled:  # 16-bit grads: torch's coefficient, from the total rounded to their dtype
        if error_if_nonfinite and not math.isfinite(float(total_t)):
            raise _nonfinite(norm_type)
        coef = float(torch.clamp(max_norm / (total_t + 1e-6), max=1.0))
        if coef != 1.0 and not _gradckpt._torch_scale_params(params, coef):
            raise RuntimeError("gradckpt.torch.clip_grad_norm_: the gradients changed during the call")
    return total_t


def get_total_norm(tensors: _TensorOrTensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: Optional[bool] = None) -> torch.Tensor:
    """The norm of tensors as if concatenated, as ``torch.nn.utils.get_total_norm``.

    ONE call of ``gck_tensors_norm`` for float32/float64/bfloat16/float16 CPU
    tensors (others: torch's function, one warning); 16-bit tensors are
    widened exactly and the total is rounded once to torch's result dtype
    (see clip_grad_norm_). ``error_if_nonfinite``: a NaN/inf norm
    raises ``RuntimeError`` (gradckpt.NonFiniteError). Returns a 0-d tensor of
    the tensors' dtype (``torch.tensor(0.)`` for no tensors).
    """
    ts = _as_list(tensors)
    norm_type = float(norm_type)
    if not ts:
        return torch.tensor(0.0)
    r = _gradckpt._torch_norm_tensors(ts, norm_type) if norm_type > 0 else None
    if r is None:
        _warn_once("get_total_norm", f"a tensor of another device, dtype or layout, or norm_type {norm_type}")
        return _torch_get_total_norm()(ts, norm_type, error_if_nonfinite, foreach)
    total, dtype, _ = r
    total_t = torch.tensor(total, dtype=dtype)
    if error_if_nonfinite and not math.isfinite(float(total_t)):
        raise _nonfinite(norm_type)
    return total_t


def clip_grads_with_norm_(parameters: _TensorOrTensors, max_norm: float, total_norm: Union[torch.Tensor, float],
                          foreach: Optional[bool] = None) -> None:
    """Scales gradients by ``min(max_norm / (total_norm + 1e-6), 1)``, as ``torch.nn.utils.clip_grads_with_norm_``.

    The coefficient is computed as torch computes it (in ``total_norm``'s
    dtype), so the scaled gradients are bit-identical to torch's (bfloat16 /
    float16 gradients too: the float32 product rounded to their dtype). ONE call of
    ``gck_tensors_scale`` over the gradients (others: torch's function).
    """
    params = _as_list(parameters)
    max_norm = float(max_norm)
    if isinstance(total_norm, torch.Tensor):
        coef = float(torch.clamp(max_norm / (total_norm + 1e-6), max=1.0))
    else:
        coef = min(max_norm / (float(total_norm) + 1e-6), 1.0)
    if coef == 1.0:
        return  # x * 1 == x: nothing to write
    if not _gradckpt._torch_scale_params(params, coef):
        _warn_once("clip_grads_with_norm_", "a gradient of another device, dtype or layout")
        _torch_clip_grads_with_norm()(params, max_norm, total_norm, foreach)


# ---- micro-batch accumulation ------------------------------------------------


class GradientAccumulator:
    """Accumulates the gradients of micro-batches with gradckpt's checkpointer, then clips them.

        acc = GradientAccumulator(model.named_parameters(), mode="mean", clip_norm=1.0)
        for batch in micro_batches:
            loss_fn(model(batch)).backward()
            acc.accumulate()            # every p.grad in one C call, then p.grad = None
        total = acc.step()              # mean, norm, clip: the result is in p.grad
        optimizer.step()

    ``mode``: ``"sum"`` ``((0 + g1) + g2) + ...``, ``"mean"`` (the sum divided
    by the count) or ``"weighted_mean"`` (``r + g_i * weights[i]``, divided by
    the sum of the weights used; ``weights[i]`` is for the i-th micro-batch,
    1.0 past the end). The sums run in the parameters' dtype (float32 or
    float64; float32 for bfloat16 parameters) in a fixed order, so the
    result is the same bits on every ISA and thread count. A parameter
    without a gradient in a micro-batch is skipped (its mean counts the
    gradients it had).

    ``clip_norm``: when the global L2 norm (the layers' sums of squares added
    in bytewise name order) exceeds it, every gradient is multiplied by
    ``clip_norm / norm`` (float32: by float32 of it): the checkpointer's rule
    (no eps, unlike clip_grad_norm_). ``step()`` returns the norm before
    clipping, as a float.

    bfloat16 parameters (all of them: one accumulator per dtype): the
    bfloat16 gradients are read in place and widened exactly, summed (and
    divided) in float32 buffers, and each result is rounded ONCE to bfloat16
    straight into ``p.grad`` (the checkpointer's bfloat16 storage): the same
    bits as ``(((0 + g1.float()) + g2.float()) + ...) / count`` then
    ``.to(torch.bfloat16)``, with no float32 copy of the result. The norm
    that ``step()`` returns and compares with ``clip_norm`` is that of the
    rounded bfloat16 values; when it clips, each float32 value is multiplied
    by ``float32(clip_norm / norm)`` and rounded once from there. float16
    parameters are refused (InvalidArgumentError): there is no float16
    storage, so a float16 ``p.grad`` could only be filled from a copy.

    Memory: the checkpointer's one buffer per parameter; ``step()`` writes
    into ``p.grad`` where it exists and otherwise into a gradient buffer the
    accumulator keeps for that parameter (allocated once), with nothing
    recorded and nothing copied on the way (``gck_flush_into``).
    """

    def __init__(self, named_parameters: Iterable[Union[Tuple[str, torch.nn.Parameter], torch.Tensor]],
                 mode: str = "mean", clip_norm: Optional[float] = None,
                 weights: Optional[Sequence[float]] = None) -> None:
        names, params = [], []
        for i, item in enumerate(named_parameters):
            if isinstance(item, torch.Tensor):
                name, p = str(i), item
            else:
                name, p = item
            if not p.requires_grad:
                continue
            if p.dtype == torch.float16:
                # There is no float16 storage: step() would finish into a float32 or bfloat16 buffer and
                # then round a copy into p.grad, a full extra copy of the gradients this class never makes.
                raise InvalidArgumentError(
                    f"parameter '{name}': GradientAccumulator takes float32/float64/bfloat16 parameters, got "
                    "torch.float16: its step() writes p.grad without a staging copy, and the checkpointer has "
                    "no float16 storage to write a float16 p.grad from. Accumulate float16 gradients with "
                    "gradckpt.Checkpointer(dtype='float32').accumulate_many (read in place, widened exactly), "
                    "flush_into float32 buffers and round them with .to(torch.float16)")
            if p.dtype not in (torch.float32, torch.float64, torch.bfloat16) or p.device.type != "cpu":
                raise InvalidArgumentError(f"parameter '{name}': GradientAccumulator takes float32/float64/"
                                           f"bfloat16 CPU parameters, got {p.dtype} on {p.device}")
            names.append(name)
            params.append(p)
        if len(set(names)) != len(names):
            raise InvalidArgumentError("GradientAccumulator: parameter names are not unique")
        dtypes = {p.dtype for p in params}
        if len(dtypes) > 1:
            raise InvalidArgumentError("GradientAccumulator: the parameters mix dtypes "
                                       f"({', '.join(sorted(str(d) for d in dtypes))}): use one accumulator "
                                       "per dtype")
        dtype = {torch.float64: "float64", torch.bfloat16: "bfloat16"}.get(next(iter(dtypes), None), "float32")
        if mode == "weighted_mean" and weights is None:
            raise InvalidArgumentError("GradientAccumulator: mode 'weighted_mean' needs weights")
        self.names: list = names
        self.params: list = params
        self.mode = mode
        self.clip_norm = None if clip_norm is None else float(clip_norm)
        self._cp = _gradckpt.Checkpointer(max_checkpoints=1, mode=mode, weights=weights, clip_norm=clip_norm,
                                          dtype=dtype, checksum="none")
        self._spare: Dict[str, torch.Tensor] = {}
        self.micro_batches = 0
        self.last_clip_coef = 1.0

    def accumulate(self, set_to_none: bool = True) -> int:
        """Adds every parameter's ``.grad`` (read in place, one C call) and, by default, sets it to None.

        Returns how many gradients were taken. Every gradient is checked
        before the first is added: on an error nothing was accumulated.
        """
        n = self._cp._accumulate_grads(self.names, self.params, None, set_to_none)
        self.micro_batches += 1
        return n

    @property
    def pending(self) -> int:
        """Gradients accumulated since the last step()."""
        return self._cp.pending_count

    def step(self) -> float:
        """Finishes the accumulation into ``p.grad`` (one C call) and returns the global L2 norm before clipping.

        Parameters that received no gradient keep ``p.grad`` as it is. The
        clip factor applied is in ``last_clip_coef``. Raises
        gradckpt.NoAccumulatedGradientsError when nothing was accumulated.
        """
        total, coef, _, _ = self._cp._step_params(self.names, self.params, self._spare)
        self.last_clip_coef = coef
        self.micro_batches = 0
        return total

    def discard(self) -> None:
        """Drops what was accumulated since the last step()."""
        self._cp.discard_pending()
        self.micro_batches = 0


# ---- files (the signatures of safetensors.torch) -----------------------------


def save_file(tensors: Mapping[str, torch.Tensor], filename: "str | os.PathLike[str]",
              metadata: Optional[Mapping[str, str]] = None) -> None:
    """Writes CPU tensors (any dtype, C-contiguous) as a safetensors file, atomically and durably.

    The signature of ``safetensors.torch.save_file``. The tensors are written
    from their own memory (no copy).
    """
    snap = Snapshot(0)
    for name, t in tensors.items():
        snap.add(name, t.detach(), copy=False)
    if metadata:
        for k, v in metadata.items():
            snap.set_metadata(k, v)
    snap.save(os.fspath(filename))


def load_file(filename: "str | os.PathLike[str]", device: Union[str, int, torch.device] = "cpu",
              verify: bool = True) -> Dict[str, torch.Tensor]:
    """Reads a safetensors file into torch tensors, as ``safetensors.torch.load_file``.

    The file is read once into one buffer and the tensors are views of it
    (writable; they keep it alive). For another device they are copied there.
    ``verify`` checks every content id gradckpt recorded.
    """
    snap = Snapshot.load(os.fspath(filename), mmap=False, verify=verify)
    out = {name: snap.torch(name) for name in snap.names()}
    dev = torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)
    if dev.type != "cpu":
        out = {k: v.to(dev) for k, v in out.items()}
    return out


# ---- training state in a Store -----------------------------------------------

_MODEL = "model/"
_OPTIM = "optim/"
_META_OPTIM = "gradckpt_torch.optimizer"
_META_LAYOUT = "gradckpt_torch.tensors"
_META_USER = "user."


class LoadedState(NamedTuple):
    """What load_state restored: the step, the store version and the user metadata given to save_state."""

    step: int
    version: int
    metadata: Dict[str, Any]


def _encode(v: Any, tensors: Dict[str, torch.Tensor], where: str) -> Any:
    """JSON form of optimizer state and param groups; tensors go into the version."""
    if isinstance(v, torch.Tensor):
        name = f"{_OPTIM}{where}"
        tensors[name] = v.detach() if v.is_contiguous() else v.detach().contiguous()
        return {"__tensor__": name}
    if isinstance(v, tuple):
        return {"__tuple__": [_encode(x, tensors, f"{where}/{i}") for i, x in enumerate(v)]}
    if isinstance(v, list):
        return [_encode(x, tensors, f"{where}/{i}") for i, x in enumerate(v)]
    if isinstance(v, dict):
        return {"__dict__": [[_encode(k, tensors, f"{where}/k{i}"), _encode(x, tensors, f"{where}/{i}")]
                             for i, (k, x) in enumerate(v.items())]}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise InvalidArgumentError(f"save_state: optimizer state value at '{where}' has unsupported type "
                               f"{type(v).__name__}")


def _decode(v: Any, tensors: Dict[str, torch.Tensor]) -> Any:
    if isinstance(v, dict):
        if "__tensor__" in v:
            return tensors[v["__tensor__"]]
        if "__tuple__" in v:
            return tuple(_decode(x, tensors) for x in v["__tuple__"])
        if "__dict__" in v:
            return {_decode(k, tensors): _decode(x, tensors) for k, x in v["__dict__"]}
    if isinstance(v, list):
        return [_decode(x, tensors) for x in v]
    return v


def _dtype_name(dt: torch.dtype) -> str:
    return str(dt).replace("torch.", "")


def save_state(store: Store, model: torch.nn.Module, optimizer: Optional[torch.optim.Optimizer], step: int,
               tags: Iterable[str] = (), **meta: Any) -> int:
    """Saves a model's ``state_dict`` and an optimizer's state as a new Store version; returns the version.

    Parameters and buffers (``model/<name>``) and the optimizer's tensors
    (AdamW's moments and step, ``optim/...``) are written from their own
    memory, not copied; the optimizer's param groups go in as JSON, so
    ``load_state`` restores both bit for bit. ``meta`` values
    (JSON-serialisable) are stored as metadata and returned by load_state.
    """
    tensors: Dict[str, torch.Tensor] = {}
    for k, v in model.state_dict(keep_vars=False).items():
        tensors[_MODEL + k] = v if v.is_contiguous() else v.contiguous()
    metadata = {_META_USER + k: json.dumps(v) for k, v in meta.items()}
    if optimizer is not None:
        metadata[_META_OPTIM] = json.dumps(_encode(optimizer.state_dict(), tensors, "sd"))
    metadata[_META_LAYOUT] = json.dumps({k: [_dtype_name(t.dtype), list(t.shape)] for k, t in tensors.items()})
    return store.save(tensors, int(step), metadata=metadata, tags=tuple(tags))


def load_state(store: Store, model: torch.nn.Module, optimizer: Optional[torch.optim.Optimizer],
               version: Union[int, str] = "latest") -> LoadedState:
    """Restores a version saved by save_state into ``model`` and ``optimizer``, bit for bit.

    The parameters and buffers are restored straight into the model's own
    memory and the optimizer's tensors into new tensors it then owns (one
    ``Store.restore_into`` call, every content id checked; no other copy).
    Names, dtypes and shapes are checked against the model first: a
    mismatch raises InvalidArgumentError with the model untouched. An
    IOError/CorruptError found while reading leaves the model's values
    unspecified (restore again). ``version``: a number, ``"latest"`` or a tag.
    Returns (step, version, metadata).
    """
    v = store.latest if version == "latest" else version
    if v is None:
        from . import NotFoundError
        raise NotFoundError(f"the store '{store.dir}' has no version")
    info = store.info(v)
    md = store.restore_into(info["version"], {}).metadata  # the metadata alone: no tensor is read
    if _META_LAYOUT not in md:
        raise InvalidArgumentError(f"version {info['version']} was not written by gradckpt.torch.save_state")
    layout = json.loads(md[_META_LAYOUT])
    dst: Dict[str, torch.Tensor] = {}
    sd = model.state_dict()
    want = {k[len(_MODEL):] for k in layout if k.startswith(_MODEL)}
    if want != set(sd):
        missing, unexpected = sorted(set(sd) - want), sorted(want - set(sd))
        raise InvalidArgumentError(f"load_state: the model's state_dict does not match version {info['version']}: "
                                   f"missing {missing[:5]}, unexpected {unexpected[:5]}")
    seen = {}
    for k, t in sd.items():
        dt, shape = layout[_MODEL + k]
        if _dtype_name(t.dtype) != dt or list(t.shape) != shape:
            raise InvalidArgumentError(f"load_state: '{k}' is {_dtype_name(t.dtype)}{list(t.shape)} in the model "
                                       f"but {dt}{shape} in version {info['version']}")
        if not t.is_contiguous():
            raise InvalidArgumentError(f"load_state: the model's '{k}' is not contiguous")
        key = (t.data_ptr(), t.numel())
        if t.numel() and key in seen:  # tied weights: one memory, restored once
            continue
        seen[key] = k
        dst[_MODEL + k] = t
    optim_tensors: Dict[str, torch.Tensor] = {}
    if optimizer is not None:
        if _META_OPTIM not in md:
            raise InvalidArgumentError(f"version {info['version']} has no optimizer state (saved with "
                                       "optimizer=None?)")
        for k, (dt, shape) in layout.items():
            if k.startswith(_OPTIM):
                optim_tensors[k] = torch.empty(shape, dtype=getattr(torch, dt))
        dst.update(optim_tensors)
    with torch.no_grad():
        fields = store.restore_into(info["version"], dst)
    if optimizer is not None:
        optimizer.load_state_dict(_decode(json.loads(md[_META_OPTIM]), optim_tensors))
    user = {k[len(_META_USER):]: json.loads(x) for k, x in md.items() if k.startswith(_META_USER)}
    return LoadedState(step=fields.step, version=int(info["version"]), metadata=user)


__all__ = ["clip_grad_norm_", "get_total_norm", "clip_grads_with_norm_", "GradientAccumulator",
           "save_file", "load_file", "save_state", "load_state", "LoadedState"]
