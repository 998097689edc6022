-- examples/demo.lua — the main job (`make demo`): a small model with a Linear, a cache buffer
-- written through a view (self.cache[{":", pos}] = h, the KV-cache pattern) and an in-place
-- counter, exported, printed, explained, rendered, executed and checked against eager.
-- Run: build/fxdb examples/demo.lua

local Demo = nn.Module:extend("Demo")

function Demo:init(dim, slots)
  self.proj = nn.Linear(dim, dim)
  self:register_buffer("cache", torch.zeros(dim, slots))
  self:register_buffer("steps", torch.zeros(1))
end

function Demo:forward(x, pos)
  local h = self.proj(x)
  self.cache[{":", pos}] = h          -- select(cache, 1, pos) + copy_  ->  select_scatter
  self.steps:add_(1)                  -- in-place op on a buffer        ->  add + BUFFER_MUTATION
  return self.cache:sum(1) / self.steps
end

torch.manual_seed(0)
local m = Demo(4, 3)
local x = torch.randn(4)
local pos = 1

print("== 1. export (strict)")
local ep = torch.export.export(m, {x, pos})
print(ep)

print("== 2. the raw trace, before functionalization (in-place ops and views)")
print(ep.raw_graph)

print("== 3. provenance: every op that changed each buffer")
print(fxdb.provenance(ep, "cache"))
print(fxdb.provenance(ep, "steps"))

if fxdb.render then
  print("== 4. rendering")
  print("wrote " .. fxdb.render(ep, "demo.svg", {why = "cache"}))
end

print("== 5. execution of the exported graph on the CPU kernels")
local r = fxdb.run(ep, {x, pos})
print(r)

print("== 6. eager vs exported")
local c = fxdb.check(m, ep, {x, pos})
print(c)
assert(c.ok, "exported program disagrees with eager execution")

print("== 7. non-strict export gives the same program")
local ep2 = torch.export.export(m, {x, pos}, {strict = false})
assert(tostring(ep2.graph) == tostring(ep.graph), "strict and non-strict graphs differ")
print("identical graphs: yes")
