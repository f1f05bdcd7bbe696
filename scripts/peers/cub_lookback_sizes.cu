// CUB's single-pass primitives (the ones built on decoupled look-back) at small and mid sizes,
// to set beside `tally bench scan|select|unique|rle|reduce-by-key --log2-sizes 16,20,24,28`
// in the same call: at these sizes a call is a few launches and latencies, not bandwidth.
// CUDA events around each call (CUB's init kernel and main kernel), median of 50; the data as
// in the peers' cub_primitives.cu (f32 uniform in [-0.5, 0.5), 50% kept below 0; i32 keys in
// runs of 8).
// Build: nvcc -O3 -std=c++17 -arch=sm_90 cub_lookback_sizes.cu -o cub_lookback_sizes
#include <cub/cub.cuh>
#include <cuda/std/functional>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1);} } while (0)

template <class F> float time_ms(F f, int reps = 50) {
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int i = 0; i < 5; i++) f();
  CK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int i = 0; i < reps; i++) {
    CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
static void row(const char* name, size_t n, float ms) {
  printf("%-48s n=%11zu  %9.4f ms  %9.2f us\n", name, n, ms, ms * 1e3);
}
__device__ __forceinline__ uint32_t mix(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16; return x;
}
__global__ void fill_f32(float* d, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    d[i] = (float)(mix((uint32_t)i * 2654435761u ^ seed) & 0xffffff) / 16777216.0f - 0.5f;
}
__global__ void fill_runs(int* d, size_t n, int run) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    d[i] = (int)(mix((uint32_t)(i / run) * 2654435761u) % 100000u);
}
struct Below {
  float t;
  __host__ __device__ bool operator()(const float& x) const { return x < t; }
};

int main() {
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  printf("device %s, %d SMs\n", p.name, p.multiProcessorCount);
  const size_t N = 1ull << 28;
  const int blocks = p.multiProcessorCount * 8;
  float *x, *y; int *k, *ko, *counts; int* nsel;
  CK(cudaMalloc(&x, N * 4)); CK(cudaMalloc(&y, N * 4)); CK(cudaMalloc(&k, N * 4)); CK(cudaMalloc(&ko, N * 4));
  CK(cudaMalloc(&counts, N * 4)); CK(cudaMalloc(&nsel, 64));
  fill_f32<<<blocks, 256>>>(x, N, 7); fill_runs<<<blocks, 256>>>(k, N, 8);
  CK(cudaDeviceSynchronize());
  size_t tb = 0, t = 0;
  auto grow = [&](size_t s) { tb = std::max(tb, s); };
  cub::DeviceScan::InclusiveSum(nullptr, t, x, y, (int)N); grow(t);
  cub::DeviceScan::InclusiveSumByKey(nullptr, t, k, x, y, (int)N); grow(t);
  cub::DeviceSelect::If(nullptr, t, x, y, nsel, (int)N, Below{0.0f}); grow(t);
  cub::DeviceSelect::Unique(nullptr, t, k, ko, nsel, (int)N); grow(t);
  cub::DeviceRunLengthEncode::Encode(nullptr, t, k, ko, counts, nsel, (int)N); grow(t);
  cub::DeviceReduce::ReduceByKey(nullptr, t, k, ko, x, y, nsel, cuda::std::plus<>{}, (int)N); grow(t);
  void* tmp; CK(cudaMalloc(&tmp, tb));
  for (size_t n : {(size_t)1 << 16, (size_t)1 << 20, (size_t)1 << 24, N}) {
    t = tb;
    row("cub DeviceScan::InclusiveSum f32", n, time_ms([&] { cub::DeviceScan::InclusiveSum(tmp, t, x, y, (int)n); }));
    row("cub DeviceScan::InclusiveSumByKey i32 keys f32", n,
        time_ms([&] { cub::DeviceScan::InclusiveSumByKey(tmp, t, k, x, y, (int)n); }));
    row("cub DeviceSelect::If f32 (50% kept)", n,
        time_ms([&] { cub::DeviceSelect::If(tmp, t, x, y, nsel, (int)n, Below{0.0f}); }));
    row("cub DeviceSelect::Unique i32 (runs 8)", n, time_ms([&] { cub::DeviceSelect::Unique(tmp, t, k, ko, nsel, (int)n); }));
    row("cub DeviceRunLengthEncode::Encode i32 (runs 8)", n,
        time_ms([&] { cub::DeviceRunLengthEncode::Encode(tmp, t, k, ko, counts, nsel, (int)n); }));
    row("cub DeviceReduce::ReduceByKey i32 keys f32 sum", n,
        time_ms([&] { cub::DeviceReduce::ReduceByKey(tmp, t, k, ko, x, y, nsel, cuda::std::plus<>{}, (int)n); }));
  }
  return 0;
}
