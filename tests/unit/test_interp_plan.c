/* tests/unit/test_interp_plan.c — the interpreter's plan: direct kernel calls into pooled buffers,
 * cached views, in-place ops, fx_interp_reset, and no allocation per step in the steady state.
 * Layer: tests (core only). A KV-cache decode step is traced with the C tracer (the pattern of
 * examples/llama.lua: linear -> view -> cache[:, pos] = k -> attend over cache[:, :pos+1]),
 * exported, unlifted (with and without the reinplace pass) and run many times, planned and naive
 * (opts.naive: every node through fx_dispatch, the reference); outputs and cache contents must
 * be bit-identical after every step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/fx.h"

static fx_err g_err;

static fx_tensor *ramp(int nd, const int64_t *sizes, double scale, double shift) {
    fx_tensor *t;
    assert_int_equal(fx_tensor_empty(nd, sizes, FX_DTYPE_F32, FX_DEVICE_CPU, &t, &g_err), FX_OK);
    for (int64_t i = 0; i < fx_tensor_numel(t); i++)
        fx_dtype_store_f64(FX_DTYPE_F32, fx_tensor_data(t), i, (double)((i * 7) % 11) * scale + shift);
    return t;
}

static fx_ivalue call(fx_ctx *ctx, fx_op_id id, int n, fx_ivalue *a) {
    fx_ivalue out[FX_SCHEMA_MAX_RETS];
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0};
    for (int i = 0; i < n; i++) args[i] = a[i];
    assert_int_equal(fx_dispatch(ctx, fx_op_get(id), args, out, &g_err), FX_OK);
    for (int i = 1; i < fx_op_get(id)->schema.nrets; i++) fx_ivalue_clear(&out[i]);
    return out[0];
}

/* forward(x):  k = linear(x, w).view(1, 1, 2, 4); cache[:, 3:4] = k
 *              keys = cache[:, :4]; h = keys * 0.5 + 1 (five times, an elementwise chain)
 *              return h.sum() */
static fx_program *export_step(fx_tensor *w, fx_tensor *cache, fx_tensor *x) {
    fx_trace_opts o = {0};
    fx_tracer *tr = fx_tracer_new(&o, &g_err);
    assert_non_null(tr);
    fx_ctx *ctx = fx_tracer_ctx(tr);
    fx_tensor *tw, *tc, *tx;
    assert_int_equal(fx_tracer_input(tr, FX_INPUT_PARAMETER, "p_w", "w", true, w, &tw, &g_err), FX_OK);
    assert_int_equal(fx_tracer_input(tr, FX_INPUT_BUFFER, "b_cache", "cache", false, cache, &tc, &g_err), FX_OK);
    assert_int_equal(fx_tracer_input(tr, FX_INPUT_USER_INPUT, "x", NULL, false, x, &tx, &g_err), FX_OK);
    fx_ivalue W = fx_iv_tensor_steal(tw), C = fx_iv_tensor_steal(tc), X = fx_iv_tensor_steal(tx);
    fx_ivalue a[6];
    a[0] = X, a[1] = W;
    fx_ivalue lin = call(ctx, FX_OP_LINEAR, 2, a);
    int64_t shape[4] = {1, 1, 2, 4};
    fx_ivalue sh;
    assert_int_equal(fx_iv_int_list(4, shape, &sh, &g_err), FX_OK);
    a[0] = lin, a[1] = sh;
    fx_ivalue k = call(ctx, FX_OP_VIEW, 2, a);
    a[0] = C, a[1] = fx_iv_int(1), a[2] = fx_iv_int(3), a[3] = fx_iv_int(4);
    fx_ivalue slot = call(ctx, FX_OP_SLICE_TENSOR, 4, a);
    a[0] = slot, a[1] = k;
    fx_ivalue r = call(ctx, FX_OP_COPY_, 2, a);
    fx_ivalue_clear(&r);
    a[0] = C, a[1] = fx_iv_int(1), a[2] = fx_iv_int(0), a[3] = fx_iv_int(4);
    fx_ivalue h = call(ctx, FX_OP_SLICE_TENSOR, 4, a);
    for (int i = 0; i < 5; i++) {
        a[0] = h, a[1] = fx_iv_float(0.5);
        fx_ivalue m = call(ctx, FX_OP_MUL_TENSOR, 2, a);
        a[0] = m, a[1] = fx_iv_int(1);
        fx_ivalue s = call(ctx, FX_OP_ADD_TENSOR, 2, a);
        fx_ivalue_clear(&m);
        fx_ivalue_clear(&h);
        h = s;
    }
    a[0] = h;
    fx_ivalue out = call(ctx, FX_OP_SUM, 1, a);
    assert_int_equal(fx_tracer_finish(tr, &out, 1, &g_err), FX_OK);
    fx_graph *raw;
    fx_input_info *infos;
    int ninfos;
    assert_int_equal(fx_tracer_take(tr, &raw, &infos, &ninfos, &g_err), FX_OK);
    fx_named_tensor st[2] = {{(char *)"w", w}, {(char *)"cache", cache}};
    fx_program *ep = NULL;
    fx_export_opts eo = {0};
    assert_int_equal(fx_export_build(raw, infos, ninfos, st, 2, &eo, &ep, &g_err), FX_OK);
    fx_ivalue *all[] = {&out, &h, &slot, &k, &lin, &sh, &W, &C, &X};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) fx_ivalue_clear(all[i]);
    fx_tracer_free(tr);
    return ep;
}

typedef struct attrs {
    fx_tensor *w, *cache;
} attrs;

static int attr_fn(void *ud, const char *target, fx_tensor **out, fx_err *err) {
    attrs *a = ud;
    if (!strcmp(target, "w")) *out = a->w;
    else if (!strcmp(target, "cache")) *out = a->cache;
    else return fx_err_setf(err, FX_EARG, "no attribute %s", target);
    return FX_OK;
}

static bool same_bits(const fx_tensor *a, const fx_tensor *b) {
    if (fx_tensor_numel(a) != fx_tensor_numel(b)) return false;
    for (int64_t i = 0; i < fx_tensor_numel(a); i++)
        if (fx_tensor_flat_f64(a, i) != fx_tensor_flat_f64(b, i)) return false;
    return true;
}

static fx_tensor *clone(fx_tensor *t) {
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    fx_ivalue a = fx_iv_tensor(t);
    fx_tensor *c;
    assert_int_equal(fx_call_t(&eager, FX_OP_CLONE, &c, &g_err, 1, &a), FX_OK);
    fx_ivalue_clear(&a);
    return c;
}

/* Runs the unlifted step `steps` times planned and naive with fresh inputs each step; both keep
 * their own cache; every output and every cache must agree bit for bit. */
static void run_both(bool reinplace) {
    int64_t ws[2] = {8, 8}, cs[4] = {1, 6, 2, 4}, xs[3] = {1, 1, 8};
    fx_tensor *w = ramp(2, ws, 0.25, -1), *cache = ramp(4, cs, 0.1, 0), *x = ramp(3, xs, 1, 0);
    fx_program *ep = export_step(w, cache, x);
    fx_graph *g;
    assert_int_equal(fx_program_unlift(ep, &g, &g_err), FX_OK);
    if (reinplace) assert_int_equal(fx_pass_reinplace(g, NULL, &g_err), FX_OK);
    attrs pa = {w, clone(cache)}, na = {w, clone(cache)};
    fx_interp_opts po = {0}, no = {0};
    po.attr = no.attr = attr_fn;
    po.attr_ud = &pa;
    no.attr_ud = &na;
    no.naive = true;
    fx_interp *planned = NULL;
    int64_t calls_prev = -1;
    for (int step = 0; step < 6; step++) {
        fx_tensor *xi = ramp(3, xs, 1.0 + step, -step);
        fx_ivalue in = fx_iv_tensor_steal(xi), pr, nr;
        int64_t before = fx_alloc_get_stats().total_calls;
        if (!planned)
            assert_int_equal(fx_interp_new(g, &in, 1, &po, &planned, &g_err), FX_OK);
        else
            assert_int_equal(fx_interp_reset(planned, &in, 1, &g_err), FX_OK);
        assert_int_equal(fx_interp_run(planned, &g_err), FX_OK);
        assert_int_equal(fx_interp_take_outputs(planned, &pr, &g_err), FX_OK);
        int64_t calls = fx_alloc_get_stats().total_calls - before;
        assert_int_equal(fx_graph_run(g, &in, 1, &no, &nr, &g_err), FX_OK);
        assert_true(same_bits(pr.u.list.items[0].u.t, nr.u.list.items[0].u.t));
        assert_true(same_bits(pa.cache, na.cache));
        /* steady state: the same (small) number of allocations every step after the first */
        if (step >= 2) assert_int_equal(calls, calls_prev);
        if (step >= 1) assert_true(calls < 30);
        calls_prev = calls;
        fx_ivalue_clear(&pr);
        fx_ivalue_clear(&nr);
        fx_ivalue_clear(&in);
    }
    fx_interp_stats st;
    fx_interp_get_stats(planned, &st);
    assert_true(st.direct + st.inplace >= 11); /* linear, the mul/add chain (some reinplaced) */
    if (!reinplace) { /* the elementwise chain shares buffers */
        assert_true(st.buffers < st.direct);
        assert_true(st.pool_bytes < st.planned_bytes);
    }
    assert_true(st.view_hits > 0);
    if (reinplace) assert_true(st.inplace >= 1);
    fx_interp_free(planned);
    fx_tensor_release(pa.cache);
    fx_tensor_release(na.cache);
    fx_graph_free(g);
    fx_program_free(ep);
    fx_tensor_release(w);
    fx_tensor_release(cache);
    fx_tensor_release(x);
}

static void test_plan_functional(void **unused) {
    (void)unused;
    run_both(false);
}

static void test_plan_reinplaced(void **unused) {
    (void)unused;
    run_both(true);
}

/* The lifted (functional) program: mutation outputs are fresh tensors each run, so the caller can
 * keep them; running it twice gives equal, distinct results. */
static void test_outputs_are_fresh(void **unused) {
    (void)unused;
    int64_t ws[2] = {8, 8}, cs[4] = {1, 6, 2, 4}, xs[3] = {1, 1, 8};
    fx_tensor *w = ramp(2, ws, 0.25, -1), *cache = ramp(4, cs, 0.1, 0), *x = ramp(3, xs, 1, 0);
    fx_program *ep = export_step(w, cache, x);
    fx_ivalue in[3] = {fx_iv_tensor(w), fx_iv_tensor(cache), fx_iv_tensor(x)};
    fx_interp *it;
    fx_ivalue r1, r2;
    assert_int_equal(fx_interp_new(ep->graph, in, 3, NULL, &it, &g_err), FX_OK);
    assert_int_equal(fx_interp_run(it, &g_err), FX_OK);
    assert_int_equal(fx_interp_take_outputs(it, &r1, &g_err), FX_OK);
    assert_int_equal(fx_interp_reset(it, in, 3, &g_err), FX_OK);
    assert_int_equal(fx_interp_run(it, &g_err), FX_OK);
    assert_int_equal(fx_interp_take_outputs(it, &r2, &g_err), FX_OK);
    assert_int_equal(r1.u.list.n, 2);
    for (int k = 0; k < 2; k++) {
        assert_ptr_not_equal(r1.u.list.items[k].u.t, r2.u.list.items[k].u.t);
        assert_false(fx_tensor_same_storage(r1.u.list.items[k].u.t, r2.u.list.items[k].u.t));
        assert_true(same_bits(r1.u.list.items[k].u.t, r2.u.list.items[k].u.t));
    }
    /* the cache input was not written: the new version is an output */
    fx_tensor *c0 = ramp(4, cs, 0.1, 0);
    assert_true(same_bits(cache, c0));
    fx_tensor_release(c0);
    fx_ivalue_clear(&r1);
    fx_ivalue_clear(&r2);
    fx_interp_free(it);
    for (int i = 0; i < 3; i++) fx_ivalue_clear(&in[i]);
    fx_program_free(ep);
    fx_tensor_release(w);
    fx_tensor_release(cache);
    fx_tensor_release(x);
}

/* Meta inputs make the run produce meta values (every node through dispatch), as shape
 * propagation of the exported program. */
static void test_meta_inputs(void **unused) {
    (void)unused;
    int64_t ws[2] = {8, 8}, cs[4] = {1, 6, 2, 4}, xs[3] = {1, 1, 8};
    fx_tensor *w = ramp(2, ws, 0.25, -1), *cache = ramp(4, cs, 0.1, 0), *x = ramp(3, xs, 1, 0);
    fx_program *ep = export_step(w, cache, x);
    fx_tensor *mw, *mc, *mx;
    assert_int_equal(fx_tensor_empty(2, ws, FX_DTYPE_F32, FX_DEVICE_META, &mw, &g_err), FX_OK);
    assert_int_equal(fx_tensor_empty(4, cs, FX_DTYPE_F32, FX_DEVICE_META, &mc, &g_err), FX_OK);
    assert_int_equal(fx_tensor_empty(3, xs, FX_DTYPE_F32, FX_DEVICE_META, &mx, &g_err), FX_OK);
    fx_ivalue in[3] = {fx_iv_tensor_steal(mw), fx_iv_tensor_steal(mc), fx_iv_tensor_steal(mx)}, r;
    int rc = fx_graph_run(ep->graph, in, 3, NULL, &r, &g_err);
    if (rc) print_error("%s\n", g_err.msg);
    assert_int_equal(rc, FX_OK);
    assert_true(fx_tensor_is_meta(r.u.list.items[1].u.t));
    fx_ivalue_clear(&r);
    for (int i = 0; i < 3; i++) fx_ivalue_clear(&in[i]);
    fx_program_free(ep);
    fx_tensor_release(w);
    fx_tensor_release(cache);
    fx_tensor_release(x);
}

/* A node whose meta["val"] is wrong (here: set by hand to another shape) is not trusted: the
 * first run's meta check demotes it, and the results are still right. */
static void test_wrong_val_is_demoted(void **unused) {
    (void)unused;
    int64_t ws[2] = {8, 8}, cs[4] = {1, 6, 2, 4}, xs[3] = {1, 1, 8};
    fx_tensor *w = ramp(2, ws, 0.25, -1), *cache = ramp(4, cs, 0.1, 0), *x = ramp(3, xs, 1, 0);
    fx_program *ep = export_step(w, cache, x);
    fx_node *mul = fx_graph_find(ep->graph, "mul_2");
    assert_non_null(mul);
    int64_t wrong_sizes[1] = {128};
    fx_tensor *wrong;
    assert_int_equal(fx_tensor_empty(1, wrong_sizes, FX_DTYPE_F32, FX_DEVICE_META, &wrong, &g_err), FX_OK);
    fx_ivalue wv = fx_iv_tensor_steal(wrong);
    assert_int_equal(fx_node_set_val(mul, &wv, &g_err), FX_OK);
    fx_ivalue_clear(&wv);
    fx_ivalue in[3] = {fx_iv_tensor(w), fx_iv_tensor(cache), fx_iv_tensor(x)}, pr, nr;
    fx_interp_opts no = {0};
    no.naive = true;
    fx_interp *it;
    assert_int_equal(fx_interp_new(ep->graph, in, 3, NULL, &it, &g_err), FX_OK);
    fx_interp_stats before, after;
    fx_interp_get_stats(it, &before);
    assert_int_equal(fx_interp_run(it, &g_err), FX_OK);
    fx_interp_get_stats(it, &after);
    assert_int_equal(after.direct, before.direct - 1);
    assert_int_equal(fx_interp_take_outputs(it, &pr, &g_err), FX_OK);
    assert_int_equal(fx_graph_run(ep->graph, in, 3, &no, &nr, &g_err), FX_OK);
    for (int k = 0; k < 2; k++) assert_true(same_bits(pr.u.list.items[k].u.t, nr.u.list.items[k].u.t));
    fx_ivalue_clear(&pr);
    fx_ivalue_clear(&nr);
    fx_interp_free(it);
    for (int i = 0; i < 3; i++) fx_ivalue_clear(&in[i]);
    fx_program_free(ep);
    fx_tensor_release(w);
    fx_tensor_release(cache);
    fx_tensor_release(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_functional),
        cmocka_unit_test(test_plan_reinplaced),
        cmocka_unit_test(test_outputs_are_fresh),
        cmocka_unit_test(test_meta_inputs),
        cmocka_unit_test(test_wrong_val_is_demoted),
    };
    fx_err_clear(&g_err);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
