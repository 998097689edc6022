-- lua/hop.lua — higher-order ops: torch.ops.higher_order.scan (and torch._higher_order_ops.scan).
-- Layer: lua (embedded). The combine function is traced once into a body graph (placeholders
-- arg0_1, arg1_1, ... as PyTorch's make_fx names them); inside an export the call is recorded as
-- get_attr scan_combine_graph_N + higher_order.scan + getitem nodes (core/hop.h); outside one
-- the body graph runs eagerly on the interpreter.
local E = torch._export

local function flatten(v, out)
  if type(v) == "table" and not torch.is_tensor(v) and getmetatable(v) == nil then
    for i = 1, #v do flatten(v[i], out) end
  else
    out[#out + 1] = v
  end
  return out
end

-- scan(combine_fn, init, xs, {dim = 0, reverse = false, additional_inputs = {}}) or, as PyTorch's
-- positional HOP call, scan(combine_fn, init, xs, dim, reverse, additional_inputs).
-- combine_fn(carry..., x_t..., additional...) returns (next_carry..., y_t...) (a list or values);
-- the result is the final carry followed by the ys stacked along dim.
local function scan(combine_fn, init, xs, dim, reverse, additional)
  if type(dim) == "table" then
    local o = dim
    dim, reverse, additional = o.dim, o.reverse, o.additional_inputs
  end
  dim, reverse, additional = dim or 0, reverse or false, additional or {}
  if type(combine_fn) ~= "function" then
    error("bad argument #1 to 'scan' (function expected, got " .. type(combine_fn) .. ")", 2)
  end
  init, xs = flatten(init, {}), flatten(xs, {})
  local parent = E.active_tracer
  local body = E.tracer{}
  local inputs, k = {}, 0
  local function add(example)
    inputs[#inputs + 1] = body:input("USER_INPUT", "arg" .. k .. "_1", nil, false, example)
    k = k + 1
  end
  for _, c in ipairs(init) do add(c) end
  for _, x in ipairs(xs) do add(E.slice_meta(x, dim)) end
  for _, a in ipairs(additional) do add(a) end
  local thread = coroutine.running()
  local strict = E.active_strict
  body:bind(thread, false)
  local res = table.pack(pcall(combine_fn, table.unpack(inputs)))
  if parent then parent:bind(thread, strict) else body:unbind(thread) end
  if not res[1] then error(res[2], 0) end
  body:finish(flatten(table.pack(table.unpack(res, 2, res.n)), {}))
  return table.unpack(E.scan_record(parent, body, init, xs, dim, reverse, additional))
end

torch.ops.higher_order = torch.ops.higher_order or {}
torch.ops.higher_order.scan = scan
torch._higher_order_ops = torch._higher_order_ops or {}
torch._higher_order_ops.scan = scan
