/* repl/repl.c — the read-eval-print loop, with lua.c's mechanics, plus ':' commands.
 * Layer: repl.
 *
 * One input line goes through these steps, in this order:
 *   1. blank line      -> repeat the last stepping command (:step :next :continue :finish), if any
 *   2. ':'...          -> a colon command (commands.c); "::label::" stays Lua
 *   3. '='expr         -> "return expr" (lua.c's 5.2 compatibility form)
 *   4. "return <line>;" is tried first; if it compiles, the line was an expression
 *   5. otherwise the line is a statement; while the compile error ends in "<eof>" another line
 *      is read ("...> ") and appended with a newline
 *   6. the chunk runs under lua_pcall with a message handler that appends a traceback to string
 *      errors (fxdb error objects are kept as they are: they carry their own location), and with
 *      the Ctrl-C hook armed
 *   7. results are printed with the global `print` (tostring each, tab-separated) and the first
 *      one is kept in the global `_`
 * On a terminal there are prompts ("fxdb> ", "...> "), a banner and history; otherwise the loop
 * reads plain lines and prints only results and errors, so transcripts compare byte for byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/fx.h"
#include "repl/call.h"
#include "repl/commands.h"
#include "repl/edit.h"
#include "repl/repl.h"
#include "repl/syntax.h"

#define PROMPT_FIRST "fxdb> "
#define PROMPT_MORE "...> "
#define EOF_MARK "<eof>"            /* how Lua's parser ends the message of an incomplete chunk */

static bool g_interactive;          /* stdin is a terminal */

/* ======================================================================================== */
/* reading chunks                                                                             */
/* ======================================================================================== */

/* True when the line has only blanks. */
static bool is_blank(const char *line) {
    for (; *line; line++)
        if (*line != ' ' && *line != '\t' && *line != '\r')
            return false;
    return true;
}

/* Reads a line and pushes it. Returns 1, or 0 at end of input, or -1 when Ctrl-C discarded the
 * line.  [-0, +(1|0), m] */
static int pushline(lua_State *L, bool firstline) {
    char *b;
    edit_status st = edit_readline(firstline ? PROMPT_FIRST : PROMPT_MORE, &b);
    if (st == EDIT_EOF)
        return 0;
    if (st == EDIT_INTERRUPTED)
        return -1;
    lua_pushstring(L, b);
    free(b);
    return 1;
}

/* True when status and the message at the top say the chunk is only incomplete; pops the
 * message then (lua.c's incomplete).  [-(0|1), +0, -] */
static bool incomplete(lua_State *L, int status) {
    if (status == LUA_ERRSYNTAX) {
        size_t lmsg;
        const char *msg = lua_tolstring(L, -1, &lmsg);
        size_t lmark = sizeof(EOF_MARK) - 1;
        if (lmsg >= lmark && strcmp(msg + lmsg - lmark, EOF_MARK) == 0) {
            lua_pop(L, 1);
            return true;
        }
    }
    return false;
}

/* [line] -> [line, chunk] when "return <line>;" compiles (LUA_OK), else [line] (lua.c's
 * addreturn; the history entry is added by the caller). */
static int addreturn(lua_State *L) {
    const char *line = lua_tostring(L, -1);
    const char *retline = lua_pushfstring(L, "return %s;", line);   /* [line, retline] */
    int status = luaL_loadbuffer(L, retline, strlen(retline), FXDB_CHUNKNAME);
    if (status == LUA_OK) {
        lua_remove(L, -2);                            /* [line, chunk] */
    } else {
        lua_pop(L, 2);                                /* [line] */
    }
    return status;
}

/* [line] -> [text, chunk|err]: compiles the line as a statement, reading continuation lines
 * while the chunk is incomplete. Returns the load status, or -1 when Ctrl-C abandoned the chunk
 * (then the stack is [text]). */
static int multiline(lua_State *L) {
    for (;;) {
        size_t len;
        const char *line = lua_tolstring(L, -1, &len);
        int status = luaL_loadbuffer(L, line, len, FXDB_CHUNKNAME);   /* [text, chunk|err] */
        if (!incomplete(L, status))
            return status;
        int got = pushline(L, false);                 /* [text, more] */
        if (got == 0) {
            /* end of input inside a chunk: report the incomplete chunk as Lua would */
            return luaL_loadbuffer(L, line, len, FXDB_CHUNKNAME);
        }
        if (got < 0)
            return -1;
        lua_pushliteral(L, "\n");                     /* [text, more, "\n"] */
        lua_insert(L, -2);                            /* [text, "\n", more] */
        lua_concat(L, 3);                             /* [text'] */
    }
}

/* While a debugger session is paused, a typed chunk sees the paused frame's locals: its _ENV
 * becomes fxdb.chunk_env() (lua/session.lua) when that returns a table. The chunk stays in the
 * main thread, whose dispatch context is eager: nothing it runs is recorded.
 * [chunk] -> [chunk]  */
static void set_session_env(lua_State *L) {
    int top = lua_gettop(L);
    if (lua_getglobal(L, "fxdb") == LUA_TTABLE && lua_getfield(L, -1, "chunk_env") == LUA_TFUNCTION
        && lua_pcall(L, 0, 1, 0) == LUA_OK && lua_istable(L, -1)) {   /* [chunk, fxdb, env] */
        if (lua_setupvalue(L, top, 1) != NULL) {
            lua_settop(L, top);
            return;
        }
    }
    lua_settop(L, top);
}

/* Runs one Lua chunk typed at the prompt. Stack on entry: [.., line] with the line at base+1;
 * restored to base on return. Returns false when it failed (the error is printed). */
static bool eval_lua(lua_State *L, int base) {
    const char *first = lua_tostring(L, base + 1);
    bool eq = first[0] == '=';
    if (eq)
        lua_pushfstring(L, "return %s", first + 1);   /* [line, work] */
    else
        lua_pushvalue(L, base + 1);                   /* [line, work] */
    int status = addreturn(L);                        /* [line, work, chunk] or [line, work] */
    if (status != LUA_OK) {
        status = multiline(L);                        /* [line, text, chunk|err] / [line, text] */
        if (status == -1) {                           /* Ctrl-C in a continuation line */
            if (g_interactive)
                fputc('\n', stdout);
            edit_add_history(lua_tostring(L, base + 2));
            lua_settop(L, base);
            return true;
        }
    }
    edit_add_history(lua_tostring(L, eq ? base + 1 : base + 2));
    lua_remove(L, base + 1);
    lua_remove(L, base + 1);                          /* [chunk|err] */
    if (status == LUA_OK)
        set_session_env(L);
    if (status == LUA_OK)
        status = call_docall(L, 0, LUA_MULTRET);      /* [results..] | [err] */
    if (status == LUA_OK) {
        int n = lua_gettop(L) - base;
        if (n > 0) {
            lua_pushvalue(L, base + 1);
            lua_setglobal(L, "_");
            call_print_values(L, n);
        }
    } else {
        call_report(L, status);
    }
    lua_settop(L, base);
    return status == LUA_OK;
}

/* See repl.h. */
bool repl_loop(lua_State *L, bool interactive) {
    g_interactive = interactive;
    bool failed = false;
    int base = lua_gettop(L);
    edit_init(L, interactive);
    if (interactive) {
        printf("fxdb %s (%s)  :help for commands, Ctrl-D to quit\n", FX_VERSION, LUA_RELEASE);
        fflush(stdout);
    }
    for (;;) {
        lua_settop(L, base);
        int got = pushline(L, true);
        if (got == 0)
            break;
        if (got < 0) {
            if (interactive)
                fputc('\n', stdout);
            continue;
        }
        const char *line = lua_tostring(L, -1);
        if (is_blank(line)) {
            if (cmd_repeat_last(L) == CMD_QUIT)
                break;
            continue;
        }
        if (syntax_is_command(line)) {
            edit_add_history(line);
            int rc = cmd_execute(L, line);
            if (rc == CMD_QUIT)
                break;
            failed |= rc == CMD_ERROR;
            continue;
        }
        failed |= !eval_lua(L, base);
    }
    lua_settop(L, base);
    if (interactive) {
        fputc('\n', stdout);
        fflush(stdout);
    }
    edit_shutdown();
    return failed;
}

/* See repl.h. */
int repl_run_line(lua_State *L, const char *line, const char *chunkname) {
    if (syntax_is_command(line))
        return cmd_execute(L, line);
    int status = luaL_loadbuffer(L, line, strlen(line), chunkname);
    if (status == LUA_OK)
        status = call_docall(L, 0, 0);
    return call_report(L, status) == LUA_OK ? CMD_OK : CMD_ERROR;
}
