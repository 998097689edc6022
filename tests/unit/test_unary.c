/* tests/unit/test_unary.c — the unary pointwise ops (abs exp log log1p sqrt rsqrt sin cos tanh
 * sigmoid relu gelu silu reciprocal logical_not bitwise_not, and their in-place twins) against
 * the naive references of k_ref.c over every dtype and memory layout, the dtype rules
 * (integers promote to float32 for the float-only ops), every error message, and the
 * threaded path (bit-identical to one thread).
 * Layer: tests (cmocka). */
#include "tests/unit/ka_util.h"

#include <omp.h>

enum { K_FLOAT, K_SAME, K_FLOAT_ONLY, K_BITS, K_LOGICAL, K_ALL };

typedef struct unop_case {
    fx_op_id id, id_;
    fx_ref_unop rop;
    int kind;
    const char *approximate; /* gelu's argument, or NULL */
    const char *name;
} unop_case;

static const unop_case k_ops[] = {
    {FX_OP_EXP, FX_OP_EXP_, FX_REF_EXP, K_FLOAT, NULL, "exp"},
    {FX_OP_LOG, FX_OP_LOG_, FX_REF_LOG, K_FLOAT, NULL, "log"},
    {FX_OP_LOG1P, FX_OP_LOG1P_, FX_REF_LOG1P, K_FLOAT, NULL, "log1p"},
    {FX_OP_SQRT, FX_OP_SQRT_, FX_REF_SQRT, K_FLOAT, NULL, "sqrt"},
    {FX_OP_RSQRT, FX_OP_RSQRT_, FX_REF_RSQRT, K_FLOAT, NULL, "rsqrt"},
    {FX_OP_SIN, FX_OP_SIN_, FX_REF_SIN, K_FLOAT, NULL, "sin"},
    {FX_OP_COS, FX_OP_COS_, FX_REF_COS, K_FLOAT, NULL, "cos"},
    {FX_OP_TANH, FX_OP_TANH_, FX_REF_TANH, K_FLOAT, NULL, "tanh"},
    {FX_OP_SIGMOID, FX_OP_SIGMOID_, FX_REF_SIGMOID, K_FLOAT, NULL, "sigmoid"},
    {FX_OP_RECIPROCAL, FX_OP_RECIPROCAL_, FX_REF_RECIP, K_FLOAT, NULL, "reciprocal"},
    {FX_OP_ABS, FX_OP_ABS_, FX_REF_ABS, K_SAME, NULL, "abs"},
    {FX_OP_RELU, FX_OP_RELU_, FX_REF_RELU, K_SAME, NULL, "relu"},
    {FX_OP_GELU, FX_OP_GELU_, FX_REF_GELU, K_FLOAT_ONLY, NULL, "gelu"},
    {FX_OP_GELU, FX_OP_GELU_, FX_REF_GELU_TANH, K_FLOAT_ONLY, "tanh", "gelu_tanh"},
    {FX_OP_SILU, FX_OP_SILU_, FX_REF_SILU, K_FLOAT_ONLY, NULL, "silu"},
    {FX_OP_BITWISE_NOT, FX_OP_BITWISE_NOT_, FX_REF_BNOT, K_BITS, NULL, "bitwise_not"},
    {FX_OP_LOGICAL_NOT, FX_OP_LOGICAL_NOT_, FX_REF_LNOT, K_LOGICAL, NULL, "logical_not"},
    {FX_OP_SIGN, FX_OP_SIGN_, FX_REF_SIGN, K_ALL, NULL, "sign"},
    {FX_OP_FLOOR, FX_OP_FLOOR_, FX_REF_FLOOR_U, K_SAME, NULL, "floor"},
    {FX_OP_CEIL, FX_OP_CEIL_, FX_REF_CEIL_U, K_SAME, NULL, "ceil"},
    {FX_OP_TRUNC, FX_OP_TRUNC_, FX_REF_TRUNC_U, K_SAME, NULL, "trunc"},
    {FX_OP_ROUND, FX_OP_ROUND_, FX_REF_ROUND, K_SAME, NULL, "round"},
    {FX_OP_ERF, FX_OP_ERF_, FX_REF_ERF, K_FLOAT, NULL, "erf"},
    {FX_OP_EXPM1, FX_OP_EXPM1_, FX_REF_EXPM1, K_FLOAT, NULL, "expm1"},
};
#define NOPS (int)(sizeof k_ops / sizeof k_ops[0])

/* Does PyTorch run op on dtype dt (else it raises)? */
static bool supported(const unop_case *op, fx_dtype dt) {
    switch (op->kind) {
    case K_SAME: return dt != FX_DTYPE_BOOL;
    case K_FLOAT_ONLY: return fx_dtype_is_float(dt);
    case K_BITS: return !fx_dtype_is_float(dt);
    default: return true;
    }
}

/* The result dtype of the functional op. */
static fx_dtype result_dtype(const unop_case *op, fx_dtype dt) {
    if (op->kind == K_LOGICAL) return FX_DTYPE_BOOL;
    if (op->kind == K_FLOAT && !fx_dtype_is_float(dt)) return FX_DTYPE_F32;
    return dt;
}

static int call_op(const unop_case *op, bool inplace, fx_ivalue *x, fx_tensor **r, fx_err *err) {
    fx_ivalue ap = op->approximate ? fx_iv_str(op->approximate) : fx_iv_none();
    int rc = op->approximate ? ka_call(inplace ? op->id_ : op->id, r, err, 2, x, &ap)
                             : ka_call(inplace ? op->id_ : op->id, r, err, 1, x);
    fx_ivalue_clear(&ap);
    return rc;
}

/* op(x) against the reference; 1 when equal within the dtype's tolerance. */
static int check_functional(const unop_case *op, fx_tensor *x, const char *what) {
    fx_err err;
    fx_ivalue xv = fx_iv_tensor(x);
    fx_tensor *got;
    int rc = call_op(op, false, &xv, &got, &err);
    fx_ivalue_clear(&xv);
    if (rc) {
        printf("%s: unexpected error %s\n", what, err.msg);
        return 0;
    }
    fx_dtype od = result_dtype(op, x->dtype);
    fx_tensor *exp = ka_empty(od, x->ndim, x->sizes);
    fx_ref_unary(op->rop, x, exp);
    int ok = ka_close(got, exp, ka_rtol(od), od == FX_DTYPE_F32 ? 1e-6 : ka_rtol(od) * 0.01, what);
    fx_tensor_release(got);
    fx_tensor_release(exp);
    return ok;
}

/* Every op x every dtype x every layout: values, dtypes, and the refusals. */
static void test_unary_dtypes_layouts(void **state) {
    (void)state;
    int64_t sz[2] = {3, 5};
    int bad = 0, n = 0;
    for (int o = 0; o < NOPS; o++)
        for (int i = 0; i < KA_NDTYPES; i++)
            for (int l = 0; l < KA_NLAYOUTS; l++) {
                fx_dtype dt = ka_all_dtypes[i];
                fx_tensor *x = ka_make(dt, l, 2, sz, 0);
                char what[128];
                snprintf(what, sizeof what, "%s %s %s", k_ops[o].name, fx_dtype_name(dt),
                         ka_layout_names[l]);
                if (supported(&k_ops[o], dt)) {
                    bad += !check_functional(&k_ops[o], x, what);
                    n++;
                } else {
                    fx_err err;
                    fx_ivalue xv = fx_iv_tensor(x);
                    fx_tensor *r;
                    if (call_op(&k_ops[o], false, &xv, &r, &err) == FX_OK) {
                        printf("%s: expected an error\n", what);
                        bad++;
                        fx_tensor_release(r);
                    }
                    fx_ivalue_clear(&xv);
                }
                fx_tensor_release(x);
            }
    assert_int_equal(bad, 0);
    assert_true(n > 500);
}

/* Shapes: 0-dim, empty, 1-d of odd length, a 4-d permuted view. */
static void test_unary_shapes(void **state) {
    (void)state;
    int bad = 0;
    int64_t s0[1] = {1}, se[2] = {0, 3}, s1[1] = {37}, s4[4] = {2, 3, 4, 5};
    for (int o = 0; o < NOPS; o++) {
        fx_dtype dt = k_ops[o].kind == K_BITS ? FX_DTYPE_I32 : FX_DTYPE_F32;
        fx_tensor *x0 = ka_make(dt, KA_CONTIG, 0, s0, 0);
        fx_tensor *xe = ka_make(dt, KA_CONTIG, 2, se, 0);
        fx_tensor *x1 = ka_make(dt, KA_SLICED, 1, s1, 0);
        fx_tensor *x4 = ka_make(dt, KA_TRANSPOSED, 4, s4, 0);
        bad += !check_functional(&k_ops[o], x0, "0-dim");
        bad += !check_functional(&k_ops[o], xe, "empty");
        bad += !check_functional(&k_ops[o], x1, "1-d sliced");
        bad += !check_functional(&k_ops[o], x4, "4-d transposed");
        fx_tensor_release(x0), fx_tensor_release(xe), fx_tensor_release(x1), fx_tensor_release(x4);
    }
    assert_int_equal(bad, 0);
}

/* In place: self in several layouts; results written back in self's dtype; integer self of a
 * float-only op refused. */
static void test_unary_inplace(void **state) {
    (void)state;
    int64_t sz[2] = {4, 3};
    int bad = 0;
    for (int o = 0; o < NOPS; o++)
        for (int i = 0; i < KA_NDTYPES; i++) {
            fx_dtype dt = ka_all_dtypes[i];
            if (!supported(&k_ops[o], dt)) continue;
            fx_tensor *x = ka_make(dt, i % 3, 2, sz, 0);
            fx_tensor *exp = ka_empty(dt, 2, sz);
            fx_ref_unary(k_ops[o].rop, x, exp);
            fx_err err;
            fx_ivalue xv = fx_iv_tensor(x);
            fx_tensor *r;
            int rc = call_op(&k_ops[o], true, &xv, &r, &err);
            char what[128];
            snprintf(what, sizeof what, "%s_ %s", k_ops[o].name, fx_dtype_name(dt));
            if (result_dtype(&k_ops[o], dt) != dt && k_ops[o].kind != K_LOGICAL) {
                if (rc == FX_OK) bad++, printf("%s: expected a cast error\n", what);
                else if (!strstr(err.msg, "can't be cast to the desired output type"))
                    bad++, printf("%s: %s\n", what, err.msg);
            } else if (rc) {
                bad++, printf("%s: %s\n", what, err.msg);
            } else {
                bad += r != x;
                bad += !ka_close(x, exp, ka_rtol(dt), dt == FX_DTYPE_F32 ? 1e-6 : 1e-4, what);
                fx_tensor_release(r);
            }
            fx_ivalue_clear(&xv);
            fx_tensor_release(x);
            fx_tensor_release(exp);
        }
    assert_int_equal(bad, 0);
}

/* PyTorch's messages for the refused calls. */
static void test_unary_errors(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t n = 3;
    fx_ivalue b = fx_iv_tensor_steal(ka_make(FX_DTYPE_BOOL, KA_CONTIG, 1, &n, 0));
    fx_ivalue i = fx_iv_tensor_steal(ka_make(FX_DTYPE_I64, KA_CONTIG, 1, &n, 0));
    fx_ivalue f = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &n, 0));
    fx_ivalue bad_ap = fx_iv_str("x");
    KA_ERR("\"abs_cpu\" not implemented for 'Bool'", ka_call(FX_OP_ABS, &r, &err, 1, &b));
    KA_ERR("\"abs_cpu\" not implemented for 'Bool'", ka_call(FX_OP_ABS_, &r, &err, 1, &b));
    KA_ERR("Boolean inputs not supported for relu", ka_call(FX_OP_RELU, &r, &err, 1, &b));
    KA_ERR("\"GeluKernelImpl\" not implemented for 'Long'", ka_call(FX_OP_GELU, &r, &err, 1, &i));
    KA_ERR("approximate argument must be either none or tanh.",
           ka_call(FX_OP_GELU, &r, &err, 2, &f, &bad_ap));
    KA_ERR("\"silu_cpu\" not implemented for 'Long'", ka_call(FX_OP_SILU, &r, &err, 1, &i));
    KA_ERR("\"bitwise_not_cpu\" not implemented for 'Float'",
           ka_call(FX_OP_BITWISE_NOT, &r, &err, 1, &f));
    KA_ERR("result type Float can't be cast to the desired output type Long",
           ka_call(FX_OP_EXP_, &r, &err, 1, &i));
    KA_ERR("result type Float can't be cast to the desired output type Bool",
           ka_call(FX_OP_SQRT_, &r, &err, 1, &b));
    /* an expanded self cannot be written in place */
    int64_t sz[2] = {3, 4};
    fx_ivalue e = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_EXPANDED, 2, sz, 0));
    KA_ERR("unsupported operation: more than one element of the written-to tensor refers to a "
           "single memory location. Please clone() the tensor before performing the operation.",
           ka_call(FX_OP_EXP_, &r, &err, 1, &e));
    fx_ivalue *all[] = {&b, &i, &f, &bad_ap, &e};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fx_ivalue_clear(all[k]);
}

/* Dtypes and values PyTorch gives (checked with torch 1.13): exp of int64 is float32, sqrt of
 * bool is float32, abs of int keeps int64 and wraps INT_MIN, relu keeps -0.0, a NaN survives
 * relu. */
static void test_unary_known(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t n = 4, n2 = 2;
    double iv[] = {1, -2, 0, 3};
    fx_ivalue i = fx_iv_tensor_steal(ka_from(FX_DTYPE_I64, 1, &n, iv));
    assert_int_equal(ka_call(FX_OP_EXP, &r, &err, 1, &i), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 2.7183,  0.1353,  1.0000, 20.0855])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_ABS, &r, &err, 1, &i), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([1, 2, 0, 3])");
    fx_tensor_release(r);
    double bv[] = {1, 0};
    fx_ivalue b = fx_iv_tensor_steal(ka_from(FX_DTYPE_BOOL, 1, &n2, bv));
    assert_int_equal(ka_call(FX_OP_SQRT, &r, &err, 1, &b), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([1., 0.])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_LOGICAL_NOT, &r, &err, 1, &i), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([False, False,  True, False])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_BITWISE_NOT, &r, &err, 1, &b), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([False,  True])");
    fx_tensor_release(r);
    int64_t mn = INT64_MIN;
    fx_tensor *tm = ka_empty(FX_DTYPE_I64, 1, &n2);
    ((int64_t *)fx_tensor_data(tm))[0] = mn;
    ((int64_t *)fx_tensor_data(tm))[1] = -5;
    fx_ivalue m = fx_iv_tensor_steal(tm);
    assert_int_equal(ka_call(FX_OP_ABS, &r, &err, 1, &m), FX_OK);
    assert_true(((int64_t *)fx_tensor_data(r))[0] == INT64_MIN);
    assert_true(((int64_t *)fx_tensor_data(r))[1] == 5);
    fx_tensor_release(r);
    double fv[] = {-0.0, NAN};
    fx_ivalue f = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n2, fv));
    assert_int_equal(ka_call(FX_OP_RELU, &r, &err, 1, &f), FX_OK);
    assert_true(signbit(((float *)fx_tensor_data(r))[0]));
    assert_true(isnan(((float *)fx_tensor_data(r))[1]));
    fx_tensor_release(r);
    fx_ivalue *all[] = {&i, &b, &m, &f};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fx_ivalue_clear(all[k]);
}

/* round.decimals and softplus against naive references over the floating dtypes and layouts;
 * their refusals and those of the rounding ops on bool (PyTorch's messages, torch 1.13). */
static void test_unary_params(void **state) {
    (void)state;
    int64_t sz[2] = {4, 5};
    int bad = 0;
    const fx_dtype fl[] = {FX_DTYPE_F32, FX_DTYPE_F64, FX_DTYPE_F16, FX_DTYPE_BF16};
    const int decs[] = {0, 1, 2, -1};
    for (int i = 0; i < 4; i++)
        for (int l = 0; l < KA_NLAYOUTS; l++) {
            fx_tensor *x = ka_make(fl[i], l, 2, sz, 0);
            fx_ivalue xv = fx_iv_tensor(x);
            for (int k = 0; k < 4; k++) {
                fx_ivalue dv = fx_iv_int(decs[k]);
                fx_err err;
                fx_tensor *r;
                assert_int_equal(ka_call(FX_OP_ROUND_DECIMALS, &r, &err, 2, &xv, &dv), FX_OK);
                fx_tensor *exp = ka_empty(fl[i], 2, sz);
                double p = pow(10.0, decs[k] < 0 ? -decs[k] : decs[k]);
                for (int64_t e = 0; e < 20; e++) {
                    int64_t ix[2] = {e / 5, e % 5};
                    double v = fx_dtype_load_f64(x->dtype, fx_tensor_data(x),
                                                 ix[0] * x->strides[0] + ix[1] * x->strides[1]);
                    double q = decs[k] < 0 ? nearbyint(v / p) * p : nearbyint(v * p) / p;
                    fx_dtype_store_f64(fl[i], fx_tensor_data(exp), e, q);
                }
                bad += !ka_close(r, exp, ka_rtol(fl[i]), 1e-6, "round.decimals");
                fx_tensor_release(r), fx_tensor_release(exp);
            }
            fx_ivalue beta = fx_iv_float(2.0), thr = fx_iv_float(1.0);
            fx_err err;
            fx_tensor *r;
            assert_int_equal(ka_call(FX_OP_SOFTPLUS, &r, &err, 3, &xv, &beta, &thr), FX_OK);
            fx_tensor *want = ka_empty(fl[i], 2, sz);
            for (int64_t e = 0; e < 20; e++) {
                int64_t ix[2] = {e / 5, e % 5};
                double v = fx_dtype_load_f64(x->dtype, fx_tensor_data(x),
                                             ix[0] * x->strides[0] + ix[1] * x->strides[1]);
                fx_dtype_store_f64(fl[i], fx_tensor_data(want), e,
                                   2.0 * v > 1.0 ? v : log1p(exp(2.0 * v)) / 2.0);
            }
            bad += !ka_close(r, want, ka_rtol(fl[i]), 1e-6, "softplus");
            fx_tensor_release(r), fx_tensor_release(want);
            fx_ivalue_clear(&xv);
            fx_tensor_release(x);
        }
    assert_int_equal(bad, 0);
    fx_err err;
    fx_tensor *r;
    int64_t n = 2;
    fx_ivalue b = fx_iv_tensor_steal(ka_make(FX_DTYPE_BOOL, KA_CONTIG, 1, &n, 0));
    fx_ivalue i = fx_iv_tensor_steal(ka_make(FX_DTYPE_I64, KA_CONTIG, 1, &n, 0));
    fx_ivalue d0 = fx_iv_int(0), d1 = fx_iv_int(1);
    KA_ERR("\"floor_vml_cpu\" not implemented for 'Bool'", ka_call(FX_OP_FLOOR, &r, &err, 1, &b));
    KA_ERR("\"ceil_vml_cpu\" not implemented for 'Bool'", ka_call(FX_OP_CEIL_, &r, &err, 1, &b));
    KA_ERR("\"trunc_vml_cpu\" not implemented for 'Bool'", ka_call(FX_OP_TRUNC, &r, &err, 1, &b));
    KA_ERR("\"round_vml_cpu\" not implemented for 'Bool'", ka_call(FX_OP_ROUND, &r, &err, 1, &b));
    KA_ERR("\"round_cpu\" not implemented for 'Long'",
           ka_call(FX_OP_ROUND_DECIMALS, &r, &err, 2, &i, &d1));
    KA_ERR("\"round_vml_cpu\" not implemented for 'Long'",
           ka_call(FX_OP_ROUND_DECIMALS, &r, &err, 2, &i, &d0));
    KA_ERR("\"softplus_cpu\" not implemented for 'Long'", ka_call(FX_OP_SOFTPLUS, &r, &err, 1, &i));
    KA_ERR("result type Float can't be cast to the desired output type Long",
           ka_call(FX_OP_ERF_, &r, &err, 1, &i));
    fx_ivalue_clear(&b);
    fx_ivalue_clear(&i);
}

/* Large tensors run on several threads: the result equals the reference and is bit-identical
 * to a one-thread run (contiguous and transposed). */
static void test_unary_threads(void **state) {
    (void)state;
    int64_t sz[2] = {301, 997};
    int bad = 0;
    for (int l = 0; l < 2; l++) {
        fx_tensor *x = ka_make(FX_DTYPE_F32, l ? KA_TRANSPOSED : KA_CONTIG, 2, sz, 0);
        fx_ivalue xv = fx_iv_tensor(x);
        fx_err err;
        fx_tensor *r1, *r2;
        omp_set_num_threads(1);
        assert_int_equal(ka_call(FX_OP_SIGMOID, &r1, &err, 1, &xv), FX_OK);
        omp_set_num_threads(3);
        assert_int_equal(ka_call(FX_OP_SIGMOID, &r2, &err, 1, &xv), FX_OK);
        omp_set_num_threads(omp_get_num_procs());
        int64_t n = fx_tensor_numel(r1);
        bad += memcmp(fx_tensor_data(r1), fx_tensor_data(r2), (size_t)n * 4) != 0;
        bad += !check_functional(&k_ops[8], x, "sigmoid large");
        fx_tensor_release(r1), fx_tensor_release(r2);
        fx_ivalue_clear(&xv);
        fx_tensor_release(x);
    }
    assert_int_equal(bad, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_dtypes_layouts), cmocka_unit_test(test_unary_shapes),
        cmocka_unit_test(test_unary_inplace),        cmocka_unit_test(test_unary_errors),
        cmocka_unit_test(test_unary_known),          cmocka_unit_test(test_unary_threads),
        cmocka_unit_test(test_unary_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
