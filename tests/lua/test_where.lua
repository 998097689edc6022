-- tests/lua/test_where.lua — the Lua locations recorded on every traced node (lua/lx_aux.c's
-- lx_where) come from a call-site cache that reads Lua's CallInfo; these tests compare its frames
-- with the slow path's (lua_getinfo at every level) through fxdb._where_paths, on every kind of
-- call stack a model can make: nested and tail calls, module calls (the call site nn.lua saves
-- for a tail-called module), metamethods, pcall, coroutines, chunks from load() with string and
-- "=name" sources, recursion deeper than the 16 frames kept, hooks and finalizers (named "?" and
-- "__gc" by Lua), and chunks collected and loaded again between calls (the cache is keyed by
-- instruction addresses, which a collected function's successor may reuse). Layer: tests.
local T = dofile("tests/lua/harness.lua")

local fast_known = select(1, fxdb._where_paths()) ~= nil

-- the frames both paths give here; fails when they differ
local function both(what)
  local fast, slow = fxdb._where_paths()
  if fast_known then T.eq(fast, slow, what) end
  return slow
end

T.test("the fast path is available with this Lua", function()
  T.truthy(fast_known, "fxdb._where_paths gives the fast path's frames")
end)

T.test("functions freed by a minor collection (generational mode) and new ones loaded", function()
  -- fxdb runs Lua's generational collector: a minor collection frees young functions but never
  -- an old object, so the sentinel that shows a collection must be new each time (with aged
  -- spare sentinels this loop gave stale frames in ~half its rounds; it runs first, before the
  -- other tests' full collections change the heap's ages)
  if not fast_known then return end
  local mode = collectgarbage("generational")
  local stale = 0
  for round = 1, 1000 do
    local pad = string.rep("\n", round % 7)
    local src = "local paths = ...\n" .. pad .. "local function g" .. round .. "()\n" ..
                "  local fast, slow = paths()\n  return fast, slow\nend\nreturn g" .. round .. "()\n"
    local fast, slow = load(src)(fxdb._where_paths)
    if fast ~= slow then stale = stale + 1 end
    local junk = {}
    for i = 1, 200 do junk[i] = {i} end -- young garbage: minor collections, no full one
  end
  collectgarbage(mode)
  T.eq(stale, 0, "rounds whose cached frames differ from lua_getinfo's")
end)

T.test("nested calls, tail calls, the main chunk", function()
  local function inner() local s = both("inner"); return s end
  local function middle() local s = inner(); return s end
  local function tail() return inner() end
  local s = middle()
  T.truthy(s:find("test_where.lua:%d+ inner | local function inner%(%) local s = both"), s)
  T.truthy(s:find(" middle | local function middle"), s)
  s = tail() -- inner was tail-called: Lua has no name for it
  T.truthy(s:find(" %? | local function inner%(%)"), s)
  T.falsy(s:find(" tail | "), s)
  for _ = 1, 3 do both("the same line again") end
  local fast, slow = load("local a, b = fxdb._where_paths()\nreturn a, b", "=chunk")()
  if fast_known then T.eq(fast, slow, "a =name chunk") end
  T.truthy(slow:find("^chunk:1 <module> | \n"), slow)
end)

T.test("module calls, tail-called modules and their call sites", function()
  local Leaf = nn.Module:extend("Leaf")
  function Leaf:forward(x) both("leaf"); return x + 1 end
  local Mid = nn.Module:extend("Mid")
  function Mid:init() self.leaf = Leaf() end
  function Mid:forward(x) return self.leaf(x) end -- a tail call: nn.lua keeps the site
  local Top = nn.Module:extend("Top")
  function Top:init() self.mid = Mid(); self.leaf = Leaf() end
  function Top:forward(x)
    local y = self.mid(x)
    return self.leaf(y) * 2
  end
  local m = Top()
  m(torch.ones(2))
  local ep = torch.export.export(m, {torch.ones(2)})
  T.truthy(#ep.graph.nodes > 3, "exported")
end)

T.test("metamethods, pcall, coroutines, string chunks", function()
  local mt = {__add = function(a, b) both("__add"); return a end,
              __index = function(t, k) both("__index"); return k end}
  local v = setmetatable({}, mt)
  local _ = v + 1
  _ = v.field
  T.truthy(pcall(both, "pcall"))
  local co = coroutine.wrap(function(a) both("coroutine"); coroutine.yield(a); both("resumed") end)
  co(1)
  co()
  local f = load("local both = ...\nlocal function g()\n  return both('loaded')\nend\nreturn g()\n",
                 "a chunk from a string")
  f(both)
end)

T.test("recursion deeper than the frames kept", function()
  local function rec(n) if n == 0 then return both("deep") end; local s = rec(n - 1); return s end
  local s = rec(40)
  local _, lines = s:gsub("\n", "")
  T.eq(lines, 16, "frames kept")
end)

T.test("a hook and a finalizer", function()
  local seen = {}
  local function hook() seen[#seen + 1] = both("hook") end
  debug.sethook(hook, "", 1)
  local x = 0
  for i = 1, 3 do x = x + i end
  debug.sethook()
  T.truthy(#seen > 0, "the hook ran")
  T.truthy(seen[1]:find(" %? | local function hook"), seen[1])
  local fin
  setmetatable({}, {__gc = function() fin = both("finalizer") end})
  collectgarbage()
  collectgarbage()
  T.truthy(fin and fin:find(" __gc | setmetatable"), fin)
end)

T.test("functions collected and new ones loaded between calls", function()
  for round = 1, 30 do
    -- a different line layout each round: a stale site would give the wrong line or code
    local pad = string.rep("\n", round % 7)
    local src = "local both, r = ...\n" .. pad .. "local function g" .. round .. "()\n" ..
                "  return (both('round ' .. r))\nend\nlocal s = g" .. round .. "()\nreturn s\n"
    local s = load(src)(both, round)
    T.truthy(s:find(":" .. (3 + round % 7) .. " g" .. round .. " | return %(both%('round"), s)
    collectgarbage()
  end
end)

T.done()
