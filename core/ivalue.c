/* core/ivalue.c — tagged values: construction, copy, equality, Python-style formatting.
 * Layer: core. */
#include "core/ivalue.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/graph.h" /* a node argument prints as its name (the struct only: no graph.c call) */

fx_ivalue fx_iv_none(void) { return (fx_ivalue){.tag = FX_IV_NONE}; }
fx_ivalue fx_iv_int(int64_t i) { return (fx_ivalue){.tag = FX_IV_INT, .u.i = i}; }
fx_ivalue fx_iv_float(double f) { return (fx_ivalue){.tag = FX_IV_FLOAT, .u.f = f}; }
fx_ivalue fx_iv_bool(bool b) { return (fx_ivalue){.tag = FX_IV_BOOL, .u.b = b}; }
fx_ivalue fx_iv_dtype(fx_dtype dt) { return (fx_ivalue){.tag = FX_IV_DTYPE, .u.dtype = dt}; }
fx_ivalue fx_iv_device(fx_device d) { return (fx_ivalue){.tag = FX_IV_DEVICE, .u.device = d}; }
fx_ivalue fx_iv_tensor(fx_tensor *t) {
    return (fx_ivalue){.tag = FX_IV_TENSOR, .u.t = fx_tensor_retain(t)};
}
fx_ivalue fx_iv_tensor_steal(fx_tensor *t) { return (fx_ivalue){.tag = FX_IV_TENSOR, .u.t = t}; }
fx_ivalue fx_iv_node(struct fx_node *n) { return (fx_ivalue){.tag = FX_IV_NODE, .u.node = n}; }
fx_ivalue fx_iv_symint(fx_symint v) {
    if (!v.expr) return fx_iv_int(v.hint);
    fx_shape_env_retain(fx_sym_env(v.expr));
    return (fx_ivalue){.tag = FX_IV_SYMINT, .u.si = v};
}

bool fx_ivalue_symint(const fx_ivalue *v, fx_symint *out) {
    if (v->tag == FX_IV_INT) {
        *out = FX_SI(v->u.i);
        return true;
    }
    if (v->tag == FX_IV_SYMINT) {
        *out = v->u.si;
        return true;
    }
    return false;
}

fx_ivalue fx_iv_str(const char *s) {
    char *d = fx_strdup(s);
    if (!d) return fx_iv_none();
    return (fx_ivalue){.tag = FX_IV_STR, .u.s = d};
}

int fx_iv_list(int n, fx_ivalue *out, fx_err *err) {
    *out = fx_iv_none();
    fx_ivalue *items = NULL;
    if (n > 0) {
        items = fx_calloc((size_t)n, sizeof *items);
        if (!items) return fx_err_setf(err, FX_ENOMEM, "out of memory allocating a list");
        for (int i = 0; i < n; i++) items[i].tag = FX_IV_NONE;
    }
    out->tag = FX_IV_LIST;
    out->u.list.items = items;
    out->u.list.n = n;
    return FX_OK;
}

int fx_iv_int_list(int n, const int64_t *v, fx_ivalue *out, fx_err *err) {
    int rc = fx_iv_list(n, out, err);
    if (rc) return rc;
    for (int i = 0; i < n; i++) out->u.list.items[i] = fx_iv_int(v[i]);
    return FX_OK;
}

void fx_ivalue_clear(fx_ivalue *v) {
    if (!v) return;
    switch (v->tag) {
    case FX_IV_TENSOR: fx_tensor_release(v->u.t); break;
    case FX_IV_STR: fx_free(v->u.s); break;
    case FX_IV_SYMINT: fx_shape_env_release(fx_sym_env(v->u.si.expr)); break;
    case FX_IV_LIST:
        for (int i = 0; i < v->u.list.n; i++) fx_ivalue_clear(&v->u.list.items[i]);
        fx_free(v->u.list.items);
        break;
    default: break;
    }
    v->tag = FX_IV_UNSET;
}

int fx_ivalue_copy(fx_ivalue *dst, const fx_ivalue *src, fx_err *err) {
    switch (src->tag) {
    case FX_IV_TENSOR: *dst = fx_iv_tensor(src->u.t); return FX_OK;
    case FX_IV_STR:
        *dst = fx_iv_str(src->u.s);
        if (dst->tag != FX_IV_STR) return fx_err_setf(err, FX_ENOMEM, "out of memory");
        return FX_OK;
    case FX_IV_LIST: {
        int rc = fx_iv_list(src->u.list.n, dst, err);
        if (rc) return rc;
        for (int i = 0; i < src->u.list.n; i++) {
            rc = fx_ivalue_copy(&dst->u.list.items[i], &src->u.list.items[i], err);
            if (rc) {
                fx_ivalue_clear(dst);
                return rc;
            }
        }
        return FX_OK;
    }
    case FX_IV_SYMINT: *dst = fx_iv_symint(src->u.si); return FX_OK;
    default: *dst = *src; return FX_OK;
    }
}

bool fx_ivalue_is_scalar(const fx_ivalue *v) {
    return v->tag == FX_IV_INT || v->tag == FX_IV_FLOAT || v->tag == FX_IV_BOOL;
}

double fx_ivalue_to_f64(const fx_ivalue *v) {
    switch (v->tag) {
    case FX_IV_INT: return (double)v->u.i;
    case FX_IV_FLOAT: return v->u.f;
    case FX_IV_BOOL: return v->u.b;
    default: return 0;
    }
}

bool fx_ivalue_equal(const fx_ivalue *a, const fx_ivalue *b) {
    if (a->tag != b->tag) return false;
    switch (a->tag) {
    case FX_IV_UNSET:
    case FX_IV_NONE: return true;
    case FX_IV_TENSOR: return a->u.t == b->u.t;
    case FX_IV_INT: return a->u.i == b->u.i;
    case FX_IV_FLOAT: return a->u.f == b->u.f;
    case FX_IV_BOOL: return a->u.b == b->u.b;
    case FX_IV_DTYPE: return a->u.dtype == b->u.dtype;
    case FX_IV_DEVICE: return a->u.device == b->u.device;
    case FX_IV_STR: return strcmp(a->u.s, b->u.s) == 0;
    case FX_IV_NODE: return a->u.node == b->u.node;
    case FX_IV_SYMINT: return a->u.si.expr == b->u.si.expr;
    case FX_IV_LIST:
        if (a->u.list.n != b->u.list.n) return false;
        for (int i = 0; i < a->u.list.n; i++)
            if (!fx_ivalue_equal(&a->u.list.items[i], &b->u.list.items[i])) return false;
        return true;
    }
    return false;
}

void fx_format_pyfloat(fx_strbuf *sb, double d) {
    if (isnan(d)) {
        fx_strbuf_append(sb, "nan");
        return;
    }
    if (isinf(d)) {
        fx_strbuf_append(sb, d > 0 ? "inf" : "-inf");
        return;
    }
    /* Shortest representation that round-trips, as Python's repr. */
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) break;
    }
    /* Python switches to exponent form when exp < -4 or exp >= 16, with a 2-digit exponent. */
    char *e = strchr(buf, 'e');
    int exp10 = d == 0 ? 0 : (int)floor(log10(fabs(d)));
    if (e || exp10 >= 16 || exp10 < -4) {
        char mant[40];
        int ndig = 0;
        /* Collect significant digits of buf. */
        for (const char *p = buf; *p && *p != 'e'; p++)
            if (*p >= '0' && *p <= '9') mant[ndig++] = *p;
        mant[ndig] = 0;
        char *m = mant;
        while (*m == '0' && m[1]) m++, ndig--;
        while (ndig > 1 && m[ndig - 1] == '0') m[--ndig] = 0;
        if (d < 0) fx_strbuf_putc(sb, '-');
        fx_strbuf_putc(sb, m[0]);
        if (ndig > 1) {
            fx_strbuf_putc(sb, '.');
            fx_strbuf_append(sb, m + 1);
        }
        fx_strbuf_appendf(sb, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
        return;
    }
    fx_strbuf_append(sb, buf);
    if (!strchr(buf, '.')) fx_strbuf_append(sb, ".0");
}

void fx_ivalue_format(fx_strbuf *sb, const fx_ivalue *v, bool fx_listing) {
    switch (v->tag) {
    case FX_IV_UNSET:
    case FX_IV_NONE: fx_strbuf_append(sb, "None"); break;
    case FX_IV_INT: fx_strbuf_appendf(sb, "%lld", (long long)v->u.i); break;
    case FX_IV_FLOAT: fx_format_pyfloat(sb, v->u.f); break;
    case FX_IV_BOOL: fx_strbuf_append(sb, v->u.b ? "True" : "False"); break;
    case FX_IV_DTYPE: fx_strbuf_appendf(sb, "torch.%s", fx_dtype_name(v->u.dtype)); break;
    case FX_IV_DEVICE:
        fx_strbuf_appendf(sb, "device(type='%s')", v->u.device == FX_DEVICE_META ? "meta" : "cpu");
        break;
    case FX_IV_STR: /* Python's repr: double quotes when the text has a ' and no " */
        if (strchr(v->u.s, '\'') && !strchr(v->u.s, '"'))
            fx_strbuf_appendf(sb, "\"%s\"", v->u.s);
        else
            fx_strbuf_appendf(sb, "'%s'", v->u.s);
        break;
    case FX_IV_NODE:
        if (fx_listing) fx_strbuf_putc(sb, '%');
        fx_strbuf_append(sb, v->u.node ? v->u.node->name : "None");
        break;
    case FX_IV_TENSOR: {
        const fx_tensor *t = v->u.t;
        fx_strbuf_appendf(sb, "tensor<%s", fx_dtype_short(fx_tensor_dtype(t)));
        fx_tensor_format_sizes(sb, t);
        fx_strbuf_putc(sb, '>');
        break;
    }
    case FX_IV_SYMINT: fx_sym_format(sb, v->u.si.expr); break;
    case FX_IV_LIST:
        fx_strbuf_putc(sb, '[');
        for (int i = 0; i < v->u.list.n; i++) {
            if (i) fx_strbuf_append(sb, ", ");
            fx_ivalue_format(sb, &v->u.list.items[i], fx_listing);
        }
        fx_strbuf_putc(sb, ']');
        break;
    }
}
