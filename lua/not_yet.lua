-- lua/not_yet.lua — clear "not yet supported" errors for PyTorch names fxdb does not have yet.
-- Layer: lua (embedded; runs after torch.lua, nn.lua and the other chunks, so it only fills gaps).
-- Without it `x:cos()` or `torch.cond(...)` would fail with Lua's "attempt to call a nil value".

-- Every stub is installed only where nothing else is defined: once an op is registered in
-- core/ops.def (the C side then creates torch.<name> and the method) or a feature lands in Lua,
-- the stub is never seen. Errors are fxdb error objects of kind "not_implemented", located at
-- the user's Lua line, as lx_bind.c's own "is not yet supported by fxdb" errors are.

local ERROR_MT = debug.getregistry()["fxdb.Error"]
local E = torch._export

local function raise(message, hint)
  local frame = E and E.user_frame and E.user_frame() or {}
  local e = {kind = "not_implemented", code = "FX_ENOTIMPL", message = message, hint = hint,
             location = frame.location, source = frame.source, func = frame.func}
  local stack = nn and nn._module_stack
  if stack and #stack > 0 then
    e.module, e.module_class = stack[#stack].path, stack[#stack].cls
  end
  error(setmetatable(e, ERROR_MT), 0)
end

local function stub(what, later)
  return function()
    raise(what .. " is not yet supported by fxdb (" .. later .. ")")
  end
end

-- ---- features of later issues ----------------------------------------------------------------

local HOP = "higher-order ops come with the control-flow issue; a Lua `if` on shapes specializes"
local DYN = "dynamic shapes come with a later issue; export specializes every size"
local UNBACKED = "data-dependent values come with a later issue"

torch.cond = torch.cond or stub("torch.cond", HOP)
torch._higher_order_ops = torch._higher_order_ops or {}
for _, name in ipairs{"map", "scan", "while_loop"} do
  torch._higher_order_ops[name] = torch._higher_order_ops[name] or
    stub("torch._higher_order_ops." .. name, HOP)
end
torch.export = torch.export or {}
torch.export.Dim = torch.export.Dim or stub("torch.export.Dim", DYN)
torch.sym_min = torch.sym_min or stub("torch.sym_min", DYN)
torch.sym_max = torch.sym_max or stub("torch.sym_max", DYN)
torch._check = torch._check or stub("torch._check", UNBACKED)
torch._check_is_size = torch._check_is_size or stub("torch._check_is_size", UNBACKED)
torch._dynamo = torch._dynamo or {}
torch._dynamo.assume_constant_result = torch._dynamo.assume_constant_result or
  stub("torch._dynamo.assume_constant_result", "the escape hatches come with a later issue")

-- ---- ops of API.md §3 that core/ops.def does not register yet ------------------------------------

local OPS = {
  "pow", "remainder", "floor_divide", "abs", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos",
  "tanh", "sigmoid", "relu", "gelu", "silu", "reciprocal", "clamp", "minimum", "maximum", "where",
  "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not",
  "amax", "amin", "max", "min", "argmax", "argmin", "prod", "var", "std", "all", "any", "cumsum",
  "addmm", "outer", "baddbmm", "softmax", "log_softmax", "layer_norm", "rms_norm", "embedding",
  "dropout", "scaled_dot_product_attention", "unflatten", "split", "chunk", "unbind", "cat",
  "stack", "repeat", "diagonal", "index_select", "gather", "scatter", "scatter_add", "masked_fill",
  "masked_fill_", "index_copy", "diagonal_scatter", "as_strided_scatter", "tril", "triu",
}
local NOT_METHODS = {cat = true, stack = true, embedding = true, layer_norm = true, rms_norm = true,
                     scaled_dot_product_attention = true}
-- A name without a registered overload goes through the same C path as a registered one
-- (lx_call_opname via an op packet's __call), which raises "NAME is not yet supported by fxdb (no
-- aten.NAME overload is registered)" located like every other op error (tail calls recovered).
local PACKET_MT = getmetatable(torch.ops.aten.add)
local function op_stub(name)
  if PACKET_MT and PACKET_MT.__call then
    local packet = setmetatable({_name = name}, PACKET_MT)
    return function(...) return packet(...) end
  end
  return stub(name, "no aten." .. name .. " overload is registered")
end
local methods = getmetatable(torch.zeros(1)).__methods
for _, name in ipairs(OPS) do
  local f = op_stub(name)
  if torch[name] == nil then torch[name] = f end
  if methods and not NOT_METHODS[name] and methods[name] == nil then methods[name] = f end
end
