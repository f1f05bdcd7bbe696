"""tally against numpy on the CPU backend: exact equality for integers and for float cases whose
answer is exactly defined (dyadic values and ranges, integer-valued floats)."""

import math

import numpy as np
import pytest

import tally

INTS = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64"]
FLOATS = ["float32", "float64"]
HIST_TYPES = ["uint8", "uint16", "int32", "uint32", "int64", "float32", "float64"]
SIZES = [0, 1, 7, 1000, 100_003]


def data(dtype, n, seed=1, lo=None, hi=None):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype) if dtype not in FLOATS else None
    if info is not None:
        lo = max(info.min, -1000) if lo is None else lo
        hi = min(info.max, 1000) if hi is None else hi
        return rng.integers(lo, hi, size=n, endpoint=True).astype(dtype)
    # Multiples of 1/8 in [-64, 64]: every sum and bin position below is exact.
    return (rng.integers(-512, 512, size=n) / 8).astype(dtype)


# Reductions -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("n", SIZES)
def test_reductions_equal_numpy(dtype, n):
    x = data(dtype, n)
    if x.dtype.kind in "iu":
        assert tally.sum(x) == int(x.astype(object).sum()) if n else tally.sum(x) == 0
    else:
        assert tally.sum(x) == float(x.astype(np.float64).sum())
        assert tally.sum(x, exact=True) == math.fsum(x.astype(np.float64))
    if n == 0:
        with pytest.raises(ValueError):
            tally.min(x)
        assert math.isnan(tally.mean(x))
        return
    assert tally.min(x) == x.min() and tally.max(x) == x.max()
    assert tally.minmax(x) == (x.min(), x.max())
    assert tally.argmin(x) == int(np.argmin(x)) and tally.argmax(x) == int(np.argmax(x))
    assert tally.mean(x, exact=True) == pytest.approx(float(np.mean(x.astype(np.float64))), rel=1e-15)
    for op, f in [(">", np.greater), ("<=", np.less_equal), ("==", np.equal), ("!=", np.not_equal)]:
        assert tally.count(x, op, 3) == int(np.count_nonzero(f(x, 3)))


def test_integer_sum_exceeds_64_bits():
    x = np.full(1000, np.iinfo(np.int64).max, dtype=np.int64)
    assert tally.sum(x) == 1000 * (2**63 - 1)
    u = np.full(5, np.iinfo(np.uint64).max, dtype=np.uint64)
    assert tally.sum(u) == 5 * (2**64 - 1)
    assert tally.max(u) == 2**64 - 1


def test_exact_sum_is_fsum():
    x = np.array([1e30, 1.0, -1e30, 1e-30] * 1000 + [3.5], dtype=np.float64)
    assert tally.sum(x, exact=True) == math.fsum(x)
    f = np.array([1e20, 1.0, -1e20, 0.1] * 999, dtype=np.float32)
    assert tally.sum(f, exact=True) == math.fsum(f.astype(np.float64))


def test_nan_rules():
    x = np.array([3.0, np.nan, -1.0, np.nan, 7.0])
    assert math.isnan(tally.sum(x)) and math.isnan(tally.min(x))
    assert tally.argmin(x) == int(np.argmin(x)) == 1
    assert tally.sum(x, skip_nan=True) == np.nansum(x)
    assert tally.min(x, skip_nan=True) == np.nanmin(x) and tally.max(x, skip_nan=True) == np.nanmax(x)
    assert tally.argmin(x, skip_nan=True) == np.nanargmin(x)
    assert tally.argmax(x, skip_nan=True) == np.nanargmax(x)
    assert tally.count(x, "!=", 3) == int(np.count_nonzero(x != 3))


def test_multidimensional_arrays_are_read_flat():
    x = data("int32", 60).reshape(3, 4, 5)
    assert tally.sum(x) == int(x.sum()) and tally.argmax(x) == int(np.argmax(x))
    np.testing.assert_array_equal(tally.cumsum(x), np.cumsum(x))


# Scans ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("n", SIZES)
def test_scans_equal_numpy(dtype, n):
    x = data(dtype, n)
    got = tally.cumsum(x)
    want = np.cumsum(x)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(tally.cummin(x), np.minimum.accumulate(x))
    np.testing.assert_array_equal(tally.cummax(x), np.maximum.accumulate(x))
    ex = tally.cumsum(x, exclusive=True)
    np.testing.assert_array_equal(ex, np.concatenate([[0], want[:-1]]).astype(want.dtype) if n else want)
    if n:
        lowest = np.finfo(dtype).min if dtype in FLOATS else np.iinfo(dtype).min
        top = -np.inf if dtype in FLOATS else lowest
        np.testing.assert_array_equal(tally.cummax(x, exclusive=True)[1:], np.maximum.accumulate(x)[:-1])
        assert tally.cummax(x, exclusive=True)[0] == top


@pytest.mark.parametrize("key_dtype", ["int32", "uint32", "int64", "uint64"])
def test_scan_by_key_restarts_at_each_key(key_dtype):
    rng = np.random.default_rng(5)
    keys = np.repeat(rng.integers(0, 5, size=300), rng.integers(1, 40, size=300)).astype(key_dtype)
    x = data("int32", keys.size)
    got = tally.cumsum(x, keys=keys)
    want = np.empty(x.size, dtype=np.int64)
    for i in range(x.size):
        want[i] = x[i] + (want[i - 1] if i and keys[i] == keys[i - 1] else 0)
    np.testing.assert_array_equal(got, want)


def test_scan_overflow_is_an_error():
    x = np.array([np.iinfo(np.int64).max, 1], dtype=np.int64)
    with pytest.raises(OverflowError):
        tally.cumsum(x)


# Histograms -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", HIST_TYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("bins", [1, 7, 64])
def test_histogram_equals_numpy(dtype, n, bins):
    lo = 0 if dtype.startswith("u") else None
    x = data(dtype, n, lo=lo)
    rng = (0, 64) if dtype in FLOATS else (int(x.min()) if n else 0, int(x.max()) if n else 1)
    if dtype in FLOATS:
        bins = 64 if bins == 7 else bins  # dyadic widths: numpy's edges are exact
    counts, edges = tally.histogram(x, bins=bins, range=rng)
    want, want_edges = np.histogram(x, bins=bins, range=rng)
    np.testing.assert_array_equal(counts, want)
    if dtype in FLOATS or bins in (1, 64):
        np.testing.assert_array_equal(edges, want_edges)
    h = tally.histogram(x, bins=bins, range=rng)
    assert h.below + h.above + h.nan + int(h.counts.sum()) == n


@pytest.mark.parametrize("dtype", HIST_TYPES)
def test_histogram_auto_range_equals_numpy(dtype):
    x = data(dtype, 5000, lo=0 if dtype.startswith("u") else None)
    for bins in (1, 10, 33) if dtype not in FLOATS else (1, 2, 4):
        counts, _ = tally.histogram(x, bins=bins)
        np.testing.assert_array_equal(counts, np.histogram(x, bins=bins)[0])


def test_histogram_outliers_and_closed_last_bin():
    x = np.array([-1.0, 0.0, 0.5, 1.0, 1.0, 2.0, np.nan, np.inf])
    h = tally.histogram(x, bins=2, range=(0, 1))
    np.testing.assert_array_equal(h.counts, [1, 3])  # numpy: the last bin includes 1.0
    assert (h.below, h.above, h.nan) == (1, 2, 1)
    half_open = tally.histogram(x, bins=2, range=(0, 1), closed_last=False)
    np.testing.assert_array_equal(half_open.counts, [1, 1])
    assert half_open.above == 4
    np.testing.assert_array_equal(h.counts, np.histogram(x[~np.isnan(x)], bins=2, range=(0, 1))[0])


@pytest.mark.parametrize("closed_last", [True, False])
def test_histogram_custom_edges(closed_last):
    x = data("int64", 10_000)
    edges = [-1000, -10, 0, 1, 5, 250, 1000]
    counts, got_edges = tally.histogram(x, bins=edges, closed_last=closed_last)
    want = np.histogram(x, bins=edges)[0]
    if not closed_last:
        want[-1] -= int(np.count_nonzero(x == 1000))
    np.testing.assert_array_equal(counts, want)
    np.testing.assert_array_equal(got_edges, edges)
    np.testing.assert_array_equal(tally.histogram(x, edges=np.array(edges, dtype=float)).counts,
                                  np.histogram(x, bins=edges)[0])


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_weighted_histogram_equals_numpy(dtype):
    x = data(dtype, 20_000)
    w = np.random.default_rng(2).integers(-8, 9, size=x.size).astype(np.float64) / 4  # exact sums
    rng = (-64, 64)
    for bins in (1, 16, 128):
        h = tally.histogram(x, bins=bins, range=rng, weights=w)
        np.testing.assert_array_equal(h.counts, np.histogram(x, bins=bins, range=rng, weights=w)[0])
    h = tally.histogram(x, bins=8, range=(0, 8), weights=w.astype(np.float32))
    np.testing.assert_array_equal(h.counts, np.histogram(x, bins=8, range=(0, 8), weights=w)[0])
    assert h.below == float(w[x < 0].sum()) and h.below_count == int(np.count_nonzero(x < 0))
    assert h.above == float(w[x > 8].sum()) and h.above_count == int(np.count_nonzero(x > 8))


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64"])
def test_bincount_equals_numpy(dtype):
    x = data(dtype, 30_000, lo=0, hi=200)
    np.testing.assert_array_equal(tally.bincount(x), np.bincount(x))
    np.testing.assert_array_equal(tally.bincount(x, minlength=500), np.bincount(x, minlength=500))
    w = (np.arange(x.size) % 7).astype(np.float64)
    np.testing.assert_array_equal(tally.bincount(x, weights=w), np.bincount(x, weights=w))
    assert tally.bincount(np.array([], dtype=dtype), minlength=3).tolist() == [0, 0, 0]


@pytest.mark.parametrize("minlength", [0, 1, 199, 200, 201, 1000])
def test_bincount_minlength_around_the_largest_value(minlength):
    """minlength above the largest value counts in one pass; at or below it, the largest value
    sets the length (a second pass): either way numpy's result, weighted too."""
    x = data("int32", 30_001, lo=0, hi=200)
    x[17] = 200  # the largest value, once
    w = (np.arange(x.size) % 5).astype(np.float64) - 1.5
    np.testing.assert_array_equal(tally.bincount(x, minlength=minlength),
                                  np.bincount(x, minlength=minlength))
    np.testing.assert_array_equal(tally.bincount(x, weights=w, minlength=minlength),
                                  np.bincount(x, weights=w, minlength=minlength))


def test_bincount_of_only_negative_values_is_an_error():
    for minlength in (0, 3):
        with pytest.raises(ValueError, match="2 negative"):
            tally.bincount(np.array([-3, -1], dtype=np.int32), minlength=minlength)


def test_bincount_rejects_negatives_and_floats():
    with pytest.raises(ValueError):
        tally.bincount(np.array([1, -1, 2], dtype=np.int32))
    for minlength in [0, 2, 5]:  # below, at and above the largest value
        with pytest.raises(ValueError, match="1 negative"):
            tally.bincount(np.array([1, -1, 4], dtype=np.int32), minlength=minlength)
        with pytest.raises(ValueError, match="1 negative"):
            tally.bincount(np.array([1, -1, 4], dtype=np.int32), weights=np.ones(3), minlength=minlength)
    with pytest.raises(TypeError):
        tally.bincount(np.array([1.0]))


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_histogram2d_equals_numpy(dtype):
    x, y = data(dtype, 20_000, seed=3), data(dtype, 20_000, seed=4)
    for bins, rng in [(16, ((-64, 64), (-64, 64))), ((8, 32), ((0, 64), (-32, 32))), (4, None)]:
        if rng is None and dtype in FLOATS:
            continue  # numpy's auto-range edges are not exact there
        h, xe, ye = tally.histogram2d(x, y, bins=bins, range=rng)
        wh, wxe, wye = np.histogram2d(x, y, bins=bins, range=rng)
        np.testing.assert_array_equal(h, wh)
        np.testing.assert_array_equal(xe, wxe)
    w = (np.arange(x.size) % 5).astype(np.float64)
    h = tally.histogram2d(x, y, bins=8, range=((-64, 64), (-64, 64)), weights=w)
    np.testing.assert_array_equal(h.counts, np.histogram2d(x, y, bins=8, range=((-64, 64), (-64, 64)), weights=w)[0])


# Images ---------------------------------------------------------------------------------------

def _mean_brightness(hwc):
    """The mean of the colour channels (alpha, the second of two or fourth of four, left out),
    summed left to right in float64, then divided once."""
    f = hwc.astype(np.float64)
    m = {1: 1, 2: 1, 3: 3, 4: 3}[f.shape[-1]]
    s = f[..., 0]
    for k in range(1, m):
        s = s + f[..., k]
    return s / m


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32", "float64"])
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_image_histogram_equals_numpy(dtype, channels):
    rng = np.random.default_rng(channels)
    shape = (37, 41, channels)
    if dtype == "uint8":
        img = rng.integers(0, 256, size=shape).astype(dtype)
    elif dtype == "uint16":
        img = rng.integers(0, 65536, size=shape).astype(dtype)
    else:
        img = (rng.integers(0, 4096, size=shape) / 4096).astype(dtype)  # multiples of 2^-12 in [0, 1)
    top = {"uint8": 256.0, "uint16": 65536.0}.get(dtype, 1.0)
    want, edges = np.histogram(_mean_brightness(img), bins=256, range=(0, top))
    h = tally.image_histogram(img, 256)
    np.testing.assert_array_equal(h.counts, want)
    np.testing.assert_array_equal(h.edges, edges)
    assert (h.below, h.above, h.nan) == (0, 0, 0)
    # The same pixels as planes, and a gray image as two dimensions.
    planes = np.ascontiguousarray(np.moveaxis(img, -1, 0))
    np.testing.assert_array_equal(tally.image_histogram(planes, 256, layout="chw").counts, want)
    if channels == 1:
        np.testing.assert_array_equal(tally.image_histogram(img[..., 0].copy(), 256).counts, want)
    # Weights, one per channel: products, then summed left to right.
    w = [0.5, 0.25, 0.125, 0.0][:channels]
    f = img.astype(np.float64)
    b = f[..., 0] * w[0]
    for k in range(1, channels):
        b = b + f[..., k] * w[k]
    want_w, _ = np.histogram(b, bins=64, range=(0, top))
    np.testing.assert_array_equal(tally.image_histogram(img, 64, brightness=w).counts, want_w)


def test_image_histogram_rec709_and_errors():
    img = np.array([[[0, 0, 40], [255, 255, 255]]], dtype=np.uint8)
    h = tally.image_histogram(img, 4, range=(0, 4), brightness="rec709")
    assert list(h.counts) == [0, 0, 1, 0] and h.above == 1  # 0.0722 * 40 = 2.888
    # Rec. 709 of a gray image is the gray value; edges as a list.
    gray = np.array([[7, 250]], dtype=np.uint8)
    assert list(tally.image_histogram(gray, [0, 8, 256], brightness="rec709").counts) == [1, 1]
    assert list(tally.image_histogram(np.stack([gray, gray], -1), [0, 8, 256], brightness="rec709").counts) == [1, 1]
    with pytest.raises(TypeError, match="at least two edges"):
        tally.image_histogram(img, [3.0])
    with pytest.raises(ValueError, match="layout"):
        tally.image_histogram(img, layout="whc")
    with pytest.raises(ValueError, match="1 to 4 channels"):
        tally.image_histogram(np.zeros((2, 2, 5), dtype=np.uint8))
    with pytest.raises(ValueError, match="one per channel"):
        tally.image_histogram(img, brightness=[1.0, 0.0])
    with pytest.raises(TypeError, match="int32"):
        tally.image_histogram(np.zeros((2, 2, 3), dtype=np.int32))
    with pytest.raises(ValueError, match="shape"):
        tally.image_histogram(np.zeros((1, 2, 2, 3), dtype=np.uint8))


# Errors ---------------------------------------------------------------------------------------

def test_errors_are_clear():
    x = np.arange(10, dtype=np.int32)
    with pytest.raises(ValueError, match="contiguous"):
        tally.sum(x[::2])
    with pytest.raises(TypeError, match="dtype"):
        tally.sum(np.arange(3, dtype=np.complex64))
    with pytest.raises(TypeError, match="int8"):
        tally.histogram(np.arange(3, dtype=np.int8))
    with pytest.raises(TypeError, match="native-endian"):
        tally.sum(np.arange(3, dtype=">i4"))
    with pytest.raises(ValueError, match="range"):
        tally.histogram(x, bins=4, range=(5, 4))
    with pytest.raises(ValueError):
        tally.histogram(x, bins=0)
    with pytest.raises(TypeError, match="bins"):
        tally.histogram(x, bins=2.5)
    with pytest.raises(ValueError, match="finite"):
        tally.histogram(x, bins=2, range=(0, np.inf))
    with pytest.raises(ValueError, match="strategy"):
        tally.histogram(x, strategy="nonsense")
    with pytest.raises(ValueError, match="comparison"):
        tally.count(x, "<>", 1)
    with pytest.raises(ValueError, match="backend"):
        tally.sum(x, backend="tpu")
    with pytest.raises(TypeError):
        tally.sum(object())
    with pytest.raises(ValueError, match="weights"):
        tally.histogram(x, weights=np.ones(3))


def test_lists_and_cpu_tensors_of_the_host():
    assert tally.sum([1, 2, 3]) == 6
    torch = pytest.importorskip("torch")
    t = torch.arange(10, dtype=torch.int32)
    out = tally.cumsum(t)
    assert isinstance(out, torch.Tensor) and out.tolist() == np.cumsum(np.arange(10)).tolist()


def test_cuda_backend_without_a_gpu_says_why():
    if tally.cuda_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="CUDA"):
        tally.sum(np.arange(4), backend="cuda")


def test_dlpack_capsules_are_read_as_dlpack_lays_them_out():
    from tally import _native

    a = np.arange(24, dtype=np.float32).reshape(4, 6)[1:]
    address, device_type, device_id, code, bits, lanes, shape, strides = _native.dlpack_info(a.__dlpack__())
    assert address == a.__array_interface__["data"][0]
    assert (device_type, device_id, code, bits, lanes) == (1, 0, 2, 32, 1)
    assert shape == [3, 6] and strides in (None, [6, 1])
    t = a[:, ::2]
    assert _native.dlpack_info(t.__dlpack__())[7] == [6, 2]
    with pytest.raises(TypeError):
        _native.dlpack_info(object())


def test_dlpack_producers_on_the_host():
    x = data("int64", 1000)

    class Producer:  # only the DLPack protocol
        def __dlpack__(self, stream=None):
            return x.__dlpack__()

        def __dlpack_device__(self):
            return x.__dlpack_device__()

    assert tally.sum(Producer()) == int(x.sum())
    np.testing.assert_array_equal(tally.cumsum(Producer()), np.cumsum(x))


def test_a_device_set_without_gpus_says_why():
    # No driver, no GPU or no NCCL: a RuntimeError that names what is missing, never a crash.
    if tally.cuda_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="CUDA|NCCL|libnccl|device"):
        tally.DeviceSet()
    with pytest.raises(ValueError, match="'all' or a list"):
        tally.DeviceSet("some")


def test_bench_data_is_the_rust_benches_data():
    """The benchmark's data for the comparison with the Rust bench: the generators' shapes."""
    from tally import _native

    def made(name, n, dtype):
        a = np.empty(n, dtype=dtype)
        _native.bench_data(name, n, (a.__array_interface__["data"][0], n, True))
        return a

    n = 10_007
    keys = made("keys i32/8", n, np.int32)
    assert (keys[: n // 8 * 8].reshape(-1, 8) == keys[: n // 8 * 8: 8, None]).all(), "runs of 8"
    assert 0 <= keys.min() and keys.max() < 100_000 and len(np.unique(keys)) > n // 16
    values = made("peer f32", n, np.float32)
    assert -0.5 <= values.min() and values.max() < 0.5 and abs(np.mean(values < 0) - 0.5) < 0.05
    for name in ("reduce f32", "scan f32"):
        x = made(name, n, np.float32)
        assert 0 <= x.min() and x.max() < 1 and (x * 2**24 == np.round(x * 2**24)).all()
    for name in ("reduce i32", "scan i32"):
        x = made(name, n, np.int32)
        assert -2**20 <= x.min() and x.max() < 2**20
    assert not np.array_equal(made("reduce f32", n, np.float32), made("scan f32", n, np.float32))
    h = made("hist i32", n, np.int32)
    assert 0 <= h.min() and h.max() < 256
    np.testing.assert_array_equal(made("hist f32", n, np.float32), h + 0.5)
    with pytest.raises(ValueError, match="no bench data"):
        made("nothing f32", 4, np.float32)
