-- lua/summary.lua — opening PT2 archives in the REPL (`fxdb model.pt2`, `:load model.pt2`) and
-- machine-readable summaries (`fxdb --json FILE...`). Layer: lua (embedded; loaded after fxdb.lua
-- and session_tools.lua).
--
--   fxdb.open(path) -> ep        torch.export.load(path) made the current program (fxdb.current),
--                                with zero tensors of the user inputs' shapes as its arguments, so
--                                :graph :sig :why :render :run work on it at once
--   fxdb.json_summary(ep) -> table   signature, op counts and every mutation with its provenance, as
--                                plain tables (the shape of one --json document)
--   fxdb._json_main(files)       one JSON document per file on its own line: a .pt2 is loaded and
--                                summarized; a .lua script is run and its last export summarized,
--                                with fxdb.check and fxdb.report results when it has a module.
--                                Returns true when every file was read.

-- a spec's argument name (graph_signature specs hold TensorArgument-like {name = ...})
local function argname(a) return type(a) == "table" and a.name or a end

-- zeros of each user input's placeholder type (a symbolic size at its example value)
local function zero_args(ep)
  local args = {}
  for _, spec in ipairs(ep.graph_signature.input_specs) do
    if spec.kind == "USER_INPUT" then
      local val
      for _, n in ipairs(ep.graph.nodes) do
        if n.name == argname(spec.arg) then val = n.meta.val end
      end
      if torch.is_tensor(val) then
        local shape = {}
        for i = 1, val:dim() do
          local d = val.shape[i]
          shape[i] = math.type(d) == "integer" and d or d:hint()
        end
        args[#args + 1] = torch.zeros(shape, val.dtype)
      else
        args[#args + 1] = 0
      end
    end
  end
  return args
end

function fxdb.open(path)
  local ep = torch.export.load(path)
  fxdb.current, fxdb.current_module, fxdb.current_args = ep, nil, zero_args(ep)
  return ep
end

local ARRAY = {__jsontype = "array"}
local function array(t) return setmetatable(t or {}, ARRAY) end

local function spec_list(specs)
  local out = array()
  for _, s in ipairs(specs) do
    out[#out + 1] = {kind = s.kind, arg = argname(s.arg), target = s.target, persistent = s.persistent}
  end
  return out
end

function fxdb.json_summary(ep)
  ep = ep or fxdb.current
  local sig = ep.graph_signature
  local ops, nnodes = {}, 0
  for _, n in ipairs(ep.graph.nodes) do
    nnodes = nnodes + 1
    if n.op == "call_function" then
      local t = tostring(n.target)
      ops[t] = (ops[t] or 0) + 1
    end
  end
  local mutations = array()
  for _, s in ipairs(sig.output_specs) do
    if s.kind ~= "USER_OUTPUT" and s.kind ~= "TOKEN" then
      local pv = fxdb.provenance(ep, s.target)
      local steps = array()
      for i = 1, pv.n do
        local st = pv[i]
        steps[#steps + 1] = {version = st.version, node = st.node and st.node.name,
                             target = st.target, from_op = st.from_op, view_path = st.view_path,
                             location = st.location, source = st.source}
      end
      mutations[#mutations + 1] = {kind = s.kind, target = s.target, output = argname(s.arg),
                                   walked = pv.walked or false, steps = steps,
                                   text = tostring(pv)}
    end
  end
  local state = {}
  for k, v in pairs(ep.state_dict) do state[k] = {dtype = tostring(v.dtype), shape = array(v:size())} end
  return {
    ir = ep.training_ir and "training" or "functional",
    signature = {inputs = spec_list(sig.input_specs), outputs = spec_list(sig.output_specs)},
    nodes = nnodes, ops = ops, mutations = mutations, state_dict = state,
  }
end

local function check_doc(m, ep, args)
  local ok, c = pcall(fxdb.check, m, ep, args)
  if not ok then return {ok = false, error = tostring(c)} end
  local entries = array()
  for _, e in ipairs(c.entries or {}) do
    entries[#entries + 1] = {what = e.what, type = e.type, max_abs_error = e.err, ok = e.ok}
  end
  return {ok = c.ok, max_abs_error = c.max_abs_error, entries = entries}
end

local function report_doc(m, args)
  local ok, r = pcall(fxdb.report, m, args)
  if not ok then return {error = tostring(r)} end
  local entries = array()
  for _, e in ipairs(r.entries or {}) do
    entries[#entries + 1] = {path = e.path, ok = e.ok, message = e.message or e.error and tostring(e.error)}
  end
  return {entries = entries, problems = type(r.problems) == "table" and #r.problems or r.problems, text = r.text}
end

function fxdb._json_main(files)
  local all_ok = true
  for _, file in ipairs(files) do
    local doc = {file = file}
    local ok, err = pcall(function()
      if file:match("%.pt2$") or not file:match("%.lua$") then
        local ep = torch.export.load(file)
        doc.format = "pt2"
        doc.program = fxdb.json_summary(ep)
        doc.check = {ok = false, error = "no eager module: a .pt2 file holds only the exported program"}
      else
        fxdb.current, fxdb.current_module, fxdb.current_args = nil, nil, nil
        local chunk = assert(loadfile(file))
        -- the script's own printing goes to stderr, so stdout holds only the documents
        local print0 = print
        print = function(...) -- luacheck: ignore
          local t = table.pack(...)
          for i = 1, t.n do t[i] = tostring(t[i]) end
          io.stderr:write(table.concat(t, "\t", 1, t.n), "\n")
        end
        local okc, e = pcall(chunk)
        print = print0 -- luacheck: ignore
        if not okc then error(e, 0) end
        doc.format = "lua"
        if not fxdb.current then error("the script exported nothing", 0) end
        doc.program = fxdb.json_summary(fxdb.current)
        if fxdb.current_module then
          doc.check = check_doc(fxdb.current_module, fxdb.current, fxdb.current_args)
          doc.report = report_doc(fxdb.current_module, fxdb.current_args)
        end
      end
    end)
    if not ok then
      all_ok = false
      doc.error = type(err) == "table" and tostring(err.message or err) or tostring(err)
    end
    io.stdout:write(fxdb._json_encode(doc), "\n")
  end
  io.stdout:flush()
  return all_ok
end
