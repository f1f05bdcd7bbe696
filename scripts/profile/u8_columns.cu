// Prototype for issue 14's u8 histogram: 256 bins of u8 samples counted (1) with one shared
// atomic per sample, as tally's block-shared kernel does, and (2) in per-thread byte counters
// ("columns") in shared memory with plain loads and stores, flushed into 32-bit totals before
// any byte can wrap; CUB's HistogramEven beside them, every result checked against (1).
// Build and run on the GPU host: nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/u8c scripts/profile/u8_columns.cu && /tmp/u8c
#include <cub/cub.cuh>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>

constexpr int THREADS = 256, VECS = 4;

__global__ void fill(uint8_t* d, size_t n, int hot_percent) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t x = (uint32_t)i * 2654435761u + 12345u; x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    d[i] = (x % 100u) < (uint32_t)hot_percent ? 0 : (uint8_t)(x >> 8);
  }
}

__global__ void __launch_bounds__(THREADS) atoms(const uint4* in, size_t nvec, unsigned* out) {
  __shared__ unsigned h[256];
  h[threadIdx.x] = 0;
  __syncthreads();
  for (size_t v = (size_t)blockIdx.x * THREADS * VECS + threadIdx.x; v < nvec; v += (size_t)gridDim.x * THREADS * VECS) {
    uint4 b[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) b[k] = v + k * THREADS < nvec ? in[v + k * THREADS] : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      if (v + k * THREADS >= nvec) break;
      const uint32_t w[4] = {b[k].x, b[k].y, b[k].z, b[k].w};
#pragma unroll
      for (int j = 0; j < 16; ++j) atomicAdd(&h[__byte_perm(w[j / 4], 0, 0x4440 | (j % 4))], 1u);
    }
  }
  __syncthreads();
  if (h[threadIdx.x]) atomicAdd(out + threadIdx.x, h[threadIdx.x]);
}

// Thread t's byte counter of bin b: word b * 64 + t % 64, byte t / 64. A warp's 32 lanes are 32
// consecutive t % 64, so one bank each whatever their bins; a word's four bytes belong to four
// warps (byte stores do not disturb their neighbours).
__global__ void __launch_bounds__(THREADS) columns(const uint4* in, size_t nvec, unsigned* out) {
  extern __shared__ uint32_t col[];  // 256 bins x 64 words
  uint8_t* bytes = reinterpret_cast<uint8_t*>(col);
  const uint32_t mine = (threadIdx.x % 64) * 4 + threadIdx.x / 64;  // byte offset within a bin's 256
  for (int i = threadIdx.x; i < 256 * 64; i += THREADS) col[i] = 0;
  unsigned total = 0;  // bin threadIdx.x, flushed
  __syncthreads();
  int since_flush = 0;  // 16-byte vectors this thread counted since the last flush (<= 15: <= 240 < 256)
  const size_t stride = (size_t)gridDim.x * THREADS * VECS;
  for (size_t base = (size_t)blockIdx.x * THREADS * VECS; base < nvec; base += stride) {
    const size_t v = base + threadIdx.x;
    uint4 b[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) b[k] = v + k * THREADS < nvec ? in[v + k * THREADS] : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      if (v + k * THREADS < nvec) {
        const uint32_t w[4] = {b[k].x, b[k].y, b[k].z, b[k].w};
#pragma unroll
        for (int j = 0; j < 16; ++j) {
          const uint32_t bin = __byte_perm(w[j / 4], 0, 0x4440 | (j % 4));
          uint8_t* c = bytes + bin * 256 + mine;
          *c = *c + 1;
        }
      }
    }
    since_flush += VECS;
    // Block-uniform: every thread of the block went round the same number of times.
    if (since_flush + VECS > 15) {
      __syncthreads();
      uint32_t s = 0;
      uint32_t* row = col + threadIdx.x * 64;
#pragma unroll 8
      for (int i = 0; i < 64; ++i) { s = __dp4a(row[i], 0x01010101u, s); row[i] = 0; }
      total += s;
      since_flush = 0;
      __syncthreads();
    }
  }
  __syncthreads();
  uint32_t s = 0;
  for (int i = 0; i < 64; ++i) s = __dp4a(col[threadIdx.x * 64 + i], 0x01010101u, s);
  total += s;
  if (total) atomicAdd(out + threadIdx.x, total);
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

int main() {
  const size_t n = 1ull << 28, nvec = n / 16;
  uint8_t* d; unsigned* h; void* tmp = nullptr; size_t tb = 0;
  CK(cudaMalloc(&d, n)); CK(cudaMalloc(&h, 256 * sizeof(unsigned)));
  CK(cub::DeviceHistogram::HistogramEven(tmp, tb, d, (int*)h, 257, 0, 256, (int)n));
  CK(cudaMalloc(&tmp, tb));
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaFuncSetAttribute(columns, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
  int per_sm_a, per_sm_c;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_a, atoms, THREADS, 0));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_c, columns, THREADS, 65536));
  printf("blocks per SM: atoms %d, columns %d\n", per_sm_a, per_sm_c);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int hot : {0, 90, 100}) {
    fill<<<4096, 256>>>(d, n, hot);
    CK(cudaDeviceSynchronize());
    std::vector<unsigned> want(256), got(256);
    for (int which = 0; which < 3; ++which) {
      std::vector<float> ms;
      for (int r = 0; r < 11; ++r) {
        CK(cudaMemset(h, 0, 256 * sizeof(unsigned)));
        cudaEventRecord(e0);
        if (which == 0) atoms<<<sms * per_sm_a, THREADS>>>((const uint4*)d, nvec, h);
        else if (which == 1) columns<<<sms * per_sm_c, THREADS, 65536>>>((const uint4*)d, nvec, h);
        else CK(cub::DeviceHistogram::HistogramEven(tmp, tb, d, (int*)h, 257, 0, 256, (int)n));
        cudaEventRecord(e1);
        CK(cudaEventSynchronize(e1));
        CK(cudaGetLastError());
        float t; cudaEventElapsedTime(&t, e0, e1); ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      CK(cudaMemcpy(which == 0 ? want.data() : got.data(), h, 1024, cudaMemcpyDeviceToHost));
      bool ok = which == 0 || got == want;
      const char* name[] = {"atoms", "columns", "cub"};
      printf("hot %3d%%  %-8s %.4f ms  %7.1f GB/s  %s\n", hot, name[which], ms[5], n / (ms[5] * 1e6), ok ? "ok" : "MISMATCH");
    }
  }
  return 0;
}
