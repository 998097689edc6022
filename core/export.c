/* core/export.c — ExportedProgram: lifting order, functionalization, signature, printing.
 * Layer: core. Follows torch/export/exported_program.py (ExportedProgram.__str__),
 * torch/export/graph_signature.py (InputSpec / OutputSpec __str__) and the lifting order of
 * torch/export/_trace.py: parameters, buffers, constants, user inputs. */
#include "core/export.h"

#include <stdio.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/passes.h"

const char *fx_input_kind_name(fx_input_kind k) {
    static const char *const names[] = {"PARAMETER", "BUFFER", "CONSTANT_TENSOR", "USER_INPUT",
                                        "TOKEN"};
    _Static_assert(sizeof names / sizeof names[0] == FX_INPUT_KIND_COUNT, "input kinds");
    return (k >= 0 && k < FX_INPUT_KIND_COUNT) ? names[k] : "?";
}

const char *fx_output_kind_name(fx_output_kind k) {
    static const char *const names[] = {"USER_OUTPUT", "BUFFER_MUTATION", "PARAMETER_MUTATION",
                                        "USER_INPUT_MUTATION", "TOKEN"};
    _Static_assert(sizeof names / sizeof names[0] == FX_OUTPUT_KIND_COUNT, "output kinds");
    return (k >= 0 && k < FX_OUTPUT_KIND_COUNT) ? names[k] : "?";
}

static void free_named(fx_named_tensor *v, int n) {
    for (int i = 0; i < n; i++) {
        fx_free(v[i].name);
        fx_tensor_release(v[i].t);
    }
    fx_free(v);
}

void fx_program_free(fx_program *p) {
    if (!p) return;
    fx_graph_free(p->graph);
    fx_graph_free(p->raw);
    for (int i = 0; i < p->sig.ninputs; i++) {
        fx_free(p->sig.inputs[i].arg);
        fx_free(p->sig.inputs[i].target);
    }
    fx_free(p->sig.inputs);
    for (int i = 0; i < p->sig.noutputs; i++) {
        fx_free(p->sig.outputs[i].arg);
        fx_free(p->sig.outputs[i].target);
    }
    fx_free(p->sig.outputs);
    free_named(p->state, p->nstate);
    free_named(p->constants, p->nconstants);
    fx_shape_env_release(p->shape_env);
    fx_free(p);
}

/* Stable order of placeholders by kind: parameters, buffers, constants, user inputs. Reorders
 * both the graph's placeholders and infos. */
static int order_inputs(fx_graph *raw, fx_input_info *infos, int n, fx_err *err) {
    fx_input_info *sorted = fx_calloc((size_t)n + 1, sizeof *sorted);
    if (!sorted) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    int k = 0;
    for (int kind = 0; kind < FX_INPUT_KIND_COUNT; kind++)
        for (int i = 0; i < n; i++)
            if ((int)infos[i].kind == kind) sorted[k++] = infos[i];
    memcpy(infos, sorted, sizeof *infos * (size_t)n);
    fx_free(sorted);
    fx_node *first_non_ph = fx_graph_first(raw);
    while (first_non_ph && first_non_ph->op == FX_NODE_PLACEHOLDER) first_non_ph = first_non_ph->next;
    for (int i = 0; i < n; i++) fx_graph_move_before(raw, infos[i].node, first_non_ph);
    return FX_OK;
}

/* The state tensor named target. The search starts after the previous find (*hint), since the
 * state list and the lifted inputs usually come in the same order (linear, not quadratic). */
static const fx_tensor *find_state(const fx_named_tensor *state, int nstate, const char *target,
                                   int *hint) {
    for (int k = 0; target && k < nstate; k++) {
        int i = (*hint + k) % nstate;
        if (!strcmp(state[i].name, target)) {
            *hint = i + 1;
            return state[i].t;
        }
    }
    return NULL;
}

static int push_named(fx_named_tensor **v, int *n, const char *name, const fx_tensor *t,
                      fx_err *err) {
    fx_named_tensor *nv = fx_realloc(*v, sizeof **v * (size_t)(*n + 1));
    if (!nv) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    *v = nv;
    nv[*n].name = fx_strdup(name);
    if (!nv[*n].name) return fx_err_setf(err, FX_ENOMEM, "out of memory");
    nv[*n].t = fx_tensor_retain((fx_tensor *)t);
    (*n)++;
    return FX_OK;
}

static bool is_assign(const fx_node *n) {
    return !n->aten && n->op == FX_NODE_CALL_FUNCTION && !strcmp(n->target, "fxdb.assign_buffer");
}

/* The tensor whose memory n's value is: follows view ops, in-place ops (their result is self)
 * and getitem (of list-returning views). */
static const fx_node *view_root(const fx_node *n) {
    while (n && n->op == FX_NODE_CALL_FUNCTION && n->nargs > 0 && n->args[0].tag == FX_IV_NODE &&
           ((n->aten && (fx_op_is_view(n->aten) || fx_op_is_inplace(n->aten))) ||
            (!n->aten && !strcmp(n->target, "getitem"))))
        n = n->args[0].u.node;
    return n;
}

/* Replaces *v (a node argument) by clone(*v) inserted before `at`. */
static int clone_before(fx_graph *g, fx_node *at, fx_node *user, int argi, int item, fx_err *err) {
    const fx_ivalue *v = item < 0 ? &user->args[argi] : &user->args[argi].u.list.items[item];
    fx_node *src = v->u.node;
    fx_graph_set_insert_point(g, at);
    fx_ivalue a[FX_SCHEMA_MAX_ARGS] = {*v};
    fx_node *c = fx_graph_call(g, fx_op_get(FX_OP_CLONE), a, NULL, err);
    fx_graph_set_insert_point(g, NULL);
    if (!c) return err->code;
    int rc = fx_node_set_val(c, &src->val, err);
    if (!rc) rc = fx_node_copy_meta(c, src, err);
    if (rc) return rc;
    fx_ivalue nv = {0};
    if (item < 0) {
        nv = fx_iv_node(c);
        return fx_node_set_arg(user, argi, &nv, err);
    }
    if ((rc = fx_ivalue_copy(&nv, &user->args[argi], err))) return rc;
    fx_ivalue_clear(&nv.u.list.items[item]);
    nv.u.list.items[item] = fx_iv_node(c);
    rc = fx_node_set_arg(user, argi, &nv, err);
    fx_ivalue_clear(&nv);
    return rc;
}

/* Training IR: the raw graph with buffer assignments turned into copy_ into the buffer. The
 * copy_ of a buffer's last assignment goes just before the output (earlier ones disappear): the
 * assigned tensor may still be mutated after the assignment (`self.b = b * 3; self.b:div_(2)`),
 * and reads of the old buffer in between must not see the new value, as in eager. A value those
 * copies would change under the program's feet — an output, or another copy's source, that is (a
 * view of) a buffer being overwritten, i.e. eager's old tensor — is cloned before them. */
static int to_training_ir(fx_graph *g, fx_err *err) {
    fx_node *first_copy = NULL;
    for (fx_node *n = fx_graph_first(g), *next; n; n = next) {
        next = n->next;
        if (!is_assign(n)) continue;
        bool last = true;
        for (fx_node *m = n->next; m && last; m = m->next)
            if (is_assign(m) && m->args[0].u.node == n->args[0].u.node) last = false;
        if (!last) {
            fx_node_replace_all_uses(n, n->args[1].u.node);
            int rc = fx_graph_erase(g, n, err);
            if (rc) return rc;
            continue;
        }
        fx_graph_set_insert_point(g, fx_graph_output_node(g));
        fx_ivalue a[FX_SCHEMA_MAX_ARGS] = {n->args[0], n->args[1]};
        fx_node *c = fx_graph_call(g, fx_op_get(FX_OP_COPY_), a, NULL, err);
        fx_graph_set_insert_point(g, NULL);
        if (!c) return err->code;
        if (!first_copy) first_copy = c;
        int rc = fx_node_copy_meta(c, n, err);
        if (!rc) rc = fx_node_set_val(c, &n->args[0].u.node->val, err);
        if (rc) return rc;
        fx_node_replace_all_uses(n, n->args[1].u.node);
        if ((rc = fx_graph_erase(g, n, err))) return rc;
    }
    if (!first_copy) return FX_OK;
    fx_node *outn = fx_graph_output_node(g);
    for (fx_node *c = first_copy; c && c != outn; c = c->next) {
        const fx_node *root = view_root(c->args[1].u.node);
        if (c->args[1].u.node == c->args[0].u.node) continue; /* copy_(b, b): nothing changes */
        for (fx_node *d = first_copy; d && d != outn; d = d->next)
            if (d->args[0].u.node == root) {
                int rc = clone_before(g, first_copy, c, 1, -1, err);
                if (rc) return rc;
                break;
            }
    }
    if (!outn || outn->args[0].tag != FX_IV_LIST) return FX_OK;
    for (int k = 0; k < outn->args[0].u.list.n; k++) {
        const fx_ivalue *it = &outn->args[0].u.list.items[k];
        if (it->tag != FX_IV_NODE) continue;
        const fx_node *root = view_root(it->u.node);
        for (fx_node *d = first_copy; d && d != outn; d = d->next)
            if (d->aten && d->aten->id == FX_OP_COPY_ && d->args[0].u.node == root) {
                int rc = clone_before(g, first_copy, outn, 0, k, err);
                if (rc) return rc;
                break;
            }
    }
    return FX_OK;
}

int fx_export_build(fx_graph *raw, fx_input_info *infos, int ninfos, const fx_named_tensor *state,
                    int nstate, const fx_export_opts *opts, fx_program **out, fx_err *err) {
    fx_export_opts o = {0};
    if (opts) o = *opts;
    *out = NULL;
    fx_program *p = fx_calloc(1, sizeof *p);
    fx_functionalize_result fr = {0};
    int rc = FX_OK;
    if (!p) {
        rc = fx_err_setf(err, FX_ENOMEM, "out of memory");
        goto fail;
    }
    p->raw = raw;
    raw = NULL;
    p->training_ir = o.training_ir;
    p->shape_env = fx_shape_env_retain(o.shape_env);
    if ((rc = order_inputs(p->raw, infos, ninfos, err))) goto fail;
    if (o.training_ir) {
        p->graph = fx_graph_clone(p->raw, err);
        if (!p->graph) {
            rc = err->code;
            goto fail;
        }
        if ((rc = to_training_ir(p->graph, err))) goto fail;
    } else {
        fx_functionalize_opts fo = {o.lift_mutated_constants, o.auto_functionalized_v2};
        if ((rc = fx_functionalize_ex(p->raw, infos, ninfos, &fo, &fr, err))) goto fail;
        p->graph = fr.graph;
        fr.graph = NULL;
        for (int k = 0; k < fr.nmutated; k++) {
            fx_input_info *in = &infos[fr.mutated[k]];
            if (in->kind == FX_INPUT_CONSTANT_TENSOR) { /* lift_mutated_constants */
                in->kind = FX_INPUT_BUFFER;
                in->persistent = false;
            }
        }
    }
    if ((rc = fx_pass_dce(p->graph, NULL, err))) goto fail;
    /* Constants are lifted only when used, as torch.export lifts only the attributes the program
     * reads; parameters and buffers stay inputs even when unused. */
    for (int i = 0; i < ninfos; i++) {
        if (infos[i].kind != FX_INPUT_CONSTANT_TENSOR) continue;
        fx_node *ph = fx_graph_find(p->graph, infos[i].node->name);
        if (ph && ph->nusers == 0) {
            if ((rc = fx_graph_erase(p->graph, ph, err))) goto fail;
            infos[i].kind = FX_INPUT_KIND_COUNT; /* dropped */
        }
    }

    /* Input specs and state, in placeholder order. */
    p->sig.inputs = fx_calloc((size_t)ninfos + 2, sizeof *p->sig.inputs);
    if (!p->sig.inputs) {
        rc = fx_err_setf(err, FX_ENOMEM, "out of memory");
        goto fail;
    }
    if (fr.ntokens) { /* the input token: the first placeholder (InputKind.TOKEN) */
        fx_input_spec *is = &p->sig.inputs[p->sig.ninputs++];
        is->kind = FX_INPUT_TOKEN;
        is->arg = fx_strdup(fx_graph_first(p->graph)->name);
        if (!is->arg) {
            rc = fx_err_setf(err, FX_ENOMEM, "out of memory");
            goto fail;
        }
    }
    int hint = 0; /* find_state */
    for (int i = 0; i < ninfos; i++) {
        if (infos[i].kind == FX_INPUT_KIND_COUNT) continue;
        fx_input_spec *is = &p->sig.inputs[p->sig.ninputs++];
        is->kind = infos[i].kind;
        is->arg = fx_strdup(infos[i].node->name);
        is->target = infos[i].target ? fx_strdup(infos[i].target) : NULL;
        is->persistent = infos[i].persistent;
        if (!is->arg || (infos[i].target && !is->target)) {
            rc = fx_err_setf(err, FX_ENOMEM, "out of memory");
            goto fail;
        }
        const fx_tensor *t =
            infos[i].value ? infos[i].value : find_state(state, nstate, infos[i].target, &hint);
        if (infos[i].kind == FX_INPUT_USER_INPUT || infos[i].kind == FX_INPUT_TOKEN) continue;
        if (!t) {
            rc = fx_err_setf(err, FX_EINTERNAL, "no value for %s '%s'", fx_input_kind_name(infos[i].kind),
                             infos[i].target);
            goto fail;
        }
        bool in_state = infos[i].kind == FX_INPUT_PARAMETER ||
                        (infos[i].kind == FX_INPUT_BUFFER && infos[i].persistent);
        rc = in_state ? push_named(&p->state, &p->nstate, infos[i].target, t, err)
                      : push_named(&p->constants, &p->nconstants, infos[i].target, t, err);
        if (rc) goto fail;
    }

    /* Output specs: the output token, mutations, then user outputs. */
    fx_node *outn = fx_graph_output_node(p->graph);
    int nout = outn && outn->nargs && outn->args[0].tag == FX_IV_LIST ? outn->args[0].u.list.n : 0;
    p->sig.outputs = fx_calloc((size_t)nout + 1, sizeof *p->sig.outputs);
    if (!p->sig.outputs) {
        rc = fx_err_setf(err, FX_ENOMEM, "out of memory");
        goto fail;
    }
    for (int k = 0; k < nout; k++) {
        fx_output_spec *os = &p->sig.outputs[p->sig.noutputs++];
        const fx_ivalue *v = &outn->args[0].u.list.items[k];
        os->arg = fx_strdup(v->tag == FX_IV_NODE ? v->u.node->name : "None");
        if (!os->arg) {
            rc = fx_err_setf(err, FX_ENOMEM, "out of memory");
            goto fail;
        }
        if (k < fr.ntokens) {
            os->kind = FX_OUTPUT_TOKEN;
        } else if (k < fr.ntokens + fr.nmutated) {
            const fx_input_info *in = &infos[fr.mutated[k - fr.ntokens]];
            os->kind = in->kind == FX_INPUT_BUFFER      ? FX_OUTPUT_BUFFER_MUTATION
                       : in->kind == FX_INPUT_PARAMETER ? FX_OUTPUT_PARAMETER_MUTATION
                                                        : FX_OUTPUT_USER_INPUT_MUTATION;
            os->target = fx_strdup(in->target ? in->target : in->node->name);
            if (!os->target) {
                rc = fx_err_setf(err, FX_ENOMEM, "out of memory");
                goto fail;
            }
        } else {
            os->kind = FX_OUTPUT_USER_OUTPUT;
        }
    }
    fx_free(fr.mutated);
    fx_input_infos_free(infos, ninfos);
    *out = p;
    return FX_OK;
fail:
    fx_graph_free(raw);
    fx_graph_free(fr.graph);
    fx_free(fr.mutated);
    fx_input_infos_free(infos, ninfos);
    fx_program_free(p);
    return rc ? rc : FX_EINTERNAL;
}

void fx_signature_format(fx_strbuf *sb, const fx_signature *sig, int indent) {
    char pad[32];
    int ind = indent < 31 ? indent : 31;
    memset(pad, ' ', (size_t)ind);
    pad[ind] = 0;
    fx_strbuf_appendf(sb, "%s# inputs\n", pad);
    for (int i = 0; i < sig->ninputs; i++) {
        const fx_input_spec *s = &sig->inputs[i];
        fx_strbuf_appendf(sb, "%s%s: %s", pad, s->arg, fx_input_kind_name(s->kind));
        if (s->target) fx_strbuf_appendf(sb, " target='%s'", s->target);
        if (s->kind == FX_INPUT_BUFFER) fx_strbuf_appendf(sb, " persistent=%s", s->persistent ? "True" : "False");
        fx_strbuf_putc(sb, '\n');
    }
    fx_strbuf_appendf(sb, "\n%s# outputs\n", pad);
    for (int i = 0; i < sig->noutputs; i++) {
        const fx_output_spec *s = &sig->outputs[i];
        fx_strbuf_appendf(sb, "%s%s: %s", pad, s->arg, fx_output_kind_name(s->kind));
        if (s->target) fx_strbuf_appendf(sb, " target='%s'", s->target);
        fx_strbuf_putc(sb, '\n');
    }
}

void fx_program_format(fx_strbuf *sb, const fx_program *p) {
    fx_strbuf_append(sb, "ExportedProgram:\n");
    fx_graph_format_code(sb, p->graph, 4, "GraphModule");
    fx_strbuf_append(sb, "Graph signature:\n");
    fx_signature_format(sb, &p->sig, 4);
    fx_strbuf_append(sb, "\nRange constraints: ");
    fx_program_format_ranges(sb, p);
    fx_strbuf_putc(sb, '\n');
}

fx_vr fx_symbol_constraint_range(const fx_symbol_info *s) {
    fx_vr r = s->vr;
    if (!s->unbacked && r.lo == 2 && s->declared.lo < 2) r.lo = s->declared.lo;
    return r;
}

int fx_program_range_symbols(const fx_program *p, const fx_symbol_info **out, int max) {
    if (!p->shape_env) return 0;
    int nsyms, n = 0;
    const fx_symbol_info *syms = fx_shape_env_symbols(p->shape_env, &nsyms);
    for (int i = 0; i < nsyms && n < max; i++) {
        if (syms[i].replacement) continue;
        bool used = syms[i].unbacked;
        for (const fx_node *nd = fx_graph_first(p->graph); nd && !used; nd = nd->next) {
            if (nd->op != FX_NODE_PLACEHOLDER) continue;
            const fx_tensor *t = fx_node_tensor(nd);
            for (int d = 0; t && d < fx_tensor_ndim(t) && !used; d++) {
                fx_symint si = fx_tensor_sym_size(t, d);
                used = si.expr && fx_shape_env_simplify(p->shape_env, si.expr) == syms[i].sym;
            }
        }
        if (used) out[n++] = &syms[i];
    }
    return n;
}

void fx_program_format_ranges(fx_strbuf *sb, const fx_program *p) {
    const fx_symbol_info *s[64];
    int n = fx_program_range_symbols(p, s, 64);
    fx_strbuf_putc(sb, '{');
    for (int i = 0; i < n; i++) {
        if (i) fx_strbuf_append(sb, ", ");
        fx_sym_format(sb, s[i]->sym);
        fx_strbuf_append(sb, ": ");
        fx_vr_format(sb, fx_symbol_constraint_range(s[i]));
    }
    fx_strbuf_putc(sb, '}');
}

fx_tensor *fx_program_input_value(const fx_program *p, int i) {
    if (i < 0 || i >= p->sig.ninputs) return NULL;
    const fx_input_spec *s = &p->sig.inputs[i];
    if (!s->target) return NULL;
    for (int k = 0; k < p->nstate; k++)
        if (!strcmp(p->state[k].name, s->target)) return p->state[k].t;
    for (int k = 0; k < p->nconstants; k++)
        if (!strcmp(p->constants[k].name, s->target)) return p->constants[k].t;
    return NULL;
}
