/* core/schema.h — ATen function schema strings, parsed.
 * Layer: core. Grammar of aten/src/ATen/native/native_functions.yaml `func:` lines, e.g.
 *   add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
 *   split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]
 * Alias annotations are what tracing and functionalization read: a return annotated (a) that an
 * argument also carries makes the op a view of that argument; (a!) marks a mutated argument. */
#ifndef FX_SCHEMA_H
#define FX_SCHEMA_H

#include <stdbool.h>

#include "core/fx_err.h"
#include "core/ivalue.h"

#define FX_SCHEMA_MAX_ARGS 16
#define FX_SCHEMA_MAX_RETS 5

typedef enum fx_argtype {
    FX_TY_TENSOR,      /* Tensor */
    FX_TY_TENSOR_LIST, /* Tensor[] ; with optional: Tensor?[] (elements may be None) */
    FX_TY_INT,         /* int, SymInt */
    FX_TY_INT_LIST,    /* int[], int[N], SymInt[] */
    FX_TY_FLOAT,       /* float */
    FX_TY_FLOAT_LIST,  /* float[] */
    FX_TY_SCALAR,      /* Scalar */
    FX_TY_BOOL,        /* bool */
    FX_TY_BOOL_LIST,   /* bool[] */
    FX_TY_DTYPE,       /* ScalarType */
    FX_TY_LAYOUT,      /* Layout */
    FX_TY_DEVICE,      /* Device */
    FX_TY_MEMFORMAT,   /* MemoryFormat */
    FX_TY_STR,         /* str */
    FX_TY_GENERATOR,   /* Generator */
    FX_TY_ANY,         /* anything else */
} fx_argtype;

typedef struct fx_arg_schema {
    char name[32];
    fx_argtype type;
    bool optional;       /* T? — None accepted */
    bool elem_optional;  /* Tensor?[] */
    bool kwarg_only;     /* after the `*` */
    bool has_default;
    fx_ivalue def;       /* the default (FX_IV_NONE for None); owned by the schema */
    int list_len;        /* N of int[N], else 0 */
    char alias;          /* alias set letter ('a'), or 0 */
    bool alias_write;    /* (a!) */
    bool symint;         /* declared SymInt / SymInt[] / SymInt? (may be symbolic) */
} fx_arg_schema;

typedef struct fx_ret_schema {
    fx_argtype type;     /* FX_TY_TENSOR, FX_TY_TENSOR_LIST, FX_TY_SCALAR, FX_TY_INT ... */
    char alias;
    bool alias_write;
    char name[32];       /* named returns (values, indices), else "" */
} fx_ret_schema;

typedef struct fx_schema {
    char name[48];      /* "add_" */
    char overload[32];  /* "Tensor"; "default" when the string has none */
    int nargs;
    fx_arg_schema args[FX_SCHEMA_MAX_ARGS];
    int nrets;
    fx_ret_schema rets[FX_SCHEMA_MAX_RETS];
    int mutated_arg;    /* index of the first (a!) argument, or -1 */
    int view_arg;       /* index of the argument a non-mutating (a) return aliases, or -1 */
} fx_schema;

/* Parses `text` into *s. FX_EARG with the offending position on a malformed string. The schema
 * owns its default ivalues: release with fx_schema_clear. */
int fx_schema_parse(const char *text, fx_schema *s, fx_err *err);
void fx_schema_clear(fx_schema *s);
/* Index of the argument called `name`, or -1. */
int fx_schema_arg_index(const fx_schema *s, const char *name);
/* Appends the schema back as text (round-trips the parsed form). */
void fx_schema_format(fx_strbuf *sb, const fx_schema *s);

#endif
