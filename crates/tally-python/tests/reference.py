"""Sequential references for the selection and run tests (numpy), shared by the CPU and GPU
files."""

import numpy as np

SUM_TYPES = {
    "uint8": "uint64", "uint16": "uint64", "uint32": "uint64", "uint64": "uint64",
    "int8": "int64", "int16": "int64", "int32": "int64", "int64": "int64",
    "float32": "float32", "float64": "float64",
}


def run_starts(keys):
    """Where each run of equal consecutive keys begins (``==``: NaN equals nothing)."""
    if keys.size == 0:
        return np.zeros(0, dtype=np.int64)
    with np.errstate(invalid="ignore"):
        change = keys[1:] != keys[:-1]
    return np.flatnonzero(np.concatenate([[True], change]))


def unique_consecutive(keys):
    return keys[run_starts(keys)]


def run_lengths(keys):
    starts = run_starts(keys)
    return np.diff(np.concatenate([starts, [keys.size]])).astype(np.int64)


def reduce_by_key(keys, values, op):
    """The first key of every run and the run's sum (numpy's cumsum types), min or max (NaN
    propagating). The test data keep every float sum exact, so the order of additions is moot."""
    starts = run_starts(keys)
    out_dtype = np.dtype(SUM_TYPES[values.dtype.name] if op == "sum" else values.dtype)
    if starts.size == 0:
        return keys[:0], np.zeros(0, dtype=out_dtype)
    ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[op]
    return keys[starts], ufunc.reduceat(values.astype(out_dtype), starts)
