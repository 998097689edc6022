/* tests/unit/test_functionalize.c — functionalization through views, checked by execution.
 * Layer: tests (core only). Each program is a C function run twice: eagerly on real tensors
 * (the reference: in-place writes through views really alias), and traced on meta tensors,
 * exported, and run on the interpreter. The user outputs and the buffer's final value must match
 * bit for bit; the functional graph must contain no in-place op, and the expected scatter ops. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/fx.h"

typedef int (*program_fn)(fx_ctx *ctx, fx_ivalue *buf, fx_ivalue *x, fx_ivalue *out, fx_err *err);

#define CALL(op, out, n, ...) \
    do { if ((rc = fx_call(ctx, op, out, err, n, __VA_ARGS__))) return rc; } while (0)

static fx_tensor *arange_tensor(int ndim, const int64_t *sizes, double scale) {
    fx_tensor *t;
    fx_err err;
    fx_err_clear(&err);
    assert_int_equal(fx_tensor_empty(ndim, sizes, FX_DTYPE_F32, FX_DEVICE_CPU, &t, &err), FX_OK);
    int64_t n = fx_tensor_numel(t);
    float *p = fx_tensor_data(t);
    for (int64_t i = 0; i < n; i++) p[i] = (float)(i * scale + 1);
    return t;
}

static fx_tensor *clone_t(fx_tensor *t) {
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    fx_err err;
    fx_err_clear(&err);
    fx_ivalue a = fx_iv_tensor(t);
    fx_tensor *c;
    assert_int_equal(fx_call_t(&eager, FX_OP_CLONE, &c, &err, 1, &a), FX_OK);
    fx_ivalue_clear(&a);
    return c;
}

static void assert_same(const fx_tensor *a, const fx_tensor *b) {
    assert_int_equal(fx_tensor_ndim(a), fx_tensor_ndim(b));
    assert_int_equal(fx_tensor_numel(a), fx_tensor_numel(b));
    for (int64_t i = 0; i < fx_tensor_numel(a); i++)
        assert_true(fx_tensor_flat_f64(a, i) == fx_tensor_flat_f64(b, i));
}

/* Runs prog eagerly and exported; compares; returns the program for graph checks (caller frees). */
static fx_program *check_program(program_fn prog, fx_tensor *buf0, fx_tensor *x0) {
    fx_err err;
    fx_err_clear(&err);
    /* eager */
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    fx_tensor *eb = clone_t(buf0);
    fx_ivalue bv = fx_iv_tensor(eb), xv = fx_iv_tensor(x0), eout;
    assert_int_equal(prog(&eager, &bv, &xv, &eout, &err), FX_OK);
    /* export */
    fx_trace_opts o = {0};
    fx_tracer *tr = fx_tracer_new(&o, &err);
    fx_tensor *tb, *tx;
    assert_int_equal(fx_tracer_input(tr, FX_INPUT_BUFFER, "b_buf", "buf", true, buf0, &tb, &err), FX_OK);
    assert_int_equal(fx_tracer_input(tr, FX_INPUT_USER_INPUT, "x", NULL, false, x0, &tx, &err), FX_OK);
    fx_ivalue tbv = fx_iv_tensor_steal(tb), txv = fx_iv_tensor_steal(tx), tout;
    int rc = prog(fx_tracer_ctx(tr), &tbv, &txv, &tout, &err);
    if (rc) fail_msg("trace failed: %s", err.msg);
    assert_int_equal(fx_tracer_finish(tr, &tout, 1, &err), FX_OK);
    fx_graph *raw;
    fx_input_info *infos;
    int ninfos;
    assert_int_equal(fx_tracer_take(tr, &raw, &infos, &ninfos, &err), FX_OK);
    fx_named_tensor st = {(char *)"buf", buf0};
    fx_program *ep;
    fx_export_opts eo = {0};
    rc = fx_export_build(raw, infos, ninfos, &st, 1, &eo, &ep, &err);
    if (rc) fail_msg("export failed: %s", err.msg);
    /* no in-place op survives */
    for (fx_node *n = fx_graph_first(ep->graph); n; n = n->next)
        if (n->aten) assert_false(fx_op_is_inplace(n->aten));
    /* run the functional graph: inputs are (buf, x) */
    fx_ivalue ins[2] = {fx_iv_tensor(buf0), fx_iv_tensor(x0)}, res;
    rc = fx_graph_run(ep->graph, ins, 2, NULL, &res, &err);
    if (rc) fail_msg("run failed: %s", err.msg);
    assert_int_equal(res.u.list.n, 2); /* the buffer's new value, the user output */
    assert_same(res.u.list.items[0].u.t, eb);
    assert_same(res.u.list.items[1].u.t, eout.u.t);
    assert_string_equal(ep->sig.outputs[0].target, "buf");
    fx_ivalue_clear(&res);
    fx_ivalue_clear(&ins[0]);
    fx_ivalue_clear(&ins[1]);
    fx_ivalue_clear(&tout);
    fx_ivalue_clear(&tbv);
    fx_ivalue_clear(&txv);
    fx_ivalue_clear(&eout);
    fx_ivalue_clear(&bv);
    fx_ivalue_clear(&xv);
    fx_tracer_free(tr);
    fx_tensor_release(eb);
    return ep;
}

static bool has_op(const fx_program *ep, const char *target) {
    for (fx_node *n = fx_graph_first(ep->graph); n; n = n->next)
        if (!strcmp(n->target, target)) return true;
    return false;
}

/* buf[:, 1] = x; return buf.sum() — the KV-cache write. */
static int prog_select_copy(fx_ctx *ctx, fx_ivalue *buf, fx_ivalue *x, fx_ivalue *out, fx_err *err) {
    int rc;
    fx_ivalue one = fx_iv_int(1), v, r;
    CALL(FX_OP_SELECT_INT, &v, 3, buf, &one, &one);
    CALL(FX_OP_COPY_, &r, 2, &v, x);
    fx_ivalue_clear(&r);
    fx_ivalue_clear(&v);
    CALL(FX_OP_MUL_TENSOR, out, 2, buf, &one);
    return FX_OK;
}

static void test_select_copy(void **unused) {
    (void)unused;
    int64_t bs[2] = {4, 3}, xs[1] = {4};
    fx_tensor *b = arange_tensor(2, bs, 1), *x = arange_tensor(1, xs, -2);
    fx_program *ep = check_program(prog_select_copy, b, x);
    assert_true(has_op(ep, "aten.select_scatter.default"));
    assert_true(has_op(ep, "aten.copy.default"));
    fx_provenance *pv;
    fx_err err;
    fx_err_clear(&err);
    assert_int_equal(fx_provenance_walk(ep, "buf", &pv, &err), FX_OK);
    assert_int_equal(pv->nsteps, 2);
    assert_string_equal(pv->steps[1].from_op, "aten.copy_.default");
    assert_string_equal(pv->steps[1].view_path, "select(1, 1)");
    assert_string_equal(pv->steps[1].node->target, "aten.select_scatter.default");
    fx_provenance_free(pv);
    fx_program_free(ep);
    fx_tensor_release(b);
    fx_tensor_release(x);
}

/* Two live views of one base: v1 = buf[0:2]; v2 = buf[1]; v1.add_(x); return v2 * 1 (must see the
 * write through v1), then buf[1].mul_(2) through a view of a view. */
static int prog_two_views(fx_ctx *ctx, fx_ivalue *buf, fx_ivalue *x, fx_ivalue *out, fx_err *err) {
    int rc;
    fx_ivalue zero = fx_iv_int(0), one = fx_iv_int(1), two = fx_iv_int(2), v1, v2, v3, r;
    CALL(FX_OP_SLICE_TENSOR, &v1, 4, buf, &zero, &zero, &two);
    CALL(FX_OP_SELECT_INT, &v2, 3, buf, &zero, &one);
    CALL(FX_OP_ADD__TENSOR, &r, 2, &v1, x);
    fx_ivalue_clear(&r);
    CALL(FX_OP_SELECT_INT, &v3, 3, &v1, &zero, &one); /* view of a view */
    CALL(FX_OP_MUL__TENSOR, &r, 2, &v3, &two);
    fx_ivalue_clear(&r);
    CALL(FX_OP_MUL_TENSOR, out, 2, &v2, &one);
    fx_ivalue_clear(&v1);
    fx_ivalue_clear(&v2);
    fx_ivalue_clear(&v3);
    return FX_OK;
}

static void test_two_views(void **unused) {
    (void)unused;
    int64_t bs[2] = {4, 3}, xs[1] = {3};
    fx_tensor *b = arange_tensor(2, bs, 1), *x = arange_tensor(1, xs, 10);
    fx_program *ep = check_program(prog_two_views, b, x);
    assert_true(has_op(ep, "aten.slice_scatter.default"));
    assert_true(has_op(ep, "aten.select_scatter.default"));
    fx_program_free(ep);
    fx_tensor_release(b);
    fx_tensor_release(x);
}

/* Reshaping views: buf.view(12)[3:9].view(2, 3).transpose(0, 1).unsqueeze(0).fill_(x[0]) */
static int prog_reshape_chain(fx_ctx *ctx, fx_ivalue *buf, fx_ivalue *x, fx_ivalue *out, fx_err *err) {
    int rc;
    int64_t flat = 12, two_three[2] = {2, 3};
    fx_ivalue l12, l23, zero = fx_iv_int(0), one = fx_iv_int(1), three = fx_iv_int(3),
                    nine = fx_iv_int(9), a, b, c, d, e, r, s;
    if ((rc = fx_iv_int_list(1, &flat, &l12, err))) return rc;
    if ((rc = fx_iv_int_list(2, two_three, &l23, err))) return rc;
    CALL(FX_OP_VIEW, &a, 2, buf, &l12);
    CALL(FX_OP_SLICE_TENSOR, &b, 4, &a, &zero, &three, &nine);
    CALL(FX_OP_VIEW, &c, 2, &b, &l23);
    CALL(FX_OP_TRANSPOSE_INT, &d, 3, &c, &zero, &one);
    CALL(FX_OP_UNSQUEEZE, &e, 2, &d, &zero);
    CALL(FX_OP_SELECT_INT, &s, 3, x, &zero, &zero);
    CALL(FX_OP_MUL__TENSOR, &r, 2, &e, &s);
    fx_ivalue_clear(&r);
    CALL(FX_OP_ADD_TENSOR, out, 2, buf, &one);
    fx_ivalue *all[] = {&l12, &l23, &a, &b, &c, &d, &e, &s};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) fx_ivalue_clear(all[i]);
    return FX_OK;
}

static void test_reshape_chain(void **unused) {
    (void)unused;
    int64_t bs[2] = {4, 3}, xs[1] = {3};
    fx_tensor *b = arange_tensor(2, bs, 1), *x = arange_tensor(1, xs, 5);
    fx_program *ep = check_program(prog_reshape_chain, b, x);
    assert_true(has_op(ep, "aten.slice_scatter.default"));
    assert_true(has_op(ep, "aten.squeeze.dim"));
    fx_program_free(ep);
    fx_tensor_release(b);
    fx_tensor_release(x);
}

/* Writing into an expanded view is an error, as in PyTorch. */
static int prog_expand_write(fx_ctx *ctx, fx_ivalue *buf, fx_ivalue *x, fx_ivalue *out, fx_err *err) {
    int rc;
    int64_t sz[3] = {2, 4, 3};
    fx_ivalue l, v, r, one = fx_iv_int(1);
    if ((rc = fx_iv_int_list(3, sz, &l, err))) return rc;
    CALL(FX_OP_EXPAND, &v, 2, buf, &l);
    rc = fx_call(ctx, FX_OP_ADD__TENSOR, &r, err, 2, &v, &one);
    fx_ivalue_clear(&v);
    fx_ivalue_clear(&l);
    if (rc) return rc;
    fx_ivalue_clear(&r);
    return fx_call(ctx, FX_OP_MUL_TENSOR, out, err, 2, buf, x);
}

static void test_expand_write_is_an_error(void **unused) {
    (void)unused;
    int64_t bs[2] = {4, 3};
    fx_tensor *b = arange_tensor(2, bs, 1);
    fx_err err;
    fx_err_clear(&err);
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    fx_ivalue bv = fx_iv_tensor(b), xv = fx_iv_tensor(b), out;
    int rc = prog_expand_write(&eager, &bv, &xv, &out, &err);
    assert_int_not_equal(rc, FX_OK);
    assert_non_null(strstr(err.msg, "more than one element of the written-to tensor"));
    fx_ivalue_clear(&bv);
    fx_ivalue_clear(&xv);
    /* and the same program refused by export (traced on meta tensors, so no kernel runs) */
    fx_err_clear(&err);
    fx_trace_opts o = {0};
    fx_tracer *tr = fx_tracer_new(&o, &err);
    fx_tensor *tb, *tx;
    assert_int_equal(fx_tracer_input(tr, FX_INPUT_BUFFER, "b_buf", "buf", true, b, &tb, &err), FX_OK);
    assert_int_equal(fx_tracer_input(tr, FX_INPUT_USER_INPUT, "x", NULL, false, b, &tx, &err), FX_OK);
    fx_ivalue tbv = fx_iv_tensor_steal(tb), txv = fx_iv_tensor_steal(tx);
    rc = prog_expand_write(fx_tracer_ctx(tr), &tbv, &txv, &out, &err);
    if (rc == FX_OK) { /* the trace may accept it; export must not */
        assert_int_equal(fx_tracer_finish(tr, &out, 1, &err), FX_OK);
        fx_ivalue_clear(&out);
        fx_graph *raw;
        fx_input_info *infos;
        int ninfos;
        assert_int_equal(fx_tracer_take(tr, &raw, &infos, &ninfos, &err), FX_OK);
        fx_named_tensor st = {(char *)"buf", b};
        fx_program *ep = NULL;
        fx_export_opts eo = {0};
        rc = fx_export_build(raw, infos, ninfos, &st, 1, &eo, &ep, &err);
        assert_null(ep);
        assert_string_equal(err.kind, "unsupported_view_write");
    }
    assert_int_not_equal(rc, FX_OK);
    assert_non_null(strstr(err.msg, "more than one element of the written-to tensor"));
    fx_ivalue_clear(&tbv);
    fx_ivalue_clear(&txv);
    fx_tracer_free(tr);
    fx_tensor_release(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select_copy),
        cmocka_unit_test(test_two_views),
        cmocka_unit_test(test_reshape_chain),
        cmocka_unit_test(test_expand_write_is_an_error),
    };
    return cmocka_run_group_tests_name("functionalize", tests, NULL, NULL);
}
