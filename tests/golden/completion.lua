-- tests/golden/completion.lua — values for the Tab-completion transcript (completion.in), which
-- asks `:complete TEXT` for what the line editor would offer.
config = {alpha = 1, beta = {gamma = 2}, _private = 3, __hidden = 4}
obj = setmetatable({field = 1}, {__index = {method = function() end, value = 2}})
-- a userdata-like value: function __index, methods published in __methods
handle = setmetatable({}, {__index = function() end,
                           __methods = {go = function() end, stop = function() end}})

local Cls = nn.Module:extend("Cls")
function Cls:init()
  self.lin = nn.Linear(2, 2)
  self:register_buffer("buf", torch.zeros(2))
end
function Cls:forward(x)
  return self.lin(x) + self.buf
end
mod = Cls()

local Small = nn.Module:extend("Small")
function Small:forward(x)
  return x * 2 + 1
end
small = Small()
