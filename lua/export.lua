-- lua/export.lua — torch.export.export: the Lua side of export.
-- Layer: lua (embedded). Swaps every parameter, buffer and plain tensor attribute of the module
-- for a tracing tensor (torch/export/_trace.py lifts them in the same order: parameters,
-- buffers, constants, user inputs), runs forward in a coroutine bound to the tracer, applies the
-- attribute-assignment rules of strict mode (Dynamo: watched at the assignment) and non-strict mode
-- (aot_autograd's _detect_attribute_assignment: compared after the call), then builds the
-- ExportedProgram in core. Whatever happens, the module's state is restored exactly as it was.

local E = torch._export
torch.export = torch.export or {}

-- Extra facts about a program that core does not keep: program -> {args = example inputs}.
local program_extra = setmetatable({}, {__mode = "k"})
E.program_extra = program_extra

-- ---- error objects ------------------------------------------------------------------------------

local ERROR_MT = debug.getregistry()["fxdb.Error"]

-- The innermost Lua frame that is not fxdb's own embedded library: {location, source, func}.
local function user_frame()
  for level = 2, 60 do
    local info = debug.getinfo(level, "Sln")
    if not info then break end
    local src = info.source or ""
    if info.what ~= "C" and src:sub(1, 7) ~= "=[fxdb " then
      local file = info.short_src
      if src:sub(1, 1) == "@" then file = src:sub(2) end
      local code = ""
      local fh = src:sub(1, 1) == "@" and io.open(src:sub(2), "r")
      if fh then
        local n = 0
        for line in fh:lines() do
          n = n + 1
          if n == info.currentline then code = line:match("^%s*(.-)%s*$"); break end
        end
        fh:close()
      end
      return {location = file .. ":" .. info.currentline, source = code, func = info.name}
    end
  end
  return {}
end

-- Raises an fxdb error object (same fields as the C side makes: kind, message, location, source,
-- hint, module, module_class).
local function export_error(kind, message, hint, frame)
  frame = frame or user_frame()
  local e = setmetatable({kind = kind, message = message, hint = hint, code = "FX_EEXPORT",
                          location = frame.location, source = frame.source, func = frame.func},
                         ERROR_MT)
  local stack = nn and nn._module_stack
  if stack and #stack > 0 then
    e.module, e.module_class = stack[#stack].path, stack[#stack].cls
  end
  error(e, 0)
end
E.export_error = export_error

-- The example value behind each input's tracing tensor (user inputs and module state), for
-- torch._dynamo.assume_constant_result (export_dynamic.lua). Weak keys: gone with the trace.
E.example_of = setmetatable({}, {__mode = "k"})

-- ---- warnings -----------------------------------------------------------------------------------
-- Python's warnings module, reduced to what fxdb needs: a warning is printed once per site (its
-- Lua location and message, as Python's "default" filter does), kept in fxdb.warnings(), and
-- raised as an fxdb error (kind "warning") when fxdb.simplefilter("error") is set. Actions:
-- "default" (once per site), "always", "ignore", "error".

fxdb = fxdb or {}
local warned, collected, action = {}, {}, "default"

-- E.warn(category, message[, frame]): category is PyTorch's class name ("UserWarning").
local function warn(category, message, frame)
  frame = frame or user_frame()
  if action == "ignore" then return end
  if action == "error" then
    local e = setmetatable({kind = "warning", category = category, message = message,
                            code = "FX_EEXPORT", location = frame.location, source = frame.source,
                            func = frame.func}, ERROR_MT)
    error(e, 0)
  end
  local w = {category = category, message = message, location = frame.location,
             source = frame.source}
  collected[#collected + 1] = w
  local key = tostring(frame.location) .. "\0" .. message
  if action == "always" or not warned[key] then
    warned[key] = true
    io.stderr:write((frame.location and (frame.location .. ": ") or ""), category, ": ",
                    message, "\n")
  end
end
E.warn = warn

-- fxdb.warnings([{clear = true}]) -> list of {category, message, location, source}, oldest first
-- (every warning since the last clear, also those not printed again).
function fxdb.warnings(opts)
  local out = table.move(collected, 1, #collected, 1, {})
  if type(opts) == "table" and opts.clear then collected = {} end
  return out
end

-- fxdb.simplefilter(action): "default" | "always" | "ignore" | "error" (Python's
-- warnings.simplefilter); returns the previous action.
function fxdb.simplefilter(a)
  if a ~= "default" and a ~= "always" and a ~= "ignore" and a ~= "error" then
    error("bad argument #1 to 'simplefilter' (invalid action: '" .. tostring(a) ..
          "'; expected default, always, ignore or error)", 2)
  end
  local prev = action
  action = a
  if a ~= prev then warned = {} end
  return prev
end

-- ---- tables reachable from module attributes ---------------------------------------------------
-- Lua objects a module holds in plain attributes (containers, and other objects such as a KV
-- cache with its own tables), each once. Modules, tensors and fxdb's own library tables are not
-- entered (modules are visited through named_modules).
local function attr_tables(m, fn)
  local seen = {[_G] = true, [torch] = true, [nn] = true, [fxdb] = true, [string] = true,
                [table] = true, [math] = true, [io] = true, [os] = true}
  local function walk(v)
    if type(v) ~= "table" or seen[v] or nn.is_module(v) then return end
    seen[v] = true
    fn(v)
    for _, x in next, v do walk(x) end
  end
  local mods = nn._module_list(m)
  for i = 1, #mods do
    local d = rawget(mods[i][2], "__dict")
    local order = d._attr_order
    for j = 1, #order do walk(d[order[j]]) end
  end
end

-- ---- snapshot and restore of module state --------------------------------------------------------

-- Plain tables reachable from a module's own table (its containers), two levels deep, each as
-- the table, its key count and its key / value pairs in the list part of snap (E.snapshot_tables /
-- E.restore_tables, in lx_export.c). snap.trees: the modules' _modules tables (restoring one of
-- them changes the module tree, which nn.lua's module-list cache must hear).
local function snapshot(m)
  local out, trees = E.snapshot_list(), {}
  local mods = nn._module_list(m)
  local snapshot_tables = E.snapshot_tables
  for i = 1, #mods do
    local mod = mods[i][2]
    trees[rawget(mod, "__dict")._modules] = true
    snapshot_tables(out, mod, 2)
  end
  attr_tables(m, function(t) snapshot_tables(out, t, 0) end)
  out.trees = trees
  out.module_stack = nn._module_stack
  out.paths = nn._paths
  out.on_setattr = nn._on_setattr
  return out
end

local function restore(snap)
  local tree_changed = E.restore_tables(snap, snap.trees)
  if tree_changed then nn._tree_changed() end
  nn._module_stack = snap.module_stack
  nn._paths = snap.paths
  nn._on_setattr = snap.on_setattr
end

-- ---- helpers ---------------------------------------------------------------------------------------

-- Names of forward's parameters after self (PyTorch names user inputs after them; the values of
-- a vararg forward are args_0, args_1, ..., counted from the first vararg).
local function input_names(m, n)
  local f = m.forward
  local names = {}
  local info = type(f) == "function" and debug.getinfo(f, "u") or {nparams = 1}
  -- named parameters after self (a bare vararg wrapper takes self in its varargs: none)
  local nnamed = math.max((info.nparams or 1) - 1, 0)
  for i = 1, n do
    local name = type(f) == "function" and i <= nnamed and debug.getlocal(f, i + 1) or nil
    if name == nil then name = (info.isvararg and "args_" or "arg") .. (i - nnamed - 1) end
    names[i] = name
  end
  return names
end

-- ---- pytrees ---------------------------------------------------------------------------------------
-- fxdb's pytree: a plain table (no metatable) is a container; its children come in order: the
-- list part 1..#t, then every other key sorted (numbers before strings). PyTorch keeps a dict's
-- insertion order, which a Lua table does not have; sorted keys are the stable substitute.

local function is_container(v)
  return type(v) == "table" and getmetatable(v) == nil
end

-- The order of a container's non-list keys: numbers before strings, each sorted.
local function key_less(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then return ta == "number" end
  return a < b
end

local function tree_keys(t)
  local n, keys, extra = #t, {}, {}
  for i = 1, n do keys[i] = i end
  for k in next, t do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then extra[#extra + 1] = k end
  end
  table.sort(extra, key_less)
  for _, k in ipairs(extra) do keys[#keys + 1] = k end
  return keys, n
end
E.tree_keys = tree_keys

-- Replaces every tensor leaf of v by leaf(tensor, path_name) (the tree is copied); path names
-- follow PyTorch's input naming: name_0, name_1 for list items, name_key for other keys.
local function tree_map_named(v, name, leaf)
  if torch.is_tensor(v) then return leaf(v, name) end
  if not is_container(v) then return v end
  local out, keys, n = {}, tree_keys(v)
  for _, k in ipairs(keys) do
    local kn = (math.type(k) == "integer" and k >= 1 and k <= n) and (k - 1) or k
    out[k] = tree_map_named(v[k], name .. "_" .. tostring(kn), leaf)
  end
  return out
end

-- A trailing table with only string keys is a call's keyword arguments (docs/API.md §3): its leaves
-- are named by their keys alone, as PyTorch names kwargs inputs.
local function is_kwargs(v)
  if not is_container(v) or #v > 0 or next(v) == nil then return false end
  for k in next, v do if type(k) ~= "string" then return false end end
  return true
end

-- Maps the user arguments of a call (args[1..n]) with leaf(tensor, name), names from `names`.
local function map_inputs(args, n, names, leaf)
  local out = {}
  for i = 1, n do
    local a = args[i]
    if i == n and is_kwargs(a) then
      out[i] = {}
      for _, k in ipairs((tree_keys(a))) do out[i][k] = tree_map_named(a[k], k, leaf) end
    else
      out[i] = tree_map_named(a, names[i], leaf)
    end
  end
  return out
end

-- The tensors of a call's arguments in pytree order (what the graph's user inputs are).
local function flatten_inputs(args, n)
  local leaves = {}
  local anon = setmetatable({}, {__index = function() return "arg" end}) -- names are not needed
  map_inputs(args, n or args.n or #args, anon, function(t) leaves[#leaves + 1] = t; return t end)
  return leaves
end

-- Outputs: every leaf of the returned values, in pytree order (tensors and other values).
local function flatten(v, out)
  if is_container(v) then
    for _, k in ipairs((tree_keys(v))) do flatten(v[k], out) end
  else
    out[#out + 1] = v
  end
  return out
end

-- p_layers_0_attention_wq_weight for ("p_", "layers.0.attention.wq.weight"); the names are kept
-- per path (a model's paths are the same at every export; the memo is emptied when it grows large).
local state_names, nstate_names = {}, 0
local function state_name(prefix, path)
  local key = prefix .. path
  local name = state_names[key]
  if name == nil then
    if nstate_names >= 100000 then state_names, nstate_names = {}, 0 end
    name = prefix .. (path:gsub("%.", "_"))
    state_names[key], nstate_names = name, nstate_names + 1
  end
  return name
end

local function full_path(mod, name)
  local p = nn._paths and nn._paths[mod] or ""
  return p == "" and name or (p .. "." .. name)
end

-- Non-strict mode: assignments are judged after the call, as aot_autograd does, but the hook
-- notes where each one happened, so the error can point at the assignment's Lua line.
local function nonstrict_hook(job)
  return function(mod, name)
    job.assigned[mod] = job.assigned[mod] or {}
    job.assigned[mod][name] = user_frame()
    return false
  end
end

-- Strict mode: module attribute assignments are watched as they happen (Dynamo's rules).
local function strict_hook(tr)
  return function(mod, name, value)
    local old_buffer = mod:_raw_get("buffer", name)
    if old_buffer ~= nil and rawequal(old_buffer, value) then
      return false -- `self.f = self.f:to(x.device)`: the buffer itself, no mutation
    end
    if old_buffer ~= nil and torch.is_tensor(value) then
      tr:assign_buffer(full_path(mod, name), old_buffer, value)
      return false -- the normal __setattr__ rebinds the buffer to the new tracing tensor
    end
    if mod:_raw_get("param", name) ~= nil then
      export_error("attribute_assignment",
        "Mutating module attribute " .. name .. " during export.",
        "parameters cannot be reassigned inside forward; update them in place under " ..
        "torch.no_grad() or make '" .. name .. "' a buffer")
    end
    if torch.is_tensor(value) or torch.is_tensor(mod:_raw_get("attr", name)) then
      export_error("attribute_assignment",
        "Mutating module attribute " .. name .. " during export.",
        'register it with self:register_buffer("' .. name ..
        '", ...) to export this as a buffer mutation')
    end
    return false
  end
end

-- ---- tensors assigned into container attributes ----------------------------------------------------
-- aot_autograd's _detect_attribute_assignment compares every module attribute with a pytree copy
-- taken before the call; a tensor leaf that is not the same object afterwards (or a new one) is an
-- assigned tensor attribute, named by its pytree path (self.tensors[0], self.cache['k']).

-- A copy of the containers of v (cycles kept as cycles of the copy).
local function tree_copy(v, seen)
  if not is_container(v) then return v end
  seen = seen or {}
  if seen[v] then return seen[v] end
  local c = {}
  seen[v] = c
  for key, x in next, v do c[key] = tree_copy(x, seen) end
  return c
end

-- mod, path, name, value, copy for every plain attribute of every module that is not a tensor
-- (containers are copied as pytrees), five list items each (no table per attribute: a model
-- has hundreds of numbers).
-- out.names: module -> set of its attribute names before the call.
local function container_snapshot(m)
  local out, is_tensor = {names = {}}, torch.is_tensor
  local mods = nn._module_list(m)
  for i = 1, #mods do
    local path, mod = mods[i][1], mods[i][2]
    local names, d = {}, rawget(mod, "__dict")
    local order = d._attr_order
    out.names[mod] = names
    for j = 1, #order do
      local name = order[j]
      local v = d[name]
      names[name] = true
      if not is_tensor(v) then
        local n = #out
        out[n + 1], out[n + 2], out[n + 3], out[n + 4] = mod, path, name, v
        out[n + 5] = is_container(v) and tree_copy(v) or v
      end
    end
  end
  return out
end

-- The keys of two containers together, in pytree order, and the longer list part's length.
local function union_keys(a, b)
  local keys, seen = {}, {}
  for _, t in ipairs{a, b} do
    for _, key in ipairs((tree_keys(t))) do
      if not seen[key] then seen[key] = true; keys[#keys + 1] = key end
    end
  end
  table.sort(keys, key_less)
  return keys, math.max(#a, #b)
end

local function key_str(key, n)
  if math.type(key) == "integer" and key >= 1 and key <= n then return "[" .. (key - 1) .. "]" end
  if type(key) == "string" then return "['" .. key .. "']" end
  return "[" .. tostring(key) .. "]"
end

-- Walks old and new together, descending where both are plain containers (each old container
-- once: a cycle stops), and calls leaf(path, old, new) at every other place they differ.
local function walk_pair(path, old, new, leaf, visited)
  if rawequal(old, new) then return end
  if is_container(old) and is_container(new) then
    if visited[old] then return end -- a cycle
    visited[old] = true
    local keys, n = union_keys(old, new)
    for _, key in ipairs(keys) do
      walk_pair(path .. key_str(key, n), old[key], new[key], leaf, visited)
    end
    return
  end
  leaf(path, old, new)
end

-- Dynamo's names of the objects a strict-mode forward changed: L['self'].x for a rebound
-- attribute, L['self'].y['k'] for a changed container item (non-tensor values).
local function side_effects(path, old, new, out)
  walk_pair(path, old, new, function(p, o, v)
    if torch.is_tensor(o) or torch.is_tensor(v) then return end
    if o ~= v or type(o) == "table" then out[#out + 1] = '"' .. p .. '"' end
  end, {})
end

-- Appends to `out` the paths under `path` whose tensor leaf differs between old and new.
local function compare_tree(path, old, new, out)
  walk_pair(path, old, new, function(p, _, v)
    if torch.is_tensor(v) then out[#out + 1] = p end
  end, {})
end

local function attribute_message(paths)
  local noun, verb = "attribute", "was"
  if #paths > 1 then noun, verb = "attributes", "were" end
  return "The tensor " .. noun .. " " .. table.concat(paths, ", ") .. " " .. verb ..
    " assigned during export. Such attributes must be registered as buffers using the " ..
    "`register_buffer` API " ..
    "(https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer)."
end

-- After forward: tensors written into a container the module still holds are refused (both
-- modes; the container is module state, not a traced value); a container attribute rebound to a
-- new table of tensors is PyTorch ≥ 2.6's warning (the new table is a traced local, as
-- model_attr_mutation exports in torch 2.10).
local function has_tensor(v, seen)
  if torch.is_tensor(v) then return true end
  if is_container(v) then
    seen = seen or {}
    if seen[v] then return false end
    seen[v] = true
    for _, x in next, v do if has_tensor(x, seen) then return true end end
  end
  return false
end

-- job.replay: the strict-mode side effects Dynamo applies to the module after a successful export
-- (attributes rebound, created or changed inside a container, holding no tensor), as
-- {mod, name, value = a pytree copy of the value forward left, into = the container itself when
-- it was changed in place}.
local function check_containers(job)
  local assigned, rebound, changed = {}, {}, {}
  job.replay = {}
  local containers = job.containers
  for i = 1, #containers, 5 do
    local now = rawget(containers[i], "__dict")[containers[i + 2]]
    -- the same value, and not a container whose contents may have changed: nothing to report
    if rawequal(now, containers[i + 3]) and not is_container(now) then goto next_attr end
    local c = {mod = containers[i], path = containers[i + 1], name = containers[i + 2],
               value = containers[i + 3], copy = containers[i + 4]}
    local rel = (c.path == "" and "" or (c.path .. ".")) .. c.name
    if rawequal(now, c.value) then
      compare_tree("self." .. rel, c.copy, now, assigned)
    else
      compare_tree("self." .. rel, c.copy, now, rebound)
    end
    if job.strict then
      local n = #changed
      side_effects("L['self']." .. rel, c.copy, now, changed)
      if #changed > n and not has_tensor(now) then
        local into = rawequal(now, c.value) and is_container(now) and now or nil
        local value = tree_copy(now)
        if into then -- the contents, with references to the container itself kept
          local seen = {[now] = now}
          value = {}
          for k, x in next, now do value[k] = tree_copy(x, seen) end
        end
        job.replay[#job.replay + 1] = {mod = c.mod, name = c.name, value = value, into = into}
      end
    end
    ::next_attr::
  end
  if job.strict then -- attributes forward created (tensors among them were refused already)
    local mods = nn._module_list(job.m)
    for i = 1, #mods do
      local mod, path = mods[i][2], mods[i][1]
      local names = job.containers.names[mod] or {}
      local d = rawget(mod, "__dict")
      local order = d._attr_order
      for j = 1, #order do
        local name = order[j]
        if not names[name] then
          changed[#changed + 1] = '"L[\'self\'].' .. (path == "" and "" or (path .. ".")) .. name .. '"'
          if not has_tensor(d[name]) then
            job.replay[#job.replay + 1] = {mod = mod, name = name, value = tree_copy(d[name])}
          end
        end
      end
    end
  end
  if #assigned > 0 then
    export_error("attribute_assignment", attribute_message(assigned),
      "register each tensor with self:register_buffer(name, t) and update it in place, or keep " ..
      "the container in a local variable", job.opts._call_frame)
  end
  if #rebound > 0 then warn("UserWarning", attribute_message(rebound), job.opts._call_frame) end
  if #changed > 0 then
    -- Dynamo replays these on the module after a strict export (torch.export.export applies
    -- job.replay once the export has succeeded) and warns
    warn("UserWarning", "While compiling, we found certain side effects happened in the " ..
      "model.forward. Here are the list of potential sources you can double check: [" ..
      table.concat(changed, ", ") .. "]", job.opts._call_frame)
  end
end

-- A mutated input (user input, buffer or parameter) that shares storage with another input
-- (two buffers viewing one base, a user input that is a view of a buffer): aot_autograd would
-- need a synthetic base, which the export workflow refuses. Without this the program would not
-- see a write through the other alias that eager sees.
local function check_aliased_inputs(ep, job)
  -- each input placeholder stands for one state entry or one user leaf: when no two of those
  -- share a storage there is nothing to find (the usual case; reading the signature costs more)
  local storages, shared = {}, false
  local storage_id = fxdb._storage_id
  for _, list in ipairs{job.state, job.leaves} do
    for i = 1, #list do
      local t = list[i].tensor
      local id = t and storage_id(t)
      if id then
        if storages[id] then shared = true break end
        storages[id] = true
      end
    end
    if shared then break end
  end
  if not shared then return end
  -- the value of every input placeholder: user inputs in leaf order, state by target
  local by_target = {}
  for _, s in ipairs(job.state) do by_target[s.path] = s.tensor end
  local inputs, k = {}, 0
  for _, spec in ipairs(ep.graph_signature.input_specs) do
    local t
    if spec.kind == "USER_INPUT" then
      k = k + 1
      t = job.leaves[k] and job.leaves[k].tensor
    else
      t = by_target[spec.target]
    end
    if t then
      inputs[#inputs + 1] = {name = spec.arg.name, target = spec.target or spec.arg.name,
                             user = spec.kind == "USER_INPUT", tensor = t}
    end
  end
  local mutated = {}
  for _, spec in ipairs(ep.graph_signature.output_specs) do
    if spec.kind ~= "USER_OUTPUT" and spec.kind ~= "TOKEN" then mutated[spec.target] = true end
  end
  local function label(i) return i.user and ("input '" .. i.name .. "'") or ("'" .. i.target .. "'") end
  -- inputs grouped by storage, so each mutated input is compared with its aliases only
  local by_storage = {}
  for _, i in ipairs(inputs) do
    local id = fxdb._storage_id(i.tensor)
    local g = by_storage[id]
    if not g then g = {}; by_storage[id] = g end
    g[#g + 1] = i
  end
  for _, a in ipairs(inputs) do
    if mutated[a.target] then
      for _, b in ipairs(by_storage[fxdb._storage_id(a.tensor)]) do
        if a ~= b and fxdb._same_storage(a.tensor, b.tensor) then
          export_error("aliased_input_mutation",
            "Encountered aliased inputs that are mutated in the graph, but this is not supported " ..
            "in the aot_export workflow (" .. label(a) .. " is mutated and shares storage with " ..
            label(b) .. ").",
            b.user and ("pass a clone of one of them (" .. b.name .. ":clone()), or mutate a local copy inside forward")
              or "register buffers that do not share storage (clone one of them), or mutate a local copy inside forward",
            E.call_frame)
        end
      end
    end
  end
end

-- ---- export ----------------------------------------------------------------------------------------

local NO_ALIASES = {}

-- Puts a tracing tensor into the slot (kind "param", "buffer" or "attr") where _named_state found
-- a state tensor: the slot exists, so a plain store (m:_raw_set without its method lookup and
-- ordered-map scan; snapshot / restore put the old value back).
local function swap_in(owner, kind, name, t)
  local d = rawget(owner, "__dict")
  if kind == "param" then d._parameters[name] = t
  elseif kind == "buffer" then d._buffers[name] = t
  else d[name] = t end
end

-- Export runs in three steps, so that a debugger session (lua/session.lua) can pause between
-- them: export_begin swaps the module's state for tracing tensors and makes the coroutine that
-- will run forward; export_resume runs (or resumes) it; export_complete checks attributes
-- (non-strict), appends the output node and builds the program. do_export chains them.
local function export_begin(m, args, opts, strict, tr)
  local paths, mods = {}, nn._module_list(m)
  for i = 1, #mods do paths[mods[i][2]] = mods[i][1] end

  -- Placeholder names (torch/_export/utils.py placeholder_naming_pass): user inputs keep their
  -- names and take them first; a clash appends _1, _2, ... to the later name, so lifted state
  -- named like a user input gets the suffix (p_param_1 beside a user input p_param).
  local nargs = args.n or #args
  local names, taken = input_names(m, nargs), {}
  local function unique(name)
    if taken[name] then
      local n = 1
      while taken[name .. "_" .. n] do n = n + 1 end
      name = name .. "_" .. n
    end
    taken[name] = true
    return name
  end
  local user_names = {}
  map_inputs(args, nargs, names, function(t, name)
    user_names[#user_names + 1] = unique(name)
    return t
  end)

  local state, statelist, ident = m:_named_state(), {}, {}
  for _, s in ipairs(state) do
    local kind, prefix
    if s.kind == "param" then kind, prefix = "PARAMETER", "p_"
    elseif s.kind == "buffer" then kind, prefix = "BUFFER", "b_"
    else kind, prefix = "CONSTANT_TENSOR", "c_" end
    s.traced = tr:input(kind, unique(state_name(prefix, s.path)), s.path, s.persistent, s.tensor)
    E.example_of[s.traced] = s.tensor
    swap_in(s.owner, s.kind, s.name, s.traced)
    if s.aliases then
      for _, a in ipairs(s.aliases) do swap_in(a.owner, a.kind, a.name, s.traced) end
    end
    if kind ~= "CONSTANT_TENSOR" then statelist[#statelist + 1] = {s.path, s.tensor} end
    ident[s.tensor] = s.traced
  end
  -- Lifting by tensor identity (as torch.export does): the same tensor held by another object the
  -- module reaches (a cache object whose tensors were registered as buffers) is the state input
  -- too, so a mutation through that object is a mutation of the registered name. The snapshot
  -- taken before export covers these tables, so they are put back afterwards.
  attr_tables(m, function(t)
    for k, v in next, t do
      local traced = ident[v]
      if traced ~= nil then rawset(t, k, traced) end
    end
  end)
  local containers = container_snapshot(m)

  -- dynamic_shapes: the symbols of the spec'd input dims (export_dynamic.lua)
  local dyn = E.dynamic_plan(tr, args, nargs, names, opts.dynamic_shapes, opts._call_frame)
  local leaves, k = {}, 0
  local targs = map_inputs(args, nargs, names, function(t, name)
    k = k + 1
    leaves[#leaves + 1] = {tensor = t, name = user_names[k]}
    local traced = dyn and dyn.input(k, t, user_names[k]) or
                   tr:input("USER_INPUT", user_names[k], nil, false, t)
    E.example_of[traced] = t
    return traced
  end)

  return {m = m, args = args, opts = opts, strict = strict, tr = tr, paths = paths,
          module_stack = {}, state = state, statelist = statelist, names = names, targs = targs,
          containers = containers, assigned = {}, -- assigned[module][name] = frame (non-strict)
          nargs = nargs, leaves = leaves, dyn = dyn,
          co = coroutine.create(function(...) return m(...) end)}
end

local function resume_bound(job, ...)
  nn._module_stack, nn._paths = job.module_stack, job.paths
  nn._on_setattr = job.strict and strict_hook(job.tr) or nonstrict_hook(job)
  E.active_tracer, E.active_strict = job.tr, job.strict -- higher-order ops record here (hop.lua)
  job.tr:bind(job.co, job.strict)
  return table.pack(coroutine.resume(job.co, ...))
end

-- Runs (or resumes) forward in job.co bound to the tracer, with the job's module paths, module
-- stack and (strict) attribute watch installed only while it runs; returns coroutine.resume's
-- results, packed. Whatever fails on the way (Lua running out of memory while installing them,
-- resuming or packing the results), they are all put back and the tracer unbound before the
-- error goes on: putting back assigns existing fields or nil, which needs no memory.
local function export_resume(job, ...)
  local outer_stack, outer_paths, outer_hook = nn._module_stack, nn._paths, nn._on_setattr
  local outer_tracer, outer_strict = E.active_tracer, E.active_strict
  local ok, res = pcall(resume_bound, job, ...)
  job.tr:unbind(job.co)
  nn._module_stack, nn._paths, nn._on_setattr = outer_stack, outer_paths, outer_hook
  E.active_tracer, E.active_strict = outer_tracer, outer_strict
  if not ok then error(res, 0) end
  return res
end

-- After forward returned (res: its packed resume results, res[1] == true).
local function export_complete(job, res)
  local opts, strict, tr, paths, state = job.opts, job.strict, job.tr, job.paths, job.state
  local statelist, args, names, nargs = job.statelist, job.args, job.names, job.nargs
  if not strict then
    -- aot_autograd's _detect_attribute_assignment: compare after the call.
    local slots = {}
    for _, s in ipairs(state) do
      slots[#slots + 1] = {s = s, owner = s.owner, kind = s.kind, name = s.name}
      for _, a in ipairs(s.aliases or NO_ALIASES) do
        slots[#slots + 1] = {s = s, owner = a.owner, kind = a.kind, name = a.name}
      end
    end
    for _, slot in ipairs(slots) do
      local s = slot.s
      local now = slot.owner:_raw_get(slot.kind, slot.name)
      if now ~= s.traced then
        if s.kind == "buffer" and torch.is_tensor(now) then
          tr:assign_buffer(s.path, s.traced, now)
        else
          export_error("attribute_assignment",
            "The tensor attribute self." .. s.path .. " was assigned during export. Such " ..
            "attributes must be registered as buffers using the `register_buffer` API " ..
            "(https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer).",
            'register it with self:register_buffer("' .. s.name .. '", ...) to export this as ' ..
            "a buffer mutation", (job.assigned[slot.owner] or {})[slot.name] or opts._call_frame)
        end
      end
    end
    -- tensor attributes that did not exist before the call
    for mod, path in pairs(paths) do
      for k, v in next, (rawget(mod, "__dict") or mod) do -- plain attributes live in __dict (nn.lua)
        if type(k) == "string" and torch.is_tensor(v) then
          local known = false
          for _, slot in ipairs(slots) do
            if slot.owner == mod and slot.name == k then known = true break end
          end
          if not known then
            local p = path == "" and k or (path .. "." .. k)
            export_error("attribute_assignment",
              "The tensor attribute self." .. p .. " was assigned during export. Such attributes " ..
              "must be registered as buffers using the `register_buffer` API " ..
              "(https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer).",
              'register it with self:register_buffer("' .. k .. '", ...)',
              (job.assigned[mod] or {})[k] or opts._call_frame)
          end
        end
      end
    end
  end

  check_containers(job)
  local outs = {}
  for i = 2, res.n do flatten(res[i], outs) end -- the returned values, pytrees flattened
  tr:finish(outs)
  if job.dyn then job.dyn.check() end
  local ep = tr:build(statelist, {training_ir = opts.ir == "training",
                                  lift_mutated_constants = opts.lift_mutated_constants,
                                  auto_functionalized_v2 = opts.auto_functionalized_v2})
  check_aliased_inputs(ep, job)
  E.pending_replay = job.replay
  return ep
end

local function do_export(m, args, opts, strict, tr)
  local job = export_begin(m, args, opts, strict, tr)
  local res = export_resume(job, table.unpack(job.targs, 1, job.nargs))
  if not res[1] then error(res[2], 0) end
  if coroutine.status(job.co) ~= "dead" then
    error("forward yielded during export; coroutines that yield are not supported inside forward", 0)
  end
  return export_complete(job, res)
end
E.export_begin, E.export_resume, E.export_complete = export_begin, export_resume, export_complete

-- Applies strict export's side effects to the module (check_containers' job.replay).
local function apply_replay(replay)
  for _, r in ipairs(replay) do
    if r.into then -- a container changed in place stays the same table
      for k in next, r.into do rawset(r.into, k, nil) end
      for k, v in next, r.value do rawset(r.into, k, v) end
    else
      r.mod:_raw_set("attr", r.name, r.value)
    end
  end
end

-- torch.export.export(m, args, {strict = true, real = false, ir = "functional",
--                                 lift_mutated_constants = false, auto_functionalized_v2 = false,
--                                 dynamic_shapes = nil}) -> ExportedProgram
-- dynamic_shapes (export_dynamic.lua): keyed by forward's parameter names ({x = {[0] = batch}})
-- or by position ({{[0] = batch}, nil}); a tensor's spec maps 0-based dims to a Dim, a derived
-- dim (2*batch), Dim.AUTO / DYNAMIC / STATIC or an integer; nested tables follow the input.
function torch.export.export(m, args, opts)
  opts = opts or {}
  if type(m) ~= "table" or not m.named_modules then
    error("bad argument #1 to 'export' (Module expected, got " .. type(m) .. ")", 2)
  end
  if args ~= nil and type(args) ~= "table" then
    error("bad argument #2 to 'export' (table of example inputs expected, got " .. type(args) .. ")", 2)
  end
  args = args or {}
  local strict = opts.strict ~= false
  opts._call_frame = user_frame()
  E.call_frame = opts._call_frame
  local tr = E.tracer{real = opts.real}
  local snap = snapshot(m)
  E.pending_replay = nil
  local ok, result = pcall(do_export, m, args, opts, strict, tr)
  restore(snap)
  if not ok then error(result, 0) end
  program_extra[result] = {args = args}
  -- the most recent export is the one the REPL's commands (:graph, :why, :run ...) work on
  local prev = fxdb and {fxdb.current, fxdb.current_module, fxdb.current_args}
  if fxdb then fxdb.current, fxdb.current_module, fxdb.current_args = result, m, args end
  -- strict mode: Dynamo's side effects on plain attributes (self.pos = self.pos + 1) are applied
  -- to the module after a successful export, last; non-strict mode restores them (aot_autograd).
  -- All or none: if applying them fails half way (Lua out of memory growing a list), the module
  -- and fxdb.current are put back as they were before the export.
  local replay = E.pending_replay
  E.pending_replay = nil
  if replay then
    local applied, err = pcall(apply_replay, replay)
    if not applied then
      restore(snap)
      if fxdb then fxdb.current, fxdb.current_module, fxdb.current_args = prev[1], prev[2], prev[3] end
      error(err, 0)
    end
  end
  return result
end

E.snapshot, E.restore, E.user_frame, E.input_names = snapshot, restore, user_frame, input_names
E.is_container, E.tree_keys, E.is_kwargs = is_container, tree_keys, is_kwargs
-- flatten_outputs(packed): the leaves of a table.pack of returned values
E.flatten_inputs, E.flatten = flatten_inputs, flatten
function E.flatten_outputs(packed)
  local out = {}
  for i = 1, packed.n or #packed do flatten(packed[i], out) end
  return out
end

-- ---- the ExportedProgram's PyTorch views ---------------------------------------------------------

-- ep.graph_signature's derived views, as torch.export.ExportGraphSignature has them. Maps are
-- ordered (pairs, :keys(), :values(), :items() follow the graph's order, as Python dicts do).
function E.decorate_signature(sig)
  local od = nn._ordered_dict
  local function put(map, k, v)
    local keys = getmetatable(map).keys
    if rawget(map, k) == nil then keys[#keys + 1] = k end
    rawset(map, k, v)
  end
  local d = {
    parameters = {}, buffers = {}, non_persistent_buffers = {}, lifted_tensor_constants = {},
    user_inputs = {}, user_outputs = {},
    inputs_to_parameters = od(), inputs_to_buffers = od(),
    inputs_to_lifted_tensor_constants = od(),
    buffers_to_mutate = od(), parameters_to_mutate = od(), user_inputs_to_mutate = od(),
  }
  for _, spec in ipairs(sig.input_specs) do
    local name, kind = spec.arg.name, spec.kind
    if kind == "PARAMETER" then
      d.parameters[#d.parameters + 1] = spec.target
      put(d.inputs_to_parameters, name, spec.target)
    elseif kind == "BUFFER" then
      d.buffers[#d.buffers + 1] = spec.target
      if spec.persistent == false then
        d.non_persistent_buffers[#d.non_persistent_buffers + 1] = spec.target
      end
      put(d.inputs_to_buffers, name, spec.target)
    elseif kind == "CONSTANT_TENSOR" then
      d.lifted_tensor_constants[#d.lifted_tensor_constants + 1] = spec.target
      put(d.inputs_to_lifted_tensor_constants, name, spec.target)
    elseif kind == "USER_INPUT" then
      d.user_inputs[#d.user_inputs + 1] = name
    end
  end
  for _, spec in ipairs(sig.output_specs) do
    local name, kind = spec.arg.name, spec.kind
    if kind == "BUFFER_MUTATION" then put(d.buffers_to_mutate, name, spec.target)
    elseif kind == "PARAMETER_MUTATION" then put(d.parameters_to_mutate, name, spec.target)
    elseif kind == "USER_INPUT_MUTATION" then put(d.user_inputs_to_mutate, name, spec.target)
    elseif kind == "USER_OUTPUT" then d.user_outputs[#d.user_outputs + 1] = name end
  end
  for k, v in next, d do rawset(sig, k, v) end
end


-- ep.<name> properties implemented in Lua (lx_export.c calls them with the program).
E.program_properties = {
  -- the example inputs export was called with, as (args, kwargs): {args..., n = N}, {}
  example_inputs = function(ep)
    local x = program_extra[ep]
    if not x then return nil end
    return x.args, {}
  end,
  -- {{fqn = "", signature = {inputs = {names}, outputs = {names}}}}: the root module's call
  -- (torch.export records submodules only with preserve_module_call_signature)
  module_call_graph = function(ep)
    local sig = ep.graph_signature
    return {{fqn = "", signature = {inputs = sig.user_inputs, outputs = sig.user_outputs}}}
  end,
  -- symbol -> {lower, upper}; every size is static until dynamic shapes land, so empty
  range_constraints = function(ep)
    local x = program_extra[ep]
    return x and x.range_constraints or {}
  end,
}

-- ---- grad mode -------------------------------------------------------------------------------------
-- torch.no_grad(fn, ...): runs fn with grad mode off (PyTorch's `with torch.no_grad():` block),
-- restoring the previous mode even when fn raises; returns fn's results. Inside a trace, ops
-- recorded there are marked, so a parameter updated under no_grad exports as PARAMETER_MUTATION.
function torch.no_grad(fn, ...)
  local prev = torch._set_grad_enabled(false)
  local res = table.pack(pcall(fn, ...))
  torch._set_grad_enabled(prev)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

function torch.set_grad_enabled(on)
  torch._set_grad_enabled(on and true or false)
end

function torch.is_grad_enabled()
  return torch._set_grad_enabled()
end

-- torch.export.save / torch.export.load are lua/lx_pt2.c (PT2 archives, docs/PT2.md).
