/* tests/unit/test_index.c — index.Tensor, index_put, index_put_, select_scatter, slice_scatter.
 * Layer: tests (cmocka, links libfxdb.a). A naive reference (numpy's advanced-indexing rules,
 * written out with plain loops over multi-indices) checks results over dtypes, layouts
 * (contiguous, transposed, gapped) and index kinds (int64, int32, negative, broadcast, masks,
 * adjacent and separated indexed dims); fixed cases pin PyTorch's results, the seed case S3 and
 * every error text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tests/unit/kb_util.h"

typedef fx_tensor *(*maker_fn)(fx_dtype, int, const int64_t *, double, double);
static fx_tensor *make_contig(fx_dtype dt, int nd, const int64_t *s, double sc, double sh) {
    return kb_tensor(dt, nd, s, NULL, sc, sh);
}
static const maker_fn k_makers[] = {make_contig, kb_transposed, kb_gapped};

/* ---- the reference -------------------------------------------------------------------------- */

#define REF_MAX 4096

typedef struct ref_index {
    int n;                       /* entries after mask expansion */
    bool is_adv[FX_MAX_DIMS];    /* entry k is an index array (else a full slice) */
    int64_t len[FX_MAX_DIMS];    /* index arrays: element count (1-D or broadcast source) */
    int nd[FX_MAX_DIMS];         /* index array rank */
    int64_t sizes[FX_MAX_DIMS][FX_MAX_DIMS];
    int64_t vals[FX_MAX_DIMS][REF_MAX]; /* row-major values */
} ref_index;

/* Reads the indices list of the op into the reference form, expanding masks by a plain scan. */
static void ref_from_list(const fx_ivalue *list, ref_index *r) {
    memset(r, 0, sizeof *r);
    for (int i = 0; i < list->u.list.n; i++) {
        const fx_ivalue *e = &list->u.list.items[i];
        if (e->tag == FX_IV_NONE) {
            r->n++;
            continue;
        }
        const fx_tensor *t = e->u.t;
        int64_t n = fx_tensor_numel(t);
        if (fx_tensor_dtype(t) == FX_DTYPE_BOOL) {
            int md = fx_tensor_ndim(t), first = r->n;
            int64_t cnt = 0, idx[FX_MAX_DIMS];
            for (int64_t j = 0; j < n; j++) {
                int64_t q = j;
                for (int d = md - 1; d >= 0; d--) idx[d] = q % fx_tensor_size(t, d), q /= fx_tensor_size(t, d);
                if (fx_tensor_get_i64(t, idx)) {
                    for (int d = 0; d < md; d++) r->vals[first + d][cnt] = idx[d];
                    cnt++;
                }
            }
            for (int d = 0; d < md; d++) {
                r->is_adv[first + d] = true;
                r->nd[first + d] = 1;
                r->sizes[first + d][0] = cnt;
                r->len[first + d] = cnt;
            }
            r->n += md;
        } else {
            int k = r->n++;
            r->is_adv[k] = true;
            r->nd[k] = fx_tensor_ndim(t);
            r->len[k] = n;
            for (int d = 0; d < r->nd[k]; d++) r->sizes[k][d] = fx_tensor_size(t, d);
            for (int64_t j = 0; j < n; j++) r->vals[k][j] = fx_tensor_flat_i64(t, j);
        }
    }
}

/* Result shape and, for every result element (row-major), the source multi-index in self. */
static int ref_plan(const ref_index *r, int snd, const int64_t *ssz, int *ond, int64_t *osz,
                    int64_t (*src)[FX_MAX_DIMS]) {
    int n = r->n;
    /* broadcast shape of the index arrays */
    int bnd = 0;
    int64_t bs[FX_MAX_DIMS];
    for (int k = 0; k < n; k++)
        if (r->is_adv[k] && r->nd[k] > bnd) bnd = r->nd[k];
    for (int d = 0; d < bnd; d++) bs[d] = 1;
    for (int k = 0; k < n; k++)
        if (r->is_adv[k])
            for (int d = 0; d < r->nd[k]; d++) {
                int64_t s = r->sizes[k][d];
                int bd = bnd - r->nd[k] + d;
                if (s != 1) bs[bd] = s;
            }
    int first = -1, last = -1;
    for (int k = 0; k < n; k++)
        if (r->is_adv[k]) {
            if (first < 0) first = k;
            last = k;
        }
    bool together = true;
    for (int k = first; first >= 0 && k <= last; k++)
        if (!r->is_adv[k]) together = false;
    /* result dims: slices before (when together), the broadcast block, the remaining slices */
    int slice_dims[FX_MAX_DIMS], ns = 0;
    for (int d = 0; d < snd; d++)
        if (d >= n || !r->is_adv[d]) slice_dims[ns++] = d;
    int front = together && first >= 0 ? first : 0;
    *ond = 0;
    for (int i = 0; i < front; i++) osz[(*ond)++] = ssz[slice_dims[i]];
    for (int d = 0; d < bnd; d++) osz[(*ond)++] = bs[d];
    for (int i = front; i < ns; i++) osz[(*ond)++] = ssz[slice_dims[i]];
    int64_t total = 1;
    for (int d = 0; d < *ond; d++) total *= osz[d];
    for (int64_t e = 0; e < total; e++) {
        int64_t oi[FX_MAX_DIMS], q = e;
        for (int d = *ond - 1; d >= 0; d--) oi[d] = q % osz[d], q /= osz[d];
        int64_t *s = src[e];
        for (int i = 0; i < front; i++) s[slice_dims[i]] = oi[i];
        for (int i = front; i < ns; i++) s[slice_dims[i]] = oi[bnd + i];
        for (int k = 0; k < n; k++) {
            if (!r->is_adv[k]) continue;
            int64_t lin = 0; /* position in array k, broadcasting its size-1 dims */
            for (int d = 0; d < r->nd[k]; d++) {
                int bd = bnd - r->nd[k] + d;
                int64_t c = r->sizes[k][d] == 1 ? 0 : oi[front + bd];
                lin = lin * r->sizes[k][d] + c;
            }
            int64_t v = r->vals[k][lin];
            s[k] = v < 0 ? v + ssz[k] : v;
        }
    }
    return (int)total;
}

static int64_t (*g_src)[FX_MAX_DIMS];

/* Checks index(self, list) against the reference; self holds (linear index * 1 + 0). */
static void check_index(fx_tensor *self, fx_ivalue *list) {
    ref_index *r = calloc(1, sizeof *r);
    ref_from_list(list, r);
    int ond;
    int64_t osz[FX_MAX_DIMS];
    int total = ref_plan(r, fx_tensor_ndim(self), fx_tensor_sizes(self), &ond, osz, g_src);
    fx_ivalue sv = kb_iv(self);
    fx_tensor *res = kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &sv, list);
    if (!res) fail_msg("index failed: %s", kb_err.msg);
    assert_true(kb_sizes_are(res, ond, osz));
    assert_true(fx_tensor_is_contiguous(res));
    for (int e = 0; e < total; e++)
        assert_true(fx_tensor_flat_f64(res, e) == fx_tensor_get_f64(self, g_src[e]));
    fx_tensor_release(res);
    free(r);
}

/* Checks index_put(self, list, values, acc) against the reference (values broadcast). */
static void check_index_put(fx_tensor *self, fx_ivalue *list, fx_tensor *values, bool acc) {
    ref_index *r = calloc(1, sizeof *r);
    ref_from_list(list, r);
    int ond, snd = fx_tensor_ndim(self);
    int64_t osz[FX_MAX_DIMS];
    int total = ref_plan(r, snd, fx_tensor_sizes(self), &ond, osz, g_src);
    int64_t n = fx_tensor_numel(self);
    double *want = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) want[i] = fx_tensor_flat_f64(self, i);
    int vnd = fx_tensor_ndim(values);
    for (int e = 0; e < total; e++) {
        int64_t oi[FX_MAX_DIMS], q = e, vi[FX_MAX_DIMS], lin = 0;
        for (int d = ond - 1; d >= 0; d--) oi[d] = q % osz[d], q /= osz[d];
        for (int d = 0; d < vnd; d++) {
            int64_t s = fx_tensor_size(values, d);
            vi[d] = s == 1 ? 0 : oi[ond - vnd + d];
        }
        for (int d = 0; d < snd; d++) lin = lin * fx_tensor_size(self, d) + g_src[e][d];
        double v = fx_tensor_get_f64(values, vi);
        want[lin] = acc ? want[lin] + v : v;
    }
    fx_ivalue sv = kb_iv(self), vv = kb_iv(values), av = fx_iv_bool(acc);
    /* functional: a new tensor, self untouched */
    double first = n ? fx_tensor_flat_f64(self, 0) : 0;
    fx_tensor *res = kb_call(&g_eager, FX_OP_INDEX_PUT, 4, &sv, list, &vv, &av);
    if (!res) fail_msg("index_put failed: %s", kb_err.msg);
    assert_false(fx_tensor_same_storage(res, self));
    assert_true(kb_sizes_are(res, snd, fx_tensor_sizes(self)));
    for (int64_t i = 0; i < n; i++) assert_true(fx_tensor_flat_f64(res, i) == want[i]);
    if (n) assert_true(fx_tensor_flat_f64(self, 0) == first);
    fx_tensor_release(res);
    /* in place: self itself, version bumped */
    uint64_t ver = fx_tensor_version(self);
    res = kb_call(&g_eager, FX_OP_INDEX_PUT_, 4, &sv, list, &vv, &av);
    assert_ptr_equal(res, self);
    assert_int_equal(fx_tensor_version(self), ver + 1);
    for (int64_t i = 0; i < n; i++) assert_true(fx_tensor_flat_f64(self, i) == want[i]);
    fx_tensor_release(res);
    free(want);
    free(r);
}

static fx_tensor *idx_tensor(fx_dtype dt, int nd, const int64_t *sizes, const int64_t *v) {
    double d[64];
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= sizes[i];
    for (int64_t i = 0; i < n; i++) d[i] = (double)v[i];
    return kb_tensor(dt, nd, sizes, d, 0, 0);
}

/* A list ivalue of n entries (tensors retained, NULL = None); clear it after use. */
static fx_ivalue idx_list(int n, fx_tensor **ts) {
    fx_ivalue l;
    fx_iv_list(n, &l, &kb_err);
    for (int i = 0; i < n; i++) l.u.list.items[i] = ts[i] ? fx_iv_tensor(ts[i]) : fx_iv_none();
    return l;
}

/* ---- index.Tensor ---------------------------------------------------------------------------- */

static void test_index_fixed_cases(void **state) {
    (void)state;
    /* x = arange(24).view(2, 3, 4) */
    fx_tensor *x = kb_tensor(FX_DTYPE_F32, 3, (int64_t[]){2, 3, 4}, NULL, 1, 0);
    fx_ivalue xv = kb_iv(x);
    /* x[[0, 1], :, [1, 2]] -> separated indexed dims: block in front, shape [2, 3] */
    fx_tensor *i0 = idx_tensor(FX_DTYPE_I64, 1, (int64_t[]){2}, (int64_t[]){0, 1});
    fx_tensor *i2 = idx_tensor(FX_DTYPE_I64, 1, (int64_t[]){2}, (int64_t[]){1, 2});
    fx_ivalue l = idx_list(3, (fx_tensor *[]){i0, NULL, i2});
    fx_tensor *r = kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &xv, &l);
    assert_true(kb_sizes_are(r, 2, (int64_t[]){2, 3}));
    static const double want1[] = {1, 5, 9, 14, 18, 22};
    for (int i = 0; i < 6; i++) assert_true(fx_tensor_flat_f64(r, i) == want1[i]);
    fx_tensor_release(r);
    fx_ivalue_clear(&l);
    /* x[:, [[0], [2]], [1, 3]] -> adjacent: block in place, shape [2, 2, 2] */
    fx_tensor *j1 = idx_tensor(FX_DTYPE_I32, 2, (int64_t[]){2, 1}, (int64_t[]){0, 2});
    fx_tensor *j2 = idx_tensor(FX_DTYPE_I64, 1, (int64_t[]){2}, (int64_t[]){1, 3});
    l = idx_list(3, (fx_tensor *[]){NULL, j1, j2});
    r = kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &xv, &l);
    assert_true(kb_sizes_are(r, 3, (int64_t[]){2, 2, 2}));
    assert_true(kb_at(r, (int64_t[]){0, 1, 0}) == 9);
    assert_true(kb_at(r, (int64_t[]){1, 0, 1}) == 15);
    fx_tensor_release(r);
    fx_ivalue_clear(&l);
    /* negative indices wrap: x[[-1]] == x[[1]] */
    fx_tensor *neg = idx_tensor(FX_DTYPE_I64, 1, (int64_t[]){1}, (int64_t[]){-1});
    l = idx_list(1, (fx_tensor *[]){neg});
    r = kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &xv, &l);
    assert_true(kb_sizes_are(r, 3, (int64_t[]){1, 3, 4}));
    assert_true(kb_at(r, (int64_t[]){0, 0, 0}) == 12);
    fx_tensor_release(r);
    fx_ivalue_clear(&l);
    /* a bool mask over the first two dims -> [nnz, 4] */
    fx_tensor *m = kb_tensor(FX_DTYPE_BOOL, 2, (int64_t[]){2, 3}, (double[]){0, 1, 0, 1, 0, 1}, 0, 0);
    l = idx_list(1, (fx_tensor *[]){m});
    r = kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &xv, &l);
    assert_true(kb_sizes_are(r, 2, (int64_t[]){3, 4}));
    assert_true(kb_at(r, (int64_t[]){0, 0}) == 4);  /* x[0, 1] */
    assert_true(kb_at(r, (int64_t[]){1, 0}) == 12); /* x[1, 0] */
    assert_true(kb_at(r, (int64_t[]){2, 3}) == 23); /* x[1, 2, 3] */
    fx_tensor_release(r);
    fx_ivalue_clear(&l);
    fx_tensor *ts[] = {i0, i2, j1, j2, neg, m};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) fx_tensor_release(ts[i]);
    fx_tensor_release(x);
}

static void test_index_against_reference(void **state) {
    (void)state;
    srand(7);
    int64_t sz[3] = {3, 4, 5};
    static const fx_dtype dts[] = {FX_DTYPE_F32, FX_DTYPE_F64, FX_DTYPE_F16, FX_DTYPE_I64,
                                   FX_DTYPE_I8, FX_DTYPE_BOOL};
    int runs = 0;
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
        for (int mk = 0; mk < 3; mk++) {
            fx_tensor *x = k_makers[mk](dts[di], 3, sz, 1, 0);
            if (dts[di] == FX_DTYPE_I8 || dts[di] == FX_DTYPE_BOOL) {
                /* small-range dtypes: values i % 7 (bool: i % 2) */
                for (int64_t i = 0; i < 60; i++) {
                    int64_t idx[3] = {i / 20, (i / 5) % 4, i % 5};
                    fx_tensor_set_f64(x, idx, (double)(dts[di] == FX_DTYPE_BOOL ? i % 2 : i % 7));
                }
            }
            for (int trial = 0; trial < 40; trial++) {
                /* random entries: None or an index tensor (int64 / int32, rank 0..2, values
                 * in [-size, size)), at most 3 entries */
                int n = 1 + rand() % 3;
                fx_tensor *ts[3] = {NULL, NULL, NULL};
                int bshape_nd = 1 + rand() % 2;
                int64_t bshape[2] = {1 + rand() % 3, 1 + rand() % 2};
                for (int k = 0; k < n; k++) {
                    if (rand() % 3 == 0) continue;
                    int nd = rand() % (bshape_nd + 1);
                    int64_t s[2];
                    for (int d = 0; d < nd; d++)
                        s[d] = rand() % 2 ? bshape[bshape_nd - nd + d] : 1;
                    int64_t cnt = 1, v[8];
                    for (int d = 0; d < nd; d++) cnt *= s[d];
                    for (int64_t j = 0; j < cnt; j++) v[j] = rand() % (2 * sz[k]) - sz[k];
                    ts[k] = idx_tensor(rand() % 2 ? FX_DTYPE_I64 : FX_DTYPE_I32, nd, s, v);
                }
                fx_ivalue l = idx_list(n, ts);
                check_index(x, &l);
                fx_ivalue_clear(&l);
                for (int k = 0; k < 3; k++) fx_tensor_release(ts[k]);
                runs++;
            }
            /* masks: over dim 0, over dims (1, 2) after a None */
            fx_tensor *m0 = kb_tensor(FX_DTYPE_BOOL, 1, (int64_t[]){3}, (double[]){1, 0, 1}, 0, 0);
            double mv[20];
            for (int i = 0; i < 20; i++) mv[i] = (i * 7) % 3 == 0;
            fx_tensor *m12 = kb_tensor(FX_DTYPE_BOOL, 2, (int64_t[]){4, 5}, mv, 0, 0);
            fx_ivalue l = idx_list(1, (fx_tensor *[]){m0});
            check_index(x, &l);
            fx_ivalue_clear(&l);
            l = idx_list(2, (fx_tensor *[]){NULL, m12});
            check_index(x, &l);
            fx_ivalue_clear(&l);
            fx_tensor_release(m0);
            fx_tensor_release(m12);
            fx_tensor_release(x);
        }
    assert_int_equal(runs, 6 * 3 * 40);
}

static void test_index_errors(void **state) {
    (void)state;
    fx_tensor *x = kb_tensor(FX_DTYPE_F32, 1, (int64_t[]){3}, NULL, 1, 0);
    fx_tensor *y = kb_tensor(FX_DTYPE_F32, 2, (int64_t[]){3, 4}, NULL, 1, 0);
    fx_ivalue xv = kb_iv(x), yv = kb_iv(y);
    fx_tensor *five = idx_tensor(FX_DTYPE_I64, 1, (int64_t[]){1}, (int64_t[]){5});
    fx_ivalue l = idx_list(1, (fx_tensor *[]){five});
    assert_null(kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &xv, &l));
    assert_int_equal(kb_err.code, FX_EINDEX);
    assert_string_equal(kb_err.msg, "index 5 is out of bounds for dimension 0 with size 3");
    fx_ivalue_clear(&l);
    /* PyTorch counts index tensors, not dims, in this message: y[:, [5]] says dimension 0 */
    l = idx_list(2, (fx_tensor *[]){NULL, five});
    assert_null(kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &yv, &l));
    assert_string_equal(kb_err.msg, "index 5 is out of bounds for dimension 0 with size 4");
    fx_ivalue_clear(&l);
    fx_tensor *m4 = idx_tensor(FX_DTYPE_I64, 1, (int64_t[]){1}, (int64_t[]){-4});
    l = idx_list(1, (fx_tensor *[]){m4});
    assert_null(kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &xv, &l));
    assert_string_equal(kb_err.msg, "index -4 is out of bounds for dimension 0 with size 3");
    fx_ivalue_clear(&l);
    fx_tensor *f = kb_tensor(FX_DTYPE_F32, 1, (int64_t[]){1}, (double[]){0}, 0, 0);
    l = idx_list(1, (fx_tensor *[]){f});
    assert_null(kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &xv, &l));
    assert_string_equal(kb_err.msg,
                        "tensors used as indices must be long, int, byte or bool tensors");
    fx_ivalue_clear(&l);
    fx_tensor *i16 = idx_tensor(FX_DTYPE_I16, 1, (int64_t[]){1}, (int64_t[]){0});
    l = idx_list(1, (fx_tensor *[]){i16});
    assert_null(kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &xv, &l));
    assert_string_equal(kb_err.msg,
                        "tensors used as indices must be long, int, byte or bool tensors");
    fx_ivalue_clear(&l);
    l = idx_list(2, (fx_tensor *[]){five, five});
    assert_null(kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &xv, &l));
    assert_string_equal(kb_err.msg, "too many indices for tensor of dimension 1 (got 2)");
    fx_ivalue_clear(&l);
    fx_tensor *a2 = idx_tensor(FX_DTYPE_I64, 1, (int64_t[]){2}, (int64_t[]){0, 1});
    fx_tensor *a3 = idx_tensor(FX_DTYPE_I64, 1, (int64_t[]){3}, (int64_t[]){0, 1, 2});
    l = idx_list(2, (fx_tensor *[]){a2, a3});
    assert_null(kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &yv, &l));
    assert_string_equal(kb_err.msg, "shape mismatch: indexing tensors could not be broadcast "
                                    "together with shapes [2], [3]");
    fx_ivalue_clear(&l);
    fx_tensor *mask = kb_tensor(FX_DTYPE_BOOL, 1, (int64_t[]){4}, (double[]){1, 0, 1, 0}, 0, 0);
    l = idx_list(1, (fx_tensor *[]){mask});
    assert_null(kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &yv, &l));
    assert_string_equal(kb_err.msg, "The shape of the mask [4] at index 0 does not match the "
                                    "shape of the indexed tensor [3, 4] at index 0");
    fx_ivalue_clear(&l);
    /* a mask on a meta tensor: the result size depends on data */
    fx_tensor *mm = kb_meta(FX_DTYPE_BOOL, 1, (int64_t[]){3});
    l = idx_list(1, (fx_tensor *[]){mm});
    assert_null(kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &xv, &l));
    assert_int_equal(kb_err.code, FX_EDATADEP);
    assert_string_equal(kb_err.kind, "data_dependent");
    fx_ivalue_clear(&l);
    fx_tensor *ts[] = {five, m4, f, i16, a2, a3, mask, mm};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) fx_tensor_release(ts[i]);
    fx_tensor_release(x);
    fx_tensor_release(y);
}

static void test_index_meta(void **state) {
    (void)state;
    fx_tensor *x = kb_meta(FX_DTYPE_F16, 3, (int64_t[]){4, 5, 6});
    fx_tensor *i = kb_meta(FX_DTYPE_I64, 2, (int64_t[]){2, 3});
    fx_ivalue xv = kb_iv(x), l = idx_list(3, (fx_tensor *[]){i, NULL, i});
    fx_tensor *r = kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &xv, &l);
    assert_true(fx_tensor_is_meta(r));
    assert_true(kb_sizes_are(r, 3, (int64_t[]){2, 3, 5}));
    assert_int_equal(fx_tensor_dtype(r), FX_DTYPE_F16);
    fx_tensor_release(r);
    fx_ivalue_clear(&l);
    /* index_put on meta keeps self's shape; a meta mask is fine there */
    fx_tensor *mm = kb_meta(FX_DTYPE_BOOL, 1, (int64_t[]){4});
    fx_tensor *v = kb_meta(FX_DTYPE_F16, 0, NULL);
    fx_ivalue vv = kb_iv(v);
    l = idx_list(1, (fx_tensor *[]){mm});
    r = kb_call(&g_eager, FX_OP_INDEX_PUT, 3, &xv, &l, &vv);
    assert_true(kb_sizes_are(r, 3, (int64_t[]){4, 5, 6}));
    assert_true(fx_tensor_is_meta(r));
    fx_tensor_release(r);
    fx_ivalue_clear(&l);
    fx_tensor_release(v);
    fx_tensor_release(mm);
    fx_tensor_release(i);
    fx_tensor_release(x);
}

/* ---- index_put ------------------------------------------------------------------------------- */

/* Seed case S3: x = ones(4, 4, 10); x[..., kv_index] = update with kv_index int32 [1, 2] and
 * update (arange(2) + 10).float().reshape(1, 1, 2): x[..., 1] = 10, x[..., 2] = 11, rest 1. */
static void test_seed_s3(void **state) {
    (void)state;
    int64_t sz[3] = {4, 4, 10};
    fx_tensor *x = kb_tensor(FX_DTYPE_F32, 3, sz, NULL, 0, 1);
    fx_tensor *kv = idx_tensor(FX_DTYPE_I32, 1, (int64_t[]){2}, (int64_t[]){1, 2});
    fx_tensor *up = kb_tensor(FX_DTYPE_F32, 3, (int64_t[]){1, 1, 2}, NULL, 1, 10);
    fx_ivalue xv = kb_iv(x), upv = kb_iv(up), l = idx_list(3, (fx_tensor *[]){NULL, NULL, kv});
    fx_tensor *r = kb_call(&g_eager, FX_OP_INDEX_PUT_, 3, &xv, &l, &upv);
    assert_ptr_equal(r, x);
    fx_tensor_release(r);
    for (int64_t i = 0; i < 4; i++)
        for (int64_t j = 0; j < 4; j++)
            for (int64_t k = 0; k < 10; k++) {
                double want = k == 1 ? 10 : k == 2 ? 11 : 1;
                assert_true(kb_at(x, (int64_t[]){i, j, k}) == want);
            }
    /* the functional form through a meta trace records index_put with the None entries */
    fx_ctx tr;
    kb_rec rec;
    kb_trace_ctx(&tr, &rec, false);
    fx_tensor *mx = kb_meta(FX_DTYPE_F32, 3, sz);
    fx_ivalue mxv = kb_iv(mx);
    r = kb_call(&tr, FX_OP_INDEX_PUT, 3, &mxv, &l, &upv);
    assert_string_equal(kb_rec_str(&rec), "index_put.default");
    assert_true(kb_sizes_are(r, 3, sz));
    assert_true(fx_tensor_is_meta(r));
    fx_tensor_release(r);
    fx_tensor_release(mx);
    fx_ivalue_clear(&l);
    fx_tensor_release(up);
    fx_tensor_release(kv);
    fx_tensor_release(x);
}

static void test_index_put_against_reference(void **state) {
    (void)state;
    srand(11);
    int64_t sz[3] = {3, 4, 5};
    static const fx_dtype dts[] = {FX_DTYPE_F32, FX_DTYPE_F64, FX_DTYPE_BF16, FX_DTYPE_I64,
                                   FX_DTYPE_I32, FX_DTYPE_U8};
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
        for (int mk = 0; mk < 3; mk++)
            for (int trial = 0; trial < 30; trial++) {
                fx_tensor *x = k_makers[mk](dts[di], 3, sz, 1, 0);
                if (dts[di] == FX_DTYPE_U8)
                    for (int64_t i = 0; i < 60; i++)
                        fx_tensor_set_f64(x, (int64_t[]){i / 20, (i / 5) % 4, i % 5}, (double)(i % 9));
                int n = 1 + rand() % 3;
                fx_tensor *ts[3] = {NULL, NULL, NULL};
                int64_t blen = 1 + rand() % 4;
                bool any = false;
                for (int k = 0; k < n; k++) {
                    if (rand() % 3 == 0 && (k < n - 1 || any)) continue;
                    int64_t v[8];
                    for (int64_t j = 0; j < blen; j++) v[j] = rand() % (2 * sz[k]) - sz[k];
                    ts[k] = idx_tensor(rand() % 2 ? FX_DTYPE_I64 : FX_DTYPE_I32, 1,
                                       (int64_t[]){blen}, v);
                    any = true;
                }
                fx_ivalue l = idx_list(n, ts);
                /* values: the full indexed shape, or a broadcastable suffix of it */
                ref_index *r = calloc(1, sizeof *r);
                ref_from_list(&l, r);
                int ond;
                int64_t osz[FX_MAX_DIMS];
                ref_plan(r, 3, sz, &ond, osz, g_src);
                free(r);
                int vnd = rand() % 2 ? ond : (ond > 0 ? ond - 1 : 0);
                int64_t vsz[FX_MAX_DIMS];
                for (int d = 0; d < vnd; d++)
                    vsz[d] = rand() % 3 == 0 ? 1 : osz[ond - vnd + d];
                fx_tensor *vals = kb_tensor(dts[di], vnd, vsz, NULL, 1, 100);
                if (dts[di] == FX_DTYPE_U8) {
                    int64_t vn = fx_tensor_numel(vals);
                    for (int64_t i = 0; i < vn; i++)
                        fx_dtype_store_f64(FX_DTYPE_U8, fx_tensor_data(vals), i, (double)(i % 5));
                }
                bool acc = rand() % 2;
                /* without accumulate, duplicate positions are ill-defined: only when unique */
                if (!acc) {
                    ref_index *r2 = calloc(1, sizeof *r2);
                    ref_from_list(&l, r2);
                    int total = ref_plan(r2, 3, sz, &ond, osz, g_src);
                    for (int a = 0; a < total && !acc; a++)
                        for (int b = a + 1; b < total && !acc; b++)
                            if (!memcmp(g_src[a], g_src[b], sizeof(int64_t) * 3)) acc = true;
                    free(r2);
                }
                if (dts[di] == FX_DTYPE_BF16 && acc) { /* keep sums exactly representable */
                    int64_t vn = fx_tensor_numel(vals);
                    for (int64_t i = 0; i < vn; i++)
                        fx_dtype_store_f64(FX_DTYPE_BF16, fx_tensor_data(vals), i, (double)(i % 4));
                }
                check_index_put(x, &l, vals, acc);
                fx_tensor_release(vals);
                fx_ivalue_clear(&l);
                for (int k = 0; k < 3; k++) fx_tensor_release(ts[k]);
                fx_tensor_release(x);
            }
}

static void test_index_put_specifics(void **state) {
    (void)state;
    /* accumulate adds duplicates: x[[0, 0, 2]] += [1, 2, 3] */
    fx_tensor *x = kb_tensor(FX_DTYPE_F32, 1, (int64_t[]){3}, NULL, 0, 0);
    fx_tensor *i = idx_tensor(FX_DTYPE_I64, 1, (int64_t[]){3}, (int64_t[]){0, 0, 2});
    fx_tensor *v = kb_tensor(FX_DTYPE_F32, 1, (int64_t[]){3}, NULL, 1, 1);
    fx_ivalue xv = kb_iv(x), vv = kb_iv(v), t = fx_iv_bool(true), l = idx_list(1, (fx_tensor *[]){i});
    fx_tensor *r = kb_call(&g_eager, FX_OP_INDEX_PUT_, 4, &xv, &l, &vv, &t);
    fx_tensor_release(r);
    assert_true(kb_at(x, (int64_t[]){0}) == 3);
    assert_true(kb_at(x, (int64_t[]){1}) == 0);
    assert_true(kb_at(x, (int64_t[]){2}) == 3);
    /* a wrapped number as values is cast to self's dtype */
    fx_ivalue seven = fx_iv_float(7.5);
    r = kb_call(&g_eager, FX_OP_INDEX_PUT, 3, &xv, &l, &seven);
    assert_true(kb_at(r, (int64_t[]){0}) == 7.5 && kb_at(r, (int64_t[]){2}) == 7.5);
    assert_true(kb_at(r, (int64_t[]){1}) == 0);
    fx_tensor_release(r);
    /* dtype mismatch */
    fx_tensor *vd = kb_tensor(FX_DTYPE_F64, 1, (int64_t[]){3}, NULL, 1, 1);
    fx_ivalue vdv = kb_iv(vd);
    assert_null(kb_call(&g_eager, FX_OP_INDEX_PUT_, 3, &xv, &l, &vdv));
    assert_int_equal(kb_err.code, FX_ETYPE);
    assert_string_equal(kb_err.msg, "Index put requires the source and destination dtypes match, "
                                    "got Float for the destination and Double for the source.");
    /* shape mismatch */
    fx_tensor *v2 = kb_tensor(FX_DTYPE_F32, 1, (int64_t[]){2}, NULL, 1, 1);
    fx_ivalue v2v = kb_iv(v2);
    assert_null(kb_call(&g_eager, FX_OP_INDEX_PUT_, 3, &xv, &l, &v2v));
    assert_string_equal(kb_err.msg, "shape mismatch: value tensor of shape [2] cannot be "
                                    "broadcast to indexing result of shape [3]");
    fx_ivalue_clear(&l);
    /* writing through a view reaches the base: y = zeros(2, 3); y[1][[0, 2]] = 5 */
    fx_tensor *y = kb_tensor(FX_DTYPE_I64, 2, (int64_t[]){2, 3}, NULL, 0, 0);
    fx_ivalue yv = kb_iv(y), one = fx_iv_int(1), zero = fx_iv_int(0), five = fx_iv_int(5);
    fx_tensor *row = kb_call(&g_eager, FX_OP_SELECT_INT, 3, &yv, &zero, &one);
    fx_tensor *j = idx_tensor(FX_DTYPE_I64, 1, (int64_t[]){2}, (int64_t[]){0, 2});
    fx_ivalue rv = kb_iv(row);
    l = idx_list(1, (fx_tensor *[]){j});
    uint64_t ver = fx_tensor_version(y);
    r = kb_call(&g_eager, FX_OP_INDEX_PUT_, 3, &rv, &l, &five);
    fx_tensor_release(r);
    assert_int_equal(fx_tensor_version(y), ver + 1);
    static const double want[] = {0, 0, 0, 5, 0, 5};
    for (int k = 0; k < 6; k++) assert_true(fx_tensor_flat_f64(y, k) == want[k]);
    fx_ivalue_clear(&l);
    /* values aliasing self: x[[2, 0]] = x[[0, 2]] swaps, reading before writing */
    fx_tensor *z = kb_tensor(FX_DTYPE_F32, 1, (int64_t[]){3}, NULL, 1, 1); /* 1 2 3 */
    fx_ivalue zv = kb_iv(z);
    fx_tensor *p = idx_tensor(FX_DTYPE_I64, 1, (int64_t[]){2}, (int64_t[]){2, 0});
    fx_ivalue d0 = fx_iv_int(0), n1 = fx_iv_none(), st2 = fx_iv_int(2);
    fx_tensor *ends = kb_call(&g_eager, FX_OP_SLICE_TENSOR, 5, &zv, &d0, &n1, &n1, &st2);
    fx_ivalue ev = kb_iv(ends);
    l = idx_list(1, (fx_tensor *[]){p});
    r = kb_call(&g_eager, FX_OP_INDEX_PUT_, 3, &zv, &l, &ev);
    fx_tensor_release(r);
    assert_true(fx_tensor_flat_f64(z, 0) == 3 && fx_tensor_flat_f64(z, 2) == 1);
    fx_ivalue_clear(&l);
    fx_tensor *ts[] = {x, i, v, vd, v2, y, row, j, z, p, ends};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) fx_tensor_release(ts[k]);
}

/* ---- select_scatter / slice_scatter ----------------------------------------------------------- */

static void test_scatter_views(void **state) {
    (void)state;
    int64_t sz[2] = {4, 3};
    for (int mk = 0; mk < 3; mk++) {
        fx_tensor *x = k_makers[mk](FX_DTYPE_F32, 2, sz, 1, 0);
        fx_ivalue xv = kb_iv(x);
        /* select_scatter(x, src, 1, -1): column 2 := src (given as float64: converted) */
        fx_tensor *src = kb_tensor(FX_DTYPE_F64, 1, (int64_t[]){4}, NULL, -1, -1);
        fx_ivalue sv = kb_iv(src), d1 = fx_iv_int(1), m1 = fx_iv_int(-1);
        fx_tensor *r = kb_call(&g_eager, FX_OP_SELECT_SCATTER, 4, &xv, &sv, &d1, &m1);
        assert_non_null(r);
        assert_false(fx_tensor_same_storage(r, x));
        for (int64_t i = 0; i < 4; i++)
            for (int64_t j = 0; j < 3; j++)
                assert_true(kb_at(r, (int64_t[]){i, j}) == (j == 2 ? -1.0 - i : (double)(i * 3 + j)));
        assert_true(kb_at(x, (int64_t[]){0, 2}) == 2); /* self untouched */
        fx_tensor_release(r);
        /* slice_scatter(x, src2, 0, 1, None, 2): rows 1 and 3 := src2 */
        fx_tensor *src2 = kb_tensor(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, NULL, 0, 9);
        fx_ivalue s2v = kb_iv(src2), d0 = fx_iv_int(0), one = fx_iv_int(1), none = fx_iv_none();
        fx_ivalue two = fx_iv_int(2);
        r = kb_call(&g_eager, FX_OP_SLICE_SCATTER, 6, &xv, &s2v, &d0, &one, &none, &two);
        assert_non_null(r);
        for (int64_t i = 0; i < 4; i++)
            for (int64_t j = 0; j < 3; j++)
                assert_true(kb_at(r, (int64_t[]){i, j}) == (i % 2 ? 9.0 : (double)(i * 3 + j)));
        fx_tensor_release(r);
        /* src of the wrong shape */
        assert_null(kb_call(&g_eager, FX_OP_SLICE_SCATTER, 6, &xv, &sv, &d0, &one, &none, &two));
        assert_string_equal(kb_err.msg, "expected src to have a size equal to the slice of self. "
                                        "src size = [4], slice size = [2, 3]");
        fx_tensor *s3 = kb_tensor(FX_DTYPE_F32, 1, (int64_t[]){2}, NULL, 1, 0);
        fx_ivalue s3v = kb_iv(s3);
        assert_null(kb_call(&g_eager, FX_OP_SELECT_SCATTER, 4, &xv, &s3v, &d0, &one));
        assert_string_equal(kb_err.msg, "expected src to have a size equal to the slice of self. "
                                        "src size = [2], slice size = [3]");
        fx_ivalue nine = fx_iv_int(9);
        assert_null(kb_call(&g_eager, FX_OP_SELECT_SCATTER, 4, &xv, &s3v, &d0, &nine));
        assert_string_equal(kb_err.msg,
                            "select(): index 9 out of range for tensor of size [4, 3] at dimension 0");
        fx_tensor_release(s3);
        fx_tensor_release(src2);
        fx_tensor_release(src);
        fx_tensor_release(x);
    }
    /* meta: the output is like self */
    fx_tensor *m = kb_meta(FX_DTYPE_F16, 2, (int64_t[]){4, 3});
    fx_tensor *ms = kb_meta(FX_DTYPE_F16, 1, (int64_t[]){3});
    fx_ivalue mv = kb_iv(m), msv = kb_iv(ms), d0 = fx_iv_int(0);
    fx_tensor *r = kb_call(&g_eager, FX_OP_SELECT_SCATTER, 4, &mv, &msv, &d0, &d0);
    assert_true(fx_tensor_is_meta(r));
    assert_true(kb_sizes_are(r, 2, (int64_t[]){4, 3}));
    fx_tensor_release(r);
    fx_tensor_release(ms);
    fx_tensor_release(m);
}

/* ---- allocation failures ------------------------------------------------------------------- */

static fx_tensor *g_self, *g_vals;
static fx_ivalue g_list;

static int run_index(void) {
    fx_ivalue sv = kb_iv(g_self);
    fx_tensor *r = kb_call(&g_eager, FX_OP_INDEX_TENSOR, 2, &sv, &g_list);
    if (!r) return kb_err.code;
    fx_tensor_release(r);
    return FX_OK;
}
static int run_index_put(void) {
    fx_ivalue sv = kb_iv(g_self), vv = kb_iv(g_vals), t = fx_iv_bool(true);
    fx_tensor *r = kb_call(&g_eager, FX_OP_INDEX_PUT, 4, &sv, &g_list, &vv, &t);
    if (!r) return kb_err.code;
    fx_tensor_release(r);
    return FX_OK;
}
static int run_slice_scatter(void) {
    fx_ivalue sv = kb_iv(g_self), vv = kb_iv(g_vals), d = fx_iv_int(1), st = fx_iv_int(2);
    fx_ivalue none = fx_iv_none();
    fx_tensor *r = kb_call(&g_eager, FX_OP_SLICE_SCATTER, 6, &sv, &vv, &d, &none, &none, &st);
    if (!r) return kb_err.code;
    fx_tensor_release(r);
    return FX_OK;
}

static void test_allocation_failures(void **state) {
    (void)state;
    g_self = kb_transposed(FX_DTYPE_F32, 2, (int64_t[]){4, 6}, 1, 0);
    fx_tensor *m = kb_tensor(FX_DTYPE_BOOL, 1, (int64_t[]){4}, (double[]){1, 0, 0, 1}, 0, 0);
    fx_tensor *i = idx_tensor(FX_DTYPE_I32, 1, (int64_t[]){2}, (int64_t[]){5, 0});
    g_list = idx_list(2, (fx_tensor *[]){m, i});
    assert_true(kb_oom_sweep(run_index) >= 3);
    g_vals = kb_tensor(FX_DTYPE_F32, 1, (int64_t[]){1}, NULL, 0, 2);
    assert_true(kb_oom_sweep(run_index_put) >= 3);
    fx_tensor_release(g_vals);
    g_vals = kb_tensor(FX_DTYPE_F32, 2, (int64_t[]){4, 3}, NULL, 1, 0);
    assert_true(kb_oom_sweep(run_slice_scatter) >= 2);
    fx_tensor_release(g_vals);
    fx_ivalue_clear(&g_list);
    fx_tensor_release(m);
    fx_tensor_release(i);
    fx_tensor_release(g_self);
}

/* 0-dim bool masks, as Python's x[True] / x[False]: a new dim of size 1 (True) or 0 (False) at
 * that position; index_put with one writes everything or nothing. On meta the size is unknown:
 * index is data-dependent, index_put still traces. */
static void test_zero_dim_masks(void **state) {
    (void)state;
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    fx_tensor *x = kb_tensor(FX_DTYPE_I32, 2, (int64_t[]){2, 3}, NULL, 1, 0), *yes = NULL, *no = NULL;
    fx_tensor_scalar(1, FX_DTYPE_BOOL, &yes, &kb_err);
    fx_tensor_scalar(0, FX_DTYPE_BOOL, &no, &kb_err);
    fx_tensor *cols = kb_tensor(FX_DTYPE_I64, 1, (int64_t[]){2}, (double[]){0, 2}, 0, 0);
    fx_ivalue xv = kb_iv(x), lt, lf, lmix;
    fx_iv_list(1, &lt, &kb_err);
    lt.u.list.items[0] = fx_iv_tensor(yes);
    fx_iv_list(1, &lf, &kb_err);
    lf.u.list.items[0] = fx_iv_tensor(no);
    fx_iv_list(3, &lmix, &kb_err); /* x[:, True, [0, 2]] */
    lmix.u.list.items[1] = fx_iv_tensor(yes);
    lmix.u.list.items[2] = fx_iv_tensor(cols);
    fx_tensor *r = kb_call(&eager, FX_OP_INDEX_TENSOR, 2, &xv, &lt);
    if (!r) fail_msg("x[True]: %s", kb_err.msg);
    assert_true(kb_sizes_are(r, 3, (int64_t[]){1, 2, 3}));
    for (int64_t i = 0; i < 6; i++) assert_true(fx_tensor_flat_f64(r, i) == (double)i);
    fx_tensor_release(r);
    r = kb_call(&eager, FX_OP_INDEX_TENSOR, 2, &xv, &lf);
    assert_true(kb_sizes_are(r, 3, (int64_t[]){0, 2, 3}));
    fx_tensor_release(r);
    r = kb_call(&eager, FX_OP_INDEX_TENSOR, 2, &xv, &lmix);
    assert_true(kb_sizes_are(r, 2, (int64_t[]){2, 2}));
    assert_true(fx_tensor_flat_f64(r, 1) == 2 && fx_tensor_flat_f64(r, 3) == 5);
    fx_tensor_release(r);
    /* index_put_: True writes every element, False none */
    fx_tensor *v = NULL;
    fx_tensor_scalar(9, FX_DTYPE_I32, &v, &kb_err);
    fx_ivalue vv = kb_iv(v);
    r = kb_call(&eager, FX_OP_INDEX_PUT, 3, &xv, &lt, &vv);
    for (int64_t i = 0; i < 6; i++) assert_true(fx_tensor_flat_f64(r, i) == 9);
    fx_tensor_release(r);
    r = kb_call(&eager, FX_OP_INDEX_PUT_, 3, &xv, &lf, &vv);
    assert_ptr_equal(r, x);
    for (int64_t i = 0; i < 6; i++) assert_true(fx_tensor_flat_f64(x, i) == (double)i);
    fx_tensor_release(r);
    /* meta: index is data-dependent, index_put traces with self's shape */
    fx_tensor *mx = kb_meta(FX_DTYPE_F32, 2, (int64_t[]){2, 3}), *mm = kb_meta(FX_DTYPE_BOOL, 0, NULL);
    fx_ivalue mxv = kb_iv(mx), lm, one = fx_iv_float(1);
    fx_iv_list(1, &lm, &kb_err);
    lm.u.list.items[0] = fx_iv_tensor(mm);
    assert_null(kb_call(&eager, FX_OP_INDEX_TENSOR, 2, &mxv, &lm));
    assert_int_equal(kb_err.code, FX_EDATADEP);
    r = kb_call(&eager, FX_OP_INDEX_PUT, 3, &mxv, &lm, &one);
    if (!r) fail_msg("meta index_put: %s", kb_err.msg);
    assert_true(fx_tensor_is_meta(r) && kb_sizes_are(r, 2, (int64_t[]){2, 3}));
    fx_tensor_release(r);
    fx_ivalue_clear(&lt);
    fx_ivalue_clear(&lf);
    fx_ivalue_clear(&lmix);
    fx_ivalue_clear(&lm);
    fx_tensor_release(mx);
    fx_tensor_release(mm);
    fx_tensor_release(v);
    fx_tensor_release(cols);
    fx_tensor_release(yes);
    fx_tensor_release(no);
    fx_tensor_release(x);
}

static int setup(void **state) {
    (void)state;
    fx_ctx_init(&g_eager, FX_MODE_EAGER);
    g_src = malloc(sizeof(*g_src) * REF_MAX);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free(g_src);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_fixed_cases),
        cmocka_unit_test(test_index_against_reference),
        cmocka_unit_test(test_index_errors),
        cmocka_unit_test(test_index_meta),
        cmocka_unit_test(test_seed_s3),
        cmocka_unit_test(test_index_put_against_reference),
        cmocka_unit_test(test_index_put_specifics),
        cmocka_unit_test(test_scatter_views),
        cmocka_unit_test(test_zero_dim_masks),
        cmocka_unit_test(test_allocation_failures),
    };
    return kb_run(tests, setup, teardown);
}
