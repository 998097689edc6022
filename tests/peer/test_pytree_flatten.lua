-- tests/peer/test_pytree_flatten.lua — ExportDB pytree_flatten.
-- Layer: tests. forward flattens its (nested) table argument and adds 1 to the first leaf.
-- fxdb has no torch.utils._pytree: tree_flatten below is the Lua equivalent (lists in order,
-- other keys sorted). example_args = ({1: t, 2: t},) with PyTorch's stray comma is a 1-tuple
-- holding a 1-tuple of a dict: in Lua, {{ {t1, t2} }} (a list holding a dict keyed 1, 2).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local function tree_flatten(v, out)
  out = out or {}
  if type(v) == "table" and not torch.is_tensor(v) then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for _, k in ipairs(keys) do tree_flatten(v[k], out) end
  else
    out[#out + 1] = v
  end
  return out, "spec"
end

local PyTreeFlatten = nn.Module:extend("PyTreeFlatten")
function PyTreeFlatten:forward(x)
  local y, _spec = tree_flatten(x)
  return y[1] + 1
end

local t1 = torch.tensor({{1, 2}, {3, 4}, {5, 6}}, torch.float32)
local t2 = torch.tensor({{7, 8}, {9, 10}, {11, 12}}, torch.float32)
local x = {{t1, t2}}

T.test("pytree_flatten runs eagerly", function()
  P.values(PyTreeFlatten()(x), {3, 2}, {2, 3, 4, 5, 6, 7})
end)

P.modes(function(strict, mode)
  local m = PyTreeFlatten()
  T.test("pytree_flatten graph and signature, " .. mode, function()
      local ep = torch.export.export(m, {x}, {strict = strict})
      local ins = P.sig(ep)
      T.falsy(ins:find("CONSTANT_TENSOR", 1, true), ins)
      T.eq(#ep.graph_signature.input_specs, 2)
      -- PyTorch names them x_0_1, x_0_2 (the keys of the dict {1: ..., 2: ...}); in Lua that
      -- table is a list, so its items are numbered from 0
      T.eq(ins, "x_0_0: USER_INPUT\nx_0_1: USER_INPUT")
      local seq = {}
      for _, n in ipairs(ep.graph.nodes) do
        if n.op == "call_function" then seq[#seq + 1] = n.name .. "=" .. n.target end
      end
      T.eq(table.concat(seq, " "), "add=aten.add.Tensor")
      local other = {{t2, t1}}
      P.eq_tensor(ep:module()(other), m(other), "unlifted, other inputs")
    end)
end)

P.done()
