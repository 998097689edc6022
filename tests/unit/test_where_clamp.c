/* tests/unit/test_where_clamp.c — where (self, ScalarSelf, ScalarOther, Scalar) and clamp
 * (Scalar and Tensor bounds, in-place twins), max.other / min.other, against the references of
 * k_ref.c over dtypes, layouts and broadcasts; promotion and every error message.
 * Layer: tests (cmocka). */
#include "tests/unit/ka_util.h"

static fx_dtype result_type2(const fx_ivalue *a, const fx_ivalue *b) {
    fx_result_type_state s;
    fx_result_type_init(&s);
    const fx_ivalue *v[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (v[i]->tag == FX_IV_TENSOR) fx_result_type_tensor(&s, v[i]->u.t->dtype, v[i]->u.t->ndim);
        else fx_result_type_scalar(&s, v[i]->tag == FX_IV_BOOL ? 0 : v[i]->tag == FX_IV_INT ? 1 : 2);
    }
    return fx_result_type_get(&s);
}

/* where over dtype pairs, layouts and a broadcast of the three operands. */
static void test_where_sweep(void **state) {
    (void)state;
    int64_t sc[2] = {3, 1}, sa[2] = {3, 4}, sb[1] = {4};
    int bad = 0;
    for (int i = 0; i < KA_NDTYPES; i++)
        for (int j = 0; j < KA_NDTYPES; j++)
            for (int l = 0; l < KA_NLAYOUTS; l++) {
                fx_tensor *cond = ka_make(FX_DTYPE_BOOL, KA_SLICED, 2, sc, 0);
                fx_ivalue a = fx_iv_tensor_steal(ka_make(ka_all_dtypes[i], l, 2, sa, 0));
                fx_ivalue b = fx_iv_tensor_steal(ka_make(ka_all_dtypes[j], KA_SLICED, 1, sb, 0));
                fx_ivalue cv = fx_iv_tensor(cond);
                fx_err err;
                fx_tensor *got;
                assert_int_equal(ka_call(FX_OP_WHERE_SELF, &got, &err, 3, &cv, &a, &b), FX_OK);
                fx_dtype want = result_type2(&a, &b);
                fx_tensor *exp = ka_empty(want, 2, sa);
                fx_ref_where(cond, &a, &b, exp);
                char what[96];
                snprintf(what, sizeof what, "where %s %s %s", fx_dtype_name(ka_all_dtypes[i]),
                         fx_dtype_name(ka_all_dtypes[j]), ka_layout_names[l]);
                bad += !ka_close(got, exp, 0, 0, what);
                fx_tensor_release(got), fx_tensor_release(exp), fx_tensor_release(cond);
                fx_ivalue_clear(&a), fx_ivalue_clear(&b), fx_ivalue_clear(&cv);
            }
    assert_int_equal(bad, 0);
}

/* The scalar overloads and their result dtypes: where(c, x, 2.5) on int64 x is float32,
 * where(c, 1, 0) int64, where(c, 1.0, 0) float32; a uint8 condition is accepted. */
static void test_where_scalars(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t n = 4;
    double cv_[] = {1, 0, 1, 0}, xv[] = {1, 2, 3, 4};
    fx_ivalue c = fx_iv_tensor_steal(ka_from(FX_DTYPE_BOOL, 1, &n, cv_));
    fx_ivalue c8 = fx_iv_tensor_steal(ka_from(FX_DTYPE_U8, 1, &n, cv_));
    fx_ivalue x = fx_iv_tensor_steal(ka_from(FX_DTYPE_I64, 1, &n, xv));
    fx_ivalue f25 = fx_iv_float(2.5), one = fx_iv_int(1), zero = fx_iv_int(0), onef = fx_iv_float(1);
    assert_int_equal(ka_call(FX_OP_WHERE_SCALAROTHER, &r, &err, 3, &c, &x, &f25), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([1.0000, 2.5000, 3.0000, 2.5000])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_WHERE_SCALARSELF, &r, &err, 3, &c, &f25, &x), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([2.5000, 2.0000, 2.5000, 4.0000])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_WHERE_SCALAR, &r, &err, 3, &c, &one, &zero), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([1, 0, 1, 0])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_WHERE_SCALAR, &r, &err, 3, &c, &onef, &zero), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([1., 0., 1., 0.])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_WHERE_SELF, &r, &err, 3, &c8, &x, &one), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([1, 1, 3, 1])");
    fx_tensor_release(r);
    fx_ivalue f = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n, xv));
    KA_ERR("where expected condition to be a boolean tensor, but got a tensor with dtype Float",
           ka_call(FX_OP_WHERE_SELF, &r, &err, 3, &f, &f, &f));
    int64_t n3 = 3;
    fx_ivalue x3 = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &n3, 0));
    KA_ERR("The size of tensor a (4) must match the size of tensor b (3) at non-singleton "
           "dimension 0",
           ka_call(FX_OP_WHERE_SELF, &r, &err, 3, &c, &f, &x3));
    fx_ivalue *all[] = {&c, &c8, &x, &f, &x3};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fx_ivalue_clear(all[k]);
}

/* clamp with Scalar bounds (min only, max only, both, min > max) over every dtype and layout;
 * integer self with a float bound promotes. */
static void test_clamp_scalar(void **state) {
    (void)state;
    int64_t sz[2] = {3, 5};
    const double los[] = {-2.5, 1, 3}, his[] = {2, 4, 1};
    int bad = 0;
    for (int i = 0; i < KA_NDTYPES; i++) {
        fx_dtype dt = ka_all_dtypes[i];
        if (dt == FX_DTYPE_BOOL) continue;
        for (int l = 0; l < KA_NLAYOUTS; l++)
            for (int k = 0; k < 3; k++)
                for (int which = 0; which < 3; which++) {
                    fx_tensor *x = ka_make(dt, l, 2, sz, 0);
                    fx_ivalue xv = fx_iv_tensor(x);
                    fx_ivalue lo = which == 1 ? fx_iv_none()
                                   : los[k] == (int64_t)los[k] ? fx_iv_int((int64_t)los[k])
                                                                : fx_iv_float(los[k]);
                    fx_ivalue hi = which == 0 ? fx_iv_none() : fx_iv_int((int64_t)his[k]);
                    if (dt == FX_DTYPE_U8 && lo.tag == FX_IV_FLOAT) lo = fx_iv_int(0);
                    fx_dtype c = dt;
                    if (!fx_dtype_is_float(dt)) {
                        fx_result_type_state s;
                        fx_result_type_init(&s);
                        fx_result_type_tensor(&s, dt, 2);
                        if (lo.tag != FX_IV_NONE) fx_result_type_scalar(&s, lo.tag == FX_IV_INT ? 1 : 2);
                        if (hi.tag != FX_IV_NONE) fx_result_type_scalar(&s, 1);
                        c = fx_result_type_get(&s);
                    }
                    fx_err err;
                    fx_tensor *got;
                    char what[96];
                    snprintf(what, sizeof what, "clamp %s %s case %d/%d", fx_dtype_name(dt),
                             ka_layout_names[l], k, which);
                    if (ka_call(FX_OP_CLAMP, &got, &err, 3, &xv, &lo, &hi)) {
                        printf("%s: %s\n", what, err.msg);
                        bad++;
                    } else {
                        fx_tensor *exp = ka_empty(c, 2, sz);
                        fx_ref_clamp(c, x, &lo, &hi, true, exp);
                        bad += !ka_close(got, exp, 0, 0, what);
                        fx_tensor_release(got), fx_tensor_release(exp);
                    }
                    fx_ivalue_clear(&xv);
                    fx_tensor_release(x);
                }
    }
    assert_int_equal(bad, 0);
}

/* clamp.Tensor: bounds broadcast up, common dtype of all three, NaN bounds. */
static void test_clamp_tensor(void **state) {
    (void)state;
    int64_t sx[2] = {3, 4}, slo[1] = {4}, shi[3] = {2, 3, 1};
    int bad = 0;
    for (int i = 0; i < KA_NDTYPES; i++)
        for (int which = 0; which < 3; which++) {
            fx_dtype dt = ka_all_dtypes[i];
            fx_tensor *x = ka_make(dt, KA_TRANSPOSED, 2, sx, 0);
            fx_ivalue xv = fx_iv_tensor(x);
            fx_ivalue lo = which == 1 ? fx_iv_none()
                                      : fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_SLICED, 1, slo, 0));
            fx_ivalue hi = which == 0 ? fx_iv_none()
                                      : fx_iv_tensor_steal(ka_make(FX_DTYPE_I32, KA_CONTIG, 3, shi, 0));
            fx_result_type_state s;
            fx_result_type_init(&s);
            fx_result_type_tensor(&s, dt, 2);
            if (lo.tag == FX_IV_TENSOR) fx_result_type_tensor(&s, FX_DTYPE_F32, 1);
            if (hi.tag == FX_IV_TENSOR) fx_result_type_tensor(&s, FX_DTYPE_I32, 3);
            fx_dtype c = fx_result_type_get(&s);
            fx_err err;
            fx_tensor *got;
            char what[96];
            snprintf(what, sizeof what, "clamp.Tensor %s %d", fx_dtype_name(dt), which);
            int rc = ka_call(FX_OP_CLAMP_TENSOR, &got, &err, 3, &xv, &lo, &hi);
            if (rc) {
                printf("%s: %s\n", what, err.msg);
                bad++;
            } else {
                fx_tensor *exp = ka_empty(c, got->ndim, got->sizes);
                fx_ref_clamp(c, x, &lo, &hi, false, exp);
                bad += !ka_close(got, exp, 0, 0, what);
                fx_tensor_release(got), fx_tensor_release(exp);
            }
            fx_ivalue_clear(&xv), fx_ivalue_clear(&lo), fx_ivalue_clear(&hi);
            fx_tensor_release(x);
        }
    assert_int_equal(bad, 0);
}

/* clamp_ / clamp_.Tensor in place, the errors, NaN handling and max.other / min.other. */
static void test_clamp_inplace_errors(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t n = 4;
    double xv[] = {-3, 0.5, NAN, 9};
    fx_tensor *x = ka_from(FX_DTYPE_F32, 1, &n, xv);
    fx_ivalue x_ = fx_iv_tensor(x), lo = fx_iv_int(0), hi = fx_iv_int(1), none = fx_iv_none();
    assert_int_equal(ka_call(FX_OP_CLAMP_, &r, &err, 3, &x_, &lo, &hi), FX_OK);
    assert_ptr_equal(r, x);
    assert_string_equal(ka_repr(x), "tensor([0.0000, 0.5000,    nan, 1.0000])");
    fx_tensor_release(r);
    double iv[] = {-3, 1, 2, 9};
    fx_ivalue i = fx_iv_tensor_steal(ka_from(FX_DTYPE_I64, 1, &n, iv));
    fx_ivalue h = fx_iv_float(0.5), two = fx_iv_int(2), t = fx_iv_bool(true);
    assert_int_equal(ka_call(FX_OP_CLAMP, &r, &err, 2, &i, &h), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([0.5000, 1.0000, 2.0000, 9.0000])");
    fx_tensor_release(r);
    KA_ERR("result type Float can't be cast to the desired output type long int",
           ka_call(FX_OP_CLAMP_, &r, &err, 2, &i, &h));
    KA_ERR("torch.clamp: At least one of 'min' or 'max' must not be None",
           ka_call(FX_OP_CLAMP, &r, &err, 3, &i, &none, &none));
    KA_ERR("torch.clamp: At least one of 'min' or 'max' must not be None",
           ka_call(FX_OP_CLAMP_TENSOR, &r, &err, 1, &i));
    double bv[] = {1, 0, 1, 0};
    fx_ivalue b = fx_iv_tensor_steal(ka_from(FX_DTYPE_BOOL, 1, &n, bv));
    KA_ERR("\"clamp_scalar_cpu\" not implemented for 'Bool'",
           ka_call(FX_OP_CLAMP, &r, &err, 3, &b, &t, &t));
    assert_int_equal(ka_call(FX_OP_CLAMP, &r, &err, 2, &b, &lo), FX_OK); /* promotes to int64 */
    assert_string_equal(ka_repr(r), "tensor([1, 0, 1, 0])");
    fx_tensor_release(r);
    /* tensor bounds: a NaN bound gives NaN; in place with a shape the result cannot take */
    double lov[] = {NAN, -1, -1, -1};
    fx_ivalue lt = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n, lov));
    double fv[] = {5, -5, 0.25, 3};
    fx_ivalue f = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n, fv));
    fx_ivalue ht = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n, iv));
    assert_int_equal(ka_call(FX_OP_CLAMP_TENSOR, &r, &err, 3, &f, &lt, &ht), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([    nan, -1.0000,  0.2500,  3.0000])");
    fx_tensor_release(r);
    int64_t s24[2] = {2, 4};
    fx_ivalue big = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 2, s24, 0));
    KA_ERR("output with shape [4] doesn't match the broadcast shape [2, 4]",
           ka_call(FX_OP_CLAMP__TENSOR, &r, &err, 3, &f, &big, &none));
    /* max.other / min.other are maximum / minimum */
    assert_int_equal(ka_call(FX_OP_MAX_OTHER, &r, &err, 2, &f, &ht), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([5., 1., 2., 9.])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_MIN_OTHER, &r, &err, 2, &f, &ht), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([-3.0000, -5.0000,  0.2500,  3.0000])");
    fx_tensor_release(r);
    (void)two;
    fx_ivalue *all[] = {&x_, &i, &b, &lt, &f, &ht, &big};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fx_ivalue_clear(all[k]);
    fx_tensor_release(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_where_sweep),  cmocka_unit_test(test_where_scalars),
        cmocka_unit_test(test_clamp_scalar), cmocka_unit_test(test_clamp_tensor),
        cmocka_unit_test(test_clamp_inplace_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
