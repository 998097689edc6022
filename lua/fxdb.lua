-- lua/fxdb.lua — the global `fxdb`: the verbs behind the REPL's colon commands.
-- Layer: lua (embedded). Every REPL command is a thin call of one of these, so a script and a
-- person use the same implementation (docs/ARCHITECTURE.md §7). C primitives (fxdb.provenance, fxdb._run,
-- fxdb._max_abs_diff, fxdb._readable) come from lua/lx_debug.c; fxdb.render from repl/.

fxdb = fxdb or {}
local E = torch._export

-- ---- the current program -------------------------------------------------------------------------

-- opts with dynamic_shapes defaulting to m.dynamic_shapes (as args default to m.example_inputs),
-- so that :export and :trace of a module that names its Dims export it dynamic.
function fxdb._module_opts(m, opts)
  if type(m) ~= "table" or m.dynamic_shapes == nil or (opts and opts.dynamic_shapes ~= nil) then
    return opts
  end
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.dynamic_shapes = m.dynamic_shapes
  return o
end

-- fxdb.export(m, args, opts): export and make the result current (for :graph, :why, :run ...).
function fxdb.export(m, args, opts)
  if args == nil and type(m) == "table" then args = m.example_inputs end
  return torch.export.export(m, args or {}, fxdb._module_opts(m, opts)) -- which makes it current
end

local function current(ep)
  ep = ep or fxdb.current
  if ep == nil then error("no exported program: run :export first (or fxdb.export(m, args))", 3) end
  return ep
end

-- fxdb.graph(stage[, ep]): "exported" (default) / "functional", "raw", "unlifted".
function fxdb.graph(stage, ep)
  ep = current(ep)
  stage = stage or "exported"
  if stage == "exported" or stage == "functional" then return ep.graph end
  if stage == "raw" then return ep.raw_graph end
  if stage == "unlifted" then return ep:module().graph end
  error("unknown graph stage '" .. tostring(stage) .. "' (raw, functional, exported, unlifted)", 2)
end

-- fxdb.code([ep]): the program's readable code (GraphModule.print_readable).
function fxdb.code(ep)
  return fxdb._readable(current(ep).graph)
end

function fxdb.sig(ep)
  return current(ep).graph_signature
end

function fxdb.node(name, ep)
  local n = current(ep).graph:node(name)
  if not n then error("no node named '" .. tostring(name) .. "'", 2) end
  return n
end

-- A list of nodes that prints one per line: %name, its target (or op) and its type, in columns.
local function node_list(nodes, title)
  local rows, w1, w2 = {}, 0, 0
  for i, n in ipairs(nodes) do
    local what = n.op == "call_function" and tostring(n.target) or n.op
    rows[i] = {"%" .. n.name, what, n.type or ""}
    w1, w2 = math.max(w1, #rows[i][1]), math.max(w2, #what)
  end
  local lines = {}
  for i, r in ipairs(rows) do
    lines[i] = (string.format("  %-" .. w1 .. "s  %-" .. w2 .. "s  %s", r[1], r[2], r[3]):gsub("%s+$", ""))
  end
  return setmetatable({table.unpack(nodes)}, {__tostring = function()
    return title .. (#lines > 0 and ("\n" .. table.concat(lines, "\n")) or " (none)")
  end})
end

function fxdb.users(name, ep)
  local n = fxdb.node(name, ep)
  return node_list(n.users, "users of %" .. n.name .. ":")
end

function fxdb.inputs(name, ep)
  local n = fxdb.node(name, ep)
  local ins, seen = {}, {}
  local function walk(a)
    if type(a) == "table" and getmetatable(a) == nil then
      for _, x in ipairs(a) do walk(x) end
    elseif type(a) == "userdata" and a.name and a.op and not seen[a] then
      seen[a] = true
      ins[#ins + 1] = a
    end
  end
  walk(n.args)
  return node_list(ins, "inputs of %" .. n.name .. ":")
end

function fxdb.find(q, ep)
  return node_list(current(ep).graph:find(q), "nodes matching '" .. tostring(q) .. "':")
end

function fxdb.print(v)
  print(v)
end

-- fxdb.reinplace(ep): the unlifted module with functional ops on state turned back into in-place
-- ops where nothing reads the old value later (and the copy_ they make redundant removed).
function fxdb.reinplace(ep)
  local gm = current(ep):module({reinplace = true})
  fxdb._reinplace_notes = gm.reinplace_notes -- :info reinplace
  return gm
end

-- ---- printing big programs ------------------------------------------------------------------------

local SUMMARY_LINES = 100 -- a program or graph longer than this prints summarized in the REPL

local function lines_of(text)
  local out = {}
  for l in (text .. "\n"):gmatch("(.-)\n") do out[#out + 1] = l end
  return out
end

local function count_ops(g)
  local n = 0
  for _, node in ipairs(g.nodes) do if node.op == "call_function" then n = n + 1 end end
  return n
end

-- The signature of ep in a few lines: inputs and outputs counted by kind, user inputs and outputs
-- named.
local function signature_summary(ep)
  local function part(specs)
    local counts, order, users = {}, {}, {}
    for _, s in ipairs(specs) do
      if not counts[s.kind] then counts[s.kind] = 0; order[#order + 1] = s.kind end
      counts[s.kind] = counts[s.kind] + 1
      if s.kind == "USER_INPUT" or s.kind == "USER_OUTPUT" then users[#users + 1] = s.arg.name end
    end
    local parts = {}
    for _, k in ipairs(order) do parts[#parts + 1] = counts[k] .. " " .. k end
    return table.concat(parts, ", ") .. (#users > 0 and ("  (" .. table.concat(users, ", ") .. ")") or "")
  end
  local sig = ep.graph_signature
  return {"Graph signature (summarized; :sig prints it whole):",
          "    # inputs:  " .. part(sig.input_specs), "    # outputs: " .. part(sig.output_specs)}
end

-- fxdb.summary(v[, max_lines]) -> text: tostring(v), except that an ExportedProgram or Graph
-- longer than max_lines (default 100) is summarized: the head of its code, its signature (counted
-- by kind when long), and how many lines and ops were left out. The REPL prints :export, :graph
-- and :print this way; `:graph --all` and print() show everything.
function fxdb.summary(v, max_lines)
  max_lines = max_lines or SUMMARY_LINES
  local mt = getmetatable(v)
  local kind = type(mt) == "table" and mt.__name
  if kind ~= "ExportedProgram" and kind ~= "Graph" then return tostring(v) end
  local text = tostring(v)
  local lines = lines_of(text)
  if #lines <= max_lines then return text end
  local head = math.floor(max_lines * 2 / 3)
  local out = {}
  if kind == "Graph" then
    for i = 1, head do out[#out + 1] = lines[i] end
    out[#out + 1] = string.format("    ... %d more lines (%d nodes, %d ops in all; :graph --all " ..
      "prints them all)", #lines - head - 1, #v.nodes, count_ops(v))
    out[#out + 1] = lines[#lines]
    return table.concat(out, "\n")
  end
  local sig_at = #lines + 1
  for i, l in ipairs(lines) do if l == "Graph signature:" then sig_at = i break end end
  for i = 1, math.min(head, sig_at - 1) do out[#out + 1] = lines[i] end
  out[#out + 1] = string.format("            ... %d more lines of code (%d ops in all; :graph " ..
    "--all prints the graph, print(fxdb.current) the whole program)", sig_at - 1 - head,
    count_ops(v.graph))
  out[#out + 1] = ""
  local rest = #lines - sig_at + 1
  if rest <= max_lines - head then
    for i = sig_at, #lines do out[#out + 1] = lines[i] end
  else
    for _, l in ipairs(signature_summary(v)) do out[#out + 1] = l end
    for i = sig_at, #lines do
      if lines[i]:match("^Range constraints") then out[#out + 1] = "" out[#out + 1] = lines[i] end
    end
  end
  return table.concat(out, "\n")
end

-- ---- running and checking -------------------------------------------------------------------------

-- The graph's user inputs for a call's arguments: every tensor, pytrees flattened (export.lua).
local function user_tensors(args)
  return E.flatten_inputs(args or {}, args and (args.n or #args) or 0)
end

-- Copies of the arguments with every tensor (also inside tables) cloned.
local function clone_args(v)
  if torch.is_tensor(v) then return v:clone() end
  if type(v) ~= "table" or getmetatable(v) ~= nil then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = clone_args(x) end
  return out
end

local RUN_MT = {}
RUN_MT.__index = RUN_MT
RUN_MT.__tostring = function(r)
  local lines = {}
  for i, spec in ipairs(r.specs) do
    local v = r.values[i]
    local label = spec.kind == "USER_OUTPUT" and ("output " .. spec.arg.name)
      or (spec.kind .. " " .. (spec.target or spec.arg.name))
    lines[#lines + 1] = label .. " = " .. tostring(v)
  end
  return table.concat(lines, "\n")
end

-- fxdb.run(ep, args): executes the exported program on the CPU kernels. Returns a result with
-- `outputs` (user outputs, in order), `mutations` (target -> new value), `token` (the output
-- effect token, when effectful ops thread one) and `values` (every output of the graph: token,
-- mutations, then user outputs).
function fxdb.run(ep, args, opts)
  ep = current(ep)
  args = args or fxdb.current_args or {}
  local values = fxdb._run(ep, user_tensors(args))
  local specs = ep.graph_signature.output_specs
  local r = setmetatable({values = values, specs = specs, outputs = {}, mutations = {}}, RUN_MT)
  for i, spec in ipairs(specs) do
    if spec.kind == "USER_OUTPUT" then r.outputs[#r.outputs + 1] = values[i]
    elseif spec.kind == "TOKEN" then r.token = values[i] -- the output effect token
    else r.mutations[spec.target] = values[i] end
  end
  return r
end

-- Tolerances of torch.testing.assert_close, per dtype.
local TOL = {
  [tostring(torch.float32)] = {1.3e-6, 1e-5}, [tostring(torch.float64)] = {1e-7, 1e-7},
  [tostring(torch.float16)] = {1e-3, 1e-5}, [tostring(torch.bfloat16)] = {1.6e-2, 1e-5},
  [tostring(torch.complex64)] = {1.3e-6, 1e-5}, [tostring(torch.complex128)] = {1e-7, 1e-7},
}

local CHECK_MT = {}
CHECK_MT.__tostring = function(c)
  local lines = {string.format("check: %s  (%d outputs, %d mutations; max abs error %g)",
    c.ok and "OK" or "MISMATCH", c.noutputs, c.nbuffers, c.max_abs_error)}
  local w1, w2 = 28, 12 -- columns widen for long state names and types
  for _, e in ipairs(c.entries) do w1, w2 = math.max(w1, #e.what), math.max(w2, #e.type) end
  for _, e in ipairs(c.entries) do
    lines[#lines + 1] = string.format("  %-" .. w1 .. "s %-" .. w2 .. "s max abs error %g%s", e.what,
      e.type, e.err, e.ok and "" or "   <-- mismatch")
  end
  return table.concat(lines, "\n")
end

-- fxdb.check(m, ep, args): eager module vs exported program on the same inputs: user outputs and
-- every buffer the program mutates. The module is left exactly as it was (state values copied
-- back, attributes restored).
function fxdb.check(m, ep, args)
  m = m or fxdb.current_module
  ep = current(ep)
  args = args or fxdb.current_args or {}
  if m == nil then error("fxdb.check needs the module (export it with :export first)", 2) end
  -- exported
  local r = fxdb.run(ep, args)
  -- eager, then put every state value back
  local state = m:_named_state()
  local saved = {}
  for i, s in ipairs(state) do saved[i] = s.tensor:clone() end
  local snap = E.snapshot(m)
  -- eager runs on clones of the inputs, so input mutations can be compared and args stay intact
  local eager_args = clone_args(args)
  local user_index = user_tensors(eager_args)
  local eager_inputs = {}
  local k = 0
  for _, spec in ipairs(ep.graph_signature.input_specs) do
    if spec.kind == "USER_INPUT" then
      k = k + 1
      eager_inputs[spec.arg.name] = user_index[k]
    end
  end
  local eager = table.pack(m(table.unpack(eager_args, 1, args.n or #args)))
  -- outputs may alias module state (return self.cache): copy them before the state is restored
  for i = 1, eager.n do eager[i] = clone_args(eager[i]) end
  local eager_state = {}
  for _, s in ipairs(m:_named_state()) do eager_state[s.path] = s.tensor:clone() end
  E.restore(snap)
  torch.no_grad(function()
    for i, s in ipairs(state) do s.tensor:copy_(saved[i]) end
  end)

  local flat = E.flatten_outputs(eager)
  local c = setmetatable({ok = true, max_abs_error = 0, entries = {}, noutputs = 0, nbuffers = 0}, CHECK_MT)
  local function compare(what, ref, got)
    local e = {what = what, type = torch.is_tensor(ref) and fxdb._type_str(ref) or type(ref)}
    if torch.is_tensor(ref) and torch.is_tensor(got) then
      e.err = fxdb._max_abs_diff(ref, got)
      local tol = TOL[tostring(ref.dtype)] or {0, 0}
      e.ok = e.err <= tol[2] + tol[1] * fxdb._max_abs(ref)
      local got_type = fxdb._type_str(got)
      if got_type ~= e.type then -- values may agree while the dtype or shape is wrong
        e.ok = false
        e.type = e.type .. " vs " .. got_type
      end
    else
      e.err = (ref == got) and 0 or math.huge
      e.ok = ref == got
    end
    if e.err > c.max_abs_error then c.max_abs_error = e.err end
    c.ok = c.ok and e.ok
    c.entries[#c.entries + 1] = e
  end
  for i, got in ipairs(r.outputs) do
    c.noutputs = c.noutputs + 1
    compare("output " .. (i - 1), flat[i], got)
  end
  for i, spec in ipairs(r.specs) do -- signature order, so reports are stable
    if spec.kind ~= "USER_OUTPUT" and spec.kind ~= "TOKEN" then
      c.nbuffers = c.nbuffers + 1
      if spec.kind == "USER_INPUT_MUTATION" then
        compare("input " .. spec.target, eager_inputs[spec.target], r.values[i])
      else
        compare("buffer " .. spec.target, eager_state[spec.target], r.values[i])
      end
    end
  end
  return c
end

-- ---- the debugger ----------------------------------------------------------------------------------
-- The debugger verbs (fxdb.trace, step, next, finish, continue, until, break_on, watch, delete,
-- where, list, display, info, set, reverse_step, diff, report, ...) live in lua/session.lua, which
-- runs after this file and extends fxdb.run ({step = true}), fxdb.graph, fxdb.node and fxdb.find
-- so that they see the paused session's graph.
