-- tests/peer/test_dynamic_shape_if_guard.lua — ExportDB dynamic_shape_if_guard.
-- Layer: tests. A Lua `if` on a size specializes: only the cos branch is traced.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local DynamicShapeIfGuard = nn.Module:extend("DynamicShapeIfGuard")
function DynamicShapeIfGuard:forward(x)
  if x.shape[1] == 3 then
    return x:cos()
  end
  return x:sin()
end

local x = torch.randn(3, 2, 2)

if P.has("cos.default") then
  P.modes(function(strict, mode)
    local m = DynamicShapeIfGuard()
    local ep = torch.export.export(m, {x}, {strict = strict})
    T.test("dynamic_shape_if_guard graph and signature, " .. mode, function()
      P.program(ep, "placeholder:x cos=aten.cos.default output:output", "x: USER_INPUT",
        "cos: USER_OUTPUT")
    end)
    T.test("dynamic_shape_if_guard numbers, " .. mode, function()
      local out = P.numbers(m, ep, {x})
      P.eq_tensor(out[1], x:cos())
    end)
  end)
else
  -- TODO(aten.cos): kernels are adding cos; until then the case stops with the clear error.
  P.modes(function(strict, mode)
    T.test("dynamic_shape_if_guard needs aten.cos (not yet registered), " .. mode, function()
      P.op_missing("cos", torch.export.export, DynamicShapeIfGuard(), {x}, {strict = strict})
    end)
  end)
end

P.done()
