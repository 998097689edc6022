-- lua/nn.lua — nn.Module and the built-in modules, with PyTorch's attribute rules.
-- Layer: lua (embedded; its frames are skipped in stack traces and error locations).
--
-- An instance is a proxy table whose only raw field is `__dict` (PyTorch's __dict__), so every
-- attribute read and write goes through __index / __newindex, as every Python attribute access
-- goes through __getattr__ / __setattr__ — that is what lets strict export watch assignments.
-- __dict holds:
--   _parameters, _buffers, _modules   ordered maps: an array of names in registration order plus
--                                      name -> value entries (a nil value is PyTorch's None)
--   _non_persistent_buffers_set       {name = true}
--   _attr_order                       names of plain attributes in first-assignment order
--   training                          boolean
--   and every plain attribute.
-- Export hooks (used by lua/export.lua): nn._on_setattr, nn._module_stack, nn._paths,
-- m:_raw_get / m:_raw_set, m:_named_state.

local nn = {}
nn._module_stack = {}   -- {path = ..., cls = ...} per active module call, innermost last
nn._paths = nil         -- module -> dotted path, set by export
nn._on_setattr = nil    -- function(module, name, value) -> true to skip the assignment

-- A constructor, F function or module call given a value PyTorch refuses (PyTorch's message): an
-- fxdb error of kind "argument" at the user's line (lua/check.lua's arg_error; check.lua loads
-- after this file, before anything runs).
local function value_error(msg)
  fxdb._argcheck.arg_error(msg)
end

-- ==== parameters ===================================================================================

local param_set = setmetatable({}, {__mode = "k"})

-- nn.Parameter(t [, requires_grad = true]): marks t (the tensor itself, not a copy) as a
-- parameter; assigning it to a module attribute registers it.
function nn.Parameter(t, requires_grad)
  if not torch.is_tensor(t) then
    error("bad argument #1 to 'Parameter' (Tensor expected, got " .. type(t) .. ")", 2)
  end
  if requires_grad == nil then requires_grad = true end
  t.requires_grad = requires_grad and true or false
  param_set[t] = true
  return t
end

function nn.is_parameter(v) return param_set[v] == true end

-- ==== ordered maps ====================================================================================

local function om_has(m, k)
  for i = 1, #m do if m[i] == k then return true end end
  return false
end

local function om_set(m, k, v)
  if not om_has(m, k) then m[#m + 1] = k end
  m[k] = v
end

local function om_del(m, k)
  for i = 1, #m do
    if m[i] == k then table.remove(m, i); break end
  end
  m[k] = nil
end

-- ==== class machinery =================================================================================

local Module = {}
nn.Module = Module

local function dict(m) return rawget(m, "__dict") end

-- The module tree's version: bumped by every change to any module's _modules (add_module,
-- assigning or deleting a submodule, export's restore), so named_modules can keep its walk per
-- root and reuse it until the tree changes (export walks the tree several times per call).
local tree_version = 0
local function tree_changed() tree_version = tree_version + 1 end
nn._tree_changed = tree_changed
local module_lists = setmetatable({}, {__mode = "k"}) -- root -> {version, list}

local function is_module(v)
  if type(v) ~= "table" then return false end
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__class") ~= nil
end
nn.is_module = is_module

local function class_name(m)
  local mt = getmetatable(m)
  return mt and rawget(mt, "__name") or "Module"
end

-- PyTorch's torch.typename for assignment error messages.
local function typename(v)
  if torch.is_tensor(v) then return v:type() end
  if is_module(v) then return class_name(v) end
  local t = type(v)
  if t == "number" then return math.type(v) == "integer" and "int" or "float" end
  if t == "boolean" then return "bool" end
  if t == "string" then return "str" end
  if t == "nil" then return "NoneType" end
  return t
end

-- Where user code last read each submodule (self.lin): the call site of `return self.lin(x)`,
-- whose frame a Lua tail call removes before the submodule runs. inst_call keeps it in its
-- nn._module_stack entry and lx_where puts it back into stack traces.
-- The sites are {file, line, func} tables shared per place (torch._export.call_site, C).
local call_sites = setmetatable({}, {__mode = "k"})
local call_site, tailcalled = torch._export.call_site, torch._export.tailcalled

local function inst_index(self, k)
  local d = dict(self)
  if type(k) == "string" then
    local v = d._parameters[k]
    if v ~= nil then return v end
    v = d._buffers[k]
    if v ~= nil then return v end
    v = d._modules[k]
    if v ~= nil then
      local site = call_site()
      if site then call_sites[v] = site end
      return v
    end
    v = d[k]
    if v ~= nil then return v end
  elseif math.type(k) == "integer" or (type(k) == "number" and k == math.floor(k)) then
    -- container indexing, 0-based as in PyTorch (seq[0], layers[-1])
    local mods = d._modules
    local n = #mods
    local i = math.tointeger(k)
    if i < 0 then i = i + n end
    local name = mods[i + 1]
    if i >= 0 and name ~= nil then return mods[name] end
    if n > 0 then
      -- PyTorch's ModuleList / Sequential __getitem__: an index past the end is an IndexError,
      -- so `for i = 1, #layers do layers[i] ... end` (a 1-based loop) fails instead of
      -- skipping layer 0 silently
      error("IndexError: index " .. tostring(math.tointeger(k)) .. " is out of range", 2)
    end
    return nil
  end
  return getmetatable(self).__class[k]
end

local function remove_from(d, name, ...)
  for _, which in ipairs({...}) do
    if which == "dict" then
      if d[name] ~= nil then
        d[name] = nil
        local order = d._attr_order
        for i = 1, #order do if order[i] == name then table.remove(order, i); break end end
      end
    elseif which == "nonpersistent" then
      d._non_persistent_buffers_set[name] = nil
    else
      local m = d[which]
      if om_has(m, name) then om_del(m, name) end
    end
  end
end

-- PyTorch's Module.__setattr__.
local function inst_newindex(self, k, v)
  local hook = nn._on_setattr
  if hook and hook(self, k, v) then return end
  local d = dict(self)
  if type(k) ~= "string" then
    error("module attribute names must be strings, got " .. type(k), 2)
  end
  if param_set[v] then
    if d._modules[k] ~= nil then tree_changed() end
    remove_from(d, k, "dict", "_buffers", "_modules", "nonpersistent")
    om_set(d._parameters, k, v)
  elseif om_has(d._parameters, k) then
    if v ~= nil then
      error("cannot assign '" .. typename(v) .. "' as parameter '" .. k ..
            "' (torch.nn.Parameter or None expected)", 2)
    end
    d._parameters[k] = nil
  elseif is_module(v) then
    remove_from(d, k, "dict", "_parameters", "_buffers", "nonpersistent")
    om_set(d._modules, k, v)
    tree_changed()
  elseif om_has(d._modules, k) then
    if v ~= nil then
      error("cannot assign '" .. typename(v) .. "' as child module '" .. k ..
            "' (torch.nn.Module or None expected)", 2)
    end
    d._modules[k] = nil
    tree_changed()
  elseif om_has(d._buffers, k) then
    if v ~= nil and not torch.is_tensor(v) then
      error("cannot assign '" .. typename(v) .. "' as buffer '" .. k ..
            "' (torch.Tensor or None expected)", 2)
    end
    d._buffers[k] = v
  else
    if d[k] == nil and v ~= nil then
      local order = d._attr_order
      order[#order + 1] = k
    elseif v == nil then
      remove_from(d, k, "dict")
      return
    end
    d[k] = v
  end
end

-- The to-be-closed guard of inst_call: {stack, entry}; removes entry from stack.
local POP_ENTRY = {__close = function(g)
  local stack, entry = g[1], g[2]
  for i = #stack, 1, -1 do
    if stack[i] == entry then table.remove(stack, i); break end
  end
end}

-- Calls forward with the module pushed on nn._module_stack as {path, cls, module [, site]}: path
-- is nn._paths[self] during export, else derived from the calling module (its child's name), as
-- the module hierarchy gives it. The entry is popped when the call ends, also when forward raises (a to-be-closed guard, so the error object passes unchanged and
-- the stack is still visible to the error handler).
local function inst_call(self, ...)
  local forward = self.forward
  if forward == nil then
    error('Module [' .. class_name(self) .. '] is missing the required "forward" function', 2)
  end
  local stack = nn._module_stack
  local path = nn._paths and nn._paths[self]
  if path == nil then
    -- eager call: the path follows from the caller's entry and the name self has in it
    path = ""
    local parent = stack[#stack]
    if parent and parent.module then
      local mods = dict(parent.module)._modules
      for _, name in ipairs(mods) do
        if rawequal(mods[name], self) then
          path = parent.path == "" and name or (parent.path .. "." .. name)
          break
        end
      end
    end
  end
  local entry = {path = path, cls = class_name(self), module = self}
  if tailcalled() then entry.site = call_sites[self] end
  stack[#stack + 1] = entry
  local guard <close> = setmetatable({stack, entry}, POP_ENTRY)
  return forward(self, ...)
end

local function repr(m, indent)
  local lines = {}
  local extra = m.extra_repr and m:extra_repr() or ""
  local mods = dict(m)._modules
  local children = {}
  for _, name in ipairs(mods) do
    local c = mods[name]
    children[#children + 1] = "  (" .. name .. "): " ..
      (c and repr(c, indent .. "  "):gsub("\n", "\n  ") or "None")
  end
  if #children == 0 then return class_name(m) .. "(" .. extra .. ")" end
  lines[1] = class_name(m) .. "("
  if extra ~= "" then lines[#lines + 1] = "  " .. extra end
  for _, c in ipairs(children) do lines[#lines + 1] = c end
  lines[#lines + 1] = ")"
  return table.concat(lines, "\n")
end

debug.getregistry()["fxdb.module_call"] = inst_call

local function inst_len(self) return #dict(self)._modules end

-- An iterator over self's submodules in order, yielding (key(i, name), module).
local function children_iter(self, key)
  local mods = dict(self)._modules
  local i = 0
  return function()
    i = i + 1
    local name = mods[i]
    if name == nil then return nil end
    return key(i, name), mods[name]
  end
end

-- Iterates submodules in order as (index or name, module): for containers.
local function inst_pairs(self)
  return children_iter(self, function(_, name) return math.tointeger(tonumber(name)) or name end),
         self, nil
end

local function new_instance(cls, ...)
  local self = setmetatable({__dict = {
    _parameters = {}, _buffers = {}, _modules = {}, _non_persistent_buffers_set = {},
    _attr_order = {}, training = true,
  }}, rawget(cls, "__inst_mt"))
  local init = cls.init
  if init then init(self, ...) end
  return self
end

local CLASS_MT = {
  __call = function(cls, ...) return new_instance(cls, ...) end,
  __tostring = function(cls) return "<class '" .. rawget(cls, "__name") .. "'>" end,
}

local function make_class(name, parent)
  local cls = {}
  cls.__name = name
  cls.super = parent
  cls.__inst_mt = {
    __index = inst_index, __newindex = inst_newindex, __call = inst_call,
    __tostring = function(m) return repr(m, "") end,
    __len = inst_len, __pairs = inst_pairs,
    __name = name, __class = cls,
  }
  return setmetatable(cls, {
    __index = parent, __call = CLASS_MT.__call, __tostring = CLASS_MT.__tostring,
  })
end

-- Module:extend("Name") -> a new class deriving from this one; Name(...) builds an instance and
-- calls its init.
function Module:extend(name)
  if type(name) ~= "string" then
    error("bad argument #1 to 'extend' (class name expected, got " .. type(name) .. ")", 2)
  end
  return make_class(name, self)
end

do -- Module itself is a class
  local m = make_class("Module", nil)
  for k, v in pairs(m) do Module[k] = v end
  Module.__inst_mt.__class = Module
  setmetatable(Module, getmetatable(m))
end

-- ==== registration ==========================================================================================

local function check_name(kind, name, self, own)
  if type(name) ~= "string" then
    error(kind .. " name should be a string. Got " .. type(name), 3)
  end
  if name:find(".", 1, true) then error(kind .. ' name can\'t contain "."', 3) end
  if name == "" then error(kind .. ' name can\'t be empty string ""', 3) end
  local d = dict(self)
  local exists = (d[name] ~= nil or om_has(d._parameters, name) or om_has(d._buffers, name)
                  or om_has(d._modules, name) or getmetatable(self).__class[name] ~= nil)
  if exists and not om_has(d[own], name) then
    error("attribute '" .. name .. "' already exists", 3)
  end
end

-- m:register_buffer(name, tensor_or_nil [, {persistent = true}])
function Module:register_buffer(name, t, opts)
  check_name("buffer", name, self, "_buffers")
  if t ~= nil and not torch.is_tensor(t) then
    error("cannot assign '" .. typename(t) .. "' object to buffer '" .. name ..
          "' (torch Tensor or None required)", 2)
  end
  local persistent = true
  if type(opts) == "table" and opts.persistent ~= nil then persistent = opts.persistent
  elseif type(opts) == "boolean" then persistent = opts end
  local d = dict(self)
  om_set(d._buffers, name, t)
  d._non_persistent_buffers_set[name] = (not persistent) or nil
end

-- m:register_parameter(name, param_or_nil)
function Module:register_parameter(name, p)
  check_name("parameter", name, self, "_parameters")
  if p ~= nil and not param_set[p] then
    error("cannot assign '" .. typename(p) .. "' object to parameter '" .. name ..
          "' (torch.nn.Parameter or None required)", 2)
  end
  om_set(dict(self)._parameters, name, p)
end

-- m:add_module(name, module_or_nil) / m:register_module(...)
function Module:add_module(name, m)
  if m ~= nil and not is_module(m) then
    value_error(typename(m) .. " is not a Module subclass")
  end
  check_name("module", name, self, "_modules")
  om_set(dict(self)._modules, name, m)
  tree_changed()
end
Module.register_module = Module.add_module

-- ==== traversal =============================================================================================

local function walk_modules(self, memo, prefix)
  local out = {}
  local function walk(m, p)
    if memo[m] then return end
    memo[m] = true
    out[#out + 1] = {p, m}
    local mods = dict(m)._modules
    for i = 1, #mods do
      local name = mods[i]
      local c = mods[name]
      if c ~= nil then walk(c, p == "" and name or (p .. "." .. name)) end
    end
  end
  walk(self, prefix)
  return out
end

-- nn._module_list(m): m:named_modules() as one shared list, walked again only after the module
-- tree changed. Read-only for its callers (export.lua); named_modules hands out copies.
function nn._module_list(m)
  local c = module_lists[m]
  if c and c[1] == tree_version then return c[2] end
  local list = walk_modules(m, {}, "")
  module_lists[m] = {tree_version, list}
  return list
end

-- {{name, module}, ...} in pre-order, self first with name "" (or prefix); each module once.
function Module:named_modules(memo, prefix)
  if memo == nil and (prefix == nil or prefix == "") then
    local list, out = nn._module_list(self), {}
    for i = 1, #list do out[i] = {list[i][1], list[i][2]} end
    return out
  end
  return walk_modules(self, memo or {}, prefix or "")
end

function Module:modules()
  local out = {}
  for _, p in ipairs(self:named_modules()) do out[#out + 1] = p[2] end
  return out
end

function Module:named_children()
  local out, seen = {}, {}
  local mods = dict(self)._modules
  for _, name in ipairs(mods) do
    local c = mods[name]
    if c ~= nil and not seen[c] then
      seen[c] = true
      out[#out + 1] = {name, c}
    end
  end
  return out
end

function Module:children()
  local out = {}
  for _, p in ipairs(self:named_children()) do out[#out + 1] = p[2] end
  return out
end

-- Members of one kind ("_parameters" / "_buffers") over all modules, each tensor once.
local function named_members(self, which, recurse)
  local out, seen = {}, {}
  local mods = recurse == false and {{"", self}} or self:named_modules()
  for _, pm in ipairs(mods) do
    local prefix, m = pm[1], pm[2]
    local map = dict(m)[which]
    for _, name in ipairs(map) do
      local v = map[name]
      if v ~= nil and not seen[v] then
        seen[v] = true
        out[#out + 1] = {prefix == "" and name or (prefix .. "." .. name), v}
      end
    end
  end
  return out
end

function Module:named_parameters(opts)
  return named_members(self, "_parameters", not (type(opts) == "table" and opts.recurse == false))
end
function Module:named_buffers(opts)
  return named_members(self, "_buffers", not (type(opts) == "table" and opts.recurse == false))
end
function Module:parameters()
  local out = {}
  for _, p in ipairs(self:named_parameters()) do out[#out + 1] = p[2] end
  return out
end
function Module:buffers()
  local out = {}
  for _, p in ipairs(self:named_buffers()) do out[#out + 1] = p[2] end
  return out
end

function Module:get_submodule(target)
  local m = self
  if target == "" or target == nil then return m end
  for part in target:gmatch("[^.]+") do
    local c = dict(m)._modules[part]
    if c == nil then
      error(class_name(m) .. " has no attribute `" .. part .. "`", 2)
    end
    m = c
  end
  return m
end

-- ==== state dict ============================================================================================

-- An ordered string-keyed map: sd["a.b"] reads a value, pairs(sd) and sd:keys() follow
-- insertion order, #sd counts entries.
local SD_METHODS = {}
local SD_MT = {
  __index = SD_METHODS,
  __len = function(sd) return #getmetatable(sd).keys end,
  __pairs = function(sd)
    local keys, i = getmetatable(sd).keys, 0
    return function()
      i = i + 1
      local k = keys[i]
      if k == nil then return nil end
      return k, rawget(sd, k)
    end, sd, nil
  end,
  __name = "OrderedDict",
}
function SD_METHODS.keys(sd) return table.move(getmetatable(sd).keys, 1, #getmetatable(sd).keys, 1, {}) end
function SD_METHODS.values(sd)
  local out = {}
  for i, k in ipairs(getmetatable(sd).keys) do out[i] = rawget(sd, k) end
  return out
end
function SD_METHODS.items(sd)
  local out = {}
  for i, k in ipairs(getmetatable(sd).keys) do out[i] = {k, rawget(sd, k)} end
  return out
end

local function new_ordered()
  local mt = {keys = {}}
  for k, v in pairs(SD_MT) do mt[k] = v end
  return setmetatable({}, mt)
end
local function ordered_put(sd, k, v)
  local keys = getmetatable(sd).keys
  if rawget(sd, k) == nil then keys[#keys + 1] = k end
  rawset(sd, k, v)
end
nn._ordered_dict = new_ordered

-- PyTorch's state_dict order: a module's parameters, then its persistent buffers, then each
-- child recursively.
local function save_state(m, prefix, sd)
  local d = dict(m)
  for _, name in ipairs(d._parameters) do
    local v = d._parameters[name]
    if v ~= nil then ordered_put(sd, prefix .. name, v) end
  end
  for _, name in ipairs(d._buffers) do
    local v = d._buffers[name]
    if v ~= nil and not d._non_persistent_buffers_set[name] then ordered_put(sd, prefix .. name, v) end
  end
  for _, name in ipairs(d._modules) do
    local c = d._modules[name]
    if c ~= nil then save_state(c, prefix .. name .. ".", sd) end
  end
end

function Module:state_dict()
  local sd = new_ordered()
  save_state(self, "", sd)
  return sd
end

local function shape_str(t)
  return tostring(torch.Size(t.shape))
end

-- m:load_state_dict(sd [, {strict = true}]) -> {missing_keys = ..., unexpected_keys = ...}
-- sd may also be the path of a .safetensors file (torch.load_safetensors reads it).
-- Copies each value into the module's tensor in place (copy_). Errors as PyTorch words them.
function Module:load_state_dict(sd, opts)
  local strict = true
  if type(opts) == "table" and opts.strict ~= nil then strict = opts.strict
  elseif type(opts) == "boolean" then strict = opts end
  if type(sd) == "string" then sd = torch.load_safetensors(sd) end -- a .safetensors path
  if type(sd) ~= "table" then
    error("Expected state_dict to be dict-like, got " .. typename(sd) .. ".", 2)
  end
  local own = self:state_dict()
  local missing, unexpected, msgs = {}, {}, {}
  local to_copy = {}
  for _, key in ipairs(own:keys()) do
    local input = sd[key]
    if input == nil then
      missing[#missing + 1] = key
    elseif not torch.is_tensor(input) then
      msgs[#msgs + 1] = 'While copying the parameter named "' .. key .. '", expected torch.Tensor ' ..
                        "or Tensor-like object from checkpoint but received " .. typename(input)
    else
      local param = own[key]
      if not (input.shape == param.shape) then
        msgs[#msgs + 1] = "size mismatch for " .. key .. ": copying a param with shape " ..
                          shape_str(input) .. " from checkpoint, the shape in current model is " ..
                          shape_str(param) .. "."
      else
        to_copy[#to_copy + 1] = {param, input}
      end
    end
  end
  local keys = {}
  if getmetatable(sd) and getmetatable(sd).keys then keys = sd:keys()
  else
    for k in pairs(sd) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  end
  for _, k in ipairs(keys) do
    if own[k] == nil then unexpected[#unexpected + 1] = k end
  end
  if strict then
    local function quoted(list)
      local q = {}
      for i, k in ipairs(list) do q[i] = '"' .. tostring(k) .. '"' end
      return table.concat(q, ", ")
    end
    if #unexpected > 0 then
      table.insert(msgs, 1, "Unexpected key(s) in state_dict: " .. quoted(unexpected) .. ". ")
    end
    if #missing > 0 then
      table.insert(msgs, 1, "Missing key(s) in state_dict: " .. quoted(missing) .. ". ")
    end
  end
  if #msgs > 0 then
    error("Error(s) in loading state_dict for " .. class_name(self) .. ":\n\t" ..
          table.concat(msgs, "\n\t"), 2)
  end
  -- as PyTorch's _load_from_state_dict: param.copy_(input) under torch.no_grad()
  torch.no_grad(function()
    for _, pair in ipairs(to_copy) do pair[1]:copy_(pair[2]) end
  end)
  return {missing_keys = missing, unexpected_keys = unexpected}
end

-- ==== modes and conversions ====================================================================================

function Module:train(mode)
  if mode == nil then mode = true end
  if type(mode) ~= "boolean" then error("training mode is expected to be boolean", 2) end
  for _, pm in ipairs(self:named_modules()) do dict(pm[2]).training = mode end
  return self
end

function Module:eval() return self:train(false) end

function Module:requires_grad_(on)
  if on == nil then on = true end
  for _, p in ipairs(self:parameters()) do p.requires_grad = on end
  return self
end

-- m:to(dtype) / m:float() / m:half() / m:double(): floating parameters and buffers converted
-- (rebinding each to its converted tensor, which stays a parameter).
function Module:to(dtype)
  for _, pm in ipairs(self:named_modules()) do
    local d = dict(pm[2])
    for _, which in ipairs({"_parameters", "_buffers"}) do
      local map = d[which]
      for _, name in ipairs(map) do
        local t = map[name]
        if t ~= nil and t:is_floating_point() and t.dtype ~= dtype then
          local c = t:to(dtype)
          if which == "_parameters" then c = nn.Parameter(c, t.requires_grad) end
          map[name] = c
        end
      end
    end
  end
  return self
end
function Module:float() return self:to(torch.float32) end
function Module:half() return self:to(torch.float16) end
function Module:double() return self:to(torch.float64) end
function Module:bfloat16() return self:to(torch.bfloat16) end

function Module:extra_repr() return "" end

-- ==== export hooks =============================================================================================

local KIND_MAP = {param = "_parameters", buffer = "_buffers"}

-- m:_raw_get(kind, name): the parameter / buffer / plain attribute `name`, bypassing every hook.
function Module:_raw_get(kind, name)
  local d = dict(self)
  local which = KIND_MAP[kind]
  if which then return d[which][name] end
  if kind == "attr" then return d[name] end
  error("bad argument #1 to '_raw_get' (param, buffer or attr expected)", 2)
end

-- m:_raw_set(kind, name, value): writes state bypassing every hook and rule.
function Module:_raw_set(kind, name, value)
  local d = dict(self)
  local which = KIND_MAP[kind]
  if which then om_set(d[which], name, value); return end
  if kind == "attr" then
    if d[name] == nil and value ~= nil then d._attr_order[#d._attr_order + 1] = name end
    d[name] = value
    return
  end
  error("bad argument #1 to '_raw_set' (param, buffer or attr expected)", 2)
end

-- m:_named_state() -> list of {kind, path, name, owner, tensor, persistent}: parameters, then
-- buffers, then plain tensor attributes, each over named_modules() in registration order and
-- each tensor once (PyTorch's named_parameters / named_buffers remove duplicates); every other
-- slot holding the same tensor is listed in the entry's `aliases` ({kind, owner, name}; nil
-- when there is none).
function Module:_named_state()
  local out = {}
  local mods = nn._module_list(self)
  local seen = {}
  local function add(kind, prefix, m, name, t, persistent)
    if t == nil then return end
    if seen[t] then -- the same tensor in another slot (a buffer shared by two submodules)
      local first = seen[t]
      first.aliases = first.aliases or {}
      first.aliases[#first.aliases + 1] = {kind = kind, owner = m, name = name}
      return
    end
    local e = {kind = kind, path = prefix == "" and name or (prefix .. "." .. name),
               name = name, owner = m, tensor = t, persistent = persistent}
    seen[t] = e
    out[#out + 1] = e
  end
  local is_tensor = torch.is_tensor
  for i = 1, #mods do -- (plain loops: an export reads every module's state)
    local pm = mods[i]
    local map = rawget(pm[2], "__dict")._parameters
    for j = 1, #map do add("param", pm[1], pm[2], map[j], map[map[j]], true) end
  end
  for i = 1, #mods do
    local pm = mods[i]
    local d = rawget(pm[2], "__dict")
    local map, np = d._buffers, d._non_persistent_buffers_set
    for j = 1, #map do add("buffer", pm[1], pm[2], map[j], map[map[j]], not np[map[j]]) end
  end
  for i = 1, #mods do
    local pm = mods[i]
    local d = rawget(pm[2], "__dict")
    local order = d._attr_order
    for j = 1, #order do
      local v = d[order[j]]
      if is_tensor(v) then add("attr", pm[1], pm[2], order[j], v, false) end
    end
  end
  return out
end

-- Plain attributes of a module (not parameters, buffers or submodules): {name, value} pairs in
-- assignment order.
function Module:_named_attrs()
  local d, out = dict(self), {}
  for _, name in ipairs(d._attr_order) do out[#out + 1] = {name, d[name]} end
  return out
end

-- ==== built-in modules ===========================================================================================

local has = torch._has_op

local function opt(opts, key, default)
  if type(opts) == "table" and opts[key] ~= nil then return opts[key] end
  return default
end

-- The trailing arguments of a PyTorch-style call: positional values, then optionally a table of
-- keyword arguments (a plain table with no list part, so a size list stays positional). Returns
-- arg(i, key, default) — the i-th positional value when given, else opts[key], else default —
-- and the keyword table.
local function py_args(...)
  local args = table.pack(...)
  local opts, last = {}, args[args.n]
  if type(last) == "table" and getmetatable(last) == nil and rawlen(last) == 0 then
    opts = last
    args.n = args.n - 1
  end
  return function(i, key, default)
    if i <= args.n and args[i] ~= nil then return args[i] end
    return opt(opts, key, default)
  end, opts
end

-- A parameter of `shape` drawn from U(-bound, bound) in float32 (one torch.rand, so the
-- generator advances as PyTorch's init.uniform_ does), cast to `dtype` when given.
local function uniform_param(shape, bound, dtype)
  local t = torch.rand(shape) * (2 * bound) - bound
  if dtype then t = t:to(dtype) end
  return nn.Parameter(t)
end

-- Linear(in_features, out_features, {bias = true}): weight (out, in) and bias (out,) drawn from
-- U(-1/sqrt(in), 1/sqrt(in)) as PyTorch's kaiming_uniform_(a=sqrt(5)) and bias init give;
-- forward records aten.linear.
nn.Linear = Module:extend("Linear")
function nn.Linear:init(in_features, out_features, opts)
  local bias = opts
  if type(opts) ~= "boolean" then bias = opt(opts, "bias", true) end
  local dtype = opt(opts, "dtype", nil)
  self.in_features, self.out_features = in_features, out_features
  local bound = in_features > 0 and 1 / math.sqrt(in_features) or 0
  self.weight = uniform_param({out_features, in_features}, bound, dtype)
  if bias then
    self.bias = uniform_param({out_features}, bound, dtype)
  else
    self:register_parameter("bias", nil)
  end
end
function nn.Linear:forward(x) return torch.linear(x, self.weight, self.bias) end
function nn.Linear:extra_repr()
  return string.format("in_features=%d, out_features=%d, bias=%s", self.in_features,
                       self.out_features, tostring(self.bias ~= nil and "True" or "False"))
end

-- Conv1d / Conv2d(in_channels, out_channels, kernel_size[, stride[, padding[, dilation[, groups[,
-- bias]]]]][, {stride =, padding =, dilation =, groups =, bias =, padding_mode =, dtype =}]):
-- weight (out, in / groups, *kernel) and bias (out,) drawn from U(-1/sqrt(fan_in), 1/sqrt(fan_in))
-- as PyTorch's kaiming_uniform_(a=sqrt(5)) and bias init give (fan_in = in / groups * prod(kernel)).
-- forward is F.conv1d / F.conv2d (aten.convolution in the graph); padding_mode "reflect" or
-- "replicate" pads with F.pad first and convolves without padding, as PyTorch's _conv_forward.
local function tuple_of(v, n)
  if type(v) == "table" then return v end
  local t = {}
  for i = 1, n do t[i] = v end
  return t
end
local function tuple_str(t)
  if #t == 1 then return "(" .. t[1] .. ",)" end
  return "(" .. table.concat(t, ", ") .. ")"
end
local function all_eq(t, v)
  for _, x in ipairs(t) do if x ~= v then return false end end
  return true
end
local function conv_class(name, nsp, fn)
  local C = Module:extend(name)
  function C:init(in_channels, out_channels, kernel_size, ...)
    local arg, opts = py_args(...)
    local groups = arg(4, "groups", 1)
    if groups <= 0 then value_error("groups must be a positive integer") end
    if in_channels % groups ~= 0 then value_error("in_channels must be divisible by groups") end
    if out_channels % groups ~= 0 then value_error("out_channels must be divisible by groups") end
    local padding = arg(2, "padding", 0)
    local padding_mode = opt(opts, "padding_mode", "zeros")
    local modes = {zeros = true, reflect = true, replicate = true, circular = true}
    if not modes[padding_mode] then
      value_error("padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], " ..
                  "but got padding_mode='" .. tostring(padding_mode) .. "'")
    end
    self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
    self.kernel_size = tuple_of(kernel_size, nsp)
    self.stride = tuple_of(arg(1, "stride", 1), nsp)
    self.dilation = tuple_of(arg(3, "dilation", 1), nsp)
    if type(padding) == "string" then
      if padding ~= "same" and padding ~= "valid" then
        value_error("Invalid padding string '" .. padding .. "', should be one of {'valid', 'same'}")
      end
      if padding == "same" and not all_eq(self.stride, 1) then
        value_error("padding='same' is not supported for strided convolutions")
      end
      self.padding = padding
    else
      self.padding = tuple_of(padding, nsp)
    end
    self.padding_mode = padding_mode
    local fan_in = in_channels // groups
    for _, k in ipairs(self.kernel_size) do fan_in = fan_in * k end
    local bound = fan_in > 0 and 1 / math.sqrt(fan_in) or 0
    local shape = {out_channels, in_channels // groups}
    for _, k in ipairs(self.kernel_size) do shape[#shape + 1] = k end
    local dtype = opt(opts, "dtype", nil)
    self.weight = uniform_param(shape, bound, dtype)
    if arg(5, "bias", true) then
      self.bias = uniform_param({out_channels}, bound, dtype)
    else
      self:register_parameter("bias", nil)
    end
  end
  function C:forward(x)
    if self.padding_mode ~= "zeros" and self.padding ~= "valid" then
      if self.padding_mode == "circular" then
        error("nn." .. name .. ": padding_mode='circular' is not yet supported by fxdb", 2)
      end
      local pads = {}
      for i = nsp, 1, -1 do
        if self.padding == "same" then -- the total dil * (k - 1), the odd element on the right
          local total = self.dilation[i] * (self.kernel_size[i] - 1)
          pads[#pads + 1] = total // 2
          pads[#pads + 1] = total - total // 2
        else
          pads[#pads + 1] = self.padding[i]
          pads[#pads + 1] = self.padding[i]
        end
      end
      return fn(nn.functional.pad(x, pads, self.padding_mode), self.weight, self.bias, self.stride,
                tuple_of(0, nsp), self.dilation, self.groups)
    end
    return fn(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
  end
  function C:extra_repr()
    local s = string.format("%d, %d, kernel_size=%s, stride=%s", self.in_channels,
                            self.out_channels, tuple_str(self.kernel_size), tuple_str(self.stride))
    if type(self.padding) == "string" then
      s = s .. ", padding=" .. self.padding
    elseif not all_eq(self.padding, 0) then
      s = s .. ", padding=" .. tuple_str(self.padding)
    end
    if not all_eq(self.dilation, 1) then s = s .. ", dilation=" .. tuple_str(self.dilation) end
    if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
    if self.bias == nil then s = s .. ", bias=False" end
    if self.padding_mode ~= "zeros" then s = s .. ", padding_mode=" .. self.padding_mode end
    return s
  end
  return C
end
if has("convolution.default") then
  nn.Conv1d = conv_class("Conv1d", 1, function(...) return torch.conv1d(...) end)
  nn.Conv2d = conv_class("Conv2d", 2, function(...) return torch.conv2d(...) end)
end

nn.Identity = Module:extend("Identity")
function nn.Identity:forward(x) return x end

if has("relu.default") then
  nn.ReLU = Module:extend("ReLU")
  function nn.ReLU:forward(x) return torch.relu(x) end
end

if has("gelu.default") then
  nn.GELU = Module:extend("GELU")
  function nn.GELU:init(approximate)
    if type(approximate) == "table" then approximate = approximate.approximate end
    self.approximate = approximate or "none"
  end
  function nn.GELU:forward(x)
    if self.approximate == "none" then return torch.gelu(x) end
    return torch.gelu(x, {approximate = self.approximate})
  end
  function nn.GELU:extra_repr() return "approximate='" .. self.approximate .. "'" end
end

if has("silu.default") then
  nn.SiLU = Module:extend("SiLU")
  function nn.SiLU:forward(x) return torch.silu(x) end
end

-- F.dropout(input[, p = 0.5[, training = true[, inplace = false]]][, {p =, training =,
-- inplace =}]): PyTorch's F.dropout — p checked (its ValueError text), then aten.dropout, or
-- aten.dropout_ when inplace (functionalized into dropout + the write-back).
local function F_dropout(input, ...)
  local arg = py_args(...)
  local p, training, inplace = arg(1, "p", 0.5), arg(2, "training", true), arg(3, "inplace", false)
  if type(p) ~= "number" or p < 0 or p > 1 then
    value_error("dropout probability has to be between 0 and 1, but got " .. tostring(p))
  end
  local out
  if inplace then out = torch.dropout_(input, p, training) else out = torch.dropout(input, p, training) end
  return out -- not a tail call: the caller's line stays on the stack for the node's location
end

if has("dropout.default") then
  -- Dropout([p = 0.5[, inplace = false]]) or Dropout{p =, inplace =}
  nn.Dropout = Module:extend("Dropout")
  function nn.Dropout:init(p, inplace)
    if type(p) == "table" then p, inplace = p.p, p.inplace end
    p = p or 0.5
    if type(p) ~= "number" or p < 0 or p > 1 then
      value_error("dropout probability has to be between 0 and 1, but got " .. tostring(p))
    end
    self.p, self.inplace = p, inplace == true
  end
  -- identity in eval mode, as F.dropout(training=False) is
  function nn.Dropout:forward(x)
    if not self.training then return x end
    local out = F_dropout(x, self.p, true, self.inplace)
    return out
  end
  function nn.Dropout:extra_repr()
    return "p=" .. tostring(self.p) .. ", inplace=" .. (self.inplace and "True" or "False")
  end
end

if has("embedding.default") then
  -- Embedding(num_embeddings, embedding_dim, {padding_idx = i}): weight ~ N(0, 1); the row at
  -- padding_idx (negative counts from the end, as PyTorch normalizes it) starts at zero, and
  -- forward records aten.embedding(weight, idx[, padding_idx]) as F.embedding passes it.
  nn.Embedding = Module:extend("Embedding")
  function nn.Embedding:init(num_embeddings, embedding_dim, opts)
    self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
    local pad = opt(opts, "padding_idx", nil)
    if pad ~= nil then
      if pad >= num_embeddings or pad < -num_embeddings then
        value_error("Padding_idx must be within num_embeddings")
      end
      if pad < 0 then pad = num_embeddings + pad end
    end
    self.padding_idx = pad
    local w = torch.randn({num_embeddings, embedding_dim})
    local dtype = opt(opts, "dtype", nil)
    if dtype then w = w:to(dtype) end
    if pad ~= nil then w[pad] = 0 end
    self.weight = nn.Parameter(w)
  end
  function nn.Embedding:forward(idx)
    if self.padding_idx ~= nil then return torch.embedding(self.weight, idx, self.padding_idx) end
    return torch.embedding(self.weight, idx)
  end
  function nn.Embedding:extra_repr()
    local s = string.format("%d, %d", self.num_embeddings, self.embedding_dim)
    if self.padding_idx ~= nil then s = s .. ", padding_idx=" .. self.padding_idx end
    return s
  end
end

local function as_shape(s)
  if type(s) == "number" then return {s} end
  local out = {}
  for i = 1, #s do out[i] = s[i] end
  return out
end

if has("layer_norm.default") then
  nn.LayerNorm = Module:extend("LayerNorm")
  function nn.LayerNorm:init(shape, opts)
    self.normalized_shape = as_shape(shape)
    self.eps = opt(opts, "eps", 1e-5)
    self.elementwise_affine = opt(opts, "elementwise_affine", true)
    if self.elementwise_affine then
      self.weight = nn.Parameter(torch.ones(self.normalized_shape))
      if opt(opts, "bias", true) then
        self.bias = nn.Parameter(torch.zeros(self.normalized_shape))
      else
        self:register_parameter("bias", nil)
      end
    else
      self:register_parameter("weight", nil)
      self:register_parameter("bias", nil)
    end
  end
  function nn.LayerNorm:forward(x)
    if self.eps == 1e-5 then
      return torch.layer_norm(x, self.normalized_shape, self.weight, self.bias)
    end
    return torch.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
  end
  function nn.LayerNorm:extra_repr()
    return "(" .. table.concat(self.normalized_shape, ", ") .. ",), eps=" .. tostring(self.eps) ..
           ", elementwise_affine=" .. (self.elementwise_affine and "True" or "False")
  end
end

if has("rms_norm.default") then
  nn.RMSNorm = Module:extend("RMSNorm")
  function nn.RMSNorm:init(shape, opts)
    self.normalized_shape = as_shape(shape)
    self.eps = opt(opts, "eps", nil)
    self.elementwise_affine = opt(opts, "elementwise_affine", true)
    if self.elementwise_affine then
      self.weight = nn.Parameter(torch.ones(self.normalized_shape))
    else
      self:register_parameter("weight", nil)
    end
  end
  function nn.RMSNorm:forward(x)
    return torch.rms_norm(x, self.normalized_shape, self.weight, self.eps)
  end
  function nn.RMSNorm:extra_repr()
    return "(" .. table.concat(self.normalized_shape, ", ") .. ",), eps=" ..
           (self.eps == nil and "None" or tostring(self.eps)) .. ", elementwise_affine=" ..
           (self.elementwise_affine and "True" or "False")
  end
end

-- F.batch_norm(input, running_mean, running_var[, weight[, bias[, training[, momentum[, eps]]]]]
-- [, {weight =, bias =, training = false, momentum = 0.1, eps = 1e-5}]): PyTorch's F.batch_norm —
-- in training, more than one value per channel (its ValueError text), then aten.batch_norm,
-- which records _native_batch_norm_legit (training with running statistics: it updates them in
-- place), _native_batch_norm_legit.no_stats or _native_batch_norm_legit_no_training.
local function F_batch_norm(input, running_mean, running_var, ...)
  local arg = py_args(...)
  local weight, bias = arg(1, "weight", nil), arg(2, "bias", nil)
  local training, momentum, eps = arg(3, "training", false), arg(4, "momentum", 0.1), arg(5, "eps", 1e-5)
  if training then
    local size = input:size()
    local prods = size[1]
    for i = 3, #size do prods = prods * size[i] end
    if prods == 1 then
      value_error("Expected more than 1 value per channel when training, got input size " ..
                  "torch.Size([" .. table.concat(size, ", ") .. "])")
    end
  end
  local out = torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, true)
  return out -- not a tail call: the caller's line stays on the stack for the node's location
end

-- BatchNorm1d / BatchNorm2d / BatchNorm3d(num_features[, eps[, momentum[, affine[,
-- track_running_stats]]]][, {eps = 1e-5, momentum = 0.1, affine = true, track_running_stats =
-- true, dtype =}]): PyTorch's _BatchNorm. `momentum = false` stands for Python's None (a
-- cumulative moving average: the factor is 1 / num_batches_tracked, read with :item(); under
-- export, where the buffer has no value, graph ops compute the same average, see
-- _cumulative_average). weight = ones, bias = zeros
-- (affine); buffers running_mean = zeros, running_var = ones, num_batches_tracked = 0 (int64)
-- when track_running_stats. forward in training adds 1 to num_batches_tracked in place and
-- normalizes with the batch statistics, updating the running ones; in eval mode it uses the
-- running statistics (or the batch's when not tracked).
local function batch_norm_class(name, dims_ok, dims_text)
  local B = Module:extend(name)
  function B:init(num_features, ...)
    local arg, opts = py_args(...)
    self.num_features = num_features
    self.eps = arg(1, "eps", 1e-5)
    self.momentum = arg(2, "momentum", 0.1)
    if self.momentum == false then self.momentum = nil end
    self.affine = arg(3, "affine", true)
    self.track_running_stats = arg(4, "track_running_stats", true)
    local dtype = opt(opts, "dtype", nil)
    local function make(f, ...)
      local t = f(...)
      if dtype then t = t:to(dtype) end
      return t
    end
    if self.affine then
      self.weight = nn.Parameter(make(torch.ones, {num_features}))
      self.bias = nn.Parameter(make(torch.zeros, {num_features}))
    else
      self:register_parameter("weight", nil)
      self:register_parameter("bias", nil)
    end
    if self.track_running_stats then
      self:register_buffer("running_mean", make(torch.zeros, {num_features}))
      self:register_buffer("running_var", make(torch.ones, {num_features}))
      self:register_buffer("num_batches_tracked", torch.tensor(0, {dtype = torch.int64}))
    else
      self:register_buffer("running_mean", nil)
      self:register_buffer("running_var", nil)
      self:register_buffer("num_batches_tracked", nil)
    end
  end
  function B:forward(input)
    local nd = input:dim()
    if not dims_ok[nd] then
      value_error("expected " .. dims_text .. " input (got " .. nd .. "D input)")
    end
    local factor = self.momentum or 0.0
    if self.training and self.track_running_stats and self.num_batches_tracked ~= nil then
      self.num_batches_tracked:add_(1)
      if self.momentum == nil then
        if self.num_batches_tracked.is_meta then return self:_cumulative_average(input) end -- an export
        factor = 1.0 / self.num_batches_tracked:item()
      end
    end
    local bn_training = self.training or (self.running_mean == nil and self.running_var == nil)
    local use_stats = not self.training or self.track_running_stats
    return F_batch_norm(input, use_stats and self.running_mean or nil,
                        use_stats and self.running_var or nil, self.weight, self.bias, bn_training,
                        factor, self.eps)
  end
  -- momentum = None while exporting: num_batches_tracked has no value (item() would be an
  -- unbacked SymInt, and fxdb has no SymFloat for 1 / n; PyTorch's export fails on that
  -- float(num_batches_tracked)). The cumulative average is computed
  -- by graph ops instead (docs/CHOICES.md): batch norm with the batch statistics and no running
  -- ones, then f = 1 / num_batches_tracked and running = f * batch + (1 - f) * running in
  -- float64, as the CPU kernel's update (the mean, and the variance with Bessel's correction, of
  -- the batch in double precision), written back into the buffers.
  function B:_cumulative_average(input)
    local out = F_batch_norm(input, nil, nil, self.weight, self.bias, true, 0.0, self.eps)
    local dims = {0}
    for d = 2, input:dim() - 1 do dims[#dims + 1] = d end
    local x = input:to(torch.float64)
    local f = self.num_batches_tracked:to(torch.float64):reciprocal()
    local g = 1 - f
    self.running_mean:copy_(f * x:mean(dims) + g * self.running_mean:to(torch.float64))
    self.running_var:copy_(f * x:var(dims, {correction = 1}) + g * self.running_var:to(torch.float64))
    return out
  end
  function B:extra_repr()
    local m = self.momentum == nil and "None" or tostring(self.momentum)
    return string.format("%d, eps=%s, momentum=%s, affine=%s, track_running_stats=%s",
                         self.num_features, tostring(self.eps), m, self.affine and "True" or "False",
                         self.track_running_stats and "True" or "False")
  end
  return B
end
if has("batch_norm.default") then
  nn.BatchNorm1d = batch_norm_class("BatchNorm1d", {[2] = true, [3] = true}, "2D or 3D")
  nn.BatchNorm2d = batch_norm_class("BatchNorm2d", {[4] = true}, "4D")
  nn.BatchNorm3d = batch_norm_class("BatchNorm3d", {[5] = true}, "5D")
end

-- F.group_norm(input, num_groups[, weight[, bias[, eps]]][, {weight =, bias =, eps = 1e-5}]):
-- PyTorch's F.group_norm (at least 2 dims, more than one value per group), aten.group_norm.
local function F_group_norm(input, num_groups, ...)
  local arg = py_args(...)
  local nd = input:dim()
  if nd < 2 then
    value_error("Expected at least 2 dimensions for input tensor but received " .. nd)
  end
  local out = torch.group_norm(input, num_groups, arg(1, "weight", nil), arg(2, "bias", nil),
                               arg(3, "eps", 1e-5))
  return out -- not a tail call: the caller's line stays on the stack for the node's location
end

-- GroupNorm(num_groups, num_channels[, eps[, affine]][, {eps = 1e-5, affine = true, dtype =}]):
-- weight = ones, bias = zeros when affine; forward is F.group_norm.
if has("group_norm.default") then
  nn.GroupNorm = Module:extend("GroupNorm")
  function nn.GroupNorm:init(num_groups, num_channels, ...)
    local arg, opts = py_args(...)
    if num_channels % num_groups ~= 0 then
      value_error("num_channels must be divisible by num_groups")
    end
    self.num_groups, self.num_channels = num_groups, num_channels
    self.eps = arg(1, "eps", 1e-5)
    self.affine = arg(2, "affine", true)
    local dtype = opt(opts, "dtype", nil)
    if self.affine then
      local w, b = torch.ones({num_channels}), torch.zeros({num_channels})
      if dtype then w, b = w:to(dtype), b:to(dtype) end
      self.weight, self.bias = nn.Parameter(w), nn.Parameter(b)
    else
      self:register_parameter("weight", nil)
      self:register_parameter("bias", nil)
    end
  end
  function nn.GroupNorm:forward(x)
    local out = F_group_norm(x, self.num_groups, self.weight, self.bias, self.eps)
    return out
  end
  function nn.GroupNorm:extra_repr()
    return string.format("%d, %d, eps=%s, affine=%s", self.num_groups, self.num_channels,
                         tostring(self.eps), self.affine and "True" or "False")
  end
end

-- Sequential(m1, m2, ...) or Sequential{m1, m2, ...}: children named "0", "1", ...
nn.Sequential = Module:extend("Sequential")
function nn.Sequential:init(...)
  local mods = table.pack(...)
  if mods.n == 1 and type(mods[1]) == "table" and not is_module(mods[1]) then
    mods = mods[1]
    mods.n = #mods
  end
  for i = 1, mods.n do self:add_module(tostring(i - 1), mods[i]) end
end
function nn.Sequential:forward(x)
  local mods = dict(self)._modules
  for _, name in ipairs(mods) do
    local m = mods[name]
    if m ~= nil then x = m(x) end
  end
  return x
end
function nn.Sequential:append(m)
  self:add_module(tostring(#self), m)
  return self
end

-- ModuleList{m1, m2, ...}: indexable from 0 (layers[0], layers[-1]; past the end is PyTorch's
-- IndexError); `for i, layer in ipairs(layers)` visits every layer (i from 1), `pairs(layers)`
-- gives the 0-based indices.
nn.ModuleList = Module:extend("ModuleList")
function nn.ModuleList:init(list)
  for _, m in ipairs(list or {}) do self:append(m) end
end
function nn.ModuleList:append(m)
  self:add_module(tostring(#self), m)
  return self
end
function nn.ModuleList:extend(list)
  for _, m in ipairs(list) do self:append(m) end
  return self
end

-- ModuleDict{name = module, ...} (names sorted, since Lua tables have no order) or
-- ModuleDict{{"a", m1}, {"b", m2}} (that order).
nn.ModuleDict = Module:extend("ModuleDict")
function nn.ModuleDict:init(tbl)
  tbl = tbl or {}
  if #tbl > 0 then
    for _, pair in ipairs(tbl) do self:add_module(pair[1], pair[2]) end
  else
    local keys = {}
    for k in pairs(tbl) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do self:add_module(k, tbl[k]) end
  end
end
function nn.ModuleDict:keys()
  local out = {}
  for _, p in ipairs(self:named_children()) do out[#out + 1] = p[1] end
  return out
end
function nn.ModuleDict:values() return self:children() end
function nn.ModuleDict:items() return self:named_children() end

-- ipairs over a module (ModuleList, Sequential, ModuleDict, any module with submodules) visits
-- every submodule in order, as Python's `for layer in self.layers` does, counting positions from
-- 1 as ipairs always does. Without this, ipairs would index layers[1], layers[2], ... through
-- the 0-based __index and silently skip layer 0. Other values keep Lua's own ipairs.
local lua_ipairs = ipairs
function ipairs(v)
  -- plain tables (most calls) have no metatable and skip the module test
  if getmetatable(v) ~= nil and is_module(v) then return children_iter(v, function(i) return i end), v, 0 end
  return lua_ipairs(v)
end

-- nn.functional: the torch functions under PyTorch's F names.
-- Where F's signature differs from aten's, F has its own function.
nn.functional = setmetatable({batch_norm = has("batch_norm.default") and F_batch_norm or nil,
                              dropout = has("dropout_.default") and F_dropout or nil,
                              group_norm = has("group_norm.default") and F_group_norm or nil},
                             {__index = function(_, k) return torch[k] end})

torch.nn = nn
return nn
