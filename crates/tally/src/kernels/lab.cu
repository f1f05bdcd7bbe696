// The atomics lab (`tally lab`): kernels that exist to be measured. Each leaves its final values
// in global memory, and the host checks every one of them before it believes a timing.
//
//   global: `ops` increments spread evenly over 2^k counters in global memory, issued one per
//           lane (plain), combined per warp by hand first (warp-aggregated), or with the counter
//           count a compile-time constant (compiler), so that the compiler may combine them
//           itself where it can prove the address uniform.
//   shared: every warp times (clock64) a loop of shared-memory atomics in which
//           `threads_per_address` consecutive threads of the block share one target.
//
// Defines: LAB_PART (0: the global kernels, 1: the shared ones), LAB_TYPE (the global counters'
// type), LAB_ADDRESS_BITS (-1: the plain and warp-aggregated kernels, with the counter count an
// argument; k >= 0: the compiler-mode kernel alone, for 2^k counters).
#include "common.cuh"
#include "warp.cuh"

#ifndef LAB_PART
#define LAB_PART 0
#endif
#ifndef LAB_TYPE
#define LAB_TYPE unsigned int
#endif
#ifndef LAB_ADDRESS_BITS
#define LAB_ADDRESS_BITS -1
#endif

// ---------------------------------------------------------------------------------------------
// Thread level: where an operation goes.

// A bijection on [0, 2^bits): multiplying by an odd constant carries low bits upwards and
// xor-shifting right brings high bits back down; both are invertible modulo 2^bits. The low
// bits of the result pick the counter, so every counter receives exactly ops / counters
// increments (the host checks against that), while the lanes of one warp land on counters as if
// at random, as the samples of a histogram do.
TALLY_DEVICE u32 lab_scramble(u32 k, u32 bits) {
  const u32 mask = bits >= 32 ? 0xffffffffu : (1u << bits) - 1u;
  const u32 shift1 = bits / 2 > 0 ? bits / 2 : 1;
  const u32 shift2 = bits / 3 > 0 ? bits / 3 : 1;
  u32 x = (k * 0x9e3779b1u) & mask;
  x ^= x >> shift1;
  x = (x * 0x85ebca6bu) & mask;
  x ^= x >> shift2;
  return x;
}

// The layout is checked against `LabGlobalParams` in src/lab/cuda.rs.
struct LabGlobalParams {
  void* counters;  // LAB_TYPE
  u32 ops;
  u32 ops_bits;
  u32 address_mask;
};

// The layout is checked against `LabSharedParams` in src/lab/cuda.rs. Values of the op's type
// travel as their bits in the low end of a u64.
struct LabSharedParams {
  const void* values;
  u64 init;
  u64 step;
  int first_round;
  u32 threads_per_address;
  u32 rounds;
  u32 pad;
  void* finals;
  u64* warp_cycles;
};

#if LAB_PART == 0
// ---------------------------------------------------------------------------------------------
// Global memory: one grid-stride stream of increments.

enum LabGlobalMode { LAB_PLAIN = 0, LAB_WARP_AGGREGATED = 1 };

// Operation k (k < ops, ops = 2^ops_bits <= 2^31) adds 1 to counters[scramble(k) & mask].
template <typename T, int MODE>
TALLY_DEVICE void lab_global_stream(T* counters, u32 ops, u32 ops_bits, u32 address_mask) {
  const u32 threads = gridDim.x * blockDim.x;  // the host launches whole warps only
  // The loop test looks at the warp's first lane, so that all 32 lanes take every trip together:
  // __match_any_sync in the aggregated mode needs the whole warp. Lanes past the end sit out.
  for (u32 k = blockIdx.x * blockDim.x + threadIdx.x; k - lane_id() < ops; k += threads) {
    const bool live = k < ops;
    const u32 address = lab_scramble(k, ops_bits) & address_mask;
    if (MODE == LAB_WARP_AGGREGATED) {
      // One leader per distinct address adds the size of its group (warp.cuh).
      warp_aggregated_increment(counters, live ? (int)address : -1);
    } else if (live) {
      atomicAdd(counters + address, (T)1);
    }
  }
}

#if LAB_ADDRESS_BITS < 0
extern "C" __global__ void tally_lab_global_plain(const LabGlobalParams p) {
  lab_global_stream<LAB_TYPE, LAB_PLAIN>((LAB_TYPE*)p.counters, p.ops, p.ops_bits, p.address_mask);
}

extern "C" __global__ void tally_lab_global_warp_aggregated(const LabGlobalParams p) {
  lab_global_stream<LAB_TYPE, LAB_WARP_AGGREGATED>((LAB_TYPE*)p.counters, p.ops, p.ops_bits, p.address_mask);
}

#else
// The plain stream with the mask a constant: with one counter the address is `counters` itself,
// provably the same in every lane, and the compiler is free to combine the warp's atomics.
extern "C" __global__ void tally_lab_global_compiler(const LabGlobalParams p) {
  lab_global_stream<LAB_TYPE, LAB_PLAIN>((LAB_TYPE*)p.counters, p.ops, p.ops_bits,
                                         (u32)((1ull << LAB_ADDRESS_BITS) - 1));
}
#endif
#endif  // LAB_PART == 0

#if LAB_PART == 1
// ---------------------------------------------------------------------------------------------
// Shared memory: one operation per functor. `apply` must leave the same final value whatever
// the order the lanes get there in; that is what the host checks.

// The hardware's atomicAdd on shared memory, for each type the lab measures it on (on f32:
// whatever the compiler makes of it).
template <typename V>
struct LabAdd {
  typedef V T;
  static TALLY_DEVICE void apply(V* target, V v) { atomicAdd(target, v); }
};

struct LabMaxU32 {
  typedef u32 T;
  static TALLY_DEVICE void apply(u32* target, u32 v) { atomicMax(target, v); }
};

// The textbook compare-and-swap loop: under contention every lane but one per round retries.
struct LabAddF32Cas {
  typedef float T;
  static TALLY_DEVICE void apply(float* target, float v) {
    u32* bits = reinterpret_cast<u32*>(target);
    u32 old = *reinterpret_cast<volatile u32*>(bits);
    for (;;) {
      const u32 seen = atomicCAS(bits, old, __float_as_uint(__uint_as_float(old) + v));
      if (seen == old) break;
      old = seen;
    }
  }
};

// Maximum by compare-and-swap: a lane whose value is not larger leaves without an atomic.
struct LabMaxF32Cas {
  typedef float T;
  static TALLY_DEVICE void apply(float* target, float v) {
    u32* bits = reinterpret_cast<u32*>(target);
    u32 old = *reinterpret_cast<volatile u32*>(bits);
    while (v > __uint_as_float(old)) {
      const u32 seen = atomicCAS(bits, old, __float_as_uint(v));
      if (seen == old) break;
      old = seen;
    }
  }
};

// Maximum through one integer atomic. Floats with the sign bit clear order like their bits as
// signed integers; floats with it set order backwards as unsigned integers. So a value without
// the sign bit takes a signed max, one with it an unsigned min, and each leaves a target of the
// other sign alone exactly when it should. Testing the sign bit rather than `v >= 0` sends -0.0
// down the unsigned path, where it beats every negative number and loses to +0.0. Not for NaN.
struct LabMaxF32Int {
  typedef float T;
  static TALLY_DEVICE void apply(float* target, float v) {
    const int as_int = __float_as_int(v);
    if (as_int >= 0) {
      atomicMax(reinterpret_cast<int*>(target), as_int);
    } else {
      atomicMin(reinterpret_cast<u32*>(target), (u32)as_int);
    }
  }
};

// The value of round `round`. A zero step leaves v itself, bits and all: -0.0 + 0.0 is +0.0.
template <typename T>
TALLY_DEVICE T lab_round_value(T v, T step, int round) {
  return step == (T)0 ? v : v + (T)round * step;
}

// Block level: targets in shared memory, each shared by `threads_per_address` consecutive
// threads. Each thread holds four values in registers (so the timed loop touches no memory but
// the targets); round r of the loop applies value[r % 4] + (first_round + r) * step. Lane 0 of
// each warp writes the cycles its warp spent in the loop; thread i < targets writes target i.
template <typename Op, int BLOCK_THREADS>
TALLY_DEVICE void lab_shared_block(typename Op::T* targets, const typename Op::T* __restrict__ values,
                                   typename Op::T init, typename Op::T step, int first_round,
                                   u32 threads_per_address, u32 rounds, typename Op::T* finals,
                                   u64* warp_cycles) {
  typedef typename Op::T T;
  const u32 tid = threadIdx.x;
  const u32 count = BLOCK_THREADS / threads_per_address;
  if (tid < count) targets[tid] = init;
  const T v0 = values[tid * 4 + 0], v1 = values[tid * 4 + 1];
  const T v2 = values[tid * 4 + 2], v3 = values[tid * 4 + 3];
  T* target = targets + tid / threads_per_address;  // a runtime divisor: never provably uniform
  __syncthreads();

  const long long start = clock64();
  for (u32 r = 0; r < rounds; r += 4) {
    const int round = first_round + (int)r;
    Op::apply(target, lab_round_value(v0, step, round));
    Op::apply(target, lab_round_value(v1, step, round + 1));
    Op::apply(target, lab_round_value(v2, step, round + 2));
    Op::apply(target, lab_round_value(v3, step, round + 3));
  }
  // Wait for this thread's atomics to land and for the whole warp before reading the clock.
  __threadfence_block();
  __syncwarp();
  const long long stop = clock64();

  __syncthreads();
  if (tid < count) finals[(u64)blockIdx.x * count + tid] = targets[tid];
  if (lane_id() == 0) warp_cycles[(u64)blockIdx.x * (BLOCK_THREADS / 32) + warp_id()] = (u64)(stop - start);
}

#define LAB_SHARED_THREADS 256

template <typename T> TALLY_DEVICE T lab_from_bits(u64 bits);
template <> TALLY_DEVICE u32 lab_from_bits<u32>(u64 bits) { return (u32)bits; }
template <> TALLY_DEVICE u64 lab_from_bits<u64>(u64 bits) { return bits; }
template <> TALLY_DEVICE float lab_from_bits<float>(u64 bits) { return __uint_as_float((u32)bits); }

#define LAB_SHARED_KERNEL(name, Op)                                                                \
  extern "C" __global__ void __launch_bounds__(LAB_SHARED_THREADS) name(const LabSharedParams p) { \
    typedef Op::T T;                                                                               \
    __shared__ T targets[LAB_SHARED_THREADS];                                                      \
    lab_shared_block<Op, LAB_SHARED_THREADS>(targets, (const T*)p.values, lab_from_bits<T>(p.init), \
                                             lab_from_bits<T>(p.step), p.first_round,              \
                                             p.threads_per_address, p.rounds, (T*)p.finals,        \
                                             p.warp_cycles);                                       \
  }

LAB_SHARED_KERNEL(tally_lab_shared_add_u32, LabAdd<u32>)
LAB_SHARED_KERNEL(tally_lab_shared_max_u32, LabMaxU32)
LAB_SHARED_KERNEL(tally_lab_shared_add_u64, LabAdd<u64>)
LAB_SHARED_KERNEL(tally_lab_shared_add_f32, LabAdd<float>)
LAB_SHARED_KERNEL(tally_lab_shared_add_f32_cas, LabAddF32Cas)
LAB_SHARED_KERNEL(tally_lab_shared_max_f32_cas, LabMaxF32Cas)
LAB_SHARED_KERNEL(tally_lab_shared_max_f32_int, LabMaxF32Int)
#endif  // LAB_PART == 1
