#!/usr/bin/env python3
# tests/unit/gen_golden_a.py — writes tests/unit/golden_a.h: PyTorch's outputs for a fixed set of
# inputs and calls of the kernels-A ops (pointwise, reductions, creation, seeded randomness).
# Layer: tests (a generator run by hand; the build never runs it and fxdb never depends on torch).
# Usage: /usr/bin/python3 tests/unit/gen_golden_a.py > tests/unit/golden_a.h
# Needs PyTorch (Debian's python3-torch 1.13 was used). Each case calls torch.ops.aten.<op>.<overload>
# with the same arguments test_golden_a.c passes to fxdb, so the exact ATen overload is exercised.
# Argument strings: T:name (an input tensor), I:n, F:x, B:0|1, L:a,b (int list), N (None),
# D:dtype, S:text; arguments are separated by ';'. A case may set `seed` (torch.manual_seed before
# the call), `fill` (the op is in place on a fresh tensor of that shape, values overwritten), `kw`
# (keyword-only arguments, also the last entries of the spec) and `pykw` (keywords only torch needs).
import math
import sys

import torch

torch.set_printoptions(precision=10)

INPUTS = {
    "x": (torch.float32, [3, 4], [-2.5, -1.0, -0.25, 0.0, 0.5, 1.0, 1.75, 3.0, -3.5, 2.25, 4.0, -0.75]),
    "xp": (torch.float32, [3, 4], [0.1, 0.5, 1.0, 2.0, 3.5, 7.25, 0.01, 12.0, 0.3, 1.5, 100.0, 6.0]),
    "xd": (torch.float64, [3, 4], [-2.5, -1.0, -0.25, 0.0, 0.5, 1.0, 1.75, 3.0, -3.5, 2.25, 4.0, -0.75]),
    "y": (torch.float32, [4], [0.75, -2.0, 3.0, -0.5]),
    "nf": (torch.float32, [4], [float("nan"), float("inf"), float("-inf"), 1.0]),
    "i": (torch.int64, [3, 4], [-7, -3, 0, 2, 5, 8, -1, 3, 4, -6, 7, 1]),
    "j": (torch.int64, [3, 4], [3, -2, 5, 1, -4, 3, 2, -5, 1, 2, -3, 6]),
    "i32": (torch.int32, [3, 4], [-7, -3, 0, 2, 5, 8, -1, 3, 4, -6, 7, 1]),
    "u": (torch.uint8, [3, 4], [0, 1, 2, 3, 250, 7, 8, 128, 5, 0, 255, 9]),
    "b": (torch.bool, [3, 4], [1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1]),
    "c": (torch.bool, [4], [1, 0, 0, 1]),
    "x3": (torch.float32, [1, 3, 4], [-2.5, -1.0, -0.25, 0.0, 0.5, 1.0, 1.75, 3.0, -3.5, 2.25, 4.0, -0.75]),
}

# (name, op, args, extras)
CASES = [
    # unary
    *[(f"{op}_x", f"{op}.default", "T:x", {}) for op in
      ["abs", "exp", "sin", "cos", "tanh", "sigmoid", "relu", "silu", "neg", "reciprocal"]],
    *[(f"{op}_xp", f"{op}.default", "T:xp", {}) for op in ["log", "log1p", "sqrt", "rsqrt"]],
    ("gelu_x", "gelu.default", "T:x", {}),
    ("gelu_tanh_x", "gelu.default", "T:x;S:tanh", {"kw": {"approximate": "tanh"}}),
    *[(f"{op}_i", f"{op}.default", "T:i", {}) for op in ["exp", "abs", "relu", "sigmoid", "bitwise_not", "logical_not"]],
    ("exp_xd", "exp.default", "T:xd", {}),
    ("tanh_xd", "tanh.default", "T:xd", {}),
    ("bitwise_not_b", "bitwise_not.default", "T:b", {}),
    ("bitwise_not_u", "bitwise_not.default", "T:u", {}),
    ("logical_not_x", "logical_not.default", "T:x", {}),
    # binary
    ("pow_tt", "pow.Tensor_Tensor", "T:xp;T:x", {}),
    ("pow_ts_2", "pow.Tensor_Scalar", "T:x;I:2", {}),
    ("pow_ts_3", "pow.Tensor_Scalar", "T:x;I:3", {}),
    ("pow_ts_half", "pow.Tensor_Scalar", "T:xp;F:0.5", {}),
    ("pow_ts_mhalf", "pow.Tensor_Scalar", "T:xp;F:-0.5", {}),
    ("pow_ts_m2", "pow.Tensor_Scalar", "T:x;I:-2", {}),
    ("pow_ts_17", "pow.Tensor_Scalar", "T:xp;F:1.7", {}),
    ("pow_ts_i", "pow.Tensor_Scalar", "T:i;I:3", {}),
    ("pow_ts_if", "pow.Tensor_Scalar", "T:i;F:0.5", {}),
    ("pow_s", "pow.Scalar", "F:2.5;T:x", {}),
    ("pow_s_i", "pow.Scalar", "I:2;T:i", {}),
    ("pow_tt_i", "pow.Tensor_Tensor", "T:i;T:j", {}),
    ("remainder_t", "remainder.Tensor", "T:x;T:y", {}),
    ("remainder_s", "remainder.Scalar", "T:x;F:-1.5", {}),
    ("remainder_st", "remainder.Scalar_Tensor", "I:-7;T:j", {}),
    ("remainder_ii", "remainder.Tensor", "T:i;T:j", {}),
    ("floor_divide_ii", "floor_divide.default", "T:i;T:j", {}),
    ("floor_divide_x", "floor_divide.default", "T:x;T:y", {}),
    ("floor_divide_s", "floor_divide.Scalar", "T:i;I:-3", {}),
    ("maximum_xy", "maximum.default", "T:x;T:y", {}),
    ("minimum_xn", "minimum.default", "T:x;T:nf", {}),
    ("maximum_ib", "maximum.default", "T:i;T:b", {}),
    ("eq_t", "eq.Tensor", "T:i;T:j", {}),
    ("ne_s", "ne.Scalar", "T:x;F:1.0", {}),
    ("lt_t", "lt.Tensor", "T:x;T:y", {}),
    ("le_s", "le.Scalar", "T:i;F:2.5", {}),
    ("gt_t", "gt.Tensor", "T:x;T:nf", {}),
    ("ge_s", "ge.Scalar", "T:u;I:8", {}),
    ("logical_and", "logical_and.default", "T:x;T:i", {}),
    ("logical_or", "logical_or.default", "T:b;T:y", {}),
    ("logical_xor", "logical_xor.default", "T:i;T:b", {}),
    ("bitwise_and_t", "bitwise_and.Tensor", "T:i;T:j", {}),
    ("bitwise_or_s", "bitwise_or.Scalar", "T:i;I:6", {}),
    ("bitwise_xor_b", "bitwise_xor.Tensor", "T:b;T:c", {}),
    ("bitwise_and_u", "bitwise_and.Scalar", "T:u;I:12", {}),
    ("lshift_s", "__lshift__.Scalar", "T:i;I:3", {}),
    ("rshift_t", "__rshift__.Tensor", "T:i;T:j", {}),
    ("lshift_i32", "bitwise_left_shift.Tensor_Scalar", "T:i32;I:30", {}),
    ("rshift_u", "bitwise_right_shift.Tensor_Scalar", "T:u;I:3", {}),
    ("rsub_s", "rsub.Scalar", "T:x;I:2", {}),
    ("rsub_alpha", "rsub.Scalar", "T:i;I:10;I:3", {}),
    ("where_self", "where.self", "T:c;T:x;T:y", {}),
    ("where_i", "where.self", "T:b;T:i;T:x", {}),
    ("clamp_s", "clamp.default", "T:x;F:-1.0;F:2.0", {}),
    ("clamp_min", "clamp.default", "T:i;I:0", {}),
    ("clamp_if", "clamp.default", "T:i;F:0.5;N", {}),
    ("clamp_t", "clamp.Tensor", "T:x;T:y;N", {}),
    ("clamp_tt", "clamp.Tensor", "T:x;N;T:y", {}),
    # reductions
    ("amax_0", "amax.default", "T:x;L:0", {}),
    ("amin_1k", "amin.default", "T:x;L:1;B:1", {}),
    ("amax_all_i", "amax.default", "T:i", {}),
    ("max_x", "max.default", "T:x", {}),
    ("min_i", "min.default", "T:i", {}),
    ("max_dim_v", "max.dim", "T:x;I:1", {"ret": 0}),
    ("max_dim_i", "max.dim", "T:x;I:1", {"ret": 1}),
    ("min_dim_v", "min.dim", "T:i;I:0;B:1", {"ret": 0}),
    ("min_dim_i", "min.dim", "T:i;I:0;B:1", {"ret": 1}),
    ("argmax_x", "argmax.default", "T:x", {}),
    ("argmax_0", "argmax.default", "T:x;I:0", {}),
    ("argmin_i1", "argmin.default", "T:i;I:1;B:1", {}),
    ("prod_x", "prod.default", "T:x", {}),
    ("prod_i1", "prod.dim_int", "T:i;I:1", {}),
    ("prod_b", "prod.default", "T:b", {}),
    ("var_all", "var.correction", "T:x;N", {"pykw": {"correction": None}}),
    ("var_1", "var.correction", "T:x;L:1;I:0", {"kw": {"correction": 0}}),
    ("std_0", "std.correction", "T:xd;L:0;I:1;B:1", {"kw": {"correction": 1, "keepdim": True}}),
    ("all_x", "all.default", "T:x", {}),
    ("all_1", "all.dim", "T:b;I:1", {}),
    ("any_0", "any.dim", "T:i;I:0", {}),
    ("all_u", "all.default", "T:u", {}),
    ("cumsum_x1", "cumsum.default", "T:x;I:1", {}),
    ("cumsum_i0", "cumsum.default", "T:i;I:0", {}),
    ("cumsum_b", "cumsum.default", "T:b;I:1", {}),
    ("cumsum_u", "cumsum.default", "T:u;I:-1", {}),
    # creation
    ("eye_3", "eye.default", "I:3", {}),
    ("eye_2_4", "eye.m", "I:2;I:4", {}),
    ("tril_x", "tril.default", "T:x", {}),
    ("triu_x1", "triu.default", "T:x;I:1", {}),
    ("tril_im1", "tril.default", "T:i;I:-1", {}),
    ("arange_5", "arange.default", "I:5", {}),
    ("arange_25", "arange.default", "F:2.5", {}),
    ("arange_1_4", "arange.start", "I:1;I:4", {}),
    ("arange_f", "arange.start_step", "F:0.0;F:1.0;F:0.25", {}),
    ("full_like", "full_like.default", "T:i;F:2.5", {}),
    # randomness
    ("randint_0", "randint.low", "I:0;I:10;L:5", {"seed": 0}),
    ("randint_42", "randint.low", "I:-5;I:5;L:20", {"seed": 42}),
    ("randint_hi", "randint.default", "I:1000;L:7", {"seed": 123}),
    ("randperm_5", "randperm.default", "I:5", {"seed": 0}),
    ("randperm_20", "randperm.default", "I:20", {"seed": 0}),
    ("randperm_10", "randperm.default", "I:10", {"seed": 42}),
    ("rand_5", "rand.default", "L:5", {"seed": 0}),
    ("rand_20", "rand.default", "L:20", {"seed": 7}),
    ("randn_4", "randn.default", "L:4", {"seed": 0}),
    ("randn_17", "randn.default", "L:17", {"seed": 42}),
    ("randn_40", "randn.default", "L:40", {"seed": 3}),
    ("normal_5", "normal_.default", "F:2.0;F:3.0", {"seed": 0, "fill": [5]}),
    ("normal_20", "normal_.default", "F:-1.0;F:0.5", {"seed": 1, "fill": [20]}),
    ("uniform_6", "uniform_.default", "F:-1.0;F:1.0", {"seed": 0, "fill": [6]}),
    ("uniform_17", "uniform_.default", "F:2.0;F:5.0", {"seed": 9, "fill": [17]}),
    ("bernoulli_p", "bernoulli_.float", "F:0.3", {"seed": 0, "fill": [12]}),
    # issue 10: more pointwise ops, scans, reordering
    *[(f"{op}_x", f"{op}.default", "T:x", {}) for op in ["sign", "floor", "ceil", "trunc", "round", "erf", "expm1"]],
    *[(f"{op}_i", f"{op}.default", "T:i", {}) for op in ["sign", "floor", "round", "erf", "expm1"]],
    ("sign_b", "sign.default", "T:b", {}),
    ("sign_u", "sign.default", "T:u", {}),
    ("sign_nf", "sign.default", "T:nf", {}),
    ("floor_nf", "floor.default", "T:nf", {}),
    ("round_xd", "round.default", "T:xd", {}),
    ("round_dec1", "round.decimals", "T:xp;I:1", {"kw": {"decimals": 1}}),
    ("round_decm1", "round.decimals", "T:xp;I:-1", {"kw": {"decimals": -1}}),
    ("round_dec2d", "round.decimals", "T:xd;I:2", {"kw": {"decimals": 2}}),
    ("softplus_x", "softplus.default", "T:x", {}),
    ("softplus_bt", "softplus.default", "T:x;F:2.0;F:1.0", {}),
    ("softplus_xd", "softplus.default", "T:xd;F:0.5;I:3", {}),
    ("lerp_s", "lerp.Scalar", "T:x;T:y;F:0.3", {}),
    ("lerp_s_big", "lerp.Scalar", "T:x;T:y;F:0.75", {}),
    ("lerp_t", "lerp.Tensor", "T:y;T:x;T:xp", {}),
    ("cumprod_x1", "cumprod.default", "T:x;I:1", {}),
    ("cumprod_i0", "cumprod.default", "T:i;I:0", {}),
    ("cumprod_b", "cumprod.default", "T:b;I:1", {}),
    ("cumprod_u", "cumprod.default", "T:u;I:-1", {}),
    ("flip_x01", "flip.default", "T:x;L:0,1", {}),
    ("flip_i1", "flip.default", "T:i;L:-1", {}),
    ("flip_b0", "flip.default", "T:b;L:0", {}),
    ("roll_x1", "roll.default", "T:x;L:1;L:0", {}),
    ("roll_flat", "roll.default", "T:x;L:5", {}),
    ("roll_i2", "roll.default", "T:i;L:1,-2;L:0,1", {}),
    ("roll_neg", "roll.default", "T:xd;L:-7;L:1", {}),
    ("roll_same", "roll.default", "T:x;L:1,1;L:1,1", {}),
    ("sort_v", "sort.default", "T:x;I:1", {"ret": 0}),
    ("sort_i", "sort.default", "T:x;I:1", {"ret": 1}),
    ("sort_desc_i", "sort.default", "T:i;I:0;B:1", {"ret": 1}),
    ("sort_nf", "sort.default", "T:nf", {"ret": 1}),
    ("sort_stable", "sort.stable", "T:b;B:1;I:1;B:0", {"ret": 1, "kw": {"stable": True, "dim": 1, "descending": False}}),
    ("topk_v", "topk.default", "T:x;I:2", {"ret": 0}),
    ("topk_i", "topk.default", "T:x;I:2", {"ret": 1}),
    ("topk_small", "topk.default", "T:i;I:2;I:0;B:0", {"ret": 1}),
    ("topk_small_v", "topk.default", "T:i;I:2;I:0;B:0", {"ret": 0}),
    ("vnorm", "linalg_vector_norm.default", "T:x", {}),
    ("vnorm_1", "linalg_vector_norm.default", "T:x;F:1.0;L:1", {}),
    ("vnorm_inf", "linalg_vector_norm.default", "T:x;F:inf;L:0;B:1", {}),
    ("vnorm_ninf", "linalg_vector_norm.default", "T:xd;F:-inf;L:1", {}),
    ("vnorm_0", "linalg_vector_norm.default", "T:x;F:0.0;L:0", {}),
    ("vnorm_3", "linalg_vector_norm.default", "T:xp;F:3.0", {}),
    ("cpad", "constant_pad_nd.default", "T:x;L:1,2;F:1.5", {}),
    ("cpad_neg", "constant_pad_nd.default", "T:i;L:-1,1,1,0", {}),
    ("reflect1", "reflection_pad1d.default", "T:x;L:2,3", {}),
    ("reflect2", "reflection_pad2d.default", "T:x3;L:1,1,2,1", {}),
    ("replicate1", "replication_pad1d.default", "T:x;L:2,1", {}),
    ("replicate2", "replication_pad2d.default", "T:x3;L:0,2,1,1", {}),
]


def parse(spec):
    out = []
    if not spec:
        return out
    for tok in spec.split(";"):
        k, _, v = tok.partition(":")
        if k == "T":
            dt, shape, vals = INPUTS[v]
            out.append(torch.tensor(vals, dtype=dt).reshape(shape))
        elif k == "I":
            out.append(int(v))
        elif k == "F":
            out.append(float(v))
        elif k == "B":
            out.append(bool(int(v)))
        elif k == "L":
            out.append([int(a) for a in v.split(",")])
        elif k == "N":
            out.append(None)
        elif k == "S":
            out.append(v)
    return out


def cval(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return repr(float(v))


def main():
    w = sys.stdout.write
    w("/* tests/unit/golden_a.h — PyTorch's outputs for the kernels-A golden cases (test_golden_a.c).\n")
    w(f" * Layer: tests (data). Generated by tests/unit/gen_golden_a.py with torch {torch.__version__} on\n")
    w(" * this machine (Debian python3-torch, a CPU build without MKL, AVX2 kernels); do not edit. */\n")
    w("static const golden_input k_inputs[] = {\n")
    for name, (dt, shape, vals) in INPUTS.items():
        dims = ", ".join(str(s) for s in shape)
        w(f'    {{"{name}", "{str(dt)[6:]}", {len(shape)}, {{{dims}}}, {{{", ".join(cval(float(v)) for v in vals)}}}}},\n')
    w("};\n\nstatic const golden_case k_cases[] = {\n")
    for name, op, spec, ex in CASES:
        args = parse(spec)
        kw = ex.get("kw", {})
        opname, ov = op.rsplit(".", 1)
        fn = getattr(getattr(torch.ops.aten, opname), ov)
        pos = args
        if kw:  # keyword-only arguments are given by name (the spec still lists them positionally)
            pos = args[: len(args) - len([k for k in kw if k in ("approximate", "correction", "keepdim", "decimals", "stable", "dim", "descending")])]
        kw = dict(kw, **ex.get("pykw", {}))  # python-only keywords (torch 1.13 has no default)
        if "seed" in ex:
            torch.manual_seed(ex["seed"])
        if "fill" in ex:
            t = torch.empty(ex["fill"])
            r = fn(t, *pos, **kw)
        else:
            r = fn(*pos, **kw)
        if isinstance(r, tuple):
            r = r[ex.get("ret", 0)]
        vals = [float(v) for v in r.flatten().tolist()]
        dims = ", ".join(str(s) for s in r.shape)
        w(f'    {{"{name}", "{op}", "{spec}", {ex.get("ret", 0)}, {ex.get("seed", -1)}, '
          f'{len(ex.get("fill", []))}, {{{", ".join(str(s) for s in ex.get("fill", [0]))}}}, '
          f'"{str(r.dtype)[6:]}", {r.dim()}, {{{dims}}}, {len(vals)},\n')
        w(f'     (const double[]){{{", ".join(cval(v) for v in vals) or "0"}}}}},\n')
    w("};\n")


main()
