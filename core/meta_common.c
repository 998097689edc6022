/* core/meta_common.c — argument helpers, c10 dtype names and casts, binary op planning.
 * Layer: core (private). See meta_common.h. */
#include "core/meta_common.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "core/kernels/k_iter.h"
#include "core/shape.h"

const fx_ivalue *fx_arg(const fx_opctx *ctx, const fx_ivalue *a, const char *name) {
    int i = fx_schema_arg_index(&ctx->op->schema, name);
    return i < 0 ? NULL : &a[i];
}

const char *fx_dtype_c10_name(fx_dtype dt) {
    switch (dt) {
    case FX_DTYPE_F32: return "Float";
    case FX_DTYPE_F64: return "Double";
    case FX_DTYPE_F16: return "Half";
    case FX_DTYPE_BF16: return "BFloat16";
    case FX_DTYPE_I64: return "Long";
    case FX_DTYPE_I32: return "Int";
    case FX_DTYPE_I16: return "Short";
    case FX_DTYPE_I8: return "Char";
    case FX_DTYPE_U8: return "Byte";
    case FX_DTYPE_BOOL: return "Bool";
    case FX_DTYPE_C64: return "ComplexFloat";
    case FX_DTYPE_C128: return "ComplexDouble";
    default: return "Undefined";
    }
}

bool fx_can_cast(fx_dtype from, fx_dtype to) {
    if (fx_dtype_is_complex(from) && !fx_dtype_is_complex(to)) return false;
    if (fx_dtype_is_float(from) && fx_dtype_is_int(to)) return false;
    if (from != FX_DTYPE_BOOL && to == FX_DTYPE_BOOL) return false;
    return true;
}

/* c10's Scalar::to<T> names (the C++ type spelled in AT_FORALL_SCALAR_TYPES) and ranges. */
static const char *scalar_type_cxx_name(fx_dtype dt) {
    switch (dt) {
    case FX_DTYPE_F32: return "float";
    case FX_DTYPE_F64: return "double";
    case FX_DTYPE_F16: return "at::Half";
    case FX_DTYPE_BF16: return "at::BFloat16";
    case FX_DTYPE_I64: return "int64_t";
    case FX_DTYPE_I32: return "int";
    case FX_DTYPE_I16: return "int16_t";
    case FX_DTYPE_I8: return "int8_t";
    case FX_DTYPE_U8: return "uint8_t";
    case FX_DTYPE_C64: return "c10::complex<float>";
    case FX_DTYPE_C128: return "c10::complex<double>";
    default: return "bool";
    }
}

static void int_range(fx_dtype dt, int64_t *lo, int64_t *hi) {
    switch (dt) {
    case FX_DTYPE_I32: *lo = INT32_MIN, *hi = INT32_MAX; return;
    case FX_DTYPE_I16: *lo = INT16_MIN, *hi = INT16_MAX; return;
    case FX_DTYPE_I8: *lo = INT8_MIN, *hi = INT8_MAX; return;
    case FX_DTYPE_U8: *lo = 0, *hi = UINT8_MAX; return;
    default: *lo = INT64_MIN, *hi = INT64_MAX; return;
    }
}

static double float_max(fx_dtype dt) {
    switch (dt) {
    case FX_DTYPE_F16: return 65504.0;
    case FX_DTYPE_BF16: return 3.3895313892515355e38;
    case FX_DTYPE_F32: return FLT_MAX;
    default: return DBL_MAX;
    }
}

int fx_scalar_check(fx_dtype dt, const fx_ivalue *v, fx_err *err) {
    if (dt == FX_DTYPE_BOOL || v->tag == FX_IV_BOOL) return FX_OK;
    bool over = false;
    if (v->tag == FX_IV_FLOAT) {
        double f = v->u.f;
        if (fx_dtype_is_float(dt)) {
            over = !isinf(f) && !isnan(f) && (f < -float_max(dt) || f > float_max(dt));
        } else {
            int64_t lo, hi;
            int_range(dt, &lo, &hi);
            over = isnan(f) || f < (double)lo || f > (double)hi;
        }
    } else if (v->tag == FX_IV_INT) {
        int64_t i = v->u.i;
        if (fx_dtype_is_float(dt)) {
            over = (double)i < -float_max(dt) || (double)i > float_max(dt);
        } else if (dt == FX_DTYPE_U8) {
            /* negative values may wrap (two's complement), as c10's overflows allows */
            over = i > UINT8_MAX || (i < 0 && (uint64_t)0 - (uint64_t)i > UINT8_MAX);
        } else {
            int64_t lo, hi;
            int_range(dt, &lo, &hi);
            over = i < lo || i > hi;
        }
    }
    if (over)
        return fx_err_setf(err, FX_EARG, "value cannot be converted to type %s without overflow",
                           scalar_type_cxx_name(dt));
    return FX_OK;
}

fx_dtype fx_scalar_dtype(const fx_ivalue *v) {
    if (v->tag == FX_IV_BOOL) return FX_DTYPE_BOOL;
    if (v->tag == FX_IV_INT) return FX_DTYPE_I64;
    return FX_DTYPE_F64;
}

fx_dtype fx_arg_dtype_or(const fx_ivalue *v, fx_dtype def) {
    if (v && v->tag == FX_IV_DTYPE) return v->u.dtype;
    return def;
}

fx_device fx_out_device(const fx_opctx *ctx, const fx_ivalue *d) {
    if (ctx->device == FX_DEVICE_META) return FX_DEVICE_META;
    if (d && d->tag == FX_IV_DEVICE) return d->u.device;
    if (d && d->tag == FX_IV_STR && strncmp(d->u.s, "meta", 4) == 0) return FX_DEVICE_META;
    return FX_DEVICE_CPU;
}

fx_memfmt fx_arg_memfmt(const fx_ivalue *v, fx_memfmt def) {
    if (!v || v->tag != FX_IV_STR) return def;
    if (strstr(v->u.s, "channels_last")) return FX_MEMFMT_CHANNELS_LAST;
    if (strstr(v->u.s, "contiguous")) return FX_MEMFMT_CONTIGUOUS;
    return FX_MEMFMT_PRESERVE;
}

void fx_memfmt_strides(const fx_tensor *t, fx_memfmt f, int64_t *strides) {
    if (f == FX_MEMFMT_PRESERVE) {
        fx_layout_like(t, strides);
    } else if (f == FX_MEMFMT_CHANNELS_LAST && t->ndim == 4) {
        const int64_t *s = t->sizes; /* N C H W -> strides of N H W C */
        int64_t c = s[1] > 1 ? s[1] : 1, w = s[3] > 1 ? s[3] : 1, h = s[2] > 1 ? s[2] : 1;
        strides[1] = 1;
        strides[3] = c;
        strides[2] = c * w;
        strides[0] = c * w * h;
    } else {
        fx_contiguous_strides(t->ndim, t->sizes, strides);
    }
}

int fx_arg_int_list(const fx_ivalue *v, int64_t *out, int *n, fx_err *err) {
    if (v->tag == FX_IV_INT) {
        out[0] = v->u.i;
        *n = 1;
        return FX_OK;
    }
    if (v->tag != FX_IV_LIST) return fx_err_setf(err, FX_EARG, "expected a list of ints");
    if (v->u.list.n > FX_MAX_DIMS)
        return fx_err_setf(err, FX_ESHAPE, "fxdb supports at most %d dimensions, got %d",
                           FX_MAX_DIMS, v->u.list.n);
    for (int i = 0; i < v->u.list.n; i++) {
        if (v->u.list.items[i].tag != FX_IV_INT)
            return fx_err_setf(err, FX_EARG, "expected a list of ints");
        out[i] = v->u.list.items[i].u.i;
    }
    *n = v->u.list.n;
    return FX_OK;
}

/* ==== binary op planning =================================================================== */

static fx_dtype iv_dtype(const fx_ivalue *v) {
    return v->tag == FX_IV_TENSOR ? v->u.t->dtype : fx_scalar_dtype(v);
}

/* The binop and form of every op served by fx_binary_plan_make. */
typedef struct binop_form {
    fx_op_id id;
    fx_binop op;
    unsigned char inplace, sub, swap, scalar_exp;
} binop_form;

static const binop_form k_binop_forms[] = {
    {FX_OP_ADD_TENSOR, FX_BINOP_ADD, 0, 0, 0, 0},
    {FX_OP_ADD__TENSOR, FX_BINOP_ADD, 1, 0, 0, 0},
    {FX_OP_SUB_TENSOR, FX_BINOP_ADD, 0, 1, 0, 0},
    {FX_OP_SUB__TENSOR, FX_BINOP_ADD, 1, 1, 0, 0},
    {FX_OP_RSUB_SCALAR, FX_BINOP_ADD, 0, 1, 1, 0},
    {FX_OP_RSUB_TENSOR, FX_BINOP_ADD, 0, 1, 1, 0},
    {FX_OP_MUL_TENSOR, FX_BINOP_MUL, 0, 0, 0, 0},
    {FX_OP_MUL__TENSOR, FX_BINOP_MUL, 1, 0, 0, 0},
    {FX_OP_DIV_TENSOR, FX_BINOP_DIV, 0, 0, 0, 0},
    {FX_OP_DIV__TENSOR, FX_BINOP_DIV, 1, 0, 0, 0},
    {FX_OP_DIV_TENSOR_MODE, FX_BINOP_DIV, 0, 0, 0, 0},
    {FX_OP_DIV__TENSOR_MODE, FX_BINOP_DIV, 1, 0, 0, 0},
    {FX_OP_FLOOR_DIVIDE, FX_BINOP_FLOOR, 0, 0, 0, 0},
    {FX_OP_FLOOR_DIVIDE_SCALAR, FX_BINOP_FLOOR, 0, 0, 0, 0},
    {FX_OP_FLOOR_DIVIDE__TENSOR, FX_BINOP_FLOOR, 1, 0, 0, 0},
    {FX_OP_FLOOR_DIVIDE__SCALAR, FX_BINOP_FLOOR, 1, 0, 0, 0},
    {FX_OP_REMAINDER_TENSOR, FX_BINOP_REM, 0, 0, 0, 0},
    {FX_OP_REMAINDER_SCALAR, FX_BINOP_REM, 0, 0, 0, 0},
    {FX_OP_REMAINDER_SCALAR_TENSOR, FX_BINOP_REM, 0, 0, 0, 0},
    {FX_OP_REMAINDER__TENSOR, FX_BINOP_REM, 1, 0, 0, 0},
    {FX_OP_REMAINDER__SCALAR, FX_BINOP_REM, 1, 0, 0, 0},
    {FX_OP_POW_TENSOR_TENSOR, FX_BINOP_POW, 0, 0, 0, 0},
    {FX_OP_POW_TENSOR_SCALAR, FX_BINOP_POW, 0, 0, 0, 1},
    {FX_OP_POW_SCALAR, FX_BINOP_POW, 0, 0, 0, 0},
    {FX_OP_POW__TENSOR, FX_BINOP_POW, 1, 0, 0, 0},
    {FX_OP_POW__SCALAR, FX_BINOP_POW, 1, 0, 0, 1},
    {FX_OP_MAXIMUM, FX_BINOP_MAX, 0, 0, 0, 0},
    {FX_OP_MINIMUM, FX_BINOP_MIN, 0, 0, 0, 0},
#define CMP_FORMS(N, OP)                                                                           \
    {FX_OP_##N##_TENSOR, OP, 0, 0, 0, 0}, {FX_OP_##N##_SCALAR, OP, 0, 0, 0, 0},                    \
        {FX_OP_##N##__TENSOR, OP, 1, 0, 0, 0}, {FX_OP_##N##__SCALAR, OP, 1, 0, 0, 0},
    CMP_FORMS(EQ, FX_BINOP_EQ) CMP_FORMS(NE, FX_BINOP_NE) CMP_FORMS(LT, FX_BINOP_LT)
        CMP_FORMS(LE, FX_BINOP_LE) CMP_FORMS(GT, FX_BINOP_GT) CMP_FORMS(GE, FX_BINOP_GE)
#undef CMP_FORMS
            {FX_OP_LOGICAL_AND, FX_BINOP_LAND, 0, 0, 0, 0},
    {FX_OP_LOGICAL_AND_, FX_BINOP_LAND, 1, 0, 0, 0},
    {FX_OP_LOGICAL_OR, FX_BINOP_LOR, 0, 0, 0, 0},
    {FX_OP_LOGICAL_OR_, FX_BINOP_LOR, 1, 0, 0, 0},
    {FX_OP_LOGICAL_XOR, FX_BINOP_LXOR, 0, 0, 0, 0},
    {FX_OP_LOGICAL_XOR_, FX_BINOP_LXOR, 1, 0, 0, 0},
#define BIT_FORMS(N, OP)                                                                           \
    {FX_OP_##N##_TENSOR, OP, 0, 0, 0, 0}, {FX_OP_##N##_SCALAR, OP, 0, 0, 0, 0},                    \
        {FX_OP_##N##_SCALAR_TENSOR, OP, 0, 0, 0, 0}, {FX_OP_##N##__TENSOR, OP, 1, 0, 0, 0},        \
        {FX_OP_##N##__SCALAR, OP, 1, 0, 0, 0},
    BIT_FORMS(BITWISE_AND, FX_BINOP_BAND) BIT_FORMS(BITWISE_OR, FX_BINOP_BOR)
        BIT_FORMS(BITWISE_XOR, FX_BINOP_BXOR)
#undef BIT_FORMS
#define SHIFT_FORMS(N, D, OP)                                                                      \
    {FX_OP_##N##_TENSOR, OP, 0, 0, 0, 0}, {FX_OP_##N##_TENSOR_SCALAR, OP, 0, 0, 0, 0},             \
        {FX_OP_##N##_SCALAR_TENSOR, OP, 0, 0, 0, 0}, {FX_OP_##N##__TENSOR, OP, 1, 0, 0, 0},        \
        {FX_OP_##N##__TENSOR_SCALAR, OP, 1, 0, 0, 0}, {FX_OP_DUNDER_##D##_SCALAR, OP, 0, 0, 0, 0}, \
        {FX_OP_DUNDER_##D##_TENSOR, OP, 0, 0, 0, 0}, {FX_OP_DUNDER_I##D##_SCALAR, OP, 1, 0, 0, 0}, \
        {FX_OP_DUNDER_I##D##_TENSOR, OP, 1, 0, 0, 0},
            SHIFT_FORMS(BITWISE_LEFT_SHIFT, LSHIFT, FX_BINOP_SHL)
                SHIFT_FORMS(BITWISE_RIGHT_SHIFT, RSHIFT, FX_BINOP_SHR)
#undef SHIFT_FORMS
};

/* The name of the CPU kernel PyTorch's dtype dispatch reports for op on dtype dt, when that
 * kernel does not exist ("\"bitwise_and_cpu\" not implemented for 'Float'"); NULL when fine. */
static const char *unsupported_kernel(fx_binop op, fx_dtype dt) {
    bool fp = fx_dtype_is_float(dt), b = dt == FX_DTYPE_BOOL;
    switch (op) {
    case FX_BINOP_REM: return b ? "remainder_cpu" : NULL;
    case FX_BINOP_POW: return b ? "pow" : NULL;
    /* ordering comparisons: PyTorch refuses complex operands in its CPU kernels' dispatch */
    case FX_BINOP_LT: return fx_dtype_is_complex(dt) ? "lt_cpu" : NULL;
    case FX_BINOP_LE: return fx_dtype_is_complex(dt) ? "le_cpu" : NULL;
    case FX_BINOP_GT: return fx_dtype_is_complex(dt) ? "gt_cpu" : NULL;
    case FX_BINOP_GE: return fx_dtype_is_complex(dt) ? "ge_cpu" : NULL;
    case FX_BINOP_BAND: return fp ? "bitwise_and_cpu" : NULL;
    case FX_BINOP_BOR: return fp ? "bitwise_or_cpu" : NULL;
    case FX_BINOP_BXOR: return fp ? "bitwise_xor_cpu" : NULL;
    case FX_BINOP_SHL: return (fp || b) ? "lshift_cpu" : NULL;
    case FX_BINOP_SHR: return (fp || b) ? "rshift_cpu" : NULL;
    default: return NULL;
    }
}

int fx_check_inplace_shape(int self_ndim, const int64_t *self_sizes, int ndim, const int64_t *sizes,
                           fx_err *err) {
    bool same = ndim == self_ndim;
    for (int d = 0; same && d < ndim; d++) same = sizes[d] == self_sizes[d];
    if (same) return FX_OK;
    char b1[160], b2[160];
    return fx_err_setf(err, FX_ESHAPE, "output with shape %s doesn't match the broadcast shape %s",
                       fx_shape_str(self_ndim, self_sizes, b1, sizeof b1),
                       fx_shape_str(ndim, sizes, b2, sizeof b2));
}

int fx_binary_plan_make(const fx_opctx *ctx, const fx_ivalue *a, fx_binary_plan *p) {
    fx_err *err = ctx->err;
    memset(p, 0, sizeof *p);
    p->self = &a[0];
    p->other = &a[1];
    /* op id -> its form (1 + index in k_binop_forms; 0 = none), filled on first use; racing
     * threads write the same values */
    static volatile short form_of[FX_OP_COUNT];
    static volatile int forms_ready;
    if (!forms_ready) {
        for (size_t i = 0; i < sizeof k_binop_forms / sizeof k_binop_forms[0]; i++)
            form_of[k_binop_forms[i].id] = (short)(i + 1);
        forms_ready = 1;
    }
    int fi = ctx->op->id >= 0 && ctx->op->id < FX_OP_COUNT ? form_of[ctx->op->id] : 0;
    if (!fi) return fx_err_setf(err, FX_EINTERNAL, "%s is not a binary op", ctx->op->qualname);
    const binop_form *form = &k_binop_forms[fi - 1];
    p->op = form->op;
    p->inplace = form->inplace;
    p->is_sub = form->sub;
    p->scalar_exp = form->scalar_exp;
    if (form->swap) p->self = &a[1], p->other = &a[0];
    if (ctx->op->id == FX_OP_DIV_TENSOR_MODE || ctx->op->id == FX_OP_DIV__TENSOR_MODE) {
        const fx_ivalue *m = &a[2];
        if (m->tag != FX_IV_STR)
            p->op = FX_BINOP_DIV;
        else if (!strcmp(m->u.s, "trunc"))
            p->op = FX_BINOP_TRUNC;
        else if (!strcmp(m->u.s, "floor"))
            p->op = FX_BINOP_FLOOR;
        else
            return fx_err_setf(err, FX_EARG,
                               "div expected rounding_mode to be one of None, 'trunc', or "
                               "'floor' but found '%s'",
                               m->u.s);
    }
    if (p->op == FX_BINOP_ADD) p->alpha = &a[2];
    const fx_ivalue *s = p->self, *o = p->other;
    if (p->inplace && s->tag != FX_IV_TENSOR)
        return fx_err_setf(err, FX_EARG, "%s(): self must be a Tensor", ctx->op->schema.name);
    if (s->tag != FX_IV_TENSOR && o->tag != FX_IV_TENSOR)
        return fx_err_setf(err, FX_EARG, "%s(): expected at least one Tensor argument",
                           ctx->op->schema.name);

    if (p->is_sub) { /* sub_check */
        fx_dtype ds = iv_dtype(s), dot = iv_dtype(o);
        if (ds == FX_DTYPE_BOOL && dot == FX_DTYPE_BOOL)
            return fx_err_setf(err, FX_ETYPE,
                               "Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.");
        if (ds == FX_DTYPE_BOOL || dot == FX_DTYPE_BOOL)
            return fx_err_setf(err, FX_ETYPE,
                               "Subtraction, the `-` operator, with a bool tensor is not "
                               "supported. If you are trying to invert a mask, use the `~` or "
                               "`logical_not()` operator instead.");
    }

    int rc;
    if (p->inplace) { /* TensorIterator's compute_mem_overlaps */
        if ((rc = fx_check_no_internal_overlap(s->u.t, err))) return rc;
        if (o->tag == FX_IV_TENSOR && (rc = fx_check_no_partial_overlap(s->u.t, o->u.t, err)))
            return rc;
    }

    /* broadcast shape over the tensors (a wrapped number is 0-dim) */
    int ns = s->tag == FX_IV_TENSOR ? s->u.t->ndim : 0;
    int no = o->tag == FX_IV_TENSOR ? o->u.t->ndim : 0;
    const int64_t *ss = s->tag == FX_IV_TENSOR ? s->u.t->sizes : NULL;
    const int64_t *os = o->tag == FX_IV_TENSOR ? o->u.t->sizes : NULL;
    if ((rc = fx_broadcast_shape(ns, ss, no, os, &p->ndim, p->sizes, err))) return rc;
    if (p->inplace && (rc = fx_check_inplace_shape(ns, ss, p->ndim, p->sizes, err))) return rc;

    /* torch.result_type, then the float promotion of true division */
    fx_result_type_state rt;
    fx_result_type_init(&rt);
    const fx_ivalue *ops[2] = {s, o};
    for (int i = 0; i < 2; i++) {
        if (ops[i]->tag == FX_IV_TENSOR)
            fx_result_type_tensor(&rt, ops[i]->u.t->dtype, ops[i]->u.t->ndim);
        else
            fx_result_type_scalar(&rt, ops[i]->tag == FX_IV_BOOL  ? 0
                                       : ops[i]->tag == FX_IV_INT ? 1
                                                                  : 2);
    }
    p->compute = fx_result_type_get(&rt);
    if (p->op == FX_BINOP_DIV && !fx_dtype_is_float(p->compute) &&
        !fx_dtype_is_complex(p->compute))
        p->compute = FX_DTYPE_DEFAULT;
    bool pred = FX_BINOP_IS_PREDICATE(p->op);
    p->out_dtype = p->inplace ? s->u.t->dtype : pred ? FX_DTYPE_BOOL : p->compute;
    if (p->inplace && !pred && !fx_can_cast(p->compute, p->out_dtype))
        return fx_err_setf(err, FX_ETYPE,
                           "result type %s can't be cast to the desired output type %s",
                           fx_dtype_c10_name(p->compute), fx_dtype_c10_name(p->out_dtype));

    const char *kname = unsupported_kernel(p->op, p->compute);
    if (kname)
        return fx_err_setf(err, FX_ETYPE, "\"%s\" not implemented for '%s'", kname,
                           fx_dtype_c10_name(p->compute));
    if (p->scalar_exp && !fx_dtype_is_float(s->u.t->dtype) && !fx_dtype_is_complex(s->u.t->dtype) &&
        o->tag == FX_IV_INT && o->u.i < 0)
        return fx_err_setf(err, FX_EARG, "Integers to negative integer powers are not allowed.");

    if (p->alpha) { /* alpha_check */
        if (p->alpha->tag == FX_IV_BOOL && p->compute != FX_DTYPE_BOOL)
            return fx_err_setf(err, FX_ETYPE, "Boolean alpha only supported for Boolean results.");
        if (!fx_dtype_is_float(p->compute) && !fx_dtype_is_complex(p->compute) &&
            p->alpha->tag == FX_IV_FLOAT)
            return fx_err_setf(err, FX_ETYPE,
                               "For integral input tensors, argument alpha must not be a floating "
                               "point number.");
    }
    return FX_OK;
}

const char *fx_typemeta_name(fx_dtype dt) {
    switch (dt) {
    case FX_DTYPE_F32: return "float";
    case FX_DTYPE_F64: return "double";
    case FX_DTYPE_F16: return "c10::Half";
    case FX_DTYPE_BF16: return "c10::BFloat16";
    case FX_DTYPE_I64: return "long int";
    case FX_DTYPE_I32: return "int";
    case FX_DTYPE_I16: return "short int";
    case FX_DTYPE_I8: return "signed char";
    case FX_DTYPE_U8: return "unsigned char";
    case FX_DTYPE_C64: return "c10::complex<float>";
    case FX_DTYPE_C128: return "c10::complex<double>";
    default: return "bool";
    }
}
