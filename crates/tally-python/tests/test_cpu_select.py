"""Selection and runs against numpy on the CPU backend: exact equality (the order of the
elements included), every dtype, empty input, NaN."""

import numpy as np
import pytest
from reference import SUM_TYPES, reduce_by_key, run_lengths, unique_consecutive

import tally

INTS = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64"]
FLOATS = ["float32", "float64"]
SIZES = [0, 1, 7, 1000, 100_003]


def data(dtype, n, seed=1, spread=50):
    """Values in a small range (so that runs and selections are neither all nor none), NaNs
    among the floats, and float values that are multiples of 1/8 (exact sums)."""
    rng = np.random.default_rng(seed)
    if dtype in FLOATS:
        x = (rng.integers(-spread * 8, spread * 8, size=n) / 8).astype(dtype)
        x[rng.random(n) < 0.02] = np.nan
        return x
    lo = 0 if dtype.startswith("u") else -spread
    return rng.integers(lo, lo + 2 * spread, size=n, endpoint=True).astype(dtype)


def runs_of(dtype, n, seed=2):
    """Keys in runs of 1 to 12 equal values."""
    rng = np.random.default_rng(seed)
    values = data(dtype, n, seed, spread=3)
    return np.repeat(values, rng.integers(1, 13, size=n))[:n]


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("n", SIZES)
def test_select_equals_boolean_indexing(dtype, n):
    x = data(dtype, n)
    got = tally.select(x, "x > 3")
    assert got.dtype == x.dtype
    with np.errstate(invalid="ignore"):
        mask = x > 3
    np.testing.assert_array_equal(got, x[mask])
    np.testing.assert_array_equal(tally.select(x, mask), x[mask])
    np.testing.assert_array_equal(tally.select(x, list(mask)), x[mask])
    values, indices = tally.select(x, "x > 3", return_indices=True)
    np.testing.assert_array_equal(values, x[mask])
    np.testing.assert_array_equal(indices, np.flatnonzero(mask))
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(tally.select(x, mask, return_indices=True)[1], np.flatnonzero(mask))
    # NaN != 0: the NaNs are kept, in place.
    np.testing.assert_array_equal(tally.select(x, "x != 0"), x[x != 0])
    np.testing.assert_array_equal(tally.nonzero(x), np.flatnonzero(x))
    np.testing.assert_array_equal(tally.nonzero(mask), np.flatnonzero(mask))
    assert tally.count_if(x, "x > 3") == int(np.count_nonzero(mask))
    parted, kept = tally.partition(x, "x > 3")
    assert kept == int(mask.sum())
    np.testing.assert_array_equal(parted, np.concatenate([x[mask], x[~mask]]))


def test_select_errors():
    x = np.arange(10, dtype=np.int32)
    with pytest.raises(ValueError):
        tally.select(x, "x >")  # not a predicate
    with pytest.raises(ValueError):
        tally.select(x, np.ones(9, dtype=bool))  # one flag per element
    with pytest.raises(TypeError):
        tally.select(x, np.ones(10, dtype=np.float32))  # a mask is boolean
    with pytest.raises(ValueError):
        tally.select(x[::2], "x > 0")  # strided
    with pytest.raises(TypeError):
        tally.select(x.astype(np.complex64), "x > 0")


@pytest.mark.parametrize("dtype", INTS + FLOATS)
@pytest.mark.parametrize("n", SIZES)
def test_unique_and_run_length_encode_equal_the_sequential_reference(dtype, n):
    keys = runs_of(dtype, n)
    got = tally.unique(keys)
    assert got.dtype == keys.dtype
    np.testing.assert_array_equal(got, unique_consecutive(keys))
    values, counts = tally.run_length_encode(keys)
    np.testing.assert_array_equal(values, unique_consecutive(keys))
    np.testing.assert_array_equal(counts, run_lengths(keys))
    assert counts.dtype == np.int64 and int(counts.sum()) == n
    v2, c2 = tally.unique(keys, return_counts=True)
    np.testing.assert_array_equal(v2, values)
    np.testing.assert_array_equal(c2, counts)


@pytest.mark.parametrize("value_dtype", INTS + FLOATS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("op", ["sum", "min", "max"])
def test_reduce_by_key_equals_the_sequential_reference(value_dtype, n, op):
    keys = runs_of("int32", n)
    values = data(value_dtype, n, seed=3)
    got_keys, got = tally.reduce_by_key(keys, values, op)
    want_keys, want = reduce_by_key(keys, values, op)
    assert got.dtype == want.dtype == np.dtype(SUM_TYPES[value_dtype] if op == "sum" else value_dtype)
    np.testing.assert_array_equal(got_keys, want_keys)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("key_dtype", INTS + FLOATS)
def test_reduce_by_key_every_key_type_and_count(key_dtype):
    keys = runs_of(key_dtype, 5000)
    values = data("float64", 5000, seed=4)
    got_keys, got = tally.reduce_by_key(keys, values, "sum")
    want_keys, want = reduce_by_key(keys, values, "sum")
    np.testing.assert_array_equal(got_keys, want_keys)
    np.testing.assert_array_equal(got, want)
    count_keys, counts = tally.reduce_by_key(keys, values, "count")
    np.testing.assert_array_equal(count_keys, want_keys)
    np.testing.assert_array_equal(counts, run_lengths(keys))


def test_reduce_by_key_rules():
    # NaN keys are runs of their own; -0.0 joins a run of 0.0 and the run keeps its first key.
    keys = np.array([np.nan, np.nan, -0.0, 0.0, 1.0, 1.0])
    values = np.arange(6, dtype=np.int64)
    k, s = tally.reduce_by_key(keys, values)
    np.testing.assert_array_equal(k, [np.nan, np.nan, 0.0, 1.0])
    assert np.signbit(k[2])
    np.testing.assert_array_equal(s, [0, 1, 5, 9])
    with pytest.raises(OverflowError):
        tally.reduce_by_key(np.zeros(2, dtype=np.int32), np.full(2, np.iinfo(np.int64).max))
    with pytest.raises(ValueError):
        tally.reduce_by_key(np.zeros(3, dtype=np.int32), np.zeros(2))
    with pytest.raises(ValueError):
        tally.reduce_by_key(np.zeros(3, dtype=np.int32), np.zeros(3), "mean")


def test_selection_of_cpu_tensors_is_a_tensor():
    torch = pytest.importorskip("torch")
    t = torch.arange(-5, 5, dtype=torch.int64)
    out = tally.select(t, t > 0)
    assert isinstance(out, torch.Tensor) and out.tolist() == [1, 2, 3, 4]
    values, counts = tally.run_length_encode(torch.tensor([1, 1, 2]))
    assert values.tolist() == [1, 2] and counts.tolist() == [2, 1]
