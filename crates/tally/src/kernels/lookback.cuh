// Single-pass tile prefixes (decoupled look-back, Merrill & Garland): the device-wide level of
// every primitive whose tiles need what all tiles before them combine to: the scans (a running
// value), and select, partition, unique, run-length encoding and reduce-by-key (output positions,
// a running count of what was kept). A tile publishes its aggregate as soon as it has one and
// finds its prefix from its predecessors' published states, so the input is read once.
//
// A primitive describes what tiles combine with a traits type `L`:
//   typedef ... Acc;                                what is combined (a value, a count, a pair)
//   static Acc identity();
//   static Acc merge(const Acc& a, const Acc& b);   a before b; associative
//   typedef ... Word;                               a slot: u64 or Word128 (block.cuh), an Acc
//   static Word pack(const Acc& a, u32 status);       and its status (LOOKBACK_AGG or
//   static u32 status_of(const Word& w);              LOOKBACK_INCL; 0 while the slot is empty)
//   static Acc unpack(const Word& w);                 stored and loaded whole, so no fence
//                                                     orders a value and its status
//   static bool absorbs(const Acc& a);              merge(x, a) == a for every x: a range that
//                                                   no predecessor changes (a scan by key's
//                                                   range with a segment head); false if none
//   static constexpr int WINDOWS;                   warp-widths of predecessors a lane of the
//                                                   fast and ordered look-backs reads per round
// An Acc of up to 8 bytes with room for the status takes a 64-bit slot; a pair (a count and a
// value, a value and a segment flag) a 128-bit one. Either way a lane reads a slot in one access
// and the 32 lanes of a warp read 32 consecutive slots, coalesced.
//
// The tile states (zeroed before the launch) hold a 256-byte header whose first word numbers
// tiles in the order blocks start, so a tile only ever waits for tiles that are already running
// (kernels numbered by block index, TALLY_TILES_BY_BLOCK, leave it unused). Its next words are
// a primitive's to keep there, zeroed with the states: bytes 4 to 8 a flag (a checked scan's
// overflow, `scan::lookback::FLAG_OFFSET` in Rust), bytes 8 to 24 two result words (a checked
// reduce-by-key's run count and overflow, `RESULT_OFFSET`);
// then one slot array per level: tiles, groups of 32 tiles, super-groups of 32 groups. The host
// computes the same sizes (`scan::lookback` in Rust). A plan launched once takes them from the
// stream's workspace and zeroes them with a memset; a plan launched again keeps two sets of its
// own, and each launch zeroes the set the next one uses (`lookback_clear_next`), so that a call
// is one launch, not a memset and a launch.
//
// Three look-backs:
//   ordered (deterministic, where the policy sets TALLY_LOOKBACK_ORDERED: plain float sums and
//     custom scans): the fast one's rounds of reads, but each tile's prefix is the left fold of
//     its predecessors' aggregates from the nearest inclusive prefix, so every inclusive prefix
//     is the left fold of all aggregates before it: the same bits whatever the timing
//     (`lookback_ordered`).
//   fixed (deterministic elsewhere: scans by key, reduce-by-key): the last tile of a group
//     publishes the group's total (its 32 aggregates by a fixed tree), the last tile of a
//     super-group the running total up to its end. A tile's prefix is (super-group prefix .
//     groups before it in its super-group) . tiles before it in its group, each by a fixed tree:
//     the same bits on every run, whatever the timing. Waits are short: only super-group totals form a chain, one link per 1024 tiles.
//     Where what a level gives absorbs everything before it (`absorbs`), the levels above are
//     not read: merging them in would not change a bit.
//   fast: the classic look-back; each tile publishes its inclusive prefix after its aggregate,
//     and a tile combines predecessors a warp-width at a time until it meets an inclusive
//     prefix. Where it stops depends on timing: for integer sums and counts, and for min/max
//     (of floats too), that changes nothing. A tile whose aggregate absorbs its predecessors
//     publishes it as its inclusive prefix at once, so that its successors stop there without
//     waiting for its look-back.
#pragma once
#include "common.cuh"
#include "warp.cuh"
#include "block.cuh"

// ---- running operations on values: the scans and reduce-by-key ----------------------------------
// Minimum and maximum: NaN propagates; of equal values the earlier is kept (so the bits never
// depend on the order). The identity is the far end of the type.
template <typename O>
struct RunningMin {
  static TALLY_DEVICE O apply(O a, O b) { return (b < a || b != b) ? b : a; }
  static TALLY_DEVICE O identity() { return highest_of<O>(); }
};
template <typename O>
struct RunningMax {
  static TALLY_DEVICE O apply(O a, O b) { return (b > a || b != b) ? b : a; }
  static TALLY_DEVICE O identity() { return lowest_of<O>(); }
};
// The sum: floats add, integers wrap (two's complement; overflow is checked separately).
template <typename O>
TALLY_DEVICE O wrapping_add(O a, O b) {
  if constexpr ((O)0.5 != (O)0) return a + b;
  else return (O)((u64)a + (u64)b);
}

// ---- the look-back ------------------------------------------------------------------------------
constexpr u32 LOOKBACK_AGG = 1;  // also "ready" in the fixed look-back's group arrays
constexpr u32 LOOKBACK_INCL = 2;

// One array of `count` slots.
template <class L>
struct LookbackSlots {
  typename L::Word* word;
};

template <class L>
TALLY_DEVICE u64 lookback_region_bytes(u32 count) {
  return (sizeof(typename L::Word) * (u64)count + 255) & ~255ull;
}

template <class L>
TALLY_DEVICE LookbackSlots<L> lookback_slots_at(unsigned char* base) {
  return LookbackSlots<L>{reinterpret_cast<typename L::Word*>(base)};
}

// The three levels of slots after the states' header.
template <class L>
struct LookbackStates {
  LookbackSlots<L> level[3];
};

template <class L>
TALLY_DEVICE LookbackStates<L> lookback_states(unsigned char* states, u32 tiles, u32 groups, u32 supers) {
  LookbackStates<L> s;
  unsigned char* base = states + 256;
  s.level[0] = lookback_slots_at<L>(base);
  base += lookback_region_bytes<L>(tiles);
  s.level[1] = lookback_slots_at<L>(base);
  base += lookback_region_bytes<L>(groups);
  s.level[2] = lookback_slots_at<L>(base);
  return s;
}

// This block's tile: the next number from the header's counter (read by thread 0, shared
// through `slot`; every thread calls it). Where the policy sets TALLY_TILES_BY_BLOCK (the
// widening scans: `scan::policy::tiles_by_block`) it is the block's index, as in CUB, which saves
// the atomic's round trip before the loads and relies on blocks starting in index order.
#ifndef TALLY_TILES_BY_BLOCK
#define TALLY_TILES_BY_BLOCK 0
#endif
TALLY_DEVICE u32 lookback_next_tile(unsigned char* states, u32* slot) {
#if TALLY_TILES_BY_BLOCK
  return blockIdx.x;
#else
  if (threadIdx.x == 0) *slot = atomicAdd(reinterpret_cast<u32*>(states), 1u);
  __syncthreads();
  return *slot;
#endif
}

// Zeroes, in `next` (the other set of a plan that keeps two; null for none), the header's first
// 24 bytes (the tile counter, and the flag and result words a primitive may keep there) and the
// slots of this tile's number at each level, so that the plan's next launch finds
// them zeroed. Every tile number of the launch is taken once and each level has no more
// slots than tiles, so the launch clears all that a launch reads (not the regions' padding). Thread 0 of each block; nothing in
// this launch reads `next`.
template <class L>
TALLY_DEVICE void lookback_clear_next(unsigned char* next, u32 tile, u32 tiles, u32 groups, u32 supers) {
  if (next == nullptr || threadIdx.x != 0) return;
  const LookbackStates<L> s = lookback_states<L>(next, tiles, groups, supers);
  const typename L::Word zero{};
  if (tile == 0) {
    u64* header = reinterpret_cast<u64*>(next);
    header[0] = 0ull;
    header[1] = 0ull;
    header[2] = 0ull;
  }
  s.level[0].word[tile] = zero;
  if (tile < groups) s.level[1].word[tile] = zero;
  if (tile < supers) s.level[2].word[tile] = zero;
}

template <class L>
TALLY_DEVICE void lookback_publish(const LookbackSlots<L>& s, u32 i, const typename L::Acc& a, u32 status) {
  store_relaxed(s.word + i, L::pack(a, status));
}

// Slot i's status, and its value where it has one (0: not yet; one read, no waiting).
template <class L>
TALLY_DEVICE u32 lookback_try(const LookbackSlots<L>& s, u32 i, typename L::Acc& a) {
  const typename L::Word w = load_relaxed(s.word + i);
  const u32 status = L::status_of(w);
  if (status) a = L::unpack(w);
  return status;
}

// A waiting lane polls this many rounds before it sleeps between them, for this long
// (overridable for experiments with -D through TALLY_NVRTC_OPTIONS; docs/PERF.md v27 found no
// setting faster).
#ifndef TALLY_LOOKBACK_SLEEP_AFTER
#define TALLY_LOOKBACK_SLEEP_AFTER 4
#endif
#ifndef TALLY_LOOKBACK_SLEEP_NS
#define TALLY_LOOKBACK_SLEEP_NS 32
#endif

// Up to N slots a lane needs (`want` bit j: slot idx[j] of slots[j]), read until each has a
// status. The reads of one round are independent, so a lane waits about one memory round
// trip for all of them, not one per slot.
template <class L, int N>
TALLY_DEVICE void lookback_wait_all(const LookbackSlots<L>* slots, const u32* idx, u32 want,
                                    typename L::Acc* value, u32* status) {
  for (int spins = 0; want; ++spins) {
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if ((want >> j) & 1) {
        status[j] = lookback_try(slots[j], idx[j], value[j]);
        if (status[j]) want &= ~(1u << j);
      }
    }
    if (want && spins > TALLY_LOOKBACK_SLEEP_AFTER) __nanosleep(TALLY_LOOKBACK_SLEEP_NS);
  }
}

// Slot i's status and value, once it has one (spins until then).
template <class L>
TALLY_DEVICE u32 lookback_wait(const LookbackSlots<L>& s, u32 i, typename L::Acc& a) {
  u32 status;
  lookback_wait_all<L, 1>(&s, &i, 1, &a, &status);
  return status;
}

// The fixed look-back (warp 0; every lane returns the prefix). The tile's aggregate must
// already be published (`lookback_publish(st.level[0], tile, agg, LOOKBACK_AGG)`). The levels
// are read one after the other: reading them in the same rounds measured slower (docs/PERF.md,
// v11), the polls of the upper levels contending with their publishers.
template <class L>
TALLY_DEVICE typename L::Acc lookback_fixed(const LookbackStates<L>& st, u32 tile, const typename L::Acc& agg) {
  typedef typename L::Acc Acc;
  auto merge = [](const Acc& a, const Acc& b) { return L::merge(a, b); };
  const u32 lane = lane_id();
  const u32 g = tile >> 5, r = tile & 31, k = g >> 5, q = g & 31;
  Acc v = L::identity();
  if (lane < r) lookback_wait(st.level[0], (g << 5) + lane, v);
  else if (lane == r) v = agg;
  Acc sc = warp_inclusive_scan(v, merge);
  const Acc within_group = warp_shfl_idx(sc, r == 0 ? 0 : (int)r - 1);
  const Acc group_total = warp_shfl_idx(sc, 31);
  if (r == 31 && lane == 0) lookback_publish(st.level[1], g, group_total, LOOKBACK_AGG);
  // The last tile of a super-group publishes its running total, so it reads on; any other tile
  // whose group predecessors absorb what came before has its prefix (the same bits as below).
  const bool publishes_super = r == 31 && q == 31;
  const bool group_decides = r > 0 && L::absorbs(within_group);
  if (group_decides && !publishes_super) return within_group;
  v = L::identity();
  if (lane < q) lookback_wait(st.level[1], (k << 5) + lane, v);
  else if (lane == q) v = group_total;
  sc = warp_inclusive_scan(v, merge);
  const Acc within_super = warp_shfl_idx(sc, q == 0 ? 0 : (int)q - 1);
  const Acc super_total = warp_shfl_idx(sc, 31);
  // Where this super-group's part absorbs what came before, so does its total (it covers that
  // part): the publisher's running total is then its own total, and no tile reads level 2.
  const bool super_decides = group_decides || (q > 0 && L::absorbs(within_super));
  Acc before = L::identity();
  if (k > 0 && !super_decides) {
    if (lane == 0) lookback_wait(st.level[2], k - 1, before);
    before = warp_shfl_idx(before, 0);
  }
  if (publishes_super && lane == 0) lookback_publish(st.level[2], k, L::merge(before, super_total), LOOKBACK_AGG);
  Acc prefix = before;
  if (q > 0) prefix = L::merge(prefix, within_super);
  if (r > 0) prefix = L::merge(prefix, within_group);
  return prefix;
}

// Predecessors a lane of the fast (and ordered) look-back reads per round: `L::WINDOWS`
// warp-widths at once (the default of the traits: LOOKBACK_WINDOWS). Each window holds an Acc
// and its slot's address in registers through the kernel's largest live range, so a kernel
// short of registers may take fewer (the scans by key: `scan::policy::lookback_windows`).
constexpr int LOOKBACK_WINDOWS = 4;

// One round of the fast and ordered look-backs: the 32 * WINDOWS tiles before `end`, window j
// holding tiles end - 32 * (WINDOWS - j) + lane (window WINDOWS - 1 the nearest), each lane's
// value and status once every one has a status. Tiles before the first read as the identity,
// inclusive.
template <class L>
TALLY_DEVICE void lookback_read_round(const LookbackSlots<L>& tiles, long long end, typename L::Acc* value,
                                      u32* status) {
  constexpr int W = L::WINDOWS;
  const int lane = (int)lane_id();
  LookbackSlots<L> slots[W];
  u32 idx[W], want = 0;
#pragma unroll
  for (int j = 0; j < W; ++j) {
    const long long i = end - 32ll * (W - j) + lane;
    slots[j] = tiles;
    idx[j] = (u32)(i < 0 ? 0 : i);
    value[j] = L::identity();
    status[j] = LOOKBACK_INCL;
    want |= (u32)(i >= 0) << j;
  }
  lookback_wait_all<L, W>(slots, idx, want, value, status);
}

// The fast look-back (warp 0 of a tile after the first; every lane returns the prefix). The
// tile's aggregate must already be published; this publishes its inclusive prefix, unless the
// aggregate absorbs its predecessors (then `lookback_begin` published it as such). Each round
// reads the 32 * WINDOWS nearest tiles not yet combined, and stops at the nearest inclusive
// prefix.
template <class L>
TALLY_DEVICE typename L::Acc lookback_fast(const LookbackSlots<L>& tiles, u32 tile, const typename L::Acc& agg) {
  typedef typename L::Acc Acc;
  auto merge = [](const Acc& a, const Acc& b) { return L::merge(a, b); };
  constexpr int W = L::WINDOWS;
  const int lane = (int)lane_id();
  Acc prefix = L::identity();
  for (long long end = (long long)tile;; end -= 32 * W) {
    u32 status[W];
    Acc value[W];
    lookback_read_round<L>(tiles, end, value, status);
    bool found = false;
#pragma unroll
    for (int j = W - 1; j >= 0; --j) {
      if (!found) {
        const u32 incl = __ballot_sync(0xffffffffu, status[j] == LOOKBACK_INCL);
        const int nearest = incl ? 31 - __clz(incl) : -1;
        Acc v = lane < nearest ? L::identity() : value[j];
        prefix = L::merge(warp_reduce_ordered(v, merge), prefix);
        found = nearest >= 0;
      }
    }
    if (found) break;
  }
  if (lane == 0 && !L::absorbs(agg)) lookback_publish(tiles, tile, L::merge(prefix, agg), LOOKBACK_INCL);
  return prefix;
}

// The ordered look-back (deterministic; warp 0 of a tile after the first; every lane returns
// the prefix). Like the fast one it reads the 32 * WINDOWS nearest predecessors a round, further
// back each round, until it meets an inclusive prefix, but it then merges from there one tile at
// a time, left to right, where the fast one merges each window by a tree as it goes. By
// induction every tile's inclusive prefix is the left fold of all tile aggregates,
// ((a_0 . a_1) . a_2) . ... . a_t, whichever predecessor it stopped at: the same bits on every
// run, whatever the timing, in the fast look-back's rounds of reads where the fixed one takes up
// to three a tile. The fold starts at the inclusive prefix, so the aggregates read in the rounds
// before it are kept, each lane its own, in shared memory: the rounds of up to
// TALLY_LOOKBACK_ORDERED_HISTORY tiles (at least one round). Past that (a tile more than that
// many tiles ahead of every inclusive prefix) it starts again from its nearest predecessors,
// which publish theirs in time. Re-reading the nearest round instead
// of going further back measured 3.5x slower for reduce-by-key (one window a round): each
// inclusive prefix then waits for one at most 32 tiles before it, a chain of round trips. With
// the history reduce-by-key was still 2.7x slower than in the fixed look-back (its kernel
// carries the 8 KiB history whatever it runs: fewer warps active, 19.8 against 23.6 in ncu,
// and its integer sums, never deterministic, 1.26 against 1.12 ms; not profiled further), so
// only the plain scans' policy sets TALLY_LOOKBACK_ORDERED (docs/PERF.md, v38); where it is 0
// the deterministic mode is the fixed look-back and this code is not compiled in (`#if` below).
#ifndef TALLY_LOOKBACK_ORDERED
#define TALLY_LOOKBACK_ORDERED 0
#endif
// Tiles whose aggregates the ordered look-back keeps (a define so that tests can make it small
// and exercise the restart).
#ifndef TALLY_LOOKBACK_ORDERED_HISTORY
#define TALLY_LOOKBACK_ORDERED_HISTORY 512
#endif
constexpr int LOOKBACK_ORDERED_HISTORY = TALLY_LOOKBACK_ORDERED_HISTORY;
template <class L>
TALLY_DEVICE typename L::Acc lookback_ordered(const LookbackSlots<L>& tiles, u32 tile, const typename L::Acc& agg) {
  typedef typename L::Acc Acc;
  auto merge = [](const Acc& a, const Acc& b) { return L::merge(a, b); };
  constexpr int W = L::WINDOWS;
  constexpr int ROUNDS = LOOKBACK_ORDERED_HISTORY / (32 * W) > 1 ? LOOKBACK_ORDERED_HISTORY / (32 * W) : 1;
  // history[round][window][lane]: raw storage, as an Acc may not be default-constructible in
  // shared memory. Warp 0 alone uses it, and a lane reads back only what it wrote.
  __shared__ __align__(16) unsigned char history_bytes[ROUNDS * W * 32 * sizeof(Acc)];
  Acc* history = reinterpret_cast<Acc*>(history_bytes);
  const int lane = (int)lane_id();
  int round = 0;
  for (long long end = (long long)tile;; end -= 32 * W, ++round) {
    if (round == ROUNDS) {  // the history is full: start again from the nearest tiles
      round = 0;
      end = (long long)tile;
      __nanosleep(TALLY_LOOKBACK_SLEEP_NS);
    }
    u32 status[W];
    Acc value[W];
    lookback_read_round<L>(tiles, end, value, status);
    int from_window = -1, from_lane = 0;
#pragma unroll
    for (int j = W - 1; j >= 0; --j) {
      const u32 incl = __ballot_sync(0xffffffffu, status[j] == LOOKBACK_INCL);
      if (from_window < 0 && incl) {
        from_window = j;
        from_lane = 31 - __clz(incl);
      }
    }
    if (from_window < 0) {
#pragma unroll
      for (int j = 0; j < W; ++j) history[(round * W + j) * 32 + lane] = value[j];
      continue;
    }
    // The fold: from the inclusive prefix through this round's later windows, then the kept
    // rounds, nearest last.
    Acc prefix = L::identity();
#pragma unroll
    for (int j = 0; j < W; ++j) {
      if (j == from_window) prefix = warp_fold_left(warp_shfl_idx(value[j], from_lane), value[j], from_lane + 1, merge);
      else if (j > from_window) prefix = warp_fold_left(prefix, value[j], 0, merge);
    }
    for (int r = round - 1; r >= 0; --r) {
#pragma unroll
      for (int j = 0; j < W; ++j) prefix = warp_fold_left(prefix, history[(r * W + j) * 32 + lane], 0, merge);
    }
    if (lane == 0 && !L::absorbs(agg)) lookback_publish(tiles, tile, L::merge(prefix, agg), LOOKBACK_INCL);
    return prefix;
  }
}

// The two halves of `lookback_prefix`, for a tile with work to do between them (select and the
// runs stage their tile-local output while predecessors finish). Warp 0: `lookback_begin` publishes the
// tile's aggregate; `lookback_end` returns the exclusive prefix of the tile (the identity for
// tile 0), by the ordered, the fixed or the fast look-back, with the same `agg`.
template <class L>
TALLY_DEVICE void lookback_begin(const LookbackStates<L>& st, u32 tile, const typename L::Acc& agg,
                                 bool deterministic) {
  // Tile 0's aggregate is its inclusive prefix, and so is one that absorbs what came before
  // (in the ordered look-back too: its fold would give the same bits).
  const bool fixed = deterministic && !TALLY_LOOKBACK_ORDERED;
  const u32 status = !fixed && (tile == 0 || L::absorbs(agg)) ? LOOKBACK_INCL : LOOKBACK_AGG;
  if (lane_id() == 0) lookback_publish(st.level[0], tile, agg, status);
}

template <class L>
TALLY_DEVICE typename L::Acc lookback_end(const LookbackStates<L>& st, u32 tile, const typename L::Acc& agg,
                                          bool deterministic) {
  if (deterministic && !TALLY_LOOKBACK_ORDERED) return lookback_fixed(st, tile, agg);
  if (tile == 0) return L::identity();
#if TALLY_LOOKBACK_ORDERED
  if (deterministic) return lookback_ordered(st.level[0], tile, agg);
#endif
  return lookback_fast(st.level[0], tile, agg);
}

// Warp 0 of every tile: publishes the tile's aggregate and returns the exclusive prefix of the
// tile (the identity for tile 0), by the ordered, the fixed or the fast look-back.
template <class L>
TALLY_DEVICE typename L::Acc lookback_prefix(const LookbackStates<L>& st, u32 tile, const typename L::Acc& agg,
                                             bool deterministic) {
  lookback_begin(st, tile, agg, deterministic);
  return lookback_end(st, tile, agg, deterministic);
}
