-- tests/lua/test_nn.lua — nn.Module: classes, PyTorch's __setattr__ rules, registration,
-- traversal order, state_dict / load_state_dict (keys, order, messages), train/eval, the export
-- hooks (_on_setattr, _module_stack, _paths, _raw_get/_raw_set, _named_state) and the built-in
-- modules. Expected values are written by hand from PyTorch's behaviour.
local T = dofile("tests/lua/harness.lua")

local function names(pairs_list)
  local out = {}
  for i, p in ipairs(pairs_list) do out[i] = p[1] end
  return table.concat(out, " ")
end

local vals = T.vals

-- A small model: M(proj: Linear(4, 4), w, state, cache (non-persistent), a (plain tensor)).
local M = nn.Module:extend("M")
function M:init(n)
  self:register_buffer("state", torch.tensor({7, 5, 6}, torch.float16))
  self:register_buffer("cache", torch.zeros(4), {persistent = false})
  self.proj = nn.Linear(n, n)
  self.w = nn.Parameter(torch.randn(n))
  self.a = torch.randn(2, 2)
  self.n = n
end
function M:forward(x) return self.proj(x) + self.w end

-- ---- classes and attributes --------------------------------------------------------------------

T.test("extend makes a callable class; init gets the arguments", function()
  local m = M(4)
  T.eq(m.n, 4)
  T.eq(tostring(M), "<class 'M'>")
  T.truthy(nn.is_module(m))
  local y = m(torch.ones(3, 4))
  T.eq(tostring(y.shape), "torch.Size([3, 4])")
  local Sub = M:extend("Sub")
  function Sub:forward(x) return M.forward(self, x) * 2 end
  local s = Sub(2)
  T.eq(s.n, 2)
  T.truthy(s.proj ~= nil, "inherited init ran")
  T.eq(tostring(s(torch.zeros(1, 2)).shape), "torch.Size([1, 2])")
end)

T.test("parameters, submodules, buffers and plain attributes land in the right place", function()
  local m = M(4)
  local d = rawget(m, "__dict")
  T.truthy(d._parameters.w ~= nil, "w is a parameter")
  T.truthy(d._modules.proj ~= nil, "proj is a submodule")
  T.truthy(d._buffers.state ~= nil, "state is a buffer")
  T.truthy(d._non_persistent_buffers_set.cache, "cache is non-persistent")
  T.truthy(d.a ~= nil and d._parameters.a == nil and d._buffers.a == nil, "a is a plain attribute")
  T.truthy(rawequal(m.w, d._parameters.w))
  T.truthy(nn.is_parameter(m.w))
  T.eq(m.w.requires_grad, true)
  T.eq(m.training, true)
end)

T.test("__setattr__ rules: buffers replaced, parameters guarded", function()
  local m = M(4)
  local newstate = torch.ones(3)
  m.state = newstate                              -- a tensor assigned to a buffer name replaces it
  T.truthy(rawequal(m.state, newstate))
  T.eq(names(m:named_buffers()), "state cache")
  local e = T.checkerr("cannot assign 'torch.FloatTensor' as parameter 'w' (torch.nn.Parameter or None expected)",
    function() m.w = torch.zeros(4) end)
  T.eq(type(e), "string")
  T.checkerr("cannot assign 'int' as child module 'proj' (torch.nn.Module or None expected)",
    function() m.proj = 3 end)
  T.checkerr("cannot assign 'str' as buffer 'state' (torch.Tensor or None expected)",
    function() m.state = "x" end)
  m.w = nil                                        -- None keeps the name registered
  T.eq(m.w, nil)
  T.eq(names(m:named_parameters()), "proj.weight proj.bias")
  m.w = nn.Parameter(torch.zeros(4))
  T.eq(names(m:named_parameters()), "w proj.weight proj.bias")
  -- a Parameter assigned over a plain attribute turns it into a parameter
  m.a = nn.Parameter(torch.zeros(1))
  T.eq(rawget(m, "__dict").a, nil)
  T.truthy(rawget(m, "__dict")._parameters.a ~= nil)
  -- a module assigned over a registered parameter name is refused, as in PyTorch
  T.checkerr("cannot assign 'Identity' as parameter 'w'", function() m.w = nn.Identity() end)
  -- a module assigned over a plain attribute moves it to _modules
  m.n = nn.Identity()
  T.eq(rawget(m, "__dict").n, nil)
  T.truthy(nn.is_module(m.n))
end)

T.test("register_buffer / register_parameter checks", function()
  local m = M(4)
  T.checkerr("attribute 'n' already exists", function() m:register_buffer("n", torch.ones(1)) end)
  T.checkerr('buffer name can\'t contain "."', function() m:register_buffer("a.b", torch.ones(1)) end)
  T.checkerr('buffer name can\'t be empty string ""', function() m:register_buffer("", torch.ones(1)) end)
  T.checkerr("cannot assign 'int' object to buffer 'b' (torch Tensor or None required)",
    function() m:register_buffer("b", 3) end)
  T.checkerr("cannot assign 'torch.FloatTensor' object to parameter 'p' (torch.nn.Parameter or None required)",
    function() m:register_parameter("p", torch.ones(1)) end)
  m:register_buffer("state", torch.zeros(3))       -- re-registering a buffer is allowed
  m:register_parameter("p", nil)
  T.eq(m.p, nil)
  m:register_buffer("late", torch.ones(2), {persistent = false})
  T.eq(names(m:named_buffers()), "state cache late")
end)

-- ---- traversal and state dicts (a module's own parameters, then its own buffers, then its
-- children, as _save_to_state_dict / _load_from_state_dict walk) ----------------------------------------------------------------------

local Inner = nn.Module:extend("Inner")
function Inner:init()
  self.lin = nn.Linear(2, 3)
  self:register_buffer("count", torch.zeros(1))
end
function Inner:forward(x) return self.lin(x) end

local Outer = nn.Module:extend("Outer")
function Outer:init()
  self:register_buffer("scale", torch.ones(1))
  self.first = Inner()
  self.bias = nn.Parameter(torch.zeros(3))
  self.second = Inner()
  self:register_buffer("tmp", torch.zeros(1), {persistent = false})
end
function Outer:forward(x) return self.first(x) + self.bias end

T.test("named_parameters / named_buffers / named_modules order", function()
  local m = Outer()
  T.eq(names(m:named_parameters()), "bias first.lin.weight first.lin.bias second.lin.weight second.lin.bias")
  T.eq(names(m:named_buffers()), "scale tmp first.count second.count")
  T.eq(names(m:named_modules()), " first first.lin second second.lin")
  T.eq(names(m:named_children()), "first second")
  T.eq(#m:parameters(), 5)
  T.eq(#m:buffers(), 4)
  T.eq(#m:children(), 2)
  T.eq(#m:modules(), 5)
  T.truthy(rawequal(m:get_submodule("second.lin"), m.second.lin))
end)

T.test("state_dict: PyTorch's keys and order, persistent buffers only, same tensors", function()
  local m = Outer()
  local sd = m:state_dict()
  T.eq(table.concat(sd:keys(), " "),
       "bias scale first.count first.lin.weight first.lin.bias second.count second.lin.weight second.lin.bias")
  T.eq(#sd, 8)
  T.truthy(rawequal(sd["first.lin.weight"], m.first.lin.weight))
  T.eq(sd.tmp, nil)
  local order = {}
  for k in pairs(sd) do order[#order + 1] = k end
  T.eq(table.concat(order, " "), table.concat(sd:keys(), " "))
end)

T.test("load_state_dict copies in place", function()
  local a, b = Outer(), Outer()
  local w = b.first.lin.weight
  local res = b:load_state_dict(a:state_dict())
  T.truthy(rawequal(b.first.lin.weight, w), "same tensor object")
  T.eq(vals(b.first.lin.weight), vals(a.first.lin.weight))
  T.eq(#res.missing_keys, 0)
  T.eq(#res.unexpected_keys, 0)
  -- a plain table works too
  b:load_state_dict({scale = torch.tensor({3.0}), bias = torch.ones(3),
    ["first.lin.weight"] = torch.zeros(3, 2), ["first.lin.bias"] = torch.zeros(3),
    ["first.count"] = torch.zeros(1), ["second.lin.weight"] = torch.zeros(3, 2),
    ["second.lin.bias"] = torch.zeros(3), ["second.count"] = torch.zeros(1)})
  T.eq(vals(b.scale), "3.0000")
  T.eq(vals(b.bias), "1.0000 1.0000 1.0000")
end)

T.test("load_state_dict errors as PyTorch words them", function()
  local m = Inner()
  local good = m:state_dict()
  T.checkerr('Error(s) in loading state_dict for Inner:\n\tMissing key(s) in state_dict: "count". ',
    function() m:load_state_dict({["lin.weight"] = good["lin.weight"], ["lin.bias"] = good["lin.bias"]}) end)
  T.checkerr('Unexpected key(s) in state_dict: "extra". ', function()
    m:load_state_dict({["lin.weight"] = good["lin.weight"], ["lin.bias"] = good["lin.bias"],
                       count = good.count, extra = torch.ones(1)})
  end)
  T.checkerr("size mismatch for lin.weight: copying a param with shape torch.Size([2, 2]) from " ..
             "checkpoint, the shape in current model is torch.Size([3, 2]).", function()
    m:load_state_dict({["lin.weight"] = torch.ones(2, 2), ["lin.bias"] = good["lin.bias"], count = good.count})
  end)
  -- missing first, then unexpected, then size mismatches
  local e = T.checkerr("Missing key(s)", function()
    m:load_state_dict({["lin.weight"] = torch.ones(2, 2), extra = torch.ones(1)})
  end)
  local s = tostring(e)
  T.truthy(s:find("Missing", 1, true) < s:find("Unexpected", 1, true))
  T.truthy(s:find("Unexpected", 1, true) < s:find("size mismatch", 1, true))
  local res = m:load_state_dict({["lin.weight"] = torch.zeros(3, 2), extra = torch.ones(1)}, {strict = false})
  T.eq(table.concat(res.missing_keys, " "), "count lin.bias")
  T.eq(table.concat(res.unexpected_keys, " "), "extra")
  T.eq(vals(m.lin.weight), "0.0000 0.0000 0.0000 0.0000 0.0000 0.0000")
end)

T.test("train / eval propagate", function()
  local m = Outer()
  T.truthy(rawequal(m:eval(), m))
  T.eq(m.training, false)
  T.eq(m.first.lin.training, false)
  m:train()
  T.eq(m.second.training, true)
  m:train(false)
  T.eq(m.second.lin.training, false)
end)

-- ---- export hooks -------------------------------------------------------------------------------------

T.test("_module_stack: pushed during forward, popped after, also on error", function()
  local seen
  local Probe = nn.Module:extend("Probe")
  function Probe:forward(x)
    seen = {}
    for i, e in ipairs(nn._module_stack) do seen[i] = e.path .. ":" .. e.cls end
    if x == "fail" then error({custom = true}) end
    return x
  end
  local Wrap = nn.Module:extend("Wrap")
  function Wrap:init() self.inner = Probe() end
  function Wrap:forward(x) return self.inner(x) end
  local w = Wrap()
  w(1)                                             -- eager: paths follow the calling modules
  T.eq(table.concat(seen, " "), ":Wrap inner:Probe")
  T.eq(#nn._module_stack, 0)
  nn._paths = {[w] = "root", [w.inner] = "custom.path"} -- export sets nn._paths
  w(1)
  T.eq(table.concat(seen, " "), "root:Wrap custom.path:Probe")
  nn._paths = nil
  local lone = Probe()
  lone(1)
  T.eq(table.concat(seen, " "), ":Probe")
  local seq = nn.Sequential(nn.Identity(), Probe())
  seq(1)
  T.eq(table.concat(seen, " "), ":Sequential 1:Probe")
  local ok, err = pcall(w, "fail")
  T.falsy(ok)
  T.eq(type(err), "table")
  T.truthy(err.custom, "the error object passes through unchanged")
  T.eq(#nn._module_stack, 0)
end)

T.test("_on_setattr sees every assignment and may skip it", function()
  local m = M(2)
  local log = {}
  nn._on_setattr = function(mod, name, value)
    log[#log + 1] = name
    return name == "skipme"
  end
  m.skipme = 1
  m.kept = 2
  m.a = torch.ones(1)                              -- existing plain attribute: still seen
  nn._on_setattr = nil
  T.eq(table.concat(log, " "), "skipme kept a")
  T.eq(m.skipme, nil)
  T.eq(m.kept, 2)
end)

T.test("a tensor attribute created in forward is refused by export in both modes", function()
  local N = nn.Module:extend("N")
  function N:forward(x) self.fresh = x + 1; return x * 2 end
  for _, strict in ipairs{true, false} do
    local m = N()
    local ok, e = pcall(torch.export.export, m, {torch.ones(2)}, {strict = strict})
    T.falsy(ok)
    T.eq(e.kind, "attribute_assignment")
    T.eq(m.fresh, nil)                              -- state restored
  end
end)

T.test("_raw_get / _raw_set bypass hooks and rules", function()
  local m = M(2)
  nn._on_setattr = function() error("hook must not run") end
  local t = torch.zeros(2)
  m:_raw_set("param", "w", t)                      -- a plain tensor as a parameter: no rule applies
  T.truthy(rawequal(m:_raw_get("param", "w"), t))
  m:_raw_set("buffer", "state", t)
  T.truthy(rawequal(m:_raw_get("buffer", "state"), t))
  m:_raw_set("attr", "a", t)
  T.truthy(rawequal(m:_raw_get("attr", "a"), t))
  nn._on_setattr = nil
  T.eq(m:_raw_get("param", "nope"), nil)
  T.checkerr("param, buffer or attr expected", function() m:_raw_get("x", "w") end)
end)

T.test("_named_state: parameters, buffers, tensor attributes, recursively", function()
  local O = nn.Module:extend("O")
  function O:init()
    self.c1 = torch.ones(1)
    self:register_buffer("b1", torch.ones(1))
    self.sub = M(2)
    self.p1 = nn.Parameter(torch.ones(1))
    self.c0 = torch.ones(1)
    self.notensor = 5
  end
  local o = O()
  local parts = {}
  for _, s in ipairs(o:_named_state()) do
    parts[#parts + 1] = s.kind .. ":" .. s.path .. (s.persistent and "" or "(np)")
    T.truthy(rawequal(s.owner:_raw_get(s.kind, s.name), s.tensor))
  end
  T.eq(table.concat(parts, " "),
       "param:p1 param:sub.w param:sub.proj.weight param:sub.proj.bias " ..
       "buffer:b1 buffer:sub.state buffer:sub.cache(np) attr:c1(np) attr:c0(np) attr:sub.a(np)")
end)

T.test("a tied parameter is listed once", function()
  local Tied = nn.Module:extend("Tied")
  function Tied:init()
    self.a = nn.Linear(2, 2)
    self.b = nn.Linear(2, 2)
    self.b.weight = self.a.weight
  end
  local t = Tied()
  T.eq(names(t:named_parameters()), "a.weight a.bias b.bias")
  T.eq(#t:_named_state(), 3)
  T.eq(table.concat(t:state_dict():keys(), " "), "a.weight a.bias b.weight b.bias")
end)

-- ---- built-in modules -----------------------------------------------------------------------------------

T.test("Linear: shapes, init bounds, forward = x W^T + b", function()
  torch.manual_seed(0)
  local lin = nn.Linear(4, 3)
  T.eq(tostring(lin.weight.shape), "torch.Size([3, 4])")
  T.eq(tostring(lin.bias.shape), "torch.Size([3])")
  T.eq(lin.weight.dtype, torch.float32)
  for _, v in ipairs(lin.weight:reshape(-1):tolist()) do T.truthy(math.abs(v) <= 0.5, v) end
  for _, v in ipairs(lin.bias:tolist()) do T.truthy(math.abs(v) <= 0.5, v) end
  local x = torch.tensor({{1.0, 2.0, 3.0, 4.0}, {0.5, -1.0, 0.0, 2.0}})
  local y = lin(x)
  local W, b, X = lin.weight:tolist(), lin.bias:tolist(), x:tolist()
  for i = 1, 2 do
    for j = 1, 3 do
      local want = b[j]
      for k = 1, 4 do want = want + X[i][k] * W[j][k] end
      T.near(y[{i - 1, j - 1}]:item(), want, 1e-5)
    end
  end
  T.eq(tostring(lin), "Linear(in_features=4, out_features=3, bias=True)")
  local nb = nn.Linear(2, 2, {bias = false})
  T.eq(nb.bias, nil)
  T.eq(names(nb:named_parameters()), "weight")
  T.eq(tostring(nb), "Linear(in_features=2, out_features=2, bias=False)")
  T.eq(tostring(nn.Linear(2, 2, false)), "Linear(in_features=2, out_features=2, bias=False)")
end)

T.test("Sequential, ModuleList, ModuleDict, Identity", function()
  local seq = nn.Sequential(nn.Linear(2, 3), nn.Identity(), nn.Linear(3, 1))
  T.eq(#seq, 3)
  T.eq(names(seq:named_children()), "0 1 2")
  T.truthy(rawequal(seq[0], seq["0"]))
  T.truthy(rawequal(seq[-1], seq["2"]))
  T.eq(tostring(seq(torch.ones(5, 2)).shape), "torch.Size([5, 1])")
  local seq2 = nn.Sequential{nn.Identity(), nn.Identity()}
  T.eq(#seq2, 2)
  local l = nn.ModuleList{nn.Linear(1, 1)}
  l:append(nn.Linear(1, 2))
  T.eq(#l, 2)
  T.eq(l[1].out_features, 2)
  local seen = {}
  for i, mod in pairs(l) do seen[#seen + 1] = i .. "=" .. mod.out_features end
  T.eq(table.concat(seen, " "), "0=1 1=2")
  local d = nn.ModuleDict{b = nn.Identity(), a = nn.Linear(1, 1)}
  T.eq(table.concat(d:keys(), " "), "a b")
  T.eq(d.a.in_features, 1)
  local d2 = nn.ModuleDict{{"z", nn.Identity()}, {"y", nn.Identity()}}
  T.eq(table.concat(d2:keys(), " "), "z y")
  local x = torch.ones(2)
  T.truthy(rawequal(nn.Identity()(x), x))
  T.eq(tostring(nn.Sequential(nn.Identity())), "Sequential(\n  (0): Identity()\n)")
end)

T.test("missing forward and bad Parameter", function()
  local NoFwd = nn.Module:extend("NoFwd")
  T.checkerr('Module [NoFwd] is missing the required "forward" function', function() NoFwd()(1) end)
  T.checkerr("bad argument #1 'data' to 'nn.Parameter' (Tensor expected, got number)", nn.Parameter, 1)
  local p = nn.Parameter(torch.ones(1), false)
  T.eq(p.requires_grad, false)
end)

T.test("module-level to(dtype) converts floating state", function()
  local m = M(2)
  m:half()
  T.eq(m.proj.weight.dtype, torch.float16)
  T.truthy(nn.is_parameter(m.proj.weight))
  T.eq(m.state.dtype, torch.float16)
  T.eq(m.a.dtype, torch.float32)                    -- plain attributes are not state
end)

T.done()
