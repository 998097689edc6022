/* pt2/pt2_pickle.c — the part of torch.save's format a dict of tensors uses.
 * Layer: pt2. torch.save (torch/serialization.py, _save) writes a zip: <root>/data.pkl, a pickle
 * (protocol 2) in which each tensor is torch._utils._rebuild_tensor_v2(storage, offset, size,
 * stride, requires_grad, backward_hooks) and each storage a persistent id
 * ('storage', torch.<Type>Storage, key, location, numel) whose bytes are <root>/data/<key>;
 * parameters are _rebuild_parameter(tensor, requires_grad, hooks); the state dict itself an
 * OrderedDict (collections.OrderedDict() then SETITEMS, and a BUILD of its _metadata).
 * Only those globals and the opcodes of such pickles are understood; anything else is refused
 * with the opcode or global named — a pickle can otherwise run arbitrary code. */
#include <stdio.h>
#include <string.h>
#include <zip.h>

#include "pt2/pt2_impl.h"

typedef enum pvtag {
    PV_NONE,
    PV_BOOL,
    PV_INT,
    PV_FLOAT,
    PV_STR,
    PV_TUPLE,
    PV_LIST,
    PV_DICT,
    PV_GLOBAL,
    PV_TENSOR, /* a storage (1-d cpu tensor) or a tensor */
    PV_MARK,
} pvtag;

enum { G_ODICT = 1, G_REBUILD_TENSOR, G_REBUILD_PARAM, G_STORAGE };

typedef struct pv {
    pvtag tag;
    int64_t i; /* ints, bools; the global kind */
    double f;
    char *s;           /* strings (owned by the arena) */
    struct pv **items; /* tuples / lists: items; dicts: key, value, key, value ... */
    int n, cap;
    fx_tensor *t; /* one reference, released with the arena */
    fx_dtype dt;  /* storage globals */
} pv;

typedef struct pk {
    const unsigned char *p, *end;
    const char *what;
    fx_err *err;
    pv **all; /* arena: every value made */
    int nall, capall;
    pv **stack;
    int sp, capstack;
    pv **memo;
    int64_t nmemo; /* slots allocated */
    int64_t nset;  /* slots set (MEMOIZE's next index, as len(memo) in Python) */
    pt2_storage_fn storage;
    void *ud;
} pk;

static int fail(pk *k, const char *msg, const char *a) {
    return fx_err_setf(k->err, FX_EIO, "%s: %s%s", k->what, msg, a ? a : "");
}

static pv *mk(pk *k, pvtag tag) {
    if (k->nall == k->capall) {
        int cap = k->capall ? k->capall * 2 : 64;
        pv **na = fx_realloc(k->all, sizeof *na * (size_t)cap);
        if (!na) return NULL;
        k->all = na;
        k->capall = cap;
    }
    pv *v = fx_calloc(1, sizeof *v);
    if (!v) return NULL;
    v->tag = tag;
    k->all[k->nall++] = v;
    return v;
}

static int push(pk *k, pv *v) {
    if (!v) return fx_err_setf(k->err, FX_ENOMEM, "out of memory");
    if (k->sp == k->capstack) {
        int cap = k->capstack ? k->capstack * 2 : 64;
        if (cap > 1 << 20) return fail(k, "pickle stack too deep", NULL);
        pv **ns = fx_realloc(k->stack, sizeof *ns * (size_t)cap);
        if (!ns) return fx_err_setf(k->err, FX_ENOMEM, "out of memory");
        k->stack = ns;
        k->capstack = cap;
    }
    k->stack[k->sp++] = v;
    return FX_OK;
}

static pv *pop(pk *k) {
    return k->sp > 0 && k->stack[k->sp - 1]->tag != PV_MARK ? k->stack[--k->sp] : NULL;
}

static int add_item(pk *k, pv *c, pv *v) {
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 4;
        pv **ni = fx_realloc(c->items, sizeof *ni * (size_t)cap);
        if (!ni) return fx_err_setf(k->err, FX_ENOMEM, "out of memory");
        c->items = ni;
        c->cap = cap;
    }
    c->items[c->n++] = v;
    return FX_OK;
}

/* Index of the topmost MARK, or -1. */
static int find_mark(pk *k) {
    for (int i = k->sp - 1; i >= 0; i--)
        if (k->stack[i]->tag == PV_MARK) return i;
    return -1;
}

static int need(pk *k, size_t n) {
    return (size_t)(k->end - k->p) < n ? fail(k, "the pickle is truncated", NULL) : FX_OK;
}

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static int memo_put(pk *k, int64_t idx, pv *v) {
    if (idx < 0 || idx > 1 << 24) return fail(k, "memo index out of range", NULL);
    if (idx >= k->nmemo) {
        int64_t n = idx + 64;
        pv **nm = fx_realloc(k->memo, sizeof *nm * (size_t)n);
        if (!nm) return fx_err_setf(k->err, FX_ENOMEM, "out of memory");
        for (int64_t i = k->nmemo; i < n; i++) nm[i] = NULL;
        k->memo = nm;
        k->nmemo = n;
    }
    if (!k->memo[idx]) k->nset++;
    k->memo[idx] = v;
    return FX_OK;
}

static pv *mkstr(pk *k, const unsigned char *s, size_t n) {
    pv *v = mk(k, PV_STR);
    if (!v) return NULL;
    v->s = fx_malloc(n + 1);
    if (!v->s) return NULL;
    memcpy(v->s, s, n);
    v->s[n] = 0;
    return v;
}

static const struct {
    const char *name;
    fx_dtype dt;
} STORAGES[] = {
    {"FloatStorage", FX_DTYPE_F32},        {"DoubleStorage", FX_DTYPE_F64},
    {"HalfStorage", FX_DTYPE_F16},         {"BFloat16Storage", FX_DTYPE_BF16},
    {"LongStorage", FX_DTYPE_I64},         {"IntStorage", FX_DTYPE_I32},
    {"ShortStorage", FX_DTYPE_I16},        {"CharStorage", FX_DTYPE_I8},
    {"ByteStorage", FX_DTYPE_U8},          {"BoolStorage", FX_DTYPE_BOOL},
    {"ComplexFloatStorage", FX_DTYPE_C64}, {"ComplexDoubleStorage", FX_DTYPE_C128},
};

static int global(pk *k, const char *mod, const char *name) {
    pv *g = mk(k, PV_GLOBAL);
    if (!g) return fx_err_setf(k->err, FX_ENOMEM, "out of memory");
    if (!strcmp(mod, "collections") && !strcmp(name, "OrderedDict"))
        g->i = G_ODICT;
    else if (!strcmp(mod, "torch._utils") && !strcmp(name, "_rebuild_tensor_v2"))
        g->i = G_REBUILD_TENSOR;
    else if (!strcmp(mod, "torch._utils") && !strcmp(name, "_rebuild_parameter"))
        g->i = G_REBUILD_PARAM;
    else if (!strcmp(mod, "torch")) {
        for (size_t i = 0; i < sizeof STORAGES / sizeof *STORAGES; i++)
            if (!strcmp(name, STORAGES[i].name)) {
                g->i = G_STORAGE;
                g->dt = STORAGES[i].dt;
            }
    }
    if (!g->i) {
        char m[300];
        snprintf(m, sizeof m, "%s.%s", mod, name);
        return fx_err_setf(k->err, FX_EIO,
                           "%s: the pickle uses global '%s', which is not one torch.save uses for "
                           "a dict of tensors (refused: unpickling it could run any code)",
                           k->what, m);
    }
    return push(k, g);
}

static bool is_int_tuple(const pv *v, int maxn) {
    if (v->tag != PV_TUPLE || v->n > maxn) return false;
    for (int i = 0; i < v->n; i++)
        if (v->items[i]->tag != PV_INT) return false;
    return true;
}

static int reduce(pk *k) {
    pv *args = pop(k), *fn = pop(k);
    if (!args || !fn || fn->tag != PV_GLOBAL || args->tag != PV_TUPLE)
        return fail(k, "REDUCE without a global and an argument tuple", NULL);
    if (fn->i == G_ODICT) return push(k, mk(k, PV_DICT));
    if (fn->i == G_REBUILD_PARAM) {
        if (args->n < 2 || args->items[0]->tag != PV_TENSOR || args->items[1]->tag != PV_BOOL)
            return fail(k, "_rebuild_parameter with unexpected arguments", NULL);
        pv *t = args->items[0];
        fx_tensor_set_requires_grad(t->t, args->items[1]->i != 0);
        return push(k, t);
    }
    if (fn->i == G_REBUILD_TENSOR) {
        if (args->n < 5 || args->items[0]->tag != PV_TENSOR || args->items[1]->tag != PV_INT ||
            !is_int_tuple(args->items[2], FX_MAX_DIMS) ||
            !is_int_tuple(args->items[3], FX_MAX_DIMS) || args->items[2]->n != args->items[3]->n ||
            args->items[4]->tag != PV_BOOL)
            return fail(k, "_rebuild_tensor_v2 with unexpected arguments", NULL);
        int nd = args->items[2]->n;
        int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
        for (int d = 0; d < nd; d++) {
            sizes[d] = args->items[2]->items[d]->i;
            strides[d] = args->items[3]->items[d]->i;
            if (sizes[d] < 0 || strides[d] < 0)
                return fail(k, "a tensor with a negative size or stride", NULL);
        }
        pv *t = mk(k, PV_TENSOR);
        if (!t) return fx_err_setf(k->err, FX_ENOMEM, "out of memory");
        fx_err e2;
        fx_err_clear(&e2);
        if (fx_tensor_as_strided(args->items[0]->t, nd, sizes, strides, args->items[1]->i, &t->t,
                                 &e2))
            return fx_err_setf(k->err, FX_EIO, "%s: a tensor does not fit its storage: %s", k->what,
                               e2.msg);
        if (args->items[4]->i) fx_tensor_set_requires_grad(t->t, true);
        return push(k, t);
    }
    return fail(k, "REDUCE of a storage type", NULL);
}

static int persid(pk *k) {
    pv *id = pop(k);
    if (!id || id->tag != PV_TUPLE || id->n != 5 || id->items[0]->tag != PV_STR ||
        strcmp(id->items[0]->s, "storage") || id->items[1]->tag != PV_GLOBAL ||
        id->items[1]->i != G_STORAGE || id->items[2]->tag != PV_STR ||
        id->items[3]->tag != PV_STR || id->items[4]->tag != PV_INT)
        return fail(k, "a persistent id that is not ('storage', type, key, location, numel)", NULL);
    const char *key = id->items[2]->s;
    for (const char *c = key; *c; c++)
        if (*c == '/' || *c == '\\' || (c[0] == '.' && c[1] == '.'))
            return fail(k, "storage key escapes the archive: ", key);
    pv *s = mk(k, PV_TENSOR);
    if (!s) return fx_err_setf(k->err, FX_ENOMEM, "out of memory");
    int rc = k->storage(k->ud, key, id->items[1]->dt, id->items[4]->i, &s->t, k->err);
    if (rc) return rc;
    return push(k, s);
}

int pt2_unpickle_state(const unsigned char *p, size_t len, const char *what, pt2_storage_fn storage,
                       void *ud, fx_named_tensor **out, int *nout, fx_err *err) {
    *out = NULL;
    *nout = 0;
    pk k = {p, p + len, what, err, NULL, 0, 0, NULL, 0, 0, NULL, 0, 0, storage, ud};
    int rc = FX_OK;
    pv *result = NULL;
    while (!rc && !result) {
        if ((rc = need(&k, 1))) break;
        unsigned char op = *k.p++;
        switch (op) {
        case 0x80:
            rc = need(&k, 1);
            k.p += rc ? 0 : 1;
            break; /* PROTO */
        case 0x95:
            rc = need(&k, 8);
            k.p += rc ? 0 : 8;
            break; /* FRAME */
        case '}': rc = push(&k, mk(&k, PV_DICT)); break;
        case ']': rc = push(&k, mk(&k, PV_LIST)); break;
        case ')': rc = push(&k, mk(&k, PV_TUPLE)); break;
        case '(': rc = push(&k, mk(&k, PV_MARK)); break;
        case 'N': rc = push(&k, mk(&k, PV_NONE)); break;
        case 0x88:
        case 0x89: {
            pv *b = mk(&k, PV_BOOL);
            if (b) b->i = op == 0x88;
            rc = push(&k, b);
            break;
        }
        case 'J':
        case 'K':
        case 'M': {
            int n = op == 'J' ? 4 : op == 'K' ? 1 : 2;
            if ((rc = need(&k, (size_t)n))) break;
            pv *v = mk(&k, PV_INT);
            if (v) v->i = op == 'J' ? (int32_t)(uint32_t)le(k.p, 4) : (int64_t)le(k.p, n);
            k.p += n;
            rc = push(&k, v);
            break;
        }
        case 0x8a: { /* LONG1 */
            if ((rc = need(&k, 1))) break;
            int n = *k.p++;
            if ((rc = need(&k, (size_t)n))) break;
            if (n > 8) {
                rc = fail(&k, "an integer wider than 64 bits", NULL);
                break;
            }
            uint64_t u = n ? le(k.p, n) : 0;
            if (n && n < 8 && (k.p[n - 1] & 0x80)) u |= ~(uint64_t)0 << (8 * n);
            k.p += n;
            pv *v = mk(&k, PV_INT);
            if (v) v->i = (int64_t)u;
            rc = push(&k, v);
            break;
        }
        case 'G': { /* BINFLOAT, big-endian */
            if ((rc = need(&k, 8))) break;
            uint64_t u = 0;
            for (int i = 0; i < 8; i++) u = (u << 8) | k.p[i];
            k.p += 8;
            pv *v = mk(&k, PV_FLOAT);
            if (v) memcpy(&v->f, &u, 8);
            rc = push(&k, v);
            break;
        }
        case 'X':
        case 0x8c:
        case 'U':
        case 'T': {
            int w = op == 'X' || op == 'T' ? 4 : 1;
            if ((rc = need(&k, (size_t)w))) break;
            uint64_t n = le(k.p, w);
            k.p += w;
            if ((rc = need(&k, n))) break;
            rc = push(&k, mkstr(&k, k.p, n));
            k.p += n;
            break;
        }
        case 'c': { /* GLOBAL "module\nname\n" */
            const unsigned char *a = k.p, *nl1 = memchr(a, '\n', (size_t)(k.end - a));
            const unsigned char *nl2 =
                nl1 ? memchr(nl1 + 1, '\n', (size_t)(k.end - nl1 - 1)) : NULL;
            if (!nl2 || nl1 - a > 200 || nl2 - nl1 > 200) {
                rc = fail(&k, "a malformed GLOBAL", NULL);
                break;
            }
            char mod[208], name[208];
            memcpy(mod, a, (size_t)(nl1 - a));
            mod[nl1 - a] = 0;
            memcpy(name, nl1 + 1, (size_t)(nl2 - nl1 - 1));
            name[nl2 - nl1 - 1] = 0;
            k.p = nl2 + 1;
            rc = global(&k, mod, name);
            break;
        }
        case 0x93: { /* STACK_GLOBAL */
            pv *name = pop(&k), *mod = pop(&k);
            if (!name || !mod || name->tag != PV_STR || mod->tag != PV_STR)
                rc = fail(&k, "a malformed STACK_GLOBAL", NULL);
            else
                rc = global(&k, mod->s, name->s);
            break;
        }
        case 'q':
        case 'r':
        case 0x94: { /* BINPUT, LONG_BINPUT, MEMOIZE */
            if (k.sp == 0) {
                rc = fail(&k, "memo of an empty stack", NULL);
                break;
            }
            int64_t idx = k.nset;
            if (op != 0x94) {
                int w = op == 'q' ? 1 : 4;
                if ((rc = need(&k, (size_t)w))) break;
                idx = (int64_t)le(k.p, w);
                k.p += w;
            }
            rc = memo_put(&k, idx, k.stack[k.sp - 1]);
            break;
        }
        case 'h':
        case 'j': {
            int w = op == 'h' ? 1 : 4;
            if ((rc = need(&k, (size_t)w))) break;
            int64_t idx = (int64_t)le(k.p, w);
            k.p += w;
            if (idx >= k.nmemo || !k.memo[idx])
                rc = fail(&k, "BINGET of an unset memo slot", NULL);
            else
                rc = push(&k, k.memo[idx]);
            break;
        }
        case 't':
        case 0x85:
        case 0x86:
        case 0x87: {
            int from;
            if (op == 't') {
                from = find_mark(&k);
                if (from < 0) {
                    rc = fail(&k, "TUPLE without MARK", NULL);
                    break;
                }
            } else {
                from = k.sp - (op - 0x84);
                if (from < 0 || find_mark(&k) >= from) {
                    rc = fail(&k, "TUPLEn on a short stack", NULL);
                    break;
                }
            }
            pv *t = mk(&k, PV_TUPLE);
            if (!t) {
                rc = fx_err_setf(err, FX_ENOMEM, "out of memory");
                break;
            }
            int first = op == 't' ? from + 1 : from;
            for (int i = first; i < k.sp && !rc; i++) rc = add_item(&k, t, k.stack[i]);
            k.sp = from;
            if (!rc) rc = push(&k, t);
            break;
        }
        case 'R': rc = reduce(&k); break;
        case 'Q': rc = persid(&k); break;
        case 's':
        case 'u':
        case 'a':
        case 'e': {
            int from = op == 's' ? k.sp - 2 : op == 'a' ? k.sp - 1 : find_mark(&k);
            int first = (op == 'u' || op == 'e') ? from + 1 : from;
            int dst = (op == 'u' || op == 'e') ? from - 1 : from - 1;
            if (from < 0 || dst < 0 || (op == 's' || op == 'a' ? find_mark(&k) >= from : false)) {
                rc = fail(&k, "SETITEM/APPEND on a short stack", NULL);
                break;
            }
            pv *c = k.stack[dst];
            bool dict = op == 's' || op == 'u';
            if (c->tag != (dict ? PV_DICT : PV_LIST) || ((k.sp - first) % (dict ? 2 : 1))) {
                rc = fail(&k, dict ? "SETITEMS outside a dict" : "APPENDS outside a list", NULL);
                break;
            }
            for (int i = first; i < k.sp && !rc; i++) rc = add_item(&k, c, k.stack[i]);
            k.sp = op == 'u' || op == 'e' ? from : from;
            break;
        }
        case 'b': { /* BUILD: an OrderedDict's state (its _metadata): dropped */
            pv *state = pop(&k);
            if (!state || k.sp == 0 || k.stack[k.sp - 1]->tag != PV_DICT)
                rc = fail(&k, "BUILD of something other than the state dict", NULL);
            break;
        }
        case '.': {
            if (k.sp != 1)
                rc = fail(&k, "the pickle ends with a malformed stack", NULL);
            else
                result = k.stack[0];
            break;
        }
        default: {
            char m[64];
            snprintf(m, sizeof m, "0x%02x", op);
            rc = fx_err_setf(err, FX_EIO,
                             "%s: pickle opcode %s is not one torch.save uses for a dict of "
                             "tensors",
                             what, m);
        }
        }
    }
    if (!rc && result->tag != PV_DICT)
        rc = fail(&k, "the pickle holds something other than a dict of tensors", NULL);
    for (int i = 0; !rc && i + 1 < result->n; i += 2) {
        pv *key = result->items[i], *val = result->items[i + 1];
        if (key->tag != PV_STR || val->tag != PV_TENSOR) {
            rc = fail(&k, "the dict maps something other than names to tensors", NULL);
            break;
        }
        rc = pt2_add_named(out, nout, key->s, fx_tensor_retain(val->t), err);
    }
    for (int i = 0; i < k.nall; i++) {
        fx_free(k.all[i]->s);
        fx_free(k.all[i]->items);
        fx_tensor_release(k.all[i]->t);
        fx_free(k.all[i]);
    }
    fx_free(k.all);
    fx_free(k.stack);
    fx_free(k.memo);
    if (rc) {
        pt2_free_named(*out, *nout);
        *out = NULL;
        *nout = 0;
    }
    return rc;
}

/* ---- the torch.save zip
 * ------------------------------------------------------------------------------ */

typedef struct tsave {
    zip_t *za;
    char root[256];
    const char *what;
    size_t len;
    fx_named_tensor *cache; /* storages read so far, by key */
    int ncache;
} tsave;

static int read_entry(tsave *ts, const char *name, char **out, size_t *len, fx_err *err) {
    char full[600];
    snprintf(full, sizeof full, "%s%s", ts->root, name);
    return pt2_zip_entry(ts->za, full, ts->len, ts->what, out, len, err);
}

static int storage_cb(void *ud, const char *key, fx_dtype dt, int64_t numel, fx_tensor **out,
                      fx_err *err) {
    tsave *ts = ud;
    for (int i = 0; i < ts->ncache; i++)
        if (!strcmp(ts->cache[i].name, key)) {
            if (fx_tensor_dtype(ts->cache[i].t) != dt || fx_tensor_numel(ts->cache[i].t) != numel)
                return fx_err_setf(err, FX_EIO, "%s: storage %s is used with two different types",
                                   ts->what, key);
            *out = fx_tensor_retain(ts->cache[i].t);
            return FX_OK;
        }
    char name[300];
    snprintf(name, sizeof name, "data/%s", key);
    char *bytes;
    size_t len;
    int rc = read_entry(ts, name, &bytes, &len, err);
    if (rc) return rc;
    size_t isz = fx_dtype_size(dt);
    if (numel < 0 || (uint64_t)numel > len / isz || len != (size_t)numel * isz) {
        rc = fx_err_setf(
            err, FX_EIO, "%s: storage %s holds %zu bytes, but %lld %s elements need %llu", ts->what,
            key, len, (long long)numel, fx_dtype_name(dt), (unsigned long long)numel * isz);
        fx_free(bytes);
        return rc;
    }
    fx_tensor *t;
    int64_t n = numel;
    rc = fx_tensor_from_data(1, &n, dt, bytes, &t, err);
    fx_free(bytes);
    if (rc) return rc;
    if ((rc = pt2_add_named(&ts->cache, &ts->ncache, key, t, err))) return rc;
    *out = fx_tensor_retain(t);
    return FX_OK;
}

int pt2_read_torch_save(const void *data, size_t len, const char *what, fx_named_tensor **out,
                        int *n, fx_err *err) {
    *out = NULL;
    *n = 0;
    tsave ts = {0};
    ts.what = what;
    ts.len = len;
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(data, len, 0, &ze);
    if (src) ts.za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
    if (!ts.za) {
        int rc = fx_err_setf(err, FX_EIO, "%s: not a torch.save zip (%s)%s", what,
                             zip_error_strerror(&ze),
                             len >= 2 && ((const unsigned char *)data)[0] == 0x80
                                 ? "; the legacy (non-zip) torch.save format is not supported"
                                 : "");
        if (src) zip_source_free(src);
        zip_error_fini(&ze);
        return rc;
    }
    zip_error_fini(&ze);
    int rc = FX_OK;
    zip_int64_t ne = zip_get_num_entries(ts.za, 0);
    bool found = false;
    for (zip_int64_t i = 0; i < ne && !found; i++) {
        const char *nm = zip_get_name(ts.za, (zip_uint64_t)i, 0);
        const char *sl = nm ? strchr(nm, '/') : NULL;
        if (sl && !strcmp(sl + 1, "data.pkl") && (size_t)(sl + 1 - nm) < sizeof ts.root) {
            memcpy(ts.root, nm, (size_t)(sl + 1 - nm));
            ts.root[sl + 1 - nm] = 0;
            found = true;
        }
    }
    if (!found)
        rc = fx_err_setf(err, FX_EIO, "%s: no <root>/data.pkl: not a torch.save file", what);
    char *bo = NULL, *pkl = NULL;
    size_t bl = 0, pl = 0;
    char bname[300];
    snprintf(bname, sizeof bname, "%sbyteorder", ts.root);
    if (!rc && zip_name_locate(ts.za, bname, 0) >= 0 &&
        !(rc = read_entry(&ts, "byteorder", &bo, &bl, err)) && strcmp(bo, "little"))
        rc = fx_err_setf(err, FX_EIO, "%s: byteorder is '%.20s'; fxdb reads little-endian storages",
                         what, bo);
    if (!rc) rc = read_entry(&ts, "data.pkl", &pkl, &pl, err);
    if (!rc)
        rc = pt2_unpickle_state((const unsigned char *)pkl, pl, what, storage_cb, &ts, out, n, err);
    fx_free(bo);
    fx_free(pkl);
    pt2_free_named(ts.cache, ts.ncache);
    zip_discard(ts.za);
    return rc;
}
