// Timing harness for scan.cu variants (f32 sum), kernel only, median of 30.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include "scan_variant.cu"
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
int main(int argc, char** argv) {
  const unsigned long long n = 1ull << 28;
  const int det = argc > 1 ? atoi(argv[1]) : 0;
  float *in, *out; u32* overflow; unsigned char* states;
  CK(cudaMalloc(&in, n * 4)); CK(cudaMalloc(&out, n * 4)); CK(cudaMalloc(&overflow, 4));
  const size_t sbytes = 64 << 20; CK(cudaMalloc(&states, sbytes));
  std::vector<float> h(n); for (size_t i = 0; i < n; ++i) h[i] = (float)((i * 2654435761u) % 7) - 3.0f;
  CK(cudaMemcpy(in, h.data(), n * 4, cudaMemcpyHostToDevice));
  const unsigned long long tiles = (n + TILE - 1) / TILE;
  ScanParams p{in, nullptr, out, n, overflow, states, (u32)tiles, (u32)((tiles + 31) / 32), (u32)((tiles + 1023) / 1024), 0, (u32)det, 0};
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ms;
  for (int r = 0; r < 33; ++r) {
    CK(cudaMemset(states, 0, sbytes));
    cudaEventRecord(a);
    tally_scan<<<(unsigned)tiles, BLOCK_THREADS>>>(p);
    cudaEventRecord(b);
    CK(cudaEventSynchronize(b)); CK(cudaGetLastError());
    float t; cudaEventElapsedTime(&t, a, b); if (r >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::vector<float> o(4096); CK(cudaMemcpy(o.data(), out + n - 4096, 4096 * 4, cudaMemcpyDeviceToHost));
  double s = 0; for (size_t i = 0; i < n; ++i) s += h[i];
  printf("%-40s det=%d  %.4f ms  %.1f GB/s  last=%.0f ref=%.0f\n", VARIANT_NAME, det, ms[ms.size() / 2], 2.0 * n * 4 / ms[ms.size() / 2] / 1e6, o[4095], s);
  return 0;
}
