/* repl/sigint.c — Ctrl-C: interrupts running Lua code with "interrupted!", or discards the line
 * being typed at the prompt.
 * Layer: repl.
 *
 * As in lua.c's laction, the signal handler touches the Lua state only through lua_sethook (via
 * fxlua_interrupt, which hooks whichever coroutine is running); the hook then raises the error
 * from inside Lua, where raising is legal. While Lua runs, the first Ctrl-C arms the hook and
 * resets SIGINT to its default action, so a second Ctrl-C before the hook fires (stuck in a long
 * C kernel) ends the process, again as lua.c does. While idle at the prompt, Ctrl-C only sets a
 * flag: the read is interrupted (the handler is installed without SA_RESTART) and the line
 * editor prints a fresh prompt.
 *
 * Known limit, shared with lua.c: a coroutine the user created and runs in a loop is not reached
 * (Lua keeps hooks per thread and copies them only when a thread is created; fxlua_interrupt
 * reaches the main thread and fxdb's own trace coroutines). A permanent count hook inherited by
 * every coroutine would reach it, but any hook makes Lua's VM trace every instruction (measured:
 * twice as slow on pure Lua loops), so fxdb does not pay that; the second Ctrl-C ends fxdb. */
#include <signal.h>
#include <stddef.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "lua/fxlua.h"
#include "repl/sigint.h"

static lua_State *volatile g_L;              /* the state Ctrl-C interrupts */
static volatile sig_atomic_t g_running;      /* 1 while Lua code runs under call_docall */
static volatile sig_atomic_t g_idle_intr;    /* Ctrl-C arrived while idle; read by edit.c */
static int g_depth;                          /* nesting of sig_running(true) calls */
static volatile sig_atomic_t g_run_intr;     /* Ctrl-C arrived while Lua ran; read by repl.c */

static void on_sigint(int sig);

/* Installs on_sigint for SIGINT without SA_RESTART, so a blocking read at the prompt returns
 * EINTR and the line editor can notice the interrupt. */
static void install_handler(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGINT, &sa, NULL);
}

static void on_sigint(int sig) {
    if (g_running && g_L != NULL) {
        /* if another SIGINT happens before the hook runs, terminate the process (lua.c) --
         * unless a debugger session is open, whose state would be lost: kernels stop at the
         * first Ctrl-C (they look at the interrupt flag), so a second one only re-arms */
        if (!fxlua_session_open()) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = SIG_DFL;
            sigemptyset(&sa.sa_mask);
            sigaction(sig, &sa, NULL);
        }
        g_run_intr = 1;
        fxlua_interrupt(g_L);
    } else {
        g_idle_intr = 1;
    }
}

/* Remembers L and installs the handler; called once after the Lua state exists. */
void sig_init(lua_State *L) {
    g_L = L;
    g_running = 0;
    g_idle_intr = 0;
    install_handler();
}

/* Marks the start / end of a Lua call (calls nest: a colon command's Lua call runs inside the
 * command). Entering clears a stale idle flag; both reinstall the handler, which the first
 * Ctrl-C of a run replaced by SIG_DFL. */
void sig_running(bool running) {
    if (running) {
        if (g_depth++ == 0)
            g_run_intr = 0;
        g_idle_intr = 0;
    } else if (g_depth > 0) {
        g_depth--;
    }
    install_handler();
    g_running = g_depth > 0 ? 1 : 0;
}

/* Returns and clears the idle-interrupt flag. */
bool sig_take_idle_interrupt(void) {
    bool was = g_idle_intr != 0;
    g_idle_intr = 0;
    return was;
}

/* Returns and clears the "Ctrl-C arrived while Lua ran" flag. */
bool sig_take_run_interrupt(void) {
    bool was = g_run_intr != 0;
    g_run_intr = 0;
    return was;
}
