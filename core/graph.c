/* core/graph.c — FX graph: nodes, names, args, users, meta.
 * Layer: core. */
#include "core/graph.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/graph_impl.h"

/* ---- the graph's interning pool ------------------------------------------------------------- */

#define POOL_CHUNK 16384

/* A 64-bit hash of n bytes, eight at a time (multiply-xorshift mixing). */
static uint64_t hash_bytes(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    for (size_t i = 0; i < n; i++) w |= (uint64_t)s[i] << (8 * i);
    /* MurmurHash3's 64-bit finalizer: every input bit reaches the low bits the tables index by
     * (a multiply alone moves a last-byte difference only upward, and names such as add_12 /
     * add_13 then crowded into one run of slots) */
    h ^= w;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* n bytes (8-aligned) of arena space, or NULL on out-of-memory. */
static char *pool_alloc(fx_pool *p, size_t n) {
    n = (n + 7) & ~(size_t)7;
    if (n > p->left) {
        size_t sz = n + 16 > POOL_CHUNK ? n + 16 : POOL_CHUNK;
        void **c = fx_malloc(sz);
        if (!c) return NULL;
        *c = p->chunks;
        p->chunks = c;
        p->cur = (char *)c + 16;
        p->left = sz - 16;
    }
    char *r = p->cur;
    p->cur += n;
    p->left -= n;
    return r;
}

/* The slot of t holding bytes[0..n) (hash h), or NULL when there is none.  */
static fx_str_slot *table_find(const fx_str_table *t, const void *bytes, size_t n, uint64_t h) {
    if (!t->cap) return NULL;
    for (uint64_t j = h & (uint64_t)(t->cap - 1); t->slots[j].s;
         j = (j + 1) & (uint64_t)(t->cap - 1))
        if (t->slots[j].hash == h && t->slots[j].len == n && !memcmp(t->slots[j].s, bytes, n))
            return &t->slots[j];
    return NULL;
}

/* The slot of t holding bytes[0..n) (hash h); when there is none, the empty slot where it goes,
 * after growing t so that one more entry keeps it at most half full (growing moves the slots: a
 * slot pointer is good until the next table_slot): the caller fills that slot (s, hash, len) and
 * counts it in t->len. NULL on out-of-memory (t unchanged). */
static fx_str_slot *table_slot(fx_str_table *t, const void *bytes, size_t n, uint64_t h) {
    if (n > UINT32_MAX) return NULL;
    if ((t->len + 1) * 2 > t->cap) {
        int cap = t->cap ? t->cap * 2 : 256;
        fx_str_slot *ns = fx_calloc((size_t)cap, sizeof *ns);
        if (!ns) return NULL;
        for (int i = 0; i < t->cap; i++) {
            if (!t->slots[i].s) continue;
            uint64_t j = t->slots[i].hash & (uint64_t)(cap - 1);
            while (ns[j].s) j = (j + 1) & (uint64_t)(cap - 1);
            ns[j] = t->slots[i];
        }
        fx_free(t->slots);
        t->slots = ns;
        t->cap = cap;
    }
    uint64_t j = h & (uint64_t)(t->cap - 1);
    for (; t->slots[j].s; j = (j + 1) & (uint64_t)(t->cap - 1))
        if (t->slots[j].hash == h && t->slots[j].len == n && !memcmp(t->slots[j].s, bytes, n))
            break;
    return &t->slots[j];
}

/* The index slot of the pool's copy of bytes[0..n) (hash h; the copy is followed by a NUL), made
 * on first sight; NULL on OOM. Good until the next pool_slot. */
static fx_str_slot *pool_slot(fx_pool *p, const void *bytes, size_t n, uint64_t h) {
    fx_str_slot *slot = table_slot(&p->index, bytes, n, h);
    if (!slot || slot->s) return slot;
    char *c = pool_alloc(p, n + 1);
    if (!c) return NULL;
    memcpy(c, bytes, n);
    c[n] = 0;
    *slot = (fx_str_slot){.hash = h, .s = c, .len = (uint32_t)n};
    p->index.len++;
    return slot;
}

/* The pool's copy of bytes[0..n) (followed by a NUL), made on first sight; NULL on OOM. */
static const char *pool_intern(fx_pool *p, const void *bytes, size_t n) {
    fx_str_slot *slot = pool_slot(p, bytes, n, hash_bytes(bytes, n));
    return slot ? slot->s : NULL;
}

static const char *pool_str(fx_pool *p, const char *s) {
    if (!s) s = "";
    return pool_intern(p, s, strlen(s));
}

static void pool_free(fx_pool *p) {
    for (void *c = p->chunks, *next; c; c = next) {
        next = *(void **)c;
        fx_free(c);
    }
    fx_free(p->index.slots);
    memset(p, 0, sizeof *p);
}

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

#define ILLEGAL_SLOTS 512 /* power of two, > 2x the number of words */
static const char *g_illegal_set[ILLEGAL_SLOTS];
static pthread_once_t g_illegal_once = PTHREAD_ONCE_INIT;

static void build_illegal_set(void) {
    for (size_t i = 0; i < sizeof k_illegal / sizeof k_illegal[0]; i++) {
        uint64_t j = hash_bytes(k_illegal[i], strlen(k_illegal[i])) & (ILLEGAL_SLOTS - 1);
        while (g_illegal_set[j]) j = (j + 1) & (ILLEGAL_SLOTS - 1);
        g_illegal_set[j] = k_illegal[i];
    }
}

/* s (its hash h = hash_bytes(s, n)) is a Python keyword or builtin. */
static bool is_illegal(const char *s, uint64_t h) {
    pthread_once(&g_illegal_once, build_illegal_set);
    for (uint64_t j = h & (ILLEGAL_SLOTS - 1); g_illegal_set[j]; j = (j + 1) & (ILLEGAL_SLOTS - 1))
        if (!strcmp(g_illegal_set[j], s)) return true;
    return false;
}

/* Whether name (len bytes, hash h) is a node's name already, or a Python keyword / builtin. */
static bool name_taken(const fx_graph *g, const char *name, size_t len, uint64_t h) {
    const fx_str_slot *s = table_find(&g->pool.index, name, len, h);
    return (s && s->is_name) || is_illegal(name, h);
}

/* Writes base_num into out (room for n + 22 bytes); returns its length. */
static size_t with_suffix(char *out, const char *base, size_t n, int64_t num) {
    char digits[24];
    int k = 0;
    uint64_t v = (uint64_t)num;
    do digits[k++] = (char)('0' + v % 10);
    while (v /= 10);
    memcpy(out, base, n);
    out[n] = '_';
    for (int i = 0; i < k; i++) out[n + 1 + i] = digits[k - 1 - i];
    out[n + 1 + k] = 0;
    return n + 1 + (size_t)k;
}

/* FX's _Namespace.create_name. Returns a unique name (kept in the graph's pool) or NULL on
 * out-of-memory. */
static const char *create_name(fx_graph *g, const char *candidate) {
    char cand[128];
    size_t lead = isdigit((unsigned char)candidate[0]) ? 1 : 0, n = lead;
    cand[0] = '_';
    for (const char *p = candidate; *p && n - lead < sizeof cand - 8; p++)
        cand[n++] = (isalnum((unsigned char)*p) || *p == '_') ? *p : '_';
    cand[n] = 0;
    if (!n) strcpy(cand, "_unnamed"), n = strlen(cand);
    /* Split a trailing _<digits> suffix. */
    size_t bn = n;
    int64_t num = -1;
    char *us = strrchr(cand, '_');
    if (us && us[1] && us != cand) {
        char *q = us + 1;
        while (isdigit((unsigned char)*q)) q++;
        if (!*q) {
            num = strtoll(us + 1, NULL, 10);
            bn = (size_t)(us - cand);
        }
    }
    char base[128], name[160];
    memcpy(base, cand, bn);
    base[bn] = 0;
    size_t len = num < 0 ? (memcpy(name, base, bn + 1), bn) : with_suffix(name, base, bn, num);
    fx_str_slot *bc = pool_slot(&g->pool, base, bn, hash_bytes(base, bn)); /* _base_count */
    if (!bc) return NULL;
    if (num <= 0) num = bc->count;
    uint64_t h = hash_bytes(name, len);
    while (name_taken(g, name, len, h)) {
        num++;
        len = with_suffix(name, base, bn, num);
        h = hash_bytes(name, len);
    }
    bc->count = num; /* before pool_slot below, which may move the slots */
    fx_str_slot *slot = pool_slot(&g->pool, name, len, h);
    if (!slot) return NULL;
    slot->is_name = true;
    return slot->s;
}

/* ---- lifetime -------------------------------------------------------------------------------- */

static uint64_t g_graph_ids;

fx_graph *fx_graph_new(void) {
    fx_graph *g = fx_calloc(1, sizeof(fx_graph));
    if (g) g->id = __atomic_add_fetch(&g_graph_ids, 1, __ATOMIC_RELAXED);
    return g;
}

static void free_meta(fx_node *n) {
    fx_ivalue_clear(&n->val);
    /* stack, modules and the from_node strings live in the graph's pool */
    n->stack = NULL;
    n->nstack = 0;
    n->modules = NULL;
    n->nmodules = 0;
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

/* Frees what a node owns; the node, its argument array, name and target are in the graph's
 * arena (new_node). */
static void node_free(fx_node *n) {
    for (int i = 0; i < n->nargs; i++) fx_ivalue_clear(&n->args[i]);
    n->nargs = 0;
    n->users = NULL; /* in the graph's pool (add_user) */
    n->nusers = n->users_cap = 0;
    free_meta(n);
    fx_graph_free(n->subgraph);
    n->subgraph = NULL;
}

void fx_graph_free(fx_graph *g) {
    if (!g) return;
    for (fx_node *n = g->head, *next; n; n = next) {
        next = n->next;
        node_free(n);
    }
    pool_free(&g->pool);
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
    if (def->nusers == def->users_cap) { /* a copy twice as long in the graph's pool */
        int cap = def->users_cap ? def->users_cap * 2 : 4;
        fx_node **nu = (fx_node **)pool_alloc(&def->graph->pool, sizeof *nu * (size_t)cap);
        if (!nu) return FX_ENOMEM;
        if (def->nusers) memcpy(nu, def->users, sizeof *nu * (size_t)def->nusers);
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

/* Links n before at (NULL: at the end). A placeholder, or a node put before a placeholder, may
 * change the leading run of placeholders: g->last_ph is forgotten then. */
static void link_before(fx_graph *g, fx_node *n, fx_node *at) {
    if (n->op == FX_NODE_PLACEHOLDER || (at && at->op == FX_NODE_PLACEHOLDER)) g->last_ph = NULL;
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
    if (n->op == FX_NODE_PLACEHOLDER) g->last_ph = NULL;
    if (n->prev) n->prev->next = n->next;
    else g->head = n->next;
    if (n->next) n->next->prev = n->prev;
    else g->tail = n->prev;
    n->prev = n->next = NULL;
}

/* A node and its (nargs,) argument array live in the graph's arena (freed with the graph; an
 * erased node's bytes stay there, as its name stays reserved). */
static fx_node *new_node(fx_graph *g, fx_node_op op, const char *target, const char *name_hint,
                         const fx_ivalue *args, int nargs, fx_err *err) {
    size_t bytes = sizeof(fx_node) + (size_t)nargs * sizeof(fx_ivalue);
    fx_node *n = (fx_node *)pool_alloc(&g->pool, bytes);
    if (!n) goto oom;
    memset(n, 0, bytes);
    n->graph = g;
    n->op = op;
    n->uid = ++g->next_uid;
    n->val.tag = FX_IV_NONE;
    n->target = pool_str(&g->pool, target);
    if (!n->target) goto oom;
    if (nargs) {
        n->args = (fx_ivalue *)(n + 1);
        for (int i = 0; i < nargs; i++)
            if (fx_ivalue_copy(&n->args[i], &args[i], err)) goto oom;
        n->nargs = nargs;
    }
    n->name = create_name(g, name_hint);
    if (!n->name) goto oom;
    for (int i = 0; i < nargs; i++)
        if (link_value(n, &n->args[i])) goto oom_linked;
    fx_node *at = g->insert_at;
    if (op == FX_NODE_PLACEHOLDER) { /* after the placeholders the list starts with */
        fx_node *last = g->last_ph;
        if (last) {
            at = last->next;
        } else {
            at = g->head;
            while (at && at->op == FX_NODE_PLACEHOLDER) at = at->next;
        }
    }
    link_before(g, n, at);
    if (op == FX_NODE_PLACEHOLDER) g->last_ph = n;
    g->count++;
    g->version++;
    return n;
oom_linked:
    for (int i = 0; i < nargs; i++) unlink_value(n, &n->args[i]);
oom:
    if (n) {
        /* the name, if made, stays in the graph's name set */
        node_free(n);
    }
    fx_err_setf(err, FX_ENOMEM, "out of memory adding a graph node");
    return NULL;
}

fx_node *fx_graph_placeholder(fx_graph *g, const char *name, fx_err *err) {
    fx_node *n = new_node(g, FX_NODE_PLACEHOLDER, name, name, NULL, 0, err);
    if (n) n->target = n->name; /* target is the unique name, as FX's placeholder target */
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
    char base[64];
    const char *target = op->target;
    /* FX's _target_to_str drops the underscores of a magic name: __lshift__ -> lshift */
    size_t bl = strlen(s->name);
    const char *b0 = s->name;
    if (bl > 4 && !strncmp(s->name, "__", 2) && !strcmp(s->name + bl - 2, "__")) b0 += 2, bl -= 4;
    if (bl > sizeof base - 1) bl = sizeof base - 1;
    memcpy(base, b0, bl);
    base[bl] = 0;
    /* FX names a sym_size.int node after the overload too (torch.export: sym_size_int) */
    if (op->id == FX_OP_SYM_SIZE_INT) snprintf(base, sizeof base, "sym_size_int");
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

/* The pool's copy of the n-entry array of (already interned) pointer-holding structs at a. */
static const void *pool_array(fx_pool *p, const void *a, size_t bytes) {
    return bytes ? pool_intern(p, a, bytes) : NULL;
}

/* s (NULL = "") in the pool: `known` (a pooled string, or NULL) when it has the same text, which
 * saves hashing s; else interned. */
static const char *pool_str_like(fx_pool *p, const char *known, const char *s) {
    if (!s) s = "";
    if (known && (known == s || !strcmp(known, s))) return known;
    return pool_str(p, s);
}

int fx_node_set_stack(fx_node *n, const fx_frame *frames, int nframes, fx_err *err) {
    fx_graph *g = n->graph;
    fx_pool *p = &g->pool;
    if (nframes < 0) nframes = 0;
    fx_frame tmp[32], *fs = nframes <= 32 ? tmp : fx_malloc(sizeof *fs * (size_t)nframes);
    if (!fs) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    memset(fs, 0, sizeof *fs * (size_t)nframes); /* padding takes part in the key */
    /* the previous array, aligned at the outermost frame (innermost frames come first) */
    const fx_frame *prev = g->last_stack;
    int np = g->last_nstack;
    bool ok = true, same = nframes == np;
    for (int i = 0; i < nframes && ok; i++) {
        int j = np - nframes + i;
        const fx_frame *pf = j >= 0 && j < np ? &prev[j] : NULL;
        fs[i].file = pool_str_like(p, pf ? pf->file : NULL, frames[i].file);
        fs[i].func = pool_str_like(p, pf ? pf->func : NULL, frames[i].func);
        fs[i].code = pool_str_like(p, pf ? pf->code : NULL, frames[i].code);
        fs[i].line = frames[i].line;
        ok = fs[i].file && fs[i].func && fs[i].code;
        same = same && ok && fs[i].file == pf->file && fs[i].func == pf->func &&
               fs[i].code == pf->code && fs[i].line == pf->line;
    }
    const fx_frame *shared = NULL;
    if (ok && nframes > 0)
        shared = same ? prev : pool_array(p, fs, sizeof *fs * (size_t)nframes);
    if (fs != tmp) fx_free(fs);
    if (!ok || (nframes > 0 && !shared)) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    n->stack = shared;
    n->nstack = nframes;
    if (shared) g->last_stack = shared, g->last_nstack = nframes;
    return FX_OK;
}

int fx_node_set_modules(fx_node *n, const fx_module_entry *m, int nm, fx_err *err) {
    fx_graph *g = n->graph;
    fx_pool *p = &g->pool;
    if (nm < 0) nm = 0;
    fx_module_entry tmp[32], *ms = nm <= 32 ? tmp : fx_malloc(sizeof *ms * (size_t)nm);
    if (!ms) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    /* the previous array, aligned at the outermost module (it comes first) */
    const fx_module_entry *prev = g->last_modules;
    int np = g->last_nmodules;
    bool ok = true, same = nm == np;
    for (int i = 0; i < nm && ok; i++) {
        const fx_module_entry *pm = i < np ? &prev[i] : NULL;
        ms[i].path = pool_str_like(p, pm ? pm->path : NULL, m[i].path);
        ms[i].cls = pool_str_like(p, pm ? pm->cls : NULL, m[i].cls);
        ok = ms[i].path && ms[i].cls;
        same = same && ok && ms[i].path == pm->path && ms[i].cls == pm->cls;
    }
    const fx_module_entry *shared = NULL;
    if (ok && nm > 0) shared = same ? prev : pool_array(p, ms, sizeof *ms * (size_t)nm);
    if (ms != tmp) fx_free(ms);
    if (!ok || (nm > 0 && !shared)) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    n->modules = shared;
    n->nmodules = nm;
    if (shared) g->last_modules = shared, g->last_nmodules = nm;
    return FX_OK;
}

int fx_node_add_from(fx_node *n, const char *raw_name, fx_err *err) {
    for (int i = 0; i < n->nfrom; i++)
        if (!strcmp(n->from_node[i], raw_name)) return FX_OK;
    fx_pool *p = &n->graph->pool;
    const char *s = pool_str(p, raw_name);
    /* the array lives in the pool too: a longer one is a new copy (nearly every node has one) */
    const char **nf = s ? (const char **)pool_alloc(p, sizeof *nf * (size_t)(n->nfrom + 1)) : NULL;
    if (!nf) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    if (n->nfrom) memcpy(nf, n->from_node, sizeof *nf * (size_t)n->nfrom);
    n->from_node = nf;
    nf[n->nfrom++] = s;
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

/* dst's copy of an array interned in another graph: a memo of (source graph, source array) ->
 * dst's array saves re-interning the same stack for every node a pass copies. */
static const void *import_memo(fx_graph *dst, const fx_graph *src, const void *a) {
    if (!a) return NULL;
    size_t i = (size_t)(((uintptr_t)a >> 3) * 0x9e3779b97f4a7c15ull >> 58) % FX_IMPORT_MEMO;
    if (dst->imports[i].graph_id == src->id && dst->imports[i].from == a) return dst->imports[i].to;
    return NULL;
}

static void import_remember(fx_graph *dst, const fx_graph *src, const void *a, const void *copy) {
    if (!a) return;
    size_t i = (size_t)(((uintptr_t)a >> 3) * 0x9e3779b97f4a7c15ull >> 58) % FX_IMPORT_MEMO;
    dst->imports[i].graph_id = src->id;
    dst->imports[i].from = a;
    dst->imports[i].to = copy;
}

int fx_node_copy_meta(fx_node *dst, const fx_node *src, fx_err *err) {
    int rc = FX_OK;
    fx_graph *dg = dst->graph;
    const fx_graph *sg = src->graph;
    if (dg == sg) { /* same pool: share the arrays */
        dst->stack = src->stack;
        dst->nstack = src->nstack;
        dst->modules = src->modules;
        dst->nmodules = src->nmodules;
    } else {
        const fx_frame *st = import_memo(dg, sg, src->stack);
        if (st) {
            dst->stack = st;
            dst->nstack = src->nstack;
        } else {
            rc = fx_node_set_stack(dst, src->stack, src->nstack, err);
            if (!rc) import_remember(dg, sg, src->stack, dst->stack);
        }
        const fx_module_entry *mo = rc ? NULL : import_memo(dg, sg, src->modules);
        if (mo) {
            dst->modules = mo;
            dst->nmodules = src->nmodules;
        } else if (!rc) {
            rc = fx_node_set_modules(dst, src->modules, src->nmodules, err);
            if (!rc) import_remember(dg, sg, src->modules, dst->modules);
        }
    }
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

bool fx_node_has_type(const fx_node *n) { return fx_node_tensor(n) || n->val.tag == FX_IV_SYMINT; }

void fx_node_format_type(fx_strbuf *sb, const fx_node *n) {
    if (n->val.tag == FX_IV_SYMINT) { /* torch.export prints a SymInt value as "Sym(s0 + 1)" */
        fx_strbuf_append(sb, "Sym(");
        fx_si_format(sb, n->val.u.si); /* with the guards' replacements, as SymNode.expr */
        fx_strbuf_putc(sb, ')');
        return;
    }
    const fx_tensor *t = fx_node_tensor(n);
    if (!t) return;
    fx_strbuf_append(sb, fx_dtype_short(fx_tensor_dtype(t)));
    fx_tensor_format_sizes(sb, t);
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
