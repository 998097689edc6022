-- examples/buffer_mutation.lua — seed case S1: a buffer mutated by in-place ops.
-- The ExecuTorch question "why is everything out-of-place?": export turns state:mul_ and
-- state:add_ into functional mul/add plus a BUFFER_MUTATION output; ep:module() puts the copy_
-- back. Run: build/fxdb examples/buffer_mutation.lua

local Model = nn.Module:extend("Model")

function Model:init()
  self:register_buffer("state", torch.tensor({7, 5, 6}, torch.float16))
end

function Model:forward(x)
  x = x:type(torch.float16)
  self.state:mul_(x)
  self.state:add_(torch.tensor({1, 2, 3}, torch.float16))
  return self.state * 9
end

local m = Model()
local x = torch.tensor({1.5, 2, -1})

local ep = torch.export.export(m, {x})
print(ep)

print("-- where did the new value of 'state' come from? (:why state)")
print(fxdb.provenance(ep, "state"))

if fxdb.render then
  fxdb.render(ep, "buffer_mutation.svg", {why = "state"})
  print("-- rendered buffer_mutation.svg")
end

print("-- the unlifted module, called twice (buffers persist between calls)")
local mod = ep:module()
print(mod.graph)
for call = 1, 2 do
  local out = mod(x)
  print(string.format("call %d: out = %s  state = %s", call, tostring(out), tostring(mod.state)))
end

print("-- the module itself is unchanged by export:", m.state)
print(fxdb.check(m, ep, {x}))
