-- tests/peer/test_scalar_output.lua — ExportDB scalar_output (torch.dynamic-shape).
-- Layer: tests. A SymInt output (x.shape[1] + 1 with dim 1 dynamic): the program reads the size
-- with sym_size.int and returns the SymInt, as torch 2.5 prints it.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local ScalarOutput = nn.Module:extend("ScalarOutput")
function ScalarOutput:forward(x)
  return x.shape[2] + 1
end

P.modes(function(strict, mode)
  T.test("scalar_output: a SymInt output, " .. mode, function()
    local dim1_x = torch.export.Dim("dim1_x")
    local ep = torch.export.export(ScalarOutput(), {torch.randn(3, 2)},
      {strict = strict, dynamic_shapes = {x = {[1] = dim1_x}}})
    P.program(ep, "placeholder:x sym_size_int=aten.sym_size.int add=operator.add output:output",
      "x: USER_INPUT", "add: USER_OUTPUT")
    local code = ep.graph_module.code
    T.truthy(code:find("sym_size_int = torch.ops.aten.sym_size.int(x, 1)", 1, true), code)
    T.truthy(code:find("add = sym_size_int + 1", 1, true), code)
    T.truthy(tostring(ep):find('def forward(self, x: "f32[3, s0]"):', 1, true))
    T.eq(tostring(ep.range_constraints), "{s0: VR[0, int_oo]}")
  end)
end)

T.test("scalar_output runs eagerly", function()
  T.eq(ScalarOutput()(torch.randn(3, 2)), 3)
end)

P.done()
