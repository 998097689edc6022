/* tests/fuzz/fuzz_repl.c — libFuzzer target over the REPL's line entry (`make fuzz`).
 * Layer: tests (links the program's repl/ files except main.c).
 *
 * Each input is what a user types into a piped session: it becomes stdin and repl_loop reads it
 * line by line exactly as `fxdb -i tests/golden/dbg_model.lua < input` does (':' commands, Lua
 * chunks continued over several lines, `=expr`, a blank line repeating a step). The Lua state is
 * the program's (standard libraries, fxdb, :help) with the small two-layer model of
 * tests/golden/dbg_model.lua (`model`, with example inputs). The model script is read once; every
 * input gets a fresh state running it, so a crash reproduces from its one input and LeakSanitizer
 * sees each input's leaks when the state closes. No crash, sanitizer report or leak is allowed,
 * whatever is typed: errors are printed and the loop goes on.
 *
 * Blocking code cannot stall the fuzzer: each input has a budget of FUZZ_REPL_BUDGET_MS; a
 * watchdog thread then interrupts it the way Ctrl-C does (fxlua_interrupt: running kernels stop,
 * Lua raises "interrupted!"), and again every 20 ms while it still runs (code that catches the
 * error with pcall). Coroutines the input creates get a count hook that raises once the budget is
 * spent (Ctrl-C does not reach them: repl/sigint.c's known limit).
 *
 * The sandbox keeps the input inside the fuzzer: no os.exit / os.execute / io.popen / os.remove /
 * os.rename, no reading the terminal (io.read, io.lines()); the process runs in a fresh temporary
 * folder so files the input saves stay there. Run with -close_fd_mask=3 (the program's output is
 * not wanted) and ASAN_OPTIONS=allocator_may_return_null=1:max_allocation_size_mb=N so that huge
 * tensors fail with out-of-memory errors, as they do in fxdb, instead of a sanitizer report. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "lua/fxlua.h"
#include "repl/help.h"
#include "repl/repl.h"

#define FUZZ_REPL_BUDGET_MS 2000
#define FUZZ_MODEL_SCRIPT "tests/golden/dbg_model.lua"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *g_model;                   /* the model script's text, read once */
static size_t g_model_len;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* guards g_L against lua_close */
static lua_State *g_L;                  /* the state of the running input, or NULL */
static _Atomic int64_t g_deadline_ns;   /* when the running input's budget ends */
static int g_stdin_fd = -1;             /* memfd holding the current input */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static bool budget_spent(void) { return now_ns() > atomic_load(&g_deadline_ns); }

/* The watchdog: interrupts an input that outlives its budget, as Ctrl-C would. */
static void *watchdog(void *arg) {
    (void)arg;
    for (;;) {
        struct timespec d = {0, 20 * 1000000};
        nanosleep(&d, NULL);
        pthread_mutex_lock(&g_lock);
        if (g_L != NULL && budget_spent()) fxlua_interrupt(g_L);
        pthread_mutex_unlock(&g_lock);
    }
    return NULL;
}

/* Count hook of the input's own coroutines: raises once the budget is spent. */
static void coroutine_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    if (budget_spent()) luaL_error(L, "fuzz: time budget spent in a coroutine");
}

/* fuzz_hook_coroutine(co): gives co the budget hook (called for coroutines the input creates). */
static int l_hook_coroutine(lua_State *L) {
    lua_State *co = lua_tothread(L, 1);
    if (co != NULL) lua_sethook(co, coroutine_hook, LUA_MASKCOUNT, 1000);
    return 0;
}

/* Run in every fresh state before the model: the sandbox. Coroutines made by code outside fxdb's
 * own library chunks ("=[fxdb ...]", whose trace coroutines carry the debugger's hooks) get the
 * budget hook. */
static const char k_sandbox[] =
    "local hook = ...\n"
    "os.exit, os.execute, os.remove, os.rename, os.tmpname, os.getenv = nil, nil, nil, nil, nil, nil\n"
    "io.popen, io.read, io.lines, io.input, io.stdin = nil, nil, nil, nil, nil\n"
    "local create, wrap, getinfo = coroutine.create, coroutine.wrap, debug.getinfo\n"
    "local function mine() local s = getinfo(3, 'S'); return not (s and s.source:find('^=%[fxdb')) end\n"
    "coroutine.create = function(f) local co = create(f); if mine() then hook(co) end; return co end\n"
    "coroutine.wrap = function(f)\n"
    "  local co = create(f); if mine() then hook(co) end\n"
    "  return function(...) local r = table.pack(coroutine.resume(co, ...))\n"
    "    if not r[1] then error(r[2], 0) end; return table.unpack(r, 2, r.n) end\n"
    "end\n";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    FILE *f = fopen(FUZZ_MODEL_SCRIPT, "rb");
    if (f == NULL) {
        fprintf(stderr, "fuzz_repl: run from the repository root (%s is missing)\n", FUZZ_MODEL_SCRIPT);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    g_model_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    g_model = malloc(g_model_len + 1);
    if (g_model == NULL || fread(g_model, 1, g_model_len, f) != g_model_len) exit(2);
    g_model[g_model_len] = '\0';
    fclose(f);
    char dir[] = "/tmp/fxdb-fuzz-repl.XXXXXX";
    if (mkdtemp(dir) == NULL || chdir(dir) != 0) exit(2);
    setenv("HOME", dir, 1);
    setenv("NO_COLOR", "1", 1);
    g_stdin_fd = memfd_create("fuzz-repl-stdin", 0);
    if (g_stdin_fd < 0) exit(2);
    pthread_t t;
    if (pthread_create(&t, NULL, watchdog, NULL) != 0) exit(2);
    pthread_detach(t);
    return 0;
}

/* Opens everything main.c opens (except fxdb.render: Graphviz is not what is fuzzed here), the
 * sandbox and the model; run under lua_pcall.  [-0, +0, e] */
static int setup(lua_State *L) {
    luaL_openlibs(L);
    fxlua_openlibs(L);
    help_open(L);
    if (luaL_loadbuffer(L, k_sandbox, sizeof k_sandbox - 1, "=fuzz sandbox") != LUA_OK) lua_error(L);
    lua_pushcfunction(L, l_hook_coroutine);
    lua_call(L, 1, 0);
    if (luaL_loadbuffer(L, g_model, g_model_len, "@" FUZZ_MODEL_SCRIPT) != LUA_OK) lua_error(L);
    lua_call(L, 0, 0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* the input becomes stdin */
    if (ftruncate(g_stdin_fd, 0) != 0 || pwrite(g_stdin_fd, data, size, 0) != (ssize_t)size) return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", g_stdin_fd);
    if (freopen(path, "r", stdin) == NULL) abort();

    lua_State *L = luaL_newstate();
    if (L == NULL) return 0;
    lua_pushcfunction(L, setup);
    if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
        fprintf(stderr, "fuzz_repl: setting up the state failed: %s\n", lua_tostring(L, -1));
        abort();
    }
    atomic_store(&g_deadline_ns, now_ns() + (int64_t)FUZZ_REPL_BUDGET_MS * 1000000);
    pthread_mutex_lock(&g_lock);
    g_L = L;
    pthread_mutex_unlock(&g_lock);
    repl_loop(L, false);
    pthread_mutex_lock(&g_lock);
    g_L = NULL;
    pthread_mutex_unlock(&g_lock);
    fx_interrupt_clear();
    lua_close(L);
    return 0;
}
