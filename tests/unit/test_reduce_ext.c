/* tests/unit/test_reduce_ext.c — the reductions of issue 3: prod, amax, amin, max/min
 * (.default and .dim), argmax, argmin, all/any (.default, .dim, .dims), var/std (.correction and
 * the composite overloads), cumsum — against the references of k_ref.c over dtypes, layouts,
 * dim sets and keepdim; NaN rules; PyTorch's error messages; and the threaded paths, whose
 * results must not depend on the thread count.
 * Layer: tests (cmocka). */
#include "tests/unit/ka_util.h"

#include <omp.h>

static fx_ivalue dims_iv(int n, const int64_t *d) {
    fx_ivalue v;
    fx_err err;
    assert_int_equal(fx_iv_int_list(n, d, &v, &err), FX_OK);
    return v;
}

typedef struct red_case {
    fx_op_id id;  /* the dims form (amax, all.dims, var.correction, prod.dim_int) */
    fx_ref_redop rop;
    bool one_dim; /* takes a single int dim */
    const char *name;
} red_case;

static const red_case k_reds[] = {
    {FX_OP_PROD_DIM_INT, FX_REF_RPROD, true, "prod"},
    {FX_OP_AMAX, FX_REF_RMAX, false, "amax"},
    {FX_OP_AMIN, FX_REF_RMIN, false, "amin"},
    {FX_OP_ALL_DIMS, FX_REF_RALL, false, "all"},
    {FX_OP_ANY_DIMS, FX_REF_RANY, false, "any"},
    {FX_OP_VAR_CORRECTION, FX_REF_RVAR, false, "var"},
    {FX_OP_STD_CORRECTION, FX_REF_RSTD, false, "std"},
};
#define NREDS (int)(sizeof k_reds / sizeof k_reds[0])

static fx_dtype red_dtype(const red_case *c, fx_dtype in) {
    switch (c->rop) {
    case FX_REF_RPROD: return fx_dtype_is_float(in) ? in : FX_DTYPE_I64;
    case FX_REF_RALL:
    case FX_REF_RANY: return in == FX_DTYPE_U8 ? FX_DTYPE_U8 : FX_DTYPE_BOOL;
    default: return in;
    }
}

/* Every reduction x every dtype x every layout x several dim sets x keepdim. */
static void test_reduce_ext_sweep(void **state) {
    (void)state;
    int64_t sz[3] = {2, 3, 4};
    static const int64_t dsets[][3] = {{0, 0, 0}, {1, 0, 0}, {-1, 0, 0}, {0, 2, 0}, {2, 0, 1}};
    static const int dn[] = {1, 1, 1, 2, 3};
    int bad = 0, n = 0;
    for (int r = 0; r < NREDS; r++)
        for (int i = 0; i < KA_NDTYPES; i++)
            for (int l = 0; l < KA_NLAYOUTS; l++)
                for (int s = 0; s < 5; s++)
                    for (int keep = 0; keep < 2; keep++) {
                        const red_case *c = &k_reds[r];
                        fx_dtype dt = ka_all_dtypes[i];
                        if (c->one_dim && dn[s] != 1) continue;
                        bool var = c->rop == FX_REF_RVAR || c->rop == FX_REF_RSTD;
                        fx_tensor *x = ka_make(dt, l, 3, sz, 0);
                        fx_ivalue xv = fx_iv_tensor(x), kd = fx_iv_bool(keep);
                        fx_ivalue dv = c->one_dim ? fx_iv_int(dsets[s][0]) : dims_iv(dn[s], dsets[s]);
                        fx_ivalue corr = fx_iv_int(s % 2), none = fx_iv_none();
                        fx_err err;
                        fx_tensor *got;
                        int rc = var ? ka_call(c->id, &got, &err, 4, &xv, &dv, &corr, &kd)
                                     : ka_call(c->id, &got, &err, 3, &xv, &dv, &kd);
                        char what[128];
                        snprintf(what, sizeof what, "%s %s %s dims#%d keep %d", c->name,
                                 fx_dtype_name(dt), ka_layout_names[l], s, keep);
                        if (var && !fx_dtype_is_float(dt)) {
                            if (rc == FX_OK) bad++, fx_tensor_release(got);
                            else if (strcmp(err.msg, "std and var only support floating point "
                                                     "and complex dtypes"))
                                bad++;
                        } else if (rc) {
                            printf("%s: %s\n", what, err.msg);
                            bad++;
                        } else {
                            bool red[3] = {false, false, false};
                            for (int k = 0; k < dn[s]; k++) red[(dsets[s][k] + 3) % 3] = true;
                            fx_tensor *exp = ka_empty(red_dtype(c, dt), got->ndim, got->sizes);
                            fx_ref_reduce2(c->rop, x, red, (double)(s % 2), exp);
                            bad += !ka_close(got, exp, ka_rtol(dt) * 4, 1e-6, what);
                            int want_nd = keep ? 3 : 3 - dn[s];
                            if (got->ndim != want_nd) bad++, printf("%s: ndim %d\n", what, got->ndim);
                            fx_tensor_release(exp);
                            fx_tensor_release(got);
                            n++;
                        }
                        (void)none;
                        fx_ivalue_clear(&xv), fx_ivalue_clear(&dv);
                        fx_tensor_release(x);
                    }
    assert_int_equal(bad, 0);
    assert_true(n > 1000);
}

/* The all-dims overloads (prod, max, min, all, any, var, std defaults) give 0-dim results. */
static void test_reduce_ext_defaults(void **state) {
    (void)state;
    int64_t sz[2] = {5, 7};
    const struct {
        fx_op_id id;
        fx_ref_redop rop;
    } cs[] = {{FX_OP_PROD, FX_REF_RPROD}, {FX_OP_MAX, FX_REF_RMAX}, {FX_OP_MIN, FX_REF_RMIN},
              {FX_OP_ALL, FX_REF_RALL},   {FX_OP_ANY, FX_REF_RANY}, {FX_OP_VAR, FX_REF_RVAR},
              {FX_OP_STD, FX_REF_RSTD}};
    int bad = 0;
    bool red[2] = {true, true};
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++)
        for (int i = 0; i < KA_NDTYPES; i++) {
            fx_dtype dt = ka_all_dtypes[i];
            if ((cs[c].rop == FX_REF_RVAR || cs[c].rop == FX_REF_RSTD) && !fx_dtype_is_float(dt))
                continue;
            fx_tensor *x = ka_make(dt, KA_TRANSPOSED, 2, sz, 0);
            fx_ivalue xv = fx_iv_tensor(x);
            fx_err err;
            fx_tensor *got;
            assert_int_equal(ka_call(cs[c].id, &got, &err, 1, &xv), FX_OK);
            assert_int_equal(got->ndim, 0);
            fx_tensor *exp = ka_empty(got->dtype, 0, NULL);
            fx_ref_reduce2(cs[c].rop, x, red, 1.0, exp);
            bad += !ka_close(got, exp, ka_rtol(dt) * 4, 1e-6, "default reduction");
            fx_tensor_release(got), fx_tensor_release(exp);
            fx_ivalue_clear(&xv);
            fx_tensor_release(x);
        }
    assert_int_equal(bad, 0);
}

/* max.dim / min.dim / argmax / argmin over dtypes, layouts, each dim and the flattened form. */
static void test_argreduce_sweep(void **state) {
    (void)state;
    int64_t sz[3] = {3, 4, 5};
    int bad = 0;
    for (int i = 0; i < KA_NDTYPES; i++)
        for (int l = 0; l < KA_NLAYOUTS; l++)
            for (int d = -1; d < 3; d++)
                for (int ismax = 0; ismax < 2; ismax++) {
                    fx_dtype dt = ka_all_dtypes[i];
                    fx_tensor *x = ka_make(dt, l, 3, sz, 0);
                    /* ties are common with small integers: the first index must win */
                    fx_ivalue xv = fx_iv_tensor(x), dv = fx_iv_int(d), kd = fx_iv_bool(d == 1);
                    fx_ivalue none = fx_iv_none();
                    fx_err err;
                    fx_ivalue outs[2];
                    char what[96];
                    snprintf(what, sizeof what, "%s dim %d %s %s", ismax ? "max" : "min", d,
                             fx_dtype_name(dt), ka_layout_names[l]);
                    int64_t osz[3] = {3, 4, 5};
                    if (d >= 0) osz[d] = 1;
                    fx_tensor *ev = ka_empty(dt, 3, osz), *ei = ka_empty(FX_DTYPE_I64, 3, osz);
                    fx_ref_argreduce(ismax, x, d, ev, ei);
                    if (d >= 0) { /* max.dim: values and indices */
                        fx_ivalue args[3] = {xv, dv, kd};
                        const fx_opdef *op = fx_op_get(ismax ? FX_OP_MAX_DIM : FX_OP_MIN_DIM);
                        fx_err_clear(&err);
                        assert_int_equal(fx_dispatch(ka_eager(), op, args, outs, &err), FX_OK);
                        /* compare by element count (keepdim or not, same row-major order) */
                        fx_tensor *gv = outs[0].u.t, *gi = outs[1].u.t;
                        for (int64_t k = 0; k < fx_tensor_numel(ei); k++) {
                            double a = fx_ref_get(gv, k), b = fx_ref_get(ev, k);
                            if (!(a == b || (isnan(a) && isnan(b))) ||
                                fx_ref_get_i(gi, k) != fx_ref_get_i(ei, k)) {
                                printf("%s: element %lld\n", what, (long long)k);
                                bad++;
                                break;
                            }
                        }
                        fx_ivalue_clear(&outs[0]), fx_ivalue_clear(&outs[1]);
                    }
                    if (dt != FX_DTYPE_BOOL) { /* argmax / argmin, dim or None */
                        fx_tensor *g;
                        fx_op_id id = ismax ? FX_OP_ARGMAX : FX_OP_ARGMIN;
                        int rc = d >= 0 ? ka_call(id, &g, &err, 3, &xv, &dv, &kd)
                                        : ka_call(id, &g, &err, 2, &xv, &none);
                        if (rc) {
                            printf("%s: %s\n", what, err.msg);
                            bad++;
                        } else {
                            for (int64_t k = 0; k < fx_tensor_numel(ei); k++)
                                if (fx_ref_get_i(g, k) != fx_ref_get_i(ei, k)) {
                                    printf("%s: arg element %lld\n", what, (long long)k);
                                    bad++;
                                    break;
                                }
                            fx_tensor_release(g);
                        }
                    }
                    fx_tensor_release(ev), fx_tensor_release(ei);
                    fx_ivalue_clear(&xv);
                    fx_tensor_release(x);
                }
    assert_int_equal(bad, 0);
}

/* cumsum over dtypes, layouts, dims, the dtype argument and in place. */
static void test_cumsum_sweep(void **state) {
    (void)state;
    int64_t sz[3] = {3, 4, 5};
    int bad = 0;
    for (int i = 0; i < KA_NDTYPES; i++)
        for (int l = 0; l < KA_NLAYOUTS; l++)
            for (int d = -3; d < 3; d++) {
                fx_dtype dt = ka_all_dtypes[i];
                fx_tensor *x = ka_make(dt, l, 3, sz, 0);
                fx_ivalue xv = fx_iv_tensor(x), dv = fx_iv_int(d);
                fx_err err;
                fx_tensor *g;
                char what[96];
                snprintf(what, sizeof what, "cumsum %s %s dim %d", fx_dtype_name(dt),
                         ka_layout_names[l], d);
                assert_int_equal(ka_call(FX_OP_CUMSUM, &g, &err, 2, &xv, &dv), FX_OK);
                fx_dtype od = fx_dtype_is_float(dt) ? dt : FX_DTYPE_I64;
                fx_tensor *e = ka_empty(od, 3, sz);
                fx_ref_cumsum(x, (d + 3) % 3, e);
                bad += !ka_close(g, e, ka_rtol(dt) * 4, 1e-5, what);
                fx_tensor_release(g), fx_tensor_release(e);
                fx_ivalue_clear(&xv);
                fx_tensor_release(x);
            }
    /* dtype argument, and in place on a transposed float64 self */
    fx_tensor *x = ka_make(FX_DTYPE_I32, KA_CONTIG, 3, sz, 0);
    fx_ivalue xv = fx_iv_tensor(x), d1 = fx_iv_int(1), f64 = fx_iv_dtype(FX_DTYPE_F64);
    fx_err err;
    fx_tensor *g;
    assert_int_equal(ka_call(FX_OP_CUMSUM, &g, &err, 3, &xv, &d1, &f64), FX_OK);
    assert_int_equal(g->dtype, FX_DTYPE_F64);
    fx_tensor *e = ka_empty(FX_DTYPE_F64, 3, sz);
    fx_ref_cumsum(x, 1, e);
    bad += !ka_close(g, e, 0, 0, "cumsum dtype");
    fx_tensor_release(g), fx_tensor_release(e);
    fx_ivalue_clear(&xv), fx_tensor_release(x);
    fx_tensor *y = ka_make(FX_DTYPE_F64, KA_TRANSPOSED, 3, sz, 0);
    fx_tensor *ye = ka_empty(FX_DTYPE_F64, 3, sz);
    fx_ref_cumsum(y, 1, ye);
    fx_ivalue yv = fx_iv_tensor(y);
    assert_int_equal(ka_call(FX_OP_CUMSUM_, &g, &err, 2, &yv, &d1), FX_OK);
    assert_ptr_equal(g, y);
    bad += !ka_close(y, ye, 1e-12, 0, "cumsum_");
    fx_tensor_release(g), fx_tensor_release(ye);
    fx_ivalue_clear(&yv), fx_tensor_release(y);
    assert_int_equal(bad, 0);
}

/* The errors of PyTorch (torch 1.13 on this machine; 2.x words them the same). */
static void test_reduce_ext_errors(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t se[2] = {0, 3}, n = 2;
    fx_ivalue e = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 2, se, 0));
    fx_ivalue b = fx_iv_tensor_steal(ka_make(FX_DTYPE_BOOL, KA_CONTIG, 1, &n, 0));
    fx_ivalue i = fx_iv_tensor_steal(ka_make(FX_DTYPE_I64, KA_CONTIG, 1, &n, 0));
    fx_ivalue f = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 1, &n, 0));
    fx_ivalue d0 = fx_iv_int(0), d1 = fx_iv_int(1), d2 = fx_iv_int(2), none = fx_iv_none();
    int64_t l00[2] = {0, 0};
    fx_ivalue dup = dims_iv(2, l00), empty = dims_iv(0, NULL);
    KA_ERR("amax(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
           "reduction dim with the 'dim' argument.",
           ka_call(FX_OP_AMAX, &r, &err, 2, &e, &empty));
    KA_ERR("amax(): Expected reduction dim 0 to have non-zero size.",
           ka_call(FX_OP_AMAX, &r, &err, 2, &e, &d0));
    assert_int_equal(ka_call(FX_OP_AMAX, &r, &err, 2, &e, &d1), FX_OK); /* tensor([]) */
    assert_int_equal(fx_tensor_numel(r), 0);
    fx_tensor_release(r);
    KA_ERR("max(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
           "reduction dim with the 'dim' argument.",
           ka_call(FX_OP_MAX, &r, &err, 1, &e));
    KA_ERR("max(): Expected reduction dim 0 to have non-zero size.",
           ka_call(FX_OP_MAX_DIM, &r, &err, 2, &e, &d0));
    KA_ERR("argmax(): Expected reduction dim to be specified for input.numel() == 0.",
           ka_call(FX_OP_ARGMAX, &r, &err, 2, &e, &none));
    KA_ERR("argmin(): Expected reduction dim 0 to have non-zero size.",
           ka_call(FX_OP_ARGMIN, &r, &err, 2, &e, &d0));
    KA_ERR("\"argmax_cpu\" not implemented for 'Bool'", ka_call(FX_OP_ARGMAX, &r, &err, 1, &b));
    KA_ERR("std and var only support floating point and complex dtypes",
           ka_call(FX_OP_VAR, &r, &err, 1, &i));
    KA_ERR("std and var only support floating point and complex dtypes",
           ka_call(FX_OP_STD_CORRECTION, &r, &err, 1, &b));
    KA_ERR("dim 0 appears multiple times in the list of dims",
           ka_call(FX_OP_AMAX, &r, &err, 2, &f, &dup));
    KA_ERR("Dimension out of range (expected to be in range of [-1, 0], but got 2)",
           ka_call(FX_OP_AMAX, &r, &err, 2, &f, &d2));
    KA_ERR("Dimension out of range (expected to be in range of [-1, 0], but got 1)",
           ka_call(FX_OP_MAX_DIM, &r, &err, 2, &f, &d1));
    KA_ERR("Dimension out of range (expected to be in range of [-1, 0], but got 1)",
           ka_call(FX_OP_CUMSUM, &r, &err, 2, &i, &d1));
    KA_ERR("Dimension out of range (expected to be in range of [-1, 0], but got 2)",
           ka_call(FX_OP_PROD_DIM_INT, &r, &err, 2, &f, &d2));
    fx_ivalue *all[] = {&e, &b, &i, &f, &dup, &empty};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fx_ivalue_clear(all[k]);
}

/* Values and dtypes PyTorch gives (torch 1.13 on this machine). */
static void test_reduce_ext_known(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *r;
    int64_t n3 = 3, n2 = 2;
    double nv[] = {1, NAN, 3};
    fx_ivalue x = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n3, nv));
    fx_ivalue d0 = fx_iv_int(0);
    fx_ivalue outs[2];
    fx_ivalue args[3] = {x, d0, {0}};
    assert_int_equal(fx_dispatch(ka_eager(), fx_op_get(FX_OP_MAX_DIM), args, outs, &err), FX_OK);
    assert_string_equal(ka_repr(outs[0].u.t), "tensor(nan)");
    assert_string_equal(ka_repr(outs[1].u.t), "tensor(1)");
    fx_ivalue_clear(&outs[0]), fx_ivalue_clear(&outs[1]);
    double tv[] = {3, 1, 1};
    fx_ivalue t = fx_iv_tensor_steal(ka_from(FX_DTYPE_I64, 1, &n3, tv));
    assert_int_equal(ka_call(FX_OP_ARGMIN, &r, &err, 1, &t), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(1)");
    fx_tensor_release(r);
    double bv[] = {1, 0};
    fx_ivalue b = fx_iv_tensor_steal(ka_from(FX_DTYPE_BOOL, 1, &n2, bv));
    fx_ivalue u = fx_iv_tensor_steal(ka_from(FX_DTYPE_U8, 1, &n2, bv));
    assert_int_equal(ka_call(FX_OP_PROD, &r, &err, 1, &b), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(0)");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_ALL, &r, &err, 1, &u), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(0, dtype=torch.uint8)");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_AMAX, &r, &err, 1, &b), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(True)");
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_CUMSUM, &r, &err, 2, &b, &d0), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([1, 1])");
    fx_tensor_release(r);
    int64_t se[2] = {0, 3};
    fx_ivalue e = fx_iv_tensor_steal(ka_make(FX_DTYPE_F32, KA_CONTIG, 2, se, 0));
    assert_int_equal(ka_call(FX_OP_PROD, &r, &err, 1, &e), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(1.)");
    fx_tensor_release(r);
    double one = 1;
    int64_t n1 = 1;
    fx_ivalue o = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n1, &one));
    assert_int_equal(ka_call(FX_OP_VAR, &r, &err, 1, &o), FX_OK); /* 0 / 0 */
    assert_string_equal(ka_repr(r), "tensor(nan)");
    fx_tensor_release(r);
    double fv[] = {1.5, -2.0};
    fx_ivalue f = fx_iv_tensor_steal(ka_from(FX_DTYPE_F32, 1, &n2, fv));
    fx_ivalue two = fx_iv_int(2), none = fx_iv_none(), kd = fx_iv_bool(false);
    assert_int_equal(ka_call(FX_OP_STD_CORRECTION, &r, &err, 4, &f, &d0, &two, &kd), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(inf)"); /* m2 / max(0, 2 - 2) */
    fx_tensor_release(r);
    assert_int_equal(ka_call(FX_OP_VAR_CORRECTION, &r, &err, 2, &f, &none), FX_OK);
    assert_string_equal(ka_repr(r), "tensor(6.1250)");
    fx_tensor_release(r);
    /* var.dim(x, 0, unbiased=False) is var.correction(correction=0) */
    fx_ivalue dl = dims_iv(1, (int64_t[]){0}), unb = fx_iv_bool(false), keep = fx_iv_bool(true);
    assert_int_equal(ka_call(FX_OP_VAR_DIM, &r, &err, 4, &f, &dl, &unb, &keep), FX_OK);
    assert_string_equal(ka_repr(r), "tensor([3.0625])");
    fx_tensor_release(r);
    fx_ivalue *all[] = {&x, &t, &b, &u, &e, &o, &f, &dl};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) fx_ivalue_clear(all[k]);
}

/* Threads: a full reduction (fixed chunks) and kept-dim reductions give the same bits with 1
 * and 4 threads, and match the reference. */
static void test_reduce_ext_threads(void **state) {
    (void)state;
    int64_t big[1] = {300001}, mat[2] = {700, 300};
    fx_tensor *xs[2] = {ka_make(FX_DTYPE_F32, KA_SLICED, 1, big, 0),
                        ka_make(FX_DTYPE_F32, KA_TRANSPOSED, 2, mat, 0)};
    const fx_op_id ops[] = {FX_OP_SUM, FX_OP_PROD, FX_OP_MAX, FX_OP_VAR, FX_OP_ARGMAX, FX_OP_ANY};
    for (int t = 0; t < 2; t++)
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
            for (int withdim = 0; withdim < 1 + (t == 1); withdim++) {
                fx_ivalue xv = fx_iv_tensor(xs[t]), dv = dims_iv(1, (int64_t[]){1}),
                          d1 = fx_iv_int(1);
                fx_op_id id = ops[o];
                if (withdim) {
                    id = id == FX_OP_SUM    ? FX_OP_SUM_DIM_INTLIST
                         : id == FX_OP_PROD ? FX_OP_PROD_DIM_INT
                         : id == FX_OP_MAX  ? FX_OP_AMAX
                         : id == FX_OP_VAR  ? FX_OP_VAR_CORRECTION
                         : id == FX_OP_ANY  ? FX_OP_ANY_DIM
                                            : id;
                }
                bool intdim = id == FX_OP_PROD_DIM_INT || id == FX_OP_ARGMAX || id == FX_OP_ANY_DIM;
                fx_err err;
                fx_tensor *r1, *r2;
                omp_set_num_threads(1);
                int rc1 = withdim ? ka_call(id, &r1, &err, 2, &xv, intdim ? &d1 : &dv)
                                  : ka_call(id, &r1, &err, 1, &xv);
                assert_int_equal(rc1, FX_OK);
                omp_set_num_threads(4);
                int rc2 = withdim ? ka_call(id, &r2, &err, 2, &xv, intdim ? &d1 : &dv)
                                  : ka_call(id, &r2, &err, 1, &xv);
                assert_int_equal(rc2, FX_OK);
                omp_set_num_threads(omp_get_num_procs());
                size_t nb = (size_t)fx_tensor_numel(r1) * fx_dtype_size(r1->dtype);
                if (memcmp(fx_tensor_data(r1), fx_tensor_data(r2), nb))
                    fail_msg("%s differs between 1 and 4 threads", fx_op_get(id)->qualname);
                if (id == FX_OP_SUM) {
                    bool red[2] = {true, true};
                    fx_tensor *e = ka_empty(FX_DTYPE_F32, 0, NULL);
                    fx_ref_reduce(xs[t], red, false, e);
                    assert_true(ka_close(r1, e, 1e-6, 0, "big sum"));
                    fx_tensor_release(e);
                }
                fx_tensor_release(r1), fx_tensor_release(r2);
                fx_ivalue_clear(&xv), fx_ivalue_clear(&dv);
            }
    fx_tensor_release(xs[0]), fx_tensor_release(xs[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reduce_ext_sweep),   cmocka_unit_test(test_reduce_ext_defaults),
        cmocka_unit_test(test_argreduce_sweep),    cmocka_unit_test(test_cumsum_sweep),
        cmocka_unit_test(test_reduce_ext_errors),  cmocka_unit_test(test_reduce_ext_known),
        cmocka_unit_test(test_reduce_ext_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
