/* tests/unit/test_binary_ext.c — the binary ops of issue 3: pow remainder floor_divide maximum
 * minimum, comparisons eq ne lt le gt ge, logical_and/or/xor, bitwise_and/or/xor, shifts,
 * rsub — every overload (Tensor, Scalar, Scalar_Tensor) and in-place twin against the naive
 * references of k_ref.c over every dtype pair and memory layout, broadcasting, wrapped numbers,
 * the dtype refusals and error messages, and the threaded path.
 * Layer: tests (cmocka). */
#include "tests/unit/ka_util.h"

#include <omp.h>

typedef struct binop_case {
    fx_op_id tt, ts, st, tt_, ts_; /* Tensor, Scalar, Scalar_Tensor, in-place forms (or -1) */
    fx_ref_binop2 rop;
    bool pred;
    const char *name;
} binop_case;

#define NO FX_OP_NONE
static const binop_case k_ops[] = {
    {FX_OP_POW_TENSOR_TENSOR, FX_OP_POW_TENSOR_SCALAR, FX_OP_POW_SCALAR, FX_OP_POW__TENSOR,
     FX_OP_POW__SCALAR, FX_REF_POW, false, "pow"},
    {FX_OP_REMAINDER_TENSOR, FX_OP_REMAINDER_SCALAR, FX_OP_REMAINDER_SCALAR_TENSOR,
     FX_OP_REMAINDER__TENSOR, FX_OP_REMAINDER__SCALAR, FX_REF_REM, false, "remainder"},
    {FX_OP_MAXIMUM, NO, NO, NO, NO, FX_REF_MAX, false, "maximum"},
    {FX_OP_MINIMUM, NO, NO, NO, NO, FX_REF_MIN, false, "minimum"},
    {FX_OP_EQ_TENSOR, FX_OP_EQ_SCALAR, NO, FX_OP_EQ__TENSOR, FX_OP_EQ__SCALAR, FX_REF_EQ, true, "eq"},
    {FX_OP_NE_TENSOR, FX_OP_NE_SCALAR, NO, FX_OP_NE__TENSOR, FX_OP_NE__SCALAR, FX_REF_NE, true, "ne"},
    {FX_OP_LT_TENSOR, FX_OP_LT_SCALAR, NO, FX_OP_LT__TENSOR, FX_OP_LT__SCALAR, FX_REF_LT, true, "lt"},
    {FX_OP_LE_TENSOR, FX_OP_LE_SCALAR, NO, FX_OP_LE__TENSOR, FX_OP_LE__SCALAR, FX_REF_LE, true, "le"},
    {FX_OP_GT_TENSOR, FX_OP_GT_SCALAR, NO, FX_OP_GT__TENSOR, FX_OP_GT__SCALAR, FX_REF_GT, true, "gt"},
    {FX_OP_GE_TENSOR, FX_OP_GE_SCALAR, NO, FX_OP_GE__TENSOR, FX_OP_GE__SCALAR, FX_REF_GE, true, "ge"},
    {FX_OP_LOGICAL_AND, NO, NO, FX_OP_LOGICAL_AND_, NO, FX_REF_LAND, true, "logical_and"},
    {FX_OP_LOGICAL_OR, NO, NO, FX_OP_LOGICAL_OR_, NO, FX_REF_LOR, true, "logical_or"},
    {FX_OP_LOGICAL_XOR, NO, NO, FX_OP_LOGICAL_XOR_, NO, FX_REF_LXOR, true, "logical_xor"},
    {FX_OP_BITWISE_AND_TENSOR, FX_OP_BITWISE_AND_SCALAR, FX_OP_BITWISE_AND_SCALAR_TENSOR,
     FX_OP_BITWISE_AND__TENSOR, FX_OP_BITWISE_AND__SCALAR, FX_REF_BAND, false, "bitwise_and"},
    {FX_OP_BITWISE_OR_TENSOR, FX_OP_BITWISE_OR_SCALAR, FX_OP_BITWISE_OR_SCALAR_TENSOR,
     FX_OP_BITWISE_OR__TENSOR, FX_OP_BITWISE_OR__SCALAR, FX_REF_BOR, false, "bitwise_or"},
    {FX_OP_BITWISE_XOR_TENSOR, FX_OP_BITWISE_XOR_SCALAR, FX_OP_BITWISE_XOR_SCALAR_TENSOR,
     FX_OP_BITWISE_XOR__TENSOR, FX_OP_BITWISE_XOR__SCALAR, FX_REF_BXOR, false, "bitwise_xor"},
    {FX_OP_BITWISE_LEFT_SHIFT_TENSOR, FX_OP_BITWISE_LEFT_SHIFT_TENSOR_SCALAR,
     FX_OP_BITWISE_LEFT_SHIFT_SCALAR_TENSOR, FX_OP_BITWISE_LEFT_SHIFT__TENSOR,
     FX_OP_BITWISE_LEFT_SHIFT__TENSOR_SCALAR, FX_REF_SHL, false, "bitwise_left_shift"},
    {FX_OP_DUNDER_RSHIFT_TENSOR, FX_OP_DUNDER_RSHIFT_SCALAR, FX_OP_BITWISE_RIGHT_SHIFT_SCALAR_TENSOR,
     FX_OP_DUNDER_IRSHIFT_TENSOR, FX_OP_DUNDER_IRSHIFT_SCALAR, FX_REF_SHR, false, "__rshift__"},
};
#define NOPS (int)(sizeof k_ops / sizeof k_ops[0])

/* torch.result_type of the operands (the foundation's, independent of the kernels' plan). */
static fx_dtype expected_compute(const fx_ivalue *a, const fx_ivalue *b) {
    fx_result_type_state s;
    fx_result_type_init(&s);
    const fx_ivalue *v[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (v[i]->tag == FX_IV_TENSOR) fx_result_type_tensor(&s, v[i]->u.t->dtype, v[i]->u.t->ndim);
        else fx_result_type_scalar(&s, v[i]->tag == FX_IV_BOOL ? 0 : v[i]->tag == FX_IV_INT ? 1 : 2);
    }
    return fx_result_type_get(&s);
}

/* Would PyTorch refuse op on compute dtype c (its CPU kernel does not dispatch it)? */
static bool refused(const binop_case *op, fx_dtype c) {
    bool fp = fx_dtype_is_float(c), b = c == FX_DTYPE_BOOL;
    switch (op->rop) {
    case FX_REF_REM:
    case FX_REF_POW: return b;
    case FX_REF_BAND:
    case FX_REF_BOR:
    case FX_REF_BXOR: return fp;
    case FX_REF_SHL:
    case FX_REF_SHR: return fp || b;
    default: return false;
    }
}

/* remainder of integers by zero raises; the sweeps draw nonzero divisors */
static bool op_needs_nonzero(fx_ref_binop2 rop) { return rop == FX_REF_REM; }

/* Runs form `id` on (a, b) and compares with the reference; 1 when they agree or PyTorch
 * refuses (then an error is required). */
static int run_case(const binop_case *op, fx_op_id id, const fx_ivalue *a, const fx_ivalue *b,
                    const char *what) {
    fx_err err;
    fx_dtype c = expected_compute(a, b);
    fx_tensor *got;
    int rc = ka_call(id, &got, &err, 2, a, b);
    bool zero_div = false;
    if (op->rop == FX_REF_REM && !fx_dtype_is_float(c) && rc && !strcmp(err.msg, "ZeroDivisionError"))
        zero_div = true;
    if (refused(op, c) || zero_div) {
        if (rc == FX_OK) {
            printf("%s: expected an error for %s\n", what, fx_dtype_name(c));
            fx_tensor_release(got);
            return 0;
        }
        return 1;
    }
    if (rc) {
        printf("%s: unexpected error %s\n", what, err.msg);
        return 0;
    }
    fx_dtype od = op->pred ? FX_DTYPE_BOOL : c;
    fx_tensor *exp = ka_empty(od, got->ndim, got->sizes);
    fx_ref_binary2(op->rop, c, a, b, exp);
    int ok = ka_close(got, exp, ka_rtol(od), od == FX_DTYPE_F32 ? 1e-6 : 0, what);
    fx_tensor_release(got);
    fx_tensor_release(exp);
    return ok;
}

/* Tensor forms: every op x every dtype pair x every layout, shape (3, 4). */
static void test_binary_ext_dtypes_layouts(void **state) {
    (void)state;
    int64_t sz[2] = {3, 4};
    int bad = 0;
    for (int o = 0; o < NOPS; o++)
        for (int i = 0; i < KA_NDTYPES; i++)
            for (int j = 0; j < KA_NDTYPES; j++)
                for (int l = 0; l < KA_NLAYOUTS; l++) {
                    fx_dtype da = ka_all_dtypes[i], db = ka_all_dtypes[j];
                    bool nz = op_needs_nonzero(k_ops[o].rop);
                    fx_ivalue a = fx_iv_tensor_steal(ka_make(da, l, 2, sz, 0));
                    fx_ivalue b = fx_iv_tensor_steal(ka_make(db, (l + 1) % KA_NLAYOUTS, 2, sz, nz));
                    char what[128];
                    snprintf(what, sizeof what, "%s %s %s %s", k_ops[o].name, fx_dtype_name(da),
                             fx_dtype_name(db), ka_layout_names[l]);
                    bad += !run_case(&k_ops[o], k_ops[o].tt, &a, &b, what);
                    fx_ivalue_clear(&a);
                    fx_ivalue_clear(&b);
                }
    assert_int_equal(bad, 0);
}

/* Broadcasting: (3,1) x (1,4), (2,3,4) x (4,), (4,) x (2,3,4), 0-dim x (3,). */
static void test_binary_ext_broadcast(void **state) {
    (void)state;
    static const int64_t shapes[][2][3] = {{{3, 1, 0}, {1, 4, 0}}, {{2, 3, 4}, {4, 0, 0}},
                                           {{4, 0, 0}, {2, 3, 4}}, {{0, 0, 0}, {3, 0, 0}}};
    static const int nd[][2] = {{2, 2}, {3, 1}, {1, 3}, {0, 1}};
    static const fx_dtype dts[] = {FX_DTYPE_F32, FX_DTYPE_I32, FX_DTYPE_U8, FX_DTYPE_F16,
                                   FX_DTYPE_I64, FX_DTYPE_BOOL};
    int bad = 0;
    for (int o = 0; o < NOPS; o++)
        for (int s = 0; s < 4; s++)
            for (int i = 0; i < 6; i++)
                for (int l = 0; l < KA_NLAYOUTS; l++) {
                    fx_dtype da = dts[i], db = dts[(i + s + 1) % 6];
                    bool nz = op_needs_nonzero(k_ops[o].rop);
                    fx_ivalue a = fx_iv_tensor_steal(ka_make(da, l, nd[s][0], shapes[s][0], 0));
                    fx_ivalue b = fx_iv_tensor_steal(ka_make(db, KA_SLICED, nd[s][1], shapes[s][1], nz));
                    char what[128];
                    snprintf(what, sizeof what, "%s broadcast %d %s", k_ops[o].name, s,
                             ka_layout_names[l]);
                    bad += !run_case(&k_ops[o], k_ops[o].tt, &a, &b, what);
                    fx_ivalue_clear(&a);
                    fx_ivalue_clear(&b);
                }
    assert_int_equal(bad, 0);
}

/* Wrapped numbers: the Scalar overloads (tensor, scalar), the Scalar_Tensor overloads
 * (scalar, tensor), and the Tensor overloads given a number, every dtype. */
static void test_binary_ext_scalars(void **state) {
    (void)state;
    int64_t sz[2] = {2, 5};
    const fx_ivalue scalars[] = {fx_iv_int(3),         fx_iv_int(-7),  fx_iv_float(2.5),
                                 fx_iv_float(-1.0 / 3), fx_iv_bool(true), fx_iv_int(0)};
    int bad = 0;
    for (int o = 0; o < NOPS; o++)
        for (int i = 0; i < KA_NDTYPES; i++)
            for (int k = 0; k < 6; k++) {
                fx_dtype dt = ka_all_dtypes[i];
                const fx_ivalue *sc = &scalars[k];
                /* integer pow to a negative number is an error, checked elsewhere */
                bool negpow = k_ops[o].rop == FX_REF_POW && sc->tag == FX_IV_INT && sc->u.i < 0 &&
                              !fx_dtype_is_float(dt);
                fx_ivalue tv = fx_iv_tensor_steal(ka_make(dt, KA_TRANSPOSED, 2, sz, 1));
                char what[128];
                if (k_ops[o].ts != NO && !negpow) {
                    snprintf(what, sizeof what, "%s.Scalar %s %d", k_ops[o].name,
                             fx_dtype_name(dt), k);
                    bad += !run_case(&k_ops[o], k_ops[o].ts, &tv, sc, what);
                }
                if (k_ops[o].st != NO) {
                    snprintf(what, sizeof what, "%s.Scalar_Tensor %s %d", k_ops[o].name,
                             fx_dtype_name(dt), k);
                    bad += !run_case(&k_ops[o], k_ops[o].st, sc, &tv, what);
                }
                if (!negpow || k_ops[o].rop != FX_REF_POW) {
                    snprintf(what, sizeof what, "%s.Tensor(number) %s %d", k_ops[o].name,
                             fx_dtype_name(dt), k);
                    if (k_ops[o].rop != FX_REF_POW) bad += !run_case(&k_ops[o], k_ops[o].tt, &tv, sc, what);
                }
                fx_ivalue_clear(&tv);
            }
    assert_int_equal(bad, 0);
}

/* In place: self (contiguous, transposed, sliced) op= other (expanded), results cast back into
 * self's dtype where PyTorch allows it (predicates always), refused otherwise. */
static void test_binary_ext_inplace(void **state) {
    (void)state;
    int64_t sz[2] = {3, 4};
    int bad = 0;
    for (int o = 0; o < NOPS; o++) {
        if (k_ops[o].tt_ == NO) continue;
        for (int i = 0; i < KA_NDTYPES; i++)
            for (int j = 0; j < KA_NDTYPES; j++) {
                fx_dtype ds = ka_all_dtypes[i], dot = ka_all_dtypes[j];
                bool nz = op_needs_nonzero(k_ops[o].rop);
                fx_tensor *self = ka_make(ds, (i + j) % 3, 2, sz, 0);
                fx_ivalue sv = fx_iv_tensor(self);
                fx_ivalue ov = fx_iv_tensor_steal(ka_make(dot, KA_EXPANDED, 2, sz, nz));
                fx_dtype c = expected_compute(&sv, &ov);
                bool castable = k_ops[o].pred || (!(fx_dtype_is_float(c) && !fx_dtype_is_float(ds)) &&
                                                  !(c != FX_DTYPE_BOOL && ds == FX_DTYPE_BOOL));
                fx_tensor *exp = ka_empty(ds, 2, sz);
                fx_ref_binary2(k_ops[o].rop, c, &sv, &ov, exp);
                fx_err err;
                fx_tensor *res;
                int rc = ka_call(k_ops[o].tt_, &res, &err, 2, &sv, &ov);
                char what[128];
                snprintf(what, sizeof what, "%s_ %s %s", k_ops[o].name, fx_dtype_name(ds),
                         fx_dtype_name(dot));
                if (!castable || refused(&k_ops[o], c)) {
                    if (rc == FX_OK) bad++, printf("%s: expected an error\n", what);
                    else fx_tensor_release(res);
                } else if (rc) {
                    printf("%s: %s\n", what, err.msg);
                    bad++;
                } else {
                    bad += res != self;
                    bad += !ka_close(self, exp, ka_rtol(c) + ka_rtol(ds), 1e-6, what);
                    fx_tensor_release(res);
                }
                fx_tensor_release(exp);
                fx_ivalue_clear(&sv), fx_ivalue_clear(&ov);
                fx_tensor_release(self);
            }
    }
    assert_int_equal(bad, 0);
}

/* pow with the exponents pow_tensor_scalar_kernel special-cases (and some it does not), on
 * every floating dtype and the integers. */
static void test_pow_scalar_exponents(void **state) {
    (void)state;
    int64_t sz[2] = {4, 6};
    const double exps[] = {0.5, -0.5, -1, 2, 3, -2, 1.7, 0, 1, -3.25};
    int bad = 0;
    for (int i = 0; i < KA_NDTYPES; i++)
        for (size_t k = 0; k < sizeof exps / sizeof exps[0]; k++) {
            fx_dtype dt = ka_all_dtypes[i];
            fx_ivalue e = exps[k] == (double)(int64_t)exps[k] ? fx_iv_int((int64_t)exps[k])
                                                                : fx_iv_float(exps[k]);
            if (!fx_dtype_is_float(dt) && e.tag == FX_IV_INT && e.u.i < 0) continue;
            fx_ivalue x = fx_iv_tensor_steal(ka_make(dt, KA_SLICED, 2, sz, 1));
            char what[96];
            snprintf(what, sizeof what, "pow %s ^ %g", fx_dtype_name(dt), exps[k]);
            bad += !run_case(&k_ops[0], FX_OP_POW_TENSOR_SCALAR, &x, &e, what);
            fx_ivalue_clear(&x);
        }
    assert_int_equal(bad, 0);
}

/* Error messages, as PyTorch words them. */
static void test_binary_ext_errors(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t n = 3, n4 = 4;
    double zi[] = {1, 0, 2};
    fx_ivalue b = fx_iv_tensor_steal(ka_make(FX_DTYPE_BOOL, KA_CONTIG, 1, &n, 0));
    fx_ivalue i = fx_iv_tensor_steal(ka_make(FX_DTYPE_I64, KA_CONTIG, 1, &n, 1));
    fx_ivalue z = fx_iv_tensor_steal(ka_from(FX_DTYPE_I32, 1, &n, zi));
    fx_ivalue f = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &n, 0));
    fx_ivalue f4 = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &n4, 0));
    fx_ivalue m1 = fx_iv_int(-1), two = fx_iv_int(2), zero = fx_iv_int(0), half = fx_iv_float(1.5);
    KA_ERR("Integers to negative integer powers are not allowed.",
           ka_call(FX_OP_POW_TENSOR_SCALAR, &r, &err, 2, &i, &m1));
    KA_ERR("Integers to negative integer powers are not allowed.",
           ka_call(FX_OP_POW__SCALAR, &r, &err, 2, &i, &m1));
    KA_ERR("\"pow\" not implemented for 'Bool'", ka_call(FX_OP_POW_TENSOR_TENSOR, &r, &err, 2, &b, &b));
    KA_ERR("\"remainder_cpu\" not implemented for 'Bool'",
           ka_call(FX_OP_REMAINDER_TENSOR, &r, &err, 2, &b, &b));
    KA_ERR("ZeroDivisionError", ka_call(FX_OP_REMAINDER_SCALAR, &r, &err, 2, &i, &zero));
    KA_ERR("ZeroDivisionError", ka_call(FX_OP_REMAINDER_TENSOR, &r, &err, 2, &i, &z));
    KA_ERR("ZeroDivisionError", ka_call(FX_OP_REMAINDER_SCALAR_TENSOR, &r, &err, 2, &two, &z));
    KA_ERR("ZeroDivisionError", ka_call(FX_OP_FLOOR_DIVIDE, &r, &err, 2, &i, &z));
    KA_ERR("\"div_floor_cpu\" not implemented for 'Bool'",
           ka_call(FX_OP_FLOOR_DIVIDE, &r, &err, 2, &b, &b));
    KA_ERR("\"bitwise_and_cpu\" not implemented for 'Float'",
           ka_call(FX_OP_BITWISE_AND_TENSOR, &r, &err, 2, &f, &f));
    KA_ERR("\"bitwise_and_cpu\" not implemented for 'Float'",
           ka_call(FX_OP_BITWISE_AND_SCALAR, &r, &err, 2, &i, &half));
    KA_ERR("\"bitwise_xor_cpu\" not implemented for 'Float'",
           ka_call(FX_OP_BITWISE_XOR_TENSOR, &r, &err, 2, &b, &f));
    KA_ERR("\"lshift_cpu\" not implemented for 'Float'",
           ka_call(FX_OP_BITWISE_LEFT_SHIFT_TENSOR_SCALAR, &r, &err, 2, &f, &two));
    KA_ERR("\"rshift_cpu\" not implemented for 'Bool'",
           ka_call(FX_OP_DUNDER_RSHIFT_TENSOR, &r, &err, 2, &b, &b));
    KA_ERR("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
           "to invert a mask, use the `~` or `logical_not()` operator instead.",
           ka_call(FX_OP_RSUB_SCALAR, &r, &err, 2, &b, &two));
    KA_ERR("result type Float can't be cast to the desired output type Long",
           ka_call(FX_OP_POW__TENSOR, &r, &err, 2, &i, &f));
    KA_ERR("The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
           "dimension 0",
           ka_call(FX_OP_MAXIMUM, &r, &err, 2, &f, &f4));
    int64_t s43[2] = {4, 3};
    fx_ivalue big = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 2, s43, 0));
    KA_ERR("output with shape [3] doesn't match the broadcast shape [4, 3]",
           ka_call(FX_OP_EQ__TENSOR, &r, &err, 2, &f, &big));
    fx_ivalue *all[] = {&b, &i, &z, &f, &f4, &big};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fx_ivalue_clear(all[k]);
}

/* Values PyTorch gives (torch 1.13 on this machine): Python modulo signs, floor division of
 * negatives, integer powers with negative exponents, NaN through maximum, shifts past the
 * width, comparisons of mixed dtypes, rsub. */
static void test_binary_ext_known(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t n4 = 4, n3 = 3, n2 = 2;
    double iv[] = {-7, 7, -8, 5}, dv[] = {3, -3, 5, -2};
    fx_ivalue x = fx_iv_tensor_steal(ka_from(FX_DTYPE_I64, 1, &n4, iv));
    fx_ivalue d = fx_iv_tensor_steal(ka_from(FX_DTYPE_I64, 1, &n4, dv));
    assert_int_equal(ka_call(FX_OP_REMAINDER_TENSOR, &r, &err, 2, &x, &d), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 2, -2,  2, -1])"); /* torch.remainder */
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_FLOOR_DIVIDE, &r, &err, 2, &x, &d), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([-3, -3, -2, -3])");
    fx_tensor_release(r);
    double fv[] = {-7.5, 7.5, -0.5, 5.25};
    fx_ivalue f = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n4, fv));
    fx_ivalue two = fx_iv_int(2), m2 = fx_iv_float(-2.0);
    assert_int_equal(ka_call(FX_OP_REMAINDER_SCALAR, &r, &err, 2, &f, &m2), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([-1.5000, -0.5000, -0.5000, -0.7500])");
    fx_tensor_release(r);
    /* -7 % x (remainder.Scalar_Tensor) and 2 ** x (pow.Scalar) on ints */
    double pv[] = {1, -1, 2, 0};
    fx_ivalue p = fx_iv_tensor_steal(ka_from(FX_DTYPE_I64, 1, &n4, pv));
    fx_ivalue m3 = fx_iv_int(-3);
    assert_int_equal(ka_call(FX_OP_POW_SCALAR, &r, &err, 2, &two, &p), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([2, 0, 4, 1])"); /* 2 ** -1 -> 0 for integers */
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_POW_TENSOR_TENSOR, &r, &err, 2, &p, &m3 /* number */), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 1, -1,  0,  0])"); /* powi: 1, -1, else 0 */
    fx_tensor_release(r);
    fx_ivalue fl = fx_iv_float(2.5);
    assert_int_equal(ka_call(FX_OP_POW_SCALAR, &r, &err, 2, &fl, &p), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([2.5000, 0.4000, 6.2500, 1.0000])");
    fx_tensor_release(r);
    double nv[] = {1, NAN, -3}, mv[] = {2, 0, NAN};
    fx_ivalue a = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n3, nv));
    fx_ivalue b = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n3, mv));
    assert_int_equal(ka_call(FX_OP_MAXIMUM, &r, &err, 2, &a, &b), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([2., nan, nan])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_NE_TENSOR, &r, &err, 2, &a, &a), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([False,  True, False])"); /* NaN != NaN */
    fx_tensor_release(r);
    double sv[] = {1, -2};
    fx_ivalue s = fx_iv_tensor_steal(ka_from(FX_DTYPE_I64, 1, &n2, sv));
    fx_ivalue s70 = fx_iv_int(70), s63 = fx_iv_int(63), s1 = fx_iv_int(1);
    assert_int_equal(ka_call(FX_OP_BITWISE_LEFT_SHIFT_TENSOR_SCALAR, &r, &err, 2, &s, &s70), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([0, 0])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_DUNDER_RSHIFT_SCALAR, &r, &err, 2, &s, &s70), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 0, -1])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_DUNDER_LSHIFT_SCALAR, &r, &err, 2, &s, &s63), FX_OK);
    assert_true(((int64_t *)fx_tensor_data(r))[0] == INT64_MIN);
    fx_tensor_release(r);
    /* int8 shifts work on 8 bits: 1 << 7 is -128, -128 >> 1 is -64 */
    double bv8[] = {1, -128};
    fx_ivalue b8 = fx_iv_tensor_steal(ka_from(FX_DTYPE_I8, 1, &n2, bv8)), s7 = fx_iv_int(7);
    assert_int_equal(ka_call(FX_OP_BITWISE_LEFT_SHIFT_TENSOR_SCALAR, &r, &err, 2, &b8, &s7), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([-128,    0], dtype=torch.int8)");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_BITWISE_RIGHT_SHIFT_TENSOR_SCALAR, &r, &err, 2, &b8, &s1), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([  0, -64], dtype=torch.int8)");
    fx_tensor_release(r);
    /* int tensor == 1.5 compares in float32; int64 < bool tensor */
    fx_ivalue h = fx_iv_float(1.5);
    assert_int_equal(ka_call(FX_OP_LT_SCALAR, &r, &err, 2, &x, &h), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ True, False,  True, False])");
    fx_tensor_release(r);
    /* rsub: 2 - x, and alpha: 10 - 3 * x */
    fx_ivalue ten = fx_iv_int(10), three = fx_iv_int(3);
    assert_int_equal(ka_call(FX_OP_RSUB_SCALAR, &r, &err, 2, &x, &two), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 9, -5, 10, -3])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_RSUB_SCALAR, &r, &err, 3, &x, &ten, &three), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 31, -11,  34,  -5])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_RSUB_TENSOR, &r, &err, 2, &x, &d), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 10, -10,  13,  -7])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_RSUB_SCALAR, &r, &err, 2, &x, &fl), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 9.5000, -4.5000, 10.5000, -2.5000])");
    fx_tensor_release(r);
    /* eq_ into an int64 self writes 0/1; logical_and_ likewise */
    fx_ivalue xc = fx_iv_tensor_steal(ka_from(FX_DTYPE_I64, 1, &n4, iv));
    fx_ivalue m8 = fx_iv_int(-8);
    assert_int_equal(ka_call(FX_OP_EQ__SCALAR, &r, &err, 2, &xc, &m8), FX_OK);
    assert_string_equal(ka_repr(xc.u.t), "tensor([0, 0, 1, 0])");
    fx_tensor_release(r);
    fx_ivalue *all[] = {&x, &d, &f, &p, &a, &b, &s, &b8, &xc};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fx_ivalue_clear(all[k]);
}

/* Threads: a large broadcast comparison and pow agree with one thread bit for bit. */
static void test_binary_ext_threads(void **state) {
    (void)state;
    int64_t sa[2] = {513, 257}, sb[1] = {257};
    fx_ivalue a = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_TRANSPOSED, 2, sa, 0));
    fx_ivalue b = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_SLICED, 1, sb, 1));
    const fx_op_id ops[] = {FX_OP_POW_TENSOR_TENSOR, FX_OP_GE_TENSOR, FX_OP_REMAINDER_TENSOR};
    for (int o = 0; o < 3; o++) {
        fx_err err;
        fx_tensor *r1, *r2;
        omp_set_num_threads(1);
        assert_int_equal(ka_call(ops[o], &r1, &err, 2, &a, &b), FX_OK);
        omp_set_num_threads(4);
        assert_int_equal(ka_call(ops[o], &r2, &err, 2, &a, &b), FX_OK);
        omp_set_num_threads(omp_get_num_procs());
        int64_t n = fx_tensor_numel(r1) * (int64_t)fx_dtype_size(r1->dtype);
        assert_int_equal(memcmp(fx_tensor_data(r1), fx_tensor_data(r2), (size_t)n), 0);
        fx_tensor_release(r1), fx_tensor_release(r2);
    }
    fx_ivalue_clear(&a), fx_ivalue_clear(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary_ext_dtypes_layouts),
        cmocka_unit_test(test_binary_ext_broadcast),
        cmocka_unit_test(test_binary_ext_scalars),
        cmocka_unit_test(test_binary_ext_inplace),
        cmocka_unit_test(test_pow_scalar_exponents),
        cmocka_unit_test(test_binary_ext_errors),
        cmocka_unit_test(test_binary_ext_known),
        cmocka_unit_test(test_binary_ext_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
