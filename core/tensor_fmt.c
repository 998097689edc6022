/* core/tensor_fmt.c — repr(tensor) as torch/_tensor_str.py writes it.
 * Layer: core. The defaults of PRINT_OPTS: precision 4, threshold 1000, edgeitems 3,
 * linewidth 80, sci_mode chosen by the formatter.
 *
 * The printer makes the same two passes PyTorch makes: a formatter pass over the elements
 * that will be shown (all of them, or only the edge items of every dim when numel > threshold)
 * decides the mode (integer-valued floats "1.", fixed "1.5000", or scientific "1.0000e+10")
 * and the common width; then the nested lists are written with each row of a 1-d slice
 * wrapped to the line width, continuation lines indented to align after "tensor(", and the
 * suffixes (device, size, dtype, requires_grad) appended, wrapping to a new line when the
 * last line would pass the line width. Elements are read through the strides, so views print
 * without a copy. A complex tensor gets two formatters, one over the real parts and one over
 * the imaginary parts, as PyTorch formats t.real and t.imag. */
#include "core/tensor_fmt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/tensor_impl.h"

enum { PRECISION = 4, THRESHOLD = 1000, EDGEITEMS = 3, LINEWIDTH = 80 };

typedef struct fmt {
    const fx_tensor *t;
    const char *base; /* element 0 of t */
    fx_dtype dt;      /* dtype the values are read as: t's, or the real dtype of a complex t */
    int part;         /* complex t: 0 reads real parts, 1 imaginary parts; else 0 */
    const struct fmt *imag; /* complex t: the formatter of the imaginary parts (on the real one) */
    bool floating;
    bool summarize;
    bool int_mode;
    bool sci_mode;
    int max_width;
    /* formatter statistics over nonzero finite values */
    int64_t nfinite;
    double amin, amax;
} fmt;

/* ---- element visiting ------------------------------------------------------------------- */

typedef void (*visit_fn)(fmt *f, int64_t off);

/* Calls fn for every element that will be shown, in row-major order (edge items only when
 * summarizing), with its offset in elements from element 0. */
static void visit(fmt *f, int dim, int64_t off, visit_fn fn) {
    const fx_tensor *t = f->t;
    if (dim == t->ndim) {
        fn(f, off);
        return;
    }
    int64_t n = t->sizes[dim], st = t->strides[dim];
    if (f->summarize && n > 2 * EDGEITEMS) {
        for (int64_t i = 0; i < EDGEITEMS; i++) visit(f, dim + 1, off + i * st, fn);
        for (int64_t i = n - EDGEITEMS; i < n; i++) visit(f, dim + 1, off + i * st, fn);
    } else {
        for (int64_t i = 0; i < n; i++) visit(f, dim + 1, off + i * st, fn);
    }
}

static double load_f(const fmt *f, int64_t off) {
    if (f->dt != f->t->dtype) return fx_dtype_load_f64(f->dt, f->base, 2 * off + f->part);
    return fx_dtype_load_f64(f->dt, f->base, off);
}

/* ---- formatting one value ---------------------------------------------------------------- */

/* The value's text before padding, as Python's format() writes it. */
static int value_text(const fmt *f, int64_t off, char *buf, size_t cap) {
    fx_dtype dt = f->t->dtype;
    if (!f->floating) {
        if (dt == FX_DTYPE_BOOL)
            return snprintf(buf, cap, "%s", fx_dtype_load_i64(dt, f->base, off) ? "True" : "False");
        return snprintf(buf, cap, "%lld", (long long)fx_dtype_load_i64(dt, f->base, off));
    }
    double v = load_f(f, off);
    if (isnan(v)) return snprintf(buf, cap, "nan");
    if (f->sci_mode) return snprintf(buf, cap, "%.*e", PRECISION, v);
    if (f->int_mode) {
        if (isinf(v)) return snprintf(buf, cap, "%s", v > 0 ? "inf" : "-inf");
        return snprintf(buf, cap, "%.0f.", v);
    }
    return snprintf(buf, cap, "%.*f", PRECISION, v);
}

/* One element: a complex one is the real part padded to its formatter's width, then the
 * imaginary part unpadded with "j" and a "+" when it has no sign (_tensor_str's
 * _val_formatter: "1.+2.j", "3.-1.j", "0.+nanj"). */
static void put_value(fx_strbuf *sb, const fmt *f, int64_t off) {
    char buf[64];
    int n = value_text(f, off, buf, sizeof buf);
    for (int i = n; i < f->max_width; i++) fx_strbuf_putc(sb, ' ');
    fx_strbuf_append(sb, buf);
    if (!f->imag) return;
    value_text(f->imag, off, buf, sizeof buf);
    if (buf[0] != '+' && buf[0] != '-') fx_strbuf_putc(sb, '+');
    fx_strbuf_append(sb, buf);
    fx_strbuf_putc(sb, 'j');
}

/* ---- the formatter pass (_Formatter.__init__) -------------------------------------------- */

static void stat_int(fmt *f, int64_t off) {
    char buf[64];
    int n = value_text(f, off, buf, sizeof buf);
    if (n > f->max_width) f->max_width = n;
}

static void stat_float(fmt *f, int64_t off) {
    double v = load_f(f, off);
    if (!isfinite(v) || v == 0) return;
    double a = fabs(v);
    if (f->nfinite == 0 || a < f->amin) f->amin = a;
    if (f->nfinite == 0 || a > f->amax) f->amax = a;
    f->nfinite++;
    if (v != ceil(v)) f->int_mode = false;
}

static void width_float(fmt *f, int64_t off) {
    double v = load_f(f, off);
    if (!isfinite(v) || v == 0) return;
    char buf[64];
    int n;
    if (f->sci_mode)
        n = snprintf(buf, sizeof buf, "%.*e", PRECISION, v);
    else if (f->int_mode)
        n = snprintf(buf, sizeof buf, "%.0f", v) + 1;
    else
        n = snprintf(buf, sizeof buf, "%.*f", PRECISION, v);
    if (n > f->max_width) f->max_width = n;
}

static void formatter_init(fmt *f) {
    f->int_mode = true;
    f->sci_mode = false;
    f->max_width = 1;
    if (!f->floating) {
        visit(f, 0, 0, stat_int);
        return;
    }
    f->nfinite = 0;
    visit(f, 0, 0, stat_float);
    if (f->nfinite == 0) return;
    if (f->int_mode) {
        if (f->amax / f->amin > 1000.0 || f->amax > 1.0e8) f->sci_mode = true;
    } else {
        if (f->amax / f->amin > 1000.0 || f->amax > 1.0e8 || f->amin < 1.0e-4) f->sci_mode = true;
    }
    visit(f, 0, 0, width_float);
}

/* ---- the nested lists (_tensor_str_with_formatter) --------------------------------------- */

static void spaces(fx_strbuf *sb, int n) {
    for (int i = 0; i < n; i++) fx_strbuf_putc(sb, ' ');
}

static void vector_str(fx_strbuf *sb, const fmt *f, int dim, int64_t off, int indent) {
    const fx_tensor *t = f->t;
    int64_t n = t->sizes[dim], st = t->strides[dim];
    int element_length = f->max_width + 2 + (f->imag ? f->imag->max_width + 1 : 0);
    int per_line = (LINEWIDTH - indent) / element_length;
    if (per_line < 1) per_line = 1;
    bool cut = f->summarize && n > 2 * EDGEITEMS;
    int64_t shown = cut ? 2 * EDGEITEMS + 1 : n; /* the " ..." marker counts as an element */
    fx_strbuf_putc(sb, '[');
    for (int64_t k = 0; k < shown; k++) {
        if (k > 0) {
            if (k % per_line == 0) {
                fx_strbuf_append(sb, ",\n");
                spaces(sb, indent + 1);
            } else {
                fx_strbuf_append(sb, ", ");
            }
        }
        if (cut && k == EDGEITEMS) {
            fx_strbuf_append(sb, " ...");
            continue;
        }
        int64_t i = cut && k > EDGEITEMS ? n - (2 * EDGEITEMS + 1 - k) : k;
        put_value(sb, f, off + i * st);
    }
    fx_strbuf_putc(sb, ']');
}

static void tensor_str(fx_strbuf *sb, const fmt *f, int dim, int64_t off, int indent) {
    const fx_tensor *t = f->t;
    int rest = t->ndim - dim; /* dims of this slice */
    if (rest == 0) {
        put_value(sb, f, off);
        return;
    }
    if (rest == 1) {
        vector_str(sb, f, dim, off, indent);
        return;
    }
    int64_t n = t->sizes[dim], st = t->strides[dim];
    bool cut = f->summarize && n > 2 * EDGEITEMS;
    int64_t shown = cut ? 2 * EDGEITEMS + 1 : n;
    fx_strbuf_putc(sb, '[');
    for (int64_t k = 0; k < shown; k++) {
        if (k > 0) {
            fx_strbuf_putc(sb, ',');
            for (int j = 0; j < rest - 1; j++) fx_strbuf_putc(sb, '\n');
            spaces(sb, indent + 1);
        }
        if (cut && k == EDGEITEMS) {
            fx_strbuf_append(sb, "...");
            continue;
        }
        int64_t i = cut && k > EDGEITEMS ? n - (2 * EDGEITEMS + 1 - k) : k;
        tensor_str(sb, f, dim + 1, off + i * st, indent + 1);
    }
    fx_strbuf_putc(sb, ']');
}

/* ---- suffixes ------------------------------------------------------------------------------ */

#define MAX_SUFFIXES 5

static void size_tuple(char *buf, size_t cap, const fx_tensor *t) {
    size_t n = (size_t)snprintf(buf, cap, "size=(");
    for (int d = 0; d < t->ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, d ? ", %lld" : "%lld", (long long)t->sizes[d]);
    if (n < cap) snprintf(buf + n, cap - n, t->ndim == 1 ? ",)" : ")");
}

/* _add_suffixes: `start` is where "tensor(" begins in sb. */
static void add_suffixes(fx_strbuf *sb, size_t start, char suffixes[][96], int ns, int indent) {
    if (sb->oom) return;
    const char *s = fx_strbuf_cstr(sb) + start;
    size_t len = strlen(s);
    const char *nl = strrchr(s, '\n');
    /* Python: len(tensor_str) - tensor_str.rfind("\n") + 1 (rfind gives -1 without newline) */
    long last = (long)len - (nl ? (long)(nl - s) : -1) + 1;
    for (int i = 0; i < ns; i++) {
        long sl = (long)strlen(suffixes[i]);
        if (last + sl + 2 > LINEWIDTH) {
            fx_strbuf_append(sb, ",\n");
            spaces(sb, indent);
            fx_strbuf_append(sb, suffixes[i]);
            last = indent + sl;
        } else {
            fx_strbuf_append(sb, ", ");
            fx_strbuf_append(sb, suffixes[i]);
            last += sl + 2;
        }
    }
    fx_strbuf_putc(sb, ')');
}

void fx_tensor_format(fx_strbuf *sb, const fx_tensor *t) {
    static const char prefix[] = "tensor(";
    const int indent = (int)sizeof prefix - 1;
    char suffixes[MAX_SUFFIXES][96];
    int ns = 0;
    size_t start = sb->len;
    fx_strbuf_append(sb, prefix);
    fx_dtype dt = t->dtype;
    /* complex64 is the default complex dtype of the default float32 */
    bool default_dtype = dt == FX_DTYPE_F32 || dt == FX_DTYPE_I64 || dt == FX_DTYPE_BOOL ||
                         dt == FX_DTYPE_C64;
    int64_t numel = fx_tensor_numel(t);
    if (t->device == FX_DEVICE_META) {
        snprintf(suffixes[ns++], 96, "device='meta'");
        size_tuple(suffixes[ns++], 96, t);
        if (dt != FX_DTYPE_DEFAULT)
            snprintf(suffixes[ns++], 96, "dtype=torch.%s", fx_dtype_name(dt));
        fx_strbuf_append(sb, "...");
    } else if (numel == 0) {
        if (t->ndim != 1) size_tuple(suffixes[ns++], 96, t);
        if (dt != FX_DTYPE_DEFAULT)
            snprintf(suffixes[ns++], 96, "dtype=torch.%s", fx_dtype_name(dt));
        fx_strbuf_append(sb, "[]");
    } else {
        if (!default_dtype) snprintf(suffixes[ns++], 96, "dtype=torch.%s", fx_dtype_name(dt));
        fmt f = {0}, fi = {0};
        f.t = t;
        f.base = fx_tensor_data(t);
        f.dt = fx_dtype_to_real(dt);
        f.floating = fx_dtype_is_float(f.dt);
        f.summarize = numel > THRESHOLD;
        if (fx_dtype_is_complex(dt)) { /* one formatter over t.real, one over t.imag */
            fi = f;
            fi.part = 1;
            formatter_init(&fi);
            f.imag = &fi;
        }
        formatter_init(&f);
        tensor_str(sb, &f, 0, 0, indent);
    }
    /* fxdb has no autograd: a leaf that requires grad prints as PyTorch prints one */
    if (t->requires_grad && !t->base) snprintf(suffixes[ns++], 96, "requires_grad=True");
    add_suffixes(sb, start, suffixes, ns, indent);
}
