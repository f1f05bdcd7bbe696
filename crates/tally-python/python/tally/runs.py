"""Runs of equal consecutive elements: ``unique`` (consecutive duplicates dropped, as
``torch.unique_consecutive`` and CUB's ``DeviceSelect::Unique``), ``run_length_encode`` and
``reduce_by_key``, over a whole array read flat.

These are not ``numpy.unique``: nothing is sorted, so ``[1, 1, 2, 1]`` has three runs
``[1, 2, 1]``. Sort first (``np.sort``, ``torch.sort``) for numpy's set semantics. Elements are
compared with ``==``: a NaN equals nothing (every NaN is a run of its own) and -0.0 equals 0.0
(the run keeps its first element).

Results are new flat arrays of the input's kind on its device, written in place by the kernels;
their length is the number of runs, which the call must know, so these calls wait for their work.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from . import _native
from ._arrays import empty, read, result, same_place
from .scan import _EXTREME_TYPES, _SUM_TYPES

__all__ = ["unique", "run_length_encode", "reduce_by_key"]


def unique(x: Any, *, return_counts: bool = False, backend: str = "auto", device: Optional[int] = None,
           stream: Optional[int] = None) -> Any:
    """The first element of every run of equal consecutive elements
    (``torch.unique_consecutive(x.flatten())``); with ``return_counts=True`` also the run
    lengths (int64), as ``(values, counts)``. Not ``numpy.unique``: see the module's note.
    """
    if return_counts:
        return run_length_encode(x, backend=backend, device=device, stream=stream)
    a = read(x, "x", backend, device, stream)
    out, parts = empty(a, a.n, a.dtype)
    runs = _native.runs(a.call, parts)
    return result(a, out[:runs])


def run_length_encode(x: Any, *, backend: str = "auto", device: Optional[int] = None,
                      stream: Optional[int] = None) -> Tuple[Any, Any]:
    """``(values, counts)``: the first element and the length (int64) of every run of equal
    consecutive elements (``torch.unique_consecutive(x, return_counts=True)``)."""
    a = read(x, "x", backend, device, stream)
    out, parts = empty(a, a.n, a.dtype)
    counts, count_parts = empty(a, a.n, "int64")
    runs = _native.runs(a.call, parts, count_parts)
    return result(a, out[:runs]), result(a, counts[:runs])


def reduce_by_key(keys: Any, values: Any, op: str = "sum", *, backend: str = "auto",
                  device: Optional[int] = None, stream: Optional[int] = None) -> Tuple[Any, Any]:
    """``(unique_keys, reduced)``: the first key of every run of equal consecutive ``keys``, and
    ``op`` ("sum", "min", "max", "count") over that run's ``values`` (one per key).

    Sums follow numpy's ``cumsum`` types (int64 for signed integers, uint64 for unsigned ones,
    the float type itself, float32 for float16 and bfloat16; a 64-bit sum that leaves its range
    is an ``OverflowError``); min and max keep the values' type (float32 for the 16-bit floats;
    NaN propagates); count is int64 (``values`` only sets the length).
    With keys sorted, this is a group-by: ``torch.zeros(n).index_add_(0, inverse, values)``
    over ``torch.unique_consecutive(keys, return_inverse=True)``.
    """
    k = read(keys, "keys", backend, device, stream)
    v = read(values, "values", backend, device, stream)
    same_place(k, v, "values")
    if k.n != v.n:
        raise ValueError(f"{k.n} keys for {v.n} values: one key per value")
    if op == "count":
        return run_length_encode(keys, backend=backend, device=device, stream=stream)
    if op not in ("sum", "min", "max"):
        raise ValueError(f"unknown op '{op}' (expected sum, min, max or count)")
    out_dtype = _SUM_TYPES[v.dtype] if op == "sum" else _EXTREME_TYPES.get(v.dtype, v.dtype)
    out_keys, key_parts = empty(k, k.n, k.dtype)
    out_values, value_parts = empty(k, k.n, out_dtype)
    runs = _native.reduce_by_key(k.call, (v.parts, v.dtype), op, (key_parts, value_parts))
    return result(k, out_keys[:runs]), result(k, out_values[:runs])
