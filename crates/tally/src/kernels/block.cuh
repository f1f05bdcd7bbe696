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

// ---- device-wide publication (single-pass algorithms: a scan's look-back) ------------------------
// A flag word another block waits on: the release store orders every earlier write of this
// thread before it, the acquire load every later read after it (sm_70+, the GPU scope).
TALLY_DEVICE void store_release(u32* p, u32 v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
TALLY_DEVICE u32 load_acquire(const u32* p) {
  u32 v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// A 64-bit word stored and loaded whole, never cached in a register or the L1: a status and a
// value packed together need no fence between them.
TALLY_DEVICE void store_relaxed64(u64* p, u64 v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
TALLY_DEVICE u64 load_relaxed64(const u64* p) {
  u64 v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Inclusive scan over the block by `merge` in a fixed order (each warp's Kogge-Stone tree, then
// the warp totals scanned by warp 0); `total` gets the block's total in every thread. `scratch`
// holds one T per warp (at most 32 warps); the block may reuse it after the call.
template <int BLOCK_THREADS, typename T, typename Merge>
TALLY_DEVICE T block_inclusive_scan(T v, T* scratch, const T& identity, Merge merge, T& total) {
  constexpr int WARPS = BLOCK_THREADS / 32;
  static_assert(WARPS <= 32, "one warp scans the warp totals");
  v = warp_inclusive_scan(v, merge);
  if (lane_id() == 31) scratch[warp_id()] = v;
  __syncthreads();
  if (warp_id() == 0) {
    T w = (int)lane_id() < WARPS ? scratch[lane_id()] : identity;
    w = warp_inclusive_scan(w, merge);
    if ((int)lane_id() < WARPS) scratch[lane_id()] = w;
  }
  __syncthreads();
  total = scratch[WARPS - 1];
  if (warp_id() > 0) v = merge(scratch[warp_id() - 1], v);
  __syncthreads();
  return v;
}
