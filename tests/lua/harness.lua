-- tests/lua/harness.lua — a tiny test harness for Lua-level tests (Lua's testes / Redis style).
-- Usage:  local T = dofile("tests/lua/harness.lua")
--         T.test("name", function() T.eq(a, b); T.truthy(x, "why"); T.checkerr("msg", f, ...) end)
--         T.done()   -- prints "<file>: N passed, N failed" and exits non-zero on failure
--         T.vals(t), T.targets(ep) -- values and graph targets as strings to compare
--         T.eqlist(t, {...}, tol), T.same(a, b, tol), T.show(v) -- nested lists (tolist())
--         T.module(forward[, init[, name]]) -- an instance of a fresh nn.Module class
--         T.lines_of(s), T.has_line(text, line) -- printouts line by line
local T = {passed = 0, failed = 0}

local function where(level)
  local info = debug.getinfo(level + 1, "Sl")
  return info and (info.short_src .. ":" .. info.currentline) or "?"
end

local function fail(msg, level)
  error({harness = true, msg = where(level + 1) .. ": " .. msg}, 0)
end

function T.eq(a, b, what)
  if a ~= b then
    fail(string.format("%sexpected %s, got %s", what and (what .. ": ") or "", tostring(b), tostring(a)), 2)
  end
end

function T.truthy(v, what)
  if not v then fail("expected a true value" .. (what and (": " .. tostring(what)) or ""), 2) end
end

function T.falsy(v, what)
  if v then fail("expected a false value" .. (what and (": " .. tostring(what)) or ""), 2) end
end

function T.near(a, b, tol, what)
  if math.abs(a - b) > (tol or 1e-6) then
    fail(string.format("%sexpected %s within %g, got %s", what and (what .. ": ") or "", b, tol or 1e-6, a), 2)
  end
end

-- Asserts that f(...) raises an error whose text contains `msg` (plain substring); returns the
-- error value for further checks.
function T.checkerr(msg, f, ...)
  local ok, e = pcall(f, ...)
  if ok then fail("expected an error containing '" .. msg .. "'", 2) end
  local text = tostring(e)
  if not text:find(msg, 1, true) then
    fail("expected an error containing '" .. msg .. "', got: " .. text, 2)
  end
  return e
end
checkerr = checkerr or T.checkerr

function T.test(name, f)
  local ok, e = xpcall(f, function(err)
    if type(err) == "table" and err.harness then return err.msg end
    return debug.traceback(tostring(err), 2)
  end)
  if ok then
    T.passed = T.passed + 1
  else
    T.failed = T.failed + 1
    io.stderr:write("FAIL ", name, "\n  ", tostring(e):gsub("\n", "\n  "), "\n")
  end
end

-- The elements of t (flattened) formatted with fmt (default "%.4f"; booleans as true / false),
-- space-separated: a compact way to compare values with the ones a PyTorch script printed.
function T.vals(t, fmt)
  local out = {}
  for i, v in ipairs(t:reshape(-1):tolist()) do
    out[i] = type(v) == "boolean" and tostring(v) or string.format(fmt or "%.4f", v)
  end
  return table.concat(out, " ")
end

-- The targets of ep's call_function nodes in graph order, space-separated (getitem left out when
-- skip_getitem; each as "name=target" when with_names).
function T.targets(ep, skip_getitem, with_names)
  local out = {}
  for _, n in ipairs(ep.graph.nodes) do
    if n.op == "call_function" and not (skip_getitem and n.target == "getitem") then
      out[#out + 1] = with_names and (n.name .. "=" .. n.target) or n.target
    end
  end
  return table.concat(out, " ")
end

-- Deep comparison of numbers and nested lists of them (tolist() results): numbers within tol
-- (default 0), NaN equal to NaN; anything else with ==.
function T.same(a, b, tol)
  if type(a) ~= type(b) then return false end
  if type(a) == "table" then
    if #a ~= #b then return false end
    for i = 1, #a do if not T.same(a[i], b[i], tol) then return false end end
    return true
  end
  if type(a) == "number" then
    if a ~= a and b ~= b then return true end
    return math.abs(a - b) <= (tol or 0)
  end
  return a == b
end

-- A nested list as "{1, {2, 3}}".
function T.show(v)
  if type(v) ~= "table" then return tostring(v) end
  local p = {}
  for i = 1, #v do p[i] = T.show(v[i]) end
  return "{" .. table.concat(p, ", ") .. "}"
end

-- Asserts that t (a tensor, through tolist(), or a nested list) is T.same as want.
function T.eqlist(t, want, tol)
  local got = torch.is_tensor(t) and t:tolist() or t
  if not T.same(got, want, tol) then
    fail("expected " .. T.show(want) .. ", got " .. T.show(got), 2)
  end
end

-- An instance of a fresh nn.Module class (named name, default "M") with this forward and, when
-- given, this init.
function T.module(forward, init, name)
  local M = nn.Module:extend(name or "M")
  if init then M.init = init end
  M.forward = forward
  return M()
end

-- The lines of s, as they are.
function T.lines_of(s)
  local out = {}
  for l in (s .. "\n"):gmatch("(.-)\n") do out[#out + 1] = l end
  return out
end

-- Whether a line of text, stripped of surrounding spaces, is want.
function T.has_line(text, want)
  for _, l in ipairs(T.lines_of(text)) do
    if l:match("^%s*(.-)%s*$") == want then return true end
  end
  return false
end

-- The forward's body lines of ep's printout (each stripped; comments and blank lines left out),
-- from the line after `def forward` through `return`.
function T.forward_body(ep)
  local out, on = {}, false
  for _, l in ipairs(T.lines_of(tostring(ep))) do
    l = l:match("^%s*(.-)%s*$")
    if l ~= "" and not l:find("^#") then
      if l:find("^def forward") then on = true
      elseif on then
        out[#out + 1] = l
        if l:find("^return") then break end
      end
    end
  end
  return out
end

-- Blocks core holds for live Lua objects, after full collections (the most recent export, which
-- fxdb.current keeps for the REPL's commands, forgotten first): the allocation-failure sweeps
-- compare it before and after each failed attempt.
function T.live_blocks()
  fxdb.current, fxdb.current_module, fxdb.current_args, fxdb._reinplace_notes = nil, nil, nil, nil
  collectgarbage()
  collectgarbage()
  return torch._memory_stats().live_blocks
end

function T.done()
  local file = debug.getinfo(2, "S").short_src
  print(string.format("%s: %d passed, %d failed", file, T.passed, T.failed))
  io.stdout:flush()
  if T.failed > 0 then os.exit(1) end
end

return T
