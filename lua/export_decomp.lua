-- lua/export_decomp.lua — ep:run_decompositions(decomp_table) and
-- torch.export.default_decompositions(): lowering an exported program to PyTorch's core ATen
-- opset, as torch 2.5's ExportedProgram.run_decompositions does.
-- Layer: lua (embedded; runs after export.lua). PyTorch retraces the program with make_fx under
-- the decomposition table; fxdb does the same: it replays the program's raw graph node by node
-- in a new trace (the state and user inputs become placeholders with the same names, in-place
-- ops and buffer assignments replay as such), calling each op's decomposition when the table has
-- one, and builds the functional program from that trace exactly as export builds one.

local E = torch._export
local aten = torch.ops.aten
E.program_methods = E.program_methods or {}

-- ---- calling an overload with a node's arguments ---------------------------------------------
-- A node's args are every schema argument in schema order (defaults filled). An overload call
-- takes the positional ones positionally and the keyword-only ones in a trailing table.

local layouts = {}

-- {names = {...}, kwonly = index of the first keyword-only argument or nil} of an overload.
local function layout(overload)
  local key = tostring(overload)
  local l = layouts[key]
  if l then return l end
  local inner = overload._schema:match("^[^(]*%((.*)%)%s*%->")
  local parts, depth, cur = {}, 0, {}
  for ch in (inner or ""):gmatch(".") do
    if ch == "[" or ch == "(" then depth = depth + 1 elseif ch == "]" or ch == ")" then depth = depth - 1 end
    if ch == "," and depth == 0 then
      parts[#parts + 1] = table.concat(cur)
      cur = {}
    else
      cur[#cur + 1] = ch
    end
  end
  if #cur > 0 then parts[#parts + 1] = table.concat(cur) end
  l = {names = {}}
  for _, p in ipairs(parts) do
    p = p:match("^%s*(.-)%s*$")
    if p == "*" then
      l.kwonly = #l.names + 1
    elseif p ~= "" then
      l.names[#l.names + 1] = p:gsub("=.*$", ""):match("([%w_]+)%s*$")
    end
  end
  layouts[key] = l
  return l
end

local function overload_of(qualname)
  local ns, name, ov = qualname:match("^([%w_]+)%.(.+)%.([%w_]+)$")
  local space = ns == "aten" and aten or (ns and fxdb._library_impls[qualname] and rawget(torch.ops, ns))
  local packet = space and space[name]
  local o = packet and packet[ov]
  if not o then error("run_decompositions: no overload " .. qualname, 0) end
  return o
end

-- Calls overload `qualname` with the schema-ordered argument list a (a.n entries).
local function invoke(qualname, a)
  local o = overload_of(qualname)
  local l = layout(o)
  local npos = l.kwonly and (l.kwonly - 1) or a.n
  local kw
  for i = npos + 1, a.n do
    if a[i] ~= nil then
      kw = kw or {}
      kw[l.names[i]] = a[i]
    end
  end
  if kw then
    local pos = table.move(a, 1, npos, 1, {})
    pos[npos + 1] = kw
    return o(table.unpack(pos, 1, npos + 1))
  end
  return o(table.unpack(a, 1, npos))
end

-- The table in use while a program is replayed (decompositions call ops through D.call, so an op
-- a decomposition produces is decomposed in turn, as make_fx under a decomposition table does).
local active = {}

-- D.call(qualname, ...): the op, or its decomposition from the active table.
local D = {}
function D.call(qualname, ...)
  local f = active[qualname]
  if f then return f(...) end
  return invoke(qualname, table.pack(...))
end
local call = D.call

-- ---- the default table: torch 2.5's core ATen decompositions fxdb's ops need -------------------
-- Each entry takes the op's schema arguments in schema order (keyword-only ones positionally,
-- nil for None) and returns what the op returns, built from ops through D.call.

local defaults = {}

-- torch._refs.t / transpose: a 2-D t is permute([1, 0]); a dim swap is a permute of all dims;
-- nothing to swap is an alias.
defaults["aten.t.default"] = function(self)
  return call("aten.transpose.int", self, 0, self.ndim < 2 and 0 or 1)
end
defaults["aten.transpose.int"] = function(self, dim0, dim1)
  local nd = self.ndim
  if nd <= 1 then return call("aten.alias.default", self) end
  if dim0 < 0 then dim0 = dim0 + nd end
  if dim1 < 0 then dim1 = dim1 + nd end
  if dim0 == dim1 then return call("aten.alias.default", self) end
  local perm = {}
  for i = 0, nd - 1 do perm[i + 1] = i end
  perm[dim0 + 1], perm[dim1 + 1] = dim1, dim0
  return call("aten.permute.default", self, perm)
end

-- at::linear (CompositeImplicitAutograd, torch 2.5): addmm for a 2-D input with bias; for a
-- contiguous input with a 1-D bias, _flatten_nd_linear (the input reshaped to 2-D, addmm, the
-- result viewed back); else matmul with weight.t() and the bias added.
defaults["aten.linear.default"] = function(input, weight, bias)
  local nd = input.ndim
  if nd == 2 and bias ~= nil then
    return call("aten.addmm.default", bias, input, call("aten.t.default", weight), 1, 1)
  end
  if bias ~= nil and input:is_contiguous() and (nd == 3 or bias.ndim == 1) then
    local shape, rows = input.shape, 1
    for i = 1, nd - 1 do rows = rows * shape[i] end
    local flat = call("aten.view.default", input, {rows, shape[nd]})
    local r = call("aten.addmm.default", bias, flat, call("aten.t.default", weight), 1, 1)
    local out_shape = table.move(shape, 1, nd - 1, 1, {})
    out_shape[nd] = r.shape[2]
    return call("aten.view.default", r, out_shape)
  end
  local out = call("aten.matmul.default", input, call("aten.t.default", weight))
  if bias ~= nil then out = call("aten.add.Tensor", out, bias, 1) end
  return out
end

-- at::matmul's folding (CompositeImplicitAutograd), for the 1-D / 2-D / batched-by-2-D cases;
-- other shapes keep fxdb's own matmul recording (expand + bmm).
defaults["aten.matmul.default"] = function(a, b)
  local da, db = a.ndim, b.ndim
  if da == 2 and db == 2 then return call("aten.mm.default", a, b) end
  if da >= 3 and db == 2 and a:is_contiguous() then
    local shape, rows = a.shape, 1
    for i = 1, da - 1 do rows = rows * shape[i] end
    local folded = call("aten.view.default", a, {rows, shape[da]})
    local out_shape = table.move(shape, 1, da - 1, 1, {})
    out_shape[da] = b.shape[2]
    return call("aten._unsafe_view.default", call("aten.mm.default", folded, b), out_shape)
  end
  return invoke("aten.matmul.default", table.pack(a, b))
end

-- torch/_decomp: mv(a, v) = (a * v).sum(dim=1), dot(a, b) = (a * b).sum(); float16 / bfloat16
-- (which the decompositions compute in float32, pw_cast_for_opmath) keep the op
local function low_precision(t) return t.dtype == torch.float16 or t.dtype == torch.bfloat16 end
defaults["aten.mv.default"] = function(self, vec)
  if low_precision(self) then return invoke("aten.mv.default", table.pack(self, vec)) end
  return call("aten.sum.dim_IntList", call("aten.mul.Tensor", self, vec), {1}, false, nil)
end
defaults["aten.dot.default"] = function(self, other)
  if low_precision(self) then return invoke("aten.dot.default", table.pack(self, other)) end
  return call("aten.sum.default", call("aten.mul.Tensor", self, other), nil)
end

-- torch/_refs zeros / ones (and their _like twins): full / full_like with the fill value (False
-- / True for bool), the default dtype, torch.strided and torch.preserve_format filled in as the
-- Python decompositions' defaults do
local function filled(value)
  return function(size, dtype, layout, device, pin_memory)
    dtype = dtype or torch.float32
    local fill = dtype == torch.bool and (value == 1) or value
    return call("aten.full.default", size, fill, dtype, layout or "torch.strided", device,
                pin_memory == nil and false or pin_memory)
  end
end
local function filled_like(value)
  return function(self, dtype, layout, device, pin_memory, memory_format)
    local fill = (dtype or self.dtype) == torch.bool and (value == 1) or value
    return call("aten.full_like.default", self, fill, dtype, layout, device,
                pin_memory == nil and false or pin_memory, memory_format or "torch.preserve_format")
  end
end
defaults["aten.zeros.default"] = filled(0)
defaults["aten.ones.default"] = filled(1)
defaults["aten.zeros_like.default"] = filled_like(0)
defaults["aten.ones_like.default"] = filled_like(1)

defaults["aten._unsafe_view.default"] = function(self, size)
  return call("aten.view.default", self, size)
end

-- torch/_decomp: sum() is sum over no dims
defaults["aten.sum.default"] = function(self, dtype)
  return call("aten.sum.dim_IntList", self, {}, false, dtype)
end

-- torch/_decomp: silu(x) = x * sigmoid(x)
defaults["aten.silu.default"] = function(self)
  return call("aten.mul.Tensor", self, call("aten.sigmoid.default", self))
end

-- torch/_decomp: split into equal chunks is split_with_sizes with the last one shorter
defaults["aten.split.Tensor"] = function(self, split_size, dim)
  dim = dim or 0
  if dim < 0 then dim = dim + self.ndim end
  local n = self.shape[dim + 1]
  local sizes = {}
  if split_size == 0 and n == 0 then
    sizes[1] = 0
  else
    local chunks = math.max((n + split_size - 1) // split_size, 1)
    for i = 1, chunks do sizes[i] = split_size end
    sizes[chunks] = split_size - (split_size * chunks - n)
  end
  return call("aten.split_with_sizes.default", self, sizes, dim)
end

-- torch/_decomp: index_copy(_) is index_put(_) with None for the dims before `dim`
local function index_copy(inplace)
  return function(self, dim, index, source)
    if dim < 0 then dim = dim + math.max(self.ndim, 1) end
    if index.ndim == 0 then index = call("aten.unsqueeze.default", index, 0) end
    local pre = {} -- None (a hole) for each dim before `dim`
    pre[dim + 1] = index
    local idx = table.pack(table.unpack(pre, 1, dim + 1))
    return call(inplace and "aten.index_put_.default" or "aten.index_put.default", self, idx,
                source, false)
  end
end
defaults["aten.index_copy.default"] = index_copy(false)
defaults["aten.index_copy_.default"] = index_copy(true)

-- at::rms_norm (CompositeImplicitAutograd, torch 2.5):
-- input * rsqrt(mean(input^2, reduced dims, keepdim) + eps), times weight when given
defaults["aten.rms_norm.default"] = function(input, normalized_shape, weight, eps)
  local nd, k = input.ndim, #normalized_shape
  local dims = {} -- last dim first, as at::rms_norm lists dims_to_reduce
  for i = 1, k do dims[i] = nd - i end
  if eps == nil then -- the machine epsilon of the compute dtype, as at::rms_norm
    eps = input.dtype == torch.float64 and 2.220446049250313e-16 or 1.1920928955078125e-07
  end
  local sq = call("aten.pow.Tensor_Scalar", input, 2)
  local mean = call("aten.mean.dim", sq, dims, true)
  local r = call("aten.mul.Tensor", input, call("aten.rsqrt.default", call("aten.add.Tensor", mean, eps, 1)))
  if weight ~= nil then r = call("aten.mul.Tensor", r, weight) end
  return r
end

-- at::layer_norm (CompositeImplicitAutograd): native_layer_norm's first output
defaults["aten.layer_norm.default"] = function(input, normalized_shape, weight, bias, eps)
  local out = call("aten.native_layer_norm.default", input, normalized_shape, weight, bias,
                   eps or 1e-5)
  return out
end

-- torch.export.default_decompositions() -> a new table {["aten.linear.default"] = fn, ...}:
-- remove an entry (`t["aten.linear.default"] = nil`) to keep that op, add one to lower another.
function torch.export.default_decompositions()
  local t = {}
  for k, v in pairs(defaults) do t[k] = v end
  return t
end

-- ---- replaying a program -----------------------------------------------------------------------

-- graph nodes are userdata whose metatable is registered as "fxdb.Node" (lua/lx_impl.h)
local NODE_MT = debug.getregistry()["fxdb.Node"]
local function is_node(v)
  return type(v) == "userdata" and getmetatable(v) == NODE_MT
end

local function resolve(v, env)
  if is_node(v) then return env[v.name] end
  if type(v) == "table" then
    local n, items, holes = v.n or #v, {}, false
    for i = 1, n do
      items[i] = resolve(v[i], env)
      if items[i] == nil then holes = true end
    end
    if not holes then return items end
    return table.pack(table.unpack(items, 1, n)) -- holes (None) kept, with n
  end
  return v
end

local function normalize_table(tbl)
  local out = {}
  for k, f in pairs(tbl) do
    if type(f) ~= "function" then
      error("bad argument #1 to 'run_decompositions' (decomposition for " .. tostring(k) ..
            " must be a function, got " .. type(f) .. ")", 3)
    end
    out[tostring(k)] = f
  end
  return out
end

-- Replays the call_function node n of a graph with values env (aten ops through the table,
-- getitem, higher-order ops with their bodies replayed the same way); returns nothing.
local replay_node

-- Runs body graph g on args (its placeholders in order) by replaying its nodes; returns the
-- values of its output list.
local function replay_body(g, tbl, ...)
  local args, env, outs = table.pack(...), {}, {}
  local k = 0
  for _, n in ipairs(g.nodes) do
    if n.op == "placeholder" then
      k = k + 1
      env[n.name] = args[k]
    elseif n.op == "call_function" then
      replay_node(n, env, tbl)
    elseif n.op == "get_attr" then
      env[n.name] = n.subgraph
    elseif n.op == "output" then
      outs = resolve(n.args[1], env)
    end
  end
  return table.unpack(outs, 1, outs.n or #outs)
end

local function body_fn(g, tbl)
  return function(...) return replay_body(g, tbl, ...) end
end

-- higher-order ops: the function each records, called with replayed bodies
local HOPS = {
  ["higher_order.cond"] = function(a, tbl)
    return torch.cond(a[1], body_fn(a[2], tbl), body_fn(a[3], tbl), a[4])
  end,
  ["higher_order.scan"] = function(a, tbl)
    return torch.ops.higher_order.scan(body_fn(a[1], tbl), a[2], a[3], a[4], a[5], a[6])
  end,
  ["higher_order.map_impl"] = function(a, tbl)
    local extra = a[3] or {}
    return torch.ops.higher_order.map(body_fn(a[1], tbl), a[2], table.unpack(extra, 1, extra.n or #extra))
  end,
}

function replay_node(n, env, tbl, tr)
  local target, raw_args, args = n.target, n.args, {}
  -- a custom op (torch.library) replays as an ATen op does: called again, here under the tracer
  local is_op = target:sub(1, 5) == "aten." or fxdb._library_impls[target] ~= nil
  local nargs = is_op and #layout(overload_of(target)).names or #raw_args
  for i = 1, nargs do args[i] = resolve(raw_args[i], env) end
  args.n = nargs
  if target == "getitem" then
    env[n.name] = args[1][args[2] + 1]
  elseif target == "fxdb.assign_buffer" then
    tr:assign_buffer(args[3], args[1], args[2])
  elseif HOPS[target] then
    env[n.name] = table.pack(HOPS[target](args, tbl))
  elseif is_op then
    local f = tbl[target]
    local r
    if f then r = table.pack(f(table.unpack(args, 1, args.n)))
    else r = table.pack(invoke(target, args)) end
    env[n.name] = r.n == 1 and r[1] or r
  else
    error("run_decompositions: " .. target .. " nodes (" .. n.name .. ") cannot be replayed", 0)
  end
end

-- ---- unbacked symbols and runtime asserts -----------------------------------------------------
-- The replay continues the program's shape environment: an item() or an op with a data-dependent
-- length binds the program's own u<N> again (tr:reuse_unbacked; tr:unbind clears what an error
-- left queued), so the range constraints stay the
-- program's; the runtime asserts over them (sym_constrain_range_for_size, _assert_scalar and the
-- relations they read) are not replayed but emitted again from that environment when the new
-- program is built, as torch's retrace re-inserts them (insert_deferred_runtime_asserts).

local SYMINT_MT = debug.getregistry()["fxdb.SymInt"]

-- Appends to list the bare unbacked symbols (u<N>, as created: also one a torch._check replaced
-- by s0) in value v (a SymInt, a tensor's sizes, a list) that are not in seen, marking them seen.
local function new_unbacked(v, seen, list)
  if getmetatable(v) == SYMINT_MT then
    local name = v:_unbacked_symbol()
    if name and not seen[name] then
      seen[name] = true
      list[#list + 1] = v
    end
  elseif torch.is_tensor(v) then
    for _, d in ipairs(v.shape) do new_unbacked(d, seen, list) end
  elseif type(v) == "table" then
    for i = 1, v.n or #v do new_unbacked(v[i], seen, list) end
  end
end

local function unbacked_order(a, b)
  return tonumber(a:_unbacked_symbol():sub(2)) < tonumber(b:_unbacked_symbol():sub(2))
end

local ASSERT_OPS = {["aten._assert_scalar.default"] = true,
                    ["aten.sym_constrain_range_for_size.default"] = true,
                    ["aten.sym_constrain_range.default"] = true}
local RELATIONS = {["operator.eq"] = true, ["operator.ne"] = true, ["operator.lt"] = true,
                   ["operator.le"] = true, ["operator.gt"] = true, ["operator.ge"] = true}

-- Whether node n is runtime-assert machinery the build emits again from the shape environment.
local function is_assert_node(n)
  if ASSERT_OPS[n.target] then return true end
  if not RELATIONS[n.target] then return false end
  local users = n.users
  for _, u in ipairs(users) do
    if u.target ~= "aten._assert_scalar.default" then return false end
  end
  return #users > 0
end

-- SymInt arithmetic nodes, replayed as the same arithmetic (recorded again by the trace)
local SYM_ARITH = {
  ["operator.add"] = function(a, b) return a + b end,
  ["operator.sub"] = function(a, b) return a - b end,
  ["operator.mul"] = function(a, b) return a * b end,
  ["operator.floordiv"] = function(a, b) return a // b end,
  ["operator.mod"] = function(a, b) return a % b end,
  ["operator.neg"] = function(a) return -a end,
}

local function replay(ep, tr, tbl)
  local sig = ep.graph_signature
  local state, consts = ep.state_dict, ep.constants
  local env, statelist, outs = {}, {}, nil
  local spec_of, seen = {}, {}
  for _, s in ipairs(sig.input_specs) do spec_of[s.arg.name] = s end
  for _, n in ipairs(ep.raw_graph.nodes) do
    if n.op == "placeholder" then
      local s = spec_of[n.name]
      local kind = s and s.kind or "USER_INPUT"
      local example = n.meta.val
      if kind ~= "USER_INPUT" then example = state[s.target] or consts[s.target] or example end
      env[n.name] = tr:input(kind, n.name, s and s.target, s and s.persistent, example)
      if kind == "PARAMETER" or kind == "BUFFER" then
        statelist[#statelist + 1] = {s.target, example}
      end
    elseif n.op == "call_function" and not is_assert_node(n) then
      tr:set_location(n) -- every op the node becomes keeps its stack trace and module stack
      local fresh = {}
      new_unbacked(n.meta.val, seen, fresh)
      table.sort(fresh, unbacked_order)
      tr:reuse_unbacked(fresh)
      if n.target == "aten._local_scalar_dense.default" then
        env[n.name] = resolve(n.args[1], env):item()
      elseif RELATIONS[n.target] then
        -- a SymBool (torch.cond's predicate): its symbols are the replay's own, so the value is
        -- the program's; the trace records the relation where it is used
        env[n.name] = n.meta.val
      elseif SYM_ARITH[n.target] then
        local a = resolve(n.args, env)
        env[n.name] = SYM_ARITH[n.target](a[1], a[2])
      else
        replay_node(n, env, tbl, tr)
      end
      tr:reuse_unbacked()
    elseif n.op == "get_attr" then
      env[n.name] = n.subgraph -- a higher-order op's body
    elseif n.op == "output" then
      outs = resolve(n.args[1], env)
    end
  end
  return statelist, outs or {}
end

-- Replays ep in coroutine co bound to tr, with the decomposition table active; returns
-- coroutine.resume's results, packed.
local function replay_bound(tr, co, ep, tbl)
  active = tbl
  E.active_tracer, E.active_strict = tr, false -- higher-order ops record their bodies here
  tr:bind(co, false)
  return table.pack(coroutine.resume(co, ep, tr, tbl))
end

-- ep:run_decompositions([decomp_table]) -> a new ExportedProgram in the functional IR whose ops
-- are lowered through decomp_table (default: torch.export.default_decompositions(); `{}` only
-- functionalizes). The program itself is not changed.
function E.program_methods.run_decompositions(ep, decomp_table)
  if decomp_table ~= nil and type(decomp_table) ~= "table" then
    error("bad argument #1 to 'run_decompositions' (table of decompositions expected, got " ..
          type(decomp_table) .. ")", 2)
  end
  local tbl = normalize_table(decomp_table or defaults)
  local tr = E.tracer{}
  tr:use_shape_env(ep) -- a dynamic program stays dynamic: same symbols and range constraints
  local co = coroutine.create(replay)
  local prev_active, prev_tracer, prev_strict = active, E.active_tracer, E.active_strict
  -- put back even when Lua runs out of memory installing them, resuming or packing the results
  -- (putting back assigns existing fields or nil, which needs no memory)
  local ok, res = pcall(replay_bound, tr, co, ep, tbl)
  tr:unbind(co)
  tr:set_location(nil)
  active, E.active_tracer, E.active_strict = prev_active, prev_tracer, prev_strict
  if not ok then error(res, 0) end
  if not res[1] then error(res[2], 0) end
  tr:finish(res[3])
  local out = tr:build(res[2], {training_ir = false})
  local extra = E.program_extra[ep]
  if extra then E.program_extra[out] = extra end
  return out
end

E.decompositions = D
