-- tests/lua/test_lua_oom_sweep.lua — Lua's own allocator failing on the export path: small
-- exports from Lua (strict, with side effects on plain attributes and containers, non-strict,
-- dynamic shapes, a custom op and torch.cond, the passes), run and unlifted, with the N-th
-- growing request to the Lua state's allocator failing (and every later one, until the sweep
-- turns it off) through torch._fail_lua_alloc_at, for every N until the whole path succeeds.
-- test_oom_sweep.lua fails core's allocations instead.
-- Each failed attempt must raise (Lua's "not enough memory", or an fxdb out_of_memory error) and
-- leave fxdb clean: no tracer bound, export's hooks (nn._module_stack, nn._paths, nn._on_setattr,
-- the active tracer) as they were, the module's state untouched, no core block leaked, and the
-- next export working. FXDB_LUA_OOM_STRIDE=k tries every k-th point only. Layer: tests.
local T = dofile("tests/lua/harness.lua")

torch.set_num_threads(1) -- failing allocations is single-threaded only
fxdb.simplefilter("ignore") -- strict export's side-effect warning, once per attempt otherwise
local E = torch._export
local Dim = torch.export.Dim
local STRIDE = tonumber(os.getenv("FXDB_LUA_OOM_STRIDE") or "1")

local live = T.live_blocks

-- Everything of a module a failed export must leave as it was: each module's parameters,
-- buffers (the same tensors, the same values) and plain attributes (the same values; tables
-- compared one level deep).
local function state_of(m)
  local out = {}
  for _, pm in ipairs(m:named_modules()) do
    local path, mod = pm[1], pm[2]
    local d = rawget(mod, "__dict")
    for _, kind in ipairs{"_parameters", "_buffers"} do
      for _, name in ipairs(d[kind]) do
        local t = d[kind][name]
        out[#out + 1] = {path .. "." .. name, t, t:clone()}
      end
    end
    for _, name in ipairs(d._attr_order) do
      local v = d[name]
      out[#out + 1] = {path .. "." .. name, v, type(v) == "table" and {table.unpack(v)} or nil}
    end
  end
  return out
end

local function state_diff(m, want)
  local now = state_of(m)
  if #now ~= #want then return "the module has " .. #now .. " state entries, had " .. #want end
  for i, w in ipairs(want) do
    local name, v, copy = w[1], w[2], w[3]
    if now[i][1] ~= name or not rawequal(now[i][2], v) then return name .. " was replaced" end
    if torch.is_tensor(v) and fxdb._max_abs_diff(v, copy) ~= 0 then return name .. " changed" end
    if type(v) == "table" and copy then
      for k = 1, math.max(#v, #copy) do
        if not rawequal(v[k], copy[k]) then return name .. "[" .. k .. "] changed" end
      end
    end
  end
  return nil
end

-- ---- the paths swept ---------------------------------------------------------------------------------

local scenarios = {}

-- a linear layer, a buffer mutation, views; strict export, fxdb.run, the unlifted module twice
do
  local M = dofile("tests/lua/oom_model.lua")
  torch.manual_seed(0)
  local m, x = M(), torch.randn(4, 3)
  scenarios[#scenarios + 1] = {name = "strict export, run, unlift", m = m, path = function()
    local ep = torch.export.export(m, {x})
    local r = fxdb.run(ep, {x})
    local gm = ep:module()
    gm(x)
    return {r.outputs[1], gm(x), gm.steps}
  end}
end

-- strict: plain attributes and a container forward changes (Dynamo's side effects, applied to the
-- module only after a successful export), a tensor reached through a plain table, a ModuleList
do
  local M = nn.Module:extend("M")
  function M:init()
    self.layers = nn.ModuleList{nn.Linear(3, 3), nn.Linear(3, 3)}
    self.step = 0
    self.hist = {}
    self.cache = {scale = torch.full({3}, 2.0)}
  end
  function M:forward(x)
    self.step = self.step + 1
    self.hist[#self.hist + 1] = self.step
    for _, layer in ipairs(self.layers) do x = layer(x) end
    return x * self.cache.scale
  end
  torch.manual_seed(0)
  local m, x = M(), torch.randn(2, 3)
  local exported = false
  scenarios[#scenarios + 1] = {name = "strict export with attribute side effects", m = m, path = function()
    exported = false
    local ep = torch.export.export(m, {x})
    exported = true
    return {fxdb.run(ep, {x}).outputs[1]}
  end, after = function()
    -- a successful export applied the side effects (the list in place): taken back, so that
    -- the module is as it was for the next attempt
    if exported then
      T.eq(m.step, 1, "the export's side effect on a plain attribute")
      T.eq(#m.hist, 1, "the export's side effect on a list, in place")
      m.step = 0
      for k in pairs(m.hist) do m.hist[k] = nil end
    end
  end}
end

-- non-strict: a submodule, plain attributes forward changes (a counter, a list, a cache table),
-- split / unbind pieces, index assignment; then reinplace and the training IR's decompositions
do
  local Inner = nn.Module:extend("Inner")
  function Inner:init() self:register_buffer("acc", torch.zeros(3)) end
  function Inner:forward(v)
    self.acc:add_(v)
    return self.acc * 1
  end
  local M = nn.Module:extend("M")
  function M:init()
    self.inner = Inner()
    self.calls = 0
    self.seen = {1, 2}
    self:register_buffer("b", torch.arange(6, torch.float32):reshape(2, 3))
  end
  function M:forward(x)
    self.calls = self.calls + 1
    self.seen[#self.seen + 1] = self.calls
    local a, b2 = table.unpack(x:split(1, 0))
    local rows = self.b:unbind(0)
    rows[1]:mul_(2)
    self.b[{1, {0, 2}}] = a[{0, {0, 2}}]
    return self.inner(b2[0]) + rows[2], torch.cat({a, b2}, 1)
  end
  local m, x = M(), torch.arange(6, torch.float32):reshape(2, 3) + 1
  scenarios[#scenarios + 1] = {name = "non-strict export, reinplace, training IR", m = m, path = function()
    local ep = torch.export.export(m, {x}, {strict = false})
    local re = fxdb.reinplace(ep)
    if re.module then re = re:module() end
    local out = re(x:clone())
    local tr = torch.export.export(m, {x}, {ir = "training", strict = false})
    local dec = tr:run_decompositions()
    return {out, fxdb.run(dec, {x}).outputs[1]}
  end}
end

-- dynamic shapes, a custom op that mutates, torch.cond; run at another size
do
  if not torch.ops.oomlib then
    torch.library.define("oomlib::bump", "(Tensor(a!) x, Tensor y) -> ()")
    torch.library.impl("oomlib::bump", "cpu", function(x, y) x:add_(y) end)
    torch.library.register_fake("oomlib::bump", function() end)
  end
  local M = nn.Module:extend("M")
  function M:init() self:register_buffer("s", torch.zeros(3)) end
  function M:forward(x)
    torch.ops.oomlib.bump(self.s, x:sum(0))
    local y = torch.cond(x:sum():gt(0), function(a) return a:sin() end, function(a) return a:cos() end, {x})
    return y:reshape(-1, 3), x:size(0) * 2
  end
  local m = M()
  scenarios[#scenarios + 1] = {name = "dynamic shapes, custom op, cond", m = m, path = function()
    local ep = torch.export.export(m, {torch.ones(4, 3)}, {dynamic_shapes = {{[0] = Dim.AUTO}}})
    local r = fxdb.run(ep, {torch.ones(6, 3)})
    local gm = ep:module()
    return {r.outputs[1], (gm(torch.ones(5, 3)))}
  end}
end

-- ---- the sweep -------------------------------------------------------------------------------------

local function hooks()
  return {stack = nn._module_stack, paths = nn._paths, hook = nn._on_setattr, tracer = E.active_tracer,
          strict = E.active_strict}
end

local function hooks_diff(want)
  local now = hooks()
  for k, v in pairs(want) do
    if not rawequal(now[k], v) then return "export's hook " .. k .. " was left set" end
  end
  for k in pairs(now) do
    if want[k] == nil then return "export's hook " .. k .. " was left set" end
  end
  return nil
end

local total = 0
for _, sc in ipairs(scenarios) do
  T.test("Lua out of memory at every point of: " .. sc.name, function()
    local want = sc.path() -- warms every cache first
    if sc.after then sc.after() end
    local state0, hooks0 = state_of(sc.m), hooks()
    local points, problems, n = 0, {}, 1
    local t0 = os.clock()
    while true do
      local before = live()
      torch._fail_lua_alloc_at(n)
      local ok, err = pcall(sc.path)
      local failed = torch._fail_lua_alloc_at(0)
      if sc.after then sc.after() end
      if ok and not failed then
        for i, v in ipairs(want) do
          T.eq(fxdb._max_abs_diff(err[i], v), 0, sc.name .. ": result " .. i .. " after the sweep")
        end
        break
      end
      points = points + 1
      local where = "allocation " .. n .. ": "
      local function problem(text) problems[#problems + 1] = where .. text end
      if ok then
        problem("an allocation failed but the path succeeded (an error was swallowed)")
      elseif not (err == "not enough memory" or (type(err) == "table" and err.kind == "out_of_memory")) then
        problem("expected a memory error, got " .. tostring(type(err) == "table" and err.kind or "") ..
                ": " .. tostring(err))
      end
      err = nil
      local d = state_diff(sc.m, state0) or hooks_diff(hooks0)
      if d then problem(d) end
      local after = live()
      if after ~= before then problem((after - before) .. " core blocks leaked") end
      local ok2, again = pcall(sc.path)
      if sc.after then sc.after() end
      if not ok2 then problem("the next attempt failed: " .. tostring(again)) end
      again = nil
      if #problems >= 10 then break end
      n = n + STRIDE
    end
    T.eq(table.concat(problems, "\n"), "")
    T.truthy(points > 100, points .. " allocation points")
    total = total + points
    print(string.format("  %s: %d Lua allocation points, each failed cleanly (%.1f s)", sc.name, points,
                        os.clock() - t0))
  end)
end

T.done()
