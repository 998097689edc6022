-- tests/peer/test_cond_branch_nonlocal_variables.lua — ExportDB cond_branch_nonlocal_variables.
-- Layer: tests. torch.cond is not in fxdb yet (future issue: control flow / higher-order ops):
-- the clear "not yet supported" error in both modes. The same branch under a Lua `if` on the
-- size shows the rest of the case: torch.tensor(3.14) lifted as c_lifted_tensor_0 and read
-- through lift_fresh_copy (the functional form has no detach_).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local CondBranchNonlocalVariables = nn.Module:extend("CondBranchNonlocalVariables")
function CondBranchNonlocalVariables:forward(x)
  local my_tensor_var = x + 100
  local my_primitive_var = 3.14
  local function true_fn(a, y, z) return a + y + z end
  local function false_fn(a, y, z) return a - y - z end
  return torch.cond(x.shape[1] > 5, true_fn, false_fn,
    {x, my_tensor_var, torch.tensor(my_primitive_var)})
end

local Specialized = nn.Module:extend("CondBranchNonlocalVariables")
function Specialized:forward(x)
  local my_tensor_var = x + 100
  local my_primitive_var = 3.14
  local function true_fn(a, y, z) return a + y + z end
  local function false_fn(a, y, z) return a - y - z end
  local operands = {x, my_tensor_var, torch.tensor(my_primitive_var)}
  if x.shape[1] > 5 then return true_fn(table.unpack(operands)) end
  return false_fn(table.unpack(operands))
end

local x = torch.tensor({0, 1, 2, 3, 4, 5}, torch.float32)

P.modes(function(strict, mode)
  T.test("cond_branch_nonlocal_variables: the static predicate inlines true_fn, " .. mode, function()
    -- PyTorch also records detach_ after lift_fresh_copy (how Dynamo wraps torch.tensor); fxdb
    -- has no detach_ for a tensor made from data, so that node is absent here.
    local m = CondBranchNonlocalVariables()
    local ep = torch.export.export(m, {x}, {strict = strict})
    P.program(ep, "placeholder:c_lifted_tensor_0 placeholder:x add=aten.add.Tensor " ..
      "lift_fresh_copy=aten.lift_fresh_copy.default add_1=aten.add.Tensor add_2=aten.add.Tensor " ..
      "output:output",
      "c_lifted_tensor_0: CONSTANT_TENSOR target='lifted_tensor_0'\nx: USER_INPUT",
      "add_2: USER_OUTPUT")
    P.numbers(m, ep, {x})
  end)
  T.test("cond_branch_nonlocal_variables specialized: lifted constant, " .. mode, function()
    local m = Specialized()
    local ep = torch.export.export(m, {x}, {strict = strict})
    P.program(ep, "placeholder:c_lifted_tensor_0 placeholder:x add=aten.add.Tensor " ..
      "lift_fresh_copy=aten.lift_fresh_copy.default add_1=aten.add.Tensor add_2=aten.add.Tensor " ..
      "output:output",
      "c_lifted_tensor_0: CONSTANT_TENSOR target='lifted_tensor_0'\nx: USER_INPUT",
      "add_2: USER_OUTPUT")
    local g = tostring(ep.graph)
    T.truthy(g:find("add.Tensor](args = (%x, 100)", 1, true), g)
    T.truthy(g:find("add.Tensor](args = (%x, %add)", 1, true), g)
    T.truthy(g:find("add.Tensor](args = (%add_1, %lift_fresh_copy)", 1, true), g)
    local c = ep.constants["lifted_tensor_0"]
    T.eq(#c.shape, 0)
    T.eq(c:item(), torch.tensor(3.14):item())
    local out = P.numbers(m, ep, {x})
    local want = {}
    for i = 0, 5 do want[#want + 1] = (torch.tensor(2.0 * i + 100) + torch.tensor(3.14)):item() end
    P.values(out[1], {6}, want)
  end)
end)

P.done()
