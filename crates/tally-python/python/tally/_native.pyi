"""The extension module under the ``tally`` package (see the Rust crate's ``src/lib.rs``).

An array is ``(address, elements, on_host)``: a C-contiguous numpy array's data address
(``on_host=True``) or a device array's (``False``). A call's first argument is
``(array, dtype, device)``: the array it is about, its dtype by numpy's name ("float16";
"bfloat16" as torch and ml_dtypes name it), and where the call
runs (``None`` for the CPU backend, else ``(ordinal, raw stream handle)``); its other arrays run
there too. Outputs are allocated by the caller and written in place.
"""

from typing import Any, List, Optional, Tuple, Union

ArrayParts = Tuple[int, int, bool]
Device = Optional[Tuple[int, int]]
BinsArg = Union[Tuple[int, float, float], List[float]]
Number = Union[int, float]
Call = Tuple[ArrayParts, str, Device]

__version__: str

def device_info(ordinal: int) -> Tuple[str, Tuple[int, int], int, int, str]: ...
def device_of(address: int) -> int: ...
def dlpack_info(
    capsule: object,
) -> Tuple[int, int, int, int, int, int, List[int], Optional[List[int]]]: ...
def histogram(x: Call, bins: BinsArg, strategy: str, counts: ArrayParts) -> Tuple[int, int, int, str]: ...

class PendingHistogram:
    """A device histogram queued by ``histogram_start``; ``histogram_finish`` completes it once."""

def histogram_start(x: Call, bins: BinsArg, strategy: str) -> PendingHistogram: ...
def histogram_finish(x: Call, pending: PendingHistogram, counts: ArrayParts,
                     move_above: bool = ...) -> Tuple[int, int, int, str]: ...
def histogram_weighted(
    x: Call, weights: Tuple[ArrayParts, str], bins: BinsArg, strategy: str, sums: ArrayParts
) -> Tuple[Tuple[float, float, float, int, int, int], str]: ...
def histogram2d(
    coordinates: Tuple[Call, ArrayParts],
    weights: Optional[Tuple[ArrayParts, str]],
    bins: Tuple[BinsArg, BinsArg],
    strategy: str,
    out: ArrayParts,
) -> Tuple[Tuple[Tuple[int, int, int, int, int], Optional[Tuple[float, float, float, float, float]]], str]: ...
def image_histogram(
    x: Call,
    shape: Tuple[int, int, int],
    layout: str,
    brightness: Union[str, List[float]],
    bins: BinsArg,
    strategy: str,
    counts: ArrayParts,
) -> Tuple[int, int, int, str]: ...
def rule_edges(bins: Tuple[int, float, float], dtype: str, out: ArrayParts) -> None: ...
def reduce(
    x: Call,
    op: str,
    exact: bool = False,
    skip_nan: bool = False,
    compare: Optional[Tuple[str, float]] = None,
) -> Union[Number, Tuple[Number, Number]]: ...
def bench_data(name: str, n: int, out: ArrayParts) -> None: ...
def time_reduce(x: Call, op: str, reps: int) -> float: ...
def scan(
    x: Call,
    op: str,
    exclusive: bool,
    out: ArrayParts,
    keys: Optional[ArrayParts] = None,
    key_dtype: str = "uint32",
) -> None: ...
def select(
    x: Call,
    want: str,
    out: Optional[ArrayParts] = None,
    predicate: Optional[str] = None,
    mask: Optional[ArrayParts] = None,
) -> int: ...
def runs(keys: Call, out_keys: ArrayParts, out_counts: Optional[ArrayParts] = None) -> int: ...
def reduce_by_key(
    keys: Call, values: Tuple[ArrayParts, str], op: str, out: Tuple[ArrayParts, ArrayParts]
) -> int: ...

# (split, [(address, elements, on_host), ...], dtype): one host array split evenly, or one array
# per device of this process.
ShardsArg = Tuple[bool, List[ArrayParts], str]

class DeviceSet:
    def __init__(self, ordinals: Optional[List[int]] = None) -> None: ...
    @staticmethod
    def from_env() -> "DeviceSet": ...
    def ordinals(self) -> List[int]: ...
    def ranks(self) -> List[int]: ...
    def world_size(self) -> int: ...
    def kept_plans(self) -> Tuple[int, int]: ...
    def local_len(self, x: ShardsArg) -> int: ...
    def histogram(
        self, x: ShardsArg, bins: int, lo: float, hi: float, counts: ArrayParts, keep: bool = True,
    ) -> Tuple[int, int, int]: ...
    def reduce(
        self, x: ShardsArg, op: str, exact: bool = False, skip_nan: bool = False,
        compare: Optional[Tuple[str, float]] = None,
    ) -> Any: ...
    def cumsum(self, x: ShardsArg, exclusive: bool, out: ArrayParts) -> None: ...
    def select(self, x: ShardsArg, predicate: str) -> bytearray: ...
