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
  T.test("cond_closed_over_variable: a real cond with true_graph_0 / false_graph_0, " .. mode, function()
    local m = CondClosedOverVariable()
    local ep = torch.export.export(m, {pred, x}, {strict = strict})
    -- the explicit operand x + 1 is unused by both branches and dropped; the closed-over x is
    -- lifted into the operands (PyTorch keeps the dead add node; fxdb's DCE removes it)
    P.program(ep, "placeholder:pred placeholder:x get_attr:true_graph_0 get_attr:false_graph_0 " ..
      "cond=higher_order.cond getitem=getitem output:output", "pred: USER_INPUT\nx: USER_INPUT",
      "getitem: USER_OUTPUT")
    local code = fxdb.code(ep)
    T.truthy(code:find("cond = torch.ops.higher_order.cond(pred, true_graph_0, false_graph_0, [x]);", 1, true), code)
    T.truthy(code:find("    class true_graph_0(torch.nn.Module):\n        def forward(self, x: \"f32[3, 2]\"):", 1, true), code)
    T.truthy(code:find("mul: \"f32[3, 2]\" = torch.ops.aten.mul.Tensor(x, 2);  x = None\n            return (mul,)", 1, true), code)
    T.truthy(code:find("sub: \"f32[3, 2]\" = torch.ops.aten.sub.Tensor(x, 2);  x = None\n            return (sub,)", 1, true), code)
    P.numbers(m, ep, {pred, x})
    P.numbers(m, ep, {torch.tensor(false), x})
  end)
  T.test("cond_closed_over_variable: a Lua if on the tensor is data-dependent, " .. mode, function()
    local e = P.export_fails("data_dependent", "data-dependent", LuaIf(), {pred, x},
      {strict = strict})
    T.eq(e.location, "tests/peer/test_cond_closed_over_variable.lua:18")
  end)
end)

P.done()
