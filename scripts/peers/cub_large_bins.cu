// CUB's DeviceHistogram::HistogramEven at large bin counts, beside a naive one-atomic-per-sample
// kernel, on 2^28 i32 samples resident on the device: uniform and Zipf(1.1) over the bins (bin 0
// the most frequent, as in tally's generator). Prints one row per case, the temporary storage
// CUB asks for, and the read bandwidth of the same buffer for the fraction. The naive kernel runs
// first: a CUB failure (which leaves the context unusable) then still leaves its figure.
//   nvcc -O3 -std=c++17 -arch=sm_90 -o cub_large_bins cub_large_bins.cu && ./cub_large_bins [log2 n]
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      printf("CUDA error %s at %s:%d (%s)\n", cudaGetErrorString(e_), __FILE__, __LINE__, #x); \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

__device__ unsigned long long mix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// cdf == nullptr: uniform; else the smallest k with u < cdf[k].
__global__ void fill(int* d, size_t n, int bins, const double* cdf, unsigned long long seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned long long r = mix(seed ^ (i * 0x2545f4914f6cdd1dull));
    if (!cdf) {
      d[i] = (int)(r % (unsigned)bins);
      continue;
    }
    double u = (r >> 11) * (1.0 / 9007199254740992.0);
    int lo = 0, hi = bins - 1;
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (cdf[mid] <= u) lo = mid + 1; else hi = mid;
    }
    d[i] = lo;
  }
}

__global__ void naive(const int* d, unsigned* h, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    atomicAdd(&h[d[i]], 1u);
}

__global__ void read_only(const int4* d, size_t n, int* sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    int4 v = d[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678) *sink = acc;
}

template <class F>
float median_ms(F f, int reps) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 2; i++) f();
  std::vector<float> t;
  for (int i = 0; i < reps; i++) {
    cudaEventRecord(a);
    f();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  const int log_n = argc > 1 ? atoi(argv[1]) : 28;
  const size_t n = (size_t)1 << log_n;
  int* d;
  unsigned* h;
  int* sink;
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  CHECK(cudaMalloc(&h, ((size_t)1 << 24) * sizeof(unsigned)));
  CHECK(cudaMalloc(&sink, sizeof(int)));
  int sms;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int grid = sms * 8;
  CHECK(cudaMemset(d, 0, n * sizeof(int)));
  float read = median_ms([&] { read_only<<<grid, 256>>>((const int4*)d, n / 4, sink); }, 20);
  CHECK(cudaGetLastError());
  double read_gbs = n * 4.0 / read / 1e6;
  printf("read-only pass: %.1f GB/s (%zu samples)\n", read_gbs, n);
  for (int bins : {65536, 1 << 20, 1 << 24}) {
    for (int zipf = 0; zipf < 2; zipf++) {
      double* cdf = nullptr;
      if (zipf) {
        std::vector<double> c(bins);
        double acc = 0;
        for (int k = 0; k < bins; k++) c[k] = (acc += std::pow(k + 1.0, -1.1));
        for (double& v : c) v /= acc;
        CHECK(cudaMalloc(&cdf, bins * sizeof(double)));
        CHECK(cudaMemcpy(cdf, c.data(), bins * sizeof(double), cudaMemcpyHostToDevice));
      }
      fill<<<grid, 256>>>(d, n, bins, cdf, 0x7a11 ^ bins);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      if (cdf) CHECK(cudaFree(cdf));
      const char* dist = zipf ? "zipf" : "uniform";
      float ms = median_ms([&] {
        cudaMemsetAsync(h, 0, bins * sizeof(unsigned));
        naive<<<grid, 256>>>(d, h, n);
      }, 5);
      CHECK(cudaGetLastError());
      printf("naive global atomics i32 %9d bins %-7s: %9.4f ms %8.1f GB/s %5.1f%% of read\n", bins, dist, ms, n * 4.0 / ms / 1e6,
             100.0 * n * 4.0 / ms / 1e6 / read_gbs);
      size_t temp_bytes = 0;
      CHECK(cub::DeviceHistogram::HistogramEven(nullptr, temp_bytes, d, h, bins + 1, 0, bins, (int)n));
      if (bins >= (1 << 24)) {
        // Measured on an H200 with CUDA 13 (docs/PERF.md v12): at 2^24 bins CUB's kernel stops
        // with an illegal memory access, which leaves the context unusable; not run.
        printf("cub HistogramEven i32 %9d bins %-7s: not run (temp storage %.1f GB; faults at this size)\n", bins, dist,
               temp_bytes / 1e9);
        continue;
      }
      void* temp = nullptr;
      cudaError_t e = cudaMalloc(&temp, temp_bytes);
      if (e != cudaSuccess) {
        printf("cub HistogramEven i32 %9d bins %-7s: temp storage %zu bytes: %s\n", bins, dist, temp_bytes, cudaGetErrorString(e));
        cudaGetLastError();
      } else {
        float ms = median_ms([&] { cub::DeviceHistogram::HistogramEven(temp, temp_bytes, d, h, bins + 1, 0, bins, (int)n); }, 5);
        CHECK(cudaGetLastError());
        printf("cub HistogramEven i32 %9d bins %-7s: %9.4f ms %8.1f GB/s %5.1f%% of read, temp storage %.1f MB\n", bins, dist, ms,
               n * 4.0 / ms / 1e6, 100.0 * n * 4.0 / ms / 1e6 / read_gbs, temp_bytes / 1e6);
        CHECK(cudaFree(temp));
      }
    }
  }
  return 0;
}
