// CUB's DeviceHistogram::HistogramEven on the inputs `tally lab histogram` measures: the column
// beside tally's figures. tally builds it at run time where nvcc is installed (never cargo):
//   nvcc -O3 -std=c++17 -arch=sm_XX -o tally-cub-peer cub_peer.cu
// Usage: tally-cub-peer SAMPLES SEED REPS BINS:THRESHOLD [BINS:THRESHOLD ...]
// Each case generates SAMPLES i32 samples on the device exactly as src/lab/histogram.rs does,
// times REPS calls after two warm-ups (CUDA events; a call includes CUB's zeroing of the
// counters, as tally's timings include its own) and prints
//   case BINS THRESHOLD MEDIAN_MS FNV
// where FNV is FNV-1a (64 bits) over the counts as little-endian u32s, for tally to check.
// Any failure prints "error ..." and exits non-zero.
#include <cub/cub.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                             \
  do {                                                                          \
    cudaError_t err_ = (call);                                                  \
    if (err_ != cudaSuccess) {                                                  \
      printf("error %s: %s\n", #call, cudaGetErrorString(err_));                \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

__host__ __device__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Sample i: bin 0 when the top 24 bits of its random word fall below THRESHOLD (the hot
// fraction times 2^24), otherwise its low 32 bits modulo the bin count.
__global__ void generate(int* out, uint64_t n, uint64_t seed, uint32_t bins, uint64_t threshold) {
  const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint64_t r = splitmix64(seed ^ (i * 0x2545f4914f6cdd1dull));
    out[i] = (r >> 40) < threshold ? 0 : (int)((r & 0xffffffffull) % bins);
  }
}

int main(int argc, char** argv) {
  if (argc < 5) {
    printf("error usage: %s SAMPLES SEED REPS BINS:THRESHOLD...\n", argv[0]);
    return 2;
  }
  const uint64_t n = strtoull(argv[1], nullptr, 0);
  const uint64_t seed = strtoull(argv[2], nullptr, 0);
  const int reps = std::max(1, atoi(argv[3]));
  if (n == 0 || n > 0x7fffffffull) {
    printf("error SAMPLES must be from 1 to 2^31-1\n");
    return 2;
  }
  int* samples = nullptr;
  CHECK(cudaMalloc(&samples, n * sizeof(int)));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int a = 4; a < argc; ++a) {
    unsigned bins = 0;
    unsigned long long threshold = 0;
    if (sscanf(argv[a], "%u:%llu", &bins, &threshold) != 2 || bins == 0) {
      printf("error bad case '%s'\n", argv[a]);
      return 2;
    }
    generate<<<1024, 256>>>(samples, n, seed, bins, threshold);
    CHECK(cudaGetLastError());
    int* counts = nullptr;
    CHECK(cudaMalloc(&counts, bins * sizeof(int)));
    void* temp = nullptr;
    size_t temp_bytes = 0;
    CHECK(cub::DeviceHistogram::HistogramEven(temp, temp_bytes, samples, counts, (int)bins + 1, 0, (int)bins, (int)n));
    CHECK(cudaMalloc(&temp, temp_bytes));
    std::vector<float> ms;
    for (int r = 0; r < reps + 2; ++r) {
      CHECK(cudaEventRecord(start));
      CHECK(cub::DeviceHistogram::HistogramEven(temp, temp_bytes, samples, counts, (int)bins + 1, 0, (int)bins, (int)n));
      CHECK(cudaGetLastError());
      CHECK(cudaEventRecord(stop));
      CHECK(cudaEventSynchronize(stop));
      float t = 0;
      CHECK(cudaEventElapsedTime(&t, start, stop));
      if (r >= 2) ms.push_back(t);
    }
    std::vector<int> host(bins);
    CHECK(cudaMemcpy(host.data(), counts, bins * sizeof(int), cudaMemcpyDeviceToHost));
    uint64_t fnv = 0xcbf29ce484222325ull;
    for (unsigned b = 0; b < bins; ++b) {
      for (int k = 0; k < 4; ++k) {
        fnv ^= (uint8_t)((uint32_t)host[b] >> (8 * k));
        fnv *= 0x100000001b3ull;
      }
    }
    std::sort(ms.begin(), ms.end());
    printf("case %u %llu %.6f %016llx\n", bins, threshold, ms[ms.size() / 2], (unsigned long long)fnv);
    fflush(stdout);
    CHECK(cudaFree(temp));
    CHECK(cudaFree(counts));
  }
  CHECK(cudaFree(samples));
  return 0;
}
