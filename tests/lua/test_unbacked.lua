-- tests/lua/test_unbacked.lua — data-dependent values in torch.export (issue 9): x:item() as an
-- unbacked SymInt (_local_scalar_dense), torch._check / _check_is_size / _constrain_as_size /
-- _constrain_as_value refining its range, the runtime asserts export emits for it
-- (sym_constrain_range_for_size, _assert_scalar over ge / le), the data-dependent error of an
-- undecidable branch, and the exported program running those asserts. Expected graph lines are
-- torch 2.5's printout of the same programs (test/export/test_export.py, ExportDB).
local T = dofile("tests/lua/harness.lua")
local FILE = debug.getinfo(1, "S").short_src

local module = T.module

local body = T.forward_body

local function same_lines(got, want)
  for i = 1, math.max(#got, #want) do
    T.eq(got[i], want[i], "line " .. i .. " of\n" .. table.concat(got, "\n"))
  end
end

local function catch(f, ...)
  local ok, e = pcall(f, ...)
  T.falsy(ok, "expected an error")
  return e
end

local CONSTRAIN = module(function(self, x)
  local a = x:item()
  torch._check(a >= 0)
  torch._check(a <= 5)
  return torch.zeros({a, 5})
end)

T.test("item() is an unbacked u0; torch._check narrows it; ge / le runtime asserts", function()
  for _, strict in ipairs{true, false} do
    local ep = torch.export.export(CONSTRAIN, {torch.tensor(4)}, {strict = strict})
    same_lines(body(ep), {
      '_local_scalar_dense: "Sym(u0)" = torch.ops.aten._local_scalar_dense.default(x);  x = None',
      'ge: "Sym(u0 >= 0)" = _local_scalar_dense >= 0',
      '_assert_scalar_default = torch.ops.aten._assert_scalar.default(ge, "Runtime assertion ' ..
        'failed for expression u0 >= 0 on node \'ge\'");  ge = _assert_scalar_default = None',
      'le: "Sym(u0 <= 5)" = _local_scalar_dense <= 5',
      '_assert_scalar_default_1 = torch.ops.aten._assert_scalar.default(le, "Runtime assertion ' ..
        'failed for expression u0 <= 5 on node \'le\'");  le = _assert_scalar_default_1 = None',
      'zeros: "f32[u0, 5]" = torch.ops.aten.zeros.default([_local_scalar_dense, 5], device = ' ..
        'device(type=\'cpu\'), pin_memory = False);  _local_scalar_dense = None',
      'return (zeros,)'})
    T.truthy(tostring(ep):find("Range constraints: {u0: VR[0, 5]}", 1, true), tostring(ep))
    T.eq(ep.range_constraints.u0.lower, 0)
    T.eq(ep.range_constraints.u0.upper, 5)
    -- the program runs at every value the asserts allow, as eager does
    local gm = ep:module()
    for _, k in ipairs{0, 1, 3, 5} do
      local want = CONSTRAIN(torch.tensor(k))
      local got = fxdb.run(ep, {torch.tensor(k)}).outputs[1]
      T.eq(tostring(got:size()), tostring(want:size()), "fxdb.run at " .. k)
      T.eq(tostring(gm(torch.tensor(k)):size()), tostring(want:size()), "module at " .. k)
    end
    -- and refuses the others with the assert's message
    local e = catch(function() return gm(torch.tensor(6)) end)
    T.eq(e.kind, "runtime_assert")
    T.truthy(tostring(e):find("Runtime assertion failed for expression u0 <= 5 on node 'le'", 1,
                              true), tostring(e))
    e = catch(fxdb.run, ep, {torch.tensor(-1)})
    T.truthy(tostring(e):find("Runtime assertion failed for expression u0 >= 0 on node 'ge'", 1,
                              true), tostring(e))
  end
end)

T.test("a branch the range decides records nothing (constrain_as_value)", function()
  local m = module(function(self, x, y)
    local a = x:item()
    torch._check(a >= 0)
    torch._check(a <= 5)
    if a < 6 then return y:sin() end
    return y:cos()
  end)
  local y = torch.randn(5, 5)
  for _, strict in ipairs{true, false} do
    local ep = torch.export.export(m, {torch.tensor(4), y}, {strict = strict})
    local b = body(ep)
    T.eq(b[4], 'le: "Sym(u0 <= 5)" = _local_scalar_dense <= 5;  _local_scalar_dense = None')
    T.eq(b[6], 'sin: "f32[5, 5]" = torch.ops.aten.sin.default(y);  y = None')
    T.eq(#b, 7)
    T.eq((fxdb.run(ep, {torch.tensor(2), y}).outputs[1] - y:sin()):abs():max():item(), 0)
  end
end)

T.test("an undecidable branch is a data-dependent error at its line, with the fixes", function()
  local line = debug.getinfo(1, "l").currentline + 3
  local m = module(function(self, x, y)
    local a = x:item()
    if a > 2 then
      return y:sin()
    end
    return y:cos()
  end)
  for _, strict in ipairs{true, false} do
    local e = catch(torch.export.export, m, {torch.tensor(4), torch.randn(2)}, {strict = strict})
    T.eq(e.kind, "data_dependent")
    T.eq(e.location, FILE .. ":" .. line)
    T.eq(e.source, "if a > 2 then")
    T.truthy(e.message:find("Could not guard on data-dependent expression u0 > 2 (unhinted: u0 > 2)." ..
                            "  (Size-like symbols: none)", 1, true), e.message)
    T.truthy(e.hint:find("torch._check", 1, true) and e.hint:find("torch.cond", 1, true), e.hint)
  end
  -- a branch with no op in it fails at the end of forward, still naming the comparison's line
  line = debug.getinfo(1, "l").currentline + 3
  local m2 = module(function(self, x, y)
    local a = x:item()
    if a > 2 then return y end
    return y + 1
  end)
  local e = catch(torch.export.export, m2, {torch.tensor(4), torch.randn(2)})
  T.eq(e.kind, "data_dependent")
  T.eq(e.location, FILE .. ":" .. line)
  -- size-like symbols are listed
  local m3 = module(function(self, x)
    local a = x:item()
    torch._check_is_size(a)
    if a:eq(1) then return torch.zeros({1}) end
    return torch.zeros({2})
  end)
  e = catch(torch.export.export, m3, {torch.tensor(4)})
  T.truthy(e.message:find("Could not guard on data-dependent expression Eq(u0, 1) (unhinted: " ..
                          "Eq(u0, 1)).  (Size-like symbols: u0)", 1, true), e.message)
end)

T.test("torch._check_is_size: sym_constrain_range_for_size, then the range asserts", function()
  local m = module(function(self, x, y)
    local a = x:item()
    torch._check_is_size(a)
    torch._check(a <= 5)
    return y:narrow(0, 0, a) * 2
  end)
  local y = torch.arange(6):float()
  for _, strict in ipairs{true, false} do
    local ep = torch.export.export(m, {torch.tensor(4), y}, {strict = strict})
    local b = body(ep)
    T.eq(b[2], 'sym_constrain_range_for_size_default = torch.ops.aten.sym_constrain_range_for_size' ..
      '.default(_local_scalar_dense);  sym_constrain_range_for_size_default = None', b[2])
    T.eq(b[3], 'ge: "Sym(u0 >= 0)" = _local_scalar_dense >= 0')
    T.eq(b[5], 'le: "Sym(u0 <= 5)" = _local_scalar_dense <= 5')
    T.truthy(tostring(ep):find("Range constraints: {u0: VR[0, 5]}", 1, true))
    for _, k in ipairs{0, 2, 5} do
      local got = fxdb.run(ep, {torch.tensor(k), y}).outputs[1]
      local want = m(torch.tensor(k), y)
      T.eq(tostring(got:size()), tostring(want:size()))
      if k > 0 then T.eq((got - want):abs():max():item(), 0) end
    end
  end
end)

T.test("torch._check(not cond) assumes the negation; several falses are ambiguous", function()
  local m = module(function(self, x)
    local a = x:item()
    torch._check(not (a < 0))
    return torch.zeros({a})
  end)
  local ep = torch.export.export(m, {torch.tensor(3)})
  T.truthy(tostring(ep):find("Range constraints: {u0: VR[0, int_oo]}", 1, true), tostring(ep))
  T.eq(#body(ep), 5)
  local m2 = module(function(self, x)
    local a = x:item()
    torch._check(not (a >= 0 and a <= 9))
    return torch.zeros({a})
  end)
  local e = catch(torch.export.export, m2, {torch.tensor(3)})
  T.eq(e.kind, "data_dependent")
  T.truthy(e.message:find("torch._check got False from several comparisons", 1, true), e.message)
  T.truthy(e.hint:find("one torch._check per condition", 1, true), e.hint)
  -- `or` short-circuits: Lua never evaluated `a > 9`, so false cannot be used
  local m3 = module(function(self, x)
    local a = x:item()
    torch._check(not (a < 0 or a > 9))
    return torch.zeros({a})
  end)
  e = catch(torch.export.export, m3, {torch.tensor(3)})
  T.truthy(e.message:find("torch._check got False from an `or` of comparisons", 1, true),
           e.message)
  -- true from `and` assumes both
  local m4 = module(function(self, x)
    local a = x:item()
    torch._check(a >= 0 and a <= 9)
    return torch.zeros({a})
  end)
  T.truthy(tostring(torch.export.export(m4, {torch.tensor(3)})):find(
    "Range constraints: {u0: VR[0, 9]}", 1, true))
end)

T.test("_constrain_as_value and _constrain_as_size", function()
  local m = module(function(self, x)
    local a = x:item()
    torch._constrain_as_value(a, {min = 1, max = 8})
    return torch.zeros({a})
  end)
  local ep = torch.export.export(m, {torch.tensor(3)})
  T.truthy(tostring(ep):find("Range constraints: {u0: VR[1, 8]}", 1, true), tostring(ep))
  T.eq(body(ep)[2], 'ge: "Sym(u0 >= 1)" = _local_scalar_dense >= 1')
  local m2 = module(function(self, x)
    local a = x:item()
    torch._constrain_as_size(a, {max = 8})
    return torch.zeros({a})
  end)
  ep = torch.export.export(m2, {torch.tensor(3)})
  T.truthy(tostring(ep):find("Range constraints: {u0: VR[0, 8]}", 1, true), tostring(ep))
  T.truthy(body(ep)[2]:find("^sym_constrain_range_for_size_default"), body(ep)[2])
  T.eq(fxdb.run(ep, {torch.tensor(8)}).outputs[1]:numel(), 8)
  local e = catch(fxdb.run, ep, {torch.tensor(9)})
  T.truthy(tostring(e):find("u0 <= 8", 1, true), tostring(e))
  -- plain integers are checked as PyTorch checks them
  T.checkerr("Invalid value range for 9 between [1, 8].", torch._constrain_as_value, 9,
             {min = 1, max = 8})
  T.checkerr("Max value to constrain_range_for_size must be greater than 2. got: 2",
             torch._constrain_as_size, 1, {max = 2})
  torch._constrain_as_size(5, {max = 8})
  -- a contradiction is refused
  local m3 = module(function(self, x)
    local a = x:item()
    torch._check(a <= 5)
    torch._constrain_as_value(a, {min = 7})
    return torch.zeros({1})
  end)
  e = catch(torch.export.export, m3, {torch.tensor(3)})
  T.truthy(tostring(e):find("is always False", 1, true), tostring(e))
end)

T.test("torch._check outside export, and its argument errors", function()
  torch._check(true)
  torch._check(1 < 2, "fine")
  local e = T.checkerr("Expected cond to be True, but got False.", torch._check, false)
  T.eq(e.kind, "check_failed")
  T.checkerr("x must be positive", torch._check, false, "x must be positive")
  T.checkerr("boolean expected, got number", torch._check, 1)
  torch._check_is_size(3)
  T.checkerr("Expected cond to be True", torch._check_is_size, -1)
end)

T.test("item() of a float or bool tensor while exporting stays a data-dependent error", function()
  local m = module(function(self, x) return torch.zeros({x:sum():item()}) end)
  local e = catch(torch.export.export, m, {torch.ones(2)})
  T.eq(e.kind, "data_dependent")
  T.truthy(e.message:find("Could not extract specialized integer from data-dependent expression",
                          1, true), e.message)
  -- outside export item() is the number
  T.eq(torch.tensor(7):item(), 7)
end)

T.test("two item() values and a check over both", function()
  local m = module(function(self, x, y)
    local a, b = x:item(), y:item()
    torch._check(a >= 0)
    torch._check(b >= 0)
    torch._check(a < b)
    return torch.zeros({a}), torch.zeros({b})
  end)
  local ep = torch.export.export(m, {torch.tensor(2), torch.tensor(4)})
  local text = tostring(ep)
  T.truthy(text:find('lt: "Sym(u0 < u1)" = _local_scalar_dense < _local_scalar_dense_1', 1, true),
           text)
  -- u0 < u1 with u0 >= 0 refines u1 to [1, int_oo] (ShapeEnv._refine_ranges), asserted at u1
  T.truthy(text:find("Range constraints: {u0: VR[0, int_oo], u1: VR[1, int_oo]}", 1, true), text)
  T.truthy(text:find('ge_1: "Sym(u1 >= 1)" = _local_scalar_dense_1 >= 1', 1, true), text)
  local got = fxdb.run(ep, {torch.tensor(1), torch.tensor(3)}).outputs
  T.eq(got[1]:numel(), 1)
  T.eq(got[2]:numel(), 3)
  local e = catch(fxdb.run, ep, {torch.tensor(3), torch.tensor(3)})
  T.truthy(tostring(e):find("Runtime assertion failed for expression u0 < u1 on node 'lt'", 1,
                            true), tostring(e))
end)

T.test("torch._check(u0 == s0) replaces u0 by s0 and still asserts the item() value", function()
  local Dim = torch.export.Dim
  local m = module(function(self, x, p)
    local u = p:item()
    torch._check(torch.sym_eq(u, x:size(0)))
    return torch.zeros(u, 2) + x:sum()
  end)
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(m, {torch.randn(4), torch.tensor(4)},
                                   {strict = strict, dynamic_shapes = {x = {[0] = Dim("n")}, p = nil}})
    local text = tostring(ep)
    -- the size uses s0 (the replacement); the assert reads the item() value itself, so the
    -- _local_scalar_dense stays (insert_deferred_runtime_asserts checks Eq(u0, s0) on the values)
    T.truthy(text:find('zeros: "f32[s0, 2]"', 1, true), text)
    T.truthy(text:find("eq: \"Sym([^\"]*)\" = _local_scalar_dense == sym_size_int"), text)
    T.truthy(text:find("Runtime assertion failed for expression Eq(u0, s0) on node 'eq'", 1, true),
             text)
    local x = torch.randn(5)
    T.eq(fxdb._max_abs_diff(ep:module()(x, torch.tensor(5)), m(x, torch.tensor(5))), 0)
    for _, run in ipairs({function() return fxdb.run(ep, {x, torch.tensor(3)}) end,
                          function() return ep:module()(x, torch.tensor(3)) end}) do
      local e = catch(run)
      T.truthy(tostring(e):find("Runtime assertion failed for expression Eq(u0, s0) on node 'eq'",
                                1, true), tostring(e))
    end
  end
end)

T.done()
