/* core/kernels/k_ref.h — naive reference kernels, for tests only (built into libfxdb_test.a).
 * Layer: core (private, test-only). Each reference walks the output's elements one by one in
 * row-major order, finds each input element by its multi-index (with broadcasting, through
 * strides), computes in double (floating) or int64 (integers) and stores with the slow
 * fx_dtype_store_* conversions. No iterator, no fast path, no shared code with the kernels
 * beyond the dtype conversions of core/dtype.c: what they compute is what the kernels must. */
#ifndef FX_K_REF_H
#define FX_K_REF_H

#include <stdbool.h>

#include "core/ivalue.h"
#include "core/tensor.h"

typedef enum fx_ref_binop {
    FX_REF_ADD, /* a + alpha * b */
    FX_REF_MUL,
    FX_REF_DIV,   /* true division */
    FX_REF_TRUNC, /* trunc(a / b), the quotient rounded to the compute dtype first */
    FX_REF_FLOOR, /* floor of the exact quotient (Python's //) */
} fx_ref_binop;

/* out = a OP b, each operand a tensor (broadcast to out's shape) or a wrapped number; values are
 * cast to `compute` first (a single-element `b` of a half-type mul/div keeps its float value
 * when `opmath_b`), the result is rounded to `compute` and stored into out (any dtype). */
void fx_ref_binary(fx_ref_binop op, fx_dtype compute, const fx_ivalue *a, const fx_ivalue *b,
                   double alpha, bool opmath_b, fx_tensor *out);
/* out = -a. */
void fx_ref_neg(const fx_tensor *a, fx_tensor *out);
/* dst = src broadcast to dst's shape, converted to dst's dtype. */
void fx_ref_copy(fx_tensor *dst, const fx_tensor *src);
/* every element of t = v. */
void fx_ref_fill(fx_tensor *t, double v);
/* sum (or mean) of x over the dims flagged in reduced[] into out, whose shape is x's with the
 * reduced dims removed or kept as 1 (either works: out is matched by element count). Floating
 * sums accumulate in double, integer sums in int64. */
void fx_ref_reduce(const fx_tensor *x, const bool *reduced, bool mean, fx_tensor *out);
/* out[i] = start + i * step (double), cast. */
void fx_ref_arange(double start, double step, fx_tensor *out);

/* ---- issue 3 (kernels A): the rest of the pointwise ops, where/clamp, reductions, creation --- */

typedef enum fx_ref_unop {
    FX_REF_EXP,
    FX_REF_LOG,
    FX_REF_LOG1P,
    FX_REF_SQRT,
    FX_REF_RSQRT,
    FX_REF_SIN,
    FX_REF_COS,
    FX_REF_TANH,
    FX_REF_SIGMOID,
    FX_REF_RECIP,
    FX_REF_ABS,
    FX_REF_RELU,
    FX_REF_GELU,
    FX_REF_GELU_TANH,
    FX_REF_SILU,
    FX_REF_BNOT,
    FX_REF_LNOT,
    FX_REF_SIGN,
    FX_REF_FLOOR_U,
    FX_REF_CEIL_U,
    FX_REF_TRUNC_U, /* trunc, the unary op */
    FX_REF_ROUND,   /* halves to even */
    FX_REF_ERF,
    FX_REF_EXPM1,
} fx_ref_unop;
/* out = op(a): a's values read as double (floating math in double, whatever out's dtype) or
 * int64 (abs, relu, bitwise_not on integers, wrapping to a's dtype), stored into out (rounded
 * once). logical_not stores a == 0. */
void fx_ref_unary(fx_ref_unop op, const fx_tensor *a, fx_tensor *out);

typedef enum fx_ref_binop2 {
    FX_REF_REM,
    FX_REF_POW,
    FX_REF_MAX,
    FX_REF_MIN,
    FX_REF_BAND,
    FX_REF_BOR,
    FX_REF_BXOR,
    FX_REF_SHL,
    FX_REF_SHR,
    FX_REF_EQ,
    FX_REF_NE,
    FX_REF_LT,
    FX_REF_LE,
    FX_REF_GT,
    FX_REF_GE,
    FX_REF_LAND,
    FX_REF_LOR,
    FX_REF_LXOR,
} fx_ref_binop2;
/* out = a OP b with both operands cast to `compute` first (tensors broadcast to out's shape, or
 * wrapped numbers); arithmetic in double / int64 (wrapping to compute), predicates store 0/1.
 * Semantics as PyTorch: Python modulo, integer powers with c10's negative-exponent rule, NaN
 * propagation of maximum/minimum, shifts past the width. */
void fx_ref_binary2(fx_ref_binop2 op, fx_dtype compute, const fx_ivalue *a, const fx_ivalue *b,
                    fx_tensor *out);
/* out = cond ? a : b, with a and b cast to out's dtype (tensors broadcast or wrapped numbers). */
void fx_ref_where(const fx_tensor *cond, const fx_ivalue *a, const fx_ivalue *b, fx_tensor *out);
/* out = clamp(x, lo, hi) in `compute` (lo / hi: tensors, wrapped numbers or NONE); scalar_form
 * keeps NaN inputs (clamp.default), else the Tensor form (NaN bounds give NaN). */
void fx_ref_clamp(fx_dtype compute, const fx_tensor *x, const fx_ivalue *lo, const fx_ivalue *hi,
                  bool scalar_form, fx_tensor *out);

typedef enum fx_ref_redop {
    FX_REF_RPROD,
    FX_REF_RMAX,
    FX_REF_RMIN,
    FX_REF_RALL,
    FX_REF_RANY,
    FX_REF_RVAR,
    FX_REF_RSTD,
} fx_ref_redop;
/* Reduces x over the dims flagged in reduced[] (row-major order of the kept dims into out):
 * product (double / int64), max / min (NaN wins), all / any, var / std with the given
 * correction (two-pass in double). */
void fx_ref_reduce2(fx_ref_redop op, const fx_tensor *x, const bool *reduced, double correction,
                    fx_tensor *out);
/* The first max (ismax) or min of x along dim (NaN wins) at each position of the other dims:
 * values (may be NULL) and int64 indices, both contiguous in row-major order. dim -1: over the
 * row-major flattening. */
void fx_ref_argreduce(bool ismax, const fx_tensor *x, int dim, fx_tensor *vals, fx_tensor *idx);
/* Running sum of x along dim into out (same shape): double for floating, int64 for integers. */
void fx_ref_cumsum(const fx_tensor *x, int dim, fx_tensor *out);
/* out = x with the elements (.., i, j) outside the lower (j - i <= k) or upper (j - i >= k)
 * triangle zeroed. */
void fx_ref_tril(const fx_tensor *x, int64_t k, bool lower, fx_tensor *out);

/* Element i (row-major) of t read as double / int64; helpers for tests. */
double fx_ref_get(const fx_tensor *t, int64_t i);
int64_t fx_ref_get_i(const fx_tensor *t, int64_t i);

#endif
