-- tests/peer/test_dynamic_shape_slicing.lua — ExportDB dynamic_shape_slicing.
-- Layer: tests. x[:x.shape[0] - 2, x.shape[1] - 1::2] with static sizes: two slices, the open
-- end encoded as INT64_MAX.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local DynamicShapeSlicing = nn.Module:extend("DynamicShapeSlicing")
function DynamicShapeSlicing:forward(x)
  return x[{":" .. (x.shape[1] - 2), (x.shape[2] - 1) .. "::2"}]
end

local x = torch.tensor({{1, 2}, {3, 4}, {5, 6}}, torch.float32)

P.modes(function(strict, mode)
  local m = DynamicShapeSlicing()
  local ep = torch.export.export(m, {x}, {strict = strict})
  T.test("dynamic_shape_slicing graph and signature, " .. mode, function()
    P.program(ep, "placeholder:x slice_1=aten.slice.Tensor slice_2=aten.slice.Tensor output:output",
      "x: USER_INPUT", "slice_2: USER_OUTPUT")
    local g = tostring(ep.graph)
    T.truthy(g:find("slice.Tensor](args = (%x, 0, 0, 1)", 1, true), g)
    T.truthy(g:find("slice.Tensor](args = (%slice_1, 1, 1, 9223372036854775807, 2)", 1, true), g)
    T.eq(ep.graph:node("slice_2").meta.type, "f32[1, 1]")
  end)
  T.test("dynamic_shape_slicing numbers, " .. mode, function()
    local out = P.numbers(m, ep, {x})
    P.values(out[1], {1, 1}, {2})
  end)
end)

P.done()
