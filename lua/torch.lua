-- lua/torch.lua — Lua-side sugar over the C `torch` table (lx_torch.c).
-- Layer: lua (embedded; its frames are skipped in stack traces). Everything here is a thin
-- composition of ATen ops through the dispatcher, so traces record the ops, never a computation
-- done in Lua. Where an op fxdb does not register yet is stood in for by other ops, the comment
-- says which graph PyTorch would record instead.

local torch = torch
local has = torch._has_op

local function is_opts(v)
  return type(v) == "table" and getmetatable(v) == nil and next(v) ~= nil and rawlen(v) == 0
end

local DTYPE_MT = getmetatable(torch.float32)
local function is_dtype(v)
  return type(v) == "userdata" and getmetatable(v) == DTYPE_MT
end

-- Splits trailing dtype / options off a vararg list: returns the positional values and an
-- options table (a trailing dtype becomes opts.dtype).
local function split_opts(...)
  local args = table.pack(...)
  local n, opts = args.n, nil
  while n > 0 and args[n] == nil do n = n - 1 end
  if n > 0 and is_opts(args[n]) then opts = args[n]; n = n - 1 end
  if n > 0 and is_dtype(args[n]) then
    local o = {}
    for k, v in pairs(opts or {}) do o[k] = v end
    o.dtype = args[n]
    opts, n = o, n - 1
  end
  return args, n, opts
end

-- torch.arange(end), arange(start, end), arange(start, end, step), each with an optional dtype
-- or options table. PyTorch records arange.default(end) for the one-argument form; without that
-- overload in ops.def it is arange.start_step(0, end).
local arange_op = torch.arange
function torch.arange(...)
  local args, n, opts = split_opts(...)
  if n == 1 and not has("arange.default") then
    return arange_op(0, args[1], opts)
  end
  if n == 3 then return arange_op(args[1], args[2], args[3], opts) end
  if n == 2 then return arange_op(args[1], args[2], opts) end
  return arange_op(args[1], opts)
end

-- torch.einsum(equation, a, b, ...) or torch.einsum(equation, {a, b, ...}): PyTorch's two call
-- forms over aten.einsum(equation, tensors[, {path =}]), which records the ops ATen decomposes
-- it into.
if has("einsum.default") then
  local einsum_op = torch.einsum
  function torch.einsum(equation, ...)
    local n = select("#", ...)
    local ops = ...
    local last = n > 0 and select(n, ...) or nil
    local opts
    if n > 1 and type(last) == "table" and getmetatable(last) == nil and last.path ~= nil then
      opts, n = last, n - 1
    end
    if not (n == 1 and type(ops) == "table" and getmetatable(ops) == nil) then
      ops = table.pack(...)
      ops.n = nil
      if opts then ops[#ops] = nil end
    end
    local out
    if opts then out = einsum_op(equation, ops, opts) else out = einsum_op(equation, ops) end
    return out -- not a tail call: the caller's line stays on the stack for the node's location
  end
end

-- torch.eye(n [, m] [, dtype | opts]): the eye op when registered; else zeros + ones written on
-- the diagonal (through a diagonal view when `diagonal` exists, else element by element).
if not has("eye.default") then
  function torch.eye(...)
    local args, n, opts = split_opts(...)
    local rows = args[1]
    local cols = n >= 2 and args[2] or rows
    if math.type(rows) ~= "integer" then
      error("bad argument #1 to 'eye' (integer expected, got " .. type(rows) .. ")", 2)
    end
    local z = torch.zeros({rows, cols}, opts)
    if has("diagonal.default") then
      z:diagonal():fill_(1)
    else
      for i = 0, math.min(rows, cols) - 1 do z[{i, i}] = 1 end
    end
    return z
  end
end

-- torch.randint([low,] high, size [, dtype | opts]): the randint op when registered; else
-- low + floor(rand(size) * (high - low)) cast to int64 (the same distribution, not PyTorch's
-- exact random stream).
if not has("randint.low") and not has("randint.default") then
  function torch.randint(...)
    local args, n, opts = split_opts(...)
    local low, high, size
    if n >= 3 then low, high, size = args[1], args[2], args[3]
    else low, high, size = 0, args[1], args[2] end
    if math.type(low) ~= "integer" or math.type(high) ~= "integer" then
      error("bad argument to 'randint' (integer bounds expected)", 2)
    end
    if high <= low then
      error(string.format("random_ expects 'from' to be less than 'to', but got from=%d >= to=%d",
                          low, high), 2)
    end
    local dtype = opts and opts.dtype or torch.int64
    local r = (torch.rand(size) * (high - low)):to(torch.int64)
    if low ~= 0 then r = r + low end
    return r:to(dtype)
  end
end

-- torch.full_like(x, v [, opts]) when the op is missing: full(x.shape, v) with x's dtype.
if not has("full_like.default") then
  function torch.full_like(x, v, opts)
    local o = {dtype = x.dtype}
    for k, val in pairs(opts or {}) do o[k] = val end
    return torch.full(x.shape, v, o)
  end
end

-- ---- Tensor methods that PyTorch implements by composing ops (CompositeImplicitAutograd) -------

local methods = debug.getregistry()["fxdb.Tensor"].__methods

-- x:narrow, x:flatten and x:expand_as are the C composites of core/composite.c (with aten's
-- checks and error kinds), bound like every other op.
function methods.view_as(x, other) return x:view(other.shape) end
function methods.reshape_as(x, other) return x:reshape(other.shape) end

-- torch.linalg.vector_norm(x, ord=2, dim=nil, keepdim=false, {dtype=}) and torch.norm(x, p="fro",
-- dim=nil, keepdim=false, {dtype=}) / x:norm(...): PyTorch's torch.norm is Python that calls
-- linalg.vector_norm for a numeric p and for "fro" over at most two dims, so both record
-- aten.linalg_vector_norm. Arguments may also come by name in the options table.
torch.linalg = torch.linalg or {}
local ERROR_MT = debug.getregistry()["fxdb.Error"]
local function not_yet(message) -- an fxdb error object of kind not_implemented at the user's line
  local E = torch._export
  local frame = E and E.user_frame and E.user_frame() or {}
  error(setmetatable({kind = "not_implemented", code = "FX_ENOTIMPL", message = message,
                      location = frame.location, source = frame.source, func = frame.func},
                     ERROR_MT), 0)
end
local vector_norm_op = torch.linalg_vector_norm
local function vector_norm(x, ord, dim, keepdim, opts)
  if type(dim) == "number" then dim = {dim} end
  return vector_norm_op(x, ord == nil and 2 or ord, dim, keepdim or false,
                        opts and opts.dtype and {dtype = opts.dtype} or nil)
end
function torch.linalg.vector_norm(x, ...)
  local args, n, opts = split_opts(...)
  opts = opts or {}
  local ord, dim, keepdim = args[1], args[2], args[3]
  if n < 1 then ord = opts.ord end
  if n < 2 then dim = opts.dim end
  if n < 3 then keepdim = opts.keepdim end
  return vector_norm(x, ord, dim, keepdim, opts)
end
function torch.norm(x, ...)
  local args, n, opts = split_opts(...)
  opts = opts or {}
  local p, dim, keepdim = args[1], args[2], args[3]
  if n < 1 then p = opts.p end
  if n < 2 then dim = opts.dim end
  if n < 3 then keepdim = opts.keepdim end
  if p == nil or p == "fro" then
    if p == "fro" and type(dim) == "table" and #dim > 2 then
      not_yet("torch.norm: p='fro' over more than two dims is not yet supported by fxdb")
    end
    p = 2
  elseif type(p) == "string" then
    not_yet("torch.norm: p='" .. p .. "' (a matrix norm) is not yet supported by fxdb")
  end
  return vector_norm(x, p, dim, keepdim, opts)
end
methods.norm = torch.norm

function torch.is_floating_point(x) return x:is_floating_point() end
function torch.is_complex(x) return x:is_complex() end
-- fxdb has no conjugate or negative bit (docs/CHOICES.md): x:conj() is conj_physical, a new
-- tensor, so no tensor is a lazy conjugate and resolving one is the tensor itself, as PyTorch's
-- resolve_conj / resolve_neg of a tensor without the bit.
function torch.is_conj(x) return false end
function torch.is_neg(x) return false end
function torch.resolve_conj(x) return x end
function torch.resolve_neg(x) return x end
methods.is_conj, methods.is_neg = torch.is_conj, torch.is_neg
methods.resolve_conj, methods.resolve_neg = torch.resolve_conj, torch.resolve_neg
function torch.numel(x) return x:numel() end
function torch.get_default_dtype() return torch._default_dtype end

-- Dtypes by name for torch.dtype lookups in user code ("torch.float16" strings in ported code).
function torch.dtype_of(name)
  return torch[(name:gsub("^torch%.", ""))]
end

return torch
