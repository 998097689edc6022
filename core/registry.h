/* core/registry.h — the op table, built from core/ops.def.
 * Layer: core. Each op is known by its ATen name and overload ("add.Tensor"; "mm.default" for
 * ops without an overload name). The table is built once, on first use, by parsing every schema
 * string; lookups never allocate. */
#ifndef FX_REGISTRY_H
#define FX_REGISTRY_H

#include <stdbool.h>

#include "core/fx_err.h"
#include "core/ivalue.h"
#include "core/schema.h"

typedef enum fx_op_id {
#define FX_OP(id, schema, meta, kernel, twin, scatter, flags) FX_OP_##id,
#include "core/ops.def"
#undef FX_OP
    FX_OP_COUNT,
    FX_OP_NONE = -1
} fx_op_id;

enum fx_op_flags {
    FX_OPF_COMPOSITE = 1 << 0, /* implemented by calling other ops; never recorded itself */
    FX_OPF_CREATION = 1 << 1,  /* no tensor inputs; device from the dispatch mode */
    FX_OPF_RANDOM = 1 << 2,    /* reads the global generator */
    FX_OPF_CUSTOM = 1 << 3,    /* registered at run time (torch.library), not from ops.def */
    FX_OPF_EFFECTFUL = 1 << 4, /* an ordered side effect (torch.library._register_effectful_op):
                                  threaded through a token by functionalization (with_effects),
                                  never removed by DCE */
    FX_OPF_COMPLEX = 1 << 5,   /* meta and kernel handle complex64/complex128 operands and
                                  results; the dispatcher refuses complex for other computing
                                  ops (views, composites and custom ops need no flag) */
    FX_OPF_ASSERT = 1 << 6,    /* a runtime assert (_assert_scalar, sym_constrain_range_for_size):
                                  never dead code, no effect token (torch.fx's
                                  _side_effectful_functions) */
    FX_OPF_INPLACE = 1 << 8,   /* derived: some argument is (a!) */
    FX_OPF_VIEW = 1 << 9,      /* derived: a return aliases an argument without writing */
};

typedef struct fx_opctx fx_opctx;
/* Meta functions, kernels and composites share this signature: `a` holds schema->nargs
 * normalized arguments (defaults filled in; borrowed), `out` receives schema->nrets results
 * (new references, owned by the caller). Return FX_OK or an error in ctx->err. */
typedef int (*fx_op_fn)(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out);

typedef struct fx_opdef {
    fx_op_id id;
    const char *schema_text; /* as written in ops.def */
    fx_schema schema;        /* parsed */
    char qualname[96];       /* "add.Tensor", "mm.default" */
    char ns[32];             /* namespace: "aten", or a custom op's ("mylib") */
    char target[128];        /* "aten.add.Tensor", "mylib.update_cache.default": what graphs
                                print after "torch.ops." */
    void *ud;                /* a custom op's user data (the layer that registered it); NULL */
    fx_op_fn meta;
    fx_op_fn kernel;         /* NULL when there is nothing to compute (views) */
    fx_op_id twin;           /* in-place -> functional, else FX_OP_NONE */
    fx_op_id scatter;        /* view -> scatter op or inverse view, else FX_OP_NONE */
    unsigned flags;          /* FX_OPF_* */
} fx_opdef;

/* Builds the table (idempotent). FX_EINTERNAL naming the op when a schema string is malformed:
 * a bug in ops.def, reported not aborted. Every other function here calls it lazily. */
int fx_registry_init(fx_err *err);

/* The table's function pointers for ops.def's ops. The registry sits below the files that
 * implement the ops (meta functions, kernels and composites call ops through the dispatcher and
 * look them up here), so it does not name them: core/ops_table.c, above them, hands them over
 * with fx_registry_set_impls (FX_OP_COUNT entries in ops.def order, static storage; fx_nometa
 * and fx_k_none stand for "none" and become NULL). fx_ops_install (core/ops_table.c) does it
 * once per process, with the dispatcher's symbolic path; fx_ctx_init calls fx_ops_install, so
 * every caller that dispatches has them. Until then meta and kernel of ops.def's ops are NULL
 * and fx_dispatch refuses to run (FX_EINTERNAL). */
typedef struct fx_op_impl {
    fx_op_fn meta, kernel;
} fx_op_impl;
void fx_registry_set_impls(const fx_op_impl *impls);
/* True once fx_registry_set_impls ran. */
bool fx_registry_impls_installed(void);
/* Installs ops.def's implementations (above); idempotent and thread-safe. */
void fx_ops_install(void);
/* The op with this id; NULL when out of range. */
const fx_opdef *fx_op_get(fx_op_id id);
/* Looks up "add.Tensor", "aten::add.Tensor", "aten.add.Tensor", "torch.ops.aten.add.Tensor" or
 * "mm" (= "mm.default"); a custom op by "mylib::foo", "mylib::foo.default", "mylib.foo.default"
 * or "torch.ops.mylib.foo.default". NULL when unknown. */
const fx_opdef *fx_op_lookup(const char *qualname);
/* Registers a custom op at run time (torch.library.define): `ns` ("mylib", not "aten"), `schema`
 * in the ops.def grammar ("update_cache(Tensor value, Tensor(a!) cache, int pos) -> ()"), its
 * meta function and kernel (either may be NULL: the caller reports the missing one), user data,
 * and FX_OPF_* flags. The op gets an id >= FX_OP_COUNT and lives until exit; *out is the entry
 * (the caller may later change meta, kernel and flags, as torch.library.impl does). Errors:
 * FX_EARG for a malformed schema, a bad namespace, or a name+overload already registered
 * ("Tried to register an operator (mylib::foo) with the same name and overload name multiple
 * times", as c10's Dispatcher says); FX_ENOMEM. */
int fx_op_register(const char *ns, const char *schema, fx_op_fn meta, fx_op_fn kernel, void *ud,
                   unsigned flags, fx_opdef **out, fx_err *err);
/* How many ops there are (ops.def plus runtime-registered): ids are 0..fx_op_total()-1. */
int fx_op_total(void);
/* All overloads of an ATen op name ("add"), in ops.def order; returns how many (<= max) were put in
 * out. */
int fx_op_overloads(const char *name, const fx_opdef **out, int max);
/* "add.Tensor" (name.overload, without the namespace; op->target has it). Owned by the
 * registry, valid for the process lifetime. */
const char *fx_op_qualname(const fx_opdef *op);
bool fx_op_is_inplace(const fx_opdef *op);
bool fx_op_is_view(const fx_opdef *op);

#endif
