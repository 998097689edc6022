-- tests/golden/dbg_seeds.lua — the founding cases (SEEDS.md) under the debugger: S1 (a float16
-- buffer mutated in place), S2 with a registered buffer (the KV-cache pattern, both variants),
-- S3 (index assignment with a tensor index). For the transcript dbg_seeds.in.
dofile("tests/golden/seed_s1.lua")   -- m

local S2 = nn.Module:extend("S2")
function S2:init() self:register_buffer("a", torch.zeros(4, 3)) end
function S2:forward(b)
  self.a = self.a + b            -- (a) rebinding a registered buffer
  return self.a
end
s2a = S2()
s2a.example_inputs = {torch.ones(4, 3)}

local S2b = nn.Module:extend("S2b")
function S2b:init() self:register_buffer("a", torch.zeros(4, 3)) end
function S2b:forward(b)
  self.a[{":", 1}] = torch.ones(4)   -- (b) the KV-cache write: select + copy_
  return self.a + b
end
s2b = S2b()
s2b.example_inputs = {torch.ones(4, 3)}

local S3 = nn.Module:extend("UpdateModel")
function S3:forward(x, update, kv_index)
  x = x:clone()
  x[{"...", kv_index}] = update
  return x
end
s3 = S3()
s3.example_inputs = {torch.ones(4, 4, 10), (torch.arange(2) + 10):float():reshape(1, 1, 2),
                     torch.tensor({1, 2}, torch.int32)}
