-- tests/peer/test_unsupported_operator.lua — ExportDB unsupported_operator (was torch_sym_min;
-- NOT_SUPPORTED_YET). Layer: tests. PyTorch refuses it ("Unsupported: torch.* op returned
-- non-Tensor"); fxdb has no symbolic ints yet (future issue: dynamic shapes): torch.sym_min is
-- the clear "not yet supported" error and export fails in both modes.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local TorchSymMin = nn.Module:extend("TorchSymMin")
function TorchSymMin:forward(x)
  return x:sum() + torch.sym_min(x:size(0), 100)
end

P.modes(function(strict, mode)
  T.test("unsupported_operator fails to export, " .. mode, function()
    P.export_fails("not_implemented", "torch.sym_min is not yet supported by fxdb", TorchSymMin(),
      {torch.randn(3, 2)}, {strict = strict})
  end)
end)

P.done()
