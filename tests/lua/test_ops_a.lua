-- tests/lua/test_ops_a.lua — the ops of issue 3 part A as a Lua user meets them: Lua operators
-- (% // ^ 2 - x, & | ~ << >>), methods and torch.* functions picking PyTorch's overloads, the
-- ATen ops an export records for them (factory keywords device / pin_memory included), multiple
-- returns (max.dim), seeded randomness, and error messages. Expected values are written out by
-- hand or were printed by PyTorch (torch 1.13) for the same calls.
local T = dofile("tests/lua/harness.lua")

local eqlist = T.eqlist

-- The targets of the call_function nodes of an exported program, in order.
local function targets(ep)
  local out = {}
  for _, n in ipairs(ep.graph.nodes) do
    if n.op == "call_function" then out[#out + 1] = tostring(n.target) end
  end
  return out
end

local function export_fn(fn, args)
  local M = nn.Module:extend("M")
  function M:forward(a, b) return fn(a, b) end
  return torch.export.export(M(), args)
end

local x = torch.tensor({-2.5, -1.0, 0.5, 3.0})
local i = torch.tensor({-7, 7, -8, 5})

T.test("Lua operators on tensors are PyTorch's Python operators", function()
  eqlist(i % 3, {2, 1, 1, 2})
  eqlist(-7 % torch.tensor({3, -3, 5, -2}), {2, -1, 3, -1})
  eqlist(i // 2, {-4, 3, -4, 2})
  eqlist(x // 2, {-2, -1, 0, 1})
  eqlist(x ^ 2, {6.25, 1, 0.25, 9})
  eqlist(2 ^ torch.tensor({0, 1, 3}), {1, 2, 8})
  eqlist(2 - x, {4.5, 3, 1.5, -1})
  eqlist(i & 6, {0, 6, 0, 4})
  eqlist(3 | torch.tensor({4, 8}), {7, 11})
  eqlist(i ~ 1, {-8, 6, -7, 4})
  eqlist(~torch.tensor({true, false}), {false, true})
  eqlist(~torch.tensor({0, -1, 5}), {-1, 0, -6})
  eqlist(torch.tensor({1, 2}) << 3, {8, 16})
  eqlist(1 << torch.tensor({0, 4}), {1, 16})
  eqlist(torch.tensor({-16, 16}) >> 2, {-4, 4})
end)

T.test("the operators record the ATen overloads PyTorch records", function()
  local ep = export_fn(function(a, b)
    return a % 2, 2 % a, a // 2, a ^ 2, 2 ^ a, 2 - a, b & 1, b << 1, 1 << b, ~b
  end, {torch.randn(3), torch.tensor({1, 2, 3})})
  local want = {"aten.remainder.Scalar", "aten.remainder.Scalar_Tensor", "aten.floor_divide.default",
                "aten.pow.Tensor_Scalar", "aten.pow.Scalar", "aten.rsub.Scalar",
                "aten.bitwise_and.Scalar", "aten.__lshift__.Scalar",
                "aten.bitwise_left_shift.Scalar_Tensor", "aten.bitwise_not.default"}
  eqlist(targets(ep), want)
  T.truthy(ep.graph_module.code:find("lshift = torch.ops.aten.__lshift__.Scalar(b, 1)", 1, true),
           "FX drops the underscores of a magic name")
end)

T.test("methods and torch.* pick overloads as PyTorch's binding does", function()
  local ep = export_fn(function(a)
    local v, idx = a:max(0)
    return a:eq(0), a:lt(a), torch.where(a:gt(0), a, 0.0), torch.where(a:gt(0), a, a),
           a:clamp(0, 1), a:clamp(a, a), a:max(), v, idx, a:amax(0), a:argmax(), a:var(),
           a:var(0), a:std(0, {keepdim = true}), a:all(), a:any(0), a:prod(), a:prod(0),
           a:cumsum(0), torch.maximum(a, a), a:max(a), a:sigmoid(), a:gelu({approximate = "tanh"})
  end, {torch.randn(3)})
  eqlist(targets(ep), {
    "aten.max.dim", "getitem", "getitem", "aten.eq.Scalar", "aten.lt.Tensor", "aten.gt.Scalar",
    "aten.where.ScalarOther", "aten.gt.Scalar", "aten.where.self", "aten.clamp.default",
    "aten.clamp.Tensor", "aten.max.default", "aten.amax.default", "aten.argmax.default",
    "aten.var.correction", "aten.var.correction", "aten.std.correction", "aten.all.default",
    "aten.any.dim", "aten.prod.default", "aten.prod.dim_int", "aten.cumsum.default",
    "aten.maximum.default", "aten.maximum.default", "aten.sigmoid.default", "aten.gelu.default"})
  local code = ep.graph_module.code
  T.truthy(code:find("torch.ops.aten.var.correction(a, correction = 1)", 1, true), code)
  T.truthy(code:find("torch.ops.aten.std.correction(a, [0], correction = 1, keepdim = True)", 1, true))
end)

T.test("factories record device and pin_memory as PyTorch's Python binding passes them", function()
  local ep = export_fn(function(a)
    return torch.zeros(3) + torch.ones({3}, torch.int64) + torch.arange(3) + torch.arange(1, 4) +
           torch.arange(0, 3, 1) + torch.full_like(a, 7) + torch.zeros_like(a) + torch.eye(3)[0] +
           torch.randint(0, 10, {3}) + torch.randperm(3) + torch.randn(3)
  end, {torch.randn(3)})
  local code = ep.graph_module.code
  for _, s in ipairs{
      "torch.ops.aten.zeros.default([3], device = device(type='cpu'), pin_memory = False)",
      "torch.ops.aten.ones.default([3], dtype = torch.int64, device = device(type='cpu'), pin_memory = False)",
      "torch.ops.aten.arange.default(3, device = device(type='cpu'), pin_memory = False)",
      "torch.ops.aten.arange.start(1, 4, device = device(type='cpu'), pin_memory = False)",
      "torch.ops.aten.arange.start_step(0, 3, device = device(type='cpu'), pin_memory = False)",
      "torch.ops.aten.full_like.default(a, 7, pin_memory = False)",
      "torch.ops.aten.zeros_like.default(a, pin_memory = False)",
      "torch.ops.aten.eye.default(3, device = device(type='cpu'), pin_memory = False)",
      "torch.ops.aten.randint.low(0, 10, [3], device = device(type='cpu'), pin_memory = False)",
      "torch.ops.aten.randperm.default(3, device = device(type='cpu'), pin_memory = False)",
      "torch.ops.aten.randn.default([3], device = device(type='cpu'), pin_memory = False)"} do
    T.truthy(code:find(s, 1, true), s)
  end
  -- a device the caller gives wins; raw torch.ops calls add nothing
  T.eq(torch.zeros(2, {device = "meta"}).device, "meta")
  local ep2 = export_fn(function(a) return torch.ops.aten.zeros.default({2}) + a end, {torch.randn(2)})
  T.truthy(ep2.graph_module.code:find("torch.ops.aten.zeros.default([2])", 1, true))
end)

T.test("multiple returns, reductions and dims", function()
  local m = torch.tensor({{1.5, -2.0, 3.0}, {0.5, 4.0, -1.0}})
  local v, idx = m:max(1)
  eqlist(v, {3.0, 4.0})
  eqlist(idx, {2, 1})
  v, idx = m:min(0, {keepdim = true})
  eqlist(v, {{0.5, -2.0, -1.0}})
  eqlist(idx, {{1, 0, 1}})
  eqlist(m:argmax(), 4)
  eqlist(m:amax({0, 1}), 4.0)
  eqlist(m:prod(1), {-9.0, -2.0})
  eqlist(m:var(), 5.3, 1e-6)
  eqlist(m:std(0), {0.70710677, 4.2426405, 2.828427}, 1e-6)
  eqlist(m:gt(0):all(1), {false, false})
  eqlist(m:gt(0):any(0), {true, true, true})
  eqlist(m:cumsum(1), {{1.5, -0.5, 2.5}, {0.5, 4.5, 3.5}})
  eqlist(torch.tensor({true, false, true}):cumsum(0), {1, 1, 2})
  T.eq(torch.tensor({true, false}):cumsum(0).dtype, torch.int64)
end)

T.test("seeded randomness reproduces PyTorch's CPU generator", function()
  torch.manual_seed(0)
  eqlist(torch.randint(0, 10, {5}), {4, 9, 3, 0, 3})
  torch.manual_seed(0)
  eqlist(torch.randperm(5), {4, 0, 1, 3, 2})
  torch.manual_seed(0)
  eqlist(torch.empty(3):normal_(2, 3), {6.6230, 1.1197, -4.5364}, 1e-4)
  torch.manual_seed(0)
  eqlist(torch.empty(3):uniform_(-1, 1), {-0.0074, 0.5364, -0.8230}, 1e-4)
end)

T.test("dtypes follow torch.result_type and each op's rules", function()
  T.eq(i:exp().dtype, torch.float32)
  T.eq(i:abs().dtype, torch.int64)
  T.eq((i % 2.5).dtype, torch.float32)
  T.eq(torch.where(i:gt(0), i, 2.5).dtype, torch.float32)
  T.eq(torch.where(i:gt(0), 1, 0).dtype, torch.int64)
  T.eq(i:clamp(0.5).dtype, torch.float32)
  T.eq(i:eq(x).dtype, torch.bool)
  T.eq(torch.tensor({1, 2}, torch.uint8):all().dtype, torch.uint8)
  T.eq(torch.arange(2.5).dtype, torch.float32)
  T.eq(torch.eye(2, {dtype = torch.bool}).dtype, torch.bool)
end)

T.test("errors carry PyTorch's messages", function()
  T.checkerr("\"abs_cpu\" not implemented for 'Bool'", function() return torch.tensor({true}):abs() end)
  T.checkerr("Integers to negative integer powers are not allowed.", function() return i ^ -1 end)
  T.checkerr("ZeroDivisionError", function() return i % 0 end)
  T.checkerr("\"bitwise_and_cpu\" not implemented for 'Float'", function() return x & 1 end)
  T.checkerr("where expected condition to be a boolean tensor, but got a tensor with dtype Float",
             function() return torch.where(x, x, x) end)
  T.checkerr("torch.clamp: At least one of 'min' or 'max' must not be None", function() return x:clamp() end)
  T.checkerr("max(): Expected reduction dim to be specified for input.numel() == 0.",
             function() return torch.zeros(0, 3):max() end)
  T.checkerr("std and var only support floating point and complex dtypes", function() return i:var() end)
  T.checkerr("random_ expects 'from' to be less than 'to', but got from=5 >= to=5",
             function() return torch.randint(5, 5, {2}) end)
  T.checkerr("tril: input tensor must have at least 2 dimensions", function() return x:tril() end)
  T.checkerr("result type Float can't be cast to the desired output type Long", function() return i:exp_() end)
end)

T.done()
