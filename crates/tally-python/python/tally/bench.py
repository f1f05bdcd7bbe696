"""tally against PyTorch and CuPy in one process: ``python -m tally.bench``.

Every case runs on the same resident CUDA tensor (CuPy reads it through DLPack, no copy). Calls
are queued as each library queues them: tally's scans stay on the stream, and a time is the
median over rounds of the mean per call of a burst of calls between synchronisations. Calls that
return numbers or data-sized arrays (reductions, histograms, select, unique, bincount) wait for
their work, as PyTorch's ``masked_select``, ``unique_consecutive`` and ``bincount`` do: each is
timed alone, the median of single calls. Ratios are the peer's time over tally's (above 1:
tally is faster).

``--rust TALLY`` runs the Rust bench (``tally bench ... --json`` of the same build) at the
largest size afterwards, one group of cases at a time, and right after each group times the
same calls from Python on the same data (the Rust bench's own, through ``_native.bench_data``:
a histogram's or a selection's speed depends on its data; and a long run's drift of the GPU's
clocks would otherwise show as a difference). Each Python time is set beside the Rust
library's call timed the same way: the whole call on the host clock (launch, wait, read the
result) where the Python call waits, the launch (CUDA events) for the scans. The target: the
Python times within 2% of them at 2^28.

The second table is the Python layer's cost: a call of ``tally.sum`` on a resident tensor of
2^10 elements against the same library call timed inside the extension (target: at most 15 us
more).

``--devices all`` (or ``0,1``) adds the scaling of a :class:`tally.DeviceSet` from Python: a
256-bin histogram of int32 samples and a float32 sum of 2^``--devices-log2`` elements split in
even shards resident on the set's GPUs, against one GPU holding all of them, each call timed
whole (the set's calls wait for their results on the host; a one-GPU call is followed by a
synchronisation of its device), the median of single calls. The set keeps its plans between
calls, as the Rust caller does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

import tally

from . import _native
from ._arrays import read

#: Cases whose calls queue without waiting (timed in bursts); every other case waits.
QUEUED = ("cumsum i32", "cumsum f32")


#: Seconds each case runs unmeasured first (at least three calls): a GPU that idled, as it does
#: while the ``--rust`` bench's process starts or exits, runs its first calls at lower clocks,
#: and the Rust bench times its own calls after warm-up launches too.
WARMUP_SECONDS = 0.05


def _time(fn: Callable[[], object], sync: Callable[[], None], reps: int, rounds: int = 5,
          waits: bool = False) -> float:
    """Seconds per call, after :data:`WARMUP_SECONDS` of unmeasured calls: for calls that wait
    for their own work, the median of ``reps * rounds`` single calls; else the median over
    ``rounds`` of the mean of ``reps`` calls queued back to back."""
    start = time.perf_counter()
    calls = 0
    while calls < 3 or time.perf_counter() - start < WARMUP_SECONDS:
        fn()
        calls += 1
        if calls % 8 == 0:
            sync()
    sync()
    if waits:
        times = []
        for _ in range(reps * rounds):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        sync()
        return statistics.median(times)
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
    """The table of one size."""
    sync = torch.cuda.synchronize
    lines = [f"n = 2^{n.bit_length() - 1} ({n} elements), ms per call; ratio = peer / tally; "
             "GB/s: tally's input bytes read per second",
             f"{'case':24} {'tally':>10} {'GB/s':>7} {'torch':>10} {'ratio':>7} {'cupy':>10} {'ratio':>7}"]
    for name, ours, theirs, cupys in _cases(torch, cupy, n):
        waits = name not in QUEUED
        t = _time(ours, sync, reps, waits=waits) if ours else None
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


def scaling(torch, devices: List[int], n: int, reps: int) -> List[str]:
    """One GPU against the set of ``devices`` on the same ``n`` elements (see the module's
    text); returns the lines to print."""
    s = tally.DeviceSet(devices)
    g = torch.Generator(device=f"cuda:{devices[0]}").manual_seed(7)
    ints = torch.randint(0, 256, (n,), device=f"cuda:{devices[0]}", dtype=torch.int32, generator=g)
    floats = torch.rand(n, device=f"cuda:{devices[0]}", generator=g)
    bounds = [n * i // len(devices) for i in range(len(devices) + 1)]

    def shards(x):
        return [x[bounds[i]:bounds[i + 1]].to(f"cuda:{d}") for i, d in enumerate(devices)]

    def sync_all():
        for d in devices:
            torch.cuda.synchronize(d)

    lines = [f"device set {devices} from Python, 2^{n.bit_length() - 1} elements in {len(devices)} even "
             "shards against one GPU holding all; ms per call, median of single calls",
             f"{'case':28} {'one GPU':>10} {'set':>10} {'scaling':>8}"]
    cases = [
        ("histogram i32 256 bins", ints, lambda x: tally.histogram(x, 256, (0, 256)),
         lambda parts: s.histogram(parts, 256, (0, 256))),
        ("sum f32", floats, lambda x: tally.sum(x), lambda parts: s.sum(parts)),
    ]
    for name, x, one, many in cases:
        parts = shards(x)
        sync_all()
        if name.startswith("histogram") and not np.array_equal(_host(one(x)[0]), _host(many(parts)[0])):
            lines.append(f"{name:28} the set's counts differ from one GPU's")
            continue

        def single():
            one(x)
            torch.cuda.synchronize(devices[0])

        t1 = _time(single, sync_all, reps, waits=True)
        tn = _time(lambda: many(parts), sync_all, reps, waits=True)
        lines.append(f"{name:28} {_fmt(t1)} {_fmt(tn)} {t1 / tn:7.2f}x")
        del parts
    return lines


def _host(counts) -> "np.ndarray":
    """Counts as a numpy array, from a torch tensor or a numpy array."""
    return counts.cpu().numpy() if hasattr(counts, "cpu") else np.asarray(counts)


#: The cases set beside the Rust bench: (case, the Rust bench, the fields that pick its row, the
#: field that times it as the Python call is timed, the bench data the call reads, the call).
#: ``end_to_end_us`` is in microseconds, the other fields in ms; "mask" is ``x > 0`` of the
#: first array, the Rust bench's flags.
COMPARED: List[Tuple[str, str, Dict[str, str], str, Tuple[str, ...], Callable[..., object]]] = [
    ("sum f32", "reduce", {"dtype": "f32", "op": "sum"}, "end_to_end_us", ("reduce f32",), lambda x: tally.sum(x)),
    ("sum f32 exact", "reduce", {"dtype": "f32", "op": "exact-sum"}, "end_to_end_us", ("reduce f32",),
     lambda x: tally.sum(x, exact=True)),
    ("sum i32", "reduce", {"dtype": "i32", "op": "sum"}, "end_to_end_us", ("reduce i32",), lambda x: tally.sum(x)),
    ("minmax f32", "reduce", {"dtype": "f32", "op": "minmax"}, "end_to_end_us", ("reduce f32",), tally.minmax),
    ("argmax f32", "reduce", {"dtype": "f32", "op": "argmax"}, "end_to_end_us", ("reduce f32",), tally.argmax),
    ("count f32 > 0.5", "reduce", {"dtype": "f32", "op": "count"}, "end_to_end_us", ("reduce f32",),
     lambda x: tally.count(x, ">", 0.5)),
    ("cumsum f32", "scan", {"case": "f32 sum det"}, "ms", ("scan f32",), tally.cumsum),
    ("cumsum i32", "scan", {"case": "i32->i64 sum"}, "ms", ("scan i32",), tally.cumsum),
    ("select f32 'x < 0'", "select", {"case": "select 50%"}, "e2e_ms", ("peer f32",), lambda x: tally.select(x, "x < 0")),
    ("select f32 by mask", "select", {"case": "flagged 50%"}, "e2e_ms", ("peer f32", "mask"), tally.select),
    ("nonzero f32 'x < 0'", "select", {"case": "indices 50%"}, "e2e_ms", ("peer f32",),
     lambda x: tally.nonzero(x, "x < 0")),
    ("histogram f32 256 bins", "hist", {"dtype": "f32"}, "e2e_ms", ("hist f32",),
     lambda x: tally.histogram(x, 256, (0, 256))),
    ("bincount i32 256", "hist", {"dtype": "i32"}, "e2e_ms", ("hist i32",), lambda x: tally.bincount(x, minlength=256)),
    ("unique i32/8", "unique", {}, "e2e_ms", ("keys i32/8",), tally.unique),
    ("rle i32/8", "rle", {}, "e2e_ms", ("keys i32/8",), tally.run_length_encode),
    ("reduce_by_key i32/8 f32", "reduce-by-key", {}, "e2e_ms", ("keys i32/8", "peer f32"), tally.reduce_by_key),
]

_BENCH_DTYPES = {"f32": "float32", "i32": "int32"}


def bench_array(torch, name: str, n: int):
    """The Rust bench's data ``name`` (see ``_native.bench_data``), ``n`` elements, on the GPU."""
    import numpy as np

    host = np.empty(n, dtype=_BENCH_DTYPES[name.split()[1][:3]])
    _native.bench_data(name, n, (host.__array_interface__["data"][0], n, True))
    return torch.from_numpy(host).to("cuda")


def rust_commands(binary: str, log2: int) -> List[Tuple[str, List[str]]]:
    """The Rust bench's runs of the cases in :data:`COMPARED` at 2^``log2`` elements (``tally
    bench ... --json`` of the same build), by bench name."""
    size = str(log2)
    cuda = ["--backend", "cuda", "--json"]
    commands = [
        ("reduce", ["bench", "reduce", *cuda, "--log2-sizes", size, "--dtypes", "f32,i32",
                    "--ops", "sum,exact-sum,minmax,argmax,count"]),
        ("scan", ["bench", "scan", *cuda, "--log2-sizes", size]),
        ("select", ["bench", "select", *cuda, "--log2-sizes", size, "--cases",
                    "select 50%,flagged 50%,indices 50%"]),
        ("hist", ["bench", "hist", *cuda, "--size", str(1 << log2), "--bins", "256", "--dtypes", "i32,f32",
                  "--distributions", "uniform", "--strategies", "auto"]),
    ]
    commands += [(what, ["bench", what, *cuda, "--log2-sizes", size]) for what in ("unique", "rle", "reduce-by-key")]
    return [(what, [binary, *c]) for what, c in commands]


def rust_seconds(rows: List[dict], match: Dict[str, str], field: str) -> Optional[float]:
    """The time in seconds of the first of the Rust bench's ``rows`` whose fields equal ``match``."""
    for row in rows:
        if all(str(row.get(k)) == v for k, v in match.items()) and row.get(field) is not None:
            return row[field] / (1e6 if field.endswith("_us") else 1e3)
    return None


def run_rust(binary: str, log2: int, torch, reps: int) -> List[str]:
    """Runs the Rust bench of each group of :data:`COMPARED` and, right after it, times the same
    calls from Python on the same data (the Rust bench's, through ``_native.bench_data``): the
    two measurements of a case lie seconds apart, so that the GPU's clocks and temperature,
    which drift over a long run, are nearly the same for both. Returns the lines to print."""
    import subprocess

    n = 1 << log2
    sync = torch.cuda.synchronize
    lines = ["", f"the Rust bench at 2^{log2} ({binary}), each group followed at once by the same calls "
             "from Python on the same data:"]
    table = [f"{'case':24} {'python ms':>10} {'rust ms':>10} {'python/rust':>12}  (target: within 2%)"]
    for what, command in rust_commands(binary, log2):
        lines.append("$ " + " ".join(command))
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            lines.append(f"(exit {done.returncode}) " + (done.stderr or "").strip()[-500:])
            continue
        doc = json.loads(done.stdout)
        lines.append(json.dumps({k: v for k, v in doc.items() if k != "rows"}))
        lines += ["  " + json.dumps(row) for row in doc["rows"]]
        arrays: Dict[str, object] = {}
        for case, bench, match, field, names, call in COMPARED:
            if bench != what:
                continue
            for name in names:
                if name not in arrays:
                    arrays[name] = (arrays[names[0]] > 0) if name == "mask" else bench_array(torch, name, n)
            args = [arrays[name] for name in names]
            seconds = _time(lambda: call(*args), sync, reps, waits=case not in QUEUED)
            rust = rust_seconds(doc["rows"], match, field)
            if rust is None:
                table.append(f"{case:24} {_fmt(seconds)} {'-':>10}")
                continue
            ratio = seconds / rust
            verdict = "within" if ratio <= 1.02 else "OVER"
            table.append(f"{case:24} {_fmt(seconds)} {_fmt(rust)} {ratio:11.3f}x  {verdict}")
        del arrays
        torch.cuda.empty_cache()
    return lines + [""] + table


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tally.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--log2", type=int, nargs="*", default=[20, 24, 28], help="sizes, as powers of two")
    parser.add_argument("--reps", type=int, default=20, help="calls per timed burst")
    parser.add_argument("--rust", metavar="TALLY", help="the tally CLI of the same build: its bench of the same "
                        "cases at the largest size is set beside the Python times, for the 2% comparison")
    parser.add_argument("--devices", help="'all' or ordinals such as 0,1: also time a DeviceSet against one GPU")
    parser.add_argument("--devices-log2", type=int, default=30, help="elements of the device-set cases, as a "
                        "power of two (default 30)")
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
    if args.devices:
        devices = (list(range(torch.cuda.device_count())) if args.devices == "all"
                   else [int(d) for d in args.devices.split(",")])
        print()
        for line in scaling(torch, devices, 1 << args.devices_log2, args.reps):
            print(line, flush=True)
    if args.rust and args.log2:
        k = max(args.log2)
        for line in run_rust(args.rust, k, torch, args.reps if k >= 24 else args.reps * 10):
            print(line, flush=True)


if __name__ == "__main__":
    main()
