// Block-level stream compaction: the pieces that select and partition share (the run
// primitives, runs.cu, stage their output the same way over a transposed tile). A tile keeps
// some of its items; every kept item needs its position among the tile's kept items (an
// exclusive count), the tile its number kept (the aggregate the look-back combines:
// `CountLookback`), and the kept items then go out contiguously, staged in shared memory so that
// consecutive threads write consecutive addresses.
//
// Items are held in rows (as scan.cu loads them): in row k of a tile, thread t holds N
// consecutive items starting at k * ROW + t * N, so the tile's order is (row, warp, lane, item).
// A thread describes what it keeps in row k by a bit mask (bit j: item j is kept) or a count.
// With a single row (ROWS = 1) the layout is the blocked one (thread t holds items t*N..).
//
//   1. every thread: `compact_warp_counts(count, lane_offset, pieces)`: each row's exclusive
//      count within the warp, and the warp's total per row into `pieces[row * WARPS + warp]`;
//   2. __syncthreads(); warp 0: `compact_scan_pieces(pieces)` turns the pieces into their
//      exclusive offsets in the tile and returns the tile's total (then, typically,
//      `lookback_begin<CountLookback>(states, tile, total, false)` publishes it);
//   3. __syncthreads(); every thread: its row-k items start at `pieces[k * WARPS + warp] +
//      lane_offset[k]`; `compact_stage` puts them there in shared memory (while warp 0, after
//      its own, waits in `lookback_end` for the tile's position), and after a __syncthreads
//      `compact_store` writes the tile's kept items out with coalesced stores.
// `block_exclusive_count` is steps 1-3 for one count per thread, when no look-back sits between.
#pragma once
#include "common.cuh"
#include "warp.cuh"
#include "block.cuh"
#include "lookback.cuh"

// The look-back's traits for a running count of kept items: a u64 count with its status in the
// top two bits of the same word (one store publishes both; counts stay below 2^62).
struct CountLookback {
  typedef u64 Acc;
  typedef u64 Word;
  static TALLY_DEVICE Acc identity() { return 0; }
  static TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) { return a + b; }
  static TALLY_DEVICE u64 pack(const Acc& a, u32 status) { return a | ((u64)status << 62); }
  static TALLY_DEVICE u32 status_of(u64 w) { return (u32)(w >> 62); }
  static TALLY_DEVICE Acc unpack(u64 w) { return w & ((1ull << 62) - 1); }
  static TALLY_DEVICE bool absorbs(const Acc&) { return false; }
  static constexpr int WINDOWS = LOOKBACK_WINDOWS;
};

// Inclusive sum over the 32 lanes of a u64 (Kogge-Stone; two 32-bit shuffles a step).
TALLY_DEVICE u64 warp_inclusive_sum_u64(u64 v) {
  const u32 lane = lane_id();
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const u32 lo = __shfl_up_sync(0xffffffffu, (u32)v, offset);
    const u32 hi = __shfl_up_sync(0xffffffffu, (u32)(v >> 32), offset);
    if (lane >= (u32)offset) v += ((u64)hi << 32) | lo;
  }
  return v;
}

// Inclusive sum over the 32 lanes of a u32.
TALLY_DEVICE u32 warp_inclusive_sum_u32(u32 v) {
  const u32 lane = lane_id();
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const u32 up = __shfl_up_sync(0xffffffffu, v, offset);
    if (lane >= (u32)offset) v += up;
  }
  return v;
}

// Step 1. `count[k]`: how many of its row-k items this thread keeps (each below 2048, so that a
// warp's total fits 16 bits: four rows share one 64-bit scan). `lane_offset[k]`: how many the
// lanes before this one keep in row k. Lane 0 writes the warp's row totals to
// `pieces[k * WARPS + warp]`. All threads of the block call it.
template <int BLOCK_THREADS, int ROWS>
TALLY_DEVICE void compact_warp_counts(const u32 (&count)[ROWS], u32 (&lane_offset)[ROWS], u32* pieces) {
  constexpr int WARPS = BLOCK_THREADS / 32;
  static_assert(ROWS * WARPS <= 128, "warp 0 scans the row-and-warp pieces, at most 4 a lane");
#pragma unroll
  for (int g = 0; g < ROWS; g += 4) {
    u64 packed = 0;
#pragma unroll
    for (int r = 0; r < 4; ++r)
      if (g + r < ROWS) packed |= (u64)count[g + r] << (16 * r);
    const u64 incl = warp_inclusive_sum_u64(packed);
    const u64 excl = incl - packed;
    const u64 total = __shfl_sync(0xffffffffu, incl, 31);
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      if (g + r < ROWS) {
        lane_offset[g + r] = (u32)(excl >> (16 * r)) & 0xffffu;
        if (lane_id() == 0) pieces[(g + r) * WARPS + warp_id()] = (u32)(total >> (16 * r)) & 0xffffu;
      }
    }
  }
}

// Step 2 (warp 0 alone, after a __syncthreads): the PIECES = ROWS * WARPS totals (at most 128)
// become their exclusive offsets in the tile, in place; every lane gets the tile's total.
template <int PIECES>
TALLY_DEVICE u32 compact_scan_pieces(u32* pieces) {
  const auto plus = [](u32 a, u32 b) { return a + b; };
  const PieceScan<PIECES, u32> s = piece_scan_begin<PIECES>(pieces, 0u, plus);
  piece_scan_end(s, pieces, false, 0u, plus);
  return s.aggregate;
}

// Steps 1-3 for one count per thread, in thread order: returns the thread's exclusive offset
// in the block, and the block's total in `total` (every thread). `pieces` holds WARPS + 1
// u32s; the block may reuse it after the call.
template <int BLOCK_THREADS>
TALLY_DEVICE u32 block_exclusive_count(u32 count, u32* pieces, u32& total) {
  constexpr int WARPS = BLOCK_THREADS / 32;
  const u32 incl = warp_inclusive_sum_u32(count);
  if (lane_id() == 31) pieces[warp_id()] = incl;
  __syncthreads();
  if (warp_id() == 0) {
    const u32 t = compact_scan_pieces<WARPS>(pieces);
    if (lane_id() == 0) pieces[WARPS] = t;
  }
  __syncthreads();
  const u32 offset = pieces[warp_id()] + incl - count;
  total = pieces[WARPS];
  __syncthreads();
  return offset;
}

// Step 3: the items whose bit is set in `keep` (bit j: item j), in order, to stage[offset..].
template <typename T, int N>
TALLY_DEVICE void compact_stage(T* stage, u32 offset, const T (&item)[N], u32 keep) {
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if ((keep >> j) & 1u) stage[offset++] = item[j];
  }
}

// After a __syncthreads: stage[0, count) to out[0, count); thread t writes elements t,
// t + BLOCK_THREADS, ..., so a warp's stores are 32 consecutive elements.
template <int BLOCK_THREADS, typename T>
TALLY_DEVICE void compact_store(const T* stage, u32 count, T* out) {
  for (u32 i = threadIdx.x; i < count; i += BLOCK_THREADS) out[i] = stage[i];
}

// After a __syncthreads: stage[0, count) to out_end[-1], out_end[-2], ... (reversed: item i to
// out_end[-1 - i]), the layout of items written backwards from the end of an output.
template <int BLOCK_THREADS, typename T>
TALLY_DEVICE void compact_store_reversed(const T* stage, u32 count, T* out_end) {
  for (u32 i = threadIdx.x; i < count; i += BLOCK_THREADS) *(out_end - 1 - (u64)i) = stage[i];
}
