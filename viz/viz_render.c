/* viz/viz_render.c — the process's GVC_t, layout with dot, rendering by file extension, errors.
 * Layer: viz. Lifecycle (Graphviz's dot.demo order): vz_build -> gvLayout -> gvRenderFilename ->
 * gvFreeLayout -> agclose; the GVC_t lives until fxviz_shutdown (gvFreeContext). Graphviz's
 * messages never reach stderr: they go through agseterrf into a buffer and come back in fx_err. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

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

/* The process's GVC_t, created on first use. NULL (err set) when Graphviz cannot start. */
static GVC_t *fxviz_context_get(fx_err *err) {
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

/* ---- public ---------------------------------------------------------------------------------- */
int fxviz_render(const fx_graph *g, const char *path, const fxviz_opts *opts, fx_err *err) {
    fx_err_clear(err);
    if (!path || !*path) return fx_err_setf(err, FX_EARG, "fxviz.render: no output file given");
    const char *format = vz_format_of(path);
    if (!format) {
        const char *dot = strrchr(path, '.');
        fx_err_setf(err, FX_EARG, "fxviz.render: cannot tell the format of '%s' from '%s'", path,
                    dot && !strchr(dot, '/') ? dot : "(no extension)");
        fx_err_hintf(err, "use a file name ending in .svg, .png, .pdf, .dot or .gv");
        return FX_EARG;
    }
    GVC_t *gvc = fxviz_context_get(err);
    if (!gvc) return err ? err->code : FX_ENOMEM;

    char msg[FX_ERR_MSG / 2];
    Agraph_t *ag = NULL;
    vz_err_begin();
    int rc = vz_build(g, opts, &ag, err);
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
    int grc = gvRenderFilename(gvc, ag, format, path);
    gvFreeLayout(gvc, ag);
    agclose(ag);
    int level = vz_err_end(msg, sizeof msg);
    if (grc != 0) {
        /* the format was known to fxviz but Graphviz has no plugin for it */
        fx_err_setf(err, FX_ENOTIMPL, "fxviz.render: Graphviz cannot write %s%s%s", format,
                    msg[0] ? ": " : "", msg);
        fx_err_hintf(err, "install graphviz with its cairo plugins, or render to .svg or .dot");
        return FX_ENOTIMPL;
    }
    if (level >= AGERR) {
        fx_err_setf(err, FX_EIO, "fxviz.render: cannot write '%s' (Graphviz: %s)", path,
                    msg[0] ? msg : "no message");
        return FX_EIO;
    }
    return FX_OK;
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
