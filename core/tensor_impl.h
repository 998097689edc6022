/* core/tensor_impl.h — the tensor and storage structs, private to core/ (kernels read them).
 * Layer: core (private). Outside core use the accessors of core/tensor.h.
 *
 * Invariants: refcount >= 1 while reachable; 0 <= ndim <= FX_MAX_DIMS; every element reachable
 * through sizes/strides/offset lies in [0, storage->size_bytes / itemsize); views of one storage
 * share its version counter; a meta tensor's storage has data == NULL. */
#ifndef FX_TENSOR_IMPL_H
#define FX_TENSOR_IMPL_H

#include "core/tensor.h"

struct fx_storage {
    int64_t refcount;   /* owners: tensors viewing it */
    void *data;         /* NULL for meta storage; owned (fx_free) */
    int64_t size_bytes; /* bytes the storage holds (or would hold, for meta) */
    uint64_t version;   /* bumped by every in-place write through any view */
    uint64_t id;        /* unique per process */
    fx_device device;
};

/* Data of at most this many bytes lives in the storage's own block, right after the struct
 * (core/tensor.c storage_new); code that replaces s->data frees the old pointer only when it is
 * not fx_storage_inline_data(s). */
#define FX_STORAGE_INLINE_MAX 128
_Static_assert(sizeof(fx_storage) % 16 == 0, "inline data must stay 16-byte aligned");
static inline void *fx_storage_inline_data(fx_storage *s) { return s + 1; }

/* Symbolic sizes / strides / offset of a tensor traced with dynamic shapes. Each entry is the
 * expression of the matching concrete value of the tensor (which stays its hint), or NULL when
 * that value is a plain integer. Owned by the tensor; holds one reference to env. */
typedef struct fx_symshape {
    fx_shape_env *env;
    const fx_sym *size[FX_MAX_DIMS];   /* (ndim,) */
    const fx_sym *stride[FX_MAX_DIMS]; /* (ndim,) */
    const fx_sym *offset;
} fx_symshape;

struct fx_tensor {
    int64_t refcount;
    fx_storage *storage;           /* one reference held */
    fx_dtype dtype;
    fx_device device;              /* == storage->device */
    int ndim;                      /* 0..FX_MAX_DIMS */
    int64_t sizes[FX_MAX_DIMS];    /* (ndim,) */
    int64_t strides[FX_MAX_DIMS];  /* (ndim,) in elements; 0 for expanded dims */
    int64_t offset;                /* storage offset in elements */
    bool requires_grad;            /* only to reproduce export's rules */
    fx_tensor *base;               /* x._base: the non-view tensor this views, one ref; or NULL */
    uint32_t trace_id;             /* trace that set trace_node, 0 = none */
    struct fx_node *trace_node;    /* borrowed; valid only while that trace's graph lives */
    fx_symshape *sym;              /* symbolic shape, or NULL when every size is a plain integer */
    uint32_t binding_slot;         /* the embedding layer's handle (fx_tensor_binding_slot), 0 = none */
};

#endif
