-- tests/lua/oom_model.lua — the small module both allocation-failure sweeps export
-- (test_oom_sweep.lua fails core's allocations, test_lua_oom_sweep.lua the Lua state's): a linear
-- layer, a buffer mutation, views of the result and of the input. Returns the class. Layer: tests.
local M = nn.Module:extend("OomModel")
function M:init()
  self.lin = nn.Linear(3, 2)
  self:register_buffer("steps", torch.zeros(2))
end
function M:forward(x)
  local y = self.lin(x)
  self.steps:add_(y:sum(0))                 -- a buffer mutation
  local v = y[{torch.tensor({0, 1})}]:t()   -- views
  return y:relu() * 2, v:sum(), x[0]
end
return M
