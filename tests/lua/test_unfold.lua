-- tests/lua/test_unfold.lua — Tensor.unfold(dimension, size, step), the view, and
-- unfold_backward, its inverse: values, shapes, strides and offsets against torch 1.13 for the
-- same inputs (contiguous, transposed and sliced bases, 0-dim, empty windows, integers), writes
-- through the view in eager (torch 1.13's results), PyTorch's messages, what export records for a
-- write through an unfold (unfold_backward as FunctionalInverses.cpp; a where keeping the elements
-- no window covers, docs/CHOICES.md), the "internal overlap" refusal, and a dynamic dim.
local T = dofile("tests/lua/harness.lua")

local function vals(t) return T.vals(t, "%g") end
local function shape(t) return table.concat(t.shape, "x") end
local function strides(t) return table.concat(t:stride(), ",") end

local function base() return torch.arange(24.0):view(4, 6) end

T.test("windows as torch 1.13 gives them", function()
  local want = { -- {dimension, size, step}, shape, strides, values (torch 1.13)
    {{1, 2, 2}, "4x3x2", "6,2,1", "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23"},
    {{1, 3, 1}, "4x4x3", "6,1,1", "0 1 2 1 2 3 2 3 4 3 4 5 6 7 8 7 8 9 8 9 10 9 10 11 12 13 14 " ..
      "13 14 15 14 15 16 15 16 17 18 19 20 19 20 21 20 21 22 21 22 23"},
    {{0, 2, 1}, "3x6x2", "6,1,6", "0 6 1 7 2 8 3 9 4 10 5 11 6 12 7 13 8 14 9 15 10 16 11 17 12 " ..
      "18 13 19 14 20 15 21 16 22 17 23"},
    {{1, 2, 3}, "4x2x2", "6,3,1", "0 1 3 4 6 7 9 10 12 13 15 16 18 19 21 22"},
    {{-1, 4, 4}, "4x1x4", "6,4,1", "0 1 2 3 6 7 8 9 12 13 14 15 18 19 20 21"},
    {{0, 4, 1}, "1x6x4", "6,1,6", "0 6 12 18 1 7 13 19 2 8 14 20 3 9 15 21 4 10 16 22 5 11 17 23"},
    {{1, 0, 2}, "4x4x0", "6,2,1", ""},
    {{1, 6, 1}, "4x1x6", "6,1,1", "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23"},
  }
  for _, w in ipairs(want) do
    local u = base():unfold(table.unpack(w[1]))
    local what = table.concat(w[1], ",")
    T.eq(shape(u), w[2], what)
    T.eq(strides(u), w[3], what)
    T.eq(vals(u), w[4], what)
  end
  -- a transposed, offset base: the windows walk its strides
  local xt = base():t()[{"1:"}]
  local u = xt:unfold(0, 2, 2)
  T.eq(shape(u), "2x4x2")
  T.eq(strides(u), "2,6,1")
  T.eq(u:storage_offset(), 1)
  T.eq(vals(u), "1 2 7 8 13 14 19 20 3 4 9 10 15 16 21 22")
  T.eq(vals(torch.tensor(5.0):unfold(0, 1, 1)), "5")
  T.eq(shape(torch.tensor(5.0):unfold(-1, 0, 1)), "0")
  local i = torch.arange(10):unfold(0, 3, 3)
  T.eq(i.dtype, torch.int64)
  T.eq(vals(i), "0 1 2 3 4 5 6 7 8")
  T.eq(vals(torch.arange(6, {dtype = torch.float16}):unfold(0, 2, 4)), "0 1 4 5")
end)

T.test("PyTorch's messages", function()
  local x = torch.arange(6.0)
  T.checkerr("maximum size for tensor at dimension 0 is 6 but size is 7", function() return x:unfold(0, 7, 1) end)
  T.checkerr("step is 0 but must be > 0", function() return x:unfold(0, 2, 0) end)
  T.checkerr("step is -1 but must be > 0", function() return x:unfold(0, 2, -1) end)
  T.checkerr("size is -1 but must be >= 0", function() return x:unfold(0, -1, 1) end)
  T.checkerr("Dimension out of range (expected to be in range of [-1, 0], but got 2)", function() return x:unfold(2, 2, 1) end)
  T.checkerr("maximum size for tensor at dimension 0 is 1 but size is 2", function() return torch.tensor(3.0):unfold(0, 2, 1) end)
  T.checkerr("Dimension out of range (expected to be in range of [-1, 0], but got 1)", function() return torch.tensor(3.0):unfold(1, 1, 1) end)
end)

T.test("unfold_backward as torch 1.13 computes it", function()
  local ub = torch.ops.aten.unfold_backward
  local function g(n, s) return torch.arange(1.0, n * s + 1):view(n, s) end
  T.eq(vals(ub(g(3, 3), {5}, 0, 3, 1)), "1 6 15 14 9") -- overlapping windows add
  T.eq(vals(ub(g(2, 3), {6}, 0, 3, 3)), "1 2 3 4 5 6")
  T.eq(vals(ub(g(6, 3), {8}, 0, 3, 1)), "1 6 15 24 33 42 32 18")
  T.eq(vals(ub(torch.arange(1.0, 17):view(2, 2, 4), {2, 5}, 1, 4, 1)), "1 7 9 11 8 9 23 25 27 16")
  T.eq(vals(ub(g(2, 1), {6}, 0, 1, 4)), "1 0 0 0 2 0") -- uncovered places are 0
  T.eq(vals(ub(torch.tensor({true, false}):view(2, 1), {4}, 0, 1, 2):long()), "1 0 0 0")
  local c = ub(torch.complex(g(2, 2), -g(2, 2)), {4}, 0, 2, 2)
  T.eq(vals(torch.view_as_real(c)), "1 -1 2 -2 3 -3 4 -4")
  T.checkerr("unfold_backward: grad_in has shape [2, 2] but unfold(0, 3, 1) of a tensor of sizes [5] has shape [3, 3]",
    function() return ub(g(2, 2), {5}, 0, 3, 1) end)
end)

T.test("writes through the view in eager, as torch 1.13", function()
  local x = base()
  x:unfold(1, 2, 3):mul_(10)
  T.eq(vals(x), "0 10 2 30 40 5 60 70 8 90 100 11 120 130 14 150 160 17 180 190 20 210 220 23")
  x = base()
  x:unfold(0, 1, 2)[1]:fill_(-1)
  T.eq(vals(x), "0 1 2 3 4 5 6 7 8 9 10 11 -1 -1 -1 -1 -1 -1 18 19 20 21 22 23")
  x = base()
  x:unfold(1, 2, 2):add_(100)
  T.eq(vals(x), "100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 " ..
    "119 120 121 122 123")
end)

local function export_both(M, args, check)
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(M(), args, {strict = strict})
    check(ep, strict)
  end
end

T.test("export: a write through windows that tile the dim is unfold_backward", function()
  local M = nn.Module:extend("UnfoldTile")
  function M:init() self:register_buffer("buf", torch.zeros(4, 6)) end
  function M:forward(x)
    local v = self.buf:unfold(1, 2, 2)
    v:add_(x:unfold(1, 2, 2))
    return v:sum(-1)
  end
  export_both(M, {base()}, function(ep)
    T.eq(T.targets(ep), "aten.unfold.default aten.unfold.default aten.add.Tensor " ..
      "aten.unfold_backward.default aten.unfold.default aten.sum.dim_IntList")
    T.truthy(tostring(ep):find("torch.ops.aten.unfold_backward.default(add, [4, 6], 1, 2, 2)", 1, true), tostring(ep))
    T.eq(ep.graph_signature.buffers_to_mutate[ep.graph_signature.output_specs[1].arg.name], "buf")
    local m, e = ep:module(), M()
    for _ = 1, 2 do
      T.eq(vals(m(base())), vals(e(base())))
      T.eq(vals(m.buf), vals(e.buf))
    end
  end)
end)

T.test("export: a write through windows with gaps keeps the places no window covers", function()
  local M = nn.Module:extend("UnfoldGap")
  function M:forward(x)
    x:unfold(1, 1, 5):mul_(10) -- windows 5 apart: columns 0 and 5 (torch 2.5 zeroes columns 1-4)
    local v = x:unfold(0, 1, 3) -- rows 0 and 3
    v[1]:fill_(-1)
    return x + 0
  end
  export_both(M, {base()}, function(ep)
    T.eq(T.targets(ep), "aten.unfold.default aten.mul.Tensor aten.unfold_backward.default " ..
      "aten.ones_like.default aten.unfold_backward.default aten.where.self aten.unfold.default " ..
      "aten.select.int aten.fill.Scalar aten.select_scatter.default aten.unfold_backward.default " ..
      "aten.ones_like.default aten.unfold_backward.default aten.where.self aten.add.Tensor")
    local e, got = base(), base()
    local want = M()(e)
    T.eq(vals(ep:module()(got)), vals(want))
    T.eq(vals(got), vals(e))
    T.eq(vals(e), "0 1 2 3 4 50 60 7 8 9 10 110 120 13 14 15 16 170 -1 -1 -1 -1 -1 -1") -- torch 1.13
  end)
end)

T.test("export: a write through overlapping windows is refused as PyTorch refuses it", function()
  local M = nn.Module:extend("UnfoldOverlap")
  function M:forward(x)
    local t1 = x + x
    local t2 = t1:unfold(1, 3, 2)
    t2[{":", 0}]:abs_() -- one window: no overlap inside it, so eager allows the write
    return t2
  end
  for _, strict in ipairs({true, false}) do
    local ok, e = pcall(torch.export.export, M(), {torch.ones(1, 5)}, {strict = strict})
    T.falsy(ok)
    T.truthy(tostring(e):find("While executing unfold, functionalization encountered a tensor " ..
      "being mutated that has internal overlap", 1, true), tostring(e))
    T.eq(e.kind, "unsupported_view_write")
  end
  -- the whole overlapping view cannot be written in eager already
  T.checkerr("more than one element of the written-to tensor refers to a single memory location",
    function() return torch.ones(1, 5):unfold(1, 3, 2):abs_() end)
end)

T.test("export: a dynamic dim stays symbolic", function()
  local M = nn.Module:extend("UnfoldDyn")
  function M:forward(x)
    local v = x:unfold(0, 2, 3)
    v:mul_(2)
    return v:sum(-1)
  end
  local ep = torch.export.export(M(), {torch.arange(9.0)},
    {dynamic_shapes = {x = {[0] = torch.export.Dim("n", {min = 3, max = 64})}}})
  T.truthy(tostring(ep):find('unfold: "f32[((s0 - 2)//3) + 1, 2]"', 1, true), tostring(ep))
  for _, n in ipairs({3, 4, 7, 10, 11}) do
    local a, b = torch.arange(n * 1.0), torch.arange(n * 1.0)
    local r = ep:module()(a)
    T.eq(vals(r), vals(M()(b)), "n = " .. n)
    T.eq(vals(a), vals(b), "n = " .. n)
  end
end)

T.done()
