/* core/tensor.h — refcounted storage and strided tensors (views share storage).
 * Layer: core. Semantics follow c10::TensorImpl / StorageImpl: sizes and strides in elements,
 * a storage offset in elements, a version counter shared by all views of a storage and bumped
 * by every in-place write, and a device that is "cpu" (data present) or "meta" (no data). */
#ifndef FX_TENSOR_H
#define FX_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/fx_err.h"
#include "core/symint.h"

#define FX_MAX_DIMS 8

typedef enum fx_device { FX_DEVICE_CPU = 0, FX_DEVICE_META = 1 } fx_device;

typedef struct fx_storage fx_storage;
typedef struct fx_tensor fx_tensor;
struct fx_node;

/* ---- creation (each returns a new reference in *out; FX_OK or an error in err) ---------- */

/* A contiguous tensor of the given sizes (ndim <= FX_MAX_DIMS, every size >= 0). On cpu the
 * data is uninitialised; on meta there is none. FX_ENOMEM when the bytes cannot be allocated
 * (including sizes whose byte count overflows). */
int fx_tensor_empty(int ndim, const int64_t *sizes, fx_dtype dt, fx_device dev, fx_tensor **out,
                    fx_err *err);
/* As fx_tensor_empty, but zero-filled on cpu. */
int fx_tensor_zeros(int ndim, const int64_t *sizes, fx_dtype dt, fx_device dev, fx_tensor **out,
                    fx_err *err);
/* A contiguous cpu tensor holding a copy of `numel` elements at `data` (laid out in dtype dt). */
int fx_tensor_from_data(int ndim, const int64_t *sizes, fx_dtype dt, const void *data,
                        fx_tensor **out, fx_err *err);
/* A 0-dim cpu tensor holding v converted to dt. */
int fx_tensor_scalar(double v, fx_dtype dt, fx_tensor **out, fx_err *err);
/* A view of `base`'s storage with new sizes/strides/offset (elements). Checks that every element
 * it can reach lies inside the storage (FX_EINDEX otherwise); dtype and device are base's.
 * The view records base (or base's own base) as its _base. */
int fx_tensor_as_strided(fx_tensor *base, int ndim, const int64_t *sizes, const int64_t *strides,
                         int64_t offset, fx_tensor **out, fx_err *err);
/* As fx_tensor_as_strided, but the view reads the storage as dtype dt (sizes, strides and
 * offset in elements of dt): view_as_real / view_as_complex. */
int fx_tensor_as_strided_dtype(fx_tensor *base, fx_dtype dt, int ndim, const int64_t *sizes,
                               const int64_t *strides, int64_t offset, fx_tensor **out,
                               fx_err *err);
/* A tensor with the same sizes, strides and dtype as t, on device dev, with fresh storage large
 * enough for t's strides (uninitialised). Used to make meta twins and tracing values. */
int fx_tensor_empty_strided_like(const fx_tensor *t, fx_device dev, fx_tensor **out, fx_err *err);
int fx_tensor_empty_strided(int ndim, const int64_t *sizes, const int64_t *strides, fx_dtype dt,
                            fx_device dev, fx_tensor **out, fx_err *err);

/* ---- lifetime ----------------------------------------------------------------------------- */
fx_tensor *fx_tensor_retain(fx_tensor *t);   /* returns t; NULL-safe */
void fx_tensor_release(fx_tensor *t);        /* frees at zero (and its storage's ref); NULL-safe */
int64_t fx_tensor_refcount(const fx_tensor *t);
/* A number the embedding layer keeps with the tensor to find its own object for it again (lua/:
 * the index of the tensor's Lua userdata in the binding's identity cache; as PyTorch's
 * TensorImpl keeps a slot for its Python object). 0 for a new tensor and for a shallow copy;
 * core never reads it. */
uint32_t fx_tensor_binding_slot(const fx_tensor *t);
void fx_tensor_set_binding_slot(fx_tensor *t, uint32_t slot);

/* ---- metadata ----------------------------------------------------------------------------- */
int fx_tensor_ndim(const fx_tensor *t);
const int64_t *fx_tensor_sizes(const fx_tensor *t);   /* (ndim,), owned by t */
const int64_t *fx_tensor_strides(const fx_tensor *t); /* (ndim,) in elements, owned by t */
int64_t fx_tensor_size(const fx_tensor *t, int dim);   /* dim already wrapped, 0 <= dim < ndim */
int64_t fx_tensor_stride(const fx_tensor *t, int dim);
int64_t fx_tensor_offset(const fx_tensor *t);          /* storage offset in elements */
int64_t fx_tensor_numel(const fx_tensor *t);
fx_dtype fx_tensor_dtype(const fx_tensor *t);
fx_device fx_tensor_device(const fx_tensor *t);
bool fx_tensor_is_meta(const fx_tensor *t);
bool fx_tensor_is_contiguous(const fx_tensor *t);      /* PyTorch's rule: size-1 dims ignored */
bool fx_tensor_requires_grad(const fx_tensor *t);
void fx_tensor_set_requires_grad(fx_tensor *t, bool on);
/* A new tensor struct with t's storage (shared), dtype, geometry, symbolic shape and base: what
 * t looks like now, unaffected by later in-place changes of t's metadata. New reference. */
int fx_tensor_shallow_copy(const fx_tensor *t, fx_tensor **out, fx_err *err);
/* Makes t view storage s (one reference taken; t's old storage loses one, freed with its last).
 * Sizes, strides and offset are the caller's to set (set_ in meta_inplace_view.c). */
void fx_tensor_set_storage(fx_tensor *t, fx_storage *s);
/* Pointer to element 0 (storage data + offset * itemsize); NULL for meta tensors. Borrowed. */
void *fx_tensor_data(const fx_tensor *t);
fx_storage *fx_tensor_storage(const fx_tensor *t);    /* borrowed */

/* The tensor this one is a view of (PyTorch's x._base), or NULL. Borrowed. */
fx_tensor *fx_tensor_base(const fx_tensor *t);
bool fx_tensor_same_storage(const fx_tensor *a, const fx_tensor *b);
/* True when two elements of t share memory (a stride-0 dim of size > 1, or overlapping strides):
 * PyTorch's has_internal_overlap == YES/TOO_HARD used by in-place checks. */
bool fx_tensor_has_internal_overlap(const fx_tensor *t);

/* Storage version counter, shared by all views (PyTorch's _version). */
uint64_t fx_tensor_version(const fx_tensor *t);
void fx_tensor_bump_version(fx_tensor *t);
int64_t fx_storage_nbytes(const fx_storage *s);
/* A unique id of the storage for the process lifetime (for printing aliasing). */
uint64_t fx_storage_id(const fx_storage *s);

/* ---- symbolic shape (dynamic export; see core/symint.h) ------------------------------------- */
/* Whether t carries a symbolic shape (some size, stride or the offset is an expression). */
bool fx_tensor_is_symbolic(const fx_tensor *t);
/* The shape environment of t's expressions, or NULL when t is not symbolic. Borrowed. */
fx_shape_env *fx_tensor_shape_env(const fx_tensor *t);
/* Size / stride (dim already wrapped) and storage offset as size values: the concrete value as
 * hint, with its expression when it has one. */
fx_symint fx_tensor_sym_size(const fx_tensor *t, int dim);
fx_symint fx_tensor_sym_stride(const fx_tensor *t, int dim);
fx_symint fx_tensor_sym_offset(const fx_tensor *t);
/* Makes sizes[0..ndim) / strides / offset t's symbolic shape (strides NULL: contiguous strides
 * of sizes; a NULL offset expression: plain). The hints must equal t's concrete values
 * (FX_EINTERNAL otherwise); the error expression anywhere is FX_ENOMEM. When nothing is
 * symbolic t is left plain. Replaces any earlier symbolic shape. */
int fx_tensor_set_sym(fx_tensor *t, const fx_symint *sizes, const fx_symint *strides,
                      fx_symint offset, fx_err *err);
/* Makes t plain again (its concrete shape stays). */
void fx_tensor_drop_sym(fx_tensor *t);
/* Copies src's symbolic shape onto t (same ndim and concrete shape; FX_OK and nothing when src
 * is plain). */
int fx_tensor_copy_sym(fx_tensor *t, const fx_tensor *src, fx_err *err);
/* Contiguous strides of symbolic sizes (row-major): strides[ndim-1] = 1, ... */
void fx_sym_contiguous_strides(int ndim, const fx_symint *sizes, fx_symint *strides);
/* Prints t's sizes as "[s0, 4]" (the concrete values when t is plain). */
void fx_tensor_format_sizes(fx_strbuf *sb, const fx_tensor *t);

/* ---- element access (slow; for printing, tests, Lua tolist/item) ---------------------------- */
/* Reads the element at multi-index idx (ndim entries) as double / int64. t must be cpu. */
double fx_tensor_get_f64(const fx_tensor *t, const int64_t *idx);
int64_t fx_tensor_get_i64(const fx_tensor *t, const int64_t *idx);
void fx_tensor_set_f64(fx_tensor *t, const int64_t *idx, double v);
/* Reads the linear element i (row-major over sizes, whatever the strides) as double. */
double fx_tensor_flat_f64(const fx_tensor *t, int64_t i);
/* Element i (row-major) as (real, imaginary) parts; a real dtype's imaginary part is 0. */
void fx_tensor_flat_c(const fx_tensor *t, int64_t i, double *re, double *im);
int64_t fx_tensor_flat_i64(const fx_tensor *t, int64_t i);

/* ---- tracing tag (used by core/trace.c only) ------------------------------------------------ */
/* The node that last produced this tensor in trace `trace_id`, or NULL when the tensor has not
 * been seen by that trace. */
struct fx_node *fx_tensor_trace_node(const fx_tensor *t, uint32_t trace_id);
void fx_tensor_set_trace_node(fx_tensor *t, uint32_t trace_id, struct fx_node *n);

/* Contiguous strides for sizes (row-major), into strides[ndim]. */
void fx_contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides);

/* "[2, 3]" into buf (for messages; cut short when cap is too small). Returns buf. */
const char *fx_shape_str(int ndim, const int64_t *sizes, char *buf, int cap);

#endif
