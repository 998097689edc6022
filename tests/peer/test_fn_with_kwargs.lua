-- tests/peer/test_fn_with_kwargs.lua — ExportDB fn_with_kwargs (python.data-structure).
-- Layer: tests. Positional, tuple, *args and keyword inputs, pytree-flattened into 8 user
-- inputs named by their path. Lua spelling: *myargs is the vararg list and **kwargs (with
-- mykw0) the trailing options table, as docs/API.md §3 spells keyword arguments.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local FnWithKwargs = nn.Module:extend("FnWithKwargs")
function FnWithKwargs:forward(pos0, tuple0, ...)
  local myargs = table.pack(...)
  local mykwargs = myargs[myargs.n] -- keyword arguments: the trailing options table
  myargs.n = myargs.n - 1
  local out = pos0
  for _, arg in ipairs(tuple0) do
    out = out * arg
  end
  for i = 1, myargs.n do
    out = out * myargs[i]
  end
  out = out * mykwargs.mykw0
  out = out * mykwargs.input0 * mykwargs.input1
  return out
end

local function vec(a) return torch.tensor({a, a + 1, -a, 2}, torch.float32) end
local args = {vec(1), {vec(2), vec(3)}, vec(4), vec(5), {mykw0 = vec(6), input0 = vec(7), input1 = vec(8)}}

T.test("fn_with_kwargs runs eagerly", function()
  local out = FnWithKwargs()(table.unpack(args))
  local want = {1, 1, 1, 1}
  for a = 1, 8 do
    local v = {a, a + 1, -a, 2}
    for i = 1, 4 do want[i] = want[i] * v[i] end
  end
  P.values(out, {4}, want)
end)

P.modes(function(strict, mode)
  local m = FnWithKwargs()
  T.test("fn_with_kwargs: tables of tensors flattened into user inputs, " .. mode, function()
      local ep = torch.export.export(m, args, {strict = strict})
      local ins = P.sig(ep)
      T.falsy(ins:find("CONSTANT_TENSOR", 1, true), ins)
      T.eq(#ep.graph_signature.input_specs, 8, "8 user inputs")
      -- PyTorch: pos0 tuple0_0 tuple0_1 myargs_0 myargs_1 mykw0 input0 input1. A Lua vararg has
      -- no name (args_N) and the trailing options table is read in sorted key order.
      T.eq(ins, "pos0: USER_INPUT\ntuple0_0: USER_INPUT\ntuple0_1: USER_INPUT\nargs_0: USER_INPUT\n" ..
        "args_1: USER_INPUT\ninput0: USER_INPUT\ninput1: USER_INPUT\nmykw0: USER_INPUT")
      local seq = {}
      for _, n in ipairs(ep.graph.nodes) do
        if n.op == "call_function" then seq[#seq + 1] = n.name .. "=" .. n.target end
      end
      T.eq(table.concat(seq, " "), "mul=aten.mul.Tensor mul_1=aten.mul.Tensor mul_2=aten.mul.Tensor " ..
        "mul_3=aten.mul.Tensor mul_4=aten.mul.Tensor mul_5=aten.mul.Tensor mul_6=aten.mul.Tensor")
      -- other inputs than the example ones must give other results
      local other = P.clone_args(args)
      other[2][1] = vec(10)
      P.eq_tensor(ep:module()(table.unpack(other)), m(table.unpack(other)), "unlifted, other inputs")
    end)
end)

P.done()
