"""Where a Python call of tally.sum on a resident tensor spends its time beyond the library
call, at 2^10, 2^24 and 2^28 elements (`--log2`): the whole Python call, the Python layer's
reading of the tensor alone, the extension call with the tensor already read, and the library
call timed inside the extension (one call a time, and a burst). Single calls are timed on the
host clock, the median of `--reps`; a GPU host with PyTorch and tally's wheel installed.

    python3 scripts/profile/python_gap.py --reps 50
"""
import argparse
import statistics
import time

import torch

import tally
from tally import _native
from tally._arrays import read


def single(fn, reps):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--log2", type=int, nargs="+", default=[10, 24, 28])
    args = parser.parse_args()
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, tally {tally.__version__}")
    print(f"{'n':>10} {'case':44} {'us':>10}")
    for k in args.log2:
        n = 1 << k
        x = torch.rand(n, device="cuda")
        a = read(x)
        rows = [
            ("tally.sum(x)", lambda: tally.sum(x)),
            ("read(x) alone", lambda: read(x)),
            ("_native.reduce(read(x).call)", lambda: _native.reduce(read(x).call, "sum", False, False, None)),
            ("_native.reduce(kept call)", lambda: _native.reduce(a.call, "sum", False, False, None)),
            ("library call in the extension, single", lambda: _native.time_reduce(a.call, "sum", 1)),
        ]
        for name, fn in rows:
            print(f"{n:>10} {name:44} {single(fn, args.reps):10.2f}")
        inside = statistics.median(_native.time_reduce(a.call, "sum", args.reps) for _ in range(5)) * 1e6
        print(f"{n:>10} {'library call in the extension, burst mean':44} {inside:10.2f}")
        sync_each = single(lambda: (tally.sum(x), torch.cuda.synchronize()), args.reps)
        print(f"{n:>10} {'tally.sum(x) + synchronize':44} {sync_each:10.2f}")
        print(f"{n:>10} {'torch.cuda.synchronize() alone':44} {single(torch.cuda.synchronize, args.reps):10.2f}")
        print(f"{n:>10} {'torch.sum(x).item()':44} {single(lambda: torch.sum(x).item(), args.reps):10.2f}")
        del x, a
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
