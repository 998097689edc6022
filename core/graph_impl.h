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

/* An open-addressing hash table of byte strings (linear probing, at most half full, cap a power
 * of two), the one kind of table a graph keeps: the pool's index, the set of used names, FX's
 * _base_count. A slot holds a string of the graph's pool with its hash and length, and a count
 * that only _base_count uses (the highest suffix handed out for that base). */
typedef struct fx_str_slot {
    uint64_t hash;
    const char *s; /* NULL = empty */
    size_t len;
    int64_t count;
} fx_str_slot;

typedef struct fx_str_table {
    fx_str_slot *slots; /* (cap,) */
    int len, cap;
} fx_str_table;

/* An interning arena: byte strings stored once (NUL-terminated, 8-byte aligned) in chunks freed
 * with the graph; equal contents give the same pointer. Holds node names, name bases, targets and
 * the stack_trace / nn_module_stack / from_node strings and frame arrays that nodes share. */
typedef struct fx_pool {
    void *chunks; /* singly-linked list of arena chunks (first word: the next one) */
    char *cur;    /* free space in the newest chunk */
    size_t left;
    fx_str_table index; /* the strings stored so far */
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
    fx_str_table names;         /* the set of used names */
    fx_str_table bases;         /* FX's _base_count: name base -> highest suffix handed out */
    fx_pool pool;
    fx_import imports[FX_IMPORT_MEMO];
    /* the last stack / module arrays fx_node_set_stack / _modules interned (in pool): consecutive
     * nodes of one model usually share all but the innermost frame, so a new array is compared
     * with these before anything is hashed */
    const fx_frame *last_stack;
    int last_nstack;
    const fx_module_entry *last_modules;
    int last_nmodules;
};

#endif
