-- tests/peer/test_unsupported_operator.lua — ExportDB unsupported_operator (was torch_sym_min;
-- NOT_SUPPORTED_YET). Layer: tests. PyTorch (Dynamo) refuses it ("Unsupported: torch.* op
-- returned non-Tensor"); in fxdb torch.sym_min of two plain sizes is a plain number (the static
-- export specializes it, as a non-strict PyTorch export does): sum + 3.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local TorchSymMin = nn.Module:extend("TorchSymMin")
function TorchSymMin:forward(x)
  return x:sum() + torch.sym_min(x:size(0), 100)
end

P.modes(function(strict, mode)
  T.test("unsupported_operator: sym_min of plain sizes specializes, " .. mode, function()
    local m = TorchSymMin()
    local x = torch.randn(3, 2)
    local ep = torch.export.export(m, {x}, {strict = strict})
    P.program(ep, "placeholder:x sum_1=aten.sum.default add=aten.add.Tensor output:output",
      "x: USER_INPUT", "add: USER_OUTPUT")
    T.truthy(ep.graph_module.code:find("add = torch.ops.aten.add.Tensor(sum_1, 3)", 1, true))
    P.numbers(m, ep, {x})
  end)
end)

P.done()
