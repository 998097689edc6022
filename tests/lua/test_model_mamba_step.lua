-- tests/lua/test_model_mamba_step.lua — Mamba's single-token step (mamba_ssm/modules/
-- mamba_simple.py, Mamba.step), shrunk. Layer: tests. The idiom: the recurrent states are
-- arguments updated in place (`conv_state.copy_(...)`, `conv_state[:, :, -1] = x`,
-- `ssm_state.copy_(ssm_state * dA + x * dB)`) and returned: USER_INPUT_MUTATIONs, in both modes.
-- torch.roll, torch.einsum and F.softplus are later ops of fxdb; the port writes the same math
-- with cat / broadcasting / log1p(exp) (written here as in the functions' definitions).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local d_model, d_inner, d_state, d_conv, dt_rank = 4, 8, 3, 4, 2

local Mamba = nn.Module:extend("Mamba")
function Mamba:init()
  torch.manual_seed(3)
  self.in_proj = nn.Linear(d_model, 2 * d_inner, {bias = false})
  self.conv_weight = nn.Parameter(torch.randn(d_inner, d_conv) * 0.3) -- conv1d.weight "d 1 w -> d w"
  self.conv_bias = nn.Parameter(torch.randn(d_inner) * 0.1)
  self.x_proj = nn.Linear(d_inner, dt_rank + 2 * d_state, {bias = false})
  self.dt_proj = nn.Linear(dt_rank, d_inner)
  self.A_log = nn.Parameter(torch.randn(d_inner, d_state) * 0.5)
  self.D = nn.Parameter(torch.ones(d_inner))
  self.out_proj = nn.Linear(d_inner, d_model, {bias = false})
end
function Mamba:step(hidden_states, conv_state, ssm_state)
  local xz = self.in_proj(hidden_states:squeeze(1))                          -- (B 2D)
  local parts = xz:chunk(2, -1)
  local x, z = parts[1], parts[2]
  -- conv_state.copy_(torch.roll(conv_state, shifts=-1, dims=-1)); conv_state[:, :, -1] = x
  conv_state:copy_(torch.cat({conv_state[{"...", "1:"}], conv_state[{"...", ":1"}]}, -1))
  conv_state[{":", ":", -1}] = x
  x = (conv_state * self.conv_weight):sum(-1) + self.conv_bias
  x = nn.functional.silu(x)
  local x_db = self.x_proj(x)
  local sp = x_db:split({dt_rank, d_state, d_state}, -1)
  local dt, Bm, Cm = sp[1], sp[2], sp[3]
  dt = nn.functional.linear(dt, self.dt_proj.weight)
  local A = -torch.exp(self.A_log)
  dt = torch.log1p(torch.exp(dt + self.dt_proj.bias))                        -- softplus
  local dA = torch.exp(dt:unsqueeze(-1) * A)                                 -- einsum bd,dn->bdn
  local dB = dt:unsqueeze(-1) * Bm:unsqueeze(1)                              -- einsum bd,bn->bdn
  ssm_state:copy_(ssm_state * dA + x:unsqueeze(-1) * dB)
  local y = (ssm_state * Cm:unsqueeze(1)):sum(-1)                           -- einsum bdn,bn->bd
  y = y + self.D * x
  y = y * nn.functional.silu(z)
  return self.out_proj(y):unsqueeze(1), conv_state, ssm_state
end
function Mamba:forward(hidden_states, conv_state, ssm_state)
  return self:step(hidden_states, conv_state, ssm_state)
end

local function token(t)
  torch.manual_seed(300 + t)
  return torch.randn(1, 1, d_model)
end
local function fresh_states() return torch.zeros(1, d_inner, d_conv), torch.zeros(1, d_inner, d_state) end

P.modes(function(strict, mode)
  local m = Mamba()
  local c0, s0 = fresh_states()
  local ep = torch.export.export(m, {token(0), c0, s0}, {strict = strict})

  T.test("Mamba step: the states are USER_INPUT_MUTATIONs, " .. mode, function()
    local _, outs = P.sig(ep)
    local kinds = {}
    for _, s in ipairs(ep.graph_signature.output_specs) do
      kinds[#kinds + 1] = s.kind .. (s.target and ("=" .. s.target) or "")
    end
    T.eq(table.concat(kinds, " "), "USER_INPUT_MUTATION=conv_state USER_INPUT_MUTATION=ssm_state " ..
      "USER_OUTPUT USER_OUTPUT USER_OUTPUT", outs)
    local sig = ep.graph_signature
    T.eq(table.concat(sig.user_inputs_to_mutate:values(), ","), "conv_state,ssm_state")
    T.eq(c0:abs():sum():item(), 0, "export leaves the example states alone")
  end)

  T.test("Mamba step: op pattern, " .. mode, function()
    local g = tostring(ep.graph)
    T.truthy(g:find("aten.cat.default", 1, true), g)
    T.truthy(g:find("aten.select_scatter.default", 1, true), "conv_state[:, :, -1] = x")
    T.falsy(g:find("copy_.default", 1, true), "functional")
  end)

  T.test("Mamba step: 5 tokens, unlifted module vs eager, states carried, " .. mode, function()
    local gm = ep:module()
    local ce, se = fresh_states()
    local cu, su = fresh_states()
    for t = 0, 4 do
      local ye, ce2, se2 = m(token(t), ce, se)
      local yu, cu2, su2 = gm(token(t), cu, su)
      T.truthy(rawequal(ce2, ce) and rawequal(cu2, cu), "the state object itself is returned")
      T.truthy((ye - yu):abs():max():item() < 1e-5, "output, token " .. t)
      T.truthy((ce - cu):abs():max():item() < 1e-6, "conv_state, token " .. t)
      T.truthy((se - su):abs():max():item() < 1e-5, "ssm_state, token " .. t)
    end
    T.truthy(ce:abs():sum():item() > 0, "the states moved")
  end)

  T.test("Mamba step: provenance of ssm_state, " .. mode, function()
    local pv = fxdb.provenance(ep, "ssm_state")
    T.eq(#pv, 2)
    T.eq(pv[1].node.name, "ssm_state")
    T.eq(pv[2].from_op, "aten.copy_.default")
    T.truthy(pv[2].location:find("test_model_mamba_step.lua:41", 1, true), pv[2].location)
    local pc = fxdb.provenance(ep, "conv_state")
    T.eq(#pc, 3, tostring(pc))
  end)
end)

T.done()
