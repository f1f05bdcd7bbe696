"""tally against PyTorch and CuPy in one process: ``python -m tally.bench``.

Every case runs on the same resident CUDA tensor (CuPy reads it through DLPack, no copy). A
time is the median over rounds of the mean per call of a burst of calls, taken between
synchronisations; tally's calls wait for their own results, PyTorch's and CuPy's are queued and
waited for once per burst, so the peers are timed at their best. Ratios are the peer's time over
tally's (above 1: tally is faster).

The second table is the Python layer's cost: a call of ``tally.sum`` on a resident tensor of
2^10 elements against the same library call timed inside the extension (target: at most 15 us
more).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable, List, Optional

import tally

from . import _native
from ._arrays import read


def _time(fn: Callable[[], object], sync: Callable[[], None], reps: int, rounds: int = 5) -> float:
    """Median over ``rounds`` of the mean seconds per call of ``reps`` calls."""
    fn()
    sync()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        times.append((time.perf_counter() - start) / reps)
    return statistics.median(times)


def _cases(torch, cupy, n: int):
    """(name, tally call, torch call, cupy call) for arrays of ``n`` elements."""
    g = torch.Generator(device="cuda").manual_seed(1)
    f = torch.rand(n, device="cuda", generator=g) * 256
    i = torch.randint(0, 256, (n,), device="cuda", dtype=torch.int32, generator=g)
    w = torch.rand(n, device="cuda", generator=g)
    mask = f > 128
    cf = ci = cw = None
    if cupy is not None:
        cf, ci, cw = cupy.from_dlpack(f), cupy.from_dlpack(i), cupy.from_dlpack(w)
    c = cupy
    return [
        ("sum f32", lambda: tally.sum(f), lambda: torch.sum(f), c and (lambda: cupy.sum(cf))),
        ("sum f32 exact", lambda: tally.sum(f, exact=True), None, None),
        ("sum i32", lambda: tally.sum(i), lambda: torch.sum(i), c and (lambda: cupy.sum(ci))),
        ("minmax f32", lambda: tally.minmax(f), lambda: torch.aminmax(f), c and (lambda: (cupy.min(cf), cupy.max(cf)))),
        ("argmax f32", lambda: tally.argmax(f), lambda: torch.argmax(f), c and (lambda: cupy.argmax(cf))),
        ("count f32 > 128", lambda: tally.count(f, ">", 128), lambda: torch.count_nonzero(f > 128),
         c and (lambda: cupy.count_nonzero(cf > 128))),
        ("cumsum i32", lambda: tally.cumsum(i), lambda: torch.cumsum(i, 0), c and (lambda: cupy.cumsum(ci))),
        ("cumsum f32", lambda: tally.cumsum(f), lambda: torch.cumsum(f, 0), c and (lambda: cupy.cumsum(cf))),
        ("histc f32 256 bins", lambda: tally.histogram(f, 256, (0, 256)), lambda: torch.histc(f, 256, 0, 256),
         c and (lambda: cupy.histogram(cf, 256, (0, 256)))),
        ("bincount i32 256", lambda: tally.bincount(i, minlength=256), lambda: torch.bincount(i, minlength=256),
         c and (lambda: cupy.bincount(ci, minlength=256))),
        ("bincount i32 weighted", lambda: tally.bincount(i, weights=w, minlength=256),
         lambda: torch.bincount(i, weights=w, minlength=256),
         c and (lambda: cupy.bincount(ci, weights=cw, minlength=256))),
        ("masked_select f32", None, lambda: torch.masked_select(f, mask), c and (lambda: cf[cf > 128])),
    ]


def _fmt(seconds: Optional[float]) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:10.4f}"


def _ratio(peer: Optional[float], ours: Optional[float]) -> str:
    return "-" if peer is None or ours is None else f"{peer / ours:6.2f}x"


def compare(torch, cupy, n: int, reps: int) -> List[str]:
    sync = torch.cuda.synchronize
    lines = [f"n = 2^{n.bit_length() - 1} ({n} elements), ms per call; ratio = peer / tally; "
             "GB/s: tally's input bytes read per second",
             f"{'case':24} {'tally':>10} {'GB/s':>7} {'torch':>10} {'ratio':>7} {'cupy':>10} {'ratio':>7}"]
    for name, ours, theirs, cupys in _cases(torch, cupy, n):
        t = _time(ours, sync, reps) if ours else None
        p = _time(theirs, sync, reps) if theirs else None
        c = _time(cupys, sync, reps) if cupys else None
        rate = "-" if t is None else f"{4 * n / t / 1e9:7.1f}"  # every case reads 4-byte elements
        lines.append(f"{name:24} {_fmt(t)} {rate:>7} {_fmt(p)} {_ratio(p, t):>7} {_fmt(c)} {_ratio(c, t):>7}")
    return lines


def overhead(torch, n: int = 1 << 10, reps: int = 2000) -> List[str]:
    """The Python layer's cost per call over the library call, on a resident tensor."""
    x = torch.rand(n, device="cuda")
    a = read(x)
    python = _time(lambda: tally.sum(x), torch.cuda.synchronize, reps)
    library = statistics.median(_native.time_reduce(a.call, "sum", reps) for _ in range(5))
    extra = python - library
    verdict = "within" if extra <= 15e-6 else "OVER"
    return [f"per-call overhead, tally.sum on a resident float32 tensor of {n} elements:",
            f"  Python call {python * 1e6:8.2f} us, library call {library * 1e6:8.2f} us, "
            f"Python layer {extra * 1e6:6.2f} us ({verdict} the 15 us target)"]


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tally.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--log2", type=int, nargs="*", default=[20, 24, 28], help="sizes, as powers of two")
    parser.add_argument("--reps", type=int, default=20, help="calls per timed burst")
    args = parser.parse_args(argv)
    import torch

    try:
        import cupy
    except ImportError:
        cupy = None
    print(f"device: {tally.device_info()['name']}, torch {torch.__version__}, "
          f"cupy {getattr(cupy, '__version__', 'absent')}, tally {tally.__version__}")
    for line in overhead(torch):
        print(line)
    for k in args.log2:
        print()
        for line in compare(torch, cupy, 1 << k, args.reps if k >= 24 else args.reps * 10):
            print(line)


if __name__ == "__main__":
    main()
