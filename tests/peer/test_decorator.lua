-- tests/peer/test_decorator.lua — ExportDB decorator.
-- Layer: tests. forward wrapped by a decorator that adds 1 to its result: the wrapper is inlined.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local function test_decorator(func)
  return function(...) -- functools.wraps has no Lua counterpart: the wrapper is a vararg function
    return func(...) + 1
  end
end

local Decorator = nn.Module:extend("Decorator")
Decorator.forward = test_decorator(function(self, x, y)
  return x + y
end)

local x = torch.tensor({{1, 2}, {3, 4}, {5, 6}}, torch.float32)
local y = torch.tensor({{10, 20}, {30, 40}, {50, 60}}, torch.float32)

P.modes(function(strict, mode)
  local m = Decorator()
  local ep = torch.export.export(m, {x, y}, {strict = strict})
  T.test("decorator graph and signature, " .. mode, function()
    -- PyTorch names the inputs x, y (inspect.signature follows functools.wraps' __wrapped__);
    -- a Lua vararg wrapper has no parameter names, so fxdb names them args_0, args_1.
    P.program(ep, "placeholder:args_0 placeholder:args_1 add=aten.add.Tensor " ..
      "add_1=aten.add.Tensor output:output",
      "args_0: USER_INPUT\nargs_1: USER_INPUT", "add_1: USER_OUTPUT")
    T.truthy(tostring(ep.graph):find("add.Tensor](args = (%add, 1)", 1, true))
  end)
  T.test("decorator numbers, " .. mode, function()
    local out = P.numbers(m, ep, {x, y})
    P.values(out[1], {3, 2}, {12, 23, 34, 45, 56, 67})
  end)
end)

P.done()
