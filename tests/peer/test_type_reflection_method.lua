-- tests/peer/test_type_reflection_method.lua — ExportDB type_reflection_method.
-- Layer: tests. type(a).func(x) on a plain (non-module) class with a class method; the 2.4
-- rewrite variant calls A.func(x) directly. Both give add(x, 1) (`1 + x` records add(x, 1)).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local A = {}
A.__index = A
function A.new() return setmetatable({}, A) end
function A.func(cls, x) -- @classmethod
  return 1 + x
end
local function type_of(obj) return getmetatable(obj) end

local TypeReflectionMethod = nn.Module:extend("TypeReflectionMethod")
function TypeReflectionMethod:forward(x)
  local a = A.new()
  return type_of(a):func(x)
end

local TypeReflectionMethodRewrite = nn.Module:extend("TypeReflectionMethodRewrite")
function TypeReflectionMethodRewrite:forward(x)
  return A:func(x)
end

local x = torch.tensor({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}, torch.float32)

for _, cls in ipairs{TypeReflectionMethod, TypeReflectionMethodRewrite} do
  P.modes(function(strict, mode)
    local m = cls()
    local ep = torch.export.export(m, {x}, {strict = strict})
    local name = tostring(cls):match("'(.*)'")
    T.test(name .. " graph and signature, " .. mode, function()
      P.program(ep, "placeholder:x add=aten.add.Tensor output:output", "x: USER_INPUT",
        "add: USER_OUTPUT")
      T.truthy(tostring(ep.graph):find("add.Tensor](args = (%x, 1)", 1, true))
    end)
    T.test(name .. " numbers, " .. mode, function()
      local out = P.numbers(m, ep, {x})
      P.eq_tensor(out[1], x + 1)
    end)
  end)
end

P.done()
