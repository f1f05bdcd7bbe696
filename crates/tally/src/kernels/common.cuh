// Types and loads shared by every tally kernel. NVRTC has no <cstdint>: spell the types here.
#pragma once
// The names of the variant codes (generated from the Rust side): every kernel compares its
// defines against them, so they come first.
#include "codes.cuh"

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

#define TALLY_DEVICE __device__ __forceinline__

// Sixteen bytes, seen as VEC_ITEMS samples of T: the widest load a thread can issue.
template <typename T>
union Vec16 {
  uint4 raw;
  T item[16 / sizeof(T)];
};
template <typename T>
struct VecItems {
  static constexpr int value = 16 / sizeof(T);
};

template <typename T>
TALLY_DEVICE Vec16<T> load_vec16(const T* __restrict__ base, u64 vec_index) {
  Vec16<T> v;
  // Read-only, read-once data: the non-coherent path, no L1 allocation needed.
  v.raw = __ldg(reinterpret_cast<const uint4*>(base) + vec_index);
  return v;
}

TALLY_DEVICE u32 lane_id() { return threadIdx.x & 31; }
TALLY_DEVICE u32 warp_id() { return threadIdx.x >> 5; }

// N items of X from element e on (e a multiple of N, the base 16-byte aligned), in the widest
// loads that divide them (a thread's piece of a tile row: the scans, the run primitives).
template <typename X, int N>
TALLY_DEVICE void load_items(const X* base, u64 e, X* out) {
  constexpr int BYTES = N * (int)sizeof(X);
  if constexpr (BYTES % 16 == 0) {
    union {
      uint4 raw[BYTES / 16];
      X item[N];
    } u;
#pragma unroll
    for (int w = 0; w < BYTES / 16; ++w) u.raw[w] = __ldg(reinterpret_cast<const uint4*>(base + e) + w);
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = u.item[j];
  } else if constexpr (BYTES % 8 == 0) {
    union {
      uint2 raw[BYTES / 8];
      X item[N];
    } u;
#pragma unroll
    for (int w = 0; w < BYTES / 8; ++w) u.raw[w] = __ldg(reinterpret_cast<const uint2*>(base + e) + w);
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = u.item[j];
  } else if constexpr (BYTES % 4 == 0) {
    union {
      u32 raw[BYTES / 4];
      X item[N];
    } u;
#pragma unroll
    for (int w = 0; w < BYTES / 4; ++w) u.raw[w] = __ldg(reinterpret_cast<const u32*>(base + e) + w);
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = u.item[j];
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = base[e + j];
  }
}
