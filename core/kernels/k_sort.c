/* core/kernels/k_sort.c — kernels of sort (both overloads) and topk (meta_sort.c).
 * Layer: core (private). Each line along dim is sorted as (key, index) pairs with qsort_r and a
 * comparator that is stable (ties keep their input order) and puts NaN above every number, as
 * PyTorch's stable CPU sort does (ascending: NaN last; descending: NaN first). topk keeps the
 * first k of the line sorted by `largest`; with sorted=False the kept elements come out in the
 * same sorted order (PyTorch leaves that order unspecified). Values are copied by element size
 * from their source index, indices written as int64. */
#include <stdlib.h>
#include <string.h>

#include "core/kernels/k_iter.h"
#include "core/meta_common.h"

typedef struct sort_key {
    double f;  /* floating keys */
    int64_t i; /* integer and bool keys */
    int64_t idx;
} sort_key;

typedef struct sort_ctx {
    bool fp, desc;
} sort_ctx;

static int cmp_keys(const void *pa, const void *pb, void *ud) {
    const sort_key *a = pa, *b = pb;
    const sort_ctx *c = ud;
    int r;
    if (c->fp) {
        bool na = a->f != a->f, nb = b->f != b->f;
        r = na || nb ? (int)na - (int)nb : (a->f > b->f) - (a->f < b->f);
    } else {
        r = (a->i > b->i) - (a->i < b->i);
    }
    if (c->desc) r = -r;
    return r ? r : (a->idx > b->idx) - (a->idx < b->idx);
}

/* sort, sort.stable, topk: out[0] values, out[1] indices (fresh). */
int fx_k_sort(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_tensor *vals = out[0].u.t, *idxs = out[1].u.t;
    const fx_tensor *x = a[0].u.t;
    if (fx_tensor_is_meta(vals)) return FX_OK;
    fx_sort_plan p;
    int rc = fx_sort_plan_make(ctx, a, &p);
    if (rc) return rc;
    if (fx_tensor_numel(vals) == 0) return FX_OK;
    const int nd = x->ndim;
    const size_t es = fx_dtype_size(x->dtype);
    const int64_t xs = nd ? x->strides[p.dim] : 0, vs = nd ? vals->strides[p.dim] : 0,
                  is = nd ? idxs->strides[p.dim] : 0;
    sort_key *keys = malloc(sizeof(sort_key) * (size_t)(p.len ? p.len : 1));
    if (!keys) return fx_err_setf(ctx->err, FX_ENOMEM, "out of memory");
    sort_ctx sc = {fx_dtype_is_float(x->dtype), p.descending};
    /* walk every line: a multi-index over the other dims */
    int64_t lines = 1, idx[FX_MAX_DIMS] = {0};
    for (int d = 0; d < nd; d++)
        if (d != p.dim) lines *= x->sizes[d];
    const char *src = fx_tensor_data(x);
    char *vd = fx_tensor_data(vals);
    int64_t *id = fx_tensor_data(idxs);
    for (int64_t l = 0; l < lines; l++) {
        if (l > 0 && fx_interrupt_pending()) { /* Ctrl-C between lines: the dispatcher reports it */
            fx_interrupt_stopped();
            break;
        }
        /* idx[p.dim] stays 0: the offsets of the line's first element */
        const int64_t xo = fx_index_offset(nd, idx, x->strides),
                      vo = fx_index_offset(nd, idx, vals->strides),
                      io = fx_index_offset(nd, idx, idxs->strides);
        for (int64_t k = 0; k < p.len; k++) {
            keys[k].idx = k;
            if (sc.fp)
                keys[k].f = fx_dtype_load_f64(x->dtype, src, xo + k * xs);
            else
                keys[k].i = fx_dtype_load_i64(x->dtype, src, xo + k * xs);
        }
        qsort_r(keys, (size_t)p.len, sizeof(sort_key), cmp_keys, &sc);
        for (int64_t k = 0; k < p.k; k++) {
            memcpy(vd + (vo + k * vs) * (int64_t)es, src + (xo + keys[k].idx * xs) * (int64_t)es,
                   es);
            id[io + k * is] = keys[k].idx;
        }
        fx_index_next(nd, x->sizes, idx, p.dim); /* next line */
    }
    free(keys);
    return FX_OK;
}
