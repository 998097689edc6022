/* tests/unit/test_gather.c — index_select, gather, scatter (src / value / reduce / value_reduce
 * and in-place), scatter_add(_), index_copy(_) and masked_fill (Scalar / Tensor, in-place).
 * Layer: tests (cmocka, links libfxdb.a). Every op over every dtype and contiguous /
 * transposed / gapped / expanded operands against a naive reference written from PyTorch's
 * documented formula (out[i][j] = self[index[i][j]][j] for gather along 0, ...); errors with
 * PyTorch's text (checked against torch for the messages 2.x shares with 1.13). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/shape.h"
#include "tests/unit/kb_util.h"

/* An int64 index tensor of `sizes` in `layout` with values (i * 7 + seed) % bound. */
static fx_tensor *make_index(fx_dtype dt, int nd, const int64_t *sizes, int layout, int seed,
                             int64_t bound) {
    fx_tensor *t = make(dt, nd, sizes, layout == L_EXPANDED ? L_CONTIG : layout, 0);
    int64_t n = fx_tensor_numel(t), idx[FX_MAX_DIMS];
    for (int64_t i = 0; i < n; i++) {
        int64_t q = i;
        for (int d = nd - 1; d >= 0; d--) idx[d] = q % sizes[d], q /= sizes[d];
        fx_tensor_set_f64(t, idx, (double)((i * 7 + seed) % bound));
    }
    return t;
}

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

/* The value `v` as stored in dtype dt and read back. */
static double as_dt(fx_dtype dt, double v) {
    char b[8];
    fx_dtype_store_f64(dt, b, 0, v);
    return fx_dtype_load_f64(dt, b, 0);
}

/* ---- index_select / gather ------------------------------------------------------------------- */

static void test_index_select(void **state) {
    (void)state;
    static const int64_t sizes[3] = {4, 3, 5};
    for (int di = 0; di < NDT; di++)
        for (int layout = 0; layout < L_COUNT; layout++)
            for (int d = 0; d < 3; d++)
                for (int it = 0; it < 2; it++) {
                    fx_dtype dt = k_dtypes[di];
                    fx_tensor *t = make(dt, 3, sizes, layout, 1);
                    fx_tensor *idx = make_index(it ? FX_DTYPE_I32 : FX_DTYPE_I64, 1, (int64_t[]){6},
                                                layout == L_TRANS ? L_GAPPED : L_CONTIG, d, sizes[d]);
                    fx_ivalue tv = kb_iv(t), dv = fx_iv_int(d - 3 * (d == 2)), iv = kb_iv(idx);
                    fx_tensor *r = kb_call(&g_eager, FX_OP_INDEX_SELECT, 3, &tv, &dv, &iv);
                    if (!r) fail_msg("index_select: %s", kb_err.msg);
                    int64_t want[3] = {4, 3, 5};
                    want[d] = 6;
                    assert_true(kb_sizes_are(r, 3, want));
                    assert_true(fx_tensor_is_contiguous(r));
                    int64_t p[3];
                    for (int64_t i = 0; i < fx_tensor_numel(r); i++) {
                        unravel(i, 3, want, p);
                        p[d] = fx_tensor_flat_i64(idx, p[d]);
                        if (fx_tensor_flat_f64(r, i) != fx_tensor_get_f64(t, p)) fail_msg("index_select element %lld", (long long)i);
                    }
                    fx_tensor_release(r);
                    fx_tensor_release(idx);
                    fx_tensor_release(t);
                }
    /* a 0-dim self with one index; a 0-dim index */
    fx_tensor *s = NULL, *i0 = NULL;
    fx_tensor_scalar(4, FX_DTYPE_F32, &s, &kb_err);
    fx_tensor_scalar(0, FX_DTYPE_I64, &i0, &kb_err);
    fx_ivalue sv = kb_iv(s), i0v = kb_iv(i0), z = fx_iv_int(0);
    fx_tensor *r = kb_call(&g_eager, FX_OP_INDEX_SELECT, 3, &sv, &z, &i0v);
    assert_int_equal(fx_tensor_ndim(r), 0);
    assert_true(fx_tensor_flat_f64(r, 0) == 4);
    fx_tensor_release(r);
    /* errors */
    fx_tensor *t = make(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, L_CONTIG, 0);
    fx_tensor *i2 = make_index(FX_DTYPE_I64, 2, (int64_t[]){1, 1}, L_CONTIG, 0, 1);
    fx_tensor *fi = make(FX_DTYPE_F32, 1, (int64_t[]){1}, L_CONTIG, 0);
    fx_tensor *oob = kb_tensor(FX_DTYPE_I64, 1, (int64_t[]){1}, (double[]){2}, 0, 0);
    fx_tensor *neg = kb_tensor(FX_DTYPE_I64, 1, (int64_t[]){1}, (double[]){-1}, 0, 0);
    fx_tensor *two = kb_tensor(FX_DTYPE_I64, 1, (int64_t[]){2}, (double[]){0, 0}, 0, 0);
    fx_ivalue tv = kb_iv(t), i2v = kb_iv(i2), fiv = kb_iv(fi), oobv = kb_iv(oob), negv = kb_iv(neg),
              twov = kb_iv(two);
    expect_error(FX_OP_INDEX_SELECT, "index_select(): Index is supposed to be a vector", 3, &tv, &z, &i2v);
    expect_error(FX_OP_INDEX_SELECT, "index_select(): Expected dtype int32 or int64 for index", 3, &tv, &z, &fiv);
    expect_error(FX_OP_INDEX_SELECT, "index out of range in self", 3, &tv, &z, &oobv);
    expect_error(FX_OP_INDEX_SELECT, "index out of range in self", 3, &tv, &z, &negv);
    expect_error(FX_OP_INDEX_SELECT, "index_select(): Index to scalar can have only 1 value, got 2 value(s)", 3, &sv, &z, &twov);
    fx_tensor_release(s);
    fx_tensor_release(i0);
    fx_tensor_release(t);
    fx_tensor_release(i2);
    fx_tensor_release(fi);
    fx_tensor_release(oob);
    fx_tensor_release(neg);
    fx_tensor_release(two);
}

static void test_gather(void **state) {
    (void)state;
    static const int64_t ss[3] = {4, 5, 3}, is[3] = {3, 5, 2};
    for (int di = 0; di < NDT; di++)
        for (int layout = 0; layout < L_COUNT; layout++)
            for (int d = 0; d < 3; d++) {
                fx_dtype dt = k_dtypes[di];
                fx_tensor *t = make(dt, 3, ss, layout, 2);
                fx_tensor *idx = make_index(FX_DTYPE_I64, 3, is, (layout + 1) % L_COUNT, d, ss[d]);
                fx_ivalue tv = kb_iv(t), dv = fx_iv_int(d), iv = kb_iv(idx);
                fx_tensor *r = kb_call(&g_eager, FX_OP_GATHER, 3, &tv, &dv, &iv);
                if (!r) fail_msg("gather: %s", kb_err.msg);
                assert_true(kb_sizes_are(r, 3, is));
                int64_t p[3];
                for (int64_t i = 0; i < 30; i++) {
                    unravel(i, 3, is, p);
                    int64_t q[3] = {p[0], p[1], p[2]};
                    q[d] = fx_tensor_get_i64(idx, p);
                    if (fx_tensor_flat_f64(r, i) != fx_tensor_get_f64(t, q)) fail_msg("gather element %lld", (long long)i);
                }
                fx_tensor_release(r);
                fx_tensor_release(idx);
                fx_tensor_release(t);
            }
    fx_tensor *t = make(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, L_CONTIG, 0);
    fx_tensor *i32 = make_index(FX_DTYPE_I32, 2, (int64_t[]){2, 3}, L_CONTIG, 0, 1);
    fx_tensor *i1 = make_index(FX_DTYPE_I64, 1, (int64_t[]){2}, L_CONTIG, 0, 1);
    fx_tensor *i31 = make_index(FX_DTYPE_I64, 2, (int64_t[]){3, 1}, L_CONTIG, 0, 1);
    fx_tensor *oob = kb_tensor(FX_DTYPE_I64, 2, (int64_t[]){2, 1}, (double[]){0, 3}, 0, 0);
    fx_ivalue tv = kb_iv(t), one = fx_iv_int(1), a = kb_iv(i32), b = kb_iv(i1), c = kb_iv(i31), o = kb_iv(oob);
    expect_error(FX_OP_GATHER, "gather(): Expected dtype int64 for index", 3, &tv, &one, &a);
    expect_error(FX_OP_GATHER, "Index tensor must have the same number of dimensions as input tensor", 3, &tv, &one, &b);
    expect_error(FX_OP_GATHER, "Size does not match at dimension 0 expected index [3, 1] to be smaller than self [2, 3] apart from dimension 1", 3, &tv, &one, &c);
    expect_error(FX_OP_GATHER, "index 3 is out of bounds for dimension 1 with size 3", 3, &tv, &one, &o);
    fx_tensor_release(t);
    fx_tensor_release(i32);
    fx_tensor_release(i1);
    fx_tensor_release(i31);
    fx_tensor_release(oob);
}

/* ---- scatter family -------------------------------------------------------------------------- */

typedef enum { SC_SRC, SC_VALUE, SC_ADD, SC_REDUCE_ADD, SC_REDUCE_MUL, SC_VALUE_MUL, SC_COUNT } sc_kind;

/* The naive scatter: want = self, then for every index position in row-major order
 * want[p with p[d] = index[p]] (op)= src[p] / value. */
static void ref_scatter(const fx_tensor *self, int d, const fx_tensor *index, const fx_tensor *src,
                        double value, sc_kind kind, double *want) {
    int nd = fx_tensor_ndim(self);
    int64_t n = fx_tensor_numel(self);
    for (int64_t i = 0; i < n; i++) want[i] = fx_tensor_flat_f64(self, i);
    fx_dtype dt = fx_tensor_dtype(self);
    int64_t p[FX_MAX_DIMS], q[FX_MAX_DIMS];
    for (int64_t i = 0; i < fx_tensor_numel(index); i++) {
        unravel(i, nd, fx_tensor_sizes(index), p);
        memcpy(q, p, sizeof q);
        q[d] = fx_tensor_get_i64(index, p);
        int64_t lin = 0;
        for (int e = 0; e < nd; e++) lin = lin * fx_tensor_size(self, e) + q[e];
        double s = (kind == SC_VALUE || kind == SC_VALUE_MUL) ? as_dt(dt, value) : fx_tensor_get_f64(src, p);
        double w;
        if (kind == SC_SRC || kind == SC_VALUE) w = s;
        else if (kind == SC_REDUCE_MUL || kind == SC_VALUE_MUL) w = dt == FX_DTYPE_BOOL ? (want[lin] && s) : want[lin] * s;
        else w = dt == FX_DTYPE_BOOL ? (want[lin] || s) : want[lin] + s;
        want[lin] = as_dt(dt, w);
    }
}

static void test_scatter(void **state) {
    (void)state;
    static const int64_t ss[3] = {4, 5, 3}, is[3] = {3, 4, 2}, srcs[3] = {3, 5, 3};
    int count = 0;
    for (int kind = 0; kind < SC_COUNT; kind++)
        for (int di = 0; di < NDT; di++)
            for (int layout = 0; layout < L_COUNT; layout++)
                for (int d = 0; d < 3; d++)
                    for (int inplace = 0; inplace < 2; inplace++) {
                        fx_dtype dt = k_dtypes[di];
                        /* in place needs a writable self without internal overlap */
                        fx_tensor *t = make(dt, 3, ss, inplace && layout == L_EXPANDED ? L_GAPPED : layout, 3);
                        fx_tensor *idx = make_index(FX_DTYPE_I64, 3, is, layout, d + kind, ss[d]);
                        fx_tensor *src = make(dt, 3, srcs, (layout + 1) % L_COUNT, 4);
                        fx_ivalue tv = kb_iv(t), dv = fx_iv_int(d), iv = kb_iv(idx), sv = kb_iv(src),
                                  val = dt == FX_DTYPE_BOOL ? fx_iv_bool(true) : fx_iv_int(3),
                                  add = fx_iv_str("add"), mul = fx_iv_str("multiply");
                        double *want = malloc(sizeof(double) * 60);
                        ref_scatter(t, d, idx, src, 3, kind, want);
                        fx_op_id op;
                        fx_tensor *r;
                        switch (kind) {
                        case SC_SRC: op = inplace ? FX_OP_SCATTER__SRC : FX_OP_SCATTER_SRC; r = kb_call(&g_eager, op, 4, &tv, &dv, &iv, &sv); break;
                        case SC_VALUE: op = inplace ? FX_OP_SCATTER__VALUE : FX_OP_SCATTER_VALUE; r = kb_call(&g_eager, op, 4, &tv, &dv, &iv, &val); break;
                        case SC_ADD: op = inplace ? FX_OP_SCATTER_ADD_ : FX_OP_SCATTER_ADD; r = kb_call(&g_eager, op, 4, &tv, &dv, &iv, &sv); break;
                        case SC_REDUCE_ADD: op = inplace ? FX_OP_SCATTER__REDUCE : FX_OP_SCATTER_REDUCE; r = kb_call(&g_eager, op, 5, &tv, &dv, &iv, &sv, &add); break;
                        case SC_REDUCE_MUL: op = inplace ? FX_OP_SCATTER__REDUCE : FX_OP_SCATTER_REDUCE; r = kb_call(&g_eager, op, 5, &tv, &dv, &iv, &sv, &mul); break;
                        default: op = inplace ? FX_OP_SCATTER__VALUE_REDUCE : FX_OP_SCATTER_VALUE_REDUCE; r = kb_call(&g_eager, op, 5, &tv, &dv, &iv, &val, &mul); break;
                        }
                        if (!r) fail_msg("%s: %s", fx_op_qualname(fx_op_get(op)), kb_err.msg);
                        if (inplace) assert_ptr_equal(r, t);
                        else assert_true(fx_tensor_is_contiguous(r) && !fx_tensor_same_storage(r, t));
                        for (int64_t i = 0; i < 60; i++)
                            if (fx_tensor_flat_f64(r, i) != want[i])
                                fail_msg("%s dtype %d layout %d dim %d: element %lld is %g, want %g",
                                         fx_op_qualname(fx_op_get(op)), di, layout, d, (long long)i,
                                         fx_tensor_flat_f64(r, i), want[i]);
                        free(want);
                        fx_ivalue_clear(&add);
                        fx_ivalue_clear(&mul);
                        fx_tensor_release(r);
                        fx_tensor_release(src);
                        fx_tensor_release(idx);
                        fx_tensor_release(t);
                        count++;
                    }
    assert_int_equal(count, SC_COUNT * NDT * L_COUNT * 3 * 2);
    /* errors */
    fx_tensor *t = make(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, L_CONTIG, 0);
    fx_tensor *i32 = make_index(FX_DTYPE_I32, 2, (int64_t[]){2, 3}, L_CONTIG, 0, 1);
    fx_tensor *i64 = make_index(FX_DTYPE_I64, 2, (int64_t[]){2, 3}, L_CONTIG, 0, 1);
    fx_tensor *i1 = make_index(FX_DTYPE_I64, 1, (int64_t[]){2}, L_CONTIG, 0, 1);
    fx_tensor *i31 = make_index(FX_DTYPE_I64, 2, (int64_t[]){3, 1}, L_CONTIG, 0, 1);
    fx_tensor *s31 = make(FX_DTYPE_F32, 2, (int64_t[]){3, 1}, L_CONTIG, 0);
    fx_tensor *sd = make(FX_DTYPE_F64, 2, (int64_t[]){2, 3}, L_CONTIG, 0);
    fx_tensor *oob = kb_tensor(FX_DTYPE_I64, 2, (int64_t[]){2, 1}, (double[]){3, 0}, 0, 0);
    fx_tensor *i8 = make(FX_DTYPE_I8, 1, (int64_t[]){3}, L_CONTIG, 0), *i8i = make_index(FX_DTYPE_I64, 1, (int64_t[]){1}, L_CONTIG, 0, 1);
    fx_ivalue tv = kb_iv(t), one = fx_iv_int(1), z = fx_iv_int(0), f = fx_iv_float(1.5), a32 = kb_iv(i32), a64 = kb_iv(i64),
              a1 = kb_iv(i1), a31 = kb_iv(i31), s31v = kb_iv(s31), sdv = kb_iv(sd), ob = kb_iv(oob), mx = fx_iv_str("max"),
              i8v = kb_iv(i8), i8iv = kb_iv(i8i), big = fx_iv_int(300);
    expect_error(FX_OP_SCATTER_VALUE, "scatter(): Expected dtype int64 for index", 4, &tv, &one, &a32, &f);
    expect_error(FX_OP_SCATTER_ADD, "scatter(): Expected dtype int64 for index", 4, &tv, &one, &a32, &tv);
    expect_error(FX_OP_SCATTER_SRC, "scatter(): Expected self.dtype to be equal to src.dtype", 4, &tv, &one, &a64, &sdv);
    expect_error(FX_OP_SCATTER_VALUE, "Index tensor must have the same number of dimensions as self tensor", 4, &tv, &one, &a1, &f);
    expect_error(FX_OP_SCATTER_SRC, "Expected index [3, 1] to be smaller than self [2, 3] apart from dimension 1 and to be smaller size than src [3, 1]", 4, &tv, &one, &a31, &s31v);
    expect_error(FX_OP_SCATTER_VALUE, "Expected index [3, 1] to be smaller than self [2, 3] apart from dimension 1", 4, &tv, &one, &a31, &f);
    expect_error(FX_OP_SCATTER_REDUCE, "reduce argument must be either add or multiply.", 5, &tv, &one, &a64, &tv, &mx);
    expect_error(FX_OP_SCATTER_VALUE, "index 3 is out of bounds for dimension 1 with size 3", 4, &tv, &one, &ob, &f);
    expect_error(FX_OP_SCATTER_VALUE, "value cannot be converted to type int8_t without overflow", 4, &i8v, &z, &i8iv, &big);
    fx_ivalue_clear(&mx);
    fx_tensor_release(t);
    fx_tensor_release(i32);
    fx_tensor_release(i64);
    fx_tensor_release(i1);
    fx_tensor_release(i31);
    fx_tensor_release(s31);
    fx_tensor_release(sd);
    fx_tensor_release(oob);
    fx_tensor_release(i8);
    fx_tensor_release(i8i);
}

/* ---- index_copy ------------------------------------------------------------------------------ */

static void test_index_copy(void **state) {
    (void)state;
    static const int64_t ss[3] = {5, 4, 3};
    for (int di = 0; di < NDT; di++)
        for (int layout = 0; layout < 3; layout++)
            for (int d = 0; d < 3; d++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    fx_dtype dt = k_dtypes[di];
                    fx_tensor *t = make(dt, 3, ss, layout, 1);
                    int64_t srcs[3] = {5, 4, 3};
                    srcs[d] = 2;
                    fx_tensor *src = make(dt, 3, srcs, (layout + 1) % 3, 6);
                    /* two distinct indices (a repeat would make the result depend on order) */
                    fx_tensor *idx = kb_tensor(FX_DTYPE_I64, 1, (int64_t[]){2}, (double[]){ss[d] - 1, 0}, 0, 0);
                    fx_ivalue tv = kb_iv(t), dv = fx_iv_int(d), iv = kb_iv(idx), sv = kb_iv(src);
                    double want[60];
                    for (int64_t i = 0; i < 60; i++) want[i] = fx_tensor_flat_f64(t, i);
                    fx_tensor *r = kb_call(&g_eager, inplace ? FX_OP_INDEX_COPY_ : FX_OP_INDEX_COPY, 4, &tv, &dv, &iv, &sv);
                    if (!r) fail_msg("index_copy: %s", kb_err.msg);
                    int64_t p[3];
                    for (int64_t i = 0; i < fx_tensor_numel(src); i++) {
                        unravel(i, 3, srcs, p);
                        double v = fx_tensor_get_f64(src, p);
                        p[d] = fx_tensor_flat_i64(idx, p[d]);
                        want[(p[0] * 4 + p[1]) * 3 + p[2]] = v;
                    }
                    for (int64_t i = 0; i < 60; i++)
                        if (fx_tensor_flat_f64(r, i) != want[i]) fail_msg("index_copy element %lld", (long long)i);
                    if (inplace) assert_ptr_equal(r, t);
                    fx_tensor_release(r);
                    fx_tensor_release(src);
                    fx_tensor_release(idx);
                    fx_tensor_release(t);
                }
    fx_tensor *t = make(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, L_CONTIG, 0), *s = NULL;
    fx_tensor_scalar(1, FX_DTYPE_F32, &s, &kb_err);
    fx_tensor *i11 = make_index(FX_DTYPE_I64, 2, (int64_t[]){1, 1}, L_CONTIG, 0, 1);
    fx_tensor *i2 = make_index(FX_DTYPE_I32, 1, (int64_t[]){2}, L_CONTIG, 0, 1);
    fx_tensor *l2 = make_index(FX_DTYPE_I64, 1, (int64_t[]){2}, L_CONTIG, 0, 1);
    fx_tensor *l3 = make_index(FX_DTYPE_I64, 1, (int64_t[]){3}, L_CONTIG, 0, 1);
    fx_tensor *td = make(FX_DTYPE_F64, 2, (int64_t[]){2, 3}, L_CONTIG, 0);
    fx_tensor *t24 = make(FX_DTYPE_F32, 2, (int64_t[]){2, 4}, L_CONTIG, 0);
    fx_tensor *t3 = make(FX_DTYPE_F32, 1, (int64_t[]){3}, L_CONTIG, 0);
    fx_tensor *oob = kb_tensor(FX_DTYPE_I64, 1, (int64_t[]){2}, (double[]){0, 5}, 0, 0);
    fx_ivalue tv = kb_iv(t), sv = kb_iv(s), z = fx_iv_int(0), a = kb_iv(i11), b = kb_iv(i2), c = kb_iv(l2), e = kb_iv(l3),
              tdv = kb_iv(td), t24v = kb_iv(t24), t3v = kb_iv(t3), ob = kb_iv(oob);
    expect_error(FX_OP_INDEX_COPY, "index_copy_(): Index should have dimension 1 or 0 (got 2)", 4, &tv, &z, &a, &tv);
    expect_error(FX_OP_INDEX_COPY, "index_copy_(): Expected a long tensor for index, but got Int", 4, &tv, &z, &b, &tv);
    expect_error(FX_OP_INDEX_COPY, "index_copy_(): self and source expected to have the same dtype, but got (self) Float and (source) Double", 4, &tv, &z, &c, &tdv);
    expect_error(FX_OP_INDEX_COPY, "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: 3 at dimension 0 and source slice shape: 4 at dimension 0.", 4, &tv, &z, &c, &t24v);
    expect_error(FX_OP_INDEX_COPY, "index_copy_(): Number of indices (3) should be equal to source.size(dim) (2)", 4, &tv, &z, &e, &tv);
    expect_error(FX_OP_INDEX_COPY, "index_copy_(): When source and destination are not scalars, their dimensionality must match. Source dimensionality (1), destination dimensionality (2)", 4, &tv, &z, &e, &t3v);
    expect_error(FX_OP_INDEX_COPY, "index_copy_(): When source is scalar, index should have one element (got 3)", 4, &tv, &z, &e, &sv);
    expect_error(FX_OP_INDEX_COPY, "index_copy_(): index 5 is out of bounds for dimension 0 with size 2", 4, &tv, &z, &ob, &tv);
    fx_tensor_release(t);
    fx_tensor_release(s);
    fx_tensor_release(i11);
    fx_tensor_release(i2);
    fx_tensor_release(l2);
    fx_tensor_release(l3);
    fx_tensor_release(td);
    fx_tensor_release(t24);
    fx_tensor_release(t3);
    fx_tensor_release(oob);
}

/* ---- masked_fill ----------------------------------------------------------------------------- */

static void test_masked_fill(void **state) {
    (void)state;
    for (int di = 0; di < NDT; di++)
        for (int layout = 0; layout < L_COUNT; layout++)
            for (int form = 0; form < 4; form++) {
                fx_dtype dt = k_dtypes[di];
                bool inplace = form >= 2, tensor_value = form % 2;
                fx_tensor *t = make(dt, 3, (int64_t[]){3, 4, 5}, inplace && layout == L_EXPANDED ? L_TRANS : layout, 1);
                /* masks broadcast: [4, 1] in place; [2, 1, 1, 5] out of place (grows the result) */
                fx_tensor *m = inplace ? make(FX_DTYPE_BOOL, 2, (int64_t[]){4, 1}, L_CONTIG, 0)
                                       : make(FX_DTYPE_BOOL, 4, (int64_t[]){2, 1, 1, 5}, L_GAPPED, 1);
                fx_tensor *vt = NULL;
                fx_tensor_scalar(1, dt == FX_DTYPE_BOOL ? FX_DTYPE_BOOL : FX_DTYPE_I64, &vt, &kb_err);
                fx_ivalue tv = kb_iv(t), mv = kb_iv(m), val = tensor_value ? kb_iv(vt) : fx_iv_int(1);
                fx_op_id op = form == 0 ? FX_OP_MASKED_FILL_SCALAR : form == 1 ? FX_OP_MASKED_FILL_TENSOR
                              : form == 2 ? FX_OP_MASKED_FILL__SCALAR : FX_OP_MASKED_FILL__TENSOR;
                double before[60];
                for (int64_t i = 0; i < 60; i++) before[i] = fx_tensor_flat_f64(t, i);
                fx_tensor *r = kb_call(&g_eager, op, 3, &tv, &mv, &val);
                if (!r) fail_msg("%s: %s", fx_op_qualname(fx_op_get(op)), kb_err.msg);
                int nd = inplace ? 3 : 4;
                int64_t rs[4] = {2, 3, 4, 5}, p[4];
                const int64_t *shape = inplace ? rs + 1 : rs;
                assert_true(kb_sizes_are(r, nd, shape));
                assert_int_equal(fx_tensor_dtype(r), dt);
                for (int64_t i = 0; i < fx_tensor_numel(r); i++) {
                    unravel(i, nd, shape, p);
                    bool on = inplace ? fx_tensor_get_f64(m, (int64_t[]){p[1], 0}) != 0
                                      : fx_tensor_get_f64(m, (int64_t[]){p[0], 0, 0, p[3]}) != 0;
                    double w = on ? 1 : before[i % 60];
                    if (fx_tensor_flat_f64(r, i) != w) fail_msg("masked_fill element %lld", (long long)i);
                }
                fx_tensor_release(r);
                fx_tensor_release(vt);
                fx_tensor_release(m);
                fx_tensor_release(t);
            }
    fx_tensor *t = make(FX_DTYPE_F32, 2, (int64_t[]){2, 3}, L_CONTIG, 0);
    fx_tensor *mu = make(FX_DTYPE_U8, 2, (int64_t[]){2, 3}, L_CONTIG, 0);
    fx_tensor *mb = make(FX_DTYPE_BOOL, 2, (int64_t[]){2, 3}, L_CONTIG, 0);
    fx_tensor *m4 = make(FX_DTYPE_BOOL, 1, (int64_t[]){4}, L_CONTIG, 0);
    fx_tensor *m423 = make(FX_DTYPE_BOOL, 3, (int64_t[]){4, 2, 3}, L_CONTIG, 0);
    fx_tensor *v1 = make(FX_DTYPE_F32, 1, (int64_t[]){2}, L_CONTIG, 0);
    fx_tensor *i8 = make(FX_DTYPE_I8, 1, (int64_t[]){3}, L_CONTIG, 0);
    fx_tensor *m3 = make(FX_DTYPE_BOOL, 1, (int64_t[]){3}, L_CONTIG, 0);
    fx_ivalue tv = kb_iv(t), muv = kb_iv(mu), mbv = kb_iv(mb), m4v = kb_iv(m4), m423v = kb_iv(m423), v1v = kb_iv(v1),
              i8v = kb_iv(i8), m3v = kb_iv(m3), one = fx_iv_float(1), big = fx_iv_int(300);
    expect_error(FX_OP_MASKED_FILL_SCALAR, "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char", 3, &tv, &muv, &one);
    expect_error(FX_OP_MASKED_FILL_TENSOR, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).", 3, &tv, &mbv, &v1v);
    expect_error(FX_OP_MASKED_FILL__SCALAR, "output with shape [2, 3] doesn't match the broadcast shape [4, 2, 3]", 3, &tv, &m423v, &one);
    expect_error(FX_OP_MASKED_FILL_SCALAR, "The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 1", 3, &tv, &m4v, &one);
    expect_error(FX_OP_MASKED_FILL_SCALAR, "value cannot be converted to type int8_t without overflow", 3, &i8v, &m3v, &big);
    fx_tensor_release(t);
    fx_tensor_release(mu);
    fx_tensor_release(mb);
    fx_tensor_release(m4);
    fx_tensor_release(m423);
    fx_tensor_release(v1);
    fx_tensor_release(i8);
    fx_tensor_release(m3);
}

/* ---- meta and functional twins --------------------------------------------------------------- */

static void test_meta_and_twins(void **state) {
    (void)state;
    fx_tensor *t = kb_meta(FX_DTYPE_F16, 2, (int64_t[]){4, 6});
    fx_tensor *i = kb_meta(FX_DTYPE_I64, 2, (int64_t[]){2, 6});
    fx_tensor *m = kb_meta(FX_DTYPE_BOOL, 1, (int64_t[]){6});
    fx_ivalue tv = kb_iv(t), iv = kb_iv(i), mv = kb_iv(m), z = fx_iv_int(0), v = fx_iv_float(2);
    fx_tensor *r = kb_call(&g_eager, FX_OP_GATHER, 3, &tv, &z, &iv);
    assert_true(fx_tensor_is_meta(r) && kb_sizes_are(r, 2, (int64_t[]){2, 6}));
    fx_tensor_release(r);
    r = kb_call(&g_eager, FX_OP_SCATTER_VALUE, 4, &tv, &z, &iv, &v);
    assert_true(fx_tensor_is_meta(r) && kb_sizes_are(r, 2, (int64_t[]){4, 6}));
    fx_tensor_release(r);
    r = kb_call(&g_eager, FX_OP_MASKED_FILL__SCALAR, 3, &tv, &mv, &v);
    assert_ptr_equal(r, t);
    fx_tensor_release(r);
    static const struct { fx_op_id inplace, functional; } twins[] = {
        {FX_OP_SCATTER__SRC, FX_OP_SCATTER_SRC}, {FX_OP_SCATTER__VALUE, FX_OP_SCATTER_VALUE},
        {FX_OP_SCATTER__REDUCE, FX_OP_SCATTER_REDUCE}, {FX_OP_SCATTER__VALUE_REDUCE, FX_OP_SCATTER_VALUE_REDUCE},
        {FX_OP_SCATTER_ADD_, FX_OP_SCATTER_ADD}, {FX_OP_INDEX_COPY_, FX_OP_INDEX_COPY},
        {FX_OP_MASKED_FILL__SCALAR, FX_OP_MASKED_FILL_SCALAR}, {FX_OP_MASKED_FILL__TENSOR, FX_OP_MASKED_FILL_TENSOR},
        {FX_OP_ADDMM_, FX_OP_ADDMM}, {FX_OP_BADDBMM_, FX_OP_BADDBMM},
    };
    for (size_t k = 0; k < sizeof twins / sizeof twins[0]; k++) {
        const fx_opdef *op = fx_op_get(twins[k].inplace);
        assert_true(fx_op_is_inplace(op));
        assert_int_equal(op->twin, twins[k].functional);
    }
    fx_tensor_release(t);
    fx_tensor_release(i);
    fx_tensor_release(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_select),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_scatter),
        cmocka_unit_test(test_index_copy),
        cmocka_unit_test(test_masked_fill),
        cmocka_unit_test(test_meta_and_twins),
    };
    return kb_run(tests, kb_setup, NULL);
}
