-- tests/lua/test_ops_more.lua — the pointwise, scan and reordering ops of issue 10 seen from Lua
-- (sign floor ceil trunc round erf expm1 softplus square lerp type_as cumprod flip roll and their
-- in-place twins): what torch.* and methods return, what an exported graph records (composites
-- as aten decomposes them: square -> pow, type_as -> _to_copy), in-place twins functionalized,
-- an EMA buffer updated with lerp_ as a BUFFER_MUTATION checked against eager over several
-- steps in both export modes, and PyTorch's messages. Expected values were printed by torch 1.13
-- for the same inputs.
local T = dofile("tests/lua/harness.lua")

local vals, targets = T.vals, T.targets

local x = torch.tensor({{-1.5, 2.5, 0.5}, {3.75, -0.25, 1.0}})

T.test("rounding, sign, erf, expm1, softplus: values and dtypes", function()
  T.eq(vals(x:floor()), "-2.0000 2.0000 0.0000 3.0000 -1.0000 1.0000")
  T.eq(vals(x:ceil()), "-1.0000 3.0000 1.0000 4.0000 -0.0000 1.0000")
  T.eq(vals(torch.round(x)), "-2.0000 2.0000 0.0000 4.0000 -0.0000 1.0000")
  T.eq(vals(torch.round(x, {decimals = 1})), "-1.5000 2.5000 0.5000 3.8000 -0.2000 1.0000")
  T.eq(vals(x:trunc()), "-1.0000 2.0000 0.0000 3.0000 -0.0000 1.0000")
  T.eq(vals(x:sign()), "-1.0000 1.0000 1.0000 1.0000 -1.0000 1.0000")
  T.eq(vals(torch.erf(x)), "-0.9661 0.9996 0.5205 1.0000 -0.2763 0.8427")
  T.eq(vals(x:expm1()), "-0.7769 11.1825 0.6487 41.5211 -0.2212 1.7183")
  T.eq(vals(nn.functional.softplus(x)), "0.2014 2.5789 0.9741 3.7732 0.5759 1.3133")
  T.eq(vals(nn.functional.softplus(x, 2, 1)), "0.0243 2.5000 0.6566 3.7500 0.2370 1.0000")
  local i = torch.tensor({-3, 0, 5})
  T.eq(i:floor().dtype, torch.int64)
  T.eq(vals(i:sign(), "%d"), "-1 0 1")
  T.eq(torch.erf(i).dtype, torch.float32)
  T.eq(vals(torch.tensor({true, false}):sign()), "true false")
  T.eq(torch.square(torch.tensor({true, false})).dtype, torch.int64)
  T.eq(vals(x:square()), "2.2500 6.2500 0.2500 14.0625 0.0625 1.0000")
end)

T.test("in-place twins write self", function()
  local y = x:clone()
  T.truthy(rawequal(y:floor_(), y))
  T.eq(vals(y), vals(x:floor()))
  y = x:clone()
  y:square_()
  T.eq(vals(y), vals(x * x))
  y = x:clone()
  y:round_({decimals = 1})
  T.eq(vals(y), vals(torch.round(x, {decimals = 1})))
  y = x:clone()
  y:lerp_(torch.zeros(3), 0.25)
  T.eq(vals(y), vals(x * 0.75))
  y = x:clone()
  y:cumprod_(1)
  T.eq(vals(y), vals(x:cumprod(1)))
end)

T.test("lerp, type_as, cumprod, flip, roll", function()
  T.eq(vals(torch.lerp(x, torch.zeros(2, 3), 0.25)), vals(x * 0.75))
  T.eq(vals(torch.lerp(x, torch.ones(3), torch.full({2, 3}, 0.5))), vals((x + 1) / 2))
  T.eq(x:type_as(torch.tensor({1})).dtype, torch.int64)
  T.truthy(rawequal(x:type_as(x), x), "type_as of the same dtype is self")
  T.eq(vals(x:cumprod(1)), "-1.5000 -3.7500 -1.8750 3.7500 -0.9375 -0.9375")
  T.eq(x:cumprod(0, {dtype = torch.float64}).dtype, torch.float64)
  T.eq(vals(x:flip(1)), "0.5000 2.5000 -1.5000 1.0000 -0.2500 3.7500")
  T.eq(vals(x:flip({0, 1})), "1.0000 -0.2500 3.7500 0.5000 2.5000 -1.5000")
  T.eq(vals(x:roll(1)), "1.0000 -1.5000 2.5000 0.5000 3.7500 -0.2500")
  T.eq(vals(x:roll({1, -1}, {0, 1})), "-0.2500 1.0000 3.7500 2.5000 0.5000 -1.5000")
  T.eq(vals(x:t():roll(1, 0)), vals(x:t():contiguous():roll(1, 0)))
end)

T.test("PyTorch's messages", function()
  local i = torch.tensor({1, 2})
  T.checkerr("\"floor_vml_cpu\" not implemented for 'Bool'", torch.floor, torch.tensor({true}))
  T.checkerr("\"softplus_cpu\" not implemented for 'Long'", nn.functional.softplus, i)
  T.checkerr("\"round_cpu\" not implemented for 'Long'", torch.round, i, {decimals = 2})
  T.checkerr("expected dtype float for `end` but got dtype long int", torch.lerp, x, i, 0.5)
  T.checkerr("\"lerp_kernel_scalar\" not implemented for 'Long'", torch.lerp, i, i, 0.5)
  T.checkerr("output with shape [3] doesn't match the broadcast shape [2, 3]",
    function() torch.zeros(3):lerp_(x, 0.5) end)
  T.checkerr("dim 0 appears multiple times in the list of dims", torch.flip, x, {0, -2})
  T.checkerr("shifts and dimensions must align. shifts: 2, dims:1", torch.roll, x, {1, 2}, {0})
  T.checkerr("Dimension out of range (expected to be in range of [-2, 1], but got 2)", torch.roll, x, 1, 2)
  T.checkerr("result type Float can't be cast to the desired output type Long",
    function() torch.tensor({1}):erf_() end)
end)

T.test("export records aten's decompositions of square and type_as", function()
  local M = nn.Module:extend("OpsMore")
  function M:forward(a, n)
    local s = a:square() + a:sign() + a:floor() + torch.round(a, {decimals = 2})
    local l = torch.lerp(s, a:flip(0), 0.3):roll(1, 1):cumprod(1)
    return l:type_as(n), nn.functional.softplus(a, 2):erf():expm1()
  end
  local n = torch.tensor({1})
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(M(), {x, n}, {strict = strict})
    T.eq(targets(ep), "aten.pow.Tensor_Scalar aten.sign.default aten.add.Tensor aten.floor.default " ..
      "aten.add.Tensor aten.round.decimals aten.add.Tensor aten.flip.default aten.lerp.Scalar " ..
      "aten.roll.default aten.cumprod.default aten._to_copy.default aten.softplus.default " ..
      "aten.erf.default aten.expm1.default")
    T.truthy(tostring(ep):find("torch.ops.aten.round.decimals(a, decimals = 2)", 1, true), tostring(ep))
    local r1, r2 = ep:module()(x, n)
    local e1, e2 = M()(x, n)
    T.eq(vals(r1, "%d"), vals(e1, "%d"))
    T.eq(vals(r2), vals(e2))
  end
end)

T.test("an EMA buffer updated with lerp_ is a BUFFER_MUTATION; unlifted module vs eager", function()
  local EMA = nn.Module:extend("EMA")
  function EMA:init() self:register_buffer("avg", torch.zeros(3)) end
  function EMA:forward(v)
    self.avg:lerp_(v, 0.1)
    return self.avg:square():sum()
  end
  for _, strict in ipairs({true, false}) do
    local m = EMA()
    local ep = torch.export.export(m, {torch.ones(3)}, {strict = strict})
    T.eq(targets(ep), "aten.lerp.Scalar aten.pow.Tensor_Scalar aten.sum.default")
    local kinds = {}
    for _, s in ipairs(ep.graph_signature.output_specs) do kinds[#kinds + 1] = s.kind end
    T.eq(table.concat(kinds, " "), "BUFFER_MUTATION USER_OUTPUT")
    T.eq(vals(m.avg), "0.0000 0.0000 0.0000", "export leaves the buffer alone")
    local gm, e = ep:module(), EMA()
    for step = 1, 4 do
      local v = torch.tensor({step, -step, 0.5 * step})
      T.near(gm(v):item(), e(v):item(), 1e-5, "step " .. step)
    end
    T.eq(vals(gm.avg), vals(e.avg))
  end
end)

T.test("sort, argsort, topk: values, indices, NaN last, messages", function()
  local f = torch.tensor({3, 0 / 0, 1, 2})
  local v, i = torch.sort(f)
  T.eq(vals(i, "%d"), "2 3 0 1")
  T.truthy(v[3]:item() ~= v[3]:item(), "NaN sorts last")
  v, i = f:sort({descending = true})
  T.eq(vals(i, "%d"), "1 0 3 2")
  T.eq(vals(torch.argsort(x, 1), "%d"), "0 2 1 1 2 0")
  T.eq(vals(x:argsort({dim = 0, descending = true}), "%d"), "1 0 1 0 1 0")
  T.eq(vals(torch.argsort(torch.tensor({true, false, true}), {stable = true}), "%d"), "1 0 2")
  v, i = x:topk(2)
  T.eq(vals(v), "2.5000 0.5000 3.7500 1.0000")
  T.eq(vals(i, "%d"), "1 2 0 2")
  v, i = torch.topk(x, 1, 0, false)
  T.eq(vals(v), "-1.5000 -0.2500 0.5000")
  T.eq(i.dtype, torch.int64)
  T.checkerr("selected index k out of range", torch.topk, x, 4)
  T.checkerr("\"topk_cpu\" not implemented for 'Bool'", torch.topk, torch.tensor({true}), 1)
end)

T.test("norm / linalg.vector_norm record aten.linalg_vector_norm", function()
  T.eq(vals(x:norm()), "4.8862")
  T.eq(vals(torch.norm(x, 1, 1)), "4.5000 5.0000")
  T.eq(vals(torch.linalg.vector_norm(x, math.huge, {0}, true)), "3.7500 2.5000 1.0000")
  T.eq(vals(torch.linalg.vector_norm(x, -math.huge, {0}, true)), "1.5000 0.2500 0.5000")
  T.eq(vals(x:norm({p = 0, dim = 1})), "3.0000 3.0000")
  T.checkerr("linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long",
    torch.norm, torch.tensor({1, 2}))
  local M = nn.Module:extend("NormM")
  function M:forward(a) return a / a:norm(2, -1, true) end
  local ep = torch.export.export(M(), {x})
  T.eq(targets(ep), "aten.linalg_vector_norm.default aten.div.Tensor")
  T.truthy(tostring(ep):find("linalg_vector_norm.default(a, 2, [-1], True)", 1, true), tostring(ep))
end)

T.test("F.pad: constant, reflect, replicate record what aten's pad decomposes into", function()
  local F = nn.functional
  local x3 = torch.arange(6.):reshape(1, 2, 3)
  T.eq(vals(F.pad(x3, {1, 2})), "0.0000 0.0000 1.0000 2.0000 0.0000 0.0000 0.0000 3.0000 4.0000 5.0000 0.0000 0.0000")
  T.eq(vals(F.pad(x3, {1, 1}, "reflect")), "1.0000 0.0000 1.0000 2.0000 1.0000 4.0000 3.0000 4.0000 5.0000 4.0000")
  T.eq(vals(F.pad(x3, {2, 0}, "replicate")), "0.0000 0.0000 0.0000 1.0000 2.0000 3.0000 3.0000 3.0000 4.0000 5.0000")
  T.eq(vals(F.pad(x3:long(), {1, -2}, {value = 7}), "%d"), "7 0 7 3")
  T.checkerr("Padding length must be divisible by 2", F.pad, x3, {1})
  T.checkerr("Padding mode \"reflect\" doesn't take in value argument", F.pad, x3, {1, 1}, "reflect", 2)
  T.checkerr("Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now",
    F.pad, torch.ones(3), {1, 1}, "reflect")
  T.checkerr("Argument #4: Padding size should be less than the corresponding input dimension, " ..
    "but got: padding (3, 3) at dimension 2 of input [1, 2, 3]", F.pad, x3, {3, 3}, "reflect")
  T.checkerr("Unrecognised padding mode foo", F.pad, x3, {1, 1}, "foo")
  local M = nn.Module:extend("PadM")
  function M:forward(a)
    return F.pad(a, {1, 1}), F.pad(a, {1, 1, 1, 0}, "reflect"), F.pad(a, {2, 2}, "replicate")
  end
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(M(), {x3}, {strict = strict})
    T.eq(targets(ep), "aten.constant_pad_nd.default aten.reflection_pad2d.default " ..
      "aten.replication_pad1d.default")
  end
end)

T.done()
