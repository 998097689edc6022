/* tests/unit/test_shape.c — core/shape.c: dim wrapping, broadcasting, expand strides, view
 * shape inference and view legality (computeStride).
 * Layer: tests (cmocka, links libfxdb.a). View legality is checked against a brute-force
 * reference over random layouts: a view is possible exactly when the storage offset of every
 * element, listed in row-major order, is an affine function of the new multi-index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/fx.h"
#include "core/shape.h"

static void test_wrap_dim(void **state) {
    (void)state;
    fx_err err;
    int d = -7;
    fx_err_clear(&err);
    assert_int_equal(fx_wrap_dim(-1, 3, &d, &err), FX_OK);
    assert_int_equal(d, 2);
    assert_int_equal(fx_wrap_dim(0, 3, &d, &err), FX_OK);
    assert_int_equal(d, 0);
    assert_int_equal(fx_wrap_dim(-3, 3, &d, &err), FX_OK);
    assert_int_equal(d, 0);
    assert_int_equal(fx_wrap_dim(3, 3, &d, &err), FX_EINDEX);
    assert_string_equal(err.msg,
                        "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
    assert_int_equal(fx_wrap_dim(-4, 3, &d, &err), FX_EINDEX);
    /* a 0-dim tensor accepts dims 0 and -1, as PyTorch's maybe_wrap_dim(wrap_scalar=true) */
    assert_int_equal(fx_wrap_dim(-1, 0, &d, &err), FX_OK);
    assert_int_equal(d, 0);
    assert_int_equal(fx_wrap_dim(1, 0, &d, &err), FX_EINDEX);
    assert_string_equal(err.msg,
                        "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

static void check_bcast(int na, const int64_t *a, int nb, const int64_t *b, int nw,
                        const int64_t *want) {
    int64_t out[FX_MAX_DIMS];
    int n = -1;
    fx_err err;
    fx_err_clear(&err);
    assert_int_equal(fx_broadcast_shape(na, a, nb, b, &n, out, &err), FX_OK);
    assert_int_equal(n, nw);
    for (int i = 0; i < nw; i++) assert_int_equal(out[i], want[i]);
    /* symmetric */
    assert_int_equal(fx_broadcast_shape(nb, b, na, a, &n, out, &err), FX_OK);
    for (int i = 0; i < nw; i++) assert_int_equal(out[i], want[i]);
}

static void test_broadcast(void **state) {
    (void)state;
    check_bcast(2, (int64_t[]){3, 1}, 1, (int64_t[]){4}, 2, (int64_t[]){3, 4});
    check_bcast(3, (int64_t[]){5, 1, 4}, 2, (int64_t[]){3, 1}, 3, (int64_t[]){5, 3, 4});
    check_bcast(0, NULL, 2, (int64_t[]){2, 2}, 2, (int64_t[]){2, 2});
    check_bcast(1, (int64_t[]){0}, 1, (int64_t[]){1}, 1, (int64_t[]){0});
    check_bcast(2, (int64_t[]){1, 1}, 2, (int64_t[]){1, 1}, 2, (int64_t[]){1, 1});
    fx_err err;
    int64_t out[FX_MAX_DIMS];
    int n;
    fx_err_clear(&err);
    assert_int_equal(fx_broadcast_shape(2, (int64_t[]){2, 3}, 2, (int64_t[]){4, 3}, &n, out, &err),
                     FX_ESHAPE);
    assert_string_equal(err.msg, "The size of tensor a (2) must match the size of tensor b (4) "
                                 "at non-singleton dimension 0");
    assert_int_equal(fx_broadcast_shape(1, (int64_t[]){3}, 2, (int64_t[]){2, 4}, &n, out, &err),
                     FX_ESHAPE);
    assert_string_equal(err.msg, "The size of tensor a (3) must match the size of tensor b (4) "
                                 "at non-singleton dimension 1");
}

static void test_expand_strides(void **state) {
    (void)state;
    fx_err err;
    fx_tensor *t;
    fx_err_clear(&err);
    assert_int_equal(fx_tensor_empty(2, (int64_t[]){3, 1}, FX_DTYPE_F32, FX_DEVICE_CPU, &t, &err),
                     FX_OK);
    int64_t sizes[3] = {2, 3, 4}, st[3];
    assert_int_equal(fx_expand_strides(t, 3, sizes, st, &err), FX_OK);
    assert_int_equal(st[0], 0);
    assert_int_equal(st[1], 1);
    assert_int_equal(st[2], 0);
    int64_t keep[2] = {-1, 5};
    assert_int_equal(fx_expand_strides(t, 2, keep, st, &err), FX_OK);
    assert_int_equal(keep[0], 3);
    assert_int_equal(st[0], 1);
    assert_int_equal(st[1], 0);
    int64_t bad[2] = {4, 2};
    assert_int_equal(fx_expand_strides(t, 2, bad, st, &err), FX_ESHAPE);
    assert_string_equal(err.msg, "The expanded size of the tensor (4) must match the existing "
                                 "size (3) at non-singleton dimension 0.  Target sizes: [4, 2].  "
                                 "Tensor sizes: [3, 1]");
    int64_t lead[3] = {-1, 3, 1};
    assert_int_equal(fx_expand_strides(t, 3, lead, st, &err), FX_ESHAPE);
    assert_string_equal(err.msg, "The expanded size of the tensor (-1) isn't allowed in a leading, "
                                 "non-existing dimension 0");
    int64_t few[1] = {3};
    assert_int_equal(fx_expand_strides(t, 1, few, st, &err), FX_ESHAPE);
    assert_non_null(strstr(err.msg, "the number of sizes provided (1) must be greater or equal to "
                                    "the number of dimensions in the tensor (2)"));
    fx_tensor_release(t);
}

static void test_infer_view_shape(void **state) {
    (void)state;
    fx_err err;
    int64_t out[FX_MAX_DIMS];
    fx_err_clear(&err);
    assert_int_equal(fx_infer_view_shape(2, (int64_t[]){2, -1}, 6, out, &err), FX_OK);
    assert_int_equal(out[1], 3);
    assert_int_equal(fx_infer_view_shape(3, (int64_t[]){-1, 1, 2}, 6, out, &err), FX_OK);
    assert_int_equal(out[0], 3);
    assert_int_equal(fx_infer_view_shape(0, NULL, 1, out, &err), FX_OK);
    assert_int_equal(fx_infer_view_shape(1, (int64_t[]){-1}, 0, out, &err), FX_OK);
    assert_int_equal(out[0], 0);
    assert_int_equal(fx_infer_view_shape(2, (int64_t[]){3, -1}, 0, out, &err), FX_OK);
    assert_int_equal(out[1], 0);
    assert_int_equal(fx_infer_view_shape(2, (int64_t[]){-1, -1}, 6, out, &err), FX_ESHAPE);
    assert_string_equal(err.msg, "only one dimension can be inferred");
    assert_int_equal(fx_infer_view_shape(2, (int64_t[]){4, -1}, 6, out, &err), FX_ESHAPE);
    assert_string_equal(err.msg, "shape '[4, -1]' is invalid for input of size 6");
    assert_int_equal(fx_infer_view_shape(2, (int64_t[]){2, 5}, 6, out, &err), FX_ESHAPE);
    assert_string_equal(err.msg, "shape '[2, 5]' is invalid for input of size 6");
    assert_int_equal(fx_infer_view_shape(2, (int64_t[]){0, -1}, 0, out, &err), FX_ESHAPE);
    assert_string_equal(err.msg, "cannot reshape tensor of 0 elements into shape [0, -1] because "
                                 "the unspecified dimension size -1 can be any value and is "
                                 "ambiguous");
    assert_int_equal(fx_infer_view_shape(1, (int64_t[]){-2}, 6, out, &err), FX_ESHAPE);
    assert_string_equal(err.msg, "invalid shape dimension -2");
}

/* ---- view legality against brute force ------------------------------------------------------ */

static int64_t offset_of_linear(int nd, const int64_t *sizes, const int64_t *strides, int64_t i) {
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        off += (i % sizes[d]) * strides[d];
        i /= sizes[d];
    }
    return off;
}

/* Is the view possible, and with which strides (for dims of size > 1)? */
static bool brute_view(int nd, const int64_t *sizes, const int64_t *strides, int nn,
                       const int64_t *nsizes, int64_t *nstrides) {
    int64_t numel = 1, cst[FX_MAX_DIMS];
    for (int d = 0; d < nd; d++) numel *= sizes[d];
    fx_contiguous_strides(nn, nsizes, cst);
    int64_t base = numel ? offset_of_linear(nd, sizes, strides, 0) : 0;
    for (int d = 0; d < nn; d++)
        nstrides[d] = nsizes[d] > 1 ? offset_of_linear(nd, sizes, strides, cst[d]) - base : -1;
    for (int64_t i = 0; i < numel; i++) {
        int64_t want = offset_of_linear(nd, sizes, strides, i) - base, got = 0;
        int64_t r = i;
        for (int d = nn - 1; d >= 0; d--) {
            int64_t k = r % nsizes[d];
            r /= nsizes[d];
            if (k) got += k * nstrides[d];
        }
        if (got != want) return false;
    }
    return true;
}

static void test_view_strides_random(void **state) {
    (void)state;
    srand(1234);
    int checked = 0, possible = 0;
    for (int iter = 0; iter < 4000; iter++) {
        int nd = 1 + rand() % 4;
        int64_t sizes[FX_MAX_DIMS], strides[FX_MAX_DIMS], numel = 1;
        for (int d = 0; d < nd; d++) numel *= (sizes[d] = 1 + rand() % 4);
        /* a layout: contiguous, then a random permutation of dims, a step on one dim, or a
         * broadcast (stride 0) dim */
        int64_t cst[FX_MAX_DIMS], perm[FX_MAX_DIMS];
        for (int d = 0; d < nd; d++) perm[d] = d;
        for (int d = nd - 1; d > 0; d--) {
            int j = rand() % (d + 1);
            int64_t t = perm[d];
            perm[d] = perm[j], perm[j] = t;
        }
        int64_t psizes[FX_MAX_DIMS];
        for (int d = 0; d < nd; d++) psizes[d] = sizes[perm[d]];
        fx_contiguous_strides(nd, psizes, cst);
        for (int d = 0; d < nd; d++) strides[perm[d]] = cst[d];
        int kind = rand() % 4;
        if (kind == 1) strides[rand() % nd] *= 2;
        if (kind == 2) strides[rand() % nd] = 0;
        /* a target shape: a random factorisation of numel, with 1s sprinkled in */
        int64_t ns[FX_MAX_DIMS], rem = numel;
        int nn = 0;
        while (nn < FX_MAX_DIMS - 1 && (rem > 1 || (rand() % 3 == 0 && nn < 3))) {
            int64_t f = 1;
            for (int64_t c = 2 + rand() % 3; c >= 1; c--)
                if (rem % c == 0) {
                    f = c;
                    break;
                }
            if (rand() % 5 == 0) f = 1;
            ns[nn++] = f;
            rem /= f;
            if (nn >= 6) break;
        }
        if (rem != 1) ns[nn++] = rem;
        int64_t got[FX_MAX_DIMS], want[FX_MAX_DIMS];
        bool ok = fx_view_strides(nd, sizes, strides, nn, ns, got);
        bool ref = brute_view(nd, sizes, strides, nn, ns, want);
        if (ok != ref) {
            char b1[128], b2[128], b3[128];
            fail_msg("view legality differs: sizes %s strides %s -> %s: fxdb %d, brute %d",
                     fx_shape_str(nd, sizes, b1, sizeof b1), fx_shape_str(nd, strides, b2, sizeof b2),
                     fx_shape_str(nn, ns, b3, sizeof b3), ok, ref);
        }
        if (ok)
            for (int d = 0; d < nn; d++)
                if (ns[d] > 1) assert_int_equal(got[d], want[d]);
        checked++;
        possible += ok;
    }
    assert_int_equal(checked, 4000);
    assert_true(possible > 500 && possible < 3900); /* both outcomes were exercised */
}

static void test_view_strides_cases(void **state) {
    (void)state;
    int64_t st[FX_MAX_DIMS];
    /* contiguous [2, 3, 4] -> [6, 4] */
    assert_true(fx_view_strides(3, (int64_t[]){2, 3, 4}, (int64_t[]){12, 4, 1}, 2,
                                (int64_t[]){6, 4}, st));
    assert_int_equal(st[0], 4);
    assert_int_equal(st[1], 1);
    /* transposed [3, 2] (strides [1, 3]) cannot flatten */
    assert_false(fx_view_strides(2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 1, (int64_t[]){6}, st));
    /* but can split a dim: [3, 2] -> [3, 2, 1] and [3, 1, 2] */
    assert_true(fx_view_strides(2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 3,
                                (int64_t[]){3, 1, 2}, st));
    assert_int_equal(st[0], 1);
    assert_int_equal(st[2], 3);
    /* empty tensors view anything with contiguous strides */
    assert_true(fx_view_strides(2, (int64_t[]){0, 3}, (int64_t[]){3, 1}, 2, (int64_t[]){3, 0}, st));
    assert_int_equal(st[0], 1);
    assert_int_equal(st[1], 1);
    /* 0-dim to [1, 1] */
    assert_true(fx_view_strides(0, NULL, NULL, 2, (int64_t[]){1, 1}, st));
}

static void test_shape_str(void **state) {
    (void)state;
    char b[32];
    assert_string_equal(fx_shape_str(3, (int64_t[]){2, 30, 4}, b, sizeof b), "[2, 30, 4]");
    assert_string_equal(fx_shape_str(0, NULL, b, sizeof b), "[]");
    char tiny[6];
    fx_shape_str(3, (int64_t[]){2, 30, 4}, tiny, sizeof tiny);
    assert_true(strlen(tiny) < sizeof tiny); /* truncated, never overflowing */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrap_dim),
        cmocka_unit_test(test_broadcast),
        cmocka_unit_test(test_expand_strides),
        cmocka_unit_test(test_infer_view_shape),
        cmocka_unit_test(test_view_strides_random),
        cmocka_unit_test(test_view_strides_cases),
        cmocka_unit_test(test_shape_str),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
