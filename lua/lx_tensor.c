/* lua/lx_tensor.c — the Tensor userdata: fields, methods, operators, printing, lifetime.
 * Layer: lua. A Tensor userdata is one pointer plus one reference to an fx_tensor
 * (docs/CONTRIBUTING.md, Conventions): pushing retains, __gc / __close release and set the
 * pointer to NULL, so a second __gc or __close does nothing and a closed tensor is refused with a
 * clear message.
 *
 * Identity: one fx_tensor is one Lua value while that value lives (a weak-valued cache in the
 * registry, keyed by the fx_tensor address), so `x:add_(y) == x` holds as `x.add_(y) is x` does in
 * PyTorch, and tensors work as table keys. `__eq` is therefore plain identity.
 *
 * Methods: a few written here (size, dim, item, to, ...) and, for every op of core/ops.def that
 * takes a tensor, a closure that calls it through overload resolution (lx_bind.c). Non-string keys
 * go to lx_index.c (x[0], x[{":", 1}]).
 *
 * File order (lua/lx_impl.h): the userdata basics every file needs (lx_push_tensor,
 * lx_to_tensor, lx_check_tensor, the identity cache, torch.Size tables) are in lx_udata.c, low in
 * the order; this file, which calls lx_bind.c and lx_index.c, sits above them, and reaches the
 * debugger session (item(), tolist()) through lx_session_hook. */
#include <math.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/shape.h"
#include "lua/lx_impl.h"
#include "lua/lx_open.h"

/* ==== lifetime =============================================================================== */

/* __gc and __close: release once. __close also drops the cache entry, so a later push of the
 * same fx_tensor makes a fresh, open userdata.  [-0, +0, -] */
static int tensor_gc(lua_State *L) {
    lx_tensor_ud *u = lx_test_tensor(L, 1);
    if (!u) return lx_typeerror(L, 1, "Tensor");
    lx_forget_tensor(L, u);
    return 0;
}

static int tensor_close(lua_State *L) {
    lx_forget_tensor(L, lx_checkudata(L, 1, LX_TENSOR));
    return 0;
}

/* ==== shape tables (torch.Size) ============================================================== */

/* t's shape table: SymInts for the symbolic sizes of a tensor traced with dynamic shapes.
 * [-0, +1, e] */
static void push_tensor_size(lua_State *L, fx_tensor *t) {
    if (!fx_tensor_is_symbolic(t)) {
        lx_push_size(L, fx_tensor_ndim(t), fx_tensor_sizes(t));
        return;
    }
    int n = fx_tensor_ndim(t);
    lua_createtable(L, n, 0); /* [size] */
    for (int i = 0; i < n; i++) {
        lx_push_symint(L, fx_tensor_sym_size(t, i)); /* [size, s] */
        lua_rawseti(L, -2, i + 1);                   /* [size] */
    }
    luaL_setmetatable(L, LX_SIZE);
}

/* tostring(x.shape) = "torch.Size([2, 3])".  [-0, +1, e] */
static int size_tostring(lua_State *L) {
    lx_checktype(L, 1, LUA_TTABLE);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "torch.Size([");
    lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
    for (lua_Integer i = 1; i <= n; i++) {
        if (i > 1) luaL_addstring(&b, ", ");
        lua_rawgeti(L, 1, i);        /* [.., v] */
        luaL_tolstring(L, -1, NULL); /* [.., v, s] (SymInts print their expression) */
        lua_remove(L, -2);           /* [.., s] */
        luaL_addvalue(&b);
    }
    luaL_addstring(&b, "])");
    luaL_pushresult(&b);
    return 1;
}

/* Element-wise equality of two shape tables (or a shape and a plain list).  [-0, +1, -] */
static int size_eq(lua_State *L) {
    if (!lua_istable(L, 1) || !lua_istable(L, 2)) {
        lua_pushboolean(L, 0);
        return 1;
    }
    lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
    int eq = n == (lua_Integer)lua_rawlen(L, 2);
    for (lua_Integer i = 1; eq && i <= n; i++) {
        lua_rawgeti(L, 1, i);
        lua_rawgeti(L, 2, i);
        eq = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
    }
    lua_pushboolean(L, eq);
    return 1;
}

/* ==== fields and simple methods ============================================================== */

/* Wraps a possibly negative dim for tensor t, raising PyTorch's IndexError text.  [-0, +0, e] */
static int wrap_dim(lua_State *L, fx_tensor *t, lua_Integer d) {
    fx_err e;
    fx_err_clear(&e);
    int out;
    if (fx_wrap_dim((int64_t)d, fx_tensor_ndim(t), &out, &e) != FX_OK) lx_error(L, &e);
    return out;
}

/* x:size() -> shape table; x:size(d) -> integer.  [-0, +1, e] */
static int t_size(lua_State *L) {
    fx_tensor *t = lx_check_tensor(L, 1);
    if (lua_isnoneornil(L, 2)) {
        push_tensor_size(L, t);
        return 1;
    }
    int d = wrap_dim(L, t, lx_checkinteger(L, 2));
    lx_push_symint(L, fx_tensor_sym_size(t, d));
    return 1;
}

/* x:stride() -> table; x:stride(d) -> integer.  [-0, +1, e] */
static int t_stride(lua_State *L) {
    fx_tensor *t = lx_check_tensor(L, 1);
    if (lua_isnoneornil(L, 2)) {
        int n = fx_tensor_ndim(t);
        lua_createtable(L, n, 0);
        for (int i = 0; i < n; i++) {
            lua_pushinteger(L, (lua_Integer)fx_tensor_stride(t, i));
            lua_rawseti(L, -2, i + 1);
        }
        return 1;
    }
    int d = wrap_dim(L, t, lx_checkinteger(L, 2));
    lua_pushinteger(L, (lua_Integer)fx_tensor_stride(t, d));
    return 1;
}

static int t_dim(lua_State *L) {
    lua_pushinteger(L, fx_tensor_ndim(lx_check_tensor(L, 1)));
    return 1;
}

static int t_numel(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)fx_tensor_numel(lx_check_tensor(L, 1)));
    return 1;
}

static int t_is_contiguous(lua_State *L) {
    lua_pushboolean(L, fx_tensor_is_contiguous(lx_check_tensor(L, 1)));
    return 1;
}

static int t_storage_offset(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)fx_tensor_offset(lx_check_tensor(L, 1)));
    return 1;
}

static int t_element_size(lua_State *L) {
    lua_pushinteger(L, (lua_Integer)fx_dtype_size(fx_tensor_dtype(lx_check_tensor(L, 1))));
    return 1;
}

static int t_is_floating_point(lua_State *L) {
    lua_pushboolean(L, fx_dtype_is_float(fx_tensor_dtype(lx_check_tensor(L, 1))));
    return 1;
}

static int t_is_complex(lua_State *L) {
    lua_pushboolean(L, fx_dtype_is_complex(fx_tensor_dtype(lx_check_tensor(L, 1))));
    return 1;
}

/* Raises the data-dependent error for reading values of a meta tensor.  [-0, +0, e] */
static int data_dependent(lua_State *L, const char *what) {
    fx_err e;
    fx_err_clear(&e);
    fx_err_setf(&e, FX_EDATADEP,
                "Could not extract specialized integer from data-dependent expression "
                "(%s on a meta tensor while tracing)",
                what);
    fx_err_kind(&e, "data_dependent");
    fx_err_hintf(&e, "use torch.cond for data-dependent control flow");
    return lx_error(L, &e);
}

/* Pushes element i (row-major) of cpu tensor t as a Lua value of its dtype's kind; a complex
 * element (Python's complex) is the table {re, im}.  [-0,+1,-] */
static void push_elem(lua_State *L, const fx_tensor *t, int64_t i) {
    fx_dtype dt = fx_tensor_dtype(t);
    if (fx_dtype_is_complex(dt)) {
        double re, im;
        fx_tensor_flat_c(t, i, &re, &im);
        lua_createtable(L, 2, 0);
        lua_pushnumber(L, re);
        lua_rawseti(L, -2, 1);
        lua_pushnumber(L, im);
        lua_rawseti(L, -2, 2);
    } else if (dt == FX_DTYPE_BOOL)
        lua_pushboolean(L, fx_tensor_flat_i64(t, i) != 0);
    else if (fx_dtype_is_int(dt))
        lua_pushinteger(L, (lua_Integer)fx_tensor_flat_i64(t, i));
    else
        lua_pushnumber(L, fx_tensor_flat_f64(t, i));
}

/* x:item(): the one element as a number (integer for integer dtypes, boolean for bool, the
 * table {re, im} for complex dtypes).
 * PyTorch: "a Tensor with 6 elements cannot be converted to Scalar". While exporting (a tracing
 * tensor of an integer dtype): an unbacked SymInt u<N> recorded as _local_scalar_dense
 * (fx_tracer_item); on another meta tensor: the data-dependent error.  [-0, +1, e] */
static int t_item(lua_State *L) {
    fx_tensor *t = lx_check_tensor(L, 1);
    if (fx_tensor_numel(t) != 1)
        return lx_errorf(L, FX_EARG, NULL,
                         "a Tensor with %lld elements cannot be converted to Scalar",
                         (long long)fx_tensor_numel(t));
    if (fx_tensor_is_meta(t)) {
        /* during export: an unbacked SymInt u<N>, the graph's _local_scalar_dense node */
        fx_tracer *tr = lx_current(L)->tracer;
        if (!tr) return data_dependent(L, "item()");
        fx_symint v;
        fx_err e;
        fx_err_clear(&e);
        lx_dispatch_serial += 2; /* the node's location is this line */
        if (fx_tracer_item(tr, t, &v, &e)) return lx_error(L, &e);
        lx_push_symint(L, v);
        return 1;
    }
    lx_session_hook.datadep(L, "item()"); /* a real trace in a debugger session may stop here */
    push_elem(L, t, 0);
    return 1;
}

/* Nested tables for dims [d, ndim); *flat advances over the row-major elements. */
static void tolist_rec(lua_State *L, const fx_tensor *t, int d, int64_t *flat) {
    if (d == fx_tensor_ndim(t)) {
        push_elem(L, t, (*flat)++);
        return;
    }
    luaL_checkstack(L, 4, "tensor too deep");
    int64_t n = fx_tensor_size(t, d);
    lua_createtable(L, (int)(n < 1 << 20 ? n : 0), 0);
    for (int64_t i = 0; i < n; i++) {
        tolist_rec(L, t, d + 1, flat);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

/* x:tolist(): nested Lua lists (a number for a 0-dim tensor).  [-0, +1, e] */
static int t_tolist(lua_State *L) {
    fx_tensor *t = lx_check_tensor(L, 1);
    if (fx_tensor_is_meta(t)) return data_dependent(L, "tolist()");
    lx_session_hook.datadep(L, "tolist()");
    int64_t flat = 0;
    tolist_rec(L, t, 0, &flat);
    return 1;
}

/* ---- conversions ---------------------------------------------------------------------------- */

/* Dispatches _to_copy(t, dtype=dt) unless t already has dtype dt, in which case t itself is
 * returned (PyTorch's `to` with copy=False).  [-0, +1, e] */
static int to_dtype(lua_State *L, int self_idx, fx_dtype dt) {
    fx_tensor *t = lx_check_tensor(L, self_idx);
    if (fx_tensor_dtype(t) == dt) {
        lua_pushvalue(L, self_idx);
        return 1;
    }
    const fx_opdef *op = lx_op(L, "_to_copy.default");
    fx_ivalue *a = lx_ivbox_new(L, op->schema.nargs); /* [.., box] */
    a[0] = fx_iv_tensor(t);
    int di = fx_schema_arg_index(&op->schema, "dtype");
    if (di >= 0) a[di] = fx_iv_dtype(dt);
    lx_dispatch(L, op, a); /* [.., box, r] */
    for (int i = 0; i < op->schema.nargs; i++) fx_ivalue_clear(&a[i]);
    lua_remove(L, -2); /* [.., r] */
    return 1;
}

/* The legacy type string of PyTorch's x.type(): "torch.FloatTensor". */
static const char *legacy_type_name(fx_dtype dt) {
    switch (dt) {
    case FX_DTYPE_F32: return "torch.FloatTensor";
    case FX_DTYPE_F64: return "torch.DoubleTensor";
    case FX_DTYPE_F16: return "torch.HalfTensor";
    case FX_DTYPE_BF16: return "torch.BFloat16Tensor";
    case FX_DTYPE_I64: return "torch.LongTensor";
    case FX_DTYPE_I32: return "torch.IntTensor";
    case FX_DTYPE_I16: return "torch.ShortTensor";
    case FX_DTYPE_I8: return "torch.CharTensor";
    case FX_DTYPE_U8: return "torch.ByteTensor";
    case FX_DTYPE_BOOL: return "torch.BoolTensor";
    case FX_DTYPE_C64: return "torch.ComplexFloatTensor";
    case FX_DTYPE_C128: return "torch.ComplexDoubleTensor";
    default: return "torch.Tensor";
    }
}

/* The dtype named by the value at idx: a dtype, a dtype name ("float16", "torch.half"), a legacy
 * type string ("torch.HalfTensor"), or a tensor (its dtype). UNDEFINED otherwise. */
static fx_dtype dtype_arg(lua_State *L, int idx) {
    fx_dtype dt = lx_to_dtype(L, idx);
    if (dt != FX_DTYPE_UNDEFINED) return dt;
    fx_tensor *o = lx_to_tensor(L, idx);
    if (o) return fx_tensor_dtype(o);
    if (lua_type(L, idx) == LUA_TSTRING) {
        const char *s = lua_tostring(L, idx);
        for (int i = 0; i < FX_DTYPE_COUNT; i++)
            if (!strcmp(s, legacy_type_name((fx_dtype)i))) return (fx_dtype)i;
        return fx_dtype_from_name(s);
    }
    return FX_DTYPE_UNDEFINED;
}

/* x:to(dtype | other | "cpu" | {dtype = ...}).  [-0, +1, e] */
/* The device a user sees: a tracing tensor of a trace over CPU examples is a meta tensor that
 * stands for a CPU tensor (PyTorch's fake tensors report their example's device). */
static const char *user_device(lua_State *L, const fx_tensor *t) {
    if (!fx_tensor_is_meta(t)) return "cpu";
    const lx_state *st = lx_current(L);
    if (st->tracer && fx_tracer_node_of(st->tracer, t)) return "cpu";
    return "meta";
}

static int t_to(lua_State *L) {
    fx_tensor *t = lx_check_tensor(L, 1);
    int arg = 2;
    if (lua_istable(L, 2) && !luaL_testudata(L, 2, LX_SIZE)) {
        lua_getfield(L, 2, "dtype"); /* [x, opts, dtype] */
        arg = lua_gettop(L);
        if (lua_isnil(L, arg)) {
            lua_pushvalue(L, 1);
            return 1;
        }
    }
    if (lua_type(L, arg) == LUA_TSTRING) {
        /* to() on the device the tensor is on is the tensor itself (an alias, as PyTorch's
         * `to` returns self when nothing changes) */
        if (!strcmp(lua_tostring(L, arg), user_device(L, t))) {
            lua_pushvalue(L, 1);
            return 1;
        }
    }
    fx_dtype dt = dtype_arg(L, arg);
    if (dt == FX_DTYPE_UNDEFINED) return lx_typeerror(L, arg, "dtype");
    return to_dtype(L, 1, dt);
}

/* x:type() -> "torch.FloatTensor"; x:type(dtype) -> x:to(dtype).  [-0, +1, e] */
static int t_type(lua_State *L) {
    fx_tensor *t = lx_check_tensor(L, 1);
    if (lua_isnoneornil(L, 2)) {
        lua_pushstring(L, legacy_type_name(fx_tensor_dtype(t)));
        return 1;
    }
    fx_dtype dt = dtype_arg(L, 2);
    if (dt == FX_DTYPE_UNDEFINED) return lx_typeerror(L, 2, "dtype");
    return to_dtype(L, 1, dt);
}

#define TO_METHOD(fname, DT)                                                                       \
    static int fname(lua_State *L) {                                                               \
        lx_check_tensor(L, 1);                                                                     \
        return to_dtype(L, 1, DT);                                                                 \
    }
TO_METHOD(t_float, FX_DTYPE_F32)
TO_METHOD(t_double, FX_DTYPE_F64)
TO_METHOD(t_half, FX_DTYPE_F16)
TO_METHOD(t_bfloat16, FX_DTYPE_BF16)
TO_METHOD(t_long, FX_DTYPE_I64)
TO_METHOD(t_int, FX_DTYPE_I32)
TO_METHOD(t_short, FX_DTYPE_I16)
TO_METHOD(t_char, FX_DTYPE_I8)
TO_METHOD(t_byte, FX_DTYPE_U8)
TO_METHOD(t_bool, FX_DTYPE_BOOL)
TO_METHOD(t_cfloat, FX_DTYPE_C64)
TO_METHOD(t_cdouble, FX_DTYPE_C128)
#undef TO_METHOD

/* x:detach(): aten.detach when ops.def has it, else aten.alias (no autograd in fxdb, so the
 * result is a plain alias of x either way).  [-0, +1, e] */
static int t_detach(lua_State *L) {
    lx_check_tensor(L, 1);
    lua_settop(L, 1);
    const char *name = fx_op_lookup("detach.default") ? "detach" : "alias";
    return lx_call_opname(L, name, 1, true);
}

/* ==== metamethods ============================================================================ */

/* Pushes `a op b` where one of a, b (stack 1, 2) is a tensor and the other may be a Lua number:
 * PyTorch's __add__/__radd__ both call add(tensor, other), so a number on the left is moved to
 * the right for commutative ops.  [-0, +1, e] */
static int binop(lua_State *L, const char *name, bool commutative) {
    lua_settop(L, 2);
    if (!lx_to_tensor(L, 1)) {
        if (!commutative) return lx_call_opname(L, name, 1, false);
        lua_rotate(L, 1, 1); /* [b, a] */
    }
    return lx_call_opname(L, name, 1, true);
}

static int t_add(lua_State *L) { return binop(L, "add", true); }
static int t_mul(lua_State *L) { return binop(L, "mul", true); }
static int t_mod(lua_State *L) { return binop(L, "remainder", false); }
static int t_idiv(lua_State *L) { return binop(L, "floor_divide", false); }
static int t_pow(lua_State *L) { return binop(L, "pow", false); }

/* a - b. `2 - x` is PyTorch's __rsub__, which records rsub.Scalar(x, 2); without rsub in ops.def
 * it is sub.Tensor(2, x) with a wrapped number as self (same values and dtype).  [-0, +1, e] */
static int t_sub(lua_State *L) {
    lua_settop(L, 2);
    if (lx_to_tensor(L, 1)) return lx_call_opname(L, "sub", 1, true);
    const fx_opdef *rsub = fx_op_lookup("rsub.Scalar");
    if (rsub) {
        lua_rotate(L, 1, 1); /* [x, 2] */
        return lx_call_overload(L, rsub, 1);
    }
    return lx_call_overload(L, lx_op(L, "sub.Tensor"), 1);
}

/* a / b. `2 / x` is PyTorch's __rtruediv__ = reciprocal(x) * 2 when reciprocal exists; else
 * div.Tensor(2, x) with a wrapped number as self.  [-0, +1, e] */
static int t_div(lua_State *L) {
    lua_settop(L, 2);
    if (lx_to_tensor(L, 1)) return lx_call_opname(L, "div", 1, true);
    const fx_opdef *recip = fx_op_lookup("reciprocal.default");
    if (recip) {
        lua_pushvalue(L, 2);           /* [2, x, x] */
        lx_call_overload(L, recip, 3); /* [2, x, x, r] */
        lua_replace(L, 2);             /* [2, r, x] */
        lua_settop(L, 2);              /* [2, r] */
        lua_rotate(L, 1, 1);           /* [r, 2] */
        return lx_call_opname(L, "mul", 1, true);
    }
    return lx_call_overload(L, lx_op(L, "div.Tensor"), 1);
}

static int t_unm(lua_State *L) {
    lua_settop(L, 1);
    return lx_call_opname(L, "neg", 1, true);
}

/* Lua's bitwise operators as PyTorch's Python ones: `a & b`, `a | b`, `a ~ b` (Python's `^`)
 * are bitwise_and / or / xor (a number on the left moves right, as __rand__ does); `~a` is
 * bitwise_not; `a << b` / `a >> b` are __lshift__ / __rshift__, and with a number on the left
 * bitwise_left_shift / bitwise_right_shift.Scalar_Tensor (__rlshift__ / __rrshift__).
 * [-0, +1, e] */
static int t_band(lua_State *L) { return binop(L, "bitwise_and", true); }
static int t_bor(lua_State *L) { return binop(L, "bitwise_or", true); }
static int t_bxor(lua_State *L) { return binop(L, "bitwise_xor", true); }
static int t_bnot(lua_State *L) {
    lua_settop(L, 1);
    return lx_call_opname(L, "bitwise_not", 1, true);
}
static int shift(lua_State *L, const char *dunder, const char *rop) {
    lua_settop(L, 2);
    if (lx_to_tensor(L, 1)) return lx_call_opname(L, dunder, 1, true);
    return lx_call_overload(L, lx_op(L, rop), 1);
}
static int t_shl(lua_State *L) {
    return shift(L, "__lshift__", "bitwise_left_shift.Scalar_Tensor");
}
static int t_shr(lua_State *L) {
    return shift(L, "__rshift__", "bitwise_right_shift.Scalar_Tensor");
}

/* #x = x.shape[0]; PyTorch: "len() of a 0-d tensor".  [-0, +1, e] */
static int t_len(lua_State *L) {
    fx_tensor *t = lx_check_tensor(L, 1);
    if (fx_tensor_ndim(t) == 0) return lx_errorf(L, FX_EARG, NULL, "len() of a 0-d tensor");
    lua_pushinteger(L, (lua_Integer)fx_tensor_size(t, 0));
    return 1;
}

static int t_tostring(lua_State *L) {
    lx_tensor_ud *u = lx_checkudata(L, 1, LX_TENSOR);
    if (!u->t) {
        lua_pushstring(L, "tensor(<closed>)");
        return 1;
    }
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_tensor_format(&sb, u->t);
    fx_err e;
    fx_err_clear(&e);
    if (fx_strbuf_status(&sb, &e) != FX_OK) {
        fx_strbuf_free(&sb);
        return lx_error(L, &e);
    }
    lx_push_strbuf(L, &sb);
    return 1;
}

/* x.real / x.imag (PyTorch's properties): aten.real / aten.imag called through the method of
 * that name in the methods table (upvalue 1 of t_index), so they trace like any op.
 * [-0, +1, e] */
static int part_view(lua_State *L, const char *name) {
    lua_getfield(L, lua_upvalueindex(1), name); /* [x, k, fn] */
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    return 1;
}

/* x.key: fields, then methods (upvalue 1); other keys index the tensor.  [-0, +1, e] */
static int t_index(lua_State *L) {
    if (lua_type(L, 2) != LUA_TSTRING) return lx_index_get(L);
    const char *k = lua_tostring(L, 2);
    /* a method (x:add) whose first letter starts no property of the switch below (keep the two
     * in step): one table read answers */
    if (!strchr("sdnri_", k[0])) {
        lua_pushvalue(L, 2);
        if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1; /* [x, k, method] */
        lua_pop(L, 1);
    }
    lx_tensor_ud *u = lx_test_tensor(L, 1);
    if (!u) return lx_typeerror(L, 1, "Tensor");
    fx_tensor *t = u->t;
    if (t) {
        switch (k[0]) {
        case 's':
            if (!strcmp(k, "shape")) {
                push_tensor_size(L, t);
                return 1;
            }
            break;
        case 'd':
            if (!strcmp(k, "dtype")) {
                lx_push_dtype(L, fx_tensor_dtype(t));
                return 1;
            }
            if (!strcmp(k, "device")) {
                lua_pushstring(L, user_device(L, t));
                return 1;
            }
            break;
        case 'n':
            if (!strcmp(k, "ndim")) {
                lua_pushinteger(L, fx_tensor_ndim(t));
                return 1;
            }
            break;
        case 'r':
            if (!strcmp(k, "requires_grad")) {
                lua_pushboolean(L, fx_tensor_requires_grad(t));
                return 1;
            }
            if (!strcmp(k, "real")) return part_view(L, "real");
            break;
        case 'i':
            if (!strcmp(k, "is_meta")) {
                lua_pushboolean(L, fx_tensor_is_meta(t));
                return 1;
            }
            if (!strcmp(k, "imag")) return part_view(L, "imag");
            break;
        case '_':
            if (!strcmp(k, "_version")) {
                lua_pushinteger(L, (lua_Integer)fx_tensor_version(t));
                return 1;
            }
            if (!strcmp(k, "_base")) {
                lx_push_tensor(L, fx_tensor_base(t));
                return 1;
            }
            break;
        default: break;
        }
    }
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) == LUA_TNIL) { /* [x, k, method|nil] */
        /* a PyTorch method fxdb lacks: the methods table's __index (lua/not_yet.lua) gives a stub
         * that raises "... is not yet supported by fxdb" */
        lua_pop(L, 1);
        lua_pushvalue(L, 2);
        lua_gettable(L, lua_upvalueindex(1));
    }
    return 1;
}

/* x.requires_grad = b; x[key] = v for other keys.  [-0, +0, e] */
static int t_newindex(lua_State *L) {
    if (lua_type(L, 2) != LUA_TSTRING) return lx_index_set(L);
    fx_tensor *t = lx_check_tensor(L, 1);
    const char *k = lua_tostring(L, 2);
    if (!strcmp(k, "requires_grad")) {
        lx_checktype(L, 3, LUA_TBOOLEAN);
        fx_tensor_set_requires_grad(t, lua_toboolean(L, 3));
        return 0;
    }
    return lx_errorf(L, FX_EARG, NULL, "attribute '%s' of 'Tensor' objects is not writable", k);
}

/* The closure behind every op method: upvalue 1 is the op name, 2 its overload set.
 * [-0, +r, e] */
static int t_op_method(lua_State *L) {
    lx_check_tensor(L, 1);
    return lx_call_overloads(L, lua_touserdata(L, lua_upvalueindex(2)),
                             lua_tostring(L, lua_upvalueindex(1)), 1, true);
}

static const luaL_Reg tensor_methods[] = {
    {"size", t_size},
    {"stride", t_stride},
    {"dim", t_dim},
    {"ndimension", t_dim},
    {"numel", t_numel},
    {"nelement", t_numel},
    {"is_contiguous", t_is_contiguous},
    {"storage_offset", t_storage_offset},
    {"element_size", t_element_size},
    {"is_floating_point", t_is_floating_point},
    {"is_complex", t_is_complex},
    {"item", t_item},
    {"tolist", t_tolist},
    {"to", t_to},
    {"type", t_type},
    {"float", t_float},
    {"double", t_double},
    {"half", t_half},
    {"bfloat16", t_bfloat16},
    {"cfloat", t_cfloat},
    {"cdouble", t_cdouble},
    {"long", t_long},
    {"int", t_int},
    {"short", t_short},
    {"char", t_char},
    {"byte", t_byte},
    {"bool", t_bool},
    {"detach", t_detach},
    {NULL, NULL},
};

static const luaL_Reg tensor_meta[] = {
    {"__gc", tensor_gc},        {"__close", tensor_close},
    {"__tostring", t_tostring}, {"__newindex", t_newindex},
    {"__len", t_len},           {"__add", t_add},
    {"__sub", t_sub},           {"__mul", t_mul},
    {"__div", t_div},           {"__mod", t_mod},
    {"__idiv", t_idiv},         {"__pow", t_pow},
    {"__unm", t_unm},           {"__band", t_band},
    {"__bor", t_bor},           {"__bxor", t_bxor},
    {"__bnot", t_bnot},         {"__shl", t_shl},
    {"__shr", t_shr},           {NULL, NULL},
};

/* Builds the Tensor and Size metatables and the tensor cache. The metatable's `__methods` field
 * is the methods table (for the REPL's Tab completion, which cannot see through a function
 * __index).  [-0, +0, e] */
void lx_open_tensor(lua_State *L) {
    luaL_newmetatable(L, LX_SIZE); /* [smt] */
    lua_pushcfunction(L, size_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, size_eq);
    lua_setfield(L, -2, "__eq");
    lua_pushstring(L, "torch.Size");
    lua_setfield(L, -2, "__name");
    lua_pop(L, 1); /* [] */

    luaL_newmetatable(L, LX_TENSOR); /* [mt] */
    lx_state *st = lx_current(L);
    st->tensor_mt = lua_topointer(L, -1);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &lx_tensor_mt_key);
    lua_pushvalue(L, -1);
    st->mt_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushstring(L, "Tensor");     /* lx_typeerror: "Tensor expected" */
    lua_setfield(L, -2, "__name");
    luaL_setfuncs(L, tensor_meta, 0);
    lua_newtable(L); /* [mt, methods] */
    luaL_setfuncs(L, tensor_methods, 0);
    /* every op with a tensor argument, by its base name, unless written above */
    for (int i = 0; i < FX_OP_COUNT; i++) {
        const fx_opdef *op = fx_op_get((fx_op_id)i);
        if (!op || (op->flags & FX_OPF_CREATION) || op->schema.nargs == 0) continue;
        if (op->schema.args[0].type != FX_TY_TENSOR) continue;
        if (lua_getfield(L, -1, op->schema.name) != LUA_TNIL) { /* [mt, methods, m] */
            lua_pop(L, 1);
            continue;
        }
        lua_pop(L, 1);
        lua_pushstring(L, op->schema.name);   /* [mt, methods, name] */
        /* its overload set, resolved once (NULL: raises "not yet supported" when called) */
        lua_pushlightuserdata(L, (void *)lx_overloads_of(op->schema.name));
        lua_pushcclosure(L, t_op_method, 2);  /* [mt, methods, f] */
        lua_setfield(L, -2, op->schema.name); /* [mt, methods] */
    }
    lua_pushvalue(L, -1);             /* [mt, methods, methods] */
    lua_setfield(L, -3, "__methods"); /* [mt, methods] */
    lua_pushcclosure(L, t_index, 1);  /* [mt, __index] */
    lua_setfield(L, -2, "__index");   /* [mt] */
    lua_pop(L, 1);                    /* [] */
    lx_open_slice(L);
}
