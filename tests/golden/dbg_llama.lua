-- tests/golden/dbg_llama.lua — a tiny Llama-style decoder for the debugger's "done when"
-- transcript: token embedding, RMSNorm, attention with rotary embeddings and a KV cache written
-- by index assignment at the current position (self.cache_k[{":", "pos:pos+1"}] = k, the
-- PyTorch `cache_k[:, pos:pos+1] = k`), a gated MLP, two layers. Module names follow Meta's
-- llama (layers.N.attention.cache_k), as examples/llama.lua does; this copy keeps to the ops
-- every build has, so the transcript does not depend on the kernels being added.
local D, H, HD, SEQ, VOCAB = 8, 2, 4, 4, 11

local RMSNorm = nn.Module:extend("RMSNorm")
function RMSNorm:init(dim) self.weight = nn.Parameter(torch.ones(dim)) end
function RMSNorm:forward(x) return torch.rms_norm(x, {D}, self.weight, 1e-5) end

local function rotate_half(x)
  local x1 = x[{"...", ":2"}]
  local x2 = x[{"...", "2:"}]
  return torch.cat({-x2, x1}, -1)
end

local Attention = nn.Module:extend("Attention")
function Attention:init()
  self.wq = nn.Linear(D, D, {bias = false})
  self.wk = nn.Linear(D, D, {bias = false})
  self.wv = nn.Linear(D, D, {bias = false})
  self.wo = nn.Linear(D, D, {bias = false})
  self:register_buffer("cache_k", torch.zeros(1, SEQ, H, HD), {persistent = false})
  self:register_buffer("cache_v", torch.zeros(1, SEQ, H, HD), {persistent = false})
end
function Attention:forward(x, pos, cos, sin)
  local q = self.wq(x):view(1, 1, H, HD)
  local k = self.wk(x):view(1, 1, H, HD)
  local v = self.wv(x):view(1, 1, H, HD)
  q = q * cos + rotate_half(q) * sin
  k = k * cos + rotate_half(k) * sin
  local span = string.format("%d:%d", pos, pos + 1)
  self.cache_k[{":", span}] = k
  self.cache_v[{":", span}] = v
  local keys = self.cache_k[{":", ":" .. (pos + 1)}]:transpose(1, 2)
  local values = self.cache_v[{":", ":" .. (pos + 1)}]:transpose(1, 2)
  local scores = q:transpose(1, 2):matmul(keys:transpose(2, 3)) / math.sqrt(HD)
  local out = scores:softmax(-1):matmul(values)
  return self.wo(out:transpose(1, 2):reshape(1, 1, D))
end

local FeedForward = nn.Module:extend("FeedForward")
function FeedForward:init()
  self.w1 = nn.Linear(D, 2 * D, {bias = false})
  self.w2 = nn.Linear(2 * D, D, {bias = false})
  self.w3 = nn.Linear(D, 2 * D, {bias = false})
end
function FeedForward:forward(x) return self.w2(self.w1(x) * self.w3(x)) end

local Block = nn.Module:extend("TransformerBlock")
function Block:init()
  self.attention = Attention()
  self.feed_forward = FeedForward()
  self.attention_norm = RMSNorm(D)
  self.ffn_norm = RMSNorm(D)
end
function Block:forward(x, pos, cos, sin)
  local h = x + self.attention(self.attention_norm(x), pos, cos, sin)
  return h + self.feed_forward(self.ffn_norm(h))
end

local Transformer = nn.Module:extend("Transformer")
function Transformer:init()
  self.tok_embeddings = nn.Embedding(VOCAB, D)
  self.layers = nn.ModuleList({Block(), Block()})
  self.norm = RMSNorm(D)
  self.output = nn.Linear(D, VOCAB, {bias = false})
  local cos, sin = {}, {}
  for p = 0, SEQ - 1 do
    cos[p + 1], sin[p + 1] = {}, {}
    for i = 0, HD - 1 do
      local f = p / 10000 ^ ((i % (HD // 2)) * 2 / HD)
      cos[p + 1][i + 1], sin[p + 1][i + 1] = math.cos(f), math.sin(f)
    end
  end
  self:register_buffer("freqs_cos", torch.tensor(cos), {persistent = false})
  self:register_buffer("freqs_sin", torch.tensor(sin), {persistent = false})
end
function Transformer:forward(tokens, pos)
  local h = self.tok_embeddings(tokens)
  local cos = self.freqs_cos[pos]:view(1, 1, 1, HD)
  local sin = self.freqs_sin[pos]:view(1, 1, 1, HD)
  for _, layer in pairs(self.layers) do
    h = layer(h, pos, cos, sin)
  end
  return self.output(self.norm(h))
end

torch.manual_seed(0)
model = Transformer()
model:eval()
model.example_inputs = {torch.tensor({{3}}), 2}
