// Runs of equal consecutive keys, in one pass on the decoupled look-back (lookback.cuh):
// unique (the first key of every run), run-length encoding (the first key and the length) and
// reduce-by-key (the first key and the sum, minimum or maximum of the run's values). One
// compilation = one specialisation, chosen by defines:
//   TALLY_KEY          key type (C++ spelling), compared with == (a NaN equals nothing)
//   TALLY_VALUE        reduce-by-key: the value type (otherwise unused)
//   TALLY_OUT          reduce-by-key: output and accumulator type; encode: u64 (the lengths)
//   TALLY_OUT_FLOAT, TALLY_OUT_SIGNED   0 or 1
//   TALLY_RUNS         UNIQUE, ENCODE, SUM, MIN, MAX (codes.cuh)
//   TALLY_BLOCK_THREADS, TALLY_VECS (rows of 16-byte loads per tile), TALLY_MIN_BLOCKS
// A tile is VECS rows of coalesced loads (in row k thread t loads the VI consecutive items at
// k * ROW + t * VI), transposed through shared memory so that each thread then reads ITEMS =
// VECS * VI consecutive items (the blocked arrangement, as CUB's BLOCK_LOAD_WARP_TRANSPOSE):
// the thread finds its run heads (element i starts a run when i == 0 or keys[i] != keys[i -
// 1]) and folds its items serially, and the block scans one value a thread, not one a row.
// What threads and tiles combine (the look-back's Acc) is the number of heads and, for encode
// and reduce-by-key, the value of the run open at the end of the range (its length so far, or
// its values combined): merging (a, b) adds the counts and takes b's value if b has a head,
// else combines a's with b's. With the exclusive prefix of every element, a head at i with c
// heads before it writes its key to output c and the value of run c - 1 (which ends at i); the
// last tile writes the last run's value and the number of runs. Every run is written exactly
// once, whichever tile its values lie in. The runs go through shared memory too, so that a tile
// writes them as one contiguous, coalesced range; they are staged at the tile's own slots while
// warp 0 waits for the tile's prefix, which then only moves the range and completes the run
// open at the tile's start (the layout of shared memory and what is staged: below).
#include "common.cuh"
#include "warp.cuh"
#include "block.cuh"
#include "lookback.cuh"

#ifndef TALLY_KEY
#error "TALLY_KEY must be defined"
#endif

typedef TALLY_KEY K;
typedef TALLY_VALUE V;
typedef TALLY_OUT O;
constexpr bool UNIQUE = TALLY_RUNS == TALLY_RUNS_UNIQUE;
constexpr bool ENCODE = TALLY_RUNS == TALLY_RUNS_ENCODE;
constexpr bool REDUCE = !UNIQUE && !ENCODE;
constexpr bool OUT_FLOAT = TALLY_OUT_FLOAT;
constexpr bool OUT_SIGNED = TALLY_OUT_SIGNED;
// 64-bit integer sums are checked: a run's running sum that leaves the type is an error.
constexpr bool CHECKED = TALLY_RUNS == TALLY_RUNS_SUM && !OUT_FLOAT && sizeof(O) == 8;
constexpr int BLOCK_THREADS = TALLY_BLOCK_THREADS;
constexpr int WARPS = BLOCK_THREADS / 32;
constexpr int VECS = TALLY_VECS;
constexpr int ITEM_BYTES = REDUCE && sizeof(V) > sizeof(K) ? (int)sizeof(V) : (int)sizeof(K);
constexpr int VI = 16 / ITEM_BYTES;  // items per thread and row
constexpr int ROW = BLOCK_THREADS * VI;
constexpr int TILE = ROW * VECS;
constexpr int ITEMS = VECS * VI;  // consecutive items a thread holds after the transpose
constexpr int MIN_BLOCKS = TALLY_MIN_BLOCKS;
// Whether whole tiles come in by cp.async (no registers held for the loads) rather than
// through registers: encode and reduce-by-key, which hold nothing else in registers then; not
// unique, which keeps its keys (on the H200 at 2^28 i32 keys in runs of 8: 0.43 ms through
// registers against 0.47 by cp.async; docs/PERF.md, v22). An NVRTC define for experiments.
#ifndef TALLY_RUNS_ASYNC
#define TALLY_RUNS_ASYNC (TALLY_RUNS != TALLY_RUNS_UNIQUE)
#endif
constexpr bool ASYNC = TALLY_RUNS_ASYNC;
// The fast look-back's warp-widths of predecessors a round: one for the 16-byte slots of encode
// and reduce-by-key, four (LOOKBACK_WINDOWS) for unique's 8-byte ones. On the H200 at 2^28 i32
// keys in runs of 8, encode took 0.536-0.540 ms with one, 0.566-0.574 with four and 0.581-0.585
// with two; unique 0.428-0.433 with four and 0.457-0.466 with two; on the H100 i32 values
// summed into i64 took 1.60 ms with one and 1.80 with four (docs/PERF.md, v26). An NVRTC
// define for experiments.
#ifndef TALLY_RUNS_WINDOWS
#define TALLY_RUNS_WINDOWS (TALLY_RUNS == TALLY_RUNS_UNIQUE ? LOOKBACK_WINDOWS : 1)
#endif
static_assert(ITEMS <= 64, "a thread's heads are one bit each in a 64-bit mask");
static_assert(WARPS <= 32, "warp 0 scans the warps' totals (PieceScan)");

// The layout is checked against `RunsParams` in src/runs/cuda.rs.
struct RunsParams {
  const K* keys;
  const V* values;       // reduce-by-key: one value per key; null otherwise
  K* out_keys;           // the first key of every run
  O* out_values;         // encode: run lengths; reduce-by-key: combined values; null for unique
  u64 n;
  u64 key_capacity;      // elements out_keys holds: writes past it are dropped (the host reports it)
  u64 value_capacity;    // the same for out_values
  u64* result;           // [0]: the number of runs (the last tile writes it); [1]: 1 on overflow
                         // (a checked sum launched from a kept set of tile states: in their
                         // header, `RESULT_OFFSET`, zeroed with them)
  unsigned char* states; // the tile counter, then the look-back slots (zeroed before the launch)
  unsigned char* states_next; // a kept plan's other set, zeroed here for its next launch; or null
  u32 tiles;
  u32 groups;
  u32 supers;
  u32 deterministic;
};


// ---- the operation on values (encode: the sum of ones) -----------------------------------------
#if TALLY_RUNS == TALLY_RUNS_MIN || TALLY_RUNS == TALLY_RUNS_MAX
#if TALLY_RUNS == TALLY_RUNS_MIN
typedef RunningMin<O> Op;
#else
typedef RunningMax<O> Op;
#endif
TALLY_DEVICE O op(O a, O b) { return Op::apply(a, b); }
TALLY_DEVICE O op_identity() { return Op::identity(); }
#else
TALLY_DEVICE O op(O a, O b) { return wrapping_add(a, b); }
// -0.0 for floats: x + -0.0 is x for every x, -0.0 included (+0.0 would turn a run of -0.0
// into +0.0).
TALLY_DEVICE O op_identity() {
  if constexpr (OUT_FLOAT) return -(O)0;
  else return (O)0;
}
#endif

// Whether adding x to a checked running sum took it from `before` to `after` past the type's
// range (the scans' sign rule; exact on values modulo 2^64).
template <typename X>
TALLY_DEVICE u32 sum_overflowed(X x, O before, O after) {
  if constexpr (OUT_SIGNED) return (u32)(((i64)x >= 0) != ((i64)after >= (i64)before));
  else return (u32)(after < before);
}

// ---- what tiles combine ---------------------------------------------------------------------------
#if TALLY_RUNS == TALLY_RUNS_UNIQUE
struct Acc {
  u64 count;
};
TALLY_DEVICE Acc identity() { return Acc{0}; }
TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) { return Acc{a.count + b.count}; }
TALLY_DEVICE O value_of(const Acc&) { return O(); }
TALLY_DEVICE void set_value(Acc&, O) {}
#else
struct Acc {
  u64 count;  // heads in the range
  O v;        // the run open at the range's end: its length so far, or its values combined
};
TALLY_DEVICE Acc identity() { return Acc{0, op_identity()}; }
TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) { return Acc{a.count + b.count, b.count ? b.v : op(a.v, b.v)}; }
TALLY_DEVICE O value_of(const Acc& a) { return a.v; }
TALLY_DEVICE void set_value(Acc& a, O v) { a.v = v; }
#endif

// The look-back's traits: a count alone shares one 64-bit word with its status; with a value,
// the count and the status take the low word of 128 bits and the value's bits the high one.
#if TALLY_RUNS == TALLY_RUNS_UNIQUE
struct RunsLookback {
  typedef ::Acc Acc;
  typedef u64 Word;
  static TALLY_DEVICE Word pack(const Acc& a, u32 status) { return a.count | (u64)status << 62; }
  static TALLY_DEVICE u32 status_of(const Word& w) { return (u32)(w >> 62); }
  static TALLY_DEVICE Acc unpack(const Word& w) { return Acc{w & ((1ull << 62) - 1)}; }
#else
struct RunsLookback {
  typedef ::Acc Acc;
  typedef Word128 Word;
  static TALLY_DEVICE Word pack(const Acc& a, u32 status) { return Word{a.count | (u64)status << 62, bits_of(a.v)}; }
  static TALLY_DEVICE u32 status_of(const Word& w) { return (u32)(w.lo >> 62); }
  static TALLY_DEVICE Acc unpack(const Word& w) { return Acc{w.lo & ((1ull << 62) - 1), from_bits<O>(w.hi)}; }
#endif
  static TALLY_DEVICE Acc identity() { return ::identity(); }
  static TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) { return ::merge(a, b); }
  // Counts of heads only grow: every predecessor moves a range's outputs.
  static TALLY_DEVICE bool absorbs(const Acc&) { return false; }
  static constexpr int WINDOWS = TALLY_RUNS_WINDOWS;
};
typedef LookbackStates<RunsLookback> States;

// ---- the tile in shared memory --------------------------------------------------------------------
// A thread's heads, one bit per item.
typedef u64 Mask;
TALLY_DEVICE u32 mask_count(Mask m) { return (u32)__popcll(m); }
TALLY_DEVICE u32 mask_last(Mask m) { return 63 - (u32)__clzll(m); }

// The transposed tile, one array for the keys and one for the values: thread t's ITEMS items
// in the t-th ITEMS of the array, as VECS chunks of VI items (16 bytes of the wider type of a
// key-value pair, fewer of the narrower) whose order within the thread's part is swizzled:
// chunk c at c ^ swizzle(t). Thread t reads its own chunks one at a time, and the lanes whose
// chunks make one 128-byte wavefront (8 of 16-byte chunks, 16 of 8-byte ones, ...) then meet
// different banks (t's part starts at a multiple of VECS chunks; the swizzle differs between
// the lanes whose parts start in the same banks), but for 2-byte chunks (1-byte keys beside
// 8-byte values, or the reverse), where two lanes share a bank word: 2 wavefronts for 1, as
// with the padding before; a row copy writes whole 128-byte lines of shared memory (8
// consecutive lanes of 16-byte chunks: one part or more), which cp.async moves as whole
// sectors. Padding each thread's part by a chunk instead (before v28) also avoided the bank
// conflicts of the wider type, but split the row copies' lines: ncu counted 24 L2 sectors for
// every 16 of a warp's row (docs/PERF.md, v28).
static_assert((VECS & (VECS - 1)) == 0, "rows are a power of two: the swizzle permutes a thread's chunks");
template <typename X>
TALLY_DEVICE u32 stage_index(u32 i) {
  constexpr u32 LANES = 128 / (VI * (u32)sizeof(X));            // chunks of X in a wavefront
  constexpr u32 SWIZZLES = VECS < LANES ? VECS : LANES;         // distinct swizzles
  constexpr u32 SHARING = LANES > VECS ? LANES / VECS : 1;      // consecutive threads with one
  const u32 t = i / ITEMS, chunk = i / VI % VECS;
  return t * ITEMS + (chunk ^ (t / SHARING % SWIZZLES)) * VI + i % VI;
}
static_assert(TILE <= 65536, "a head's place in its tile is 16 bits");

// N items copied between a thread's registers and shared memory in one access of N * sizeof(X)
// bytes (1 to 16, a power of two; both addresses aligned to it).
template <typename X, int N>
TALLY_DEVICE void copy_items(X* dst, const X* src) {
  constexpr int BYTES = N * (int)sizeof(X);
  static_assert(BYTES == 1 || BYTES == 2 || BYTES == 4 || BYTES == 8 || BYTES == 16, "one access");
  if constexpr (BYTES == 16) *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
  else if constexpr (BYTES == 8) *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(src);
  else if constexpr (BYTES == 4) *reinterpret_cast<u32*>(dst) = *reinterpret_cast<const u32*>(src);
  else if constexpr (BYTES == 2) *reinterpret_cast<u16*>(dst) = *reinterpret_cast<const u16*>(src);
  else *dst = *src;
}

// Dynamic shared memory, in this order (`stage_bytes` in src/runs/policy.rs is the total):
//   the tile's keys, transposed and swizzled; for reduce-by-key its values the same way: read-only
//     after they come in, but for reduce-by-key's run values written in place, and its keys
//     moved where it compacts (below);
//   encode and reduce-by-key: the place in the tile of every head, by its slot among the tile's
//     heads (16 bits);
//   reduce-by-key with outputs wider than the values: the value of the run each head ends, by
//     slot. Otherwise that value is written over the head's own value (the thread that holds an
//     item is the only one to read or write its value), so it costs no memory.
// Reduce-by-key whose run values fit over its values and whose sums are not checked (all but
// 64-bit integer sums: `COMPACTED`) stages no places either: each thread moves its heads' keys
// and the values of the runs they end to the front of its own items, in order, over items it
// has already read; the tile's writes then find a run's thread by a search over the lanes of
// the warp that holds it. Two bytes an element less let one more tile a multiprocessor stay
// resident (6 of 4096 i32 keys and f32 values in 228 KiB, against 5 with places; 1% faster on
// the H100, docs/PERF.md v28).
// Encode and reduce-by-key hold no items in registers across a barrier (a thread keeps its
// mask of heads and its pairs): what the tile writes is read back from this memory through
// the heads' places, or for compacted reduce-by-key from the front of each thread's part.
// Unique keeps its keys in registers instead and stages the kept ones over the tile's keys at
// their slots, to be written out contiguously: at 2^28 i32 keys in runs of 8 on the H200
// 0.43 ms against 0.50 through places, where encode took 0.57 against 0.60 and reduce-by-key
// 0.92 against 1.09 with their items in registers (docs/PERF.md, v22).
constexpr bool KEYS_IN_REGISTERS = UNIQUE;
constexpr bool RUN_VALUES_IN_PLACE = REDUCE && sizeof(O) == sizeof(V);
// Checked sums read the values before a thread's first head again after the look-back, which
// compaction would have overwritten.
constexpr bool COMPACTED = RUN_VALUES_IN_PLACE && !CHECKED;
__host__ __device__ constexpr u64 align16(u64 b) { return (b + 15) & ~15ull; }
constexpr u64 KEYS_BYTES = align16((u64)TILE * sizeof(K));
constexpr u64 VALUES_BYTES = REDUCE ? align16((u64)TILE * sizeof(V)) : 0;
constexpr u64 PLACES_OFFSET = KEYS_BYTES + VALUES_BYTES;
constexpr u64 RUN_VALUES_OFFSET = align16(PLACES_OFFSET + (u64)TILE * sizeof(u16));
constexpr u64 RUN_VALUES_BYTES = REDUCE && !RUN_VALUES_IN_PLACE ? (u64)TILE * sizeof(O) : 0;
constexpr u64 STAGE_BYTES = KEYS_IN_REGISTERS ? KEYS_BYTES
                            : COMPACTED       ? PLACES_OFFSET
                                              : RUN_VALUES_OFFSET + RUN_VALUES_BYTES;

struct Shared {
  Acc pieces[WARPS];  // the warps' aggregates, then their exclusive prefixes
  Acc prefix;         // the tile's exclusive prefix
  u32 count;          // heads in the tile
  u32 tile;
};

TALLY_DEVICE unsigned char* stage_base() {
  extern __shared__ __align__(16) unsigned char dynamic_shared[];
  return dynamic_shared;
}
TALLY_DEVICE K* tile_keys() { return reinterpret_cast<K*>(stage_base()); }
TALLY_DEVICE V* tile_values() { return reinterpret_cast<V*>(stage_base() + KEYS_BYTES); }
TALLY_DEVICE u16* head_places() { return reinterpret_cast<u16*>(stage_base() + PLACES_OFFSET); }
// Where the value of the run that the head in `slot` (at `place` in the tile) ends is kept.
TALLY_DEVICE O* run_value_at(u32 slot, u32 place) {
  if constexpr (RUN_VALUES_IN_PLACE) return reinterpret_cast<O*>(tile_values() + stage_index<V>(place));
  else return reinterpret_cast<O*>(stage_base() + RUN_VALUES_OFFSET) + slot;
}

// Whether rows of X come in by cp.async (block.cuh's `copy_async16`, a plain copy before
// sm_80): 16 bytes a thread and row (reduce-by-key's narrower type of the two moves VI items of
// fewer bytes, through registers).
template <typename X>
__host__ __device__ constexpr bool copies_async() { return ASYNC && VI * sizeof(X) == 16; }

// Rows of the tile from element e0 into shared memory, transposed. FAST: a whole tile of
// 16-byte-aligned input, in row copies (cp.async where `copies_async`, which holds no
// registers; the caller waits with `copy_async_wait_all`); otherwise item by item, items past n
// left as X() (and never read as items: `valid` stops before them).
template <bool FAST, typename X>
TALLY_DEVICE void stage_tile(const X* in, u64 n, u64 e0, X* stage) {
  if constexpr (FAST && copies_async<X>()) {
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      const u32 i = k * ROW + threadIdx.x * VI;
      copy_async16(stage + stage_index<X>(i), in + e0 + i);
    }
  } else if constexpr (FAST) {
    X item[VECS][VI];
#pragma unroll
    for (int k = 0; k < VECS; ++k) load_items<X, VI>(in, e0 + (u64)k * ROW + (u64)threadIdx.x * VI, item[k]);
#pragma unroll
    for (int k = 0; k < VECS; ++k) copy_items<X, VI>(stage + stage_index<X>(k * ROW + threadIdx.x * VI), item[k]);
  } else {
    for (u32 i = threadIdx.x; i < (u32)TILE; i += BLOCK_THREADS)
      stage[stage_index<X>(i)] = e0 + i < n ? in[e0 + i] : X();
  }
}

// ---- one tile -------------------------------------------------------------------------------------
template <bool FAST>
TALLY_DEVICE void runs_tile(const RunsParams& p, u32 tile, const States& st, Shared& sh) {
  const u32 w = warp_id(), lane = lane_id();
  const u64 e0 = (u64)tile * TILE;
  // The key before the tile (thread 0 needs it), read before the tile's loads go out.
  K before_key = K();
  if (threadIdx.x == 0 && e0 > 0) before_key = p.keys[e0 - 1];
  stage_tile<FAST>(p.keys, p.n, e0, tile_keys());
  if constexpr (REDUCE) stage_tile<FAST>(p.values, p.n, e0, tile_values());
  if constexpr (FAST && (copies_async<K>() || (REDUCE && copies_async<V>()))) copy_async_wait_all();
  __syncthreads();

  // The thread's ITEMS consecutive items (read VI at a time), its heads, and what it combines to.
  const u32 first = threadIdx.x * ITEMS;
  const u64 e = e0 + first;
  const u32 valid = e >= p.n ? 0 : (u32)min((u64)ITEMS, p.n - e);
  K prev = threadIdx.x == 0 ? before_key : tile_keys()[stage_index<K>(first - 1)];
  Mask heads = 0;
  // All ITEMS keys: for unique they stay live until they are staged; otherwise only a row's.
  K key[ITEMS];
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    copy_items<K, VI>(key + k * VI, tile_keys() + stage_index<K>(first + k * VI));
#pragma unroll
    for (int i = 0; i < VI; ++i) {
      const int j = k * VI + i;
      if ((u32)j < valid && (e + j == 0 || key[j] != prev)) heads |= (Mask)1 << j;
      prev = key[j];
    }
  }
  Acc a = identity();
  a.count = mask_count(heads);
  if constexpr (ENCODE) {
    set_value(a, (O)(valid - (heads ? mask_last(heads) : 0)));
  } else if constexpr (REDUCE) {
    // Only the items from the last head on make the open run's value.
    const u32 from = heads ? mask_last(heads) : 0;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      if ((u32)(k + 1) * VI > from) {
        V x[VI];
        copy_items<V, VI>(x, tile_values() + stage_index<V>(first + k * VI));
#pragma unroll
        for (int i = 0; i < VI; ++i) {
          const u32 j = k * VI + i;
          if (j >= from && j < valid) set_value(a, j == from ? (O)arith(x[i]) : op(value_of(a), (O)arith(x[i])));
        }
      }
    }
  }

  // The threads' values scanned in thread order within the tile: warps, then the warps' by
  // warp 0, which publishes the tile's aggregate for its successors' look-back right away.
  const Acc incl = warp_inclusive_scan(a, merge);
  if (lane == 31) sh.pieces[w] = incl;
  __syncthreads();
  // The tile's aggregate: warp 0's, which alone publishes it and waits for the prefix.
  Acc agg = identity();
  if (w == 0) {
    const PieceScan<WARPS, Acc> pieces = piece_scan_begin<WARPS>(sh.pieces, identity(), merge);
    agg = pieces.aggregate;
    lookback_begin(st, tile, agg, p.deterministic);
    piece_scan_end(pieces, sh.pieces, false, identity(), merge);
    if (lane == 0) sh.count = (u32)agg.count;
  }
  __syncthreads();

  // The thread's heads staged at their slots in the tile's output, before the tile's prefix is
  // known (its predecessors finish meanwhile): the head's place, and (reduce-by-key) the value
  // of the run it ends, both the tile's own. Only the run open at the tile's start takes the
  // prefix, after the wait.
  const Acc lane_excl = warp_exclusive_from_inclusive(incl, identity());
  const Acc start = lane == 0 ? sh.pieces[w] : merge(sh.pieces[w], lane_excl);
  u32 slot = (u32)start.count;
  u32 overflowed = 0;
  if constexpr (REDUCE) {
    // Whether the run the thread's items continue started in this tile: its running sums are
    // then complete (the open run's are checked below, with the prefix).
    bool started = start.count > 0 || tile == 0;
    O v = value_of(start);
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      V x[VI];
      copy_items<V, VI>(x, tile_values() + stage_index<V>(first + k * VI));
#pragma unroll
      for (int i = 0; i < VI; ++i) {
        const int j = k * VI + i;
        if ((heads >> j) & 1) {
          if constexpr (COMPACTED) {
            // To the thread's kept-th item, at or before item j: read already (its row is in
            // x), and no other thread reads this thread's items after the barrier above.
            const u32 to = first + (slot - (u32)start.count);
            tile_keys()[stage_index<K>(to)] = tile_keys()[stage_index<K>(first + j)];
            *reinterpret_cast<O*>(tile_values() + stage_index<V>(to)) = v;
          } else {
            head_places()[slot] = (u16)(first + j);
            *run_value_at(slot, first + j) = v;
          }
          ++slot;
          v = (O)arith(x[i]);
          started = true;
        } else if ((u32)j < valid) {
          const O after = op(v, (O)arith(x[i]));
          if constexpr (CHECKED) {
            if (started) overflowed |= sum_overflowed(arith(x[i]), v, after);
          }
          v = after;
        }
      }
    }
  } else if constexpr (KEYS_IN_REGISTERS) {
    // Over the tile's keys, which every thread has read (the barrier above).
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      if ((heads >> j) & 1) tile_keys()[slot++] = key[j];
    }
  } else {
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      if ((heads >> j) & 1) head_places()[slot++] = (u16)(first + j);
    }
  }
  if (w == 0) {
    const Acc prefix = lookback_end(st, tile, agg, p.deterministic);
    if (lane == 0) {
      sh.prefix = prefix;
      if (tile == p.tiles - 1) {
        const Acc total = merge(prefix, agg);
        p.result[0] = total.count;
        if constexpr (!UNIQUE) {
          if (total.count - 1 < p.value_capacity) p.out_values[total.count - 1] = value_of(total);
        }
      }
    }
  }
  __syncthreads();
  const u64 before_tile = sh.prefix.count;
  if constexpr (CHECKED) {
    // The items of the run open at the tile's start, checked as running sums from the prefix
    // (they precede the thread's first head, so their values were not written over).
    if (tile > 0 && start.count == 0) {
      O v = op(value_of(sh.prefix), value_of(start));
      const Mask before_first = heads ? (heads & (~heads + 1)) - 1 : ~(Mask)0;
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        V x[VI];
        copy_items<V, VI>(x, tile_values() + stage_index<V>(first + k * VI));
#pragma unroll
        for (int i = 0; i < VI; ++i) {
          const int j = k * VI + i;
          if ((u32)j < valid && ((before_first >> j) & 1)) {
            const O after = op(v, (O)arith(x[i]));
            overflowed |= sum_overflowed(arith(x[i]), v, after);
            v = after;
          }
        }
      }
    }
  }
  if (CHECKED && overflowed) atomicOr(p.result + 1, 1ull);
  // The tile's runs: keys to outputs before_tile.., and the values of the runs their heads end
  // to outputs before_tile - 1.. (none before the input's first head), one coalesced range.
  if constexpr (COMPACTED) {
    // Each warp writes the runs whose heads its lanes hold, slots [warp_first, warp_end) of the
    // tile, 32 consecutive ones a round; slot s's lane is the last whose first slot is at most s
    // (lanes without heads share their successor's first slot), found by halving over the lanes.
    const u32 lane_first = (u32)start.count;
    const u32 warp_first = __shfl_sync(0xffffffffu, lane_first, 0);
    const u32 warp_end = __shfl_sync(0xffffffffu, slot, 31);
    for (u32 round = warp_first; round < warp_end; round += 32) {
      const u32 s = round + lane;
      u32 holder = 0;
#pragma unroll
      for (u32 step = 16; step > 0; step >>= 1) {
        if (__shfl_sync(0xffffffffu, lane_first, holder + step) <= s) holder += step;
      }
      const u32 holder_first = __shfl_sync(0xffffffffu, lane_first, holder);
      if (s < warp_end) {
        const u32 at = (w * 32 + holder) * ITEMS + (s - holder_first);
        const u64 r = before_tile + s;
        if (r < p.key_capacity) p.out_keys[r] = tile_keys()[stage_index<K>(at)];
        if (r > 0 && r - 1 < p.value_capacity) {
          const O ended = *reinterpret_cast<const O*>(tile_values() + stage_index<V>(at));
          p.out_values[r - 1] = s == 0 && tile > 0 ? op(value_of(sh.prefix), ended) : ended;
        }
      }
    }
    return;
  }
  const u32 count = sh.count;
  for (u32 s = threadIdx.x; s < count; s += BLOCK_THREADS) {
    const u64 r = before_tile + s;
    if constexpr (KEYS_IN_REGISTERS) {
      if (r < p.key_capacity) p.out_keys[r] = tile_keys()[s];
    } else {
      const u32 place = head_places()[s];
      if (r < p.key_capacity) p.out_keys[r] = tile_keys()[stage_index<K>(place)];
      if (r > 0 && r - 1 < p.value_capacity) {
        O v;
        if constexpr (ENCODE) {
          v = s == 0 ? value_of(sh.prefix) + place : (O)(place - head_places()[s - 1]);
        } else {
          const O ended = *run_value_at(s, place);
          v = s == 0 && tile > 0 ? op(value_of(sh.prefix), ended) : ended;
        }
        p.out_values[r - 1] = v;
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS) tally_runs(const RunsParams p) {
  __shared__ Shared sh;
  const u32 tile = lookback_next_tile(p.states, &sh.tile);
  // The host's shared memory must hold this layout (`stage_bytes`, src/runs/policy.rs).
  if (threadIdx.x == 0 && dynamic_smem_bytes() < STAGE_BYTES) __trap();
  const bool full = (u64)(tile + 1) * TILE <= p.n;
  const bool aligned = (((u64)p.keys | (u64)p.values) & 15) == 0;
  const States st = lookback_states<RunsLookback>(p.states, p.tiles, p.groups, p.supers);
  lookback_clear_next<RunsLookback>(p.states_next, tile, p.tiles, p.groups, p.supers);
  if (full && aligned) runs_tile<true>(p, tile, st, sh);
  else runs_tile<false>(p, tile, st, sh);
}
