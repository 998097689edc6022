/* core/fx_err.h — status codes and the error record every core function fills.
 * Layer: core. Core never prints, exits or aborts: it returns a status and fills an fx_err, as
 * SQLite returns rc + sqlite3_errmsg. Only lua/ turns an fx_err into a Lua error. */
#ifndef FX_ERR_H
#define FX_ERR_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#if defined(__GNUC__)
#define FX_PRINTF(n, m) __attribute__((format(printf, n, m)))
#else
#define FX_PRINTF(n, m)
#endif

typedef enum fx_status {
    FX_OK = 0,
    FX_ENOMEM,    /* an allocation failed (or a tensor too large to allocate was asked for) */
    FX_ESHAPE,    /* sizes do not broadcast / view is illegal / wrong number of dims */
    FX_ETYPE,     /* dtype not supported or cannot be promoted / cast */
    FX_EINDEX,    /* index or dim out of range */
    FX_EARG,      /* wrong argument (kind, count, value) */
    FX_EEXPORT,   /* export refused the program (kind says why) */
    FX_EDATADEP,  /* data-dependent operation on a meta tensor */
    FX_EIO,       /* file could not be read or written, or is malformed */
    FX_ENOTIMPL,  /* a PyTorch feature fxdb does not have yet */
    FX_EINTERNAL, /* an invariant broke: a bug in fxdb */
    FX_EINTR,     /* interrupted (Ctrl-C) */
    FX_STATUS_COUNT
} fx_status;

#define FX_ERR_MSG 1024
#define FX_ERR_SHORT 256

/* One error. Owned by the caller (usually on the stack); no heap memory inside, so it can be
 * filled on an out-of-memory path and dropped without cleanup. */
typedef struct fx_err {
    int code;                 /* fx_status; FX_OK when nothing went wrong */
    char kind[48];            /* machine-readable kind, e.g. "attribute_assignment"; "" if none */
    char msg[FX_ERR_MSG];     /* the message, worded as PyTorch words it for the same mistake */
    char hint[FX_ERR_SHORT * 2]; /* a suggested fix, or "" */
    char loc[FX_ERR_SHORT];   /* "file:line" of the Lua code that caused it, or "" */
    char source[FX_ERR_SHORT];/* that Lua source line, trimmed, or "" */
    char node[64];            /* name of the raw graph node where it happened, or "" */
    char module[FX_ERR_SHORT];/* "layers.2.norm (RMSNorm)": innermost module of that node, or "" */
} fx_err;

/* Clears e to FX_OK with empty strings. e may be NULL. */
void fx_err_clear(fx_err *e);

/* Sets e->code = code and formats the message; keeps kind/hint/loc as they are.
 * Returns code, so `return fx_err_setf(err, FX_ESHAPE, "...")` is the idiom. e may be NULL. */
int fx_err_setf(fx_err *e, int code, const char *fmt, ...) FX_PRINTF(3, 4);

/* Sets the hint text of e (formatted). Returns e->code. */
int fx_err_hintf(fx_err *e, const char *fmt, ...) FX_PRINTF(2, 3);

/* Sets the kind string of e. */
void fx_err_kind(fx_err *e, const char *kind);

/* The name of a status, e.g. "FX_ESHAPE". Never NULL. */
const char *fx_status_name(int code);

/* ---- interruption ---------------------------------------------------------------------------- */
/* Cooperative cancellation of long kernels (Ctrl-C). The kernel iterators (core/kernels/k_iter.c)
 * look at the request flag between chunks of about a million elements; when it is set they stop
 * early and say so (fx_interrupt_stopped), and the dispatcher and the interpreter then fail that
 * op with FX_EINTR "interrupted!". A kernel that finishes is not failed: the request stays for
 * the Lua hook, which pauses a debugger session or raises between statements. A check is one load
 * of a volatile flag. */
extern volatile sig_atomic_t fx_interrupt_flag;
/* Asks running kernels to stop. Async-signal-safe (a signal handler calls it). */
void fx_interrupt_request(void);
/* Forgets a pending request (the interrupt was handled elsewhere, e.g. by the Lua hook). */
void fx_interrupt_clear(void);
static inline bool fx_interrupt_pending(void) { return fx_interrupt_flag != 0; }
/* Called by a kernel loop that stops early because a request is pending. */
void fx_interrupt_stopped(void);
/* When a kernel stopped early: clears the request and fails with FX_EINTR "interrupted!";
 * else FX_OK. */
int fx_interrupt_check(fx_err *err);

#endif
