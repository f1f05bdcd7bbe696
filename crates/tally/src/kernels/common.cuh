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

// The far ends of an arithmetic type X (the infinities for floats): the identities of min and
// max. Whether X is a float or signed is read off X itself, so every kernel shares one copy.
template <typename X>
TALLY_DEVICE X highest_of() {
  if constexpr ((X)0.5 != (X)0 && sizeof(X) == 4) return (X)__int_as_float(0x7f800000);
  else if constexpr ((X)0.5 != (X)0) return (X)__longlong_as_double(0x7ff0000000000000ll);
  else if constexpr ((X)-1 < (X)0) return (X)((1ull << (8 * sizeof(X) - 1)) - 1);
  else return (X)~(X)0;
}
template <typename X>
TALLY_DEVICE X lowest_of() {
  if constexpr ((X)0.5 != (X)0) return -highest_of<X>();
  else if constexpr ((X)-1 < (X)0) return (X)(-highest_of<X>() - 1);
  else return (X)0;
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
