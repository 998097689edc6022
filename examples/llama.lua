-- examples/llama.lua — a Llama-style decoder with a KV cache, written as a PyTorch user writes it.
-- Layer: examples (Lua only). Library and script at once:
--   local llama = dofile("examples/llama.lua")       -- the model, configs, weight I/O
--   fxdb examples/llama.lua [--config tiny] [--weights FILE.safetensors] [--save FILE] [--meta]
--                           [--non-strict] [--pos N]  -- builds, exports, explains
--
-- The model follows Meta's llama/model.py (module names tok_embeddings, layers.N.attention.wq,
-- feed_forward.w1, attention_norm, ffn_norm, norm, output), so the cache buffers live at
-- `layers.N.attention.cache_k` / `cache_v`, shape (max_batch, max_seq, n_kv_heads, head_dim),
-- registered non-persistent and written by index assignment at the current position:
--     self.cache_k[{":", slice(pos, pos + S)}] = k  -- PyTorch: self.cache_k[:, pos:pos+S] = k
-- forward(tokens, input_pos) takes the position as ExecuTorch's Llama does: a one-element int64
-- tensor read with `input_pos[0]:item()`, so torch.export makes it an unbacked SymInt (u0) and
-- ONE program (with a dynamic sequence length, M.dynamic_shapes) prefills a prompt and decodes
-- every position; torch._check_is_size / torch._check tell export the range of u0. A plain Lua
-- integer is accepted too: export then specializes on it (one program per position, the form
-- bench/bench_llama.lua compares with). Attention reads only the filled part of the cache
-- (cache_k[:, :pos+S]) under a causal mask built as Meta's model builds it (zeros for the cached
-- positions beside a triu(-inf) block; all zeros for one token). Rotary embeddings use Hugging Face's
-- rotate_half form with precomputed cos / sin buffers (max_seq, head_dim), so weights in the
-- Hugging Face layout load as they are (HF's checkpoints already permute q/k for rotate_half).
-- Grouped-query attention repeats each kv head n_heads / n_kv_heads times (Meta's repeat_kv:
-- expand + reshape). The MLP is SwiGLU: w2(silu(w1(x)) * w3(x)). The output projection may be
-- tied to the embedding (the stories models are).
--
-- Weights: seeded random (init_std 0.02, as HF's initializer_range), saved and loaded as
-- .safetensors in the Hugging Face key layout (model.embed_tokens.weight,
-- model.layers.N.self_attn.q_proj.weight, ..., lm_head.weight); hf_name / meta_name map the keys.

local M = {}

-- ==== configs ======================================================================================

M.configs = {
  tiny = {dim = 64, hidden_dim = 160, n_layers = 2, n_heads = 4, n_kv_heads = 2, vocab_size = 97,
          max_seq_len = 32, max_batch = 1, norm_eps = 1e-5, rope_theta = 10000.0, tie_embeddings = false},
  stories15M = {dim = 288, hidden_dim = 768, n_layers = 6, n_heads = 6, n_kv_heads = 6,
                vocab_size = 32000, max_seq_len = 256, max_batch = 1, norm_eps = 1e-5,
                rope_theta = 10000.0, tie_embeddings = true},
  stories110M = {dim = 768, hidden_dim = 2048, n_layers = 12, n_heads = 12, n_kv_heads = 12,
                 vocab_size = 32000, max_seq_len = 1024, max_batch = 1, norm_eps = 1e-5,
                 rope_theta = 10000.0, tie_embeddings = true},
  llama2_7b = {dim = 4096, hidden_dim = 11008, n_layers = 32, n_heads = 32, n_kv_heads = 32,
               vocab_size = 32000, max_seq_len = 4096, max_batch = 1, norm_eps = 1e-5,
               rope_theta = 10000.0, tie_embeddings = false},
}

-- A config by name (a copy, so callers may change fields).
function M.config(name)
  local c = M.configs[name]
  if not c then
    local names = {}
    for k in pairs(M.configs) do names[#names + 1] = k end
    table.sort(names)
    error("unknown config '" .. tostring(name) .. "' (one of " .. table.concat(names, ", ") .. ")", 2)
  end
  local out = {name = name}
  for k, v in pairs(c) do out[k] = v end
  return out
end

-- ==== modules ======================================================================================

-- RMSNorm: x * rsqrt(mean(x^2) + eps) * weight (F.rms_norm, aten.rms_norm, when it exists).
local RMSNorm = nn.Module:extend("RMSNorm")
M.RMSNorm = RMSNorm
function RMSNorm:init(dim, eps)
  self.eps = eps
  self.dim = dim
  self.weight = nn.Parameter(torch.ones(dim))
end
function RMSNorm:forward(x)
  if torch._has_op("rms_norm.default") then
    return torch.rms_norm(x, {self.dim}, self.weight, self.eps)
  end
  return x * torch.rsqrt(x:pow(2):mean(-1, {keepdim = true}) + self.eps) * self.weight
end

-- rotate_half(x) = cat(-x2, x1) over the last dim (Hugging Face).
local function rotate_half(x)
  local half = x.shape[#x.shape] // 2
  local x1 = x[{"...", string.format(":%d", half)}]
  local x2 = x[{"...", string.format("%d:", half)}]
  return torch.cat({-x2, x1}, -1)
end

-- q, k: (B, S, H, D); cos, sin: (S, D) -> broadcast as (S, 1, D).
local function apply_rotary(q, k, cos, sin)
  cos, sin = cos:unsqueeze(1), sin:unsqueeze(1)
  return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
end

-- x: (B, L, n_kv, D) -> (B, L, n_kv * n_rep, D), Meta's repeat_kv.
local function repeat_kv(x, n_rep)
  if n_rep == 1 then return x end
  local b, l, h, d = x.shape[1], x.shape[2], x.shape[3], x.shape[4]
  return x[{":", ":", ":", "None", ":"}]:expand(b, l, h, n_rep, d):reshape(b, l, h * n_rep, d)
end

local Attention = nn.Module:extend("Attention")
M.Attention = Attention
function Attention:init(cfg)
  self.n_heads = cfg.n_heads
  self.n_kv_heads = cfg.n_kv_heads or cfg.n_heads
  self.n_rep = self.n_heads // self.n_kv_heads
  self.head_dim = cfg.dim // cfg.n_heads
  self.wq = nn.Linear(cfg.dim, self.n_heads * self.head_dim, false)
  self.wk = nn.Linear(cfg.dim, self.n_kv_heads * self.head_dim, false)
  self.wv = nn.Linear(cfg.dim, self.n_kv_heads * self.head_dim, false)
  self.wo = nn.Linear(self.n_heads * self.head_dim, cfg.dim, false)
  local shape = {cfg.max_batch, cfg.max_seq_len, self.n_kv_heads, self.head_dim}
  self:register_buffer("cache_k", torch.zeros(shape), {persistent = false})
  self:register_buffer("cache_v", torch.zeros(shape), {persistent = false})
end

-- x: (B, S, dim), pos: first position of x in the sequence (a Lua integer, or while exporting with
-- a tensor input_pos the SymInt u0), cos / sin: (S, head_dim) rows of the rotary tables, mask:
-- (S, pos + S) additive, or nil.
function Attention:forward(x, pos, cos, sin, mask)
  local bsz, seqlen = x.shape[1], x.shape[2]
  local q = self.wq(x):view(bsz, seqlen, self.n_heads, self.head_dim)
  local k = self.wk(x):view(bsz, seqlen, self.n_kv_heads, self.head_dim)
  local v = self.wv(x):view(bsz, seqlen, self.n_kv_heads, self.head_dim)
  q, k = apply_rotary(q, k, cos, sin)

  -- the KV cache: write this step's keys and values at pos (self.cache_k[:bsz, pos:pos+S] = k)
  local rows = bsz == self.cache_k.shape[1] and ":" or string.format(":%d", bsz)
  self.cache_k[{rows, slice(pos, pos + seqlen)}] = k
  self.cache_v[{rows, slice(pos, pos + seqlen)}] = v

  -- attend over the filled part only: positions 0 .. pos + S - 1
  local filled = slice(0, pos + seqlen)
  local keys = repeat_kv(self.cache_k[{rows, filled}], self.n_rep)    -- (B, L, H, D)
  local values = repeat_kv(self.cache_v[{rows, filled}], self.n_rep)

  q = q:transpose(1, 2)                                                -- (B, H, S, D)
  keys = keys:transpose(1, 2)                                          -- (B, H, L, D)
  values = values:transpose(1, 2)
  local scores = torch.matmul(q, keys:transpose(2, 3)) / math.sqrt(self.head_dim)  -- (B, H, S, L)
  if mask then scores = scores + mask end
  scores = torch.softmax(scores, -1)
  local out = torch.matmul(scores, values)                             -- (B, H, S, D)
  out = out:transpose(1, 2):contiguous():view(bsz, seqlen, -1)
  return self.wo(out)
end

local FeedForward = nn.Module:extend("FeedForward")
M.FeedForward = FeedForward
function FeedForward:init(dim, hidden_dim)
  self.w1 = nn.Linear(dim, hidden_dim, false)
  self.w2 = nn.Linear(hidden_dim, dim, false)
  self.w3 = nn.Linear(dim, hidden_dim, false)
end
function FeedForward:forward(x)
  return self.w2(torch.silu(self.w1(x)) * self.w3(x))
end

local TransformerBlock = nn.Module:extend("TransformerBlock")
M.TransformerBlock = TransformerBlock
function TransformerBlock:init(cfg)
  self.attention = Attention(cfg)
  self.feed_forward = FeedForward(cfg.dim, cfg.hidden_dim)
  self.attention_norm = RMSNorm(cfg.dim, cfg.norm_eps)
  self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
end
function TransformerBlock:forward(x, pos, cos, sin, mask)
  local h = x + self.attention(self.attention_norm(x), pos, cos, sin, mask)
  return h + self.feed_forward(self.ffn_norm(h))
end

-- The rotary tables (max_seq, head_dim): cos / sin of pos * theta^(-2i/head_dim), each frequency
-- twice (Hugging Face's cat((freqs, freqs), -1)). Computed in Lua at init; on the meta device
-- they are empty meta tensors of the same shape.
local function rope_tables(head_dim, max_seq, theta)
  if torch.get_default_device() == "meta" then
    return torch.empty(max_seq, head_dim), torch.empty(max_seq, head_dim)
  end
  local half = head_dim // 2
  local cos, sin = {}, {}
  for p = 0, max_seq - 1 do
    local c, s = {}, {}
    for i = 0, half - 1 do
      local f = p * theta ^ (-2 * i / head_dim)
      c[i + 1], s[i + 1] = math.cos(f), math.sin(f)
      c[i + 1 + half], s[i + 1 + half] = c[i + 1], s[i + 1]
    end
    cos[p + 1], sin[p + 1] = c, s
  end
  return torch.tensor(cos), torch.tensor(sin)
end

local Transformer = nn.Module:extend("Transformer")
M.Transformer = Transformer
function Transformer:init(cfg)
  self.cfg = cfg
  self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
  local layers = {}
  for i = 1, cfg.n_layers do layers[i] = TransformerBlock(cfg) end
  self.layers = nn.ModuleList(layers)
  self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
  self.output = nn.Linear(cfg.dim, cfg.vocab_size, false)
  if cfg.tie_embeddings then self.output.weight = self.tok_embeddings.weight end
  local cos, sin = rope_tables(cfg.dim // cfg.n_heads, cfg.max_seq_len, cfg.rope_theta)
  self:register_buffer("freqs_cos", cos, {persistent = false})
  self:register_buffer("freqs_sin", sin, {persistent = false})
end

-- tokens: (B, S) int64; input_pos: the position of tokens[:, 0], as a one-element int64 tensor
-- (ExecuTorch's form: export reads it with item(), one program for every position) or a Lua
-- integer (export specializes on it). pos + S must not exceed max_seq_len. Returns logits
-- (B, S, vocab) float32.
function Transformer:forward(tokens, input_pos)
  local seqlen = tokens.shape[2]
  local max_seq = self.cfg.max_seq_len
  local pos = input_pos
  if torch.is_tensor(input_pos) then
    pos = input_pos[0]:item()           -- while exporting: the unbacked SymInt u0
    torch._check_is_size(pos)           -- u0 >= 0, a size
    torch._check(pos < max_seq)         -- so that a slice starting at pos stays in the tables
    torch._check(pos + seqlen <= max_seq)
  end
  local h = self.tok_embeddings(tokens)
  local rows = slice(pos, pos + seqlen)
  local cos, sin = self.freqs_cos[{rows}], self.freqs_sin[{rows}]
  -- causal mask (S, pos + S): token i sees positions <= pos + i (Meta's: zeros for the cached
  -- positions beside triu(-inf, 1)); for one token it is a row of zeros
  local mask = torch.full({seqlen, seqlen}, -math.huge):triu(1)
  mask = torch.cat({torch.zeros({seqlen, pos}), mask}, 1)
  for _, layer in pairs(self.layers) do h = layer(h, pos, cos, sin, mask) end
  return self.output(self.norm(h))
end

-- ==== exporting =====================================================================================

-- Example inputs of the single program: two tokens at position 0 (a dynamic dim needs an example
-- of at least 2: torch.export specializes 0 and 1), as ExecuTorch's Llama export does.
function M.example_inputs(cfg)
  return {torch.zeros({cfg.max_batch, 2}, torch.int64), torch.tensor({0})}
end

-- dynamic_shapes of forward(tokens, input_pos): tokens' sequence length (dim 1) is the Dim
-- "seqlen" up to max_seq_len; input_pos is static (one element; its value is data).
function M.dynamic_shapes(cfg)
  return {tokens = {[1] = torch.export.Dim("seqlen", {max = cfg.max_seq_len})}, input_pos = nil}
end

-- The single program: model exported once with a dynamic sequence length and a tensor input_pos
-- (opts: torch.export.export's options, e.g. strict = false; dynamic_shapes is M's).
function M.export(model, opts)
  local o = {dynamic_shapes = M.dynamic_shapes(model.cfg)}
  for k, v in pairs(opts or {}) do o[k] = v end
  return torch.export.export(model, M.example_inputs(model.cfg), o)
end

-- Every cache buffer path ("layers.0.attention.cache_k", ...).
function Transformer:cache_paths()
  local out = {}
  for i = 0, self.cfg.n_layers - 1 do
    out[#out + 1] = string.format("layers.%d.attention.cache_k", i)
    out[#out + 1] = string.format("layers.%d.attention.cache_v", i)
  end
  return out
end

-- Zeroes every cache (a new sequence).
function Transformer:reset_cache()
  torch.no_grad(function()
    for _, l in pairs(self.layers) do
      l.attention.cache_k:zero_()
      l.attention.cache_v:zero_()
    end
  end)
end

-- ==== construction and weights ====================================================================

-- Builds the model for cfg with seeded random weights (normal(0, 0.02), norms at 1, as
-- Hugging Face's _init_weights with initializer_range 0.02). opts.device = "meta" builds it on the
-- meta device: no weight is allocated (torch.set_default_device("meta") around the build).
function M.build(cfg, opts)
  opts = opts or {}
  if type(cfg) == "string" then cfg = M.config(cfg) end
  local meta = opts.device == "meta"
  if meta then torch.set_default_device("meta") end
  local ok, model = pcall(function()
    torch.manual_seed(opts.seed or 0)
    local m = Transformer(cfg)
    if not meta then
      torch.no_grad(function()
        for _, p in ipairs(m:named_parameters()) do
          local name, t = p[1], p[2]
          if not name:find("norm") then t:copy_(torch.randn(t.shape) * 0.02) end
        end
      end)
    end
    return m
  end)
  if meta then torch.set_default_device("cpu") end
  if not ok then error(model, 0) end
  model:eval()
  return model
end

-- A second model that shares src's parameters (no copy) and has its own caches and rotary tables:
-- what generate.lua exports, so the exported program's cache writes never touch src's caches.
function M.share_weights(src)
  local cfg = src.cfg
  local dst = M.build(cfg, {device = "meta"})
  local by_path = {}
  for _, s in ipairs(src:_named_state()) do by_path[s.path] = s.tensor end
  for _, s in ipairs(dst:_named_state()) do
    local t = by_path[s.path]
    if s.kind == "param" then
      s.owner:_raw_set("param", s.name, t)
    elseif s.kind == "buffer" then
      s.owner:_raw_set("buffer", s.name, t:clone())
    end
  end
  if cfg.tie_embeddings then dst.output.weight = dst.tok_embeddings.weight end
  return dst
end

-- Meta-style module key <-> Hugging Face key: {meta pattern, hf replacement, hf pattern, meta
-- replacement} per parameter kind.
local KEYS = {
  {"tok_embeddings.weight", "model.embed_tokens.weight"},
  {"norm.weight", "model.norm.weight"},
  {"output.weight", "lm_head.weight"},
  {"attention.wq.weight", "self_attn.q_proj.weight"},
  {"attention.wk.weight", "self_attn.k_proj.weight"},
  {"attention.wv.weight", "self_attn.v_proj.weight"},
  {"attention.wo.weight", "self_attn.o_proj.weight"},
  {"feed_forward.w1.weight", "mlp.gate_proj.weight"},
  {"feed_forward.w2.weight", "mlp.down_proj.weight"},
  {"feed_forward.w3.weight", "mlp.up_proj.weight"},
  {"attention_norm.weight", "input_layernorm.weight"},
  {"ffn_norm.weight", "post_attention_layernorm.weight"},
}

-- "layers.3.attention.wq.weight" -> "model.layers.3.self_attn.q_proj.weight"; nil if unknown.
function M.hf_name(k)
  local layer, rest = k:match("^layers%.(%d+)%.(.+)$")
  for i, kv in ipairs(KEYS) do
    if layer and i > 3 and rest == kv[1] then return "model.layers." .. layer .. "." .. kv[2] end
    if not layer and i <= 3 and k == kv[1] then return kv[2] end
  end
  return nil
end

-- The inverse of hf_name; nil if unknown.
function M.meta_name(k)
  local layer, rest = k:match("^model%.layers%.(%d+)%.(.+)$")
  for i, kv in ipairs(KEYS) do
    if layer and i > 3 and rest == kv[2] then return "layers." .. layer .. "." .. kv[1] end
    if not layer and i <= 3 and k == kv[2] then return kv[1] end
  end
  return nil
end

-- Saves model's weights as .safetensors in the Hugging Face layout (a tied lm_head is left out,
-- as Hugging Face's save_pretrained does).
function M.save(model, path)
  local out = nn._ordered_dict()
  local keys = {}
  for _, kv in ipairs(model:state_dict():items()) do
    local k = kv[1]
    if not (k == "output.weight" and model.cfg.tie_embeddings) then
      local hk = M.hf_name(k) or error("no Hugging Face name for " .. k)
      keys[#keys + 1] = hk
      rawset(out, hk, kv[2])
    end
  end
  getmetatable(out).keys = keys
  torch.save_safetensors(out, path, {format = "pt", config = model.cfg.name or "custom"})
end

-- Loads weights in the Hugging Face layout (any float dtype; converted by copy_) into model, with
-- load_state_dict's checks (missing, unexpected, mismatched shapes).
function M.load(model, path)
  local hf = torch.load_safetensors(path)
  local sd = nn._ordered_dict()
  local keys = {}
  for _, kv in ipairs(hf:items()) do
    local k = M.meta_name(kv[1]) or kv[1]   -- unknown keys stay and are reported as unexpected
    keys[#keys + 1] = k
    rawset(sd, k, kv[2])
  end
  if model.cfg.tie_embeddings and rawget(sd, "output.weight") == nil then
    keys[#keys + 1] = "output.weight"
    rawset(sd, "output.weight", rawget(sd, "tok_embeddings.weight"))
  end
  getmetatable(sd).keys = keys
  return model:load_state_dict(sd)
end

-- Weight bytes read per decoded token: every parameter once (a tied table counts once) plus one
-- embedding row.
function M.weight_bytes(model)
  local n = 0
  for _, p in ipairs(model:named_parameters()) do
    local t = p[2]
    n = n + t:numel() * t:element_size()
  end
  return n
end

-- Peak resident set of this process (VmHWM), in bytes, or nil where /proc is missing.
function M.peak_rss()
  local f = io.open("/proc/self/status", "r")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  local kb = s:match("VmHWM:%s*(%d+)")
  return kb and tonumber(kb) * 1024 or nil
end

-- Index of the largest logit of a 1-d tensor (greedy decoding): torch.argmax when fxdb has it,
-- else a scan of the values (first maximum, as torch.argmax picks).
function M.argmax(logits)
  if torch._has_op("argmax.default") then return torch.argmax(logits):item() end
  local v = logits:tolist()
  local best, at = -math.huge, 0
  for i = 1, #v do if v[i] > best then best, at = v[i], i - 1 end end
  return at
end

-- Which ops the model needs that this build of fxdb does not have yet (empty when it can run).
function M.missing_ops()
  local need = {"embedding.default", "silu.default", "cat.default", "rsqrt.default",
                "pow.Tensor_Scalar", "_softmax.default", "bmm.default", "linear.default"}
  local out = {}
  for _, op in ipairs(need) do
    if op == "rsqrt.default" or op == "pow.Tensor_Scalar" then
      if not torch._has_op("rms_norm.default") and not torch._has_op(op) then out[#out + 1] = op end
    elseif op == "_softmax.default" then
      if not torch._has_op(op) and not torch._has_op("softmax.int") then out[#out + 1] = op end
    elseif not torch._has_op(op) then
      out[#out + 1] = op
    end
  end
  return out
end

-- ==== the script =====================================================================================

local function parse_args(argv)
  local o = {config = "tiny"}
  local i = 1
  while argv and argv[i] do
    local a = argv[i]
    if a == "--config" then o.config = argv[i + 1]; i = i + 1
    elseif a == "--weights" then o.weights = argv[i + 1]; i = i + 1
    elseif a == "--save" then o.save = argv[i + 1]; i = i + 1
    elseif a == "--pos" then o.pos = math.tointeger(tonumber(argv[i + 1])); i = i + 1
    elseif a == "--meta" then o.meta = true
    elseif a == "--non-strict" then o.non_strict = true
    elseif a == "--help" or a == "-h" then o.help = true
    else error("unknown argument " .. a .. " (try --help)", 0) end
    i = i + 1
  end
  return o
end

local function main(argv)
  local o = parse_args(argv)
  if o.help then
    print("usage: fxdb examples/llama.lua [--config tiny|stories15M|stories110M|llama2_7b]\n" ..
          "         [--weights FILE.safetensors] [--save FILE.safetensors] [--meta] [--pos N] [--non-strict]")
    return
  end
  local missing = M.missing_ops()
  if #missing > 0 then
    print("llama: this build of fxdb lacks " .. table.concat(missing, ", ") .. "; the model cannot run yet")
    return
  end
  local cfg = M.config(o.config)
  local t0 = os.clock()
  model = M.build(cfg, {device = o.meta and "meta" or nil})   -- a global, for fxdb -i (below)
  print(string.format("built %s (%s): %.1fM parameters in %.2fs", cfg.name, o.meta and "meta" or "cpu",
                      M.weight_bytes(model) / 4e6, os.clock() - t0))
  if o.weights then
    M.load(model, o.weights)
    print("loaded weights from " .. o.weights)
  end
  if o.save then
    M.save(model, o.save)
    print("saved weights to " .. o.save)
  end
  -- globals for `fxdb -i examples/llama.lua`: the REPL can then :trace model / :export model
  if o.pos then
    model.example_inputs = {torch.zeros({cfg.max_batch, 1}, torch.int64), o.pos}
  else
    model.example_inputs, model.dynamic_shapes = M.example_inputs(cfg), M.dynamic_shapes(cfg)
  end
  t0 = torch._perf_counter()
  local ep = fxdb.export(model, nil, {strict = not o.non_strict})
  local ms = 1e3 * (torch._perf_counter() - t0)
  local mode = o.non_strict and "non-strict" or "strict"
  if o.pos then
    print(string.format("exported one decode step at pos %d (%s) in %.1f ms: %d nodes", o.pos, mode,
                        ms, #ep.graph.nodes))
  else
    local asserts = 0
    for _, n in ipairs(ep.graph.nodes) do
      if n.target == "aten._assert_scalar.default" then asserts = asserts + 1 end
    end
    local rc = {}
    for _, k in ipairs({"s0", "u0"}) do
      local r = ep.range_constraints[k]
      if r then rc[#rc + 1] = string.format("%s: VR[%s, %s]", k, r.lower, r.upper) end
    end
    print(string.format("exported the single program (%s) in %.1f ms: %d nodes; tokens %s, " ..
                        "input_pos read by item() as u0; range constraints {%s}; %d runtime asserts",
                        mode, ms, #ep.graph.nodes,
                        tostring(ep.graph:node("tokens").meta.val.shape), table.concat(rc, ", "),
                        asserts))
  end
  local nmut = 0
  for _, s in ipairs(ep.graph_signature.output_specs) do
    if s.kind == "BUFFER_MUTATION" then nmut = nmut + 1 end
  end
  print(string.format("%d BUFFER_MUTATION outputs (every cache_k / cache_v)", nmut))
  print(fxdb.provenance(ep, "layers.0.attention.cache_k"))
  local rss = M.peak_rss()
  if rss then print(string.format("peak RSS %.1f MiB", rss / 2 ^ 20)) end
end

-- the attention helpers, for variants of the model (examples/llama_update_cache.lua)
M.apply_rotary, M.repeat_kv = apply_rotary, repeat_kv

-- run main only when this file is the script (fxdb examples/llama.lua), not when dofile'd
if arg and arg[0] and debug.getinfo(1, "S").source == "@" .. arg[0] then main(arg) end

return M
