/* viz/viz_render.c — the process's GVC_t, layout with dot, rendering by file extension, errors.
 * Layer: viz. Lifecycle (Graphviz's dot.demo order): vz_build -> gvLayout -> gvRenderFilename ->
 * gvFreeLayout -> agclose; the GVC_t lives until fxviz_shutdown (gvFreeContext). Graphviz's
 * messages never reach stderr: they go through agseterrf into a buffer and come back in fx_err. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <graphviz/gvc.h>

#include "viz/viz_impl.h"

/* ---- error capture --------------------------------------------------------------------------- */
/* cgraph hands the user function each message in pieces ("Error", ": ", text); they are
 * concatenated here. Process-wide, like Graphviz's own error state. */
static char vz_errbuf[FX_ERR_MSG];
static size_t vz_errlen;
static agusererrf vz_prev_errf;

static int vz_capture(char *msg) {
    size_t n = msg ? strlen(msg) : 0;
    if (vz_errlen + n >= sizeof vz_errbuf) n = sizeof vz_errbuf - 1 - vz_errlen;
    memcpy(vz_errbuf + vz_errlen, msg, n);
    vz_errlen += n;
    vz_errbuf[vz_errlen] = '\0';
    return 0;
}

void vz_err_begin(void) {
    vz_errlen = 0;
    vz_errbuf[0] = '\0';
    vz_prev_errf = agseterrf(vz_capture);
    agreseterrors();
}

int vz_err_end(char *msg, size_t cap) {
    int level = agreseterrors();
    agseterrf(vz_prev_errf);
    vz_prev_errf = NULL;
    if (msg && cap) {
        /* trim trailing newlines and spaces; fold inner newlines into "; " */
        size_t len = vz_errlen;
        while (len && (vz_errbuf[len - 1] == '\n' || vz_errbuf[len - 1] == ' ')) len--;
        size_t j = 0;
        for (size_t i = 0; i < len && j + 1 < cap; i++) {
            if (vz_errbuf[i] == '\n') {
                if (j + 2 < cap) {
                    msg[j++] = ';';
                    msg[j++] = ' ';
                }
            } else {
                msg[j++] = vz_errbuf[i];
            }
        }
        msg[j] = '\0';
    }
    return level;
}

/* ---- the context ----------------------------------------------------------------------------- */
static GVC_t *vz_gvc;

GVC_t *vz_context(fx_err *err) {
    if (!vz_gvc) {
        vz_err_begin();
        vz_gvc = gvContext();
        char msg[FX_ERR_MSG / 2];
        vz_err_end(msg, sizeof msg);
        if (!vz_gvc) {
            fx_err_setf(err, FX_ENOMEM, "fxviz: Graphviz could not create its context%s%s",
                        msg[0] ? ": " : "", msg);
        }
    }
    return vz_gvc;
}

void fxviz_shutdown(void) {
    if (vz_gvc) {
        gvFreeContext(vz_gvc);
        vz_gvc = NULL;
    }
}

/* ---- formats --------------------------------------------------------------------------------- */
/* The Graphviz output format for the extension of path, or NULL. */
static const char *vz_format_of(const char *path) {
    static const struct {
        const char *ext;
        const char *format;
    } formats[] = {{"svg", "svg"}, {"png", "png"}, {"pdf", "pdf"}, {"dot", "dot"}, {"gv", "dot"}};
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot[1] == '\0') return NULL;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        if (strcasecmp(dot + 1, formats[i].ext) == 0) return formats[i].format;
    }
    return NULL;
}

/* ---- the layout in a child process ----------------------------------------------------------- */
/* dot cannot be interrupted and may run for long: the layout runs in a forked child, the parent
 * waits for its fx_err on a pipe, prints progress, and on SIGINT kills the child. */
static volatile sig_atomic_t vz_sigint;
static void vz_on_sigint(int sig) { vz_sigint = 1; }

static double vz_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void vz_write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return;
        c += k;
        n -= (size_t)k;
    }
}

int vz_run_child(vz_job fn, void *ctx, const char *what, bool progress, fx_err *err) {
    int fds[2];
    if (pipe(fds) != 0) return fn(ctx, err); /* no pipe: lay out here, uninterruptible */
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return fn(ctx, err);
    }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        /* dot recurses once per rank in places: let the stack grow as far as allowed */
        struct rlimit rl;
        if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_STACK, &rl);
        }
        close(fds[0]);
        /* stdin's file offset is shared with the parent: should anything in the child end it
         * through exit() (which syncs a read stream's offset back to what stdio consumed), the
         * REPL reading a script on stdin would read lines twice */
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) {
            dup2(devnull, STDIN_FILENO);
            close(devnull);
        }
        fx_err cerr;
        memset(&cerr, 0, sizeof cerr); /* all of it goes down the pipe, message tail included */
        fx_err_clear(&cerr);
        fn(ctx, &cerr);
        vz_write_all(fds[1], &cerr, sizeof cerr);
        close(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = vz_on_sigint;
    sigemptyset(&sa.sa_mask);
    vz_sigint = 0;
    sigaction(SIGINT, &sa, &old);
    double t0 = vz_now(), next = t0 + 1.0;
    fx_err cerr;
    size_t got = 0;
    int cancelled = 0;
    for (;;) {
        if (vz_sigint) {
            cancelled = 1;
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd pfd = {fds[0], POLLIN, 0};
        int pr = poll(&pfd, 1, 250);
        if (pr < 0 && errno != EINTR) break;
        if (pr > 0) {
            ssize_t k = read(fds[0], (char *)&cerr + got, sizeof cerr - got);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) break; /* EOF: the child is done (or died) */
            got += (size_t)k;
            if (got == sizeof cerr) break;
        }
        double t = vz_now();
        if (progress && t >= next) {
            fprintf(stderr, "fxviz: %s ... %.0f s (Ctrl-C cancels)\n", what, t - t0);
            fflush(stderr);
            next = t + (t - t0 < 10 ? 1.0 : 5.0);
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    sigaction(SIGINT, &old, NULL);
    if (progress && vz_now() - t0 >= 1.0 && !cancelled) {
        fprintf(stderr, "fxviz: %s took %.1f s\n", what, vz_now() - t0);
    }
    if (cancelled) {
        fx_err_setf(err, FX_EINTERNAL, "fxviz: layout cancelled (Ctrl-C) after %.1f s",
                    vz_now() - t0);
        fx_err_hintf(err, "a smaller picture lays out faster: --depth 0, or one module alone");
        return FX_EINTERNAL;
    }
    if (got != sizeof cerr) {
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) {
            fx_err_setf(err, FX_EINTERNAL,
                        "fxviz: Graphviz crashed laying out this graph "
                        "(SIGSEGV; dot runs out of stack on very deep graphs)");
            fx_err_hintf(err, "draw less at once: --depth 0, a module alone, or --collapse");
            return FX_EINTERNAL;
        }
        return fx_err_setf(err, FX_EINTERNAL,
                           "fxviz: the layout process ended without a result (%s %d)",
                           WIFSIGNALED(status) ? "signal" : "exit status",
                           WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
    if (err) *err = cerr;
    return cerr.code;
}

/* ---- public ---------------------------------------------------------------------------------- */
typedef struct vz_render_job {
    const fx_graph *g;
    const char *path;
    const char *format;
    const fxviz_opts *opts;
} vz_render_job;

static int vz_render_here(void *ctx, fx_err *err) {
    vz_render_job *j = ctx;
    GVC_t *gvc = vz_context(err);
    if (!gvc) return err->code;
    char msg[FX_ERR_MSG / 2];
    Agraph_t *ag = NULL;
    vz_err_begin();
    int rc = vz_build(j->g, j->opts, &ag, err);
    if (rc != FX_OK) {
        vz_err_end(NULL, 0);
        return rc;
    }
    if (gvLayout(gvc, ag, "dot") != 0) {
        vz_err_end(msg, sizeof msg);
        agclose(ag);
        return fx_err_setf(err, FX_EINTERNAL, "fxviz.render: Graphviz layout failed%s%s",
                           msg[0] ? ": " : "", msg);
    }
    int grc = gvRenderFilename(gvc, ag, j->format, j->path);
    gvFreeLayout(gvc, ag);
    agclose(ag);
    int level = vz_err_end(msg, sizeof msg);
    if (grc != 0) {
        /* the format was known to fxviz but Graphviz has no plugin for it */
        fx_err_setf(err, FX_ENOTIMPL, "fxviz.render: Graphviz cannot write %s%s%s", j->format,
                    msg[0] ? ": " : "", msg);
        fx_err_hintf(err, "install graphviz with its cairo plugins, or render to .svg or .dot");
        return FX_ENOTIMPL;
    }
    if (level >= AGERR) {
        fx_err_setf(err, FX_EIO, "fxviz.render: cannot write '%s' (Graphviz: %s)", j->path,
                    msg[0] ? msg : "no message");
        return FX_EIO;
    }
    return FX_OK;
}

/* Lays out g with dot in a child process and writes an image or DOT file whose format the
 * extension of `path` names (not .html: viz_api.c sends those to vz_render_html). */
int vz_render_image(const fx_graph *g, const char *path, const fxviz_opts *opts, fx_err *err) {
    const char *format = vz_format_of(path);
    if (!format) {
        const char *dot = strrchr(path, '.');
        fx_err_setf(err, FX_EARG, "fxviz.render: cannot tell the format of '%s' from '%s'", path,
                    dot && !strchr(dot, '/') ? dot : "(no extension)");
        fx_err_hintf(err, "use a file name ending in .svg, .png, .pdf, .dot, .gv or .html");
        return FX_EARG;
    }
    /* the GVC_t is made where the layout runs (the child): one that never lays out leaks
       memory in Graphviz 2.42's gvFreeContext */
    vz_render_job j = {g, path, format, opts};
    char what[128];
    snprintf(what, sizeof what, "laying out %d graph nodes into %s", g ? fx_graph_count(g) : 0,
             path);
    return vz_run_child(vz_render_here, &j, what, opts && opts->progress, err);
}

int fxviz_dot_source(const fx_graph *g, const fxviz_opts *opts, fx_strbuf *sb, fx_err *err) {
    fx_err_clear(err);
    if (!sb) return fx_err_setf(err, FX_EARG, "fxviz.dot_source: no output buffer");
    Agraph_t *ag = NULL;
    char msg[FX_ERR_MSG / 2];
    vz_err_begin();
    int rc = vz_build(g, opts, &ag, err);
    if (rc != FX_OK) {
        vz_err_end(NULL, 0);
        return rc;
    }
    int wrc = agwrite(ag, sb);
    agclose(ag);
    int level = vz_err_end(msg, sizeof msg);
    if (sb->oom) return fx_strbuf_status(sb, err);
    if (wrc != 0 || level >= AGERR) {
        return fx_err_setf(err, FX_EINTERNAL, "fxviz.dot_source: writing DOT failed%s%s",
                           msg[0] ? ": " : "", msg);
    }
    return FX_OK;
}
