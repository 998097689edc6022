/* repl/commands.c — the colon commands: one table, help generated from it, thin calls of fxdb.*.
 * Layer: repl.
 *
 * Each row of cmd_table is {name, min_abbrev, fn, options, flags}; what a person reads about a
 * command (usage line, summary, details, example) is its entry in docs/API.md, embedded in the
 * program (help.h), so `:help`, the usage hints of errors and the reference in the repository are
 * one text (tests/docs fails when a row has no entry). A typed word selects a row when it equals
 * the name, or when it is a prefix of the name at least min_abbrev long and no other row accepts
 * it; cmd_table_check() proves at start (debug builds) that every abbreviation a row promises is
 * unique.
 *
 * Every fn returns CMD_OK, CMD_ERROR or CMD_QUIT and does nothing but parse its arguments and call
 * one function of the global `fxdb` table (implemented in lua/), so a script can do all that the
 * REPL does. A missing function prints "error: fxdb.<name> is not available yet".
 *
 * Argument syntax: words split on blanks except inside '...' or "..." quotes. Words starting
 * with "--" are options; each row lists its options in `options` as "--name" (flag), "--name="
 * (one value; "--name=V" also works) or "--name*" (a Lua expression: every word up to the next
 * option). The first run of other words is the row's EXPR, kept as typed (quotes included), so
 * `:export Model(4, 8) --real` evaluates "Model(4, 8)".
 *
 * A command runs inside one lua_pcall (cmd_execute), so errors of the Lua API itself (memory)
 * are reported, not fatal; its scratch memory is a userdata collected by Lua. */
#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "repl/call.h"
#include "repl/commands.h"
#include "repl/complete.h"
#include "repl/help.h"
#include "repl/sigint.h"
#include "repl/term.h"

#define CMD_MAX_WORDS 64 /* words of one command line */
#define CMD_MAX_OPTS 8   /* options of one row */
#define CMD_LAST_MAX 256 /* longest stepping command remembered for repetition */
#define SCRATCH_SIZE(len) (3 * (len) + CMD_MAX_WORDS + 16) /* bytes; see parse_args */

#define CMD_F_REPEAT 1u /* an empty line repeats it (stepping commands) */
#define CMD_F_HIDDEN 2u /* an alias row: not listed by :help (its target's help says so) */

typedef struct cmd_row cmd_row;

/* The parsed arguments of one command. Every string points into one scratch userdata. */
typedef struct cmd_ctx {
    const cmd_row *row;             /* the command */
    const char *rest;               /* the raw text after the command word (leading blanks
                                       skipped), "" when none */
    int npos;                       /* positional words */
    const char *pos[CMD_MAX_WORDS]; /* (npos,) unquoted */
    int posn[CMD_MAX_WORDS];        /* (npos,) 1-based index of each among all words */
    const char *expr;               /* raw text of the first run of positional words, or NULL */
    int nextra;                     /* positional words after an option closed the first run */
    const char *opt[CMD_MAX_OPTS];  /* per option of the row: value ("" for a set flag) or NULL */
} cmd_ctx;

typedef int (*cmd_fn)(lua_State *L, cmd_ctx *c);

struct cmd_row {
    const char *name; /* "render" (typed ":render"); its usage line, summary, details and
                         example are the entry ":render" of docs/API.md (help.h) */
    int min_abbrev;   /* shortest accepted prefix */
    cmd_fn fn;
    const char *options; /* "--why= --depth=", see the top comment; NULL when none */
    unsigned flags;      /* CMD_F_* */
};

static char g_last_step[CMD_LAST_MAX]; /* last stepping command line, "" when none */

/* The docs/API.md entry of row r (":name"); a row without one gets its name as usage and a
 * summary saying so (tests/docs makes that a test failure). */
static help_entry row_doc(const cmd_row *r) {
    char key[40];
    help_entry h;
    snprintf(key, sizeof key, ":%s", r->name);
    if (!help_find(key, &h)) {
        static const char missing[] = "(no entry in docs/API.md)";
        memset(&h, 0, sizeof h);
        h.summary = missing;
        h.summary_len = sizeof missing - 1;
    }
    return h;
}

/* Writes "usage: <usage line of row r>" into buf. */
static void usage_hint(const cmd_row *r, char *buf, size_t size) {
    help_entry h = row_doc(r);
    if (h.usage != NULL)
        snprintf(buf, size, "usage: %.*s", (int)h.usage_len, h.usage);
    else
        snprintf(buf, size, "usage: :%s", r->name);
}

/* ======================================================================================== */
/* errors                                                                                     */
/* ======================================================================================== */

/* Prints ":cmd: <message>" naming argument argn (1-based; 0 = the command as a whole) and a hint
 * (the usage line when hint is NULL). Returns CMD_ERROR. */
static int cmd_error(const cmd_ctx *c, int argn, const char *arg, const char *msg,
                     const char *hint) {
    char hbuf[256];
    if (hint == NULL) {
        usage_hint(c->row, hbuf, sizeof hbuf);
        hint = hbuf;
    }
    if (argn > 0 && arg != NULL)
        term_errorf(hint, ":%s: argument %d ('%s'): %s", c->row->name, argn, arg, msg);
    else if (argn > 0)
        term_errorf(hint, ":%s: argument %d: %s", c->row->name, argn, msg);
    else
        term_errorf(hint, ":%s: %s", c->row->name, msg);
    return CMD_ERROR;
}

/* ======================================================================================== */
/* calling fxdb.*                                                                             */
/* ======================================================================================== */

/* Pushes fxdb.<name>, or prints "fxdb.<name> is not available yet" and pushes nothing.
 * [-0, +(1|0), e] */
static bool push_fxdb(lua_State *L, const char *name) {
    int t = lua_getglobal(L, "fxdb"); /* [fxdb] */
    if (t == LUA_TTABLE || t == LUA_TUSERDATA) {
        lua_getfield(L, -1, name); /* [fxdb, fn] */
        lua_remove(L, -2);         /* [fn] */
        if (!lua_isnil(L, -1)) return true;
    }
    lua_pop(L, 1);
    term_errorf(NULL, "fxdb.%s is not available yet", name);
    return false;
}

/* Pushes fxdb.current, or prints that there is no current program and pushes nothing. */
static bool push_current(lua_State *L, const cmd_ctx *c) {
    int t = lua_getglobal(L, "fxdb"); /* [fxdb] */
    if (t == LUA_TTABLE || t == LUA_TUSERDATA) {
        lua_getfield(L, -1, "current"); /* [fxdb, cur] */
        lua_remove(L, -2);
        if (!lua_isnil(L, -1)) return true;
    }
    lua_pop(L, 1);
    cmd_error(c, 0, NULL, "no current program",
              "export a module first: :export EXPR (or fxdb.export(m, args) in Lua)");
    return false;
}

/* Pushes fxdb.<name>(args...)'s first result when fxdb.<name> is a function (called protected,
 * with nargs arguments below it... none here: the string s is the one argument), else nothing.
 * Returns whether a value was pushed. Errors are dropped (the caller falls back). */
static bool call_fxdb_str(lua_State *L, const char *name, const char *s) {
    int top = lua_gettop(L);
    if (lua_getglobal(L, "fxdb") != LUA_TTABLE || lua_getfield(L, -1, name) != LUA_TFUNCTION) {
        lua_settop(L, top);
        return false;
    }
    lua_remove(L, -2); /* [fn] */
    if (s != NULL) lua_pushstring(L, s);
    if (lua_pcall(L, s != NULL ? 1 : 0, 1, 0) != LUA_OK || lua_isnil(L, -1)) {
        lua_settop(L, top);
        return false;
    }
    return true; /* [result] */
}

/* Evaluates the Lua expression `expr` (argument argn of the command) and pushes its first value;
 * on a syntax or runtime error prints it and pushes nothing. With a debugger session paused the
 * expression sees the paused frame's locals, and `%name` stands for a node's value (fxdb.eval's
 * rules: fxdb._rewrite_nodes and the environment fxdb._expr_env gives). */
static bool eval_expr(lua_State *L, const cmd_ctx *c, const char *expr, int argn) {
    if (call_fxdb_str(L, "_rewrite_nodes", expr)) /* [expr'] */
        expr = lua_tostring(L, -1);
    else
        lua_pushstring(L, expr);
    const char *code = lua_pushfstring(L, "return %s", expr); /* [expr', code] */
    int status = luaL_loadbuffer(L, code, strlen(code), FXDB_CHUNKNAME);
    lua_remove(L, -2);                                             /* [expr', chunk|err] */
    lua_remove(L, -2);                                             /* [chunk|err] */
    if (status == LUA_OK && call_fxdb_str(L, "_expr_env", NULL)) { /* [chunk, env] */
        if (lua_setupvalue(L, -2, 1) == NULL) lua_pop(L, 1);
    }
    if (status != LUA_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "not a Lua expression: %s", lua_tostring(L, -1));
        lua_pop(L, 1);
        cmd_error(c, argn, expr, msg, NULL);
        return false;
    }
    status = call_docall(L, 0, 1); /* [value|err] */
    if (status != LUA_OK) {
        call_report(L, status);
        return false;
    }
    return true;
}

/* Calls the function below nargs arguments and prints what it returns. */
static int invoke(lua_State *L, int nargs) {
    int base = lua_gettop(L) - nargs - 1;
    int status = call_docall(L, nargs, LUA_MULTRET);
    if (status != LUA_OK) {
        call_report(L, status);
        return CMD_ERROR;
    }
    /* Ctrl-C paused a session (no error): the terminal echoed "^C" mid-line */
    if (sig_take_run_interrupt() && term_is_tty(STDOUT_FILENO)) fputc('\n', stdout);
    call_print_values(L, lua_gettop(L) - base);
    return CMD_OK;
}

/* Pushes fxdb.summary and returns true when it is a function; pushes nothing otherwise (then
 * values print whole). */
static bool push_summary(lua_State *L) {
    int top = lua_gettop(L);
    if (lua_getglobal(L, "fxdb") == LUA_TTABLE && lua_getfield(L, -1, "summary") == LUA_TFUNCTION) {
        lua_remove(L, -2); /* [summary] */
        return true;
    }
    lua_settop(L, top);
    return false;
}

/* Below the function and its nargs arguments lies fxdb.summary: calls the function for one
 * result, then prints fxdb.summary(result) (a big program or graph summarized). */
static int invoke_summarized(lua_State *L, int nargs) {
    int status = call_docall(L, nargs, 1); /* [summary, result] */
    if (status == LUA_OK)
        status = call_docall(L, 1, 1); /* [text] */
    else
        lua_remove(L, -2); /* [err] */
    if (status != LUA_OK) {
        call_report(L, status);
        return CMD_ERROR;
    }
    call_print_values(L, 1);
    return CMD_OK;
}

/* Option value of the row's i-th option, or NULL when not given. */
#define OPT(c, i) ((c)->opt[(i)])

/* Refuses positional words beyond `max` (and words after the first run when the row takes an
 * EXPR). */
static bool check_max_pos(const cmd_ctx *c, int max) {
    if (c->npos > max) {
        cmd_error(c, c->posn[max], c->pos[max], "unexpected argument", NULL);
        return false;
    }
    return true;
}

/* Reads positional word i as an integer (argument `what`); prints the error when it is not. */
static bool pos_integer(const cmd_ctx *c, const char *s, int argn, lua_Integer *out) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0') {
        cmd_error(c, argn, s, "expected an integer", NULL);
        return false;
    }
    *out = (lua_Integer)v;
    return true;
}

/* ======================================================================================== */
/* the commands                                                                               */
/* ======================================================================================== */

/* The module EXPR and its inputs (--args LUA, or EXPR.example_inputs): pushes [m, args].
 * opt_args is the index of --args among the row's options. */
static bool push_module_and_args(lua_State *L, cmd_ctx *c, int opt_args) {
    if (c->expr == NULL) {
        cmd_error(c, 1, NULL, "missing EXPR (the module to use)", NULL);
        return false;
    }
    if (c->nextra > 0) {
        cmd_error(c, 0, NULL, "EXPR must come before the options", NULL);
        return false;
    }
    if (!eval_expr(L, c, c->expr, 1)) /* [m] */
        return false;
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        cmd_error(c, 1, c->expr, "is nil", "name a module value, e.g. :export m");
        return false;
    }
    if (OPT(c, opt_args) != NULL) {
        if (!eval_expr(L, c, OPT(c, opt_args), 0)) { /* [m, args] */
            lua_pop(L, 1);
            return false;
        }
        return true;
    }
    if (lua_type(L, -1) == LUA_TTABLE || lua_type(L, -1) == LUA_TUSERDATA) {
        lua_getfield(L, -1, "example_inputs"); /* [m, args] */
        if (!lua_isnil(L, -1)) return true;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    cmd_error(c, 1, c->expr, "has no example_inputs",
              "give the inputs with --args, e.g. --args {torch.randn(2, 3)}");
    return false;
}

/* :export and :trace share this: fxdb.<verb>(m, args, {strict = ..., real = ...}).
 * Options: 0 --non-strict, 1 --real, 2 --args*. */
static int export_like(lua_State *L, cmd_ctx *c, const char *verb) {
    int base = lua_gettop(L);
    /* a big program prints summarized: [summary] */
    bool summarize = strcmp(verb, "export") == 0 && push_summary(L);
    if (!push_fxdb(L, verb)) { /* [summary, fn] */
        lua_settop(L, base);
        return CMD_ERROR;
    }
    if (!push_module_and_args(L, c, 2)) { /* [summary, fn, m, args] */
        lua_settop(L, base);
        return CMD_ERROR;
    }
    lua_createtable(L, 0, 2); /* [summary?, fn, m, args, opts] */
    lua_pushboolean(L, OPT(c, 0) == NULL);
    lua_setfield(L, -2, "strict");
    lua_pushboolean(L, OPT(c, 1) != NULL);
    lua_setfield(L, -2, "real");
    int rc = summarize ? invoke_summarized(L, 3) : invoke(L, 3);
    if (rc == CMD_ERROR && strcmp(verb, "export") == 0)
        fprintf(stderr,
                "  post-mortem: :trace %s%s%s%s stops at the failure (then :where, :print, "
                ":graph)\n",
                c->expr ? c->expr : "EXPR", OPT(c, 0) ? " --non-strict" : "",
                OPT(c, 2) ? " --args " : "", OPT(c, 2) ? OPT(c, 2) : "");
    return rc;
}

static int c_export(lua_State *L, cmd_ctx *c) { return export_like(L, c, "export"); }

static int c_trace(lua_State *L, cmd_ctx *c) { return export_like(L, c, "trace"); }

/* Names :graph and :diff accept for the stages of the pipeline. */
static bool is_stage(const char *s) {
    static const char *const stages[] = {"raw", "functional", "exported", "unlifted", NULL};
    for (int i = 0; stages[i] != NULL; i++)
        if (strcmp(stages[i], s) == 0) return true;
    return false;
}

static int c_graph(lua_State *L, cmd_ctx *c) {
    if (!check_max_pos(c, 1)) return CMD_ERROR;
    const char *stage = c->npos ? c->pos[0] : NULL;
    if (stage != NULL && !is_stage(stage))
        return cmd_error(c, 1, stage, "unknown stage",
                         "stages are raw, functional, exported (the default), unlifted");
    int base = lua_gettop(L);
    bool summarize = OPT(c, 0) == NULL && push_summary(L); /* [summary] unless --all */
    if (!push_fxdb(L, "graph")) {
        lua_settop(L, base);
        return CMD_ERROR;
    }
    if (stage != NULL) lua_pushstring(L, stage);
    return summarize ? invoke_summarized(L, stage != NULL) : invoke(L, stage != NULL);
}

/* Commands without arguments that call fxdb.<name>() and print what it returns. */
static int call_noargs(lua_State *L, cmd_ctx *c, const char *name) {
    if (!check_max_pos(c, 0)) return CMD_ERROR;
    if (!push_fxdb(L, name)) return CMD_ERROR;
    return invoke(L, 0);
}

static int c_code(lua_State *L, cmd_ctx *c) { return call_noargs(L, c, "code"); }
static int c_sig(lua_State *L, cmd_ctx *c) { return call_noargs(L, c, "sig"); }
static int c_check(lua_State *L, cmd_ctx *c) { return call_noargs(L, c, "check"); }
static int c_next(lua_State *L, cmd_ctx *c) { return call_noargs(L, c, "next"); }
static int c_finish(lua_State *L, cmd_ctx *c) { return call_noargs(L, c, "finish"); }
static int c_continue(lua_State *L, cmd_ctx *c) { return call_noargs(L, c, "continue"); }
static int c_where(lua_State *L, cmd_ctx *c) { return call_noargs(L, c, "where"); }
static int c_kill(lua_State *L, cmd_ctx *c) { return call_noargs(L, c, "kill"); }

/* :node / :users / :inputs %N -> fxdb.<name>("N") */
static int node_cmd(lua_State *L, cmd_ctx *c, const char *name) {
    if (c->npos == 0)
        return cmd_error(c, 1, NULL, "missing node", "name a node like %add_1 (Tab completes)");
    if (!check_max_pos(c, 1)) return CMD_ERROR;
    const char *n = c->pos[0][0] == '%' ? c->pos[0] + 1 : c->pos[0];
    if (n[0] == '\0') return cmd_error(c, 1, c->pos[0], "empty node name", NULL);
    if (!push_fxdb(L, name)) return CMD_ERROR;
    lua_pushstring(L, n);
    return invoke(L, 1);
}

static int c_node(lua_State *L, cmd_ctx *c) { return node_cmd(L, c, "node"); }
static int c_users(lua_State *L, cmd_ctx *c) { return node_cmd(L, c, "users"); }
static int c_inputs(lua_State *L, cmd_ctx *c) { return node_cmd(L, c, "inputs"); }

/* Commands taking the rest of the line as one string: fxdb.<name>(rest). */
static int call_rest(lua_State *L, cmd_ctx *c, const char *name, bool required,
                     const char *missing) {
    if (required && c->rest[0] == '\0') return cmd_error(c, 1, NULL, missing, NULL);
    if (!push_fxdb(L, name)) return CMD_ERROR;
    if (c->rest[0] == '\0') return invoke(L, 0);
    /* one positional word in quotes is passed without its quotes */
    lua_pushstring(L, c->npos == 1 && c->expr != NULL ? c->pos[0] : c->rest);
    return invoke(L, 1);
}

static int c_find(lua_State *L, cmd_ctx *c) {
    return call_rest(L, c, "find", true, "missing query (an op, a name pattern or a shape)");
}
/* :break WHERE [if LUA] -> fxdb.break_on("WHERE [if LUA]"); :tbreak adds {temporary = true}.
 * (`break` is a Lua keyword, hence API.md's break_on.) */
static int break_cmd(lua_State *L, cmd_ctx *c, bool temporary) {
    if (c->rest[0] == '\0')
        return cmd_error(c, 1, NULL, "missing WHERE",
                         "WHERE: op aten.add_ | line FILE:N | module PATH | node %n | mutation | "
                         "view | item");
    if (!push_fxdb(L, "break_on")) return CMD_ERROR;
    lua_pushstring(L, c->rest);
    if (!temporary) return invoke(L, 1);
    lua_createtable(L, 0, 1);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "temporary");
    return invoke(L, 2);
}
static int c_break(lua_State *L, cmd_ctx *c) { return break_cmd(L, c, false); }
static int c_tbreak(lua_State *L, cmd_ctx *c) { return break_cmd(L, c, true); }
static int c_watch(lua_State *L, cmd_ctx *c) {
    return call_rest(L, c, "watch", true, "missing TARGET (a buffer or input name)");
}
static int c_info(lua_State *L, cmd_ctx *c) {
    return call_rest(L, c, "info", true, "missing topic");
}
/* :until [WHERE] -> fxdb["until"](WHERE) (no WHERE: like :next) */
static int c_until(lua_State *L, cmd_ctx *c) { return call_rest(L, c, "until", false, NULL); }
/* :list [N|FILE:N] -> fxdb.list(...) */
static int c_list(lua_State *L, cmd_ctx *c) {
    if (!check_max_pos(c, 1)) return CMD_ERROR;
    return call_rest(L, c, "list", false, NULL);
}
/* :undisplay [N] -> fxdb.undisplay(N) */
static int c_undisplay(lua_State *L, cmd_ctx *c) {
    if (!check_max_pos(c, 1)) return CMD_ERROR;
    lua_Integer n = 0;
    if (c->npos == 1 && !pos_integer(c, c->pos[0], 1, &n)) return CMD_ERROR;
    if (!push_fxdb(L, "undisplay")) return CMD_ERROR;
    if (c->npos == 0) return invoke(L, 0);
    lua_pushinteger(L, n);
    return invoke(L, 1);
}
/* :display [EXPR] -> fxdb.display("EXPR"): the text is kept and evaluated again at each stop. */
static int c_display(lua_State *L, cmd_ctx *c) {
    if (!push_fxdb(L, "display")) return CMD_ERROR;
    if (c->rest[0] == '\0') return invoke(L, 0);
    lua_pushstring(L, c->rest);
    return invoke(L, 1);
}
/* :set %N EXPR -> fxdb.set("N", <EXPR>) */
static int c_set(lua_State *L, cmd_ctx *c) {
    if (c->npos < 2)
        return cmd_error(c, c->npos + 1, NULL, c->npos == 0 ? "missing node" : "missing EXPR",
                         "usage: :set %NODE EXPR, e.g. :set %mul torch.ones(3)");
    const char *n = c->pos[0][0] == '%' ? c->pos[0] + 1 : c->pos[0];
    /* the EXPR is the raw text after the node word */
    const char *e = c->rest;
    while (*e && *e != ' ' && *e != '\t') e++;
    while (*e == ' ' || *e == '\t') e++;
    if (!push_fxdb(L, "set")) /* [fn] */
        return CMD_ERROR;
    lua_pushstring(L, n);         /* [fn, n] */
    if (!eval_expr(L, c, e, 2)) { /* [fn, n, v] */
        lua_pop(L, 2);
        return CMD_ERROR;
    }
    return invoke(L, 2);
}
/* :enable / :disable [N], :frame / :up / :down [N] -> fxdb.<name>(N), or fxdb.<name>() without
 * N (all breakpoints / the innermost frame / one frame). */
static int optional_int_cmd(lua_State *L, cmd_ctx *c, const char *name) {
    if (!check_max_pos(c, 1)) return CMD_ERROR;
    lua_Integer n = 0;
    if (c->npos == 1 && !pos_integer(c, c->pos[0], 1, &n)) return CMD_ERROR;
    if (!push_fxdb(L, name)) return CMD_ERROR;
    if (c->npos == 0) return invoke(L, 0);
    lua_pushinteger(L, n);
    return invoke(L, 1);
}
static int c_enable(lua_State *L, cmd_ctx *c) { return optional_int_cmd(L, c, "enable"); }
static int c_disable(lua_State *L, cmd_ctx *c) { return optional_int_cmd(L, c, "disable"); }
static int c_frame(lua_State *L, cmd_ctx *c) { return optional_int_cmd(L, c, "frame"); }
static int c_up(lua_State *L, cmd_ctx *c) { return optional_int_cmd(L, c, "up"); }
static int c_down(lua_State *L, cmd_ctx *c) { return optional_int_cmd(L, c, "down"); }

/* :reverse-step [N] -> fxdb.reverse_step(N) */
static int c_reverse_step(lua_State *L, cmd_ctx *c) {
    if (!check_max_pos(c, 1)) return CMD_ERROR;
    lua_Integer n = 1;
    if (c->npos == 1 && !pos_integer(c, c->pos[0], 1, &n)) return CMD_ERROR;
    if (!push_fxdb(L, "reverse_step")) return CMD_ERROR;
    if (c->npos == 0) return invoke(L, 0);
    lua_pushinteger(L, n);
    return invoke(L, 1);
}

/* :why T -> print(fxdb.why(T)): the provenance of buffer / input T, or the story of symbol T */
static int c_why(lua_State *L, cmd_ctx *c) {
    if (c->npos == 0)
        return cmd_error(c, 1, NULL, "missing TARGET",
                         "name a buffer or input, e.g. :why state (:sig lists them), or a "
                         "symbol, e.g. :why s0");
    if (!check_max_pos(c, 1)) return CMD_ERROR;
    if (!push_fxdb(L, "why")) /* [fn] */
        return CMD_ERROR;
    lua_pushstring(L, c->pos[0]); /* [fn, T] */
    return invoke(L, 1);
}

/* :guards -> print(fxdb.guards()) */
static int c_guards(lua_State *L, cmd_ctx *c) { return call_noargs(L, c, "guards"); }

/* Pushes a Lua list of the comma-separated words of s. */
static void push_path_list(lua_State *L, const char *s) {
    lua_newtable(L);
    int n = 0;
    while (*s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len > 0) {
            lua_pushlstring(L, s, len);
            lua_rawseti(L, -2, ++n);
        }
        s += len;
        if (*s == ',') s++;
    }
}

/* Pushes what :render draws: a paused trace session's raw graph so far, else the current
 * program. Returns false (error printed) when there is neither. */
static bool push_render_target(lua_State *L, const cmd_ctx *c) {
    bool trace = false;
    if (lua_getglobal(L, "fxdb") == LUA_TTABLE &&
        lua_getfield(L, -1, "session") == LUA_TTABLE) { /* [fxdb, s] */
        lua_getfield(L, -1, "kind");
        lua_getfield(L, -2, "status"); /* [fxdb, s, k, st] */
        const char *k = lua_tostring(L, -2), *st = lua_tostring(L, -1);
        trace = k && st && strcmp(k, "trace") == 0 &&
                (strcmp(st, "paused") == 0 || strcmp(st, "error") == 0);
        lua_pop(L, 2);
    }
    lua_pop(L, 2);
    if (trace && call_fxdb_str(L, "graph", NULL)) return true;
    return push_current(L, c);
}

/* :render [MODULE] [FILE] [--why T] [--depth N|full] [--expand P,..] [--collapse P,..] [--params]
 * [--edge-shapes] [--no-legend] -> fxdb.render(current, FILE, {module=MODULE, why=T, ...}) */
static int c_render(lua_State *L, cmd_ctx *c) {
    if (!check_max_pos(c, 2)) return CMD_ERROR;
    lua_Integer depth = -1;
    if (OPT(c, 1) != NULL && strcmp(OPT(c, 1), "full") != 0) {
        char *end;
        depth = (lua_Integer)strtoll(OPT(c, 1), &end, 10);
        if (end == OPT(c, 1) || *end != '\0' || depth < 0)
            return cmd_error(c, 0, NULL, "option --depth needs a non-negative integer or 'full'",
                             NULL);
    }
    if (!push_fxdb(L, "render")) /* [fn] */
        return CMD_ERROR;
    if (!push_render_target(L, c)) { /* [fn, ep] */
        lua_pop(L, 1);
        return CMD_ERROR;
    }
    if (c->npos > 0)
        lua_pushstring(L, c->pos[c->npos - 1]); /* [fn, ep, file] */
    else
        lua_pushnil(L);
    lua_createtable(L, 0, 8); /* [fn, ep, file, opts] */
    if (c->npos == 2) {
        lua_pushstring(L, c->pos[0]);
        lua_setfield(L, -2, "module");
    }
    if (OPT(c, 0) != NULL) {
        lua_pushstring(L, OPT(c, 0));
        lua_setfield(L, -2, "why");
    }
    if (depth >= 0) {
        lua_pushinteger(L, depth);
        lua_setfield(L, -2, "depth");
    }
    if (OPT(c, 2) != NULL) {
        push_path_list(L, OPT(c, 2));
        lua_setfield(L, -2, "expand");
    }
    if (OPT(c, 3) != NULL) {
        push_path_list(L, OPT(c, 3));
        lua_setfield(L, -2, "collapse");
    }
    static const char *const flags[] = {"params", "edge_shapes", "legend"};
    for (int i = 0; i < 3; i++) {
        if (OPT(c, 4 + i) != NULL) {
            lua_pushboolean(L, i < 2); /* --no-legend sets legend = false */
            lua_setfield(L, -2, flags[i]);
        }
    }
    return invoke(L, 3);
}

/* :run [--step] [ARGS] -> fxdb.run(fxdb.current, ARGS or nil[, {step = true}]) */
static int c_run(lua_State *L, cmd_ctx *c) {
    if (c->nextra > 0) return cmd_error(c, 0, NULL, "ARGS must be one Lua expression", NULL);
    if (!push_fxdb(L, "run")) /* [fn] */
        return CMD_ERROR;
    if (!push_current(L, c)) { /* [fn, ep] */
        lua_pop(L, 1);
        return CMD_ERROR;
    }
    if (c->expr != NULL) {
        if (!eval_expr(L, c, c->expr, 1)) { /* [fn, ep, args] */
            lua_pop(L, 2);
            return CMD_ERROR;
        }
    } else {
        lua_pushnil(L);
    }
    if (OPT(c, 0) == NULL) return invoke(L, 2);
    lua_createtable(L, 0, 1); /* [fn, ep, args, opts] */
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "step");
    return invoke(L, 3);
}

/* :print EXPR -> fxdb.print(<EXPR>) */
static int c_print(lua_State *L, cmd_ctx *c) {
    if (c->rest[0] == '\0') return cmd_error(c, 1, NULL, "missing EXPR", NULL);
    if (!push_fxdb(L, "print")) /* [fn] */
        return CMD_ERROR;
    if (!eval_expr(L, c, c->rest, 1)) { /* [fn, v] */
        lua_pop(L, 1);
        return CMD_ERROR;
    }
    return invoke(L, 1);
}

/* :load FILE -> dofile(FILE) in the REPL's globals; a FILE ending in .pt2 is an exported
 * program: fxdb.open(FILE) makes it current */
static int c_load(lua_State *L, cmd_ctx *c) {
    if (c->npos == 0) return cmd_error(c, 1, NULL, "missing FILE", NULL);
    if (!check_max_pos(c, 1)) return CMD_ERROR;
    size_t fl = strlen(c->pos[0]);
    if (fl > 4 && strcmp(c->pos[0] + fl - 4, ".pt2") == 0) {
        if (!push_fxdb(L, "open")) return CMD_ERROR;
        lua_pushstring(L, c->pos[0]);
        return invoke(L, 1);
    }
    int status = luaL_loadfile(L, c->pos[0]); /* [chunk|err] */
    if (status == LUA_OK) status = call_docall(L, 0, 0);
    return call_report(L, status) == LUA_OK ? CMD_OK : CMD_ERROR;
}

/* :step [N] -> fxdb.step(N) */
static int c_step(lua_State *L, cmd_ctx *c) {
    if (!check_max_pos(c, 1)) return CMD_ERROR;
    lua_Integer n = 1;
    if (c->npos == 1 && !pos_integer(c, c->pos[0], 1, &n)) return CMD_ERROR;
    if (!push_fxdb(L, "step")) return CMD_ERROR;
    if (c->npos == 0) return invoke(L, 0);
    lua_pushinteger(L, n);
    return invoke(L, 1);
}

/* :delete [N] -> fxdb.delete(N) (no N: every breakpoint) */
static int c_delete(lua_State *L, cmd_ctx *c) {
    if (!check_max_pos(c, 1)) return CMD_ERROR;
    lua_Integer n = 0;
    if (c->npos == 1 && !pos_integer(c, c->pos[0], 1, &n)) return CMD_ERROR;
    if (!push_fxdb(L, "delete")) return CMD_ERROR;
    if (c->npos == 0) return invoke(L, 0);
    lua_pushinteger(L, n);
    return invoke(L, 1);
}

/* :diff G1 G2 -> fxdb.diff(G1, G2): a stage name passes as a string, anything else is
 * evaluated as a Lua expression. */
static int c_diff(lua_State *L, cmd_ctx *c) {
    if (c->npos != 2)
        return cmd_error(c, c->npos < 2 ? c->npos + 1 : 3, c->npos > 2 ? c->pos[2] : NULL,
                         c->npos < 2 ? "missing graph" : "unexpected argument",
                         "two stages or graph values, e.g. :diff raw functional");
    if (!push_fxdb(L, "diff")) /* [fn] */
        return CMD_ERROR;
    for (int i = 0; i < 2; i++) {
        if (is_stage(c->pos[i])) {
            lua_pushstring(L, c->pos[i]);
        } else if (!eval_expr(L, c, c->pos[i], c->posn[i])) {
            lua_pop(L, 1 + i);
            return CMD_ERROR;
        }
    }
    return invoke(L, 2);
}

/* :report [EXPR] [--non-strict] [--args LUA] -> fxdb.report(m, args, {strict = ...}) */
static int c_report(lua_State *L, cmd_ctx *c) {
    if (!push_fxdb(L, "report")) /* [fn] */
        return CMD_ERROR;
    if (c->expr == NULL && OPT(c, 1) == NULL) {
        if (OPT(c, 0) == NULL) return invoke(L, 0);
        lua_pushnil(L);
        lua_pushnil(L);
    } else if (!push_module_and_args(L, c, 1)) { /* [fn, m, args] */
        lua_pop(L, 1);
        return CMD_ERROR;
    }
    lua_createtable(L, 0, 1); /* [fn, m, args, opts] */
    lua_pushboolean(L, OPT(c, 0) == NULL);
    lua_setfield(L, -2, "strict");
    return invoke(L, 3);
}

/* :complete TEXT -> the Tab candidates for the end of TEXT, one per line (what the line editor
 * would offer; for transcripts and for editors driving fxdb). */
static int c_complete(lua_State *L, cmd_ctx *c) {
    const char *text = c->rest;
    /* a quoted TEXT keeps its blanks: ":complete ':graph r'" */
    if (c->npos == 1 && c->expr != NULL && (c->rest[0] == '\'' || c->rest[0] == '"'))
        text = c->pos[0];
    int end = (int)strlen(text);
    int start = end;
    while (start > 0 && strchr(complete_word_breaks, text[start - 1]) == NULL) start--;
    char **cands = complete_candidates(L, text, start, end);
    for (char **p = cands; p != NULL && *p != NULL; p++) printf("%s\n", *p);
    if (cands == NULL) printf("(no completions)\n");
    fflush(stdout);
    complete_free(cands);
    return CMD_OK;
}

static int c_help(lua_State *L, cmd_ctx *c);

/* :lesson [N|list] -> fxdb.lesson(N): starts lesson N; without N, the next step. After a start,
 * an empty line means ":lesson" (the next step), not a restart. */
static int c_lesson(lua_State *L, cmd_ctx *c) {
    if (!check_max_pos(c, 1)) return CMD_ERROR;
    if (!push_fxdb(L, "lesson")) return CMD_ERROR;
    if (c->npos == 1) lua_pushstring(L, c->pos[0]);
    int rc = invoke(L, c->npos);
    snprintf(g_last_step, sizeof g_last_step, ":lesson");
    return rc;
}

/* :explain -> fxdb.explain(fxdb.current) */
static int c_explain(lua_State *L, cmd_ctx *c) {
    if (!check_max_pos(c, 0)) return CMD_ERROR;
    if (!push_fxdb(L, "explain")) return CMD_ERROR;
    if (!push_current(L, c)) {
        lua_pop(L, 1);
        return CMD_ERROR;
    }
    return invoke(L, 1);
}

static int c_quit(lua_State *L, cmd_ctx *c) {
    (void)L;
    if (!check_max_pos(c, 0)) return CMD_ERROR;
    return CMD_QUIT;
}

/* ======================================================================================== */
/* the table                                                                                  */
/* ======================================================================================== */

static const cmd_row cmd_table[] = {
    /* --- export and inspection --- */
    {"export", 1, c_export, "--non-strict --real --args*", 0},
    {"graph", 1, c_graph, "--all", 0},
    {"code", 3, c_code, NULL, 0},
    {"sig", 2, c_sig, NULL, 0},
    {"node", 2, c_node, NULL, 0},
    {"users", 1, c_users, NULL, 0},
    {"inputs", 3, c_inputs, NULL, 0},
    {"find", 4, c_find, NULL, 0},
    {"why", 3, c_why, NULL, 0},
    {"guards", 2, c_guards, NULL, 0},
    {"explain", 4, c_explain, NULL, 0},
    {"provenance", 3, c_why, NULL, CMD_F_HIDDEN},
    {"render", 3, c_render,
     "--why= --depth= --expand= --collapse= --params --edge-shapes --no-legend", 0},
    {"diff", 2, c_diff, NULL, 0},
    {"run", 1, c_run, "--step", 0},
    {"check", 2, c_check, NULL, 0},
    {"print", 1, c_print, NULL, 0},
    {"report", 3, c_report, "--non-strict --args*", 0},
    /* --- the debugger --- */
    {"trace", 2, c_trace, "--non-strict --real --args*", 0},
    {"step", 1, c_step, NULL, CMD_F_REPEAT},
    {"next", 1, c_next, NULL, CMD_F_REPEAT},
    {"finish", 3, c_finish, NULL, CMD_F_REPEAT},
    {"continue", 1, c_continue, NULL, CMD_F_REPEAT},
    {"until", 3, c_until, NULL, CMD_F_REPEAT},
    {"reverse-step", 3, c_reverse_step, NULL, CMD_F_REPEAT},
    {"rs", 2, c_reverse_step, NULL, CMD_F_REPEAT | CMD_F_HIDDEN},
    {"break", 1, c_break, NULL, 0},
    {"tbreak", 2, c_tbreak, NULL, 0},
    {"delete", 1, c_delete, NULL, 0},
    {"disable", 4, c_disable, NULL, 0},
    {"enable", 2, c_enable, NULL, 0},
    {"info", 1, c_info, NULL, 0},
    {"watch", 2, c_watch, NULL, 0},
    {"where", 3, c_where, NULL, 0},
    {"bt", 2, c_where, NULL, CMD_F_HIDDEN},
    {"frame", 2, c_frame, NULL, 0},
    {"up", 2, c_up, NULL, 0},
    {"down", 2, c_down, NULL, 0},
    {"list", 2, c_list, NULL, 0},
    {"display", 4, c_display, NULL, 0},
    {"undisplay", 3, c_undisplay, NULL, 0},
    {"set", 2, c_set, NULL, 0},
    {"kill", 1, c_kill, NULL, 0},
    /* --- the REPL --- */
    {"load", 1, c_load, NULL, 0},
    {"lesson", 3, c_lesson, NULL, CMD_F_REPEAT},
    {"complete", 4, c_complete, NULL, CMD_F_HIDDEN},
    {"help", 1, c_help, NULL, 0},
    {"quit", 1, c_quit, NULL, 0},
};

#define CMD_COUNT ((int)(sizeof cmd_table / sizeof cmd_table[0]))

int cmd_count(void) { return CMD_COUNT; }

const char *cmd_name_at(int i) { return (i >= 0 && i < CMD_COUNT) ? cmd_table[i].name : NULL; }

/* The row a typed word selects; *nmatch receives how many rows accepted it (0 unknown, >1
 * ambiguous: then NULL is returned). */
static const cmd_row *find_row(const char *word, int *nmatch) {
    size_t len = strlen(word);
    const cmd_row *hit = NULL;
    *nmatch = 0;
    if (len == 0) return NULL;
    for (int i = 0; i < CMD_COUNT; i++) {
        if (strcmp(cmd_table[i].name, word) == 0) {
            *nmatch = 1;
            return &cmd_table[i];
        }
    }
    for (int i = 0; i < CMD_COUNT; i++) {
        const cmd_row *r = &cmd_table[i];
        if (len >= (size_t)r->min_abbrev && strncmp(r->name, word, len) == 0) {
            hit = r;
            (*nmatch)++;
        }
    }
    return *nmatch == 1 ? hit : NULL;
}

const char *cmd_resolve(const char *word) {
    int n;
    const cmd_row *r = find_row(word, &n);
    return r ? r->name : NULL;
}

#ifndef NDEBUG
/* Every abbreviation a row promises (min_abbrev .. full name) selects that row. */
static bool cmd_table_check(void) {
    for (int i = 0; i < CMD_COUNT; i++) {
        const cmd_row *r = &cmd_table[i];
        char buf[32];
        size_t n = strlen(r->name);
        if (r->min_abbrev < 1 || (size_t)r->min_abbrev > n || n >= sizeof buf) return false;
        for (size_t k = (size_t)r->min_abbrev; k <= n; k++) {
            int nm;
            memcpy(buf, r->name, k);
            buf[k] = '\0';
            if (find_row(buf, &nm) != r) return false;
        }
    }
    return true;
}
#endif

/* ======================================================================================== */
/* :help                                                                                      */
/* ======================================================================================== */

/* Prints the list (no argument) or one command in detail. */
static int c_help(lua_State *L, cmd_ctx *c) {
    (void)L;
    if (!check_max_pos(c, 1)) return CMD_ERROR;
    if (c->npos == 1) {
        const char *w = c->pos[0][0] == ':' ? c->pos[0] + 1 : c->pos[0];
        int nm;
        const cmd_row *r = find_row(w, &nm);
        help_entry h;
        if (r == NULL && nm <= 1 && help_find(c->pos[0], &h)) { /* torch.add, fxdb.run, nn.Linear */
            if (h.usage != NULL) printf("%.*s\n", (int)h.usage_len, h.usage);
            help_print_text(h.summary, h.summary_len, h.usage ? 2 : 0);
            help_print_text(h.body, h.body_len, 2);
            fflush(stdout);
            return CMD_OK;
        }
        if (r == NULL)
            return cmd_error(c, 1, c->pos[0], nm > 1 ? "ambiguous command" : "unknown command",
                             ":help lists the commands; :help torch.add shows a Lua function");
        h = row_doc(r);
        if (h.usage != NULL) printf("%.*s\n", (int)h.usage_len, h.usage);
        help_print_text(h.summary, h.summary_len, 2);
        help_print_text(h.body, h.body_len, 2);
        if (r->min_abbrev < (int)strlen(r->name))
            printf("  abbreviation: :%.*s\n", r->min_abbrev, r->name);
        if (r->flags & CMD_F_REPEAT) printf("  an empty line repeats it\n");
        fflush(stdout);
        return CMD_OK;
    }
    int width = 0;
    for (int i = 0; i < CMD_COUNT; i++) {
        help_entry h = row_doc(&cmd_table[i]);
        int w = h.usage ? (int)h.usage_len : (int)strlen(cmd_table[i].name) + 1;
        if (!(cmd_table[i].flags & CMD_F_HIDDEN) && w > width && w <= 44) width = w;
    }
    printf("Commands (unique prefixes work, e.g. :s :n :c :b :bt; Lua otherwise):\n");
    for (int i = 0; i < CMD_COUNT; i++) {
        const cmd_row *r = &cmd_table[i];
        if (r->flags & CMD_F_HIDDEN) continue;
        help_entry h = row_doc(r);
        char usage[128];
        if (h.usage != NULL)
            snprintf(usage, sizeof usage, "%.*s", (int)h.usage_len, h.usage);
        else
            snprintf(usage, sizeof usage, ":%s", r->name);
        if ((int)strlen(usage) > width)
            printf("  %s\n  %-*s  %.*s\n", usage, width, "", (int)h.summary_len, h.summary);
        else
            printf("  %-*s  %.*s\n", width, usage, (int)h.summary_len, h.summary);
    }
    printf("An empty line repeats :step :next :continue :finish :until :reverse-step :lesson. "
           "':help CMD'\n"
           "shows one command with an example, ':help torch.add' (or nn.Linear, fxdb.reinplace)\n"
           "a Lua function. Node names: %%add_3; module paths: layers.0.attn. The same text is\n"
           "docs/API.md; :lesson list lists the lessons.\n");
    fflush(stdout);
    return CMD_OK;
}

/* ======================================================================================== */
/* parsing and running                                                                        */
/* ======================================================================================== */

/* Splits c->rest into words (blanks separate; quotes group and are removed from the value) and
 * sorts them into options and positional words. Strings go into `scratch`, of
 * SCRATCH_SIZE(strlen(rest)) bytes: the word values, then copies of the EXPR and of a Lua-option
 * value, each at most the length of rest plus its terminator. Prints the error and returns false on
 * a bad option. */
static bool parse_args(cmd_ctx *c, char *scratch) {
    const char *s = c->rest;
    const char *raw_start[CMD_MAX_WORDS], *raw_end[CMD_MAX_WORDS];
    char *val[CMD_MAX_WORDS];
    bool quoted[CMD_MAX_WORDS];
    int n = 0;
    char *w = scratch;
    while (*s) {
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '\0') break;
        if (n == CMD_MAX_WORDS) {
            cmd_error(c, n + 1, NULL, "too many arguments", NULL);
            return false;
        }
        raw_start[n] = s;
        val[n] = w;
        quoted[n] = false;
        while (*s && *s != ' ' && *s != '\t') {
            if (*s == '\'' || *s == '"') {
                char q = *s++;
                quoted[n] = true;
                while (*s && *s != q) {
                    if (*s == '\\' && s[1] != '\0') s++;
                    *w++ = *s++;
                }
                if (*s == q) s++;
            } else {
                *w++ = *s++;
            }
        }
        *w++ = '\0';
        raw_end[n] = s;
        n++;
    }

    /* options of the row */
    const char *optname[CMD_MAX_OPTS];
    size_t optlen[CMD_MAX_OPTS];
    char optkind[CMD_MAX_OPTS];
    int nopt = 0;
    for (const char *o = c->row->options; o != NULL && *o && nopt < CMD_MAX_OPTS;) {
        while (*o == ' ') o++;
        const char *e = o;
        while (*e && *e != ' ') e++;
        if (e == o) break;
        char last = e[-1];
        optkind[nopt] = (last == '=' || last == '*') ? last : 'f';
        optname[nopt] = o;
        optlen[nopt] = (size_t)(e - o) - (optkind[nopt] == 'f' ? 0 : 1);
        nopt++;
        o = e;
    }

    const char *expr_start = NULL, *expr_end = NULL; /* raw span of the first run */
    bool run_closed = false;                         /* an option followed the first run */
    for (int i = 0; i < n; i++) {
        /* a row without options takes "--..." words as they are (`:print a --[[c]]`) */
        bool is_opt = nopt > 0 && !quoted[i] && strncmp(val[i], "--", 2) == 0 && val[i][2] != '\0';
        if (!is_opt) {
            c->pos[c->npos] = val[i];
            c->posn[c->npos] = i + 1;
            c->npos++;
            if (run_closed) {
                c->nextra++;
            } else {
                if (expr_start == NULL) expr_start = raw_start[i];
                expr_end = raw_end[i];
            }
            continue;
        }
        if (expr_start != NULL) run_closed = true;
        const char *eq = strchr(val[i], '=');
        size_t nlen = eq ? (size_t)(eq - val[i]) : strlen(val[i]);
        int k;
        for (k = 0; k < nopt; k++)
            if (optlen[k] == nlen && strncmp(optname[k], val[i], nlen) == 0) break;
        if (k == nopt) {
            char hint[200];
            if (nopt == 0) {
                snprintf(hint, sizeof hint, ":%s takes no options", c->row->name);
            } else {
                usage_hint(c->row, hint, sizeof hint);
            }
            cmd_error(c, i + 1, val[i], "unknown option", hint);
            return false;
        }
        if (optkind[k] == 'f') {
            if (eq != NULL) {
                cmd_error(c, i + 1, val[i], "this option takes no value", NULL);
                return false;
            }
            c->opt[k] = "";
        } else if (optkind[k] == '=') {
            if (eq != NULL) {
                c->opt[k] = eq + 1;
            } else if (i + 1 < n && !(strncmp(val[i + 1], "--", 2) == 0 && !quoted[i + 1])) {
                c->opt[k] = val[++i];
            } else {
                cmd_error(c, i + 1, val[i], "needs a value", NULL);
                return false;
            }
        } else {
            /* a Lua expression: raw text of the words up to the next option */
            const char *from = eq ? raw_start[i] + (eq - val[i]) + 1 : NULL;
            int j = i + 1;
            while (j < n && !(strncmp(val[j], "--", 2) == 0 && !quoted[j] && val[j][2] != '\0'))
                j++;
            const char *to = (j > i + 1) ? raw_end[j - 1] : (from ? raw_end[i] : NULL);
            if (from == NULL && j > i + 1) from = raw_start[i + 1];
            if (from == NULL || to <= from) {
                cmd_error(c, i + 1, val[i], "needs a Lua expression", NULL);
                return false;
            }
            size_t len = (size_t)(to - from);
            memcpy(w, from, len);
            w[len] = '\0';
            c->opt[k] = w;
            w += len + 1;
            i = j - 1;
        }
    }
    if (expr_start != NULL) {
        size_t len = (size_t)(expr_end - expr_start);
        memcpy(w, expr_start, len);
        w[len] = '\0';
        c->expr = w;
    }
    return true;
}

/* Protected body of cmd_execute: [lightuserdata line] -> [rc]. */
static int l_execute(lua_State *L) {
    const char *line = lua_touserdata(L, 1);
    while (*line == ' ' || *line == '\t') line++;
    line++; /* the ':' */
    char word[32];
    size_t k = 0;
    while (line[k] && line[k] != ' ' && line[k] != '\t' && k + 1 < sizeof word) {
        word[k] = line[k];
        k++;
    }
    word[k] = '\0';
    const char *rest = line + k;
    while (*rest && *rest != ' ' && *rest != '\t') rest++; /* an over-long word: skip the tail */
    while (*rest == ' ' || *rest == '\t') rest++;

    int nm;
    const cmd_row *r = find_row(word, &nm);
    if (r == NULL) {
        if (word[0] == '\0') {
            term_errorf(":help lists the commands", "missing command name after ':'");
        } else if (nm > 1) {
            char list[256] = "";
            size_t len = strlen(word);
            for (int i = 0; i < CMD_COUNT; i++) {
                if (len >= (size_t)cmd_table[i].min_abbrev &&
                    strncmp(cmd_table[i].name, word, len) == 0) {
                    strncat(list, " :", sizeof list - strlen(list) - 1);
                    strncat(list, cmd_table[i].name, sizeof list - strlen(list) - 1);
                }
            }
            char hint[300];
            snprintf(hint, sizeof hint, "it could be:%s", list);
            term_errorf(hint, "ambiguous command ':%s'", word);
        } else {
            /* a prefix too short for its rows' min_abbrev, or nothing at all */
            char list[256] = "";
            size_t len = strlen(word);
            for (int i = 0; i < CMD_COUNT; i++) {
                if (strncmp(cmd_table[i].name, word, len) == 0 &&
                    !(cmd_table[i].flags & CMD_F_HIDDEN)) {
                    strncat(list, " :", sizeof list - strlen(list) - 1);
                    strncat(list, cmd_table[i].name, sizeof list - strlen(list) - 1);
                }
            }
            char hint[300];
            if (list[0] != '\0')
                snprintf(hint, sizeof hint, "did you mean%s?", list);
            else
                snprintf(hint, sizeof hint, ":help lists the commands");
            term_errorf(hint, "unknown command ':%s'", word);
        }
        lua_pushinteger(L, CMD_ERROR);
        return 1;
    }

    if (r->flags & CMD_F_REPEAT) {
        size_t n = strlen(line) + 1; /* keep ":" + the text */
        if (n + 1 <= sizeof g_last_step) {
            g_last_step[0] = ':';
            memcpy(g_last_step + 1, line, n);
        } else {
            g_last_step[0] = '\0';
        }
    }

    cmd_ctx c;
    memset(&c, 0, sizeof c);
    c.row = r;
    c.rest = rest;
    size_t need = SCRATCH_SIZE(strlen(rest));
    char *scratch = lua_newuserdatauv(L, need, 0); /* [line, scratch] */
    if (!parse_args(&c, scratch)) {
        lua_pushinteger(L, CMD_ERROR);
        return 1;
    }
    int rc = r->fn(L, &c);
    lua_pushinteger(L, rc);
    return 1;
}

/* See repl.h. */
int cmd_execute(lua_State *L, const char *line) {
#ifndef NDEBUG
    static bool checked;
    if (!checked) {
        assert(cmd_table_check() && "colon-command abbreviations overlap");
        checked = true;
    }
#endif
    int top = lua_gettop(L);
    if (!lua_checkstack(L, 8)) {
        term_errorf(NULL, "Lua stack exhausted");
        return CMD_ERROR;
    }
    lua_pushcfunction(L, l_execute);        /* [f] */
    lua_pushlightuserdata(L, (void *)line); /* [f, line] */
    int rc;
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        term_print_error(L, -1);
        rc = CMD_ERROR;
    } else {
        rc = (int)lua_tointeger(L, -1);
    }
    lua_settop(L, top);
    return rc;
}

/* See repl.h. */
int cmd_repeat_last(lua_State *L) {
    if (g_last_step[0] == '\0') return -1;
    char line[CMD_LAST_MAX];
    memcpy(line, g_last_step, sizeof line);
    return cmd_execute(L, line);
}
