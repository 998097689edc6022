-- tests/peer/test_run_decompositions.lua — ep:run_decompositions(decomp_table) lowering to core
-- ATen as torch 2.5's default table does, and torch.export.default_decompositions() (PyTorch's
-- test_export.py: test_export_preserve_linear_but_not_custom_op, the decomposition tests).
-- Layer: tests. Expected graphs are what torch 2.5 prints for the same programs.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local function ops(ep)
  local out = {}
  for _, n in ipairs(ep.graph.nodes) do
    if n.op == "call_function" then out[#out + 1] = n.name .. "=" .. n.target end
  end
  return table.concat(out, " ")
end

local Lin = nn.Module:extend("Lin")
function Lin:init() self.linear = nn.Linear(4, 4) end
function Lin:forward(x) return self.linear(x):sin() end

local NoBias = nn.Module:extend("NoBias")
function NoBias:init() self.proj = nn.Linear(3, 2, {bias = false}) end
function NoBias:forward(x) return self.proj(x) end

local Mix = nn.Module:extend("Mix")
function Mix:init()
  self.proj = nn.Linear(3, 2, {bias = false})
  self.norm = nn.RMSNorm({2}, {eps = 1e-6})
  self:register_buffer("steps", torch.zeros(2))
end
function Mix:forward(x)
  local h = self.norm(self.proj(x))
  self.steps:add_(h:sum(0))
  return nn.functional.silu(h):sum(), torch.softmax(h, -1)
end

P.modes(function(strict, mode)
  T.test("default table: linear -> permute + addmm, as torch 2.5, " .. mode, function()
    local m, x = Lin(), torch.randn(4, 4)
    local ep = torch.export.export(m, {x}, {strict = strict})
    local d = ep:run_decompositions()
    T.eq(ops(d), "permute=aten.permute.default addmm=aten.addmm.default sin=aten.sin.default")
    T.truthy(tostring(d.graph_module.code):find(
      "addmm = torch.ops.aten.addmm.default(p_linear_bias, x, permute)", 1, true),
      d.graph_module.code)
    P.numbers(m, d, {x})
    T.eq(ops(ep), "linear=aten.linear.default sin=aten.sin.default", "the program is unchanged")
  end)

  T.test("a table without linear keeps it (test_export_preserve_linear_but_not_custom_op), " ..
         mode, function()
    local tbl = torch.export.default_decompositions()
    tbl["aten.linear.default"] = nil
    local ep = torch.export.export(Lin(), {torch.randn(4, 4)}, {strict = strict})
    local d = ep:run_decompositions(tbl)
    T.eq(tostring(d.graph_module.code):match("^%s*(.-)%s*$"), table.concat({
      "def forward(self, p_linear_weight, p_linear_bias, x):",
      "    linear = torch.ops.aten.linear.default(x, p_linear_weight, p_linear_bias);  x = p_linear_weight = p_linear_bias = None",
      "    sin = torch.ops.aten.sin.default(linear);  linear = None",
      "    return (sin,)"}, "\n"))
  end)

  T.test("3-D input with bias: view + addmm + view; no bias: matmul's mm + view, " .. mode, function()
    local m, x = Lin(), torch.randn(2, 3, 4)
    local d = torch.export.export(m, {x}, {strict = strict}):run_decompositions()
    T.eq(ops(d), "view=aten.view.default permute=aten.permute.default addmm=aten.addmm.default " ..
      "view_1=aten.view.default sin=aten.sin.default")
    P.numbers(m, d, {x})
    local nb = NoBias()
    local x3 = torch.randn(2, 4, 3)
    local d3 = torch.export.export(nb, {x3}, {strict = strict}):run_decompositions()
    T.eq(ops(d3), "permute=aten.permute.default view=aten.view.default mm=aten.mm.default " ..
      "view_1=aten.view.default")
    P.numbers(nb, d3, {x3})
  end)

  T.test("rms_norm, silu, sum.default lowered; _softmax kept; mutations kept, " .. mode, function()
    local m, x = Mix(), torch.randn(4, 3)
    local ep = torch.export.export(m, {x}, {strict = strict})
    local d = ep:run_decompositions()
    T.eq(ops(d), table.concat({
      "permute=aten.permute.default", "mm=aten.mm.default", "pow_1=aten.pow.Tensor_Scalar",
      "mean=aten.mean.dim", "add=aten.add.Tensor", "rsqrt=aten.rsqrt.default",
      "mul=aten.mul.Tensor", "mul_1=aten.mul.Tensor", "sum_1=aten.sum.dim_IntList",
      "add_1=aten.add.Tensor", "sigmoid=aten.sigmoid.default", "mul_2=aten.mul.Tensor",
      "sum_2=aten.sum.dim_IntList", "_softmax=aten._softmax.default"}, " "))
    T.truthy(tostring(d.graph_module.code):find("sum_2 = torch.ops.aten.sum.dim_IntList(mul_2, [])",
      1, true), d.graph_module.code)
    local _, outs = P.sig(d)
    T.eq(outs, "add_1: BUFFER_MUTATION target='steps'\nsum_2: USER_OUTPUT\n_softmax: USER_OUTPUT")
    P.numbers(m, d, {x})
    -- locations survive: the decomposed nodes carry the original stack traces
    local pv = fxdb.provenance(d, "steps")
    T.eq(pv[2].node.name, "add_1")
    T.truthy(pv[2].location:find("test_run_decompositions.lua:", 1, true), pv[2].location)
  end)

  T.test("an empty table only functionalizes; a training IR program becomes functional, " .. mode,
         function()
    local m, x = Mix(), torch.randn(4, 3)
    local tr = torch.export.export(m, {x}, {strict = strict, ir = "training"})
    T.truthy(tostring(tr.graph):find("add_.Tensor", 1, true), "training IR keeps add_")
    local f = tr:run_decompositions({})
    local ep = torch.export.export(m, {x}, {strict = strict})
    T.eq(ops(f), ops(ep))
    P.numbers(m, f, {x})
  end)

  -- Hugging Face / ExecuTorch KV caches: index_copy lowers to index_put with None dims
  local Cache = nn.Module:extend("Cache")
  function Cache:init() self:register_buffer("k", torch.zeros(1, 2, 5, 3)) end
  function Cache:forward(v, pos) self.k:index_copy_(2, pos, v); return self.k:sum() end
  T.test("index_copy_ on a cache -> index_put with None for the leading dims, " .. mode, function()
    local m, v, pos = Cache(), torch.randn(1, 2, 1, 3), torch.tensor({2})
    local d = torch.export.export(m, {v, pos}, {strict = strict}):run_decompositions()
    T.eq(ops(d), "index_put=aten.index_put.default sum_1=aten.sum.dim_IntList")
    T.truthy(tostring(d.graph):find("index_put.default](args = (%b_k, [None, None, %pos], %v)",
      1, true), tostring(d.graph))
    local _, outs = P.sig(d)
    T.eq(outs, "index_put: BUFFER_MUTATION target='k'\nsum_1: USER_OUTPUT")
    P.numbers(m, d, {v, pos})
  end)
end)

local Vec = nn.Module:extend("Vec")
function Vec:forward(a, v) return a:matmul(v), v:matmul(v) end
T.test("mv and dot lowered to mul + sum.dim_IntList", function()
  local m, args = Vec(), {torch.randn(3, 4), torch.randn(4)}
  local ep = torch.export.export(m, args)
  T.eq(ops(ep), "mv=aten.mv.default dot=aten.dot.default")
  local d = ep:run_decompositions()
  T.eq(ops(d), "mul=aten.mul.Tensor sum_1=aten.sum.dim_IntList mul_1=aten.mul.Tensor " ..
    "sum_2=aten.sum.dim_IntList")
  T.truthy(tostring(d.graph):find("sum.dim_IntList](args = (%mul, [1])", 1, true), tostring(d.graph))
  local c = fxdb.check(m, d, args)
  T.truthy(c.ok and c.max_abs_error < 1e-5, tostring(c))
end)

-- higher-order ops replay with their bodies, which are lowered too (as make_fx retraces them)
local Hop = nn.Module:extend("Hop")
function Hop:init() self.lin = nn.Linear(3, 3); self:register_buffer("s", torch.zeros(3)) end
function Hop:forward(x, xs)
  local y = torch.cond(x:sum():gt(0), function(a) return self.lin(a) end,
                       function(a) return nn.functional.silu(a) end, {x})
  local c, ys = torch._higher_order_ops.scan(function(cc, t) return cc + t, (cc * t):sum() end, y, xs)
  local z = torch.map(function(t, b) return t * b end, xs, y)
  self.s:add_(c:sum(0))
  return y, ys, z
end
T.test("cond / scan / map programs: bodies lowered, mutations kept, both IRs", function()
  local m = Hop()
  for _, ir in ipairs{"functional", "training"} do
    for _, sign in ipairs{1, -1} do
      local args = {torch.randn(2, 3):abs() * sign, torch.randn(4, 2, 3)}
      local d = torch.export.export(m, args, {ir = ir}):run_decompositions()
      local code = tostring(d.graph_module.code)
      local text = tostring(d)
      T.falsy(text:find("aten.linear", 1, true), "linear lowered inside true_graph_0")
      T.falsy(text:find("aten.silu", 1, true), "silu lowered inside false_graph_0")
      T.truthy(text:find("sum.dim_IntList(mul, [])", 1, true), "sum lowered inside the scan body")
      T.truthy(code:find("torch.ops.higher_order.cond(gt, true_graph_0, false_graph_0, [x, p_lin_weight, p_lin_bias])",
        1, true), code)
      local _, outs = P.sig(d)
      T.eq(outs, "add: BUFFER_MUTATION target='s'\ngetitem: USER_OUTPUT\ngetitem_2: USER_OUTPUT\n" ..
        "getitem_3: USER_OUTPUT")
      local c = fxdb.check(m, d, args)
      T.truthy(c.ok and c.max_abs_error < 1e-5, tostring(c))
    end
  end
end)

local Fill = nn.Module:extend("Fill")
function Fill:forward(x)
  return x + torch.ones(2, 3) + torch.zeros_like(x) + torch.zeros(2, 3, torch.int64) +
         torch.ones_like(x, {dtype = torch.bool})
end
T.test("zeros / ones / zeros_like / ones_like lowered to full / full_like as torch/_refs does", function()
  local m, x = Fill(), torch.randn(2, 3)
  local d = torch.export.export(m, {x}):run_decompositions()
  local code = tostring(d.graph_module.code)
  for _, line in ipairs{
    "full = torch.ops.aten.full.default([2, 3], 1, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'), pin_memory = False)",
    "full_like = torch.ops.aten.full_like.default(x, 0, pin_memory = False, memory_format = torch.preserve_format)",
    "full_1 = torch.ops.aten.full.default([2, 3], 0, dtype = torch.int64, layout = torch.strided, device = device(type='cpu'), pin_memory = False)",
    "full_like_1 = torch.ops.aten.full_like.default(x, True, dtype = torch.bool, pin_memory = False, memory_format = torch.preserve_format)"} do
    T.truthy(code:find(line, 1, true), line .. "\n" .. code)
  end
  P.numbers(m, d, {x})
end)

T.test("decomp_table entries: user functions, checked arguments", function()
  local tbl = {["aten.sin.default"] = function(x) return torch.ops.aten.cos.default(x) end}
  local d = torch.export.export(Lin(), {torch.randn(4, 4)}):run_decompositions(tbl)
  T.eq(ops(d), "linear=aten.linear.default cos=aten.cos.default")
  T.checkerr("table of decompositions expected, got string",
    function() return d:run_decompositions("core") end)
  T.checkerr("must be a function, got number",
    function() return d:run_decompositions({["aten.sin.default"] = 1}) end)
  local t1, t2 = torch.export.default_decompositions(), torch.export.default_decompositions()
  t1["aten.silu.default"] = nil
  T.truthy(t2["aten.silu.default"] ~= nil, "each call returns a new table")
end)

T.done()
