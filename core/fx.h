/* core/fx.h — the umbrella header of libfxdb: tensors, ops, tracing, export, execution.
 * Layer: core.
 *
 * A whole round trip in C (tests/unit/test_example.c compiles and runs this very code):
 *
 *     fx_err err; fx_err_clear(&err);
 *     fx_ctx eager; fx_ctx_init(&eager, FX_MODE_EAGER);
 *     int64_t n = 3;
 *     fx_tensor *x, *y;
 *     fx_tensor_zeros(1, &n, FX_DTYPE_F32, FX_DEVICE_CPU, &x, &err);
 *     fx_ivalue xv = fx_iv_tensor_steal(x), two = fx_iv_int(2);
 *     fx_call_t(&eager, FX_OP_ADD_TENSOR, &y, &err, 2, &xv, &two);   // y = x + 2
 *
 *     // trace y = x * 2 + 1, in place on a buffer
 *     fx_trace_opts to = {0};
 *     fx_tracer *tr = fx_tracer_new(&to, &err);
 *     fx_tensor *b;
 *     fx_tracer_input(tr, FX_INPUT_BUFFER, "b_state", "state", true, y, &b, &err);
 *     fx_ivalue bv = fx_iv_tensor_steal(b), out;
 *     fx_call(fx_tracer_ctx(tr), FX_OP_MUL__TENSOR, &out, &err, 2, &bv, &two);
 *     fx_tracer_finish(tr, &out, 1, &err);
 *     fx_graph *raw; fx_input_info *infos; int ninfos;
 *     fx_tracer_take(tr, &raw, &infos, &ninfos, &err);
 *     fx_named_tensor st = {(char *)"state", y};
 *     fx_program *ep;
 *     fx_export_opts eo = {0};
 *     fx_export_build(raw, infos, ninfos, &st, 1, &eo, &ep, &err);    // mul + BUFFER_MUTATION
 *     fx_strbuf sb = FX_STRBUF_INIT;
 *     fx_program_format(&sb, ep);                                     // as print(ep)
 *     ...
 *     fx_strbuf_free(&sb); fx_program_free(ep); fx_tracer_free(tr);
 *     fx_ivalue_clear(&out); fx_ivalue_clear(&bv); fx_ivalue_clear(&xv); fx_tensor_release(y);
 */
#ifndef FX_H
#define FX_H

#define FX_VERSION_MAJOR 0
#define FX_VERSION_MINOR 1
#define FX_VERSION_PATCH 0
#define FX_VERSION "0.1.0"

#include "core/alloc_cache.h"
#include "core/dispatch.h"
#include "core/dtype.h"
#include "core/export.h"
#include "core/fx_alloc.h"
#include "core/fx_err.h"
#include "core/graph.h"
#include "core/interp.h"
#include "core/ivalue.h"
#include "core/parallel.h"
#include "core/passes.h"
#include "core/provenance.h"
#include "core/random.h"
#include "core/registry.h"
#include "core/schema.h"
#include "core/strbuf.h"
#include "core/tensor.h"
#include "core/tensor_fmt.h"
#include "core/trace.h"

#endif
