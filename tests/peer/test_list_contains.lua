-- tests/peer/test_list_contains.lua — ExportDB list_contains (python.assert, data-structure).
-- Layer: tests. Membership asserts on static sizes and constants vanish.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local function contains(list, v)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

local ListContains = nn.Module:extend("ListContains")
function ListContains:forward(x)
  assert(contains({6, 2}, x:size(-1)))
  assert(not contains({4, 5, 6}, x:size(0)))
  assert(not contains({"cow", "pig"}, "monkey"))
  return x + x
end

local x = torch.tensor({{1, 2}, {3, 4}, {5, 6}}, torch.float32)

P.modes(function(strict, mode)
  local m = ListContains()
  local ep = torch.export.export(m, {x}, {strict = strict})
  T.test("list_contains graph and signature, " .. mode, function()
    P.program(ep, "placeholder:x add=aten.add.Tensor output:output", "x: USER_INPUT",
      "add: USER_OUTPUT")
    T.truthy(tostring(ep.graph):find("add.Tensor](args = (%x, %x)", 1, true))
  end)
  T.test("list_contains numbers, " .. mode, function()
    local out = P.numbers(m, ep, {x})
    P.values(out[1], {3, 2}, {2, 4, 6, 8, 10, 12})
  end)
end)

P.done()
