/* lua/lx_index.c — x[{...}] reading and writing, as PyTorch's __getitem__ / __setitem__.
 * Layer: lua. The Lua spelling of a Python index (docs/API.md §4): a number (x[0]), a tensor (x[idx]),
 * or a table of items: integers select, strings are slices (":", "1:3", "::2", "-2:"), "..." and
 * "None", slice(start, stop[, step]) objects and tables {start, stop[, step]} are slices whose
 * bounds may be SymInts, tensors are advanced indices (int64 / int32, bool or uint8 masks). What
 * gets dispatched follows torch/csrc/autograd/python_variable_indexing.cpp
 * and aten/src/ATen/TensorIndexing.h exactly:
 *   read:  select.int for integers (the dim is consumed), slice.Tensor for slices (a full slice
 *          start 0, stop >= size, step 1 is skipped, as applySlice does), unsqueeze for None,
 *          "..." skips the unspecified dims, then one index.Tensor with a Tensor?[] list holding
 *          None for the dims that are not indexed; when nothing was dispatched, alias(x).
 *   write: the same view ops, then copy_to(view, value) — copy_ when sizes match, else
 *          view(value, sizes without leading 1s) + expand + copy_ — or, with tensor indices,
 *          index_put_(view, indices, value viewed without leading 1s).
 * A Lua number written through basic indexing becomes fill_.Scalar(view, v): PyTorch makes a
 * 0-dim constant tensor and calls fill_.Tensor / copy_ with it; fill_.Scalar keeps the graph free
 * of a lifted constant and has the same effect. A 0-dim tensor value (PyTorch: fill_.Tensor) is
 * copied with copy_, which broadcasts, since ops.def has no fill_.Tensor. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua/lx_impl.h"

#define MAX_ITEMS 32

typedef enum item_kind { IT_INT, IT_SLICE, IT_ELLIPSIS, IT_NONE, IT_TENSOR } item_kind;

typedef struct item {
    item_kind kind;
    int64_t i;                      /* IT_INT */
    int64_t start, stop, step;      /* IT_SLICE: Python defaults 0, INT64_MAX, 1 */
    int tidx;                       /* IT_TENSOR: stack index of the index tensor */
    bool sym;                       /* IT_SLICE with a SymInt among start, stop, step */
    fx_symint sstart, sstop, sstep; /* sym: the bounds (borrowed from the key's SymInts) */
} item;

/* ==== parsing ================================================================================= */

static int index_error(lua_State *L, const char *fmt, const char *arg) {
    return lx_errorf(L, FX_EINDEX, "index", fmt, arg);
}

/* Parses one optional integer of a slice part [p, end). Returns 0 when empty, 1 when set,
 * -1 when malformed. */
static int parse_part(const char *p, const char *end, int64_t *out) {
    while (p < end && *p == ' ') p++;
    while (end > p && end[-1] == ' ') end--;
    if (p == end) return 0;
    char buf[32];
    size_t n = (size_t)(end - p);
    if (n >= sizeof buf) return -1;
    memcpy(buf, p, n);
    buf[n] = 0;
    char *q;
    errno = 0;
    long long v = strtoll(buf, &q, 10);
    if (*q || errno) return -1;
    *out = v;
    return 1;
}

/* "a:b:c" with each part optional.  [-0, +0, e] */
static void parse_slice(lua_State *L, const char *s, item *it) {
    it->kind = IT_SLICE;
    it->start = 0;
    it->stop = INT64_MAX;
    it->step = 1;
    const char *c1 = strchr(s, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    const char *end = s + strlen(s);
    if (!c1 || (c2 && strchr(c2 + 1, ':'))) {
        index_error(L,
                    "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                    "Variables are valid indices (got string \"%s\")",
                    s);
        return;
    }
    int64_t v;
    int r1 = parse_part(s, c1, &v);
    if (r1 == 1) it->start = v;
    int r2 = parse_part(c1 + 1, c2 ? c2 : end, &v);
    if (r2 == 1) it->stop = v;
    int r3 = c2 ? parse_part(c2 + 1, end, &v) : 0;
    if (r3 == 1) it->step = v;
    if (r1 < 0 || r2 < 0 || r3 < 0) {
        /* ":u0" is what formatting a SymInt into the string gives */
        for (const char *p = s; *p; p++)
            if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))
                lx_errorf(L, FX_EINDEX, "index",
                          "malformed slice \"%s\" (a string slice holds plain integers; write a "
                          "bound that is a SymInt as slice(start, stop[, step]))",
                          s);
        index_error(L, "malformed slice \"%s\"", s);
    }
    if (it->step == 0) lx_errorf(L, FX_EARG, "index", "slice step cannot be zero");
    if (it->step < 0) lx_errorf(L, FX_EARG, "index", "step must be greater than zero");
}

/* ---- slice(start, stop[, step]) ------------------------------------------------------------
 * Python's builtin slice, for bounds that are not plain numbers: `x[{":", slice(pos, pos + n)}]`
 * where pos is a SymInt (a size, or an item() value) — a string cannot hold one. A slice is a
 * table {start =, stop =, step =} (each an integer, a SymInt or nil = None) with the LX_SLICE
 * metatable; the fields are read again, and checked, whenever it indexes. */

static const char k_slice_type_msg[] =
    "slice indices must be integers or None or have an __index__ method (got %s)";

/* Whether the value at idx is a slice object.  [-0, +0, -] */
static bool is_slice(lua_State *L, int idx) {
    if (lua_type(L, idx) != LUA_TTABLE || !lua_getmetatable(L, idx)) return false;
    luaL_getmetatable(L, LX_SLICE);
    bool r = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return r;
}

/* A slice bound at idx: nil (false, *out untouched), an integer or a SymInt (true); anything else
 * is PyTorch's TypeError, naming what it got.  [-0, +0, e] */
static bool slice_bound(lua_State *L, int idx, fx_symint *out) {
    if (lua_isnil(L, idx)) return false;
    if (lua_isinteger(L, idx) || lx_is_symint(L, idx)) {
        if (!lx_to_symint(L, idx, out)) lx_errorf(L, FX_EARG, "index", "a SymInt of a closed trace");
        return true;
    }
    lx_errorf(L, FX_EINDEX, "index", k_slice_type_msg,
              lua_type(L, idx) == LUA_TNUMBER ? "float"
              : lx_to_tensor(L, idx)          ? "Tensor"
                                              : luaL_typename(L, idx));
    return false;
}

/* Fills it from the bounds at idx, idx + 1, idx + 2 (start, stop, step; nil = None): plain
 * integers make the same item as a string slice; with a SymInt the bounds are passed as they are
 * (slice.Tensor takes SymInts) and a symbolic step is guarded positive as applySlice does.
 * [-0, +0, e] */
static void slice_item(lua_State *L, int idx, item *it) {
    it->kind = IT_SLICE;
    it->sstart = FX_SI(0), it->sstop = FX_SI(INT64_MAX), it->sstep = FX_SI(1);
    slice_bound(L, idx, &it->sstart);
    slice_bound(L, idx + 1, &it->sstop);
    slice_bound(L, idx + 2, &it->sstep);
    it->sym = fx_si_is_sym(it->sstart) || fx_si_is_sym(it->sstop) || fx_si_is_sym(it->sstep);
    it->start = it->sstart.hint, it->stop = it->sstop.hint, it->step = it->sstep.hint;
    if (!fx_si_is_sym(it->sstep)) {
        if (it->step == 0) lx_errorf(L, FX_EARG, "index", "slice step cannot be zero");
        if (it->step < 0) lx_errorf(L, FX_EARG, "index", "step must be greater than zero");
        return;
    }
    bool pos;
    fx_err e;
    fx_err_clear(&e);
    if (fx_si_cmp(FX_SYM_GT, it->sstep, FX_SI(0), &pos, &e)) lx_error(L, &e);
    if (!pos) lx_errorf(L, FX_EARG, "index", "step must be greater than zero");
}

/* slice(stop) / slice(start, stop[, step]) as Python's builtin: nil is None.  [-?, +1, e] */
static int slice_new(lua_State *L) {
    int n = lua_gettop(L);
    if (n == 0) lx_errorf(L, FX_EARG, "argument", "slice expected at least 1 argument, got 0");
    if (n > 3) lx_errorf(L, FX_EARG, "argument", "slice expected at most 3 arguments, got %d", n);
    if (n == 1) { /* slice(stop) */
        lua_pushnil(L);
        lua_insert(L, 1);
    }
    lua_settop(L, 3);
    fx_symint v;
    for (int i = 1; i <= 3; i++) slice_bound(L, i, &v);
    lua_createtable(L, 0, 3);
    static const char *const field[] = {"start", "stop", "step"};
    for (int i = 0; i < 3; i++) {
        lua_pushvalue(L, i + 1);
        lua_setfield(L, -2, field[i]);
    }
    luaL_setmetatable(L, LX_SLICE);
    return 1;
}

/* "slice(1, s0 + 1, None)", Python's repr.  [-0, +1, e] */
static int slice_tostring(lua_State *L) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "slice(");
    static const char *const field[] = {"start", "stop", "step"};
    for (int i = 0; i < 3; i++) {
        if (i) luaL_addstring(&b, ", ");
        if (lua_getfield(L, 1, field[i]) == LUA_TNIL) {
            lua_pop(L, 1);
            luaL_addstring(&b, "None");
        } else {
            luaL_tolstring(L, -1, NULL); /* [.., v, s] */
            lua_remove(L, -2);
            luaL_addvalue(&b);
        }
    }
    luaL_addchar(&b, ')');
    luaL_pushresult(&b);
    return 1;
}

void lx_open_slice(lua_State *L) {
    luaL_newmetatable(L, LX_SLICE); /* [mt] */
    lua_pushcfunction(L, slice_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushstring(L, "slice");
    lua_setfield(L, -2, "__name");
    lua_pop(L, 1);
    if (lua_getglobal(L, "slice") == LUA_TNIL) { /* [g] */
        lua_pushcfunction(L, slice_new);
        lua_setglobal(L, "slice");
    }
    lua_pop(L, 1);
}

/* Reads the item at stack index idx. A list of integers becomes an index tensor, pushed on the
 * stack (the item refers to it).  [-0, +(0|1), e] */
static void parse_item(lua_State *L, int idx, item *it) {
    memset(it, 0, sizeof *it);
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
        if (!lua_isinteger(L, idx)) {
            lua_Number d = lua_tonumber(L, idx);
            if (d != (lua_Number)(int64_t)d)
                index_error(L,
                            "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                            "Variables are valid indices (got %s)",
                            "float");
        }
        it->kind = IT_INT;
        it->i =
            lua_isinteger(L, idx) ? (int64_t)lua_tointeger(L, idx) : (int64_t)lua_tonumber(L, idx);
        return;
    case LUA_TSTRING: {
        const char *s = lua_tostring(L, idx);
        if (!strcmp(s, "..."))
            it->kind = IT_ELLIPSIS;
        else if (!strcmp(s, "None"))
            it->kind = IT_NONE;
        else
            parse_slice(L, s, it);
        return;
    }
    case LUA_TUSERDATA:
        if (lx_to_tensor(L, idx)) {
            it->kind = IT_TENSOR;
            it->tidx = lua_absindex(L, idx);
            return;
        }
        break;
    case LUA_TTABLE: {
        if (is_slice(L, idx)) {
            lua_getfield(L, idx, "start");
            lua_getfield(L, idx, "stop");
            lua_getfield(L, idx, "step"); /* [.., a, b, c] */
            slice_item(L, lua_gettop(L) - 2, it);
            lua_pop(L, 3);
            return;
        }
        /* x[{":", {pos, pos + n}}]: a plain table is the slice {start, stop[, step]} (issue 9's
         * spelling beside the strings, the same as slice(pos, pos + n); its bounds integers,
         * SymInts or nil for None), in eager code and in export alike. A Python list index
         * x[[0, 2]] is an int64 tensor here: x[{torch.tensor({0, 2})}]. */
        lua_Integer len = (lua_Integer)lua_rawlen(L, idx);
        if (len != 2 && len != 3)
            lx_errorf(L, FX_EINDEX, "index",
                      "a table inside an index is the slice {start, stop[, step]} (2 or 3 items, "
                      "got %lld); a list index is an int64 tensor (x[{torch.tensor({0, 2})}] for "
                      "x[[0, 2]])",
                      (long long)len);
        lua_rawgeti(L, idx, 1);
        lua_rawgeti(L, idx, 2);
        lua_rawgeti(L, idx, 3); /* [.., a, b, c] */
        slice_item(L, lua_gettop(L) - 2, it);
        lua_pop(L, 3);
        return;
    }
    default: break;
    }
    index_error(L,
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                "are valid indices (got %s)",
                luaL_typename(L, idx));
}

/* Parses the key at stack index 2 into items; returns their count. Leaves the key's index
 * tensors on the stack (their items' tidx). A lone integer on a 0-dim tensor is PyTorch's applySelect error, not the
 * too-many-indices one a tuple gets.  [-0, +k, e] */
static int parse_key(lua_State *L, item *items) {
    if (lua_type(L, 2) == LUA_TNUMBER && fx_tensor_ndim(lx_check_tensor(L, 1)) == 0)
        lx_errorf(L, FX_EINDEX, "index",
                  "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                  "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
    if (lua_type(L, 2) == LUA_TTABLE && !lx_to_tensor(L, 2)) {
        lua_Integer n = (lua_Integer)lua_rawlen(L, 2);
        if ((lua_pushliteral(L, "n"), lua_rawget(L, 2)) == LUA_TNUMBER && lua_isinteger(L, -1))
            n = lua_tointeger(L, -1);
        lua_pop(L, 1);
        if (n > MAX_ITEMS) index_error(L, "too many indices (%s)", "more than 32");
        for (lua_Integer k = 0; k < n; k++) {
            lua_rawgeti(L, 2, k + 1); /* [x, key, .., v] */
            int v = lua_gettop(L);
            if (lua_isnil(L, v)) {
                lua_pop(L, 1);
                items[k].kind = IT_NONE; /* a hole reads as None */
                continue;
            }
            parse_item(L, v, &items[k]);
            if (items[k].kind == IT_TENSOR) continue; /* keep the index tensor on the stack */
            lua_pop(L, 1);
        }
        return (int)n;
    }
    parse_item(L, 2, &items[0]);
    return 1;
}

/* Releases the arguments of a dispatched op right away (the box's __gc would do it only when the
 * collector gets to it, keeping large inputs alive meanwhile). */
static void clear_args(const fx_opdef *op, fx_ivalue *a) {
    for (int i = 0; i < op->schema.nargs; i++) fx_ivalue_clear(&a[i]);
}

/* ==== dispatching helpers ==================================================================== */

/* Replaces the tensor at stack index `cur` by op(cur, extra args...). a[0] is set to the tensor
 * at cur; the caller fills the rest before calling.  [-0, +0, e] */
static void apply(lua_State *L, int cur, const fx_opdef *op, fx_ivalue *a) {
    a[0] = fx_iv_tensor(lx_check_tensor(L, cur));
    lx_dispatch(L, op, a); /* [.., box, r] */
    clear_args(op, a);
    lua_replace(L, cur); /* [.., box] */
    lua_pop(L, 1);       /* [..] */
}

/* applySelect: the bounds check of TensorIndexing.h (its message names the position of the index
 * in the key, real_dim), then select.int. */
static void do_select(lua_State *L, int cur, int64_t dim, int64_t index, int real_dim) {
    fx_tensor *t = lx_check_tensor(L, cur);
    if (fx_tensor_ndim(t) == 0)
        lx_errorf(L, FX_EINDEX, "index",
                  "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                  "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
    if (dim < fx_tensor_ndim(t)) {
        int64_t size = fx_tensor_size(t, (int)dim);
        if (index < -size || index >= size)
            lx_errorf(L, FX_EINDEX, "index",
                      "index %lld is out of bounds for dimension %d with size %lld",
                      (long long)index, real_dim, (long long)size);
    }
    const fx_opdef *op = lx_op(L, "select.int");
    fx_ivalue *a = lx_ivbox_new(L, op->schema.nargs);
    a[1] = fx_iv_int(dim);
    a[2] = fx_iv_int(index);
    apply(L, cur, op, a);
}

static void do_slice(lua_State *L, int cur, int64_t dim, const item *it) {
    const fx_opdef *op = lx_op(L, "slice.Tensor");
    fx_ivalue *a = lx_ivbox_new(L, op->schema.nargs);
    a[1] = fx_iv_int(dim);
    a[2] = fx_si_is_sym(it->sstart) ? fx_iv_symint(it->sstart) : fx_iv_int(it->start);
    a[3] = fx_si_is_sym(it->sstop) ? fx_iv_symint(it->sstop) : fx_iv_int(it->stop);
    a[4] = fx_si_is_sym(it->sstep) ? fx_iv_symint(it->sstep) : fx_iv_int(it->step);
    apply(L, cur, op, a);
}

static void do_unsqueeze(lua_State *L, int cur, int64_t dim) {
    const fx_opdef *op = lx_op(L, "unsqueeze.default");
    fx_ivalue *a = lx_ivbox_new(L, op->schema.nargs);
    a[1] = fx_iv_int(dim);
    apply(L, cur, op, a);
}

static void do_alias(lua_State *L, int cur) {
    const fx_opdef *op = lx_op(L, "alias.default");
    fx_ivalue *a = lx_ivbox_new(L, op->schema.nargs);
    apply(L, cur, op, a);
}

static bool is_mask(const fx_tensor *t) {
    return fx_tensor_dtype(t) == FX_DTYPE_BOOL || fx_tensor_dtype(t) == FX_DTYPE_U8;
}

/* applySlicing: pushes the basic-indexed view of the tensor at stack 1 (a new Lua value, or x
 * itself when nothing was dispatched) and fills the advanced indices: tdims[k] / tidx[k] = the
 * dim and stack index of each index tensor. Returns how many; *did_op tells whether a view op
 * was dispatched.  [-0, +1, e] */
static int apply_slicing(lua_State *L, const item *items, int n, int *tdims, int *tidx,
                         bool *did_op) {
    fx_tensor *self = lx_check_tensor(L, 1);
    int ndim = fx_tensor_ndim(self);
    int specified = 0, nell = 0;
    for (int k = 0; k < n; k++) {
        switch (items[k].kind) {
        case IT_INT:
        case IT_SLICE: specified++; break;
        case IT_TENSOR: {
            fx_tensor *t = lx_check_tensor(L, items[k].tidx);
            specified += is_mask(t) ? fx_tensor_ndim(t) : 1;
            break;
        }
        case IT_ELLIPSIS:
            if (++nell > 1)
                lx_errorf(L, FX_EINDEX, "index",
                          "an index can only have a single ellipsis ('...')");
            break;
        default: break;
        }
    }
    if (specified > ndim)
        lx_errorf(L, FX_EINDEX, "index", "too many indices for tensor of dimension %d", ndim);
    lua_pushvalue(L, 1); /* [.., cur] */
    int cur = lua_gettop(L);
    int64_t dim = 0;
    int nt = 0;
    *did_op = false;
    for (int k = 0; k < n; k++) {
        const item *it = &items[k];
        switch (it->kind) {
        case IT_INT:
            do_select(L, cur, dim, it->i, k);
            *did_op = true;
            break;
        case IT_SLICE: {
            fx_tensor *t = lx_check_tensor(L, cur);
            int64_t len = dim < fx_tensor_ndim(t) ? fx_tensor_size(t, (int)dim) : 0;
            /* applySlice skips a slice only when it provably covers the dim: a symbolic size
             * (dynamic export) keeps the slice, and its meta function guards the bounds; an
             * explicit stop past the end (x[:4] of 3 rows) is recorded too, as PyTorch compares
             * stop == length */
            bool sym_dim = dim < fx_tensor_ndim(t) && fx_si_is_sym(fx_tensor_sym_size(t, (int)dim));
            if (it->sym || sym_dim ||
                !(it->start == 0 && (it->stop == len || it->stop == INT64_MAX) && it->step == 1)) {
                do_slice(L, cur, dim, it);
                *did_op = true;
            }
            dim++;
            break;
        }
        case IT_ELLIPSIS: dim += ndim - specified; break;
        case IT_NONE:
            do_unsqueeze(L, cur, dim);
            *did_op = true;
            dim++;
            break;
        case IT_TENSOR: {
            fx_tensor *t = lx_check_tensor(L, it->tidx);
            tdims[nt] = (int)dim;
            tidx[nt++] = it->tidx;
            dim += is_mask(t) ? fx_tensor_ndim(t) : 1;
            break;
        }
        }
    }
    return nt;
}

/* Pushes the Tensor?[] list of advanced indices as a box-owned ivalue in *out.  */
static void build_indices(lua_State *L, int nt, const int *tdims, const int *tidx, fx_ivalue *out) {
    int len = tdims[nt - 1] + 1;
    fx_err e;
    fx_err_clear(&e);
    if (fx_iv_list(len, out, &e)) lx_error(L, &e);
    for (int k = 0; k < nt; k++) {
        fx_ivalue *slot = &out->u.list.items[tdims[k]];
        fx_ivalue_clear(slot);
        *slot = fx_iv_tensor(lx_check_tensor(L, tidx[k]));
    }
}

/* ==== __index / __newindex =================================================================== */

int lx_index_get(lua_State *L) {
    lx_check_tensor(L, 1);
    lua_settop(L, 2);
    item items[MAX_ITEMS];
    int n = parse_key(L, items); /* [x, key, tensors...] */
    int tdims[MAX_ITEMS], tidx[MAX_ITEMS];
    bool did_op;
    int nt = apply_slicing(L, items, n, tdims, tidx, &did_op); /* [.., view] */
    int cur = lua_gettop(L);
    if (nt == 0) {
        if (!did_op) do_alias(L, cur); /* x[{"..."}] is a fresh view */
        return 1;
    }
    const fx_opdef *op = lx_op(L, "index.Tensor");
    fx_ivalue *a = lx_ivbox_new(L, op->schema.nargs); /* [.., view, box] */
    build_indices(L, nt, tdims, tidx, &a[1]);
    apply(L, cur, op, a); /* [.., result] */
    return 1;
}

/* Strips leading size-1 dims (slicePrefix1sSize): how many dims remain. */
static int strip_prefix1s(const fx_tensor *t) {
    int nd = fx_tensor_ndim(t), k = 0;
    while (k < nd && fx_tensor_size(t, k) == 1) k++;
    return nd - k;
}

/* Replaces the tensor at stack index vi by view(v, sizes without leading 1s). */
static void view_prefix_stripped(lua_State *L, int vi) {
    fx_tensor *v = lx_check_tensor(L, vi);
    int keep = strip_prefix1s(v), nd = fx_tensor_ndim(v);
    const fx_opdef *op = lx_op(L, "view.default");
    fx_ivalue *a = lx_ivbox_new(L, op->schema.nargs);
    fx_err e;
    fx_err_clear(&e);
    if (fx_iv_int_list(keep, fx_tensor_sizes(v) + (nd - keep), &a[1], &e)) lx_error(L, &e);
    apply(L, vi, op, a);
}

static bool same_sizes(const fx_tensor *a, const fx_tensor *b) {
    if (fx_tensor_ndim(a) != fx_tensor_ndim(b)) return false;
    for (int i = 0; i < fx_tensor_ndim(a); i++)
        if (fx_tensor_size(a, i) != fx_tensor_size(b, i)) return false;
    return true;
}

/* copy_to(dst, src) of TensorIndexing.h for the tensors at stack indices di, si.  [-0, +0, e] */
static void copy_to(lua_State *L, int di, int si) {
    fx_tensor *dst = lx_check_tensor(L, di), *src = lx_check_tensor(L, si);
    if (!same_sizes(dst, src) && fx_tensor_ndim(src) > 0) {
        lua_pushvalue(L, si); /* [.., src'] */
        int s2 = lua_gettop(L);
        view_prefix_stripped(L, s2);
        src = lx_check_tensor(L, s2);
        if (!same_sizes(dst, src)) {
            const fx_opdef *op = lx_op(L, "expand.default");
            fx_ivalue *a = lx_ivbox_new(L, op->schema.nargs);
            fx_err e;
            fx_err_clear(&e);
            if (fx_iv_int_list(fx_tensor_ndim(dst), fx_tensor_sizes(dst), &a[1], &e))
                lx_error(L, &e);
            apply(L, s2, op, a);
        }
        si = s2;
    }
    const fx_opdef *op = lx_op(L, "copy_.default");
    fx_ivalue *a = lx_ivbox_new(L, op->schema.nargs); /* [.., box] */
    a[0] = fx_iv_tensor(lx_check_tensor(L, di));
    a[1] = fx_iv_tensor(lx_check_tensor(L, si));
    lx_dispatch(L, op, a); /* [.., box, r] */
    clear_args(op, a);
    lua_pop(L, 2);
}

int lx_index_set(lua_State *L) {
    fx_tensor *self = lx_check_tensor(L, 1);
    lua_settop(L, 3);
    int lt = lua_type(L, 3);
    if (lt != LUA_TNUMBER && lt != LUA_TBOOLEAN && !lx_to_tensor(L, 3))
        return lx_typeerror(L, 3, "Tensor or number");
    fx_dtype self_dt = fx_tensor_dtype(self);
    item items[MAX_ITEMS];
    int n = parse_key(L, items); /* [x, key, v, tensors...] */
    int tdims[MAX_ITEMS], tidx[MAX_ITEMS];
    bool did_op;
    int nt = apply_slicing(L, items, n, tdims, tidx, &did_op); /* [.., view] */
    int cur = lua_gettop(L);
    if (nt == 0) {
        if (lx_to_tensor(L, 3)) {
            copy_to(L, cur, 3);
        } else {
            const fx_opdef *op = lx_op(L, "fill_.Scalar");
            fx_ivalue *a = lx_ivbox_new(L, op->schema.nargs); /* [.., view, box] */
            a[0] = fx_iv_tensor(lx_check_tensor(L, cur));
            lx_to_ivalue(L, 3, &a[1]);
            lx_dispatch(L, op, a);
            clear_args(op, a);
        }
        return 0;
    }
    /* advanced: index_put_(view, indices, value without leading 1s) */
    int vi;
    if (lx_to_tensor(L, 3)) {
        lua_pushvalue(L, 3); /* [.., view, v] */
        vi = lua_gettop(L);
        fx_tensor *v = lx_check_tensor(L, vi);
        if (strip_prefix1s(v) != fx_tensor_ndim(v)) view_prefix_stripped(L, vi);
    } else {
        lx_tensor_from_lua(L, 3, self_dt); /* [.., view, v] (a constant) */
        vi = lua_gettop(L);
    }
    const fx_opdef *op = lx_op(L, "index_put_.default");
    fx_ivalue *a = lx_ivbox_new(L, op->schema.nargs); /* [.., view, v, box] */
    a[0] = fx_iv_tensor(lx_check_tensor(L, cur));
    build_indices(L, nt, tdims, tidx, &a[1]);
    a[2] = fx_iv_tensor(lx_check_tensor(L, vi));
    lx_dispatch(L, op, a);
    clear_args(op, a);
    return 0;
}
