// Binning: sample -> bin, or BELOW / ABOVE / NOT_A_NUMBER, for every kernel that bins samples.
// `BinnerT<S, MODE>` bins samples of type S by one mode:
//   TABLE8 = 256-entry table (8-bit samples), INTEGER = exact integer (64-bit), FLOAT = the f64
//   rule, EDGES = custom edges, INTEGER32 = exact integer with samples and bounds in 32 bits
//   (TALLY_BINNING_* in codes.cuh).
// A kernel with one binning defines `Sample` and TALLY_BINNING and uses `Binner`; one that bins
// two coordinates by different modes (the 2-D histogram) names `BinnerT` for each.
// For integer binning also TALLY_IDENTITY (range == bins: the bin is the offset) and
// TALLY_ALL_IN_RANGE (4 only: every value of the sample type is in range); both default to 0.
// The rule is the one stated in src/histogram/binning.rs; keep them in step.
#pragma once
#include "common.cuh"
#include "codes.cuh"

#ifndef TALLY_IDENTITY
#define TALLY_IDENTITY 0
#endif
#ifndef TALLY_ALL_IN_RANGE
#define TALLY_ALL_IN_RANGE 0
#endif
// Rarely taken paths are out of line so that unrolled hot loops stay small.
#ifndef TALLY_SLOW_PATH
#define TALLY_SLOW_PATH __noinline__
#endif

constexpr int BELOW = -1, ABOVE = -2, NOT_A_NUMBER = -3;

template <typename T> TALLY_DEVICE bool is_nan(T) { return false; }
template <> TALLY_DEVICE bool is_nan<float>(float x) { return x != x; }
template <> TALLY_DEVICE bool is_nan<double>(double x) { return x != x; }
template <int K> TALLY_DEVICE bool is_nan(Half16<K> x) { return (float)x != (float)x; }

template <typename S, int MODE> struct BinnerT;

template <typename S> struct BinnerT<S, TALLY_BINNING_TABLE8> {
  const int* table;  // shared memory
  TALLY_DEVICE int operator()(S x) const { return table[(u32)x & 255u]; }
};

// floor(d * bins / range) for d < range, exactly: a floating-point estimate corrected with exact
// integer products (d * bins < 2^63 by construction). Out of line: the hot loop stays small,
// and the common case (range == bins) never calls it.
__device__ TALLY_SLOW_PATH u32 integer_quotient(u64 d, u64 bins, u64 range, float scale_f, double scale_d) {
  const u64 target = d * bins;
  u64 q = range <= 0xffffffffull ? (u64)((float)(u32)d * scale_f) : (u64)((double)d * scale_d);
  if (q >= bins) q = bins - 1;
  while (q > 0 && q * range > target) --q;
  while ((q + 1) * range <= target) ++q;
  return (u32)q;
}

// Modes 1 and 4.
template <typename S, int MODE> struct BinnerT {
  static_assert(MODE == TALLY_BINNING_INTEGER || MODE == TALLY_BINNING_INTEGER32, "unknown binning mode");
  i64 lower, upper;
  u64 range, bins;
  float scale_f;
  double scale_d;
  TALLY_DEVICE int in_range(u64 d) const {
    // The host sets TALLY_IDENTITY exactly when range == bins.
#if TALLY_IDENTITY
    return (int)d;
#else
    return (int)integer_quotient(d, bins, range, scale_f, scale_d);
#endif
  }
  TALLY_DEVICE int operator()(S x) const {
    if constexpr (MODE == TALLY_BINNING_INTEGER32 && TALLY_ALL_IN_RANGE) {
      // Every value of the type is in range (u8 over [0, 256), say): no test at all.
      return in_range((u32)x - (u32)lower);
    } else if constexpr (MODE == TALLY_BINNING_INTEGER32) {
      // Samples and bounds share one 32-bit domain (signed for u8, u16, i32; unsigned for u32):
      // one subtraction and one unsigned compare decide "in range", wrap-around does the rest.
      const u32 d = (u32)x - (u32)lower;
      if (d < (u32)range) return in_range(d);
      const bool below = (sizeof(S) == 4 && S(-1) > S(0)) ? (u32)x < (u32)lower : (int)x < (int)lower;
      return below ? BELOW : ABOVE;
    } else {
      const i64 v = (i64)x;
      if (v < lower) return BELOW;
      if (v >= upper) return ABOVE;
      return in_range((u64)v - (u64)lower);
    }
  }
};

// TALLY_EXACT_QUOTIENT=0 (an NVRTC define, for the GPU A/B): every unsure float divides.
#ifndef TALLY_EXACT_QUOTIENT
#define TALLY_EXACT_QUOTIENT 1
#endif

// floor(t / range) by the rule's division, clamped to `last`. Where t / range is exactly
// q = t * (1 / range), which the FMA shows (q * range - t is exact in it, and no nonzero multiple
// of its operands' last bits rounds to zero while t >= 2^-960; t >= 0 here), the division would
// return q, so floor(q) is the bin without dividing: integer-valued samples on bins one wide,
// ranges of a power of two (v23: f16 at 4096 bins, all integers, 0.65 -> 0.55 ms on an H100).
// Out of line, with the shortcut inside, so that callers' hot loops keep their registers.
__device__ TALLY_SLOW_PATH int float_rule_bin(double t, double range, double inv_range, u32 last) {
  const double q = __dmul_rn(t, inv_range);
  const bool exact_q = TALLY_EXACT_QUOTIENT && (t == 0.0 || t >= 0x1p-960) && __fma_rn(q, range, -t) == 0.0;
  const u32 b = (u32)floor(exact_q ? q : __ddiv_rn(t, range));
  return (int)(b < last ? b : last);
}

// TALLY_HIST_ESTIMATE=0 (an NVRTC define, for the GPU A/B): histograms bin f32 samples by the
// rule alone, as before v23 (`estimate`, below).
#ifndef TALLY_HIST_ESTIMATE
#define TALLY_HIST_ESTIMATE 1
#endif

template <typename T> struct IsFloat32 { static constexpr bool value = false; };
template <> struct IsFloat32<float> { static constexpr bool value = true; };
// 16-bit floats are binned as the f32 they convert to exactly: the same rule, the same bins.
template <int K> struct IsFloat32<Half16<K>> { static constexpr bool value = true; };

template <typename S> struct BinnerT<S, TALLY_BINNING_FLOAT> {
  double lower, upper, range, bins_f, inv_range, slack_d;
  float lo32, hi32, lower_f, scale_f, slack_f, last_f;
  u32 last;
  // The rule itself: explicit roundings, no contraction into an FMA, so the CPU computes the
  // same bits. A double division is slow, so it only runs where an estimate cannot decide.
  TALLY_DEVICE int exact(double t) const { return float_rule_bin(t, range, inv_range, last); }
  // f32 samples (and 16-bit floats as their f32): whether the estimate alone decides x's bin,
  // and that bin (`operator()`'s bin whenever it says so). No branch, no conversion: the
  // in-range test is exact (f32 images of the bounds), and an in-range estimate at least
  // `slack_f` from an integer is within slack / 4 of the quotient, so its floor is the rule's
  // bin and lies in [0, bins) (slack_f is 2 where the bound is 1/4 or more: never sure; -1 where
  // the estimate is the rule's quotient itself, lower 0 and power-of-two bin widths, axis.rs's
  // `f32_estimate_is_exact`: always sure). The floor comes from one round-down add of
  // 1.5 * 2^23, whose last mantissa bits are then floor(q) (exact for |q| < 2^22; sure needs
  // fewer than 2^19 bins, or 2^22 with the exact estimate). An unsure or out-of-range x (NaN
  // included) takes `operator()`.
  TALLY_DEVICE bool estimate(float xf, int& bin) const {
    constexpr float MAGIC = 12582912.0f;  // 1.5 * 2^23
    const float q = __fmul_rn(__fsub_rn(xf, lower_f), scale_f);
    const float r = __fadd_rd(q, MAGIC);
    const float frac = __fsub_rn(q, __fsub_rn(r, MAGIC));
    bin = __float_as_int(r) - __float_as_int(MAGIC);
    return xf >= lo32 && xf < hi32 && frac > slack_f && frac < 1.0f - slack_f;
  }
  TALLY_DEVICE int operator()(S x) const {
    if (is_nan(x)) return NOT_A_NUMBER;
    if (IsFloat32<S>::value) {
      // f32 samples (and 16-bit floats, as their f32): compare against f32 images of the bounds (exact), estimate in f32, and
      // fall back to the f64 rule only within `slack_f` of a bin edge.
      const float xf = (float)x;
      if (xf < lo32) return BELOW;
      if (xf >= hi32) return ABOVE;
      const float q = __fmul_rn(__fsub_rn(xf, lower_f), scale_f);
      const float fl = floorf(q);
      const float frac = q - fl;
      if (frac > slack_f && frac < 1.0f - slack_f && fl >= 0.0f && fl <= last_f) return (int)fl;
      return exact(__dmul_rn(__dsub_rn((double)x, lower), bins_f));
    } else {
      const double v = (double)x;
      if (v < lower) return BELOW;
      if (v >= upper) return ABOVE;
      const double t = __dmul_rn(__dsub_rn(v, lower), bins_f);
      const double q = __dmul_rn(t, inv_range);
      const double fl = floor(q);
      const double frac = q - fl;
      if (frac > slack_d && frac < 1.0 - slack_d && fl <= (double)last) return (int)fl;
      return exact(t);
    }
  }
};

template <typename S> struct BinnerT<S, TALLY_BINNING_EDGES> {
  const double* edges;  // shared memory when they fit, global otherwise
  u32 num_edges;
  TALLY_DEVICE int operator()(S x) const {
    if (is_nan(x)) return NOT_A_NUMBER;
    const double v = (double)x;
    if (v < edges[0]) return BELOW;
    if (v >= edges[num_edges - 1]) return ABOVE;
    u32 lo = 0, hi = num_edges - 1;  // edges[lo] <= v < edges[hi]
    while (hi - lo > 1) {
      const u32 mid = (lo + hi) >> 1;
      if (edges[mid] <= v) lo = mid; else hi = mid;
    }
    return (int)lo;
  }
};

// The one binning of a kernel that bins one kind of sample one way.
#ifdef TALLY_BINNING
typedef BinnerT<Sample, TALLY_BINNING> Binner;
#endif

// The 2-D rule of src/histogram/hist2d.rs, one place for every kernel that bins pairs: NaN in
// either coordinate first, then x out of its range, then y out of its range; otherwise the bin
// x_bin * bins_y + y_bin. A pair in no bin gives -1 - its outlier index: 0 x below, 1 x above,
// 2 y below, 3 y above, 4 NaN (PAIR_OUTLIERS of them).
constexpr int PAIR_OUTLIERS = 5;
template <typename S, int MODE_X, int MODE_Y> struct PairBinnerT {
  BinnerT<S, MODE_X> x;
  BinnerT<S, MODE_Y> y;
  u32 bins_y;
  TALLY_DEVICE int operator()(S xv, S yv) const {
#if TALLY_HIST_ESTIMATE
    // f32 pairs by the estimate where it decides both bins (NaN never does).
    if constexpr (MODE_X == TALLY_BINNING_FLOAT && MODE_Y == TALLY_BINNING_FLOAT && IsFloat32<S>::value) {
      int bx, by;
      if (x.estimate((float)xv, bx) & y.estimate((float)yv, by)) return bx * (int)bins_y + by;
    }
#endif
    if (is_nan(xv) || is_nan(yv)) return -5;
    const int bx = x(xv);
    if (bx < 0) return bx == BELOW ? -1 : -2;
    const int by = y(yv);
    if (by < 0) return by == BELOW ? -3 : -4;
    return bx * (int)bins_y + by;
  }
};

// How one axis is binned: what `setup` loads a binner from. The layout is checked against
// `AxisParams` in src/histogram/binning.rs (static_asserts generated from the Rust side).
struct AxisParams {
  const int* lut;        // 256 entries (table binning)
  const double* edges;   // num_edges (edge binning)
  i64 lower_i;
  i64 upper_i;
  u64 range_i;
  double lower;
  double upper;
  double range;
  double bins_f;
  double scale_d;
  double inv_range;
  double slack_d;
  float scale_f;
  float lo32;
  float hi32;
  float lower_f;
  float slack_f;
  u32 bins;
  u32 num_edges;
  u32 pad;
};

// Loads binner `b` from the axis parameters (`table`: the 256-entry table in shared memory).
template <typename S, int MODE>
TALLY_DEVICE void setup(BinnerT<S, MODE>& b, const AxisParams& a, const int* table) {
  if constexpr (MODE == TALLY_BINNING_TABLE8) {
    b.table = table;
  } else if constexpr (MODE == TALLY_BINNING_INTEGER || MODE == TALLY_BINNING_INTEGER32) {
    b.lower = a.lower_i; b.upper = a.upper_i; b.range = a.range_i;
    b.bins = a.bins; b.scale_f = a.scale_f; b.scale_d = a.scale_d;
  } else if constexpr (MODE == TALLY_BINNING_FLOAT) {
    b.lower = a.lower; b.upper = a.upper; b.range = a.range;
    b.bins_f = a.bins_f; b.inv_range = a.inv_range; b.slack_d = a.slack_d;
    b.lo32 = a.lo32; b.hi32 = a.hi32; b.lower_f = a.lower_f; b.scale_f = a.scale_f;
    b.slack_f = a.slack_f; b.last = a.bins - 1; b.last_f = (float)(a.bins - 1);
  } else {
    b.edges = a.edges;  // read through L1: the edges are few and hot
    b.num_edges = a.num_edges;
  }
}
