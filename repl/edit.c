/* repl/edit.c — line editing and history: libedit behind four macros, plain reads otherwise.
 * Layer: repl.
 *
 * As in lua.c (lua_readline / lua_saveline / lua_freeline) and SQLite's shell_readline, the line
 * editor is reached only through the EDIT_* macros below; building with -DFXDB_NO_LIBEDIT turns
 * them into prompt + getline, with no history and no completion. When stdin is not a terminal the
 * editor is never used: lines are read with getline, no prompt is shown and no history is kept,
 * so transcripts are reproducible.
 *
 * History lives in $HOME/.fxdb_history (nothing when $HOME is unset): loaded at start, saved after
 * every line. A history file that cannot be read or written is ignored silently. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lua.h>

#include "repl/complete.h"
#include "repl/edit.h"
#include "repl/sigint.h"
#include "repl/term.h"

#if !defined(FXDB_NO_LIBEDIT)
#include <editline/readline.h>
#define EDIT_READLINE(prompt) readline(prompt)
#define EDIT_ADD_HISTORY(line) ((void)add_history(line))
#define EDIT_LOAD_HISTORY(path) ((void)read_history(path))
#define EDIT_SAVE_HISTORY(path) ((void)write_history(path))
#else
#define EDIT_READLINE(prompt) plain_readline(prompt)
#define EDIT_ADD_HISTORY(line) ((void)(line))
#define EDIT_LOAD_HISTORY(path) ((void)(path))
#define EDIT_SAVE_HISTORY(path) ((void)(path))
#endif

#define EDIT_HISTORY_FILE ".fxdb_history"
#define EDIT_HISTORY_MAX 1000            /* entries kept in the file */

static bool g_interactive;               /* stdin is a terminal: editor, prompts, history */
static char *g_history_path;             /* malloc'd "$HOME/.fxdb_history", or NULL */
static lua_State *g_L;                   /* for completion */

/* Reads one line from stdin with getline, without its newline. Returns a malloc'd string, or
 * NULL at end of input or on a read error (errno tells which; EINTR after Ctrl-C). */
static char *plain_getline(void) {
    char *buf = NULL;
    size_t cap = 0;
    errno = 0;
    ssize_t n = getline(&buf, &cap, stdin);
    if (n < 0) {
        free(buf);
        return NULL;
    }
    if (n > 0 && buf[n - 1] == '\n')
        buf[n - 1] = '\0';
    return buf;
}

#if defined(FXDB_NO_LIBEDIT)
/* The line editor of a build without libedit: prompt on stdout, then getline. */
static char *plain_readline(const char *prompt) {
    fputs(prompt, stdout);
    fflush(stdout);
    return plain_getline();
}
#else
/* ---- completion glue (libedit's readline compatibility API) ---------------------------------- */

static char **g_cands;                   /* candidates of the completion in progress */
static int g_cand_next;                  /* next one the generator hands out */

/* The generator rl_completion_matches calls: hands out g_cands one by one (malloc'd copies). */
static char *cand_generator(const char *text, int state) {
    (void)text;
    if (state == 0)
        g_cand_next = 0;
    if (g_cands == NULL || g_cands[g_cand_next] == NULL)
        return NULL;
    return strdup(g_cands[g_cand_next++]);
}

/* rl_attempted_completion_function: computes every candidate for the word [start, end) once,
 * then lets libedit build the match list (it also computes the common prefix). Never falls back
 * to libedit's file names: complete.c completes them itself, inside subdirectories too. */
static char **attempt_completion(const char *text, int start, int end) {
    rl_attempted_completion_over = 1;
    complete_free(g_cands);
    g_cands = complete_candidates(g_L, rl_line_buffer, start, end);
    if (g_cands == NULL || g_cands[0] == NULL) {
        complete_free(g_cands);
        g_cands = NULL;
        return NULL;
    }
    char **m = rl_completion_matches(text, cand_generator);
    complete_free(g_cands);
    g_cands = NULL;
    return m;
}
#endif

/* Builds "$HOME/.fxdb_history", or NULL when $HOME is unset or empty. */
static char *history_path(void) {
    const char *home = getenv("HOME");
    if (home == NULL || home[0] == '\0')
        return NULL;
    size_t n = strlen(home) + 1 + strlen(EDIT_HISTORY_FILE) + 1;
    char *p = malloc(n);
    if (p != NULL)
        snprintf(p, n, "%s/%s", home, EDIT_HISTORY_FILE);
    return p;
}

/* Sets up the editor (interactive only) and loads the history. */
void edit_init(lua_State *L, bool interactive) {
    g_L = L;
    g_interactive = interactive;
    if (!interactive)
        return;
#if !defined(FXDB_NO_LIBEDIT)
    rl_readline_name = FXDB_PROGNAME;     /* "fxdb:" lines of ~/.editrc apply */
    rl_catch_signals = 0;                 /* sigint.c owns SIGINT */
    rl_attempted_completion_function = attempt_completion;
    rl_basic_word_break_characters = complete_word_breaks;
    rl_completer_word_break_characters = (char *)complete_word_breaks;
    rl_completion_append_character = '\0';
    rl_initialize();
    stifle_history(EDIT_HISTORY_MAX);
#endif
    g_history_path = history_path();
    if (g_history_path != NULL && access(g_history_path, R_OK) == 0)
        EDIT_LOAD_HISTORY(g_history_path);
}

/* Reads a line; see repl.h for the contract. */
edit_status edit_readline(const char *prompt, char **out) {
    char *line;
    *out = NULL;
    if (g_interactive) {
        line = EDIT_READLINE(prompt);
    } else {
        line = plain_getline();
    }
    if (line == NULL) {
        if (sig_take_idle_interrupt()) {
            clearerr(stdin);
            return EDIT_INTERRUPTED;
        }
        return EDIT_EOF;
    }
    if (sig_take_idle_interrupt()) {
        /* Ctrl-C while typing, and the editor still handed back a line: discard it */
        free(line);
        return EDIT_INTERRUPTED;
    }
    *out = line;
    return EDIT_LINE;
}

/* Adds line to the history and rewrites the history file. */
void edit_add_history(const char *line) {
    if (!g_interactive || line == NULL || line[0] == '\0')
        return;
    EDIT_ADD_HISTORY(line);
    if (g_history_path != NULL)
        EDIT_SAVE_HISTORY(g_history_path);
}

/* Releases what edit_init allocated. */
void edit_shutdown(void) {
    free(g_history_path);
    g_history_path = NULL;
    g_L = NULL;
}
