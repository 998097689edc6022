/* core/graph_impl.h — the graph struct, private to core/.
 * Layer: core (private).
 *
 * Invariants: nodes form a doubly-linked list head..tail; placeholders come first; each node's
 * `users` lists every node whose args reference it, once per referencing node; names are unique
 * and registered in `names` (open-addressing set of owned strings); `version` changes on every
 * structural edit. */
#ifndef FX_GRAPH_IMPL_H
#define FX_GRAPH_IMPL_H

#include "core/graph.h"

typedef struct fx_name_count {
    char *base;   /* owned */
    int64_t count;/* highest suffix handed out for base */
} fx_name_count;

struct fx_graph {
    fx_node *head, *tail;
    int count;
    uint64_t next_uid;
    uint64_t version;
    fx_node *insert_at;         /* new nodes go before it; NULL = end */
    char **names;               /* (names_cap,) hash set of used names; NULL slots empty */
    int names_len, names_cap;
    fx_name_count *bases;       /* (nbases,) FX _base_count */
    int nbases, bases_cap;
};

#endif
