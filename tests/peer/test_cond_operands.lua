-- tests/peer/test_cond_operands.lua — ExportDB cond_operands (torch.cond, dynamic shapes).
-- Layer: tests. With dim 0 of x dynamic, the predicate x.shape[1] > 2 (Lua's 1-based shape
-- table: dim 0) stays the SymBool s0 > 2 — `gt = sym_size_int > 2` feeding higher_order.cond —
-- as PyTorch keeps it; both branches run at the sizes that pick them. Without the Dim the
-- predicate is static and cond folds to true_fn as PyTorch folds a static predicate.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local CondOperands = nn.Module:extend("CondOperands")
function CondOperands:forward(x, y)
  local function true_fn(a, b) return a + b end
  local function false_fn(a, b) return a - b end
  return torch.cond(x.shape[1] > 2, true_fn, false_fn, {x, y})
end

local x, y = torch.randn(3, 2), torch.randn(2)

P.modes(function(strict, mode)
  T.test("cond_operands with a dynamic dim keeps a cond on the SymBool s0 > 2, " .. mode, function()
    local m = CondOperands()
    local ep = torch.export.export(m, {x, y},
      {strict = strict, dynamic_shapes = {x = {[0] = torch.export.Dim("dim0_x")}}})
    P.program(ep, "placeholder:x placeholder:y sym_size_int=aten.sym_size.int gt=operator.gt " ..
      "get_attr:true_graph_0 get_attr:false_graph_0 cond=higher_order.cond getitem=getitem " ..
      "output:output", "x: USER_INPUT\ny: USER_INPUT", "getitem: USER_OUTPUT")
    local text = tostring(ep)
    for _, want in ipairs{
      'def forward(self, x: "f32[s0, 2]", y: "f32[2]"):',
      'gt: "Sym(s0 > 2)" = sym_size_int > 2;  sym_size_int = None',
      'cond = torch.ops.higher_order.cond(gt, true_graph_0, false_graph_0, [x, y]);  gt = ' ..
        'true_graph_0 = false_graph_0 = x = y = None',
      'add: "f32[s0, 2]" = torch.ops.aten.add.Tensor(x, y);  x = y = None',
      'sub: "f32[s0, 2]" = torch.ops.aten.sub.Tensor(x, y);  x = y = None'} do
      T.truthy(text:find(want, 1, true), want .. "\n" .. text)
    end
    T.eq(tostring(ep.range_constraints), "{s0: VR[0, int_oo]}")
    -- both branches at run time: ExportDB's extra input (2 rows) takes false_fn
    for _, n in ipairs{2, 3, 6} do P.numbers(m, ep, {torch.randn(n, 2), y}) end
  end)
end)

T.test("a predicate combined with `and` on its line is a guard, as before", function()
  local M = nn.Module:extend("M")
  function M:forward(a, b)
    return torch.cond(a.shape[1] > 2 and true, function(p, q) return p + q end,
                      function(p, q) return p - q end, {a, b})
  end
  local e = T.checkerr("Suggested fixes:\n  dim0_x = Dim('dim0_x', min=3)", torch.export.export,
    M(), {x, y}, {dynamic_shapes = {a = {[0] = torch.export.Dim("dim0_x")}}})
  T.eq(e.kind, "constraint_violation")
end)

P.modes(function(strict, mode)
  T.test("cond_operands without Dim: the static predicate folds to true_fn, " .. mode, function()
    local m = CondOperands()
    local ep = torch.export.export(m, {x, y}, {strict = strict})
    P.program(ep, "placeholder:x placeholder:y add=aten.add.Tensor output:output",
      "x: USER_INPUT\ny: USER_INPUT", "add: USER_OUTPUT")
    P.numbers(m, ep, {x, y})
  end)
end)

P.done()
