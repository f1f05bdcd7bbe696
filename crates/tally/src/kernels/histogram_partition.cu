// The partitioning histogram, for more bins than one block's shared memory holds. The keys
// (slot * bins + bin) are split into chunks of 2^chunk_shift keys, as many 32-bit counters as
// one block's shared memory holds, and one slice of the input at a time is counted in four
// launches:
//   tally_partition_count    samples per chunk (and the samples in no bin, counted only here)
//   tally_partition_offsets  where each chunk's keys start in the partitioned array
//   tally_partition_scatter  each sample's key into its chunk's region: every tile is first
//                            counting-sorted by chunk in shared memory, so that the global
//                            writes of one chunk's keys are consecutive
//   tally_partition_bins     one shared-memory histogram per chunk; blocks split the
//                            partitioned keys evenly, and a chunk shared by several blocks gets
//                            each one's counts by global atomics, so the split never matters
// Binning happens once per sample in each of the first and third launches, with the one rule of
// binning.cuh; only keys travel through memory.
// Defines: TALLY_SAMPLE, TALLY_BINNING, TALLY_CHANNELS, TALLY_COUNTER, TALLY_IDENTITY,
// TALLY_ALL_IN_RANGE (as in histogram.cu), TALLY_BLOCK_THREADS (count and scatter),
// TALLY_ITEMS (keys per thread and tile), TALLY_MIN_BLOCKS (the scatter's blocks per
// multiprocessor, its register bound), TALLY_MATCH_RANKS (1: the scatter ranks a warp's keys of
// one chunk with one shared atomic after __match_any_sync; 0: one shared atomic per key),
// TALLY_BINS_THREADS (the per-chunk histogram).
#include "common.cuh"
#include "warp.cuh"
#include "block.cuh"

#if !defined(TALLY_SAMPLE) || !defined(TALLY_BINNING) || !defined(TALLY_COUNTER)
#error "TALLY_SAMPLE, TALLY_BINNING and TALLY_COUNTER must be defined"
#endif
typedef TALLY_SAMPLE Sample;
#include "binning.cuh"
typedef TALLY_COUNTER Counter;
constexpr int BLOCK_THREADS = TALLY_BLOCK_THREADS;
constexpr int BINS_THREADS = TALLY_BINS_THREADS;
constexpr int ITEMS = TALLY_ITEMS;
#ifndef TALLY_MIN_BLOCKS
#define TALLY_MIN_BLOCKS 1
#endif
#ifndef TALLY_MATCH_RANKS
#define TALLY_MATCH_RANKS 0
#endif
constexpr int MIN_BLOCKS = TALLY_MIN_BLOCKS;
constexpr int CHANNELS = TALLY_CHANNELS;
constexpr int VEC_ITEMS = VecItems<Sample>::value;
static_assert(ITEMS % VEC_ITEMS == 0, "a thread's keys are whole 16-byte loads");
constexpr int VECS = ITEMS / VEC_ITEMS;
constexpr int TILE_ITEMS = BLOCK_THREADS * ITEMS;
constexpr int MAX_CHANNELS = 16;
constexpr u32 NO_KEY = 0xffffffffu;  // keys are < 2^31

// The layout is checked against `PartitionParams` in src/histogram/partition.rs.
struct PartitionParams {
  const Sample* samples;  // the slice's first sample
  u64 n;                  // samples in the slice
  u64 first_index;        // index of the slice's first sample in the whole input (its channel)
  Counter* counts;        // width counters
  u64* outliers;          // nslots * 3: below, above, NaN
  u32* chunk_counts;      // chunks: the slice's keys per chunk (zeroed before the count)
  u32* chunk_start;       // chunks + 1: exclusive sums of chunk_counts, then the total
  u32* chunk_cursor;      // chunks: the next free position of each chunk (the scatter's)
  u32* keys;              // n: the slice's keys, grouped by chunk
  AxisParams axis;
  u32 nslots;
  u32 width;              // keys: bins * nslots
  u32 chunks;
  u32 chunk_shift;        // log2(keys per chunk)
  int slot[MAX_CHANNELS];  // interleaved channel -> selected slot, or -1
};

// Samples in no bin (count launch only), per block in shared memory: below, above and NaN of
// each slot. Rare where a histogram has this many bins, and the hardware combines a warp's adds
// to one address. A block counts at most a slice (< 2^31 samples), so 32 bits hold them.
struct OutlierTally {
  u32* shared;  // nslots * 3
  TALLY_DEVICE void add(int slot, int code) { atomicAdd(shared + slot * 3 + (-1 - code), 1u); }
};

// The key of the sample at index i of the whole input, or NO_KEY (an outlier, which `COUNT`
// tallies, or a channel that is not selected).
template <bool COUNT>
TALLY_DEVICE u32 partition_key(const PartitionParams& p, const Binner& binner, OutlierTally& out, Sample x, u64 i) {
  int slot = 0;
  if (CHANNELS > 1) {
    slot = p.slot[(u32)(i % CHANNELS)];
    if (slot < 0) return NO_KEY;
  }
  const int b = binner(x);
  if (b < 0) {
    if (COUNT) out.add(slot, b);
    return NO_KEY;
  }
  return (u32)slot * p.axis.bins + (u32)b;
}

// The binner, with its table in shared memory for 8-bit samples; returns the shared memory
// after the table.
TALLY_DEVICE unsigned char* partition_binner(const PartitionParams& p, Binner& binner, unsigned char* cursor,
                                             int threads) {
#if TALLY_BINNING == TALLY_BINNING_TABLE8
  int* table = reinterpret_cast<int*>(cursor);
  for (int i = threadIdx.x; i < 256; i += threads) table[i] = p.axis.lut[i];
  setup(binner, p.axis, table);
  return cursor + 256 * sizeof(int);
#else
  setup(binner, p.axis, nullptr);
  return cursor;
#endif
}

// The keys of tile `tile`: thread t holds items (k * BLOCK_THREADS + t) * VEC_ITEMS + j of the
// tile, one 16-byte load per k where the tile is whole and the samples aligned.
template <bool COUNT>
TALLY_DEVICE void tile_keys(const PartitionParams& p, const Binner& binner, OutlierTally& out, u64 tile,
                            bool aligned, u32 (&key)[ITEMS]) {
  const u64 first = tile * TILE_ITEMS;
  if (aligned && first + TILE_ITEMS <= p.n) {
    Vec16<Sample> v[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) v[k] = load_vec16(p.samples, first / VEC_ITEMS + k * BLOCK_THREADS + threadIdx.x);
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      const u64 base = first + (u64)(k * BLOCK_THREADS + threadIdx.x) * VEC_ITEMS;
#pragma unroll
      for (int j = 0; j < VEC_ITEMS; ++j)
        key[k * VEC_ITEMS + j] = partition_key<COUNT>(p, binner, out, v[k].item[j], p.first_index + base + j);
    }
    return;
  }
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    const u64 base = first + (u64)(k * BLOCK_THREADS + threadIdx.x) * VEC_ITEMS;
#pragma unroll
    for (int j = 0; j < VEC_ITEMS; ++j) {
      const u64 i = base + j;
      key[k * VEC_ITEMS + j] = i < p.n ? partition_key<COUNT>(p, binner, out, p.samples[i], p.first_index + i) : NO_KEY;
    }
  }
}

// ---- 1: samples per chunk -----------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) tally_partition_count(const PartitionParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // [table][outliers u32 x 3 * MAX_CHANNELS][chunk counts u32 x chunks]
  Binner binner;
  unsigned char* cursor = partition_binner(p, binner, smem_raw, BLOCK_THREADS);
  OutlierTally out;
  out.shared = reinterpret_cast<u32*>(cursor);
  u32* chunk_counts = out.shared + 3 * MAX_CHANNELS;
  block_fill<BLOCK_THREADS>(out.shared, 3 * MAX_CHANNELS + p.chunks, 0u);
  __syncthreads();

  const bool aligned = (reinterpret_cast<size_t>(p.samples) & 15) == 0;
  const u64 tiles = (p.n + TILE_ITEMS - 1) / TILE_ITEMS;
  for (u64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    u32 key[ITEMS];
    tile_keys<true>(p, binner, out, tile, aligned, key);
#pragma unroll
    for (int j = 0; j < ITEMS; ++j)
      if (key[j] != NO_KEY) atomicAdd(chunk_counts + (key[j] >> p.chunk_shift), 1u);
  }
  __syncthreads();
  for (u32 c = threadIdx.x; c < p.chunks; c += BLOCK_THREADS)
    if (chunk_counts[c]) atomicAdd(p.chunk_counts + c, chunk_counts[c]);
  for (u32 i = threadIdx.x; i < 3 * p.nslots; i += BLOCK_THREADS)
    if (out.shared[i]) atomicAdd(p.outliers + i, (u64)out.shared[i]);
}

// ---- 2: where each chunk starts (one block), the counts zeroed again for the next slice -----

constexpr int OFFSETS_THREADS = 1024;

extern "C" __global__ void __launch_bounds__(OFFSETS_THREADS) tally_partition_offsets(const PartitionParams p) {
  __shared__ u32 scratch[OFFSETS_THREADS / 32];
  // Thread t sums a run of consecutive chunks; the block scans the runs.
  const u32 per = (p.chunks + OFFSETS_THREADS - 1) / OFFSETS_THREADS;
  const u32 lo = min(p.chunks, threadIdx.x * per), hi = min(p.chunks, lo + per);
  u32 sum = 0;
  for (u32 c = lo; c < hi; ++c) sum += p.chunk_counts[c];
  u32 total;
  u32 start = block_inclusive_scan<OFFSETS_THREADS>(sum, scratch, 0u, [](u32 a, u32 b) { return a + b; }, total) - sum;
  for (u32 c = lo; c < hi; ++c) {
    const u32 count = p.chunk_counts[c];
    p.chunk_start[c] = start;
    p.chunk_cursor[c] = start;
    p.chunk_counts[c] = 0;  // zero again for the next slice's count
    start += count;
  }
  if (threadIdx.x == 0) p.chunk_start[p.chunks] = total;
}

// ---- 3: keys into their chunks' regions ---------------------------------------------------------

// Three barriers per tile: the tile counters are double-buffered, so that each tile's are
// zeroed while the previous tile scans its own, and the next tile's first shared atomics need no
// barrier of their own; and the staged keys and destinations are rewritten only after the next
// tile's ranking barrier, which every thread passes after its copy-out.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS) tally_partition_scatter(const PartitionParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // [table][staged keys u32 x TILE_ITEMS][tile counts x 2 | tile starts | destinations: u32 x chunks]
  __shared__ u32 scan_scratch[BLOCK_THREADS / 32];
  Binner binner;
  u32* stage = reinterpret_cast<u32*>(partition_binner(p, binner, smem_raw, BLOCK_THREADS));
  u32* tile_counts = stage + TILE_ITEMS;  // two buffers of p.chunks counters
  u32* tile_start = tile_counts + 2 * p.chunks;
  u32* dest = tile_start + p.chunks;
  OutlierTally unused;  // the scatter counts no outliers (tile_keys<false>)
  const bool aligned = (reinterpret_cast<size_t>(p.samples) & 15) == 0;
  const u64 tiles = (p.n + TILE_ITEMS - 1) / TILE_ITEMS;
  // Each thread scans a run of consecutive chunks.
  const u32 per = (p.chunks + BLOCK_THREADS - 1) / BLOCK_THREADS;
  const u32 run_lo = min(p.chunks, threadIdx.x * per), run_hi = min(p.chunks, run_lo + per);
#if TALLY_MATCH_RANKS
  const u32 lanes_below = (1u << lane_id()) - 1;
#endif
  block_fill<BLOCK_THREADS>(tile_counts, p.chunks, 0u);
  __syncthreads();

  u32 buffer = 0;
  for (u64 tile = blockIdx.x; tile < tiles; tile += gridDim.x, buffer ^= 1) {
    u32* tile_count = tile_counts + buffer * p.chunks;
    u32* next_count = tile_counts + (buffer ^ 1) * p.chunks;
    u32 key[ITEMS], rank[ITEMS];
    tile_keys<false>(p, binner, unused, tile, aligned, key);
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const u32 chunk = key[j] == NO_KEY ? NO_KEY : key[j] >> p.chunk_shift;
#if TALLY_MATCH_RANKS
      // The lanes of a warp with one chunk take one shared atomic together.
      const u32 peers = __match_any_sync(0xffffffffu, chunk);
      const int leader = __ffs(peers) - 1;
      u32 base = 0;
      if (chunk != NO_KEY && (int)lane_id() == leader) base = atomicAdd(tile_count + chunk, (u32)__popc(peers));
      base = __shfl_sync(0xffffffffu, base, leader);
      rank[j] = base + __popc(peers & lanes_below);
#else
      // The old count is the key's rank in its chunk; the order within a chunk does not matter
      // to the per-chunk histogram.
      rank[j] = chunk == NO_KEY ? 0 : atomicAdd(tile_count + chunk, 1u);
#endif
    }
    __syncthreads();
    // The tile's chunk starts, and a place in each chunk's region of the partitioned keys.
    u32 sum = 0;
    for (u32 c = run_lo; c < run_hi; ++c) sum += tile_count[c];
    u32 total;
    u32 start = block_inclusive_scan<BLOCK_THREADS>(sum, scan_scratch, 0u, [](u32 a, u32 b) { return a + b; }, total) - sum;
    for (u32 c = run_lo; c < run_hi; ++c) {
      const u32 count = tile_count[c];
      tile_start[c] = start;
      // Position k of the staged tile goes to dest[c] + k (u32 arithmetic wraps back).
      if (count) dest[c] = atomicAdd(p.chunk_cursor + c, count) - start;
      start += count;
      next_count[c] = 0;  // the next tile's counters, last read by the previous tile's scan
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < ITEMS; ++j)
      if (key[j] != NO_KEY) stage[tile_start[key[j] >> p.chunk_shift] + rank[j]] = key[j];
    __syncthreads();
    for (u32 k = threadIdx.x; k < total; k += BLOCK_THREADS) {
      const u32 v = stage[k];
      p.keys[dest[v >> p.chunk_shift] + k] = v;
    }
  }
}

// ---- 4: one shared-memory histogram per chunk ---------------------------------------------------

extern "C" __global__ void __launch_bounds__(BINS_THREADS) tally_partition_bins(const PartitionParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  u32* hist = reinterpret_cast<u32*>(smem_raw);  // 2^chunk_shift counters
  const u64 total = p.chunk_start[p.chunks];
  const u32 lo = (u32)((u64)blockIdx.x * total / gridDim.x);
  const u32 hi = (u32)((u64)(blockIdx.x + 1) * total / gridDim.x);
  if (lo >= hi) return;
  // The chunk holding position lo: the last c with chunk_start[c] <= lo.
  u32 first = 0, last = p.chunks - 1;
  while (first < last) {
    const u32 mid = (first + last + 1) / 2;
    if (p.chunk_start[mid] <= lo) first = mid;
    else last = mid - 1;
  }
  for (u32 c = first; c < p.chunks; ++c) {
    const u32 begin = max(lo, p.chunk_start[c]), end = min(hi, p.chunk_start[c + 1]);
    if (begin >= hi) break;
    if (begin >= end) continue;
    const u32 key0 = c << p.chunk_shift;
    const u32 used = min(1u << p.chunk_shift, p.width - key0);
    block_fill<BINS_THREADS>(hist, used, 0u);
    __syncthreads();
    u32 i = begin + threadIdx.x;
    // Four loads in flight before their atomics.
    for (; i + 3 * BINS_THREADS < end; i += 4 * BINS_THREADS) {
      u32 k[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) k[u] = __ldg(p.keys + i + u * BINS_THREADS);
#pragma unroll
      for (int u = 0; u < 4; ++u) atomicAdd(hist + (k[u] - key0), 1u);
    }
    for (; i < end; i += BINS_THREADS) atomicAdd(hist + (__ldg(p.keys + i) - key0), 1u);
    __syncthreads();
    for (u32 b = threadIdx.x; b < used; b += BINS_THREADS)
      if (hist[b]) atomicAdd(p.counts + key0 + b, (Counter)hist[b]);
    __syncthreads();
  }
}
