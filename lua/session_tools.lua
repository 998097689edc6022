-- lua/session_tools.lua — the debugger's whole-graph tools: :diff (node-keyed graph diff) and
-- :report (every export problem per submodule). Layer: lua (embedded; loaded after session.lua,
-- whose shared state it reaches through fxdb._dbg).

local E = torch._export
local D = fxdb._dbg

local function counted(word, n) return n .. " " .. word .. (n == 1 and "" or "s") end

-- ==== :diff ======================================================================================

local DIFF_MT = {__tostring = function(d) return d.text end}

local function resolve_graph(g, which)
  if type(g) == "string" then return fxdb.graph(g), g end
  if type(g) == "userdata" or type(g) == "table" then
    local mt = getmetatable(g)
    if mt and mt.__name == "Graph" then return g, "graph" end
    local ok, gg = pcall(function() return g.graph end)
    if ok and gg then
      return gg, (mt and mt.__name == "ExportedProgram") and "program" or "graph"
    end
  end
  error("bad argument #" .. which ..
    " to 'diff' (a stage name, Graph or ExportedProgram expected, got " ..
        type(g) .. ")", 3)
end

-- The ExportedProgram behind a diff argument: the program itself, or for the stages "exported"
-- and "functional" the current program (whose graph g is); nil for raw and unlifted graphs.
local function program_of(arg, g)
  local mt = getmetatable(arg)
  if type(mt) == "table" and mt.__name == "ExportedProgram" then return arg end
  if (arg == "exported" or arg == "functional") and fxdb.current and fxdb.current.graph == g then
    return fxdb.current
  end
  return nil
end

-- fxdb.diff(g1, g2) -> Diff: node-keyed comparison. A node of g2 matches the node of g1 with the
-- same name, else the g1 node it came from (meta.from_node: raw -> functional). Markers:
-- "=" same target and type, "~" changed, "-" only in g1, "+" only in g2. Then the outputs of
-- both (d.outputs) and, when both sides are programs, their signatures spec by spec
-- (d.signature: {marker, name, description}).
function fxdb.diff(g1, g2)
  local a, la = resolve_graph(g1, 1)
  local b, lb = resolve_graph(g2, 2)
  if la == "graph" or la == "program" then la = "G1" end
  if lb == "graph" or lb == "program" then lb = "G2" end
  local an, bn = a.nodes, b.nodes
  local function has_from(nodes)
    for _, n in ipairs(nodes) do
      if #(n.meta.from_node or {}) > 0 then return true end
    end
    return false
  end
  -- raw vs a later stage: match through from_node (the later stage names its raw origins);
  -- two graphs of the same stage (strict vs non-strict): by name
  local fa, fb = has_from(an), has_from(bn)
  local match_of, matched = {}, {}   -- g1 node -> g2 node; g2 node -> true
  local by_a, by_b = {}, {}
  for _, n in ipairs(an) do by_a[n.name] = n end
  for _, n in ipairs(bn) do by_b[n.name] = n end
  local function pair(x, y)
    if x and y and not match_of[x] and not matched[y] then match_of[x] = y; matched[y] = true end
  end
  if fb and not fa then
    for _, n in ipairs(bn) do
      for _, src in ipairs(n.meta.from_node or {}) do
        local f = src.name
        if by_a[f] and not match_of[by_a[f]] then pair(by_a[f], n) break end
      end
    end
  elseif fa and not fb then
    for _, n in ipairs(an) do
      for _, src in ipairs(n.meta.from_node or {}) do
        local f = src.name
        if by_b[f] and not matched[by_b[f]] then pair(n, by_b[f]) break end
      end
    end
  end
  for _, n in ipairs(an) do
    if not match_of[n] and by_b[n.name] and not matched[by_b[n.name]] then pair(n, by_b[n.name]) end
  end
  local d = setmetatable({same = {}, changed = {}, removed = {}, added = {}}, DIFF_MT)
  local lines = {"diff " .. la .. " -> " .. lb .. "  (node-keyed: " ..
    ((fa ~= fb) and "from_node, then same name)" or "same name)")}
  local function desc(n) return n.op == "call_function" and n.target or n.op end
  local w = 22 -- the name column widens for long names
  for _, n in ipairs(an) do w = math.max(w, #n.name + 1) end
  for _, n in ipairs(bn) do w = math.max(w, #n.name + 1) end
  for _, n in ipairs(an) do
    local m = match_of[n]
    if m then
      local same = desc(n) == desc(m) and n.type == m.type and n.name == m.name
      local rec = {a = n, b = m}
      if same then
        d.same[#d.same + 1] = rec
        lines[#lines + 1] = string.format("  = %-" .. w .. "s %s", "%" .. n.name, desc(n))
      else
        d.changed[#d.changed + 1] = rec
        local names = n.name == m.name and ("%" .. n.name) or ("%" .. n.name .. " -> %" .. m.name)
        local what = desc(n) == desc(m) and desc(n) or (desc(n) .. " -> " .. desc(m))
        if n.type ~= m.type then what = what .. "  " .. n.type .. " -> " .. m.type end
        lines[#lines + 1] = string.format("  ~ %-" .. w .. "s %s", names, what)
      end
    else
      d.removed[#d.removed + 1] = n
      lines[#lines + 1] = string.format("  - %-" .. w .. "s %s", "%" .. n.name, desc(n))
    end
  end
  local mset = {}
  for _, n in pairs(match_of) do mset[n] = true end
  for _, n in ipairs(bn) do
    if not mset[n] then
      d.added[#d.added + 1] = n
      local from = {}
      for i, src in ipairs(n.meta.from_node or {}) do from[i] = src.name end
      lines[#lines + 1] = string.format("  + %-" .. w .. "s %s%s", "%" .. n.name, desc(n),
        #from > 0 and ("   (from %" .. table.concat(from, ", %") .. ")") or "")
    end
  end
  lines[#lines + 1] = string.format("%d same, %d changed, %d only in %s, %d only in %s",
    #d.same, #d.changed, #d.removed, la, #d.added, lb)
  -- the outputs, each with its type and (where the side has a signature) its kind
  local pa, pb = program_of(g1, a), program_of(g2, b)
  local function outputs(g, ep)
    local kinds = {}
    if ep then
      for _, s in ipairs(ep.graph_signature.output_specs) do
        kinds[s.arg.name] = s.kind .. (s.target and (" '" .. s.target .. "'") or "")
      end
    end
    local out = {}
    local last = g.nodes[#g.nodes]
    for _, n in ipairs(last and last.op == "output" and last.args[1] or {}) do
      if type(n) == "userdata" and n.name then
        out[#out + 1] = n.name .. " " .. (n.type or "") .. (kinds[n.name] and (" " .. kinds[n.name]) or "")
      end
    end
    return out
  end
  d.outputs = {outputs(a, pa), outputs(b, pb)}
  local oa, ob = table.concat(d.outputs[1], ", "), table.concat(d.outputs[2], ", ")
  if oa == ob then
    lines[#lines + 1] = "outputs: the same  (" .. oa .. ")"
  else
    local w = math.max(#la, #lb)
    lines[#lines + 1] = "outputs:"
    lines[#lines + 1] = string.format("  %-" .. w .. "s  (%s)", la, oa)
    lines[#lines + 1] = string.format("  %-" .. w .. "s  (%s)", lb, ob)
  end
  -- the graph signatures, spec by spec (matched by argument name), when both sides have one
  if pa and pb then
    d.signature = {}
    local nsame = 0
    for _, which in ipairs{"input_specs", "output_specs"} do
      local sa, sb, by_b, seen = pa.graph_signature[which], pb.graph_signature[which], {}, {}
      for _, s in ipairs(sb) do by_b[s.arg.name] = s end
      local function desc(s)
        return s.kind .. (s.target and (" target='" .. s.target .. "'") or "") ..
          (s.persistent ~= nil and (" persistent=" .. (s.persistent and "True" or "False")) or "")
      end
      for _, s in ipairs(sa) do
        local o = by_b[s.arg.name]
        seen[s.arg.name] = true
        if not o then
          d.signature[#d.signature + 1] = {"-", s.arg.name, desc(s)}
        elseif desc(o) ~= desc(s) then
          d.signature[#d.signature + 1] = {"~", s.arg.name, desc(s) .. " -> " .. desc(o)}
        else
          nsame = nsame + 1
        end
      end
      for _, s in ipairs(sb) do
        if not seen[s.arg.name] then d.signature[#d.signature + 1] = {"+", s.arg.name, desc(s)} end
      end
    end
    if #d.signature == 0 then
      lines[#lines + 1] = "signature: the same  (" .. nsame .. " specs)"
    else
      lines[#lines + 1] = "signature: " .. nsame .. " specs the same, " .. #d.signature .. " differ:"
      for _, r in ipairs(d.signature) do
        lines[#lines + 1] = string.format("  %s %-22s %s", r[1], r[2], r[3])
      end
    end
  elseif pa or pb then
    lines[#lines + 1] = "signature: only " .. (pa and la or lb) .. " has one (:sig prints it)"
  end
  d.text = table.concat(lines, "\n")
  return d
end

-- ==== :report ====================================================================================

local REPORT_MT = {__tostring = function(r) return r.text end}

-- The arguments of the first call of each submodule during an eager forward (a call hook on
-- nn.lua's module call); the module's state is put back afterwards.
local function capture_inputs(m, args)
  local callfn = debug.getregistry()["fxdb.module_call"]
  local seen = {}
  local state = m:_named_state()
  local saved = {}
  for i, s in ipairs(state) do saved[i] = s.tensor:clone() end
  local snap = E.snapshot(m)
  local function hook(ev)
    local info = debug.getinfo(2, "f")
    if info and info.func == callfn then
      local self = select(2, debug.getlocal(2, 1))
      if self and not seen[self] then
        local a = {}
        for i = 1, 64 do
          local name, v = debug.getlocal(2, -i)
          if not name then break end
          a[i] = v
        end
        a.n = #a
        seen[self] = a
      end
    end
  end
  local old = table.pack(debug.gethook())
  debug.sethook(hook, "c")
  local ok, err = pcall(function() return m(table.unpack(args, 1, args.n or #args)) end)
  debug.sethook(table.unpack(old, 1, old.n))
  E.restore(snap)
  local restore_values = function() for i, s in ipairs(state) do s.tensor:copy_(saved[i]) end end
  if torch.no_grad then torch.no_grad(restore_values) else restore_values() end
  return seen, ok, err
end

-- fxdb.report(m, args, opts) -> Report: exports m and each submodule (with the inputs it got in an
-- eager run) and lists every problem: module, error kind and message, location, hint, and the
-- partial raw graph up to the failure.
function fxdb.report(m, args, opts)
  m = m or fxdb.current_module
  if m == nil then error("fxdb.report needs a module (:report EXPR, or :export one first)", 2) end
  if type(m) ~= "table" or not m.named_modules then
    error("bad argument #1 to 'report' (Module expected, got " .. type(m) .. ")", 2)
  end
  args = args or m.example_inputs or (m == fxdb.current_module and fxdb.current_args) or {}
  opts = opts or {}
  local strict = opts.strict ~= false
  D.release_module(m)
  local inputs, ok, err = capture_inputs(m, args)
  inputs[m] = args
  local lines = {}
  local problems, checked = 0, 0
  local entries = {}
  for _, pair in ipairs(m:named_modules()) do
    local path, mod = pair[1], pair[2]
    local a = inputs[mod]
    local cls = tostring(mod):match("^([%w_]+)") or "Module"
    local label = (path == "" and "<root>" or path) .. " (" .. cls .. ")"
    if a then
      checked = checked + 1
      -- the root takes opts.dynamic_shapes; every module its own .dynamic_shapes (fxdb.trace)
      local s = fxdb.trace(mod, a, {strict = strict, real = opts.real, detached = true,
                                    dynamic_shapes = mod == m and opts.dynamic_shapes or nil})
      local saved = D.breaks
      D.breaks = {}
      local okc, res = pcall(function() return s:continue() end)
      D.breaks = saved
      local e = {path = path, module = mod, ok = okc and s.status == "finished"}
      if not okc then
        e.error = res
      elseif s.status == "error" then
        e.error = s.error
        e.graph = s.raw
      end
      entries[#entries + 1] = e
      local nguards = #((s:_shape_info() or {}).guards or {})
      if e.ok then
        lines[#lines + 1] = string.format("  %-28s ok (%s%s)", label, counted("node", s.count),
          nguards > 0 and (", " .. counted("guard", nguards)) or "")
      else
        problems = problems + 1
        local er = e.error
        if type(er) == "table" then
          lines[#lines + 1] = string.format("  %-28s %s (%s): %s", label,
            er.code == "FX_EEXPORT" and "export error" or "error", tostring(er.kind),
              tostring(er.message))
          if er.location then
            local src = er.source and ("   " .. er.source) or ""
            lines[#lines + 1] = "      at " .. er.location .. src
          end
          if er.hint then lines[#lines + 1] = "      hint: " .. er.hint end
        else
          lines[#lines + 1] = string.format("  %-28s error: %s", label, tostring(er))
        end
        if e.graph then
          local ns = {}
          for _, n in ipairs(e.graph.nodes) do
            if n.op == "call_function" then ns[#ns + 1] = "%" .. n.name end
          end
          local shown = ns
          if #ns > 8 then
            shown = {"..."}
            for i = #ns - 7, #ns do shown[#shown + 1] = ns[i] end
          end
          lines[#lines + 1] = "      partial graph (" .. counted("op", #ns) .. "): " ..
            (#ns > 0 and table.concat(shown, " ") or "(empty)")
        end
      end
    else
      lines[#lines + 1] = string.format("  %-28s not called in forward", label)
    end
  end
  local head = string.format("export report for %s (%s): %s checked, %s",
    tostring(m):match("^([%w_]+)") or "module",
    strict and "strict" or "non-strict", counted("module", checked), counted("problem", problems))
  if not ok then
    local msg = type(err) == "table" and err.message or err
    head = head .. "\n  (the eager run failed: " .. tostring(msg) .. ")"
  end
  table.insert(lines, 1, head)
  return setmetatable({entries = entries, problems = problems, text = table.concat(lines, "\n")},
    REPORT_MT)
end
