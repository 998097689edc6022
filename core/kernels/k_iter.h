/* core/kernels/k_iter.h — N-d strided + broadcast iteration, output layout, overlap checks.
 * Layer: core (private to core/). The small cousin of ATen's TensorIterator: operands are
 * viewed with the iteration shape (stride 0 on broadcast dims), adjacent dims that every
 * operand walks contiguously are merged, and the work is split into rows (all dims but the
 * innermost) so a caller can hand row ranges ir0..ir1 to threads without touching the loops.
 *
 * Invariants of a built fx_iter: 1 <= ndim <= FX_MAX_DIMS (a 0-dim shape iterates as one
 * element); sizes[ndim-1] is the inner loop; strides are in bytes, 0 for broadcast dims;
 * data[k] points at element (0, ..., 0) of operand k. */
#ifndef FX_K_ITER_H
#define FX_K_ITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ivalue.h"
#include "core/tensor_impl.h"

#define FX_ITER_MAX_OPS 4

typedef struct fx_iter {
    int ndim;                                      /* dims after coalescing, >= 1 */
    int nops;                                      /* operands added so far */
    int64_t numel;                                 /* product of sizes */
    int64_t sizes[FX_MAX_DIMS];                    /* (ndim,), innermost last */
    int64_t strides[FX_ITER_MAX_OPS][FX_MAX_DIMS]; /* (nops, ndim) in bytes; 0 = broadcast */
    char *data[FX_ITER_MAX_OPS];                   /* element 0 of each operand; borrowed */
    int64_t elsize[FX_ITER_MAX_OPS];               /* bytes per element of each operand */
} fx_iter;

/* Inner loop: n elements, ptrs[k] at the first element of operand k in this row, strides[k]
 * its inner stride in bytes. `ud` is the caller's closure. Must not allocate. */
typedef void (*fx_iter_loop)(void *ud, int64_t n, char *const *ptrs, const int64_t *strides);

/* Starts an iteration over `sizes` (ndim 0..FX_MAX_DIMS; sizes >= 0). No operands yet. */
void fx_iter_init(fx_iter *it, int ndim, const int64_t *sizes);
/* Adds tensor t (cpu), broadcast to the iteration shape: its dims align to the trailing dims
 * of the shape and each of its sizes must equal the shape's or be 1 (the caller has checked
 * with fx_broadcast_shape). Returns the operand index. Borrowed: t must outlive the run. */
int fx_iter_add(fx_iter *it, const fx_tensor *t);
/* Adds an operand given by raw data and element strides over exactly the iteration shape
 * (strides may be 0, e.g. a reduction's output on its reduced dims). */
int fx_iter_add_raw(fx_iter *it, void *data, const int64_t *elem_strides, size_t elsize);
/* Adds a single value at p read for every element (stride 0 everywhere). */
int fx_iter_add_scalar(fx_iter *it, const void *p, size_t elsize);
/* Drops size-1 dims and merges adjacent dims that every operand walks as one (PyTorch's
 * coalesce_dimensions). Call once, after the last add and before running. */
void fx_iter_coalesce(fx_iter *it);

/* True when, after coalescing, the whole iteration is one inner loop whose operands are each
 * dense (stride == elsize) or a broadcast scalar (stride 0): the contiguous fast path. */
bool fx_iter_is_flat(const fx_iter *it);
/* Rows = numel / sizes[ndim-1] (0 when numel is 0). */
int64_t fx_iter_nrows(const fx_iter *it);
/* Elements fx_iter_run_elems hands fn at most per call, between two looks at the interrupt
 * flag (fx_interrupt_pending, core/fx_err.h): about a millisecond of work. */
#define FX_ITER_CANCEL_CHUNK ((int64_t)1 << 20)
/* Calls fn once per row r in [ir0, ir1), in row-major order; stops early (rows left undone)
 * when an interrupt is pending, which the dispatcher then reports as FX_EINTR. */
void fx_iter_run(const fx_iter *it, int64_t ir0, int64_t ir1, fx_iter_loop fn, void *ud);
/* All rows. */
void fx_iter_run_all(const fx_iter *it, fx_iter_loop fn, void *ud);

/* Calls fn over the elements [e0, e1) of the iteration in row-major order: a partial first
 * row, whole rows, a partial last row (each call stays within one row and covers at most
 * FX_ITER_CANCEL_CHUNK elements); stops early when an interrupt is pending. */
void fx_iter_run_elems(const fx_iter *it, int64_t e0, int64_t e1, fx_iter_loop fn, void *ud);

/* ---- threads ----------------------------------------------------------------------------- */

/* Elements below which a loop stays on one thread (ATen's GRAIN_SIZE). */
#define FX_PAR_GRAIN 32768
/* Threads a parallel loop over `work` elements should use (core/parallel.h's policy): 1 below
 * FX_PAR_GRAIN or inside a parallel region. */
int fx_par_threads(int64_t work);
/* All elements, split into chunks of contiguous elements that up to fx_par_threads() threads
 * claim (fx_parallel_for) when numel >= FX_PAR_GRAIN. Only for loops whose elements are
 * independent (fn may be called on any sub-range, from several threads at once): the result is
 * the one-thread result bit for bit. */
void fx_iter_run_par(const fx_iter *it, fx_iter_loop fn, void *ud);
/* Restricts dim d of a built (coalesced) iteration to [start, start + len). */
void fx_iter_narrow(fx_iter *it, int d, int64_t start, int64_t len);

/* ---- element-by-element walks -------------------------------------------------------------
 * For kernels that address elements one at a time through a multi-index (flip / roll / pad,
 * vector_norm, sort, tril / triu) instead of an fx_iter. Sizes and strides are in elements. */

/* The row-major multi-index idx[0..nd) of flat position f over sizes (a zero size gives 0). */
static inline void fx_index_unravel(int nd, const int64_t *sizes, int64_t f, int64_t *idx) {
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = sizes[d] ? f % sizes[d] : 0;
        f = sizes[d] ? f / sizes[d] : 0;
    }
}

/* The element offset of idx: the sum of idx[d] * strides[d] over d < nd. */
static inline int64_t fx_index_offset(int nd, const int64_t *idx, const int64_t *strides) {
    int64_t o = 0;
    for (int d = 0; d < nd; d++) o += idx[d] * strides[d];
    return o;
}

/* Steps idx to the next row-major index over sizes[0..nd), the last dim fastest, leaving dim
 * `skip` alone (-1: none); back to all zeros after the last index. */
static inline void fx_index_next(int nd, const int64_t *sizes, int64_t *idx, int skip) {
    for (int d = nd - 1; d >= 0; d--) {
        if (d == skip) continue;
        if (++idx[d] < sizes[d]) return;
        idx[d] = 0;
    }
}

/* ---- layout of fresh outputs ----------------------------------------------------------- */

/* Strides (elements) for a fresh output of shape (ndim, sizes) computed from `n` inputs, as
 * TensorIterator does (reorder_dimensions + compatible strides): dims are ordered by the
 * inputs' strides (ignoring broadcast dims), so an elementwise op on transposed inputs gives a
 * transposed output and on contiguous inputs a contiguous one. Inputs with fewer dims align
 * right; NULL entries (wrapped numbers) are skipped. */
void fx_layout_strides(int ndim, const int64_t *sizes, int n, const fx_tensor *const *inputs,
                       int64_t *strides);
/* empty_like(t) with memory_format=preserve_format: t's strides when t is non-overlapping and
 * dense, else dense strides in t's stride order (infer_dense_strides). */
void fx_layout_like(const fx_tensor *t, int64_t *strides);
/* is_non_overlapping_and_dense: the strides are a permutation of some contiguous strides. */
bool fx_tensor_dense_nonoverlap(const fx_tensor *t);

/* ---- memory overlap (aten/src/ATen/MemoryOverlap.cpp) ---------------------------------- */

/* FX_EARG with PyTorch's message when `out` has internal overlap (an expanded dim):
 * "unsupported operation: more than one element of the written-to tensor refers to a single
 * memory location. Please clone() the tensor before performing the operation." */
int fx_check_no_internal_overlap(const fx_tensor *out, fx_err *err);
/* FX_EARG when `in` and `out` partially overlap (both dense, same storage, overlapping byte
 * ranges but not the same elements): "unsupported operation: some elements of the input
 * tensor and the written-to tensor refer to a single memory location. Please clone() the
 * tensor before performing the operation." Full overlap (same layout) is fine. */
int fx_check_no_partial_overlap(const fx_tensor *out, const fx_tensor *in, fx_err *err);

/* ---- copying (core/kernels/k_copy.c) ---------------------------------------------------- */

/* Copies src into dst elementwise, broadcasting src to dst's shape and converting its dtype
 * (PyTorch's cast rules: float -> int truncates, -> bool is != 0, double -> half goes through
 * float). dst may be any strided view without internal overlap; both cpu. Never allocates.
 * Shapes are the caller's business (fx_broadcast_shape checked). */
void fx_k_copy_tensor(fx_tensor *dst, const fx_tensor *src);
/* Copies src's elements in row-major order into the contiguous dst of the same numel (the
 * kernel of _unsafe_view and of reshape's copy), converting dtype. */
void fx_k_copy_flat(fx_tensor *dst, const fx_tensor *src);
/* A new contiguous cpu tensor holding src converted to dtype dt (new reference in *out). */
int fx_k_to_dtype(const fx_tensor *src, fx_dtype dt, fx_tensor **out, fx_err *err);

/* Writes v (INT / FLOAT / BOOL ivalue) converted to dtype dt at dst (dtype's storage bytes).
 * Unchecked: callers check overflow first where PyTorch does (fx_scalar_check). */
void fx_k_scalar_store(fx_dtype dt, const fx_ivalue *v, void *dst);
void fx_k_store_f64(fx_dtype dt, void *dst, double v);
void fx_k_store_i64(fx_dtype dt, void *dst, int64_t v);
/* Sets every element of t (any strides, cpu) to v converted to t's dtype. */
void fx_k_fill_value(fx_tensor *t, const fx_ivalue *v);

#endif
