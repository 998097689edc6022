-- tests/lua/test_out.lua — `out=` arguments: torch.sin(x, {out = y}) writes y (converted to y's
-- dtype when the result can be cast, PyTorch's message when not), returns it, and may alias an
-- input; export records the out overload in the training IR and, in the functional IR, the
-- functional op with `out` as a mutated input (USER_INPUT_MUTATION / BUFFER_MUTATION) or nothing
-- more for an intermediate, as torch.export does, in both modes; the unlifted module and the
-- interpreter write out as eager does.
local T = dofile("tests/lua/harness.lua")

local vals = T.vals
local function targets(ep) return T.targets(ep, true) end

local x = torch.tensor({{0.5, -1.0, 2.0}, {1.5, 0.25, -0.75}})

T.test("eager: out= writes the result into out and returns it", function()
  local y = torch.zeros(2, 3)
  local r = torch.sin(x, {out = y})
  T.eq(vals(y), vals(x:sin()))
  T.eq(vals(r), vals(y))
  r:add_(1) -- r is y
  T.eq(vals(y), vals(x:sin() + 1))
  local d = torch.zeros(2, 3, {dtype = torch.float64})
  torch.add(x, 2, {out = d})
  T.eq(d.dtype, torch.float64)
  T.eq(vals(d), vals(x + 2))
  local s = torch.zeros(2)
  torch.sum(x, 1, {out = s})
  T.eq(vals(s), vals(x:sum(1)))
  local m = torch.zeros(2, 2)
  torch.mm(x, x:t(), {out = m})
  T.eq(vals(m), vals(x:mm(x:t())))
  local c = torch.zeros(4, 3)
  torch.cat({x, x * 2}, 0, {out = c})
  T.eq(vals(c), vals(torch.cat({x, x * 2})))
  local a = x:clone()
  torch.mul(a, a, {out = a}) -- out aliasing the inputs
  T.eq(vals(a), vals(x * x))
  local i = torch.zeros(2, 3, {dtype = torch.int64})
  torch.clamp(torch.tensor({{-5, 2, 9}, {0, 4, 7}}), 0, 5, {out = i})
  T.eq(vals(i, "%d"), "0 2 5 0 4 5")
end)

T.test("PyTorch's messages", function()
  T.checkerr("result type Float can't be cast to the desired output type Long", torch.sin, x,
    {out = torch.zeros(2, 3, {dtype = torch.int64})})
  T.checkerr("mm() got an unexpected keyword argument 'outt'", torch.mm, x, x:t(), {outt = x})
  T.checkerr("sin() missing 1 required positional argument: \"self\"", torch.sin, {out = x})
end)

T.test("an out of another shape is resized, with PyTorch's warning when it had elements", function()
  fxdb.warnings({clear = true})
  local o = torch.zeros(2)
  local r = torch.sin(torch.arange(3.0), {out = o})
  T.truthy(rawequal(r, o))
  T.eq(vals(o), "0.0000 0.8415 0.9093") -- torch 1.13
  local w = fxdb.warnings({clear = true})
  T.eq(#w, 1)
  T.eq(w[1].category, "UserWarning")
  T.eq(w[1].message, "An output with one or more elements was resized since it had shape [2], which " ..
    "does not match the required output shape [3]. This behavior is deprecated, and in a future " ..
    "PyTorch release outputs will not be resized unless they have zero elements. You can explicitly " ..
    "reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).")
  o = torch.zeros(0) -- no elements: resized without a warning
  torch.sin(torch.arange(3.0), {out = o})
  T.eq(vals(o), "0.0000 0.8415 0.9093")
  o = torch.zeros(5)
  torch.sum(torch.ones(2, 2), 0, {out = o})
  T.eq(vals(o), "2.0000 2.0000")
  T.eq(table.concat(o:stride(), ","), "1")
  local c = torch.zeros(1, {dtype = torch.int64})
  torch.cat({torch.tensor({1, 2}), torch.tensor({3})}, 0, {out = c})
  T.eq(vals(c, "%d"), "1 2 3")
  T.eq(#fxdb.warnings({clear = true}), 2)
  T.checkerr("result type Float can't be cast to the desired output type Long", torch.sin, x,
    {out = torch.zeros(3, {dtype = torch.int64})})
end)

T.test("export: resizing an out= input is a metadata mutation; an intermediate takes the result", function()
  local M = nn.Module:extend("OutResize")
  function M:forward(a)
    local o = torch.zeros(2)
    torch.sin(a, {out = o})
    return o + 1
  end
  local N = nn.Module:extend("OutResizeInput")
  function N:forward(a, o) torch.sin(a, {out = o}); return o + 1 end
  local P = nn.Module:extend("OutResizeView")
  function P:forward(a) local o = torch.zeros(4); torch.sin(a, {out = o[{":2"}]}); return o end
  local a = torch.arange(3.0)
  for _, strict in ipairs({true, false}) do
    local ep = torch.export.export(M(), {a}, {strict = strict})
    T.eq(T.targets(ep), "aten.sin.default aten.add.Tensor")
    T.eq(vals(ep:module()(a)), vals(M()(a)))
    local ok, e = pcall(torch.export.export, N(), {a, torch.zeros(2)}, {strict = strict})
    T.falsy(ok)
    T.eq(e.kind, "metadata_mutation")
    T.truthy(tostring(e):find("Found an input that received a metadata mutation", 1, true), tostring(e))
    ok, e = pcall(torch.export.export, P(), {a}, {strict = strict})
    T.falsy(ok)
    T.truthy(tostring(e):find("Attempted to resize a view tensor to a larger size", 1, true), tostring(e))
  end
  fxdb.warnings({clear = true})
end)

T.test("export: the functional op and out as a mutated input, in both modes", function()
  local M = nn.Module:extend("OutM")
  function M:init() self:register_buffer("acc", torch.zeros(2, 3)) end
  function M:forward(a, y)
    torch.sin(a, {out = y})
    torch.add(a, self.acc, {out = self.acc})
    local tmp = torch.empty(2, 3)
    torch.mul(a, 2, {out = tmp})
    return tmp + y
  end
  for _, strict in ipairs({true, false}) do
    local m = M()
    local y = torch.zeros(2, 3)
    local ep = torch.export.export(m, {x, y}, {strict = strict})
    -- tmp's empty is dead once mul writes it: DCE drops it, as in PyTorch's graph
    T.eq(targets(ep), "aten.sin.default aten.add.Tensor aten.mul.Tensor aten.add.Tensor")
    local s = tostring(ep)
    T.truthy(s:find("add: BUFFER_MUTATION target='acc'", 1, true), s)
    T.truthy(s:find("sin: USER_INPUT_MUTATION target='y'", 1, true), s)
    local tr = torch.export.export(m, {x, y}, {strict = strict, ir = "training"})
    T.truthy(tostring(tr):find("torch.ops.aten.sin.out(a, out = y)", 1, true), tostring(tr))
    T.eq(targets(tr), "aten.sin.out aten.add.out aten.empty.memory_format aten.mul.out aten.add.Tensor")
    -- the unlifted module writes out and the buffer as eager does, step after step
    local mod, ref = ep:module(), M()
    local y1, y2 = torch.zeros(2, 3), torch.zeros(2, 3)
    for _ = 1, 2 do
      T.eq(vals(mod(x, y1)), vals(ref(x, y2)))
      T.eq(vals(y1), vals(y2))
    end
    T.eq(vals(mod.acc), vals(ref.acc))
    local tmod = tr:module()
    local y3 = torch.zeros(2, 3)
    T.eq(vals(tmod(x, y3)), vals(M()(x, torch.zeros(2, 3))))
    T.eq(vals(y3), vals(x:sin()))
  end
end)

T.done()
