-- tests/peer/test_class_method.lua — ExportDB class_method.
-- Layer: tests. A class method called three ways (self.method, self.__class__.method,
-- type(self).method) after an nn.Linear: parameters lifted as PARAMETER inputs.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local function type_of(obj) return getmetatable(obj).__class end -- Python's type(obj)

local ClassMethod = nn.Module:extend("ClassMethod")
function ClassMethod.method(cls, x) -- a classmethod: the class comes first
  return x + 1
end
function ClassMethod:init()
  self.linear = nn.Linear(4, 2)
end
function ClassMethod:forward(x)
  x = self.linear(x)
  local cls = type_of(self)
  return cls:method(x) * type_of(self).method(cls, x) * cls.method(cls, x)
end

local x = torch.arange(12):float():reshape(3, 4)

P.modes(function(strict, mode)
  local m = ClassMethod()
  torch.no_grad(function()
    m.linear.weight:copy_(torch.tensor({{1, 0, 0, 0}, {0, 1, 0, 0}}))
    m.linear.bias:copy_(torch.tensor({0, 1}))
  end)
  local ep = torch.export.export(m, {x}, {strict = strict})
  T.test("class_method graph and signature, " .. mode, function()
    -- fxdb keeps aten.linear (as the training IR of torch >= 2.6; 2.4 decomposed it to t + addmm)
    P.program(ep, "placeholder:p_linear_weight placeholder:p_linear_bias placeholder:x " ..
      "linear=aten.linear.default add=aten.add.Tensor add_1=aten.add.Tensor mul=aten.mul.Tensor " ..
      "add_2=aten.add.Tensor mul_1=aten.mul.Tensor output:output",
      "p_linear_weight: PARAMETER target='linear.weight'\n" ..
      "p_linear_bias: PARAMETER target='linear.bias'\nx: USER_INPUT",
      "mul_1: USER_OUTPUT")
    local g = tostring(ep.graph)
    T.truthy(g:find("linear.default](args = (%x, %p_linear_weight, %p_linear_bias)", 1, true), g)
    T.truthy(g:find("mul.Tensor](args = (%mul, %add_2)", 1, true), g)
  end)
  T.test("class_method numbers, " .. mode, function()
    local out = P.numbers(m, ep, {x})
    -- linear picks columns 0 and 1 (+ bias 0, 1): [[0, 2], [4, 6], [8, 10]]; then (v + 1)^3
    P.values(out[1], {3, 2}, {1, 27, 125, 343, 729, 1331})
    T.eq(#ep.state_dict["linear.weight"].shape, 2)
  end)
end)

P.done()
