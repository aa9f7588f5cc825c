"""gradckpt: deterministic SIMD gradient bookkeeping for CPU training jobs.

Every function works in place on NumPy arrays, PyTorch CPU tensors and
anything with ``__dlpack__`` or the buffer protocol (float32 or float64 for
the numeric functions, C-contiguous), without copying. Results are
bit-identical on every ISA (scalar, AVX2, AVX-512, NEON) and OpenMP thread
count. A non-contiguous, non-CPU, read-only-where-written or wrongly typed
argument raises an exception naming the argument; nothing is converted
silently.

    import gradckpt
    total = gradckpt.clip_([p.grad for p in model.parameters()], max_norm=1.0)

``gradckpt.torch`` has the drop-in ``clip_grad_norm_`` and the
``GradientAccumulator``.
"""
from __future__ import annotations

import os as _os
from typing import Mapping, Optional

from . import _gradckpt
from ._gradckpt import (
    Checkpoint,
    Checkpointer,
    Snapshot,
    Store,
    add_,
    available_isas,
    axpy_,
    clip_,
    clip_info_,
    dist2,
    fnv1a64,
    get_num_threads,
    global_norm,
    isa,
    l2norm,
    pnorm,
    scale_,
    select_isa,
    set_num_threads,
    sumsq,
    tensors_add_,
    tensors_axpy_,
    tensors_axpy_init_,
    tensors_div_sumsq_,
    tensors_axpy_div_sumsq_,
    tensors_scale_,
)

__version__: str = _gradckpt.version()

FNV1A64_INIT: int = _gradckpt.FNV1A64_INIT


# ---- errors ----------------------------------------------------------------


class Error(Exception):
    """Base class of gradckpt's errors; ``status`` is the C library's gck_status value."""

    status: int = 0
    status_name: str = "GCK_OK"

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class InvalidArgumentError(Error, ValueError):
    """GCK_ERR_INVALID_ARGUMENT: a bad argument (non-contiguous, non-CPU, read-only, bad name or value)."""

    status = 1


class NoMemoryError(Error, MemoryError):
    """GCK_ERR_NO_MEMORY: an allocation failed."""

    status = 2


class NoAccumulatedGradientsError(Error, RuntimeError):
    """GCK_ERR_NO_ACCUMULATED_GRADIENTS: flush with nothing pending."""

    status = 3


class NotFoundError(Error, KeyError):
    """GCK_ERR_NOT_FOUND: an unknown checkpoint, version, tag, layer or tensor."""

    status = 4


class DimensionMismatchError(Error, ValueError):
    """GCK_ERR_DIMENSION_MISMATCH: a length differs from the one expected."""

    status = 5


class NonFiniteError(Error, RuntimeError):
    """GCK_ERR_NONFINITE: a NaN/Inf norm where error_if_nonfinite forbids it."""

    status = 6


class IOError(Error, OSError):  # noqa: A001 - the name the C status has
    """GCK_ERR_IO: the OS refused a read, write, fsync or lock."""

    status = 7


class CorruptError(Error, ValueError):
    """GCK_ERR_CORRUPT: a file fails validation or a checksum."""

    status = 8


class UnsupportedError(Error, NotImplementedError):
    """GCK_ERR_UNSUPPORTED: an ISA, dtype or format version this build or CPU lacks."""

    status = 9


class DTypeError(UnsupportedError, TypeError):
    """An argument of a dtype (or type) the function does not take, e.g. int64 for a norm."""


_ERRORS = {
    c.status: c
    for c in (InvalidArgumentError, NoMemoryError, NoAccumulatedGradientsError, NotFoundError,
              DimensionMismatchError, NonFiniteError, IOError, CorruptError, UnsupportedError)
}
for _status, _cls in _ERRORS.items():
    _cls.status_name = _gradckpt.status_name(_status)
_gradckpt._register_errors(_ERRORS, DTypeError)


# ---- files (the signatures of safetensors.numpy) -----------------------------


def save_file(tensors: Mapping[str, object], filename: "str | _os.PathLike[str]",
              metadata: Optional[Mapping[str, str]] = None) -> None:
    """Writes arrays as a safetensors file, atomically and durably.

    As ``safetensors.numpy.save_file``: a dict of name -> array (any dtype and
    shape, C-contiguous; NumPy, torch CPU tensors, DLPack or buffers) and
    optional string metadata (keys may not start with ``gradckpt.``). The file
    is written to a temporary file in the same directory, fsynced, renamed
    over ``filename`` and the directory fsynced: on any error the old file is
    untouched and no temporary is left. The arrays are written from their
    own memory (no copy).
    """
    snap = Snapshot(0)
    for name, arr in tensors.items():
        snap.add(name, arr, copy=False)  # written from the arrays' own memory
    if metadata:
        for k, v in metadata.items():
            snap.set_metadata(k, v)
    snap.save(_os.fspath(filename))


def load_file(filename: "str | _os.PathLike[str]", mmap: bool = True, verify: bool = True) -> dict:
    """Reads a safetensors file (ours or any writer's) into a dict of NumPy arrays.

    As ``safetensors.numpy.load_file``, but the arrays are views, not copies:
    with ``mmap=True`` read-only views of a read-only mapping of the file,
    with ``mmap=False`` writable views of one buffer the file was read into.
    The views keep that memory alive. ``verify=True`` checks every content id
    gradckpt recorded. CorruptError for a bad file, IOError if it cannot be read.
    """
    snap = Snapshot.load(_os.fspath(filename), mmap=mmap, verify=verify)
    return {name: snap.numpy(name, writable=not mmap) for name in snap.names()}


__all__ = [
    "__version__", "FNV1A64_INIT",
    "sumsq", "l2norm", "dist2", "pnorm", "add_", "axpy_", "scale_", "fnv1a64",
    "global_norm", "clip_", "clip_info_",
    "tensors_add_", "tensors_axpy_", "tensors_axpy_init_", "tensors_scale_", "tensors_div_sumsq_",
    "tensors_axpy_div_sumsq_",
    "isa", "available_isas", "select_isa", "get_num_threads", "set_num_threads",
    "Checkpointer", "Checkpoint", "Snapshot", "Store", "save_file", "load_file",
    "Error", "InvalidArgumentError", "NoMemoryError", "NoAccumulatedGradientsError", "NotFoundError",
    "DimensionMismatchError", "NonFiniteError", "IOError", "CorruptError", "UnsupportedError", "DTypeError",
]
