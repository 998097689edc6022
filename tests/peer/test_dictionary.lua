-- tests/peer/test_dictionary.lua — ExportDB dictionary (python.data-structure).
-- Layer: tests. A dict built in forward and a dict returned: the output {"y": ...} is flattened
-- (its out_spec restores the dict). y is an int64 0-dim input, so y * x2 is float32.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local Dictionary = nn.Module:extend("Dictionary")
function Dictionary:forward(x, y)
  local elements = {}
  elements["x2"] = x * x
  y = y * elements["x2"]
  return {y = y}
end

local x, y = torch.tensor({{1, 2}, {3, 4}, {5, -6}}, torch.float32), torch.tensor(4)

T.test("dictionary runs eagerly", function()
  local out = Dictionary()(x, y)
  P.values(out.y, {3, 2}, {4, 16, 36, 64, 100, 144})
  T.eq(out.y.dtype, torch.float32)
end)

P.modes(function(strict, mode)
  local m = Dictionary()
  T.test("dictionary graph and signature, " .. mode, function()
      local ep = torch.export.export(m, {x, y}, {strict = strict})
      P.program(ep, "placeholder:x placeholder:y mul=aten.mul.Tensor mul_1=aten.mul.Tensor " ..
        "output:output", "x: USER_INPUT\ny: USER_INPUT", "mul_1: USER_OUTPUT")
      T.truthy(tostring(ep.graph):find("mul.Tensor](args = (%y, %mul)", 1, true))
      local out = fxdb.run(ep, {x, y}).outputs[1]
      P.values(out, {3, 2}, {4, 16, 36, 64, 100, 144})
    end)
end)

P.done()
