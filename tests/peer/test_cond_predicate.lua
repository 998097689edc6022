-- tests/peer/test_cond_predicate.lua — ExportDB cond_predicate (torch.cond).
-- Layer: tests. torch.cond is not in fxdb yet (future issue: control flow / higher-order ops):
-- the clear "not yet supported" error in both modes. PyTorch folds the static predicate
-- (x.dim() > 2 and x.shape[2] > 10 is false) and traces sin(x).
local P = dofile("tests/peer/peer.lua")
local T = P.T

local CondPredicate = nn.Module:extend("CondPredicate")
function CondPredicate:forward(x)
  local pred = x:dim() > 2 and x.shape[3] > 10
  return torch.cond(pred, function(v) return v:cos() end, function(v) return v:sin() end, {x})
end

P.modes(function(strict, mode)
  T.test("cond_predicate: the static False predicate inlines the sin branch, " .. mode, function()
    local m, x = CondPredicate(), torch.randn(6, 4, 3)
    local ep = torch.export.export(m, {x}, {strict = strict})
    P.program(ep, "placeholder:x sin=aten.sin.default output:output", "x: USER_INPUT",
      "sin: USER_OUTPUT")
    P.numbers(m, ep, {x})
  end)
end)

P.done()
