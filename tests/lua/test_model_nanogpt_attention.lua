-- tests/lua/test_model_nanogpt_attention.lua — nanoGPT's CausalSelfAttention (model.py, the
-- non-flash path), shrunk. Layer: tests. The idiom: a registered causal-mask buffer `bias`
-- sliced to the sequence length, q/k/v from one projection split along dim 2, masked_fill with
-- -inf, softmax, dropout modules that vanish in eval mode. No state changes: the signature has
-- no mutation, the numbers match eager for several sequence inputs, and the graph shows the
-- ops PyTorch's export shows for the same code.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local n_embd, n_head, block_size = 8, 2, 6

local CausalSelfAttention = nn.Module:extend("CausalSelfAttention")
function CausalSelfAttention:init()
  torch.manual_seed(11)
  self.c_attn = nn.Linear(n_embd, 3 * n_embd)
  self.c_proj = nn.Linear(n_embd, n_embd)
  self.attn_dropout = nn.Dropout(0.1)
  self.resid_dropout = nn.Dropout(0.1)
  self.n_head, self.n_embd = n_head, n_embd
  self:register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                                 :view(1, 1, block_size, block_size))
end
function CausalSelfAttention:forward(x)
  local B, Tn, C = x.shape[1], x.shape[2], x.shape[3]
  local qkv = self.c_attn(x):split(self.n_embd, 2)
  local q, k, v = qkv[1], qkv[2], qkv[3]
  k = k:view(B, Tn, self.n_head, C // self.n_head):transpose(1, 2)
  q = q:view(B, Tn, self.n_head, C // self.n_head):transpose(1, 2)
  v = v:view(B, Tn, self.n_head, C // self.n_head):transpose(1, 2)
  local att = (q:matmul(k:transpose(-2, -1))) * (1.0 / math.sqrt(k.shape[4]))
  local Tr = string.format(":%d", Tn)
  att = att:masked_fill(self.bias[{":", ":", Tr, Tr}]:eq(0), -math.huge)
  att = torch.softmax(att, -1)
  att = self.attn_dropout(att)
  local y = att:matmul(v)
  y = y:transpose(1, 2):contiguous():view(B, Tn, C)
  return self.resid_dropout(self.c_proj(y))
end

local function batch(seed)
  torch.manual_seed(seed)
  return {torch.randn(2, 4, n_embd)}
end

P.modes(function(strict, mode)
  local m = CausalSelfAttention()
  m:eval()
  local ep = torch.export.export(m, batch(1), {strict = strict})

  T.test("nanoGPT attention: signature (no mutation), " .. mode, function()
    local ins, outs = P.sig(ep)
    T.eq(ins, table.concat({
      "p_c_attn_weight: PARAMETER target='c_attn.weight'",
      "p_c_attn_bias: PARAMETER target='c_attn.bias'",
      "p_c_proj_weight: PARAMETER target='c_proj.weight'",
      "p_c_proj_bias: PARAMETER target='c_proj.bias'",
      "b_bias: BUFFER target='bias' persistent=True", "x: USER_INPUT"}, "\n"))
    T.eq(outs, "linear_1: USER_OUTPUT")
  end)

  T.test("nanoGPT attention: op pattern, " .. mode, function()
    local seq = {}
    for _, n in ipairs(ep.graph.nodes) do
      if n.op == "call_function" then seq[#seq + 1] = n.target:gsub("^aten%.", "") end
    end
    local s = table.concat(seq, " ")
    T.truthy(s:find("^linear.default split.Tensor getitem getitem getitem", 1), s)
    T.truthy(s:find("eq.Scalar masked_fill.Scalar _softmax.default", 1, true), s)
    T.falsy(s:find("dropout", 1, true), "eval-mode dropout records nothing")
    T.truthy(s:find("linear.default$"), s)
  end)

  T.test("nanoGPT attention: numbers for several inputs, and core ATen, " .. mode, function()
    for seed = 1, 3 do P.numbers(m, ep, batch(seed)) end
    local d = ep:run_decompositions()
    T.falsy(tostring(d.graph):find("aten.linear", 1, true), "linear lowered")
    local c = fxdb.check(m, d, batch(4))
    T.truthy(c.ok, tostring(c))
  end)

  T.test("nanoGPT attention: every node keeps its Lua line, " .. mode, function()
    local sm
    for _, n in ipairs(ep.graph.nodes) do if n.name == "_softmax" then sm = n end end
    T.truthy(sm.meta.stack_trace:find("test_model_nanogpt_attention.lua:33", 1, true),
             sm.meta.stack_trace)
    local pv = fxdb.provenance(ep, "bias")
    T.eq(#pv, 1, "the mask buffer is only read")
    T.eq(pv.kind, "BUFFER")
  end)
end)

T.done()
