-- lua/hop.lua — higher-order ops: torch.ops.higher_order.scan, torch.cond, torch.ops.higher_order
-- .map_impl / torch._higher_order_ops.map. Layer: lua (embedded).
-- Inside an export each body function is traced once into a graph (core/hop.h) and the call is
-- recorded as get_attr <body>_N + higher_order.<op> + getitem nodes; tensors a body uses without
-- receiving them (closures over traced values) are lifted into extra operands, as Dynamo lifts
-- free variables. Outside an export the functions simply run, eagerly.
local E = torch._export

local flatten = E.flatten -- export.lua's pytree flatten (lists, then other keys sorted)

local function concat(a, b)
  local out = {}
  for _, x in ipairs(a) do out[#out + 1] = x end
  for _, x in ipairs(b) do out[#out + 1] = x end
  return out
end

-- A body output that is one of the body's inputs or a view of one: torch.cond refuses it
-- (torch/_higher_order_ops/cond.py's _has_potential_branch_input_alias).
local function check_no_alias(outs, inputs, what)
  for _, o in ipairs(outs) do
    if torch.is_tensor(o) then
      for _, inp in ipairs(inputs) do
        if rawequal(o, inp) or fxdb._same_storage(o, inp) then
          E.export_error("hop_body_alias", "One of " .. what .. " branch might be aliasing the input!",
            "return a copy (x:clone()) instead of the input or a view of it")
        end
      end
    end
  end
end

-- The flattened xs of map / scan (`what`): at least one leaf, each a tensor with a dim to slice.
local function check_xs(what, leaves)
  for _, x in ipairs(leaves) do
    if not torch.is_tensor(x) or x:dim() == 0 then
      fxdb._argcheck.arg_error(what .. "() expects xs to be a tensor or a table of tensors with " ..
        "at least one dimension, got " .. (torch.is_tensor(x) and "a 0-dim tensor" or type(x)))
    end
  end
  if #leaves == 0 then fxdb._argcheck.arg_error(what .. "() expects at least one tensor in xs") end
end

-- scan's combine_fn: a function or a callable object (a Module), as PyTorch's callable() check.
local function check_callable(fn)
  local mt = getmetatable(fn)
  if type(fn) ~= "function" and not (type(mt) == "table" and mt.__call) then
    fxdb._argcheck.arg_error("bad argument #1 to 'scan' (function expected, got " .. type(fn) .. ")")
  end
end

-- The sizes of tensor t as a list when one of them is symbolic (a SymInt), else nil; without
-- dim `drop` (0-based) when given (a slice along it).
local function sym_sizes(t, drop)
  if not torch.is_tensor(t) then return nil end
  local out, any = {}, false
  for d = 0, t:dim() - 1 do
    if d ~= drop then
      local v = t:size(d)
      if type(v) ~= "number" then any = true end
      out[#out + 1] = v
    end
  end
  return any and out or nil
end

-- pcall(fn, table.unpack(inputs)), packed (called through pcall, fn's frame names no caller's
-- variable: a body's stack trace says "in ?", as for any function value).
local function call_packed(fn, inputs)
  return table.pack(pcall(fn, table.unpack(inputs)))
end

-- Traces fn(inputs...) as a body of the op being recorded into `parent`. examples: the tensors
-- the placeholders stand for; names: their placeholder names; no_alias: the op's name when its
-- outputs may not alias its inputs (cond); shapes[i]: the symbolic sizes of placeholder i when
-- examples[i] is a static slice of a dynamic operand (sym_sizes of an example by default), so a
-- body keeps the operands' symbols instead of specializing them. Returns the finished body
-- tracer.
local function trace_body(parent, fn, examples, names, no_alias, shapes)
  local body = E.tracer{}
  body:set_parent(parent)
  local inputs = {}
  for i, ex in ipairs(examples) do
    local sz = shapes and shapes[i] or sym_sizes(ex)
    if sz then
      inputs[i] = body:input_sym(names[i], ex, sz)
    else
      inputs[i] = body:input("USER_INPUT", names[i], nil, false, ex)
    end
  end
  local thread = coroutine.running()
  body:bind(thread, false)
  local ok, res = pcall(call_packed, fn, inputs) -- whatever fails, the body is unbound
  body:unbind(thread)
  parent:bind(thread, E.active_strict)
  if not ok then error(res, 0) end
  if not res[1] then error(res[2], 0) end
  local outs = {}
  for i = 2, res.n do flatten(res[i], outs) end
  if no_alias then check_no_alias(outs, inputs, no_alias) end
  body:finish(outs)
  return body
end

local function node_name(parent, t, fallback)
  return (torch.is_tensor(t) and parent:node_of(t)) or fallback
end

-- ---- scan -------------------------------------------------------------------------------------

-- scan(combine_fn, init, xs, dim, reverse, additional_inputs) or scan(fn, init, xs, {dim =,
-- reverse =, additional_inputs =}). combine_fn(carry..., x_t..., additional...) returns
-- (next_carry..., y_t...); the result is the final carry followed by the ys stacked along dim.
local function scan(combine_fn, init, xs, dim, reverse, additional)
  if type(dim) == "table" then
    local o = dim
    dim, reverse, additional = o.dim, o.reverse, o.additional_inputs
  end
  dim, reverse, additional = dim or 0, reverse or false, additional or {}
  check_callable(combine_fn)
  init, xs, additional = flatten(init, {}), flatten(xs, {}), flatten(additional, {})
  check_xs("scan", xs)
  local parent = E.active_tracer
  if not parent then -- eager: run the Lua function step by step
    local n = xs[1]:size(dim)
    if n == 0 then
      -- no step runs: the ys are empty along dim, shaped as combine_fn's outputs on one slice
      -- (found by running it on meta tensors, which compute shapes only)
      local args = {}
      for _, c in ipairs(init) do args[#args + 1] = E.slice_meta(c:unsqueeze(0), 0) end
      for _, x in ipairs(xs) do args[#args + 1] = E.slice_meta(x, dim) end
      for _, a in ipairs(additional) do args[#args + 1] = E.slice_meta(a:unsqueeze(0), 0) end
      local out = E.flatten_outputs(table.pack(combine_fn(table.unpack(args))))
      local res = {table.unpack(init)}
      for k = #init + 1, #out do
        local shape = out[k].shape
        local s = {}
        for i = 1, #shape do s[i] = shape[i] end
        table.insert(s, dim + 1, 0)
        res[#res + 1] = torch.empty(s, out[k].dtype)
      end
      return table.unpack(res)
    end
    local carry, ys = init, {}
    for t = 0, n - 1 do
      local i = reverse and (n - 1 - t) or t
      local args = {table.unpack(carry)}
      for _, x in ipairs(xs) do args[#args + 1] = x:select(dim, i) end
      for _, a in ipairs(additional) do args[#args + 1] = a end
      local out = E.flatten_outputs(table.pack(combine_fn(table.unpack(args))))
      carry = {table.unpack(out, 1, #init)}
      for k = #init + 1, #out do
        ys[k - #init] = ys[k - #init] or {}
        ys[k - #init][i + 1] = out[k]
      end
    end
    local res = {table.unpack(carry)}
    for _, y in ipairs(ys) do res[#res + 1] = torch.stack(y, dim) end
    return table.unpack(res)
  end
  local examples, names, shapes = {}, {}, {}
  for _, c in ipairs(init) do examples[#examples + 1] = c end
  for _, x in ipairs(xs) do
    examples[#examples + 1] = E.slice_meta(x, dim)
    shapes[#examples] = sym_sizes(x, dim >= 0 and dim or dim + x:dim())
  end
  for _, a in ipairs(additional) do examples[#examples + 1] = a end
  for i = 1, #examples do names[i] = "arg" .. (i - 1) .. "_1" end
  local body = trace_body(parent, combine_fn, examples, names, nil, shapes)
  additional = concat(additional, body:captures())
  return table.unpack(E.hop_record(parent, "higher_order.scan", {body}, {"scan_combine_graph"},
    {init, xs, dim, reverse, additional}))
end

-- Rebuilds `template`'s tree with leaves[pos], leaves[pos + 1], ... in flatten order; returns
-- the tree and the next position.
local function unflatten(template, leaves, pos)
  if type(template) ~= "table" or getmetatable(template) ~= nil then return leaves[pos], pos + 1 end
  local out = {}
  for _, k in ipairs((E.tree_keys(template))) do out[k], pos = unflatten(template[k], leaves, pos) end
  return out, pos
end

-- torch._higher_order_ops.scan(combine_fn, init, xs, {dim = 0, reverse = false}) — torch 2.5's
-- user-level scan: init and xs are pytrees (tensors or tables of them); combine_fn(carry, x)
-- gets them with init's and xs's structure (x sliced along dim) and returns (next_carry, y),
-- next_carry shaped like init; the result is (final carry, ys) with ys shaped like y, each
-- leaf stacked along dim. Flattened, it is the scan HOP above.
local function scan_tree(combine_fn, init, xs, opts)
  check_callable(combine_fn)
  if opts ~= nil and type(opts) ~= "table" then
    fxdb._argcheck.arg_error("bad argument #4 to 'scan' (options table expected, got " .. type(opts) .. ")")
  end
  opts = opts or {}
  local leaves_init, leaves_xs = flatten(init, {}), flatten(xs, {})
  if #leaves_init == 0 then error("scan: Init tensors must be provided", 2) end
  for _, t in ipairs(leaves_init) do
    if not torch.is_tensor(t) then error("scan: All init leaves must be a Tensor", 2) end
  end
  for _, t in ipairs(leaves_xs) do
    if not torch.is_tensor(t) then error("scan: All xs leaves must be a Tensor", 2) end
  end
  local ni, nx = #leaves_init, #leaves_xs
  local y_template
  local function flat_fn(...)
    local a = table.pack(...)
    local carry = unflatten(init, a, 1)
    local x = unflatten(xs, a, ni + 1)
    local next_carry, y = combine_fn(carry, x)
    local out = flatten(next_carry, {})
    if #out ~= ni then
      error("scan: combine_fn must return a carry with the structure of init (" .. ni ..
            " tensors), got " .. #out, 0)
    end
    y_template = y_template or y
    for _, leaf in ipairs(flatten(y, {})) do out[#out + 1] = leaf end
    return table.unpack(out)
  end
  local res = table.pack(scan(flat_fn, leaves_init, leaves_xs, opts.dim or 0, opts.reverse or false, {}))
  local carry = unflatten(init, res, 1)
  local ys = y_template ~= nil and unflatten(y_template, res, ni + 1) or nil
  return carry, ys
end

-- ---- cond -------------------------------------------------------------------------------------

-- torch.cond(pred, true_fn, false_fn, operands): a Lua boolean picks the branch now (PyTorch folds
-- a static predicate too); a tensor predicate, or a SymBool (a SymInt userdata holding a relation,
-- as run_decompositions' replay passes a program's `gt` node), records both branches.
local function cond(pred, true_fn, false_fn, operands)
  operands = flatten(operands or {}, {})
  if type(pred) == "boolean" then
    -- a comparison of sizes on this line stays a symbolic predicate (a SymBool, as PyTorch
    -- keeps x.shape[0] > 2); any other boolean picks the branch now
    pred = E.cond_pred(pred) or pred
    if type(pred) == "boolean" then return (pred and true_fn or false_fn)(table.unpack(operands)) end
  end
  local symbolic = getmetatable(pred) == debug.getregistry()["fxdb.SymInt"]
  if not torch.is_tensor(pred) and not symbolic then
    error("bad argument #1 to 'cond' (boolean or Tensor expected, got " .. type(pred) .. ")", 2)
  end
  local parent = E.active_tracer
  if not parent then
    return ((pred:item() ~= false and pred:item() ~= 0) and true_fn or false_fn)(table.unpack(operands))
  end
  local names = {}
  for i, o in ipairs(operands) do names[i] = node_name(parent, o, "arg" .. (i - 1) .. "_1") end
  local tb = trace_body(parent, true_fn, operands, names, "torch.cond")
  local fb = trace_body(parent, false_fn, operands, names, "torch.cond")
  -- both bodies take the same inputs: the operands, then every captured tensor
  local caps, seen = {}, {}
  for _, b in ipairs{tb, fb} do
    for _, t in ipairs(b:captures()) do
      if not seen[t] then seen[t] = true; caps[#caps + 1] = t end
    end
  end
  tb:align_captures(caps)
  fb:align_captures(caps)
  return table.unpack(E.hop_record(parent, "higher_order.cond", {tb, fb},
    {"true_graph", "false_graph"}, {pred, concat(operands, caps)}))
end

-- ---- map ---------------------------------------------------------------------------------------

-- map(f, xs, ...args): f(x_t, ...args) for every slice x_t of xs along dim 0, stacked along 0.
local function map(f, xs, ...)
  local args = E.flatten_outputs(table.pack(...))
  local xl = flatten(xs, {})
  check_xs("map", xl)
  local parent = E.active_tracer
  if not parent then
    local n, outs = xl[1]:size(0), {}
    for t = 0, n - 1 do
      local a = {}
      for _, x in ipairs(xl) do a[#a + 1] = x:select(0, t) end
      for _, y in ipairs(args) do a[#a + 1] = y end
      local r = E.flatten_outputs(table.pack(f(table.unpack(a))))
      for k, v in ipairs(r) do outs[k] = outs[k] or {}; outs[k][t + 1] = v end
    end
    local res = {}
    for k, o in ipairs(outs) do res[k] = torch.stack(o, 0) end
    return table.unpack(res)
  end
  local examples, names, shapes = {}, {}, {}
  for i, x in ipairs(xl) do
    examples[#examples + 1] = E.slice_meta(x, 0)
    shapes[#examples] = sym_sizes(x, 0)
    names[#names + 1] = node_name(parent, x, "arg" .. (i - 1) .. "_1")
  end
  for i, y in ipairs(args) do
    examples[#examples + 1] = y
    names[#names + 1] = node_name(parent, y, "arg" .. (#xl + i - 1) .. "_1")
  end
  local body = trace_body(parent, f, examples, names, nil, shapes)
  args = concat(args, body:captures())
  return table.unpack(E.hop_record(parent, "higher_order.map_impl", {body}, {"body_graph"}, {xl, args}))
end

torch.ops.higher_order = torch.ops.higher_order or {}
torch.ops.higher_order.scan = scan
torch.ops.higher_order.cond = cond
torch.ops.higher_order.map = map
torch._higher_order_ops = torch._higher_order_ops or {}
torch._higher_order_ops.scan = scan_tree
torch._higher_order_ops.cond = cond
torch._higher_order_ops.map = map
torch.cond = cond
torch.map = map
