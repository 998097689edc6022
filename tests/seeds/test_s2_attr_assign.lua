-- tests/seeds/test_s2_attr_assign.lua — seed case S2: attribute rebinding and writes, in both
-- modes; the error kinds, messages, Lua lines and hints; the module's state after every attempt.
local T = dofile("tests/lua/harness.lua")

local Rebind = nn.Module:extend("Rebind")
function Rebind:init(buffer)
  if buffer then self:register_buffer("a", torch.randn(100, 100)) else self.a = torch.randn(100, 100) end
end
function Rebind:forward(b)
  self.a = self.a + b                          -- line 10
  return self.a
end

local Write = nn.Module:extend("Write")
function Write:init(buffer)
  if buffer then self:register_buffer("a", torch.randn(100, 100)) else self.a = torch.randn(100, 100) end
end
function Write:forward(b)
  self.a[{":", 1}] = torch.ones(100)           -- line 19
  return self.a
end

torch.manual_seed(0)
local b = torch.randn(100, 100)

local function attempt(cls, buffer, opts)
  local m = cls(buffer)
  local before, values = m.a, m.a:clone()
  local ok, res = pcall(torch.export.export, m, {b}, opts)
  T.truthy(rawequal(m.a, before), "same tensor object after export")
  T.eq(fxdb._max_abs_diff(m.a, values), 0)
  return ok, res, m
end

local function ops(ep)
  local out = {}
  for _, n in ipairs(ep.graph.nodes) do
    if n.op == "call_function" then out[#out + 1] = n.target end
  end
  return table.concat(out, " ")
end

T.test("S2(a) strict: error at the assignment", function()
  local ok, e = attempt(Rebind, false, {strict = true})
  T.falsy(ok)
  T.eq(e.kind, "attribute_assignment")
  T.eq(tostring(e), "Mutating module attribute a during export.")
  T.eq(e.location, "tests/seeds/test_s2_attr_assign.lua:10")
  T.truthy(e.hint:find("register_buffer", 1, true), e.hint)
end)

T.test("S2(a) non-strict: error after the call naming self.a", function()
  local ok, e = attempt(Rebind, false, {strict = false})
  T.falsy(ok)
  T.eq(e.kind, "attribute_assignment")
  T.truthy(tostring(e):find("The tensor attribute self.a was assigned during export", 1, true), tostring(e))
  T.truthy(tostring(e):find("register_buffer", 1, true))
end)

for _, strict in ipairs{true, false} do
  local mode = strict and "strict" or "non-strict"
  T.test("S2(b) constant write fails, " .. mode, function()
    local ok, e = attempt(Write, false, {strict = strict})
    T.falsy(ok)
    T.eq(e.kind, "constant_mutation")
    T.truthy(tostring(e):find("'a'", 1, true), tostring(e))
    T.truthy(e.hint:find("lift_mutated_constants", 1, true), e.hint)
    T.eq(e.location, "tests/seeds/test_s2_attr_assign.lua:19")
  end)

  T.test("S2(b) lift_mutated_constants, " .. mode, function()
    local ok, ep = attempt(Write, false, {strict = strict, lift_mutated_constants = true})
    T.truthy(ok, tostring(ep))
    local s = ep.graph_signature
    T.eq(tostring(s.input_specs[1]), "c_a: BUFFER target='a' persistent=False")
    T.eq(s.output_specs[1].kind, "BUFFER_MUTATION")
    T.eq(s.output_specs[1].target, "a")
  end)

  T.test("S2(a) registered buffer: BUFFER_MUTATION, " .. mode, function()
    local ok, ep = attempt(Rebind, true, {strict = strict})
    T.truthy(ok, tostring(ep))
    T.eq(tostring(ep.graph_signature.output_specs[1]), "add: BUFFER_MUTATION target='a'")
    T.eq(ops(ep), "aten.add.Tensor")
  end)

  T.test("S2(b) registered buffer: select_scatter (KV-cache pattern), " .. mode, function()
    local ok, ep, m = attempt(Write, true, {strict = strict})
    T.truthy(ok, tostring(ep))
    T.truthy(ops(ep):find("aten.select_scatter.default", 1, true), ops(ep))
    local out = ep.graph_signature.output_specs
    T.eq(out[1].kind, "BUFFER_MUTATION")
    T.eq(out[1].target, "a")
    local c = fxdb.check(m, ep, {b})
    T.truthy(c.ok, tostring(c))
  end)
end

T.done()
