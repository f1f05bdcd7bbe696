// CUB's HistogramEven of 2^28 f32 samples (uniform over [0, bins), and 90% in bin 0) at 256,
// 4096 and 16384 bins, median of 20 (CUDA events): the peer of `tally bench hist --dtypes f32`
// in the same call. Build and run on the GPU host:
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cubf scripts/peers/cub_hist_float.cu && /tmp/cubf
#include <cub/cub.cuh>
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <vector>

__global__ void fill(float* d, size_t n, int bins, int hot_percent) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t x = (uint32_t)i * 2654435761u + 777u; x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    const float u = (x >> 8) * (1.0f / 16777216.0f);
    d[i] = (x % 100u) < (uint32_t)hot_percent ? 0.5f : u * bins;
  }
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

int main() {
  const size_t n = 1ull << 28;
  float* d; int* h; void* tmp = nullptr; size_t tb = 0;
  CK(cudaMalloc(&d, n * 4)); CK(cudaMalloc(&h, 16384 * sizeof(int)));
  CK(cub::DeviceHistogram::HistogramEven(tmp, tb, d, h, 16385, 0.0f, 16384.0f, (int)n));
  size_t tb2 = tb;
  CK(cub::DeviceHistogram::HistogramEven(tmp, tb, d, h, 257, 0.0f, 256.0f, (int)n));
  CK(cudaMalloc(&tmp, std::max(tb, tb2) + 256));
  tb = std::max(tb, tb2) + 256;
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int bins : {256, 4096, 16384}) {
    for (int hot : {0, 90}) {
      fill<<<4096, 256>>>(d, n, bins, hot);
      CK(cudaDeviceSynchronize());
      std::vector<float> ms;
      for (int r = 0; r < 21; ++r) {
        size_t t = tb;
        cudaEventRecord(e0);
        CK(cub::DeviceHistogram::HistogramEven(tmp, t, d, h, bins + 1, 0.0f, (float)bins, (int)n));
        cudaEventRecord(e1);
        CK(cudaEventSynchronize(e1));
        float x; cudaEventElapsedTime(&x, e0, e1); ms.push_back(x);
      }
      std::sort(ms.begin(), ms.end());
      printf("cub HistogramEven f32 %5d bins %-8s n=%zu  %.4f ms  %7.1f GB/s\n", bins, hot ? "hot90" : "uniform", n, ms[10], n * 4.0 / (ms[10] * 1e6));
    }
  }
  return 0;
}
