/* repl/complete.c — Tab completion: colon commands, Lua globals, fields and methods, node names.
 * Layer: repl.
 *
 * What completes where:
 *   ":gr"              command names (":graph")
 *   ":help ex"         command names; ":graph r" -> stage names
 *   "torch.zer"        keys of the value of `torch`; "x:si" -> methods (function values) only
 *   "pri"              globals and Lua keywords
 *   "%add"             node names of the graph in view: the paused trace's raw graph, the run
 *                      session's graph, else fxdb.current.graph (fxdb._complete_names)
 *   ":watch st", ":why st" (and symbols: ":why s"), ":break module la", ":render --why st"
 *                      module paths and state (buffer, parameter, input) names
 *   ":break mu"        the kinds of WHERE (fxdb._complete_names("break"): mutation, op, line, ...)
 *   ":load examples/le", ":render out/g"
 *                      file names, inside subdirectories too (directories end in '/')
 * The value before the cursor is found without running user code: the prefix must be names
 * joined by dots, and each step is a raw lookup that follows metatable __index only while it is
 * a table. Only node-name completion calls Lua (__index of graph objects), and it does so in
 * protected mode. All Lua work runs under lua_pcall, so an error (even out of memory) is dropped
 * and the candidate list is freed by the caller side. */
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lua.h>

#include "repl/complete.h"
#include "repl/syntax.h"

const char complete_word_breaks[] = " \t\n\"'`@$><=;|&{(,+-*/^~#[])}";

#define COMPLETE_MAX_DEPTH 16      /* __index chain links followed */

static complete_commands g_cmds;   /* the command vocabulary (complete_set_commands) */

/* See complete.h. */
void complete_set_commands(const complete_commands *cmds) {
    g_cmds = *cmds;
}

/* Number of command names known (0 before complete_set_commands). */
static int cmd_count(void) {
    return g_cmds.count ? g_cmds.count() : 0;
}

/* The i-th command name. */
static const char *cmd_name_at(int i) {
    return g_cmds.name_at(i);
}

/* The name a typed command word selects, or NULL. */
static const char *cmd_resolve(const char *word) {
    return g_cmds.resolve ? g_cmds.resolve(word) : NULL;
}

/* A growing list of malloc'd candidate strings. */
typedef struct cand_list {
    char **items;    /* (n + 1,) NULL-terminated when handed out */
    int n;           /* used */
    int cap;         /* allocated, excluding the terminator */
    bool oom;        /* an allocation failed: the list is incomplete */
} cand_list;

/* Appends prefix + s (copied). */
static void cand_add(cand_list *c, const char *prefix, const char *s) {
    if (c->oom)
        return;
    if (c->n + 1 >= c->cap) {
        int ncap = c->cap ? c->cap * 2 : 32;
        char **ni = realloc(c->items, (size_t)(ncap + 1) * sizeof *ni);
        if (ni == NULL) {
            c->oom = true;
            return;
        }
        c->items = ni;
        c->cap = ncap;
    }
    size_t lp = strlen(prefix), ls = strlen(s);
    char *v = malloc(lp + ls + 1);
    if (v == NULL) {
        c->oom = true;
        return;
    }
    memcpy(v, prefix, lp);
    memcpy(v + lp, s, ls + 1);
    c->items[c->n++] = v;
    c->items[c->n] = NULL;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts, removes duplicates and hands out the NULL-terminated array (NULL when empty). */
static char **cand_finish(cand_list *c) {
    if (c->n == 0) {
        free(c->items);
        return NULL;
    }
    qsort(c->items, (size_t)c->n, sizeof *c->items, cmp_str);
    int w = 0;
    for (int r = 0; r < c->n; r++) {
        if (w > 0 && strcmp(c->items[w - 1], c->items[r]) == 0)
            free(c->items[r]);
        else
            c->items[w++] = c->items[r];
    }
    c->items[w] = NULL;
    return c->items;
}

/* Frees a candidate array. */
void complete_free(char **cands) {
    if (cands == NULL)
        return;
    for (char **p = cands; *p != NULL; p++)
        free(*p);
    free(cands);
}

static bool starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* True when s is a Lua identifier (and so completes as `a.s` rather than `a["s"]`). */
static bool is_identifier(const char *s, size_t len) {
    if (len == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 1; i < len; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return false;
    return true;
}

/* ======================================================================================== */
/* Lua values: safe lookups                                                                  */
/* ======================================================================================== */

/* The tables that hold a value's fields, in lookup order, found without calling Lua code:
 *   1. the value itself, when a table (raw keys);
 *   2. its `__dict` raw field, when a table, and that table's `_parameters`, `_buffers` and
 *      `_modules` (nn.lua's modules keep every attribute there, PyTorch's __dict__);
 *   3. in its metatable: `__methods` (a methods table that userdata with a function __index
 *      publish for completion), `__class` (the class table, walked like a value), and `__index`
 *      when it is a table (walked like a value).
 * walk_sources calls visit(L, ud) with each table at the top of the stack; visit returns true to
 * stop. The value is at the top on entry and stays there.  [-0, +0, m] */
typedef bool (*source_visit)(lua_State *L, void *ud);

static bool walk_sources(lua_State *L, int depth, source_visit visit, void *ud) {
    static const char *const dict_parts[] = {"_parameters", "_buffers", "_modules", NULL};
    if (depth > COMPLETE_MAX_DEPTH || !lua_checkstack(L, 6))
        return false;
    int v = lua_gettop(L);
    if (lua_type(L, v) == LUA_TTABLE) {
        if (visit(L, ud))
            return true;
        lua_pushliteral(L, "__dict");
        if (lua_rawget(L, v) == LUA_TTABLE) {                 /* [v, dict] */
            for (int i = 0; dict_parts[i] != NULL; i++) {
                lua_pushstring(L, dict_parts[i]);
                if (lua_rawget(L, -2) == LUA_TTABLE && visit(L, ud)) {
                    lua_settop(L, v);
                    return true;
                }
                lua_pop(L, 1);                                /* [v, dict] */
            }
            if (visit(L, ud)) {
                lua_settop(L, v);
                return true;
            }
        }
        lua_settop(L, v);                                     /* [v] */
    }
    if (!lua_getmetatable(L, v))                              /* [v, mt] */
        return false;
    static const char *const mt_parts[] = {"__methods", "__class", "__index", NULL};
    for (int i = 0; mt_parts[i] != NULL; i++) {
        lua_pushstring(L, mt_parts[i]);
        if (lua_rawget(L, v + 1) == LUA_TTABLE) {             /* [v, mt, t] */
            bool stop = (i == 0) ? visit(L, ud) : walk_sources(L, depth + 1, visit, ud);
            if (stop) {
                lua_settop(L, v);
                return true;
            }
        }
        lua_settop(L, v + 1);                                 /* [v, mt] */
    }
    lua_settop(L, v);
    return false;
}

/* Lookup of one key in the sources: the value found is copied to stack slot `result`. */
typedef struct lookup_job {
    const char *key;
    int result;          /* stack index where the found value is copied */
    bool found;
} lookup_job;

static bool visit_lookup(lua_State *L, void *ud) {
    lookup_job *j = ud;
    lua_pushstring(L, j->key);                                /* [t, key] */
    if (lua_rawget(L, -2) == LUA_TNIL) {                      /* [t, v] */
        lua_pop(L, 1);
        return false;
    }
    lua_replace(L, j->result);
    j->found = true;
    return true;
}

/* Replaces the value at the top with its field `key`, looked up raw through walk_sources (no
 * metamethod runs); nil when not found.  [-1, +1, m] */
static void safe_field(lua_State *L, const char *key) {
    lua_pushnil(L);                                           /* [v, slot] */
    lua_insert(L, -2);                                        /* [slot, v] */
    lookup_job j = {key, lua_gettop(L) - 1, false};
    walk_sources(L, 0, visit_lookup, &j);
    lua_pop(L, 1);                                            /* [slot] */
}

/* Key collection: every identifier key of a source that starts with `partial` (and that does
 * not start with "__" unless the partial does). */
typedef struct collect_job {
    cand_list *out;
    const char *prefix;
    const char *partial;
    bool methods_only;   /* keep function values only (after ':') */
} collect_job;

static bool visit_collect(lua_State *L, void *ud) {
    collect_job *j = ud;
    bool hidden_ok = strncmp(j->partial, "__", 2) == 0;
    lua_pushnil(L);                                           /* [t, nil] */
    while (lua_next(L, -2) != 0) {                            /* [t, k, val] */
        if (lua_type(L, -2) == LUA_TSTRING) {
            size_t len;
            const char *k = lua_tolstring(L, -2, &len);
            bool ok = is_identifier(k, len) && starts_with(k, j->partial)
                      && (hidden_ok || strncmp(k, "__", 2) != 0);
            if (ok && j->methods_only)
                ok = lua_type(L, -1) == LUA_TFUNCTION;
            if (ok)
                cand_add(j->out, j->prefix, k);
        }
        lua_pop(L, 1);                                        /* [t, k] */
    }                                                         /* [t] */
    return false;
}

/* Adds prefix..key for every field of the value at the top (see walk_sources); pops the value.
 * [-1, +0, m] */
static void collect_keys(lua_State *L, cand_list *c, const char *prefix, const char *partial,
                         bool methods_only) {
    collect_job j = {c, prefix, partial, methods_only};
    walk_sources(L, 0, visit_collect, &j);
    lua_pop(L, 1);
}

/* What the protected workers receive. */
typedef struct complete_job {
    cand_list *out;
    const char *word;      /* the word being completed */
    const char *kind;      /* for names_words: "node", "module" or "state" */
} complete_job;

static int names_words(lua_State *L);

/* Protected worker: Lua completion of job->word ("torch.zer", "x:si", "pri").  [-0, +0, m] */
static int lua_words(lua_State *L) {
    static const char *const keywords[] = {
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto",
        "if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until",
        "while", NULL,
    };
    complete_job *job = lua_touserdata(L, 1);
    const char *w = job->word;
    const char *sep = NULL;
    for (const char *p = w; *p; p++)
        if (*p == '.' || *p == ':')
            sep = p;
    if (sep == NULL) {
        lua_pushglobaltable(L);
        collect_keys(L, job->out, "", w, false);
        complete_job locals = {job->out, w, "local"};  /* the paused frame's locals */
        lua_pushcfunction(L, names_words);
        lua_pushlightuserdata(L, &locals);
        (void)lua_pcall(L, 1, 0, 0);
        for (int i = 0; keywords[i] != NULL; i++)
            if (starts_with(keywords[i], w))
                cand_add(job->out, "", keywords[i]);
        return 0;
    }
    /* the prefix must be name(.name)*: no calls, no indexing, no ':' inside */
    size_t plen = (size_t)(sep - w);
    lua_pushlstring(L, w, plen + 1);                   /* [.., "a.b." / "a.b:"] */
    const char *prefix = lua_tostring(L, -1);
    lua_pushglobaltable(L);                            /* [.., prefix, _G] */
    size_t i = 0;
    while (i < plen) {
        size_t j = i;
        while (j < plen && w[j] != '.')
            j++;
        if (!is_identifier(w + i, j - i))
            return 0;
        lua_pushlstring(L, w + i, j - i);              /* [.., v, name] */
        const char *name = lua_tostring(L, -1);
        lua_insert(L, -2);                             /* [.., name, v] */
        safe_field(L, name);                           /* [.., name, field] */
        if (i == 0 && lua_isnil(L, -1)) {
            /* not a global: a local of the paused session frame (fxdb.chunk_env) */
            int at = lua_gettop(L);                    /* [.., name, nil] */
            if (lua_getglobal(L, "fxdb") == LUA_TTABLE
                && lua_getfield(L, -1, "chunk_env") == LUA_TFUNCTION) {
                lua_call(L, 0, 1);                     /* [.., name, nil, fxdb, env] */
                if (lua_istable(L, -1)) {
                    lua_getfield(L, -1, name);         /* [.., name, nil, fxdb, env, v] */
                    lua_replace(L, at);                /* [.., name, v, fxdb, env] */
                }
            }
            lua_settop(L, at);                         /* [.., name, v] */
        }
        lua_remove(L, -2);                             /* [.., field] */
        if (lua_isnil(L, -1))
            return 0;
        i = j + 1;
    }
    collect_keys(L, job->out, prefix, sep + 1, *sep == ':');
    return 0;
}

/* Protected worker: names from fxdb._complete_names(job->kind) (lua/session.lua) that start with
 * job->word after its prefix ('%' for nodes); returns without adding when the function is
 * missing. */
static int names_words(lua_State *L) {
    complete_job *job = lua_touserdata(L, 1);
    bool node = strcmp(job->kind, "node") == 0;
    const char *partial = node ? job->word + 1 : job->word;
    if (lua_getglobal(L, "fxdb") != LUA_TTABLE                      /* [fxdb] */
        || lua_getfield(L, -1, "_complete_names") != LUA_TFUNCTION)  /* [fxdb, fn] */
        return 0;
    lua_pushstring(L, job->kind);
    lua_call(L, 1, 1);                                 /* [fxdb, names] */
    if (!lua_istable(L, -1))
        return 0;
    for (lua_Integer k = 1;; k++) {
        if (lua_geti(L, -1, k) != LUA_TSTRING) /* [.., names, name] */
            break;
        const char *name = lua_tostring(L, -1);
        if (starts_with(name, partial))
            cand_add(job->out, node ? "%" : "", name);
        lua_pop(L, 1);
    }
    return 0;
}

/* Protected worker: "%" + node names of fxdb.current.graph that start with job->word (when
 * fxdb._complete_names is missing). Reads fields through metamethods (graph and node objects are
 * userdata), hence protected. */
static int node_words(lua_State *L) {
    complete_job *job = lua_touserdata(L, 1);
    const char *partial = job->word + 1;               /* after '%' */
    if (lua_getglobal(L, "fxdb") != LUA_TTABLE)        /* [fxdb] */
        return 0;
    if (lua_getfield(L, -1, "current") == LUA_TNIL)    /* [fxdb, cur] */
        return 0;
    if (lua_getfield(L, -1, "graph") == LUA_TNIL)      /* [fxdb, cur, g] */
        return 0;
    if (lua_getfield(L, -1, "nodes") == LUA_TNIL)      /* [fxdb, cur, g, nodes] */
        return 0;
    for (lua_Integer k = 1;; k++) {
        if (lua_geti(L, -1, k) == LUA_TNIL)            /* [.., nodes, node] */
            break;
        if (lua_getfield(L, -1, "name") == LUA_TSTRING) {   /* [.., nodes, node, name] */
            const char *name = lua_tostring(L, -1);
            if (starts_with(name, partial))
                cand_add(job->out, "%", name);
        }
        lua_pop(L, 2);                                 /* [.., nodes] */
    }
    return 0;
}

/* Runs a worker in protected mode with the Ctrl-C hook disarmed; errors are dropped. */
static void run_protected(lua_State *L, lua_CFunction fn, complete_job *job) {
    int top = lua_gettop(L);
    lua_pushcfunction(L, fn);
    lua_pushlightuserdata(L, job);
    (void)lua_pcall(L, 1, 0, 0);
    lua_settop(L, top);
}

/* ======================================================================================== */
/* file names                                                                                 */
/* ======================================================================================== */

/* File-name candidates for the word line[start, end) of a :load / :render argument. The argument
 * runs from the blank before `start` to the cursor ("examples/gen"); its directory part is listed
 * (the current one when there is none) and every entry that starts with the part after the last
 * '/' is a candidate, cut to replace only the word (word breaks such as '-' may split the name),
 * with '/' after a directory. Hidden entries only when that part starts with '.'. */
static void file_words(cand_list *c, const char *line, int start, int end) {
    int argstart = start;
    while (argstart > 0 && line[argstart - 1] != ' ' && line[argstart - 1] != '\t')
        argstart--;
    const char *arg = line + argstart;
    size_t alen = (size_t)(end - argstart);
    size_t slash = alen;                               /* index of the last '/', or alen */
    for (size_t i = 0; i < alen; i++)
        if (arg[i] == '/')
            slash = i;
    size_t dlen = slash < alen ? slash + 1 : 0;        /* "examples/" */
    const char *base = arg + dlen;
    size_t blen = alen - dlen;
    size_t wlen = (size_t)(end - start);
    if (wlen > blen)
        return;                                        /* the word spans a '/': not a path */
    size_t skip = blen - wlen;
    char *dir = malloc(dlen + 3);                      /* the folder, or "./" */
    char *path = NULL;
    if (dir == NULL) {
        c->oom = true;
        return;
    }
    if (dlen > 0)
        memcpy(dir, arg, dlen), dir[dlen] = '\0';
    else
        strcpy(dir, "./");
    DIR *d = opendir(dir);
    for (struct dirent *e = d ? readdir(d) : NULL; e != NULL; e = readdir(d)) {
        const char *n = e->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || (n[0] == '.' && base[0] != '.'))
            continue;
        if (strlen(n) < blen || strncmp(n, base, blen) != 0)
            continue;
        size_t plen = strlen(dir) + strlen(n) + 1;
        char *np = realloc(path, plen);
        if (np == NULL) {
            c->oom = true;
            break;
        }
        path = np;
        snprintf(path, plen, "%s%s", dir, n);
        struct stat st;
        bool is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
        if (is_dir) {
            size_t ln = strlen(n + skip);
            char *v = malloc(ln + 2);
            if (v == NULL) {
                c->oom = true;
                break;
            }
            memcpy(v, n + skip, ln);
            v[ln] = '/', v[ln + 1] = '\0';
            cand_add(c, "", v);
            free(v);
        } else {
            cand_add(c, "", n + skip);
        }
    }
    if (d != NULL)
        closedir(d);
    free(path);
    free(dir);
}

/* ======================================================================================== */
/* entry point                                                                                */
/* ======================================================================================== */

/* The blank-separated word before position `start` of line: [*b, *e) (empty when none). */
static void word_before(const char *line, int start, int *b, int *e) {
    *e = start;
    while (*e > 0 && (line[*e - 1] == ' ' || line[*e - 1] == '\t'))
        (*e)--;
    *b = *e;
    while (*b > 0 && line[*b - 1] != ' ' && line[*b - 1] != '\t')
        (*b)--;
}

/* True when the word before position `start` of line is `w` (":break module la" -> "module"). */
static bool previous_word_is(const char *line, int start, const char *w) {
    int b, e;
    word_before(line, start, &b, &e);
    size_t n = strlen(w);
    return (size_t)(e - b) == n && strncmp(line + b, w, n) == 0;
}

/* True when the word at `start` is the first argument of the command whose ':' is at `lead`. */
static bool is_first_argument(const char *line, int start, int lead) {
    int b, e;
    word_before(line, start, &b, &e);
    return b == lead && e < start;
}

/* Stage names `:graph` and `:diff` take. */
static const char *const stage_names[] = {"raw", "functional", "exported", "unlifted", NULL};

/* Candidates for the word line[start, end); see repl.h. */
char **complete_candidates(lua_State *L, const char *line, int start, int end) {
    cand_list c = {0};
    size_t llen = strlen(line);
    if (start < 0 || end < start || (size_t)end > llen)
        return NULL;
    char *word = malloc((size_t)(end - start) + 1);
    if (word == NULL)
        return NULL;
    memcpy(word, line + start, (size_t)(end - start));
    word[end - start] = '\0';
    complete_job job = {&c, word, "node"};

    int lead = 0;
    while (line[lead] == ' ' || line[lead] == '\t')
        lead++;
    bool is_cmd = syntax_is_command(line);

    if (is_cmd && start <= lead) {
        /* the command word itself */
        const char *partial = word[0] == ':' ? word + 1 : word;
        for (int i = 0; i < cmd_count(); i++)
            if (starts_with(cmd_name_at(i), partial))
                cand_add(&c, ":", cmd_name_at(i));
    } else if (word[0] == '%') {
        run_protected(L, names_words, &job);
        if (c.n == 0)
            run_protected(L, node_words, &job);
    } else if (is_cmd) {
        /* an argument: the command word is line[lead+1 .. first blank) */
        char cmd[32];
        size_t k = 0;
        for (const char *p = line + lead + 1; *p && *p != ' ' && *p != '\t' && k + 1 < sizeof cmd;
             p++)
            cmd[k++] = *p;
        cmd[k] = '\0';
        const char *name = cmd_resolve(cmd);
        if (name != NULL && strcmp(name, "help") == 0) {
            for (int i = 0; i < cmd_count(); i++)
                if (starts_with(cmd_name_at(i), word))
                    cand_add(&c, "", cmd_name_at(i));
        } else if (name != NULL && (strcmp(name, "graph") == 0 || strcmp(name, "diff") == 0)) {
            for (int i = 0; stage_names[i] != NULL; i++)
                if (starts_with(stage_names[i], word))
                    cand_add(&c, "", stage_names[i]);
            if (strcmp(name, "diff") == 0)
                run_protected(L, lua_words, &job);
        } else if (name != NULL && (strcmp(name, "watch") == 0 || strcmp(name, "why") == 0
                                    || strcmp(name, "provenance") == 0)) {
            job.kind = strcmp(name, "watch") == 0 ? "state" : "why"; /* :why also takes s0 */
            run_protected(L, names_words, &job);
        } else if (name != NULL && previous_word_is(line, start, "module")) {
            job.kind = "module";
            run_protected(L, names_words, &job);
        } else if (name != NULL && strcmp(name, "render") == 0
                   && previous_word_is(line, start, "--why")) {
            job.kind = "state";
            run_protected(L, names_words, &job);
        } else if (name != NULL
                   && (strcmp(name, "break") == 0 || strcmp(name, "tbreak") == 0
                       || strcmp(name, "until") == 0)
                   && is_first_argument(line, start, lead)) {
            job.kind = "break";                        /* the first word: a kind of WHERE */
            run_protected(L, names_words, &job);
        } else if (name != NULL
                   && (strcmp(name, "load") == 0 || strcmp(name, "render") == 0)) {
            file_words(&c, line, start, end);
        } else {
            run_protected(L, lua_words, &job);
        }
    } else {
        run_protected(L, lua_words, &job);
    }
    free(word);
    if (c.oom) {
        complete_free(cand_finish(&c));
        return NULL;
    }
    return cand_finish(&c);
}
