// Single-pass prefix scans (decoupled look-back, Merrill & Garland). One compilation = one
// specialisation, chosen by defines:
//   TALLY_ELEM         input type (C++ spelling)
//   TALLY_OUT          output and accumulator type; TALLY_OUT_FLOAT, TALLY_OUT_SIGNED: 0 or 1
//   TALLY_SCAN         SUM, MIN, MAX, CUSTOM (codes.cuh)
//   TALLY_KEY_BYTES    0: a plain scan; 4 or 8: scan by key (restart where the key changes)
//   TALLY_BLOCK_THREADS, TALLY_VECS (16-byte input loads per thread and tile), TALLY_MIN_BLOCKS
//   TALLY_CUSTOM_EXPR, TALLY_CUSTOM_IDENTITY  custom: `a OP b` as C++ (associative), identity
// One block scans one tile of BLOCK_THREADS * VECS * 16 bytes of input; tiles are numbered in
// the order blocks start (an atomic counter), so a tile only ever waits for tiles that are
// already running. A tile is VECS rows; in each row, thread t holds the 16 bytes at t. Each
// thread combines its row pieces, warps scan them (fixed trees), warp 0 scans the row-and-warp
// totals, publishes the tile's aggregate, and finds the tile's prefix by looking back
// (lookback.cuh): the fixed look-back where the bits must not depend on timing (floats, custom
// operations: `deterministic`), else the fast one.
// The look-back and its tile states are lookback.cuh's; the states live in the stream's
// workspace, zeroed before every launch.
#include "common.cuh"
#include "warp.cuh"
#include "block.cuh"
#include "lookback.cuh"

#ifndef TALLY_ELEM
#error "TALLY_ELEM must be defined"
#endif
#ifndef TALLY_KEY_BYTES
#define TALLY_KEY_BYTES 0
#endif

typedef TALLY_ELEM T;
typedef TALLY_OUT O;
constexpr int BLOCK_THREADS = TALLY_BLOCK_THREADS;
constexpr int WARPS = BLOCK_THREADS / 32;
constexpr int VECS = TALLY_VECS;
constexpr int VI = VecItems<T>::value;  // items per thread and row
constexpr int ROW = BLOCK_THREADS * VI;
constexpr u64 TILE = (u64)ROW * VECS;
constexpr bool OUT_FLOAT = TALLY_OUT_FLOAT;
constexpr bool OUT_SIGNED = TALLY_OUT_SIGNED;
constexpr bool HAS_KEY = TALLY_KEY_BYTES != 0;
static_assert(VECS * WARPS <= 32, "warp 0 scans the row-and-warp totals");

#if TALLY_KEY_BYTES == 8
typedef u64 Key;
#else
typedef u32 Key;
#endif

// The layout is checked against `ScanParams` in src/scan/cuda.rs.
struct ScanParams {
  const T* input;
  const Key* keys;        // scan by key: the keys (compared by their bits)
  O* output;              // may be `input` (in place)
  u64 n;
  u32* overflow;          // set to 1 when a checked integer sum overflows
  unsigned char* states;  // workspace: the tile counter, then the slot arrays (zeroed)
  u32 tiles;
  u32 groups;
  u32 supers;
  u32 exclusive;
  u32 deterministic;
  u32 check_overflow;
  u32 has_carry;          // a scan of one shard of several: `carry` comes before element 0
  u64 carry;              // the carry's bits (an O in the low bytes): the earlier shards' total
};


// ---- the operation ----------------------------------------------------------------------------
#if TALLY_SCAN == TALLY_SCAN_SUM
struct Op {
  static TALLY_DEVICE O apply(O a, O b) { return wrapping_add(a, b); }
  static TALLY_DEVICE O identity() { return (O)0; }
};
#elif TALLY_SCAN == TALLY_SCAN_MIN
typedef RunningMin<O> Op;
#elif TALLY_SCAN == TALLY_SCAN_MAX
typedef RunningMax<O> Op;
#elif TALLY_SCAN == TALLY_SCAN_CUSTOM
struct Op {
  static TALLY_DEVICE O apply(O a, O b) { return (O)(TALLY_CUSTOM_EXPR); }
  static TALLY_DEVICE O identity() { return (O)(TALLY_CUSTOM_IDENTITY); }
};
#else
#error "unknown TALLY_SCAN"
#endif
TALLY_DEVICE O op(O a, O b) { return Op::apply(a, b); }
TALLY_DEVICE O op_identity() { return Op::identity(); }

// ---- what is combined: the value, and for scans by key whether a segment starts inside -------
#if TALLY_KEY_BYTES
struct Acc {
  O v;
  u32 f;
};
TALLY_DEVICE Acc make_acc(O v, u32 f) { return Acc{v, f}; }
TALLY_DEVICE u32 flag_of(const Acc& a) { return a.f; }
// The segmented operation: a range that starts a segment does not see what came before.
TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) { return Acc{b.f ? b.v : op(a.v, b.v), a.f | b.f}; }
#else
struct Acc {
  O v;
};
TALLY_DEVICE Acc make_acc(O v, u32) { return Acc{v}; }
TALLY_DEVICE u32 flag_of(const Acc&) { return 0; }
TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) { return Acc{op(a.v, b.v)}; }
#endif
TALLY_DEVICE Acc identity() { return make_acc(op_identity(), 0); }

// ---- tile states: the look-back's traits (lookback.cuh) ----------------------------------------
// A value of up to 4 bytes shares one 64-bit word with its status and segment flag (no fence).
struct ScanLookback {
  typedef ::Acc Acc;
  static constexpr bool PACKED = sizeof(O) <= 4;
  static TALLY_DEVICE Acc identity() { return ::identity(); }
  static TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) { return ::merge(a, b); }
  static TALLY_DEVICE u64 pack(const Acc& a, u32 status) {
    union {
      O value;
      u32 word;
    } u;
    u.word = 0;
    u.value = a.v;
    return (u64)u.word | ((u64)(status | flag_of(a) << 8) << 32);
  }
  static TALLY_DEVICE u32 status_of(u64 w) { return (u32)(w >> 32) & 0xff; }
  static TALLY_DEVICE Acc unpack(u64 w) {
    union {
      O value;
      u32 word;
    } u;
    u.word = (u32)w;
    return make_acc(u.value, (u32)(w >> 40) & 1);
  }
};
typedef LookbackStates<ScanLookback> States;

// ---- stores of a thread's piece of a row (loads: common.cuh's load_items) -------------------
template <int N>
TALLY_DEVICE void store_items(O* base, u64 e, const O* in) {
  constexpr int BYTES = N * (int)sizeof(O);
  static_assert(BYTES % 16 == 0, "whole 16-byte stores");
  union {
    uint4 raw[BYTES / 16];
    O item[N];
  } u;
#pragma unroll
  for (int j = 0; j < N; ++j) u.item[j] = in[j];
#pragma unroll
  for (int w = 0; w < BYTES / 16; ++w) reinterpret_cast<uint4*>(base + e)[w] = u.raw[w];
}

// The carry-in as an O (its bits in the low bytes of the 64-bit field).
TALLY_DEVICE O carry_of(const ScanParams& p) {
  union {
    u64 word;
    O value;
  } u;
  u.word = p.carry;
  return u.value;
}

// ---- one tile -------------------------------------------------------------------------------------
template <bool FAST>
TALLY_DEVICE void scan_tile(const ScanParams& p, u32 tile, const States& st, Acc* totals) {
  const u32 w = warp_id();
  const u64 e0 = (u64)tile * TILE;
  O x[VECS][VI];
  u32 heads[VECS];
  Acc row_incl[VECS];
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    const u64 e = e0 + (u64)k * ROW + (u64)threadIdx.x * VI;
    heads[k] = 0;
    if constexpr (FAST) {
      T in[VI];
      load_items<T, VI>(p.input, e, in);
#pragma unroll
      for (int j = 0; j < VI; ++j) x[k][j] = (O)in[j];
      if constexpr (HAS_KEY) {
        Key key[VI];
        load_items<Key, VI>(p.keys, e, key);
        Key prev = e == 0 ? key[0] : __ldg(p.keys + e - 1);
        heads[k] = e == 0;
#pragma unroll
        for (int j = 0; j < VI; ++j) {
          heads[k] |= (u32)(key[j] != prev) << j;
          prev = key[j];
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < VI; ++j) {
        const u64 i = e + j;
        x[k][j] = i < p.n ? (O)p.input[i] : op_identity();
        if constexpr (HAS_KEY) {
          const bool head = i < p.n && (i == 0 || p.keys[i] != p.keys[i - 1]);
          heads[k] |= (u32)head << j;
        }
      }
    }
    Acc a = make_acc(x[k][0], heads[k] & 1);
#pragma unroll
    for (int j = 1; j < VI; ++j) a = merge(a, make_acc(x[k][j], (heads[k] >> j) & 1));
    row_incl[k] = warp_inclusive_scan(a, merge);
    if (lane_id() == 31) totals[k * WARPS + w] = row_incl[k];
  }
  __syncthreads();
  if (w == 0) {
    constexpr int PIECES = VECS * WARPS;
    const Acc mine = (int)lane_id() < PIECES ? totals[lane_id()] : identity();
    const Acc incl = warp_inclusive_scan(mine, merge);
    const Acc agg = warp_shfl_idx(incl, 31);
    const Acc excl = warp_exclusive_from_inclusive(incl, identity());
    // A carry-in is tile 0's prefix: tile 0 publishes it merged with its aggregate, so the
    // look-back hands it on to every later tile.
    const Acc carry = make_acc(carry_of(p), 0);
    const Acc published = (tile == 0 && p.has_carry) ? merge(carry, agg) : agg;
    const Acc prefix = lookback_prefix(st, tile, published, p.deterministic);
    // Each row-and-warp piece's prefix, the tile's prefix first (a fixed association).
    if ((int)lane_id() < PIECES) {
      totals[lane_id()] = (tile > 0) ? merge(prefix, excl) : (p.has_carry ? merge(carry, excl) : excl);
    }
  }
  __syncthreads();
  u32 overflowed = 0;
  // Element 0 of the whole input starts the scan: its inclusive value is itself, never
  // `op(identity, x)` (a custom identity need only be neutral on what the op returns, e.g. 0 for
  // `fmaxf(fabsf(a), fabsf(b))`; the CPU backend and the reference start the same way).
  const bool starts_input = e0 == 0 && threadIdx.x == 0 && !p.has_carry;
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    const Acc lane_excl = warp_exclusive_from_inclusive(row_incl[k], identity());
    const Acc pre = lane_id() == 0 ? totals[k * WARPS + w] : merge(totals[k * WARPS + w], lane_excl);
    O run = pre.v;
    O out[VI];
#pragma unroll
    for (int j = 0; j < VI; ++j) {
      const O before = run;
      if ((HAS_KEY && ((heads[k] >> j) & 1)) || (k == 0 && j == 0 && starts_input)) {
        run = x[k][j];
        out[j] = p.exclusive ? op_identity() : run;
      } else {
        run = op(run, x[k][j]);
        out[j] = p.exclusive ? before : run;
        if constexpr (TALLY_SCAN == TALLY_SCAN_SUM && !OUT_FLOAT && sizeof(O) == 8) {
          if constexpr (OUT_SIGNED) overflowed |= (u32)((x[k][j] >= 0) != (run >= before));
          else overflowed |= (u32)(run < before);
        }
      }
    }
    const u64 e = e0 + (u64)k * ROW + (u64)threadIdx.x * VI;
    if constexpr (FAST) {
      store_items<VI>(p.output, e, out);
    } else {
#pragma unroll
      for (int j = 0; j < VI; ++j)
        if (e + j < p.n) p.output[e + j] = out[j];
    }
  }
  if (overflowed && p.check_overflow) atomicOr(p.overflow, 1u);
}

// Blocks per multiprocessor (the policy's: threads in flight to cover the loads' latency).
constexpr int MIN_BLOCKS = TALLY_MIN_BLOCKS;

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS) tally_scan(const ScanParams p) {
  __shared__ Acc totals[32];
  __shared__ u32 shared_tile;
  const u32 tile = lookback_next_tile(p.states, &shared_tile);
  const States st = lookback_states<ScanLookback>(p.states, p.tiles, p.groups, p.supers);
  const bool full = (u64)(tile + 1) * TILE <= p.n;
  const bool aligned = (((u64)p.input | (u64)p.output | (u64)p.keys) & 15) == 0;
  if (full && aligned) scan_tile<true>(p, tile, st, totals);
  else scan_tile<false>(p, tile, st, totals);
}
