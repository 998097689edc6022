/* core/sym_dispatch.h — how dispatch runs an op whose inputs are symbolic (core/meta_sym.c).
 * Layer: core (private to dispatch.c and meta_sym.c). */
#ifndef FX_SYM_DISPATCH_H
#define FX_SYM_DISPATCH_H

#include "core/dispatch.h"

/* List copies made by fx_sym_hint_args, freed by fx_sym_hints_free. */
typedef struct fx_sym_hints {
    void *lists[FX_SCHEMA_MAX_ARGS];
    int n;
} fx_sym_hints;

/* The shape environment of the first symbolic value among op's arguments (a tensor with a
 * symbolic shape or a SymInt), or NULL when every argument is plain. Borrowed. */
fx_shape_env *fx_sym_args_env(const fx_opdef *op, const fx_ivalue *a);
/* Prepares a symbolic call: names the op for guards, specializes SymInts passed where the schema
 * says `int`, and says whether the op has a symbolic rule (*use_rule) or must specialize. */
int fx_sym_plan(const fx_opdef *op, fx_shape_env *env, const fx_ivalue *a, bool *use_rule,
                fx_err *err);
/* Guards every symbolic size, stride, offset and SymInt of the arguments equal to its hint. */
int fx_sym_specialize_args(const fx_opdef *op, const fx_ivalue *a, fx_err *err);
/* h = a with every SymInt (top level or list item) replaced by its hint; tensors and the rest
 * borrowed from a. */
int fx_sym_hint_args(const fx_opdef *op, const fx_ivalue *a, fx_ivalue *h, fx_sym_hints *keep,
                     fx_err *err);
void fx_sym_hints_free(fx_sym_hints *keep);
/* After the meta function made `out` from the hints h: gives the outputs their symbolic shapes
 * (the op's rule), or specializes the inputs when the rule cannot. */
int fx_sym_apply_rule(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h, fx_ivalue *out);

/* fx_dispatch's path for a call while a shape environment is live (fx_shape_env_live): a (the
 * normalized arguments) with symbolic values runs meta and kernel on their hints and gets
 * symbolic outputs from the op's rule; plain arguments run as usual. The dispatcher sits below
 * the rules (they name the meta functions), so core/ops_table.c installs this with
 * fx_dispatch_set_sym_hook. */
int fx_sym_dispatch(fx_opctx *oc, const fx_ivalue *a, fx_ivalue *out);
typedef int (*fx_sym_dispatch_fn)(fx_opctx *oc, const fx_ivalue *a, fx_ivalue *out);
void fx_dispatch_set_sym_hook(fx_sym_dispatch_fn fn);
/* The dispatcher's meta + kernel + record step on arguments m (recording a), for
 * fx_sym_dispatch; `rule` (fx_sym_apply_rule, or NULL) runs between meta and kernel. */
typedef int (*fx_sym_rule_fn)(fx_opctx *ctx, const fx_ivalue *a, const fx_ivalue *h,
                              fx_ivalue *out);
int fx_dispatch_run_op(fx_opctx *oc, const fx_ivalue *m, const fx_ivalue *a, fx_ivalue *out,
                       fx_sym_rule_fn rule);

#endif
