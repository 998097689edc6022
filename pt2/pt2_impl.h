/* pt2/pt2_impl.h — what the pt2/ files share; private to pt2/.
 * Layer: pt2. */
#ifndef FX_PT2_IMPL_H
#define FX_PT2_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zip.h>

#include "core/fx.h"

/* Record names of the archive spec (torch/export/pt2_archive/constants.py), after the root. */
#define PT2_ARCHIVE_FORMAT "archive_format"
#define PT2_ARCHIVE_VERSION "archive_version"
#define PT2_MODELS_DIR "models/"
#define PT2_WEIGHTS_DIR "data/weights/"
#define PT2_CONSTANTS_DIR "data/constants/"
#define PT2_SAMPLE_INPUTS_DIR "data/sample_inputs/"

/* torch/_export/serde/schema.py ScalarType <-> fx_dtype. -1 / FX_DTYPE_UNDEFINED when the other
 * side has no such type. */
int pt2_scalar_type(fx_dtype dt);
fx_dtype pt2_dtype(int scalar_type);

/* Copies the numel = prod(sizes) elements of isz bytes that (sizes, strides), in elements from
 * src, reach into dst in row-major order (a strided read; the caller checked the bounds). */
void pt2_gather(void *dst, const void *src, int nd, const int64_t *sizes, const int64_t *strides,
                size_t isz);

/* Copies the elements t reaches, in row-major order, into a new buffer of numel * itemsize
 * bytes (*out, fx_free; NULL with *len 0 for an empty tensor). t must be on the cpu. */
int pt2_tensor_bytes(const fx_tensor *t, void **out, size_t *len, fx_err *err);

/* Reads a torch.save file (a zip holding <root>/data.pkl and <root>/data/<key> storages) whose
 * pickle is a dict (or OrderedDict) of str -> tensor (or nn.Parameter). `what` names the file in
 * messages. *out (n entries, fx_program's fx_named_tensor: names and one reference each) is owned
 * by the caller. FX_EIO naming `what` and the opcode / global for anything else. */
int pt2_read_torch_save(const void *data, size_t len, const char *what, fx_named_tensor **out,
                        int *n, fx_err *err);
/* The pickle reader itself over data.pkl's bytes; storage(key, dtype, numel) gives the storage
 * for a persistent id. */
typedef int (*pt2_storage_fn)(void *ud, const char *key, fx_dtype dt, int64_t numel,
                              fx_tensor **out, fx_err *err);
int pt2_unpickle_state(const unsigned char *p, size_t len, const char *what, pt2_storage_fn storage,
                       void *ud, fx_named_tensor **out, int *n, fx_err *err);

void pt2_free_named(fx_named_tensor *v, int n);
/* Appends (a copy of name, t) to the *n entries of *v, taking t's reference; on FX_ENOMEM t is
 * released and *v / *n keep their entries. */
int pt2_add_named(fx_named_tensor **v, int *n, const char *name, fx_tensor *t, fx_err *err);

/* The whole zip entry `full` into a new NUL-terminated buffer (*out, fx_free; *len without the
 * NUL). An entry claiming more than archive_len bytes compressed, or more than 1100x that
 * uncompressed (past deflate's ratio), is refused before anything is allocated. FX_EIO naming
 * `what` and the entry when it is missing, oversized, truncated or corrupt. */
int pt2_zip_entry(zip_t *za, const char *full, size_t archive_len, const char *what, char **out,
                  size_t *len, fx_err *err);

/* ---- symbolic sizes (pt2_sym.c) ---------------------------------------------------------------- */

struct cJSON;
struct pt2_symname;

/* The symbols of one loaded program: its shape environment (one reference, NULL until the
 * first symbol; the program takes it) and the names the file gives them. */
typedef struct pt2_syms {
    fx_shape_env *env;
    const struct cJSON *ranges; /* the file's range_constraints (borrowed), or NULL */
    struct pt2_symname *v;
    int n, cap;
} pt2_syms;

void pt2_syms_free(pt2_syms *s);
/* The symbol named `name` ("s0", "u3"), or NULL. */
const fx_sym *pt2_sym_lookup(const pt2_syms *s, const char *name);
/* Creates symbol `name` as r describes it (r->unbacked / r->num are set from the name). FX_EIO
 * when it exists, FX_ENOTIMPL for a name that is not s<N> / u<N>; FX_ENOMEM. */
int pt2_sym_define(pt2_syms *s, const char *name, fx_symbol_restore *r, const fx_sym **out,
                   fx_err *err);
/* Creates symbol `name` from the file alone: its range from s->ranges (a size symbol's declared
 * range narrowed to [2, int_oo] as ShapeEnv.create_symbol does), its example value `hint` (or,
 * without one, the lowest value the range allows, at least 2), `source` ("L['x'].size()[0]"). */
int pt2_sym_create(pt2_syms *s, const char *name, int64_t hint, bool has_hint, const char *source,
                   const fx_sym **out, fx_err *err);
/* The RangeConstraint of `name` in ranges ({"min_val": int | null, "max_val": ...}; null is
 * int_oo): *found false when there is none. FX_EIO for a malformed one (message without a path). */
int pt2_sym_range(const struct cJSON *ranges, const char *name, bool *found, fx_vr *out, fx_err *err);
/* A SymExpr's expr_str (sympy srepr or str) as an expression of s->env; unknown symbols are
 * created with pt2_sym_create. FX_EIO (malformed) or FX_ENOTIMPL (a function fxdb's expressions
 * cannot hold), the message naming the text and the offset. */
int pt2_sym_parse(pt2_syms *s, const char *text, const fx_sym **out, fx_err *err);
/* Whether text is one symbol ("s0" or "Symbol('s0', integer=True, positive=True)"): its name. */
bool pt2_sym_bare_name(const char *text, char *name, int cap);

/* Whether the JSON number d is an integer int64_t holds: then *out is it. Checks the range before
 * converting (a double beyond int64's range converted to int64_t is undefined behaviour: the
 * loader's fuzz target found 4.4e60 in a tensor size). NaN and infinities are not integers. */
static inline bool pt2_int64_of(double d, int64_t *out) {
    if (!(d >= -9.2233720368547758e18 && d < 9.2233720368547758e18)) return false;
    int64_t i = (int64_t)d;
    if ((double)i != d) return false;
    *out = i;
    return true;
}

#endif
