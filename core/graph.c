/* core/graph.c — FX graph: nodes, names, args, users, meta.
 * Layer: core. */
#include "core/graph.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/graph_impl.h"

/* ---- names ----------------------------------------------------------------------------------- */

/* Python keywords, builtins and FX's custom builtins: a node may not take these names, so
 * aten.sum becomes sum_1 as in every FX graph (torch/fx/graph.py _Namespace._is_illegal_name). */
static const char *const k_illegal[] = {
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
    "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if",
    "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
    "while", "with", "yield", "abs", "all", "any", "ascii", "bin", "bool", "breakpoint",
    "bytearray", "bytes", "callable", "chr", "classmethod", "compile", "complex", "copyright",
    "credits", "delattr", "dict", "dir", "divmod", "enumerate", "eval", "exec", "exit", "filter",
    "float", "format", "frozenset", "getattr", "globals", "hasattr", "hash", "help", "hex", "id",
    "input", "int", "isinstance", "issubclass", "iter", "len", "license", "list", "locals", "map",
    "max", "memoryview", "min", "next", "object", "oct", "open", "ord", "pow", "print",
    "property", "quit", "range", "repr", "reversed", "round", "set", "setattr", "slice",
    "sorted", "staticmethod", "str", "sum", "super", "tuple", "type", "vars", "zip",
    "__import__", "__name__", "__doc__", "__build_class__", "__debug__", "__loader__",
    "__package__", "__spec__", "Ellipsis", "NotImplemented", "BaseException", "Exception",
    "inf", "nan", "NoneType", "torch", "device", "fx_pytree", "pytree", "math", "os", "self",
};

static bool is_illegal(const char *s) {
    for (size_t i = 0; i < sizeof k_illegal / sizeof k_illegal[0]; i++)
        if (!strcmp(s, k_illegal[i])) return true;
    return false;
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static bool names_has(const fx_graph *g, const char *s) {
    if (!g->names_cap) return false;
    for (uint64_t i = hash_str(s) & (uint64_t)(g->names_cap - 1);; i = (i + 1) & (uint64_t)(g->names_cap - 1)) {
        if (!g->names[i]) return false;
        if (!strcmp(g->names[i], s)) return true;
    }
}

static int names_insert(fx_graph *g, char *s) {
    if ((g->names_len + 1) * 2 > g->names_cap) {
        int cap = g->names_cap ? g->names_cap * 2 : 64;
        char **nw = fx_calloc((size_t)cap, sizeof *nw);
        if (!nw) return FX_ENOMEM;
        for (int i = 0; i < g->names_cap; i++) {
            if (!g->names[i]) continue;
            uint64_t j = hash_str(g->names[i]) & (uint64_t)(cap - 1);
            while (nw[j]) j = (j + 1) & (uint64_t)(cap - 1);
            nw[j] = g->names[i];
        }
        fx_free(g->names);
        g->names = nw;
        g->names_cap = cap;
    }
    uint64_t j = hash_str(s) & (uint64_t)(g->names_cap - 1);
    while (g->names[j]) j = (j + 1) & (uint64_t)(g->names_cap - 1);
    g->names[j] = s;
    g->names_len++;
    return FX_OK;
}

static fx_name_count *base_count(fx_graph *g, const char *base) {
    for (int i = 0; i < g->nbases; i++)
        if (!strcmp(g->bases[i].base, base)) return &g->bases[i];
    if (g->nbases == g->bases_cap) {
        int cap = g->bases_cap ? g->bases_cap * 2 : 32;
        fx_name_count *nb = fx_realloc(g->bases, sizeof *nb * (size_t)cap);
        if (!nb) return NULL;
        g->bases = nb;
        g->bases_cap = cap;
    }
    char *b = fx_strdup(base);
    if (!b) return NULL;
    g->bases[g->nbases] = (fx_name_count){b, 0};
    return &g->bases[g->nbases++];
}

/* FX's _Namespace.create_name. Returns an owned unique name or NULL on out-of-memory. */
static char *create_name(fx_graph *g, const char *candidate) {
    char cand[128];
    size_t n = 0;
    for (const char *p = candidate; *p && n < sizeof cand - 8; p++)
        cand[n++] = (isalnum((unsigned char)*p) || *p == '_') ? *p : '_';
    cand[n] = 0;
    if (!n) strcpy(cand, "_unnamed");
    if (isdigit((unsigned char)cand[0])) {
        memmove(cand + 1, cand, strlen(cand) + 1);
        cand[0] = '_';
    }
    /* Split a trailing _<digits> suffix. */
    char base[128];
    int64_t num = -1;
    strcpy(base, cand);
    char *us = strrchr(base, '_');
    if (us && us[1] && us != base) {
        char *q = us + 1;
        while (isdigit((unsigned char)*q)) q++;
        if (!*q) {
            num = strtoll(us + 1, NULL, 10);
            *us = 0;
        }
    }
    char name[160];
    if (num < 0) snprintf(name, sizeof name, "%s", base);
    else snprintf(name, sizeof name, "%s_%lld", base, (long long)num);
    fx_name_count *bc = base_count(g, base);
    if (!bc) return NULL;
    if (num <= 0) num = bc->count;
    while (names_has(g, name) || is_illegal(name)) {
        num++;
        snprintf(name, sizeof name, "%s_%lld", base, (long long)num);
    }
    bc->count = num;
    char *out = fx_strdup(name);
    if (!out) return NULL;
    if (names_insert(g, out)) {
        fx_free(out);
        return NULL;
    }
    return out;
}

const char *fx__node_name_of(const struct fx_node *n);
const char *fx__node_name_of(const struct fx_node *n) { return n ? n->name : "None"; }

/* ---- lifetime -------------------------------------------------------------------------------- */

fx_graph *fx_graph_new(void) { return fx_calloc(1, sizeof(fx_graph)); }

static void free_meta(fx_node *n) {
    fx_ivalue_clear(&n->val);
    for (int i = 0; i < n->nstack; i++) {
        fx_free(n->stack[i].file);
        fx_free(n->stack[i].func);
        fx_free(n->stack[i].code);
    }
    fx_free(n->stack);
    n->stack = NULL;
    n->nstack = 0;
    for (int i = 0; i < n->nmodules; i++) {
        fx_free(n->modules[i].path);
        fx_free(n->modules[i].cls);
    }
    fx_free(n->modules);
    n->modules = NULL;
    n->nmodules = 0;
    for (int i = 0; i < n->nfrom; i++) fx_free(n->from_node[i]);
    fx_free(n->from_node);
    n->from_node = NULL;
    n->nfrom = 0;
    if (n->mutation) {
        fx_free(n->mutation->state);
        fx_free(n->mutation->from_op);
        fx_free(n->mutation->view_path);
        fx_free(n->mutation->raw_node);
        fx_free(n->mutation);
        n->mutation = NULL;
    }
}

static void node_free(fx_node *n) {
    for (int i = 0; i < n->nargs; i++) fx_ivalue_clear(&n->args[i]);
    fx_free(n->args);
    fx_free(n->users);
    fx_free(n->target);
    free_meta(n);
    fx_graph_free(n->subgraph);
    /* the name string is owned by the graph's name set */
    fx_free(n);
}

void fx_graph_free(fx_graph *g) {
    if (!g) return;
    for (fx_node *n = g->head, *next; n; n = next) {
        next = n->next;
        node_free(n);
    }
    for (int i = 0; i < g->names_cap; i++) fx_free(g->names[i]);
    fx_free(g->names);
    for (int i = 0; i < g->nbases; i++) fx_free(g->bases[i].base);
    fx_free(g->bases);
    fx_free(g);
}

fx_node *fx_graph_first(const fx_graph *g) { return g->head; }
fx_node *fx_graph_last(const fx_graph *g) { return g->tail; }
int fx_graph_count(const fx_graph *g) { return g->count; }
uint64_t fx_graph_version(const fx_graph *g) { return g->version; }

fx_node *fx_graph_find(const fx_graph *g, const char *name) {
    if (!name) return NULL;
    if (name[0] == '%') name++;
    for (fx_node *n = g->head; n; n = n->next)
        if (!strcmp(n->name, name)) return n;
    return NULL;
}

fx_node *fx_graph_output_node(const fx_graph *g) {
    for (fx_node *n = g->tail; n; n = n->prev)
        if (n->op == FX_NODE_OUTPUT) return n;
    return NULL;
}

void fx_graph_set_insert_point(fx_graph *g, fx_node *at) { g->insert_at = at; }

/* ---- users ----------------------------------------------------------------------------------- */

static bool uses(const fx_ivalue *v, const fx_node *target) {
    if (v->tag == FX_IV_NODE) return v->u.node == target;
    if (v->tag == FX_IV_LIST)
        for (int i = 0; i < v->u.list.n; i++)
            if (uses(&v->u.list.items[i], target)) return true;
    return false;
}

static bool node_uses(const fx_node *user, const fx_node *target) {
    for (int i = 0; i < user->nargs; i++)
        if (uses(&user->args[i], target)) return true;
    return false;
}

static int add_user(fx_node *def, fx_node *user) {
    for (int i = 0; i < def->nusers; i++)
        if (def->users[i] == user) return FX_OK;
    if (def->nusers == def->users_cap) {
        int cap = def->users_cap ? def->users_cap * 2 : 4;
        fx_node **nu = fx_realloc(def->users, sizeof *nu * (size_t)cap);
        if (!nu) return FX_ENOMEM;
        def->users = nu;
        def->users_cap = cap;
    }
    def->users[def->nusers++] = user;
    return FX_OK;
}

static void remove_user(fx_node *def, fx_node *user) {
    for (int i = 0; i < def->nusers; i++)
        if (def->users[i] == user) {
            memmove(&def->users[i], &def->users[i + 1], sizeof(fx_node *) * (size_t)(def->nusers - i - 1));
            def->nusers--;
            return;
        }
}

static int link_value(fx_node *user, const fx_ivalue *v) {
    if (v->tag == FX_IV_NODE) return add_user(v->u.node, user);
    if (v->tag == FX_IV_LIST)
        for (int i = 0; i < v->u.list.n; i++) {
            int rc = link_value(user, &v->u.list.items[i]);
            if (rc) return rc;
        }
    return FX_OK;
}

static void unlink_value(fx_node *user, const fx_ivalue *v) {
    if (v->tag == FX_IV_NODE) {
        if (!node_uses(user, v->u.node)) remove_user(v->u.node, user);
    } else if (v->tag == FX_IV_LIST) {
        for (int i = 0; i < v->u.list.n; i++) unlink_value(user, &v->u.list.items[i]);
    }
}

/* ---- building -------------------------------------------------------------------------------- */

static void link_before(fx_graph *g, fx_node *n, fx_node *at) {
    if (!at) {
        n->prev = g->tail;
        n->next = NULL;
        if (g->tail) g->tail->next = n;
        else g->head = n;
        g->tail = n;
    } else {
        n->next = at;
        n->prev = at->prev;
        if (at->prev) at->prev->next = n;
        else g->head = n;
        at->prev = n;
    }
}

static void unlink_node(fx_graph *g, fx_node *n) {
    if (n->prev) n->prev->next = n->next;
    else g->head = n->next;
    if (n->next) n->next->prev = n->prev;
    else g->tail = n->prev;
    n->prev = n->next = NULL;
}

static fx_node *new_node(fx_graph *g, fx_node_op op, const char *target, const char *name_hint,
                         const fx_ivalue *args, int nargs, fx_err *err) {
    fx_node *n = fx_calloc(1, sizeof *n);
    if (!n) goto oom;
    n->graph = g;
    n->op = op;
    n->uid = ++g->next_uid;
    n->val.tag = FX_IV_NONE;
    n->target = fx_strdup(target);
    if (!n->target) goto oom;
    if (nargs) {
        n->args = fx_calloc((size_t)nargs, sizeof *n->args);
        if (!n->args) goto oom;
        for (int i = 0; i < nargs; i++)
            if (fx_ivalue_copy(&n->args[i], &args[i], err)) goto oom;
        n->nargs = nargs;
    }
    n->name = create_name(g, name_hint);
    if (!n->name) goto oom;
    for (int i = 0; i < nargs; i++)
        if (link_value(n, &n->args[i])) goto oom_linked;
    fx_node *at = g->insert_at;
    if (op == FX_NODE_PLACEHOLDER) {
        at = g->head;
        while (at && at->op == FX_NODE_PLACEHOLDER) at = at->next;
    }
    link_before(g, n, at);
    g->count++;
    g->version++;
    return n;
oom_linked:
    for (int i = 0; i < nargs; i++) unlink_value(n, &n->args[i]);
oom:
    if (n) {
        /* the name, if made, stays in the graph's name set */
        n->name = NULL;
        node_free(n);
    }
    fx_err_setf(err, FX_ENOMEM, "out of memory adding a graph node");
    return NULL;
}

fx_node *fx_graph_placeholder(fx_graph *g, const char *name, fx_err *err) {
    fx_node *n = new_node(g, FX_NODE_PLACEHOLDER, name, name, NULL, 0, err);
    if (n) { /* target is the unique name, as FX's placeholder target */
        char *t = fx_strdup(n->name);
        if (!t) return n;
        fx_free(n->target);
        n->target = t;
    }
    return n;
}

fx_node *fx_graph_get_attr(fx_graph *g, const char *target, fx_err *err) {
    return new_node(g, FX_NODE_GET_ATTR, target, target, NULL, 0, err);
}

fx_node *fx_graph_call(fx_graph *g, const fx_opdef *op, const fx_ivalue *args, const char *hint,
                       fx_err *err) {
    const fx_schema *s = &op->schema;
    fx_ivalue full[FX_SCHEMA_MAX_ARGS];
    for (int i = 0; i < s->nargs; i++) {
        full[i] = args[i];
        if (full[i].tag == FX_IV_UNSET) full[i] = s->args[i].has_default ? s->args[i].def : fx_iv_none();
    }
    char target[128], base[64];
    snprintf(target, sizeof target, "aten.%s", op->qualname);
    /* FX's _target_to_str drops the underscores of a magic name: __lshift__ -> lshift */
    size_t bl = strlen(s->name);
    snprintf(base, sizeof base, "%s", s->name);
    if (bl > 4 && !strncmp(s->name, "__", 2) && !strcmp(s->name + bl - 2, "__"))
        snprintf(base, sizeof base, "%.*s", (int)(bl - 4), s->name + 2);
    fx_node *n = new_node(g, FX_NODE_CALL_FUNCTION, target, hint ? hint : base, full, s->nargs, err);
    if (n) n->aten = op;
    return n;
}

fx_node *fx_graph_call_target(fx_graph *g, const char *target, const fx_ivalue *args, int nargs,
                              const char *hint, fx_err *err) {
    const char *base = hint;
    if (!base) {
        base = strrchr(target, '.');
        base = base ? base + 1 : target;
    }
    return new_node(g, FX_NODE_CALL_FUNCTION, target, base, args, nargs, err);
}

fx_node *fx_graph_output(fx_graph *g, const fx_ivalue *result, fx_err *err) {
    fx_node *saved = g->insert_at;
    g->insert_at = NULL;
    fx_node *n = new_node(g, FX_NODE_OUTPUT, "output", "output", result, 1, err);
    g->insert_at = saved;
    return n;
}

/* ---- editing --------------------------------------------------------------------------------- */

int fx_node_set_arg(fx_node *n, int i, const fx_ivalue *v, fx_err *err) {
    if (i < 0 || i >= n->nargs) return fx_err_setf(err, FX_EARG, "argument index %d out of range", i);
    fx_ivalue copy;
    int rc = fx_ivalue_copy(&copy, v, err);
    if (rc) return rc;
    fx_ivalue old = n->args[i];
    n->args[i] = copy;
    unlink_value(n, &old);
    /* unlink_value checks node_uses on the new args, so a node still referenced stays a user */
    fx_ivalue_clear(&old);
    if (link_value(n, &n->args[i])) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    n->graph->version++;
    return FX_OK;
}

static void replace_in(fx_ivalue *v, fx_node *old, fx_node *repl) {
    if (v->tag == FX_IV_NODE && v->u.node == old) v->u.node = repl;
    else if (v->tag == FX_IV_LIST)
        for (int i = 0; i < v->u.list.n; i++) replace_in(&v->u.list.items[i], old, repl);
}

void fx_node_replace_all_uses(fx_node *old, fx_node *repl) {
    if (old == repl) return;
    while (old->nusers > 0) {
        fx_node *u = old->users[old->nusers - 1];
        old->nusers--;
        for (int i = 0; i < u->nargs; i++) replace_in(&u->args[i], old, repl);
        add_user(repl, u);
    }
    old->graph->version++;
}

int fx_graph_erase(fx_graph *g, fx_node *n, fx_err *err) {
    if (n->nusers)
        return fx_err_setf(err, FX_EARG, "cannot erase node %s: it still has %d user(s)", n->name,
                           n->nusers);
    for (int i = 0; i < n->nargs; i++) {
        fx_ivalue v = n->args[i];
        n->args[i].tag = FX_IV_NONE;
        unlink_value(n, &v);
        fx_ivalue_clear(&v);
    }
    if (g->insert_at == n) g->insert_at = n->next;
    unlink_node(g, n);
    node_free(n); /* its name stays reserved, as in FX (its namespace never forgets a name) */
    g->count--;
    g->version++;
    return FX_OK;
}

void fx_graph_move_before(fx_graph *g, fx_node *n, fx_node *at) {
    if (n == at) return;
    unlink_node(g, n);
    link_before(g, n, at);
    g->version++;
}

/* ---- meta ------------------------------------------------------------------------------------ */

int fx_node_set_val(fx_node *n, const fx_ivalue *val, fx_err *err) {
    fx_ivalue copy;
    int rc = fx_ivalue_copy(&copy, val, err);
    if (rc) return rc;
    fx_ivalue_clear(&n->val);
    n->val = copy;
    return FX_OK;
}

static char *dup_or_empty(const char *s) { return fx_strdup(s ? s : ""); }

int fx_node_set_stack(fx_node *n, const fx_frame *frames, int nframes, fx_err *err) {
    fx_frame *fs = NULL;
    if (nframes > 0) {
        fs = fx_calloc((size_t)nframes, sizeof *fs);
        if (!fs) return fx_err_setf(err, FX_ENOMEM, "out of memory");
        for (int i = 0; i < nframes; i++) {
            fs[i].file = dup_or_empty(frames[i].file);
            fs[i].func = dup_or_empty(frames[i].func);
            fs[i].code = dup_or_empty(frames[i].code);
            fs[i].line = frames[i].line;
            if (!fs[i].file || !fs[i].func || !fs[i].code) {
                for (int j = 0; j <= i; j++) {
                    fx_free(fs[j].file);
                    fx_free(fs[j].func);
                    fx_free(fs[j].code);
                }
                fx_free(fs);
                return fx_err_setf(err, FX_ENOMEM, "out of memory");
            }
        }
    }
    for (int i = 0; i < n->nstack; i++) {
        fx_free(n->stack[i].file);
        fx_free(n->stack[i].func);
        fx_free(n->stack[i].code);
    }
    fx_free(n->stack);
    n->stack = fs;
    n->nstack = nframes;
    return FX_OK;
}

int fx_node_set_modules(fx_node *n, const fx_module_entry *m, int nm, fx_err *err) {
    fx_module_entry *ms = NULL;
    if (nm > 0) {
        ms = fx_calloc((size_t)nm, sizeof *ms);
        if (!ms) return fx_err_setf(err, FX_ENOMEM, "out of memory");
        for (int i = 0; i < nm; i++) {
            ms[i].path = dup_or_empty(m[i].path);
            ms[i].cls = dup_or_empty(m[i].cls);
            if (!ms[i].path || !ms[i].cls) {
                for (int j = 0; j <= i; j++) {
                    fx_free(ms[j].path);
                    fx_free(ms[j].cls);
                }
                fx_free(ms);
                return fx_err_setf(err, FX_ENOMEM, "out of memory");
            }
        }
    }
    for (int i = 0; i < n->nmodules; i++) {
        fx_free(n->modules[i].path);
        fx_free(n->modules[i].cls);
    }
    fx_free(n->modules);
    n->modules = ms;
    n->nmodules = nm;
    return FX_OK;
}

int fx_node_add_from(fx_node *n, const char *raw_name, fx_err *err) {
    for (int i = 0; i < n->nfrom; i++)
        if (!strcmp(n->from_node[i], raw_name)) return FX_OK;
    char **nf = fx_realloc(n->from_node, sizeof *nf * (size_t)(n->nfrom + 1));
    if (!nf) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    n->from_node = nf;
    nf[n->nfrom] = fx_strdup(raw_name);
    if (!nf[n->nfrom]) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    n->nfrom++;
    return FX_OK;
}

int fx_node_set_mutation(fx_node *n, const fx_mutation *m, fx_err *err) {
    fx_mutation *c = fx_calloc(1, sizeof *c);
    if (!c) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    c->state = fx_strdup(m->state);
    c->version = m->version;
    c->from_op = m->from_op ? fx_strdup(m->from_op) : NULL;
    c->view_path = m->view_path ? fx_strdup(m->view_path) : NULL;
    c->raw_node = m->raw_node ? fx_strdup(m->raw_node) : NULL;
    if (!c->state || (m->from_op && !c->from_op) || (m->view_path && !c->view_path) ||
        (m->raw_node && !c->raw_node)) {
        fx_free(c->state);
        fx_free(c->from_op);
        fx_free(c->view_path);
        fx_free(c->raw_node);
        fx_free(c);
        return fx_err_setf(err, FX_ENOMEM, "out of memory");
    }
    if (n->mutation) {
        fx_free(n->mutation->state);
        fx_free(n->mutation->from_op);
        fx_free(n->mutation->view_path);
        fx_free(n->mutation->raw_node);
        fx_free(n->mutation);
    }
    n->mutation = c;
    return FX_OK;
}

int fx_node_copy_meta(fx_node *dst, const fx_node *src, fx_err *err) {
    int rc = fx_node_set_stack(dst, src->stack, src->nstack, err);
    if (!rc) rc = fx_node_set_modules(dst, src->modules, src->nmodules, err);
    for (int i = 0; !rc && i < src->nfrom; i++) rc = fx_node_add_from(dst, src->from_node[i], err);
    return rc;
}

void fx_node_set_subgraph(fx_node *n, fx_graph *sub) {
    fx_graph_free(n->subgraph);
    n->subgraph = sub;
}

fx_tensor *fx_node_tensor(const fx_node *n) {
    return n->val.tag == FX_IV_TENSOR ? n->val.u.t : NULL;
}

void fx_node_format_type(fx_strbuf *sb, const fx_node *n) {
    const fx_tensor *t = fx_node_tensor(n);
    if (!t) return;
    fx_strbuf_appendf(sb, "%s[", fx_dtype_short(fx_tensor_dtype(t)));
    for (int d = 0; d < fx_tensor_ndim(t); d++)
        fx_strbuf_appendf(sb, d ? ", %lld" : "%lld", (long long)fx_tensor_size(t, d));
    fx_strbuf_putc(sb, ']');
}

const char *fx_node_op_name(fx_node_op op) {
    switch (op) {
    case FX_NODE_PLACEHOLDER: return "placeholder";
    case FX_NODE_GET_ATTR: return "get_attr";
    case FX_NODE_CALL_FUNCTION: return "call_function";
    case FX_NODE_OUTPUT: return "output";
    }
    return "?";
}

/* ---- clone ----------------------------------------------------------------------------------- */

/* Node refs of the source graph -> the clone's nodes. Source nodes carry their position in
 * `tag` (set by fx_graph_clone), so this is one lookup per reference. */
static int remap(fx_ivalue *v, fx_node *const *map_from, fx_node *const *map_to, int n) {
    if (v->tag == FX_IV_NODE) {
        int i = v->u.node->tag;
        if (i < 0 || i >= n || map_from[i] != v->u.node) return FX_EINTERNAL;
        v->u.node = map_to[i];
        return FX_OK;
    }
    if (v->tag == FX_IV_LIST)
        for (int i = 0; i < v->u.list.n; i++)
            if (remap(&v->u.list.items[i], map_from, map_to, n)) return FX_EINTERNAL;
    return FX_OK;
}

fx_graph *fx_graph_clone(const fx_graph *g, fx_err *err) {
    fx_graph *c = fx_graph_new();
    fx_node **from = fx_calloc((size_t)g->count + 1, sizeof *from);
    fx_node **to = fx_calloc((size_t)g->count + 1, sizeof *to);
    if (!c || !from || !to) goto fail;
    int k = 0;
    for (fx_node *n = g->head; n; n = n->next) n->tag = k++; /* scratch: positions for remap */
    k = 0;
    for (const fx_node *n = g->head; n; n = n->next) {
        fx_ivalue args[FX_SCHEMA_MAX_ARGS + 8];
        int na = n->nargs;
        fx_ivalue *a = na <= (int)(sizeof args / sizeof args[0]) ? args : fx_calloc((size_t)na, sizeof *a);
        if (!a) goto fail;
        int rc = FX_OK;
        for (int i = 0; i < na && !rc; i++) {
            rc = fx_ivalue_copy(&a[i], &n->args[i], err);
            if (!rc) rc = remap(&a[i], from, to, k);
        }
        fx_node *m = NULL;
        if (!rc) {
            m = new_node(c, n->op, n->target, n->name, a, na, err);
            if (m) {
                m->aten = n->aten;
                m->flags = n->flags;
                if (fx_node_set_val(m, &n->val, err) || fx_node_copy_meta(m, n, err)) m = NULL;
                if (m && n->mutation && fx_node_set_mutation(m, n->mutation, err)) m = NULL;
                if (m && n->subgraph) {
                    m->subgraph = fx_graph_clone(n->subgraph, err);
                    if (!m->subgraph) m = NULL;
                }
            }
        }
        for (int i = 0; i < na; i++) fx_ivalue_clear(&a[i]);
        if (a != args) fx_free(a);
        if (!m) goto fail;
        from[k] = (fx_node *)n;
        to[k++] = m;
    }
    fx_free(from);
    fx_free(to);
    return c;
fail:
    fx_free(from);
    fx_free(to);
    fx_graph_free(c);
    if (err && !err->code) fx_err_setf(err, FX_ENOMEM, "out of memory cloning a graph");
    return NULL;
}
