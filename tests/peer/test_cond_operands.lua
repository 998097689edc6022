-- tests/peer/test_cond_operands.lua — ExportDB cond_operands (torch.cond, dynamic shapes).
-- Layer: tests. With dim 0 of x dynamic, PyTorch keeps a cond whose predicate is the SymBool
-- sym_size > 2; fxdb has no SymBool yet, so the comparison guards (s0 > 2) and export reports
-- the narrowed range with PyTorch's suggested fix (pending: a symbolic predicate). Without the Dim
-- the predicate is static and cond folds to true_fn as PyTorch folds a static predicate.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local CondOperands = nn.Module:extend("CondOperands")
function CondOperands:forward(x, y)
  local function true_fn(a, b) return a + b end
  local function false_fn(a, b) return a - b end
  return torch.cond(x.shape[1] > 2, true_fn, false_fn, {x, y})
end

local x, y = torch.randn(3, 2), torch.randn(2)

T.test("cond_operands with a dynamic dim: the guard narrows it (no SymBool predicate yet)", function()
  local e = T.checkerr("Suggested fixes:\n  dim0_x = Dim('dim0_x', min=3)", torch.export.export,
    CondOperands(), {x, y}, {dynamic_shapes = {x = {[0] = torch.export.Dim("dim0_x")}}})
  T.eq(e.kind, "constraint_violation")
end)
P.pending("cond_operands keeps a cond on a symbolic predicate", "SymBool predicates of torch.cond",
  function()
    local ep = torch.export.export(CondOperands(), {x, y},
      {dynamic_shapes = {x = {[0] = torch.export.Dim("dim0_x")}}})
    T.truthy(tostring(ep.graph):find("higher_order.cond", 1, true))
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
