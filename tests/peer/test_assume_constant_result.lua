-- tests/peer/test_assume_constant_result.lua — ExportDB assume_constant_result (escape hatch).
-- Layer: tests. torch._dynamo.assume_constant_result is not in fxdb yet (future issue: escape
-- hatches); without it, the .item() the case hides is a data-dependent error naming the line.
local P = dofile("tests/peer/peer.lua")
local T = P.T

T.test("assume_constant_result is not yet supported", function()
  local e = T.checkerr("torch._dynamo.assume_constant_result is not yet supported by fxdb", function()
    local AssumeConstantResult = nn.Module:extend("AssumeConstantResult")
    AssumeConstantResult.get_item = torch._dynamo.assume_constant_result(function(self, y)
      return y:int():item()
    end)
  end)
  T.eq(e.kind, "not_implemented")
end)

local AssumeConstantResult = nn.Module:extend("AssumeConstantResult")
function AssumeConstantResult:get_item(y)
  return y:int():item() -- line 19
end
function AssumeConstantResult:forward(x, y)
  return x[{":" .. self:get_item(y)}]
end

local x, y = torch.randn(3, 2), torch.tensor(4)

T.test("assume_constant_result runs eagerly (x[:4] of 3 rows)", function()
  local out = AssumeConstantResult()(x, y)
  P.eq_tensor(out, x)
end)

P.modes(function(strict, mode)
  T.test("without the escape hatch item() stops export, " .. mode, function()
    local m = AssumeConstantResult()
    local e = P.export_fails("data_dependent",
      "Could not extract specialized integer from data-dependent expression", m, {x, y},
      {strict = strict})
    T.eq(e.location, "tests/peer/test_assume_constant_result.lua:19")
  end)
end)

P.done()
