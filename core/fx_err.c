/* core/fx_err.c — status names and fx_err formatting.
 * Layer: core. */
#include "core/fx_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void fx_err_clear(fx_err *e) {
    if (!e) return;
    e->code = FX_OK;
    e->kind[0] = e->msg[0] = e->hint[0] = e->loc[0] = e->source[0] = e->node[0] = '\0';
    e->module[0] = '\0';
}

int fx_err_setf(fx_err *e, int code, const char *fmt, ...) {
    if (!e) return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->code = code;
    return code;
}

int fx_err_hintf(fx_err *e, const char *fmt, ...) {
    if (!e) return FX_OK;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->hint, sizeof e->hint, fmt, ap);
    va_end(ap);
    return e->code;
}

void fx_err_kind(fx_err *e, const char *kind) {
    if (!e) return;
    snprintf(e->kind, sizeof e->kind, "%s", kind ? kind : "");
}

const char *fx_status_name(int code) {
    static const char *const names[] = {
        "FX_OK", "FX_ENOMEM", "FX_ESHAPE", "FX_ETYPE", "FX_EINDEX", "FX_EARG",
        "FX_EEXPORT", "FX_EDATADEP", "FX_EIO", "FX_ENOTIMPL", "FX_EINTERNAL",
        "FX_EINTR",
    };
    _Static_assert(sizeof names / sizeof names[0] == FX_STATUS_COUNT, "status names");
    return (code >= 0 && code < FX_STATUS_COUNT) ? names[code] : "FX_E?";
}

volatile sig_atomic_t fx_interrupt_flag;
static volatile sig_atomic_t g_stopped; /* a kernel stopped early for the pending request */

void fx_interrupt_request(void) { fx_interrupt_flag = 1; }

void fx_interrupt_clear(void) { fx_interrupt_flag = g_stopped = 0; }

void fx_interrupt_stopped(void) { g_stopped = 1; }

int fx_interrupt_check(fx_err *err) {
    if (!g_stopped) return FX_OK;
    fx_interrupt_flag = g_stopped = 0;
    return fx_err_setf(err, FX_EINTR, "interrupted!");
}
