/* core/kernels/k_cast.h — per-dtype element load/store and PyTorch's casts, for hot loops.
 * Layer: core (private). Everything here is static inline so kernels vectorize.
 *
 * Each dtype has a storage C type and a value type: half and bfloat16 are stored as uint16_t
 * and load to float (compute in float, round once on store); bool is stored as one byte and
 * loads as 0/1. Stores convert from any arithmetic C type as c10::convert does: float -> int
 * truncates toward zero, with out-of-range and NaN giving what x86's cvtt instructions give
 * (INT_MIN of the 32- or 64-bit conversion) instead of C's undefined behaviour; float -> uint8
 * goes through int64 (c10's static_cast_with_inter_type); -> bool is `!= 0`; double -> half
 * rounds to float first, as c10::Half(float) does. */
#ifndef FX_K_CAST_H
#define FX_K_CAST_H

#include <fp16.h>
#include <stdint.h>
#include <string.h>

/* X(ID, storage type, value type) over every dtype, in fx_dtype order. */
#define K_DTYPES(X)                                                                                \
    X(F32, float, float)                                                                           \
    X(F64, double, double)                                                                         \
    X(F16, uint16_t, float)                                                                        \
    X(BF16, uint16_t, float)                                                                       \
    X(I64, int64_t, int64_t)                                                                       \
    X(I32, int32_t, int32_t)                                                                       \
    X(I16, int16_t, int16_t)                                                                       \
    X(I8, int8_t, int8_t)                                                                          \
    X(U8, uint8_t, uint8_t)                                                                        \
    X(BOOL, uint8_t, uint8_t)

/* The same list with an extra leading argument passed through: X(a, ID, storage, value). */
#define K_DTYPES_A(X, a)                                                                           \
    X(a, F32, float, float)                                                                        \
    X(a, F64, double, double)                                                                      \
    X(a, F16, uint16_t, float)                                                                     \
    X(a, BF16, uint16_t, float)                                                                    \
    X(a, I64, int64_t, int64_t)                                                                    \
    X(a, I32, int32_t, int32_t)                                                                    \
    X(a, I16, int16_t, int16_t)                                                                    \
    X(a, I8, int8_t, int8_t)                                                                       \
    X(a, U8, uint8_t, uint8_t)                                                                     \
    X(a, BOOL, uint8_t, uint8_t)

/* Storage type of each dtype, by ID (for token pasting: K_ST_##ID). */
#define K_ST_F32 float
#define K_ST_F64 double
#define K_ST_F16 uint16_t
#define K_ST_BF16 uint16_t
#define K_ST_I64 int64_t
#define K_ST_I32 int32_t
#define K_ST_I16 int16_t
#define K_ST_I8 int8_t
#define K_ST_U8 uint8_t
#define K_ST_BOOL uint8_t

static inline float k_h2f(uint16_t h) { return fp16_ieee_to_fp32_value(h); }
static inline uint16_t k_f2h(float f) { return fp16_ieee_from_fp32_value(f); }
static inline float k_b2f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint16_t k_f2b(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if (f != f) return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even, as c10::BFloat16 */
    return (uint16_t)(u >> 16);
}

/* float -> int64 / int32 as cvttsd2si does: in range truncates, else the "integer indefinite"
 * INT_MIN value. */
static inline int64_t k_d2i64(double v) {
    if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) return (int64_t)v;
    return INT64_MIN;
}
static inline int32_t k_d2i32(double v) {
    if (v > -2147483649.0 && v < 2147483648.0) return (int32_t)v;
    return INT32_MIN;
}

/* Conversions of an arithmetic value x (any C type) to each dtype's storage type. */
#define K_IS_FP(x) _Generic((x), float : 1, double : 1, default : 0)
#define K_TO_I64(x)                                                                                \
    _Generic((x), float                                                                            \
             : k_d2i64((double)(x)), double                                                        \
             : k_d2i64((double)(x)), default                                                       \
             : (int64_t)(x))
#define K_TO_I32(x)                                                                                \
    _Generic((x), float                                                                            \
             : k_d2i32((double)(x)), double                                                        \
             : k_d2i32((double)(x)), default                                                       \
             : (int32_t)(x))
#define K_CONV_F32(x) ((float)(x))
#define K_CONV_F64(x) ((double)(x))
#define K_CONV_F16(x) k_f2h((float)(x))
#define K_CONV_BF16(x) k_f2b((float)(x))
#define K_CONV_I64(x) K_TO_I64(x)
#define K_CONV_I32(x) K_TO_I32(x)
#define K_CONV_I16(x) ((int16_t)(uint16_t)(uint32_t)K_TO_I32(x))
#define K_CONV_I8(x) ((int8_t)(uint8_t)(uint32_t)K_TO_I32(x))
#define K_CONV_U8(x) ((uint8_t)(uint64_t)K_TO_I64(x))
#define K_CONV_BOOL(x) ((uint8_t)((x) != 0))

/* Loads of one element at byte pointer p as its value type. */
#define K_LOAD_F32(p) (*(const float *)(p))
#define K_LOAD_F64(p) (*(const double *)(p))
#define K_LOAD_F16(p) k_h2f(*(const uint16_t *)(p))
#define K_LOAD_BF16(p) k_b2f(*(const uint16_t *)(p))
#define K_LOAD_I64(p) (*(const int64_t *)(p))
#define K_LOAD_I32(p) (*(const int32_t *)(p))
#define K_LOAD_I16(p) (*(const int16_t *)(p))
#define K_LOAD_I8(p) (*(const int8_t *)(p))
#define K_LOAD_U8(p) (*(const uint8_t *)(p))
#define K_LOAD_BOOL(p) ((uint8_t)(*(const uint8_t *)(p) != 0))

/* Stores: converts x to dtype ID and writes it at byte pointer p. */
#define K_STORE(ID, ST, p, x) (*(ST *)(p) = K_CONV_##ID(x))

#endif
