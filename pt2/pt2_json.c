/* pt2/pt2_json.c — JSON access for the PT2 reader, with the JSON path in every message.
 * Layer: pt2. A reader (pt2_read.c) keeps one rctx per archive entry; each accessor checks the
 * kind of the value it is handed (schema.py's dataclasses as JSON objects, _Union as an object
 * with one field, Python's exact integers) and on a mismatch records the read's first error,
 * "<archive>: <file>: <json path>: <message>", returning a neutral value so the caller can go on
 * and test r->rc once. Integers beyond 2^53 survive cJSON's doubles through pt2_parse_json's
 * "#i<digits>" strings. */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pt2/pt2_json.h"

/* The first error of a read, with code FX_EIO (malformed) or FX_ENOTIMPL (what fxdb does not
 * model): "<archive>: <file>: <json path>: <message>". Later errors are dropped. */
static int fail_at(rctx *r, int code, const char *path, const char *fmt, va_list ap) {
    if (r->rc) return r->rc;
    char m[600];
    vsnprintf(m, sizeof m, fmt, ap);
    r->rc =
        fx_err_setf(r->err, code, "%s: %s: %s%s%s", r->what, r->file, path, *path ? ": " : "", m);
    return r->rc;
}

int pt2_bad(rctx *r, const char *path, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = fail_at(r, FX_EIO, path, fmt, ap);
    va_end(ap);
    return rc;
}

int pt2_unsupported(rctx *r, const char *path, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = fail_at(r, FX_ENOTIMPL, path, fmt, ap);
    va_end(ap);
    return rc;
}

/* Reports the error a callee left in r->err (a bare message) at JSON path `path`, with its code
 * (FX_ENOTIMPL stays "not supported", FX_ENOMEM passes through, anything else is malformed). */
int pt2_relay(rctx *r, const char *path) {
    if (r->rc) return r->rc;
    int code = r->err->code;
    if (code == FX_ENOMEM) return r->rc = code;
    char m[sizeof r->err->msg];
    snprintf(m, sizeof m, "%s", r->err->msg);
    return code == FX_ENOTIMPL ? pt2_unsupported(r, path, "%s", m) : pt2_bad(r, path, "%s", m);
}

/* out = parent + "." + sub (or parent + sub for "[i]"), cut to fit. */
void pt2_subpath(char *out, size_t n, const char *parent, const char *sub) {
    size_t lp = strlen(parent), ls = strlen(sub);
    bool dot = lp && sub[0] != '[';
    if (lp > n - 1) lp = n - 1;
    memcpy(out, parent, lp);
    size_t at = lp;
    if (dot && at < n - 1) out[at++] = '.';
    if (ls > n - 1 - at) ls = n - 1 - at;
    memcpy(out + at, sub, ls);
    out[at + ls] = 0;
}

static const char *pt2_jkind(const cJSON *j) {
    if (!j) return "nothing";
    if (cJSON_IsObject(j)) return "an object";
    if (cJSON_IsArray(j)) return "an array";
    if (cJSON_IsString(j)) return "a string";
    if (cJSON_IsNumber(j)) return "a number";
    if (cJSON_IsBool(j)) return "a boolean";
    if (cJSON_IsNull(j)) return "null";
    return "something else";
}

const cJSON *pt2_jfield(rctx *r, const cJSON *o, const char *key, const char *path) {
    if (r->rc) return NULL;
    if (!cJSON_IsObject(o)) {
        pt2_bad(r, path, "expected an object, got %s", pt2_jkind(o));
        return NULL;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) pt2_bad(r, path, "missing field '%s'", key);
    return v;
}
const cJSON *pt2_jopt(const cJSON *o, const char *key) {
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}
static bool pt2_jis(rctx *r, const cJSON *v, bool ok, const char *want, const char *path) {
    if (r->rc) return false;
    if (!ok) pt2_bad(r, path, "expected %s, got %s", want, pt2_jkind(v));
    return ok;
}
const char *pt2_jstr(rctx *r, const cJSON *v, const char *path) {
    return pt2_jis(r, v, cJSON_IsString(v), "a string", path) ? v->valuestring : NULL;
}
const cJSON *pt2_jarr(rctx *r, const cJSON *v, const char *path) {
    return pt2_jis(r, v, cJSON_IsArray(v), "an array", path) ? v : NULL;
}
const cJSON *pt2_jobjv(rctx *r, const cJSON *v, const char *path) {
    return pt2_jis(r, v, cJSON_IsObject(v), "an object", path) ? v : NULL;
}
/* Integers: numbers, or the "#i<digits>" strings prep_json made of integers beyond 2^53. */
int64_t pt2_jint(rctx *r, const cJSON *v, const char *path) {
    if (r->rc) return 0;
    if (cJSON_IsString(v) && !strncmp(v->valuestring, "#i", 2)) {
        char *end;
        long long x = strtoll(v->valuestring + 2, &end, 10);
        if (!*end) return x;
    }
    int64_t i;
    if (cJSON_IsNumber(v) && pt2_int64_of(v->valuedouble, &i)) return i;
    pt2_bad(r, path, "expected an integer, got %s", pt2_jkind(v));
    return 0;
}
double pt2_jdouble(rctx *r, const cJSON *v, const char *path) {
    if (r->rc) return 0;
    if (cJSON_IsNumber(v)) return v->valuedouble;
    if (cJSON_IsString(v)) {
        if (!strcmp(v->valuestring, "Infinity")) return 1.0 / 0.0;
        if (!strcmp(v->valuestring, "-Infinity")) return -1.0 / 0.0;
        if (!strcmp(v->valuestring, "NaN")) return 0.0 / 0.0;
        if (!strncmp(v->valuestring, "#i", 2)) return strtod(v->valuestring + 2, NULL);
    }
    pt2_bad(r, path, "expected a number, got %s", pt2_jkind(v));
    return 0;
}
bool pt2_jbool(rctx *r, const cJSON *v, const char *path) {
    return pt2_jis(r, v, cJSON_IsBool(v), "a boolean", path) && cJSON_IsTrue(v);
}
/* A union (schema.py _Union): an object with exactly one field. Returns its value; *key names
 * the field. */
const cJSON *pt2_junion(rctx *r, const cJSON *v, const char *path, const char **key) {
    *key = "";
    if (!pt2_jobjv(r, v, path)) return NULL;
    if (cJSON_GetArraySize(v) != 1) {
        pt2_bad(r, path, "expected one field (a union), got %d", cJSON_GetArraySize(v));
        return NULL;
    }
    *key = v->child->string;
    return v->child;
}

/* Python's json writes every integer exactly; cJSON reads numbers as doubles. Integers with 16
 * or more digits (outside strings) become "#i<digits>" strings before parsing. */
static char *pt2_prep_json(const char *s, size_t n) {
    char *o = fx_malloc(n * 2 + 16), *q = o;
    if (!o) return NULL;
    bool in_str = false;
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (in_str) {
            *q++ = c;
            i++;
            if (c == '\\' && i < n)
                *q++ = s[i++];
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"') {
            in_str = true;
            *q++ = c;
            i++;
            continue;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            size_t j = i + (c == '-');
            while (j < n && s[j] >= '0' && s[j] <= '9') j++;
            bool frac = j < n && (s[j] == '.' || s[j] == 'e' || s[j] == 'E');
            if (!frac && j - i >= 16 && j - i < 24) {
                *q++ = '"';
                *q++ = '#';
                *q++ = 'i';
                memcpy(q, s + i, j - i);
                q += j - i;
                *q++ = '"';
            } else {
                memcpy(q, s + i, j - i);
                q += j - i;
            }
            i = j;
            continue;
        }
        *q++ = c;
        i++;
    }
    *q = 0;
    return o;
}

/* JSON text held in a string field (metadata "custom", "from_node"), with exact integers. */
cJSON *pt2_parse_inner(const char *text) {
    char *t = pt2_prep_json(text, strlen(text));
    cJSON *j = t ? cJSON_Parse(t) : NULL;
    fx_free(t);
    return j;
}

cJSON *pt2_parse_json(const char *what, const char *file, const char *text, size_t len,
                      fx_err *err) {
    char *t = pt2_prep_json(text, len);
    if (!t) {
        fx_err_setf(err, FX_ENOMEM, "out of memory");
        return NULL;
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithOpts(t, &end, 1);
    if (!j) {
        size_t at = end ? (size_t)(end - t) : 0;
        fx_err_setf(err, FX_EIO, "%s: %s: not valid JSON (near byte %zu)", what, file, at);
    }
    fx_free(t);
    return j;
}
