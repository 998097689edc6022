-- examples/scan.lua — seed case S4: a higher-order op. The combine function becomes a subgraph
-- attribute (scan_combine_graph_0) of the exported program, printed as a nested class, drawn as a
-- cluster, and run by the interpreter. Run: build/fxdb examples/scan.lua

local function add(carry, y)
  local next_carry = carry + y
  return {next_carry, next_carry}
end

local ScanModel = nn.Module:extend("ScanModel")
function ScanModel:forward(x)
  local init = torch.zeros_like(x[0])
  local carry, out = torch.ops.higher_order.scan(add, {init}, {x}, 0, false, {})
  return carry
end

local x = torch.tensor({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}, torch.float32)
local m = ScanModel()
print("eager:", m(x))
local ep = torch.export.export(m, {x})
print(ep)
if fxdb.render then print("wrote " .. fxdb.render(ep, "scan.svg")) end
print("exported:", fxdb.run(ep, {x}).outputs[1])
print(fxdb.check(m, ep, {x}))
