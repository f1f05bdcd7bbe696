"""tally: GPU histograms, reductions, scans, selection and runs for numpy, PyTorch and CuPy arrays.

Arrays on a GPU (PyTorch and CuPy, or anything with ``__dlpack__`` or
``__cuda_array_interface__``) are read in place, ordered with the caller's current stream, and
results come back as the same kind of array on the same device. numpy arrays are counted on the
CPU, or copied to a GPU with ``backend="cuda"``. Calls whose results are arrays of a known size
(histogram counts, scans) leave their work queued, ordered before the caller's later work, as its
own kernels would; calls that return numbers, or arrays whose length depends on the data
(select, unique), wait.

    import tally
    counts, edges = tally.histogram(x, bins=256, range=(0, 256))   # numpy.histogram
    total = tally.sum(x, exact=True)                                 # math.fsum, on the GPU
    running = tally.cumsum(x)                                        # numpy.cumsum
    positive = tally.select(x, "x > 0")                              # x[x > 0]
    total = tally.DeviceSet().sum([x0, x1])                          # over two GPUs (NCCL)

Errors: ``TypeError`` for an array or dtype tally does not take, ``ValueError`` for bad
arguments (and strided arrays), ``OverflowError`` where a result does not fit its type,
``MemoryError`` where device memory runs out, ``RuntimeError`` for the device and driver.
"""

from __future__ import annotations


def _load_nvrtc_from_wheels() -> None:
    """Loads NVRTC from the ``nvidia-cuda-nvrtc`` wheel (which PyTorch and CuPy bring) where
    there is one: it is not on the loader's path, and once it is loaded by its full path, tally's
    own search by library name finds it. Without it tally looks on the path as usual."""
    import ctypes
    import glob
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return
    for root in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(glob.glob(os.path.join(root, "*", "lib", "libnvrtc.so.13*"))):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                return
            except OSError:
                continue


_load_nvrtc_from_wheels()

from . import _native  # noqa: E402
from .histogram import Histogram, Histogram2d, bincount, histogram, histogram2d, image_histogram
from .multi import DeviceSet
from .reduce import argmax, argmin, count, max, mean, min, minmax, sum
from .runs import reduce_by_key, run_length_encode, unique
from .scan import cummax, cummin, cumsum
from .select import count_if, nonzero, partition, select

__version__: str = _native.__version__

__all__ = [
    "Histogram", "Histogram2d", "histogram", "histogram2d", "image_histogram", "bincount",
    "sum", "mean", "min", "max", "minmax", "argmin", "argmax", "count",
    "cumsum", "cummin", "cummax",
    "select", "nonzero", "partition", "count_if",
    "unique", "run_length_encode", "reduce_by_key",
    "DeviceSet",
    "cuda_available", "device_info",
]


def device_info(device: int = 0) -> dict:
    """The CUDA device as tally sees it (name, compute capability, multiprocessors, memory, the
    NVRTC target); a ``RuntimeError`` saying why where there is no usable GPU."""
    name, cc, sms, memory, target = _native.device_info(device)
    return {"name": name, "compute_capability": cc, "multiprocessors": sms, "memory_bytes": memory,
            "nvrtc_target": target}


def cuda_available(device: int = 0) -> bool:
    """Whether tally can use GPU ``device`` (:func:`device_info` says why not)."""
    try:
        _native.device_info(device)
    except RuntimeError:
        return False
    return True
