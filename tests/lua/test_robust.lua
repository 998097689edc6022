-- tests/lua/test_robust.lua — issue 13's crashes and silent wrong results, each kept out by a
-- test: what a user types gets a clear fxdb error (kind, message, the user's line), never a crash
-- or a quietly wrong answer. Layer: tests.
local T = dofile("tests/lua/harness.lua")

-- The error object of f(...) (which must fail), with its kind checked.
local function err_of(kind, f, ...)
  local ok, e = pcall(f, ...)
  T.falsy(ok, "expected an error of kind " .. kind)
  T.eq(type(e), "table", "an fxdb error object: " .. tostring(e))
  T.eq(e.kind, kind, tostring(e))
  return e
end

local function module(init, forward)
  local M = nn.Module:extend("M")
  M.init, M.forward = init, forward
  return M
end

-- ---- crash 1: fxdb.run / fxdb.check / ep:module() with the wrong inputs -------------------------

local Two = module(function(self) self:register_buffer("b", torch.zeros(3)) end,
                   function(self, x, y) return x + y + self.b end)
local ep = torch.export.export(Two(), {torch.ones(3), torch.ones(3)})

T.test("fxdb.run with too few or wrong-typed inputs is an error, again and again", function()
  for _ = 1, 50 do -- the old code wrote past its input array: the heap broke a few calls later
    local e = err_of("argument", fxdb.run, ep, {torch.ones(3)})
    T.truthy(tostring(e):find("takes 2 tensor inputs but 1 was given", 1, true), tostring(e))
    err_of("argument", fxdb.run, ep, {torch.ones(3), 5})
    err_of("argument", fxdb.run, ep, {torch.ones(3), "s"})
    err_of("argument", fxdb.run, ep, {})
    err_of("argument", fxdb.run, ep, {torch.ones(3), torch.ones(3), torch.ones(3)})
  end
  collectgarbage()
  local r = fxdb.run(ep, {torch.ones(3), torch.ones(3)})
  T.eq(r.outputs[1]:sum():item(), 6)
end)

T.test("fxdb.run checks each input's shape and dtype", function()
  local e = err_of("argument", fxdb.run, ep, {torch.ones(3), torch.ones(4)})
  T.truthy(tostring(e):find("shape[0] (y) to be equal to 3, but got 4", 1, true), tostring(e))
  e = err_of("argument", fxdb.run, ep, {torch.ones(3), torch.ones(3, torch.int64)})
  T.truthy(tostring(e):find("to have dtype float32, but got int64", 1, true), tostring(e))
  err_of("argument", fxdb.run, ep, {torch.ones(3), torch.ones(1, 3)})
end)

T.test("fxdb.check and the unlifted module with the wrong inputs", function()
  local m = Two()
  err_of("argument", fxdb.check, m, ep, {torch.ones(3)})
  local gm = ep:module()
  for _ = 1, 20 do
    err_of("argument", gm, torch.ones(3))
    err_of("argument", gm, torch.ones(3), torch.ones(4))
    err_of("argument", gm, torch.ones(3), torch.ones(3, torch.float64))
  end
  T.eq(gm(torch.ones(3), torch.ones(3)):sum():item(), 6)
  local it = fxdb._interp(ep, {torch.ones(3), torch.ones(3)})
  T.truthy(it)
  err_of("argument", fxdb._interp, ep, {torch.ones(3)})
end)

-- ---- crash 2 and its wrong results: a buffer reassigned to another shape or dtype ---------------

local reassign = {
  {"shrinks", {64}, torch.float32, function(self, x) self.b = x * 2; return x + 1 end, {3}},
  {"grows", {2}, torch.float32, function(self, x) self.b = x * 2; return x + 1 end, {5}},
  {"grows by broadcasting", {3}, torch.float32, function(self, x) self.b = self.b + x; return x + 1 end, {2, 3}},
  {"is transposed", {2, 3}, torch.float32, function(self, x) self.b = self.b:t(); return x + 1 end, {3}},
  {"changes dtype", {3}, torch.float32, function(self, x) self.b = self.b:to(torch.int64); return x + 1 end, {3}},
  {"becomes float64", {3}, torch.float32, function(self, x) self.b = x:double(); return x end, {3}},
}

for _, case in ipairs(reassign) do
  local name, bshape, bdt, fwd, xshape = table.unpack(case)
  for _, strict in ipairs({true, false}) do
    T.test("export refuses a buffer that " .. name .. (strict and " (strict)" or " (non-strict)"), function()
      local M = module(function(self) self:register_buffer("b", torch.zeros(bshape, bdt)) end, fwd)
      local m = M()
      local before = m.b:clone()
      local e = err_of("buffer_metadata_mutation", torch.export.export, m, {torch.ones(xshape)},
                       {strict = strict})
      T.truthy(tostring(e):find("Buffer 'b' was assigned a tensor of another shape or dtype", 1, true),
               tostring(e))
      T.truthy(e.location and e.location:find("test_robust.lua", 1, true), e.location)
      -- the module is as it was
      T.eq(m.b.dtype, bdt)
      T.eq(fxdb._max_abs_diff(m.b, before), 0)
    end)
  end
end

T.test("a buffer reassigned with its own shape and dtype still exports, runs and unlifts", function()
  local M = module(function(self) self:register_buffer("b", torch.zeros(3)) end,
                   function(self, x) self.b = x * 2; return x + 1 end)
  local ep2 = torch.export.export(M(), {torch.ones(3)})
  local r = fxdb.run(ep2, {torch.full({3}, 2.0)})
  T.eq(r.mutations.b:sum():item(), 12)
  local gm = ep2:module()
  gm(torch.full({3}, 3.0))
  T.eq(gm.b:sum():item(), 18)
end)

T.done()
