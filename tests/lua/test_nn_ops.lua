-- tests/lua/test_nn_ops.lua — the nn, shape and indexing ops of kernels B seen from Lua: the
-- built-in modules that wrap them (nn.Embedding, nn.LayerNorm, nn.RMSNorm, nn.Dropout), what
-- torch.* calls record in an exported graph, list-returning ops as Lua lists, keyword options,
-- and PyTorch's error messages. Expected values are small cases worked by hand (or printed by
-- torch for the same inputs).
local T = dofile("tests/lua/harness.lua")

local vals = T.vals

local function shape(t) return table.concat(t.shape, "x") end

local targets = T.targets

-- ---- nn modules -------------------------------------------------------------------------------

T.test("nn.Embedding: rows of the weight, padding_idx zeroed and normalized, repr", function()
  local e = nn.Embedding(5, 3, {padding_idx = -1})
  T.eq(e.padding_idx, 4)
  T.eq(tostring(e), "Embedding(5, 3, padding_idx=4)")
  T.eq(vals(e.weight[4]), "0.0000 0.0000 0.0000")
  local y = e(torch.tensor({{1, 4}, {0, 1}}))
  T.eq(shape(y), "2x2x3")
  T.eq(vals(y[0][0]), vals(e.weight[1]))
  T.eq(vals(y[1][1]), vals(e.weight[1]))
  T.checkerr("Padding_idx must be within num_embeddings", nn.Embedding, 5, 3, {padding_idx = 5})
  T.eq(nn.Embedding(4, 2, {dtype = torch.float16}).weight.dtype, torch.float16)
end)

T.test("nn.Embedding exports aten.embedding, with padding_idx when set", function()
  local M = nn.Module:extend("EmbM")
  function M:init(pad) self.e = nn.Embedding(6, 4, {padding_idx = pad}) end
  function M:forward(i) return self.e(i) end
  local ep = torch.export.export(M(nil), {torch.tensor({1, 2})})
  T.eq(targets(ep), "aten.embedding.default")
  ep = torch.export.export(M(0), {torch.tensor({1, 2})})
  T.truthy(tostring(ep):find("torch.ops.aten.embedding.default(p_e_weight, i, 0)", 1, true), tostring(ep))
end)

T.test("nn.LayerNorm / nn.RMSNorm: values, reprs, exported ops", function()
  local x = torch.tensor({{1, 2, 3, 4}, {2, 2, 2, 2}}):float()
  local ln = nn.LayerNorm(4)
  T.eq(vals(ln(x)), "-1.3416 -0.4472 0.4472 1.3416 0.0000 0.0000 0.0000 0.0000")
  T.eq(tostring(ln), "LayerNorm((4,), eps=1e-05, elementwise_affine=True)")
  local rn = nn.RMSNorm({4}, {eps = 1e-6})
  -- 1 / sqrt(mean([1, 4, 9, 16])) = 1 / sqrt(7.5)
  T.eq(vals(rn(x)), "0.3651 0.7303 1.0954 1.4606 1.0000 1.0000 1.0000 1.0000")
  T.eq(tostring(nn.RMSNorm(4)), "RMSNorm((4,), eps=None, elementwise_affine=True)")
  local M = nn.Module:extend("Norms")
  function M:init() self.ln = nn.LayerNorm(4); self.rn = nn.RMSNorm(4) end
  function M:forward(x) return self.rn(self.ln(x)) end
  local ep = torch.export.export(M(), {x})
  T.eq(targets(ep), "aten.layer_norm.default aten.rms_norm.default")
  local p = tostring(ep)
  T.truthy(p:find("torch.ops.aten.layer_norm.default(x, [4], p_ln_weight, p_ln_bias)", 1, true), p)
  T.truthy(p:find("torch.ops.aten.rms_norm.default(layer_norm, [4], p_rn_weight)", 1, true), p)
end)

T.test("nn.Dropout: identity in eval (nothing recorded), dropout.default when training", function()
  local d = nn.Dropout(0.5)
  local x = torch.ones(1000)
  d:eval()
  T.truthy(d(x) == x, "eval returns its input")
  d:train()
  torch.manual_seed(0)
  local y = d(x)
  local zeros, twos = 0, 0
  for _, v in ipairs(y:tolist()) do
    if v == 0 then zeros = zeros + 1 elseif v == 2 then twos = twos + 1 end
  end
  T.eq(zeros + twos, 1000)
  T.truthy(zeros > 400 and zeros < 600, zeros)
  local M = nn.Module:extend("Drop")
  function M:init() self.d = nn.Dropout(0.1) end
  function M:forward(x) return self.d(x) * 2 end
  local m = M()
  m:eval()
  T.eq(targets(torch.export.export(m, {x})), "aten.mul.Tensor")
  m:train()
  T.eq(targets(torch.export.export(m, {x})), "aten.dropout.default aten.mul.Tensor")
  T.checkerr("dropout probability has to be between 0 and 1, but got 1.5", torch.dropout, x, 1.5, true)
end)

T.test("nn.ReLU / nn.SiLU / nn.GELU: values and reprs as torch prints them, exported ops", function()
  if not (torch._has_op("relu.default") and torch._has_op("silu.default") and torch._has_op("gelu.default")) then
    return -- kernels A's activations; the modules exist once the ops do
  end
  local x = torch.tensor({-1.5, 0, 2})
  T.eq(vals(nn.ReLU()(x)), "0.0000 0.0000 2.0000")
  T.eq(vals(nn.SiLU()(x)), "-0.2736 0.0000 1.7616")
  T.eq(vals(nn.GELU()(x)), "-0.1002 0.0000 1.9545")
  T.eq(vals(nn.GELU("tanh")(x)), "-0.1004 0.0000 1.9546")
  T.eq(tostring(nn.GELU({approximate = "tanh"})), "GELU(approximate='tanh')")
  T.eq(tostring(nn.SiLU()) .. " " .. tostring(nn.Dropout(0.2)), "SiLU() Dropout(p=0.2, inplace=False)")
  local M = nn.Module:extend("Acts")
  function M:init() self.a = nn.SiLU(); self.b = nn.GELU("tanh"); self.c = nn.ReLU() end
  function M:forward(x) return self.c(self.b(self.a(x))) end
  local ep = torch.export.export(M(), {x})
  T.eq(targets(ep), "aten.silu.default aten.gelu.default aten.relu.default")
  T.truthy(tostring(ep):find("torch.ops.aten.gelu.default(silu, approximate = 'tanh')", 1, true), tostring(ep))
end)

-- ---- softmax and attention --------------------------------------------------------------------

T.test("softmax / log_softmax: values, dtype option, recorded as _softmax", function()
  local x = torch.tensor({{1, 2, 3}, {0, 0, 0}}):float()
  T.eq(vals(x:softmax(-1)), "0.0900 0.2447 0.6652 0.3333 0.3333 0.3333")
  T.eq(vals(torch.log_softmax(x, 1)), "-2.4076 -1.4076 -0.4076 -1.0986 -1.0986 -1.0986")
  T.eq(vals(nn.functional.softmax(x, 0)), "0.7311 0.8808 0.9526 0.2689 0.1192 0.0474")
  T.eq(x:softmax(1, {dtype = torch.float64}).dtype, torch.float64)
  local M = nn.Module:extend("Sm")
  function M:forward(x) return x:softmax(-1) + x:log_softmax(0, {dtype = torch.float64}) end
  local ep = torch.export.export(M(), {x})
  T.eq(targets(ep), "aten._softmax.default aten._to_copy.default aten._log_softmax.default aten.add.Tensor")
  T.checkerr("\"softmax_lastdim_kernel_impl\" not implemented for 'Long'", function()
    return torch.tensor({1, 2}):softmax(0)
  end)
  T.checkerr("\"LayerNormKernelImpl\" not implemented for 'Long'", function()
    return torch.layer_norm(torch.tensor({1, 2}), {2})
  end)
end)

T.test("scaled_dot_product_attention: causal by keyword, masks, GQA, exported op", function()
  torch.manual_seed(1)
  local q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
  local y = torch.scaled_dot_product_attention(q, k, v, {is_causal = true})
  T.eq(shape(y), "1x2x3x4")
  -- the first query sees only the first key: its output is v's first row
  T.eq(vals(y[0][0][0]), vals(v[0][0][0]))
  local m = torch.tensor({{true, false, false}, {true, true, false}, {true, true, true}})
  T.eq(vals(torch.scaled_dot_product_attention(q, k, v, m)), vals(y))
  local masked = torch.tensor({{false, true, true}, {false, false, true}, {false, false, false}})
  local add = torch.zeros(3, 3):masked_fill(masked, -math.huge)
  T.eq(vals(torch.scaled_dot_product_attention(q, k, v, add)), vals(y))
  -- grouped-query attention: 4 query heads on 2 key / value heads
  local q4 = torch.randn(1, 4, 3, 4)
  local g = torch.scaled_dot_product_attention(q4, k, v, {enable_gqa = true})
  T.eq(shape(g), "1x4x3x4")
  local ref = torch.scaled_dot_product_attention(q4[{":", "2:4"}], k[{":", "1:2"}], v[{":", "1:2"}])
  T.eq(vals(g[{":", "2:4"}]), vals(ref))
  local M = nn.Module:extend("Attn")
  function M:forward(q, k, v) return nn.functional.scaled_dot_product_attention(q, k, v, {is_causal = true}) end
  T.eq(targets(torch.export.export(M(), {q, k, v})), "aten.scaled_dot_product_attention.default")
  T.checkerr("Explicit attn_mask should not be set when is_causal=True", torch.scaled_dot_product_attention,
             q, k, v, m, 0.0, true)
end)

-- ---- shape ops ----------------------------------------------------------------------------------

T.test("cat / stack / split / chunk / unbind: Lua lists in and out", function()
  local a, b = torch.arange(6):view(2, 3), torch.arange(6, 9):view(1, 3)
  T.eq(vals(torch.cat({a, b}), "%d"), "0 1 2 3 4 5 6 7 8")
  T.eq(shape(torch.cat({a, a}, 1)), "2x6")
  T.eq(shape(torch.stack({a, a, a}, 1)), "2x3x3")
  local parts = a:split(2, 1)
  T.eq(#parts, 2)
  T.eq(vals(parts[2], "%d"), "2 5")
  parts = a:split({1, 2}, 1)
  T.eq(shape(parts[1]) .. " " .. shape(parts[2]), "2x1 2x2")
  T.eq(#torch.chunk(a, 3, 1), 3)
  local rows = a:unbind()
  T.eq(#rows, 2)
  T.eq(vals(rows[2], "%d"), "3 4 5")
  -- views share storage: writing through a split piece changes a
  local c = a:clone()
  c:split(1, 0)[2]:fill_(9)
  T.eq(vals(c, "%d"), "0 1 2 9 9 9")
  T.checkerr("Sizes of tensors must match except in dimension 0. Expected size 3 but got size 2 for tensor number 1 in the list.",
             torch.cat, {a, torch.zeros(1, 2, torch.int64)})
  T.checkerr("split_with_sizes expects split_sizes to sum exactly to 3", function() return a:split({1, 1}, 1) end)
end)

T.test("split and chunk record split.Tensor / split_with_sizes with getitem nodes", function()
  local M = nn.Module:extend("Sp")
  function M:forward(x)
    local a, b = table.unpack(x:chunk(2, -1))
    local c = x:split({1, 3}, -1)
    return torch.cat({b, a}, -1) + c[2]:sum(-1, {keepdim = true})
  end
  local ep = torch.export.export(M(), {torch.randn(2, 4)})
  -- only the list items that are used get a getitem (c[1] is not)
  T.eq(targets(ep), "aten.split.Tensor getitem getitem aten.split_with_sizes.default getitem " ..
                    "aten.cat.default aten.sum.dim_IntList aten.add.Tensor")
  T.truthy(fxdb.check(M(), ep, {torch.randn(2, 4)}).ok)
end)

T.test("narrow / flatten / unflatten / expand_as / repeat / diagonal", function()
  local x = torch.arange(24):view(2, 3, 4)
  T.eq(vals(x:narrow(2, 1, 2)[0][0], "%d"), "1 2")
  T.eq(shape(x:flatten()), "24")
  T.eq(shape(x:flatten(1)), "2x12")
  T.eq(shape(x:flatten():unflatten(0, {4, -1})), "4x6")
  T.eq(shape(torch.ones(1, 4):expand_as(x)), "2x3x4")
  T.eq(vals(torch.tensor({1, 2})["repeat"](torch.tensor({1, 2}), 2, 2), "%d"), "1 2 1 2 1 2 1 2")
  T.eq(vals(torch.arange(9):view(3, 3):diagonal(), "%d"), "0 4 8")
  T.eq(vals(torch.arange(9):view(3, 3):diagonal(1), "%d"), "1 5")
  T.checkerr("start (3) + length (2) exceeds dimension size (4).", function() return x:narrow(2, 3, 2) end)
  T.checkerr("flatten() has invalid args: start_dim cannot come after end_dim", function() return x:flatten(2, 1) end)
end)

-- ---- indexing -----------------------------------------------------------------------------------

T.test("index_select / gather / scatter / scatter_add / index_copy / masked_fill", function()
  local x = torch.arange(12):view(3, 4):float()
  T.eq(vals(x:index_select(1, torch.tensor({3, 0})), "%g"), "3 0 7 4 11 8")
  T.eq(vals(x:gather(1, torch.tensor({{0}, {2}, {3}})), "%g"), "0 6 11")
  T.eq(vals(torch.zeros(2, 3):scatter(1, torch.tensor({{2}, {0}}), 7), "%g"), "0 0 7 7 0 0")
  T.eq(vals(torch.zeros(3):scatter_add(0, torch.tensor({0, 0, 2}), torch.ones(3)), "%g"), "2 0 1")
  T.eq(vals(torch.ones(3):scatter(0, torch.tensor({1, 1}), torch.full({2}, 3.0), {reduce = "multiply"}), "%g"), "1 9 1")
  T.eq(vals(torch.zeros(3, 2):index_copy(0, torch.tensor({2, 0}), torch.ones(2, 2)), "%g"), "1 1 0 0 1 1")
  T.eq(vals(x:masked_fill(torch.tensor({true, false, false, true}), -1)[0], "%g"), "-1 1 2 -1")
  local y = torch.zeros(2, 2)
  y:masked_fill_(torch.tensor({{true, false}, {false, true}}), torch.tensor(5))
  T.eq(vals(y, "%g"), "5 0 0 5")
  T.checkerr("gather(): Expected dtype int64 for index", function() return x:gather(1, torch.tensor({{0}}, torch.int32)) end)
  T.checkerr("masked_fill_ only supports boolean masks, but got mask with dtype unsigned char", function()
    return x:masked_fill(torch.tensor({1, 0, 0, 1}, torch.uint8), 0)
  end)
end)

T.test("in-place index ops are functionalized into their out-of-place twins", function()
  local M = nn.Module:extend("Scat")
  function M:init() self:register_buffer("cache", torch.zeros(4, 2)) end
  function M:forward(pos, v, m)
    self.cache:index_copy_(0, pos, v)
    self.cache:masked_fill_(m, 0)
    self.cache:scatter_add_(0, torch.zeros(1, 2, torch.int64), v)
    return self.cache:sum()
  end
  local args = {torch.tensor({1}), torch.ones(1, 2), torch.tensor({true, false})}
  local ep = torch.export.export(M(), args)
  T.eq(targets(ep), "aten.index_copy.default aten.masked_fill.Scalar aten.zeros.default " ..
                    "aten.scatter_add.default aten.sum.default")
  T.eq(ep.graph_signature.output_specs[1].kind, "BUFFER_MUTATION")
  local m = M()
  local check = fxdb.check(m, ep, args)
  T.truthy(check.ok, tostring(check))
end)

-- ---- linear algebra ---------------------------------------------------------------------------

T.test("addmm / baddbmm with beta and alpha; outer; linear with a vector weight", function()
  local a, b = torch.ones(2, 3), torch.ones(3, 2)
  T.eq(vals(torch.addmm(torch.ones(2), a, b, {beta = 0.5, alpha = 2}), "%g"), "6.5 6.5 6.5 6.5")
  T.eq(vals(torch.baddbmm(torch.zeros(1), a:unsqueeze(0), b:unsqueeze(0)), "%g"), "3 3 3 3")
  T.eq(vals(torch.outer(torch.tensor({1, 2}), torch.tensor({1, 10, 100})), "%d"), "1 10 100 2 20 200")
  T.eq(vals(torch.linear(torch.ones(2, 3), torch.tensor({1., 2., 3.})), "%g"), "6 6")
  T.checkerr("mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)", torch.addmm, a, a, a)
end)

T.done()
