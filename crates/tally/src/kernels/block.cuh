// Block-level pieces: private copies in shared memory, and their single merge into global memory.
#pragma once
#include "common.cuh"
#include "warp.cuh"

// Sum over the block; the result is valid in thread 0. `scratch` holds one T per warp.
template <int BLOCK_THREADS, typename T>
TALLY_DEVICE T block_reduce_sum(T v, T* scratch) {
  constexpr int WARPS = BLOCK_THREADS / 32;
  v = warp_reduce_sum(v);
  if (lane_id() == 0) scratch[warp_id()] = v;
  __syncthreads();
  T total = 0;
  if (threadIdx.x == 0) {
#pragma unroll
    for (int w = 0; w < WARPS; ++w) total += scratch[w];
  }
  __syncthreads();
  return total;
}

template <int BLOCK_THREADS, typename T>
TALLY_DEVICE void block_fill(T* data, u32 count, T value) {
  for (u32 i = threadIdx.x; i < count; i += BLOCK_THREADS) data[i] = value;
}

// Adds the first `width` counters of `copies` private histograms (each `stride` counters long,
// laid out one after the other) into the global histogram: one atomic per non-zero bin per
// block, never one per sample.
template <int BLOCK_THREADS, typename Counter>
TALLY_DEVICE void block_merge_private(const u32* privates, u32 copies, u32 width, u32 stride, Counter* global) {
  for (u32 i = threadIdx.x; i < width; i += BLOCK_THREADS) {
    u64 sum = 0;
    for (u32 c = 0; c < copies; ++c) sum += privates[(u64)c * stride + i];
    if (sum) atomicAdd(global + i, (Counter)sum);
  }
}

// ---- packed 16-bit counters ---------------------------------------------------------------------
// Two counters per 32-bit word (the even key in the low half): twice the bins in the same shared
// memory. An add of `count` (< 65,536) reports, through the old word it returns, whether the field
// wrapped; the caller then moves 65,536 counts to a wide counter. A wrapped low field also carried
// one into its partner, which the caller takes back (and, if that carry wrapped the partner in
// turn, moves 65,536 for it too). Every wrap is seen by exactly the atomic that caused it, so the
// accounting is exact however the adds interleave.
TALLY_DEVICE u32 narrow16_shift(u32 key) { return (key & 1u) << 4; }

TALLY_DEVICE u32 narrow16_field(const u32* words, u32 key) {
  return (words[key >> 1] >> narrow16_shift(key)) & 0xffffu;
}

TALLY_DEVICE bool narrow16_wrapped(u32 old_word, u32 key, u32 count) {
  return ((old_word >> narrow16_shift(key)) & 0xffffu) + count > 0xffffu;
}

// Whether a wrap of the low field also wrapped the high one (its carry met 0xffff).
TALLY_DEVICE bool narrow16_partner_wrapped(u32 old_word) { return (old_word >> 16) == 0xffffu; }

// A block's values combined by `merge` in a fixed order (warp trees, then the warps in order);
// valid in thread 0. `scratch` holds one T per warp; the block may reuse it after the call.
template <int BLOCK_THREADS, typename T, typename Merge>
TALLY_DEVICE T block_reduce(T v, T* scratch, Merge merge) {
  constexpr int WARPS = BLOCK_THREADS / 32;
  v = warp_reduce(v, merge);
  if (lane_id() == 0) scratch[warp_id()] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
#pragma unroll 1
    for (int w = 1; w < WARPS; ++w) v = merge(v, scratch[w]);
  }
  __syncthreads();
  return v;
}

// A value another block wrote (after its __threadfence), read past the L1 (which is not
// coherent across blocks), one 32-bit word at a time.
template <typename T>
TALLY_DEVICE T load_cg(const T* p) {
  union Words {
    T value;
    u32 word[sizeof(T) / 4];
  };
  static_assert(sizeof(T) % 4 == 0, "load_cg reads whole words");
  Words w;
#pragma unroll
  for (int k = 0; k < (int)(sizeof(T) / 4); ++k) w.word[k] = __ldcg(reinterpret_cast<const u32*>(p) + k);
  return w.value;
}
