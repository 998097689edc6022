-- tests/peer/test_dynamic_shape_view.lua — ExportDB dynamic_shape_view.
-- Layer: tests. x.size()[:-1] + (2, 5) as the view shape, then permute(0, 2, 1).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local DynamicShapeView = nn.Module:extend("DynamicShapeView")
function DynamicShapeView:forward(x)
  local size = x:size()
  local new_x_shape = {}
  for i = 1, #size - 1 do new_x_shape[i] = size[i] end -- x.size()[:-1]
  new_x_shape[#new_x_shape + 1] = 2                     -- + (2, 5)
  new_x_shape[#new_x_shape + 1] = 5
  x = x:view(table.unpack(new_x_shape))
  return x:permute(0, 2, 1)
end

local x = torch.arange(100):float():reshape(10, 10)

P.modes(function(strict, mode)
  local m = DynamicShapeView()
  local ep = torch.export.export(m, {x}, {strict = strict})
  T.test("dynamic_shape_view graph and signature, " .. mode, function()
    P.program(ep, "placeholder:x view=aten.view.default permute=aten.permute.default output:output",
      "x: USER_INPUT", "permute: USER_OUTPUT")
    local g = tostring(ep.graph)
    T.truthy(g:find("view.default](args = (%x, [10, 2, 5])", 1, true), g)
    T.truthy(g:find("permute.default](args = (%view, [0, 2, 1])", 1, true), g)
  end)
  T.test("dynamic_shape_view numbers, " .. mode, function()
    local out = P.numbers(m, ep, {x})
    T.eq(table.concat(out[1].shape, ","), "10,5,2")
    -- out[i][j][k] = x.view(10, 2, 5)[i][k][j] = 10 i + 5 k + j
    T.eq(out[1][3][4][1]:item(), 30 + 5 + 4)
    T.eq(out[1][9][0][1]:item(), 95)
  end)
end)

P.done()
