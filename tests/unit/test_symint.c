/* tests/unit/test_symint.c — core/symint.c and core/shape_env.c: canonical forms and sympy
 * printing of symbolic sizes, value ranges, guards, replacements, unbacked symbols, the size
 * type, and out-of-memory behaviour.
 * Layer: tests (cmocka, links libfxdb.a). Expected strings are what sympy 1.14's str() prints
 * for the same expressions with torch's FloorDiv printer (generated once with python3-sympy). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/fx_alloc.h"
#include "core/symint.h"

typedef struct fixture {
    fx_shape_env *env;
    const fx_sym *s0, *s1, *s2;
} fixture;

static const fx_vr SIZE = {2, FX_INT_OO};

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    fx_err err;
    fx_err_clear(&err);
    f->env = fx_shape_env_new(&err);
    if (!f->env) return -1;
    if (fx_shape_env_create_symbol(f->env, 8, SIZE, true, "x.size()[0]", &f->s0, &err) ||
        fx_shape_env_create_symbol(f->env, 8, SIZE, true, "y.size()[0]", &f->s1, &err) ||
        fx_shape_env_create_symbol(f->env, 5, SIZE, true, "z.size()[0]", &f->s2, &err))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    fx_shape_env_release(f->env);
    free(f);
    return 0;
}

static void expect_str(const fx_sym *e, const char *want) {
    char buf[256];
    assert_string_equal(fx_sym_str(e, buf, sizeof buf), want);
}

static const fx_sym *I(fixture *f, int64_t v) { return fx_sym_int(f->env, v); }

static void test_printing(void **state) {
    fixture *f = *state;
    const fx_sym *s0 = f->s0, *s1 = f->s1, *s2 = f->s2;
    expect_str(s0, "s0");
    expect_str(fx_sym_add(s0, I(f, 1)), "s0 + 1");
    expect_str(fx_sym_sub(I(f, 1), s0), "1 - s0");
    expect_str(fx_sym_sub(fx_sym_sub(I(f, 2), s0), s1), "-s0 - s1 + 2");
    expect_str(fx_sym_sub(s1, s0), "-s0 + s1");
    expect_str(fx_sym_mul(fx_sym_mul(I(f, 2), s0), s1), "2*s0*s1");
    expect_str(fx_sym_mul(s0, s0), "s0**2");
    expect_str(fx_sym_floordiv(s0, I(f, 2)), "(s0//2)");
    expect_str(fx_sym_mul(s1, fx_sym_floordiv(s0, I(f, 2))), "s1*((s0//2))");
    expect_str(fx_sym_sub(fx_sym_add(fx_sym_mul(I(f, -2), s0), fx_sym_mul(s1, s2)), I(f, 3)),
               "-2*s0 + s1*s2 - 3");
    expect_str(fx_sym_sub(fx_sym_mul(fx_sym_mul(s0, s0), s1), fx_sym_mul(s0, fx_sym_mul(s1, s1))),
               "s0**2*s1 - s0*s1**2");
    expect_str(fx_sym_mul(I(f, 3), fx_sym_floordiv(fx_sym_add(s0, I(f, 1)), I(f, 2))),
               "3*(((s0 + 1)//2))");
    expect_str(fx_sym_floordiv(fx_sym_mul(I(f, 2), s0), s1), "((2*s0)//s1)");
    expect_str(fx_sym_sub(I(f, 1), fx_sym_mul(I(f, 2), s0)), "1 - 2*s0");
    expect_str(fx_sym_sub(I(f, 1), fx_sym_mul(s0, s1)), "-s0*s1 + 1");
    expect_str(fx_sym_neg(s0), "-s0");
    expect_str(fx_sym_sub(I(f, 3), fx_sym_mul(s0, s0)), "3 - s0**2");
    expect_str(fx_sym_add(fx_sym_mul(s0, fx_sym_max(s0, s1)), I(f, 1)), "s0*Max(s0, s1) + 1");
    const fx_sym *h = fx_sym_floordiv(s0, I(f, 2));
    expect_str(fx_sym_mul(h, h), "((s0//2))**2");
    expect_str(fx_sym_sub(fx_sym_max(s1, fx_sym_add(s0, I(f, 1))), s2), "-s2 + Max(s1, s0 + 1)");
    expect_str(fx_sym_min(s0, fx_sym_mul(I(f, 2), s1)), "Min(s0, 2*s1)");
    expect_str(fx_sym_sub(fx_sym_mul(fx_sym_mul(s0, s1), s2), I(f, 1)), "s0*s1*s2 - 1");
    expect_str(fx_sym_mod(s0, I(f, 3)), "Mod(s0, 3)");
    expect_str(fx_sym_max(s1, s0), "Max(s0, s1)");
    expect_str(fx_sym_rel(FX_SYM_EQ, s0, I(f, 4)), "Eq(s0, 4)");
    expect_str(fx_sym_rel(FX_SYM_NE, s0, s1), "Ne(s0, s1)");
    expect_str(fx_sym_rel(FX_SYM_LT, s0, I(f, 10)), "s0 < 10");
    expect_str(fx_sym_rel(FX_SYM_GE, fx_sym_mul(I(f, 2), s0), I(f, 64)), "2*s0 >= 64");
    expect_str(fx_sym_not(fx_sym_rel(FX_SYM_LT, s0, I(f, 10))), "s0 >= 10");
}

static void test_canonical(void **state) {
    fixture *f = *state;
    const fx_sym *s0 = f->s0, *s1 = f->s1, *s2 = f->s2;
    /* equal expressions are one node */
    assert_ptr_equal(fx_sym_add(fx_sym_add(s0, I(f, 1)), s1),
                     fx_sym_add(s1, fx_sym_add(I(f, 1), s0)));
    assert_ptr_equal(fx_sym_mul(s0, s1), fx_sym_mul(s1, s0));
    assert_ptr_equal(fx_sym_mul(fx_sym_add(s0, s1), fx_sym_sub(s0, s1)),
                     fx_sym_sub(fx_sym_mul(s0, s0), fx_sym_mul(s1, s1)));
    assert_ptr_equal(fx_sym_sub(s0, s0), I(f, 0));
    assert_ptr_equal(fx_sym_max(s0, s1), fx_sym_max(s1, fx_sym_max(s0, s1)));
    /* FloorDiv / Mod simplification (torch.utils._sympy.functions) */
    assert_ptr_equal(fx_sym_floordiv(fx_sym_mul(I(f, 4), s0), I(f, 2)), fx_sym_mul(I(f, 2), s0));
    expect_str(fx_sym_floordiv(fx_sym_add(fx_sym_mul(I(f, 2), s0), s1), I(f, 2)), "s0 + (s1//2)");
    expect_str(fx_sym_floordiv(fx_sym_floordiv(s0, I(f, 2)), I(f, 3)), "(s0//6)");
    assert_ptr_equal(fx_sym_floordiv(fx_sym_mul(s0, s1), s0), s1);
    expect_str(fx_sym_floordiv(fx_sym_mul(I(f, 6), s0), I(f, 4)), "((3*s0)//2)");
    assert_ptr_equal(fx_sym_floordiv(I(f, -7), I(f, 2)), I(f, -4)); /* Python's floor */
    assert_ptr_equal(fx_sym_mod(I(f, -7), I(f, 3)), I(f, 2));
    assert_ptr_equal(fx_sym_mod(fx_sym_add(fx_sym_mul(I(f, 2), s0), I(f, 1)), I(f, 2)), I(f, 1));
    assert_ptr_equal(fx_sym_mod(fx_sym_mul(s0, s1), s1), I(f, 0));
    assert_true(fx_sym_is_error(fx_sym_floordiv(s0, I(f, 0))));
    /* Max / Min with sympy's knowledge that sizes are positive integers */
    assert_ptr_equal(fx_sym_max(s0, I(f, 1)), s0);
    expect_str(fx_sym_max(s0, I(f, 2)), "Max(2, s0)");
    assert_ptr_equal(fx_sym_max(s0, fx_sym_add(s0, I(f, 1))), fx_sym_add(s0, I(f, 1)));
    assert_ptr_equal(fx_sym_min(s0, I(f, 1)), I(f, 1));
    /* relations that decide themselves */
    assert_int_equal(fx_sym_kind_of(fx_sym_rel(FX_SYM_LT, s0, fx_sym_add(s0, I(f, 1)))),
                     FX_SYM_BOOL);
    assert_int_equal(fx_sym_const_value(fx_sym_rel(FX_SYM_GT, s0, I(f, 0))), 1);
    assert_int_equal(fx_sym_const_value(fx_sym_rel(FX_SYM_EQ, s2, fx_sym_add(s2, I(f, 3)))), 0);
    assert_ptr_equal(fx_sym_not(fx_sym_rel(FX_SYM_EQ, s0, s1)), fx_sym_rel(FX_SYM_NE, s0, s1));
}

static void expect_vr(fixture *f, const fx_sym *e, const char *want) {
    fx_strbuf sb = FX_STRBUF_INIT;
    fx_vr_format(&sb, fx_shape_env_bound(f->env, e));
    assert_string_equal(fx_strbuf_cstr(&sb), want);
    fx_strbuf_free(&sb);
}

static void test_ranges(void **state) {
    fixture *f = *state;
    fx_err err;
    fx_err_clear(&err);
    const fx_sym *b;
    assert_int_equal(fx_shape_env_create_symbol(f->env, 8, (fx_vr){3, 64}, true, "b", &b, &err),
                     FX_OK);
    expect_str(b, "s3");
    expect_vr(f, b, "VR[3, 64]");
    expect_vr(f, f->s0, "VR[2, int_oo]");
    expect_vr(f, fx_sym_add(fx_sym_mul(I(f, 2), b), I(f, 1)), "VR[7, 129]");
    expect_vr(f, fx_sym_floordiv(b, I(f, 2)), "VR[1, 32]");
    expect_vr(f, fx_sym_mod(b, I(f, 3)), "VR[0, 2]");
    expect_vr(f, fx_sym_sub(I(f, 0), b), "VR[-64, -3]");
    expect_vr(f, fx_sym_mul(b, f->s0), "VR[6, int_oo]");
    expect_vr(f, fx_sym_max(b, I(f, 10)), "VR[10, 64]");
    /* an example value outside the range is refused, in PyTorch's words */
    const fx_sym *c;
    assert_int_equal(
        fx_shape_env_create_symbol(f->env, 2, (fx_vr){3, FX_INT_OO}, true, "c", &c, &err), FX_EARG);
    assert_string_equal(err.msg, "2 not in range [3, int_oo]");
    assert_string_equal(err.kind, "constraint_violation");
    int n;
    fx_shape_env_symbols(f->env, &n);
    assert_int_equal(n, 4);
}

static void where_cb(void *ud, char *loc, int loc_cap, char *line, int line_cap) {
    (void)ud;
    snprintf(loc, (size_t)loc_cap, "model.lua:7");
    snprintf(line, (size_t)line_cap, "if x:size(0) < 10 then");
}

static void test_guards(void **state) {
    fixture *f = *state;
    const fx_sym *s0 = f->s0, *s1 = f->s1;
    fx_err err;
    fx_err_clear(&err);
    fx_shape_env_set_where(f->env, where_cb, NULL);
    fx_shape_env_set_op(f->env, "aten.view.default");
    bool r = false;
    int n;
    /* proved by the range [2, int_oo]: no guard */
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_GT, s0, I(f, 1)), &r, &err), FX_OK);
    assert_true(r);
    fx_shape_env_guards(f->env, &n);
    assert_int_equal(n, 0);
    /* decided by the example value (8): a guard, and the range narrows */
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_LT, s0, I(f, 10)), &r, &err), FX_OK);
    assert_true(r);
    const fx_guard *g = fx_shape_env_guards(f->env, &n);
    assert_int_equal(n, 1);
    expect_str(g[0].expr, "s0 < 10");
    assert_string_equal(g[0].loc, "model.lua:7");
    assert_string_equal(g[0].line, "if x:size(0) < 10 then");
    assert_string_equal(g[0].op, "aten.view.default");
    expect_vr(f, s0, "VR[2, 9]");
    /* asked again: known now */
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_LT, s0, I(f, 10)), &r, &err), FX_OK);
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_LE, s0, I(f, 12)), &r, &err), FX_OK);
    fx_shape_env_guards(f->env, &n);
    assert_int_equal(n, 1);
    /* a false answer records the negation */
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_EQ, s0, I(f, 4)), &r, &err), FX_OK);
    assert_false(r);
    g = fx_shape_env_guards(f->env, &n);
    expect_str(g[n - 1].expr, "Ne(s0, 4)");
    /* an equality that holds: the newer symbol is replaced by the older one */
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_EQ, s0, s1), &r, &err), FX_OK);
    assert_true(r);
    g = fx_shape_env_guards(f->env, &n);
    expect_str(g[n - 1].expr, "Eq(s0, s1)");
    const fx_symbol_info *i1 = fx_shape_env_symbol(f->env, s1);
    assert_ptr_equal(i1->replacement, s0);
    assert_ptr_equal(fx_shape_env_simplify(f->env, fx_sym_add(s1, I(f, 1))),
                     fx_sym_add(s0, I(f, 1)));
    expect_vr(f, s0, "VR[2, 9]");
    /* s1 - s0 == 0 is now known without a guard */
    assert_int_equal(
        fx_shape_env_evaluate(fx_sym_rel(FX_SYM_EQ, fx_sym_sub(s1, s0), I(f, 0)), &r, &err), FX_OK);
    assert_true(r);
    fx_shape_env_guards(f->env, &n);
    assert_int_equal(n, 3);
    /* specialization to a constant */
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_EQ, s0, I(f, 8)), &r, &err), FX_OK);
    assert_true(r);
    assert_ptr_equal(fx_shape_env_simplify(f->env, fx_sym_mul(s1, I(f, 2))), I(f, 16));
    expect_vr(f, s0, "VR[8, 8]");
    /* the size type: arithmetic keeps hints, comparisons go through the guard function */
    fx_symint a = fx_si_from_expr(f->s2);
    assert_true(fx_si_is_sym(a));
    assert_int_equal(a.hint, 5);
    fx_symint b = fx_si_add(fx_si_mul(a, FX_SI(3)), FX_SI(1));
    assert_int_equal(b.hint, 16);
    expect_str(b.expr, "3*s2 + 1");
    fx_symint q;
    assert_int_equal(fx_si_floordiv(b, FX_SI(2), &q, &err), FX_OK);
    assert_int_equal(q.hint, 8);
    expect_str(q.expr, "((3*s2 + 1)//2)");
    assert_int_equal(fx_si_mod(b, FX_SI(0), &q, &err), FX_EARG);
    assert_string_equal(err.msg, "integer division or modulo by zero");
    fx_symint z = fx_si_sub(a, a);
    assert_false(fx_si_is_sym(z)); /* s2 - s2 is the plain 0 */
    assert_int_equal(fx_si_cmp(FX_SYM_GE, b, FX_SI(16), &r, &err), FX_OK);
    assert_true(r);
    g = fx_shape_env_guards(f->env, &n);
    expect_str(g[n - 1].expr, "3*s2 + 1 >= 16");
    expect_vr(f, f->s2, "VR[5, int_oo]");
    assert_false(fx_si_known_true(FX_SYM_EQ, a, FX_SI(1)));
    assert_true(fx_si_known_true(FX_SYM_NE, a, FX_SI(1)));
    /* plain integers never touch the environment */
    assert_int_equal(fx_si_add(FX_SI(2), FX_SI(3)).hint, 5);
    assert_null(fx_si_add(FX_SI(2), FX_SI(3)).expr);
}

/* seen[0] counts the calls; seen[k] is the k-th guard's index, or -(index + 1) for an assert */
static void on_guard_cb(void *ud, int index, bool is_assert) {
    int *seen = ud;
    seen[seen[0] + 1] = is_assert ? -(index + 1) : index;
    seen[0]++;
}

/* What each guard taught (the debugger's :why s0): narrowed ranges, replacements, constants,
 * one record per changed symbol, and the on_guard callback for every guard recorded. */
static void test_refinements(void **state) {
    fixture *f = *state;
    const fx_sym *s0 = f->s0, *s1 = f->s1, *s2 = f->s2;
    fx_err err;
    fx_err_clear(&err);
    int seen[8] = {0};
    fx_shape_env_set_on_guard(f->env, on_guard_cb, seen);
    bool r;
    int n;
    fx_shape_env_refinements(f->env, &n);
    assert_int_equal(n, 0);
    /* s1 <= 64: s1's range narrows */
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_LE, s1, I(f, 64)), &r, &err), FX_OK);
    const fx_sym_refinement *rf = fx_shape_env_refinements(f->env, &n);
    assert_int_equal(n, 1);
    assert_ptr_equal(rf[0].sym, s1);
    assert_int_equal(rf[0].index, 0);
    assert_false(rf[0].is_assert);
    assert_true(rf[0].before.lo == 2 && rf[0].before.hi == FX_INT_OO);
    assert_true(rf[0].after.lo == 2 && rf[0].after.hi == 64);
    assert_null(rf[0].replacement);
    /* a guard that proves nothing new about a symbol (two symbols, no equality) has no record */
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_GT, fx_sym_add(s0, s2), I(f, 12)), &r,
                                           &err),
                     FX_OK);
    fx_shape_env_refinements(f->env, &n);
    assert_int_equal(n, 1);
    /* Eq(s0, s1): s1 is replaced by s0, and s0's range meets s1's: two records of guard 2 */
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_EQ, s0, s1), &r, &err), FX_OK);
    rf = fx_shape_env_refinements(f->env, &n);
    assert_int_equal(n, 3);
    assert_ptr_equal(rf[1].sym, s0);
    assert_int_equal(rf[1].index, 2);
    assert_null(rf[1].replacement);
    assert_true(rf[1].after.hi == 64);
    assert_ptr_equal(rf[2].sym, s1);
    assert_ptr_equal(rf[2].replacement, s0);
    /* specialization to a constant: a replacement by 5 and the range [5, 5] */
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_EQ, fx_sym_mul(s2, I(f, 2)), I(f, 10)),
                                           &r, &err),
                     FX_OK);
    rf = fx_shape_env_refinements(f->env, &n);
    assert_int_equal(n, 4);
    assert_ptr_equal(rf[3].sym, s2);
    expect_str(rf[3].replacement, "5");
    assert_true(rf[3].after.lo == 5 && rf[3].after.hi == 5);
    /* a runtime assert (torch._check) is recorded as such */
    assert_int_equal(fx_shape_env_assume(fx_sym_rel(FX_SYM_LE, s0, I(f, 32)), &err), FX_OK);
    rf = fx_shape_env_refinements(f->env, &n);
    assert_int_equal(n, 5);
    assert_true(rf[4].is_assert);
    assert_int_equal(rf[4].index, 0);
    assert_true(rf[4].after.hi == 32);
    /* the callback heard of the four guards, then of the assert (the debugger stops at both) */
    assert_int_equal(seen[0], 5);
    assert_int_equal(seen[1], 0);
    assert_int_equal(seen[4], 3);
    assert_int_equal(seen[5], -1);
    fx_shape_env_set_on_guard(f->env, NULL, NULL);
}

/* fx_shape_env_reuse_unbacked: a retrace's item() / data-dependent lengths get the listed
 * symbols back in order (ranges kept), then new ones again; bad lists are refused */
static void test_reuse_unbacked(void **state) {
    fixture *f = *state;
    fx_err err;
    fx_err_clear(&err);
    const fx_sym *u0, *u1, *s0, *a, *b, *c;
    assert_int_equal(fx_shape_env_create_unbacked(f->env, "x.item()", &u0, &err), FX_OK);
    assert_int_equal(fx_shape_env_create_unbacked(f->env, "y.item()", &u1, &err), FX_OK);
    assert_int_equal(fx_shape_env_mark_size_like(u1, &err), FX_OK);
    assert_int_equal(fx_shape_env_create_symbol(f->env, 4, (fx_vr){0, FX_INT_OO}, true, "x.size()[0]",
                                                &s0, &err),
                     FX_OK);
    const fx_sym *list[] = {u1, u0};
    assert_int_equal(fx_shape_env_reuse_unbacked(f->env, list, 2, &err), FX_OK);
    assert_int_equal(fx_shape_env_create_unbacked(f->env, "x.item()", &a, &err), FX_OK);
    assert_int_equal(fx_shape_env_create_unbacked(f->env, "x.item()", &b, &err), FX_OK);
    assert_int_equal(fx_shape_env_create_unbacked(f->env, "x.item()", &c, &err), FX_OK);
    assert_ptr_equal(a, u1);
    assert_ptr_equal(b, u0);
    expect_str(c, "u2");
    expect_vr(f, a, "VR[0, int_oo]");
    /* cleared: new symbols again */
    assert_int_equal(fx_shape_env_reuse_unbacked(f->env, list, 1, &err), FX_OK);
    assert_int_equal(fx_shape_env_reuse_unbacked(f->env, NULL, 0, &err), FX_OK);
    assert_int_equal(fx_shape_env_create_unbacked(f->env, "x.item()", &a, &err), FX_OK);
    expect_str(a, "u3");
    const fx_sym *backed[] = {s0};
    assert_int_equal(fx_shape_env_reuse_unbacked(f->env, backed, 1, &err), FX_EARG);
    assert_string_equal(err.msg, "reuse: not an unbacked symbol of this environment");
    const fx_sym *many[FX_REUSE_CAP + 1];
    for (int i = 0; i <= FX_REUSE_CAP; i++) many[i] = u0;
    assert_int_equal(fx_shape_env_reuse_unbacked(f->env, many, FX_REUSE_CAP + 1, &err), FX_EARG);
    assert_int_equal(fx_shape_env_create_unbacked(f->env, "x.item()", &a, &err), FX_OK);
    expect_str(a, "u4");
}

static void test_unbacked(void **state) {
    fixture *f = *state;
    fx_err err;
    fx_err_clear(&err);
    fx_shape_env_set_where(f->env, where_cb, NULL);
    const fx_sym *u0;
    assert_int_equal(fx_shape_env_create_unbacked(f->env, "x.item()", &u0, &err), FX_OK);
    expect_str(u0, "u0");
    expect_vr(f, u0, "VR[-int_oo, int_oo]");
    bool r;
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_GT, u0, I(f, 0)), &r, &err),
                     FX_EDATADEP);
    assert_string_equal(err.kind, "data_dependent");
    assert_string_equal(err.msg, "Could not guard on data-dependent expression u0 > 0 (unhinted: "
                                 "u0 > 0).  (Size-like symbols: none)");
    assert_string_equal(err.loc, "model.lua:7");
    /* torch._check_is_size, then torch._check(u0 < 10): deferred asserts that narrow */
    assert_int_equal(fx_shape_env_mark_size_like(u0, &err), FX_OK);
    expect_vr(f, u0, "VR[0, int_oo]");
    assert_int_equal(fx_shape_env_assume(fx_sym_rel(FX_SYM_LT, u0, I(f, 10)), &err), FX_OK);
    expect_vr(f, u0, "VR[0, 9]");
    int n;
    const fx_guard *ra = fx_shape_env_runtime_asserts(f->env, &n);
    assert_int_equal(n, 1);
    expect_str(ra[0].expr, "u0 < 10");
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_LT, u0, I(f, 20)), &r, &err), FX_OK);
    assert_true(r);
    assert_int_equal(
        fx_shape_env_evaluate(fx_sym_rel(FX_SYM_GE, fx_sym_add(u0, I(f, 1)), I(f, 1)), &r, &err),
        FX_OK);
    assert_true(r);
    assert_int_equal(fx_shape_env_evaluate(fx_sym_rel(FX_SYM_EQ, u0, I(f, 1)), &r, &err),
                     FX_EDATADEP);
    assert_string_equal(err.msg, "Could not guard on data-dependent expression Eq(u0, 1) "
                                 "(unhinted: Eq(u0, 1)).  (Size-like symbols: u0)");
    /* size-oblivious: a size-like unbacked symbol is treated as >= 2 */
    fx_symint su = fx_si_from_expr(u0);
    assert_true(fx_si_known_true(FX_SYM_NE, su, FX_SI(1)));
    assert_false(fx_si_known_true(FX_SYM_EQ, su, FX_SI(1)));
    /* an assumption that contradicts the range */
    assert_int_equal(fx_shape_env_assume(fx_sym_rel(FX_SYM_GT, u0, I(f, 20)), &err), FX_EARG);
    assert_string_equal(err.msg, "u0 > 20 is always False");
    /* u0 == s0 replaces the unbacked symbol by the backed one */
    assert_int_equal(fx_shape_env_assume(fx_sym_rel(FX_SYM_EQ, u0, f->s2), &err), FX_OK);
    assert_ptr_equal(fx_shape_env_simplify(f->env, u0), f->s2);
    int64_t v = 0;
    assert_int_equal(fx_shape_env_hint(f->env, fx_sym_mul(f->s2, I(f, 2)), &v, &err), FX_OK);
    assert_int_equal(v, 10);
}

/* Comparisons parked for torch._check: taken in order, or the first one's error. */
static void test_pending(void **state) {
    fixture *f = *state;
    fx_err err, why;
    fx_err_clear(&err);
    fx_shape_env_set_where(f->env, where_cb, NULL);
    const fx_sym *u0, *got[FX_PENDING_CAP];
    assert_int_equal(fx_shape_env_create_unbacked(f->env, "x.item()", &u0, &err), FX_OK);
    assert_int_equal(fx_shape_env_check_pending(f->env, &err), FX_OK);
    assert_int_equal(fx_shape_env_check_pending(NULL, &err), FX_OK);
    assert_int_equal(fx_shape_env_take_pending(f->env, got, NULL, FX_PENDING_CAP), 0);
    bool r;
    const fx_sym *ge0 = fx_sym_rel(FX_SYM_GE, u0, I(f, 0)), *le5 = fx_sym_rel(FX_SYM_LE, u0, I(f, 5));
    fx_err_clear(&why);
    assert_int_equal(fx_shape_env_evaluate(ge0, &r, &why), FX_EDATADEP);
    assert_int_equal(fx_shape_env_add_pending(f->env, ge0, &why, &err), FX_OK);
    fx_err_clear(&why);
    assert_int_equal(fx_shape_env_evaluate(le5, &r, &why), FX_EDATADEP);
    assert_int_equal(fx_shape_env_add_pending(f->env, le5, &why, &err), FX_OK);
    /* torch._check took both: they become facts (the range) */
    assert_int_equal(fx_shape_env_take_pending(f->env, got, NULL, FX_PENDING_CAP), 2);
    assert_ptr_equal(got[0], ge0);
    assert_ptr_equal(got[1], le5);
    assert_int_equal(fx_shape_env_take_pending(f->env, got, NULL, FX_PENDING_CAP), 0);
    for (int i = 0; i < 2; i++) assert_int_equal(fx_shape_env_assume(got[i], &err), FX_OK);
    expect_vr(f, u0, "VR[0, 5]");
    /* something else came first: the first comparison's own error, at its line */
    const fx_sym *gt2 = fx_sym_rel(FX_SYM_GT, u0, I(f, 2));
    fx_err_clear(&why);
    assert_int_equal(fx_shape_env_evaluate(gt2, &r, &why), FX_EDATADEP);
    assert_int_equal(fx_shape_env_add_pending(f->env, gt2, &why, &err), FX_OK);
    fx_err_clear(&err);
    assert_int_equal(fx_shape_env_check_pending(f->env, &err), FX_EDATADEP);
    assert_string_equal(err.kind, "data_dependent");
    assert_string_equal(err.msg, "Could not guard on data-dependent expression u0 > 2 (unhinted: "
                                 "u0 > 2).  (Size-like symbols: none)");
    assert_string_equal(err.loc, "model.lua:7");
    assert_int_equal(fx_shape_env_check_pending(f->env, &err), FX_OK); /* cleared */
    /* more than FX_PENDING_CAP at once: the one too many fails with its own error */
    for (int i = 0; i < FX_PENDING_CAP; i++)
        assert_int_equal(fx_shape_env_add_pending(f->env, gt2, &why, &err), FX_OK);
    fx_err_clear(&err);
    assert_int_equal(fx_shape_env_add_pending(f->env, gt2, &why, &err), FX_EDATADEP);
    assert_string_equal(err.msg, why.msg);
    assert_int_equal(fx_shape_env_take_pending(f->env, got, NULL, FX_PENDING_CAP), FX_PENDING_CAP);
}

static int valuer(void *ud, const fx_sym *s, int64_t *v, fx_err *err) {
    const int64_t *vals = ud;
    char name[16];
    fx_sym_str(s, name, sizeof name);
    *v = vals[name[1] - '0'];
    return FX_OK;
}

static void test_eval(void **state) {
    fixture *f = *state;
    fx_err err;
    int64_t vals[3] = {7, -3, 4}, out = 0;
    const fx_sym *e = fx_sym_add(fx_sym_floordiv(f->s0, I(f, 2)), fx_sym_mod(f->s1, f->s2));
    assert_int_equal(fx_sym_eval(e, valuer, vals, &out, &err), FX_OK);
    assert_int_equal(out, 3 + 1); /* 7 // 2 + (-3) % 4 in Python */
    assert_int_equal(
        fx_sym_eval(fx_sym_max(f->s0, fx_sym_mul(f->s2, f->s2)), valuer, vals, &out, &err), FX_OK);
    assert_int_equal(out, 16);
    vals[2] = 0;
    assert_int_equal(fx_sym_eval(e, valuer, vals, &out, &err), FX_EARG);
    assert_string_equal(err.msg, "integer division or modulo by zero");
}

/* Every allocation failing in turn: no crash, the error expression propagates, and releasing
 * the environment frees everything. */
static void test_oom(void **state) {
    (void)state;
    for (int k = 1; k < 60; k++) {
        fx_alloc_stats before = fx_alloc_get_stats();
        fx_err err;
        fx_err_clear(&err);
        fx_alloc_fail_at(k, 0);
        fx_shape_env *env = fx_shape_env_new(&err);
        const fx_sym *s0 = NULL, *s1 = NULL;
        if (env && fx_shape_env_create_symbol(env, 4, SIZE, true, "a", &s0, &err) == FX_OK &&
            fx_shape_env_create_symbol(env, 4, SIZE, true, "b", &s1, &err) == FX_OK) {
            const fx_sym *e = fx_sym_add(fx_sym_mul(s0, s1), fx_sym_int(env, 3));
            e = fx_sym_max(e, fx_sym_floordiv(s0, fx_sym_int(env, 2)));
            bool r;
            int rc = fx_shape_env_evaluate(fx_sym_rel(FX_SYM_EQ, e, s1), &r, &err);
            assert_true(rc == FX_OK || rc == FX_ENOMEM);
            if (fx_sym_is_error(e)) assert_int_equal(rc, FX_ENOMEM);
        }
        fx_alloc_fail_at(0, 0);
        fx_shape_env_release(env);
        fx_alloc_stats after = fx_alloc_get_stats();
        assert_int_equal(after.live_blocks, before.live_blocks);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_printing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_canonical, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_guards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refinements, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unbacked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reuse_unbacked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eval, setup, teardown),
        cmocka_unit_test(test_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
