/* tests/unit/test_copy.c — clone, _to_copy, lift_fresh_copy, copy, copy_, fill, fill_ and
 * zero_ against the naive reference: every dtype conversion, every layout, broadcasting into
 * strided views, PyTorch's cast rules at the edges, layouts of the copies, and the errors.
 * Layer: tests (cmocka). */
#include "tests/unit/ka_util.h"

/* _to_copy for every (source, destination) dtype pair and every source layout. */
static void test_to_copy_all_pairs(void **state) {
    (void)state;
    fx_err err;
    int64_t sz[3] = {2, 3, 4};
    int bad = 0;
    for (int i = 0; i < KA_NDTYPES; i++)
        for (int j = 0; j < KA_NDTYPES; j++)
            for (int l = 0; l < KA_NLAYOUTS; l++) {
                fx_tensor *x = ka_make(ka_all_dtypes[i], l, 3, sz, 0), *r;
                fx_ivalue xv = fx_iv_tensor_steal(x), dt = fx_iv_dtype(ka_all_dtypes[j]);
                assert_int_equal(ka_call(FX_OP__TO_COPY, &r, &err, 2, &xv, &dt), FX_OK);
                fx_tensor *exp = ka_empty(ka_all_dtypes[j], 3, sz);
                fx_ref_copy(exp, xv.u.t);
                char what[96];
                snprintf(what, sizeof what, "_to_copy %s -> %s %s", fx_dtype_name(ka_all_dtypes[i]),
                         fx_dtype_name(ka_all_dtypes[j]), ka_layout_names[l]);
                bad += !ka_close(r, exp, 0, 0, what);
                bad += fx_tensor_same_storage(r, xv.u.t);
                fx_tensor_release(r), fx_tensor_release(exp), fx_ivalue_clear(&xv);
            }
    assert_int_equal(bad, 0);
}

/* PyTorch's casts at the edges: float -> int truncates toward zero, out-of-range int8 wraps
 * through int32, negative float -> uint8 goes through int64, NaN -> bool is True, double ->
 * half rounds through float. Expected values printed by torch. */
static void test_cast_edges(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t n = 8;
    double v[8] = {-2.7, 2.7, 300.7, -300.7, 127.5, -129.0, 1e10, NAN};
    fx_ivalue x = fx_iv_tensor_steal(ka_from(FX_DTYPE_F64, 1, &n, v));
    struct {
        fx_dtype dt;
        const char *want;
    } cases[] = {
        {FX_DTYPE_I8, "tensor([ -2,   2,  44, -44, 127, 127,   0,   0], dtype=torch.int8)"},
        {FX_DTYPE_U8, "tensor([254,   2,  44, 212, 127, 127,   0,   0], dtype=torch.uint8)"},
        {FX_DTYPE_I32, "tensor([         -2,           2,         300,        -300,         127,"
                       "\n               -129, -2147483648, -2147483648], dtype=torch.int32)"},
        {FX_DTYPE_BOOL, "tensor([True, True, True, True, True, True, True, True])"},
        {FX_DTYPE_F16, "tensor([  -2.6992,    2.6992,  300.7500, -300.7500,  127.5000, -129.0000,\n"
                       "              inf,       nan], dtype=torch.float16)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fx_ivalue dt = fx_iv_dtype(cases[i].dt);
        assert_int_equal(ka_call(FX_OP__TO_COPY, &r, &err, 2, &x, &dt), FX_OK);
        assert_string_equal(ka_repr(r), cases[i].want);
        fx_tensor_release(r);
    }
    fx_ivalue_clear(&x);
}

/* clone keeps a dense layout (transposed stays transposed), makes a non-dense one contiguous,
 * and memory_format=contiguous_format forces contiguity. */
static void test_clone_layouts(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t sz[2] = {3, 4};
    int bad = 0;
    for (int i = 0; i < KA_NDTYPES; i++)
        for (int l = 0; l < KA_NLAYOUTS; l++) {
            fx_ivalue xv = fx_iv_tensor_steal(ka_make(ka_all_dtypes[i], l, 2, sz, 0));
            fx_op_id ops[2] = {FX_OP_CLONE, FX_OP_LIFT_FRESH_COPY};
            for (int k = 0; k < 2; k++) {
                assert_int_equal(ka_call(ops[k], &r, &err, 1, &xv), FX_OK);
                bad += !ka_close(r, xv.u.t, 0, 0, "clone");
                bad += fx_tensor_same_storage(r, xv.u.t);
                if (l == KA_TRANSPOSED) bad += !(r->strides[0] == 1 && r->strides[1] == 3);
                else bad += !fx_tensor_is_contiguous(r);
                fx_tensor_release(r);
            }
            fx_ivalue cf = fx_iv_str("torch.contiguous_format");
            assert_int_equal(ka_call(FX_OP_CLONE, &r, &err, 2, &xv, &cf), FX_OK);
            bad += !fx_tensor_is_contiguous(r) || !ka_close(r, xv.u.t, 0, 0, "clone contiguous");
            fx_tensor_release(r), fx_ivalue_clear(&cf), fx_ivalue_clear(&xv);
        }
    assert_int_equal(bad, 0);
}

/* copy_(self, src): src broadcast into a strided view of any dtype, converted. */
static void test_copy_inplace(void **state) {
    (void)state;
    fx_err err;
    int64_t sz[2] = {3, 4}, row = 4, col[2] = {3, 1};
    int bad = 0;
    for (int i = 0; i < KA_NDTYPES; i++)
        for (int j = 0; j < KA_NDTYPES; j++)
            for (int l = 0; l < 3; l++) { /* self: contiguous, transposed, sliced */
                fx_tensor *self = ka_make(ka_all_dtypes[i], l, 2, sz, 0), *r;
                const int64_t *ssz = (i + j) % 3 == 0 ? sz : (i + j) % 3 == 1 ? &row : col;
                int snd = (i + j) % 3 == 1 ? 1 : 2;
                fx_tensor *src = ka_make(ka_all_dtypes[j], (i + l) % KA_NLAYOUTS, snd, ssz, 0);
                fx_tensor *exp = ka_empty(ka_all_dtypes[i], 2, sz);
                fx_ref_copy(exp, src);
                fx_ivalue sv = fx_iv_tensor(self), srv = fx_iv_tensor_steal(src);
                uint64_t v0 = fx_tensor_version(self);
                assert_int_equal(ka_call(FX_OP_COPY_, &r, &err, 2, &sv, &srv), FX_OK);
                bad += r != self;
                bad += fx_tensor_version(self) != v0 + 1;
                bad += !ka_close(self, exp, 0, 0, "copy_");
                fx_tensor_release(r), fx_tensor_release(exp);
                fx_ivalue_clear(&sv), fx_ivalue_clear(&srv), fx_tensor_release(self);
            }
    assert_int_equal(bad, 0);
}

/* copy(self, src): a fresh tensor with self's shape, dtype and strides; self untouched. */
static void test_copy_functional(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t sz[2] = {4, 3}, row = 3;
    fx_tensor *self = ka_make(FX_DTYPE_F16, KA_TRANSPOSED, 2, sz, 0);
    fx_tensor *before = ka_empty(FX_DTYPE_F16, 2, sz);
    fx_ref_copy(before, self);
    fx_ivalue sv = fx_iv_tensor_steal(self);
    fx_ivalue src = fx_iv_tensor_steal(ka_make(FX_DTYPE_I32, KA_SLICED, 1, &row, 0));
    assert_int_equal(ka_call(FX_OP_COPY, &r, &err, 2, &sv, &src), FX_OK);
    assert_int_equal(r->dtype, FX_DTYPE_F16);
    assert_int_equal(r->strides[0], self->strides[0]);
    assert_int_equal(r->strides[1], self->strides[1]);
    assert_false(fx_tensor_same_storage(r, self));
    fx_tensor *exp = ka_empty(FX_DTYPE_F16, 2, sz);
    fx_ref_copy(exp, src.u.t);
    assert_true(ka_close(r, exp, 0, 0, "copy"));
    assert_true(ka_close(self, before, 0, 0, "copy leaves self"));
    fx_tensor_release(r), fx_tensor_release(exp), fx_tensor_release(before);
    fx_ivalue_clear(&sv), fx_ivalue_clear(&src);
}

static void test_copy_errors(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t s3 = 3, s4 = 4, s23[2] = {2, 3}, s6 = 6, s5 = 5, one = 1;
    fx_ivalue x3 = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &s3, 0));
    fx_ivalue x4 = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &s4, 0));
    fx_ivalue x23 = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 2, s23, 0));
    fx_ivalue e23 = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_EXPANDED, 2, s23, 0));
    KA_ERR("The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
           "dimension 0",
           ka_call(FX_OP_COPY_, &r, &err, 2, &x3, &x4));
    KA_ERR("output with shape [3] doesn't match the broadcast shape [2, 3]",
           ka_call(FX_OP_COPY_, &r, &err, 2, &x3, &x23));
    KA_ERR("output with shape [3] doesn't match the broadcast shape [2, 3]",
           ka_call(FX_OP_COPY, &r, &err, 2, &x3, &x23));
    KA_ERR("unsupported operation: more than one element of the written-to tensor refers to a "
           "single memory location. Please clone() the tensor before performing the operation.",
           ka_call(FX_OP_COPY_, &r, &err, 2, &e23, &x23));
    /* y[1:].copy_(y[:-1]) overlaps partially */
    fx_tensor *y = ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &s6, 0), *a, *b;
    assert_int_equal(fx_tensor_as_strided(y, 1, &s5, &one, 1, &a, &err), FX_OK);
    assert_int_equal(fx_tensor_as_strided(y, 1, &s5, &one, 0, &b, &err), FX_OK);
    fx_ivalue av = fx_iv_tensor_steal(a), bv = fx_iv_tensor_steal(b);
    KA_ERR("unsupported operation: some elements of the input tensor and the written-to tensor "
           "refer to a single memory location. Please clone() the tensor before performing the "
           "operation.",
           ka_call(FX_OP_COPY_, &r, &err, 2, &av, &bv));
    /* copying a tensor onto itself is fine, even expanded */
    assert_int_equal(ka_call(FX_OP_COPY_, &r, &err, 2, &e23, &e23), FX_OK);
    fx_tensor_release(r);
    fx_tensor_release(y);
    fx_ivalue *all[] = {&x3, &x4, &x23, &e23, &av, &bv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) fx_ivalue_clear(all[i]);
}

static void test_fill_zero(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t sz[2] = {3, 4};
    int bad = 0;
    for (int i = 0; i < KA_NDTYPES; i++)
        for (int l = 0; l < KA_NLAYOUTS; l++) {
            fx_tensor *t = ka_make(ka_all_dtypes[i], l, 2, sz, 0);
            /* -2.5 does not fit uint8 (a float scalar may not wrap), so uint8 gets 2.5 */
            bool u8 = ka_all_dtypes[i] == FX_DTYPE_U8;
            fx_ivalue tv = fx_iv_tensor(t), v = fx_iv_int(5), fv = fx_iv_float(u8 ? 2.5 : -2.5);
            fx_tensor *exp = ka_empty(ka_all_dtypes[i], 2, sz);
            /* fill.Scalar: fresh, self untouched */
            assert_int_equal(ka_call(FX_OP_FILL_SCALAR, &r, &err, 2, &tv, &v), FX_OK);
            fx_ref_fill(exp, ka_all_dtypes[i] == FX_DTYPE_BOOL ? 1 : 5);
            bad += !ka_close(r, exp, 0, 0, "fill") || fx_tensor_same_storage(r, t);
            fx_tensor_release(r);
            /* fill_.Scalar, also on expanded tensors (PyTorch allows it) */
            assert_int_equal(ka_call(FX_OP_FILL__SCALAR, &r, &err, 2, &tv, &fv), FX_OK);
            bad += r != t;
            fx_tensor_release(r);
            double want = fx_dtype_is_float(ka_all_dtypes[i]) ? -2.5
                          : ka_all_dtypes[i] == FX_DTYPE_BOOL ? 1
                          : u8                                ? 2
                                                              : -2;
            fx_ref_fill(exp, want);
            bad += !ka_close(t, exp, 0, 0, "fill_");
            assert_int_equal(ka_call(FX_OP_ZERO_, &r, &err, 1, &tv), FX_OK);
            fx_ref_fill(exp, 0);
            bad += r != t || !ka_close(t, exp, 0, 0, "zero_");
            fx_tensor_release(r), fx_tensor_release(exp), fx_ivalue_clear(&tv), fx_tensor_release(t);
        }
    assert_int_equal(bad, 0);
    /* value range checks, as Scalar::to<T>() */
    int64_t n = 2;
    fx_ivalue i8 = fx_iv_tensor_steal(ka_make(FX_DTYPE_I8, KA_CONTIG, 1, &n, 0));
    fx_ivalue u8 = fx_iv_tensor_steal(ka_make(FX_DTYPE_U8, KA_CONTIG, 1, &n, 0));
    fx_ivalue h = fx_iv_tensor_steal(ka_make(FX_DTYPE_F16, KA_CONTIG, 1, &n, 0));
    fx_ivalue i32 = fx_iv_tensor_steal(ka_make(FX_DTYPE_I32, KA_CONTIG, 1, &n, 0));
    fx_ivalue vm25 = fx_iv_float(-2.5);
    KA_ERR("value cannot be converted to type uint8_t without overflow",
           ka_call(FX_OP_FILL__SCALAR, &r, &err, 2, &u8, &vm25));
    fx_ivalue v300 = fx_iv_int(300), vm1 = fx_iv_int(-1), vm256 = fx_iv_int(-256),
              v7e4 = fx_iv_int(70000), vnan = fx_iv_float(NAN);
    KA_ERR("value cannot be converted to type int8_t without overflow",
           ka_call(FX_OP_FILL__SCALAR, &r, &err, 2, &i8, &v300));
    assert_int_equal(ka_call(FX_OP_FILL__SCALAR, &r, &err, 2, &u8, &vm1), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([255, 255], dtype=torch.uint8)");
    fx_tensor_release(r);
    KA_ERR("value cannot be converted to type uint8_t without overflow",
           ka_call(FX_OP_FILL__SCALAR, &r, &err, 2, &u8, &vm256));
    KA_ERR("value cannot be converted to type at::Half without overflow",
           ka_call(FX_OP_FILL_SCALAR, &r, &err, 2, &h, &v7e4));
    KA_ERR("value cannot be converted to type int without overflow",
           ka_call(FX_OP_FILL__SCALAR, &r, &err, 2, &i32, &vnan));
    fx_ivalue_clear(&i8), fx_ivalue_clear(&u8), fx_ivalue_clear(&h), fx_ivalue_clear(&i32);
}

/* Meta inputs: copies are meta, values untouched. */
static void test_meta(void **state) {
    (void)state;
    fx_err err;
    int64_t sz[2] = {2, 3};
    fx_tensor *m, *r;
    assert_int_equal(fx_tensor_empty(2, sz, FX_DTYPE_F32, FX_DEVICE_META, &m, &err), FX_OK);
    fx_ivalue mv = fx_iv_tensor_steal(m), dt = fx_iv_dtype(FX_DTYPE_F16);
    assert_int_equal(ka_call(FX_OP__TO_COPY, &r, &err, 2, &mv, &dt), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(..., device='meta', size=(2, 3), dtype=torch.float16)");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_CLONE, &r, &err, 1, &mv), FX_OK);
    assert_true(fx_tensor_is_meta(r));
    fx_tensor_release(r);
    fx_ivalue c = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 2, sz, 0));
    assert_int_equal(ka_call(FX_OP_COPY_, &r, &err, 2, &mv, &c), FX_OK);
    assert_ptr_equal(r, mv.u.t);
    fx_tensor_release(r);
    KA_ERR("Cannot copy out of meta tensor; no data!", ka_call(FX_OP_COPY_, &r, &err, 2, &c, &mv));
    fx_ivalue_clear(&mv), fx_ivalue_clear(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_to_copy_all_pairs), cmocka_unit_test(test_cast_edges),
        cmocka_unit_test(test_clone_layouts),     cmocka_unit_test(test_copy_inplace),
        cmocka_unit_test(test_copy_functional),   cmocka_unit_test(test_copy_errors),
        cmocka_unit_test(test_fill_zero),         cmocka_unit_test(test_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
