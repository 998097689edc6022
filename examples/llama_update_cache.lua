-- examples/llama_update_cache.lua — the Llama example with ExecuTorch's KV-cache custom op.
-- Layer: examples (Lua only). Library and script at once:
--   local uc = dofile("examples/llama_update_cache.lua")   -- uc.build(cfg), uc.use(model)
--   fxdb examples/llama_update_cache.lua [--config tiny] [--tokens N] [--pos N] [--seed N]
--
-- examples/llama.lua writes each step's keys and values into the cache by index assignment
-- (self.cache_k[{":", slice(pos, pos + S)}] = k), which export functionalizes into slice_scatter + a
-- BUFFER_MUTATION output. ExecuTorch's Llama export (extension/llm/custom_ops) writes them with
-- a custom op instead:
--     torch.ops.llama.update_cache(k, self.cache_k, pos)   -- schema: (Tensor value,
--                                                           --   Tensor(a!) cache, SymInt start_pos) -> Tensor
-- which mutates its cache argument. The functional IR wraps it in
-- torch.ops.higher_order.auto_functionalized (the new cache is a getitem of it, written back as
-- a BUFFER_MUTATION); fxdb.reinplace turns it back into the op writing the cache buffer itself
-- (no clone, no copy_), after checking that no later node reads the old cache — the step
-- ExecuTorch takes without that check. This file defines the op, an Attention whose forward uses
-- it, and a script that exports both forms, explains and reinplaces them, and decodes with each,
-- checking every step's logits against eager.

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "")
local llama = dofile(here .. "llama.lua")
local UC = {llama = llama}

-- llama::update_cache: cache[:B, start_pos : start_pos + S] = value, value (B, S, H, D), cache
-- (max_batch, max_seq, H, D); returns a dummy one-element tensor, as ExecuTorch's does. Defined
-- once per process (dofile'd twice, the second definition would be a duplicate).
if not (rawget(torch.ops, "llama") and rawget(torch.ops.llama, "update_cache")) then
  torch.library.define("llama::update_cache",
                       "(Tensor value, Tensor(a!) cache, SymInt start_pos) -> Tensor")
  torch.library.impl("llama::update_cache", "cpu", function(value, cache, start_pos)
    cache:narrow(0, 0, value:size(0)):narrow(1, start_pos, value:size(1)):copy_(value)
    return torch.empty({1}, {dtype = value.dtype})
  end)
  torch.library.register_fake("llama::update_cache", function(value, cache, start_pos)
    return torch.empty({1}, {dtype = value.dtype, device = value.device})
  end)
end

-- llama.lua's Attention with the cache written by llama::update_cache; the rest is the same.
local Attention = llama.Attention:extend("Attention")
UC.Attention = Attention
function Attention:forward(x, pos, cos, sin, mask)
  local bsz, seqlen = x.shape[1], x.shape[2]
  local q = self.wq(x):view(bsz, seqlen, self.n_heads, self.head_dim)
  local k = self.wk(x):view(bsz, seqlen, self.n_kv_heads, self.head_dim)
  local v = self.wv(x):view(bsz, seqlen, self.n_kv_heads, self.head_dim)
  q, k = llama.apply_rotary(q, k, cos, sin)

  -- the KV cache, ExecuTorch's way: one custom op per cache, writing rows :B at pos .. pos + S - 1
  torch.ops.llama.update_cache(k, self.cache_k, pos)
  torch.ops.llama.update_cache(v, self.cache_v, pos)

  local rows = bsz == self.cache_k.shape[1] and ":" or string.format(":%d", bsz)
  local filled = slice(0, pos + seqlen)
  local keys = llama.repeat_kv(self.cache_k[{rows, filled}], self.n_rep):transpose(1, 2)
  local values = llama.repeat_kv(self.cache_v[{rows, filled}], self.n_rep):transpose(1, 2)
  local scores = torch.matmul(q:transpose(1, 2), keys:transpose(2, 3)) / math.sqrt(self.head_dim)
  if mask then scores = scores + mask end
  local out = torch.matmul(torch.softmax(scores, -1), values)          -- (B, H, S, D)
  return self.wo(out:transpose(1, 2):contiguous():view(bsz, seqlen, -1))
end

-- Turns every layer's attention of a llama.lua model into the update_cache form, in place (same
-- weights and cache buffers: only the class, hence forward, changes). Returns the model.
function UC.use(model)
  for _, layer in pairs(model.layers) do setmetatable(layer.attention, rawget(Attention, "__inst_mt")) end
  return model
end

-- llama.build(cfg, opts) in the update_cache form.
function UC.build(cfg, opts) return UC.use(llama.build(cfg, opts)) end

-- The lines of `code` (a graph's Python code) that read `buffer` or call update_cache, without
-- the `x = None` tails.
function UC.cache_lines(code, buffer)
  local out = {}
  for line in code:gmatch("[^\n]+") do
    if (line:find(buffer, 1, true) or line:find("update_cache", 1, true)) and not line:find("def forward", 1, true) then
      out[#out + 1] = (line:gsub("^%s+", ""):gsub(";  .*$", ""))
    end
  end
  return out
end

-- ==== the script =====================================================================================

local function parse_args(argv)
  local o = {config = "tiny", pos = 3, tokens = 8, seed = 1}
  local i = 1
  while argv and argv[i] do
    local a, v = argv[i], argv[i + 1]
    if a == "--config" then o.config = v; i = i + 1
    elseif a == "--pos" then o.pos = math.tointeger(tonumber(v)) or error("--pos needs an integer", 0); i = i + 1
    elseif a == "--tokens" then o.tokens = math.tointeger(tonumber(v)) or error("--tokens needs an integer", 0); i = i + 1
    elseif a == "--seed" then o.seed = math.tointeger(tonumber(v)) or error("--seed needs an integer", 0); i = i + 1
    elseif a == "--help" or a == "-h" then o.help = true
    else error("unknown argument " .. a .. " (try --help)", 0) end
    i = i + 1
  end
  return o
end

-- Greedy decoding of n tokens from token 1 with step(x, pos) -> logits; returns the tokens.
local function decode(step, n)
  local tok, out = 1, {}
  for pos = 0, n - 1 do
    tok = llama.argmax(step(torch.tensor({{tok}}), pos)[{0, 0}])
    out[#out + 1] = tok
  end
  return out
end

local function main(argv)
  local o = parse_args(argv)
  if o.help then
    print("usage: fxdb examples/llama_update_cache.lua [--config tiny|stories15M] [--pos N] [--tokens N] [--seed N]")
    return
  end
  local missing = llama.missing_ops()
  if #missing > 0 then
    print("llama_update_cache: this build of fxdb lacks " .. table.concat(missing, ", "))
    return
  end
  local cfg = llama.config(o.config)
  local index_form = llama.build(cfg, {seed = o.seed})
  local op_form = UC.use(llama.share_weights(index_form))   -- same weights, its own caches
  local x = torch.tensor({{1}})
  local buffer = "b_layers_0_attention_cache_k"

  print(string.format("== one decode step at pos %d, exported in both forms: the cache writes", o.pos))
  local ep_index = torch.export.export(llama.share_weights(index_form), {x, o.pos})
  local ep_op = torch.export.export(UC.use(llama.share_weights(index_form)), {x, o.pos})
  print("index assignment (examples/llama.lua):")
  for _, l in ipairs(UC.cache_lines(ep_index.graph_module.code, buffer)) do print("    " .. l) end
  print("llama::update_cache (ExecuTorch):")
  for _, l in ipairs(UC.cache_lines(ep_op.graph_module.code, buffer)) do print("    " .. l) end
  print()
  print(fxdb.provenance(ep_op, "layers.0.attention.cache_k"))

  print("== reinplaced (fxdb.reinplace): the op writes the cache buffer itself")
  local gm = fxdb.reinplace(ep_op)
  for _, l in ipairs(UC.cache_lines(gm.code, "cache_k")) do print("    " .. l) end
  local notes = gm.reinplace_notes
  print(((notes:gsub("\n$", "")):gsub("[^\n]+", "    %0")))
  local code = gm.code
  local clones, copies = 0, 0
  for line in gm.code:gmatch("[^\n]+") do
    if line:find("aten.clone.default(", 1, true) and line:find("cache", 1, true) then clones = clones + 1 end
    if line:find("aten.copy_.default(", 1, true) then copies = copies + 1 end
  end
  print(string.format("    clones of a cache: %d, copy_ nodes: %d", clones, copies))

  print(string.format("== greedy decoding, %d tokens: eager (both forms), exported, reinplaced", o.tokens))
  local eager_index = decode(function(t, pos) return index_form(t, pos) end, o.tokens)
  local eager_op = decode(function(t, pos) return op_form(t, pos) end, o.tokens)
  -- exported per step (pos is specialized), each step's logits against the eager update_cache form
  local max_err = 0
  local function exported(reinplace)
    local model, ref = UC.use(llama.share_weights(index_form)), UC.use(llama.share_weights(index_form))
    return decode(function(t, pos)
      local ep = torch.export.export(model, {t, pos})
      local logits = ep:module({share_state = true, reinplace = reinplace})(t, pos)
      local err = fxdb._max_abs_diff(logits, ref(t, pos))
      if err > max_err then max_err = err end
      if err > 1e-4 then error(string.format("pos %d: logits differ from eager by %g", pos, err), 0) end
      return logits
    end, o.tokens)
  end
  local plain, re = exported(false), exported(true)
  print("    eager, index assignment:  " .. table.concat(eager_index, " "))
  print("    eager, update_cache:      " .. table.concat(eager_op, " "))
  print("    exported, update_cache:   " .. table.concat(plain, " "))
  print("    reinplaced, update_cache: " .. table.concat(re, " "))
  print(string.format("    every step's logits matched eager (max |diff| %g)", max_err))
end

if arg and arg[0] and debug.getinfo(1, "S").source == "@" .. arg[0] then main(arg) end

return UC
