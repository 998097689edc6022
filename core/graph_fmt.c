/* core/graph_fmt.c — the FX node listing and the Python-like code of a graph.
 * Layer: core. Follows torch/fx/graph.py (Graph.__str__ / Node.format_node, and _gen_python_code
 * with verbose=True as GraphModule.print_readable uses it): the same argument normalization as
 * PyTorch's __torch_dispatch__ (trailing default positional args and default keyword-only args
 * left out), `x = None` after a value's last use, and "# File: ... in f, code: ..." comments when
 * the stack trace changes. One deliberate difference: trailing whitespace is stripped from every
 * line (PyTorch leaves indentation on blank lines). Printers use fx_node.tag as scratch. */
#include <string.h>

#include "core/fx_alloc.h"
#include "core/graph.h"
#include "core/hop.h"

/* Which of an ATen node's args print: positional ones up to the last non-default, then
 * keyword-only ones that differ from their default. */
static bool is_default(const fx_arg_schema *a, const fx_ivalue *v) {
    if (!a->has_default) return false;
    if (a->def.tag == FX_IV_STR && v->tag == FX_IV_STR) return !strcmp(a->def.u.s, v->u.s);
    if (a->def.tag == FX_IV_INT && v->tag == FX_IV_FLOAT) return a->def.u.i == v->u.f;
    if (a->def.tag == FX_IV_LIST && a->def.u.list.n == 1 && v->tag == FX_IV_INT)
        return fx_ivalue_equal(&a->def.u.list.items[0], v);
    return fx_ivalue_equal(&a->def, v);
}

/* One ATen argument. A MemoryFormat / Layout travels as a string ivalue ("contiguous_format" or
 * "torch.contiguous_format") but prints as the torch attribute it names, unquoted, as PyTorch
 * prints `memory_format = torch.contiguous_format`. */
static void fmt_aten_arg(fx_strbuf *sb, const fx_arg_schema *a, const fx_ivalue *v, bool listing) {
    if (v->tag == FX_IV_STR && (a->type == FX_TY_MEMFORMAT || a->type == FX_TY_LAYOUT)) {
        if (strncmp(v->u.s, "torch.", 6)) fx_strbuf_append(sb, "torch.");
        fx_strbuf_append(sb, v->u.s);
        return;
    }
    fx_ivalue_format(sb, v, listing);
}

static int positional_end(const fx_schema *s, const fx_ivalue *args, int nargs) {
    int end = 0;
    for (int i = 0; i < s->nargs && i < nargs; i++) {
        if (s->args[i].kwarg_only) break;
        if (!is_default(&s->args[i], &args[i])) end = i + 1;
    }
    return end;
}

/* The arguments of a call of the op with schema s, after `lead` positional items the caller
 * printed: positional ones up to the last non-default, then keyword-only ones that differ from
 * their default; closes the listing's "args = (...), kwargs = {...}". */
static void fmt_schema_args(fx_strbuf *sb, const fx_schema *s, const fx_ivalue *args, int nargs,
                            bool listing, int lead) {
    const char *kwsep = listing ? ": " : " = ";
    bool first = lead == 0;
    int end = positional_end(s, args, nargs);
    for (int i = 0; i < end; i++) {
        if (!first) fx_strbuf_append(sb, ", ");
        fmt_aten_arg(sb, &s->args[i], &args[i], listing);
        first = false;
    }
    if (listing) {
        if (lead + end == 1) fx_strbuf_putc(sb, ',');
        fx_strbuf_append(sb, "), kwargs = {");
        first = true;
    }
    for (int i = 0; i < s->nargs && i < nargs; i++) {
        if (!s->args[i].kwarg_only || is_default(&s->args[i], &args[i])) continue;
        if (!first) fx_strbuf_append(sb, ", ");
        fx_strbuf_appendf(sb, "%s%s", s->args[i].name, kwsep);
        fmt_aten_arg(sb, &s->args[i], &args[i], listing);
        first = false;
    }
    if (listing) fx_strbuf_putc(sb, '}');
}

static void fmt_args(fx_strbuf *sb, const fx_node *n, bool listing) {
    const char *kwsep = listing ? ": " : " = ";
    bool first = true;
    if (listing) fx_strbuf_append(sb, "args = (");
    if (n->aten) {
        fmt_schema_args(sb, &n->aten->schema, n->args, n->nargs, listing, 0);
        return;
    }
    int k0;
    const fx_opdef *w = fx_hop_wrapped_op(n, &k0);
    const char *ops = listing ? "" : "torch.ops.";
    if (w && !strcmp(n->target, FX_HOP_AUTO_FUNCTIONALIZED_V2)) { /* op, then name = value */
        fx_strbuf_appendf(sb, "%s%s", ops, w->target);
        if (listing) fx_strbuf_append(sb, ",), kwargs = {");
        const fx_ivalue *names = &n->args[1];
        for (int i = 0; i < names->u.list.n && k0 + i < n->nargs; i++) {
            if (listing ? i > 0 : true) fx_strbuf_append(sb, ", ");
            fx_strbuf_appendf(sb, "%s%s", names->u.list.items[i].u.s, kwsep);
            fx_ivalue_format(sb, &n->args[k0 + i], listing);
        }
        if (listing) fx_strbuf_putc(sb, '}');
        return;
    }
    if (w && k0 == 2) { /* with_effects(token, torch.ops.mylib.log.default, x, 'tag') */
        fx_ivalue_format(sb, &n->args[0], listing);
        fx_strbuf_appendf(sb, ", %s%s", ops, w->target);
        fmt_schema_args(sb, &w->schema, n->args + k0, n->nargs - k0, listing, 2);
        return;
    }
    if (w) { /* auto_functionalized(op, x = x, y = b_y): the op unquoted, its arguments by name */
        fx_strbuf_appendf(sb, "%s%s", ops, w->target);
        if (listing) fx_strbuf_append(sb, ",), kwargs = {");
        for (int i = k0; i < n->nargs && i - k0 < w->schema.nargs; i++) {
            const fx_arg_schema *a = &w->schema.args[i - k0];
            if (listing ? i > k0 : true) fx_strbuf_append(sb, ", ");
            fx_strbuf_appendf(sb, "%s%s", a->name, kwsep);
            fmt_aten_arg(sb, a, &n->args[i], listing);
        }
        if (listing) fx_strbuf_putc(sb, '}');
        return;
    }
    for (int i = 0; i < n->nargs; i++) {
        if (!first) fx_strbuf_append(sb, ", ");
        fx_ivalue_format(sb, &n->args[i], listing);
        first = false;
    }
    if (listing) fx_strbuf_append(sb, n->nargs == 1 ? ",), kwargs = {}" : "), kwargs = {}");
}

static void fmt_output_value(fx_strbuf *sb, const fx_ivalue *v, bool listing) {
    /* The output's single arg is a tuple: "(a, b)" or "(a,)". */
    if (v->tag == FX_IV_LIST) {
        fx_strbuf_putc(sb, '(');
        for (int i = 0; i < v->u.list.n; i++) {
            if (i) fx_strbuf_append(sb, ", ");
            fx_ivalue_format(sb, &v->u.list.items[i], false);
        }
        if (v->u.list.n == 1) fx_strbuf_putc(sb, ',');
        fx_strbuf_putc(sb, ')');
    } else {
        fx_ivalue_format(sb, v, listing);
    }
}

void fx_graph_format_listing(fx_strbuf *sb, const fx_graph *g) {
    fx_strbuf_append(sb, "graph():\n");
    for (const fx_node *n = fx_graph_first(g); n; n = n->next) {
        fx_strbuf_append(sb, "    ");
        if (n->op == FX_NODE_OUTPUT) {
            fx_strbuf_append(sb, "return ");
            if (n->nargs) fmt_output_value(sb, &n->args[0], false);
            fx_strbuf_putc(sb, '\n');
            continue;
        }
        fx_strbuf_appendf(sb, "%%%s : [num_users=%d] = %s", n->name, n->nusers,
                          fx_node_op_name(n->op));
        if (n->op == FX_NODE_CALL_FUNCTION) {
            if (n->aten || strncmp(n->target, "higher_order.", 13) == 0 || strncmp(n->target, "aten.", 5) == 0)
                fx_strbuf_appendf(sb, "[target=torch.ops.%s](", n->target);
            else if (!strcmp(n->target, "getitem"))
                fx_strbuf_append(sb, "[target=operator.getitem](");
            else
                fx_strbuf_appendf(sb, "[target=%s](", n->target);
            fmt_args(sb, n, true);
            fx_strbuf_putc(sb, ')');
        } else {
            fx_strbuf_appendf(sb, "[target=%s]", n->target);
        }
        fx_strbuf_putc(sb, '\n');
    }
}

/* ---- code form ------------------------------------------------------------------------------- */

static void stack_summary(fx_strbuf *sb, const fx_node *n) {
    const fx_frame *f = &n->stack[0];
    fx_strbuf_appendf(sb, "# File: %s:%d in %s, code: %s", f->file, f->line, f->func, f->code);
}

static bool same_stack(const fx_node *a, const fx_node *b) {
    if (!a || !b || a->nstack != b->nstack) return false;
    for (int i = 0; i < a->nstack; i++)
        if (a->stack[i].line != b->stack[i].line || strcmp(a->stack[i].file, b->stack[i].file) ||
            strcmp(a->stack[i].func, b->stack[i].func))
            return false;
    return true;
}

static void lu_visit(const fx_ivalue *v, fx_node **order, int *norder, char *seen,
                     fx_node **by_pos, int npos) {
    if (v->tag == FX_IV_NODE) {
        /* node positions are stored in ->tag */
        int p = v->u.node->tag;
        if (p >= 0 && p < npos && !seen[p]) {
            seen[p] = 1;
            order[(*norder)++] = by_pos[p];
        }
    } else if (v->tag == FX_IV_LIST) {
        for (int i = 0; i < v->u.list.n; i++) lu_visit(&v->u.list.items[i], order, norder, seen, by_pos, npos);
    }
}

static void strip_trailing_ws(fx_strbuf *sb) {
    /* Removes spaces before every '\n' and at the end. */
    if (!sb->data) return;
    size_t w = 0;
    for (size_t r = 0; r < sb->len; r++) {
        if (sb->data[r] == '\n')
            while (w > 0 && sb->data[w - 1] == ' ') w--;
        sb->data[w++] = sb->data[r];
    }
    while (w > 0 && sb->data[w - 1] == ' ') w--;
    sb->len = w;
    sb->data[w] = 0;
}

static void format_forward(fx_strbuf *out, const fx_graph *g, int indent, bool verbose,
                           bool list_output) {
    int npos = fx_graph_count(g);
    fx_node **by_pos = fx_calloc((size_t)npos + 1, sizeof *by_pos);
    fx_node **order = fx_calloc((size_t)npos + 1, sizeof *order);
    int *lu_start = fx_calloc((size_t)npos + 1, sizeof *lu_start);
    int *lu_count = fx_calloc((size_t)npos + 1, sizeof *lu_count);
    char *seen = fx_calloc((size_t)npos + 1, 1);
    if (!by_pos || !order || !lu_start || !lu_count || !seen) {
        out->oom = 1;
        goto done;
    }
    int p = 0;
    for (fx_node *n = fx_graph_first(g); n; n = n->next) {
        n->tag = p;
        by_pos[p++] = n;
    }
    /* Walk backwards: the first time a value is met is its last use. */
    int norder = 0;
    for (int i = npos - 1; i >= 0; i--) {
        fx_node *n = by_pos[i];
        lu_start[i] = norder;
        for (int a = 0; a < n->nargs; a++) {
            /* args then kwargs: for ATen nodes kwarg-only args come after positional ones in the
             * schema already, so schema order is FX's args-then-kwargs order. */
            lu_visit(&n->args[a], order, &norder, seen, by_pos, npos);
        }
        lu_count[i] = norder - lu_start[i];
    }

    char pad[64];
    int ind = indent < 60 ? indent : 60;
    memset(pad, ' ', (size_t)ind);
    pad[ind] = 0;
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_strbuf_appendf(&sb, "%sdef forward(self", pad);
    for (int i = 0; i < npos; i++) {
        fx_node *n = by_pos[i];
        if (n->op != FX_NODE_PLACEHOLDER) continue;
        fx_strbuf_appendf(&sb, ", %s", n->name);
        if (verbose && fx_node_has_type(n)) {
            fx_strbuf_append(&sb, ": \"");
            fx_node_format_type(&sb, n);
            fx_strbuf_putc(&sb, '"');
        }
    }
    fx_strbuf_append(&sb, "):\n");
    const fx_node *prev_st = NULL;
    bool had_st = false, any_line = false;
    for (int i = 0; i < npos; i++) {
        fx_node *n = by_pos[i];
        if (n->op == FX_NODE_PLACEHOLDER) continue;
        if (verbose && n->op != FX_NODE_OUTPUT) {
            if (n->nstack > 0) {
                if (!same_stack(n, prev_st)) {
                    if (any_line) fx_strbuf_putc(&sb, '\n');
                    fx_strbuf_appendf(&sb, "%s     ", pad);
                    stack_summary(&sb, n);
                    fx_strbuf_putc(&sb, '\n');
                    prev_st = n;
                    had_st = true;
                }
            } else if (had_st) {
                fx_strbuf_appendf(&sb, "\n%s    # No stacktrace found for following nodes\n", pad);
                had_st = false;
                prev_st = NULL;
            }
        }
        fx_strbuf_appendf(&sb, "%s    ", pad);
        any_line = true;
        if (n->op == FX_NODE_OUTPUT) {
            fx_strbuf_append(&sb, "return ");
            if (n->nargs && list_output) fx_ivalue_format(&sb, &n->args[0], false);
            else if (n->nargs) fmt_output_value(&sb, &n->args[0], false);
            fx_strbuf_putc(&sb, '\n');
            continue;
        }
        fx_strbuf_append(&sb, n->name);
        if (verbose && fx_node_has_type(n)) {
            fx_strbuf_append(&sb, ": \"");
            fx_node_format_type(&sb, n);
            fx_strbuf_putc(&sb, '"');
        }
        fx_strbuf_append(&sb, " = ");
        if (n->op == FX_NODE_GET_ATTR) {
            fx_strbuf_appendf(&sb, "self.%s", n->target);
        } else if (!n->aten && !strcmp(n->target, "operator.neg") && n->nargs == 1) {
            fx_strbuf_putc(&sb, '-'); /* FX prints operator.neg as `-sym_size_int` */
            fx_ivalue_format(&sb, &n->args[0], false);
        } else if (!n->aten && !strncmp(n->target, "operator.", 9) && n->nargs == 2) {
            /* SymInt arithmetic, as FX prints operator.add: `add = sym_size_int + 1` */
            static const char *const ops[][2] = {
                {"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"floordiv", "//"}, {"mod", "%"},
                {"ge", ">="}, {"gt", ">"}, {"le", "<="}, {"lt", "<"}, {"eq", "=="}, {"ne", "!="}};
            const char *sym = "?";
            for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
                if (!strcmp(n->target + 9, ops[k][0])) sym = ops[k][1];
            fx_ivalue_format(&sb, &n->args[0], false);
            fx_strbuf_appendf(&sb, " %s ", sym);
            fx_ivalue_format(&sb, &n->args[1], false);
        } else if (!n->aten && !strncmp(n->target, "torch.", 6)) {
            fx_strbuf_appendf(&sb, "%s(", n->target);
            fmt_args(&sb, n, false);
            fx_strbuf_putc(&sb, ')');
        } else if (!n->aten && !strcmp(n->target, "getitem") && n->nargs == 2) {
            fx_ivalue_format(&sb, &n->args[0], false);
            fx_strbuf_putc(&sb, '[');
            fx_ivalue_format(&sb, &n->args[1], false);
            fx_strbuf_putc(&sb, ']');
        } else {
            fx_strbuf_appendf(&sb, "torch.ops.%s(", n->target);
            fmt_args(&sb, n, false);
            fx_strbuf_putc(&sb, ')');
        }
        /* `a = b = None` for values whose last use is here, and the node itself if unused. */
        int cnt = lu_count[i];
        bool self_dead = n->nusers == 0;
        if (cnt || self_dead) {
            fx_strbuf_append(&sb, ";  ");
            for (int k = 0; k < cnt; k++) fx_strbuf_appendf(&sb, "%s = ", order[lu_start[i] + k]->name);
            if (self_dead) fx_strbuf_appendf(&sb, "%s = ", n->name);
            fx_strbuf_append(&sb, "None");
        }
        fx_strbuf_putc(&sb, '\n');
    }
    strip_trailing_ws(&sb);
    fx_strbuf_appendn(out, fx_strbuf_cstr(&sb), sb.len);
    if (sb.oom) out->oom = 1;
    fx_strbuf_free(&sb);
done:
    fx_free(by_pos);
    fx_free(order);
    fx_free(lu_start);
    fx_free(lu_count);
    fx_free(seen);
}

void fx_graph_format_forward(fx_strbuf *sb, const fx_graph *g, int indent, bool with_types) {
    format_forward(sb, g, indent, with_types, false);
    fx_strbuf_putc(sb, '\n');
}

/* Subgraphs of higher-order ops print after forward, as nested classes (print_readable's
 * submodule code). `nested` classes end without the blank line the outermost one gets. */
static void format_code(fx_strbuf *sb, const fx_graph *g, int indent, const char *class_name,
                        bool list_output, bool nested) {
    char pad[64];
    int ind = indent < 56 ? indent : 56;
    memset(pad, ' ', (size_t)ind);
    pad[ind] = 0;
    fx_strbuf_appendf(sb, "%sclass %s(torch.nn.Module):\n", pad, class_name ? class_name : "GraphModule");
    format_forward(sb, g, ind + 4, true, list_output);
    for (const fx_node *n = fx_graph_first(g); n; n = n->next) {
        if (n->op != FX_NODE_GET_ATTR || !n->subgraph) continue;
        /* scan's combine function returns a list; cond and map bodies return a tuple */
        bool as_list = false;
        for (int u = 0; u < n->nusers; u++) as_list |= !strcmp(n->users[u]->target, "higher_order.scan");
        fx_strbuf_putc(sb, '\n');
        format_code(sb, n->subgraph, ind + 4, n->target, as_list, true);
    }
    if (!nested) fx_strbuf_putc(sb, '\n');
}

void fx_graph_format_code(fx_strbuf *sb, const fx_graph *g, int indent, const char *class_name) {
    format_code(sb, g, indent, class_name, false, false);
}

