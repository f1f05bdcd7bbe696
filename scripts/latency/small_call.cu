// What a small call costs on the host clock, by the way its result comes back: the fixed part
// of an end-to-end reduction, selection count or histogram of a few thousand elements.
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/small_call scripts/latency/small_call.cu
//   /tmp/small_call [spin|auto|yield|blocking]     (the context's scheduling flag)
// Patterns (median, p10, p90 of 3000 calls after 300 warm-up calls, microseconds):
//   sync         a kernel that writes two words, then cuStreamSynchronize
//   event        the same, then an event recorded after it and cuEventSynchronize
//   copy+event   the kernel writes device memory, a cuMemcpyDtoHAsync of 16 bytes into
//                page-locked memory, an event, cuEventSynchronize (tally's read-back, v18 on)
//   mapped+event the kernel writes the words into mapped page-locked host memory; an event
//   mapped+poll  the kernel writes the words and then a sequence number into mapped host
//                memory (a system-scope fence between); the host polls the number, no driver
//                call after the launch
//   launch       the launch call alone (host time to queue it; the GPU drained after each)
//   reduce 2^20  a one-pass sum of 2^20 floats (grid-stride, last block folds the partials)
//                read back by copy+event and by mapped+poll
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__global__ void write_words(unsigned long long* out, unsigned long long v) {
  if (threadIdx.x == 0) { out[0] = v; out[1] = v + 1; }
}

__global__ void write_then_flag(volatile unsigned long long* out, unsigned long long v) {
  if (threadIdx.x == 0) {
    out[0] = v;
    out[1] = v + 1;
    __threadfence_system();
    out[2] = v;  // the sequence number the host waits for
  }
}

__device__ unsigned int ticket;
template <bool POLL>
__global__ void __launch_bounds__(256) sum_f32(const float4* in, int n4, float* partials, volatile unsigned long long* out,
                                               unsigned long long seq) {
  float s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
    float4 v = in[i];
    s += (v.x + v.y) + (v.z + v.w);
  }
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(~0u, s, o);
  __shared__ float w[8];
  __shared__ bool last;
  if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float b = 0;
    for (int k = 0; k < 8; ++k) b += w[k];
    partials[blockIdx.x] = b;
    __threadfence();
    last = atomicAdd(&ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  float t = 0;
  for (int i = threadIdx.x; i < (int)gridDim.x; i += blockDim.x) t += ((volatile float*)partials)[i];
  for (int o = 16; o; o >>= 1) t += __shfl_xor_sync(~0u, t, o);
  if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = t;
  __syncthreads();
  if (threadIdx.x == 0) {
    float b = 0;
    for (int k = 0; k < 8; ++k) b += w[k];
    ticket = 0;
    unsigned long long bits = __float_as_uint(b);
    out[0] = bits;
    out[1] = 0;
    if (POLL) {
      __threadfence_system();
      out[2] = seq;
    }
  }
}

static unsigned long long float_bits(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  return u;
}

static double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F>
static void timed(const char* name, F call) {
  for (int i = 0; i < 300; ++i) call(i);
  std::vector<double> t;
  for (int i = 0; i < 3000; ++i) {
    const double a = now_us();
    call(300 + i);
    t.push_back(now_us() - a);
  }
  std::sort(t.begin(), t.end());
  printf("%-22s median %6.2f us  p10 %6.2f  p90 %6.2f\n", name, t[t.size() / 2], t[t.size() / 10], t[t.size() * 9 / 10]);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "auto";
  unsigned flags = cudaDeviceScheduleAuto;
  if (!strcmp(mode, "spin")) flags = cudaDeviceScheduleSpin;
  if (!strcmp(mode, "yield")) flags = cudaDeviceScheduleYield;
  if (!strcmp(mode, "blocking")) flags = cudaDeviceScheduleBlockingSync;
  CHECK(cudaSetDeviceFlags(flags | cudaDeviceMapHost));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, scheduling %s\n", prop.name, mode);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t ev;
  CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  unsigned long long *dev_words, *pinned, *mapped, *mapped_dev;
  CHECK(cudaMalloc(&dev_words, 64));
  CHECK(cudaHostAlloc(&pinned, 64, cudaHostAllocDefault));
  CHECK(cudaHostAlloc(&mapped, 64, cudaHostAllocMapped));
  CHECK(cudaHostGetDevicePointer(&mapped_dev, mapped, 0));
  memset(mapped, 0, 64);
  volatile unsigned long long* flag = mapped + 2;
  bool ok = true;

  timed("sync", [&](int i) {
    write_words<<<1, 32, 0, s>>>(dev_words, i);
    cudaStreamSynchronize(s);
  });
  timed("event", [&](int i) {
    write_words<<<1, 32, 0, s>>>(dev_words, i);
    cudaEventRecord(ev, s);
    cudaEventSynchronize(ev);
  });
  timed("copy+event", [&](int i) {
    write_words<<<1, 32, 0, s>>>(dev_words, i);
    cudaMemcpyAsync(pinned, dev_words, 16, cudaMemcpyDeviceToHost, s);
    cudaEventRecord(ev, s);
    cudaEventSynchronize(ev);
    ok &= pinned[0] == (unsigned long long)i;
  });
  timed("mapped+event", [&](int i) {
    write_words<<<1, 32, 0, s>>>(mapped_dev, i);
    cudaEventRecord(ev, s);
    cudaEventSynchronize(ev);
    ok &= ((volatile unsigned long long*)mapped)[0] == (unsigned long long)i;
  });
  timed("mapped+poll", [&](int i) {
    const unsigned long long seq = 1000000 + i;
    write_then_flag<<<1, 32, 0, s>>>(mapped_dev, seq);
    while (*flag != seq) {
    }
    ok &= ((volatile unsigned long long*)mapped)[0] == seq;
  });
  {
    // The launch call alone: drained after each, outside the timed part.
    std::vector<double> t;
    for (int i = 0; i < 3300; ++i) {
      const double a = now_us();
      write_words<<<1, 32, 0, s>>>(dev_words, i);
      const double b = now_us();
      cudaStreamSynchronize(s);
      if (i >= 300) t.push_back(b - a);
    }
    std::sort(t.begin(), t.end());
    printf("%-22s median %6.2f us  p10 %6.2f  p90 %6.2f\n", "launch", t[t.size() / 2], t[t.size() / 10], t[t.size() * 9 / 10]);
  }
  const int n = 1 << 20;
  float* x;
  CHECK(cudaMalloc(&x, n * 4));
  std::vector<float> host(n, 1.0f);
  CHECK(cudaMemcpy(x, host.data(), n * 4, cudaMemcpyHostToDevice));
  float* partials;
  CHECK(cudaMalloc(&partials, 4096 * 4));
  for (int grid : {132, 264, 528}) {
    char name[64];
    snprintf(name, sizeof name, "reduce 2^20 copy g%d", grid);
    timed(name, [&](int i) {
      sum_f32<false><<<grid, 256, 0, s>>>((const float4*)x, n / 4, partials, dev_words, 0);
      cudaMemcpyAsync(pinned, dev_words, 16, cudaMemcpyDeviceToHost, s);
      cudaEventRecord(ev, s);
      cudaEventSynchronize(ev);
      ok &= pinned[0] == float_bits((float)n);
    });
    snprintf(name, sizeof name, "reduce 2^20 poll g%d", grid);
    timed(name, [&](int i) {
      const unsigned long long seq = 2000000 + i;
      sum_f32<true><<<grid, 256, 0, s>>>((const float4*)x, n / 4, partials, mapped_dev, seq);
      while (*flag != seq) {
      }
      ok &= ((volatile unsigned long long*)mapped)[0] == float_bits((float)n);
    });
  }
  {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> t;
    for (int i = 0; i < 500; ++i) {
      cudaEventRecord(a, s);
      sum_f32<false><<<264, 256, 0, s>>>((const float4*)x, n / 4, partials, dev_words, 0);
      cudaEventRecord(b, s);
      cudaEventSynchronize(b);
      float ms;
      cudaEventElapsedTime(&ms, a, b);
      t.push_back(ms * 1000);
    }
    std::sort(t.begin(), t.end());
    printf("%-22s median %6.2f us (CUDA events)\n", "reduce 2^20 kernel g264", t[t.size() / 2]);
  }
  CHECK(cudaGetLastError());
  printf("results %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
