/* pt2/pt2_json.h — JSON access for the PT2 reader (pt2/pt2_json.c), with the JSON path in every
 * message. Layer: pt2 (internal to the reader). Every accessor taking an rctx does nothing and
 * returns NULL / 0 / false once r->rc is set; on a mismatch it sets r->rc and r->err to FX_EIO
 * "<archive>: <file>: <path>: expected ..., got ..." (the first error of a read wins). Returned
 * cJSON pointers and strings are borrowed from the document the caller owns. */
#ifndef FXDB_PT2_JSON_H
#define FXDB_PT2_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/fx_err.h"
#include "pt2/pt2_impl.h"

/* One read of one archive entry: its first error (rc, err) and where it is. */
typedef struct rctx {
    fx_err *err;
    int rc;
    const char *file; /* the entry being read, "models/model.json" */
    const char *what; /* the archive */
    pt2_syms *sy;     /* the program's symbols (NULL where no symbolic size may appear) */
} rctx;

/* A JSON path one level down: buf = parent + "." + the printf-formatted sub ("[3]" joins without
 * the dot), cut to fit 512 bytes. */
#define SUB(buf, parent, ...)                                                                      \
    char buf[512];                                                                                 \
    do {                                                                                           \
        char sub_[256];                                                                            \
        snprintf(sub_, sizeof sub_, __VA_ARGS__);                                                  \
        pt2_subpath(buf, sizeof buf, parent, sub_);                                                \
    } while (0)

/* The read's first error: FX_EIO (malformed) / FX_ENOTIMPL (what fxdb does not model) at JSON
 * path `path`, formatted as printf. Returns r->rc. */
int pt2_bad(rctx *r, const char *path, const char *fmt, ...) FX_PRINTF(3, 4);
int pt2_unsupported(rctx *r, const char *path, const char *fmt, ...) FX_PRINTF(3, 4);
/* Reports the bare message a callee left in r->err at `path`, keeping FX_ENOTIMPL and FX_ENOMEM
 * (anything else becomes FX_EIO). Returns r->rc. */
int pt2_relay(rctx *r, const char *path);
/* out = parent + "." + sub (or parent + sub when sub starts with '['), cut to n bytes. */
void pt2_subpath(char *out, size_t n, const char *parent, const char *sub);

/* Object field `key` of o (an error when o is no object or lacks it); pt2_jopt: the field or
 * NULL, no error. */
const cJSON *pt2_jfield(rctx *r, const cJSON *o, const char *key, const char *path);
const cJSON *pt2_jopt(const cJSON *o, const char *key);
/* v itself, checked to be a string / array / object / boolean. */
const char *pt2_jstr(rctx *r, const cJSON *v, const char *path);
const cJSON *pt2_jarr(rctx *r, const cJSON *v, const char *path);
const cJSON *pt2_jobjv(rctx *r, const cJSON *v, const char *path);
bool pt2_jbool(rctx *r, const cJSON *v, const char *path);
/* An int64: a JSON number that is an integer within int64 (pt2_int64_of), or an exact
 * "#i<digits>" string. */
int64_t pt2_jint(rctx *r, const cJSON *v, const char *path);
/* A double: a number, "#i<digits>", or Python json's "Infinity" / "-Infinity" / "NaN". */
double pt2_jdouble(rctx *r, const cJSON *v, const char *path);
/* A union (schema.py _Union): an object with exactly one field; returns its value and names the
 * field in *key ("" on error). */
const cJSON *pt2_junion(rctx *r, const cJSON *v, const char *path, const char **key);

/* Parses JSON text of len bytes (NUL not needed) keeping integers of 16+ digits exact. Returns a
 * document the caller frees with cJSON_Delete, or NULL with err set: FX_ENOMEM, or FX_EIO
 * "<what>: <file>: not valid JSON (near byte N)". */
cJSON *pt2_parse_json(const char *what, const char *file, const char *text, size_t len,
                      fx_err *err);
/* The same for JSON held in a string field (metadata "custom", "from_node"); NULL when it is not
 * valid JSON or memory ran out (no error set). */
cJSON *pt2_parse_inner(const char *text);

#endif
