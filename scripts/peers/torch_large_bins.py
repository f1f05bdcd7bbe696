"""PyTorch peers of tally's large-bin histograms, on the device, CUDA events (median of 10):
torch.bincount of 2^28 int64 values uniform over 1M and 16M bins, and of 2^28 f32 (x, y) pairs
in [0, 1)^2 into 1024 x 1024 bins (the keys x_bin * 1024 + y_bin computed by torch, then counted):
what a PyTorch user writes for tally's `bench hist` and `bench hist2d` rows."""
import statistics

import torch


def median_ms(f, reps=10):
    f()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


n = 1 << 28
g = torch.Generator(device="cuda").manual_seed(1)
for bins in (1 << 20, 1 << 24):
    x = torch.randint(0, bins, (n,), device="cuda", generator=g, dtype=torch.int64)
    print(f"torch.bincount i64 {bins} bins uniform n={n} {median_ms(lambda: torch.bincount(x, minlength=bins)):.4f} ms")
    del x
xy = torch.rand(n, 2, device="cuda", generator=g)


def hist2d():
    k = (xy[:, 0] * 1024).long() * 1024 + (xy[:, 1] * 1024).long()
    return torch.bincount(k, minlength=1 << 20)


print(f"torch keys+bincount 2-D 1024x1024 f32 pairs uniform n={n} {median_ms(hist2d):.4f} ms")
