-- tests/peer/test_mutation_ports.lua — input-mutation cases of PyTorch's
-- test/functorch/test_aotdispatch.py and test/test_functionalization.py, exported.
-- Layer: tests. Each expected graph is the aot_autograd / functionalize graph of the PyTorch test
-- in torch.export's functional form (no clones of primals, view ops instead of view_copy, the
-- mutated inputs first among the outputs as USER_INPUT_MUTATION, dead nodes removed), with the
-- node names torch.export gives; numbers against eager, both modes.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local function case(name, forward, args, ops, outs)
  P.modes(function(strict, mode)
    T.test(name .. ", " .. mode, function()
      local M = nn.Module:extend(name)
      M.forward = forward
      local m = M()
      local ep = torch.export.export(m, args(), {strict = strict})
      T.eq(P.ops(ep), ops, "op sequence")
      local _, o = P.sig(ep)
      T.eq(o, outs, "output specs")
      P.numbers(m, ep, args())
    end)
  end)
end

-- test_aotdispatch.py test_input_mutation_simple
case("test_input_mutation_simple", function(self, a) a:mul_(2); return a * 3 end,
  function() return {torch.arange(0, 9):view(3, 3):float()} end,
  "placeholder:a mul=aten.mul.Tensor mul_1=aten.mul.Tensor output:output",
  "mul: USER_INPUT_MUTATION target='a'\nmul_1: USER_OUTPUT")

-- test_aotdispatch.py test_input_mutation_multiple
case("test_input_mutation_multiple", function(self, a, b, c)
    a:mul_(2); c:mul_(2); return a + b + c
  end,
  function() return {torch.ones(3, 3), torch.full({3, 3}, 2.0), torch.full({3, 3}, 3.0)} end,
  "placeholder:a placeholder:b placeholder:c mul=aten.mul.Tensor mul_1=aten.mul.Tensor " ..
  "add=aten.add.Tensor add_1=aten.add.Tensor output:output",
  "mul: USER_INPUT_MUTATION target='a'\nmul_1: USER_INPUT_MUTATION target='c'\nadd_1: USER_OUTPUT")

-- test_aotdispatch.py test_input_output_view_mutate_multiple
case("test_input_output_view_mutate_multiple", function(self, a, b, c)
    a:mul_(2); c:mul_(3); return b:view(2, 2), c:view(2, 2)
  end,
  function() return {torch.ones(4), torch.arange(0, 4):float(), torch.full({4}, 2.0)} end,
  "placeholder:a placeholder:b placeholder:c mul=aten.mul.Tensor mul_1=aten.mul.Tensor " ..
  "view=aten.view.default view_1=aten.view.default output:output",
  "mul: USER_INPUT_MUTATION target='a'\nmul_1: USER_INPUT_MUTATION target='c'\n" ..
  "view: USER_OUTPUT\nview_1: USER_OUTPUT")

-- test_functionalization.py test_simple: a view mutated in place, the base regenerated
case("test_functionalization_simple", function(self, x)
    local tmp = torch.ones(4, 2)
    local y = x:view(4, 2)
    y:add_(tmp)
    local z = x * x -- dead
    return y
  end,
  function() return {torch.arange(0, 8):view(4, 2):float()} end,
  "placeholder:x ones=aten.ones.default view=aten.view.default add=aten.add.Tensor " ..
  "view_1=aten.view.default view_2=aten.view.default output:output",
  "view_1: USER_INPUT_MUTATION target='x'\nview_2: USER_OUTPUT")

-- test_functionalization.py test_multiple_views_of_same_base: both views see the update
case("test_multiple_views_of_same_base", function(self, x)
    local y = x:view(-1)
    local z = x:view(-1)
    x:add_(1)
    local y2 = y + 1 -- dead
    local z2 = z + 1
    return z2
  end,
  function() return {torch.arange(0, 4):float()} end,
  "placeholder:x add=aten.add.Tensor view_3=aten.view.default add_2=aten.add.Tensor output:output",
  "add: USER_INPUT_MUTATION target='x'\nadd_2: USER_OUTPUT")

-- test_functionalization.py test_diagonal: a mutated diagonal scatters back into the base
case("test_diagonal", function(self, x)
    local y = x:diagonal()
    y:add_(1)
    return x
  end,
  function() return {torch.zeros(2, 2)} end,
  "placeholder:x diagonal=aten.diagonal.default add=aten.add.Tensor " ..
  "diagonal_scatter=aten.diagonal_scatter.default output:output",
  "diagonal_scatter: USER_INPUT_MUTATION target='x'\ndiagonal_scatter: USER_OUTPUT")

-- test_functionalization.py test_slice (x[1:] mutated, then x read)
case("test_slice", function(self, x)
    local y = x[{"1:"}]
    y:mul_(2)
    return x + 1
  end,
  function() return {torch.arange(0, 4):float()} end,
  "placeholder:x slice_1=aten.slice.Tensor mul=aten.mul.Tensor " ..
  "slice_scatter=aten.slice_scatter.default add=aten.add.Tensor output:output",
  "slice_scatter: USER_INPUT_MUTATION target='x'\nadd: USER_OUTPUT")

T.done()
