-- tests/peer/test_model_attr_mutation.lua — ExportDB model_attr_mutation (python.object-model).
-- Layer: tests. forward assigns a new Lua list of tensors to the plain attribute attr_list.
-- PyTorch 2.10 exports it (the list is a traced local; 2.4-2.9 refused: "Mutating module
-- attribute attr_list during export."); fxdb follows 2.10: only tensor values assigned to
-- attributes are refused, a list is a plain Lua value. The module keeps its old list.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local ModelAttrMutation = nn.Module:extend("ModelAttrMutation")
function ModelAttrMutation:init()
  self.attr_list = {torch.randn(3, 2), torch.randn(3, 2)}
end
function ModelAttrMutation:recreate_list()
  return {torch.zeros(3, 2), torch.zeros(3, 2)}
end
function ModelAttrMutation:forward(x)
  self.attr_list = self:recreate_list()
  return x:sum() + self.attr_list[1]:sum()
end

local x = torch.tensor({{1, 2}, {3, 4}, {5, 6}}, torch.float32)

P.modes(function(strict, mode)
  local m = ModelAttrMutation()
  local before = m.attr_list
  local ep = torch.export.export(m, {x}, {strict = strict})
  T.test("model_attr_mutation graph and signature (2.10), " .. mode, function()
    -- 2.10 (training IR) keeps the dead zeros_1 (`zeros_1 = None`); the functional form drops
    -- dead nodes, as 2.4 did (tensor_setattr's dead randn is gone in 2.4)
    P.program(ep, "placeholder:x zeros=aten.zeros.default " ..
      "sum_1=aten.sum.default sum_2=aten.sum.default add=aten.add.Tensor output:output",
      "x: USER_INPUT", "add: USER_OUTPUT")
    local g = tostring(ep.graph)
    T.truthy(g:find("sum.default](args = (%x,)", 1, true), g)
    T.truthy(g:find("sum.default](args = (%zeros,)", 1, true), g)
  end)
  T.test("model_attr_mutation leaves the module's list alone, " .. mode, function()
    T.truthy(rawequal(m.attr_list, before), "attr_list is the same table after export")
    T.eq(#m.attr_list, 2)
  end)
  T.test("model_attr_mutation numbers, " .. mode, function()
    local out = P.numbers(m, ep, {x})
    P.values(out[1], {}, {21})
    T.truthy(rawequal(m.attr_list, before), "attr_list restored after the numbers check")
  end)
end)

P.done()
