-- tests/peer/test_constrain_as_size_example.lua — ExportDB constrain_as_size_example
-- (torch.dynamic-value, torch.escape-hatch). Layer: tests. x.item() is an unbacked SymInt u0;
-- torch._check(a >= 0) and torch._check(a <= 5) narrow it to [0, 5] and become runtime asserts
-- (ge / le with _assert_scalar), as torch.export's functional form prints them (ExportDB shows
-- 2.10's training IR, where the read is aten.item and the nodes ge_1 / le_1).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local ConstrainAsSizeExample = nn.Module:extend("ConstrainAsSizeExample")
function ConstrainAsSizeExample:forward(x)
  local a = x:item()
  torch._check(a >= 0)
  torch._check(a <= 5)
  return torch.zeros(a, 5)
end

P.modes(function(strict, mode)
  T.test("constrain_as_size_example: u0 in [0, 5] with runtime asserts, " .. mode, function()
    local m = ConstrainAsSizeExample()
    local ep = torch.export.export(m, {torch.tensor(4)}, {strict = strict})
    P.program(ep, "placeholder:x _local_scalar_dense=aten._local_scalar_dense.default " ..
      "ge=operator.ge _assert_scalar_default=aten._assert_scalar.default le=operator.le " ..
      "_assert_scalar_default_1=aten._assert_scalar.default zeros=aten.zeros.default output:output",
      "x: USER_INPUT", "zeros: USER_OUTPUT")
    local text = tostring(ep)
    for _, want in ipairs{
      '_local_scalar_dense: "Sym(u0)" = torch.ops.aten._local_scalar_dense.default(x);  x = None',
      'ge: "Sym(u0 >= 0)" = _local_scalar_dense >= 0',
      '_assert_scalar_default = torch.ops.aten._assert_scalar.default(ge, "Runtime assertion ' ..
        'failed for expression u0 >= 0 on node \'ge\'");  ge = _assert_scalar_default = None',
      'le: "Sym(u0 <= 5)" = _local_scalar_dense <= 5',
      '_assert_scalar_default_1 = torch.ops.aten._assert_scalar.default(le, "Runtime assertion ' ..
        'failed for expression u0 <= 5 on node \'le\'");  le = _assert_scalar_default_1 = None',
      'zeros: "f32[u0, 5]" = torch.ops.aten.zeros.default([_local_scalar_dense, 5], device = ' ..
        'device(type=\'cpu\'), pin_memory = False);  _local_scalar_dense = None'} do
      T.truthy(text:find(want, 1, true), want .. "\n" .. text)
    end
    -- PyTorch lists u0 and u1 (its second trace's copy); fxdb's one trace has u0
    T.eq(tostring(ep.range_constraints), "{u0: VR[0, 5]}")
    P.numbers(m, ep, {torch.tensor(4)})
    for _, k in ipairs{0, 1, 5} do P.numbers(m, ep, {torch.tensor(k)}) end
    local e = T.checkerr("Runtime assertion failed for expression u0 <= 5 on node 'le'",
                         function() return ep:module()(torch.tensor(6)) end)
    T.eq(e.kind, "runtime_assert")
    T.checkerr("Runtime assertion failed for expression u0 >= 0 on node 'ge'", fxdb.run, ep,
               {torch.tensor(-2)})
  end)
end)

T.test("constrain_as_size_example runs eagerly", function()
  P.values(ConstrainAsSizeExample()(torch.tensor(2)), {2, 5}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
  T.checkerr("Expected cond to be True, but got False", ConstrainAsSizeExample(), torch.tensor(6))
end)

P.done()
