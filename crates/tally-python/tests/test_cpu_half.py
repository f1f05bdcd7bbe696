"""float16 (and bfloat16, where ml_dtypes gives numpy one) on the CPU backend against numpy:
reductions, scans into float32, histograms, selection and runs, with NaN, infinities, -0.0,
subnormals and the largest finite values among the inputs."""

import numpy as np
import pytest
from reference import run_lengths, unique_consecutive

import tally

SIZES = [0, 1, 7, 1000, 100_003]


def halves(n, seed=1):
    """Every finite float16 is as likely as any other; one in eight a special value."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint16)
    bits[(bits & 0x7C00) == 0x7C00] &= 0xFBFF  # infinities and NaN down one binade
    x = bits.view(np.float16)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504, -65504, 2.0**-24, -(2.0**-24)], np.float16)
    pick = rng.random(n) < 0.125
    x[pick] = rng.choice(special, size=int(pick.sum()))
    return x


def tame(n, seed=2):
    """Multiples of 1/8 in [-64, 64): float32 sums of them are exact in any order."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-512, 512, size=n) / 8).astype(np.float16)


@pytest.mark.parametrize("n", SIZES)
def test_reductions_equal_numpy(n):
    x = halves(n)
    wide = x.astype(np.float64)
    finite = wide[~np.isnan(wide)]
    if n:
        assert tally.min(x) == np.min(x) or np.isnan(np.min(x))
        assert tally.argmin(x) == np.argmin(x) and tally.argmax(x) == np.argmax(x)
        assert tally.max(x, skip_nan=True) == np.nanmax(x)
        assert tally.minmax(x, skip_nan=True) == (np.nanmin(x), np.nanmax(x))
    with np.errstate(invalid="ignore"):  # inf + -inf
        want = float(np.sum(finite))
    assert tally.sum(x, exact=True, skip_nan=True) == pytest.approx(want, rel=1e-12, nan_ok=True)
    if np.isnan(wide).any():
        assert np.isnan(tally.sum(x))


def test_sums_are_wider_than_float16():
    x = np.ones(2049, np.float16)
    assert tally.sum(x) == 2049.0  # 2049 is no float16
    assert tally.sum(np.array([65504, 65504, -65504], np.float16), exact=True) == 65504.0


@pytest.mark.parametrize("n", SIZES)
def test_scans_write_float32(n):
    x = tame(n)
    got = tally.cumsum(x)
    assert got.dtype == np.float32
    assert np.array_equal(got, np.cumsum(x, dtype=np.float32))
    y = halves(n)
    for op, ufunc in ((tally.cummin, np.fmin), (tally.cummax, np.fmax)):
        got = op(y)
        assert got.dtype == np.float32
        want = np.minimum.accumulate(y.astype(np.float32)) if op is tally.cummin else np.maximum.accumulate(
            y.astype(np.float32))
        assert np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("bins", [8, 37])
def test_histogram_equals_numpy(n, bins):
    x = halves(n)
    counts, edges = tally.histogram(x, bins=bins, range=(-4, 4))
    want, want_edges = np.histogram(x.astype(np.float64), bins=bins, range=(-4, 4))
    if bins == 8:  # edges exact: numpy and tally agree on every sample
        assert np.array_equal(counts, want)
    assert counts.sum() == np.sum((x >= -4) & (x <= 4))


@pytest.mark.parametrize("n", SIZES)
def test_select_and_runs_equal_numpy(n):
    x = halves(n)
    got = tally.select(x, "x > 0.1 || x == -0.0")
    assert got.dtype == np.float16
    with np.errstate(invalid="ignore"):
        want = x[(x > np.float16(0.1)) | (x == 0)]
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
    keys = np.repeat(tame(n, 3) // 8, 3)[:n]
    values, counts = tally.run_length_encode(keys)
    assert np.array_equal(values, unique_consecutive(keys)) and np.array_equal(counts, run_lengths(keys))
    k, sums = tally.reduce_by_key(keys, tame(n, 4), "sum")
    assert sums.dtype == np.float32 and np.array_equal(k, unique_consecutive(keys))
    starts = np.cumsum(np.concatenate([[0], run_lengths(keys)[:-1]])) if n else np.zeros(0, int)
    want = np.add.reduceat(tame(n, 4).astype(np.float32), starts) if n else np.zeros(0, np.float32)
    assert np.array_equal(sums, want)


def test_bfloat16_with_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = tame(10_001).astype(np.float32).astype(ml_dtypes.bfloat16)
    assert tally.sum(x, exact=True) == float(np.sum(x.astype(np.float64)))
    assert np.array_equal(tally.cumsum(x), np.cumsum(x.astype(np.float32)))
    got = tally.unique(x)
    assert got.dtype == x.dtype and np.array_equal(got.astype(np.float32), unique_consecutive(x.astype(np.float32)))
