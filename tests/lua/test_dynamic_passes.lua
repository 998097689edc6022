-- tests/lua/test_dynamic_passes.lua — symbolic graphs through every pass (issue 9): a program
-- exported with a Dim goes through functionalization (mutations of dynamic inputs and of buffers,
-- writes through views whose inverse needs the dynamic sizes), unlift (ep:module()), reinplace,
-- the training IR, run_decompositions, the higher-order ops (cond / map / scan with dynamic
-- operands), :report, provenance and rendering; each result runs at several sizes inside the
-- Dim's range and is compared with the eager module bit for bit (outputs, mutated buffers and
-- inputs).
local T = dofile("tests/lua/harness.lua")
local Dim = torch.export.Dim

local function module(name, init, forward) return T.module(forward, init, name) end

local function same(a, b, what)
  T.truthy(torch.is_tensor(a) and torch.is_tensor(b), what)
  T.eq(fxdb._type_str(b), fxdb._type_str(a), what)
  T.eq(fxdb._max_abs_diff(a, b), 0, what)
end

-- fresh inputs for size n: make(n) returns a list of tensors
local function clone_all(xs)
  local out = {}
  for i, x in ipairs(xs) do out[i] = x:clone() end
  return out
end

-- Runs `run(inputs)` (a function returning its outputs as a list, mutating its inputs and its
-- own state as the program does) against the eager module on copies of the same inputs; compares
-- outputs, inputs afterwards, and the module state `state()` of each side.
local function against_eager(m, make, sizes, run, label)
  for _, n in ipairs(sizes) do
    local xs = make(n)
    local ex = clone_all(xs)
    local snap = {}
    for _, s in ipairs(m:_named_state()) do snap[s.path] = s.tensor:clone() end
    local eager = table.pack(m(table.unpack(ex)))
    local got = run(xs)
    local what = label .. " at size " .. n
    for i = 1, eager.n do same(eager[i], got[i], what .. ", output " .. i) end
    for i = 1, #xs do same(ex[i], xs[i], what .. ", input " .. i) end
    -- the module's state back as it was, for the next size
    torch.no_grad(function()
      for _, s in ipairs(m:_named_state()) do s.tensor:copy_(snap[s.path]) end
    end)
  end
end

-- A cache written through a dynamic narrow, a counter, an input mutated in place, a write through
-- a view of the input whose inverse view needs the symbolic size.
local function mutating()
  return module("Mut", function(self)
    self:register_buffer("cache", torch.zeros(16, 4))
    self:register_buffer("count", torch.zeros(4))
  end, function(self, x, y)
    local n = x:size(0)
    self.cache:narrow(0, 0, n):copy_(x)
    self.count:add_(x:sum(0))
    y:mul_(2)
    local v = y:view(-1)
    v:add_(1)
    y:transpose(0, 1)[{0}]:sub_(3)
    return (x + y):relu():view(n, 2, 2), self.cache:sum(0)
  end)
end
local function make2(n) return {torch.randn(n, 4), torch.randn(n, 4)} end
local batch = Dim("batch", {min = 2, max = 16})
local spec2 = {x = {[0] = batch}, y = {[0] = batch}}
local SIZES = {2, 3, 7, 16}

T.test("functionalization of a dynamic program: the printed graph", function()
  local ep = torch.export.export(mutating(), make2(5), {dynamic_shapes = spec2})
  local text = tostring(ep)
  -- the write-back through the narrowed cache slices with the size node, not the example's 5
  T.truthy(text:find("torch.ops.aten.slice_scatter.default(b_cache, copy, 0, 0, sym_size_int)",
    1, true), text)
  -- the inverse of y:view(-1) views back to y's symbolic size
  T.truthy(text:find("torch.ops.aten.view.default(add_1, [sym_size_int", 1, true), text)
  T.truthy(text:find("Range constraints: {s0: VR[2, 16]}", 1, true), text)
  T.truthy(not text:find("%[5, 4%]"), "no size of the example is baked in:\n" .. text)
end)

T.test("the exported program and ep:module() at several sizes, against eager", function()
  local m = mutating()
  local ep = torch.export.export(m, make2(5), {dynamic_shapes = spec2})
  against_eager(m, make2, SIZES, function(xs)
    local r = fxdb.run(ep, xs)
    -- fxdb.run returns mutations instead of applying them
    xs[2]:copy_(r.mutations.y)
    return r.outputs
  end, "fxdb.run")
  local mm = ep:module()
  against_eager(m, make2, SIZES, function(xs) return table.pack(mm(table.unpack(xs))) end,
    "ep:module()")
  -- a fresh unlifted module starts from the exported state and follows its calls as eager does
  local m1 = mutating()
  local m2 = torch.export.export(m1, make2(5), {dynamic_shapes = spec2}):module()
  for _, n in ipairs({3, 6}) do
    local a = make2(n)
    local b = clone_all(a)
    m1(table.unpack(a))
    m2(table.unpack(b))
    same(m1.cache, m2.cache, "cache after a call at size " .. n)
    same(m1.count, m2.count, "count after a call at size " .. n)
  end
end)

T.test("writes through split / chunk pieces of a dynamic dim scatter back symbolically", function()
  local function make_m()
    return module("Pieces", function(self)
      self:register_buffer("buf", torch.zeros(8, 3))
    end, function(self, x)
      local a, b = table.unpack(x:chunk(2, 0))   -- split.Tensor(x, (s0 + 1)//2)
      a:add_(1)
      b:mul_(3)                                    -- the last piece: up to the size of dim 0
      local n = x:size(0)
      local parts = self.buf:narrow(0, 0, n):split({n - 2, 2}, 0)
      parts[1]:add_(2)
      parts[2]:mul_(2)
      local _, d = table.unpack(x:split({2, n - 2}, 0))
      d:sub_(1)
      return x + 1
    end)
  end
  local function make1(n) return {torch.randn(n, 3)} end
  local spec1 = {x = {[0] = Dim("n", {min = 4, max = 8})}}
  for _, strict in ipairs({true, false}) do
    local m = make_m()
    local ep = torch.export.export(m, make1(6), {strict = strict, dynamic_shapes = spec1})
    local text = tostring(ep)
    for _, want in ipairs({
      "slice_scatter.default(x, add_1, 0, 0, floordiv)",
      "slice_scatter.default(slice_scatter, mul, 0, floordiv, sym_size_int_1)",
      "slice_scatter.default(slice_1, add_2, 0, 0, sub)",
      "slice_scatter.default(slice_2, mul_1, 0, sub, sym_size_int_2)",
      "slice_scatter.default(slice_scatter_1, sub_1, 0, 2, sym_size_int_3)"}) do
      T.truthy(text:find(want, 1, true), want .. " in\n" .. text)
    end
    T.truthy(text:find("Range constraints: {s0: VR[4, 8]}", 1, true), text)
    local mm = ep:module()
    against_eager(m, make1, {4, 5, 6, 7, 8}, function(xs) return table.pack(mm(table.unpack(xs))) end,
      "ep:module() (strict = " .. tostring(strict) .. ")")
    -- the unlifted module's buffer follows eager's over a sequence of calls
    local m1, m2 = make_m(), torch.export.export(make_m(), make1(6),
                                                 {strict = strict, dynamic_shapes = spec1}):module()
    for _, n in ipairs({5, 8, 4}) do
      local x = torch.randn(n, 3)
      m1(x:clone())
      m2(x:clone())
      same(m1.buf, m2.buf, "buf after a call at size " .. n)
    end
  end
end)

T.test("reinplace, training IR and run_decompositions keep the program symbolic", function()
  local m = mutating()
  local ep = torch.export.export(m, make2(5), {dynamic_shapes = spec2})
  local ri = fxdb.reinplace(ep)
  T.truthy(tostring(ri):find('x: "f32[s0, 4]"', 1, true), tostring(ri))
  against_eager(m, make2, SIZES, function(xs) return table.pack(ri(table.unpack(xs))) end,
    "reinplace")
  local tr = torch.export.export(m, make2(5), {dynamic_shapes = spec2, ir = "training"})
  T.truthy(tostring(tr):find("aten.copy_.default", 1, true), tostring(tr))
  local tm = tr:module()
  against_eager(m, make2, SIZES, function(xs) return table.pack(tm(table.unpack(xs))) end,
    "training IR")
  local dec = ep:run_decompositions()
  T.truthy(tostring(dec):find("Range constraints: {s0: VR[2, 16]}", 1, true), tostring(dec))
  -- transpose was lowered (to permute) on symbolic sizes
  T.truthy(tostring(dec):find('permute: "f32[4, s0]"', 1, true), tostring(dec))
  T.falsy(tostring(dec):find("aten.transpose", 1, true), tostring(dec))
  local dm = dec:module()
  -- the decomposed program checks its inputs as the original does
  T.checkerr("Expected input at", function() dm(torch.randn(17, 4), torch.randn(17, 4)) end)
  against_eager(m, make2, SIZES, function(xs) return table.pack(dm(table.unpack(xs))) end,
    "run_decompositions")
end)

T.test("provenance, report and rendering of a dynamic program", function()
  local m = mutating()
  local ep = torch.export.export(m, make2(5), {dynamic_shapes = spec2})
  local pv = fxdb.provenance(ep, "cache")
  T.eq(#pv, 2)
  T.eq(pv[2].from_op, "aten.copy_.default")
  T.truthy(pv[2].view_path:find("slice(0, 0, s0", 1, true) or
           pv[2].view_path:find("sym_size_int", 1, true), pv[2].view_path)
  local rep = fxdb.report(m, make2(5), {dynamic_shapes = spec2})
  T.truthy(tostring(rep):find("0 problems", 1, true), tostring(rep))
  -- a spec the program contradicts is reported with its fixes
  local bad = fxdb.report(m, make2(5), {dynamic_shapes = {x = {[0] = Dim("a")}, y = {[0] = Dim("b")}}})
  T.truthy(tostring(bad):find("constraint_violation", 1, true), tostring(bad))
  local dot = os.tmpname() .. ".dot"
  fxdb.render(ep, dot, {progress = false})
  local fh = io.open(dot)
  local text = fh:read("a")
  fh:close()
  os.remove(dot)
  T.truthy(text:find("s0, 4", 1, true), "the rendering shows symbolic shapes")
end)

T.test("cond, map and scan with dynamic operands: symbolic bodies and outputs", function()
  local c = module("C", function(self) self:register_buffer("hits", torch.zeros(1)) end,
    function(self, x)
      local r = torch.cond(x:sum():gt(0), function(a) return a:sin() end,
                           function(a) return a:cos() end, {x})
      self.hits:add_(1)
      return r + x
    end)
  local ep = torch.export.export(c, {torch.randn(5, 4)}, {dynamic_shapes = {x = {[0] = Dim("b")}}})
  local text = tostring(ep)
  T.truthy(text:find('getitem: "f32[s0, 4]"', 1, true), text)
  T.truthy(text:find('def forward(self, x: "f32[s0, 4]"):', 1, true), text) -- the bodies too
  local cm = ep:module()
  against_eager(c, function(n) return {torch.randn(n, 4)} end, {2, 3, 9},
    function(xs) return table.pack(cm(table.unpack(xs))) end, "cond")

  local mp = module("Mp", nil, function(self, xs, y)
    return torch.map(function(x, yy) return x * yy end, xs, y) + 1
  end)
  local m_ = Dim("m")
  ep = torch.export.export(mp, {torch.randn(3, 5), torch.randn(5)},
    {dynamic_shapes = {xs = {[0] = Dim("n"), [1] = m_}, y = {[0] = m_}}})
  T.truthy(tostring(ep):find('getitem: "f32[s0, s1]"', 1, true), tostring(ep))
  local mpm = ep:module()
  against_eager(mp, function(n) return {torch.randn(n, n + 2), torch.randn(n + 2)} end, {2, 4, 7},
    function(xs) return table.pack(mpm(table.unpack(xs))) end, "map")

  local sc = module("Sc", nil, function(self, init, xs)
    local carry, ys = torch._higher_order_ops.scan(function(cc, x)
      local nc = cc + x
      return nc, nc * 2
    end, init, xs)
    return carry, ys + xs
  end)
  local d = Dim("d")
  ep = torch.export.export(sc, {torch.randn(4), torch.randn(6, 4)},
    {dynamic_shapes = {init = {[0] = d}, xs = {[0] = Dim("t"), [1] = d}}})
  T.truthy(tostring(ep):find('getitem_1: "f32[s1, s0]"', 1, true), tostring(ep))
  local scm = ep:module()
  against_eager(sc, function(n) return {torch.randn(n + 1), torch.randn(n, n + 1)} end, {2, 5},
    function(xs) return table.pack(scm(table.unpack(xs))) end, "scan")
end)

T.test("guards the ranges cannot express are checked when the program runs", function()
  local auto = Dim.AUTO
  -- a reshape to literal sizes: Eq(s0*s1, 16), checked at the input boundary
  local m = module("R", nil, function(self, x) return x:reshape(2, 8) end)
  local ep = torch.export.export(m, {torch.randn(4, 4)}, {dynamic_shapes = {{[0] = auto, [1] = auto}}})
  T.truthy(tostring(fxdb.guards(ep)):find("Eq(s0*s1, 16)", 1, true), tostring(fxdb.guards(ep)))
  same(m(torch.ones(2, 8)), fxdb.run(ep, {torch.ones(2, 8)}).outputs[1], "2 x 8 satisfies it")
  T.checkerr("Expected the input sizes to satisfy the guard Eq(s0*s1, 16) the program was " ..
             "exported under (aten.view.default at tests/lua/test_dynamic_passes.lua:",
             fxdb.run, ep, {torch.ones(3, 4)})
  T.checkerr("but s0 = 3, s1 = 4", function() ep:module()(torch.ones(3, 4)) end)
  -- an inferred -1: the other sizes must divide the numel
  m = module("R2", nil, function(self, x) return x:reshape(4, -1) end)
  ep = torch.export.export(m, {torch.randn(2, 6)}, {dynamic_shapes = {{[0] = auto, [1] = auto}}})
  T.truthy(tostring(fxdb.guards(ep)):find("Eq(Mod(s0*s1, 4), 0)", 1, true), tostring(fxdb.guards(ep)))
  same(m(torch.ones(2, 10)), fxdb.run(ep, {torch.ones(2, 10)}).outputs[1], "2 x 10")
  T.checkerr("Eq(Mod(s0*s1, 4), 0)", fxdb.run, ep, {torch.ones(3, 3)})
  -- x[3] needs more than 3 rows: a range constraint
  m = module("S", nil, function(self, x) return x[{3}] * 2 end)
  ep = torch.export.export(m, {torch.randn(5, 2)}, {dynamic_shapes = {{[0] = auto}}})
  T.eq(tostring(ep.range_constraints), "{s0: VR[4, int_oo]}")
  T.checkerr("Expected input at x.shape[0] to be >= 4, but got 3", fxdb.run, ep, {torch.ones(3, 2)})
  -- a boolean mask of 3 elements pins the dim it indexes; an index tensor pins the values' dim
  m = module("I", nil, function(self, x, v)
    x[{torch.tensor({true, false, true})}] = 0
    x:index_put_({torch.tensor({0, 2})}, v)
    return x + 1
  end)
  ep = torch.export.export(m, {torch.randn(3, 4), torch.randn(2, 4)},
                           {dynamic_shapes = {{[0] = auto, [1] = auto}, {[0] = auto, [1] = auto}}})
  local text = tostring(ep)
  T.truthy(text:find('x: "f32[3, s1]", v: "f32[2, s1]"', 1, true), text)
  -- a buffer assigned a dynamic tensor keeps the buffer's shape: the dim is pinned
  m = module("B", function(self) self:register_buffer("b", torch.zeros(4)) end,
             function(self, x) self.b = x * 2; return x + 1 end)
  ep = torch.export.export(m, {torch.randn(4)}, {dynamic_shapes = {{[0] = auto}}})
  T.truthy(tostring(ep):find('x: "f32[4]"', 1, true), tostring(ep))
end)

T.done()
