-- tests/peer/test_static_if.lua — ExportDB static_if (python.control-flow).
-- Layer: tests. `if len(x.shape) == 3` specializes; torch.ones(1, 1, 1) is a traced creation op.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local StaticIf = nn.Module:extend("StaticIf")
function StaticIf:forward(x)
  if #x.shape == 3 then
    return x + torch.ones(1, 1, 1)
  end
  return x
end

local x = torch.arange(12):float():reshape(3, 2, 2)

P.modes(function(strict, mode)
  local m = StaticIf()
  local ep = torch.export.export(m, {x}, {strict = strict})
  T.test("static_if graph and signature, " .. mode, function()
    P.program(ep, "placeholder:x ones=aten.ones.default add=aten.add.Tensor output:output",
      "x: USER_INPUT", "add: USER_OUTPUT")
    local g = tostring(ep.graph)
    T.truthy(g:find("ones.default](args = ([1, 1, 1],)", 1, true), g)
    T.truthy(g:find("add.Tensor](args = (%x, %ones)", 1, true), g)
  end)
  T.test("static_if numbers, " .. mode, function()
    local out = P.numbers(m, ep, {x})
    P.eq_tensor(out[1], x + 1)
  end)
  T.test("static_if: a 2-d input returns itself, " .. mode, function()
    local ep2 = torch.export.export(m, {torch.ones(2, 2)}, {strict = strict})
    P.program(ep2, "placeholder:x output:output", "x: USER_INPUT", "x: USER_OUTPUT")
  end)
end)

P.done()
