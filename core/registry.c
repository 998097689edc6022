/* core/registry.c — builds the op table from ops.def and looks ops up by name.
 * Layer: core. The table is static storage filled once; ops never move, so `const fx_opdef *`
 * handles stay valid for the process lifetime. */
#include "core/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops_impl.h"

int fx_k_none(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)a, (void)out;
    return fx_err_setf(ctx->err, FX_EINTERNAL, "fx_k_none called");
}
int fx_nometa(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    (void)a, (void)out;
    return fx_err_setf(ctx->err, FX_EINTERNAL, "fx_nometa called");
}

static fx_opdef g_ops[FX_OP_COUNT];
static int g_ready; /* 0 not built, 1 built, -1 failed */
/* Op ids sorted by (name, id) and by qualname: lookups binary-search them (the Lua binding
 * resolves a name on every call). */
static int g_by_name[FX_OP_COUNT], g_by_qualname[FX_OP_COUNT];

static int cmp_by_name(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    int c = strcmp(g_ops[x].schema.name, g_ops[y].schema.name);
    return c ? c : x - y;
}
static int cmp_by_qualname(const void *a, const void *b) {
    return strcmp(g_ops[*(const int *)a].qualname, g_ops[*(const int *)b].qualname);
}
static fx_err g_init_err;

/* ops.def's data; the meta functions and kernels come from core/ops_table.c
 * (fx_registry_set_impls). */
static const struct {
    const char *schema;
    fx_op_id twin, scatter;
    unsigned flags;
} k_table[] = {
#define FX_OP(id, schema, meta, kernel, twin, scatter, flags) \
    {schema, FX_OP_##twin, FX_OP_##scatter, flags},
#include "core/ops.def"
#undef FX_OP
};
_Static_assert(sizeof k_table / sizeof k_table[0] == FX_OP_COUNT, "ops.def table");

/* Frees the parsed schemas' default values at exit, so leak checkers see a clean heap. */
/* Runtime-registered (custom) ops, ids FX_OP_COUNT + i; never freed before exit. */
#define FX_RT_MAX 256
static fx_opdef *g_rt[FX_RT_MAX];
static int g_nrt;

static void registry_free(void) {
    for (int i = 0; i < FX_OP_COUNT; i++) fx_schema_clear(&g_ops[i].schema);
    for (int i = 0; i < g_nrt; i++) {
        fx_schema_clear(&g_rt[i]->schema);
        free(g_rt[i]);
        g_rt[i] = NULL;
    }
    g_nrt = 0;
    g_ready = 0;
}

static const fx_op_impl *g_impls; /* from core/ops_table.c */

static void apply_impls(const fx_op_impl *impls) {
    for (int i = 0; i < FX_OP_COUNT; i++) {
        fx_opdef *op = &g_ops[i];
        op->meta = impls[i].meta == fx_nometa ? NULL : impls[i].meta;
        op->kernel = impls[i].kernel == fx_k_none ? NULL : impls[i].kernel;
    }
}

/* The entries are filled before the table counts as installed, so a dispatch that sees it
 * installed sees them. */
void fx_registry_set_impls(const fx_op_impl *impls) {
    if (fx_registry_init(NULL) == FX_OK) apply_impls(impls);
    __atomic_store_n(&g_impls, impls, __ATOMIC_RELEASE);
}

bool fx_registry_impls_installed(void) {
    return __atomic_load_n(&g_impls, __ATOMIC_ACQUIRE) != NULL;
}

int fx_registry_init(fx_err *err) {
    if (g_ready == 1) return FX_OK;
    if (g_ready == -1) {
        if (err) *err = g_init_err;
        return FX_EINTERNAL;
    }
    for (int i = 0; i < FX_OP_COUNT; i++) {
        fx_opdef *op = &g_ops[i];
        op->id = (fx_op_id)i;
        op->schema_text = k_table[i].schema;
        fx_err e;
        fx_err_clear(&e);
        if (fx_schema_parse(op->schema_text, &op->schema, &e)) {
            fx_err_setf(&g_init_err, FX_EINTERNAL, "ops.def: %s", e.msg);
            g_ready = -1;
            if (err) *err = g_init_err;
            return FX_EINTERNAL;
        }
        char qn[sizeof op->qualname];
        snprintf(qn, sizeof qn, "%s.%s", op->schema.name, op->schema.overload);
        memcpy(op->qualname, qn, sizeof qn);
        memcpy(op->ns, "aten", 5);
        snprintf(op->target, sizeof op->target, "aten.%s", qn);
        op->twin = k_table[i].twin;
        op->scatter = k_table[i].scatter;
        op->flags = k_table[i].flags;
        if (op->schema.mutated_arg >= 0) op->flags |= FX_OPF_INPLACE;
        if (op->schema.view_arg >= 0 && !(op->flags & FX_OPF_COMPOSITE)) op->flags |= FX_OPF_VIEW;
    }
    if (g_impls) apply_impls(g_impls);
    for (int i = 0; i < FX_OP_COUNT; i++) g_by_name[i] = g_by_qualname[i] = i;
    qsort(g_by_name, FX_OP_COUNT, sizeof g_by_name[0], cmp_by_name);
    qsort(g_by_qualname, FX_OP_COUNT, sizeof g_by_qualname[0], cmp_by_qualname);
    g_ready = 1;
    atexit(registry_free);
    return FX_OK;
}

const fx_opdef *fx_op_get(fx_op_id id) {
    if (fx_registry_init(NULL) || id < 0) return NULL;
    if (id >= FX_OP_COUNT) return (int)id - FX_OP_COUNT < g_nrt ? g_rt[id - FX_OP_COUNT] : NULL;
    return &g_ops[id];
}

int fx_op_total(void) { return FX_OP_COUNT + g_nrt; }

static bool valid_ident(const char *s) {
    if (!*s || (*s >= '0' && *s <= '9')) return false;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

/* A custom op by "ns::name[.overload]", "ns.name.overload" or "ns.name" (no "torch.ops."). */
static const fx_opdef *lookup_custom(const char *q) {
    char buf[160];
    const char *cc = strstr(q, "::");
    if (cc) { /* ns::name[.overload] -> ns.name.overload */
        snprintf(buf, sizeof buf, "%.*s.%s%s", (int)(cc - q), q, cc + 2,
                 strchr(cc + 2, '.') ? "" : ".default");
        q = buf;
    } else {
        const char *d1 = strchr(q, '.');
        if (d1 && !strchr(d1 + 1, '.')) { /* ns.name */
            snprintf(buf, sizeof buf, "%s.default", q);
            q = buf;
        }
    }
    for (int i = 0; i < g_nrt; i++)
        if (!strcmp(g_rt[i]->target, q)) return g_rt[i];
    return NULL;
}

int fx_op_register(const char *ns, const char *schema, fx_op_fn meta, fx_op_fn kernel, void *ud,
                   unsigned flags, fx_opdef **out, fx_err *err) {
    *out = NULL;
    int rc = fx_registry_init(err);
    if (rc) return rc;
    if (!ns || !valid_ident(ns) || strlen(ns) >= sizeof g_ops[0].ns || !strcmp(ns, "aten") ||
        !strcmp(ns, "prim") || !strcmp(ns, "higher_order"))
        return fx_err_setf(err, FX_EARG,
                           "namespace '%s' cannot hold custom ops (a Python identifier other "
                           "than aten, prim, higher_order)", ns ? ns : "");
    if (g_nrt >= FX_RT_MAX)
        return fx_err_setf(err, FX_EARG, "too many custom ops (at most %d)", FX_RT_MAX);
    fx_opdef *op = calloc(1, sizeof *op);
    if (!op) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    fx_err e;
    fx_err_clear(&e);
    if (fx_schema_parse(schema, &op->schema, &e)) {
        free(op);
        return fx_err_setf(err, FX_EARG, "%s::%s: %s", ns, schema, e.msg);
    }
    snprintf(op->qualname, sizeof op->qualname, "%s.%s", op->schema.name, op->schema.overload);
    snprintf(op->ns, sizeof op->ns, "%s", ns);
    snprintf(op->target, sizeof op->target, "%s.%s", ns, op->qualname);
    if (lookup_custom(op->target)) {
        bool dflt = !strcmp(op->schema.overload, "default");
        fx_err_setf(err, FX_EARG,
                    "Tried to register an operator (%s::%s%s%s) with the same name and overload "
                    "name multiple times.",
                    ns, op->schema.name, dflt ? "" : ".", dflt ? "" : op->schema.overload);
        fx_schema_clear(&op->schema);
        free(op);
        return FX_EARG;
    }
    op->id = (fx_op_id)(FX_OP_COUNT + g_nrt);
    op->schema_text = NULL;
    op->meta = meta;
    op->kernel = kernel;
    op->ud = ud;
    op->twin = op->scatter = FX_OP_NONE;
    op->flags = flags | FX_OPF_CUSTOM;
    if (op->schema.mutated_arg >= 0) op->flags |= FX_OPF_INPLACE;
    g_rt[g_nrt++] = op;
    *out = op;
    return FX_OK;
}

const fx_opdef *fx_op_lookup(const char *q) {
    if (!q || fx_registry_init(NULL)) return NULL;
    if (!strncmp(q, "torch.ops.", 10) && strncmp(q, "torch.ops.aten.", 15)) q += 10;
    if (g_nrt && strncmp(q, "aten.", 5) && strncmp(q, "aten::", 6)) {
        const fx_opdef *c = lookup_custom(q);
        if (c) return c;
    }
    static const char *const prefixes[] = {"torch.ops.aten.", "aten::", "aten."};
    for (size_t i = 0; i < 3; i++)
        if (!strncmp(q, prefixes[i], strlen(prefixes[i]))) {
            q += strlen(prefixes[i]);
            break;
        }
    char buf[96];
    if (!strchr(q, '.')) {
        snprintf(buf, sizeof buf, "%s.default", q);
        q = buf;
    }
    int lo = 0, hi = FX_OP_COUNT;
    while (lo < hi) {
        int mid = (lo + hi) / 2, c = strcmp(g_ops[g_by_qualname[mid]].qualname, q);
        if (c == 0) return &g_ops[g_by_qualname[mid]];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int fx_op_overloads(const char *name, const fx_opdef **out, int max) {
    if (fx_registry_init(NULL)) return 0;
    int lo = 0, hi = FX_OP_COUNT; /* the first entry of g_by_name not below name */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (strcmp(g_ops[g_by_name[mid]].schema.name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int n = 0; /* ids ascend within a name: ops.def order */
    for (int i = lo; i < FX_OP_COUNT && n < max && !strcmp(g_ops[g_by_name[i]].schema.name, name);
         i++)
        out[n++] = &g_ops[g_by_name[i]];
    return n;
}

const char *fx_op_qualname(const fx_opdef *op) { return op->qualname; }
bool fx_op_is_inplace(const fx_opdef *op) { return op->flags & FX_OPF_INPLACE; }
bool fx_op_is_view(const fx_opdef *op) { return op->flags & FX_OPF_VIEW; }
