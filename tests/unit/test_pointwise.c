/* tests/unit/test_pointwise.c — add/sub/mul/div (all modes, in-place twins) and neg against the
 * naive references of k_ref.c, over every dtype pair and memory layout, plus promotion, the
 * numerics of half types, output layouts and every error message.
 * Layer: tests (cmocka). */
#include "tests/unit/ka_util.h"

#include "core/shape.h"

typedef struct binop_case {
    fx_op_id id, id_;       /* functional and in-place */
    fx_ref_binop rop;
    const char *mode;       /* rounding_mode, or NULL */
    double alpha;           /* add/sub: 1 or -1 */
    const char *name;
} binop_case;

static const binop_case k_ops[] = {
    {FX_OP_ADD_TENSOR, FX_OP_ADD__TENSOR, FX_REF_ADD, NULL, 1, "add"},
    {FX_OP_SUB_TENSOR, FX_OP_SUB__TENSOR, FX_REF_ADD, NULL, -1, "sub"},
    {FX_OP_MUL_TENSOR, FX_OP_MUL__TENSOR, FX_REF_MUL, NULL, 0, "mul"},
    {FX_OP_DIV_TENSOR, FX_OP_DIV__TENSOR, FX_REF_DIV, NULL, 0, "div"},
    {FX_OP_DIV_TENSOR_MODE, FX_OP_DIV__TENSOR_MODE, FX_REF_TRUNC, "trunc", 0, "div_trunc"},
    {FX_OP_DIV_TENSOR_MODE, FX_OP_DIV__TENSOR_MODE, FX_REF_FLOOR, "floor", 0, "div_floor"},
};
#define NOPS (int)(sizeof k_ops / sizeof k_ops[0])

static fx_dtype iv_dtype(const fx_ivalue *v) {
    if (v->tag == FX_IV_TENSOR) return v->u.t->dtype;
    return v->tag == FX_IV_BOOL ? FX_DTYPE_BOOL : v->tag == FX_IV_INT ? FX_DTYPE_I64 : FX_DTYPE_F64;
}

/* The compute dtype PyTorch uses, from the foundation's result_type (independent of the
 * kernels' own planning). */
static fx_dtype expected_compute(const binop_case *op, const fx_ivalue *a, const fx_ivalue *b) {
    fx_result_type_state s;
    fx_result_type_init(&s);
    const fx_ivalue *v[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (v[i]->tag == FX_IV_TENSOR) fx_result_type_tensor(&s, v[i]->u.t->dtype, v[i]->u.t->ndim);
        else fx_result_type_scalar(&s, v[i]->tag == FX_IV_BOOL ? 0 : v[i]->tag == FX_IV_INT ? 1 : 2);
    }
    fx_dtype c = fx_result_type_get(&s);
    if (op->rop == FX_REF_DIV && !fx_dtype_is_float(c)) c = FX_DTYPE_F32;
    return c;
}

static bool is_half(fx_dtype dt) { return dt == FX_DTYPE_F16 || dt == FX_DTYPE_BF16; }

/* Would PyTorch refuse this call (sub on bools, rounding division on bools)? */
static bool refused(const binop_case *op, const fx_ivalue *a, const fx_ivalue *b, fx_dtype c) {
    if (op->alpha == -1 && (iv_dtype(a) == FX_DTYPE_BOOL || iv_dtype(b) == FX_DTYPE_BOOL))
        return true;
    if ((op->rop == FX_REF_TRUNC || op->rop == FX_REF_FLOOR) && c == FX_DTYPE_BOOL) return true;
    return false;
}

/* Runs op(a, b) and compares with the reference; returns 1 when they agree. */
static int run_case(const binop_case *op, const fx_ivalue *a, const fx_ivalue *b, const char *what) {
    fx_err err;
    fx_dtype c = expected_compute(op, a, b);
    if (refused(op, a, b, c)) return 1;
    fx_ivalue mode = op->mode ? fx_iv_str(op->mode) : fx_iv_none();
    fx_tensor *got;
    int rc = op->mode ? ka_call(op->id, &got, &err, 3, a, b, &mode) : ka_call(op->id, &got, &err, 2, a, b);
    fx_ivalue_clear(&mode);
    if (rc) {
        printf("%s: unexpected error %s\n", what, err.msg);
        return 0;
    }
    fx_tensor *exp = ka_empty(c, got->ndim, got->sizes);
    bool opmath = is_half(c) && op->rop != FX_REF_ADD &&
                  (b->tag != FX_IV_TENSOR || fx_tensor_numel(b->u.t) == 1);
    fx_ref_binary(op->rop, c, a, b, op->alpha, opmath, exp);
    int ok = ka_close(got, exp, ka_rtol(c), 0, what);
    fx_tensor_release(got);
    fx_tensor_release(exp);
    return ok;
}

/* Every op x every dtype pair x every layout, same shape (3, 4). */
static void test_binary_dtypes_layouts(void **state) {
    (void)state;
    int64_t sz[2] = {3, 4};
    int bad = 0, n = 0;
    for (int o = 0; o < NOPS; o++)
        for (int i = 0; i < KA_NDTYPES; i++)
            for (int j = 0; j < KA_NDTYPES; j++)
                for (int l = 0; l < KA_NLAYOUTS; l++) {
                    fx_dtype da = ka_all_dtypes[i], db = ka_all_dtypes[j];
                    bool nz = k_ops[o].rop == FX_REF_TRUNC || k_ops[o].rop == FX_REF_FLOOR;
                    fx_tensor *ta = ka_make(da, l, 2, sz, 0);
                    fx_tensor *tb = ka_make(db, (l + 1) % KA_NLAYOUTS, 2, sz, nz);
                    fx_ivalue a = fx_iv_tensor_steal(ta), b = fx_iv_tensor_steal(tb);
                    char what[128];
                    snprintf(what, sizeof what, "%s %s %s %s", k_ops[o].name, fx_dtype_name(da),
                             fx_dtype_name(db), ka_layout_names[l]);
                    bad += !run_case(&k_ops[o], &a, &b, what);
                    n++;
                    fx_ivalue_clear(&a);
                    fx_ivalue_clear(&b);
                }
    assert_int_equal(bad, 0);
    assert_int_equal(n, NOPS * KA_NDTYPES * KA_NDTYPES * KA_NLAYOUTS);
}

/* Broadcasting: (3,1) x (1,4), (2,3,4) x (4,), (4,) x (2,3,4) sliced, 0-dim x (3,). */
static void test_binary_broadcast(void **state) {
    (void)state;
    static const int64_t shapes[][2][3] = {{{3, 1, 0}, {1, 4, 0}}, {{2, 3, 4}, {4, 0, 0}},
                                           {{4, 0, 0}, {2, 3, 4}}, {{0, 0, 0}, {3, 0, 0}}};
    static const int nd[][2] = {{2, 2}, {3, 1}, {1, 3}, {0, 1}};
    static const fx_dtype dts[] = {FX_DTYPE_F32, FX_DTYPE_F16, FX_DTYPE_I32, FX_DTYPE_U8,
                                   FX_DTYPE_BF16, FX_DTYPE_F64};
    int bad = 0;
    for (int o = 0; o < NOPS; o++)
        for (int s = 0; s < 4; s++)
            for (int i = 0; i < 6; i++)
                for (int l = 0; l < KA_NLAYOUTS; l++) {
                    fx_dtype da = dts[i], db = dts[(i + s + 1) % 6];
                    fx_tensor *ta = ka_make(da, l, nd[s][0], shapes[s][0], 0);
                    fx_tensor *tb = ka_make(db, KA_SLICED, nd[s][1], shapes[s][1], 1);
                    fx_ivalue a = fx_iv_tensor_steal(ta), b = fx_iv_tensor_steal(tb);
                    char what[128];
                    snprintf(what, sizeof what, "%s broadcast case %d %s", k_ops[o].name, s,
                             ka_layout_names[l]);
                    bad += !run_case(&k_ops[o], &a, &b, what);
                    fx_ivalue_clear(&a);
                    fx_ivalue_clear(&b);
                }
    assert_int_equal(bad, 0);
}

/* Wrapped numbers on either side, every dtype. */
static void test_binary_scalars(void **state) {
    (void)state;
    int64_t sz[2] = {2, 5};
    const fx_ivalue scalars[] = {fx_iv_int(3), fx_iv_int(-7), fx_iv_float(2.5), fx_iv_float(0.1),
                                 fx_iv_float(-1.0 / 3), fx_iv_bool(true)};
    int bad = 0;
    for (int o = 0; o < NOPS; o++)
        for (int i = 0; i < KA_NDTYPES; i++)
            for (int k = 0; k < 6; k++)
                for (int side = 0; side < 2; side++) {
                    fx_tensor *t = ka_make(ka_all_dtypes[i], KA_TRANSPOSED, 2, sz, side == 1);
                    fx_ivalue tv = fx_iv_tensor_steal(t);
                    const fx_ivalue *a = side ? &scalars[k] : &tv, *b = side ? &tv : &scalars[k];
                    if (side == 0 && k == 5 && k_ops[o].rop >= FX_REF_DIV) {
                        fx_ivalue_clear(&tv);
                        continue; /* division by True is fine but dull; skip */
                    }
                    char what[128];
                    snprintf(what, sizeof what, "%s %s scalar %d side %d", k_ops[o].name,
                             fx_dtype_name(ka_all_dtypes[i]), k, side);
                    bad += !run_case(&k_ops[o], a, b, what);
                    fx_ivalue_clear(&tv);
                }
    assert_int_equal(bad, 0);
}

/* In-place: self in a strided layout, result cast back to self's dtype when allowed. */
static void test_binary_inplace(void **state) {
    (void)state;
    int64_t sz[2] = {3, 4};
    int bad = 0;
    for (int o = 0; o < NOPS; o++)
        for (int i = 0; i < KA_NDTYPES; i++)
            for (int j = 0; j < KA_NDTYPES; j++) {
                fx_dtype ds = ka_all_dtypes[i], dot = ka_all_dtypes[j];
                int layout = (i + j) % 3; /* contiguous, transposed, sliced (not expanded) */
                bool nz = k_ops[o].rop == FX_REF_TRUNC || k_ops[o].rop == FX_REF_FLOOR;
                fx_tensor *self = ka_make(ds, layout, 2, sz, 0);
                fx_tensor *other = ka_make(dot, KA_EXPANDED, 2, sz, nz);
                fx_ivalue sv = fx_iv_tensor(self), ov = fx_iv_tensor_steal(other);
                fx_dtype c = expected_compute(&k_ops[o], &sv, &ov);
                bool castable = !(fx_dtype_is_float(c) && !fx_dtype_is_float(ds)) &&
                                !(c != FX_DTYPE_BOOL && ds == FX_DTYPE_BOOL);
                if (refused(&k_ops[o], &sv, &ov, c) || !castable) {
                    fx_ivalue_clear(&sv), fx_ivalue_clear(&ov), fx_tensor_release(self);
                    continue;
                }
                fx_tensor *exp = ka_empty(ds, 2, sz);
                fx_ref_binary(k_ops[o].rop, c, &sv, &ov, k_ops[o].alpha, false, exp);
                fx_err err;
                fx_ivalue mode = k_ops[o].mode ? fx_iv_str(k_ops[o].mode) : fx_iv_none();
                fx_tensor *res;
                int rc = k_ops[o].mode ? ka_call(k_ops[o].id_, &res, &err, 3, &sv, &ov, &mode)
                                       : ka_call(k_ops[o].id_, &res, &err, 2, &sv, &ov);
                char what[128];
                snprintf(what, sizeof what, "%s_ %s %s", k_ops[o].name, fx_dtype_name(ds),
                         fx_dtype_name(dot));
                if (rc) {
                    printf("%s: %s\n", what, err.msg);
                    bad++;
                } else {
                    bad += res != self;
                    bad += !ka_close(self, exp, ka_rtol(c) + ka_rtol(ds), 0, what);
                }
                fx_tensor_release(res);
                fx_tensor_release(exp);
                fx_ivalue_clear(&mode), fx_ivalue_clear(&sv), fx_ivalue_clear(&ov);
                fx_tensor_release(self);
            }
    assert_int_equal(bad, 0);
}

/* torch.result_type through the ops, as PyTorch documents it. */
static void test_promotion(void **state) {
    (void)state;
    fx_err err;
    int64_t n = 3;
    struct {
        fx_dtype a;
        int a_ndim;
        fx_ivalue b;
        fx_dtype b_dt;
        int b_ndim;
        fx_op_id op;
        fx_dtype want;
    } cases[] = {
        {FX_DTYPE_F16, 1, fx_iv_int(9), 0, -1, FX_OP_MUL_TENSOR, FX_DTYPE_F16},
        {FX_DTYPE_I64, 1, fx_iv_float(2.5), 0, -1, FX_OP_MUL_TENSOR, FX_DTYPE_F32},
        {FX_DTYPE_BOOL, 1, fx_iv_int(1), 0, -1, FX_OP_ADD_TENSOR, FX_DTYPE_I64},
        {FX_DTYPE_BOOL, 1, fx_iv_bool(true), 0, -1, FX_OP_ADD_TENSOR, FX_DTYPE_BOOL},
        {FX_DTYPE_U8, 1, fx_iv_int(300), 0, -1, FX_OP_ADD_TENSOR, FX_DTYPE_U8},
        {FX_DTYPE_I32, 1, fx_iv_none(), FX_DTYPE_I64, 1, FX_OP_ADD_TENSOR, FX_DTYPE_I64},
        {FX_DTYPE_I32, 1, fx_iv_none(), FX_DTYPE_I64, 0, FX_OP_ADD_TENSOR, FX_DTYPE_I32},
        {FX_DTYPE_U8, 1, fx_iv_none(), FX_DTYPE_I8, 1, FX_OP_ADD_TENSOR, FX_DTYPE_I16},
        {FX_DTYPE_F16, 1, fx_iv_none(), FX_DTYPE_BF16, 1, FX_OP_ADD_TENSOR, FX_DTYPE_F32},
        {FX_DTYPE_F32, 1, fx_iv_none(), FX_DTYPE_F64, 0, FX_OP_ADD_TENSOR, FX_DTYPE_F32},
        {FX_DTYPE_I64, 1, fx_iv_none(), FX_DTYPE_F64, 0, FX_OP_ADD_TENSOR, FX_DTYPE_F64},
        {FX_DTYPE_BOOL, 1, fx_iv_none(), FX_DTYPE_I32, 0, FX_OP_ADD_TENSOR, FX_DTYPE_I32},
        {FX_DTYPE_I64, 1, fx_iv_int(2), 0, -1, FX_OP_DIV_TENSOR, FX_DTYPE_F32},
        {FX_DTYPE_I32, 1, fx_iv_none(), FX_DTYPE_I32, 1, FX_OP_DIV_TENSOR, FX_DTYPE_F32},
        {FX_DTYPE_F16, 1, fx_iv_int(2), 0, -1, FX_OP_DIV_TENSOR, FX_DTYPE_F16},
        {FX_DTYPE_I32, 0, fx_iv_float(1.5), 0, -1, FX_OP_MUL_TENSOR, FX_DTYPE_F32},
        {FX_DTYPE_F64, 0, fx_iv_none(), FX_DTYPE_F16, 1, FX_OP_MUL_TENSOR, FX_DTYPE_F16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fx_tensor *a = ka_make(cases[i].a, KA_CONTIG, cases[i].a_ndim, &n, 1);
        fx_ivalue av = fx_iv_tensor_steal(a), bv = cases[i].b;
        if (cases[i].b_ndim >= 0)
            bv = fx_iv_tensor_steal(ka_make(cases[i].b_dt, KA_CONTIG, cases[i].b_ndim, &n, 1));
        fx_tensor *r;
        assert_int_equal(ka_call(cases[i].op, &r, &err, 2, &av, &bv), FX_OK);
        if (r->dtype != cases[i].want) printf("promotion case %zu: %s\n", i, fx_dtype_name(r->dtype));
        assert_int_equal(r->dtype, cases[i].want);
        fx_tensor_release(r);
        fx_ivalue_clear(&av);
        fx_ivalue_clear(&bv);
    }
}

/* Values PyTorch gives, checked by hand: integer wrap, true division of ints, floor/trunc
 * signs, half rounding of scalars (add rounds 0.1 to half, mul keeps it in float). */
static void test_known_values(void **state) {
    (void)state;
    fx_err err;
    int64_t n4 = 4, n1 = 1;
    fx_tensor *r;
    double iv[] = {-7, 7, -8, 127};
    fx_ivalue x = fx_iv_tensor_steal(ka_from(FX_DTYPE_I8, 1, &n4, iv));
    fx_ivalue two = fx_iv_int(2), floor_ = fx_iv_str("floor"), trunc_ = fx_iv_str("trunc");
    assert_int_equal(ka_call(FX_OP_DIV_TENSOR_MODE, &r, &err, 3, &x, &two, &floor_), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([-4,  3, -4, 63], dtype=torch.int8)");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_DIV_TENSOR_MODE, &r, &err, 3, &x, &two, &trunc_), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([-3,  3, -4, 63], dtype=torch.int8)");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_DIV_TENSOR, &r, &err, 2, &x, &two), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([-3.5000,  3.5000, -4.0000, 63.5000])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_MUL_TENSOR, &r, &err, 2, &x, &two), FX_OK); /* 127*2 wraps */
    assert_string_equal(ka_repr(r), "tensor([-14,  14, -16,  -2], dtype=torch.int8)");
    fx_tensor_release(r);

    double fv[] = {-7.5, 7.5, -0.5, 0.5};
    fx_ivalue f = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n4, fv));
    fx_ivalue m2 = fx_iv_float(-2.0);
    assert_int_equal(ka_call(FX_OP_DIV_TENSOR_MODE, &r, &err, 3, &f, &m2, &floor_), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 3., -4.,  0., -1.])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_DIV_TENSOR_MODE, &r, &err, 3, &f, &m2, &trunc_), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 3., -3.,  0., -0.])");
    fx_tensor_release(r);

    /* 1 // 0.1 is 9 in Python and PyTorch */
    double one = 1;
    fx_ivalue o = fx_iv_tensor_steal(ka_from(FX_DTYPE_F64, 1, &n1, &one)), tenth = fx_iv_float(0.1);
    assert_int_equal(ka_call(FX_OP_DIV_TENSOR_MODE, &r, &err, 3, &o, &tenth, &floor_), FX_OK);
    assert_true(fx_ref_get(r, 0) == 9.0);
    fx_tensor_release(r);

    /* float16: x + 0.1 adds half(0.1) = 0.0999755859375; x * 0.1 multiplies by 0.1f */
    double hv = 1000;
    fx_ivalue h = fx_iv_tensor_steal(ka_from(FX_DTYPE_F16, 1, &n1, &hv));
    assert_int_equal(ka_call(FX_OP_ADD_TENSOR, &r, &err, 2, &h, &tenth), FX_OK);
    assert_true(fx_ref_get(r, 0) == 1000.0); /* 1000.0999 rounds to 1000 in half */
    fx_tensor_release(r);
    double h3v = 3;
    fx_ivalue h3 = fx_iv_tensor_steal(ka_from(FX_DTYPE_F16, 1, &n1, &h3v));
    assert_int_equal(ka_call(FX_OP_MUL_TENSOR, &r, &err, 2, &h3, &tenth), FX_OK);
    assert_true(fx_ref_get(r, 0) == (double)fx_f16_to_f32(fx_f32_to_f16(3.0f * 0.1f)));
    fx_tensor_release(r);
    /* S1 of SEEDS.md: float16 state [7, 5, 6] * [1.5, 2, -1] + [1, 2, 3], then * 9 */
    double sv[] = {7, 5, 6}, xv[] = {1.5, 2, -1}, cv[] = {1, 2, 3};
    int64_t n3 = 3;
    fx_ivalue st = fx_iv_tensor_steal(ka_from(FX_DTYPE_F16, 1, &n3, sv));
    fx_ivalue xx = fx_iv_tensor_steal(ka_from(FX_DTYPE_F16, 1, &n3, xv));
    fx_ivalue cc = fx_iv_tensor_steal(ka_from(FX_DTYPE_F16, 1, &n3, cv)), nine = fx_iv_int(9);
    assert_int_equal(ka_call(FX_OP_MUL__TENSOR, &r, &err, 2, &st, &xx), FX_OK);
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_ADD__TENSOR, &r, &err, 2, &st, &cc), FX_OK);
    fx_tensor_release(r);
    assert_string_equal(ka_repr(st.u.t), "tensor([11.5000, 12.0000, -3.0000], dtype=torch.float16)");
    assert_int_equal(ka_call(FX_OP_MUL_TENSOR, &r, &err, 2, &st, &nine), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([103.5000, 108.0000, -27.0000], dtype=torch.float16)");
    fx_tensor_release(r);
    fx_ivalue *all[] = {&x, &floor_, &trunc_, &f, &o, &h, &h3, &st, &xx, &cc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) fx_ivalue_clear(all[i]);
}

/* Alpha: scaling, integer alpha, the bool and float-alpha errors. */
static void test_alpha(void **state) {
    (void)state;
    fx_err err;
    int64_t n = 3;
    fx_tensor *r;
    double a[] = {1, 2, 3}, b[] = {10, 20, 30};
    fx_ivalue x = fx_iv_tensor_steal(ka_from(FX_DTYPE_I64, 1, &n, a));
    fx_ivalue y = fx_iv_tensor_steal(ka_from(FX_DTYPE_I64, 1, &n, b));
    fx_ivalue al = fx_iv_int(2), alf = fx_iv_float(0.5), alb = fx_iv_bool(true);
    assert_int_equal(ka_call(FX_OP_ADD_TENSOR, &r, &err, 3, &x, &y, &al), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([21, 42, 63])");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_SUB_TENSOR, &r, &err, 3, &x, &y, &al), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([-19, -38, -57])");
    fx_tensor_release(r);
    KA_ERR("For integral input tensors, argument alpha must not be a floating point number.",
           ka_call(FX_OP_ADD_TENSOR, &r, &err, 3, &x, &y, &alf));
    KA_ERR("Boolean alpha only supported for Boolean results.",
           ka_call(FX_OP_ADD_TENSOR, &r, &err, 3, &x, &y, &alb));
    fx_ivalue fx_ = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n, a));
    assert_int_equal(ka_call(FX_OP_ADD_TENSOR, &r, &err, 3, &fx_, &y, &alf), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([ 6., 12., 18.])");
    fx_tensor_release(r);
    fx_ivalue_clear(&x), fx_ivalue_clear(&y), fx_ivalue_clear(&fx_);
}

static void test_neg(void **state) {
    (void)state;
    fx_err err;
    int64_t sz[2] = {3, 4};
    int bad = 0;
    for (int i = 0; i < KA_NDTYPES - 1; i++)
        for (int l = 0; l < KA_NLAYOUTS; l++) {
            fx_tensor *t = ka_make(ka_all_dtypes[i], l, 2, sz, 0), *r;
            fx_ivalue tv = fx_iv_tensor_steal(t);
            assert_int_equal(ka_call(FX_OP_NEG, &r, &err, 1, &tv), FX_OK);
            fx_tensor *exp = ka_empty(ka_all_dtypes[i], 2, sz);
            fx_ref_neg(tv.u.t, exp);
            bad += !ka_close(r, exp, 0, 0, "neg");
            fx_tensor_release(r);
            fx_tensor_release(exp);
            fx_ivalue_clear(&tv);
        }
    assert_int_equal(bad, 0);
    /* neg_ in place on a sliced view */
    fx_tensor *t = ka_make(FX_DTYPE_F16, KA_SLICED, 2, sz, 0), *r;
    fx_tensor *exp = ka_empty(FX_DTYPE_F16, 2, sz);
    fx_ref_neg(t, exp);
    fx_ivalue tv = fx_iv_tensor(t);
    assert_int_equal(ka_call(FX_OP_NEG_, &r, &err, 1, &tv), FX_OK);
    assert_ptr_equal(r, t);
    assert_true(ka_close(t, exp, 0, 0, "neg_"));
    fx_tensor_release(r), fx_tensor_release(exp), fx_ivalue_clear(&tv), fx_tensor_release(t);
    /* bool */
    const char *msg = "Negation, the `-` operator, on a bool tensor is not supported. If you are "
                      "trying to invert a mask, use the `~` or `logical_not()` operator instead.";
    fx_ivalue bv = fx_iv_tensor_steal(ka_make(FX_DTYPE_BOOL, KA_CONTIG, 2, sz, 0));
    KA_ERR(msg, ka_call(FX_OP_NEG, &r, &err, 1, &bv));
    KA_ERR(msg, ka_call(FX_OP_NEG_, &r, &err, 1, &bv));
    fx_ivalue ev = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_EXPANDED, 2, sz, 0));
    KA_ERR("unsupported operation: more than one element of the written-to tensor refers to a "
           "single memory location. Please clone() the tensor before performing the operation.",
           ka_call(FX_OP_NEG_, &r, &err, 1, &ev));
    fx_ivalue_clear(&bv), fx_ivalue_clear(&ev);
}

/* Every error of the binary ops, worded as PyTorch words it. */
static void test_binary_errors(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t s3 = 3, s23[2] = {2, 3}, s4 = 4, s33[2] = {3, 3};
    fx_ivalue b3 = fx_iv_tensor_steal(ka_make(FX_DTYPE_BOOL, KA_CONTIG, 1, &s3, 0));
    fx_ivalue f3 = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &s3, 1));
    fx_ivalue f4 = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &s4, 1));
    fx_ivalue f23 = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 2, s23, 1));
    fx_ivalue i3 = fx_iv_tensor_steal(ka_make(FX_DTYPE_I64, KA_CONTIG, 1, &s3, 0));
    fx_ivalue i8 = fx_iv_tensor_steal(ka_make(FX_DTYPE_I8, KA_CONTIG, 1, &s3, 0));
    fx_ivalue e23 = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_EXPANDED, 2, s23, 1));
    fx_ivalue one = fx_iv_int(1), half_ = fx_iv_float(0.5), zero = fx_iv_int(0);
    fx_ivalue bad_mode = fx_iv_str("round"), floor_ = fx_iv_str("floor");

    KA_ERR("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
           "or `logical_xor()` operator instead.",
           ka_call(FX_OP_SUB_TENSOR, &r, &err, 2, &b3, &b3));
    KA_ERR("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
           "to invert a mask, use the `~` or `logical_not()` operator instead.",
           ka_call(FX_OP_SUB_TENSOR, &r, &err, 2, &b3, &one));
    KA_ERR("The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
           "dimension 0",
           ka_call(FX_OP_ADD_TENSOR, &r, &err, 2, &f3, &f4));
    KA_ERR("output with shape [3] doesn't match the broadcast shape [2, 3]",
           ka_call(FX_OP_ADD__TENSOR, &r, &err, 2, &f3, &f23));
    KA_ERR("result type Float can't be cast to the desired output type Long",
           ka_call(FX_OP_ADD__TENSOR, &r, &err, 2, &i3, &half_));
    KA_ERR("result type Float can't be cast to the desired output type Long",
           ka_call(FX_OP_DIV__TENSOR, &r, &err, 2, &i3, &one));
    KA_ERR("result type Long can't be cast to the desired output type Bool",
           ka_call(FX_OP_MUL__TENSOR, &r, &err, 2, &b3, &i3));
    KA_ERR("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'",
           ka_call(FX_OP_DIV_TENSOR_MODE, &r, &err, 3, &f3, &f3, &bad_mode));
    KA_ERR("ZeroDivisionError", ka_call(FX_OP_DIV_TENSOR_MODE, &r, &err, 3, &i8, &zero, &floor_));
    KA_ERR("\"div_floor_cpu\" not implemented for 'Bool'",
           ka_call(FX_OP_DIV_TENSOR_MODE, &r, &err, 3, &b3, &b3, &floor_));
    KA_ERR("unsupported operation: more than one element of the written-to tensor refers to a "
           "single memory location. Please clone() the tensor before performing the operation.",
           ka_call(FX_OP_ADD__TENSOR, &r, &err, 2, &e23, &one));
    /* x.add_(x.t()) and x.add_(x[0]) overlap partially */
    fx_tensor *sq = ka_make(FX_DTYPE_F32, KA_CONTIG, 2, s33, 0), *sqt, *row;
    int64_t tst[2] = {1, 3}, rst = 1;
    assert_int_equal(fx_tensor_as_strided(sq, 2, s33, tst, 0, &sqt, &err), FX_OK);
    assert_int_equal(fx_tensor_as_strided(sq, 1, &s3, &rst, 0, &row, &err), FX_OK);
    fx_ivalue sqv = fx_iv_tensor_steal(sq), sqtv = fx_iv_tensor_steal(sqt), rowv = fx_iv_tensor_steal(row);
    const char *partial = "unsupported operation: some elements of the input tensor and the "
                          "written-to tensor refer to a single memory location. Please clone() "
                          "the tensor before performing the operation.";
    KA_ERR(partial, ka_call(FX_OP_ADD__TENSOR, &r, &err, 2, &sqv, &sqtv));
    KA_ERR(partial, ka_call(FX_OP_ADD__TENSOR, &r, &err, 2, &sqv, &rowv));
    /* x.add_(x) is fine: full overlap */
    assert_int_equal(ka_call(FX_OP_ADD__TENSOR, &r, &err, 2, &sqv, &sqv), FX_OK);
    fx_tensor_release(r);
    fx_ivalue *all[] = {&b3, &f3, &f4, &f23, &i3, &i8, &e23, &bad_mode, &floor_, &sqv, &sqtv, &rowv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) fx_ivalue_clear(all[i]);
}

/* Output strides follow the inputs as TensorIterator lays them out. */
static void test_output_layout(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    fx_ivalue one = fx_iv_int(1);
    /* zeros(2, 3).t() + 1 has strides (1, 3) */
    fx_tensor *base = ka_make(FX_DTYPE_F32, KA_CONTIG, 2, s23, 0), *t;
    int64_t tst[2] = {1, 3};
    assert_int_equal(fx_tensor_as_strided(base, 2, s32, tst, 0, &t, &err), FX_OK);
    fx_ivalue tv = fx_iv_tensor_steal(t);
    assert_int_equal(ka_call(FX_OP_ADD_TENSOR, &r, &err, 2, &tv, &one), FX_OK);
    assert_int_equal(r->strides[0], 1);
    assert_int_equal(r->strides[1], 3);
    fx_tensor_release(r);
    /* zeros(4, 3)[::2] + 1 is contiguous */
    int64_t s43[2] = {4, 3}, sst[2] = {6, 1};
    fx_tensor *b2 = ka_make(FX_DTYPE_F32, KA_CONTIG, 2, s43, 0), *sl;
    assert_int_equal(fx_tensor_as_strided(b2, 2, s23, sst, 0, &sl, &err), FX_OK);
    fx_ivalue slv = fx_iv_tensor_steal(sl);
    assert_int_equal(ka_call(FX_OP_ADD_TENSOR, &r, &err, 2, &slv, &one), FX_OK);
    assert_int_equal(r->strides[0], 3);
    assert_int_equal(r->strides[1], 1);
    assert_true(fx_tensor_is_contiguous(r));
    fx_tensor_release(r);
    /* neg of a transposed tensor keeps the transposed layout (empty_like) */
    assert_int_equal(ka_call(FX_OP_NEG, &r, &err, 1, &tv), FX_OK);
    assert_int_equal(r->strides[0], 1);
    assert_int_equal(r->strides[1], 3);
    fx_tensor_release(r);
    fx_tensor_release(base), fx_tensor_release(b2), fx_ivalue_clear(&tv), fx_ivalue_clear(&slv);
}

/* Meta tensors: shapes and dtypes only, no kernel. */
static void test_meta(void **state) {
    (void)state;
    fx_err err;
    int64_t s23[2] = {2, 3}, s3 = 3;
    fx_tensor *m, *c;
    assert_int_equal(fx_tensor_empty(2, s23, FX_DTYPE_F16, FX_DEVICE_META, &m, &err), FX_OK);
    assert_int_equal(fx_tensor_empty(1, &s3, FX_DTYPE_F32, FX_DEVICE_CPU, &c, &err), FX_OK);
    fx_ivalue mv = fx_iv_tensor_steal(m), cv = fx_iv_tensor_steal(c), nine = fx_iv_int(9);
    fx_tensor *r;
    assert_int_equal(ka_call(FX_OP_MUL_TENSOR, &r, &err, 2, &mv, &nine), FX_OK);
    assert_true(fx_tensor_is_meta(r));
    assert_int_equal(r->dtype, FX_DTYPE_F16);
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_ADD_TENSOR, &r, &err, 2, &mv, &cv), FX_OK);
    assert_true(fx_tensor_is_meta(r));
    assert_int_equal(r->dtype, FX_DTYPE_F32);
    assert_string_equal(ka_repr(r), "tensor(..., device='meta', size=(2, 3))");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_ADD__TENSOR, &r, &err, 2, &mv, &nine), FX_OK);
    assert_ptr_equal(r, mv.u.t);
    fx_tensor_release(r);
    fx_ivalue_clear(&mv), fx_ivalue_clear(&cv);
}

/* A large contiguous op takes the flat fast path and still matches the reference. */
static void test_large(void **state) {
    (void)state;
    int64_t n = 100003;
    fx_tensor *a = ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &n, 0);
    fx_tensor *b = ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &n, 1);
    fx_ivalue av = fx_iv_tensor_steal(a), bv = fx_iv_tensor_steal(b);
    for (int o = 0; o < NOPS; o++) assert_true(run_case(&k_ops[o], &av, &bv, k_ops[o].name));
    fx_ivalue_clear(&av), fx_ivalue_clear(&bv);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary_dtypes_layouts),
        cmocka_unit_test(test_binary_broadcast),
        cmocka_unit_test(test_binary_scalars),
        cmocka_unit_test(test_binary_inplace),
        cmocka_unit_test(test_promotion),
        cmocka_unit_test(test_known_values),
        cmocka_unit_test(test_alpha),
        cmocka_unit_test(test_neg),
        cmocka_unit_test(test_binary_errors),
        cmocka_unit_test(test_output_layout),
        cmocka_unit_test(test_meta),
        cmocka_unit_test(test_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
