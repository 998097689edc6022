/* lua/lx_aux.c — shared machinery of the Lua binding: error objects, Lua locations, per-thread
 * dispatch state, argument checks, dtypes, fxlua_register, the debugger session hook table.
 * Layer: lua. The bottom of the lua/ file order (lua/lx_impl.h, docs/ARCHITECTURE.md §2):
 * everything here is called by the other lua/ files through lua/lx_impl.h; it calls none of
 * them. The userdata basics it used to hold (Tensor push/to/check, SymInt, ivalue <-> Lua,
 * lx_dispatch) are one step up, in lua/lx_udata.c; lua/lx_open.c, above them all, opens the
 * library.
 *
 * Registry layout (no C globals except the signal-safe interrupt list, see below):
 *   "fxdb.Error"    metatable of error objects (plain tables: message, kind, location, ...)
 *   "fxdb.dtype"    metatable of dtype userdata;  "fxdb.dtypes" = {[id+1] = dtype userdata}
 *   "fxdb.ivbox"    metatable of ivalue boxes (C arrays of fx_ivalue freed by __gc)
 *   "fxdb.threads"  weak-keyed {thread = lx_state box}: the state each bound coroutine uses
 *   "fxdb.eager"    the shared eager state box (main thread and every unbound coroutine)
 *   "fxdb.srccache" {file name = lx_srcfile userdata}: source lines for stack traces, read once
 *   [&g_memo_key]   the lx_srcmemo of the last files looked up in it
 * The lx_state of the running thread is also kept in the thread's LUA_EXTRASPACE (a pointer into
 * its box, which the registry keeps alive), so lx_current costs one load. */
#include <ctype.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "lua/lx_impl.h"

#define LX_IVBOX "fxdb.ivbox"
#define LX_THREADS "fxdb.threads"
#define LX_EAGER "fxdb.eager"
#define LX_DTYPES "fxdb.dtypes"
#define LX_SRCCACHE "fxdb.srccache"

/* ==== ivalue boxes ============================================================================ */

/* A userdata holding n ivalues that __gc clears: lets C code own ivalues across calls that may
 * raise (docs/CONTRIBUTING.md). Entries start as FX_IV_UNSET. */
typedef struct lx_ivbox {
    int n;         /* number of slots */
    fx_ivalue v[]; /* (n,) owned */
} lx_ivbox;

static int ivbox_gc(lua_State *L) {
    lx_ivbox *b = lx_checkudata(L, 1, LX_IVBOX);
    for (int i = 0; i < b->n; i++) fx_ivalue_clear(&b->v[i]);
    return 0;
}

/* Pushes a new box of n UNSET ivalues and returns its array.  [-0, +1, e] */
fx_ivalue *lx_ivbox_new(lua_State *L, int n) {
    if (n < 1) n = 1;
    lx_ivbox *b = lua_newuserdatauv(L, sizeof *b + (size_t)n * sizeof(fx_ivalue), 0);
    b->n = n;
    memset(b->v, 0, (size_t)n * sizeof(fx_ivalue)); /* FX_IV_UNSET == 0 */
    luaL_setmetatable(L, LX_IVBOX);                 /* [box] */
    return b->v;
}

/* lx_push_strbuf's protected part: [sb] -> its text. */
static int push_text(lua_State *L) {
    const fx_strbuf *sb = lua_touserdata(L, 1);
    if (sb->oom)
        lua_pushliteral(L, "<oom>");
    else
        lua_pushlstring(L, fx_strbuf_cstr(sb), sb->len);
    return 1;
}

void lx_push_strbuf(lua_State *L, fx_strbuf *sb) {
    lua_pushcfunction(L, push_text);
    lua_pushlightuserdata(L, sb);
    int rc = lua_pcall(L, 1, 1, 0);
    fx_strbuf_free(sb);
    if (rc != LUA_OK) lua_error(L);
}

/* ==== per-thread dispatch state ============================================================== */

/* Box of the eager state: the context lives inside, st.ctx points at it. */
typedef struct lx_eager_box {
    lx_state st;
    fx_ctx ctx;
} lx_eager_box;

/* Threads bound to a trace, remembered only so that fxlua_interrupt (called from a signal
 * handler, where the registry cannot be walked) can hook them. Like lua.c's globalL, this is the
 * one piece of C state outside the registry; it holds no references. */
static lua_State *volatile g_bound[LX_MAX_BOUND];

lua_State *lx_bound_thread(int i) { return g_bound[i]; }

static lx_state **extra_slot(lua_State *L) { return (lx_state **)lua_getextraspace(L); }

static lx_state *eager_state(lua_State *L) {
    lua_getfield(L, LUA_REGISTRYINDEX, LX_EAGER); /* [eager] */
    lx_eager_box *b = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return b ? &b->st : NULL;
}

lx_state *lx_current(lua_State *L) {
    lx_state *st = *extra_slot(L);
    if (st) return st;
    /* A thread created before fxlua_openlibs ran, or with a cleared slot: look it up. */
    lua_getfield(L, LUA_REGISTRYINDEX, LX_THREADS); /* [threads] */
    if (lua_istable(L, -1)) {
        lua_pushthread(L); /* [threads, co] */
        lua_rawget(L, -2); /* [threads, box|nil] */
        st = lua_touserdata(L, -1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (!st) st = eager_state(L);
    *extra_slot(L) = st;
    return st;
}

/* The state box of a bound thread; its __gc forgets the thread in g_bound, so a coroutine that is
 * collected without lx_unbind_thread leaves no stale pointer for fxlua_interrupt. */
#define LX_THREADBOX "fxdb.threadbox"
typedef struct lx_thread_box {
    lx_state st;   /* first: lx_current returns &box->st */
    lua_State *co; /* the bound thread (compared, never dereferenced, after it dies) */
} lx_thread_box;

static void forget_bound(lua_State *co) {
    for (int i = 0; i < LX_MAX_BOUND; i++)
        if (g_bound[i] == co) g_bound[i] = NULL;
}

static int threadbox_gc(lua_State *L) {
    lx_thread_box *b = lx_checkudata(L, 1, LX_THREADBOX);
    if (b->co) forget_bound(b->co);
    b->co = NULL;
    return 0;
}

/* Detaches the box currently bound to co (if any) from it, so its __gc does nothing.
 * Stack: [threads, co] -> [threads, co]. */
static void detach_old_box(lua_State *L) {
    lua_pushvalue(L, -1); /* [threads, co, co] */
    lua_rawget(L, -3);    /* [threads, co, box?] */
    lx_thread_box *old = luaL_testudata(L, -1, LX_THREADBOX);
    if (old) old->co = NULL;
    lua_pop(L, 1);
}

void lx_bind_thread(lua_State *L, lua_State *co, const lx_state *st) {
    lua_getfield(L, LUA_REGISTRYINDEX, LX_THREADS); /* [threads] */
    lua_pushthread(co);                             /* co: [co] */
    lua_xmove(co, L, 1);                            /* [threads, co] */
    detach_old_box(L);
    lx_thread_box *box = lua_newuserdatauv(L, sizeof *box, 0); /* [threads, co, box] */
    box->st = *st;
    box->st.tensor_mt = eager_state(L)->tensor_mt;
    box->st.dtype_mt = eager_state(L)->dtype_mt;
    box->st.cache_ref = eager_state(L)->cache_ref;
    box->st.mt_ref = eager_state(L)->mt_ref;
    box->st.slots = eager_state(L)->slots;
    box->co = co;
    luaL_setmetatable(L, LX_THREADBOX);
    lua_rawset(L, -3); /* [threads] */
    lua_pop(L, 1);
    *extra_slot(co) = &box->st;
    for (int i = 0; i < LX_MAX_BOUND; i++)
        if (g_bound[i] == NULL || g_bound[i] == co) {
            g_bound[i] = co;
            break;
        }
}

void lx_unbind_thread(lua_State *L, lua_State *co) {
    forget_bound(co);
    *extra_slot(co) = eager_state(L);
    lua_getfield(L, LUA_REGISTRYINDEX, LX_THREADS); /* [threads] */
    lua_pushthread(co);
    lua_xmove(co, L, 1); /* [threads, co] */
    detach_old_box(L);
    lua_pushnil(L);    /* [threads, co, nil] */
    lua_rawset(L, -3); /* [threads] */
    lua_pop(L, 1);
}

/* ==== Lua locations ========================================================================== */

/* Where lx_where copies its strings; valid until the next call (documented in lx_impl.h). */
static char g_where_pool[8192];

static bool is_embedded_source(const char *src) { return !strncmp(src, "=[fxdb ", 7); }

/* Copies s (at most n bytes) into the pool; returns the copy or "" when the pool is full. */
static char *pool_dup(size_t *used, const char *s, size_t n) {
    if (*used + n + 1 > sizeof g_where_pool) return (char *)"";
    char *d = g_where_pool + *used;
    memcpy(d, s, n);
    d[n] = 0;
    *used += n + 1;
    return d;
}

/* A source file read for stack traces: its text and where each line starts. The srccache maps
 * the file name to this userdata (user value 1 anchors the text); text is NULL when the file
 * could not be read. */
typedef struct lx_srcfile {
    const char *text;
    const char *name; /* the file name, stored after off[] */
    int nlines;
    size_t off[]; /* (nlines + 1,) line k (1-based) is text[off[k-1] .. off[k] - 1), newline cut */
} lx_srcfile;

/* The last files looked up (kept alive by the srccache), so a frame costs a few strcmp instead of
 * registry lookups. One per Lua state, in the registry at &g_memo_key. */
#define SRC_MEMO 8
/* Function names of frames: Lua derives a frame's name from the calling instruction, searching
 * the caller's bytecode from its start (lua_getinfo "n", the dearest part of a location). The
 * name depends only on the call site, so it is kept per (callee, caller, caller's line) — the
 * closures compared by address, the cache emptied at every new trace (lx_where_reset) so no
 * closure can die and be replaced at the same address while its entries are used. */
#define NAME_CACHE 512
typedef struct lx_name_entry {
    const void *callee, *caller; /* NULL callee = empty */
    int line;
    bool has_name;
    char name[46];
} lx_name_entry;

/* ==== call sites (the fast path of lx_where) ====================================================
 * A frame's location (file, line, source line) depends only on the instruction its function is
 * suspended at, and the name Lua gives a function only on its caller's call instruction (its
 * caller's flags aside: a tail call has no name, a call from a hook is "?", from a finalizer
 * "__gc"). Lua's public API gives neither the instruction nor the flags without the costly parts
 * of lua_getinfo (the line is a walk of the function's line deltas, the name a symbolic
 * execution of the caller's bytecode), so the fast path reads them from the CallInfo that
 * lua_Debug.i_ci points to: its first fields, as Lua 5.4's lstate.h lays them out. A probe run
 * once per Lua state when the library opens (probe_layout) checks that layout against
 * lua_getstack/lua_getinfo; when it does not hold (another Lua release), lx_where takes the slow
 * path (where_walk), which gives the same frames through the public API; it does too when a
 * cache miss cannot be filled (no memory).
 *
 * The cache maps an instruction address (CallInfo savedpc) to its site: the kind of frame, and
 * for the user's frames the file, line and trimmed source line; lazily, the name of the function
 * the instruction calls. An instruction address means the same while its function prototype
 * lives, and a prototype is freed only by a garbage collection cycle, so the cache is emptied
 * when a collection has run since it was filled: a collection clears the sentinel of a weak
 * table (user value 1 of the memo), which where_fast looks at first. The sentinel must be made
 * anew each time (lx_where_arm) and held by nothing else: in generational mode (fxdb's) a minor
 * collection frees young functions but never an old object, so a sentinel that had aged (kept
 * in a strong list until needed) stayed while a collected function's addresses were reused,
 * and its successor got the old site's file, line and code. A new object held only weakly goes
 * at the very next collection, minor or major. Making one allocates, which where_fast may not
 * (it runs inside dispatch), so a cleared sentinel leaves the slow path in use until the next
 * safe point re-arms it: a trace's start (lx_where_reset) and the binding's call of each traced
 * op, before dispatch (lx_where_need_arm). The cache keeps nothing alive; its strings are in
 * malloc'd chunks. It is emptied too when full. Filling it never raises and runs no Lua code (so no hook), since lx_where runs
 * inside dispatch. */
#if LUA_VERSION_NUM == 504
typedef struct lx_ci54 {
    void *func, *top;
    struct lx_ci54 *previous, *next;
    union {
        struct {
            const void *savedpc;
            int trap, nextraargs;
        } l;
        struct {
            void *k;
            ptrdiff_t old_errfunc;
            intptr_t ctx;
        } c;
    } u;
    int u2;
    short nresults;
    unsigned short callstatus;
} lx_ci54;
#define CI54_C (1u << 1)      /* a C function */
#define CI54_HOOKED (1u << 3) /* running a hook */
#define CI54_TAIL (1u << 5)   /* tail-called */
#define CI54_FIN (1u << 7)    /* a finalizer */
#endif

enum { SITE_SKIP, SITE_USER, SITE_MODCALL };
typedef struct lx_site {
    const void *pc; /* key: the suspended instruction (NULL = empty slot) */
    unsigned char kind;
    bool main;       /* the chunk's main function ("<module>" when it has no name) */
    bool name_known; /* callname was looked up */
    int line;
    const char *file, *code; /* SITE_USER: strings in the memo's chunks */
    const char *callname;    /* name of the function this instruction calls (NULL: none) */
} lx_site;

#define SITE_CAP 2048 /* a power of two; emptied when 3/4 full */
#define SITE_CHUNK 16384

typedef struct lx_srcmemo {
    lx_name_entry names[NAME_CACHE]; /* the slow path's */
    lx_srcfile *sf[SRC_MEMO];
    int next;
    bool fast; /* the CallInfo layout holds (probe_layout, when the library is opened) */
    int nsites;
    lx_site sites[SITE_CAP];
    bool armed;  /* a sentinel is set: a garbage collection cycle would be seen */
    char *chunk; /* the newest chunk of the sites' strings (its first word: the one before) */
    size_t chunk_used, chunk_cap;
} lx_srcmemo;
static const char g_memo_key = 0;

/* Reads `file` into a new srccache entry. Stack: [cache] -> [cache]. Never NULL (may raise on
 * out-of-memory, as any Lua allocation). */
static lx_srcfile *load_source(lua_State *L, const char *file) {
    lua_pushstring(L, file); /* [cache, name] */
    FILE *f = fopen(file, "rb");
    if (f) {
        luaL_Buffer b;
        luaL_buffinit(L, &b); /* [cache, name, buf...] */
        size_t n;
        char chunk[4096];
        while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) luaL_addlstring(&b, chunk, n);
        fclose(f);
        luaL_pushresult(&b); /* [cache, name, text] */
    } else {
        lua_pushnil(L); /* [cache, name, nil] */
    }
    size_t len = 0;
    const char *text = f ? lua_tolstring(L, -1, &len) : NULL;
    int nl = 0;
    for (const char *p = text; p && (p = memchr(p, '\n', len - (size_t)(p - text))); p++) nl++;
    int nlines = text ? nl + 1 : 0;
    size_t namelen = strlen(file), offbytes = sizeof(size_t) * (size_t)(nlines + 1);
    lx_srcfile *sf = lua_newuserdatauv(L, sizeof *sf + offbytes + namelen + 1, 1);
    sf->text = text;
    sf->name = memcpy((char *)sf->off + offbytes, file, namelen + 1);
    sf->nlines = nlines;
    sf->off[0] = 0;
    for (int k = 1; k <= nlines; k++) {
        const char *nlp = memchr(text + sf->off[k - 1], '\n', len - sf->off[k - 1]);
        sf->off[k] = nlp ? (size_t)(nlp - text) + 1 : len + 1;
    }
    lua_insert(L, -2);           /* [cache, name, sf, text] */
    lua_setiuservalue(L, -2, 1); /* [cache, name, sf] */
    lua_rawset(L, -3);           /* [cache] */
    return sf;
}

/* The srccache entry of file, read on first use. */
static lx_srcfile *source_file(lua_State *L, lx_srcmemo *memo, const char *file) {
    for (int i = 0; i < SRC_MEMO; i++)
        if (memo->sf[i] && !strcmp(memo->sf[i]->name, file)) return memo->sf[i];
    lx_srcfile *sf = NULL;
    lua_getfield(L, LUA_REGISTRYINDEX, LX_SRCCACHE); /* [cache] */
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        return NULL;
    }
    lua_pushstring(L, file);
    if (lua_rawget(L, -2) == LUA_TUSERDATA) { /* [cache, sf] */
        sf = lua_touserdata(L, -1);
        lua_pop(L, 1);
    } else {
        lua_pop(L, 1);
        sf = load_source(L, file);
    }
    lua_pop(L, 1); /* [] */
    memo->sf[memo->next] = sf;
    memo->next = (memo->next + 1) % SRC_MEMO;
    return sf;
}

/* Line `line` (1-based) of text; sets *len. NULL when the text has fewer lines. */
static const char *find_line(const char *text, size_t tlen, int line, size_t *len) {
    const char *p = text, *end = text + tlen;
    for (int l = 1; l < line; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return NULL;
        p = nl + 1;
    }
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    *len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    return p;
}

/* Line `line` of a chunk's source (source and srclen as lua_getinfo's "S" gives them), trimmed;
 * sets *len. "" when the text is not known (a "=name" chunk, an unreadable file). */
static const char *source_code(lua_State *L, lx_srcmemo *memo, const char *source, size_t srclen,
                               int line, size_t *len) {
    size_t llen = 0;
    const char *lp = NULL;
    if (source[0] == '@') {
        lx_srcfile *sf = memo ? source_file(L, memo, source + 1) : NULL;
        if (sf && sf->text && line >= 1 && line <= sf->nlines) {
            lp = sf->text + sf->off[line - 1];
            llen = sf->off[line] - 1 - sf->off[line - 1];
        }
    } else if (source[0] != '=') {
        lp = find_line(source, srclen, line, &llen);
    }
    if (!lp) {
        *len = 0;
        return "";
    }
    while (llen && isspace((unsigned char)*lp)) lp++, llen--;
    while (llen && isspace((unsigned char)lp[llen - 1])) llen--;
    *len = llen;
    return lp;
}

/* Fills fr from a Lua source position: file name, line, function name, trimmed source line. */
static void make_frame(lua_State *L, lx_srcmemo *memo, size_t *used, fx_frame *fr,
                       const char *source, size_t srclen, const char *file, int line,
                       const char *fn) {
    fr->file = pool_dup(used, file, strlen(file));
    fr->line = line;
    fr->func = pool_dup(used, fn, strlen(fn));
    size_t llen;
    const char *lp = source_code(L, memo, source, srclen, line, &llen);
    fr->code = pool_dup(used, lp, llen);
}

/* The call site nn.lua saved for the k-th module call from the top of nn._module_stack (the
 * caller's frame was removed by a tail call: `return self.lin(x)`). Adds it as a frame. */
static bool add_site_frame(lua_State *L, lx_srcmemo *memo, size_t *used, fx_frame *fr, int k) {
    bool ok = false;
    int top = lua_gettop(L);
    lua_pushglobaltable(L); /* [G] */
    lua_pushliteral(L, "nn");
    if (lua_rawget(L, -2) == LUA_TTABLE) { /* [G, nn] */
        lua_pushliteral(L, "_module_stack");
        if (lua_rawget(L, -2) == LUA_TTABLE) { /* [G, nn, stack] */
            lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
            if (n - k + 1 >= 1 && lua_rawgeti(L, -1, n - k + 1) == LUA_TTABLE) { /* [.., entry] */
                lua_pushliteral(L, "site");
                if (lua_rawget(L, -2) == LUA_TTABLE) { /* [.., entry, site] */
                    lua_pushliteral(L, "file");
                    lua_rawget(L, -2);
                    lua_pushliteral(L, "line");
                    lua_rawget(L, -3);
                    lua_pushliteral(L, "func");
                    lua_rawget(L, -4); /* [.., site, file, line, func] */
                    const char *file = lua_tostring(L, -3);
                    int line = (int)lua_tointeger(L, -2);
                    const char *fn = lua_isstring(L, -1) ? lua_tostring(L, -1) : "?";
                    if (file && line > 0) {
                        char src[FX_ERR_SHORT + 1];
                        snprintf(src, sizeof src, "@%s", file);
                        make_frame(L, memo, used, fr, src, 0, file, line, fn);
                        ok = true;
                    }
                }
            }
        }
    }
    lua_settop(L, top);
    return ok;
}

/* The name Lua gives the function running at `level` (ar filled by "Sft"; callee its closure):
 * lua_getinfo's "n", through the name cache. NULL when Lua has none. The caller's current line,
 * which the cache key needs, is left in *caller_line (-1: not known), so the caller's own frame
 * does not look it up again. */
static const char *frame_name(lua_State *L, lx_srcmemo *memo, int level, lua_Debug *ar,
                              const void *callee, int *caller_line) {
    *caller_line = -1;
    if (ar->istailcall) return NULL; /* Lua knows no name for a tail-called frame */
    lua_Debug car;
    const void *caller = NULL;
    int line = -1;
    if (lua_getstack(L, level + 1, &car) && lua_getinfo(L, "fl", &car)) {
        caller = lua_topointer(L, -1);
        line = car.currentline;
        *caller_line = line;
        lua_pop(L, 1);
    }
    uintptr_t h = (uintptr_t)callee * 31u + (uintptr_t)caller * 17u + (uintptr_t)line;
    lx_name_entry *e = &memo->names[(h ^ (h >> 13)) % NAME_CACHE];
    if (e->callee == callee && e->caller == caller && e->line == line)
        return e->has_name ? e->name : NULL;
    if (!lua_getinfo(L, "n", ar)) return NULL;
    size_t len = ar->name ? strlen(ar->name) : 0;
    if (len < sizeof e->name) { /* longer names are not cached */
        e->callee = callee;
        e->caller = caller;
        e->line = line;
        e->has_name = ar->name != NULL;
        memcpy(e->name, ar->name ? ar->name : "", len + 1);
    }
    return ar->name;
}

bool lx_source_line(lua_State *L, const char *file, int k, char *buf, size_t cap) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &g_memo_key);
    lx_srcmemo *memo = lua_touserdata(L, -1);
    lua_pop(L, 1);
    lx_srcfile *sf = memo && cap ? source_file(L, memo, file) : NULL;
    if (!sf || !sf->text || k < 1 || k > sf->nlines) return false;
    const char *lp = sf->text + sf->off[k - 1];
    size_t len = sf->off[k] - 1 - sf->off[k - 1];
    while (len && isspace((unsigned char)*lp)) lp++, len--;
    while (len && isspace((unsigned char)lp[len - 1])) len--;
    if (len >= cap) len = cap - 1;
    memcpy(buf, lp, len);
    buf[len] = 0;
    return true;
}

bool lx_user_frame(lua_State *L, lua_Debug *ar) {
    for (int level = 0; lua_getstack(L, level, ar); level++) {
        if (!lua_getinfo(L, "Sl", ar)) return false;
        if (strcmp(ar->what, "C") && ar->source && !is_embedded_source(ar->source)) return true;
    }
    return false;
}

/* lx_where through the public debug API: every level's lua_getinfo. */
static int where_walk(lua_State *L, fx_frame *frames, int max) {
    size_t used = 0;
    int n = 0, ncalls = 0;
    if (!lua_checkstack(L, 8)) return 0;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &g_memo_key);
    lx_srcmemo *memo = lua_touserdata(L, -1);
    lua_pop(L, 1); /* anchored by the registry */
    lua_getfield(L, LUA_REGISTRYINDEX, "fxdb.module_call"); /* [callfn] */
    int callfn = lua_gettop(L);
    lua_Debug ar;
    int known_line = -1; /* the current line of this level, when frame_name found it as a caller */
    for (int level = 0; n < max && lua_getstack(L, level, &ar); level++) {
        int line = known_line;
        known_line = -1;
        /* "S", "f" and "t" are cheap; "l" and "n" (the caller's bytecode is searched for the
         * name) only for the frames kept */
        if (!lua_getinfo(L, "Sft", &ar)) continue; /* [callfn, f] */
        bool is_call = lua_rawequal(L, -1, callfn);
        const void *callee = lua_topointer(L, -1);
        lua_pop(L, 1);
        if (is_call) {
            ncalls++;
            if (ar.istailcall && add_site_frame(L, memo, &used, &frames[n], ncalls)) n++;
            continue;
        }
        if (!strcmp(ar.what, "C") || !ar.source) continue;
        if (is_embedded_source(ar.source)) continue;
        if (line < 0) line = lua_getinfo(L, "l", &ar) ? ar.currentline : -1;
        if (line < 1) continue;
        const char *file = ar.short_src;
        if (ar.source[0] == '@' || ar.source[0] == '=') file = ar.source + 1;
        const char *name = memo ? frame_name(L, memo, level, &ar, callee, &known_line)
                                : (lua_getinfo(L, "n", &ar) ? ar.name : NULL);
        const char *fn = name ? name : !strcmp(ar.what, "main") ? "<module>" : "?";
        make_frame(L, memo, &used, &frames[n++], ar.source, ar.srclen, file, line, fn);
    }
    lua_pop(L, 1); /* [] */
    return n;
}

#if LUA_VERSION_NUM == 504
/* ---- the fast path ---- */

static lx_site *site_slot(lx_srcmemo *memo, const void *pc) {
    uint64_t h = (uint64_t)(uintptr_t)pc * 0x9E3779B97F4A7C15u;
    for (unsigned i = (unsigned)(h >> 40) & (SITE_CAP - 1);; i = (i + 1) & (SITE_CAP - 1))
        if (memo->sites[i].pc == pc || !memo->sites[i].pc) return &memo->sites[i];
}

/* Empties the site cache and frees its string chunks; empties the slow path's name cache too,
 * since a collection (which is when this runs) may have freed the closures it is keyed by. */
static void sites_reset(lx_srcmemo *memo) {
    memset(memo->names, 0, sizeof memo->names);
    memset(memo->sites, 0, sizeof memo->sites);
    memo->nsites = 0;
    for (char *c = memo->chunk, *prev; c; c = prev) {
        memcpy(&prev, c, sizeof prev);
        free(c);
    }
    memo->chunk = NULL;
    memo->chunk_used = memo->chunk_cap = 0;
}

bool lx_where_need_arm;

static int memo_gc(lua_State *L) {
    sites_reset(lua_touserdata(L, 1));
    return 0;
}

/* Sets a new sentinel (the memo at idx) when there is none, emptying the sites when a collection
 * cleared the one they were filled under.  [-0, +0, m] */
static void arm(lua_State *L, lx_srcmemo *memo, int idx) {
    lua_getiuservalue(L, idx, 1);                /* [weak] */
    if (lua_rawgeti(L, -1, 1) == LUA_TNIL) {     /* [weak, sentinel?] */
        sites_reset(memo);
        lua_newtable(L);
        lua_rawseti(L, -3, 1); /* only this weak reference holds it */
    }
    lua_pop(L, 2);
    memo->armed = true;
    lx_where_need_arm = false;
}

/* Whether the sites may be used (the memo at idx): a garbage collection since the sentinel was
 * set empties them, and until a safe point sets a new one (lx_where_need_arm) they are not used.
 * No allocation. */
static bool sites_armed(lua_State *L, lx_srcmemo *memo, int idx) {
    if (!memo->armed) return false;
    lua_getiuservalue(L, idx, 1);                     /* [weak] */
    bool cleared = lua_rawgeti(L, -1, 1) == LUA_TNIL; /* [weak, sentinel?] */
    lua_pop(L, 2);
    if (cleared) {
        sites_reset(memo);
        memo->armed = false;
        lx_where_need_arm = true;
    }
    return !cleared;
}

/* A copy of s (n bytes) in the memo's chunks; NULL when malloc fails. */
static const char *site_strdup(lx_srcmemo *memo, const char *s, size_t n) {
    if (memo->chunk_used + n + 1 > memo->chunk_cap) {
        size_t cap = n + 1 + sizeof(char *) > SITE_CHUNK ? n + 1 + sizeof(char *) : SITE_CHUNK;
        char *c = malloc(cap);
        if (!c) return NULL;
        memcpy(c, &memo->chunk, sizeof memo->chunk);
        memo->chunk = c;
        memo->chunk_used = sizeof(char *);
        memo->chunk_cap = cap;
    }
    char *d = memo->chunk + memo->chunk_used;
    memcpy(d, s, n);
    d[n] = 0;
    memo->chunk_used += n + 1;
    return d;
}

/* The site of the frame at `level` (suspended at pc), made and cached; NULL when it cannot be
 * made (a full cache, no memory). Raw accesses and lua_getinfo only (L has stack room). */
static lx_site *site_fill(lua_State *L, lx_srcmemo *memo, int level, const void *pc) {
    lua_Debug ar;
    if (memo->nsites >= SITE_CAP - 1 || !lua_getstack(L, level, &ar) ||
        !lua_getinfo(L, "Slf", &ar)) /* [f] */
        return NULL;
    lua_getfield(L, LUA_REGISTRYINDEX, "fxdb.module_call"); /* [f, callfn] */
    bool is_call = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    lx_site site = {
        .pc = pc, .kind = SITE_SKIP, .line = ar.currentline, .main = !strcmp(ar.what, "main")};
    if (is_call) {
        site.kind = SITE_MODCALL;
    } else if (strcmp(ar.what, "C") && ar.source && !is_embedded_source(ar.source) &&
               ar.currentline >= 1) {
        const char *file = ar.short_src;
        if (ar.source[0] == '@' || ar.source[0] == '=') file = ar.source + 1;
        size_t len;
        const char *code = source_code(L, memo, ar.source, ar.srclen, ar.currentline, &len);
        site.kind = SITE_USER;
        site.code = site_strdup(memo, code, len);
        site.file = site_strdup(memo, file, strlen(file));
        if (!site.code || !site.file) return NULL;
    }
    lx_site *slot = site_slot(memo, pc);
    *slot = site;
    memo->nsites++;
    return slot;
}

/* The name Lua gives the function at `level`, which its caller's site cs keeps (filled on first
 * use); false when it cannot be made. */
static bool site_callname(lua_State *L, lx_srcmemo *memo, int level, lx_site *cs) {
    if (!cs->name_known) {
        lua_Debug ar;
        if (!lua_getstack(L, level, &ar) || !lua_getinfo(L, "n", &ar)) return false;
        cs->callname = ar.name ? site_strdup(memo, ar.name, strlen(ar.name)) : NULL;
        if (ar.name && !cs->callname) return false;
        cs->name_known = true;
    }
    return true;
}

/* lx_where through the call-site cache (the memo at idx, the top of L's stack); -1 when it cannot
 * tell (no sentinel, a failed fill: where_walk then). */
static int where_fast(lua_State *L, lx_srcmemo *memo, int idx, fx_frame *frames, int max) {
    if (!lua_checkstack(L, 8)) return -1;
    if (memo->nsites > SITE_CAP / 4 * 3) sites_reset(memo);
    if (!sites_armed(L, memo, idx)) return -1;
    lua_Debug ar;
    if (!lua_getstack(L, 0, &ar)) return 0;
    size_t used = 0;
    int n = 0, ncalls = 0, level = 0;
    for (const lx_ci54 *ci = (const lx_ci54 *)ar.i_ci; n < max && ci->previous;
         ci = ci->previous, level++) {
        if (ci->callstatus & CI54_C) continue;
        const void *pc = ci->u.l.savedpc;
        lx_site *site = site_slot(memo, pc);
        if (!site->pc && !(site = site_fill(L, memo, level, pc))) return -1;
        if (site->kind == SITE_MODCALL) {
            ncalls++;
            if ((ci->callstatus & CI54_TAIL) && add_site_frame(L, memo, &used, &frames[n], ncalls))
                n++;
            continue;
        }
        if (site->kind != SITE_USER) continue;
        /* the name: from the caller's call instruction, as lua_getinfo's "n" finds it */
        const char *name = NULL;
        const lx_ci54 *caller = ci->previous;
        if (ci->callstatus & CI54_TAIL) {
            name = NULL; /* Lua knows no name for a tail-called frame */
        } else if (caller->callstatus & (CI54_HOOKED | CI54_FIN)) {
            lua_Debug nar; /* called by a hook or as a finalizer: not a call site's name */
            name = lua_getstack(L, level, &nar) && lua_getinfo(L, "n", &nar) ? nar.name : NULL;
        } else if (!(caller->callstatus & CI54_C)) {
            const void *cpc = caller->u.l.savedpc;
            lx_site *cs = site_slot(memo, cpc);
            if (!cs->pc && !(cs = site_fill(L, memo, level + 1, cpc))) return -1;
            if (!site_callname(L, memo, level, cs)) return -1;
            name = cs->callname;
        }
        frames[n++] = (fx_frame){.file = site->file,
                                 .line = site->line,
                                 .code = site->code,
                                 .func = name         ? name
                                         : site->main ? "<module>"
                                                      : "?"};
    }
    return n;
}

/* Checks lx_ci54 against the CallInfo of this Lua: called from probe_chunk's main function at
 * three lines (k = 1, 2, 3, the last twice) and from a tail-called function (k = 4), each at line
 * 1 + k. [k] -> []. */
static int probe_call(lua_State *L) {
    const void **pcs = lua_touserdata(L, lua_upvalueindex(1)); /* [ok, pc1, pc2, pc3, pc3'] */
    int k = (int)lua_tointeger(L, 1);
    lua_Debug a0, a1;
    bool ok = lua_getstack(L, 0, &a0) && lua_getstack(L, 1, &a1) && lua_getinfo(L, "t", &a0) &&
              lua_getinfo(L, "Slt", &a1);
    const lx_ci54 *c0 = ok ? (const lx_ci54 *)a0.i_ci : NULL,
                  *c1 = ok ? (const lx_ci54 *)a1.i_ci : NULL;
    ok = ok && c0->previous == c1 && c1->next == c0 && (c0->callstatus & CI54_C) &&
         !(c0->callstatus & CI54_TAIL) && !a0.istailcall && !(c1->callstatus & CI54_C) &&
         !!(c1->callstatus & CI54_TAIL) == !!a1.istailcall && !!a1.istailcall == (k == 4) &&
         a1.currentline == 1 + k && !strcmp(a1.what, k == 4 ? "Lua" : "main");
    if (ok && k <= 3) pcs[k == 3 && pcs[3] ? 4 : k] = c1->u.l.savedpc;
    if (!ok) pcs[0] = NULL;
    return 0;
}

static const char probe_chunk[] = "local call = ...\n"
                                  "call(1)\n"
                                  "call(2)\n"
                                  "for _ = 1, 2 do call(3) end\n"
                                  "local function f() call(4) end\n"
                                  "return f()\n";

/* Whether lx_ci54 is this Lua's CallInfo layout: probe_call sees the call chain, the C and tail
 * flags as lua_getstack/lua_getinfo do, and one savedpc per call instruction. */
static bool probe_layout(lua_State *L) {
    const void *pcs[5] = {&pcs, NULL, NULL, NULL, NULL};
    int top = lua_gettop(L);
    bool ok = lua_checkstack(L, 4) &&
              luaL_loadbuffer(L, probe_chunk, sizeof probe_chunk - 1, "=probe") == LUA_OK;
    if (ok) {
        lua_pushlightuserdata(L, pcs);
        lua_pushcclosure(L, probe_call, 1);
        ok = lua_pcall(L, 1, 0, 0) == LUA_OK;
    }
    lua_settop(L, top);
    return ok && pcs[0] && pcs[1] && pcs[2] && pcs[3] && pcs[1] != pcs[2] && pcs[2] != pcs[3] &&
           pcs[3] == pcs[4] && (const char *)pcs[1] < (const char *)pcs[2] &&
           (const char *)pcs[2] < (const char *)pcs[3] &&
           (const char *)pcs[3] - (const char *)pcs[1] < 256;
}
#endif

void lx_where_reset(lua_State *L) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &g_memo_key); /* [memo] */
    lx_srcmemo *memo = lua_touserdata(L, -1);
    if (memo) memset(memo->names, 0, sizeof memo->names);
#if LUA_VERSION_NUM == 504
    if (memo && memo->fast) arm(L, memo, lua_gettop(L));
#endif
    lua_pop(L, 1);
}

void lx_where_arm(lua_State *L) {
#if LUA_VERSION_NUM == 504
    lua_rawgetp(L, LUA_REGISTRYINDEX, &g_memo_key); /* [memo] */
    lx_srcmemo *memo = lua_touserdata(L, -1);
    if (memo && memo->fast) arm(L, memo, lua_gettop(L));
    lua_pop(L, 1);
#else
    (void)L;
#endif
}

int lx_where(lua_State *L, fx_frame *frames, int max) {
#if LUA_VERSION_NUM == 504
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &g_memo_key) == LUA_TUSERDATA) { /* [memo] */
        lx_srcmemo *memo = lua_touserdata(L, -1);
        int n = memo->fast ? where_fast(L, memo, lua_gettop(L), frames, max) : -1;
        lua_pop(L, 1);
        if (n >= 0) return n;
    } else {
        lua_pop(L, 1);
    }
#endif
    return where_walk(L, frames, max);
}

/* Pushes frames[0..n) as one "file:line func | code" line each. */
static void push_frames(lua_State *L, const fx_frame *frames, int n) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 0; i < n; i++) {
        lua_pushfstring(L, "%s:%d %s | %s\n", frames[i].file, frames[i].line, frames[i].func,
                        frames[i].code);
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
}

/* fxdb._where_paths() -> fast, slow: the frames of the calling Lua code as lx_where's two paths
 * give them (push_frames lines; fast is nil when this Lua's CallInfo layout is not the one the
 * fast path reads), for tests that compare them. Sets a new sentinel first when there is none. */
static int l_where_paths(lua_State *L) {
    fx_frame frames[16];
    int n = -1;
#if LUA_VERSION_NUM == 504
    lua_rawgetp(L, LUA_REGISTRYINDEX, &g_memo_key); /* [memo] */
    lx_srcmemo *memo = lua_touserdata(L, -1);
    if (memo && memo->fast) {
        arm(L, memo, lua_gettop(L));
        n = where_fast(L, memo, lua_gettop(L), frames, 16);
    }
    lua_pop(L, 1);
#endif
    if (n >= 0)
        push_frames(L, frames, n);
    else
        lua_pushnil(L);
    push_frames(L, frames, where_walk(L, frames, 16));
    return 2;
}

/* ==== errors ================================================================================= */

/* The machine-readable kind of an error without an explicit one. */
static const char *kind_of_status(int code) {
    switch (code) {
    case FX_ENOMEM: return "out_of_memory";
    case FX_ESHAPE: return "shape";
    case FX_ETYPE: return "dtype";
    case FX_EINDEX: return "index";
    case FX_EARG: return "argument";
    case FX_EEXPORT: return "export";
    case FX_EDATADEP: return "data_dependent";
    case FX_EIO: return "io";
    case FX_ENOTIMPL: return "not_implemented";
    case FX_EINTERNAL: return "internal";
    case FX_EINTR: return "interrupted";
    default: return "error";
    }
}

static void set_str_field(lua_State *L, const char *name, const char *s) {
    if (s && s[0]) {
        lua_pushstring(L, s);
        lua_setfield(L, -2, name);
    }
}

/* Adds `module` and `module_class` from the innermost entry of nn._module_stack, if any.
 * [-0, +0, -] on the error table at the top. */
static void add_module_fields(lua_State *L) {
    int top = lua_gettop(L);                                  /* [err] */
    if (lua_getglobal(L, "nn") == LUA_TTABLE &&               /* [err, nn] */
        lua_getfield(L, -1, "_module_stack") == LUA_TTABLE) { /* [err, nn, stack] */
        lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
        if (n > 0 && lua_rawgeti(L, -1, n) == LUA_TTABLE) { /* [err, nn, stack, entry] */
            lua_getfield(L, -1, "path");                    /* [.., entry, path] */
            lua_setfield(L, top, "module");
            lua_getfield(L, -1, "cls");
            lua_setfield(L, top, "module_class");
        }
    }
    lua_settop(L, top); /* [err] */
}

/* Set when an op failed with FX_EINTR (a kernel stopped for Ctrl-C) and that error is raised:
 * the Lua hook armed by the same Ctrl-C then does not raise a second time. */
static volatile sig_atomic_t g_intr_reported;

/* 1 while a debugger session is open (lua/session.lua sets it through fxdb._set_session_open). */
static volatile sig_atomic_t g_session_open;

bool fxlua_session_open(void) { return g_session_open != 0; }

static int l_set_session_open(lua_State *L) {
    g_session_open = lua_toboolean(L, 1) ? 1 : 0;
    return 0;
}

bool lx_take_interrupt_reported(void) {
    bool was = g_intr_reported != 0;
    g_intr_reported = 0;
    return was;
}

int fxlua_error(lua_State *L, const fx_err *err) {
    fx_err e = *err;
    if (e.code == FX_EINTR) g_intr_reported = 1;
    if (!e.loc[0]) {
        fx_frame fr[1];
        if (lx_where(L, fr, 1) == 1) {
            snprintf(e.loc, sizeof e.loc, "%s:%d", fr[0].file, fr[0].line);
            snprintf(e.source, sizeof e.source, "%s", fr[0].code);
        }
    }
    lua_createtable(L, 0, 9); /* [err] */
    lua_pushstring(L, e.msg[0] ? e.msg : fx_status_name(e.code));
    lua_setfield(L, -2, "message");
    lua_pushstring(L, e.kind[0] ? e.kind : kind_of_status(e.code));
    lua_setfield(L, -2, "kind");
    lua_pushstring(L, fx_status_name(e.code));
    lua_setfield(L, -2, "code");
    set_str_field(L, "location", e.loc);
    set_str_field(L, "source", e.source);
    set_str_field(L, "node", e.node);
    set_str_field(L, "hint", e.hint);
    add_module_fields(L);
    luaL_setmetatable(L, LX_ERROR); /* [err] */
    return lua_error(L);
}

int lx_error(lua_State *L, fx_err *err) {
    if (!err->loc[0]) {
        fx_frame fr[1];
        if (lx_where(L, fr, 1) == 1) {
            snprintf(err->loc, sizeof err->loc, "%s:%d", fr[0].file, fr[0].line);
            snprintf(err->source, sizeof err->source, "%s", fr[0].code);
        }
    }
    return fxlua_error(L, err);
}

/* Raises an fxdb error of the given code/kind with a formatted message.  [-0, +0, e] */
int lx_errorf(lua_State *L, int code, const char *kind, const char *fmt, ...) {
    fx_err e;
    fx_err_clear(&e);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    e.code = code;
    if (kind) fx_err_kind(&e, kind);
    return lx_error(L, &e);
}

/* __tostring of error objects: the message, as docs/API.md §8 says.  [-0, +1, -] */
static int error_tostring(lua_State *L) {
    if (lua_type(L, 1) == LUA_TTABLE && lua_getfield(L, 1, "message") == LUA_TSTRING) return 1;
    lua_pushstring(L, "fxdb error");
    return 1;
}

/* ==== argument checks ========================================================================= */

/* The name the running C function was called by ("?" when unknown); *method when it was called
 * as a method (x:f()). */
static const char *called_name(lua_State *L, bool *method) {
    lua_Debug ar;
    *method = false;
    if (!lua_getstack(L, 0, &ar)) return "?";
    lua_getinfo(L, "nf", &ar); /* [f] */
    *method = ar.namewhat && !strcmp(ar.namewhat, "method");
    if (ar.name) {
        lua_pop(L, 1);
        return ar.name;
    }
    /* called through pcall or a local: find it among the public tables, as lauxlib looks in
     * package.loaded */
    static const char *const tables[] = {"fxdb", "torch", "nn", NULL};
    static char found[96];
    const char *name = "?";
    for (int i = 0; tables[i] && name[0] == '?'; i++) {
        if (lua_getglobal(L, tables[i]) == LUA_TTABLE) { /* [f, t] */
            lua_pushnil(L);
            while (lua_next(L, -2)) { /* [f, t, k, v] */
                if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, -4)) {
                    snprintf(found, sizeof found, "%s.%s", tables[i], lua_tostring(L, -2));
                    name = found;
                    lua_pop(L, 2);
                    break;
                }
                lua_pop(L, 1);
            }
        }
        lua_pop(L, 1); /* [f] */
    }
    lua_pop(L, 1);
    return name;
}

int lx_argerror(lua_State *L, int arg, const char *extramsg) {
    bool method;
    const char *fname = called_name(L, &method);
    if (method && --arg == 0)
        return lx_errorf(L, FX_EARG, NULL, "calling '%s' on bad self (%s)", fname, extramsg);
    return lx_errorf(L, FX_EARG, NULL, "bad argument #%d to '%s' (%s)", arg, fname, extramsg);
}

/* The type of the value at idx as messages name it: its metatable's __name (Tensor, torch.dtype,
 * SymInt, ...) or the Lua type. */
static const char *type_name(lua_State *L, int idx) {
    int t = luaL_getmetafield(L, idx, "__name"); /* [name?] */
    if (t != LUA_TNIL) {
        const char *n = t == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        lua_pop(L, 1); /* the metatable keeps the string */
        if (n) return strncmp(n, "fxdb.", 5) ? n : n + 5;
    }
    return lua_type(L, idx) == LUA_TNONE ? "no value" : luaL_typename(L, idx);
}

int lx_typeerror(lua_State *L, int arg, const char *tname) {
    char msg[160];
    if (!strncmp(tname, "fxdb.", 5)) tname += 5;
    snprintf(msg, sizeof msg, "%s expected, got %s", tname, type_name(L, arg));
    return lx_argerror(L, arg, msg);
}

lua_Integer lx_checkinteger(lua_State *L, int arg) {
    int isnum;
    lua_Integer v = lua_tointegerx(L, arg, &isnum);
    if (!isnum) {
        if (lua_isnumber(L, arg)) lx_argerror(L, arg, "number has no integer representation");
        lx_typeerror(L, arg, "integer");
    }
    return v;
}

const char *lx_checkstring(lua_State *L, int arg) {
    const char *s = lua_type(L, arg) == LUA_TSTRING ? lua_tostring(L, arg) : NULL;
    if (!s) lx_typeerror(L, arg, "string");
    return s;
}

const char *lx_optstring(lua_State *L, int arg, const char *def) {
    return lua_isnoneornil(L, arg) ? def : lx_checkstring(L, arg);
}

void lx_checktype(lua_State *L, int arg, int t) {
    if (lua_type(L, arg) != t) lx_typeerror(L, arg, lua_typename(L, t));
}

void *lx_checkudata(lua_State *L, int arg, const char *tname) {
    void *p = luaL_testudata(L, arg, tname);
    if (!p) lx_typeerror(L, arg, tname);
    return p;
}

int lx_checkoption(lua_State *L, int arg, const char *def, const char *const lst[]) {
    const char *name = def && lua_isnoneornil(L, arg) ? def : lx_checkstring(L, arg);
    for (int i = 0; lst[i]; i++)
        if (!strcmp(lst[i], name)) return i;
    return lx_argerror(L, arg, lua_pushfstring(L, "invalid option '%s'", name));
}

/* ==== options tables ========================================================================= */

/* Levenshtein distance of a and b (both at most 63 bytes; longer ones count as far apart). */
static int edit_distance(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    if (na > 63 || nb > 63) return 99;
    int row[64];
    for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[nb];
}

const char *lx_closest(const char *name, const char *const valid[]) {
    const char *best = NULL;
    int bd = 99, n = (int)strlen(name);
    for (int i = 0; valid[i]; i++) {
        int d = edit_distance(name, valid[i]);
        if (d < bd) bd = d, best = valid[i];
    }
    /* close enough to be a misspelling: a third of the name, at least 2 edits */
    return best && bd <= (n / 3 > 2 ? n / 3 : 2) ? best : NULL;
}

void lx_check_options(lua_State *L, int idx, const char *fname, const char *const valid[]) {
    if (lua_isnoneornil(L, idx)) return;
    idx = lua_absindex(L, idx);
    if (lua_type(L, idx) != LUA_TTABLE)
        lx_errorf(L, FX_EARG, NULL, "%s: options must be a table, got %s", fname,
                  type_name(L, idx));
    lua_pushnil(L);
    while (lua_next(L, idx)) { /* [key, value] */
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING)
            lx_errorf(L, FX_EARG, NULL, "%s: option names are strings, got a %s key", fname,
                      luaL_typename(L, -1));
        const char *k = lua_tostring(L, -1);
        bool ok = k[0] == '_'; /* fxdb's own internal options */
        for (int i = 0; !ok && valid[i]; i++) ok = !strcmp(k, valid[i]);
        if (ok) continue;
        char list[512] = "";
        size_t used = 0;
        for (int i = 0; valid[i] && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", valid[i]);
        const char *near = lx_closest(k, valid);
        fx_err e;
        fx_err_clear(&e);
        fx_err_setf(&e, FX_EARG, "%s: unknown option '%s'%s%s%s (valid options: %s)", fname, k,
                    near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "",
                    valid[0] ? list : "none");
        fx_err_kind(&e, "unknown_option");
        if (near) fx_err_hintf(&e, "use '%s'", near);
        lx_error(L, &e);
    }
}

/* The strings of the list at idx (up to the first non-string, at most max) into out, then NULL.
 * They stay pushed on the stack (room checked: a C function is only promised LUA_MINSTACK
 * slots), which keeps them alive while they are used.  [-0, +n+1, m] */
static void string_list(lua_State *L, int idx, const char **out, int max) {
    luaL_checkstack(L, max + 1, "too many names");
    int n = 0;
    for (; n < max && lua_rawgeti(L, idx, n + 1) == LUA_TSTRING; n++) out[n] = lua_tostring(L, -1);
    out[n] = NULL;
}

/* fxdb._closest(name, {candidates}) -> the closest candidate when name looks like a misspelling
 * of it (lx_closest), else nil. */
static int l_closest(lua_State *L) {
    const char *name = lx_checkstring(L, 1);
    lx_checktype(L, 2, LUA_TTABLE);
    const char *valid[257];
    string_list(L, 2, valid, 256);
    const char *best = lx_closest(name, valid);
    if (best) lua_pushstring(L, best);
    else lua_pushnil(L);
    return 1;
}

/* fxdb._check_options(fname, opts, {valid names}): lx_check_options from Lua (lua/check.lua). */
static int l_check_options(lua_State *L) {
    const char *fname = lx_checkstring(L, 1);
    lx_checktype(L, 3, LUA_TTABLE);
    const char *valid[65];
    string_list(L, 3, valid, 64);
    lx_check_options(L, 2, fname, valid);
    return 0;
}

/* ==== dtypes ================================================================================= */

typedef struct lx_dtype_ud {
    fx_dtype dt;
} lx_dtype_ud;

void lx_push_dtype(lua_State *L, fx_dtype dt) {
    if (dt < 0 || dt >= FX_DTYPE_COUNT) {
        lua_pushnil(L);
        return;
    }
    lua_getfield(L, LUA_REGISTRYINDEX, LX_DTYPES); /* [dtypes] */
    lua_rawgeti(L, -1, (lua_Integer)dt + 1);       /* [dtypes, ud] */
    lua_remove(L, -2);                             /* [ud] */
}

/* luaL_testudata with the metatable compared by address (the thread state's copy) instead of
 * looked up by name in the registry. */
fx_dtype lx_to_dtype(lua_State *L, int idx) {
    if (lua_type(L, idx) != LUA_TUSERDATA) return FX_DTYPE_UNDEFINED;
    const void *mt = lx_current(L)->dtype_mt;
    if (!mt) {
        lx_dtype_ud *d = luaL_testudata(L, idx, LX_DTYPE);
        return d ? d->dt : FX_DTYPE_UNDEFINED;
    }
    lx_dtype_ud *d = lua_touserdata(L, idx);
    if (!lua_getmetatable(L, idx)) return FX_DTYPE_UNDEFINED;
    bool ok = lua_topointer(L, -1) == mt;
    lua_pop(L, 1);
    return ok ? d->dt : FX_DTYPE_UNDEFINED;
}

static int dtype_tostring(lua_State *L) {
    lx_dtype_ud *d = lx_checkudata(L, 1, LX_DTYPE);
    lua_pushfstring(L, "torch.%s", fx_dtype_name(d->dt));
    return 1;
}

/* Fields of a dtype: is_floating_point, is_complex, is_signed, itemsize, name ("float16"). */
static int dtype_index(lua_State *L) {
    lx_dtype_ud *d = lx_checkudata(L, 1, LX_DTYPE);
    const char *k = lx_checkstring(L, 2);
    if (!strcmp(k, "is_floating_point"))
        lua_pushboolean(L, fx_dtype_is_float(d->dt));
    else if (!strcmp(k, "is_complex"))
        lua_pushboolean(L, fx_dtype_is_complex(d->dt));
    else if (!strcmp(k, "is_signed"))
        lua_pushboolean(L, d->dt != FX_DTYPE_U8 && d->dt != FX_DTYPE_BOOL);
    else if (!strcmp(k, "itemsize"))
        lua_pushinteger(L, (lua_Integer)fx_dtype_size(d->dt));
    else if (!strcmp(k, "name"))
        lua_pushstring(L, fx_dtype_name(d->dt));
    else
        lua_pushnil(L);
    return 1;
}

/* ==== debugger session hooks ================================================================ */

lx_session_hooks lx_session_hook; /* filled by lx_open_session (lua/lx_impl.h) */

/* ==== fxdb.* registration =========================================================== */

void fxlua_register(lua_State *L, const char *name, lua_CFunction fn) {
    if (lua_getglobal(L, "fxdb") != LUA_TTABLE) { /* [fxdb|x] */
        lua_pop(L, 1);
        lua_newtable(L); /* [fxdb] */
        lua_pushvalue(L, -1);
        lua_setglobal(L, "fxdb");
    }
    lua_pushcfunction(L, fn);  /* [fxdb, fn] */
    lua_setfield(L, -2, name); /* [fxdb] */
    /* registered after the embedded library loaded (fxdb.render): it gets the checks that
     * lua/check.lua declares for it */
    int top = lua_gettop(L);
    if (lua_getfield(L, -1, "_argcheck") == LUA_TTABLE &&     /* [fxdb, C] */
        lua_getfield(L, -1, "wrap") == LUA_TFUNCTION) {       /* [fxdb, C, wrap] */
        lua_pushfstring(L, "fxdb.%s", name);
        lua_call(L, 1, 0);                                    /* [fxdb, C] */
    }
    lua_settop(L, top - 1);
}

/* ==== opening ================================================================================ */

void lx_open_aux(lua_State *L) {
    /* error objects */
    luaL_newmetatable(L, LX_ERROR); /* [mt] */
    lua_pushcfunction(L, error_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pop(L, 1);
    /* thread state boxes */
    luaL_newmetatable(L, LX_THREADBOX);
    lua_pushcfunction(L, threadbox_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    /* ivalue boxes */
    luaL_newmetatable(L, LX_IVBOX);
    lua_pushcfunction(L, ivbox_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    /* dtypes: one userdata per dtype, so torch.float16 == torch.half */
    luaL_newmetatable(L, LX_DTYPE); /* [mt] */
    lua_pushstring(L, "torch.dtype");
    lua_setfield(L, -2, "__name");
    lua_pushcfunction(L, dtype_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, dtype_index);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    lua_createtable(L, FX_DTYPE_COUNT, 0); /* [dtypes] */
    for (int i = 0; i < FX_DTYPE_COUNT; i++) {
        lx_dtype_ud *d = lua_newuserdatauv(L, sizeof *d, 0); /* [dtypes, ud] */
        d->dt = (fx_dtype)i;
        luaL_setmetatable(L, LX_DTYPE);
        lua_rawseti(L, -2, i + 1); /* [dtypes] */
    }
    lua_setfield(L, LUA_REGISTRYINDEX, LX_DTYPES); /* [] */
    /* thread states */
    lua_newtable(L);          /* [threads] */
    lua_createtable(L, 0, 1); /* [threads, mt] */
    lua_pushstring(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);                                /* [threads] */
    lua_setfield(L, LUA_REGISTRYINDEX, LX_THREADS);         /* [] */
    lx_eager_box *eb = lua_newuserdatauv(L, sizeof *eb, 0); /* [eager] */
    memset(eb, 0, sizeof *eb);
    fx_ctx_init(&eb->ctx, FX_MODE_EAGER);
    eb->st.ctx = &eb->ctx;
    luaL_getmetatable(L, LX_DTYPE); /* [eager, mt] */
    eb->st.dtype_mt = lua_topointer(L, -1);
    lua_pop(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, LX_EAGER); /* [] */
    *extra_slot(L) = &eb->st;
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, LX_SRCCACHE);
    lx_srcmemo *memo = lua_newuserdatauv(L, sizeof *memo, 1); /* [memo] */
    memset(memo, 0, sizeof *memo);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &g_memo_key);
#if LUA_VERSION_NUM == 504
    memo->fast = probe_layout(L);
    if (memo->fast) { /* the call-site cache's sentinel table and its first sentinel */
        lua_createtable(L, 0, 1); /* [memo, mt] */
        lua_pushcfunction(L, memo_gc);
        lua_setfield(L, -2, "__gc");
        lua_setmetatable(L, -2);
        lua_createtable(L, 1, 0); /* [memo, weak] */
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "v");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
        lua_newtable(L);
        lua_rawseti(L, -2, 1); /* only this weak reference holds it */
        lua_setiuservalue(L, -2, 1);
        memo->armed = true;
    }
#endif
    lua_pop(L, 1); /* [] */
    fxlua_register(L, "_check_options", l_check_options);
    fxlua_register(L, "_where_paths", l_where_paths);
    fxlua_register(L, "_closest", l_closest);
    fxlua_register(L, "_set_session_open", l_set_session_open);
}

/* The device factories default to: meta after torch.set_default_device("meta"), else cpu. Kept
 * here, below every binding file, because dispatch (lx_dispatch) reads it too. */
fx_device lx_default_device(lua_State *L) {
    lua_getfield(L, LUA_REGISTRYINDEX, LX_DEFAULT_DEVICE); /* [flag] */
    bool meta = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return meta ? FX_DEVICE_META : FX_DEVICE_CPU;
}
