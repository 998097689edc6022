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

/* Element i (row-major) of t read as double / int64; helpers for tests. */
double fx_ref_get(const fx_tensor *t, int64_t i);
int64_t fx_ref_get_i(const fx_tensor *t, int64_t i);

#endif
