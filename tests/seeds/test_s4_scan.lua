-- tests/seeds/test_s4_scan.lua — seed case S4: a higher-order op, scan. Eager result, the
-- exported graph (select -> zeros_like -> get_attr scan_combine_graph_0 -> scan -> getitem), the
-- combine function as a subgraph attribute printed as a nested class, and execution.
local T = dofile("tests/lua/harness.lua")

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

local function values(t)
  local out = {}
  local flat = t:reshape(t:numel())
  for i = 0, t:numel() - 1 do out[#out + 1] = flat[i]:item() end
  return table.concat(out, ",")
end

T.test("S4 eager gives x:sum(0)", function()
  T.eq(values(ScanModel()(x)), "12.0,15.0,18.0")
end)

for _, strict in ipairs{true, false} do
  local mode = strict and "strict" or "non-strict"
  local m = ScanModel()
  local ep = torch.export.export(m, {x}, {strict = strict})
  T.test("S4 graph, " .. mode, function()
    local seq = {}
    for _, n in ipairs(ep.graph.nodes) do
      if n.op ~= "placeholder" and n.op ~= "output" then seq[#seq + 1] = n.op .. ":" .. n.target end
    end
    T.eq(table.concat(seq, " "),
      "call_function:aten.select.int call_function:aten.zeros_like.default " ..
      "get_attr:scan_combine_graph_0 call_function:higher_order.scan call_function:getitem")
    T.truthy(tostring(ep.graph):find(
      "torch.ops.higher_order.scan](args = (%scan_combine_graph_0, [%zeros_like], [%x], 0, False, [])", 1, true),
      tostring(ep.graph))
    local code = fxdb.code(ep)
    T.truthy(code:find("    class scan_combine_graph_0(torch.nn.Module):\n" ..
      "        def forward(self, arg0_1: \"f32[3]\", arg1_1: \"f32[3]\"):", 1, true), code)
    T.truthy(code:find("add: \"f32[3]\" = torch.ops.aten.add.Tensor(arg0_1, arg1_1);  arg0_1 = arg1_1 = None\n" ..
      "            return [add, add]", 1, true), code)
    T.eq(tostring(ep.graph_signature.output_specs[1]), "getitem: USER_OUTPUT")
  end)
  T.test("S4 run, " .. mode, function()
    T.eq(values(fxdb.run(ep, {x}).outputs[1]), "12.0,15.0,18.0")
    T.truthy(fxdb.check(m, ep, {x}).ok)
    T.eq(values(ep:module()(x)), "12.0,15.0,18.0")
  end)
end

T.test("scan: reverse, several carries, stacked outputs along dim 1, additional inputs", function()
  local function step(c1, c2, xt, w)
    return c1 + xt, c2 * 2, xt * w
  end
  local xs = torch.tensor({{1, 2, 3}, {4, 5, 6}})          -- scanned along dim 1: 3 steps of (2,)
  local c1, c2, ys = torch.ops.higher_order.scan(step, {torch.zeros(2), torch.ones(2)}, {xs},
    {dim = 1, reverse = true, additional_inputs = {torch.tensor({10, 100})}})
  T.eq(values(c1), "6.0,15.0")
  T.eq(values(c2), "8.0,8.0")
  T.eq(table.concat(ys.shape, "x"), "2x3")
  T.eq(values(ys), "10,20,30,400,500,600") -- int64 xs times int64 w
end)

T.test("a traced tensor captured by the body becomes an additional input; bodies may not mutate", function()
  local Cap = nn.Module:extend("Cap")
  function Cap:forward(x)
    local k = x * 2
    local c = torch.ops.higher_order.scan(function(c, xt) return c + xt * k[0], c end,
      {torch.zeros(3)}, {x})
    return c
  end
  local m = Cap()
  local ep = torch.export.export(m, {x})
  T.truthy(tostring(ep.graph):find("[%zeros], [%x], 0, False, [%mul])", 1, true), tostring(ep.graph))
  T.truthy(fxdb.code(ep):find("def forward(self, arg0_1: \"f32[3]\", arg1_1: \"f32[3]\", mul: \"f32[3, 3]\")", 1, true),
    fxdb.code(ep))
  T.truthy(fxdb.check(m, ep, {x}).ok)
  T.eq(values(m(x)), values(fxdb.run(ep, {x}).outputs[1]))
  local Mut = nn.Module:extend("Mut")
  function Mut:forward(x)
    local c = torch.ops.higher_order.scan(function(c, xt) xt:add_(1); return c + xt, c end,
      {torch.zeros(3)}, {x})
    return c
  end
  local e = T.checkerr("mutates one of its inputs", torch.export.export, Mut(), {x})
  T.eq(e.kind, "hop_body_mutation")
end)

T.done()
