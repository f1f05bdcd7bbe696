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

// ---- 16-bit floats ------------------------------------------------------------------------------
// IEEE binary16 (`tally_f16`) and bfloat16 (`tally_bf16`), stored as their 16 bits. No CUDA
// toolkit header (cuda_fp16.h, cuda_bf16.h) is handed to NVRTC, so the conversions are spelled
// out: PTX `cvt` for binary16 (exact to f32 on every target, subnormals included), a shift for
// bfloat16 (the high half of an f32). Every value of either type is exactly an f32, and kernels
// compute on that f32 (the implicit conversion), so comparisons, NaN, -0.0 == +0.0 and the
// binning rule are those of f32 samples. Converting an f32 back rounds to nearest even.
TALLY_DEVICE float f16_bits_to_float(u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
TALLY_DEVICE u16 float_to_f16_bits(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
TALLY_DEVICE float bf16_bits_to_float(u16 b) { return __uint_as_float((u32)b << 16); }
TALLY_DEVICE u16 float_to_bf16_bits(float f) {
  const u32 u = __float_as_uint(f);
  // NaN stays NaN (quiet, sign kept); everything else rounds to nearest, ties to even.
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)((u >> 16) | 0x40u);
  return (u16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// KIND 0: binary16, 1: bfloat16. Trivially constructible, so it can sit in unions of loads.
template <int KIND>
struct Half16 {
  u16 bits;
  static constexpr u16 INF_BITS = KIND == 0 ? 0x7c00 : 0x7f80;
  Half16() = default;
  TALLY_DEVICE Half16(float f) : bits(KIND == 0 ? float_to_f16_bits(f) : float_to_bf16_bits(f)) {}
  TALLY_DEVICE operator float() const { return KIND == 0 ? f16_bits_to_float(bits) : bf16_bits_to_float(bits); }
  static TALLY_DEVICE Half16 from_bits(u16 b) {
    Half16 h;
    h.bits = b;
    return h;
  }
};
typedef Half16<0> tally_f16;
typedef Half16<1> tally_bf16;
static_assert(sizeof(tally_f16) == 2 && sizeof(tally_bf16) == 2, "16-bit floats are 2 bytes");

// The read-only load of one 16-bit float (the kernels' scalar loads of any sample type).
template <int K> TALLY_DEVICE Half16<K> __ldg(const Half16<K>* p) {
  return Half16<K>::from_bits(__ldg(reinterpret_cast<const u16*>(p)));
}

template <typename X> struct IsHalf16 { static constexpr bool value = false; };
template <int K> struct IsHalf16<Half16<K>> { static constexpr bool value = true; };

// The value an element is computed on: itself, or a 16-bit float's exact f32.
template <typename X> TALLY_DEVICE X arith(X x) { return x; }
template <int K> TALLY_DEVICE float arith(Half16<K> x) { return (float)x; }
// That value's type.
template <typename X> struct Arith { typedef X type; };
template <int K> struct Arith<Half16<K>> { typedef float type; };

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
  if constexpr (IsHalf16<X>::value) return X::from_bits(X::INF_BITS);
  else if constexpr ((X)0.5 != (X)0 && sizeof(X) == 4) return (X)__int_as_float(0x7f800000);
  else if constexpr ((X)0.5 != (X)0) return (X)__longlong_as_double(0x7ff0000000000000ll);
  else if constexpr ((X)-1 < (X)0) return (X)((1ull << (8 * sizeof(X) - 1)) - 1);
  else return (X)~(X)0;
}
template <typename X>
TALLY_DEVICE X lowest_of() {
  if constexpr (IsHalf16<X>::value) return X::from_bits(X::INF_BITS | 0x8000);
  else if constexpr ((X)0.5 != (X)0) return -highest_of<X>();
  else if constexpr ((X)-1 < (X)0) return (X)(-highest_of<X>() - 1);
  else return (X)0;
}

TALLY_DEVICE u32 lane_id() { return threadIdx.x & 31; }
TALLY_DEVICE u32 warp_id() { return threadIdx.x >> 5; }
// The dynamic shared memory this launch gave the block, in bytes.
TALLY_DEVICE u32 dynamic_smem_bytes() {
  u32 bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  return bytes;
}

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
