/* core/kernels/k_iter.c — strided/broadcast iteration, output layouts, overlap checks.
 * Layer: core (private). See k_iter.h for the invariants. */
#include "core/kernels/k_iter.h"

#include <string.h>

#include "core/parallel.h"

/* ==== iteration ============================================================================ */

void fx_iter_init(fx_iter *it, int ndim, const int64_t *sizes) {
    memset(it, 0, sizeof *it);
    it->numel = 1;
    if (ndim == 0) {
        it->ndim = 1;
        it->sizes[0] = 1;
        return;
    }
    it->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        it->sizes[d] = sizes[d];
        it->numel *= sizes[d];
    }
}

int fx_iter_add(fx_iter *it, const fx_tensor *t) {
    int k = it->nops++;
    int64_t es = (int64_t)fx_dtype_size(t->dtype);
    it->data[k] = (char *)fx_tensor_data(t);
    it->elsize[k] = es;
    int lead = it->ndim - t->ndim;
    for (int d = 0; d < it->ndim; d++) {
        int td = d - lead;
        if (td < 0 || (t->sizes[td] == 1 && it->sizes[d] != 1))
            it->strides[k][d] = 0;
        else
            it->strides[k][d] = t->strides[td] * es;
    }
    /* A 0-dim iteration shape (ndim stored as 1, size 1) is covered by the loop above. */
    return k;
}

int fx_iter_add_raw(fx_iter *it, void *data, const int64_t *elem_strides, size_t elsize) {
    int k = it->nops++;
    it->data[k] = data;
    it->elsize[k] = (int64_t)elsize;
    /* size-1 dims (including the one dim of a 0-dim shape) never step: stride 0, unread */
    for (int d = 0; d < it->ndim; d++)
        it->strides[k][d] =
            (elem_strides && it->sizes[d] != 1) ? elem_strides[d] * (int64_t)elsize : 0;
    return k;
}

int fx_iter_add_scalar(fx_iter *it, const void *p, size_t elsize) {
    return fx_iter_add_raw(it, (void *)p, NULL, elsize);
}

void fx_iter_coalesce(fx_iter *it) {
    if (it->ndim <= 1) return;
    /* Walk from the innermost dim outwards, folding each dim into the current merged one when
     * every operand steps over it as a continuation of the inner one. */
    int64_t sizes[FX_MAX_DIMS], strides[FX_ITER_MAX_OPS][FX_MAX_DIMS];
    int n = 0; /* merged dims, stored innermost first */
    for (int d = it->ndim - 1; d >= 0; d--) {
        int64_t s = it->sizes[d];
        if (n > 0) {
            bool ok = true;
            if (s != 1 && sizes[n - 1] != 1)
                for (int k = 0; k < it->nops; k++)
                    if (strides[k][n - 1] * sizes[n - 1] != it->strides[k][d]) ok = false;
            if (ok) {
                if (sizes[n - 1] == 1)
                    for (int k = 0; k < it->nops; k++) strides[k][n - 1] = it->strides[k][d];
                sizes[n - 1] *= s;
                continue;
            }
        }
        sizes[n] = s;
        for (int k = 0; k < it->nops; k++) strides[k][n] = it->strides[k][d];
        n++;
    }
    it->ndim = n;
    for (int i = 0; i < n; i++) {
        it->sizes[i] = sizes[n - 1 - i];
        for (int k = 0; k < it->nops; k++) it->strides[k][i] = strides[k][n - 1 - i];
    }
}

bool fx_iter_is_flat(const fx_iter *it) {
    if (it->ndim != 1) return false;
    for (int k = 0; k < it->nops; k++)
        if (it->strides[k][0] != it->elsize[k] && it->strides[k][0] != 0) return false;
    return true;
}

int64_t fx_iter_nrows(const fx_iter *it) {
    if (it->numel == 0) return 0;
    return it->numel / it->sizes[it->ndim - 1];
}

void fx_iter_run(const fx_iter *it, int64_t ir0, int64_t ir1, fx_iter_loop fn, void *ud) {
    if (ir0 >= ir1 || it->numel == 0) return;
    const int nd = it->ndim, nops = it->nops;
    const int64_t inner = it->sizes[nd - 1];
    int64_t idx[FX_MAX_DIMS] = {0};
    char *ptrs[FX_ITER_MAX_OPS];
    int64_t istr[FX_ITER_MAX_OPS];
    for (int k = 0; k < nops; k++) istr[k] = it->strides[k][nd - 1];
    /* multi-index of row ir0 over the outer dims */
    int64_t r = ir0;
    for (int d = nd - 2; d >= 0; d--) {
        idx[d] = r % it->sizes[d];
        r /= it->sizes[d];
    }
    for (int k = 0; k < nops; k++) {
        ptrs[k] = it->data[k];
        for (int d = 0; d < nd - 1; d++) ptrs[k] += idx[d] * it->strides[k][d];
    }
    for (int64_t row = ir0; row < ir1; row++) {
        /* Ctrl-C: stop (the dispatcher reports it); the first row always runs, so a small
         * kernel finishes and the Lua hook handles the interrupt between statements */
        if (row > ir0 && fx_interrupt_pending()) return fx_interrupt_stopped();
        fn(ud, inner, ptrs, istr);
        /* odometer step over the outer dims */
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < it->sizes[d]) {
                for (int k = 0; k < nops; k++) ptrs[k] += it->strides[k][d];
                break;
            }
            idx[d] = 0;
            for (int k = 0; k < nops; k++) ptrs[k] -= (it->sizes[d] - 1) * it->strides[k][d];
        }
    }
}

void fx_iter_run_all(const fx_iter *it, fx_iter_loop fn, void *ud) {
    fx_iter_run(it, 0, fx_iter_nrows(it), fn, ud);
}

void fx_iter_run_elems(const fx_iter *it, int64_t e0, int64_t e1, fx_iter_loop fn, void *ud) {
    if (e0 >= e1 || it->numel == 0) return;
    const int nd = it->ndim, nops = it->nops;
    const int64_t inner = it->sizes[nd - 1];
    int64_t idx[FX_MAX_DIMS] = {0};
    char *ptrs[FX_ITER_MAX_OPS], *cur[FX_ITER_MAX_OPS];
    int64_t istr[FX_ITER_MAX_OPS];
    for (int k = 0; k < nops; k++) istr[k] = it->strides[k][nd - 1];
    int64_t r = e0 / inner, col = e0 % inner;
    for (int d = nd - 2; d >= 0; d--) {
        idx[d] = r % it->sizes[d];
        r /= it->sizes[d];
    }
    for (int k = 0; k < nops; k++) {
        ptrs[k] = it->data[k];
        for (int d = 0; d < nd - 1; d++) ptrs[k] += idx[d] * it->strides[k][d];
    }
    int64_t left = e1 - e0;
    while (left > 0) {
        int64_t n = inner - col < left ? inner - col : left;
        /* pieces of at most FX_ITER_CANCEL_CHUNK elements, so Ctrl-C stops a long row soon */
        for (int64_t done = 0; done < n;) {
            if ((done > 0 || left < e1 - e0) && fx_interrupt_pending())
                return fx_interrupt_stopped();
            int64_t m = n - done < FX_ITER_CANCEL_CHUNK ? n - done : FX_ITER_CANCEL_CHUNK;
            for (int k = 0; k < nops; k++) cur[k] = ptrs[k] + (col + done) * istr[k];
            fn(ud, m, cur, istr);
            done += m;
        }
        left -= n;
        col = 0;
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < it->sizes[d]) {
                for (int k = 0; k < nops; k++) ptrs[k] += it->strides[k][d];
                break;
            }
            idx[d] = 0;
            for (int k = 0; k < nops; k++) ptrs[k] -= (it->sizes[d] - 1) * it->strides[k][d];
        }
    }
}

int fx_par_threads(int64_t work) { return fx_threads_for(work < FX_PAR_GRAIN ? 0 : work); }

/* One call's arguments, for the chunks of fx_parallel_for. */
typedef struct iter_job {
    const fx_iter *it;
    fx_iter_loop fn;
    void *ud;
    int64_t chunk; /* elements per chunk, a multiple of 64 */
} iter_job;

static void iter_chunk(void *ctx, int64_t i) {
    const iter_job *j = ctx;
    int64_t e0 = i * j->chunk, e1 = e0 + j->chunk < j->it->numel ? e0 + j->chunk : j->it->numel;
    fx_iter_run_elems(j->it, e0, e1, j->fn, j->ud);
}

void fx_iter_run_par(const fx_iter *it, fx_iter_loop fn, void *ud) {
    const int64_t n = it->numel;
    int64_t nt = fx_par_threads(n);
    if (nt <= 1) {
        fx_iter_run_elems(it, 0, n, fn, ud); /* (element pieces: Ctrl-C stops it soon) */
        return;
    }
    /* chunks of FX_PAR_GRAIN elements or more, whole multiples of 64 (each starts on a cache
     * line of a dense operand), claimed by whichever thread runs (core/parallel.h) */
    int64_t chunk = n / 4096 > FX_PAR_GRAIN ? n / 4096 : FX_PAR_GRAIN;
    chunk = (chunk + 63) & ~(int64_t)63;
    iter_job j = {it, fn, ud, chunk};
    fx_parallel_for((int)nt, (n + chunk - 1) / chunk, iter_chunk, &j);
}

void fx_iter_narrow(fx_iter *it, int d, int64_t start, int64_t len) {
    for (int k = 0; k < it->nops; k++) it->data[k] += start * it->strides[k][d];
    it->numel = it->sizes[d] ? it->numel / it->sizes[d] * len : 0;
    it->sizes[d] = len;
}

/* ==== layouts ============================================================================== */

/* TensorIterator's reorder_dimensions + compatible_stride. perm[0] is the fastest dim. */
void fx_layout_strides(int ndim, const int64_t *sizes, int n, const fx_tensor *const *inputs,
                       int64_t *strides) {
    if (ndim == 0) return;
    int perm[FX_MAX_DIMS];
    for (int i = 0; i < ndim; i++) perm[i] = ndim - 1 - i;
        /* stride of input k along output dim d, 0 when broadcast (TensorIterator's stride_bytes;
         * element strides suffice since only comparisons within one input are made) */
#define IN_STRIDE(k, d, out)                                                                       \
    do {                                                                                           \
        const fx_tensor *t_ = inputs[k];                                                           \
        int td_ = (d) - (ndim - t_->ndim);                                                         \
        (out) = (td_ < 0 || (t_->sizes[td_] == 1 && sizes[d] != 1)) ? 0 : t_->strides[td_];        \
    } while (0)
    for (int i = 1; i < ndim; i++) {
        int dim1 = i;
        for (int dim0 = i - 1; dim0 >= 0; dim0--) {
            int a = perm[dim0], b = perm[dim1], cmp = 0;
            for (int k = 0; k < n && cmp == 0; k++) {
                if (!inputs[k] || inputs[k]->ndim == 0) continue;
                int64_t s0, s1;
                IN_STRIDE(k, a, s0);
                IN_STRIDE(k, b, s1);
                if (s0 == 0 || s1 == 0) continue;
                if (s0 < s1)
                    cmp = -1;
                else if (s0 > s1)
                    cmp = 1;
                else if (sizes[a] > sizes[b])
                    cmp = 1;
            }
            if (cmp > 0) {
                int tmp = perm[dim0];
                perm[dim0] = perm[dim1];
                perm[dim1] = tmp;
                dim1 = dim0;
            } else if (cmp < 0) {
                break;
            }
        }
    }
#undef IN_STRIDE
    /* as PyTorch's contiguous strides, a dim of size 0 counts as 1: (2, 0, 3) -> (3, 3, 1) */
    int64_t next = 1;
    for (int i = 0; i < ndim; i++) {
        strides[perm[i]] = next;
        next *= sizes[perm[i]] > 1 ? sizes[perm[i]] : 1;
    }
}

bool fx_tensor_dense_nonoverlap(const fx_tensor *t) {
    if (t->ndim == 1) return t->sizes[0] < 2 || t->strides[0] == 1;
    /* sort dims by stride (size-1 dims ignored) and require contiguous strides in that order */
    int idx[FX_MAX_DIMS], n = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] == 0) return true;
        if (t->sizes[d] != 1) idx[n++] = d;
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && t->strides[idx[j]] < t->strides[idx[j - 1]]; j--) {
            int tmp = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = tmp;
        }
    int64_t expected = 1;
    for (int i = 0; i < n; i++) {
        if (t->strides[idx[i]] != expected) return false;
        expected *= t->sizes[idx[i]];
    }
    return true;
}

void fx_layout_like(const fx_tensor *t, int64_t *strides) {
    if (fx_tensor_dense_nonoverlap(t)) {
        for (int d = 0; d < t->ndim; d++) strides[d] = t->strides[d];
        return;
    }
    fx_layout_strides(t->ndim, t->sizes, 1, &t, strides);
}

/* ==== overlap ============================================================================== */

int fx_check_no_internal_overlap(const fx_tensor *out, fx_err *err) {
    if (fx_tensor_has_internal_overlap(out))
        return fx_err_setf(err, FX_EARG,
                           "unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.");
    return FX_OK;
}

int fx_check_no_partial_overlap(const fx_tensor *out, const fx_tensor *in, fx_err *err) {
    if (!in || out == in || out->storage != in->storage) return FX_OK;
    int64_t na = fx_tensor_numel(out), nb = fx_tensor_numel(in);
    if (na == 0 || nb == 0) return FX_OK;
    if (!fx_tensor_dense_nonoverlap(out) || !fx_tensor_dense_nonoverlap(in)) return FX_OK;
    int64_t ea = (int64_t)fx_dtype_size(out->dtype), eb = (int64_t)fx_dtype_size(in->dtype);
    int64_t a0 = out->offset * ea, a1 = a0 + na * ea;
    int64_t b0 = in->offset * eb, b1 = b0 + nb * eb;
    bool partial = false;
    if (a0 == b0 && a1 == b1) {
        bool same = out->ndim == in->ndim;
        for (int d = 0; same && d < out->ndim; d++) same = out->strides[d] == in->strides[d];
        partial = !same;
    } else if (a0 < b1 && b0 < a1) {
        partial = true;
    }
    if (partial)
        return fx_err_setf(err, FX_EARG,
                           "unsupported operation: some elements of the input tensor and the "
                           "written-to tensor refer to a single memory location. Please clone() "
                           "the tensor before performing the operation.");
    return FX_OK;
}
