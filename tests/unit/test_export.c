/* tests/unit/test_export.c — trace, functionalize, export, print, provenance, unlift, run:
 * the core pipeline on the founding cases, without Lua.
 * Layer: tests (core only). Expected texts are PyTorch's printouts for the same programs (seed
 * case S1 of shared/cases/SEEDS.md), with fxdb's trailing-whitespace stripping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/fx.h"
#include "tests/unit/kb_util.h"

static fx_tensor *tensor_f(fx_dtype dt, int n, const double *v) {
    int64_t size = n;
    fx_tensor *t;
    fx_err err;
    fx_err_clear(&err);
    assert_int_equal(fx_tensor_empty(1, &size, dt, FX_DEVICE_CPU, &t, &err), FX_OK);
    for (int64_t i = 0; i < n; i++) fx_tensor_set_f64(t, &i, v[i]);
    return t;
}

static void assert_values(const fx_tensor *t, int n, const double *want) {
    assert_int_equal(fx_tensor_numel(t), n);
    for (int i = 0; i < n; i++) assert_true(fx_tensor_flat_f64(t, i) == want[i]);
}

/* Seed S1: state.mul_(x:type(f16)); state.add_(tensor([1, 2, 3], f16)); return state * 9 */
static fx_program *export_s1(fx_tensor *state, fx_tensor *x_example, fx_err *err) {
    fx_trace_opts o = {0};
    fx_tracer *tr = fx_tracer_new(&o, err);
    assert_non_null(tr);
    fx_ctx *ctx = fx_tracer_ctx(tr);
    fx_tensor *b, *x;
    assert_int_equal(fx_tracer_input(tr, FX_INPUT_BUFFER, "b_state", "state", true, state, &b, err), FX_OK);
    assert_int_equal(fx_tracer_input(tr, FX_INPUT_USER_INPUT, "x", NULL, false, x_example, &x, err), FX_OK);
    fx_ivalue bv = fx_iv_tensor_steal(b), xv = fx_iv_tensor_steal(x), r;
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0};
    /* x = x.type(torch.float16) -> _to_copy(x, dtype=f16) */
    args[0] = xv;
    args[1] = fx_iv_dtype(FX_DTYPE_F16);
    fx_ivalue outs[FX_SCHEMA_MAX_RETS];
    assert_int_equal(fx_dispatch(ctx, fx_op_get(FX_OP__TO_COPY), args, outs, err), FX_OK);
    fx_ivalue x16 = outs[0];
    assert_int_equal(fx_call(ctx, FX_OP_MUL__TENSOR, &r, err, 2, &bv, &x16), FX_OK);
    fx_ivalue_clear(&r);
    double c[3] = {1, 2, 3};
    fx_tensor *cv = tensor_f(FX_DTYPE_F16, 3, c), *ct;
    assert_int_equal(fx_tracer_constant(tr, cv, &ct, err), FX_OK);
    fx_tensor_release(cv);
    fx_ivalue ctv = fx_iv_tensor_steal(ct), nine = fx_iv_int(9);
    assert_int_equal(fx_call(ctx, FX_OP_ADD__TENSOR, &r, err, 2, &bv, &ctv), FX_OK);
    fx_ivalue_clear(&r);
    fx_ivalue out;
    assert_int_equal(fx_call(ctx, FX_OP_MUL_TENSOR, &out, err, 2, &bv, &nine), FX_OK);
    assert_int_equal(fx_tracer_finish(tr, &out, 1, err), FX_OK);
    fx_graph *raw;
    fx_input_info *infos;
    int ninfos;
    assert_int_equal(fx_tracer_take(tr, &raw, &infos, &ninfos, err), FX_OK);
    fx_named_tensor st = {(char *)"state", state};
    fx_program *ep = NULL;
    fx_export_opts eo = {0};
    int rc = fx_export_build(raw, infos, ninfos, &st, 1, &eo, &ep, err);
    fx_ivalue_clear(&out);
    fx_ivalue_clear(&ctv);
    fx_ivalue_clear(&x16);
    fx_ivalue_clear(&bv);
    fx_ivalue_clear(&xv);
    fx_tracer_free(tr);
    return rc == FX_OK ? ep : NULL;
}

/* Seed S1 exported once per test: state [7, 5, 6] (float16), x = [1.5, 2, -1] (float32). */
typedef struct s1_fixture {
    fx_tensor *state, *x; /* one reference each */
    fx_program *ep;       /* owned */
} s1_fixture;

static int s1_setup(void **fixture) {
    double sv[3] = {7, 5, 6}, xv[3] = {1.5, 2, -1};
    s1_fixture *f = calloc(1, sizeof *f);
    fx_err err;
    fx_err_clear(&err);
    f->state = tensor_f(FX_DTYPE_F16, 3, sv);
    f->x = tensor_f(FX_DTYPE_F32, 3, xv);
    f->ep = export_s1(f->state, f->x, &err);
    *fixture = f;
    return f->ep ? 0 : -1;
}

static int s1_teardown(void **fixture) {
    s1_fixture *f = *fixture;
    fx_program_free(f->ep);
    fx_tensor_release(f->state);
    fx_tensor_release(f->x);
    free(f);
    return 0;
}

static const char k_s1_program[] =
    "ExportedProgram:\n"
    "    class GraphModule(torch.nn.Module):\n"
    "        def forward(self, b_state: \"f16[3]\", c_lifted_tensor_0: \"f16[3]\", x: \"f32[3]\"):\n"
    "            _to_copy: \"f16[3]\" = torch.ops.aten._to_copy.default(x, dtype = torch.float16);  x = None\n"
    "            mul: \"f16[3]\" = torch.ops.aten.mul.Tensor(b_state, _to_copy);  b_state = _to_copy = None\n"
    "            lift_fresh_copy: \"f16[3]\" = torch.ops.aten.lift_fresh_copy.default(c_lifted_tensor_0);  c_lifted_tensor_0 = None\n"
    "            add: \"f16[3]\" = torch.ops.aten.add.Tensor(mul, lift_fresh_copy);  mul = lift_fresh_copy = None\n"
    "            mul_1: \"f16[3]\" = torch.ops.aten.mul.Tensor(add, 9)\n"
    "            return (add, mul_1)\n"
    "\n"
    "Graph signature:\n"
    "    # inputs\n"
    "    b_state: BUFFER target='state' persistent=True\n"
    "    c_lifted_tensor_0: CONSTANT_TENSOR target='lifted_tensor_0'\n"
    "    x: USER_INPUT\n"
    "\n"
    "    # outputs\n"
    "    add: BUFFER_MUTATION target='state'\n"
    "    mul_1: USER_OUTPUT\n"
    "\n"
    "Range constraints: {}\n";

static void test_s1_program_text(void **fixture) {
    s1_fixture *f = *fixture;
    fx_program *ep = f->ep;
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_program_format(&sb, ep);
    assert_string_equal(fx_strbuf_cstr(&sb), k_s1_program);
    fx_strbuf_free(&sb);
    /* The state itself is untouched by export. */
    const double sv[3] = {7, 5, 6};
    assert_values(f->state, 3, sv);
}

static void test_s1_listing(void **fixture) {
    s1_fixture *f = *fixture;
    fx_program *ep = f->ep;
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_graph_format_listing(&sb, ep->graph);
    assert_string_equal(
        fx_strbuf_cstr(&sb),
        "graph():\n"
        "    %b_state : [num_users=1] = placeholder[target=b_state]\n"
        "    %c_lifted_tensor_0 : [num_users=1] = placeholder[target=c_lifted_tensor_0]\n"
        "    %x : [num_users=1] = placeholder[target=x]\n"
        "    %_to_copy : [num_users=1] = call_function[target=torch.ops.aten._to_copy.default](args = (%x,), kwargs = {dtype: torch.float16})\n"
        "    %mul : [num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%b_state, %_to_copy), kwargs = {})\n"
        "    %lift_fresh_copy : [num_users=1] = call_function[target=torch.ops.aten.lift_fresh_copy.default](args = (%c_lifted_tensor_0,), kwargs = {})\n"
        "    %add : [num_users=2] = call_function[target=torch.ops.aten.add.Tensor](args = (%mul, %lift_fresh_copy), kwargs = {})\n"
        "    %mul_1 : [num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%add, 9), kwargs = {})\n"
        "    return (add, mul_1)\n");
    fx_strbuf_free(&sb);
    /* The raw graph keeps the in-place ops. */
    {
        fx_strbuf rb = FX_STRBUF_INIT;
        fx_graph_format_listing(&rb, ep->raw);
        assert_non_null(strstr(fx_strbuf_cstr(&rb), "torch.ops.aten.mul_.Tensor](args = (%b_state, %_to_copy)"));
        assert_non_null(strstr(fx_strbuf_cstr(&rb), "torch.ops.aten.add_.Tensor](args = (%mul_, %lift_fresh_copy)"));
        fx_strbuf_free(&rb);
    }
}

static void test_s1_provenance(void **fixture) {
    s1_fixture *f = *fixture;
    fx_program *ep = f->ep;
    fx_err err;
    fx_err_clear(&err);
    fx_provenance *pv;
    assert_int_equal(fx_provenance_walk(ep, "state", &pv, &err), FX_OK);
    assert_int_equal(pv->nsteps, 3);
    assert_string_equal(pv->output, "add");
    assert_int_equal(pv->steps[0].version, 0);
    assert_string_equal(pv->steps[0].node->name, "b_state");
    assert_string_equal(pv->steps[1].node->name, "mul");
    assert_string_equal(pv->steps[1].from_op, "aten.mul_.Tensor");
    assert_string_equal(pv->steps[2].node->name, "add");
    assert_string_equal(pv->steps[2].from_op, "aten.add_.Tensor");
    fx_provenance_free(pv);
    assert_int_equal(fx_provenance_walk(ep, "nope", &pv, &err), FX_EARG);
}

static int attr_two(void *ud, const char *target, fx_tensor **out, fx_err *err) {
    fx_named_tensor *v = ud;
    for (int i = 0; i < 2; i++)
        if (!strcmp(v[i].name, target)) {
            *out = v[i].t;
            return FX_OK;
        }
    return fx_err_setf(err, FX_EARG, "no %s", target);
}

/* Calls the unlifted S1 graph `calls` times on x = [1.5, 2, -1], with its own state [7, 5, 6],
 * checking each call's output and state against eager PyTorch's numbers (float16). */
static void run_s1_unlifted(fx_graph *g, fx_tensor *x, int calls) {
    static const double outs[2][3] = {{103.5, 108, -27}, {164.25, 234, 54}};
    static const double states[2][3] = {{11.5, 12, -3}, {18.25, 26, 6}};
    double sv[3] = {7, 5, 6}, cv[3] = {1, 2, 3};
    fx_err err;
    fx_err_clear(&err);
    fx_tensor *mine = tensor_f(FX_DTYPE_F16, 3, sv), *konst = tensor_f(FX_DTYPE_F16, 3, cv);
    fx_named_tensor attrs[2] = {{(char *)"state", mine}, {(char *)"lifted_tensor_0", konst}};
    fx_interp_opts o = {0};
    o.attr = attr_two;
    o.attr_ud = attrs;
    fx_ivalue in = fx_iv_tensor(x), res;
    for (int c = 0; c < calls; c++) {
        assert_int_equal(fx_graph_run(g, &in, 1, &o, &res, &err), FX_OK);
        assert_int_equal(fx_tensor_dtype(res.u.list.items[0].u.t), FX_DTYPE_F16);
        assert_values(res.u.list.items[0].u.t, 3, outs[c]);
        assert_values(mine, 3, states[c]);
        fx_ivalue_clear(&res);
    }
    fx_ivalue_clear(&in);
    fx_tensor_release(mine);
    fx_tensor_release(konst);
}

/* The unlifted module called twice: S1's numbers, as eager PyTorch gives them. */
static void test_s1_unlifted_twice(void **fixture) {
    s1_fixture *f = *fixture;
    fx_program *ep = f->ep;
    fx_err err;
    fx_err_clear(&err);
    fx_graph *g;
    assert_int_equal(fx_program_unlift(ep, &g, &err), FX_OK);
    /* ends with copy_(state, add) */
    fx_node *last = fx_graph_output_node(g)->prev;
    assert_non_null(last->aten);
    assert_string_equal(last->target, "aten.copy_.default");
    run_s1_unlifted(g, f->x, 2);
    fx_graph_free(g);
}

/* reinplace on S1: mul and add on the buffer's latest version become mul_ / add_ on the buffer,
 * the trailing copy_ disappears, mul_1 (a user output) stays functional; same numbers. */
static void test_s1_reinplace(void **fixture) {
    s1_fixture *f = *fixture;
    fx_program *ep = f->ep;
    fx_err err;
    fx_err_clear(&err);
    fx_graph *g;
    assert_int_equal(fx_program_unlift(ep, &g, &err), FX_OK);
    int count = 0;
    assert_int_equal(fx_pass_reinplace(g, &count, &err), FX_OK);
    assert_int_equal(count, 2);
    fx_strbuf sb = FX_STRBUF_INIT;
    for (fx_node *n = fx_graph_first(g); n; n = n->next)
        if (n->op == FX_NODE_CALL_FUNCTION) fx_strbuf_appendf(&sb, "%s ", n->target);
    assert_string_equal(fx_strbuf_cstr(&sb), "aten._to_copy.default aten.mul_.Tensor "
                                             "aten.lift_fresh_copy.default aten.add_.Tensor "
                                             "aten.mul.Tensor ");
    fx_strbuf_free(&sb);
    run_s1_unlifted(g, f->x, 2);
    fx_graph_free(g);
}

/* ---- allocation failures over the whole pipeline -------------------------------------------- */

/* Seed S1 through every stage with each error returned, never asserted: trace, functionalize and
 * export, unlift, reinplace, the interpreter. Everything it makes it frees, on every path. */
static int s1_pipeline(void) {
    fx_err err;
    fx_err_clear(&err);
    const double sv[3] = {7, 5, 6}, xvals[3] = {1.5, 2, -1}, cvals[3] = {1, 2, 3};
    int64_t three = 3;
    fx_tensor *state = NULL, *x = NULL, *cv = NULL, *konst = NULL, *b = NULL, *xt = NULL,
              *ct = NULL;
    fx_tracer *tr = NULL;
    fx_program *ep = NULL;
    fx_graph *g = NULL, *raw = NULL;
    fx_input_info *infos = NULL;
    int ninfos = 0;
    fx_ivalue bv = {0}, xv = {0}, x16 = {0}, r = {0}, ctv = {0}, out = {0}, res = {0}, in = {0};
    int rc;
    if ((rc = fx_tensor_empty(1, &three, FX_DTYPE_F16, FX_DEVICE_CPU, &state, &err)) ||
        (rc = fx_tensor_empty(1, &three, FX_DTYPE_F32, FX_DEVICE_CPU, &x, &err)) ||
        (rc = fx_tensor_empty(1, &three, FX_DTYPE_F16, FX_DEVICE_CPU, &cv, &err)) ||
        (rc = fx_tensor_empty(1, &three, FX_DTYPE_F16, FX_DEVICE_CPU, &konst, &err)))
        goto done;
    for (int64_t i = 0; i < 3; i++) {
        fx_tensor_set_f64(state, &i, sv[i]);
        fx_tensor_set_f64(x, &i, xvals[i]);
        fx_tensor_set_f64(cv, &i, cvals[i]);
        fx_tensor_set_f64(konst, &i, cvals[i]);
    }
    fx_trace_opts o = {0};
    if (!(tr = fx_tracer_new(&o, &err))) {
        rc = err.code;
        goto done;
    }
    fx_ctx *ctx = fx_tracer_ctx(tr);
    if ((rc = fx_tracer_input(tr, FX_INPUT_BUFFER, "b_state", "state", true, state, &b, &err)))
        goto done;
    bv = fx_iv_tensor_steal(b);
    if ((rc = fx_tracer_input(tr, FX_INPUT_USER_INPUT, "x", NULL, false, x, &xt, &err))) goto done;
    xv = fx_iv_tensor_steal(xt);
    fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {xv, fx_iv_dtype(FX_DTYPE_F16)};
    fx_ivalue outs[FX_SCHEMA_MAX_RETS];
    if ((rc = fx_dispatch(ctx, fx_op_get(FX_OP__TO_COPY), args, outs, &err))) goto done;
    x16 = outs[0];
    if ((rc = fx_call(ctx, FX_OP_MUL__TENSOR, &r, &err, 2, &bv, &x16))) goto done;
    fx_ivalue_clear(&r);
    if ((rc = fx_tracer_constant(tr, cv, &ct, &err))) goto done;
    ctv = fx_iv_tensor_steal(ct);
    if ((rc = fx_call(ctx, FX_OP_ADD__TENSOR, &r, &err, 2, &bv, &ctv))) goto done;
    fx_ivalue_clear(&r);
    fx_ivalue nine = fx_iv_int(9);
    if ((rc = fx_call(ctx, FX_OP_MUL_TENSOR, &out, &err, 2, &bv, &nine))) goto done;
    if ((rc = fx_tracer_finish(tr, &out, 1, &err))) goto done;
    if ((rc = fx_tracer_take(tr, &raw, &infos, &ninfos, &err))) goto done;
    fx_named_tensor st = {(char *)"state", state};
    fx_export_opts eo = {0};
    rc = fx_export_build(raw, infos, ninfos, &st, 1, &eo, &ep, &err); /* owns raw and infos */
    if (rc) goto done;
    if ((rc = fx_program_unlift(ep, &g, &err))) goto done;
    if ((rc = fx_pass_reinplace(g, NULL, &err))) goto done;
    fx_named_tensor attrs[2] = {{(char *)"state", state}, {(char *)"lifted_tensor_0", konst}};
    fx_interp_opts io = {0};
    io.attr = attr_two;
    io.attr_ud = attrs;
    in = fx_iv_tensor(x);
    if ((rc = fx_graph_run(g, &in, 1, &io, &res, &err))) goto done;
    /* the numbers survive whatever failed before in the sweep: S1's first call */
    const double want[3] = {103.5, 108, -27};
    for (int i = 0; i < 3; i++)
        if (fx_tensor_flat_f64(res.u.list.items[0].u.t, i) != want[i]) rc = FX_EINTERNAL;
done:
    fx_ivalue_clear(&res);
    fx_ivalue_clear(&in);
    fx_graph_free(g);
    fx_program_free(ep);
    fx_ivalue_clear(&out);
    fx_ivalue_clear(&ctv);
    fx_ivalue_clear(&x16);
    fx_ivalue_clear(&bv);
    fx_ivalue_clear(&xv);
    fx_tracer_free(tr);
    fx_tensor_release(state);
    fx_tensor_release(x);
    fx_tensor_release(cv);
    fx_tensor_release(konst);
    return rc;
}

/* Fails allocation N of the pipeline (and every later one), for every N until it succeeds: each
 * failed run must report FX_ENOMEM and leave no block behind (kb_oom_sweep). */
static void test_s1_pipeline_allocation_failures(void **state) {
    (void)state;
    assert_int_equal(s1_pipeline(), FX_OK);
    int points = kb_oom_sweep(s1_pipeline);
    print_message("S1 pipeline: %d allocation points, each failed cleanly\n", points);
    assert_true(points > 100);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_s1_program_text, s1_setup, s1_teardown),
        cmocka_unit_test_setup_teardown(test_s1_listing, s1_setup, s1_teardown),
        cmocka_unit_test_setup_teardown(test_s1_provenance, s1_setup, s1_teardown),
        cmocka_unit_test_setup_teardown(test_s1_unlifted_twice, s1_setup, s1_teardown),
        cmocka_unit_test_setup_teardown(test_s1_reinplace, s1_setup, s1_teardown),
        cmocka_unit_test(test_s1_pipeline_allocation_failures),
    };
    return cmocka_run_group_tests_name("export", tests, NULL, NULL);
}
