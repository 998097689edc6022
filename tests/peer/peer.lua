-- tests/peer/peer.lua — helpers shared by the ExportDB ports (tests/peer/test_*.lua).
-- Layer: tests. Usage: local P = dofile("tests/peer/peer.lua")
-- What every port asserts about an exported program: its op sequence (node names and targets),
-- its signature (tostring of every input and output spec), and its numbers (fxdb.run and the
-- unlifted module against the eager module, bit for bit on clones of the inputs).
local T = dofile("tests/lua/harness.lua")
local P = {T = T}

-- "placeholder:x mul=aten.mul.Tensor ... output:output": every node of ep.graph in order.
function P.ops(ep)
  local seq = {}
  for _, n in ipairs(ep.graph.nodes) do
    seq[#seq + 1] = n.op == "call_function" and (n.name .. "=" .. n.target) or (n.op .. ":" .. n.name)
  end
  return table.concat(seq, " ")
end

-- The signature as 2.10 prints it: input specs, one a line; output specs, one a line.
function P.sig(ep)
  local ins, outs = {}, {}
  for _, s in ipairs(ep.graph_signature.input_specs) do ins[#ins + 1] = tostring(s) end
  for _, s in ipairs(ep.graph_signature.output_specs) do outs[#outs + 1] = tostring(s) end
  return table.concat(ins, "\n"), table.concat(outs, "\n")
end

-- Asserts the op sequence and the signature in one go.
function P.program(ep, ops, ins, outs)
  T.eq(P.ops(ep), ops, "op sequence")
  local i, o = P.sig(ep)
  T.eq(i, ins, "input specs")
  T.eq(o, outs, "output specs")
  T.falsy(tostring(ep.graph):find("_%.[%a_]+%]"), "no in-place op in the functional graph")
end

-- Every element of a tensor as a flat Lua list (row-major).
local function flat(t)
  local out = {}
  local function walk(v)
    if type(v) == "table" then
      for _, x in ipairs(v) do walk(x) end
    else
      out[#out + 1] = v
    end
  end
  walk(t:tolist())
  return out
end
P.flat = flat

-- True when a and b are tensors of the same dtype and shape with the same bits (-0 differs from
-- 0, NaN equals NaN); else false and a description of the first difference.
function P.same(a, b)
  if not torch.is_tensor(a) or not torch.is_tensor(b) then
    return a == b, "non-tensor values " .. tostring(a) .. " and " .. tostring(b)
  end
  if a.dtype ~= b.dtype then return false, "dtypes " .. tostring(a.dtype) .. " and " .. tostring(b.dtype) end
  local sa, sb = table.concat(a.shape, ","), table.concat(b.shape, ",")
  if sa ~= sb then return false, "shapes [" .. sa .. "] and [" .. sb .. "]" end
  if a:is_complex() then a, b = torch.view_as_real(a), torch.view_as_real(b) end -- parts as floats
  local fa, fb = flat(a), flat(b)
  for i = 1, #fa do
    local x, y = fa[i], fb[i]
    local eq = (x == y and (x ~= 0 or type(x) ~= "number" or 1 / x == 1 / y)) or (x ~= x and y ~= y)
    if not eq then
      return false, string.format("element %d: %s vs %s", i - 1, tostring(x), tostring(y))
    end
  end
  return true
end

function P.eq_tensor(a, b, what)
  local ok, why = P.same(a, b)
  T.truthy(ok, (what or "tensors") .. " differ: " .. tostring(why))
end

-- Asserts a tensor's values (a flat list, row-major) and shape.
function P.values(t, shape, vals, what)
  T.eq(table.concat(t.shape, ","), table.concat(shape, ","), (what or "tensor") .. " shape")
  local f = flat(t)
  T.eq(#f, #vals, (what or "tensor") .. " numel")
  for i = 1, #vals do T.eq(f[i], vals[i], (what or "tensor") .. " element " .. (i - 1)) end
end

local function clone_args(args)
  local out = {n = args.n or #args}
  local function cl(v)
    if torch.is_tensor(v) then return v:clone() end
    if type(v) == "table" and getmetatable(v) == nil then
      local c = {}
      for k, x in pairs(v) do c[k] = cl(x) end
      return c
    end
    return v
  end
  for i = 1, out.n do out[i] = cl(args[i]) end
  return out
end
P.clone_args = clone_args

-- Flattens returned values (Lua lists and string-keyed tables, keys sorted) into a list.
local function flatten_values(vals, out)
  out = out or {}
  for i = 1, vals.n or #vals do
    local v = vals[i]
    if type(v) == "table" and not torch.is_tensor(v) and getmetatable(v) == nil then
      local n = #v
      if n > 0 then
        flatten_values(v, out)
      else
        local keys = {}
        for k in pairs(v) do keys[#keys + 1] = k end
        table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
        local list = {}
        for _, k in ipairs(keys) do list[#list + 1] = v[k] end
        flatten_values(list, out)
      end
    else
      out[#out + 1] = v
    end
  end
  return out
end
P.flatten_values = flatten_values

-- The numbers: fxdb.check (eager vs fxdb.run: outputs and buffer updates, max abs error 0),
-- then the unlifted module called twice against the eager module called twice, on clones of
-- the inputs, comparing outputs, the inputs afterwards (user-input mutations) and the buffers
-- bit for bit.
-- Returns the exported run's user outputs.
function P.numbers(m, ep, args)
  local c = fxdb.check(m, ep, args)
  T.truthy(c.ok, tostring(c))
  T.eq(c.max_abs_error, 0, "fxdb.check max abs error")
  local r = fxdb.run(ep, clone_args(args))
  local mod = ep:module()
  local snap = torch._export.snapshot(m)
  local saved = {}
  for i, s in ipairs(m:_named_state()) do saved[i] = s.tensor:clone() end
  for call = 1, 2 do
    local ea, ua = clone_args(args), clone_args(args)
    local eager = flatten_values(table.pack(m(table.unpack(ea, 1, ea.n))))
    local unl = flatten_values(table.pack(mod(table.unpack(ua, 1, ua.n))))
    T.eq(#unl, #eager, "number of outputs, call " .. call)
    for i = 1, #eager do
      P.eq_tensor(unl[i], eager[i], "unlifted output " .. (i - 1) .. ", call " .. call)
    end
    local fe, fu = flatten_values(ea), flatten_values(ua)
    for i = 1, #fe do
      if torch.is_tensor(fe[i]) then P.eq_tensor(fu[i], fe[i], "input " .. (i - 1) .. " after call " .. call) end
    end
    for _, pair in ipairs(m:named_buffers()) do
      P.eq_tensor(mod[pair[1]], pair[2], "buffer " .. pair[1] .. " after call " .. call)
    end
  end
  torch._export.restore(snap)
  torch.no_grad(function()
    for i, s in ipairs(m:_named_state()) do s.tensor:copy_(saved[i]) end
  end)
  return r.outputs
end

-- Runs f(strict, mode_name) for strict and non-strict export.
function P.modes(f)
  for _, strict in ipairs{true, false} do f(strict, strict and "strict" or "non-strict") end
end

-- Asserts that export(m, args, opts) fails with an error of `kind` whose message contains
-- `msg`; returns the error object.
function P.export_fails(kind, msg, m, args, opts)
  local e = T.checkerr(msg, torch.export.export, m, args, opts)
  T.eq(type(e) == "table" and e.kind, kind, "error kind")
  return e
end

-- True when core/ops.def registers `qualname` ("cos.default"): ports of cases that need an op
-- fxdb does not have yet assert the clear "not yet supported" error instead, and start checking
-- the whole case by themselves once the op lands.
function P.has(qualname)
  return torch._has_op(qualname)
end

-- Asserts the "not yet supported" error an unregistered op gives (lua/not_yet.lua, lx_bind.c).
function P.op_missing(name, f, ...)
  local e = T.checkerr(name .. " is not yet supported by fxdb", f, ...)
  T.eq(type(e) == "table" and e.kind, "not_implemented", "error kind")
  return e
end

-- A test of behaviour fxdb does not have yet because of code outside tests/ (named in `why`
-- and in tests/peer/README.md). It runs: a failure is reported as PENDING (not counted as a
-- failure, listed by T.done); a pass is counted as a pass with a note to drop the mark.
P.pending_list = {}
function P.pending(name, why, f)
  local ok, e = xpcall(f, function(err)
    if type(err) == "table" and err.harness then return err.msg end
    return debug.traceback(tostring(err), 2)
  end)
  if ok then
    T.passed = T.passed + 1
    print("NOTE " .. name .. ": passes now; drop its pending mark (" .. why .. ")")
  else
    P.pending_list[#P.pending_list + 1] = name .. ": " .. why
    io.stderr:write("PENDING ", name, " (", why, ")\n  ", (tostring(e):gsub("\n.*", "")), "\n")
  end
end

-- T.done with the pending tests listed: "<file>: N passed, N failed" plus "(N pending)".
function P.done()
  local file = debug.getinfo(2, "S").short_src
  for _, p in ipairs(P.pending_list) do print("pending: " .. p) end
  print(string.format("%s: %d passed, %d failed%s", file, T.passed, T.failed,
    #P.pending_list > 0 and string.format(" (%d pending)", #P.pending_list) or ""))
  io.stdout:flush()
  if T.failed > 0 then os.exit(1) end
end

return P
