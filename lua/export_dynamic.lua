-- lua/export_dynamic.lua — dynamic shapes in torch.export: Dim, dynamic_shapes, SymInt helpers
-- (torch.sym_*), the end-of-export constraint checks with PyTorch's suggested fixes, and
-- refine_dynamic_shapes_from_suggested_fixes.
-- Layer: lua (embedded; loads after export.lua). Follows torch/export/dynamic_shapes.py (Dim,
-- derived dims, AUTO / STATIC / DYNAMIC, the dynamic_shapes spec keyed by forward parameter names
-- or by position, 0-based dims) and the ConstraintViolationError messages of
-- torch/fx/experimental/symbolic_shapes.py. The symbols themselves, guards and ranges are core's
-- (core/symint.h), reached through the tracer (tr:symbol, tr:input_sym, tr:shape_info).

local E = torch._export
local INF = math.huge

-- ---- Dim ------------------------------------------------------------------------------------------
-- A Dim is {name, min, max}; a derived dim is {root = Dim, a, b} standing for a*root + b.

local DIM = {__name = "Dim"}
DIM.__index = DIM

local function is_dim(v) return getmetatable(v) == DIM end

-- An argument mistake as an fxdb error object (kind "argument"), at the user's line.
local ERROR_MT = debug.getregistry()["fxdb.Error"]
local function arg_error(msg)
  local f = E.user_frame()
  error(setmetatable({kind = "argument", code = "FX_EARG", message = msg, location = f.location,
                      source = f.source, func = f.func}, ERROR_MT), 0)
end

local function bound_str(v)
  if v == INF then return "int_oo" end
  return tostring(math.tointeger(v) or v)
end

local function derived_str(d)
  local s = d.root.name
  if d.a ~= 1 then s = tostring(d.a) .. "*" .. s end
  if d.b > 0 then s = s .. " + " .. d.b elseif d.b < 0 then s = s .. " - " .. (-d.b) end
  return s
end

function DIM.__tostring(d)
  if d.root then return derived_str(d) end
  if d.sentinel then return "Dim." .. d.sentinel end
  local parts = {string.format("Dim('%s'", d.name)}
  if d.min ~= 0 then parts[#parts + 1] = "min=" .. bound_str(d.min) end
  if d.max ~= INF then parts[#parts + 1] = "max=" .. bound_str(d.max) end
  return table.concat(parts, ", ") .. ")"
end

local function linear(d, a, b)
  if d.sentinel then arg_error("Dim." .. d.sentinel .. " cannot be used in arithmetic") end
  if math.type(a) ~= "integer" or math.type(b) ~= "integer" then
    arg_error("derived dims support only integer coefficients: a*dim + b")
  end
  if d.root then return setmetatable({root = d.root, a = d.a * a, b = d.b * a + b}, DIM) end
  return setmetatable({root = d, a = a, b = b}, DIM)
end

function DIM.__mul(x, y)
  if is_dim(x) then return linear(x, y, 0) end
  return linear(y, x, 0)
end
function DIM.__add(x, y)
  if is_dim(x) then return linear(x, 1, y) end
  return linear(y, 1, x)
end
function DIM.__sub(x, y)
  if not is_dim(x) then arg_error("only dim - integer is supported") end
  return linear(x, 1, -y)
end

local function check_bound(v, what, fname)
  if v == nil then return nil end
  if v ~= INF and math.type(v) ~= "integer" then
    arg_error("bad argument to '" .. fname .. "' (" .. what .. " must be an integer)")
  end
  return v
end

-- torch.export.Dim(name, {min = 0, max = int_oo})
local function Dim(name, opts)
  if type(name) ~= "string" then
    arg_error("bad argument #1 to 'Dim' (string expected, got " .. type(name) .. ")")
  end
  if opts ~= nil and type(opts) ~= "table" then
    arg_error("bad argument #2 to 'Dim' (table expected, got " .. type(opts) .. ")")
  end
  opts = opts or {}
  local lo = check_bound(opts.min, "min", "Dim") or 0
  local hi = check_bound(opts.max, "max", "Dim") or INF
  if lo < 0 or hi < lo then
    arg_error(string.format("Cannot create Dim with inconsistent min=%s, max=%s", bound_str(lo),
                            bound_str(hi)))
  end
  return setmetatable({name = name, min = lo, max = hi}, DIM)
end

torch.export.Dim = setmetatable({
  AUTO = setmetatable({sentinel = "AUTO"}, DIM),
  STATIC = setmetatable({sentinel = "STATIC"}, DIM),
  DYNAMIC = setmetatable({sentinel = "DYNAMIC"}, DIM),
}, {__call = function(_, ...) return Dim(...) end})

-- torch.export.dims("a", "b", {min =, max =}) -> Dim, Dim
function torch.export.dims(...)
  local n, opts = select("#", ...), nil
  local names = {...}
  if type(names[n]) == "table" then opts = names[n]; names[n] = nil; n = n - 1 end
  local out = {}
  for i = 1, n do out[i] = Dim(names[i], opts) end
  return table.unpack(out, 1, n)
end

-- ---- SymInt helpers ------------------------------------------------------------------------------

local SYMINT_MT = debug.getregistry()["fxdb.SymInt"]
local function is_symint(v) return getmetatable(v) == SYMINT_MT end

-- torch.sym_max / torch.sym_min(a, b), a and b integers or SymInts: like PyTorch's, a SymInt
-- expression Max(a, b) / Min(a, b) when either is symbolic (no guard, where math.max would
-- compare and so guard), else math.max / math.min of the numbers.
local function sym_minmax(a, b, method, plain)
  if is_symint(b) and not is_symint(a) then a, b = b, a end
  if is_symint(a) then return a[method](a, b) end
  return plain(a, b)
end
function torch.sym_max(a, b) return sym_minmax(a, b, "_max", math.max) end
function torch.sym_min(a, b) return sym_minmax(a, b, "_min", math.min) end
-- torch.sym_int(v): v truncated toward zero (an integer when it fits); a SymInt is returned as is.
-- torch.sym_float(v): v as a float; a SymInt is an export error (fxdb keeps sizes integral).
-- torch.sym_not(v): not v, for a boolean v only (an argument error otherwise).
function torch.sym_int(v)
  if is_symint(v) then return v end
  if math.type(v) == "integer" then return v end
  local i = v >= 0 and math.floor(v) or math.ceil(v)
  return math.tointeger(i) or i
end
function torch.sym_float(v)
  if is_symint(v) then
    E.export_error("not_implemented",
      "torch.sym_float of a symbolic size is not supported by fxdb: sizes stay integers " ..
      "(a float would bake the example value " .. v:hint() .. " into the program)",
      "keep size arithmetic in integers (// and %)")
  end
  return v + 0.0
end
function torch.sym_not(v)
  if type(v) ~= "boolean" then arg_error("bad argument #1 to 'sym_not' (boolean expected)") end
  return not v
end
-- Lua's == never reaches a SymInt's metamethod when the other side is a number, so
-- `x:size(0) == 4` is always false: write torch.sym_eq(x:size(0), 4) (or s:eq(4)), which guards
-- like PyTorch's ==.
function torch.sym_eq(a, b)
  if is_symint(a) then return a:eq(b) end
  if is_symint(b) then return b:eq(a) end
  return a == b
end
function torch.sym_ne(a, b) return not torch.sym_eq(a, b) end

-- ---- data-dependent values: torch._check and friends ------------------------------------------
-- x:item() during export is an unbacked SymInt u0 (core: fx_tracer_item). Export can decide
-- nothing with it until the program says what it knows. Lua turns `a >= 0` into a boolean before
-- torch._check sees it, so a comparison the value ranges cannot decide is parked (answering
-- true) and torch._check assumes it; anything else that comes first (an op, the end of forward)
-- raises the comparison's data-dependent error at its line, so no branch silently takes the
-- parked answer (docs/CHOICES.md).

-- PyTorch's RuntimeError of a failed torch._check / _check_is_size.
local function check_failed(message)
  local f = E.user_frame()
  error(setmetatable({kind = "check_failed", code = "FX_EARG",
                      message = message or ("Expected cond to be True, but got False. (Could " ..
                        "this error message be improved? If so, please report an enhancement " ..
                        "request to PyTorch.)"),
                      location = f.location, source = f.source, func = f.func}, ERROR_MT), 0)
end

-- torch._check(cond[, message]): cond is a boolean. While exporting, the comparisons it came
-- from that depend on data (u0 >= 0) become facts export relies on and runtime asserts of the
-- program (_assert_scalar nodes). A false cond raises (message, or PyTorch's default text).
function torch._check(cond, message)
  if type(cond) ~= "boolean" then
    arg_error("bad argument #1 to 'torch._check' (boolean expected, got " .. type(cond) .. ")")
  end
  if E.assume_pending(cond) then return end
  if not cond then check_failed(message) end
end

-- torch._check_is_size(v[, message]): v >= 0, and an unbacked v is "size-like" from now on
-- (its range [0, int_oo]; export emits sym_constrain_range_for_size for it).
function torch._check_is_size(v, message)
  if is_symint(v) and v:_unbacked() then
    if not v:_mark_size_like() then v:_assume("ge", 0) end
    return
  end
  if math.type(v) ~= "integer" and not is_symint(v) then
    arg_error("bad argument #1 to 'torch._check_is_size' (integer expected, got " .. type(v) .. ")")
  end
  if not (v >= 0) then check_failed(message) end
end

-- v's range narrowed to [min, max] (either end optional); plain integers are checked with
-- PyTorch's "Invalid value range for 7 between [0, 5]." (sym_constrain_range).
local function constrain(v, lo, hi, fname)
  for _, b in ipairs{lo, hi} do
    if b ~= nil and math.type(b) ~= "integer" then
      arg_error("bad argument to '" .. fname .. "' (min and max must be integers)")
    end
  end
  if lo and hi and hi < lo then arg_error("Max must be greater than or equal to min") end
  if is_symint(v) then
    if lo then v:_assume("ge", lo) end
    if hi then v:_assume("le", hi) end
    return
  end
  if math.type(v) ~= "integer" then
    arg_error("bad argument #1 to '" .. fname .. "' (integer expected, got " .. type(v) .. ")")
  end
  if (lo and v < lo) or (hi and v > hi) then
    check_failed(string.format("Invalid value range for %d between [%s, %s].", v,
                               tostring(lo or math.mininteger), tostring(hi or math.maxinteger)))
  end
end

-- torch._constrain_as_value(v, {min =, max =}): v's range is [min, max].
function torch._constrain_as_value(v, opts)
  opts = opts or {}
  constrain(v, opts.min, opts.max, "torch._constrain_as_value")
end

-- torch._constrain_as_size(v, {min =, max =}): v is a size (size-like, >= 0) in [min, max]; a
-- max of 2 or less is refused as PyTorch refuses it.
function torch._constrain_as_size(v, opts)
  opts = opts or {}
  if opts.max ~= nil and math.type(opts.max) == "integer" and opts.max <= 2 then
    check_failed("Max value to constrain_range_for_size must be greater than 2. got: " .. opts.max)
  end
  constrain(v, opts.min or 0, opts.max, "torch._constrain_as_size")
  if is_symint(v) and v:_unbacked() then v:_mark_size_like() end
end

-- torch._dynamo.assume_constant_result(fn): fn's result is taken as a constant of the program.
-- While exporting, fn runs eagerly on the example values behind its tensor arguments (inputs and
-- module state, E.example_of) and what it returns is baked in, as Dynamo evaluates it at trace
-- time; outside export fn just runs. A tensor argument computed inside forward has no example
-- value: an export error naming it.
torch._dynamo = torch._dynamo or {}
function torch._dynamo.assume_constant_result(fn)
  if type(fn) ~= "function" then
    arg_error("bad argument #1 to 'assume_constant_result' (function expected, got " ..
              type(fn) .. ")")
  end
  return function(...)
    local args = table.pack(...)
    local traced = false
    for i = 1, args.n do
      local v = args[i]
      local ex = torch.is_tensor(v) and E.example_of[v]
      if ex then
        args[i], traced = ex, true
      elseif torch.is_tensor(v) and E.tracing_tensor(v) then
        do
          E.export_error("not_implemented",
            "torch._dynamo.assume_constant_result: argument " .. i .. " is computed inside " ..
            "forward; fxdb evaluates the function on the example inputs and module state only",
            "pass an input or a buffer to the function")
        end
      end
    end
    if not traced then return fn(...) end
    -- a fresh coroutine dispatches eagerly (not bound to the trace)
    local res = table.pack(coroutine.wrap(function() return table.pack(fn(table.unpack(args, 1, args.n))) end)())
    res = res[1]
    return table.unpack(res, 1, res.n)
  end
end

-- ---- the dynamic_shapes spec -------------------------------------------------------------------

local function keys_str(list)
  local q = {}
  for i, k in ipairs(list) do q[i] = "'" .. tostring(k) .. "'" end
  return "[" .. table.concat(q, ", ") .. "]"
end

-- The per-leaf specs of the user inputs, in pytree order (what map_inputs visits).
local function leaf_specs(args, nargs, names, spec, frame)
  local byname = false
  for k in pairs(spec) do if type(k) == "string" then byname = true end end
  local want = {}
  for i = 1, nargs do want[i] = names[i] end
  if byname then
    local have, set = {}, {}
    for i = 1, nargs do set[names[i]] = true end
    local last = args[nargs]
    if E.is_kwargs(last) then for k in pairs(last) do set[k] = true end end
    local bad = false
    for k in pairs(spec) do
      have[#have + 1] = tostring(k)
      if not set[k] then bad = true end
    end
    table.sort(have)
    if bad then
      E.export_error("invalid_input",
        "When `dynamic_shapes` is specified as a dict, its top-level keys must be the arg names " ..
        keys_str(want) .. " of `inputs`, but here they are " .. keys_str(have) .. ". " ..
        "Alternatively, you could also ignore arg names entirely and specify `dynamic_shapes` " ..
        "as a list/tuple matching `inputs`.", nil, frame)
    end
  else
    local n = 0
    for k in pairs(spec) do if math.type(k) == "integer" and k > n then n = k end end
    if n > nargs then
      E.export_error("invalid_input",
        string.format("When `dynamic_shapes` is specified as a list/tuple, it must have the " ..
                      "same length as `inputs` (%d), but here it has %d entries.", nargs, n),
        nil, frame)
    end
  end
  local out = {}
  local function walk(v, s, path, src)
    if torch.is_tensor(v) then
      out[#out + 1] = {spec = s, path = path, src = src}
    elseif E.is_container(v) then
      if s ~= nil and type(s) ~= "table" then
        E.export_error("invalid_input", "dynamic_shapes of " .. path ..
          " must follow the input's structure (a table), got " .. tostring(s), nil, frame)
      end
      local keys, n = E.tree_keys(v)
      for _, k in ipairs(keys) do
        local kn = (math.type(k) == "integer" and k >= 1 and k <= n) and ("[" .. (k - 1) .. "]")
                   or ("['" .. tostring(k) .. "']")
        walk(v[k], s and s[k], path .. kn, src .. kn)
      end
    end
  end
  for i = 1, nargs do
    local a = args[i]
    local s = byname and spec[names[i]] or (not byname and spec[i]) or nil
    if i == nargs and E.is_kwargs(a) then
      for _, k in ipairs((E.tree_keys(a))) do
        walk(a[k], byname and spec[k] or (s and s[k]), k, "L['" .. k .. "']")
      end
    else
      walk(a, s, names[i], "L['" .. names[i] .. "']")
    end
  end
  return out
end

-- One dynamic export: makes the symbols of the spec'd input dims and checks the result.
-- plan.input(k, tensor, name) -> the tracing tensor for user input leaf k (nil = static).
function E.dynamic_plan(tr, args, nargs, names, spec, frame)
  if spec == nil then return nil end
  if type(spec) ~= "table" then
    E.export_error("invalid_input", "dynamic_shapes must be a table, got " .. type(spec), nil, frame)
  end
  local leaves = leaf_specs(args, nargs, names, spec, frame)
  local roots = {}      -- Dim -> {sym = SymInt|nil, value, source, const = n (0/1 specialized)}
  local dynamic_hints = {} -- dims given Dim.DYNAMIC: {path, value, sym_name | const}
  local named = {}      -- ordered list of root Dims seen
  local plan = {roots = roots, named = named, frame = frame}
  local dynamic_check

  -- Dims are identified by name, as torch.export does: Dim("n") written twice is one dim
  local byname = {}
  local function root_entry(d)
    local r = byname[d.name]
    if not r then
      r = {}
      byname[d.name] = r
      roots[d] = r
      named[#named + 1] = d
    end
    return r
  end

  -- the size value of one dim of an input, making its symbol on first use
  local function dim_value(d, v, src, path, dim)
    if d == nil or d == torch.export.Dim.STATIC then return v end
    if math.type(d) == "integer" then
      if d ~= v then
        E.export_error("constraint_violation", string.format(
          "Expected input at %s.shape[%d] to be equal to %d, but got %d", path, dim, d, v), nil, frame)
      end
      return v
    end
    if not is_dim(d) then
      E.export_error("invalid_input", string.format(
        "Unexpected dynamic_shapes entry %s for %s.shape[%d]: expected a Dim, an integer, or nil",
        tostring(d), path, dim), nil, frame)
    end
    if d.sentinel then -- AUTO / DYNAMIC: a fresh symbol, 0/1 stay static
      local hint = d.sentinel == "DYNAMIC" and {path = "inputs" .. src:match("^L(.*)%.size") ..
                                                  ".shape[" .. dim .. "]", value = v} or nil
      if v <= 1 then
        if hint then hint.const = v; dynamic_hints[#dynamic_hints + 1] = hint end
        return v
      end
      local sym = tr:symbol(v, 0, nil, src)
      if hint then
        hint.sym_name = tostring(sym)
        dynamic_hints[#dynamic_hints + 1] = hint
      end
      return sym
    end
    local root, a, b = d, 1, 0
    if d.root then root, a, b = d.root, d.a, d.b end
    if (v - b) % a ~= 0 then
      E.export_error("constraint_violation", string.format(
        "Expected input %s.shape[%d] = %d to be of the form %s, where %s is an integer",
        path, dim, v, derived_str(d), root.name), nil, frame)
    end
    local rv = (v - b) // a
    local r = root_entry(root)
    if r.value ~= nil and r.value ~= rv then
      E.export_error("constraint_violation", string.format(
        "The values of %s = %s and %s = %s must always be equal (got %d and %d)",
        root.name, r.source, root.name, src, r.value, rv), nil, frame)
    end
    if r.value == nil then
      r.value, r.source = rv, src
      if rv <= 1 then
        r.const = rv -- 0/1 specialization: export reports it below
      else
        local ok, s = pcall(tr.symbol, tr, rv, root.min, root.max, src)
        if not ok then
          if type(s) == "table" then s.location, s.source = frame.location, frame.source end
          error(s, 0)
        end
        r.sym = s
        r.sym_name = tostring(s) -- "s0" now; tostring later shows what guards replaced it by
      end
    end
    if r.const then return a * r.const + b end
    return a * r.sym + b
  end

  function plan.input(k, t, name)
    local leaf = leaves[k]
    local s = leaf and leaf.spec
    if s == nil then return nil end
    if type(s) ~= "table" or is_dim(s) then
      E.export_error("invalid_input", "dynamic_shapes of " .. leaf.path .. " must be a table " ..
        "{[dim] = Dim...} with 0-based dims, got " .. tostring(s), nil, frame)
    end
    local nd = t:dim()
    for key in pairs(s) do
      if math.type(key) ~= "integer" or key < 0 or key >= nd then
        E.export_error("invalid_input", string.format(
          "dynamic_shapes of %s names dim %s, but %s has %d dims (dims are 0-based: {[0] = ...})",
          leaf.path, tostring(key), leaf.path, nd), nil, frame)
      end
    end
    local sizes, any = {}, false
    for dim = 0, nd - 1 do
      local src = string.format("%s.size()[%d]", leaf.src, dim)
      sizes[dim + 1] = dim_value(s[dim], t:size(dim), src, leaf.path, dim)
      if is_symint(sizes[dim + 1]) then any = true end
    end
    if not any and next(s) == nil then return nil end
    return tr:input_sym(name, t, sizes)
  end

  -- After the named Dims: a dim given Dim.DYNAMIC that the program specialized (a guard made it a
  -- constant, or its example was 0 / 1) fails as torch.export's make_constraints does (ValueError
  -- "Found the following conflicts ..."); Dim.AUTO stays silent. Named-Dim violations come first,
  -- as produce_guards runs before make_constraints.
  function dynamic_check(info)
    if #dynamic_hints == 0 then return end
    local byname = {}
    for _, s in ipairs(info.symbols or {}) do byname[s.name] = s end
    local out = {}
    for _, h in ipairs(dynamic_hints) do
      local const = h.const
      local s = h.sym_name and byname[h.sym_name]
      if s then
        const = s.replacement and math.tointeger(tonumber(s.replacement))
        if not const and s.range[1] == s.range[2] then const = math.tointeger(s.range[1]) end
      end
      if h.const then
        out[#out + 1] = string.format("- Received user-specified dim hint Dim.DYNAMIC(min=None, " ..
          "max=None), but export 0/1 specialized due to hint of %d for dimension %s.", h.value,
          h.path)
      elseif const then
        out[#out + 1] = string.format("- Received user-specified dim hint Dim.DYNAMIC(min=None, " ..
          "max=None), but tracing inferred a static shape of %d for dimension %s.", const, h.path)
      end
    end
    if #out == 0 then return end
    E.export_error("constraint_violation", "Found the following conflicts between " ..
      "user-specified ranges and inferred ranges from model tracing:\n" ..
      table.concat(out, "\n"), "use Dim.AUTO for a dim that may specialize, or a static size", frame)
  end

  -- After forward: ConstraintViolationError for a named Dim that the program made a constant,
  -- equal to another Dim, or narrowed; messages and suggested fixes in PyTorch's form.
  function plan.check()
    local info = tr:shape_info()
    local byname = {}
    for _, s in ipairs(info.symbols or {}) do byname[s.name] = s end
    local symdim = {} -- symbol name -> root Dim
    for _, d in ipairs(named) do
      local r = roots[d]
      if r.sym then symdim[r.sym_name] = d end
    end
    local lines, fixes, culprits = {}, {}, {}
    local function range_str(d)
      local lo, hi = d.min, d.max
      if lo > 2 and hi ~= INF then return string.format("%d <= %s <= %d", lo, d.name, hi) end
      if hi ~= INF then return string.format("%s <= %d", d.name, hi) end
      if lo > 2 then return string.format("%s >= %d", d.name, lo) end
      return string.format("%s <= int_oo", d.name)
    end
    for _, d in ipairs(named) do
      local r = roots[d]
      local s = r.sym and byname[r.sym_name]
      local const = r.const
      local repl = s and s.replacement
      if repl and math.tointeger(tonumber(repl)) then const = math.tointeger(tonumber(repl)) end
      if const ~= nil then
        culprits[#culprits + 1] = d.name
        lines[#lines + 1] = string.format(
          "Not all values of %s = %s in the specified range %s are valid because %s was " ..
          "inferred to be a constant (%d).", d.name, r.source, range_str(d), d.name, const)
        fixes[#fixes + 1] = string.format("%s = %d", d.name, const)
      elseif repl then
        -- equal to (an expression of) other dims
        local expr = repl:gsub("[su]%d+", function(name)
          local od = symdim[name]
          return od and od.name or name
        end)
        local other = symdim[repl]
        culprits[#culprits + 1] = d.name
        if other then
          lines[#lines + 1] = string.format(
            "The values of %s = %s and %s = %s must always be equal.", d.name, r.source,
            other.name, roots[other].source)
        else
          lines[#lines + 1] = string.format(
            "The values of %s = %s must always be %s.", d.name, r.source, expr)
        end
        fixes[#fixes + 1] = string.format("%s = %s", d.name, expr)
      elseif s then
        local lo, hi = s.range[1], s.range[2]
        local dlo, dhi = math.max(d.min, 2), d.max
        if lo > dlo or hi < dhi then
          culprits[#culprits + 1] = d.name
          local g = {}
          if lo > dlo then g[#g + 1] = string.format("%d <= %s", lo, r.source) end
          if hi < dhi then g[#g + 1] = string.format("%s <= %d", r.source, hi) end
          lines[#lines + 1] = string.format(
            "Not all values of %s = %s in the specified range %s satisfy the generated guard %s.",
            d.name, r.source, range_str(d), table.concat(g, " and "))
          local args = {}
          if lo > 2 or (lo > d.min and d.min > 2) then args[#args + 1] = "min=" .. lo end
          if hi ~= INF then args[#args + 1] = "max=" .. bound_str(hi) end
          fixes[#fixes + 1] = string.format("%s = Dim('%s'%s)", d.name, d.name,
                                            #args > 0 and (", " .. table.concat(args, ", ")) or "")
        end
      end
    end
    if #lines == 0 then return dynamic_check(info) end
    local msg = "Constraints violated (" .. table.concat(culprits, ", ") .. ")! For more " ..
                "information, run with TORCH_LOGS=\"+dynamic\".\n"
    for _, l in ipairs(lines) do msg = msg .. "  - " .. l .. "\n" end
    msg = msg .. "Suggested fixes:\n"
    for _, f in ipairs(fixes) do msg = msg .. "  " .. f .. "\n" end
    msg = msg:gsub("\n$", "")
    E.export_error("constraint_violation", msg, "Suggested fixes:\n  " ..
                   table.concat(fixes, "\n  "), frame)
  end

  return plan
end

-- ep.range_constraints: {s0 = VR}, where VR has lower / upper (math.huge for int_oo) and prints
-- "VR[2, int_oo]".
local VR_MT = {__name = "ValueRanges"}
VR_MT.__tostring = function(r)
  local function b(v)
    if v == INF then return "int_oo" elseif v == -INF then return "-int_oo" end
    return tostring(v)
  end
  return "VR[" .. b(r.lower) .. ", " .. b(r.upper) .. "]"
end
E.program_properties.range_constraints = function(ep)
  local out = {}
  for _, item in ipairs(ep._range_list) do
    out[item[1]] = setmetatable({lower = item[2][1], upper = item[2][2]}, VR_MT)
  end
  return setmetatable(out, {__tostring = function(t)
    local names = {}
    for k in pairs(t) do names[#names + 1] = k end
    table.sort(names, function(a, b)
      return (tonumber(a:sub(2)) or 0) < (tonumber(b:sub(2)) or 0)
    end)
    local parts = {}
    for _, k in ipairs(names) do parts[#parts + 1] = k .. ": " .. tostring(t[k]) end
    return "{" .. table.concat(parts, ", ") .. "}"
  end})
end

-- ---- refine_dynamic_shapes_from_suggested_fixes --------------------------------------------------

-- torch.export.dynamic_shapes.refine_dynamic_shapes_from_suggested_fixes(msg, dynamic_shapes):
-- the spec with every Dim named in the "Suggested fixes:" lines of msg (an error object or its
-- message) replaced as the fix says: `d = 4` (static), `d = Dim('d', max=32)`, `dy = dx`,
-- `dy = 2*dx + 1`.
local function refine(msg, spec)
  if type(msg) == "table" then msg = msg.message or tostring(msg) end
  msg = tostring(msg)
  local fixes_text = msg:match("Suggested fixes:\n(.*)$")
  if not fixes_text then arg_error("refine_dynamic_shapes_from_suggested_fixes: no 'Suggested fixes:' in the message") end
  -- every Dim of the spec by name
  local dims = {}
  local function collect(s)
    if is_dim(s) then
      local r = s.root or s
      if r.name then dims[r.name] = r end
    elseif type(s) == "table" then
      for _, v in pairs(s) do collect(v) end
    end
  end
  collect(spec)
  local fix = {}
  for line in fixes_text:gmatch("[^\n]+") do
    local name, rhs = line:match("^%s*([%w_]+)%s*=%s*(.-)%s*$")
    if name then
      local n = math.tointeger(tonumber(rhs))
      if n then
        fix[name] = n
      elseif rhs:match("^Dim%(") then
        local lo = tonumber(rhs:match("min=(%-?%d+)"))
        local hi = tonumber(rhs:match("max=(%d+)"))
        fix[name] = Dim(name, {min = math.tointeger(lo), max = math.tointeger(hi)})
      else
        local a, other, b = rhs:match("^(%d*)%*?([%a_][%w_]*)%s*([%+%-]?%s*%d*)$")
        local od = other and dims[other]
        if od then
          local d = od
          local av = math.tointeger(tonumber(a)) or 1
          local bv = math.tointeger(tonumber(((b or ""):gsub("%s", "")))) or 0
          if av ~= 1 or bv ~= 0 then d = od * av + bv end
          fix[name] = d
        end
      end
    end
  end
  local function rewrite(s)
    if is_dim(s) then
      local r = s.root or s
      local f = r.name and fix[r.name]
      if f == nil then return s end
      if not s.root then return f end
      if math.type(f) == "integer" then return s.a * f + s.b end
      return f * s.a + s.b
    elseif type(s) == "table" then
      local out = {}
      for k, v in pairs(s) do out[k] = rewrite(v) end
      return out
    end
    return s
  end
  return rewrite(spec)
end

torch.export.dynamic_shapes = torch.export.dynamic_shapes or {}
torch.export.dynamic_shapes.refine_dynamic_shapes_from_suggested_fixes = refine
torch.export.refine_dynamic_shapes_from_suggested_fixes = refine
