/* core/ivalue.h — tagged values: op arguments and results, and graph-node arguments.
 * Layer: core. One type serves dispatch (tensors, numbers, lists) and the graph IR (the same,
 * plus references to nodes), like c10::IValue and torch.fx's Argument. A Lua number passed where
 * a schema says Tensor stays an INT/FLOAT/BOOL ivalue: a "wrapped number" (see dtype.h). */
#ifndef FX_IVALUE_H
#define FX_IVALUE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/strbuf.h"
#include "core/tensor.h"

struct fx_node;

typedef enum fx_ivtag {
    FX_IV_UNSET = 0, /* argument not given: dispatch fills in the schema default */
    FX_IV_NONE,      /* Python None */
    FX_IV_TENSOR,    /* u.t: one reference owned */
    FX_IV_INT,       /* u.i */
    FX_IV_FLOAT,     /* u.f */
    FX_IV_BOOL,      /* u.b */
    FX_IV_DTYPE,     /* u.dtype */
    FX_IV_DEVICE,    /* u.device */
    FX_IV_STR,       /* u.s: owned copy */
    FX_IV_LIST,      /* u.list: items owned */
    FX_IV_NODE,      /* u.node: borrowed reference to a node of the graph holding the value */
    FX_IV_SYMINT,    /* u.si: a symbolic integer (SymInt) of a dynamic trace; holds one
                        reference to its expression's shape environment */
} fx_ivtag;

typedef struct fx_ivalue {
    fx_ivtag tag;
    union {
        fx_tensor *t;
        int64_t i;
        double f;
        bool b;
        fx_dtype dtype;
        fx_device device;
        char *s;
        struct {
            struct fx_ivalue *items; /* (n,) owned */
            int n;
        } list;
        struct fx_node *node;
        fx_symint si;
    } u;
} fx_ivalue;

/* Constructors. They return values by value; fx_iv_tensor retains t, fx_iv_str copies s (a
 * failed copy yields FX_IV_NONE — check with fx_iv_str_ok when it matters). */
fx_ivalue fx_iv_none(void);
fx_ivalue fx_iv_int(int64_t i);
fx_ivalue fx_iv_float(double f);
fx_ivalue fx_iv_bool(bool b);
fx_ivalue fx_iv_dtype(fx_dtype dt);
fx_ivalue fx_iv_device(fx_device d);
fx_ivalue fx_iv_tensor(fx_tensor *t);         /* retains t */
fx_ivalue fx_iv_tensor_steal(fx_tensor *t);   /* takes over the caller's reference */
fx_ivalue fx_iv_str(const char *s);
fx_ivalue fx_iv_node(struct fx_node *n);
/* A SymInt: FX_IV_INT when v is a plain integer, else FX_IV_SYMINT (retains the environment). */
fx_ivalue fx_iv_symint(fx_symint v);
/* INT or SYMINT as a size value; false for anything else. */
bool fx_ivalue_symint(const fx_ivalue *v, fx_symint *out);
/* A list of n items, each FX_IV_NONE. FX_ENOMEM on failure (*out is then FX_IV_NONE). */
int fx_iv_list(int n, fx_ivalue *out, fx_err *err);
/* A list of ints. */
int fx_iv_int_list(int n, const int64_t *v, fx_ivalue *out, fx_err *err);

/* Frees what v owns and sets it to FX_IV_UNSET. NULL-safe. */
void fx_ivalue_clear(fx_ivalue *v);
/* Deep copy: lists copied, tensors retained, strings duplicated. */
int fx_ivalue_copy(fx_ivalue *dst, const fx_ivalue *src, fx_err *err);
bool fx_ivalue_is_scalar(const fx_ivalue *v); /* INT, FLOAT or BOOL */
double fx_ivalue_to_f64(const fx_ivalue *v);  /* INT/FLOAT/BOOL as double */
/* Structural equality (tensors by identity, nodes by identity, floats by ==). */
bool fx_ivalue_equal(const fx_ivalue *a, const fx_ivalue *b);

/* Appends v as Python source: 1, 2.5, True, None, torch.float16, [1, 2], 'str', a node's name
 * (with a '%' prefix when `fx_listing`, as Graph.__str__ prints), a tensor as "tensor(...)"
 * summary. Floats print as Python's repr does (1.0, 0.1, 1e-05, inf). */
void fx_ivalue_format(fx_strbuf *sb, const fx_ivalue *v, bool fx_listing);
/* Appends d as Python's repr(float) does (shortest round-trip form, "1.0", "1e-05", "inf"). */
void fx_format_pyfloat(fx_strbuf *sb, double d);

#endif
