// Single-pass prefix scans (decoupled look-back, Merrill & Garland). One compilation = one
// specialisation, chosen by defines:
//   TALLY_ELEM         input type (C++ spelling)
//   TALLY_OUT          output and accumulator type; TALLY_OUT_FLOAT, TALLY_OUT_SIGNED: 0 or 1
//   TALLY_SCAN         SUM, MIN, MAX, CUSTOM (codes.cuh)
//   TALLY_KEY_BYTES    0: a plain scan; 4 or 8: scan by key (restart where the key changes)
//   TALLY_BLOCK_THREADS, TALLY_VECS (16-byte input loads per thread and tile)
//   TALLY_CUSTOM_EXPR, TALLY_CUSTOM_IDENTITY  custom: `a OP b` as C++ (associative), identity
// One block scans one tile of BLOCK_THREADS * VECS * 16 bytes of input; tiles are numbered in
// the order blocks start (an atomic counter), so a tile only ever waits for tiles that are
// already running. A tile is VECS rows; in each row, thread t holds the 16 bytes at t. Each
// thread combines its row pieces, warps scan them (fixed trees), warp 0 scans the row-and-warp
// totals, publishes the tile's aggregate, and finds the tile's prefix by looking back:
//   deterministic: fixed groups of 32 tiles and of 32 groups. The last tile of a group
//     publishes the group's total (its 32 aggregates by a fixed tree), the last tile of a
//     super-group the running total up to its end. A tile's prefix is
//     (super-group prefix . groups before it in its super-group) . tiles before it in its group,
//     each by a fixed tree: the same bits on every run, whatever the timing. Waits are short:
//     aggregates and group totals need no prefix; only super-group totals form a chain, one
//     link per 1024 tiles.
//   fast: the classic look-back; each tile publishes its inclusive prefix after its aggregate,
//     and a tile combines predecessors a warp-width at a time until it meets an inclusive
//     prefix. Where it stops depends on timing: for integers (and min/max) that changes nothing.
// The tile states live in the stream's workspace and are zeroed before every launch. A value of
// up to 4 bytes and its status share one 64-bit word (no fence); wider values are written first
// and their status word then with a release store (read with an acquire load).
#include "common.cuh"
#include "warp.cuh"
#include "block.cuh"
#include "codes.cuh"

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
constexpr bool PACKED = sizeof(O) <= 4;
static_assert(VECS * WARPS <= 32, "warp 0 scans the row-and-warp totals");
constexpr u32 STATUS_AGG = 1;   // also "ready" in the deterministic arrays
constexpr u32 STATUS_INCL = 2;

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
};

template <typename X>
TALLY_DEVICE X highest_of() {
  if constexpr (OUT_FLOAT && sizeof(X) == 4) return (X)__int_as_float(0x7f800000);
  else if constexpr (OUT_FLOAT) return (X)__longlong_as_double(0x7ff0000000000000ll);
  else if constexpr (OUT_SIGNED) return (X)((1ull << (8 * sizeof(X) - 1)) - 1);
  else return (X)~(X)0;
}
template <typename X>
TALLY_DEVICE X lowest_of() {
  if constexpr (OUT_FLOAT) return -highest_of<X>();
  else if constexpr (OUT_SIGNED) return (X)(-highest_of<X>() - 1);
  else return (X)0;
}

// ---- the operation ----------------------------------------------------------------------------
#if TALLY_SCAN == TALLY_SCAN_SUM
TALLY_DEVICE O op(O a, O b) {
  if constexpr (OUT_FLOAT) return a + b;
  else return (O)((u64)a + (u64)b);  // integers wrap (two's complement); checked separately
}
TALLY_DEVICE O op_identity() { return (O)0; }
#elif TALLY_SCAN == TALLY_SCAN_MIN
// NaN propagates; of equal values the earlier is kept (so the bits never depend on the order).
TALLY_DEVICE O op(O a, O b) { return (b < a || b != b) ? b : a; }
TALLY_DEVICE O op_identity() { return highest_of<O>(); }
#elif TALLY_SCAN == TALLY_SCAN_MAX
TALLY_DEVICE O op(O a, O b) { return (b > a || b != b) ? b : a; }
TALLY_DEVICE O op_identity() { return lowest_of<O>(); }
#elif TALLY_SCAN == TALLY_SCAN_CUSTOM
TALLY_DEVICE O op(O a, O b) { return (O)(TALLY_CUSTOM_EXPR); }
TALLY_DEVICE O op_identity() { return (O)(TALLY_CUSTOM_IDENTITY); }
#else
#error "unknown TALLY_SCAN"
#endif

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

// ---- tile states ------------------------------------------------------------------------------
// An array of `count` slots, each a status (0: not yet) with up to two values (the aggregate,
// and in the fast look-back the inclusive prefix).
struct Slots {
  u64* packed;  // PACKED: bits | (status | flag << 8) << 32
  O* value;     // otherwise: value[2i] aggregate, value[2i + 1] inclusive prefix
  u32* status;  // otherwise: status | flag << 8
};

TALLY_DEVICE u64 region_bytes(u32 count) {
  const u64 b = PACKED ? 8ull * count : 20ull * count;
  return (b + 255) & ~255ull;
}

TALLY_DEVICE Slots slots_at(unsigned char* base, u32 count) {
  Slots s;
  s.packed = reinterpret_cast<u64*>(base);
  s.value = reinterpret_cast<O*>(base);
  s.status = reinterpret_cast<u32*>(base + 16ull * count);
  return s;
}

TALLY_DEVICE u32 to_bits32(O v) {
  union {
    O value;
    u32 word;
  } u;
  u.word = 0;
  u.value = v;
  return u.word;
}
TALLY_DEVICE O from_bits32(u32 w) {
  union {
    O value;
    u32 word;
  } u;
  u.word = w;
  return u.value;
}

TALLY_DEVICE void publish(const Slots& s, u32 i, const Acc& a, u32 status) {
  const u32 tag = status | (flag_of(a) << 8);
  if constexpr (PACKED) {
    store_relaxed64(s.packed + i, (u64)to_bits32(a.v) | ((u64)tag << 32));
  } else {
    __stcg(s.value + 2ull * i + (status == STATUS_INCL), a.v);
    store_release(s.status + i, tag);
  }
}

// Slot i's status and value, once it has one (spins until then).
TALLY_DEVICE u32 wait_slot(const Slots& s, u32 i, Acc& a) {
  for (int spins = 0;; ++spins) {
    u32 tag;
    if constexpr (PACKED) {
      const u64 w = load_relaxed64(s.packed + i);
      tag = (u32)(w >> 32);
      if (tag & 0xff) a = make_acc(from_bits32((u32)w), (tag >> 8) & 1);
    } else {
      tag = load_acquire(s.status + i);
      if (tag & 0xff) a = make_acc(__ldcg(s.value + 2ull * i + ((tag & 0xff) == STATUS_INCL)), (tag >> 8) & 1);
    }
    if (tag & 0xff) return tag & 0xff;
    if (spins > 4) __nanosleep(32);
  }
}

// The deterministic look-back (warp 0; every lane returns the prefix). See the top of the file.
TALLY_DEVICE Acc lookback_fixed(const Slots* st, u32 tile, const Acc& agg) {
  const u32 lane = lane_id();
  const u32 g = tile >> 5, r = tile & 31, k = g >> 5, q = g & 31;
  Acc v = identity();
  if (lane < r) wait_slot(st[0], (g << 5) + lane, v);
  else if (lane == r) v = agg;
  Acc sc = warp_inclusive_scan(v, merge);
  const Acc within_group = warp_shfl_idx(sc, r == 0 ? 0 : (int)r - 1);
  const Acc group_total = warp_shfl_idx(sc, 31);
  if (r == 31 && lane == 0) publish(st[1], g, group_total, STATUS_AGG);
  v = identity();
  if (lane < q) wait_slot(st[1], (k << 5) + lane, v);
  else if (lane == q) v = group_total;
  sc = warp_inclusive_scan(v, merge);
  const Acc within_super = warp_shfl_idx(sc, q == 0 ? 0 : (int)q - 1);
  const Acc super_total = warp_shfl_idx(sc, 31);
  Acc before = identity();
  if (k > 0) {
    if (lane == 0) wait_slot(st[2], k - 1, before);
    before = warp_shfl_idx(before, 0);
  }
  if (r == 31 && q == 31 && lane == 0) publish(st[2], k, merge(before, super_total), STATUS_AGG);
  Acc prefix = before;
  if (q > 0) prefix = merge(prefix, within_super);
  if (r > 0) prefix = merge(prefix, within_group);
  return prefix;
}

// The classic look-back (warp 0; every lane returns the prefix); publishes the inclusive prefix.
TALLY_DEVICE Acc lookback_fast(const Slots& tiles, u32 tile, const Acc& agg) {
  const int lane = (int)lane_id();
  Acc prefix = identity();
  for (long long base = (long long)tile - 32;; base -= 32) {
    const long long i = base + lane;
    Acc v = identity();
    const u32 status = i < 0 ? STATUS_INCL : wait_slot(tiles, (u32)i, v);
    const u32 incl = __ballot_sync(0xffffffffu, status == STATUS_INCL);
    const int nearest = incl ? 31 - __clz(incl) : -1;
    if (lane < nearest) v = identity();
    prefix = merge(warp_reduce_ordered(v, merge), prefix);
    if (nearest >= 0) break;
  }
  if (lane == 0) publish(tiles, tile, merge(prefix, agg), STATUS_INCL);
  return prefix;
}

// ---- loads and stores of a thread's piece of a row ----------------------------------------------
// N items of X from element e on (e a multiple of N, the base 16-byte aligned), in the widest
// loads that divide them.
template <typename X, int N>
TALLY_DEVICE void load_items(const X* base, u64 e, X* out) {
  constexpr int BYTES = N * (int)sizeof(X);
  if constexpr (BYTES % 16 == 0) {
    union {
      uint4 raw[BYTES / 16];
      X item[N];
    } u;
#pragma unroll
    for (int w = 0; w < BYTES / 16; ++w) u.raw[w] = __ldg(reinterpret_cast<const uint4*>(base + e) + w);
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = u.item[j];
  } else if constexpr (BYTES % 8 == 0) {
    union {
      uint2 raw[BYTES / 8];
      X item[N];
    } u;
#pragma unroll
    for (int w = 0; w < BYTES / 8; ++w) u.raw[w] = __ldg(reinterpret_cast<const uint2*>(base + e) + w);
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = u.item[j];
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = base[e + j];
  }
}

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

// ---- one tile -------------------------------------------------------------------------------------
template <bool FAST>
TALLY_DEVICE void scan_tile(const ScanParams& p, u32 tile, const Slots* st, Acc* totals) {
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
    Acc prefix = identity();
    if (p.deterministic) {
      if (lane_id() == 0) publish(st[0], tile, agg, STATUS_AGG);
      prefix = lookback_fixed(st, tile, agg);
    } else if (tile == 0) {
      if (lane_id() == 0) publish(st[0], tile, agg, STATUS_INCL);
    } else {
      if (lane_id() == 0) publish(st[0], tile, agg, STATUS_AGG);
      prefix = lookback_fast(st[0], tile, agg);
    }
    // Each row-and-warp piece's prefix, the tile's prefix first (a fixed association).
    if ((int)lane_id() < PIECES) totals[lane_id()] = (tile > 0) ? merge(prefix, excl) : excl;
  }
  __syncthreads();
  u32 overflowed = 0;
  // Element 0 of the whole input starts the scan: its inclusive value is itself, never
  // `op(identity, x)` (a custom identity need only be neutral on what the op returns, e.g. 0 for
  // `fmaxf(fabsf(a), fabsf(b))`; the CPU backend and the reference start the same way).
  const bool starts_input = e0 == 0 && threadIdx.x == 0;
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

// Three blocks per multiprocessor where the items are few (at most 85 registers), else two.
constexpr int MIN_BLOCKS = (VI * sizeof(O) <= 16 && !HAS_KEY) ? 3 : 2;

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS) tally_scan(const ScanParams p) {
  __shared__ Acc totals[32];
  __shared__ u32 shared_tile;
  if (threadIdx.x == 0) shared_tile = atomicAdd(reinterpret_cast<u32*>(p.states), 1u);
  __syncthreads();
  const u32 tile = shared_tile;
  Slots st[3];
  unsigned char* base = p.states + 256;
  st[0] = slots_at(base, p.tiles);
  base += region_bytes(p.tiles);
  st[1] = slots_at(base, p.groups);
  base += region_bytes(p.groups);
  st[2] = slots_at(base, p.supers);
  const bool full = (u64)(tile + 1) * TILE <= p.n;
  const bool aligned = (((u64)p.input | (u64)p.output | (u64)p.keys) & 15) == 0;
  if (full && aligned) scan_tile<true>(p, tile, st, totals);
  else scan_tile<false>(p, tile, st, totals);
}
