// Warp-level pieces: combine in registers before anything touches memory.
#pragma once
#include "common.cuh"

// Sum over the 32 lanes; every lane gets the total.
template <typename T>
TALLY_DEVICE T warp_reduce_sum(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Warp-aggregated increment: the lanes holding the same key elect one leader, which adds the
// group's size with a single atomic. Keys < 0 add nothing. All 32 lanes must call it together.
template <typename Counter>
TALLY_DEVICE void warp_aggregated_increment(Counter* counters, int key) {
  const u32 peers = __match_any_sync(0xffffffffu, key);
  const int leader = __ffs(peers) - 1;
  if (key >= 0 && (int)lane_id() == leader) atomicAdd(counters + key, (Counter)__popc(peers));
}
