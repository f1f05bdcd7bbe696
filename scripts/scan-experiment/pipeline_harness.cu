// Times and checks scan.cu builds (nvcc) outside tally: inclusive sum of n elements whose
// partial sums are small integers (exact in every type), kernel only, median of 30 launches,
// every output element compared with an integer reference. The grid is `tiles` blocks (one
// tile each) or, for kernels that take tiles from the counter in a loop, the resident blocks.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include "scan_variant.cu"
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
int main(int argc, char** argv) {
  const int det = argc > 1 ? atoi(argv[1]) : 0;
  const unsigned long long n = argc > 2 ? strtoull(argv[2], 0, 0) : (1ull << 28);
  const int grid_mode = argc > 3 ? atoi(argv[3]) : 0;  // 0: one block per tile, k>0: k x resident
  T *in; O *out; u32* overflow; unsigned char* states;
  CK(cudaMalloc(&in, n * sizeof(T))); CK(cudaMalloc(&out, n * sizeof(O))); CK(cudaMalloc(&overflow, 4));
  const size_t sbytes = 64 << 20; CK(cudaMalloc(&states, sbytes));
  std::vector<T> h(n); std::vector<long long> ref(n);
  long long run = 0;
  for (size_t i = 0; i < n; ++i) { h[i] = (T)((long long)((i * 2654435761ull) % 7) - 3); run += (long long)h[i]; ref[i] = run; }
  CK(cudaMemcpy(in, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const unsigned long long tiles = (n + TILE - 1) / TILE;
  ScanParams p{in, nullptr, out, n, overflow, states, (u32)tiles, (u32)((tiles + 31) / 32), (u32)((tiles + 1023) / 1024), 0, (u32)det, 0};
  int sms = 0, per_sm = 0; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, tally_scan, BLOCK_THREADS, 0));
  unsigned grid = grid_mode == 0 ? (unsigned)tiles : (unsigned)std::min<unsigned long long>(tiles, (unsigned long long)grid_mode * sms * per_sm);
  cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, tally_scan));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ms;
  for (int r = 0; r < 33; ++r) {
    CK(cudaMemset(states, 0, sbytes)); CK(cudaMemset(out, 0xff, n * sizeof(O)));
    cudaEventRecord(a);
    tally_scan<<<grid, BLOCK_THREADS>>>(p);
    cudaEventRecord(b);
    CK(cudaEventSynchronize(b)); CK(cudaGetLastError());
    float t; cudaEventElapsedTime(&t, a, b); if (r >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::vector<O> o(n); CK(cudaMemcpy(o.data(), out, n * sizeof(O), cudaMemcpyDeviceToHost));
  size_t bad = 0, first = n;
  for (size_t i = 0; i < n; ++i) if (o[i] != (O)ref[i]) { if (!bad) first = i; ++bad; }
  const double med = ms[ms.size() / 2];
  printf("%-28s det=%d n=%llu grid=%u (%d/SM, %d regs)  %.4f ms  %.1f GB/s  %s", VARIANT_NAME, det, n, grid, per_sm, fa.numRegs, med,
         (double)n * (sizeof(T) + sizeof(O)) / med / 1e6, bad ? "WRONG" : "ok");
  if (bad) printf(" (%zu wrong, first at %zu)", bad, first);
  printf("\n");
  return bad ? 2 : 0;
}
