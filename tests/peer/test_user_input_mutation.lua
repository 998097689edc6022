-- tests/peer/test_user_input_mutation.lua — ExportDB user_input_mutation (torch.mutation).
-- Layer: tests. x.mul_(2) on a user input: the functional (2.4) form has mul, cos and a
-- USER_INPUT_MUTATION output first; training IR keeps mul_ with no mutation output (2.10).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local UserInputMutation = nn.Module:extend("UserInputMutation")
function UserInputMutation:forward(x)
  x:mul_(2)
  return x:cos()
end

local x = torch.tensor({{0, 1}, {2, 3}, {-1, 0.5}})

if P.has("cos.default") then
  P.modes(function(strict, mode)
    local m = UserInputMutation()
    local ep = torch.export.export(m, {x}, {strict = strict})
    T.test("user_input_mutation functional graph and signature, " .. mode, function()
      P.program(ep, "placeholder:x mul=aten.mul.Tensor cos=aten.cos.default output:output",
        "x: USER_INPUT", "mul: USER_INPUT_MUTATION target='x'\ncos: USER_OUTPUT")
      T.eq(ep.graph_signature.output_specs[1].kind, "USER_INPUT_MUTATION")
      T.eq(ep.graph_signature.output_specs[1].target, "x")
      T.truthy(tostring(ep.graph):find("mul.Tensor](args = (%x, 2)", 1, true), tostring(ep.graph))
    end)
    T.test("user_input_mutation numbers, " .. mode, function()
      local xi = x:clone()
      local r = fxdb.run(ep, {xi})
      P.eq_tensor(r.values[1], x * 2, "the mutation output is 2x")
      P.values(xi, {3, 2}, {0, 1, 2, 3, -1, 0.5}, "fxdb.run leaves its input alone")
      P.numbers(m, ep, {x})
      -- the unlifted module writes the mutation back into its argument, as eager does
      local xu = x:clone()
      local out = ep:module()(xu)
      P.values(xu, {3, 2}, {0, 2, 4, 6, -2, 1}, "input after the unlifted call")
      P.eq_tensor(out, (x * 2):cos(), "cos(2x)")
    end)
    T.test("user_input_mutation training IR keeps mul_ (2.10), " .. mode, function()
      local tr = torch.export.export(m, {x}, {strict = strict, ir = "training"})
      T.eq(P.ops(tr), "placeholder:x mul_=aten.mul_.Tensor cos=aten.cos.default output:output")
      local _, outs = P.sig(tr)
      T.eq(outs, "cos: USER_OUTPUT")
      T.eq(P.ops(tr:run_decompositions()), P.ops(ep))
    end)
  end)
else
  -- TODO(aten.cos): kernels are adding cos; until then the case stops with the clear error.
  P.modes(function(strict, mode)
    T.test("user_input_mutation needs aten.cos (not yet registered), " .. mode, function()
      P.op_missing("cos", torch.export.export, UserInputMutation(), {x}, {strict = strict})
    end)
  end)
  -- the mutation part of the case, with an op fxdb has in place of cos
  local MulThenNeg = nn.Module:extend("UserInputMutation")
  function MulThenNeg:forward(x)
    x:mul_(2)
    return x:neg()
  end
  P.modes(function(strict, mode)
    T.test("user_input_mutation with neg in place of cos, " .. mode, function()
      local m = MulThenNeg()
      local ep = torch.export.export(m, {x}, {strict = strict})
      P.program(ep, "placeholder:x mul=aten.mul.Tensor neg=aten.neg.default output:output",
        "x: USER_INPUT", "mul: USER_INPUT_MUTATION target='x'\nneg: USER_OUTPUT")
      local out = P.numbers(m, ep, {x})
      P.values(out[1], {3, 2}, {-0.0, -2, -4, -6, 2, -1})
      local xu = x:clone()
      ep:module()(xu)
      P.values(xu, {3, 2}, {0, 2, 4, 6, -2, 1}, "input after the unlifted call")
    end)
  end)
end

P.done()
