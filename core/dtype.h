/* core/dtype.h — the dtypes of fxdb, their names, and torch.result_type promotion.
 * Layer: core. Follows c10/core/ScalarType.h (promoteTypes table) and
 * aten/src/ATen/native/TypeProperties.cpp (result_type with dim / zero-dim / wrapped-number
 * categories). */
#ifndef FX_DTYPE_H
#define FX_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* X(ID, torch name, short name, size in bytes, category)  — category: 0 bool, 1 int, 2 float,
 * 3 complex. A complex element is two values of its real dtype, real part first (C99's
 * `float complex` / `double complex` layout, as c10::complex<T>). */
#define FX_DTYPE_LIST(X)                   \
    X(F32, "float32", "f32", 4, 2)         \
    X(F64, "float64", "f64", 8, 2)         \
    X(F16, "float16", "f16", 2, 2)         \
    X(BF16, "bfloat16", "bf16", 2, 2)      \
    X(I64, "int64", "i64", 8, 1)           \
    X(I32, "int32", "i32", 4, 1)           \
    X(I16, "int16", "i16", 2, 1)           \
    X(I8, "int8", "i8", 1, 1)              \
    X(U8, "uint8", "u8", 1, 1)             \
    X(BOOL, "bool", "b8", 1, 0)            \
    X(C64, "complex64", "c64", 8, 3)       \
    X(C128, "complex128", "c128", 16, 3)

typedef enum fx_dtype {
#define X(id, name, shortname, size, cat) FX_DTYPE_##id,
    FX_DTYPE_LIST(X)
#undef X
    FX_DTYPE_COUNT,
    FX_DTYPE_UNDEFINED = -1
} fx_dtype;

#define FX_DTYPE_DEFAULT FX_DTYPE_F32

typedef enum fx_dtype_cat {
    FX_CAT_BOOL = 0,
    FX_CAT_INT = 1,
    FX_CAT_FLOAT = 2,
    FX_CAT_COMPLEX = 3
} fx_dtype_cat;

const char *fx_dtype_name(fx_dtype dt);       /* "float16"; "?" when out of range */
const char *fx_dtype_short(fx_dtype dt);      /* "f16", as FX prints tensor metadata */
size_t fx_dtype_size(fx_dtype dt);            /* bytes per element */
fx_dtype_cat fx_dtype_category(fx_dtype dt);
bool fx_dtype_is_float(fx_dtype dt); /* floating point, not complex (dtype.is_floating_point) */
bool fx_dtype_is_int(fx_dtype dt);   /* integral, not bool */
bool fx_dtype_is_complex(fx_dtype dt);
/* The real dtype of a complex one (complex64 -> float32, complex128 -> float64); dt itself for
 * any other dtype (c10::toRealValueType). */
fx_dtype fx_dtype_to_real(fx_dtype dt);
/* The complex dtype whose parts are dt (float32 -> complex64, float64 -> complex128, float16 ->
 * complex64 since fxdb has no complex32; a complex dtype maps to itself); FX_DTYPE_UNDEFINED for
 * bfloat16, integers and bool (c10::toComplexType raises there). */
fx_dtype fx_dtype_to_complex(fx_dtype dt);
/* Parses a torch name ("float16", "half", "long", "cfloat", ...), the short name, or
 * "torch.float16".
 * Returns FX_DTYPE_UNDEFINED when unknown. */
fx_dtype fx_dtype_from_name(const char *name);

/* torch.promote_types(a, b): the c10 promotion lattice. Undefined if either is undefined. */
fx_dtype fx_promote_types(fx_dtype a, fx_dtype b);

/* Incremental torch.result_type. Feed each operand; read the result with fx_result_type_get.
 * Dimensioned tensors outrank zero-dim tensors, which outrank wrapped numbers, within a
 * category: a Lua number never raises a tensor's dtype within its category (f16 * 9 is f16,
 * i64 * 2.5 is f32 — the default dtype — and bool + 1 is i64). */
typedef struct fx_result_type_state {
    fx_dtype dim_result;     /* promotion over tensors with ndim > 0 */
    fx_dtype zero_result;    /* promotion over 0-dim tensors */
    fx_dtype wrapped_result; /* promotion over wrapped Lua numbers */
} fx_result_type_state;
void fx_result_type_init(fx_result_type_state *s);
void fx_result_type_tensor(fx_result_type_state *s, fx_dtype dt, int ndim);
/* A wrapped number: kind 0 bool, 1 integer, 2 float (which counts as the default dtype). */
void fx_result_type_scalar(fx_result_type_state *s, int kind);
fx_dtype fx_result_type_get(const fx_result_type_state *s);

/* Half and bfloat16 conversions (IEEE binary16 via FP16; bf16 rounds to nearest even). */
float fx_f16_to_f32(uint16_t h);
uint16_t fx_f32_to_f16(float f);
float fx_bf16_to_f32(uint16_t h);
uint16_t fx_f32_to_bf16(float f);

/* Reads element i of a buffer of dtype dt as double / int64; writes one converted from double /
 * int64 (float->int truncates toward zero, as a C cast and PyTorch's _to_copy do; to bool is
 * value != 0). A complex element reads as its real part and is written as (v, 0). These are
 * for printers, scalars and slow paths, not for hot loops. */
double fx_dtype_load_f64(fx_dtype dt, const void *base, int64_t i);
int64_t fx_dtype_load_i64(fx_dtype dt, const void *base, int64_t i);
void fx_dtype_store_f64(fx_dtype dt, void *base, int64_t i, double v);
void fx_dtype_store_i64(fx_dtype dt, void *base, int64_t i, int64_t v);
/* Element i as (real, imaginary) parts: a real dtype's imaginary part is 0. Writing a complex
 * value into a real dtype keeps the real part (PyTorch's copy_ from complex to real, which
 * warns "Casting complex values to real discards the imaginary part"). */
void fx_dtype_load_c(fx_dtype dt, const void *base, int64_t i, double *re, double *im);
void fx_dtype_store_c(fx_dtype dt, void *base, int64_t i, double re, double im);

#endif
