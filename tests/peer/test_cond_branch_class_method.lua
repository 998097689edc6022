-- tests/peer/test_cond_branch_class_method.lua — ExportDB cond_branch_class_method (torch.cond).
-- Layer: tests. A Lua boolean predicate picks the branch at trace time, as PyTorch folds it.
-- PyTorch folds the static predicate (3 <= 2) and traces only the false branch: sin(x).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local MySubModule = nn.Module:extend("MySubModule")
function MySubModule:foo(x)
  return x:cos()
end
function MySubModule:forward(x)
  return self:foo(x)
end

local CondBranchClassMethod = nn.Module:extend("CondBranchClassMethod")
function CondBranchClassMethod:init()
  self.subm = MySubModule()
end
function CondBranchClassMethod:bar(x)
  return x:sin()
end
function CondBranchClassMethod:forward(x)
  local subm = self.subm
  return torch.cond(x.shape[1] <= 2, function(v) return subm(v) end,
    function(v) return self:bar(v) end, {x})
end

P.modes(function(strict, mode)
  T.test("cond_branch_class_method: the static predicate folds to the false branch, " .. mode, function()
    local m, x = CondBranchClassMethod(), torch.tensor({0.5, -1, 2})
    local ep = torch.export.export(m, {x}, {strict = strict})
    P.program(ep, "placeholder:x sin=aten.sin.default output:output", "x: USER_INPUT",
      "sin: USER_OUTPUT")
    P.numbers(m, ep, {x})
  end)
end)

P.done()
