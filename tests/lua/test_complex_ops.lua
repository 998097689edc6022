-- tests/lua/test_complex_ops.lua — the complex coverage of issue 10: sin cos log sqrt tanh rsqrt
-- sigmoid reciprocal (and in-place twins), pow (tensor / scalar / PowKernel.cpp's special
-- exponents), eq / ne, where, prod, cumsum / cumprod, index_put / index_copy / index_select on
-- complex64 and complex128 (contiguous, transposed, broadcast) against torch 1.13's values for the
-- same inputs (printed by the script at the end of this file, 4 decimals, -0 taken as 0); the
-- ordering comparisons refused with PyTorch's message; rand / randn with a complex dtype drawing
-- the real view as PyTorch does (variance 1/2 per part for randn); naive references built from
-- the ops checked before (z^2 = z * z, sigmoid = 1 / (1 + exp(-z)), prod = a product of muls);
-- export in both modes against eager.
local T = dofile("tests/lua/harness.lua")

local function v(t)
  if t:is_complex() then t = torch.view_as_real(t) end
  local o = {}
  for i, x in ipairs(t:reshape(-1):tolist()) do
    o[i] = x ~= x and "nan" or (string.format("%.4f", x):gsub("^%-0%.0000$", "0.0000"))
  end
  return table.concat(o, " ")
end
local function g(s) return (s:gsub("%-0%.0000", "0.0000")) end -- torch's -0 as 0

local function c(re, im) return torch.complex(torch.tensor(re), torch.tensor(im)) end
local z = c({1.0, -0.5, 3, 0}, {2.0, 0.25, -1, 0})
local m = c({{1.0, -2.0, 0.5}, {0.25, 3.0, -1.0}}, {{0.5, 1.0, -1.5}, {2.0, 0.0, 1.0}})
local d = m:to(torch.complex128):t()

T.test("unary ops as torch 1.13", function()
  local want = {
    sin = "3.1658 1.9596 -0.4945 0.2217 0.2178 1.1634 0.0000 0.0000",
    cos = "2.0327 -3.0519 0.9052 0.1211 -1.5276 0.1658 1.0000 -0.0000",
    exp = "-1.1312 2.4717 0.5877 0.1501 10.8523 -16.9014 1.0000 0.0000",
    log = "0.8047 1.1071 -0.5816 2.6779 1.1513 -0.3218 -inf 0.0000",
    sqrt = "1.2720 0.7862 0.1718 0.7277 1.7553 -0.2848 0.0000 0.0000",
    tanh = "1.1667 -0.2435 -0.4855 0.1981 1.0021 -0.0045 0.0000 0.0000",
    rsqrt = "0.5689 -0.3516 0.3073 -1.3017 0.5551 0.0901 nan nan",
    sigmoid = "1.0214 0.4034 0.3757 0.0590 0.9722 -0.0397 0.5000 0.0000",
    reciprocal = "0.2000 -0.4000 -1.6000 -0.8000 0.3000 0.1000 nan nan",
  }
  for name, w in pairs(want) do T.eq(v(torch[name](z)), g(w), name) end
  T.eq(v(torch.sin(m:t())), g("0.9489 0.2815 0.9308 3.5141 -1.4031 -0.4891 0.1411 -0.0000 1.1278 -1.8686 -1.2985 0.6350"))
  T.eq(v(torch.log(d)), "0.1116 0.4636 0.7009 1.4464 0.8047 2.6779 1.0986 0.0000 0.4581 -1.2490 0.3466 2.3562")
  T.eq(v(torch.tanh(d)), "0.8430 0.1956 1.0994 -1.5967 -1.0148 0.0338 0.9951 0.0000 2.1248 -0.2551 -1.0839 0.2718")
  T.eq(v(torch.sqrt(d)), "1.0291 0.2429 1.0643 0.9396 0.3436 1.4553 1.7321 0.0000 1.0201 -0.7352 0.4551 1.0987")
  T.eq(v(torch.sigmoid(m)), "0.7427 0.0990 0.0785 0.0978 0.7174 -0.4162 0.7053 0.7389 0.9526 0.0000 0.2180 0.2019")
  T.eq(v(torch.rsqrt(m)), "0.9204 -0.2173 0.1536 -0.6509 0.6452 0.4650 0.5281 -0.4662 0.5774 0.0000 0.3218 -0.7769")
  T.eq(v(torch.reciprocal(m)), "0.8000 -0.4000 -0.4000 -0.2000 0.2000 0.6000 0.0615 -0.4923 0.3333 0.0000 -0.5000 -0.5000")
  T.eq(v(m:clone():cos_()), g("0.6093 -0.4385 -0.6421 1.0686 2.0644 1.0208 3.6452 -0.8973 -0.9900 -0.0000 0.8337 0.9889"))
  T.eq(torch.sin(d).dtype, torch.complex128)
  T.eq(v(torch.sin(z:to(torch.complex128))), "3.1658 1.9596 -0.4945 0.2217 0.2178 1.1634 0.0000 0.0000")
end)

T.test("pow as torch 1.13, with PowKernel's special exponents", function()
  local z3 = z[{":3"}]
  local want = {
    [2] = "-3.0000 4.0000 0.1875 -0.2500 8.0000 -6.0000",
    [3] = "-11.0000 -2.0000 -0.0312 0.1719 18.0000 -26.0000",
    [0.5] = "1.2720 0.7862 0.1718 0.7277 1.7553 -0.2848",
    [-1] = "0.2000 -0.4000 -1.6000 -0.8000 0.3000 0.1000",
    [-2] = "-0.1200 -0.1600 1.9200 2.5600 0.0800 0.0600",
    [1.5] = "-0.3003 3.3302 -0.2678 -0.3209 4.9811 -2.6099",
    [-0.5] = "0.5689 -0.3516 0.3073 -1.3017 0.5551 0.0901",
  }
  for e, w in pairs(want) do T.eq(v(torch.pow(z3, e)), w, "exponent " .. e) end
  T.eq(v(torch.pow(z3, c({1.0, 2, 0}, {1.0, 0, 0.5}))), "-0.2472 0.6965 0.1875 -0.2500 0.9853 0.6394")
  T.eq(v(torch.pow(2, z3)), "0.3669 1.9661 0.6965 0.1219 6.1539 -5.1117")
  T.eq(v(torch.pow(m, m:flip(1))), "2.1153 0.1366 -0.0022 0.0136 1.5453 -2.5158 0.0858 -0.0792 27.0000 0.0000 0.0028 0.0094")
  T.eq(v(torch.pow(d, 0.75)), "1.0222 0.3705 0.7901 1.4958 -0.7750 1.6562 2.2795 0.0000 0.8353 -1.1360 -0.2530 1.2719")
  T.eq(v(torch.pow(m, torch.tensor({1, 2, 3}))), "1.0000 0.5000 3.0000 -4.0000 -3.2500 2.2500 0.2500 2.0000 9.0000 0.0000 2.0000 2.0000")
  T.eq(v(z3 ^ 2), v(z3 * z3)) -- naive reference: the special case against mul
  local y = z3:clone()
  y:pow_(3)
  T.eq(v(y), v(z3 * z3 * z3))
end)

T.test("eq / ne / where / reductions / scans / indexing as torch 1.13", function()
  T.eq(v(torch.eq(z, c({1.0, -0.5, 3, 0}, {2.0, 0, -1, 0})):float()), "1.0000 0.0000 1.0000 1.0000")
  T.eq(v(torch.ne(z, 0):float()), "1.0000 1.0000 1.0000 0.0000")
  T.eq(v((m:eq(m[0])):float()), "1.0000 1.0000 1.0000 0.0000 0.0000 0.0000")
  T.eq(v(m:clone():eq_(m[0])), "1.0000 0.0000 1.0000 0.0000 1.0000 0.0000 0.0000 0.0000 0.0000 0.0000 0.0000 0.0000")
  local mask = torch.tensor({true, false, true, false})
  T.eq(v(torch.where(mask, z, torch.zeros(4, {dtype = torch.complex64}))), "1.0000 2.0000 0.0000 0.0000 3.0000 -1.0000 0.0000 0.0000")
  T.eq(v(torch.where(mask, z, 0.5)), "1.0000 2.0000 0.5000 0.0000 3.0000 -1.0000 0.5000 0.0000")
  T.eq(v(torch.where(m.real:gt(0), m, m[1])), "1.0000 0.5000 3.0000 0.0000 0.5000 -1.5000 0.2500 2.0000 3.0000 0.0000 -1.0000 1.0000")
  T.eq(v(torch.where(d.real:gt(0), d, 0)), v(torch.where(d.real:gt(0), d, torch.zeros(3, 2, {dtype = torch.complex128}))))
  T.eq(v(z[{":3"}]:prod()), "-3.7500 -1.2500")
  T.eq(v(z:view(2, 2):prod(1)), "-1.0000 -0.7500 0.0000 0.0000")
  T.eq(v(m:prod(0)), "-0.7500 2.1250 -6.0000 3.0000 1.0000 2.0000")
  T.eq(v(d:prod(1, true)), "-0.7500 2.1250 -6.0000 3.0000 1.0000 2.0000")
  T.eq(v(m:prod()), v(m[0][0] * m[0][1] * m[0][2] * m[1][0] * m[1][1] * m[1][2])) -- naive reference
  T.eq(v(z:cumsum(0)), "1.0000 2.0000 0.5000 2.2500 3.5000 1.2500 3.5000 1.2500")
  T.eq(v(d:cumsum(0)), "1.0000 0.5000 0.2500 2.0000 -1.0000 1.5000 3.2500 2.0000 -0.5000 0.0000 2.2500 3.0000")
  T.eq(v(m:cumprod(1)), "1.0000 0.5000 -2.5000 0.0000 -1.2500 3.7500 0.2500 2.0000 0.7500 6.0000 -6.7500 -5.2500")
  T.eq(v(z:sum()), "3.5000 1.2500")
  local x = torch.zeros(3, {dtype = torch.complex128})
  x:index_put_({torch.tensor({0, 2, 0})}, c({1.0, 0, 3}, {1.0, 2, 0}):to(torch.complex128), true)
  T.eq(v(x), "4.0000 1.0000 0.0000 0.0000 0.0000 2.0000")
  x = torch.zeros(2, 3, {dtype = torch.complex128})
  x:index_put_({torch.tensor({1, 0}), torch.tensor({2, 2})}, d[{":2", 0}])
  T.eq(v(x), "0.0000 0.0000 0.0000 0.0000 -2.0000 1.0000 0.0000 0.0000 0.0000 0.0000 1.0000 0.5000")
  T.eq(v(d:index_select(1, torch.tensor({1, 1, 0}))),
    "0.2500 2.0000 0.2500 2.0000 1.0000 0.5000 3.0000 0.0000 3.0000 0.0000 -2.0000 1.0000 -1.0000 1.0000 -1.0000 1.0000 0.5000 -1.5000")
  local y = torch.ones(3, 2, {dtype = torch.complex128})
  y:index_copy_(0, torch.tensor({2, 0}), d[{":2"}])
  T.eq(v(y), "-2.0000 1.0000 3.0000 0.0000 1.0000 0.0000 1.0000 0.0000 1.0000 0.5000 0.2500 2.0000")
  T.eq(v(torch.cat({z[{":1"}], z[{"3:"}]})), "1.0000 2.0000 0.0000 0.0000")
end)

T.test("sigmoid and reciprocal against their naive compositions", function()
  local r = torch.randn(5, 4, {dtype = torch.complex128})
  local one = torch.ones(5, 4, {dtype = torch.complex128})
  local ref = one / (one + torch.exp(-r))
  local got = torch.sigmoid(r)
  local diff = torch.view_as_real(got - ref):abs():amax():item()
  T.truthy(diff < 1e-12, diff)
  diff = torch.view_as_real(torch.reciprocal(r:t()) - one:t() / r:t()):abs():amax():item()
  T.truthy(diff == 0, diff)
end)

T.test("ordering comparisons refuse complex as PyTorch does", function()
  T.checkerr([["lt_cpu" not implemented for 'ComplexFloat']], torch.lt, z, z)
  T.checkerr([["lt_cpu" not implemented for 'ComplexFloat']], torch.lt, z, 0)
  T.checkerr([["le_cpu" not implemented for 'ComplexDouble']], torch.le, d, 1)
  T.checkerr([["gt_cpu" not implemented for 'ComplexFloat']], torch.gt, z, 1)
  T.checkerr([["ge_cpu" not implemented for 'ComplexFloat']], function() return z:clone():ge_(0) end)
end)

T.test("rand / randn with a complex dtype draw the real view as torch 1.13", function()
  torch.manual_seed(0)
  T.eq(v(torch.randn(3, {dtype = torch.complex64})), "1.0896 -0.2075 -1.5406 0.4019 -0.7669 -0.9890")
  torch.manual_seed(0)
  T.eq(v(torch.rand(3, {dtype = torch.complex64})), "0.4963 0.7682 0.0885 0.1320 0.3074 0.6341")
  torch.manual_seed(0)
  local r = torch.randn(100000, {dtype = torch.complex128})
  T.near(r.real:var():item(), 0.49893276199121644, 1e-9) -- torch 1.13, the same seed
  T.near(r.imag:var():item(), 0.5017127704473398, 1e-9)
end)

local function both(M, args)
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(M(), args, {strict = strict})
    local got, want = ep:module()(table.unpack(args)), M()(table.unpack(args))
    T.eq(v(got), v(want), strict and "strict" or "non-strict")
  end
end

T.test("export: complex ops record and run as in eager, in both modes", function()
  local M = nn.Module:extend("ComplexOps")
  function M:init() self:register_buffer("acc", torch.zeros(4, {dtype = torch.complex64})) end
  function M:forward(x)
    local y = torch.sin(x) * torch.sqrt(x) + torch.pow(x, 2)
    y = torch.where(torch.eq(x, 0), torch.zeros_like(y), torch.log(x + 1) + y)
    self.acc:add_(y:cumsum(0))
    return y:prod(), torch.tanh(self.acc), torch.sigmoid(y):index_select(0, torch.tensor({3, 0}))
  end
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(M(), {z}, {strict = strict})
    local targets = T.targets(ep)
    for _, op in ipairs({"aten.sin.default", "aten.sqrt.default", "aten.pow.Tensor_Scalar", "aten.where.self",
                         "aten.log.default", "aten.cumsum.default", "aten.prod.default", "aten.tanh.default",
                         "aten.sigmoid.default", "aten.index_select.default"}) do
      T.truthy(targets:find(op, 1, true), op .. " in " .. targets)
    end
    local mm, e = ep:module(), M()
    for _ = 1, 2 do
      local a1, a2, a3 = mm(z)
      local b1, b2, b3 = e(z)
      T.eq(v(a1), v(b1))
      T.eq(v(a2), v(b2))
      T.eq(v(a3), v(b3))
    end
  end
end)

T.done()

--[==[ torch 1.13 (python3-torch), the values above:
import torch
def v(t):
    t = torch.view_as_real(t) if t.is_complex() else t
    return " ".join(("nan" if x != x else "%.4f" % x) for x in t.flatten().tolist())
z = torch.tensor([1+2j, -0.5+0.25j, 3-1j, 0j], dtype=torch.complex64)
m = torch.complex(torch.tensor([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]]), torch.tensor([[0.5, 1.0, -1.5], [2.0, 0.0, 1.0]]))
d = m.to(torch.complex128).t()
print(v(torch.sin(z)), v(torch.pow(z[:3], -2)), v(torch.pow(m, m.flip(1))), v(d.cumsum(0)), v(m.prod(0)))
torch.manual_seed(0); print(v(torch.randn(3, dtype=torch.complex64)))
torch.manual_seed(0); r = torch.randn(100000, dtype=torch.complex128); print(r.real.var().item(), r.imag.var().item())
... (one print per value, same expressions as the Lua calls)
]==]
