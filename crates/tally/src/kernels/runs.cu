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
// k * ROW + t * VI), transposed through shared memory so that each thread then holds ITEMS =
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
// writes them as one contiguous, coalesced range; they are staged with the tile's own counts and
// values while warp 0 waits for the tile's prefix, which then only moves the range and
// completes the run open at the tile's start.
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
  unsigned char* states; // workspace: the tile counter, then the look-back slots (zeroed)
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

// The look-back's traits: a count alone shares one word with its status.
struct RunsLookback {
  typedef ::Acc Acc;
  static constexpr bool PACKED = UNIQUE;
  static TALLY_DEVICE Acc identity() { return ::identity(); }
  static TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) { return ::merge(a, b); }
  static TALLY_DEVICE u64 pack(const Acc& a, u32 status) { return a.count | (u64)status << 62; }
  static TALLY_DEVICE u32 status_of(u64 w) { return (u32)(w >> 62); }
  static TALLY_DEVICE Acc unpack(u64 w) {
    Acc a = ::identity();
    a.count = w & ((1ull << 62) - 1);
    return a;
  }
  // Counts of heads only grow: every predecessor moves a range's outputs.
  static TALLY_DEVICE bool absorbs(const Acc&) { return false; }
  static constexpr int WINDOWS = LOOKBACK_WINDOWS;
};
typedef LookbackStates<RunsLookback> States;

// ---- the tile in shared memory --------------------------------------------------------------------
// A thread's heads, one bit per item.
typedef u64 Mask;
TALLY_DEVICE u32 mask_count(Mask m) { return (u32)__popcll(m); }
TALLY_DEVICE u32 mask_last(Mask m) { return 63 - (u32)__clzll(m); }

// The transposed tile: thread t's ITEMS items at t * (ITEMS + VI), VI items of padding after
// each thread's (so that the 8 lanes of a 16-byte shared access fall in different banks).
TALLY_DEVICE u32 stage_index(u32 i) { return i + (i / ITEMS) * VI; }
constexpr u64 stage_elements = (u64)TILE + (u64)BLOCK_THREADS * VI;

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

// What a tile stages in shared memory per run head on the way out: the key, and the value of
// the run that ends there (encode: the head's position in the tile, from which the lengths
// follow). It reuses the memory the tile came in through (`stage_bytes` in src/runs/policy.rs
// is the larger of the two).
#if TALLY_RUNS == TALLY_RUNS_ENCODE
typedef u32 Staged;
#else
typedef O Staged;
#endif
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
// Coming in: the transposed keys, then (reduce-by-key) the transposed values.
TALLY_DEVICE K* tile_keys() { return reinterpret_cast<K*>(stage_base()); }
TALLY_DEVICE V* tile_values() { return reinterpret_cast<V*>(stage_base() + stage_elements * sizeof(K)); }
// Going out: TILE keys, then TILE staged values (but for unique).
TALLY_DEVICE K* staged_keys() { return reinterpret_cast<K*>(stage_base()); }
TALLY_DEVICE Staged* staged_values() { return reinterpret_cast<Staged*>(stage_base() + (u64)TILE * sizeof(K)); }

// Rows of the tile from element e0 into shared memory, transposed. FAST: a whole tile of
// 16-byte-aligned input, in row loads; otherwise item by item, items past n left as K() (and
// never read as items: `valid` stops before them).
template <bool FAST, typename X>
TALLY_DEVICE void stage_tile(const X* in, u64 n, u64 e0, X* stage) {
  if constexpr (FAST) {
    X item[VECS][VI];
#pragma unroll
    for (int k = 0; k < VECS; ++k) load_items<X, VI>(in, e0 + (u64)k * ROW + (u64)threadIdx.x * VI, item[k]);
#pragma unroll
    for (int k = 0; k < VECS; ++k) copy_items<X, VI>(stage + stage_index(k * ROW + threadIdx.x * VI), item[k]);
  } else {
    for (u32 i = threadIdx.x; i < (u32)TILE; i += BLOCK_THREADS) stage[stage_index(i)] = e0 + i < n ? in[e0 + i] : X();
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
  __syncthreads();

  // The thread's ITEMS consecutive items, its heads, and what it combines to.
  const u32 first = threadIdx.x * ITEMS;
  const u64 e = e0 + first;
  const u32 valid = e >= p.n ? 0 : (u32)min((u64)ITEMS, p.n - e);
  K key[ITEMS];
  V x[ITEMS];
#pragma unroll
  for (int k = 0; k < VECS; ++k) copy_items<K, VI>(key + k * VI, tile_keys() + stage_index(first + k * VI));
  if constexpr (REDUCE) {
#pragma unroll
    for (int k = 0; k < VECS; ++k) copy_items<V, VI>(x + k * VI, tile_values() + stage_index(first + k * VI));
  }
  K prev = threadIdx.x == 0 ? before_key : tile_keys()[stage_index(first - 1)];
  Mask heads = 0;
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    if ((u32)j < valid && (e + j == 0 || key[j] != prev)) heads |= (Mask)1 << j;
    prev = key[j];
  }
  Acc a = identity();
  a.count = mask_count(heads);
  if constexpr (ENCODE) {
    set_value(a, (O)(valid - (heads ? mask_last(heads) : 0)));
  } else if constexpr (REDUCE) {
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      if ((u32)j < valid) set_value(a, ((heads >> j) & 1) ? (O)arith(x[j]) : op(value_of(a), (O)arith(x[j])));
    }
  }

  // The threads' values scanned in thread order within the tile: warps, then the warps' by
  // warp 0, which publishes the tile's aggregate for its successors' look-back right away.
  const Acc incl = warp_inclusive_scan(a, merge);
  if (lane == 31) sh.pieces[w] = incl;
  __syncthreads();  // also: every thread has read its items, so the runs may overwrite them
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

  // The runs the thread's heads end and start, staged at their places in the tile's output,
  // before the tile's prefix is known (its predecessors finish meanwhile): slots and values are
  // the tile's own. Only the run open at the tile's start takes the prefix, after the wait.
  const Acc lane_excl = warp_exclusive_from_inclusive(incl, identity());
  const Acc start = lane == 0 ? sh.pieces[w] : merge(sh.pieces[w], lane_excl);
  Acc run = start;
  u32 overflowed = 0;
  K* const keys_out = staged_keys();
  Staged* const values_out = staged_values();
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    if ((heads >> j) & 1) {
      const u32 slot = (u32)run.count;
      keys_out[slot] = key[j];
      if constexpr (ENCODE) values_out[slot] = first + j;
      if constexpr (REDUCE) values_out[slot] = value_of(run);
      run.count += 1;
      if constexpr (REDUCE) set_value(run, (O)arith(x[j]));
    } else if constexpr (REDUCE) {
      if ((u32)j < valid) {
        const O before = value_of(run);
        const O after = op(before, (O)arith(x[j]));
        set_value(run, after);
        // The open run's sums are checked below, with the prefix.
        if constexpr (CHECKED) {
          if (run.count > 0 || tile == 0) overflowed |= sum_overflowed(arith(x[j]), before, after);
        }
      }
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
    // The items of the run open at the tile's start, checked as running sums from the prefix.
    if (tile > 0 && start.count == 0) {
      O v = op(value_of(sh.prefix), value_of(start));
#pragma unroll
      for (int j = 0; j < ITEMS; ++j) {
        if ((u32)j < valid && !((heads >> j) & 1) && (heads & (((Mask)1 << j) - 1)) == 0) {
          const O after = op(v, (O)arith(x[j]));
          overflowed |= sum_overflowed(arith(x[j]), v, after);
          v = after;
        }
      }
    }
  }
  if (CHECKED && overflowed) atomicOr(p.result + 1, 1ull);
  // The tile's runs: keys to outputs before_tile.., and the values of the runs their heads end
  // to outputs before_tile - 1.. (none before the input's first head), one coalesced range.
  const u32 count = sh.count;
  for (u32 s = threadIdx.x; s < count; s += BLOCK_THREADS) {
    const u64 r = before_tile + s;
    if (r < p.key_capacity) p.out_keys[r] = keys_out[s];
    if constexpr (!UNIQUE) {
      if (r > 0 && r - 1 < p.value_capacity) {
        O v;
        if constexpr (ENCODE) v = s == 0 ? value_of(sh.prefix) + values_out[0] : (O)(values_out[s] - values_out[s - 1]);
        else v = s == 0 && tile > 0 ? op(value_of(sh.prefix), values_out[0]) : values_out[s];
        p.out_values[r - 1] = v;
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS) tally_runs(const RunsParams p) {
  __shared__ Shared sh;
  const u32 tile = lookback_next_tile(p.states, &sh.tile);
  const bool full = (u64)(tile + 1) * TILE <= p.n;
  const bool aligned = (((u64)p.keys | (u64)p.values) & 15) == 0;
  const States st = lookback_states<RunsLookback>(p.states, p.tiles, p.groups, p.supers);
  if (full && aligned) runs_tile<true>(p, tile, st, sh);
  else runs_tile<false>(p, tile, st, sh);
}
