-- tests/lua/test_index.lua — x[{...}] reading and writing: values, views sharing storage, advanced
-- indices (int64, int32, bool masks, lists), errors, and the exact ops recorded while tracing
-- (PyTorch's __getitem__ / __setitem__ desugaring). Expected values are written out by hand.
local T = dofile("tests/lua/harness.lua")

local function show(v)
  if type(v) == "number" then return string.format("%.6g", v) end
  if type(v) ~= "table" then return tostring(v) end
  local p = {}
  for i = 1, #v do p[i] = show(v[i]) end
  return "{" .. table.concat(p, ", ") .. "}"
end

local function eqlist(t, want)
  local got = show(torch.is_tensor(t) and t:tolist() or t)
  if got ~= show(want) then
    error({harness = true, msg = debug.getinfo(2, "Sl").short_src .. ":" ..
      debug.getinfo(2, "l").currentline .. ": expected " .. show(want) .. ", got " .. got}, 0)
  end
end

-- x = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
local function grid() return torch.arange(12):view(3, 4) end

-- The call_function targets of a training-IR export of forward(x, ...) (in-place ops kept).
local function traced_ops(forward, args)
  local M = nn.Module:extend("IndexProbe")
  M.forward = forward
  local ep = torch.export.export(M(), args, {ir = "training"})
  local ops = {}
  for _, n in ipairs(ep.graph.nodes) do
    if n.op == "call_function" then ops[#ops + 1] = n.target end
  end
  return table.concat(ops, " "), ep
end

-- ---- reading ---------------------------------------------------------------------------------------

T.test("integers select; negative integers count from the end", function()
  local x = grid()
  eqlist(x[0], {0, 1, 2, 3})
  eqlist(x[-1], {8, 9, 10, 11})
  eqlist(x[{1, 2}], 6)
  eqlist(x[{-1, -1}], 11)
  eqlist(x[{":", 1}], {1, 5, 9})
  T.eq(x[{1, 2}].ndim, 0)
end)

T.test("slices: a:b, ::c, negative bounds, clamping", function()
  local x = grid()
  eqlist(x[{"1:3"}], {{4, 5, 6, 7}, {8, 9, 10, 11}})
  eqlist(x[{"1:3", "::2"}], {{4, 6}, {8, 10}})
  eqlist(x[{":", "-2:"}], {{2, 3}, {6, 7}, {10, 11}})
  eqlist(x[{":", ":-3"}], {{0}, {4}, {8}})
  eqlist(x[{0, "1:100"}], {1, 2, 3})
  eqlist(x[{0, " 1 : 3 "}], {1, 2})
  T.eq(show(x[{"5:"}].shape), "{0, 4}")
end)

T.test("None and ellipsis", function()
  local x = grid()
  T.eq(show(x[{"None", ":"}].shape), "{1, 3, 4}")
  T.eq(show(x[{":", "None"}].shape), "{3, 1, 4}")
  T.eq(show(x[{"...", "None"}].shape), "{3, 4, 1}")
  eqlist(x[{"...", 1}], {1, 5, 9})
  eqlist(x[{"...", 1, 1}], 5)
  local y = torch.arange(24):view(2, 3, 4)
  eqlist(y[{"...", 0, 1}], {1, 13})
  eqlist(y[{1, "..."}][0], {12, 13, 14, 15})
  T.eq(show(y[{"..."}].shape), "{2, 3, 4}")
end)

T.test("basic indexing returns views that share storage", function()
  local x = grid()
  local col = x[{":", 1}]
  col:fill_(-1)
  eqlist(x, {{0, -1, 2, 3}, {4, -1, 6, 7}, {8, -1, 10, 11}})
  local all = x[{":"}]
  T.falsy(rawequal(all, x))                   -- x[:] is a new view (alias), not x
  all[{0, 0}] = 100
  T.eq(x[{0, 0}]:item(), 100)
  T.eq(x[{"1:3", "::2"}]:storage_offset(), 4)
  T.eq(show(x[{"1:3", "::2"}]:stride()), "{4, 2}")
end)

T.test("advanced indices: int64, int32, negative, broadcasting; a table is a slice", function()
  local x = grid()
  eqlist(x[torch.tensor({2, 0})], {{8, 9, 10, 11}, {0, 1, 2, 3}})
  eqlist(x[{torch.tensor({2, 0}, torch.int32)}], {{8, 9, 10, 11}, {0, 1, 2, 3}})
  eqlist(x[{":", torch.tensor({-1, 0})}], {{3, 0}, {7, 4}, {11, 8}})
  eqlist(x[{{0, 2}}], {{0, 1, 2, 3}, {4, 5, 6, 7}})   -- a table is the slice {start, stop}: x[0:2]
  eqlist(x[{torch.tensor({0, 2}), torch.tensor({1, 3})}], {1, 11})
  eqlist(x[{"...", torch.tensor({0, 3}, torch.int32)}], {{0, 3}, {4, 7}, {8, 11}})
  eqlist(x[{torch.tensor({{0}, {2}}), torch.tensor({1, 2})}], {{1, 2}, {9, 10}})
  -- advanced indices separated by a slice go first in the result (PyTorch's rule)
  local y = torch.arange(24):view(2, 3, 4)
  T.eq(show(y[{torch.tensor({0, 1}), ":", torch.tensor({0, 0})}].shape), "{2, 3}")
end)

T.test("boolean masks", function()
  local x = grid()
  eqlist(x[torch.tensor({true, false, true})], {{0, 1, 2, 3}, {8, 9, 10, 11}})
  local m = torch.tensor({{true, false, false, false}, {false, true, false, false},
                          {false, false, false, true}})
  eqlist(x[m], {0, 5, 11})
  eqlist(x[{":", torch.tensor({false, true, true, false})}], {{1, 2}, {5, 6}, {9, 10}})
end)

-- ---- writing -----------------------------------------------------------------------------------------

T.test("x[i] = number fills a row; x[{':', j}] = tensor writes a column", function()
  local x = torch.zeros(3, 4)
  x[0] = 5
  eqlist(x, {{5, 5, 5, 5}, {0, 0, 0, 0}, {0, 0, 0, 0}})
  x[{":", 1}] = torch.tensor({1.0, 2.0, 3.0})
  eqlist(x, {{5, 1, 5, 5}, {0, 2, 0, 0}, {0, 3, 0, 0}})
  x[{-1, -1}] = 9
  eqlist(x[2], {0, 3, 0, 9})
  x[{"...", 0}] = 7
  eqlist(x[{":", 0}], {7, 7, 7})
end)

T.test("writes broadcast and convert dtype", function()
  local x = torch.zeros(2, 3)
  x[{":", "1:3"}] = torch.tensor({1, 2})      -- int64 row broadcast into a float (2, 2) view
  eqlist(x, {{0, 1, 2}, {0, 1, 2}})
  x[{":"}] = torch.tensor({{4}, {5}})         -- (2, 1) expanded over columns
  eqlist(x, {{4, 4, 4}, {5, 5, 5}})
  x[{}] = torch.tensor(3)                     -- a 0-dim value fills everything
  eqlist(x, {{3, 3, 3}, {3, 3, 3}})
  x[{"None", ":"}] = torch.ones(1, 2, 3)      -- leading 1s of the value are dropped
  eqlist(x, {{1, 1, 1}, {1, 1, 1}})
end)

T.test("writing through a view of a view changes the base", function()
  local x = torch.zeros(3, 4)
  local rows = x[{"1:3"}]
  rows[{":", 1}] = torch.ones(2)
  eqlist(x, {{0, 0, 0, 0}, {0, 1, 0, 0}, {0, 1, 0, 0}})
  local v = x:view(12)
  v[{"::5"}] = 4
  eqlist(x, {{4, 0, 0, 0}, {0, 4, 0, 0}, {0, 1, 4, 0}})
end)

T.test("advanced writes: index_put_ with int64 / int32 indices and masks", function()
  local x = torch.zeros(3, 4)
  x[{torch.tensor({0, 2})}] = 1
  eqlist(x, {{1, 1, 1, 1}, {0, 0, 0, 0}, {1, 1, 1, 1}})
  x[{":", torch.tensor({1, 3}, torch.int32)}] = torch.tensor({7.0, 8.0})
  eqlist(x, {{1, 7, 1, 8}, {0, 7, 0, 8}, {1, 7, 1, 8}})
  local mask = torch.tensor({{false, true, false, false}, {false, true, false, false},
                             {false, true, false, true}})
  x[mask] = -1
  eqlist(x, {{1, -1, 1, 8}, {0, -1, 0, 8}, {1, -1, 1, -1}})
end)

T.test("seed S3: x[..., kv_index] = update with int32 indices", function()
  local x = torch.ones(4, 4, 10)
  local update = (torch.arange(2) + 10):float():reshape(1, 1, 2)
  x[{"...", torch.tensor({1, 2}, torch.int32)}] = update
  for i = 0, 3 do
    for j = 0, 3 do
      eqlist(x[{i, j}], {1, 10, 11, 1, 1, 1, 1, 1, 1, 1})
    end
  end
end)

T.test("index_put_ method with accumulate; index_put functional", function()
  local x = torch.zeros(4)
  local idx = torch.tensor({0, 2, 0}, torch.int32)
  x:index_put_({idx}, torch.tensor({1.0, 2.0, 3.0}), {accumulate = true})
  eqlist(x, {4, 0, 2, 0})
  local y = torch.zeros(4)
  local z = y:index_put({torch.tensor({1})}, torch.tensor(5.0))
  eqlist(y, {0, 0, 0, 0})
  eqlist(z, {0, 5, 0, 0})
  local w = torch.zeros(2, 3)
  w:index_put_({nil, torch.tensor({2})}, torch.tensor(1.0))   -- None for dim 0
  eqlist(w, {{0, 0, 1}, {0, 0, 1}})
end)

-- ---- errors ------------------------------------------------------------------------------------------

T.test("indexing errors use PyTorch's messages", function()
  local x = grid()
  T.checkerr("too many indices for tensor of dimension 2", function() return x[{0, 0, 0}] end)
  T.checkerr("index 5 is out of bounds for dimension 0 with size 3", function() return x[5] end)
  T.checkerr("index -4 is out of bounds for dimension 0 with size 3", function() return x[-4] end)
  T.checkerr("invalid index of a 0-dim tensor", function() return x[{0, 0}][0] end)
  T.checkerr("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got float)",
    function() return x[1.5] end)
  T.checkerr("(got boolean)", function() return x[{true}] end)
  T.checkerr("slice step cannot be zero", function() return x[{"::0"}] end)
  T.checkerr("step must be greater than zero", function() return x[{"::-1"}] end)
  T.checkerr("an index can only have a single ellipsis", function() return x[{"...", "..."}] end)
  T.checkerr("malformed slice", function() return x[{"a:b"}] end)
  T.checkerr("tensors used as indices must be long, int, byte or bool tensors",
    function() return x[torch.tensor({0.0})] end)
  T.checkerr("Tensor or number expected", function() x[0] = "a" end)
end)

-- ---- what is recorded --------------------------------------------------------------------------------

T.test("reads record select / slice / unsqueeze / index / alias like __getitem__", function()
  local ops = traced_ops(function(self, x, idx)
    return x[{":", 1}], x[{"1:3", "::2"}], x[{"None", "..."}], x[{"...", idx}], x[{":"}]
  end, {torch.zeros(4, 3), torch.tensor({0, 2})})
  T.eq(ops, "aten.select.int aten.slice.Tensor aten.slice.Tensor aten.unsqueeze.default " ..
            "aten.index.Tensor aten.alias.default")
end)

T.test("full slices record nothing; missing stops record INT64_MAX", function()
  local _, ep = traced_ops(function(self, x) return x[{":", "1:"}] end, {torch.zeros(4, 3)})
  local listing = tostring(ep.graph)
  T.truthy(listing:find("slice.Tensor](args = (%x, 1, 1, 9223372036854775807)", 1, true), listing)
  T.falsy(listing:find("(%x, 0,", 1, true), listing)
end)

T.test("index.Tensor gets None for unindexed dims", function()
  local _, ep = traced_ops(function(self, x, i) return x[{":", i}] end,
                           {torch.zeros(4, 3), torch.tensor({0, 2}, torch.int32)})
  T.truthy(tostring(ep.graph):find("index.Tensor](args = (%x, [None, %i])", 1, true), tostring(ep.graph))
end)

T.test("writes record views then copy_ / fill_ / index_put_ like __setitem__", function()
  local ops = traced_ops(function(self, x, v, idx)
    x[0] = 5
    x[{":", 1}] = v
    x[{idx}] = 2
    return x
  end, {torch.zeros(4, 3), torch.ones(4), torch.tensor({0, 2})})
  T.eq(ops, "aten.select.int aten.fill_.Scalar aten.select.int aten.copy_.default " ..
            "aten.lift_fresh_copy.default aten.index_put_.default")
end)

T.test("a value with leading 1s is viewed without them (slicePrefix1sSize)", function()
  local ops = traced_ops(function(self, x, u, k)
    x[{"...", k}] = u
    return x
  end, {torch.ones(4, 4, 10), torch.ones(1, 1, 2), torch.tensor({1, 2}, torch.int32)})
  T.eq(ops, "aten.view.default aten.index_put_.default")
  local ops2 = traced_ops(function(self, x, u)
    x[{":", "1:3"}] = u
    return x
  end, {torch.zeros(2, 3), torch.ones(1, 2)})
  T.eq(ops2, "aten.slice.Tensor aten.view.default aten.expand.default aten.copy_.default")
end)

T.done()
