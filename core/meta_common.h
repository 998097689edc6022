/* core/meta_common.h — helpers shared by the meta functions and kernels of kernels A.
 * Layer: core (private). Argument access by schema name, PyTorch's dtype names and casting
 * rules (c10/core/ScalarType.h canCast, c10::checked_convert), memory formats, and the plan of
 * a binary pointwise op (the TensorIterator set-up both the meta function and the kernel use). */
#ifndef FX_META_COMMON_H
#define FX_META_COMMON_H

#include <stdbool.h>

#include "core/ops_impl.h"

/* The normalized argument called `name` of the op being run, or NULL when the schema has no
 * such argument. Borrowed from `a`. */
const fx_ivalue *fx_arg(const fx_opctx *ctx, const fx_ivalue *a, const char *name);

/* c10's ScalarType name as error messages print it: "Float", "Long", "Half", "Bool" ... */
const char *fx_dtype_c10_name(fx_dtype dt);
/* c10::canCast: no float -> integral, no non-bool -> bool. */
bool fx_can_cast(fx_dtype from, fx_dtype to);

/* Checks that Scalar v converts to dt without overflow, as Scalar::to<T>() does
 * (c10::checked_convert): FX_EARG "value cannot be converted to type int8_t without overflow".
 * Bool targets never overflow; inf is fine for floating targets; NaN only for them. */
int fx_scalar_check(fx_dtype dt, const fx_ivalue *v, fx_err *err);

/* The dtype a wrapped number has as a tensor: Bool, Long, or Double (what PyTorch's
 * wrapped_scalar_tensor makes). */
fx_dtype fx_scalar_dtype(const fx_ivalue *v);

/* The dtype given in an optional ScalarType argument, or `def` when it is None / absent. */
fx_dtype fx_arg_dtype_or(const fx_ivalue *v, fx_dtype def);
/* Device of fresh outputs: meta when the dispatch chose meta or a Device argument says meta. */
fx_device fx_out_device(const fx_opctx *ctx, const fx_ivalue *device_arg);

typedef enum fx_memfmt {
    FX_MEMFMT_PRESERVE,
    FX_MEMFMT_CONTIGUOUS,
    FX_MEMFMT_CHANNELS_LAST
} fx_memfmt;
/* Reads a MemoryFormat argument (None, "preserve_format", "contiguous_format",
 * "torch.channels_last", ...). None and absent mean `def`. */
fx_memfmt fx_arg_memfmt(const fx_ivalue *v, fx_memfmt def);
/* Strides for a fresh tensor shaped like t under memory format f (preserve: fx_layout_like;
 * contiguous; channels_last for 4-d, else contiguous). */
void fx_memfmt_strides(const fx_tensor *t, fx_memfmt f, int64_t *strides);

/* Reads an int list argument (sizes, dims) into out[0..*n). FX_ESHAPE past FX_MAX_DIMS. */
int fx_arg_int_list(const fx_ivalue *v, int64_t *out, int *n, fx_err *err);

/* ---- binary pointwise ops -------------------------------------------------------------- */

typedef enum fx_binop {
    FX_BINOP_ADD, /* a + alpha * b (sub uses -alpha) */
    FX_BINOP_MUL,
    FX_BINOP_DIV,   /* true division */
    FX_BINOP_TRUNC, /* div rounding_mode='trunc' */
    FX_BINOP_FLOOR, /* div rounding_mode='floor' */
} fx_binop;

typedef struct fx_binary_plan {
    fx_binop op;
    bool inplace;
    bool is_sub;        /* alpha is negated */
    fx_dtype compute;   /* common dtype the op computes in */
    fx_dtype out_dtype; /* dtype of the result (self's for in-place) */
    int ndim;           /* broadcast shape */
    int64_t sizes[FX_MAX_DIMS];
    const fx_ivalue *self, *other, *alpha; /* borrowed from the args; alpha NULL if none */
} fx_binary_plan;

/* Validates a binary op call exactly as PyTorch's structured meta + TensorIterator do, in the
 * same order (sub's bool check, rounding mode, memory overlap, broadcast, in-place shape,
 * result_type, can-cast to self, alpha) and fills the plan. Errors carry PyTorch's text. */
int fx_binary_plan_make(const fx_opctx *ctx, const fx_ivalue *a, fx_binary_plan *p);

/* ---- reductions ---------------------------------------------------------------------- */

typedef struct fx_reduce_plan {
    bool is_mean;
    bool keepdim;
    bool reduced[FX_MAX_DIMS]; /* (self ndim,) which dims are reduced */
    fx_dtype out_dtype;        /* result dtype */
    fx_dtype in_dtype;         /* dtype self is cast to before reducing (the dtype argument),
                                  or self's own dtype */
    int out_ndim;              /* result shape (keepdim decides whether reduced dims stay) */
    int64_t out_sizes[FX_MAX_DIMS];
    int64_t count; /* elements reduced into each output (mean's divisor) */
} fx_reduce_plan;

/* Validates sum / sum.dim_IntList / mean / mean.dim (dims wrapped, duplicates refused,
 * None or [] = all dims, mean's dtype rules) and fills the plan. */
int fx_reduce_plan_make(const fx_opctx *ctx, const fx_ivalue *a, fx_reduce_plan *p);

#endif
