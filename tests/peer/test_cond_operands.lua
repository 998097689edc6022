-- tests/peer/test_cond_operands.lua — ExportDB cond_operands (torch.cond, dynamic shapes).
-- Layer: tests. Needs torch.export.Dim (future issue: dynamic shapes), which stops with the clear
-- "not yet supported" error; without it the predicate x.shape[0] > 2 is static, so cond folds to
-- true_fn as PyTorch folds a static predicate.
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
  T.test("cond_operands without Dim: the static predicate folds to true_fn, " .. mode, function()
    local m = CondOperands()
    local ep = torch.export.export(m, {x, y}, {strict = strict})
    P.program(ep, "placeholder:x placeholder:y add=aten.add.Tensor output:output",
      "x: USER_INPUT\ny: USER_INPUT", "add: USER_OUTPUT")
    P.numbers(m, ep, {x, y})
  end)
end)

P.done()
