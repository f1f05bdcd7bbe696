"""Stream compaction: ``select`` (``x[mask]``, ``numpy.extract``, ``torch.masked_select``),
``nonzero`` (``numpy.flatnonzero``), ``partition`` and ``count_if``, over a whole array read
flat. What is kept is said by a predicate, tally's expression over ``x`` (``"x > 0"``,
``"x >= 1 && x < 10"``, ``"x != x"`` for NaN; docs/SELECT.md has the grammar), or by a boolean
mask of one flag per element.

Results are new flat arrays of the input's kind on its device, written in place by the kernels.
Their length is the number of elements kept, which the call must know: these calls wait for
their work (as ``torch.masked_select`` and boolean indexing do).
"""

from __future__ import annotations

import sys
from typing import Any, Optional, Tuple

import numpy as np

from . import _native
from ._arrays import Arg, empty, read, result, same_place

__all__ = ["select", "nonzero", "partition", "count_if"]


def _mask(where: Any, a: Arg, backend: str, device: Optional[int], stream: Optional[int]) -> Arg:
    """A boolean (or uint8) mask as an array of bytes, one per element of ``a``, read in place."""
    obj = where
    if isinstance(obj, np.ndarray) and obj.dtype == np.bool_:
        obj = obj.view(np.uint8)
    else:
        torch = sys.modules.get("torch")
        cupy = sys.modules.get("cupy")
        if torch is not None and isinstance(obj, torch.Tensor) and obj.dtype == torch.bool:
            obj = obj.view(torch.uint8)
        elif cupy is not None and isinstance(obj, cupy.ndarray) and obj.dtype == cupy.bool_:
            obj = obj.view(cupy.uint8)
        elif isinstance(obj, (list, tuple)):
            obj = np.asarray(obj, dtype=np.bool_).view(np.uint8)
    m = read(obj, "where", backend, device, stream)
    if m.dtype not in ("uint8", "int8"):
        raise TypeError(f"where: a predicate string or a boolean mask, not an array of {m.dtype}")
    same_place(a, m, "where")
    if m.n != a.n:
        raise ValueError(f"where: {m.n} mask elements for {a.n} values: one per value")
    return m


def _first(a: Arg, out: Any, kept: int) -> Any:
    return result(a, out[:kept])


def _predicate(where: Any) -> Optional[str]:
    return where if isinstance(where, str) else None


def select(x: Any, where: Any, *, return_indices: bool = False, backend: str = "auto",
           device: Optional[int] = None, stream: Optional[int] = None) -> Any:
    """The elements of ``x`` that ``where`` keeps, in their order: ``x[mask]`` for a boolean
    mask (``torch.masked_select(x, mask)``), or ``x[x > 0]`` for ``where="x > 0"`` without the
    mask. ``return_indices=True`` also returns their flat indices (int64), as
    ``(values, indices)``; ``numpy.flatnonzero(mask)`` is those alone (:func:`nonzero`).
    """
    a = read(x, "x", backend, device, stream)
    out, parts = empty(a, a.n, a.dtype)
    predicate = _predicate(where)
    if predicate is None:
        m = _mask(where, a, backend, device, stream)
        kept = _native.select(a.call, "values", parts, None, m.parts)
        values = _first(a, out, kept)
        return (values, nonzero(m.obj, backend=backend, device=device, stream=stream)) if return_indices else values
    kept = _native.select(a.call, "values", parts, predicate)
    values = _first(a, out, kept)
    if not return_indices:
        return values
    return values, nonzero(x, predicate, backend=backend, device=device, stream=stream)


def nonzero(x: Any, where: str = "x != 0", *, backend: str = "auto", device: Optional[int] = None,
            stream: Optional[int] = None) -> Any:
    """The flat indices (int64, ascending) of the elements of ``x`` that pass ``where``: by
    default the nonzero ones (NaN counts as nonzero), as ``numpy.flatnonzero(x)`` and
    ``torch.nonzero(x.flatten())``. A boolean array's indices are those of its True elements.
    """
    if not isinstance(where, str):
        raise TypeError("where: a predicate string, such as 'x > 0'")
    a = read(_bytes_of_bool(x), "x", backend, device, stream)
    out, parts = empty(a, a.n, "int64")
    kept = _native.select(a.call, "indices", parts, where)
    return _first(a, out, kept)


def _bytes_of_bool(x: Any) -> Any:
    """A boolean array as its bytes (True is 1), any other array as it is."""
    if isinstance(x, np.ndarray) and x.dtype == np.bool_:
        return x.view(np.uint8)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor) and x.dtype == torch.bool:
        return x.view(torch.uint8)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray) and x.dtype == cupy.bool_:
        return x.view(cupy.uint8)
    return x


def partition(x: Any, where: str, *, backend: str = "auto", device: Optional[int] = None,
              stream: Optional[int] = None) -> Tuple[Any, int]:
    """A stable partition of ``x``: the elements that pass ``where`` first, then the others,
    each group in its original order; and how many passed. numpy:
    ``np.concatenate([x[m], x[~m]]), m.sum()`` with ``m`` the predicate's mask.
    """
    a = read(x, "x", backend, device, stream)
    out, parts = empty(a, a.n, a.dtype)
    kept = _native.select(a.call, "partition", parts, where)
    return result(a, out), kept


def count_if(x: Any, where: str, *, backend: str = "auto", device: Optional[int] = None,
             stream: Optional[int] = None) -> int:
    """How many elements of ``x`` pass ``where`` (``numpy.count_nonzero(x > 0)`` for
    ``"x > 0"``), without making a mask."""
    a = read(x, "x", backend, device, stream)
    return _native.select(a.call, "count", None, where)
