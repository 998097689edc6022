/* core/graph.h — the FX-style graph IR: ordered nodes, unique names, args, users, meta.
 * Layer: core. Mirrors torch.fx.Graph / Node: `op` is placeholder, get_attr, call_function or
 * output; `target` an ATen op overload (or operator.getitem, a higher-order op, or an attribute
 * path); args are fx_ivalues whose FX_IV_NODE entries reference earlier nodes. Names follow FX's
 * _Namespace.create_name: base name, then _1, _2 ... on repeats, and never a Python keyword or
 * builtin (so aten.sum is named sum_1, as in every FX graph).
 *
 * fx_node is readable outside core (viz/, lua/ read its fields) but only graph.c changes
 * structure: args/users stay consistent only through the fx_graph_* / fx_node_* functions. */
#ifndef FX_GRAPH_H
#define FX_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/ivalue.h"
#include "core/registry.h"
#include "core/strbuf.h"

typedef struct fx_graph fx_graph;
typedef struct fx_node fx_node;

typedef enum fx_node_op {
    FX_NODE_PLACEHOLDER = 0,
    FX_NODE_GET_ATTR,
    FX_NODE_CALL_FUNCTION,
    FX_NODE_OUTPUT,
} fx_node_op;

/* One Lua frame of a node's stack_trace. In a node, the strings (and the frame array) belong to
 * the graph, shared by every node with the same values. */
typedef struct fx_frame {
    const char *file; /* "model.lua" as the chunk name gives it, without '@' */
    int line;         /* 1-based */
    const char *func; /* "forward", "add_", "?" */
    const char *code; /* the source line, trimmed; may be "" */
} fx_frame;

/* One entry of nn_module_stack, outermost first. In a node, the strings (and the array) belong to
 * the graph, shared by every node with the same values. */
typedef struct fx_module_entry {
    const char *path; /* "layers.0.attn"; "" for the root module */
    const char *cls;  /* "Attention" */
} fx_module_entry;

/* The mutation record of a functional node that makes a new version of a base
 * (docs/ARCHITECTURE.md §4). */
typedef struct fx_mutation {
    char *state;        /* the buffer's target ("layers.0.cache_k") or the user input's name */
    int version;        /* 1, 2, ... (0 is the placeholder) */
    char *from_op;      /* the original op, "aten.mul_.Tensor", or "buffer assignment" */
    char *view_path;    /* "select(1, 0) of slice(0, 2, 4)" when written through a view, or NULL */
    char *raw_node;     /* name of the raw-graph node that did it */
} fx_mutation;

struct fx_node {
    fx_graph *graph;          /* owner */
    fx_node *prev, *next;     /* doubly-linked order */
    uint64_t uid;             /* unique within the graph, never reused */
    fx_node_op op;
    const fx_opdef *aten;     /* call_function on an ATen op; else NULL */
    const char *target;       /* the target as FX prints it, without "torch.ops.":
                                 "aten.add.Tensor", "getitem", "higher_order.scan", a placeholder's
                                 name, a get_attr path, "output". Owned by the graph. */
    const char *name;         /* unique in the graph. Owned by the graph (kept after erase). */
    fx_ivalue *args;          /* (nargs,) the values owned; for ATen ops all schema args,
                                 defaults filled (the array, like the node, is in the graph's
                                 arena) */
    int nargs;
    fx_node **users;          /* (nusers,) nodes that use this one, in insertion order (the
                                 array in the graph's arena) */
    int nusers, users_cap;
    /* ---- meta ---- */
    fx_ivalue val;            /* meta["val"]: a tensor (meta, or real when traced with values),
                                 a list of them, a number, or FX_IV_NONE */
    const fx_frame *stack;    /* (nstack,) innermost model frame first; owned by the graph and
                                 shared between nodes with the same stack */
    int nstack;
    const fx_module_entry *modules; /* (nmodules,) nn_module_stack, outermost first; owned by
                                       the graph and shared like stack */
    int nmodules;
    const char **from_node;   /* (nfrom,) names of the raw-graph nodes it came from; the array
                                 and the strings are the graph's */
    int nfrom;
    fx_mutation *mutation;    /* NULL unless this node makes a new version of a base */
    fx_graph *subgraph;       /* get_attr of a higher-order op's body: the graph; owned */
    unsigned flags;           /* FX_NODEF_* */
    int tag;                  /* scratch for passes; no meaning between passes */
};

enum fx_node_flags {
    FX_NODEF_NO_GRAD = 1 << 0, /* recorded with grad mode off (inside torch.no_grad) */
};

/* ---- graph lifetime --------------------------------------------------------------------------- */
/* A new empty graph, or NULL on out-of-memory. Free with fx_graph_free (NULL-safe). */
fx_graph *fx_graph_new(void);
void fx_graph_free(fx_graph *g);

fx_node *fx_graph_first(const fx_graph *g);
fx_node *fx_graph_last(const fx_graph *g);
int fx_graph_count(const fx_graph *g);
/* The node called `name` (with or without a leading '%'), or NULL. */
fx_node *fx_graph_find(const fx_graph *g, const char *name);
/* Bumped by every structural change; iterators compare it (Redis's fingerprint). */
uint64_t fx_graph_version(const fx_graph *g);

/* ---- building --------------------------------------------------------------------------------- */
/* Where new nodes go: before `at`, or at the end when at == NULL (the default). Placeholders are
 * always inserted after the last placeholder. */
void fx_graph_set_insert_point(fx_graph *g, fx_node *at);

/* A placeholder named `name` (made unique). NULL on out-of-memory (err set). */
fx_node *fx_graph_placeholder(fx_graph *g, const char *name, fx_err *err);
/* get_attr of attribute path `target`; the node's name derives from it. */
fx_node *fx_graph_get_attr(fx_graph *g, const char *target, fx_err *err);
/* call_function of an ATen op. args: op->schema.nargs values (deep-copied; FX_IV_UNSET entries
 * take the schema default). name_hint NULL derives the name from the op's base name. */
fx_node *fx_graph_call(fx_graph *g, const fx_opdef *op, const fx_ivalue *args, const char *name_hint,
                       fx_err *err);
/* call_function of a non-ATen target ("getitem", "higher_order.scan"); args deep-copied. */
fx_node *fx_graph_call_target(fx_graph *g, const char *target, const fx_ivalue *args, int nargs,
                              const char *name_hint, fx_err *err);
/* The output node; `result` is a list of node refs (deep-copied). One per graph. */
fx_node *fx_graph_output(fx_graph *g, const fx_ivalue *result, fx_err *err);
fx_node *fx_graph_output_node(const fx_graph *g); /* NULL when none yet */

/* ---- editing ---------------------------------------------------------------------------------- */
/* Replaces argument i of n (deep copy), keeping users lists right. */
int fx_node_set_arg(fx_node *n, int i, const fx_ivalue *v, fx_err *err);
/* Makes every user of `old` use `repl` instead. */
void fx_node_replace_all_uses(fx_node *old, fx_node *repl);
/* Removes n, which must have no users (FX_EARG otherwise), and frees it. */
int fx_graph_erase(fx_graph *g, fx_node *n, fx_err *err);
/* Moves n to just before `at` (NULL: the end). */
void fx_graph_move_before(fx_graph *g, fx_node *n, fx_node *at);

/* ---- node meta -------------------------------------------------------------------------------- */
/* Each setter copies its inputs and replaces what was there (strings and frame / module arrays
 * are interned in the graph, so nodes with equal values share one copy). FX_ENOMEM on failure. */
int fx_node_set_val(fx_node *n, const fx_ivalue *val, fx_err *err);
int fx_node_set_stack(fx_node *n, const fx_frame *frames, int nframes, fx_err *err);
int fx_node_set_modules(fx_node *n, const fx_module_entry *m, int nm, fx_err *err);
int fx_node_add_from(fx_node *n, const char *raw_name, fx_err *err);
int fx_node_set_mutation(fx_node *n, const fx_mutation *m, fx_err *err);
/* Copies stack, modules and from_node of src onto dst (the usual step when a pass replaces a
 * node). */
int fx_node_copy_meta(fx_node *dst, const fx_node *src, fx_err *err);
/* Takes ownership of sub (freed with the node). */
void fx_node_set_subgraph(fx_node *n, fx_graph *sub);

/* The node's tensor value (meta["val"]) when it is one tensor, else NULL. Borrowed. */
fx_tensor *fx_node_tensor(const fx_node *n);
/* Whether n's value has a printed type (a tensor, or a SymInt: "Sym(s0)"). */
bool fx_node_has_type(const fx_node *n);
/* "f16[3]", "f32[2, 4]", "i64[]" for a tensor-valued node, "Sym(s0)" for a SymInt; "" otherwise.
 * Into sb. */
void fx_node_format_type(fx_strbuf *sb, const fx_node *n);
const char *fx_node_op_name(fx_node_op op); /* "placeholder", "call_function", ... */
/* Deep copy of a graph (nodes, args, meta, subgraphs), in time linear in its size (it uses the
 * source nodes' `tag` as scratch). NULL on out-of-memory. */
fx_graph *fx_graph_clone(const fx_graph *g, fx_err *err);

/* ---- printing (graph_fmt.c) ------------------------------------------------------------------- */
/* The FX node listing of Graph.__str__:
 *   graph():
 *       %x : [num_users=1] = placeholder[target=x]
 *       %mul : [num_users=1] = call_function[target=torch.ops.aten.mul.Tensor](args = (%b_state, %x), kwargs = {})
 *       return (mul,)
 * Arguments equal to their schema default are left out, positional ones only at the end, as
 * PyTorch's __torch_dispatch__ normalization does; keyword-only ones go to kwargs. */
void fx_graph_format_listing(fx_strbuf *sb, const fx_graph *g);
/* Python-like code of GraphModule.print_readable, starting at "class GraphModule...", every line
 * prefixed by `indent` spaces. With stack-trace comments ("# File: model.lua:9 in forward, code:
 * ...") and the `x = None` lines that free values after their last use. Subgraph attributes are
 * printed as nested classes first. */
void fx_graph_format_code(fx_strbuf *sb, const fx_graph *g, int indent, const char *class_name);
/* Just the forward body as GraphModule.code prints it ("def forward(self, x):\n ..."). */
void fx_graph_format_forward(fx_strbuf *sb, const fx_graph *g, int indent, bool with_types);
/* Plain DOT text of the graph (graph_dot.c), for debugging without Graphviz. */
void fx_graph_format_dot(fx_strbuf *sb, const fx_graph *g);

#endif
