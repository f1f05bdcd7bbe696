"""Reductions over a whole array: ``sum``, ``min``, ``max``, ``minmax``, ``argmin``,
``argmax``, ``mean``, ``count``. Each returns Python numbers: integers exactly (a sum of
integers may exceed 64 bits: tally accumulates in 128), floats as ``float``.

NaN propagates as in numpy (``sum``, ``min``, ``max`` give NaN; ``argmin``/``argmax`` the index
of the first NaN) unless ``skip_nan=True`` (numpy's ``nansum``, ``nanmin``, ``nanargmin``).
``exact=True`` makes a float sum or mean the exact sum of the elements rounded once to float64,
as ``math.fsum`` gives, and the same bits on every device and run.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

from . import _native
from ._arrays import read

Number = Union[int, float]

__all__ = ["sum", "min", "max", "minmax", "argmin", "argmax", "mean", "count"]


def _reduce(x: Any, op: str, exact: bool, skip_nan: bool, backend: str, device: Optional[int],
            stream: Optional[int], compare: Optional[Tuple[str, float]] = None) -> Any:
    a = read(x, "x", backend, device, stream)
    return _native.reduce(a.call, op, exact, skip_nan, compare)


def sum(x: Any, *, exact: bool = False, skip_nan: bool = False, backend: str = "auto",
        device: Optional[int] = None, stream: Optional[int] = None) -> Number:
    """The sum of all elements (``numpy.sum(x)``, ``torch.sum(x).item()``).

    Integers: the exact sum as an ``int`` (never wraps). Floats: float64 accumulation, or with
    ``exact=True`` the correctly rounded exact sum. ``skip_nan``: ``numpy.nansum``.
    """
    return _reduce(x, "sum", exact, skip_nan, backend, device, stream)


def mean(x: Any, *, exact: bool = False, skip_nan: bool = False, backend: str = "auto",
         device: Optional[int] = None, stream: Optional[int] = None) -> float:
    """The mean (``numpy.mean(x)``): the sum over the elements counted; NaN for no elements."""
    return _reduce(x, "mean", exact, skip_nan, backend, device, stream)


def min(x: Any, *, skip_nan: bool = False, backend: str = "auto", device: Optional[int] = None,
        stream: Optional[int] = None) -> Number:
    """The smallest element (``numpy.min``; ``numpy.nanmin`` with ``skip_nan``). A
    ``ValueError`` for an empty array."""
    return _reduce(x, "min", False, skip_nan, backend, device, stream)


def max(x: Any, *, skip_nan: bool = False, backend: str = "auto", device: Optional[int] = None,
        stream: Optional[int] = None) -> Number:
    """The largest element (``numpy.max``; ``numpy.nanmax`` with ``skip_nan``)."""
    return _reduce(x, "max", False, skip_nan, backend, device, stream)


def minmax(x: Any, *, skip_nan: bool = False, backend: str = "auto", device: Optional[int] = None,
           stream: Optional[int] = None) -> Tuple[Number, Number]:
    """``(min, max)`` in one pass over the data (``torch.aminmax``)."""
    return _reduce(x, "minmax", False, skip_nan, backend, device, stream)


def argmin(x: Any, *, skip_nan: bool = False, backend: str = "auto", device: Optional[int] = None,
           stream: Optional[int] = None) -> int:
    """The flat index of the first smallest element (``numpy.argmin``; the first NaN's where NaN
    propagates; ``numpy.nanargmin`` with ``skip_nan``)."""
    return _reduce(x, "argmin", False, skip_nan, backend, device, stream)


def argmax(x: Any, *, skip_nan: bool = False, backend: str = "auto", device: Optional[int] = None,
           stream: Optional[int] = None) -> int:
    """The flat index of the first largest element (``numpy.argmax``)."""
    return _reduce(x, "argmax", False, skip_nan, backend, device, stream)


_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")


def count(x: Any, op: str, value: float, *, skip_nan: bool = False, backend: str = "auto",
          device: Optional[int] = None, stream: Optional[int] = None) -> int:
    """How many elements pass ``x OP value`` (``numpy.count_nonzero(x > 0)`` is
    ``count(x, ">", 0)``), without making the mask. ``op``: one of < <= > >= == !=. Integers are
    compared exactly; NaN passes only ``!=``."""
    if op not in _COMPARISONS:
        raise ValueError(f"unknown comparison '{op}' (expected one of {' '.join(_COMPARISONS)})")
    return _reduce(x, "count", False, skip_nan, backend, device, stream, (op, float(value)))
