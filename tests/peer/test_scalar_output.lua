-- tests/peer/test_scalar_output.lua — ExportDB scalar_output (torch.dynamic-shape).
-- Layer: tests. A SymInt output (x.shape[1] + 1 with dim 1 dynamic) needs torch.export.Dim,
-- which fxdb does not have yet (future issue: dynamic shapes): the clear error.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local ScalarOutput = nn.Module:extend("ScalarOutput")
function ScalarOutput:forward(x)
  return x.shape[2] + 1
end

T.test("scalar_output: Dim is not yet supported", function()
  local e = T.checkerr("torch.export.Dim is not yet supported by fxdb", function()
    local dim1_x = torch.export.Dim("dim1_x")
    return torch.export.export(ScalarOutput(), {torch.randn(3, 2)},
      {dynamic_shapes = {x = {[1] = dim1_x}}})
  end)
  T.eq(e.kind, "not_implemented")
end)

T.test("scalar_output runs eagerly", function()
  T.eq(ScalarOutput()(torch.randn(3, 2)), 3)
end)

P.done()
