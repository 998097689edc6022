-- tests/peer/test_list_unpack.lua — ExportDB list_unpack (python.control-flow, data-structure).
-- Layer: tests. A list input unpacked as `x, *y = args`: pytree flattening names the inputs
-- args_0, args_1, args_2; the unused args_2 stays an input.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local ListUnpack = nn.Module:extend("ListUnpack")
function ListUnpack:forward(args)
  local x, y = args[1], {table.unpack(args, 2)} -- x, *y = args
  return x + y[1]
end

local args = {torch.tensor({{1, 2}, {3, 4}, {5, 6}}, torch.float32), torch.tensor(4), torch.tensor(5)}

T.test("list_unpack runs eagerly", function()
  P.values(ListUnpack()(args), {3, 2}, {5, 6, 7, 8, 9, 10})
end)

P.modes(function(strict, mode)
  local m = ListUnpack()
  T.test("list_unpack graph and signature, " .. mode, function()
      local ep = torch.export.export(m, {args}, {strict = strict})
      P.program(ep, "placeholder:args_0 placeholder:args_1 placeholder:args_2 add=aten.add.Tensor " ..
        "output:output", "args_0: USER_INPUT\nargs_1: USER_INPUT\nargs_2: USER_INPUT",
        "add: USER_OUTPUT")
      local other = {args[1] * 2, torch.tensor(-1), torch.tensor(0)}
      P.eq_tensor(ep:module()(other), m(other), "unlifted, other inputs")
    end)
end)

P.done()
