-- tests/golden/repl_polish.lua — for repl_polish.in: a program big enough to print summarized
-- (examples/llama.lua, tiny config), two programs whose signatures differ, a plain attribute
-- assigned in forward, and a forward with a line that records no op.
local llama = dofile("examples/llama.lua")
model = llama.build("tiny")
model.example_inputs = {torch.tensor({{3}}), 5}

Acc = nn.Module:extend("Acc")
function Acc:init(write_scale)
  self:register_buffer("cache", torch.zeros(4, 3))
  self.scale = torch.ones(3)
  self.write_scale = write_scale
end
function Acc:forward(x)
  self.cache[{"1:3"}]:add_(x)
  local unused = 1
  if self.write_scale then self.scale:mul_(2) end   -- a lifted constant written in place
  return self.cache:sum() * self.scale
end
x = torch.ones(2, 3)
acc = Acc(false)
e1 = torch.export.export(acc, {x})
e2 = torch.export.export(Acc(true), {x}, {strict = false, lift_mutated_constants = true})

Plain = nn.Module:extend("Plain")
function Plain:init() self.a = torch.zeros(2) end
function Plain:forward(x)
  local y = x * 2
  self.a = self.a + y
  return y
end
plain = Plain()
plain.example_inputs = {torch.ones(2)}
