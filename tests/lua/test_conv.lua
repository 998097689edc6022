-- tests/lua/test_conv.lua — convolutions from Lua: F.conv1d / F.conv2d values against torch 1.13
-- for the same inputs (groups, stride, padding, dilation, bias, unbatched input, padding "same"
-- with an even kernel), what export records (aten.convolution, with unsqueeze / constant_pad_nd
-- / squeeze where aten's composite adds them), nn.Conv1d / nn.Conv2d construction, repr,
-- padding modes, and the eager module against its exported program.
local T = dofile("tests/lua/harness.lua")
local F = nn.functional

local vals, targets = T.vals, T.targets

local x = ((torch.arange(2 * 4 * 5 * 5.) % 7 - 3) / 4):reshape(2, 4, 5, 5)
local w = ((torch.arange(6 * 2 * 3 * 3.) % 5 - 2) / 3):reshape(6, 2, 3, 3)
local b = torch.tensor({0.5, -1, 0.25, 0, 1, -0.5})

T.test("F.conv2d / F.conv1d values as torch 1.13 gives them", function()
  local y = F.conv2d(x, w, b, {stride = 2, padding = 1, dilation = {1, 2}, groups = 2})
  T.eq(table.concat(y.shape, "x"), "2x6x3x2")
  T.eq(vals(y:reshape(-1):narrow(0, 0, 8)), "-0.3333 -0.3333 -0.5833 0.1667 0.5000 1.2500 -1.8333 0.2500")
  T.near(y:sum():item(), 1.9167, 1e-4)
  y = F.conv2d(x[0], w:narrow(2, 0, 2), nil, {padding = "same", groups = 2})
  T.eq(table.concat(y.shape, "x"), "6x5x5")
  T.near(y:sum():item(), 3.4167, 1e-4)
  T.near(y:abs():sum():item(), 111.5833, 1e-3)
  local x1 = ((torch.arange(27.) % 4) - 1.5):reshape(3, 9)
  local w1 = ((torch.arange(24.) % 3) - 1):reshape(4, 3, 2)
  y = F.conv1d(x1, w1, {padding = "same"})
  T.eq(vals(y[0]), "2.0000 -2.0000 2.0000 -2.0000 2.0000 -2.0000 2.0000 -2.0000 1.0000")
  T.eq(F.conv2d(x:double(), w:double(), nil, 1, 1, 1, 2).dtype, torch.float64)
  T.eq(F.conv2d(x:long(), w:long(), nil, 1, 0, 1, 2).dtype, torch.int64)
end)

T.test("PyTorch's messages", function()
  T.checkerr("Given groups=1, weight of size [6, 2, 3, 3], expected input[2, 4, 5, 5] to have 2 " ..
    "channels, but got 4 channels instead", F.conv2d, x, w)
  T.checkerr("Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [5, 5]",
    F.conv2d, x[0][0], w)
  T.checkerr("padding='same' is not supported for strided convolutions", F.conv2d, x, w, nil,
    {stride = 2, padding = "same", groups = 2})
  T.checkerr("Invalid padding string: 'foo'", F.conv2d, x, w, nil, {padding = "foo", groups = 2})
  T.checkerr("expected scalar type Float but found Double", F.conv2d, x, w:double(), nil,
    {groups = 2})
end)

T.test("export records aten.convolution as torch.export does", function()
  local M = nn.Module:extend("ConvM")
  function M:init() self.w = nn.Parameter(w) end
  function M:forward(a)
    return F.conv2d(a, self.w, nil, {padding = 1, groups = 2}),
           F.conv2d(a[0], self.w:narrow(2, 0, 2), nil, {padding = "same", groups = 2})
  end
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(M(), {x}, {strict = strict})
    T.eq(targets(ep), "aten.convolution.default aten.select.int aten.slice.Tensor " ..
      "aten.unsqueeze.default aten.constant_pad_nd.default aten.convolution.default aten.squeeze.dim")
    T.truthy(tostring(ep):find("torch.ops.aten.convolution.default(a, p_w, None, [1, 1], [1, 1], " ..
      "[1, 1], False, [0, 0], 2)", 1, true), tostring(ep))
    local r1, r2 = ep:module()(x)
    local e1, e2 = M()(x)
    T.near((r1 - e1):abs():max():item(), 0, 1e-6)
    T.near((r2 - e2):abs():max():item(), 0, 1e-6)
  end
end)

T.test("nn.Conv1d / nn.Conv2d: parameters, init bounds, repr, padding modes", function()
  torch.manual_seed(0)
  local c = nn.Conv2d(4, 6, 3, {padding = 1, groups = 2})
  T.eq(table.concat(c.weight.shape, "x"), "6x2x3x3")
  T.eq(table.concat(c.bias.shape, "x"), "6")
  local bound = 1 / math.sqrt(2 * 9)
  T.truthy(c.weight:abs():max():item() <= bound and c.bias:abs():max():item() <= bound)
  T.eq(tostring(c), "Conv2d(4, 6, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), groups=2)")
  T.eq(tostring(nn.Conv1d(3, 8, 5, 2, 0, 1, 1, false)),
    "Conv1d(3, 8, kernel_size=(5,), stride=(2,), bias=False)")
  T.eq(tostring(nn.Conv2d(2, 2, {1, 3}, {padding = "same", padding_mode = "reflect"})),
    "Conv2d(2, 2, kernel_size=(1, 3), stride=(1, 1), padding=same, padding_mode=reflect)")
  T.eq(table.concat(c(x).shape, "x"), "2x6x5x5")
  local r = nn.Conv2d(4, 2, 3, {padding = 1, padding_mode = "replicate"})
  local want = F.conv2d(F.pad(x, {1, 1, 1, 1}, "replicate"), r.weight, r.bias)
  T.near((r(x) - want):abs():max():item(), 0, 1e-6)
  T.checkerr("in_channels must be divisible by groups", nn.Conv2d, 3, 4, 3, {groups = 2})
  T.checkerr("padding='same' is not supported for strided convolutions", nn.Conv1d, 3, 4, 3,
    {stride = 2, padding = "same"})
end)

T.test("a conv module exported in both modes matches eager", function()
  local Net = nn.Module:extend("ConvNet")
  function Net:init()
    self.c1 = nn.Conv2d(4, 8, 3, {padding = 1})
    self.c2 = nn.Conv1d(8, 2, 2)
  end
  function Net:forward(a)
    local h = self.c1(a):relu()
    return self.c2(h:flatten(2))
  end
  local m = Net()
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(m, {x}, {strict = strict})
    T.eq(targets(ep), "aten.convolution.default aten.relu.default aten.view.default " ..
      "aten.convolution.default")
    T.near((ep:module()(x) - m(x)):abs():max():item(), 0, 1e-5)
  end
end)

T.test("dynamic shapes: batch and spatial sizes stay symbolic through aten.convolution", function()
  local m = nn.Conv2d(4, 8, 3, {stride = 2, padding = 1})
  local ep = torch.export.export(m, {x}, {dynamic_shapes = {{[0] = torch.export.Dim("batch")}}})
  T.truthy(tostring(ep):find('convolution: "f32[s0, 8, 3, 3]"', 1, true), tostring(ep))
  local y = torch.randn(1, 4, 9, 5)
  ep = torch.export.export(m, {y}, {dynamic_shapes = {{[2] = torch.export.Dim("h", {min = 4})}}})
  T.truthy(tostring(ep):find('convolution: "f32[1, 8, ((s0 - 1)//2) + 1, 3]"', 1, true),
           tostring(ep))
end)

T.done()
