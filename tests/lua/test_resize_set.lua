-- tests/lua/test_resize_set.lua — Tensor.resize_ and Tensor.set_ in eager (torch 1.13's results
-- for the same calls: geometry kept for equal sizes, contiguous or channels_last strides, the
-- storage grown, set_ sharing memory with its source) and PyTorch's messages; in export as
-- FunctionalizeFallbackKernel.cpp functionalizes them: resize_ to the same sizes is nothing, a
-- change of an input's sizes or storage is aot_autograd's metadata-mutation error, a resize_ that
-- fits is as_strided (written back with as_strided_scatter), one that grows is aten.resize (not on
-- a view), set_(source) aliases the source; eager against the exported program in both modes.
local T = dofile("tests/lua/harness.lua")

local function vals(t) return T.vals(t, "%g") end
local function strides(t) return table.concat(t:stride(), ",") end
local function shape(t) return table.concat(t.shape, "x") end

T.test("resize_ as torch 1.13", function()
  local x = torch.arange(6.0)
  T.truthy(rawequal(x:resize_(2, 2), x))
  T.eq(shape(x), "2x2")
  T.eq(strides(x), "2,1")
  T.eq(vals(x), "0 1 2 3")
  x = torch.arange(6.0)
  x:resize_(3, 3) -- grows: the old elements stay in front (fxdb zeroes the new ones)
  T.eq(strides(x), "3,1")
  T.eq(vals(x:reshape(-1)[{":6"}]), "0 1 2 3 4 5")
  x = torch.arange(6.0):view(2, 3):t()
  x:resize_(3, 2) -- the same sizes keep the strides
  T.eq(strides(x), "1,3")
  T.eq(vals(x), "0 3 1 4 2 5")
  x = torch.arange(6.0)
  local v = x[{"2:"}]
  v:resize_(2)
  T.eq(vals(v), "2 3")
  T.eq(v:storage_offset(), 2)
  v:resize_(6) -- the storage grows to offset + numel; x sees the same memory
  T.eq(shape(v), "6")
  v:fill_(7)
  T.eq(vals(x), "0 1 7 7 7 7")
  x = torch.arange(24.0):view(2, 3, 4)
  x:resize_({2, 3, 2, 2}, {memory_format = "torch.channels_last"})
  T.eq(strides(x), "12,1,6,3")
  x = torch.arange(4, {dtype = torch.int32})
  x:resize_(0)
  T.eq(shape(x), "0")
  local c = torch.complex(torch.ones(2), torch.ones(2))
  c:resize_(1)
  T.eq(vals(torch.view_as_real(c)), "1 1")
end)

T.test("set_ as torch 1.13", function()
  local x, y = torch.zeros(3), torch.arange(4.0):view(2, 2)
  T.truthy(rawequal(x:set_(y), x))
  T.eq(shape(x), "2x2")
  x:add_(1) -- they share memory
  T.eq(vals(y), "1 2 3 4")
  x = torch.zeros(3)
  x:set_()
  T.eq(shape(x), "0")
  x = torch.zeros(3)
  x:set_(y, 1, {3})
  T.eq(vals(x), "2 3 4")
  T.eq(strides(x), "1")
  x = torch.zeros(2)
  x:set_(y, 0, {3, 2}, {2, 1}) -- grows y's storage to 6 elements
  T.eq(shape(x), "3x2")
  T.eq(vals(x[{":2"}]), "1 2 3 4")
end)

T.test("PyTorch's messages", function()
  T.checkerr("numel: integer multiplication overflow", function() return torch.zeros(3):resize_(2, -2) end)
  T.checkerr("Unsupported memory formatPreserve",
    function() return torch.zeros(3):resize_({2, 2}, {memory_format = "torch.preserve_format"}) end)
  T.checkerr("required rank 4 tensor to use channels_last format",
    function() return torch.zeros(3):resize_({2, 2}, {memory_format = "torch.channels_last"}) end)
  local y = torch.arange(4.0)
  T.checkerr("Could not set tensor of type long int to a tensor of type float",
    function() return torch.zeros(3):set_(torch.arange(4)) end)
  T.checkerr("Tensor: invalid storage offset -1", function() return torch.zeros(3):set_(y, -1, {3}, {1}) end)
  T.checkerr("unequal size length (2) and stride length (1)",
    function() return torch.zeros(3):set_(y, 0, {3, 2}, {1}) end)
end)

local function both(M, args, check)
  for _, strict in ipairs({true, false}) do check(strict, pcall(torch.export.export, M(), args, {strict = strict})) end
end

local function same_as_eager(ep, M, args)
  local got = {ep:module()(table.unpack(args))}
  local want = {M()(table.unpack(args))}
  T.eq(#got, #want)
  for i = 1, #got do T.eq(vals(got[i]), vals(want[i])) end
end

T.test("export: resize_ of an input to its own sizes is nothing; to others, the metadata-mutation error", function()
  local A = nn.Module:extend("ResizeSame")
  function A:forward(x) x:resize_(2, 3); return x + 1 end
  both(A, {torch.ones(2, 3)}, function(_, ok, ep)
    T.truthy(ok, ep)
    T.eq(T.targets(ep), "aten.add.Tensor")
    same_as_eager(ep, A, {torch.ones(2, 3)})
  end)
  local B = nn.Module:extend("ResizeInput")
  function B:forward(x) x:resize_(6); return x + 1 end
  both(B, {torch.ones(2, 3)}, function(_, ok, e)
    T.falsy(ok)
    T.eq(e.kind, "metadata_mutation")
    T.truthy(tostring(e):find("Found an input that received a metadata mutation, through e.g. a call to " ..
      "`.resize_()` or `.transpose_()`. This is currently banned in the aot_export workflow.", 1, true), tostring(e))
    T.truthy(tostring(e):find("input 'x' is changed by aten.resize_.default", 1, true), tostring(e))
  end)
  local C = nn.Module:extend("ResizeBuffer")
  function C:init() self:register_buffer("b", torch.zeros(4)) end
  function C:forward(x) self.b:resize_(2, 2); return x + self.b end
  both(C, {torch.ones(2, 2)}, function(_, ok, e)
    T.falsy(ok)
    T.truthy(tostring(e):find("state 'b' is changed by aten.resize_.default", 1, true), tostring(e))
  end)
end)

T.test("export: resize_ of an intermediate is a view when it fits, aten.resize when it grows", function()
  local S = nn.Module:extend("ResizeShrink")
  function S:forward(x)
    local y = x + 1
    y:resize_(2, 2)
    y:mul_(10)
    return y, x
  end
  both(S, {torch.arange(6.0)}, function(_, ok, ep)
    T.truthy(ok, ep)
    T.eq(T.targets(ep), "aten.add.Tensor aten.as_strided.default aten.mul.Tensor " ..
      "aten.as_strided_scatter.default aten.as_strided.default")
    T.truthy(tostring(ep):find("torch.ops.aten.as_strided.default(add, [2, 2], [2, 1])", 1, true), tostring(ep))
    same_as_eager(ep, S, {torch.arange(6.0)})
  end)
  local G = nn.Module:extend("ResizeGrow")
  function G:forward(x)
    local y = x * 2
    y:resize_(8)
    return y[{":6"}] + 0
  end
  both(G, {torch.arange(6.0)}, function(_, ok, ep)
    T.truthy(ok, ep)
    T.eq(T.targets(ep), "aten.mul.Tensor aten.resize.default aten.slice.Tensor aten.add.Tensor")
    same_as_eager(ep, G, {torch.arange(6.0)})
  end)
  local V = nn.Module:extend("ResizeGrowView")
  function V:forward(x) local v = (x * 2)[{":3"}]; v:resize_(8); return v end
  both(V, {torch.arange(6.0)}, function(_, ok, e)
    T.falsy(ok)
    T.eq(e.kind, "unsupported_view_write")
    T.truthy(tostring(e):find("Attempted to resize a view tensor to a larger size. This is not allowed " ..
      "in the functionalization pass", 1, true), tostring(e))
  end)
end)

T.test("export: set_ aliases its source; on an input it is the metadata-mutation error", function()
  local F = nn.Module:extend("SetAlias")
  function F:forward(x, z)
    local y = x * 2
    y:set_(z)
    y:add_(1) -- a write into z
    return y
  end
  both(F, {torch.ones(3), torch.zeros(2, 2)}, function(_, ok, ep)
    T.truthy(ok, ep)
    T.eq(T.targets(ep), "aten.add.Tensor")
    T.eq(ep.graph_signature.user_inputs_to_mutate[ep.graph_signature.output_specs[1].arg.name], "z")
    local z1, z2 = torch.zeros(2, 2), torch.zeros(2, 2)
    T.eq(vals(ep:module()(torch.ones(3), z1)), vals(F()(torch.ones(3), z2)))
    T.eq(vals(z1), vals(z2))
    T.eq(vals(z1), "1 1 1 1")
  end)
  local G = nn.Module:extend("SetInput")
  function G:forward(x, z) x:set_(z); return x + 1 end
  both(G, {torch.ones(4), torch.zeros(4)}, function(_, ok, e)
    T.falsy(ok)
    T.eq(e.kind, "metadata_mutation")
    T.truthy(tostring(e):find("input 'x' is changed by aten.set_.source_Tensor", 1, true), tostring(e))
  end)
  local H = nn.Module:extend("SetOffset")
  function H:forward(x)
    local y = torch.zeros(2)
    y:set_(x, 1, {2})
    y:fill_(5)
    return y
  end
  both(H, {torch.arange(4.0)}, function(_, ok, ep)
    T.truthy(ok, ep)
    T.eq(T.targets(ep), "aten.as_strided.default aten.fill.Scalar aten.as_strided_scatter.default " ..
      "aten.as_strided.default")
    local a, b = torch.arange(4.0), torch.arange(4.0)
    T.eq(vals(ep:module()(a)), vals(H()(b)))
    T.eq(vals(a), vals(b))
    T.eq(vals(a), "0 5 5 3")
  end)
end)

T.done()
