-- tests/peer/test_export_state.lua — module-state cases of PyTorch's test/export/test_export.py:
-- test_placeholder_naming_collisions, test_state_tensors (containers), test_state_primitives,
-- the no-op buffer reassignment, ModuleList iteration, the warning channel and the graph
-- signature's derived views.
-- Layer: tests. Expected names and messages are PyTorch's own.
local P = dofile("tests/peer/peer.lua")
local T = P.T

fxdb.warnings{clear = true}

P.modes(function(strict, mode)
  -- user inputs keep their names; lifted state named like one of them gets the suffix
  local Foo = nn.Module:extend("Foo")
  function Foo:init()
    self.param = nn.Parameter(torch.randn(4))
    self:register_buffer("alpha", torch.randn(4))
    self:register_buffer("beta", torch.randn(4), {persistent = false})
    self.gamma = torch.randn(4)
  end
  function Foo:forward(p, b_alpha, b, c_gamma)
    local pp = p.param + self.param
    local bb = self.alpha + self.beta + b_alpha + b.beta
    local c = self.gamma + c_gamma
    return pp, bb, c
  end
  T.test("placeholder naming collisions: state vs user inputs, " .. mode, function()
    local args = {{param = torch.randn(4)}, torch.randn(4), {beta = torch.randn(4)}, torch.randn(4)}
    local m = Foo()
    local ep = torch.export.export(m, args, {strict = strict})
    local ins = P.sig(ep)
    T.eq(ins, table.concat({
      "p_param_1: PARAMETER target='param'",
      "b_alpha_1: BUFFER target='alpha' persistent=True",
      "b_beta_1: BUFFER target='beta' persistent=False",
      "c_gamma_1: CONSTANT_TENSOR target='gamma'",
      "p_param: USER_INPUT", "b_alpha: USER_INPUT", "b_beta: USER_INPUT", "c_gamma: USER_INPUT"},
      "\n"))
    P.numbers(m, ep, args)
  end)

  local Bar = nn.Module:extend("Bar")
  function Bar:forward(mul, add, add_1) return mul * mul + add * add_1 end
  T.test("placeholder naming collisions: user inputs vs call_function nodes, " .. mode, function()
    local ep = torch.export.export(Bar(), {torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4)},
                                   {strict = strict})
    T.eq(P.ops(ep), "placeholder:mul placeholder:add placeholder:add_1 mul_1=aten.mul.Tensor " ..
      "mul_2=aten.mul.Tensor add_2=aten.add.Tensor output:output")
  end)

  local Nest = nn.Module:extend("Nest")
  function Nest:forward(x, x_foo, x_foo_0) return x.foo[1] + x_foo[1] + x_foo_0 end
  T.test("placeholder naming collisions: nested user inputs, " .. mode, function()
    local ep = torch.export.export(Nest(), {{foo = {torch.randn(4, 4)}}, {torch.randn(4, 4)},
                                            torch.randn(4, 4)}, {strict = strict})
    local names = {}
    for _, n in ipairs(ep.graph.nodes) do
      if n.op == "placeholder" then names[#names + 1] = n.name end
    end
    T.eq(table.concat(names, " "), "x_foo_0 x_foo_0_1 x_foo_0_2")
  end)

  -- test_state_tensors, "complex without register buffer": tensors written into a list attribute
  local L = nn.Module:extend("L")
  function L:init() self.tensors = {torch.ones(2, 3), torch.ones(2, 3)} end
  function L:get_tensor(i) return self.tensors[i + 1] end
  function L:set_tensor(i, v) self.tensors[i + 1] = v end
  function L:forward(x)
    local y = self:get_tensor(0) + self:get_tensor(1)
    self:set_tensor(0, torch.ones(2, 3) + 2)
    self:set_tensor(1, torch.ones(2, 3) + 2)
    local z = self:get_tensor(0) + self:get_tensor(1)
    return x + y + z
  end
  T.test("tensors assigned into a container attribute, " .. mode, function()
    local m = L()
    local before = m.tensors[1]
    P.export_fails("attribute_assignment",
      "The tensor attributes self.tensors[0], self.tensors[1] were assigned during export. Such " ..
      "attributes must be registered as buffers using the `register_buffer` API", m,
      {torch.randn(2, 3)}, {strict = strict})
    T.truthy(rawequal(m.tensors[1], before), "the module's list is left alone")
  end)

  local One = nn.Module:extend("One")
  function One:init() self.cache = {k = torch.zeros(2)} end
  function One:forward(x) self.cache.k = x + 1; return x end
  T.test("one tensor assigned into a dict attribute, " .. mode, function()
    P.export_fails("attribute_assignment",
      "The tensor attribute self.cache['k'] was assigned during export.", One(),
      {torch.randn(2)}, {strict = strict})
  end)

  -- test_state_primitives
  local Prim = nn.Module:extend("Prim")
  function Prim:init() self.x = 1; self.y = {k = 2}; self.z = {3} end
  function Prim:forward(x)
    self.x = self.x + 4
    self.y.k = self.y.k + 5
    self.z = {self.z[1] + 6}
    return x + self.x + self.y.k + self.z[1]
  end
  T.test("int and container attributes changed in forward (test_state_primitives), " .. mode, function()
    local m = Prim()
    local y_before = m.y
    fxdb.warnings{clear = true}
    local ep = torch.export.export(m, {torch.randn(2, 3)}, {strict = strict})
    P.values(ep:module()(torch.zeros(2, 3)), {2, 3}, {21, 21, 21, 21, 21, 21})
    if strict then
      -- Dynamo replays the side effects on the module after a strict export
      T.eq(m.x, 5); T.eq(m.y.k, 7); T.eq(m.z[1], 9)
      T.truthy(rawequal(m.y, y_before), "a dict changed in place stays the same table")
    else
      -- aot_autograd's attribute check restores them
      T.eq(m.x, 1); T.eq(m.y.k, 2); T.eq(m.z[1], 3)
    end
    local w = fxdb.warnings{clear = true}
    if strict then
      T.eq(#w, 1)
      T.eq(w[1].message, "While compiling, we found certain side effects happened in the " ..
        "model.forward. Here are the list of potential sources you can double check: " ..
        "[\"L['self'].x\", \"L['self'].y['k']\", \"L['self'].z[0]\"]")
      T.truthy(w[1].location:find("test_export_state.lua:", 1, true), w[1].location)
    else
      T.eq(#w, 0)
    end
  end)

  -- attributes created in forward: a tensor is refused with each mode's message; an int is a
  -- strict-mode side effect (warned and replayed)
  local NewT = nn.Module:extend("NewT")
  function NewT:forward(x) self.foo = x + 1; return x end
  local NewI = nn.Module:extend("NewI")
  function NewI:forward(x) self.count = 1; return x + self.count end
  T.test("attributes created in forward, " .. mode, function()
    P.export_fails("attribute_assignment", strict and "Mutating module attribute foo during export." or
      "The tensor attribute self.foo was assigned during export.", NewT(), {torch.ones(2)},
      {strict = strict})
    local m = NewI()
    fxdb.warnings{clear = true}
    local ep = torch.export.export(m, {torch.ones(2)}, {strict = strict})
    P.values(ep:module()(torch.ones(2)), {2}, {2, 2})
    T.eq(m.count, strict and 1 or nil, "strict replays the new attribute, non-strict drops it")
    local w = fxdb.warnings{clear = true}
    T.eq(#w, strict and 1 or 0)
    if strict then T.truthy(w[1].message:find('["L[\'self\'].count"]', 1, true), w[1].message) end
  end)

  -- attribute tables with cycles (a config that refers to itself) are compared and replayed
  local Cyc = nn.Module:extend("Cyc")
  function Cyc:init()
    self.cfg = {n = 1}
    self.cfg.self = self.cfg
    self.cache = {k = torch.zeros(2)}
    self.cache.me = self.cache
  end
  function Cyc:forward(x) self.cfg.n = self.cfg.n + 1; return x + self.cache.k + self.cfg.n end
  T.test("attribute tables with cycles, " .. mode, function()
    local m = Cyc()
    local ep = torch.export.export(m, {torch.ones(2)}, {strict = strict})
    P.values(ep:module()(torch.ones(2)), {2}, {3, 3})
    T.eq(m.cfg.n, strict and 2 or 1)
    T.truthy(rawequal(m.cfg.self, m.cfg) and rawequal(m.cache.me, m.cache), "cycles kept")
    fxdb.warnings{clear = true}
  end)

  -- `self.f = self.f:to(x.device)` reassigns the buffer to itself: no mutation
  local F = nn.Module:extend("F")
  function F:init() self:register_buffer("f", torch.ones(2)) end
  function F:forward(x) self.f = self.f:to(x.device); return x + self.f end
  T.test("a buffer reassigned to itself is not a mutation, " .. mode, function()
    local ep = torch.export.export(F(), {torch.randn(2)}, {strict = strict})
    local _, outs = P.sig(ep)
    T.eq(outs, "add: USER_OUTPUT")
  end)

  -- the derived views of the signature
  local S = nn.Module:extend("S")
  function S:init()
    self.w = nn.Parameter(torch.ones(2))
    self:register_buffer("a", torch.zeros(2))
    self:register_buffer("b", torch.zeros(2))
  end
  function S:forward(x)
    self.b:add_(1)
    self.a:add_(x)
    x:mul_(2)
    return x * self.w
  end
  T.test("graph_signature's PyTorch views, " .. mode, function()
    local x = torch.ones(2)
    local ep = torch.export.export(S(), {x}, {strict = strict})
    local sig = ep.graph_signature
    T.eq(table.concat(sig.parameters, ","), "w")
    T.eq(table.concat(sig.buffers, ","), "a,b")
    T.eq(table.concat(sig.user_inputs, ","), "x")
    T.eq(table.concat(sig.user_outputs, ","), "mul_1")
    T.eq(sig.inputs_to_parameters.p_w, "w")
    T.eq(table.concat(sig.inputs_to_buffers:values(), ","), "a,b")
    -- outputs come in PyTorch's order: buffer mutations, user input mutations, user outputs
    T.eq(table.concat(sig.buffers_to_mutate:keys(), ","), "add_1,add")
    T.eq(table.concat(sig.buffers_to_mutate:values(), ","), "a,b")
    T.eq(sig.user_inputs_to_mutate.mul, "x")
    local args, kwargs = ep.example_inputs
    T.truthy(rawequal(args[1], x), "example_inputs are the export's arguments")
    T.eq(ep.module_call_graph[1].fqn, "")
    T.eq(table.concat(ep.module_call_graph[1].signature.inputs, ","), "x")
    T.eq(next(ep.range_constraints), nil)
  end)
end)

-- for layer in self.layers: ipairs visits every layer; 1-based indexing past the end fails
local Stack = nn.Module:extend("Stack")
function Stack:init()
  self.layers = nn.ModuleList{nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2)}
  self.seq = nn.Sequential(nn.Linear(2, 2))
  self.dict = nn.ModuleDict{a = nn.Linear(2, 2), b = nn.Linear(2, 2)}
end
T.test("ipairs over ModuleList / Sequential / ModuleDict visits every module", function()
  local m = Stack()
  local seen = {}
  for i, layer in ipairs(m.layers) do seen[i] = layer end
  T.eq(#seen, 3)
  T.truthy(rawequal(seen[1], m.layers[0]), "position 1 is layers[0]")
  T.truthy(rawequal(seen[3], m.layers[2]), "position 3 is layers[2]")
  local n = 0
  for _ in ipairs(m.seq) do n = n + 1 end
  T.eq(n, 1)
  local names = {}
  for _, mod in ipairs(m.dict) do names[#names + 1] = mod end
  T.truthy(rawequal(names[1], m.dict.a) and rawequal(names[2], m.dict.b), "dict order")
  T.checkerr("IndexError: index 3 is out of range", function() return m.layers[3] end)
  T.truthy(rawequal(m.layers[-1], m.layers[2]), "negative index")
end)

T.test("warning channel: once per site, collected, turned into errors", function()
  local m = nn.Module:extend("W")
  function m:init() self.n = 0 end
  function m:forward(x) self.n = self.n + 1; return x + 1 end
  local inst = m()
  fxdb.warnings{clear = true}
  for _ = 1, 2 do torch.export.export(inst, {torch.zeros(1)}) end
  T.eq(#fxdb.warnings(), 2, "both collected")
  local prev = fxdb.simplefilter("error")
  local e = T.checkerr("side effects happened", torch.export.export, inst, {torch.zeros(1)})
  T.eq(e.kind, "warning")
  T.eq(fxdb.simplefilter(prev), "error")
  T.checkerr("invalid action", fxdb.simplefilter, "loud")
  fxdb.warnings{clear = true}
end)

P.modes(function(strict, mode)
  -- torch/export/_unlift.py: a returned mutated input is the copy_ back into it, i.e. the caller's
  -- own tensor; a no-op `to` is the input itself
  local Mut = nn.Module:extend("Mut")
  function Mut:forward(x) x:mul_(2); return x end
  T.test("unlifted module returns the mutated input object itself, " .. mode, function()
    local gm = torch.export.export(Mut(), {torch.ones(2)}, {strict = strict}):module()
    local a = torch.ones(2)
    local r = gm(a)
    T.truthy(rawequal(r, a), "the input object")
    P.values(a, {2}, {2, 2})
    T.truthy(tostring(gm.graph):find("return (copy_,)", 1, true), tostring(gm.graph))
  end)

  local To = nn.Module:extend("To")
  function To:forward(x) return x:to(x.dtype), x:to("cpu"), x:to(x.device) end
  T.test("no-op to() aliases its input, eager and unlifted, " .. mode, function()
    local ep = torch.export.export(To(), {torch.ones(2)}, {strict = strict})
    T.eq(P.ops(ep), "placeholder:x output:output")
    local a = torch.ones(2)
    local r1, r2, r3 = ep:module()(a)
    T.truthy(rawequal(r1, a) and rawequal(r2, a) and rawequal(r3, a), "unlifted")
    r1, r2, r3 = To()(a)
    T.truthy(rawequal(r1, a) and rawequal(r2, a) and rawequal(r3, a), "eager")
  end)

  -- a parameter that requires grad, updated under no_grad by the program: the unlifted module's
  -- write-back is autograd's in-place error with grad enabled, fine under no_grad
  local Upd = nn.Module:extend("Upd")
  function Upd:init() self.w = nn.Parameter(torch.ones(2)) end
  function Upd:forward(x)
    torch.no_grad(function() self.w:add_(x) end)
    return x * self.w
  end
  T.test("unlifted parameter write-back under grad mode, " .. mode, function()
    local ep = torch.export.export(Upd(), {torch.ones(2)}, {strict = strict})
    local _, outs = P.sig(ep)
    T.eq(outs, "add: PARAMETER_MUTATION target='w'\nmul: USER_OUTPUT")
    local gm = ep:module()
    T.checkerr("a leaf Variable that requires grad is being used in an in-place operation.",
               gm, torch.ones(2))
    P.values(torch.no_grad(gm, torch.ones(2)), {2}, {2, 2})
    T.truthy(gm.w.requires_grad, "the unlifted parameter still requires grad")
  end)
end)

T.done()
