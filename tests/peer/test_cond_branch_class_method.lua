-- tests/peer/test_cond_branch_class_method.lua — ExportDB cond_branch_class_method (torch.cond).
-- Layer: tests. torch.cond is not in fxdb yet (future issue: control flow / higher-order ops):
-- export stops with the clear "not yet supported" error at the cond line, in both modes.
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
  T.test("cond_branch_class_method: torch.cond is not yet supported, " .. mode, function()
    local e = P.export_fails("not_implemented", "torch.cond is not yet supported by fxdb",
      CondBranchClassMethod(), {torch.randn(3)}, {strict = strict})
    T.truthy(e.message:find("control-flow", 1, true), e.message)
  end)
end)

P.done()
