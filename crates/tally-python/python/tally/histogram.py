"""Histograms: ``histogram`` (numpy's ``histogram``, ``torch.histc``), ``histogram2d`` and
``bincount``, counted by tally's strategies on the GPU or the CPU.

Bins follow numpy: even bins over ``range`` (the data's min and max when not given), or custom
edges; the last bin includes its upper edge (``closed_last=True``, numpy's and ``torch.histc``'s
rule; ``closed_last=False`` gives tally's own half-open bins, where a sample equal to the upper
edge counts as ``above``). Integer samples with integral bounds are binned exactly (by rational
arithmetic); everything else by one float64 rule, the same on every device and strategy: the
counts equal numpy's wherever numpy's float edges are exact (powers of two, integers).

Nothing is lost: samples below the first edge, above the last and NaN are counted and reported on
the result (``below``, ``above``, ``nan``). Counts come back as int64 arrays of the input's
kind on its device: for device input the kernel is queued first, the edges and the counts' array
are made while it runs, the counters are copied (widened to int64) on the device, ordered with
the caller's stream, and the call waits only for the three outlier counts, which it returns as
numbers. Weighted sums and 2-D counts are still gathered on the host (they are small) and copied
over. Plans (the kernel, the strategy, the counters) for even bins are kept for the next call
with the same device, dtype, bins, range, strategy and length.
"""

from __future__ import annotations

import math
import operator
import sys
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native
from ._arrays import Arg, empty, read, result, same_place

__all__ = ["Histogram", "Histogram2d", "histogram", "histogram2d", "image_histogram", "bincount"]


class Histogram(tuple):
    """``(counts, edges)``, as ``numpy.histogram`` returns (so ``counts, edges = ...`` works),
    with what fell in no bin: ``below`` (under the first edge), ``above`` (over the last edge,
    or at it with ``closed_last=False``), ``nan``; for weighted histograms these are weight sums
    and ``below_count``, ``above_count``, ``nan_count`` the samples. ``strategy``: the one that
    ran."""

    counts: Any
    edges: Any

    def __new__(cls, counts, edges, below, above, nan, strategy, counts_outside=None):
        self = super().__new__(cls, (counts, edges))
        self.counts, self.edges = counts, edges
        self.below, self.above, self.nan, self.strategy = below, above, nan, strategy
        if counts_outside is not None:
            self.below_count, self.above_count, self.nan_count = counts_outside
        return self

    def __repr__(self) -> str:
        return (f"Histogram(counts={self.counts!r}, edges={self.edges!r}, below={self.below!r}, "
                f"above={self.above!r}, nan={self.nan!r}, strategy={self.strategy!r})")


class Histogram2d(tuple):
    """``(counts, xedges, yedges)`` as ``numpy.histogram2d`` returns (counts are int64, or the
    float64 weight sums), with the pairs in no bin: ``x_below``, ``x_above`` (any y), then among
    the rest ``y_below``, ``y_above``, and ``nan`` (NaN in either coordinate); weighted, the
    weight sums of those are in ``outlier_sums``."""

    def __new__(cls, counts, xedges, yedges, outliers, outlier_sums, strategy):
        self = super().__new__(cls, (counts, xedges, yedges))
        self.counts, self.xedges, self.yedges = counts, xedges, yedges
        self.x_below, self.x_above, self.y_below, self.y_above, self.nan = outliers
        self.outlier_sums, self.strategy = outlier_sums, strategy
        return self


def _host_f64(values: Any) -> np.ndarray:
    """Edges or a range given as any array kind, as a float64 numpy array."""
    if hasattr(values, "get") and type(values).__module__.startswith("cupy"):
        values = values.get()
    if hasattr(values, "detach") and hasattr(values, "cpu"):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=np.float64)


def _range(a: Arg, range_: Any) -> Tuple[float, float]:
    """numpy's range: the one given, or the data's (min, max) skipping NaNs (which the
    histogram counts as ``nan``), (0, 1) for no data; widened by 0.5 each way where the two
    are equal."""
    if range_ is not None:
        lo, hi = (float(v) for v in range_)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"the range must be finite, got [{lo}, {hi}]")
    elif a.n == 0:
        lo, hi = 0.0, 1.0
    else:
        lo, hi = (float(v) for v in _native.reduce(a.call, "minmax", False, True))
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"the range of the data [{lo}, {hi}] is not finite; give range=")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _rule_edges(n: int, lo: float, hi: float, dtype: str) -> np.ndarray:
    """Where each even bin begins under the rule for ``dtype`` (see ``_native.rule_edges``)."""
    out = np.empty(n + 1, dtype=np.float64)
    _native.rule_edges((n, lo, hi), dtype, (out.__array_interface__["data"][0], n + 1, True))
    return out


def _closed(edges: np.ndarray) -> list:
    """Custom edges whose last bin includes the last edge."""
    e = edges.tolist()
    e[-1] = float(np.nextafter(edges[-1], np.inf))
    return e


def _spec(a: Arg, bins: Any, range_: Any, edges: Any, closed_last: bool, as_edges: bool):
    """(the bins for the extension, the edges to report, bins count, even upper edge or None).
    ``as_edges``: even bins are given as the rule's own edges (so that one pass closes the last
    bin), else as ``(count, lower, upper)``."""
    if edges is None and not isinstance(bins, (int, np.integer)):
        if np.ndim(bins) == 0:
            raise TypeError(f"bins must be a count or a sequence of edges, not {bins!r}")
        edges = bins
    if edges is not None:
        e = _host_f64(edges)
        if e.ndim != 1 or e.size < 2:
            raise ValueError("edges: a 1-D sequence of at least two values")
        return (_closed(e) if closed_last else e.tolist()), e, e.size - 1, None
    n = operator.index(bins)
    if n < 1:
        raise ValueError(f"bins must be at least 1, got {n}")
    lo, hi = _range(a, range_)
    # numpy's edges, which bound the bins exactly wherever they are exact (the counting rule
    # itself is tally's: see the module's docstring).
    report = np.linspace(lo, hi, n + 1)
    if as_edges and closed_last:
        return _closed(_rule_edges(n, lo, hi, a.dtype if a.dtype in _SAMPLE_TYPES else "float64")), report, n, None
    return (n, lo, hi), report, n, hi


_SAMPLE_TYPES = ("uint8", "uint16", "int32", "uint32", "int64", "float32", "float64", "float16", "bfloat16")


def _float_weights(weights: Any, a: Arg, backend: str, device: Optional[int], stream: Optional[int]) -> Arg:
    """The weights, float32 or float64 (integer weights converted to float64, as numpy does)."""
    w = read(weights, "weights", backend, device, stream)
    if w.dtype not in ("float32", "float64"):
        obj = w.obj
        if isinstance(obj, np.ndarray) or w.kind == "numpy":
            obj = np.asarray(obj, dtype=np.float64)
        elif hasattr(obj, "double"):
            obj = obj.double()
        elif hasattr(obj, "astype"):
            obj = obj.astype("float64")
        else:
            raise TypeError(f"weights: float32 or float64, not {w.dtype}")
        w = read(obj, "weights", backend, device, stream)
    same_place(a, w, "weights")
    if w.n != a.n:
        raise ValueError(f"{w.n} weights for {a.n} samples: one weight per sample")
    return w


def _host_out(n: int, dtype: str) -> Tuple[np.ndarray, tuple]:
    out = np.empty(n, dtype=dtype)
    return out, (out.__array_interface__["data"][0], n, True)


# Even bins' edges on a device, by (kind, device, (bins, lower, upper)): a copy to the device
# per call would cost more than the histogram of a small array.
_DEVICE_EDGES: dict = {}


def _edges(a: Arg, report: Callable[[], np.ndarray], key: Any) -> Any:
    """The edges to report (made by ``report``) as ``a``'s kind: for device input of even bins
    (``key``) a device copy of the kept ones (the caller may write the array it gets)."""
    if not a.on_device or key is None:
        return result(a, report())
    k = (a.kind, a.device[0], key)
    kept = _DEVICE_EDGES.get(k)
    if kept is None:
        if len(_DEVICE_EDGES) >= 64:
            _DEVICE_EDGES.clear()
        kept = _DEVICE_EDGES[k] = result(a, report())
    if hasattr(kept, "clone"):
        return kept.clone()
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(kept, cupy.ndarray):
        with cupy.cuda.Device(a.device[0]):
            return kept.copy()
    return kept.copy()


def _device_counts(a: Arg, spec: Any, strategy: str, n: int, report: Callable[[], Any],
                   move_above: bool = False) -> Tuple[Any, Any, tuple]:
    """Counts device samples into ``n`` bins: the kernel is queued first, then the edges
    (``report()``) and the int64 counts' array are made while it runs, and the call waits for
    the three outlier counts last (the counts follow in the call's stream order). Returns the
    counts, the edges, and (below, above, nan, strategy). ``move_above``: the samples above
    the last edge go into the last bin, on the device in the same stream order (an add here
    would run on the array library's current stream, which may not be the call's), and
    ``above`` comes back 0."""
    pending = _native.histogram_start(a.call, spec, strategy)
    edges = report()
    counts, parts = empty(a, n, "int64")
    below, above, nan, ran = _native.histogram_finish(a.call, pending, parts, move_above)
    return counts, edges, (below, 0 if move_above else above, nan, ran)


def histogram(x: Any, bins: Union[int, Sequence[float]] = 10, range: Optional[Tuple[float, float]] = None,
              weights: Any = None, *, edges: Any = None, strategy: str = "auto", closed_last: bool = True,
              backend: str = "auto", device: Optional[int] = None, stream: Optional[int] = None) -> Histogram:
    """Counts ``x`` into bins, like ``numpy.histogram(x, bins, range, weights=weights)``.

    ``bins``: a count of even bins over ``range`` (default: the data's min and max), or a
    sequence of edges (also ``edges=``). ``weights``: one per sample, summed per bin (float64
    sums, fixed point: the same bits on every run). ``strategy``: "auto" or one of tally's GPU
    strategies by name ("block-shared", "global-l2", ...). Returns a :class:`Histogram`, which
    unpacks as ``counts, edges``.
    """
    a = read(x, "x", backend, device, stream)
    if weights is None and a.on_device and edges is None and isinstance(bins, (int, np.integer)):
        # Even bins of device samples, the common case: nothing but the range before the launch.
        n = operator.index(bins)
        if n < 1:
            raise ValueError(f"bins must be at least 1, got {n}")
        lo, hi = _range(a, range)
        spec = (n, lo, hi)
        # The data's own range: every sample above lies on the upper edge, and a closed last
        # bin takes them all, moved on the device.
        move = closed_last and range is None
        counts, reported, (below, above, nan, ran) = _device_counts(
            a, spec, strategy, n, lambda: _edges(a, lambda: np.linspace(lo, hi, n + 1), spec), move)
        return _closed_last(a, counts, reported, (below, above, nan, ran), closed_last, range, hi)
    spec, report, n, upper = _spec(a, bins, range, edges, closed_last, as_edges=weights is not None)
    if weights is None:
        key = spec if upper is not None else None
        if a.on_device:
            move = closed_last and upper is not None and range is None
            counts, reported, outside = _device_counts(a, spec, strategy, n, lambda: _edges(a, lambda: report, key),
                                                       move)
        else:
            counts, parts = _host_out(n, "int64")
            outside = _native.histogram(a.call, spec, strategy, parts)
            reported = _edges(a, lambda: report, key)
        return _closed_last(a, counts, reported, outside, closed_last and upper is not None, range, upper)
    w = _float_weights(weights, a, backend, device, stream)
    sums, parts = _host_out(n, "float64")
    outside, ran = _native.histogram_weighted(a.call, (w.parts, w.dtype), spec, strategy, parts)
    return Histogram(result(a, sums), result(a, report), *outside[:3], ran, outside[3:])


def _closed_last(a: Arg, counts: Any, reported: Any, outside: tuple, closed: bool, range_: Any,
                 upper: Optional[float]) -> Histogram:
    """The result of even bins counted half-open, with the last bin closed where ``closed``:
    the samples equal to the upper edge were counted above, and move into the last bin."""
    below, above, nan, ran = outside
    if closed and above > 0:
        # Device counts with the data's range arrive with these moved already (above is 0);
        # with a given range, the count's call waits for its own kernel, queued after the
        # counts' widening, so that this add follows it.
        at_edge = above if range_ is None else _native.reduce(a.call, "count", False, False, ("==", upper))
        counts[-1] += at_edge
        above -= at_edge
    return Histogram(result(a, counts), reported, below, above, nan, ran)


def _axis(a: Arg, bins: Any, range_: Any, closed_last: bool):
    spec, report, n, _ = _spec(a, bins, range_, None, closed_last, as_edges=True)
    return spec, report, n


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, weights: Any = None, *,
                strategy: str = "auto", closed_last: bool = True, backend: str = "auto",
                device: Optional[int] = None, stream: Optional[int] = None) -> Histogram2d:
    """Counts (x, y) pairs into a ``bins_x x bins_y`` matrix, like ``numpy.histogram2d``.

    ``bins``: a count for both axes, ``(bins_x, bins_y)``, or ``[edges_x, edges_y]``. ``range``:
    ``((xmin, xmax), (ymin, ymax))``, default each axis's min and max. x and y must have the same
    dtype. Counts are int64 (numpy gives float64 of the same values); weighted sums float64.
    """
    a, b = read(x, "x", backend, device, stream), read(y, "y", backend, device, stream)
    same_place(a, b, "y")
    if a.dtype != b.dtype:
        raise TypeError(f"x and y must have the same dtype, got {a.dtype} and {b.dtype}")
    if a.n != b.n:
        raise ValueError(f"{a.n} x values but {b.n} y values: the coordinates must pair up")
    if isinstance(bins, (int, np.integer)):
        bins_x = bins_y = bins
    else:
        bins_x, bins_y = bins
    range_x, range_y = (None, None) if range is None else range
    spec_x, edges_x, nx = _axis(a, bins_x, range_x, closed_last)
    spec_y, edges_y, ny = _axis(b, bins_y, range_y, closed_last)
    w = None if weights is None else _float_weights(weights, a, backend, device, stream)
    out, parts = _host_out(nx * ny, "int64" if w is None else "float64")
    outliers, ran = _native.histogram2d((a.call, b.parts), None if w is None else (w.parts, w.dtype),
                                        (spec_x, spec_y), strategy, parts)
    counts = result(a, out.reshape(nx, ny))
    return Histogram2d(counts, result(a, edges_x), result(a, edges_y), outliers[0], outliers[1], ran)


def image_histogram(image: Any, bins: Union[int, Sequence[float]] = 256, range: Optional[Tuple[float, float]] = None,
                    *, layout: str = "hwc", brightness: Union[str, Sequence[float]] = "mean",
                    strategy: str = "auto", backend: str = "auto", device: Optional[int] = None,
                    stream: Optional[int] = None) -> Histogram:
    """Counts the brightness of every pixel of ``image`` into bins; the brightness is computed
    as the pixels are counted (on the GPU for device arrays, in the same pass).

    ``image``: a contiguous uint8, uint16, float32 or float64 array of shape ``(height, width)``
    (gray), ``(height, width, channels)`` with ``layout="hwc"`` (interleaved, as PIL and
    OpenCV hold images) or ``(channels, height, width)`` with ``layout="chw"`` (planes, as
    PyTorch holds them); 1 to 4 channels. ``brightness``: ``"mean"`` (of the colour channels,
    alpha left out), ``"rec709"`` (luma), or one weight per channel; each pixel's value by one
    f64 rule, the same on every backend (tally's ``histogram/image``); ``"rec709"`` of a gray
    image (one channel, or gray and alpha) is the gray value. ``bins``: a count of even bins over
    ``range`` (default ``(0, 256)`` for uint8, ``(0, 65536)`` for uint16, ``(0, 1)`` for floats),
    or a sequence of edges. Every bin is half-open, the last too (unlike ``numpy.histogram``): a
    float pixel of exactly 1.0 counts in ``above`` with the default range, and weights that
    take the brightness past the type's range need a ``range``. Returns a :class:`Histogram`.
    """
    shape = tuple(int(s) for s in (image.shape if hasattr(image, "shape") else np.shape(image)))
    if len(shape) == 2:
        height, width, channels = shape[0], shape[1], 1
    elif len(shape) == 3 and layout in ("hwc", "chw"):
        height, width, channels = shape if layout == "hwc" else (shape[1], shape[2], shape[0])
    elif len(shape) == 3:
        raise ValueError(f"layout is 'hwc' or 'chw', not {layout!r}")
    else:
        raise ValueError(f"an image has shape (height, width) or three dimensions, not {shape}")
    a = read(image, "image", backend, device, stream)
    if isinstance(brightness, str):
        rule: Any = brightness
    else:
        rule = [float(w) for w in brightness]
    if isinstance(bins, (int, np.integer)):
        n = operator.index(bins)
        if n < 1:
            raise ValueError(f"bins must be at least 1, got {n}")
        default = {"uint8": (0.0, 256.0), "uint16": (0.0, 65536.0)}.get(a.dtype, (0.0, 1.0))
        lo, hi = (float(v) for v in (default if range is None else range))
        spec: Any = (n, lo, hi)
        edges = _rule_edges(n, lo, hi, "float64")
    elif np.ndim(bins) == 1 and np.size(bins) >= 2:
        edges = _host_f64(bins)
        spec, n = [float(e) for e in edges], len(edges) - 1
    else:
        raise TypeError("bins: a count of even bins, or a sequence of at least two edges")
    counts, parts = _host_out(n, "int64")
    below, above, nan, ran = _native.image_histogram(a.call, (height, width, channels), layout, rule, spec,
                                                     strategy, parts)
    return Histogram(result(a, counts), result(a, edges), below, above, nan, ran)


def bincount(x: Any, weights: Any = None, minlength: int = 0, *, strategy: str = "auto",
             backend: str = "auto", device: Optional[int] = None, stream: Optional[int] = None) -> Any:
    """How often each value 0, 1, ... occurs in ``x`` (non-negative integers), like
    ``numpy.bincount`` and ``torch.bincount``: int64 counts, or float64 sums of ``weights``.
    The length is ``max(x) + 1``, at least ``minlength``. A negative value is a ``ValueError``.
    """
    a = read(x, "x", backend, device, stream)
    if a.dtype.startswith("float"):
        raise TypeError(f"bincount counts integers, not {a.dtype}")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("minlength must be non-negative")
    w = None if weights is None else _float_weights(weights, a, backend, device, stream)

    def count(n: int) -> Tuple[Any, int, int]:
        """The counts (or sums) of values 0 to n - 1, the values below 0 and those from n."""
        spec = (n, 0.0, float(n))
        if w is None and a.on_device:
            counts, _, (below, above, _, _) = _device_counts(a, spec, strategy, n, lambda: None)
            return counts, below, above
        if w is None:
            counts, parts = _host_out(n, "int64")
            below, above, _, _ = _native.histogram(a.call, spec, strategy, parts)
            return counts, below, above
        sums, parts = _host_out(n, "float64")
        outside, _ = _native.histogram_weighted(a.call, (w.parts, w.dtype), spec, strategy, parts)
        return sums, outside[3], outside[4]

    counts = None
    if a.n > 0 and minlength > 0:
        # The usual call (labels of k classes, minlength=k): every value is below minlength, and
        # one pass counts them. Otherwise the largest value sets the length and they are counted
        # again.
        counts, below, above = count(minlength)
        if above:
            counts = None
    if counts is None:
        top = None if a.n == 0 else _native.reduce(a.call, "max")
        if top is not None and top < 0:
            # Every value is negative: nothing to count, and numpy's error all the same.
            raise ValueError(f"bincount: {a.n} negative values in the input")
        n = minlength if top is None else max(minlength, top + 1)
        if n == 0:
            return result(a, np.zeros(0, dtype="int64" if w is None else "float64"))
        counts, below, _ = count(n)
    if below:
        raise ValueError(f"bincount: {below} negative values in the input")
    return result(a, counts)


