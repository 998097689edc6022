-- tests/seeds/test_s3_index_assign.lua — seed case S3: x[..., kv_index] = update with an int32
-- index tensor, in both modes: clone -> index_put, and the values after running.
local T = dofile("tests/lua/harness.lua")

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
  local mode = strict and "strict" or "non-strict"
  local m = UpdateModel()
  local ep = torch.export.export(m, {x, update, kv_index}, {strict = strict})
  T.test("S3 graph, " .. mode, function()
    local seq = {}
    for _, n in ipairs(ep.graph.nodes) do
      if n.op == "call_function" then seq[#seq + 1] = n.target end
    end
    -- PyTorch's __setitem__ strips the value's leading size-1 dims (slicePrefix1sSize) with a view
    -- before index_put_, so the (1, 1, 2) update arrives as view(update, [2]).
    T.eq(table.concat(seq, " "), "aten.clone.default aten.view.default aten.index_put.default")
    local ip = ep.graph:node("index_put")
    T.truthy(tostring(ep.graph):find("index_put.default](args = (%clone, [None, None, %kv_index], %view)", 1, true),
      tostring(ep.graph))
    T.truthy(tostring(ep.graph):find("view.default](args = (%update, [2])", 1, true), tostring(ep.graph))
    T.eq(#ep.graph_signature.output_specs, 1)
    T.eq(ep.graph_signature.output_specs[1].kind, "USER_OUTPUT")
    T.truthy(ip ~= nil)
  end)
  T.test("S3 values, " .. mode, function()
    local out = fxdb.run(ep, {x, update, kv_index}).outputs[1]
    for i = 0, 3 do
      for j = 0, 3 do
        for k = 0, 9 do
          local want = (k == 1 and 10) or (k == 2 and 11) or 1
          T.eq(out[i][j][k]:item(), want)
        end
      end
    end
    T.truthy(fxdb.check(m, ep, {x, update, kv_index}).ok)
  end)
end

T.done()
