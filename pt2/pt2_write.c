/* pt2/pt2_write.c — an exported program as PyTorch's PT2 archive (torch.export.save).
 * Layer: pt2. Writes what torch/_export/serde/serialize.py's GraphModuleSerializer writes for
 * the same program: nodes without their getitem users (a multi-output node names its outputs
 * after them), arguments by schema name with their kind, tensor metas by value name, stack_trace
 * in Python's traceback format, nn_module_stack as "key,path,type;...", from_node as JSON; then
 * package_pt2's zip layout with raw weight bytes (torch/export/pt2_archive/_package.py). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "core/hop.h"
#include "pt2/pt2.h"
#include "pt2/pt2_impl.h"

/* ---- small helpers ------------------------------------------------------------------------------
 */

int pt2_scalar_type(fx_dtype dt) {
    switch (dt) {
    case FX_DTYPE_U8: return 1;
    case FX_DTYPE_I8: return 2;
    case FX_DTYPE_I16: return 3;
    case FX_DTYPE_I32: return 4;
    case FX_DTYPE_I64: return 5;
    case FX_DTYPE_F16: return 6;
    case FX_DTYPE_F32: return 7;
    case FX_DTYPE_F64: return 8;
    case FX_DTYPE_C64: return 10;  /* COMPLEXFLOAT */
    case FX_DTYPE_C128: return 11; /* COMPLEXDOUBLE */
    case FX_DTYPE_BOOL: return 12;
    case FX_DTYPE_BF16: return 13;
    default: return -1;
    }
}

fx_dtype pt2_dtype(int st) {
    for (int d = 0; d < FX_DTYPE_COUNT; d++)
        if (pt2_scalar_type((fx_dtype)d) == st) return (fx_dtype)d;
    return FX_DTYPE_UNDEFINED;
}

void pt2_gather(void *dst, const void *src, int nd, const int64_t *sizes, const int64_t *strides,
                size_t isz) {
    int64_t numel = 1, idx[FX_MAX_DIMS] = {0};
    for (int d = 0; d < nd; d++) numel *= sizes[d];
    char *o = dst;
    const char *in = src;
    for (int64_t i = 0; i < numel; i++) {
        int64_t off = 0;
        for (int d = 0; d < nd; d++) off += idx[d] * strides[d];
        memcpy(o + (size_t)i * isz, in + off * (int64_t)isz, isz);
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < sizes[d]) break;
            idx[d] = 0;
        }
    }
}

int pt2_tensor_bytes(const fx_tensor *t, void **out, size_t *len, fx_err *err) {
    *out = NULL;
    *len = 0;
    int64_t numel = fx_tensor_numel(t);
    size_t isz = fx_dtype_size(fx_tensor_dtype(t));
    if (numel == 0) return FX_OK;
    const char *src = fx_tensor_data(t);
    if (!src) return fx_err_setf(err, FX_EARG, "a meta tensor has no bytes to save");
    char *buf = fx_malloc((size_t)numel * isz);
    if (!buf) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    if (fx_tensor_is_contiguous(t))
        memcpy(buf, src, (size_t)numel * isz);
    else
        pt2_gather(buf, src, fx_tensor_ndim(t), fx_tensor_sizes(t), fx_tensor_strides(t), isz);
    *out = buf;
    *len = (size_t)numel * isz;
    return FX_OK;
}

/* Exact integers: cJSON keeps numbers as doubles, so an int64 like 9223372036854775807 (slice's
 * end) is written as raw text. */
static cJSON *jint(int64_t v) {
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)v);
    return cJSON_CreateRaw(b);
}

/* Floats as serialize.py's _dataclass_to_dict writes them: inf and nan as strings. */
static cJSON *jfloat(double d) {
    if (d != d) return cJSON_CreateString("NaN");
    if (d > 1.7976931348623157e308) return cJSON_CreateString("Infinity");
    if (d < -1.7976931348623157e308) return cJSON_CreateString("-Infinity");
    char b[48] = "";
    for (int prec = 1; prec <= 17; prec++) { /* the shortest text that reads back the same */
        snprintf(b, 40, "%.*g", prec, d);
        if (strtod(b, NULL) == d) break;
    }
    /* JSON needs a float to look like one for Python to read a float back */
    if (!strpbrk(b, ".eE")) strcat(b, ".0");
    return cJSON_CreateRaw(b);
}

static cJSON *jobj1(const char *key, cJSON *v) {
    cJSON *o = cJSON_CreateObject();
    if (o && v)
        cJSON_AddItemToObject(o, key, v);
    else
        cJSON_Delete(v);
    return o;
}

static cJSON *jname(const char *key, const char *name) { /* {"name": name} under key */
    return jobj1(key, jobj1("name", cJSON_CreateString(name)));
}

typedef struct wctx {
    fx_err *err;
    int rc;
} wctx;

static void fail(wctx *w, int code, const char *fmt, const char *a, const char *b) {
    if (w->rc) return;
    char m[512];
    snprintf(m, sizeof m, fmt, a, b);
    w->rc = fx_err_setf(w->err, code, "%s", m);
}

/* ---- tensor metas -------------------------------------------------------------------------------
 */

/* e as sympy's srepr, which serialize.py's _print_sympy writes as a SymExpr's expr_str since
 * torch 2.7: Symbol('s0', integer=True, positive=True) for a size symbol, Symbol('u0',
 * integer=True) for an unbacked one, Integer(n), Add(...), Mul(...), Pow(a, Integer(k)),
 * FloorDiv(a, b), PythonMod(a, b) (Python's %), Max / Min(...), and the relations Eq, Ne,
 * StrictLessThan, LessThan, StrictGreaterThan, GreaterThan. torch's reader sympifies the text,
 * so only the value of each expression matters, not the order of its arguments. */
static void srepr(fx_strbuf *sb, const fx_sym *e) {
    char name[32];
    int n = fx_sym_nargs(e);
    switch (fx_sym_kind_of(e)) {
    case FX_SYM_CONST:
        fx_strbuf_appendf(sb, "Integer(%lld)", (long long)fx_sym_const_value(e));
        return;
    case FX_SYM_BOOL: fx_strbuf_append(sb, fx_sym_const_value(e) ? "True" : "False"); return;
    case FX_SYM_SYMBOL:
        fx_sym_str(e, name, sizeof name);
        fx_strbuf_appendf(sb, "Symbol('%s', integer=True%s)", name,
                          fx_sym_has_unbacked(e) ? "" : ", positive=True");
        return;
    case FX_SYM_ADD:
        fx_strbuf_append(sb, "Add(");
        for (int i = 0; i < n; i++) {
            if (i) fx_strbuf_append(sb, ", ");
            srepr(sb, fx_sym_arg(e, i));
        }
        if (fx_sym_coeff(e)) fx_strbuf_appendf(sb, ", Integer(%lld)", (long long)fx_sym_coeff(e));
        fx_strbuf_putc(sb, ')');
        return;
    case FX_SYM_MUL: {
        bool one = fx_sym_coeff(e) == 1;
        if (!one || n > 1) fx_strbuf_append(sb, "Mul(");
        if (!one) fx_strbuf_appendf(sb, "Integer(%lld)", (long long)fx_sym_coeff(e));
        for (int i = 0; i < n; i++) {
            if (i || !one) fx_strbuf_append(sb, ", ");
            if (fx_sym_exp(e, i) > 1) fx_strbuf_append(sb, "Pow(");
            srepr(sb, fx_sym_arg(e, i));
            if (fx_sym_exp(e, i) > 1)
                fx_strbuf_appendf(sb, ", Integer(%lld))", (long long)fx_sym_exp(e, i));
        }
        if (!one || n > 1) fx_strbuf_putc(sb, ')');
        return;
    }
    default: break;
    }
    static const char *const names[] = {[FX_SYM_FLOORDIV] = "FloorDiv",
                                        [FX_SYM_MOD] = "PythonMod",
                                        [FX_SYM_MAX] = "Max",
                                        [FX_SYM_MIN] = "Min",
                                        [FX_SYM_EQ] = "Eq",
                                        [FX_SYM_NE] = "Ne",
                                        [FX_SYM_LT] = "StrictLessThan",
                                        [FX_SYM_LE] = "LessThan",
                                        [FX_SYM_GT] = "StrictGreaterThan",
                                        [FX_SYM_GE] = "GreaterThan"};
    fx_sym_kind k = fx_sym_kind_of(e);
    fx_strbuf_appendf(sb, "%s(", k < sizeof names / sizeof names[0] && names[k] ? names[k] : "?");
    for (int i = 0; i < n; i++) {
        if (i) fx_strbuf_append(sb, ", ");
        srepr(sb, fx_sym_arg(e, i));
    }
    fx_strbuf_putc(sb, ')');
}

/* The SymExpr of e: {"expr_str": srepr, "hint": {"as_int": v}} (no hint when e involves an
 * unbacked symbol, as serialize_sym_int leaves it out when the hint is None). */
static cJSON *sym_expr(const fx_sym *e, int64_t hint) {
    fx_strbuf sb = FX_STRBUF_INIT;
    srepr(&sb, e);
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "expr_str", sb.oom ? "" : fx_strbuf_cstr(&sb));
    fx_strbuf_free(&sb);
    if (!fx_sym_has_unbacked(e)) cJSON_AddItemToObject(x, "hint", jobj1("as_int", jint(hint)));
    return x;
}

/* SymInt: {"as_int": n}, or {"as_expr": SymExpr} for a symbolic value. */
static cJSON *sym_int(int64_t v) { return jobj1("as_int", jint(v)); }
static cJSON *sym_value(fx_symint v) {
    return v.expr ? jobj1("as_expr", sym_expr(v.expr, v.hint)) : sym_int(v.hint);
}

static cJSON *tensor_meta(const fx_tensor *t) {
    cJSON *m = cJSON_CreateObject();
    int nd = fx_tensor_ndim(t);
    cJSON_AddItemToObject(m, "dtype", jint(pt2_scalar_type(fx_tensor_dtype(t))));
    cJSON *sizes = cJSON_AddArrayToObject(m, "sizes");
    for (int d = 0; d < nd; d++) cJSON_AddItemToArray(sizes, sym_value(fx_tensor_sym_size(t, d)));
    cJSON_AddBoolToObject(m, "requires_grad", fx_tensor_requires_grad(t));
    cJSON *dev = cJSON_AddObjectToObject(m, "device");
    cJSON_AddStringToObject(dev, "type", "cpu");
    cJSON_AddNullToObject(dev, "index");
    cJSON *strides = cJSON_AddArrayToObject(m, "strides");
    for (int d = 0; d < nd; d++)
        cJSON_AddItemToArray(strides, sym_value(fx_tensor_sym_stride(t, d)));
    cJSON_AddItemToObject(m, "storage_offset", sym_value(fx_tensor_sym_offset(t)));
    cJSON_AddItemToObject(m, "layout", jint(7)); /* Layout.Strided */
    return m;
}

/* ---- arguments ----------------------------------------------------------------------------------
 */

typedef struct gctx {
    wctx *w;
    cJSON *tensor_values, *sym_int_values, *sym_float_values, *sym_bool_values;
} gctx;

static cJSON *ser_graph(wctx *w, const fx_graph *g);

static int enum_of(const char *s, const char *const *names, int n) {
    if (!strncmp(s, "torch.", 6)) s += 6;
    for (int i = 0; i < n; i++)
        if (names[i] && !strcmp(s, names[i])) return i;
    return -1;
}
static const char *const LAYOUTS[] = {NULL,         "sparse_coo", "sparse_csr", "sparse_csc",
                                      "sparse_bsr", "sparse_bsc", "_mkldnn",    "strided"};
static const char *const MEMFORMATS[] = {NULL, "contiguous_format", "channels_last",
                                         "channels_last_3d", "preserve_format"};

static bool is_node_of(const fx_ivalue *v, fx_ivtag valtag) {
    return v->tag == FX_IV_NODE && (v->u.node->val.tag == valtag ||
                                    (valtag == FX_IV_INT && v->u.node->val.tag == FX_IV_SYMINT));
}

/* One argument value as an Argument union. `a` is its schema entry, or NULL (higher-order ops,
 * getitem, fxdb's own targets): then the kind follows the value, as serialize_input does. */
static cJSON *ser_arg(gctx *c, const fx_arg_schema *a, const fx_ivalue *v) {
    fx_argtype ty = a ? a->type : FX_TY_ANY;
    switch (v->tag) {
    case FX_IV_UNSET:
    case FX_IV_NONE: return jobj1("as_none", cJSON_CreateTrue());
    case FX_IV_NODE: {
        const fx_node *n = v->u.node;
        if (n->op == FX_NODE_GET_ATTR && n->subgraph) {
            cJSON *ga = cJSON_CreateObject();
            cJSON_AddStringToObject(ga, "name", n->target);
            cJSON_AddItemToObject(ga, "graph", ser_graph(c->w, n->subgraph));
            return jobj1("as_graph", ga);
        }
        if (n->val.tag == FX_IV_SYMINT && fx_sym_kind_of(n->val.u.si.expr) >= FX_SYM_EQ)
            return jobj1("as_sym_bool", jobj1("as_name", cJSON_CreateString(n->name)));
        if (n->val.tag == FX_IV_INT || n->val.tag == FX_IV_SYMINT || ty == FX_TY_INT)
            return jobj1("as_sym_int", jobj1("as_name", cJSON_CreateString(n->name)));
        if (n->val.tag == FX_IV_FLOAT)
            return jobj1("as_sym_float", jobj1("as_name", cJSON_CreateString(n->name)));
        if (n->val.tag == FX_IV_BOOL)
            return jobj1("as_sym_bool", jobj1("as_name", cJSON_CreateString(n->name)));
        return jname("as_tensor", n->name);
    }
    case FX_IV_INT: return jobj1("as_int", jint(v->u.i));
    case FX_IV_FLOAT: return jobj1("as_float", jfloat(v->u.f));
    case FX_IV_BOOL: return jobj1("as_bool", cJSON_CreateBool(v->u.b));
    case FX_IV_DTYPE: return jobj1("as_scalar_type", jint(pt2_scalar_type(v->u.dtype)));
    case FX_IV_DEVICE: {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "type", v->u.device == FX_DEVICE_META ? "meta" : "cpu");
        cJSON_AddNullToObject(d, "index");
        return jobj1("as_device", d);
    }
    case FX_IV_STR: {
        if (ty == FX_TY_LAYOUT || ty == FX_TY_MEMFORMAT) {
            bool lay = ty == FX_TY_LAYOUT;
            int e = lay ? enum_of(v->u.s, LAYOUTS, 8) : enum_of(v->u.s, MEMFORMATS, 5);
            if (e < 0) {
                fail(c->w, FX_ENOTIMPL, "%s '%s' has no value in the PT2 schema",
                     lay ? "layout" : "memory format", v->u.s);
                return NULL;
            }
            return jobj1(lay ? "as_layout" : "as_memory_format", jint(e));
        }
        return jobj1("as_string", cJSON_CreateString(v->u.s));
    }
    case FX_IV_TENSOR:
        fail(c->w, FX_ENOTIMPL, "a tensor value inside the graph cannot be serialized%s%s", "", "");
        return NULL;
    case FX_IV_SYMINT:
        fail(c->w, FX_ENOTIMPL, "a SymInt constant inside the graph cannot be serialized%s%s", "",
             "");
        return NULL;
    case FX_IV_LIST: break;
    }
    int n = v->u.list.n;
    const fx_ivalue *it = v->u.list.items;
    bool any_node = false, any_none = false, all_int = true, all_float = true, all_bool = true;
    bool all_str = true;
    for (int i = 0; i < n; i++) {
        any_node |= it[i].tag == FX_IV_NODE;
        any_none |= it[i].tag == FX_IV_NONE;
        all_int &= it[i].tag == FX_IV_INT || is_node_of(&it[i], FX_IV_INT);
        all_float &= it[i].tag == FX_IV_FLOAT;
        all_bool &= it[i].tag == FX_IV_BOOL;
        all_str &= it[i].tag == FX_IV_STR;
    }
    cJSON *arr = cJSON_CreateArray();
    const char *key;
    if (n == 0) {
        key = ty == FX_TY_INT_LIST     ? "as_ints"
              : ty == FX_TY_FLOAT_LIST ? "as_floats"
              : ty == FX_TY_BOOL_LIST  ? "as_bools"
                                       : "as_tensors";
        return jobj1(key, arr);
    }
    if (all_int && (ty == FX_TY_INT_LIST || ty == FX_TY_ANY || ty == FX_TY_INT)) {
        key = any_node ? "as_sym_ints" : "as_ints";
        for (int i = 0; i < n; i++)
            cJSON_AddItemToArray(arr, !any_node ? jint(it[i].u.i)
                                      : it[i].tag == FX_IV_NODE
                                          ? jobj1("as_name", cJSON_CreateString(it[i].u.node->name))
                                          : jobj1("as_int", jint(it[i].u.i)));
        return jobj1(key, arr);
    }
    if (all_float || all_bool || all_str) {
        for (int i = 0; i < n; i++)
            cJSON_AddItemToArray(arr, all_float  ? jfloat(it[i].u.f)
                                      : all_bool ? cJSON_CreateBool(it[i].u.b)
                                                 : cJSON_CreateString(it[i].u.s));
        return jobj1(all_float ? "as_floats" : all_bool ? "as_bools" : "as_strings", arr);
    }
    bool optional = (a && a->elem_optional) || any_none;
    for (int i = 0; i < n; i++) {
        if (it[i].tag == FX_IV_NODE) {
            cJSON *t = jobj1("name", cJSON_CreateString(it[i].u.node->name));
            cJSON_AddItemToArray(arr, optional ? jobj1("as_tensor", t) : t);
        } else if (it[i].tag == FX_IV_NONE && optional) {
            cJSON_AddItemToArray(arr, jobj1("as_none", cJSON_CreateTrue()));
        } else {
            cJSON_Delete(arr);
            fail(c->w, FX_ENOTIMPL,
                 "a list mixing tensors and other values cannot be serialized%s%s", "", "");
            return NULL;
        }
    }
    return jobj1(optional ? "as_optional_tensors" : "as_tensors", arr);
}

/* Schema arguments as NamedArguments: trailing positional defaults and keyword-only defaults
 * left out, as FX's normalized args / kwargs leave them out. */
static cJSON *ser_aten_inputs(gctx *c, const fx_node *n) {
    const fx_schema *s = &n->aten->schema;
    int nargs = n->nargs < s->nargs ? n->nargs : s->nargs;
    int pos_end = 0;
    for (int i = 0; i < nargs; i++) {
        const fx_arg_schema *a = &s->args[i];
        if (a->kwarg_only) break;
        bool dflt = a->has_default &&
                    (n->args[i].tag == FX_IV_UNSET || fx_ivalue_equal(&a->def, &n->args[i]));
        if (!dflt) pos_end = i + 1;
    }
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < nargs; i++) {
        const fx_arg_schema *a = &s->args[i];
        const fx_ivalue *v = &n->args[i];
        if (a->kwarg_only) {
            if (v->tag == FX_IV_UNSET || (a->has_default && fx_ivalue_equal(&a->def, v))) continue;
        } else if (i >= pos_end) {
            continue;
        }
        cJSON *na = cJSON_CreateObject();
        cJSON_AddStringToObject(na, "name", a->name);
        cJSON_AddItemToObject(na, "arg", ser_arg(c, a, v));
        cJSON_AddItemToObject(na, "kind", jint(a->kwarg_only ? 2 : 1));
        cJSON_AddItemToArray(arr, na);
    }
    return arr;
}

/* Whether n is SymInt arithmetic (operator.add, torch.sym_max ...): serialize_sym_op_inputs
 * names its arguments after the Python function's parameters, (a, b). */
static bool is_sym_op(const fx_node *n) {
    return !n->aten &&
           (!strncmp(n->target, "operator.", 9) || !strncmp(n->target, "torch.sym_", 10));
}

/* The index of the op argument of a higher-order op that wraps one (auto_functionalized(op,
 * ...): 0, with_effects(token, op, ...): 1), or -1. */
static int wrapped_op_slot(const fx_node *n) {
    if (n->aten || n->nargs < 1) return -1;
    int k = !strcmp(n->target, FX_HOP_AUTO_FUNCTIONALIZED) ? 0
            : !strcmp(n->target, FX_HOP_WITH_EFFECTS)      ? 1
                                                           : -1;
    return k >= 0 && k < n->nargs && n->args[k].tag == FX_IV_STR ? k : -1;
}

/* Arguments without a schema of their own, as serialize_hoo_inputs / serialize_sym_op_inputs
 * write them: positional with no name (SymInt operators name theirs a, b), a wrapped op as
 * as_operator; auto_functionalized(op, **kwargs) gives the op's arguments as keywords named by
 * its schema (kind 2), with_effects(token, op, *args) passes them positionally. */
static cJSON *ser_plain_inputs(gctx *c, const fx_node *n) {
    cJSON *arr = cJSON_CreateArray();
    int first = 0;
    const fx_opdef *w = fx_hop_wrapped_op(n, &first);
    int opslot = wrapped_op_slot(n);
    bool keywords = opslot == 0;
    for (int i = 0; i < n->nargs; i++) {
        cJSON *na = cJSON_CreateObject();
        const fx_arg_schema *a =
            w && i >= first && i - first < w->schema.nargs ? &w->schema.args[i - first] : NULL;
        cJSON_AddStringToObject(na, "name",
                                a && keywords           ? a->name
                                : is_sym_op(n) && i < 2 ? (i ? "b" : "a")
                                                        : "");
        if (i == opslot) {
            char op[256];
            snprintf(op, sizeof op, "torch.ops.%s", n->args[i].u.s);
            cJSON_AddItemToObject(na, "arg", jobj1("as_operator", cJSON_CreateString(op)));
        } else {
            cJSON_AddItemToObject(na, "arg", ser_arg(c, a, &n->args[i]));
        }
        cJSON_AddItemToObject(na, "kind", jint(a && keywords ? 2 : 1));
        cJSON_AddItemToArray(arr, na);
    }
    return arr;
}

/* The value named `name` with meta `val` as an output Argument, recording its meta. */
static cJSON *ser_output(gctx *c, const char *name, const fx_ivalue *val) {
    switch (val->tag) {
    case FX_IV_TENSOR:
        cJSON_DeleteItemFromObject(c->tensor_values, name);
        cJSON_AddItemToObject(c->tensor_values, name, tensor_meta(val->u.t));
        return jname("as_tensor", name);
    case FX_IV_SYMINT:
        if (fx_sym_kind_of(val->u.si.expr) >= FX_SYM_EQ) { /* a SymBool: u0 >= 0 */
            cJSON_AddItemToObject(c->sym_bool_values, name, sym_value(val->u.si));
            return jobj1("as_sym_bool", jobj1("as_name", cJSON_CreateString(name)));
        }
        /* fall through */
    case FX_IV_INT:
        cJSON_AddItemToObject(c->sym_int_values, name,
                              val->tag == FX_IV_INT ? sym_int(val->u.i) : sym_value(val->u.si));
        return jobj1("as_sym_int", jobj1("as_name", cJSON_CreateString(name)));
    case FX_IV_FLOAT:
        cJSON_AddItemToObject(c->sym_float_values, name, jobj1("as_float", jfloat(val->u.f)));
        return jobj1("as_sym_float", jobj1("as_name", cJSON_CreateString(name)));
    case FX_IV_BOOL:
        cJSON_AddItemToObject(c->sym_bool_values, name,
                              jobj1("as_bool", cJSON_CreateBool(val->u.b)));
        return jobj1("as_sym_bool", jobj1("as_name", cJSON_CreateString(name)));
    default: return jobj1("as_none", cJSON_CreateTrue());
    }
}

/* The getitem user of n taking index i, or NULL. */
static const fx_node *getitem_user(const fx_node *n, int i) {
    for (int u = 0; u < n->nusers; u++) {
        const fx_node *g = n->users[u];
        if (!g->aten && !strcmp(g->target, "getitem") && g->nargs == 2 &&
            g->args[0].tag == FX_IV_NODE && g->args[0].u.node == n && g->args[1].tag == FX_IV_INT &&
            g->args[1].u.i == i)
            return g;
    }
    return NULL;
}

static cJSON *ser_outputs(gctx *c, const fx_node *n) {
    cJSON *arr = cJSON_CreateArray();
    bool list_ret =
        n->aten && n->aten->schema.nrets == 1 && n->aten->schema.rets[0].type == FX_TY_TENSOR_LIST;
    if (n->aten && n->aten->schema.nrets == 0) return arr;
    if (n->val.tag != FX_IV_LIST) {
        cJSON_AddItemToArray(arr, ser_output(c, n->name, &n->val));
        return arr;
    }
    cJSON *dst = arr;
    if (list_ret) dst = cJSON_CreateArray();
    for (int i = 0; i < n->val.u.list.n; i++) {
        const fx_ivalue *iv = &n->val.u.list.items[i];
        const fx_node *g = getitem_user(n, i);
        char unused[160];
        snprintf(unused, sizeof unused, "%s_unused_%d", n->name, i);
        const char *name = g ? g->name : unused;
        if (list_ret) {
            cJSON *o = ser_output(c, name, iv);
            cJSON *inner = cJSON_DetachItemFromObject(o, "as_tensor");
            cJSON_Delete(o);
            if (inner) cJSON_AddItemToArray(dst, inner);
        } else {
            cJSON_AddItemToArray(dst, ser_output(c, name, iv));
        }
    }
    if (list_ret) cJSON_AddItemToArray(arr, jobj1("as_tensors", dst));
    return arr;
}

/* ---- node metadata ------------------------------------------------------------------------------
 */

/* {"mutation": {...}, "no_grad": true} of node n, or NULL when it has neither. */
static cJSON *fxdb_facts(const fx_node *n) {
    if (!n->mutation && !(n->flags & FX_NODEF_NO_GRAD)) return NULL;
    cJSON *fx = cJSON_CreateObject();
    if (n->mutation) {
        const fx_mutation *mu = n->mutation;
        cJSON *o = cJSON_AddObjectToObject(fx, "mutation");
        cJSON_AddStringToObject(o, "state", mu->state);
        cJSON_AddItemToObject(o, "version", jint(mu->version));
        cJSON_AddStringToObject(o, "from_op", mu->from_op ? mu->from_op : "");
        if (mu->view_path) cJSON_AddStringToObject(o, "view_path", mu->view_path);
        if (mu->raw_node) cJSON_AddStringToObject(o, "raw_node", mu->raw_node);
    }
    if (n->flags & FX_NODEF_NO_GRAD) cJSON_AddTrueToObject(fx, "no_grad");
    return fx;
}

static cJSON *ser_metadata(const fx_node *n) {
    cJSON *m = cJSON_CreateObject();
    if (n->nstack > 0) {
        fx_strbuf sb = FX_STRBUF_INIT; /* Python's traceback: outermost frame first */
        for (int i = n->nstack - 1; i >= 0; i--) {
            const fx_frame *f = &n->stack[i];
            fx_strbuf_appendf(&sb, "  File \"%s\", line %d, in %s\n", f->file, f->line, f->func);
            if (f->code && *f->code) fx_strbuf_appendf(&sb, "    %s\n", f->code);
        }
        cJSON_AddStringToObject(m, "stack_trace", fx_strbuf_cstr(&sb));
        fx_strbuf_free(&sb);
    }
    if (n->nmodules > 0) {
        fx_strbuf sb = FX_STRBUF_INIT;
        for (int i = 0; i < n->nmodules; i++) {
            const fx_module_entry *e = &n->modules[i];
            if (i) fx_strbuf_putc(&sb, ';');
            fx_strbuf_append(&sb, "L__self__");
            if (*e->path) fx_strbuf_putc(&sb, '_');
            for (const char *p = e->path; *p; p++) fx_strbuf_putc(&sb, *p == '.' ? '_' : *p);
            fx_strbuf_appendf(&sb, ",%s,%s", e->path, e->cls);
        }
        cJSON_AddStringToObject(m, "nn_module_stack", fx_strbuf_cstr(&sb));
        fx_strbuf_free(&sb);
    }
    if (n->nfrom > 0) { /* torch.fx.traceback.NodeSource._to_dict entries */
        cJSON *arr = cJSON_CreateArray();
        for (int i = 0; i < n->nfrom; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", n->from_node[i]);
            cJSON_AddStringToObject(o, "target", "");
            cJSON_AddItemToObject(o, "graph_id", jint(0));
            cJSON_AddStringToObject(o, "pass_name", "fxdb.functionalize");
            cJSON_AddItemToObject(o, "action", cJSON_CreateArray());
            cJSON_AddItemToObject(o, "from_node", cJSON_CreateArray());
            cJSON_AddItemToArray(arr, o);
        }
        char *s = cJSON_PrintUnformatted(arr);
        cJSON_Delete(arr);
        if (s) cJSON_AddStringToObject(m, "from_node", s);
        free(s);
    }
    /* fxdb's own facts (meta["custom"]): the node's mutation record and no_grad mark, and those
     * of its getitem users, which the file does not hold as nodes */
    cJSON *fx = fxdb_facts(n);
    cJSON *outs = NULL;
    for (int u = 0; u < n->nusers; u++) {
        const fx_node *g = n->users[u];
        if (g->aten || strcmp(g->target, "getitem") || g->nargs != 2 ||
            g->args[0].tag != FX_IV_NODE || g->args[0].u.node != n || n->val.tag != FX_IV_LIST)
            continue;
        cJSON *gf = fxdb_facts(g);
        if (!gf) continue;
        if (!outs) outs = cJSON_CreateObject();
        cJSON_AddItemToObject(outs, g->name, gf);
    }
    if (outs) {
        if (!fx) fx = cJSON_CreateObject();
        cJSON_AddItemToObject(fx, "outputs", outs);
    }
    if (fx) {
        cJSON *custom = jobj1("fxdb", fx);
        char *s = cJSON_PrintUnformatted(custom);
        cJSON_Delete(custom);
        if (s) cJSON_AddStringToObject(m, "custom", s);
        free(s);
    }
    return m;
}

/* ---- graphs
 * --------------------------------------------------------------------------------------- */

static cJSON *ser_graph(wctx *w, const fx_graph *g) {
    cJSON *gj = cJSON_CreateObject();
    gctx c = {w, NULL, NULL, NULL, NULL};
    cJSON *inputs = cJSON_AddArrayToObject(gj, "inputs");
    cJSON *outputs = cJSON_AddArrayToObject(gj, "outputs");
    cJSON *nodes = cJSON_AddArrayToObject(gj, "nodes");
    c.tensor_values = cJSON_AddObjectToObject(gj, "tensor_values");
    c.sym_int_values = cJSON_AddObjectToObject(gj, "sym_int_values");
    c.sym_bool_values = cJSON_AddObjectToObject(gj, "sym_bool_values");
    cJSON_AddFalseToObject(gj, "is_single_tensor_return");
    cJSON_AddObjectToObject(gj, "custom_obj_values");
    c.sym_float_values = cJSON_AddObjectToObject(gj, "sym_float_values");
    for (const fx_node *n = fx_graph_first(g); n && !w->rc; n = n->next) {
        switch (n->op) {
        case FX_NODE_PLACEHOLDER: {
            cJSON *a = ser_output(&c, n->name, &n->val);
            cJSON_AddItemToArray(inputs, a);
            /* the placeholder's own metadata (stack / modules are rare; mutation never) rides
             * in the graph's node-free form: nothing to write */
            break;
        }
        case FX_NODE_GET_ATTR: break; /* bodies travel inline as as_graph arguments */
        case FX_NODE_OUTPUT:
            if (n->nargs > 0 && n->args[0].tag == FX_IV_LIST) {
                for (int i = 0; i < n->args[0].u.list.n; i++)
                    cJSON_AddItemToArray(outputs, ser_arg(&c, NULL, &n->args[0].u.list.items[i]));
            } else if (n->nargs > 0) {
                cJSON_AddItemToArray(outputs, ser_arg(&c, NULL, &n->args[0]));
            }
            break;
        case FX_NODE_CALL_FUNCTION: {
            if (!n->aten && !strcmp(n->target, "getitem") && n->nargs == 2 &&
                n->args[0].tag == FX_IV_NODE && n->args[0].u.node->op == FX_NODE_CALL_FUNCTION &&
                n->args[0].u.node->val.tag == FX_IV_LIST)
                break; /* named by its producer's outputs */
            cJSON *nj = cJSON_CreateObject();
            char target[200];
            if (n->aten)
                snprintf(target, sizeof target, "torch.ops.%s", n->aten->target);
            else if (!strncmp(n->target, "aten.", 5) || !strncmp(n->target, "higher_order.", 13))
                snprintf(target, sizeof target, "torch.ops.%s", n->target);
            else if (!strcmp(n->target, "getitem"))
                snprintf(target, sizeof target, "_operator.getitem");
            else if (!strncmp(n->target, "operator.", 9)) /* operator.add.__module__ is _operator */
                snprintf(target, sizeof target, "_%s", n->target);
            else
                snprintf(target, sizeof target, "%s", n->target);
            cJSON_AddStringToObject(nj, "target", target);
            cJSON_AddItemToObject(nj, "inputs",
                                  n->aten ? ser_aten_inputs(&c, n) : ser_plain_inputs(&c, n));
            cJSON_AddItemToObject(nj, "outputs", ser_outputs(&c, n));
            cJSON_AddItemToObject(nj, "metadata", ser_metadata(n));
            if (!strncmp(n->target, "higher_order.", 13))
                cJSON_AddBoolToObject(nj, "is_hop_single_tensor_return",
                                      n->val.tag == FX_IV_TENSOR);
            cJSON_AddStringToObject(nj, "name", n->name);
            cJSON_AddItemToArray(nodes, nj);
            break;
        }
        }
    }
    return gj;
}

/* ---- signature ----------------------------------------------------------------------------------
 */

static cJSON *ser_signature(const fx_program *p) {
    cJSON *sig = cJSON_CreateObject();
    cJSON *ins = cJSON_AddArrayToObject(sig, "input_specs");
    for (int i = 0; i < p->sig.ninputs; i++) {
        const fx_input_spec *s = &p->sig.inputs[i];
        cJSON *o = cJSON_CreateObject();
        switch (s->kind) {
        case FX_INPUT_PARAMETER:
            cJSON_AddItemToObject(o, "arg", jobj1("name", cJSON_CreateString(s->arg)));
            cJSON_AddStringToObject(o, "parameter_name", s->target);
            cJSON_AddItemToArray(ins, jobj1("parameter", o));
            break;
        case FX_INPUT_BUFFER:
            cJSON_AddItemToObject(o, "arg", jobj1("name", cJSON_CreateString(s->arg)));
            cJSON_AddStringToObject(o, "buffer_name", s->target);
            cJSON_AddBoolToObject(o, "persistent", s->persistent);
            cJSON_AddItemToArray(ins, jobj1("buffer", o));
            break;
        case FX_INPUT_CONSTANT_TENSOR:
            cJSON_AddItemToObject(o, "arg", jobj1("name", cJSON_CreateString(s->arg)));
            cJSON_AddStringToObject(o, "tensor_constant_name", s->target);
            cJSON_AddItemToArray(ins, jobj1("tensor_constant", o));
            break;
        case FX_INPUT_TOKEN:
            cJSON_AddItemToObject(o, "arg", jobj1("name", cJSON_CreateString(s->arg)));
            cJSON_AddItemToArray(ins, jobj1("token", o));
            break;
        default:
            cJSON_AddItemToObject(o, "arg", jname("as_tensor", s->arg));
            cJSON_AddItemToArray(ins, jobj1("user_input", o));
            break;
        }
    }
    cJSON *outs = cJSON_AddArrayToObject(sig, "output_specs");
    for (int i = 0; i < p->sig.noutputs; i++) {
        const fx_output_spec *s = &p->sig.outputs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON *arg = jobj1("name", cJSON_CreateString(s->arg));
        switch (s->kind) {
        case FX_OUTPUT_BUFFER_MUTATION:
            cJSON_AddItemToObject(o, "arg", arg);
            cJSON_AddStringToObject(o, "buffer_name", s->target);
            cJSON_AddItemToArray(outs, jobj1("buffer_mutation", o));
            break;
        case FX_OUTPUT_PARAMETER_MUTATION:
            cJSON_AddItemToObject(o, "arg", arg);
            cJSON_AddStringToObject(o, "parameter_name", s->target);
            cJSON_AddItemToArray(outs, jobj1("parameter_mutation", o));
            break;
        case FX_OUTPUT_USER_INPUT_MUTATION:
            cJSON_AddItemToObject(o, "arg", arg);
            cJSON_AddStringToObject(o, "user_input_name", s->target);
            cJSON_AddItemToArray(outs, jobj1("user_input_mutation", o));
            break;
        case FX_OUTPUT_TOKEN:
            cJSON_AddItemToObject(o, "arg", arg);
            cJSON_AddItemToArray(outs, jobj1("token", o));
            break;
        default: {
            cJSON_Delete(arg);
            /* a user output that is not a node (a number) travels as its constant */
            const fx_node *on = fx_graph_output_node(p->graph);
            cJSON *a = NULL;
            if (on && on->nargs && on->args[0].tag == FX_IV_LIST && i < on->args[0].u.list.n &&
                on->args[0].u.list.items[i].tag != FX_IV_NODE) {
                const fx_ivalue *v = &on->args[0].u.list.items[i];
                a = v->tag == FX_IV_INT     ? jobj1("as_int", jint(v->u.i))
                    : v->tag == FX_IV_FLOAT ? jobj1("as_float", jfloat(v->u.f))
                    : v->tag == FX_IV_BOOL  ? jobj1("as_bool", cJSON_CreateBool(v->u.b))
                                            : jobj1("as_none", cJSON_CreateTrue());
            } else {
                a = jname("as_tensor", s->arg);
            }
            cJSON_AddItemToObject(o, "arg", a);
            cJSON_AddItemToArray(outs, jobj1("user_output", o));
            break;
        }
        }
    }
    return sig;
}

/* A module call graph entry for the root, with the flat inputs and outputs and the treespecs of
 * PyTorch's pytree (treespec_dumps, version 1) of (args, kwargs) and of the output tuple. */
static cJSON *ser_module_call_graph(const fx_program *p) {
    cJSON *arr = cJSON_CreateArray();
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "fqn", "");
    cJSON *sig = cJSON_AddObjectToObject(e, "signature");
    cJSON *ins = cJSON_AddArrayToObject(sig, "inputs");
    cJSON *outs = cJSON_AddArrayToObject(sig, "outputs");
    int nin = 0, nout = 0;
    for (int i = 0; i < p->sig.ninputs; i++)
        if (p->sig.inputs[i].kind == FX_INPUT_USER_INPUT) {
            cJSON_AddItemToArray(ins, jname("as_tensor", p->sig.inputs[i].arg));
            nin++;
        }
    for (int i = 0; i < p->sig.noutputs; i++)
        if (p->sig.outputs[i].kind == FX_OUTPUT_USER_OUTPUT) {
            cJSON_AddItemToArray(outs, jname("as_tensor", p->sig.outputs[i].arg));
            nout++;
        }
    fx_strbuf sb = FX_STRBUF_INIT;
    const char *leaf = "{\"type\": null, \"context\": null, \"children_spec\": []}";
    fx_strbuf_appendf(
        &sb, "[1, {\"type\": \"builtins.tuple\", \"context\": \"null\", \"children_spec\": "
             "[{\"type\": \"builtins.tuple\", \"context\": \"null\", \"children_spec\": [");
    for (int i = 0; i < nin; i++) fx_strbuf_appendf(&sb, "%s%s", i ? ", " : "", leaf);
    fx_strbuf_append(
        &sb, "]}, {\"type\": \"builtins.dict\", \"context\": \"[]\", \"children_spec\": []}]}]");
    cJSON_AddStringToObject(sig, "in_spec", fx_strbuf_cstr(&sb));
    fx_strbuf_free(&sb);
    fx_strbuf_appendf(
        &sb, "[1, {\"type\": \"builtins.tuple\", \"context\": \"null\", \"children_spec\": [");
    for (int i = 0; i < nout; i++) fx_strbuf_appendf(&sb, "%s%s", i ? ", " : "", leaf);
    fx_strbuf_append(&sb, "]}]");
    cJSON_AddStringToObject(sig, "out_spec", fx_strbuf_cstr(&sb));
    fx_strbuf_free(&sb);
    cJSON *names = cJSON_AddArrayToObject(sig, "forward_arg_names");
    for (int i = 0; i < p->sig.ninputs; i++)
        if (p->sig.inputs[i].kind == FX_INPUT_USER_INPUT)
            cJSON_AddItemToArray(names, cJSON_CreateString(p->sig.inputs[i].arg));
    cJSON_AddItemToArray(arr, e);
    return arr;
}

/* A range bound as RangeConstraint holds it: an int, or null for -int_oo / int_oo (what
 * serialize_range_constraints writes for them). */
static cJSON *bound_json(int64_t v) {
    return v >= FX_INT_OO || v <= -FX_INT_OO ? cJSON_CreateNull() : jint(v);
}
static cJSON *vr_json(fx_vr r) {
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, bound_json(r.lo));
    cJSON_AddItemToArray(a, bound_json(r.hi));
    return a;
}

/* ExportedProgram.range_constraints: {"s0": {"min_val": 2, "max_val": 64}} for the symbols the
 * program prints in its range constraints (fx_program_range_symbols). */
static cJSON *ser_range_constraints(const fx_program *p) {
    cJSON *rc = cJSON_CreateObject();
    const fx_symbol_info *syms[256];
    int n = fx_program_range_symbols(p, syms, 256);
    for (int i = 0; i < n; i++) {
        char name[32];
        fx_vr r = fx_symbol_constraint_range(syms[i]);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "min_val", bound_json(r.lo));
        cJSON_AddItemToObject(o, "max_val", bound_json(r.hi));
        cJSON_AddItemToObject(rc, fx_sym_str(syms[i]->sym, name, sizeof name), o);
    }
    return rc;
}

static cJSON *sym_text(const fx_sym *e) {
    fx_strbuf sb = FX_STRBUF_INIT;
    srepr(&sb, e);
    cJSON *s = cJSON_CreateString(sb.oom ? "" : fx_strbuf_cstr(&sb));
    fx_strbuf_free(&sb);
    return s;
}

/* fxdb's shape environment, for :why / :guards on the loaded program: every symbol in creation
 * order (name, hint, range, declared range, size_like, source, loc, replacement as srepr), the
 * guards and the runtime asserts (expr, loc, line, op), and what each taught (refinements:
 * symbol, guard or assert number, range before and after, replacement). */
static cJSON *ser_shape_env(fx_shape_env *env) {
    cJSON *o = cJSON_CreateObject();
    cJSON *syms = cJSON_AddArrayToObject(o, "symbols");
    int n;
    const fx_symbol_info *si = fx_shape_env_symbols(env, &n);
    for (int i = 0; i < n; i++) {
        char name[32];
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "name", fx_sym_str(si[i].sym, name, sizeof name));
        cJSON_AddItemToObject(s, "hint", jint(si[i].hint));
        cJSON_AddItemToObject(s, "range", vr_json(si[i].vr));
        cJSON_AddItemToObject(s, "declared", vr_json(si[i].declared));
        cJSON_AddBoolToObject(s, "size_like", fx_shape_env_is_size_like(env, si[i].sym));
        cJSON_AddStringToObject(s, "source", si[i].source ? si[i].source : "");
        cJSON_AddStringToObject(s, "loc", si[i].loc ? si[i].loc : "");
        if (si[i].replacement) cJSON_AddItemToObject(s, "replacement", sym_text(si[i].replacement));
        cJSON_AddItemToArray(syms, s);
    }
    for (int which = 0; which < 2; which++) {
        const fx_guard *g =
            which ? fx_shape_env_runtime_asserts(env, &n) : fx_shape_env_guards(env, &n);
        cJSON *arr = cJSON_AddArrayToObject(o, which ? "asserts" : "guards");
        for (int i = 0; i < n; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddItemToObject(e, "expr", sym_text(g[i].expr));
            cJSON_AddStringToObject(e, "loc", g[i].loc ? g[i].loc : "");
            cJSON_AddStringToObject(e, "line", g[i].line ? g[i].line : "");
            cJSON_AddStringToObject(e, "op", g[i].op ? g[i].op : "");
            cJSON_AddItemToArray(arr, e);
        }
    }
    const fx_sym_refinement *rf = fx_shape_env_refinements(env, &n);
    cJSON *refs = cJSON_AddArrayToObject(o, "refinements");
    for (int i = 0; i < n; i++) {
        char name[32];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "symbol", fx_sym_str(rf[i].sym, name, sizeof name));
        cJSON_AddItemToObject(e, rf[i].is_assert ? "assert" : "guard", jint(rf[i].index));
        cJSON_AddItemToObject(e, "before", vr_json(rf[i].before));
        cJSON_AddItemToObject(e, "after", vr_json(rf[i].after));
        if (rf[i].replacement) cJSON_AddItemToObject(e, "replacement", sym_text(rf[i].replacement));
        cJSON_AddItemToArray(refs, e);
    }
    return o;
}

/* The serialized ExportedProgram (schema.py ExportedProgram). */
static cJSON *ser_program(wctx *w, const fx_program *p) {
    cJSON *ep = cJSON_CreateObject();
    cJSON *gm = cJSON_AddObjectToObject(ep, "graph_module");
    cJSON_AddItemToObject(gm, "graph", ser_graph(w, p->graph));
    cJSON_AddItemToObject(gm, "signature", ser_signature(p));
    cJSON_AddItemToObject(gm, "module_call_graph", ser_module_call_graph(p));
    cJSON *meta = cJSON_AddObjectToObject(gm, "metadata");
    if (p->raw || p->shape_env) { /* fxdb's raw graph (for :graph raw and provenance) and
                                     shape environment, in the custom metadata */
        cJSON *fx = cJSON_CreateObject();
        cJSON_AddItemToObject(fx, "format", jint(1));
        if (p->shape_env) cJSON_AddItemToObject(fx, "shape_env", ser_shape_env(p->shape_env));
        if (p->raw) cJSON_AddItemToObject(fx, "raw_graph", ser_graph(w, p->raw));
        cJSON *custom = jobj1("fxdb", fx);
        char *s = cJSON_PrintUnformatted(custom);
        cJSON_Delete(custom);
        if (s)
            cJSON_AddStringToObject(meta, "custom", s);
        else
            fail(w, FX_ENOMEM, "out of memory%s%s", "", "");
        free(s);
    }
    cJSON_AddObjectToObject(gm, "treespec_namedtuple_fields");
    cJSON *ops = cJSON_AddObjectToObject(ep, "opset_version");
    cJSON_AddItemToObject(ops, "aten", jint(10));
    cJSON_AddItemToObject(ep, "range_constraints", ser_range_constraints(p));
    cJSON *sv = cJSON_AddObjectToObject(ep, "schema_version");
    cJSON_AddItemToObject(sv, "major", jint(FX_PT2_SCHEMA_MAJOR));
    cJSON_AddItemToObject(sv, "minor", jint(FX_PT2_SCHEMA_MINOR));
    cJSON *ver = cJSON_AddArrayToObject(ep, "verifiers");
    cJSON_AddItemToArray(ver, cJSON_CreateString(p->training_ir ? "TRAINING" : "ATEN"));
    cJSON_AddStringToObject(ep, "torch_version", "fxdb " FX_VERSION);
    cJSON_AddArrayToObject(ep, "guards_code");
    return ep;
}

/* ---- the archive
 * ---------------------------------------------------------------------------------- */

typedef struct zbuf {
    char *name;
    void *data;
    size_t len;
} zbuf;

typedef struct zlist {
    zbuf *v;
    int n, cap;
} zlist;

static int zadd(zlist *z, const char *root, const char *name, void *data, size_t len, fx_err *err) {
    if (z->n == z->cap) {
        int cap = z->cap ? z->cap * 2 : 16;
        zbuf *nv = fx_realloc(z->v, sizeof *nv * (size_t)cap);
        if (!nv) {
            fx_free(data);
            return fx_err_setf(err, FX_ENOMEM, "out of memory");
        }
        z->v = nv;
        z->cap = cap;
    }
    size_t nl = strlen(root) + strlen(name) + 2;
    char *full = fx_malloc(nl);
    if (!full) {
        fx_free(data);
        return fx_err_setf(err, FX_ENOMEM, "out of memory");
    }
    snprintf(full, nl, "%s%s%s", root, *root ? "/" : "", name);
    z->v[z->n++] = (zbuf){full, data, len};
    return FX_OK;
}

static int zadd_str(zlist *z, const char *root, const char *name, const char *s, fx_err *err) {
    size_t n = strlen(s);
    char *d = fx_malloc(n + 1);
    if (!d) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    memcpy(d, s, n + 1);
    return zadd(z, root, name, d, n, err);
}

static void zfree(zlist *z) {
    for (int i = 0; i < z->n; i++) {
        fx_free(z->v[i].name);
        fx_free(z->v[i].data);
    }
    fx_free(z->v);
}

/* PyTorchFileWriter (caffe2/serialize/inline_container.cc) starts every record's bytes at a
 * multiple of 64 in the file, so that a reader can map weights in place: the local header gets an
 * extra field "FB" whose payload ('Z' bytes) pads the header to the boundary. Entries here are
 * stored in order with no other extra field, so each one's offset is known beforehand. */
#define PT2_ALIGN 64
#define ZIP_LOCAL_HEADER 30

static int zip_write_all(const char *path, const char *const *names, const void *const *data,
                         const size_t *lens, int n, fx_err *err) {
    static const char pad[PT2_ALIGN] =
        "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ";
    uint64_t at = 0; /* where the next local header starts */
    int zerr = 0;
    zip_t *za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
    if (!za) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        int rc = fx_err_setf(err, FX_EIO, "cannot write '%s': %s", path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        zip_source_t *src = zip_source_buffer(za, data[i], lens[i], 0);
        zip_int64_t idx =
            src ? zip_file_add(za, names[i], src, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE) : -1;
        if (idx < 0) {
            if (src) zip_source_free(src);
            int rc = fx_err_setf(err, FX_EIO, "cannot write '%s' (entry %s): %s", path, names[i],
                                 zip_strerror(za));
            zip_discard(za);
            return rc;
        }
        zip_set_file_compression(za, (zip_uint64_t)idx, ZIP_CM_STORE, 0);
        uint64_t start = at + ZIP_LOCAL_HEADER + strlen(names[i]) + 4;
        zip_uint16_t npad = (zip_uint16_t)((PT2_ALIGN - start % PT2_ALIGN) % PT2_ALIGN);
        if (zip_file_extra_field_set(za, (zip_uint64_t)idx, 0x4246 /* "FB" */, ZIP_EXTRA_FIELD_NEW,
                                     (const zip_uint8_t *)pad, npad, ZIP_FL_LOCAL) < 0) {
            int rc = fx_err_setf(err, FX_EIO, "cannot write '%s' (entry %s): %s", path, names[i],
                                 zip_strerror(za));
            zip_discard(za);
            return rc;
        }
        at = start + npad + lens[i];
    }
    if (zip_close(za) != 0) {
        int rc = fx_err_setf(err, FX_EIO, "cannot write '%s': %s", path, zip_strerror(za));
        zip_discard(za);
        return rc;
    }
    return FX_OK;
}

int fx_pt2_write_zip(const char *path, const char *const *names, const void *const *data,
                     const size_t *lens, int n, fx_err *err) {
    return zip_write_all(path, names, data, lens, n, err);
}

/* CRC-32 (ISO 3309, the zip checksum) of n bytes, continuing from crc. */
static uint32_t crc32_of(uint32_t crc, const unsigned char *p, size_t n) {
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

/* c10::hash_combine: seed ^ (v + 0x9e3779b9 + (seed << 6) + (seed >> 2)). */
static uint64_t hash_combine(uint64_t seed, uint64_t v) {
    return seed ^ (v + 0x9e3779b9u + (seed << 6) + (seed >> 2));
}

static int cmp_zbuf(const void *a, const void *b) {
    return strcmp(((const zbuf *)a)->name, ((const zbuf *)b)->name);
}

/* The .data/serialization_id record PyTorchFileWriter ends an archive with: 20 digits of a
 * combined hash of the record names, then 20 of the combined CRC-32s of their bytes — a
 * deterministic id of the contents (torch hashes names with std::hash; fxdb with FNV-1a, so the
 * digits differ from torch's for the same records, but the form and the determinism hold). */
static int add_serialization_id(zlist *z, const char *root, fx_err *err) {
    zbuf *sorted = fx_malloc(sizeof *sorted * (size_t)(z->n ? z->n : 1));
    if (!sorted) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    memcpy(sorted, z->v, sizeof *sorted * (size_t)z->n);
    qsort(sorted, (size_t)z->n, sizeof *sorted, cmp_zbuf);
    uint64_t names = 0, crcs = 0;
    for (int i = 0; i < z->n; i++) {
        uint64_t h = 1469598103934665603ull;
        for (const char *c = sorted[i].name; *c; c++)
            h = (h ^ (unsigned char)*c) * 1099511628211ull;
        names = hash_combine(names, h);
        crcs = hash_combine(crcs, crc32_of(0, sorted[i].data, sorted[i].len));
    }
    fx_free(sorted);
    char id[48];
    snprintf(id, sizeof id, "%020llu%020llu", (unsigned long long)names, (unsigned long long)crcs);
    return zadd_str(z, root, ".data/serialization_id", id, err);
}

/* The payload config of a set of named tensors: one raw file per tensor (prefix_<i>). */
static int add_payloads(zlist *z, const char *root, const char *dir, const char *prefix,
                        const fx_named_tensor *ts, int n, const fx_program *p, bool weights,
                        cJSON *config, fx_err *err) {
    for (int i = 0; i < n; i++) {
        const fx_tensor *t = ts[i].t;
        if (fx_tensor_is_meta(t))
            return fx_err_setf(err, FX_EARG, "'%s' is a meta tensor: there are no values to save",
                               ts[i].name);
        void *bytes;
        size_t len;
        int rc = pt2_tensor_bytes(t, &bytes, &len, err);
        if (rc) return rc;
        char file[64], rel[128];
        snprintf(file, sizeof file, "%s%d", prefix, i);
        snprintf(rel, sizeof rel, "%s%s", dir, file);
        if ((rc = zadd(z, root, rel, bytes, len, err))) return rc;
        bool is_param = false;
        if (weights)
            for (int k = 0; k < p->sig.ninputs; k++)
                if (p->sig.inputs[k].kind == FX_INPUT_PARAMETER && p->sig.inputs[k].target &&
                    !strcmp(p->sig.inputs[k].target, ts[i].name))
                    is_param = true;
        cJSON *meta = cJSON_CreateObject();
        cJSON_AddStringToObject(meta, "path_name", file);
        cJSON_AddBoolToObject(meta, "is_param", is_param);
        cJSON_AddFalseToObject(meta, "use_pickle");
        /* the bytes are written contiguous, whatever the tensor's strides */
        cJSON *tm = tensor_meta(t);
        cJSON *strides = cJSON_CreateArray();
        int nd = fx_tensor_ndim(t);
        int64_t st[FX_MAX_DIMS];
        fx_contiguous_strides(nd, fx_tensor_sizes(t), st);
        for (int d = 0; d < nd; d++) cJSON_AddItemToArray(strides, sym_int(st[d]));
        cJSON_ReplaceItemInObject(tm, "strides", strides);
        cJSON_AddItemToObject(meta, "tensor_meta", tm);
        cJSON_AddItemToObject(config, ts[i].name, meta);
    }
    return FX_OK;
}

static int add_json(zlist *z, const char *root, const char *name, cJSON *j, fx_err *err) {
    char *s = cJSON_PrintUnformatted(j);
    if (!s) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    int rc = zadd_str(z, root, name, s, err);
    free(s);
    return rc;
}

int fx_pt2_save(const fx_program *p, const char *path, fx_err *err) {
    /* PyTorchFileWriter's root folder: the file's base name without its extension */
    char root[128];
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(root, sizeof root, "%s", base);
    char *dot = strrchr(root, '.');
    if (dot) *dot = 0;
    for (char *c = root; *c; c++)
        if (*c == '\\' || *c == ':') *c = '_';
    if (!*root) snprintf(root, sizeof root, "archive");

    wctx w = {err, FX_OK};
    zlist z = {0};
    int rc = FX_OK;
    cJSON *ep = ser_program(&w, p);
    cJSON *wc = cJSON_CreateObject(), *cc = cJSON_CreateObject();
    cJSON *wcfg = cJSON_AddObjectToObject(wc, "config"),
          *ccfg = cJSON_AddObjectToObject(cc, "config");
    if (w.rc)
        rc = w.rc;
    else if (!ep || !wcfg || !ccfg)
        rc = fx_err_setf(err, FX_ENOMEM, "out of memory");
    if (!rc) rc = zadd_str(&z, root, PT2_ARCHIVE_FORMAT, "pt2", err);
    if (!rc) rc = zadd_str(&z, root, PT2_ARCHIVE_VERSION, "0", err);
    if (!rc) rc = zadd_str(&z, root, "byteorder", "little", err);
    if (!rc)
        rc = zadd_str(&z, root, ".data/version", "6\n", err); /* as setMinVersion(6) writes it */
    if (!rc) rc = add_json(&z, root, PT2_MODELS_DIR "model.json", ep, err);
    if (!rc)
        rc = add_payloads(&z, root, PT2_WEIGHTS_DIR, "weight_", p->state, p->nstate, p, true, wcfg,
                          err);
    if (!rc)
        rc = add_payloads(&z, root, PT2_CONSTANTS_DIR, "tensor_", p->constants, p->nconstants, p,
                          false, ccfg, err);
    if (!rc) rc = add_json(&z, root, PT2_WEIGHTS_DIR "model_weights_config.json", wc, err);
    if (!rc) rc = add_json(&z, root, PT2_CONSTANTS_DIR "model_constants_config.json", cc, err);
    if (!rc) rc = zadd(&z, root, PT2_SAMPLE_INPUTS_DIR "model.pt", NULL, 0, err);
    if (!rc) rc = add_serialization_id(&z, root, err);
    cJSON_Delete(ep);
    cJSON_Delete(wc);
    cJSON_Delete(cc);
    if (!rc) {
        const char **names = fx_calloc((size_t)z.n + 1, sizeof *names);
        const void **data = fx_calloc((size_t)z.n + 1, sizeof *data);
        size_t *lens = fx_calloc((size_t)z.n + 1, sizeof *lens);
        static const char empty[1] = {0};
        if (!names || !data || !lens) {
            rc = fx_err_setf(err, FX_ENOMEM, "out of memory");
        } else {
            for (int i = 0; i < z.n; i++) {
                names[i] = z.v[i].name;
                data[i] = z.v[i].data ? z.v[i].data : empty;
                lens[i] = z.v[i].len;
            }
            rc = zip_write_all(path, names, data, lens, z.n, err);
        }
        fx_free(names);
        fx_free(data);
        fx_free(lens);
    }
    zfree(&z);
    return rc;
}
