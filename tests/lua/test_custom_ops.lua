-- tests/lua/test_custom_ops.lua — torch.library in Lua: ops defined at run time (define, impl,
-- register_fake, custom_op, Library), called eagerly, exported (training IR keeps the custom op,
-- printed with its namespace), interpreted, found by name; errors as PyTorch words them.
local T = dofile("tests/lua/harness.lua")

local function targets(ep) return T.targets(ep, false, true) end

-- a KV-cache write as ExecuTorch's update_cache: cache[pos : pos + len] = value
torch.library.define("mylib::update_cache", "(Tensor value, Tensor(a!) cache, int pos) -> ()")
torch.library.impl("mylib::update_cache", "cpu", function(value, cache, pos)
  cache:narrow(0, pos, value:size(0)):copy_(value)
end)
torch.library.register_fake("mylib::update_cache", function(value, cache, pos) end)

local scale = torch.library.custom_op("mylib::scale", function(x, k) return x * k end,
  {schema = "(Tensor x, float k) -> Tensor", mutates_args = {}})
scale:register_fake(function(x, k) return torch.empty_like(x) end)

local Cache = nn.Module:extend("Cache")
function Cache:init() self:register_buffer("cache", torch.zeros(4, 2)) end
function Cache:forward(x, pos)
  torch.ops.mylib.update_cache(x, self.cache, pos)
  return torch.ops.mylib.scale(self.cache, 2.0)
end

T.test("OpOverload of a custom op: names and schema", function()
  local op = torch.ops.mylib.update_cache.default
  T.eq(tostring(op), "mylib.update_cache.default")
  T.eq(op.name, "mylib::update_cache")
  T.eq(op.schema, "mylib::update_cache(Tensor value, Tensor(a!) cache, int pos) -> ()")
  T.eq(op.is_inplace, true)
  T.eq(tostring(scale), "<CustomOpDef(mylib::scale)>")
end)

T.test("eager: the cpu impl runs and writes its (a!) argument", function()
  local c = torch.zeros(4, 2)
  torch.ops.mylib.update_cache(torch.ones(1, 2) * 5, c, 2)
  T.eq(c:sum():item(), 10)
  T.eq(c:narrow(0, 2, 1):sum():item(), 10)
  T.eq(scale(torch.ones(3), 3.0):sum():item(), 9)
  T.eq(torch.ops.mylib.scale.default(torch.ones(2), 0.5):sum():item(), 1)
end)

T.test("training IR records the custom op; interpreter and eager agree over steps", function()
  local m = Cache()
  local ep = torch.export.export(m, {torch.ones(1, 2), 1}, {ir = "training"})
  T.eq(targets(ep), "update_cache=mylib.update_cache.default scale=mylib.scale.default")
  local code = ep.graph_module.code
  T.truthy(code:find("torch.ops.mylib.update_cache.default(x, b_cache, 1)", 1, true), code)
  T.truthy(code:find("torch.ops.mylib.scale.default(b_cache, 2.0)", 1, true), code)
  local listing = tostring(ep.graph)
  T.truthy(listing:find("call_function[target=torch.ops.mylib.update_cache.default]", 1, true), listing)
  T.eq(#ep.graph:find("mylib::update_cache"), 1)
  T.eq(#ep.graph:find("mylib.scale"), 1)
  -- the exported program run against eager, several steps, same buffer updates
  local eager, gm = Cache(), ep:module()
  for step = 1, 3 do
    local x = torch.ones(1, 2) * step
    local a, b = eager(x, 1), gm(x)
    T.eq(fxdb._max_abs_diff(a, b), 0, "step " .. step)
  end
end)

T.test("debugger: a breakpoint on a custom op by name stops at its node", function()
  fxdb.kill()
  fxdb.delete()
  for _, q in ipairs({"mylib::update_cache", "mylib.scale", "torch.ops.mylib.scale.default"}) do
    local b = fxdb.break_on("op " .. q)
    local s = fxdb.trace(Cache(), {torch.ones(1, 2), 1}, {ir = "training"})
    local st = s:continue()
    T.eq(st.node.target, q:find("scale", 1, true) and "mylib.scale.default"
      or "mylib.update_cache.default", q)
    fxdb.kill()
    fxdb.delete(b.id)
  end
end)

-- PyTorch's test/export/test_export.py: testlib::foo mutates both arguments and its fake impl
-- returns them; foo_mutated (CompositeImplicitAutograd) calls it (test_custom_op_auto_functionalize
-- _pre_dispatch, torch 2.5): the exact functional code and signature.
torch.library.define("testlib::foo", "(Tensor(a!) x, Tensor(b!) z) -> (Tensor, Tensor, Tensor)")
torch.library.define("testlib::foo_mutated", "(Tensor(a!) x) -> (Tensor, Tensor)")
torch.library.impl("testlib::foo", "cpu", function(x, z)
  x:add_(5)
  z:add_(5)
  return x, z, x + z
end)
torch.library.register_fake("testlib::foo", function(x, z) return x, z, x + z end)
torch.library.impl("testlib::foo_mutated", "CompositeImplicitAutograd", function(x)
  local a = torch.ops.testlib.foo(x, x:cos())
  return a, a:cos()
end)
local FooM = nn.Module:extend("FooM")
function FooM:forward(x) return torch.ops.testlib.foo_mutated.default(x) end

T.test("auto_functionalized: testlib::foo called from foo_mutated, as torch.export prints it", function()
  local ep = torch.export.export(FooM(), {torch.ones(5)})
  T.eq(ep.graph_module.code:match("^%s*(.-)%s*$"), [[
def forward(self, x):
    cos = torch.ops.aten.cos.default(x)
    auto_functionalized = torch.ops.higher_order.auto_functionalized(torch.ops.testlib.foo.default, x = x, z = cos);  x = cos = None
    getitem_3 = auto_functionalized[3];  auto_functionalized = None
    cos_1 = torch.ops.aten.cos.default(getitem_3)
    return (getitem_3, getitem_3, cos_1)]])
  local listing = tostring(ep.graph)
  T.truthy(listing:find("call_function[target=torch.ops.higher_order.auto_functionalized](args = "
    .. "(testlib.foo.default,), kwargs = {x: %x, z: %cos})", 1, true), listing)
  local sig = ep.graph_signature
  T.eq(#sig.output_specs, 3)
  T.eq(sig.output_specs[1].kind, "USER_INPUT_MUTATION")
  T.eq(sig.output_specs[1].target, "x")
  T.eq(sig.output_specs[2].kind, "USER_OUTPUT")
  T.eq(sig.output_specs[3].kind, "USER_OUTPUT")
  -- values: eager, the exported program and the unlifted module agree, input mutation included
  local xe, xm = torch.ones(5), torch.ones(5)
  local a, b = FooM()(xe)
  local a2, b2 = ep:module()(xm)
  T.eq(xe:sum():item(), 30)
  T.eq(fxdb._max_abs_diff(xe, xm), 0)
  T.eq(fxdb._max_abs_diff(a, a2), 0)
  T.near(fxdb._max_abs_diff(b, b2), 0, 1e-6)
  T.near(fxdb._max_abs_diff(b, torch.full({5}, 6.0):cos()), 0, 1e-6)
  -- run_decompositions replays the custom op: the same program
  T.eq(ep:run_decompositions().graph_module.code, ep.graph_module.code)
  -- the training IR keeps foo itself (foo_mutated is traced through)
  local tr = torch.export.export(FooM(), {torch.ones(5)}, {ir = "training"})
  T.truthy(tr.graph_module.code:find("torch.ops.testlib.foo.default(x, cos)", 1, true), tr.graph_module.code)
end)

T.test("auto_functionalized on a view of a buffer: scattered back, provenance, steps", function()
  local C = nn.Module:extend("C")
  function C:init() self:register_buffer("cache", torch.zeros(2, 4, 2)) end
  function C:forward(x, pos)
    torch.ops.mylib.update_cache(x, self.cache[1], pos)
    return self.cache:sum(1)
  end
  local ep = torch.export.export(C(), {torch.ones(1, 2), 1})
  local code = ep.graph_module.code
  T.truthy(code:find([[
    select = torch.ops.aten.select.int(b_cache, 0, 1)
    auto_functionalized = torch.ops.higher_order.auto_functionalized(torch.ops.mylib.update_cache.default, value = x, cache = select, pos = 1);  x = select = None
    getitem_1 = auto_functionalized[1];  auto_functionalized = None
    select_scatter = torch.ops.aten.select_scatter.default(b_cache, getitem_1, 0, 1);  b_cache = getitem_1 = None]], 1, true), code)
  T.eq(ep.graph_signature.output_specs[1].kind, "BUFFER_MUTATION")
  T.eq(ep.graph_signature.output_specs[1].target, "cache")
  local pv = fxdb.provenance(ep, "cache")
  local st = pv.steps[2]
  T.eq(st.from_op, "mylib.update_cache.default")
  T.eq(st.view_path, "select(0, 1)")
  T.truthy(tostring(st.location):find("test_custom_ops.lua:", 1, true), tostring(st.location))
  T.truthy(tostring(pv):find("from mylib.update_cache.default", 1, true), tostring(pv))
  local eager, gm = C(), ep:module()
  for step = 1, 3 do -- pos is specialized to 1 (an int argument)
    local x = torch.ones(1, 2) * step
    T.eq(fxdb._max_abs_diff(eager(x, 1), gm(x)), 0, "step " .. step)
  end
  T.eq(fxdb._max_abs_diff(eager.cache, gm.cache), 0)
  T.eq(gm.cache:sum():item(), 6)
  -- graph queries, the picture
  T.eq(#ep.graph:find("auto_functionalized"), 1)
  local dot = os.tmpname() .. ".dot"
  fxdb.render(ep, dot)
  local f = io.open(dot)
  local text = f:read("a")
  f:close()
  os.remove(dot)
  T.truthy(text:find("mylib.update_cache.default", 1, true), "viz labels the custom op")
end)

T.test("reinplace: the custom op writes the cache in place, no clone, no copy_", function()
  local C = nn.Module:extend("C")
  function C:init() self:register_buffer("cache", torch.zeros(2, 4, 2)) end
  function C:forward(x, pos)
    torch.ops.mylib.update_cache(x, self.cache[1], pos)
    return self.cache:sum(0)
  end
  local ep = torch.export.export(C(), {torch.ones(1, 2), 2})
  local gm = fxdb.reinplace(ep)
  T.eq(gm.code:match("^%s*(.-)%s*$"), [[
def forward(self, x):
    cache = self.cache
    select = torch.ops.aten.select.int(cache, 0, 1)
    update_cache = torch.ops.mylib.update_cache.default(x, select, 2);  x = select = update_cache = None
    sum_1 = torch.ops.aten.sum.dim_IntList(cache, [0]);  cache = None
    return (sum_1,)]])
  T.eq(gm.reinplace_notes, "auto_functionalized (mylib.update_cache.default): 'cache' written in place (%select)\n")
  T.eq(fxdb.info("reinplace"), "auto_functionalized (mylib.update_cache.default): 'cache' written in place (%select)")
  -- numbers over several steps: eager, exported (lifted), unlifted, reinplaced
  local eager, um = C(), ep:module()
  local state = ep.state_dict.cache:clone()
  for step = 1, 4 do
    local x = torch.randn(1, 2)
    local want = eager(x, 2)
    local r = fxdb.run(ep, {x})
    T.eq(fxdb._max_abs_diff(r.outputs[1], want), 0, "lifted, step " .. step)
    T.eq(fxdb._max_abs_diff(um(x), want), 0, "unlifted, step " .. step)
    T.eq(fxdb._max_abs_diff(gm(x), want), 0, "reinplaced, step " .. step)
    T.eq(fxdb._max_abs_diff(gm.cache, eager.cache), 0)
    T.eq(fxdb._max_abs_diff(um.cache, eager.cache), 0)
  end
  T.eq(fxdb._max_abs_diff(ep.state_dict.cache, state), 0, "the program's own state is untouched")
end)

T.test("reinplace: an op with several returns writes its buffer in place; same numbers", function()
  local M3 = nn.Module:extend("M3")
  function M3:init() self:register_buffer("b", torch.ones(5)) end
  function M3:forward(x)
    local _, z, s = torch.ops.testlib.foo(self.b, x:cos())
    return s + z
  end
  local ep = torch.export.export(M3(), {torch.ones(5)})
  local gm = fxdb.reinplace(ep)
  local code = gm.code
  T.truthy(code:find("foo = torch.ops.testlib.foo.default(b, cos)", 1, true), code)
  T.truthy(code:find("getitem_2 = foo[2]", 1, true), code)
  T.truthy(not code:find("copy_", 1, true) and not code:find("clone", 1, true), code)
  local eager = M3()
  for step = 1, 3 do
    local x = torch.randn(5)
    T.near(fxdb._max_abs_diff(eager(x), gm(x)), 0, 1e-6, "step " .. step)
  end
  T.eq(fxdb._max_abs_diff(eager.b, gm.b), 0)
end)

T.test("reinplace: an argument sharing the mutated memory keeps the clone, and says why", function()
  torch.library.define("mylib::add_into", "(Tensor(a!) out, Tensor src) -> ()")
  torch.library.impl("mylib::add_into", "cpu", function(out, src) out:add_(src) end)
  torch.library.register_fake("mylib::add_into", function(out, src) end)
  local O = nn.Module:extend("O")
  function O:init() self:register_buffer("cache", torch.arange(8.0):reshape({4, 2})) end
  function O:forward(x)
    torch.ops.mylib.add_into(self.cache:narrow(0, 0, 2), self.cache:narrow(0, 2, 2))
    return self.cache + x
  end
  local ep = torch.export.export(O(), {torch.ones(4, 2)})
  local gm = fxdb.reinplace(ep)
  local code = gm.code
  T.truthy(code:find("clone = torch.ops.aten.clone.default(slice_1)", 1, true), code)
  T.truthy(code:find("torch.ops.mylib.add_into.default(clone, slice_2)", 1, true), code)
  T.eq(fxdb.info("reinplace"), "auto_functionalized (mylib.add_into.default): kept a clone of 'out' "
    .. "(%slice_1): argument 'src' (%slice_2) shares its memory")
  local eager = O()
  for step = 1, 3 do
    local x = torch.full({4, 2}, step * 1.5)
    T.eq(fxdb._max_abs_diff(eager(x), gm(x)), 0, "step " .. step)
  end
  T.eq(fxdb._max_abs_diff(eager.cache, gm.cache), 0)
end)

T.test("dynamic shapes: the fake impl runs on symbolic sizes, SymInt arguments stay symbolic", function()
  torch.library.define("mylib::write_at", "(Tensor value, Tensor(a!) cache, SymInt pos) -> ()")
  torch.library.impl("mylib::write_at", "cpu", function(value, cache, pos)
    cache:narrow(0, pos, value:size(0)):copy_(value)
  end)
  torch.library.register_fake("mylib::write_at", function(value, cache, pos) end)
  torch.library.define("mylib::head", "(Tensor x, SymInt n) -> Tensor")
  torch.library.impl("mylib::head", "cpu", function(x, n) return x:narrow(0, 0, n):clone() end)
  torch.library.register_fake("mylib::head", function(x, n) return x:narrow(0, 0, n):clone() end)
  local D = nn.Module:extend("D")
  function D:init() self:register_buffer("cache", torch.zeros(10, 2)) end
  function D:forward(x)
    local n = x:size(0)
    torch.ops.mylib.write_at(x, self.cache, n)
    return torch.ops.mylib.head(self.cache, n + 1) * 2
  end
  local Dim = torch.export.Dim
  local ep = torch.export.export(D(), {torch.ones(3, 2)}, {dynamic_shapes = {x = {[0] = Dim("n", {max = 5})}}})
  local text = tostring(ep)
  T.truthy(text:find("auto_functionalized = torch.ops.higher_order.auto_functionalized("
    .. "torch.ops.mylib.write_at.default, value = x, cache = b_cache, pos = sym_size_int)", 1, true), text)
  T.truthy(text:find('head: "f32[s0 + 1, 2]" = torch.ops.mylib.head.default(getitem_1, add)', 1, true), text)
  local eager, gm, re = D(), ep:module(), fxdb.reinplace(ep)
  for _, n in ipairs({2, 4, 5, 3}) do
    local x = torch.randn(n, 2)
    local want = eager(x)
    T.eq(fxdb._max_abs_diff(gm(x), want), 0, "n = " .. n)
    T.eq(fxdb._max_abs_diff(re(x), want), 0, "reinplaced, n = " .. n)
  end
  T.eq(fxdb._max_abs_diff(re.cache, eager.cache), 0)
  T.truthy(not re.code:find("clone", 1, true), re.code)
end)

T.test("auto_functionalized_v2 (export option): bases, view information, numbers", function()
  local ep = torch.export.export(FooM(), {torch.ones(5)}, {auto_functionalized_v2 = true})
  T.truthy(ep.graph_module.code:find("auto_functionalized_v2 = torch.ops.higher_order.auto_functionalized_v2("
    .. "torch.ops.testlib.foo.default, _x_base_index = 0, _z_base_index = 1, _all_bases = [x, cos]);  x = cos = None\n"
    .. "    getitem_3 = auto_functionalized_v2[3]", 1, true), ep.graph_module.code)
  local x = torch.ones(5)
  local a = ep:module()(x)
  T.eq(x:sum():item(), 30)
  T.eq(a:sum():item(), 30)
  -- a base, a slice of it, and a strided view: the three ways to say where the argument is
  local C = nn.Module:extend("C")
  function C:init() self:register_buffer("cache", torch.zeros(2, 4, 2)) end
  function C:forward(x, pos)
    torch.ops.mylib.update_cache(x, self.cache[1], pos)
    torch.ops.mylib.update_cache(x * 2, self.cache:narrow(1, 1, 2), pos)
    torch.ops.mylib.update_cache(x * 3, self.cache:transpose(0, 1)[1], pos)
    return self.cache:sum(0)
  end
  local ep2 = torch.export.export(C(), {torch.ones(1, 2), 1}, {auto_functionalized_v2 = true})
  local code = ep2.graph_module.code
  for _, want in ipairs({
    "value = x, pos = 1, _cache_base_index = 0, _cache_size = [4, 2], _cache_stride = [2, 1], "
      .. "_cache_storage_offset = 8, _all_bases = [b_cache]",
    "value = mul, pos = 1, _cache_base_index = 0, _cache_slice_dim = 1, _cache_slice_start = 1, "
      .. "_cache_slice_end = 3, _all_bases = [getitem_1]",
    "value = mul_1, pos = 1, _cache_base_index = 0, _cache_size = [2, 2], _cache_stride = [8, 1], "
      .. "_cache_storage_offset = 2, _all_bases = [getitem_3]",
    "return (getitem_5, sum_1)"}) do
    T.truthy(code:find(want, 1, true), want .. "\n" .. code)
  end
  T.eq(#fxdb.provenance(ep2, "cache").steps, 4)
  local eager, gm, re = C(), ep2:module(), fxdb.reinplace(ep2)
  for step = 1, 3 do
    local v = torch.randn(1, 2)
    local want = eager(v, 1)
    T.eq(fxdb._max_abs_diff(gm(v), want), 0, "step " .. step)
    T.eq(fxdb._max_abs_diff(re(v), want), 0, "reinplaced, step " .. step)
  end
  T.eq(fxdb._max_abs_diff(gm.cache, eager.cache), 0)
  -- :info reinplace says why each v2 node stayed
  local _, n = re.reinplace_notes:gsub("auto_functionalized_v2 %(mylib.update_cache.default%): left as is", "")
  T.eq(n, 3, re.reinplace_notes)
end)

T.test("debugger: a breakpoint on a mutating custom op stops there in a functional export", function()
  fxdb.kill()
  fxdb.delete()
  local b = fxdb.break_on("op mylib::update_cache")
  local s = fxdb.trace(Cache(), {torch.ones(1, 2), 1})
  local st = s:continue()
  T.eq(st.node.target, "mylib.update_cache.default")
  fxdb.kill()
  fxdb.delete(b.id)
end)

T.test("functional IR keeps a non-mutating custom op", function()
  local M = nn.Module:extend("M")
  function M:forward(x) return torch.ops.mylib.scale(x:sin(), 3.0) + 1 end
  local ep = torch.export.export(M(), {torch.ones(2)})
  T.eq(targets(ep), "sin=aten.sin.default scale=mylib.scale.default add=aten.add.Tensor")
  T.near(fxdb._max_abs_diff(ep:module()(torch.ones(2)), torch.ones(2):sin() * 3 + 1), 0, 1e-6)
end)

T.test("a CompositeImplicitAutograd impl is traced through", function()
  torch.library.define("mylib::gelu_ish", "(Tensor x) -> Tensor")
  torch.library.impl("mylib::gelu_ish", "CompositeImplicitAutograd", function(x)
    return x * torch.sigmoid(x * 1.702)
  end)
  local M = nn.Module:extend("M")
  function M:forward(x) return torch.ops.mylib.gelu_ish(x) end
  local ep = torch.export.export(M(), {torch.ones(3)})
  T.eq(targets(ep), "mul=aten.mul.Tensor sigmoid=aten.sigmoid.default mul_1=aten.mul.Tensor")
  local x = torch.randn(3)
  T.near(fxdb._max_abs_diff(torch.ops.mylib.gelu_ish(x), x * torch.sigmoid(x * 1.702)), 0, 1e-6)
end)

T.test("Library('ns', 'DEF'): define and impl by name", function()
  local lib = torch.library.Library("mylib2", "DEF")
  lib:define("twice(Tensor x) -> Tensor")
  lib:impl("twice", function(x) return x + x end, "CompositeExplicitAutograd")
  T.eq(torch.ops.mylib2.twice(torch.ones(2)):sum():item(), 4)
end)

T.test("errors: schema, duplicates, undeclared writes, missing fake, missing kernel", function()
  T.checkerr("mylib::bad", torch.library.define, "mylib::bad", "(Tensor x -> Tensor")
  T.checkerr("Tried to register an operator (mylib::update_cache) with the same name and "
    .. "overload name multiple times.", torch.library.define, "mylib::update_cache", "(Tensor x) -> ()")
  T.checkerr("namespace 'aten' cannot hold custom ops", torch.library.define, "aten::mine", "(Tensor x) -> Tensor")
  T.checkerr("expected a qualname like", torch.library.define, "nonamespace", "(Tensor x) -> Tensor")
  T.checkerr("does not exist", torch.library.impl, "mylib::nope", "cpu", function() end)
  T.checkerr("unknown device type or dispatch key 'cuda'", torch.library.impl, "mylib::scale", "cuda", function() end)

  -- an impl that writes an argument not marked (a!): caught eagerly, as opcheck does
  torch.library.define("mylib::sneaky", "(Tensor x, Tensor y) -> Tensor")
  torch.library.impl("mylib::sneaky", "cpu", function(x, y) y:add_(1); return x + y end)
  local y = torch.zeros(2)
  local e = T.checkerr("mylib::sneaky: Argument y is not defined as mutable but was mutated",
    function() local r = torch.ops.mylib.sneaky(torch.ones(2), y); return r end)
  T.truthy(tostring(e.location):find("test_custom_ops.lua:", 1, true), tostring(e.location))
  T.eq(y:sum():item(), 2, "the kernel did run (its write is reported, not undone)")

  -- no fake impl: a meta export says so
  torch.library.define("mylib::nofake", "(Tensor x) -> Tensor")
  torch.library.impl("mylib::nofake", "cpu", function(x) return x + 1 end)
  T.eq(torch.ops.mylib.nofake(torch.ones(1)):item(), 2)
  local M = nn.Module:extend("M")
  function M:forward(x) return torch.ops.mylib.nofake(x) end
  T.checkerr("mylib::nofake: There was no fake impl registered for mylib.nofake.default",
    torch.export.export, M(), {torch.ones(1)})
  -- a training-IR trace with real values: the kernel makes the outputs, no fake impl needed
  local ep = torch.export.export(M(), {torch.ones(1)}, {real = true, ir = "training"})
  T.eq(targets(ep), "nofake=mylib.nofake.default")

  -- no kernel: eager says which
  torch.library.define("mylib::nokernel", "(Tensor x) -> Tensor")
  T.checkerr("mylib::nokernel has no kernel for CPU", torch.ops.mylib.nokernel, torch.ones(1))

  -- an error inside the impl reaches the user with the impl's line
  torch.library.define("mylib::boom", "(Tensor x) -> Tensor")
  torch.library.impl("mylib::boom", "cpu", function(x) error("boom inside") end)
  T.checkerr("boom inside", torch.ops.mylib.boom, torch.ones(1))

  -- custom_op: mutates_args must name exactly the (a!) arguments; a schema is required
  T.checkerr("mutates_args names 'x'", torch.library.custom_op, "mylib::m1", function() end,
    {schema = "(Tensor x) -> Tensor", mutates_args = {"x"}})
  T.checkerr("give the schema", torch.library.custom_op, "mylib::m2", function() end, {})
  -- the wrong return kind from an impl
  torch.library.define("mylib::badret", "(Tensor x) -> Tensor")
  torch.library.impl("mylib::badret", "cpu", function(x) return 3 end)
  T.checkerr("return 1", torch.ops.mylib.badret, torch.ones(1))
end)

T.test("review: bad schemas, undefined ops and mutable optional / list arguments", function()
  -- torch's schema parser: "Unknown type name 'Foo'"; a default needs a value
  T.checkerr("unknown type name", torch.library.define, "rvlib::u", "(Foo x) -> Tensor")
  T.checkerr("expected a default value", torch.library.define, "rvlib::d", "(Tensor x, int y=) -> Tensor")
  T.eq(rawget(torch.ops, "rvlib"), nil)
  -- an undefined op is named at the caller's line, not inside the library
  local here = debug.getinfo(1, "S").short_src
  local e = T.checkerr("operator rvlib::zz does not exist", function()
    torch.library.impl("rvlib::zz", "cpu", function() end)
  end)
  T.eq(e.kind, "argument")
  T.truthy(tostring(e.location):find(here, 1, true), tostring(e.location))
  e = T.checkerr("operator rvlib::zz does not exist", function()
    torch.library.register_fake("rvlib::zz", function() end)
  end)
  T.truthy(tostring(e.location):find(here, 1, true), tostring(e.location))
  T.checkerr("schema string expected, got number", function()
    torch.library.Library("rvlib", "FRAGMENT"):define(5)
  end)
  T.checkerr("Unsupported kind: BAD", torch.library.Library, "rvlib", "BAD")
  -- mutates_args over Tensor(a!)? and Tensor(a!)[] arguments (torch's custom_op accepts both)
  local inc = torch.library.custom_op("rvlib::inc_opt", function(x, y) if x then x:add_(y) end end,
    {schema = "(Tensor(a!)? x, Tensor y) -> ()", mutates_args = {"x"}})
  local t = torch.zeros(2)
  inc(t, torch.ones(2))
  T.eq(t:sum():item(), 2)
  local incs = torch.library.custom_op("rvlib::inc_list", function(xs) for _, x in ipairs(xs) do x:add_(1) end end,
    {schema = "(Tensor(a!)[] xs) -> ()", mutates_args = {"xs"}})
  local a, b = torch.zeros(2), torch.zeros(3)
  incs({a, b})
  T.eq(a:sum():item() + b:sum():item(), 5)
end)

T.done()
