// Prototype for issue 17's out-of-core streaming: where does a file in the page cache reach the
// device fastest? tally fills pinned staging buffers with parallel `pread`s (32-34 GB/s on a
// 32-core host, 58-61% of the pinned upload, docs/PERF.md v17). This measures, on one host and
// in one process:
//   h2d        the pinned upload of a 64 MiB chunk (the bound), one copy at a time and queued;
//   fill       parallel `pread` of the whole file into two pinned chunks, no copies (threads x
//              piece size): the host side alone;
//   pipeline   tally's pipeline (two slots: fill one while the other is copied) with the same
//              fill: the end-to-end figure tally's bench reports;
//   register   the file memory-mapped read-only and each chunk page-locked in place
//              (cuMemHostRegister, READ_ONLY) and copied from there: no copy on the host, but
//              the pinning and unpinning of every chunk; one chunk at a time, then pipelined
//              with R threads pinning ahead of the copies.
//   cached / write-combined: the fills into page-locked memory allocated either way (cudarc's
//              `alloc_pinned` asks for write-combined memory).
// Before each timed run the buffers it writes are poisoned, and after it (not within it) the
// last chunks it left on the device, or in the pinned buffer for the fill alone, are compared
// byte for byte with the file, so that a path that copies nothing, or only part of each chunk,
// cannot look fast. The pool's idle threads spin
// (yield), so its rows at twice the hardware threads oversubscribe the host (tally's rayon
// threads sleep instead).
// Build and run on the GPU host (the driver is loaded at run time; no CUDA headers needed):
//   g++ -O2 -std=c++17 -pthread -o /tmp/sf scripts/profile/stream_fill.cpp -ldl
//   /tmp/sf FILE [register]
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <functional>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void* CUstream;
typedef void* CUevent;
typedef void* CUcontext;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(int*, int);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, int);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
static CUresult (*cuMemFree)(CUdeviceptr);
static CUresult (*cuMemAllocHost)(void**, size_t);
static CUresult (*cuMemHostAlloc)(void**, size_t, unsigned);
static CUresult (*cuMemHostRegister)(void*, size_t, unsigned);
static CUresult (*cuMemHostUnregister)(void*);
static CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
static CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
static CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
static CUresult (*cuStreamCreate)(CUstream*, unsigned);
static CUresult (*cuStreamSynchronize)(CUstream);
static CUresult (*cuEventCreate)(CUevent*, unsigned);
static CUresult (*cuEventDestroy)(CUevent);
static CUresult (*cuEventRecord)(CUevent, CUstream);
static CUresult (*cuEventSynchronize)(CUevent);
static CUresult (*cuGetErrorString)(CUresult, const char**);

static const unsigned REGISTER_READ_ONLY = 0x08;  // CU_MEMHOSTREGISTER_READ_ONLY
static const unsigned HOSTALLOC_WRITECOMBINED = 0x04;  // CU_MEMHOSTALLOC_WRITECOMBINED
static const unsigned STREAM_NON_BLOCKING = 0x1;
static const unsigned EVENT_DISABLE_TIMING = 0x2;
static const size_t MIB = 1 << 20;
static const size_t CHUNK = 64 * MIB;

static void check(CUresult r, const char* what) {
  if (r != 0) {
    const char* s = "?";
    if (cuGetErrorString) cuGetErrorString(r, &s);
    fprintf(stderr, "%s failed: %d %s\n", what, r, s);
    exit(1);
  }
}

// Returns the error instead of exiting (registration may be refused on some systems).
static bool try_call(CUresult r, const char* what) {
  if (r == 0) return true;
  const char* s = "?";
  cuGetErrorString(r, &s);
  printf("  %s failed: %d %s\n", what, r, s);
  return false;
}

template <class F>
static void load(F& f, void* lib, const char* name) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (!f) {
    fprintf(stderr, "no %s in libcuda\n", name);
    exit(1);
  }
}

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A pool of threads that run one job (a function of the worker's index) at a time; the calling
// thread is worker 0.
struct Pool {
  int n;
  std::vector<std::thread> threads;
  std::atomic<uint64_t> generation{0};
  std::atomic<int> done{0};
  std::atomic<bool> quit{false};
  std::function<void(int)> job;
  explicit Pool(int n_) : n(n_) {
    for (int t = 1; t < n; t++)
      threads.emplace_back([this, t] {
        uint64_t seen = 0;
        for (;;) {
          uint64_t g;
          while ((g = generation.load(std::memory_order_acquire)) == seen && !quit.load()) std::this_thread::yield();
          if (quit.load()) return;
          seen = g;
          job(t);
          done.fetch_add(1, std::memory_order_acq_rel);
        }
      });
  }
  void run(std::function<void(int)> f) {
    job = std::move(f);
    done.store(0);
    generation.fetch_add(1, std::memory_order_acq_rel);
    job(0);
    while (done.load(std::memory_order_acquire) != n - 1) std::this_thread::yield();
  }
  ~Pool() {
    quit.store(true);
    for (auto& t : threads) t.join();
  }
};

// Reads [offset, offset + bytes) of fd into dst with the pool, pieces of `piece` bytes handed
// out in order.
static void fill(Pool& pool, int fd, char* dst, size_t offset, size_t bytes, size_t piece) {
  std::atomic<size_t> next{0};
  pool.run([&](int) {
    for (;;) {
      size_t at = next.fetch_add(piece);
      if (at >= bytes) return;
      size_t len = std::min(piece, bytes - at);
      size_t got = 0;
      while (got < len) {
        ssize_t r = pread(fd, dst + at + got, len - got, offset + at + got);
        if (r <= 0) {
          perror("pread");
          exit(1);
        }
        got += r;
      }
    }
  });
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE [register]\n", argv[0]);
    return 2;
  }
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "no libcuda.so.1: %s\n", dlerror());
    return 1;
  }
  load(cuInit, lib, "cuInit");
  load(cuDeviceGet, lib, "cuDeviceGet");
  load(cuDevicePrimaryCtxRetain, lib, "cuDevicePrimaryCtxRetain");
  load(cuCtxSetCurrent, lib, "cuCtxSetCurrent");
  load(cuMemAlloc, lib, "cuMemAlloc_v2");
  load(cuMemFree, lib, "cuMemFree_v2");
  load(cuMemAllocHost, lib, "cuMemAllocHost_v2");
  load(cuMemHostAlloc, lib, "cuMemHostAlloc");
  load(cuMemHostRegister, lib, "cuMemHostRegister_v2");
  load(cuMemHostUnregister, lib, "cuMemHostUnregister");
  load(cuMemcpyHtoDAsync, lib, "cuMemcpyHtoDAsync_v2");
  load(cuMemcpyDtoH, lib, "cuMemcpyDtoH_v2");
  load(cuMemsetD8, lib, "cuMemsetD8_v2");
  load(cuStreamCreate, lib, "cuStreamCreate");
  load(cuStreamSynchronize, lib, "cuStreamSynchronize");
  load(cuEventCreate, lib, "cuEventCreate");
  load(cuEventDestroy, lib, "cuEventDestroy_v2");
  load(cuEventRecord, lib, "cuEventRecord");
  load(cuEventSynchronize, lib, "cuEventSynchronize");
  load(cuGetErrorString, lib, "cuGetErrorString");

  check(cuInit(0), "cuInit");
  int dev;
  CUcontext ctx;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUstream copy;
  check(cuStreamCreate(&copy, STREAM_NON_BLOCKING), "cuStreamCreate");

  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    perror(argv[1]);
    return 1;
  }
  size_t file_bytes = (size_t)st.st_size / CHUNK * CHUNK;
  size_t chunks = file_bytes / CHUNK;
  if (chunks < 4) {
    fprintf(stderr, "%s: at least 256 MiB of data needed\n", argv[1]);
    return 1;
  }
  double gb = file_bytes / 1e9;
  printf("file %s: %.2f GB in %zu chunks of 64 MiB; %u hardware threads\n", argv[1], gb, chunks,
         std::thread::hardware_concurrency());

  char* pinned[2];
  CUdeviceptr device[2];
  CUevent copied[2];
  for (int s = 0; s < 2; s++) {
    check(cuMemAllocHost((void**)&pinned[s], CHUNK), "cuMemAllocHost");
    memset(pinned[s], 0, CHUNK);
    check(cuMemAlloc(&device[s], CHUNK), "cuMemAlloc");
    check(cuEventCreate(&copied[s], EVENT_DISABLE_TIMING), "cuEventCreate");
  }
  // Whether `bytes` at `got` (host memory) are the file's from chunk k on.
  std::vector<char> want(4 * CHUNK), seen(4 * CHUNK);
  auto same_as_file = [&](const char* got, size_t k, size_t bytes, const char* what) {
    if (pread(fd, want.data(), bytes, k * CHUNK) != (ssize_t)bytes) {
      perror("pread");
      exit(1);
    }
    if (memcmp(got, want.data(), bytes) != 0) {
      printf("  %s: chunk %zu is not the file's\n", what, k);
      exit(1);
    }
  };
  // The same for `bytes` of device memory.
  auto device_same_as_file = [&](CUdeviceptr d, size_t k, size_t bytes, const char* what) {
    check(cuMemcpyDtoH(seen.data(), d, bytes), "cuMemcpyDtoH");
    same_as_file(seen.data(), k, bytes, what);
  };

  // The pinned buffers in use and the device chunks overwritten with a pattern no file chunk
  // here has (random data), outside the timed runs.
  auto poison = [&]() {
    for (int s = 0; s < 2; s++) {
      memset(pinned[s], 0xA5, CHUNK);
      check(cuMemsetD8(device[s], 0x5A, CHUNK), "cuMemsetD8");
    }
    check(cuStreamSynchronize(nullptr), "sync");
  };

  // h2d: the bound.
  for (int queued = 0; queued < 2; queued++) {
    const int reps = 32;
    double t0 = now();
    for (int r = 0; r < reps; r++) {
      check(cuMemcpyHtoDAsync(device[r & 1], pinned[r & 1], CHUNK, copy), "copy");
      if (!queued) check(cuStreamSynchronize(copy), "sync");
    }
    check(cuStreamSynchronize(copy), "sync");
    double t = now() - t0;
    printf("h2d %-7s pinned 64 MiB x %d: %.1f GB/s\n", queued ? "queued" : "one", reps, reps * CHUNK / t / 1e9);
  }

  // The same buffers write-combined (what cudarc's alloc_pinned gives): the fills again.
  char* combined[2];
  for (int s = 0; s < 2; s++) {
    check(cuMemHostAlloc((void**)&combined[s], CHUNK, HOSTALLOC_WRITECOMBINED), "cuMemHostAlloc (write-combined)");
    memset(combined[s], 0, CHUNK);
  }
  char* cached[2] = {pinned[0], pinned[1]};

  int hw = (int)std::thread::hardware_concurrency();
  std::vector<int> thread_counts = {hw / 2, hw, 2 * hw};
  for (int wc = 0; wc < 2; wc++)
  for (int threads : thread_counts) {
    if (threads < 1) continue;
    pinned[0] = wc ? combined[0] : cached[0];
    pinned[1] = wc ? combined[1] : cached[1];
    Pool pool(threads);
    for (size_t piece : {1 * MIB, 4 * MIB}) {
      // fill alone: every chunk of the file into the two pinned buffers in turn.
      poison();
      double t0 = now();
      for (size_t k = 0; k < chunks; k++) fill(pool, fd, pinned[k & 1], k * CHUNK, CHUNK, piece);
      double t_fill = now() - t0;
      same_as_file(pinned[(chunks - 1) & 1], chunks - 1, CHUNK, "fill alone");
      // pipeline: fill slot k % 2 once its previous copy is done, then copy it.
      poison();
      t0 = now();
      for (size_t k = 0; k < chunks; k++) {
        int s = k & 1;
        check(cuEventSynchronize(copied[s]), "event sync");
        fill(pool, fd, pinned[s], k * CHUNK, CHUNK, piece);
        check(cuMemcpyHtoDAsync(device[s], pinned[s], CHUNK, copy), "copy");
        check(cuEventRecord(copied[s], copy), "event record");
      }
      check(cuStreamSynchronize(copy), "sync");
      double t_pipe = now() - t0;
      device_same_as_file(device[(chunks - 2) & 1], chunks - 2, CHUNK, "pipeline");
      device_same_as_file(device[(chunks - 1) & 1], chunks - 1, CHUNK, "pipeline");
      printf("fill %-14s %3d threads %zu MiB pieces: alone %.1f GB/s, pipeline %.1f GB/s\n",
             wc ? "write-combined" : "cached", threads, piece / MIB, gb / t_fill, gb / t_pipe);
    }
  }

  pinned[0] = cached[0];
  pinned[1] = cached[1];
  if (argc < 3 || strcmp(argv[2], "register") != 0) return 0;

  // register (with the argument `register`): the file mapped, each chunk pinned in place,
  // copied, unpinned.
  char* map = (char*)mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  for (size_t unit : {CHUNK, 4 * CHUNK}) {
    size_t units = file_bytes / unit;
    CUdeviceptr big;
    check(cuMemAlloc(&big, unit), "cuMemAlloc");
    check(cuMemsetD8(big, 0x5A, unit), "cuMemsetD8");
    double reg = 0, cp = 0, unreg = 0;
    bool ok = true;
    for (size_t k = 0; k < units && ok; k++) {
      char* p = map + k * unit;
      double t0 = now();
      ok = try_call(cuMemHostRegister(p, unit, REGISTER_READ_ONLY), "cuMemHostRegister (read-only, mapped file)");
      if (!ok) break;
      double t1 = now();
      check(cuMemcpyHtoDAsync(big, p, unit, copy), "copy");
      check(cuStreamSynchronize(copy), "sync");
      double t2 = now();
      check(cuMemHostUnregister(p), "cuMemHostUnregister");
      double t3 = now();
      reg += t1 - t0, cp += t2 - t1, unreg += t3 - t2;
    }
    if (ok) {
      device_same_as_file(big, (units - 1) * (unit / CHUNK), unit, "register");
      printf("register %zu MiB units, one at a time: pin %.1f GB/s, copy %.1f GB/s, unpin %.1f GB/s, all %.1f GB/s\n",
             unit / MIB, gb / reg, gb / cp, gb / unreg, gb / (reg + cp + unreg));
    }
    check(cuMemFree(big), "cuMemFree");
  }

  // register, pipelined: R threads pin chunks ahead (at most `ahead` chunks pinned and not yet
  // copied); the main thread copies each once pinned and unpins it once copied.
  for (int pinners : {1, 4, 8}) {
    for (size_t ahead : {4, 8}) {
      std::vector<std::atomic<int>> state(chunks);  // 0 pending, 1 pinned, -1 failed
      for (auto& s : state) s.store(0);
      std::atomic<size_t> copied_up_to{0};  // chunks unpinned by the main thread
      std::atomic<size_t> next{0};
      std::vector<std::thread> workers;
      poison();
      double t0 = now();
      for (int w = 0; w < pinners; w++)
        workers.emplace_back([&] {
          check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent (pinning thread)");
          for (;;) {
            size_t k = next.fetch_add(1);
            if (k >= chunks) return;
            while (k >= copied_up_to.load() + ahead) std::this_thread::yield();
            CUresult r = cuMemHostRegister(map + k * CHUNK, CHUNK, REGISTER_READ_ONLY);
            state[k].store(r == 0 ? 1 : -1);
          }
        });
      CUevent done[64];
      for (size_t i = 0; i < ahead; i++) check(cuEventCreate(&done[i], EVENT_DISABLE_TIMING), "cuEventCreate");
      bool ok = true;
      size_t launched = 0;
      int slot_of_last = 0;
      for (size_t k = 0; k < chunks; k++) {
        int s;
        while ((s = state[k].load()) == 0) std::this_thread::yield();
        if (s < 0) {
          ok = false;
          break;
        }
        int slot = k & 1;
        check(cuMemcpyHtoDAsync(device[slot], map + k * CHUNK, CHUNK, copy), "copy");
        check(cuEventRecord(done[k % ahead], copy), "event record");
        launched = k + 1;
        slot_of_last = slot;
        // Unpin the chunk copied `ahead / 2` chunks ago, keeping a few copies queued.
        if (k + 1 >= ahead / 2) {
          size_t j = k + 1 - ahead / 2;
          check(cuEventSynchronize(done[j % ahead]), "event sync");
          check(cuMemHostUnregister(map + j * CHUNK), "cuMemHostUnregister");
          copied_up_to.store(j + 1);
        }
      }
      for (size_t j = copied_up_to.load(); j < launched; j++) {
        check(cuEventSynchronize(done[j % ahead]), "event sync");
        check(cuMemHostUnregister(map + j * CHUNK), "cuMemHostUnregister");
      }
      copied_up_to.store(chunks + ahead);
      for (auto& t : workers) t.join();
      double t = now() - t0;
      for (size_t k = launched; k < chunks; k++)
        if (state[k].load() == 1) cuMemHostUnregister(map + k * CHUNK);
      for (size_t i = 0; i < ahead; i++) check(cuEventDestroy(done[i]), "cuEventDestroy");
      if (!ok) {
        printf("register pipelined: pinning failed\n");
        break;
      }
      device_same_as_file(device[slot_of_last ^ 1], chunks - 2, CHUNK, "register pipelined");
      device_same_as_file(device[slot_of_last], chunks - 1, CHUNK, "register pipelined");
      printf("register pipelined, %d pinning threads, %zu ahead: %.1f GB/s\n", pinners, ahead, gb / t);
    }
  }
  munmap(map, file_bytes);
  return 0;
}
