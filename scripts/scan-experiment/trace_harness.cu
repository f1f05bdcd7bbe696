// Times, checks and (built with -DTALLY_SCAN_TRACE, on a copy of scan.cu patched by
// run-trace.sh) traces one scan.cu build outside tally: an f32 inclusive sum of n elements whose
// running sums are small integers (exact), one block a tile, median of 30 launches, every
// output compared with an integer reference. The trace of the last launch (per tile: SM,
// clock64 at its start, after its rows, before and after its look-back, at its end; the
// look-back's polls; globaltimer at the same points) goes to the file named by argv[3].
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
  T *in; O *out; u32* overflow; unsigned char* states;
  CK(cudaMalloc(&in, n * sizeof(T))); CK(cudaMalloc(&out, n * sizeof(O))); CK(cudaMalloc(&overflow, 4));
  const size_t sbytes = 64 << 20; CK(cudaMalloc(&states, sbytes));
  std::vector<T> h(n); std::vector<long long> ref(n);
  long long run = 0;
  for (size_t i = 0; i < n; ++i) { h[i] = (T)((long long)((i * 2654435761ull) % 7) - 3); run += (long long)h[i]; ref[i] = run; }
  CK(cudaMemcpy(in, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const unsigned long long tiles = (n + TILE - 1) / TILE;
  ScanParams p{in, nullptr, out, n, overflow, states, nullptr, (u32)tiles, (u32)((tiles + 31) / 32),
               (u32)((tiles + 1023) / 1024), 0, (u32)det, 0, 0, 0};
#ifdef TALLY_SCAN_TRACE
  unsigned long long* trace; const size_t tbytes = tiles * TRACE_WORDS * 8;
  CK(cudaMalloc(&trace, tbytes)); CK(cudaMemset(trace, 0, tbytes));
  CK(cudaMemcpyToSymbol(tally_trace_buf, &trace, sizeof(trace)));
#endif
  cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, tally_scan));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ms;
  for (int r = 0; r < 33; ++r) {
    CK(cudaMemset(states, 0, sbytes)); CK(cudaMemset(out, 0xff, n * sizeof(O)));
    cudaEventRecord(a);
    tally_scan<<<(unsigned)tiles, BLOCK_THREADS>>>(p);
    cudaEventRecord(b);
    CK(cudaEventSynchronize(b)); CK(cudaGetLastError());
    float t; cudaEventElapsedTime(&t, a, b); if (r >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::vector<O> o(n); CK(cudaMemcpy(o.data(), out, n * sizeof(O), cudaMemcpyDeviceToHost));
  size_t bad = 0, first = n;
  for (size_t i = 0; i < n; ++i) if (o[i] != (O)ref[i]) { if (!bad) first = i; ++bad; }
  const double med = ms[ms.size() / 2];
  printf("%-24s det=%d n=%llu tiles=%llu (%d regs)  %.4f ms  %.1f GB/s  %s", VARIANT_NAME, det, n, tiles, fa.numRegs, med,
         (double)n * (sizeof(T) + sizeof(O)) / med / 1e6, bad ? "WRONG" : "ok");
  if (bad) printf(" (%zu wrong, first at %zu)", bad, first);
  printf("\n");
#ifdef TALLY_SCAN_TRACE
  if (argc > 3) {
    std::vector<unsigned long long> t(tiles * TRACE_WORDS);
    CK(cudaMemcpy(t.data(), trace, tbytes, cudaMemcpyDeviceToHost));
    FILE* f = fopen(argv[3], "wb"); fwrite(t.data(), 8, t.size(), f); fclose(f);
  }
#endif
  return bad ? 2 : 0;
}
