/* tests/unit/test_tensor.c — core/tensor.c: creation, lifetime and refcounts, metadata,
 * contiguity, views through as_strided (bounds, _base, shared version counter), internal
 * overlap, element access through strides, size errors and out-of-memory handling, plus the
 * k_iter layout helpers the kernels build on.
 * Layer: tests (cmocka). */
#include "tests/unit/ka_util.h"

#include "core/kernels/k_iter.h"

static void test_create_and_metadata(void **state) {
    (void)state;
    fx_err err;
    int64_t sz[3] = {2, 3, 4};
    fx_tensor *t;
    assert_int_equal(fx_tensor_zeros(3, sz, FX_DTYPE_F16, FX_DEVICE_CPU, &t, &err), FX_OK);
    assert_int_equal(fx_tensor_ndim(t), 3);
    assert_int_equal(fx_tensor_numel(t), 24);
    assert_int_equal(fx_tensor_dtype(t), FX_DTYPE_F16);
    assert_int_equal(fx_tensor_stride(t, 0), 12);
    assert_int_equal(fx_tensor_stride(t, 1), 4);
    assert_int_equal(fx_tensor_stride(t, 2), 1);
    assert_int_equal(fx_tensor_offset(t), 0);
    assert_true(fx_tensor_is_contiguous(t));
    assert_false(fx_tensor_is_meta(t));
    assert_int_equal(fx_storage_nbytes(fx_tensor_storage(t)), 48);
    for (int64_t i = 0; i < 24; i++) assert_true(fx_tensor_flat_f64(t, i) == 0);
    assert_null(fx_tensor_base(t));
    fx_tensor_release(t);

    double v = 2.5;
    assert_int_equal(fx_tensor_scalar(v, FX_DTYPE_I32, &t, &err), FX_OK);
    assert_int_equal(fx_tensor_ndim(t), 0);
    assert_int_equal(fx_tensor_numel(t), 1);
    assert_int_equal(fx_tensor_get_i64(t, NULL), 2);
    fx_tensor_release(t);

    int32_t data[6] = {1, 2, 3, 4, 5, 6};
    int64_t s23[2] = {2, 3};
    assert_int_equal(fx_tensor_from_data(2, s23, FX_DTYPE_I32, data, &t, &err), FX_OK);
    int64_t idx[2] = {1, 2};
    assert_int_equal(fx_tensor_get_i64(t, idx), 6);
    fx_tensor_set_f64(t, idx, -7);
    assert_int_equal(fx_tensor_flat_i64(t, 5), -7);
    fx_tensor_release(t);

    /* meta: no data, same metadata */
    assert_int_equal(fx_tensor_empty(3, sz, FX_DTYPE_F32, FX_DEVICE_META, &t, &err), FX_OK);
    assert_true(fx_tensor_is_meta(t));
    assert_null(fx_tensor_data(t));
    assert_int_equal(fx_storage_nbytes(fx_tensor_storage(t)), 96);
    fx_tensor_release(t);
}

static void test_refcount_and_views(void **state) {
    (void)state;
    fx_err err;
    int64_t s34[2] = {3, 4}, s4 = 4, st = 1, s2[2] = {2, 2}, st2[2] = {4, 2};
    fx_tensor *t, *row, *sub;
    assert_int_equal(fx_tensor_zeros(2, s34, FX_DTYPE_F32, FX_DEVICE_CPU, &t, &err), FX_OK);
    assert_int_equal(fx_tensor_refcount(t), 1);
    assert_ptr_equal(fx_tensor_retain(t), t);
    assert_int_equal(fx_tensor_refcount(t), 2);
    fx_tensor_release(t);
    /* row 1 as a view: shares storage, base is t, writes are seen through t */
    assert_int_equal(fx_tensor_as_strided(t, 1, &s4, &st, 4, &row, &err), FX_OK);
    assert_true(fx_tensor_same_storage(t, row));
    assert_ptr_equal(fx_tensor_base(row), t);
    int64_t i2 = 2;
    fx_tensor_set_f64(row, &i2, 9);
    int64_t idx[2] = {1, 2};
    assert_true(fx_tensor_get_f64(t, idx) == 9);
    /* a view of a view records the root base */
    assert_int_equal(fx_tensor_as_strided(row, 2, s2, st2, 1, &sub, &err), FX_OK);
    assert_ptr_equal(fx_tensor_base(sub), t);
    assert_false(fx_tensor_is_contiguous(sub));
    /* version counter shared by every view */
    uint64_t v0 = fx_tensor_version(t);
    fx_tensor_bump_version(sub);
    assert_int_equal(fx_tensor_version(t), v0 + 1);
    assert_int_equal(fx_tensor_version(row), v0 + 1);
    /* releasing the owner keeps the storage alive for views */
    fx_tensor_release(t);
    assert_true(fx_tensor_get_f64(row, &i2) == 9);
    fx_tensor_release(sub);
    fx_tensor_release(row);
    fx_tensor_release(NULL); /* NULL-safe */
    assert_null(fx_tensor_retain(NULL));
}

static void test_as_strided_bounds(void **state) {
    (void)state;
    fx_err err;
    int64_t n = 6, s4 = 4, st = 2, big = 7, one = 1;
    fx_tensor *t, *v;
    assert_int_equal(fx_tensor_zeros(1, &n, FX_DTYPE_I64, FX_DEVICE_CPU, &t, &err), FX_OK);
    assert_int_equal(fx_tensor_as_strided(t, 1, &s4, &st, 0, &v, &err), FX_EINDEX);
    assert_string_equal(err.msg, "setStorage: sizes and strides with storage offset 0 are out of "
                                 "bounds for storage of 6 elements");
    assert_int_equal(fx_tensor_as_strided(t, 1, &big, &one, 0, &v, &err), FX_EINDEX);
    assert_int_equal(fx_tensor_as_strided(t, 1, &n, &one, 0, &v, &err), FX_OK);
    fx_tensor_release(v);
    fx_tensor_release(t);
}

static void test_contiguity_and_overlap(void **state) {
    (void)state;
    fx_err err;
    int64_t s[3] = {2, 1, 3};
    fx_tensor *t;
    assert_int_equal(fx_tensor_empty(3, s, FX_DTYPE_F32, FX_DEVICE_CPU, &t, &err), FX_OK);
    /* size-1 dims do not matter for contiguity */
    t->strides[1] = 99;
    assert_true(fx_tensor_is_contiguous(t));
    assert_false(fx_tensor_has_internal_overlap(t));
    assert_true(fx_tensor_dense_nonoverlap(t));
    /* expanded dim: overlap */
    t->strides[1] = 3, t->sizes[1] = 1, t->strides[0] = 0;
    assert_true(fx_tensor_has_internal_overlap(t));
    assert_false(fx_tensor_dense_nonoverlap(t));
    /* transposed: dense, not contiguous */
    t->strides[0] = 1, t->strides[2] = 2, t->sizes[0] = 2;
    assert_false(fx_tensor_is_contiguous(t));
    assert_true(fx_tensor_dense_nonoverlap(t));
    /* strides that step over each other overlap */
    t->strides[0] = 1, t->strides[2] = 1;
    assert_true(fx_tensor_has_internal_overlap(t));
    /* no elements, no overlap, whatever the strides and wherever the 0 is (PyTorch: such a
     * tensor is contiguous, so has_internal_overlap says NO) */
    t->sizes[0] = 2, t->sizes[1] = 2, t->sizes[2] = 0;
    t->strides[0] = 0, t->strides[1] = 0, t->strides[2] = 1;
    assert_false(fx_tensor_has_internal_overlap(t));
    fx_tensor_release(t);
}

static void test_size_errors_and_oom(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *t;
    int64_t neg = -2, huge[2] = {(int64_t)1 << 40, (int64_t)1 << 20};
    assert_int_equal(fx_tensor_empty(1, &neg, FX_DTYPE_F32, FX_DEVICE_CPU, &t, &err), FX_ESHAPE);
    assert_int_equal(fx_tensor_empty(2, huge, FX_DTYPE_F32, FX_DEVICE_CPU, &t, &err), FX_ENOMEM);
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_int_equal(fx_tensor_empty(9, nine, FX_DTYPE_F32, FX_DEVICE_CPU, &t, &err), FX_ESHAPE);
    /* every allocation of a tensor may fail: error, and nothing leaks */
    fx_alloc_stats before = fx_alloc_get_stats();
    int64_t s = 10;
    for (int k = 1; k <= 3; k++) {
        fx_alloc_fail_at(k, 0);
        int rc = fx_tensor_empty(1, &s, FX_DTYPE_F32, FX_DEVICE_CPU, &t, &err);
        fx_alloc_fail_at(0, 0);
        if (rc == FX_OK) fx_tensor_release(t);
        else assert_int_equal(rc, FX_ENOMEM);
    }
    assert_int_equal(fx_alloc_get_stats().live_blocks, before.live_blocks);
}

/* The kernels' iterator: coalescing and broadcasting, rows and the flat fast path. */
typedef struct {
    int64_t calls, elems;
} count_ud;
static void count_loop(void *ud, int64_t n, char *const *p, const int64_t *st) {
    (void)p, (void)st;
    count_ud *c = ud;
    c->calls++;
    c->elems += n;
}

static void test_iter(void **state) {
    (void)state;
    int64_t s234[3] = {2, 3, 4};
    fx_tensor *a = ka_make(FX_DTYPE_F32, KA_CONTIG, 3, s234, 0);
    fx_tensor *b = ka_make(FX_DTYPE_F32, KA_CONTIG, 3, s234, 0);
    fx_iter it;
    fx_iter_init(&it, 3, s234);
    fx_iter_add(&it, a);
    fx_iter_add(&it, b);
    fx_iter_coalesce(&it);
    assert_int_equal(it.ndim, 1); /* fully merged */
    assert_true(fx_iter_is_flat(&it));
    count_ud c = {0, 0};
    fx_iter_run_all(&it, count_loop, &c);
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.elems, 24);
    /* a broadcast row (4,) against (2, 3, 4): merges the two outer dims, inner stays 4 */
    int64_t s4 = 4;
    fx_tensor *r = ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &s4, 0);
    fx_iter_init(&it, 3, s234);
    fx_iter_add(&it, a);
    fx_iter_add(&it, r);
    fx_iter_coalesce(&it);
    assert_int_equal(it.ndim, 2);
    assert_int_equal(fx_iter_nrows(&it), 6);
    c = (count_ud){0, 0};
    fx_iter_run(&it, 2, 5, count_loop, &c); /* a row range */
    assert_int_equal(c.calls, 3);
    assert_int_equal(c.elems, 12);
    /* a transposed operand cannot merge */
    fx_tensor *tr = ka_make(FX_DTYPE_F32, KA_TRANSPOSED, 3, s234, 0);
    fx_iter_init(&it, 3, s234);
    fx_iter_add(&it, a);
    fx_iter_add(&it, tr);
    fx_iter_coalesce(&it);
    assert_false(fx_iter_is_flat(&it));
    /* empty */
    int64_t s0[2] = {0, 3};
    fx_iter_init(&it, 2, s0);
    assert_int_equal(fx_iter_nrows(&it), 0);
    fx_tensor_release(a), fx_tensor_release(b), fx_tensor_release(r), fx_tensor_release(tr);
}

/* TensorIterator's output layout rule. */
static void test_layout_strides(void **state) {
    (void)state;
    int64_t s234[3] = {2, 3, 4}, st[3];
    fx_tensor *a = ka_make(FX_DTYPE_F32, KA_CONTIG, 3, s234, 0);
    const fx_tensor *ins[2] = {a, NULL};
    fx_layout_strides(3, s234, 2, ins, st);
    assert_int_equal(st[0], 12), assert_int_equal(st[1], 4), assert_int_equal(st[2], 1);
    /* permute(2, 0, 1) of a contiguous (3, 4, 2)... built directly: sizes (2,3,4), strides
     * (1, 8, 2) -> the output follows: strides (1, 8, 2) */
    fx_tensor *p = ka_make(FX_DTYPE_F32, KA_CONTIG, 3, s234, 0);
    p->strides[0] = 1, p->strides[1] = 8, p->strides[2] = 2;
    ins[0] = p;
    fx_layout_strides(3, s234, 1, ins, st);
    assert_int_equal(st[0], 1), assert_int_equal(st[1], 8), assert_int_equal(st[2], 2);
    fx_layout_like(p, st);
    assert_int_equal(st[0], 1), assert_int_equal(st[1], 8), assert_int_equal(st[2], 2);
    fx_tensor_release(a), fx_tensor_release(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_and_metadata), cmocka_unit_test(test_refcount_and_views),
        cmocka_unit_test(test_as_strided_bounds),   cmocka_unit_test(test_contiguity_and_overlap),
        cmocka_unit_test(test_size_errors_and_oom),
        cmocka_unit_test(test_iter),
        cmocka_unit_test(test_layout_strides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
