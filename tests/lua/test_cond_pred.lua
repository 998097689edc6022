-- tests/lua/test_cond_pred.lua — torch.cond's predicate computed on the line before the call
-- (issue 9): `local p = x:size(0) > 2` then `torch.cond(p, ...)` keeps the SymBool `gt: "Sym(s0 >
-- 2)"` as PyTorch does, for backed sizes and item() values, also negated and with comment lines
-- between; whenever the boolean could have been used for anything else (an op between, a later
-- read of p, a global, `and` / `or`) the comparison is a guard and the branch is picked at export
-- time (a backed size) or the data-dependent error (an item() value). Numbers against eager at
-- sizes on both sides of the predicate, both export modes.
local T = dofile("tests/lua/harness.lua")
local Dim = torch.export.Dim

local function module(name, forward)
  local M = nn.Module:extend(name)
  M.forward = forward
  return M()
end

local function add(a, b) return a + b end
local function sub(a, b) return a - b end

local BACKED = module("Backed", function(self, x, y)
  local p = x:size(0) > 2
  -- a comment and a blank line may come between

  return torch.cond(p, add, sub, {x, y})
end)

local NEGATED = module("Negated", function(self, x, y)
  local p = not (x:size(0) > 2)
  return torch.cond(p, add, sub, {x, y})
end)

local spec = {x = {[0] = Dim("b")}, y = {[0] = Dim("b")}}

local function run_sizes(m, ep, sizes)
  for _, n in ipairs(sizes) do
    local x, y = torch.randn(n, 3), torch.randn(n, 3)
    T.eq(fxdb._max_abs_diff(fxdb.run(ep, {x, y}).outputs[1], m(x, y)), 0, "size " .. n)
  end
end

T.test("a size comparison on the line before torch.cond stays a SymBool", function()
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(BACKED, {torch.randn(4, 3), torch.randn(4, 3)},
                                   {strict = strict, dynamic_shapes = spec})
    local text = tostring(ep)
    T.truthy(text:find('gt: "Sym(s0 > 2)" = sym_size_int > 2', 1, true), text)
    T.truthy(text:find("torch.ops.higher_order.cond(gt, true_graph_0, false_graph_0, [x, y])", 1,
                       true), text)
    T.truthy(text:find("Range constraints: {s0: VR[0, int_oo]}", 1, true), text)
    run_sizes(BACKED, ep, {2, 3, 6})
    -- not (...) is the negated relation
    ep = torch.export.export(NEGATED, {torch.randn(4, 3), torch.randn(4, 3)},
                             {strict = strict, dynamic_shapes = spec})
    text = tostring(ep)
    T.truthy(text:find('le: "Sym(s0 <= 2)" = sym_size_int <= 2', 1, true), text)
    run_sizes(NEGATED, ep, {2, 3, 6})
  end
end)

T.test("an item() comparison on the line before torch.cond stays a SymBool", function()
  local m = module("Item", function(self, x, t)
    local u = t:item()
    local p = u > 2
    return torch.cond(p, function(a) return a + 1 end, function(a) return a - 1 end, {x})
  end)
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(m, {torch.randn(4, 3), torch.tensor(5)}, {strict = strict})
    local text = tostring(ep)
    T.truthy(text:find('gt: "Sym(u0 > 2)" = _local_scalar_dense > 2', 1, true), text)
    T.truthy(text:find("torch.ops.higher_order.cond(gt, true_graph_0, false_graph_0, [x])", 1,
                       true), text)
    for _, k in ipairs({-1, 2, 3, 9}) do
      local x = torch.randn(4, 3)
      T.eq(fxdb._max_abs_diff(fxdb.run(ep, {x, torch.tensor(k)}).outputs[1],
                              m(x, torch.tensor(k))), 0, "item " .. k)
    end
  end
end)

-- Each of these could use the example's answer elsewhere: the comparison is a guard.
local GUARDED = {
  op_between = function(self, x, y)
    local p = x:size(0) > 2
    local z = y * 2
    return torch.cond(p, add, sub, {x, z})
  end,
  read_after = function(self, x, y)
    local p = x:size(0) > 2
    local r = torch.cond(p, add, sub, {x, y})
    if p then r = r * 2 end
    return r
  end,
  read_on_cond_line = function(self, x, y)
    local p = x:size(0) > 2
    return torch.cond(p, add, p and sub or add, {x, y})
  end,
  if_between = function(self, x, y)
    local p = x:size(0) > 2
    if p then y = y end
    return torch.cond(p, add, sub, {x, y})
  end,
  with_and = function(self, x, y)
    local p = x:size(0) > 2 and x:size(1) > 1
    return torch.cond(p, add, sub, {x, y})
  end,
}

T.test("a predicate the program could read elsewhere becomes a guard", function()
  for name, fwd in pairs(GUARDED) do
    local m = module(name, fwd)
    for _, strict in ipairs({true, false}) do
      local e = T.checkerr("Constraints violated (b)!", torch.export.export, m,
        {torch.randn(4, 3), torch.randn(4, 3)}, {strict = strict, dynamic_shapes = spec})
      T.truthy(e.message:find("satisfy the generated guard 3 <= L['x'].size()[0]", 1, true),
               name .. ": " .. e.message)
      -- with the fix, the branch is picked at export time and the program is right where valid
      local ep = torch.export.export(m, {torch.randn(4, 3), torch.randn(4, 3)},
        {strict = strict, dynamic_shapes = {x = {[0] = Dim("b", {min = 3})},
                                            y = {[0] = Dim("b", {min = 3})}}})
      T.falsy(tostring(ep):find("higher_order.cond", 1, true), name)
      run_sizes(m, ep, {3, 7})
    end
  end
end)

T.test("an item() predicate the program could read elsewhere is the data-dependent error", function()
  local m = module("ItemReadAfter", function(self, x, t)
    local u = t:item()
    local p = u > 2
    local r = torch.cond(p, function(a) return a + 1 end, function(a) return a - 1 end, {x})
    if p then r = r * 2 end
    return r
  end)
  local ok, e = pcall(torch.export.export, m, {torch.randn(4, 3), torch.tensor(5)})
  T.falsy(ok)
  T.eq(e.kind, "data_dependent")
  T.truthy(e.message:find("Could not guard on data-dependent expression u0 > 2", 1, true),
           e.message)
  T.truthy(e.source:find("local p = u > 2", 1, true), e.source)
end)

T.done()
