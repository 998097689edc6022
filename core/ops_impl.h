/* core/ops_impl.h — declarations of every meta function, kernel and composite named in ops.def,
 * plus helpers shared by them. Layer: core (private). */
#ifndef FX_OPS_IMPL_H
#define FX_OPS_IMPL_H

#include "core/dispatch.h"
#include "core/tensor_impl.h"

#define FX_OP(id, schema, meta, kernel, twin, scatter, flags)          \
    int meta(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out);        \
    int kernel(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out);
#include "core/ops.def"
#undef FX_OP

/* fx_k_none / fx_nometa are placeholders meaning "nothing here"; the registry stores NULL. */
int fx_k_none(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out);
int fx_nometa(fx_opctx *ctx, const fx_ivalue *a, fx_ivalue *out);

#endif
