-- tests/lua/test_debugger.lua — the debugger through the fxdb.* API (what the REPL's commands call):
-- trace sessions (step, next, finish, continue, until), breakpoints (op, line, module, node,
-- mutation, view, item, conditions, temporary, disable), watchpoints through views, post-mortem
-- on export errors, run sessions (stepping, :set, :reverse-step), :diff and :report. The
-- references are independent of the session code: a plain torch.export.export of the same
-- module (its raw graph, program text, provenance), eager execution, and fxdb.run.
local T = dofile("tests/lua/harness.lua")

dofile("tests/golden/dbg_model.lua")   -- global `model` (Model > layers > Block > lin, norm)
dofile("tests/golden/dbg_errors.lua")  -- rebind, writeconst, param, datadep, shape
dofile("tests/golden/seed_s1.lua")     -- m (seed case S1)
local MODEL_FILE = "tests/golden/dbg_model.lua"

local function reset()
  fxdb.kill()
  fxdb.delete()
  fxdb.undisplay()
end

-- The call_function nodes of a graph, in order.
local function calls(g)
  local out = {}
  for _, n in ipairs(g.nodes) do
    if n.op == "call_function" then out[#out + 1] = n end
  end
  return out
end

-- Copies of a module's state tensors (to compare after a session) and the tensors themselves.
local function state_of(mod)
  local out = {}
  for _, s in ipairs(mod:_named_state()) do out[s.path] = {t = s.tensor, v = s.tensor:clone()} end
  return out
end
local function same_state(mod, before)
  for _, s in ipairs(mod:_named_state()) do
    local b = before[s.path]
    if not b or not rawequal(b.t, s.tensor) then return false, s.path .. " rebound" end
    if fxdb._max_abs_diff(b.v, s.tensor) ~= 0 then return false, s.path .. " changed" end
  end
  return true
end

local function line_of(pattern)
  local n = 0
  for l in io.lines(MODEL_FILE) do
    n = n + 1
    if l:find(pattern, 1, true) then return n end
  end
  error("no line with " .. pattern)
end

local ref = torch.export.export(model, model.example_inputs)
local ref_calls = calls(ref.raw_graph)

T.test("stepping visits every recorded op in order, and the session ends with export's program", function()
  reset()
  local before = state_of(model)
  local s = fxdb.trace(model)
  T.eq(fxdb.session, s)
  T.eq(s.status, "paused")
  local seen = {}
  while true do
    local st = s:step()
    if st.reason == "done" then break end
    T.eq(st.reason, "step")
    seen[#seen + 1] = st.node
  end
  T.eq(#seen, #ref_calls, "ops recorded")
  for i, n in ipairs(seen) do
    T.eq(n.name, ref_calls[i].name)
    T.eq(n.target, ref_calls[i].target)
  end
  T.eq(s.status, "finished")
  T.eq(tostring(s.ep), tostring(ref), "program of the session")
  T.eq(fxdb.current, s.ep)
  T.truthy(same_state(model, before))
  T.checkerr("has finished", function() return s:step() end)
end)

T.test("step N counts ops; the banner names the node, module, line and inputs", function()
  reset()
  local s = fxdb.trace(model)
  local st = s:step(3)
  T.eq(st.node.name, ref_calls[3].name)
  local text = tostring(st)
  T.truthy(text:find("stopped at %" .. ref_calls[3].name .. " (" .. ref_calls[3].target .. ")  [step]", 1, true), text)
  T.truthy(text:find("module: layers.0.norm (Norm)", 1, true), text)
  T.truthy(text:find(MODEL_FILE .. ":" .. line_of("self.running:mul_(0.5)"), 1, true), text)
  T.truthy(text:find("in: b_layers_0_norm_running f32[4]", 1, true), text)
  T.truthy(text:find("-> new version 1 of buffer 'layers.0.norm.running'", 1, true), text)
  T.checkerr("positive count", function() return s:step(0) end)
end)

T.test("ops run while paused are not recorded; locals of the paused frame are visible", function()
  reset()
  local s = fxdb.trace(model)
  s:step(2)                                 -- in Norm.forward, after x:mean(0)
  local count = #s.raw
  local x = fxdb.eval("x")
  T.truthy(torch.is_tensor(x) and x.is_meta)
  local y = fxdb.eval("x + 1")
  T.eq(tostring(y.shape), tostring(x.shape))
  local z = x * 2                           -- the main thread dispatches eagerly
  T.eq(#s.raw, count, "raw graph nodes while paused")
  T.eq(fxdb.eval("mean").shape[1], 4)
  T.eq(fxdb.eval("%mean").shape[1], 4)      -- %name: a node's traced value
  local st = s:step()
  T.eq(st.node.name, ref_calls[3].name, "the next op is the one the model records")
  T.eq(#s.raw, count + 1)
end)

T.test("next steps over submodule calls; finish returns from the module with its outputs", function()
  reset()
  local s = fxdb.trace(model)
  local st = s:step()                       -- linear, inside layers.0.lin
  T.eq(st.node.target, "aten.linear.default")
  st = s:finish()                           -- out of Linear
  T.eq(st.reason, "finish")
  T.truthy(tostring(st):find("finished layers.0.lin (Linear)", 1, true), tostring(st))
  T.truthy(tostring(st):find("returned: f32[2, 4] (%linear)", 1, true), tostring(st))
  T.truthy(tostring(st):find("now in: layers.0 (Block)", 1, true), tostring(st))
  st = s:next()                             -- over layers.0.norm: the next line of Block.forward
  T.eq(st.reason, "next")
  T.eq(st.node.target, "aten.select.int")
  T.eq(#st.node.meta.nn_module_stack, 2, "back in Block")
  local f = fxdb._node_frames(st.node)[1]
  T.eq(f.line, line_of("self.cache[pos] = h[0]"))
  st = s:next()                             -- same line: select, select, copy_ are one line
  T.eq(fxdb._node_frames(st.node)[1].line, line_of("return h + x"))
  st = s:finish()                           -- out of layers.0
  T.truthy(tostring(st):find("finished layers.0 (Block)", 1, true), tostring(st))
  T.truthy(tostring(st):find("returned: f32[2, 4] (%" .. st.node.name .. ")", 1, true), tostring(st))
  T.eq(st.node.target, "aten.add.Tensor")
  st = s:finish()                           -- out of the root module: the end
  T.eq(st.reason, "done")
end)

T.test("breakpoints by op, line, module and node; conditions; hit counts", function()
  reset()
  local n_add_ = 0
  for _, n in ipairs(ref_calls) do if n.target == "aten.add_.Tensor" then n_add_ = n_add_ + 1 end end
  local b = fxdb.break_on("op aten.add_")
  local s = fxdb.trace(model)
  local hits = 0
  while s:continue().reason ~= "done" do
    hits = hits + 1
    T.eq(s.stop.node.target, "aten.add_.Tensor")
  end
  T.eq(hits, n_add_)
  T.eq(b.hits, n_add_)
  fxdb.delete()

  fxdb.break_on("line " .. MODEL_FILE .. ":" .. line_of("self.cache[pos] = h[0]"))
  s = fxdb.trace(model)
  local st = s:continue()
  T.eq(st.node.target, "aten.select.int", "first op of the line")
  st = s:continue()
  T.eq(st.node.name, "select_2", "the same line in layers.1")
  T.eq(st.node.meta.nn_module_stack[2].path, "layers.1")
  fxdb.delete()

  fxdb.break_on("module layers.1.norm")
  s = fxdb.trace(model)
  st = s:continue()
  T.eq(st.node.target, "aten.mean.dim")
  T.eq(st.node.meta.nn_module_stack[#st.node.meta.nn_module_stack].path, "layers.1.norm")
  T.eq(s:continue().reason, "done", "one stop per module call")
  fxdb.delete()

  fxdb.break_on("node %mul__1")
  s = fxdb.trace(model)
  T.eq(s:continue().node.name, "mul__1")
  fxdb.delete()

  -- a condition sees node, val and the frame's locals
  fxdb.break_on("op aten.add if val.shape[1] == 2 and x ~= nil")
  s = fxdb.trace(model)
  st = s:continue()
  T.eq(st.node.target, "aten.add.Tensor")
  T.eq(st.node.meta.type, "f32[2, 4]")
  fxdb.delete()
  fxdb.break_on("mutation if mutation.target == 'steps'")
  s = fxdb.trace(model)
  st = s:continue()
  T.eq(st.node.name, "add__2")
  T.truthy(tostring(st):find("new version 1 of buffer 'steps'", 1, true))
  T.checkerr("bad condition", fxdb.break_on, "op aten.add if )")
  T.checkerr("unknown breakpoint", fxdb.break_on, "sometimes")
  T.checkerr("needs an argument", fxdb.break_on, "op")
end)

T.test("session methods: s:break_on{...}, s:watch, s:delete", function()
  reset()
  local s = fxdb.trace(model)
  local b = s:break_on{op = "aten.mul_", cond = "node.name == 'mul__1'"}
  T.eq(b.kind, "op")
  T.eq(s:continue().node.name, "mul__1")
  s:delete(b.id)
  s:watch("steps")
  T.eq(s:continue().node.name, "add__2")
  T.eq(s:continue().reason, "done")
end)

T.test("tbreak, disable, enable, until", function()
  reset()
  local b = fxdb.break_on("view", {temporary = true})
  local s = fxdb.trace(model)
  local st = s:continue()
  T.eq(st.node.target, "aten.select.int")
  T.truthy(tostring(st):find("[temporary breakpoint", 1, true))
  T.eq(#fxdb._dbg.breaks, 0, "deleted at its first hit")
  local m = fxdb.break_on("mutation")
  fxdb.disable(m.id)
  T.eq(s:continue().reason, "done")
  fxdb.enable()
  s = fxdb.trace(model)
  T.eq(s:continue().node.target, "aten.mul_.Tensor")
  fxdb.delete()
  st = s:advance_until("node %add__2")
  T.eq(st.node.name, "add__2")
  T.eq(#fxdb._dbg.breaks, 0, "until leaves no breakpoint")
  T.checkerr("no breakpoint number 42", fxdb.delete, 42)
end)

T.test("mutation stops give the versions the exported program's provenance lists", function()
  reset()
  fxdb.break_on("mutation")
  local s = fxdb.trace(model)
  local versions = {}
  while s:continue().reason ~= "done" do
    local mu = s.stop.mutation
    T.truthy(mu, "a mutation stop carries its mutation")
    versions[mu.target] = mu.version
  end
  for target, v in pairs(versions) do
    local pv = fxdb.provenance(ref, target)
    T.eq(#pv - 1, v, "versions of " .. target)
  end
  T.eq(versions["layers.0.norm.running"], 2)
  T.eq(versions["layers.1.cache"], 1)
  T.eq(versions["steps"], 1)
end)

T.test("watch stops at writes of a buffer, also through a view", function()
  reset()
  local w = fxdb.watch("layers.1.cache")
  local s = fxdb.trace(model)
  local st = s:continue()
  T.eq(st.node.target, "aten.copy_.default")
  T.eq(st.mutation.target, "layers.1.cache")
  T.eq(table.concat(st.mutation.chain, " of "), "select(0, 1)")
  T.truthy(tostring(st):find("[watchpoint " .. w.id .. ": watch layers.1.cache]", 1, true), tostring(st))
  T.truthy(tostring(st):find("new version 1 of buffer 'layers.1.cache' through select(0, 1)", 1, true))
  T.eq(s:continue().reason, "done")
  -- a user input
  fxdb.delete()
  local M = nn.Module:extend("InputWriter")
  function M:forward(x) x[{":", 0}] = 1; return x * 2 end
  fxdb.watch("x")
  s = fxdb.trace(M(), {torch.zeros(2, 3)})
  st = s:continue()
  T.eq(st.mutation.kind, "USER_INPUT")
  T.truthy(tostring(st):find("new version 1 of input 'x' through select(1, 0)", 1, true), tostring(st))
end)

T.test(":info mutations, :where, :list, :frame", function()
  reset()
  local s = fxdb.trace(model)
  s:step(4)
  local info = fxdb.info("mutations")
  T.truthy(info:find("buffer 'layers.0.norm.running': 2 versions so far", 1, true), info)
  local w = fxdb.where()
  T.truthy(w:find("#0  " .. MODEL_FILE .. ":" .. line_of("return (x - mean) * self.w"), 1, true), w)
  T.truthy(w:find("module stack: <root> (Model) > layers.0 (Block) > layers.0.norm (Norm)", 1, true), w)
  local l = fxdb.list()
  T.truthy(l:find("->%s+" .. line_of("return (x - mean) * self.w")), l)
  T.truthy(fxdb.frame(1):find("h = self.norm(h)", 1, true))
  T.eq(fxdb.eval("pos"), 1, "a local of the selected frame")
  T.checkerr("no frame 9", fxdb.frame, 9)
  T.truthy(fxdb.info("session"):find("trace session, paused", 1, true))
end)

T.test("graph so far: raw, and functional up to here", function()
  reset()
  local s = fxdb.trace(model)
  s:step(9)                                 -- through the cache write of layers.0
  local raw = fxdb.graph()
  T.eq(#calls(raw), 9)
  local fg = fxdb.graph("functional")
  local targets = {}
  for _, n in ipairs(calls(fg)) do targets[n.target] = true end
  T.truthy(targets["aten.select_scatter.default"], "the cache write became a select_scatter")
  T.falsy(targets["aten.copy_.default"])
  T.falsy(targets["aten.mul_.Tensor"])
  local outs = fg.output.args[1]
  T.eq(outs[1].name, "select_scatter", "mutation outputs first")
end)

T.test("post-mortem: a failed export stops the session with its context, module restored", function()
  reset()
  local cases = {
    {rebind, {}, "attribute_assignment"},
    {rebind, {strict = false}, "attribute_assignment"},
    {writeconst, {}, "constant_mutation"},
    {param, {}, "attribute_assignment"},
    {datadep, {}, "data_dependent"},
    {shape, {}, "shape"},
    {mutparam, {}, "mutation_of_parameter"},
    {metamut, {}, "metadata_mutation"},
    {expandwrite, {}, "argument"},
    {aliased, {}, "aliased_input_mutation"},
  }
  for _, c in ipairs(cases) do
    local mod, opts, kind = c[1], c[2], c[3]
    local ok, e = pcall(torch.export.export, mod, mod.example_inputs, opts)
    T.falsy(ok)
    T.eq(e.kind, kind, "plain export")
    local before = state_of(mod)
    local s = fxdb.trace(mod, nil, opts)
    local st = s:continue()
    T.eq(st.reason, "error")
    T.eq(s.status, "error")
    T.eq(s.error.kind, e.kind)
    T.eq(s.error.message, e.message)
    T.truthy(tostring(st):find(e.message, 1, true))
    T.truthy(same_state(mod, before))
    T.truthy(fxdb.graph(), "the raw graph so far stays available")
    T.checkerr("has failed", function() return s:step() end)
  end
  -- the shape error stays at the failing op's frame: its locals and the caller's
  local s = fxdb.trace(shape)
  s:continue()
  T.truthy(fxdb.where():find("module stack: <root> (Outer) > inner (Inner)", 1, true))
  fxdb.frame(1)
  T.eq(fxdb.eval("y").shape[2], 3)
  -- writeconst: at the failing node
  s = fxdb.trace(writeconst)
  local st = s:continue()
  T.eq(st.node.name, "copy_")
end)

T.test("item breakpoints stop at data-dependent reads of a real trace", function()
  reset()
  fxdb.break_on("item")
  local s = fxdb.trace(datadep, nil, {real = true})
  local st = s:continue()
  T.eq(st.reason, "item")
  T.truthy(tostring(st):find("stopped at data-dependent read item()", 1, true), tostring(st))
  T.eq(fxdb.eval("s"):item(), 3)
  T.eq(s:continue().reason, "done")
end)

T.test("kill ends a paused trace and restores the module", function()
  reset()
  local before = state_of(model)
  local s = fxdb.trace(model)
  s:step(5)
  T.falsy(same_state(model, before), "swapped for tracing tensors while paused")
  fxdb.kill()
  T.eq(fxdb.session, nil)
  T.truthy(same_state(model, before))
  T.checkerr("no debugger session", fxdb.step)
end)

T.test("run sessions: step through the exported graph with every value kept", function()
  reset()
  local ep = torch.export.export(m, m.example_inputs)
  local full = fxdb.run(ep, m.example_inputs)
  local s = fxdb.run(ep, m.example_inputs, {step = true})
  T.eq(fxdb.session, s)
  local st = s:step()
  T.eq(st.node.name, "_to_copy")
  T.eq(tostring(st.node and s.it:value(st.node)), "tensor([ 1.5000,  2.0000, -1.0000], dtype=torch.float16)")
  st = s:step()
  T.eq(st.node.name, "mul")
  T.truthy(tostring(st):find("new version 1 of buffer 'state' (from aten.mul_.Tensor)", 1, true), tostring(st))
  T.eq(tostring(fxdb.eval("%mul")), "tensor([10.5000, 10.0000, -6.0000], dtype=torch.float16)")
  T.eq(tostring(fxdb.eval("mul")), tostring(fxdb.eval("%mul")), "node names as plain names")
  st = s:continue()
  T.eq(st.reason, "done")
  T.eq(tostring(st.result.outputs[1]), tostring(full.outputs[1]))
  T.eq(tostring(st.result.mutations.state), tostring(full.mutations.state))
end)

T.test("run sessions: breakpoints, set (partial evaluation), reverse-step", function()
  reset()
  local ep = torch.export.export(m, m.example_inputs)
  fxdb.break_on("op aten.add")
  local s = fxdb.run(ep, m.example_inputs, {step = true})
  local st = s:continue()
  T.eq(st.node.name, "add")
  -- inject mul = 1: add = 1 + [1, 2, 3]; mul_1 = add * 9
  fxdb.set("%mul torch.tensor({1, 1, 1}, torch.float16)")
  T.eq(tostring(fxdb.eval("%add")), "tensor([2., 3., 4.], dtype=torch.float16)")
  st = s:reverse_step()
  T.eq(st.node.name, "lift_fresh_copy")
  st = s:reverse_step()
  T.eq(st.node.name, "mul")
  T.eq(tostring(s.it:value(st.node)), "tensor([1., 1., 1.], dtype=torch.float16)", "injected value replayed")
  st = s:continue()
  T.eq(st.node.name, "add")
  st = s:continue()
  T.eq(tostring(st.result.outputs[1]), "tensor([18., 27., 36.], dtype=torch.float16)")
  T.checkerr("no node named", function() return s:set("nosuch", 1) end)
  -- a watchpoint in a run session
  fxdb.delete()
  fxdb.watch("state")
  s = fxdb.run(ep, m.example_inputs, {step = true})
  T.eq(s:continue().node.name, "mul")
  T.eq(s:continue().node.name, "add")
  T.eq(s:continue().reason, "done")
end)

T.test("an interrupt (Ctrl-C's error) while a run session runs pauses it between two nodes", function()
  reset()
  local ep = torch.export.export(model, model.example_inputs)
  local s = fxdb.run(ep, model.example_inputs, {step = true})
  local n = 0
  debug.sethook(function()
    n = n + 1
    if n == 400 then debug.sethook(); error("interrupted!") end
  end, "", 1)
  local st = s:continue()
  debug.sethook()
  T.eq(st.reason, "interrupted")
  T.eq(s.status, "paused")
  local done = s.count
  T.truthy(done > 0 and done < #calls(ep.graph), "stopped inside the run")
  st = s:continue()                         -- runs on from there
  T.eq(st.reason, "done")
  T.eq(tostring(st.result.outputs[1]), tostring(fxdb.run(ep, model.example_inputs).outputs[1]))
end)

T.test("diff is node-keyed: raw vs functional through from_node; strict vs non-strict by name", function()
  reset()
  local ep = torch.export.export(m, m.example_inputs)
  local d = fxdb.diff(ep.raw_graph, ep.graph)
  T.eq(#d.removed, 0)
  T.eq(#d.added, 0)
  local changed = {}
  for _, c in ipairs(d.changed) do changed[c.a.name] = c.b.name end
  T.eq(changed.mul_, "mul")
  T.eq(changed.add_, "add")
  T.eq(changed.mul, "mul_1")
  local ep2 = torch.export.export(m, m.example_inputs, {strict = false})
  d = fxdb.diff(ep, ep2)
  T.eq(#d.changed + #d.removed + #d.added, 0)
  T.checkerr("bad argument #2 'g2' to 'fxdb.diff'", fxdb.diff, ep, 42)
end)

T.test("report lists every problem per submodule with location and partial graph", function()
  reset()
  local r = fxdb.report(rebind)
  T.eq(r.problems, 1)
  T.eq(r.entries[1].error.kind, "attribute_assignment")
  T.truthy(tostring(r):find("partial graph (2 ops): %mul %add", 1, true), tostring(r))
  r = fxdb.report(model)
  T.eq(r.problems, 0)
  T.eq(#r.entries, 7, "every module that forward calls")
  T.truthy(same_state(model, state_of(model)))
end)

T.done()
