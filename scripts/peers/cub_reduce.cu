// CUB's DeviceReduce beside `tally bench reduce`, with a mode for profilers: one op, one size.
//   cub_reduce                 every row (Sum f32/f64/i32, Min/Max/ArgMin/ArgMax f32) at 2^20, 2^24, 2^28
//   cub_reduce OP LOG2 REPS    one op (sum-f32, min-f32, max-f32, argmin-f32, argmax-f32, sum-f64,
//                              sum-i32) at 2^LOG2, REPS launches after one warm-up (for ncu)
// CUDA events, median of 30 reps; the data: uniform f32 in [0, 1), its f64, i32 in [-2^20, 2^20).
// Build: nvcc -O3 -std=c++17 -arch=sm_90 cub_reduce.cu -o cub_reduce
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1);} } while (0)

__device__ __forceinline__ uint32_t mix(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16; return x;
}
__global__ void fill(float* f, double* d, int* i, size_t n) {
  for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
    const uint32_t h = mix((uint32_t)k * 2654435761u ^ 0x5eedu);
    f[k] = (float)(h & 0xffffff) / 16777216.0f;
    d[k] = f[k];
    i[k] = (int)(h % (1u << 21)) - (1 << 20);
  }
}

static float median_ms(const std::function<void()>& f, int reps) {
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int r = 0; r < 3; r++) f();
  CK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  const size_t N = size_t(1) << 28;
  float* f; double* d; int* i; float* fo; double* dout; int* io; int64_t* idx; void* tmp = nullptr; size_t t = 0;
  CK(cudaMalloc(&f, N * 4)); CK(cudaMalloc(&d, N * 8)); CK(cudaMalloc(&i, N * 4));
  CK(cudaMalloc(&fo, 16)); CK(cudaMalloc(&dout, 16)); CK(cudaMalloc(&io, 16)); CK(cudaMalloc(&idx, 16));
  fill<<<2048, 256>>>(f, d, i, N);
  CK(cudaGetLastError());
  // Each op with temp storage `tmp` of `t` bytes (null: asks for the size into `t`).
  struct Op { const char* name; int bytes; std::function<cudaError_t(size_t)> run; };
  std::vector<Op> ops = {
    {"sum-f32", 4, [&](size_t n) { return cub::DeviceReduce::Sum(tmp, t, f, fo, (int)n); }},
    {"min-f32", 4, [&](size_t n) { return cub::DeviceReduce::Min(tmp, t, f, fo, (int)n); }},
    {"max-f32", 4, [&](size_t n) { return cub::DeviceReduce::Max(tmp, t, f, fo, (int)n); }},
    {"argmin-f32", 4, [&](size_t n) { return cub::DeviceReduce::ArgMin(tmp, t, f, fo, idx, (int64_t)n); }},
    {"argmax-f32", 4, [&](size_t n) { return cub::DeviceReduce::ArgMax(tmp, t, f, fo, idx, (int64_t)n); }},
    {"sum-f64", 8, [&](size_t n) { return cub::DeviceReduce::Sum(tmp, t, d, dout, (int)n); }},
    {"sum-i32", 4, [&](size_t n) { return cub::DeviceReduce::Sum(tmp, t, i, io, (int)n); }},
  };
  size_t need = 0;
  for (auto& op : ops) {
    t = 0;
    CK(op.run(N));
    need = std::max(need, t);
  }
  CK(cudaMalloc(&tmp, need));
  t = need;
  if (argc == 4) {
    const int log2 = atoi(argv[2]);
    if (log2 < 0 || log2 > 28) {
      printf("LOG2 must be 0 to 28 (the buffers hold 2^28 elements)\n");
      return 2;
    }
    const size_t n = size_t(1) << log2;
    for (auto& op : ops) {
      if (strcmp(op.name, argv[1]) != 0) continue;
      for (int r = 0; r <= atoi(argv[3]); r++) CK(op.run(n));
      CK(cudaDeviceSynchronize());
      printf("cub %s n=%zu ran %d times\n", op.name, n, atoi(argv[3]) + 1);
      return 0;
    }
    printf("unknown op %s\n", argv[1]);
    return 2;
  }
  for (int log2 : {20, 24, 28}) {
    const size_t n = size_t(1) << log2;
    for (auto& op : ops) {
      const float ms = median_ms([&] { CK(op.run(n)); }, 30);
      printf("cub %-12s n=%11zu  %9.4f ms  %8.1f GB/s\n", op.name, n, ms, (double)op.bytes * n / ms / 1e6);
    }
  }
  return 0;
}
