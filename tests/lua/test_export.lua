-- tests/lua/test_export.lua — export and functionalization behaviours beyond the seed cases:
-- user-input mutation, training IR and run_decompositions, parameters under no_grad, metadata
-- mutation, buffers shared by submodules, reassignment then in-place, outputs aliasing inputs,
-- state restored after failures. Each program is also checked against eager (fxdb.check).
local T = dofile("tests/lua/harness.lua")

local function targets(ep) return T.targets(ep, false, true) end

local function specs(list)
  local out = {}
  for _, s in ipairs(list) do out[#out + 1] = tostring(s) end
  return table.concat(out, "; ")
end

-- ExportDB user_input_mutation (2.4 functional form)
local UserInputMutation = nn.Module:extend("UserInputMutation")
function UserInputMutation:forward(x)
  x:mul_(2)
  return x:add(1)
end

T.test("user input mutation: USER_INPUT_MUTATION output first", function()
  for _, strict in ipairs{true, false} do
    local x = torch.randn(3, 2)
    local x0 = x:clone()
    local ep = torch.export.export(UserInputMutation(), {x}, {strict = strict})
    T.eq(targets(ep), "mul=aten.mul.Tensor add=aten.add.Tensor")
    T.eq(specs(ep.graph_signature.output_specs), "mul: USER_INPUT_MUTATION target='x'; add: USER_OUTPUT")
    T.eq(fxdb._max_abs_diff(x, x0), 0, "export does not touch the input")
    local c = fxdb.check(UserInputMutation(), ep, {x})
    T.truthy(c.ok, tostring(c))
    T.eq(fxdb._max_abs_diff(x, x0), 0, "check does not touch the input")
  end
end)

T.test("training IR keeps in-place ops; run_decompositions gives the functional program", function()
  local M = nn.Module:extend("M")
  function M:init() self:register_buffer("state", torch.zeros(3)) end
  function M:forward(x)
    self.state:add_(x)
    x:mul_(2)
    return self.state * x
  end
  local ep = torch.export.export(M(), {torch.ones(3)}, {ir = "training"})
  T.eq(targets(ep), "add_=aten.add_.Tensor mul_=aten.mul_.Tensor mul=aten.mul.Tensor")
  T.eq(specs(ep.graph_signature.output_specs), "mul: USER_OUTPUT")
  local fep = ep:run_decompositions()
  T.eq(targets(fep), "add=aten.add.Tensor mul=aten.mul.Tensor mul_1=aten.mul.Tensor")
  T.eq(specs(fep.graph_signature.output_specs),
    "add: BUFFER_MUTATION target='state'; mul: USER_INPUT_MUTATION target='x'; mul_1: USER_OUTPUT")
end)

T.test("parameter mutation: error with grad, PARAMETER_MUTATION under no_grad", function()
  local Bad = nn.Module:extend("Bad")
  function Bad:init() self.w = nn.Parameter(torch.ones(3)) end
  function Bad:forward(x)
    self.w:add_(x)
    return self.w * 2
  end
  local m = Bad()
  local e = T.checkerr("Found a graph input that requires gradients, and received a mutation",
    torch.export.export, m, {torch.ones(3)})
  T.eq(e.kind, "mutation_of_parameter")
  T.truthy(e.hint:find("no_grad", 1, true), e.hint)
  T.eq(m.w[0]:item(), 1, "the parameter is untouched")
  local Good = nn.Module:extend("Good")
  function Good:init() self.w = nn.Parameter(torch.ones(3)) end
  function Good:forward(x)
    torch.no_grad(function() self.w:add_(x) end)
    return self.w * 2
  end
  local ep = torch.export.export(Good(), {torch.ones(3)})
  T.eq(specs(ep.graph_signature.output_specs), "add: PARAMETER_MUTATION target='w'; mul: USER_OUTPUT")
  T.truthy(torch.is_grad_enabled(), "grad mode restored")
  T.checkerr("a leaf Variable that requires grad is being used in an in-place operation",
    function() local p = nn.Parameter(torch.ones(2)); p:add_(1) end)
end)

T.test("metadata mutation: an error on inputs, a view on intermediates", function()
  local Input = nn.Module:extend("Input")
  function Input:forward(x)
    x:t_()
    return x + 1
  end
  local e = T.checkerr("Found an input that received a metadata mutation",
    torch.export.export, Input(), {torch.randn(2, 3)})
  T.eq(e.kind, "metadata_mutation")
  T.eq(e.location, "tests/lua/test_export.lua:82")
  local Inter = nn.Module:extend("Inter")
  function Inter:forward(x)
    local y = x + 1
    y:transpose_(0, 1)
    y:mul_(2)
    return y
  end
  local x = torch.randn(2, 3)
  local ep = torch.export.export(Inter(), {x})
  T.truthy(targets(ep):find("transpose=aten.transpose.int", 1, true), targets(ep))
  T.truthy(fxdb.check(Inter(), ep, {x}).ok)
end)

T.test("a buffer shared by two submodules, mutated in each, then reassigned", function()
  local Inc = nn.Module:extend("Inc")
  function Inc:init(buf) self:register_buffer("count", buf) end
  function Inc:forward(x)
    self.count:add_(1)
    return x * self.count
  end
  local Top = nn.Module:extend("Top")
  function Top:init()
    local shared = torch.zeros(2)
    self.a = Inc(shared)
    self.b = Inc(shared)
    self:register_buffer("acc", torch.zeros(2))
  end
  function Top:forward(x)
    local z = self.b(self.a(x))
    self.acc = self.acc + z
    self.acc:mul_(2)
    return z, x:view(2, 1), z
  end
  local m, x = Top(), torch.ones(2)
  for _, strict in ipairs{true, false} do
    local ep = torch.export.export(m, {x}, {strict = strict})
    T.eq(specs(ep.graph_signature.input_specs),
      "b_acc: BUFFER target='acc' persistent=True; b_a_count: BUFFER target='a.count' persistent=True; x: USER_INPUT")
    T.eq(specs(ep.graph_signature.output_specs),
      "mul_2: BUFFER_MUTATION target='acc'; add_1: BUFFER_MUTATION target='a.count'; " ..
      "mul_1: USER_OUTPUT; view: USER_OUTPUT; mul_1: USER_OUTPUT")
    local pv = fxdb.provenance(ep, "a.count").steps
    T.eq(#pv, 3)
    T.eq(pv[2].node.meta.nn_module_stack[2].path, "a")
    T.eq(pv[3].node.meta.nn_module_stack[2].path, "b")
    local acc = fxdb.provenance(ep, "acc").steps
    if strict then -- the assignment is seen where it happens
      T.eq(#acc, 3)
      T.eq(acc[2].from_op, "buffer assignment")
      T.eq(acc[3].from_op, "aten.mul_.Tensor")
    else -- non-strict learns of the reassignment after the call: one version, the final value
      T.eq(#acc, 2)
      T.eq(acc[2].from_op, "buffer assignment")
      T.eq(acc[2].node.name, "mul_2")
    end
    local c = fxdb.check(m, ep, {x})
    T.truthy(c.ok, tostring(c))
  end
  T.truthy(rawequal(m.a.count, m.b.count), "still shared after export")
  T.eq(m.a.count[0]:item(), 0)
end)

T.test("a failed export inside forward restores every attribute, buffer and parameter", function()
  local M = nn.Module:extend("M")
  function M:init()
    self.lin = nn.Linear(2, 2)
    self:register_buffer("b", torch.zeros(2))
    self.n = 1
  end
  function M:forward(x)
    self.n = self.n + 1
    self.b = self.b + 1
    error("boom in forward")
  end
  local m = M()
  local w, b = m.lin.weight, m.b
  for _, strict in ipairs{true, false} do
    T.checkerr("boom in forward", torch.export.export, m, {torch.ones(2)}, {strict = strict})
    T.truthy(rawequal(m.lin.weight, w) and rawequal(m.b, b))
    T.eq(m.n, 1)
    T.eq(#nn._module_stack, 0)
  end
end)

T.test("a shape error during tracing names the Lua line", function()
  local M = nn.Module:extend("M")
  function M:forward(x)
    return x + torch.ones(4)
  end
  local e = T.checkerr("The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0",
    torch.export.export, M(), {torch.ones(3)})
  T.eq(e.location, "tests/lua/test_export.lua:176")
end)

T.test("a mutated input that aliases another input is refused", function()
  local M = nn.Module:extend("M")
  function M:forward(x, y)
    x:add_(1)
    return y * 2
  end
  local base = torch.zeros(4)
  local e = T.checkerr("Encountered aliased inputs that are mutated in the graph",
    torch.export.export, M(), {base, base:view(2, 2)})
  T.eq(e.kind, "aliased_input_mutation")
  T.eq(base[0]:item(), 0)
  local ep = torch.export.export(M(), {torch.zeros(4), torch.zeros(2, 2)})
  T.eq(ep.graph_signature.output_specs[1].kind, "USER_INPUT_MUTATION")
end)

T.test("writes through split, unbind and diagonal pieces are scattered back", function()
  local M = nn.Module:extend("M")
  function M:init() self:register_buffer("buf", torch.zeros(6, 2)) end
  function M:forward(x)
    local a, b, c = table.unpack(self.buf:split(2))
    b:add_(x)
    local rows = self.buf:unbind(1)
    rows[2]:mul_(3)
    self.buf:diagonal():fill_(7)
    return a + c
  end
  local m, x = M(), torch.ones(2, 2)
  for _, strict in ipairs{true, false} do
    local ep = torch.export.export(m, {x}, {strict = strict})
    local steps = fxdb.provenance(ep, "buf").steps
    T.eq(#steps, 4)
    T.eq(steps[2].target, "aten.slice_scatter.default")
    T.eq(steps[2].view_path, "split(2, 0)[1]")
    T.eq(steps[3].target, "aten.select_scatter.default")
    T.eq(steps[3].view_path, "unbind(1)[1]")
    T.eq(steps[4].target, "aten.diagonal_scatter.default")
    local c = fxdb.check(m, ep, {x})
    T.truthy(c.ok, tostring(c))
    local rm, um = fxdb.reinplace(ep), ep:module()
    T.eq(fxdb._max_abs_diff(rm(x), um(x)), 0)
    T.eq(fxdb._max_abs_diff(rm.buf, um.buf), 0)
  end
end)

T.test("tracing with real values: same program as on meta tensors, node values are real", function()
  local M = nn.Module:extend("M")
  function M:init() self:register_buffer("c", torch.zeros(2, 3)) end
  function M:forward(x)
    local k = x * 2
    self.c[{"0:1"}] = k
    return self.c + 1
  end
  local x = torch.ones(1, 3)
  local real = torch.export.export(M(), {x}, {real = true})
  local meta = torch.export.export(M(), {x})
  T.eq(tostring(real.graph), tostring(meta.graph))
  local v = real.raw_graph:node("mul").meta.value
  T.truthy(v and v:tolist()[1][1] == 2, "the raw node holds its real value")
end)

T.test("fxdb.check fails when the values agree but the dtype differs", function()
  local F32 = nn.Module:extend("F32")
  function F32:forward(x) return x * 2 end
  local F64 = nn.Module:extend("F64")
  function F64:forward(x) return (x * 2):double() end
  local x = torch.tensor({1, 2, 3}, torch.float32)
  local ep = torch.export.export(F32(), {x})
  T.truthy(fxdb.check(F32(), ep, {x}).ok)
  local c = fxdb.check(F64(), ep, {x})
  T.falsy(c.ok, tostring(c))
  T.eq(c.max_abs_error, 0)
  T.truthy(tostring(c):find("f64[3] vs f32[3]", 1, true), tostring(c))
end)

T.test("reinplace: the demo model's state updates become in-place again, same values", function()
  local Demo = nn.Module:extend("Demo")
  function Demo:init()
    self.proj = nn.Linear(4, 4)
    self:register_buffer("cache", torch.zeros(4, 3))
    self:register_buffer("steps", torch.zeros(1))
  end
  function Demo:forward(x, pos)
    self.cache[{":", pos}] = self.proj(x)
    self.steps:add_(1)
    return self.cache:sum(1) / self.steps
  end
  local m, x = Demo(), torch.randn(4)
  local ep = torch.export.export(m, {x, 1})
  local rm, um = fxdb.reinplace(ep), ep:module()
  local ops = {}
  for _, n in ipairs(rm.graph.nodes) do
    if n.op == "call_function" then ops[#ops + 1] = n.target end
  end
  ops = table.concat(ops, " ")
  T.truthy(ops:find("aten.add_.Tensor", 1, true), ops)
  T.truthy(ops:find("aten.select.int aten.copy_.default", 1, true), ops)
  T.falsy(ops:find("scatter", 1, true), ops)
  for pos = 0, 2 do
    T.eq(fxdb._max_abs_diff(rm(x, pos), um(x, pos)), 0)
    T.eq(fxdb._max_abs_diff(rm.cache, um.cache), 0)
    T.eq(fxdb._max_abs_diff(rm.steps, um.steps), 0)
  end
end)

-- Nodes recorded one after another share most of their location (export reuses what the previous
-- node read); every node must still get its own module path and line.
T.test("sibling and nested module calls: each node its own nn_module_stack and line", function()
  local Leaf = nn.Module:extend("Leaf")
  function Leaf:forward(x) return x:sin() end
  local Pair = nn.Module:extend("Pair")
  function Pair:init() self.a = Leaf(); self.b = Leaf() end
  function Pair:forward(x)
    local y = self.a(x)
    y = y + 1
    y = self.b(y)
    return self.a(y) * 2
  end
  local Top = nn.Module:extend("Top")
  function Top:init() self.p = Pair(); self.q = Pair() end
  function Top:forward(x) return self.q(self.p(x)):cos() end
  local ep = torch.export.export(Top(), {torch.ones(2)})
  local got = {}
  for _, n in ipairs(ep.graph.nodes) do
    if n.op == "call_function" then
      local paths = {}
      for i, e in ipairs(n.meta.nn_module_stack) do paths[i] = e.path .. ":" .. e.cls end
      local line = n.meta.stack_trace:match("test_export%.lua:(%d+) in")
      got[#got + 1] = n.name .. "@" .. line .. "[" .. table.concat(paths, ",") .. "]"
    end
  end
  local function line(f) return debug.getinfo(f, "S").linedefined end
  local leaf, pair, top = line(Leaf.forward), line(Pair.forward) + 1, line(Top.forward)
  local function at(k) return tostring(k) end
  T.eq(table.concat(got, " "), table.concat({
    "sin@" .. at(leaf) .. "[:Top,p:Pair,p.a:Leaf]", "add@" .. at(pair + 1) .. "[:Top,p:Pair]",
    "sin_1@" .. at(leaf) .. "[:Top,p:Pair,p.b:Leaf]", "sin_2@" .. at(leaf) .. "[:Top,p:Pair,p.a:Leaf]",
    "mul@" .. at(pair + 3) .. "[:Top,p:Pair]",
    "sin_3@" .. at(leaf) .. "[:Top,q:Pair,q.a:Leaf]", "add_1@" .. at(pair + 1) .. "[:Top,q:Pair]",
    "sin_4@" .. at(leaf) .. "[:Top,q:Pair,q.b:Leaf]", "sin_5@" .. at(leaf) .. "[:Top,q:Pair,q.a:Leaf]",
    "mul_1@" .. at(pair + 3) .. "[:Top,q:Pair]", "cos@" .. at(top) .. "[:Top]"}, " "))
end)

-- Export reuses its copy of a module table while the table is unchanged; a change made between
-- exports must be what a failed export puts back.
T.test("state changed between exports is what a failed export restores", function()
  local M = nn.Module:extend("M")
  function M:init()
    self.lin = nn.Linear(2, 2)
    self:register_buffer("b", torch.zeros(2))
    self.n = 1
    self.fail = false
  end
  function M:forward(x)
    self.n = self.n + 1
    self.b = self.b + 1
    if self.fail then
      rawset(rawget(self, "__dict"), "extra", 1)       -- a key the snapshot did not have
      rawget(self, "__dict")._buffers.b = nil          -- a key removed
      error("boom in forward")
    end
    return self.lin(x) + self.b
  end
  local m, x = M(), torch.ones(2)
  local prev = fxdb.simplefilter("ignore") -- strict mode's side-effect warning about self.n
  torch.export.export(m, {x})
  -- between exports: new values, a new attribute, a new submodule, a new buffer
  local w2 = nn.Parameter(torch.ones(2, 2))
  m.lin.weight = w2
  m.n = 5
  m.fail = true
  m.extra2 = "kept"
  m.sub = nn.Linear(2, 2)
  m:register_buffer("c", torch.ones(3))
  local b, c = m.b, m.c
  T.checkerr("boom in forward", torch.export.export, m, {x})
  T.truthy(rawequal(m.lin.weight, w2), "the new parameter is back")
  T.truthy(rawequal(m.b, b) and rawequal(m.c, c), "buffers back")
  T.eq(m.n, 5)
  T.eq(m.extra2, "kept")
  T.eq(rawget(rawget(m, "__dict"), "extra"), nil)
  T.eq(#m:named_modules(), 3)
  T.eq(#nn._module_stack, 0)
  m.fail = false
  local ep = torch.export.export(m, {x})
  fxdb.simplefilter(prev)
  T.eq(#ep.graph_signature.input_specs, 7) -- lin.weight, lin.bias, sub.weight, sub.bias, b, c, x
end)

T.test("the same tensor passed twice, one of them mutated, is refused as aliased", function()
  local M = nn.Module:extend("M")
  function M:forward(x, y)
    x:add_(1)
    return y * 2
  end
  local t = torch.zeros(3)
  local e = T.checkerr("Encountered aliased inputs that are mutated in the graph",
    torch.export.export, M(), {t, t})
  T.eq(e.kind, "aliased_input_mutation")
  local B = nn.Module:extend("B")
  function B:init() self:register_buffer("buf", torch.zeros(3)) end
  function B:forward(x)
    self.buf:add_(x)
    return x * 2
  end
  local m = B()
  T.checkerr("Encountered aliased inputs that are mutated in the graph", torch.export.export, m,
    {m.buf})
  T.eq(m.buf[0]:item(), 0)
end)

T.done()
