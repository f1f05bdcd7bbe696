"""Prefix scans over a whole array: ``cumsum``, ``cummin``, ``cummax``, inclusive (numpy's
``cumsum``) or exclusive, and by key (the scan restarts wherever ``keys`` changes). The result
is a new flat array of the input's kind on the input's device, written in place by the kernels.

``cumsum`` follows numpy's types: signed integers sum into int64, unsigned ones into uint64,
float32 and float64 into their own type. float16 and bfloat16 scan into float32, their
accumulator type (as CUB's and PyTorch's kernels accumulate them), for ``cummin``/``cummax``
too, which are exact there. A 64-bit running sum that leaves its range is an
``OverflowError``, never a silent wrap. ``cummin``/``cummax`` otherwise keep the input's type
and propagate NaN.
"""

from __future__ import annotations

from typing import Any, Optional

from . import _native
from ._arrays import empty, read, result, same_place

__all__ = ["cumsum", "cummin", "cummax"]

_SUM_TYPES = {
    "uint8": "uint64", "uint16": "uint64", "uint32": "uint64", "uint64": "uint64",
    "int8": "int64", "int16": "int64", "int32": "int64", "int64": "int64",
    "float32": "float32", "float64": "float64", "float16": "float32", "bfloat16": "float32",
}

# Minima and maxima keep the type, but for the 16-bit floats: every 16-bit scan writes float32.
_EXTREME_TYPES = {"float16": "float32", "bfloat16": "float32"}

# Keys are compared by their bits: signed keys go as the unsigned type of their width.
_KEY_TYPES = {"uint32": "uint32", "int32": "uint32", "uint64": "uint64", "int64": "uint64"}


def _scan(x: Any, op: str, exclusive: bool, keys: Any, backend: str, device: Optional[int],
          stream: Optional[int]) -> Any:
    a = read(x, "x", backend, device, stream)
    out_dtype = _SUM_TYPES[a.dtype] if op == "sum" else _EXTREME_TYPES.get(a.dtype, a.dtype)
    out, out_parts = empty(a, a.n, out_dtype)
    key_parts, key_dtype = None, "uint32"
    if keys is not None:
        k = read(keys, "keys", backend, device, stream)
        same_place(a, k, "keys")
        if k.dtype not in _KEY_TYPES:
            raise TypeError(f"keys must be 32- or 64-bit integers, not {k.dtype}")
        key_parts, key_dtype = k.parts, _KEY_TYPES[k.dtype]
    _native.scan(a.call, op, exclusive, out_parts, key_parts, key_dtype)
    return result(a, out)


def cumsum(x: Any, *, exclusive: bool = False, keys: Any = None, backend: str = "auto",
           device: Optional[int] = None, stream: Optional[int] = None) -> Any:
    """The running sum (``numpy.cumsum(x)``, ``torch.cumsum(x.flatten(), 0)``).

    ``exclusive``: element i is the sum of the elements before it (0 first). ``keys``: one key
    per element (32- or 64-bit integers); the sum restarts where the key changes.
    """
    return _scan(x, "sum", exclusive, keys, backend, device, stream)


def cummin(x: Any, *, exclusive: bool = False, keys: Any = None, backend: str = "auto",
           device: Optional[int] = None, stream: Optional[int] = None) -> Any:
    """The running minimum (``numpy.minimum.accumulate``, ``torch.cummin(x, 0).values``).
    Exclusive: the type's largest value (+inf for floats) first."""
    return _scan(x, "min", exclusive, keys, backend, device, stream)


def cummax(x: Any, *, exclusive: bool = False, keys: Any = None, backend: str = "auto",
           device: Optional[int] = None, stream: Optional[int] = None) -> Any:
    """The running maximum (``numpy.maximum.accumulate``, ``torch.cummax(x, 0).values``).
    Exclusive: the type's smallest value (-inf for floats) first."""
    return _scan(x, "max", exclusive, keys, backend, device, stream)
