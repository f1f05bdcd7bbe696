// Adds one chunk's counters into the running totals of a streamed histogram, or (`assign`)
// widens a plan's counters into a caller's 64-bit counts: 32- or 64-bit counters in, 64-bit
// words out. One thread per counter, grid-stride; the counting kernels and this one run in
// stream order, so no atomics are needed.
#include "common.cuh"

struct AccumulateParams {
  const void* from;
  u64* into;
  u64 n;
  u32 wide;
  u32 assign;  // 1: into[i] = from[i]; 0: into[i] += from[i]
};

extern "C" __global__ void tally_accumulate(const AccumulateParams p) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += stride) {
    const u64 v = p.wide ? ((const u64*)p.from)[i] : (u64)((const u32*)p.from)[i];
    p.into[i] = p.assign ? v : p.into[i] + v;
  }
}
