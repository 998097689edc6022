-- tests/pt2/test_dynamic.lua — symbolic programs in PT2 archives: archives built by hand in the
-- form torch.export.save writes for a dynamic batch (SymExpr sizes as sympy srepr, torch >= 2.7,
-- and as sympy str, torch 2.5 - 2.6; sym_size.int and _operator.add nodes; range_constraints with
-- null for int_oo; PyTorch's symbol names like s77), an fxdb program with guards saved and loaded
-- back (run at several sizes, checked inputs, the same shape environment), and malformed
-- expressions refused by name.
-- Layer: tests. Run: build/fxdb tests/pt2/test_dynamic.lua
local T = dofile("tests/lua/harness.lua")
local Dim = torch.export.Dim

local tmpbase = os.tmpname()
os.remove(tmpbase)
local ntmp = 0
local function tmpfile()
  ntmp = ntmp + 1
  return tmpbase .. "_" .. ntmp .. ".pt2"
end

-- A SymInt: an int, or {"as_expr": ...} with an optional hint.
local function si(v, hint)
  if type(v) == "number" then return '{"as_int": ' .. v .. '}' end
  local h = hint and (', "hint": {"as_int": ' .. hint .. '}') or ""
  return '{"as_expr": {"expr_str": "' .. v .. '"' .. h .. '}}'
end
local function meta(sizes, strides)
  return '{"dtype": 7, "sizes": [' .. table.concat(sizes, ", ") .. '], "requires_grad": false, ' ..
    '"device": {"type": "cpu", "index": null}, "strides": [' .. table.concat(strides, ", ") ..
    '], "storage_offset": {"as_int": 0}, "layout": 7}'
end

-- torch.export.save of
--   class M(torch.nn.Module):
--       def forward(self, x):
--           n = x.size(0)
--           return torch.zeros(n + 1, 2), x * 2
-- exported with dynamic_shapes={"x": {0: Dim("batch", min=2)}}; `e` gives the expression texts.
local SREPR = {s = "Symbol('s77', integer=True, positive=True)",
               s1 = "Add(Symbol('s77', integer=True, positive=True), Integer(1))",
               twice = "Mul(Integer(2), Add(Symbol('s77', integer=True, positive=True), Integer(1)))"}
local STR = {s = "s77", s1 = "s77 + 1", twice = "2*s77 + 2"}
local function program(e, o)
  o = o or {}
  return [[{
  "graph_module": {
    "graph": {
      "inputs": [{"as_tensor": {"name": "x"}}],
      "outputs": [{"as_tensor": {"name": "zeros"}}, {"as_tensor": {"name": "mul"}}],
      "nodes": [
        {"target": "torch.ops.aten.sym_size.int",
         "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}, "kind": 1},
                    {"name": "dim", "arg": {"as_int": 0}, "kind": 1}],
         "outputs": [{"as_sym_int": {"as_name": "sym_size_int_1"}}], "metadata": {}},
        {"target": "]] .. (o.add_target or "_operator.add") .. [[",
         "inputs": [{"name": "a", "arg": {"as_sym_int": {"as_name": "sym_size_int_1"}}, "kind": 1},
                    {"name": "b", "arg": {"as_int": 1}, "kind": 1}],
         "outputs": [{"as_sym_int": {"as_name": "add"}}], "metadata": {}},
        {"target": "torch.ops.aten.zeros.default",
         "inputs": [{"name": "size", "arg": {"as_sym_ints": [{"as_name": "add"}, {"as_int": 2}]}, "kind": 1},
                    {"name": "device", "arg": {"as_device": {"type": "cpu", "index": null}}, "kind": 2},
                    {"name": "pin_memory", "arg": {"as_bool": false}, "kind": 2}],
         "outputs": [{"as_tensor": {"name": "zeros"}}], "metadata": {}},
        {"target": "torch.ops.aten.mul.Tensor",
         "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}, "kind": 1},
                    {"name": "other", "arg": {"as_int": 2}, "kind": 1}],
         "outputs": [{"as_tensor": {"name": "mul"}}], "metadata": {}}
      ],
      "tensor_values": {
        "x": ]] .. meta({si(e.s, 4), si(3)}, {si(3), si(1)}) .. [[,
        "zeros": ]] .. meta({si(o.zeros_size or e.s1, 5), si(2)}, {si(2), si(1)}) .. [[,
        "mul": ]] .. meta({si(e.s, 4), si(3)}, {si(3), si(1)}) .. [[},
      "sym_int_values": {"sym_size_int_1": ]] .. si(e.s, 4) .. [[, "add": ]] .. si(e.s1, 5) .. [[},
      "sym_bool_values": {}, "is_single_tensor_return": false,
      "custom_obj_values": {}, "sym_float_values": {}
    },
    "signature": {
      "input_specs": [{"user_input": {"arg": {"as_tensor": {"name": "x"}}}}],
      "output_specs": [{"user_output": {"arg": {"as_tensor": {"name": "zeros"}}}},
                       {"user_output": {"arg": {"as_tensor": {"name": "mul"}}}}]
    },
    "module_call_graph": [{"fqn": "", "signature": null}],
    "metadata": {},
    "treespec_namedtuple_fields": {}
  },
  "opset_version": {"aten": 10},
  "range_constraints": ]] .. (o.ranges or '{"s77": {"min_val": 2, "max_val": null}}') .. [[,
  "schema_version": {"major": 8, "minor": 10},
  "verifiers": [],
  "torch_version": "2.9.0",
  "guards_code": []
}]]
end

local function archive(json)
  local path = tmpfile()
  fxdb._zip_write(path, {
    {"m/archive_format", "pt2"},
    {"m/archive_version", "0"},
    {"m/byteorder", "little"},
    {"m/.data/version", "6"},
    {"m/models/model.json", json},
    {"m/data/weights/model_weights_config.json", '{"config": {}}'},
    {"m/data/constants/model_constants_config.json", '{"config": {}}'},
  })
  return path
end

local EXPECTED = [[
ExportedProgram:
    class GraphModule(torch.nn.Module):
        def forward(self, x: "f32[s77, 3]"):
            sym_size_int_1: "Sym(s77)" = torch.ops.aten.sym_size.int(x, 0)
            add: "Sym(s77 + 1)" = sym_size_int_1 + 1;  sym_size_int_1 = None
            zeros: "f32[s77 + 1, 2]" = torch.ops.aten.zeros.default([add, 2], device = device(type='cpu'), pin_memory = False);  add = None
            mul: "f32[s77, 3]" = torch.ops.aten.mul.Tensor(x, 2);  x = None
            return (zeros, mul)

Graph signature:
    # inputs
    x: USER_INPUT

    # outputs
    zeros: USER_OUTPUT
    mul: USER_OUTPUT

Range constraints: {s77: VR[2, int_oo]}
]]

local function shape(t) return tostring(t.shape) end

for _, form in ipairs({{"srepr (torch >= 2.7)", SREPR}, {"str (torch 2.5 - 2.6)", STR}}) do
  T.test("a dynamic program torch wrote, SymExpr as " .. form[1] .. ": prints, runs at several sizes, checks inputs", function()
    local ep = torch.export.load(archive(program(form[2])))
    T.eq(tostring(ep), EXPECTED)
    T.eq(ep.range_constraints.s77.lower, 2)
    T.eq(ep.range_constraints.s77.upper, math.huge)
    local info = ep._shape_info
    T.eq(info.symbols[1].name, "s77")
    T.eq(info.symbols[1].hint, 4)
    T.eq(info.symbols[1].source, "L['x'].size()[0]")
    for _, n in ipairs({2, 4, 9}) do
      local x = torch.arange(n * 3):float():reshape(n, 3)
      local r = fxdb.run(ep, {x})
      T.eq(shape(r.outputs[1]), string.format("torch.Size([%d, 2])", n + 1))
      T.eq(r.outputs[2]:sum():item(), 2 * x:sum():item())
      local z, m = ep:module()(x)
      T.eq(shape(z), string.format("torch.Size([%d, 2])", n + 1))
      T.eq(shape(m), string.format("torch.Size([%d, 3])", n))
    end
    T.checkerr("Expected input at x.shape[0] to be >= 2, but got 1", fxdb.run, ep, {torch.zeros(1, 3)})
    T.checkerr("Expected input at *args[0].shape[1] (x) to be equal to 3, but got 4", fxdb.run, ep, {torch.zeros(5, 4)})
  end)
end

T.test("a torch range with both bounds, and a size expression that is not a bare symbol", function()
  local ep = torch.export.load(archive(program(SREPR, {
    ranges = '{"s77": {"min_val": 3, "max_val": 16}}', zeros_size = SREPR.s1})))
  T.truthy(tostring(ep):find("Range constraints: {s77: VR[3, 16]}", 1, true), tostring(ep))
  T.checkerr("Expected input at x.shape[0] to be <= 16, but got 17", fxdb.run, ep, {torch.zeros(17, 3)})
  T.eq(shape(fxdb.run(ep, {torch.zeros(16, 3)}).outputs[1]), "torch.Size([17, 2])")
  -- 2*s77 + 2 in both forms reads as the same expression
  for _, e in ipairs({SREPR.twice, STR.twice, "2*(s77 + 1)", "(s77+1)*2"}) do
    local ep2 = torch.export.load(archive(program(SREPR, {zeros_size = e})))
    T.truthy(tostring(ep2):find('zeros: "f32[2*s77 + 2, 2]"', 1, true), tostring(ep2))
  end
end)

T.test("malformed or unsupported SymExprs are refused, naming the value and the text", function()
  local cases = {
    {"Foo(Symbol('s77', integer=True))", "the sympy function 'Foo' is not supported by fxdb"},
    {"Add(Symbol('s77', integer=True), ", "unexpected end"},
    {"FloorDiv(Symbol('s77', integer=True), Integer(0))", "integer division or modulo by zero"},
    {"s77 / 2", "true division in a size expression"},
    {"zf0 + 1", "symbol 'zf0' is not one fxdb has"},
    {"s77 + 1)", "unexpected text after the expression"},
    {"Pow(s77, s77)", "a power whose exponent is not a constant"},
    {string.rep("(", 100) .. "s77" .. string.rep(")", 100), "an expression nested more than 64 deep"},
    {string.rep("2**", 100) .. "2", "an expression nested more than 64 deep"},
    {string.rep("-", 100) .. "s77", "an expression nested more than 64 deep"},
  }
  for _, c in ipairs(cases) do
    local path = archive(program(SREPR, {zeros_size = c[1]}))
    T.checkerr("graph_module.graph.tensor_values.zeros.sizes[0].as_expr.expr_str: " .. c[2], torch.export.load, path)
  end
  T.checkerr("graph_module.graph.tensor_values.zeros.sizes[0].as_expr: a relation where an integer belongs",
    torch.export.load, archive(program(SREPR, {zeros_size = "s77 < 3"})))
  T.checkerr("range_constraints.s77: max_val is not an integer or null", torch.export.load,
    archive(program(SREPR, {ranges = '{"s77": {"min_val": 2, "max_val": "big"}}'})))
  T.checkerr("range_constraints.s77: the empty range [5, 3]", torch.export.load,
    archive(program(SREPR, {ranges = '{"s77": {"min_val": 5, "max_val": 3}}'})))
  T.checkerr("op 'math.trunc' is not supported by fxdb", torch.export.load,
    archive(program(SREPR, {add_target = "math.trunc"})))
end)

-- ---- fxdb's own dynamic programs: saved and loaded back ------------------------------------------

local function module(forward)
  local M = nn.Module:extend("M")
  M.forward = forward
  return M()
end

T.test("an fxdb program with guards and derived sizes: same print, shape environment and runs", function()
  local m = module(function(self, x, y)
    local n = x:size(0)
    local h = x:narrow(0, 0, n // 2)
    return torch.cat({x, y}, 0), h * 2, x:view(-1)
  end)
  local b = Dim("b", {min = 2, max = 64})
  local ep = torch.export.export(m, {torch.randn(6, 3), torch.randn(4, 3)},
    {dynamic_shapes = {x = {[0] = b}, y = {[0] = Dim("c")}}})
  local path = tmpfile()
  torch.export.save(ep, path)
  local ep2 = torch.export.load(path)
  T.eq(tostring(ep2), tostring(ep))
  T.eq(tostring(ep2.range_constraints), tostring(ep.range_constraints))
  local g1, g2 = ep._shape_info.guards, ep2._shape_info.guards
  T.truthy(#g1 > 0, "the export recorded guards")
  T.eq(#g2, #g1)
  for i = 1, #g1 do
    T.eq(g2[i].expr, g1[i].expr)
    T.eq(g2[i].loc, g1[i].loc)
    T.eq(g2[i].line, g1[i].line)
    T.eq(g2[i].op, g1[i].op)
  end
  for i, s in ipairs(ep._shape_info.symbols) do
    local s2 = ep2._shape_info.symbols[i]
    T.eq(s2.name, s.name)
    T.eq(s2.source, s.source)
    T.eq(s2.loc, s.loc)
    T.eq(s2.hint, s.hint)
  end
  T.eq(tostring(fxdb.guards(ep2)), tostring(fxdb.guards(ep)))
  T.eq(tostring(fxdb.why("s0", ep2)), tostring(fxdb.why("s0", ep)))
  T.truthy(tostring(fxdb.why("s0", ep2)):find("L['x'].size()[0]", 1, true), tostring(fxdb.why("s0", ep2)))
  for _, sz in ipairs({{2, 1}, {10, 7}, {64, 3}}) do
    local x, y = torch.randn(sz[1], 3), torch.randn(sz[2], 3)
    local r1, r2 = fxdb.run(ep, {x, y}), fxdb.run(ep2, {x, y})
    for k = 1, 3 do
      T.eq(shape(r2.outputs[k]), shape(r1.outputs[k]))
      T.eq(r2.outputs[k]:sub(r1.outputs[k]):abs():sum():item(), 0.0)
    end
  end
  T.checkerr("Expected input at x.shape[0] to be <= 64, but got 65", fxdb.run, ep2, {torch.randn(65, 3), torch.randn(2, 3)})
  T.checkerr("Expected input at *args[0].shape[1] (x) to be equal to 3, but got 4", fxdb.run, ep2, {torch.randn(5, 4), torch.randn(2, 3)})
end)

T.done()
