// The partitioning histogram, for more bins than one block's shared memory holds. The keys
// (slot * bins + bin) are split into chunks of 2^chunk_shift keys, as many 32-bit counters as
// one block's shared memory holds, and one slice of the input at a time is counted in three
// launches:
//   tally_partition_scatter  each tile of samples binned once and counting-sorted by chunk in
//                            shared memory, then written whole to the tile's own region of the
//                            partitioned keys as 16-bit keys within their chunk; each chunk's
//                            segment of the tile (start, count) goes to a chunk-major table; the
//                            samples in no bin are counted here, and each chunk's keys
//   tally_partition_offsets  the chunks' key totals as exclusive sums
//   tally_partition_bins     one shared-memory histogram per chunk; each block takes the chunks
//                            that its even share of the work (keys, and segments to look at)
//                            overlaps, and with the other blocks on a chunk takes units of its
//                            segments from the chunk's queue, so the split never depends on
//                            where in the input the keys lie
// The input is read once and the keys are written and read once, at two bytes each: no count
// pass, no global cursor per chunk. Binning happens once per sample, with the one rule of
// binning.cuh. 2-D histograms of pairs are partitioned the same way: their keys are
// x_bin * bins_y + y_bin, and only the scatter's loads and rule differ.
// Defines: TALLY_SAMPLE, TALLY_BINNING, TALLY_CHANNELS, TALLY_COUNTER, TALLY_IDENTITY,
// TALLY_ALL_IN_RANGE (as in histogram.cu); TALLY_DIMS (1, the default, or 2: pairs, binned by
// TALLY_BINNING_X and TALLY_BINNING_Y, one slot); TALLY_BLOCK_THREADS (the scatter), TALLY_ITEMS (keys
// per thread and tile), TALLY_MIN_BLOCKS (the scatter's blocks per multiprocessor, its register
// bound), TALLY_MATCH_RANKS (1: the scatter ranks a warp's keys of one chunk with one shared
// atomic after __match_any_sync; 0: one shared atomic per key), TALLY_BINS_THREADS (the
// per-chunk histogram), TALLY_PARTITION_WARP_SCAN_CHUNKS (the most chunks whose counts warp 0
// alone scans).
#include "common.cuh"
#include "warp.cuh"
#include "block.cuh"

#ifndef TALLY_DIMS
#define TALLY_DIMS 1
#endif
#if TALLY_DIMS == 2
#define TALLY_CHANNELS 1
#if !defined(TALLY_BINNING_X) || !defined(TALLY_BINNING_Y)
#error "pairs need TALLY_BINNING_X and TALLY_BINNING_Y"
#endif
#elif TALLY_DIMS != 1 || !defined(TALLY_BINNING)
#error "TALLY_DIMS must be 1 (with TALLY_BINNING) or 2"
#endif
#if !defined(TALLY_SAMPLE) || !defined(TALLY_COUNTER)
#error "TALLY_SAMPLE and TALLY_COUNTER must be defined"
#endif
typedef TALLY_SAMPLE Sample;
#include "binning.cuh"
#if TALLY_DIMS == 2
typedef PairBinnerT<Sample, TALLY_BINNING_X, TALLY_BINNING_Y> KeyRule;
constexpr int OUT = PAIR_OUTLIERS;  // samples in no bin: binning.cuh's outlier indices of pairs
#else
typedef Binner KeyRule;
constexpr int OUT = 3;  // samples in no bin, per slot: below, above, NaN
#endif
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
// A segment's start and count are 16-bit, and a tile's region is whole 16-byte vectors of keys.
static_assert(TILE_ITEMS <= 65535 && TILE_ITEMS % 8 == 0, "a tile's positions fit 16 bits");
constexpr int MAX_CHANNELS = 16;
constexpr u32 NO_KEY = 0xffffffffu;  // keys are < 2^31
// Keys within a chunk are 16-bit (a chunk holds at most 2^15, MAX_CHUNK_SHIFT of partition.rs).
constexpr int KEYS_PER_VEC = 8;     // 16-bit keys in one 16-byte load

// The layout is checked against `PartitionParams` in src/histogram/partition.rs.
struct PartitionParams {
  const Sample* samples;  // the slice's first sample (pairs: its x, or its pair if interleaved)
  const Sample* samples_y;  // pairs split in two arrays: the slice's first y
  u64 n;                  // samples in the slice
  u64 first_index;        // index of the slice's first sample in the whole input (its channel)
  Counter* counts;        // width counters
  u64* outliers;          // nslots * OUT
  u32* chunk_total;       // chunks: the slice's keys per chunk (zero before the scatter)
  u32* chunk_start;       // chunks + 1: exclusive sums of chunk_total, then the total
  u32* chunk_queue;       // chunks: the next unit of each chunk (the bins launch's)
  u32* segments;          // chunks x tiles: tile t's segment of chunk c, start | count << 16
  u16* keys;              // tiles x TILE_ITEMS: each tile's keys within their chunks, grouped by chunk
  AxisParams axis;        // pairs: the x axis
  AxisParams axis_y;      // pairs: the y axis
  u32 nslots;
  u32 width;              // keys: bins * nslots
  u32 chunks;
  u32 chunk_shift;        // log2(keys per chunk), at most 15
  u32 bins_y;             // pairs: bins of the y axis
  u32 interleaved;        // pairs: 1 = x0, y0, x1, y1, ... in `samples`; 0 = x and y apart
  u32 segment_weight;     // the bins launch: a segment's cost beside its keys, in keys
  int slot[MAX_CHANNELS];  // interleaved channel -> selected slot, or -1
};
// Samples in no bin, counted by the scatter per block in shared memory: OUT per slot. Rare where
// a histogram has this many bins, and the hardware combines a warp's adds
// to one address. A block counts at most a slice (at most 2^31 samples), so 32 bits hold them.
struct OutlierTally {
  u32* shared;  // nslots * OUT
  // `code`: the rule's negative result, -1 - the outlier's index.
  TALLY_DEVICE void add(int slot, int code) { atomicAdd(shared + slot * OUT + (-1 - code), 1u); }
};

// The key of the sample at index i of the whole input, or NO_KEY (an outlier, which `out`
// tallies, or a channel that is not selected).
#if TALLY_DIMS == 1
TALLY_DEVICE u32 partition_key(const PartitionParams& p, const KeyRule& binner, OutlierTally& out, Sample x, u64 i) {
  int slot = 0;
  if (CHANNELS > 1) {
    slot = p.slot[(u32)(i % CHANNELS)];
    if (slot < 0) return NO_KEY;
  }
  const int b = binner(x);
  if (b < 0) {
    out.add(slot, b);
    return NO_KEY;
  }
  return (u32)slot * p.axis.bins + (u32)b;
}
#else
// The key of the pair (x, y), or NO_KEY (a pair in no bin, which `out` tallies).
TALLY_DEVICE u32 pair_key(const KeyRule& rule, OutlierTally& out, Sample x, Sample y) {
  const int b = rule(x, y);
  if (b < 0) {
    out.add(0, b);
    return NO_KEY;
  }
  return (u32)b;
}
#endif

// The binner, with its table in shared memory for 8-bit samples; returns the shared memory
// after the table.
TALLY_DEVICE unsigned char* partition_binner(const PartitionParams& p, KeyRule& binner, unsigned char* cursor,
                                             int threads) {
#if TALLY_DIMS == 2
  setup(binner.x, p.axis, nullptr);
  setup(binner.y, p.axis_y, nullptr);
  binner.bins_y = p.bins_y;
  return cursor;
#elif TALLY_BINNING == TALLY_BINNING_TABLE8
  int* table = reinterpret_cast<int*>(cursor);
  for (int i = threadIdx.x; i < 256; i += threads) table[i] = p.axis.lut[i];
  setup(binner, p.axis, table);
  return cursor + 256 * sizeof(int);
#else
  setup(binner, p.axis, nullptr);
  return cursor;
#endif
}

// The keys of a tile that starts at sample `first`, one sample at a time (a partial tile, or
// samples not aligned for 16-byte loads): `key_of(i)` for sample i of the slice, NO_KEY past
// its end; thread t holds the items of the vector loads' order.
template <typename KeyOf>
TALLY_DEVICE void keys_one_by_one(const PartitionParams& p, u64 first, u32 (&key)[ITEMS], KeyOf key_of) {
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    const u64 base = first + (u64)(k * BLOCK_THREADS + threadIdx.x) * VEC_ITEMS;
#pragma unroll
    for (int j = 0; j < VEC_ITEMS; ++j) {
      const u64 i = base + j;
      key[k * VEC_ITEMS + j] = i < p.n ? key_of(i) : NO_KEY;
    }
  }
}

// The keys of tile `tile`: thread t holds items (k * BLOCK_THREADS + t) * VEC_ITEMS + j of the
// tile, one 16-byte load per k where the tile is whole and the samples aligned.
#if TALLY_DIMS == 1
TALLY_DEVICE void tile_keys(const PartitionParams& p, const KeyRule& binner, OutlierTally& out, u64 tile,
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
        key[k * VEC_ITEMS + j] = partition_key(p, binner, out, v[k].item[j], p.first_index + base + j);
    }
    return;
  }
  keys_one_by_one(p, first, key, [&](u64 i) { return partition_key(p, binner, out, p.samples[i], p.first_index + i); });
}
#else
// The same for pairs: thread t holds pairs (k * BLOCK_THREADS + t) * VEC_ITEMS + j, their x and
// y one 16-byte load each where they lie apart, two loads of whole pairs where interleaved.
TALLY_DEVICE void tile_keys(const PartitionParams& p, const KeyRule& rule, OutlierTally& out, u64 tile, bool aligned,
                            u32 (&key)[ITEMS]) {
  static_assert(VEC_ITEMS >= 2, "a 16-byte load holds whole pairs");
  const u64 first = tile * TILE_ITEMS;
  if (aligned && first + TILE_ITEMS <= p.n) {
    Vec16<Sample> a[VECS], b[VECS];
    const u64 vec0 = first / VEC_ITEMS;
    if (p.interleaved) {
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        const u64 v = 2 * (vec0 + k * BLOCK_THREADS + threadIdx.x);
        a[k] = load_vec16(p.samples, v);
        b[k] = load_vec16(p.samples, v + 1);
      }
#pragma unroll
      for (int k = 0; k < VECS; ++k)
#pragma unroll
        for (int j = 0; j < VEC_ITEMS; ++j) {
          const Vec16<Sample>& v = j < VEC_ITEMS / 2 ? a[k] : b[k];
          const int at = 2 * (j % (VEC_ITEMS / 2));
          key[k * VEC_ITEMS + j] = pair_key(rule, out, v.item[at], v.item[at + 1]);
        }
    } else {
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        a[k] = load_vec16(p.samples, vec0 + k * BLOCK_THREADS + threadIdx.x);
        b[k] = load_vec16(p.samples_y, vec0 + k * BLOCK_THREADS + threadIdx.x);
      }
#pragma unroll
      for (int k = 0; k < VECS; ++k)
#pragma unroll
        for (int j = 0; j < VEC_ITEMS; ++j) key[k * VEC_ITEMS + j] = pair_key(rule, out, a[k].item[j], b[k].item[j]);
    }
    return;
  }
  const u64 stride = p.interleaved ? 2 : 1;
  const Sample* ys = p.interleaved ? p.samples + 1 : p.samples_y;
  keys_one_by_one(p, first, key, [&](u64 i) { return pair_key(rule, out, p.samples[i * stride], ys[i * stride]); });
}
#endif

// ---- 1: each tile's keys, sorted by chunk, into the tile's own region ---------------------------

// Three barriers per tile, and the block scan's three where the chunks are many: the tile
// counters are double-buffered, so that each tile's are zeroed while the previous tile scans its
// own, and the next tile's first shared atomics need no barrier of their own; the staged keys are
// rewritten only after the next tile's ranking barrier, which every thread passes after its
// copy-out. Up to WARP_SCAN_CHUNKS chunks (1M bins: 32) warp 0 alone scans the tile's chunk
// counts, a few consecutive chunks a lane, between the ranking barrier and the staging one, so
// that the block scan's three barriers a tile are gone (v32's profile found 43.7% of the
// scatter's stalls at barriers; docs/PERF.md v36: 2-3% faster at 1M bins on an H100). The
// bound is the policy's `FEW_CHUNKS` (src/histogram/partition.rs), past which it gives the
// scatter tiles of 16,384 keys, passed as TALLY_PARTITION_WARP_SCAN_CHUNKS (a second -D through
// TALLY_NVRTC_OPTIONS redefines it for measurements; 0: always the block scan).
#ifndef TALLY_PARTITION_WARP_SCAN_CHUNKS
#error "TALLY_PARTITION_WARP_SCAN_CHUNKS must be defined"
#endif
constexpr u32 WARP_SCAN_CHUNKS = TALLY_PARTITION_WARP_SCAN_CHUNKS;

// The tile's chunk starts into `tile_start` (for the staging) and its segments into the table,
// the block's totals and the next tile's counters zeroed, for the chunks [lo, hi) of this thread,
// whose first starts at `start`.
TALLY_DEVICE void publish_tile_chunks(const PartitionParams& p, u64 tiles, u64 tile, u32 lo, u32 hi, u32 start,
                                      const u32* tile_count, u32* next_count, u32* tile_start, u32* block_total) {
  for (u32 c = lo; c < hi; ++c) {
    const u32 count = tile_count[c];
    tile_start[c] = start;
    // Tiles go to blocks in order, so the neighbouring entries of a column are written at about
    // the same time and L2 merges them before they reach memory.
    p.segments[(u64)c * tiles + tile] = start | count << 16;
    block_total[c] += count;
    start += count;
    next_count[c] = 0;  // the next tile's counters, last read by the previous tile's scan
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS) tally_partition_scatter(const PartitionParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // [table][outliers u32 x 3 * MAX_CHANNELS][chunk totals | tile counts x 2 | tile starts: u32 x chunks]
  // [staged keys u16 x TILE_ITEMS]; every part before the staged keys is a multiple of 16 bytes.
  __shared__ u32 scan_scratch[BLOCK_THREADS / 32];
  __shared__ u32 tile_total;  // the warp scan's total for the copy-out
  KeyRule binner;
  OutlierTally out;
  out.shared = reinterpret_cast<u32*>(partition_binner(p, binner, smem_raw, BLOCK_THREADS));
  u32* block_total = out.shared + 3 * MAX_CHANNELS;
  u32* tile_counts = block_total + p.chunks;  // two buffers of p.chunks counters
  u32* tile_start = tile_counts + 2 * p.chunks;
  u16* stage = reinterpret_cast<u16*>(tile_start + p.chunks);
  const bool aligned = (reinterpret_cast<size_t>(p.samples) & 15) == 0 &&
                       (TALLY_DIMS == 1 || p.interleaved || (reinterpret_cast<size_t>(p.samples_y) & 15) == 0);
  const u64 tiles = (p.n + TILE_ITEMS - 1) / TILE_ITEMS;
  const u32 local_mask = (1u << p.chunk_shift) - 1;
  // Each thread scans a run of consecutive chunks; where warp 0 alone scans them, each lane.
  const bool warp_scan = p.chunks <= WARP_SCAN_CHUNKS;
  const u32 scanners = warp_scan ? 32 : BLOCK_THREADS;
  const u32 per = (p.chunks + scanners - 1) / scanners;
  const u32 run_lo = threadIdx.x < scanners ? min(p.chunks, threadIdx.x * per) : p.chunks;
  const u32 run_hi = min(p.chunks, run_lo + per);
#if TALLY_MATCH_RANKS
  const u32 lanes_below = (1u << lane_id()) - 1;
#endif
  block_fill<BLOCK_THREADS>(out.shared, 3 * MAX_CHANNELS + 2 * p.chunks, 0u);
  static_assert(OUT <= 3 * MAX_CHANNELS, "a pair's outliers fit the slots' counters");
  __syncthreads();

  u32 buffer = 0;
  for (u64 tile = blockIdx.x; tile < tiles; tile += gridDim.x, buffer ^= 1) {
    u32* tile_count = tile_counts + buffer * p.chunks;
    u32* next_count = tile_counts + (buffer ^ 1) * p.chunks;
    u32 key[ITEMS], rank[ITEMS];
    tile_keys(p, binner, out, tile, aligned, key);
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
    // The tile's chunk starts, in shared memory for the staging, and its segments in the table.
    u32 sum = 0;
    for (u32 c = run_lo; c < run_hi; ++c) sum += tile_count[c];
    u32 total;
    const auto plus = [](u32 a, u32 b) { return a + b; };
    if (warp_scan) {
      // The branch is the same for the whole block (p.chunks), so every thread meets the barrier.
      if (warp_id() == 0) {
        const u32 inclusive = warp_inclusive_scan(sum, plus);
        publish_tile_chunks(p, tiles, tile, run_lo, run_hi, inclusive - sum, tile_count, next_count, tile_start,
                            block_total);
        if (lane_id() == 31) tile_total = inclusive;
      }
      __syncthreads();
      // Rewritten only after the next tile's ranking barrier, which every thread passes later.
      total = tile_total;
    } else {
      const u32 start = block_inclusive_scan<BLOCK_THREADS>(sum, scan_scratch, 0u, plus, total) - sum;
      publish_tile_chunks(p, tiles, tile, run_lo, run_hi, start, tile_count, next_count, tile_start, block_total);
      __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j)
      if (key[j] != NO_KEY) stage[tile_start[key[j] >> p.chunk_shift] + rank[j]] = (u16)(key[j] & local_mask);
    __syncthreads();
    // The tile's region, whole 16-byte vectors: what lies past the total is never read.
    const uint4* from = reinterpret_cast<const uint4*>(stage);
    uint4* to = reinterpret_cast<uint4*>(p.keys + tile * TILE_ITEMS);
    for (u32 v = threadIdx.x; v < (total + KEYS_PER_VEC - 1) / KEYS_PER_VEC; v += BLOCK_THREADS) to[v] = from[v];
  }
  __syncthreads();
  for (u32 c = threadIdx.x; c < p.chunks; c += BLOCK_THREADS)
    if (block_total[c]) atomicAdd(p.chunk_total + c, block_total[c]);
  for (u32 i = threadIdx.x; i < OUT * p.nslots; i += BLOCK_THREADS)
    if (out.shared[i]) atomicAdd(p.outliers + i, (u64)out.shared[i]);
}

// ---- 2: where each chunk starts (one block); the totals zeroed again for the next slice ------

constexpr int OFFSETS_THREADS = 1024;

extern "C" __global__ void __launch_bounds__(OFFSETS_THREADS) tally_partition_offsets(const PartitionParams p) {
  __shared__ u32 scratch[OFFSETS_THREADS / 32];
  // Thread t sums a run of consecutive chunks; the block scans the runs.
  const u32 per = (p.chunks + OFFSETS_THREADS - 1) / OFFSETS_THREADS;
  const u32 lo = min(p.chunks, threadIdx.x * per), hi = min(p.chunks, lo + per);
  u32 sum = 0;
  for (u32 c = lo; c < hi; ++c) sum += p.chunk_total[c];
  u32 total;
  u32 start = block_inclusive_scan<OFFSETS_THREADS>(sum, scratch, 0u, [](u32 a, u32 b) { return a + b; }, total) - sum;
  for (u32 c = lo; c < hi; ++c) {
    const u32 count = p.chunk_total[c];
    p.chunk_start[c] = start;
    p.chunk_total[c] = 0;  // zero again for the next slice's scatter
    p.chunk_queue[c] = 0;
    start += count;
  }
  if (threadIdx.x == 0) p.chunk_start[p.chunks] = total;
}

// ---- 3: one shared-memory histogram per chunk ---------------------------------------------------

// A chunk's segments are read in units, taken by the warps of every block on the chunk from the
// chunk's queue: a unit is a part (about UNIT_KEYS keys) of the segments of 32 consecutive
// tiles, one per lane, read as one list of 16-byte vectors so that the lanes share the work
// whatever the segments' lengths. The vectors at a segment's ends hold the neighbouring chunks'
// keys, which are masked off. A warp takes the ticket of the unit after next and loads the next
// unit's segments before it counts the current one, so that neither latency stands between units.
// The TALLY_PARTITION_* defines exist for measurements only; the defaults are what runs.
#ifndef TALLY_PARTITION_UNROLL
#define TALLY_PARTITION_UNROLL 4
#endif
// 16,384 keys a unit (v25, H100, two alternated runs against 8,192 and 4,096): 2.5% faster at 1M
// bins uniform, 1% at 16M Zipf, the same elsewhere; 4,096 1.5% slower at 16M Zipf.
#ifndef TALLY_PARTITION_UNIT_KEYS
#define TALLY_PARTITION_UNIT_KEYS 16384
#endif
// TALLY_PARTITION_SEGMENT_WEIGHT (a measurement) overrides the plan's `segment_weight`.
constexpr int BINS_WARPS = BINS_THREADS / 32;
constexpr int BINS_UNROLL = TALLY_PARTITION_UNROLL;   // vectors in flight per lane before their atomics
constexpr u32 UNIT_KEYS = TALLY_PARTITION_UNIT_KEYS;  // keys per unit, about, where segments are long
// What a unit's segments cost beside their keys, per segment, in keys (`segment_weight`, from the
// plan's policy): the split of the work between blocks counts it, so that chunks of many short
// segments get blocks enough.
TALLY_DEVICE u32 segment_weight(const PartitionParams& p) {
#ifdef TALLY_PARTITION_SEGMENT_WEIGHT
  return TALLY_PARTITION_SEGMENT_WEIGHT;
#else
  return p.segment_weight;
#endif
}

struct UnitSegments {
  u32 first_flat[32];  // the segment's first vector in the unit's list
  u32 shift[32];       // added to a vector's index in the list: its index in the keys
  u32 begin[32];       // the segment's positions in the keys: [begin, end)
  u32 end[32];
};

// The 16-bit keys of one 16-byte vector at positions [at, at + 8) whose positions lie in
// [from, to), each counted in hist.
TALLY_DEVICE void count_vector(u32* hist, const uint4& q, u32 at, u32 from, u32 to) {
  const u32 word[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
  for (int k = 0; k < KEYS_PER_VEC; ++k) {
    const u32 pos = at + k;
    if (pos >= from && pos < to) atomicAdd(hist + ((word[k / 2] >> (16 * (k & 1))) & 0xffffu), 1u);
  }
}

// Part `part` of `parts` of the list of vectors of one chunk's segments in tiles 32 * group +
// lane; `segment` is the lane's (start | count << 16, 0 past the last tile).
TALLY_DEVICE void count_unit(const PartitionParams& p, u32* hist, UnitSegments& s, u32 segment, u32 group, u32 part,
                             u32 parts) {
  const u32 lane = lane_id();
  const u32 begin = (group * 32 + lane) * TILE_ITEMS + (segment & 0xffffu), end = begin + (segment >> 16);
  const u32 first_vec = begin / KEYS_PER_VEC;
  const u32 nvec = end > begin ? (end - 1) / KEYS_PER_VEC - first_vec + 1 : 0;
  const u32 inclusive = warp_inclusive_scan(nvec, [](u32 a, u32 b) { return a + b; });
  const u32 list = __shfl_sync(0xffffffffu, inclusive, 31);
  s.first_flat[lane] = inclusive - nvec;
  s.shift[lane] = first_vec - (inclusive - nvec);
  s.begin[lane] = begin;
  s.end[lane] = end;
  __syncwarp();
  const u32 lo = (u32)((u64)list * part / parts), hi = (u32)((u64)list * (part + 1) / parts);
  const uint4* vecs = reinterpret_cast<const uint4*>(p.keys);
  // The segment of a vector v is the last j with first_flat[j] <= v (an empty segment shares its
  // first_flat with the next), found by a binary search: five steps, where a walk from the last
  // vector's segment passes every empty or short segment between (v24, against the walk: 9%
  // faster at 1M bins Zipf, 3% at 16M Zipf, 4% at 16M uniform, within 1% at 1M uniform).
  auto segment_of = [&](u32 v) {
    u32 j = 0;
#pragma unroll
    for (u32 step = 16; step > 0; step >>= 1)
      if (s.first_flat[j + step] <= v) j += step;
    return j;
  };
  for (u32 v0 = lo + lane; v0 < hi; v0 += 32 * BINS_UNROLL) {
    uint4 q[BINS_UNROLL];
    u32 at[BINS_UNROLL], from[BINS_UNROLL], to[BINS_UNROLL];
#pragma unroll
    for (int u = 0; u < BINS_UNROLL; ++u) {
      const u32 v = v0 + 32 * u;
      from[u] = to[u] = at[u] = 0;
      q[u] = make_uint4(0, 0, 0, 0);
      if (v < hi) {
        const u32 seg = segment_of(v);
        const u32 vec = v + s.shift[seg];
        q[u] = __ldg(vecs + vec);
        at[u] = vec * KEYS_PER_VEC;
        from[u] = s.begin[seg];
        to[u] = s.end[seg];
      }
    }
#pragma unroll
    for (int u = 0; u < BINS_UNROLL; ++u) count_vector(hist, q[u], at[u], from[u], to[u]);
  }
  __syncwarp();
}

extern "C" __global__ void __launch_bounds__(BINS_THREADS) tally_partition_bins(const PartitionParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ UnitSegments segments[BINS_WARPS];
  __shared__ u32 taken;
  u32* hist = reinterpret_cast<u32*>(smem_raw);  // 2^chunk_shift counters
  UnitSegments& s = segments[threadIdx.x / 32];
  const u32 lane = lane_id();
  const u32 tiles = (u32)((p.n + TILE_ITEMS - 1) / TILE_ITEMS);
  const u32 groups = (tiles + 31) / 32;
  // The work of chunks [0, c): their keys, and their segments to look at.
  const u64 weight = segment_weight(p);
  auto work = [&](u32 c) { return (u64)p.chunk_start[c] + (u64)c * groups * 32 * weight; };
  const u64 total = work(p.chunks);
  // The block's even share of the work picks its chunks; within a chunk the blocks on it share
  // the units through the chunk's queue.
  const u64 lo = blockIdx.x * total / gridDim.x, hi = (blockIdx.x + 1) * total / gridDim.x;
  if (lo >= hi) return;
  // The chunk holding lo: the last c with work(c) <= lo.
  u32 first = 0, last = p.chunks - 1;
  while (first < last) {
    const u32 mid = (first + last + 1) / 2;
    if (work(mid) <= lo) first = mid;
    else last = mid - 1;
  }
  for (u32 c = first; c < p.chunks && work(c) < hi; ++c) {
    const u32 keys = p.chunk_start[c + 1] - p.chunk_start[c];
    if (keys == 0) continue;
    // Parts enough that a unit holds about UNIT_KEYS keys; every block computes the same.
    const u32 parts = (u32)max((u64)1, ((u64)keys + (u64)groups * UNIT_KEYS - 1) / ((u64)groups * UNIT_KEYS));
    const u32 units = groups * parts;
    // Other blocks may have taken every unit already: nothing to count, nothing to flush. One
    // thread looks, so that the whole block skips or none of it.
    if (threadIdx.x == 0) taken = *reinterpret_cast<volatile u32*>(p.chunk_queue + c) >= units;
    __syncthreads();
    const bool skip = taken;
    __syncthreads();
    if (skip) continue;
    const u32 key0 = c << p.chunk_shift;
    const u32 used = min(1u << p.chunk_shift, p.width - key0);
    const u32* column = p.segments + (u64)c * tiles;
    block_fill<BINS_THREADS>(hist, used, 0u);
    __syncthreads();
    // Lane 0 takes the tickets; every lane loads its own tile's segment.
    auto ticket = [&]() { return lane == 0 ? atomicAdd(p.chunk_queue + c, 1u) : 0u; };
    auto segment_of = [&](u32 unit) {
      const u32 t = unit / parts * 32 + lane;
      return unit < units && t < tiles ? column[t] : 0u;
    };
    u32 unit = __shfl_sync(0xffffffffu, ticket(), 0);
    u32 next = __shfl_sync(0xffffffffu, ticket(), 0);
    u32 segment = segment_of(unit);
    while (unit < units) {
      const u32 after = ticket();
      const u32 next_segment = segment_of(next);
      count_unit(p, hist, s, segment, unit / parts, unit % parts, parts);
      unit = next;
      next = __shfl_sync(0xffffffffu, after, 0);
      segment = next_segment;
    }
    __syncthreads();
    for (u32 b = threadIdx.x; b < used; b += BINS_THREADS)
      if (hist[b]) atomicAdd(p.counts + key0 + b, (Counter)hist[b]);
    __syncthreads();
  }
}
