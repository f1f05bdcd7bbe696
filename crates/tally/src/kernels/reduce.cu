// Device-wide reductions. One compilation = one specialisation, chosen by defines:
//   TALLY_ELEM          element type (C++ spelling); TALLY_ELEM_FLOAT, TALLY_ELEM_SIGNED: 0 or 1
//   TALLY_REDUCE        SUM, EXTREMA, COUNT, EXACT, CUSTOM (codes.cuh)
//   TALLY_SIDES         extrema: 1 min, 2 max, 3 both
//   TALLY_WANT_INDEX    extrema: track the first index of the extreme
//   TALLY_SKIP_NAN      NaNs are counted and left out
//   TALLY_BLOCK_THREADS, TALLY_VECS (16-byte loads in flight per thread), TALLY_PARTIAL_BYTES
//   TALLY_CUSTOM_EXPR, TALLY_CUSTOM_IDENTITY  custom: `a OP b` as C++, and its identity
// One launch: each thread reduces its elements in registers (16-byte loads, several in flight),
// the block combines its threads (warp shuffles, then shared memory) and writes one partial;
// the last block to finish (a ticket counter) combines the partials in a fixed order and
// writes the result, then sets the counter back to zero for the next launch. The order of
// every combination depends on the launch shape alone, so float results repeat bit for bit.
#include "common.cuh"
#include "warp.cuh"
#include "block.cuh"
#include "codes.cuh"
#include "exact.cuh"

#ifndef TALLY_ELEM
#error "TALLY_ELEM must be defined"
#endif
#ifndef TALLY_SKIP_NAN
#define TALLY_SKIP_NAN 0
#endif
#ifndef TALLY_WANT_INDEX
#define TALLY_WANT_INDEX 0
#endif
#ifndef TALLY_SIDES
#define TALLY_SIDES 3
#endif

typedef TALLY_ELEM T;
constexpr int BLOCK_THREADS = TALLY_BLOCK_THREADS;
constexpr int WARPS = BLOCK_THREADS / 32;
constexpr int VECS = TALLY_VECS;
constexpr int VEC_ITEMS = VecItems<T>::value;
constexpr bool IS_FLOAT = TALLY_ELEM_FLOAT;
constexpr bool IS_SIGNED = TALLY_ELEM_SIGNED;
constexpr u64 NO_INDEX = ~0ull;

// The layout is checked against `ReduceParams` in src/reduce/cuda.rs.
struct ReduceParams {
  const T* input;
  u64 n;
  unsigned char* partials;  // gridDim.x partials of TALLY_PARTIAL_BYTES (workspace)
  u32* ticket;              // zero between launches
  u64* out;                 // the result words (see src/reduce/cuda.rs)
  double lo;                // count, floats: the interval [lo, hi], ends open or closed
  double hi;
  i64 lo_int;               // count, integers: the closed interval, as the element's bits
  i64 hi_int;
  u32 lo_open;
  u32 hi_open;
  u32 negate;               // count: the complement (x != value)
  u32 post_words;           // result words posted to the host (block.cuh's post_to_host)
  u64* post;                // mapped host words to post them to; null: none
  u64 sequence;             // the launch's number, posted last
};

TALLY_DEVICE bool is_nan(T x) {
  if constexpr (IS_FLOAT) return x != x;
  else return false;
}

TALLY_DEVICE T highest() { return highest_of<T>(); }
TALLY_DEVICE T lowest() { return lowest_of<T>(); }

// The raw bits of an element, zero-extended: how values are handed back to the host.
TALLY_DEVICE u64 raw_bits(T x) {
  union {
    T value;
    unsigned char byte[sizeof(T)];
  } u;
  u.value = x;
  u64 bits = 0;
#pragma unroll
  for (int k = 0; k < (int)sizeof(T); ++k) bits |= (u64)u.byte[k] << (8 * k);
  return bits;
}

// Calls visit(x, i) for every element this thread owns, in increasing index order: a scalar
// head up to the first 16-byte boundary (any alignment is allowed), the body in 16-byte loads
// (VECS in flight, grid-stride) handed to visit_vec(v, i) whole, then a scalar tail. (Issuing
// the body's last, partial round of loads together rather than one by one measured no
// different at 2^24 and 2^28 on an H200, v39.)
// `round_taken(buf, i0, stride)`: whether a whole round of VECS vectors (vector k's first
// element at index i0 + k * stride) is accounted for at once (then none of them is visited).
template <typename Visit, typename VisitVec, typename RoundTaken>
TALLY_DEVICE void for_each_element(const ReduceParams& p, Visit visit, VisitVec visit_vec, RoundTaken round_taken) {
  const T* __restrict__ in = p.input;
  const u64 n = p.n;
  const u64 gtid = (u64)blockIdx.x * BLOCK_THREADS + threadIdx.x;
  const u64 threads = (u64)gridDim.x * BLOCK_THREADS;
  u64 head = ((16 - ((u64)in & 15)) & 15) / sizeof(T);
  head = head < n ? head : n;
  if (gtid < head) visit(in[gtid], gtid);
  const T* body = in + head;
  const u64 nvec = (n - head) / VEC_ITEMS;
  u64 v = gtid;
  for (; v + (VECS - 1) * threads < nvec; v += VECS * threads) {
    Vec16<T> buf[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) buf[k] = load_vec16(body, v + k * threads);
    if (round_taken(buf, head + v * VEC_ITEMS, threads * VEC_ITEMS)) continue;
#pragma unroll
    for (int k = 0; k < VECS; ++k) visit_vec(buf[k], head + (v + k * threads) * VEC_ITEMS);
  }
  for (; v < nvec; v += threads) visit_vec(load_vec16(body, v), head + v * VEC_ITEMS);
  const u64 tail = head + nvec * VEC_ITEMS;
  if (gtid < n - tail) visit(in[tail + gtid], tail + gtid);
}
template <typename Visit, typename VisitVec>
TALLY_DEVICE void for_each_element(const ReduceParams& p, Visit visit, VisitVec visit_vec) {
  for_each_element(p, visit, visit_vec, [](const Vec16<T>(&)[VECS], u64, u64) { return false; });
}

#if TALLY_REDUCE != TALLY_REDUCE_EXACT
// ---- the accumulators: Local per thread, Acc to combine ---------------------------------------
// `write_out` puts an accumulator's result words, in the order the host reads them, at `out`.
template <typename... Words>
TALLY_DEVICE void write_words(u64* out, Words... words) {
  int k = 0;
  ((out[k++] = (u64)words), ...);
}

#if TALLY_REDUCE == TALLY_REDUCE_SUM && TALLY_ELEM_FLOAT
struct Acc {
  double sum;
  u64 nan;
};
TALLY_DEVICE Acc identity() { return Acc{0.0, 0}; }
TALLY_DEVICE void local_add(Acc& a, T x, u64, const ReduceParams&) {
#if TALLY_SKIP_NAN
  const bool nan = is_nan(x);
  a.nan += nan;
  a.sum += nan ? 0.0 : (double)x;
#else
  a.sum += (double)x;
#endif
}
TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) { return Acc{a.sum + b.sum, a.nan + b.nan}; }
TALLY_DEVICE void write_out(const Acc& a, u64* out) { write_words(out, __double_as_longlong(a.sum), a.nan); }

#elif TALLY_REDUCE == TALLY_REDUCE_SUM
// Integers: 64-bit per thread for elements of up to 32 bits (a thread's share cannot reach
// 2^63), 128-bit per thread for 64-bit elements; 128-bit from the warp on. Never wraps.
#define TALLY_REDUCE_LOCAL_APART 1
typedef Wide128 Acc;
constexpr bool WIDE_LOCAL = sizeof(T) == 8;
struct Local {
  Wide128 wide;
  i64 narrow;
};
TALLY_DEVICE Acc identity() { return Wide128{0, 0}; }
TALLY_DEVICE Local local_identity() { return Local{Wide128{0, 0}, 0}; }
TALLY_DEVICE void local_add(Local& a, T x, u64, const ReduceParams&) {
  if constexpr (WIDE_LOCAL) {
    a.wide = wide_add(a.wide, IS_SIGNED ? wide_from_i64((i64)x) : wide_from_u64((u64)x));
  } else {
    a.narrow += (i64)x;
  }
}
TALLY_DEVICE Acc local_finish(const Local& a) { return wide_add(a.wide, wide_from_i64(a.narrow)); }
TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) { return wide_add(a, b); }
TALLY_DEVICE void write_out(const Acc& a, u64* out) { write_words(out, a.lo, a.hi); }

#elif TALLY_REDUCE == TALLY_REDUCE_EXTREMA
// NaN propagates: it comes before every number as a min and as a max; ties go to the smaller
// index. The identity is the far end of the type with no index.
struct Acc {
  T min;
  T max;
  u64 imin;
  u64 imax;
  u64 nan;
};
TALLY_DEVICE bool before_min(T x, T m) {
  if constexpr (IS_FLOAT) return is_nan(x) ? !is_nan(m) : x < m;
  else return x < m;
}
TALLY_DEVICE bool before_max(T x, T m) {
  if constexpr (IS_FLOAT) return is_nan(x) ? !is_nan(m) : x > m;
  else return x > m;
}
TALLY_DEVICE bool same(T x, T m) { return x == m || (is_nan(x) && is_nan(m)); }
TALLY_DEVICE Acc identity() { return Acc{highest(), lowest(), NO_INDEX, NO_INDEX, 0}; }

// f32 min, max and minmax (no index) take the hardware's min and max: `min.NaN` (PTX, sm_80 on)
// gives NaN where either operand is NaN, NaN propagating as the rule above asks; the plain
// `fminf` leaves NaN out, as skip_nan asks, whose NaNs are counted aside. One instruction per
// element and side, and no branch on the data, where the element rule costs a compare and
// select per NaN test and side. Which of two NaNs, or of -0 and +0, comes out may differ from
// the rule's; the result's value does not (the host reads a NaN as NaN, and -0 == +0).
constexpr bool F32_NO_INDEX = IS_FLOAT && sizeof(T) == 4 && !TALLY_WANT_INDEX;
TALLY_DEVICE float min_nan(float a, float b) {
#if __CUDA_ARCH__ >= 800
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return a != a ? a : (b != b ? b : fminf(a, b));
#endif
}
TALLY_DEVICE float max_nan(float a, float b) {
#if __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return a != a ? a : (b != b ? b : fmaxf(a, b));
#endif
}
// The running extrema of f32 (F32_NO_INDEX) take `lo` and `hi`: NaN propagates, or is left out
// with skip_nan.
TALLY_DEVICE void f32_extrema_take(Acc& a, float lo, float hi) {
  if (TALLY_SIDES & 1) a.min = (T)(TALLY_SKIP_NAN ? fminf((float)a.min, lo) : min_nan((float)a.min, lo));
  if (TALLY_SIDES & 2) a.max = (T)(TALLY_SKIP_NAN ? fmaxf((float)a.max, hi) : max_nan((float)a.max, hi));
}

TALLY_DEVICE void local_add(Acc& a, T x, u64 i, const ReduceParams&) {
  if constexpr (F32_NO_INDEX) {
    a.nan += TALLY_SKIP_NAN && is_nan(x);
    return f32_extrema_take(a, (float)x, (float)x);
  }
#if TALLY_SKIP_NAN
  if (is_nan(x)) {
    a.nan += 1;
    return;
  }
#endif
#if TALLY_WANT_INDEX
  // A thread sees its indices in increasing order: only its first element can tie with the
  // identity and need the index.
  if ((TALLY_SIDES & 1) && (before_min(x, a.min) || (a.imin == NO_INDEX && same(x, a.min)))) {
    a.min = x;
    a.imin = i;
  }
  if ((TALLY_SIDES & 2) && (before_max(x, a.max) || (a.imax == NO_INDEX && same(x, a.max)))) {
    a.max = x;
    a.imax = i;
  }
#else
  if (TALLY_SIDES & 1) a.min = before_min(x, a.min) ? x : a.min;
  if (TALLY_SIDES & 2) a.max = before_max(x, a.max) ? x : a.max;
#endif
}
// A vector's elements taken in at once where that is cheaper than element by element; false
// where the vector still needs the element rule. f32 without an index: always, by trees of
// min/max (with skip_nan its NaNs counted by the element where its sum is NaN: rare, NaN or
// infinities of both signs). Other floats: where no NaN is among the elements (their sum is not
// NaN) and all lie strictly beyond the extrema (ties may need an index), so that they change
// nothing; most vectors do, and they pay a few instructions instead of the NaN rule per element.
TALLY_DEVICE bool vec_taken(Acc& a, const Vec16<T>& v) {
  if constexpr (F32_NO_INDEX) {
    float lo = (float)v.item[0], hi = lo, sum = lo;
#pragma unroll
    for (int j = 1; j < VEC_ITEMS; ++j) {
      const float x = (float)v.item[j];
      lo = TALLY_SKIP_NAN ? fminf(lo, x) : min_nan(lo, x);
      hi = TALLY_SKIP_NAN ? fmaxf(hi, x) : max_nan(hi, x);
      if (TALLY_SKIP_NAN) sum += x;
    }
    if (TALLY_SKIP_NAN && sum != sum) {
#pragma unroll
      for (int j = 0; j < VEC_ITEMS; ++j) a.nan += is_nan(v.item[j]);
    }
    f32_extrema_take(a, lo, hi);
    return true;
  } else if constexpr (!IS_FLOAT) {
    return false;
  } else {
    typedef typename Arith<T>::type X;
    X lo = arith(v.item[0]), hi = lo, sum = lo;
#pragma unroll
    for (int j = 1; j < VEC_ITEMS; ++j) {
      const X x = arith(v.item[j]);
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
      sum += x;
    }
    bool alone = sum == sum;
    if (TALLY_SIDES & 1) alone = alone && lo > a.min;
    if (TALLY_SIDES & 2) alone = alone && hi < a.max;
    return alone;
  }
}
#define TALLY_HAS_VEC_TAKEN 1

// The smaller and the larger of two values without NaN (one min/max instruction for floats).
template <typename X>
TALLY_DEVICE X plain_min(X a, X b) {
  if constexpr (IS_FLOAT && sizeof(X) == 4) return fminf(a, b);
  else if constexpr (IS_FLOAT) return fmin(a, b);
  else return b < a ? b : a;
}
template <typename X>
TALLY_DEVICE X plain_max(X a, X b) {
  if constexpr (IS_FLOAT && sizeof(X) == 4) return fmaxf(a, b);
  else if constexpr (IS_FLOAT) return fmax(a, b);
  else return b > a ? b : a;
}

// argmin and argmax: a whole round of VECS vectors (16 f32 at the default 4 loads, vector k's
// first at index i0 + k * stride) in one step where no NaN is among them (their sum is not NaN: a
// sum that overflows with both signs reads as NaN too): a min/max tree over the round; only
// where it lies strictly beyond the running extremum (or the thread has none yet) the round's
// first element of that value is found, by a scan without branches. The scan relies on the
// tree returning one of its inputs exactly (min/max do, without fast math or flushing to zero).
// A later tie keeps the earlier index; a NaN extremum keeps its index whatever follows. Rounds
// with a NaN go element by element.
// ncu (v39, an H200 at 2^24) found argmin issue-bound, a fifth of the branch unit's peak, at
// 0.89x CUB: a branch per vector, and at 2^24 a thread's new extremum in a third of its rounds.
// Elements of 1 and 2 bytes (8 to 16 a vector) keep the vector's filter: the scan's registers
// would cost occupancy (162 registers for u8).
TALLY_DEVICE bool round_taken_by_index(Acc& a, const Vec16<T> (&buf)[VECS], u64 i0, u64 stride) {
  if constexpr (!TALLY_WANT_INDEX || VEC_ITEMS > 4) {
    return false;
  } else {
    typedef typename Arith<T>::type X;
    // Each vector's extrema and sum, then a tree over the vectors: independent chains, not one
    // long one.
    X lo[VECS], hi[VECS], sum[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      lo[k] = hi[k] = sum[k] = arith(buf[k].item[0]);
#pragma unroll
      for (int j = 1; j < VEC_ITEMS; ++j) {
        const X x = arith(buf[k].item[j]);
        lo[k] = plain_min(lo[k], x);
        hi[k] = plain_max(hi[k], x);
        if (IS_FLOAT) sum[k] += x;
      }
    }
#pragma unroll
    for (int w = 1; w < VECS; w *= 2) {
#pragma unroll
      for (int k = 0; k + w < VECS; k += 2 * w) {
        lo[k] = plain_min(lo[k], lo[k + w]);
        hi[k] = plain_max(hi[k], hi[k + w]);
        if (IS_FLOAT) sum[k] += sum[k + w];
      }
    }
    if (IS_FLOAT && !(sum[0] == sum[0])) return false;
    // The round's first element equal to `target` (one exists): scanned from the last.
    const auto first_equal = [&](X target, T& value, u64& index) {
      int at = 0;
#pragma unroll
      for (int k = VECS - 1; k >= 0; --k) {
#pragma unroll
        for (int j = VEC_ITEMS - 1; j >= 0; --j) {
          const bool hit = arith(buf[k].item[j]) == target;
          value = hit ? buf[k].item[j] : value;
          at = hit ? k * VEC_ITEMS + j : at;
        }
      }
      index = i0 + (u64)(at / VEC_ITEMS) * stride + at % VEC_ITEMS;
    };
    if ((TALLY_SIDES & 1) && (lo[0] < arith(a.min) || a.imin == NO_INDEX)) first_equal(lo[0], a.min, a.imin);
    if ((TALLY_SIDES & 2) && (hi[0] > arith(a.max) || a.imax == NO_INDEX)) first_equal(hi[0], a.max, a.imax);
    return true;
  }
}

// Only the fields the op uses are merged: the others keep their identity in every thread, so
// the warp's shuffles and the last block's loads of them are dead code (a minimum alone moves
// one word a step instead of the whole accumulator's eight).
TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) {
  Acc r = a;
  const bool by_index = TALLY_WANT_INDEX;
  if ((TALLY_SIDES & 1) && (before_min(b.min, a.min) || (by_index && same(b.min, a.min) && b.imin < a.imin))) {
    r.min = b.min;
    if (by_index) r.imin = b.imin;
  }
  if ((TALLY_SIDES & 2) && (before_max(b.max, a.max) || (by_index && same(b.max, a.max) && b.imax < a.imax))) {
    r.max = b.max;
    if (by_index) r.imax = b.imax;
  }
  if (TALLY_SKIP_NAN) r.nan = a.nan + b.nan;
  return r;
}
TALLY_DEVICE void write_out(const Acc& a, u64* out) {
  out[0] = raw_bits(a.min);
  out[1] = raw_bits(a.max);
  out[2] = a.imin;
  out[3] = a.imax;
  out[4] = a.nan;
}

#elif TALLY_REDUCE == TALLY_REDUCE_COUNT
struct Acc {
  u64 count;
  u64 nan;
};
TALLY_DEVICE Acc identity() { return Acc{0, 0}; }
TALLY_DEVICE void local_add(Acc& a, T x, u64, const ReduceParams& p) {
  bool inside;
  if constexpr (IS_FLOAT) {
    const double v = (double)x;
    inside = (p.lo_open ? v > p.lo : v >= p.lo) && (p.hi_open ? v < p.hi : v <= p.hi);
  } else {
    inside = x >= (T)p.lo_int && x <= (T)p.hi_int;
  }
  bool pass = inside != (p.negate != 0);
#if TALLY_SKIP_NAN
  a.nan += is_nan(x);
  pass = pass && !is_nan(x);
#endif
  a.count += pass;
}
TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) { return Acc{a.count + b.count, a.nan + b.nan}; }
TALLY_DEVICE void write_out(const Acc& a, u64* out) { write_words(out, a.count, a.nan); }

#elif TALLY_REDUCE == TALLY_REDUCE_CUSTOM
// The caller's operation; it must be associative and commutative.
struct Acc {
  T value;
};
// 16-bit floats: `a` and `b` are their f32 values, the result rounded back to the type.
TALLY_DEVICE T custom_op(T a_elem, T b_elem) {
  const auto a = arith(a_elem);
  const auto b = arith(b_elem);
  return (T)(TALLY_CUSTOM_EXPR);
}
TALLY_DEVICE Acc identity() { return Acc{(T)(TALLY_CUSTOM_IDENTITY)}; }
TALLY_DEVICE void local_add(Acc& a, T x, u64, const ReduceParams&) { a.value = custom_op(a.value, x); }
TALLY_DEVICE Acc merge(const Acc& a, const Acc& b) { return Acc{custom_op(a.value, b.value)}; }
TALLY_DEVICE void write_out(const Acc& a, u64* out) { write_words(out, raw_bits(a.value)); }
#else
#error "unknown TALLY_REDUCE"
#endif

#ifndef TALLY_REDUCE_LOCAL_APART
// Every accumulator but the integer sum's is its own per-thread state.
typedef Acc Local;
TALLY_DEVICE Local local_identity() { return identity(); }
TALLY_DEVICE Acc local_finish(const Local& a) { return a; }
#endif

// A round of VECS vectors taken in at once, its vectors then not visited (argmin and argmax:
// `round_taken_by_index`).
TALLY_DEVICE bool round_taken(Local& a, const Vec16<T> (&buf)[VECS], u64 i0, u64 stride) {
#if TALLY_REDUCE == TALLY_REDUCE_EXTREMA
  return round_taken_by_index(a, buf, i0, stride);
#else
  return false;
#endif
}

// A 16-byte vector of elements from index i0 on, in order (an op may take it in at once).
TALLY_DEVICE void local_add_vec(Local& a, const Vec16<T>& v, u64 i0, const ReduceParams& p) {
#ifdef TALLY_HAS_VEC_TAKEN
  if (vec_taken(a, v)) return;
#endif
#pragma unroll
  for (int j = 0; j < VEC_ITEMS; ++j) local_add(a, v.item[j], i0 + j, p);
}

// Partials are read back word by word: keep them whole words, and within their slot.
union alignas(8) Partial {
  Acc acc;
  u32 word[(sizeof(Acc) + 3) / 4];
};
static_assert(sizeof(Partial) <= TALLY_PARTIAL_BYTES, "partial slot too small");

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) tally_reduce(const ReduceParams p) {
  __shared__ Acc scratch[WARPS];
  __shared__ bool last;
  Local local = local_identity();
  for_each_element(
      p, [&](T x, u64 i) { local_add(local, x, i, p); },
      [&](const Vec16<T>& v, u64 i0) { local_add_vec(local, v, i0, p); },
      [&](const Vec16<T>(&buf)[VECS], u64 i0, u64 stride) { return round_taken(local, buf, i0, stride); });
  const auto combine = [](const Acc& a, const Acc& b) { return merge(a, b); };
  Acc acc = block_reduce<BLOCK_THREADS>(local_finish(local), scratch, combine);
  Partial* partials = reinterpret_cast<Partial*>(p.partials);
  if (threadIdx.x == 0) {
    partials[blockIdx.x].acc = acc;
    __threadfence();
    last = atomicAdd(p.ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  // The last block: partials in block order per thread, then the block's fixed tree. The loads
  // go out LAST_LOADS at a time before their merges (in the same order): one after the other,
  // each would wait its own trip to the L2, the finish's largest share while the rest of the
  // device idles (ncu, v39: the last multiprocessor busy 8,000 cycles past the others' average).
  // Three of the extrema's larger partials (one round for 768 blocks) keep the kernel at 4 blocks
  // a multiprocessor (45-58 registers; four: 55-64).
  constexpr int LAST_LOADS = sizeof(Partial) <= 16 ? 4 : 3;
  Acc total = identity();
  for (u32 b = threadIdx.x; b < gridDim.x; b += LAST_LOADS * BLOCK_THREADS) {
    Partial got[LAST_LOADS];
#pragma unroll
    for (int j = 0; j < LAST_LOADS; ++j) {
      if (b + j * BLOCK_THREADS < gridDim.x) got[j] = load_cg(partials + b + j * BLOCK_THREADS);
    }
#pragma unroll
    for (int j = 0; j < LAST_LOADS; ++j) {
      if (b + j * BLOCK_THREADS < gridDim.x) total = merge(total, got[j].acc);
    }
  }
  total = block_reduce<BLOCK_THREADS>(total, scratch, combine);
  constexpr u32 RESULT_WORDS = 5;  // the most words an op writes (extrema)
  __shared__ u64 result[RESULT_WORDS];
  if (threadIdx.x == 0) {
    write_out(total, p.out);
    // Zeroed first: an op may write fewer words than the host reads back (custom: one of two).
#pragma unroll
    for (u32 k = 0; k < RESULT_WORDS; ++k) result[k] = 0;
    write_out(total, result);
    *p.ticket = 0;
  }
  // Last: the host may go on once the post is seen (nothing is stored after it).
  if (warp_id() == 0) {
    __syncwarp();
    post_to_host_from_block(p.post, p.sequence, result, min(p.post_words, RESULT_WORDS));
  }
}

#else
// ---- the exact float sum ------------------------------------------------------------------------
// A float is m * 2^(q) with an integer m; the sum is an integer multiple of the smallest
// subnormal, kept as DIGITS digits of DIGIT_BITS bits each, in carry-save form (signed 64-bit
// per digit, far from wrapping). Each thread has private digit slots in shared memory
// ([digit][thread]: no bank conflicts), so there are no atomics and no contention (f64 sums a
// run of a thread's elements with the same digit in registers first: ExactRun):
//   f32 (and f16, bf16 as their f32): x = m * 2^(p - 149), m < 2^24, p = max(e, 1) - 1 <= 253.
//        Digit p >> 3 gets m << (p & 7) < 2^31 as a double: an integer-valued double, exact
//        while the thread's sum stays below 2^53 (the host keeps each thread below 2^21
//        elements).
//   f64: exact.cuh's digits: m << (p & 31) spans three 32-bit digits from p >> 5; each gets its
//        chunk (< 2^32) as a signed 64-bit add.
// Blocks sum their threads' digits in 128 bits; the last block sums the blocks' and writes
// them with the counts of NaN, +inf and -inf. The host carries and rounds once (exact.rs).
//
// The element split is written from the float's bits with few ALU-pipe instructions (v23): ncu
// found both kernels bound by the ALU pipe, where a warp's LOP3, SHF, ISETP or SEL takes two
// cycles (H100, 2^28: f32 269 -> 116 million warp instructions, 0.418 -> 0.380 ms; f64 510 ->
// 258 million, 1.11 -> 0.80 ms; the f64 split before it compiled its four-way kind to a jump
// table, docs/PERF.md v22). Normal floats take the hot path, a vector at a time; zeros,
// subnormals, NaN and the infinities each take a rare one.
#if TALLY_ELEM_FLOAT == 0
#error "the exact sum is for floats"
#endif
// f16 and bf16 take the f32 layout: each is exactly the f32 it converts to.
constexpr bool IS_F32 = sizeof(T) <= 4;
constexpr int DIGITS = IS_F32 ? 32 : 66;

struct ExactPartial {
  u64 lo[DIGITS];
  u64 hi[DIGITS];
  u64 special[4];  // NaN, +inf, -inf, unused
};
static_assert(sizeof(ExactPartial) <= TALLY_PARTIAL_BYTES, "partial slot too small");

struct Specials {
  u64 nan, pos_inf, neg_inf;
};

TALLY_DEVICE Specials add_specials(const Specials& a, const Specials& b) {
  return Specials{a.nan + b.nan, a.pos_inf + b.pos_inf, a.neg_inf + b.neg_inf};
}

// NaN and the infinities are counted aside (`bits` of the f32, or of the f64 as 64 bits).
template <typename Bits>
TALLY_DEVICE void count_special(Bits bits, Bits mantissa_mask, Specials& s) {
  if (bits & mantissa_mask) s.nan += 1;
  else if (bits >> (8 * sizeof(Bits) - 1)) s.neg_inf += 1;
  else s.pos_inf += 1;
}

// f64: a run of a thread's elements that share their lowest digit is summed in registers before
// it reaches the thread's slots. Most data keep to a few binades, and each f64 element adds to
// three slots, so most elements cost three register adds instead of three shared-memory reads,
// adds and writes (H100, 2^28 uniform [0, 1): 1.21 -> 1.10 ms). Exact: a run is part of the
// thread's sum, its chunks below 2^32 each, as the slots' i64s hold them. For f32, which adds
// to one slot, the same run (an i64 add, a digit compare and a branch per element) measured
// slower than the slot's add (0.416 -> 0.530 ms): f32 adds to its slot directly.
constexpr u32 NO_DIGIT = ~0u;
struct ExactRun {
  u32 digit;
  i64 c[3];
};

TALLY_DEVICE void exact_flush(i64* mine, const ExactRun& run) {
  if constexpr (!IS_F32) {
    if (run.digit == NO_DIGIT) return;
    i64* d = mine + run.digit * BLOCK_THREADS;
    d[0] += run.c[0];
    d[BLOCK_THREADS] += run.c[1];
    d[2 * BLOCK_THREADS] += run.c[2];
  }
}

// f32: (e - 1) << 24 plus the mantissa's bits below it, for the biased exponent e: below
// 254 << 24 exactly for a normal float (e in 1..254).
TALLY_DEVICE u32 f32_biased(T x) { return __float_as_uint((float)x) * 2u - (1u << 24); }
TALLY_DEVICE bool f32_is_normal(u32 biased) { return biased < (254u << 24); }

// A normal f32 adds v = ±m * 2^((e - 1) & 7), m = 1.mant times 2^23, to digit (e - 1) >> 3.
// v is written as a double from the float's bits directly: sign and mantissa move over
// (mantissa >> 3 to the high word, its last three bits to the top of the low word) and the
// exponent becomes 1046 + ((e - 1) & 7), that is e + 1045 - 8 * digit. No conversion, no
// select, and the integer work mostly in IMADs.
TALLY_DEVICE void exact_add_f32_normal(i64* mine, T x) {
  const u32 bits = __float_as_uint((float)x);
  const u32 digit = f32_biased(x) >> 27;
  const u32 hi = (u32)((int)bits >> 3) & 0x8fffffffu;  // sign at 31, e at 20..27, mantissa >> 3
  const u32 v_hi = hi + ((1045u - 8u * digit) << 20);
  const double v = __hiloint2double((int)v_hi, (int)(bits << 29));
  double* slot = reinterpret_cast<double*>(reinterpret_cast<char*>(mine) + digit * (BLOCK_THREADS * 8));
  *slot += v;
}

// f32 off the hot path: a zero or a subnormal (m * 2^-149: digit 0, no shift), NaN, an infinity.
TALLY_DEVICE void exact_add_f32_rare(i64* mine, T x, Specials& s) {
  const u32 bits = __float_as_uint((float)x);
  if (((bits >> 23) & 0xff) == 0xff) return count_special(bits, 0x7fffffu, s);
  const double v = (double)(bits & 0x7fffff);
  *reinterpret_cast<double*>(mine) += (bits >> 31) ? -v : v;
}

// f64: (e - 1) << 21 plus the mantissa's top bits, from the high word of the bits: below
// 2046 << 21 exactly for a normal double (e in 1..2046).
TALLY_DEVICE u32 f64_biased(T x) { return (u32)((u64)__double_as_longlong((double)x) >> 32) * 2u - (1u << 21); }
TALLY_DEVICE bool f64_is_normal(u32 biased) { return biased < (2046u << 21); }

// A normal f64: m << sh (m = 1.mant times 2^52, sh = (e - 1) & 31) as three 32-bit chunks from
// digit (e - 1) >> 5 on, each one funnel shift of the bits' words (which take the shift modulo
// 32), added to the thread's run with its sign: -c as 64 bits is {~0, ~c} + 1, so a chunk c
// adds {s, c ^ s} + (0 - s) for s = 0 or -1, the sign; no select, no branch. The same chunks as
// exact.cuh's `exact_magnitude`, so the same sums.
TALLY_DEVICE void exact_add_f64_normal(i64* mine, T x, ExactRun& run) {
  const u64 bits = (u64)__double_as_longlong((double)x);
  const u32 hi = (u32)(bits >> 32), lo = (u32)bits;
  const u32 biased = f64_biased(x);
  const u32 digit = biased >> 26;
  const u32 q = biased >> 21;  // e - 1
  const u32 m_hi = (hi & 0xfffffu) | 0x100000u;
  const u32 c[3] = {__funnelshift_l(0u, lo, q), __funnelshift_l(lo, m_hi, q), __funnelshift_l(m_hi, 0u, q)};
  const u32 s = (u32)((int)hi >> 31);
  if (digit == run.digit) {
#pragma unroll
    for (int k = 0; k < 3; ++k) run.c[k] = (i64)((u64)run.c[k] + ((((u64)s << 32) | (c[k] ^ s)) + (u64)(0u - s)));
  } else {
    exact_flush(mine, run);
    run.digit = digit;
#pragma unroll
    for (int k = 0; k < 3; ++k) run.c[k] = (i64)((((u64)s << 32) | (c[k] ^ s)) + (u64)(0u - s));
  }
}

// f64 off the hot path: a zero or a subnormal (digit 0, no shift; straight to the slots, the run
// keeps its digit), NaN, an infinity.
TALLY_DEVICE void exact_add_f64_rare(i64* mine, T x, Specials& s) {
  const u64 bits = (u64)__double_as_longlong((double)x);
  if (exact_special(bits)) return count_special(bits, 0xfffffffffffffull, s);
  const ExactMagnitude a = exact_magnitude(bits);
  const bool negative = bits >> 63;
#pragma unroll
  for (int k = 0; k < 3; ++k) mine[k * BLOCK_THREADS] += negative ? -(i64)a.c[k] : (i64)a.c[k];
}

TALLY_DEVICE void exact_add(i64* mine, T x, Specials& s, ExactRun& run) {
  if constexpr (IS_F32) {
    if (f32_is_normal(f32_biased(x))) exact_add_f32_normal(mine, x);
    else exact_add_f32_rare(mine, x, s);
  } else {
    if (f64_is_normal(f64_biased(x))) exact_add_f64_normal(mine, x, run);
    else exact_add_f64_rare(mine, x, s);
  }
}

// A vector of normal floats in one branch; any other vector element by element.
TALLY_DEVICE void exact_add_vec(i64* mine, const Vec16<T>& v, Specials& s, ExactRun& run) {
  bool normal = true;
#pragma unroll
  for (int j = 0; j < VEC_ITEMS; ++j) normal &= IS_F32 ? f32_is_normal(f32_biased(v.item[j])) : f64_is_normal(f64_biased(v.item[j]));
  if (normal) {
#pragma unroll
    for (int j = 0; j < VEC_ITEMS; ++j) {
      if constexpr (IS_F32) exact_add_f32_normal(mine, v.item[j]);
      else exact_add_f64_normal(mine, v.item[j], run);
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < VEC_ITEMS; ++j) exact_add(mine, v.item[j], s, run);
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS) tally_reduce_exact(const ReduceParams p) {
  extern __shared__ i64 slots[];  // [DIGITS][BLOCK_THREADS]
  __shared__ Specials scratch[WARPS];
  __shared__ bool last;
  for (int k = threadIdx.x; k < DIGITS * BLOCK_THREADS; k += BLOCK_THREADS) slots[k] = 0;  // 0.0 too
  __syncthreads();
  i64* mine = slots + threadIdx.x;
  Specials specials{0, 0, 0};
  ExactRun run{NO_DIGIT, {0, 0, 0}};
  for_each_element(
      p, [&](T x, u64) { exact_add(mine, x, specials, run); },
      [&](const Vec16<T>& v, u64) { exact_add_vec(mine, v, specials, run); });
  exact_flush(mine, run);
  if constexpr (IS_F32) {
    // The thread's integer-valued doubles to integers (exact: below 2^53).
#pragma unroll 4
    for (int d = 0; d < DIGITS; ++d) {
      const double v = __longlong_as_double(mine[d * BLOCK_THREADS]);
      mine[d * BLOCK_THREADS] = (i64)v;
    }
  }
  __syncthreads();
  const auto add = [](const Wide128& a, const Wide128& b) { return wide_add(a, b); };
  ExactPartial* partials = reinterpret_cast<ExactPartial*>(p.partials);
  ExactPartial* mine_out = partials + blockIdx.x;
  // One warp per digit: the lanes sum the threads' slots, the warp combines the lanes.
  for (int d = warp_id(); d < DIGITS; d += WARPS) {
    Wide128 s{0, 0};
    for (int t = lane_id(); t < BLOCK_THREADS; t += 32) s = wide_add(s, wide_from_i64(slots[d * BLOCK_THREADS + t]));
    s = warp_reduce(s, add);
    if (lane_id() == 0) {
      mine_out->lo[d] = s.lo;
      mine_out->hi[d] = s.hi;
    }
  }
  const auto add3 = [](const Specials& a, const Specials& b) { return add_specials(a, b); };
  specials = block_reduce<BLOCK_THREADS>(specials, scratch, add3);
  if (threadIdx.x == 0) {
    mine_out->special[0] = specials.nan;
    mine_out->special[1] = specials.pos_inf;
    mine_out->special[2] = specials.neg_inf;
    mine_out->special[3] = 0;
  }
  // Every warp's digit stores must be visible before the ticket is taken.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(p.ticket, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int d = warp_id(); d < DIGITS; d += WARPS) {
    Wide128 s{0, 0};
    for (u32 b = lane_id(); b < gridDim.x; b += 32) {
      s = wide_add(s, Wide128{__ldcg(&partials[b].lo[d]), __ldcg(&partials[b].hi[d])});
    }
    s = warp_reduce(s, add);
    if (lane_id() == 0) {
      p.out[4 + 2 * d] = s.lo;
      p.out[5 + 2 * d] = s.hi;
    }
  }
  Specials total{0, 0, 0};
  for (u32 b = threadIdx.x; b < gridDim.x; b += BLOCK_THREADS) {
    total = add_specials(total, Specials{__ldcg(&partials[b].special[0]), __ldcg(&partials[b].special[1]),
                                         __ldcg(&partials[b].special[2])});
  }
  total = block_reduce<BLOCK_THREADS>(total, scratch, add3);
  if (threadIdx.x == 0) {
    p.out[0] = total.nan;
    p.out[1] = total.pos_inf;
    p.out[2] = total.neg_inf;
    p.out[3] = 0;
    *p.ticket = 0;
  }
  // The digits' words came from lane 0 of every warp. Last: the host may go on once the post
  // is seen (nothing is stored after it).
  __syncthreads();
  if (warp_id() == 0) post_to_host(p.post, p.sequence, p.out, p.post_words);
}
#endif
