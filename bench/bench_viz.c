/* bench/bench_viz.c — how long fxviz takes on a transformer-sized graph, by collapse depth.
 * Layer: bench (viz + core). Not a test: prints a table. The synthetic graph has ~5,000 nodes in
 * 32 layer modules (`layers.i`), each holding attention and MLP submodules, two of whose ops sit
 * one level deeper (`layers.i.attn.q_proj` ...), so depth 0 draws 32 layer boxes, depth 1 collapses
 * attn/mlp into boxes inside 32 layer clusters, depth 2 keeps them as clusters, and full draws
 * everything.
 *
 *   bench_viz [LAYERS [OPS_PER_SUBMODULE]]     defaults: 32 layers, 76 ops per submodule */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <graphviz/cgraph.h>

#include "viz/fxviz.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const fx_err *err) {
    fprintf(stderr, "bench_viz: %s: %s\n", what, err->msg);
    exit(1);
}

/* ---- the synthetic model graph ------------------------------------------------------------------
 */
typedef struct synth {
    fx_graph *g;
    fx_ivalue val; /* one f32[1, 64, 512] meta tensor shared by every node's meta["val"] */
    fx_err err;
} synth;

static fx_node *op1(synth *s, fx_op_id id, fx_node *a, fx_node *b) {
    const fx_opdef *op = fx_op_get(id);
    fx_ivalue args[8] = {0};
    args[0] = fx_iv_node(a);
    if (b) args[1] = fx_iv_node(b);
    fx_node *n = fx_graph_call(s->g, op, args, NULL, &s->err);
    if (!n || fx_node_set_val(n, &s->val, &s->err)) die("building the graph", &s->err);
    return n;
}

static void in_module(synth *s, fx_node *n, const fx_module_entry *m, int nm) {
    if (fx_node_set_modules(n, m, nm, &s->err)) die("modules", &s->err);
}

/* One submodule (attn or mlp) of layer i: `ops` ops in a chain with a few skip connections, the
 * first two inside a child module (q_proj / fc1) one level deeper. Returns the last node. */
static fx_node *submodule(synth *s, fx_node *in, int i, const char *sub, const char *cls,
                          const char *child, const char *child_cls, int ops) {
    char lpath[64], spath[64], cpath[96];
    snprintf(lpath, sizeof lpath, "layers.%d", i);
    snprintf(spath, sizeof spath, "layers.%d.%s", i, sub);
    snprintf(cpath, sizeof cpath, "layers.%d.%s.%s", i, sub, child);
    fx_module_entry m[4] = {{(char *)"", (char *)"Transformer"},
                            {lpath, (char *)"Block"},
                            {spath, (char *)cls},
                            {cpath, (char *)child_cls}};
    fx_node *prev = in, *skip = in;
    for (int k = 0; k < ops; k++) {
        fx_node *n = (k % 5 == 4) ? op1(s, FX_OP_ADD_TENSOR, prev, skip)
                                  : op1(s, k % 2 ? FX_OP_NEG : FX_OP_MUL_TENSOR, prev, prev);
        in_module(s, n, m, k < 2 ? 4 : 3);
        if (k % 5 == 4) skip = n;
        prev = n;
    }
    return prev;
}

static void build(synth *s, int layers, int ops) {
    memset(s, 0, sizeof *s);
    int64_t sizes[3] = {1, 64, 512};
    fx_tensor *t;
    if (fx_tensor_empty(3, sizes, FX_DTYPE_F32, FX_DEVICE_META, &t, &s->err))
        die("tensor", &s->err);
    s->val = fx_iv_tensor_steal(t);
    s->g = fx_graph_new();
    fx_node *x = fx_graph_placeholder(s->g, "x", &s->err);
    fx_node *cache = fx_graph_placeholder(s->g, "b_cache", &s->err);
    if (!x || !cache) die("placeholders", &s->err);
    fx_node *h = x, *state = cache;
    for (int i = 0; i < layers; i++) {
        char lpath[64];
        snprintf(lpath, sizeof lpath, "layers.%d", i);
        fx_module_entry m[2] = {{(char *)"", (char *)"Transformer"}, {lpath, (char *)"Block"}};
        fx_node *n1 = op1(s, FX_OP_NEG, h, NULL); /* the layer's own ops: norms and residuals */
        in_module(s, n1, m, 2);
        fx_node *a = submodule(s, n1, i, "attn", "Attention", "q_proj", "Linear", ops);
        fx_node *r1 = op1(s, FX_OP_ADD_TENSOR, h, a);
        in_module(s, r1, m, 2);
        /* the KV cache update of this layer: a new version of the buffer */
        state = op1(s, FX_OP_ADD_TENSOR, state, r1);
        in_module(s, state, m, 2);
        fx_mutation mu = {(char *)"cache", i + 1, (char *)"aten.add_.Tensor", NULL, (char *)"add_"};
        if (fx_node_set_mutation(state, &mu, &s->err)) die("mutation", &s->err);
        fx_node *n2 = op1(s, FX_OP_NEG, r1, NULL);
        in_module(s, n2, m, 2);
        fx_node *f = submodule(s, n2, i, "mlp", "MLP", "fc1", "Linear", ops);
        h = op1(s, FX_OP_ADD_TENSOR, r1, f);
        in_module(s, h, m, 2);
    }
    fx_ivalue res;
    if (fx_iv_list(2, &res, &s->err)) die("output", &s->err);
    res.u.list.items[0] = fx_iv_node(state);
    res.u.list.items[1] = fx_iv_node(h);
    if (!fx_graph_output(s->g, &res, &s->err)) die("output", &s->err);
    fx_ivalue_clear(&res);
}

/* ---- measuring ----------------------------------------------------------------------------------
 */
int main(int argc, char **argv) {
    int layers = argc > 1 ? atoi(argv[1]) : 32;
    int ops = argc > 2 ? atoi(argv[2]) : 76;
    if (layers < 1 || ops < 1) {
        fprintf(stderr, "usage: bench_viz [LAYERS [OPS_PER_SUBMODULE]]\n");
        return 2;
    }
    fx_err err;
    if (fx_registry_init(&err)) die("registry", &err);
    synth s;
    double t0 = now_s();
    build(&s, layers, ops);
    double t_graph = now_s() - t0;

    fx_input_spec in[2] = {{FX_INPUT_BUFFER, (char *)"b_cache", (char *)"cache", true},
                           {FX_INPUT_USER_INPUT, (char *)"x", NULL, false}};
    fx_node *out = fx_graph_output_node(s.g);
    fx_output_spec outs[2] = {
        {FX_OUTPUT_BUFFER_MUTATION, out->args[0].u.list.items[0].u.node->name, (char *)"cache"},
        {FX_OUTPUT_USER_OUTPUT, out->args[0].u.list.items[1].u.node->name, NULL}};
    fx_program prog = {0};
    prog.graph = s.g;
    prog.sig = (fx_signature){in, 2, outs, 2};

    char dir[] = "/tmp/fxviz-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    printf("fxviz: %d nodes (%d layer clusters), graph built in %.3f s\n\n", fx_graph_count(s.g),
           layers, t_graph);
    printf("%-6s %7s %7s %11s %9s %10s %11s\n", "depth", "nodes", "edges", "dot bytes", "build s",
           "render s", "svg bytes");
    const int depths[] = {0, 1, 2, FXVIZ_DEPTH_FULL};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        fxviz_opts o = {.program = &prog, .depth = depths[i], .title = "bench"};
        fx_strbuf sb = FX_STRBUF_INIT;
        t0 = now_s();
        if (fxviz_dot_source(s.g, &o, &sb, &err)) die("dot source", &err);
        double t_build = now_s() - t0;
        /* what Graphviz will lay out, read back with its own parser */
        Agraph_t *ag = agmemread(fx_strbuf_cstr(&sb));
        int nodes = ag ? agnnodes(ag) : -1, edges = ag ? agnedges(ag) : -1;
        if (ag) agclose(ag);
        char path[96];
        snprintf(path, sizeof path, "%s/d%d.svg", dir, depths[i] + 1);
        t0 = now_s();
        if (fxviz_render(s.g, path, &o, &err)) die("render", &err);
        double t_render = now_s() - t0;
        FILE *fp = fopen(path, "rb");
        long svg = 0;
        if (fp) {
            fseek(fp, 0, SEEK_END);
            svg = ftell(fp);
            fclose(fp);
            remove(path);
        }
        char dname[8];
        snprintf(dname, sizeof dname, depths[i] == FXVIZ_DEPTH_FULL ? "full" : "%d", depths[i]);
        printf("%-6s %7d %7d %11zu %9.3f %10.3f %11ld\n", dname, nodes, edges, sb.len, t_build,
               t_render, svg);
        fflush(stdout);
        fx_strbuf_free(&sb);
    }
    remove(dir);
    printf("\n(nodes/edges: as Graphviz lays them out; build s: fxviz_dot_source; render s: "
           "fxviz_render to .svg, i.e. build + dot layout + SVG output)\n");
    fx_graph_free(s.g);
    fx_ivalue_clear(&s.val);
    fxviz_shutdown();
    return 0;
}
