-- lua/lesson.lua — the lessons (examples/lessons/NN_name.lua) and fxdb.explain, the narration of
-- functionalization built from the records the export left in the graphs.
-- Layer: lua (embedded).
--
-- A lesson file returns {title = "...", {title, text, fn}, ...}: each step has a title, a
-- paragraph of narration (concepts only: what happened is printed by the step itself, from the
-- program's own records) and a function. Running a step prints its title and text, the source of
-- its function (read from the lesson file, so the code shown is the code run), then runs it in
-- the REPL's globals, so what a step defines (`m`, `ep`) can be inspected at the prompt before
-- the next step. `:lesson N` starts lesson N at step 1; `:lesson` (or an empty line) runs the
-- next step; `fxdb --lesson N` does the same from the command line, and runs every step at once
-- when stdin is not a terminal.

fxdb = fxdb or {}

local L = {} -- the lesson in progress: {n, path, steps, next}

-- ---- finding lessons --------------------------------------------------------------------------

-- Folders that may hold the lessons: $FXDB_LESSONS, ./examples/lessons, and examples/lessons next
-- to the folder of the program (build/fxdb -> examples/lessons).
local function lesson_dirs()
  local dirs = {}
  local env = os.getenv("FXDB_LESSONS")
  if env and env ~= "" then dirs[#dirs + 1] = env end
  dirs[#dirs + 1] = "examples/lessons"
  local prog -- the program: arg's most negative index (arg[0] when fxdb runs no script)
  if type(arg) == "table" then
    local i = 0
    while arg[i - 1] ~= nil do i = i - 1 end
    prog = arg[i]
  end
  if type(prog) == "string" and prog:find("/") then
    dirs[#dirs + 1] = prog:gsub("/[^/]*$", "") .. "/../examples/lessons"
  end
  return dirs
end

-- The lesson files of a folder, by number: {[1] = "01_tracing.lua", ...} (Lua has no directory
-- listing, so `ls` lists it).
local function list_dir(dir)
  local found = {}
  local p = io.popen('ls -1 "' .. dir:gsub('"', '\\"') .. '" 2>/dev/null')
  if p then
    for name in p:lines() do
      local num = name:match("^(%d%d)_[%w_]+%.lua$")
      if num then found[tonumber(num)] = name end
    end
    p:close()
  end
  return found
end

local function find_lessons()
  for _, dir in ipairs(lesson_dirs()) do
    local found = list_dir(dir)
    if next(found) then return dir, found end
  end
  return nil, {}
end

-- ---- running steps ------------------------------------------------------------------------------

local function read_lines(path)
  local f = io.open(path)
  if not f then return {} end
  local lines = {}
  for line in f:lines() do lines[#lines + 1] = line end
  f:close()
  return lines
end

-- The body of step function fn as written in the lesson file, dedented.
local function step_source(fn, lines)
  local info = debug.getinfo(fn, "S")
  local first, last = info.linedefined, info.lastlinedefined
  if not first or first <= 0 then return {} end
  local body = {}
  for i = first + 1, last - 1 do body[#body + 1] = lines[i] or "" end
  local indent
  for _, l in ipairs(body) do
    local lead = l:match("^(%s*)%S")
    if lead and (indent == nil or #lead < indent) then indent = #lead end
  end
  for i, l in ipairs(body) do body[i] = l:sub((indent or 0) + 1) end
  return body
end

local function rule(title)
  local s = "-- " .. title .. " "
  return s .. string.rep("-", math.max(3, 78 - #s))
end

local function run_step()
  local k = L.next
  local step = L.steps[k]
  L.next = k + 1
  print(rule(string.format("lesson %d, step %d of %d: %s", L.n, k, #L.steps, step[1])))
  if step[2] and step[2] ~= "" then print((step[2]:gsub("^\n", ""):gsub("\n$", ""))) end
  local src = step_source(step[3], L.lines)
  if #src > 0 then
    print("")
    for _, l in ipairs(src) do print("  | " .. l) end
  end
  print("")
  step[3]()
  if L.next > #L.steps then
    local more = L.found[L.n + 1] and (":lesson " .. (L.n + 1) .. " starts the next one") or
      "that was the last lesson"
    print(rule("end of lesson " .. L.n .. "; " .. more))
    L.steps = nil
  else
    print(rule("':lesson' or an empty line: step " .. L.next .. " of " .. #L.steps))
  end
end

-- fxdb.lesson([n | "list"], [{all = true}]): starts lesson n (or, without n, runs the next step
-- of the lesson in progress); "list" lists the lessons. opts.all runs every step at once.
function fxdb.lesson(n, opts)
  opts = opts or {}
  local dir, found = find_lessons()
  if n == "list" or (n == nil and L.steps == nil) then
    if not dir then error("no lessons found (looked in " .. table.concat(lesson_dirs(), ", ") .. ")", 2) end
    local lines = {"Lessons (:lesson N starts one):"}
    for i = 1, 99 do
      if found[i] then
        local chunk = loadfile(dir .. "/" .. found[i])
        local ok, les = pcall(chunk)
        lines[#lines + 1] = string.format("  %2d  %s", i, ok and type(les) == "table" and les.title or found[i])
      end
    end
    print(table.concat(lines, "\n"))
    return
  end
  if n ~= nil then
    local num = math.tointeger(tonumber(n))
    if not num then error("bad argument #1 to 'lesson' (a lesson number expected, got " .. tostring(n) .. ")", 2) end
    if not found[num] then
      local have = {}
      for i = 1, 99 do if found[i] then have[#have + 1] = tostring(i) end end
      error("no lesson " .. num .. (#have > 0 and (" (there are " .. table.concat(have, ", ") .. ")") or
        " (no lessons found)"), 2)
    end
    local path = dir .. "/" .. found[num]
    local chunk, err = loadfile(path)
    if not chunk then error(err, 2) end
    local les = chunk()
    L = {n = num, path = path, steps = les, next = 1, lines = read_lines(path), found = found}
    print(rule("lesson " .. num .. ": " .. les.title .. "  (" .. path:gsub("^%./", "") .. ")"))
  end
  run_step()
  while opts.all and L.steps do run_step() end
end

-- ---- fxdb.explain: functionalization, rewrite by rewrite ----------------------------------------

local function where_of(n)
  local st = n.meta.stack_trace
  if not st then return nil end
  local last = st:match("([^\n]*)$")
  local file, line, code = last:match("^File: (.-):(%d+) in [^,]*, code: (.*)$")
  if not file then return nil end
  code = code:gsub("%s+%-%-[^\"']*$", "") -- a trailing comment (one without quotes after --)
  return file:gsub("^.*/", "") .. ":" .. line, code
end

-- The arguments of n as FX prints them: %node, numbers, lists in brackets.
local function arg_names(n)
  local function fmt(a)
    if type(a) == "userdata" and a.name and a.op then return "%" .. a.name end
    if type(a) == "table" and getmetatable(a) == nil then -- a list; nil stands for None
      local last = 0
      for k in pairs(a) do if math.type(k) == "integer" and k > last then last = k end end
      local parts = {}
      for i = 1, math.max(last, a.n or 0) do parts[i] = a[i] == nil and "None" or fmt(a[i]) end
      return "[" .. table.concat(parts, ", ") .. "]"
    end
    if a == nil then return "None" end
    if type(a) == "boolean" then return a and "True" or "False" end
    return tostring(a)
  end
  local out = {}
  local args = n.args or {}
  local last = 0
  for k in pairs(args) do if math.type(k) == "integer" and k > last then last = k end end
  for i = 1, last do out[i] = fmt(args[i]) end
  return out
end

local function first_node_arg(n)
  for _, a in ipairs(n.args or {}) do
    if type(a) == "userdata" and a.name and a.op then return a end
  end
end

-- Why functional node f exists, from its target and its mutation record (r = the raw in-place
-- node it came from).
local function reason(f, r, written)
  local m = f.meta.mutation
  local t = tostring(f.target)
  local out_of_place = tostring(r.target):gsub("_%.", ".", 1)
  local why
  if t:match("_scatter%.") then
    why = "writes the new value back into the view's base (" .. t:match("aten%.([%w_]+)_scatter") ..
      "_scatter is the inverse of the " .. t:match("aten%.([%w_]+)_scatter") .. " view)"
  elseif t == out_of_place then
    why = "the same op out of place: it computes the new value instead of writing it into %" ..
      written
  elseif t:match("^aten%.copy") or t:match("^aten%.expand") or t:match("^aten%._to_copy") then
    why = "copy_ has no out-of-place twin: the new value is the source, converted and broadcast to the destination's shape"
  else
    why = "part of the rewrite of %" .. r.name
  end
  if m and m.state then
    why = why .. "; its result is version " .. m.version .. " of '" .. m.state .. "'"
  end
  return why
end

-- Words of text in lines of at most `width` characters, each starting with `indent`.
local function wrap(text, indent, width)
  local lines, cur = {}, indent
  for word in text:gmatch("%S+") do
    if #cur > #indent and #cur + 1 + #word > width then
      lines[#lines + 1] = cur
      cur = indent .. word
    else
      cur = cur .. (#cur > #indent and " " or "") .. word
    end
  end
  if #cur > #indent then lines[#lines + 1] = cur end
  return table.concat(lines, "\n")
end

local EXPLAIN_MT = {__tostring = function(x)
  local parts = {}
  for _, e in ipairs(x) do parts[#parts + 1] = tostring(e) end
  if #x.outputs > 0 then parts[#parts + 1] = table.concat(x.outputs, "\n") end
  if #parts == 0 then return "no in-place op: the raw graph is already functional" end
  return table.concat(parts, "\n\n")
end}
local ENTRY_MT = {__tostring = function(e) return table.concat(e.lines, "\n") end}

-- fxdb.explain([ep]) -> a list with one entry per in-place op of the raw graph: the op, what it
-- wrote (and through which view), and each functional node that replaced it with why; `outputs`
-- says which version of each mutated input the program returns. Built only from the programs'
-- records (meta.from_node, meta.mutation, the signature), never from fixed text about a model.
function fxdb.explain(ep)
  ep = ep or fxdb.current
  if ep == nil then error("no exported program: run :export first (or fxdb.explain(ep))", 2) end
  local raw, fun = ep.raw_graph, ep.graph
  if raw == nil then error("this program has no raw graph to compare with", 2) end
  local made = {} -- raw name -> functional nodes, in graph order
  for _, f in ipairs(fun.nodes) do
    for _, from in ipairs(f.meta.from_node or {}) do
      local name = type(from) == "table" and from.name or tostring(from) -- {name, target} entries
      made[name] = made[name] or {}
      table.insert(made[name], f)
    end
  end
  local res = setmetatable({outputs = {}}, EXPLAIN_MT)
  for _, r in ipairs(raw.nodes) do
    local mutated = r.op == "call_function" and (r.is_inplace or tostring(r.target):match("_%.[%w_]+$"))
    if mutated then
      local dst = first_node_arg(r)
      local lines = {}
      local at, code = where_of(r)
      lines[1] = string.format("%%%s = %s(%s)%s", r.name, tostring(r.target),
        table.concat(arg_names(r), ", "), at and ("   " .. at .. "   " .. code) or "")
      local state, path
      for _, f in ipairs(made[r.name] or {}) do
        local m = f.meta.mutation
        if m and m.state then state, path = m.state, m.view_path end
      end
      local what = dst and ("%" .. dst.name) or "its first argument"
      if state and path then
        lines[2] = "  writes in place into " .. what .. ", a view of '" .. state .. "' (" .. path .. ")"
      elseif state then
        lines[2] = "  writes in place into " .. what .. ", which is '" .. state .. "' itself"
      else
        lines[2] = "  writes in place into " .. what .. ", a tensor made inside forward (no input or state changes)"
      end
      lines[3] = "  a functional graph has no in-place ops, so it became:"
      for _, f in ipairs(made[r.name] or {}) do
        lines[#lines + 1] = string.format("    %%%s = %s", f.name, tostring(f.target))
        lines[#lines + 1] = wrap(reason(f, r, dst and dst.name or "?"), "        ", 96)
      end
      if not made[r.name] then
        lines[#lines + 1] = "    nothing: its result is never read, so it was removed"
      end
      res[#res + 1] = setmetatable({raw = r, nodes = made[r.name] or {}, state = state, lines = lines}, ENTRY_MT)
    end
  end
  for i, spec in ipairs(ep.graph_signature.output_specs) do
    if spec.kind:match("MUTATION$") then
      res.outputs[#res.outputs + 1] = wrap(string.format(
        "output %d, %%%s, is %s target='%s': the last version, returned so that the caller stores it",
        i - 1, spec.arg.name, spec.kind, spec.target), "", 96)
    end
  end
  return res
end
