-- tests/peer/test_dynamic_shape_map.lua — ExportDB dynamic_shape_map (torch.map).
-- Layer: tests. map traces its body once into body_graph_0 and records higher_order.map_impl.
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
  T.test("dynamic_shape_map: map_impl with body_graph_0, " .. mode, function()
    local m, xs, y = DynamicShapeMap(), torch.randn(3, 2), torch.randn(2)
    local ep = torch.export.export(m, {xs, y}, {strict = strict})
    P.program(ep, "placeholder:xs placeholder:y get_attr:body_graph_0 map_impl=higher_order.map_impl " ..
      "getitem=getitem output:output", "xs: USER_INPUT\ny: USER_INPUT", "getitem: USER_OUTPUT")
    local code = fxdb.code(ep)
    T.truthy(code:find("map_impl = torch.ops.higher_order.map_impl(body_graph_0, [xs], [y]);  body_graph_0 = xs = y = None", 1, true), code)
    T.truthy(code:find("def forward(self, xs: \"f32[2]\", y: \"f32[2]\"):", 1, true), code)
    T.truthy(code:find("add: \"f32[2]\" = torch.ops.aten.add.Tensor(xs, y);  xs = y = None\n            return (add,)", 1, true), code)
    P.numbers(m, ep, {xs, y})
  end)
end)

P.done()
