-- tests/peer/test_cond_closed_over_variable.lua — ExportDB cond_closed_over_variable.
-- Layer: tests. A real torch.cond on a tensor predicate (true_graph_0 / false_graph_0 in
-- PyTorch). torch.cond is not in fxdb yet (future issue: control flow / higher-order ops): the
-- clear "not yet supported" error in both modes; and a Lua `if` on the predicate's value is the
-- data-dependent error that suggests torch.cond.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local CondClosedOverVariable = nn.Module:extend("CondClosedOverVariable")
function CondClosedOverVariable:forward(pred, x)
  local function true_fn(val) return x * 2 end
  local function false_fn(val) return x - 2 end
  return torch.cond(pred, true_fn, false_fn, {x + 1})
end

local LuaIf = nn.Module:extend("CondClosedOverVariable")
function LuaIf:forward(pred, x)
  if pred:item() then return x * 2 end -- line 18
  return x - 2
end

local pred, x = torch.tensor(true), torch.randn(3, 2)

P.modes(function(strict, mode)
  T.test("cond_closed_over_variable: torch.cond is not yet supported, " .. mode, function()
    P.export_fails("not_implemented", "torch.cond is not yet supported by fxdb",
      CondClosedOverVariable(), {pred, x}, {strict = strict})
  end)
  T.test("cond_closed_over_variable: a Lua if on the tensor is data-dependent, " .. mode, function()
    local e = P.export_fails("data_dependent", "data-dependent", LuaIf(), {pred, x},
      {strict = strict})
    T.eq(e.location, "tests/peer/test_cond_closed_over_variable.lua:18")
  end)
end)

P.done()
