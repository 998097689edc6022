/* tests/unit/test_reduce.c — sum and mean (all overloads) against the naive reference, over
 * dtypes, dim sets, keepdim, the dtype argument and memory layouts; result dtypes; errors.
 * Layer: tests (cmocka). */
#include "tests/unit/ka_util.h"

/* Runs op with (dims, keepdim, dtype) and compares with fx_ref_reduce. dims NULL = overload
 * without dim. Returns 1 when equal. */
static int run_reduce(fx_op_id op, fx_tensor *x, const int64_t *dims, int ndims, bool keepdim,
                      fx_dtype dtype_arg, const char *what) {
    fx_err err;
    bool mean = op == FX_OP_MEAN || op == FX_OP_MEAN_DIM;
    fx_ivalue xv = fx_iv_tensor(x), dv, kv = fx_iv_bool(keepdim);
    fx_ivalue dt = dtype_arg == FX_DTYPE_UNDEFINED ? fx_iv_none() : fx_iv_dtype(dtype_arg);
    fx_tensor *r;
    int rc;
    if (op == FX_OP_SUM || op == FX_OP_MEAN) {
        rc = ka_call(op, &r, &err, 2, &xv, &dt);
    } else {
        if (dims) fx_iv_int_list(ndims, dims, &dv, &err);
        else dv = fx_iv_none();
        rc = ka_call(op, &r, &err, 4, &xv, &dv, &kv, &dt);
        fx_ivalue_clear(&dv);
    }
    fx_ivalue_clear(&xv);
    if (rc) {
        printf("%s: %s\n", what, err.msg);
        return 0;
    }
    /* expected shape and dtype, derived here */
    bool red[FX_MAX_DIMS] = {0};
    if (!dims || ndims == 0 || op == FX_OP_SUM || op == FX_OP_MEAN)
        for (int d = 0; d < x->ndim; d++) red[d] = true;
    else
        for (int i = 0; i < ndims; i++) red[dims[i] < 0 ? dims[i] + x->ndim : dims[i]] = true;
    int64_t osz[FX_MAX_DIMS];
    int ond = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!red[d]) osz[ond++] = x->sizes[d];
        else if (keepdim && op != FX_OP_SUM && op != FX_OP_MEAN) osz[ond++] = 1;
    }
    fx_dtype want = dtype_arg != FX_DTYPE_UNDEFINED ? dtype_arg
                    : fx_dtype_is_float(x->dtype) ? x->dtype
                                                  : FX_DTYPE_I64;
    /* the reference reduces x cast to the dtype argument */
    fx_tensor *xc = x;
    if (dtype_arg != FX_DTYPE_UNDEFINED) {
        xc = ka_empty(dtype_arg, x->ndim, x->sizes);
        fx_ref_copy(xc, x);
    } else {
        fx_tensor_retain(xc);
    }
    fx_tensor *exp = ka_empty(want, ond, osz);
    fx_ref_reduce(xc, red, mean, exp);
    int ok = ka_close(r, exp, fx_dtype_is_float(want) ? 4 * ka_rtol(want) : 0, 1e-9, what);
    fx_tensor_release(r), fx_tensor_release(exp), fx_tensor_release(xc);
    return ok;
}

static void test_sum_dims_dtypes_layouts(void **state) {
    (void)state;
    int64_t sz[3] = {3, 4, 5};
    static const int64_t dimsets[][3] = {{0}, {1}, {2}, {-1}, {0, 2}, {1, 0}, {-1, -3}, {0, 1, 2}};
    static const int ndims[] = {1, 1, 1, 1, 2, 2, 2, 3};
    int bad = 0;
    for (int i = 0; i < KA_NDTYPES; i++)
        for (int l = 0; l < KA_NLAYOUTS; l++) {
            fx_tensor *x = ka_make(ka_all_dtypes[i], l, 3, sz, 0);
            char what[128];
            for (int s = 0; s < 8; s++)
                for (int kd = 0; kd < 2; kd++) {
                    snprintf(what, sizeof what, "sum %s %s dims#%d keepdim %d",
                             fx_dtype_name(ka_all_dtypes[i]), ka_layout_names[l], s, kd);
                    bad += !run_reduce(FX_OP_SUM_DIM_INTLIST, x, dimsets[s], ndims[s], kd,
                                       FX_DTYPE_UNDEFINED, what);
                    if (fx_dtype_is_float(ka_all_dtypes[i]))
                        bad += !run_reduce(FX_OP_MEAN_DIM, x, dimsets[s], ndims[s], kd,
                                           FX_DTYPE_UNDEFINED, what);
                }
            snprintf(what, sizeof what, "sum all %s %s", fx_dtype_name(ka_all_dtypes[i]),
                     ka_layout_names[l]);
            bad += !run_reduce(FX_OP_SUM, x, NULL, 0, false, FX_DTYPE_UNDEFINED, what);
            bad += !run_reduce(FX_OP_SUM_DIM_INTLIST, x, NULL, 0, true, FX_DTYPE_UNDEFINED, what);
            int64_t none[1];
            bad += !run_reduce(FX_OP_SUM_DIM_INTLIST, x, none, 0, false, FX_DTYPE_UNDEFINED, what);
            if (fx_dtype_is_float(ka_all_dtypes[i]))
                bad += !run_reduce(FX_OP_MEAN, x, NULL, 0, false, FX_DTYPE_UNDEFINED, what);
            fx_tensor_release(x);
        }
    assert_int_equal(bad, 0);
}

/* The dtype argument: sum(int, dtype=float32), sum(float, dtype=int64), mean(int,
 * dtype=float64), sum(f16, dtype=f32). */
static void test_dtype_argument(void **state) {
    (void)state;
    int64_t sz[2] = {6, 7}, d1[1] = {1};
    int bad = 0;
    fx_tensor *xi = ka_make(FX_DTYPE_I32, KA_TRANSPOSED, 2, sz, 0);
    fx_tensor *xf = ka_make(FX_DTYPE_F32, KA_SLICED, 2, sz, 0);
    fx_tensor *xh = ka_make(FX_DTYPE_F16, KA_CONTIG, 2, sz, 0);
    fx_tensor *xb = ka_make(FX_DTYPE_BOOL, KA_EXPANDED, 2, sz, 0);
    bad += !run_reduce(FX_OP_SUM, xi, NULL, 0, false, FX_DTYPE_F32, "sum i32 -> f32");
    bad += !run_reduce(FX_OP_SUM_DIM_INTLIST, xf, d1, 1, false, FX_DTYPE_I64, "sum f32 -> i64");
    bad += !run_reduce(FX_OP_MEAN_DIM, xi, d1, 1, true, FX_DTYPE_F64, "mean i32 -> f64");
    bad += !run_reduce(FX_OP_SUM, xh, NULL, 0, false, FX_DTYPE_F32, "sum f16 -> f32");
    bad += !run_reduce(FX_OP_MEAN, xh, NULL, 0, false, FX_DTYPE_UNDEFINED, "mean f16");
    bad += !run_reduce(FX_OP_SUM, xb, NULL, 0, false, FX_DTYPE_UNDEFINED, "sum bool");
    bad += !run_reduce(FX_OP_SUM_DIM_INTLIST, xb, d1, 1, false, FX_DTYPE_BOOL, "sum bool->bool");
    assert_int_equal(bad, 0);
    fx_tensor_release(xi), fx_tensor_release(xf), fx_tensor_release(xh), fx_tensor_release(xb);
}

static void test_result_dtypes_and_values(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t n = 3, s23[2] = {2, 3};
    double b[] = {1, 1, 0}, v6[] = {1, 2, 3, 4, 5, 6};
    fx_ivalue bv = fx_iv_tensor_steal(ka_from(FX_DTYPE_BOOL, 1, &n, b));
    assert_int_equal(ka_call(FX_OP_SUM, &r, &err, 1, &bv), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(2)");
    fx_tensor_release(r);
    fx_ivalue m = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 2, s23, v6));
    int64_t d0 = 0, dm1 = -1;
    fx_ivalue dims0, dimsm1, kt = fx_iv_bool(true);
    fx_iv_int_list(1, &d0, &dims0, &err);
    fx_iv_int_list(1, &dm1, &dimsm1, &err);
    assert_int_equal(ka_call(FX_OP_SUM_DIM_INTLIST, &r, &err, 2, &m, &dims0), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([5., 7., 9.])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_MEAN_DIM, &r, &err, 3, &m, &dimsm1, &kt), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([[2.],\n        [5.]])");
    fx_tensor_release(r);
    /* int dim (int[1] accepts one int) */
    fx_ivalue one = fx_iv_int(1);
    assert_int_equal(ka_call(FX_OP_SUM_DIM_INTLIST, &r, &err, 2, &m, &one), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 6., 15.])");
    fx_tensor_release(r);
    /* empty: sum 0, mean nan; reducing a zero-size dim gives zeros */
    int64_t z = 0, z3[2] = {0, 3};
    fx_ivalue e = fx_iv_tensor_steal(ka_empty(FX_DTYPE_F32, 1, &z));
    assert_int_equal(ka_call(FX_OP_MEAN, &r, &err, 1, &e), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(nan)");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_SUM, &r, &err, 1, &e), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(0.)");
    fx_tensor_release(r);
    fx_ivalue e03 = fx_iv_tensor_steal(ka_empty(FX_DTYPE_F32, 2, z3));
    assert_int_equal(ka_call(FX_OP_SUM_DIM_INTLIST, &r, &err, 2, &e03, &dims0), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([0., 0., 0.])");
    fx_tensor_release(r);
    /* 0-dim input, dim 0 */
    double three = 3;
    fx_ivalue s = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 0, NULL, &three));
    assert_int_equal(ka_call(FX_OP_SUM_DIM_INTLIST, &r, &err, 2, &s, &dims0), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(3.)");
    fx_tensor_release(r);
    /* float16 stays float16 */
    fx_ivalue h = fx_iv_tensor_steal(ka_from(FX_DTYPE_F16, 2, s23, v6));
    assert_int_equal(ka_call(FX_OP_MEAN, &r, &err, 1, &h), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(3.5000, dtype=torch.float16)");
    fx_tensor_release(r);
    fx_ivalue *all[] = {&bv, &m, &dims0, &dimsm1, &e, &e03, &s, &h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) fx_ivalue_clear(all[i]);
}

static void test_errors(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t sz[2] = {2, 3}, dd[2] = {0, -2}, d2 = 2;
    fx_ivalue xi = fx_iv_tensor_steal(ka_make(FX_DTYPE_I64, KA_CONTIG, 2, sz, 0));
    fx_ivalue xf = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 2, sz, 0));
    fx_ivalue dl = fx_iv_dtype(FX_DTYPE_I64), dup, out_of_range, none = fx_iv_none(),
              kf = fx_iv_bool(false);
    fx_iv_int_list(2, dd, &dup, &err);
    fx_iv_int_list(1, &d2, &out_of_range, &err);
    KA_ERR("mean(): could not infer output dtype. Input dtype must be either a floating point or "
           "complex dtype. Got: Long",
           ka_call(FX_OP_MEAN, &r, &err, 1, &xi));
    KA_ERR("mean(): could not infer output dtype. Optional dtype must be either a floating point "
           "or complex dtype. Got: Long",
           ka_call(FX_OP_MEAN, &r, &err, 2, &xf, &dl));
    KA_ERR("dim 0 appears multiple times in the list of dims",
           ka_call(FX_OP_SUM_DIM_INTLIST, &r, &err, 2, &xf, &dup));
    KA_ERR("Dimension out of range (expected to be in range of [-2, 1], but got 2)",
           ka_call(FX_OP_SUM_DIM_INTLIST, &r, &err, 2, &xf, &out_of_range));
    KA_ERR("mean(): could not infer output dtype. Input dtype must be either a floating point or "
           "complex dtype. Got: Long",
           ka_call(FX_OP_MEAN_DIM, &r, &err, 4, &xi, &none, &kf, &none));
    fx_ivalue *all[] = {&xi, &xf, &dup, &out_of_range};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) fx_ivalue_clear(all[i]);
}

/* A long float32 sum accumulates in double: it matches the double reference closely where a
 * float accumulator would drift. */
static void test_long_sum_accuracy(void **state) {
    (void)state;
    int64_t n = 1000003, s2[2] = {1000, 1001};
    fx_tensor *x = ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &n, 0);
    assert_true(run_reduce(FX_OP_SUM, x, NULL, 0, false, FX_DTYPE_UNDEFINED, "long sum"));
    assert_true(run_reduce(FX_OP_MEAN, x, NULL, 0, false, FX_DTYPE_UNDEFINED, "long mean"));
    fx_tensor_release(x);
    fx_tensor *y = ka_make(FX_DTYPE_F32, KA_TRANSPOSED, 2, s2, 0);
    int64_t d0 = 0, d1 = 1;
    assert_true(run_reduce(FX_OP_SUM_DIM_INTLIST, y, &d0, 1, false, FX_DTYPE_UNDEFINED, "rows"));
    assert_true(run_reduce(FX_OP_SUM_DIM_INTLIST, y, &d1, 1, false, FX_DTYPE_UNDEFINED, "cols"));
    fx_tensor_release(y);
}

static void test_meta(void **state) {
    (void)state;
    fx_err err;
    int64_t sz[3] = {2, 3, 4}, d[1] = {1};
    fx_tensor *m, *r;
    assert_int_equal(fx_tensor_empty(3, sz, FX_DTYPE_I32, FX_DEVICE_META, &m, &err), FX_OK);
    fx_ivalue mv = fx_iv_tensor_steal(m), dv, kt = fx_iv_bool(true);
    fx_iv_int_list(1, d, &dv, &err);
    assert_int_equal(ka_call(FX_OP_SUM_DIM_INTLIST, &r, &err, 3, &mv, &dv, &kt), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(..., device='meta', size=(2, 1, 4), dtype=torch.int64)");
    fx_tensor_release(r);
    fx_ivalue_clear(&mv), fx_ivalue_clear(&dv);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sum_dims_dtypes_layouts),
        cmocka_unit_test(test_dtype_argument),
        cmocka_unit_test(test_result_dtypes_and_values),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_long_sum_accuracy),
        cmocka_unit_test(test_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
