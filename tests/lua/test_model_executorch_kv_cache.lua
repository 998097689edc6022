-- tests/lua/test_model_executorch_kv_cache.lua — ExecuTorch's llama KVCache and SDPA
-- (examples/models/llama/llama_transformer.py, static-shape path), shrunk to one attention
-- layer. Layer: tests. The idiom: a KVCache submodule with k_cache / v_cache buffers of
-- [B, H, S_max, D], written with `k_out[:, :, input_pos] = k_val` (index_put_ on the buffer), an
-- SDPA that masks with the rows of a causal mask picked by input_pos. Exported in both modes:
-- BUFFER_MUTATIONs of the cache buffers, index_put in the functional graph, decode steps of the
-- unlifted module against eager, provenance of each cache.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local B, H, S, D = 1, 2, 8, 4
local E = H * D

local KVCache = nn.Module:extend("KVCache")
function KVCache:init()
  self:register_buffer("k_cache", torch.zeros(B, H, S, D))
  self:register_buffer("v_cache", torch.zeros(B, H, S, D))
end
function KVCache:update(input_pos, k_val, v_val)
  local k_out, v_out = self.k_cache, self.v_cache
  k_out[{":", ":", input_pos}] = k_val            -- k_out[:, :, input_pos] = k_val
  v_out[{":", ":", input_pos}] = v_val
  return k_out, v_out
end

local SDPA = nn.Module:extend("SDPA")
function SDPA:init(kv_cache) self.kv_cache = kv_cache end
function SDPA:forward(input_pos, q, k, v, mask)
  k, v = self.kv_cache:update(input_pos, k, v)
  return torch.scaled_dot_product_attention(q, k, v, {attn_mask = mask})
end

local Attention = nn.Module:extend("Attention")
function Attention:init()
  torch.manual_seed(7)
  self.wq = nn.Linear(E, E, {bias = false})
  self.wk = nn.Linear(E, E, {bias = false})
  self.wv = nn.Linear(E, E, {bias = false})
  self.wo = nn.Linear(E, E, {bias = false})
  self.kv_cache = KVCache()
  self.SDPA = SDPA(self.kv_cache)
  self:register_buffer("mask", torch.tril(torch.ones(S, S, torch.bool)), {persistent = false})
end
function Attention:forward(x, input_pos)
  local q = self.wq(x):view(B, 1, H, D):transpose(1, 2)
  local k = self.wk(x):view(B, 1, H, D):transpose(1, 2)
  local v = self.wv(x):view(B, 1, H, D):transpose(1, 2)
  local mask = self.mask[{input_pos}]:view(1, 1, 1, S)
  local y = self.SDPA(input_pos, q, k, v, mask)
  return self.wo(y:transpose(1, 2):reshape(B, 1, E))
end

local function step(t)
  torch.manual_seed(50 + t)
  return {torch.randn(B, 1, E), torch.tensor({t}, torch.int64)}
end

P.modes(function(strict, mode)
  local m = Attention()
  local ep = torch.export.export(m, step(0), {strict = strict})

  T.test("ExecuTorch KVCache: signature, " .. mode, function()
    local ins, outs = P.sig(ep)
    T.eq(ins, table.concat({
      "p_wq_weight: PARAMETER target='wq.weight'", "p_wk_weight: PARAMETER target='wk.weight'",
      "p_wv_weight: PARAMETER target='wv.weight'", "p_wo_weight: PARAMETER target='wo.weight'",
      -- named_buffers order: the root's own buffers, then each submodule's
      "b_mask: BUFFER target='mask' persistent=False",
      "b_kv_cache_k_cache: BUFFER target='kv_cache.k_cache' persistent=True",
      "b_kv_cache_v_cache: BUFFER target='kv_cache.v_cache' persistent=True",
      "x: USER_INPUT", "input_pos: USER_INPUT"}, "\n"))
    T.eq(outs, table.concat({
      "index_put: BUFFER_MUTATION target='kv_cache.k_cache'",
      "index_put_1: BUFFER_MUTATION target='kv_cache.v_cache'",
      "linear_3: USER_OUTPUT"}, "\n"))
  end)

  T.test("ExecuTorch KVCache: op pattern, " .. mode, function()
    local g = tostring(ep.graph)
    -- the value drops its leading 1-dims first (a view), as PyTorch's __setitem__ does
    T.truthy(g:find("aten.index_put.default](args = (%b_kv_cache_k_cache, [None, None, %input_pos], %view_4)",
      1, true), g)
    T.truthy(g:find("scaled_dot_product_attention.default](args = (%transpose, %index_put, %index_put_1, %view_3)",
      1, true), g)
    T.falsy(g:find("index_put_", 1, true) and g:find("index_put_.default", 1, true), "functional")
    -- lowered to core ATen: linear becomes permute + mm
    local d = ep:run_decompositions()
    local dg = tostring(d.graph)
    T.falsy(dg:find("aten.linear", 1, true), dg)
    T.truthy(dg:find("aten.permute.default](args = (%p_wq_weight, [1, 0])", 1, true), dg)
  end)

  T.test("ExecuTorch KVCache: 5 decode steps, unlifted vs eager, " .. mode, function()
    local eager, gm = Attention(), ep:module()
    for t = 0, 4 do
      local a, b = step(t), step(t)
      local ye, yu = eager(a[1], a[2]), gm(b[1], b[2])
      T.truthy((ye - yu):abs():max():item() < 1e-6, "output, step " .. t)
    end
    T.truthy((gm["kv_cache.k_cache"] - eager.kv_cache.k_cache):abs():max():item() < 1e-6)
    T.truthy((gm["kv_cache.v_cache"] - eager.kv_cache.v_cache):abs():max():item() < 1e-6)
    T.eq(eager.kv_cache.k_cache[{":", ":", 5}]:abs():sum():item(), 0, "row 5 unwritten")
    local c = fxdb.check(Attention(), ep, step(0))
    T.truthy(c.ok, tostring(c))
  end)

  T.test("ExecuTorch KVCache: provenance, " .. mode, function()
    local pv = fxdb.provenance(ep, "kv_cache.k_cache")
    T.eq(#pv, 2)
    T.eq(pv[2].node.name, "index_put")
    T.eq(pv[2].from_op, "aten.index_put_.default")
    T.truthy(pv[2].location:find("test_model_executorch_kv_cache.lua:21", 1, true), pv[2].location)
    local path = {}
    for _, e in ipairs(pv[2].node.meta.nn_module_stack) do path[#path + 1] = e.cls end
    T.eq(table.concat(path, "/"), "Attention/SDPA")
  end)
end)

T.done()
