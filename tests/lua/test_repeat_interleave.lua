-- tests/lua/test_repeat_interleave.lua — repeat_interleave from Lua: the self_int and
-- self_Tensor forms and torch.repeat_interleave(repeats) against torch 1.13's values for the same
-- inputs, PyTorch's (2.x) messages, what export records (aten's decomposition for an int count;
-- repeat_interleave.Tensor + index_select for a tensor of counts, an unbacked length u0 with its
-- runtime asserts without output_size), eager against the exported program in both modes, and a
-- dynamic dim.
local T = dofile("tests/lua/harness.lua")

local function vals(t) return T.vals(t, "%g") end

local targets = T.targets

local x = torch.tensor({{1., 2.}, {3., 4.}})

T.test("values as torch 1.13 gives them", function()
  T.eq(vals(x:repeat_interleave(2)), "1 1 2 2 3 3 4 4")
  local y = x:repeat_interleave(torch.tensor({1, 2}), 0)
  T.eq(vals(y), "1 2 3 4 3 4")
  T.eq(table.concat(y.shape, "x"), "3x2")
  T.eq(vals(torch.repeat_interleave(x, 3, 1)), "1 1 1 2 2 2 3 3 3 4 4 4")
  T.eq(vals(torch.repeat_interleave(torch.tensor({2, 0, 3}))), "0 0 2 2 2")
  T.eq(vals(x:repeat_interleave(torch.tensor(2), 1)), "1 1 2 2 3 3 4 4")
  T.eq(vals(x:t():repeat_interleave(2, 0)), "1 3 1 3 2 4 2 4") -- a strided input
  T.eq(x:long():repeat_interleave(2).dtype, torch.int64)
  T.eq(vals(x:repeat_interleave(0, 0)), "")
  T.eq(vals(x:repeat_interleave(torch.tensor({1, 2}, {dtype = torch.int32}), 0)), "1 2 3 4 3 4")
end)

T.test("PyTorch's messages", function()
  T.checkerr("Repeats can not be negative", function() return x:repeat_interleave(-1) end)
  T.checkerr("repeats must have the same size as input along dim, but got repeats.size(0) = 3 " ..
    "and input.size(0) = 2", function() return x:repeat_interleave(torch.tensor({1, 2, 3}), 0) end)
  T.checkerr("repeats must be 0-dim or 1-dim tensor",
    function() return x:repeat_interleave(torch.tensor({{1}, {2}}), 0) end)
  T.checkerr("repeats has to be Long or Int tensor", torch.repeat_interleave, torch.tensor({1., 2.}))
  T.checkerr("repeats can not be negative", torch.repeat_interleave, torch.tensor({1, -2}))
  T.checkerr("repeat_interleave: Invalid output_size, expected 4 but got 5",
    function() return x:repeat_interleave(2, 0, {output_size = 5}) end)
end)

T.test("export records aten's decomposition, in both modes", function()
  local M = nn.Module:extend("RI")
  function M:init() self:register_buffer("r", torch.tensor({1, 2})) end
  function M:forward(a)
    return a:repeat_interleave(2, 1) + 1, a:repeat_interleave(self.r, 0, {output_size = 3})
  end
  for _, strict in ipairs({true, false}) do
    local m = M()
    local ep = torch.export.export(m, {x}, {strict = strict})
    T.eq(targets(ep), "aten.unsqueeze.default aten.expand.default aten.clone.default " ..
      "aten.view.default aten.add.Tensor aten.repeat_interleave.Tensor aten.index_select.default")
    T.truthy(tostring(ep):find("torch.ops.aten.repeat_interleave.Tensor(b_r, output_size = 3)", 1, true),
      tostring(ep))
    local r1, r2 = ep:module()(x)
    local e1, e2 = m(x)
    T.eq(vals(r1), vals(e1))
    T.eq(vals(r2), vals(e2))
  end
end)

T.test("export: counts without output_size give an unbacked length u0 (FakeTensor's impl), in both modes", function()
  local N = nn.Module:extend("RInoSize")
  function N:init() self:register_buffer("r", torch.tensor({1, 2})) end
  function N:forward(a) return a:repeat_interleave(self.r, 0) + 1 end
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(N(), {x}, {strict = strict})
    local text = tostring(ep)
    T.eq(targets(ep), "aten.repeat_interleave.Tensor aten.sym_size.int " ..
      "aten.sym_constrain_range_for_size.default operator.ge aten._assert_scalar.default " ..
      "aten.index_select.default aten.add.Tensor")
    T.truthy(text:find('repeat_interleave: "i64[u0]" = torch.ops.aten.repeat_interleave.Tensor(b_r)', 1, true), text)
    T.truthy(text:find('add: "f32[u0, 2]"', 1, true), text)
    T.truthy(text:find("Range constraints: {u0: VR[0, int_oo]}", 1, true), text)
    local m = ep:module()
    T.eq(vals(m(x)), vals(N()(x)))
    for _, r in ipairs({{3, 0}, {0, 0}, {2, 5}}) do -- other lengths at run time
      m.r:copy_(torch.tensor(r))
      local e = N()
      e.r:copy_(torch.tensor(r))
      T.eq(vals(m(x)), vals(e(x)), table.concat(r, ","))
    end
  end
  -- outside an export a meta tensor of counts still has no length to give
  T.checkerr("the output size is the sum of repeats", torch.repeat_interleave, torch.zeros(2, {dtype = torch.int64, device = "meta"}))
end)

T.test("a dynamic dim stays symbolic through an int repeat", function()
  local M = nn.Module:extend("RIdyn")
  function M:forward(a) return a:repeat_interleave(3, 0) end
  local xi = torch.randn(4, 2)
  local ep = torch.export.export(M(), {xi}, {dynamic_shapes = {a = {[0] = torch.export.Dim("n", {min = 2})}}})
  T.truthy(tostring(ep):find('"f32[3*s0, 2]"', 1, true), tostring(ep))
  local x5 = torch.randn(5, 2)
  T.eq(vals(ep:module()(x5)), vals(x5:repeat_interleave(3, 0)))
end)

T.done()
