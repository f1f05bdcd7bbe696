"""tally on a GPU, from PyTorch and CuPy: results equal numpy's on the copied-back data, outputs
are arrays of the caller's kind on the caller's device, written in place without a copy of the
input, on the caller's stream. Skips without a GPU; TALLY_REQUIRE_GPU=1 makes that a failure."""

import os

import numpy as np
import pytest

import tally

REQUIRE = os.environ.get("TALLY_REQUIRE_GPU") == "1"


def _gpu_reason():
    if not tally.cuda_available():
        try:
            tally.device_info()
        except RuntimeError as e:
            return str(e)
    return None


_reason = _gpu_reason()
if _reason is not None:
    if REQUIRE:
        raise RuntimeError(f"TALLY_REQUIRE_GPU=1 but tally has no GPU: {_reason}")
    pytest.skip(f"no GPU: {_reason}", allow_module_level=True)

torch = pytest.importorskip("torch") if not REQUIRE else __import__("torch")
if not torch.cuda.is_available():
    if REQUIRE:
        raise RuntimeError("TALLY_REQUIRE_GPU=1 but torch sees no GPU")
    pytest.skip("torch sees no GPU", allow_module_level=True)

DEV = torch.device("cuda", 0)
TORCH_TYPES = {
    "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "float32": torch.float32, "float64": torch.float64,
}
for _name in ("uint16", "uint32", "uint64"):
    if hasattr(torch, _name):
        TORCH_TYPES[_name] = getattr(torch, _name)
# A tile of the scan and reduction kernels is a few thousand elements: sizes around it, and a
# large one.
SIZES = [0, 1, 2, 1023, 4095, 4096, 4097, 65_537, 3_000_001]


def data(dtype, n, seed=1, lo=-1000, hi=1000):
    rng = np.random.default_rng(seed)
    if dtype.startswith("float"):
        return (rng.integers(-512, 512, size=n) / 8).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(lo, info.min), min(hi, info.max), size=n, endpoint=True).astype(dtype)


def on_gpu(a, offset=0):
    """``a`` as a CUDA tensor, starting ``offset`` elements into a larger allocation (a
    misaligned start for the kernels' vector loads)."""
    t = torch.from_numpy(np.concatenate([np.zeros(offset, a.dtype), a])).to(DEV)
    return t[offset:]


def back(t):
    assert isinstance(t, torch.Tensor) and t.device == DEV, (type(t), getattr(t, "device", None))
    return t.cpu().numpy()


@pytest.mark.parametrize("dtype", sorted(TORCH_TYPES))
@pytest.mark.parametrize("n", SIZES)
def test_reductions_equal_numpy(dtype, n):
    x = data(dtype, n)
    for offset in (0, 1, 3):
        t = on_gpu(x, offset)
        s = tally.sum(t)
        assert s == (int(x.astype(object).sum()) if x.dtype.kind in "iu" else float(x.astype(np.float64).sum()))
        if x.dtype.kind == "f":
            assert tally.sum(t, exact=True) == float(np.sum(x.astype(np.float64)))
        if n:
            assert tally.minmax(t) == (x.min(), x.max())
            assert tally.argmin(t) == int(np.argmin(x)) and tally.argmax(t) == int(np.argmax(x))
            assert tally.count(t, ">", 3) == int(np.count_nonzero(x > 3))


@pytest.mark.parametrize("dtype", sorted(TORCH_TYPES))
@pytest.mark.parametrize("n", SIZES)
def test_scans_equal_numpy_in_place(dtype, n):
    x = data(dtype, n)
    t = on_gpu(x, 1)
    got = tally.cumsum(t)
    np.testing.assert_array_equal(back(got), np.cumsum(x))
    np.testing.assert_array_equal(back(tally.cummax(t)), np.maximum.accumulate(x))
    np.testing.assert_array_equal(back(tally.cummin(t, exclusive=True))[1:], np.minimum.accumulate(x)[:-1])


def test_scan_writes_a_fresh_tensor_and_leaves_the_input():
    x = data("int32", 100_000)
    t = on_gpu(x)
    before = t.clone()
    torch.cuda.synchronize()
    allocated = torch.cuda.memory_allocated(DEV)
    out = tally.cumsum(t)
    # PyTorch's allocator holds the output and nothing else: the input was not copied.
    assert torch.cuda.memory_allocated(DEV) - allocated <= out.numel() * 8 + 512
    assert out.dtype == torch.int64 and out.device == DEV and out.data_ptr() != t.data_ptr()
    assert torch.equal(t, before)


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("n", [0, 1, 4097, 3_000_001])
def test_histograms_equal_numpy(dtype, n):
    x = data(dtype, n, lo=0)
    t = on_gpu(x, 3)
    rng = (0, 64) if dtype.startswith("float") else (0, 256)
    for bins in (1, 64, 256):
        h = tally.histogram(t, bins=bins, range=rng)
        np.testing.assert_array_equal(back(h.counts), np.histogram(x, bins=bins, range=rng)[0])
        assert h.below + h.above + h.nan + int(h.counts.sum()) == n
    if dtype in ("uint8", "int32", "int64"):
        np.testing.assert_array_equal(back(tally.bincount(t)), np.bincount(x) if n else np.zeros(0))
    for strategy in ("global-atomic", "block-shared", "warp-aggregated", "global-l2", "partition"):
        h = tally.histogram(t, bins=64, range=rng, strategy=strategy)
        np.testing.assert_array_equal(back(h.counts), np.histogram(x, bins=64, range=rng)[0])


def test_weighted_and_2d_equal_numpy():
    x, y = data("float32", 500_000, 3), data("float32", 500_000, 4)
    w = (np.arange(x.size) % 9 - 4).astype(np.float32)
    tx, ty, tw = on_gpu(x), on_gpu(y), on_gpu(w)
    h = tally.histogram(tx, bins=64, range=(-64, 64), weights=tw)
    np.testing.assert_array_equal(back(h.counts), np.histogram(x, bins=64, range=(-64, 64), weights=w)[0])
    np.testing.assert_array_equal(back(tally.bincount(on_gpu(data("int32", 9999, lo=0)), weights=on_gpu(w[:9999]))),
                                  np.bincount(data("int32", 9999, lo=0), weights=w[:9999]))
    m = tally.histogram2d(tx, ty, bins=32, range=((-64, 64), (-64, 64)))
    np.testing.assert_array_equal(back(m.counts), np.histogram2d(x, y, bins=32, range=((-64, 64), (-64, 64)))[0])


def test_runs_on_the_callers_stream():
    x = data("float32", 1 << 22)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = torch.from_numpy(x).to(DEV, non_blocking=False)
        # Queued on the side stream just before tally's call: tally must see the result.
        t.mul_(2)
        s = tally.sum(t, exact=True)
        c = tally.cumsum(t)
    assert s == float(np.sum(x.astype(np.float64) * 2))
    side.synchronize()
    np.testing.assert_array_equal(back(c), np.cumsum(x * 2))


def test_histogram_on_a_named_stream_other_than_the_current():
    """A histogram queued on a stream named by ``stream=`` while PyTorch's current stream is
    another, with the data's own range: the counts, widened on the call's stream and with the
    samples on the data's maximum moved into the closed last bin there, are complete in the
    named stream's order (an add on the current stream could run before the widening)."""
    x = data("int32", 1 << 20)
    t = torch.from_numpy(x).to(DEV)
    want = np.histogram(x, bins=100)[0]
    assert (x.min(), x.max()) == (-1000, 1000) and want[-1] > 0
    side = torch.cuda.Stream()
    for _ in range(20):
        h = tally.histogram(t, bins=100, stream=side.cuda_stream)
        assert h.above == 0
        side.synchronize()
        np.testing.assert_array_equal(back(h.counts), want)


def test_torch_dtypes_and_errors():
    t = torch.arange(10, device=DEV, dtype=torch.int32)
    with pytest.raises(ValueError, match="contiguous"):
        tally.sum(t[::2])
    with pytest.raises(ValueError, match="contiguous"):
        tally.cumsum(torch.zeros(4, 4, device=DEV).t())
    with pytest.raises(TypeError):
        tally.sum(torch.zeros(4, device=DEV, dtype=torch.complex64))
    with pytest.raises(TypeError):
        tally.histogram(torch.zeros(4, device=DEV, dtype=torch.int8))
    with pytest.raises(ValueError, match="CPU"):
        tally.sum(t, backend="cpu")
    with pytest.raises(ValueError):
        tally.min(torch.zeros(0, device=DEV))
    with pytest.raises(OverflowError):
        tally.cumsum(torch.tensor([2**62, 2**62], device=DEV, dtype=torch.int64))


def test_numpy_copied_to_the_gpu():
    x = data("int32", 100_000)
    assert tally.sum(x, backend="cuda") == int(x.sum())
    out = tally.cumsum(x, backend="cuda")
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, np.cumsum(x))


def test_dlpack_and_cuda_array_interface_objects():
    x = data("float64", 10_001)
    t = on_gpu(x)

    class Dl:  # only the DLPack protocol
        def __dlpack__(self, stream=None):
            return t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return t.__dlpack_device__()

    assert tally.sum(Dl(), exact=True) == float(np.sum(x))

    class Cai:  # only the CUDA array interface
        __cuda_array_interface__ = t.__cuda_array_interface__

    np.testing.assert_array_equal(np.asarray(back_any(tally.cumsum(Cai()))), np.cumsum(x))


def back_any(a):
    if isinstance(a, torch.Tensor):
        return a.cpu().numpy()
    return a.get()


def test_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    x = data("int32", 300_000)
    c = cupy.asarray(x)
    assert tally.sum(c) == int(x.sum())
    out = tally.cumsum(c)
    assert isinstance(out, cupy.ndarray)
    np.testing.assert_array_equal(out.get(), np.cumsum(x))
    h = tally.histogram(c, bins=16, range=(-1000, 1000))
    assert isinstance(h.counts, cupy.ndarray)
    np.testing.assert_array_equal(h.counts.get(), np.histogram(x, bins=16, range=(-1000, 1000))[0])
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        c2 = c * 3
        assert tally.sum(c2) == int(x.sum()) * 3
    with pytest.raises(ValueError, match="contiguous"):
        tally.sum(c[::3])


def test_streams_destroyed_after_their_calls():
    """Calls on short-lived streams (CuPy destroys a Stream when the object goes), then enough
    calls of other lengths that tally's kept plans (64) are cleared: nothing tally keeps may be
    freed on a destroyed stream. Plans made on a caller's stream crashed the process here once;
    calls on a side stream now run on tally's own stream, ordered with the caller's."""
    cupy = pytest.importorskip("cupy")
    x = data("int32", 70_001)
    c = cupy.asarray(x)
    for k in range(80):
        n = 1000 + k  # a new length, so a new plan, each time
        s = cupy.cuda.Stream(non_blocking=True)
        with s:
            c2 = c[:n] * 3  # queued on s just before tally's calls, which must see it
            out = tally.cumsum(c2)
            assert tally.sum(c2) == int(x[:n].sum()) * 3
        s.synchronize()
        np.testing.assert_array_equal(out.get(), np.cumsum(x[:n].astype(np.int64) * 3))
        del s, c2, out
    for k in range(80):
        assert tally.sum(c[: 2000 + k]) == int(x[: 2000 + k].sum())
        assert int(tally.cumsum(c[: 3000 + k])[-1]) == int(x[: 3000 + k].sum())


# Selection and runs ---------------------------------------------------------------------------

from reference import SUM_TYPES, reduce_by_key, run_lengths, unique_consecutive  # noqa: E402


def poison_allocator(nbytes):
    """Leaves a block of ``nbytes`` of 0xFF bytes in PyTorch's cache, which the next output of
    that size is likely to get: elements a kernel leaves unwritten then show."""
    block = torch.full((max(nbytes, 1),), 255, dtype=torch.uint8, device=DEV)
    del block


def with_nans(x, seed=7):
    if x.dtype.kind == "f" and x.size:
        x = x.copy()
        x[np.random.default_rng(seed).random(x.size) < 0.02] = np.nan
    return x


def keys_in_runs(dtype, n, seed=2):
    rng = np.random.default_rng(seed)
    return np.repeat(data(dtype, n, seed, lo=0, hi=5), rng.integers(1, 13, size=n))[:n]


@pytest.mark.parametrize("dtype", sorted(TORCH_TYPES))
@pytest.mark.parametrize("n", SIZES)
def test_select_equals_masked_select(dtype, n):
    x = with_nans(data(dtype, n, lo=0, hi=100))
    with np.errstate(invalid="ignore"):
        mask = x > 50
    for offset in (0, 1, 3):
        t = on_gpu(x, offset)
        poison_allocator(n * x.itemsize)
        got = tally.select(t, "x > 50")
        np.testing.assert_array_equal(back(got), x[mask])
        tm = torch.from_numpy(mask).to(DEV)
        np.testing.assert_array_equal(back(tally.select(t, tm)), x[mask])
    t = on_gpu(x, 1)
    values, indices = tally.select(t, "x > 50", return_indices=True)
    np.testing.assert_array_equal(back(values), x[mask])
    assert indices.dtype == torch.int64
    np.testing.assert_array_equal(back(indices), np.flatnonzero(mask))
    np.testing.assert_array_equal(back(tally.nonzero(t)), np.flatnonzero(x))
    assert tally.count_if(t, "x > 50") == int(mask.sum())
    parted, kept = tally.partition(t, "x > 50")
    assert kept == int(mask.sum())
    np.testing.assert_array_equal(back(parted), np.concatenate([x[mask], x[~mask]]))


@pytest.mark.parametrize("dtype", sorted(TORCH_TYPES))
@pytest.mark.parametrize("n", SIZES)
def test_unique_and_run_length_encode_equal_unique_consecutive(dtype, n):
    keys = with_nans(keys_in_runs(dtype, n))
    for offset in (0, 2):
        t = on_gpu(keys, offset)
        poison_allocator(n * keys.itemsize)
        np.testing.assert_array_equal(back(tally.unique(t)), unique_consecutive(keys))
        values, counts = tally.run_length_encode(t)
        np.testing.assert_array_equal(back(values), unique_consecutive(keys))
        np.testing.assert_array_equal(back(counts), run_lengths(keys))
        assert counts.dtype == torch.int64
    if dtype in ("int32", "int64") and n:
        v, c = torch.unique_consecutive(on_gpu(keys), return_counts=True)
        values, counts = tally.unique(on_gpu(keys), return_counts=True)
        assert torch.equal(values, v) and torch.equal(counts, c)


@pytest.mark.parametrize("value_dtype", sorted(TORCH_TYPES))
@pytest.mark.parametrize("n", [0, 1, 4095, 4097, 65_537, 3_000_001])
@pytest.mark.parametrize("op", ["sum", "min", "max"])
def test_reduce_by_key_equals_the_sequential_reference(value_dtype, n, op):
    keys = keys_in_runs("int32", n)
    values = with_nans(data(value_dtype, n, seed=3, lo=-50, hi=50))
    got_keys, got = tally.reduce_by_key(on_gpu(keys, 1), on_gpu(values, 3), op)
    want_keys, want = reduce_by_key(keys, values, op)
    assert got.dtype == TORCH_TYPES.get(str(want.dtype), got.dtype)
    np.testing.assert_array_equal(back(got_keys), want_keys)
    np.testing.assert_array_equal(back(got), want)


@pytest.mark.parametrize("key_dtype", sorted(TORCH_TYPES))
def test_reduce_by_key_every_key_type(key_dtype):
    keys = keys_in_runs(key_dtype, 200_003)
    values = data("float64", keys.size, seed=4)
    got_keys, got = tally.reduce_by_key(on_gpu(keys), on_gpu(values), "sum")
    want_keys, want = reduce_by_key(keys, values, "sum")
    np.testing.assert_array_equal(back(got_keys), want_keys)
    np.testing.assert_array_equal(back(got), want)


def test_selection_errors_on_the_gpu():
    t = torch.arange(10, device=DEV, dtype=torch.int32)
    with pytest.raises(ValueError):
        tally.select(t, torch.ones(9, dtype=torch.bool, device=DEV))
    with pytest.raises(ValueError):
        tally.select(t, torch.ones(10, dtype=torch.bool))  # the mask on the host
    with pytest.raises(OverflowError):
        tally.reduce_by_key(torch.zeros(2, dtype=torch.int32, device=DEV),
                            torch.full((2,), 2**62, dtype=torch.int64, device=DEV) * 2 - 1)


# Histograms on the device, kept plans, weights -------------------------------------------------

def test_histogram_counts_stay_on_the_device_and_plans_are_kept():
    rng = (0, 256)
    for seed in (1, 2, 3):  # one length: the second and third calls launch the kept plan
        x = data("uint8", 1 << 20, seed=seed, lo=0, hi=200 + seed)
        t = on_gpu(x, 1)
        poison_allocator(256 * 8)
        h = tally.histogram(t, bins=256, range=rng)
        assert isinstance(h.counts, torch.Tensor) and h.counts.device == DEV and h.counts.dtype == torch.int64
        np.testing.assert_array_equal(back(h.counts), np.histogram(x, bins=256, range=rng)[0])
        np.testing.assert_array_equal(back(tally.bincount(t)), np.bincount(x))
        # The edges of even bins are kept on the device: each call gets its own copy.
        np.testing.assert_array_equal(back(h.edges), np.histogram(x, bins=256, range=rng)[1])
        h.edges.fill_(-1)
    # The last bin includes its upper edge, on the device as on the host.
    x = np.array([0, 255, 255, 256, 300], dtype=np.int32)
    h = tally.histogram(on_gpu(x), bins=4, range=(0, 256))
    np.testing.assert_array_equal(back(h.counts), np.histogram(x, bins=4, range=(0, 256))[0])
    assert h.above == 1


def test_a_queued_histogram_finishes_once_into_int64_counts():
    from tally import _native
    from tally._arrays import empty, read

    x = data("int32", 100_003, lo=-5, hi=70)
    a = read(on_gpu(x, 3))
    pending = _native.histogram_start(a.call, (64, 0.0, 64.0), "auto")
    counts, parts = empty(a, 64, "int64")
    counts.fill_(-1)
    below, above, nan, _ = _native.histogram_finish(a.call, pending, parts)
    # The extension's bins are half-open: 64 counts as above (the Python layer closes the last).
    want = np.histogram(x[x < 64], bins=64, range=(0, 64))[0]
    np.testing.assert_array_equal(back(counts), want)
    assert (below, above, nan) == (int((x < 0).sum()), int((x >= 64).sum()), 0)
    with pytest.raises(ValueError, match="already finished"):
        _native.histogram_finish(a.call, pending, parts)
    short, short_parts = empty(a, 63, "int64")
    with pytest.raises(ValueError):
        _native.histogram_finish(a.call, _native.histogram_start(a.call, (64, 0.0, 64.0), "auto"), short_parts)


def test_kept_selection_and_run_plans_follow_the_predicate_and_types():
    """Plans are kept per element type, mode, predicate and length: alternating calls of one
    length with different predicates, modes and types each get their own results."""
    x = data("float32", 70_001)
    t = on_gpu(x)
    for _ in range(2):
        for where, mask in (("x > 0", x > 0), ("x > 10", x > 10), ("x < -3 || x == 1", (x < -3) | (x == 1))):
            np.testing.assert_array_equal(back(tally.select(t, where)), x[mask])
            np.testing.assert_array_equal(back(tally.nonzero(t, where)), np.flatnonzero(mask))
            values, kept = tally.partition(t, where)
            assert kept == int(mask.sum())
            np.testing.assert_array_equal(back(values), np.concatenate([x[mask], x[~mask]]))
        np.testing.assert_array_equal(back(tally.select(t, torch.from_numpy(x > 2).to(DEV))), x[x > 2])
        k32 = np.repeat(np.arange(9_000, dtype=np.int32) % 7, 7)
        for keys in (k32, k32.astype(np.int64)):
            u, c = tally.run_length_encode(on_gpu(keys))
            change = np.flatnonzero(np.diff(keys)) + 1
            starts = np.concatenate([[0], change])
            np.testing.assert_array_equal(back(u), keys[starts])
            np.testing.assert_array_equal(back(c), np.diff(np.concatenate([starts, [keys.size]])))
            np.testing.assert_array_equal(back(tally.unique(on_gpu(keys))), keys[starts])
            for op, ufunc in (("sum", np.add), ("max", np.maximum)):
                vals = np.arange(keys.size, dtype=np.int32) % 11 - 5
                rk, rv = tally.reduce_by_key(on_gpu(keys), on_gpu(vals), op)
                np.testing.assert_array_equal(back(rk), keys[starts])
                np.testing.assert_array_equal(back(rv), ufunc.reduceat(vals.astype(np.int64), starts))


def test_weighted_bincount_scale_on_the_device():
    x = data("int32", 1 << 20, lo=0, hi=1000)
    w = (np.arange(x.size) % 17 - 8).astype(np.float64) / 4
    got = tally.bincount(on_gpu(x), weights=on_gpu(w))
    np.testing.assert_array_equal(back(got), np.bincount(x, weights=w))
    for bad in (np.nan, np.inf, -np.inf):
        wb = w.copy()
        wb[12345] = bad
        with pytest.raises(ValueError, match="12345"):
            tally.bincount(on_gpu(x), weights=on_gpu(wb))


def test_counts_past_2_to_the_31_are_widened_unsigned():
    n = 2**31 + 5
    t = torch.zeros(n, dtype=torch.uint8, device=DEV)
    t[:3] = 7
    h = tally.histogram(t, bins=8, range=(0, 8))
    assert back(h.counts).tolist() == [n - 3, 0, 0, 0, 0, 0, 0, 3]
    del t
    torch.cuda.empty_cache()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_16_bit_floats_from_torch_in_place(dtype, n, offset):
    """torch.float16/bfloat16 read in place (misaligned starts too): results equal numpy's on
    the float32 values; scans and reduce-by-key write float32, selections keep the type."""
    x32 = data("float32", n)  # multiples of 1/8 in [-64, 64): exact in float16, not in bfloat16
    base = torch.from_numpy(np.concatenate([np.zeros(offset, np.float32), x32])).to(DEV).to(dtype)
    t = base[offset:]
    # The values the tensor holds (bfloat16 keeps 8 significant bits: 32.625 becomes 32.5); every
    # partial sum of them is still exact in float32, so numpy's sequential results are the truth.
    x32 = t.float().cpu().numpy()
    assert tally.sum(t) == float(np.sum(x32, dtype=np.float64))
    assert tally.sum(t, exact=True) == float(np.sum(x32, dtype=np.float64))
    if n:
        assert (tally.min(t), tally.argmax(t)) == (float(x32.min()), int(np.argmax(x32)))
    c = tally.cumsum(t)
    assert c.dtype == torch.float32 and c.device == t.device
    assert np.array_equal(c.cpu().numpy(), np.cumsum(x32, dtype=np.float32))
    assert np.array_equal(tally.cummax(t).cpu().numpy(), np.maximum.accumulate(x32))
    counts, _ = tally.histogram(t, bins=16, range=(-64, 64))
    assert np.array_equal(counts.cpu().numpy(), np.histogram(x32, bins=16, range=(-64, 64))[0])
    s = tally.select(t, "x > 0.5")
    assert s.dtype == dtype and np.array_equal(s.float().cpu().numpy(), x32[x32 > 0.5])
    u = tally.unique(t)
    assert u.dtype == dtype and np.array_equal(u.float().cpu().numpy(), unique_consecutive(x32))


# Device sets ---------------------------------------------------------------------------------
# Two GPUs, combined through NCCL. Skipped with fewer (TALLY_REQUIRE_GPU=2 makes that a failure).

def _two_gpu_set():
    need = os.environ.get("TALLY_REQUIRE_GPU") == "2"
    if torch.cuda.device_count() < 2:
        if need:
            raise RuntimeError("TALLY_REQUIRE_GPU=2 but fewer than two GPUs")
        pytest.skip("fewer than two GPUs")
    try:
        return tally.DeviceSet([0, 1])
    except RuntimeError as e:
        if need:
            raise
        pytest.skip(f"no device set: {e}")


@pytest.mark.parametrize("n", [0, 1, 4097, 3_000_001])
def test_device_set_equals_one_gpu_and_numpy(n):
    s = _two_gpu_set()
    assert s.devices == [0, 1] and s.world_size == 2
    ints = data("int32", n, seed=n + 3)
    floats = data("float64", n, seed=n + 4) * 1e6 + 0.1
    counts, edges = s.histogram(ints, bins=100, range=(-1000, 1000))
    want, want_edges = np.histogram(ints, bins=100, range=(-1000, 1000))
    assert counts.tolist() == want.tolist() and np.array_equal(edges, want_edges)
    assert s.sum(ints) == int(ints.astype(np.int64).sum())
    assert s.sum(floats, exact=True) == tally.sum(floats, exact=True, backend="cuda")
    assert s.count(ints, ">", 10) == int((ints > 10).sum())
    if n:
        assert s.argmax(ints) == int(np.argmax(ints)) and s.argmin(ints) == int(np.argmin(ints))
        assert s.min(ints) == int(ints.min()) and s.max(ints) == int(ints.max())
        # Without a range: the data's, the maximum in the last bin, as numpy.
        c, _ = s.histogram(ints, bins=7)
        assert c.tolist() == np.histogram(ints, bins=7)[0].tolist()
    run = s.cumsum(ints)
    assert run.dtype == np.int64 and np.array_equal(run, np.cumsum(ints, dtype=np.int64))
    excl = s.cumsum(ints, exclusive=True)
    assert np.array_equal(excl, np.cumsum(ints, dtype=np.int64) - ints)
    kept = s.select(ints, "x > 500")
    assert kept.dtype == np.int32 and np.array_equal(kept, ints[ints > 500])


def test_device_set_reads_device_shards_in_place():
    s = _two_gpu_set()
    a = data("float32", 1_000_003, seed=11)
    b = data("float32", 7, seed=12)
    # The first shard misaligned for vector loads, the second short; torch on GPU 0, CuPy on 1.
    t0 = torch.from_numpy(np.concatenate([np.zeros(1, a.dtype), a])).to("cuda:0")[1:]
    cupy = pytest.importorskip("cupy")
    with cupy.cuda.Device(1):
        c1 = cupy.asarray(b)
    whole = np.concatenate([a, b])
    assert s.sum([t0, c1], exact=True) == tally.sum(whole, exact=True)
    assert s.argmax([t0, c1]) == int(np.argmax(whole))
    # Eighths below 64 in magnitude: every running sum here is exact in float32, in any order.
    assert np.array_equal(s.cumsum([t0, c1]), np.cumsum(whole.astype(np.float64)).astype(np.float32))
    assert np.array_equal(s.select([t0, c1], "x < -60"), whole[whole < -60])
    counts, _ = s.histogram([t0, c1], bins=64, range=(-64, 64))
    assert counts.tolist() == np.histogram(whole, bins=64, range=(-64, 64))[0].tolist()
    # A host shard beside a device one, and an empty shard.
    assert s.sum([a, torch.empty(0, dtype=torch.float32, device="cuda:1")], exact=True) == tally.sum(a, exact=True)
    # Shards on the wrong devices, or the wrong count of them, are refused before anything runs.
    with pytest.raises(ValueError, match="GPU 0, but rank 1"):
        s.sum([t0, t0])
    with pytest.raises(ValueError, match="one per device"):
        s.sum([a])
    with pytest.raises(ValueError, match="cannot be split"):
        s.sum(t0)
    with pytest.raises(TypeError, match="one dtype"):
        s.sum([a, b.astype(np.float64)])


def test_device_set_keeps_plans_for_resident_shards():
    # Every GPU of this host in one set (one GPU too: a set of one). Shards resident on their
    # devices keep the set's plans between calls of the same shape: new data each round must
    # give new results (a kept plan that read old data or counters would fail), calls of other
    # options keep plans of their own, and new lengths make new plans. Host shards, and
    # histograms whose range comes from the data, keep none.
    if torch.cuda.device_count() < 1:
        pytest.skip("no GPU")
    devices = list(range(min(torch.cuda.device_count(), 2)))
    try:
        s = tally.DeviceSet(devices)
    except RuntimeError as e:
        if os.environ.get("TALLY_REQUIRE_GPU"):
            raise
        pytest.skip(f"no device set: {e}")
    assert s._set.kept_plans() == (0, 0)
    lengths = [1_000_003, 4097][: len(devices)]
    for round in range(5):
        if round == 3:
            lengths = [n + 5 for n in lengths]
        host = [data("int32", n, seed=100 * round + i) for i, n in enumerate(lengths)]
        shards = [torch.from_numpy(h).to(f"cuda:{d}") for h, d in zip(host, devices)]
        whole = np.concatenate(host)
        before = s._set.kept_plans()
        # Two ranges, two thresholds, two reductions: a plan each, none answering for another.
        # (1000 is in the data: each histogram also counts the samples at its upper edge.)
        for bins, hi in [(100, 1000), (64, 1000.5)]:
            counts, _ = s.histogram(shards, bins=bins, range=(-1000, hi))
            want = np.histogram(whole, bins=bins, range=(-1000, hi))[0]
            assert counts.tolist() == want.tolist(), (round, bins)
        assert s.sum(shards) == int(whole.astype(np.int64).sum()), round
        assert s.argmax(shards) == int(np.argmax(whole)), round
        assert s.count(shards, ">", 10) == int((whole > 10).sum()), round
        assert s.count(shards, ">", 500) == int((whole > 500).sum()), round
        kept, reused = s._set.kept_plans()
        # The histograms (one counting 1000 at its edge), the sum, argmax and two counts.
        made = 7
        if round in (0, 3):
            assert (kept, reused) == (before[0] + made, before[1]), (round, kept, reused)
        else:
            assert (kept, reused) == (before[0], before[1] + made), (round, kept, reused)
    # Host shards: the same result, no plan kept. A range from the data: the minmax that finds
    # it keeps a plan, the histogram none.
    before = s._set.kept_plans()[0]
    assert s.sum(host) == int(whole.astype(np.int64).sum())
    assert s._set.kept_plans()[0] == before
    counts, _ = s.histogram(shards, bins=7)
    assert counts.tolist() == np.histogram(whole, bins=7)[0].tolist()
    assert s._set.kept_plans()[0] == before + 1


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_image_histogram_of_torch_images(dtype):
    # A (height, width, 3) tensor on the GPU and its (3, height, width) planes: the counts equal
    # those of the same image on the CPU backend, as tensors on the image's device.
    rng = np.random.default_rng(9)
    if dtype == "uint8":
        host = rng.integers(0, 256, size=(300, 301, 3)).astype(np.uint8)
    else:
        host = (rng.integers(0, 4096, size=(300, 301, 3)) / 4096).astype(np.float32)
    image = torch.from_numpy(host).to(DEV)
    for brightness in ["mean", "rec709", [0.5, 0.25, 0.25]]:
        want = tally.image_histogram(host, 256, brightness=brightness)
        got = tally.image_histogram(image, 256, brightness=brightness)
        assert got.counts.device == image.device
        np.testing.assert_array_equal(got.counts.cpu().numpy(), want.counts)
        planes = image.permute(2, 0, 1).contiguous()
        chw = tally.image_histogram(planes, 256, layout="chw", brightness=brightness)
        np.testing.assert_array_equal(chw.counts.cpu().numpy(), want.counts)
