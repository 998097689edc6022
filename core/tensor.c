/* core/tensor.c — storage and tensor lifetime, views, metadata, slow element access.
 * Layer: core. */
#include "core/tensor.h"

#include <stdio.h>
#include <string.h>

#include "core/fx_alloc.h"
#include "core/shape.h"
#include "core/tensor_impl.h"

static uint64_t g_storage_ids;

void fx_contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides) {
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        /* saturate instead of overflowing: such sizes are rejected by the allocation check */
        if (__builtin_mul_overflow(s, sizes[d] > 1 ? sizes[d] : 1, &s)) s = INT64_MAX;
    }
}

const char *fx_shape_str(int ndim, const int64_t *sizes, char *buf, int cap) {
    int n = snprintf(buf, (size_t)cap, "[");
    for (int d = 0; d < ndim && n < cap; d++)
        n += snprintf(buf + n, (size_t)(cap - n), d ? ", %lld" : "%lld", (long long)sizes[d]);
    if (n < cap) snprintf(buf + n, (size_t)(cap - n), "]");
    return buf;
}

/* Bytes needed to hold every element reachable through sizes/strides from offset 0, or -1 on
 * overflow. Returns 0 for an empty tensor. */
static int64_t span_elems(int ndim, const int64_t *sizes, const int64_t *strides) {
    int64_t hi = 0;
    for (int d = 0; d < ndim; d++) {
        if (sizes[d] == 0) return 0;
        if (strides[d] < 0) return -1;
        int64_t m;
        if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &m)) return -1;
        if (__builtin_add_overflow(hi, m, &hi)) return -1;
    }
    return hi + 1;
}

/* Storages of at most FX_STORAGE_INLINE_MAX bytes keep their data in the same block, right after
 * the struct (fx_storage_inline_data): one allocation and one free fewer for the small tensors
 * of eager code. */
static int storage_new(int64_t nbytes, fx_device dev, fx_storage **out, fx_err *err) {
    bool cpu = dev == FX_DEVICE_CPU && nbytes > 0;
    bool inl = cpu && nbytes <= FX_STORAGE_INLINE_MAX;
    /* fx_malloc + memset: glibc's calloc does not take small blocks from its thread cache */
    fx_storage *s = fx_malloc(sizeof *s + (inl ? (size_t)nbytes : 0));
    if (!s) return fx_err_setf(err, FX_ENOMEM, "out of memory allocating a storage");
    memset(s, 0, sizeof *s);
    s->refcount = 1;
    s->size_bytes = nbytes;
    s->device = dev;
    s->id = ++g_storage_ids;
    if (inl) {
        s->data = fx_storage_inline_data(s);
    } else if (cpu) {
        s->data = fx_malloc((size_t)nbytes);
        if (!s->data) {
            fx_free(s);
            return fx_err_setf(err, FX_ENOMEM,
                               "[enforce fail at alloc_cpu.cpp] DefaultCPUAllocator: can't "
                               "allocate memory: you tried to allocate %lld bytes.",
                               (long long)nbytes);
        }
    }
    *out = s;
    return FX_OK;
}

static void storage_release(fx_storage *s) {
    if (!s || --s->refcount > 0) return;
    if (s->data != fx_storage_inline_data(s)) fx_free(s->data);
    fx_free(s);
}

int fx_tensor_shallow_copy(const fx_tensor *t, fx_tensor **out, fx_err *err) {
    fx_tensor *c = fx_malloc(sizeof *c);
    if (!c) return fx_err_setf(err, FX_ENOMEM, "out of memory copying a tensor");
    *c = *t;
    c->refcount = 1;
    c->sym = NULL;
    c->trace_id = 0;
    c->trace_node = NULL;
    c->binding_slot = 0;
    c->storage->refcount++;
    fx_tensor_retain(c->base);
    int rc = fx_tensor_copy_sym(c, t, err);
    if (rc) {
        fx_tensor_release(c);
        return rc;
    }
    *out = c;
    return FX_OK;
}

void fx_tensor_set_storage(fx_tensor *t, fx_storage *s) {
    if (t->storage == s) return;
    s->refcount++;
    storage_release(t->storage);
    t->storage = s;
}

static int check_sizes(int ndim, const int64_t *sizes, fx_err *err) {
    if (ndim < 0 || ndim > FX_MAX_DIMS)
        return fx_err_setf(err, FX_ESHAPE, "fxdb supports at most %d dimensions, got %d",
                           FX_MAX_DIMS, ndim);
    for (int d = 0; d < ndim; d++)
        if (sizes[d] < 0)
            return fx_err_setf(err, FX_ESHAPE,
                               "Trying to create tensor with negative dimension %lld: [%lld]",
                               (long long)sizes[d], (long long)sizes[d]);
    /* every contiguous stride (the product of the sizes after a dim, zeros counted as one) and
     * every element count must fit in int64, even when a zero size makes the tensor empty:
     * kernels and views multiply them */
    int64_t prod = 1;
    for (int d = 0; d < ndim; d++)
        if (__builtin_mul_overflow(prod, sizes[d] > 1 ? sizes[d] : 1, &prod)) {
            char buf[FX_MAX_DIMS * 22 + 4];
            return fx_err_setf(err, FX_ESHAPE, "Storage size calculation overflowed with sizes=%s",
                               fx_shape_str(ndim, sizes, buf, (int)sizeof buf));
        }
    return FX_OK;
}

int fx_tensor_empty_strided(int ndim, const int64_t *sizes, const int64_t *strides, fx_dtype dt,
                            fx_device dev, fx_tensor **out, fx_err *err) {
    int rc = check_sizes(ndim, sizes, err);
    if (rc) return rc;
    if (dt < 0 || dt >= FX_DTYPE_COUNT) return fx_err_setf(err, FX_ETYPE, "invalid dtype");
    int64_t n = span_elems(ndim, sizes, strides), nbytes;
    if (n < 0 || __builtin_mul_overflow(n, (int64_t)fx_dtype_size(dt), &nbytes))
        return fx_err_setf(err, FX_ENOMEM, "tensor is too large to allocate");
    fx_tensor *t = fx_malloc(sizeof *t);
    if (!t) return fx_err_setf(err, FX_ENOMEM, "out of memory allocating a tensor");
    memset(t, 0, sizeof *t);
    if ((rc = storage_new(nbytes, dev, &t->storage, err))) {
        fx_free(t);
        return rc;
    }
    t->refcount = 1;
    t->dtype = dt;
    t->device = dev;
    t->ndim = ndim;
    if (ndim) {
        memcpy(t->sizes, sizes, sizeof(int64_t) * ndim);
        memcpy(t->strides, strides, sizeof(int64_t) * ndim);
    }
    *out = t;
    return FX_OK;
}

int fx_tensor_empty(int ndim, const int64_t *sizes, fx_dtype dt, fx_device dev, fx_tensor **out,
                    fx_err *err) {
    int rc = check_sizes(ndim, sizes, err);
    if (rc) return rc;
    int64_t strides[FX_MAX_DIMS];
    fx_contiguous_strides(ndim, sizes, strides);
    return fx_tensor_empty_strided(ndim, sizes, strides, dt, dev, out, err);
}

int fx_tensor_zeros(int ndim, const int64_t *sizes, fx_dtype dt, fx_device dev, fx_tensor **out,
                    fx_err *err) {
    int rc = fx_tensor_empty(ndim, sizes, dt, dev, out, err);
    if (rc == FX_OK && (*out)->storage->data)
        memset((*out)->storage->data, 0, (size_t)(*out)->storage->size_bytes);
    return rc;
}

int fx_tensor_from_data(int ndim, const int64_t *sizes, fx_dtype dt, const void *data,
                        fx_tensor **out, fx_err *err) {
    int rc = fx_tensor_empty(ndim, sizes, dt, FX_DEVICE_CPU, out, err);
    if (rc == FX_OK && (*out)->storage->size_bytes)
        memcpy((*out)->storage->data, data, (size_t)(*out)->storage->size_bytes);
    return rc;
}

int fx_tensor_scalar(double v, fx_dtype dt, fx_tensor **out, fx_err *err) {
    int rc = fx_tensor_empty(0, NULL, dt, FX_DEVICE_CPU, out, err);
    if (rc == FX_OK) fx_dtype_store_f64(dt, (*out)->storage->data, 0, v);
    return rc;
}

int fx_tensor_empty_strided_like(const fx_tensor *t, fx_device dev, fx_tensor **out, fx_err *err) {
    int rc = fx_tensor_empty_strided(t->ndim, t->sizes, t->strides, t->dtype, dev, out, err);
    if (rc == FX_OK && t->sym) { /* t's symbolic sizes and strides; a fresh storage: offset 0 */
        fx_symint sz[FX_MAX_DIMS], st[FX_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++) {
            sz[d] = fx_tensor_sym_size(t, d);
            st[d] = fx_tensor_sym_stride(t, d);
        }
        if ((rc = fx_tensor_set_sym(*out, sz, st, FX_SI(0), err))) {
            fx_tensor_release(*out);
            *out = NULL;
        }
    }
    return rc;
}

int fx_tensor_as_strided(fx_tensor *base, int ndim, const int64_t *sizes, const int64_t *strides,
                         int64_t offset, fx_tensor **out, fx_err *err) {
    return fx_tensor_as_strided_dtype(base, base->dtype, ndim, sizes, strides, offset, out, err);
}

int fx_tensor_as_strided_dtype(fx_tensor *base, fx_dtype dt, int ndim, const int64_t *sizes,
                               const int64_t *strides, int64_t offset, fx_tensor **out,
                               fx_err *err) {
    int rc = check_sizes(ndim, sizes, err);
    if (rc) return rc;
    if (dt < 0 || dt >= FX_DTYPE_COUNT) return fx_err_setf(err, FX_ETYPE, "invalid dtype");
    int64_t n = span_elems(ndim, sizes, strides);
    int64_t cap = base->storage->size_bytes / (int64_t)fx_dtype_size(dt);
    int64_t end;
    if (n < 0 || offset < 0 || __builtin_add_overflow(offset, n, &end) || (n > 0 && end > cap))
        return fx_err_setf(err, FX_EINDEX,
                           "setStorage: sizes and strides with storage offset %lld are out of "
                           "bounds for storage of %lld elements",
                           (long long)offset, (long long)cap);
    fx_tensor *t = fx_calloc(1, sizeof *t);
    if (!t) return fx_err_setf(err, FX_ENOMEM, "out of memory allocating a tensor");
    t->refcount = 1;
    t->storage = base->storage;
    base->storage->refcount++;
    t->dtype = dt;
    t->device = base->device;
    t->ndim = ndim;
    if (ndim) {
        memcpy(t->sizes, sizes, sizeof(int64_t) * ndim);
        memcpy(t->strides, strides, sizeof(int64_t) * ndim);
    }
    t->offset = offset;
    t->requires_grad = base->requires_grad;
    t->base = fx_tensor_retain(base->base ? base->base : base);
    *out = t;
    return FX_OK;
}

fx_tensor *fx_tensor_retain(fx_tensor *t) {
    if (t) t->refcount++;
    return t;
}

static void sym_free(fx_symshape *s) {
    if (!s) return;
    fx_shape_env_release(s->env);
    fx_free(s);
}

void fx_tensor_release(fx_tensor *t) {
    if (!t || --t->refcount > 0) return;
    sym_free(t->sym);
    storage_release(t->storage);
    fx_tensor_release(t->base);
    fx_free(t);
}

int64_t fx_tensor_refcount(const fx_tensor *t) { return t->refcount; }
uint32_t fx_tensor_binding_slot(const fx_tensor *t) { return t->binding_slot; }
void fx_tensor_set_binding_slot(fx_tensor *t, uint32_t slot) { t->binding_slot = slot; }
int fx_tensor_ndim(const fx_tensor *t) { return t->ndim; }
const int64_t *fx_tensor_sizes(const fx_tensor *t) { return t->sizes; }
const int64_t *fx_tensor_strides(const fx_tensor *t) { return t->strides; }
int64_t fx_tensor_size(const fx_tensor *t, int dim) { return t->sizes[dim]; }
int64_t fx_tensor_stride(const fx_tensor *t, int dim) { return t->strides[dim]; }
int64_t fx_tensor_offset(const fx_tensor *t) { return t->offset; }
fx_dtype fx_tensor_dtype(const fx_tensor *t) { return t->dtype; }
fx_device fx_tensor_device(const fx_tensor *t) { return t->device; }
bool fx_tensor_is_meta(const fx_tensor *t) { return t->device == FX_DEVICE_META; }
bool fx_tensor_requires_grad(const fx_tensor *t) { return t->requires_grad; }
void fx_tensor_set_requires_grad(fx_tensor *t, bool on) { t->requires_grad = on; }
fx_storage *fx_tensor_storage(const fx_tensor *t) { return t->storage; }
fx_tensor *fx_tensor_base(const fx_tensor *t) { return t->base; }
uint64_t fx_tensor_version(const fx_tensor *t) { return t->storage->version; }
void fx_tensor_bump_version(fx_tensor *t) { t->storage->version++; }
int64_t fx_storage_nbytes(const fx_storage *s) { return s->size_bytes; }
uint64_t fx_storage_id(const fx_storage *s) { return s->id; }

bool fx_tensor_same_storage(const fx_tensor *a, const fx_tensor *b) {
    return a && b && a->storage == b->storage;
}

int64_t fx_tensor_numel(const fx_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->sizes[d];
    return n;
}

bool fx_tensor_is_contiguous(const fx_tensor *t) {
    int64_t expected = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->sizes[d] == 0) return true;
        if (t->sizes[d] == 1) continue;
        if (t->strides[d] != expected) return false;
        expected *= t->sizes[d];
    }
    return true;
}

bool fx_tensor_has_internal_overlap(const fx_tensor *t) {
    /* Same answer as PyTorch's has_internal_overlap: NO for a tensor without elements (it is
     * contiguous, whatever its strides); YES for a stride-0 dim of size > 1; otherwise sort dims
     * by stride and check each stride exceeds the span of the smaller ones. */
    int idx[FX_MAX_DIMS], n = 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] == 0) return false;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] > 1) {
            if (t->strides[d] == 0) return true;
            idx[n++] = d;
        }
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && t->strides[idx[j]] < t->strides[idx[j - 1]]; j--) {
            int tmp = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = tmp;
        }
    int64_t span = 0;
    for (int i = 0; i < n; i++) {
        int d = idx[i];
        if (t->strides[d] <= span) return true;
        span += t->strides[d] * (t->sizes[d] - 1);
    }
    return false;
}

void *fx_tensor_data(const fx_tensor *t) {
    if (!t->storage->data) return NULL;
    return (char *)t->storage->data + t->offset * (int64_t)fx_dtype_size(t->dtype);
}

static int64_t elem_index(const fx_tensor *t, const int64_t *idx) {
    int64_t off = 0;
    for (int d = 0; d < t->ndim; d++) off += idx[d] * t->strides[d];
    return off;
}

double fx_tensor_get_f64(const fx_tensor *t, const int64_t *idx) {
    return fx_dtype_load_f64(t->dtype, fx_tensor_data(t), elem_index(t, idx));
}

int64_t fx_tensor_get_i64(const fx_tensor *t, const int64_t *idx) {
    return fx_dtype_load_i64(t->dtype, fx_tensor_data(t), elem_index(t, idx));
}

void fx_tensor_set_f64(fx_tensor *t, const int64_t *idx, double v) {
    fx_dtype_store_f64(t->dtype, fx_tensor_data(t), elem_index(t, idx), v);
}

static int64_t flat_to_offset(const fx_tensor *t, int64_t i) {
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t s = t->sizes[d];
        off += (i % s) * t->strides[d];
        i /= s;
    }
    return off;
}

double fx_tensor_flat_f64(const fx_tensor *t, int64_t i) {
    return fx_dtype_load_f64(t->dtype, fx_tensor_data(t), flat_to_offset(t, i));
}

void fx_tensor_flat_c(const fx_tensor *t, int64_t i, double *re, double *im) {
    fx_dtype_load_c(t->dtype, fx_tensor_data(t), flat_to_offset(t, i), re, im);
}

int64_t fx_tensor_flat_i64(const fx_tensor *t, int64_t i) {
    return fx_dtype_load_i64(t->dtype, fx_tensor_data(t), flat_to_offset(t, i));
}

struct fx_node *fx_tensor_trace_node(const fx_tensor *t, uint32_t trace_id) {
    return (t->trace_id == trace_id && trace_id) ? t->trace_node : NULL;
}

void fx_tensor_set_trace_node(fx_tensor *t, uint32_t trace_id, struct fx_node *n) {
    t->trace_id = trace_id;
    t->trace_node = n;
}

/* ---- symbolic shape ------------------------------------------------------------------------- */

bool fx_tensor_is_symbolic(const fx_tensor *t) { return t->sym != NULL; }
fx_shape_env *fx_tensor_shape_env(const fx_tensor *t) { return t->sym ? t->sym->env : NULL; }

fx_symint fx_tensor_sym_size(const fx_tensor *t, int dim) {
    fx_symint r = {t->sizes[dim], t->sym ? t->sym->size[dim] : NULL};
    return r;
}
fx_symint fx_tensor_sym_stride(const fx_tensor *t, int dim) {
    fx_symint r = {t->strides[dim], t->sym ? t->sym->stride[dim] : NULL};
    return r;
}
fx_symint fx_tensor_sym_offset(const fx_tensor *t) {
    fx_symint r = {t->offset, t->sym ? t->sym->offset : NULL};
    return r;
}

void fx_sym_contiguous_strides(int ndim, const fx_symint *sizes, fx_symint *strides) {
    fx_symint st = FX_SI(1);
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = st;
        /* PyTorch's contiguous strides treat a size 0 as 1 (max(size, 1)) */
        st = fx_si_mul(st, sizes[d].expr ? sizes[d] : FX_SI(sizes[d].hint ? sizes[d].hint : 1));
    }
}

static int sym_slot(fx_shape_env **env, const fx_sym **slot, fx_symint v, int64_t want,
                    fx_err *err) {
    *slot = NULL;
    if (v.expr && fx_sym_is_error(v.expr))
        return fx_err_setf(err, FX_ENOMEM, "out of memory in a symbolic size expression");
    if (v.hint != want)
        return fx_err_setf(err, FX_EINTERNAL, "symbolic shape hint %lld != size %lld",
                           (long long)v.hint, (long long)want);
    if (!v.expr) return FX_OK;
    if (!*env) *env = fx_sym_env(v.expr);
    *slot = v.expr;
    return FX_OK;
}

int fx_tensor_set_sym(fx_tensor *t, const fx_symint *sizes, const fx_symint *strides,
                      fx_symint offset, fx_err *err) {
    fx_symshape tmp;
    memset(&tmp, 0, sizeof tmp);
    fx_symint cs[FX_MAX_DIMS];
    if (!strides) {
        fx_sym_contiguous_strides(t->ndim, sizes, cs);
        strides = cs;
    }
    int rc = FX_OK;
    for (int d = 0; d < t->ndim && !rc; d++) {
        rc = sym_slot(&tmp.env, &tmp.size[d], sizes[d], t->sizes[d], err);
        if (!rc) rc = sym_slot(&tmp.env, &tmp.stride[d], strides[d], t->strides[d], err);
    }
    if (!rc) rc = sym_slot(&tmp.env, &tmp.offset, offset, t->offset, err);
    if (rc) return rc;
    sym_free(t->sym);
    t->sym = NULL;
    if (!tmp.env) return FX_OK;
    fx_symshape *s = fx_malloc(sizeof *s);
    if (!s) return fx_err_setf(err, FX_ENOMEM, "out of memory allocating a tensor");
    *s = tmp;
    fx_shape_env_retain(s->env);
    t->sym = s;
    return FX_OK;
}

void fx_tensor_drop_sym(fx_tensor *t) {
    sym_free(t->sym);
    t->sym = NULL;
}

int fx_tensor_copy_sym(fx_tensor *t, const fx_tensor *src, fx_err *err) {
    if (!src->sym) {
        sym_free(t->sym);
        t->sym = NULL;
        return FX_OK;
    }
    fx_symint sz[FX_MAX_DIMS], st[FX_MAX_DIMS];
    for (int d = 0; d < src->ndim; d++) {
        sz[d] = fx_tensor_sym_size(src, d);
        st[d] = fx_tensor_sym_stride(src, d);
    }
    return fx_tensor_set_sym(t, sz, st, fx_tensor_sym_offset(src), err);
}

void fx_tensor_format_sizes(fx_strbuf *sb, const fx_tensor *t) {
    fx_strbuf_putc(sb, '[');
    for (int d = 0; d < t->ndim; d++) {
        if (d) fx_strbuf_append(sb, ", ");
        fx_si_format(sb, fx_tensor_sym_size(t, d));
    }
    fx_strbuf_putc(sb, ']');
}
