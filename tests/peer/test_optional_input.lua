-- tests/peer/test_optional_input.lua — ExportDB optional_input (python.object-model).
-- Layer: tests. A default tensor argument (y = torch.randn(2, 3), evaluated once at definition)
-- becomes a lifted constant, as in PyTorch 2.10 (2.4-2.9 refused the case). Lua has no default
-- arguments: `y = y or default_y` is the idiom. fxdb names the constant c_lifted_tensor_0 (2.10:
-- c_dict_type_l__self______dict_____forward_____defaults___0, a Dynamo source path).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local default_y = torch.tensor({{1, 2, 3}, {4, 5, 6}}, torch.float32)

local OptionalInput = nn.Module:extend("OptionalInput")
function OptionalInput:forward(x, y)
  if y == nil then y = default_y end
  if y ~= nil then
    return x + y
  end
  return x
end

local x = torch.tensor({{10, 20, 30}, {40, 50, 60}}, torch.float32)

P.modes(function(strict, mode)
  local m = OptionalInput()
  local ep = torch.export.export(m, {x}, {strict = strict})
  T.test("optional_input graph and signature, " .. mode, function()
    P.program(ep, "placeholder:c_lifted_tensor_0 placeholder:x add=aten.add.Tensor output:output",
      "c_lifted_tensor_0: CONSTANT_TENSOR target='lifted_tensor_0'\nx: USER_INPUT",
      "add: USER_OUTPUT")
    T.truthy(tostring(ep.graph):find("add.Tensor](args = (%x, %c_lifted_tensor_0)", 1, true))
    P.eq_tensor(ep.constants["lifted_tensor_0"], default_y, "the lifted default")
  end)
  T.test("optional_input numbers, " .. mode, function()
    local out = P.numbers(m, ep, {x})
    P.values(out[1], {2, 3}, {11, 22, 33, 44, 55, 66})
  end)
end)

P.done()
