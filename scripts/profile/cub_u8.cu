// CUB's 256-bin histogram of 2^26 uniform u8 samples, run a few times: a target for ncu beside
// tally's own kernel (scripts/profile/u8.sh). Build: nvcc -O3 -std=c++17 -arch=sm_90
#include <cub/cub.cuh>
#include <cstdio>
#include <cstdint>
__global__ void fill(uint8_t* d, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t x = (uint32_t)i * 2654435761u; x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15;
    d[i] = (uint8_t)(x >> 8);
  }
}
int main() {
  const size_t n = 1ull << 26;
  uint8_t* d; int* h; void* tmp = nullptr; size_t tb = 0;
  cudaMalloc(&d, n); cudaMalloc(&h, 256 * sizeof(int));
  fill<<<1024, 256>>>(d, n);
  cub::DeviceHistogram::HistogramEven(tmp, tb, d, h, 257, 0, 256, (int)n);
  cudaMalloc(&tmp, tb);
  for (int r = 0; r < 3; ++r) cub::DeviceHistogram::HistogramEven(tmp, tb, d, h, 257, 0, 256, (int)n);
  cudaError_t e = cudaDeviceSynchronize();
  printf("cub u8 histogram: %s\n", cudaGetErrorString(e));
  return e != cudaSuccess;
}
