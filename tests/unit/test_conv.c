/* tests/unit/test_conv.c — convolution (1-d and 2-d, groups, stride, padding, dilation, bias)
 * against a naive direct convolution computed here in double, over the float and wide integer
 * dtypes and input layouts; the conv1d / conv2d composites (unbatched input, padding "same" /
 * "valid"); and PyTorch's messages (torch 1.13).
 * Layer: tests (cmocka). */
#include "tests/unit/ka_util.h"

typedef struct conv_case {
    int nsp;
    int64_t n, c, oc, groups;
    int64_t in[2], k[2], stride[2], pad[2], dil[2];
    bool bias;
} conv_case;

static const conv_case k_cases[] = {
    {1, 2, 3, 4, 1, {7, 0}, {3, 0}, {1, 0}, {0, 0}, {1, 0}, true},
    {1, 1, 4, 6, 2, {9, 0}, {2, 0}, {2, 0}, {1, 0}, {2, 0}, false},
    {2, 2, 3, 5, 1, {6, 5}, {3, 2}, {1, 1}, {1, 0}, {1, 1}, true},
    {2, 1, 4, 4, 4, {7, 7}, {3, 3}, {2, 1}, {1, 2}, {2, 1}, true},
    {2, 3, 2, 2, 2, {4, 6}, {1, 3}, {1, 2}, {0, 1}, {1, 2}, false},
};

/* out[n, o, *] = sum over c in o's group, kernel offsets of x * w, + bias. */
static fx_tensor *naive(const conv_case *cc, const fx_tensor *x, const fx_tensor *w,
                        const fx_tensor *b, fx_dtype dt) {
    int64_t out[2] = {1, 1}, sz[4] = {cc->n, cc->oc, 1, 1};
    for (int d = 0; d < cc->nsp; d++) {
        out[d] = (cc->in[d] + 2 * cc->pad[d] - cc->dil[d] * (cc->k[d] - 1) - 1) / cc->stride[d] + 1;
        sz[d + 2] = out[d];
    }
    fx_tensor *r = ka_empty(dt, cc->nsp + 2, sz);
    int64_t cg = cc->c / cc->groups, ocg = cc->oc / cc->groups;
    int64_t k1 = cc->nsp == 2 ? cc->k[1] : 1, in1 = cc->nsp == 2 ? cc->in[1] : 1;
    int64_t i = 0;
    for (int64_t n = 0; n < cc->n; n++)
        for (int64_t o = 0; o < cc->oc; o++)
            for (int64_t y = 0; y < out[0]; y++)
                for (int64_t z = 0; z < out[1]; z++, i++) {
                    double s = b ? fx_dtype_load_f64(dt, fx_tensor_data(b), o * b->strides[0]) : 0;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t ky = 0; ky < cc->k[0]; ky++)
                            for (int64_t kz = 0; kz < k1; kz++) {
                                int64_t iy = y * cc->stride[0] - cc->pad[0] + ky * cc->dil[0];
                                int64_t iz = cc->nsp == 2
                                                 ? z * cc->stride[1] - cc->pad[1] + kz * cc->dil[1]
                                                 : 0;
                                if (iy < 0 || iy >= cc->in[0] || iz < 0 || iz >= in1) continue;
                                int64_t ch = (o / ocg) * cg + c;
                                int64_t xo = n * x->strides[0] + ch * x->strides[1] +
                                             iy * x->strides[2] +
                                             (cc->nsp == 2 ? iz * x->strides[3] : 0);
                                int64_t wo = o * w->strides[0] + c * w->strides[1] +
                                             ky * w->strides[2] +
                                             (cc->nsp == 2 ? kz * w->strides[3] : 0);
                                s += fx_dtype_load_f64(dt, fx_tensor_data(x), xo) *
                                     fx_dtype_load_f64(dt, fx_tensor_data(w), wo);
                            }
                    fx_dtype_store_f64(dt, fx_tensor_data(r), i, s);
                }
    return r;
}

static fx_ivalue ilist(int n, const int64_t *v) {
    fx_ivalue l;
    fx_err err;
    assert_int_equal(fx_iv_int_list(n, v, &l, &err), FX_OK);
    return l;
}

static void test_conv_against_naive(void **state) {
    (void)state;
    const fx_dtype dts[] = {FX_DTYPE_F32,  FX_DTYPE_F64, FX_DTYPE_F16,
                            FX_DTYPE_BF16, FX_DTYPE_I64, FX_DTYPE_I32};
    int bad = 0, n = 0;
    for (size_t k = 0; k < sizeof k_cases / sizeof k_cases[0]; k++)
        for (int t = 0; t < 6; t++)
            for (int l = 0; l < 3; l++) {
                const conv_case *cc = &k_cases[k];
                fx_dtype dt = dts[t];
                int nd = cc->nsp + 2;
                int64_t xs[4] = {cc->n, cc->c, cc->in[0], cc->in[1]};
                int64_t ws[4] = {cc->oc, cc->c / cc->groups, cc->k[0], cc->k[1]};
                fx_tensor *x = ka_make(dt, l, nd, xs, 0), *w = ka_make(dt, (l + 1) % 3, nd, ws, 0);
                fx_tensor *b = cc->bias ? ka_make(dt, KA_SLICED, 1, &cc->oc, 0) : NULL;
                fx_ivalue xv = fx_iv_tensor(x), wv = fx_iv_tensor(w);
                fx_ivalue bv = b ? fx_iv_tensor(b) : fx_iv_none();
                fx_ivalue st = ilist(cc->nsp, cc->stride), pd = ilist(cc->nsp, cc->pad);
                fx_ivalue dl = ilist(cc->nsp, cc->dil), op = ilist(cc->nsp, (int64_t[]){0, 0});
                fx_ivalue tr = fx_iv_bool(false), g = fx_iv_int(cc->groups);
                fx_err err;
                fx_tensor *r;
                int rc = ka_call(FX_OP_CONVOLUTION, &r, &err, 9, &xv, &wv, &bv, &st, &pd, &dl, &tr,
                                 &op, &g);
                char what[96];
                snprintf(what, sizeof what, "case %zu %s layout %d", k, fx_dtype_name(dt), l);
                if (rc) {
                    printf("%s: %s\n", what, err.msg);
                    bad++;
                } else {
                    fx_tensor *want = naive(cc, x, w, b, dt);
                    double tol = dt == FX_DTYPE_F64 ? 1e-12 : dt == FX_DTYPE_F32 ? 1e-4 : 3e-2;
                    bad += !ka_close(r, want, tol, tol * 10, what);
                    fx_tensor_release(want);
                    fx_tensor_release(r);
                }
                n++;
                fx_ivalue *all[] = {&xv, &wv, &bv, &st, &pd, &dl, &op};
                for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) fx_ivalue_clear(all[i]);
                fx_tensor_release(x), fx_tensor_release(w), fx_tensor_release(b);
            }
    assert_int_equal(bad, 0);
    assert_true(n >= 90);
}

/* conv2d.padding "same" with an even kernel: constant_pad_nd on the right, then convolution;
 * the unbatched form equals the batched one. */
static void test_conv_composites(void **state) {
    (void)state;
    int64_t xs[3] = {2, 5, 6}, ws[4] = {3, 2, 2, 3};
    fx_tensor *x = ka_make(FX_DTYPE_F64, KA_CONTIG, 3, xs, 0);
    fx_tensor *w = ka_make(FX_DTYPE_F64, KA_CONTIG, 4, ws, 0);
    fx_ivalue xv = fx_iv_tensor(x), wv = fx_iv_tensor(w), none = fx_iv_none();
    fx_ivalue one = ilist(1, (int64_t[]){1}), same = fx_iv_str("same"), g = fx_iv_int(1);
    fx_err err;
    fx_tensor *r;
    assert_int_equal(
        ka_call(FX_OP_CONV2D_PADDING, &r, &err, 7, &xv, &wv, &none, &one, &same, &one, &g), FX_OK);
    assert_int_equal(r->ndim, 3);
    assert_int_equal(r->sizes[0], 3);
    assert_int_equal(r->sizes[1], 5);
    assert_int_equal(r->sizes[2], 6);
    /* reference: pad H by (0, 1) and W by (1, 1), then a plain convolution */
    conv_case cc = {2, 1, 2, 3, 1, {6, 8}, {2, 3}, {1, 1}, {0, 0}, {1, 1}, false};
    int64_t ps[4] = {1, 2, 6, 8};
    fx_tensor *xp = ka_empty(FX_DTYPE_F64, 4, ps);
    for (int64_t c = 0; c < 2; c++)
        for (int64_t i = 0; i < 5; i++)
            for (int64_t j = 0; j < 6; j++)
                fx_dtype_store_f64(
                    FX_DTYPE_F64, fx_tensor_data(xp), c * 48 + i * 8 + j + 1,
                    fx_dtype_load_f64(FX_DTYPE_F64, fx_tensor_data(x), c * 30 + i * 6 + j));
    fx_tensor *want4 = naive(&cc, xp, w, NULL, FX_DTYPE_F64);
    int64_t n = fx_tensor_numel(r);
    for (int64_t i = 0; i < n; i++)
        assert_float_equal(fx_dtype_load_f64(FX_DTYPE_F64, fx_tensor_data(r), i),
                           fx_dtype_load_f64(FX_DTYPE_F64, fx_tensor_data(want4), i), 1e-9);
    fx_tensor_release(r), fx_tensor_release(xp), fx_tensor_release(want4);
    fx_ivalue two = ilist(1, (int64_t[]){2});
    KA_ERR("padding='same' is not supported for strided convolutions",
           ka_call(FX_OP_CONV2D_PADDING, &r, &err, 7, &xv, &wv, &none, &two, &same, &one, &g));
    fx_ivalue foo = fx_iv_str("foo");
    KA_ERR("Invalid padding string: 'foo'",
           ka_call(FX_OP_CONV2D_PADDING, &r, &err, 7, &xv, &wv, &none, &one, &foo, &one, &g));
    fx_ivalue *all[] = {&xv, &wv, &one, &same, &two, &foo};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) fx_ivalue_clear(all[i]);
    fx_tensor_release(x), fx_tensor_release(w);
}

/* PyTorch's messages (torch 1.13, the same words in 2.5's Convolution.cpp). */
static void test_conv_errors(void **state) {
    (void)state;
    int64_t xs[4] = {1, 4, 5, 5}, ws[4] = {8, 3, 3, 3}, w2[4] = {3, 2, 3, 3}, w7[4] = {8, 4, 7, 7};
    int64_t w4[4] = {8, 4, 3, 3}, bs = 4, x2[2] = {5, 5};
    fx_ivalue x = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 4, xs, 0));
    fx_ivalue w = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 4, ws, 0));
    fx_ivalue wg = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 4, w2, 0));
    fx_ivalue wb = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 4, w7, 0));
    fx_ivalue wk = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 4, w4, 0));
    fx_ivalue wd = fx_iv_tensor_steal(ka_make(FX_DTYPE_F64, KA_CONTIG, 4, w4, 0));
    fx_ivalue b4 = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &bs, 0));
    fx_ivalue xu = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 2, x2, 0));
    fx_ivalue none = fx_iv_none(), one = ilist(1, (int64_t[]){1}), zero = ilist(1, (int64_t[]){0});
    fx_ivalue neg = ilist(1, (int64_t[]){-1}), g1 = fx_iv_int(1), g2 = fx_iv_int(2),
              g0 = fx_iv_int(0);
    fx_err err;
    fx_tensor *r;
#define CONV2D(X, W, B, S, P, D, G) ka_call(FX_OP_CONV2D, &r, &err, 7, &X, &W, &B, &S, &P, &D, &G)
    KA_ERR("Given groups=1, weight of size [8, 3, 3, 3], expected input[1, 4, 5, 5] to have 3 "
           "channels, but got 4 channels instead",
           CONV2D(x, w, none, one, zero, one, g1));
    KA_ERR("Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [5, 5]",
           CONV2D(xu, w, none, one, zero, one, g1));
    KA_ERR("Given weight of size [8, 4, 3, 3], expected bias to be 1-dimensional with 8 elements, "
           "but got bias of size [4] instead",
           CONV2D(x, wk, b4, one, zero, one, g1));
    KA_ERR("Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of "
           "size [[3, 2, 3, 3]] instead",
           CONV2D(x, wg, none, one, zero, one, g2));
    KA_ERR("Calculated padded input size per channel: (5 x 5). Kernel size: (7 x 7). Kernel size "
           "can't be greater than actual input size",
           CONV2D(x, wb, none, one, zero, one, g1));
    KA_ERR("non-positive stride is not supported", CONV2D(x, wk, none, zero, zero, one, g1));
    KA_ERR("negative padding is not supported", CONV2D(x, wk, none, one, neg, one, g1));
    KA_ERR("dilation should be greater than zero, but got [0, 0]",
           CONV2D(x, wk, none, one, zero, zero, g1));
    KA_ERR("non-positive groups is not supported", CONV2D(x, wk, none, one, zero, one, g0));
    KA_ERR("expected scalar type Float but found Double", CONV2D(x, wd, none, one, zero, one, g1));
#undef CONV2D
    fx_ivalue *all[] = {&x, &w, &wg, &wb, &wk, &wd, &b4, &xu, &one, &zero, &neg};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) fx_ivalue_clear(all[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_against_naive),
        cmocka_unit_test(test_conv_composites),
        cmocka_unit_test(test_conv_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
