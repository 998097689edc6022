-- tests/peer/test_cond_branch_nested_function.lua — ExportDB cond_branch_nested_function.
-- Layer: tests. torch.cond is not in fxdb yet (future issue: control flow / higher-order ops):
-- the clear "not yet supported" error in both modes. PyTorch folds the static predicate
-- (3 < 10) and inlines true_fn: add(x, x). The same closures under a Lua `if` on the size
-- (the specialization PyTorch does) export to exactly that graph.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local function true_fn(x)
  local function inner_true_fn(y)
    return x + y
  end
  return inner_true_fn(x)
end
local function false_fn(x)
  local function inner_false_fn(y)
    return x - y
  end
  return inner_false_fn(x)
end

local CondBranchNestedFunction = nn.Module:extend("CondBranchNestedFunction")
function CondBranchNestedFunction:forward(x)
  return torch.cond(x.shape[1] < 10, true_fn, false_fn, {x})
end

local Specialized = nn.Module:extend("CondBranchNestedFunction")
function Specialized:forward(x)
  if x.shape[1] < 10 then return true_fn(x) end
  return false_fn(x)
end

local x = torch.tensor({1, -2, 3.5})

P.modes(function(strict, mode)
  T.test("cond_branch_nested_function: the static predicate inlines true_fn, " .. mode, function()
    local m = CondBranchNestedFunction()
    local ep = torch.export.export(m, {x}, {strict = strict})
    P.program(ep, "placeholder:x add=aten.add.Tensor output:output", "x: USER_INPUT",
      "add: USER_OUTPUT")
    P.values(P.numbers(m, ep, {x})[1], {3}, {2, -4, 7})
  end)
  T.test("cond_branch_nested_function with the predicate specialized, " .. mode, function()
    local m = Specialized()
    local ep = torch.export.export(m, {x}, {strict = strict})
    P.program(ep, "placeholder:x add=aten.add.Tensor output:output", "x: USER_INPUT",
      "add: USER_OUTPUT")
    T.truthy(tostring(ep.graph):find("add.Tensor](args = (%x, %x)", 1, true))
    local out = P.numbers(m, ep, {x})
    P.values(out[1], {3}, {2, -4, 7})
  end)
end)

P.done()
