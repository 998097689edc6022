/* tests/viz/test_viz.c — fxviz: builds small graphs, renders them, checks the DOT it produced.
 * Layer: tests (viz + core + Graphviz). Every DOT text fxviz writes is read back with cgraph's own
 * parser (agmemread), so the checks look at what Graphviz itself sees: node shapes and colours
 * per kind, module clusters, the collapsed boxes, the highlighted provenance path, output edges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <graphviz/cgraph.h>

#include "viz/fxviz.h"

/* The documented look of each kind (viz/viz_style.c), repeated here on purpose: a change of the
 * table must be a deliberate change of this test too. */
#define FILL_BUFFER "#a5d8ff"
#define FILL_USER_INPUT "#b2f2bb"
#define FILL_PLACEHOLDER "#ffffff"
#define FILL_OP "#ffffff"
#define FILL_VIEW "#e7f5ff"
#define FILL_SCATTER "#ffd8a8"
#define FILL_OUT_USER "#8ce99a"
#define FILL_OUT_BUFMUT "#b197fc"
#define FILL_MODULE "#fff3bf"
#define PEN_MUTATION "#c92a2a"
#define PEN_HIGHLIGHT "#f08c00"
#define EDGE_BUFMUT "#5f3dc4"
#define EDGE_USER "#2b8a3e"

/* ---- building the test graph ----------------------------------------------------------------- */
/*   b_state, x : f32[3]
 *   mul = mul.Tensor(b_state, x)          v1 of state   module layers.0 (Block)
 *   add = add.Tensor(mul, 1)              v2 of state   module layers.0.attn (Attention)
 *   select = select.int(add, 0, 0)        view          module layers.0.attn
 *   select_scatter = select_scatter(add, select, 0, 0)  module layers.1 (We"ird\N)
 *   output (add -> BUFFER_MUTATION state, select_scatter -> USER_OUTPUT) */
typedef struct fixture {
    fx_graph *g;
    fx_node *b_state, *x, *mul, *add, *sel, *ss;
    fx_input_spec in[2];
    fx_output_spec out[2];
    fx_program prog;
    fx_prov_step steps[3];
    fx_provenance pv;
} fixture;

static fx_tensor *meta_tensor(int ndim, int64_t n) {
    fx_tensor *t = NULL;
    fx_err err;
    assert_int_equal(fx_tensor_empty(ndim, &n, FX_DTYPE_F32, FX_DEVICE_META, &t, &err), FX_OK);
    return t;
}

static void set_val(fx_node *n, int ndim) {
    fx_err err;
    fx_tensor *t = meta_tensor(ndim, 3);
    fx_ivalue v = fx_iv_tensor_steal(t);
    assert_int_equal(fx_node_set_val(n, &v, &err), FX_OK);
    fx_ivalue_clear(&v);
}

/* A call of op with the given leading args (the rest take schema defaults). */
static fx_node *call(fx_graph *g, fx_op_id id, int nargs, const fx_ivalue *args) {
    fx_err err;
    const fx_opdef *op = fx_op_get(id);
    assert_non_null(op);
    fx_ivalue full[32];
    for (int i = 0; i < op->schema.nargs; i++) full[i] = i < nargs ? args[i] : (fx_ivalue){0};
    fx_node *n = fx_graph_call(g, op, full, NULL, &err);
    assert_non_null(n);
    return n;
}

static void set_modules(fx_node *n, int nm, const fx_module_entry *m) {
    fx_err err;
    assert_int_equal(fx_node_set_modules(n, m, nm, &err), FX_OK);
}

static void set_mutation(fx_node *n, int version, const char *from) {
    fx_err err;
    fx_mutation m = {(char *)"state", version, (char *)from, NULL, (char *)"raw"};
    assert_int_equal(fx_node_set_mutation(n, &m, &err), FX_OK);
}

/* Ends graph g with `return [n]`. */
static void output_of(fx_graph *g, fx_node *n) {
    fx_err err;
    fx_ivalue res;
    assert_int_equal(fx_iv_list(1, &res, &err), FX_OK);
    res.u.list.items[0] = fx_iv_node(n);
    assert_non_null(fx_graph_output(g, &res, &err));
    fx_ivalue_clear(&res);
}

/* The program of graph g whose placeholder b_state is buffer `state` and whose last node `last`
 * is returned as the buffer's new value. */
typedef struct state_program {
    fx_input_spec in[1];
    fx_output_spec out[1];
    fx_program prog;
} state_program;

static void state_program_of(state_program *sp, fx_graph *g, fx_node *last) {
    output_of(g, last);
    sp->in[0] = (fx_input_spec){FX_INPUT_BUFFER, (char *)"b_state", (char *)"state", true};
    sp->out[0] = (fx_output_spec){FX_OUTPUT_BUFFER_MUTATION, (char *)last->name, (char *)"state"};
    memset(&sp->prog, 0, sizeof sp->prog);
    sp->prog.graph = g;
    sp->prog.sig = (fx_signature){sp->in, 1, sp->out, 1};
}

static void build_fixture(fixture *f) {
    fx_err err;
    memset(f, 0, sizeof *f);
    f->g = fx_graph_new();
    assert_non_null(f->g);
    f->b_state = fx_graph_placeholder(f->g, "b_state", &err);
    f->x = fx_graph_placeholder(f->g, "x", &err);
    assert_non_null(f->b_state);
    assert_non_null(f->x);
    set_val(f->b_state, 1);
    set_val(f->x, 1);

    fx_module_entry l0[] = {{(char *)"", (char *)"Model"}, {(char *)"layers.0", (char *)"Block"}};
    fx_module_entry l0a[] = {{(char *)"", (char *)"Model"},
                             {(char *)"layers.0", (char *)"Block"},
                             {(char *)"layers.0.attn", (char *)"Attention"}};
    fx_module_entry l1[] = {{(char *)"", (char *)"Model"},
                            {(char *)"layers.1", (char *)"We\"ird\\N"}};

    fx_ivalue a[4] = {fx_iv_node(f->b_state), fx_iv_node(f->x)};
    f->mul = call(f->g, FX_OP_MUL_TENSOR, 2, a);
    set_val(f->mul, 1);
    set_modules(f->mul, 2, l0);
    set_mutation(f->mul, 1, "aten.mul_.Tensor");

    a[0] = fx_iv_node(f->mul);
    a[1] = fx_iv_int(1);
    f->add = call(f->g, FX_OP_ADD_TENSOR, 2, a);
    set_val(f->add, 1);
    set_modules(f->add, 3, l0a);
    set_mutation(f->add, 2, "aten.add_.Tensor");

    a[0] = fx_iv_node(f->add);
    a[1] = fx_iv_int(0);
    a[2] = fx_iv_int(0);
    f->sel = call(f->g, FX_OP_SELECT_INT, 3, a);
    set_val(f->sel, 0);
    set_modules(f->sel, 3, l0a);

    a[0] = fx_iv_node(f->add);
    a[1] = fx_iv_node(f->sel);
    a[2] = fx_iv_int(0);
    a[3] = fx_iv_int(0);
    f->ss = call(f->g, FX_OP_SELECT_SCATTER, 4, a);
    set_val(f->ss, 1);
    set_modules(f->ss, 2, l1);

    fx_ivalue res;
    assert_int_equal(fx_iv_list(2, &res, &err), FX_OK);
    res.u.list.items[0] = fx_iv_node(f->add);
    res.u.list.items[1] = fx_iv_node(f->ss);
    assert_non_null(fx_graph_output(f->g, &res, &err));
    fx_ivalue_clear(&res);

    f->in[0] = (fx_input_spec){FX_INPUT_BUFFER, (char *)"b_state", (char *)"state", true};
    f->in[1] = (fx_input_spec){FX_INPUT_USER_INPUT, (char *)"x", NULL, false};
    f->out[0] = (fx_output_spec){FX_OUTPUT_BUFFER_MUTATION, (char *)"add", (char *)"state"};
    f->out[1] = (fx_output_spec){FX_OUTPUT_USER_OUTPUT, (char *)"select_scatter", NULL};
    f->prog.graph = f->g;
    f->prog.sig.inputs = f->in;
    f->prog.sig.ninputs = 2;
    f->prog.sig.outputs = f->out;
    f->prog.sig.noutputs = 2;

    f->steps[0] = (fx_prov_step){0, f->b_state, (char *)"placeholder", NULL, NULL, NULL, NULL};
    f->steps[1] = (fx_prov_step){1,
                                 f->mul,
                                 (char *)"aten.mul.Tensor",
                                 (char *)"aten.mul_.Tensor",
                                 NULL,
                                 (char *)"model.lua:9",
                                 NULL};
    f->steps[2] = (fx_prov_step){2,
                                 f->add,
                                 (char *)"aten.add.Tensor",
                                 (char *)"aten.add_.Tensor",
                                 NULL,
                                 (char *)"model.lua:10",
                                 NULL};
    f->pv = (fx_provenance){(char *)"state", (char *)"BUFFER", (char *)"add", f->steps, 3, false};
}

static void free_fixture(fixture *f) { fx_graph_free(f->g); }

/* ---- reading DOT back ------------------------------------------------------------------------ */
static char *dot_text(const fx_graph *g, const fxviz_opts *o) {
    fx_err err;
    fx_strbuf sb = FX_STRBUF_INIT;
    int rc = fxviz_dot_source(g, o, &sb, &err);
    if (rc != FX_OK) fail_msg("fxviz_dot_source: %s", err.msg);
    return fx_strbuf_take(&sb);
}

static Agraph_t *parse(const char *text) {
    Agraph_t *ag = agmemread(text);
    assert_non_null(ag);
    return ag;
}

static Agraph_t *dot_graph(const fx_graph *g, const fxviz_opts *o) {
    char *text = dot_text(g, o);
    Agraph_t *ag = parse(text);
    fx_free(text);
    return ag;
}

static Agnode_t *node(Agraph_t *ag, const char *name) {
    Agnode_t *n = agnode(ag, (char *)name, 0);
    if (!n) fail_msg("no node '%s' in the DOT", name);
    return n;
}

static int has_node(Agraph_t *ag, const char *name) { return agnode(ag, (char *)name, 0) != NULL; }

static const char *nattr(Agraph_t *ag, const char *name, const char *attr) {
    char *v = agget(node(ag, name), (char *)attr);
    return v ? v : "";
}

static Agedge_t *edge(Agraph_t *ag, const char *t, const char *h) {
    Agnode_t *tn = agnode(ag, (char *)t, 0), *hn = agnode(ag, (char *)h, 0);
    if (!tn || !hn) return NULL;
    for (Agedge_t *e = agfstout(ag, tn); e; e = agnxtout(ag, e)) {
        if (aghead(e) == hn) return e;
    }
    return NULL;
}

static int count_edges(Agraph_t *ag, const char *t, const char *h) {
    Agnode_t *tn = agnode(ag, (char *)t, 0), *hn = agnode(ag, (char *)h, 0);
    int k = 0;
    if (!tn || !hn) return 0;
    for (Agedge_t *e = agfstout(ag, tn); e; e = agnxtout(ag, e)) k += aghead(e) == hn;
    return k;
}

static const char *eattr(Agraph_t *ag, const char *t, const char *h, const char *attr) {
    Agedge_t *e = edge(ag, t, h);
    if (!e) fail_msg("no edge %s -> %s in the DOT", t, h);
    char *v = agget(e, (char *)attr);
    return v ? v : "";
}

static int in_cluster(Agraph_t *sub, Agraph_t *ag, const char *name) {
    return sub && agsubnode(sub, node(ag, name), 0) != NULL;
}

#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        const char *h_ = (hay);                                                                    \
        if (!strstr(h_, (needle))) fail_msg("'%s' does not contain '%s'", h_, (needle));           \
    } while (0)

/* ---- tests: kinds, labels, edges ------------------------------------------------------------- */
static void test_kinds_and_labels(void **state) {
    fixture f;
    build_fixture(&f);
    fxviz_opts o = {.program = &f.prog, .depth = FXVIZ_DEPTH_FULL};
    Agraph_t *ag = dot_graph(f.g, &o);

    /* placeholders coloured by input kind, labels from the template */
    assert_string_equal(nattr(ag, "b_state", "fillcolor"), FILL_BUFFER);
    assert_string_equal(nattr(ag, "b_state", "shape"), "ellipse");
    assert_string_equal(nattr(ag, "b_state", "label"), "b_state\\nBUFFER state\\nf32[3]");
    assert_string_equal(nattr(ag, "x", "fillcolor"), FILL_USER_INPUT);
    assert_string_equal(nattr(ag, "x", "label"), "x\\nUSER_INPUT\\nf32[3]");

    /* ops: target without "aten.", dtype[shape], mutation pen and version line */
    assert_string_equal(nattr(ag, "mul", "shape"), "box");
    assert_string_equal(nattr(ag, "mul", "fillcolor"), FILL_OP);
    assert_string_equal(nattr(ag, "mul", "label"),
                        "mul\\nmul.Tensor\\nf32[3]\\nv1 of state (mul_.Tensor)");
    assert_string_equal(nattr(ag, "mul", "color"), PEN_MUTATION);
    assert_contains(nattr(ag, "mul", "style"), "bold");
    assert_contains(nattr(ag, "add", "label"), "v2 of state");
    assert_string_equal(nattr(ag, "add", "color"), PEN_MUTATION);
    /* x carries no mutation record: default pen, no bold */
    assert_string_not_equal(nattr(ag, "x", "color"), PEN_MUTATION);
    assert_null(strstr(nattr(ag, "x", "style"), "bold"));

    /* view and scatter ops have their own look; a 0-d value prints as f32[] */
    assert_string_equal(nattr(ag, "select", "fillcolor"), FILL_VIEW);
    assert_contains(nattr(ag, "select", "style"), "dashed");
    assert_string_equal(nattr(ag, "select", "label"), "select\\nselect.int\\nf32[]");
    assert_string_equal(nattr(ag, "select_scatter", "fillcolor"), FILL_SCATTER);
    assert_contains(nattr(ag, "select_scatter", "style"), "diagonals");

    /* one output node per mutated state, named by it; one for the user outputs; mutation edges
       dashed */
    assert_false(has_node(ag, "output"));
    assert_false(has_node(ag, "output.buffer_mutation"));
    assert_string_equal(nattr(ag, "output.buffer_mutation.state", "fillcolor"), FILL_OUT_BUFMUT);
    assert_string_equal(nattr(ag, "output.buffer_mutation.state", "label"),
                        "BUFFER_MUTATION\\nstate");
    assert_string_equal(nattr(ag, "output.user_output", "fillcolor"), FILL_OUT_USER);
    assert_contains(nattr(ag, "output.user_output", "label"), "USER_OUTPUT");
    assert_string_equal(eattr(ag, "add", "output.buffer_mutation.state", "style"), "dashed");
    assert_string_equal(eattr(ag, "add", "output.buffer_mutation.state", "color"), EDGE_BUFMUT);
    assert_string_equal(eattr(ag, "add", "output.buffer_mutation.state", "label"), "");
    assert_string_equal(eattr(ag, "select_scatter", "output.user_output", "style"), "solid");
    assert_string_equal(eattr(ag, "select_scatter", "output.user_output", "color"), EDGE_USER);
    assert_null(edge(ag, "add", "output.user_output"));

    /* an edge from each argument to its user, and no others */
    assert_int_equal(count_edges(ag, "b_state", "mul"), 1);
    assert_int_equal(count_edges(ag, "x", "mul"), 1);
    assert_int_equal(count_edges(ag, "mul", "add"), 1);
    assert_int_equal(count_edges(ag, "add", "select"), 1);
    assert_int_equal(count_edges(ag, "add", "select_scatter"), 1);
    assert_int_equal(count_edges(ag, "select", "select_scatter"), 1);
    assert_int_equal(agnedges(ag), 8);
    assert_int_equal(agnnodes(ag), 8);

    /* the fills of the six kinds drawn here are pairwise distinct (op and placeholder may share
       white: they differ by shape) */
    const char *fills[] = {FILL_BUFFER,  FILL_USER_INPUT, FILL_VIEW,
                           FILL_SCATTER, FILL_OUT_USER,   FILL_OUT_BUFMUT};
    for (int i = 0; i < 6; i++)
        for (int j = i + 1; j < 6; j++) assert_string_not_equal(fills[i], fills[j]);
    agclose(ag);
    free_fixture(&f);
}

static void test_clusters_full_nesting(void **state) {
    fixture f;
    build_fixture(&f);
    fxviz_opts o = {.program = &f.prog, .depth = FXVIZ_DEPTH_FULL};
    char *text = dot_text(f.g, &o);
    assert_contains(text, "subgraph \"cluster_layers.0\"");
    assert_contains(text, "subgraph \"cluster_layers.0.attn\"");
    assert_contains(text, "subgraph \"cluster_layers.1\"");
    /* the root module ("" path) is no cluster */
    assert_null(strstr(text, "subgraph cluster_ "));
    assert_null(strstr(text, "subgraph \"cluster_\""));
    Agraph_t *ag = parse(text);
    fx_free(text);

    Agraph_t *c0 = agsubg(ag, (char *)"cluster_layers.0", 0);
    Agraph_t *c0a = c0 ? agsubg(c0, (char *)"cluster_layers.0.attn", 0) : NULL;
    Agraph_t *c1 = agsubg(ag, (char *)"cluster_layers.1", 0);
    assert_non_null(c0);
    assert_non_null(c0a); /* nested inside layers.0 */
    assert_non_null(c1);
    assert_null(agsubg(ag, (char *)"cluster_layers.0.attn", 0)); /* not at top level */
    assert_true(in_cluster(c0, ag, "mul"));
    assert_false(in_cluster(c0a, ag, "mul"));
    assert_true(in_cluster(c0a, ag, "add"));
    assert_true(in_cluster(c0a, ag, "select"));
    assert_true(in_cluster(c1, ag, "select_scatter"));
    /* a buffer sits in the innermost cluster holding all its users (mul), a user input at the
       top; a mutated state's output node next to its last version (add) */
    assert_true(in_cluster(c0, ag, "b_state"));
    assert_false(in_cluster(c0a, ag, "b_state"));
    assert_false(in_cluster(c0, ag, "x"));
    assert_true(in_cluster(c0a, ag, "output.buffer_mutation.state"));
    assert_false(in_cluster(c0, ag, "output.user_output"));
    assert_string_equal(agget(c0, (char *)"label"), "layers.0: Block");
    assert_string_equal(agget(c0a, (char *)"label"), "layers.0.attn: Attention");
    /* user text is escaped: the quote survives DOT quoting, the backslash is doubled so "\N"
       never expands to the node name */
    assert_string_equal(agget(c1, (char *)"label"), "layers.1: We\"ird\\\\N");
    assert_false(has_node(ag, "module.layers.0.attn"));
    agclose(ag);
    free_fixture(&f);
}

static void test_highlight(void **state) {
    fixture f;
    build_fixture(&f);
    fxviz_opts o = {.program = &f.prog, .highlight = &f.pv, .depth = FXVIZ_DEPTH_FULL};
    Agraph_t *ag = dot_graph(f.g, &o);
    const char *path[] = {"b_state", "mul", "add"};
    for (int i = 0; i < 3; i++) {
        assert_string_equal(nattr(ag, path[i], "color"), PEN_HIGHLIGHT);
        assert_string_equal(nattr(ag, path[i], "penwidth"), "4");
    }
    assert_string_not_equal(nattr(ag, "x", "color"), PEN_HIGHLIGHT);
    assert_string_not_equal(nattr(ag, "select_scatter", "color"), PEN_HIGHLIGHT);
    assert_string_equal(eattr(ag, "b_state", "mul", "color"), PEN_HIGHLIGHT);
    assert_string_equal(eattr(ag, "mul", "add", "color"), PEN_HIGHLIGHT);
    assert_string_equal(eattr(ag, "add", "output.buffer_mutation.state", "color"), PEN_HIGHLIGHT);
    assert_string_not_equal(eattr(ag, "x", "mul", "color"), PEN_HIGHLIGHT);
    assert_string_not_equal(eattr(ag, "add", "select", "color"), PEN_HIGHLIGHT);
    assert_int_equal(agnedges(ag), 8); /* adjacent versions reuse the graph's edges */
    agclose(ag);

    /* steps that are not adjacent get a dashed, non-constraining link */
    fx_prov_step skip[2] = {f.steps[0], f.steps[2]};
    fx_provenance pv2 = f.pv;
    pv2.steps = skip;
    pv2.nsteps = 2;
    o.highlight = &pv2;
    ag = dot_graph(f.g, &o);
    assert_string_equal(eattr(ag, "b_state", "add", "color"), PEN_HIGHLIGHT);
    assert_string_equal(eattr(ag, "b_state", "add", "style"), "dashed");
    assert_string_equal(eattr(ag, "b_state", "add", "constraint"), "false");
    assert_int_equal(agnedges(ag), 9);
    agclose(ag);
    free_fixture(&f);
}

static void test_collapse_depth(void **state) {
    fixture f;
    build_fixture(&f);
    fxviz_opts o = {.program = &f.prog, .depth = 1, .highlight = &f.pv};
    Agraph_t *ag = dot_graph(f.g, &o);
    /* layers.0.attn (level 2) is one box inside the layers.0 cluster; add and select are gone */
    assert_false(has_node(ag, "add"));
    assert_false(has_node(ag, "select"));
    const char *box = "module.layers.0.attn";
    assert_string_equal(nattr(ag, box, "shape"), "box3d");
    assert_string_equal(nattr(ag, box, "fillcolor"), FILL_MODULE);
    /* the box names the highlighted version made inside it */
    assert_string_equal(nattr(ag, box, "label"),
                        "layers.0.attn: Attention\\n2 ops, 1 mutation\\nwhy: v2 of state");
    Agraph_t *c0 = agsubg(ag, (char *)"cluster_layers.0", 0);
    assert_non_null(c0);
    assert_null(agsubg(c0, (char *)"cluster_layers.0.attn", 0));
    assert_true(in_cluster(c0, ag, box));
    assert_true(in_cluster(c0, ag, "mul"));
    /* level-1 modules stay clusters with their ops drawn */
    assert_true(has_node(ag, "select_scatter"));
    assert_non_null(agsubg(ag, (char *)"cluster_layers.1", 0));
    /* edges attach to the box; add->select_scatter and select->select_scatter become one */
    assert_int_equal(count_edges(ag, "mul", box), 1);
    assert_int_equal(count_edges(ag, box, "select_scatter"), 1);
    assert_int_equal(count_edges(ag, box, "output.buffer_mutation.state"), 1);
    assert_true(in_cluster(c0, ag, "output.buffer_mutation.state"));
    assert_int_equal(count_edges(ag, box, box), 0);
    /* the highlighted path goes through the box */
    assert_string_equal(nattr(ag, box, "color"), PEN_HIGHLIGHT);
    assert_string_equal(eattr(ag, "mul", box, "color"), PEN_HIGHLIGHT);
    assert_string_equal(eattr(ag, box, "output.buffer_mutation.state", "color"), PEN_HIGHLIGHT);
    agclose(ag);

    /* depth 2 is as deep as the stacks go: nothing collapses */
    o.depth = 2;
    o.highlight = NULL;
    ag = dot_graph(f.g, &o);
    assert_true(has_node(ag, "add"));
    assert_false(has_node(ag, "module.layers.0.attn"));
    assert_int_equal(agnnodes(ag), 8);
    agclose(ag);
    free_fixture(&f);
}

/* A 3-level stack: depth 1 keeps level-1 clusters and collapses every level-2 module, however
 * deep its own ops go. */
static void test_collapse_counts_deeper_ops(void **state) {
    fx_err err;
    fx_graph *g = fx_graph_new();
    fx_node *x = fx_graph_placeholder(g, "x", &err);
    fx_module_entry deep[] = {{(char *)"blocks.3", (char *)"Block"},
                              {(char *)"blocks.3.mlp", (char *)"MLP"},
                              {(char *)"blocks.3.mlp.fc", (char *)"Linear"}};
    fx_node *prev = x;
    for (int i = 0; i < 5; i++) {
        fx_ivalue a[1] = {fx_iv_node(prev)};
        prev = call(g, FX_OP_NEG, 1, a);
        set_modules(prev, i < 2 ? 2 : 3, deep); /* 2 in mlp itself, 3 in mlp.fc */
    }
    output_of(g, prev);

    fxviz_opts o = {.depth = 1};
    Agraph_t *ag = dot_graph(g, &o);
    assert_string_equal(nattr(ag, "module.blocks.3.mlp", "label"), "blocks.3.mlp: MLP\\n5 ops");
    assert_int_equal(agnnodes(ag), 3); /* x, the box, output */
    assert_int_equal(count_edges(ag, "x", "module.blocks.3.mlp"), 1);
    assert_int_equal(count_edges(ag, "module.blocks.3.mlp", "output"), 1);
    assert_false(has_node(ag, "module.blocks.3.mlp.fc"));
    agclose(ag);

    o.depth = 2;
    ag = dot_graph(g, &o);
    assert_string_equal(nattr(ag, "module.blocks.3.mlp.fc", "label"),
                        "blocks.3.mlp.fc: Linear\\n3 ops");
    assert_true(has_node(ag, "neg"));
    assert_true(has_node(ag, "neg_1"));
    Agraph_t *c = agsubg(ag, (char *)"cluster_blocks.3", 0);
    Agraph_t *cm = c ? agsubg(c, (char *)"cluster_blocks.3.mlp", 0) : NULL;
    assert_true(in_cluster(cm, ag, "module.blocks.3.mlp.fc"));
    agclose(ag);
    fx_graph_free(g);
}

/* A module holding one op inside another module is no cluster: the op names it in its label.
 * A top-level module keeps its cluster however small. */
static void test_single_op_module(void **state) {
    fx_err err;
    fx_graph *g = fx_graph_new();
    fx_node *x = fx_graph_placeholder(g, "x", &err);
    fx_module_entry blk[] = {{(char *)"blocks.0", (char *)"Block"}};
    fx_module_entry fc[] = {{(char *)"blocks.0", (char *)"Block"},
                            {(char *)"blocks.0.fc", (char *)"Linear"}};
    fx_module_entry top[] = {{(char *)"head", (char *)"Linear"}};
    fx_ivalue a[1] = {fx_iv_node(x)};
    fx_node *n1 = call(g, FX_OP_NEG, 1, a);
    set_modules(n1, 2, fc);
    a[0] = fx_iv_node(n1);
    fx_node *n2 = call(g, FX_OP_NEG, 1, a);
    set_modules(n2, 1, blk);
    a[0] = fx_iv_node(n2);
    fx_node *n3 = call(g, FX_OP_NEG, 1, a);
    set_modules(n3, 1, top);
    output_of(g, n3);
    fxviz_opts o = {.depth = FXVIZ_DEPTH_FULL};
    Agraph_t *ag = dot_graph(g, &o);
    Agraph_t *cb = agsubg(ag, (char *)"cluster_blocks.0", 0);
    assert_non_null(cb);
    assert_null(agsubg(cb, (char *)"cluster_blocks.0.fc", 0));
    assert_true(in_cluster(cb, ag, "neg"));
    assert_string_equal(nattr(ag, "neg", "label"), "neg\\nneg.default\\nfc: Linear");
    assert_true(in_cluster(agsubg(ag, (char *)"cluster_head", 0), ag, "neg_2"));
    agclose(ag);
    fx_graph_free(g);
}

static void test_bare_graph(void **state) {
    fixture f;
    build_fixture(&f);
    Agraph_t *ag = dot_graph(f.g, NULL);
    assert_string_equal(nattr(ag, "b_state", "fillcolor"), FILL_PLACEHOLDER);
    assert_string_equal(nattr(ag, "b_state", "label"), "b_state\\nf32[3]");
    assert_true(has_node(ag, "output"));
    assert_false(has_node(ag, "output.buffer_mutation"));
    assert_int_equal(count_edges(ag, "add", "output"), 1);
    assert_int_equal(count_edges(ag, "select_scatter", "output"), 1);
    agclose(ag);
    free_fixture(&f);
}

/* A higher-order op's body is a cluster next to its get_attr node. */
static void test_subgraph_cluster(void **state) {
    fx_err err;
    fx_graph *body = fx_graph_new();
    fx_node *a = fx_graph_placeholder(body, "a", &err);
    fx_ivalue args[1] = {fx_iv_node(a)};
    fx_node *neg = call(body, FX_OP_NEG, 1, args);
    output_of(body, neg);

    fx_graph *g = fx_graph_new();
    fx_node *x = fx_graph_placeholder(g, "x", &err);
    fx_node *ga = fx_graph_get_attr(g, "true_graph_0", &err);
    assert_non_null(ga);
    fx_node_set_subgraph(ga, body);
    fx_ivalue cargs[2] = {fx_iv_node(ga), fx_iv_node(x)};
    fx_node *cond = fx_graph_call_target(g, "higher_order.cond", cargs, 2, "cond", &err);
    assert_non_null(cond);
    output_of(g, cond);

    Agraph_t *ag = dot_graph(g, NULL);
    Agraph_t *c = agsubg(ag, (char *)"cluster_true_graph_0", 0);
    assert_non_null(c);
    assert_true(in_cluster(c, ag, "true_graph_0/a"));
    assert_true(in_cluster(c, ag, "true_graph_0/neg"));
    assert_true(in_cluster(c, ag, "true_graph_0/output"));
    assert_false(in_cluster(c, ag, "true_graph_0"));
    assert_string_equal(nattr(ag, "true_graph_0", "shape"), "component");
    assert_string_equal(nattr(ag, "cond", "shape"), "hexagon");
    assert_string_equal(nattr(ag, "cond", "label"), "cond\\nhigher_order.cond");
    assert_string_equal(eattr(ag, "true_graph_0", "true_graph_0/a", "lhead"),
                        "cluster_true_graph_0");
    assert_int_equal(count_edges(ag, "true_graph_0/a", "true_graph_0/neg"), 1);
    assert_int_equal(count_edges(ag, "true_graph_0", "cond"), 1);
    assert_int_equal(count_edges(ag, "x", "cond"), 1);
    agclose(ag);
    fx_graph_free(g);
}

/* Above 1,000 drawn nodes the layout is capped (nslimit) and edge labels become xlabels, which
 * dot places after layout instead of doubling every rank; small graphs keep real labels. */
static void test_big_graph_limits(void **state) {
    fx_err err;
    fx_graph *g = fx_graph_new();
    fx_node *b = fx_graph_placeholder(g, "b_state", &err);
    fx_node *prev = b;
    for (int i = 0; i < 1100; i++) {
        fx_ivalue a[1] = {fx_iv_node(prev)};
        prev = call(g, FX_OP_NEG, 1, a);
        if (i == 0) set_val(prev, 1); /* "neg" -> "neg_1" carries f32[3] under edge_shapes */
    }
    state_program sp;
    state_program_of(&sp, g, prev);
    fx_program prog = sp.prog;
    fxviz_opts o = {.program = &prog, .depth = FXVIZ_DEPTH_FULL, .edge_shapes = true};
    Agraph_t *ag = dot_graph(g, &o);
    assert_int_equal(agnnodes(ag), 1102);
    assert_string_equal(agget(ag, (char *)"nslimit"), "1");
    assert_string_equal(eattr(ag, "neg", "neg_1", "xlabel"), "f32[3]");
    assert_string_equal(eattr(ag, "neg", "neg_1", "label"), "");
    assert_string_equal(eattr(ag, prev->name, "output.buffer_mutation.state", "style"), "dashed");
    agclose(ag);
    fx_graph_free(g);

    /* the small fixture: no limit, a real label */
    fixture f;
    build_fixture(&f);
    o.program = &f.prog;
    ag = dot_graph(f.g, &o);
    char *ns = agget(ag, (char *)"nslimit");
    assert_true(ns == NULL || ns[0] == '\0');
    assert_string_equal(eattr(ag, "mul", "add", "label"), "f32[3]");
    assert_string_equal(eattr(ag, "add", "select", "label"), "f32[3]");
    agclose(ag);
    free_fixture(&f);
}

/* ---- tests: what real models need (folded parameters, per-state outputs, collapse) ----------- */
/* The fixture plus a parameter `p_w` (target "layers.0.w") read by mul, a second buffer
 * `b_other` (target "other") mutated by select_scatter, and the Lua line of mul. */
typedef struct fixture2 {
    fixture f;
    fx_input_spec in[4];
    fx_output_spec out[3];
} fixture2;

static void build_fixture2(fixture2 *f2) {
    fx_err err;
    fixture *f = &f2->f;
    build_fixture(f);
    fx_node *w = fx_graph_placeholder(f->g, "p_w", &err);
    fx_node *o = fx_graph_placeholder(f->g, "b_other", &err);
    assert_non_null(w);
    assert_non_null(o);
    set_val(w, 1);
    set_val(o, 1);
    fx_ivalue v = fx_iv_node(w);
    assert_int_equal(fx_node_set_arg(f->mul, 1, &v, &err), FX_OK); /* mul(b_state, p_w) */
    fx_frame fr = {(char *)"model.lua", 9, (char *)"forward", (char *)"self.state:mul_(x)"};
    assert_int_equal(fx_node_set_stack(f->mul, &fr, 1, &err), FX_OK);
    fx_mutation m = {(char *)"other", 1, (char *)"aten.copy_.default", NULL, (char *)"raw"};
    assert_int_equal(fx_node_set_mutation(f->ss, &m, &err), FX_OK);
    fx_node *out = fx_graph_output_node(f->g);
    fx_ivalue res;
    assert_int_equal(fx_iv_list(3, &res, &err), FX_OK);
    res.u.list.items[0] = fx_iv_node(f->add);
    res.u.list.items[1] = fx_iv_node(f->ss);
    res.u.list.items[2] = fx_iv_node(f->ss);
    assert_int_equal(fx_node_set_arg(out, 0, &res, &err), FX_OK);
    fx_ivalue_clear(&res);
    f2->in[0] = (fx_input_spec){FX_INPUT_PARAMETER, (char *)"p_w", (char *)"layers.0.w", true};
    f2->in[1] = (fx_input_spec){FX_INPUT_BUFFER, (char *)"b_state", (char *)"state", true};
    f2->in[2] = (fx_input_spec){FX_INPUT_BUFFER, (char *)"b_other", (char *)"other", true};
    f2->in[3] = (fx_input_spec){FX_INPUT_USER_INPUT, (char *)"x", NULL, false};
    f2->out[0] = (fx_output_spec){FX_OUTPUT_BUFFER_MUTATION, (char *)"add", (char *)"state"};
    f2->out[1] = (fx_output_spec){FX_OUTPUT_BUFFER_MUTATION, (char *)"select_scatter",
                                  (char *)"other"};
    f2->out[2] = (fx_output_spec){FX_OUTPUT_USER_OUTPUT, (char *)"select_scatter", NULL};
    f->prog.sig = (fx_signature){f2->in, 4, f2->out, 3};
}

static void test_folded_params(void **state) {
    fixture2 f2;
    build_fixture2(&f2);
    fixture *f = &f2.f;
    fxviz_opts o = {.program = &f->prog, .depth = FXVIZ_DEPTH_FULL};
    Agraph_t *ag = dot_graph(f->g, &o);
    /* the parameter is no node: its user names it (relative to the user's module) with its
       type, after the op's own lines and the version lines with the Lua line */
    assert_false(has_node(ag, "p_w"));
    assert_string_equal(nattr(ag, "mul", "label"), "mul\\nmul.Tensor\\nf32[3]\\nv1 of state "
                                                   "(mul_.Tensor)\\nmodel.lua:9\\nw f32[3]");
    assert_int_equal(count_edges(ag, "b_state", "mul"), 1);
    assert_int_equal(agnedges(ag), 8);
    agclose(ag);
    /* --params draws it, in the cluster of its only user */
    o.params = true;
    ag = dot_graph(f->g, &o);
    assert_string_equal(nattr(ag, "p_w", "fillcolor"), "#ffe8a3");
    assert_int_equal(count_edges(ag, "p_w", "mul"), 1);
    assert_true(in_cluster(agsubg(ag, (char *)"cluster_layers.0", 0), ag, "p_w"));
    assert_null(strstr(nattr(ag, "mul", "label"), "w f32[3]"));
    agclose(ag);
    free_fixture(f);
}

static void test_one_output_per_state(void **state) {
    fixture2 f2;
    build_fixture2(&f2);
    fixture *f = &f2.f;
    fxviz_opts o = {.program = &f->prog, .depth = FXVIZ_DEPTH_FULL};
    Agraph_t *ag = dot_graph(f->g, &o);
    /* two mutated buffers: two output nodes, each in the cluster of its last version */
    assert_contains(nattr(ag, "output.buffer_mutation.state", "label"), "state");
    assert_contains(nattr(ag, "output.buffer_mutation.other", "label"), "other");
    assert_int_equal(count_edges(ag, "add", "output.buffer_mutation.state"), 1);
    assert_int_equal(count_edges(ag, "select_scatter", "output.buffer_mutation.other"), 1);
    assert_int_equal(count_edges(ag, "select_scatter", "output.user_output"), 1);
    Agraph_t *c0a = agsubg(agsubg(ag, (char *)"cluster_layers.0", 0),
                           (char *)"cluster_layers.0.attn", 0);
    Agraph_t *c1 = agsubg(ag, (char *)"cluster_layers.1", 0);
    assert_true(in_cluster(c0a, ag, "output.buffer_mutation.state"));
    assert_true(in_cluster(c1, ag, "output.buffer_mutation.other"));
    assert_false(in_cluster(c1, ag, "output.user_output"));
    /* b_other is read by nobody: drawn at the top */
    assert_true(has_node(ag, "b_other"));
    agclose(ag);
    free_fixture(f);
}

/* depth 0: the whole program as module boxes; expand opens a path, collapse closes one; a
 * buffer read only inside one box is folded into it. */
static void test_depth0_expand_collapse(void **state) {
    fixture2 f2;
    build_fixture2(&f2);
    fixture *f = &f2.f;
    fxviz_opts o = {.program = &f->prog, .depth = 0, .legend = true};
    Agraph_t *ag = dot_graph(f->g, &o);
    assert_string_equal(nattr(ag, "module.layers.0", "label"),
                        "layers.0: Block\\n3 ops, 2 mutations");
    assert_string_equal(nattr(ag, "module.layers.1", "label"), "layers.1: We\"ird\\\\N\\n1 op, "
                                                               "1 mutation");
    assert_null(agsubg(ag, (char *)"cluster_layers.0", 0));
    assert_false(has_node(ag, "mul"));
    assert_false(has_node(ag, "b_state")); /* folded into layers.0's box */
    assert_true(has_node(ag, "x"));        /* user inputs never fold */
    assert_int_equal(count_edges(ag, "module.layers.0", "module.layers.1"), 1);
    assert_int_equal(count_edges(ag, "module.layers.0", "output.buffer_mutation.state"), 1);
    /* the legend names the kinds drawn, and only those */
    const char *lab = agget(ag, (char *)"label");
    assert_contains(lab, ">module<");
    assert_contains(lab, ">user_input<");
    assert_contains(lab, ">buffer_mutation<");
    assert_null(strstr(lab, ">view<"));
    agclose(ag);

    const char *expand[] = {"layers.0.attn"};
    o.expand = expand;
    o.nexpand = 1;
    ag = dot_graph(f->g, &o);
    Agraph_t *c0 = agsubg(ag, (char *)"cluster_layers.0", 0);
    assert_non_null(c0);
    assert_non_null(agsubg(c0, (char *)"cluster_layers.0.attn", 0));
    assert_true(has_node(ag, "add"));
    assert_true(has_node(ag, "module.layers.1"));
    agclose(ag);

    const char *collapse[] = {"layers.0.attn"};
    o.depth = FXVIZ_DEPTH_FULL;
    o.collapse = collapse;
    o.ncollapse = 1;
    ag = dot_graph(f->g, &o);
    assert_true(has_node(ag, "module.layers.0.attn"));
    assert_true(has_node(ag, "mul"));
    assert_false(has_node(ag, "add"));
    assert_true(has_node(ag, "select_scatter"));
    agclose(ag);
    free_fixture(f);
}

/* A module alone: its nodes, the values it reads from outside, its outputs. */
static void test_module_alone(void **state) {
    fixture2 f2;
    build_fixture2(&f2);
    fixture *f = &f2.f;
    fxviz_opts o = {.program = &f->prog, .depth = FXVIZ_DEPTH_FULL, .root = "layers.0.attn"};
    Agraph_t *ag = dot_graph(f->g, &o);
    assert_true(has_node(ag, "add"));
    assert_true(has_node(ag, "select"));
    assert_false(has_node(ag, "select_scatter"));
    assert_false(has_node(ag, "b_state"));
    /* mul is outside: drawn as an external value */
    assert_contains(nattr(ag, "mul", "style"), "dashed");
    assert_int_equal(count_edges(ag, "mul", "add"), 1);
    assert_int_equal(count_edges(ag, "add", "output.buffer_mutation.state"), 1);
    assert_false(has_node(ag, "output.buffer_mutation.other"));
    assert_null(agsubg(ag, (char *)"cluster_layers.0.attn", 0)); /* the root is the picture */
    agclose(ag);

    /* depth counts from the root: layers.0 at depth 0 shows layers.0.attn as a box */
    o.root = "layers.0";
    o.depth = 0;
    ag = dot_graph(f->g, &o);
    assert_true(has_node(ag, "mul"));
    assert_string_equal(nattr(ag, "module.layers.0.attn", "label"),
                        "layers.0.attn: Attention\\n2 ops, 1 mutation");
    agclose(ag);

    fx_err err;
    fx_strbuf sb = FX_STRBUF_INIT;
    o.root = "layers.9";
    assert_int_equal(fxviz_dot_source(f->g, &o, &sb, &err), FX_EARG);
    assert_contains(err.msg, "layers.9");
    fx_strbuf_free(&sb);
    free_fixture(f);
}

/* A value read in three or more top-level modules gets a copy inside each reader's cluster. */
static void test_shared_copies(void **state) {
    fx_err err;
    fx_graph *g = fx_graph_new();
    fx_node *x = fx_graph_placeholder(g, "x", &err);
    fx_ivalue a[2] = {fx_iv_node(x)};
    fx_node *t = call(g, FX_OP_NEG, 1, a);
    fx_node *prev = x;
    for (int i = 0; i < 3; i++) {
        char path[16];
        snprintf(path, sizeof path, "layers.%d", i);
        fx_module_entry m[] = {{path, (char *)"Block"}};
        a[0] = fx_iv_node(prev);
        a[1] = fx_iv_node(t);
        prev = call(g, FX_OP_MUL_TENSOR, 2, a);
        set_modules(prev, 1, m);
    }
    output_of(g, prev);
    fxviz_opts o = {.depth = FXVIZ_DEPTH_FULL};
    Agraph_t *ag = dot_graph(g, &o);
    assert_int_equal(count_edges(ag, "neg", "mul"), 0);
    assert_int_equal(count_edges(ag, "neg@cluster_layers.0", "mul"), 1);
    assert_int_equal(count_edges(ag, "neg@cluster_layers.2", "mul_2"), 1);
    assert_contains(nattr(ag, "neg@cluster_layers.1", "label"), "(shared)");
    assert_true(in_cluster(agsubg(ag, (char *)"cluster_layers.1", 0), ag, "neg@cluster_layers.1"));
    agclose(ag);
    fx_graph_free(g);
}

/* ---- an exported program, end to end --------------------------------------------------------- */
/* Traces  b.mul_(x); b[0].add_(2); return b + x  on a buffer, exports it, walks the provenance
 * of the buffer and draws it. What to expect is read from the program's own signature and walk,
 * so the test does not depend on how core names nodes. */
static void check(int rc, const fx_err *err, const char *what) {
    if (rc != FX_OK) fail_msg("core %s failed: %s", what, err->msg);
}

static void test_exported_program(void **state) {
    fx_err err;
    fx_err_clear(&err);
    int64_t n = 3;
    fx_tensor *y;
    check(fx_tensor_zeros(1, &n, FX_DTYPE_F32, FX_DEVICE_CPU, &y, &err), &err, "zeros");
    fx_trace_opts to = {0};
    fx_tracer *tr = fx_tracer_new(&to, &err);
    assert_non_null(tr);
    fx_tensor *b, *x;
    check(fx_tracer_input(tr, FX_INPUT_BUFFER, "b_state", "state", true, y, &b, &err), &err,
          "input b");
    check(fx_tracer_input(tr, FX_INPUT_USER_INPUT, "x", NULL, false, y, &x, &err), &err, "input x");
    fx_ivalue bv = fx_iv_tensor_steal(b), xv = fx_iv_tensor_steal(x);
    fx_ivalue two = fx_iv_int(2), zero = fx_iv_int(0), r1, sel, r2, r3;
    fx_ctx *ctx = fx_tracer_ctx(tr);
    check(fx_call(ctx, FX_OP_MUL__TENSOR, &r1, &err, 2, &bv, &xv), &err, "mul_");
    check(fx_call(ctx, FX_OP_SELECT_INT, &sel, &err, 3, &bv, &zero, &zero), &err, "select");
    check(fx_call(ctx, FX_OP_ADD__TENSOR, &r2, &err, 2, &sel, &two), &err, "add_");
    check(fx_call(ctx, FX_OP_ADD_TENSOR, &r3, &err, 2, &bv, &xv), &err, "add");
    check(fx_tracer_finish(tr, &r3, 1, &err), &err, "finish");
    fx_graph *raw;
    fx_input_info *infos;
    int ninfos;
    check(fx_tracer_take(tr, &raw, &infos, &ninfos, &err), &err, "take");
    fx_named_tensor st = {(char *)"state", y};
    fx_program *ep;
    fx_export_opts eo = {0};
    check(fx_export_build(raw, infos, ninfos, &st, 1, &eo, &ep, &err), &err, "export");
    fx_provenance *pv;
    check(fx_provenance_walk(ep, "state", &pv, &err), &err, "provenance");
    assert_true(pv->nsteps >= 3); /* v0 placeholder, v1 mul, v2 the select_scatter */

    fxviz_opts o = {.program = ep, .highlight = pv, .depth = FXVIZ_DEPTH_FULL};
    Agraph_t *ag = dot_graph(ep->graph, &o);
    for (int i = 0; i < ep->sig.ninputs; i++) {
        const fx_input_spec *in = &ep->sig.inputs[i];
        const char *fill = in->kind == FX_INPUT_BUFFER ? FILL_BUFFER : FILL_USER_INPUT;
        assert_string_equal(nattr(ag, in->arg, "fillcolor"), fill);
        assert_contains(nattr(ag, in->arg, "label"), fx_input_kind_name(in->kind));
    }
    int nmut = 0;
    for (int i = 0; i < ep->sig.noutputs; i++) {
        const fx_output_spec *out = &ep->sig.outputs[i];
        int mut = out->kind == FX_OUTPUT_BUFFER_MUTATION;
        char onode[128];
        snprintf(onode, sizeof onode, "output.%s%s%s", mut ? "buffer_mutation" : "user_output",
                 mut ? "." : "", mut ? out->target : "");
        assert_string_equal(eattr(ag, out->arg, onode, "style"), mut ? "dashed" : "solid");
        if (mut) {
            assert_contains(nattr(ag, onode, "label"), out->target);
            assert_string_equal(eattr(ag, out->arg, onode, "color"), PEN_HIGHLIGHT);
            nmut++;
        }
    }
    assert_int_equal(nmut, 1);
    for (int i = 0; i < pv->nsteps; i++) {
        const char *name = pv->steps[i].node->name;
        assert_string_equal(nattr(ag, name, "color"), PEN_HIGHLIGHT);
        if (i > 0) {
            char line[64];
            snprintf(line, sizeof line, "v%d of state", pv->steps[i].version);
            assert_contains(nattr(ag, name, "label"), line);
        }
    }
    /* the last version was written through select(0, 0): the label says so, and the node is
       drawn as a scatter op */
    const fx_node *last = pv->steps[pv->nsteps - 1].node;
    assert_contains(nattr(ag, last->name, "label"), "through select");
    assert_string_equal(nattr(ag, last->name, "fillcolor"), FILL_SCATTER);
    agclose(ag);

    fx_provenance_free(pv);
    fx_program_free(ep);
    fx_tracer_free(tr);
    fx_ivalue_clear(&r1);
    fx_ivalue_clear(&r2);
    fx_ivalue_clear(&r3);
    fx_ivalue_clear(&sel);
    fx_ivalue_clear(&bv);
    fx_ivalue_clear(&xv);
    fx_tensor_release(y);
}

/* ---- tests: files ---------------------------------------------------------------------------- */
static char tmpdir[64];

static char *slurp(const char *path, size_t *len) {
    FILE *fp = fopen(path, "rb");
    if (!fp) fail_msg("cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
    buf[n] = '\0';
    fclose(fp);
    if (len) *len = (size_t)n;
    return buf;
}

static void render_ok(const fx_graph *g, const char *file, const fxviz_opts *o, char *path,
                      size_t cap) {
    fx_err err;
    snprintf(path, cap, "%s/%s", tmpdir, file);
    int rc = fxviz_render(g, path, o, &err);
    if (rc != FX_OK) fail_msg("render %s: %s %s", file, fx_status_name(rc), err.msg);
}

static void test_render_files(void **state) {
    fixture f;
    build_fixture(&f);
    fxviz_opts o = {.program = &f.prog,
                    .highlight = &f.pv,
                    .depth = FXVIZ_DEPTH_FULL,
                    .title = "fxdb \\N \"test\""};
    char path[256];

    /* .dot: laid out (positions present), same kinds and clusters as the source */
    render_ok(f.g, "g.dot", &o, path, sizeof path);
    char *text = slurp(path, NULL);
    assert_contains(text, "subgraph \"cluster_layers.0\"");
    Agraph_t *ag = parse(text);
    free(text);
    assert_string_equal(nattr(ag, "b_state", "fillcolor"), FILL_BUFFER);
    assert_string_equal(nattr(ag, "add", "color"), PEN_HIGHLIGHT);
    assert_true(nattr(ag, "mul", "pos")[0] != '\0');
    assert_non_null(agsubg(ag, (char *)"cluster_layers.1", 0));
    agclose(ag);

    /* .gv is DOT too */
    render_ok(f.g, "g.GV", &o, path, sizeof path);
    text = slurp(path, NULL);
    assert_true(strncmp(text, "digraph", 7) == 0);
    free(text);

    /* .svg: the title's backslash was kept literal, so "\N" shows as typed */
    render_ok(f.g, "g.svg", &o, path, sizeof path);
    text = slurp(path, NULL);
    assert_contains(text, "<svg");
    assert_contains(text, ">b_state</text>");
    assert_contains(text, "fxdb \\N &quot;test&quot;");
    assert_contains(text, "v2 of state");
    assert_contains(text, PEN_HIGHLIGHT);
    free(text);

    size_t n;
    render_ok(f.g, "g.png", &o, path, sizeof path);
    text = slurp(path, &n);
    assert_true(n > 8);
    assert_memory_equal(text, "\x89PNG\r\n\x1a\n", 8);
    free(text);

    render_ok(f.g, "g.pdf", &o, path, sizeof path);
    text = slurp(path, &n);
    assert_true(n > 5);
    assert_memory_equal(text, "%PDF-", 5);
    free(text);
    free_fixture(&f);
}

/* The .html page: one file holding every view, the node data, the provenance of every mutated
 * state and the scripts, and nothing fetched from the network. Three layers of 50 ops each go
 * over the viewer's whole-program limit (120 ops), so the program view shows the layers as boxes
 * and each layer gets a view of its own. */
static void test_render_html(void **state) {
    fx_err err;
    fx_graph *g = fx_graph_new();
    fx_node *b = fx_graph_placeholder(g, "b_state", &err);
    set_val(b, 1);
    fx_node *prev = b;
    for (int l = 0; l < 3; l++) {
        char path[16];
        snprintf(path, sizeof path, "layers.%d", l);
        fx_module_entry m[] = {{(char *)"", (char *)"Net"}, {path, (char *)"Block"}};
        for (int i = 0; i < 50; i++) {
            fx_ivalue a[1] = {fx_iv_node(prev)};
            prev = call(g, FX_OP_NEG, 1, a);
            set_val(prev, 1);
            set_modules(prev, 2, m);
        }
    }
    fx_mutation mu = {(char *)"state", 1, (char *)"aten.neg_.default", NULL, (char *)"neg_"};
    assert_int_equal(fx_node_set_mutation(prev, &mu, &err), FX_OK);
    state_program sp;
    state_program_of(&sp, g, prev);
    fx_program prog = sp.prog;

    fxviz_opts o = {.program = &prog, .title = "t<1>"};
    char path[256];
    render_ok(g, "page.HTML", &o, path, sizeof path);
    char *text = slurp(path, NULL);
    assert_true(strncmp(text, "<!DOCTYPE html>", 15) == 0);
    assert_contains(text, "<title>t&lt;1&gt;</title>");
    /* the views: the program (layers as boxes), then each layer drawn whole */
    assert_contains(text, "{\"path\":\"\",\"full\":false,\"svg\":\"<svg");
    assert_contains(text, "{\"path\":\"layers.0\",\"full\":true,");
    assert_contains(text, "{\"path\":\"layers.2\",\"full\":true,");
    assert_contains(text, "<title>module.layers.1<\\/title>");
    /* node data: the view each node is drawn in, its module stack and mutation */
    assert_contains(text, "\"neg\":{\"op\":\"call_function\",\"target\":\"aten.neg.default\","
                          "\"type\":\"f32[3]\",\"view\":1,");
    assert_contains(text, "\"modules\":[[\"\",\"Net\"],[\"layers.2\",\"Block\"]]");
    assert_contains(text, "\"mutation\":{\"state\":\"state\",\"version\":1,");
    assert_contains(text, "\"input_kind\":\"BUFFER\",\"state\":\"state\"");
    /* the provenance of the mutated buffer */
    assert_contains(text, "\"states\":{\"state\":{\"kind\":\"BUFFER\"");
    /* scripts inline; no "</" inside the JSON block ends the <script> early */
    assert_contains(text, "svg-pan-zoom 3.6.2");
    assert_contains(text, "window.fxdbViewer");
    const char *json = strstr(text, "id=\"fxdb-data\">");
    assert_non_null(json);
    const char *end = strstr(json, "</script>");
    assert_non_null(end);
    assert_non_null(strstr(end, "svgPanZoom"));
    for (const char *p = json; p < end; p++) assert_false(p[0] == '<' && p[1] == '/');
    /* self-contained: nothing loaded from elsewhere */
    assert_null(strstr(text, "src=\"http"));
    assert_null(strstr(text, "href=\"http"));
    assert_null(strstr(text, "<link"));
    free(text);

    /* an unwritable path */
    assert_int_equal(fxviz_render(g, "/nonexistent-fxviz-dir/p.html", &o, &err), FX_EIO);
    assert_contains(err.msg, "/nonexistent-fxviz-dir/p.html");
    fx_graph_free(g);
}

/* Ctrl-C during a layout: the child laying out is killed, the render says "layout cancelled" and
 * returns at once, and the next render works. A helper process sends SIGINT 0.2 s in; the graph
 * (a 3,000-op chain with skip connections) takes dot over a minute. */
static void test_render_cancel(void **state) {
    fx_err err;
    fx_graph *g = fx_graph_new();
    fx_node *x = fx_graph_placeholder(g, "x", &err);
    fx_node *nodes[3000];
    fx_node *prev = x;
    for (int i = 0; i < 3000; i++) {
        fx_ivalue a[2] = {fx_iv_node(prev), fx_iv_node(i >= 5 ? nodes[i - 5] : x)};
        prev = nodes[i] = call(g, FX_OP_MUL_TENSOR, 2, a);
    }
    output_of(g, prev);
    char path[256];
    snprintf(path, sizeof path, "%s/cancel.svg", tmpdir);
    /* A shell starts background jobs with SIGINT ignored; the layout is cancellable only where
     * Ctrl-C would reach the program, so start from the default disposition. */
    signal(SIGINT, SIG_DFL);
    pid_t parent = getpid();
    pid_t helper = fork();
    assert_true(helper >= 0);
    if (helper == 0) {
        usleep(200000);
        kill(parent, SIGINT);
        _exit(0);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = fxviz_render(g, path, NULL, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    waitpid(helper, NULL, 0);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (rc == FX_OK) fail_msg("the layout finished in %.2f s before the SIGINT came", took);
    assert_int_equal(rc, FX_EINTERNAL);
    assert_contains(err.msg, "layout cancelled");
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0); /* nothing written */
    /* SIGINT's previous disposition is back (default here: the test would die if not) */
    struct sigaction now;
    sigaction(SIGINT, NULL, &now);
    assert_true(now.sa_handler == SIG_DFL);
    fx_graph_free(g);
    fixture f;
    build_fixture(&f);
    render_ok(f.g, "after-cancel.svg", NULL, path, sizeof path);
    free_fixture(&f);
}

/* Runs fn with stderr sent to a file; returns how many bytes it wrote there. */
static long stderr_bytes_of(void (*fn)(void *), void *ud) {
    char path[128];
    snprintf(path, sizeof path, "%s/stderr.txt", tmpdir);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    fn(ud);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long)st.st_size;
}

typedef struct unwritable_case {
    const fx_graph *g;
    int rc;
    fx_err err;
} unwritable_case;

static void render_unwritable(void *ud) {
    unwritable_case *c = ud;
    c->rc = fxviz_render(c->g, "/nonexistent-fxviz-dir/sub/g.svg", NULL, &c->err);
}

static void test_render_errors(void **state) {
    fixture f;
    build_fixture(&f);
    fx_err err;
    char path[256];
    struct stat st;

    /* unknown or missing extension: FX_EARG before anything is written */
    snprintf(path, sizeof path, "%s/g.txt", tmpdir);
    assert_int_equal(fxviz_render(f.g, path, NULL, &err), FX_EARG);
    assert_int_equal(err.code, FX_EARG);
    assert_contains(err.msg, ".txt");
    assert_contains(err.hint, ".svg");
    assert_int_not_equal(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/noext", tmpdir);
    assert_int_equal(fxviz_render(f.g, path, NULL, &err), FX_EARG);
    snprintf(path, sizeof path, "%s.d/g", tmpdir);
    assert_int_equal(fxviz_render(f.g, path, NULL, &err), FX_EARG);
    assert_int_equal(fxviz_render(f.g, "", NULL, &err), FX_EARG);
    assert_int_equal(fxviz_render(NULL, "x.svg", NULL, &err), FX_EARG);

    /* a negative depth */
    fxviz_opts bad = {.depth = FXVIZ_DEPTH_FULL - 1};
    snprintf(path, sizeof path, "%s/bad.svg", tmpdir);
    assert_int_equal(fxviz_render(f.g, path, &bad, &err), FX_EARG);
    assert_contains(err.msg, "depth");
    fx_strbuf sb = FX_STRBUF_INIT;
    assert_int_equal(fxviz_dot_source(f.g, &bad, &sb, &err), FX_EARG);
    fx_strbuf_free(&sb);

    /* unwritable path: FX_EIO with Graphviz's message, and nothing on stderr */
    unwritable_case c = {f.g, 0, {0}};
    long nerr = stderr_bytes_of(render_unwritable, &c);
    assert_int_equal(c.rc, FX_EIO);
    assert_int_equal(c.err.code, FX_EIO);
    assert_contains(c.err.msg, "/nonexistent-fxviz-dir/sub/g.svg");
    assert_contains(c.err.msg, "Graphviz");
    assert_int_equal(nerr, 0);

    /* the capture is released: the next render works and leaves no stale error */
    render_ok(f.g, "after.svg", NULL, path, sizeof path);
    free_fixture(&f);
}

/* Graphviz's messages about the graph (here: none expected) never go to stderr, and every
 * fx allocation of a render is freed. */
static void test_no_leaks_and_oom(void **state) {
    fixture f;
    build_fixture(&f);
    fxviz_opts o = {.program = &f.prog, .highlight = &f.pv, .depth = 1};
    fx_alloc_stats before = fx_alloc_get_stats();
    char path[256];
    render_ok(f.g, "leak.svg", &o, path, sizeof path);
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_err err;
    assert_int_equal(fxviz_dot_source(f.g, &o, &sb, &err), FX_OK);
    fx_strbuf_free(&sb);
    fx_alloc_stats after = fx_alloc_get_stats();
    assert_int_equal(after.live_blocks, before.live_blocks);

    /* allocation failure at each fx allocation of a DOT build: FX_ENOMEM, nothing leaked */
    int failures = 0;
    for (int k = 1; k < 200; k++) {
        fx_strbuf s2 = FX_STRBUF_INIT;
        fx_alloc_fail_at(k, 1);
        int rc = fxviz_dot_source(f.g, &o, &s2, &err);
        fx_alloc_fail_at(0, 0);
        fx_strbuf_free(&s2);
        assert_int_equal(fx_alloc_get_stats().live_blocks, before.live_blocks);
        if (rc == FX_OK) break;
        assert_int_equal(rc, FX_ENOMEM);
        failures++;
    }
    assert_true(failures > 0);
    free_fixture(&f);
}

/* ---- sanitizers
 * ---------------------------------------------------------------------------------- */
/* LeakSanitizer's hook (a name the sanitizer runtime defines weakly; unused without -fsanitize):
 * Graphviz 2.42's dot layout leaks virtual edges of clusters, gvContext keeps its parsed config,
 * and fontconfig/pango/cairo keep process-wide caches. None is fxviz's memory; the same list for
 * valgrind is tests/viz/graphviz.supp. */
const char *__lsan_default_suppressions(void);
const char *__asan_default_options(void);
/* Graphviz is built without frame pointers: the slow unwinder is needed for the suppressions
 * above to see past gmalloc into the library that leaked. */
const char *__asan_default_options(void) { return "fast_unwind_on_malloc=0"; }
const char *__lsan_default_suppressions(void) {
    return "leak:libgvplugin_dot_layout.so\n"
           "leak:gvconfig\n"
           "leak:libfontconfig.so\n"
           "leak:libpango\n"
           "leak:libcairo.so\n"
           "leak:libglib-2.0.so\n"
           "leak:libgobject-2.0.so\n";
}

/* ---- setup ----------------------------------------------------------------------------------- */
static int group_setup(void **state) {
    fx_err err;
    if (fx_registry_init(&err) != FX_OK) return -1;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/fxviz-test-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state) {
    fxviz_shutdown();
    fxviz_shutdown(); /* idempotent */
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds_and_labels),
        cmocka_unit_test(test_clusters_full_nesting),
        cmocka_unit_test(test_highlight),
        cmocka_unit_test(test_collapse_depth),
        cmocka_unit_test(test_collapse_counts_deeper_ops),
        cmocka_unit_test(test_single_op_module),
        cmocka_unit_test(test_bare_graph),
        cmocka_unit_test(test_subgraph_cluster),
        cmocka_unit_test(test_big_graph_limits),
        cmocka_unit_test(test_folded_params),
        cmocka_unit_test(test_one_output_per_state),
        cmocka_unit_test(test_depth0_expand_collapse),
        cmocka_unit_test(test_module_alone),
        cmocka_unit_test(test_shared_copies),
        cmocka_unit_test(test_exported_program),
        cmocka_unit_test(test_render_files),
        cmocka_unit_test(test_render_html),
        cmocka_unit_test(test_render_errors),
        cmocka_unit_test(test_render_cancel),
        cmocka_unit_test(test_no_leaks_and_oom),
    };
    return cmocka_run_group_tests_name("viz", tests, group_setup, group_teardown);
}
