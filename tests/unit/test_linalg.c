/* tests/unit/test_linalg.c — mm, bmm, dot, mv, linear (2-D and 1-D weights), addmm(_),
 * baddbmm(_), outer, the gemv path of single-row / single-column products, and the matmul
 * composite.
 * Layer: tests (cmocka, links libfxdb.a). The reference is a plain triple loop in double over
 * numpy's matmul rules. Operands hold small integers, so every dtype (float16 and bfloat16
 * included, whose products go through float32) must match the reference exactly; a second pass
 * with random floats checks float32 / float64 within allclose tolerances. Layouts cover the
 * BLAS-direct cases (contiguous, transposed) and the packed ones (gapped, expanded). Composite
 * matmul is also checked by the ATen ops a trace records, case by case of _matmul_impl. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/shape.h"
#include "tests/unit/kb_util.h"

/* ---- operands -------------------------------------------------------------------------------- */

/* Small whole values ((i * 5 + seed) % 7 - 3) a product keeps exact in every dtype; bool and
 * uint8 get 0/1. operand() lays them out as kb_make_with does. */
static double operand_value(fx_dtype dt, int64_t i, double seed) {
    int64_t k = i * 5 + (int64_t)seed;
    if (dt == FX_DTYPE_BOOL || dt == FX_DTYPE_U8) return (double)(k % 3 == 0);
    return (double)(k % 7 - 3);
}

static fx_tensor *operand(fx_dtype dt, int nd, const int64_t *sizes, int layout, int seed) {
    return kb_make_with(dt, nd, sizes, layout, operand_value, seed);
}

/* numpy matmul in double: a (na dims) @ b (nb dims) -> out, with *ond / osz its shape. */
static double *ref_matmul(const fx_tensor *a, const fx_tensor *b, int *ond, int64_t *osz,
                          bool as_bool) {
    int na = fx_tensor_ndim(a), nb = fx_tensor_ndim(b);
    int64_t n = na > 1 ? fx_tensor_size(a, na - 2) : 1, k = fx_tensor_size(a, na - 1);
    int64_t p = nb > 1 ? fx_tensor_size(b, nb - 1) : 1;
    int ba = na > 2 ? na - 2 : 0, bb = nb > 2 ? nb - 2 : 0, bn = ba > bb ? ba : bb;
    int64_t bs[FX_MAX_DIMS], total_b = 1;
    for (int d = 0; d < bn; d++) {
        int da = d - (bn - ba), db = d - (bn - bb);
        int64_t sa = da >= 0 ? fx_tensor_size(a, da) : 1, sb = db >= 0 ? fx_tensor_size(b, db) : 1;
        bs[d] = sa == 1 ? sb : sa;
        total_b *= bs[d];
    }
    *ond = 0;
    for (int d = 0; d < bn; d++) osz[(*ond)++] = bs[d];
    if (na > 1) osz[(*ond)++] = n;
    if (nb > 1) osz[(*ond)++] = p;
    double *out = calloc((size_t)(total_b * n * p + 1), sizeof(double));
    for (int64_t bi = 0; bi < total_b; bi++) {
        int64_t bidx[FX_MAX_DIMS], q = bi;
        for (int d = bn - 1; d >= 0; d--) bidx[d] = q % bs[d], q /= bs[d];
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < p; j++) {
                double s = 0;
                for (int64_t kk = 0; kk < k; kk++) {
                    int64_t ia[FX_MAX_DIMS], ib[FX_MAX_DIMS];
                    for (int d = 0; d < ba; d++)
                        ia[d] = fx_tensor_size(a, d) == 1 ? 0 : bidx[d + bn - ba];
                    for (int d = 0; d < bb; d++)
                        ib[d] = fx_tensor_size(b, d) == 1 ? 0 : bidx[d + bn - bb];
                    if (na > 1) ia[na - 2] = i;
                    ia[na - 1] = kk;
                    if (nb > 1) ib[nb - 2] = kk, ib[nb - 1] = j;
                    else ib[0] = kk;
                    double x = fx_tensor_get_f64(a, ia) * fx_tensor_get_f64(b, ib);
                    s = as_bool ? (s != 0 || x != 0) : s + x;
                }
                out[(bi * n + i) * p + j] = s;
            }
    }
    return out;
}

static void expect_matmul_result(const fx_tensor *r, const fx_tensor *a, const fx_tensor *b,
                                 double tol) {
    int ond;
    int64_t osz[FX_MAX_DIMS];
    double *want = ref_matmul(a, b, &ond, osz, fx_tensor_dtype(a) == FX_DTYPE_BOOL);
    if (!kb_sizes_are(r, ond, osz)) {
        char b1[64], b2[64];
        fail_msg("shape %s, want %s",
                 fx_shape_str(fx_tensor_ndim(r), fx_tensor_sizes(r), b1, sizeof b1),
                 fx_shape_str(ond, osz, b2, sizeof b2));
    }
    int64_t n = fx_tensor_numel(r);
    for (int64_t i = 0; i < n; i++) {
        double g = fx_tensor_flat_f64(r, i);
        if (fabs(g - want[i]) > tol * (1 + fabs(want[i])))
            fail_msg("element %lld: got %g want %g", (long long)i, g, want[i]);
    }
    free(want);
}

/* ---- mm / bmm / dot / mv ---------------------------------------------------------------------- */

static void test_mm_all_dtypes_layouts(void **state) {
    (void)state;
    static const int64_t shapes[][3] = {{2, 3, 4}, {1, 5, 3}, {4, 1, 2}, {3, 4, 1},
                                        {1, 1, 1}, {5, 0, 2}, {0, 3, 2}, {7, 8, 6}};
    int count = 0;
    for (size_t di = 0; di < NDT; di++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int la = 0; la < L_COUNT; la++)
                for (int lb = 0; lb < L_COUNT; lb++) {
                    int64_t M = shapes[si][0], K = shapes[si][1], N = shapes[si][2];
                    fx_tensor *a = operand(k_dtypes[di], 2, (int64_t[]){M, K}, la, 1);
                    fx_tensor *b = operand(k_dtypes[di], 2, (int64_t[]){K, N}, lb, 4);
                    fx_ivalue av = kb_iv(a), bv = kb_iv(b);
                    fx_tensor *r = kb_call(&g_eager, FX_OP_MM, 2, &av, &bv);
                    if (!r) fail_msg("mm: %s", kb_err.msg);
                    assert_int_equal(fx_tensor_dtype(r), k_dtypes[di]);
                    assert_true(fx_tensor_is_contiguous(r));
                    if (k_dtypes[di] == FX_DTYPE_I8 || k_dtypes[di] == FX_DTYPE_U8) {
                        /* wrap-around is part of the contract: compare modulo 256 */
                        int ond;
                        int64_t osz[FX_MAX_DIMS];
                        double *want = ref_matmul(a, b, &ond, osz, false);
                        for (int64_t i = 0; i < M * N; i++) {
                            int64_t w = (int64_t)want[i], g = fx_tensor_flat_i64(r, i);
                            assert_int_equal((uint8_t)w, (uint8_t)g);
                        }
                        free(want);
                    } else {
                        expect_matmul_result(r, a, b, 0);
                    }
                    fx_tensor_release(r);
                    fx_tensor_release(a);
                    fx_tensor_release(b);
                    count++;
                }
    assert_int_equal(count, (int)(NDT * 8 * L_COUNT * L_COUNT));
}

static void test_mm_random_floats(void **state) {
    (void)state;
    srand(3);
    for (int trial = 0; trial < 60; trial++) {
        fx_dtype dt = trial % 2 ? FX_DTYPE_F64 : FX_DTYPE_F32;
        int64_t M = 1 + rand() % 40, K = 1 + rand() % 70, N = 1 + rand() % 30;
        fx_tensor *a = (trial % 3 == 0) ? kb_transposed(dt, 2, (int64_t[]){M, K}, 0, 0)
                                        : kb_tensor(dt, 2, (int64_t[]){M, K}, NULL, 0, 0);
        fx_tensor *b = (trial % 5 == 0) ? kb_gapped(dt, 2, (int64_t[]){K, N}, 0, 0)
                                        : kb_transposed(dt, 2, (int64_t[]){K, N}, 0, 0);
        int64_t idx[2];
        for (idx[0] = 0; idx[0] < M; idx[0]++)
            for (idx[1] = 0; idx[1] < K; idx[1]++)
                fx_tensor_set_f64(a, idx, (double)rand() / RAND_MAX * 2 - 1);
        for (idx[0] = 0; idx[0] < K; idx[0]++)
            for (idx[1] = 0; idx[1] < N; idx[1]++)
                fx_tensor_set_f64(b, idx, (double)rand() / RAND_MAX * 2 - 1);
        fx_ivalue av = kb_iv(a), bv = kb_iv(b);
        fx_tensor *r = kb_call(&g_eager, FX_OP_MM, 2, &av, &bv);
        expect_matmul_result(r, a, b, dt == FX_DTYPE_F32 ? 1e-5 : 1e-12);
        fx_tensor_release(r);
        fx_tensor_release(a);
        fx_tensor_release(b);
    }
}

static void test_bmm_dot_mv(void **state) {
    (void)state;
    for (size_t di = 0; di < NDT; di++)
        for (int la = 0; la < L_COUNT; la++)
            for (int lb = 0; lb < L_COUNT; lb++) {
                fx_dtype dt = k_dtypes[di];
                if (dt == FX_DTYPE_I8 || dt == FX_DTYPE_U8) continue; /* covered by mm */
                fx_tensor *a = operand(dt, 3, (int64_t[]){3, 2, 4}, la, 2);
                fx_tensor *b = operand(dt, 3, (int64_t[]){3, 4, 5}, lb, 5);
                fx_ivalue av = kb_iv(a), bv = kb_iv(b);
                fx_tensor *r = kb_call(&g_eager, FX_OP_BMM, 2, &av, &bv);
                if (!r) fail_msg("bmm: %s", kb_err.msg);
                expect_matmul_result(r, a, b, 0);
                fx_tensor_release(r);
                fx_tensor_release(a);
                fx_tensor_release(b);
                /* dot and mv */
                fx_tensor *v1 = operand(dt, 1, (int64_t[]){6}, la == L_EXPANDED ? L_CONTIG : la, 1);
                fx_tensor *v2 = operand(dt, 1, (int64_t[]){6}, lb, 3);
                fx_tensor *m = operand(dt, 2, (int64_t[]){4, 6}, la, 6);
                fx_ivalue v1v = kb_iv(v1), v2v = kb_iv(v2), mv = kb_iv(m);
                r = kb_call(&g_eager, FX_OP_DOT, 2, &v1v, &v2v);
                if (!r) fail_msg("dot: %s", kb_err.msg);
                assert_int_equal(fx_tensor_ndim(r), 0);
                expect_matmul_result(r, v1, v2, 0);
                fx_tensor_release(r);
                r = kb_call(&g_eager, FX_OP_MV, 2, &mv, &v2v);
                if (!r) fail_msg("mv: %s", kb_err.msg);
                expect_matmul_result(r, m, v2, 0);
                fx_tensor_release(r);
                fx_tensor_release(v1);
                fx_tensor_release(v2);
                fx_tensor_release(m);
            }
}

static void test_linalg_errors(void **state) {
    (void)state;
    fx_tensor *a = operand(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, L_CONTIG, 0);
    fx_tensor *b = operand(FX_DTYPE_F32, 2, (int64_t[]){4, 5}, L_CONTIG, 0);
    fx_tensor *d = operand(FX_DTYPE_F64, 2, (int64_t[]){3, 5}, L_CONTIG, 0);
    fx_tensor *v = operand(FX_DTYPE_F32, 1, (int64_t[]){3}, L_CONTIG, 0);
    fx_tensor *v4 = operand(FX_DTYPE_F32, 1, (int64_t[]){4}, L_CONTIG, 0);
    fx_tensor *c3 = operand(FX_DTYPE_F32, 3, (int64_t[]){2, 3, 4}, L_CONTIG, 0);
    fx_tensor *c3b = operand(FX_DTYPE_F32, 3, (int64_t[]){2, 5, 4}, L_CONTIG, 0);
    fx_ivalue av = kb_iv(a), bv = kb_iv(b), dv = kb_iv(d), vv = kb_iv(v), v4v = kb_iv(v4);
    fx_ivalue c3v = kb_iv(c3), c3bv = kb_iv(c3b), two = fx_iv_int(2);
    assert_null(kb_call(&g_eager, FX_OP_MM, 2, &av, &bv));
    assert_string_equal(kb_err.msg, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
    assert_null(kb_call(&g_eager, FX_OP_MM, 2, &av, &dv));
    assert_string_equal(kb_err.msg, "expected m1 and m2 to have the same dtype, but got: float != "
                                    "double");
    assert_null(kb_call(&g_eager, FX_OP_MM, 2, &vv, &av));
    assert_string_equal(kb_err.msg, "self must be a matrix");
    assert_null(kb_call(&g_eager, FX_OP_MM, 2, &av, &vv));
    assert_string_equal(kb_err.msg, "mat2 must be a matrix");
    assert_null(kb_call(&g_eager, FX_OP_MM, 2, &av, &two));
    assert_string_equal(kb_err.msg, "mm(): argument 'mat2' (position 2) must be Tensor, not int");
    assert_null(kb_call(&g_eager, FX_OP_BMM, 2, &c3v, &c3bv));
    assert_string_equal(kb_err.msg, "Expected size for first two dimensions of batch2 tensor to "
                                    "be: [2, 4] but got: [2, 5].");
    assert_null(kb_call(&g_eager, FX_OP_BMM, 2, &av, &c3v));
    assert_string_equal(kb_err.msg, "batch1 must be a 3D tensor");
    assert_null(kb_call(&g_eager, FX_OP_DOT, 2, &vv, &v4v));
    assert_string_equal(kb_err.msg, "inconsistent tensor size, expected tensor [3] and src [4] to "
                                    "have the same number of elements, but got 3 and 4 elements "
                                    "respectively");
    assert_null(kb_call(&g_eager, FX_OP_DOT, 2, &av, &vv));
    assert_string_equal(kb_err.msg, "1D tensors expected, but got 2D and 1D tensors");
    assert_null(kb_call(&g_eager, FX_OP_MV, 2, &av, &v4v));
    assert_string_equal(kb_err.msg, "size mismatch, got input (2), mat (2x3), vec (4)");
    /* matmul surfaces the messages of the op each case becomes */
    assert_null(kb_call(&g_eager, FX_OP_MATMUL, 2, &av, &bv));
    assert_string_equal(kb_err.msg, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
    assert_null(kb_call(&g_eager, FX_OP_MATMUL, 2, &av, &v4v));
    assert_string_equal(kb_err.msg, "size mismatch, got input (2), mat (2x3), vec (4)");
    assert_null(kb_call(&g_eager, FX_OP_MATMUL, 2, &v4v, &av));
    assert_string_equal(kb_err.msg, "mat1 and mat2 shapes cannot be multiplied (1x4 and 2x3)");
    assert_null(kb_call(&g_eager, FX_OP_MATMUL, 2, &vv, &v4v));
    assert_string_equal(kb_err.msg, "inconsistent tensor size, expected tensor [3] and src [4] to "
                                    "have the same number of elements, but got 3 and 4 elements "
                                    "respectively");
    assert_null(kb_call(&g_eager, FX_OP_MATMUL, 2, &c3v, &c3bv));
    assert_string_equal(kb_err.msg, "Expected size for first two dimensions of batch2 tensor to "
                                    "be: [2, 4] but got: [2, 5].");
    fx_tensor *s = NULL;
    fx_tensor_scalar(1, FX_DTYPE_F32, &s, &kb_err);
    fx_ivalue sv = kb_iv(s);
    assert_null(kb_call(&g_eager, FX_OP_MATMUL, 2, &sv, &av));
    assert_string_equal(kb_err.msg, "both arguments to matmul need to be at least 1D, but they "
                                    "are 0D and 2D");
    fx_tensor *e1 = operand(FX_DTYPE_F32, 3, (int64_t[]){2, 3, 4}, L_CONTIG, 0);
    fx_tensor *e2 = operand(FX_DTYPE_F32, 3, (int64_t[]){3, 4, 5}, L_CONTIG, 0);
    fx_ivalue e1v = kb_iv(e1), e2v = kb_iv(e2);
    assert_null(kb_call(&g_eager, FX_OP_MATMUL, 2, &e1v, &e2v));
    assert_string_equal(kb_err.msg, "The size of tensor a (2) must match the size of tensor b (3) "
                                    "at non-singleton dimension 0");
    /* linear */
    fx_tensor *w = operand(FX_DTYPE_F32, 2, (int64_t[]){5, 4}, L_CONTIG, 0);
    fx_tensor *wd = operand(FX_DTYPE_F64, 2, (int64_t[]){5, 3}, L_CONTIG, 0);
    fx_tensor *bias = operand(FX_DTYPE_F32, 1, (int64_t[]){4}, L_CONTIG, 0);
    fx_ivalue wv = kb_iv(w), wdv = kb_iv(wd), biasv = kb_iv(bias);
    assert_null(kb_call(&g_eager, FX_OP_LINEAR, 2, &av, &wv));
    assert_string_equal(kb_err.msg, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
    fx_tensor *w3 = operand(FX_DTYPE_F32, 2, (int64_t[]){5, 3}, L_CONTIG, 0);
    fx_ivalue w3v = kb_iv(w3);
    assert_null(kb_call(&g_eager, FX_OP_LINEAR, 2, &c3bv, &w3v));
    assert_string_equal(kb_err.msg, "mat1 and mat2 shapes cannot be multiplied (10x4 and 3x5)");
    assert_null(kb_call(&g_eager, FX_OP_LINEAR, 2, &av, &wdv));
    assert_string_equal(kb_err.msg, "expected m1 and m2 to have the same dtype, but got: float != "
                                    "double");
    assert_null(kb_call(&g_eager, FX_OP_LINEAR, 3, &av, &w3v, &biasv));
    assert_string_equal(kb_err.msg, "The expanded size of the tensor (5) must match the existing "
                                    "size (4) at non-singleton dimension 1.  Target sizes: [2, "
                                    "5].  Tensor sizes: [4]"); /* addmm's expand of the bias */
    fx_tensor *ts[] = {a, b, d, v, v4, c3, c3b, s, e1, e2, w, wd, bias, w3};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) fx_tensor_release(ts[i]);
}

/* ---- linear ------------------------------------------------------------------------------------ */

static void test_linear(void **state) {
    (void)state;
    static const fx_dtype dts[] = {FX_DTYPE_F32, FX_DTYPE_F64, FX_DTYPE_F16, FX_DTYPE_BF16,
                                   FX_DTYPE_I64};
    static const struct {
        int nd;
        int64_t sizes[3];
    } xs[] = {{1, {4}}, {2, {3, 4}}, {3, {2, 3, 4}}, {2, {1, 4}}, {3, {2, 0, 4}}};
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
        for (size_t xi = 0; xi < sizeof xs / sizeof xs[0]; xi++)
            for (int lx = 0; lx < 3; lx++)
                for (int lw = 0; lw < 3; lw++)
                    for (int bias_kind = 0; bias_kind < 3; bias_kind++) {
                        fx_dtype dt = dts[di];
                        fx_tensor *x = operand(dt, xs[xi].nd, xs[xi].sizes, lx, 1);
                        fx_tensor *w = operand(dt, 2, (int64_t[]){5, 4}, lw, 2);
                        fx_tensor *b = bias_kind == 0 ? NULL
                                       : bias_kind == 1
                                           ? operand(dt, 1, (int64_t[]){5}, L_GAPPED, 3)
                                           : operand(dt, 1, (int64_t[]){1}, L_CONTIG, 3);
                        fx_ivalue xv = kb_iv(x), wv = kb_iv(w), none = fx_iv_none();
                        fx_ivalue bv = b ? kb_iv(b) : none;
                        fx_tensor *r = kb_call(&g_eager, FX_OP_LINEAR, 3, &xv, &wv, &bv);
                        if (!r) fail_msg("linear: %s", kb_err.msg);
                        /* reference: x @ w.T + b */
                        fx_ivalue d0 = fx_iv_int(0), d1 = fx_iv_int(1);
                        fx_tensor *wt = kb_call(&g_eager, FX_OP_TRANSPOSE_INT, 3, &wv, &d0, &d1);
                        int ond;
                        int64_t osz[FX_MAX_DIMS];
                        double *want = ref_matmul(x, wt, &ond, osz, false);
                        assert_true(kb_sizes_are(r, ond, osz));
                        int64_t n = fx_tensor_numel(r);
                        for (int64_t i = 0; i < n; i++) {
                            double bb = b ? fx_tensor_flat_f64(b, b == NULL ? 0
                                                                : fx_tensor_numel(b) == 1
                                                                    ? 0
                                                                    : i % 5)
                                          : 0;
                            assert_true(fx_tensor_flat_f64(r, i) == want[i] + bb);
                        }
                        free(want);
                        fx_tensor_release(wt);
                        fx_tensor_release(r);
                        fx_tensor_release(b);
                        fx_tensor_release(w);
                        fx_tensor_release(x);
                    }
}

/* linear with a 1-D weight is input @ weight (+ bias): the last dim disappears. */
static void test_linear_vector_weight(void **state) {
    (void)state;
    static const struct {
        int nd;
        int64_t sizes[3];
    } xs[] = {{1, {4}}, {2, {3, 4}}, {3, {2, 3, 4}}};
    for (size_t xi = 0; xi < sizeof xs / sizeof xs[0]; xi++)
        for (int lx = 0; lx < L_COUNT; lx++)
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                /* a [1] bias cannot be added in place to the 0-dim result of a 1-D input */
                if (with_bias && xs[xi].nd == 1) continue;
                fx_tensor *x = operand(FX_DTYPE_F32, xs[xi].nd, xs[xi].sizes, lx, 1);
                fx_tensor *w = operand(FX_DTYPE_F32, 1, (int64_t[]){4}, L_GAPPED, 2);
                fx_tensor *b = with_bias ? operand(FX_DTYPE_F32, 1, (int64_t[]){1}, L_CONTIG, 3) : NULL;
                fx_ivalue xv = kb_iv(x), wv = kb_iv(w), bv = b ? kb_iv(b) : fx_iv_none();
                fx_tensor *r = kb_call(&g_eager, FX_OP_LINEAR, 3, &xv, &wv, &bv);
                if (!r) fail_msg("linear 1-D weight: %s", kb_err.msg);
                int ond;
                int64_t osz[FX_MAX_DIMS];
                double *want = ref_matmul(x, w, &ond, osz, false);
                assert_true(kb_sizes_are(r, ond, osz));
                for (int64_t i = 0; i < fx_tensor_numel(r); i++)
                    assert_true(fx_tensor_flat_f64(r, i) == want[i] + (b ? fx_tensor_flat_f64(b, 0) : 0));
                free(want);
                fx_tensor_release(r);
                fx_tensor_release(b);
                fx_tensor_release(w);
                fx_tensor_release(x);
            }
}

/* The single-row / single-column products that go to sgemv / dgemv: a decoder step
 * (1, dim) @ weight.T, with the vector or the matrix in every layout, random floats. */
static void test_gemv_path(void **state) {
    (void)state;
    srand(11);
    for (int trial = 0; trial < 80; trial++) {
        fx_dtype dt = trial % 2 ? FX_DTYPE_F64 : FX_DTYPE_F32;
        int64_t K = 1 + rand() % 90, N = 1 + rand() % 70;
        bool column = trial % 4 >= 2; /* (N, K) @ (K, 1) instead of (1, K) @ (K, N) */
        int lv = (trial / 4) % L_COUNT, lm = (trial / 8) % 3;
        fx_tensor *vec = column ? operand(dt, 2, (int64_t[]){K, 1}, lv, 1) : operand(dt, 2, (int64_t[]){1, K}, lv, 1);
        fx_tensor *mat = column ? operand(dt, 2, (int64_t[]){N, K}, lm, 2) : operand(dt, 2, (int64_t[]){K, N}, lm, 2);
        int64_t idx[2];
        fx_tensor *ts[2] = {vec, mat};
        for (int t = 0; t < 2; t++) {
            if (lv == L_EXPANDED && t == 0) continue; /* an expanded vector keeps its repeats */
            for (int64_t i = 0; i < fx_tensor_numel(ts[t]); i++) {
                idx[0] = i / fx_tensor_size(ts[t], 1), idx[1] = i % fx_tensor_size(ts[t], 1);
                fx_tensor_set_f64(ts[t], idx, (double)rand() / RAND_MAX * 2 - 1);
            }
        }
        fx_ivalue a = kb_iv(column ? mat : vec), b = kb_iv(column ? vec : mat);
        fx_tensor *r = kb_call(&g_eager, FX_OP_MM, 2, &a, &b);
        if (!r) fail_msg("mm: %s", kb_err.msg);
        expect_matmul_result(r, column ? mat : vec, column ? vec : mat, dt == FX_DTYPE_F32 ? 1e-5 : 1e-12);
        fx_tensor_release(r);
        /* linear(x[1, K], w[N, K]): the Llama decode step */
        if (!column) {
            fx_tensor *w = operand(dt, 2, (int64_t[]){N, K}, lm, 3);
            fx_ivalue xv = kb_iv(vec), wv = kb_iv(w), none = fx_iv_none(), d0 = fx_iv_int(0), d1 = fx_iv_int(1);
            r = kb_call(&g_eager, FX_OP_LINEAR, 3, &xv, &wv, &none);
            fx_tensor *wt = kb_call(&g_eager, FX_OP_TRANSPOSE_INT, 3, &wv, &d0, &d1);
            expect_matmul_result(r, vec, wt, dt == FX_DTYPE_F32 ? 1e-5 : 1e-12);
            fx_tensor_release(wt);
            fx_tensor_release(r);
            fx_tensor_release(w);
        }
        fx_tensor_release(vec);
        fx_tensor_release(mat);
    }
}

/* addmm / addmm_ / baddbmm / baddbmm_: beta * self + alpha * product, every dtype and layout;
 * beta = 0 ignores self (NaN included). */
static void test_addmm_baddbmm(void **state) {
    (void)state;
    static const double coef[][2] = {{1, 1}, {0.5, 2}, {0, 3}, {2, 0}};
    for (size_t di = 0; di < NDT; di++)
        for (int l = 0; l < L_COUNT; l++)
            for (size_t ci = 0; ci < sizeof coef / sizeof coef[0]; ci++)
                for (int batched = 0; batched < 2; batched++)
                    for (int inplace = 0; inplace < 2; inplace++) {
                        fx_dtype dt = k_dtypes[di];
                        bool fl = fx_dtype_is_float(dt);
                        double beta = fl ? coef[ci][0] : (double)(int64_t)coef[ci][0];
                        double alpha = fl ? coef[ci][1] : (double)(int64_t)coef[ci][1];
                        if (dt == FX_DTYPE_BOOL) beta = beta != 0, alpha = alpha != 0;
                        fx_tensor *m1 = batched ? operand(dt, 3, (int64_t[]){2, 3, 4}, l, 1) : operand(dt, 2, (int64_t[]){3, 4}, l, 1);
                        fx_tensor *m2 = batched ? operand(dt, 3, (int64_t[]){2, 4, 5}, (l + 1) % L_COUNT, 2)
                                                : operand(dt, 2, (int64_t[]){4, 5}, (l + 1) % L_COUNT, 2);
                        /* self: broadcast [5] out of place; the full shape, transposed, in place */
                        fx_tensor *self = inplace ? (batched ? operand(dt, 3, (int64_t[]){2, 3, 5}, L_TRANS, 3) : operand(dt, 2, (int64_t[]){3, 5}, L_TRANS, 3))
                                                  : operand(dt, 1, (int64_t[]){5}, L_GAPPED, 3);
                        int ond;
                        int64_t osz[FX_MAX_DIMS];
                        double *prod = ref_matmul(m1, m2, &ond, osz, dt == FX_DTYPE_BOOL);
                        int64_t n = 1;
                        for (int d = 0; d < ond; d++) n *= osz[d];
                        double *want = malloc(sizeof(double) * (size_t)n);
                        for (int64_t i = 0; i < n; i++) {
                            double sv = inplace ? fx_tensor_flat_f64(self, i) : fx_tensor_flat_f64(self, i % 5);
                            double w = alpha * prod[i] + (beta == 0 ? 0 : beta * sv);
                            if (dt == FX_DTYPE_BOOL) w = (alpha && prod[i]) || (beta && sv);
                            char buf[8];
                            fx_dtype_store_f64(dt, buf, 0, w);
                            want[i] = fx_dtype_load_f64(dt, buf, 0);
                        }
                        fx_ivalue sv = kb_iv(self), av = kb_iv(m1), bv = kb_iv(m2);
                        fx_ivalue be = fl ? fx_iv_float(beta) : fx_iv_int((int64_t)beta);
                        fx_ivalue al = fl ? fx_iv_float(alpha) : fx_iv_int((int64_t)alpha);
                        if (dt == FX_DTYPE_BOOL) be = fx_iv_bool(beta != 0), al = fx_iv_bool(alpha != 0);
                        fx_op_id op = batched ? (inplace ? FX_OP_BADDBMM_ : FX_OP_BADDBMM) : (inplace ? FX_OP_ADDMM_ : FX_OP_ADDMM);
                        fx_tensor *r = kb_call(&g_eager, op, 5, &sv, &av, &bv, &be, &al);
                        if (!r) fail_msg("%s: %s", fx_op_qualname(fx_op_get(op)), kb_err.msg);
                        if (inplace) assert_ptr_equal(r, self);
                        assert_true(kb_sizes_are(r, ond, osz));
                        /* half types round the product once after a float32 accumulation */
                        double tol = dt == FX_DTYPE_BF16 ? 0.02 : dt == FX_DTYPE_F16 ? 2e-3 : 1e-6;
                        for (int64_t i = 0; i < n; i++) {
                            double g = fx_tensor_flat_f64(r, i);
                            if (fabs(g - want[i]) > tol * (1 + fabs(want[i])))
                                fail_msg("%s dtype %zu layout %d coef %zu: element %lld is %g, want %g",
                                         fx_op_qualname(fx_op_get(op)), di, l, ci, (long long)i, g, want[i]);
                        }
                        free(prod);
                        free(want);
                        fx_tensor_release(r);
                        fx_tensor_release(self);
                        fx_tensor_release(m1);
                        fx_tensor_release(m2);
                    }
    /* beta = 0: a NaN in self does not reach the result */
    fx_tensor *self = operand(FX_DTYPE_F32, 2, (int64_t[]){2, 2}, L_CONTIG, 0);
    fx_tensor_set_f64(self, (int64_t[]){0, 0}, NAN);
    fx_tensor *a = operand(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, L_CONTIG, 1);
    fx_tensor *b = operand(FX_DTYPE_F32, 2, (int64_t[]){3, 2}, L_CONTIG, 2);
    fx_ivalue sv = kb_iv(self), av = kb_iv(a), bv = kb_iv(b), zero = fx_iv_int(0);
    fx_tensor *r = kb_call(&g_eager, FX_OP_ADDMM, 4, &sv, &av, &bv, &zero);
    assert_false(isnan(fx_tensor_flat_f64(r, 0)));
    fx_tensor_release(r);
    fx_tensor_release(self);
    fx_tensor_release(a);
    fx_tensor_release(b);
}

static void test_outer(void **state) {
    (void)state;
    fx_tensor *a = operand(FX_DTYPE_I64, 1, (int64_t[]){3}, L_GAPPED, 1);
    fx_tensor *b = operand(FX_DTYPE_F32, 1, (int64_t[]){4}, L_CONTIG, 2);
    fx_ivalue av = kb_iv(a), bv = kb_iv(b);
    fx_ctx tr;
    kb_rec rec;
    kb_trace_ctx(&tr, &rec, true);
    fx_tensor *r = kb_call(&tr, FX_OP_OUTER, 2, &av, &bv);
    if (!r) fail_msg("outer: %s", kb_err.msg);
    /* reshape of a 1-D tensor to [n, 1] is a view whatever its stride */
    assert_string_equal(kb_rec_str(&rec), "view.default,mul.Tensor");
    assert_true(kb_sizes_are(r, 2, (int64_t[]){3, 4}));
    assert_int_equal(fx_tensor_dtype(r), FX_DTYPE_F32);
    for (int64_t i = 0; i < 12; i++)
        assert_true(fx_tensor_flat_f64(r, i) == fx_tensor_flat_f64(a, i / 4) * fx_tensor_flat_f64(b, i % 4));
    fx_tensor_release(r);
    fx_tensor *m = operand(FX_DTYPE_F32, 2, (int64_t[]){2, 2}, L_CONTIG, 0);
    fx_ivalue mv = kb_iv(m);
    const fx_opdef *def = fx_op_get(FX_OP_OUTER);
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {mv, bv}, outs[FX_SCHEMA_MAX_RETS];
    assert_int_not_equal(fx_dispatch(&g_eager, def, args, outs, &kb_err), FX_OK);
    assert_string_equal(kb_err.msg, "outer: Expected 1-D argument self, but got 2-D");
    fx_tensor_release(m);
    fx_tensor_release(a);
    fx_tensor_release(b);
}

/* The messages of addmm / baddbmm / linear with a vector weight. */
static void test_addmm_errors(void **state) {
    (void)state;
    struct { const char *msg; fx_op_id op; int n; fx_tensor *t[3]; } cases[] = {
        {"mat1 must be a matrix, got 1-D tensor", FX_OP_ADDMM, 3,
         {operand(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, 0, 0), operand(FX_DTYPE_F32, 1, (int64_t[]){2}, 0, 0), operand(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, 0, 0)}},
        {"self and mat2 must have the same dtype, but got Double and Float", FX_OP_ADDMM, 3,
         {operand(FX_DTYPE_F64, 2, (int64_t[]){2, 2}, 0, 0), operand(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, 0, 0), operand(FX_DTYPE_F32, 2, (int64_t[]){3, 2}, 0, 0)}},
        {"mat1 and mat2 must have the same dtype, but got Double and Float", FX_OP_ADDMM, 3,
         {operand(FX_DTYPE_F32, 2, (int64_t[]){2, 2}, 0, 0), operand(FX_DTYPE_F64, 2, (int64_t[]){2, 3}, 0, 0), operand(FX_DTYPE_F32, 2, (int64_t[]){3, 2}, 0, 0)}},
        {"mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)", FX_OP_ADDMM, 3,
         {operand(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, 0, 0), operand(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, 0, 0), operand(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, 0, 0)}},
        {"The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 1.  Target sizes: [2, 2].  Tensor sizes: [3]", FX_OP_ADDMM, 3,
         {operand(FX_DTYPE_F32, 1, (int64_t[]){3}, 0, 0), operand(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, 0, 0), operand(FX_DTYPE_F32, 2, (int64_t[]){3, 2}, 0, 0)}},
        {"Bad in-place call: input tensor size [2] and output tensor size [2, 2] should match", FX_OP_ADDMM_, 3,
         {operand(FX_DTYPE_F32, 1, (int64_t[]){2}, 0, 0), operand(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, 0, 0), operand(FX_DTYPE_F32, 2, (int64_t[]){3, 2}, 0, 0)}},
        {"Expected size for first two dimensions of batch2 tensor to be: [1, 3] but got: [1, 4].", FX_OP_BADDBMM, 3,
         {operand(FX_DTYPE_F32, 3, (int64_t[]){1, 2, 2}, 0, 0), operand(FX_DTYPE_F32, 3, (int64_t[]){1, 2, 3}, 0, 0), operand(FX_DTYPE_F32, 3, (int64_t[]){1, 4, 2}, 0, 0)}},
        {"Input dtypes must be the same, got: input double, batch1: float, batch2: float", FX_OP_BADDBMM, 3,
         {operand(FX_DTYPE_F64, 3, (int64_t[]){1, 2, 2}, 0, 0), operand(FX_DTYPE_F32, 3, (int64_t[]){1, 2, 3}, 0, 0), operand(FX_DTYPE_F32, 3, (int64_t[]){1, 3, 2}, 0, 0)}},
        {"The expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 1.  Target sizes: [2, 3, 2].  Tensor sizes: [1, 2, 2]", FX_OP_BADDBMM, 3,
         {operand(FX_DTYPE_F32, 3, (int64_t[]){1, 2, 2}, 0, 0), operand(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, 0, 0), operand(FX_DTYPE_F32, 3, (int64_t[]){1, 3, 2}, 0, 0)}},
        {"size mismatch, got input (2), mat (2x3), vec (4)", FX_OP_LINEAR, 2,
         {operand(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, 0, 0), operand(FX_DTYPE_F32, 1, (int64_t[]){4}, 0, 0), NULL}},
        {"inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 and 4 elements respectively", FX_OP_LINEAR, 2,
         {operand(FX_DTYPE_F32, 1, (int64_t[]){3}, 0, 0), operand(FX_DTYPE_F32, 1, (int64_t[]){4}, 0, 0), NULL}},
        {"output with shape [] doesn't match the broadcast shape [1]", FX_OP_LINEAR, 3,
         {operand(FX_DTYPE_F32, 1, (int64_t[]){3}, 0, 0), operand(FX_DTYPE_F32, 1, (int64_t[]){3}, 0, 0), operand(FX_DTYPE_F32, 1, (int64_t[]){1}, 0, 0)}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const fx_opdef *def = fx_op_get(cases[c].op);
        fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0}, outs[FX_SCHEMA_MAX_RETS];
        for (int i = 0; i < cases[c].n; i++) args[i] = kb_iv(cases[c].t[i]);
        fx_err_clear(&kb_err);
        if (fx_dispatch(&g_eager, def, args, outs, &kb_err) == FX_OK) fail_msg("case %zu: no error", c);
        if (strcmp(kb_err.msg, cases[c].msg)) fail_msg("case %zu:\n  got  %s\n  want %s", c, kb_err.msg, cases[c].msg);
        for (int i = 0; i < 3; i++) fx_tensor_release(cases[c].t[i]);
    }
}

/* ---- matmul: results and decompositions ------------------------------------------------------- */

typedef struct mm_case {
    int na;
    int64_t a[4];
    int la;
    int nb;
    int64_t b[4];
    int lb;
    bool a_grad;
    const char *ops;
} mm_case;

static const mm_case k_matmul_cases[] = {
    {1, {3}, L_CONTIG, 1, {3}, L_CONTIG, false, "dot.default"},
    {2, {2, 3}, L_CONTIG, 1, {3}, L_CONTIG, false, "mv.default"},
    {1, {3}, L_CONTIG, 2, {3, 4}, L_TRANS, false,
     "unsqueeze.default,mm.default,squeeze.dim"},
    {2, {2, 3}, L_TRANS, 2, {3, 4}, L_CONTIG, false, "mm.default"},
    /* N-D @ 2-D folds into one mm */
    {3, {2, 5, 3}, L_CONTIG, 2, {3, 4}, L_CONTIG, false,
     "view.default,mm.default,_unsafe_view.default"},
    {4, {2, 2, 5, 3}, L_CONTIG, 1, {3}, L_CONTIG, false,
     "view.default,mv.default,_unsafe_view.default"},
    /* a batch that cannot fold without a copy: batched (reshape to its own shape is a view) */
    {3, {2, 5, 3}, L_TRANS, 2, {3, 4}, L_CONTIG, false,
     "expand.default,view.default,expand.default,view.default,bmm.default,"
     "_unsafe_view.default"},
    /* 1-D @ 3-D: the transposed big operand does not fold */
    {1, {3}, L_CONTIG, 3, {2, 3, 4}, L_CONTIG, false,
     "expand.default,view.default,expand.default,view.default,bmm.default,"
     "_unsafe_view.default"},
    /* 2-D @ 3-D never folds (unless the 2-D operand requires grad) */
    {2, {2, 3}, L_CONTIG, 3, {2, 3, 4}, L_CONTIG, false,
     "expand.default,view.default,expand.default,view.default,bmm.default,"
     "_unsafe_view.default"},
    {2, {2, 3}, L_CONTIG, 3, {2, 3, 4}, L_CONTIG, true,
     "transpose.int,t.default,clone.default,_unsafe_view.default,mm.default,"
     "_unsafe_view.default,transpose.int,clone.default"},
    /* 3-D @ 1-D with a vector rhs that cannot fold */
    {3, {2, 4, 3}, L_TRANS, 1, {3}, L_CONTIG, false,
     "expand.default,view.default,expand.default,view.default,unsqueeze.default,bmm.default,"
     "squeeze.dim,_unsafe_view.default"},
    /* broadcast batches: flattening an expanded batch needs a copy */
    {4, {2, 1, 3, 4}, L_CONTIG, 3, {5, 4, 2}, L_GAPPED, false,
     "expand.default,clone.default,_unsafe_view.default,expand.default,clone.default,"
     "_unsafe_view.default,bmm.default,_unsafe_view.default"},
    {3, {1, 3, 4}, L_EXPANDED, 3, {6, 4, 2}, L_CONTIG, false,
     "expand.default,view.default,expand.default,view.default,bmm.default,"
     "_unsafe_view.default"},
};

static void test_matmul_cases(void **state) {
    (void)state;
    for (size_t ci = 0; ci < sizeof k_matmul_cases / sizeof k_matmul_cases[0]; ci++) {
        const mm_case *c = &k_matmul_cases[ci];
        static const fx_dtype dts[] = {FX_DTYPE_F32, FX_DTYPE_F64, FX_DTYPE_BF16, FX_DTYPE_I32};
        for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
            fx_tensor *a = operand(dts[di], c->na, c->a, c->la, 1);
            fx_tensor *b = operand(dts[di], c->nb, c->b, c->lb, 2);
            fx_tensor_set_requires_grad(a, c->a_grad);
            fx_ivalue av = kb_iv(a), bv = kb_iv(b);
            fx_ctx tr;
            kb_rec rec;
            kb_trace_ctx(&tr, &rec, true);
            fx_tensor *r = kb_call(&tr, FX_OP_MATMUL, 2, &av, &bv);
            if (!r) fail_msg("case %zu: %s", ci, kb_err.msg);
            if (strcmp(kb_rec_str(&rec), c->ops))
                fail_msg("case %zu records\n  %s\nwant\n  %s", ci, kb_rec_str(&rec), c->ops);
            expect_matmul_result(r, a, b, 0);
            assert_int_equal(fx_tensor_dtype(r), dts[di]);
            fx_tensor_release(r);
            /* the same on meta tensors gives the same shape and the same ops */
            fx_tensor *ma = NULL, *mb = NULL;
            fx_tensor_empty_strided_like(a, FX_DEVICE_META, &ma, &kb_err);
            fx_tensor_empty_strided_like(b, FX_DEVICE_META, &mb, &kb_err);
            fx_tensor_set_requires_grad(ma, c->a_grad);
            fx_ivalue mav = kb_iv(ma), mbv = kb_iv(mb);
            kb_rec rec2;
            kb_trace_ctx(&tr, &rec2, false);
            r = kb_call(&tr, FX_OP_MATMUL, 2, &mav, &mbv);
            if (!r) fail_msg("meta case %zu: %s", ci, kb_err.msg);
            assert_true(fx_tensor_is_meta(r));
            assert_string_equal(kb_rec_str(&rec2), kb_rec_str(&rec));
            fx_tensor_release(r);
            fx_tensor_release(ma);
            fx_tensor_release(mb);
            fx_tensor_release(a);
            fx_tensor_release(b);
        }
    }
}

static void test_meta_shapes(void **state) {
    (void)state;
    fx_tensor *x = kb_meta(FX_DTYPE_F16, 3, (int64_t[]){2, 7, 4});
    fx_tensor *w = kb_meta(FX_DTYPE_F16, 2, (int64_t[]){9, 4});
    fx_tensor *b = kb_meta(FX_DTYPE_F16, 1, (int64_t[]){9});
    fx_ivalue xv = kb_iv(x), wv = kb_iv(w), bv = kb_iv(b);
    fx_tensor *r = kb_call(&g_eager, FX_OP_LINEAR, 3, &xv, &wv, &bv);
    assert_true(fx_tensor_is_meta(r));
    assert_true(kb_sizes_are(r, 3, (int64_t[]){2, 7, 9}));
    assert_int_equal(fx_tensor_dtype(r), FX_DTYPE_F16);
    fx_tensor_release(r);
    fx_tensor *m1 = kb_meta(FX_DTYPE_F32, 3, (int64_t[]){3, 2, 4});
    fx_tensor *m2 = kb_meta(FX_DTYPE_F32, 3, (int64_t[]){3, 4, 6});
    fx_ivalue m1v = kb_iv(m1), m2v = kb_iv(m2);
    r = kb_call(&g_eager, FX_OP_BMM, 2, &m1v, &m2v);
    assert_true(kb_sizes_are(r, 3, (int64_t[]){3, 2, 6}));
    assert_true(fx_tensor_is_meta(r));
    fx_tensor_release(r);
    /* mixing a meta and a cpu tensor gives a meta result (no kernel runs) */
    fx_tensor *c = operand(FX_DTYPE_F32, 3, (int64_t[]){3, 4, 6}, L_CONTIG, 0);
    fx_ivalue cv = kb_iv(c);
    r = kb_call(&g_eager, FX_OP_BMM, 2, &m1v, &cv);
    assert_true(fx_tensor_is_meta(r));
    fx_tensor_release(r);
    fx_tensor_release(c);
    fx_tensor_release(m1);
    fx_tensor_release(m2);
    fx_tensor_release(b);
    fx_tensor_release(w);
    fx_tensor_release(x);
}

/* ---- allocation failures ------------------------------------------------------------------- */

static fx_tensor *g_x, *g_y, *g_z;

static int run_op3(fx_op_id op, int nargs) {
    fx_ivalue xv = kb_iv(g_x), yv = kb_iv(g_y), zv = g_z ? kb_iv(g_z) : fx_iv_none();
    fx_tensor *r = kb_call(&g_eager, op, nargs, &xv, &yv, &zv);
    if (!r) return kb_err.code;
    fx_tensor_release(r);
    return FX_OK;
}
static int run_matmul(void) { return run_op3(FX_OP_MATMUL, 2); }
static int run_linear(void) { return run_op3(FX_OP_LINEAR, 3); }
static int run_mm(void) { return run_op3(FX_OP_MM, 2); }

static void test_allocation_failures(void **state) {
    (void)state;
    /* batched matmul through clone + _unsafe_view */
    g_x = operand(FX_DTYPE_F32, 4, (int64_t[]){2, 1, 3, 4}, L_CONTIG, 1);
    g_y = operand(FX_DTYPE_F32, 3, (int64_t[]){5, 4, 2}, L_GAPPED, 2);
    g_z = NULL;
    assert_true(kb_oom_sweep(run_matmul) >= 4);
    fx_tensor_release(g_x);
    fx_tensor_release(g_y);
    /* linear on an input that must be copied, with a bias */
    g_x = operand(FX_DTYPE_F16, 3, (int64_t[]){2, 3, 4}, L_TRANS, 1);
    g_y = operand(FX_DTYPE_F16, 2, (int64_t[]){5, 4}, L_GAPPED, 2);
    g_z = operand(FX_DTYPE_F16, 1, (int64_t[]){5}, L_CONTIG, 3);
    assert_true(kb_oom_sweep(run_linear) >= 3);
    fx_tensor_release(g_x);
    fx_tensor_release(g_y);
    fx_tensor_release(g_z);
    g_z = NULL;
    /* mm with packed operands */
    g_x = operand(FX_DTYPE_F64, 2, (int64_t[]){3, 4}, L_GAPPED, 1);
    g_y = operand(FX_DTYPE_F64, 2, (int64_t[]){4, 2}, L_EXPANDED, 2);
    assert_true(kb_oom_sweep(run_mm) >= 3);
    fx_tensor_release(g_x);
    fx_tensor_release(g_y);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mm_all_dtypes_layouts),
        cmocka_unit_test(test_mm_random_floats),
        cmocka_unit_test(test_bmm_dot_mv),
        cmocka_unit_test(test_linalg_errors),
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_linear_vector_weight),
        cmocka_unit_test(test_gemv_path),
        cmocka_unit_test(test_addmm_baddbmm),
        cmocka_unit_test(test_outer),
        cmocka_unit_test(test_addmm_errors),
        cmocka_unit_test(test_matmul_cases),
        cmocka_unit_test(test_meta_shapes),
        cmocka_unit_test(test_allocation_failures),
    };
    return kb_run(tests, kb_setup, NULL);
}
