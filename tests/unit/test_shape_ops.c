/* tests/unit/test_shape_ops.c — cat, stack, split / split_with_sizes / split.sizes / chunk /
 * unbind, narrow, flatten, unflatten, expand_as, repeat, diagonal and the scatter inverses
 * diagonal_scatter and as_strided_scatter.
 * Layer: tests (cmocka, links libfxdb.a). Views are checked by geometry (sizes, strides,
 * offset), by aliasing (same storage) and by values against a naive index computation; fresh
 * results against naive references over every dtype and contiguous / transposed / gapped /
 * expanded inputs; composites by the ATen ops a trace records; errors by PyTorch's text
 * (checked against torch where its message is the same in 2.x). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/shape.h"
#include "tests/unit/kb_util.h"

/* Small integers (exact in every dtype; 0/1 for bool) at row-major position i. */
/* Multi-index of row-major position i over sizes. */
static void unravel(int64_t i, int nd, const int64_t *sizes, int64_t *idx) {
    for (int d = nd - 1; d >= 0; d--) idx[d] = i % sizes[d], i /= sizes[d];
}

static void expect_error(fx_op_id op, const char *msg, int nargs, ...) {
    const fx_opdef *def = fx_op_get(op);
    fx_ivalue args[FX_SCHEMA_MAX_ARGS], outs[FX_SCHEMA_MAX_RETS];
    memset(args, 0, sizeof args);
    va_list ap;
    va_start(ap, nargs);
    for (int i = 0; i < nargs; i++) {
        const fx_ivalue *v = va_arg(ap, const fx_ivalue *);
        if (v) args[i] = *v;
    }
    va_end(ap);
    fx_err_clear(&kb_err);
    if (fx_dispatch(&g_eager, def, args, outs, &kb_err) == FX_OK) {
        for (int i = 0; i < def->schema.nrets; i++) fx_ivalue_clear(&outs[i]);
        fail_msg("%s: expected the error \"%s\"", fx_op_qualname(def), msg);
    }
    if (strcmp(kb_err.msg, msg)) fail_msg("%s:\n  got  \"%s\"\n  want \"%s\"", fx_op_qualname(def), kb_err.msg, msg);
}

/* Calls op and returns its (list) result ivalue (owned), failing the test on error. */
static fx_ivalue call_iv(fx_ctx *ctx, fx_op_id op, int nargs, ...) {
    const fx_opdef *def = fx_op_get(op);
    fx_ivalue args[FX_SCHEMA_MAX_ARGS], outs[FX_SCHEMA_MAX_RETS];
    memset(args, 0, sizeof args);
    va_list ap;
    va_start(ap, nargs);
    for (int i = 0; i < nargs; i++) {
        const fx_ivalue *v = va_arg(ap, const fx_ivalue *);
        if (v) args[i] = *v;
    }
    va_end(ap);
    fx_err_clear(&kb_err);
    if (fx_dispatch(ctx, def, args, outs, &kb_err)) fail_msg("%s: %s", fx_op_qualname(def), kb_err.msg);
    return outs[0];
}

/* A list ivalue of borrowed tensors (free with free_list: only the items array). */
static fx_ivalue tlist(int n, fx_tensor **ts) {
    fx_ivalue l;
    fx_iv_list(n, &l, &kb_err);
    for (int i = 0; i < n; i++) l.u.list.items[i] = fx_iv_tensor(ts[i]);
    return l;
}

/* ---- cat / stack ----------------------------------------------------------------------------- */

static void test_cat(void **state) {
    (void)state;
    int count = 0;
    for (int di = 0; di < NDT; di++)
        for (int l0 = 0; l0 < L_COUNT; l0++)
            for (int d = -3; d < 3; d++) {
                fx_dtype dt = k_dtypes[di];
                int dd = d < 0 ? d + 3 : d;
                int64_t s0[3] = {2, 3, 4}, s1[3] = {2, 3, 4}, s2[3] = {2, 3, 4};
                s0[dd] = 3, s1[dd] = 1, s2[dd] = 2;
                fx_tensor *ts[3] = {make(dt, 3, s0, l0, 1), make(dt, 3, s1, (l0 + 1) % L_COUNT, 2),
                                    make(dt, 3, s2, (l0 + 2) % L_COUNT, 3)};
                fx_ivalue l = tlist(3, ts), dv = fx_iv_int(d);
                fx_tensor *r = kb_call(&g_eager, FX_OP_CAT, 2, &l, &dv);
                if (!r) fail_msg("cat: %s", kb_err.msg);
                int64_t want[3] = {2, 3, 4};
                want[dd] = 6;
                assert_true(kb_sizes_are(r, 3, want));
                assert_true(fx_tensor_is_contiguous(r));
                assert_int_equal(fx_tensor_dtype(r), dt);
                int64_t idx[3], sub[3];
                for (int64_t i = 0; i < 72; i++) {
                    unravel(i, 3, want, idx);
                    memcpy(sub, idx, sizeof sub);
                    int which = idx[dd] < 3 ? 0 : idx[dd] < 4 ? 1 : 2;
                    sub[dd] -= which == 0 ? 0 : which == 1 ? 3 : 4;
                    if (fx_tensor_flat_f64(r, i) != fx_tensor_get_f64(ts[which], sub))
                        fail_msg("cat element %lld", (long long)i);
                }
                fx_ivalue_clear(&l);
                fx_tensor_release(r);
                for (int k = 0; k < 3; k++) fx_tensor_release(ts[k]);
                count++;
            }
    assert_int_equal(count, NDT * L_COUNT * 6);
    /* mixed dtypes promote (result_type), legacy empty [0] tensors are skipped */
    fx_tensor *a = make(FX_DTYPE_I32, 2, (int64_t[]){2, 2}, L_CONTIG, 0);
    fx_tensor *b = make(FX_DTYPE_F16, 2, (int64_t[]){1, 2}, L_CONTIG, 1);
    fx_tensor *e = make(FX_DTYPE_F64, 1, (int64_t[]){0}, L_CONTIG, 0);
    fx_tensor *ts[3] = {a, e, b};
    fx_ivalue l = tlist(3, ts);
    fx_tensor *r = kb_call(&g_eager, FX_OP_CAT, 1, &l);
    if (!r) fail_msg("cat: %s", kb_err.msg);
    assert_int_equal(fx_tensor_dtype(r), FX_DTYPE_F64);
    assert_true(kb_sizes_are(r, 2, (int64_t[]){3, 2}));
    assert_true(fx_tensor_flat_f64(r, 4) == fx_tensor_flat_f64(b, 0));
    fx_tensor_release(r);
    fx_ivalue_clear(&l);
    /* errors */
    fx_tensor *s = NULL, *c3 = make(FX_DTYPE_F32, 3, (int64_t[]){2, 2, 1}, L_CONTIG, 0);
    fx_tensor *c23 = make(FX_DTYPE_F32, 2, (int64_t[]){3, 3}, L_CONTIG, 0);
    fx_tensor_scalar(1, FX_DTYPE_F32, &s, &kb_err);
    fx_tensor *t1[2] = {a, s}, *t2[2] = {a, c3}, *t3[2] = {a, c23};
    fx_ivalue empty, l1 = tlist(2, t1), l2 = tlist(2, t2), l3 = tlist(2, t3), d1 = fx_iv_int(1), d5 = fx_iv_int(5);
    fx_iv_list(0, &empty, &kb_err);
    expect_error(FX_OP_CAT, "torch.cat(): expected a non-empty list of Tensors", 1, &empty);
    expect_error(FX_OP_CAT, "zero-dimensional tensor (at position 1) cannot be concatenated", 1, &l1);
    expect_error(FX_OP_CAT, "Tensors must have same number of dimensions: got 2 and 3", 1, &l2);
    expect_error(FX_OP_CAT, "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the list.", 2, &l3, &d1);
    expect_error(FX_OP_CAT, "Dimension out of range (expected to be in range of [-2, 1], but got 5)", 2, &l3, &d5);
    fx_ivalue_clear(&l1);
    fx_ivalue_clear(&l2);
    fx_ivalue_clear(&l3);
    fx_ivalue_clear(&empty);
    fx_tensor_release(s);
    fx_tensor_release(c3);
    fx_tensor_release(c23);
    fx_tensor_release(a);
    fx_tensor_release(b);
    fx_tensor_release(e);
}

static void test_stack(void **state) {
    (void)state;
    for (int d = -3; d < 3; d++) {
        fx_tensor *ts[3];
        for (int k = 0; k < 3; k++) ts[k] = make(FX_DTYPE_I64, 2, (int64_t[]){2, 3}, k, k);
        fx_ivalue l = tlist(3, ts), dv = fx_iv_int(d);
        fx_ctx tr;
        kb_rec rec;
        kb_trace_ctx(&tr, &rec, true);
        fx_tensor *r = kb_call(&tr, FX_OP_STACK, 2, &l, &dv);
        if (!r) fail_msg("stack: %s", kb_err.msg);
        assert_string_equal(kb_rec_str(&rec), "unsqueeze.default,unsqueeze.default,unsqueeze.default,cat.default");
        int dd = d < 0 ? d + 3 : d;
        int64_t want[3] = {2, 3, 3};
        want[dd] = 3;
        for (int e = 0, k = 0; e < 3; e++)
            if (e != dd) want[e] = (int64_t[]){2, 3}[k++];
        assert_true(kb_sizes_are(r, 3, want));
        int64_t idx[3], sub[2];
        for (int64_t i = 0; i < 18; i++) {
            unravel(i, 3, want, idx);
            for (int e = 0, k = 0; e < 3; e++)
                if (e != dd) sub[k++] = idx[e];
            assert_true(fx_tensor_flat_f64(r, i) == fx_tensor_get_f64(ts[idx[dd]], sub));
        }
        fx_tensor_release(r);
        fx_ivalue_clear(&l);
        for (int k = 0; k < 3; k++) fx_tensor_release(ts[k]);
    }
    fx_tensor *a = make(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, L_CONTIG, 0);
    fx_tensor *b = make(FX_DTYPE_F32, 2, (int64_t[]){3, 2}, L_CONTIG, 0);
    fx_tensor *ts[2] = {a, b};
    fx_ivalue l = tlist(2, ts), empty;
    fx_iv_list(0, &empty, &kb_err);
    expect_error(FX_OP_STACK, "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] at entry 1", 1, &l);
    expect_error(FX_OP_STACK, "stack expects a non-empty TensorList", 1, &empty);
    fx_ivalue_clear(&l);
    fx_ivalue_clear(&empty);
    fx_tensor_release(a);
    fx_tensor_release(b);
}

/* ---- split family ---------------------------------------------------------------------------- */

/* Each item of list `l` must be a view of t (same storage) equal to t.narrow(d, starts[i],
 * lens[i]) in geometry. */
static void expect_pieces(const fx_ivalue *l, const fx_tensor *t, int d, int n, const int64_t *lens) {
    if (l->tag != FX_IV_LIST || l->u.list.n != n) fail_msg("expected a list of %d views", n);
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        const fx_tensor *p = l->u.list.items[i].u.t;
        assert_true(fx_tensor_same_storage(p, t));
        int64_t want[FX_MAX_DIMS];
        memcpy(want, fx_tensor_sizes(t), sizeof(int64_t) * (size_t)fx_tensor_ndim(t));
        want[d] = lens[i];
        assert_true(kb_sizes_are(p, fx_tensor_ndim(t), want));
        assert_true(kb_strides_are(p, fx_tensor_ndim(t), fx_tensor_strides(t)));
        assert_int_equal(fx_tensor_offset(p), fx_tensor_offset(t) + start * fx_tensor_stride(t, d));
        start += lens[i];
    }
}

static void test_split_family(void **state) {
    (void)state;
    for (int layout = 0; layout < L_COUNT; layout++) {
        fx_tensor *t = make(FX_DTYPE_F32, 3, (int64_t[]){5, 7, 3}, layout, 1);
        fx_ivalue tv = kb_iv(t), three = fx_iv_int(3), d1 = fx_iv_int(1), dm = fx_iv_int(-2), ten = fx_iv_int(10);
        fx_ivalue l = call_iv(&g_eager, FX_OP_SPLIT_TENSOR, 3, &tv, &three, &d1);
        expect_pieces(&l, t, 1, 3, (int64_t[]){3, 3, 1});
        fx_ivalue_clear(&l);
        l = call_iv(&g_eager, FX_OP_SPLIT_TENSOR, 2, &tv, &ten); /* one piece when too big */
        expect_pieces(&l, t, 0, 1, (int64_t[]){5});
        fx_ivalue_clear(&l);
        fx_ivalue sz = kb_ints(3, 2, 0, 5);
        l = call_iv(&g_eager, FX_OP_SPLIT_WITH_SIZES, 3, &tv, &sz, &dm);
        expect_pieces(&l, t, 1, 3, (int64_t[]){2, 0, 5});
        fx_ivalue_clear(&l);
        l = call_iv(&g_eager, FX_OP_SPLIT_SIZES, 3, &tv, &sz, &dm);
        expect_pieces(&l, t, 1, 3, (int64_t[]){2, 0, 5});
        fx_ivalue_clear(&l);
        fx_ivalue_clear(&sz);
        /* chunk: ceil(7 / 3) = 3 -> 3, 3, 1; chunk(5, 4) -> 2, 2, 1 (only three pieces) */
        l = call_iv(&g_eager, FX_OP_CHUNK, 3, &tv, &three, &d1);
        expect_pieces(&l, t, 1, 3, (int64_t[]){3, 3, 1});
        fx_ivalue_clear(&l);
        fx_ivalue four = fx_iv_int(4);
        l = call_iv(&g_eager, FX_OP_CHUNK, 2, &tv, &four);
        expect_pieces(&l, t, 0, 3, (int64_t[]){2, 2, 1});
        fx_ivalue_clear(&l);
        /* unbind: selects */
        l = call_iv(&g_eager, FX_OP_UNBIND_INT, 2, &tv, &dm);
        assert_int_equal(l.u.list.n, 7);
        for (int i = 0; i < 7; i++) {
            const fx_tensor *p = l.u.list.items[i].u.t;
            assert_true(kb_sizes_are(p, 2, (int64_t[]){5, 3}));
            assert_int_equal(fx_tensor_offset(p), fx_tensor_offset(t) + i * fx_tensor_stride(t, 1));
            int64_t idx[2] = {4, 2}, full[3] = {4, i, 2};
            assert_true(fx_tensor_get_f64(p, idx) == fx_tensor_get_f64(t, full));
        }
        fx_ivalue_clear(&l);
        fx_tensor_release(t);
    }
    /* what the composites record, and on meta tensors */
    fx_tensor *m = kb_meta(FX_DTYPE_F16, 2, (int64_t[]){0, 4});
    fx_ivalue mv = kb_iv(m), two = fx_iv_int(2), d0 = fx_iv_int(0), sz = kb_ints(2, 1, 3), d1 = fx_iv_int(1);
    fx_ctx tr;
    kb_rec rec;
    kb_trace_ctx(&tr, &rec, false);
    fx_ivalue l = call_iv(&tr, FX_OP_CHUNK, 3, &mv, &two, &d0); /* empty dim: split_with_sizes */
    assert_string_equal(kb_rec_str(&rec), "split_with_sizes.default");
    assert_int_equal(l.u.list.n, 2);
    fx_ivalue_clear(&l);
    kb_trace_ctx(&tr, &rec, false);
    l = call_iv(&tr, FX_OP_CHUNK, 3, &mv, &two, &d1);
    assert_string_equal(kb_rec_str(&rec), "split.Tensor");
    assert_true(fx_tensor_is_meta(l.u.list.items[1].u.t));
    fx_ivalue_clear(&l);
    kb_trace_ctx(&tr, &rec, false);
    l = call_iv(&tr, FX_OP_SPLIT_SIZES, 3, &mv, &sz, &d1);
    assert_string_equal(kb_rec_str(&rec), "split_with_sizes.default");
    fx_ivalue_clear(&l);
    fx_ivalue_clear(&sz);
    fx_tensor_release(m);
    /* the view flag comes from Tensor(a -> *) */
    assert_true(fx_op_is_view(fx_op_get(FX_OP_SPLIT_TENSOR)));
    assert_true(fx_op_is_view(fx_op_get(FX_OP_UNBIND_INT)));
    assert_true(fx_op_is_view(fx_op_get(FX_OP_SPLIT_WITH_SIZES)));
    /* errors */
    fx_tensor *t = make(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, L_CONTIG, 0), *s = NULL;
    fx_tensor_scalar(1, FX_DTYPE_F32, &s, &kb_err);
    fx_ivalue tv = kb_iv(t), sv = kb_iv(s), one = fx_iv_int(1), neg = fx_iv_int(-1), zero = fx_iv_int(0),
              dm1 = fx_iv_int(-1), s11 = kb_ints(2, 1, 1), s4n = kb_ints(2, 4, -1);
    expect_error(FX_OP_SPLIT_TENSOR, "split expects at least a 1-dimensional tensor", 2, &sv, &one);
    expect_error(FX_OP_SPLIT_TENSOR, "split expects split_size be non-negative, but got split_size=-1", 2, &tv, &neg);
    expect_error(FX_OP_SPLIT_TENSOR, "split_size can only be 0 if dimension size is 0, but got dimension size of 2", 2, &tv, &zero);
    expect_error(FX_OP_SPLIT_WITH_SIZES, "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at dimension -1), but got split_sizes=[1, 1]", 3, &tv, &s11, &dm1);
    expect_error(FX_OP_SPLIT_WITH_SIZES, "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[4, -1]", 3, &tv, &s4n, &one);
    expect_error(FX_OP_CHUNK, "chunk expects `chunks` to be greater than 0, got: 0", 2, &tv, &zero);
    expect_error(FX_OP_CHUNK, "chunk expects at least a 1-dimensional tensor", 2, &sv, &one);
    expect_error(FX_OP_UNBIND_INT, "Dimension specified as 0 but tensor has no dimensions", 1, &sv);
    fx_ivalue_clear(&s11);
    fx_ivalue_clear(&s4n);
    fx_tensor_release(t);
    fx_tensor_release(s);
}

/* ---- narrow / flatten / unflatten / expand_as ------------------------------------------------ */

static void test_narrow_flatten_unflatten(void **state) {
    (void)state;
    fx_tensor *t = make(FX_DTYPE_I32, 3, (int64_t[]){4, 5, 6}, L_GAPPED, 0);
    fx_ivalue tv = kb_iv(t), d1 = fx_iv_int(1), dm = fx_iv_int(-1), st = fx_iv_int(-3), len = fx_iv_int(2);
    fx_ctx tr;
    kb_rec rec;
    kb_trace_ctx(&tr, &rec, true);
    fx_tensor *r = kb_call(&tr, FX_OP_NARROW, 4, &tv, &d1, &st, &len);
    assert_string_equal(kb_rec_str(&rec), "slice.Tensor");
    assert_true(kb_sizes_are(r, 3, (int64_t[]){4, 2, 6}));
    assert_int_equal(fx_tensor_offset(r), fx_tensor_offset(t) + 2 * fx_tensor_stride(t, 1));
    assert_true(fx_tensor_same_storage(r, t));
    fx_tensor_release(r);
    /* flatten: a gapped tensor's dims 1..2 merge into a view; a transposed one's cannot, so
     * reshape copies (clone + _unsafe_view) */
    fx_ivalue s0 = fx_iv_int(0), s1 = fx_iv_int(1);
    fx_tensor *tt = make(FX_DTYPE_I32, 3, (int64_t[]){4, 5, 6}, L_TRANS, 0);
    fx_ivalue ttv = kb_iv(tt);
    for (int k = 0; k < 2; k++) {
        kb_trace_ctx(&tr, &rec, true);
        r = kb_call(&tr, FX_OP_FLATTEN_USING_INTS, 3, k ? &ttv : &tv, &s1, &dm);
        assert_string_equal(kb_rec_str(&rec), k ? "clone.default,_unsafe_view.default" : "view.default");
        assert_true(kb_sizes_are(r, 2, (int64_t[]){4, 30}));
        assert_int_equal(fx_tensor_same_storage(r, k ? tt : t), !k);
        for (int64_t i = 0; i < 120; i++) {
            int64_t idx[3];
            unravel(i, 3, (int64_t[]){4, 5, 6}, idx);
            assert_true(fx_tensor_flat_f64(r, i) == fx_tensor_get_f64(k ? tt : t, idx));
        }
        fx_tensor_release(r);
    }
    fx_tensor_release(tt);
    kb_trace_ctx(&tr, &rec, true); /* start == end: self, nothing recorded */
    r = kb_call(&tr, FX_OP_FLATTEN_USING_INTS, 3, &tv, &d1, &d1);
    assert_string_equal(kb_rec_str(&rec), "");
    assert_ptr_equal(r, t);
    fx_tensor_release(r);
    fx_tensor *c = make(FX_DTYPE_F32, 3, (int64_t[]){2, 3, 4}, L_CONTIG, 0);
    fx_ivalue cv = kb_iv(c), sz = kb_ints(2, 2, -1);
    kb_trace_ctx(&tr, &rec, false);
    r = kb_call(&tr, FX_OP_FLATTEN_USING_INTS, 1, &cv);
    assert_string_equal(kb_rec_str(&rec), "view.default");
    assert_true(kb_sizes_are(r, 1, (int64_t[]){24}));
    fx_tensor_release(r);
    kb_trace_ctx(&tr, &rec, true);
    r = kb_call(&tr, FX_OP_UNFLATTEN_INT, 3, &cv, &dm, &sz);
    assert_string_equal(kb_rec_str(&rec), "view.default");
    assert_true(kb_sizes_are(r, 4, (int64_t[]){2, 3, 2, 2}));
    assert_true(fx_tensor_same_storage(r, c));
    fx_tensor_release(r);
    /* a 0-dim tensor flattens to [1] */
    fx_tensor *s = NULL;
    fx_tensor_scalar(3, FX_DTYPE_F32, &s, &kb_err);
    fx_ivalue sv = kb_iv(s);
    r = kb_call(&g_eager, FX_OP_FLATTEN_USING_INTS, 1, &sv);
    assert_true(kb_sizes_are(r, 1, (int64_t[]){1}));
    fx_tensor_release(r);
    /* expand_as records expand */
    fx_tensor *o = make(FX_DTYPE_F32, 3, (int64_t[]){5, 3, 4}, L_CONTIG, 0);
    fx_tensor *row = make(FX_DTYPE_F32, 2, (int64_t[]){1, 4}, L_CONTIG, 0);
    fx_ivalue ov = kb_iv(o), rv = kb_iv(row);
    kb_trace_ctx(&tr, &rec, true);
    r = kb_call(&tr, FX_OP_EXPAND_AS, 2, &rv, &ov);
    assert_string_equal(kb_rec_str(&rec), "expand.default");
    assert_true(kb_strides_are(r, 3, (int64_t[]){0, 0, 1}));
    fx_tensor_release(r);
    /* errors */
    fx_ivalue four = fx_iv_int(4), two = fx_iv_int(2), big = fx_iv_int(7), negl = fx_iv_int(-1),
              e22 = kb_ints(2, 2, 2), enn = kb_ints(2, -1, -1), empty;
    fx_iv_int_list(0, NULL, &empty, &kb_err);
    expect_error(FX_OP_NARROW, "narrow() cannot be applied to a 0-dim tensor.", 4, &sv, &s0, &s0, &s1);
    expect_error(FX_OP_NARROW, "start out of range (expected to be in range of [-5, 5], but got 7)", 4, &tv, &d1, &big, &s1);
    expect_error(FX_OP_NARROW, "start (4) + length (2) exceeds dimension size (5).", 4, &tv, &d1, &four, &two);
    expect_error(FX_OP_NARROW, "narrow(): length must be non-negative.", 4, &tv, &d1, &s0, &negl);
    expect_error(FX_OP_FLATTEN_USING_INTS, "flatten() has invalid args: start_dim cannot come after end_dim", 3, &tv, &s1, &s0);
    expect_error(FX_OP_UNFLATTEN_INT, "unflatten: sizes must be non-empty", 3, &cv, &s1, &empty);
    expect_error(FX_OP_UNFLATTEN_INT, "unflatten: Provided sizes [2, 2] don't multiply up to the size of dim 1 (3) in the input tensor", 3, &cv, &s1, &e22);
    expect_error(FX_OP_UNFLATTEN_INT, "unflatten got an unexpected error:\nonly one dimension can be inferred", 3, &cv, &s1, &enn);
    fx_tensor *o53 = make(FX_DTYPE_F32, 2, (int64_t[]){5, 3}, L_CONTIG, 0);
    fx_ivalue o53v = kb_iv(o53);
    expect_error(FX_OP_EXPAND_AS, "The expanded size of the tensor (3) must match the existing size (4) at non-singleton dimension 1.  Target sizes: [5, 3].  Tensor sizes: [1, 4]", 2, &rv, &o53v);
    fx_tensor_release(o53);
    fx_ivalue_clear(&e22);
    fx_ivalue_clear(&enn);
    fx_ivalue_clear(&empty);
    fx_ivalue_clear(&sz);
    fx_tensor_release(s);
    fx_tensor_release(o);
    fx_tensor_release(row);
    fx_tensor_release(c);
    fx_tensor_release(t);
}

/* ---- repeat ---------------------------------------------------------------------------------- */

static void test_repeat(void **state) {
    (void)state;
    static const struct { int nd; int64_t s[3]; int nr; int64_t r[5]; } cases[] = {
        {2, {2, 3}, 2, {2, 2}},       {2, {2, 3}, 3, {2, 1, 3}},       {1, {4}, 3, {1, 2, 3}},
        {3, {2, 1, 3}, 3, {1, 4, 1}}, {2, {2, 3}, 5, {2, 1, 2, 2, 2}}, {2, {2, 3}, 2, {0, 2}},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int di = 0; di < NDT; di++)
            for (int layout = 0; layout < L_COUNT; layout++) {
                fx_dtype dt = k_dtypes[di];
                fx_tensor *t = make(dt, cases[ci].nd, cases[ci].s, layout, 2);
                fx_ivalue tv = kb_iv(t), rep;
                fx_iv_int_list(cases[ci].nr, cases[ci].r, &rep, &kb_err);
                fx_tensor *r = kb_call(&g_eager, FX_OP_REPEAT, 2, &tv, &rep);
                if (!r) fail_msg("repeat: %s", kb_err.msg);
                int nr = cases[ci].nr, pad = nr - cases[ci].nd;
                int64_t want[FX_MAX_DIMS];
                for (int d = 0; d < nr; d++) want[d] = (d < pad ? 1 : cases[ci].s[d - pad]) * cases[ci].r[d];
                assert_true(kb_sizes_are(r, nr, want));
                assert_true(fx_tensor_is_contiguous(r));
                int64_t n = fx_tensor_numel(r), idx[FX_MAX_DIMS], src[FX_MAX_DIMS];
                for (int64_t i = 0; i < n; i++) {
                    unravel(i, nr, want, idx);
                    for (int d = pad; d < nr; d++) src[d - pad] = idx[d] % cases[ci].s[d - pad];
                    if (fx_tensor_flat_f64(r, i) != fx_tensor_get_f64(t, src)) fail_msg("repeat case %zu element %lld", ci, (long long)i);
                }
                fx_ivalue_clear(&rep);
                fx_tensor_release(r);
                fx_tensor_release(t);
            }
    fx_tensor *t = make(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, L_CONTIG, 0);
    fx_ivalue tv = kb_iv(t), r1 = kb_ints(1, 2), rn = kb_ints(2, 2, -2);
    expect_error(FX_OP_REPEAT, "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor", 2, &tv, &r1);
    expect_error(FX_OP_REPEAT, "Trying to create tensor with negative dimension -6: [4, -6]", 2, &tv, &rn);
    fx_ivalue_clear(&r1);
    fx_ivalue_clear(&rn);
    fx_tensor_release(t);
}

/* ---- unfold and unfold_backward ---------------------------------------------------------------- */

/* unfold over every dtype and layout: a view whose element (..., w, ..., j) is self's element at
 * w * step + j along dim; unfold_backward of a contiguous grad of that shape against a naive sum
 * (bool: or) over the windows that reach each place. */
static void test_unfold(void **state) {
    (void)state;
    static const struct { int64_t dim, size, step; } cases[] = {{1, 2, 2}, {1, 3, 1}, {0, 1, 2},
                                                             {-1, 2, 5}, {1, 0, 3}, {0, 3, 3}};
    int64_t sizes[2] = {3, 7};
    for (int di = 0; di < NDT; di++)
        for (int layout = 0; layout < L_COUNT; layout++)
            for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
                fx_dtype dt = k_dtypes[di];
                int d = (int)(cases[ci].dim < 0 ? cases[ci].dim + 2 : cases[ci].dim);
                int64_t size = cases[ci].size, step = cases[ci].step;
                fx_tensor *t = make(dt, 2, sizes, layout, 1);
                fx_ivalue tv = kb_iv(t), dv = fx_iv_int(cases[ci].dim), zv = fx_iv_int(size), sv = fx_iv_int(step);
                fx_tensor *r = kb_call(&g_eager, FX_OP_UNFOLD, 4, &tv, &dv, &zv, &sv);
                if (!r) fail_msg("unfold: %s", kb_err.msg);
                assert_true(fx_tensor_same_storage(r, t));
                int64_t rs[3] = {sizes[0], sizes[1], size};
                rs[d] = (sizes[d] - size) / step + 1;
                assert_true(kb_sizes_are(r, 3, rs));
                int64_t n = rs[0] * rs[1] * rs[2];
                for (int64_t e = 0; e < n; e++) {
                    int64_t ri[3], ti[2];
                    unravel(e, 3, rs, ri);
                    ti[0] = ri[0], ti[1] = ri[1];
                    ti[d] = ri[d] * step + ri[2];
                    assert_true(fx_tensor_get_f64(r, ri) == fx_tensor_get_f64(t, ti));
                }
                fx_tensor *g = make(dt, 3, rs, L_CONTIG, 3);
                fx_ivalue gv = kb_iv(g), lv;
                assert_int_equal(fx_iv_int_list(2, sizes, &lv, &kb_err), FX_OK);
                fx_tensor *b = kb_call(&g_eager, FX_OP_UNFOLD_BACKWARD, 5, &gv, &lv, &dv, &zv, &sv);
                if (!b) fail_msg("unfold_backward: %s", kb_err.msg);
                assert_true(kb_sizes_are(b, 2, sizes));
                double want[3][7] = {{0}};
                for (int64_t e = 0; e < n; e++) {
                    int64_t ri[3], ti[2];
                    unravel(e, 3, rs, ri);
                    ti[0] = ri[0], ti[1] = ri[1];
                    ti[d] = ri[d] * step + ri[2];
                    want[ti[0]][ti[1]] += fx_tensor_get_f64(g, ri);
                }
                for (int64_t i = 0; i < 3; i++)
                    for (int64_t j = 0; j < 7; j++) {
                        double w = dt == FX_DTYPE_BOOL ? (want[i][j] != 0) : want[i][j];
                        assert_true(fx_tensor_get_f64(b, (int64_t[]){i, j}) == w);
                    }
                fx_ivalue_clear(&lv);
                fx_tensor_release(b);
                fx_tensor_release(g);
                fx_tensor_release(r);
                fx_tensor_release(t);
            }
    fx_tensor *t = make(FX_DTYPE_F32, 1, (int64_t[]){6}, L_CONTIG, 0);
    fx_ivalue tv = kb_iv(t), z = fx_iv_int(0), two = fx_iv_int(2), seven = fx_iv_int(7), m1 = fx_iv_int(-1);
    expect_error(FX_OP_UNFOLD, "maximum size for tensor at dimension 0 is 6 but size is 7", 4, &tv, &z, &seven, &two);
    expect_error(FX_OP_UNFOLD, "size is -1 but must be >= 0", 4, &tv, &z, &m1, &two);
    expect_error(FX_OP_UNFOLD, "step is 0 but must be > 0", 4, &tv, &z, &two, &z);
    expect_error(FX_OP_UNFOLD, "Dimension out of range (expected to be in range of [-1, 0], but got 2)", 4, &tv, &two, &two, &two);
    assert_int_equal(fx_op_get(FX_OP_UNFOLD)->scatter, FX_OP_UNFOLD_BACKWARD);
    fx_tensor_release(t);
}

/* ---- diagonal and the scatter inverses ------------------------------------------------------- */

static void test_diagonal(void **state) {
    (void)state;
    static const struct { int64_t off, d1, d2; } cases[] = {{0, 0, 1}, {1, 0, 1}, {-2, 0, 1}, {2, 2, 0},
                                                             {-1, -1, 1}, {9, 0, 1}, {0, 1, 2}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int layout = 0; layout < 3; layout++) {
            int64_t sizes[3] = {3, 4, 5};
            fx_tensor *t = make(FX_DTYPE_F64, 3, sizes, layout, 1);
            fx_ivalue tv = kb_iv(t), o = fx_iv_int(cases[ci].off), a = fx_iv_int(cases[ci].d1), b = fx_iv_int(cases[ci].d2);
            fx_tensor *r = kb_call(&g_eager, FX_OP_DIAGONAL, 4, &tv, &o, &a, &b);
            if (!r) fail_msg("diagonal: %s", kb_err.msg);
            assert_true(fx_tensor_same_storage(r, t));
            int d1 = (int)(cases[ci].d1 < 0 ? cases[ci].d1 + 3 : cases[ci].d1);
            int d2 = (int)(cases[ci].d2 < 0 ? cases[ci].d2 + 3 : cases[ci].d2);
            int other = 3 - d1 - d2;
            int64_t off = cases[ci].off;
            int64_t diag = off >= 0 ? fmin(sizes[d1], sizes[d2] - off) : fmin(sizes[d1] + off, sizes[d2]);
            if (diag < 0) diag = 0;
            assert_true(kb_sizes_are(r, 2, (int64_t[]){sizes[other], diag}));
            for (int64_t i = 0; i < sizes[other]; i++)
                for (int64_t k = 0; k < diag; k++) {
                    int64_t idx[3], ri[2] = {i, k};
                    idx[other] = i;
                    idx[d1] = off >= 0 ? k : k - off;
                    idx[d2] = off >= 0 ? k + off : k;
                    assert_true(fx_tensor_get_f64(r, ri) == fx_tensor_get_f64(t, idx));
                }
            /* diagonal_scatter writes src into exactly that view of a copy */
            fx_tensor *src = make(FX_DTYPE_F64, 2, (int64_t[]){sizes[other], diag}, L_TRANS, 7);
            fx_ivalue srcv = kb_iv(src);
            fx_tensor *s = kb_call(&g_eager, FX_OP_DIAGONAL_SCATTER, 5, &tv, &srcv, &o, &a, &b);
            if (!s) fail_msg("diagonal_scatter: %s", kb_err.msg);
            fx_ivalue sv = kb_iv(s);
            fx_tensor *back = kb_call(&g_eager, FX_OP_DIAGONAL, 4, &sv, &o, &a, &b);
            for (int64_t e = 0; e < fx_tensor_numel(src); e++)
                assert_true(fx_tensor_flat_f64(back, e) == fx_tensor_flat_f64(src, e));
            int64_t changed = 0;
            for (int64_t e = 0; e < 60; e++) changed += fx_tensor_flat_f64(s, e) != fx_tensor_flat_f64(t, e);
            assert_true(changed <= fx_tensor_numel(src));
            fx_tensor_release(back);
            fx_tensor_release(s);
            fx_tensor_release(src);
            fx_tensor_release(r);
            fx_tensor_release(t);
        }
    fx_tensor *t = make(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, L_CONTIG, 0), *v = make(FX_DTYPE_F32, 1, (int64_t[]){3}, L_CONTIG, 0);
    fx_ivalue tv = kb_iv(t), vv = kb_iv(v), z = fx_iv_int(0), one = fx_iv_int(1), m1 = fx_iv_int(-1), five = fx_iv_int(5);
    expect_error(FX_OP_DIAGONAL, "diagonal dimensions cannot be identical 1, -1", 4, &tv, &z, &one, &m1);
    expect_error(FX_OP_DIAGONAL, "Dimension out of range (expected to be in range of [-2, 1], but got 5)", 4, &tv, &z, &five, &one);
    expect_error(FX_OP_DIAGONAL_SCATTER, "expected src to have a size equal to the slice of self. src size = [3], slice size = [2]", 2, &tv, &vv);
    assert_int_equal(fx_op_get(FX_OP_DIAGONAL)->scatter, FX_OP_DIAGONAL_SCATTER);
    assert_int_equal(fx_op_get(FX_OP_AS_STRIDED)->scatter, FX_OP_AS_STRIDED_SCATTER);
    fx_tensor_release(t);
    fx_tensor_release(v);
}

static void test_as_strided_scatter(void **state) {
    (void)state;
    /* self is a view at offset 2 of a 12-element storage: the geometry is absolute in it */
    fx_tensor *base = make(FX_DTYPE_I64, 1, (int64_t[]){12}, L_CONTIG, 0), *self = NULL;
    fx_tensor_as_strided(base, 2, (int64_t[]){2, 3}, (int64_t[]){4, 1}, 2, &self, &kb_err);
    fx_tensor *src = make(FX_DTYPE_I64, 2, (int64_t[]){2, 2}, L_TRANS, 100);
    fx_ivalue sv = kb_iv(self), srcv = kb_iv(src), size = kb_ints(2, 2, 2), stride = kb_ints(2, 1, 5),
              off = fx_iv_int(3);
    fx_tensor *r = kb_call(&g_eager, FX_OP_AS_STRIDED_SCATTER, 5, &sv, &srcv, &size, &stride, &off);
    if (!r) fail_msg("as_strided_scatter: %s", kb_err.msg);
    assert_true(kb_sizes_are(r, 2, (int64_t[]){2, 3}));
    assert_true(kb_strides_are(r, 2, (int64_t[]){4, 1}));
    assert_int_equal(fx_tensor_offset(r), 2);
    assert_false(fx_tensor_same_storage(r, self));
    /* the as_strided view of the result reads src back; self's other elements are unchanged */
    fx_ivalue rv = kb_iv(r);
    fx_tensor *view = kb_call(&g_eager, FX_OP_AS_STRIDED, 4, &rv, &size, &stride, &off);
    for (int64_t e = 0; e < 4; e++) assert_true(fx_tensor_flat_f64(view, e) == fx_tensor_flat_f64(src, e));
    /* written storage slots: 3, 8, 4, 9; self covers 2..4 and 6..8 */
    static const int64_t written[4] = {3, 8, 4, 9};
    for (int64_t e = 0; e < 6; e++) {
        int64_t slot = 2 + (e / 3) * 4 + e % 3;
        bool w = false;
        for (int k = 0; k < 4; k++) w |= written[k] == slot;
        if (!w) assert_true(fx_tensor_flat_f64(r, e) == fx_tensor_flat_f64(self, e));
    }
    fx_tensor_release(view);
    fx_tensor_release(r);
    fx_ivalue bad = kb_ints(1, 3), one = kb_ints(1, 1);
    expect_error(FX_OP_AS_STRIDED_SCATTER, "expected src to have a size equal to the slice of self. src size = [2, 2], slice size = [3]", 4, &sv, &srcv, &bad, &one);
    fx_ivalue_clear(&bad);
    fx_ivalue_clear(&one);
    fx_ivalue_clear(&size);
    fx_ivalue_clear(&stride);
    fx_tensor_release(src);
    fx_tensor_release(self);
    fx_tensor_release(base);
}

/* ---- allocation failures --------------------------------------------------------------------- */

static fx_tensor *g_t[3];
static fx_ivalue g_list, g_rep;

static int run_cat(void) {
    fx_ivalue d = fx_iv_int(1);
    fx_tensor *r = kb_call(&g_eager, FX_OP_CAT, 2, &g_list, &d);
    if (!r) return kb_err.code;
    fx_tensor_release(r);
    return FX_OK;
}

static int run_split(void) {
    fx_ivalue tv = kb_iv(g_t[0]), two = fx_iv_int(1), d = fx_iv_int(1);
    const fx_opdef *def = fx_op_get(FX_OP_CHUNK);
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {tv, two, d}, outs[FX_SCHEMA_MAX_RETS];
    fx_err_clear(&kb_err);
    int rc = fx_dispatch(&g_eager, def, args, outs, &kb_err);
    if (!rc) fx_ivalue_clear(&outs[0]);
    return rc;
}

static int run_repeat(void) {
    fx_ivalue tv = kb_iv(g_t[1]);
    fx_tensor *r = kb_call(&g_eager, FX_OP_REPEAT, 2, &tv, &g_rep);
    if (!r) return kb_err.code;
    fx_tensor_release(r);
    return FX_OK;
}

static void test_allocation_failures(void **state) {
    (void)state;
    for (int k = 0; k < 3; k++) g_t[k] = make(FX_DTYPE_F16, 2, (int64_t[]){3, 2 + k}, k, k);
    g_list = tlist(3, g_t);
    assert_true(kb_oom_sweep(run_cat) >= 1);
    assert_true(kb_oom_sweep(run_split) >= 2);
    g_rep = kb_ints(3, 2, 1, 3);
    assert_true(kb_oom_sweep(run_repeat) >= 1);
    fx_ivalue_clear(&g_rep);
    fx_ivalue_clear(&g_list);
    for (int k = 0; k < 3; k++) fx_tensor_release(g_t[k]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cat),
        cmocka_unit_test(test_stack),
        cmocka_unit_test(test_split_family),
        cmocka_unit_test(test_narrow_flatten_unflatten),
        cmocka_unit_test(test_repeat),
        cmocka_unit_test(test_unfold),
        cmocka_unit_test(test_diagonal),
        cmocka_unit_test(test_as_strided_scatter),
        cmocka_unit_test(test_allocation_failures),
    };
    return kb_run(tests, kb_setup, NULL);
}
