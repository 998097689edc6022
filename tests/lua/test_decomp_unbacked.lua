-- tests/lua/test_decomp_unbacked.lua — ep:run_decompositions() of programs with unbacked sizes:
-- item() (_local_scalar_dense, u0), torch._check / _check_is_size ranges, torch._check over a
-- backed and an unbacked symbol, SymInt arithmetic, repeat_interleave with a counts tensor and no
-- output_size. As torch 2.5's run_decompositions (a retrace in the program's own ShapeEnv, whose
-- rebind_unbacked keeps the program's u<N>), the decomposed program keeps the unbacked symbols,
-- their range constraints and the runtime asserts over them, for the default table and for {},
-- from the functional and the training IR; it runs as eager does and still raises on a value its
-- asserts refuse.
local T = dofile("tests/lua/harness.lua")

local body = T.forward_body

local function same_lines(got, want, what)
  for i = 1, math.max(#got, #want) do
    T.eq(got[i], want[i], what .. ": line " .. i .. " of\n" .. table.concat(got, "\n"))
  end
end

local function range_line(ep)
  return tostring(ep):match("Range constraints: [^\n]*")
end

local function assert_line(node, expr, k)
  local name = "_assert_scalar_default" .. (k > 0 and ("_" .. k) or "")
  return string.format('%s = torch.ops.aten._assert_scalar.default(%s, "Runtime assertion failed ' ..
                       'for expression %s on node \'%s\'");  %s = %s = None', name, node, expr, node,
                       node, name)
end

local MODES = {{strict = true}, {strict = false}, {strict = false, ir = "training"}}
local function mode_name(m) return (m.ir or "functional") .. (m.strict and " strict" or " non-strict") end

-- ---- item() with a torch._check range ----------------------------------------------------------

local CONSTRAIN = T.module(function(self, x)
  local a = x:item()
  torch._check(a >= 0)
  torch._check(a <= 5)
  return torch.zeros({a, 5})
end)

local CONSTRAIN_HEAD = {
  '_local_scalar_dense: "Sym(u0)" = torch.ops.aten._local_scalar_dense.default(x);  x = None',
  'ge: "Sym(u0 >= 0)" = _local_scalar_dense >= 0',
  assert_line("ge", "u0 >= 0", 0),
  'le: "Sym(u0 <= 5)" = _local_scalar_dense <= 5',
  assert_line("le", "u0 <= 5", 1),
}

T.test("item(): u0, its range and asserts kept by the default table and by {}", function()
  for _, mode in ipairs(MODES) do
    local what = mode_name(mode)
    local ep = torch.export.export(CONSTRAIN, {torch.tensor(4)}, mode)
    local cases = {
      {ep:run_decompositions(), -- zeros is full in core ATen
       'full: "f32[u0, 5]" = torch.ops.aten.full.default([_local_scalar_dense, 5], 0, dtype = ' ..
         'torch.float32, layout = torch.strided, device = device(type=\'cpu\'), pin_memory = ' ..
         'False);  _local_scalar_dense = None', 'return (full,)'},
      {ep:run_decompositions({}),
       'zeros: "f32[u0, 5]" = torch.ops.aten.zeros.default([_local_scalar_dense, 5], device = ' ..
         'device(type=\'cpu\'), pin_memory = False);  _local_scalar_dense = None', 'return (zeros,)'},
    }
    for i, c in ipairs(cases) do
      local d = c[1]
      local want = table.move(CONSTRAIN_HEAD, 1, #CONSTRAIN_HEAD, 1, {})
      want[#want + 1], want[#want + 2] = c[2], c[3]
      same_lines(body(d), want, what .. " table " .. i)
      T.eq(range_line(d), "Range constraints: {u0: VR[0, 5]}", what)
      T.eq(d.range_constraints.u0.lower, 0)
      T.eq(d.range_constraints.u0.upper, 5)
      local gm = d:module()
      for _, k in ipairs{0, 1, 3, 5} do
        local want_t = CONSTRAIN(torch.tensor(k))
        local got = fxdb.run(d, {torch.tensor(k)}).outputs[1]
        T.eq(tostring(got:size()), tostring(want_t:size()), what .. " fxdb.run at " .. k)
        T.eqlist(got, want_t:tolist())
        T.eq(tostring(gm(torch.tensor(k)):size()), tostring(want_t:size()), what .. " module at " .. k)
      end
      T.checkerr("Runtime assertion failed for expression u0 <= 5 on node 'le'",
                 function() return gm(torch.tensor(6)) end)
      T.checkerr("Runtime assertion failed for expression u0 >= 0 on node 'ge'",
                 function() return fxdb.run(d, {torch.tensor(-1)}) end)
    end
    -- the program itself is unchanged and still runs
    same_lines(body(ep), {CONSTRAIN_HEAD[1], CONSTRAIN_HEAD[2], CONSTRAIN_HEAD[3], CONSTRAIN_HEAD[4],
                          CONSTRAIN_HEAD[5], cases[2][2], cases[2][3]}, what .. " original")
    T.eq(range_line(ep), "Range constraints: {u0: VR[0, 5]}")
    T.eq(tostring(fxdb.run(ep, {torch.tensor(2)}).outputs[1]:size()), "torch.Size([2, 5])")
  end
end)

-- ---- size-like u0, a torch._check over s0 and u0, SymInt arithmetic, a decomposed op -------------

local MIXED = T.module(function(self, x, p)
  local u = p:item()
  torch._check_is_size(u)
  torch._check(u + x.shape[1] <= 16)
  local y = torch.nn.functional.linear(x, torch.ones(3, 3))
  return y:narrow(0, 0, 1) + (u + 1), torch.zeros({u * 2})
end)

T.test("size-like u0, a check over s0 + u0 and SymInt arithmetic survive the decompositions", function()
  local Dim = torch.export.Dim
  for _, mode in ipairs(MODES) do
    local what = mode_name(mode)
    local opts = {strict = mode.strict, ir = mode.ir,
                  dynamic_shapes = {x = {[0] = Dim("n", {max = 10})}, p = nil}}
    local ep = torch.export.export(MIXED, {torch.randn(4, 3), torch.tensor(2)}, opts)
    local d = ep:run_decompositions()
    local got = body(d)
    -- the asserts as the program has them: range of u0 after its item(), then s0 + u0 <= 16
    same_lines({table.unpack(got, 1, 6)}, {
      '_local_scalar_dense: "Sym(u0)" = torch.ops.aten._local_scalar_dense.default(p);  p = None',
      'sym_constrain_range_for_size_default = torch.ops.aten.sym_constrain_range_for_size.default(' ..
        '_local_scalar_dense);  sym_constrain_range_for_size_default = None',
      'ge: "Sym(u0 >= 0)" = _local_scalar_dense >= 0',
      assert_line("ge", "u0 >= 0", 0),
      'le: "Sym(u0 <= 16)" = _local_scalar_dense <= 16',
      assert_line("le", "u0 <= 16", 1)}, what)
    T.truthy(T.has_line(tostring(d), assert_line("le_1", "s0 + u0 <= 16", 2)), tostring(d))
    T.eq(range_line(d), range_line(ep), what)
    T.eq(range_line(d), "Range constraints: {s0: VR[0, 10], u0: VR[0, 16]}", what)
    -- linear is lowered (permute + mm), the SymInt arithmetic recorded again
    local targets = T.targets(d)
    T.truthy(targets:find("aten.permute.default aten.mm.default", 1, true), targets)
    T.falsy(targets:find("aten.linear.default", 1, true), targets)
    T.truthy(T.has_line(tostring(d), 'mul: "Sym(2*u0)" = _local_scalar_dense * 2;  ' ..
                                     '_local_scalar_dense = None'), tostring(d))
    for _, c in ipairs{{5, 0}, {5, 3}, {2, 14}, {10, 6}, {1, 0}} do
      local x, p = torch.randn(c[1], 3), torch.tensor(c[2])
      local a, b = MIXED(x, p)
      local r = fxdb.run(d, {x, p}).outputs
      T.eqlist(r[1], a:tolist(), 1e-5)
      T.eq(tostring(r[2]:size()), tostring(b:size()), what .. " output 2 at " .. c[2])
      T.eqlist(r[2], b:tolist())
      local ra, rb = d:module()(x, p)
      T.eqlist(ra, a:tolist(), 1e-5)
      T.eqlist(rb, b:tolist())
    end
    T.checkerr("Runtime assertion failed for expression s0 + u0 <= 16 on node 'le_1'",
               function() return fxdb.run(d, {torch.randn(5, 3), torch.tensor(12)}) end)
    -- sym_constrain_range_for_size runs before the ge assert
    T.checkerr("Invalid value range for -2 between [0, ",
               function() return d:module()(torch.randn(5, 3), torch.tensor(-2)) end)
  end
end)

-- ---- repeat_interleave with a counts tensor and no output_size ----------------------------------

local REPEAT = T.module(function(self, x, c)
  local n = (x + 0):sum():item() -- u0 first, so the op's length is u1
  torch._check(n >= 1)
  torch._check(n <= 9)
  return x:repeat_interleave(c), torch.ones(n)
end)

T.test("repeat_interleave(counts): its unbacked length stays u1 with its asserts", function()
  for _, mode in ipairs(MODES) do
    local what = mode_name(mode)
    local ep = torch.export.export(REPEAT, {torch.tensor{1, 2}, torch.tensor{2, 1}}, mode)
    for i, d in ipairs{ep:run_decompositions(), ep:run_decompositions({}),
                       ep:run_decompositions():run_decompositions({})} do
      local text = tostring(d)
      T.eq(range_line(d), "Range constraints: {u0: VR[1, 9], u1: VR[0, int_oo]}", what .. " " .. i)
      for _, l in ipairs{
        'repeat_interleave: "i64[u1]" = torch.ops.aten.repeat_interleave.Tensor(c);  c = None',
        'sym_size_int: "Sym(u1)" = torch.ops.aten.sym_size.int(repeat_interleave, 0)',
        'sym_constrain_range_for_size_default = torch.ops.aten.sym_constrain_range_for_size.default(' ..
          'sym_size_int);  sym_constrain_range_for_size_default = None',
        'ge_1: "Sym(u1 >= 0)" = sym_size_int >= 0;  sym_size_int = None',
        assert_line("ge_1", "u1 >= 0", 2),
        'index_select: "i64[u1]" = torch.ops.aten.index_select.default(x, 0, repeat_interleave);  ' ..
          'x = repeat_interleave = None'} do
        T.truthy(T.has_line(text, l), what .. " " .. i .. ": " .. l .. " in\n" .. text)
      end
      for _, c in ipairs{{{1, 2}, {0, 0}}, {{4, 5}, {3, 1}}, {{3, 0}, {0, 7}}} do
        local x, cnt = torch.tensor(c[1]), torch.tensor(c[2])
        local a, b = REPEAT(x, cnt)
        local r = fxdb.run(d, {x, cnt}).outputs
        T.eqlist(r[1], a:tolist())
        T.eq(tostring(r[2]:size()), tostring(b:size()))
      end
      T.checkerr("Runtime assertion failed for expression u0 <= 9 on node 'le'",
                 function() return d:module()(torch.tensor{5, 5}, torch.tensor{1, 1}) end)
    end
    -- the replay made no new symbols in the program's environment
    T.eq(range_line(ep), "Range constraints: {u0: VR[1, 9], u1: VR[0, int_oo]}")
  end
end)

-- ---- u0 that torch._check(u0 == s0) replaced: no new symbol -------------------------------------

local REPLACED = T.module(function(self, x, p)
  local u = p:item()
  torch._check(u == x.shape[1])
  return x * u
end)

T.test("an item() replaced by a backed size binds u0 again, not a new u1", function()
  local ep = torch.export.export(REPLACED, {torch.randn(4), torch.tensor(4)},
                                 {dynamic_shapes = {x = {[0] = torch.export.Dim("n")}}})
  for _, d in ipairs{ep:run_decompositions(), ep:run_decompositions({})} do
    T.eq(range_line(d), range_line(ep))
    T.eq(range_line(d), "Range constraints: {s0: VR[0, int_oo]}")
    T.eq(T.targets(d), T.targets(ep))
    for _, k in ipairs{2, 5} do
      T.eqlist(fxdb.run(d, {torch.ones(k), torch.tensor(k)}).outputs[1],
               REPLACED(torch.ones(k), torch.tensor(k)):tolist())
    end
  end
end)

-- ---- a SymBool over u0 as torch.cond's predicate -------------------------------------------------

local BRANCH = T.module(function(self, x, p)
  local u = p:item()
  local b = u > 2
  return torch.cond(b, function(y) return y + 1 end, function(y) return y - 1 end, {x})
end)

T.test("a SymBool over u0 feeding torch.cond is replayed", function()
  for _, mode in ipairs(MODES) do
    local what = mode_name(mode)
    local ep = torch.export.export(BRANCH, {torch.randn(3), torch.tensor(4)}, mode)
    for i, d in ipairs{ep:run_decompositions(), ep:run_decompositions({})} do
      same_lines(body(d), {
        '_local_scalar_dense: "Sym(u0)" = torch.ops.aten._local_scalar_dense.default(p);  p = None',
        'gt: "Sym(u0 > 2)" = _local_scalar_dense > 2;  _local_scalar_dense = None',
        'true_graph_0 = self.true_graph_0',
        'false_graph_0 = self.false_graph_0',
        'cond = torch.ops.higher_order.cond(gt, true_graph_0, false_graph_0, [x]);  gt = ' ..
          'true_graph_0 = false_graph_0 = x = None',
        'getitem: "f32[3]" = cond[0];  cond = None',
        'return (getitem,)'}, what .. " " .. i)
      T.eq(range_line(d), "Range constraints: {u0: VR[-int_oo, int_oo]}")
      for _, k in ipairs{-3, 2, 3, 7} do
        local x = torch.randn(3)
        T.eqlist(fxdb.run(d, {x, torch.tensor(k)}).outputs[1], BRANCH(x, torch.tensor(k)):tolist())
      end
    end
  end
end)

T.done()
