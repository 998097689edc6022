-- tests/peer/test_dynamic_shape_constructor.lua — ExportDB dynamic_shape_constructor.
-- Layer: tests. torch.zeros(x.shape[0] * 2) without dynamic shapes specializes to zeros([6]).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local DynamicShapeConstructor = nn.Module:extend("DynamicShapeConstructor")
function DynamicShapeConstructor:forward(x)
  return torch.zeros(x.shape[1] * 2)
end

local x = torch.randn(3, 2)

P.modes(function(strict, mode)
  local m = DynamicShapeConstructor()
  local ep = torch.export.export(m, {x}, {strict = strict})
  T.test("dynamic_shape_constructor graph and signature, " .. mode, function()
    P.program(ep, "placeholder:x zeros=aten.zeros.default output:output", "x: USER_INPUT",
      "zeros: USER_OUTPUT")
    local g = tostring(ep.graph)
    T.truthy(g:find("zeros.default](args = ([6],)", 1, true), g)
  end)
  T.test("dynamic_shape_constructor numbers, " .. mode, function()
    local out = P.numbers(m, ep, {x})
    P.values(out[1], {6}, {0, 0, 0, 0, 0, 0})
    T.eq(out[1].dtype, torch.float32)
  end)
end)

P.done()
