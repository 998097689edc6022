-- tests/lua/test_oom_sweep.lua — allocation failures on the Lua export path: a small
-- torch.export.export from Lua, then fxdb.run and the unlifted module, with core's N-th allocation
-- failing (and every later one), for every N until the whole thing succeeds. Each failed attempt
-- must raise an fxdb error of kind out_of_memory (never crash, never another kind), leave the
-- module's state untouched and leak no core block (torch._memory_stats after a full collection).
-- The C-level sweeps of trace / functionalize / export / unlift / reinplace / interp are in
-- tests/unit (kb_oom_sweep). Layer: tests.
local T = dofile("tests/lua/harness.lua")

torch.set_num_threads(1) -- failing allocations is single-threaded only

local M = dofile("tests/lua/oom_model.lua")

torch.manual_seed(0)
local m = M()
local x = torch.randn(4, 3)

-- the whole path: export, run the program, call the unlifted module twice
local function path()
  local ep = torch.export.export(m, {x})
  local r = fxdb.run(ep, {x})
  local gm = ep:module()
  gm(x)
  local a = gm(x)
  return r.outputs[1], a, gm.steps
end

local live = T.live_blocks

T.test("a small export from Lua, run and unlift: every allocation failure is a clean error", function()
  local want_out, want_mod, want_steps = path()   -- warms every cache first
  local steps0 = m.steps:clone()
  local points, other = 0, {}
  for n = 1, 200000 do
    local before = live()
    torch._fail_alloc_at(n)
    local ok, o1, o2, o3 = pcall(path)
    torch._fail_alloc_at(0)
    local err = (not ok) and o1 or nil
    o1, o2, o3 = ok and o1 or nil, ok and o2 or nil, ok and o3 or nil
    if ok then
      T.eq(fxdb._max_abs_diff(o1, want_out), 0, "run's output after the sweep")
      T.eq(fxdb._max_abs_diff(o2, want_mod), 0, "the unlifted module's output after the sweep")
      T.eq(fxdb._max_abs_diff(o3, want_steps), 0, "the unlifted module's buffer after the sweep")
      break
    end
    points = points + 1
    if type(err) ~= "table" or err.kind ~= "out_of_memory" then
      other[#other + 1] = "allocation " .. n .. ": " .. tostring(type(err) == "table" and err.kind or "") ..
        ": " .. tostring(err)
    end
    T.eq(fxdb._max_abs_diff(m.steps, steps0), 0, "the module's buffer after a failed export (allocation " .. n .. ")")
    err = nil
    local after = live()
    if after ~= before then
      other[#other + 1] = "allocation " .. n .. ": " .. (after - before) .. " core blocks leaked"
    end
    if #other >= 10 then break end
  end
  T.eq(table.concat(other, "\n"), "")
  T.truthy(points > 100, points .. " allocation points")
  print(string.format("  Lua export path: %d allocation points, each failed cleanly", points))
end)

T.done()
