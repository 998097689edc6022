-- tests/lua/test_errors.lua — how errors reach Lua: fxdb error objects (kind, message, location,
-- source, module, hint, tostring), lauxlib-style argument errors, PyTorch's messages for binding
-- mistakes, locations that skip fxdb's embedded library, data-dependent errors while tracing.
local T = dofile("tests/lua/harness.lua")
local checkerr = dofile("tests/lua/checkerr.lua")
local FILE = "tests/lua/test_errors.lua"

local function catch(f, ...)
  local ok, e = pcall(f, ...)
  T.falsy(ok, "expected an error")
  return e
end

T.test("op failures raise error objects with PyTorch's message and the Lua location", function()
  local line = debug.getinfo(1, "l").currentline + 2
  local e = catch(function()
    return torch.ones(2, 3) + torch.ones(4)          -- the failing line
  end)
  T.eq(type(e), "table")
  T.eq(tostring(e), "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1")
  T.eq(e.message, tostring(e))
  T.eq(e.kind, "shape")
  T.eq(e.code, "FX_ESHAPE")
  T.eq(e.location, FILE .. ":" .. line)
  T.eq(e.source, "return torch.ones(2, 3) + torch.ones(4)          -- the failing line")
  T.eq(getmetatable(e), debug.getregistry()["fxdb.Error"])
end)

T.test("checkerr matches on tostring of error objects", function()
  checkerr("must match the size of tensor b", function() return torch.ones(2) * torch.ones(3) end)
  T.checkerr("expected m1 and m2 to have the same dtype, but got: float != double", function()
    return torch.ones(2, 2):mm(torch.ones(2, 2, torch.float64))
  end)
end)

T.test("errors inside a module's forward carry the module and the user's line", function()
  local Bad = nn.Module:extend("Bad")
  function Bad:init() self.lin = nn.Linear(4, 2) end
  local line = debug.getinfo(1, "l").currentline + 2
  function Bad:forward(x)
    return self.lin(x)                               -- a tail call: its frame is gone
  end
  local Outer = nn.Module:extend("Outer")
  function Outer:init() self.bad = Bad() end
  function Outer:forward(x) return self.bad(x) end
  local m = Outer()
  nn._paths = {}
  for _, p in ipairs(m:named_modules()) do nn._paths[p[2]] = p[1] end
  local e = catch(m, torch.ones(3, 5))
  nn._paths = nil
  T.truthy(tostring(e):find("cannot be multiplied", 1, true), tostring(e))
  -- nn.Linear's own forward is fxdb's embedded code: the location is the user's call of it
  T.eq(e.location, FILE .. ":" .. line)
  T.eq(e.module, "bad.lin")
  T.eq(e.module_class, "Linear")
  T.eq(#nn._module_stack, 0)
  local e2 = catch(m, torch.ones(3, 5))             -- eager, no export paths: the same path
  T.eq(e2.module, "bad.lin")
  T.eq(e2.location, FILE .. ":" .. line)
end)

T.test("argument mistakes read like every Lua library", function()
  local x = torch.ones(2)
  T.checkerr("bad argument #1 to 'add' (Tensor expected, got string)", function() return x:add("a") end)
  T.checkerr("bad argument #2 to 'add' (Tensor expected, got table)", function() return torch.add(x, {}) end)
  T.checkerr("bad argument #1 to 'view' (list of integers expected, got string)", function() return x:view("a") end)
  T.checkerr("bad argument #2 to 'add.Tensor' (Tensor expected, got table)", function()
    return torch.ops.aten.add.Tensor(x, {}, {alpha = 1})
  end)
  T.checkerr("Tensor expected, got no value", function() return torch.ones(2).size() end)
  local line = debug.getinfo(1, "l").currentline + 1
  local e = catch(function() return x:add("a") end)
  T.eq(type(e), "table")                           -- an fxdb error object (issue 13)
  T.eq(e.kind, "argument")
  T.eq(e.location, FILE .. ":" .. line)            -- located at the caller
  T.eq(tostring(e), "bad argument #1 to 'add' (Tensor expected, got string)")
end)

T.test("binding errors use PyTorch's sentences", function()
  local x = torch.ones(2)
  T.checkerr('add() missing 1 required positional argument: "other"', function() return x:add() end)
  T.checkerr("zeros() got an unexpected keyword argument 'foo'", function() return torch.zeros(2, {foo = 1}) end)
  T.checkerr("select() takes 3 positional arguments but 4 were given", function() return x:select(0, 0, 0) end)
  T.checkerr("sum() received an invalid combination of arguments - got (Tensor, string), but expected one of:\n" ..
             " * (Tensor self, *, ScalarType? dtype=None)\n" ..
             " * (Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)",
             function() return x:sum("a") end)
end)

T.test("ops fxdb does not have yet say so, with kind not_implemented", function()
  if torch._has_op("remainder.Tensor") then return end
  local e = catch(function() return torch.ones(2) % 2 end)
  T.eq(e.kind, "not_implemented")
  T.truthy(tostring(e):find("remainder is not yet supported", 1, true), tostring(e))
end)

T.test("item() on a traced meta tensor is a data-dependent error naming the line", function()
  local D = nn.Module:extend("D")
  local line = debug.getinfo(1, "l").currentline + 2
  function D:forward(x)
    if x:sum():item() > 0 then return x end
    return -x
  end
  local e = catch(torch.export.export, D(), {torch.ones(2)})
  T.eq(e.kind, "data_dependent")
  T.truthy(tostring(e):find("Could not extract specialized integer from data-dependent expression", 1, true),
           tostring(e))
  T.truthy(tostring(e):find("item()", 1, true))
  T.truthy(e.hint:find("torch.cond", 1, true), e.hint)
  T.eq(e.location, FILE .. ":" .. line)
  T.checkerr("data-dependent", function()
    local M2 = nn.Module:extend("M2")
    function M2:forward(x) return x:tolist() end
    return torch.export.export(M2(), {torch.ones(2)})
  end)
end)

T.test("interrupt hook: fxlua_interrupt's message reaches Lua", function()
  -- the REPL's SIGINT path is tested by the pty test; here only that an error raised from a
  -- debug hook unwinds a running loop as a plain string
  local co = coroutine.create(function()
    debug.sethook(function() debug.sethook(); error("interrupted!", 0) end, "", 100)
    while true do end
  end)
  local ok, e = coroutine.resume(co)
  T.falsy(ok)
  T.eq(e, "interrupted!")
end)

T.test("torch.tensor and indexing errors are fxdb errors or lauxlib errors, never crashes", function()
  T.checkerr("expected sequence of length 1 at dim 1 (got 2)", torch.tensor, {{1}, {2, 3}})
  T.checkerr("only integers, slices", function() return torch.ones(2)[0.5] end)
  T.eq(tostring(torch.ones(2)[{torch.tensor({}, torch.int64)}].shape), "torch.Size([0])")
  T.checkerr("a table inside an index is the slice {start, stop[, step]} (2 or 3 items, got 0)",
             function() return torch.ones(2)[{{}}] end)
  T.checkerr("too many indices for tensor of dimension 1", function() return torch.ones(2)[{0, 0}] end)
  T.checkerr("can't allocate memory", function() return torch.empty(1 << 40, 1 << 20) end)
end)

T.done()
