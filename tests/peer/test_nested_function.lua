-- tests/peer/test_nested_function.lua — ExportDB nested_function (python.closure).
-- Layer: tests. A closure mutates an intermediate through an upvalue (`nonlocal x; x += 1`, an
-- in-place add on a tensor): the functional form has a plain add and no extra output.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local NestedFunction = nn.Module:extend("NestedFunction")
function NestedFunction:forward(a, b)
  local x = a + b
  local z = a - b
  local function closure(y)
    x:add_(1) -- Python's `x += 1` on a tensor is the in-place __iadd__
    return x * y + z
  end
  return closure(x)
end

local a = torch.tensor({{1, 2}, {3, 4}, {5, 6}}, torch.float32)
local b = torch.tensor({10, 20}, torch.float32)

P.modes(function(strict, mode)
  local m = NestedFunction()
  local ep = torch.export.export(m, {a, b}, {strict = strict})
  T.test("nested_function functional graph (2.4 names), " .. mode, function()
    P.program(ep, "placeholder:a placeholder:b add=aten.add.Tensor sub=aten.sub.Tensor " ..
      "add_1=aten.add.Tensor mul=aten.mul.Tensor add_2=aten.add.Tensor output:output",
      "a: USER_INPUT\nb: USER_INPUT", "add_2: USER_OUTPUT")
    local g = tostring(ep.graph)
    T.truthy(g:find("add.Tensor](args = (%add, 1)", 1, true), g)
    T.truthy(g:find("mul.Tensor](args = (%add_1, %add_1)", 1, true), g)
    T.truthy(g:find("add.Tensor](args = (%mul, %sub)", 1, true), g)
  end)
  T.test("nested_function numbers, " .. mode, function()
    local out = P.numbers(m, ep, {a, b})
    -- x = a + b + 1; x * x + (a - b)
    P.values(out[1], {3, 2}, {12 * 12 - 9, 23 * 23 - 18, 14 * 14 - 7, 25 * 25 - 16,
                              16 * 16 - 5, 27 * 27 - 14})
  end)
  T.test("nested_function training IR keeps add_ (2.10), " .. mode, function()
    local tr = torch.export.export(m, {a, b}, {strict = strict, ir = "training"})
    T.eq(P.ops(tr), "placeholder:a placeholder:b add=aten.add.Tensor sub=aten.sub.Tensor " ..
      "add_=aten.add_.Tensor mul=aten.mul.Tensor add_1=aten.add.Tensor output:output")
  end)
end)

P.done()
