"""Reading the caller's arrays and making outputs of the same kind.

An input becomes an :class:`Arg`: its dtype by numpy's name, its elements, the
``(address, elements, on_host)`` triple the extension reads, and where the call runs
(``None`` for the CPU backend, else ``(device ordinal, raw stream handle)``). Device arrays are
read in place, ordered with the caller's current stream: PyTorch's, CuPy's, the stream a
``__cuda_array_interface__`` names, or the one passed to ``__dlpack__``.

Every array is read as a flat, C-contiguous run of elements (as ``numpy.histogram`` and
``numpy.cumsum`` without an axis do); a strided one is a ``ValueError``, never copied behind the
caller's back.
"""

from __future__ import annotations

import sys
from typing import Any, Optional, Tuple

import numpy as np

#: The dtypes tally has, by numpy's names.
DTYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64",
          "float16", "bfloat16")

_TORCH_DTYPES: dict = {}

# DLPack's type codes (int, uint, float) and device types.
_DLPACK_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat"}
_DL_CPU, _DL_CUDA, _DL_CUDA_MANAGED = 1, 2, 13


class Arg:
    """One input array, read for one call."""

    __slots__ = ("obj", "kind", "dtype", "n", "parts", "device", "keep", "torch_device", "call")

    def __init__(self, obj, kind, dtype, n, parts, device, keep=None, torch_device=None):
        self.obj = obj  # the caller's array
        self.kind = kind  # "numpy", "torch", "cupy" or "other" (a CUDA array by protocol)
        self.dtype = dtype  # numpy's name of the element type
        self.n = n  # elements
        self.parts = parts  # (address, elements, on_host) for the extension
        self.device = device  # None (CPU backend) or (ordinal, stream)
        self.keep = keep  # what must live as long as the call (a DLPack capsule, a host copy)
        self.torch_device = torch_device
        self.call = (parts, dtype, device)  # what the extension's functions take first

    @property
    def on_device(self) -> bool:
        return not self.parts[2]


# numpy's dtypes by object: a lookup is much cheaper than ``dtype.name``.
def _numpy_dtype(name: str) -> np.dtype:
    """numpy's dtype of ``name``; bfloat16 is ml_dtypes' (numpy has none of its own)."""
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise TypeError("bfloat16 on the host needs the ml_dtypes package (numpy has no bfloat16)") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


_NUMPY_DTYPES = {np.dtype(name): name for name in DTYPES if name != "bfloat16"}


def _dtype_name(dtype: np.dtype, what: str) -> str:
    name = _NUMPY_DTYPES.get(dtype)
    if name is not None:
        return name
    if dtype.byteorder == ">" or (dtype.byteorder == "|" and dtype.itemsize > 1):
        raise TypeError(f"{what}: tally reads native-endian arrays, not {dtype.str}")
    name = dtype.name
    if name not in DTYPES:
        raise TypeError(f"{what}: tally has no dtype {name} (it takes {', '.join(DTYPES)})")
    return name


def _torch_dtypes(torch) -> dict:
    if not _TORCH_DTYPES:
        for name in DTYPES:
            t = getattr(torch, name, None)
            if t is not None:
                _TORCH_DTYPES[t] = name
    return _TORCH_DTYPES


def _host(obj, a: np.ndarray, kind: str, what: str, backend: str, device: Optional[int]) -> Arg:
    if not a.flags.c_contiguous:
        raise ValueError(f"{what} is not contiguous: tally reads contiguous arrays (numpy.ascontiguousarray)")
    dtype = _dtype_name(a.dtype, what)
    target = None
    if backend == "cuda":
        target = (0 if device is None else int(device), 0)
    elif backend not in ("auto", "cpu"):
        raise ValueError(f"unknown backend '{backend}' (expected auto, cpu or cuda)")
    address = a.__array_interface__["data"][0]
    return Arg(obj, kind, dtype, a.size, (address, a.size, True), target, keep=a)


def _device(obj, kind, dtype, n, address, ordinal, stream, backend, what, keep=None, torch_device=None) -> Arg:
    if backend == "cpu":
        raise ValueError(f"{what} is on GPU {ordinal}; the CPU backend reads host arrays "
                         "(copy it, or use backend='cuda')")
    if backend not in ("auto", "cuda"):
        raise ValueError(f"unknown backend '{backend}' (expected auto, cpu or cuda)")
    return Arg(obj, kind, dtype, n, (address, n, False), (ordinal, stream), keep, torch_device)


def read(x: Any, what: str = "x", backend: str = "auto", device: Optional[int] = None,
         stream: Optional[int] = None) -> Arg:
    """``x`` as an :class:`Arg`. ``backend``: "auto" (host arrays on the CPU, device arrays on
    their device), "cpu", or "cuda" (host arrays copied to GPU ``device``, 0 by default).
    ``stream``: a raw CUDA stream handle to run on instead of the array library's current one.
    """
    if isinstance(x, np.ndarray):
        return _host(x, x, "numpy", what, backend, device)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _read_torch(torch, x, what, backend, device, stream)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        if not x.flags.c_contiguous:
            raise ValueError(f"{what} is not contiguous: tally reads contiguous arrays (cupy.ascontiguousarray)")
        dtype = _dtype_name(x.dtype, what)
        s = cupy.cuda.get_current_stream().ptr if stream is None else stream
        return _device(x, "cupy", dtype, x.size, x.data.ptr, x.device.id, s, backend, what)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        return _read_cai(x, cai, what, backend, stream)
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        return _read_dlpack(x, what, backend, device, stream)
    if hasattr(x, "__array__") or isinstance(x, (list, tuple, range)):
        return _host(x, np.asarray(x), "numpy", what, backend, device)
    raise TypeError(f"{what}: expected a numpy, PyTorch or CuPy array or a GPU array with __dlpack__ or "
                    f"__cuda_array_interface__, got {type(x).__name__}")


def _read_torch(torch, x, what, backend, device, stream) -> Arg:
    if x.is_cuda:
        if not x.is_contiguous():
            raise ValueError(f"{what} is not contiguous: tally reads contiguous tensors (.contiguous())")
        dtype = _torch_dtypes(torch).get(x.dtype)
        if dtype is None:
            raise TypeError(f"{what}: tally has no dtype {x.dtype} (it takes {', '.join(DTYPES)})")
        ordinal = x.get_device()
        if stream is None:
            stream = _current_torch_stream(torch, ordinal)
        return _device(x, "torch", dtype, x.numel(), x.data_ptr(), ordinal, stream, backend, what,
                       torch_device=x.device)
    if x.device.type != "cpu":
        raise TypeError(f"{what}: a tensor on {x.device}; tally reads CPU and CUDA tensors")
    if not x.is_contiguous():
        raise ValueError(f"{what} is not contiguous: tally reads contiguous tensors (.contiguous())")
    arg = _host(x, x.detach().numpy(), "torch", what, backend, device)
    arg.torch_device = x.device
    return arg


def _current_torch_stream(torch, ordinal: int) -> int:
    """PyTorch's current stream on device ``ordinal``, as a raw handle: through the private
    accessor that skips making a ``torch.cuda.Stream`` object where there is one."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(ordinal)
    return torch.cuda.current_stream(ordinal).cuda_stream


def _contiguous(shape, strides, itemsize) -> bool:
    if strides is None:
        return True
    expected = itemsize
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _read_cai(x, cai, what, backend, stream) -> Arg:
    from . import _native

    dtype = _dtype_name(np.dtype(cai["typestr"]), what)
    shape = tuple(cai["shape"])
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if not _contiguous(shape, cai.get("strides"), np.dtype(dtype).itemsize):
        raise ValueError(f"{what} is not contiguous: tally reads contiguous arrays")
    address = cai["data"][0] or 0
    ordinal = _native.device_of(address) if n > 0 else 0
    if stream is None:
        # Version 3: the stream the producer works on (None: no ordering needed; 1 the legacy
        # default stream, 2 the per-thread default stream: handles the extension takes as they
        # are).
        stream = cai.get("stream") or 0
    return _device(x, "other", dtype, n, address, ordinal, stream, backend, what)


def _read_dlpack(x, what, backend, device, stream) -> Arg:
    from . import _native

    device_type, device_id = x.__dlpack_device__()
    if device_type == _DL_CPU:
        return _host(x, np.from_dlpack(x), "numpy", what, backend, device)
    if device_type not in (_DL_CUDA, _DL_CUDA_MANAGED):
        raise TypeError(f"{what}: a DLPack array on device type {device_type}; tally reads CPU and CUDA arrays")
    # The consumer's stream: the producer makes the data ready on it (1: the legacy default).
    s = 1 if stream is None else stream
    capsule = x.__dlpack__(stream=s)
    address, _, _, code, bits, lanes, shape, strides = _native.dlpack_info(capsule)
    kind = _DLPACK_CODES.get(code)
    if kind is None or lanes != 1:
        raise TypeError(f"{what}: DLPack type code {code} x{lanes} is not a tally dtype")
    name = f"{kind}{bits}"
    dtype = name if name == "bfloat16" else _dtype_name(np.dtype(name), what)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if strides is not None and not _contiguous(shape, [st * (bits // 8) for st in strides], bits // 8):
        raise ValueError(f"{what} is not contiguous: tally reads contiguous arrays")
    return _device(x, "other", dtype, n, address, device_id, s, backend, what, keep=capsule)


def same_place(a: Arg, b: Arg, what: str) -> None:
    """Raises unless ``b`` runs where ``a`` does."""
    if (a.device is None) != (b.device is None) or (a.device and a.device[0] != b.device[0]):
        raise ValueError(f"x and {what} must be on the same device")


# Outputs -------------------------------------------------------------------------------------

def empty(like: Arg, n: int, dtype: str) -> Tuple[Any, Tuple[int, int, bool]]:
    """A new array of ``n`` elements of ``dtype`` of ``like``'s kind, where the call writes it:
    on ``like``'s device for device input, else a numpy array (returned as the input's kind by
    :func:`result`). Returns the array and its ``(address, elements, on_host)``."""
    if not like.on_device:
        a = np.empty(n, dtype=_numpy_dtype(dtype))
        return a, (a.__array_interface__["data"][0], n, True)
    if like.kind == "torch":
        torch = sys.modules["torch"]
        t = torch.empty(n, dtype=_torch_dtype_of(torch, dtype), device=like.torch_device)
        return t, (t.data_ptr(), n, False)
    cupy = _cupy()
    if cupy is not None:
        with cupy.cuda.Device(like.device[0]):
            c = cupy.empty(n, dtype=_numpy_dtype(dtype))
        return c, (c.data.ptr, n, False)
    import torch

    t = torch.empty(n, dtype=getattr(torch, dtype), device=f"cuda:{like.device[0]}")
    return t, (t.data_ptr(), n, False)


_TORCH_DTYPE_OF: dict = {}


def _torch_dtype_of(torch, name: str):
    """PyTorch's dtype of numpy's ``name`` (a dict lookup after the first call: outputs are
    made on every call)."""
    t = _TORCH_DTYPE_OF.get(name)
    if t is None:
        t = _TORCH_DTYPE_OF[name] = getattr(torch, name)
    return t


def _cupy():
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def result(like: Arg, out: Any) -> Any:
    """An output (from :func:`empty`, or a host numpy array) as ``like``'s kind, on its device."""
    if isinstance(out, np.ndarray):
        if like.kind == "torch":
            import torch

            t = torch.from_numpy(out)
            return t.to(like.torch_device) if like.on_device else t
        if not like.on_device:
            return out
        if like.kind == "cupy" or (like.kind == "other" and _cupy() is not None):
            cupy = _cupy()
            with cupy.cuda.Device(like.device[0]):
                return cupy.asarray(out)
        import torch

        return torch.from_numpy(out).to(f"cuda:{like.device[0]}")
    if like.kind == "other" and type(like.obj).__module__.split(".")[0] in ("jax", "jaxlib"):
        import jax.dlpack

        return jax.dlpack.from_dlpack(out)
    return out
