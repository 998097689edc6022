-- tests/lua/test_effects.lua — effect tokens (torch/_higher_order_ops/effects.py, torch 2.5):
-- ops registered with torch.library._register_effectful_op are threaded through a token in the
-- functional IR (a TOKEN input, with_effects nodes, a TOKEN output), keep their order in every
-- program form, and the token disappears when the program is unlifted.
local T = dofile("tests/lua/harness.lua")

local LOG = {}
torch.library.define("efx::log", "(Tensor x, str tag) -> ()")
torch.library.impl("efx::log", "cpu", function(x, tag)
  LOG[#LOG + 1] = tag .. "=" .. string.format("%g", x:sum():item())
end)
torch.library.register_fake("efx::log", function(x, tag) end)
torch.library.define("efx::noisy", "(Tensor x) -> Tensor")
torch.library.impl("efx::noisy", "cpu", function(x)
  LOG[#LOG + 1] = "noisy"
  return x * 2
end)
torch.library.register_fake("efx::noisy", function(x) return torch.empty_like(x) end)
T.eq(torch.library._register_effectful_op("efx::log"), "efx.log.default")
T.eq(torch.library._register_effectful_op(torch.ops.efx.noisy.default, "ORDERED"), "efx.noisy.default")

local M = nn.Module:extend("M")
function M:init() self:register_buffer("n", torch.zeros(1)) end
function M:forward(x)
  torch.ops.efx.log(x, "first")
  local y = x + x
  self.n:add_(1)
  local z = torch.ops.efx.noisy(y)
  torch.ops.efx.log(y, "second")
  return z + 1
end

local function run_log(f, ...)
  LOG = {}
  local r = f(...)
  return table.concat(LOG, " "), r
end

T.test("functional IR: a token placeholder, with_effects nodes, a TOKEN output", function()
  local ep = torch.export.export(M(), {torch.ones(2)})
  T.eq(ep.graph_module.code:match("^%s*(.-)%s*$"), [[
def forward(self, token, b_n, x):
    with_effects = torch.ops.higher_order.with_effects(token, torch.ops.efx.log.default, x, 'first');  token = None
    getitem = with_effects[0];  with_effects = None
    add = torch.ops.aten.add.Tensor(x, x);  x = None
    add_1 = torch.ops.aten.add.Tensor(b_n, 1);  b_n = None
    with_effects_1 = torch.ops.higher_order.with_effects(getitem, torch.ops.efx.noisy.default, add);  getitem = None
    getitem_2 = with_effects_1[0]
    getitem_3 = with_effects_1[1];  with_effects_1 = None
    with_effects_2 = torch.ops.higher_order.with_effects(getitem_2, torch.ops.efx.log.default, add, 'second');  getitem_2 = add = None
    getitem_4 = with_effects_2[0];  with_effects_2 = None
    add_2 = torch.ops.aten.add.Tensor(getitem_3, 1);  getitem_3 = None
    return (getitem_4, add_1, add_2)]])
  local listing = tostring(ep.graph)
  T.truthy(listing:find("call_function[target=torch.ops.higher_order.with_effects](args = (%token, "
    .. "efx.log.default, %x, 'first'), kwargs = {})", 1, true), listing)
  local sig = ep.graph_signature
  T.eq(sig.input_specs[1].kind, "TOKEN")
  T.eq(sig.input_specs[1].arg.name, "token")
  T.eq(sig.input_specs[2].kind, "BUFFER")
  T.eq(sig.output_specs[1].kind, "TOKEN")
  T.eq(sig.output_specs[1].arg.name, "getitem_4")
  T.eq(sig.output_specs[2].kind, "BUFFER_MUTATION")
  T.eq(sig.output_specs[3].kind, "USER_OUTPUT")
  T.truthy(tostring(sig):find("token: TOKEN", 1, true), tostring(sig))
  -- the token's value is an empty float tensor, as torch's new_token_tensor
  T.eq(ep.graph:node("token").type, "f32[0]")
end)

T.test("two effectful ops keep their order: eager, interpreter, unlifted, training IR", function()
  local want = "first=2 noisy second=4"
  T.eq((run_log(M(), torch.ones(2))), want)
  local ep = torch.export.export(M(), {torch.ones(2)})
  local got, r = run_log(fxdb.run, ep, {torch.ones(2)})
  T.eq(got, want)
  T.eq(r.outputs[1]:sum():item(), 10)
  T.eq(r.mutations.n:item(), 1)
  T.eq(r.token:numel(), 0)
  local gm = ep:module()
  for step = 1, 2 do
    local g2, out = run_log(gm, torch.ones(2) * step)
    T.eq(g2, ("first=%d noisy second=%d"):format(2 * step, 4 * step), "step " .. step)
    T.eq(out:sum():item(), 2 * (4 * step + 1))
  end
  T.eq(gm.n:item(), 2)
  local tr = torch.export.export(M(), {torch.ones(2)}, {ir = "training"})
  T.eq((run_log(tr:module(), torch.ones(2))), want)
  -- run_decompositions keeps the token threading
  T.eq(ep:run_decompositions().graph_module.code, ep.graph_module.code)
end)

T.test("unlift removes the token: the ops are called directly, in program order", function()
  local ep = torch.export.export(M(), {torch.ones(2)})
  local code = ep:module().code
  T.falsy(code:find("token", 1, true), code)
  T.falsy(code:find("with_effects", 1, true), code)
  local a = code:find("torch.ops.efx.log.default(x, 'first')", 1, true)
  local b = code:find("torch.ops.efx.noisy.default(add)", 1, true)
  local c = code:find("torch.ops.efx.log.default(add, 'second')", 1, true)
  T.truthy(a and b and c and a < b and b < c, code)
end)

T.test("effectful ops: errors and an unregistered op", function()
  T.checkerr("there is no op efx::nope", torch.library._register_effectful_op, "efx::nope")
  T.checkerr("unknown effect type 'UNORDERED'", torch.library._register_effectful_op, "efx::log", "UNORDERED")
  -- torch asserts not has_aliasing(op): mutating / aliasing ops cannot carry a token
  torch.library.define("efx::mut", "(Tensor(a!) x) -> ()")
  T.checkerr("has aliasing annotations", torch.library._register_effectful_op, "efx::mut")
  T.checkerr("has aliasing annotations", torch.library._register_effectful_op, "aten::add_.Tensor")
  T.checkerr("op or qualname expected, got table", torch.library._register_effectful_op, {})
  -- unregistering: the op is an ordinary node again, no token
  torch.library.define("efx::plain", "(Tensor x) -> Tensor")
  torch.library.impl("efx::plain", "cpu", function(x) return x + 1 end)
  torch.library.register_fake("efx::plain", function(x) return torch.empty_like(x) end)
  torch.library._register_effectful_op("efx::plain")
  torch.library._register_effectful_op("efx::plain", false)
  local P = nn.Module:extend("P")
  function P:forward(x) return torch.ops.efx.plain(x) end
  local ep = torch.export.export(P(), {torch.ones(2)})
  T.eq(ep.graph_signature.input_specs[1].kind, "USER_INPUT")
  T.truthy(ep.graph_module.code:find("plain = torch.ops.efx.plain.default(x)", 1, true), ep.graph_module.code)
  -- an effectful op inside a cond branch: said clearly
  local C = nn.Module:extend("C")
  function C:forward(x)
    return torch.cond(x:sum():gt(0), function(v) torch.ops.efx.log(v, "in"); return v + 1 end,
      function(v) return v - 1 end, {x})
  end
  T.checkerr("calls an effectful op", torch.export.export, C(), {torch.ones(2)})
end)

T.done()
