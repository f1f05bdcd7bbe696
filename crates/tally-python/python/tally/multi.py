"""Several GPUs computing together: :class:`DeviceSet`.

Each GPU of the set computes its part of the input with the one-GPU code; the parts are
combined through NCCL (``libnccl.so.2`` on the loader's path: PyTorch installs it under
``site-packages/nvidia/nccl/lib``; without it the set is a ``RuntimeError`` naming the library).
Histogram counts, integer sums, extrema, indices and exact float sums equal one GPU's result
bit for bit; a plain float sum adds the devices' sums in rank order.

    import tally
    s = tally.DeviceSet()                       # every GPU of this host
    counts, edges = s.histogram(x, bins=256, range=(0, 256))
    total = s.sum(x, exact=True)
    s.sum([x0, x1])                             # one array per device, already on each GPU

The input of a call is either one host array (numpy, the same in every process of the set),
split evenly over the ranks, or a list with one array per device of this process in rank order:
host arrays, or device arrays (PyTorch, CuPy, DLPack) each on its own device. Before reading
device arrays the set waits for the work queued on those devices. Results come back on the host
as Python numbers and numpy arrays; every call waits for its result.

One process per GPU (``torchrun``, ``mpirun``): :meth:`DeviceSet.from_env` joins the ranks
through an NCCL unique id given in ``TALLY_NCCL_ID`` or written by rank 0 to the file that
``TALLY_NCCL_ID_FILE`` names. Each rank then passes its own shard (a list of one array) or the
same host array (split evenly), and every rank gets the combined result (a cumsum: this rank's
part of it).
"""

from __future__ import annotations

import operator
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native
from ._arrays import _numpy_dtype, read
from .histogram import Histogram
from .reduce import _COMPARISONS
from .scan import _SUM_TYPES

__all__ = ["DeviceSet"]

Number = Union[int, float]


class DeviceSet:
    """GPUs that compute together (see the module's text). ``devices``: ``"all"`` (every GPU
    of this host) or a sequence of ordinals, ranks in that order."""

    def __init__(self, devices: Union[str, Sequence[int]] = "all"):
        if isinstance(devices, str):
            if devices != "all":
                raise ValueError(f"devices: 'all' or a list of ordinals, not {devices!r}")
            self._set = _native.DeviceSet(None)
        else:
            self._set = _native.DeviceSet([int(d) for d in devices])

    @classmethod
    def from_env(cls) -> "DeviceSet":
        """This process as one rank of a set launched one process per GPU: ``RANK``,
        ``WORLD_SIZE``, ``LOCAL_RANK`` (or OpenMPI's), and ``TALLY_NCCL_ID`` or
        ``TALLY_NCCL_ID_FILE``."""
        self = cls.__new__(cls)
        self._set = _native.DeviceSet.from_env()
        return self

    @property
    def devices(self) -> list:
        """The ordinals of this process's devices, in rank order."""
        return self._set.ordinals()

    @property
    def ranks(self) -> list:
        """The ranks of this process's devices."""
        return self._set.ranks()

    @property
    def world_size(self) -> int:
        """How many ranks (GPUs) the whole set has."""
        return self._set.world_size()

    def __repr__(self) -> str:
        return f"DeviceSet(devices={self.devices}, ranks={self.ranks}, world_size={self.world_size})"

    # The input -------------------------------------------------------------------------------

    def _shards(self, x: Any) -> Tuple[tuple, list]:
        """``(split, parts, dtype)`` for the extension, and the arrays the caller holds until
        the call returns (they keep the memory alive)."""
        if isinstance(x, (list, tuple)):
            devices = self.devices
            if len(x) != len(devices):
                raise ValueError(f"{len(x)} arrays for the {len(devices)} devices of this process: "
                                 "one per device, in rank order")
            args = [read(s, f"x[{i}]", "auto") for i, s in enumerate(x)]
            dtypes = {a.dtype for a in args}
            if len(dtypes) != 1:
                raise TypeError(f"the shards must have one dtype, not {', '.join(sorted(dtypes))}")
            for i, (a, d) in enumerate(zip(args, devices)):
                if a.on_device and a.device[0] != d:
                    raise ValueError(f"x[{i}] is on GPU {a.device[0]}, but rank {self.ranks[i]}'s device is GPU {d}")
            return (False, [a.parts for a in args], args[0].dtype), args
        a = read(x, "x", "auto")
        if a.on_device:
            raise ValueError("one device array cannot be split over the set: pass a host array, or a list "
                             "with one array per device")
        return (True, [a.parts], a.dtype), [a]

    # Primitives ------------------------------------------------------------------------------

    def histogram(self, x: Any, bins: int = 10, range: Optional[Tuple[float, float]] = None) -> Histogram:
        """``(counts, edges)`` of ``bins`` equal bins over ``range`` (``numpy.histogram``; the
        last bin includes its upper edge), as ``tally.histogram`` counts them. Without
        ``range``: the data's (min, max), skipping NaN. Counts are int64 on the host; ``below``,
        ``above``, ``nan`` count the samples in no bin."""
        call, _held = self._shards(x)
        bins = operator.index(bins)
        if bins < 1:
            raise ValueError(f"bins must be at least 1, got {bins}")
        if range is not None:
            lo, hi = (float(v) for v in range)
            if not (np.isfinite(lo) and np.isfinite(hi)):
                raise ValueError(f"the range must be finite, got [{lo}, {hi}]")
        elif sum(a.n for a in _held) == 0:
            lo, hi = 0.0, 1.0
        else:
            lo, hi = (float(v) for v in self._reduce(call, "minmax", skip_nan=True))
            if not (np.isfinite(lo) and np.isfinite(hi)):
                raise ValueError(f"the range of the data [{lo}, {hi}] is not finite; give range=")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        counts = np.empty(bins, dtype=np.int64)
        # A range from the data would key a new kept plan each call: none is kept for it.
        below, above, nan = self._set.histogram(call, bins, lo, hi,
                                                (counts.__array_interface__["data"][0], bins, True),
                                                range is not None)
        if above > 0:
            # The last bin includes its upper edge: the samples equal to it were counted above.
            at_edge = above if range is None else self._reduce(call, "count", compare=("==", hi))
            counts[-1] += at_edge
            above -= at_edge
        return Histogram(counts, np.linspace(lo, hi, bins + 1), below, above, nan, "device set")

    def _reduce(self, call: tuple, op: str, exact: bool = False, skip_nan: bool = False,
                compare: Optional[Tuple[str, float]] = None) -> Any:
        return self._set.reduce(call, op, exact, skip_nan, compare)

    def reduce(self, x: Any, op: str, *, exact: bool = False, skip_nan: bool = False) -> Any:
        """``op`` over the whole input: "sum", "mean", "min", "max", "minmax", "argmin",
        "argmax" (indices of the whole input), as ``tally.sum`` and the rest return them."""
        call, _held = self._shards(x)
        r = self._reduce(call, op, exact, skip_nan)
        return r

    def sum(self, x: Any, *, exact: bool = False, skip_nan: bool = False) -> Number:
        """The sum (``tally.sum``): integers exactly, ``exact=True`` the correctly rounded exact
        float sum, equal to one GPU's."""
        return self.reduce(x, "sum", exact=exact, skip_nan=skip_nan)

    def min(self, x: Any, *, skip_nan: bool = False) -> Number:
        return self.reduce(x, "min", skip_nan=skip_nan)

    def max(self, x: Any, *, skip_nan: bool = False) -> Number:
        return self.reduce(x, "max", skip_nan=skip_nan)

    def argmin(self, x: Any, *, skip_nan: bool = False) -> int:
        return self.reduce(x, "argmin", skip_nan=skip_nan)

    def argmax(self, x: Any, *, skip_nan: bool = False) -> int:
        return self.reduce(x, "argmax", skip_nan=skip_nan)

    def count(self, x: Any, op: str, value: float) -> int:
        """How many elements pass ``x OP value`` (``tally.count``)."""
        if op not in _COMPARISONS:
            raise ValueError(f"unknown comparison '{op}' (expected one of {' '.join(_COMPARISONS)})")
        call, _held = self._shards(x)
        r = self._reduce(call, "count", compare=(op, float(value)))
        return r

    def cumsum(self, x: Any, *, exclusive: bool = False) -> np.ndarray:
        """The running sum (``numpy.cumsum``'s types) as a numpy array: the whole input's in one
        process, this process's part of it with one process per GPU."""
        call, _held = self._shards(x)
        n = self._set.local_len(call)
        out = np.empty(n, dtype=_numpy_dtype(_SUM_TYPES[call[2]]))
        self._set.cumsum(call, exclusive, (out.__array_interface__["data"][0], n, True))
        return out

    def select(self, x: Any, predicate: str) -> np.ndarray:
        """The elements that pass ``predicate`` (``tally.select``), in input order, as a numpy
        array; with one process per GPU every rank gets all of them."""
        call, _held = self._shards(x)
        raw = self._set.select(call, predicate)
        return np.frombuffer(raw, dtype=_numpy_dtype(call[2]))
