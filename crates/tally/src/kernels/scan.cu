// Single-pass prefix scans (decoupled look-back, Merrill & Garland). One compilation = one
// specialisation, chosen by defines:
//   TALLY_ELEM         input type (C++ spelling)
//   TALLY_OUT          output and accumulator type; TALLY_OUT_FLOAT, TALLY_OUT_SIGNED: 0 or 1
//   TALLY_SCAN         SUM, MIN, MAX, CUSTOM (codes.cuh)
//   TALLY_KEY_BYTES    0: a plain scan; 4 or 8: scan by key (restart where the key changes)
//   TALLY_BLOCK_THREADS, TALLY_VECS (16-byte input loads per thread and tile), TALLY_MIN_BLOCKS
//   TALLY_CUSTOM_EXPR, TALLY_CUSTOM_IDENTITY  custom: `a OP b` as C++ (associative), identity
//   TALLY_SCAN_STAGE, TALLY_LOOKBACK_WINDOWS, TALLY_SPLIT_LOOKBACK, TALLY_TILES_BY_BLOCK,
//     TALLY_LOOKBACK_ORDERED: the policy's (src/scan/policy.rs)
// One block scans one tile of BLOCK_THREADS * VECS * 16 bytes of input; tiles are numbered in
// the order blocks start (an atomic counter), so a tile only ever waits for tiles that are
// already running, or (TALLY_TILES_BY_BLOCK, the widening scans) by block index, as in CUB.
// A tile is VECS rows; in each row, thread t holds the 16 bytes at t. Each thread combines its
// row pieces, warps scan them (fixed trees), warp 0 scans the row-and-warp totals, publishes
// the tile's aggregate, and finds the tile's prefix by looking back
// (lookback.cuh): where the bits must not depend on timing (float sums, custom operations:
// `deterministic`) the ordered look-back, or for scans by key the fixed one; else the fast one.
// The look-back and its tile states are lookback.cuh's (zeroed before every launch: see there).
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
// Warp 0 scans the VECS * WARPS row-and-warp totals (block.cuh's PieceScan, at most 128).
constexpr int PIECES = VECS * WARPS;
#ifndef TALLY_SCAN_STAGE
#define TALLY_SCAN_STAGE 0
#endif
// STAGE: a tile's input is copied into shared memory (cp.async, no registers held) and read
// from there twice, before and after the look-back, so a block waiting for its prefix holds
// no input in registers and more blocks fit on a multiprocessor.
constexpr bool STAGE = TALLY_SCAN_STAGE;
// The look-back's shape, chosen by the host (`scan::policy`): predecessor windows a lane of the
// fast look-back reads a round, and (scans by key into outputs of up to 4 bytes) whether rows
// that need no tile prefix are written while warp 0 looks back. A standalone compile of a plain
// scan gets the plain scans' choice; one by key must say.
#ifdef TALLY_KEYED_WINDOWS
#error "TALLY_KEYED_WINDOWS is gone: define TALLY_LOOKBACK_WINDOWS (the library: TALLY_SCAN_WINDOWS)"
#endif
#if TALLY_KEY_BYTES != 0 && !defined(TALLY_LOOKBACK_WINDOWS)
#error "a scan by key needs TALLY_LOOKBACK_WINDOWS and TALLY_SPLIT_LOOKBACK (scan::policy)"
#endif
#ifndef TALLY_LOOKBACK_WINDOWS
#define TALLY_LOOKBACK_WINDOWS LOOKBACK_WINDOWS
#endif
#ifndef TALLY_SPLIT_LOOKBACK
#define TALLY_SPLIT_LOOKBACK 0
#endif

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
  unsigned char* states;  // the tile counter, then the slot arrays (zeroed before the launch)
  unsigned char* states_next;  // a kept plan's other set, zeroed here for its next launch; or null
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
// A value of up to 4 bytes shares one 64-bit word with its status and segment flag; a wider
// one takes the low word of 128 bits, the status and the flag the high one.
template <bool NARROW>
struct ScanSlot;
template <>
struct ScanSlot<true> {
  typedef u64 Word;
  static TALLY_DEVICE Word pack(const Acc& a, u32 status) {
    return bits_of(a.v) | ((u64)(status | flag_of(a) << 8) << 32);
  }
  static TALLY_DEVICE u32 status_of(const Word& w) { return (u32)(w >> 32) & 0xff; }
  static TALLY_DEVICE Acc unpack(const Word& w) { return make_acc(from_bits<O>(w & 0xffffffffull), (u32)(w >> 40) & 1); }
};
template <>
struct ScanSlot<false> {
  typedef Word128 Word;
  static TALLY_DEVICE Word pack(const Acc& a, u32 status) { return Word{bits_of(a.v), status | flag_of(a) << 8}; }
  static TALLY_DEVICE u32 status_of(const Word& w) { return (u32)w.hi & 0xff; }
  static TALLY_DEVICE Acc unpack(const Word& w) { return make_acc(from_bits<O>(w.lo), (u32)(w.hi >> 8) & 1); }
};

struct ScanLookback : ScanSlot<sizeof(O) <= 4> {
  typedef ::Acc Acc;
  static TALLY_DEVICE Acc identity() { return ::identity(); }
  static TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) { return ::merge(a, b); }
  // A range with a segment head: merge(x, a) is {a.v, 1} = a whatever came before.
  static TALLY_DEVICE bool absorbs(const Acc& a) { return flag_of(a) != 0; }
  static constexpr int WINDOWS = TALLY_LOOKBACK_WINDOWS;
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

// A widening scan's thread holds more than 16 bytes of outputs per row (i32 into i64: 32,
// u8 into u64: 128). Stored from the thread's registers, each 16-byte store instruction of a
// warp would cover every other 16 bytes (or less) of the warp's range: half of each 32-byte
// sector or worse (ncu: half the store sectors excessive, docs/PERF.md v20). They go out
// through a per-warp buffer in shared memory instead, 1 KiB at a time: the lanes of a group
// (all 32 for i32 into i64, 8 for u8 into u64) write their outputs there, and the warp stores
// the group's contiguous range in two 512-byte store instructions. The buffer's size is the
// same for every type, so a tuned shape's shared memory grows only with its warps.
constexpr int OUT_VECS = VI * (int)sizeof(O) / 16;  // 16-byte pieces of a thread's row outputs
constexpr bool WIDE_ROWS = OUT_VECS > 1;
constexpr int GROUP_PIECES = 64;                           // 1 KiB a round
constexpr int GROUP_LANES = WIDE_ROWS ? GROUP_PIECES / OUT_VECS : 32;  // lanes whose outputs fill it
static_assert(!WIDE_ROWS || (GROUP_LANES >= 1 && 32 % GROUP_LANES == 0), "whole groups of lanes");
// Piece q of a round sits at q + q / 8 in the buffer: one 16-byte pad every 128 bytes, so that
// neither the lanes' writes (OUT_VECS pieces apart) nor the reads (consecutive) meet in a bank.
constexpr int ROW_BUFFER = GROUP_PIECES + GROUP_PIECES / 8;
TALLY_DEVICE int padded_piece(int q) { return q + q / 8; }

// This warp's piece of a row (32 threads' VI outputs, contiguous from `base`, 16-byte aligned),
// through `buffer` (ROW_BUFFER pieces, this warp's own). Every lane of the warp calls it.
TALLY_DEVICE void store_row_through_warp(O* base, const O (&out)[VI], uint4* buffer) {
  union {
    uint4 raw[OUT_VECS];
    O item[VI];
  } u;
#pragma unroll
  for (int j = 0; j < VI; ++j) u.item[j] = out[j];
  const int lane = (int)lane_id();
  uint4* dst = reinterpret_cast<uint4*>(base);
#pragma unroll
  for (int g = 0; g < 32 / GROUP_LANES; ++g) {
    const int member = lane - g * GROUP_LANES;  // this lane's place in group g, if it is in it
    if (member >= 0 && member < GROUP_LANES) {
#pragma unroll
      for (int v = 0; v < OUT_VECS; ++v) buffer[padded_piece(member * OUT_VECS + v)] = u.raw[v];
    }
    __syncwarp();
#pragma unroll
    for (int r = 0; r < GROUP_PIECES / 32; ++r)
      dst[g * GROUP_PIECES + r * 32 + lane] = buffer[padded_piece(r * 32 + lane)];
    __syncwarp();  // the buffer is rewritten by the next group or row
  }
}

// The carry-in as an O (its bits in the low bytes of the 64-bit field).
TALLY_DEVICE O carry_of(const ScanParams& p) { return from_bits<O>(p.carry); }

// What precedes tile `tile`: its look-back's prefix, or for tile 0 the carry-in. Chosen by
// assignment: `tile > 0 ? prefix : carry` binds a reference to one of two structs, which put
// both in local memory (ptxas: a 16-byte stack frame in the scans by key).
TALLY_DEVICE Acc before_tile(u32 tile, const Acc& prefix, const Acc& carry) {
  Acc before = carry;
  if (tile > 0) before = prefix;
  return before;
}

// Rows that need no tile prefix written during the look-back (scans by key only).
constexpr bool SPLIT_LOOKBACK = HAS_KEY && TALLY_SPLIT_LOOKBACK;

// ---- one tile ---------------------------------------------------------------------------------------
// Row k of this thread's items as outputs: from registers, or (STAGE) from the shared copy, the
// identity past the end of the input. Registers hold the input type, not the output's, so that
// a widening scan (i32 into i64) holds its tile in as many registers as a same-width one.
template <bool FAST, typename Xs>
TALLY_DEVICE void row_items(const ScanParams& p, u64 e0, int k, const Xs& x, const T* stage, O (&out)[VI]) {
  const u32 at = (u32)k * ROW + threadIdx.x * VI;
  T item[VI];
  if constexpr (STAGE && FAST) {
    // A 16-byte vector per thread and row: consecutive threads, consecutive banks.
    union {
      uint4 raw[VI * sizeof(T) / 16];
      T item[VI];
    } u;
#pragma unroll
    for (int v = 0; v < (int)(VI * sizeof(T) / 16); ++v) u.raw[v] = reinterpret_cast<const uint4*>(stage + at)[v];
#pragma unroll
    for (int j = 0; j < VI; ++j) item[j] = u.item[j];
  } else {
#pragma unroll
    for (int j = 0; j < VI; ++j) item[j] = STAGE ? stage[at + j] : x[STAGE ? 0 : k][j];
  }
#pragma unroll
  for (int j = 0; j < VI; ++j) out[j] = FAST || e0 + at + j < p.n ? (O)item[j] : op_identity();
}

template <bool FAST>
TALLY_DEVICE void scan_tile(const ScanParams& p, u32 tile, const States& st, Acc* totals, Acc* tile_prefix,
                            T* stage, uint4* row_out) {
  const u32 w = warp_id();
  const u64 e0 = (u64)tile * TILE;
  T x[STAGE ? 1 : VECS][VI];
  u32 heads[VECS];
  Acc row_incl[VECS];
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    const u64 e = e0 + (u64)k * ROW + (u64)threadIdx.x * VI;
    heads[k] = 0;
    if constexpr (STAGE) {
      const u32 at = (u32)k * ROW + threadIdx.x * VI;
      if constexpr (FAST) {
#pragma unroll
        for (int v = 0; v < (int)(VI * sizeof(T) / 16); ++v)
          copy_async16(reinterpret_cast<uint4*>(stage + at) + v, reinterpret_cast<const uint4*>(p.input + e) + v);
      } else {
#pragma unroll
        for (int j = 0; j < VI; ++j)
          if (e + j < p.n) stage[at + j] = p.input[e + j];
      }
    } else if constexpr (FAST) {
      load_items<T, VI>(p.input, e, x[k]);
    } else {
#pragma unroll
      for (int j = 0; j < VI; ++j) x[k][j] = e + j < p.n ? p.input[e + j] : T();
    }
    if constexpr (HAS_KEY) {
      if constexpr (FAST) {
        Key key[VI];
        load_items<Key, VI>(p.keys, e, key);
        Key prev = e == 0 ? key[0] : __ldg(p.keys + e - 1);
        heads[k] = e == 0;
#pragma unroll
        for (int j = 0; j < VI; ++j) {
          heads[k] |= (u32)(key[j] != prev) << j;
          prev = key[j];
        }
      } else {
#pragma unroll
        for (int j = 0; j < VI; ++j) {
          const u64 i = e + j;
          const bool head = i < p.n && (i == 0 || p.keys[i] != p.keys[i - 1]);
          heads[k] |= (u32)head << j;
        }
      }
    }
  }
  if constexpr (STAGE && FAST) copy_async_wait_all();  // each thread reads back only its own copies
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    O xk[VI];
    row_items<FAST>(p, e0, k, x, stage, xk);
    Acc a = make_acc(xk[0], heads[k] & 1);
#pragma unroll
    for (int j = 1; j < VI; ++j) a = merge(a, make_acc(xk[j], (heads[k] >> j) & 1));
    row_incl[k] = warp_inclusive_scan(a, merge);
    if (lane_id() == 31) totals[k * WARPS + w] = row_incl[k];
  }
  __syncthreads();
  u32 overflowed = 0;
  // Element 0 of the whole input starts the scan: its inclusive value is itself, never
  // `op(identity, x)` (a custom identity need only be neutral on what the op returns, e.g. 0 for
  // `fmaxf(fabsf(a), fabsf(b))`; the CPU backend and the reference start the same way).
  const bool starts_input = e0 == 0 && threadIdx.x == 0 && !p.has_carry;
  // Row k's outputs, from `piece` (what precedes this warp's piece of the row) and `lane_excl`
  // (what precedes this lane's items within it). Every lane of the warp calls it.
  auto emit_row = [&](int k, const Acc& piece, const Acc& lane_excl) {
    O xk[VI];
    row_items<FAST>(p, e0, k, x, stage, xk);
    const Acc pre = lane_id() == 0 ? piece : merge(piece, lane_excl);
    O run = pre.v;
    O out[VI];
#pragma unroll
    for (int j = 0; j < VI; ++j) {
      const O before = run;
      if ((HAS_KEY && ((heads[k] >> j) & 1)) || (k == 0 && j == 0 && starts_input)) {
        run = xk[j];
        out[j] = p.exclusive ? op_identity() : run;
      } else {
        run = op(run, xk[j]);
        out[j] = p.exclusive ? before : run;
        if constexpr (TALLY_SCAN == TALLY_SCAN_SUM && !OUT_FLOAT && sizeof(O) == 8) {
          if constexpr (OUT_SIGNED) overflowed |= (u32)((xk[j] >= 0) != (run >= before));
          else overflowed |= (u32)(run < before);
        }
      }
    }
    const u64 e = e0 + (u64)k * ROW + (u64)threadIdx.x * VI;
    if constexpr (FAST && WIDE_ROWS) {
      const u64 warp_start = e0 + (u64)k * ROW + (u64)w * 32 * VI;
      store_row_through_warp(p.output + warp_start, out, row_out + w * ROW_BUFFER);
    } else if constexpr (FAST) {
      store_items<VI>(p.output, e, out);
    } else {
#pragma unroll
      for (int j = 0; j < VI; ++j)
        if (e + j < p.n) p.output[e + j] = out[j];
    }
  };
  // A carry-in is tile 0's prefix: tile 0 publishes it merged with its aggregate, so the
  // look-back hands it on to every later tile.
  if constexpr (SPLIT_LOOKBACK) {
    const bool carried = tile == 0 && p.has_carry;
    const bool has_prefix = tile > 0 || carried;
    const Acc carry = make_acc(carry_of(p), 0);
    // The look-back in two halves (SPLIT_LOOKBACK). A row piece whose lanes all have a segment
    // head before them within the tile does not depend on the tile's prefix (merged in front,
    // it would not change a bit: `absorbs`), so warps 1.. write those rows while warp 0 looks
    // back, and the rest after it.
    Acc published = identity();
    if (w == 0) {
      const PieceScan<PIECES, Acc> pieces = piece_scan_begin<PIECES>(totals, identity(), merge);
      published = carried ? merge(carry, pieces.aggregate) : pieces.aggregate;
      lookback_begin(st, tile, published, p.deterministic);
      piece_scan_end(pieces, totals, false, identity(), merge);  // within the tile
    }
    __syncthreads();
    static_assert(VECS <= 64, "one bit a row");
    u64 pending = VECS == 64 ? ~0ull : (1ull << VECS) - 1;
    if (w != 0) {
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        const Acc lane_excl = warp_exclusive_from_inclusive(row_incl[k], identity());
        const Acc piece = totals[k * WARPS + w];
        const Acc within = lane_id() == 0 ? piece : merge(piece, lane_excl);
        if (!has_prefix || __all_sync(0xffffffffu, flag_of(within) != 0)) {
          emit_row(k, piece, lane_excl);
          pending &= ~(1ull << k);
        }
      }
    } else {
      const Acc prefix = lookback_end(st, tile, published, p.deterministic);
      if (lane_id() == 0) *tile_prefix = before_tile(tile, prefix, carry);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      if ((pending >> k) & 1) {
        const Acc lane_excl = warp_exclusive_from_inclusive(row_incl[k], identity());
        const Acc piece = totals[k * WARPS + w];
        emit_row(k, has_prefix ? merge(*tile_prefix, piece) : piece, lane_excl);
      }
    }
  } else {
    if (w == 0) {
      const PieceScan<PIECES, Acc> pieces = piece_scan_begin<PIECES>(totals, identity(), merge);
      const bool carried = tile == 0 && p.has_carry;
      const Acc carry = make_acc(carry_of(p), 0);
      const Acc agg = pieces.aggregate;
      const Acc prefix = lookback_prefix(st, tile, carried ? merge(carry, agg) : agg, p.deterministic);
      // Each row-and-warp piece's prefix, the tile's prefix first (a fixed association).
      piece_scan_end(pieces, totals, tile > 0 || carried, before_tile(tile, prefix, carry), merge);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      const Acc lane_excl = warp_exclusive_from_inclusive(row_incl[k], identity());
      emit_row(k, totals[k * WARPS + w], lane_excl);
    }
  }
  if (overflowed && p.check_overflow) atomicOr(p.overflow, 1u);
}

// Blocks per multiprocessor (the policy's: threads in flight to cover the loads' latency).
constexpr int MIN_BLOCKS = TALLY_MIN_BLOCKS;

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS) tally_scan(const ScanParams p) {
  __shared__ Acc totals[PIECES];
  __shared__ Acc tile_prefix;  // scans by key: what precedes the tile, from warp 0's look-back
  __shared__ u32 shared_tile;
  __shared__ __align__(16) T stage[STAGE ? TILE : 1];
  __shared__ uint4 row_out[WIDE_ROWS ? WARPS * ROW_BUFFER : 1];
  const u32 tile = lookback_next_tile(p.states, &shared_tile);
  const States st = lookback_states<ScanLookback>(p.states, p.tiles, p.groups, p.supers);
  lookback_clear_next<ScanLookback>(p.states_next, tile, p.tiles, p.groups, p.supers);
  const bool full = (u64)(tile + 1) * TILE <= p.n;
  const bool aligned = (((u64)p.input | (u64)p.output | (u64)p.keys) & 15) == 0;
  if (full && aligned) scan_tile<true>(p, tile, st, totals, &tile_prefix, stage, row_out);
  else scan_tile<false>(p, tile, st, totals, &tile_prefix, stage, row_out);
}
