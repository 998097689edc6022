/* core/graph_impl.h — the graph struct, private to core/.
 * Layer: core (private).
 *
 * Invariants: nodes form a doubly-linked list head..tail; placeholders come first; each node's
 * `users` lists every node whose args reference it, once per referencing node; names are unique
 * and marked in the pool's index (fx_str_slot.is_name); `version` changes on
 * every structural edit. */
#ifndef FX_GRAPH_IMPL_H
#define FX_GRAPH_IMPL_H

#include "core/graph.h"

/* An open-addressing hash table of byte strings (linear probing, at most half full, cap a power
 * of two): the pool's index, the one table a graph keeps. A slot holds a string of the pool with
 * its hash and length, and what the namer (FX's _Namespace) knows of it: whether it is a node's
 * name (a name once used stays reserved), and, as a name base, FX's _base_count (the highest
 * suffix handed out for it). */
typedef struct fx_str_slot {
    uint64_t hash;
    const char *s; /* NULL = empty */
    uint32_t len;
    bool is_name;  /* some node of the graph has (or had) this name */
    int64_t count; /* _base_count of this base: 0 until a name is made from it */
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
    fx_node *last_ph;           /* the last of the placeholders the list starts with, where the
                                   next one goes; NULL: not known (found by a walk) */
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
