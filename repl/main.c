/* repl/main.c — the fxdb program: command-line arguments, the Lua state, script / -e / REPL.
 * Layer: repl.
 *
 *   fxdb                       REPL (prompts and editing only when stdin is a terminal)
 *   fxdb FILE.lua [ARGS...]    run the script with ARGS in `arg` (and as `...`); exit 0, or 1 on
 *                              an uncaught error
 *   fxdb -i FILE.lua           run the script, then the REPL in the same globals (also when the
 *                              script fails, so its state can be inspected)
 *   fxdb -e 'CHUNK'            run a Lua chunk, or a ':' command; repeatable; stops at the first
 *                              failure (exit 1)
 *   fxdb -                     run stdin as a script
 *   fxdb --lesson N            lesson N of examples/lessons, then the REPL (lua/lesson.lua)
 *   fxdb --help / --version
 * Options are read as lua.c's collectargs reads them: they end at the first word that is not an
 * option (the script), after "--", or at "-". The global `arg` is built as in lua.c: arg[0] is
 * the script, arg[1..] its arguments, and negative indices hold the interpreter and options.
 * As in lua.c, all the work runs in pmain under lua_pcall, so an error of the Lua API itself is
 * reported and the program exits 1 instead of aborting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "lua/fxlua.h"
#include "repl/call.h"
#include "repl/commands.h"
#include "repl/complete.h"
#include "repl/help.h"
#include "repl/render_bind.h"
#include "repl/repl.h"
#include "repl/sigint.h"
#include "repl/term.h"
#include "viz/fxviz.h"

#define HAS_ERROR 1     /* bad option */
#define HAS_I 2         /* -i */
#define HAS_V 4         /* --version */
#define HAS_E 8         /* -e */
#define HAS_HELP 16     /* --help */
#define HAS_LESSON 32   /* --lesson N */
#define HAS_JSON 64     /* --json FILE... */

static const char *g_progname = FXDB_PROGNAME;
static const char *g_badopt;      /* the offending option, for the usage message */
static const char *g_lesson;      /* N of --lesson N */

/* Prints the usage text on f. */
static void print_usage(FILE *f) {
    fprintf(f,
            "usage: %s [options] [script.lua [args]]\n"
            "Available options are:\n"
            "  -e chunk   run 'chunk' (Lua, or a ':' command such as ':help'); may be repeated\n"
            "  -i         enter the REPL after running 'script' / the -e chunks\n"
            "  --lesson N run lesson N of examples/lessons in the REPL (every step at once when\n"
            "             stdin is not a terminal)\n"
            "  --help     show this text\n"
            "  --version  show version information\n"
            "  --json FILE...  one JSON summary per file (a .pt2, or a .lua script that exports):\n"
            "             signature, op counts, mutations with provenance, :check and :report\n"
            "  --         stop handling options\n"
            "  -          run stdin as a script and stop handling options\n"
            "A script ending in .pt2 is an exported program (torch.export.save): it is loaded and the REPL\n"
            "opens with it current (:graph, :sig, :why, :render, :run).\n"
            "With no script and no -e, %s starts the REPL (type :help there).\n",
            g_progname, g_progname);
    fflush(f);
}

static void print_version(void) {
    printf("%s %s (%s)\n", FXDB_PROGNAME, FX_VERSION, LUA_RELEASE);
    fflush(stdout);
}

/* Scans the options of argv (lua.c's collectargs). Returns HAS_* bits; *first is the index of
 * the script, or argc when there is none. */
static int collectargs(char **argv, int *first) {
    int args = 0;
    int i;
    if (argv[0] == NULL) {
        *first = -1;
        return 0;
    }
    if (argv[0][0] != '\0')
        g_progname = argv[0];
    for (i = 1; argv[i] != NULL; i++) {
        *first = i;
        if (argv[i][0] != '-')               /* not an option: the script */
            return args;
        switch (argv[i][1]) {
        case '-':                            /* "--", "--help", "--version" */
            if (argv[i][2] == '\0') {
                *first = i + 1;
                return args;
            }
            if (strcmp(argv[i], "--help") == 0) {
                args |= HAS_HELP;
                break;
            }
            if (strcmp(argv[i], "--version") == 0) {
                args |= HAS_V;
                break;
            }
            if (strcmp(argv[i], "--json") == 0) { /* the files follow, as a script would */
                args |= HAS_JSON;
                break;
            }
            if (strncmp(argv[i], "--lesson=", 9) == 0 && argv[i][9] != '\0') {
                args |= HAS_LESSON;
                g_lesson = argv[i] + 9;
                break;
            }
            if (strcmp(argv[i], "--lesson") == 0) {
                if (argv[i + 1] == NULL) {
                    g_badopt = argv[i];
                    return HAS_ERROR;
                }
                args |= HAS_LESSON;
                g_lesson = argv[++i];
                break;
            }
            g_badopt = argv[i];
            return HAS_ERROR;
        case '\0':                           /* "-": the script is stdin */
            return args;
        case 'i':
            if (argv[i][2] != '\0') {
                g_badopt = argv[i];
                return HAS_ERROR;
            }
            args |= HAS_I;
            break;
        case 'v':
            if (argv[i][2] != '\0') {
                g_badopt = argv[i];
                return HAS_ERROR;
            }
            args |= HAS_V;
            break;
        case 'e':
            args |= HAS_E;
            if (argv[i][2] == '\0') {        /* no concatenated chunk: take the next word */
                i++;
                if (argv[i] == NULL) {
                    g_badopt = argv[i - 1];
                    return HAS_ERROR;
                }
            }
            break;
        default:
            g_badopt = argv[i];
            return HAS_ERROR;
        }
    }
    *first = i;
    return args;
}

/* Builds the global `arg` (lua.c's createargtable).  [-0, +0, e] */
static void createargtable(lua_State *L, char **argv, int argc, int script) {
    int narg = argc - (script + 1);
    if (narg < 0)
        narg = 0;
    lua_createtable(L, narg, script + 1);                 /* [arg] */
    for (int i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - script);
    }
    lua_setglobal(L, "arg");                              /* [] */
}

/* Starts lesson g_lesson (fxdb.lesson, lua/lesson.lua): on a terminal its first step, as
 * `:lesson N` does; otherwise every step at once, since nobody is there to ask for the next.
 * Returns the call's status.
 * [-0, +0, e] */
static int start_lesson(lua_State *L) {
    if (term_is_tty(STDIN_FILENO)) {
        /* through the command, so that an empty line then runs the next step */
        const char *line = lua_pushfstring(L, ":lesson %s", g_lesson);
        int rc = repl_run_line(L, line, "=(command line)");
        lua_pop(L, 1);
        return rc == CMD_OK ? LUA_OK : LUA_ERRRUN;
    }
    lua_getglobal(L, "fxdb");                             /* [fxdb] */
    lua_getfield(L, -1, "lesson");                        /* [fxdb, fn] */
    lua_remove(L, -2);                                    /* [fn] */
    lua_pushstring(L, g_lesson);                          /* [fn, N] */
    lua_createtable(L, 0, 1);                             /* [fn, N, opts] */
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "all");
    return call_report(L, call_docall(L, 2, 0));
}

/* Runs every -e chunk in order; stops at the first failure. Returns CMD_OK, CMD_ERROR or
 * CMD_QUIT. */
static int runargs(lua_State *L, char **argv, int n) {
    for (int i = 1; i < n; i++) {
        if (argv[i][0] != '-' || argv[i][1] != 'e')
            continue;
        const char *chunk = argv[i][2] != '\0' ? argv[i] + 2 : argv[++i];
        int rc = repl_run_line(L, chunk, "=(command line)");
        if (rc != CMD_OK)
            return rc;
    }
    return CMD_OK;
}

/* Pushes the script arguments (arg[1..]) and returns how many.  [-0, +n, e] */
static int pushargs(lua_State *L) {
    if (lua_getglobal(L, "arg") != LUA_TTABLE)
        luaL_error(L, "'arg' is not a table");
    int n = (int)luaL_len(L, -1);
    luaL_checkstack(L, n + 3, "too many arguments to script");
    for (int i = 1; i <= n; i++)
        lua_rawgeti(L, -i, i);
    lua_remove(L, -(n + 1));                              /* remove `arg` */
    return n;
}

/* Loads and runs the script argv[script] ("-" = stdin unless after "--") with its arguments;
 * reports an error. Returns the status.  [-0, +0, e] */
static int handle_script(lua_State *L, char **argv, int script) {
    const char *fname = argv[script];
    if (strcmp(fname, "-") == 0 && (script == 0 || strcmp(argv[script - 1], "--") != 0))
        fname = NULL;                                     /* stdin */
    int status = luaL_loadfile(L, fname);                 /* [chunk|err] */
    if (status == LUA_OK) {
        int n = pushargs(L);                              /* [chunk, args..] */
        status = call_docall(L, n, LUA_MULTRET);          /* [results..|err] */
    }
    call_report(L, status);
    lua_settop(L, 0);
    return status;
}

/* Whether fname names a PT2 archive (ends in ".pt2"). */
static bool is_pt2(const char *fname) {
    size_t n = fname ? strlen(fname) : 0;
    return n > 4 && strcmp(fname + n - 4, ".pt2") == 0;
}

/* Calls fxdb.<fn>(arg) with arg a string (or, when files != NULL, a list of the nfiles strings),
 * reporting an error. Returns the status; *truthy says whether the result was true.
 * [-0, +0, e] */
static int call_fxdb(lua_State *L, const char *fn, const char *arg, char **files, int nfiles,
                     bool *truthy) {
    lua_getglobal(L, "fxdb");                             /* [fxdb] */
    lua_getfield(L, -1, fn);                              /* [fxdb, f] */
    lua_remove(L, -2);                                    /* [f] */
    if (files) {
        lua_createtable(L, nfiles, 0);
        for (int i = 0; i < nfiles; i++) {
            lua_pushstring(L, files[i]);
            lua_rawseti(L, -2, i + 1);
        }
    } else {
        lua_pushstring(L, arg);
    }
    int status = call_docall(L, 1, 1);
    if (truthy) *truthy = status == LUA_OK && lua_toboolean(L, -1);
    call_report(L, status);
    lua_settop(L, 0);
    return status;
}

/* fxdb model.pt2: the program becomes current and the REPL opens on it. */
static int open_pt2(lua_State *L, const char *fname) {
    int status = call_fxdb(L, "open", fname, NULL, 0, NULL);
    if (status == LUA_OK) {
        printf("%s: the exported program is current (:graph, :sig, :why TARGET, :render FILE, "
               ":run)\n", fname);
        fflush(stdout);
    }
    return status;
}

/* The body, run protected: [argc, argv] -> [ok]. */
static int pmain(lua_State *L) {
    int argc = (int)lua_tointeger(L, 1);
    char **argv = (char **)lua_touserdata(L, 2);
    int script;
    int args = collectargs(argv, &script);
    int optlim = (script > 0) ? script : argc;
    lua_settop(L, 0);
    if (args == HAS_ERROR) {
        fprintf(stderr, "%s: ", g_progname);
        if (g_badopt != NULL && ((g_badopt[1] == 'e' && g_badopt[2] == '\0')
                                 || strcmp(g_badopt, "--lesson") == 0))
            fprintf(stderr, "'%s' needs argument\n", g_badopt);
        else
            fprintf(stderr, "unrecognized option '%s'\n", g_badopt ? g_badopt : "?");
        print_usage(stderr);
        return 0;
    }
    if (args & HAS_HELP) {
        print_usage(stdout);
        lua_pushboolean(L, 1);
        return 1;
    }
    if (args & HAS_V) {
        print_version();
        if (!(args & (HAS_E | HAS_I)) && script == argc) {
            lua_pushboolean(L, 1);
            return 1;
        }
    }
    luaL_checkversion(L);
    luaL_openlibs(L);
    fxlua_openlibs(L);
    render_bind_open(L);
    help_open(L);
    createargtable(L, argv, argc, script);
    lua_gc(L, LUA_GCGEN, 0, 0);
    sig_init(L);
    complete_set_commands(&(complete_commands){cmd_count, cmd_name_at, cmd_resolve});

    /* With -i a failing chunk or script still opens the REPL (as python -i does), so the state
     * it left can be inspected; without -i the first failure ends the program with status 1. */
    if (args & HAS_JSON) { /* fxdb --json FILE...: documents on stdout, nothing else */
        bool ok = false;
        if (script >= argc) {
            fprintf(stderr, "%s: --json needs at least one FILE\n", g_progname);
            return 0;
        }
        if (call_fxdb(L, "_json_main", NULL, argv + script, argc - script, &ok) != LUA_OK)
            return 0;
        lua_pushboolean(L, ok);
        return 1;
    }
    int rc = runargs(L, argv, optlim);
    if (rc == CMD_ERROR && !(args & HAS_I))
        return 0;
    if (rc == CMD_QUIT) {
        lua_pushboolean(L, 1);
        return 1;
    }
    bool pt2 = script < argc && is_pt2(argv[script]);
    if (rc == CMD_OK && script < argc &&
        (pt2 ? open_pt2(L, argv[script]) : handle_script(L, argv, script)) != LUA_OK &&
        !(args & HAS_I))
        return 0;
    if ((args & HAS_LESSON) && start_lesson(L) != LUA_OK)
        return 0;
    /* a session piped on stdin goes on after an error but exits non-zero, as -e does */
    bool tty = term_is_tty(STDIN_FILENO), failed = false;
    if ((args & (HAS_I | HAS_LESSON)) || pt2 || (script == argc && !(args & (HAS_E | HAS_V))))
        failed = repl_loop(L, tty);
    lua_pushboolean(L, tty || !failed);
    return 1;
}

int main(int argc, char **argv) {
    /* No mallopt here: tensor buffers of 1 MiB or more are reused by libfxdb's own cache
     * (core/alloc_cache.h), so the program runs with the allocator policy a C user of libfxdb.a
     * gets, one policy with a limit and fx_alloc_cache_empty. The mallopt(M_MMAP_THRESHOLD /
     * M_TRIM_THRESHOLD, 1 GiB) this program used to set gave no further speed once the cache was
     * in (fresh elementwise outputs of 256 K - 16 M floats, stories15M decode: same CPU time and
     * page faults with and without it) and kept up to 1 GiB of freed heap out of the system's
     * reach, beyond any control of fxdb's. */
    term_init();
    lua_State *L = luaL_newstate();
    if (L == NULL) {
        fprintf(stderr, "%s: cannot create state: not enough memory\n", argv[0]);
        return EXIT_FAILURE;
    }
    lua_pushcfunction(L, pmain);
    lua_pushinteger(L, argc);
    lua_pushlightuserdata(L, argv);
    int status = lua_pcall(L, 2, 1, 0);
    int ok = lua_toboolean(L, -1);
    if (status != LUA_OK)
        term_print_error(L, -1);
    lua_close(L);
    fxviz_shutdown();
    return (ok && status == LUA_OK) ? EXIT_SUCCESS : EXIT_FAILURE;
}
