-- tests/lua/test_model_torchtune_kv_cache.lua — torchtune's KVCache (torchtune/modules/
-- kv_cache.py), shrunk. Layer: tests. The idiom: the write position is itself a buffer
-- (cache_pos = arange(max_seq_len), non-persistent), read to index the cache
-- (`k_out[:, :, self.cache_pos[:seq_len]] = k_val`) and advanced in place
-- (`self.cache_pos.add_(seq_len)`): three BUFFER_MUTATIONs, in both modes.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local B, H, S, D = 1, 2, 6, 3

local KVCache = nn.Module:extend("KVCache")
function KVCache:init()
  self:register_buffer("k_cache", torch.zeros(B, H, S, D), {persistent = false})
  self:register_buffer("v_cache", torch.zeros(B, H, S, D), {persistent = false})
  self:register_buffer("cache_pos", torch.arange(0, S), {persistent = false})
end
function KVCache:update(k_val, v_val)
  local seq_len = k_val.shape[3]
  local k_out, v_out = self.k_cache, self.v_cache
  local pos = self.cache_pos[{string.format(":%d", seq_len)}]      -- self.cache_pos[:seq_len]
  k_out[{":", ":", pos}] = k_val
  v_out[{":", ":", pos}] = v_val
  self.cache_pos:add_(seq_len)
  return k_out, v_out
end
function KVCache:forward(k_val, v_val)
  local k, v = self:update(k_val, v_val)
  return k:sum(-1) + v:sum(-1)
end

local function step(t, len)
  torch.manual_seed(200 + t)
  return {torch.randn(B, H, len, D), torch.randn(B, H, len, D)}
end

P.modes(function(strict, mode)
  local m = KVCache()
  local ep = torch.export.export(m, step(0, 2), {strict = strict})

  T.test("torchtune KVCache: signature and op pattern, " .. mode, function()
    local ins, outs = P.sig(ep)
    T.eq(ins, table.concat({
      "b_k_cache: BUFFER target='k_cache' persistent=False",
      "b_v_cache: BUFFER target='v_cache' persistent=False",
      "b_cache_pos: BUFFER target='cache_pos' persistent=False",
      "k_val: USER_INPUT", "v_val: USER_INPUT"}, "\n"))
    T.eq(outs, table.concat({
      "index_put: BUFFER_MUTATION target='k_cache'",
      "index_put_1: BUFFER_MUTATION target='v_cache'",
      "add: BUFFER_MUTATION target='cache_pos'",
      "add_1: USER_OUTPUT"}, "\n"))
    local g = tostring(ep.graph)
    T.truthy(g:find("aten.slice.Tensor](args = (%b_cache_pos, 0, 0, 2)", 1, true), g)
    T.truthy(g:find("aten.index_put.default](args = (%b_k_cache, [None, None, %slice_1], %view)",
      1, true), g)
    T.truthy(g:find("aten.add.Tensor](args = (%b_cache_pos, 2)", 1, true), g)
  end)

  T.test("torchtune KVCache: 3 steps of 2 tokens, unlifted vs eager, " .. mode, function()
    local eager, gm = KVCache(), ep:module()
    for t = 0, 2 do
      local a, b = step(t, 2), step(t, 2)
      local ye, yu = eager(a[1], a[2]), gm(b[1], b[2])
      P.eq_tensor(yu, ye, "output, step " .. t)
    end
    P.eq_tensor(gm.cache_pos, eager.cache_pos, "cache_pos")
    P.values(gm.cache_pos, {S}, {6, 7, 8, 9, 10, 11})
    P.eq_tensor(gm.k_cache, eager.k_cache, "k_cache")
  end)

  T.test("torchtune KVCache: provenance of cache_pos and k_cache, " .. mode, function()
    local pv = fxdb.provenance(ep, "cache_pos")
    T.eq(#pv, 2)
    T.eq(pv[2].node.name, "add")
    T.eq(pv[2].from_op, "aten.add_.Tensor")
    T.truthy(pv[2].location:find("test_model_torchtune_kv_cache.lua:23", 1, true), pv[2].location)
    local pk = fxdb.provenance(ep, "k_cache")
    T.eq(pk[2].from_op, "aten.index_put_.default")
    T.truthy(pk[2].location:find("test_model_torchtune_kv_cache.lua:21", 1, true), pk[2].location)
  end)
end)

T.done()
