// The exact sum of floats, element level (reduce.cu's exact sum, histogram_general.cu's exact
// weighted sums): a finite double is x = ±m * 2^(q - 1074) with an integer m < 2^53 and
// q = max(e, 1) - 1 <= 2045 (e the biased exponent), so every sum of doubles is an integer in
// units of 2^-1074. That integer is kept as 32-bit digits: x adds m << (q & 31), a number below
// 2^85, as three signed 32-bit chunks to digits q >> 5, +1 and +2. NaN and the infinities are
// not digits: they are counted aside, and the host gives IEEE's answer (src/reduce/exact.rs).
#pragma once
#include "common.cuh"

enum ExactKind : u32 { EXACT_FINITE = 0, EXACT_NAN = 1, EXACT_POS_INF = 2, EXACT_NEG_INF = 3 };

struct ExactChunks {
  u32 kind;   // ExactKind
  u32 digit;  // the lowest digit of the three (finite)
  i64 c[3];   // the signed chunks, each below 2^32 in magnitude (all zero for a zero)
};

// The unsigned chunks of a finite double's magnitude (its bits: the biased exponent below 0x7ff):
// `exact_chunks`'s split without the sign and the kind, for reduce.cu's zeros and subnormals.
// Written out apart so that `exact_chunks` compiles as before (built on this, its SASS changed).
struct ExactMagnitude {
  u32 digit;  // the lowest digit of the three
  u64 c[3];   // each below 2^32
};

TALLY_DEVICE ExactMagnitude exact_magnitude(u64 bits) {
  const u32 e = (u32)(bits >> 52) & 0x7ff;
  const u64 m = (bits & 0xfffffffffffffull) | (e ? (1ull << 52) : 0ull);
  const u32 q = e ? e - 1 : 0;
  const u32 sh = q & 31;
  const u64 low = m << sh;
  ExactMagnitude r;
  r.digit = q >> 5;
  r.c[0] = low & 0xffffffffull;
  r.c[1] = low >> 32;
  r.c[2] = sh ? (m >> 32) >> (32 - sh) : 0;
  return r;
}

// Whether the bits are a NaN or an infinity.
TALLY_DEVICE bool exact_special(u64 bits) { return (~bits & 0x7ff0000000000000ull) == 0; }

TALLY_DEVICE ExactChunks exact_chunks(double x) {
  ExactChunks r;
  const u64 bits = (u64)__double_as_longlong(x);
  const u32 e = (u32)(bits >> 52) & 0x7ff;
  if (e == 0x7ff) {
    r.kind = (bits & 0xfffffffffffffull) ? EXACT_NAN : (bits >> 63) ? EXACT_NEG_INF : EXACT_POS_INF;
    r.digit = 0;
    r.c[0] = r.c[1] = r.c[2] = 0;
    return r;
  }
  const u64 m = (bits & 0xfffffffffffffull) | (e ? (1ull << 52) : 0ull);
  const u32 q = e ? e - 1 : 0;
  const u32 sh = q & 31;
  const u64 low = m << sh;
  const i64 c0 = (i64)(low & 0xffffffffull), c1 = (i64)(low >> 32);
  const i64 c2 = sh ? (i64)((m >> 32) >> (32 - sh)) : 0;
  const bool negative = bits >> 63;
  r.kind = EXACT_FINITE;
  r.digit = q >> 5;
  r.c[0] = negative ? -c0 : c0;
  r.c[1] = negative ? -c1 : c1;
  r.c[2] = negative ? -c2 : c2;
  return r;
}

// Adds a signed 64-bit value to a 128-bit two's complement sum in global memory (low word, high
// word) with atomics: exact modulo 2^128 however the adds interleave, since each wrap of the low
// word is seen by exactly the add that caused it.
TALLY_DEVICE void atomic_add_i128(unsigned long long* lo, unsigned long long* hi, i64 v) {
  const unsigned long long add = (unsigned long long)v;
  const unsigned long long old = atomicAdd(lo, add);
  const unsigned long long carry = old + add < old;
  const unsigned long long hi_add = (v < 0 ? ~0ull : 0ull) + carry;
  if (hi_add) atomicAdd(hi, hi_add);
}
