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

/* The caffe2::TypeMeta name of dt ("float", "long int", "c10::Half", ...), which several of
 * PyTorch's messages print for a dtype. Static string. */
const char *fx_typemeta_name(fx_dtype dt);

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
    FX_BINOP_ADD, /* a + alpha * b (sub uses -alpha; rsub swaps the operands) */
    FX_BINOP_MUL,
    FX_BINOP_DIV,   /* true division */
    FX_BINOP_TRUNC, /* div rounding_mode='trunc' */
    FX_BINOP_FLOOR, /* div rounding_mode='floor', floor_divide */
    FX_BINOP_REM,   /* remainder: Python's modulo (the sign of the divisor) */
    FX_BINOP_POW,
    FX_BINOP_MAX, /* maximum: NaN propagates; bool is `or` */
    FX_BINOP_MIN,
    FX_BINOP_BAND, /* bitwise ops: integers and bool only */
    FX_BINOP_BOR,
    FX_BINOP_BXOR,
    FX_BINOP_SHL, /* shifts: integers only; shifts past the width give 0 (or the sign) */
    FX_BINOP_SHR,
    /* predicates: compute in the common dtype, produce bool */
    FX_BINOP_EQ,
    FX_BINOP_NE,
    FX_BINOP_LT,
    FX_BINOP_LE,
    FX_BINOP_GT,
    FX_BINOP_GE,
    FX_BINOP_LAND, /* logical_and / or / xor: operands tested against 0 */
    FX_BINOP_LOR,
    FX_BINOP_LXOR,
    FX_BINOP_COUNT
} fx_binop;

/* Ops from FX_BINOP_EQ on produce bool (self's dtype for their in-place forms). */
#define FX_BINOP_IS_PREDICATE(op) ((op) >= FX_BINOP_EQ)

typedef struct fx_binary_plan {
    fx_binop op;
    bool inplace;
    bool is_sub;        /* alpha is negated */
    bool scalar_exp;    /* pow.Tensor_Scalar / pow_.Scalar: the special-cased exponents */
    fx_dtype compute;   /* common dtype the op computes in */
    fx_dtype out_dtype; /* dtype of the result (self's for in-place) */
    int ndim;           /* broadcast shape */
    int64_t sizes[FX_MAX_DIMS];
    const fx_ivalue *self, *other, *alpha; /* borrowed from the args; alpha NULL if none */
} fx_binary_plan;

/* Validates a binary op call exactly as PyTorch's structured meta + TensorIterator do, in the
 * same order (sub's bool check, rounding mode, memory overlap, broadcast, in-place shape,
 * result_type, can-cast to self, alpha, the dtypes the CPU kernel dispatches) and fills the
 * plan. Serves every op of ops.def whose meta is fx_meta_binary / fx_meta_binary_: add sub mul
 * div rsub pow remainder floor_divide maximum minimum eq ne lt le gt ge logical_and/or/xor
 * bitwise_and/or/xor bitwise_left/right_shift __lshift__ __rshift__ (every overload and
 * in-place twin). rsub's plan has self and other swapped (other - alpha * self). Errors carry
 * PyTorch's text. */
int fx_binary_plan_make(const fx_opctx *ctx, const fx_ivalue *a, fx_binary_plan *p);

/* TensorIterator's in-place shape check: FX_OK when the broadcast shape (ndim, sizes) equals the
 * in-place result's (self_ndim, self_sizes), else FX_ESHAPE with PyTorch's "output with shape
 * [..] doesn't match the broadcast shape [..]". Shared by the binary and ternary plans. */
int fx_check_inplace_shape(int self_ndim, const int64_t *self_sizes, int ndim, const int64_t *sizes,
                           fx_err *err);

/* ---- creation (meta_creation.c) ----------------------------------------------------- */

/* arange.default / .start / .start_step: (start, end, step) into v[0..3) (0 and 1 where the
 * overload has no such argument); FX_EARG when one is not a number. */
int fx_arange_args(const fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *v);

/* ---- unary pointwise ops (meta_unary.c) ---------------------------------------------- */

/* The dtype a unary op computes in for input dtype `in`: float32 for integral and bool inputs
 * of the float-only ops (exp, log, log1p, sqrt, rsqrt, sin, cos, tanh, sigmoid, reciprocal),
 * else `in` (logical_not's loop reads `in` and writes bool). */
fx_dtype fx_unary_compute_dtype(fx_op_id id, fx_dtype in);

/* ---- where and clamp (meta_ternary.c) --------------------------------------------------- */

typedef struct fx_ternary_plan {
    bool inplace;
    bool scalar_form;   /* clamp with Scalar bounds (else tensor operands / wrapped numbers) */
    fx_dtype compute;   /* common dtype of the values */
    fx_dtype out_dtype; /* result dtype (self's for in-place) */
    int ndim;           /* broadcast shape of every operand */
    int64_t sizes[FX_MAX_DIMS];
    /* where: condition, self, other. clamp: self, min, max (FX_IV_NONE when not given).
     * Borrowed from the args. */
    const fx_ivalue *ops[3];
} fx_ternary_plan;

/* where.self / .ScalarSelf / .ScalarOther / .Scalar: condition bool (or uint8), result_type of
 * self and other (scalars as wrapped numbers; two scalars: int64 or the default float), the
 * three shapes broadcast. */
int fx_where_plan_make(const fx_opctx *ctx, const fx_ivalue *a, fx_ternary_plan *p);
/* clamp / clamp.Tensor / clamp_ / clamp_.Tensor: at least one bound; the Scalar form promotes
 * integral self with the bounds as wrapped numbers (a floating self keeps its dtype), the
 * Tensor form takes the common dtype of all tensors and broadcasts them; in-place results must
 * cast back to self. */
int fx_clamp_plan_make(const fx_opctx *ctx, const fx_ivalue *a, fx_ternary_plan *p);
/* lerp.Scalar / lerp.Tensor / lerp_ (ops: self, end, weight): floating self; end and a tensor
 * weight of self's dtype (PyTorch's "expected dtype ... for `end`" messages); the three shapes
 * broadcast, an in-place result must keep self's shape. */
int fx_lerp_plan_make(const fx_opctx *ctx, const fx_ivalue *a, fx_ternary_plan *p);

/* ---- flip and roll (meta_reorder.c) ------------------------------------------------------ */

/* Where each output element comes from: along dim d, flipped (index n-1-i) when flip[d], else
 * shifted (index (i - shift[d]) mod n); flat: roll of the flattened tensor by flat_shift. */
typedef struct fx_reorder_plan {
    bool flip[FX_MAX_DIMS];
    int64_t shift[FX_MAX_DIMS];
    bool flat;
    int64_t flat_shift;
} fx_reorder_plan;

/* flip: dims wrapped, a repeated dim refused ("dim 0 appears multiple times in the list of
 * dims"); roll: "`shifts` required", "shifts and dimensions must align. shifts: 2, dims:1". */
int fx_reorder_plan_make(fx_opctx *ctx, const fx_ivalue *a, fx_reorder_plan *p);

/* ---- sort and topk (meta_sort.c) ----------------------------------------------------------- */

typedef struct fx_sort_plan {
    int dim;         /* wrapped (0 for a 0-dim self) */
    int64_t len;     /* elements along dim (1 for a 0-dim self) */
    int64_t k;       /* kept per line: len for sort */
    bool descending; /* sort's descending, topk's largest */
} fx_sort_plan;

/* sort / sort.stable / topk arguments: dim wrapped; topk's k in [0, len] and no bool self. */
int fx_sort_plan_make(fx_opctx *ctx, const fx_ivalue *a, fx_sort_plan *p);

/* ---- linalg_vector_norm (meta_norm.c) -------------------------------------------------------- */

typedef struct fx_norm_plan {
    double ord;                /* p: 2, 1, inf, -inf, 0 (count of nonzeros) or any other */
    bool reduced[FX_MAX_DIMS]; /* (self ndim,) which dims are reduced */
    fx_dtype in_dtype;         /* self converted to this first (dtype=), also the result's */
    bool keepdim;
    int out_ndim;
    int64_t out_sizes[FX_MAX_DIMS];
} fx_norm_plan;

/* linalg_vector_norm's checks (floating input, dims wrapped and distinct, no empty reduction of
 * a negative or infinite ord) and result shape. */
int fx_norm_plan_make(fx_opctx *ctx, const fx_ivalue *a, fx_norm_plan *p);

/* ---- padding (meta_reorder.c) -------------------------------------------------------------- */

typedef enum fx_pad_mode { FX_PAD_CONSTANT, FX_PAD_REFLECT, FX_PAD_REPLICATE } fx_pad_mode;

typedef struct fx_pad_plan {
    fx_pad_mode mode;
    int64_t before[FX_MAX_DIMS], after[FX_MAX_DIMS]; /* per dim of self (0 for unpadded dims) */
    int ndim;
    int64_t out_sizes[FX_MAX_DIMS];
} fx_pad_plan;

/* constant_pad_nd / reflection_pad{1,2,3}d / replication_pad{1,2,3}d: pad lists the last dim
 * first as (before, after) pairs; PyTorch's checks and messages (even length, at most twice the
 * dims, a negative result size, reflection padding smaller than the dim, the input rank of the
 * reflection / replication ops). */
int fx_pad_plan_make(fx_opctx *ctx, const fx_ivalue *a, fx_pad_plan *p);

/* ---- convolution (meta_conv.c) ------------------------------------------------------------ */

#define FX_CONV_MAX_SPATIAL 3

typedef struct fx_conv_plan {
    int nsp;          /* spatial dims (1 for conv1d, 2 for conv2d, 3) */
    int64_t n, c, oc; /* batch, input channels, output channels */
    int64_t groups;
    int64_t in[FX_CONV_MAX_SPATIAL], k[FX_CONV_MAX_SPATIAL], out[FX_CONV_MAX_SPATIAL];
    int64_t stride[FX_CONV_MAX_SPATIAL], pad[FX_CONV_MAX_SPATIAL], dil[FX_CONV_MAX_SPATIAL];
    bool has_bias;
} fx_conv_plan;

/* convolution(input [N, C, *in], weight [OC, C / groups, *k], bias [OC]?, stride, padding,
 * dilation, transposed, output_padding, groups): PyTorch's checks in Convolution.cpp's order
 * and words (groups, stride, padding, dilation, ranks, channel counts, bias size, kernel larger
 * than the padded input, dtypes); out = (in + 2 pad - dil (k - 1) - 1) / stride + 1.
 * transposed convolutions are refused as not yet supported. */
int fx_conv_plan_make(fx_opctx *ctx, const fx_ivalue *a, fx_conv_plan *p);

/* ---- reductions ---------------------------------------------------------------------- */

typedef enum fx_reduce_kind {
    FX_RED_SUM, /* sum, sum.dim_IntList */
    FX_RED_MEAN,
    FX_RED_PROD, /* prod, prod.dim_int */
    FX_RED_MAX,  /* amax, max.default */
    FX_RED_MIN,  /* amin, min.default */
    FX_RED_ALL,  /* all (every overload) */
    FX_RED_ANY,
    FX_RED_VAR,     /* var.correction */
    FX_RED_STD,     /* std.correction */
    FX_RED_MAX_DIM, /* max.dim: (values, indices) */
    FX_RED_MIN_DIM,
    FX_RED_ARGMAX, /* argmax, argmin: indices; dim None = over the flattened tensor */
    FX_RED_ARGMIN,
} fx_reduce_kind;

typedef struct fx_reduce_plan {
    fx_reduce_kind kind;
    bool is_mean; /* kind == FX_RED_MEAN */
    bool keepdim;
    bool reduced[FX_MAX_DIMS]; /* (self ndim,) which dims are reduced */
    int dim;                   /* the one reduced dim of max.dim / argmax..., -1 = flattened */
    double correction;         /* var / std: divisor is count - correction (at least 0) */
    fx_dtype out_dtype;        /* result dtype (values of max.dim) */
    fx_dtype in_dtype;         /* dtype self is cast to before reducing (the dtype argument),
                                  or self's own dtype */
    int out_ndim;              /* result shape (keepdim decides whether reduced dims stay) */
    int64_t out_sizes[FX_MAX_DIMS];
    int64_t count; /* elements reduced into each output (mean's divisor) */
} fx_reduce_plan;

/* Validates every reduction of ops.def whose meta is fx_meta_reduce (sum mean prod amax amin
 * max min all any var.correction std.correction max.dim min.dim argmax argmin), as
 * ReduceOps.cpp / TensorCompare.cpp do: dims wrapped, duplicates refused, None or [] = all
 * dims; dtype rules (sum/prod of integers -> int64, mean and var/std need floating inputs,
 * all/any give bool (uint8 for uint8), argmax gives int64); the empty-input checks of
 * amax/max/argmax. Fills the plan. */
int fx_reduce_plan_make(const fx_opctx *ctx, const fx_ivalue *a, fx_reduce_plan *p);

/* ---- cumsum, cumprod (meta_reduce.c) ------------------------------------------------------ */

/* cumsum / cumsum_ / cumprod / cumprod_: the wrapped dim, the dtype the input is cast to and the
 * result dtype (integers and bool accumulate into int64 unless dtype says otherwise; the in-place
 * forms keep self's dtype and refuse another). Errors carry PyTorch's text. */
int fx_cumsum_plan(const fx_opctx *ctx, const fx_ivalue *a, int *dim, fx_dtype *in_dtype,
                   fx_dtype *out_dtype);

/* ---- batch norm and group norm (meta_norm_layers.c) ------------------------------------ */

/* The arguments of batch_norm, native_batch_norm and _native_batch_norm_legit (every overload
 * and variant), read by position from each schema. Tensors borrowed; NULL for None. */
typedef struct fx_batch_norm_args_t {
    fx_tensor *input, *weight, *bias, *running_mean, *running_var;
    bool training;
    double momentum, eps;
} fx_batch_norm_args_t;
int fx_batch_norm_args(fx_opctx *ctx, const fx_ivalue *a, fx_batch_norm_args_t *p);

/* The arguments of group_norm / native_group_norm, checked as check_group_norm_inputs does
 * (meta_norm_layers.c): input [n, c, *] with hxw = prod(*), c divisible by groups, weight / bias
 * [c] (NULL for None), floating; mixed when a float16 / bfloat16 input has float32 parameters. */
typedef struct fx_group_norm_args_t {
    fx_tensor *input, *weight, *bias;
    int64_t n, c, hxw, groups;
    double eps;
    bool mixed;
} fx_group_norm_args_t;
int fx_group_norm_args(fx_opctx *ctx, const fx_ivalue *a, fx_group_norm_args_t *p);

#endif
