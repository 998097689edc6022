/* tests/unit/test_ops_table.c — how the op table gets its implementations (core/ops_table.c):
 * the registry alone has every op's schema but no meta function or kernel, dispatching before
 * fx_ctx_init is refused (not run with missing functions), fx_ctx_init installs them once, and
 * the hooks that let lower files reach the tracer answer as for no trace until a tracer exists.
 * The tests run in order in one fresh process: the first one must run before any fx_ctx_init.
 * Layer: tests (cmocka). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/fx.h"

static void test_before_install(void **state) {
    (void)state;
    fx_err err;
    fx_err_clear(&err);
    assert_int_equal(fx_registry_init(&err), FX_OK);
    assert_false(fx_registry_impls_installed());
    const fx_opdef *bmm = fx_op_lookup("bmm");
    assert_non_null(bmm);
    assert_string_equal(bmm->qualname, "bmm.default"); /* the data is there */
    assert_null(bmm->meta);
    assert_null(bmm->kernel);
    /* a context made without fx_ctx_init: refused, with a message saying what to do */
    fx_ctx raw;
    memset(&raw, 0, sizeof raw);
    int64_t n = 3;
    fx_ivalue sz, out;
    assert_int_equal(fx_iv_int_list(1, &n, &sz, &err), FX_OK);
    assert_int_equal(fx_call(&raw, FX_OP_ZEROS, &out, &err, 1, &sz), FX_EINTERNAL);
    assert_non_null(strstr(err.msg, "zeros.default: the op table is not installed"));
    assert_non_null(strstr(err.msg, "fx_ctx_init"));
    /* no tracer yet: the trace hooks answer as for a context that records nothing */
    assert_null(fx_trace_env_of(&raw, &err));
    fx_tensor *t;
    assert_int_equal(fx_tensor_zeros(1, &n, FX_DTYPE_F32, FX_DEVICE_CPU, &t, &err), FX_OK);
    assert_int_equal(fx_trace_keep_val(&raw, t, &err), FX_OK);
    fx_tensor_release(t);
    fx_ivalue_clear(&sz);
}

static void test_ctx_init_installs(void **state) {
    (void)state;
    fx_err err;
    fx_ctx eager;
    fx_ctx_init(&eager, FX_MODE_EAGER);
    assert_true(fx_registry_impls_installed());
    const fx_opdef *bmm = fx_op_lookup("bmm");
    assert_non_null(bmm->meta);
    assert_non_null(bmm->kernel);
    assert_null(fx_op_lookup("select.int")->kernel);  /* a view: fx_k_none is stored as NULL */
    assert_non_null(fx_op_lookup("reshape")->kernel); /* a composite: its decomposition */
    int installed_meta = 0;
    for (int i = 0; i < FX_OP_COUNT; i++) installed_meta += fx_op_get((fx_op_id)i)->meta != NULL;
    assert_true(installed_meta > FX_OP_COUNT / 2);
    /* the same pointers after a second init (installed once) */
    fx_op_fn m = bmm->meta;
    fx_ctx again;
    fx_ctx_init(&again, FX_MODE_META);
    assert_ptr_equal(fx_op_lookup("bmm")->meta, m);
    assert_int_equal(again.mode, FX_MODE_META);
    /* and ops run: also through a context zeroed by hand, now that the table is in */
    int64_t n = 3;
    fx_ivalue sz, out;
    assert_int_equal(fx_iv_int_list(1, &n, &sz, &err), FX_OK);
    fx_ctx raw;
    memset(&raw, 0, sizeof raw);
    assert_int_equal(fx_call(&raw, FX_OP_ONES, &out, &err, 1, &sz), FX_OK);
    assert_true(fx_tensor_flat_f64(out.u.t, 2) == 1.0);
    fx_ivalue_clear(&out);
    fx_ivalue_clear(&sz);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_before_install),
        cmocka_unit_test(test_ctx_init_installs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
