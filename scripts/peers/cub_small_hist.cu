// CUB's HistogramEven of small resident inputs (i32 samples uniform over 256 bins), the peer of
// `tally bench hist --size N --bins 256 --dtypes i32` in the same call: the kernel pair's time by
// CUDA events (median of 200), and end to end on the host clock (the call and a wait for the
// stream, median of 2000 after 200 warm-ups; the counts stay on the device). Also the floor of
// that measure on this host: an empty kernel launched and waited for.
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/cub_small_hist scripts/peers/cub_small_hist.cu && /tmp/cub_small_hist
#include <cub/cub.cuh>
#include <algorithm>
#include <chrono>
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

__global__ void fill(int* d, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned long long x = i * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    d[i] = (int)((x >> 32) & 255);
  }
}

__global__ void empty() {}

template <class F>
double median_host_us(F f, int reps) {
  std::vector<double> t;
  for (int i = 0; i < 200; ++i) f();
  for (int i = 0; i < reps; ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  const size_t max_n = 1ull << 24;
  int* d;
  unsigned* h;
  CHECK(cudaMalloc(&d, max_n * sizeof(int)));
  CHECK(cudaMalloc(&h, 256 * sizeof(unsigned)));
  fill<<<1024, 256>>>(d, max_n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  bool failed = false;
  const double floor_us = median_host_us(
      [&] {
        empty<<<1, 32, 0, s>>>();
        failed |= cudaStreamSynchronize(s) != cudaSuccess;
      },
      2000);
  printf("empty kernel launched and waited for: %.1f us (host clock)\n", floor_us);
  for (size_t n : {size_t(1) << 10, size_t(1) << 16, size_t(1) << 20, size_t(1) << 24}) {
    size_t temp_bytes = 0;
    CHECK(cub::DeviceHistogram::HistogramEven(nullptr, temp_bytes, d, h, 257, 0, 256, (int)n, s));
    void* temp;
    CHECK(cudaMalloc(&temp, std::max<size_t>(temp_bytes, 1)));
    auto call = [&] {
      failed |= cub::DeviceHistogram::HistogramEven(temp, temp_bytes, d, h, 257, 0, 256, (int)n, s) != cudaSuccess;
    };
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int i = 0; i < 220; ++i) {
      CHECK(cudaEventRecord(a, s));
      call();
      CHECK(cudaEventRecord(b, s));
      CHECK(cudaEventSynchronize(b));
      float t;
      CHECK(cudaEventElapsedTime(&t, a, b));
      if (i >= 20) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double e2e = median_host_us(
        [&] {
          call();
          failed |= cudaStreamSynchronize(s) != cudaSuccess;
        },
        2000);
    printf("cub HistogramEven i32 256 bins n=%9zu  events %7.1f us  end to end %7.1f us\n", n,
           ms[ms.size() / 2] * 1e3, e2e);
    CHECK(cudaFree(temp));
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
  }
  CHECK(cudaGetLastError());
  if (failed) {
    printf("a CUB call or a wait failed\n");
    return 1;
  }
  printf("done\n");
  return 0;
}
