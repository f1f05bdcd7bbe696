// Prototype for issue 14's u8 histogram: fewer than one shared atomic per byte. Two neighbouring
// bytes (a, b) are one 16-bit key a + 256 b, counted in a histogram of the 65,536 byte pairs in
// shared memory (packed 16-bit or 8-bit counters that report a wrap through the atomic's old
// value), and folded into the 256 byte counts once per block: count[v] = sum_b P[v, b] +
// sum_a P[a, v]. Half the shared atomics of one per byte, for uniform data; skewed data puts
// many of a warp's atomics on one pair, which returning atomics serialise (the probe's job).
// Beside them: one shared atomic per byte (`atoms`, a standalone stand-in for tally's
// block-shared u8 kernel), CUB's HistogramEven, and a read-only pass for the bandwidth; the first
// of each variant's 11 runs is checked against a count on the host. docs/PERF.md v30 has the
// results: calls 1 and 3 of docs/runs/v30 ran subsets of this list (call 1 the first eight,
// call 3 the pf16 rows with atoms and the two 1024x4 pairs16), in this order, so that their
// profiles' launch counts (call2.sh, call3.sh) pick the same kernels.
// Build and run on the GPU host:
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/u8p scripts/profile/u8_pairs.cu && /tmp/u8p [uniform]
#include <cub/cub.cuh>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>

typedef unsigned long long u64;

__device__ uint32_t mix(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
  return x;
}

// hot >= 0: that percentage of bytes is 0, the rest uniform; hot == -1: Zipf 1.1 over 256
// values by the inverse of the host's cumulative table.
__global__ void fill(uint8_t* d, size_t n, int hot, const float* cdf) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint32_t x = mix((uint32_t)i * 2654435761u + 12345u ^ (uint32_t)(i >> 32));
    if (hot >= 0) {
      d[i] = (x % 100u) < (uint32_t)hot ? 0 : (uint8_t)(x >> 8);
    } else {
      const float u = (x >> 8) * (1.0f / 16777216.0f);
      int lo = 0, hi = 255;
      while (lo < hi) { const int m = (lo + hi) / 2; if (cdf[m] > u) hi = m; else lo = m + 1; }
      d[i] = (uint8_t)((lo * 37) & 255);  // scattered over the byte values
    }
  }
}

__global__ void read_only(const uint4* in, size_t nvec, unsigned* sink) {
  uint32_t s = 0;
  for (size_t v = blockIdx.x * (size_t)blockDim.x + threadIdx.x; v < nvec; v += (size_t)gridDim.x * blockDim.x) {
    const uint4 b = in[v];
    s ^= b.x ^ b.y ^ b.z ^ b.w;
  }
  if (s == 0x12345678u) *sink = s;
}

template <int THREADS, int VECS>
__global__ void __launch_bounds__(THREADS) atoms(const uint4* in, size_t nvec, u64* out) {
  __shared__ unsigned h[256];
  for (int i = threadIdx.x; i < 256; i += THREADS) h[i] = 0;
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
  for (int i = threadIdx.x; i < 256; i += THREADS)
    if (h[i]) atomicAdd(out + i, (u64)h[i]);
}

// FIELD_BITS 16: 32,768 words of two counters (128 KiB); 8: 16,384 words of four (64 KiB).
// Key k = a + 256 b lives in word k / F at field k % F (F fields a word).
template <int FIELD_BITS>
struct PairTable {
  static constexpr int F = 32 / FIELD_BITS;
  static constexpr int WORDS = 65536 / F;
  static constexpr uint32_t MASK = (1u << FIELD_BITS) - 1;
  static constexpr int ROW_WORDS = 256 / F;  // the words of one b
};

// A field wrapped: the word's add carried into the fields above it. Correct the byte counts for
// the difference between what the word shows and what was counted (+1 at `field`).
template <int FIELD_BITS>
__device__ __noinline__ void wrapped(u64* out, uint32_t word_index, int field, uint32_t old) {
  typedef PairTable<FIELD_BITS> T;
  const uint32_t inc = 1u << (field * FIELD_BITS);
  const uint32_t now = old + inc;
  const uint32_t b = word_index / T::ROW_WORDS, a0 = (word_index % T::ROW_WORDS) * T::F;
  for (int i = field; i < T::F; ++i) {
    const long long seen = (long long)((now >> (i * FIELD_BITS)) & T::MASK) - (long long)((old >> (i * FIELD_BITS)) & T::MASK);
    const long long fix = (i == field ? 1 : 0) - seen;
    if (fix) {
      atomicAdd(out + a0 + i, (u64)fix);
      atomicAdd(out + b, (u64)fix);
    }
  }
}

// One 16-byte load: its eight byte pairs counted in the table (the wrap of a packed counter seen
// in the atomic's old value and corrected in global memory, with CHECK).
template <int FIELD_BITS, bool CHECK>
__device__ __forceinline__ void count_pairs(uint32_t* table, u64* out, uint4 b) {
  typedef PairTable<FIELD_BITS> T;
  const uint32_t w[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const uint32_t key = j & 1 ? w[j / 2] >> 16 : w[j / 2] & 0xffffu;
    const uint32_t word = key / T::F;
    const int field = key % T::F;
    if (CHECK) {
      const uint32_t old = atomicAdd(table + word, 1u << (field * FIELD_BITS));
      if (((old >> (field * FIELD_BITS)) & T::MASK) == T::MASK) wrapped<FIELD_BITS>(out, word, field, old);
    } else {
      atomicAdd(table + word, 1u << (field * FIELD_BITS));
    }
  }
}

template <int THREADS, int FIELD_BITS>
__device__ void zero_table(uint32_t* table) {
  for (int i = threadIdx.x; i < PairTable<FIELD_BITS>::WORDS; i += THREADS) table[i] = 0;
  __syncthreads();
}

// The fold, after the block's counting: thread t keeps one column of words (fixed a's) over rows
// t / ROW_WORDS, + THREADS / ROW_WORDS, ...; a warp's lanes share their row, so the row's total
// (the count of b as second byte) is one warp reduction.
template <int THREADS, int FIELD_BITS>
__device__ void fold_table(const uint32_t* table, u64* out) {
  typedef PairTable<FIELD_BITS> T;
  static_assert(THREADS % T::ROW_WORDS == 0 && T::ROW_WORDS % 32 == 0, "columns must stay fixed");
  __syncthreads();
  uint32_t first[T::F] = {};
  for (int w = threadIdx.x; w < T::WORDS; w += THREADS) {
    const uint32_t x = table[w];
    uint32_t row = 0;
#pragma unroll
    for (int i = 0; i < T::F; ++i) {
      const uint32_t f = (x >> (i * FIELD_BITS)) & T::MASK;
      first[i] += f;
      row += f;
    }
    row = __reduce_add_sync(0xffffffffu, row);
    if ((threadIdx.x & 31) == 0 && row) atomicAdd(out + w / T::ROW_WORDS, (u64)row);
  }
  const int a0 = (threadIdx.x % T::ROW_WORDS) * T::F;
#pragma unroll
  for (int i = 0; i < T::F; ++i)
    if (first[i]) atomicAdd(out + a0 + i, (u64)first[i]);
}

template <int THREADS, int VECS, int FIELD_BITS, bool CHECK>
__global__ void __launch_bounds__(THREADS) pairs(const uint4* in, size_t nvec, u64* out) {
  extern __shared__ uint32_t table[];
  zero_table<THREADS, FIELD_BITS>(table);
  for (size_t v = (size_t)blockIdx.x * THREADS * VECS + threadIdx.x; v < nvec; v += (size_t)gridDim.x * THREADS * VECS) {
    uint4 b[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) b[k] = v + k * THREADS < nvec ? in[v + k * THREADS] : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < VECS; ++k)
      if (v + k * THREADS < nvec) count_pairs<FIELD_BITS, CHECK>(table, out, b[k]);
  }
  fold_table<THREADS, FIELD_BITS>(table, out);
}

// The pair kernel with the next tile's loads in flight while this one is counted: at one
// 1024-thread block a multiprocessor (128 KiB of counters), the kernel without the wrap check
// waited on its loads (ncu, v30 call 2: long scoreboard 53% of its stall samples, DRAM 56%,
// L1/TEX 70%); with the check, on its atomics' old values (short scoreboard 25%).
template <int THREADS, int VECS, int FIELD_BITS, bool CHECK>
__global__ void __launch_bounds__(THREADS) pairs_prefetch(const uint4* in, size_t nvec, u64* out) {
  extern __shared__ uint32_t table[];
  zero_table<THREADS, FIELD_BITS>(table);
  const size_t stride = (size_t)gridDim.x * THREADS * VECS;
  size_t v = (size_t)blockIdx.x * THREADS * VECS + threadIdx.x;
  uint4 cur[VECS];
#pragma unroll
  for (int k = 0; k < VECS; ++k) cur[k] = v + k * THREADS < nvec ? in[v + k * THREADS] : make_uint4(0, 0, 0, 0);
  for (; v < nvec; v += stride) {
    const size_t next = v + stride;
    uint4 nxt[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) nxt[k] = next + k * THREADS < nvec ? in[next + k * THREADS] : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < VECS; ++k)
      if (v + k * THREADS < nvec) count_pairs<FIELD_BITS, CHECK>(table, out, cur[k]);
#pragma unroll
    for (int k = 0; k < VECS; ++k) cur[k] = nxt[k];
  }
  fold_table<THREADS, FIELD_BITS>(table, out);
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

struct Variant {
  const char* name;
  void (*kernel)(const uint4*, size_t, u64*);
  int threads, smem;
};

int main(int argc, char** argv) {
  // "uniform": that distribution alone (for a profiler)
  const bool uniform_only = argc > 1 && strcmp(argv[1], "uniform") == 0;
  const size_t n = 1ull << 28, nvec = n / 16;
  uint8_t* d; u64* h; int* hc; float* cdf; unsigned* sink; void* tmp = nullptr; size_t tb = 0;
  CK(cudaMalloc(&d, n)); CK(cudaMalloc(&h, 256 * sizeof(u64))); CK(cudaMalloc(&hc, 256 * sizeof(int)));
  CK(cudaMalloc(&cdf, 256 * sizeof(float))); CK(cudaMalloc(&sink, 4));
  {
    std::vector<double> w(256); double s = 0;
    for (int i = 0; i < 256; ++i) { w[i] = 1.0 / std::pow(i + 1.0, 1.1); s += w[i]; }
    std::vector<float> c(256); double acc = 0;
    for (int i = 0; i < 256; ++i) { acc += w[i] / s; c[i] = (float)acc; }
    c[255] = 2.0f;
    CK(cudaMemcpy(cdf, c.data(), 1024, cudaMemcpyHostToDevice));
  }
  CK(cub::DeviceHistogram::HistogramEven(tmp, tb, d, hc, 257, 0, 256, (int)n));
  CK(cudaMalloc(&tmp, tb));
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<Variant> vs = {
      {"atoms 256x4", atoms<256, 4>, 256, 0},
      {"pairs16 1024x4", pairs<1024, 4, 16, true>, 1024, 131072},
      {"pairs16 1024x2", pairs<1024, 2, 16, true>, 1024, 131072},
      {"pairs16 512x4", pairs<512, 4, 16, true>, 512, 131072},
      {"pairs16 nochk 1024x4", pairs<1024, 4, 16, false>, 1024, 131072},
      {"pairs8 1024x4", pairs<1024, 4, 8, true>, 1024, 65536},
      {"pairs8 512x4", pairs<512, 4, 8, true>, 512, 65536},
      {"pairs8 256x4", pairs<256, 4, 8, true>, 256, 65536},
      {"pf16 1024x2", pairs_prefetch<1024, 2, 16, true>, 1024, 131072},
      {"pf16 1024x3", pairs_prefetch<1024, 3, 16, true>, 1024, 131072},
      {"pf16 1024x4", pairs_prefetch<1024, 4, 16, true>, 1024, 131072},
      {"pf16 nochk 1024x2", pairs_prefetch<1024, 2, 16, false>, 1024, 131072},
      {"pf16 nochk 1024x4", pairs_prefetch<1024, 4, 16, false>, 1024, 131072},
      {"pf16 512x4", pairs_prefetch<512, 4, 16, true>, 512, 131072},
  };
  std::vector<int> grid(vs.size());
  for (size_t i = 0; i < vs.size(); ++i) {
    if (vs[i].smem > 48 * 1024) CK(cudaFuncSetAttribute(vs[i].kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, vs[i].smem));
    int per_sm;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, vs[i].kernel, vs[i].threads, vs[i].smem));
    grid[i] = sms * per_sm;
    printf("%-22s %d blocks per SM\n", vs[i].name, per_sm);
  }
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<uint8_t> host(n);
  for (int hot : {0, 10, 25, 50, 90, -1}) {
    if (uniform_only && hot != 0) continue;
    fill<<<4096, 256>>>(d, n, hot, cdf);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(host.data(), d, n, cudaMemcpyDeviceToHost));
    std::vector<u64> want(256, 0);
    for (size_t i = 0; i < n; ++i) ++want[host[i]];
    double top = 0;
    for (int i = 0; i < 256; ++i) top = std::max(top, (double)want[i] / n);
    char label[32];
    if (hot >= 0) snprintf(label, sizeof label, "hot %d%%", hot); else snprintf(label, sizeof label, "zipf 1.1");
    // read bandwidth, same data
    std::vector<float> rms;
    for (int r = 0; r < 11; ++r) {
      cudaEventRecord(e0);
      read_only<<<sms * 8, 256>>>((const uint4*)d, nvec, sink);
      cudaEventRecord(e1);
      CK(cudaEventSynchronize(e1));
      float t; cudaEventElapsedTime(&t, e0, e1); rms.push_back(t);
    }
    std::sort(rms.begin(), rms.end());
    const double read_ms = rms[5];
    printf("%-9s (top byte %.3f)  read-only %.4f ms %.1f GB/s\n", label, top, read_ms, n / (read_ms * 1e6));
    for (size_t which = 0; which <= vs.size(); ++which) {
      std::vector<float> ms;
      bool ok = true;
      for (int r = 0; r < 11; ++r) {
        CK(cudaMemset(h, 0, 256 * sizeof(u64)));
        CK(cudaMemset(hc, 0, 256 * sizeof(int)));
        cudaEventRecord(e0);
        if (which < vs.size()) vs[which].kernel<<<grid[which], vs[which].threads, vs[which].smem>>>((const uint4*)d, nvec, h);
        else CK(cub::DeviceHistogram::HistogramEven(tmp, tb, d, hc, 257, 0, 256, (int)n));
        cudaEventRecord(e1);
        CK(cudaEventSynchronize(e1));
        CK(cudaGetLastError());
        float t; cudaEventElapsedTime(&t, e0, e1); ms.push_back(t);
        if (r == 0) {
          std::vector<u64> got(256);
          if (which < vs.size()) {
            CK(cudaMemcpy(got.data(), h, 256 * sizeof(u64), cudaMemcpyDeviceToHost));
          } else {
            std::vector<int> g(256);
            CK(cudaMemcpy(g.data(), hc, 256 * sizeof(int), cudaMemcpyDeviceToHost));
            for (int i = 0; i < 256; ++i) got[i] = (u64)(unsigned)g[i];
          }
          ok = got == want;
        }
      }
      std::sort(ms.begin(), ms.end());
      printf("  %-22s %.4f ms  %7.1f GB/s  %5.1f%% of read  %s\n", which < vs.size() ? vs[which].name : "cub HistogramEven",
             ms[5], n / (ms[5] * 1e6), 100.0 * read_ms / ms[5], ok ? "ok" : "MISMATCH");
    }
  }
  return 0;
}
