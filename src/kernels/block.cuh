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
