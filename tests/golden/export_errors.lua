-- tests/golden/export_errors.lua — seed case S2 (SEEDS.md) variant (a): a plain tensor attribute
-- rebound in forward. Strict export stops at the assignment, non-strict after the call; both
-- leave the module as it was. Also a shape error raised by an eager op.
local M = nn.Module:extend("M")
function M:init()
  self.a = torch.zeros(2, 2)
end
function M:forward(b)
  self.a = self.a + b
  return self.a
end
m = M()
m.example_inputs = {torch.ones(2, 2)}

function bad(x)
  return x + torch.ones(4)
end
