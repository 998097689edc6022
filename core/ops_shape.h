/* core/ops_shape.h — private helpers shared by the view, index and linear-algebra ops.
 * Layer: core (private). Argument unpacking (meta_shape.c), view geometry for select / slice
 * (meta_shape.c, reused by the *_scatter metas and kernels), advanced-index plans (k_index.c,
 * reused by the index metas) and a strided copy with dtype conversion (k_index.c).
 *
 * A "geometry" is the (ndim, sizes, strides, offset) a view op gives its input; computing it
 * apart from creating the view lets select_scatter / slice_scatter apply the very same view to
 * a fresh copy of self. An index plan is advanced indexing (x[idx0, :, idx2]) resolved into
 * per-dim int64/int32 index tensors broadcast to one shape, plus where that shape sits in the
 * result; it holds one reference to each index tensor. */
#ifndef FX_OPS_SHAPE_H
#define FX_OPS_SHAPE_H

#include <string.h>

#include "core/dispatch.h"
#include "core/tensor_impl.h"

/* ---- argument unpacking (meta_shape.c) -------------------------------------------------- */

/* a[i] as a tensor (borrowed). A wrapped number where the op needs a real tensor gives
 * FX_EARG "view(): argument 'self' (position 1) must be Tensor, not int", as PyTorch's binding. */
int fx_kb_tensor_arg(fx_opctx *ctx, const fx_ivalue *a, int i, fx_tensor **out);
/* a[i] (an int list; dispatch already turned a single int into a one-element list) into
 * v[0..*n). More than FX_MAX_DIMS entries is FX_ESHAPE. */
int fx_kb_ints_arg(fx_opctx *ctx, const fx_ivalue *a, int i, int64_t *v, int *n);
/* Appends a view of `self` with the given geometry to out[0] (new reference). */
int fx_kb_view(fx_opctx *ctx, fx_tensor *self, int ndim, const int64_t *sizes,
               const int64_t *strides, int64_t offset, fx_ivalue *out);
/* Strides for a fresh tensor "like" t (torch.empty_like with preserve_format): t's own strides
 * when t is non-overlapping and dense, else contiguous strides. */
void fx_kb_dense_strides(const fx_tensor *t, int64_t *strides);

/* ---- view geometry (meta_shape.c) ---------------------------------------------------------- */

typedef struct fx_view_geom {
    int ndim;                     /* rank of the view */
    int64_t sizes[FX_MAX_DIMS];   /* (ndim,) */
    int64_t strides[FX_MAX_DIMS]; /* (ndim,) in elements */
    int64_t offset;               /* storage offset in elements */
} fx_view_geom;

/* select.int(t, dim, index): errors as aten::select ("select() cannot be applied to a 0-dim
 * tensor.", "select(): index 5 out of range for tensor of size [3] at dimension 0"). */
int fx_select_geom(const fx_tensor *t, int64_t dim, int64_t index, fx_view_geom *g, fx_err *err);
/* slice.Tensor(t, dim, start, end, step): start / end are FX_IV_INT or FX_IV_NONE, negative
 * values count from the end and both are clamped as Python slicing does; step <= 0 is
 * "slice step must be positive". */
int fx_slice_geom(const fx_tensor *t, int64_t dim, const fx_ivalue *start, const fx_ivalue *end,
                  int64_t step, fx_view_geom *g, fx_err *err);

/* diagonal(t, offset, dim1, dim2): dims wrapped, "diagonal dimensions cannot be identical 0, 0";
 * the diagonal becomes the last dim (empty when offset runs off the matrix). */
int fx_diagonal_geom(const fx_tensor *t, int64_t offset, int64_t dim1, int64_t dim2,
                     fx_view_geom *g, fx_err *err);
/* unfold(dim, size, step) of a tensor of the given geometry: dim wrapped (a 0-dim tensor counts
 * as one of size 1), then TensorShape.cpp's checks in its order: "maximum size for tensor at
 * dimension 0 is 6 but size is 7", "size is -1 but must be >= 0", "step is 0 but must be > 0".
 * The windows dim keeps (n - size) / step + 1 entries at stride * step; the window is the new
 * last dim at the old stride. */
int fx_unfold_geom(int ndim, const int64_t *sizes, const int64_t *strides, int64_t offset,
                   int64_t dim, int64_t size, int64_t step, fx_view_geom *g, fx_err *err);
/* as_strided(self, a[first], a[first + 1], a[first + 2]): sizes, strides, optional absolute
 * storage offset (default self's), with as_strided's checks against self's storage. */
int fx_as_strided_geom(fx_opctx *ctx, const fx_tensor *self, const fx_ivalue *a, int first,
                       fx_view_geom *g);

/* ---- advanced indexing (k_index.c) --------------------------------------------------------- */

typedef struct fx_index_plan {
    int nidx;                    /* indexed dims of self, after masks became index tensors */
    int dim[FX_MAX_DIMS];        /* (nidx,) the self dim each index tensor indexes, ascending */
    fx_tensor *idx[FX_MAX_DIMS]; /* (nidx,) int64 / int32 index tensors, one reference each */
    int64_t idx_strides[FX_MAX_DIMS][FX_MAX_DIMS]; /* (nidx, bnd) idx[k] expanded to bshape */
    int bnd;                                       /* rank of the broadcast index shape */
    int64_t bshape[FX_MAX_DIMS];                   /* (bnd,) */
    int nrest;                                     /* self dims that are not indexed */
    int rest[FX_MAX_DIMS];                         /* (nrest,) those dims, ascending */
    int front;                      /* rest dims placed before the index block in the result:
                                       the first indexed dim when indexed dims are adjacent, else 0 */
    int out_ndim;                   /* rank of self[indices] = nrest + bnd */
    int64_t out_sizes[FX_MAX_DIMS]; /* (out_ndim,) */
    bool data_dependent;            /* a bool mask on a meta tensor: bshape/out_sizes unknown */
} fx_index_plan;

/* Resolves `indices` (a Tensor?[] ivalue) against self's sizes as aten::index does: None
 * entries skip a dim, bool / uint8 masks become their nonzero() coordinates (one int64 tensor
 * per mask dim; on a meta mask the plan is marked data_dependent instead), int64 / int32
 * tensors broadcast together. Errors: "too many indices for tensor of dimension 2 (got 3)",
 * "tensors used as indices must be long, int, byte or bool tensors", "The shape of the mask [3]
 * at index 0 does not match the shape of the indexed tensor [4] at index 0", "shape mismatch:
 * indexing tensors could not be broadcast together with shapes [2], [3]". Free with
 * fx_index_plan_free (also after an error). */
int fx_index_plan_build(const fx_tensor *self, const fx_ivalue *indices, fx_index_plan *p,
                        fx_err *err);
void fx_index_plan_free(fx_index_plan *p);
/* x[True] / x[False] (a 0-dim bool or uint8 mask, on cpu), as PyTorch's Python indexing treats
 * it: a new size-1 dim at that position, indexed by [0] (True) or by an empty index (False), so
 * x[True] is x.unsqueeze(0) and x[False] is empty, and index_put with such a mask writes all
 * of self or nothing. When `indices` holds such masks, *view is a view of self with those dims
 * inserted and *list the indices with each mask replaced by its int64 index tensor (both new
 * references: release / clear them); otherwise *view is NULL and *list FX_IV_UNSET (clearing
 * it is a no-op). A 0-dim mask on a meta tensor is left to fx_index_plan_build, which marks the
 * plan data-dependent. */
int fx_index_bool0(fx_tensor *self, const fx_ivalue *indices, fx_tensor **view, fx_ivalue *list,
                   fx_err *err);

/* ---- the strided walker -------------------------------------------------------------------- */

/* A row-major counter over `nd` dims carrying up to FX_MAX_DIMS element offsets ("streams") at
 * once, one per tensor walked (each in elements of its own tensor; stride 0 broadcasts). */
#define KB_MAX_STREAMS FX_MAX_DIMS

typedef struct kb_walk {
    int nd;                                  /* rank walked */
    int ns;                                  /* streams in use */
    int64_t size[FX_MAX_DIMS];               /* (nd,) */
    int64_t st[KB_MAX_STREAMS][FX_MAX_DIMS]; /* (ns, nd) element strides per stream */
    int64_t pos[FX_MAX_DIMS];                /* (nd,) current multi-index */
    int64_t off[KB_MAX_STREAMS];             /* (ns,) current offset per stream */
} kb_walk;

static inline void walk_init(kb_walk *w, int nd, const int64_t *sizes, int ns) {
    memset(w, 0, sizeof *w);
    w->nd = nd;
    w->ns = ns;
    if (nd > 0) memcpy(w->size, sizes, sizeof(int64_t) * (size_t)nd);
}

/* Moves to the next element in row-major order. */
static inline void walk_next(kb_walk *w) {
    for (int d = w->nd - 1; d >= 0; d--) {
        if (++w->pos[d] < w->size[d]) {
            for (int s = 0; s < w->ns; s++) w->off[s] += w->st[s][d];
            return;
        }
        w->pos[d] = 0;
        for (int s = 0; s < w->ns; s++) w->off[s] -= w->st[s][d] * (w->size[d] - 1);
    }
}

/* Turns w into a walk over its rows (every dim but the innermost) and returns the innermost
 * length, with each stream's innermost stride in inner[]. A 0-dim walk is one row of one
 * element. Loop: for (r = 0; r < rows; r++, walk_next(w)) { run n elements from w->off[] }. */
static inline int64_t walk_rows(kb_walk *w, int64_t *inner) {
    if (w->nd == 0) {
        for (int s = 0; s < w->ns; s++) inner[s] = 0;
        return 1;
    }
    w->nd--;
    for (int s = 0; s < w->ns; s++) inner[s] = w->st[s][w->nd];
    return w->size[w->nd];
}

/* ---- strided copy (k_index.c) -------------------------------------------------------------- */

/* dst[...] = src[...] for two cpu tensors of the same sizes and any strides / offsets,
 * converting the dtype as PyTorch's copy_ does (float -> int truncates, -> bool is != 0).
 * dst and src must not overlap in memory. */
void fx_kb_copy(fx_tensor *dst, const fx_tensor *src);

/* ---- matrix products (k_linalg.c) --------------------------------------------------------- */

/* C[m, n] = alpha * A[m, k] @ B[k, n] + beta * C for strided A (element (r, c) at
 * a + r * as0 + c * as1, in elements) and B (likewise), C row-major with leading dimension ldc;
 * all of dtype dt. float32 / float64 go to OpenBLAS (gemv for a single row or column), half
 * types through float32, integers by a wrap-around loop. beta == 0 never reads C. FX_ENOMEM
 * when packing an operand fails; nothing is allocated otherwise except those packs. */
int fx_kb_gemm(fx_dtype dt, const void *a, int64_t m, int64_t k, int64_t as0, int64_t as1,
               const void *b, int64_t n, int64_t bs0, int64_t bs1, void *c, int64_t ldc,
               double alpha, double beta, fx_err *err);

/* The c10::ScalarType name of a dtype ("Float", "Double", "Half", "BFloat16", "Long", "Int",
 * "Short", "Char", "Byte", "Bool"), as PyTorch's messages print it. */
const char *fx_kb_scalar_name(fx_dtype dt);

#endif
