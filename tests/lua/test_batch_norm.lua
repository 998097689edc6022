-- tests/lua/test_batch_norm.lua — batch norm from Lua: F.batch_norm / torch.native_batch_norm
-- values against torch 1.13 for the same inputs (training with and without running statistics,
-- evaluation, float64, bfloat16 input with float32 statistics), the running-statistics update,
-- PyTorch's messages, nn.BatchNorm1d / 2d / 3d (state, repr, train / eval, affine,
-- track_running_stats, momentum = false as None's cumulative average), and what export records
-- in both modes and both IRs (_native_batch_norm_legit_functional with the running statistics as
-- BUFFER_MUTATION outputs, as torch 2.5 prints it), eager against the exported program over
-- several steps, and a dynamic batch size.
local T = dofile("tests/lua/harness.lua")
local F = nn.functional

local vals = T.vals
local function targets(ep) return T.targets(ep, true) end

local x = ((torch.arange(2 * 3 * 5.) % 7 - 3) / 4):reshape(2, 3, 5)
local w = torch.tensor({0.5, -1.0, 2.0})
local b = torch.tensor({0.25, 0.0, -0.5})
local function stats() return torch.tensor({0.1, -0.2, 0.3}), torch.tensor({1.5, 0.5, 2.0}) end

T.test("F.batch_norm values and running statistics as torch 1.13 gives them", function()
  local rm, rv = stats()
  local y = F.batch_norm(x, rm, rv, w, b, true, 0.3, 1e-3)
  T.eq(vals(y), "-0.5804 -0.2482 0.0839 0.4161 0.7482 -1.0891 -1.5429 1.1799 0.7261 0.2723 " ..
    "-0.8630 0.0446 0.9521 1.8597 -3.5858 -0.2482 0.0839 0.4161 0.7482 1.0804 -1.5429 1.1799 " ..
    "0.7261 0.2723 -0.1815 0.0446 0.9521 1.8597 -3.5858 -2.6782")
  T.eq(vals(rm), "0.0325 -0.1700 0.2400")
  T.eq(vals(rv), "1.0969 0.4508 1.5008")
  rm, rv = stats()
  local o, sm, sr = torch.native_batch_norm(x, w, b, rm, rv, true, 0.3, 1e-3)
  T.eq(vals(sm) .. " " .. vals(sr), "-0.1250 -0.1000 0.1000 2.6572 1.8152 1.8152")
  T.near((o - y):abs():max():item(), 0, 1e-6)
  rm, rv = stats()
  F.batch_norm(x, rm, rv, w, b, true, 0.3, 1e-3)
  y = F.batch_norm(x, rm, rv, {weight = w, bias = b, momentum = 0.3, eps = 1e-3})
  T.eq(vals(y), "-0.1234 -0.0041 0.1152 0.2345 0.3538 -0.9967 -1.3687 0.8629 0.4909 0.1190 " ..
    "-0.8917 -0.4837 -0.0757 0.3323 -2.1157 -0.0041 0.1152 0.2345 0.3538 0.4731 -1.3687 " ..
    "0.8629 0.4909 0.1190 -0.2529 -0.4837 -0.0757 0.3323 -2.1157 -1.7077")
  T.eq(vals(rm), "0.0325 -0.1700 0.2400") -- evaluation leaves them alone
  local _, e1, e2 = torch.native_batch_norm(x, w, b, rm, rv, false, 0.3, 1e-3)
  T.eq(table.concat(e1.shape, "x") .. " " .. table.concat(e2.shape, "x"), "0 0")
  y = F.batch_norm(x:double(), nil, nil, nil, nil, true)
  T.eq(y.dtype, torch.float64)
  T.eq(vals(y[0]), "-1.6666 -1.0000 -0.3333 0.3333 1.0000 1.0909 1.5454 -1.1818 -0.7273 " ..
    "-0.2727 -0.1818 0.2727 0.7273 1.1818 -1.5454")
end)

T.test("bfloat16 input with float32 statistics (mixed type) and float16", function()
  local x4 = ((torch.arange(2 * 2 * 3 * 3.) % 5 - 2) / 3):reshape(2, 2, 3, 3):to(torch.bfloat16)
  local o, sm, sr = torch.native_batch_norm(x4, nil, nil, torch.zeros(2), torch.ones(2), true, 0.1, 1e-5)
  T.eq(o.dtype, torch.bfloat16)
  T.eq(sm.dtype, torch.float32)
  T.eq(vals(o[0][0]:float()), "-1.3359 -0.6289 0.0786 0.7891 1.5000 -1.3359 -0.6289 0.0786 0.7891")
  T.eq(vals(sm) .. " " .. vals(sr), "-0.0371 0.0000 2.1237 2.0607")
  local h = F.batch_norm(x:half(), nil, nil, nil, nil, true)
  T.eq(h.dtype, torch.float16)
  T.near((h:float() - F.batch_norm(x, nil, nil, nil, nil, true)):abs():max():item(), 0, 2e-3)
end)

T.test("non-contiguous input and strided statistics", function()
  local xt = x:transpose(0, 2):contiguous():transpose(0, 2) -- same values, other strides
  T.falsy(xt:is_contiguous())
  local big = torch.zeros(6)
  local rm = big:view(3, 2):select(1, 0)
  local rv = torch.ones(3)
  local y = F.batch_norm(xt, rm, rv, w, b, true, 0.5)
  local rm2, rv2 = torch.zeros(3), torch.ones(3)
  local y2 = F.batch_norm(x, rm2, rv2, w, b, true, 0.5)
  T.near((y - y2):abs():max():item(), 0, 1e-6)
  T.eq(vals(rm), vals(rm2))
  T.eq(vals(big:narrow(0, 1, 1)), "0.0000") -- the gaps are untouched
end)

T.test("PyTorch's messages", function()
  local rm, rv = stats()
  T.checkerr("\"batch_norm\" not implemented for 'Long'", F.batch_norm, x:long(), nil, nil, nil, nil, true)
  T.checkerr("running_mean should contain 3 elements not 4", F.batch_norm, x, torch.zeros(4), rv, {training = true})
  T.checkerr("weight should contain 3 elements not 2", F.batch_norm, x, rm, rv, torch.ones(2))
  T.checkerr("running_mean must be defined in evaluation mode", F.batch_norm, x, nil, nil)
  T.checkerr("Expected more than 1 value per channel when training, got input size torch.Size([1, 3])",
    F.batch_norm, torch.randn(1, 3), rm, rv, {training = true})
  T.checkerr("mixed dtype (CPU): expect parameter to have scalar type of Float", F.batch_norm,
    x:to(torch.bfloat16), rm:double(), rv, {training = true})
  T.checkerr("mixed dtype (CPU): all inputs must share same datatype.", F.batch_norm,
    x:double(), rm, rv, {training = true})
  T.checkerr("running_var is None, but running_mean is provided. They should both be None or both be provided.",
    torch.native_batch_norm, x, nil, nil, rm, nil, true, 0.1, 1e-5)
  T.checkerr("expected 4D input (got 3D input)", nn.BatchNorm2d(3), x)
  T.checkerr("expected 2D or 3D input (got 4D input)", nn.BatchNorm1d(3), x:unsqueeze(0))
end)

T.test("nn.BatchNorm modules: state, repr, train / eval, momentum = false (cumulative average)", function()
  local bn = nn.BatchNorm1d(3)
  T.eq(tostring(bn), "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)")
  local keys = {}
  for k in pairs(bn:state_dict()) do keys[#keys + 1] = k end
  table.sort(keys)
  T.eq(table.concat(keys, " "), "bias num_batches_tracked running_mean running_var weight")
  T.eq(bn.num_batches_tracked.dtype, torch.int64)
  local c = nn.BatchNorm1d(3, {momentum = false})
  T.eq(tostring(c), "BatchNorm1d(3, eps=1e-05, momentum=None, affine=True, track_running_stats=True)")
  for i = 1, 3 do c(x * i) end
  T.eq(vals(c.running_mean) .. " " .. vals(c.running_var), "-0.2500 -0.2000 0.2000 0.7292 1.5685 1.5685")
  T.eq(c.num_batches_tracked:item(), 3)
  c:eval()
  local y = c(x)
  T.near((y - F.batch_norm(x, c.running_mean, c.running_var, c.weight, c.bias)):abs():max():item(), 0, 1e-6)
  T.eq(c.num_batches_tracked:item(), 3)
  local n = nn.BatchNorm2d(2, {affine = false, track_running_stats = false})
  T.eq(n.weight, nil)
  T.eq(n.running_mean, nil)
  n:eval() -- no running statistics: batch statistics even in eval mode
  local x4 = torch.randn(3, 2, 2, 2)
  T.near((n(x4) - F.batch_norm(x4, nil, nil, nil, nil, true)):abs():max():item(), 0, 1e-6)
end)

local Net = nn.Module:extend("BNNet")
function Net:init(opts)
  self.conv = nn.Conv2d(2, 3, 1)
  self.bn = nn.BatchNorm2d(3, opts)
end
function Net:forward(a) return self.bn(self.conv(a)):relu() end

T.test("export records batch norm as torch 2.5 does, in both modes", function()
  torch.manual_seed(1)
  local m = Net()
  local xi = torch.randn(4, 2, 3, 3)
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(m, {xi}, {strict = strict})
    T.eq(targets(ep), "aten.convolution.default aten.add.Tensor " ..
      "aten._native_batch_norm_legit_functional.default aten.relu.default")
    local s = tostring(ep)
    T.truthy(s:find("_native_batch_norm_legit_functional = torch.ops.aten._native_batch_norm_legit_functional.default(" ..
      "convolution, p_bn_weight, p_bn_bias, b_bn_running_mean, b_bn_running_var, True, 0.1, 1e-05)", 1, true), s)
    T.truthy(s:find('getitem_3: "f32[3]" = _native_batch_norm_legit_functional[3]', 1, true), s)
    T.truthy(s:find("return (getitem_3, getitem_4, add, relu)", 1, true), s)
    T.truthy(s:find("getitem_3: BUFFER_MUTATION target='bn.running_mean'\n    getitem_4: BUFFER_MUTATION " ..
      "target='bn.running_var'\n    add: BUFFER_MUTATION target='bn.num_batches_tracked'", 1, true), s)
    -- the unlifted module against eager, three steps (running statistics carried)
    local mod = ep:module()
    local ref = Net()
    ref:load_state_dict(m:state_dict())
    for step = 1, 3 do
      local inp = xi * step - 0.5
      T.near((mod(inp) - ref(inp)):abs():max():item(), 0, 1e-5)
    end
    T.near((mod["bn.running_mean"] - ref.bn.running_mean):abs():max():item(), 0, 1e-6)
    T.near((mod["bn.running_var"] - ref.bn.running_var):abs():max():item(), 0, 1e-6)
    T.eq(mod["bn.num_batches_tracked"]:item(), 3)
    T.eq(m.bn.num_batches_tracked:item(), 0) -- export leaves the module alone
    local tr = torch.export.export(m, {xi}, {strict = strict, ir = "training"})
    T.eq(targets(tr), "aten.convolution.default aten.add_.Tensor aten._native_batch_norm_legit.default " ..
      "aten.relu.default")
  end
  m:eval()
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(m, {xi}, {strict = strict})
    T.eq(targets(ep), "aten.convolution.default aten._native_batch_norm_legit_no_training.default " ..
      "aten.relu.default")
    T.truthy(tostring(ep):find("_native_batch_norm_legit_no_training.default(convolution, p_bn_weight, " ..
      "p_bn_bias, b_bn_running_mean, b_bn_running_var, 0.1, 1e-05)", 1, true))
    T.near((ep:module()(xi) - m(xi)):abs():max():item(), 0, 1e-5)
  end
  local nostats = Net({affine = false, track_running_stats = false})
  local ep = torch.export.export(nostats, {xi})
  T.eq(targets(ep), "aten.convolution.default aten._native_batch_norm_legit.no_stats aten.relu.default")
  T.truthy(tostring(ep):find("_native_batch_norm_legit.no_stats(convolution, None, None, True, 0.1, 1e-05)", 1, true))
end)

T.test("a running statistic that is a view of a bigger buffer is written back through it", function()
  local M = nn.Module:extend("BNView")
  function M:init() self:register_buffer("stats", torch.zeros(2, 3)) end
  function M:forward(a)
    return F.batch_norm(a, self.stats[0], self.stats[1], nil, nil, true, 0.5)
  end
  local m, xi = M(), x * 2
  m.stats[1]:fill_(1)
  local ep = torch.export.export(m, {xi})
  T.truthy(tostring(ep):find("stats: BUFFER_MUTATION", 1, true) or tostring(ep):find("BUFFER_MUTATION target='stats'", 1, true), tostring(ep))
  local mod = ep:module()
  local y1 = mod(xi)
  local y2 = m(xi)
  T.near((y1 - y2):abs():max():item(), 0, 1e-6)
  T.near((mod.stats - m.stats):abs():max():item(), 0, 1e-6)
end)

T.test("dynamic batch size stays symbolic through batch norm", function()
  local m = Net()
  local xi = torch.randn(4, 2, 3, 3)
  local ep = torch.export.export(m, {xi}, {dynamic_shapes = {a = {[0] = torch.export.Dim("batch", {min = 2})}}})
  T.truthy(tostring(ep):find('getitem: "f32[s0, 3, 3, 3]"', 1, true), tostring(ep))
  local x6 = torch.randn(6, 2, 3, 3)
  local ref = Net()
  ref:load_state_dict(m:state_dict())
  T.near((ep:module()(x6) - ref(x6)):abs():max():item(), 0, 1e-5)
end)

T.test("export: momentum = None (the cumulative average) as graph ops, in both modes, against eager", function()
  local M = nn.Module:extend("BNCum")
  function M:init() self.bn = nn.BatchNorm1d(3, {momentum = false}) end
  function M:forward(a) return self.bn(a) end
  for _, strict in ipairs({true, false}) do
    local m = M()
    local ep = torch.export.export(m, {x}, {strict = strict})
    local t = targets(ep)
    T.truthy(t:find("aten._native_batch_norm_legit.no_stats", 1, true), t)
    T.truthy(t:find("aten.reciprocal.default", 1, true), t)
    local s = tostring(ep)
    T.truthy(s:find("BUFFER_MUTATION target='bn.running_mean'", 1, true) and
      s:find("BUFFER_MUTATION target='bn.running_var'", 1, true) and
      s:find("BUFFER_MUTATION target='bn.num_batches_tracked'", 1, true), s)
    T.truthy(s:find("Range constraints: {}", 1, true), s) -- no data-dependent value left
    local mod, ref = ep:module(), M()
    for step = 1, 4 do -- the factor changes every call: 1, 1/2, 1/3, 1/4
      local inp = x * step - 0.5
      T.near((mod(inp) - ref(inp)):abs():max():item(), 0, 1e-6)
      T.near((mod["bn.running_mean"] - ref.bn.running_mean):abs():max():item(), 0, 1e-6)
      T.near((mod["bn.running_var"] - ref.bn.running_var):abs():max():item(), 0, 1e-6)
    end
    T.eq(mod["bn.num_batches_tracked"]:item(), 4)
    T.eq(m.bn.num_batches_tracked:item(), 0)
  end
end)

T.done()
