-- tests/peer/test_assume_constant_result.lua — ExportDB assume_constant_result (escape hatch).
-- Layer: tests. torch._dynamo.assume_constant_result evaluates get_item on the example input
-- while exporting and bakes the result in: x[:4] is slice(x, 0, 0, 4) (not clamped to 3, as
-- PyTorch records it), y stays a dead input. Without the escape hatch, the same slice bound is
-- an unbacked u0 the string slice cannot take.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local AssumeConstantResult = nn.Module:extend("AssumeConstantResult")
AssumeConstantResult.get_item = torch._dynamo.assume_constant_result(function(self, y)
  return y:int():item()
end)
function AssumeConstantResult:forward(x, y)
  return x[{":" .. self:get_item(y)}]
end

local x, y = torch.randn(3, 2), torch.tensor(4)

P.modes(function(strict, mode)
  T.test("assume_constant_result: the item() is a constant, " .. mode, function()
    local m = AssumeConstantResult()
    local ep = torch.export.export(m, {x, y}, {strict = strict})
    P.program(ep, "placeholder:x placeholder:y slice_1=aten.slice.Tensor output:output",
      "x: USER_INPUT\ny: USER_INPUT", "slice_1: USER_OUTPUT")
    local code = ep.graph_module.code
    T.truthy(code:find("slice_1 = torch.ops.aten.slice.Tensor(x, 0, 0, 4)", 1, true), code)
    T.truthy(tostring(ep):find('slice_1: "f32[3, 2]"', 1, true), tostring(ep))
    T.eq(tostring(ep.range_constraints), "{}")
    P.numbers(m, ep, {x, y})
  end)
end)

T.test("assume_constant_result runs eagerly (x[:4] of 3 rows)", function()
  P.eq_tensor(AssumeConstantResult()(x, y), x)
end)

T.test("an argument computed inside forward has no example value", function()
  local M = nn.Module:extend("M")
  M.get = torch._dynamo.assume_constant_result(function(t) return t:int():item() end)
  function M:forward(a) return a[{":" .. self.get(a + 1)}] end
  local e = P.export_fails("not_implemented", "argument 1 is computed inside forward", M(),
                           {torch.tensor({1, 2, 3})})
  T.truthy(e.hint:find("input or a buffer", 1, true), e.hint)
end)

local Plain = nn.Module:extend("Plain")
function Plain:get_item(y)
  return y:int():item()
end
function Plain:forward(x, y)
  return x[{":" .. self:get_item(y)}]
end

P.modes(function(strict, mode)
  T.test("without the escape hatch the bound is an unbacked u0, " .. mode, function()
    local e = P.export_fails("index", 'malformed slice ":u0"', Plain(), {x, y}, {strict = strict})
    T.eq(e.location, "tests/peer/test_assume_constant_result.lua:51")
  end)
end)

P.done()
