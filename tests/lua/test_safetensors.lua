-- tests/lua/test_safetensors.lua — torch.save_safetensors / load_safetensors / safe_open,
-- nn.Module:load_state_dict from a .safetensors path, and torch.set_default_device("meta").
-- Layer: tests. Malformed files are written byte by byte here (string.pack of the 8-byte
-- little-endian header length, the JSON header, data) so the reader is checked against the
-- format, not against fxdb's own writer.
local T = dofile("tests/lua/harness.lua")

local path = os.tmpname() .. ".safetensors"

local function write_raw(header, data, hlen)
  local f = assert(io.open(path, "wb"))
  f:write(string.pack("<I8", hlen or #header), header, data or "")
  f:close()
end

local function same(a, b)
  if a.dtype ~= b.dtype or not (a.shape == b.shape) then return false end
  local x, y = a:to(torch.float64):reshape(-1):tolist(), b:to(torch.float64):reshape(-1):tolist()
  for i = 1, #x do if x[i] ~= y[i] then return false end end
  return #x == #y
end

T.test("round trip keeps names, order, dtypes, shapes and values", function()
  local sd = nn._ordered_dict and nn._ordered_dict() or {}
  local items = {
    {"model.embed_tokens.weight", torch.randn(5, 3)},
    {"a.half", torch.randn(4):half()},
    {"a.bf16", torch.randn(2, 2):to(torch.bfloat16)},
    {"ids", torch.tensor({{1, 2, 3}, {-4, 5, 6}})},
    {"mask", torch.tensor({true, false, true})},
    {"i32", torch.tensor({7, 8}, torch.int32)},
    {"scalar", torch.tensor(2.5)},
    {"t", torch.randn(3, 4):t()},                  -- non-contiguous
  }
  local sd2 = {}
  for _, kv in ipairs(items) do sd2[kv[1]] = kv[2] end
  torch.save_safetensors(sd2, path, {format = "pt", note = "fxdb"})
  local back, meta = torch.load_safetensors(path)
  T.eq(meta.format, "pt")
  T.eq(meta.note, "fxdb")
  local keys = back:keys()
  T.eq(#keys, #items)
  for i = 2, #keys do T.truthy(keys[i - 1] < keys[i], "plain tables are saved in sorted order") end
  for _, kv in ipairs(items) do
    T.truthy(same(back[kv[1]], kv[2]), kv[1])
    T.eq(back[kv[1]].dtype, kv[2].dtype, kv[1])
  end
  T.truthy(back.t:is_contiguous())
end)

T.test("a module's state_dict keeps its order", function()
  local m = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
  torch.save_safetensors(m:state_dict(), path)
  local back = torch.load_safetensors(path)
  local want = m:state_dict():keys()
  local got = back:keys()
  for i = 1, #want do T.eq(got[i], want[i]) end
end)

T.test("safe_open reads lazily", function()
  torch.save_safetensors({w = torch.ones(2, 3), b = torch.zeros(3, torch.int64)}, path)
  local f <close> = torch.safe_open(path)
  T.eq(tostring(f), "safe_open (2 tensors)")
  T.eq(#f:keys(), 2)
  T.truthy(f:shape("w") == torch.Size({2, 3}))
  T.eq(f:dtype("b"), torch.int64)
  T.truthy(same(f:get_tensor("w"), torch.ones(2, 3)))
  T.checkerr("File does not contain tensor nope", f.get_tensor, f, "nope")
  f:close()
  T.checkerr("attempt to use a closed safetensors file", f.keys, f)
end)

T.test("load_state_dict from a path", function()
  torch.manual_seed(1)
  local a, b = nn.Linear(3, 2), nn.Linear(3, 2)
  torch.save_safetensors(a:state_dict(), path)
  local r = b:load_state_dict(path)
  T.eq(#r.missing_keys, 0)
  T.truthy(same(a.weight, b.weight))
  T.truthy(same(a.bias, b.bias))
  -- half weights load into a float32 module (copy_ converts)
  torch.save_safetensors({weight = a.weight:half(), bias = a.bias:half()}, path)
  b:load_state_dict(path)
  T.truthy(same(b.weight, a.weight:half():float()))
end)

T.test("load_state_dict errors: missing, unexpected, size mismatch", function()
  local m = nn.Linear(3, 2)
  torch.save_safetensors({weight = torch.zeros(2, 3)}, path)
  T.checkerr('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias". ',
             m.load_state_dict, m, path)
  torch.save_safetensors({weight = torch.zeros(2, 3), bias = torch.zeros(2), extra = torch.zeros(1)}, path)
  T.checkerr('Unexpected key(s) in state_dict: "extra". ', m.load_state_dict, m, path)
  local r = m:load_state_dict(path, {strict = false})
  T.eq(r.unexpected_keys[1], "extra")
  torch.save_safetensors({weight = torch.zeros(3, 3), bias = torch.zeros(2)}, path)
  T.checkerr("size mismatch for weight: copying a param with shape torch.Size([3, 3]) from " ..
             "checkpoint, the shape in current model is torch.Size([2, 3]).", m.load_state_dict, m, path)
end)

T.test("load errors name the problem and the byte offset", function()
  local function entry(name, dt, shape, b, e)
    return string.format('"%s":{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}', name, dt, shape, b, e)
  end
  local cases = {
    {function() local f = io.open(path, "wb"); f:write("xy"); f:close() end, "the file is 2 bytes long"},
    {function() write_raw("{}", "", 99) end, "the header length at byte 0 says 99 bytes, but only 2 bytes follow it"},
    {function() write_raw("[]") end, "must be a JSON object starting with '{'"},
    {function() write_raw('{"a":') end, "the header is not valid JSON (error near file byte"},
    {function() write_raw("{" .. entry("w", "F32", "[2]", 0, 4) .. "}", "1234") end,
     "tensor 'w': data_offsets [0, 4] hold 4 bytes"},
    {function() write_raw("{" .. entry("w", "Q8", "[1]", 0, 4) .. "}", "1234") end, 'unknown dtype "Q8"'},
    {function() write_raw("{" .. entry("w", "U32", "[1]", 0, 4) .. "}", "1234") end,
     "has dtype U32, which fxdb does not support"},
    {function() write_raw("{" .. entry("w", "F32", "[1]", 0, 4) .. "}", "12345678") end,
     "4 bytes of data after the last tensor"},
    {function() write_raw("{" .. entry("w", "F32", "[2]", 0, 8) .. "}", "1234") end, "the file is truncated"},
    {function() write_raw("{" .. entry("a", "U8", "[1]", 0, 1) .. "," .. entry("b", "U8", "[1]", 2, 3) .. "}", "123") end,
     "gap in the data section: bytes 1 to 2"},
  }
  for _, c in ipairs(cases) do
    c[1]()
    local e = T.checkerr(c[2], torch.load_safetensors, path)
    T.eq(e.kind, "safetensors")
    T.checkerr(c[2], function() nn.Linear(1, 1):load_state_dict(path) end)
  end
  os.remove(path)
  T.checkerr("cannot open the file for reading", torch.load_safetensors, path)
end)

T.test("save errors", function()
  T.checkerr("value of 'w' is a number, Tensor expected", torch.save_safetensors, {w = 1}, path)
  T.checkerr("tensor 'w' is on the meta device", torch.save_safetensors,
             {w = torch.zeros(2, {device = "meta"})}, path)
  T.checkerr("metadata must map strings to strings", torch.save_safetensors, {w = torch.zeros(1)}, path, {a = 1})
end)

T.test("set_default_device('meta') builds modules without data", function()
  local before = torch._memory_stats().live_bytes
  torch.set_default_device("meta")
  local ok, m = pcall(nn.Linear, 4096, 11008)
  torch.set_default_device("cpu")
  assert(ok, m)
  T.eq(m.weight.device, "meta")
  T.truthy(torch._memory_stats().live_bytes - before < 1000000, "no weight bytes allocated")
  T.eq(torch.get_default_device(), "cpu")
  T.eq(torch.zeros(2).device, "cpu")
  T.checkerr("unsupported device 'cuda'", torch.set_default_device, "cuda")
end)

os.remove(path)
T.done()
