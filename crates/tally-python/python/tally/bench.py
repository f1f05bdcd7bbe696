"""tally against PyTorch and CuPy in one process: ``python -m tally.bench``.

Every case runs on the same resident CUDA tensor (CuPy reads it through DLPack, no copy). A
time is the median over rounds of the mean per call of a burst of calls, taken between
synchronisations. Calls are queued as each library queues them: tally's scans and histogram
counts stay on the stream, and calls that return numbers or data-sized arrays (reductions,
select, unique, bincount) wait, as PyTorch's ``masked_select``, ``unique_consecutive`` and
``bincount`` do. Ratios are the peer's time over tally's (above 1: tally is faster).

``--rust TALLY`` runs the Rust bench of the same cases and sizes from the ``tally`` CLI of the
same build afterwards and prints its tables: at 2^28 the Python times should be within 2% of
them (the reductions' ``e2e us`` column, the others' ``ms``).

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
    # Keys in runs of 8 (random values, as the Rust bench's "i32/8"), and a value per key.
    keys = torch.randint(0, 2**31 - 1, ((n + 7) // 8,), device="cuda", dtype=torch.int32,
                         generator=g).repeat_interleave(8)[:n]
    cf = ci = cw = ck = None
    if cupy is not None:
        cf, ci, cw, ck = (cupy.from_dlpack(a) for a in (f, i, w, keys))
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
        ("masked_select f32 50%", lambda: tally.select(f, mask), lambda: torch.masked_select(f, mask),
         c and (lambda: cf[cf > 128])),
        ("select f32 'x > 128'", lambda: tally.select(f, "x > 128"), lambda: f[f > 128], c and (lambda: cf[cf > 128])),
        ("nonzero f32 > 128", lambda: tally.nonzero(f, "x > 128"), lambda: torch.nonzero(f > 128),
         c and (lambda: cupy.flatnonzero(cf > 128))),
        ("unique_consecutive i32/8", lambda: tally.unique(keys), lambda: torch.unique_consecutive(keys), None),
        ("rle i32/8", lambda: tally.run_length_encode(keys),
         lambda: torch.unique_consecutive(keys, return_counts=True), None),
        ("reduce_by_key i32/8 f32", lambda: tally.reduce_by_key(keys, f), None, None),
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


def rust_commands(binary: str, log2: List[int]) -> List[List[str]]:
    """The Rust bench's runs of the cases above (``tally bench ...`` of the same build), whose
    launch times the Python table's 2^28 row should come within 2% of: reductions (their e2e
    column), scans, select, the 256-bin histogram, runs (2^28 only)."""
    sizes = ",".join(str(k) for k in log2)
    cuda = ["--backend", "cuda"]
    commands = [
        ["bench", "reduce", *cuda, "--log2-sizes", sizes, "--dtypes", "f32,i32", "--ops", "sum,exact-sum,minmax,argmax,count"],
        ["bench", "scan", *cuda, "--log2-sizes", sizes],
        ["bench", "select", *cuda, "--log2-sizes", sizes],
    ]
    commands += [["bench", "hist", *cuda, "--size", str(1 << k), "--bins", "256", "--dtypes", "i32,f32",
                  "--distributions", "uniform", "--strategies", "auto"] for k in log2]
    if 28 in log2:
        commands += [["bench", what, *cuda] for what in ("unique", "rle", "reduce-by-key")]
    return [[binary, *c] for c in commands]


def run_rust(binary: str, log2: List[int]) -> List[str]:
    import subprocess

    lines = ["", f"the Rust bench of the same cases ({binary}):"]
    for command in rust_commands(binary, log2):
        lines.append("$ " + " ".join(command))
        done = subprocess.run(command, capture_output=True, text=True)
        lines += (done.stdout or "").rstrip().splitlines()
        if done.returncode != 0:
            lines.append(f"(exit {done.returncode}) " + (done.stderr or "").strip()[-500:])
    return lines


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tally.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--log2", type=int, nargs="*", default=[20, 24, 28], help="sizes, as powers of two")
    parser.add_argument("--reps", type=int, default=20, help="calls per timed burst")
    parser.add_argument("--rust", metavar="TALLY", help="the tally CLI of the same build: its bench of the same "
                        "cases and sizes is printed after the tables, for the 2% comparison")
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
        torch.cuda.empty_cache()
    if args.rust:
        for line in run_rust(args.rust, args.log2):
            print(line, flush=True)


if __name__ == "__main__":
    main()
