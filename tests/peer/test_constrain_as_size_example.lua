-- tests/peer/test_constrain_as_size_example.lua — ExportDB constrain_as_size_example.
-- Layer: tests. x.item() becomes an unbacked symint in PyTorch (u0, with _assert_scalar range
-- checks). fxdb has no unbacked values yet (future issue: data-dependent values): export stops
-- at the item() line with the data-dependent error, and torch._check is the clear "not yet
-- supported" error.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local ConstrainAsSizeExample = nn.Module:extend("ConstrainAsSizeExample")
function ConstrainAsSizeExample:forward(x)
  local a = x:item() -- line 11
  torch._check(a >= 0)
  torch._check(a <= 5)
  return torch.zeros(a, 5)
end

P.modes(function(strict, mode)
  T.test("constrain_as_size_example: item() is data-dependent, " .. mode, function()
    local e = P.export_fails("data_dependent",
      "Could not extract specialized integer from data-dependent expression",
      ConstrainAsSizeExample(), {torch.tensor(4)}, {strict = strict})
    T.eq(e.location, "tests/peer/test_constrain_as_size_example.lua:11")
  end)
end)

T.test("constrain_as_size_example: torch._check is not yet supported", function()
  local e = T.checkerr("torch._check is not yet supported by fxdb", torch._check, true)
  T.eq(e.kind, "not_implemented")
end)

P.done()
