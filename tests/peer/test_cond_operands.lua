-- tests/peer/test_cond_operands.lua — ExportDB cond_operands (torch.cond, dynamic shapes).
-- Layer: tests. Needs torch.export.Dim (future issue: dynamic shapes) and torch.cond (future
-- issue: control flow / higher-order ops): each stops with the clear "not yet supported" error.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local CondOperands = nn.Module:extend("CondOperands")
function CondOperands:forward(x, y)
  local function true_fn(a, b) return a + b end
  local function false_fn(a, b) return a - b end
  return torch.cond(x.shape[1] > 2, true_fn, false_fn, {x, y})
end

local x, y = torch.randn(3, 2), torch.randn(2)

T.test("cond_operands: Dim is not yet supported", function()
  local e = T.checkerr("torch.export.Dim is not yet supported by fxdb", torch.export.Dim, "dim0_x")
  T.eq(e.kind, "not_implemented")
end)

P.modes(function(strict, mode)
  T.test("cond_operands: torch.cond is not yet supported, " .. mode, function()
    P.export_fails("not_implemented", "torch.cond is not yet supported by fxdb", CondOperands(),
      {x, y}, {strict = strict})
  end)
end)

P.done()
