-- tests/peer/test_dynamic_shape_map.lua — ExportDB dynamic_shape_map (torch.map).
-- Layer: tests. functorch's control_flow.map (torch._higher_order_ops.map) is not in fxdb yet
-- (future issue: control flow / higher-order ops): the clear "not yet supported" error.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local map = torch._higher_order_ops.map

local DynamicShapeMap = nn.Module:extend("DynamicShapeMap")
function DynamicShapeMap:forward(xs, y)
  local function body(x, z)
    return x + z
  end
  return map(body, xs, y)
end

P.modes(function(strict, mode)
  T.test("dynamic_shape_map: map is not yet supported, " .. mode, function()
    P.export_fails("not_implemented", "torch._higher_order_ops.map is not yet supported by fxdb",
      DynamicShapeMap(), {torch.randn(3, 2), torch.randn(2)}, {strict = strict})
  end)
end)

P.done()
