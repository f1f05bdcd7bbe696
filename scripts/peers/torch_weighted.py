#!/usr/bin/env python3
"""PyTorch's weighted bincount on the GPU, on the distributions of `tally bench weighted`.

torch.bincount(x, weights=w, minlength=bins) with int64 bins and f32 weights (what PyTorch's
weighted bincount takes), 2^28 samples by default; CUDA events around each call, median of the
repetitions. Each case also runs twice more on the same input and reports whether the two
results are bitwise identical (float atomics: usually not).

The data follows tally's shape, not its bits: uniform over the bins, or 90% in bin 0 and the
rest uniform (hot90); weights uniform in [0, 1). GB/s counts the bytes tally reads for the same
histogram (f32 samples + f32 weights = 8 bytes per sample); torch reads int64 bins, so its own
bytes per sample are 12.
  usage: python3 scripts/peers/torch_weighted.py [--size N] [--bins B] [--reps R]
"""
import argparse
import statistics

import torch


def make(dist, bins, n, gen):
    x = torch.randint(0, bins, (n,), device="cuda", generator=gen)
    if dist == "hot90":
        hot = torch.rand(n, device="cuda", generator=gen) < 0.9
        x = torch.where(hot, torch.zeros_like(x), x)
    w = torch.rand(n, device="cuda", generator=gen, dtype=torch.float32)
    return x, w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1 << 28)
    ap.add_argument("--bins", type=int, default=256)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0x7A11)
    print(f"# device: {torch.cuda.get_device_name()}, torch {torch.__version__}, {a.size} samples, {a.bins} bins")
    print(f"{'case':<28} {'ms':>9} {'GB/s':>8} {'bitwise repeatable':>19}")
    for dist in ["uniform", "hot90"]:
        x, w = make(dist, a.bins, a.size, gen)
        torch.bincount(x, weights=w, minlength=a.bins)  # warm-up
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(a.reps):
            start.record()
            torch.bincount(x, weights=w, minlength=a.bins)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        ms = statistics.median(times)
        r1 = torch.bincount(x, weights=w, minlength=a.bins)
        r2 = torch.bincount(x, weights=w, minlength=a.bins)
        torch.cuda.synchronize()
        same = torch.equal(r1.view(torch.int64) if r1.dtype == torch.float64 else r1.view(torch.int32),
                           r2.view(torch.int64) if r2.dtype == torch.float64 else r2.view(torch.int32))
        gbs = a.size * 8 / (ms * 1e6)
        print(f"bincount weights {dist:<11} {ms:9.4f} {gbs:8.1f} {'yes' if same else 'NO':>19}  (result {r1.dtype})")
        del x, w, r1, r2
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
