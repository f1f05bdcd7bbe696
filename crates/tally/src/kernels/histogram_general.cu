// Weighted and two-dimensional histograms. One compilation = one specialisation, chosen by defines:
//   TALLY_SAMPLE     sample (coordinate) type, C++ spelling
//   TALLY_DIMS       1 = one value per sample, 2 = an (x, y) pair per sample
//   TALLY_BINNING    1-D: the binning mode of binning.cuh (with TALLY_IDENTITY, TALLY_ALL_IN_RANGE)
//   TALLY_BINNING_X, TALLY_BINNING_Y   2-D: the binning mode of each axis (FLOAT or EDGES)
//   TALLY_CHANNELS   1-D: interleaved channel count (2-D: 1)
//   TALLY_WEIGHT     NONE (counts), F32 or F64 weights
//   TALLY_ACCUM      weighted only: HALVES = 64-bit fixed point in shared memory as 32-bit halves
//                    with a carry, NATIVE64 = 64-bit fixed point with native 64-bit shared atomics,
//                    FLOAT = float atomics in the weight's type (not deterministic), EXACT = exact
//                    sums (tally_histogram_exact, below; global atomics only)
//   TALLY_STRATEGY   GLOBAL_ATOMIC, BLOCK_SHARED, or GLOBAL_L2 (global atomics on an L2-sized range
//                    of keys per pass)
// (the values are the names of codes.cuh, generated from the Rust side)
//   TALLY_BLOCK_THREADS
//
// Fixed point: each weight w becomes round_half_even(w * 2^k) as a 64-bit integer and integers
// are summed modulo 2^64. The host picks k so that no partial sum can reach 2^62 in magnitude
// (docs/WEIGHTED.md), so the wrapped sums are the exact sums; integer addition is associative,
// so the result does not depend on the order the atomics land in: the same bits on every run,
// strategy, GPU and on the CPU backend (src/histogram/weighted.rs).
//
// Keys: [0, width) are bins (1-D: slot * bins + bin; 2-D: x_bin * bins_y + y_bin), then OUT
// outlier keys per slot (1-D: below, above, NaN; 2-D: x below, x above, y below, y above, NaN),
// then one trash key for samples of unselected channels and lanes past the end.
#include "common.cuh"
#include "block.cuh"

#ifndef TALLY_SAMPLE
#error "TALLY_SAMPLE must be defined"
#endif
#if TALLY_DIMS == 2
#define TALLY_CHANNELS 1
#elif TALLY_DIMS != 1
#error "TALLY_DIMS must be 1 or 2"
#endif
typedef TALLY_SAMPLE Sample;
#include "binning.cuh"

#if TALLY_WEIGHT == TALLY_WEIGHT_F32
typedef float Weight;
#elif TALLY_WEIGHT == TALLY_WEIGHT_F64
typedef double Weight;
#elif TALLY_WEIGHT == TALLY_WEIGHT_NONE
typedef u32 Weight;  // unused: counts
#else
#error "TALLY_WEIGHT must be 0, 1 or 2"
#endif
#ifndef TALLY_ACCUM
#define TALLY_ACCUM TALLY_ACCUM_HALVES
#endif
#define TALLY_FIXED (TALLY_WEIGHT != TALLY_WEIGHT_NONE && TALLY_ACCUM != TALLY_ACCUM_FLOAT)
#define TALLY_FLOAT (TALLY_WEIGHT != TALLY_WEIGHT_NONE && TALLY_ACCUM == TALLY_ACCUM_FLOAT)
// Runs summed in registers: fixed point into shared memory (exact integer sums). Not for float
// accumulation (that is the plain float path by request) nor for strategy 5's counts (its
// warp-wide match needs every lane at every add).
#define TALLY_RUNS (TALLY_FIXED && TALLY_STRATEGY == TALLY_STRATEGY_BLOCK_SHARED)

constexpr int BLOCK_THREADS = TALLY_BLOCK_THREADS;
constexpr int CHANNELS = TALLY_CHANNELS;
constexpr int MAX_CHANNELS = 16;
constexpr int OUT = TALLY_DIMS == 2 ? PAIR_OUTLIERS : 3;  // outlier keys per slot
// Samples each thread has in flight per iteration: loads first, then the adds.
constexpr int UNROLL = 8;

// The layout is checked against `GeneralParams` in src/histogram/cuda_general.rs (static_asserts
// generated from the Rust side).
struct GeneralParams {
  const Sample* x;        // samples (1-D) or x coordinates
  const Sample* y;        // y coordinates (2-D)
  const Weight* weights;  // one per sample (weighted)
  u64 n;                  // samples (pairs)
  u64 stride;             // elements from one sample's coordinate to the next's: 1, or 2 for pairs
  u64* values;            // width: counts (u64), fixed-point sums (u64, two's complement) or f64
  u64* outlier_values;    // nslots * OUT, the same type
  u64* outlier_counts;    // nslots * OUT samples (weighted only)
  int* probe;             // tally_general_probe: probe_k keys
  double scale;           // fixed point: 2^k
  AxisParams ax;
  AxisParams ay;
  u32 bins;               // 1-D: bins per slot; 2-D: bins_x * bins_y
  u32 bins_y;
  u32 nslots;
  u32 slice_lo;           // strategy 5: first key of this pass
  u32 slice_width;        // strategy 5: keys in this pass
  u32 first_pass;         // outliers are counted in the first pass only
  u32 probe_k;            // tally_general_probe: samples (pairs) to look at
  int slot[MAX_CHANNELS];
};

// ---- binning ---------------------------------------------------------------------------------

#if TALLY_DIMS == 1
struct Keys {
  Binner bin;
  u32 bins, width;
  int slot[CHANNELS];
  TALLY_DEVICE int key(const GeneralParams& p, Sample x, Sample, u64 i) const {
    int s = 0;
    if (CHANNELS > 1) {
      s = slot[(u32)(i % CHANNELS)];
      if (s < 0) return (int)(width + OUT * p.nslots);
    }
#if TALLY_BINNING == TALLY_BINNING_FLOAT && TALLY_HIST_ESTIMATE
    // f32 (and 16-bit floats) by the estimate where it decides (histogram.cu does the same a
    // vector at a time): one branch instead of the rule's.
    if constexpr (CHANNELS == 1 && IsFloat32<Sample>::value) {
      int b;
      if (bin.estimate((float)x, b)) return b;
    }
#endif
    const int b = bin(x);
    return b >= 0 ? s * (int)bins + b : (int)width + s * OUT + (-1 - b);
  }
};
#else
struct Keys {
  PairBinnerT<Sample, TALLY_BINNING_X, TALLY_BINNING_Y> bin;
  u32 width;
  // binning.cuh's pair rule; a pair in no bin goes to its outlier key.
  TALLY_DEVICE int key(const GeneralParams&, Sample x, Sample y, u64) const {
    const int b = bin(x, y);
    return b >= 0 ? b : (int)width + (-1 - b);
  }
};
#endif

// The keys of the launch: the binning set up from the parameters (the 1-D 256-entry table in
// shared memory at `cursor`, which moves past it).
TALLY_DEVICE Keys make_keys(const GeneralParams& p, unsigned char*& cursor, u32 width) {
  Keys keys;
  keys.width = width;
#if TALLY_DIMS == 1
  const int* table = nullptr;
#if TALLY_BINNING == TALLY_BINNING_TABLE8
  {
    int* t = reinterpret_cast<int*>(cursor);
    cursor += 256 * sizeof(int);
    for (u32 i = threadIdx.x; i < 256; i += BLOCK_THREADS) t[i] = p.ax.lut[i];
    table = t;
  }
#endif
  setup(keys.bin, p.ax, table);
  keys.bins = p.bins;
  for (int c = 0; c < CHANNELS; ++c) keys.slot[c] = p.slot[c];
#else
  setup(keys.bin.x, p.ax, nullptr);
  setup(keys.bin.y, p.ay, nullptr);
  keys.bin.bins_y = p.bins_y;
#endif
  return keys;
}

// ---- the skew probe ------------------------------------------------------------------------------
// The keys of probe_k samples (pairs) spread over the input, sample j * n / probe_k, by the
// kernel's own rule: what `auto` counts on the host to choose between the partition and
// global-l2 (src/histogram/cuda_general/probe.rs). Launched with BLOCK_THREADS threads a block,
// no dynamic shared memory: pairs only (1-D keys may need a table in shared memory).
#if TALLY_DIMS == 2
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) tally_general_probe(const GeneralParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* cursor = smem_raw;
  const u32 width = TALLY_DIMS == 2 ? p.bins : p.nslots * p.bins;
  const Keys keys = make_keys(p, cursor, width);
  __syncthreads();
  const u32 j = blockIdx.x * BLOCK_THREADS + threadIdx.x;
  if (j >= p.probe_k) return;
  const u64 i = (u64)j * p.n / p.probe_k;
  const Sample x = p.x[i * p.stride];
  const Sample y = TALLY_DIMS == 2 ? p.y[i * p.stride] : x;
  p.probe[j] = keys.key(p, x, y, i);
}
#endif

#if TALLY_ACCUM != TALLY_ACCUM_EXACT
// ---- what one sample adds --------------------------------------------------------------------

#if TALLY_FIXED
typedef long long Value;
// Exact: multiplying by a power of two only moves the exponent, and the host bounded |w| * 2^k
// below 2^62. Round half to even, as the CPU backend's f64::round_ties_even.
TALLY_DEVICE Value value_of(const GeneralParams& p, Weight w) { return __double2ll_rn((double)w * p.scale); }
#elif TALLY_FLOAT
typedef Weight Value;
TALLY_DEVICE Value value_of(const GeneralParams&, Weight w) { return w; }
#else
typedef u32 Value;
TALLY_DEVICE Value value_of(const GeneralParams&, Weight) { return 1u; }
#endif

// Adds a block's partial into the global accumulator (u64 counts, u64 fixed point or f64).
TALLY_DEVICE void global_add(u64* target, Value v) {
#if TALLY_FLOAT
  atomicAdd(reinterpret_cast<double*>(target), (double)v);
#else
  atomicAdd(reinterpret_cast<unsigned long long*>(target), (unsigned long long)(long long)v);
#endif
}

// ---- the block's accumulators in shared memory -----------------------------------------------
// `keys` accumulators; `words` is their storage (what shared_bytes in cuda_general.rs reserves).
struct SharedAcc {
#if TALLY_FIXED && TALLY_ACCUM == TALLY_ACCUM_HALVES
  // 64-bit sums as two 32-bit halves: native 32-bit shared atomics on the low half; a carry out of
  // it (the add wrapped) and the high half of the value go to the high half. Exact modulo 2^64
  // however the adds interleave, because each wrap is seen by exactly the add that caused it.
  u32* lo;
  u32* hi;
  TALLY_DEVICE void init(unsigned char* base, u32 keys) {
    lo = reinterpret_cast<u32*>(base);
    hi = lo + keys;
    block_fill<BLOCK_THREADS>(lo, 2 * keys, 0u);
  }
  TALLY_DEVICE void add(u32 k, Value v) {
    const u32 v_lo = (u32)(u64)v, v_hi = (u32)((u64)v >> 32);
    const u32 old = atomicAdd(lo + k, v_lo);
    const u32 carry = old + v_lo < old;
    const u32 hi_add = v_hi + carry;
    if (hi_add) atomicAdd(hi + k, hi_add);
  }
  TALLY_DEVICE Value get(u32 k) const { return (Value)(((u64)hi[k] << 32) | lo[k]); }
#elif TALLY_FIXED
  // Native 64-bit shared atomics (a compare-and-swap loop on sm_90: docs/LAB.md).
  unsigned long long* sum;
  TALLY_DEVICE void init(unsigned char* base, u32 keys) {
    sum = reinterpret_cast<unsigned long long*>(base);
    block_fill<BLOCK_THREADS>(sum, keys, 0ull);
  }
  TALLY_DEVICE void add(u32 k, Value v) { atomicAdd(sum + k, (unsigned long long)v); }
  TALLY_DEVICE Value get(u32 k) const { return (Value)sum[k]; }
#elif TALLY_FLOAT
  Weight* sum;
  TALLY_DEVICE void init(unsigned char* base, u32 keys) {
    sum = reinterpret_cast<Weight*>(base);
    block_fill<BLOCK_THREADS>(sum, keys, (Weight)0);
  }
  TALLY_DEVICE void add(u32 k, Value v) { atomicAdd(sum + k, v); }
  TALLY_DEVICE Value get(u32 k) const { return sum[k]; }
#else
  u32* count;
  TALLY_DEVICE void init(unsigned char* base, u32 keys) {
    count = reinterpret_cast<u32*>(base);
    block_fill<BLOCK_THREADS>(count, keys, 0u);
  }
  TALLY_DEVICE void add(u32 k, Value) { atomicAdd(count + k, 1u); }
  TALLY_DEVICE Value get(u32 k) const { return count[k]; }
#endif
};

// ---- where a key's value goes (the strategies) -------------------------------------------------
// Block shared (1): every key in the block's private copy. Global atomic (0) and global-l2 (5):
// bins straight to global memory (5: only this pass's range of keys), outliers in shared memory.
struct Sink {
  SharedAcc acc;
  u32* outlier_counts;  // weighted: samples per outlier key, in shared memory
  u64* values;
  u32 width, outs;      // bins, outlier keys
  u32 base;             // first key the shared accumulators hold
  u32 lo, slice;        // strategy 5: this pass's keys
  bool first_pass;
  // `v` is the value of `samples` samples of one key (a run a thread summed in registers).
  TALLY_DEVICE void add(int key, Value v, u32 samples = 1) {
    const u32 k = (u32)key;
#if TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_L2 && !TALLY_WEIGHT
    // Counts: the lanes of a warp holding one key of this pass elect a leader that adds them all.
    const u32 r = k - lo;
    const bool hit = k < width && r < slice;
    const u32 peers = __match_any_sync(0xffffffffu, hit ? r : 0xffffffffu);
    if (hit && (int)lane_id() == __ffs(peers) - 1) atomicAdd(reinterpret_cast<unsigned long long*>(values + k), (unsigned long long)__popc(peers));
    if (k < width) return;
#elif TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_L2
    if (k < width) {
      if (k - lo < slice) global_add(values + k, v);
      return;
    }
#elif TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_ATOMIC
    if (k < width) {
      global_add(values + k, v);
      return;
    }
#endif
    // Block shared: everything here; otherwise the outliers and the trash. Outliers once per
    // launch (strategy 5: in the first pass).
    if (TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_L2 && !first_pass) return;
    acc.add(k - base, v);
#if TALLY_WEIGHT
    if (k >= width && k - width < outs) atomicAdd(outlier_counts + (k - width), samples);
#endif
  }
};

// ---- the kernel ---------------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
tally_histogram_general(const GeneralParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Shared layout: [table i32 x 256 (1-D table binning)][outlier counts u32, 16-byte padded]
  // [accumulators of keys base..width + outs]
  unsigned char* cursor = smem_raw;
  const u32 width = TALLY_DIMS == 2 ? p.bins : p.nslots * p.bins;
  const u32 outs = OUT * p.nslots;

  const Keys keys = make_keys(p, cursor, width);

  Sink sink;
  sink.outlier_counts = reinterpret_cast<u32*>(cursor);
  cursor += ((outs * 4 + 15) / 16) * 16;
  block_fill<BLOCK_THREADS>(sink.outlier_counts, outs, 0u);
  sink.values = p.values;
  sink.width = width;
  sink.outs = outs;
  sink.base = TALLY_STRATEGY == TALLY_STRATEGY_BLOCK_SHARED ? 0 : width;
  sink.lo = p.slice_lo;
  sink.slice = p.slice_width;
  sink.first_pass = p.first_pass != 0;
  const u32 trash = width + outs;
  sink.acc.init(cursor, trash + 1 - sink.base);
  __syncthreads();

  // Each thread: UNROLL samples BLOCK_THREADS apart (coalesced), loads before adds.
  const u64 chunk = (u64)BLOCK_THREADS * UNROLL;
  for (u64 first = (u64)blockIdx.x * chunk; first < p.n; first += (u64)gridDim.x * chunk) {
    Sample x[UNROLL], y[UNROLL];
    Weight w[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const u64 i = first + (u64)u * BLOCK_THREADS + threadIdx.x;
      x[u] = y[u] = 0;
      w[u] = 0;
      if (i < p.n) {
        x[u] = __ldg(p.x + i * p.stride);
        if (TALLY_DIMS == 2) y[u] = __ldg(p.y + i * p.stride);
#if TALLY_WEIGHT
        w[u] = __ldg(p.weights + i);
#endif
      }
    }
#if TALLY_RUNS
    // A thread's samples of one key in a row are summed in registers first: on skewed data most
    // of them are, and each shared atomic that returns its old value (the carry) serialises
    // with the others of its warp on one address. Integer sums: the same bits in any order.
    int run_key = -1;
    Value run = 0;
    u32 run_samples = 0;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const u64 i = first + (u64)u * BLOCK_THREADS + threadIdx.x;
      const int key = i < p.n ? keys.key(p, x[u], y[u], i) : (int)trash;
      const Value v = value_of(p, w[u]);
      if (key == run_key) {
        run += v;
        ++run_samples;
      } else {
        if (run_samples) sink.add(run_key, run, run_samples);
        run_key = key;
        run = v;
        run_samples = 1;
      }
    }
    if (run_samples) sink.add(run_key, run, run_samples);
#else
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const u64 i = first + (u64)u * BLOCK_THREADS + threadIdx.x;
      const int key = i < p.n ? keys.key(p, x[u], y[u], i) : (int)trash;
      sink.add(key, value_of(p, w[u]));
    }
#endif
  }
  __syncthreads();

#if TALLY_STRATEGY == TALLY_STRATEGY_BLOCK_SHARED
  for (u32 k = threadIdx.x; k < width; k += BLOCK_THREADS) {
    const Value v = sink.acc.get(k);
    if (v != 0) global_add(p.values + k, v);
  }
#endif
  if (TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_L2 && !p.first_pass) return;
  for (u32 j = threadIdx.x; j < outs; j += BLOCK_THREADS) {
    const Value v = sink.acc.get(width + j - sink.base);
    if (v != 0) global_add(p.outlier_values + j, v);
#if TALLY_WEIGHT
    const u32 c = sink.outlier_counts[j];
    if (c) atomicAdd(reinterpret_cast<unsigned long long*>(p.outlier_counts + j), (unsigned long long)c);
#endif
  }
}
#else
// ---- exact sums ---------------------------------------------------------------------------------
// Every key (bins and outlier keys; the trash key is dropped) has, in global memory (`values`),
// EXACT_DIGITS signed 128-bit digit sums of its weights (exact.cuh's digits, from digit
// EXACT_FIRST on), then its counts of NaN, +inf and -inf weights and of samples: KEY_WORDS words
// (ExactLayout in src/histogram/weighted_exact.rs). Each sample adds its weight's three chunks
// with 128-bit atomics; integer adds commute, so the sums are the same in every order. The host
// turns each key's digits into the exact sum and rounds it once.
#include "exact.cuh"
#if !TALLY_WEIGHT
#error "exact sums need weights"
#endif
constexpr u32 EXACT_FIRST = TALLY_WEIGHT == TALLY_WEIGHT_F32 ? 27 : 0;
constexpr u32 EXACT_DIGITS = TALLY_WEIGHT == TALLY_WEIGHT_F32 ? 11 : 66;
constexpr u32 KEY_WORDS = 2 * EXACT_DIGITS + 4;

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
tally_histogram_exact(const GeneralParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  unsigned char* cursor = smem_raw;
  const u32 width = TALLY_DIMS == 2 ? p.bins : p.nslots * p.bins;
  const u32 keys_used = width + OUT * p.nslots;
  const Keys keys = make_keys(p, cursor, width);
  __syncthreads();
  unsigned long long* acc = reinterpret_cast<unsigned long long*>(p.values);
  const u64 threads = (u64)gridDim.x * BLOCK_THREADS;
  for (u64 i = (u64)blockIdx.x * BLOCK_THREADS + threadIdx.x; i < p.n; i += threads) {
    const Sample x = __ldg(p.x + i * p.stride);
    const Sample y = TALLY_DIMS == 2 ? __ldg(p.y + i * p.stride) : x;
    const int key = keys.key(p, x, y, i);
    if ((u32)key >= keys_used) continue;  // an unselected channel
    unsigned long long* k = acc + (u64)key * KEY_WORDS;
    const ExactChunks c = exact_chunks((double)__ldg(p.weights + i));
    if (c.kind != EXACT_FINITE) {
      atomicAdd(k + 2 * EXACT_DIGITS + (c.kind - 1), 1ull);
    } else {
#pragma unroll
      for (u32 j = 0; j < 3; ++j) {
        if (c.c[j] == 0) continue;  // zeros (and a zero weight's digit, below EXACT_FIRST for f32)
        const u32 d = c.digit + j - EXACT_FIRST;
        atomic_add_i128(k + 2 * d, k + 2 * d + 1, c.c[j]);
      }
    }
    atomicAdd(k + 2 * EXACT_DIGITS + 3, 1ull);
  }
}
#endif
