/* core/ops_table.c — ops.def's implementations, installed into the op table; fx_ctx_init.
 * Layer: core, at the top of the op files. The registry (core/registry.c) holds the table's data
 * (schemas, twins, scatters, flags) and sits at the bottom: the meta functions (core/meta_*.c),
 * composites (core/composite*.c) and the dispatcher look ops up in it, and meta functions and
 * composites call ops through the dispatcher. This file names them all (every meta function,
 * kernel and composite of ops.def, and core/meta_sym.c's symbolic path) and hands them down
 * once per process, so no file below calls one above it by name:
 *
 *   registry -> dispatch -> meta_* / composite* (kernels) -> meta_sym -> ops_table
 *
 * fx_ctx_init lives here because every caller that dispatches makes a context first: it is the
 * one entry point that pulls this file into a program linked with libfxdb.a and installs the
 * table before any op runs. */
#include <pthread.h>
#include <string.h>

#include "core/ops_impl.h"
#include "core/sym_dispatch.h"

static const fx_op_impl k_impls[] = {
#define FX_OP(id, schema, meta, kernel, twin, scatter, flags) {meta, kernel},
#include "core/ops.def"
#undef FX_OP
};
_Static_assert(sizeof k_impls / sizeof k_impls[0] == FX_OP_COUNT, "ops.def table");

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* The symbolic path first: fx_dispatch takes an installed table to mean both are in. */
static void install(void) {
    fx_dispatch_set_sym_hook(fx_sym_dispatch);
    fx_registry_set_impls(k_impls);
}

void fx_ops_install(void) { pthread_once(&g_once, install); }

void fx_ctx_init(fx_ctx *ctx, fx_mode mode) {
    fx_ops_install();
    memset(ctx, 0, sizeof *ctx);
    ctx->mode = mode;
}
