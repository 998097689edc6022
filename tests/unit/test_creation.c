/* tests/unit/test_creation.c — factories (zeros, ones, full, empty, *_like, arange) and the
 * random generator (manual_seed, rand, randn) against PyTorch's own numbers.
 * Layer: tests (cmocka). The golden random values are what torch prints after
 * torch.manual_seed(0). */
#include "tests/unit/ka_util.h"

#include "core/random.h"

static fx_ivalue size_list(int n, const int64_t *s) {
    fx_ivalue v;
    fx_err err;
    assert_int_equal(fx_iv_int_list(n, s, &v, &err), FX_OK);
    return v;
}

static void test_zeros_ones_full_empty(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t s23[2] = {2, 3};
    fx_ivalue sz = size_list(2, s23), f16 = fx_iv_dtype(FX_DTYPE_F16), i8 = fx_iv_dtype(FX_DTYPE_I8);
    assert_int_equal(ka_call(FX_OP_ZEROS, &r, &err, 1, &sz), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([[0., 0., 0.],\n        [0., 0., 0.]])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_ONES, &r, &err, 2, &sz, &f16), FX_OK);
    assert_string_equal(ka_repr(r),
                        "tensor([[1., 1., 1.],\n        [1., 1., 1.]], dtype=torch.float16)");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_EMPTY_MEMORY_FORMAT, &r, &err, 2, &sz, &i8), FX_OK);
    assert_int_equal(r->dtype, FX_DTYPE_I8);
    assert_true(fx_tensor_is_contiguous(r));
    fx_tensor_release(r);
    /* full infers its dtype from the value */
    struct {
        fx_ivalue v;
        const char *want;
    } fulls[] = {
        {fx_iv_int(7), "tensor([[7, 7, 7],\n        [7, 7, 7]])"},
        {fx_iv_bool(true), "tensor([[True, True, True],\n        [True, True, True]])"},
        {fx_iv_float(2.5), "tensor([[2.5000, 2.5000, 2.5000],\n        [2.5000, 2.5000, 2.5000]])"},
    };
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ka_call(FX_OP_FULL, &r, &err, 2, &sz, &fulls[i].v), FX_OK);
        assert_string_equal(ka_repr(r), fulls[i].want);
        fx_tensor_release(r);
    }
    /* full with an explicit dtype truncates a float value; an overflowing value is refused */
    fx_ivalue i64 = fx_iv_dtype(FX_DTYPE_I64), v = fx_iv_float(2.5), big = fx_iv_int(300);
    assert_int_equal(ka_call(FX_OP_FULL, &r, &err, 3, &sz, &v, &i64), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([[2, 2, 2],\n        [2, 2, 2]])");
    fx_tensor_release(r);
    KA_ERR("value cannot be converted to type int8_t without overflow",
           ka_call(FX_OP_FULL, &r, &err, 3, &sz, &big, &i8));
    /* negative sizes */
    int64_t neg[2] = {-1, 2};
    fx_ivalue nsz = size_list(2, neg);
    KA_ERR("Trying to create tensor with negative dimension -1: [-1, 2]",
           ka_call(FX_OP_ZEROS, &r, &err, 1, &nsz));
    /* device='meta' */
    fx_ivalue none = fx_iv_none(), meta = fx_iv_device(FX_DEVICE_META);
    assert_int_equal(ka_call(FX_OP_ZEROS, &r, &err, 4, &sz, &f16, &none, &meta), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(..., device='meta', size=(2, 3), dtype=torch.float16)");
    fx_tensor_release(r);
    /* every dtype: zeros are zero and ones are one, by the reference */
    for (int i = 0; i < KA_NDTYPES; i++) {
        fx_ivalue dt = fx_iv_dtype(ka_all_dtypes[i]);
        assert_int_equal(ka_call(FX_OP_ONES, &r, &err, 2, &sz, &dt), FX_OK);
        fx_tensor *exp = ka_empty(ka_all_dtypes[i], 2, s23);
        fx_ref_fill(exp, 1);
        assert_true(ka_close(r, exp, 0, 0, "ones"));
        fx_tensor_release(r), fx_tensor_release(exp);
    }
    fx_ivalue_clear(&sz), fx_ivalue_clear(&nsz);
}

static void test_like(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t s23[2] = {2, 3};
    /* a transposed input keeps its layout (preserve_format) */
    fx_ivalue x = fx_iv_tensor_steal(ka_make(FX_DTYPE_F16, KA_TRANSPOSED, 2, s23, 0));
    assert_int_equal(ka_call(FX_OP_ONES_LIKE, &r, &err, 1, &x), FX_OK);
    assert_int_equal(r->dtype, FX_DTYPE_F16);
    assert_int_equal(r->strides[0], 1);
    assert_int_equal(r->strides[1], 2);
    fx_tensor *exp = ka_empty(FX_DTYPE_F16, 2, s23);
    fx_ref_fill(exp, 1);
    assert_true(ka_close(r, exp, 0, 0, "ones_like"));
    fx_tensor_release(r), fx_tensor_release(exp);
    fx_ivalue i32 = fx_iv_dtype(FX_DTYPE_I32), none = fx_iv_none(),
              cf = fx_iv_str("torch.contiguous_format");
    assert_int_equal(ka_call(FX_OP_ZEROS_LIKE, &r, &err, 6, &x, &i32, &none, &none, &none, &cf),
                     FX_OK);
    assert_int_equal(r->dtype, FX_DTYPE_I32);
    assert_true(fx_tensor_is_contiguous(r));
    assert_string_equal(ka_repr(r), "tensor([[0, 0, 0],\n        [0, 0, 0]], dtype=torch.int32)");
    fx_tensor_release(r);
    /* a sliced (non-dense) input gets dense strides */
    fx_ivalue s = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_SLICED, 2, s23, 0));
    assert_int_equal(ka_call(FX_OP_EMPTY_LIKE, &r, &err, 1, &s), FX_OK);
    assert_true(fx_tensor_is_contiguous(r));
    fx_tensor_release(r);
    fx_ivalue_clear(&x), fx_ivalue_clear(&s), fx_ivalue_clear(&cf);
}

static void test_arange(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    struct {
        fx_ivalue s, e, st;
        fx_dtype dt;
        const char *want;
    } ok[] = {
        {fx_iv_int(0), fx_iv_int(10), fx_iv_int(3), FX_DTYPE_UNDEFINED, "tensor([0, 3, 6, 9])"},
        {fx_iv_int(10), fx_iv_int(0), fx_iv_int(-3), FX_DTYPE_UNDEFINED, "tensor([10,  7,  4,  1])"},
        {fx_iv_int(0), fx_iv_int(1), fx_iv_float(0.25), FX_DTYPE_UNDEFINED,
         "tensor([0.0000, 0.2500, 0.5000, 0.7500])"},
        {fx_iv_int(-3), fx_iv_int(3), fx_iv_float(1.5), FX_DTYPE_UNDEFINED,
         "tensor([-3.0000, -1.5000,  0.0000,  1.5000])"},
        {fx_iv_float(0.5), fx_iv_int(3), fx_iv_int(1), FX_DTYPE_I32,
         "tensor([0, 1, 2], dtype=torch.int32)"},
        {fx_iv_int(0), fx_iv_int(1), fx_iv_float(0.3), FX_DTYPE_F16,
         "tensor([0.0000, 0.3000, 0.6001, 0.8999], dtype=torch.float16)"},
        {fx_iv_int(0), fx_iv_int(0), fx_iv_int(1), FX_DTYPE_UNDEFINED,
         "tensor([], dtype=torch.int64)"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        fx_ivalue dt = ok[i].dt == FX_DTYPE_UNDEFINED ? fx_iv_none() : fx_iv_dtype(ok[i].dt);
        assert_int_equal(ka_call(FX_OP_ARANGE_START_STEP, &r, &err, 4, &ok[i].s, &ok[i].e,
                                 &ok[i].st, &dt),
                         FX_OK);
        assert_string_equal(ka_repr(r), ok[i].want);
        fx_tensor_release(r);
    }
    /* length rule: ceil((end - start) / step); arange(0, 1, 0.1) has 10 elements */
    fx_ivalue z = fx_iv_int(0), one = fx_iv_int(1), tenth = fx_iv_float(0.1);
    assert_int_equal(ka_call(FX_OP_ARANGE_START_STEP, &r, &err, 3, &z, &one, &tenth), FX_OK);
    assert_int_equal(fx_tensor_numel(r), 10);
    fx_tensor *exp = ka_empty(FX_DTYPE_F32, 1, r->sizes);
    fx_ref_arange(0, 0.1, exp);
    assert_true(ka_close(r, exp, 1e-7, 0, "arange 0.1"));
    fx_tensor_release(r), fx_tensor_release(exp);
    /* errors */
    fx_ivalue ten = fx_iv_int(10), zero = fx_iv_int(0), m1 = fx_iv_int(-1),
              inf = fx_iv_float(INFINITY), halfstep = fx_iv_float(0.5),
              i64 = fx_iv_dtype(FX_DTYPE_I64), b = fx_iv_dtype(FX_DTYPE_BOOL), five = fx_iv_int(5);
    KA_ERR("step must be nonzero", ka_call(FX_OP_ARANGE_START_STEP, &r, &err, 3, &z, &ten, &zero));
    KA_ERR("upper bound and larger bound inconsistent with step sign",
           ka_call(FX_OP_ARANGE_START_STEP, &r, &err, 3, &z, &ten, &m1));
    KA_ERR("unsupported range: 0 -> inf",
           ka_call(FX_OP_ARANGE_START_STEP, &r, &err, 3, &z, &inf, &one));
    /* step 0.5 truncates to 0 in int64 */
    KA_ERR("step must be nonzero",
           ka_call(FX_OP_ARANGE_START_STEP, &r, &err, 4, &one, &ten, &halfstep, &i64));
    KA_ERR("\"arange_cpu\" not implemented for 'Bool'",
           ka_call(FX_OP_ARANGE_START_STEP, &r, &err, 4, &z, &five, &one, &b));
}

/* torch.manual_seed(0); torch.rand(4) / torch.randn(4) / torch.randn(4, 4), as torch prints. */
static void test_random_golden(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t s4 = 4, s44[2] = {4, 4};
    fx_ivalue sz = size_list(1, &s4), sz44 = size_list(2, s44);
    fx_manual_seed(0);
    assert_int_equal(fx_initial_seed(), 0);
    assert_int_equal(fx_random_u32(), 2357136044u); /* mt19937 seeded with 0 */
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_RAND, &r, &err, 1, &sz), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([0.4963, 0.7682, 0.0885, 0.1320])");
    fx_tensor_release(r);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_RANDN, &r, &err, 1, &sz), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 1.5410, -0.2934, -2.1788,  0.5684])");
    fx_tensor_release(r);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_RANDN, &r, &err, 1, &sz44), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([[-1.1258, -1.1524, -0.2506, -0.4339],\n"
                                    "        [ 0.8487,  0.6920, -0.3160, -2.1152],\n"
                                    "        [ 0.3223, -1.2633,  0.3500,  0.3081],\n"
                                    "        [ 0.1198,  1.2377,  1.1168, -0.2473]])");
    /* the same 16 values as float32, to 1e-6 (libm vs PyTorch's AVX2 sin/cos/log: ~1 ulp) */
    static const double want16[16] = {-1.1258398294, -1.1523602009, -0.2505785823, -0.4338788092,
                                      0.8487103581,  0.6920091510,  -0.3160127699, -2.1152193546,
                                      0.3222749233,  -1.2633347511, 0.3499831855,  0.3081339300,
                                      0.1198415086,  1.2376579046,  1.1167771816,  -0.2472781539};
    for (int i = 0; i < 16; i++) assert_true(fabs(fx_ref_get(r, i) - want16[i]) < 1e-6);
    fx_tensor_release(r);
    fx_ivalue_clear(&sz), fx_ivalue_clear(&sz44);
}

/* More streams checked against torch 1.13 / 2.x on the same seed: a randn(3) pair cache across
 * calls, randn(20) (the recomputed tail of normal_fill), float64 and float16 draws. */
static void test_random_streams(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t s3 = 3, s20 = 20, s2 = 2;
    fx_ivalue sz3 = size_list(1, &s3), sz20 = size_list(1, &s20), sz2 = size_list(1, &s2);
    fx_ivalue f64 = fx_iv_dtype(FX_DTYPE_F64), f16 = fx_iv_dtype(FX_DTYPE_F16);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_RANDN, &r, &err, 1, &sz3), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 1.5410, -0.2934, -2.1788])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_RANDN, &r, &err, 1, &sz3), FX_OK); /* starts with the cache */
    assert_string_equal(ka_repr(r), "tensor([ 0.5684, -1.0845, -1.3986])");
    fx_tensor_release(r);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_RANDN, &r, &err, 1, &sz20), FX_OK);
    assert_string_equal(ka_repr(r),
                        "tensor([-1.1258, -1.1524, -0.2506, -0.4339,  0.5988, -1.5551, -0.3414,  "
                        "1.8530,\n         0.4681, -0.1577,  1.4437,  0.2660,  1.3894,  1.5863,  "
                        "0.9463, -0.8437,\n         0.9318,  1.2590,  2.0050,  0.0537])");
    fx_tensor_release(r);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_RAND, &r, &err, 2, &sz2, &f64), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([0.9701, 0.7078], dtype=torch.float64)");
    fx_tensor_release(r);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_RAND, &r, &err, 2, &sz3, &f16), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([0.3340, 0.2729, 0.8071], dtype=torch.float16)");
    fx_tensor_release(r);
    int64_t s17 = 17, s5 = 5, s33 = 33;
    fx_ivalue sz17 = size_list(1, &s17), sz5 = size_list(1, &s5), sz33 = size_list(1, &s33);
    fx_ivalue bf16 = fx_iv_dtype(FX_DTYPE_BF16);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_RANDN, &r, &err, 2, &sz17, &f16), FX_OK);
    assert_string_equal(ka_repr(r),
                        "tensor([-0.9009, -1.3213,  0.2800, -0.0704, -1.3936,  0.7725, -0.2142,  "
                        "0.3987,\n         1.6650,  0.7852, -0.5049,  0.9155,  0.8540,  0.1735,  "
                        "0.2023, -0.1366,\n         0.6133], dtype=torch.float16)");
    fx_tensor_release(r);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_RANDN, &r, &err, 2, &sz17, &f64), FX_OK);
    assert_string_equal(ka_repr(r),
                        "tensor([-2.3104, -0.6333, -1.2609, -0.7270, -0.0200,  0.2103,  0.1772, "
                        "-0.8305,\n         0.2387, -0.2427, -0.7730, -1.5952, -0.6870,  1.4881, "
                        "-0.4484, -0.8910,\n         0.6749], dtype=torch.float64)");
    fx_tensor_release(r);
    fx_manual_seed(0);
    assert_int_equal(ka_call(FX_OP_RANDN, &r, &err, 2, &sz5, &bf16), FX_OK);
    assert_string_equal(ka_repr(r),
                        "tensor([ 1.5391, -0.2930, -2.1719,  0.5703, -1.0859], dtype=torch.bfloat16)");
    fx_tensor_release(r);
    fx_manual_seed(3);
    assert_int_equal(ka_call(FX_OP_RANDN, &r, &err, 1, &sz33), FX_OK);
    assert_string_equal(ka_repr(r),
                        "tensor([-0.0766,  0.3599, -0.7820,  0.0715,  0.6648, -0.2868,  1.6206, "
                        "-1.5967,\n        -0.0517, -0.3060,  0.2485, -0.2226,  0.9132,  0.2043,  "
                        "0.5740,  0.4163,\n         0.2615, -0.2929, -0.3481,  0.3487,  0.0371, "
                        "-0.0677,  0.4290, -0.8681,\n        -1.1963,  0.1416,  0.1295,  0.6814, "
                        "-0.9583,  0.0639,  0.6589,  0.8195,\n         0.5616])");
    fx_tensor_release(r);
    fx_ivalue_clear(&sz17), fx_ivalue_clear(&sz5), fx_ivalue_clear(&sz33);
    fx_manual_seed(42);
    assert_int_equal(fx_initial_seed(), 42);
    assert_int_equal(ka_call(FX_OP_RAND, &r, &err, 1, &sz2), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([0.8823, 0.9150])");
    fx_tensor_release(r);
    /* integer dtypes are refused */
    fx_ivalue i64 = fx_iv_dtype(FX_DTYPE_I64);
    KA_ERR("\"check_uniform_bounds\" not implemented for 'Long'",
           ka_call(FX_OP_RAND, &r, &err, 2, &sz3, &i64));
    KA_ERR("\"normal_kernel_cpu\" not implemented for 'Long'",
           ka_call(FX_OP_RANDN, &r, &err, 2, &sz3, &i64));
    fx_ivalue_clear(&sz3), fx_ivalue_clear(&sz20), fx_ivalue_clear(&sz2);
}

/* Statistics of a big draw: uniform mean 1/2, normal mean 0 and variance 1. */
static void test_random_statistics(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t n = 200000;
    fx_ivalue sz = size_list(1, &n);
    fx_manual_seed(7);
    assert_int_equal(ka_call(FX_OP_RAND, &r, &err, 1, &sz), FX_OK);
    double s = 0, lo = 1, hi = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = fx_ref_get(r, i);
        s += v, lo = v < lo ? v : lo, hi = v > hi ? v : hi;
    }
    assert_true(fabs(s / (double)n - 0.5) < 0.005);
    assert_true(lo >= 0 && hi < 1);
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_RANDN, &r, &err, 1, &sz), FX_OK);
    double m = 0, q = 0;
    for (int64_t i = 0; i < n; i++) m += fx_ref_get(r, i);
    m /= (double)n;
    for (int64_t i = 0; i < n; i++) q += (fx_ref_get(r, i) - m) * (fx_ref_get(r, i) - m);
    assert_true(fabs(m) < 0.01);
    assert_true(fabs(q / (double)n - 1) < 0.02);
    fx_tensor_release(r);
    fx_ivalue_clear(&sz);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zeros_ones_full_empty), cmocka_unit_test(test_like),
        cmocka_unit_test(test_arange),                cmocka_unit_test(test_random_golden),
        cmocka_unit_test(test_random_streams),        cmocka_unit_test(test_random_statistics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
