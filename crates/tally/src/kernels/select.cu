// Stream compaction: select (stable or unordered), the indices of what passes, select by a flag
// array, partition and count_if. One compilation = one specialisation, chosen by defines:
//   TALLY_ELEM         the element type (C++ spelling)
//   TALLY_SELECT       STABLE, UNORDERED, INDICES, FLAGGED, PARTITION, COUNT (codes.cuh)
//   TALLY_PREDICATE    a C++ expression of `x` (not for FLAGGED): written by tally from the
//                      parsed predicate (canonical, so equal predicates share a cached image),
//                      or a caller's own
//   TALLY_BLOCK_THREADS, TALLY_VECS (16-byte loads per thread and tile), TALLY_MIN_BLOCKS
// A tile's kept items are staged in dynamic shared memory (TILE outputs, `stage_bytes` in
// src/select/policy.rs), so that tiles may outgrow the 48 KiB of static shared memory.
// A tile is VECS rows; in each row thread t holds the 16 bytes at t (as scan.cu loads them),
// so the input is read once with coalesced 16-byte loads. The order-keeping kernels are single
// pass: each tile counts what it keeps (compact.cuh), warp 0 publishes the count and finds the
// tile's output position by the fast look-back over the counts (lookback.cuh; counts are
// integers, so the order of combination cannot matter) while the block stages its kept items
// in shared memory, and they are written contiguously. The unordered kernel has no look-back:
// each warp claims its range of the output with one atomic on a global counter.
#include "common.cuh"
#include "warp.cuh"
#include "block.cuh"
#include "lookback.cuh"
#include "compact.cuh"

#ifndef TALLY_ELEM
#error "TALLY_ELEM must be defined"
#endif

typedef TALLY_ELEM T;
constexpr int BLOCK_THREADS = TALLY_BLOCK_THREADS;
constexpr int WARPS = BLOCK_THREADS / 32;
constexpr int VECS = TALLY_VECS;
constexpr int VI = VecItems<T>::value;  // items per thread and row
constexpr int ROW = BLOCK_THREADS * VI;
constexpr int TILE = ROW * VECS;
constexpr int MIN_BLOCKS = TALLY_MIN_BLOCKS;
constexpr bool FLAGGED = TALLY_SELECT == TALLY_SELECT_FLAGGED;
constexpr int PIECES = VECS * WARPS;
static_assert(PIECES <= 128, "warp 0 scans the row-and-warp counts, at most 4 a lane");

#if TALLY_SELECT == TALLY_SELECT_INDICES
typedef u64 O;  // the output: indices
#else
typedef T O;
#endif

// The tile's staging area: TILE outputs (the launch's dynamic shared memory).
TALLY_DEVICE O* tile_stage() {
  extern __shared__ __align__(16) unsigned char dynamic_shared[];
  return reinterpret_cast<O*>(dynamic_shared);
}

// The layout is checked against `SelectParams` in src/select/cuda.rs.
struct SelectParams {
  const T* input;
  const u8* flags;        // FLAGGED: one byte per element, nonzero keeps it
  O* output;              // n slots (a partition fills them all)
  u64 n;
  u64* count;             // the number kept: written by the last tile, or the atomic counter
  unsigned char* states;  // the tile counter, then the look-back's slots (zeroed before the launch)
  unsigned char* states_next;  // a kept plan's other set, zeroed here for its next launch; or null
  u32 tiles;
  u32 groups;
  u32 supers;
  u32 unused;
};

// The partition's second step: the rejected elements, written backwards from the end, put
// back in their order (`count` is what the first step kept).
struct ReverseParams {
  T* data;
  u64 n;
  const u64* count;
};

#if TALLY_SELECT != TALLY_SELECT_FLAGGED
// `x` is the element's value (a 16-bit float's exact f32).
TALLY_DEVICE bool passes(const T elem) {
  const auto x = arith(elem);
  return (TALLY_PREDICATE);
}
#endif

// VI flag bytes from f (f 16-byte aligned to the row start), in one load.
TALLY_DEVICE void load_flags(const u8* f, u8 (&out)[VI]) {
  if constexpr (VI == 16) {
    union { uint4 r; u8 b[16]; } u;
    u.r = __ldg(reinterpret_cast<const uint4*>(f));
#pragma unroll
    for (int j = 0; j < VI; ++j) out[j] = u.b[j];
  } else if constexpr (VI == 8) {
    union { uint2 r; u8 b[8]; } u;
    u.r = __ldg(reinterpret_cast<const uint2*>(f));
#pragma unroll
    for (int j = 0; j < VI; ++j) out[j] = u.b[j];
  } else if constexpr (VI == 4) {
    union { unsigned int r; u8 b[4]; } u;
    u.r = __ldg(reinterpret_cast<const unsigned int*>(f));
#pragma unroll
    for (int j = 0; j < VI; ++j) out[j] = u.b[j];
  } else {
    union { unsigned short r; u8 b[2]; } u;
    u.r = __ldg(reinterpret_cast<const unsigned short*>(f));
#pragma unroll
    for (int j = 0; j < VI; ++j) out[j] = u.b[j];
  }
}

// Whether element i (in range) is kept.
TALLY_DEVICE bool keeps(const SelectParams& p, u64 i, T x) {
#if TALLY_SELECT == TALLY_SELECT_FLAGGED
  (void)x;
  return p.flags[i] != 0;
#else
  (void)p;
  (void)i;
  return passes(x);
#endif
}

// The tile's rows from e0 on: FAST, 16-byte loads of a whole, aligned tile; else element by
// element, nothing kept past n. keep[k] bit j: item j of row k is kept.
template <bool FAST>
TALLY_DEVICE void load_rows(const SelectParams& p, u64 e0, T (&x)[VECS][VI], u32 (&keep)[VECS]) {
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    const u64 e = e0 + (u64)k * ROW + (u64)threadIdx.x * VI;
    keep[k] = 0;
    if constexpr (FAST) {
      const Vec16<T> v = load_vec16(p.input, e / VI);
      u8 f[VI];
      if constexpr (FLAGGED) load_flags(p.flags + e, f);
#pragma unroll
      for (int j = 0; j < VI; ++j) {
        x[k][j] = v.item[j];
        bool kept;
        if constexpr (FLAGGED) kept = f[j] != 0;
        else kept = keeps(p, e + j, x[k][j]);
        keep[k] |= (u32)kept << j;
      }
    } else {
#pragma unroll
      for (int j = 0; j < VI; ++j) {
        const u64 i = e + j;
        x[k][j] = i < p.n ? p.input[i] : T(0);
        if (i < p.n) keep[k] |= (u32)keeps(p, i, x[k][j]) << j;
      }
    }
  }
}

TALLY_DEVICE void load_tile(const SelectParams& p, u64 e0, T (&x)[VECS][VI], u32 (&keep)[VECS]) {
  const bool full = e0 + TILE <= p.n;
  const bool aligned = (((u64)p.input | (u64)p.flags) & 15) == 0;
  if (full && aligned) load_rows<true>(p, e0, x, keep);
  else load_rows<false>(p, e0, x, keep);
}

#if TALLY_SELECT == TALLY_SELECT_STABLE || TALLY_SELECT == TALLY_SELECT_INDICES || \
    TALLY_SELECT == TALLY_SELECT_FLAGGED || TALLY_SELECT == TALLY_SELECT_PARTITION
// One tile per block, in the order blocks start.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS) tally_select(const SelectParams p) {
  __shared__ u32 pieces[PIECES];  // the row-and-warp counts, then their offsets in the tile
  __shared__ u32 shared_tile, shared_kept;
  __shared__ u64 shared_prefix;
  O* const stage = tile_stage();
  const u32 tile = lookback_next_tile(p.states, &shared_tile);
  const LookbackStates<CountLookback> st = lookback_states<CountLookback>(p.states, p.tiles, p.groups, p.supers);
  lookback_clear_next<CountLookback>(p.states_next, tile, p.tiles, p.groups, p.supers);
  const u64 e0 = (u64)tile * TILE;
  T x[VECS][VI];
  u32 keep[VECS], count[VECS], lane_offset[VECS];
  load_tile(p, e0, x, keep);
#pragma unroll
  for (int k = 0; k < VECS; ++k) count[k] = __popc(keep[k]);
  compact_warp_counts<BLOCK_THREADS, VECS>(count, lane_offset, pieces);
  __syncthreads();
  if (warp_id() == 0) {
    const u32 total = compact_scan_pieces<PIECES>(pieces);
    lookback_begin<CountLookback>(st, tile, (u64)total, false);
    if (lane_id() == 0) shared_kept = total;
  }
  __syncthreads();
  // The kept items are staged at their places in the tile while warp 0 looks back for the
  // tile's place in the output (after staging its own).
  const u32 kept = shared_kept;
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    const u32 offset = pieces[k * WARPS + warp_id()] + lane_offset[k];
    const u32 before = (u32)(k * ROW) + threadIdx.x * VI;  // the tile's items before this piece
#if TALLY_SELECT == TALLY_SELECT_INDICES
    u64 index[VI];
#pragma unroll
    for (int j = 0; j < VI; ++j) index[j] = e0 + before + j;
    compact_stage(stage, offset, index, keep[k]);
#else
    compact_stage(stage, offset, x[k], keep[k]);
#endif
#if TALLY_SELECT == TALLY_SELECT_PARTITION
    // The rejected go after the tile's kept items, in order: `before - offset` precede.
    const u64 e = e0 + before;
    const u32 valid = e >= p.n ? 0u : (p.n - e >= (u64)VI ? 0xffffffffu : (1u << (u32)(p.n - e)) - 1u);
    compact_stage(stage, kept + before - offset, x[k], valid & ~keep[k]);
#endif
  }
  if (warp_id() == 0) {
    const u64 prefix = lookback_end<CountLookback>(st, tile, (u64)kept, false);
    if (lane_id() == 0) {
      shared_prefix = prefix;
      if (tile == p.tiles - 1) *p.count = prefix + kept;
    }
  }
  __syncthreads();
  const u64 prefix = shared_prefix;
  compact_store<BLOCK_THREADS>(stage, kept, p.output + prefix);
#if TALLY_SELECT == TALLY_SELECT_PARTITION
  // Rejected items fill the output from the end, backwards; `e0 - prefix` were rejected before
  // this tile.
  const u32 items = (u32)min((u64)TILE, p.n - e0);
  compact_store_reversed<BLOCK_THREADS>(stage + kept, items - kept, p.output + (p.n - (e0 - prefix)));
#endif
}
#endif

#if TALLY_SELECT == TALLY_SELECT_PARTITION
// Swaps the rejected range [count, n) end for end: a block swaps a chunk of BLOCK_THREADS *
// REVERSE_PAIRS elements from the front with its mirror from the back through shared memory, so
// that every global access runs upwards through consecutive elements, each thread's loads of a
// chunk issued before its stores. Swapping in place from both ends directly (the back read and
// written downwards, grid-stride, eight pairs a thread) took 39% longer on an H100 in the same
// run (0.556 against 0.401 ms; ncu: DRAM 57% busy against this kernel's 79%, docs/PERF.md v33).
// The chunk's two halves take 2 * CHUNK * sizeof(T) bytes of static shared memory, kept to
// 32 KiB (48 KiB is the static limit): wide elements in large blocks take fewer pairs a thread.
// TALLY_REVERSE_PAIRS: a knob for experiments (-D through TALLY_NVRTC_OPTIONS).
#ifndef TALLY_REVERSE_PAIRS
#define TALLY_REVERSE_PAIRS 8
#endif
constexpr int REVERSE_PAIRS_FIT = 16384 / (BLOCK_THREADS * (int)sizeof(T));
constexpr int REVERSE_PAIRS = TALLY_REVERSE_PAIRS < REVERSE_PAIRS_FIT ? TALLY_REVERSE_PAIRS : REVERSE_PAIRS_FIT;
static_assert(REVERSE_PAIRS >= 1, "a chunk holds a pair a thread at least");
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) tally_select_reverse(const ReverseParams p) {
  constexpr u32 CHUNK = BLOCK_THREADS * REVERSE_PAIRS;
  __shared__ T front_chunk[CHUNK], back_chunk[CHUNK];
  const u64 kept = *p.count;
  const u64 m = p.n - kept;
  const u64 half = m / 2;
  T* rest = p.data + kept;
  for (u64 a = (u64)blockIdx.x * CHUNK; a < half; a += (u64)gridDim.x * CHUNK) {
    // Front [a, a + c) mirrors back [b, b + c): element a + j goes to b + c - 1 - j, and back.
    const u32 c = (u32)min((u64)CHUNK, half - a);
    const u64 b = m - a - c;
    T front[REVERSE_PAIRS], back[REVERSE_PAIRS];
#pragma unroll
    for (int k = 0; k < REVERSE_PAIRS; ++k) {
      const u32 j = threadIdx.x + k * BLOCK_THREADS;
      if (j < c) {
        front[k] = rest[a + j];
        back[k] = rest[b + j];
      }
    }
#pragma unroll
    for (int k = 0; k < REVERSE_PAIRS; ++k) {
      const u32 j = threadIdx.x + k * BLOCK_THREADS;
      if (j < c) {
        front_chunk[j] = front[k];
        back_chunk[j] = back[k];
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < REVERSE_PAIRS; ++k) {
      const u32 j = threadIdx.x + k * BLOCK_THREADS;
      if (j < c) {
        rest[a + j] = back_chunk[c - 1 - j];
        rest[b + j] = front_chunk[c - 1 - j];
      }
    }
    __syncthreads();
  }
}
#endif

#if TALLY_SELECT == TALLY_SELECT_UNORDERED
// One tile per block; each warp stages its kept items in its own part of shared memory and
// claims a range of the output with one atomic (no __syncthreads, no waiting on other tiles).
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS) tally_select_unordered(const SelectParams p) {
  constexpr int WARP_ITEMS = TILE / WARPS;
  __shared__ u32 pieces[PIECES];
  O* const stage = tile_stage();
  const u64 e0 = (u64)blockIdx.x * TILE;
  T x[VECS][VI];
  u32 keep[VECS], count[VECS], lane_offset[VECS], row_base[VECS];
  load_tile(p, e0, x, keep);
#pragma unroll
  for (int k = 0; k < VECS; ++k) count[k] = __popc(keep[k]);
  compact_warp_counts<BLOCK_THREADS, VECS>(count, lane_offset, pieces);
  __syncwarp();
  u32 warp_total = 0;
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    row_base[k] = warp_total;
    warp_total += pieces[k * WARPS + warp_id()];
  }
  u64 base = 0;
  if (lane_id() == 0 && warp_total > 0) base = atomicAdd(p.count, (u64)warp_total);
  base = __shfl_sync(0xffffffffu, base, 0);
  O* mine = stage + warp_id() * WARP_ITEMS;
#pragma unroll
  for (int k = 0; k < VECS; ++k) compact_stage(mine, row_base[k] + lane_offset[k], x[k], keep[k]);
  __syncwarp();
  for (u32 i = lane_id(); i < warp_total; i += 32) p.output[base + i] = mine[i];
}
#endif

#if TALLY_SELECT == TALLY_SELECT_COUNT
// Grid-stride over the tiles; one atomic per block.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS) tally_count_if(const SelectParams p) {
  __shared__ u64 scratch[WARPS];
  u64 mine = 0;
  for (u64 tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    T x[VECS][VI];
    u32 keep[VECS];
    load_tile(p, tile * TILE, x, keep);
#pragma unroll
    for (int k = 0; k < VECS; ++k) mine += __popc(keep[k]);
  }
  const u64 total = block_reduce_sum<BLOCK_THREADS>(mine, scratch);
  if (threadIdx.x == 0 && total > 0) atomicAdd(p.count, total);
}
#endif
