/* core/strbuf.h — growable char buffer for printers and messages.
 * Layer: core. On allocation failure the buffer is marked failed (sb->oom = 1) and further
 * appends do nothing, so printers can append freely and check once at the end. */
#ifndef FX_STRBUF_H
#define FX_STRBUF_H

#include <stddef.h>

#include "core/fx_err.h"

typedef struct fx_strbuf {
    char *data; /* NUL-terminated; NULL until the first append; owned (fx_free) */
    size_t len; /* bytes before the NUL */
    size_t cap; /* bytes allocated */
    int oom;    /* 1 once an allocation failed */
} fx_strbuf;

#define FX_STRBUF_INIT {0, 0, 0, 0}

void fx_strbuf_append(fx_strbuf *sb, const char *s);
void fx_strbuf_appendn(fx_strbuf *sb, const char *s, size_t n);
void fx_strbuf_appendf(fx_strbuf *sb, const char *fmt, ...) FX_PRINTF(2, 3);
void fx_strbuf_putc(fx_strbuf *sb, char c);
/* Returns the text ("" when empty); owned by sb, valid until the next append or free. */
const char *fx_strbuf_cstr(const fx_strbuf *sb);
/* Hands the text to the caller (free with fx_free) and resets sb. NULL on oom. */
char *fx_strbuf_take(fx_strbuf *sb);
void fx_strbuf_free(fx_strbuf *sb);
/* FX_ENOMEM (with a message in err) when the buffer failed, else FX_OK. */
int fx_strbuf_status(const fx_strbuf *sb, fx_err *err);

#endif
