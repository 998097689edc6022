/* core/dtype.c — dtype tables, promotion, half conversions.
 * Layer: core. */
#include "core/dtype.h"

#include <fp16.h>
#include <math.h>
#include <string.h>

static const struct {
    const char *name, *shortname;
    size_t size;
    int cat;
} k_dtypes[] = {
#define X(id, name, shortname, size, cat) {name, shortname, size, cat},
    FX_DTYPE_LIST(X)
#undef X
};
_Static_assert(sizeof k_dtypes / sizeof k_dtypes[0] == FX_DTYPE_COUNT, "dtype table");

static int valid(fx_dtype dt) { return dt >= 0 && dt < FX_DTYPE_COUNT; }

const char *fx_dtype_name(fx_dtype dt) { return valid(dt) ? k_dtypes[dt].name : "?"; }
const char *fx_dtype_short(fx_dtype dt) { return valid(dt) ? k_dtypes[dt].shortname : "?"; }
size_t fx_dtype_size(fx_dtype dt) { return valid(dt) ? k_dtypes[dt].size : 0; }
fx_dtype_cat fx_dtype_category(fx_dtype dt) { return valid(dt) ? k_dtypes[dt].cat : 0; }
bool fx_dtype_is_float(fx_dtype dt) { return valid(dt) && k_dtypes[dt].cat == 2; }
bool fx_dtype_is_int(fx_dtype dt) { return valid(dt) && k_dtypes[dt].cat == 1; }
bool fx_dtype_is_complex(fx_dtype dt) { return valid(dt) && k_dtypes[dt].cat == FX_CAT_COMPLEX; }

fx_dtype fx_dtype_to_real(fx_dtype dt) {
    return dt == FX_DTYPE_C64 ? FX_DTYPE_F32 : dt == FX_DTYPE_C128 ? FX_DTYPE_F64 : dt;
}

fx_dtype fx_dtype_to_complex(fx_dtype dt) {
    switch (dt) {
    case FX_DTYPE_F32: case FX_DTYPE_F16: case FX_DTYPE_C64: return FX_DTYPE_C64;
    case FX_DTYPE_F64: case FX_DTYPE_C128: return FX_DTYPE_C128;
    default: return FX_DTYPE_UNDEFINED;
    }
}

fx_dtype fx_dtype_from_name(const char *name) {
    static const struct { const char *alias; fx_dtype dt; } aliases[] = {
        {"float", FX_DTYPE_F32}, {"double", FX_DTYPE_F64}, {"half", FX_DTYPE_F16},
        {"long", FX_DTYPE_I64}, {"int", FX_DTYPE_I32},     {"short", FX_DTYPE_I16},
        {"cfloat", FX_DTYPE_C64}, {"cdouble", FX_DTYPE_C128},
    };
    if (!name) return FX_DTYPE_UNDEFINED;
    if (strncmp(name, "torch.", 6) == 0) name += 6;
    for (int i = 0; i < FX_DTYPE_COUNT; i++)
        if (!strcmp(name, k_dtypes[i].name) || !strcmp(name, k_dtypes[i].shortname)) return i;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(name, aliases[i].alias)) return aliases[i].dt;
    return FX_DTYPE_UNDEFINED;
}

fx_dtype fx_promote_types(fx_dtype a, fx_dtype b) {
    if (!valid(a) || !valid(b)) return FX_DTYPE_UNDEFINED;
    if (a == b) return a;
    /* The c10 lattice restricted to fxdb's dtypes (order: f32 f64 f16 bf16 i64 i32 i16 i8 u8 b
     * c64 c128). */
    enum { f4 = FX_DTYPE_F32, f8 = FX_DTYPE_F64, f2 = FX_DTYPE_F16, bf = FX_DTYPE_BF16,
           i8 = FX_DTYPE_I64, i4 = FX_DTYPE_I32, i2 = FX_DTYPE_I16, i1 = FX_DTYPE_I8,
           u1 = FX_DTYPE_U8, b1 = FX_DTYPE_BOOL, c4 = FX_DTYPE_C64, c8 = FX_DTYPE_C128 };
    static const signed char table[FX_DTYPE_COUNT][FX_DTYPE_COUNT] = {
        /*        f4  f8  f2  bf  i8  i4  i2  i1  u1  b1  c4  c8 */
        /* f4 */ {f4, f8, f4, f4, f4, f4, f4, f4, f4, f4, c4, c8},
        /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, c8, c8},
        /* f2 */ {f4, f8, f2, f4, f2, f2, f2, f2, f2, f2, c4, c8},
        /* bf */ {f4, f8, f4, bf, bf, bf, bf, bf, bf, bf, c4, c8},
        /* i8 */ {f4, f8, f2, bf, i8, i8, i8, i8, i8, i8, c4, c8},
        /* i4 */ {f4, f8, f2, bf, i8, i4, i4, i4, i4, i4, c4, c8},
        /* i2 */ {f4, f8, f2, bf, i8, i4, i2, i2, i2, i2, c4, c8},
        /* i1 */ {f4, f8, f2, bf, i8, i4, i2, i1, i2, i1, c4, c8},
        /* u1 */ {f4, f8, f2, bf, i8, i4, i2, i2, u1, u1, c4, c8},
        /* b1 */ {f4, f8, f2, bf, i8, i4, i2, i1, u1, b1, c4, c8},
        /* c4 */ {c4, c8, c4, c4, c4, c4, c4, c4, c4, c4, c4, c8},
        /* c8 */ {c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8},
    };
    return (fx_dtype)table[a][b];
}

void fx_result_type_init(fx_result_type_state *s) {
    s->dim_result = s->zero_result = s->wrapped_result = FX_DTYPE_UNDEFINED;
}

static fx_dtype promote_skip_undefined(fx_dtype a, fx_dtype b) {
    if (a == FX_DTYPE_UNDEFINED) return b;
    if (b == FX_DTYPE_UNDEFINED) return a;
    return fx_promote_types(a, b);
}

void fx_result_type_tensor(fx_result_type_state *s, fx_dtype dt, int ndim) {
    if (ndim > 0) s->dim_result = promote_skip_undefined(s->dim_result, dt);
    else s->zero_result = promote_skip_undefined(s->zero_result, dt);
}

void fx_result_type_scalar(fx_result_type_state *s, int kind) {
    fx_dtype dt = kind == 0 ? FX_DTYPE_BOOL : kind == 1 ? FX_DTYPE_I64 : FX_DTYPE_DEFAULT;
    s->wrapped_result = promote_skip_undefined(s->wrapped_result, dt);
}

/* c10's combine_categories(higher, lower): a complex lower category raises a float higher one
 * to the complex dtype of its precision (f64 tensor * c64 0-dim tensor is c128). */
static fx_dtype combine_categories(fx_dtype higher, fx_dtype lower) {
    if (fx_dtype_is_complex(higher)) return higher;
    if (fx_dtype_is_complex(lower))
        return fx_dtype_is_float(higher) && fx_dtype_to_complex(higher) != FX_DTYPE_UNDEFINED
                   ? fx_dtype_to_complex(higher)
                   : lower;
    if (fx_dtype_is_float(higher)) return higher;
    if (higher == FX_DTYPE_BOOL || fx_dtype_is_float(lower))
        return promote_skip_undefined(higher, lower);
    if (higher != FX_DTYPE_UNDEFINED) return higher;
    return lower;
}

fx_dtype fx_result_type_get(const fx_result_type_state *s) {
    return combine_categories(s->dim_result, combine_categories(s->zero_result, s->wrapped_result));
}

float fx_f16_to_f32(uint16_t h) { return fp16_ieee_to_fp32_value(h); }
uint16_t fx_f32_to_f16(float f) { return fp16_ieee_from_fp32_value(f); }

float fx_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t fx_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f)) return 0x7fc0;
    u += 0x7fff + ((u >> 16) & 1); /* round to nearest even, as c10::BFloat16 does */
    return (uint16_t)(u >> 16);
}

double fx_dtype_load_f64(fx_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case FX_DTYPE_F32: return ((const float *)p)[i];
    case FX_DTYPE_F64: return ((const double *)p)[i];
    case FX_DTYPE_F16: return fx_f16_to_f32(((const uint16_t *)p)[i]);
    case FX_DTYPE_BF16: return fx_bf16_to_f32(((const uint16_t *)p)[i]);
    case FX_DTYPE_I64: return (double)((const int64_t *)p)[i];
    case FX_DTYPE_I32: return ((const int32_t *)p)[i];
    case FX_DTYPE_I16: return ((const int16_t *)p)[i];
    case FX_DTYPE_I8: return ((const int8_t *)p)[i];
    case FX_DTYPE_U8: return ((const uint8_t *)p)[i];
    case FX_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
    case FX_DTYPE_C64: return ((const float *)p)[2 * i];
    case FX_DTYPE_C128: return ((const double *)p)[2 * i];
    default: return 0;
    }
}

int64_t fx_dtype_load_i64(fx_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case FX_DTYPE_I64: return ((const int64_t *)p)[i];
    case FX_DTYPE_I32: return ((const int32_t *)p)[i];
    case FX_DTYPE_I16: return ((const int16_t *)p)[i];
    case FX_DTYPE_I8: return ((const int8_t *)p)[i];
    case FX_DTYPE_U8: return ((const uint8_t *)p)[i];
    case FX_DTYPE_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: {
        double v = fx_dtype_load_f64(dt, p, i);
        if (!(v == v)) return INT64_MIN;
        if (v >= 9.2233720368547758e18) return INT64_MIN; /* as x86 cvttsd2si does */
        if (v < -9.2233720368547758e18) return INT64_MIN;
        return (int64_t)v;
    }
    }
}

void fx_dtype_store_f64(fx_dtype dt, void *p, int64_t i, double v) {
    switch (dt) {
    case FX_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case FX_DTYPE_F64: ((double *)p)[i] = v; break;
    case FX_DTYPE_F16: ((uint16_t *)p)[i] = fx_f32_to_f16((float)v); break;
    case FX_DTYPE_BF16: ((uint16_t *)p)[i] = fx_f32_to_bf16((float)v); break;
    case FX_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case FX_DTYPE_C64: case FX_DTYPE_C128: fx_dtype_store_c(dt, p, i, v, 0); break;
    default: {
        int64_t x;
        if (!(v == v) || v >= 9.2233720368547758e18 || v < -9.2233720368547758e18) x = INT64_MIN;
        else x = (int64_t)v;
        fx_dtype_store_i64(dt, p, i, x);
    }
    }
}

void fx_dtype_store_i64(fx_dtype dt, void *p, int64_t i, int64_t v) {
    switch (dt) {
    case FX_DTYPE_I64: ((int64_t *)p)[i] = v; break;
    case FX_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case FX_DTYPE_I16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
    case FX_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case FX_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case FX_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: fx_dtype_store_f64(dt, p, i, (double)v);
    }
}

void fx_dtype_load_c(fx_dtype dt, const void *p, int64_t i, double *re, double *im) {
    switch (dt) {
    case FX_DTYPE_C64:
        *re = ((const float *)p)[2 * i], *im = ((const float *)p)[2 * i + 1];
        return;
    case FX_DTYPE_C128:
        *re = ((const double *)p)[2 * i], *im = ((const double *)p)[2 * i + 1];
        return;
    default:
        /* integers through int64 so that large values convert as PyTorch's casts do */
        *re = fx_dtype_is_int(dt) ? (double)fx_dtype_load_i64(dt, p, i)
                                  : fx_dtype_load_f64(dt, p, i);
        *im = 0;
    }
}

void fx_dtype_store_c(fx_dtype dt, void *p, int64_t i, double re, double im) {
    switch (dt) {
    case FX_DTYPE_C64:
        ((float *)p)[2 * i] = (float)re, ((float *)p)[2 * i + 1] = (float)im;
        return;
    case FX_DTYPE_C128:
        ((double *)p)[2 * i] = re, ((double *)p)[2 * i + 1] = im;
        return;
    case FX_DTYPE_BOOL: ((uint8_t *)p)[i] = re != 0 || im != 0; return; /* c10::convert */
    default: fx_dtype_store_f64(dt, p, i, re);
    }
}
