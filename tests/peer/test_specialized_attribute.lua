-- tests/peer/test_specialized_attribute.lua — ExportDB specialized_attribute.
-- Layer: tests. Non-tensor attributes (a string compared with an enum value, an int) are
-- burned into the graph as constants.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local Animal = {COW = {value = "moo"}} -- Enum("Animal", COW="moo")

local SpecializedAttribute = nn.Module:extend("SpecializedAttribute")
function SpecializedAttribute:init()
  self.a = "moo"
  self.b = 4
end
function SpecializedAttribute:forward(x)
  if self.a == Animal.COW.value then
    return x * x + self.b
  else
    error("bad")
  end
end

local x = torch.tensor({{1, 2}, {3, 4}, {5, -6}}, torch.float32)

P.modes(function(strict, mode)
  local m = SpecializedAttribute()
  local ep = torch.export.export(m, {x}, {strict = strict})
  T.test("specialized_attribute graph and signature, " .. mode, function()
    P.program(ep, "placeholder:x mul=aten.mul.Tensor add=aten.add.Tensor output:output",
      "x: USER_INPUT", "add: USER_OUTPUT")
    T.truthy(tostring(ep.graph):find("add.Tensor](args = (%mul, 4)", 1, true))
  end)
  T.test("specialized_attribute numbers, " .. mode, function()
    local out = P.numbers(m, ep, {x})
    P.values(out[1], {3, 2}, {5, 8, 13, 20, 29, 40})
    T.eq(m.a, "moo")
    T.eq(m.b, 4)
  end)
end)

P.done()
