// Brightness histograms of images: each pixel's brightness computed from its channels and binned
// in the same pass (src/histogram/image/). One compilation = one specialisation:
//   TALLY_SAMPLE          the channel type (u8, u16, f32, f64), C++ spelling
//   TALLY_BINNING         FLOAT (the f64 rule) or EDGES, applied to the f64 brightness
//   TALLY_STRATEGY        BLOCK_SHARED (32-bit counters in shared memory, one global add per bin
//                         and block) or GLOBAL_ATOMIC (64-bit global atomics, for more bins)
//   TALLY_SUM_TABLE       1: the brightness is the mean of integer channels, and its bin comes
//                         from a table indexed by the channels' sum (`sum_table`, made on the host
//                         by the same rule: an integer sum is exact in f64, so the table holds the
//                         bin of sum / mean_of for every sum); 0: the f64 operations per pixel
//   TALLY_BLOCK_THREADS
// The brightness rule is the one of src/histogram/image/mod.rs (`Brightness::of`), in the same
// f64 operations in the same order, each rounded on its own (no contraction into an FMA), so the
// CPU computes the same bits; the bin is then the f64 rule of binning.cuh, as for f64 samples.
#include "common.cuh"
#include "block.cuh"

#ifndef TALLY_SAMPLE
#error "TALLY_SAMPLE must be defined"
#endif
typedef TALLY_SAMPLE Sample;
#include "binning.cuh"

constexpr int BLOCK_THREADS = TALLY_BLOCK_THREADS;
constexpr int MAX_CHANNELS = 4;
// Pixels each thread has in flight per iteration: loads first, then the adds.
constexpr int UNROLL = 4;
typedef BinnerT<double, TALLY_BINNING> BrightnessBinner;
#ifndef TALLY_SUM_TABLE
#define TALLY_SUM_TABLE 0
#endif

// The layout is checked against `ImageParams` in src/histogram/image/cuda.rs.
struct ImageParams {
  const Sample* pixels;  // channel 0 of the first pixel
  u64 n;                 // pixels
  u64 pixel_stride;      // elements from a pixel's channel to the next pixel's: channels (HWC) or 1 (CHW)
  u64 plane_stride;      // elements from a pixel's channel to its next channel: 1 (HWC) or pixels (CHW)
  u64* counts;           // bins, then below, above, NaN
  const u32* sum_table;  // TALLY_SUM_TABLE: the key (bin, or bins + outlier) of each channel sum
  AxisParams axis;
  double weight[MAX_CHANNELS];  // weighted brightness: one per channel
  u32 channels;          // 1 to 4
  u32 mean_of;           // the mean of the first mean_of channels; 0: the weighted sum
  u32 bins;
  u32 table_sums;        // TALLY_SUM_TABLE: entries of sum_table
};

// The brightness of a pixel whose channel values are v: the mean of the first `mean_of` (their
// sum left to right, then one division), or the weighted sum over every channel (each product
// rounded, then summed left to right).
TALLY_DEVICE double brightness(const ImageParams& p, const double (&v)[MAX_CHANNELS]) {
  if (p.mean_of) {
    double s = v[0];
#pragma unroll
    for (int c = 1; c < MAX_CHANNELS; ++c)
      if (c < (int)p.mean_of) s = __dadd_rn(s, v[c]);
    return __ddiv_rn(s, (double)p.mean_of);
  }
  double s = __dmul_rn(p.weight[0], v[0]);
#pragma unroll
  for (int c = 1; c < MAX_CHANNELS; ++c)
    if (c < (int)p.channels) s = __dadd_rn(s, __dmul_rn(p.weight[c], v[c]));
  return s;
}

// The key of a pixel: its bin, or bins + 0, 1, 2 for below, above, NaN.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) tally_histogram_image(const ImageParams p) {
  const u32 keys = p.bins + 3;
  // Shared: [the block's counters (block strategy)][the sum table (TALLY_SUM_TABLE)].
  extern __shared__ __align__(16) u32 shared_words[];
#if TALLY_STRATEGY == TALLY_STRATEGY_BLOCK_SHARED
  u32* shared_counts = shared_words;
  block_fill<BLOCK_THREADS>(shared_counts, keys, 0u);
  u32* table = shared_words + keys;
#else
  u32* table = shared_words;
#endif
#if TALLY_SUM_TABLE
  for (u32 k = threadIdx.x; k < p.table_sums; k += BLOCK_THREADS) table[k] = p.sum_table[k];
#else
  (void)table;
#endif
  __syncthreads();
  BrightnessBinner binner;
  setup(binner, p.axis, nullptr);
  const u64 chunk = (u64)BLOCK_THREADS * UNROLL;
  for (u64 first = (u64)blockIdx.x * chunk; first < p.n; first += (u64)gridDim.x * chunk) {
#if TALLY_SUM_TABLE
    u32 sum[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const u64 i = first + (u64)u * BLOCK_THREADS + threadIdx.x;
      const Sample* px = p.pixels + (i < p.n ? i : 0) * p.pixel_stride;
      sum[u] = 0;
#pragma unroll
      for (int c = 0; c < MAX_CHANNELS; ++c)
        if (c < (int)p.mean_of) sum[u] += (u32)__ldg(px + c * p.plane_stride);
    }
#else
    double v[UNROLL][MAX_CHANNELS];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const u64 i = first + (u64)u * BLOCK_THREADS + threadIdx.x;
      const Sample* px = p.pixels + (i < p.n ? i : 0) * p.pixel_stride;
#pragma unroll
      for (int c = 0; c < MAX_CHANNELS; ++c)
        v[u][c] = c < (int)p.channels ? (double)__ldg(px + c * p.plane_stride) : 0.0;
    }
#endif
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const u64 i = first + (u64)u * BLOCK_THREADS + threadIdx.x;
      if (i >= p.n) continue;
#if TALLY_SUM_TABLE
      const u32 key = table[sum[u]];
#else
      const int b = binner(brightness(p, v[u]));
      const u32 key = b >= 0 ? (u32)b : p.bins + (u32)(-1 - b);
#endif
#if TALLY_STRATEGY == TALLY_STRATEGY_BLOCK_SHARED
      atomicAdd(shared_counts + key, 1u);
#else
      atomicAdd(reinterpret_cast<unsigned long long*>(p.counts + key), 1ull);
#endif
    }
  }
#if TALLY_STRATEGY == TALLY_STRATEGY_BLOCK_SHARED
  __syncthreads();
  for (u32 k = threadIdx.x; k < keys; k += BLOCK_THREADS)
    if (shared_counts[k]) atomicAdd(reinterpret_cast<unsigned long long*>(p.counts + k), (unsigned long long)shared_counts[k]);
#endif
}
