-- tests/lua/test_einsum.lua — torch.einsum: values against torch 1.13 for the same inputs
-- (batched matmul, transposes, diagonals and traces from repeated labels, ellipsis broadcasting,
-- implicit outputs, outer products, three operands), PyTorch's messages, and what export records
-- (ATen's decomposition: permute / reshape / bmm / view, never an einsum node), eager against the
-- exported program in both modes, and a dynamic batch dim.
local T = dofile("tests/lua/harness.lua")

local function close(t, want, tol)
  local got = t:reshape(-1):tolist()
  local i = 0
  for w in want:gmatch("%S+") do
    i = i + 1
    if math.abs((got[i] or math.huge) - tonumber(w)) > (tol or 1e-4) then
      error(string.format("element %d: got %s, want %s", i, tostring(got[i]), w), 2)
    end
  end
  if i ~= #got then error(string.format("%d elements, want %d", #got, i), 2) end
end

local function targets(ep)
  local out = {}
  for _, n in ipairs(ep.graph.nodes) do
    if n.op == "call_function" then out[#out + 1] = n.target:gsub("^aten%.", "") end
  end
  return table.concat(out, " ")
end

local a = ((torch.arange(2 * 3 * 4.) % 5 - 2) / 3):reshape(2, 3, 4)
local b = ((torch.arange(2 * 4 * 5.) % 7 - 3) / 4):reshape(2, 4, 5)

T.test("values as torch 1.13 gives them", function()
  close(torch.einsum("bij,bjk->bik", a, b)[0], "0.1667 0.0000 0.4167 0.2500 0.0833 -0.8333 -0.9167 " ..
    "0.1667 0.0833 0.5833 0.2500 0.2500 -0.9167 -0.9167 0.2500")
  close(torch.einsum("bij->bji", a)[1], "0.0000 -0.3333 -0.6667 0.3333 0.0000 -0.3333 0.6667 0.3333 " ..
    "0.0000 -0.6667 0.6667 0.3333")
  local sq = a[0]:narrow(1, 0, 3)
  close(torch.einsum("ii->i", sq), "-0.6667 -0.6667 -0.6667")
  close(torch.einsum("ii", sq), "-2.0000")
  close(torch.einsum("...ij,...jk", a, b)[1], "0.4167 0.5000 0.5833 0.0833 0.1667 -0.8333 -0.0833 " ..
    "0.0833 0.2500 0.4167 -0.8333 0.1667 0.0000 0.4167 0.2500")
  close(torch.einsum("i,j->ij", a[0][0], b[0][0]), "0.5000 0.3333 0.1667 0 -0.1667 0.2500 0.1667 " ..
    "0.0833 0 -0.0833 0 0 0 0 0 -0.2500 -0.1667 -0.0833 0 0.0833")
  close(torch.einsum("bij,bkj->bik", {a, a})[0], "0.6667 -0.2222 -0.5556 -0.2222 1.0000 0.0000 " ..
    "-0.5556 0.0000 1.1111")
  close(torch.einsum("ij,jk,kl->il", a[0], b[0], b[1]:t()), "-0.1458 0.1250 0.2500 -0.2083 -0.0417 " ..
    "-0.8958 0.7292 1.1875 0.6875 0.0625 -0.5625 -0.0208")
  -- a path contracts in another order, same values
  local p = torch.einsum("ij,jk,kl->il", a[0], b[0], b[1]:t(), {path = {1, 2, 0, 1}})
  T.near((p - torch.einsum("ij,jk,kl->il", a[0], b[0], b[1]:t())):abs():max():item(), 0, 1e-6)
  T.eq(torch.einsum("ij,jk", a[0]:double(), b[0]:double()).dtype, torch.float64)
end)

T.test("PyTorch's messages", function()
  T.checkerr("einsum(): fewer operands were provided than specified in the equation", torch.einsum, "ij,jk", a[0])
  T.checkerr("einsum(): more operands were provided than specified in the equation", torch.einsum, "ij", a[0], a[0])
  T.checkerr("einsum(): output subscript k does not appear in the equation for any input operand",
    torch.einsum, "ij->k", a[0])
  T.checkerr("einsum(): the number of subscripts in the equation (3) does not match the number of " ..
    "dimensions (2) for operand 0 and no ellipsis was given", torch.einsum, "ijk", a[0])
  T.checkerr("einsum(): subscript j has size 3 for operand 1 which does not broadcast with " ..
    "previously seen size 4", torch.einsum, "ij,jk", a[0], a[0])
  T.checkerr("einsum(): invalid subscript given at index 1 in the equation string, subscripts " ..
    "must be in [a-zA-Z]", torch.einsum, "i1", a[0])
  T.checkerr("einsum(): subscript i is repeated for operand 0 but the sizes don't match, 4 != 3",
    torch.einsum, "ii", a[0])
  T.checkerr("einsum(): output subscript i appears more than once in the output", torch.einsum, "ij->ii", a[0])
end)

T.test("export records ATen's decomposition, in both modes", function()
  local M = nn.Module:extend("Ein")
  function M:init() self.w = nn.Parameter(b[0]) end
  function M:forward(x)
    return torch.einsum("bij,jk->bik", x, self.w), torch.einsum("bij->bj", x)
  end
  for _, strict in ipairs({true, false}) do
    local m = M()
    local ep = torch.export.export(m, {a}, {strict = strict})
    -- operand 0 gains k, operand 1 gains b and i (unsqueeze), both are permuted to (b, i, k, j);
    -- sumproduct_pair: permute + view each, bmm, view + permute back; j viewed away; then the
    -- second einsum permutes to (b, j, i) and sums i
    T.eq(targets(ep), "unsqueeze.default permute.default unsqueeze.default unsqueeze.default " ..
      "permute.default permute.default view.default permute.default view.default bmm.default " ..
      "view.default permute.default view.default permute.default sum.dim_IntList")
    local r1, r2 = ep:module()(a)
    local e1, e2 = m(a)
    T.near((r1 - e1):abs():max():item(), 0, 1e-6)
    T.near((r2 - e2):abs():max():item(), 0, 1e-6)
  end
end)

T.test("a dynamic batch dim stays symbolic through einsum", function()
  local M = nn.Module:extend("EinDyn")
  function M:forward(x, y) return torch.einsum("bij,bjk->bik", x, y) end
  local B = torch.export.Dim("B", {min = 2})
  local ep = torch.export.export(M(), {a, b}, {dynamic_shapes = {x = {[0] = B}, y = {[0] = B}}})
  T.truthy(tostring(ep):find('bmm: "f32[s0, 3, 5]"', 1, true), tostring(ep))
  local a3, b3 = torch.randn(3, 3, 4), torch.randn(3, 4, 5)
  T.near((ep:module()(a3, b3) - a3:bmm(b3)):abs():max():item(), 0, 1e-5)
end)

T.done()
