// Histogram kernels. One compilation = one specialisation, chosen by defines:
//   TALLY_SAMPLE    sample type (C++ spelling)
//   TALLY_BINNING   the binning mode of binning.cuh (TABLE8, INTEGER, FLOAT, EDGES, INTEGER32)
//   TALLY_CHANNELS  interleaved channel count (compile time, so `i % C` is cheap)
//   TALLY_COUNTER   global counter type: u32, or u64 once the input reaches 2^32 samples
//   TALLY_STRATEGY  GLOBAL_ATOMIC, BLOCK_SHARED, WARP_PRIVATE, WARP_AGGREGATED, CLUSTER_SHARED
//                   (sm_90+), GLOBAL_L2 (global atomics on an L2-sized range of bins per pass)
//   TALLY_NARROW    block and cluster shared: packed 16-bit shared counters that spill before they wrap
//   TALLY_HOT_KEY   block shared narrow: the host's dominant key (p.hot_key) has a 32-bit counter
//   TALLY_IDENTITY  integer binning with range == bins: the bin is the offset itself
//   TALLY_ALL_IN_RANGE  32-bit integer binning where every value of the sample type is in range
//   TALLY_BLOCK_THREADS, TALLY_VECS (16-byte loads per thread per tile)
// The binning rule is the one stated in src/histogram/binning.rs; keep them in step. The values
// of the codes are the names of codes.cuh, generated from the Rust side.
#include "common.cuh"
#include "warp.cuh"
#include "block.cuh"
#include "cluster.cuh"

#ifndef TALLY_SAMPLE
#error "TALLY_SAMPLE must be defined"
#endif
#ifndef TALLY_BINNING
#error "TALLY_BINNING must be defined"
#endif
#ifndef TALLY_NARROW
#define TALLY_NARROW 0
#endif
#ifndef TALLY_HOT_KEY
#define TALLY_HOT_KEY 0
#endif
#if TALLY_STRATEGY == TALLY_STRATEGY_CLUSTER_SHARED && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 900)
#error "the cluster-shared strategy needs thread-block clusters (sm_90 or newer)"
#endif
typedef TALLY_SAMPLE Sample;
#include "binning.cuh"
typedef TALLY_COUNTER Counter;
constexpr int BLOCK_THREADS = TALLY_BLOCK_THREADS;
constexpr int WARPS = BLOCK_THREADS / 32;
constexpr int CHANNELS = TALLY_CHANNELS;
constexpr int VECS = TALLY_VECS;
constexpr int VEC_ITEMS = VecItems<Sample>::value;
constexpr int TILE_ITEMS = BLOCK_THREADS * VECS * VEC_ITEMS;
constexpr int MAX_CHANNELS = 16;

// Tuning knob, overridable with -D TALLY_MIN_BLOCKS for experiments (TALLY_NVRTC_OPTIONS): the
// register budget (MIN_BLOCKS, below).
// Measured on the H200 (docs/PERF.md, v3): a cap that fits 2048
// threads made the integer kernels spill around their out-of-line slow-path call (i32 71% of
// read bandwidth, against 88% uncapped), while the float-rule kernels were no worse capped (56%
// against 53-62%). So: the cap only for the float rule.

// The layout is checked against `HistParams` in src/histogram/cuda.rs (static_asserts generated
// from the Rust side).
struct HistParams {
  const Sample* samples;
  u64 n;
  Counter* counts;        // nslots * bins
  u64* outliers;          // nslots * 3: below, above, nan
  AxisParams axis;        // the binning (binning.cuh)
  u32 nslots;
  u32 edges_in_shared;
  int slot[MAX_CHANNELS];  // interleaved channel -> selected slot, or -1
  // Strategies 4 and 5 count one range of keys per launch (a pass) when the histogram is larger
  // than what they hold at once.
  u32 slice_lo;           // first key of this pass
  u32 slice_width;        // keys in this pass
  u32 first_pass;         // samples in no bin are counted in the first pass only
  u32 aggregate;          // strategies 4, 5: one atomic per distinct key per warp
  u32 cluster_shift;      // strategy 4: log2(blocks per cluster)
  u32 rank_counters;      // strategy 4: counters each block of the cluster holds (even)
  int hot_key;            // strategy 1 narrow: a key counted in a 32-bit counter of its own, or -1
  // Small plans keep two sets of counters and count into one while zeroing the other for their
  // next launch, which then needs no memset (one launch a call); null where a plan has one set.
  Counter* clear_counts;  // the other set's nslots * bins counters
  u64* clear_outliers;    // its nslots * 3 outlier counters
  // One-pass plans read by the host: the last block to finish posts the outlier counters to
  // the host (`post_words`, block.cuh), and the counters after them where they are few; null:
  // no post.
  u32* ticket;            // zero between launches (the last block resets it)
  u64* post;
  u64 sequence;
  u32 post_counts;        // nonzero: the counters (every key: one pass) follow the outliers in the post
};


// ---- where a binned sample is counted (the strategies) -----------------------------------------

// Adds `delta` (wrapping, so -1 takes one back) to the global counter of private key `key`: a bin,
// an outlier count, or nothing for the trash key and padding.
__device__ TALLY_SLOW_PATH void spill(Counter* counts, u64* outliers, u32 width, u32 outlier_keys, u32 key, long long delta) {
  if (key < width) atomicAdd(counts + key, (Counter)delta);
  else if (key - width < outlier_keys) atomicAdd(outliers + (key - width), (u64)delta);
}

// A packed 16-bit field wrapped (block.cuh): 65,536 counts move to the wide counter of `key`, and
// the carry a low field sent to `partner` is taken back.
__device__ TALLY_SLOW_PATH void narrow_wrapped(Counter* counts, u64* outliers, u32 width, u32 outlier_keys,
                                               u32 key, u32 partner, bool low, u32 old_word) {
  spill(counts, outliers, width, outlier_keys, key, 65536);
  if (low) {
    spill(counts, outliers, width, outlier_keys, partner, -1);
    if (narrow16_partner_wrapped(old_word)) spill(counts, outliers, width, outlier_keys, partner, 65536);
  }
}

#if TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_ATOMIC
struct Sink {  // every sample one global atomic
  Counter* global;
  TALLY_DEVICE void add(int key) { if (key >= 0) atomicAdd(global + key, (Counter)1); }
};
#elif TALLY_STRATEGY == TALLY_STRATEGY_BLOCK_SHARED && TALLY_NARROW
// One private histogram per block in packed 16-bit counters: twice the bins of the 32-bit copy.
#define TALLY_WORD_RUNS 1
constexpr u64 NO_WORD = 1ull << 32;
struct Sink {
  u32* shared;  // words
  Counter* counts;
  u64* outliers;
  u32 width, outlier_keys;
  // The dominant key of skewed input (host's probe) takes a plain 32-bit atomic, which the
  // hardware combines across the warp; the 16-bit path needs each old value.
  int hot_key;
  u32* hot_count;
  TALLY_DEVICE void add(int key) { add(key, 1u); }
  TALLY_DEVICE void add(int key, u32 count) {
    if (!count) return;
#if TALLY_HOT_KEY
    if (key == hot_key) {
      atomicAdd(hot_count, count);
      return;
    }
#endif
    const u32 k = (u32)key;
    const u32 old = atomicAdd(shared + (k >> 1), count << narrow16_shift(k));
    if (narrow16_wrapped(old, k, count)) narrow_wrapped(counts, outliers, width, outlier_keys, k, k + 1, (k & 1) == 0, old);
  }
};
#elif TALLY_STRATEGY == TALLY_STRATEGY_BLOCK_SHARED || TALLY_STRATEGY == TALLY_STRATEGY_WARP_PRIVATE
// One private histogram per block (1) or per warp (2). Shared atomics on Hopper already combine
// a warp's updates to one address, so each sample goes straight to its atomic; merging runs per
// thread first cost 10% on 90%-skewed i32 data (divergent flushes, docs/PERF.md v4). Only 8-bit
// samples, four to a word, take a word-sized shortcut (see the tile loop).
#define TALLY_WORD_RUNS 1
constexpr u64 NO_WORD = 1ull << 32;  // never equal to a 32-bit word
struct Sink {
  u32* shared;  // the block's copy, or this warp's (private keys: never negative)
  TALLY_DEVICE void add(int key) { atomicAdd(shared + key, 1u); }
  TALLY_DEVICE void add(int key, u32 count) { if (count) atomicAdd(shared + key, count); }
};
#elif TALLY_STRATEGY == TALLY_STRATEGY_WARP_AGGREGATED
struct Sink {  // one shared atomic per distinct key per warp
  u32* shared;
  TALLY_DEVICE void add(int key) { warp_aggregated_increment(shared, key); }
};
#elif TALLY_STRATEGY == TALLY_STRATEGY_CLUSTER_SHARED || TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_L2
// Strategies 4 and 5 count keys [lo, lo + slice) of this pass and pass over the rest. With
// `aggregate`, the lanes of a warp holding one key elect a leader that adds for all of them.
struct SliceFilter {
  u32 lo, slice;
  bool aggregate;
  // Whether this lane adds, and how much, for global key `key` (< 0: none). Warp-wide.
  TALLY_DEVICE u32 count(int key, u32& r) const {
    r = (u32)key - lo;
    const bool hit = key >= 0 && r < slice;
    if (!aggregate) return hit;
    const u32 peers = __match_any_sync(0xffffffffu, hit ? r : 0xffffffffu);
    return hit && (int)lane_id() == __ffs(peers) - 1 ? __popc(peers) : 0u;
  }
};
#if TALLY_STRATEGY == TALLY_STRATEGY_CLUSTER_SHARED
// One histogram spread over the shared memory of a cluster of blocks: key r of the pass lives in
// block r % C at r / C, so that neighbouring (often equally hot) bins land on different blocks.
struct Sink {
  SliceFilter filter;
  u32 base;  // shared-window address of this block's counters (the same offset in every block)
  u32* local;  // the same counters, this block's own, through the native shared-memory path
  u32 shift, mask, my_rank;
  Counter* counts;  // of this pass: counts + lo
  // Distributed shared-memory atomics ran at about 110 G/s on the whole H200 even when they hit
  // the issuing block's own memory (docs/PERF.md, v9), a tenth of native shared atomics: keys
  // this block holds take the native path.
  TALLY_DEVICE void add(int key) {
    u32 r;
    const u32 c = filter.count(key, r);
    if (!c) return;
    const u32 rank = r & mask, off = r >> shift;
#if TALLY_NARROW
    const u32 word = off >> 1, inc = c << narrow16_shift(off);
    const u32 old = rank == my_rank ? atomicAdd(local + word, inc) : cluster_atomic_add(cluster_map(base + word * 4, rank), inc);
    if (narrow16_wrapped(old, off, c))
      narrow_wrapped(counts, nullptr, filter.slice, 0, r, r + (1u << shift), (off & 1) == 0, old);
#else
    if (rank == my_rank) atomicAdd(local + off, c);
    else cluster_red_add(cluster_map(base + off * 4, rank), c);
#endif
  }
};
#else
// Global atomics on one L2-sized range of bins per pass, behind a small per-block cache of hot
// bins in shared memory: a key claims an empty slot the first time it is seen (its hash's slot or
// the next one) and is counted there from then on; a key whose two slots others hold goes to
// global memory. Frequent keys are the likeliest first claimants, so skewed data is counted
// mostly in shared memory, and uniform data pays two shared loads per sample on top of its
// global atomic. The second slot matters: a hot key that lost its only slot to another hot key
// sent millions of atomics to one global address (Zipf, 1M bins: 3.9 ms, docs/PERF.md v9).
#ifndef TALLY_HOT_SLOTS
#error "TALLY_HOT_SLOTS must be defined for global-l2"
#endif
constexpr u32 HOT_SLOTS = TALLY_HOT_SLOTS;
constexpr u32 NO_HOT_KEY = 0xffffffffu;  // slice keys are < 2^31
TALLY_DEVICE u32 hot_slot(u32 r) { return (r * 2654435761u) >> (32 - __popc(HOT_SLOTS - 1)); }

struct Sink {
  SliceFilter filter;
  Counter* global;
  u32* hot_keys;
  u32* hot_counts;
  TALLY_DEVICE void add(int key) {
    u32 r;
    const u32 c = filter.count(key, r);
    if (!c) return;
    const u32 first = hot_slot(r);
#pragma unroll
    for (u32 probe = 0; probe < 2; ++probe) {
      // Slots are never given back, so a key is in its first slot or, if another key holds
      // that one, in the second: never in both.
      const u32 slot = (first + probe) & (HOT_SLOTS - 1);
      u32 held = hot_keys[slot];
      if (held == NO_HOT_KEY) {
        held = atomicCAS(hot_keys + slot, NO_HOT_KEY, r);
        if (held == NO_HOT_KEY) held = r;  // claimed it
      }
      if (held == r) {
        atomicAdd(hot_counts + slot, c);
        return;
      }
    }
    atomicAdd(global + key, (Counter)c);
  }
};
#endif
#else
#error "unknown TALLY_STRATEGY"
#endif

// Samples in no bin, for the global-atomic strategy (the private ones keep them in their shared
// copy). With one channel each thread counts them in registers (a stream of NaNs must not
// become a stream of atomics on one global address); with several, in shared memory.
struct Outliers {
  u32 below, above, nan;
  u32* shared;  // nslots * 3 (several channels only)
  TALLY_DEVICE void add(int slot, int code) {
    if (CHANNELS == 1) {
      below += code == BELOW;
      above += code == ABOVE;
      nan += code == NOT_A_NUMBER;
    } else {
      atomicAdd(shared + slot * 3 + (code == BELOW ? 0 : code == ABOVE ? 1 : 2), 1u);
    }
  }
};

// Global-atomic strategy: the key of the sample at global index i, slot * bins + bin, or -1
// (outlier or unselected channel).
TALLY_DEVICE int key_of(const HistParams& p, const Binner& binner, Outliers& out, Sample x, u64 i) {
  int slot = 0;
  if (CHANNELS > 1) {
    slot = p.slot[(u32)(i % CHANNELS)];
    if (slot < 0) return -1;
  }
  const int b = binner(x);
  if (b < 0) {
    out.add(slot, b);
    return -1;
  }
  return slot * (int)p.axis.bins + b;
}

// The private strategies count everything in their shared copy, so that the hot loop has no
// branch: keys [0, width) are bins, [width, width + 3 * nslots) the below / above / NaN counts
// of each slot, and width + 3 * nslots a trash counter for samples of unselected channels and
// for lanes past the end.
TALLY_DEVICE int private_key(const HistParams& p, const Binner& binner, Sample x, u64 i, u32 width) {
#if TALLY_BINNING == TALLY_BINNING_INTEGER32 && TALLY_ALL_IN_RANGE && TALLY_CHANNELS == 1
  return binner(x);  // never an outlier: the bin is the key
#endif
  int slot = 0;
  if (CHANNELS > 1) slot = p.slot[(u32)(i % CHANNELS)];
  const int b = binner(x);
  int key = b >= 0 ? slot * (int)p.axis.bins + b : (int)width + slot * 3 + (-1 - b);
  if (CHANNELS > 1 && slot < 0) key = (int)(width + 3 * p.nslots);
  return key;
}

#if TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_ATOMIC || (TALLY_STRATEGY == TALLY_STRATEGY_CLUSTER_SHARED || TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_L2)
#define TALLY_KEY(x, i) key_of(p, binner, out, (x), (i))
#define TALLY_NO_KEY (-1)
#else
#define TALLY_KEY(x, i) private_key(p, binner, (x), (i), width)
#define TALLY_NO_KEY ((int)(width + 3 * p.nslots))
#endif

// f32 samples (and 16-bit floats) binned by the float rule, one channel, into a sink whose adds
// are per thread (a vector may leave the others' warp-wide adds): the
// tile loop bins a vector by `estimate` where it can (docs/PERF.md v23: the rule's branches, and
// the spills around its out-of-line call, cost f32 a third more instructions than i32).
#if TALLY_HIST_ESTIMATE && TALLY_BINNING == TALLY_BINNING_FLOAT && TALLY_CHANNELS == 1 && \
    (TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_ATOMIC || TALLY_STRATEGY == TALLY_STRATEGY_BLOCK_SHARED || \
     TALLY_STRATEGY == TALLY_STRATEGY_WARP_PRIVATE)
#define TALLY_FLOAT_ESTIMATE 1
constexpr bool FLOAT_ESTIMATE = IsFloat32<Sample>::value;  // f64 samples keep their own estimate
#else
#define TALLY_FLOAT_ESTIMATE 0
#endif

// The register budget (see the note at the top): the float rule's kernels are capped to fit
// 2048 threads, except those that bin by `estimate`, capped to fit 1536 (40 registers at 256
// threads, as many threads as the integer kernels run: capped at 32, ptxas spilled 20 bytes
// around the rule's call in the vector loop; at 1024 threads that is one block of 64).
#ifdef TALLY_MIN_BLOCKS
constexpr int MIN_BLOCKS = TALLY_MIN_BLOCKS;
#elif TALLY_FLOAT_ESTIMATE
constexpr int MIN_BLOCKS = FLOAT_ESTIMATE ? (1536 / BLOCK_THREADS > 0 ? 1536 / BLOCK_THREADS : 1) : 2048 / BLOCK_THREADS;
#else
constexpr int MIN_BLOCKS = TALLY_BINNING == TALLY_BINNING_FLOAT ? 2048 / BLOCK_THREADS : 1;
#endif

// ---- the agent: a block's walk over its tiles ---------------------------------------------------

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS)
tally_histogram(const HistParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Shared layout: [edges f64][table i32 x 256][outliers u32 x 3*slots][private counters u32]
  unsigned char* cursor = smem_raw;
  const u32 width = p.nslots * p.axis.bins;

  Binner binner;
#if TALLY_BINNING == TALLY_BINNING_TABLE8
  int* table = reinterpret_cast<int*>(cursor);
  cursor += 256 * sizeof(int);
  for (u32 i = threadIdx.x; i < 256; i += BLOCK_THREADS) table[i] = p.axis.lut[i];
  setup(binner, p.axis, table);
#elif TALLY_BINNING == TALLY_BINNING_EDGES
  setup(binner, p.axis, nullptr);
  if (p.edges_in_shared) {
    double* e = reinterpret_cast<double*>(cursor);
    cursor += ((p.axis.num_edges * sizeof(double) + 15) / 16) * 16;
    for (u32 i = threadIdx.x; i < p.axis.num_edges; i += BLOCK_THREADS) e[i] = p.axis.edges[i];
    binner.edges = e;
  }
#else
  setup(binner, p.axis, nullptr);
#endif

  Outliers out;
  out.below = out.above = out.nan = 0;
  out.shared = reinterpret_cast<u32*>(cursor);
  cursor += MAX_CHANNELS * 3 * sizeof(u32);
  block_fill<BLOCK_THREADS>(out.shared, MAX_CHANNELS * 3, 0u);

  Sink sink;
#if TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_ATOMIC
  sink.global = p.counts;
#elif TALLY_STRATEGY == TALLY_STRATEGY_CLUSTER_SHARED || TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_L2
  sink.filter.lo = p.slice_lo;
  sink.filter.slice = p.slice_width;
  sink.filter.aggregate = p.aggregate != 0;
#if TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_L2
  sink.global = p.counts;
  sink.hot_keys = reinterpret_cast<u32*>(cursor);
  sink.hot_counts = sink.hot_keys + HOT_SLOTS;
  block_fill<BLOCK_THREADS>(sink.hot_keys, HOT_SLOTS, NO_HOT_KEY);
  block_fill<BLOCK_THREADS>(sink.hot_counts, HOT_SLOTS, 0u);
#else
  // This block's share of the cluster's histogram, zeroed in every block before any block adds.
  u32* local = reinterpret_cast<u32*>(cursor);
  const u32 local_words = TALLY_NARROW ? p.rank_counters / 2 : p.rank_counters;
  block_fill<BLOCK_THREADS>(local, local_words, 0u);
  sink.base = shared_address(local);
  sink.local = local;
  sink.my_rank = cluster_rank();
  sink.shift = p.cluster_shift;
  sink.mask = (1u << p.cluster_shift) - 1;
  sink.counts = p.counts + p.slice_lo;
  cluster_sync();
#endif
#else
  u32* privates = reinterpret_cast<u32*>(cursor);
  const u32 copies = TALLY_STRATEGY == TALLY_STRATEGY_WARP_PRIVATE ? WARPS : 1;
  const u32 pwidth = width + 3 * p.nslots + 1;  // bins, outliers, trash
#if TALLY_NARROW
  __shared__ u32 hot_count;
  if (threadIdx.x == 0) hot_count = 0;
  sink.hot_key = p.hot_key;
  sink.hot_count = &hot_count;
  block_fill<BLOCK_THREADS>(privates, (pwidth + 1) / 2, 0u);
  sink.counts = p.counts;
  sink.outliers = p.outliers;
  sink.width = width;
  sink.outlier_keys = 3 * p.nslots;
#else
  block_fill<BLOCK_THREADS>(privates, copies * pwidth, 0u);
#endif
  sink.shared = TALLY_STRATEGY == TALLY_STRATEGY_WARP_PRIVATE ? privates + warp_id() * pwidth : privates;
#endif
  __syncthreads();

  // Full tiles: VECS independent 16-byte loads in flight per thread before any is used.
  const bool aligned = (reinterpret_cast<size_t>(p.samples) & 15) == 0;
  const u64 full_tiles = aligned ? p.n / TILE_ITEMS : 0;
  for (u64 tile = blockIdx.x; tile < full_tiles; tile += gridDim.x) {
    const u64 first_vec = tile * (TILE_ITEMS / VEC_ITEMS);
    Vec16<Sample> v[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) v[k] = load_vec16(p.samples, first_vec + k * BLOCK_THREADS + threadIdx.x);
#if defined(TALLY_WORD_RUNS) && TALLY_CHANNELS == 1
    // 8-bit samples: a word of four equal samples, equal to the last such word, is four more
    // of that word's bin, counted in a register for one compare. Skewed 8-bit data is mostly
    // such words; elsewhere it costs one compare per four samples.
    u64 run_word = NO_WORD;
    int run_key = -1;
    u32 run_count = 0;
#endif
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      const u64 base = (first_vec + k * BLOCK_THREADS + threadIdx.x) * VEC_ITEMS;
#if defined(TALLY_WORD_RUNS) && TALLY_CHANNELS == 1
      if (sizeof(Sample) == 1) {
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          const u32 word = reinterpret_cast<const u32*>(&v[k].raw)[w];
          if ((u64)word == run_word) {
            run_count += 4;
            continue;
          }
          int key = -1;
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            // One byte permute per sample (indexing the union makes shifts and masks).
            const Sample x = (Sample)__byte_perm(word, 0, 0x4440 | j);
            key = TALLY_KEY(x, base + w * 4 + j);
            sink.add(key);
          }
          if (__byte_perm(word, 0, 0) == word && key >= 0) {
            sink.add(run_key, run_count);
            run_word = word;
            run_key = key;
            run_count = 0;
          }
        }
        continue;
      }
#endif
#if TALLY_FLOAT_ESTIMATE
      if constexpr (FLOAT_ESTIMATE) {
        // f32 (and 16-bit floats, as their f32) by the float rule: a vector whose samples the estimate bins is counted straight
        // away (its bins are its keys); any other takes the whole rule, sample by sample.
        bool sure = true;
        int bin[VEC_ITEMS];
#pragma unroll
        for (int j = 0; j < VEC_ITEMS; ++j) sure &= binner.estimate((float)v[k].item[j], bin[j]);
        if (sure) {
#pragma unroll
          for (int j = 0; j < VEC_ITEMS; ++j) sink.add(bin[j]);
          continue;
        }
      }
#endif
#pragma unroll
      for (int j = 0; j < VEC_ITEMS; ++j) sink.add(TALLY_KEY(v[k].item[j], base + j));
    }
#if defined(TALLY_WORD_RUNS) && TALLY_CHANNELS == 1
    if (run_key >= 0) sink.add(run_key, run_count);
#endif
  }

  // The rest (and everything, if the pointer is not 16-byte aligned): one sample per lane,
  // whole warps together so that the warp-level sink always sees all 32 lanes.
  const u64 rest = full_tiles * TILE_ITEMS;
  const u64 stride = (u64)gridDim.x * BLOCK_THREADS;
  for (u64 base = rest + (u64)blockIdx.x * BLOCK_THREADS + warp_id() * 32; base < p.n; base += stride) {
    const u64 i = base + lane_id();
    int key = TALLY_NO_KEY;
    if (i < p.n) key = TALLY_KEY(p.samples[i], i);
    sink.add(key);
  }

  // The other set of counters, for the next launch: the first pass zeroes it (nothing of this
  // launch reads or adds to it). Here rather than before the tiles, where it made ptxas spill
  // in the float rule's kernels.
  if (p.clear_counts && p.first_pass) {
    const u32 stride = gridDim.x * BLOCK_THREADS;
    for (u32 i = blockIdx.x * BLOCK_THREADS + threadIdx.x; i < width + 3 * p.nslots; i += stride) {
      if (i < width) p.clear_counts[i] = 0;
      else p.clear_outliers[i - width] = 0;
    }
  }
  __syncthreads();
#if TALLY_STRATEGY == TALLY_STRATEGY_CLUSTER_SHARED
  // Every block's remote adds have landed once all have arrived; then each merges its share.
  cluster_sync();
  {
    const u32 rank = cluster_rank();
    for (u32 off = threadIdx.x; off < p.rank_counters; off += BLOCK_THREADS) {
      const u32 r = (off << p.cluster_shift) + rank;
      const u32 v = TALLY_NARROW ? narrow16_field(local, off) : local[off];
      if (r < p.slice_width && v) atomicAdd(sink.counts + r, (Counter)v);
    }
  }
#endif
#if TALLY_STRATEGY == TALLY_STRATEGY_GLOBAL_L2
  for (u32 slot = threadIdx.x; slot < HOT_SLOTS; slot += BLOCK_THREADS) {
    const u32 r = sink.hot_keys[slot], v = sink.hot_counts[slot];
    if (r != NO_HOT_KEY && v) atomicAdd(p.counts + p.slice_lo + r, (Counter)v);
  }
#endif
#if TALLY_STRATEGY == TALLY_STRATEGY_BLOCK_SHARED && TALLY_NARROW
  // The hot key's count joins its 16-bit field's (a bin or an outlier count).
  if (threadIdx.x == 0 && p.hot_key >= 0 && hot_count)
    spill(p.counts, p.outliers, width, 3 * p.nslots, (u32)p.hot_key, hot_count);
  for (u32 i = threadIdx.x; i < width; i += BLOCK_THREADS) {
    const u32 v = narrow16_field(privates, i);
    if (v) atomicAdd(p.counts + i, (Counter)v);
  }
  for (u32 i = threadIdx.x; i < 3 * p.nslots; i += BLOCK_THREADS) {
    const u32 v = narrow16_field(privates, width + i);
    if (v) atomicAdd(p.outliers + i, (u64)v);
  }
#elif (TALLY_STRATEGY == TALLY_STRATEGY_BLOCK_SHARED || TALLY_STRATEGY == TALLY_STRATEGY_WARP_PRIVATE || TALLY_STRATEGY == TALLY_STRATEGY_WARP_AGGREGATED)
  block_merge_private<BLOCK_THREADS>(privates, copies, width, pwidth, p.counts);
  for (u32 i = threadIdx.x; i < 3 * p.nslots; i += BLOCK_THREADS) {
    u64 sum = 0;
    for (u32 c = 0; c < copies; ++c) sum += privates[c * pwidth + width + i];
    if (sum) atomicAdd(p.outliers + i, sum);
  }
#else
  if (!p.first_pass) return;  // a later pass of 4 or 5: the first one counted these
  if (CHANNELS == 1) {
    __shared__ u64 scratch[WARPS];
    const u64 below = block_reduce_sum<BLOCK_THREADS>((u64)out.below, scratch);
    const u64 above = block_reduce_sum<BLOCK_THREADS>((u64)out.above, scratch);
    const u64 nan = block_reduce_sum<BLOCK_THREADS>((u64)out.nan, scratch);
    if (threadIdx.x == 0) {
      if (below) atomicAdd(p.outliers + 0, below);
      if (above) atomicAdd(p.outliers + 1, above);
      if (nan) atomicAdd(p.outliers + 2, nan);
    }
  } else {
    for (u32 i = threadIdx.x; i < p.nslots * 3; i += BLOCK_THREADS)
      if (out.shared[i]) atomicAdd(p.outliers + i, (u64)out.shared[i]);
  }
#endif
  // The host learns the outliers (and that the counts are done) from the last block's post,
  // as soon as it is stored, rather than from a copy queued after the grid retires (docs/
  // PERF.md, v29). The block's adds are ordered before its ticket by the barrier and thread
  // 0's fence (cumulative), as a grid-wide barrier orders them; one fence a block, not one a
  // thread.
  if (p.post != nullptr) {
    __shared__ u32 last;
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();  // release: the block's adds, before its ticket
      last = atomicAdd(p.ticket, 1u) == gridDim.x - 1;
      if (last) __threadfence();  // acquire: every block's adds, before the reads below
    }
    __syncthreads();
    if (!last) return;
    if (threadIdx.x == 0) *p.ticket = 0;
    // Last: the host may go on once the post is seen (nothing is stored after it). Small
    // histograms post their counters too, so that the host reads them without a copy queued
    // after the grid retires (one launch and one poll a call).
    if (warp_id() == 0) {
      __syncwarp();
      post_words(p.post, 0, p.outliers, 3 * p.nslots);
      if (p.post_counts) post_words(p.post, 3 * p.nslots * 8, p.counts, p.slice_width);  // one pass: every key
      post_sequence(p.post, p.sequence);
    }
  }
}

// A strided sample of the input, for `auto`'s skew probe: dst[j] = src[j * n / k].
// The layout is checked against `ProbeParams` in src/histogram/cuda.rs.
struct ProbeParams {
  const Sample* samples;
  u64 n;
  Sample* probe;  // k samples: sample j * n / k for j < k
  u32 k;
};

extern "C" __global__ void tally_histogram_probe(const ProbeParams p) {
  const u32 j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < p.k) p.probe[j] = p.samples[(u64)j * p.n / p.k];
}
