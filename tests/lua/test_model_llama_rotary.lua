-- tests/lua/test_model_llama_rotary.lua — Meta's llama rotary embedding (llama/model.py:
-- precompute_freqs_cis, reshape_for_broadcast, apply_rotary_emb), shrunk. Layer: tests.
-- The idiom: the rotation table is a complex64 tensor made with torch.polar and kept as a plain
-- attribute (a lifted constant); the queries and keys are viewed as complex pairs
-- (view_as_complex of a [..., d/2, 2] reshape), multiplied by the table, viewed back
-- (view_as_real) and flattened. Checked in both modes: the signature, the op pattern torch 2.5
-- records, the numbers against eager and against the real-valued rotation (cos / sin) over
-- several positions, with the sequence length static and dynamic; and a complex buffer mutated
-- in forward is a BUFFER_MUTATION.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local dim, n_heads, max_seq = 8, 2, 16
local head_dim = dim // n_heads

local function precompute_freqs_cis(d, e, theta)
  theta = theta or 10000.0
  local freqs = 1.0 / (theta ^ (torch.arange(0, d, 2)[{":" .. d // 2}]:float() / d))
  local t = torch.arange(e)
  freqs = torch.outer(t, freqs):float()
  return torch.polar(torch.ones_like(freqs), freqs) -- complex64
end

local function reshape_for_broadcast(freqs_cis, x)
  local ndim = x.ndim
  assert(freqs_cis.shape[1] == x.shape[2] and freqs_cis.shape[2] == x.shape[ndim])
  local shape = {}
  for i = 1, ndim do shape[i] = (i == 2 or i == ndim) and x.shape[i] or 1 end
  return freqs_cis:view(shape)
end

local function apply_rotary_emb(xq, xk, freqs_cis)
  local function pairs_of(x)
    local s = {}
    for i = 1, x.ndim - 1 do s[i] = x.shape[i] end
    s[#s + 1], s[#s + 2] = -1, 2
    return torch.view_as_complex(x:float():reshape(s))
  end
  local xq_, xk_ = pairs_of(xq), pairs_of(xk)
  freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
  local xq_out = torch.view_as_real(xq_ * freqs_cis):flatten(3)
  local xk_out = torch.view_as_real(xk_ * freqs_cis):flatten(3)
  return xq_out:type_as(xq), xk_out:type_as(xk)
end

local Rotary = nn.Module:extend("Rotary")
function Rotary:init()
  torch.manual_seed(7)
  self.wq = nn.Linear(dim, n_heads * head_dim, {bias = false})
  self.wk = nn.Linear(dim, n_heads * head_dim, {bias = false})
  self.freqs_cis = precompute_freqs_cis(head_dim, max_seq * 2) -- a plain attribute, as in llama
end
function Rotary:forward(x, start_pos)
  local bsz, seqlen = x.shape[1], x.shape[2]
  local xq = self.wq(x):view(bsz, seqlen, n_heads, head_dim)
  local xk = self.wk(x):view(bsz, seqlen, n_heads, head_dim)
  local freqs_cis = self.freqs_cis[{start_pos .. ":" .. start_pos + seqlen}]
  return apply_rotary_emb(xq, xk, freqs_cis)
end

-- The same rotation with real arithmetic: each pair (a, b) at position p, frequency f turns by
-- the angle p * f: (a cos - b sin, a sin + b cos).
local function rotary_real(x, start_pos)
  local bsz, seqlen = x.shape[1], x.shape[2]
  local freqs = 1.0 / (10000.0 ^ (torch.arange(0, head_dim, 2):float() / head_dim))
  local ang = torch.outer(torch.arange(start_pos, start_pos + seqlen):float(), freqs)
  local cos, sin = ang:cos():view(1, seqlen, 1, head_dim // 2), ang:sin():view(1, seqlen, 1, head_dim // 2)
  local p = x:reshape(bsz, seqlen, n_heads, head_dim // 2, 2)
  local a, b = p:select(-1, 0), p:select(-1, 1)
  return torch.stack({a * cos - b * sin, a * sin + b * cos}, -1):flatten(3)
end

local function token_batch(t, seqlen)
  torch.manual_seed(100 + t)
  return torch.randn(1, seqlen, dim)
end

local function close(a, b, tol)
  return (a - b):abs():max():item() <= (tol or 1e-5)
end

T.test("precompute_freqs_cis: complex64, unit modulus, angle p * f", function()
  local f = precompute_freqs_cis(head_dim, 6)
  T.eq(f.dtype, torch.complex64)
  T.eq(table.concat(f.shape, ","), "6,2")
  T.truthy(close(f:abs(), torch.ones(6, 2), 1e-6), tostring(f:abs()))
  -- torch 1.13: view_as_real(precompute_freqs_cis(4, 6)[3]) and the printed rows 1 and 5
  local r = torch.view_as_real(f[3])
  T.truthy(close(r, torch.tensor{{-0.98999250, 0.14112000}, {0.99955004, 0.02999550}}, 1e-6), tostring(f[3]))
  T.eq(tostring(f[1]), "tensor([0.5403+0.8415j, 0.9999+0.0100j])")
  T.eq(tostring(f[5]), "tensor([0.2837-0.9589j, 0.9988+0.0500j])")
  T.eq(tostring(f:sum()), "tensor(5.7614+0.3261j)")
  T.eq(tostring(f:mean(0)), "tensor([-0.0393+0.0294j,  0.9995+0.0250j])")
end)

T.test("apply_rotary_emb (eager) equals the real-valued rotation at every position", function()
  local m = Rotary()
  for pos = 0, 5 do
    local x = token_batch(pos, pos == 0 and 4 or 1)
    local q, k = m(x, pos)
    local qv = m.wq(x):view(1, x.shape[2], n_heads, head_dim)
    local kv = m.wk(x):view(1, x.shape[2], n_heads, head_dim)
    T.eq(q.dtype, torch.float32)
    T.truthy(close(q, rotary_real(qv, pos)), "xq at position " .. pos)
    T.truthy(close(k, rotary_real(kv, pos)), "xk at position " .. pos)
  end
end)

P.modes(function(strict, mode)
  local m = Rotary()
  local ep = torch.export.export(m, {token_batch(0, 4), 0}, {strict = strict})

  T.test("llama rotary: the complex table is a lifted constant, " .. mode, function()
    local ins, outs = P.sig(ep)
    T.eq(ins, "p_wq_weight: PARAMETER target='wq.weight'\np_wk_weight: PARAMETER target='wk.weight'\n" ..
      "c_freqs_cis: CONSTANT_TENSOR target='freqs_cis'\nx: USER_INPUT")
    T.eq(outs, "view_5: USER_OUTPUT\nview_6: USER_OUTPUT")
    T.eq(ep.constants.freqs_cis.dtype, torch.complex64)
  end)

  T.test("llama rotary: op pattern as torch 2.5 records it, " .. mode, function()
    local seq = {}
    for _, n in ipairs(ep.graph.nodes) do
      if n.op == "call_function" then seq[#seq + 1] = n.target end
    end
    T.eq(table.concat(seq, " "),
      "aten.linear.default aten.view.default aten.linear.default aten.view.default " ..
      "aten.slice.Tensor aten.view.default aten.view_as_complex.default " ..
      "aten.view.default aten.view_as_complex.default aten.view.default " ..
      "aten.mul.Tensor aten.view_as_real.default aten.view.default " ..
      "aten.mul.Tensor aten.view_as_real.default aten.view.default")
    -- xq.float() and type_as(xq) on float32 record nothing; reshape(..., -1, 2) is a view that
    -- keeps the -1; the table slice is viewed [1, seqlen, 1, head_dim / 2] once and used twice
    T.truthy(tostring(ep.graph):find("aten.view.default](args = (%view, [1, 4, 2, -1, 2])", 1, true))
    local vals = {}
    for _, n in ipairs(ep.graph.nodes) do
      if n.target == "aten.view_as_complex.default" or n.target == "aten.mul.Tensor" then
        vals[#vals + 1] = tostring(n.meta.val.dtype) .. "[" .. table.concat(n.meta.val.shape, ", ") .. "]"
      end
    end
    T.eq(table.concat(vals, " "), ("torch.complex64[1, 4, 2, 2] "):rep(4):sub(1, -2))
    local g = tostring(ep)
    T.truthy(g:find('view_as_real: "f32[1, 4, 2, 2, 2]"', 1, true), g)
    T.truthy(g:find('c_freqs_cis: "c64[32, 2]"', 1, true), g)
  end)

  T.test("llama rotary: exported vs eager over several inputs, " .. mode, function()
    local gm = ep:module()
    for t = 0, 3 do
      local x = token_batch(10 + t, 4)
      local qe, ke = m(x, 0)
      local qu, ku = gm(x)
      T.truthy(P.same(qu, qe), "xq, input " .. t)
      T.truthy(P.same(ku, ke), "xk, input " .. t)
      local r = fxdb.run(ep, {x})
      T.truthy(P.same(r.outputs[1], qe), "fxdb.run xq, input " .. t)
    end
  end)

  T.test("llama rotary: decode steps (seqlen 1) at positions 4..7 match the real rotation, " .. mode,
    function()
      for pos = 4, 7 do
        local x = token_batch(pos, 1)
        local e = torch.export.export(m, {x, pos}, {strict = strict})
        local q = e:module()(x)
        local qv = m.wq(x):view(1, 1, n_heads, head_dim)
        T.truthy(close(q, rotary_real(qv, pos)), "position " .. pos)
        T.truthy(P.same(q, (m(x, pos))), "eager, position " .. pos)
      end
    end)
end)

-- The prefill length as a dynamic dim: the rotary table is sliced with the symbolic seqlen
-- (narrow, as `freqs_cis[0:seqlen]`), view_as_complex / view_as_real keep s0 in their shapes.
local RotaryDyn = Rotary:extend("RotaryDyn")
function RotaryDyn:forward(x)
  local bsz, seqlen = x.shape[1], x.shape[2]
  local xq = self.wq(x):view(bsz, seqlen, n_heads, head_dim)
  local xk = self.wk(x):view(bsz, seqlen, n_heads, head_dim)
  return apply_rotary_emb(xq, xk, self.freqs_cis:narrow(0, 0, seqlen))
end

P.modes(function(strict, mode)
  T.test("llama rotary with a dynamic sequence length, " .. mode, function()
    local m = RotaryDyn()
    local seq = torch.export.Dim("seq", {min = 2, max = 16})
    local ep = torch.export.export(m, {token_batch(0, 4)}, {strict = strict, dynamic_shapes = {x = {[1] = seq}}})
    local g = tostring(ep)
    T.truthy(g:find('view_as_complex: "c64[1, s0, 2, 2]"', 1, true), g)
    T.truthy(g:find('view_as_real: "f32[1, s0, 2, 2, 2]"', 1, true), g)
    T.truthy(g:find("Range constraints: {s0: VR[2, 16]}", 1, true), g)
    for _, len in ipairs{2, 5, 9} do
      local x = token_batch(len, len)
      local r = fxdb.run(ep, {x})
      local qe = m(x)
      T.truthy(P.same(r.outputs[1], qe), "seqlen " .. len)
      local qv = m.wq(x):view(1, len, n_heads, head_dim)
      T.truthy(close(r.outputs[1], rotary_real(qv, 0)), "real rotation, seqlen " .. len)
    end
  end)
end)

-- A complex buffer turned in place every step (a phase accumulator): BUFFER_MUTATION.
local Phase = nn.Module:extend("Phase")
function Phase:init()
  self:register_buffer("phase", torch.complex(torch.ones(3), torch.zeros(3)))
  self.step = torch.polar(torch.ones(3), torch.tensor{0.1, 0.2, 0.3})
end
function Phase:forward(x)
  self.phase:mul_(self.step)
  return torch.view_as_real(self.phase) * x
end

P.modes(function(strict, mode)
  T.test("complex buffer mutated in place is a BUFFER_MUTATION, " .. mode, function()
    local m = Phase()
    local ep = torch.export.export(m, {torch.ones(3, 2)}, {strict = strict})
    local _, outs = P.sig(ep)
    T.eq(outs, "mul: BUFFER_MUTATION target='phase'\nmul_1: USER_OUTPUT")
    T.eq(m.phase.dtype, torch.complex64)
    T.truthy(P.same(m.phase, torch.complex(torch.ones(3), torch.zeros(3))), "export leaves the buffer alone")
    P.numbers(m, ep, {torch.randn(3, 2)})
    local gm = ep:module()
    for _ = 1, 3 do gm(torch.ones(3, 2)) end
    -- three turns of 0.1, 0.2, 0.3 rad
    local want = torch.polar(torch.ones(3), torch.tensor{0.3, 0.6, 0.9})
    T.truthy(close(torch.view_as_real(gm.phase), torch.view_as_real(want), 1e-6), tostring(gm.phase))
  end)
end)

T.done()
