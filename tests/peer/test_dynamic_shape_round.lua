-- tests/peer/test_dynamic_shape_round.lua — ExportDB dynamic_shape_round (NOT_SUPPORTED_YET).
-- Layer: tests. PyTorch refuses it (2.10: "Constraints violated (dim0_x)!"); fxdb refuses it too,
-- earlier: the true division of a SymInt (a float size) is an error at its line.
-- Without dynamic shapes, round(3 / 2) = 2 specializes into slice(x, 0, 0, 2).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local function round(v) -- Python's round: halves to even
  local f = math.floor(v)
  local d = v - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  return math.tointeger(f)
end

local DynamicShapeRound = nn.Module:extend("DynamicShapeRound")
function DynamicShapeRound:forward(x)
  return x[{":" .. round(x.shape[1] / 2)}]
end

local x = torch.tensor({{1, 2}, {3, 4}, {5, 6}}, torch.float32)

T.test("dynamic_shape_round fails to export with a dynamic dim", function()
  T.checkerr("true division of a SymInt gives a float and is not supported during export",
    function()
      local dim0_x = torch.export.Dim("dim0_x")
      return torch.export.export(DynamicShapeRound(), {x}, {dynamic_shapes = {x = {[0] = dim0_x}}})
    end)
end)

P.modes(function(strict, mode)
  T.test("dynamic_shape_round with static shapes, " .. mode, function()
    local m = DynamicShapeRound()
    local ep = torch.export.export(m, {x}, {strict = strict})
    P.program(ep, "placeholder:x slice_1=aten.slice.Tensor output:output", "x: USER_INPUT",
      "slice_1: USER_OUTPUT")
    T.truthy(tostring(ep.graph):find("slice.Tensor](args = (%x, 0, 0, 2)", 1, true))
    local out = P.numbers(m, ep, {x})
    P.values(out[1], {2, 2}, {1, 2, 3, 4})
  end)
end)

P.done()
