-- tests/peer/test_static_for_loop.lua — ExportDB static_for_loop (python.control-flow).
-- Layer: tests. A loop over a constant range is unrolled; the returned list is flattened into
-- 10 outputs. `i + x` with the number on the left still records add.Tensor(x, i).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local StaticForLoop = nn.Module:extend("StaticForLoop")
function StaticForLoop:forward(x)
  local ret = {}
  for i = 0, 9 do ret[#ret + 1] = i + x end
  return ret
end

local x = torch.tensor({{1, 2}, {3, 4}, {5, 6}}, torch.float32)

P.modes(function(strict, mode)
  local m = StaticForLoop()
  local ep = torch.export.export(m, {x}, {strict = strict})
  T.test("static_for_loop graph and signature, " .. mode, function()
    local ops, outs = {"placeholder:x", "add=aten.add.Tensor"}, {"add: USER_OUTPUT"}
    for i = 1, 9 do
      ops[#ops + 1] = "add_" .. i .. "=aten.add.Tensor"
      outs[#outs + 1] = "add_" .. i .. ": USER_OUTPUT"
    end
    ops[#ops + 1] = "output:output"
    P.program(ep, table.concat(ops, " "), "x: USER_INPUT", table.concat(outs, "\n"))
    local g = tostring(ep.graph)
    T.truthy(g:find("add.Tensor](args = (%x, 0)", 1, true), g)
    T.truthy(g:find("add.Tensor](args = (%x, 9)", 1, true), g)
  end)
  T.test("static_for_loop numbers, " .. mode, function()
    local out = P.numbers(m, ep, {x})
    T.eq(#out, 10)
    for i = 0, 9 do P.eq_tensor(out[i + 1], x + i, "output " .. i) end
  end)
end)

P.done()
