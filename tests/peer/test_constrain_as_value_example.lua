-- tests/peer/test_constrain_as_value_example.lua — ExportDB constrain_as_value_example.
-- Layer: tests. As constrain_as_size_example: no unbacked values in fxdb yet (future issue:
-- data-dependent values), so export stops at x.item() with the data-dependent error; the
-- branch PyTorch decides from the range [0, 5] is never reached.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local ConstrainAsValueExample = nn.Module:extend("ConstrainAsValueExample")
function ConstrainAsValueExample:forward(x, y)
  local a = x:item() -- line 10
  torch._check(a >= 0)
  torch._check(a <= 5)
  if a < 6 then
    return y:sin()
  end
  return y:cos()
end

P.modes(function(strict, mode)
  T.test("constrain_as_value_example: item() is data-dependent, " .. mode, function()
    local e = P.export_fails("data_dependent",
      "Could not extract specialized integer from data-dependent expression",
      ConstrainAsValueExample(), {torch.tensor(4), torch.randn(5, 5)}, {strict = strict})
    T.eq(e.location, "tests/peer/test_constrain_as_value_example.lua:10")
  end)
end)

P.done()
