-- tests/golden/dbg_errors.lua — one module per export error, for the post-mortem transcript: a
-- trace session that fails stays at the failing op (or assignment) with its context.
local function with_inputs(m, ...) m.example_inputs = {...}; return m end

-- S2 (a): a plain tensor attribute rebound in forward (strict: at the assignment; non-strict:
-- after the call)
local Rebind = nn.Module:extend("Rebind")
function Rebind:init() self.a = torch.zeros(2, 2) end
function Rebind:forward(b)
  local c = b * 2
  self.a = self.a + c
  return self.a
end
rebind = with_inputs(Rebind(), torch.ones(2, 2))

-- S2 (b): writing into a plain tensor attribute (a lifted constant): a functionalization error
local WriteConst = nn.Module:extend("WriteConst")
function WriteConst:init() self.a = torch.zeros(3, 3) end
function WriteConst:forward(b)
  self.a[{":", 1}] = b
  return self.a:sum()
end
writeconst = with_inputs(WriteConst(), torch.ones(3))

-- a parameter reassigned in forward
local Param = nn.Module:extend("Param")
function Param:init() self.w = nn.Parameter(torch.ones(2)) end
function Param:forward(x)
  self.w = nn.Parameter(x)
  return x
end
param = with_inputs(Param(), torch.ones(2))

-- a data-dependent read on a meta tensor
local DataDep = nn.Module:extend("DataDep")
function DataDep:forward(x)
  local s = x:sum()
  if s:item() > 0 then return x * 2 end
  return x
end
datadep = with_inputs(DataDep(), torch.ones(3))

-- a shape error inside a submodule
local Inner = nn.Module:extend("Inner")
function Inner:init() self.bias = nn.Parameter(torch.zeros(4)) end
function Inner:forward(x) return x + self.bias end
local Outer = nn.Module:extend("Outer")
function Outer:init() self.inner = Inner() end
function Outer:forward(x)
  local y = x * 3
  local z = self.inner(y)
  return z
end
shape = with_inputs(Outer(), torch.ones(2, 3))

-- an in-place update of a parameter that requires grad (functionalization refuses it)
local MutParam = nn.Module:extend("MutParam")
function MutParam:init() self.w = nn.Parameter(torch.ones(3)) end
function MutParam:forward(x)
  self.w:add_(x)
  return self.w * 2
end
mutparam = with_inputs(MutParam(), torch.ones(3))

-- a metadata mutation of an input
local Meta = nn.Module:extend("MetaMutation")
function Meta:forward(x)
  x:transpose_(0, 1)
  return x + 1
end
metamut = with_inputs(Meta(), torch.ones(2, 3))

-- an in-place op on an expanded view (one element written through several positions)
local Expand = nn.Module:extend("ExpandWrite")
function Expand:forward(x)
  local e = x:expand(2, 3)
  e:add_(1)
  return e
end
expandwrite = with_inputs(Expand(), torch.ones(1, 3))

-- a mutated input that shares storage with another input
local Alias = nn.Module:extend("AliasedInputs")
function Alias:forward(a, b)
  a:add_(1)
  return a + b
end
local shared = torch.ones(3)
aliased = with_inputs(Alias(), shared, shared)
