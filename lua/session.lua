-- lua/session.lua — the debugger: trace sessions, run sessions, breakpoints, stops, and the fxdb
-- verbs behind the REPL's stepping commands (:trace :step :next :finish :continue :until :break
-- :watch :where :list :print :display :info :set :reverse-step ...); :diff and :report live in
-- lua/session_tools.lua.
-- Layer: lua (embedded; runs after export.lua and fxdb.lua, whose verbs it extends).
--
-- A trace session runs the same export machinery as torch.export.export (export.lua's
-- export_begin / export_resume / export_complete, with its snapshot and restore), but resumes
-- the coroutine that runs forward step by step. The tracer hands every recorded node to the
-- session's hook (lua/lx_session.c), which pauses the coroutine once the statement that recorded
-- it has finished; the driver here then looks at each node recorded since the last pause, in
-- order, and decides
-- whether it is a stop: the stepping mode (step N nodes, next line, finish the module call) or a
-- breakpoint. A stop returns a Stop object whose tostring is the stop banner of docs/GUIDE.md §7. While
-- paused, the REPL runs in the main thread with the eager context: nothing it does is recorded.
--
-- A run session steps the interpreter over an exported graph (fxdb._interp, every value kept),
-- with the same breakpoints, :print of node values, :set (inject a value, replay what follows)
-- and :reverse-step (replay from the start: execution is deterministic).
--
-- Invariants: at most one current session (fxdb.session); breakpoints and displays belong to
-- fxdb, not to a session, so they survive from one session to the next (as in gdb); a trace
-- session restores the module's state as soon as forward has ended (finished or failed) or the
-- session is abandoned, so the module is exactly as before, as after any export.

local E = torch._export

-- An error that is Ctrl-C's: the hook's fxdb error (kind "interrupted", lua/lx_open.c), or a
-- plain "interrupted!" string.
local function is_interrupt(res)
  return (type(res) == "string" and res:find("interrupted!", 1, true) ~= nil) or
    (type(res) == "table" and res.kind == "interrupted")
end
local D = {breaks = {}, next_id = 1, displays = {}, next_display = 1}
fxdb._dbg = D

-- ==== small helpers ==============================================================================

local function is_embedded(src) return type(src) == "string" and src:sub(1, 7) == "=[fxdb " end

local source_cache = {}
-- Lines of a source file (cached), or nil.
local function source_lines(file)
  local c = source_cache[file]
  if c == nil then
    c = false
    local fh = io.open(file, "r")
    if fh then
      c = {}
      for l in fh:lines() do c[#c + 1] = l end
      fh:close()
    end
    source_cache[file] = c
  end
  return c or nil
end

local function trim(s) return (tostring(s or ""):gsub("^%s+", ""):gsub("%s+$", "")) end

-- text with `prefix` before every line but the first (blank lines stay blank)
local function indent_rest(text, prefix)
  return (text:gsub("\n([^\n])", "\n" .. prefix .. "%1"))
end

local function type_str(v)
  if torch.is_tensor(v) then return fxdb._type_str(v) end
  return type(v)
end

local function mod_str(e)
  if not e then return "<none>" end
  return (e.path == "" and "<root>" or e.path) .. " (" .. tostring(e.cls) .. ")"
end

local function node_mods(n) return n.meta.nn_module_stack or {} end
local function node_frames(n) return fxdb._node_frames(n) end

-- "file:line" of a frame, and whether file names f (f may be a path suffix: "model.lua").
local function loc_str(f) return f and (f.file .. ":" .. f.line) or "?" end
local function file_matches(file, want)
  if file == want then return true end
  return #file > #want and file:sub(-#want - 1) == "/" .. want
end

-- Does node target t ("aten.add_.Tensor") match the op query q ("aten.add_", "add_",
-- "aten.add_.Tensor", "torch.ops.aten.add_", "aten::add_", "mylib::foo", "auto_functionalized")?
-- As g:find does.
local function target_matches(t, q)
  if not t then return false end
  q = q:gsub("^torch%.ops%.", ""):gsub("^([%w_]+)::", "%1.")
  if not q:find(".", 1, true) then
    if t == q or t == "higher_order." .. q then return true end -- "auto_functionalized"
    q = "aten." .. q
  end
  return t == q or t:sub(1, #q + 1) == q .. "."
end

-- The short op name of a node for view chains: "select(1, 0)" with its non-node arguments.
local function short_call(n)
  local name = n.target:gsub("^aten%.", ""):gsub("%.[%w_]+$", "")
  local parts = {}
  for i, a in ipairs(n.args) do
    if i > 1 then
      if type(a) == "userdata" and a.name then parts[#parts + 1] = "%" .. a.name
      elseif type(a) == "table" then
        local xs = {}
        for _, x in ipairs(a) do
          xs[#xs + 1] = (type(x) == "userdata" and x.name) and ("%" .. x.name) or tostring(x)
        end
        parts[#parts + 1] = "[" .. table.concat(xs, ", ") .. "]"
      elseif a ~= nil then parts[#parts + 1] = tostring(a) end
    end
  end
  return name .. "(" .. table.concat(parts, ", ") .. ")"
end

local function is_node(v)
  local mt = type(v) == "userdata" and getmetatable(v)
  return mt and mt.__name == "Node" or false
end

-- Node references among a node's arguments, flattened, in order.
local function node_inputs(n)
  local out, seen = {}, {}
  local function walk(a)
    if is_node(a) then
      if not seen[a] then seen[a] = true; out[#out + 1] = a end
    elseif type(a) == "table" then
      for _, x in ipairs(a) do walk(x) end
    end
  end
  for _, a in ipairs(n.args) do walk(a) end
  return out
end

local function current_session(s)
  s = s or fxdb.session
  if s == nil then
    error("no debugger session: start one with :trace EXPR (fxdb.trace(m, args)) or " ..
          ":run --step (fxdb.run(ep, args, {step = true}))", 3)
  end
  return s
end

-- ==== breakpoints ================================================================================

local KINDS = {op = true, line = true, module = true, node = true, mutation = true, view = true,
               item = true, guard = true, watch = true}

-- Parses "WHERE [if COND]" (or a table {op = "aten.add_", cond = ...} / {"mutation"}) into
-- {kind, arg, cond}. Shorthands: "aten.x" = op, "%n" = node, "file.lua:12" = line.
local function parse_where(spec)
  local kind, arg, cond
  if type(spec) == "table" then
    cond = spec.cond or spec["if"]
    for k in pairs(KINDS) do
      if spec[k] ~= nil then kind, arg = k, spec[k] ~= true and tostring(spec[k]) or nil end
    end
    if not kind and spec[1] then kind, arg = spec[1], spec[2] end
  else
    local text = trim(spec)
    local w, c = text:match("^(.-)%s+if%s+(.+)$")
    if w then text, cond = w, c end
    kind, arg = text:match("^(%S+)%s*(.-)$")
    if arg == "" then arg = nil end
    if kind and not KINDS[kind] and arg == nil then
      if kind:sub(1, 1) == "%" then kind, arg = "node", kind
      elseif kind:match("^aten[%.:]") or kind:match("^torch%.ops") then kind, arg = "op", kind
      elseif kind:match(":%d+$") then kind, arg = "line", kind end
    end
  end
  if not KINDS[kind or ""] then
    error("unknown breakpoint '" .. tostring(type(spec) == "table" and kind or spec) ..
          "' (WHERE: op aten.add_ | line FILE:N | module PATH | node %n | mutation | view | " ..
          "item | guard [SYMBOL])",
            3)
  end
  if (kind == "op" or kind == "line" or kind == "module" or kind == "node" or kind == "watch")
     and not arg then
    error("breakpoint '" .. kind .. "' needs an argument (e.g. :break " ..
          ({op = "op aten.add_", line = "line model.lua:12", module = "module layers.0",
            node = "node %add", watch = "watch state"})[kind] .. ")", 3)
  end
  if kind == "node" then arg = arg:gsub("^%%", "") end
  if kind == "guard" and arg and not arg:match("^[su]%d+$") then
    error("bad guard breakpoint '" .. arg .. "' (a symbol such as s0, or nothing for every guard)",
          3)
  end
  if kind == "line" then
    local f, l = arg:match("^(.*):(%d+)$")
    if not f then
      if arg:match("^%d+$") then
        f, l = nil, arg
      else
        error("bad line breakpoint '" .. arg .. "' (FILE:N, e.g. model.lua:12)", 3)
      end
    end
    return {kind = kind, arg = arg, file = f, line = tonumber(l), cond = cond}
  end
  return {kind = kind, arg = arg, cond = cond}
end

local function bp_desc(b)
  local d = b.kind .. (b.arg and (" " .. (b.kind == "node" and "%" or "") .. b.arg) or "")
  if b.cond then d = d .. " if " .. b.cond end
  return d
end

local BREAK_MT = {__tostring = function(b)
  return string.format("%s %d: %s", b.kind == "watch" and "watchpoint" or "breakpoint", b.id,
    bp_desc(b))
end}

-- fxdb.break_on(spec[, opts]) -> breakpoint. spec: "op aten.add_ if x:dim() > 1" or a table;
-- opts.temporary (:tbreak) deletes it at its first hit.
function fxdb.break_on(spec, opts)
  if type(spec) ~= "string" and type(spec) ~= "table" then
    error("bad argument #1 to 'break_on' (WHERE string or table expected, got " .. type(spec) ..
      ")", 2)
  end
  local b = parse_where(spec)
  if b.kind == "line" and not b.file then
    -- a bare line number: the file of the current stop
    local s = fxdb.session
    local f = s and s:_frame_info()
    if not f then error("no current file for line " .. b.line .. ": give FILE:N", 2) end
    b.file, b.arg = f.file, f.file .. ":" .. b.line
  end
  if b.kind == "line" then
    -- a line that cannot record an op (blank, a comment, past the end) is refused with the reason
    local f = io.open(b.file)
    if f then
      local k, text = 0, nil
      for l in f:lines() do
        k = k + 1
        if k == b.line then text = l break end
      end
      f:close()
      local why = text == nil and ("is past the end of the file (" .. k .. " lines)") or
        (text:match("^%s*$") and "is blank") or (text:match("^%s*%-%-") and "is a comment") or nil
      if why then
        error("no op is recorded at line " .. b.arg .. ": the line " .. why, 2)
      end
    end
  end
  if b.cond then
    local fn, msg = load("return " .. b.cond, "=(condition)", "t", {})
    if not fn then error("bad condition '" .. b.cond .. "': " .. msg, 2) end
  end
  b.id = D.next_id
  D.next_id = D.next_id + 1
  b.enabled, b.hits, b.temporary = true, 0, opts and opts.temporary or false
  setmetatable(b, BREAK_MT)
  D.breaks[#D.breaks + 1] = b
  return b
end

-- The names a watchpoint can name for the module being debugged (a session's, else the current
-- export's): buffer and parameter paths, placeholder names and forward's parameter names; nil
-- when no module or program is known yet (a watchpoint may then be set before :trace).
local function watchable()
  local s = fxdb.session
  local m = (s and s.m) or fxdb.current_module
  local ep = (s and s.ep) or fxdb.current
  if m == nil and ep == nil then return nil end
  local names, inputs = {}, {}
  if m and m._named_state then
    for _, st in ipairs(m:_named_state()) do names[#names + 1] = st.path end
    local info = type(m.forward) == "function" and debug.getinfo(m.forward, "u")
    for i = 2, info and info.nparams or 0 do inputs[#inputs + 1] = debug.getlocal(m.forward, i) end
  end
  if ep then
    for _, spec in ipairs(ep.graph_signature.input_specs) do
      names[#names + 1] = spec.arg.name
      if spec.target then names[#names + 1] = spec.target end
    end
  end
  for _, n in ipairs(inputs) do names[#names + 1] = n end
  local seen, uniq = {}, {}
  for _, n in ipairs(names) do
    if not seen[n] then seen[n] = true; uniq[#uniq + 1] = n end
  end
  return uniq, inputs
end

-- fxdb.watch(target): stop whenever buffer/input `target` gets a new version, also through a view.
-- A name the module does not have is an error (with the closest one).
function fxdb.watch(target)
  if type(target) ~= "string" or trim(target) == "" then
    error("bad argument #1 to 'watch' (buffer or input name expected)", 2)
  end
  target = trim(target)
  local names, inputs = watchable()
  if names then
    local known = false
    for _, n in ipairs(names) do known = known or n == target end
    for _, n in ipairs(inputs) do known = known or target:sub(1, #n + 1) == n .. "_" end -- pytree leaves
    if not known then
      local near = fxdb._closest(target, names)
      fxdb._argcheck.arg_error("no buffer or input named '" .. target .. "' to watch" ..
        (near and (" (did you mean '" .. near .. "'?)") or "") .. "; the module has: " ..
        table.concat(names, ", "))
    end
  end
  return fxdb.break_on({"watch", target})
end

local function find_break(n)
  for i, b in ipairs(D.breaks) do
    if b.id == n then return b, i end
  end
  error("no breakpoint number " .. tostring(n) .. " (:info breaks lists them)", 3)
end

local function counted(word, n) return n .. " " .. word .. (n == 1 and "" or "s") end

-- fxdb.delete([n]): deletes breakpoint n, or every breakpoint.
function fxdb.delete(n)
  if n == nil then
    local k = #D.breaks
    D.breaks = {}
    return "deleted " .. counted("breakpoint", k)
  end
  local _, i = find_break(tonumber(n))
  table.remove(D.breaks, i)
  return "deleted breakpoint " .. n
end

local function set_enabled(n, on)
  local list = {}
  if n == nil then list = D.breaks else list = {(find_break(tonumber(n)))} end
  for _, b in ipairs(list) do b.enabled = on end
  return (on and "enabled " or "disabled ") ..
    (n == nil and counted("breakpoint", #list) or ("breakpoint " .. n))
end
function fxdb.disable(n) return set_enabled(n, false) end
function fxdb.enable(n) return set_enabled(n, true) end

-- ==== evaluation with the paused frame's locals in scope =========================================

-- An environment for Lua code typed while a session is paused: names resolve to (1) `extra`
-- (node, val, ... of a condition), (2) locals of the paused user frame, (3) its upvalues,
-- (4) the session's own names (run: node values by node name), (5) globals. Assigning to a local
-- of the frame sets it (debug.setlocal); anything else sets a global.
local function frame_env(s, extra)
  local co, level = nil, nil
  if s and s.kind == "trace" and s.job then co, level = s.job.co, s:_user_level() end
  local function lookup_local(k)
    if not level then return false end
    local found, val, idx = false, nil, nil
    for i = 1, 250 do
      local name, v = debug.getlocal(co, level, i)
      if name == nil then break end
      if name == k then found, val, idx = true, v, i end
    end
    if found then return true, val, idx end
    local info = debug.getinfo(co, level, "f")
    if info and info.func then
      for i = 1, 250 do
        local name, v = debug.getupvalue(info.func, i)
        if name == nil then break end
        if name == k then return true, v end
      end
    end
    return false
  end
  return setmetatable({}, {
    __index = function(_, k)
      if extra and extra[k] ~= nil then return extra[k] end
      local ok, v = lookup_local(k)
      if ok then return v end
      if s and s._name_value then
        local hit, nv = s:_name_value(k)
        if hit then return nv end
      end
      return _G[k]
    end,
    __newindex = function(_, k, v)
      if level then
        local ok, _, idx = lookup_local(k)
        if ok and idx then debug.setlocal(co, level, idx, v); return end
      end
      _G[k] = v
    end,
  })
end
D.frame_env = frame_env

-- `%name` in typed code means "the node called name" (its value): rewritten to __node("name"),
-- outside string literals, where `%` does not follow a value (so `a % b` stays a modulo).
local function rewrite_nodes(text)
  local out, i, n = {}, 1, #text
  local prev = ""                       -- last non-blank character copied
  while i <= n do
    local c = text:sub(i, i)
    if c == '"' or c == "'" then
      local j = i + 1
      while j <= n and text:sub(j, j) ~= c do
        if text:sub(j, j) == "\\" then j = j + 1 end
        j = j + 1
      end
      out[#out + 1] = text:sub(i, j)
      prev, i = c, j + 1
    elseif c == "%" and not prev:match("[%w_%)%]}]") and text:sub(i + 1):match("^[%a_]") then
      local name = text:match("^[%a_][%w_]*", i + 1)
      out[#out + 1] = '__node("' .. name .. '")'
      prev, i = ")", i + 1 + #name
    else
      out[#out + 1] = c
      if not c:match("%s") then prev = c end
      i = i + 1
    end
  end
  return table.concat(out)
end

-- The value a node name stands for in the current session: a run session's computed value, a
-- trace session's traced value (a tracing tensor); else the node of the current program.
local function node_value(name)
  local s = fxdb.session
  if s and s._node_value then
    local ok, v = s:_node_value(name, true)
    if ok then return v end
  end
  local ep = fxdb.current
  local n = ep and ep.graph:node(name)
  if n then return n end
  error("no node named '" .. name .. "'", 0)
end

-- fxdb.eval(text) -> values of the Lua expression `text`, evaluated with the paused frame's locals
-- in scope (and %name for nodes). The REPL evaluates :print / :display / :set arguments with it.
function fxdb.eval(text)
  local s = fxdb.session
  local env = frame_env(s, {__node = node_value})
  local code = rewrite_nodes(text)
  local fn, msg = load("return " .. code, "=stdin", "t", env)
  if not fn then fn, msg = load(code, "=stdin", "t", env) end
  if not fn then error(msg, 0) end
  return fn()
end

-- fxdb.chunk_env(): the environment the REPL gives a typed Lua chunk: the paused frame's
-- locals while a session is paused (or stopped at a failure), else nil (plain globals).
function fxdb.chunk_env()
  local s = fxdb.session
  if not s or s.status ~= "paused" and s.status ~= "error" then return nil end
  return frame_env(s, {__node = node_value})
end

-- fxdb._expr_env(): the environment of a command's EXPR (:print, :display, :set): as
-- chunk_env, and outside a session still one where %name (rewritten to __node) works.
function fxdb._expr_env()
  return fxdb.chunk_env() or setmetatable({__node = node_value}, {__index = _G, __newindex = _G})
end
fxdb._rewrite_nodes = rewrite_nodes

-- ==== printing values ============================================================================

-- A description of a tensor as the debugger sees it: sizes, strides, dtype, storage, version,
-- and in a trace session the node it stands for, its base and view chain.
local function describe_tensor(t, s)
  local lines = {}
  local strides = table.concat(t:stride(), ", ")
  local head = type_str(t) .. "  strides (" .. strides .. (t:dim() == 1 and ",)" or ")") ..
    "  offset " .. t:storage_offset() .. (t:is_contiguous() and "  contiguous" or "") ..
    "  " .. t.device
  local n = s and s.kind == "trace" and s.tr and s:_node_of(t)
  if n then
    lines[1] = "%" .. n.name .. " = " .. (n.op == "placeholder" and "placeholder" or n.target) ..
      "  " .. head
    local info = s:_base_info(n)
    if info then
      local b = info.base
      local what = s:_state_label(b)
      lines[#lines + 1] = "  base: %" .. b.name .. (what and (" (" .. what .. ")") or "") ..
        ", version " .. (s.versions[b.name] or 0) .. " (storage _version " .. t._version .. ")"
      if info.chain and #info.chain > 0 then
        lines[#lines + 1] = "  view chain: " .. table.concat(info.chain, " of ")
      end
    end
  else
    lines[1] = head .. "  _version " .. t._version
    local base = t._base
    if base then lines[#lines + 1] = "  a view of a " .. type_str(base) .. " tensor" end
  end
  if not t.is_meta then
    lines[#lines + 1] = tostring(t)
  end
  return table.concat(lines, "\n")
end

-- fxdb.print(v): tensors in a session with their metadata (and values when real), nodes with
-- their value, anything else as print would.
function fxdb.print(...)
  local n = select("#", ...)
  local s = fxdb.session
  local out = {}
  for i = 1, n do
    local v = select(i, ...)
    if torch.is_tensor(v) and s then
      out[#out + 1] = describe_tensor(v, s)
    elseif fxdb.summary and (getmetatable(v) or {}).__name == "ExportedProgram" or
           (getmetatable(v) or {}).__name == "Graph" then
      out[#out + 1] = fxdb.summary(v) -- a big program: head, signature, counts
    elseif is_node(v) and s and s._node_value then
      local ok, val = s:_node_value(v.name)
      out[#out + 1] = ok and (torch.is_tensor(val) and describe_tensor(val, s) or tostring(val)) or
        tostring(v)
    else
      out[#out + 1] = tostring(v)
    end
  end
  print(table.concat(out, "\t"))
end

-- fxdb.print_expr(text): evaluates text as fxdb.eval does and prints the values (:print).
function fxdb.print_expr(text)
  fxdb.print(fxdb.eval(text))
end

-- fxdb.display(text): shows `text` now and at every stop (:display). Without text: the list.
function fxdb.display(text)
  if text == nil or trim(text) == "" then return fxdb.info("display") end
  local d = {id = D.next_display, expr = trim(text)}
  D.next_display = D.next_display + 1
  D.displays[#D.displays + 1] = d
  return D.show_display(d)
end

function fxdb.undisplay(n)
  if n == nil then D.displays = {}; return "deleted every display" end
  for i, d in ipairs(D.displays) do
    if d.id == tonumber(n) then table.remove(D.displays, i); return "deleted display " .. n end
  end
  error("no display number " .. tostring(n), 2)
end

function D.show_display(d)
  local ok, res = pcall(function() return table.pack(fxdb.eval(d.expr)) end)
  local text
  if not ok then
    text = "<error: " .. tostring(res) .. ">"
  else
    local parts = {}
    for i = 1, res.n do
      local v = res[i]
      parts[#parts + 1] = torch.is_tensor(v) and (fxdb.session and fxdb.session.kind == "run" and
        tostring(v) or
        (type_str(v) .. (v.is_meta and "" or (" " .. tostring(v))))) or tostring(v)
    end
    text = table.concat(parts, "\t")
  end
  return string.format("%d: %s = %s", d.id, d.expr, text)
end

-- ==== stops ======================================================================================

local STOP_MT = {__tostring = function(st) return st.text end}

-- A value for a banner: small tensors in full (PyTorch's repr), larger ones as a summary line
-- (:print shows them whole).
D.BANNER_NUMEL = 32
function D.short_value(v)
  if not torch.is_tensor(v) or v.is_meta or v:numel() <= D.BANNER_NUMEL then return tostring(v) end
  local ok, text = pcall(function()
    local f = v:double()
    return string.format("%s  min %.4g  max %.4g  mean %.4g  (:print for every value)", type_str(v),
      f:min():item(), f:max():item(), f:mean():item())
  end)
  return ok and text or type_str(v)
end

-- :next from node n0: the mode that D.next_stops reads.
function D.next_mode(n0)
  local fr = node_frames(n0)
  return {kind = "next", depth = #node_mods(n0), nframes = #fr, frame = fr[1]}
end

-- Is node n where :next stops? At a shallower module (the call returned), or in the same module
-- at another Lua line of the same (or an outer) function; deeper modules and helper functions
-- called from the line are stepped over.
function D.next_stops(n, mode)
  local d = #node_mods(n)
  if d < mode.depth then return true end
  if d > mode.depth then return false end
  local fr = node_frames(n)
  if #fr < mode.nframes then return true end
  if #fr > mode.nframes then return false end
  local f = fr[1]
  return not (mode.frame and f and f.line == mode.frame.line and f.file == mode.frame.file)
end

-- Is node n inside the module call at `path` (depth `depth` of nn_module_stack)?
function D.inside_module(n, depth, path)
  local e = node_mods(n)[depth]
  return e ~= nil and e.path == path
end

local function make_stop(s, st)
  st.session = s
  s.frame_sel = 0
  local lines = {st.banner}
  if st.reason ~= "done" then
    for _, d in ipairs(D.displays) do lines[#lines + 1] = D.show_display(d) end
  end
  st.text = table.concat(lines, "\n")
  s.stop = setmetatable(st, STOP_MT)
  return s.stop
end

-- The "  module: ...   file:line   code" line of a node.
local function where_line(n)
  local mods = node_mods(n)
  local f = node_frames(n)[1]
  local parts = {}
  if #mods > 0 then parts[#parts + 1] = "module: " .. mod_str(mods[#mods]) end
  if f then parts[#parts + 1] = loc_str(f) .. (f.code ~= "" and ("   " .. f.code) or "") end
  if #parts == 0 then return nil end
  return "  " .. table.concat(parts, "   ")
end

-- ==== the common session interface ===============================================================

local Session = {}
Session.__index = Session

-- The breakpoints that `n` hits (a list, or nil when none), each {b, why}. `ctx`: {prev =
-- previous node, mutation = {...}}. Like gdb, a stop reports every breakpoint it hits.
function Session:_match_break(n, ctx, event)
  local hits
  for _, b in ipairs(D.breaks) do
    if b.enabled and self:_bp_matches(b, n, ctx, event) then
      local ok, why = self:_bp_condition(b, n, ctx)
      if ok then
        hits = hits or {}
        hits[#hits + 1] = {b, why}
      end
    end
  end
  return hits
end

-- Does breakpoint b's WHERE hold at node n? Shared rules; trace/run differ in mutations.
function Session:_bp_matches(b, n, ctx, event)
  if event == "guard" then
    -- every guard, or those whose expression names the symbol
    return b.kind == "guard" and (b.arg == nil or D.mentions(ctx.guard.expr, b.arg))
  end
  if event then return b.kind == event end   -- "item"
  if not n then return false end
  local k = b.kind
  if k == "op" then return target_matches(n.target, b.arg) end
  if k == "node" then return n.name == b.arg end
  if k == "view" then return n.is_view end
  if k == "mutation" then return ctx.mutation ~= nil end
  if k == "watch" then
    local m = ctx.mutation
    return m ~= nil and (m.target == b.arg or m.placeholder == b.arg)
  end
  if k == "line" then
    -- the first node recorded for an execution of that line, at any depth of the Lua stack
    local fr, pfr = node_frames(n), ctx.prev and node_frames(ctx.prev) or {}
    for i, f in ipairs(fr) do
      if f.line == b.line and file_matches(f.file, b.file) then
        local depth = #fr - i
        local pf = pfr[#pfr - depth]
        if not (pf and pf.line == f.line and pf.file == f.file) then return true end
      end
    end
    return false
  end
  if k == "module" then
    -- entering the module (or a module under that path): the previous node was not inside it
    local function inside(node)
      if not node then return false end
      for _, e in ipairs(node_mods(node)) do
        if e.path == b.arg or e.path:sub(1, #b.arg + 1) == b.arg .. "." then return true end
      end
      return false
    end
    return inside(n) and not inside(ctx.prev)
  end
  return false
end

-- Evaluates b's condition with the node, its value and the paused frame in scope:
-- node (also n), name, target, val (the node's value), args (its argument values), mutation.
function Session:_bp_condition(b, n, ctx)
  if not b.cond then return true end
  local extra = {node = n, n = n, __node = node_value}
  if n then
    extra.name, extra.target = n.name, n.target
    local ok, v = self:_node_value(n.name)
    if ok then extra.val = v end
    local args = {}
    for i, a in ipairs(n.args) do
      if is_node(a) then
        local ok2, av = self:_node_value(a.name)
        args[i] = ok2 and av or a
      else
        args[i] = a
      end
    end
    extra.args = args
  end
  extra.mutation = ctx and ctx.mutation
  if ctx and ctx.guard then extra.guard, extra.expr = ctx.guard, ctx.guard.expr end
  local env = frame_env(self, extra)
  local fn, msg = load("return " .. rewrite_nodes(b.cond), "=(condition)", "t", env)
  if not fn then return true, "error in condition: " .. msg end
  local ok, res = pcall(fn)
  if not ok then return true, "error in condition: " .. tostring(res) end
  return res and true or false
end

-- Counts a hit of each breakpoint in `hits` (from _match_break) and deletes the temporary ones.
-- Returns the bracket text of the banner.
local function hit_break(hits)
  local parts, whys = {}, {}
  for _, h in ipairs(hits) do
    local b, why = h[1], h[2]
    b.hits = b.hits + 1
    if b.temporary then
      for i, x in ipairs(D.breaks) do if x == b then table.remove(D.breaks, i) break end end
    end
    local label = (b.kind == "watch" and "watchpoint " or (b.temporary and
      "temporary breakpoint " or "breakpoint "))
    parts[#parts + 1] = label .. b.id .. ": " .. bp_desc(b)
    if why then whys[#whys + 1] = why end
  end
  local why = #whys > 0 and ("  (" .. table.concat(whys, "; ") .. ")") or ""
  return "[" .. table.concat(parts, "; ") .. "]" .. why
end

-- The verbs as session methods (API.md: s:break_on{...}, s:watch("state")). Breakpoints and
-- displays are fxdb's, shared by every session.
function Session:display(text) return fxdb.display(text) end
function Session:break_on(spec, opts) return fxdb.break_on(spec, opts) end
function Session:watch(target) return fxdb.watch(target) end
function Session:delete(n) return fxdb.delete(n) end
function Session:info(topic) return fxdb.info(topic) end
function Session:list(where) return fxdb.list(where) end

-- ==== trace sessions =============================================================================

local Trace = setmetatable({}, {__index = Session})
Trace.__index = Trace
Trace.__tostring = function(s) return s.stop and tostring(s.stop) or "trace session" end

local function state_kind_word(kind)
  return ({PARAMETER = "parameter", BUFFER = "buffer", CONSTANT_TENSOR = "constant",
           USER_INPUT = "input"})[kind] or kind
end

-- fxdb.trace(m, args, opts) -> session, paused before the first op of m's forward.
-- opts: strict (default true), real (trace with values), ir, lift_mutated_constants, as export.
function fxdb.trace(m, args, opts)
  if type(m) ~= "table" or not m.named_modules then
    error("bad argument #1 to 'trace' (Module expected, got " .. type(m) .. ")", 2)
  end
  if args == nil then args = m.example_inputs end
  if args ~= nil and type(args) ~= "table" then
    error("bad argument #2 to 'trace' (table of example inputs expected, got " .. type(args) .. ")",
      2)
  end
  opts = fxdb._module_opts(m, opts) or {}
  local detached = opts.detached
  if not detached then D.end_session() end
  local s = setmetatable({kind = "trace", m = m, args = args or {}, opts = opts,
                          strict = opts.strict ~= false, status = "paused", queue = {},
                          history = {}, count = 0, versions = {}, log = {}, labels = {},
                          bases = {}, started = false, current_before = fxdb.current}, Trace)
  opts._call_frame = E.user_frame()
  E.call_frame = opts._call_frame
  s.tr = E.tracer{real = opts.real}
  s.hook = fxdb._session_hook()
  s.tr:attach(s.hook)
  s.snap = E.snapshot(m)
  local ok, job = pcall(E.export_begin, m, s.args, opts, s.strict, s.tr)
  if not ok then
    E.restore(s.snap)
    error(job, 0)
  end
  s.job = job
  s.raw = s.tr:raw_graph()
  -- what each placeholder stands for, for "new version 2 of buffer 'state'"
  for _, st in ipairs(job.state) do
    local name = s.tr:node_of(st.traced)
    if name then
      local kind = st.kind == "param" and "PARAMETER" or st.kind == "buffer" and "BUFFER" or
        "CONSTANT_TENSOR"
      s.labels[name] = {kind = kind, target = st.path}
    end
  end
  for i = 1, job.nargs do
    local t = job.targs[i]
    if torch.is_tensor(t) then
      local name = s.tr:node_of(t)
      if name then s.labels[name] = {kind = "USER_INPUT", target = job.names[i]} end
    end
  end
  if not detached then
    D.session = s
    fxdb.session = s
    fxdb._set_session_open(true)
  end
  local info = debug.getinfo(m.forward, "S")
  local cls = tostring(m):match("^([%w_]+)") or "Module"
  local mode = (s.strict and "strict" or "non-strict") .. ", " .. (opts.real and "real values" or
    "meta tensors")
  local where = info and info.short_src and (info.source:sub(1, 1) == "@" and info.source:sub(2) or
    info.short_src) ..
    ":" .. info.linedefined or "?"
  make_stop(s, {reason = "start", banner = "trace session on " .. cls .. " (" .. mode ..
    "): paused before the first op\n  forward: " .. where})
  return s
end

-- The label ("buffer 'state'") of a placeholder node, or nil for a non-input base.
function Trace:_state_label(b)
  if b.op ~= "placeholder" then return nil end
  local l = self.labels[b.name]
  if not l then
    if b.name:match("^c_lifted_tensor_") then return "constant '" .. b.name:sub(3) .. "'" end
    return nil
  end
  return state_kind_word(l.kind) .. " '" .. l.target .. "'"
end

-- Base and view chain of a raw node: {base = node, chain = {"select(1, 0)", ...} innermost
-- first}. A view's base is its source's base; an in-place op's result aliases its self.
function Trace:_base_info(n)
  local cached = self.bases[n]
  if cached then return cached end
  local info
  if n.op ~= "call_function" then
    info = {base = n, chain = {}}
  elseif n.target == "getitem" then
    local src = n.args[1]
    local si = is_node(src) and self:_base_info(src)
    if si and is_node(src) and (src.is_view or si.base ~= src) then
      local chain = {"getitem(" .. tostring(n.args[2]) .. ")"}
      for _, c in ipairs(si.chain) do chain[#chain + 1] = c end
      info = {base = si.base, chain = chain}
    else
      info = {base = n, chain = {}}
    end
  else
    local sch = fxdb._node_schema(n)
    if sch.view and is_node(n.args[sch.view]) then
      local si = self:_base_info(n.args[sch.view])
      local chain = {short_call(n)}
      for _, c in ipairs(si.chain) do chain[#chain + 1] = c end
      info = {base = si.base, chain = chain}
    elseif sch.mutated and is_node(n.args[sch.mutated]) then
      local si = self:_base_info(n.args[sch.mutated])
      info = {base = si.base, chain = si.chain}
    else
      info = {base = n, chain = {}}
    end
  end
  self.bases[n] = info
  return info
end

-- The mutation a raw node makes, or nil: {base, placeholder, target, kind, version, chain, op}.
function Trace:_mutation_of(n)
  if n.op ~= "call_function" then return nil end
  if n.target == "fxdb.assign_buffer" then
    local b = n.args[1]
    return {base = b, placeholder = b and b.name, target = n.args[3], kind = "BUFFER",
            chain = {}, op = "buffer assignment"}
  end
  if not n.is_inplace then return nil end
  local sch = fxdb._node_schema(n)
  local a = sch.mutated and n.args[sch.mutated]
  if not is_node(a) then return nil end
  local info = self:_base_info(a)
  local b = info.base
  local l = self.labels[b.name]
  return {base = b, placeholder = b.name, target = l and l.target or
    (b.name:match("^c_(lifted_tensor_%d+)$")),
          kind = l and l.kind or (b.name:match("^c_lifted") and "CONSTANT_TENSOR") or nil,
          chain = info.chain, op = n.target}
end

-- Records node n in the session's history (versions of bases, the mutation log); returns the
-- context the breakpoint checks read.
function Trace:_observe(n)
  local prev = self.history[#self.history]
  self.count = self.count + 1
  self.history[#self.history + 1] = n
  return {prev = prev, mutation = self:_record_mutation(n)}
end

-- The mutation node n makes (see _mutation_of), numbered and logged; nil when none.
function Trace:_record_mutation(n)
  local m = self:_mutation_of(n)
  if m then
    local key = m.base.name
    self.versions[key] = (self.versions[key] or 0) + 1
    m.version = self.versions[key]
    m.node = n
    self.log[#self.log + 1] = m
  end
  return m
end

-- The node a tracing tensor stands for, or nil.
function Trace:_node_of(t)
  if not (self.tr and torch.is_tensor(t)) then return nil end
  local ok, name = pcall(self.tr.node_of, self.tr, t)
  if not ok or not name then return nil end
  return self.raw:node(name)
end

function Trace:_node_value(name)
  local n = self.raw and self.raw:node(name)
  if not n then return false end
  local meta = n.meta
  if meta.value ~= nil then return true, meta.value end
  if meta.tensor ~= nil then return true, meta.tensor end
  return true, meta.val
end

-- The Lua stack levels (in the coroutine) of the frames that are user code, innermost first.
function Trace:_user_levels()
  local co = self.job and self.job.co
  local out = {}
  if not co then return out end
  for level = 0, 200 do
    local info = debug.getinfo(co, level, "S")
    if not info then break end
    if info.what ~= "C" and not is_embedded(info.source) then out[#out + 1] = level end
  end
  return out
end

-- The level of the selected user frame (:frame N, :up, :down; 0 = innermost after each stop).
function Trace:_user_level()
  local levels = self:_user_levels()
  return levels[math.min((self.frame_sel or 0) + 1, #levels)]
end

-- {file, line, func, code} of the paused user frame (or of the current node).
function Trace:_frame_info()
  local co, level = self.job and self.job.co, self:_user_level()
  if level then
    local info = debug.getinfo(co, level, "Sln")
    local file = info.source:sub(1, 1) == "@" and info.source:sub(2) or info.short_src
    local lines = source_lines(file)
    return {file = file, line = info.currentline, func = info.name or "?",
            code = lines and trim(lines[info.currentline]) or ""}
  end
  local n = self.node
  return n and node_frames(n)[1] or nil
end

-- Module stack while paused (the job's live stack).
function Trace:_module_stack()
  return self.job and self.job.module_stack or {}
end

-- The banner of a stop at node n.
function Trace:_node_banner(n, bracket, m)
  local lines = {"stopped at %" .. n.name .. " (" .. n.target .. ")  " .. bracket}
  local wl = where_line(n)
  if wl then lines[#lines + 1] = wl end
  local ins = {}
  for _, a in ipairs(node_inputs(n)) do
    ins[#ins + 1] = a.name .. " " .. (a.type ~= "" and a.type or a.op)
  end
  local tail
  if m then
    local what = m.kind and (state_kind_word(m.kind) .. " '" .. m.target .. "'") or ("%" ..
      m.base.name)
    tail = "-> new version " .. m.version .. " of " .. what
    if m.chain and #m.chain > 0 then tail = tail .. " through " .. table.concat(m.chain, " of ") end
  else
    tail = "-> " .. n.name .. (n.type ~= "" and (" " .. n.type) or "")
  end
  lines[#lines + 1] = "  in: " .. (#ins > 0 and table.concat(ins, ", ") or "(none)") .. "  " .. tail
  if self.opts.real then
    local ok, v = self:_node_value(n.name)
    if ok and torch.is_tensor(v) and not v.is_meta then
      lines[#lines + 1] = "  = " .. indent_rest(D.short_value(v), "    ")
    end
  end
  return table.concat(lines, "\n")
end

-- One resume of the coroutine; queues the nodes it recorded and the events it met.
function Trace:_resume_once()
  local job = self.job
  local res
  if not self.started then
    self.started = true
    res = E.export_resume(job, table.unpack(job.targs, 1, job.nargs))
  else
    res = E.export_resume(job)
  end
  for _, n in ipairs(self.hook:take(self.raw)) do self.queue[#self.queue + 1] = n end
  local st = self.hook:status()
  self.ev_interrupt = self.ev_interrupt or st.interrupted
  self.ev_datadep = st.datadep or self.ev_datadep
  if st.returned then self.ev_returned = st.returned end
  if not res[1] then
    self.forward_error = res[2]
  elseif coroutine.status(job.co) == "dead" then
    self.forward_result = res
  elseif not (st.interrupted or st.datadep or st.returned) and #self.queue == 0 then
    self.forward_error = "forward yielded during export; coroutines that yield are not " ..
      "supported inside forward"
  end
end

-- Advances until a stop. mode: {kind = "step", n} | {kind = "next", depth, nframes, frame} |
-- {kind = "finish", depth} | {kind = "continue"}. Returns the Stop.
function Trace:_advance(mode)
  if self.status ~= "paused" then
    error("the trace session has " .. (self.status == "error" and "failed" or "finished") ..
          "; start another with :trace EXPR (fxdb.trace(m, args))", 3)
  end
  local stepped = 0
  self.frame_sel = 0
  if mode.kind == "finish" then
    self.hook:finish_at(mode.depth > 0 and mode.depth or 0)
    self.ev_returned = nil
  end
  local ok, res = pcall(function()
    while true do
      while #self.queue > 0 do
        local n = table.remove(self.queue, 1)
        if math.type(n) == "integer" then
          -- guard number n (runtime assert -n, torch._check) was recorded here (before the node
          -- of the op that asked for it)
          local list = self:guards()
          local g = n > 0 and list[n] or list.asserts[-n]
          local hits = g and self:_match_break(nil, {guard = g}, "guard")
          if hits then return self:_pause_guard(g, hit_break(hits), n < 0) end
        else
          local ctx = self:_observe(n)
          local stop = self:_check_node(n, ctx, mode, stepped + 1)
          stepped = stepped + 1
          if stop then return stop end
        end
      end
      if self.ev_interrupt then
        self.ev_interrupt = nil
        return self:_pause_interrupt()
      end
      if self.ev_datadep then
        local what = self.ev_datadep
        self.ev_datadep = nil
        local hits = self:_match_break(nil, {}, "item")
        if hits then return self:_pause_event("data-dependent read " .. what, hit_break(hits)) end
      end
      if self.ev_returned and mode.kind == "finish" then
        local ret = self.ev_returned
        self.ev_returned = nil
        return self:_finish_stop(mode, ret)
      end
      if self.forward_error ~= nil then return self:_postmortem(self.forward_error) end
      if self.forward_result then return self:_complete() end
      self:_resume_once()
    end
  end)
  self.hook:finish_at(0)
  if ok then return res end
  if is_interrupt(res) then
    -- Ctrl-C while the driver itself ran: the coroutine is between two resumes
    return self:_pause_interrupt()
  end
  error(res, 0)
end

-- Is node n (just observed, with ctx) a stop for `mode` or a breakpoint? Returns the Stop or nil.
function Trace:_check_node(n, ctx, mode, k)
  local hits = self:_match_break(n, ctx)
  if hits then return self:_pause(n, hit_break(hits), ctx.mutation) end
  if mode.kind == "step" and k >= mode.n then
    return self:_pause(n, "[step]", ctx.mutation)
  end
  if mode.kind == "next" and D.next_stops(n, mode) then
    return self:_pause(n, "[next]", ctx.mutation)
  end
  return nil
end

function Trace:_pause(n, bracket, m)
  self.node = n
  if not n then
    return make_stop(self, {reason = "pause", banner = "paused before the first op  " .. bracket})
  end
  return make_stop(self, {reason = bracket:match("^%[(%a+)") or "stop", node = n, mutation = m,
                          banner = self:_node_banner(n, bracket, m)})
end

-- Ctrl-C paused the coroutine wherever it was (not necessarily at an op).
function Trace:_pause_interrupt()
  local f = self:_frame_info()
  local st = self:_module_stack()
  local lines = {"interrupted  [Ctrl-C]"}
  local parts = {}
  if #st > 0 then parts[#parts + 1] = "module: " .. mod_str(st[#st]) end
  if f then parts[#parts + 1] = loc_str(f) .. (f.code ~= "" and ("   " .. f.code) or "") end
  if #parts > 0 then lines[#lines + 1] = "  " .. table.concat(parts, "   ") end
  local last = self.history[#self.history]
  if last then
    lines[#lines + 1] = "  last recorded: %" .. last.name .. " (" .. last.target .. "), " ..
      counted("node", self.count) .. " so far"
  end
  self.node = last
  return make_stop(self, {reason = "interrupted", node = last, banner = table.concat(lines, "\n")})
end

function Trace:_pause_event(what, bracket)
  local f = self:_frame_info()
  local lines = {"stopped at " .. what .. "  " .. bracket}
  local st = self:_module_stack()
  local parts = {}
  if #st > 0 then parts[#parts + 1] = "module: " .. mod_str(st[#st]) end
  if f then parts[#parts + 1] = loc_str(f) .. (f.code ~= "" and ("   " .. f.code) or "") end
  if #parts > 0 then lines[#lines + 1] = "  " .. table.concat(parts, "   ") end
  return make_stop(self, {reason = "item", node = self.history[#self.history],
    banner = table.concat(lines, "\n")})
end

-- Stopped where the shape environment recorded guard g (fxdb.guards' form), or runtime assert g
-- (is_assert: torch._check): the relation, the op that asked and its Lua line, then what it
-- taught about each symbol.
function Trace:_pause_guard(g, bracket, is_assert)
  local what = is_assert and ("runtime assert " .. g.index .. " (torch._check)") or
               ("guard " .. g.index)
  local lines = {"stopped at " .. what .. ": " .. g.expr .. "  " .. bracket}
  local st = self:_module_stack()
  local parts = {D.op_str(g.op)}
  if #st > 0 then parts[#parts + 1] = "module: " .. mod_str(st[#st]) end
  if g.location ~= "" then
    parts[#parts + 1] = g.location .. (g.source ~= "" and ("   " .. g.source) or "")
  end
  lines[#lines + 1] = "  " .. table.concat(parts, "   ")
  if #g.symbols > 0 then lines[#lines + 1] = "  " .. table.concat(g.symbols, "; ") end
  for _, l in ipairs(g.taught) do lines[#lines + 1] = "  " .. l end
  return make_stop(self, {reason = "guard", node = self.history[#self.history], guard = g,
    banner = table.concat(lines, "\n")})
end

-- The shape environment of the trace so far (tr:shape_info(); the program's once built, what was
-- left when the export failed after forward).
function Trace:_shape_info()
  if self.ep then return self.ep._shape_info or {} end
  if self.tr then return self.tr:shape_info() end
  return self.final_info or {}
end

-- The guards recorded so far (fxdb.guards' list).
function Trace:guards() return D.guard_list(self:_shape_info()) end

-- A node name or the type of a value returned by a module call.
function Trace:_value_str(v)
  if torch.is_tensor(v) then
    local n = self:_node_of(v)
    return type_str(v) .. (n and (" (%" .. n.name .. ")") or "")
  end
  if type(v) == "table" and not is_node(v) then
    local parts = {}
    for i = 1, #v do parts[#parts + 1] = self:_value_str(v[i]) end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  return tostring(v)
end

function Trace:_finish_stop(mode, ret)
  local vals = {}
  for i = 1, ret.n or #ret do vals[#vals + 1] = self:_value_str(ret[i]) end
  local e = mode.module
  local lines = {"finished " .. mod_str(e) .. "  [finish]",
                 "  returned: " .. (#vals > 0 and table.concat(vals, ", ") or "(nothing)")}
  local st = self:_module_stack()
  local f = self:_frame_info()
  local parts = {}
  parts[#parts + 1] = "now in: " .. (#st > 0 and mod_str(st[#st]) or "<top>")
  if f then parts[#parts + 1] = loc_str(f) .. (f.code ~= "" and ("   " .. f.code) or "") end
  lines[#lines + 1] = "  " .. table.concat(parts, "   ")
  self.node = self.history[#self.history]
  return make_stop(self, {reason = "finish", node = self.node, returned = ret,
    banner = table.concat(lines, "\n")})
end

-- forward has returned: complete the export (non-strict checks, output node, functionalization,
-- program), restore the module, make the program current.
function Trace:_complete()
  self.raw_copy = fxdb._graph_clone(self.raw)
  -- names now: if the build fails, the tracer's graph (and so these nodes) may be freed
  self.history_names = {}
  for i, n in ipairs(self.history) do self.history_names[i] = n.name end
  self.node_name = self.node and self.node.name
  local ok, ep = pcall(E.export_complete, self.job, self.forward_result)
  if not ok then return self:_postmortem(ep, true) end
  for _, n in ipairs(self.hook:take(ep.raw_graph)) do
    if math.type(n) ~= "integer" then self:_observe(n) end
  end
  E.restore(self.snap)
  self.status = "finished"
  self.ep = ep
  self.raw = ep.raw_graph
  self.raw_copy = nil
  if not self.opts.detached then
    fxdb.current, fxdb.current_module, fxdb.current_args = ep, self.m, self.args
  end
  local outs = {}
  local nmut = 0
  for _, spec in ipairs(ep.graph_signature.output_specs) do
    if spec.kind ~= "USER_OUTPUT" then -- mutations and the effect token
      nmut = nmut + 1
    else
      local n = ep.graph:node(spec.arg.name)
      outs[#outs + 1] = spec.arg.name .. (n and n.type ~= "" and (" " .. n.type) or "")
    end
  end
  -- a line breakpoint that never stopped because its line recorded no op says so
  local notes = {}
  for _, b in ipairs(D.breaks) do
    if b.kind == "line" and b.enabled and b.hits == 0 and b.file then
      local recorded = false
      for _, n in ipairs(ep.raw_graph.nodes) do
        for _, f in ipairs(node_frames(n)) do
          if f.line == b.line and file_matches(f.file, b.file) then recorded = true break end
        end
        if recorded then break end
      end
      if not recorded then
        notes[#notes + 1] = "\n  note: breakpoint " .. b.id .. " (line " .. b.arg .. ") never " ..
          "stopped: no op was recorded at that line"
      end
    end
  end
  return make_stop(self, {reason = "done", ep = ep, banner =
    "trace finished: " .. counted("node", self.count) .. " recorded, " ..
    counted("mutation output", nmut) ..
      "; the exported program is now current (:graph, :why, :run --step)" ..
    "\n  returned: " .. (#outs > 0 and table.concat(outs, ", ") or "(nothing)") ..
    table.concat(notes)})
end

-- A failed export: the session stays at the failing op. For errors after forward (attribute
-- checks, functionalization), `after` is true and the raw graph is the copy taken before.
function Trace:_postmortem(err, after)
  if after then
    self.hook:clear()
    self.raw = self.raw_copy or self.raw
    -- nodes recorded so far belong to the copy now (the tracer's graph may be gone)
    local hist = {}
    for _, name in ipairs(self.history_names or {}) do hist[#hist + 1] = self.raw:node(name) end
    self.history = hist
    self.node = self.node_name and self.raw:node(self.node_name) or nil
    self.bases, self.log, self.versions = {}, {}, {}
    for _, n in ipairs(hist) do self:_record_mutation(n) end
    -- the guards stay readable (:guards, :why s0 explain a constraint violation)
    local ok, info = pcall(function() return self.tr:shape_info() end)
    self.final_info = ok and info or nil
    self.tr = nil
  end
  E.restore(self.snap)
  self.status = "error"
  self.error = err
  local lines = {}
  if type(err) == "table" then
    local kind = err.kind
    local head = (err.code == "FX_EEXPORT" or kind == "attribute_assignment" or
      kind == "data_dependent")
      and ("export error (" .. tostring(kind) .. "): ") or "error: "
    lines[1] = head .. tostring(err.message or err)
    if err.location then
      lines[#lines + 1] = "  at " .. err.location .. (err.func and (" in " .. err.func) or "") ..
        ":" .. (err.source and err.source ~= "" and ("   " .. err.source) or "")
    end
    if err.module then
      lines[#lines + 1] = "  module: " .. (err.module == "" and "<root>" or err.module) ..
        (err.module_class and (" (" .. err.module_class .. ")") or "")
    end
    if err.hint then lines[#lines + 1] = "  hint: " .. err.hint end
  else
    lines[1] = "error: " .. tostring(err)
  end
  local n = type(err) == "table" and err.node and self.raw and self.raw:node(err.node)
  if n then
    self.node = n
    lines[#lines + 1] = "post-mortem at %" .. n.name .. " (" .. n.target .. ")"
    local wl = where_line(n)
    if wl then lines[#lines + 1] = wl end
  else
    self.node = self.history[#self.history]
    lines[#lines + 1] = "post-mortem: stopped where the export failed" ..
      (self.node and ("; last recorded node %" .. self.node.name .. " (" .. self.node.target ..
        ")") or "")
  end
  lines[#lines + 1] = "  (:where :list :print :graph still work; :trace starts again)"
  return make_stop(self, {reason = "error", error = err, node = self.node,
    banner = table.concat(lines, "\n")})
end

-- ---- trace stepping verbs -----------------------------------------------------------------------

function Trace:step(n)
  n = tonumber(n) or 1
  if n < 1 then error("bad argument #1 to 'step' (a positive count expected)", 2) end
  return self:_advance({kind = "step", n = math.floor(n)})
end

function Trace:next()
  local n = self.node
  if not n then return self:_advance({kind = "step", n = 1}) end
  return self:_advance(D.next_mode(n))
end

function Trace:finish()
  local st = self:_module_stack()
  local depth = #st
  -- at the root module (or before forward): to the end of the trace, which shows the outputs
  if depth <= 1 then return self:_advance({kind = "continue"}) end
  return self:_advance({kind = "finish", depth = depth, module = st[depth]})
end

function Trace:continue()
  return self:_advance({kind = "continue"})
end

function Trace:advance_until(where)
  if where == nil or trim(where) == "" then return self:next() end
  local b = fxdb.break_on(where, {temporary = true})
  local ok, res = pcall(self._advance, self, {kind = "continue"})
  for i, x in ipairs(D.breaks) do if x == b then table.remove(D.breaks, i) break end end
  if not ok then error(res, 0) end
  return res
end
Trace["until"] = Trace.advance_until

function Trace:reverse_step()
  error("reverse-step replays an execution: it works in run sessions (:run --step), " ..
        "not while tracing", 2)
end

function Trace:set()
  error(":set injects values into a run session (:run --step); a trace session records ops", 2)
end

-- s:graph(stage): "raw" (default): the raw graph so far; "functional": functionalized up to here.
function Trace:graph(stage)
  stage = stage or "raw"
  if stage == "raw" then return self.raw end
  if stage == "functional" then
    if self.ep then return self.ep.graph end
    if not self.tr then
      error("the functional graph is not available after this failure (:graph raw is)", 2)
    end
    return fxdb._partial_functional(self.tr, self.opts.lift_mutated_constants)
  end
  if self.ep then return fxdb.graph(stage, self.ep) end
  error("no exported program yet: the trace is not finished (:graph raw, :graph functional)", 2)
end

-- s:where() -> text: the Lua stack (user frames, innermost first) and the module stack.
-- One line of :where / :frame for the user frame at coroutine level `level`, numbered k.
function Trace:_frame_line(level, k)
  local info = debug.getinfo(self.job.co, level, "Sln")
  local file = info.source:sub(1, 1) == "@" and info.source:sub(2) or info.short_src
  local src = source_lines(file)
  local code = src and trim(src[info.currentline]) or ""
  return string.format("%s%d  %s:%d in %s   %s", k == (self.frame_sel or 0) and "#" or " ", k, file,
                       info.currentline, info.name or (info.what == "main" and "<main>" or "?"),
                         code)
end

function Trace:where()
  local lines = {}
  local k = 0
  for i, level in ipairs(self:_user_levels()) do
    lines[#lines + 1] = self:_frame_line(level, i - 1)
    k = i
  end
  if k == 0 and self.node then
    for i, f in ipairs(node_frames(self.node)) do
      lines[#lines + 1] = string.format("#%d  %s:%d in %s   %s", i - 1, f.file, f.line, f.func,
        f.code)
    end
  end
  local st = self:_module_stack()
  local mods = {}
  for _, e in ipairs(st) do
    mods[#mods + 1] = mod_str(e)
    if e.site then
      lines[#lines + 1] = string.format(
        "    (%s was called from %s:%d in %s by a tail call; that frame is gone)",
        e.path == "" and "<root>" or e.path, e.site.file, e.site.line, e.site.func or "?")
    end
  end
  if #mods == 0 and self.node then
    for _, e in ipairs(node_mods(self.node)) do mods[#mods + 1] = mod_str(e) end
  end
  lines[#lines + 1] = "module stack: " .. (#mods > 0 and table.concat(mods, " > ") or "(none)")
  return table.concat(lines, "\n")
end

-- s:info_mutations() -> text: each base's versions so far, with the op and the Lua line.
function Trace:info_mutations()
  local order, by = {}, {}
  for _, m in ipairs(self.log) do
    local key = m.base.name
    if not by[key] then by[key] = {}; order[#order + 1] = key end
    table.insert(by[key], m)
  end
  if #order == 0 then return "no mutations recorded so far" end
  local lines = {}
  for _, key in ipairs(order) do
    local ms = by[key]
    local m1 = ms[1]
    local what = m1.kind and (state_kind_word(m1.kind) .. " '" .. m1.target .. "'") or ("%" .. key)
    lines[#lines + 1] = what .. ": " .. counted("version", #ms) .. " so far"
    lines[#lines + 1] = string.format("  v0  %%%s", key)
    for _, m in ipairs(ms) do
      local f = node_frames(m.node)[1]
      local through = ""
      if m.chain and #m.chain > 0 then through = " through " .. table.concat(m.chain, " of ") end
      lines[#lines + 1] = string.format("  v%d  %%%s = %s%s   %s   %s", m.version, m.node.name,
        m.op, through, loc_str(f), f and f.code or "")
    end
  end
  return table.concat(lines, "\n")
end

-- s:frame(n): selects user frame n (0 = innermost) for :print, :list and typed code.
function Trace:frame(n)
  local levels = self:_user_levels()
  if #levels == 0 then error("no Lua frames: the trace has not started (:step) or has ended", 2) end
  n = tonumber(n) or self.frame_sel or 0
  if n < 0 or n >= #levels then error("no frame " .. n .. " (0.." .. (#levels - 1) .. ")", 2) end
  self.frame_sel = math.floor(n)
  return self:_frame_line(levels[n + 1], n)
end

-- ==== run sessions ===============================================================================

local Run = setmetatable({}, {__index = Session})
Run.__index = Run
Run.__tostring = function(s) return s.stop and tostring(s.stop) or "run session" end

local function user_tensors(args)
  local out = {}
  for i = 1, (args and (args.n or #args) or 0) do
    if torch.is_tensor(args[i]) then out[#out + 1] = args[i] end
  end
  return out
end

-- A new interpreter positioned before the first call_function node (placeholders run).
function Run:_fresh()
  local it = fxdb._interp(self.ep, user_tensors(self.args))
  while true do
    local nx = it:next_node()
    if not nx or nx.op == "call_function" or nx.op == "output" then break end
    it:step()
  end
  return it
end

-- Runs one node (applying an injected value); returns the node.
function Run:_run_one()
  local n = self.it:step()
  if n and self.overrides[n.name] ~= nil then self.it:set(n, self.overrides[n.name]) end
  if n and n.op == "call_function" then self.count = self.count + 1 end
  return n
end

function Run:_node_value(name, strict)
  local n = self.graph:node(name)
  if not n then return false end
  local v = self.it:value(n)
  if v == nil then
    if strict then error("%" .. name .. " has not run yet", 0) end
    return false
  end
  return true, v
end

-- Node names used as plain names in typed code: `:print mul` prints the value of %mul.
function Run:_name_value(k)
  if type(k) ~= "string" then return false end
  return self:_node_value(k)
end

function Run:_frame_info()
  local n = self.node
  return n and node_frames(n)[1] or nil
end

function Run:_module_stack()
  return self.node and node_mods(self.node) or {}
end

function Run:_mutation_of(n)
  local mu = n.meta.mutation
  if not mu then return nil end
  local kind
  for _, spec in ipairs(self.ep.graph_signature.input_specs) do
    if spec.target == mu.state or spec.arg.name == mu.state then kind = spec.kind end
  end
  return {target = mu.state, placeholder = mu.state, kind = kind or "USER_INPUT",
    version = mu.version,
          op = mu.from_op, view_path = mu.view_path}
end

function Run:_node_banner(n, bracket)
  local lines = {"stopped at %" .. n.name .. " (" .. n.target .. ")  " .. bracket}
  local wl = where_line(n)
  if wl then lines[#lines + 1] = wl end
  local ins = {}
  for _, a in ipairs(node_inputs(n)) do
    ins[#ins + 1] = a.name .. " " .. (a.type ~= "" and a.type or a.op)
  end
  local m = self:_mutation_of(n)
  local tail
  if m then
    tail = "-> new version " .. m.version .. " of " .. state_kind_word(m.kind) .. " '" ..
      m.target .. "'" ..
      (m.op and (" (from " .. m.op .. (m.view_path and (" through " .. m.view_path) or "") ..
        ")") or "")
  else
    tail = "-> " .. n.name .. (n.type ~= "" and (" " .. n.type) or "")
  end
  lines[#lines + 1] = "  in: " .. (#ins > 0 and table.concat(ins, ", ") or "(none)") .. "  " .. tail
  local v = self.it:value(n)
  if v ~= nil then
    local text = D.short_value(v)
    if type(v) == "table" then
      local parts = {}
      for i = 1, #v do parts[#parts + 1] = tostring(v[i]) end
      text = "(" .. table.concat(parts, ", ") .. ")"
    end
    lines[#lines + 1] = "  = " .. indent_rest(text, "    ")
  end
  return table.concat(lines, "\n")
end

function Run:_pause(n, bracket)
  self.node = n
  return make_stop(self, {reason = bracket:match("^%[(%a+)") or "stop", node = n,
                          banner = self:_node_banner(n, bracket)})
end

local RESULT_MT = {__tostring = function(r)
  local lines = {}
  for i, spec in ipairs(r.specs) do
    local label = spec.kind == "USER_OUTPUT" and ("output " .. spec.arg.name)
      or (spec.kind .. " " .. (spec.target or spec.arg.name))
    lines[#lines + 1] = label .. " = " .. tostring(r.values[i])
  end
  return table.concat(lines, "\n")
end}

function Run:_done()
  self.status = "finished"
  local values = self.it:outputs() or {}
  local specs = self.ep.graph_signature.output_specs
  local r = setmetatable({values = values, specs = specs, outputs = {}, mutations = {}}, RESULT_MT)
  for i, spec in ipairs(specs) do
    if spec.kind == "USER_OUTPUT" then r.outputs[#r.outputs + 1] = values[i]
    elseif spec.kind == "TOKEN" then r.token = values[i]
    else r.mutations[spec.target] = values[i] end
  end
  self.result = r
  self.node = nil
  return make_stop(self, {reason = "done", result = r, banner = "run finished: " ..
    counted("node", self.count) .. " executed\n" .. tostring(r)})
end

-- Advances the interpreter until a stop (see Trace:_advance for the modes).
function Run:_advance(mode)
  if self.status ~= "paused" then
    error("the run session has " .. (self.status == "error" and "failed" or "finished") ..
          "; start another with :run --step", 3)
  end
  local k = 0
  local ok, res = pcall(function()
    while true do
      local nx = self.it:next_node()
      if not nx then return self:_done() end
      if nx.op == "output" then
        self:_run_one()
        return self:_done()
      end
      if mode.kind == "finish" and not D.inside_module(nx, mode.depth, mode.module.path) then
        return self:_finish_stop(mode)
      end
      local prev = self.node
      local n = self:_run_one()
      self.node = n
      k = k + 1
      local ctx = {prev = prev, mutation = self:_mutation_of(n)}
      local hits = self:_match_break(n, ctx)
      if hits then return self:_pause(n, hit_break(hits)) end
      if mode.kind == "step" and k >= mode.n then return self:_pause(n, "[step]") end
      if mode.kind == "next" and D.next_stops(n, mode) then return self:_pause(n, "[next]") end
    end
  end)
  if ok then return res end
  if is_interrupt(res) then
    if self.node then return self:_pause(self.node, "[interrupted]") end
    return make_stop(self, {reason = "interrupted",
      banner = "interrupted before the first node  [Ctrl-C]"})
  end
  if type(res) == "table" and res.node then
    -- a kernel failed at a node: the session stays there
    self.status = "error"
    self.error = res
    local n = self.graph:node(res.node)
    self.node = n or self.node
    return make_stop(self, {reason = "error", error = res, node = n, banner =
      "error: " .. tostring(res.message or res) .. (n and ("\n  at %" .. n.name .. " (" ..
        n.target .. ")") or "") ..
      (n and where_line(n) and ("\n" .. where_line(n)) or "")})
  end
  error(res, 0)
end

function Run:_finish_stop(mode)
  local n = self.node
  local lines = {"finished " .. mod_str(mode.module) .. "  [finish]"}
  if n then
    local v = self.it:value(n)
    local shown = v ~= nil and (" = " .. indent_rest(D.short_value(v), "    ")) or ""
    lines[#lines + 1] = "  last: %" .. n.name .. " " .. n.type .. shown
  end
  local nx = self.it:next_node()
  if nx and where_line(nx) then lines[#lines + 1] = "  next:" .. where_line(nx):sub(2) end
  return make_stop(self, {reason = "finish", node = n, banner = table.concat(lines, "\n")})
end

function Run:step(n)
  n = tonumber(n) or 1
  if n < 1 then error("bad argument #1 to 'step' (a positive count expected)", 2) end
  return self:_advance({kind = "step", n = math.floor(n)})
end

function Run:next()
  if not self.node then return self:_advance({kind = "step", n = 1}) end
  return self:_advance(D.next_mode(self.node))
end

function Run:finish()
  local mods = self.node and node_mods(self.node) or {}
  if #mods <= 1 then return self:_advance({kind = "continue"}) end
  return self:_advance({kind = "finish", depth = #mods, module = mods[#mods]})
end

function Run:continue() return self:_advance({kind = "continue"}) end

function Run:advance_until(where)
  if where == nil or trim(where) == "" then return self:next() end
  local b = fxdb.break_on(where, {temporary = true})
  local ok, res = pcall(self._advance, self, {kind = "continue"})
  for i, x in ipairs(D.breaks) do if x == b then table.remove(D.breaks, i) break end end
  if not ok then error(res, 0) end
  return res
end
Run["until"] = Run.advance_until

-- Replays from the start to `count` nodes run (deterministic: same kernels, same inputs, the
-- injected values applied where they were).
function Run:_replay(count)
  self.it = self:_fresh()
  self.count, self.node = 0, nil
  self.status = "paused"
  while self.count < count do
    local nx = self.it:next_node()
    if not nx or nx.op == "output" then break end
    self.node = self:_run_one()
  end
end

function Run:reverse_step(n)
  n = tonumber(n) or 1
  if self.count == 0 and self.status == "paused" then
    error("already at the start of the run", 2)
  end
  local target = math.max(0, self.count - n)
  self:_replay(target)
  if not self.node then
    return make_stop(self, {reason = "start",
      banner = "back at the start of the run (before the first node)  [reverse-step]"})
  end
  return self:_pause(self.node, "[reverse-step]")
end

-- s:set(name, value): injects `value` as node name's value. A node already run gets it now and
-- everything run after it is replayed with it; a later node gets it when it runs.
function Run:set(name, value)
  name = tostring(name):gsub("^%%", "")
  local n = self.graph:node(name)
  if not n then error("no node named '" .. name .. "'", 2) end
  if n.op == "output" then error("cannot set the output node", 2) end
  self.overrides[name] = value
  local ran = self.it:value(n) ~= nil
  local msg = "%" .. name .. " := " .. tostring(value)
  if ran then
    local count = self.count
    local was_done = self.status == "finished"
    self:_replay(count)
    if was_done then self:_advance({kind = "continue"}) end
    msg = msg .. "\n  (replayed " .. counted("node", count) .. " with the new value" ..
      (was_done and "; outputs recomputed" or "") .. ")"
  else
    msg = msg .. "\n  (injected when %" .. name .. " runs)"
  end
  return msg
end

function Run:graph(stage)
  return fxdb.graph(stage or "exported", self.ep)
end

function Run:where()
  local lines = {}
  local n = self.node
  if not n then return "at the start of the run (no node executed yet)" end
  lines[1] = "#0  %" .. n.name .. " (" .. n.target .. ")"
  for i, f in ipairs(node_frames(n)) do
    lines[#lines + 1] = string.format("    %s:%d in %s   %s", f.file, f.line, f.func, f.code)
  end
  local mods = {}
  for _, e in ipairs(node_mods(n)) do mods[#mods + 1] = mod_str(e) end
  lines[#lines + 1] = "module stack: " .. (#mods > 0 and table.concat(mods, " > ") or "(none)")
  return table.concat(lines, "\n")
end

function Run:info_mutations()
  local lines = {}
  for _, n in ipairs(self.graph.nodes) do
    local mu = n.meta.mutation
    if mu and self.it:value(n) ~= nil then
      local f = node_frames(n)[1]
      local through = mu.view_path and (" through " .. mu.view_path) or ""
      lines[#lines + 1] = string.format("%s v%d  %%%s = %s  from %s%s   %s", mu.state,
        mu.version, n.name, n.target, mu.from_op or "?", through, loc_str(f))
    end
  end
  if #lines == 0 then return "no buffer or input versions made so far" end
  return table.concat(lines, "\n")
end

-- fxdb.run(ep, args, {step = true}) -> a run session paused before the first node; without
-- step, fxdb.run runs to the end (lua/fxdb.lua).
local run_to_end = fxdb.run
function fxdb.run(ep, args, opts)
  if not (opts and opts.step) then return run_to_end(ep, args, opts) end
  ep = ep or fxdb.current
  if ep == nil then error("no exported program: run :export first (or fxdb.export(m, args))", 2) end
  args = args or fxdb.current_args or {}
  D.end_session()
  local s = setmetatable({kind = "run", ep = ep, args = args, graph = ep.graph, overrides = {},
                          status = "paused", count = 0, opts = opts}, Run)
  s.it = s:_fresh()
  D.session = s
  fxdb.session = s
  fxdb._set_session_open(true)
  local nx = s.it:next_node()
  make_stop(s, {reason = "start", banner = "run session: paused before the first node" ..
    (nx and (" (%" .. nx.name .. ", " .. nx.target .. ")") or "") ..
    "\n  :step runs one node, :continue to a breakpoint, :print %name shows a value"})
  return s
end

-- ==== the current session's verbs ================================================================

-- Ends the current session: a paused trace restores its module and closes its coroutine.
function D.end_session()
  local s = D.session
  if not s then return end
  D.session, fxdb.session = nil, nil
  fxdb._set_session_open(false)
  if s.kind == "trace" and s.status == "paused" then
    s.status = "ended"
    E.restore(s.snap)
    if s.job and coroutine.status(s.job.co) == "suspended" then pcall(coroutine.close, s.job.co) end
  end
end

-- A paused trace holds its module's state swapped for tracing tensors: anything that exports or
-- runs that module (or one of its submodules) again ends the session first.
function D.release_module(m)
  local s = D.session
  if not (s and s.kind == "trace" and s.status == "paused") then return end
  for _, pair in ipairs(s.m:named_modules()) do
    if rawequal(pair[2], m) then return D.end_session() end
  end
  for _, pair in ipairs(m:named_modules()) do
    if rawequal(pair[2], s.m) then return D.end_session() end
  end
end

local export_verb, check_verb = fxdb.export, fxdb.check
function fxdb.export(m, ...)
  if type(m) == "table" and m.named_modules then D.release_module(m) end
  return export_verb(m, ...)
end
function fxdb.check(m, ...)
  local mod = m or fxdb.current_module
  if type(mod) == "table" and mod.named_modules then D.release_module(mod) end
  return check_verb(m, ...)
end

function fxdb.kill()
  if not fxdb.session then return "no session" end
  local kind = fxdb.session.kind
  D.end_session()
  return kind .. " session ended" .. (kind == "trace" and "; the module's state is restored" or "")
end

function fxdb.step(n) return current_session():step(n) end
function fxdb.next() return current_session():next() end
function fxdb.finish() return current_session():finish() end
function fxdb.continue() return current_session():continue() end
fxdb["until"] = function(where) return current_session():advance_until(where) end
fxdb.advance_until = fxdb["until"]
function fxdb.reverse_step(n) return current_session():reverse_step(n) end
fxdb["reverse-step"] = fxdb.reverse_step
function fxdb.where() return current_session():where() end
function fxdb.frame(n)
  local s = current_session()
  if not s.frame then error(":frame selects Lua frames of a trace session", 2) end
  return s:frame(n)
end
function fxdb.up(n)
  return fxdb.frame((current_session().frame_sel or 0) + (tonumber(n) or 1))
end
function fxdb.down(n)
  return fxdb.frame((current_session().frame_sel or 0) - (tonumber(n) or 1))
end

-- fxdb.set("%name EXPR") or fxdb.set(name, value): inject a value in a run session.
function fxdb.set(name, value)
  local s = current_session()
  if value == nil and type(name) == "string" then
    local n, expr = name:match("^%s*%%?([%a_][%w_]*)%s+(.+)$")
    if not n then error("usage: :set %NODE EXPR", 2) end
    value = fxdb.eval(expr)
    name = n
  end
  return s:set(name, value)
end

-- fxdb.list([where]) -> source lines around the pause (or around FILE:N / line N).
function fxdb.list(where)
  local s = fxdb.session
  local f = s and s:_frame_info()
  local file, line = f and f.file, f and f.line
  if where and trim(where) ~= "" then
    local wf, wl = trim(where):match("^(.*):(%d+)$")
    if wf then file, line = wf, tonumber(wl)
    elseif trim(where):match("^%d+$") then line = tonumber(trim(where))
    else error("usage: :list [N | FILE:N]", 2) end
  end
  if not file then error("no current line: start a session (:trace) or give FILE:N", 2) end
  local lines = source_lines(file)
  if not lines then error("cannot read " .. file, 2) end
  local lo, hi = math.max(1, line - 5), math.min(#lines, line + 5)
  local out = {}
  for i = lo, hi do
    local mark = (f and i == f.line and file == f.file) and "->" or "  "
    out[#out + 1] = string.format("%s %4d  %s", mark, i, lines[i])
  end
  return table.concat(out, "\n")
end

-- fxdb.info(topic): breaks | display | mutations | session
function fxdb.info(topic)
  topic = trim(topic or "")
  if topic == "" then error("usage: :info breaks | mutations | display | session | reinplace", 2) end
  if ("reinplace"):sub(1, math.max(#topic, 2)) == topic then
    local notes = fxdb._reinplace_notes
    if not notes then return "no fxdb.reinplace yet" end
    if notes == "" then return "fxdb.reinplace: no custom op to re-inplace" end
    return (notes:gsub("\n$", ""))
  end
  if topic:match("^b") or topic:match("^w") then   -- b, break, breaks, breakpoints, watch...
    if #D.breaks == 0 then return "no breakpoints" end
    local lines = {"Num  Type        Enb  Hits  What"}
    for _, b in ipairs(D.breaks) do
      lines[#lines + 1] = string.format("%-4d %-11s %-4s %-5d %s", b.id,
        b.kind == "watch" and "watchpoint" or (b.temporary and "tbreak" or "breakpoint"),
        b.enabled and "y" or "n", b.hits, bp_desc(b))
    end
    return table.concat(lines, "\n")
  end
  if ("display"):sub(1, #topic) == topic then
    if #D.displays == 0 then return "no displays" end
    local lines = {}
    for _, d in ipairs(D.displays) do lines[#lines + 1] = d.id .. ": " .. d.expr end
    return table.concat(lines, "\n")
  end
  if ("mutations"):sub(1, #topic) == topic then
    return current_session():info_mutations()
  end
  if ("session"):sub(1, #topic) == topic then
    local s = fxdb.session
    if not s then return "no session" end
    return s.kind .. " session, " .. s.status .. ", " .. counted("node", s.count) ..
      (s.kind == "trace" and " recorded" or " executed") ..
      (s.node and (", at %" .. s.node.name) or "")
  end
  error("unknown topic '" .. topic .. "' (breaks, mutations, display, session, reinplace)", 2)
end

-- ==== session-aware graph verbs ==================================================================

-- While a trace session is on, :graph, :code, :node, :users, :inputs and :find look at its raw
-- graph so far (or `:graph functional`: functionalized up to here).
local graph0, node0, find0, code0 = fxdb.graph, fxdb.node, fxdb.find, fxdb.code

local function trace_on()
  local s = fxdb.session
  return s and s.kind == "trace" and (s.status == "paused" or s.status == "error") and s or nil
end

function fxdb.graph(stage, ep)
  local s = ep == nil and trace_on()
  if s and (stage == nil or stage == "raw" or stage == "functional") then return s:graph(stage) end
  return graph0(stage, ep)
end

local function holder(g) return {graph = g} end

function fxdb.node(name, ep)
  local s = ep == nil and trace_on()
  return node0(name, s and holder(s.raw) or ep)
end

function fxdb.find(q, ep)
  local s = ep == nil and trace_on()
  return find0(q, s and holder(s.raw) or ep)
end

function fxdb.code(ep)
  local s = ep == nil and trace_on()
  if s then return fxdb._readable(s.raw) end
  return code0(ep)
end

-- names for Tab completion: node names of the graph in view, module paths, state names
function fxdb._complete_names(kind)
  local out = {}
  if kind == "break" then -- the kinds of WHERE (:break, :tbreak, :until)
    for k in pairs(KINDS) do out[#out + 1] = k end
    table.sort(out)
    return out
  end
  if kind == "why" then -- :why takes a state name or a symbol
    local ok, info = pcall(function() return fxdb.guards()._info end)
    for _, sym in ipairs(ok and info and info.symbols or {}) do out[#out + 1] = sym.name end
    kind = "state"
  end
  if kind == "local" then
    local s = fxdb.session
    local level = s and s.kind == "trace" and s.status ~= "finished" and s.job and s:_user_level()
    if level then
      for i = 1, 250 do
        local name = debug.getlocal(s.job.co, level, i)
        if not name then break end
        if not name:find("^%(") then out[#out + 1] = name end
      end
    end
    return out
  end
  if kind == "node" then
    local g
    local s = fxdb.session
    if s and s.kind == "trace" then g = s.raw elseif s and s.kind == "run" then g = s.graph
    elseif fxdb.current then g = fxdb.current.graph end
    if g then for _, n in ipairs(g.nodes) do out[#out + 1] = n.name end end
  else
    local m = (fxdb.session and fxdb.session.m) or fxdb.current_module
    if m and m.named_modules then
      for _, p in ipairs(m:named_modules()) do if p[1] ~= "" then out[#out + 1] = p[1] end end
      if kind ~= "module" then
        for _, st in ipairs(m:_named_state()) do out[#out + 1] = st.path end
      end
    end
    if kind ~= "module" and fxdb.current then
      for _, spec in ipairs(fxdb.current.graph_signature.input_specs) do
        out[#out + 1] = spec.target or spec.arg.name
      end
    end
  end
  return out
end

-- A session is also what fxdb.session holds; keep the classes reachable for tests and scripts.
D.Trace, D.Run = Trace, Run
