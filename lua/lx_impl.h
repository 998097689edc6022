/* lua/lx_impl.h — helpers shared by the lua/ binding files; private to lua/.
 * Layer: lua. repl/ never includes this (it includes lua/fxlua.h only).
 *
 * The binding files form a DAG (docs/ARCHITECTURE.md §2; `make check-layers` checks it from the
 * object files' symbols). Bottom to top; a file calls only files listed before it:
 *   lx_aux.c        errors, Lua locations, per-thread state, argument checks, dtypes, registration
 *   lx_udata.c      userdata basics: Tensor push/to/check, torch.Size, SymInt, ivalue <-> Lua,
 *                   lx_dispatch, ExportedProgram push/to/check
 *   lx_bind.c       overload resolution;  lx_library.c  torch.library's C half
 *   lx_torch.c      global torch;  lx_index.c  x[...];  lx_tensor.c  the Tensor metatable, methods
 *   lx_graph.c      Graph and Node userdata;  lx_export.c  tracer, ExportedProgram, GraphModule
 *   lx_session.c    debugger sessions;  lx_debug.c, lx_pt2.c, lx_safetensors.c
 *   lx_open.c       opens them all (fxlua_openlibs), the Ctrl-C entry point
 * The one call against this order, from the tracer and Tensor methods into the debugger session
 * above them, goes through lx_session_hook (below), which lx_session.c fills at open time. */
#ifndef LX_IMPL_H
#define LX_IMPL_H

#include <lauxlib.h>
#include <lua.h>

#include "core/fx.h"
#include "lua/fxlua.h"

/* Metatable names (registry keys). */
#define LX_TENSOR "fxdb.Tensor"
#define LX_GRAPH "fxdb.Graph"
#define LX_NODE "fxdb.Node"
#define LX_PROGRAM "fxdb.ExportedProgram"
#define LX_PROVENANCE "fxdb.Provenance"
#define LX_DTYPE "fxdb.dtype"
#define LX_ERROR "fxdb.Error"
#define LX_SYMINT "fxdb.SymInt"
#define LX_SLICE "fxdb.slice"

/* ---- dispatch state per coroutine ----------------------------------------------------------- */
/* Each Lua thread (coroutine) dispatches through one context. The main thread and any thread not
 * bound to a trace use the shared eager context; a trace binds its coroutine to the tracer's
 * context, so ops the REPL runs while a trace is paused are not recorded. */
typedef struct lx_sess lx_sess; /* a debugger session's hook state (lx_session.c) */
typedef struct lx_state {
    fx_ctx *ctx;          /* dispatch context for ops run by this thread */
    fx_tracer *tracer;    /* non-NULL while this thread runs a trace */
    bool strict;          /* the trace is strict (module attribute assignment is watched) */
    lx_sess *sess;        /* the debugger session pausing this thread, or NULL */
    const void *tensor_mt; /* the Tensor metatable (lua_topointer), so lx_to_tensor needs no
                              registry lookup; NULL until the tensor library is opened */
    const void *dtype_mt;  /* the dtype metatable (lua_topointer), for lx_to_dtype */
    int cache_ref, mt_ref; /* registry references (luaL_ref) to the Tensor identity cache and
                              metatable, so a push reads the registry's array part; 0 until then */
    struct lx_slots *slots; /* the identity cache's free slots (lx_udata.c) */
} lx_state;

/* The state of the running thread L (the eager default when unbound).  [-0, +0, -] */
lx_state *lx_current(lua_State *L);
/* Binds coroutine `co` to `st` (copied) until lx_unbind_thread.  [-0, +0, e] */
void lx_bind_thread(lua_State *L, lua_State *co, const lx_state *st);
void lx_unbind_thread(lua_State *L, lua_State *co);

/* ---- tensors (lx_udata.c) ------------------------------------------------------------------------ */
/* The Tensor userdata (its methods are in lx_tensor.c). */
typedef struct lx_tensor_ud {
    fx_tensor *t;  /* one reference; NULL once collected or closed */
    uint32_t slot; /* its index in the identity cache (lx_udata.c), 0 = none */
} lx_tensor_ud;
/* Registry key (light userdata) of the Tensor metatable; lx_open_tensor stores it. */
extern const char lx_tensor_mt_key;
/* __gc and __close of a Tensor userdata: leaves the identity cache (a later push of the same
 * tensor makes a fresh, open userdata), frees its slot and releases the tensor; u is closed
 * afterwards. Idempotent.  [-0, +0, -] */
void lx_forget_tensor(lua_State *L, lx_tensor_ud *u);
/* The Tensor userdata at idx (open or closed), or NULL.  [-0, +0, -] */
lx_tensor_ud *lx_test_tensor(lua_State *L, int idx);
void lx_push_tensor(lua_State *L, fx_tensor *t);           /* retains t  [-0, +1, e] */
fx_tensor *lx_check_tensor(lua_State *L, int idx);         /* borrowed   [-0, +0, e] */
/* The tensor at idx, NULL when the value is not a Tensor; raises when it is a closed one.
 * [-0, +0, e] */
fx_tensor *lx_to_open_tensor(lua_State *L, int idx);
fx_tensor *lx_to_tensor(lua_State *L, int idx);            /* NULL if not a tensor [-0, +0, -] */
/* Reads a Lua value at idx as an op argument: Tensor userdata, integer, float, boolean, dtype,
 * string, nil (None), or a table -> list (recursively). The result owns its references.
 * [-0, +0, e] */
void lx_to_ivalue(lua_State *L, int idx, fx_ivalue *out);
/* Pushes an op result: tensor -> Tensor, list -> table, numbers, bools, None -> nil.
 * [-0, +1, e] */
void lx_push_ivalue(lua_State *L, const fx_ivalue *v);
/* Pushes the n values of v (lx_push_ivalue each) and clears v, taking over the references v
 * holds: when pushing fails (Lua out of memory making a Tensor userdata or a table) the values are
 * cleared all the same and the error is raised, so nothing they hold is lost. The caller has
 * n + 2 free stack slots (luaL_checkstack before it takes the references).  [-0, +n, m] */
void lx_push_owned(lua_State *L, fx_ivalue *v, int n);
/* Pushes t and releases the caller's reference to it (lx_push_owned of one tensor): for a tensor
 * a core call has just made.  [-0, +1, m] */
void lx_push_tensor_owned(lua_State *L, fx_tensor *t);
/* Dispatches op with args (schema order; FX_IV_UNSET = default) in the current thread's context,
 * raising an fxdb error with the Lua location on failure, and pushes all results (one Lua value
 * per schema return). Returns the number pushed. The args stay owned by the caller.
 * [-0, +nrets, e] */
int lx_dispatch(lua_State *L, const fx_opdef *op, fx_ivalue *args);
/* lx_dispatch where stack_of[i] > 0 is the stack index holding tensor argument i: a result that
 * is that tensor (an in-place op's self) is pushed from there without a cache lookup. */
int lx_dispatch_at(lua_State *L, const fx_opdef *op, fx_ivalue *args, const int *stack_of);

/* ---- SymInt (lx_udata.c) ------------------------------------------------------------------------
 */
/* Pushes v: a Lua integer when plain, else a SymInt userdata (retains its env).  [-0, +1, e] */
void lx_push_symint(lua_State *L, fx_symint v);
/* Reads an integer (or integral float) or a SymInt at idx; false for anything else.  [-0, +0, -] */
bool lx_to_symint(lua_State *L, int idx, fx_symint *out);
bool lx_is_symint(lua_State *L, int idx); /* [-0, +0, -] */
/* Pushes the decision of `a rel b` (values at i1, i2) through the guard function, raising the
 * data-dependent error with the Lua location when it cannot decide.  [-0, +1, e] */
int lx_symint_compare(lua_State *L, fx_sym_kind rel, int i1, int i2);

/* ---- errors and locations ----------------------------------------------------------------------- */
/* Raises err as an fxdb error object; fills err->loc / err->source from the innermost Lua frame
 * that is not fxdb's own embedded library when err->loc is empty.  [-0, +0, e] */
int lx_error(lua_State *L, fx_err *err);
/* Fills frames (innermost first) from the Lua stack of thread L, skipping C functions and the
 * embedded nn.lua/torch.lua chunks; each string stays valid until the next call (a call-site
 * cache or a static per-call buffer holds it).  [-0, +0, -] */
int lx_where(lua_State *L, fx_frame *frames, int max);
/* Line k (1-based) of source file `file` (read once, cached with lx_where's), trimmed, into buf
 * (truncated to cap); false when the file cannot be read or has no such line.  [-0, +0, m] */
bool lx_source_line(lua_State *L, const char *file, int k, char *buf, size_t cap);
/* Fills ar ("S" and "l") for the innermost frame of the user's Lua code (no C function, no
 * embedded fxdb chunk); false when there is none (a tail call removed it).  [-0, +0, -] */
bool lx_user_frame(lua_State *L, lua_Debug *ar);
/* Forgets lx_where's cached function names (keyed by closure addresses): called when a trace
 * starts, so closures collected since cannot be mistaken for new ones.  [-0, +0, -] */
void lx_where_reset(lua_State *L);
/* Set when lx_where's call-site cache saw a garbage collection and went back to the slow path:
 * the binding calls lx_where_arm (which allocates one small table, so only where a Lua error may
 * be raised) before the next traced op.  [-0, +0, m] */
extern bool lx_where_need_arm;
void lx_where_arm(lua_State *L);

/* ---- argument checks (lx_aux.c) ------------------------------------------------------------------ */
/* lauxlib's luaL_check* family, raising an fxdb error object instead (kind "argument", FX_EARG)
 * located at the innermost user Lua line: "bad argument #2 to 'run' (table expected, got number)".
 * Argument numbers are counted as the caller sees them (self is not counted for x:f()), as
 * lauxlib counts them. Every C function the binding exposes checks its arguments with these.
 * All [-0, +0, e]. */
int lx_argerror(lua_State *L, int arg, const char *extramsg);
int lx_typeerror(lua_State *L, int arg, const char *tname);
lua_Integer lx_checkinteger(lua_State *L, int arg);
const char *lx_checkstring(lua_State *L, int arg);
const char *lx_optstring(lua_State *L, int arg, const char *def);
void lx_checktype(lua_State *L, int arg, int t);
/* The userdata with metatable tname ("fxdb.Graph": named "Graph" in the message).  */
void *lx_checkudata(lua_State *L, int arg, const char *tname);
int lx_checkoption(lua_State *L, int arg, const char *def, const char *const lst[]);
/* Checks an options table at idx (nil passes): every key must be in valid[] (NULL-terminated)
 * or start with '_' (fxdb's internal options); otherwise raises an fxdb error, kind
 * "unknown_option": "export: unknown option 'strcit' (did you mean 'strict'?) (valid options:
 * ...)", the suggestion also in the hint. lua/check.lua calls it as
 * fxdb._check_options(fname, opts, list).  [-0, +0, e] */
void lx_check_options(lua_State *L, int idx, const char *fname, const char *const valid[]);
/* The entry of valid[] closest to name (edit distance) when it is close enough to be a
 * misspelling, else NULL.  [-0, +0, -] */
const char *lx_closest(const char *name, const char *const valid[]);
#define lx_argcheck(L, cond, arg, extramsg) ((void)((cond) || lx_argerror(L, (arg), (extramsg))))
#define lx_argexpected(L, cond, arg, tname) ((void)((cond) || lx_typeerror(L, (arg), (tname))))

/* True (once) when an op's FX_EINTR error was raised since the last call: the Ctrl-C hook
 * (lx_open.c) then does not raise the same interrupt again.  [-0, +0, -] */
bool lx_take_interrupt_reported(void);

/* ---- dtypes ------------------------------------------------------------------------------------- */
void lx_push_dtype(lua_State *L, fx_dtype dt);             /* torch.float16 etc. [-0, +1, e] */
fx_dtype lx_to_dtype(lua_State *L, int idx);               /* UNDEFINED if not a dtype [-0,+0,-] */

/* ---- programs (lx_udata.c; the methods are in lx_export.c) ------------------------------------ */
typedef struct lx_program {
    fx_program *p; /* owned; NULL after __gc */
} lx_program;
/* Pushes an ExportedProgram userdata holding no program yet and returns its slot: the caller
 * makes the program into *slot, which the userdata then owns (freed on __gc). Made before the
 * program, so that Lua running out of memory cannot lose it. The userdata must not reach Lua code
 * while *slot is NULL.  [-0, +1, m] */
fx_program **lx_push_program_slot(lua_State *L);

/* ---- graphs (lx_graph.c) ------------------------------------------------------------------------ */
/* Pushes a Graph userdata for g. `owner_idx` is a stack index of the value that keeps g alive
 * (an ExportedProgram), or 0 when the Graph owns g and frees it on __gc. [-0, +1, e] */
void lx_push_graph(lua_State *L, fx_graph *g, int owner_idx);
/* Pushes the Node userdata for n (one Lua value per node: weak identity cache); its user value
 * keeps the graph userdata at graph_idx alive.  [-0, +1, e] */
void lx_push_node(lua_State *L, fx_node *n, int graph_idx);
fx_graph *lx_check_graph(lua_State *L, int idx);           /* [-0, +0, e] */
fx_node *lx_check_node(lua_State *L, int idx);             /* [-0, +0, e] */

/* ---- opening (lx_aux.c; the binding files' openers are in lua/lx_open.h) ----------------------- */
/* Builds lx_aux.c's registry entries: error, dtype, ivalue-box and thread-box metatables, the
 * thread table and the eager state. Called first by fxlua_openlibs.  [-0, +0, e] */
void lx_open_aux(lua_State *L);
/* torch.library's C half (lua/lx_library.c). */
void lx_open_library(lua_State *L);
/* The Lua thread dispatching an op now (set by lx_dispatch_at around fx_dispatch, lx_udata.c), so
 * a custom op's Lua impl (lx_library.c) runs on it; NULL outside a dispatch from Lua. */
extern lua_State *lx_cb_thread;
/* Changes on entry to and on return from every lx_dispatch_at (and around the other calls that
 * record a location: item(), SymInt comparisons): two trace records that see the same value
 * come from one Lua op call (a composite's several nodes), so they have the same Lua stack and
 * module stack (lx_export.c's location cache). */
extern unsigned long lx_dispatch_serial;
/* Whether `word` occurs in the Lua source line as a whole word ("or" in `a or b`, not in
 * "for").  [-0, +0, -] */
bool lx_line_has_word(const char *line, const char *word);
/* Whether the unbacked comparison parked at loc ("file:line", its data-dependent error's
 * location) was made on a plain `local p = u0 > 2` whose next statement line calls
 * torch.cond(p, ...) and reads p nowhere after: torch.cond may keep it as its predicate.
 * [-0, +0, -] */
bool lx_pending_feeds_cond(const char *loc);
/* Threads bound to a trace, for fxlua_interrupt (signal-safe: a read of a volatile slot; NULL
 * for a free slot), i in [0, LX_MAX_BOUND).  [-0, +0, -] */
#define LX_MAX_BOUND 16
lua_State *lx_bound_thread(int i);
/* The device of torch.set_default_device (lx_torch.c); lx_dispatch gives it to creation ops. */
#define LX_DEFAULT_DEVICE "fxdb.default_device" /* registry: true while the default is meta */
fx_device lx_default_device(lua_State *L);

/* ---- additions (lua engineer): helpers shared by lx_aux.c, lx_bind.c, lx_tensor.c, lx_index.c,
 * lx_torch.c -------------------------------------------------------------------------------------- */
#define LX_SIZE "fxdb.Size"  /* metatable of shape tables (torch.Size): __tostring, __eq */

/* Pushes sb's text ("<oom>" when an append failed) and frees sb, even when Lua runs out of
 * memory making the string (sb is freed, then the error raised).  [-0, +1, m] */
void lx_push_strbuf(lua_State *L, fx_strbuf *sb);
/* Pushes a box of n FX_IV_UNSET ivalues that __gc clears, and returns its array: the way to own
 * ivalues across calls that may raise.  [-0, +1, e] */
fx_ivalue *lx_ivbox_new(lua_State *L, int n);
/* Raises an fxdb error object with code, kind (NULL: derived from code) and a formatted message,
 * located at the innermost user Lua frame.  [-0, +0, e] */
int lx_errorf(lua_State *L, int code, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Calls the ATen op `name` ("add") with the Lua arguments at stack indices first..top, choosing
 * the overload whose schema fits them (lx_bind.c): positional values in schema order, sizes as
 * numbers or one table, an optional trailing dtype, an optional trailing options table of keyword
 * arguments. `method` means the first value is self (x:view(2, 3) packs 2, 3 into `size`).
 * Pushes the results (one per schema return) and returns their number.  [-0, +r, e] */
int lx_call_opname(lua_State *L, const char *name, int first, bool method);
/* The overloads of one name that Lua calls choose among (ops.def order, the hidden ones left
 * out), resolved once for the process: a closure keeps the pointer, so a call needs no lookup.
 * lx_overloads_of returns NULL for a name ops.def lacks. */
typedef struct lx_overloads lx_overloads;
const lx_overloads *lx_overloads_of(const char *name);
/* lx_call_opname with the set already resolved (NULL: raise "not yet supported" for name). */
int lx_call_overloads(lua_State *L, const lx_overloads *set, const char *name, int first,
                      bool method);
/* The same for one given overload (torch.ops.aten.add.Tensor).  [-0, +r, e] */
int lx_call_overload(lua_State *L, const fx_opdef *op, int first);
/* Looks up an op by qualified name or raises "... is not yet supported".  [-0, +0, e] */
const fx_opdef *lx_op(lua_State *L, const char *qualname);
/* Pushes a shape table (LX_SIZE metatable) holding sizes[0..n-1].  [-0, +1, e] */
void lx_push_size(lua_State *L, int n, const int64_t *sizes);

/* x[key] for a non-string key and x[key] = v (lx_index.c). Stack: [tensor, key] and
 * [tensor, key, value].  [-0, +1, e] / [-0, +0, e] */
int lx_index_get(lua_State *L);
int lx_index_set(lua_State *L);
/* The slice metatable and the global `slice` (Python's builtin: slice(stop), slice(start, stop[,
 * step]), bounds integers, SymInts or nil), unless a global of that name exists.  [-0, +0, e] */
void lx_open_slice(lua_State *L);
/* Builds a cpu tensor from the nested Lua table (or number/boolean) at idx with dtype dt
 * (FX_DTYPE_UNDEFINED: inferred: any float -> float32, else any integer -> int64, else bool);
 * while tracing it becomes a lifted constant (fx_tracer_constant). Pushes it.  [-0, +1, e] */
void lx_tensor_from_lua(lua_State *L, int idx, fx_dtype dt);

/* The inputs of a run of program p (lx_export.c): its state and constants from the program, its
 * user inputs from the list at tidx (values as lx_to_ivalue reads them); with p NULL, the list as
 * it is (a Graph's placeholders). Raises FX_EARG when the list's length is not the program's
 * number of user inputs. Pushes the owning box and returns its array; *n = its length.
 * [-0, +1, e] */
fx_ivalue *lx_program_inputs(lua_State *L, const fx_program *p, int tidx, int *n);

/* ---- debugger sessions (lx_session.c; additions of the debugger issue) -------------------------- */
/* The tracer at idx (a "fxdb.Tracer" that is not finished), or raises (lx_export.c).  [-0, +0, e] */
fx_tracer *lx_check_tracer(lua_State *L, int idx);
/* What lx_export.c (the tracer) and lx_tensor.c (item(), tolist()) call in lx_session.c, which
 * sits above them. lx_open_session fills lx_session_hook once per process (pthread_once) with
 * lx_session.c's functions; fxlua_openlibs runs it before any Lua code, and nothing calls a
 * member before a state is open. The members never change afterwards. */
typedef struct lx_session_hooks {
    /* The SessionHook at idx, or raises.  [-0, +0, e] */
    lx_sess *(*check)(lua_State *L, int idx);
    /* The session's coroutine is now co (bound and about to run), or NULL (unbound).
     * [-0, +0, -] */
    void (*bound)(lx_sess *s, lua_State *co);
    /* The tracer's step callback for a session: queues n and asks the coroutine to pause at its
     * next instruction. Never raises (FX_ENOMEM in err when the queue cannot grow). */
    int (*on_node)(lx_sess *s, fx_node *n, fx_err *err);
    /* The shape environment recorded guard `index` (0-based; is_assert: runtime assert `index`,
     * torch._check) during the session's trace: queued between the nodes (h:take gives its
     * 1-based number, negated for an assert) and a pause is wanted. Never raises. */
    void (*on_guard)(lx_sess *s, int index, bool is_assert);
    /* A data-dependent read (`what`, e.g. "item()") of a real traced value in thread L: pauses
     * the session running L, if any.  [-0, +0, -] */
    void (*datadep)(lua_State *L, const char *what);
} lx_session_hooks;
extern lx_session_hooks lx_session_hook; /* defined in lx_aux.c, filled by lx_open_session */
/* Called by the Ctrl-C hook in thread L: LX_INTR_PAUSE (the caller yields: a session pauses),
 * LX_INTR_LATER (re-arm a count hook and try at the next instruction) or LX_INTR_RAISE.  */
enum { LX_INTR_RAISE = 0, LX_INTR_PAUSE, LX_INTR_LATER };
int lx_session_interrupt(lua_State *L, lua_Debug *ar);

#endif
