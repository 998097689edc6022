-- lua/session_shapes.lua — the debugger on symbolic shapes: the guards recorded so far (:guards,
-- fxdb.guards), where a symbol came from and what narrowed or replaced it (:why s0,
-- fxdb.symbol), and the text of a stop at a guard (:break guard, in session.lua).
-- Layer: lua (embedded; loaded after session.lua, whose shared state it reaches through
-- fxdb._dbg). The facts come from the shape environment (core/symint.h) through
-- tr:shape_info() during a trace and ep._shape_info for a program: each guard with the op that
-- asked and the user's Lua line (ShapeEnv.guards), each symbol with its source and ranges
-- (var_to_sources, var_to_range), and what each guard taught (refinements: a narrowed range or a
-- replacement).

local D = fxdb._dbg
local INF = math.huge

local function counted(word, n) return n .. " " .. word .. (n == 1 and "" or "s") end

local function vr_str(r)
  local function b(v)
    if v == INF then return "int_oo" elseif v == -INF then return "-int_oo" end
    return tostring(v)
  end
  return "VR[" .. b(r[1]) .. ", " .. b(r[2]) .. "]"
end

-- Whether expression text `expr` names symbol `sym` ("s0" is in "Eq(s0, s1)", not in "s01").
function D.mentions(expr, sym)
  return expr:find("%f[%w_]" .. sym .. "%f[^%w_]") ~= nil
end

-- "input x, dim 0" for the source "L['x'].size()[0]" (nested: "input pair[1], dim 0"), else nil.
local function source_words(src)
  local name, rest, dim = src:match("^L%['([^']+)'%](.-)%.size%(%)%[(%d+)%]$")
  if not name then return nil end
  return "input " .. name .. rest .. ", dim " .. dim
end

-- What refinement r did to its symbol, in words.
local function taught_str(r)
  if r.replacement then
    if math.tointeger(tonumber(r.replacement)) then
      return r.symbol .. " specialized to the constant " .. r.replacement
    end
    return r.symbol .. " replaced by " .. r.replacement
  end
  return r.symbol .. " narrowed from " .. vr_str(r.before) .. " to " .. vr_str(r.after)
end

-- The op that asked, as graphs print targets ("aten.view.default"); "(Lua code)" for a guard of
-- a comparison in the model's own code (no op was being computed).
local function op_str(op)
  return op ~= "" and op or "(Lua code)"
end

local function op_target(qualname)
  if qualname == "" then return "" end
  local ns, rest = qualname:match("^([%w_]+)::(.+)$")
  if ns then return ns .. "." .. rest end
  local _, dots = qualname:gsub("%.", "")
  return dots <= 1 and ("aten." .. qualname) or qualname
end

D.op_str = op_str

local GUARD_MT = {__name = "Guard"}
GUARD_MT.__tostring = function(g)
  local s = "guard " .. g.index .. ": " .. g.expr .. "   " .. op_str(g.op)
  if g.location ~= "" then s = s .. "   " .. g.location end
  if g.source ~= "" then s = s .. "   " .. g.source end
  return s
end

-- One table per column, padded to the widest cell, trailing blanks cut.
local function columns(rows)
  local w = {}
  for _, r in ipairs(rows) do
    for i, c in ipairs(r) do w[i] = math.max(w[i] or 0, #c) end
  end
  local out = {}
  for _, r in ipairs(rows) do
    local parts = {}
    for i, c in ipairs(r) do parts[i] = i < #r and (c .. string.rep(" ", w[i] - #c)) or c end
    out[#out + 1] = (table.concat(parts, "  "):gsub("%s+$", ""))
  end
  return out
end

local GUARDS_MT = {__name = "Guards"}
GUARDS_MT.__tostring = function(list)
  if #list == 0 and #list.asserts == 0 then
    return list.static and "no guards: the program has no symbolic sizes (export with " ..
      "dynamic_shapes)" or "no guards recorded so far"
  end
  local lines = {}
  local function block(title, items, label)
    if #items == 0 then return end
    lines[#lines + 1] = title
    local rows = {}
    for _, g in ipairs(items) do
      rows[#rows + 1] = {"  " .. label .. g.index, g.expr, op_str(g.op), g.location, g.source}
    end
    for _, l in ipairs(columns(rows)) do lines[#lines + 1] = l end
  end
  block(counted("guard", #list) .. " (ShapeEnv.guards), oldest first:", list, "")
  block(counted("runtime assert", #list.asserts) .. " (torch._check):", list.asserts, "a")
  return table.concat(lines, "\n")
end

-- The guards of a shape_info table as a list of Guard objects {index, expr, op, location, source,
-- taught = {"s0 narrowed from VR[2, 64] to VR[2, 32]", ...}, symbols = {"s0 = input x, dim 0",
-- ...}}, with .asserts (the runtime asserts in the same form).
function D.guard_list(info)
  local function make(items, key)
    local out = {}
    for i, g in ipairs(items or {}) do
      out[i] = setmetatable({index = i, expr = g.expr, op = op_target(g.op), location = g.loc,
                             source = g.line, taught = {}, symbols = {}}, GUARD_MT)
      for _, sym in ipairs(info.symbols or {}) do
        if D.mentions(g.expr, sym.name) then
          out[i].symbols[#out[i].symbols + 1] = sym.name .. " = " ..
            (source_words(sym.source) or (sym.source ~= "" and sym.source) or "?")
        end
      end
    end
    for _, r in ipairs(info.refinements or {}) do
      local g = r[key] and out[r[key]]
      if g then g.taught[#g.taught + 1] = taught_str(r) end
    end
    return out
  end
  local list = make(info.guards, "guard")
  list.asserts = make(info.asserts, "assert")
  list.static = info.symbols == nil or #info.symbols == 0
  list._info = info
  return setmetatable(list, GUARDS_MT)
end

-- The shape_info of ep, of the paused trace session, or of the current program.
local function shape_info(ep, what)
  if ep == nil then
    -- the trace session, unless a program was exported after it started
    local s = fxdb.session
    if s and s.kind == "trace" and fxdb.current == (s.ep or s.current_before) then
      return s:_shape_info()
    end
    ep = fxdb.current
    if ep == nil then
      error("no exported program or trace session: " .. what .. " needs :export or :trace " ..
            "(fxdb.export / fxdb.trace) first", 3)
    end
  end
  local ok, info = pcall(function() return ep._shape_info end)
  if not ok then
    error("bad argument #1 (ExportedProgram expected, got " .. type(ep) .. ")", 3)
  end
  return info or {}
end

-- fxdb.guards([ep]) -> Guards: every guard recorded while exporting ep (default: the paused trace
-- session's guards so far, else the current program's), oldest first, each {index, expr, op,
-- location, source, taught}; .asserts holds the deferred runtime asserts. tostring gives the
-- :guards listing.
function fxdb.guards(ep)
  return D.guard_list(shape_info(ep, "fxdb.guards"))
end

local SYMBOL_MT = {__name = "Symbol"}
SYMBOL_MT.__tostring = function(s)
  local lines = {}
  local head = s.name .. " = " .. (s.unbacked and "an unbacked value" or "a size") ..
    (s.source ~= "" and (" from " .. s.source) or "")
  local words = source_words(s.source)
  if words then head = head .. " (" .. words .. ")" end
  lines[1] = head
  if not s.unbacked then
    local as_size = {math.max(s.declared[1], 2), s.declared[2]}
    local l = "  example value " .. s.hint .. ", range " .. vr_str(as_size)
    if as_size[1] ~= s.declared[1] then
      l = l .. " (declared " .. vr_str(s.declared) .. "; 0 and 1 are specialized)"
    end
    lines[#lines + 1] = l
  end
  if s.location ~= "" then lines[#lines + 1] = "  created at " .. s.location end
  if #s.history == 0 then
    lines[#lines + 1] = "  no guard narrowed or replaced it"
  end
  for _, h in ipairs(s.history) do
    local g = h.guard
    lines[#lines + 1] = "  " .. (h.is_assert and ("runtime assert a" .. g.index) or
      ("guard " .. g.index)) .. ": " .. g.expr .. "  ->  " .. h.what
    local parts = {op_str(g.op)}
    if g.location ~= "" then parts[#parts + 1] = g.location end
    if g.source ~= "" then parts[#parts + 1] = g.source end
    lines[#lines + 1] = "      " .. table.concat(parts, "   ")
  end
  local now
  if s.replacement then
    now = "  now: " .. s.name .. " = " .. s.replacement
  else
    now = "  now: " .. vr_str(s.range)
  end
  if #s.other_guards > 0 then
    local idx = {}
    for _, g in ipairs(s.other_guards) do idx[#idx + 1] = tostring(g.index) end
    now = now .. "; also in guard" .. (#idx > 1 and "s " or " ") .. table.concat(idx, ", ") ..
      " (:guards)"
  end
  lines[#lines + 1] = now
  return table.concat(lines, "\n")
end

-- fxdb.symbol(name[, ep]) -> Symbol {name, source, hint, declared, range, replacement, unbacked,
-- location, history = {{guard, is_assert, what}...}, other_guards}: where symbol `name` ("s0")
-- came from (ShapeEnv's var_to_sources: which input and dim), its declared and current value
-- range (var_to_range), and each guard or runtime assert that narrowed its range or replaced it
-- (replacements), with the op and the Lua line; other_guards are the guards that name it
-- without changing it. Raises when there is no such symbol.
function fxdb.symbol(name, ep)
  if type(name) ~= "string" then
    error("bad argument #1 to 'symbol' (symbol name expected, got " .. type(name) .. ")", 2)
  end
  local info = shape_info(ep, "fxdb.symbol")
  local sym
  local names = {}
  for _, s in ipairs(info.symbols or {}) do
    names[#names + 1] = s.name
    if s.name == name then sym = s end
  end
  if not sym then
    error("no symbol '" .. name .. "'" .. (#names > 0 and (" (symbols: " ..
      table.concat(names, ", ") .. ")") or " (no symbolic sizes: export with dynamic_shapes)"), 2)
  end
  local guards = D.guard_list(info)
  local out = setmetatable({name = sym.name, source = sym.source, hint = sym.hint,
    declared = sym.declared, range = sym.range, replacement = sym.replacement,
    unbacked = sym.unbacked, location = sym.loc, history = {}, other_guards = {}}, SYMBOL_MT)
  local changed = {}
  for _, r in ipairs(info.refinements or {}) do
    if r.symbol == name then
      local g = r.guard and guards[r.guard] or guards.asserts[r.assert]
      out.history[#out.history + 1] = {guard = g, is_assert = r.assert ~= nil,
                                       what = taught_str(r):gsub("^" .. name .. " ", "")}
      if r.guard then changed[r.guard] = true end
    end
  end
  for i, g in ipairs(guards) do
    if not changed[i] and D.mentions(g.expr, name) then out.other_guards[#out.other_guards + 1] = g end
  end
  return out
end

-- fxdb.why(target[, ep]): `:why` — the story of symbol target ("s0", fxdb.symbol) when the
-- program or session has one by that name, else the provenance of buffer / input target
-- (fxdb.provenance of ep, default the current program).
function fxdb.why(target, ep)
  local symbolic = type(target) == "string" and target:match("^[su]%d+$") ~= nil
  if symbolic then
    local ok, info = pcall(shape_info, ep, ":why")
    if ok then
      for _, s in ipairs(info.symbols or {}) do
        if s.name == target then return fxdb.symbol(target, ep) end
      end
    end
  end
  ep = ep or fxdb.current
  if ep == nil then
    if symbolic then return fxdb.symbol(target) end -- raises, naming the symbols there are
    error("no exported program: run :export first (or fxdb.export(m, args))", 2)
  end
  local ok, res = pcall(fxdb.provenance, ep, target)
  if ok then return res end
  if symbolic then return fxdb.symbol(target, ep) end
  error(res, 0)
end
