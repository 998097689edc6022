/* core/strbuf.c — growable char buffer.
 * Layer: core. */
#include "core/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/fx_alloc.h"

static int grow(fx_strbuf *sb, size_t extra) {
    if (sb->oom) return 0;
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap) return 1;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need) cap *= 2;
    char *p = fx_realloc(sb->data, cap);
    if (!p) {
        sb->oom = 1;
        return 0;
    }
    sb->data = p;
    sb->cap = cap;
    return 1;
}

void fx_strbuf_appendn(fx_strbuf *sb, const char *s, size_t n) {
    if (!grow(sb, n)) return;
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void fx_strbuf_append(fx_strbuf *sb, const char *s) { fx_strbuf_appendn(sb, s, strlen(s)); }

void fx_strbuf_putc(fx_strbuf *sb, char c) { fx_strbuf_appendn(sb, &c, 1); }

void fx_strbuf_appendf(fx_strbuf *sb, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        fx_strbuf_appendn(sb, small, (size_t)n);
        return;
    }
    if (!grow(sb, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

const char *fx_strbuf_cstr(const fx_strbuf *sb) { return sb->data ? sb->data : ""; }

char *fx_strbuf_take(fx_strbuf *sb) {
    char *p = NULL;
    if (!sb->oom) {
        p = sb->data;
        if (!p) {
            p = fx_malloc(1);
            if (p) p[0] = '\0';
        }
    } else {
        fx_free(sb->data);
    }
    sb->data = NULL;
    sb->len = sb->cap = 0;
    sb->oom = 0;
    return p;
}

void fx_strbuf_free(fx_strbuf *sb) {
    fx_free(sb->data);
    sb->data = NULL;
    sb->len = sb->cap = 0;
    sb->oom = 0;
}

int fx_strbuf_status(const fx_strbuf *sb, fx_err *err) {
    if (sb->oom) return fx_err_setf(err, FX_ENOMEM, "out of memory while formatting text");
    return FX_OK;
}
