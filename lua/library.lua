-- lua/library.lua — torch.library in Lua: custom ops defined at run time. Layer: lua (embedded).
-- An op is registered into the same table as the ATen ops (core/registry.c fx_op_register) and
-- read by the same schema parser, so it dispatches, traces, prints and interprets like them; its
-- target prints with its namespace (torch.ops.mylib.update_cache.default). Its kernels are Lua
-- functions kept per dispatch key in fxdb._library_impls[target] and called by lua/lx_library.c:
--   "CPU" / "CompositeExplicitAutograd"  the kernel (real tensors); its writes are checked
--                                       eagerly against the schema's (a!) marks, as opcheck does
--   "Meta"                              the fake impl (torch.library.register_fake): meta tensors
--                                       in, meta tensors out; what it calls is not recorded
--   "CompositeImplicitAutograd"         traced through: the graph holds the ops it calls
-- Follows torch/library.py and torch/_library/custom_ops.py (PyTorch 2.5).
torch.library = torch.library or {}
local L = torch.library
local impls = fxdb._library_impls

-- A wrong argument or value (PyTorch's message): an fxdb error of kind "argument" at the user's
-- line (lua/check.lua's arg_error; check.lua loads after this file, before anything runs).
local function lib_error(msg)
  fxdb._argcheck.arg_error(msg)
end

local KEYS = {
  cpu = "CPU", CPU = "CPU", default = "CompositeExplicitAutograd",
  CompositeExplicitAutograd = "CompositeExplicitAutograd",
  CompositeImplicitAutograd = "CompositeImplicitAutograd",
  Meta = "Meta", meta = "Meta",
}

-- "mylib::foo" or "mylib::foo.overload" -> ns, name, overload
local function split_qualname(qualname, fname, level)
  level = level or 3
  if type(qualname) ~= "string" then
    lib_error(("bad argument #1 to '%s' (string expected, got %s)"):format(fname, type(qualname)))
  end
  local ns, rest = qualname:match("^([%a_][%w_]*)::(.+)$")
  if not ns then
    lib_error(("%s: expected a qualname like \"mylib::foo\", got \"%s\""):format(fname, qualname))
  end
  local name, ov = rest:match("^([%a_][%w_]*)%.([%a_][%w_]*)$")
  if not name then name, ov = rest:match("^([%a_][%w_]*)$"), "default" end
  if not name then
    lib_error(("%s: \"%s\" is not a valid operator name"):format(fname, qualname))
  end
  return ns, name, ov
end

-- torch.ops.<ns>: a table of op packets; packet.<overload> is the OpOverload, packet(...) calls
-- the only overload or, with several, the first that binds.
local PACKET = {}
PACKET.__index = PACKET
PACKET.__call = function(p, ...)
  local ovs = rawget(p, "_overloads")
  if #ovs == 1 then return p[ovs[1]](...) end
  local errs = {}
  for _, ov in ipairs(ovs) do
    local r = table.pack(pcall(p[ov], ...))
    if r[1] then return table.unpack(r, 2, r.n) end
    errs[#errs + 1] = tostring(r[2])
  end
  error(table.concat(errs, "\n"), 2)
end
PACKET.__tostring = function(p) return rawget(p, "_qualname") end

local function namespace(ns)
  local t = rawget(torch.ops, ns)
  if not t then
    t = {}
    rawset(torch.ops, ns, t)
  end
  return t
end

local function add_overload(ns, name, ov, target)
  local space = namespace(ns)
  local p = rawget(space, name)
  if not p then
    p = setmetatable({_overloads = {}, _qualname = ns .. "." .. name}, PACKET)
    rawset(space, name, p)
  end
  rawset(p, ov, fxdb._op_overload(target))
  table.insert(p._overloads, ov)
end

local function entry(qualname, fname, level)
  level = level or 3
  local ns, name, ov = split_qualname(qualname, fname, level + 1)
  local target = ns .. "." .. name .. "." .. ov
  local e = impls[target]
  if not e then
    lib_error(("%s: operator %s::%s does not exist: define it first (torch.library.define)")
      :format(fname, ns, name .. (ov ~= "default" and "." .. ov or "")))
  end
  return e, target
end

-- torch.library.define("mylib::foo", "(Tensor x, Tensor(a!) y) -> Tensor") -> the OpOverload.
function L.define(qualname, schema)
  local ns, name, ov = split_qualname(qualname, "define")
  if type(schema) ~= "string" then
    lib_error("bad argument #2 to 'define' (schema string expected, got " .. type(schema) .. ")")
  end
  local full = name .. (ov ~= "default" and "." .. ov or "") .. schema
  local target = fxdb._library_register(ns, full)
  impls[target] = {}
  add_overload(ns, name, ov, target)
  return torch.ops[ns][name][ov]
end

local function set_impl(qualname, key, fn, fname)
  local e, target = entry(qualname, fname, 4)
  if type(fn) ~= "function" then
    lib_error(("bad argument to '%s' (function expected, got %s)"):format(fname, type(fn)))
  end
  e[key] = fn
  if key == "CompositeImplicitAutograd" then fxdb._library_set_composite(target, true) end
end

-- torch.library.impl("mylib::foo", "cpu", fn); without fn, returns function(fn) (the decorator).
-- types: "cpu", "CompositeExplicitAutograd" ("default"), "CompositeImplicitAutograd", "Meta".
function L.impl(qualname, types, fn)
  local list = type(types) == "table" and types or {types}
  for _, t in ipairs(list) do
    if not KEYS[t] then
      lib_error(("impl: unknown device type or dispatch key '%s' (fxdb has cpu, "
        .. "CompositeExplicitAutograd, CompositeImplicitAutograd, Meta)"):format(tostring(t)))
    end
  end
  entry(qualname, "impl", 3) -- an undefined op is named at the caller's line
  local function reg(f)
    for _, t in ipairs(list) do set_impl(qualname, KEYS[t], f, "impl") end
    return f
  end
  if fn == nil then return reg end
  return reg(fn)
end

-- torch.library.register_fake("mylib::foo", fn): fn gets meta tensors, returns meta tensors.
function L.register_fake(qualname, fn)
  if type(qualname) == "table" and qualname._qualname then qualname = qualname._qualname end
  if fn == nil then return function(f) set_impl(qualname, "Meta", f, "register_fake"); return f end end
  set_impl(qualname, "Meta", fn, "register_fake")
  return fn
end
L.impl_abstract = L.register_fake

-- torch.library.custom_op("mylib::foo", fn, {schema = "(Tensor x, Tensor(a!) y) -> ()"}):
-- defines the op with fn as its CompositeExplicitAutograd kernel and returns the op object
-- (callable; op:register_fake(fn)). Lua functions carry no type hints, so the schema is given
-- (PyTorch infers it from the annotations and mutates_args); mutates_args, when given, must name
-- exactly the (a!) arguments.
function L.custom_op(qualname, fn, opts)
  if type(fn) ~= "function" then
    lib_error("bad argument #2 to 'custom_op' (function expected, got " .. type(fn) .. ")")
  end
  opts = opts or {}
  if type(opts.schema) ~= "string" then
    lib_error("custom_op: Lua functions carry no type annotations: give the schema, e.g. "
      .. "{schema = \"(Tensor x) -> Tensor\", mutates_args = {}}")
  end
  local ovl = L.define(qualname, opts.schema)
  set_impl(qualname, "CompositeExplicitAutograd", fn, "custom_op")
  if opts.mutates_args ~= nil and opts.mutates_args ~= "unknown" then
    local marked = {}
    -- Tensor(a!) x, Tensor(a!)? x, Tensor(a!)[] xs
    for a in opts.schema:gmatch("Tensor%(%a+!%)[%?%[%]%d]*%s+([%w_]+)") do marked[a] = true end
    for _, a in ipairs(opts.mutates_args) do
      if not marked[a] then
        lib_error(("custom_op: mutates_args names '%s' but the schema does not mark it Tensor(a!)")
          :format(a))
      end
      marked[a] = nil
    end
    local left = next(marked)
    if left then
      lib_error(("custom_op: the schema marks '%s' Tensor(a!) but mutates_args does not name it")
        :format(left))
    end
  end
  local op = {_qualname = qualname, _opoverload = ovl}
  function op.register_fake(self, f)
    if f == nil then f = self end -- op.register_fake(f) as well as op:register_fake(f)
    return L.register_fake(qualname, f)
  end
  function op.register_kernel(self, types, f)
    if f == nil then types, f = self, types end
    return L.impl(qualname, types, f)
  end
  return setmetatable(op, {
    __call = function(_, ...) return ovl(...) end,
    __tostring = function() return "<CustomOpDef(" .. qualname .. ")>" end,
  })
end

-- torch.library._register_effectful_op(op, effect): op (an OpOverload, "mylib::log",
-- "mylib.log.default" or "aten::_print") has an ordered side effect: the functional IR threads
-- it through an effect token (higher_order.with_effects), so effectful ops keep their order.
-- effect: "ORDERED" (the only kind, torch._higher_order_ops.effects._EffectType), the default;
-- nil/false unregisters. Follows torch/_higher_order_ops/effects.py (torch 2.5).
function L._register_effectful_op(op, effect)
  local name = type(op) == "table" and op._qualname or op
  if type(op) == "userdata" then name = tostring(op) end
  if type(name) ~= "string" then
    lib_error("bad argument #1 to '_register_effectful_op' (op or qualname expected, got " .. type(op) .. ")")
  end
  if effect ~= nil and effect ~= false and effect ~= "ORDERED" then
    lib_error("_register_effectful_op: unknown effect type '" .. tostring(effect) .. "' (fxdb knows ORDERED)")
  end
  local ok, target = pcall(fxdb._library_set_effectful, name, effect ~= false)
  if not ok then
    lib_error("_register_effectful_op: there is no op " .. name)
  end
  -- torch asserts not has_aliasing(op): an op that mutates or aliases an argument cannot carry
  -- an effect token (its schema has Tensor(a) / Tensor(a!))
  local ovl = fxdb._op_overload(target)
  if effect ~= false and ovl.schema:find("Tensor%(%a") then
    fxdb._library_set_effectful(name, false)
    lib_error("_register_effectful_op: " .. target .. " has aliasing annotations in its schema ("
      .. ovl.schema .. "); only ops that neither mutate nor alias their arguments can be effectful")
  end
  return target
end

-- torch.library.Library("mylib", "DEF" | "FRAGMENT" | "IMPL"): lib:define(schema),
-- lib:impl(name, fn, key).
function L.Library(ns, kind)
  if type(ns) ~= "string" then lib_error("bad argument #1 to 'Library' (string expected)") end
  if kind ~= nil and kind ~= "DEF" and kind ~= "IMPL" and kind ~= "FRAGMENT" then
    lib_error("Library: Unsupported kind: " .. tostring(kind) .. " (DEF, IMPL or FRAGMENT)") -- torch's ValueError
  end
  local lib = {ns = ns, kind = kind}
  function lib.define(self, schema)
    if type(schema) ~= "string" then
      lib_error("bad argument #1 to 'define' (schema string expected, got " .. type(schema) .. ")")
    end
    local name, ov, rest = schema:match("^%s*([%a_][%w_]*)%.([%a_][%w_]*)(%b().*)$")
    if not name then
      name, rest = schema:match("^%s*([%a_][%w_]*)(%b().*)$")
      ov = "default"
    end
    if not name then lib_error("define: cannot parse the schema \"" .. schema .. "\"") end
    return L.define(self.ns .. "::" .. name .. (ov ~= "default" and "." .. ov or ""), rest)
  end
  function lib.impl(self, name, fn, key)
    local q = name:find("::", 1, true) and name or (self.ns .. "::" .. name)
    return L.impl(q, key or "CompositeExplicitAutograd", fn)
  end
  return lib
end
