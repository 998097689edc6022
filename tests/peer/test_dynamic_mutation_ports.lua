-- tests/peer/test_dynamic_mutation_ports.lua — dynamic-shape cases of PyTorch's
-- test/export/test_export.py (the torch 2.2 version) that involve mutation: test_export_input_mutation_static_shape,
-- test_export_input_mutation_dynamic_shape, the export half of test_retrace_pre_autograd (a
-- buffer mutated under a Dim with min=3), and test_export_decomps_dynamic (run_decompositions
-- keeps the symbolic batch); from the torch 2.3 version test_non_strict_dynamic_shapes (a
-- buffer add_ with one Dim over nested inputs) and test_conv_dynamic (adapted). What each PyTorch test asserts is asserted here (the placeholder's
-- symbolic size, eager and exported agree and mutate the inputs alike, the input-check message),
-- plus the functional graph and signature torch.export gives, in both export modes, and the
-- numbers at sizes other than the example's.
-- Layer: tests.
local P = dofile("tests/peer/peer.lua")
local T = P.T
local Dim = torch.export.Dim

-- module(name, init, forward): the harness's T.module with the class name first
local function module(name, init, forward) return T.module(forward, init, name) end

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

-- ---- from a later test_export.py (torch 2.3) ------------------------------------------------

-- test_non_strict_dynamic_shapes: buffers u and v, v.add_(3) in forward; x, ys[0], ys[1],
-- zs["a"], zs["b"] share Dim("dim", min=3), c stays static (4). `x.shape[0] < 3` is decided by
-- the Dim's range (no guard), so the else branch is the program. PyTorch's messages: an input
-- that breaks the shared dim, a static dim that changes, an example below the Dim's min.
local function foo_buffers()
  return module("Foo", function(self)
    self:register_buffer("u", torch.ones(1))
    self:register_buffer("v", torch.ones(1))
  end, function(self, x, ys, zs, c)
    local y = ys[1] + ys[2] + zs.a + zs.b
    self.v:add_(3)
    local w = self.u - self.v
    if x:size(0) < 3 and c:size(0) ~= 4 then
      return x + w, x + y
    end
    return x - w, x - y
  end)
end
local function foo_inputs(n, nc)
  return {torch.ones(n), {torch.zeros(n), torch.ones(n)}, {a = torch.zeros(n), b = torch.ones(n)},
          torch.ones(nc or 4)}
end

P.modes(function(strict, mode)
  T.test("test_non_strict_dynamic_shapes, " .. mode, function()
    local dim = Dim("dim", {min = 3})
    local spec = {{[0] = dim}, {{[0] = dim}, {[0] = dim}}, {a = {[0] = dim}, b = {[0] = dim}}, nil}
    local m = foo_buffers()
    local ep = torch.export.export(m, foo_inputs(5), {strict = strict, dynamic_shapes = spec})
    P.program(ep,
      "placeholder:b_u placeholder:b_v placeholder:x placeholder:ys_0 placeholder:ys_1 " ..
      "placeholder:zs_a placeholder:zs_b placeholder:c add=aten.add.Tensor " ..
      "add_1=aten.add.Tensor add_2=aten.add.Tensor add_3=aten.add.Tensor " ..
      "sub=aten.sub.Tensor sub_1=aten.sub.Tensor sub_2=aten.sub.Tensor output:output",
      "b_u: BUFFER target='u' persistent=True\nb_v: BUFFER target='v' persistent=True\n" ..
      "x: USER_INPUT\nys_0: USER_INPUT\nys_1: USER_INPUT\nzs_a: USER_INPUT\n" ..
      "zs_b: USER_INPUT\nc: USER_INPUT",
      "add_3: BUFFER_MUTATION target='v'\nsub_1: USER_OUTPUT\nsub_2: USER_OUTPUT")
    local text = tostring(ep)
    T.truthy(text:find('x: "f32[s0]", ys_0: "f32[s0]", ys_1: "f32[s0]", zs_a: "f32[s0]", ' ..
                       'zs_b: "f32[s0]", c: "f32[4]"', 1, true), text)
    T.eq(tostring(ep.range_constraints), "{s0: VR[3, int_oo]}")
    -- bad_runtime_inp1: ys[0] no longer has x's length
    local bad1 = foo_inputs(6)
    bad1[2] = {torch.zeros(5), torch.ones(5)}
    bad1[3] = {a = torch.zeros(5), b = torch.ones(5)}
    T.checkerr("to be equal to 6, but got 5", function() ep:module()(table.unpack(bad1)) end)
    -- bad_runtime_inp2: the static c
    T.checkerr(".shape[0] (c) to be equal to 4, but got 6", function()
      ep:module()(table.unpack(foo_inputs(5, 6)))
    end)
    -- good_runtime_inp, and the buffer's updates against eager call by call
    local eager, mod = foo_buffers(), ep:module()
    for _, n in ipairs({7, 3, 12}) do
      local want = table.pack(eager(table.unpack(foo_inputs(n))))
      local got = table.pack(mod(table.unpack(foo_inputs(n))))
      P.eq_tensor(got[1], want[1], "x - w at " .. n)
      P.eq_tensor(got[2], want[2], "x - y at " .. n)
      P.eq_tensor(mod.v, eager.v, "v after the call at " .. n)
    end
    P.numbers(m, ep, foo_inputs(8))
    -- bad_example_inp: the example is below the Dim's min
    P.export_fails("constraint_violation", "2 not in range [3, int_oo]", foo_buffers(),
                   foo_inputs(2), {strict = strict, dynamic_shapes = spec})
  end)
end)

-- test_conv_dynamic (adapted: fxdb has no max_pool2d, so the conv's in-place add_ feeds relu; and
-- 8x8 images instead of 256x256): a batch Dim shared by x and y, an intermediate mutated in place
P.modes(function(strict, mode)
  T.test("test_conv_dynamic (adapted), " .. mode, function()
    local function make()
      torch.manual_seed(3)
      return module("M", function(self)
        self.conv = nn.Conv2d(3, 32, 3, {padding = 1})
        self.relu = nn.ReLU()
      end, function(self, x, y)
        local a = self.conv(x)
        a:add_(y)
        return self.relu(a)
      end)
    end
    local m = make()
    local batch = Dim("batch")
    local ep = torch.export.export(m, {torch.randn(2, 3, 8, 8), torch.ones(2, 32, 8, 8)},
      {strict = strict, dynamic_shapes = {x = {[0] = batch}, y = {[0] = batch}}})
    P.program(ep,
      "placeholder:p_conv_weight placeholder:p_conv_bias placeholder:x placeholder:y " ..
      "convolution=aten.convolution.default add=aten.add.Tensor relu=aten.relu.default output:output",
      "p_conv_weight: PARAMETER target='conv.weight'\np_conv_bias: PARAMETER target='conv.bias'" ..
      "\nx: USER_INPUT\ny: USER_INPUT",
      "relu: USER_OUTPUT")
    T.truthy(tostring(ep):find('relu: "f32[s0, 32, 8, 8]"', 1, true), tostring(ep))
    for _, n in ipairs({17, 15}) do
      local x, y = torch.randn(n, 3, 8, 8), torch.ones(n, 32, 8, 8)
      P.eq_tensor(ep:module()(x, y), m(x, y), "exported_program.module()(*args) == m(*args) at " .. n)
    end
  end)
end)

P.done()
