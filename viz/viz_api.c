/* viz/viz_api.c — fxviz_render, the public entry: picks the HTML viewer (viz_html.c) or a
 * Graphviz image (viz_render.c) by the output file's extension.
 * Layer: viz. Kept apart from both so that viz/'s file graph stays acyclic: viz_html.c lays
 * out its pages with viz_render.c's child-process machinery. */
#include "viz/viz_impl.h"

int fxviz_render(const fx_graph *g, const char *path, const fxviz_opts *opts, fx_err *err) {
    fx_err scratch;
    if (!err) err = &scratch;
    fx_err_clear(err);
    if (!path || !*path) return fx_err_setf(err, FX_EARG, "fxviz.render: no output file given");
    if (vz_is_html(path)) return vz_render_html(g, path, opts, err);
    return vz_render_image(g, path, opts, err);
}
