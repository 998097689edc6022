-- tests/lua/test_group_norm_dropout.lua — group norm and dropout from Lua: F.group_norm /
-- torch.native_group_norm values against torch 1.13 for the same inputs, PyTorch's messages,
-- nn.GroupNorm, what export records (aten.group_norm, kept as layer_norm is), F.dropout with
-- inplace (aten.dropout_ in the training IR, dropout + write-back in the functional one), the
-- seeded masks of dropout_ and dropout agreeing, nn.Dropout(p, inplace), and eager against the
-- exported program in both modes.
local T = dofile("tests/lua/harness.lua")
local F = nn.functional

local vals = T.vals
local function targets(ep) return T.targets(ep, true) end

local x = ((torch.arange(2 * 4 * 3.) % 7 - 3) / 4):reshape(2, 4, 3)
local w = torch.tensor({0.5, -1.0, 2.0, 1.5})
local b = torch.tensor({0.25, 0.0, -0.5, 1.0})

T.test("F.group_norm / native_group_norm values as torch 1.13 gives them", function()
  T.eq(vals(F.group_norm(x, 2, w, b, 1e-3)), "-0.4799 -0.1880 0.1040 -0.2920 -0.8759 -1.4599 " ..
    "2.8737 -3.1989 -2.1868 0.4939 1.2530 2.0121 0.7614 0.9974 -0.4187 0.8654 0.3934 -0.0787 " ..
    "0.4242 1.3485 2.2727 -1.0795 -0.3864 0.3068")
  local o, m, r = torch.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-3)
  -- torch's float sums leave the last mean at -0.0000
  T.near((m - torch.tensor({{-0.125, -0.0833333}, {-0.0416667, 0}})):abs():max():item(), 0, 1e-6)
  T.eq(vals(r), "2.3358 2.0242 1.8881 1.8485")
  T.eq(table.concat(m.shape, "x"), "2x2")
  T.near((o - F.group_norm(x, 2, w, b, 1e-3)):abs():max():item(), 0, 1e-6)
  local d = F.group_norm(x:double(), 4)
  T.eq(d.dtype, torch.float64)
  T.eq(vals(d[0]), "-1.2246 0.0000 1.2246 -1.2246 0.0000 1.2246 1.3970 -0.8890 -0.5080 -1.2246 " ..
    "0.0000 1.2246")
  local xt = x:transpose(1, 2):contiguous():transpose(1, 2)
  T.near((F.group_norm(xt, 2, w, b) - F.group_norm(x, 2, w, b)):abs():max():item(), 0, 1e-6)
  local h = F.group_norm(x:to(torch.bfloat16), 2, w, b)
  T.eq(h.dtype, torch.bfloat16)
  T.near((h:float() - F.group_norm(x, 2, w, b)):abs():max():item(), 0, 0.05)
end)

T.test("PyTorch's messages", function()
  T.checkerr("Expected number of channels in input to be divisible by num_groups, but got input " ..
    "of shape [2, 4, 3] and num_groups=3", F.group_norm, x, 3)
  T.checkerr("Expected weight to be a vector of size equal to the number of channels in input, " ..
    "but got weight of shape [3] and input of shape [2, 4, 3]", F.group_norm, x, 2, torch.ones(3))
  T.checkerr("\"GroupNormKernelImpl\" not implemented for 'Long'", F.group_norm, x:long(), 2)
  T.checkerr("Expected at least 2 dimensions for input tensor but received 1", F.group_norm, torch.randn(3), 1)
  T.checkerr("num_channels must be divisible by num_groups", nn.GroupNorm, 3, 4)
  T.checkerr("dropout probability has to be between 0 and 1, but got 1.5", F.dropout, x, 1.5)
  T.checkerr("dropout probability has to be between 0 and 1, but got -0.5", torch.dropout_, x:clone(), -0.5, true)
end)

T.test("nn.GroupNorm and nn.Dropout: parameters and repr", function()
  local g = nn.GroupNorm(2, 4)
  T.eq(tostring(g), "GroupNorm(2, 4, eps=1e-05, affine=True)")
  T.eq(vals(g.weight) .. " " .. vals(g.bias), "1.0000 1.0000 1.0000 1.0000 0.0000 0.0000 0.0000 0.0000")
  T.eq(nn.GroupNorm(2, 4, {affine = false}).weight, nil)
  T.eq(tostring(nn.Dropout(0.2, true)), "Dropout(p=0.2, inplace=True)")
  T.eq(tostring(nn.Dropout()), "Dropout(p=0.5, inplace=False)")
end)

T.test("dropout_ writes the mask dropout draws, also through a strided view", function()
  torch.manual_seed(7)
  local y = F.dropout(x, 0.5)
  torch.manual_seed(7)
  local z = x:clone()
  local r = F.dropout(z, 0.5, true, true)
  T.eq(vals(z), vals(y))
  T.truthy(r == z or vals(r) == vals(z))
  local big = x:clone()
  local view = big:transpose(1, 2) -- not contiguous
  torch.manual_seed(7)
  local ref = F.dropout(view:contiguous(), 0.5)
  torch.manual_seed(7)
  F.dropout(view, 0.5, {inplace = true})
  T.eq(vals(view), vals(ref))
  local e = x:clone()
  F.dropout(e, 0.5, false, true) -- not training: unchanged
  T.eq(vals(e), vals(x))
end)

local Net = nn.Module:extend("GNNet")
function Net:init(inplace)
  self.gn = nn.GroupNorm(2, 4)
  self.drop = nn.Dropout(0.25, inplace)
end
function Net:forward(a) return self.drop(self.gn(a) * 2) end

T.test("export records group_norm and dropout / dropout_ in both modes and IRs", function()
  for _, strict in ipairs({true, false}) do
    local m = Net(true)
    local ep = torch.export.export(m, {x}, {strict = strict})
    T.eq(targets(ep), "aten.group_norm.default aten.mul.Tensor aten.dropout.default")
    T.truthy(tostring(ep):find("torch.ops.aten.group_norm.default(a, 2, p_gn_weight, p_gn_bias)", 1, true),
      tostring(ep))
    local tr = torch.export.export(m, {x}, {strict = strict, ir = "training"})
    T.eq(targets(tr), "aten.group_norm.default aten.mul.Tensor aten.dropout_.default")
    T.eq(targets(torch.export.export(Net(false), {x}, {strict = strict})),
      "aten.group_norm.default aten.mul.Tensor aten.dropout.default")
    m:eval()
    local ev = torch.export.export(m, {x}, {strict = strict})
    T.eq(targets(ev), "aten.group_norm.default aten.mul.Tensor")
    T.near((ev:module()(x) - m(x)):abs():max():item(), 0, 1e-6)
    m:train()
    torch.manual_seed(3)
    local e = m(x)
    torch.manual_seed(3)
    T.near((ep:module()(x) - e):abs():max():item(), 0, 1e-6)
  end
end)

T.test("a dropout_ on a user input is a USER_INPUT_MUTATION", function()
  local M = nn.Module:extend("DropIn")
  function M:forward(a)
    F.dropout(a, 0.5, true, true)
    return a + 1
  end
  local ep = torch.export.export(M(), {x:clone()})
  T.truthy(tostring(ep):find("USER_INPUT_MUTATION target='a'", 1, true), tostring(ep))
  T.eq(targets(ep), "aten.dropout.default aten.add.Tensor")
end)

T.test("dynamic batch size stays symbolic through group_norm", function()
  local m = Net(false)
  m:eval()
  local ep = torch.export.export(m, {x}, {dynamic_shapes = {a = {[0] = torch.export.Dim("batch", {min = 2})}}})
  T.truthy(tostring(ep):find('group_norm: "f32[s0, 4, 3]"', 1, true), tostring(ep))
  local x5 = torch.randn(5, 4, 3)
  T.near((ep:module()(x5) - m(x5)):abs():max():item(), 0, 1e-6)
end)

T.done()
