-- tests/fuzz/gen_programs.lua — differential random-program tester for export/functionalization.
-- Layer: tests. Run by the fxdb binary:
--   fxdb tests/fuzz/gen_programs.lua [N [SEED]] [--verbose] [--keep-going] [--stats] [--show SEED]
--                                     [--dynamic]
-- Generates N small modules as Lua source (seeds SEED .. SEED+N-1): 1-3 buffers and 1-2 user
-- inputs of small shapes holding integer-valued float32 data, and a forward made of view ops,
-- in-place ops, index assignments (basic, int64/int32 tensor indices, boolean masks,
-- accumulating index_put_), functional ops, buffer reassignment (rarely with another shape or
-- dtype, which export must refuse) and 1-3 returns (views of inputs and buffers included); some
-- tensors have no elements, some buffers are views of another and some inputs views of a buffer.
-- Every statement is executed eagerly while it is generated, so only statements PyTorch accepts
-- are kept (shapes, broadcasting, no writes into expanded views).
--
-- Each program runs eagerly (twice, on clones), is exported strict and non-strict, runs exported
-- (fxdb.run), runs unlifted (ep:module(), twice), through the training IR and
-- run_decompositions, and reinplaced (fxdb.reinplace) when that exists. Outputs, buffer values
-- and input values must agree bit for bit with eager; the module and the example inputs must be
-- unchanged by export. A failing program is shrunk (statements and returns dropped one at a time
-- while the same check still fails) and printed with its seed. Programs stopped by a "not yet
-- supported" error (kind not_implemented) are skipped, listed by reason.
-- With --dynamic the same programs are checked with dynamic shapes instead (check_dynamic):
-- exported once with every user-input dim of size >= 2 a Dim.AUTO, then run at several other
-- sizes inside the range constraints and compared with eager at each size.
-- Prints the CPU and wall time, then ends with "fuzz: N passed, N failed, N skipped"; exits 1
-- when a program failed (stops at the first failure unless --keep-going). See README.md.

local F = {notes = {}}

-- ==== options =========================================================================================

local N, SEED, VERBOSE, KEEP_GOING, SHOW, STATS = 100, 1, false, false, nil, nil
local DYNAMIC = false
local CUSTOM = nil -- tests/fuzz/gen_custom_ops.lua when --custom-ops
do
  local pos = {}
  local i = 1
  while arg and arg[i] do
    local a = arg[i]
    if a == "--verbose" then VERBOSE = true
    elseif a == "--stats" then STATS = {}
    elseif a == "--keep-going" then KEEP_GOING = true
    elseif a == "--dynamic" then DYNAMIC = true
    elseif a == "--custom-ops" then
      CUSTOM = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "") .. "gen_custom_ops.lua")
    elseif a == "--show" then i = i + 1; SHOW = tonumber(arg[i])
    else pos[#pos + 1] = tonumber(a) end
    i = i + 1
  end
  N = pos[1] or N
  SEED = pos[2] or SEED
end

-- ==== random choices ================================================================================

local R = {}
function R.int(a, b) if b < a then return a end return math.random(a, b) end
function R.pick(list) return list[math.random(1, #list)] end
function R.chance(p) return math.random() < p end
function R.shuffle(list)
  for i = #list, 2, -1 do
    local j = math.random(1, i)
    list[i], list[j] = list[j], list[i]
  end
  return list
end

-- ==== tensors =========================================================================================

local function flat(t)
  local out = {}
  local function walk(v)
    if type(v) == "table" then
      for _, x in ipairs(v) do walk(x) end
    else
      out[#out + 1] = v
    end
  end
  walk(t:tolist())
  return out
end

-- nil when a and b have the same dtype, shape and bits (-0 differs from 0, NaN equals NaN);
-- else a description of the first difference.
local function differ(a, b)
  if not torch.is_tensor(a) or not torch.is_tensor(b) then
    if a == b then return nil end
    return "got " .. tostring(a) .. ", expected " .. tostring(b)
  end
  if a.dtype ~= b.dtype then return "got dtype " .. tostring(a.dtype) .. ", expected " .. tostring(b.dtype) end
  local sa, sb = table.concat(a.shape, ","), table.concat(b.shape, ",")
  if sa ~= sb then return "got shape [" .. sa .. "], expected [" .. sb .. "]" end
  local fa, fb = flat(a), flat(b)
  for i = 1, #fa do
    local x, y = fa[i], fb[i]
    local same = (x == y and (x ~= 0 or type(x) ~= "number" or 1 / x == 1 / y)) or (x ~= x and y ~= y)
    if not same then
      return string.format("element %d: got %s, expected %s", i - 1, tostring(x), tostring(y))
    end
  end
  return nil
end
F.differ = differ

-- True when some element of t is reachable through two index tuples (a size > 1 with stride 0):
-- PyTorch refuses to write into such a tensor.
local function overlapping(t)
  local st = t:stride()
  for d = 1, #t.shape do
    if t.shape[d] > 1 and st[d] == 0 then return true end
  end
  return false
end

local function shape_str(s)
  local p = {}
  for i = 1, #s do p[i] = tostring(s[i]) end
  return table.concat(p, ", ")
end

-- A Lua literal of an integer-valued float32 tensor: torch.tensor({...}):reshape(...).
local function literal(shape, vals, dtype)
  local items = {}
  for i, v in ipairs(vals) do items[i] = string.format("%d", v) end
  local s = "torch.tensor({" .. table.concat(items, ", ") .. "}, torch." .. (dtype or "float32") .. ")"
  if #shape ~= 1 then s = s .. ":reshape(" .. shape_str(shape) .. ")" end
  return s
end

local function random_shape()
  local nd = R.int(1, 3)
  local s = {}
  for d = 1, nd do s[d] = R.int(1, 4) end
  if R.chance(0.04) then s[R.int(1, nd)] = 0 end -- now and then a tensor without elements
  return s
end

local function numel(s)
  local n = 1
  for _, v in ipairs(s) do n = n * v end
  return n
end

local function random_values(n, lo, hi)
  local v = {}
  for i = 1, n do v[i] = R.int(lo or -5, hi or 5) end
  return v
end

-- True when a tensor of shape `from` broadcasts to exactly shape `to` (in-place operand rule).
local function broadcasts_to(from, to)
  if #from > #to then return false end
  for i = 0, #from - 1 do
    local a, b = from[#from - i], to[#to - i]
    if a ~= b and a ~= 1 then return false end
  end
  return true
end

-- ==== programs ========================================================================================

-- A program: {seed, buffers = {{name, shape, vals}}, inputs = {{name, shape, vals}},
--             stmts = {{lhs = name|nil, rhs = text} | {text = text}}, rets = {expr, ...}}

local function program_source(p, opts)
  opts = opts or {}
  local L = {}
  L[#L + 1] = "-- fuzz program, seed " .. tostring(p.seed)
  if p.custom_ops and next(p.custom_ops) then L[#L + 1] = CUSTOM.prelude(p.custom_ops) end
  local sub = false
  for _, b in ipairs(p.buffers) do
    if b.name:find(".", 1, true) then
      -- a submodule owning a buffer; calling it adds its argument to the buffer in place
      sub = true
      L[#L + 1] = 'local Sub = nn.Module:extend("Sub")'
      L[#L + 1] = "function Sub:init()"
      L[#L + 1] = '  self:register_buffer("c0", ' .. literal(b.shape, b.vals, b.dtype) .. ")"
      L[#L + 1] = "end"
      L[#L + 1] = "function Sub:forward(v)"
      L[#L + 1] = "  self.c0:add_(v)"
      L[#L + 1] = "  return self.c0"
      L[#L + 1] = "end"
    end
  end
  L[#L + 1] = 'local Fuzz = nn.Module:extend("Fuzz")'
  L[#L + 1] = "function Fuzz:init()"
  if sub then L[#L + 1] = "  self.sub = Sub()" end
  for _, b in ipairs(p.buffers) do
    if b.alias then -- a view of an earlier buffer: both share storage
      L[#L + 1] = '  self:register_buffer("' .. b.name .. '", self.' .. b.alias.of .. b.alias.expr .. ")"
    elseif not b.name:find(".", 1, true) then
      L[#L + 1] = '  self:register_buffer("' .. b.name .. '", ' .. literal(b.shape, b.vals, b.dtype) .. ")"
    end
  end
  L[#L + 1] = "end"
  local names = {}
  for i, x in ipairs(p.inputs) do names[i] = x.name end
  L[#L + 1] = "function Fuzz:forward(" .. table.concat(names, ", ") .. ")"
  for _, s in ipairs(p.stmts) do
    L[#L + 1] = "  " .. (s.lhs and ("local " .. s.lhs .. " = " .. s.rhs) or s.text)
  end
  L[#L + 1] = "  return " .. table.concat(p.rets, ", ")
  L[#L + 1] = "end"
  local ins = {}
  for i, x in ipairs(p.inputs) do ins[i] = literal(x.shape, x.vals, x.dtype) end
  -- inputs that are views of the module's buffers: a third value makes them from a module
  local views = {}
  for i, x in ipairs(p.inputs) do
    if x.view_of then views[#views + 1] = "a[" .. i .. "] = m." .. x.view_of.buffer .. x.view_of.expr end
  end
  local with_views = #views > 0 and (", function(m, a) " .. table.concat(views, "; ") .. "; return a end") or ""
  L[#L + 1] = "return Fuzz, {" .. table.concat(ins, ", ") .. "}" .. with_views
  return table.concat(L, "\n") .. "\n"
end
F.program_source = program_source

-- ==== generation ========================================================================================

-- The generator keeps a live environment: `env` holds every local of forward (as a field), `self`
-- (an eager instance of the module) and the inputs. Each candidate statement is run in it; one
-- that raises is dropped. `vars` lists the expressions a statement may use, each with a `base`
-- (which storage it may alias: conservative, so reshape counts as a view) and `kind`.

local Gen = {}
Gen.__index = Gen

-- Mostly float32; sometimes another dtype, so in-place ops promote (an f16 buffer add_ an f32
-- tensor computes in f32 and stores f16) and functional ops mix dtypes. Values stay small
-- integers, exact in every one of them.
local function random_dtype()
  return R.pick{"float32", "float32", "float32", "float32", "float32", "float32", "float16",
                "bfloat16", "float64", "int64"}
end

local function new_gen(seed)
  math.randomseed(seed)
  local g = setmetatable({seed = seed, p = {seed = seed, buffers = {}, inputs = {}, stmts = {}, rets = {},
                                            custom_ops = CUSTOM and {}},
                          vars = {}, nlocal = 0, gens = {}}, Gen)
  for i = 1, R.int(1, 3) do
    local s = random_shape()
    g.p.buffers[i] = {name = "b" .. (i - 1), shape = s, vals = random_values(numel(s)), dtype = random_dtype()}
  end
  if R.chance(0.35) then
    local s = random_shape()
    g.p.buffers[#g.p.buffers + 1] = {name = "sub.c0", shape = s, vals = random_values(numel(s)), dtype = random_dtype()}
    g.sub = true
  end
  g:alias_buffer()
  for i = 1, R.int(1, 2) do
    local s = R.chance(0.3) and g.p.buffers[R.int(1, #g.p.buffers)].shape or random_shape()
    g.p.inputs[i] = {name = "x" .. (i - 1), shape = s, vals = random_values(numel(s)), dtype = random_dtype()}
  end
  -- the eager module the statements run against while generating
  local Fuzz = load(program_source(g.p), "=fuzz", "t")()
  g.module = Fuzz()
  g.env = setmetatable({self = g.module}, {__index = _G})
  for _, b in ipairs(g.p.buffers) do
    g.gens[b.name] = 0
    local base = "buf:" .. (b.alias and b.alias.of or b.name) .. "#0"
    g.vars[#g.vars + 1] = {expr = "self." .. b.name, base = base, kind = "buffer", buffer = b.name}
  end
  for _, x in ipairs(g.p.inputs) do
    g.env[x.name] = load("return " .. literal(x.shape, x.vals, x.dtype))()
    g.vars[#g.vars + 1] = {expr = x.name, base = "in:" .. x.name, kind = "input"}
  end
  g:view_inputs()
  return g
end

-- ---- aliasing between buffers and inputs (export refuses mutating shared storage) ----------

-- A view expression of a tensor of shape s that PyTorch can register as a buffer or pass as an
-- input: narrow, select, t, view / unsqueeze / flatten (all of the same storage).
local function alias_view(s)
  local forms = {}
  local d = R.int(0, #s - 1)
  if s[d + 1] > 0 then
    local start = R.int(0, s[d + 1] - 1)
    forms[#forms + 1] = ":narrow(" .. d .. ", " .. start .. ", " .. R.int(0, s[d + 1] - start) .. ")"
    if #s > 1 then forms[#forms + 1] = ":select(" .. d .. ", " .. start .. ")" end
  end
  if #s <= 2 then forms[#forms + 1] = ":t()" end
  forms[#forms + 1] = ":unsqueeze(0)"
  forms[#forms + 1] = ":view(-1)"
  return R.pick(forms)
end

-- Sometimes the last buffer (of two or more) is registered as a view of the first one.
function Gen:alias_buffer()
  local bs = self.p.buffers
  if #bs < 2 or bs[#bs].name:find(".", 1, true) or not R.chance(0.06) then return end
  local of, b = bs[1], bs[#bs]
  b.alias = {of = of.name, expr = alias_view(of.shape)}
  local t = load("return " .. literal(of.shape, of.vals, of.dtype) .. b.alias.expr)()
  b.shape, b.dtype, b.vals = t.shape, of.dtype, nil
end

-- Sometimes an input is a view of a buffer of the module it is passed to (the third value of the
-- program's chunk makes it); the literal keeps its values for fxdb.run and the unlifted module.
function Gen:view_inputs()
  for i, x in ipairs(self.p.inputs) do
    local b = R.pick(self.p.buffers)
    if R.chance(0.04) and not b.name:find(".", 1, true) then
      local cur = self:value("self." .. b.name)
      local expr = alias_view(cur.shape)
      local okv, t = pcall(self.value, self, "self." .. b.name .. expr)
      if not okv then goto next_input end -- view(-1) of a transposed buffer
      local vals = {}
      for j, v in ipairs(t:reshape(-1):tolist()) do vals[j] = math.tointeger(v) or v end
      x.view_of = {buffer = b.name, expr = expr}
      x.shape, x.vals, x.dtype = t.shape, vals, b.dtype
      self.env[x.name] = t
      self.vars[#self.vars + i - #self.p.inputs].base = "buf:" .. (b.alias and b.alias.of or b.name) .. "#0"
    end
    ::next_input::
  end
end

function Gen:value(expr)
  return load("return " .. expr, "=expr", "t", self.env)()
end

-- Runs a statement in the environment; true when it ran.
function Gen:try(stmt)
  local text = stmt.lhs and (stmt.lhs .. " = " .. stmt.rhs) or stmt.text
  local chunk = load(text, "=stmt", "t", self.env)
  if not chunk then return false end
  local ok = pcall(chunk)
  if not ok and stmt.lhs then self.env[stmt.lhs] = nil end
  return ok
end

function Gen:fresh_name()
  self.nlocal = self.nlocal + 1
  return "v" .. self.nlocal
end

function Gen:pick_var(filter)
  local c = {}
  for _, v in ipairs(self.vars) do
    if not filter or filter(v, self:value(v.expr)) then c[#c + 1] = v end
  end
  if #c == 0 then return nil end
  return R.pick(c)
end

-- An index entry for dim of size n: an integer or a Python slice string.
local function index_entry(n, allow_int)
  if allow_int and R.chance(0.4) then return tostring(R.int(-n, n - 1)), true end
  local r = R.int(1, 6)
  if r == 1 then return '":"', false end
  local a = R.chance(0.6) and tostring(R.int(-n, n)) or ""
  local b = R.chance(0.6) and tostring(R.int(-n, n + 1)) or ""
  local s = a .. ":" .. b
  if R.chance(0.5) then s = s .. ":" .. R.int(1, 3) end
  return '"' .. s .. '"', false
end

-- A literal bool tensor of the given shape.
local function bool_literal(shape)
  local m = {}
  for i = 1, numel(shape) do m[i] = R.chance(0.5) and "true" or "false" end
  local s = "torch.tensor({" .. table.concat(m, ", ") .. "})"
  if #shape ~= 1 then s = s .. ":reshape(" .. shape_str(shape) .. ")" end
  return s
end

-- A literal int64 index tensor of `shape` with values in [0, n) along dim d (1-based); with
-- `unique`, the values of each column (fixed coordinates off d) are distinct (PyTorch leaves
-- the result of repeated positions unspecified for scatter_ and index_copy_).
local function index_literal(shape, d, n, unique)
  local vals, perms, idx = {}, {}, {}
  for i = 1, #shape do idx[i] = 0 end
  for _ = 1, numel(shape) do
    local key = {}
    for i = 1, #shape do if i ~= d then key[#key + 1] = idx[i] end end
    key = table.concat(key, ",")
    local v
    if unique then
      if not perms[key] then
        local p = {}
        for i = 0, n - 1 do p[#p + 1] = i end
        perms[key] = R.shuffle(p)
      end
      v = perms[key][idx[d] + 1]
    else
      v = R.int(0, n - 1)
    end
    vals[#vals + 1] = tostring(v)
    for i = #shape, 1, -1 do
      idx[i] = idx[i] + 1
      if idx[i] < shape[i] then break end
      idx[i] = 0
    end
  end
  local s = "torch.tensor({" .. table.concat(vals, ", ") .. "}, torch.int64)"
  if #shape ~= 1 then s = s .. ":reshape(" .. shape_str(shape) .. ")" end
  return s
end

-- A basic index tuple for a tensor of shape s: ints, slices, and sometimes "..." or "None".
local function basic_index(s)
  local parts = {}
  local nd = R.int(1, math.max(1, #s))
  local ellipsis_at = (#s > 1 and R.chance(0.2)) and R.int(1, nd) or nil
  for d = 1, nd do
    if d == ellipsis_at then parts[#parts + 1] = '"..."' end
    if R.chance(0.08) then parts[#parts + 1] = '"None"' end
    local e = index_entry(s[d] or 1, true)
    parts[#parts + 1] = e
  end
  if #parts == 1 and parts[1]:match("^%-?%d+$") and R.chance(0.5) then return parts[1] end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- A shape with the same number of elements as s, sometimes with a -1.
local function reshape_of(s)
  local n = numel(s)
  if n == 0 then return R.shuffle{0, R.int(1, 3)} end
  local factors = {}
  local rest = n
  local nd = R.int(1, 3)
  for _ = 1, nd - 1 do
    local divs = {}
    for d = 1, rest do if rest % d == 0 then divs[#divs + 1] = d end end
    local f = R.pick(divs)
    factors[#factors + 1] = f
    rest = rest // f
  end
  factors[#factors + 1] = rest
  R.shuffle(factors)
  if R.chance(0.3) then factors[R.int(1, #factors)] = -1 end
  return factors
end

-- ---- statement makers: each returns a statement (and the var it defines) or nil ----------------

function Gen:view_stmt()
  local src = self:pick_var()
  local t = self:value(src.expr)
  local s = t.shape
  local nd = #s
  local r = R.int(1, 20)
  local rhs
  local expand = false
  if r == 1 and nd >= 1 then
    local d = R.int(0, nd - 1)
    rhs = src.expr .. ":select(" .. d .. ", " .. R.int(-s[d + 1], s[d + 1] - 1) .. ")"
  elseif r <= 3 and nd >= 1 then
    rhs = src.expr .. "[" .. basic_index(s) .. "]"
  elseif r == 4 and nd >= 1 then
    local d = R.int(0, nd - 1)
    rhs = src.expr .. ":slice(" .. d .. ", " .. R.int(-s[d + 1], s[d + 1]) .. ", " ..
      R.int(0, s[d + 1] + 1) .. ", " .. R.int(1, 3) .. ")"
  elseif r == 5 then
    rhs = src.expr .. ":view(" .. shape_str(reshape_of(s)) .. ")"
  elseif r == 6 then
    rhs = src.expr .. ":reshape(" .. shape_str(reshape_of(s)) .. ")"
  elseif r == 7 and nd >= 2 then
    rhs = src.expr .. ":transpose(" .. R.int(-nd, nd - 1) .. ", " .. R.int(-nd, nd - 1) .. ")"
  elseif r == 8 and nd >= 1 then
    local perm = {}
    for d = 1, nd do perm[d] = d - 1 end
    rhs = src.expr .. ":permute(" .. shape_str(R.shuffle(perm)) .. ")"
  elseif r == 9 and nd < 4 then
    rhs = src.expr .. ":unsqueeze(" .. R.int(-nd - 1, nd) .. ")"
  elseif r == 10 then
    local ones = {}
    for d = 1, nd do if s[d] == 1 then ones[#ones + 1] = d - 1 end end
    if #ones > 0 and R.chance(0.6) then
      rhs = src.expr .. ":squeeze(" .. R.pick(ones) .. ")"
    else
      rhs = src.expr .. ":squeeze()"
    end
  elseif r == 11 and nd <= 2 then
    rhs = src.expr .. ":t()"
  elseif r == 12 then
    if R.chance(0.5) then
      rhs = src.expr .. ":alias()"
    else
      -- expand: size-1 dims grow, maybe a new leading dim (read only afterwards)
      local e = {}
      if R.chance(0.4) then e[#e + 1] = R.int(1, 3) end
      for d = 1, nd do
        e[#e + 1] = (s[d] == 1 and R.chance(0.7)) and R.int(2, 3) or (R.chance(0.3) and -1 or s[d])
      end
      rhs = src.expr .. ":expand(" .. shape_str(e) .. ")"
      expand = true
    end
  elseif r == 13 and nd >= 1 then
    local d = R.int(0, nd - 1)
    local start = R.int(-s[d + 1], s[d + 1])
    local len = R.int(0, s[d + 1])
    rhs = src.expr .. ":narrow(" .. d .. ", " .. start .. ", " .. len .. ")"
  elseif r == 14 and nd >= 1 then
    local a = R.int(0, nd - 1)
    rhs = src.expr .. ":flatten(" .. a .. ", " .. R.int(a, nd - 1) .. ")"
  elseif r == 15 and nd >= 1 then
    local d = R.int(0, nd - 1)
    rhs = src.expr .. ":unflatten(" .. d .. ", {" .. shape_str(reshape_of({s[d + 1]})) .. "})"
  elseif r == 16 and nd >= 2 then
    local d1, d2 = R.int(0, nd - 1), R.int(0, nd - 1)
    rhs = src.expr .. ":diagonal(" .. R.int(-2, 2) .. ", " .. d1 .. ", " .. d2 .. ")"
  elseif r >= 17 and r <= 19 and nd >= 1 then
    -- one piece of a list-returning view
    local d = R.int(0, nd - 1)
    local call
    if r == 17 then call = ":split(" .. R.int(1, 3) .. ", " .. d .. ")"
    elseif r == 18 then call = ":chunk(" .. R.int(1, 3) .. ", " .. d .. ")"
    else call = ":unbind(" .. d .. ")" end
    local ok, pieces = pcall(self.value, self, src.expr .. call)
    if not ok or type(pieces) ~= "table" or #pieces == 0 then return nil end
    rhs = src.expr .. call .. "[" .. R.int(1, #pieces) .. "]"
  elseif r == 20 then
    if R.chance(0.5) or nd == 0 then
      rhs = src.expr .. ":detach()"
    else
      -- as_strided onto a sub-block: smaller sizes, the same strides and offset
      local sz = {}
      for d = 1, nd do sz[d] = R.int(math.min(1, s[d]), s[d]) end
      rhs = src.expr .. ":as_strided({" .. shape_str(sz) .. "}, {" .. shape_str(t:stride()) .. "})"
    end
  end
  if not rhs then return nil end
  local name = self:fresh_name()
  local stmt = {lhs = name, rhs = rhs}
  if not self:try(stmt) then return nil end
  -- reshape may copy; treating it as a view of the same base is the conservative choice. Views
  -- of an expand are read only: PyTorch's functionalization cannot write through expand.
  return stmt, {expr = name, base = src.base, kind = "view", ro = src.ro or expand}
end

-- An operand for an in-place op or an assignment into a tensor of shape `to`: a number or an
-- expression whose shape broadcasts to `to` (cloned when it may alias the written base).
-- The storage offsets a tensor's elements occupy (as a set), and a key of its exact layout.
local function footprint(t)
  local set, shape, st = {}, t.shape, t:stride()
  local off0 = t:storage_offset()
  local idx = {}
  for d = 1, #shape do
    if shape[d] == 0 then return set end
    idx[d] = 0
  end
  while true do
    local off = off0
    for d = 1, #shape do off = off + idx[d] * st[d] end
    set[off] = true
    local d = #shape
    while d >= 1 do
      idx[d] = idx[d] + 1
      if idx[d] < shape[d] then break end
      idx[d] = 0
      d = d - 1
    end
    if d < 1 then break end
  end
  return set
end

local function layout(t)
  return t:storage_offset() .. "|" .. table.concat(t.shape, ",") .. "|" .. table.concat(t:stride(), ",")
end

-- May `src` be read by an op writing `dst` (both on the same base)? Yes when it is exactly the
-- written tensor or touches none of its elements (PyTorch refuses partial overlap, and a full
-- overlap with another layout reads elements already written).
local function readable_while_writing(src, dst)
  if layout(src) == layout(dst) then return true end
  local a, b = footprint(src), footprint(dst)
  for off in pairs(a) do if b[off] then return false end end
  return true
end

-- An operand for an op writing `dst` (a tensor): a number or an expression whose shape broadcasts
-- to dst's shape; one on the same base that overlaps the written tensor (`written`, default dst)
-- is cloned. `exact` = false forbids even the exact-alias case (index writes).
function Gen:operand(dst, base, allow_number, exact, written)
  written = written or dst
  if allow_number ~= false and R.chance(0.35) then return tostring(R.int(-4, 4)) end
  local v = self:pick_var(function(_, t) return broadcasts_to(t.shape, dst.shape) end)
  if not v then
    if allow_number == false then return nil end
    return tostring(R.int(-4, 4))
  end
  if v.base == base then
    local t = self:value(v.expr)
    local ok = readable_while_writing(t, written)
    if ok and exact == false and layout(t) == layout(written) then ok = false end
    if not ok then return v.expr .. ":clone()" end
  end
  return v.expr
end

-- An operand of exactly `shape`: a variable of that shape (cloned when it overlaps `written`),
-- or a literal.
function Gen:exact_operand(shape, base, written)
  local key = table.concat(shape, ",")
  local v = self:pick_var(function(_, t) return table.concat(t.shape, ",") == key end)
  if v and R.chance(0.7) then
    if v.base == base then
      local t = self:value(v.expr)
      if not readable_while_writing(t, written) or layout(t) == layout(written) then
        return v.expr .. ":clone()"
      end
    end
    return v.expr
  end
  return literal(shape, random_values(numel(shape)))
end

function Gen:writable(filter)
  return self:pick_var(function(v, t)
    return not v.ro and not overlapping(t) and (not filter or filter(v, t))
  end)
end

function Gen:inplace_stmt()
  local dst = self:writable()
  if not dst then return nil end
  local t = self:value(dst.expr)
  local r = R.int(1, 20)
  local text
  if r <= 5 then
    local op = R.pick{"add_", "mul_", "sub_", "div_", "add_"}
    local o
    if op == "div_" then o = R.pick{"2", "-2", "4", "0.5", "1"} else o = self:operand(t, dst.base) end
    text = dst.expr .. ":" .. op .. "(" .. o .. ")"
  elseif r == 6 then
    local o = self:operand(t, dst.base, false)
    if not o then return nil end
    text = dst.expr .. ":copy_(" .. o .. ")"
  elseif r == 7 then
    text = dst.expr .. ":fill_(" .. R.int(-3, 3) .. ")"
  elseif r == 8 then
    text = dst.expr .. ":zero_()"
  elseif r == 9 then
    text = dst.expr .. ":neg_()"
  elseif r <= 11 and #t.shape >= 1 then
    -- basic index assignment
    local idx = basic_index(t.shape)
    local view = load("local t = ...; return t[" .. idx .. "]", "=idx", "t", self.env)
    local ok, v = pcall(view, t)
    if not ok or not torch.is_tensor(v) then return nil end
    text = dst.expr .. "[" .. idx .. "] = " .. self:operand(v, dst.base)
  elseif r == 12 and #t.shape >= 1 then
    -- advanced index assignment with an int64/int32 index tensor on one dim (unique positions)
    local d = R.int(1, #t.shape)
    local n = t.shape[d]
    local pos = {}
    for i = 0, n - 1 do pos[#pos + 1] = i end
    R.shuffle(pos)
    if n == 0 then return nil end
    local k = R.int(1, n)
    local vals = {}
    for i = 1, k do vals[i] = (R.chance(0.3) and pos[i] - n or pos[i]) end
    local dt = R.pick{"torch.int64", "torch.int32"}
    local idx = "torch.tensor({" .. table.concat(vals, ", ") .. "}, " .. dt .. ")"
    local parts = {}
    for _ = 1, d - 1 do parts[#parts + 1] = '":"' end
    parts[#parts + 1] = idx
    local shape = {}
    for i = 1, #t.shape do shape[i] = t.shape[i] end
    shape[d] = k
    text = dst.expr .. "[{" .. table.concat(parts, ", ") .. "}] = " ..
      self:operand(torch.empty(table.unpack(shape)), dst.base, true, false, t)
  elseif r == 13 and #t.shape >= 1 then
    -- accumulating index_put_ on dim 0 (repeated positions add up)
    local n = t.shape[1]
    local k = R.int(1, 4)
    local vals = {}
    for i = 1, k do vals[i] = R.int(-n, n - 1) end
    local dt = R.pick{"torch.int64", "torch.int32"}
    local shape = {k}
    for i = 2, #t.shape do shape[i] = t.shape[i] end
    local o = self:operand(torch.empty(table.unpack(shape)), dst.base, false, false, t)
    if not o or o:match("^%-?%d+$") then return nil end
    text = dst.expr .. ":index_put_({torch.tensor({" .. table.concat(vals, ", ") .. "}, " .. dt ..
      ")}, " .. o .. ", {accumulate = true})"
  elseif r == 14 and #t.shape >= 1 then
    -- boolean mask assignment with a literal mask of the full shape
    local m = {}
    for i = 1, numel(t.shape) do m[i] = R.chance(0.5) and "true" or "false" end
    local mask = "torch.tensor({" .. table.concat(m, ", ") .. "})"
    if #t.shape ~= 1 then mask = mask .. ":reshape(" .. shape_str(t.shape) .. ")" end
    text = dst.expr .. "[{" .. mask .. "}] = " .. R.int(-3, 3)
  elseif r == 15 and #t.shape >= 1 then
    -- masked_fill_ with a literal mask of the trailing dims (broadcast over the leading ones)
    local from = R.int(1, #t.shape)
    local ms = {}
    for d = from, #t.shape do ms[#ms + 1] = t.shape[d] end
    text = dst.expr .. ":masked_fill_(" .. bool_literal(ms) .. ", " .. R.int(-3, 3) .. ")"
  elseif r >= 16 and r <= 18 and #t.shape >= 1 then
    -- index_copy_ / scatter_ (unique positions per column) and scatter_add_ (repeats add up)
    local d = R.int(1, #t.shape)
    local n = t.shape[d]
    if n == 0 then return nil end
    local shape = {}
    for i = 1, #t.shape do shape[i] = t.shape[i] end
    shape[d] = R.int(1, n)
    if r == 16 then
      local idx = index_literal({shape[d]}, 1, n, true)
      text = dst.expr .. ":index_copy_(" .. (d - 1) .. ", " .. idx .. ", " ..
        self:exact_operand(shape, dst.base, t) .. ")"
    else
      local idx = index_literal(shape, d, n, r == 17)
      local src = (r == 17 and R.chance(0.3)) and tostring(R.int(-3, 3)) or self:exact_operand(shape, dst.base, t)
      text = dst.expr .. ":" .. (r == 17 and "scatter_" or "scatter_add_") .. "(" .. (d - 1) .. ", " ..
        idx .. ", " .. src .. ")"
    end
  elseif r == 19 then
    local lo = R.int(-4, 2)
    text = dst.expr .. ":clamp_(" .. lo .. ", " .. (lo + R.int(0, 4)) .. ")"
  elseif r == 20 then
    text = dst.expr .. ":" .. R.pick{"abs_", "relu_"} .. "()"
  end
  if not text then return nil end
  local stmt = {text = text}
  if not self:try(stmt) then return nil end
  return stmt
end

function Gen:functional_stmt()
  local a = self:pick_var()
  local ta = self:value(a.expr)
  local r = R.int(1, 8)
  local rhs
  if r <= 3 then
    local b = self:pick_var(function(_, t)
      return broadcasts_to(t.shape, ta.shape) or broadcasts_to(ta.shape, t.shape)
    end)
    local op = R.pick{" + ", " - ", " * "}
    rhs = a.expr .. op .. (b and b.expr or tostring(R.int(-3, 3)))
  elseif r == 4 then
    rhs = "-" .. a.expr
  elseif r == 5 then
    rhs = a.expr .. ":clone()"
  elseif r == 6 then
    rhs = a.expr .. ":contiguous()"
  elseif r == 7 and #ta.shape >= 1 then
    rhs = a.expr .. ":sum(" .. R.int(0, #ta.shape - 1) .. (R.chance(0.5) and ", {keepdim = true})" or ")")
  else
    rhs = a.expr .. " * " .. R.int(-3, 3)
  end
  local name = self:fresh_name()
  local stmt = {lhs = name, rhs = rhs}
  if not self:try(stmt) then return nil end
  -- contiguous() of a contiguous tensor is the tensor itself
  return stmt, {expr = name, base = r == 6 and a.base or ("fresh:" .. name), kind = "fresh",
                ro = r == 6 and a.ro or nil}
end

-- `local v = self.sub(w)`: the submodule adds w to its buffer in place and returns the buffer.
function Gen:subcall_stmt()
  if not self.sub then return nil end
  local c = self:value("self.sub.c0")
  if overlapping(c) then return nil end
  local bv
  for _, v in ipairs(self.vars) do if v.buffer == "sub.c0" then bv = v end end
  if bv.ro then return nil end
  local name = self:fresh_name()
  local stmt = {lhs = name, rhs = "self.sub(" .. self:operand(c, bv.base) .. ")"}
  if not self:try(stmt) then return nil end
  return stmt, {expr = name, base = bv.base, kind = "view"}
end

-- `v = v + 1` on a local or an input: Lua rebinding (Python's `x = x + 1`), not a mutation.
function Gen:rebind_stmt()
  local v = self:pick_var(function(var) return var.kind ~= "buffer" end)
  if not v then return nil end
  local rhs = R.pick{v.expr .. " + " .. R.int(1, 3), v.expr .. " * 2", v.expr .. ":clone()", "-" .. v.expr}
  local stmt = {text = v.expr .. " = " .. rhs}
  if not self:try(stmt) then return nil end
  self.nlocal = self.nlocal + 1
  v.base, v.ro, v.kind = "fresh:" .. v.expr .. "#" .. self.nlocal, nil, "fresh"
  return stmt
end

-- self.bK = <a tensor of the buffer's shape and dtype>: a fresh value, rarely a view of something
-- else.
function Gen:reassign_stmt()
  local b = R.pick(self.p.buffers)
  local cur = self:value("self." .. b.name)
  -- same shape and dtype: an unlifted module keeps the buffer's tensor and copies into it
  local src = self:pick_var(function(_, t)
    return table.concat(t.shape, ",") == table.concat(cur.shape, ",") and t.dtype == cur.dtype
  end)
  local rhs
  local r = R.int(1, 5)
  if r == 1 or not src then
    rhs = "self." .. b.name .. " * " .. R.int(-2, 3)
  elseif r == 2 then
    rhs = src.expr .. " + 1"
  elseif r == 3 or r == 4 then
    rhs = src.expr .. ":clone()"
  else
    rhs = src.expr -- the buffer becomes an alias of another tensor
  end
  local stmt = {text = "self." .. b.name .. " = " .. rhs}
  if not self:try(stmt) then return nil end
  self.gens[b.name] = self.gens[b.name] + 1
  for _, v in ipairs(self.vars) do
    if v.buffer == b.name then
      v.base = (r == 5 and src) and src.base or ("buf:" .. b.name .. "#" .. self.gens[b.name])
      v.ro = (r == 5 and src) and src.ro or nil
    end
  end
  return stmt
end

-- self.bK = <a tensor of another shape or dtype>: export must refuse the program (kind
-- buffer_metadata_mutation), whatever else it does.
function Gen:reassign_other_stmt()
  local b = R.pick(self.p.buffers)
  if b.name:find(".", 1, true) then return nil end
  local cur = self:value("self." .. b.name)
  local e = "self." .. b.name
  local x = R.pick(self.p.inputs).name
  local forms = {e .. ":to(torch.float64)", e .. ":to(torch.int64)", e .. ":unsqueeze(0) * 2",
                 e .. " + torch.zeros(2, " .. shape_str(cur.shape) .. ")", x .. " * 2", x .. ":double()",
                 "torch.ones(" .. shape_str(cur.shape) .. ", 1)"}
  if #cur.shape > 1 then forms[#forms + 1] = e .. ":flatten():clone()" end
  if #cur.shape == 2 then forms[#forms + 1] = e .. ":t()" end
  local stmt = {text = "self." .. b.name .. " = " .. R.pick(forms)}
  if not self:try(stmt) then return nil end
  local now = self:value("self." .. b.name)
  if shape_str(now.shape) == shape_str(cur.shape) and now.dtype == cur.dtype then return stmt end
  self.gens[b.name] = self.gens[b.name] + 1
  for _, v in ipairs(self.vars) do
    if v.buffer == b.name then v.base, v.ro = "buf:" .. b.name .. "#" .. self.gens[b.name], nil end
  end
  return stmt
end

local function generate(seed)
  local g = new_gen(seed)
  local want = R.int(2, 12)
  local tries = 0
  while #g.p.stmts < want and tries < want * 8 do
    tries = tries + 1
    local r = math.random()
    local stmt, var
    if CUSTOM and R.chance(0.3) then stmt, var = CUSTOM.stmt(g, {R = R, broadcasts_to = broadcasts_to})
    elseif r < 0.35 then stmt, var = g:view_stmt()
    elseif r < 0.75 then stmt = g:inplace_stmt()
    elseif r < 0.82 then stmt, var = g:functional_stmt()
    elseif r < 0.87 then stmt, var = g:subcall_stmt()
    elseif r < 0.92 then stmt = g:rebind_stmt()
    elseif r < 0.996 then stmt = g:reassign_stmt()
    else stmt = g:reassign_other_stmt() end
    if stmt then
      g.p.stmts[#g.p.stmts + 1] = stmt
      if var then g.vars[#g.vars + 1] = var end
    end
  end
  -- returns: 1-3 values, often views of inputs / buffers, sometimes the same one twice
  for _ = 1, R.int(1, 3) do
    local v = R.pick(g.vars)
    g.p.rets[#g.p.rets + 1] = v.expr
  end
  return g.p
end
F.generate = generate

-- ==== checking ========================================================================================

local function clone_list(list)
  local out = {}
  for i, t in ipairs(list) do out[i] = t:clone() end
  return out
end

-- The attribute at a dotted path of an eager module ("sub.c0").
local function get_path(m, path)
  for part in path:gmatch("[^.]+") do m = m[part] end
  return m
end

-- Every buffer of the program by name (named_buffers() lists a tensor bound to two names once).
local function buffers_of(m, p)
  local out = {}
  for _, b in ipairs(p.buffers) do
    local t = get_path(m, b.name)
    if not torch.is_tensor(t) then error("buffer " .. b.name .. " is not a tensor") end
    out[b.name] = t:clone()
  end
  return out
end

-- True when writing into `old` changes `t` (they share memory). Both are restored.
local function aliases(t, old)
  if overlapping(old) then
    -- an expanded tensor cannot be written: probe through the other one, if that can be
    if overlapping(t) then return false end
    t, old = old, t
  end
  local keep_t, keep_old = t:clone(), old:clone()
  torch.no_grad(function() old:fill_(12345) end)
  local changed = differ(t, keep_t) ~= nil
  torch.no_grad(function() old:copy_(keep_old) end)
  return changed
end

-- Eager reference: two calls of one module on fresh clones of the inputs (made views of the
-- module's buffers by with_views, when the program has such inputs).
local function eager_reference(Fuzz, inputs, p, with_views)
  local m = Fuzz()
  local calls = {}
  -- the first call records whether forward assigned a buffer a tensor of another shape or dtype
  -- than the one registered, even if a later assignment puts them back (export refuses both)
  local registered = {}
  for _, b in ipairs(p.buffers) do
    local t = get_path(m, b.name)
    registered[b.name] = shape_str(t.shape) .. " " .. tostring(t.dtype)
  end
  local function on_setattr(mod, k, v)
    if rawequal(mod, m) and registered[k] and torch.is_tensor(v)
        and shape_str(v.shape) .. " " .. tostring(v.dtype) ~= registered[k] then
      calls.metadata_assigned = true
    end
  end
  for c = 1, 2 do
    local args = with_views(m, clone_list(inputs))
    fuzz_log = {}
    nn._on_setattr = c == 1 and on_setattr or nil
    local res = table.pack(pcall(m, table.unpack(args)))
    nn._on_setattr = nil
    local log = fuzz_log
    if not res[1] then
      -- the first call may leave state the program cannot run on again (a buffer reassigned
      -- with other strides, then viewed): the first call is all there is to compare
      if c == 1 then error(res[2], 0) end
      calls.one_call = true
      break
    end
    res = table.pack(table.unpack(res, 2, res.n))
    local outs = {}
    for i = 1, res.n do
      if not torch.is_tensor(res[i]) then error("output " .. (i - 1) .. " is not a tensor") end
      outs[i] = res[i]:clone()
    end
    calls[c] = {outs = outs, inputs = clone_list(args), buffers = buffers_of(m, p), log = CUSTOM and log}
    -- a buffer rebound to a tensor of other strides (`self.b = self.b:transpose(0, 1)`, or a
    -- clone of such a view) changes what the next eager call's reshape does (a copy instead of
    -- a view), while the program was traced with the original layout and the unlifted module
    -- copies into its own tensor: only the first call can agree then
    for _, b in ipairs(p.buffers) do
      local t = get_path(m, b.name)
      if c == 1 and t:numel() > 1 and not t:is_contiguous() then calls.relaid_state = true end
    end
    -- two buffers bound to one tensor (`self.a = self.b`) stay one tensor in the next eager call,
    -- while the unlifted module keeps a tensor per buffer: only the first call can agree then
    for i = 1, #p.buffers do
      for j = i + 1, #p.buffers do
        local a, b = get_path(m, p.buffers[i].name), get_path(m, p.buffers[j].name)
        if a:numel() > 0 and (rawequal(a, b) or aliases(a, b)) then calls.shared_state = true end
      end
    end
  end
  return calls
end

-- A check failure: `stage` identifies the check (shrinking keeps it), `detail` says what differed.
local function fail(stage, detail)
  error({fuzz_fail = true, stage = stage, detail = detail}, 0)
end

local function expect(stage, got, want, what)
  local d = differ(got, want)
  if d then fail(stage, what .. ": " .. d) end
end

local function compare_outputs(stage, got, want)
  if #got ~= #want then fail(stage, "got " .. #got .. " outputs, expected " .. #want) end
  for i = 1, #want do expect(stage, got[i], want[i], "output " .. (i - 1)) end
end

-- Compares one call of a stateful program against eager call `ref`: outputs, the arguments
-- afterwards (user-input mutations written back), buffers afterwards (state(name) -> tensor).
local function compare_call(stage, outs, args, state, ref, p)
  compare_outputs(stage, outs, ref.outs)
  for i, x in ipairs(p.inputs) do expect(stage, args[i], ref.inputs[i], "input " .. x.name .. " afterwards") end
  for _, b in ipairs(p.buffers) do expect(stage, state(b.name), ref.buffers[b.name], "buffer " .. b.name .. " afterwards") end
end

-- fxdb.run of a functional program: user outputs, and the mutation outputs against eager's final
-- buffer / input values (an unmutated buffer or input must be unchanged in eager too).
local function check_run(stage, ep, p, inputs, initial, ref)
  local args = clone_list(inputs)
  fuzz_log = {}
  local r = fxdb.run(ep, args)
  if ref.log then CUSTOM.compare_log(fail, stage, fuzz_log, ref.log) end
  compare_outputs(stage, r.outputs, ref.outs)
  for i, x in ipairs(p.inputs) do
    expect(stage, args[i], inputs[i], "fxdb.run changed its argument " .. x.name)
    expect(stage, r.mutations[x.name] or inputs[i], ref.inputs[i], "input " .. x.name .. " (USER_INPUT_MUTATION)")
  end
  for _, b in ipairs(p.buffers) do
    expect(stage, r.mutations[b.name] or initial[b.name], ref.buffers[b.name], "buffer " .. b.name .. " (BUFFER_MUTATION)")
  end
end

local function check_module(stage, mod, p, inputs, calls)
  local ncalls = 2
  if calls.one_call then
    ncalls = 1
    F.notes["second call left out: the second eager call fails (state left by the first)"] =
      (F.notes["second call left out: the second eager call fails (state left by the first)"] or 0) + 1
  elseif calls.relaid_state then
    ncalls = 1
    F.notes["second call left out: the first eager call left a buffer with other strides"] =
      (F.notes["second call left out: the first eager call left a buffer with other strides"] or 0) + 1
  elseif calls.shared_state then
    ncalls = 1
    F.notes["second unlifted call left out: two buffers share one tensor after the first eager call"] =
      (F.notes["second unlifted call left out: two buffers share one tensor after the first eager call"] or 0) + 1
  end
  for c = 1, ncalls do
    local args = clone_list(inputs)
    fuzz_log = {}
    local res = table.pack(mod(table.unpack(args)))
    if calls[c].log then CUSTOM.compare_log(fail, stage .. " call " .. c, fuzz_log, calls[c].log) end
    local outs = {}
    for i = 1, res.n do outs[i] = res[i] end
    compare_call(stage .. " call " .. c, outs, args, function(name) return mod[name] end, calls[c], p)
  end
end

local NOT_YET = "not_implemented"

local function note(text) F.notes[text] = (F.notes[text] or 0) + 1 end

-- The kind of error export must raise for this program, from what eager did: a buffer whose
-- shape or dtype the first call changed (self.b = <another shape or dtype>) must be refused. (One
-- changed and then put back may be refused too, or exported; see check.)
local function expected_refusal(p, initial, calls)
  for _, b in ipairs(p.buffers) do
    local was, now = initial[b.name], calls[1].buffers[b.name]
    if shape_str(was.shape) ~= shape_str(now.shape) or was.dtype ~= now.dtype then
      return "buffer_metadata_mutation"
    end
  end
  return nil
end

-- True when two of the module's buffers and the arguments share a storage at the start (a buffer
-- registered as a view of another, an input that is a view of a buffer; even a view without
-- elements, as PyTorch compares storages): export may then refuse a program that mutates one of
-- them (kind aliased_input_mutation), or must agree with eager.
local function shares_storage(m, args, p)
  local ts = {}
  for _, b in ipairs(p.buffers) do ts[#ts + 1] = get_path(m, b.name) end
  for _, a in ipairs(args) do ts[#ts + 1] = a end
  for i = 1, #ts do
    for j = i + 1, #ts do
      if fxdb._same_storage(ts[i], ts[j]) then return true end
    end
  end
  return false
end

-- Exports a fresh module (strict or not) on clones of the inputs, made views of its buffers where
-- the program says so: the module, the arguments, whether any of them and the buffers share a
-- storage, then pcall's results.
local function fresh_export(Fuzz, inputs, p, with_views, strict)
  local m = Fuzz()
  local args = with_views(m, clone_list(inputs))
  return m, args, shares_storage(m, args, p), pcall(torch.export.export, m, args, {strict = strict})
end

-- Export left the example inputs and the module's buffers as they were.
local function expect_untouched(stage, m, args, p, inputs, initial)
  for i, x in ipairs(p.inputs) do expect(stage, args[i], inputs[i], "example input " .. x.name .. " after export") end
  for _, b in ipairs(p.buffers) do
    expect(stage, get_path(m, b.name), initial[b.name], "module buffer " .. b.name .. " after export")
  end
end

-- A program eager runs but export must refuse: both modes raise `kind` (or, when inputs and
-- buffers share memory, aliased_input_mutation), and leave the module and the inputs unchanged.
local function check_refused(Fuzz, inputs, p, initial, with_views, kind)
  for _, strict in ipairs{true, false} do
    local mode = strict and "strict" or "non-strict"
    local m, args, sharing, ok, e = fresh_export(Fuzz, inputs, p, with_views, strict)
    if ok then
      fail(mode .. ": export", "accepted a program eager says it must refuse (" .. kind .. ")")
    end
    if type(e) == "table" and e.kind == NOT_YET then
      error({fuzz_skip = true, reason = tostring(e.message or e)}, 0)
    end
    local got = type(e) == "table" and e.kind or "(no kind)"
    if got ~= kind and not (sharing and got == "aliased_input_mutation") then
      fail(mode .. ": export", "expected an error of kind " .. kind .. ", got " .. got .. ": " .. tostring(e))
    end
    expect_untouched(mode .. ": export", m, args, p, inputs, initial)
  end
  note("refused as expected: " .. kind)
end

local function ops_of(ep)
  local seq = {}
  for _, n in ipairs(ep.graph.nodes) do seq[#seq + 1] = n.name .. "=" .. (n.op == "call_function" and n.target or n.op) end
  return table.concat(seq, " ")
end

-- Runs every check on program p. Returns "pass", "skip", reason, or "fail", stage, detail;
-- "invalid" when the program itself does not run eagerly (only while shrinking).
local check_dynamic

local function check(p)
  local src = program_source(p)
  local chunk, perr = load(src, "=fuzz program", "t")
  if not chunk then return "invalid", perr end
  local ok, Fuzz, inputs, with_views = pcall(chunk)
  if not ok then return "invalid", tostring(Fuzz) end
  with_views = with_views or function(_, a) return a end
  local initial = buffers_of(Fuzz(), p)
  local okr, calls = pcall(eager_reference, Fuzz, inputs, p, with_views)
  if not okr then return "invalid", tostring(calls) end
  local refusal = expected_refusal(p, initial, calls)

  local okc, e = pcall(function()
    if refusal then return check_refused(Fuzz, inputs, p, initial, with_views, refusal) end
    if DYNAMIC then
      -- sharing and a buffer changing shape or dtype on the way are the static check's
      local m0 = Fuzz()
      if calls.metadata_assigned or shares_storage(m0, with_views(m0, clone_list(inputs)), p) then
        note("dynamic: left to the static check (shared storage, or a buffer assigned another shape or dtype)")
        return
      end
      return check_dynamic(p, Fuzz, inputs, initial, calls)
    end
    for _, strict in ipairs{true, false} do
      local mode = strict and "strict" or "non-strict"
      local m, args, sharing, oke, ep = fresh_export(Fuzz, inputs, p, with_views, strict)
      if not oke and sharing and type(ep) == "table" and ep.kind == "aliased_input_mutation" then
        -- refusing to mutate memory that inputs or buffers share is allowed (PyTorch does too)
        expect_untouched(mode .. ": export", m, args, p, inputs, initial)
        note("refused: a mutation of memory that buffers or inputs share (aliased_input_mutation)")
        goto next_mode
      end
      if not oke and calls.metadata_assigned and type(ep) == "table" and ep.kind == "buffer_metadata_mutation" then
        -- a buffer assigned another shape or dtype on the way, and its own at the end: refusing
        -- at the assignment is allowed, as is exporting what eager does
        expect_untouched(mode .. ": export", m, args, p, inputs, initial)
        note("refused: a buffer assigned another shape or dtype, then its own (buffer_metadata_mutation)")
        goto next_mode
      end
      if oke and sharing then note("buffers or inputs share a storage, exported: checked against eager") end
      if not oke then
        if type(ep) == "table" and ep.kind == NOT_YET then
          error({fuzz_skip = true, reason = tostring(ep.message or ep)}, 0)
        end
        fail(mode .. ": export", tostring(ep))
      end
      expect_untouched(mode .. ": export", m, args, p, inputs, initial)
      local okx, ex = pcall(check_run, mode .. ": fxdb.run", ep, p, inputs, initial, calls[1])
      if not okx then
        if type(ex) == "table" and ex.fuzz_fail then error(ex, 0) end
        fail(mode .. ": fxdb.run", tostring(ex))
      end
      okx, ex = pcall(check_module, mode .. ": unlifted", ep:module(), p, inputs, calls)
      if not okx then
        if type(ex) == "table" and ex.fuzz_fail then error(ex, 0) end
        fail(mode .. ": unlifted", tostring(ex))
      end
      if fxdb.reinplace then
        okx, ex = pcall(function()
          local re = fxdb.reinplace(ep)
          if re.module then re = re:module() end
          check_module(mode .. ": reinplaced", re, p, inputs, calls)
        end)
        if not okx then
          if type(ex) == "table" and ex.fuzz_fail then error(ex, 0) end
          fail(mode .. ": reinplaced", tostring(ex))
        end
      end
      if CUSTOM and strict and next(p.custom_ops) then
        -- auto_functionalized_v2 (the option): the same numbers, exported, unlifted, reinplaced
        okx, ex = pcall(function()
          local m2 = Fuzz()
          local ep2 = torch.export.export(m2, with_views(m2, clone_list(inputs)), {auto_functionalized_v2 = true})
          check_run(mode .. ": v2 fxdb.run", ep2, p, inputs, initial, calls[1])
          check_module(mode .. ": v2 unlifted", ep2:module(), p, inputs, calls)
          local re = fxdb.reinplace(ep2)
          check_module(mode .. ": v2 reinplaced", re.module and re:module() or re, p, inputs, calls)
        end)
        if not okx then
          if type(ex) == "table" and ex.fuzz_fail then error(ex, 0) end
          fail(mode .. ": auto_functionalized_v2", tostring(ex))
        end
      end
      do
        -- training IR (in-place ops kept) and its run_decompositions
        okx, ex = pcall(function()
          local mt = Fuzz()
          local tr = torch.export.export(mt, with_views(mt, clone_list(inputs)), {strict = strict, ir = "training"})
          check_module(mode .. ": training IR unlifted", tr:module(), p, inputs, calls)
          -- lowered to core ATen by the default table: the same numbers
          local dec = tr:run_decompositions()
          check_run(mode .. ": run_decompositions fxdb.run", dec, p, inputs, initial, calls[1])
          -- with an empty table the training IR becomes the functional program, node for node
          dec = tr:run_decompositions({})
          check_run(mode .. ": run_decompositions({}) fxdb.run", dec, p, inputs, initial, calls[1])
          if ops_of(dec) ~= ops_of(ep) then
            fail(mode .. ": run_decompositions graph", "functional export:\n" .. ops_of(ep) ..
              "\nrun_decompositions of the training IR:\n" .. ops_of(dec))
          end
        end)
        if not okx then
          if type(ex) == "table" and ex.fuzz_fail then error(ex, 0) end
          if type(ex) == "table" and ex.kind == NOT_YET then
            error({fuzz_skip = true, reason = tostring(ex.message or ex)}, 0)
          end
          fail(mode .. ": training IR", tostring(ex))
        end
      end
      ::next_mode::
    end
  end)
  if okc then return "pass" end
  if type(e) == "table" and e.fuzz_skip then return "skip", e.reason end
  if type(e) == "table" and e.fuzz_fail then return "fail", e.stage, e.detail end
  return "fail", "checker", tostring(e)
end
F.check = check

-- ==== dynamic shapes ===================================================================================

-- The dims of an input placeholder's type ("f32[s0, 4]" -> {"s0", "4"}).
local function placeholder_dims(ep, name)
  local n = ep.graph:node(name)
  local inner = n and n.type:match("%[(.*)%]")
  local out = {}
  for d in (inner or ""):gmatch("[^,]+") do out[#out + 1] = d:match("^%s*(.-)%s*$") end
  return out
end

-- The value of a size expression as sympy prints it ("2*s0 + 1", "(s0//2)", "Max(s0, 3)") with
-- the symbols' values in vals.
local function eval_dim(expr, vals)
  local env = setmetatable({Max = math.max, Min = math.min, Mod = function(a, b) return a % b end},
    {__index = vals})
  local fn = assert(load("return " .. expr:gsub("%*%*", "^"), "=dim", "t", env))
  return math.tointeger(fn()) or error("size expression " .. expr .. " is not an integer")
end

-- Random small integer values of dtype for shape (the generator's kind of data).
local function random_input(shape, dtype)
  local vals = random_values(numel(shape))
  return load("return " .. literal(shape, vals, dtype))()
end

-- Dynamic shapes: export once with every user-input dim of size >= 2 a Dim.AUTO (a dim the
-- program pins stays static, as in PyTorch), then for several assignments of the remaining
-- symbols inside their range constraints (from 2: sizes 0 and 1 are specialized, as in PyTorch):
-- fresh inputs of those sizes, eager on a fresh module against fxdb.run and ep:module(), bit for
-- bit. An eager failure at sizes the constraints allow means a guard is missing.
check_dynamic = function(p, Fuzz, inputs, initial, calls)
  local spec = {}
  for i, x in ipairs(p.inputs) do
    local dims = {}
    for d, n in ipairs(x.shape) do if n >= 2 then dims[d - 1] = torch.export.Dim.AUTO end end
    spec[i] = dims
  end
  local oke, ep = pcall(torch.export.export, Fuzz(), clone_list(inputs), {dynamic_shapes = spec})
  if not oke then
    if type(ep) == "table" and ep.kind == NOT_YET then
      error({fuzz_skip = true, reason = tostring(ep.message or ep)}, 0)
    end
    fail("dynamic: export", tostring(ep))
  end
  -- at the example sizes, the dynamic program is the static one
  check_run("dynamic: fxdb.run at the example sizes", ep, p, inputs, initial, calls[1])
  local ranges = {}
  for name, vr in pairs(ep.range_constraints) do
    local hint = fxdb.symbol(name, ep).hint
    ranges[#ranges + 1] = {name = name, lo = math.max(vr.lower, 2),
                           hi = math.min(vr.upper, hint + 3, 7)}
  end
  table.sort(ranges, function(a, b) return a.name < b.name end)
  if #ranges == 0 then
    F.notes["dynamic: every dim specialized (no symbol left)"] =
      (F.notes["dynamic: every dim specialized (no symbol left)"] or 0) + 1
    return
  end
  local seen = {}
  for _ = 1, 3 do
    local vals, desc = {}, {}
    for _, r in ipairs(ranges) do
      vals[r.name] = R.int(r.lo, r.hi)
      desc[#desc + 1] = r.name .. " = " .. vals[r.name]
    end
    local stage = "dynamic"
    local at = " at " .. table.concat(desc, ", ")
    local args = {}
    for i, x in ipairs(p.inputs) do
      local shape = {}
      for d, e in ipairs(placeholder_dims(ep, x.name)) do shape[d] = eval_dim(e, vals) end
      args[i] = random_input(shape, x.dtype)
    end
    -- sizes the program refuses (a guard it was exported under does not hold) are not compared;
    -- sizes eager refuses must fail in the program too (an index out of range, ...)
    local okr, rerr = pcall(fxdb.run, ep, clone_list(args))
    if not okr and tostring(type(rerr) == "table" and rerr.message or rerr):match("^Expected") then
      seen["dynamic: some sizes refused by the program (a guard does not hold there)"] = true
      goto continue
    end
    local m = Fuzz()
    local ea = clone_list(args)
    local res = table.pack(pcall(m, table.unpack(ea)))
    if not res[1] then
      -- an index value out of range is data, not a shape: the program fails there too unless the
      -- op that reads it is dead code export removed (as PyTorch's)
      local msg = tostring(res[2])
      if not okr or msg:match("index %-?%d+ is out of bounds") then
        seen["dynamic: some sizes fail in eager on an index value (the program fails too, or dropped the op as dead code)"] = true
        goto continue
      end
      fail(stage .. ": eager", "eager rejects" .. at .. ", which the program accepts " ..
        tostring(ep.range_constraints) .. " (a guard is missing): " .. tostring(res[2]) ..
        "\n" .. tostring(ep))
    end
    local ref = {outs = {}, inputs = clone_list(ea), buffers = buffers_of(m, p)}
    for i = 2, res.n do ref.outs[i - 1] = res[i]:clone() end
    local okx, ex = pcall(check_run, stage .. ": fxdb.run", ep, p, args, initial, ref)
    if not okx then
      if type(ex) == "table" and ex.fuzz_fail then ex.detail = ex.detail .. at error(ex, 0) end
      fail(stage .. ": fxdb.run", tostring(ex) .. at)
    end
    okx, ex = pcall(function()
      local mod = ep:module()
      local a2 = clone_list(args)
      local r2 = table.pack(mod(table.unpack(a2)))
      local outs = {}
      for i = 1, r2.n do outs[i] = r2[i] end
      compare_call(stage .. ": unlifted", outs, a2, function(name) return mod[name] end, ref, p)
    end)
    if not okx then
      if type(ex) == "table" and ex.fuzz_fail then ex.detail = ex.detail .. at error(ex, 0) end
      fail(stage .. ": unlifted", tostring(ex) .. at)
    end
    seen["dynamic: compared with eager at other sizes"] = true
    ::continue::
  end
  for k in pairs(seen) do F.notes[k] = (F.notes[k] or 0) + 1 end
end

-- ==== shrinking ========================================================================================

local function copy_program(p)
  local q = {seed = p.seed, buffers = p.buffers, inputs = p.inputs, stmts = {}, rets = {},
             custom_ops = p.custom_ops}
  for i, s in ipairs(p.stmts) do q.stmts[i] = s end
  for i, r in ipairs(p.rets) do q.rets[i] = r end
  return q
end

-- Drops statements (and returns) one at a time while the program still fails the same check.
local function shrink(p, stage)
  local function still_fails(q)
    local st, sg = check(q)
    return st == "fail" and sg == stage
  end
  local changed = true
  while changed do
    changed = false
    for i = #p.stmts, 1, -1 do
      local q = copy_program(p)
      table.remove(q.stmts, i)
      if still_fails(q) then p, changed = q, true end
    end
    for i = #p.rets, 1, -1 do
      if #p.rets > 1 then
        local q = copy_program(p)
        table.remove(q.rets, i)
        if still_fails(q) then p, changed = q, true end
      end
    end
  end
  return p
end
F.shrink = shrink

-- ==== main ========================================================================================

if SHOW then
  io.write(program_source(generate(SHOW)))
  local st, a, b = check(generate(SHOW))
  print("-- " .. st .. (a and (": " .. a) or "") .. (b and (": " .. b) or ""))
  return
end

local t0 = os.clock()
local w0 = os.time()
local passed, failed, skipped = 0, 0, 0
local reasons = {}
local stages = {}
for seed = SEED, SEED + N - 1 do
  local p = generate(seed)
  if STATS then
    -- what the programs are made of: methods called, index assignments, reassignments
    for _, stmt in ipairs(p.stmts) do
      local text = stmt.lhs and stmt.rhs or stmt.text
      for m in text:gmatch(":([%a_]+)%(") do STATS[m] = (STATS[m] or 0) + 1 end
      for m in text:gmatch("torch%.ops%.(%a+%.[%a_]+)%(") do STATS[m] = (STATS[m] or 0) + 1 end
      if not stmt.lhs and text:match("^[%w_.]+%[.-%] = ") then
        local kind = text:match("torch%.tensor%({[^}]*}, torch%.int") and "setitem (int index)" or
          (text:match("torch%.tensor%({[tf]") and "setitem (bool mask)" or "setitem (basic)")
        STATS[kind] = (STATS[kind] or 0) + 1
      end
      if text:match("^self%.b%d+ = ") then STATS["buffer reassignment"] = (STATS["buffer reassignment"] or 0) + 1 end
      if text:match("^[vx]%d+ = ") then STATS["rebinding"] = (STATS["rebinding"] or 0) + 1 end
    end
  end
  local st, a, b = check(p)
  if st == "pass" then
    passed = passed + 1
  elseif st == "skip" then
    skipped = skipped + 1
    reasons[a] = (reasons[a] or 0) + 1
  elseif st == "invalid" then
    -- the generator validated every statement: a program that does not run is a generator bug
    failed = failed + 1
    print("INVALID program, seed " .. seed .. ": " .. tostring(a))
    io.write(program_source(p))
  else
    failed = failed + 1
    stages[a] = (stages[a] or 0) + 1
    print(string.format("FAIL seed %d: %s: %s", seed, a, b))
    local small = shrink(p, a)
    local _, sa, sb = check(small)
    print(string.format("minimal program (%d of %d statements), still failing at %s: %s",
      #small.stmts, #p.stmts, tostring(sa), tostring(sb)))
    io.write(program_source(small))
    print(string.format("(rerun: fxdb tests/fuzz/gen_programs.lua --show %d)", seed))
    if not KEEP_GOING then break end
  end
  if VERBOSE then print("seed " .. seed .. ": " .. st .. (a and (" " .. a) or "")) end
end

if STATS then
  local keys = {}
  for k in pairs(STATS) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. " " .. STATS[k] end
  print("statements: " .. table.concat(parts, ", "))
end
local names = {}
for r in pairs(reasons) do names[#names + 1] = r end
table.sort(names)
for _, r in ipairs(names) do print(string.format("skipped %d: %s", reasons[r], r)) end
for note, n in pairs(F.notes) do print(string.format("note (%d programs): %s", n, note)) end
names = {}
for s in pairs(stages) do names[#names + 1] = s end
table.sort(names)
for _, s in ipairs(names) do print(string.format("failed %d at: %s", stages[s], s)) end
print(string.format("fuzz: %d programs (seeds %d..%d), cpu %.1f s, wall %d s",
  passed + failed + skipped, SEED, SEED + N - 1, os.clock() - t0, os.time() - w0))
print(string.format("fuzz: %d passed, %d failed, %d skipped", passed, failed, skipped))
io.stdout:flush()
if failed > 0 then os.exit(1) end
