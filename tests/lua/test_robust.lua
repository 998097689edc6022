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

-- ---- silent wrong results: inputs sharing storage when one is mutated ---------------------------

local aliasing = {
  {"two buffers viewing one base", "'a' is mutated and shares storage with 'b'",
   function(self) local base = torch.zeros(4); self:register_buffer("a", base)
     self:register_buffer("b", base[{"1:"}]) end,
   function(self, x) self.a:add_(10); return self.b * 1 + x end,
   function(m) return {torch.ones(3)} end},
  {"a user input that is a view of a mutated buffer", "'b' is mutated and shares storage with input 'x'",
   function(self) self:register_buffer("b", torch.zeros(4)) end,
   function(self, x) self.b:add_(10); return x * 1 end,
   function(m) return {m.b[{"1:"}]} end},
  {"a mutated user input that is a view of a buffer", "input 'x' is mutated and shares storage with 'b'",
   function(self) self:register_buffer("b", torch.zeros(4)) end,
   function(self, x) x:add_(1); return self.b * 1 end,
   function(m) return {m.b[{"1:"}]} end},
  {"a user input that is the mutated buffer itself", "'b' is mutated and shares storage with input 'x'",
   function(self) self:register_buffer("b", torch.zeros(4)) end,
   function(self, x) self.b:add_(1); return x * 1 end,
   function(m) return {m.b} end},
}

for _, case in ipairs(aliasing) do
  local name, msg, init, fwd, args = table.unpack(case)
  for _, strict in ipairs({true, false}) do
    T.test("export refuses " .. name .. (strict and " (strict)" or " (non-strict)"), function()
      local m = module(init, fwd)()
      local e = err_of("aliased_input_mutation", torch.export.export, m, args(m), {strict = strict})
      T.truthy(tostring(e):find(msg, 1, true), tostring(e))
      T.truthy(e.location and e.location:find("test_robust.lua", 1, true), e.location)
    end)
  end
end

T.test("aliasing that nothing mutates exports, and run and module agree with eager", function()
  local M = module(function(self) local base = torch.arange(4.0); self:register_buffer("a", base)
                     self:register_buffer("b", base[{"1:"}]) end,
                   function(self, x) return self.a:sum() + self.b * x end)
  local m = M()
  local x = m.b:clone()
  local ep3 = torch.export.export(m, {x})
  local want = m(x)
  T.eq(fxdb._max_abs_diff(fxdb.run(ep3, {x}).outputs[1], want), 0)
  T.eq(fxdb._max_abs_diff(ep3:module()(x), want), 0)
end)

-- ---- silent wrong results: narrow, overflowing sizes ----------------------------------------------

T.test("narrow checks like aten::narrow, with error kinds and the user's line", function()
  local line = debug.getinfo(1, "l").currentline + 1
  local e = err_of("argument", function() return torch.ones(3):narrow(0, 0, -1) end)
  T.eq(tostring(e), "narrow(): length must be non-negative.")
  T.eq(e.location, "tests/lua/test_robust.lua:" .. line)
  e = err_of("index", function() return torch.narrow(torch.ones(3), 0, 2, 2) end)
  T.eq(tostring(e), "start (2) + length (2) exceeds dimension size (3).")
  err_of("index", function() return torch.ones(3):narrow(0, 4, 0) end)
  err_of("index", function() return torch.ones(3):narrow(1, 0, 1) end)
  err_of("index", function() return torch.tensor(1.0):narrow(0, 0, 1) end)
  T.eq(torch.ones(3):narrow(0, -2, 2):numel(), 2)
  T.eq(torch.ones(3):narrow(0, 3, 0):numel(), 0)
  T.eq(tostring(torch.ones(2, 3):flatten().shape), "torch.Size([6])")
end)

T.test("sizes whose strides or element count overflow int64 are refused", function()
  local e = err_of("shape", function() return torch.zeros(0, 2^53 // 1, 2^53 // 1):sum() end)
  T.truthy(tostring(e):find("Storage size calculation overflowed with sizes=[0, 9007199254740992, 9007199254740992]", 1, true), tostring(e))
  err_of("shape", function() return torch.ones(4):expand(2^62 // 1, 4) end)
  err_of("shape", function() return torch.empty(2^32 // 1, 2^32 // 1, 0) end)
  err_of("out_of_memory", function() return torch.zeros(2^62 // 1) end)
  err_of("index", function() return torch.ones(4):as_strided({2}, {1}, math.maxinteger) end)
  T.eq(torch.zeros(0, 2^30 // 1, 2^30 // 1):sum():item(), 0)
end)

T.test("torch.zeros(2^63) says the size does not fit in int64", function()
  local e = err_of("argument", function() return torch.zeros(2^63) end)
  T.truthy(tostring(e):find("got number 9.2233720368547758e+18, which does not fit in int64", 1, true), tostring(e))
  e = err_of("argument", function() return torch.zeros(2.5) end)
  T.truthy(tostring(e):find("got number 2.5, not an integer", 1, true), tostring(e))
end)

T.test("a safetensors header with overflowing sizes is refused", function()
  local path = os.tmpname()
  local header = '{"t":{"dtype":"F32","shape":[0,9007199254740992,9007199254740992],"data_offsets":[0,0]}}'
  local f = assert(io.open(path, "wb"))
  f:write(string.pack("<I8", #header), header)
  f:close()
  local ok, e = pcall(torch.load_safetensors, path)
  os.remove(path)
  T.falsy(ok)
  T.eq(type(e), "table", tostring(e))
  T.truthy(tostring(e):find("overflow", 1, true), tostring(e))
end)

T.test(":watch of a name the module does not have is an error naming the closest", function()
  local M = module(function(self) self:register_buffer("state", torch.zeros(3)) end,
                   function(self, x) self.state:add_(x); return x * 1 end)
  local m = M()
  fxdb.export(m, {torch.ones(3)})
  local e = err_of("argument", fxdb.watch, "stat")
  T.truthy(tostring(e):find("no buffer or input named 'stat' to watch (did you mean 'state'?)", 1, true), tostring(e))
  err_of("argument", fxdb.watch, "nothere")
  local before = #fxdb.info("breaks")
  T.truthy(fxdb.watch("state"))
  T.truthy(fxdb.watch("b_state"))
  T.truthy(fxdb.watch("x"))
  T.truthy(#fxdb.info("breaks") > before)
  fxdb.delete()
end)

-- ---- empty tensors: the reinplace case of the random-program tester (seeds 70708, 72665) ------

T.test("a fresh result without elements has PyTorch's contiguous strides (a size 0 counts as 1)", function()
  local x = torch.zeros(3, 2, 4)
  T.eq(table.concat((x:narrow(2, 1, 0) * 2):stride(), ","), "2,1,1")
  T.eq(table.concat((x:slice(1, 1, 1) + x:slice(1, 1, 1)):stride(), ","), "4,4,1")
  T.eq(table.concat((x:narrow(2, 1, 0):transpose(0, 2) + 1):stride(), ","), "1,1,2")
end)

T.test("in-place ops on tensors without elements never see an internal overlap", function()
  local e = torch.zeros(2, 2, 3):slice(1, 1, 1):expand(2, 0, 3) -- strides (6, 3, 1), size 0
  e:add_(1) -- PyTorch accepts: nothing is written
  local z = torch.zeros(2, 1, 0):expand(2, 3, 0) -- a stride-0 dim of size 3, but no element
  z:mul_(2)
  T.eq(z:numel(), 0)
end)

T.test("a reinplaced program on empty views agrees with eager (was: internal overlap error)", function()
  local M = module(function(self) self:register_buffer("b1", torch.arange(12):reshape(2, 2, 3)) end,
                   function(self, x0)
                     local v3 = self.b1:slice(1, 1, 1, 1)
                     local v6 = (v3 + v3) + v3
                     v3:sub_(v6)
                     return x0 * 2, v6
                   end)
  local ep = torch.export.export(M(), {torch.ones(2)})
  local re = fxdb.reinplace(ep)
  if re.module then re = re:module() end
  local a, b = re(torch.ones(2))
  T.eq(a:tolist()[2], 2)
  T.eq(table.concat(b.shape, ","), "2,0,3")
  T.eq(re.b1:sum():item(), 66)
end)

-- ---- random-program tester, --dynamic seed 448 -----------------------------------------------------

T.test("an in-place op on a dynamic operand guards that the operand keeps self's shape", function()
  -- x:slice(1, -3, 1, 3) has ((-s0)//3) + 2 columns: 1 at s0 = 3, 0 at s0 = 4, where eager's add_
  -- refuses ("output with shape [4, 1] doesn't match the broadcast shape [4, 0]"); the program
  -- must refuse too, not write an empty broadcast into b
  local Dim = torch.export.Dim
  for _, write in ipairs{
    function(b, v) b:add_(v) end,
    function(b, v) b:copy_(v) end,
    function(b, v) b:masked_fill_(v:gt(0), 5) end,
    function(b, v) b:mul_(v) end,
  } do
    local M = module(function(self) self:register_buffer("b", torch.zeros(4, 1)) end,
                     function(self, x)
                       write(self.b, x:slice(1, -3, 1, 3))
                       return self.b + 0
                     end)
    local ep = torch.export.export(M(), {torch.ones(4, 3)}, {dynamic_shapes = {{[1] = Dim.AUTO}}})
    T.eq(fxdb._max_abs_diff(fxdb.run(ep, {torch.ones(4, 3)}).outputs[1], M()(torch.ones(4, 3))), 0)
    T.falsy(pcall(M(), torch.ones(4, 4)), "eager refuses at 4 columns")
    local e = err_of("argument", fxdb.run, ep, {torch.ones(4, 4)})
    T.truthy(tostring(e):find("Expected the input sizes to satisfy the guard", 1, true), tostring(e))
    local gm = ep:module()
    T.falsy(pcall(gm, torch.ones(4, 4)), "the unlifted module refuses at 4 columns")
    T.eq(gm.b:sum():item(), 0, "and leaves its buffer as it was")
  end
  -- addmm_ writes the product into self: its dims are guarded equal to self's
  local A = module(function(self) self:register_buffer("b", torch.zeros(2, 1)) end,
                   function(self, x, y)
                     self.b:addmm_(x, y:slice(1, -3, 1, 3))
                     return self.b + 0
                   end)
  local ep2 = torch.export.export(A(), {torch.ones(2, 3), torch.ones(3, 3)},
                                  {dynamic_shapes = {nil, {[1] = Dim.AUTO}}})
  T.falsy(pcall(A(), torch.ones(2, 3), torch.ones(3, 4)), "eager refuses at 4 columns")
  err_of("argument", fxdb.run, ep2, {torch.ones(2, 3), torch.ones(3, 4)})
end)

T.done()
