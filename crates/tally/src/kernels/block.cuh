// Block-level pieces: private copies in shared memory, and their single merge into global memory.
#pragma once
#include "common.cuh"
#include "warp.cuh"

// Sum over the block; the result is valid in thread 0. `scratch` holds one T per warp.
template <int BLOCK_THREADS, typename T>
TALLY_DEVICE T block_reduce_sum(T v, T* scratch) {
  constexpr int WARPS = BLOCK_THREADS / 32;
  v = warp_reduce_sum(v);
  if (lane_id() == 0) scratch[warp_id()] = v;
  __syncthreads();
  T total = 0;
  if (threadIdx.x == 0) {
#pragma unroll
    for (int w = 0; w < WARPS; ++w) total += scratch[w];
  }
  __syncthreads();
  return total;
}

template <int BLOCK_THREADS, typename T>
TALLY_DEVICE void block_fill(T* data, u32 count, T value) {
  for (u32 i = threadIdx.x; i < count; i += BLOCK_THREADS) data[i] = value;
}

// Adds the first `width` counters of `copies` private histograms (each `stride` counters long,
// laid out one after the other) into the global histogram: one atomic per non-zero bin per
// block, never one per sample.
template <int BLOCK_THREADS, typename Counter>
TALLY_DEVICE void block_merge_private(const u32* privates, u32 copies, u32 width, u32 stride, Counter* global) {
  for (u32 i = threadIdx.x; i < width; i += BLOCK_THREADS) {
    u64 sum = 0;
    for (u32 c = 0; c < copies; ++c) sum += privates[(u64)c * stride + i];
    if (sum) atomicAdd(global + i, (Counter)sum);
  }
}

// ---- packed 16-bit counters ---------------------------------------------------------------------
// Two counters per 32-bit word (the even key in the low half): twice the bins in the same shared
// memory. An add of `count` (< 65,536) reports, through the old word it returns, whether the field
// wrapped; the caller then moves 65,536 counts to a wide counter. A wrapped low field also carried
// one into its partner, which the caller takes back (and, if that carry wrapped the partner in
// turn, moves 65,536 for it too). Every wrap is seen by exactly the atomic that caused it, so the
// accounting is exact however the adds interleave.
TALLY_DEVICE u32 narrow16_shift(u32 key) { return (key & 1u) << 4; }

TALLY_DEVICE u32 narrow16_field(const u32* words, u32 key) {
  return (words[key >> 1] >> narrow16_shift(key)) & 0xffffu;
}

TALLY_DEVICE bool narrow16_wrapped(u32 old_word, u32 key, u32 count) {
  return ((old_word >> narrow16_shift(key)) & 0xffffu) + count > 0xffffu;
}

// Whether a wrap of the low field also wrapped the high one (its carry met 0xffff).
TALLY_DEVICE bool narrow16_partner_wrapped(u32 old_word) { return (old_word >> 16) == 0xffffu; }

// A block's values combined by `merge` in a fixed order (warp trees, then the warps in order);
// valid in thread 0. `scratch` holds one T per warp; the block may reuse it after the call.
template <int BLOCK_THREADS, typename T, typename Merge>
TALLY_DEVICE T block_reduce(T v, T* scratch, Merge merge) {
  constexpr int WARPS = BLOCK_THREADS / 32;
  v = warp_reduce(v, merge);
  if (lane_id() == 0) scratch[warp_id()] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
#pragma unroll 1
    for (int w = 1; w < WARPS; ++w) v = merge(v, scratch[w]);
  }
  __syncthreads();
  return v;
}

// A value another block wrote (after its __threadfence), read past the L1 (which is not
// coherent across blocks), one 32-bit word at a time.
template <typename T>
TALLY_DEVICE T load_cg(const T* p) {
  union Words {
    T value;
    u32 word[sizeof(T) / 4];
  };
  static_assert(sizeof(T) % 4 == 0, "load_cg reads whole words");
  Words w;
#pragma unroll
  for (int k = 0; k < (int)(sizeof(T) / 4); ++k) w.word[k] = __ldcg(reinterpret_cast<const u32*>(p) + k);
  return w.value;
}

// ---- device-wide publication (single-pass algorithms: a scan's look-back) ------------------------
// A 64-bit word stored and loaded whole, never cached in a register or the L1: a status and a
// value packed together need no fence between them.
TALLY_DEVICE void store_relaxed64(u64* p, u64 v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
TALLY_DEVICE u64 load_relaxed64(const u64* p) {
  u64 v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
// The same for 128 bits (16-byte aligned): one .b128 access (PTX ISA 8.3, NVRTC 12.3+, sm_70+),
// so that a status and a value of up to 8 bytes travel together as one 64-bit word does, with
// no fence. The PTX memory model states single-copy atomicity for scalar accesses of up to 64
// bits only; that an aligned 16-byte load never sees half of a 16-byte store is an assumption
// about the hardware, the one CUB's tile states make with their 16-byte descriptors (stored and
// loaded as one vector access). Every look-back test on the GPU checks it indirectly: a torn
// slot would pair a status with a stale value and give a wrong prefix.
struct __align__(16) Word128 {
  u64 lo, hi;
};
static_assert(sizeof(Word128) == 16, "one 16-byte access");
TALLY_DEVICE void store_relaxed128(Word128* p, Word128 v) {
  asm volatile("{\n\t.reg .b128 w;\n\tmov.b128 w, {%1, %2};\n\tst.relaxed.gpu.global.b128 [%0], w;\n\t}"
               ::"l"(p), "l"(v.lo), "l"(v.hi) : "memory");
}
TALLY_DEVICE Word128 load_relaxed128(const Word128* p) {
  Word128 v;
  asm volatile("{\n\t.reg .b128 w;\n\tld.relaxed.gpu.global.b128 w, [%2];\n\tmov.b128 {%0, %1}, w;\n\t}"
               : "=l"(v.lo), "=l"(v.hi) : "l"(p) : "memory");
  return v;
}
TALLY_DEVICE void store_relaxed(u64* p, u64 v) { store_relaxed64(p, v); }
TALLY_DEVICE u64 load_relaxed(const u64* p) { return load_relaxed64(p); }
TALLY_DEVICE void store_relaxed(Word128* p, Word128 v) { store_relaxed128(p, v); }
TALLY_DEVICE Word128 load_relaxed(const Word128* p) { return load_relaxed128(p); }

// The two halves of a post (`post_to_host`, below), for callers that post words of more than
// one array or of another width: `post_words` stores `count` words of `words` side by side (the
// warp's lanes, at system scope) into the host words after word 0, starting `at` bytes in
// (a multiple of the word's size); `post_sequence` then fences and stores the number. Every
// `post_words` of a post comes before its `post_sequence`, from the same warp.
// The loads go out in batches of eight a lane before the stores: a store to the host may alias
// the words as far as the compiler knows, so one load after each store would wait for L2 (and
// the post take a round trip per 32 words).
// `BLOCK_WORDS`: the words are in the block's shared memory (stored before a barrier), read
// with plain loads; otherwise in global memory, read past the L1.
template <typename W, bool BLOCK_WORDS = false>
TALLY_DEVICE void post_words(u64* host, u32 at, const W* words, u32 count) {
  constexpr u32 BATCH = 8;
  volatile W* h = reinterpret_cast<volatile W*>(reinterpret_cast<char*>(host + 1) + at);
  for (u32 base = 0; base < count; base += 32 * BATCH) {
    W v[BATCH];
#pragma unroll
    for (u32 j = 0; j < BATCH; ++j) {
      const u32 k = base + j * 32 + lane_id();
      v[j] = k < count ? (BLOCK_WORDS ? words[k] : __ldcg(words + k)) : W(0);
    }
#pragma unroll
    for (u32 j = 0; j < BATCH; ++j) {
      const u32 k = base + j * 32 + lane_id();
      if (k < count) h[k] = v[j];
    }
  }
}
TALLY_DEVICE void post_sequence(u64* host, u64 sequence) {
  __threadfence_system();
  __syncwarp();
  if (lane_id() == 0) {
    __threadfence_system();
    *reinterpret_cast<volatile u64*>(host) = sequence;
  }
}

// A result posted to the host: `count` result words copied into mapped page-locked host memory
// after its word 0, then the launch's sequence number into word 0, so that a host that reads
// the number reads the words (`ReadBack::wait_posted`). The host then learns the result from
// the stores of the block that finished it, not from a copy queued after the launch retires
// (docs/PERF.md, v26). A warp calls it, all 32 lanes, after the stores of `words` (a
// __syncthreads or __syncwarp between); the lanes store the words side by side (one thread
// storing the exact sum's 136 words one by one took 23 us), each fences its own stores at
// system scope, and after the warp's barrier lane 0 fences again (ordering what the barrier
// showed it) and stores the number. The host may go on before the grid retires: the kernel
// must store nothing after the post (its ticket reset, its result words: all before). A null
// `host` posts nothing.
TALLY_DEVICE void post_to_host(u64* host, u64 sequence, const u64* words, u32 count) {
  if (host == nullptr) return;
  post_words(host, 0, words, count);
  post_sequence(host, sequence);
}
// The same, from words in the block's shared memory: a shared load instead of a round trip to
// the L2 before the post (the words' global copy is stored beside them, not read back).
TALLY_DEVICE void post_to_host_from_block(u64* host, u64 sequence, const u64* block_words, u32 count) {
  if (host == nullptr) return;
  post_words<u64, true>(host, 0, block_words, count);
  post_sequence(host, sequence);
}

// The bits of a value of up to 8 bytes in a 64-bit word (zero above it), and back.
template <typename X>
TALLY_DEVICE u64 bits_of(X x) {
  static_assert(sizeof(X) <= 8, "at most a word");
  union {
    X value;
    u64 bits;
  } u;
  u.bits = 0;
  u.value = x;
  return u.bits;
}
template <typename X>
TALLY_DEVICE X from_bits(u64 bits) {
  union {
    X value;
    u64 bits;
  } u;
  u.bits = bits;
  return u.value;
}

// Inclusive scan over the block by `merge` in a fixed order (each warp's Kogge-Stone tree, then
// the warp totals scanned by warp 0); `total` gets the block's total in every thread. `scratch`
// holds one T per warp (at most 32 warps); the block may reuse it after the call.
template <int BLOCK_THREADS, typename T, typename Merge>
TALLY_DEVICE T block_inclusive_scan(T v, T* scratch, const T& identity, Merge merge, T& total) {
  constexpr int WARPS = BLOCK_THREADS / 32;
  static_assert(WARPS <= 32, "one warp scans the warp totals");
  v = warp_inclusive_scan(v, merge);
  if (lane_id() == 31) scratch[warp_id()] = v;
  __syncthreads();
  if (warp_id() == 0) {
    T w = (int)lane_id() < WARPS ? scratch[lane_id()] : identity;
    w = warp_inclusive_scan(w, merge);
    if ((int)lane_id() < WARPS) scratch[lane_id()] = w;
  }
  __syncthreads();
  total = scratch[WARPS - 1];
  if (warp_id() > 0) v = merge(scratch[warp_id() - 1], v);
  __syncthreads();
  return v;
}

// ---- a tile's row-and-warp pieces (single-pass scans, compaction, runs) ---------------------------
// A tile of VECS rows held by WARPS warps has PIECES = VECS * WARPS row-and-warp aggregates in
// shared memory, in tile order. Warp 0 scans them, PER_LANE consecutive pieces a lane (at most
// 128 pieces), in a fixed association, in two steps with the decoupled look-back between:
//   PieceScan<PIECES, Acc> s = piece_scan_begin<PIECES>(pieces, identity, merge);
//   prefix = lookback_prefix(states, tile, s.aggregate, ...);            // warp 0
//   piece_scan_end(s, pieces, tile > 0, prefix, merge);
// after which pieces[i] is the combination of everything in the input before piece i (the
// tile's prefix first, where there is one).
template <int PIECES, typename Acc>
struct PieceScan {
  static constexpr int PER_LANE = (PIECES + 31) / 32;
  static_assert(PIECES >= 1 && PIECES <= 128, "at most 4 row-and-warp pieces per lane of warp 0");
  Acc part[PER_LANE];  // part[q]: this lane's first q + 1 pieces combined
  Acc exclusive;       // the pieces of the lanes before this one
  Acc aggregate;       // the whole tile's (every lane)
};

template <int PIECES, typename Acc, typename Merge>
TALLY_DEVICE PieceScan<PIECES, Acc> piece_scan_begin(const Acc* pieces, const Acc& identity, Merge merge) {
  PieceScan<PIECES, Acc> s;
  constexpr int PER_LANE = PieceScan<PIECES, Acc>::PER_LANE;
  const int lane = (int)lane_id();
#pragma unroll
  for (int q = 0; q < PER_LANE; ++q) {
    const int i = lane * PER_LANE + q;
    const Acc v = i < PIECES ? pieces[i] : identity;
    s.part[q] = q == 0 ? v : merge(s.part[q - 1], v);
  }
  const Acc inclusive = warp_inclusive_scan(s.part[PER_LANE - 1], merge);
  s.aggregate = warp_shfl_idx(inclusive, 31);
  s.exclusive = warp_exclusive_from_inclusive(inclusive, identity);
  return s;
}

// `has_prefix`: whether `prefix` (what precedes the tile) is merged in front of every piece.
template <int PIECES, typename Acc, typename Merge>
TALLY_DEVICE void piece_scan_end(const PieceScan<PIECES, Acc>& s, Acc* pieces, bool has_prefix, const Acc& prefix,
                                 Merge merge) {
  constexpr int PER_LANE = PieceScan<PIECES, Acc>::PER_LANE;
  const int lane = (int)lane_id();
#pragma unroll
  for (int q = 0; q < PER_LANE; ++q) {
    const int i = lane * PER_LANE + q;
    // Lane 0's later pieces leave its exclusive (the identity) out, as the scans always have.
    const Acc before = q == 0 ? s.exclusive : (lane == 0 ? s.part[q - 1] : merge(s.exclusive, s.part[q - 1]));
    if (i < PIECES) pieces[i] = has_prefix ? merge(prefix, before) : before;
  }
}

// cp.async of 16 bytes: global to shared without passing through registers (the scans' staged
// tiles, the runs' tiles). Before sm_80, which has no cp.async, a plain 16-byte copy.
TALLY_DEVICE void copy_async16(void* shared, const void* global) {
#if __CUDA_ARCH__ >= 800
  const unsigned s = (unsigned)__cvta_generic_to_shared(shared);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(global) : "memory");
#else
  *reinterpret_cast<uint4*>(shared) = *reinterpret_cast<const uint4*>(global);
#endif
}
// Waits for this thread's cp.async copies (a barrier after it makes them the block's).
TALLY_DEVICE void copy_async_wait_all() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
#endif
}
