-- examples/index_assign.lua — seed case S3: index assignment with a tensor index
-- (x[..., kv_index] = update), which PyTorch's non-strict mode cannot capture; fxdb can, in both.
-- Run: build/fxdb examples/index_assign.lua

local UpdateModel = nn.Module:extend("UpdateModel")
function UpdateModel:forward(x, update, kv_index)
  x = x:clone()
  x[{"...", kv_index}] = update
  return x
end

local x = torch.ones(4, 4, 10)
local update = (torch.arange(2) + 10):float():reshape(1, 1, 2)
local kv_index = torch.tensor({1, 2}, torch.int32)

for _, strict in ipairs{true, false} do
  local m = UpdateModel()
  local ep = torch.export.export(m, {x, update, kv_index}, {strict = strict})
  print("== " .. (strict and "strict" or "non-strict"))
  print(ep)
  local out = fxdb.run(ep, {x, update, kv_index}).outputs[1]
  print("x[0, 0] after the update:", out[0][0])
  for i = 0, 3 do
    for j = 0, 3 do
      for k = 0, 9 do
        local want = (k == 1 and 10) or (k == 2 and 11) or 1
        assert(out[i][j][k]:item() == want, "wrong value at " .. i .. "," .. j .. "," .. k)
      end
    end
  end
  print(fxdb.check(m, ep, {x, update, kv_index}))
end
