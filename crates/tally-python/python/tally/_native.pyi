"""The extension module under the ``tally`` package (see the Rust crate's ``src/lib.rs``).

An array argument is ``(address, elements, on_host)``: a C-contiguous numpy array's data address
(``on_host=True``) or a device array's (``False``). ``device`` is ``None`` for the CPU backend,
else ``(ordinal, raw stream handle)``. Outputs are allocated by the caller and written in place.
"""

from typing import List, Optional, Tuple, Union

ArrayParts = Tuple[int, int, bool]
Device = Optional[Tuple[int, int]]
BinsArg = Union[Tuple[int, float, float], List[float]]
Number = Union[int, float]

__version__: str

def device_info(ordinal: int) -> Tuple[str, Tuple[int, int], int, int, str]: ...
def device_of(address: int) -> int: ...
def dlpack_info(
    capsule: object,
) -> Tuple[int, int, int, int, int, int, List[int], Optional[List[int]]]: ...
def histogram(
    x: ArrayParts, dtype: str, device: Device, bins: BinsArg, strategy: str, counts: ArrayParts
) -> Tuple[int, int, int, str]: ...
def histogram_weighted(
    x: ArrayParts,
    dtype: str,
    weights: ArrayParts,
    weights_dtype: str,
    device: Device,
    bins: BinsArg,
    strategy: str,
    sums: ArrayParts,
) -> Tuple[Tuple[float, float, float, int, int, int], str]: ...
def histogram2d(
    x: ArrayParts,
    y: ArrayParts,
    dtype: str,
    weights: Optional[ArrayParts],
    weights_dtype: str,
    device: Device,
    bins_x: BinsArg,
    bins_y: BinsArg,
    strategy: str,
    out: ArrayParts,
) -> Tuple[Tuple[Tuple[int, int, int, int, int], Optional[Tuple[float, float, float, float, float]]], str]: ...
def rule_edges(bins: Tuple[int, float, float], dtype: str, out: ArrayParts) -> None: ...
def reduce(
    x: ArrayParts,
    dtype: str,
    device: Device,
    op: str,
    exact: bool = False,
    skip_nan: bool = False,
    compare: Optional[Tuple[str, float]] = None,
) -> Union[Number, Tuple[Number, Number]]: ...
def time_reduce(x: ArrayParts, dtype: str, device: Device, op: str, reps: int) -> float: ...
def scan(
    x: ArrayParts,
    dtype: str,
    device: Device,
    op: str,
    exclusive: bool,
    out: ArrayParts,
    keys: Optional[ArrayParts] = None,
    key_dtype: str = "uint32",
) -> None: ...
