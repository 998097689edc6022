-- tests/golden/dbg_model.lua — a two-layer model with submodules for the debugger transcripts:
-- Model > layers (ModuleList) > Block > {lin (Linear), norm (Norm)}. Buffers are mutated in place
-- (Norm.running), through a view (Block.cache[pos] = ...: select + copy_, the KV-cache pattern)
-- and by an in-place counter (Model.steps).
local Norm = nn.Module:extend("Norm")
function Norm:init(n)
  self:register_buffer("running", torch.zeros(n))
  self.w = nn.Parameter(torch.ones(n))
end
function Norm:forward(x)
  local mean = x:mean(0)
  self.running:mul_(0.5)
  self.running:add_(mean)
  return (x - mean) * self.w
end

local Block = nn.Module:extend("Block")
function Block:init(n, slots)
  self.lin = nn.Linear(n, n)
  self.norm = Norm(n)
  self:register_buffer("cache", torch.zeros(slots, n))
end
function Block:forward(x, pos)
  local h = self.lin(x)
  h = self.norm(h)
  self.cache[pos] = h[0]
  return h + x
end

local Model = nn.Module:extend("Model")
function Model:init(n, slots)
  self.layers = nn.ModuleList({Block(n, slots), Block(n, slots)})
  self:register_buffer("steps", torch.zeros(1))
end
function Model:forward(x, pos)
  for _, layer in pairs(self.layers) do
    x = layer(x, pos)
  end
  self.steps:add_(1)
  return x:sum(1)
end

torch.manual_seed(0)
model = Model(4, 3)
model.example_inputs = {torch.randn(2, 4), 1}
