-- tests/pt2/test_archives.lua — archives built by hand: the JSON and the bytes are written here,
-- following torch/_export/serde/schema.py and the PT2 archive layout (package_pt2), not by fxdb's
-- writer; the earlier torch.export.save layout with a hand-made torch.save pickle; and every kind
-- of malformed file, each refused with a message naming the record and what is wrong.
-- Layer: tests. Run: build/fxdb tests/pt2/test_archives.lua
local T = dofile("tests/lua/harness.lua")

local tmpbase = os.tmpname()
os.remove(tmpbase)
local ntmp = 0
local function tmpfile(ext)
  ntmp = ntmp + 1
  return tmpbase .. "_" .. ntmp .. (ext or ".pt2")
end

local function f32(...)
  local t = {}
  for i, v in ipairs({...}) do t[i] = string.pack("<f", v) end
  return table.concat(t)
end

local function readall(path)
  local f = assert(io.open(path, "rb"))
  local d = f:read("a")
  f:close()
  return d
end

-- ---- a program as torch.export.save writes it for -------------------------------------------
--   class M(torch.nn.Module):
--       def __init__(self):
--           super().__init__()
--           self.register_buffer("state", torch.zeros(3))
--       def forward(self, x):
--           self.state.mul_(x)       # line 8
--           return self.state + 1    # line 9
local function stack(line, code)
  return string.format('  File \\"/work/m.py\\", line %d, in forward\\n    %s\\n', line, code)
end
local function tensor_meta(sizes, strides)
  local s, st = {}, {}
  for i, v in ipairs(sizes) do s[i] = '{"as_int": ' .. v .. '}' end
  for i, v in ipairs(strides) do st[i] = '{"as_int": ' .. v .. '}' end
  return '{"dtype": 7, "sizes": [' .. table.concat(s, ", ") .. '], "requires_grad": false, ' ..
    '"device": {"type": "cpu", "index": null}, "strides": [' .. table.concat(st, ", ") ..
    '], "storage_offset": {"as_int": 0}, "layout": 7}'
end

-- o.nodes replaces the two nodes (their JSON); o.mut / o.out name the buffer mutation and the
-- user output (both f32[3] values listed in tensor_values)
local function program_json(o)
  o = o or {}
  local mul_target = o.mul_target or "torch.ops.aten.mul.Tensor"
  local mut, out = o.mut or "mul", o.out or "add"
  local nodes = o.nodes or [[
        {"target": "]] .. mul_target .. [[",
         "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "b_state"}}, "kind": 1},
                    {"name": "other", "arg": ]] .. (o.other or '{"as_tensor": {"name": "x"}}') .. [[, "kind": 1}],
         "outputs": [{"as_tensor": {"name": "mul"}}],
         "metadata": {"stack_trace": "]] .. stack(8, "self.state.mul_(x)") .. [[",
                      "nn_module_stack": "L__self__,,__main__.M",
                      "from_node": "[{\"name\": \"mul_\", \"target\": \"aten.mul_.Tensor\", \"graph_id\": 1, \"pass_name\": \"Interpreter_FunctionalTensorMode\", \"action\": [\"create\"], \"from_node\": []}]"},
         "is_hop_single_tensor_return": null},
        {"target": "torch.ops.aten.add.Tensor",
         "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "mul"}}, "kind": 1},
                    {"name": "other", "arg": {"as_int": 1}, "kind": 1}],
         "outputs": [{"as_tensor": {"name": "add"}}],
         "metadata": {"stack_trace": "]] .. stack(9, "return self.state + 1") .. [["}}
]]
  return [[{
  "graph_module": {
    "graph": {
      "inputs": [{"as_tensor": {"name": "b_state"}}, {"as_tensor": {"name": "x"}}],
      "outputs": [{"as_tensor": {"name": "]] .. mut .. [["}}, {"as_tensor": {"name": "]] .. out .. [["}}],
      "nodes": [
]] .. nodes .. [[
      ],
      "tensor_values": {"b_state": ]] .. tensor_meta({3}, {1}) .. [[, "x": ]] .. tensor_meta({3}, {1}) ..
      [[, "]] .. mut .. [[": ]] .. tensor_meta({3}, {1}) .. [[, "]] .. out .. [[": ]] .. tensor_meta({3}, {1}) .. [[},
      "sym_int_values": {}, "sym_bool_values": {}, "is_single_tensor_return": false,
      "custom_obj_values": {}, "sym_float_values": {}
    },
    "signature": {
      "input_specs": [
        {"buffer": {"arg": {"name": "b_state"}, "buffer_name": "state", "persistent": true}},
        {"user_input": {"arg": {"as_tensor": {"name": "x"}}}}],
      "output_specs": [
        {"buffer_mutation": {"arg": {"name": "]] .. mut .. [["}, "buffer_name": "state"}},
        {"user_output": {"arg": {"as_tensor": {"name": "]] .. out .. [["}}}}]
    },
    "module_call_graph": [{"fqn": "", "signature": null}],
    "metadata": {},
    "treespec_namedtuple_fields": {}
  },
  "opset_version": {"aten": 10},
  "range_constraints": {},
  "schema_version": {"major": ]] .. (o.major or 8) .. [[, "minor": ]] .. (o.minor or 10) .. [[},
  "verifiers": [],
  "torch_version": "2.9.0",
  "guards_code": []
}]]
end

local WEIGHTS_CONFIG = '{"config": {"state": {"path_name": "weight_0", "is_param": false, ' ..
  '"use_pickle": false, "tensor_meta": ' .. tensor_meta({3}, {1}) .. '}}}'

-- entries of a PT2 archive (torch >= 2.9 layout) under root "m/", overridable by name
local function archive(over)
  over = over or {}
  local e = {
    {"m/archive_format", "pt2"},
    {"m/archive_version", "0"},
    {"m/byteorder", "little"},
    {"m/.data/version", "6"},
    {"m/.data/serialization_id", "1234567890123456789"},
    {"m/models/model.json", program_json()},
    {"m/data/weights/model_weights_config.json", WEIGHTS_CONFIG},
    {"m/data/weights/weight_0", f32(2, 3, 4)},
    {"m/data/constants/model_constants_config.json", '{"config": {}}'},
    {"m/data/sample_inputs/model.pt", ""},
  }
  for _, kv in ipairs(e) do
    if over[kv[1]] ~= nil then kv[2] = over[kv[1]] end
  end
  local out = {}
  for _, kv in ipairs(e) do if kv[2] ~= false then out[#out + 1] = kv end end
  for _, kv in ipairs(over.extra or {}) do out[#out + 1] = kv end
  return out
end

local function write(entries)
  local path = tmpfile()
  fxdb._zip_write(path, entries)
  return path
end

local EXPECTED = [[
ExportedProgram:
    class GraphModule(torch.nn.Module):
        def forward(self, b_state: "f32[3]", x: "f32[3]"):
             # File: /work/m.py:8 in forward, code: self.state.mul_(x)
            mul: "f32[3]" = torch.ops.aten.mul.Tensor(b_state, x);  b_state = x = None

             # File: /work/m.py:9 in forward, code: return self.state + 1
            add: "f32[3]" = torch.ops.aten.add.Tensor(mul, 1)
            return (mul, add)

Graph signature:
    # inputs
    b_state: BUFFER target='state' persistent=True
    x: USER_INPUT

    # outputs
    mul: BUFFER_MUTATION target='state'
    add: USER_OUTPUT

Range constraints: {}
]]

T.test("a hand-built PT2 archive loads, prints, runs and explains", function()
  local ep = torch.export.load(write(archive()))
  T.eq(tostring(ep), EXPECTED)
  T.eq(ep.state_dict.state:tolist()[2], 3.0)
  local r = fxdb.run(ep, {torch.tensor({1.0, 2, 3})})
  T.eq(table.concat(r.outputs[1]:tolist(), ","), "3.0,7.0,13.0")
  T.eq(table.concat(r.mutations.state:tolist(), ","), "2.0,6.0,12.0")
  local m = ep:module()
  T.eq(table.concat(m(torch.tensor({1.0, 1, 1})):tolist(), ","), "3.0,4.0,5.0")
  -- no fxdb mutation records: :why walks the graph from the output back to the placeholder
  local why = tostring(fxdb.provenance(ep, "state"))
  T.truthy(why:find("state  (BUFFER, output mul; no mutation records", 1, true), why)
  T.truthy(why:find("v0  b_state", 1, true), why)
  T.truthy(why:find("v1  mul = aten.mul.Tensor  from mul_ ", 1, true), why)
  T.truthy(why:find("/work/m.py:8  self.state.mul_(x)", 1, true), why)
end)

T.test("the same archive saved again by fxdb loads to the same program", function()
  local ep = torch.export.load(write(archive()))
  local path = tmpfile()
  torch.export.save(ep, path)
  T.eq(tostring(torch.export.load(path)), EXPECTED)
end)

T.test("an archive without a root folder and with several models picks models/model.json", function()
  local e = {}
  for _, kv in ipairs(archive()) do e[#e + 1] = {kv[1]:sub(3), kv[2]} end
  e[#e + 1] = {"models/other.json", "{}"}
  T.eq(tostring(torch.export.load(write(e))), EXPECTED)
end)

T.test("an ATen op fxdb does not have loads and prints; running names every such op", function()
  local path = write(archive({["m/models/model.json"] = program_json({mul_target = "torch.ops.aten.special_zeta.default"})}))
  local ep = torch.export.load(path)
  T.truthy(tostring(ep):find("torch.ops.aten.special_zeta.default(b_state, x)", 1, true), tostring(ep))
  T.truthy(tostring(fxdb.provenance(ep, "state")):find("aten.special_zeta.default", 1, true))
  T.checkerr("fxdb has no kernel for aten.special_zeta.default", fxdb.run, ep, {torch.ones(3)})
  T.checkerr("fxdb has no kernel for aten.special_zeta.default", function() ep:module()(torch.ones(3)) end)
end)

T.test("a custom op not registered here loads like an unknown ATen op; registered, it runs", function()
  local path = write(archive({["m/models/model.json"] = program_json({mul_target = "torch.ops.pt2test.mix.default"})}))
  local ep = torch.export.load(path)
  T.truthy(tostring(ep):find("torch.ops.pt2test.mix.default(b_state, x)", 1, true), tostring(ep))
  T.truthy(tostring(fxdb.provenance(ep, "state")):find("pt2test.mix.default", 1, true))
  T.checkerr("fxdb has no kernel for pt2test.mix.default", fxdb.run, ep, {torch.ones(3)})
  -- the same file once the op is registered (torch.library): the node is the op, and runs
  torch.library.define("pt2test::mix", "(Tensor self, Tensor other) -> Tensor")
  torch.library.impl("pt2test::mix", "cpu", function(a, b) return a * b + 1 end)
  torch.library.register_fake("pt2test::mix", function(a, b) return torch.empty_like(a) end)
  ep = torch.export.load(path)
  T.truthy(tostring(ep):find("torch.ops.pt2test.mix.default(b_state, x)", 1, true), tostring(ep))
  local r = fxdb.run(ep, {torch.tensor({1.0, 2, 3})})
  T.eq(table.concat(r.mutations.state:tolist(), ","), "3.0,7.0,13.0")
  -- a name that is no op is still refused
  T.checkerr("op 'torch.ops.pt2test..default' is not supported by fxdb", torch.export.load,
    write(archive({["m/models/model.json"] = program_json({mul_target = "torch.ops.pt2test..default"})})))
end)

-- auto_functionalized as torch.export writes it for a mutating custom op: the op as_operator,
-- its arguments as keywords (here out of schema order); outputs (returns..., new values...)
local function af_program(op)
  return program_json({mut = "getitem_1", out = "getitem", nodes = [[
        {"target": "torch.ops.higher_order.auto_functionalized",
         "inputs": [{"name": "", "arg": {"as_operator": "]] .. op .. [["}, "kind": 1},
                    {"name": "k", "arg": {"as_float": 2.0}, "kind": 2},
                    {"name": "buf", "arg": {"as_tensor": {"name": "b_state"}}, "kind": 2},
                    {"name": "x", "arg": {"as_tensor": {"name": "x"}}, "kind": 2}],
         "outputs": [{"as_tensor": {"name": "getitem"}}, {"as_tensor": {"name": "getitem_1"}}],
         "metadata": {"stack_trace": "]] .. stack(8, "torch.ops.pt2test.acc(x, self.state, 2.0)") .. [["},
         "is_hop_single_tensor_return": null}
]]})
end

T.test("auto_functionalized of a custom op: unregistered it loads and names the op; registered it runs", function()
  local path = write(archive({["m/models/model.json"] = af_program("torch.ops.pt2test.acc.default")}))
  local ep = torch.export.load(path)
  T.truthy(tostring(ep):find("auto_functionalized", 1, true), tostring(ep))
  T.checkerr("fxdb has no kernel for pt2test.acc.default", fxdb.run, ep, {torch.ones(3)})
  torch.library.define("pt2test::acc", "(Tensor x, Tensor(a!) buf, float k) -> Tensor")
  torch.library.impl("pt2test::acc", "cpu", function(x, buf, k) buf:add_(x); return buf * k end)
  torch.library.register_fake("pt2test::acc", function(x, buf, k) return torch.empty_like(x) end)
  ep = torch.export.load(path)
  local text = tostring(ep)
  T.truthy(text:find("torch.ops.higher_order.auto_functionalized(torch.ops.pt2test.acc.default, x = x, buf = b_state, k = 2.0)", 1, true), text)
  local r = fxdb.run(ep, {torch.tensor({1.0, 2, 3})})
  T.eq(table.concat(r.mutations.state:tolist(), ","), "3.0,5.0,7.0")
  T.eq(table.concat(r.outputs[1]:tolist(), ","), "6.0,10.0,14.0")
  -- saved again by fxdb: the op as_operator, the arguments by name; loads to the same program
  local p2 = tmpfile()
  torch.export.save(ep, p2)
  T.eq(tostring(torch.export.load(p2)), text)
  T.checkerr("'bogus' is not an argument of pt2test.acc.default", torch.export.load,
    write(archive({["m/models/model.json"] = af_program("torch.ops.pt2test.acc.default"):gsub('"name": "k"', '"name": "bogus"')})))
end)

-- ---- torch 2.8: weights as a torch.save file inside the archive; the earlier layout ------------

-- The pickle torch.save writes (protocol 2) for OrderedDict(state=tensor of 3 floats in storage
-- "0"), opcode by opcode.
local function X(s) return "X" .. string.pack("<I4", #s) .. s end
local function state_dict_pickle(name, storage_type, numel, global)
  return table.concat({
    "\x80\x02",
    "ccollections\nOrderedDict\nq\x00)Rq\x01(",
    X(name), "q\x02",
    global or "ctorch._utils\n_rebuild_tensor_v2\n", "q\x03",
    "((", X("storage"), "q\x04", "ctorch\n" .. storage_type .. "\nq\x05", X("0"), "q\x06", X("cpu"), "q\x07",
    "K" .. string.char(numel), "tq\x08Q",
    "K\x00", "K" .. string.char(numel) .. "\x85q\x09", "K\x01\x85q\x0a", "\x89",
    "h\x00)Rq\x0b", "tq\x0cRq\x0d",
    "u}q\x0eb.",
  })
end

local function torch_save_zip(pkl, storage)
  local path = tmpfile(".pt")
  fxdb._zip_write(path, {{"archive/data.pkl", pkl}, {"archive/byteorder", "little"},
    {"archive/data/0", storage}, {"archive/version", "3"}})
  return readall(path)
end

T.test("torch 2.8's layout: data/weights/model.pt holds the state dict as a torch.save file", function()
  local sd = torch_save_zip(state_dict_pickle("state", "FloatStorage", 3), f32(2, 3, 4))
  local ep = torch.export.load(write(archive({
    ["m/data/weights/model_weights_config.json"] = false, ["m/data/weights/weight_0"] = false,
    ["m/data/constants/model_constants_config.json"] = false,
    extra = {{"m/data/weights/model.pt", sd}}})))
  T.eq(tostring(ep), EXPECTED)
  T.eq(table.concat(ep.state_dict.state:tolist(), ","), "2.0,3.0,4.0")
end)

T.test("the layout of torch 2.5 - 2.7 (serialized_exported_program.json) loads", function()
  local sd = torch_save_zip(state_dict_pickle("state", "FloatStorage", 3), f32(5, 6, 7))
  local consts = torch_save_zip("\x80\x02}q\x00.", "")
  local ep = torch.export.load(write({
    {"serialized_exported_program.json", program_json()},
    {"serialized_state_dict.pt", sd},
    {"serialized_constants.pt", consts},
    {"serialized_example_inputs.pt", ""},
    {"version", "8.10"},
  }))
  T.eq(tostring(ep), EXPECTED)
  T.eq(table.concat(ep.state_dict.state:tolist(), ","), "5.0,6.0,7.0")
  local r = fxdb.run(ep, {torch.tensor({1.0, 2, 3})})
  T.eq(table.concat(r.mutations.state:tolist(), ","), "5.0,12.0,21.0")
end)

T.test("a pickle that calls anything else is refused by name", function()
  local evil = torch_save_zip(state_dict_pickle("state", "FloatStorage", 3, "cos\nsystem\n"), f32(1, 2, 3))
  T.checkerr("global 'os.system'", torch.export.load, write({
    {"serialized_exported_program.json", program_json()}, {"serialized_state_dict.pt", evil}}))
  local bad_op = torch_save_zip("\x80\x02}q\x00\x8b.", "")
  T.checkerr("pickle opcode 0x8b", torch.export.load, write({
    {"serialized_exported_program.json", program_json()}, {"serialized_state_dict.pt", bad_op}}))
  local short = torch_save_zip(state_dict_pickle("state", "FloatStorage", 3), f32(1, 2))
  T.checkerr("storage 0 holds 8 bytes, but 3 float32 elements need 12", torch.export.load, write({
    {"serialized_exported_program.json", program_json()}, {"serialized_state_dict.pt", short}}))
  local trunc = torch_save_zip(state_dict_pickle("state", "FloatStorage", 3):sub(1, 40), f32(1, 2, 3))
  T.checkerr("truncated", torch.export.load, write({
    {"serialized_exported_program.json", program_json()}, {"serialized_state_dict.pt", trunc}}))
end)

-- ---- malformed archives ---------------------------------------------------------------------------

T.test("a truncated zip is not a readable archive", function()
  local full = readall(write(archive()))
  for _, n in ipairs({0, 10, 100, #full // 2, #full - 10}) do
    local path = tmpfile()
    local f = assert(io.open(path, "wb"))
    f:write(full:sub(1, n))
    f:close()
    T.checkerr("not a readable zip archive", torch.export.load, path)
  end
  T.checkerr("cannot open", torch.export.load, tmpbase .. "_does_not_exist.pt2")
end)

T.test("wrong archive_format, wrong archive_version, no archive_format", function()
  T.checkerr("m/archive_format is 'zip', not 'pt2'", torch.export.load, write(archive({["m/archive_format"] = "zip"})))
  T.checkerr("archive_version is '7'", torch.export.load, write(archive({["m/archive_version"] = "7"})))
  T.checkerr("not a PT2 archive", torch.export.load, write({{"hello.txt", "hi"}}))
  T.checkerr("holds no program", torch.export.load, write(archive({["m/models/model.json"] = false})))
end)

T.test("an unknown schema version names it and the one supported", function()
  local e = T.checkerr("schema version 7.3 is not supported: fxdb reads schema 8.x", torch.export.load,
    write(archive({["m/models/model.json"] = program_json({major = 7, minor = 3})})))
  T.truthy(tostring(e):find("models/model.json", 1, true))
  T.checkerr("schema version 9.0 is not supported", torch.export.load,
    write(archive({["m/models/model.json"] = program_json({major = 9, minor = 0})})))
end)

T.test("JSON of the wrong shape names the file and the path", function()
  local function load_json(text) return torch.export.load(write(archive({["m/models/model.json"] = text}))) end
  T.checkerr("models/model.json: not valid JSON", load_json, "{")
  T.checkerr("models/model.json: missing field 'graph_module'",
    load_json, '{"schema_version": {"major": 8, "minor": 1}}')
  local j = program_json():gsub('"inputs": %[{"as_tensor": {"name": "b_state"}}', '"inputs": {"x": 1}, "zz": [{"a": 1}', 1)
  T.checkerr("graph_module.graph.inputs: expected an array, got an object", load_json, j)
  T.checkerr("graph_module.graph.nodes[0].inputs[1].arg: expected one field (a union), got 2", load_json,
    program_json({other = '{"as_int": 1, "as_float": 2.0}'}))
  T.checkerr("nodes[0].inputs[1].arg.as_int: expected an integer, got a string", load_json,
    program_json({other = '{"as_int": "one"}'}))
  -- a number beyond int64's range is no integer (converting it was undefined behaviour: fuzz-load)
  T.checkerr("nodes[0].inputs[1].arg.as_int: expected an integer, got a number", load_json,
    program_json({other = '{"as_int": 4.44444e60}'}))
  T.checkerr("refers to 'nope', which no earlier node defines", load_json,
    program_json({other = '{"as_tensor": {"name": "nope"}}'}))
  T.checkerr("argument 'other' of aten.mul.Tensor cannot be a string", load_json,
    program_json({other = '{"as_string": "hi"}'}))
end)

T.test("unknown argument kinds and op kinds are named", function()
  local function load_json(text) return torch.export.load(write(archive({["m/models/model.json"] = text}))) end
  T.checkerr("unknown argument kind 'as_quux'", load_json, program_json({other = '{"as_quux": 1}'}))
  T.checkerr("argument kind 'as_custom_obj' is not supported by fxdb", load_json,
    program_json({other = '{"as_custom_obj": {"name": "obj", "class_fqn": "__torch__.Foo"}}'}))
  T.checkerr("op 'my_lib.frobnicate' is not supported by fxdb", load_json, program_json({mul_target = "my_lib.frobnicate"}))
end)

T.test("weights whose size disagrees with their meta", function()
  T.checkerr("data/weights/weight_0 holds 8 bytes, but a float32 tensor of 3 elements with these strides needs 12",
    torch.export.load, write(archive({["m/data/weights/weight_0"] = f32(1, 2)})))
  T.checkerr("holds 13 bytes, not a whole number of float32 elements",
    torch.export.load, write(archive({["m/data/weights/weight_0"] = f32(1, 2, 3) .. "x"})))
  T.checkerr("BUFFER 'state' has no weight in the archive", torch.export.load,
    write(archive({["m/data/weights/model_weights_config.json"] = '{"config": {}}'})))
  local wrong_shape = WEIGHTS_CONFIG:gsub('"sizes": %[{"as_int": 3}%]', '"sizes": [{"as_int": 2}]')
  T.checkerr("BUFFER 'state' is f32[2] in the archive, but its placeholder b_state is f32[3]",
    torch.export.load, write(archive({["m/data/weights/model_weights_config.json"] = wrong_shape})))
end)

T.test("paths escaping the archive", function()
  T.checkerr("entry 'm/../evil' escapes the archive", torch.export.load,
    write(archive({extra = {{"m/../evil", "x"}}})))
  T.checkerr("entry '/etc/passwd' escapes the archive", torch.export.load,
    write(archive({extra = {{"/etc/passwd", "x"}}})))
  local esc = WEIGHTS_CONFIG:gsub('"weight_0"', '"../../weight_0"')
  T.checkerr("'../../weight_0' escapes data/weights/", torch.export.load,
    write(archive({["m/data/weights/model_weights_config.json"] = esc})))
end)

T.test("a signature that disagrees with the graph", function()
  local j = program_json():gsub('"buffer_name": "state", "persistent": true', '"buffer_name": "state", "persistent": true}}, {"user_input": {"arg": {"as_tensor": {"name": "y"}}', 1)
  T.checkerr("input_specs[1] names 'y', but graph input 1 is 'x'", torch.export.load, write(archive({["m/models/model.json"] = j})))
  j = program_json():gsub('"buffer_mutation": {"arg": {"name": "mul"}, "buffer_name": "state"}', '"buffer_mutation": {"arg": {"name": "mul"}, "buffer_name": "ghost"}', 1)
  T.checkerr("mutates 'ghost', which is not an input of that kind", torch.export.load, write(archive({["m/models/model.json"] = j})))
end)

T.test("a weight's tensor_meta cannot have a symbolic size (tests/pt2/test_dynamic.lua has the graph's)", function()
  local cfg = WEIGHTS_CONFIG:gsub('"sizes": %[{"as_int": 3}%]',
    '"sizes": [{"as_expr": {"expr_str": "s0", "hint": {"as_int": 3}}}]', 1)
  T.checkerr("config.state.tensor_meta.sizes[0].as_expr.expr_str: a symbolic size (s0) where only concrete sizes can be",
    torch.export.load, write(archive({["m/data/weights/model_weights_config.json"] = cfg})))
end)

T.test("fxdb's archive: every record's bytes start at a multiple of 64, .data/serialization_id ends it", function()
  local ep = torch.export.load(write(archive()))
  local path = tmpfile()
  torch.export.save(ep, path)
  local d = readall(path)
  local pos, names, ids = 1, {}, {}
  while d:sub(pos, pos + 3) == "PK\3\4" do
    local _, _, _, method, _, _, _, csize, _, nlen, elen = string.unpack("<I4I2I2I2I2I2I4I4I4I2I2", d, pos)
    local name = d:sub(pos + 30, pos + 29 + nlen)
    local extra = d:sub(pos + 30 + nlen, pos + 29 + nlen + elen)
    local data_at = pos - 1 + 30 + nlen + elen -- 0-based offset of the record's bytes
    T.eq(data_at % 64, 0, name .. " starts at " .. data_at)
    T.eq(method, 0, name .. " is stored")
    T.eq(extra:sub(1, 2), "FB", name .. " pads with an FB extra field")
    names[#names + 1] = name
    ids[name] = d:sub(data_at + 1, data_at + csize)
    pos = data_at + 1 + csize
  end
  local id = ids[names[#names]]
  T.truthy(names[#names]:match("/%.data/serialization_id$"), names[#names])
  T.truthy(id:match("^%d+$") and #id == 40, id)
  T.eq(ids[names[1]:match("^[^/]*/") .. ".data/version"], "6\n")
  -- the same program saved again to the same name gives the same id (it depends on the
  -- contents only)
  torch.export.save(ep, path)
  T.truthy(readall(path):find(id, 1, true), "the id is deterministic")
end)

T.test("a failed load leaves the previous program alone", function()
  local ep = torch.export.load(write(archive()))
  pcall(torch.export.load, write(archive({["m/archive_format"] = "zip"})))
  T.eq(tostring(ep), EXPECTED)
end)

T.done()
