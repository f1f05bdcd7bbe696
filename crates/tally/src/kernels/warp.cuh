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

// Any trivially copyable value moved `offset` lanes down, as whole 32-bit words (structs of
// several fields shuffle in one call). All 32 lanes must call it together.
template <typename T>
TALLY_DEVICE T warp_shfl_down(const T& v, int offset) {
  union Words {
    T value;
    u32 word[(sizeof(T) + 3) / 4];
  };
  Words in, out;
  in.value = v;
#pragma unroll
  for (int k = 0; k < (int)((sizeof(T) + 3) / 4); ++k) out.word[k] = __shfl_down_sync(0xffffffffu, in.word[k], offset);
  return out.value;
}

// A warp's values combined by `merge` (associative) in a fixed tree: lane i takes lane
// i + offset's value, so the order depends on the lanes alone. The result is valid in lane 0.
// Min, max, argmin (a merge that breaks ties by the smaller index) and sums are all this.
template <typename T, typename Merge>
TALLY_DEVICE T warp_reduce(T v, Merge merge) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = merge(v, warp_shfl_down(v, offset));
  return v;
}

// The smallest and the largest value over the warp (integers, or floats without NaN); every
// lane gets them.
template <typename T>
TALLY_DEVICE T warp_reduce_min(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const T o = __shfl_xor_sync(0xffffffffu, v, offset);
    v = o < v ? o : v;
  }
  return v;
}
template <typename T>
TALLY_DEVICE T warp_reduce_max(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const T o = __shfl_xor_sync(0xffffffffu, v, offset);
    v = o > v ? o : v;
  }
  return v;
}

// A two's-complement 128-bit integer as two words, for sums that must not wrap.
struct Wide128 {
  u64 lo;
  u64 hi;
};
TALLY_DEVICE Wide128 wide_add(Wide128 a, Wide128 b) {
  const u64 lo = a.lo + b.lo;
  return Wide128{lo, a.hi + b.hi + (lo < a.lo)};
}
TALLY_DEVICE Wide128 wide_from_i64(i64 v) { return Wide128{(u64)v, v < 0 ? ~0ull : 0ull}; }
TALLY_DEVICE Wide128 wide_from_u64(u64 v) { return Wide128{v, 0ull}; }

// Any trivially copyable value moved `offset` lanes up (lanes below `offset` get their own
// value back), as whole 32-bit words. All 32 lanes must call it together.
template <typename T>
TALLY_DEVICE T warp_shfl_up(const T& v, int offset) {
  union Words {
    T value;
    u32 word[(sizeof(T) + 3) / 4];
  };
  Words in, out;
  in.value = v;
#pragma unroll
  for (int k = 0; k < (int)((sizeof(T) + 3) / 4); ++k) out.word[k] = __shfl_up_sync(0xffffffffu, in.word[k], offset);
  return out.value;
}

// Lane `src`'s value, to every lane, as whole 32-bit words. All 32 lanes must call it together.
template <typename T>
TALLY_DEVICE T warp_shfl_idx(const T& v, int src) {
  union Words {
    T value;
    u32 word[(sizeof(T) + 3) / 4];
  };
  Words in, out;
  in.value = v;
#pragma unroll
  for (int k = 0; k < (int)((sizeof(T) + 3) / 4); ++k) out.word[k] = __shfl_sync(0xffffffffu, in.word[k], src);
  return out.value;
}

// Inclusive scan over the 32 lanes in lane order by `merge` (associative; need not commute):
// lane i gets v_0 . v_1 . ... . v_i, always by the same tree (Kogge-Stone), so float results
// depend on the lanes' values alone. All 32 lanes must call it together.
template <typename T, typename Merge>
TALLY_DEVICE T warp_inclusive_scan(T v, Merge merge) {
  const int lane = (int)lane_id();
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const T up = warp_shfl_up(v, offset);
    if (lane >= offset) v = merge(up, v);
  }
  return v;
}

// The exclusive scan from an inclusive one: lane i gets lane i-1's value, lane 0 `identity`.
template <typename T>
TALLY_DEVICE T warp_exclusive_from_inclusive(const T& inclusive, const T& identity) {
  const T up = warp_shfl_up(inclusive, 1);
  return lane_id() == 0 ? identity : up;
}

// `start` followed by lanes `first`..31's values, merged one at a time from the left:
// ((start . v_first) . v_first+1) . ... . v_31, to every lane (`first` the same in every lane;
// 32 returns `start`). Unlike a tree, a left fold gives the same bits as any fold it extends:
// the deterministic look-back's running prefix (lookback.cuh). The loop runs only from `first`
// (a look-back's nearest inclusive prefix is mostly a few tiles back); unrolled by four, so
// that four shuffles issue back to back before their merges.
template <typename T, typename Merge>
TALLY_DEVICE T warp_fold_left(T start, const T& v, int first, Merge merge) {
#pragma unroll 4
  for (int d = first; d < 32; ++d) start = merge(start, warp_shfl_idx(v, d));
  return start;
}

// The lanes' values combined in lane order (the inclusive scan's last lane), to every lane.
template <typename T, typename Merge>
TALLY_DEVICE T warp_reduce_ordered(T v, Merge merge) {
  return warp_shfl_idx(warp_inclusive_scan(v, merge), 31);
}
