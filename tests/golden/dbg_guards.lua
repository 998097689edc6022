-- tests/golden/dbg_guards.lua — the debugger on symbolic shapes (issue 9): `:break guard` stops
-- where a guard is recorded (the expression, the op that asked, the Lua line, what it taught),
-- `:guards` lists them with where they came from, `:why s0` tells where a symbol came from and
-- what narrowed or replaced it. For the transcript dbg_guards.in.
local Dim = torch.export.Dim

-- Exports: both dims are Dim.AUTO, so the guards may narrow and equate them.
local Resize = nn.Module:extend("Resize")
function Resize:init() self:register_buffer("total", torch.zeros(1)) end
function Resize:forward(x, y)
  local n = x:size(0)
  local h = x + y                          -- Eq(s0, s1): y's rows are x's rows
  if n > 4 then                            -- s0 > 4: narrows s0
    h = h:relu()
  end
  self.total:add_(h:sum())
  return h:view(n, 2, -1)
end
resize = Resize()
resize.example_inputs = {torch.randn(6, 4), torch.randn(6, 4)}
resize.dynamic_shapes = {x = {[0] = Dim.AUTO}, y = {[0] = Dim.AUTO}}

-- Fails: the guards contradict the named Dims (a narrowed range, two dims made equal, a dim
-- made a constant).
local Strict = nn.Module:extend("Strict")
function Strict:forward(x, y, z)
  local n = x:size(0)
  if n > 32 then
    error("too long")
  end
  local h = x + y
  return h:view(2, 2, -1), z:view(4)
end
strict = Strict()
strict.example_inputs = {torch.randn(8, 4), torch.randn(8, 4), torch.randn(2, 2)}
strict.dynamic_shapes = {x = {[0] = Dim("batch", {max = 64})}, y = {[0] = Dim("other")},
                         z = {[0] = Dim("rows")}}

-- No dynamic shapes at all.
local Plain = nn.Module:extend("Plain")
function Plain:forward(x) return x * 2 end
plain = Plain()
plain.example_inputs = {torch.randn(3)}
