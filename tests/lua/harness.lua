-- tests/lua/harness.lua — a tiny test harness for Lua-level tests (Lua's testes / Redis style).
-- Usage:  local T = dofile("tests/lua/harness.lua")
--         T.test("name", function() T.eq(a, b); T.truthy(x, "why"); T.checkerr("msg", f, ...) end)
--         T.done()   -- prints "<file>: N passed, N failed" and exits non-zero on failure
--         T.vals(t), T.targets(ep) -- values and graph targets as strings to compare
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

-- The elements of t (flattened) formatted with fmt (default "%.4f"), space-separated: a compact
-- way to compare values with the ones a PyTorch script printed.
function T.vals(t, fmt)
  local out = {}
  for i, v in ipairs(t:reshape(-1):tolist()) do out[i] = string.format(fmt or "%.4f", v) end
  return table.concat(out, " ")
end

-- The targets of ep's call_function nodes in graph order, space-separated (getitem left out when
-- skip_getitem).
function T.targets(ep, skip_getitem)
  local out = {}
  for _, n in ipairs(ep.graph.nodes) do
    if n.op == "call_function" and not (skip_getitem and n.target == "getitem") then
      out[#out + 1] = n.target
    end
  end
  return table.concat(out, " ")
end

function T.done()
  local file = debug.getinfo(2, "S").short_src
  print(string.format("%s: %d passed, %d failed", file, T.passed, T.failed))
  io.stdout:flush()
  if T.failed > 0 then os.exit(1) end
end

return T
