-- examples/attr_assign.lua — seed case S2: module attributes rebound or written in forward
-- (the Llama KV-cache question), in strict and non-strict mode.
-- Run: build/fxdb examples/attr_assign.lua

local function show_error(e)
  if type(e) ~= "table" then print("error: " .. tostring(e)) return end
  print(string.format("export error (%s): %s", e.kind, e.message))
  if e.location then print(string.format("  at %s:   %s", e.location, e.source or "")) end
  if e.hint then print("  hint: " .. e.hint) end
end

local function try(title, m, args, opts)
  print("== " .. title)
  local before = m.a
  local before_values = before:clone()
  local ok, res = pcall(torch.export.export, m, args, opts)
  if ok then print(res) else show_error(res) end
  local same = rawequal(m.a, before) and fxdb._max_abs_diff(m.a, before_values) == 0
  print("  module state unchanged: " .. tostring(same))
  assert(same, "export changed the module's state")
end

-- (a) rebinding a plain tensor attribute
local Rebind = nn.Module:extend("Rebind")
function Rebind:init() self.a = torch.randn(100, 100) end
function Rebind:forward(b)
  self.a = self.a + b
  return self.a
end

-- (b) writing into a plain tensor attribute
local Write = nn.Module:extend("Write")
function Write:init() self.a = torch.randn(100, 100) end
function Write:forward(b)
  self.a[{":", 1}] = torch.ones(100)
  return self.a
end

-- the same with `a` registered as a buffer
local RebindBuf = nn.Module:extend("RebindBuf")
function RebindBuf:init() self:register_buffer("a", torch.randn(100, 100)) end
RebindBuf.forward = Rebind.forward
local WriteBuf = nn.Module:extend("WriteBuf")
function WriteBuf:init() self:register_buffer("a", torch.randn(100, 100)) end
WriteBuf.forward = Write.forward

torch.manual_seed(0)
local b = torch.randn(100, 100)
for _, strict in ipairs{true, false} do
  local mode = strict and "strict" or "non-strict"
  try("(a) rebind plain attribute, " .. mode, Rebind(), {b}, {strict = strict})
  try("(b) write into plain attribute, " .. mode, Write(), {b}, {strict = strict})
  try("(b) with lift_mutated_constants, " .. mode, Write(), {b},
      {strict = strict, lift_mutated_constants = true})
  try("(a) registered buffer, " .. mode, RebindBuf(), {b}, {strict = strict})
  try("(b) registered buffer (KV-cache pattern), " .. mode, WriteBuf(), {b}, {strict = strict})
end
