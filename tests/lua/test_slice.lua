-- tests/lua/test_slice.lua — slice(start, stop[, step]), Python's builtin, inside an index
-- (issue 9): construction and printing as Python's slice, reads and index assignment against the
-- string form and against hand-computed values, bounds that are SymInts (sizes of a dynamic
-- export, backed) and item() values (unbacked), nil bounds, a symbolic step, issue 9's table
-- form {a, b[, step]} (the same slice, in eager code too), and the errors. Expected graph lines are
-- torch 2.5's printout for the same programs (x[:, pos:pos + n] = v with pos = t.item()).
local T = dofile("tests/lua/harness.lua")
local Dim = torch.export.Dim

-- module(name, init, forward): the harness's T.module with the class name first
local function module(name, init, forward) return T.module(forward, init, name) end

local function same(a, b, what)
  T.eq(fxdb._type_str(b), fxdb._type_str(a), what)
  T.eq(fxdb._max_abs_diff(a, b), 0, what)
end

-- The forward's body lines of ep's printout (no comments, blank lines or `# File:` lines).
local function body(ep)
  local out, on = {}, false
  for l in (tostring(ep) .. "\n"):gmatch("(.-)\n") do
    l = l:match("^%s*(.-)%s*$")
    if l:find("^def forward") then
      on = true
    elseif on and l ~= "" and not l:find("^#") then
      out[#out + 1] = l
      if l:find("^return") then break end
    end
  end
  return out
end

local function same_lines(got, want)
  for i = 1, math.max(#got, #want) do
    T.eq(got[i], want[i], "line " .. i .. " of\n" .. table.concat(got, "\n"))
  end
end

T.test("slice() is Python's slice: arity, None bounds, fields, printing", function()
  T.eq(tostring(slice(3)), "slice(None, 3, None)")
  T.eq(tostring(slice(1, 3)), "slice(1, 3, None)")
  T.eq(tostring(slice(nil, nil, 2)), "slice(None, None, 2)")
  T.eq(tostring(slice(-2, nil)), "slice(-2, None, None)")
  T.eq(tostring(slice(nil)), "slice(None, None, None)")
  local s = slice(1, 5, 2)
  T.eq(s.start, 1)
  T.eq(s.stop, 5)
  T.eq(s.step, 2)
  T.eq(slice(4).start, nil)
  T.checkerr("slice expected at least 1 argument, got 0", slice)
  T.checkerr("slice expected at most 3 arguments, got 4", slice, 1, 2, 3, 4)
  T.checkerr("slice indices must be integers or None or have an __index__ method (got float)",
             slice, 1.5)
  T.checkerr("slice indices must be integers or None or have an __index__ method (got string)",
             slice, "1", 2)
  T.checkerr("(got Tensor)", slice, torch.tensor(1))
end)

T.test("reads and writes with slice() equal the string form, every combination", function()
  local base = torch.arange(60):view(3, 4, 5)
  local bounds = {nil, 0, 1, -1, -2, 2, 4, 7, -9}
  local nb = 9 -- bounds has holes: index by position
  local function str(v) return v == nil and "" or tostring(v) end
  local n = 0
  for i = 1, nb do
    for j = 1, nb do
      for _, step in ipairs({1, 2, 3}) do
        local a, b = bounds[i], bounds[j]
        local s = ("%s:%s:%d"):format(str(a), str(b), step)
        local want = base[{":", s}]
        same(want, base[{":", slice(a, b, step)}], "x[:, " .. s .. "]")
        same(base[{"...", s}], base[{"...", slice(a, b, step)}], "x[..., " .. s .. "]")
        local w1, w2 = base:clone(), base:clone()
        w1[{s, 1}] = -1
        w2[{slice(a, b, step), 1}] = -1
        same(w1, w2, "x[" .. s .. ", 1] = -1")
        n = n + 1
      end
    end
  end
  T.eq(n, 243)
  -- by hand
  local x = torch.arange(12):view(3, 4)
  T.eq(T.vals(x[{":", slice(1, 3)}]), T.vals(torch.tensor({{1, 2}, {5, 6}, {9, 10}})))
  T.eq(T.vals(x[{slice(2)}]), T.vals(torch.tensor({{0, 1, 2, 3}, {4, 5, 6, 7}})))
  T.eq(T.vals(x[{slice(nil, nil, 2), slice(-1, nil)}]), T.vals(torch.tensor({{3}, {11}})))
  x[{":", slice(0, 2)}] = torch.tensor({{-1, -2}})
  T.eq(T.vals(x), T.vals(torch.tensor({{-1, -2, 2, 3}, {-1, -2, 6, 7}, {-1, -2, 10, 11}})))
end)

T.test("a table {start, stop[, step]} inside an index is the same slice, in eager code too", function()
  local x = torch.arange(12):view(3, 4)
  T.eq(T.vals(x[{{0, 2}}]), T.vals(x[{"0:2"}]))
  T.eq(T.vals(x[{slice(0, 2), {0, 4, 3}}]), T.vals(x[{"0:2", "0:4:3"}]))
  local y = torch.zeros(3, 4)
  y[{":", {1, 3}}] = torch.ones(3, 2)
  T.eq(T.vals(y:sum(0)), T.vals(torch.tensor({0, 3, 3, 0})))
  -- a list index is a tensor; a table of another length says so
  T.eq(T.vals(x[{torch.tensor({0, 2})}]), T.vals(torch.tensor({{0, 1, 2, 3}, {8, 9, 10, 11}})))
  local ok, e = pcall(function() return x[{{0, 1, 2, 3}}] end)
  T.falsy(ok)
  T.eq(e.kind, "index")
  T.truthy(e.message:find("a table inside an index is the slice {start, stop[, step]} (2 or 3 " ..
                          "items, got 4)", 1, true), e.message)
end)

T.test("slice() errors at the user's line", function()
  local x = torch.arange(12):view(3, 4)
  local e = T.checkerr("slice step cannot be zero", function() return x[{slice(0, 2, 0)}] end)
  T.eq(e.kind, "index")
  T.checkerr("step must be greater than zero", function() return x[{slice(0, 2, -1)}] end)
  -- a slice whose fields were changed to something that is no bound
  local s = slice(0, 2)
  s.stop = 2.5
  T.checkerr("slice indices must be integers or None or have an __index__ method (got float)",
             function() return x[{s}] end)
  T.checkerr("too many indices for tensor of dimension 2",
             function() return x[{slice(1), slice(1), slice(1)}] end)
end)

-- ---- dynamic exports -------------------------------------------------------------------------

local BACKED = module("Backed", nil, function(self, x, y)
  local n = y:size(0)
  return x[{slice(1, n + 1)}], x[{":", slice(nil, nil, 2)}][{slice(n)}]
end)

T.test("backed SymInt bounds: slice.Tensor with the size nodes, numbers at several sizes", function()
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(BACKED, {torch.randn(10, 4), torch.randn(3)},
      {strict = strict, dynamic_shapes = {y = {[0] = Dim("n", {max = 8})}}})
    same_lines(body(ep), {
      'sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(y, 0);  y = None',
      'add: "Sym(s0 + 1)" = sym_size_int + 1',
      'slice_1: "f32[s0, 4]" = torch.ops.aten.slice.Tensor(x, 0, 1, add);  add = None',
      'slice_2: "f32[10, 2]" = torch.ops.aten.slice.Tensor(x, 1, 0, 9223372036854775807, 2);' ..
        '  x = None',
      'slice_3: "f32[s0, 2]" = torch.ops.aten.slice.Tensor(slice_2, 0, 0, sym_size_int);' ..
        '  slice_2 = sym_size_int = None',
      'return (slice_1, slice_3)'})
    T.eq(tostring(ep.range_constraints), "{s0: VR[0, 8]}")
    for _, k in ipairs({2, 5, 8}) do
      local x, y = torch.randn(10, 4), torch.randn(k)
      local w1, w2 = BACKED(x, y)
      local got = fxdb.run(ep, {x, y}).outputs
      same(w1, got[1], "first output at n = " .. k)
      same(w2, got[2], "second output at n = " .. k)
    end
  end
end)

T.test("a SymInt step is guarded positive; a nil stop slices to the end", function()
  local m = module("Step", nil, function(self, x, y)
    local n = y:size(0)
    return x[{slice(n, nil)}], x[{slice(0, nil, n)}]
  end)
  local ep = torch.export.export(m, {torch.randn(12), torch.randn(3)},
    {dynamic_shapes = {y = {[0] = Dim("n", {max = 6})}}})
  local text = tostring(ep)
  T.truthy(text:find('slice_1: "f32[12 - s0]" = torch.ops.aten.slice.Tensor(x, 0, ' ..
                     'sym_size_int, 9223372036854775807)', 1, true), text)
  T.truthy(text:find('"f32[((s0 + 11)//s0)]" = torch.ops.aten.slice.Tensor(x, 0, 0, ' ..
                     '9223372036854775807, sym_size_int)', 1, true), text)
  for _, k in ipairs({2, 3, 5, 6}) do
    local x, y = torch.randn(12), torch.randn(k)
    local w1, w2 = m(x, y)
    local got = fxdb.run(ep, {x, y}).outputs
    same(w1, got[1], "x[n:] at n = " .. k)
    same(w2, got[2], "x[::n] at n = " .. k)
  end
end)

-- ExecuTorch's cache update: pos = input_pos[0].item(), cache[:, pos:pos + n] = x.
local function cache_module()
  return module("Cache", function(self)
    self:register_buffer("cache", torch.zeros(1, 16, 2))
  end, function(self, x, input_pos)
    local pos = input_pos[0]:item()
    local n = x:size(1)
    torch._check_is_size(pos)
    torch._check(pos + n <= 16)
    self.cache[{":", slice(pos, pos + n)}] = x
    return self.cache[{":", slice(nil, pos + n)}]:sum(1)
  end)
end

T.test("unbacked bounds: an item() position writes a cache through slice()", function()
  for _, strict in ipairs({true, false}) do
    local m = cache_module()
    local ep = torch.export.export(m, {torch.randn(1, 3, 2), torch.tensor({2})},
      {strict = strict, dynamic_shapes = {{[1] = Dim("n", {max = 16})}, nil}})
    local text = tostring(ep)
    -- torch._check(pos + n <= 16) bounds pos by 16 (ShapeEnv._refine_ranges over the sizes the
    -- program accepts, n >= 0: not 14 from the traced n >= 2, which would refuse n = 1 at pos 15);
    -- the check over both symbols is asserted once both are bound (after the item()), and the
    -- slice and its write-back take the item() value and the size expression as SymInt arguments
    T.truthy(text:find("Range constraints: {s0: VR[0, 16], u0: VR[0, 16]}", 1, true), text)
    same_lines(body(ep), {
      'select: "i64[]" = torch.ops.aten.select.int(input_pos, 0, 0);  input_pos = None',
      '_local_scalar_dense: "Sym(u0)" = torch.ops.aten._local_scalar_dense.default(select); ' ..
        ' select = None',
      'sym_constrain_range_for_size_default =' ..
        ' torch.ops.aten.sym_constrain_range_for_size.default(_local_scalar_dense); ' ..
        ' sym_constrain_range_for_size_default = None',
      'ge: "Sym(u0 >= 0)" = _local_scalar_dense >= 0',
      '_assert_scalar_default = torch.ops.aten._assert_scalar.default(ge, "Runtime assertion' ..
        ' failed for expression u0 >= 0 on node \'ge\'");  ge = _assert_scalar_default = None',
      'le: "Sym(u0 <= 16)" = _local_scalar_dense <= 16',
      '_assert_scalar_default_1 = torch.ops.aten._assert_scalar.default(le, "Runtime assertion' ..
        ' failed for expression u0 <= 16 on node \'le\'");  le = _assert_scalar_default_1 = None',
      'sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 1)',
      'add: "Sym(s0 + u0)" = sym_size_int + _local_scalar_dense;  sym_size_int = None',
      'le_1: "Sym(s0 + u0 <= 16)" = add <= 16;  add = None',
      '_assert_scalar_default_2 = torch.ops.aten._assert_scalar.default(le_1, "Runtime' ..
        ' assertion failed for expression s0 + u0 <= 16 on node \'le_1\'");  le_1 =' ..
        ' _assert_scalar_default_2 = None',
      'sym_size_int_1: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 1)',
      'add_1: "Sym(s0 + u0)" = _local_scalar_dense + sym_size_int_1;  sym_size_int_1 = None',
      'slice_1: "f32[1, s0, 2]" = torch.ops.aten.slice.Tensor(b_cache, 1, _local_scalar_dense,' ..
        ' add_1)',
      'copy: "f32[1, s0, 2]" = torch.ops.aten.copy.default(slice_1, x);  slice_1 = x = None',
      'slice_scatter: "f32[1, 16, 2]" = torch.ops.aten.slice_scatter.default(b_cache, copy, 1,' ..
        ' _local_scalar_dense, add_1);  b_cache = copy = _local_scalar_dense = None',
      'slice_2: "f32[1, s0 + u0, 2]" = torch.ops.aten.slice.Tensor(slice_scatter, 1, 0,' ..
        ' add_1);  add_1 = None',
      'sum_1: "f32[1, 2]" = torch.ops.aten.sum.dim_IntList(slice_2, [1]);  slice_2 = None',
      'return (slice_scatter, sum_1)'})
    T.truthy(text:find("slice_scatter: BUFFER_MUTATION target='cache'", 1, true), text)
    -- a decode loop: the unlifted module against eager, position by position
    local eager, gm = cache_module(), ep:module()
    local pos = 0
    for _, n in ipairs({4, 2, 1, 3, 5, 1}) do   -- the last one at position 15
      local x = torch.randn(1, n, 2)
      local want = eager(x, torch.tensor({pos}))
      local got = gm(x, torch.tensor({pos}))
      same(want, got, "output at pos " .. pos .. ", n = " .. n)
      same(eager.cache, gm.cache, "cache at pos " .. pos)
      pos = pos + n
    end
    -- past the end: the check's runtime assert stops the call before any op
    local ok, e = pcall(gm, torch.randn(1, 3, 2), torch.tensor({14}))
    T.falsy(ok)
    T.truthy(tostring(e):find("Runtime assertion failed for expression s0 + u0 <= 16 on node " ..
                              "'le_1'", 1, true), tostring(e))
    ok, e = pcall(fxdb.run, ep, {torch.randn(1, 1, 2), torch.tensor({17})})
    T.falsy(ok)
    T.truthy(tostring(e):find("Runtime assertion failed for expression u0 <= 16 on node 'le'", 1,
                              true), tostring(e))
    -- fxdb.run returns the new cache instead of writing it
    local r = fxdb.run(ep, {torch.ones(1, 2, 2), torch.tensor({3})})
    T.eq(T.vals(r.outputs[1]), T.vals(torch.full({1, 2}, 2.0)))
    T.eq(r.mutations.cache:sum():item(), 4.0)
  end
end)

T.test("unbacked bounds without the checks: the data-dependent error at the slice's line", function()
  local m = module("NoCheck", nil, function(self, x, p)
    local pos = p:item()
    return x[{slice(pos, nil)}]
  end)
  local ok, e = pcall(torch.export.export, m, {torch.randn(8), torch.tensor(2)})
  T.falsy(ok)
  T.eq(e.kind, "data_dependent")
  T.truthy(e.message:find("Could not guard on data-dependent expression u0 < 0", 1, true),
           e.message)
  T.truthy(e.location:find("test_slice.lua", 1, true), e.location)
  T.truthy(e.source:find("slice(pos, nil)", 1, true), e.source)
end)

T.test("issue 9's table form {a, b[, step]} with SymInt bounds is the program slice() gives", function()
  -- backed: a size bound prints as slice() prints it
  local m = module("Old", nil, function(self, x, y)
    local n = y:size(0)
    return x[{{1, n + 1}}]
  end)
  local ep = torch.export.export(m, {torch.randn(10, 2), torch.randn(3)},
                                 {dynamic_shapes = {y = {[0] = Dim("n", {max = 8})}}})
  T.truthy(tostring(ep):find('slice_1: "f32[s0, 2]" = torch.ops.aten.slice.Tensor(x, 0, 1, add)',
                             1, true), tostring(ep))
  for _, n in ipairs({1, 4, 8}) do
    local x = torch.randn(10, 2)
    same(x[{"1:" .. (n + 1)}], ep:module()(x, torch.randn(n)), "n = " .. n)
  end
  -- unbacked, with a step, in reads and index assignment: the same program as slice() gives
  local function cache(form)
    return module("Cache" .. form, function(self) self:register_buffer("cache", torch.zeros(1, 16, 2)) end,
      function(self, x, input_pos)
        local pos = input_pos[0]:item()
        torch._check_is_size(pos)
        torch._check(pos + x:size(1) <= 16)
        local n = x:size(1)
        if form == "table" then
          self.cache[{":", {pos, pos + n}}] = x
          return self.cache[{":", {0, pos + n, 1}}]:sum(1)
        end
        self.cache[{":", slice(pos, pos + n)}] = x
        return self.cache[{":", slice(0, pos + n, 1)}]:sum(1)
      end)
  end
  for _, strict in ipairs({true, false}) do
    local o = {strict = strict, dynamic_shapes = {{[1] = Dim("n", {max = 16})}, nil}}
    local args = {torch.randn(1, 3, 2), torch.tensor({2})}
    local ep_t = torch.export.export(cache("table"), args, o)
    local ep_s = torch.export.export(cache("slice"), args, o)
    T.eq(table.concat(body(ep_t), "\n"), table.concat(body(ep_s), "\n"))
    local eager, gm, pos = cache("table"), ep_t:module(), 0
    for _, n in ipairs({3, 1, 5}) do
      local x = torch.randn(1, n, 2)
      same(eager(x, torch.tensor({pos})), gm(x, torch.tensor({pos})), "pos " .. pos)
      same(eager.cache, gm.cache, "cache at pos " .. pos)
      pos = pos + n
    end
  end
  -- a table of another length is no slice and says so at the user's line
  local bad = module("Bad", nil, function(self, x, y)
    local n = y:size(0)
    return x[{{0, 1, 2, n}}]
  end)
  local ok, e = pcall(torch.export.export, bad, {torch.randn(10, 2), torch.randn(3)},
                      {dynamic_shapes = {y = {[0] = Dim("n", {max = 8})}}})
  T.falsy(ok)
  T.eq(e.kind, "index")
  T.truthy(e.message:find("a table inside an index is the slice {start, stop[, step]} (2 or 3 " ..
                          "items, got 4)", 1, true), e.message)
  T.truthy(e.source:find("x[{{0, 1, 2, n}}]", 1, true), e.source)
end)

T.test("a SymInt formatted into a string slice names slice()", function()
  local m = module("Fmt", nil, function(self, x, y)
    return x[{(":%s"):format(y:size(0))}]
  end)
  local ok, e = pcall(torch.export.export, m, {torch.randn(10), torch.randn(3)},
                      {dynamic_shapes = {y = {[0] = Dim("n")}}})
  T.falsy(ok)
  T.truthy(e.message:find('malformed slice ":s0" (a string slice holds plain integers; write a ' ..
                          'bound that is a SymInt as slice(start, stop[, step]))', 1, true),
           e.message)
end)

T.done()
