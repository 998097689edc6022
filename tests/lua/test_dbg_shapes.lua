-- tests/lua/test_dbg_shapes.lua — the debugger's Lua API on symbolic shapes (issue 9):
-- fxdb.guards (ShapeEnv.guards with the op and the Lua line), fxdb.symbol (where a symbol came
-- from, what narrowed or replaced it), fxdb.why, and `guard` breakpoints of a trace session.
-- The transcript tests/golden/dbg_guards shows the same as a person sees it.
local T = dofile("tests/lua/harness.lua")
local Dim = torch.export.Dim
local SRC = "tests/lua/test_dbg_shapes.lua"

local M = nn.Module:extend("M")
function M:forward(x, y)
  local n = x:size(0)
  local h = x + y                -- line 12: Eq(s0, s1)
  if n > 4 then                  -- line 13: s0 > 4
    h = h * 2
  end
  return h:view(n, 2, -1)
end
local m = M()
local args = {torch.randn(6, 4), torch.randn(6, 4)}
local spec = {x = {[0] = Dim.AUTO}, y = {[0] = Dim.AUTO}}

T.test("fxdb.guards: expression, op, Lua line and what each taught", function()
  local ep = torch.export.export(m, args, {dynamic_shapes = spec})
  local g = fxdb.guards(ep)
  T.eq(#g, 2)
  T.eq(g[1].expr, "Eq(s0, s1)")
  T.eq(g[1].op, "aten.add.Tensor")
  T.eq(g[1].location, SRC .. ":12")
  T.truthy(g[1].source:find("local h = x + y", 1, true), g[1].source)
  T.eq(g[1].taught[1], "s1 replaced by s0")
  T.eq(g[1].symbols[2], "s1 = input y, dim 0")
  T.eq(g[2].expr, "s0 > 4")          -- `n > 4` reads as torch prints it, not `4 < s0`
  T.eq(g[2].op, "")                  -- a comparison in the model's own code
  T.eq(g[2].location, SRC .. ":13")
  T.eq(g[2].taught[1], "s0 narrowed from VR[2, int_oo] to VR[5, int_oo]")
  T.eq(#g.asserts, 0)
  local text = tostring(g)
  T.truthy(text:find("2 guards (ShapeEnv.guards), oldest first:", 1, true), text)
  T.truthy(text:find("s0 > 4%s+%(Lua code%)%s+" .. SRC:gsub("%p", "%%%0") .. ":13"), text)
  -- the range constraint agrees with what the guard taught
  T.eq(tostring(ep.range_constraints), "{s0: VR[5, int_oo]}")
end)

T.test("fxdb.symbol / fxdb.why: source, ranges, history", function()
  local ep = torch.export.export(m, args, {dynamic_shapes = spec})
  local s0 = fxdb.symbol("s0", ep)
  T.eq(s0.source, "L['x'].size()[0]")
  T.eq(s0.hint, 6)
  T.eq(s0.range[1], 5)
  T.eq(s0.range[2], math.huge)
  T.eq(#s0.history, 1)
  T.eq(s0.history[1].guard.index, 2)
  T.eq(#s0.other_guards, 1)        -- Eq(s0, s1) names s0 but changed s1
  local s1 = fxdb.symbol("s1", ep)
  T.eq(s1.replacement, "s0")
  T.eq(s1.history[1].what, "replaced by s0")
  T.truthy(tostring(s1):find("now: s1 = s0", 1, true), tostring(s1))
  T.eq(tostring(fxdb.why("s1", ep)), tostring(s1))
  T.checkerr("no symbol 's7' (symbols: s0, s1)", fxdb.symbol, "s7", ep)
  -- a static program: no guards, no symbols
  local st = torch.export.export(m, args)
  T.eq(#fxdb.guards(st), 0)
  T.truthy(tostring(fxdb.guards(st)):find("no symbolic sizes", 1, true))
  T.checkerr("no symbol 's0' (no symbolic sizes", fxdb.symbol, "s0", st)
end)

T.test("a trace session stops at guards; guards so far; module state untouched", function()
  fxdb.delete()
  local b = fxdb.break_on("guard s1")
  T.eq(tostring(b), "breakpoint " .. b.id .. ": guard s1")
  local s = fxdb.trace(m, args, {dynamic_shapes = spec})
  local st = fxdb.continue()
  T.eq(st.reason, "guard")
  T.eq(st.guard.expr, "Eq(s0, s1)")
  T.truthy(tostring(st):find("stopped at guard 1: Eq(s0, s1)  [breakpoint " .. b.id ..
    ": guard s1]", 1, true), tostring(st))
  T.eq(#fxdb.guards(), 1)            -- the session's guards so far
  T.eq(fxdb.symbol("s1").replacement, "s0")
  st = fxdb.continue()               -- s0 > 4 does not name s1: on to the end
  T.eq(st.reason, "done")
  T.eq(#fxdb.guards(), 2)
  fxdb.delete()
  -- every guard, with a condition on its text
  fxdb.break_on("guard if expr:find('>')")
  fxdb.trace(m, args, {dynamic_shapes = spec})
  st = fxdb.continue()
  T.eq(st.guard.expr, "s0 > 4")
  fxdb.kill()
  fxdb.delete()
  T.checkerr("bad guard breakpoint 'x'", fxdb.break_on, "guard x")
  T.eq(s.status, "finished")
end)

local C = nn.Module:extend("C")
function C:forward(x, t)
  local a = t:item()
  torch._check(a >= 0)           -- line 97: runtime assert u0 >= 0
  torch._check(a <= x:size(0))   -- line 98: u0 <= s0, over two symbols
  return torch.zeros({a}) + 1
end

T.test("`guard` breakpoints stop at torch._check's runtime asserts too", function()
  fxdb.delete()
  local b = fxdb.break_on("guard")
  fxdb.trace(C(), {torch.randn(6, 2), torch.tensor(3)},
             {dynamic_shapes = {x = {[0] = Dim("n")}, t = nil}})
  local st = fxdb.continue()
  T.eq(st.reason, "guard")
  T.eq(st.guard.expr, "u0 >= 0")
  T.truthy(tostring(st):find("stopped at runtime assert 1 (torch._check): u0 >= 0  [breakpoint " ..
    b.id .. ": guard]", 1, true), tostring(st))
  T.truthy(tostring(st):find(SRC .. ":97   torch._check(a >= 0)", 1, true), tostring(st))
  st = fxdb.continue()
  T.eq(st.reason, "guard")
  T.eq(st.guard.expr, "u0 <= s0")
  T.truthy(tostring(st):find("stopped at runtime assert 2 (torch._check): u0 <= s0", 1, true),
           tostring(st))
  -- a breakpoint on a symbol: only the asserts that mention it
  fxdb.kill()
  fxdb.delete()
  fxdb.break_on("guard s0")
  fxdb.trace(C(), {torch.randn(6, 2), torch.tensor(3)},
             {dynamic_shapes = {x = {[0] = Dim("n")}, t = nil}})
  st = fxdb.continue()
  T.eq(st.guard.expr, "u0 <= s0")
  st = fxdb.continue()
  T.eq(st.reason, "done")
  fxdb.delete()
end)

T.done()
