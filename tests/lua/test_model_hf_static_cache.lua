-- tests/lua/test_model_hf_static_cache.lua — Hugging Face's StaticCache and ExecuTorch's export
-- wrapper (transformers' cache_utils.StaticCache / integrations.executorch
-- TorchExportableModuleWithStaticCache), shrunk to one attention layer.
-- Layer: tests. The idiom: the cache is a plain object holding one keys / values tensor per
-- layer; the wrapper registers those same tensors as non-persistent buffers key_cache_i /
-- value_cache_i; forward writes the new token through the cache object
-- (`layer.keys:index_copy_(2, cache_position, k)`). torch.export lifts state by tensor identity,
-- so the writes are BUFFER_MUTATIONs of key_cache_0 / value_cache_0, in both modes.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local B, H, S, D, E = 1, 2, 6, 4, 8 -- batch, heads, max cache length, head dim, embedding

-- transformers' StaticCache: layers[i].keys / .values of [B, H, S, D], update() by index_copy_.
local StaticCache = {}
StaticCache.__index = StaticCache
function StaticCache.new(nlayers)
  local c = setmetatable({layers = {}}, StaticCache)
  for i = 1, nlayers do
    c.layers[i] = {keys = torch.zeros(B, H, S, D), values = torch.zeros(B, H, S, D)}
  end
  return c
end
function StaticCache:update(key_states, value_states, layer_idx, cache_kwargs)
  local layer = self.layers[layer_idx + 1]
  local pos = cache_kwargs.cache_position
  layer.keys:index_copy_(2, pos, key_states)
  layer.values:index_copy_(2, pos, value_states)
  return layer.keys, layer.values
end

local Attention = nn.Module:extend("LlamaAttention")
function Attention:init(layer_idx)
  self.layer_idx = layer_idx
  self.q_proj = nn.Linear(E, H * D, {bias = false})
  self.k_proj = nn.Linear(E, H * D, {bias = false})
  self.v_proj = nn.Linear(E, H * D, {bias = false})
  self.o_proj = nn.Linear(H * D, E, {bias = false})
end
function Attention:forward(x, past_key_values, cache_position, mask)
  local q = self.q_proj(x):view(B, 1, H, D):transpose(1, 2)
  local k = self.k_proj(x):view(B, 1, H, D):transpose(1, 2)
  local v = self.v_proj(x):view(B, 1, H, D):transpose(1, 2)
  k, v = past_key_values:update(k, v, self.layer_idx, {cache_position = cache_position})
  local o = torch.scaled_dot_product_attention(q, k, v, {attn_mask = mask})
  return self.o_proj(o:transpose(1, 2):reshape(B, 1, H * D))
end

local Wrapper = nn.Module:extend("TorchExportableModuleWithStaticCache")
function Wrapper:init()
  torch.manual_seed(0)
  self.model = Attention(0)
  self.static_cache = StaticCache.new(1)
  for i, layer in ipairs(self.static_cache.layers) do
    self:register_buffer("key_cache_" .. (i - 1), layer.keys, {persistent = false})
    self:register_buffer("value_cache_" .. (i - 1), layer.values, {persistent = false})
  end
  self.mask = torch.tril(torch.ones(S, S, torch.bool))
end
function Wrapper:forward(x, cache_position)
  local mask = self.mask:index_select(0, cache_position):view(1, 1, 1, S)
  return self.model(x, self.static_cache, cache_position, mask)
end

local function step_inputs(t)
  torch.manual_seed(100 + t)
  return {torch.randn(B, 1, E), torch.tensor({t}, torch.int64)}
end

P.modes(function(strict, mode)
  local m = Wrapper()
  local ep = torch.export.export(m, step_inputs(0), {strict = strict})

  T.test("HF StaticCache: signature names the registered buffers, " .. mode, function()
    local ins, outs = P.sig(ep)
    T.eq(ins, table.concat({
      "p_model_q_proj_weight: PARAMETER target='model.q_proj.weight'",
      "p_model_k_proj_weight: PARAMETER target='model.k_proj.weight'",
      "p_model_v_proj_weight: PARAMETER target='model.v_proj.weight'",
      "p_model_o_proj_weight: PARAMETER target='model.o_proj.weight'",
      "b_key_cache_0: BUFFER target='key_cache_0' persistent=False",
      "b_value_cache_0: BUFFER target='value_cache_0' persistent=False",
      "c_mask: CONSTANT_TENSOR target='mask'",
      "x: USER_INPUT", "cache_position: USER_INPUT"}, "\n"))
    T.eq(outs, table.concat({
      "index_copy: BUFFER_MUTATION target='key_cache_0'",
      "index_copy_1: BUFFER_MUTATION target='value_cache_0'",
      "linear_3: USER_OUTPUT"}, "\n"))
    local sig = ep.graph_signature
    T.eq(sig.buffers_to_mutate.index_copy, "key_cache_0")
    T.eq(sig.buffers_to_mutate.index_copy_1, "value_cache_0")
  end)

  T.test("HF StaticCache: op pattern, " .. mode, function()
    local ops = {}
    for _, n in ipairs(ep.graph.nodes) do
      if n.op == "call_function" then ops[#ops + 1] = n.target end
    end
    local text = table.concat(ops, " ")
    T.truthy(text:find("aten.index_copy.default aten.index_copy.default " ..
                       "aten.scaled_dot_product_attention.default", 1, true), text)
    T.falsy(text:find("index_copy_", 1, true), "no in-place op")
    T.falsy(tostring(ep):find("lifted_tensor", 1, true), "no cache tensor lifted as a constant")
  end)

  T.test("HF StaticCache: the module and the cache object are left alone, " .. mode, function()
    T.truthy(rawequal(m.key_cache_0, m.static_cache.layers[1].keys), "still one tensor")
    T.eq(m.key_cache_0:abs():sum():item(), 0, "export did not write the real cache")
  end)

  T.test("HF StaticCache: 4 decode steps, unlifted module vs eager, " .. mode, function()
    local eager, gm = Wrapper(), ep:module()
    for t = 0, 3 do
      local a, b = step_inputs(t), step_inputs(t)
      local ye = eager(a[1], a[2])
      local yu = gm(b[1], b[2])
      T.truthy((ye - yu):abs():max():item() < 1e-6, "step " .. t)
    end
    T.truthy((gm.key_cache_0 - eager.key_cache_0):abs():max():item() < 1e-6, "key cache")
    T.truthy((gm.value_cache_0 - eager.value_cache_0):abs():max():item() < 1e-6, "value cache")
    T.eq(eager.key_cache_0[{0, 0, 4}]:abs():sum():item(), 0, "position 4 not written yet")
  end)

  T.test("HF StaticCache: provenance of key_cache_0, " .. mode, function()
    local pv = fxdb.provenance(ep, "key_cache_0")
    T.eq(#pv.steps, 2)
    T.eq(pv.steps[1].node.name, "b_key_cache_0")
    T.eq(pv.steps[2].node.name, "index_copy")
    T.eq(pv.steps[2].from_op, "aten.index_copy_.default")
    T.truthy(pv.steps[2].location:find("test_model_hf_static_cache.lua:27", 1, true),
             pv.steps[2].location)
    -- docs/API.md §7: the provenance is itself the list of steps
    T.eq(#pv, 2)
    T.eq(pv[2].node.name, "index_copy")
    local names = {}
    for i, step in ipairs(pv) do names[i] = step.node.name end
    T.eq(table.concat(names, " "), "b_key_cache_0 index_copy")
    -- the node's meta is FX's: val is the tensor, from_node names the raw node and its target
    local meta = pv[2].node.meta
    T.eq(table.concat(meta.val.shape, ","), B .. "," .. H .. "," .. S .. "," .. D)
    T.eq(meta.val.dtype, torch.float32)
    T.eq(meta.val.device, "meta")
    T.eq(meta.from_node[1].target, "aten.index_copy_.default")
    local keys = {}
    for k, v in pairs(meta.nn_module_stack) do keys[#keys + 1] = k .. "=" .. v[2] end
    T.eq(table.concat(keys, " "),
         "L__self__=TorchExportableModuleWithStaticCache L__self___model=LlamaAttention")
  end)
end)

T.done()
