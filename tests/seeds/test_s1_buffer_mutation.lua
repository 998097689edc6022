-- tests/seeds/test_s1_buffer_mutation.lua — seed case S1 (shared/cases/SEEDS.md), both modes:
-- signature, functional op sequence, provenance with Lua lines, and the unlifted module's
-- numbers over two calls against the values eager PyTorch gives.
local T = dofile("tests/lua/harness.lua")

local Model = nn.Module:extend("Model")
function Model:init()
  self:register_buffer("state", torch.tensor({7, 5, 6}, torch.float16))
end
function Model:forward(x)
  x = x:type(torch.float16)
  self.state:mul_(x)                                        -- line 12
  self.state:add_(torch.tensor({1, 2, 3}, torch.float16))   -- line 13
  return self.state * 9
end

local function values(t)
  local out = {}
  for i = 0, t:numel() - 1 do out[#out + 1] = t[i]:item() end
  return out
end

local function same(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

for _, strict in ipairs{true, false} do
  local mode = strict and "strict" or "non-strict"
  local m = Model()
  local x = torch.tensor({1.5, 2, -1})
  local ep = torch.export.export(m, {x}, {strict = strict})

  T.test("S1 signature, " .. mode, function()
    local sig = ep.graph_signature
    local ins, outs = {}, {}
    for _, s in ipairs(sig.input_specs) do ins[#ins + 1] = tostring(s) end
    for _, s in ipairs(sig.output_specs) do outs[#outs + 1] = tostring(s) end
    T.eq(table.concat(ins, "\n"),
      "b_state: BUFFER target='state' persistent=True\n" ..
      "c_lifted_tensor_0: CONSTANT_TENSOR target='lifted_tensor_0'\n" ..
      "x: USER_INPUT")
    T.eq(table.concat(outs, "\n"),
      "add: BUFFER_MUTATION target='state'\nmul_1: USER_OUTPUT")
    T.eq(sig.input_specs[1].kind, "BUFFER")
    T.eq(sig.input_specs[1].arg.name, "b_state")
    T.eq(sig.input_specs[1].target, "state")
    T.eq(sig.output_specs[1].kind, "BUFFER_MUTATION")
  end)

  T.test("S1 functional op sequence, " .. mode, function()
    local seq = {}
    for _, n in ipairs(ep.graph.nodes) do
      seq[#seq + 1] = n.op == "call_function" and (n.name .. "=" .. n.target) or (n.op .. ":" .. n.name)
    end
    T.eq(table.concat(seq, " "),
      "placeholder:b_state placeholder:c_lifted_tensor_0 placeholder:x " ..
      "_to_copy=aten._to_copy.default mul=aten.mul.Tensor " ..
      "lift_fresh_copy=aten.lift_fresh_copy.default add=aten.add.Tensor mul_1=aten.mul.Tensor " ..
      "output:output")
    T.truthy(not tostring(ep.graph):find("_%.Tensor"), "no in-place op in the functional graph")
  end)

  T.test("S1 provenance, " .. mode, function()
    local pv = fxdb.provenance(ep, "state")
    local steps = pv.steps
    T.eq(#steps, 3)
    T.eq(steps[1].version, 0)
    T.eq(steps[1].node.name, "b_state")
    T.eq(steps[2].node.name, "mul")
    T.eq(steps[2].target, "aten.mul.Tensor")
    T.eq(steps[2].from_op, "aten.mul_.Tensor")
    T.eq(steps[2].location, "tests/seeds/test_s1_buffer_mutation.lua:12")
    T.eq(steps[2].source, "self.state:mul_(x)                                        -- line 12")
    T.eq(steps[3].node.name, "add")
    T.eq(steps[3].from_op, "aten.add_.Tensor")
    T.eq(steps[3].location, "tests/seeds/test_s1_buffer_mutation.lua:13")
    local text = tostring(pv)
    T.truthy(text:find("^state  %(BUFFER, output add%)"), text)
    T.truthy(text:find("from aten.mul_.Tensor", 1, true), text)
  end)

  T.test("S1 every node carries from_node, stack_trace, nn_module_stack (S5), " .. mode, function()
    for _, n in ipairs(ep.graph.nodes) do
      if n.op == "call_function" then
        T.truthy(#n.meta.from_node > 0, n.name .. " has from_node")
        T.truthy(n.meta.stack_trace and n.meta.stack_trace:find("test_s1_buffer_mutation.lua:", 1, true),
          n.name .. " has a stack trace")
        T.eq(n.meta.nn_module_stack[1].cls, "Model")
      end
    end
  end)

  T.test("S1 unlifted module twice, " .. mode, function()
    local mod = ep:module()
    local last = mod.graph.nodes[#mod.graph.nodes - 1]
    T.eq(last.target, "aten.copy_.default")
    local out = mod(x)
    T.eq(out.dtype, torch.float16)
    T.truthy(same(values(out), {103.5, 108, -27}), tostring(out))
    T.truthy(same(values(mod.state), {11.5, 12, -3}), tostring(mod.state))
    out = mod(x)
    T.truthy(same(values(out), {164.25, 234, 54}), tostring(out))
    T.truthy(same(values(mod.state), {18.25, 26, 6}), tostring(mod.state))
  end)

  T.test("S1 export leaves the module untouched; eager agrees, " .. mode, function()
    T.truthy(same(values(m.state), {7, 5, 6}))
    local c = fxdb.check(m, ep, {x})
    T.truthy(c.ok, tostring(c))
    T.eq(c.max_abs_error, 0)
    T.truthy(same(values(m.state), {7, 5, 6}), "check leaves the module untouched")
    local out = m(x)
    T.truthy(same(values(out), {103.5, 108, -27}), "eager call 1")
    out = m(x)
    T.truthy(same(values(out), {164.25, 234, 54}), "eager call 2")
  end)
end

T.done()
