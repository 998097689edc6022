-- tests/pt2/make_corpus.lua — seed corpus for `make fuzz-load`: small programs saved as .pt2.
-- Layer: tests. Usage: fxdb tests/pt2/make_corpus.lua DIR
local dir = assert(arg[1], "usage: fxdb tests/pt2/make_corpus.lua DIR")
local M = nn.Module:extend("M")
function M:init() self.lin = nn.Linear(3, 2); self:register_buffer("state", torch.zeros(2)) end
function M:forward(x)
  local y = self.lin(x)
  self.state:add_(y:sum(0))
  local a, b = y:max(1)
  return y:relu(), a, b, x[{torch.tensor({1, 2})}]:mean()
end
local m = M()
local args = {torch.randn(4, 3)}
torch.export.save(torch.export.export(m, args), dir .. "/functional.pt2")
torch.export.save(torch.export.export(m, args, {ir = "training"}), dir .. "/training.pt2")
local S = nn.Module:extend("S")
function S:forward(x) return torch.cat({x, x * 2}, 0):split(2, 0)[1] end
torch.export.save(torch.export.export(S(), {torch.ones(2, 2)}), dir .. "/split.pt2")
-- a dynamic program: as_expr sizes, sym_size.int / operator nodes, range constraints, guards
local D = nn.Module:extend("D")
function D:forward(x, y)
  local n = x:size(0)
  return torch.cat({x, y}, 0), x:narrow(0, 0, n // 2) * 2, torch.zeros({n + 1, 2 * n}), x:view(-1)
end
local Dim = torch.export.Dim
torch.export.save(torch.export.export(D(), {torch.randn(6, 3), torch.randn(4, 3)},
  {dynamic_shapes = {x = {[0] = Dim("b", {min = 2, max = 64})}, y = {[0] = Dim.AUTO}}}),
  dir .. "/dynamic.pt2")
-- each archive's models/model.json (stored, so its bytes stand in the file as they are) as a
-- 'J' seed: tests/fuzz/fuzz_load.c reads those as the program JSON alone
for _, name in ipairs({"functional", "training", "split", "dynamic"}) do
  local f = assert(io.open(dir .. "/" .. name .. ".pt2", "rb"))
  local d = f:read("a")
  f:close()
  local pos = 1
  while d:sub(pos, pos + 3) == "PK\3\4" do
    local _, _, _, _, _, _, _, csize, _, nlen, elen = string.unpack("<I4I2I2I2I2I2I4I4I4I2I2", d, pos)
    local entry = d:sub(pos + 30, pos + 29 + nlen)
    local at = pos + 30 + nlen + elen
    if entry:match("/models/model%.json$") then
      local o = assert(io.open(dir .. "/" .. name .. ".json", "wb"))
      o:write("J", d:sub(at, at + csize - 1))
      o:close()
    end
    pos = at + csize
  end
end
print("corpus written to " .. dir)
