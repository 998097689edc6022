/* core/kernels/k_complex.h — the complex64 / complex128 paths of the elementwise kernels.
 * Layer: core (private). Defined in k_complex.c; called by the real kernels when an operand's
 * compute dtype is complex (the dispatcher lets complex reach only ops flagged FX_OPF_COMPLEX). */
#ifndef FX_K_COMPLEX_H
#define FX_K_COMPLEX_H

#include "core/meta_common.h"

/* add / sub / mul / div (and in-place twins) in the complex compute dtype p->compute; res is the
 * fresh result or self (cpu). Errors: FX_ETYPE for another binary op; FX_ENOMEM. */
int fx_k_binary_complex(fx_opctx *ctx, const fx_binary_plan *p, fx_tensor *res);
/* neg, exp, abs (res real: the element's modulus), conj_physical of the complex cpu tensor src
 * into res (same shape; res is fresh or src itself for in-place forms). FX_ETYPE for other ops. */
int fx_k_unary_complex(fx_opctx *ctx, const fx_tensor *src, fx_tensor *res);

#endif
