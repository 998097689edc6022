/* viz/viz_style.c — the single style table: node kind -> shape, fill, font colour, label template.
 * Layer: viz. Everything that decides how fxviz pictures look lives here; viz_build.c only picks
 * a kind per node and fills the label fields. Colours are plain "#rrggbb" strings. */
#include <string.h>

#include "viz/viz_impl.h"

/* ---- the table ------------------------------------------------------------------------------- */
/* Label templates: %n name, %t short target, %y dtype[shape], %k signature kind, %g signature
 * target; a line whose fields are all empty is dropped (vz_label_expand). */
/* clang-format off */
static const vz_style vz_styles[] = {
    [VZ_PLACEHOLDER] = {"placeholder", "ellipse", "filled", "#ffffff", "#212529", "%n\n%y"},
    [VZ_IN_PARAMETER] = {"parameter", "ellipse", "filled", "#ffe8a3", "#5c3c00", "%n\n%k %g\n%y"},
    [VZ_IN_BUFFER] = {"buffer", "ellipse", "filled", "#a5d8ff", "#0b3a66", "%n\n%k %g\n%y"},
    [VZ_IN_CONSTANT] = {"constant", "ellipse", "filled", "#dee2e6", "#343a40", "%n\n%k %g\n%y"},
    [VZ_IN_USER] = {"user_input", "ellipse", "filled", "#b2f2bb", "#1b4d24", "%n\n%k\n%y"},
    [VZ_IN_TOKEN] = {"token", "ellipse", "filled,dashed", "#f1f3f5", "#495057", "%n\n%k"},
    [VZ_GET_ATTR] = {"get_attr", "cylinder", "filled", "#e9ecef", "#212529", "%n\nget_attr %t\n%y"},
    [VZ_SUBGRAPH] = {"subgraph", "component", "filled", "#e5dbff", "#3b1f7a", "%n\nsubgraph %t"},
    [VZ_OP] = {"op", "box", "rounded,filled", "#ffffff", "#212529", "%n\n%t\n%y"},
    [VZ_OP_INPLACE] = {"inplace", "box", "rounded,filled", "#ffc9c9", "#6b0f0f", "%n\n%t\n%y"},
    [VZ_VIEW] = {"view", "box", "rounded,filled,dashed", "#e7f5ff", "#1864ab", "%n\n%t\n%y"},
    [VZ_SCATTER] = {"scatter", "box", "filled,diagonals", "#ffd8a8", "#7a3a00", "%n\n%t\n%y"},
    [VZ_CALL] = {"call", "hexagon", "filled", "#f3f0ff", "#3b1f7a", "%n\n%t\n%y"},
    [VZ_OUTPUT] = {"output", "invhouse", "filled", "#ced4da", "#212529", "%n"},
    [VZ_OUT_USER] = {"user_output", "invhouse", "filled", "#8ce99a", "#1b4d24", "%n\n%k"},
    [VZ_OUT_BUFFER_MUT] = {"buffer_mutation", "invhouse", "filled", "#b197fc", "#2b1466", "%k\n%g"},
    [VZ_OUT_PARAM_MUT] = {"parameter_mutation", "invhouse", "filled", "#fcc2d7", "#5c0f2f", "%k\n%g"},
    [VZ_OUT_INPUT_MUT] = {"user_input_mutation", "invhouse", "filled", "#99e9f2", "#0b4a52", "%k\n%g"},
    [VZ_OUT_TOKEN] = {"output_token", "invhouse", "filled,dashed", "#f1f3f5", "#495057", "%n\n%k"},
    [VZ_MODULE] = {"module", "box3d", "filled", "#fff3bf", "#5c4400", "%n"},
    [VZ_EXTERNAL] = {"external", "ellipse", "filled,dashed", "#f8f9fa", "#495057", "%n\n%t\n%y"},
    [VZ_SHARED] = {"shared", "note", "filled", "#f1f3f5", "#495057", "%n %t\n%y"},
};
/* clang-format on */
_Static_assert(sizeof vz_styles / sizeof vz_styles[0] == VZ_KIND_COUNT,
               "one style row per vz_kind");
_Static_assert(VZ_KIND_COUNT + 2 <= 32, "the legend's bit set holds every kind and two pens");

/* Edge pens into output nodes, by output kind; mutation edges are dashed and coloured so a
 * BUFFER_MUTATION edge never looks like a USER_OUTPUT edge. */
typedef struct vz_edge_pen {
    const char *color;
    const char *style;
    const char *penwidth;
} vz_edge_pen;

static const vz_edge_pen vz_output_pens[] = {
    [VZ_OUT_USER - VZ_OUTPUT] = {"#2b8a3e", "solid", "1.5"},
    [VZ_OUT_BUFFER_MUT - VZ_OUTPUT] = {"#5f3dc4", "dashed", "2"},
    [VZ_OUT_PARAM_MUT - VZ_OUTPUT] = {"#a61e4d", "dashed", "2"},
    [VZ_OUT_INPUT_MUT - VZ_OUTPUT] = {"#0c8599", "dashed", "2"},
    [VZ_OUT_TOKEN - VZ_OUTPUT] = {"#868e96", "dotted", "1"},
    [VZ_OUTPUT - VZ_OUTPUT] = {"#495057", "solid", "1"},
};

/* Cluster fills by nesting level (cycled). */
static const char *const vz_cluster_fills[] = {"#f8f9fa", "#f1f3f5", "#e9ecef", "#edf2ff"};

const vz_style *vz_style_get(vz_kind k) {
    return (unsigned)k < VZ_KIND_COUNT ? &vz_styles[k] : &vz_styles[VZ_OP];
}

vz_kind vz_kind_of_input(fx_input_kind k) {
    switch (k) {
    case FX_INPUT_PARAMETER: return VZ_IN_PARAMETER;
    case FX_INPUT_BUFFER: return VZ_IN_BUFFER;
    case FX_INPUT_CONSTANT_TENSOR: return VZ_IN_CONSTANT;
    case FX_INPUT_USER_INPUT: return VZ_IN_USER;
    case FX_INPUT_TOKEN: return VZ_IN_TOKEN;
    default: return VZ_PLACEHOLDER;
    }
}

vz_kind vz_kind_of_output(fx_output_kind k) {
    switch (k) {
    case FX_OUTPUT_USER_OUTPUT: return VZ_OUT_USER;
    case FX_OUTPUT_BUFFER_MUTATION: return VZ_OUT_BUFFER_MUT;
    case FX_OUTPUT_PARAMETER_MUTATION: return VZ_OUT_PARAM_MUT;
    case FX_OUTPUT_USER_INPUT_MUTATION: return VZ_OUT_INPUT_MUT;
    case FX_OUTPUT_TOKEN: return VZ_OUT_TOKEN;
    default: return VZ_OUTPUT;
    }
}

/* ---- applying styles ------------------------------------------------------------------------- */
static void vz_attr(Agraph_t *g, int kind, const char *name, const char *value) {
    agattr(g, kind, (char *)name, (char *)value);
}

void vz_style_defaults(Agraph_t *g) {
    /* graph */
    vz_attr(g, AGRAPH, "rankdir", "TB");
    vz_attr(g, AGRAPH, "compound", "true");
    vz_attr(g, AGRAPH, "newrank", "true");
    vz_attr(g, AGRAPH, "fontname", "Helvetica");
    vz_attr(g, AGRAPH, "fontsize", "12");
    vz_attr(g, AGRAPH, "nodesep", "0.25");
    vz_attr(g, AGRAPH, "ranksep", "0.35");
    /* cluster attributes have graph-level defaults too; declare them so vz_style_cluster's
       agsafeset calls hit an existing symbol */
    vz_attr(g, AGRAPH, "style", "");
    vz_attr(g, AGRAPH, "fillcolor", "");
    vz_attr(g, AGRAPH, "color", "");
    vz_attr(g, AGRAPH, "labeljust", "");
    vz_attr(g, AGRAPH, "label", "");
    /* nodes */
    vz_attr(g, AGNODE, "shape", "box");
    vz_attr(g, AGNODE, "style", "filled");
    vz_attr(g, AGNODE, "fillcolor", "#ffffff");
    vz_attr(g, AGNODE, "fontcolor", "#212529");
    vz_attr(g, AGNODE, "color", "#495057");
    vz_attr(g, AGNODE, "penwidth", "1");
    vz_attr(g, AGNODE, "fontname", "Helvetica");
    vz_attr(g, AGNODE, "fontsize", "10");
    vz_attr(g, AGNODE, "margin", "0.08,0.04");
    vz_attr(g, AGNODE, "height", "0.3");
    vz_attr(g, AGNODE, "label", "\\N");
    /* edges */
    vz_attr(g, AGEDGE, "color", "#495057");
    vz_attr(g, AGEDGE, "style", "solid");
    vz_attr(g, AGEDGE, "penwidth", "1");
    vz_attr(g, AGEDGE, "arrowsize", "0.6");
    vz_attr(g, AGEDGE, "fontname", "Helvetica");
    vz_attr(g, AGEDGE, "fontsize", "9");
    vz_attr(g, AGEDGE, "fontcolor", "#495057");
    vz_attr(g, AGEDGE, "label", "");
    vz_attr(g, AGEDGE, "constraint", "true");
}

/* See viz_impl.h. */
void vz_html_escape(fx_strbuf *sb, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fx_strbuf_append(sb, "&amp;"); break;
        case '<': fx_strbuf_append(sb, "&lt;"); break;
        case '>': fx_strbuf_append(sb, "&gt;"); break;
        case '"': fx_strbuf_append(sb, "&quot;"); break;
        case '\'': fx_strbuf_append(sb, "&#39;"); break;
        default: fx_strbuf_putc(sb, *s);
        }
    }
}

void vz_style_label(Agraph_t *g, const char *title, unsigned legend) {
    int has_title = title && *title;
    if (!has_title && !legend) return;
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_strbuf_append(&sb, "<table border=\"0\" cellborder=\"1\" cellspacing=\"3\" "
                          "cellpadding=\"3\">");
    if (has_title) {
        fx_strbuf_append(&sb, "<tr><td border=\"0\" colspan=\"40\"><b>");
        vz_html_escape(&sb, title);
        fx_strbuf_append(&sb, "</b></td></tr>");
    }
    if (legend) {
        fx_strbuf_append(&sb, "<tr>");
        for (int k = 0; k < VZ_KIND_COUNT; k++) {
            if (!(legend & (1u << k))) continue;
            const vz_style *s = &vz_styles[k];
            fx_strbuf_appendf(&sb, "<td bgcolor=\"%s\"><font color=\"%s\" point-size=\"9\">",
                              s->fill, s->font);
            vz_html_escape(&sb, s->kind);
            fx_strbuf_append(&sb, "</font></td>");
        }
        if (legend & VZ_LEGEND_MUTATION) {
            fx_strbuf_appendf(&sb,
                              "<td color=\"%s\" border=\"2\"><font point-size=\"9\">"
                              "new version</font></td>",
                              VZ_MUTATION_COLOR);
        }
        if (legend & VZ_LEGEND_HIGHLIGHT) {
            fx_strbuf_appendf(&sb,
                              "<td color=\"%s\" border=\"3\"><font point-size=\"9\">"
                              "--why path</font></td>",
                              VZ_HIGHLIGHT_COLOR);
        }
        fx_strbuf_append(&sb, "</tr>");
    }
    fx_strbuf_append(&sb, "</table>");
    if (!sb.oom) {
        char *html = agstrdup_html(g, (char *)fx_strbuf_cstr(&sb));
        if (html) {
            agset(g, (char *)"label", html);
            agstrfree(g, html);
        }
        vz_set(g, "labelloc", has_title && !legend ? "t" : "b");
    }
    fx_strbuf_free(&sb);
}

void vz_style_size(Agraph_t *g, int nnodes) {
    if (nnodes <= VZ_BIG_GRAPH) return;
    /* iterations = nslimit * nodes of the auxiliary graph; 1 ends the x placement of the bench's
       5,000-node graph in about 2 s instead of 17 s, with the same ranks and crossings */
    vz_set(g, "nslimit", "1");
    /* one edge label makes dot double every rank of the graph (labels become virtual nodes):
       5x the layout time at 5,000 nodes. xlabel is placed after layout at no such cost. */
    Agsym_t *lab = agattr(g, AGEDGE, (char *)"label", NULL);
    if (!lab) return;
    for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n)) {
        for (Agedge_t *e = agfstout(g, n); e; e = agnxtout(g, e)) {
            const char *v = agxget(e, lab);
            if (v && *v) {
                vz_set(e, "xlabel", v);
                agxset(e, lab, (char *)"");
            }
        }
    }
}

void vz_style_node(Agnode_t *n, vz_kind k, int bold) {
    const vz_style *s = vz_style_get(k);
    vz_set(n, "shape", s->shape);
    vz_set(n, "fillcolor", s->fill);
    vz_set(n, "fontcolor", s->font);
    if (bold) {
        char style[64];
        size_t len = strlen(s->style);
        if (len + sizeof ",bold" <= sizeof style) {
            memcpy(style, s->style, len);
            memcpy(style + len, ",bold", sizeof ",bold");
            vz_set(n, "style", style);
        } else {
            vz_set(n, "style", s->style);
        }
        vz_set(n, "color", VZ_MUTATION_COLOR);
        vz_set(n, "penwidth", VZ_MUTATION_PENWIDTH);
    } else {
        vz_set(n, "style", s->style);
    }
}

void vz_style_cluster(Agraph_t *sub, int level) {
    int nf = (int)(sizeof vz_cluster_fills / sizeof vz_cluster_fills[0]);
    vz_set(sub, "style", "rounded,filled");
    vz_set(sub, "fillcolor", vz_cluster_fills[(level > 0 ? level - 1 : 0) % nf]);
    vz_set(sub, "color", "#adb5bd");
    vz_set(sub, "labeljust", "l");
}

void vz_style_output_edge(Agedge_t *e, vz_kind k) {
    if (k < VZ_OUTPUT || k > VZ_OUT_TOKEN) k = VZ_OUTPUT;
    const vz_edge_pen *p = &vz_output_pens[k - VZ_OUTPUT];
    vz_set(e, "color", p->color);
    vz_set(e, "fontcolor", p->color);
    vz_set(e, "style", p->style);
    vz_set(e, "penwidth", p->penwidth);
}

void vz_style_highlight_node(Agnode_t *n) {
    vz_set(n, "color", VZ_HIGHLIGHT_COLOR);
    vz_set(n, "penwidth", VZ_HIGHLIGHT_PENWIDTH);
}

void vz_style_highlight_edge(Agedge_t *e) {
    vz_set(e, "color", VZ_HIGHLIGHT_COLOR);
    vz_set(e, "penwidth", VZ_HIGHLIGHT_PENWIDTH);
}

/* ---- labels ---------------------------------------------------------------------------------- */
void vz_label_escape(fx_strbuf *sb, const char *s) {
    for (; s && *s; s++) {
        if (*s == '\\') {
            fx_strbuf_append(sb, "\\\\");
        } else if (*s == '\n') {
            fx_strbuf_append(sb, "\\n");
        } else if (*s == '\r') {
            /* dropped: a bare CR has no meaning in a label */
        } else {
            fx_strbuf_putc(sb, *s);
        }
    }
}

static const char *vz_field(const vz_label_fields *f, char c) {
    switch (c) {
    case 'n': return f->name;
    case 't': return f->target;
    case 'y': return f->type;
    case 'k': return f->kind;
    case 'g': return f->sig_target;
    default: return NULL;
    }
}

void vz_label_expand(fx_strbuf *sb, const char *tmpl, const vz_label_fields *f) {
    int first = 1;
    const char *line = tmpl;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        /* a line with fields, all empty, is dropped; a line of literal text stays */
        int nfields = 0, nfull = 0;
        for (const char *p = line; p < end; p++) {
            if (*p == '%' && p + 1 < end && p[1] != '%') {
                const char *v = vz_field(f, p[1]);
                nfields++;
                if (v && *v) nfull++;
                p++;
            } else if (*p == '%' && p + 1 < end) {
                p++;
            }
        }
        if (nfields == 0 || nfull > 0) {
            if (!first) fx_strbuf_append(sb, "\\n");
            first = 0;
            size_t mark = sb->len;
            for (const char *p = line; p < end; p++) {
                if (*p == '%' && p + 1 < end) {
                    p++;
                    if (*p == '%') {
                        fx_strbuf_putc(sb, '%');
                    } else {
                        vz_label_escape(sb, vz_field(f, *p));
                    }
                } else {
                    fx_strbuf_putc(sb, *p);
                }
            }
            /* "%k %g" with only %k set leaves a trailing blank: trim it */
            while (!sb->oom && sb->len > mark && sb->data[sb->len - 1] == ' ') {
                sb->data[--sb->len] = '\0';
            }
        }
        line = *end ? end + 1 : end;
    }
}
