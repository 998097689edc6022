/* tests/unit/test_views.c — the view ops (view, select, slice, unsqueeze, squeeze, transpose,
 * permute, t, expand, alias, as_strided), _unsafe_view, and the composites contiguous and
 * reshape.
 * Layer: tests (cmocka, links libfxdb.a). Each view is checked three ways: its geometry
 * against PyTorch's (sizes, strides, offset), its values against a naive index computation on
 * the base (for contiguous, transposed and gapped bases), and its aliasing (same storage, shared
 * version counter). Error texts are PyTorch's. Composites are checked by what a trace records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/unit/kb_util.h"

typedef fx_tensor *(*maker_fn)(fx_dtype, int, const int64_t *, double, double);

static fx_tensor *make_contig(fx_dtype dt, int nd, const int64_t *s, double sc, double sh) {
    return kb_tensor(dt, nd, s, NULL, sc, sh);
}

static const maker_fn k_makers[] = {make_contig, kb_transposed, kb_gapped};
#define NMAKERS 3

/* Value of the base at row-major linear index i (bases hold i * 1 + 0). */
static double base_val(const int64_t *idx, int nd, const int64_t *sizes) {
    int64_t lin = 0;
    for (int d = 0; d < nd; d++) lin = lin * sizes[d] + idx[d];
    return (double)lin;
}

/* Advances a multi-index in row-major order; false when done. */
static bool next_idx(int64_t *idx, int nd, const int64_t *sizes) {
    for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < sizes[d]) return true;
        idx[d] = 0;
    }
    return false;
}

static void assert_view_of(const fx_tensor *v, const fx_tensor *base) {
    assert_true(fx_tensor_same_storage(v, base));
    assert_ptr_not_equal(v, base);
    assert_int_equal(fx_tensor_device(v), fx_tensor_device(base));
    assert_int_equal(fx_tensor_dtype(v), fx_tensor_dtype(base));
}

/* ---- view -------------------------------------------------------------------------------- */

static void test_view(void **state) {
    (void)state;
    int64_t sz[3] = {2, 3, 4};
    fx_tensor *x = kb_tensor(FX_DTYPE_F32, 3, sz, NULL, 1, 0);
    fx_ivalue xv = kb_iv(x), shape = kb_ints(2, 6, -1);
    fx_tensor *v = kb_call(&g_eager, FX_OP_VIEW, 2, &xv, &shape);
    assert_non_null(v);
    assert_view_of(v, x);
    assert_true(kb_sizes_are(v, 2, (int64_t[]){6, 4}));
    assert_true(kb_strides_are(v, 2, (int64_t[]){4, 1}));
    assert_true(kb_at(v, (int64_t[]){5, 3}) == 23);
    assert_ptr_equal(fx_tensor_base(v), x);
    /* writes through the view are seen by the base and share the version counter */
    uint64_t ver = fx_tensor_version(x);
    fx_tensor_set_f64(v, (int64_t[]){1, 1}, -5);
    fx_tensor_bump_version(v);
    assert_true(kb_at(x, (int64_t[]){0, 1, 1}) == -5);
    assert_int_equal(fx_tensor_version(x), ver + 1);
    /* a view of a view records the root as its base */
    fx_ivalue vv = kb_iv(v), s2 = kb_ints(1, 24);
    fx_tensor *w = kb_call(&g_eager, FX_OP_VIEW, 2, &vv, &s2);
    assert_ptr_equal(fx_tensor_base(w), x);
    fx_tensor_release(w);
    fx_ivalue_clear(&s2);
    fx_tensor_release(v);
    fx_ivalue_clear(&shape);

    /* an impossible view: the transposed layout cannot flatten */
    fx_tensor *t = kb_transposed(FX_DTYPE_F32, 2, (int64_t[]){3, 4}, 1, 0);
    fx_ivalue tv = kb_iv(t), flat = kb_ints(1, 12), ok = kb_ints(3, 3, 2, 2);
    assert_null(kb_call(&g_eager, FX_OP_VIEW, 2, &tv, &flat));
    assert_int_equal(kb_err.code, FX_ESHAPE);
    assert_string_equal(kb_err.msg,
                        "view size is not compatible with input tensor's size and stride (at "
                        "least one dimension spans across two contiguous subspaces). Use "
                        ".reshape(...) instead.");
    /* splitting its inner dim is fine: [3, 4] strides [1, 3] -> [3, 2, 2] strides [1, 6, 3] */
    v = kb_call(&g_eager, FX_OP_VIEW, 2, &tv, &ok);
    assert_non_null(v);
    assert_true(kb_strides_are(v, 3, (int64_t[]){1, 6, 3}));
    assert_true(kb_at(v, (int64_t[]){2, 1, 1}) == kb_at(t, (int64_t[]){2, 3}));
    fx_tensor_release(v);
    /* a gapped base keeps its offset */
    fx_tensor *g = kb_gapped(FX_DTYPE_I64, 2, (int64_t[]){2, 3}, 1, 0);
    fx_ivalue gv = kb_iv(g), s3 = kb_ints(3, 2, 3, 1);
    v = kb_call(&g_eager, FX_OP_VIEW, 2, &gv, &s3);
    assert_int_equal(fx_tensor_offset(v), fx_tensor_offset(g));
    assert_true(kb_at(v, (int64_t[]){1, 2, 0}) == 5);
    fx_tensor_release(v);
    /* shape errors */
    fx_ivalue bad = kb_ints(2, 4, 4);
    assert_null(kb_call(&g_eager, FX_OP_VIEW, 2, &gv, &bad));
    assert_string_equal(kb_err.msg, "shape '[4, 4]' is invalid for input of size 6");
    /* a wrapped number is not a tensor */
    fx_ivalue two = fx_iv_int(2);
    assert_null(kb_call(&g_eager, FX_OP_VIEW, 2, &two, &bad));
    assert_int_equal(kb_err.code, FX_EARG);
    fx_ivalue_clear(&bad);
    fx_ivalue_clear(&s3);
    fx_ivalue_clear(&flat);
    fx_ivalue_clear(&ok);
    fx_tensor_release(g);
    fx_tensor_release(t);
    fx_tensor_release(x);
}

/* ---- select / slice ----------------------------------------------------------------------- */

static void test_select(void **state) {
    (void)state;
    int64_t sz[3] = {3, 4, 5};
    for (int mk = 0; mk < NMAKERS; mk++) {
        fx_tensor *x = k_makers[mk](FX_DTYPE_F64, 3, sz, 1, 0);
        fx_ivalue xv = kb_iv(x);
        for (int dim = -3; dim < 3; dim++) {
            int d = dim < 0 ? dim + 3 : dim;
            for (int64_t index = -sz[d]; index < sz[d]; index++) {
                fx_ivalue dv = fx_iv_int(dim), iv = fx_iv_int(index);
                fx_tensor *v = kb_call(&g_eager, FX_OP_SELECT_INT, 3, &xv, &dv, &iv);
                assert_non_null(v);
                assert_view_of(v, x);
                assert_int_equal(fx_tensor_ndim(v), 2);
                int64_t vs[2], full[3], idx[2] = {0, 0};
                for (int e = 0, k = 0; e < 3; e++)
                    if (e != d) vs[k++] = sz[e];
                assert_true(kb_sizes_are(v, 2, vs));
                do {
                    for (int e = 0, k = 0; e < 3; e++)
                        full[e] = e == d ? (index < 0 ? index + sz[d] : index) : idx[k++];
                    assert_true(kb_at(v, idx) == base_val(full, 3, sz));
                } while (next_idx(idx, 2, vs));
                fx_tensor_release(v);
            }
        }
        fx_tensor_release(x);
    }
    fx_tensor *x = kb_tensor(FX_DTYPE_F32, 1, (int64_t[]){3}, NULL, 1, 0);
    fx_ivalue xv = kb_iv(x), d0 = fx_iv_int(0), i5 = fx_iv_int(5), im4 = fx_iv_int(-4);
    assert_null(kb_call(&g_eager, FX_OP_SELECT_INT, 3, &xv, &d0, &i5));
    assert_int_equal(kb_err.code, FX_EINDEX);
    assert_string_equal(kb_err.msg, "select(): index 5 out of range for tensor of size [3] at "
                                    "dimension 0");
    assert_null(kb_call(&g_eager, FX_OP_SELECT_INT, 3, &xv, &d0, &im4));
    assert_string_equal(kb_err.msg, "select(): index -4 out of range for tensor of size [3] at "
                                    "dimension 0");
    fx_ivalue d1 = fx_iv_int(1);
    assert_null(kb_call(&g_eager, FX_OP_SELECT_INT, 3, &xv, &d1, &d0));
    assert_string_equal(kb_err.msg,
                        "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
    /* select to 0-dim, then select on 0-dim fails */
    fx_tensor *s = kb_call(&g_eager, FX_OP_SELECT_INT, 3, &xv, &d0, &d1);
    assert_int_equal(fx_tensor_ndim(s), 0);
    assert_int_equal(fx_tensor_offset(s), 1);
    fx_ivalue sv = kb_iv(s);
    assert_null(kb_call(&g_eager, FX_OP_SELECT_INT, 3, &sv, &d0, &d0));
    assert_string_equal(kb_err.msg, "select() cannot be applied to a 0-dim tensor.");
    fx_tensor_release(s);
    fx_tensor_release(x);
}

/* Python slicing of range(size)[start:end:step] — the reference for slice.Tensor. */
static int py_slice(int64_t size, bool has_s, int64_t s, bool has_e, int64_t e, int64_t step,
                    int64_t *out) {
    int64_t lo = has_s ? s : 0, hi = has_e ? e : size;
    if (lo < 0) lo = lo + size < 0 ? 0 : lo + size;
    if (hi < 0) hi = hi + size < 0 ? 0 : hi + size;
    if (lo > size) lo = size;
    if (hi > size) hi = size;
    int n = 0;
    for (int64_t i = lo; i < hi; i += step) out[n++] = i;
    return n;
}

static void test_slice(void **state) {
    (void)state;
    int64_t sz[2] = {7, 3};
    static const int64_t bounds[] = {-9, -7, -3, -1, 0, 1, 3, 6, 7, 12};
    int nb = (int)(sizeof bounds / sizeof bounds[0]);
    for (int mk = 0; mk < NMAKERS; mk++) {
        fx_tensor *x = k_makers[mk](FX_DTYPE_I32, 2, sz, 1, 0);
        fx_ivalue xv = kb_iv(x), dim = fx_iv_int(0);
        for (int si = -1; si < nb; si++)
            for (int ei = -1; ei < nb; ei++)
                for (int64_t step = 1; step <= 3; step++) {
                    fx_ivalue s = si < 0 ? fx_iv_none() : fx_iv_int(bounds[si]);
                    fx_ivalue e = ei < 0 ? fx_iv_none() : fx_iv_int(bounds[ei]);
                    fx_ivalue st = fx_iv_int(step);
                    fx_tensor *v = kb_call(&g_eager, FX_OP_SLICE_TENSOR, 5, &xv, &dim, &s, &e, &st);
                    assert_non_null(v);
                    int64_t want[16];
                    int n = py_slice(7, si >= 0, si >= 0 ? bounds[si] : 0, ei >= 0,
                                     ei >= 0 ? bounds[ei] : 0, step, want);
                    assert_true(kb_sizes_are(v, 2, (int64_t[]){n, 3}));
                    for (int i = 0; i < n; i++)
                        for (int j = 0; j < 3; j++)
                            assert_true(kb_at(v, (int64_t[]){i, j}) == (double)(want[i] * 3 + j));
                    fx_tensor_release(v);
                }
        fx_tensor_release(x);
    }
    /* defaults: slice(x) is the whole tensor, a view; step 0 and 0-dim fail */
    fx_tensor *x = kb_tensor(FX_DTYPE_F32, 2, sz, NULL, 1, 0);
    fx_ivalue xv = kb_iv(x), d1 = fx_iv_int(1), z = fx_iv_int(0), none = fx_iv_none();
    fx_tensor *v = kb_call(&g_eager, FX_OP_SLICE_TENSOR, 1, &xv);
    assert_true(kb_sizes_are(v, 2, sz));
    assert_view_of(v, x);
    fx_tensor_release(v);
    v = kb_call(&g_eager, FX_OP_SLICE_TENSOR, 5, &xv, &d1, &d1, &none, &z);
    assert_null(v);
    assert_string_equal(kb_err.msg, "slice step must be positive");
    fx_ivalue m1 = fx_iv_int(-1);
    v = kb_call(&g_eager, FX_OP_SLICE_TENSOR, 3, &xv, &d1, &m1); /* x[:, -1:] */
    assert_true(kb_sizes_are(v, 2, (int64_t[]){7, 1}));
    assert_int_equal(fx_tensor_offset(v), 2);
    assert_true(kb_strides_are(v, 2, (int64_t[]){3, 1}));
    fx_tensor_release(v);
    fx_ivalue two = fx_iv_int(2);
    v = kb_call(&g_eager, FX_OP_SLICE_TENSOR, 5, &xv, &z, &none, &none, &two); /* x[::2] */
    assert_true(kb_strides_are(v, 2, (int64_t[]){6, 1}));
    assert_true(kb_sizes_are(v, 2, (int64_t[]){4, 3}));
    fx_tensor_release(v);
    fx_tensor *s0 = NULL;
    fx_err err;
    fx_tensor_scalar(1, FX_DTYPE_F32, &s0, &err);
    fx_ivalue sv = kb_iv(s0);
    assert_null(kb_call(&g_eager, FX_OP_SLICE_TENSOR, 1, &sv));
    assert_string_equal(kb_err.msg, "slice() cannot be applied to a 0-dim tensor.");
    fx_tensor_release(s0);
    fx_tensor_release(x);
}

/* ---- unsqueeze / squeeze ------------------------------------------------------------------ */

static void test_unsqueeze_squeeze(void **state) {
    (void)state;
    fx_tensor *x = kb_tensor(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, NULL, 1, 0);
    fx_ivalue xv = kb_iv(x);
    static const struct {
        int dim;
        int64_t sizes[3], strides[3];
    } cases[] = {
        {0, {1, 2, 3}, {6, 3, 1}},  {1, {2, 1, 3}, {3, 3, 1}}, {2, {2, 3, 1}, {3, 1, 1}},
        {-1, {2, 3, 1}, {3, 1, 1}}, {-3, {1, 2, 3}, {6, 3, 1}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fx_ivalue d = fx_iv_int(cases[i].dim);
        fx_tensor *v = kb_call(&g_eager, FX_OP_UNSQUEEZE, 2, &xv, &d);
        assert_non_null(v);
        assert_view_of(v, x);
        assert_true(kb_sizes_are(v, 3, cases[i].sizes));
        assert_true(kb_strides_are(v, 3, cases[i].strides));
        fx_tensor_release(v);
    }
    fx_ivalue d3 = fx_iv_int(3);
    assert_null(kb_call(&g_eager, FX_OP_UNSQUEEZE, 2, &xv, &d3));
    assert_string_equal(kb_err.msg,
                        "Dimension out of range (expected to be in range of [-3, 2], but got 3)");

    /* squeeze variants on [1, 2, 1, 3] */
    fx_tensor *y = kb_tensor(FX_DTYPE_F32, 4, (int64_t[]){1, 2, 1, 3}, NULL, 1, 0);
    fx_ivalue yv = kb_iv(y), d0 = fx_iv_int(0), d1 = fx_iv_int(1), dm2 = fx_iv_int(-2);
    fx_tensor *v = kb_call(&g_eager, FX_OP_SQUEEZE, 1, &yv);
    assert_true(kb_sizes_are(v, 2, (int64_t[]){2, 3}));
    assert_true(kb_strides_are(v, 2, (int64_t[]){3, 1}));
    assert_view_of(v, y);
    fx_tensor_release(v);
    v = kb_call(&g_eager, FX_OP_SQUEEZE_DIM, 2, &yv, &d0);
    assert_true(kb_sizes_are(v, 3, (int64_t[]){2, 1, 3}));
    fx_tensor_release(v);
    v = kb_call(&g_eager, FX_OP_SQUEEZE_DIM, 2, &yv, &d1); /* size 2: unchanged, still a view */
    assert_true(kb_sizes_are(v, 4, (int64_t[]){1, 2, 1, 3}));
    assert_view_of(v, y);
    fx_tensor_release(v);
    v = kb_call(&g_eager, FX_OP_SQUEEZE_DIM, 2, &yv, &dm2);
    assert_true(kb_sizes_are(v, 3, (int64_t[]){1, 2, 3}));
    fx_tensor_release(v);
    fx_ivalue dims = kb_ints(3, 0, 2, 3), dup = kb_ints(2, 0, -4);
    v = kb_call(&g_eager, FX_OP_SQUEEZE_DIMS, 2, &yv, &dims);
    assert_true(kb_sizes_are(v, 2, (int64_t[]){2, 3}));
    fx_tensor_release(v);
    assert_null(kb_call(&g_eager, FX_OP_SQUEEZE_DIMS, 2, &yv, &dup));
    assert_string_equal(kb_err.msg, "dim 0 appears multiple times in the list of dims");
    fx_ivalue_clear(&dims);
    fx_ivalue_clear(&dup);
    /* 0-dim: unsqueeze(0) -> [1], squeeze(0) and squeeze(-1) -> itself */
    fx_tensor *s = NULL;
    fx_err err;
    fx_tensor_scalar(4, FX_DTYPE_F32, &s, &err);
    fx_ivalue sv = kb_iv(s), dm1 = fx_iv_int(-1);
    v = kb_call(&g_eager, FX_OP_UNSQUEEZE, 2, &sv, &d0);
    assert_true(kb_sizes_are(v, 1, (int64_t[]){1}));
    assert_true(kb_strides_are(v, 1, (int64_t[]){1}));
    fx_tensor_release(v);
    v = kb_call(&g_eager, FX_OP_SQUEEZE_DIM, 2, &sv, &dm1);
    assert_int_equal(fx_tensor_ndim(v), 0);
    fx_tensor_release(v);
    fx_tensor_release(s);
    fx_tensor_release(y);
    fx_tensor_release(x);
}

/* ---- transpose / permute / t -------------------------------------------------------------- */

static void test_transpose_permute_t(void **state) {
    (void)state;
    int64_t sz[3] = {2, 3, 4};
    for (int mk = 0; mk < NMAKERS; mk++) {
        fx_tensor *x = k_makers[mk](FX_DTYPE_BF16, 3, sz, 1, 0);
        fx_ivalue xv = kb_iv(x);
        static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                        {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
        for (int p = 0; p < 6; p++) {
            fx_ivalue pv = kb_ints(3, perms[p][0], perms[p][1] - 3, perms[p][2]);
            fx_tensor *v = kb_call(&g_eager, FX_OP_PERMUTE, 2, &xv, &pv);
            assert_non_null(v);
            assert_view_of(v, x);
            int64_t vs[3], idx[3] = {0, 0, 0}, full[3];
            for (int k = 0; k < 3; k++) {
                vs[k] = sz[perms[p][k]];
                assert_int_equal(fx_tensor_stride(v, k), fx_tensor_stride(x, perms[p][k]));
            }
            assert_true(kb_sizes_are(v, 3, vs));
            do {
                for (int k = 0; k < 3; k++) full[perms[p][k]] = idx[k];
                assert_true(kb_at(v, idx) == base_val(full, 3, sz));
            } while (next_idx(idx, 3, vs));
            fx_tensor_release(v);
            fx_ivalue_clear(&pv);
        }
        fx_ivalue a = fx_iv_int(0), b = fx_iv_int(-1);
        fx_tensor *v = kb_call(&g_eager, FX_OP_TRANSPOSE_INT, 3, &xv, &a, &b);
        assert_true(kb_sizes_are(v, 3, (int64_t[]){4, 3, 2}));
        assert_true(kb_at(v, (int64_t[]){3, 2, 1}) == kb_at(x, (int64_t[]){1, 2, 3}));
        fx_tensor_release(v);
        fx_tensor_release(x);
    }
    fx_tensor *x = kb_tensor(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, NULL, 1, 0);
    fx_ivalue xv = kb_iv(x), p3 = kb_ints(3, 0, 1, 2), pdup = kb_ints(2, 1, -1);
    assert_null(kb_call(&g_eager, FX_OP_PERMUTE, 2, &xv, &p3));
    assert_string_equal(kb_err.msg,
                        "permute(sparse_coo): number of dimensions in the tensor input does not "
                        "match the length of the desired ordering of dimensions i.e. input.dim() "
                        "= 2 is not equal to len(dims) = 3");
    assert_null(kb_call(&g_eager, FX_OP_PERMUTE, 2, &xv, &pdup));
    assert_string_equal(kb_err.msg, "permute(): duplicate dims are not allowed.");
    fx_ivalue_clear(&p3);
    fx_ivalue_clear(&pdup);
    fx_tensor *v = kb_call(&g_eager, FX_OP_T, 1, &xv);
    assert_true(kb_sizes_are(v, 2, (int64_t[]){3, 2}));
    assert_true(kb_strides_are(v, 2, (int64_t[]){1, 3}));
    fx_tensor_release(v);
    fx_tensor *y = kb_tensor(FX_DTYPE_F32, 1, (int64_t[]){5}, NULL, 1, 0);
    fx_ivalue yv = kb_iv(y);
    v = kb_call(&g_eager, FX_OP_T, 1, &yv); /* 1-D: an alias */
    assert_true(kb_sizes_are(v, 1, (int64_t[]){5}));
    assert_view_of(v, y);
    fx_tensor_release(v);
    fx_tensor *z = kb_tensor(FX_DTYPE_F32, 3, (int64_t[]){1, 2, 3}, NULL, 1, 0);
    fx_ivalue zv = kb_iv(z);
    assert_null(kb_call(&g_eager, FX_OP_T, 1, &zv));
    assert_string_equal(kb_err.msg, "t() expects a tensor with <= 2 dimensions, but self is 3D");
    fx_tensor_release(z);
    fx_tensor_release(y);
    fx_tensor_release(x);
}

/* ---- expand / alias / as_strided ---------------------------------------------------------- */

static void test_expand_alias_as_strided(void **state) {
    (void)state;
    fx_tensor *x = kb_tensor(FX_DTYPE_I64, 2, (int64_t[]){3, 1}, NULL, 1, 10);
    fx_ivalue xv = kb_iv(x), sz = kb_ints(3, 2, -1, 4), bad = kb_ints(2, 4, 4);
    fx_tensor *v = kb_call(&g_eager, FX_OP_EXPAND, 2, &xv, &sz);
    assert_true(kb_sizes_are(v, 3, (int64_t[]){2, 3, 4}));
    assert_true(kb_strides_are(v, 3, (int64_t[]){0, 1, 0}));
    assert_view_of(v, x);
    for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 3; j++)
            for (int64_t k = 0; k < 4; k++) assert_true(kb_at(v, (int64_t[]){i, j, k}) == 10 + j);
    assert_true(fx_tensor_has_internal_overlap(v));
    fx_tensor_release(v);
    assert_null(kb_call(&g_eager, FX_OP_EXPAND, 2, &xv, &bad));
    assert_string_equal(kb_err.msg, "The expanded size of the tensor (4) must match the existing "
                                    "size (3) at non-singleton dimension 0.  Target sizes: [4, "
                                    "4].  Tensor sizes: [3, 1]");
    fx_ivalue_clear(&sz);
    fx_ivalue_clear(&bad);

    v = kb_call(&g_eager, FX_OP_ALIAS, 1, &xv);
    assert_view_of(v, x);
    assert_true(kb_sizes_are(v, 2, (int64_t[]){3, 1}));
    fx_tensor_release(v);

    /* as_strided over the storage of a [3, 4] tensor: a 2x2 window at offset 5 with stride
     * (4, 1), then the diagonal */
    fx_tensor *y = kb_tensor(FX_DTYPE_F32, 2, (int64_t[]){3, 4}, NULL, 1, 0);
    fx_ivalue yv = kb_iv(y), s22 = kb_ints(2, 2, 2), st41 = kb_ints(2, 4, 1), off = fx_iv_int(5);
    v = kb_call(&g_eager, FX_OP_AS_STRIDED, 4, &yv, &s22, &st41, &off);
    assert_int_equal(fx_tensor_offset(v), 5);
    assert_true(kb_at(v, (int64_t[]){1, 1}) == 10);
    fx_tensor_release(v);
    fx_ivalue s3 = kb_ints(1, 3), st5 = kb_ints(1, 5);
    v = kb_call(&g_eager, FX_OP_AS_STRIDED, 3, &yv, &s3, &st5); /* default offset: y's (0) */
    assert_true(kb_at(v, (int64_t[]){2}) == 10);
    fx_tensor_release(v);
    fx_ivalue s33 = kb_ints(2, 3, 3), st11 = kb_ints(2, 1, 1), neg = kb_ints(2, -1, 1);
    fx_ivalue big = kb_ints(2, 4, 4), st44 = kb_ints(2, 4, 1);
    assert_null(kb_call(&g_eager, FX_OP_AS_STRIDED, 3, &yv, &s33, &s3));
    assert_string_equal(kb_err.msg, "mismatch in length of strides and shape");
    assert_null(kb_call(&g_eager, FX_OP_AS_STRIDED, 3, &yv, &s33, &neg));
    assert_string_equal(kb_err.msg, "as_strided: Negative strides are not supported at the "
                                    "moment, got strides: [-1, 1]");
    assert_null(kb_call(&g_eager, FX_OP_AS_STRIDED, 3, &yv, &big, &st44));
    assert_string_equal(kb_err.msg, "setStorage: sizes [4, 4], strides [4, 1], storage offset 0, "
                                    "and itemsize 4 requiring a storage size of 64 are out of "
                                    "bounds for storage of size 48");
    v = kb_call(&g_eager, FX_OP_AS_STRIDED, 3, &yv, &s33, &st11); /* overlapping is allowed */
    assert_true(kb_at(v, (int64_t[]){2, 2}) == 4);
    fx_tensor_release(v);
    fx_ivalue *lists[] = {&s22, &st41, &s3, &st5, &s33, &st11, &neg, &big, &st44};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) fx_ivalue_clear(lists[i]);
    fx_tensor_release(y);
    fx_tensor_release(x);
}

/* ---- views of meta tensors ---------------------------------------------------------------- */

static void test_meta_views(void **state) {
    (void)state;
    fx_tensor *x = kb_meta(FX_DTYPE_F16, 3, (int64_t[]){4, 1, 6});
    fx_ivalue xv = kb_iv(x), d0 = fx_iv_int(0), d1 = fx_iv_int(1), d2 = fx_iv_int(2);
    fx_ivalue shape = kb_ints(2, -1, 3), ex = kb_ints(3, 4, 5, 6);
    fx_tensor *v;
    v = kb_call(&g_eager, FX_OP_VIEW, 2, &xv, &shape);
    assert_true(kb_sizes_are(v, 2, (int64_t[]){8, 3}));
    assert_true(fx_tensor_is_meta(v));
    assert_null(fx_tensor_data(v));
    fx_tensor_release(v);
    v = kb_call(&g_eager, FX_OP_SELECT_INT, 3, &xv, &d2, &d1);
    assert_true(kb_sizes_are(v, 2, (int64_t[]){4, 1}));
    assert_int_equal(fx_tensor_offset(v), 1);
    fx_tensor_release(v);
    v = kb_call(&g_eager, FX_OP_EXPAND, 2, &xv, &ex);
    assert_true(kb_strides_are(v, 3, (int64_t[]){6, 0, 1}));
    assert_true(fx_tensor_is_meta(v));
    fx_tensor_release(v);
    v = kb_call(&g_eager, FX_OP_TRANSPOSE_INT, 3, &xv, &d0, &d2);
    assert_true(kb_sizes_are(v, 3, (int64_t[]){6, 1, 4}));
    fx_tensor_release(v);
    v = kb_call(&g_eager, FX_OP_SQUEEZE, 1, &xv);
    assert_true(kb_sizes_are(v, 2, (int64_t[]){4, 6}));
    fx_tensor_release(v);
    v = kb_call(&g_eager, FX_OP__UNSAFE_VIEW, 2, &xv, &shape);
    assert_true(fx_tensor_is_meta(v));
    assert_false(fx_tensor_same_storage(v, x));
    fx_tensor_release(v);
    fx_ivalue_clear(&shape);
    fx_ivalue_clear(&ex);
    fx_tensor_release(x);
}

/* ---- _unsafe_view, contiguous, reshape ---------------------------------------------------- */

static void test_unsafe_view(void **state) {
    (void)state;
    fx_tensor *t = kb_transposed(FX_DTYPE_F32, 2, (int64_t[]){3, 4}, 1, 0);
    fx_ivalue tv = kb_iv(t), shape = kb_ints(2, 2, -1);
    fx_tensor *v = kb_call(&g_eager, FX_OP__UNSAFE_VIEW, 2, &tv, &shape);
    assert_non_null(v);
    assert_false(fx_tensor_same_storage(v, t));
    assert_true(kb_sizes_are(v, 2, (int64_t[]){2, 6}));
    assert_true(fx_tensor_is_contiguous(v));
    for (int64_t i = 0; i < 12; i++) assert_true(fx_tensor_flat_f64(v, i) == (double)i);
    fx_tensor_release(v);
    fx_ivalue_clear(&shape);
    fx_tensor_release(t);
}

static void test_contiguous(void **state) {
    (void)state;
    fx_ctx tr;
    kb_rec rec;
    kb_trace_ctx(&tr, &rec, true);
    fx_tensor *x = kb_tensor(FX_DTYPE_F32, 2, (int64_t[]){3, 4}, NULL, 1, 0);
    fx_ivalue xv = kb_iv(x);
    fx_tensor *c = kb_call(&tr, FX_OP_CONTIGUOUS, 1, &xv);
    assert_ptr_equal(c, x); /* already contiguous: self, nothing recorded */
    assert_int_equal(rec.n, 0);
    fx_tensor_release(c);
    for (int mk = 1; mk < NMAKERS; mk++) {
        fx_tensor *t = k_makers[mk](FX_DTYPE_F16, 2, (int64_t[]){3, 4}, 0.5, -1);
        fx_ivalue tv = kb_iv(t);
        rec.n = 0;
        c = kb_call(&tr, FX_OP_CONTIGUOUS, 1, &tv);
        assert_non_null(c);
        assert_string_equal(kb_rec_str(&rec), "clone.default");
        assert_true(fx_tensor_is_contiguous(c));
        assert_false(fx_tensor_same_storage(c, t));
        for (int64_t i = 0; i < 12; i++) assert_true(fx_tensor_flat_f64(c, i) == i * 0.5 - 1);
        fx_tensor_release(c);
        fx_tensor_release(t);
    }
    /* the same on meta tensors, through the eager context (meta in, meta out) */
    fx_tensor *m = kb_meta(FX_DTYPE_F32, 2, (int64_t[]){3, 4});
    fx_ivalue mv = kb_iv(m), d0 = fx_iv_int(0), d1 = fx_iv_int(1);
    fx_tensor *mt = kb_call(&g_eager, FX_OP_TRANSPOSE_INT, 3, &mv, &d0, &d1);
    fx_ivalue mtv = kb_iv(mt);
    c = kb_call(&g_eager, FX_OP_CONTIGUOUS, 1, &mtv);
    assert_true(fx_tensor_is_meta(c));
    assert_true(fx_tensor_is_contiguous(c));
    assert_true(kb_sizes_are(c, 2, (int64_t[]){4, 3}));
    fx_tensor_release(c);
    fx_tensor_release(mt);
    fx_tensor_release(m);
    fx_tensor_release(x);
}

static void test_reshape(void **state) {
    (void)state;
    fx_ctx tr;
    kb_rec rec;
    kb_trace_ctx(&tr, &rec, true);
    /* contiguous: view with the shape as given */
    fx_tensor *x = kb_tensor(FX_DTYPE_F32, 2, (int64_t[]){4, 6}, NULL, 1, 0);
    fx_ivalue xv = kb_iv(x), s = kb_ints(3, 2, -1, 3);
    fx_tensor *r = kb_call(&tr, FX_OP_RESHAPE, 2, &xv, &s);
    assert_string_equal(kb_rec_str(&rec), "view.default");
    assert_view_of(r, x);
    assert_true(kb_sizes_are(r, 3, (int64_t[]){2, 4, 3}));
    fx_tensor_release(r);
    /* non-contiguous but viewable: view with the inferred shape */
    fx_tensor *t = kb_transposed(FX_DTYPE_F32, 2, (int64_t[]){6, 4}, 1, 0);
    fx_ivalue tv = kb_iv(t), s2 = kb_ints(3, 6, 2, -1), flat = kb_ints(1, -1);
    rec.n = 0;
    r = kb_call(&tr, FX_OP_RESHAPE, 2, &tv, &s2);
    assert_string_equal(kb_rec_str(&rec), "view.default");
    assert_view_of(r, t);
    assert_true(kb_sizes_are(r, 3, (int64_t[]){6, 2, 2}));
    assert_true(kb_at(r, (int64_t[]){5, 1, 0}) == kb_at(t, (int64_t[]){5, 2}));
    fx_tensor_release(r);
    /* not viewable: clone + _unsafe_view */
    rec.n = 0;
    r = kb_call(&tr, FX_OP_RESHAPE, 2, &tv, &flat);
    assert_string_equal(kb_rec_str(&rec), "clone.default,_unsafe_view.default");
    assert_false(fx_tensor_same_storage(r, t));
    assert_true(kb_sizes_are(r, 1, (int64_t[]){24}));
    for (int64_t i = 0; i < 24; i++) assert_true(fx_tensor_flat_f64(r, i) == (double)i);
    fx_tensor_release(r);
    /* errors come from the shape inference */
    fx_ivalue bad = kb_ints(2, 5, -1);
    assert_null(kb_call(&tr, FX_OP_RESHAPE, 2, &tv, &bad));
    assert_string_equal(kb_err.msg, "shape '[5, -1]' is invalid for input of size 24");
    assert_null(kb_call(&tr, FX_OP_RESHAPE, 2, &xv, &bad));
    assert_string_equal(kb_err.msg, "shape '[5, -1]' is invalid for input of size 24");
    fx_ivalue_clear(&bad);
    fx_ivalue_clear(&s);
    fx_ivalue_clear(&s2);
    fx_ivalue_clear(&flat);
    fx_tensor_release(t);
    fx_tensor_release(x);
}

/* A trace on meta tensors records view ops with their arguments normalized by dispatch. */
static void test_meta_trace_records_views(void **state) {
    (void)state;
    fx_ctx tr;
    kb_rec rec;
    kb_trace_ctx(&tr, &rec, false);
    fx_tensor *x = kb_meta(FX_DTYPE_F32, 3, (int64_t[]){2, 3, 4});
    fx_ivalue xv = kb_iv(x), d0 = fx_iv_int(0), d1 = fx_iv_int(1);
    fx_tensor *a = kb_call(&tr, FX_OP_SELECT_INT, 3, &xv, &d0, &d1);
    fx_ivalue av = kb_iv(a);
    fx_tensor *b = kb_call(&tr, FX_OP_SLICE_TENSOR, 3, &av, &d1, &d1);
    fx_ivalue bv = kb_iv(b);
    fx_tensor *c = kb_call(&tr, FX_OP_UNSQUEEZE, 2, &bv, &d0);
    assert_string_equal(kb_rec_str(&rec), "select.int,slice.Tensor,unsqueeze.default");
    assert_true(kb_sizes_are(c, 3, (int64_t[]){1, 3, 3}));
    assert_int_equal(fx_tensor_offset(c), 13);
    fx_tensor_release(c);
    fx_tensor_release(b);
    fx_tensor_release(a);
    fx_tensor_release(x);
}

/* ---- allocation failures ------------------------------------------------------------------- */

static fx_tensor *g_t;

static int run_reshape_copy(void) {
    fx_ivalue tv = kb_iv(g_t), flat = kb_ints(1, -1);
    if (flat.tag != FX_IV_LIST) return FX_ENOMEM;
    fx_tensor *r = kb_call(&g_eager, FX_OP_RESHAPE, 2, &tv, &flat);
    fx_ivalue_clear(&flat);
    if (!r) return kb_err.code;
    fx_tensor_release(r);
    return FX_OK;
}
static int run_permute(void) {
    fx_ivalue tv = kb_iv(g_t), p = kb_ints(2, 1, 0);
    if (p.tag != FX_IV_LIST) return FX_ENOMEM;
    fx_tensor *r = kb_call(&g_eager, FX_OP_PERMUTE, 2, &tv, &p);
    fx_ivalue_clear(&p);
    if (!r) return kb_err.code;
    fx_tensor_release(r);
    return FX_OK;
}

static void test_allocation_failures(void **state) {
    (void)state;
    g_t = kb_transposed(FX_DTYPE_F32, 2, (int64_t[]){6, 4}, 1, 0);
    assert_true(kb_oom_sweep(run_reshape_copy) >= 4);
    assert_true(kb_oom_sweep(run_permute) >= 1);
    fx_tensor_release(g_t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view),
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_unsqueeze_squeeze),
        cmocka_unit_test(test_transpose_permute_t),
        cmocka_unit_test(test_expand_alias_as_strided),
        cmocka_unit_test(test_meta_views),
        cmocka_unit_test(test_unsafe_view),
        cmocka_unit_test(test_contiguous),
        cmocka_unit_test(test_reshape),
        cmocka_unit_test(test_meta_trace_records_views),
        cmocka_unit_test(test_allocation_failures),
    };
    return kb_run(tests, kb_setup, NULL);
}
