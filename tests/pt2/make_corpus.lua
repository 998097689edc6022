-- tests/pt2/make_corpus.lua — seed corpus for `make fuzz-load`: small programs saved as .pt2.
-- Layer: tests. Usage: fxdb tests/pt2/make_corpus.lua DIR
local dir = assert(arg[1], "usage: fxdb tests/pt2/make_corpus.lua DIR")
local M = nn.Module:extend("M")
function M:init() self.lin = nn.Linear(3, 2); self:register_buffer("state", torch.zeros(2)) end
function M:forward(x)
  local y = self.lin(x)
  self.state:add_(y:sum(0))
  local a, b = y:max(1)
  return y:relu(), a, b, x[{{1, 2}}]:mean()
end
local m = M()
local args = {torch.randn(4, 3)}
torch.export.save(torch.export.export(m, args), dir .. "/functional.pt2")
torch.export.save(torch.export.export(m, args, {ir = "training"}), dir .. "/training.pt2")
local S = nn.Module:extend("S")
function S:forward(x) return torch.cat({x, x * 2}, 0):split(2, 0)[1] end
torch.export.save(torch.export.export(S(), {torch.ones(2, 2)}), dir .. "/split.pt2")
print("corpus written to " .. dir)
