-- tests/peer/test_tensor_setattr.lua — ExportDB tensor_setattr (python.builtin).
-- Layer: tests. setattr(x, attr, torch.randn(3, 2)) sets a Python attribute on a tensor input.
-- A Lua tensor is a userdata without attribute storage: `x[attr] = v` with a string key is
-- PyTorch's own AttributeError text for read-only attributes, raised at the line in eager mode
-- and in both export modes. The Lua idiom for per-tensor attributes, a weak-keyed side table,
-- exports as the case does: the dead randn stays (random ops are impure, as in 2.10; 2.4 had
-- none), and the string argument is specialized, so it is no input spec (2.4: a ConstantArgument
-- input; 2.10: `attr: USER_INPUT`).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local TensorSetattr = nn.Module:extend("TensorSetattr")
function TensorSetattr:forward(x, attr)
  x[attr] = torch.randn(3, 2) -- line 14
  return x + 4
end

local attributes = setmetatable({}, {__mode = "k"})
local function setattr(obj, name, value)
  attributes[obj] = attributes[obj] or {}
  attributes[obj][name] = value
end

local TensorSetattrSideTable = nn.Module:extend("TensorSetattr")
function TensorSetattrSideTable:forward(x, attr)
  setattr(x, attr, torch.randn(3, 2))
  return x + 4
end

local x = torch.tensor({{1, 2}, {3, 4}, {5, 6}}, torch.float32)

T.test("tensor_setattr: a tensor takes no attributes (eager)", function()
  local e = T.checkerr("attribute 'attr' of 'Tensor' objects is not writable", TensorSetattr(), x, "attr")
  T.truthy(e.location:find("test_tensor_setattr.lua:14", 1, true), e.location)
end)

P.modes(function(strict, mode)
  T.test("tensor_setattr: a tensor takes no attributes, " .. mode, function()
    local e = T.checkerr("attribute 'attr' of 'Tensor' objects is not writable",
      torch.export.export, TensorSetattr(), {x, "attr"}, {strict = strict})
    T.truthy(e.location:find("test_tensor_setattr.lua:14", 1, true), e.location)
  end)
  local m = TensorSetattrSideTable()
  local ep = torch.export.export(m, {x, "attr"}, {strict = strict})
  T.test("tensor_setattr with a side table: graph and signature, " .. mode, function()
    P.program(ep, "placeholder:x randn=aten.randn.default add=aten.add.Tensor output:output",
      "x: USER_INPUT", "add: USER_OUTPUT")
    T.truthy(tostring(ep.graph):find("add.Tensor](args = (%x, 4)", 1, true))
    T.truthy(tostring(ep.graph):find("randn.default](args = ([3, 2],)", 1, true))
  end)
  T.test("tensor_setattr with a side table: numbers, " .. mode, function()
    local c = fxdb.check(m, ep, {x, "attr"})
    T.truthy(c.ok, tostring(c))
    T.eq(c.max_abs_error, 0)
    P.values(fxdb.run(ep, {x, "attr"}).outputs[1], {3, 2}, {5, 6, 7, 8, 9, 10})
    -- the unlifted module takes the exported call's arguments, the string included
    P.values(ep:module()(x, "attr"), {3, 2}, {5, 6, 7, 8, 9, 10})
    P.numbers(m, ep, {x, "attr"})
  end)
end)

P.done()
