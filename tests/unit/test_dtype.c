/* tests/unit/test_dtype.c — core/dtype.c: names, sizes, categories, name parsing, the c10
 * promotion lattice (torch.promote_types for every pair), torch.result_type with dimensioned,
 * zero-dim and wrapped-number operands, half / bfloat16 conversions, slow load / store.
 * Layer: tests (cmocka). Expected tables were printed by torch. */
#include "tests/unit/ka_util.h"

#define F32 FX_DTYPE_F32
#define F64 FX_DTYPE_F64
#define F16 FX_DTYPE_F16
#define BF16 FX_DTYPE_BF16
#define I64 FX_DTYPE_I64
#define I32 FX_DTYPE_I32
#define I16 FX_DTYPE_I16
#define I8 FX_DTYPE_I8
#define U8 FX_DTYPE_U8
#define BOOL FX_DTYPE_BOOL
#define C64 FX_DTYPE_C64
#define C128 FX_DTYPE_C128

static void test_names(void **state) {
    (void)state;
    static const char *const names[] = {"float32", "float64", "float16", "bfloat16",
                                        "int64",   "int32",   "int16",   "int8",
                                        "uint8",   "bool",    "complex64", "complex128"};
    static const char *const shorts[] = {"f32", "f64", "f16", "bf16", "i64", "i32",
                                         "i16", "i8",  "u8",  "b8",   "c64", "c128"};
    static const size_t sizes[] = {4, 8, 2, 2, 8, 4, 2, 1, 1, 1, 8, 16};
    for (int i = 0; i < FX_DTYPE_COUNT; i++) {
        assert_string_equal(fx_dtype_name(i), names[i]);
        assert_string_equal(fx_dtype_short(i), shorts[i]);
        assert_int_equal(fx_dtype_size(i), sizes[i]);
        assert_int_equal(fx_dtype_from_name(names[i]), i);
        assert_int_equal(fx_dtype_from_name(shorts[i]), i);
        char torchname[32];
        snprintf(torchname, sizeof torchname, "torch.%s", names[i]);
        assert_int_equal(fx_dtype_from_name(torchname), i);
        assert_int_equal(fx_dtype_is_float(i), i <= 3);
        assert_int_equal(fx_dtype_is_int(i), i >= 4 && i <= 8);
        assert_int_equal(fx_dtype_is_complex(i), i >= 10);
    }
    assert_int_equal(fx_dtype_category(C128), FX_CAT_COMPLEX);
    assert_int_equal(fx_dtype_to_real(C64), F32);
    assert_int_equal(fx_dtype_to_real(C128), F64);
    assert_int_equal(fx_dtype_to_real(I8), I8);
    assert_int_equal(fx_dtype_to_complex(F32), C64);
    assert_int_equal(fx_dtype_to_complex(F64), C128);
    assert_int_equal(fx_dtype_to_complex(BF16), FX_DTYPE_UNDEFINED);
    assert_int_equal(fx_dtype_from_name("cfloat"), C64);
    assert_int_equal(fx_dtype_from_name("torch.cdouble"), C128);
    assert_int_equal(fx_dtype_category(BOOL), FX_CAT_BOOL);
    assert_int_equal(fx_dtype_category(U8), FX_CAT_INT);
    assert_int_equal(fx_dtype_category(BF16), FX_CAT_FLOAT);
    assert_int_equal(fx_dtype_from_name("half"), F16);
    assert_int_equal(fx_dtype_from_name("float"), F32);
    assert_int_equal(fx_dtype_from_name("double"), F64);
    assert_int_equal(fx_dtype_from_name("long"), I64);
    assert_int_equal(fx_dtype_from_name("int"), I32);
    assert_int_equal(fx_dtype_from_name("short"), I16);
    assert_int_equal(fx_dtype_from_name("complex32"), FX_DTYPE_UNDEFINED);
    assert_int_equal(fx_dtype_from_name(NULL), FX_DTYPE_UNDEFINED);
    assert_string_equal(fx_dtype_name(FX_DTYPE_UNDEFINED), "?");
    assert_int_equal(fx_dtype_size(FX_DTYPE_UNDEFINED), 0);
}

/* torch.promote_types(a, b) for every pair, rows and columns in fx_dtype order. */
static void test_promote_types(void **state) {
    (void)state;
    static const fx_dtype want[12][12] = {
        {F32, F64, F32, F32, F32, F32, F32, F32, F32, F32, C64, C128},
        {F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, C128, C128},
        {F32, F64, F16, F32, F16, F16, F16, F16, F16, F16, C64, C128},
        {F32, F64, F32, BF16, BF16, BF16, BF16, BF16, BF16, BF16, C64, C128},
        {F32, F64, F16, BF16, I64, I64, I64, I64, I64, I64, C64, C128},
        {F32, F64, F16, BF16, I64, I32, I32, I32, I32, I32, C64, C128},
        {F32, F64, F16, BF16, I64, I32, I16, I16, I16, I16, C64, C128},
        {F32, F64, F16, BF16, I64, I32, I16, I8, I16, I8, C64, C128},
        {F32, F64, F16, BF16, I64, I32, I16, I16, U8, U8, C64, C128},
        {F32, F64, F16, BF16, I64, I32, I16, I8, U8, BOOL, C64, C128},
        {C64, C128, C64, C64, C64, C64, C64, C64, C64, C64, C64, C128},
        {C128, C128, C128, C128, C128, C128, C128, C128, C128, C128, C128, C128},
    };
    for (int a = 0; a < 12; a++)
        for (int b = 0; b < 12; b++) assert_int_equal(fx_promote_types(a, b), want[a][b]);
    assert_int_equal(fx_promote_types(F32, FX_DTYPE_UNDEFINED), FX_DTYPE_UNDEFINED);
}

/* torch.result_type(a, b): operand = (dtype, ndim) for tensors, or a wrapped number kind. */
typedef struct operand {
    int kind; /* 0 tensor, 1 wrapped bool, 2 wrapped int, 3 wrapped float */
    fx_dtype dt;
    int ndim;
} operand;

static fx_dtype result_type(operand a, operand b) {
    fx_result_type_state s;
    fx_result_type_init(&s);
    operand ops[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (ops[i].kind == 0) fx_result_type_tensor(&s, ops[i].dt, ops[i].ndim);
        else fx_result_type_scalar(&s, ops[i].kind - 1);
    }
    return fx_result_type_get(&s);
}

static void test_result_type(void **state) {
    (void)state;
#define T(dt, nd) ((operand){0, dt, nd})
#define WB ((operand){1, 0, 0})
#define WI ((operand){2, 0, 0})
#define WF ((operand){3, 0, 0})
    struct {
        operand a, b;
        fx_dtype want;
    } cases[] = {
        {T(F16, 1), WI, F16},        {T(I64, 1), WF, F32},        {T(BOOL, 1), WI, I64},
        {T(BOOL, 1), WB, BOOL},      {T(U8, 1), WI, U8},          {T(I8, 0), T(U8, 1), U8},
        {T(F64, 0), T(F16, 1), F16}, {T(I64, 0), T(F16, 1), F16}, {T(F32, 0), T(I64, 1), F32},
        {T(F64, 0), T(I64, 0), F64}, {T(BOOL, 0), WF, F32},       {T(I32, 0), T(I16, 0), I32},
        {T(BF16, 1), WF, BF16},      {T(F16, 0), T(BF16, 0), F32}, {WI, WF, F32},
        {WB, WI, I64},
        /* complex: a complex 0-dim operand lifts a dimensioned float to the complex dtype of
         * its own precision, and an integer or bool to the complex operand's dtype */
        {T(F64, 1), T(C64, 0), C128}, {T(I64, 1), T(C64, 0), C64},   {T(C64, 1), WF, C64},
        {T(C64, 0), T(F64, 1), C128}, {T(BOOL, 1), T(C128, 0), C128}, {T(C64, 0), T(C128, 0), C128},
        {T(F32, 1), T(C128, 0), C64},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(result_type(cases[i].a, cases[i].b), cases[i].want);
#undef T
#undef WB
#undef WI
#undef WF
}

static void test_half_conversions(void **state) {
    (void)state;
    /* exact values round-trip; rounding to nearest even; overflow to inf; subnormals */
    static const float exact[] = {0.f, -0.f, 1.f, -2.f, 0.5f, 65504.f, 6.103515625e-05f,
                                  5.9604644775390625e-08f};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        assert_true(fx_f16_to_f32(fx_f32_to_f16(exact[i])) == exact[i]);
    assert_int_equal(fx_f32_to_f16(1.0f), 0x3c00);
    assert_int_equal(fx_f32_to_f16(65520.f), 0x7c00);                 /* rounds up to inf */
    assert_int_equal(fx_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);      /* tie -> even */
    assert_int_equal(fx_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);      /* tie -> even (up) */
    assert_true(fx_f16_to_f32(fx_f32_to_f16(0.1f)) == 0.0999755859375f);
    assert_true(isnan(fx_f16_to_f32(fx_f32_to_f16(NAN))));
    /* bfloat16 */
    assert_int_equal(fx_f32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(fx_f32_to_bf16(1.0f + 1.0f / 256), 0x3f80); /* tie -> even */
    assert_int_equal(fx_f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
    assert_true(fx_bf16_to_f32(fx_f32_to_bf16(1.0f / 3)) == 0.333984375f);
    assert_true(isnan(fx_bf16_to_f32(fx_f32_to_bf16(NAN))));
    assert_true(isinf(fx_bf16_to_f32(fx_f32_to_bf16(INFINITY))));
}

static void test_load_store(void **state) {
    (void)state;
    unsigned char buf[64];
    for (int i = 0; i < FX_DTYPE_COUNT; i++) {
        fx_dtype_store_f64(i, buf, 1, 3.0);
        assert_true(fx_dtype_load_f64(i, buf, 1) == (i == BOOL ? 1.0 : 3.0));
        double re, im;
        fx_dtype_load_c(i, buf, 1, &re, &im);
        assert_true(re == (i == BOOL ? 1.0 : 3.0) && im == 0);
        fx_dtype_store_i64(i, buf, 2, 5);
        assert_int_equal(fx_dtype_load_i64(i, buf, 2), i == BOOL ? 1 : 5);
    }
    fx_dtype_store_f64(I32, buf, 0, -2.7); /* truncation toward zero */
    assert_int_equal(fx_dtype_load_i64(I32, buf, 0), -2);
    fx_dtype_store_i64(I8, buf, 0, 300); /* wraps */
    assert_int_equal(fx_dtype_load_i64(I8, buf, 0), 44);
    fx_dtype_store_i64(U8, buf, 0, -1);
    assert_int_equal(fx_dtype_load_i64(U8, buf, 0), 255);
    fx_dtype_store_f64(BOOL, buf, 0, 0.25);
    assert_int_equal(fx_dtype_load_i64(BOOL, buf, 0), 1);
    fx_dtype_store_f64(F16, buf, 0, 0.1);
    assert_true(fx_dtype_load_f64(F16, buf, 0) == 0.0999755859375);
    fx_dtype_store_i64(F32, buf, 0, 16777217); /* int -> float rounds */
    assert_true(fx_dtype_load_f64(F32, buf, 0) == 16777216.0);
    fx_dtype_store_f64(F64, buf, 0, NAN);
    assert_int_equal(fx_dtype_load_i64(F64, buf, 0), INT64_MIN);
    /* complex elements: (re, im) pairs; to a real dtype keeps re, to bool is either part != 0 */
    double re, im;
    fx_dtype_store_c(C64, buf, 1, 1.5, -2.25);
    assert_true(((float *)buf)[2] == 1.5f && ((float *)buf)[3] == -2.25f);
    fx_dtype_load_c(C64, buf, 1, &re, &im);
    assert_true(re == 1.5 && im == -2.25);
    fx_dtype_store_c(C128, buf, 0, 0.1, 0.2);
    assert_true(((double *)buf)[0] == 0.1 && ((double *)buf)[1] == 0.2);
    fx_dtype_store_c(I32, buf, 0, -2.7, 5);
    assert_int_equal(fx_dtype_load_i64(I32, buf, 0), -2);
    fx_dtype_store_c(BOOL, buf, 0, 0, 0.5);
    assert_int_equal(fx_dtype_load_i64(BOOL, buf, 0), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),          cmocka_unit_test(test_promote_types),
        cmocka_unit_test(test_result_type),    cmocka_unit_test(test_half_conversions),
        cmocka_unit_test(test_load_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
