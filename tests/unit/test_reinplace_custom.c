/* tests/unit/test_reinplace_custom.c — re-inplacing auto_functionalized, checked by execution.
 * Layer: tests (core only). A custom op with a C kernel, utest::bump(Tensor x, Tensor(a!) buf),
 * mutates a buffer; the program is traced, exported (auto_functionalized), unlifted, and
 * reinplaced. Safe case: the op writes the buffer itself, no clone, no copy_ back. Unsafe case
 * (a node after the op reads the buffer's old value; made by moving that node, as a scheduler
 * could): the clone stays and the pass says which node forced it. Both run against the unlifted
 * program without reinplacing, which clones every mutated argument: same outputs, same buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/fx.h"
#include "core/hop.h"

static const fx_opdef *g_bump;

static int bump_meta(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)ctx, (void)a, (void)out;
    return FX_OK;
}

/* buf += x, elementwise (f32, same shape, contiguous) */
static int bump_kernel(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)ctx, (void)out;
    const fx_tensor *x = a[0].u.t;
    fx_tensor *buf = a[1].u.t;
    for (int64_t i = 0; i < fx_tensor_numel(buf); i++) {
        int64_t idx = i;
        fx_tensor_set_f64(buf, &idx, fx_tensor_flat_f64(buf, i) + fx_tensor_flat_f64(x, i));
    }
    return FX_OK;
}

static int setup(void **state) {
    (void)state;
    fx_err err;
    fx_err_clear(&err);
    fx_opdef *op;
    assert_int_equal(fx_registry_init(&err), FX_OK);
    assert_int_equal(fx_op_register("utest", "bump(Tensor x, Tensor(a!) buf) -> ()", bump_meta,
                                    bump_kernel, NULL, 0, &op, &err),
                     FX_OK);
    g_bump = op;
    return 0;
}

static fx_tensor *vec(const double *v, int64_t n) {
    fx_tensor *t;
    fx_err err;
    fx_err_clear(&err);
    assert_int_equal(fx_tensor_empty(1, &n, FX_DTYPE_F32, FX_DEVICE_CPU, &t, &err), FX_OK);
    for (int64_t i = 0; i < n; i++) fx_tensor_set_f64(t, &i, v[i]);
    return t;
}

/* s = sum(buf); bump(x, buf); return s + buf — exported, then unlifted. */
static fx_graph *unlifted_program(fx_tensor *buf0, fx_tensor *x0) {
    fx_err err;
    fx_err_clear(&err);
    fx_trace_opts o = {0};
    fx_tracer *tr = fx_tracer_new(&o, &err);
    assert_non_null(tr);
    fx_ctx *ctx = fx_tracer_ctx(tr);
    fx_tensor *tb, *tx;
    assert_int_equal(fx_tracer_input(tr, FX_INPUT_BUFFER, "b_buf", "buf", true, buf0, &tb, &err), FX_OK);
    assert_int_equal(fx_tracer_input(tr, FX_INPUT_USER_INPUT, "x", NULL, false, x0, &tx, &err), FX_OK);
    fx_ivalue bv = fx_iv_tensor_steal(tb), xv = fx_iv_tensor_steal(tx), s, out;
    assert_int_equal(fx_call(ctx, FX_OP_SUM, &s, &err, 1, &bv), FX_OK);
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {xv, bv};
    fx_ivalue none[FX_SCHEMA_MAX_RETS];
    assert_int_equal(fx_dispatch(ctx, g_bump, args, none, &err), FX_OK);
    assert_int_equal(fx_call(ctx, FX_OP_ADD_TENSOR, &out, &err, 2, &s, &bv), FX_OK);
    assert_int_equal(fx_tracer_finish(tr, &out, 1, &err), FX_OK);
    fx_graph *raw;
    fx_input_info *infos;
    int ninfos;
    assert_int_equal(fx_tracer_take(tr, &raw, &infos, &ninfos, &err), FX_OK);
    fx_tracer_free(tr);
    fx_ivalue_clear(&bv);
    fx_ivalue_clear(&xv);
    fx_ivalue_clear(&s);
    fx_ivalue_clear(&out);
    fx_named_tensor st = {(char *)"buf", buf0};
    fx_program *ep;
    fx_export_opts eo = {0};
    if (fx_export_build(raw, infos, ninfos, &st, 1, &eo, &ep, &err)) fail_msg("export: %s", err.msg);
    int naf = 0, first;
    for (fx_node *n = fx_graph_first(ep->graph); n; n = n->next) naf += fx_hop_wrapped_op(n, &first) != NULL;
    assert_int_equal(naf, 1);
    fx_graph *g;
    assert_int_equal(fx_program_unlift(ep, &g, &err), FX_OK);
    fx_program_free(ep);
    return g;
}

static int attr_buf(void *ud, const char *target, fx_tensor **out, fx_err *err) {
    if (strcmp(target, "buf")) return fx_err_setf(err, FX_EARG, "no %s", target);
    *out = ud;
    return FX_OK;
}

/* Runs g on x with its own copy of buf0; returns the output's values and the buffer's. */
static void run(fx_graph *g, const double *buf0, fx_tensor *x, double *outv, double *bufv) {
    fx_err err;
    fx_err_clear(&err);
    fx_tensor *buf = vec(buf0, 3);
    fx_interp_opts o = {0};
    o.attr = attr_buf;
    o.attr_ud = buf;
    fx_ivalue in = fx_iv_tensor(x), res;
    if (fx_graph_run(g, &in, 1, &o, &res, &err)) fail_msg("run: %s", err.msg);
    for (int i = 0; i < 3; i++) {
        outv[i] = fx_tensor_flat_f64(res.u.list.items[0].u.t, i);
        bufv[i] = fx_tensor_flat_f64(buf, i);
    }
    fx_ivalue_clear(&res);
    fx_ivalue_clear(&in);
    fx_tensor_release(buf);
}

static int count_target(const fx_graph *g, const char *target) {
    int k = 0;
    for (const fx_node *n = fx_graph_first(g); n; n = n->next)
        k += n->op == FX_NODE_CALL_FUNCTION && !strcmp(n->target, target);
    return k;
}

static const double BUF0[3] = {1, 2, 3}, X0[3] = {10, 20, 30};

static void check_against_plain(fx_graph *plain, fx_graph *re, const double *want_out) {
    fx_tensor *x = vec(X0, 3);
    double o1[3], b1[3], o2[3], b2[3];
    run(plain, BUF0, x, o1, b1);
    run(re, BUF0, x, o2, b2);
    for (int i = 0; i < 3; i++) {
        assert_true(o1[i] == o2[i]);
        assert_true(b1[i] == b2[i]);
        assert_true(o1[i] == want_out[i]);
        assert_true(b1[i] == BUF0[i] + X0[i]);
    }
    fx_tensor_release(x);
}

/* sum(buf) before the op: the op writes the buffer itself; no clone, no copy_ back. */
static void test_safe(void **state) {
    (void)state;
    fx_tensor *b = vec(BUF0, 3), *x = vec(X0, 3);
    fx_graph *plain = unlifted_program(b, x), *re = unlifted_program(b, x);
    fx_err err;
    fx_err_clear(&err);
    fx_strbuf why = FX_STRBUF_INIT;
    int count = 0;
    assert_int_equal(fx_pass_reinplace_explain(re, &count, &why, &err), FX_OK);
    assert_int_equal(count, 1);
    assert_int_equal(count_target(re, "higher_order.auto_functionalized"), 0);
    assert_int_equal(count_target(re, "utest.bump.default"), 1);
    assert_int_equal(count_target(re, "aten.clone.default"), 0);
    assert_int_equal(count_target(re, "aten.copy_.default"), 0);
    assert_non_null(strstr(fx_strbuf_cstr(&why), "'buf' written in place"));
    /* s = 6 (old buffer), new buffer = [11, 22, 33] */
    const double want[3] = {17, 28, 39};
    check_against_plain(plain, re, want);
    fx_strbuf_free(&why);
    fx_graph_free(plain);
    fx_graph_free(re);
    fx_tensor_release(b);
    fx_tensor_release(x);
}

/* sum(buf) moved after the op reads the old value there: the clone stays, and why says so. */
static void test_unsafe(void **state) {
    (void)state;
    fx_tensor *b = vec(BUF0, 3), *x = vec(X0, 3);
    fx_graph *plain = unlifted_program(b, x), *re = unlifted_program(b, x);
    fx_graph *gs[2] = {plain, re};
    for (int k = 0; k < 2; k++) {
        fx_node *sum = NULL, *af = NULL;
        for (fx_node *n = fx_graph_first(gs[k]); n; n = n->next) {
            if (!strcmp(n->target, "aten.sum.default")) sum = n;
            if (!strcmp(n->target, "higher_order.auto_functionalized")) af = n;
        }
        assert_non_null(sum);
        assert_non_null(af);
        fx_graph_move_before(gs[k], sum, af->next);
    }
    fx_err err;
    fx_err_clear(&err);
    fx_strbuf why = FX_STRBUF_INIT;
    int count = 0;
    assert_int_equal(fx_pass_reinplace_explain(re, &count, &why, &err), FX_OK);
    assert_int_equal(count_target(re, "higher_order.auto_functionalized"), 0);
    assert_int_equal(count_target(re, "utest.bump.default"), 1);
    assert_int_equal(count_target(re, "aten.clone.default"), 1);
    const char *w = fx_strbuf_cstr(&why);
    assert_non_null(strstr(w, "kept a clone of 'buf'"));
    assert_non_null(strstr(w, "%sum_1 reads the old value after the op"));
    const double want[3] = {17, 28, 39};
    check_against_plain(plain, re, want);
    fx_strbuf_free(&why);
    fx_graph_free(plain);
    fx_graph_free(re);
    fx_tensor_release(b);
    fx_tensor_release(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_safe),
        cmocka_unit_test(test_unsafe),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
