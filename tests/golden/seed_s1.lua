-- tests/golden/seed_s1.lua — seed case S1 (SEEDS.md): a float16 buffer mutated by in-place ops.
-- The transcript seed_s1.in drives it through the REPL's colon commands.
local M = nn.Module:extend("M")
function M:init()
  self:register_buffer("state", torch.tensor({7, 5, 6}, torch.float16))
end
function M:forward(x)
  x = x:type(torch.float16)
  self.state:mul_(x)
  self.state:add_(torch.tensor({1, 2, 3}, torch.float16))
  return self.state * 9
end
m = M()
m.example_inputs = {torch.tensor({1.5, 2, -1})}
