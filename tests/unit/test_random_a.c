/* tests/unit/test_random_a.c — creation and randomness ops of issue 3: full_like, eye, tril /
 * triu (and in place), arange (.default, .start, .start_step), randint, randperm, normal_,
 * uniform_, bernoulli and their functional forms: values against references and against
 * PyTorch's streams after torch.manual_seed (torch 1.13 on this machine, a build without MKL:
 * the numbers in this file were printed by it), dtypes, layouts and error messages.
 * Layer: tests (cmocka). */
#include "tests/unit/ka_util.h"

/* Compares t (row-major) with want[0..n) within rtol. */
static int same_values(const fx_tensor *t, const double *want, int64_t n, double rtol,
                       const char *what) {
    if (fx_tensor_numel(t) != n) {
        printf("%s: %lld elements, expected %lld\n", what, (long long)fx_tensor_numel(t),
               (long long)n);
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        double g = fx_ref_get(t, i);
        if (!(fabs(g - want[i]) <= rtol * fabs(want[i]) + 1e-12)) {
            printf("%s: element %lld is %.9g, PyTorch gives %.9g\n", what, (long long)i, g, want[i]);
            return 0;
        }
    }
    return 1;
}

/* An uninitialised float tensor of the given shape viewed through `sizes` / `strides`. */
static fx_tensor *view_of(fx_dtype dt, int nb, const int64_t *bsz, int nd, const int64_t *sizes,
                          const int64_t *strides) {
    fx_err err;
    fx_tensor *base, *v;
    assert_int_equal(fx_tensor_zeros(nb, bsz, dt, FX_DEVICE_CPU, &base, &err), FX_OK);
    assert_int_equal(fx_tensor_as_strided(base, nd, sizes, strides, 0, &v, &err), FX_OK);
    fx_tensor_release(base);
    return v;
}

/* torch.manual_seed(0) / (s) followed by each draw, as PyTorch prints it. */
static void test_random_streams(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int bad = 0;
    /* torch.empty(4, 5).t().normal_(): the serial path, drawn in memory order */
    static const double tn[] = {1.54099607,  -1.39859545, -0.59663534, 0.12270124,  -0.29342890,
                                0.40334684,  0.18203649,  -0.56631750, -2.17878938, 0.83802634,
                                -0.85667461, 0.37311465,  0.56843126,  -0.71925759, 1.10060418,
                                -0.89199531, -1.08452237, -0.40334353, -1.07118738, -1.50910771};
    int64_t b45[2] = {4, 5}, s54[2] = {5, 4}, st54[2] = {1, 5};
    fx_tensor *t = view_of(FX_DTYPE_F32, 2, b45, 2, s54, st54);
    fx_ivalue tv = fx_iv_tensor(t);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_NORMAL_, &r, &err, 1, &tv), FX_OK);
    bad += !same_values(t, tn, 20, 1e-6, "normal_ transposed");
    fx_tensor_release(r);
    fx_ivalue_clear(&tv);
    fx_tensor_release(t);
    /* torch.empty(4, 5)[:, ::2].normal_(1, 2) */
    static const double sn[] = {4.08199215,  0.41314217,  -3.35757875, 2.13686252,
                                -1.16904473, -1.79719079, 1.80669367,  2.67605257,
                                -0.43851516, 0.19331294,  -0.19327073, 1.36407292};
    int64_t s43[2] = {4, 3}, st43[2] = {5, 2};
    t = view_of(FX_DTYPE_F32, 2, b45, 2, s43, st43);
    tv = fx_iv_tensor(t);
    fx_ivalue one = fx_iv_float(1), two = fx_iv_float(2);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_NORMAL_, &r, &err, 3, &tv, &one, &two), FX_OK);
    bad += !same_values(t, sn, 12, 1e-6, "normal_ sliced");
    fx_tensor_release(r);
    fx_ivalue_clear(&tv);
    fx_tensor_release(t);
    /* uniform_ on float64, float16, bfloat16 */
    int64_t n6 = 6;
    static const double u64[] = {0.94010600, 0.41563973, -0.08123411,
                                 0.84149537, 0.29004824, 0.58229578};
    static const double u16[] = {1.33593750, 1.09179688, 3.22851562, 2.37500000, 1.63085938, 1.49023438};
    static const double ub16[] = {2.68750000, 0.73437500, 1.82812500, 3.00000000, 1.04687500, 3.92187500};
    const struct {
        fx_dtype dt;
        double from, to;
        const double *want;
    } us[] = {{FX_DTYPE_F64, -1, 1, u64}, {FX_DTYPE_F16, 0, 4, u16}, {FX_DTYPE_BF16, 0, 4, ub16}};
    for (int k = 0; k < 3; k++) {
        t = ka_empty(us[k].dt, 1, &n6);
        tv = fx_iv_tensor(t);
        fx_ivalue f = fx_iv_float(us[k].from), to = fx_iv_float(us[k].to);
        fx_manual_seed(0);
        assert_int_equal(ka_call(FX_OP_UNIFORM_, &r, &err, 3, &tv, &f, &to), FX_OK);
        bad += !same_values(t, us[k].want, 6, 1e-7, fx_dtype_name(us[k].dt));
        fx_tensor_release(r);
        fx_ivalue_clear(&tv);
        fx_tensor_release(t);
    }
    /* normal_ of >= 16 contiguous float64 / float16 elements: normal_fill */
    static const double n64[] = {-3.62082360, 0.25349828,  -1.12163336, 2.99901871,  0.96007050,
                                 1.42059978,  1.35437870,  -0.66102010, 1.47743612,  2.46705674,
                                 -1.64376366, 3.62962273,  -0.37400739, 3.97614863,  0.10316839,
                                 -0.78200607, 2.34971509,  3.09373075,  1.30859036,  -0.49978305};
    static const double n16[] = {-0.90087891, 0.48120117,  1.19824219,  0.90527344,  -1.39355469,
                                 0.77246094,  -0.21423340, 0.39868164,  1.66503906,  -1.02343750,
                                 -1.27832031, 0.44287109,  0.85400391,  0.17346191,  0.20227051,
                                 -0.13659668, 0.61328125,  0.15209961,  1.38476562,  -0.64160156};
    int64_t n20 = 20;
    t = ka_empty(FX_DTYPE_F64, 1, &n20);
    tv = fx_iv_tensor(t);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_NORMAL_, &r, &err, 3, &tv, &one, &two), FX_OK);
    bad += !same_values(t, n64, 20, 1e-8, "normal_ float64");
    fx_tensor_release(r), fx_ivalue_clear(&tv), fx_tensor_release(t);
    t = ka_empty(FX_DTYPE_F16, 1, &n20);
    tv = fx_iv_tensor(t);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_NORMAL_, &r, &err, 1, &tv), FX_OK);
    bad += !same_values(t, n16, 20, 1e-3, "normal_ float16");
    fx_tensor_release(r), fx_ivalue_clear(&tv), fx_tensor_release(t);
    /* bernoulli(p) with float32 and float64 probabilities; bernoulli_ on int32 */
    int64_t n4 = 4, n5 = 5;
    double pv[] = {0.1, 0.5, 0.9, 0.3};
    const double b32[] = {0, 0, 1, 1}, b64[] = {0, 0, 1, 0}, bi[] = {0, 0, 1, 0, 0};
    fx_ivalue p32 = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n4, pv));
    fx_ivalue p64 = fx_iv_tensor_steal(ka_from(FX_DTYPE_F64, 1, &n4, pv));
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_BERNOULLI, &r, &err, 1, &p32), FX_OK);
    bad += !same_values(r, b32, 4, 0, "bernoulli float32 p");
    assert_int_equal(r->dtype, FX_DTYPE_F32);
    fx_tensor_release(r);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_BERNOULLI, &r, &err, 1, &p64), FX_OK);
    bad += !same_values(r, b64, 4, 0, "bernoulli float64 p");
    fx_tensor_release(r);
    t = ka_empty(FX_DTYPE_I32, 1, &n5);
    tv = fx_iv_tensor(t);
    fx_ivalue half = fx_iv_float(0.5);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_BERNOULLI__FLOAT, &r, &err, 2, &tv, &half), FX_OK);
    bad += !same_values(t, bi, 5, 0, "bernoulli_ int32");
    fx_tensor_release(r), fx_ivalue_clear(&tv), fx_tensor_release(t);
    /* randint of a range past 2^32 draws 64 bits; float dtypes; randperm as float32 */
    int64_t n3 = 3;
    fx_ivalue lo = fx_iv_int(0), hi = fx_iv_int(1ll << 33), sz3 = fx_iv_none();
    assert_int_equal(fx_iv_int_list(1, &n3, &sz3, &err), FX_OK);
    const double wide[] = {2546248239.0, 7921061056.0, 7979815675.0};
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_RANDINT_LOW, &r, &err, 3, &lo, &hi, &sz3), FX_OK);
    bad += !same_values(r, wide, 3, 0, "randint wide");
    fx_tensor_release(r);
    fx_ivalue three = fx_iv_int(3), sz4 = fx_iv_none(), f64 = fx_iv_dtype(FX_DTYPE_F64);
    assert_int_equal(fx_iv_int_list(1, &n4, &sz4, &err), FX_OK);
    const double rf[] = {2, 0, 2, 0};
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_RANDINT, &r, &err, 3, &three, &sz4, &f64), FX_OK);
    assert_int_equal(r->dtype, FX_DTYPE_F64);
    bad += !same_values(r, rf, 4, 0, "randint float64");
    fx_tensor_release(r);
    fx_ivalue six = fx_iv_int(6), f32 = fx_iv_dtype(FX_DTYPE_F32);
    const double rp[] = {2, 5, 3, 0, 1, 4};
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_RANDPERM, &r, &err, 2, &six, &f32), FX_OK);
    bad += !same_values(r, rp, 6, 0, "randperm float32");
    fx_tensor_release(r);
    fx_ivalue_clear(&p32), fx_ivalue_clear(&p64), fx_ivalue_clear(&sz3), fx_ivalue_clear(&sz4);
    assert_int_equal(bad, 0);
}

/* The functional twins draw the same stream as the in-place ops, into a fresh tensor. */
static void test_random_functional(void **state) {
    (void)state;
    fx_err err;
    int64_t n = 23;
    const fx_op_id pairs[][2] = {{FX_OP_NORMAL_, FX_OP_NORMAL_FUNCTIONAL},
                                 {FX_OP_UNIFORM_, FX_OP_UNIFORM},
                                 {FX_OP_BERNOULLI__FLOAT, FX_OP_BERNOULLI_P}};
    for (int k = 0; k < 3; k++) {
        fx_tensor *a = ka_empty(FX_DTYPE_F32, 1, &n), *b = ka_empty(FX_DTYPE_F32, 1, &n), *r;
        fx_ivalue av = fx_iv_tensor(a), bv = fx_iv_tensor(b), p = fx_iv_float(0.25);
        fx_manual_seed(5);
        assert_int_equal(k == 2 ? ka_call(pairs[k][0], &r, &err, 2, &av, &p)
                                : ka_call(pairs[k][0], &r, &err, 1, &av),
                         FX_OK);
        fx_tensor_release(r);
        fx_manual_seed(5);
        assert_int_equal(k == 2 ? ka_call(pairs[k][1], &r, &err, 2, &bv, &p)
                                : ka_call(pairs[k][1], &r, &err, 1, &bv),
                         FX_OK);
        assert_ptr_not_equal(r, b);
        assert_true(ka_close(r, a, 0, 0, "functional twin"));
        fx_tensor_release(r);
        fx_ivalue_clear(&av), fx_ivalue_clear(&bv);
        fx_tensor_release(a), fx_tensor_release(b);
    }
}

/* eye, tril / triu over dtypes and layouts, full_like, arange overloads. */
static void test_creation_ops(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int bad = 0;
    int64_t sz[3] = {2, 4, 5};
    for (int i = 0; i < KA_NDTYPES; i++)
        for (int l = 0; l < KA_NLAYOUTS; l++)
            for (int64_t k = -3; k <= 3; k++)
                for (int lower = 0; lower < 2; lower++) {
                    fx_dtype dt = ka_all_dtypes[i];
                    fx_tensor *x = ka_make(dt, l, 3, sz, 0);
                    fx_ivalue xv = fx_iv_tensor(x), kv = fx_iv_int(k);
                    fx_tensor *e = ka_empty(dt, 3, sz);
                    fx_ref_tril(x, k, lower, e);
                    char what[96];
                    snprintf(what, sizeof what, "%s %s %s k=%lld", lower ? "tril" : "triu",
                             fx_dtype_name(dt), ka_layout_names[l], (long long)k);
                    assert_int_equal(ka_call(lower ? FX_OP_TRIL : FX_OP_TRIU, &r, &err, 2, &xv, &kv),
                                     FX_OK);
                    bad += !ka_close(r, e, 0, 0, what);
                    bad += !fx_tensor_is_contiguous(r);
                    fx_tensor_release(r);
                    if (l != KA_EXPANDED) { /* in place */
                        assert_int_equal(
                            ka_call(lower ? FX_OP_TRIL_ : FX_OP_TRIU_, &r, &err, 2, &xv, &kv), FX_OK);
                        assert_ptr_equal(r, x);
                        bad += !ka_close(x, e, 0, 0, what);
                        fx_tensor_release(r);
                    }
                    fx_tensor_release(e);
                    fx_ivalue_clear(&xv);
                    fx_tensor_release(x);
                }
    int64_t n1 = 1;
    fx_ivalue v1 = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &n1, 0));
    KA_ERR("tril: input tensor must have at least 2 dimensions", ka_call(FX_OP_TRIL, &r, &err, 1, &v1));
    KA_ERR("triu: input tensor must have at least 2 dimensions", ka_call(FX_OP_TRIU_, &r, &err, 1, &v1));
    fx_ivalue_clear(&v1);
    /* eye */
    fx_ivalue three = fx_iv_int(3), two = fx_iv_int(2), m1 = fx_iv_int(-1), bdt = fx_iv_dtype(FX_DTYPE_BOOL);
    assert_int_equal(ka_call(FX_OP_EYE, &r, &err, 1, &three), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([[1., 0., 0.],\n        [0., 1., 0.],\n        [0., 0., 1.]])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_EYE_M, &r, &err, 3, &two, &three, &bdt), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([[ True, False, False],\n        [False,  True, False]])");
    fx_tensor_release(r);
    KA_ERR("n must be greater or equal to 0, got -1", ka_call(FX_OP_EYE, &r, &err, 1, &m1));
    KA_ERR("m must be greater or equal to 0, got -1", ka_call(FX_OP_EYE_M, &r, &err, 2, &two, &m1));
    /* full_like keeps the input's dtype and layout; the fill must fit */
    int64_t s23[2] = {2, 3};
    fx_ivalue t = fx_iv_tensor_steal(ka_make(FX_DTYPE_I64, KA_TRANSPOSED, 2, s23, 0));
    fx_ivalue f25 = fx_iv_float(2.5), big = fx_iv_int(300), i8 = fx_iv_dtype(FX_DTYPE_I8);
    assert_int_equal(ka_call(FX_OP_FULL_LIKE, &r, &err, 2, &t, &f25), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([[2, 2, 2],\n        [2, 2, 2]])");
    assert_int_equal(r->strides[0], 1); /* preserve_format: transposed like the input */
    fx_tensor_release(r);
    KA_ERR("value cannot be converted to type int8_t without overflow",
           ka_call(FX_OP_FULL_LIKE, &r, &err, 3, &t, &big, &i8));
    fx_ivalue_clear(&t);
    /* arange: arange(5) int64, arange(2.5) float32, arange(1, 4), arange(0, 1, 0.25) */
    fx_ivalue five = fx_iv_int(5), one = fx_iv_int(1), four = fx_iv_int(4), zf = fx_iv_float(0),
              onef = fx_iv_float(1), q = fx_iv_float(0.25);
    assert_int_equal(ka_call(FX_OP_ARANGE, &r, &err, 1, &five), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([0, 1, 2, 3, 4])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_ARANGE, &r, &err, 1, &f25), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([0., 1., 2.])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_ARANGE_START, &r, &err, 2, &one, &four), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([1, 2, 3])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_ARANGE_START_STEP, &r, &err, 3, &zf, &onef, &q), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([0.0000, 0.2500, 0.5000, 0.7500])");
    fx_tensor_release(r);
    KA_ERR("upper bound and larger bound inconsistent with step sign",
           ka_call(FX_OP_ARANGE, &r, &err, 1, &m1));
    assert_int_equal(bad, 0);
}

/* Errors of the random ops, as PyTorch words them. */
static void test_random_errors(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t n = 3;
    fx_ivalue f = fx_iv_tensor_steal(ka_empty(FX_DTYPE_F32, 1, &n));
    fx_ivalue i = fx_iv_tensor_steal(ka_empty(FX_DTYPE_I64, 1, &n));
    fx_ivalue zero = fx_iv_float(0), m1 = fx_iv_float(-1), two = fx_iv_float(2), one = fx_iv_float(1);
    fx_ivalue p15 = fx_iv_float(1.5), sz = fx_iv_none();
    fx_ivalue i5 = fx_iv_int(5), i0 = fx_iv_int(0), i300 = fx_iv_int(300), im1 = fx_iv_int(-1),
              i3 = fx_iv_int(3);
    fx_ivalue u8 = fx_iv_dtype(FX_DTYPE_U8), bdt = fx_iv_dtype(FX_DTYPE_BOOL);
    assert_int_equal(fx_iv_int_list(1, &n, &sz, &err), FX_OK);
    KA_ERR("normal expects std >= 0.0, but found std -1", ka_call(FX_OP_NORMAL_, &r, &err, 3, &f, &zero, &m1));
    KA_ERR("\"normal_kernel_cpu\" not implemented for 'Long'", ka_call(FX_OP_NORMAL_, &r, &err, 1, &i));
    KA_ERR("uniform_ expects to return a [from, to) range, but found from=2 > to=1",
           ka_call(FX_OP_UNIFORM_, &r, &err, 3, &f, &two, &one));
    KA_ERR("\"check_uniform_bounds\" not implemented for 'Long'", ka_call(FX_OP_UNIFORM_, &r, &err, 1, &i));
    KA_ERR("bernoulli_ expects p to be in [0, 1], but got p=1.5",
           ka_call(FX_OP_BERNOULLI__FLOAT, &r, &err, 2, &f, &p15));
    KA_ERR("random_ expects 'from' to be less than 'to', but got from=5 >= to=5",
           ka_call(FX_OP_RANDINT_LOW, &r, &err, 3, &i5, &i5, &sz));
    KA_ERR("random_ expects 'from' to be less than 'to', but got from=0 >= to=0",
           ka_call(FX_OP_RANDINT, &r, &err, 2, &i0, &sz));
    KA_ERR("to - 1 is out of bounds for unsigned char",
           ka_call(FX_OP_RANDINT_LOW, &r, &err, 4, &i0, &i300, &sz, &u8));
    KA_ERR("from is out of bounds for unsigned char",
           ka_call(FX_OP_RANDINT_LOW, &r, &err, 4, &im1, &i3, &sz, &u8));
    KA_ERR("Trying to create tensor with negative dimension -1: [-1]",
           ka_call(FX_OP_RANDPERM, &r, &err, 1, &im1));
    KA_ERR("\"randperm\" not implemented for 'Bool'", ka_call(FX_OP_RANDPERM, &r, &err, 2, &i3, &bdt));
    /* bool randint works: [0, 2) */
    fx_ivalue i2 = fx_iv_int(2);
    assert_int_equal(ka_call(FX_OP_RANDINT_LOW, &r, &err, 4, &i0, &i2, &sz, &bdt), FX_OK);
    assert_int_equal(r->dtype, FX_DTYPE_BOOL);
    fx_tensor_release(r);
    fx_ivalue_clear(&f), fx_ivalue_clear(&i), fx_ivalue_clear(&sz);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_streams), cmocka_unit_test(test_random_functional),
        cmocka_unit_test(test_creation_ops),   cmocka_unit_test(test_random_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
