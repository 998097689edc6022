-- tests/lua/test_graph.lua — Graph and Node userdata: node lists, lookups, search, node fields
-- and meta, printing, identity and lifetime. The graphs come from exporting small models; the
-- expected names, targets and lines are those torch.export gives for the same programs.
local T = dofile("tests/lua/harness.lua")
local FILE = "tests/lua/test_graph.lua"

local Model = nn.Module:extend("Model")
function Model:init()
  self:register_buffer("state", torch.tensor({7, 5, 6}, torch.float16))
  self.proj = nn.Linear(3, 3)
end
function Model:forward(x)
  x = x:type(torch.float16)
  self.state:mul_(x)                                  -- line 14
  local y = self.proj(self.state:float())             -- line 15
  return y * 9
end

local ep = torch.export.export(Model(), {torch.tensor({1.5, 2, -1})})
local g = ep.graph

local function names(list)
  local out = {}
  for i, n in ipairs(list) do out[i] = n.name end
  return table.concat(out, " ")
end

T.test("g.nodes lists every node in order; #g counts them", function()
  T.eq(names(g.nodes), "p_proj_weight p_proj_bias b_state x _to_copy mul _to_copy_1 linear mul_1 output")
  T.eq(#g, 10)
  T.eq(#g.nodes, 10)
end)

T.test("g:node by name, with or without %", function()
  local n = g:node("mul")
  T.eq(n.name, "mul")
  T.truthy(rawequal(g:node("%mul"), n))
  T.eq(g:node("nope"), nil)
  T.truthy(rawequal(g.output, g:node("output")))
end)

T.test("node fields: op, target, args with node references, users", function()
  local mul = g:node("mul")
  T.eq(mul.op, "call_function")
  T.eq(mul.target, "aten.mul.Tensor")
  T.truthy(rawequal(mul.args[1], g:node("b_state")), "args hold Node userdata")
  T.truthy(rawequal(mul.args[2], g:node("_to_copy")))
  T.eq(names(mul.users), "_to_copy_1 output")
  local x = g:node("x")
  T.eq(x.op, "placeholder")
  T.eq(x.target, "x")
  T.eq(#x.args, 0)
  local tc = g:node("_to_copy")
  T.eq(tc.args[2], torch.float16)                     -- args hold every schema argument
  T.eq(g:node("mul_1").args[2], 9)
  T.eq(g.output.op, "output")
  T.truthy(rawequal(mul.graph, g))
  T.truthy(rawequal(mul.next, g:node("_to_copy_1")))
  T.truthy(rawequal(mul.prev, g:node("_to_copy")))
  T.eq(mul.type, "f16[3]")
end)

T.test("node meta: val, tensor, stack_trace, nn_module_stack, from_node, mutation", function()
  local mul = g:node("mul")
  local m = mul.meta
  -- meta.val is the (meta) tensor itself, as FX's meta["val"] is a FakeTensor
  T.truthy(torch.is_tensor(m.val))
  T.eq(table.concat(m.val.shape, ","), "3")
  T.eq(m.val.dtype, torch.float16)
  T.eq(m.val.device, "meta")
  T.eq(m.type, "f16[3]")
  T.truthy(torch.is_tensor(m.tensor))
  T.eq(m.tensor.device, "meta")
  T.eq(m.value, nil)                                  -- traced on meta tensors: no values
  T.eq(m.stack_trace, "File: " .. FILE .. ":14 in forward, code: self.state:mul_(x)                                  -- line 14")
  T.eq(#m.nn_module_stack, 1)
  T.eq(m.nn_module_stack[1].path, "")
  T.eq(m.nn_module_stack[1].cls, "Model")
  T.eq(#m.from_node, 1)
  T.eq(m.from_node[1].name, "mul_")
  T.eq(m.from_node[1].target, "aten.mul_.Tensor")
  T.eq(tostring(m.from_node[1]), "mul_")
  T.eq(m.mutation.state, "state")
  T.eq(m.mutation.version, 1)
  T.eq(m.mutation.from_op, "aten.mul_.Tensor")
  local lin = g:node("linear").meta
  T.eq(lin.nn_module_stack[2].path, "proj")
  T.eq(lin.nn_module_stack[2].cls, "Linear")
  -- PyTorch's shape: an ordered map key -> (path, class)
  T.eq(lin.nn_module_stack[2][1], "proj")
  T.eq(lin.nn_module_stack[2][2], "Linear")
  local keys = {}
  for k, v in pairs(lin.nn_module_stack) do keys[#keys + 1] = k .. "=" .. v[1] .. ":" .. v[2] end
  T.eq(table.concat(keys, " "), "L__self__=:Model L__self___proj=proj:Linear")
  T.truthy(lin.stack_trace:find(FILE .. ":15 in forward", 1, true), lin.stack_trace)
  T.eq(g:node("x").meta.stack_trace, nil)
end)

T.test("g:find by op, name pattern, shape", function()
  T.eq(names(g:find("aten.mul")), "mul mul_1")
  T.eq(names(g:find("mul")), "mul mul_1")
  T.eq(names(g:find("aten.mul.Tensor")), "mul mul_1")
  T.eq(names(g:find("torch.ops.aten.linear.default")), "linear")
  T.eq(names(g:find("aten::_to_copy")), "_to_copy _to_copy_1")
  T.eq(names(g:find("%linear")), "linear")
  T.eq(names(g:find("^p_")), "p_proj_weight p_proj_bias")
  T.eq(names(g:find("f32[3]")), "p_proj_bias x _to_copy_1 linear mul_1")
  T.eq(names(g:find("f32[3, 3]")), "p_proj_weight")
  T.eq(names(g:find("f32[3,3]")), "p_proj_weight")
  T.eq(#g:find("aten.add_"), 0)
end)

T.test("printing: tostring(g) is the FX listing, g.code the forward, tostring(node) a card", function()
  local s = tostring(g)
  T.eq(s:sub(1, 9), "graph():\n")
  T.truthy(s:find("%mul : [num_users=2] = call_function[target=torch.ops.aten.mul.Tensor](args = (%b_state, %_to_copy), kwargs = {})", 1, true), s)
  T.truthy(g.code:find("def forward(self, p_proj_weight, p_proj_bias, b_state, x):", 1, true), g.code)
  local card = tostring(g:node("mul"))
  T.truthy(card:find("%mul : call_function[target=aten.mul.Tensor]", 1, true), card)
  T.truthy(card:find("args: (self=%b_state, other=%_to_copy)", 1, true), card)
  T.truthy(card:find("users: [%_to_copy_1, %output]", 1, true), card)
  T.truthy(card:find("val: f16[3]", 1, true), card)
  T.truthy(card:find("mutation: state v1 from aten.mul_.Tensor", 1, true), card)
  T.truthy(card:find("from_node: %mul_", 1, true), card)
end)

T.test("one Lua value per node; nodes key tables", function()
  local a, b = g:node("linear"), g.nodes[8]
  T.truthy(rawequal(a, b))
  local seen = {[a] = true}
  T.truthy(seen[g:find("linear")[1]])
end)

T.test("a node keeps its graph and program alive", function()
  local n
  do
    local ep2 = torch.export.export(Model(), {torch.ones(3)})
    n = ep2.graph:node("linear")
  end
  collectgarbage()
  collectgarbage()
  T.eq(n.name, "linear")
  T.eq(n.graph:node("x").name, "x")
  T.eq(n.meta.type, "f32[3]")
end)

T.test("meta.value holds a node's value when it is a real (cpu) tensor", function()
  local ep3 = torch.export.export(Model(), {torch.tensor({1.0, 2.0, 3.0})}, {real = true})
  local v = ep3.graph:node("x").meta.value
  T.truthy(torch.is_tensor(v), "a cpu value")
  T.eq(table.concat(v:tolist(), " "), "1.0 2.0 3.0")
  for _, n in ipairs(ep3.graph.nodes) do
    local t = n.meta.tensor
    T.eq(n.meta.value ~= nil, t ~= nil and t.device == "cpu", n.name)
  end
end)

T.test("checkers refuse other values", function()
  local gm = getmetatable(g).__methods
  T.checkerr("bad argument #1 to 'node' (Graph expected, got table)", function() return gm.node({}, "x") end)
  T.checkerr("Graph expected", function() return gm.find(torch.ones(1), "x") end)
end)

T.done()
