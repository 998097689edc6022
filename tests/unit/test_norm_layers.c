/* tests/unit/test_norm_layers.c — batch norm and group norm against naive references computed
 * here (two-pass mean and variance in double over every dtype the kernels take, on contiguous
 * and transposed inputs), the running-statistics update of _native_batch_norm_legit and the
 * values _functional returns instead; and Ctrl-C: with an interrupt pending, the long kernels of
 * the issue 10 ops (sort, convolution, flip / roll, pad, vector_norm, batch / group norm) stop
 * and the dispatcher fails the op with FX_EINTR, as the pointwise and reduction kernels do.
 * Layer: tests (cmocka). */
#include <math.h>

#include "tests/unit/ka_util.h"

static const fx_dtype k_float_dtypes[] = {FX_DTYPE_F32, FX_DTYPE_F64, FX_DTYPE_F16, FX_DTYPE_BF16};

static double at(const fx_tensor *t, int64_t n, int64_t c, int64_t s, int64_t S) {
    /* element (n, c, s) of a [N, C, S] view of t (any strides; s runs over dims 2..) */
    int64_t off = n * t->strides[0] + c * t->strides[1];
    for (int d = t->ndim - 1; d >= 2; d--) {
        off += (s % t->sizes[d]) * t->strides[d];
        s /= t->sizes[d];
    }
    (void)S;
    return fx_dtype_load_f64(t->dtype, fx_tensor_data(t), off);
}

static void test_batch_norm_naive(void **state) {
    (void)state;
    const int64_t sz[3] = {3, 4, 5}, N = 3, C = 4, S = 5;
    for (size_t di = 0; di < sizeof k_float_dtypes / sizeof *k_float_dtypes; di++)
        for (int layout = 0; layout < 2; layout++) {
            fx_dtype dt = k_float_dtypes[di];
            fx_tensor *x = ka_make(dt, layout, 3, sz, 0);
            int64_t c1 = C;
            fx_tensor *w = ka_make(dt, 0, 1, &c1, 0), *b = ka_make(dt, 0, 1, &c1, 0);
            fx_tensor *rm = ka_make(dt, 0, 1, &c1, 0), *rv = ka_empty(dt, 1, &c1);
            for (int64_t c = 0; c < C; c++) fx_dtype_store_f64(dt, fx_tensor_data(rv), c, 0.5 + c);
            double rm0[4], rv0[4];
            for (int64_t c = 0; c < C; c++)
                rm0[c] = fx_dtype_load_f64(dt, fx_tensor_data(rm), c), rv0[c] = 0.5 + c;
            fx_err err;
            fx_ivalue a[FX_SCHEMA_MAX_ARGS] = {fx_iv_tensor(x), fx_iv_tensor(w), fx_iv_tensor(b),
                                               fx_iv_tensor(rm), fx_iv_tensor(rv), fx_iv_bool(true),
                                               fx_iv_float(0.25), fx_iv_float(1e-3)};
            fx_ivalue o[FX_SCHEMA_MAX_RETS] = {0}, f[FX_SCHEMA_MAX_RETS] = {0};
            /* _functional first: it must leave rm / rv alone */
            assert_int_equal(fx_dispatch(ka_eager(), fx_op_get(FX_OP__NATIVE_BATCH_NORM_LEGIT_FUNCTIONAL), a, f, &err), FX_OK);
            assert_int_equal(fx_dispatch(ka_eager(), fx_op_get(FX_OP__NATIVE_BATCH_NORM_LEGIT), a, o, &err), FX_OK);
            double tol = dt == FX_DTYPE_F32 ? 1e-5 : dt == FX_DTYPE_F64 ? 1e-12 : dt == FX_DTYPE_F16 ? 4e-3 : 3e-2;
            for (int64_t c = 0; c < C; c++) {
                double m = 0, v = 0, cnt = (double)(N * S);
                for (int64_t n = 0; n < N; n++)
                    for (int64_t s = 0; s < S; s++) m += at(x, n, c, s, S);
                m /= cnt;
                for (int64_t n = 0; n < N; n++)
                    for (int64_t s = 0; s < S; s++) v += (at(x, n, c, s, S) - m) * (at(x, n, c, s, S) - m);
                double rstd = 1 / sqrt(v / cnt + 1e-3);
                double wc = fx_dtype_load_f64(dt, fx_tensor_data(w), c), bc = fx_dtype_load_f64(dt, fx_tensor_data(b), c);
                for (int64_t n = 0; n < N; n++)
                    for (int64_t s = 0; s < S; s++) {
                        double want = (at(x, n, c, s, S) - m) * rstd * wc + bc;
                        assert_true(fabs(at(o[0].u.t, n, c, s, S) - want) <= tol * (1 + fabs(want)));
                        assert_true(fabs(at(f[0].u.t, n, c, s, S) - want) <= tol * (1 + fabs(want)));
                    }
                double nm = 0.25 * m + 0.75 * rm0[c], nv = 0.25 * v / (cnt - 1) + 0.75 * rv0[c];
                assert_true(fabs(fx_dtype_load_f64(dt, fx_tensor_data(rm), c) - nm) <= tol * (1 + fabs(nm)));
                assert_true(fabs(fx_dtype_load_f64(dt, fx_tensor_data(rv), c) - nv) <= tol * (1 + fabs(nv)));
                assert_true(fabs(fx_dtype_load_f64(dt, fx_tensor_data(f[3].u.t), c) - nm) <= tol * (1 + fabs(nm)));
                assert_true(fabs(fx_dtype_load_f64(dt, fx_tensor_data(f[4].u.t), c) - nv) <= tol * (1 + fabs(nv)));
                assert_true(fabs(fx_dtype_load_f64(o[1].u.t->dtype, fx_tensor_data(o[1].u.t), c) - m) <= tol * (1 + fabs(m)));
                assert_true(fabs(fx_dtype_load_f64(o[2].u.t->dtype, fx_tensor_data(o[2].u.t), c) - rstd) <= tol * (1 + rstd));
            }
            for (int i = 0; i < 5; i++) fx_ivalue_clear(&f[i]);
            for (int i = 0; i < 3; i++) fx_ivalue_clear(&o[i]);
            for (int i = 0; i < 5; i++) fx_ivalue_clear(&a[i]);
            fx_tensor_release(x), fx_tensor_release(w), fx_tensor_release(b);
            fx_tensor_release(rm), fx_tensor_release(rv);
        }
}

static void test_group_norm_naive(void **state) {
    (void)state;
    const int64_t sz[3] = {2, 6, 4}, N = 2, C = 6, S = 4, G = 3, D = C / G;
    for (size_t di = 0; di < sizeof k_float_dtypes / sizeof *k_float_dtypes; di++)
        for (int layout = 0; layout < 2; layout++) {
            fx_dtype dt = k_float_dtypes[di];
            fx_tensor *x = ka_make(dt, layout, 3, sz, 0);
            int64_t c1 = C;
            fx_tensor *w = ka_make(dt, 0, 1, &c1, 0), *b = ka_make(dt, 0, 1, &c1, 0);
            fx_err err;
            fx_ivalue a[FX_SCHEMA_MAX_ARGS] = {fx_iv_tensor(x), fx_iv_tensor(w), fx_iv_tensor(b),
                                               fx_iv_int(N), fx_iv_int(C), fx_iv_int(S),
                                               fx_iv_int(G), fx_iv_float(1e-4)};
            fx_ivalue o[FX_SCHEMA_MAX_RETS] = {0};
            assert_int_equal(fx_dispatch(ka_eager(), fx_op_get(FX_OP_NATIVE_GROUP_NORM), a, o, &err), FX_OK);
            double tol = dt == FX_DTYPE_F32 ? 1e-5 : dt == FX_DTYPE_F64 ? 1e-12 : dt == FX_DTYPE_F16 ? 4e-3 : 3e-2;
            for (int64_t n = 0; n < N; n++)
                for (int64_t g = 0; g < G; g++) {
                    double m = 0, v = 0, cnt = (double)(D * S);
                    for (int64_t c = g * D; c < (g + 1) * D; c++)
                        for (int64_t s = 0; s < S; s++) m += at(x, n, c, s, S);
                    m /= cnt;
                    for (int64_t c = g * D; c < (g + 1) * D; c++)
                        for (int64_t s = 0; s < S; s++) v += (at(x, n, c, s, S) - m) * (at(x, n, c, s, S) - m);
                    double rstd = 1 / sqrt(v / cnt + 1e-4);
                    for (int64_t c = g * D; c < (g + 1) * D; c++)
                        for (int64_t s = 0; s < S; s++) {
                            double want = (at(x, n, c, s, S) - m) * rstd * fx_dtype_load_f64(dt, fx_tensor_data(w), c) +
                                          fx_dtype_load_f64(dt, fx_tensor_data(b), c);
                            assert_true(fabs(at(o[0].u.t, n, c, s, S) - want) <= tol * (1 + fabs(want)));
                        }
                    assert_true(fabs(fx_dtype_load_f64(dt, fx_tensor_data(o[1].u.t), n * G + g) - m) <= tol * (1 + fabs(m)));
                    assert_true(fabs(fx_dtype_load_f64(dt, fx_tensor_data(o[2].u.t), n * G + g) - rstd) <= tol * (1 + rstd));
                }
            for (int i = 0; i < 3; i++) fx_ivalue_clear(&o[i]);
            for (int i = 0; i < 3; i++) fx_ivalue_clear(&a[i]);
            fx_tensor_release(x), fx_tensor_release(w), fx_tensor_release(b);
        }
}

/* With an interrupt pending, op(args) fails with FX_EINTR "interrupted!" (the kernel stopped
 * after its first piece of work). */
static void expect_interrupted(fx_op_id id, fx_ivalue *a) {
    fx_err err;
    fx_err_clear(&err);
    fx_ivalue o[FX_SCHEMA_MAX_RETS] = {0};
    fx_interrupt_request();
    int rc = fx_dispatch(ka_eager(), fx_op_get(id), a, o, &err);
    fx_interrupt_clear();
    if (rc == FX_OK)
        for (int i = 0; i < fx_op_get(id)->schema.nrets; i++) fx_ivalue_clear(&o[i]);
    assert_int_equal(rc, FX_EINTR);
}

static void test_kernels_stop_on_interrupt(void **state) {
    (void)state;
    const int64_t big[2] = {4, 1 << 19}, img[4] = {4, 2, 8, 8}, wsz[4] = {2, 2, 3, 3};
    fx_tensor *x = ka_make(FX_DTYPE_F32, 0, 2, big, 0);
    fx_tensor *im = ka_make(FX_DTYPE_F32, 0, 4, img, 0), *w = ka_make(FX_DTYPE_F32, 0, 4, wsz, 0);
    fx_ivalue vx = fx_iv_tensor(x), vim = fx_iv_tensor(im), vw = fx_iv_tensor(w);
    fx_ivalue l0, l1, lpad, lempty;
    fx_err err;
    int64_t zero = 0, one = 1, pads[2] = {1, 1}, ones2[2] = {1, 1}, zeros2[2] = {0, 0};
    assert_int_equal(fx_iv_int_list(1, &zero, &l0, &err), FX_OK);
    assert_int_equal(fx_iv_int_list(1, &one, &l1, &err), FX_OK);
    assert_int_equal(fx_iv_int_list(2, pads, &lpad, &err), FX_OK);
    assert_int_equal(fx_iv_int_list(0, NULL, &lempty, &err), FX_OK);
    fx_ivalue sort_a[FX_SCHEMA_MAX_ARGS] = {vx, fx_iv_int(1), fx_iv_bool(false)};
    expect_interrupted(FX_OP_SORT, sort_a);
    fx_ivalue flip_a[FX_SCHEMA_MAX_ARGS] = {vx, l1};
    expect_interrupted(FX_OP_FLIP, flip_a);
    fx_ivalue pad_a[FX_SCHEMA_MAX_ARGS] = {vx, lpad, fx_iv_float(0)};
    expect_interrupted(FX_OP_CONSTANT_PAD_ND, pad_a);
    fx_ivalue norm_a[FX_SCHEMA_MAX_ARGS] = {vx, fx_iv_float(2), fx_iv_none()};
    expect_interrupted(FX_OP_LINALG_VECTOR_NORM, norm_a);
    fx_ivalue ls1, lp0, ld1, lop;
    assert_int_equal(fx_iv_int_list(2, ones2, &ls1, &err), FX_OK);
    assert_int_equal(fx_iv_int_list(2, zeros2, &lp0, &err), FX_OK);
    assert_int_equal(fx_iv_int_list(2, ones2, &ld1, &err), FX_OK);
    assert_int_equal(fx_iv_int_list(2, zeros2, &lop, &err), FX_OK);
    fx_ivalue conv_a[FX_SCHEMA_MAX_ARGS] = {vim, vw, fx_iv_none(), ls1, lp0, ld1, fx_iv_bool(false), lop, fx_iv_int(1)};
    expect_interrupted(FX_OP_CONVOLUTION, conv_a);
    fx_ivalue bn_a[FX_SCHEMA_MAX_ARGS] = {vim, fx_iv_none(), fx_iv_none(), fx_iv_bool(true), fx_iv_float(0.1), fx_iv_float(1e-5)};
    expect_interrupted(FX_OP__NATIVE_BATCH_NORM_LEGIT_NO_STATS, bn_a);
    fx_ivalue gn_a[FX_SCHEMA_MAX_ARGS] = {vim, fx_iv_int(2)};
    expect_interrupted(FX_OP_GROUP_NORM, gn_a);
    fx_ivalue_clear(&l0), fx_ivalue_clear(&l1), fx_ivalue_clear(&lpad), fx_ivalue_clear(&lempty);
    fx_ivalue_clear(&ls1), fx_ivalue_clear(&lp0), fx_ivalue_clear(&ld1), fx_ivalue_clear(&lop);
    fx_ivalue_clear(&vx), fx_ivalue_clear(&vim), fx_ivalue_clear(&vw);
    fx_tensor_release(x), fx_tensor_release(im), fx_tensor_release(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_norm_naive),
        cmocka_unit_test(test_group_norm_naive),
        cmocka_unit_test(test_kernels_stop_on_interrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
