// The read bandwidth a kernel can reach on this device: the yardstick for every figure tally
// reports. Read-only 16-byte loads, grid-stride, folded so the compiler cannot drop them.
#include "common.cuh"

struct BandwidthParams {
  const uint4* data;
  u64 n_vec;
  u32* sink;
};

extern "C" __global__ void tally_read_bandwidth(const BandwidthParams p) {
  const uint4* __restrict__ data = p.data;
  const u64 n_vec = p.n_vec;
  u32 acc = 0;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n_vec; i += 4 * stride) {
    const uint4 a = __ldg(data + i), b = __ldg(data + i + stride);
    const uint4 c = __ldg(data + i + 2 * stride), d = __ldg(data + i + 3 * stride);
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n_vec; i += stride) {
    const uint4 a = __ldg(data + i);
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x9e3779b9u) *p.sink = acc;  // practically never: keeps the loads alive
}
