-- tests/pt2/roundtrip.lua — every export a script makes, saved as a PT2 archive and loaded back.
-- Layer: tests. Usage: fxdb tests/pt2/roundtrip.lua SCRIPT.lua [training]  (tests/pt2/run.sh runs
-- it over examples/ and tests/peer/, both ways). Wraps torch.export.export (made to export the
-- training IR with `training`): after each successful export the program goes through torch.export.save / torch.export.load, and
-- the loaded one must print the same
-- (print(ep), the signature, the raw graph, fxdb.provenance of every mutated input) and run to
-- bit-identical outputs and mutations (fxdb.run and ep:module(), same seed). Prints
-- "roundtrip SCRIPT: N passed, N failed".
local script = assert(arg[1], "usage: fxdb tests/pt2/roundtrip.lua SCRIPT.lua [training]")
local mode = arg[2] or "functional"
local tmp = os.tmpname()
os.remove(tmp)
tmp = tmp .. ".pt2"
local passed, failed = 0, 0

-- bit-for-bit: same dtype, shape and bytes (through safetensors files, NaN payloads included)
local function file_bytes(path)
  local f = assert(io.open(path, "rb"))
  local d = f:read("a")
  f:close()
  return d
end
local function same_tensor(a, b)
  if tostring(a.dtype) ~= tostring(b.dtype) or tostring(a.shape) ~= tostring(b.shape) then
    return false
  end
  torch.save_safetensors({t = a:contiguous()}, tmp .. ".a")
  torch.save_safetensors({t = b:contiguous()}, tmp .. ".b")
  local same = file_bytes(tmp .. ".a") == file_bytes(tmp .. ".b")
  os.remove(tmp .. ".a")
  os.remove(tmp .. ".b")
  return same
end

-- a copy of the example inputs (ep:module() may mutate user inputs in place)
local function clone_args(v)
  if type(v) == "userdata" and v.dtype then return v:clone() end
  if type(v) == "table" then
    local c = {}
    for k, x in pairs(v) do c[k] = clone_args(x) end
    return setmetatable(c, getmetatable(v))
  end
  return v
end

local function same_value(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) == "userdata" and a.dtype then return same_tensor(a, b) end
  if type(a) == "table" then
    for k, v in pairs(a) do if not same_value(v, b[k]) then return false end end
    for k in pairs(b) do if a[k] == nil then return false end end
    return true
  end
  return a == b
end

local function check(what, ok, detail)
  if not ok then error(what .. (detail and (":\n" .. detail) or ""), 0) end
end

local function compare(ep, m, args)
  torch.export.save(ep, tmp)
  local ep2 = torch.export.load(tmp)
  os.remove(tmp)
  check("print(ep)", tostring(ep) == tostring(ep2), tostring(ep) .. "\n--- loaded:\n" .. tostring(ep2))
  check("signature", tostring(ep.graph_signature) == tostring(ep2.graph_signature))
  check("range constraints", tostring(ep.range_constraints) == tostring(ep2.range_constraints))
  -- the shape environment (symbols with ranges and sources, guards, runtime asserts): what
  -- :why / :guards explain a symbolic program from
  local function dump(v)
    if type(v) ~= "table" then return tostring(v) end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. "=" .. dump(v[k]) end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  local s1, s2 = dump(ep._shape_info), dump(ep2._shape_info)
  check("shape environment", s1 == s2, s1 .. "\n--- loaded:\n" .. s2)
  if ep._shape_info then -- :guards and :why s0 read it: the same text for both
    local g1, g2 = tostring(fxdb.guards(ep)), tostring(fxdb.guards(ep2))
    check("fxdb.guards", g1 == g2, g1 .. "\n--- loaded:\n" .. g2)
    for _, sym in ipairs(ep._shape_info.symbols or {}) do
      local w1, w2 = tostring(fxdb.why(sym.name, ep)), tostring(fxdb.why(sym.name, ep2))
      check("fxdb.why " .. sym.name, w1 == w2, w1 .. "\n--- loaded:\n" .. w2)
    end
  end
  check("raw graph", tostring(ep.raw) == tostring(ep2.raw), tostring(ep.raw) .. "\n--- loaded:\n" .. tostring(ep2.raw))
  for _, spec in ipairs(ep.graph_signature.output_specs) do
    if spec.kind ~= "USER_OUTPUT" and spec.kind ~= "TOKEN" then
      local a, b = tostring(fxdb.provenance(ep, spec.target)), tostring(fxdb.provenance(ep2, spec.target))
      check("provenance of " .. spec.target, a == b, a .. "\n--- loaded:\n" .. b)
    end
  end
  for k, v in pairs(ep.state_dict) do check("state_dict " .. k, same_tensor(v, ep2.state_dict[k])) end
  for k in pairs(ep2.state_dict) do check("state_dict has no extra " .. k, ep.state_dict[k] ~= nil) end
  for k, v in pairs(ep.constants) do check("constant " .. k, same_tensor(v, ep2.constants[k])) end
  for k in pairs(ep2.constants) do check("constants has no extra " .. k, ep.constants[k] ~= nil) end
  local okr, r1 = pcall(function() torch.manual_seed(0); return fxdb.run(ep, clone_args(args)) end)
  if okr then
    torch.manual_seed(0)
    local r2 = fxdb.run(ep2, clone_args(args))
    check("fxdb.run outputs", same_value(r1.outputs, r2.outputs))
    check("fxdb.run mutations", same_value(r1.mutations, r2.mutations))
    local okm, o1 = pcall(function() torch.manual_seed(0); return table.pack(ep:module()(table.unpack(clone_args(args)))) end)
    if okm then
      torch.manual_seed(0)
      local o2 = table.pack(ep2:module()(table.unpack(clone_args(args))))
      check("ep:module() outputs", same_value(o1, o2))
    end
  end
end

local export = torch.export.export
torch.export.export = function(m, args, opts)
  if mode == "training" then -- the script's export, as the training IR instead
    local o = {}
    for k, v in pairs(opts or {}) do o[k] = v end
    o.ir = "training"
    opts = o
  end
  local ep = export(m, args, opts)
  local ok, err = pcall(compare, ep, m, args or {})
  if ok then
    passed = passed + 1
  else
    failed = failed + 1
    io.stderr:write("ROUNDTRIP FAIL (" .. script .. ", " .. mode .. "): " .. tostring(err) .. "\n")
  end
  return ep
end
-- the script's own verdict does not matter here (in training mode its expectations are the
-- functional program's); only the round trips are counted
os.exit = function() error("(script called os.exit)", 0) end

local chunk = assert(loadfile(script))
local ok, err = pcall(chunk)
if not ok then io.stderr:write("(script error: " .. tostring(err) .. ")\n") end
print(string.format("roundtrip %s (%s): %d passed, %d failed", script, mode, passed, failed))
