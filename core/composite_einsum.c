/* core/composite_einsum.c — einsum as ATen decomposes it.
 * Layer: core. Follows aten/src/ATen/native/Linear.cpp (einsum, sumproduct_pair): the equation
 * is parsed into labels per operand (A-Z before a-z, "..." for the broadcast dims); every
 * operand is aligned to one layout — the output dims first (explicit "->" order, or the
 * ellipsis then the labels seen once, in label order), then the contracted ones — by taking a
 * diagonal for a repeated label (diagonal + permute), unsqueezing missing labels and permuting;
 * then operands are contracted pairwise, left to right (or along `path`), each pair summing first
 * the dims only it still has and then multiplying through sumproduct_pair (permute, reshape, bmm,
 * view, permute; mul when nothing is summed); the contracted dims are finally viewed away (or
 * summed, for one operand). The graph records those ATen ops, as torch.export shows einsum.
 * Sizes are symbolic-aware (SymInt products); "size != 1" decisions read the hints, as
 * TORCH_GUARD_OR_TRUE assumes them not 1.
 *
 * Ownership: intermediates are new references released here; out[0] is a new reference. */
#include <ctype.h>
#include <string.h>

#include "core/ops_impl.h"
#include "core/ops_shape.h"
#include "core/shape.h"

#define EIN_LETTERS 26
#define EIN_LABELS (2 * EIN_LETTERS)
#define EIN_ELLIPSIS EIN_LABELS
#define EIN_MAX_OPS 32

static int sub_of(unsigned char c) { return isupper(c) ? c - 'A' : c - 'a' + EIN_LETTERS; }
static char label_of(int s) { return (char)(s < EIN_LETTERS ? 'A' + s : 'a' + s - EIN_LETTERS); }

static fx_ivalue borrow(fx_tensor *t) { return (fx_ivalue){.tag = FX_IV_TENSOR, .u.t = t}; }

/* *t = op(*t, list of n ints[, extra]) — the old *t released (also on failure). */
static int apply_ints(fx_opctx *c, fx_op_id id, fx_tensor **t, int n, const int64_t *v,
                      const fx_ivalue *extra) {
    fx_ivalue tv = borrow(*t), lv;
    fx_tensor *r = NULL;
    int rc = fx_iv_int_list(n, v, &lv, c->err);
    if (!rc)
        rc = extra ? fx_call_t(c->ctx, id, &r, c->err, 3, &tv, &lv, extra)
                   : fx_call_t(c->ctx, id, &r, c->err, 2, &tv, &lv);
    fx_ivalue_clear(&lv);
    fx_tensor_release(*t);
    *t = r;
    return rc;
}

/* *t = op(*t, symbolic sizes) (view / reshape). */
static int apply_sizes(fx_opctx *c, fx_op_id id, fx_tensor **t, int n, const fx_symint *s) {
    fx_ivalue tv = borrow(*t), lv;
    fx_tensor *r = NULL;
    int rc = fx_iv_list(n, &lv, c->err);
    for (int i = 0; !rc && i < n; i++) lv.u.list.items[i] = fx_iv_symint(s[i]);
    if (!rc) rc = fx_call_t(c->ctx, id, &r, c->err, 2, &tv, &lv);
    fx_ivalue_clear(&lv);
    fx_tensor_release(*t);
    *t = r;
    return rc;
}

/* *t = op(*t, int) (unsqueeze) or op(*t, int, int, int) (diagonal). */
static int apply_i(fx_opctx *c, fx_op_id id, fx_tensor **t, int n, int64_t i0, int64_t i1, int64_t i2) {
    fx_ivalue tv = borrow(*t), a0 = fx_iv_int(i0), a1 = fx_iv_int(i1), a2 = fx_iv_int(i2);
    fx_tensor *r = NULL;
    int rc = n == 1 ? fx_call_t(c->ctx, id, &r, c->err, 2, &tv, &a0)
                    : fx_call_t(c->ctx, id, &r, c->err, 4, &tv, &a0, &a1, &a2);
    fx_tensor_release(*t);
    *t = r;
    return rc;
}

/* sum(*t, dims, keepdim=True) */
static int sum_keep(fx_opctx *c, fx_tensor **t, int n, const int64_t *dims) {
    fx_ivalue keep = fx_iv_bool(true);
    return apply_ints(c, FX_OP_SUM_DIM_INTLIST, t, n, dims, &keep);
}

static bool ne1(const fx_tensor *t, int d) { return t->sizes[d] != 1; }

/* (left * right).sum(sum_dims, keepdim=True) through bmm; takes both references. */
static int sumproduct_pair(fx_opctx *c, fx_tensor *left, fx_tensor *right, int nsum,
                           const int64_t *sum_dims, fx_tensor **res) {
    int rc = FX_OK;
    *res = NULL;
    if (nsum == 0) {
        fx_ivalue lv = borrow(left), rv = borrow(right);
        rc = fx_call_t(c->ctx, FX_OP_MUL_TENSOR, res, c->err, 2, &lv, &rv);
        fx_tensor_release(left), fx_tensor_release(right);
        return rc;
    }
    const int dim = left->ndim;
    bool summed[FX_MAX_DIMS] = {0};
    for (int k = 0; k < nsum; k++) summed[sum_dims[k]] = true;
    int64_t lro[FX_MAX_DIMS], lo[FX_MAX_DIMS], ro[FX_MAX_DIMS];
    int nlro = 0, nlo = 0, nro = 0;
    fx_symint lro_size = FX_SI(1), lo_size = FX_SI(1), ro_size = FX_SI(1), sum_size = FX_SI(1);
    for (int i = 0; i < dim && !rc; i++) {
        bool sl = ne1(left, i), sr = ne1(right, i);
        if (summed[i]) {
            int64_t d = i;
            if (sl && sr) {
                if (left->sizes[i] != right->sizes[i])
                    rc = fx_err_setf(c->err, FX_ESHAPE, "non-broadcast dimensions must match");
                sum_size = fx_si_mul(sum_size, fx_tensor_sym_size(left, i));
            } else if (sl) {
                rc = sum_keep(c, &left, 1, &d);
            } else if (sr) {
                rc = sum_keep(c, &right, 1, &d);
            }
        } else if (sl && sr) {
            if (left->sizes[i] != right->sizes[i])
                rc = fx_err_setf(c->err, FX_ESHAPE, "non-broadcast dimensions must match");
            lro[nlro++] = i;
            lro_size = fx_si_mul(lro_size, fx_tensor_sym_size(left, i));
        } else if (sl) {
            lo[nlo++] = i;
            lo_size = fx_si_mul(lo_size, fx_tensor_sym_size(left, i));
        } else {
            ro[nro++] = i;
            ro_size = fx_si_mul(ro_size, fx_tensor_sym_size(right, i));
        }
    }
    if (rc) goto fail;
    /* when every right-only dim comes before every left-only one, swap so bmm's result is
     * already in output order */
    if (nlo > 0 && nro > 0 && ro[nro - 1] < lo[0]) {
        fx_tensor *t = left;
        left = right, right = t;
        int64_t tmp[FX_MAX_DIMS];
        memcpy(tmp, lo, sizeof tmp), memcpy(lo, ro, sizeof tmp), memcpy(ro, tmp, sizeof tmp);
        int n = nlo;
        nlo = nro, nro = n;
        fx_symint s = lo_size;
        lo_size = ro_size, ro_size = s;
    }
    fx_symint out_size[FX_MAX_DIMS];
    int64_t lperm[FX_MAX_DIMS], rperm[FX_MAX_DIMS], operm[FX_MAX_DIMS];
    int no = 0, nl = 0, nr = 0;
    for (int k = 0; k < nlro; k++) out_size[no++] = fx_tensor_sym_size(left, (int)lro[k]);
    for (int k = 0; k < nlo; k++) out_size[no++] = fx_tensor_sym_size(left, (int)lo[k]);
    for (int k = 0; k < nsum; k++) out_size[no++] = FX_SI(1);
    for (int k = 0; k < nro; k++) out_size[no++] = fx_tensor_sym_size(right, (int)ro[k]);
    for (int k = 0; k < nlro; k++) lperm[nl++] = lro[k], rperm[nr++] = lro[k];
    for (int k = 0; k < nlo; k++) lperm[nl++] = lo[k];
    for (int k = 0; k < nsum; k++) lperm[nl++] = sum_dims[k], rperm[nr++] = sum_dims[k];
    for (int k = 0; k < nro; k++) lperm[nl++] = ro[k], rperm[nr++] = ro[k];
    for (int k = 0; k < nlo; k++) rperm[nr++] = lo[k];
    for (int k = 0; k < no; k++) operm[lperm[k]] = k; /* lperm lists lro, lo, summed, ro */
    fx_symint lshape[3] = {lro_size, lo_size, sum_size}, rshape[3] = {lro_size, sum_size, ro_size};
    if ((rc = apply_ints(c, FX_OP_PERMUTE, &left, nl, lperm, NULL)) ||
        (rc = apply_sizes(c, FX_OP_RESHAPE, &left, 3, lshape)) ||
        (rc = apply_ints(c, FX_OP_PERMUTE, &right, nr, rperm, NULL)) ||
        (rc = apply_sizes(c, FX_OP_RESHAPE, &right, 3, rshape)))
        goto fail;
    {
        fx_ivalue lv = borrow(left), rv = borrow(right);
        rc = fx_call_t(c->ctx, FX_OP_BMM, res, c->err, 2, &lv, &rv);
    }
    if (!rc) rc = apply_sizes(c, FX_OP_VIEW, res, no, out_size);
    if (!rc) rc = apply_ints(c, FX_OP_PERMUTE, res, no, operm, NULL);
fail:
    fx_tensor_release(left), fx_tensor_release(right);
    if (rc) {
        fx_tensor_release(*res);
        *res = NULL;
    }
    return rc;
}

/* einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor */
int fx_c_einsum(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out) {
    fx_err *err = ctx->err;
    const char *eq = a[0].tag == FX_IV_STR ? a[0].u.s : "";
    const int nops = a[1].tag == FX_IV_LIST ? a[1].u.list.n : 0;
    if (nops == 0) return fx_err_setf(err, FX_EARG, "einsum(): must provide at least one operand");
    if (nops > EIN_MAX_OPS)
        return fx_err_setf(err, FX_ENOTIMPL, "einsum(): fxdb takes at most %d operands", EIN_MAX_OPS);
    fx_tensor *opnd[EIN_MAX_OPS];
    for (int i = 0; i < nops; i++) {
        const fx_ivalue *v = &a[1].u.list.items[i];
        if (v->tag != FX_IV_TENSOR)
            return fx_err_setf(err, FX_EARG, "einsum(): expected a list of tensors");
        opnd[i] = v->u.t;
    }
    const fx_ivalue *pv = a[2].tag == FX_IV_LIST ? &a[2] : NULL;
    if (pv) {
        int want = nops == 1 ? 1 : (nops - 1) * 2;
        if (pv->u.list.n != want)
            return fx_err_setf(err, FX_EARG,
                               "einsum(): expected contraction path given in path parameter to "
                               "have size %d but got %d",
                               want, pv->u.list.n);
    }
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);

    /* labels per operand */
    uint8_t labels[EIN_MAX_OPS][FX_MAX_DIMS + 2];
    int nlab[EIN_MAX_OPS] = {0};
    int cur = 0;
    bool ell_in_input = false;
    for (size_t i = 0; i < lhs_len; i++) {
        unsigned char ch = (unsigned char)eq[i];
        if (ch == ' ') continue;
        if (ch == '.') {
            if (ell_in_input)
                return fx_err_setf(err, FX_EARG,
                                   "einsum(): found '.' for operand %d for which an ellipsis was "
                                   "already found",
                                   cur);
            if (!(i + 2 < lhs_len && eq[i + 1] == '.' && eq[i + 2] == '.'))
                return fx_err_setf(err, FX_EARG,
                                   "einsum(): found '.' for operand %d that is not part of any "
                                   "ellipsis",
                                   cur);
            i += 2;
            if (nlab[cur] > FX_MAX_DIMS) goto too_many;
            labels[cur][nlab[cur]++] = EIN_ELLIPSIS;
            ell_in_input = true;
        } else if (ch == ',') {
            if (++cur >= nops)
                return fx_err_setf(err, FX_EARG,
                                   "einsum(): fewer operands were provided than specified in the "
                                   "equation");
            ell_in_input = false;
        } else {
            if (!isalpha(ch))
                return fx_err_setf(err, FX_EARG,
                                   "einsum(): invalid subscript given at index %zu in the equation "
                                   "string, subscripts must be in [a-zA-Z]",
                                   i);
            if (nlab[cur] > FX_MAX_DIMS) goto too_many;
            labels[cur][nlab[cur]++] = (uint8_t)sub_of(ch);
        }
    }
    if (cur != nops - 1)
        return fx_err_setf(err, FX_EARG,
                           "einsum(): more operands were provided than specified in the equation");

    int64_t label_count[EIN_LABELS] = {0};
    int ell_num_dim = 0;
    for (int i = 0; i < nops; i++) {
        int nd = opnd[i]->ndim, n = nlab[i];
        bool has_ell = false;
        for (int k = 0; k < nlab[i]; k++) {
            if (labels[i][k] == EIN_ELLIPSIS) {
                n--;
                has_ell = true;
            } else {
                label_count[labels[i][k]]++;
            }
        }
        if (has_ell && nd - n > ell_num_dim) ell_num_dim = nd - n;
        if (has_ell ? n > nd : n != nd)
            return fx_err_setf(err, FX_EARG,
                               "einsum(): the number of subscripts in the equation (%d) %s (%d) "
                               "for operand %d%s",
                               n,
                               has_ell ? "is more than the number of dimensions"
                                       : "does not match the number of dimensions",
                               nd, i, has_ell ? "" : " and no ellipsis was given");
    }

    /* the aligned layout: output dims, then contracted dims */
    int label_perm[EIN_LABELS];
    for (int s = 0; s < EIN_LABELS; s++) label_perm[s] = -1;
    int perm_index = 0, ell_index = 0;
    bool ell_in_output = false;
    if (!arrow) {
        perm_index = ell_num_dim;
        ell_in_output = true;
        for (int s = 0; s < EIN_LABELS; s++)
            if (label_count[s] == 1) label_perm[s] = perm_index++;
    } else {
        const char *rhs = arrow + 2;
        size_t rlen = strlen(rhs);
        for (size_t i = 0; i < rlen; i++) {
            unsigned char ch = (unsigned char)rhs[i];
            if (ch == ' ') continue;
            if (ch == '.') {
                if (ell_in_output)
                    return fx_err_setf(err, FX_EARG,
                                       "einsum(): found '.' for output but an ellipsis (...) was "
                                       "already found");
                if (!(i + 2 < rlen && rhs[i + 1] == '.' && rhs[i + 2] == '.'))
                    return fx_err_setf(err, FX_EARG,
                                       "einsum(): found '.' for output that is not part of any "
                                       "ellipsis (...)");
                i += 2;
                ell_index = perm_index;
                perm_index += ell_num_dim;
                ell_in_output = true;
                continue;
            }
            if (!isalpha(ch))
                return fx_err_setf(err, FX_EARG,
                                   "einsum(): invalid subscript given at index %zu in the equation "
                                   "string, subscripts must be in [a-zA-Z]",
                                   lhs_len + 2 + i);
            int s = sub_of(ch);
            if (label_count[s] == 0 || label_perm[s] != -1)
                return fx_err_setf(err, FX_EARG, "einsum(): output subscript %c%s", ch,
                                   label_perm[s] > -1
                                       ? " appears more than once in the output"
                                       : " does not appear in the equation for any input operand");
            label_perm[s] = perm_index++;
        }
    }
    const int out_num_dim = perm_index;
    if (!ell_in_output) {
        ell_index = perm_index;
        perm_index += ell_num_dim;
    }
    for (int s = 0; s < EIN_LABELS; s++)
        if (label_count[s] > 0 && label_perm[s] == -1) label_perm[s] = perm_index++;
    if (perm_index > FX_MAX_DIMS)
        return fx_err_setf(err, FX_ENOTIMPL,
                           "einsum(): the equation aligns its operands to %d dims; fxdb tensors "
                           "have at most %d",
                           perm_index, FX_MAX_DIMS);

    /* align every operand */
    int64_t label_size[EIN_LABELS], ell_sizes[FX_MAX_DIMS];
    for (int s = 0; s < EIN_LABELS; s++) label_size[s] = 1;
    for (int j = 0; j < FX_MAX_DIMS; j++) ell_sizes[j] = 1;
    int dim_counts[FX_MAX_DIMS] = {0};
    fx_tensor *ops[EIN_MAX_OPS] = {0};
    int nlive = 0, rc = FX_OK;
    for (int i = 0; i < nops && !rc; i++) {
        fx_tensor *op = fx_tensor_retain(opnd[i]);
        int64_t perm[FX_MAX_DIMS];
        for (int k = 0; k < perm_index; k++) perm[k] = -1;
        int dim = 0;
        for (int k = 0; k < nlab[i] && !rc; k++) {
            int s = labels[i][k];
            if (s == EIN_ELLIPSIS) {
                int ndim = opnd[i]->ndim - (nlab[i] - 1);
                for (int j = ell_num_dim - ndim; j < ell_num_dim && !rc; j++) {
                    if (ne1(op, dim)) {
                        if (ell_sizes[j] != 1 && ell_sizes[j] != op->sizes[dim])
                            rc = fx_err_setf(err, FX_ESHAPE,
                                             "einsum(): dimension %d covered by ellipsis in "
                                             "operand %d has size %lld which does not broadcast "
                                             "with previously seen ellipsis with size %lld for "
                                             "the respective dimension",
                                             dim, i, (long long)op->sizes[dim], (long long)ell_sizes[j]);
                        ell_sizes[j] = op->sizes[dim];
                        dim_counts[ell_index + j]++;
                    }
                    perm[ell_index + j] = dim++;
                }
            } else if (perm[label_perm[s]] == -1) {
                if (ne1(op, dim)) {
                    if (label_size[s] != 1 && label_size[s] != op->sizes[dim])
                        rc = fx_err_setf(err, FX_ESHAPE,
                                         "einsum(): subscript %c has size %lld for operand %d "
                                         "which does not broadcast with previously seen size %lld",
                                         label_of(s), (long long)op->sizes[dim], i,
                                         (long long)label_size[s]);
                    label_size[s] = op->sizes[dim];
                    dim_counts[label_perm[s]]++;
                }
                perm[label_perm[s]] = dim++;
            } else { /* repeated label: its diagonal, moved back to the first one's place */
                int prev = (int)perm[label_perm[s]];
                if (op->sizes[dim] != op->sizes[prev]) {
                    rc = fx_err_setf(err, FX_ESHAPE,
                                     "einsum(): subscript %c is repeated for operand %d but the "
                                     "sizes don't match, %lld != %lld",
                                     label_of(s), i, (long long)op->sizes[dim],
                                     (long long)op->sizes[prev]);
                    break;
                }
                rc = apply_i(ctx, FX_OP_DIAGONAL, &op, 3, 0, prev, dim);
                if (!rc) { /* movedim(-1, prev) */
                    int64_t mv[FX_MAX_DIMS];
                    int nd = op->ndim, m = 0;
                    for (int d = 0; d < nd - 1; d++) {
                        if (d == prev) mv[m++] = nd - 1;
                        mv[m++] = d;
                    }
                    if (prev == nd - 1) mv[m++] = nd - 1;
                    rc = apply_ints(ctx, FX_OP_PERMUTE, &op, nd, mv, NULL);
                }
            }
        }
        for (int k = 0; k < perm_index && !rc; k++)
            if (perm[k] == -1) {
                rc = apply_i(ctx, FX_OP_UNSQUEEZE, &op, 1, dim, 0, 0);
                perm[k] = dim++;
            }
        if (!rc) rc = apply_ints(ctx, FX_OP_PERMUTE, &op, perm_index, perm, NULL);
        if (rc) {
            fx_tensor_release(op);
            break;
        }
        ops[nlive++] = op;
    }

    /* contract, left to right (ops kept as a deque: the result goes to the front) or along path */
    int pk = 0;
    while (!rc && nlive > 1) {
        int i = 0, j = 1;
        if (pv) {
            i = (int)pv->u.list.items[pk++].u.i;
            j = (int)pv->u.list.items[pk++].u.i;
            if (j < i) {
                int t = i;
                i = j, j = t;
            }
            if (i == j || i < 0 || j >= nlive) {
                rc = fx_err_setf(err, FX_EARG, "einsum(): invalid contraction (%d, %d)%s", i, j,
                                 i == j ? " cannot contract an operand with itself"
                                        : " operand index is out of bounds");
                break;
            }
        }
        fx_tensor *x = ops[i], *y = ops[j];
        memmove(&ops[j], &ops[j + 1], sizeof ops[0] * (size_t)(nlive - j - 1));
        nlive--;
        memmove(&ops[i], &ops[i + 1], sizeof ops[0] * (size_t)(nlive - i - 1));
        nlive--;
        int64_t sum_dims[FX_MAX_DIMS], xs[FX_MAX_DIMS], ys[FX_MAX_DIMS];
        int ns = 0, nx = 0, ny = 0;
        for (int d = out_num_dim; d < perm_index && !rc; d++) {
            bool sa = ne1(x, d), sb = ne1(y, d);
            if (sa && sb) {
                if (x->sizes[d] != y->sizes[d])
                    rc = fx_err_setf(err, FX_ESHAPE, "non-broadcast dimensions must match");
                if (--dim_counts[d] == 1) {
                    sum_dims[ns++] = d;
                    dim_counts[d] = 0;
                }
            } else if (dim_counts[d] == 1) {
                if (sa) {
                    xs[nx++] = d;
                    dim_counts[d] = 0;
                } else if (sb) {
                    ys[ny++] = d;
                    dim_counts[d] = 0;
                }
            }
        }
        if (!rc && nx) rc = sum_keep(ctx, &x, nx, xs);
        if (!rc && ny) rc = sum_keep(ctx, &y, ny, ys);
        fx_tensor *r = NULL;
        if (!rc) {
            rc = sumproduct_pair(ctx, x, y, ns, sum_dims, &r);
            x = y = NULL;
        }
        fx_tensor_release(x), fx_tensor_release(y);
        if (rc) break;
        if (pv) {
            ops[nlive++] = r;
        } else {
            memmove(&ops[1], &ops[0], sizeof ops[0] * (size_t)nlive);
            ops[0] = r;
            nlive++;
        }
    }
    if (!rc && perm_index > out_num_dim) {
        if (nops > 1) {
            fx_symint sz[FX_MAX_DIMS];
            for (int d = 0; d < out_num_dim; d++) sz[d] = fx_tensor_sym_size(ops[0], d);
            rc = apply_sizes(ctx, FX_OP_VIEW, &ops[0], out_num_dim, sz);
        } else {
            int64_t dims[FX_MAX_DIMS];
            for (int d = out_num_dim; d < perm_index; d++) dims[d - out_num_dim] = d;
            rc = apply_ints(ctx, FX_OP_SUM_DIM_INTLIST, &ops[0], perm_index - out_num_dim, dims, NULL);
        }
    }
    if (rc) {
        for (int k = 0; k < nlive; k++) fx_tensor_release(ops[k]);
        return rc;
    }
    out[0] = fx_iv_tensor_steal(ops[0]);
    return FX_OK;
too_many:
    return fx_err_setf(err, FX_ENOTIMPL, "einsum(): fxdb tensors have at most %d dimensions",
                       FX_MAX_DIMS);
}
