/* repl/term.c — terminal detection, colours, and the layout of error blocks (docs/API.md §8).
 * Layer: repl.
 *
 * Colours are used only when the stream is a terminal and $NO_COLOR is unset, so transcripts fed
 * on stdin and captured to files are plain text. Errors go to stderr after stdout is flushed, so
 * a captured "2>&1" transcript keeps the order the user saw. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "repl/term.h"

static bool g_color_out;   /* stdout gets colours */
static bool g_color_err;   /* stderr gets colours */

/* ======================================================================================== */
/* tty and colours                                                                          */
/* ======================================================================================== */

/* Decides colour use for stdout and stderr. */
void term_init(void) {
    bool allowed = getenv("NO_COLOR") == NULL;
    g_color_out = allowed && isatty(STDOUT_FILENO);
    g_color_err = allowed && isatty(STDERR_FILENO);
}

/* True when fd is a terminal. */
bool term_is_tty(int fd) {
    return isatty(fd) != 0;
}

/* SGR escape for a named style on stream f; "" when f gets no colours or the name is unknown. */
const char *term_sgr(FILE *f, const char *style) {
    static const struct { const char *name, *seq; } styles[] = {
        {"reset", "\033[0m"}, {"bold", "\033[1m"},   {"dim", "\033[2m"},
        {"red", "\033[1;31m"}, {"green", "\033[32m"}, {"yellow", "\033[33m"},
        {"blue", "\033[34m"},  {"magenta", "\033[35m"}, {"cyan", "\033[36m"},
    };
    bool on = (f == stdout) ? g_color_out : (f == stderr) ? g_color_err : false;
    if (!on)
        return "";
    for (size_t i = 0; i < sizeof styles / sizeof styles[0]; i++)
        if (strcmp(styles[i].name, style) == 0)
            return styles[i].seq;
    return "";
}

/* ======================================================================================== */
/* error blocks                                                                              */
/* ======================================================================================== */

/* Pushes field `name` of the object at idx as a string when it is a non-empty string (or a
 * number), else pushes nothing. Returns the string or NULL. May raise (runs protected). */
static const char *opt_field(lua_State *L, int idx, const char *name) {
    lua_getfield(L, idx, name);                       /* [.., v] */
    if ((lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER)
        && lua_rawlen(L, -1) > 0) {
        return lua_tostring(L, -1);
    }
    lua_pop(L, 1);                                    /* [..] */
    return NULL;
}

/* Appends the styled text: style, s, reset. */
static void add_styled(luaL_Buffer *b, const char *style, const char *s) {
    luaL_addstring(b, term_sgr(stderr, style));
    luaL_addstring(b, s);
    luaL_addstring(b, term_sgr(stderr, "reset"));
}

/* Protected worker of term_print_error: [err] -> [err, text]. The error object's fields are read
 * with lua_getfield, so a userdata error with an __index metamethod works as well as a table.
 *   error: <message>          (or "export error (<kind>): <message>", see `staged`)
 *     at <location> in <func>:   <source>
 *     module: <module> (<cls>)
 *     hint: <hint> */
static int format_error(lua_State *L) {
    luaL_Buffer b;
    int t = lua_type(L, 1);
    if (t == LUA_TSTRING || t == LUA_TNUMBER) {
        const char *msg = lua_tostring(L, 1);
        luaL_buffinit(L, &b);
        add_styled(&b, "red", "error:");
        luaL_addchar(&b, ' ');
        luaL_addstring(&b, msg);
        luaL_pushresult(&b);
        return 1;
    }
    if (t != LUA_TTABLE && t != LUA_TUSERDATA) {
        lua_pushfstring(L, "%serror:%s (error object is a %s value)", term_sgr(stderr, "red"),
                        term_sgr(stderr, "reset"), luaL_typename(L, 1));
        return 1;
    }
    /* stack: [err]; each opt_field leaves its string on the stack while in use */
    const char *msg = opt_field(L, 1, "message");
    if (msg == NULL)
        msg = opt_field(L, 1, "msg");
    if (msg == NULL)
        msg = luaL_tolstring(L, 1, NULL);            /* __tostring, or "table: 0x..." */
    const char *kind = opt_field(L, 1, "kind");
    const char *code = opt_field(L, 1, "code");
    const char *stage = opt_field(L, 1, "stage");
    /* the "export error (kind)" header: export refusals and data-dependent stops (fx_err codes,
     * as lua/ sets them), an explicit stage, or a kind without a code (errors built in Lua) */
    bool staged = kind != NULL
                  && (stage != NULL || code == NULL || strcmp(code, "FX_EEXPORT") == 0
                      || strcmp(code, "FX_EDATADEP") == 0);
    const char *loc = opt_field(L, 1, "location");
    const char *func = opt_field(L, 1, "func");
    if (func == NULL)
        func = opt_field(L, 1, "function");
    const char *src = opt_field(L, 1, "source");
    const char *mod = opt_field(L, 1, "module");
    const char *cls = opt_field(L, 1, "cls");
    if (cls == NULL)
        cls = opt_field(L, 1, "module_class");
    const char *hint = opt_field(L, 1, "hint");

    luaL_buffinit(L, &b);
    if (staged) {
        luaL_addstring(&b, term_sgr(stderr, "red"));
        luaL_addstring(&b, stage != NULL ? stage : "export");
        luaL_addstring(&b, " error (");
        luaL_addstring(&b, kind);
        luaL_addstring(&b, "):");
        luaL_addstring(&b, term_sgr(stderr, "reset"));
    } else {
        add_styled(&b, "red", "error:");
    }
    luaL_addchar(&b, ' ');
    luaL_addstring(&b, msg);
    if (loc != NULL) {
        luaL_addstring(&b, "\n  at ");
        add_styled(&b, "bold", loc);
        if (func != NULL) {
            luaL_addstring(&b, " in ");
            luaL_addstring(&b, func);
        }
        if (src != NULL) {
            luaL_addstring(&b, ":   ");
            add_styled(&b, "dim", src);
        }
    } else if (src != NULL) {
        luaL_addstring(&b, "\n  code: ");
        add_styled(&b, "dim", src);
    }
    if (mod != NULL) {
        luaL_addstring(&b, "\n  module: ");
        luaL_addstring(&b, mod);
        if (cls != NULL) {
            luaL_addstring(&b, " (");
            luaL_addstring(&b, cls);
            luaL_addchar(&b, ')');
        }
    }
    if (hint != NULL) {
        luaL_addstring(&b, "\n  ");
        add_styled(&b, "cyan", "hint:");
        luaL_addchar(&b, ' ');
        luaL_addstring(&b, hint);
    }
    luaL_pushresult(&b);
    return 1;
}

/* Prints the error block for the value at idx on stderr. */
void term_print_error(lua_State *L, int idx) {
    int top = lua_gettop(L);
    idx = lua_absindex(L, idx);
    fflush(stdout);
    lua_pushcfunction(L, format_error);               /* [.., fmt] */
    lua_pushvalue(L, idx);                            /* [.., fmt, err] */
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) {
        fprintf(stderr, "%s\n", lua_tostring(L, -1));
    } else {
        const char *why = lua_tostring(L, -1);
        fprintf(stderr, "%serror:%s (error object could not be printed: %s)\n",
                term_sgr(stderr, "red"), term_sgr(stderr, "reset"), why ? why : "?");
    }
    fflush(stderr);
    lua_settop(L, top);
}

/* Prints "error: ..." and an optional hint line on stderr. */
void term_errorf(const char *hint, const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "%serror:%s ", term_sgr(stderr, "red"), term_sgr(stderr, "reset"));
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (hint != NULL)
        fprintf(stderr, "  %shint:%s %s\n", term_sgr(stderr, "cyan"), term_sgr(stderr, "reset"),
                hint);
    fflush(stderr);
}
