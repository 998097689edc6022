-- tests/peer/test_dynamic_shape_assert.lua — ExportDB dynamic_shape_assert (python.assert).
-- Layer: tests. Asserts on static sizes vanish; the input itself is the output.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local DynamicShapeAssert = nn.Module:extend("DynamicShapeAssert")
function DynamicShapeAssert:forward(x)
  -- assertion with error message
  assert(x.shape[1] > 2, x.shape[1] .. " is greater than 2")
  -- assertion without error message
  assert(x.shape[1] > 1)
  return x
end

local x = torch.tensor({{1, 2}, {3, 4}, {5, 6}}, torch.float32)

P.modes(function(strict, mode)
  local m = DynamicShapeAssert()
  local ep = torch.export.export(m, {x}, {strict = strict})
  T.test("dynamic_shape_assert graph and signature, " .. mode, function()
    P.program(ep, "placeholder:x output:output", "x: USER_INPUT", "x: USER_OUTPUT")
  end)
  T.test("dynamic_shape_assert numbers, " .. mode, function()
    local out = P.numbers(m, ep, {x})
    P.eq_tensor(out[1], x)
  end)
  T.test("dynamic_shape_assert: a failing assert stops export at its line, " .. mode, function()
    T.checkerr("test_dynamic_shape_assert.lua:9: 1 is greater than 2", torch.export.export, m,
      {torch.ones(1, 2)}, {strict = strict})
  end)
end)

P.done()
