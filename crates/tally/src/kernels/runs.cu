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
// A tile is VECS rows; in each row thread t holds VI consecutive keys (and values) at t * VI.
// Element i starts a run (is a head) when i == 0 or keys[i] != keys[i - 1]: the key before a
// thread's piece comes from the lane before (a shuffle) or, for lane 0, from memory.
// What tiles combine (the look-back's Acc) is the number of heads and, for encode and
// reduce-by-key, the value of the run open at the end of the range (its length so far, or its
// values combined): merging (a, b) adds the counts and takes b's value if b has a head, else
// combines a's with b's. With the exclusive prefix of every element, a head at i with c heads
// before it writes its key to output c and the value of run c - 1 (which ends at i); the last
// tile writes the last run's value and the number of runs. Every run is written exactly once,
// whichever tile its values lie in. Keys and values go through shared memory, so that a tile
// writes its runs as one contiguous, coalesced range.
#include "common.cuh"
#include "warp.cuh"
#include "block.cuh"
#include "lookback.cuh"
#include "compact.cuh"

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
constexpr int PIECES = VECS * WARPS;
constexpr int MIN_BLOCKS = TALLY_MIN_BLOCKS;
static_assert(PIECES <= 128, "warp 0 scans the row-and-warp totals, at most 4 a lane (PieceScan)");

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
};
typedef LookbackStates<RunsLookback> States;

// What a tile stages in shared memory per run head: the key, and the value of the run that
// ends there (encode: the head's position in the tile, from which the lengths follow).
#if TALLY_RUNS == TALLY_RUNS_ENCODE
typedef u32 Staged;
#else
typedef O Staged;
#endif
struct Shared {
  Acc pieces[PIECES];
  u32 counts[PIECES];  // unique: the row-and-warp pieces' head counts, then their offsets
  Acc prefix;  // the tile's exclusive prefix
  u32 count;   // heads in the tile
  u32 tile;
};

// The staged runs live in the launch's dynamic shared memory (so that tiles may outgrow the 48
// KiB of static shared memory): TILE keys, then (but for unique) TILE values. `stage_bytes` in
// src/runs/policy.rs is their size; TILE * sizeof(K) is a multiple of 16.
TALLY_DEVICE unsigned char* stage_base() {
  extern __shared__ __align__(16) unsigned char dynamic_shared[];
  return dynamic_shared;
}
TALLY_DEVICE K* staged_keys() { return reinterpret_cast<K*>(stage_base()); }
TALLY_DEVICE Staged* staged_values() { return reinterpret_cast<Staged*>(stage_base() + (u64)TILE * sizeof(K)); }

// ---- one tile -------------------------------------------------------------------------------------
// Row k's keys (and values) of the tile from element e0, and the heads among them (bit j: item
// j starts a run); `valid[k]`: the items before n (a prefix of the piece).
template <bool FAST>
TALLY_DEVICE void load_tile(const RunsParams& p, u64 e0, K (&key)[VECS][VI], O (&x)[VECS][VI], u32 (&heads)[VECS],
                            u32 (&valid)[VECS]) {
  const u32 lane = lane_id();
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    const u64 e = e0 + (u64)k * ROW + (u64)threadIdx.x * VI;
    heads[k] = 0;
    if constexpr (FAST) {
      valid[k] = VI;
      load_items<K, VI>(p.keys, e, key[k]);
      const K from_lane = warp_shfl_up(key[k][VI - 1], 1);
      K prev = key[k][0];
      if (lane > 0) prev = from_lane;
      else if (e > 0) prev = __ldg(p.keys + e - 1);
      heads[k] = e == 0;
#pragma unroll
      for (int j = 0; j < VI; ++j) {
        heads[k] |= (u32)(key[k][j] != prev) << j;
        prev = key[k][j];
      }
      if constexpr (REDUCE) {
        V in[VI];
        load_items<V, VI>(p.values, e, in);
#pragma unroll
        for (int j = 0; j < VI; ++j) x[k][j] = (O)in[j];
      }
    } else {
      valid[k] = e >= p.n ? 0 : (u32)min((u64)VI, p.n - e);
#pragma unroll
      for (int j = 0; j < VI; ++j) {
        const u64 i = e + j;
        const bool in = i < p.n;
        key[k][j] = in ? p.keys[i] : K();
        heads[k] |= (u32)(in && (i == 0 || p.keys[i] != p.keys[i - 1])) << j;
        if constexpr (REDUCE) x[k][j] = in ? (O)p.values[i] : op_identity();
      }
    }
  }
}

template <bool FAST>
TALLY_DEVICE void runs_tile(const RunsParams& p, u32 tile, const States& st, Shared& sh) {
  const u32 w = warp_id(), lane = lane_id();
  const u64 e0 = (u64)tile * TILE;
  K key[VECS][VI];
  O x[VECS][VI];  // reduce-by-key: the values (as the output type)
  u32 heads[VECS];
  u32 valid[VECS];  // items of the piece before n (a prefix of it)
  Acc row_incl[VECS];
  load_tile<FAST>(p, e0, key, x, heads, valid);
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    // The piece's Acc.
    Acc a = identity();
    a.count = __popc(heads[k]);
    if constexpr (ENCODE) {
      set_value(a, (O)(valid[k] - (heads[k] ? 31 - __clz(heads[k]) : 0)));
    } else if constexpr (REDUCE) {
#pragma unroll
      for (int j = 0; j < VI; ++j) {
        if ((u32)j < valid[k]) set_value(a, ((heads[k] >> j) & 1) ? x[k][j] : op(value_of(a), x[k][j]));
      }
    }
    row_incl[k] = warp_inclusive_scan(a, merge);
    if (lane == 31) sh.pieces[k * WARPS + w] = row_incl[k];
  }
  __syncthreads();
  if (w == 0) {
    const PieceScan<PIECES, Acc> pieces = piece_scan_begin<PIECES>(sh.pieces, identity(), merge);
    const Acc agg = pieces.aggregate;
    const Acc prefix = lookback_prefix(st, tile, agg, p.deterministic);
    // Each piece's prefix, the tile's prefix first (a fixed association).
    piece_scan_end(pieces, sh.pieces, tile > 0, prefix, merge);
    if (lane == 0) {
      sh.prefix = prefix;
      sh.count = (u32)agg.count;
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
  u32 overflowed = 0;
  K* const keys_out = staged_keys();
  Staged* const values_out = staged_values();
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    const Acc lane_excl = warp_exclusive_from_inclusive(row_incl[k], identity());
    Acc run = lane == 0 ? sh.pieces[k * WARPS + w] : merge(sh.pieces[k * WARPS + w], lane_excl);
#pragma unroll
    for (int j = 0; j < VI; ++j) {
      if ((heads[k] >> j) & 1) {
        const u32 slot = (u32)(run.count - before_tile);
        keys_out[slot] = key[k][j];
        if constexpr (ENCODE) values_out[slot] = (u32)(k * ROW + threadIdx.x * VI + j);
        if constexpr (REDUCE) values_out[slot] = value_of(run);
        run.count += 1;
        if constexpr (REDUCE) set_value(run, x[k][j]);
      } else if constexpr (REDUCE) {
        if ((u32)j < valid[k]) {
          const O before = value_of(run);
          const O after = op(before, x[k][j]);
          set_value(run, after);
          if constexpr (CHECKED) {
            if constexpr (OUT_SIGNED) overflowed |= (u32)(((i64)x[k][j] >= 0) != ((i64)after >= (i64)before));
            else overflowed |= (u32)(after < before);
          }
        }
      }
    }
  }
  if (CHECKED && overflowed) atomicOr(p.result + 1, 1ull);
  __syncthreads();
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
        else v = values_out[s];
        p.out_values[r - 1] = v;
      }
    }
  }
}

// Unique: the heads' counts scanned as compact.cuh does (four rows in one 64-bit scan), the
// look-back of a packed count, the heads' keys staged and written out as one coalesced range.
template <bool FAST>
TALLY_DEVICE void unique_tile(const RunsParams& p, u32 tile, const LookbackStates<CountLookback>& st, Shared& sh) {
  const u32 w = warp_id(), lane = lane_id();
  K key[VECS][VI];
  O unused[VECS][VI];
  u32 heads[VECS], valid[VECS], count[VECS], lane_offset[VECS];
  load_tile<FAST>(p, (u64)tile * TILE, key, unused, heads, valid);
#pragma unroll
  for (int k = 0; k < VECS; ++k) count[k] = __popc(heads[k]);
  compact_warp_counts<BLOCK_THREADS, VECS>(count, lane_offset, sh.counts);
  __syncthreads();
  if (w == 0) {
    const u32 total = compact_scan_pieces<PIECES>(sh.counts);
    const u64 prefix = lookback_prefix(st, tile, (u64)total, false);
    if (lane == 0) {
      sh.prefix.count = prefix;
      sh.count = total;
      if (tile == p.tiles - 1) p.result[0] = prefix + total;
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < VECS; ++k) compact_stage(staged_keys(), sh.counts[k * WARPS + w] + lane_offset[k], key[k], heads[k]);
  __syncthreads();
  const u64 before_tile = sh.prefix.count;
  const u64 room = before_tile < p.key_capacity ? p.key_capacity - before_tile : 0;
  compact_store<BLOCK_THREADS>(staged_keys(), (u32)min((u64)sh.count, room), p.out_keys + before_tile);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS) tally_runs(const RunsParams p) {
  __shared__ Shared sh;
  const u32 tile = lookback_next_tile(p.states, &sh.tile);
  const bool full = (u64)(tile + 1) * TILE <= p.n;
  const bool aligned = (((u64)p.keys | (u64)p.values) & 15) == 0;
#if TALLY_RUNS == TALLY_RUNS_UNIQUE
  const LookbackStates<CountLookback> st = lookback_states<CountLookback>(p.states, p.tiles, p.groups, p.supers);
  if (full && aligned) unique_tile<true>(p, tile, st, sh);
  else unique_tile<false>(p, tile, st, sh);
#else
  const States st = lookback_states<RunsLookback>(p.states, p.tiles, p.groups, p.supers);
  if (full && aligned) runs_tile<true>(p, tile, st, sh);
  else runs_tile<false>(p, tile, st, sh);
#endif
}
