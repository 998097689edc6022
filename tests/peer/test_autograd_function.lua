-- tests/peer/test_autograd_function.lua — ExportDB autograd_function.
-- Layer: tests. fxdb has no autograd, so torch.autograd.Function has no counterpart: the Lua
-- port is a table with static forward/backward and an `apply` that runs forward, which is what
-- export sees of an autograd.Function (its forward, inlined: one clone).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local MyAutogradFunction = {}
function MyAutogradFunction.forward(ctx, x)
  return x:clone()
end
function MyAutogradFunction.backward(ctx, grad_output)
  return grad_output + 1
end
function MyAutogradFunction.apply(...)
  return MyAutogradFunction.forward({}, ...)
end

local AutogradFunction = nn.Module:extend("AutogradFunction")
function AutogradFunction:forward(x)
  return MyAutogradFunction.apply(x)
end

local x = torch.tensor({{1, 2}, {3, 4}, {5, 6}}, torch.float32)

P.modes(function(strict, mode)
  local m = AutogradFunction()
  local ep = torch.export.export(m, {x}, {strict = strict})
  T.test("autograd_function graph and signature, " .. mode, function()
    P.program(ep, "placeholder:x clone=aten.clone.default output:output", "x: USER_INPUT",
      "clone: USER_OUTPUT")
  end)
  T.test("autograd_function numbers, " .. mode, function()
    local out = P.numbers(m, ep, {x})
    P.eq_tensor(out[1], x)
  end)
end)

P.done()
