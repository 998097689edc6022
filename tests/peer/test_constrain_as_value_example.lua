-- tests/peer/test_constrain_as_value_example.lua — ExportDB constrain_as_value_example
-- (torch.dynamic-value, torch.escape-hatch). Layer: tests. After torch._check narrows u0 to
-- [0, 5], `a < 6` is decided by the range (no guard, no error) and only the sin branch is
-- traced; the asserts stay.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local ConstrainAsValueExample = nn.Module:extend("ConstrainAsValueExample")
function ConstrainAsValueExample:forward(x, y)
  local a = x:item()
  torch._check(a >= 0)
  torch._check(a <= 5)
  if a < 6 then
    return y:sin()
  end
  return y:cos()
end

local y = torch.randn(5, 5)

P.modes(function(strict, mode)
  T.test("constrain_as_value_example: the range decides a < 6, " .. mode, function()
    local m = ConstrainAsValueExample()
    local ep = torch.export.export(m, {torch.tensor(4), y}, {strict = strict})
    P.program(ep, "placeholder:x placeholder:y _local_scalar_dense=aten._local_scalar_dense.default " ..
      "ge=operator.ge _assert_scalar_default=aten._assert_scalar.default le=operator.le " ..
      "_assert_scalar_default_1=aten._assert_scalar.default sin=aten.sin.default output:output",
      "x: USER_INPUT\ny: USER_INPUT", "sin: USER_OUTPUT")
    local text = tostring(ep)
    for _, want in ipairs{
      'le: "Sym(u0 <= 5)" = _local_scalar_dense <= 5;  _local_scalar_dense = None',
      'sin: "f32[5, 5]" = torch.ops.aten.sin.default(y);  y = None'} do
      T.truthy(text:find(want, 1, true), want .. "\n" .. text)
    end
    T.eq(tostring(ep.range_constraints), "{u0: VR[0, 5]}")
    for _, k in ipairs{0, 4, 5} do P.numbers(m, ep, {torch.tensor(k), y}) end
    T.checkerr("Runtime assertion failed for expression u0 <= 5 on node 'le'",
               function() return ep:module()(torch.tensor(6), y) end)
  end)
end)

P.done()
