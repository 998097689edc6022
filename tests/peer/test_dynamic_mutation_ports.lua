-- tests/peer/test_dynamic_mutation_ports.lua — dynamic-shape cases of PyTorch's
-- test/export/test_export.py (the torch 2.2 version) that involve mutation: test_export_input_mutation_static_shape,
-- test_export_input_mutation_dynamic_shape, the export half of test_retrace_pre_autograd (a
-- buffer mutated under a Dim with min=3), and test_export_decomps_dynamic (run_decompositions
-- keeps the symbolic batch). What each PyTorch test asserts is asserted here (the placeholder's
-- symbolic size, eager and exported agree and mutate the inputs alike, the input-check message),
-- plus the functional graph and signature torch.export gives, in both export modes, and the
-- numbers at sizes other than the example's.
-- Layer: tests.
local P = dofile("tests/peer/peer.lua")
local T = P.T
local Dim = torch.export.Dim

local function module(name, init, forward)
  local M = nn.Module:extend(name)
  if init then M.init = init end
  M.forward = forward
  return M()
end

-- test_export_input_mutation_static_shape: x.view(3, 2, -1).add_(y) with a Python float y
P.modes(function(strict, mode)
  T.test("test_export_input_mutation_static_shape, " .. mode, function()
    local m = module("MutationModel", nil, function(self, x, y)
      x:view(3, 2, -1):add_(y)
      return x
    end)
    local x = torch.randn(12)
    local ep = torch.export.export(m, {x, 2.0}, {strict = strict})
    P.program(ep,
      "placeholder:x view=aten.view.default add=aten.add.Tensor view_1=aten.view.default " ..
      "output:output",
      "x: USER_INPUT",
      "view_1: USER_INPUT_MUTATION target='x'\nview_1: USER_OUTPUT")
    local xe, xm = x:clone(), x:clone()
    P.eq_tensor(ep:module()(xe, 2.0), m(xm, 2.0), "ep(*inputs_export) == model(*inputs_model)")
    P.eq_tensor(xm, x + 2.0, "inputs[0] + 2.0 == inputs_model[0]")
    P.eq_tensor(xe, x + 2.0, "inputs[0] + 2.0 == inputs_export[0]")
  end)
end)

-- test_export_input_mutation_dynamic_shape: x is the pair (x0 [12], x1 [3, 2]); x[0].mul_(y);
-- Dim("dim") on x0's dim 0 (PyTorch's x[0] is Lua's x[1])
P.modes(function(strict, mode)
  T.test("test_export_input_mutation_dynamic_shape, " .. mode, function()
    local m = module("MutationModel", nil, function(self, x, y)
      x[1]:mul_(y)
      return x
    end)
    local inputs = {{torch.randn(12), torch.randn(3, 2)}, 2.0}
    local ep = torch.export.export(m, inputs, {strict = strict,
      dynamic_shapes = {x = {{[0] = Dim("dim")}, nil}, y = nil}})
    local first = ep.graph.nodes[1]
    T.eq(first.op, "placeholder")
    T.eq(first.type, "f32[s0]", "nodes[0].meta['val'].shape[0] is a SymInt")
    P.program(ep,
      "placeholder:x_0 placeholder:x_1 mul=aten.mul.Tensor output:output",
      "x_0: USER_INPUT\nx_1: USER_INPUT",
      "mul: USER_INPUT_MUTATION target='x_0'\nmul: USER_OUTPUT\nx_1: USER_OUTPUT")
    T.eq(tostring(ep.range_constraints), "{s0: VR[0, int_oo]}")
    -- the example, and other lengths of x0
    for _, n in ipairs({12, 5, 30}) do
      local x0, x1 = torch.randn(n), torch.randn(3, 2)
      local ie, im = {x0:clone(), x1:clone()}, {x0:clone(), x1:clone()}
      -- the unlifted module returns the flattened outputs (x[0], x[1]); eager returns the pair
      local re, rm = table.pack(ep:module()(ie, 2.0)), m(im, 2.0)
      P.eq_tensor(re[1], rm[1], "output x[0] at length " .. n)
      P.eq_tensor(re[2], rm[2], "output x[1] at length " .. n)
      P.eq_tensor(im[1], x0 * 2.0, "inputs[0][0] * 2.0 == inputs_model[0][0]")
      P.eq_tensor(ie[1], x0 * 2.0, "inputs[0][0] * 2.0 == inputs_export[0][0]")
    end
    -- x1 stayed static
    T.checkerr(".shape[0] (x_1) to be equal to 3, but got 4", function()
      ep:module()({torch.randn(12), torch.randn(4, 2)}, 2.0)
    end)
  end)
end)

-- test_retrace_pre_autograd, the export: a buffer mutated in place, x's dim 0 a Dim with min=3
P.modes(function(strict, mode)
  T.test("test_retrace_pre_autograd (export), " .. mode, function()
    local m = module("Foo", function(self) self:register_buffer("buffer", torch.ones(4, 4)) end,
      function(self, x)
        self.buffer:add_(4)
        return x:sum() + self.buffer:sum()
      end)
    local ep = torch.export.export(m, {torch.randn(5, 4)}, {strict = strict,
      dynamic_shapes = {{[0] = Dim("dim", {min = 3})}}})
    P.program(ep,
      "placeholder:b_buffer placeholder:x add=aten.add.Tensor sum_1=aten.sum.default " ..
      "sum_2=aten.sum.default add_1=aten.add.Tensor output:output",
      "b_buffer: BUFFER target='buffer' persistent=True\nx: USER_INPUT",
      "add: BUFFER_MUTATION target='buffer'\nadd_1: USER_OUTPUT")
    T.eq(tostring(ep.range_constraints), "{s0: VR[3, int_oo]}")
    T.truthy(tostring(ep):find('x: "f32[s0, 4]"', 1, true), tostring(ep))
    -- test_inp = torch.ones(8, 4): ep(test_inp) == Foo().forward(test_inp)
    local fresh = module("Foo", function(self) self:register_buffer("buffer", torch.ones(4, 4)) end,
      function(self, x)
        self.buffer:add_(4)
        return x:sum() + self.buffer:sum()
      end)
    P.eq_tensor(ep:module()(torch.ones(8, 4)), fresh(torch.ones(8, 4)), "ones(8, 4)")
    -- the input check of the retraced module, in PyTorch's words
    T.checkerr("Expected input at x.shape[0] to be >= 3, but got 2", function()
      ep:module()(torch.randn(2, 4))
    end)
    P.numbers(m, ep, {torch.randn(7, 4)})
  end)
end)

-- test_export_decomps_dynamic: Linear(10, 1) with a dynamic batch; run_decompositions keeps the
-- placeholder symbolic and lowers linear to permute + addmm (no t)
T.test("test_export_decomps_dynamic", function()
  local m = module("M", function(self) self.lin = nn.Linear(10, 1) end,
    function(self, x) return self.lin(x) end)
  local ep = torch.export.export(m, {torch.randn(5, 10)}, {dynamic_shapes = {x = {[0] = Dim("batch")}}})
  local core = ep:run_decompositions()
  local last
  for _, n in ipairs(core.graph.nodes) do if n.op == "placeholder" then last = n end end
  T.eq(last.type, "f32[s0, 10]", "input_node.meta['val'].shape[0] is a SymInt")
  local code = fxdb._readable(core.graph)
  local function count(s)
    local k = 0
    for _ in code:gmatch(s:gsub("%p", "%%%0")) do k = k + 1 end
    return k
  end
  T.eq(count("torch.ops.aten.permute.default"), 1, "permute count")
  T.eq(count("torch.ops.aten.t.default"), 0, "t count")
  for _, n in ipairs({5, 2, 9}) do
    local x = torch.randn(n, 10)
    P.eq_tensor(core:module()(x), m(x), "core_aten_ep(*inp) == m(*inp) at batch " .. n)
  end
end)

P.done()
