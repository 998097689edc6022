/* pt2/pt2_read.c — a PT2 archive (or the earlier torch.export.save zip) as an fx_program.
 * Layer: pt2. Reads what torch/_export/serde/serialize.py's GraphModuleDeserializer reads: the
 * graph's inputs, nodes (a multi-output node gets one getitem node per named output, right after
 * it) and outputs, tensor metas, node metadata, the graph signature; then the weights and
 * constants of torch/export/pt2_archive/_package.py's layout. Every check fails with FX_EIO (or
 * FX_ENOTIMPL for what fxdb does not model) naming the file inside the archive and the JSON path;
 * nothing is built half: the program is freed on any error. The JSON accessors that carry those
 * paths are pt2/pt2_json.c. */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "core/hop.h"
#include "pt2/pt2.h"
#include "pt2/pt2_impl.h"
#include "pt2/pt2_json.h"

void pt2_free_named(fx_named_tensor *v, int n) {
    if (!v) return;
    for (int i = 0; i < n; i++) {
        fx_free(v[i].name);
        fx_tensor_release(v[i].t);
    }
    fx_free(v);
}

int pt2_add_named(fx_named_tensor **v, int *n, const char *name, fx_tensor *t, fx_err *err) {
    fx_named_tensor *nv = fx_realloc(*v, sizeof *nv * (size_t)(*n + 1));
    if (!nv) {
        fx_tensor_release(t);
        return fx_err_setf(err, FX_ENOMEM, "out of memory");
    }
    *v = nv;
    nv[*n].name = fx_strdup(name);
    nv[*n].t = t;
    if (!nv[*n].name) {
        fx_tensor_release(t);
        return fx_err_setf(err, FX_ENOMEM, "out of memory");
    }
    (*n)++;
    return FX_OK;
}

/* ---- the zip ------------------------------------------------------------------------------------
 */

typedef struct arch {
    zip_t *za;
    const char *what; /* the archive, for messages */
    char root[256];   /* "model/" or "" */
    size_t len;       /* the archive's byte size (entries may not claim much more) */
} arch;

static int arch_open(arch *a, const void *data, size_t len, const char *what, fx_err *err) {
    memset(a, 0, sizeof *a);
    a->what = what;
    a->len = len;
    if (len == 0)
        return fx_err_setf(err, FX_EIO, "%s: not a readable zip archive (the file is empty)", what);
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(data, len, 0, &ze);
    if (src) a->za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
    if (!a->za) {
        int rc = fx_err_setf(err, FX_EIO, "%s: not a readable zip archive (%s)", what,
                             zip_error_strerror(&ze));
        if (src) zip_source_free(src);
        zip_error_fini(&ze);
        return rc;
    }
    zip_error_fini(&ze);
    /* names that would escape the archive if extracted */
    zip_int64_t n = zip_get_num_entries(a->za, 0);
    for (zip_int64_t i = 0; i < n; i++) {
        const char *nm = zip_get_name(a->za, (zip_uint64_t)i, 0);
        if (!nm) continue;
        bool bad = nm[0] == '/' || nm[0] == '\\' || strchr(nm, ':') != NULL;
        for (const char *p = nm; *p && !bad; p++)
            if (p[0] == '.' && p[1] == '.' && (p == nm || p[-1] == '/' || p[-1] == '\\') &&
                (p[2] == 0 || p[2] == '/' || p[2] == '\\'))
                bad = true;
        if (bad) {
            int rc = fx_err_setf(err, FX_EIO, "%s: entry '%s' escapes the archive", what, nm);
            zip_discard(a->za);
            a->za = NULL;
            return rc;
        }
    }
    return FX_OK;
}

static void arch_close(arch *a) {
    if (a->za) zip_discard(a->za);
    a->za = NULL;
}

/* Index of root + name, or -1. */
static zip_int64_t arch_find(const arch *a, const char *name) {
    char full[1024];
    snprintf(full, sizeof full, "%s%s", a->root, name);
    return zip_name_locate(a->za, full, 0);
}

int pt2_zip_entry(zip_t *za, const char *full, size_t archive_len, const char *what, char **out,
                  size_t *len, fx_err *err) {
    *out = NULL;
    *len = 0;
    zip_int64_t idx = zip_name_locate(za, full, 0);
    if (idx < 0) return fx_err_setf(err, FX_EIO, "%s: no entry %s", what, full);
    zip_stat_t st;
    if (zip_stat_index(za, (zip_uint64_t)idx, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
        return fx_err_setf(err, FX_EIO, "%s: %s: cannot read its size", what, full);
    uint64_t csize = (st.valid & ZIP_STAT_COMP_SIZE) ? st.comp_size : st.size;
    if (csize > archive_len || st.size > (uint64_t)csize * 1100 + 4096)
        return fx_err_setf(err, FX_EIO, "%s: %s: claims %llu bytes, more than the archive can hold",
                           what, full, (unsigned long long)st.size);
    char *buf = fx_malloc((size_t)st.size + 1);
    if (!buf) return fx_err_setf(err, FX_ENOMEM, "out of memory reading %s", full);
    zip_file_t *f = zip_fopen_index(za, (zip_uint64_t)idx, 0);
    zip_int64_t got = f ? zip_fread(f, buf, st.size) : -1;
    if (f) zip_fclose(f);
    if (got < 0 || (uint64_t)got != st.size) {
        fx_free(buf);
        return fx_err_setf(err, FX_EIO, "%s: %s: truncated or corrupt", what, full);
    }
    buf[st.size] = 0;
    *out = buf;
    *len = (size_t)st.size;
    return FX_OK;
}

/* The whole entry root + name (pt2_zip_entry). */
static int arch_read(const arch *a, const char *name, char **out, size_t *len, fx_err *err) {
    char full[1024];
    snprintf(full, sizeof full, "%s%s", a->root, name);
    return pt2_zip_entry(a->za, full, a->len, a->what, out, len, err);
}

/* ---- names -> nodes
 * --------------------------------------------------------------------------------- */

typedef struct nmap {
    char **keys;
    fx_node **vals;
    size_t cap, n;
} nmap;

static size_t nhash(const char *s) {
    size_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}
static void nmap_free(nmap *m) {
    for (size_t i = 0; i < m->cap; i++) fx_free(m->keys[i]);
    fx_free(m->keys);
    fx_free(m->vals);
    memset(m, 0, sizeof *m);
}
static fx_node *nmap_get(const nmap *m, const char *k) {
    if (!m->cap) return NULL;
    for (size_t i = nhash(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) return NULL;
        if (!strcmp(m->keys[i], k)) return m->vals[i];
    }
}
static int nmap_put(nmap *m, const char *k, fx_node *v, fx_err *err) {
    if ((m->n + 1) * 2 > m->cap) {
        nmap nm = {0};
        nm.cap = m->cap ? m->cap * 2 : 64;
        nm.keys = fx_calloc(nm.cap, sizeof *nm.keys);
        nm.vals = fx_calloc(nm.cap, sizeof *nm.vals);
        if (!nm.keys || !nm.vals) {
            fx_free(nm.keys);
            fx_free(nm.vals);
            return fx_err_setf(err, FX_ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t j = nhash(m->keys[i]) & (nm.cap - 1);
                while (nm.keys[j]) j = (j + 1) & (nm.cap - 1);
                nm.keys[j] = m->keys[i];
                nm.vals[j] = m->vals[i];
                nm.n++;
            }
        fx_free(m->keys);
        fx_free(m->vals);
        *m = nm;
    }
    size_t i = nhash(k) & (m->cap - 1);
    while (m->keys[i]) {
        if (!strcmp(m->keys[i], k)) {
            m->vals[i] = v;
            return FX_OK;
        }
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = fx_strdup(k);
    if (!m->keys[i]) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    m->vals[i] = v;
    m->n++;
    return FX_OK;
}

/* ---- graphs
 * ------------------------------------------------------------------------------------------ */

typedef struct gload {
    rctx *r;
    fx_graph *g;
    nmap names; /* serialized value name -> node */
    const cJSON *tensor_values, *sym_int_values, *sym_float_values, *sym_bool_values;
    const char *path; /* JSON path of this graph */
    int depth;
} gload;

static fx_graph *load_graph(rctx *r, const cJSON *gj, const char *path, int depth);

static const char *DTYPE_NAMES[] = {
    "UNKNOWN", "BYTE",   "CHAR",        "SHORT",        "INT",           "LONG", "HALF",
    "FLOAT",   "DOUBLE", "COMPLEXHALF", "COMPLEXFLOAT", "COMPLEXDOUBLE", "BOOL", "BFLOAT16"};

static fx_dtype load_dtype(rctx *r, const cJSON *v, const char *path) {
    int64_t st = pt2_jint(r, v, path);
    if (r->rc) return FX_DTYPE_UNDEFINED;
    fx_dtype dt = pt2_dtype((int)st);
    if (dt == FX_DTYPE_UNDEFINED || st != (int)st)
        pt2_unsupported(r, path, "scalar type %lld (%s) is not one fxdb has", (long long)st,
                        st >= 0 && st < 14     ? DTYPE_NAMES[st]
                        : st >= 28 && st <= 32 ? "a uint16/float8 type"
                                               : "unknown");
    return dt;
}

/* A SymExpr's text (at JSON path `path`) as an expression of the program's environment. */
static const fx_sym *load_sym_text(rctx *r, const char *text, const char *path) {
    if (!r->sy) {
        pt2_unsupported(r, path, "a symbolic size (%.60s) where only concrete sizes can be", text);
        return NULL;
    }
    const fx_sym *e = NULL;
    if (pt2_sym_parse(r->sy, text, &e, r->err)) {
        pt2_relay(r, path);
        return NULL;
    }
    return e;
}

/* A SymExpr object's expr_str. */
static const fx_sym *load_sym_expr(rctx *r, const cJSON *x, const char *path) {
    SUB(pe, path, "expr_str");
    const char *text = pt2_jstr(r, pt2_jfield(r, x, "expr_str", path), pe);
    return text ? load_sym_text(r, text, pe) : NULL;
}

/* A SymInt union (as_int, or as_expr: a symbolic size with its example value). */
static fx_symint load_sym_int(rctx *r, const cJSON *v, const char *path) {
    const char *k;
    const cJSON *x = pt2_junion(r, v, path, &k);
    if (!x) return FX_SI(0);
    SUB(p, path, "%s", k);
    if (!strcmp(k, "as_int")) return FX_SI(pt2_jint(r, x, p));
    if (!strcmp(k, "as_expr")) {
        if (!pt2_jobjv(r, x, p)) return FX_SI(0);
        const fx_sym *e = load_sym_expr(r, x, p);
        if (!e) return FX_SI(0);
        fx_sym_kind kind = fx_sym_kind_of(e);
        if (kind == FX_SYM_BOOL || kind >= FX_SYM_EQ) {
            pt2_bad(r, p, "a relation where an integer belongs");
            return FX_SI(0);
        }
        return fx_si_from_expr(e);
    }
    pt2_bad(r, path, "unknown SymInt kind '%s'", k);
    return FX_SI(0);
}

static fx_tensor *load_tensor_meta(rctx *r, const cJSON *m, const char *path, fx_device dev) {
    if (!pt2_jobjv(r, m, path)) return NULL;
    SUB(pd, path, "dtype");
    fx_dtype dt = load_dtype(r, pt2_jfield(r, m, "dtype", path), pd);
    SUB(ps, path, "sizes");
    SUB(pt, path, "strides");
    const cJSON *sz = pt2_jarr(r, pt2_jfield(r, m, "sizes", path), ps);
    const cJSON *st = pt2_jarr(r, pt2_jfield(r, m, "strides", path), pt);
    if (r->rc) return NULL;
    int nd = cJSON_GetArraySize(sz);
    if (nd > FX_MAX_DIMS) {
        pt2_unsupported(r, ps, "%d dims (fxdb tensors have at most %d)", nd, FX_MAX_DIMS);
        return NULL;
    }
    if (cJSON_GetArraySize(st) != nd) {
        pt2_bad(r, pt, "%d strides for %d sizes", cJSON_GetArraySize(st), nd);
        return NULL;
    }
    int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS];
    fx_symint ssizes[FX_MAX_DIMS], sstrides[FX_MAX_DIMS];
    bool symbolic = false;
    for (int d = 0; d < nd && !r->rc; d++) {
        SUB(p1, ps, "[%d]", d);
        ssizes[d] = load_sym_int(r, cJSON_GetArrayItem(sz, d), p1);
        SUB(p2, pt, "[%d]", d);
        sstrides[d] = load_sym_int(r, cJSON_GetArrayItem(st, d), p2);
        sizes[d] = ssizes[d].hint;
        strides[d] = sstrides[d].hint;
        symbolic |= ssizes[d].expr || sstrides[d].expr;
        if (!r->rc && (sizes[d] < 0 || strides[d] < 0)) pt2_bad(r, p1, "negative size or stride");
    }
    const cJSON *rg = pt2_jopt(m, "requires_grad");
    const cJSON *devj = pt2_jopt(m, "device");
    if (devj) {
        SUB(pv, path, "device");
        const char *ty = pt2_jstr(r, pt2_jfield(r, devj, "type", pv), pv);
        if (ty && strcmp(ty, "cpu") && strcmp(ty, "meta") && strcmp(ty, "cuda"))
            pt2_unsupported(r, pv, "device '%s'", ty);
    }
    if (r->rc) return NULL;
    fx_tensor *t = NULL;
    fx_err e2;
    fx_err_clear(&e2);
    if (fx_tensor_empty_strided(nd, sizes, strides, dt, dev, &t, &e2)) {
        pt2_bad(r, path, "%s", e2.msg);
        return NULL;
    }
    if (symbolic && fx_tensor_set_sym(t, ssizes, sstrides, FX_SI(0), &e2)) {
        fx_tensor_release(t);
        if (e2.code == FX_ENOMEM)
            r->rc = fx_err_setf(r->err, FX_ENOMEM, "out of memory");
        else
            pt2_bad(r, path, "%s", e2.msg);
        return NULL;
    }
    if (cJSON_IsTrue(rg)) fx_tensor_set_requires_grad(t, true);
    return t;
}

/* The meta of value `name` (tensor_values / sym_*_values) into *val. */
static int value_meta(gload *L, const char *name, fx_ivalue *val, const char *path) {
    rctx *r = L->r;
    const cJSON *m;
    char p[512];
    if ((m = pt2_jopt(L->tensor_values, name))) {
        snprintf(p, sizeof p, "%s.tensor_values.%s", L->path, name);
        fx_tensor *t = load_tensor_meta(r, m, p, FX_DEVICE_META);
        if (!t) return r->rc;
        *val = fx_iv_tensor_steal(t);
        return FX_OK;
    }
    const char *k;
    if ((m = pt2_jopt(L->sym_int_values, name))) {
        snprintf(p, sizeof p, "%s.sym_int_values.%s", L->path, name);
        fx_symint v = load_sym_int(r, m, p);
        if (!r->rc) *val = fx_iv_symint(v);
        return r->rc;
    }
    if ((m = pt2_jopt(L->sym_float_values, name))) {
        snprintf(p, sizeof p, "%s.sym_float_values.%s", L->path, name);
        const cJSON *x = pt2_junion(r, m, p, &k);
        if (x && strcmp(k, "as_float")) return pt2_unsupported(r, p, "symbolic float '%s'", name);
        *val = fx_iv_float(pt2_jdouble(r, x, p));
        return r->rc;
    }
    if ((m = pt2_jopt(L->sym_bool_values, name))) {
        snprintf(p, sizeof p, "%s.sym_bool_values.%s", L->path, name);
        const cJSON *x = pt2_junion(r, m, p, &k);
        if (x && !strcmp(k, "as_expr")) { /* a relation (the condition of a runtime assert) */
            SUB(pe, p, "as_expr");
            const fx_sym *e = pt2_jobjv(r, x, pe) ? load_sym_expr(r, x, pe) : NULL;
            if (!e) return r->rc;
            fx_sym_kind kind = fx_sym_kind_of(e);
            if (kind != FX_SYM_BOOL && kind < FX_SYM_EQ)
                return pt2_bad(r, pe, "an integer where a relation belongs");
            *val = fx_iv_symint(fx_si_from_expr(e));
            return r->rc;
        }
        if (x && strcmp(k, "as_bool")) return pt2_unsupported(r, p, "symbolic bool '%s'", name);
        *val = fx_iv_bool(pt2_jbool(r, x, p));
        return r->rc;
    }
    return pt2_bad(r, path, "value '%s' has no meta in tensor_values or sym_*_values", name);
}

static int node_ref(gload *L, const char *name, fx_ivalue *out, const char *path) {
    fx_node *n = name ? nmap_get(&L->names, name) : NULL;
    if (!n)
        return pt2_bad(L->r, path, "refers to '%s', which no earlier node defines",
                       name ? name : "?");
    *out = fx_iv_node(n);
    return FX_OK;
}

static const char *tensor_name(rctx *r, const cJSON *v, const char *path) {
    SUB(p, path, "name");
    return pt2_jstr(r, pt2_jfield(r, v, "name", path), p);
}

static const char *const LAYOUT_NAMES[] = {NULL,         "sparse_coo", "sparse_csr", "sparse_csc",
                                           "sparse_bsr", "sparse_bsc", "_mkldnn",    "strided"};
static const char *const MEMFORMAT_NAMES[] = {NULL, "contiguous_format", "channels_last",
                                              "channels_last_3d", "preserve_format"};

/* An Argument union as an ivalue (node references resolved, graphs loaded as get_attr nodes). */
static int load_arg(gload *L, const cJSON *a, fx_ivalue *out, const char *path) {
    rctx *r = L->r;
    const char *k;
    *out = (fx_ivalue){0};
    const cJSON *v = pt2_junion(r, a, path, &k);
    if (!v) return r->rc;
    SUB(p, path, "%s", k);
    if (!strcmp(k, "as_none")) {
        *out = fx_iv_none();
    } else if (!strcmp(k, "as_tensor") || !strcmp(k, "as_optional_tensor")) {
        if (!strcmp(k, "as_optional_tensor")) {
            const char *k2;
            const cJSON *x = pt2_junion(r, v, p, &k2);
            if (!x) return r->rc;
            if (!strcmp(k2, "as_none")) {
                *out = fx_iv_none();
                return FX_OK;
            }
            v = x;
        }
        const char *nm = tensor_name(r, v, p);
        if (nm) node_ref(L, nm, out, p);
    } else if (!strcmp(k, "as_int")) {
        *out = fx_iv_int(pt2_jint(r, v, p));
    } else if (!strcmp(k, "as_float")) {
        *out = fx_iv_float(pt2_jdouble(r, v, p));
    } else if (!strcmp(k, "as_bool")) {
        *out = fx_iv_bool(pt2_jbool(r, v, p));
    } else if (!strcmp(k, "as_string")) {
        const char *s = pt2_jstr(r, v, p);
        if (s) {
            *out = fx_iv_str(s);
            if (out->tag != FX_IV_STR) return fx_err_setf(r->err, FX_ENOMEM, "out of memory");
        }
    } else if (!strcmp(k, "as_scalar_type")) {
        fx_dtype dt = load_dtype(r, v, p);
        if (!r->rc) *out = fx_iv_dtype(dt);
    } else if (!strcmp(k, "as_layout") || !strcmp(k, "as_memory_format")) {
        bool lay = k[3] == 'l';
        int64_t e = pt2_jint(r, v, p);
        int lim = lay ? 8 : 5;
        if (!r->rc && (e <= 0 || e >= lim))
            return pt2_unsupported(r, p, "%s %lld", lay ? "layout" : "memory format", (long long)e);
        if (!r->rc) *out = fx_iv_str(lay ? LAYOUT_NAMES[e] : MEMFORMAT_NAMES[e]);
    } else if (!strcmp(k, "as_device")) {
        SUB(pt, p, "type");
        const char *ty = pt2_jstr(r, pt2_jfield(r, v, "type", p), pt);
        if (ty && !strcmp(ty, "cpu"))
            *out = fx_iv_device(FX_DEVICE_CPU);
        else if (ty && !strcmp(ty, "meta"))
            *out = fx_iv_device(FX_DEVICE_META);
        else if (ty)
            return pt2_unsupported(r, pt, "device '%s' (fxdb runs on the cpu)", ty);
    } else if (!strcmp(k, "as_sym_int") || !strcmp(k, "as_sym_float") ||
               !strcmp(k, "as_sym_bool")) {
        const char *k2;
        const cJSON *x = pt2_junion(r, v, p, &k2);
        if (!x) return r->rc;
        SUB(p2, p, "%s", k2);
        if (!strcmp(k2, "as_name")) {
            const char *nm = pt2_jstr(r, x, p2);
            if (nm) node_ref(L, nm, out, p2);
        } else if (!strcmp(k2, "as_int")) {
            *out = fx_iv_int(pt2_jint(r, x, p2));
        } else if (!strcmp(k2, "as_float")) {
            *out = fx_iv_float(pt2_jdouble(r, x, p2));
        } else if (!strcmp(k2, "as_bool")) {
            *out = fx_iv_bool(pt2_jbool(r, x, p2));
        } else {
            return pt2_bad(r, p, "unknown kind '%s'", k2);
        }
    } else if (!strcmp(k, "as_tensors") || !strcmp(k, "as_ints") || !strcmp(k, "as_floats") ||
               !strcmp(k, "as_bools") || !strcmp(k, "as_strings") || !strcmp(k, "as_sym_ints") ||
               !strcmp(k, "as_sym_floats") || !strcmp(k, "as_sym_bools") ||
               !strcmp(k, "as_optional_tensors")) {
        if (!pt2_jarr(r, v, p)) return r->rc;
        int n = cJSON_GetArraySize(v);
        fx_ivalue lst;
        if (fx_iv_list(n, &lst, r->err)) return r->rc = r->err->code;
        int i = 0;
        for (const cJSON *e = v->child; e && !r->rc; e = e->next, i++) {
            SUB(pe, p, "[%d]", i);
            fx_ivalue *dst = &lst.u.list.items[i];
            switch (k[3]) {
            case 't': { /* as_tensors */
                const char *nm = tensor_name(r, e, pe);
                if (nm) node_ref(L, nm, dst, pe);
                break;
            }
            case 'i': *dst = fx_iv_int(pt2_jint(r, e, pe)); break;
            case 'f': *dst = fx_iv_float(pt2_jdouble(r, e, pe)); break;
            case 'b': *dst = fx_iv_bool(pt2_jbool(r, e, pe)); break;
            case 'o': { /* as_optional_tensors: {"as_tensor": ...} | {"as_none": true} */
                const char *k2;
                const cJSON *x = pt2_junion(r, e, pe, &k2);
                if (!x) break;
                if (!strcmp(k2, "as_none"))
                    *dst = fx_iv_none();
                else if (!strcmp(k2, "as_tensor")) {
                    const char *nm = tensor_name(r, x, pe);
                    if (nm) node_ref(L, nm, dst, pe);
                } else {
                    pt2_bad(r, pe, "unknown optional tensor kind '%s'", k2);
                }
                break;
            }
            case 's':
                if (k[4] == 't') { /* as_strings */
                    const char *s = pt2_jstr(r, e, pe);
                    if (s) *dst = fx_iv_str(s);
                } else { /* as_sym_ints / floats / bools: SymXArgument unions */
                    const char *k2;
                    const cJSON *x = pt2_junion(r, e, pe, &k2);
                    if (!x) break;
                    if (!strcmp(k2, "as_name")) {
                        const char *nm = pt2_jstr(r, x, pe);
                        if (nm) node_ref(L, nm, dst, pe);
                    } else if (!strcmp(k2, "as_int"))
                        *dst = fx_iv_int(pt2_jint(r, x, pe));
                    else if (!strcmp(k2, "as_float"))
                        *dst = fx_iv_float(pt2_jdouble(r, x, pe));
                    else if (!strcmp(k2, "as_bool"))
                        *dst = fx_iv_bool(pt2_jbool(r, x, pe));
                    else
                        pt2_bad(r, pe, "unknown kind '%s'", k2);
                }
                break;
            }
        }
        if (r->rc) {
            fx_ivalue_clear(&lst);
            return r->rc;
        }
        *out = lst;
    } else if (!strcmp(k, "as_graph")) {
        SUB(pn, p, "name");
        SUB(pg, p, "graph");
        const char *nm = pt2_jstr(r, pt2_jfield(r, v, "name", p), pn);
        const cJSON *gj = pt2_jfield(r, v, "graph", p);
        if (r->rc) return r->rc;
        if (L->depth > 16)
            return pt2_unsupported(r, pg, "higher-order ops nested more than 16 deep");
        fx_graph *sub = load_graph(r, gj, pg, L->depth + 1);
        if (!sub) return r->rc;
        fx_node *ga = fx_graph_get_attr(L->g, nm, r->err);
        if (!ga) {
            fx_graph_free(sub);
            return r->rc = r->err->code;
        }
        fx_node_set_subgraph(ga, sub);
        *out = fx_iv_node(ga);
    } else if (!strcmp(k, "as_operator")) { /* an OpOverload argument (auto_functionalized's op) */
        const char *s = pt2_jstr(r, v, p);
        if (s) {
            *out = fx_iv_str(!strncmp(s, "torch.ops.", 10) ? s + 10 : s);
            if (out->tag != FX_IV_STR) return fx_err_setf(r->err, FX_ENOMEM, "out of memory");
        }
    } else if (!strcmp(k, "as_custom_obj") || !strcmp(k, "as_complex") ||
               !strcmp(k, "as_nested_tensors") || !strcmp(k, "as_int_lists") ||
               !strcmp(k, "as_string_to_argument")) {
        return pt2_unsupported(r, path, "argument kind '%s' is not supported by fxdb", k);
    } else {
        return pt2_bad(r, path, "unknown argument kind '%s'", k);
    }
    return r->rc;
}

/* Whether v can stand for schema argument a (so that running the node cannot misread it). */
static bool arg_fits(const fx_arg_schema *a, const fx_ivalue *v) {
    if (v->tag == FX_IV_NONE)
        return a->optional || a->type == FX_TY_GENERATOR || a->type == FX_TY_ANY;
    fx_ivtag vt = v->tag == FX_IV_NODE ? v->u.node->val.tag : v->tag;
    if (vt == FX_IV_SYMINT) vt = FX_IV_INT;
    bool scalar = vt == FX_IV_INT || vt == FX_IV_FLOAT || vt == FX_IV_BOOL;
    switch (a->type) {
    case FX_TY_TENSOR: return v->tag == FX_IV_NODE ? vt == FX_IV_TENSOR : scalar;
    case FX_TY_INT: return vt == FX_IV_INT;
    case FX_TY_FLOAT: return vt == FX_IV_FLOAT || vt == FX_IV_INT;
    case FX_TY_SCALAR: return scalar;
    case FX_TY_BOOL: return vt == FX_IV_BOOL;
    case FX_TY_DTYPE: return v->tag == FX_IV_DTYPE;
    case FX_TY_DEVICE: return v->tag == FX_IV_DEVICE;
    case FX_TY_STR:
    case FX_TY_LAYOUT:
    case FX_TY_MEMFORMAT: return v->tag == FX_IV_STR;
    case FX_TY_GENERATOR: return false;
    case FX_TY_ANY: return true;
    case FX_TY_INT_LIST:
    case FX_TY_FLOAT_LIST:
    case FX_TY_BOOL_LIST:
    case FX_TY_TENSOR_LIST:
        if (v->tag != FX_IV_LIST)
            return a->type == FX_TY_INT_LIST && a->list_len > 0 && vt == FX_IV_INT;
        for (int i = 0; i < v->u.list.n; i++) {
            const fx_ivalue *e = &v->u.list.items[i];
            fx_ivtag et = e->tag == FX_IV_NODE ? e->u.node->val.tag : e->tag;
            if (et == FX_IV_SYMINT) et = FX_IV_INT;
            bool ok = a->type == FX_TY_INT_LIST     ? et == FX_IV_INT
                      : a->type == FX_TY_FLOAT_LIST ? et == FX_IV_FLOAT || et == FX_IV_INT
                      : a->type == FX_TY_BOOL_LIST  ? et == FX_IV_BOOL
                                                   : (e->tag == FX_IV_NODE && et == FX_IV_TENSOR) ||
                                                         (e->tag == FX_IV_NONE && a->elem_optional);
            if (!ok) return false;
        }
        return true;
    }
    return false;
}

static const char *argkind_name(const fx_ivalue *v) {
    switch (v->tag) {
    case FX_IV_NODE:
        return v->u.node->val.tag == FX_IV_TENSOR ? "a tensor"
               : v->u.node->val.tag == FX_IV_LIST ? "a list-valued node"
                                                  : "a symbolic value";
    case FX_IV_NONE: return "None";
    case FX_IV_INT: return "an int";
    case FX_IV_FLOAT: return "a float";
    case FX_IV_BOOL: return "a bool";
    case FX_IV_STR: return "a string";
    case FX_IV_DTYPE: return "a dtype";
    case FX_IV_DEVICE: return "a device";
    case FX_IV_LIST: return "a list";
    default: return "a value";
    }
}

/* Parses a Python traceback ("  File \"f\", line 9, in fn\n    code\n") into frames, innermost
 * first. Lines of other shapes are skipped. */
static int set_stack(fx_node *n, const char *st, fx_err *err) {
    fx_frame fr[64];
    char *bufs[64][3];
    int nf = 0;
    const char *p = st;
    while (*p && nf < 64) {
        const char *eol = strchr(p, '\n');
        size_t ln = eol ? (size_t)(eol - p) : strlen(p);
        const char *q = p;
        while (q < p + ln && *q == ' ') q++;
        if ((size_t)(p + ln - q) > 6 && !strncmp(q, "File \"", 6)) {
            const char *f0 = q + 6, *f1 = memchr(f0, '"', (size_t)(p + ln - f0));
            if (f1) {
                int line = 0;
                const char *lp = strstr(f1, ", line ");
                const char *in = strstr(f1, ", in ");
                if (lp && lp < p + ln) line = atoi(lp + 7);
                const char *fn0 = (in && in < p + ln) ? in + 5 : p + ln;
                bufs[nf][0] = fx_malloc((size_t)(f1 - f0) + 1);
                bufs[nf][1] = fx_malloc((size_t)(p + ln - fn0) + 2);
                bufs[nf][2] = NULL;
                if (!bufs[nf][0] || !bufs[nf][1]) {
                    fx_free(bufs[nf][0]);
                    fx_free(bufs[nf][1]);
                    for (int i = 0; i < nf; i++)
                        for (int j = 0; j < 3; j++) fx_free(bufs[i][j]);
                    return fx_err_setf(err, FX_ENOMEM, "out of memory");
                }
                memcpy(bufs[nf][0], f0, (size_t)(f1 - f0));
                bufs[nf][0][f1 - f0] = 0;
                memcpy(bufs[nf][1], fn0, (size_t)(p + ln - fn0));
                bufs[nf][1][p + ln - fn0] = 0;
                if (!*bufs[nf][1]) strcpy(bufs[nf][1], "?");
                fr[nf].line = line;
                nf++;
                /* the code line that follows, if any */
                const char *nx = eol ? eol + 1 : p + ln;
                const char *eol2 = strchr(nx, '\n');
                size_t l2 = eol2 ? (size_t)(eol2 - nx) : strlen(nx);
                const char *c = nx;
                while (c < nx + l2 && *c == ' ') c++;
                if (l2 && (size_t)(nx + l2 - c) > 0 && strncmp(c, "File \"", 6)) {
                    bufs[nf - 1][2] = fx_malloc((size_t)(nx + l2 - c) + 1);
                    if (bufs[nf - 1][2]) {
                        memcpy(bufs[nf - 1][2], c, (size_t)(nx + l2 - c));
                        bufs[nf - 1][2][nx + l2 - c] = 0;
                    }
                    eol = eol2;
                }
            }
        }
        if (!eol) break;
        p = eol + 1;
    }
    /* innermost first */
    fx_frame out[64];
    for (int i = 0; i < nf; i++) {
        int s = nf - 1 - i;
        out[i].file = bufs[s][0];
        out[i].line = fr[s].line;
        out[i].func = bufs[s][1];
        out[i].code = bufs[s][2] ? bufs[s][2] : (char *)"";
    }
    int rc = nf ? fx_node_set_stack(n, out, nf, err) : FX_OK;
    for (int i = 0; i < nf; i++)
        for (int j = 0; j < 3; j++) fx_free(bufs[i][j]);
    return rc;
}

/* "key,path,type;key,path,type" (commas inside brackets belong to the field). */
static int set_modules(fx_node *n, const char *s, fx_err *err) {
    fx_module_entry ents[32];
    char *own[32][2];
    int ne = 0, rc = FX_OK;
    const char *p = s;
    while (*p && ne < 32) {
        const char *f[4] = {p, NULL, NULL, NULL};
        int nf = 1, depth = 0;
        const char *q = p;
        for (; *q && !(*q == ';' && depth == 0); q++) {
            if (*q == '(' || *q == '[')
                depth++;
            else if (*q == ')' || *q == ']')
                depth--;
            else if (*q == ',' && depth == 0 && nf < 3)
                f[nf++] = q + 1;
        }
        if (nf == 3) {
            size_t lp = (size_t)(f[2] - 1 - f[1]), lt = (size_t)(q - f[2]);
            own[ne][0] = fx_malloc(lp + 1);
            own[ne][1] = fx_malloc(lt + 1);
            if (!own[ne][0] || !own[ne][1]) {
                fx_free(own[ne][0]);
                fx_free(own[ne][1]);
                rc = fx_err_setf(err, FX_ENOMEM, "out of memory");
                break;
            }
            memcpy(own[ne][0], f[1], lp);
            own[ne][0][lp] = 0;
            memcpy(own[ne][1], f[2], lt);
            own[ne][1][lt] = 0;
            ents[ne].path = own[ne][0];
            ents[ne].cls = own[ne][1];
            ne++;
        }
        p = *q ? q + 1 : q;
    }
    if (!rc && ne) rc = fx_node_set_modules(n, ents, ne, err);
    for (int i = 0; i < ne; i++) {
        fx_free(own[i][0]);
        fx_free(own[i][1]);
    }
    return rc;
}

/* fxdb's facts about a node ({"mutation": {...}, "no_grad": true}, optional) onto n. */
static int set_fxdb_facts(fx_node *n, const cJSON *fx, fx_err *err) {
    const cJSON *mu = pt2_jopt(fx, "mutation");
    if (mu) {
        const cJSON *st = pt2_jopt(mu, "state"), *ver = pt2_jopt(mu, "version"),
                    *fo = pt2_jopt(mu, "from_op");
        const cJSON *vp = pt2_jopt(mu, "view_path"), *rn = pt2_jopt(mu, "raw_node");
        if (cJSON_IsString(st) && cJSON_IsNumber(ver)) {
            fx_mutation m = {st->valuestring, (int)ver->valuedouble,
                             cJSON_IsString(fo) ? fo->valuestring : (char *)"",
                             cJSON_IsString(vp) ? vp->valuestring : NULL,
                             cJSON_IsString(rn) ? rn->valuestring : NULL};
            int rc = fx_node_set_mutation(n, &m, err);
            if (rc) return rc;
        }
    }
    if (cJSON_IsTrue(pt2_jopt(fx, "no_grad"))) n->flags |= FX_NODEF_NO_GRAD;
    return FX_OK;
}

/* Node metadata: stack_trace, nn_module_stack, from_node, and fxdb's facts in custom. */
static int load_metadata(gload *L, fx_node *n, const cJSON *md, const char *path) {
    rctx *r = L->r;
    if (!md) return FX_OK;
    if (!pt2_jobjv(r, md, path)) return r->rc;
    for (const cJSON *e = md->child; e; e = e->next) {
        SUB(p, path, "%s", e->string);
        if (!pt2_jstr(r, e, p)) return r->rc;
    }
    const cJSON *v;
    int rc = FX_OK;
    if ((v = pt2_jopt(md, "stack_trace"))) rc = set_stack(n, v->valuestring, r->err);
    if (!rc && (v = pt2_jopt(md, "nn_module_stack"))) rc = set_modules(n, v->valuestring, r->err);
    if (!rc && (v = pt2_jopt(md, "from_node"))) {
        cJSON *fj = cJSON_Parse(v->valuestring);
        for (const cJSON *e = cJSON_IsArray(fj) ? fj->child : NULL; e && !rc; e = e->next) {
            const cJSON *nm = pt2_jopt(e, "name");
            if (cJSON_IsString(nm)) rc = fx_node_add_from(n, nm->valuestring, r->err);
        }
        cJSON_Delete(fj);
    }
    if (!rc && (v = pt2_jopt(md, "custom"))) {
        cJSON *cj = pt2_parse_inner(v->valuestring);
        rc = set_fxdb_facts(n, pt2_jopt(cj, "fxdb"), r->err);
        cJSON_Delete(cj);
    }
    if (rc) r->rc = rc;
    return rc;
}

/* The fxdb facts the producer's metadata keeps for its getitem user `name` (custom
 * fxdb.outputs.<name>), onto the getitem node g. */
static int load_getitem_facts(rctx *r, fx_node *g, const cJSON *md, const char *name) {
    const cJSON *v = pt2_jopt(md, "custom");
    if (!cJSON_IsString(v)) return FX_OK;
    cJSON *cj = pt2_parse_inner(v->valuestring);
    int rc = set_fxdb_facts(g, pt2_jopt(pt2_jopt(pt2_jopt(cj, "fxdb"), "outputs"), name), r->err);
    cJSON_Delete(cj);
    if (rc) r->rc = rc;
    return rc;
}

static bool is_hop(const char *t) { return !strncmp(t, "torch.ops.higher_order.", 23); }

/* "torch.ops.<namespace>.<op>.<overload>" of an op outside aten (torch.library), each part an
 * identifier. */
static bool is_custom_op_name(const char *t) {
    if (strncmp(t, "torch.ops.", 10) || !strncmp(t + 10, "higher_order.", 13) || strlen(t) > 200)
        return false;
    int parts = 1;
    const char *p = t + 10;
    if (!*p || *p == '.') return false;
    for (; *p; p++) {
        if (*p == '.') {
            if (p[1] == 0 || p[1] == '.') return false;
            parts++;
        } else if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9'))) {
            return false;
        }
    }
    return parts == 3;
}

/* auto_functionalized(op, **kwargs) of an op registered here: args[1..] become the op's schema
 * arguments in schema order (the file names them; defaults fill the rest), as fxdb's own node
 * holds them. `names` are the file's argument names. */
static int af_schema_order(gload *L, fx_ivalue **args, int *nin, const char **names,
                           const char *path) {
    rctx *r = L->r;
    if (*nin < 1 || (*args)[0].tag != FX_IV_STR)
        return pt2_bad(r, path, "auto_functionalized takes the op first");
    char full[300];
    snprintf(full, sizeof full, "torch.ops.%s", (*args)[0].u.s);
    const fx_opdef *op = fx_op_lookup(full);
    if (!op) return FX_OK; /* not registered: kept in file order, running names it */
    const fx_schema *sc = &op->schema;
    fx_ivalue *na = fx_calloc((size_t)sc->nargs + 2, sizeof *na);
    if (!na) return r->rc = fx_err_setf(r->err, FX_ENOMEM, "out of memory");
    na[0] = (*args)[0];
    (*args)[0] = (fx_ivalue){0};
    for (int i = 1; i < *nin && !r->rc; i++) {
        int ai = names[i] ? fx_schema_arg_index(sc, names[i]) : -1;
        if (ai < 0)
            pt2_unsupported(r, path, "'%s' is not an argument of %s", names[i] ? names[i] : "",
                            full + 10);
        else if (na[1 + ai].tag != FX_IV_UNSET)
            pt2_bad(r, path, "argument '%s' given twice", names[i]);
        else {
            na[1 + ai] = (*args)[i];
            (*args)[i] = (fx_ivalue){0};
        }
    }
    for (int a = 0; a < sc->nargs && !r->rc; a++) {
        if (na[1 + a].tag != FX_IV_UNSET) continue;
        if (!sc->args[a].has_default)
            pt2_bad(r, path, "%s needs argument '%s'", full + 10, sc->args[a].name);
        else if (fx_ivalue_copy(&na[1 + a], &sc->args[a].def, r->err))
            r->rc = r->err->code;
    }
    for (int i = 0; i < *nin; i++) fx_ivalue_clear(&(*args)[i]);
    fx_free(*args);
    *args = na;
    *nin = sc->nargs + 1;
    return r->rc; /* on an error the caller clears the arguments */
}

/* The SymInt arithmetic and comparisons fxdb prints and runs (serialize.py writes operator.add
 * as "_operator.add", torch.sym_max as "torch.sym_max"). */
static bool is_sym_op(const char *t) {
    static const char *const ops[] = {
        "_operator.add", "_operator.sub", "_operator.mul", "_operator.floordiv", "_operator.mod",
        "torch.sym_max", "torch.sym_min", "operator.add", "operator.sub", "operator.mul",
        "operator.floordiv", "operator.mod", "_operator.neg", "operator.neg",
        /* the conditions of runtime asserts (SymBool) */
        "_operator.ge", "_operator.gt", "_operator.le", "_operator.lt", "_operator.eq",
        "_operator.ne"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(t, ops[i])) return true;
    return false;
}

/* One serialized node: its call, then its values (one, or a getitem per named output). */
static int load_node(gload *L, const cJSON *nj, const char *path) {
    rctx *r = L->r;
    SUB(pt, path, "target");
    SUB(pi, path, "inputs");
    SUB(po, path, "outputs");
    SUB(pm, path, "metadata");
    const char *target = pt2_jstr(r, pt2_jfield(r, nj, "target", path), pt);
    const cJSON *ins = pt2_jarr(r, pt2_jfield(r, nj, "inputs", path), pi);
    const cJSON *outs = pt2_jarr(r, pt2_jfield(r, nj, "outputs", path), po);
    const cJSON *md = pt2_jopt(nj, "metadata");
    const cJSON *nmj = pt2_jopt(nj, "name");
    const char *given = cJSON_IsString(nmj) ? nmj->valuestring : NULL;
    if (r->rc) return r->rc;

    /* outputs: names of the produced values */
    int nouts = cJSON_GetArraySize(outs);
    bool list_ret = false;
    const cJSON *outlist = outs;
    if (nouts == 1) {
        const char *k;
        const cJSON *x = pt2_junion(r, outs->child, po, &k);
        if (!x) return r->rc;
        if (!strcmp(k, "as_tensors")) {
            list_ret = true;
            outlist = pt2_jarr(r, x, po);
            if (!outlist) return r->rc;
        }
    }
    int nvals = list_ret ? cJSON_GetArraySize(outlist) : nouts;
    if (nvals > 4096) return pt2_unsupported(r, po, "%d outputs", nvals);
    const char **vnames = fx_calloc((size_t)nvals + 1, sizeof *vnames);
    if (!vnames) return r->rc = fx_err_setf(r->err, FX_ENOMEM, "out of memory");
    int i = 0;
    for (const cJSON *o = outlist->child; o && !r->rc; o = o->next, i++) {
        SUB(pe, po, "[%d]", i);
        if (list_ret) {
            vnames[i] = tensor_name(r, o, pe);
            continue;
        }
        const char *k;
        const cJSON *x = pt2_junion(r, o, pe, &k);
        if (!x) break;
        if (!strcmp(k, "as_none"))
            vnames[i] = "";
        else if (!strcmp(k, "as_tensor"))
            vnames[i] = tensor_name(r, x, pe);
        else if (!strncmp(k, "as_sym_", 7)) {
            const char *k2;
            const cJSON *y = pt2_junion(r, x, pe, &k2);
            if (y && !strcmp(k2, "as_name"))
                vnames[i] = pt2_jstr(r, y, pe);
            else if (y)
                pt2_bad(r, pe, "a node output must be named");
        } else if (!strcmp(k, "as_tensors")) {
            pt2_unsupported(r, pe, "a list output among several outputs");
        } else {
            pt2_bad(r, pe, "unknown output kind '%s'", k);
        }
    }
    if (r->rc) {
        fx_free(vnames);
        return r->rc;
    }
    bool multi = list_ret || nvals > 1 ||
                 (is_hop(target) && nvals == 1 && pt2_jopt(nj, "is_hop_single_tensor_return") &&
                  !cJSON_IsTrue(pt2_jopt(nj, "is_hop_single_tensor_return")));

    /* the call */
    const fx_opdef *op = NULL;
    char ftarget[256] = "";
    if (!strncmp(target, "torch.ops.aten.", 15)) {
        op = fx_op_lookup(target);
        if (!op) snprintf(ftarget, sizeof ftarget, "%s", target + 10); /* unknown: "aten.x.y" */
    } else if (is_hop(target)) {
        snprintf(ftarget, sizeof ftarget, "%s", target + 10);
    } else if (!strncmp(target, "torch.ops.", 10) && (op = fx_op_lookup(target)) != NULL) {
        /* a custom op registered (torch.library) before the file was loaded */
    } else if (!strcmp(target, "_operator.getitem")) {
        snprintf(ftarget, sizeof ftarget, "getitem");
    } else if (is_sym_op(target)) { /* SymInt arithmetic: fxdb's operator.add / torch.sym_max */
        snprintf(ftarget, sizeof ftarget, "%s", target[0] == '_' ? target + 1 : target);
    } else if (!strncmp(target, "fxdb.", 5)) {
        snprintf(ftarget, sizeof ftarget, "%s", target);
    } else if (is_custom_op_name(target)) {
        /* a custom op not registered here: it loads like an ATen op fxdb does not have (kept by
         * name with its arguments in file order; running the program names it) */
        snprintf(ftarget, sizeof ftarget, "%s", target + 10);
    } else {
        fx_free(vnames);
        return pt2_unsupported(r, pt, "op '%s' is not supported by fxdb", target);
    }
    const char *hint = !multi && nvals == 1 && *vnames[0] ? vnames[0] : given;
    int nin = cJSON_GetArraySize(ins);
    fx_node *n = NULL;
    if (op) {
        const fx_schema *s = &op->schema;
        fx_ivalue args[FX_SCHEMA_MAX_ARGS] = {0};
        i = 0;
        for (const cJSON *e = ins->child; e && !r->rc; e = e->next, i++) {
            SUB(pe, pi, "[%d]", i);
            SUB(pn, pe, "name");
            SUB(pa, pe, "arg");
            const char *an = pt2_jstr(r, pt2_jfield(r, e, "name", pe), pn);
            const cJSON *aj = pt2_jfield(r, e, "arg", pe);
            if (r->rc) break;
            int ai = fx_schema_arg_index(s, an);
            if (ai < 0) {
                pt2_unsupported(r, pn, "'%s' is not an argument of aten.%s", an,
                                fx_op_qualname(op));
                break;
            }
            fx_ivalue_clear(&args[ai]);
            if (load_arg(L, aj, &args[ai], pa)) break;
            if (!arg_fits(&s->args[ai], &args[ai]))
                pt2_bad(r, pa, "argument '%s' of aten.%s cannot be %s", an, fx_op_qualname(op),
                        argkind_name(&args[ai]));
        }
        for (int a = 0; a < s->nargs && !r->rc; a++)
            if (args[a].tag == FX_IV_UNSET && !s->args[a].has_default)
                pt2_bad(r, pi, "aten.%s needs argument '%s'", fx_op_qualname(op), s->args[a].name);
        if (!r->rc) {
            n = fx_graph_call(L->g, op, args, hint, r->err);
            if (!n) r->rc = r->err->code;
        }
        for (int a = 0; a < FX_SCHEMA_MAX_ARGS; a++) fx_ivalue_clear(&args[a]);
        if (!r->rc && !multi && op->schema.nrets > 1) multi = true;
    } else {
        fx_ivalue *args = fx_calloc((size_t)nin + 1, sizeof *args);
        const char **anames = fx_calloc((size_t)nin + 1, sizeof *anames);
        if (!args || !anames) r->rc = fx_err_setf(r->err, FX_ENOMEM, "out of memory");
        i = 0;
        for (const cJSON *e = ins ? ins->child : NULL; e && !r->rc; e = e->next, i++) {
            SUB(pe, pi, "[%d]", i);
            SUB(pa, pe, "arg");
            const cJSON *nm = pt2_jopt(e, "name");
            anames[i] = cJSON_IsString(nm) ? nm->valuestring : NULL;
            load_arg(L, pt2_jfield(r, e, "arg", pe), &args[i], pa);
        }
        if (!r->rc && !strcmp(ftarget, FX_HOP_AUTO_FUNCTIONALIZED))
            af_schema_order(L, &args, &nin, anames, pi);
        fx_free(anames);
        if (!r->rc && !strcmp(ftarget, "getitem") &&
            (nin != 2 || args[0].tag != FX_IV_NODE || args[1].tag != FX_IV_INT))
            pt2_bad(r, pi, "getitem takes a node and an int");
        if (!r->rc && is_sym_op(target)) {
            int want = strstr(target, "operator.neg") ? 1 : 2;
            if (nin != want)
                pt2_bad(r, pi, "%s takes %d argument%s", target, want, want == 1 ? "" : "s");
        }
        if (!r->rc) {
            n = fx_graph_call_target(L->g, ftarget, args, nin, hint, r->err);
            if (!n) r->rc = r->err->code;
        }
        for (int a = 0; a < nin && args; a++) fx_ivalue_clear(&args[a]);
        fx_free(args);
    }
    if (!r->rc) load_metadata(L, n, md, pm);
    /* a body's get_attr node carries its higher-order op's location, as the tracer records it */
    for (int a = 0; !r->rc && a < n->nargs; a++) {
        fx_node *ga = n->args[a].tag == FX_IV_NODE ? n->args[a].u.node : NULL;
        if (ga && ga->op == FX_NODE_GET_ATTR && ga->subgraph && ga->nstack == 0 &&
            fx_node_copy_meta(ga, n, r->err))
            r->rc = r->err->code;
    }
    /* values: one node, or getitems after it */
    if (!r->rc && !multi && nvals == 1 && *vnames[0]) {
        fx_ivalue val = {0};
        if (!value_meta(L, vnames[0], &val, po)) {
            if (fx_node_set_val(n, &val, r->err)) r->rc = r->err->code;
            if (!r->rc && nmap_get(&L->names, vnames[0]))
                pt2_bad(r, po, "value '%s' is defined twice", vnames[0]);
            if (!r->rc && nmap_put(&L->names, vnames[0], n, r->err)) r->rc = r->err->code;
        }
        fx_ivalue_clear(&val);
    } else if (!r->rc && nvals >= 1) {
        fx_ivalue lst;
        if (fx_iv_list(nvals, &lst, r->err)) r->rc = r->err->code;
        for (int k = 0; k < nvals && !r->rc; k++) {
            if (!*vnames[k]) continue;
            if (value_meta(L, vnames[k], &lst.u.list.items[k], po)) break;
            char unused[300];
            snprintf(unused, sizeof unused, "%s_unused_%d", n->name, k);
            if (!strcmp(vnames[k], unused)) continue;
            fx_ivalue ga[2] = {fx_iv_node(n), fx_iv_int(k)};
            fx_node *gi = fx_graph_call_target(L->g, "getitem", ga, 2, vnames[k], r->err);
            if (!gi || fx_node_set_val(gi, &lst.u.list.items[k], r->err) ||
                fx_node_copy_meta(gi, n, r->err)) {
                r->rc = r->err->code;
                break;
            }
            if (md && load_getitem_facts(r, gi, md, vnames[k])) break;
            if (nmap_get(&L->names, vnames[k]))
                pt2_bad(r, po, "value '%s' is defined twice", vnames[k]);
            else if (nmap_put(&L->names, vnames[k], gi, r->err))
                r->rc = r->err->code;
        }
        if (!r->rc && fx_node_set_val(n, &lst, r->err)) r->rc = r->err->code;
        fx_ivalue_clear(&lst);
    }
    fx_free(vnames);
    return r->rc;
}

static fx_graph *load_graph(rctx *r, const cJSON *gj, const char *path, int depth) {
    gload L = {r, NULL, {0}, NULL, NULL, NULL, NULL, path, depth};
    if (!pt2_jobjv(r, gj, path)) return NULL;
    SUB(pi, path, "inputs");
    SUB(pn, path, "nodes");
    SUB(po, path, "outputs");
    const cJSON *ins = pt2_jarr(r, pt2_jfield(r, gj, "inputs", path), pi);
    const cJSON *nodes = pt2_jarr(r, pt2_jfield(r, gj, "nodes", path), pn);
    const cJSON *outs = pt2_jarr(r, pt2_jfield(r, gj, "outputs", path), po);
    L.tensor_values = pt2_jfield(r, gj, "tensor_values", path);
    L.sym_int_values = pt2_jopt(gj, "sym_int_values");
    L.sym_float_values = pt2_jopt(gj, "sym_float_values");
    L.sym_bool_values = pt2_jopt(gj, "sym_bool_values");
    if (r->rc) return NULL;
    SUB(ptv, path, "tensor_values");
    if (!pt2_jobjv(r, L.tensor_values, ptv)) return NULL;
    L.g = fx_graph_new();
    if (!L.g) {
        r->rc = fx_err_setf(r->err, FX_ENOMEM, "out of memory");
        return NULL;
    }
    int i = 0;
    for (const cJSON *a = ins->child; a && !r->rc; a = a->next, i++) {
        SUB(pe, pi, "[%d]", i);
        const char *k, *nm = NULL;
        const cJSON *x = pt2_junion(r, a, pe, &k);
        if (!x) break;
        if (!strcmp(k, "as_tensor"))
            nm = tensor_name(r, x, pe);
        else if (!strcmp(k, "as_sym_int")) {
            const char *k2;
            const cJSON *y = pt2_junion(r, x, pe, &k2);
            if (y && !strcmp(k2, "as_name"))
                nm = pt2_jstr(r, y, pe);
            else if (y)
                pt2_bad(r, pe, "a constant symint input");
        } else if (!strcmp(k, "as_custom_obj")) {
            pt2_unsupported(r, pe, "custom object inputs (torchbind) are not supported by fxdb");
        } else {
            pt2_unsupported(r, pe,
                            "graph input kind '%s' (a constant input) is not supported by fxdb", k);
        }
        if (r->rc) break;
        fx_ivalue val = {0};
        if (value_meta(&L, nm, &val, pe)) break;
        fx_node *ph = fx_graph_placeholder(L.g, nm, r->err);
        if (!ph || fx_node_set_val(ph, &val, r->err)) r->rc = r->err->code;
        fx_ivalue_clear(&val);
        if (!r->rc && nmap_get(&L.names, nm)) pt2_bad(r, pe, "input '%s' is defined twice", nm);
        if (!r->rc && nmap_put(&L.names, nm, ph, r->err)) r->rc = r->err->code;
    }
    i = 0;
    for (const cJSON *nj = nodes->child; nj && !r->rc; nj = nj->next, i++) {
        SUB(pe, pn, "[%d]", i);
        load_node(&L, nj, pe);
    }
    if (!r->rc) {
        fx_ivalue res;
        int no = cJSON_GetArraySize(outs);
        if (fx_iv_list(no, &res, r->err)) r->rc = r->err->code;
        i = 0;
        for (const cJSON *o = r->rc ? NULL : outs->child; o && !r->rc; o = o->next, i++) {
            SUB(pe, po, "[%d]", i);
            load_arg(&L, o, &res.u.list.items[i], pe);
        }
        if (!r->rc && !fx_graph_output(L.g, &res, r->err)) r->rc = r->err->code;
        fx_ivalue_clear(&res);
    }
    nmap_free(&L.names);
    if (r->rc) {
        fx_graph_free(L.g);
        return NULL;
    }
    return L.g;
}

/* ---- the signature
 * ------------------------------------------------------------------------------------ */

static char *dupn(rctx *r, const char *s) {
    if (r->rc || !s) return NULL;
    char *d = fx_strdup(s);
    if (!d) r->rc = fx_err_setf(r->err, FX_ENOMEM, "out of memory");
    return d;
}

static int load_signature(rctx *r, const cJSON *sj, const char *path, fx_program *p) {
    SUB(pin, path, "input_specs");
    SUB(pout, path, "output_specs");
    const cJSON *ins = pt2_jarr(r, pt2_jfield(r, sj, "input_specs", path), pin);
    const cJSON *outs = pt2_jarr(r, pt2_jfield(r, sj, "output_specs", path), pout);
    if (r->rc) return r->rc;
    int ni = cJSON_GetArraySize(ins), no = cJSON_GetArraySize(outs);
    p->sig.inputs = fx_calloc((size_t)ni + 1, sizeof *p->sig.inputs);
    p->sig.outputs = fx_calloc((size_t)no + 1, sizeof *p->sig.outputs);
    if (!p->sig.inputs || !p->sig.outputs)
        return r->rc = fx_err_setf(r->err, FX_ENOMEM, "out of memory");
    int i = 0;
    for (const cJSON *e = ins->child; e && !r->rc; e = e->next, i++) {
        SUB(pe, pin, "[%d]", i);
        const char *k;
        const cJSON *x = pt2_junion(r, e, pe, &k);
        if (!x) break;
        SUB(pk, pe, "%s", k);
        SUB(pa, pk, "arg");
        fx_input_spec *s = &p->sig.inputs[p->sig.ninputs];
        const char *arg = NULL, *target = NULL;
        if (!strcmp(k, "user_input")) {
            s->kind = FX_INPUT_USER_INPUT;
            const char *k2;
            const cJSON *y = pt2_junion(r, pt2_jfield(r, x, "arg", pk), pa, &k2);
            if (y && !strcmp(k2, "as_tensor"))
                arg = tensor_name(r, y, pa);
            else if (y && !strcmp(k2, "as_sym_int")) {
                const char *k3;
                const cJSON *z = pt2_junion(r, y, pa, &k3);
                if (z) arg = pt2_jstr(r, z, pa);
            } else if (y)
                pt2_unsupported(r, pa, "a user input of kind '%s'", k2);
        } else if (!strcmp(k, "parameter") || !strcmp(k, "buffer") ||
                   !strcmp(k, "tensor_constant")) {
            s->kind = k[0] == 'p'   ? FX_INPUT_PARAMETER
                      : k[0] == 'b' ? FX_INPUT_BUFFER
                                    : FX_INPUT_CONSTANT_TENSOR;
            const char *tk = k[0] == 'p'   ? "parameter_name"
                             : k[0] == 'b' ? "buffer_name"
                                           : "tensor_constant_name";
            arg = tensor_name(r, pt2_jfield(r, x, "arg", pk), pa);
            SUB(pt, pk, "%s", tk);
            target = pt2_jstr(r, pt2_jfield(r, x, tk, pk), pt);
            s->persistent = true;
            if (k[0] == 'b') {
                SUB(pp, pk, "persistent");
                const cJSON *pj = pt2_jopt(x, "persistent");
                s->persistent = pj ? pt2_jbool(r, pj, pp) : true;
            }
        } else if (!strcmp(k, "token")) {
            s->kind = FX_INPUT_TOKEN;
            arg = tensor_name(r, pt2_jfield(r, x, "arg", pk), pa);
        } else if (!strcmp(k, "custom_obj") || !strcmp(k, "constant_input")) {
            pt2_unsupported(r, pk, "input spec '%s' is not supported by fxdb", k);
        } else {
            pt2_bad(r, pe, "unknown input spec kind '%s'", k);
        }
        if (r->rc) break;
        s->arg = dupn(r, arg);
        s->target = dupn(r, target);
        p->sig.ninputs++;
    }
    i = 0;
    for (const cJSON *e = outs->child; e && !r->rc; e = e->next, i++) {
        SUB(pe, pout, "[%d]", i);
        const char *k;
        const cJSON *x = pt2_junion(r, e, pe, &k);
        if (!x) break;
        SUB(pk, pe, "%s", k);
        SUB(pa, pk, "arg");
        fx_output_spec *s = &p->sig.outputs[p->sig.noutputs];
        const char *arg = NULL, *target = NULL, *tk = NULL;
        if (!strcmp(k, "user_output")) {
            s->kind = FX_OUTPUT_USER_OUTPUT;
            const char *k2;
            const cJSON *y = pt2_junion(r, pt2_jfield(r, x, "arg", pk), pa, &k2);
            if (y && !strcmp(k2, "as_tensor"))
                arg = tensor_name(r, y, pa);
            else if (y && !strncmp(k2, "as_sym_", 7)) {
                const char *k3;
                const cJSON *z = pt2_junion(r, y, pa, &k3);
                if (z && !strcmp(k3, "as_name"))
                    arg = pt2_jstr(r, z, pa);
                else
                    arg = "";
            } else if (y)
                arg = ""; /* a constant output */
        } else if (!strcmp(k, "buffer_mutation")) {
            s->kind = FX_OUTPUT_BUFFER_MUTATION, tk = "buffer_name";
        } else if (!strcmp(k, "parameter_mutation")) {
            s->kind = FX_OUTPUT_PARAMETER_MUTATION, tk = "parameter_name";
        } else if (!strcmp(k, "user_input_mutation")) {
            s->kind = FX_OUTPUT_USER_INPUT_MUTATION, tk = "user_input_name";
        } else if (!strcmp(k, "token")) {
            s->kind = FX_OUTPUT_TOKEN;
            arg = tensor_name(r, pt2_jfield(r, x, "arg", pk), pa);
        } else if (!strcmp(k, "loss_output") || !strcmp(k, "gradient_to_parameter") ||
                   !strcmp(k, "gradient_to_user_input")) {
            pt2_unsupported(r, pk,
                            "output spec '%s' (joint training graphs) is not supported by fxdb", k);
        } else {
            pt2_bad(r, pe, "unknown output spec kind '%s'", k);
        }
        if (tk) {
            arg = tensor_name(r, pt2_jfield(r, x, "arg", pk), pa);
            SUB(pt, pk, "%s", tk);
            target = pt2_jstr(r, pt2_jfield(r, x, tk, pk), pt);
        }
        if (r->rc) break;
        s->arg = dupn(r, arg);
        s->target = dupn(r, target);
        p->sig.noutputs++;
    }
    return r->rc;
}

/* The signature against the graph: one input spec per placeholder (same names, same order), one
 * output spec per output, mutation targets among the inputs. */
static int check_signature(rctx *r, const char *path, const fx_program *p) {
    int i = 0;
    for (fx_node *n = fx_graph_first(p->graph); n && n->op == FX_NODE_PLACEHOLDER;
         n = n->next, i++) {
        if (i >= p->sig.ninputs)
            return pt2_bad(r, path, "the graph has more inputs than input_specs (%d)",
                           p->sig.ninputs);
        if (strcmp(n->name, p->sig.inputs[i].arg))
            return pt2_bad(r, path, "input_specs[%d] names '%s', but graph input %d is '%s'", i,
                           p->sig.inputs[i].arg, i, n->name);
    }
    if (i != p->sig.ninputs)
        return pt2_bad(r, path, "%d input_specs for %d graph inputs", p->sig.ninputs, i);
    const fx_node *on = fx_graph_output_node(p->graph);
    int no = on && on->nargs && on->args[0].tag == FX_IV_LIST ? on->args[0].u.list.n : 0;
    if (no != p->sig.noutputs)
        return pt2_bad(r, path, "%d output_specs for %d graph outputs", p->sig.noutputs, no);
    for (i = 0; i < no; i++) {
        const fx_ivalue *v = &on->args[0].u.list.items[i];
        const fx_output_spec *s = &p->sig.outputs[i];
        if (v->tag == FX_IV_NODE && *s->arg && strcmp(v->u.node->name, s->arg))
            return pt2_bad(r, path, "output_specs[%d] names '%s', but graph output %d is '%s'", i,
                           s->arg, i, v->u.node->name);
        if (s->kind != FX_OUTPUT_USER_OUTPUT && s->kind != FX_OUTPUT_TOKEN) {
            if (v->tag != FX_IV_NODE || fx_node_tensor(v->u.node) == NULL)
                return pt2_bad(r, path, "output_specs[%d] (a mutation) is not a tensor output", i);
            bool found = false;
            for (int k = 0; k < p->sig.ninputs && !found; k++) {
                const fx_input_spec *in = &p->sig.inputs[k];
                const char *t = in->kind == FX_INPUT_USER_INPUT ? in->arg : in->target;
                found = t && !strcmp(t, s->target) &&
                        (s->kind == FX_OUTPUT_USER_INPUT_MUTATION ? in->kind == FX_INPUT_USER_INPUT
                         : s->kind == FX_OUTPUT_BUFFER_MUTATION   ? in->kind == FX_INPUT_BUFFER
                                                                  : in->kind == FX_INPUT_PARAMETER);
            }
            if (!found)
                return pt2_bad(r, path,
                               "output_specs[%d] mutates '%s', which is not an input of that kind",
                               i, s->target);
        }
    }
    return FX_OK;
}

/* ---- weights and constants
 * ----------------------------------------------------------------------------- */

/* A payload config (data/weights/<m>_weights_config.json) and its raw files. */
static int load_payloads(const arch *a, const char *dir, const char *cfgname, fx_named_tensor **out,
                         int *nout, fx_err *err) {
    char *text;
    size_t len;
    int rc = arch_read(a, cfgname, &text, &len, err);
    if (rc) return rc;
    cJSON *j = pt2_parse_json(a->what, cfgname, text, len, err);
    fx_free(text);
    if (!j) return err->code;
    rctx r = {err, FX_OK, cfgname, a->what, NULL};
    const cJSON *cfg = pt2_jobjv(&r, pt2_jfield(&r, j, "config", ""), "config");
    int i = 0;
    for (const cJSON *e = cfg ? cfg->child : NULL; e && !r.rc; e = e->next, i++) {
        SUB(pe, "config", "%s", e->string);
        SUB(pp, pe, "path_name");
        SUB(pm, pe, "tensor_meta");
        const char *pn = pt2_jstr(&r, pt2_jfield(&r, e, "path_name", pe), pp);
        const cJSON *up = pt2_jopt(e, "use_pickle");
        const cJSON *tm = pt2_jfield(&r, e, "tensor_meta", pe);
        if (r.rc) break;
        if (cJSON_IsTrue(up)) {
            pt2_unsupported(&r, pe, "pickled payload (a tensor subclass or custom object)");
            break;
        }
        if (strchr(pn, '/') || strchr(pn, '\\') || !strcmp(pn, "..") || !strcmp(pn, ".")) {
            pt2_bad(&r, pp, "'%s' escapes %s", pn, dir);
            break;
        }
        fx_tensor *meta = load_tensor_meta(&r, tm, pm, FX_DEVICE_META);
        if (!meta) break;
        char fname[600];
        snprintf(fname, sizeof fname, "%s%s", dir, pn);
        char *bytes;
        size_t nb;
        if (arch_read(a, fname, &bytes, &nb, err)) {
            fx_tensor_release(meta);
            r.rc = err->code;
            break;
        }
        int nd = fx_tensor_ndim(meta);
        const int64_t *sz = fx_tensor_sizes(meta), *st = fx_tensor_strides(meta);
        fx_dtype dt = fx_tensor_dtype(meta);
        size_t isz = fx_dtype_size(dt);
        int64_t numel = fx_tensor_numel(meta);
        /* the bytes (sizes, strides) reach: the meta tensor's storage, sized by core */
        uint64_t need = (uint64_t)fx_storage_nbytes(fx_tensor_storage(meta));
        fx_tensor *t = NULL;
        if (need > nb) {
            pt2_bad(&r, pe,
                    "%s holds %zu bytes, but a %s tensor of %lld elements with these strides needs "
                    "%llu",
                    fname, nb, fx_dtype_name(dt), (long long)numel, (unsigned long long)need);
        } else if (nb % isz) {
            pt2_bad(&r, pe, "%s holds %zu bytes, not a whole number of %s elements", fname, nb,
                    fx_dtype_name(dt));
        } else if (!fx_tensor_empty(nd, sz, dt, FX_DEVICE_CPU, &t, err)) {
            pt2_gather(fx_tensor_data(t), bytes, nd, sz, st, isz);
            if (fx_tensor_requires_grad(meta)) fx_tensor_set_requires_grad(t, true);
            if (pt2_add_named(out, nout, e->string, t, err)) r.rc = err->code;
        } else {
            r.rc = err->code;
        }
        fx_free(bytes);
        fx_tensor_release(meta);
    }
    cJSON_Delete(j);
    return r.rc;
}

/* Each parameter / persistent buffer has a weight, each constant / non-persistent buffer a
 * constant, of its placeholder's dtype and shape. */
static int check_state(const char *what, const fx_program *p, fx_err *err) {
    for (int i = 0; i < p->sig.ninputs; i++) {
        const fx_input_spec *s = &p->sig.inputs[i];
        if (s->kind == FX_INPUT_USER_INPUT || s->kind == FX_INPUT_TOKEN) continue;
        bool in_state =
            s->kind == FX_INPUT_PARAMETER || (s->kind == FX_INPUT_BUFFER && s->persistent);
        const fx_named_tensor *v = in_state ? p->state : p->constants;
        int n = in_state ? p->nstate : p->nconstants;
        const fx_tensor *t = NULL;
        for (int k = 0; k < n && !t; k++)
            if (!strcmp(v[k].name, s->target)) t = v[k].t;
        if (!t)
            return fx_err_setf(err, FX_EIO, "%s: %s '%s' has no %s in the archive", what,
                               fx_input_kind_name(s->kind), s->target,
                               in_state ? "weight" : "constant");
        fx_node *ph = fx_graph_find(p->graph, s->arg);
        const fx_tensor *m = ph ? fx_node_tensor(ph) : NULL;
        bool same =
            m && fx_tensor_dtype(m) == fx_tensor_dtype(t) && fx_tensor_ndim(m) == fx_tensor_ndim(t);
        for (int d = 0; same && d < fx_tensor_ndim(t); d++)
            same = fx_tensor_size(m, d) == fx_tensor_size(t, d);
        if (!same) {
            fx_strbuf a = FX_STRBUF_INIT, b = FX_STRBUF_INIT;
            fx_node_format_type(&a, ph);
            fx_strbuf_appendf(&b, "%s[", fx_dtype_short(fx_tensor_dtype(t)));
            for (int d = 0; d < fx_tensor_ndim(t); d++)
                fx_strbuf_appendf(&b, "%s%lld", d ? ", " : "", (long long)fx_tensor_size(t, d));
            fx_strbuf_putc(&b, ']');
            int rc = fx_err_setf(err, FX_EIO,
                                 "%s: %s '%s' is %s in the archive, but its placeholder %s is %s",
                                 what, fx_input_kind_name(s->kind), s->target, fx_strbuf_cstr(&b),
                                 s->arg, fx_strbuf_cstr(&a));
            fx_strbuf_free(&a);
            fx_strbuf_free(&b);
            return rc;
        }
    }
    return FX_OK;
}

/* ---- the program
 * ----------------------------------------------------------------------------------------- */

/* A range [lo, hi] of fxdb's shape environment record (null = int_oo). */
static fx_vr load_vr(rctx *r, const cJSON *v, const char *path) {
    fx_vr out = {-FX_INT_OO, FX_INT_OO};
    if (!pt2_jarr(r, v, path)) return out;
    if (cJSON_GetArraySize(v) != 2) {
        pt2_bad(r, path, "expected [lo, hi]");
        return out;
    }
    const cJSON *lo = v->child, *hi = lo->next;
    if (!cJSON_IsNull(lo)) out.lo = pt2_jint(r, lo, path);
    if (!cJSON_IsNull(hi)) out.hi = pt2_jint(r, hi, path);
    if (!r->rc && out.lo > out.hi)
        pt2_bad(r, path, "the empty range [%lld, %lld]", (long long)out.lo, (long long)out.hi);
    return out;
}

static const char *opt_str(const cJSON *o, const char *key) {
    const cJSON *v = pt2_jopt(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* fxdb's own record of the shape environment (graph module custom metadata "fxdb.shape_env"):
 * every symbol as it was (numbers, ranges, sources), then replacements, guards, runtime asserts
 * and what each taught, so that the loaded program answers :why / :guards as the exported one. */
static int load_shape_env(rctx *r, const cJSON *se, const char *path) {
    if (!pt2_jobjv(r, se, path)) return r->rc;
    SUB(ps, path, "symbols");
    const cJSON *syms = pt2_jarr(r, pt2_jfield(r, se, "symbols", path), ps);
    int i = 0;
    for (const cJSON *e = syms ? syms->child : NULL; e && !r->rc; e = e->next, i++) {
        SUB(pe, ps, "[%d]", i);
        SUB(pn, pe, "name");
        SUB(ph, pe, "hint");
        SUB(pr, pe, "range");
        SUB(pd, pe, "declared");
        const char *name = pt2_jstr(r, pt2_jfield(r, e, "name", pe), pn);
        fx_symbol_restore sr = {0};
        sr.hint = pt2_jint(r, pt2_jfield(r, e, "hint", pe), ph);
        sr.vr = load_vr(r, pt2_jfield(r, e, "range", pe), pr);
        sr.declared = pt2_jopt(e, "declared") ? load_vr(r, pt2_jopt(e, "declared"), pd) : sr.vr;
        sr.size_like = cJSON_IsTrue(pt2_jopt(e, "size_like"));
        sr.source = opt_str(e, "source");
        sr.loc = opt_str(e, "loc");
        if (r->rc) break;
        const fx_sym *sym;
        if (pt2_sym_define(r->sy, name, &sr, &sym, r->err)) return pt2_relay(r, pn);
    }
    i = 0;
    for (const cJSON *e = syms ? syms->child : NULL; e && !r->rc; e = e->next, i++) {
        const cJSON *rep = pt2_jopt(e, "replacement");
        if (!rep) continue;
        SUB(pe, ps, "[%d].replacement", i);
        const char *text = pt2_jstr(r, rep, pe);
        const fx_sym *to = text ? load_sym_text(r, text, pe) : NULL;
        const fx_sym *sym = pt2_sym_lookup(r->sy, opt_str(e, "name"));
        if (to && sym && fx_shape_env_restore_replacement(sym, to, r->err)) pt2_relay(r, pe);
    }
    for (int which = 0; which < 2 && !r->rc; which++) {
        const char *key = which ? "asserts" : "guards";
        SUB(pg, path, "%s", key);
        const cJSON *gs = pt2_jopt(se, key);
        if (!gs) continue;
        if (!pt2_jarr(r, gs, pg)) break;
        i = 0;
        for (const cJSON *g = gs->child; g && !r->rc; g = g->next, i++) {
            SUB(pe, pg, "[%d]", i);
            if (!pt2_jobjv(r, g, pe)) break;
            SUB(px, pe, "expr");
            const char *text = pt2_jstr(r, pt2_jfield(r, g, "expr", pe), px);
            const fx_sym *e = text ? load_sym_text(r, text, px) : NULL;
            if (e && fx_shape_env_restore_guard(r->sy->env, which == 1, e, opt_str(g, "loc"),
                                                opt_str(g, "line"), opt_str(g, "op"), r->err))
                pt2_relay(r, px);
        }
    }
    SUB(pr, path, "refinements");
    const cJSON *refs = r->rc ? NULL : pt2_jopt(se, "refinements");
    if (refs && !pt2_jarr(r, refs, pr)) return r->rc;
    i = 0;
    for (const cJSON *e = refs ? refs->child : NULL; e && !r->rc; e = e->next, i++) {
        SUB(pe, pr, "[%d]", i);
        if (!pt2_jobjv(r, e, pe)) break;
        SUB(ps2, pe, "symbol");
        SUB(pb, pe, "before");
        SUB(pa, pe, "after");
        SUB(pp, pe, "replacement");
        fx_sym_refinement rf = {0};
        const char *sname = pt2_jstr(r, pt2_jfield(r, e, "symbol", pe), ps2);
        rf.sym = sname ? pt2_sym_lookup(r->sy, sname) : NULL;
        if (sname && !rf.sym) pt2_bad(r, ps2, "no symbol '%s'", sname);
        rf.is_assert = pt2_jopt(e, "assert") != NULL;
        SUB(pi, pe, "%s", rf.is_assert ? "assert" : "guard");
        rf.index = (int)pt2_jint(r, pt2_jfield(r, e, rf.is_assert ? "assert" : "guard", pe), pi);
        rf.before = load_vr(r, pt2_jfield(r, e, "before", pe), pb);
        rf.after = load_vr(r, pt2_jfield(r, e, "after", pe), pa);
        const cJSON *rp = pt2_jopt(e, "replacement");
        const char *text = rp ? pt2_jstr(r, rp, pp) : NULL;
        if (text) rf.replacement = load_sym_text(r, text, pp);
        if (!r->rc && fx_shape_env_restore_refinement(r->sy->env, &rf, r->err)) pt2_relay(r, pe);
    }
    return r->rc;
}

/* The symbols a file written by PyTorch gives its inputs' sizes, created in input order with
 * their example values (the as_expr hints) and sources, before any expression uses them. */
static int input_symbols(rctx *r, const cJSON *gj) {
    const cJSON *ins = pt2_jopt(gj, "inputs"), *tv = pt2_jopt(gj, "tensor_values");
    for (const cJSON *a = cJSON_IsArray(ins) ? ins->child : NULL; a && !r->rc; a = a->next) {
        const cJSON *nm = pt2_jopt(pt2_jopt(a, "as_tensor"), "name");
        if (!cJSON_IsString(nm)) continue;
        const cJSON *sizes = pt2_jopt(pt2_jopt(tv, nm->valuestring), "sizes");
        int d = 0;
        for (const cJSON *sz = cJSON_IsArray(sizes) ? sizes->child : NULL; sz && !r->rc;
             sz = sz->next, d++) {
            const cJSON *x = pt2_jopt(sz, "as_expr");
            const cJSON *es = pt2_jopt(x, "expr_str");
            char name[24];
            if (!cJSON_IsString(es) || !pt2_sym_bare_name(es->valuestring, name, sizeof name) ||
                pt2_sym_lookup(r->sy, name))
                continue;
            const cJSON *h = pt2_jopt(pt2_jopt(x, "hint"), "as_int");
            char src[300];
            snprintf(src, sizeof src, "L['%.200s'].size()[%d]", nm->valuestring, d);
            const fx_sym *sym;
            int64_t hint = 0;
            bool has_hint = cJSON_IsNumber(h) && pt2_int64_of(h->valuedouble, &hint);
            /* a malformed one is reported where the graph reads it */
            if (pt2_sym_create(r->sy, name, hint, has_hint, src, &sym, r->err) == FX_ENOMEM)
                return r->rc = FX_ENOMEM;
        }
    }
    return r->rc;
}

/* The serialized ExportedProgram (ep JSON) as a program without state. */
static int load_program(rctx *r, const cJSON *ep, fx_program *p) {
    SUB(psv, "", "schema_version");
    const cJSON *sv = pt2_jobjv(r, pt2_jfield(r, ep, "schema_version", ""), psv);
    if (r->rc) return r->rc;
    SUB(pmaj, psv, "major");
    SUB(pmin, psv, "minor");
    int64_t major = pt2_jint(r, pt2_jfield(r, sv, "major", psv), pmaj);
    int64_t minor = pt2_jopt(sv, "minor") ? pt2_jint(r, pt2_jopt(sv, "minor"), pmin) : 0;
    if (r->rc) return r->rc;
    if (major != FX_PT2_SCHEMA_MAJOR)
        return r->rc =
                   fx_err_setf(r->err, FX_EIO,
                               "%s: %s: schema version %lld.%lld is not supported: fxdb reads "
                               "schema %d.x (written by torch 2.5 and later; fxdb writes %d.%d)",
                               r->what, r->file, (long long)major, (long long)minor,
                               FX_PT2_SCHEMA_MAJOR, FX_PT2_SCHEMA_MAJOR, FX_PT2_SCHEMA_MINOR);
    const cJSON *gm = pt2_jobjv(r, pt2_jfield(r, ep, "graph_module", ""), "graph_module");
    if (!gm) return r->rc;
    const cJSON *rcons = pt2_jopt(ep, "range_constraints");
    if (rcons && !pt2_jobjv(r, rcons, "range_constraints")) return r->rc;
    for (const cJSON *c = rcons ? rcons->child : NULL; c; c = c->next) {
        SUB(pc, "range_constraints", "%s", c->string);
        bool found;
        fx_vr vr;
        if (pt2_sym_range(rcons, c->string, &found, &vr, r->err)) return pt2_relay(r, pc);
    }
    r->sy->ranges = rcons;
    /* fxdb's own metadata first: its shape environment names the symbols the graph uses */
    const cJSON *md = pt2_jopt(gm, "metadata");
    const cJSON *custom = pt2_jopt(md, "custom");
    cJSON *cj = cJSON_IsString(custom) ? pt2_parse_inner(custom->valuestring) : NULL;
    const cJSON *se = pt2_jopt(pt2_jopt(cj, "fxdb"), "shape_env");
    if (se) load_shape_env(r, se, "graph_module.metadata.custom.fxdb.shape_env");
    if (!r->rc) input_symbols(r, pt2_jopt(gm, "graph"));
    if (!r->rc)
        p->graph =
            load_graph(r, pt2_jfield(r, gm, "graph", "graph_module"), "graph_module.graph", 0);
    if (!p->graph ||
        load_signature(r, pt2_jfield(r, gm, "signature", "graph_module"), "graph_module.signature",
                       p) ||
        check_signature(r, "graph_module.signature", p)) {
        cJSON_Delete(cj);
        return r->rc;
    }
    const cJSON *ver = pt2_jopt(ep, "verifiers");
    for (const cJSON *v = cJSON_IsArray(ver) ? ver->child : NULL; v; v = v->next)
        if (cJSON_IsString(v) && !strcmp(v->valuestring, "TRAINING")) p->training_ir = true;
    /* fxdb's raw graph, when fxdb wrote the file */
    const cJSON *raw = pt2_jopt(pt2_jopt(cj, "fxdb"), "raw_graph");
    if (raw) p->raw = load_graph(r, raw, "graph_module.metadata.custom.fxdb.raw_graph", 0);
    cJSON_Delete(cj);
    if (r->rc) return r->rc;
    if (!p->raw) {
        p->raw = fx_graph_clone(p->graph, r->err);
        if (!p->raw) return r->rc = r->err->code;
    }
    p->shape_env = r->sy->env; /* the program takes the environment's reference */
    r->sy->env = NULL;
    return FX_OK;
}

static int find_root(arch *a, fx_err *err, bool *legacy) {
    *legacy = false;
    zip_int64_t n = zip_get_num_entries(a->za, 0);
    for (zip_int64_t i = 0; i < n; i++) {
        const char *nm = zip_get_name(a->za, (zip_uint64_t)i, 0);
        if (!nm) continue;
        const char *slash = strchr(nm, '/');
        const char *rest = slash ? slash + 1 : nm;
        if (!strcmp(rest, PT2_ARCHIVE_FORMAT) ||
            !strcmp(rest, "serialized_exported_program.json")) {
            if (slash && strchr(rest, '/')) continue;
            size_t rl = slash ? (size_t)(rest - nm) : 0;
            if (rl >= sizeof a->root) continue;
            memcpy(a->root, nm, rl);
            a->root[rl] = 0;
            *legacy = rest[0] == 's';
            if (!*legacy) return FX_OK;
        }
    }
    if (*legacy) return FX_OK;
    return fx_err_setf(err, FX_EIO,
                       "%s: not a PT2 archive (no archive_format record, and no "
                       "serialized_exported_program.json of the earlier layout)",
                       a->what);
}

static int load_torch_save_entry(const arch *a, const char *name, fx_named_tensor **out, int *n,
                                 fx_err *err) {
    char *bytes;
    size_t len;
    int rc = arch_read(a, name, &bytes, &len, err);
    if (rc) return rc;
    char what[700];
    snprintf(what, sizeof what, "%s: %s%s", a->what, a->root, name);
    rc = pt2_read_torch_save(bytes, len, what, out, n, err);
    fx_free(bytes);
    return rc;
}

int fx_pt2_load_buffer(const void *data, size_t len, const char *what, fx_program **out,
                       fx_err *err) {
    *out = NULL;
    int rc = fx_registry_init(err);
    if (rc) return rc;
    arch a;
    if ((rc = arch_open(&a, data, len, what, err))) return rc;
    bool legacy = false;
    char *text = NULL, model[256] = "model", file[400];
    size_t tlen = 0;
    cJSON *ep = NULL;
    fx_program *p = NULL;
    if ((rc = find_root(&a, err, &legacy))) goto done;
    if (!legacy) {
        char *fmt;
        size_t flen;
        if ((rc = arch_read(&a, PT2_ARCHIVE_FORMAT, &fmt, &flen, err))) goto done;
        bool ok = flen == 3 && !memcmp(fmt, "pt2", 3);
        if (!ok)
            rc = fx_err_setf(err, FX_EIO, "%s: %sarchive_format is '%.40s', not 'pt2'", what,
                             a.root, fmt);
        fx_free(fmt);
        if (rc) goto done;
        if (arch_find(&a, PT2_ARCHIVE_VERSION) >= 0) {
            if ((rc = arch_read(&a, PT2_ARCHIVE_VERSION, &fmt, &flen, err))) goto done;
            if (strcmp(fmt, "0"))
                rc = fx_err_setf(err, FX_EIO,
                                 "%s: %sarchive_version is '%.40s'; fxdb reads archive version 0",
                                 what, a.root, fmt);
            fx_free(fmt);
            if (rc) goto done;
        }
        /* the model: models/model.json, else the first models/<name>.json */
        snprintf(file, sizeof file, PT2_MODELS_DIR "model.json");
        if (arch_find(&a, file) < 0) {
            zip_int64_t ne = zip_get_num_entries(a.za, 0);
            size_t rl = strlen(a.root), ml = strlen(PT2_MODELS_DIR);
            model[0] = 0;
            for (zip_int64_t i = 0; i < ne && !model[0]; i++) {
                const char *nm = zip_get_name(a.za, (zip_uint64_t)i, 0);
                if (!nm || strncmp(nm, a.root, rl) || strncmp(nm + rl, PT2_MODELS_DIR, ml))
                    continue;
                const char *m = nm + rl + ml;
                size_t l = strlen(m);
                if (l > 5 && l < sizeof model && !strcmp(m + l - 5, ".json") && !strchr(m, '/')) {
                    memcpy(model, m, l - 5);
                    model[l - 5] = 0;
                }
            }
            if (!model[0]) {
                rc = fx_err_setf(err, FX_EIO,
                                 "%s: the archive holds no program (no %smodels/<name>.json)", what,
                                 a.root);
                goto done;
            }
            snprintf(file, sizeof file, PT2_MODELS_DIR "%s.json", model);
        }
    } else {
        snprintf(file, sizeof file, "serialized_exported_program.json");
    }
    if ((rc = arch_read(&a, file, &text, &tlen, err))) goto done;
    if (!(ep = pt2_parse_json(what, file, text, tlen, err))) {
        rc = err->code;
        goto done;
    }
    p = fx_calloc(1, sizeof *p);
    if (!p) {
        rc = fx_err_setf(err, FX_ENOMEM, "out of memory");
        goto done;
    }
    pt2_syms sy = {0};
    rctx r = {err, FX_OK, file, what, &sy};
    rc = load_program(&r, ep, p);
    pt2_syms_free(&sy);
    if (rc) goto done;
    if (legacy) {
        if ((rc =
                 load_torch_save_entry(&a, "serialized_state_dict.pt", &p->state, &p->nstate, err)))
            goto done;
        if (arch_find(&a, "serialized_constants.pt") >= 0 &&
            (rc = load_torch_save_entry(&a, "serialized_constants.pt", &p->constants,
                                        &p->nconstants, err)))
            goto done;
    } else {
        char cfg[600], pt[600];
        snprintf(pt, sizeof pt, PT2_WEIGHTS_DIR "%s.pt", model);
        snprintf(cfg, sizeof cfg, PT2_WEIGHTS_DIR "%s_weights_config.json", model);
        if (arch_find(&a, pt) >= 0)
            rc = load_torch_save_entry(&a, pt, &p->state, &p->nstate, err);
        else
            rc = load_payloads(&a, PT2_WEIGHTS_DIR, cfg, &p->state, &p->nstate, err);
        if (rc) goto done;
        snprintf(pt, sizeof pt, PT2_CONSTANTS_DIR "%s.pt", model);
        snprintf(cfg, sizeof cfg, PT2_CONSTANTS_DIR "%s_constants_config.json", model);
        if (arch_find(&a, pt) >= 0)
            rc = load_torch_save_entry(&a, pt, &p->constants, &p->nconstants, err);
        else if (arch_find(&a, cfg) >= 0)
            rc = load_payloads(&a, PT2_CONSTANTS_DIR, cfg, &p->constants, &p->nconstants, err);
        if (rc) goto done;
    }
    /* non-persistent buffers live among the constants: move nothing, check all */
    rc = check_state(what, p, err);
done:
    if (rc) {
        fx_program_free(p);
        p = NULL;
    }
    cJSON_Delete(ep);
    fx_free(text);
    arch_close(&a);
    *out = p;
    return rc;
}

int fx_pt2_load(const char *path, fx_program **out, fx_err *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return fx_err_setf(err, FX_EIO, "cannot open '%s'", path);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            char *nb = fx_realloc(buf, cap);
            if (!nb) {
                fx_free(buf);
                fclose(f);
                return fx_err_setf(err, FX_ENOMEM, "out of memory reading '%s'", path);
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    bool ioerr = ferror(f);
    fclose(f);
    if (ioerr) {
        fx_free(buf);
        return fx_err_setf(err, FX_EIO, "cannot read '%s'", path);
    }
    int rc = fx_pt2_load_buffer(buf, len, path, out, err);
    fx_free(buf);
    return rc;
}
