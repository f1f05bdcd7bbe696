# End-to-end time of a small reduction whose result the host reads (`.item()`), on the host
# clock, median of 2000 calls after 200: the peer of `tally bench reduce`'s "e2e us" column.
import statistics, time, torch
x = torch.rand(1 << 24, device="cuda") - 0.5
x64 = x.double()
def e2e(f, reps=2000):
    for _ in range(200): f()
    ts = []
    for _ in range(reps):
        a = time.perf_counter(); f(); ts.append(time.perf_counter() - a)
    return statistics.median(ts) * 1e6
for n in (1 << 10, 1 << 16, 1 << 20, 1 << 24):
    v, v64 = x[:n], x64[:n]
    print(f"torch e2e n={n:9d}  sum f32 {e2e(lambda: v.sum().item()):7.1f} us  sum f64 {e2e(lambda: v64.sum().item()):7.1f} us"
          f"  argmin f32 {e2e(lambda: v.argmin().item()):7.1f} us", flush=True)
