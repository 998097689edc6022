-- lua/check.lua — the argument checks of every public function fxdb implements in Lua, declared
-- once as signatures (SIGNATURES below) and applied by wrapping the functions when fxdb starts.
-- Layer: lua (embedded; loaded last, after every chunk that defines a public function).
--
-- A wrong argument is an fxdb error object (kind "argument", code FX_EARG) located at the user's
-- line, naming the function, the argument and what was expected:
--   bad argument #2 'args' to 'fxdb.run' (table expected, got number)
-- An options table with an unknown key is an error of kind "unknown_option" naming the option and
-- the closest valid one (fxdb._check_options, lua/lx_aux.c, which the C functions use too):
--   torch.export.export: unknown option 'strcit' (did you mean 'strict'?) (valid options: ...)
-- Functions written in C check their own arguments the same way (lx_checkinteger & co in
-- lua/lx_aux.c; op bindings in lua/lx_bind.c).
--
-- Signature syntax: "name:type, name:type?, ..." where type is one or more of the names in IS
-- joined by '|', "opts:options.KIND" checks an options table against OPTIONS[KIND] (it may be
-- one of the types: "bias:boolean|options.linear"), a trailing '?' allows nil, a trailing "..."
-- accepts any further arguments, and a trailing "{KIND}" says that a last argument which is a
-- plain table without list items is PyTorch-style keyword arguments, checked against
-- OPTIONS[KIND], after any of the positional ones (nn.Conv2d(3, 8, 3, {stride = 2})). Without
-- "...", passing more arguments than the signature has is an error, as a Python call would be.

local C = {}
local ERROR_MT = debug.getregistry()["fxdb.Error"]
local REG = debug.getregistry()

-- The valid keys of each kind of options table. Extend a list here when a function learns a new
-- option (keys starting with '_' are fxdb's internal options and always pass).
C.OPTIONS = {
  export = {"strict", "real", "ir", "lift_mutated_constants", "dynamic_shapes", "auto_functionalized_v2"},
  trace = {"strict", "real", "ir", "lift_mutated_constants", "dynamic_shapes", "detached"},
  run = {"step"},
  report = {"strict", "real", "dynamic_shapes"},
  warnings = {"clear"},
  break_on = {"temporary"},
  lesson = {"all"},
  custom_op = {"schema", "mutates_args", "device_types"},
  render = {"why", "depth", "expand", "collapse", "module", "params", "edge_shapes", "legend",
            "progress", "title"},   -- repl/render_bind.c's options (viz owns them)
  scan = {"dim", "reverse", "additional_inputs"},
  -- keyword arguments of nn's constructors and F functions (lua/nn.lua)
  linear = {"bias", "dtype"},
  conv = {"stride", "padding", "dilation", "groups", "bias", "padding_mode", "dtype"},
  gelu = {"approximate"},
  dropout = {"p", "inplace"},
  F_dropout = {"p", "training", "inplace"},
  embedding = {"padding_idx", "dtype"},
  layer_norm = {"eps", "elementwise_affine", "bias"},
  rms_norm = {"eps", "elementwise_affine"},
  batch_norm = {"eps", "momentum", "affine", "track_running_stats", "dtype"},
  F_batch_norm = {"weight", "bias", "training", "momentum", "eps"},
  group_norm = {"eps", "affine", "dtype"},
  F_group_norm = {"weight", "bias", "eps"},
}

local function udata_is(name)
  local mt = REG[name]
  return function(v) return getmetatable(v) == mt and mt ~= nil end
end

local function callable(v)
  if type(v) == "function" then return true end
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__call ~= nil
end

-- What each type name accepts.
C.IS = {
  any = function() return true end,
  table = function(v) return type(v) == "table" end,
  string = function(v) return type(v) == "string" end,
  number = function(v) return type(v) == "number" end,
  integer = function(v) return math.type(v) == "integer" or (math.type(v) == "float" and v == math.floor(v) and v > -2^63 and v < 2^63) end,
  boolean = function(v) return type(v) == "boolean" end,
  callable = callable,
  Tensor = function(v) return torch.is_tensor(v) end,
  Module = function(v) return type(v) == "table" and nn.is_module(v) end,
  ExportedProgram = udata_is("fxdb.ExportedProgram"),
  GraphModule = udata_is("fxdb.GraphModule"),
  Graph = udata_is("fxdb.Graph"),
  Node = udata_is("fxdb.Node"),
  dtype = udata_is("fxdb.dtype"),
  SymInt = udata_is("fxdb.SymInt"),
}

-- The public functions implemented in Lua and what they take. A function missing here is found
-- by tests/lua/test_api_check.lua (every public Lua function must have a signature).
C.SIGNATURES = {
  ["torch.export.export"] = "mod:Module, args:table?, opts:options.export?",
  ["torch.library.define"] = "qualname:string, schema:string",
  ["torch.library.impl"] = "qualname:string, types:string|table, fn:callable?",
  ["torch.library.register_fake"] = "qualname:string|table, fn:callable?",
  ["torch.library.custom_op"] = "qualname:string, fn:callable, opts:options.custom_op?",
  ["torch.library.Library"] = "ns:string, kind:string?",
  ["torch.export.default_decompositions"] = "",
  ["torch.export.dims"] = "name:string, ...",
  ["torch.export.refine_dynamic_shapes_from_suggested_fixes"] = "msg:string|table, dynamic_shapes:table",
  ["torch.export.dynamic_shapes.refine_dynamic_shapes_from_suggested_fixes"] =
    "msg:string|table, dynamic_shapes:table",
  ["torch.sym_max"] = "a:number|SymInt, b:number|SymInt",
  ["torch.sym_min"] = "a:number|SymInt, b:number|SymInt",
  ["torch.sym_int"] = "v:number|SymInt",
  ["torch.sym_float"] = "v:number|SymInt",
  ["torch.sym_not"] = "v:boolean",
  ["torch.sym_eq"] = "a:any, b:any",
  ["torch.sym_ne"] = "a:any, b:any",
  ["torch._check"] = "cond:any, message:string?",
  ["torch._dynamo.assume_constant_result"] = "fn:any",
  ["torch._check_is_size"] = "v:any, message:string?",
  ["torch._constrain_as_size"] = "v:any, opts:table?",
  ["torch._constrain_as_value"] = "v:any, opts:table?",
  ["fxdb.export"] = "mod:Module?, args:table?, opts:options.export?",
  ["fxdb.trace"] = "mod:Module, args:table?, opts:options.trace?",
  ["fxdb.run"] = "ep:ExportedProgram|Graph?, args:table?, opts:options.run?",
  ["fxdb.check"] = "mod:Module?, ep:ExportedProgram?, args:table?",
  ["fxdb.report"] = "mod:Module?, args:table?, opts:options.report?",
  ["fxdb.open"] = "path:string",
  ["fxdb.json_summary"] = "ep:ExportedProgram?",
  ["fxdb.reinplace"] = "ep:ExportedProgram?",
  ["fxdb.graph"] = "stage:string?, ep:ExportedProgram?",
  ["fxdb.code"] = "ep:ExportedProgram|GraphModule?",
  ["fxdb.sig"] = "ep:ExportedProgram?",
  ["fxdb.node"] = "name:string, ep:ExportedProgram?",
  ["fxdb.users"] = "name:string, ep:ExportedProgram?",
  ["fxdb.inputs"] = "name:string, ep:ExportedProgram?",
  ["fxdb.find"] = "query:string, ep:ExportedProgram?",
  ["fxdb.guards"] = "ep:ExportedProgram?",
  ["fxdb.symbol"] = "name:string, ep:ExportedProgram?",
  ["fxdb.why"] = "target:string, ep:ExportedProgram?",
  ["fxdb.diff"] = "g1:Graph|ExportedProgram|GraphModule|string, g2:Graph|ExportedProgram|GraphModule|string",
  ["fxdb.break_on"] = "where:string|table, opts:options.break_on?",
  ["fxdb.watch"] = "target:string",
  ["fxdb.delete"] = "n:integer|string?",
  ["fxdb.enable"] = "n:integer|string?",
  ["fxdb.disable"] = "n:integer|string?",
  ["fxdb.display"] = "expr:string?",
  ["fxdb.undisplay"] = "n:integer|string?",
  ["fxdb.eval"] = "expr:string",
  ["fxdb.print_expr"] = "expr:string",
  ["fxdb.print"] = "...",
  ["fxdb.info"] = "topic:string?",
  ["fxdb.list"] = "where:string|integer?",
  ["fxdb.set"] = "name:string, value:any?",
  ["fxdb.step"] = "n:integer|string?",
  ["fxdb.next"] = "",
  ["fxdb.finish"] = "",
  ["fxdb.continue"] = "",
  ["fxdb.until"] = "where:string|integer?",
  ["fxdb.advance_until"] = "where:string|integer?",
  ["fxdb.reverse_step"] = "n:integer|string?",
  ["fxdb.reverse-step"] = "n:integer|string?",
  ["fxdb.where"] = "",
  ["fxdb.frame"] = "n:integer|string?",
  ["fxdb.up"] = "n:integer|string?",
  ["fxdb.down"] = "n:integer|string?",
  ["fxdb.kill"] = "",
  ["fxdb.warnings"] = "opts:options.warnings?",
  ["fxdb.simplefilter"] = "action:string",
  ["fxdb.chunk_env"] = "",
  ["fxdb.help"] = "name:string",   -- repl/help.c
  ["fxdb.lesson"] = "n:integer|string?, opts:options.lesson?",
  ["fxdb.explain"] = "ep:ExportedProgram?",
  ["fxdb.summary"] = "value:any, max_lines:integer?",
  ["fxdb.render"] = "graph:Graph|ExportedProgram|GraphModule, file:string?, opts:options.render?",
  ["torch.cond"] = "pred:Tensor|boolean|number|SymInt, true_fn:callable, false_fn:callable, operands:table?",
  ["torch.map"] = "f:callable, xs:Tensor|table, ...",
  ["torch.no_grad"] = "fn:callable, ...",
  ["torch.set_grad_enabled"] = "mode:any",
  ["torch.is_grad_enabled"] = "",
  ["torch.get_default_dtype"] = "",
  ["torch.dtype_of"] = "name:string",
  ["torch.is_floating_point"] = "input:Tensor",
  ["torch.is_complex"] = "input:Tensor",
  ["torch.is_conj"] = "input:Tensor",
  ["torch.is_neg"] = "input:Tensor",
  ["torch.resolve_conj"] = "input:Tensor",
  ["torch.resolve_neg"] = "input:Tensor",
  ["torch.numel"] = "input:Tensor",
  ["torch.einsum"] = "equation:string, ...",
  ["torch.norm"] = "input:Tensor, p:number|string|table?, dim:integer|table?, keepdim:boolean|table?, opts:table?",
  ["torch.linalg.vector_norm"] = "x:Tensor, ord:number|table?, dim:integer|table?, keepdim:boolean|table?, opts:table?",
  ["torch.arange"] = "...",       -- checked by the op binding it calls
  ["nn.Parameter"] = "data:Tensor, requires_grad:boolean?",
  ["nn.functional.dropout"] = "input:Tensor, p:number?, training:boolean?, inplace:boolean?, {F_dropout}",
  ["nn.functional.batch_norm"] = "input:Tensor, running_mean:Tensor?, running_var:Tensor?, " ..
    "weight:Tensor?, bias:Tensor?, training:boolean?, momentum:number?, eps:number?, {F_batch_norm}",
  ["nn.functional.group_norm"] = "input:Tensor, num_groups:integer, weight:Tensor?, bias:Tensor?, " ..
    "eps:number?, {F_group_norm}",
  ["torch.library.impl_abstract"] = "qualname:string|table, fn:callable?",
  ["torch.ops.higher_order.cond"] = "pred:Tensor|boolean|number|SymInt, true_fn:callable, false_fn:callable, operands:table?",
  ["torch.ops.higher_order.map"] = "f:callable, xs:Tensor|table, ...",
  ["torch.ops.higher_order.scan"] = "combine_fn:callable, init:Tensor|table, xs:Tensor|table, " ..
    "dim:integer|options.scan?, reverse:boolean?, additional_inputs:table?",
  ["nn.is_module"] = "value:any?",
  ["nn.is_parameter"] = "value:any?",
}

-- nn's classes: what their constructors take (the checks run before the class's init).
C.CLASS_SIGNATURES = {
  ["nn.Linear"] = "in_features:integer, out_features:integer, bias:boolean|options.linear?",
  ["nn.Conv1d"] = "in_channels:integer, out_channels:integer, kernel_size:integer|table, " ..
    "stride:integer|table?, padding:integer|table|string?, dilation:integer|table?, groups:integer?, " ..
    "bias:boolean?, {conv}",
  ["nn.Conv2d"] = "in_channels:integer, out_channels:integer, kernel_size:integer|table, " ..
    "stride:integer|table?, padding:integer|table|string?, dilation:integer|table?, groups:integer?, " ..
    "bias:boolean?, {conv}",
  ["nn.GELU"] = "approximate:string|options.gelu?",
  ["nn.Dropout"] = "p:number|options.dropout?, inplace:boolean?",
  ["nn.Embedding"] = "num_embeddings:integer, embedding_dim:integer, opts:options.embedding?",
  ["nn.LayerNorm"] = "normalized_shape:integer|table, opts:options.layer_norm?",
  ["nn.RMSNorm"] = "normalized_shape:integer|table, opts:options.rms_norm?",
  ["nn.BatchNorm1d"] = "num_features:integer, eps:number?, momentum:number|boolean?, affine:boolean?, " ..
    "track_running_stats:boolean?, {batch_norm}",
  ["nn.BatchNorm2d"] = "num_features:integer, eps:number?, momentum:number|boolean?, affine:boolean?, " ..
    "track_running_stats:boolean?, {batch_norm}",
  ["nn.BatchNorm3d"] = "num_features:integer, eps:number?, momentum:number|boolean?, affine:boolean?, " ..
    "track_running_stats:boolean?, {batch_norm}",
  ["nn.GroupNorm"] = "num_groups:integer, num_channels:integer, eps:number?, affine:boolean?, {group_norm}",
  ["nn.Sequential"] = "...",  -- modules, or one list of them (checked by add_module)
  ["nn.ModuleList"] = "modules:table?",
  ["nn.ModuleDict"] = "modules:table?",
}

-- Parses "a:T1|T2?, b:options.export?, ..." into {params = {{name, types, optional, options}},
-- varargs}.
local function parse(qual, sig)
  local out = {params = {}, varargs = false}
  for item in sig:gmatch("[^,]+") do
    item = item:match("^%s*(.-)%s*$")
    if item == "..." then
      out.varargs = true
    elseif item:match("^{[%w_]+}$") then
      out.kwargs = assert(C.OPTIONS[item:sub(2, -2)], "lua/check.lua: no options list " .. item)
    elseif item ~= "" then
      local name, ty = item:match("^([%w_]+):(.+)$")
      assert(name, "lua/check.lua: bad signature of " .. qual .. ": " .. item)
      local p = {name = name, optional = ty:sub(-1) == "?", types = {}}
      if p.optional then ty = ty:sub(1, -2) end
      local names = {}
      for t in ty:gmatch("[^|]+") do
        local kind = t:match("^options%.([%w_]+)$")
        if kind then
          p.options = assert(C.OPTIONS[kind], "lua/check.lua: no options list " .. kind)
          p.types[#p.types + 1], names[#names + 1] = C.IS.table, "options table"
        else
          p.types[#p.types + 1] = assert(C.IS[t], "lua/check.lua: unknown type " .. t .. " in " .. qual)
          names[#names + 1] = t
        end
      end
      p.expected = table.concat(names, " or ")
      out.params[#out.params + 1] = p
    end
  end
  return out
end

local user_frame = torch._export.user_frame

local function arg_error(msg)
  local frame = user_frame()
  error(setmetatable({kind = "argument", code = "FX_EARG", message = msg, location = frame.location,
                      source = frame.source, func = frame.func}, ERROR_MT), 0)
end

local function type_of(v)
  if torch.is_tensor(v) then return "Tensor" end
  for _, name in ipairs{"ExportedProgram", "GraphModule", "Graph", "Node", "dtype"} do
    if C.IS[name](v) then return name end
  end
  if type(v) == "table" and nn.is_module(v) then return "Module" end
  if v == nil then return "nil" end
  return type(v)
end

-- Checks the arguments of one call against a parsed signature.
local function check_call(qual, s, n, ...)
  local params = s.params
  if s.kwargs and n > 0 then -- PyTorch-style keyword arguments last
    local last = select(n, ...)
    if type(last) == "table" and getmetatable(last) == nil and rawlen(last) == 0 then
      fxdb._check_options(qual, last, s.kwargs)
      n = n - 1
    end
  end
  if n > #params and not s.varargs then
    arg_error(string.format("%s() takes %d argument%s but %d were given", qual, #params,
                                  #params == 1 and "" or "s", n))
  end
  for i = 1, #params do
    local p, v = params[i], nil
    if i <= n then v = select(i, ...) end
    if v == nil then
      if not p.optional then
        arg_error(string.format("bad argument #%d '%s' to '%s' (%s expected, got no value)",
                                      i, p.name, qual, p.expected))
      end
    else
      local ok = false
      for _, is in ipairs(p.types) do
        if is(v) then ok = true break end
      end
      if not ok then
        arg_error(string.format("bad argument #%d '%s' to '%s' (%s expected, got %s)", i,
                                      p.name, qual, p.expected, type_of(v)))
      end
      if p.options and type(v) == "table" then fxdb._check_options(qual, v, p.options) end
    end
  end
end

-- Wraps the function `qual` ("fxdb.run") with its checks (sig: its signature, by default the
-- declared one; lua/lx_aux.c's fxlua_register calls wrap(qual) for C functions registered later). The wrapper tail-calls the function, so
-- error levels inside it still count from the caller.
local function wrap(qual, sig)
  sig = sig or C.SIGNATURES[qual]
  if not sig then return end
  local tname, key = qual:match("^(.*)%.([^.]+)$")
  local t = load("return " .. tname)()
  local f = t and rawget(t, key)
  if type(f) ~= "function" then return end
  local s = parse(qual, sig)
  rawset(t, key, function(...)
    check_call(qual, s, select("#", ...), ...)
    return f(...)
  end)
end

for qual, sig in pairs(C.SIGNATURES) do wrap(qual, sig) end

-- Wraps the init of class `qual` ("nn.Linear", inherited or its own) with the checks of its
-- constructor's signature: nn.Linear(3, "2") fails at the user's line before init runs.
local function wrap_class(qual, sig)
  local cls = load("return " .. qual)()
  if type(cls) ~= "table" then return end -- an op this build lacks (nn.lua defines it only then)
  local init, s = cls.init, parse(qual, sig)
  rawset(cls, "init", function(self, ...)
    check_call(qual, s, select("#", ...), ...)
    if init then return init(self, ...) end
  end)
end

for qual, sig in pairs(C.CLASS_SIGNATURES) do wrap_class(qual, sig) end

-- for tests and for other chunks that add a public function later
C.wrap, C.parse = wrap, parse
-- arg_error(msg): raises an argument error (kind "argument") at the user's line, for checks a
-- signature cannot say (hop.lua's map: every leaf of xs a tensor)
C.arg_error = arg_error
fxdb._argcheck = C
return C
