/* core/schema.c — parser for ATen schema strings.
 * Layer: core. A small recursive-descent reader over one line; no allocation except the default
 * values it parses (strings and lists), owned by the schema. */
#include "core/schema.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct reader {
    const char *s, *p;
    fx_err *err;
} reader;

static void skip_ws(reader *r) {
    while (*r->p == ' ') r->p++;
}

static int fail(reader *r, const char *what) {
    return fx_err_setf(r->err, FX_EARG, "schema parse error at column %d (%s): %s",
                       (int)(r->p - r->s), what, r->s);
}

static int read_ident(reader *r, char *out, size_t cap) {
    skip_ws(r);
    size_t n = 0;
    while (isalnum((unsigned char)*r->p) || *r->p == '_') {
        if (n + 1 >= cap) return fail(r, "name too long");
        out[n++] = *r->p++;
    }
    out[n] = 0;
    return n ? FX_OK : fail(r, "expected a name");
}

static const struct { const char *name; fx_argtype ty; } k_types[] = {
    {"Tensor", FX_TY_TENSOR},      {"int", FX_TY_INT},           {"SymInt", FX_TY_INT},
    {"float", FX_TY_FLOAT},        {"Scalar", FX_TY_SCALAR},     {"bool", FX_TY_BOOL},
    {"ScalarType", FX_TY_DTYPE},   {"Layout", FX_TY_LAYOUT},     {"Device", FX_TY_DEVICE},
    {"MemoryFormat", FX_TY_MEMFORMAT}, {"str", FX_TY_STR},       {"Generator", FX_TY_GENERATOR},
};

static fx_argtype list_of(fx_argtype t) {
    switch (t) {
    case FX_TY_TENSOR: return FX_TY_TENSOR_LIST;
    case FX_TY_INT: return FX_TY_INT_LIST;
    case FX_TY_FLOAT: return FX_TY_FLOAT_LIST;
    case FX_TY_BOOL: return FX_TY_BOOL_LIST;
    default: return FX_TY_ANY;
    }
}

/* TYPE with annotation and suffixes. */
static int read_type(reader *r, fx_argtype *ty, bool *opt, bool *elem_opt, int *list_len,
                     char *alias, bool *alias_write) {
    char name[32];
    int rc = read_ident(r, name, sizeof name);
    if (rc) return rc;
    *ty = FX_TY_ANY;
    bool known = !strcmp(name, "Any");
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (!strcmp(name, k_types[i].name)) *ty = k_types[i].ty, known = true;
    if (!known) return fail(r, "unknown type name"); /* torch: "Unknown type name 'Foo'" */
    *opt = *elem_opt = false;
    *list_len = 0;
    *alias = 0;
    *alias_write = false;
    if (*r->p == '(') { /* (a), (a!), (a -> *) */
        r->p++;
        if (!islower((unsigned char)*r->p)) return fail(r, "expected an alias set");
        *alias = *r->p++;
        if (*r->p == '!') *alias_write = true, r->p++;
        while (*r->p && *r->p != ')') r->p++;
        if (*r->p != ')') return fail(r, "unclosed alias annotation");
        r->p++;
    }
    if (*r->p == '?') *opt = true, r->p++;
    if (*r->p == '[') {
        r->p++;
        if (isdigit((unsigned char)*r->p)) *list_len = (int)strtol(r->p, (char **)&r->p, 10);
        if (*r->p != ']') return fail(r, "unclosed list type");
        r->p++;
        *ty = list_of(*ty);
        *elem_opt = *opt;
        *opt = false;
        if (*r->p == '?') *opt = true, r->p++;
    }
    return FX_OK;
}

static int read_default(reader *r, fx_arg_schema *a) {
    skip_ws(r);
    const char *start = r->p;
    int depth = 0;
    while (*r->p && !((*r->p == ',' || *r->p == ')') && depth == 0)) {
        if (*r->p == '[') depth++;
        if (*r->p == ']') depth--;
        r->p++;
    }
    size_t n = (size_t)(r->p - start);
    char text[64];
    while (n && isspace((unsigned char)start[n - 1])) n--;
    if (!n) return fail(r, "expected a default value");
    if (n >= sizeof text) return fail(r, "default too long");
    memcpy(text, start, n);
    text[n] = 0;
    a->has_default = true;
    if (!strcmp(text, "None")) a->def = fx_iv_none();
    else if (!strcmp(text, "True")) a->def = fx_iv_bool(true);
    else if (!strcmp(text, "False")) a->def = fx_iv_bool(false);
    else if (text[0] == '[') {
        int64_t v[FX_SCHEMA_MAX_ARGS];
        int k = 0;
        for (char *q = text + 1; *q && *q != ']' && k < FX_SCHEMA_MAX_ARGS;) {
            v[k++] = strtoll(q, &q, 10);
            while (*q == ',' || *q == ' ') q++;
        }
        if (a->list_len > 1 && k == 1)
            for (; k < a->list_len; k++) v[k] = v[0];
        int rc = fx_iv_int_list(k, v, &a->def, r->err);
        if (rc) return rc;
    } else if (text[0] == '"' || text[0] == '\'') {
        text[n - 1] = 0;
        a->def = fx_iv_str(text + 1);
    } else if (a->type == FX_TY_INT_LIST && (isdigit((unsigned char)text[0]) || text[0] == '-')) {
        /* int[2] stride=1 means [1, 1] */
        int64_t v[FX_SCHEMA_MAX_ARGS];
        int k = a->list_len > 0 ? a->list_len : 1;
        for (int i = 0; i < k && i < FX_SCHEMA_MAX_ARGS; i++) v[i] = strtoll(text, NULL, 10);
        int rc = fx_iv_int_list(k, v, &a->def, r->err);
        if (rc) return rc;
    } else if (isdigit((unsigned char)text[0]) || text[0] == '-') {
        char *end;
        long long iv = strtoll(text, &end, 10);
        if (*end == 0 && a->type != FX_TY_FLOAT) a->def = fx_iv_int(iv);
        else a->def = fx_iv_float(strtod(text, NULL));
    } else if (a->type == FX_TY_DTYPE && fx_dtype_from_name(text) != FX_DTYPE_UNDEFINED) {
        a->def = fx_iv_dtype(fx_dtype_from_name(text)); /* ScalarType? dtype=long (randint) */
    } else {
        a->def = fx_iv_str(text); /* contiguous_format, Mean, ... */
    }
    return FX_OK;
}

int fx_schema_parse(const char *text, fx_schema *s, fx_err *err) {
    memset(s, 0, sizeof *s);
    s->mutated_arg = s->view_arg = -1;
    reader r = {text, text, err};
    int rc = read_ident(&r, s->name, sizeof s->name);
    if (rc) return rc;
    strcpy(s->overload, "default");
    if (*r.p == '.') {
        r.p++;
        if ((rc = read_ident(&r, s->overload, sizeof s->overload))) return rc;
    }
    if (*r.p != '(') return fail(&r, "expected '('");
    r.p++;
    bool kwonly = false;
    skip_ws(&r);
    while (*r.p != ')') {
        skip_ws(&r);
        if (*r.p == '*') {
            kwonly = true;
            r.p++;
        } else {
            if (s->nargs >= FX_SCHEMA_MAX_ARGS) return fail(&r, "too many arguments");
            fx_arg_schema *a = &s->args[s->nargs++];
            a->def.tag = FX_IV_UNSET;
            skip_ws(&r);
            a->symint = !strncmp(r.p, "SymInt", 6);
            if ((rc = read_type(&r, &a->type, &a->optional, &a->elem_optional, &a->list_len,
                                &a->alias, &a->alias_write)))
                return rc;
            if ((rc = read_ident(&r, a->name, sizeof a->name))) return rc;
            a->kwarg_only = kwonly;
            skip_ws(&r);
            if (*r.p == '=') {
                r.p++;
                if ((rc = read_default(&r, a))) return rc;
            }
            if (a->alias_write && s->mutated_arg < 0) s->mutated_arg = s->nargs - 1;
        }
        skip_ws(&r);
        if (*r.p == ',') r.p++;
        else if (*r.p != ')') return fail(&r, "expected ',' or ')'");
    }
    r.p++;
    skip_ws(&r);
    if (strncmp(r.p, "->", 2)) return fail(&r, "expected '->'");
    r.p += 2;
    skip_ws(&r);
    bool tuple = *r.p == '(';
    if (tuple) r.p++;
    for (;;) {
        skip_ws(&r);
        if (*r.p == ')' && tuple) break;
        if (s->nrets >= FX_SCHEMA_MAX_RETS) return fail(&r, "too many returns");
        fx_ret_schema *ret = &s->rets[s->nrets++];
        bool opt, eopt;
        int len;
        if ((rc = read_type(&r, &ret->type, &opt, &eopt, &len, &ret->alias, &ret->alias_write)))
            return rc;
        skip_ws(&r);
        if (isalpha((unsigned char)*r.p))
            if ((rc = read_ident(&r, ret->name, sizeof ret->name))) return rc;
        skip_ws(&r);
        if (*r.p == ',') {
            r.p++;
            continue;
        }
        break;
    }
    if (tuple) {
        skip_ws(&r);
        if (*r.p != ')') return fail(&r, "expected ')' after returns");
        r.p++;
    }
    /* A return sharing a non-written alias set with an argument makes this a view op. */
    for (int i = 0; i < s->nrets && s->view_arg < 0; i++) {
        if (!s->rets[i].alias || s->rets[i].alias_write) continue;
        for (int j = 0; j < s->nargs; j++)
            if (s->args[j].alias == s->rets[i].alias && !s->args[j].alias_write) {
                s->view_arg = j;
                break;
            }
    }
    return FX_OK;
}

void fx_schema_clear(fx_schema *s) {
    for (int i = 0; i < s->nargs; i++) fx_ivalue_clear(&s->args[i].def);
}

int fx_schema_arg_index(const fx_schema *s, const char *name) {
    for (int i = 0; i < s->nargs; i++) /* the first byte rules most out without a call */
        if (s->args[i].name[0] == name[0] && !strcmp(s->args[i].name, name)) return i;
    return -1;
}

static const char *type_name(fx_argtype t) {
    switch (t) {
    case FX_TY_TENSOR: case FX_TY_TENSOR_LIST: return "Tensor";
    case FX_TY_INT: case FX_TY_INT_LIST: return "int";
    case FX_TY_FLOAT: case FX_TY_FLOAT_LIST: return "float";
    case FX_TY_SCALAR: return "Scalar";
    case FX_TY_BOOL: case FX_TY_BOOL_LIST: return "bool";
    case FX_TY_DTYPE: return "ScalarType";
    case FX_TY_LAYOUT: return "Layout";
    case FX_TY_DEVICE: return "Device";
    case FX_TY_MEMFORMAT: return "MemoryFormat";
    case FX_TY_STR: return "str";
    case FX_TY_GENERATOR: return "Generator";
    default: return "Any";
    }
}

static bool is_list(fx_argtype t) {
    return t == FX_TY_TENSOR_LIST || t == FX_TY_INT_LIST || t == FX_TY_FLOAT_LIST ||
           t == FX_TY_BOOL_LIST;
}

/* A ScalarType default as native_functions.yaml spells it (dtype=long). */
static const char *schema_dtype_name(fx_dtype dt) {
    switch (dt) {
    case FX_DTYPE_I64: return "long";
    case FX_DTYPE_I32: return "int";
    case FX_DTYPE_F32: return "float";
    case FX_DTYPE_F64: return "double";
    default: return fx_dtype_name(dt);
    }
}

void fx_schema_format(fx_strbuf *sb, const fx_schema *s) {
    fx_strbuf_append(sb, s->name);
    if (strcmp(s->overload, "default")) fx_strbuf_appendf(sb, ".%s", s->overload);
    fx_strbuf_putc(sb, '(');
    bool star = false;
    for (int i = 0; i < s->nargs; i++) {
        const fx_arg_schema *a = &s->args[i];
        if (i) fx_strbuf_append(sb, ", ");
        if (a->kwarg_only && !star) {
            fx_strbuf_append(sb, "*, ");
            star = true;
        }
        fx_strbuf_append(sb, type_name(a->type));
        if (a->alias) fx_strbuf_appendf(sb, "(%c%s)", a->alias, a->alias_write ? "!" : "");
        if (a->elem_optional) fx_strbuf_putc(sb, '?');
        if (is_list(a->type)) {
            if (a->list_len) fx_strbuf_appendf(sb, "[%d]", a->list_len);
            else fx_strbuf_append(sb, "[]");
        }
        if (a->optional) fx_strbuf_putc(sb, '?');
        fx_strbuf_appendf(sb, " %s", a->name);
        if (a->has_default) {
            fx_strbuf_putc(sb, '=');
            if (a->def.tag == FX_IV_DTYPE) fx_strbuf_append(sb, schema_dtype_name(a->def.u.dtype));
            else if (a->def.tag == FX_IV_STR && a->type != FX_TY_STR) fx_strbuf_append(sb, a->def.u.s);
            else if (a->def.tag == FX_IV_STR) fx_strbuf_appendf(sb, "\"%s\"", a->def.u.s);
            else fx_ivalue_format(sb, &a->def, false);
        }
    }
    fx_strbuf_append(sb, ") -> ");
    if (s->nrets != 1) fx_strbuf_putc(sb, '(');
    for (int i = 0; i < s->nrets; i++) {
        const fx_ret_schema *r = &s->rets[i];
        if (i) fx_strbuf_append(sb, ", ");
        fx_strbuf_append(sb, type_name(r->type));
        if (r->alias) fx_strbuf_appendf(sb, "(%c%s)", r->alias, r->alias_write ? "!" : "");
        if (is_list(r->type)) fx_strbuf_append(sb, "[]");
        if (r->name[0]) fx_strbuf_appendf(sb, " %s", r->name);
    }
    if (s->nrets != 1) fx_strbuf_putc(sb, ')');
}
