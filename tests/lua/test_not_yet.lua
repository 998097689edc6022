-- tests/lua/test_not_yet.lua — a PyTorch name fxdb lacks fails with fxdb's clear "not yet
-- supported" error naming it, at the user's line, never Lua's "attempt to call a nil value".
-- Layer: tests. Covers the general fallback of lua/not_yet.lua: tensor methods, torch.*,
-- nn.functional.* and nn.<Module> classes, eagerly and inside an export.
local T = dofile("tests/lua/harness.lua")

local function fails_clearly(what, f)
  local ok, e = pcall(f)
  T.falsy(ok, what .. " should fail")
  T.eq(type(e), "table", what .. ": an fxdb error object")
  T.eq(e.kind, "not_implemented", what)
  T.truthy(tostring(e.message):find(" is not yet supported by fxdb", 1, true), e.message)
  T.falsy(tostring(e):find("nil value", 1, true), tostring(e))
  T.truthy(tostring(e.location):find("test_not_yet.lua:", 1, true), tostring(e.location))
  return e
end

local missing = {}
for _, name in ipairs{"topk", "roll", "flip", "einsum", "sort", "argsort", "cumprod", "square",
                      "sign", "floor", "ceil", "round", "trunc", "erf", "expm1", "lerp", "unfold",
                      "type_as", "repeat_interleave"} do
  -- an op counts as present under any overload (lerp has only .Scalar / .Tensor)
  if not (torch._has_op(name) or torch._has_op(name .. ".Scalar") or
          torch._has_op(name .. ".self_int")) then
    missing[#missing + 1] = name
  end
end

T.test("tensor methods fxdb lacks", function()
  local x = torch.ones(2, 3)
  for _, name in ipairs(missing) do
    if name == "einsum" then goto continue end -- torch.einsum only, as in PyTorch
    local e = fails_clearly("x:" .. name, function() return x[name](x, 1) end)
    T.truthy(e.message:find(name, 1, true), e.message)
    ::continue::
  end
end)

T.test("torch.* and nn.functional.* functions fxdb lacks", function()
  for _, name in ipairs(missing) do
    if name ~= "unfold" and name ~= "type_as" then
      fails_clearly("torch." .. name, function() return torch[name](torch.ones(2), 1) end)
    end
  end
  if not torch._has_op("conv2d") then
    fails_clearly("F.conv2d", function() return nn.functional.conv2d(torch.ones(1, 1, 3, 3)) end)
  end
end)

T.test("nn modules fxdb lacks: construction and subclassing", function()
  for _, name in ipairs{"Conv2d", "BatchNorm1d", "GroupNorm", "LSTM", "MultiheadAttention"} do
    if rawget(nn, name) == nil then
      local e = fails_clearly("nn." .. name, function() return nn[name](1, 2) end)
      T.truthy(e.message:find("nn." .. name, 1, true), e.message)
      fails_clearly("nn." .. name .. ":extend", function() return nn[name]:extend("Mine") end)
    end
  end
end)

T.test("names PyTorch does not have stay nil (probing and typos behave as in Lua)", function()
  T.eq(torch.no_such_function, nil)
  T.eq(torch.zeros(1).no_such_method, nil)
  T.eq(nn.NoSuchModule, nil)
  T.truthy(torch.add ~= nil and torch.zeros(1).add ~= nil and nn.Linear ~= nil, "real names")
end)

T.test("inside an export: the error names the op and the forward's line", function()
  local M = nn.Module:extend("M")
  function M:forward(x) local y = x:rot90(); return y end
  if torch._has_op("rot90") then return end
  for _, strict in ipairs{true, false} do
    local ok, e = pcall(torch.export.export, M(), {torch.ones(3)}, {strict = strict})
    T.falsy(ok)
    T.eq(e.kind, "not_implemented")
    T.truthy(e.message:find("rot90 is not yet supported by fxdb", 1, true), e.message)
    local line = debug.getinfo(M.forward, "S").linedefined
    T.truthy(e.location:find("test_not_yet.lua:" .. line, 1, true), e.location)
  end
end)

T.done()
