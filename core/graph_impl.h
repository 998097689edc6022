/* core/graph_impl.h — the graph struct, private to core/.
 * Layer: core (private).
 *
 * Invariants: nodes form a doubly-linked list head..tail; placeholders come first; each node's
 * `users` lists every node whose args reference it, once per referencing node; names are unique
 * and registered in `names` (open-addressing set of strings kept in `pool`); `version` changes on
 * every structural edit. */
#ifndef FX_GRAPH_IMPL_H
#define FX_GRAPH_IMPL_H

#include "core/graph.h"

/* FX's _base_count entry: a name base and the highest suffix handed out for it. */
typedef struct fx_name_count {
    const char *base; /* in the graph's pool; NULL marks an empty slot */
    uint64_t hash;
    int64_t count;
} fx_name_count;

/* An interning arena: byte strings stored once (NUL-terminated, 8-byte aligned) in chunks freed
 * with the graph; equal contents give the same pointer. Holds node names, name bases, targets and
 * the stack_trace / nn_module_stack / from_node strings and frame arrays that nodes share. */
typedef struct fx_pool_slot {
    uint64_t hash;
    const char *p; /* NULL = empty */
    size_t len;
} fx_pool_slot;

typedef struct fx_pool {
    void *chunks;          /* singly-linked list of arena chunks (first word: the next one) */
    char *cur;             /* free space in the newest chunk */
    size_t left;
    fx_pool_slot *slots;   /* (cap,) open addressing; cap a power of two */
    int len, cap;
} fx_pool;

/* Entry of a graph's memo of frame / module arrays copied in from other graphs. */
#define FX_IMPORT_MEMO 64
typedef struct fx_import {
    uint64_t graph_id; /* the source graph's id (never reused, unlike its address) */
    const void *from;  /* an array in that graph's pool */
    const void *to;    /* its copy in this graph's pool */
} fx_import;

struct fx_graph {
    uint64_t id;                /* unique in the process, never reused */
    fx_node *head, *tail;
    int count;
    uint64_t next_uid;
    uint64_t version;
    fx_node *insert_at;         /* new nodes go before it; NULL = end */
    const char **names;         /* (names_cap,) hash set of used names; NULL slots empty */
    int names_len, names_cap;
    fx_name_count *bases;       /* (bases_cap,) FX _base_count as an open-addressing table */
    int nbases, bases_cap;
    fx_pool pool;
    fx_import imports[FX_IMPORT_MEMO];
};

#endif
