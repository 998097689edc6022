-- tests/peer/test_hop_fidelity.lua — torch.cond's alias rule and the user-level scan of torch 2.5
-- (torch/_higher_order_ops/cond.py, scan.py). Layer: tests.
-- cond refuses a branch that returns one of its inputs or a view of one ("One of torch.cond
-- branch might be aliasing the input!"); torch._higher_order_ops.scan hands pytrees (Lua tables)
-- to combine_fn and returns (carry, ys) with init's / y's structure; empty xs give empty ys of
-- the right shape, eagerly, exported and through the unlifted module.
local P = dofile("tests/peer/peer.lua")
local T = P.T

local scan = torch._higher_order_ops.scan

P.modes(function(strict, mode)
  local View = nn.Module:extend("View")
  function View:forward(x)
    local out = torch.cond(x:sum():gt(0), function(a) return a:view(-1) end,
                           function(a) return a:cos():view(-1) end, {x})
    return out
  end
  local Same = nn.Module:extend("Same")
  function Same:forward(x)
    local out = torch.cond(x:sum():gt(0), function(a) return a:sin() end, function(a) return a end, {x})
    return out
  end
  T.test("cond: a branch returning (a view of) its input is refused, " .. mode, function()
    for _, M in ipairs{View, Same} do
      P.export_fails("hop_body_alias", "One of torch.cond branch might be aliasing the input!",
                     M(), {torch.ones(2, 2)}, {strict = strict})
    end
  end)

  local Clone = nn.Module:extend("Clone")
  function Clone:forward(x)
    local out = torch.cond(x:sum():gt(0), function(a) return a:clone() end, function(a) return a:cos() end, {x})
    return out
  end
  T.test("cond: a clone is fine, " .. mode, function()
    local ep = torch.export.export(Clone(), {torch.ones(2, 2)}, {strict = strict})
    P.numbers(Clone(), ep, {torch.ones(2, 2)})
    P.numbers(Clone(), ep, {-torch.ones(2, 2)})
  end)

  local Tree = nn.Module:extend("Tree")
  function Tree:forward(init, xs)
    local carry, ys = scan(function(c, x)
      local acc = c.acc + x.a * x.b
      return {acc = acc, n = c.n + 1}, {acc:clone(), x.a:sum()}
    end, {acc = init, n = torch.zeros(1)}, {a = xs, b = xs * 2})
    return carry.acc, carry.n, ys[1], ys[2]
  end
  T.test("scan: pytrees in and out of combine_fn, " .. mode, function()
    local args = {torch.zeros(3), torch.arange(0, 12):view(4, 3):float()}
    local acc, n, y1, y2 = Tree()(table.unpack(args))
    P.values(n, {1}, {4})
    T.eq(table.concat(y1.shape, ","), "4,3")
    P.values(y2, {4}, {3, 12, 21, 30})
    P.values(acc, {3}, {252, 332, 428})  -- 2 * sum of squares per column
    local ep = torch.export.export(Tree(), args, {strict = strict})
    T.truthy(tostring(ep.graph):find("higher_order.scan](args = (%scan_combine_graph_0, [%init, %zeros], [%xs, %mul]",
      1, true), tostring(ep.graph))
    P.numbers(Tree(), ep, args)
  end)

  local Empty = nn.Module:extend("Empty")
  function Empty:forward(init, xs)
    local c, ys = scan(function(c, x) return c + x, {(c * x):sum(), x:unsqueeze(0)} end, init, xs)
    return c, ys[1], ys[2]
  end
  T.test("scan: empty xs give the carry and empty ys of the right shape, " .. mode, function()
    local args = {torch.ones(3), torch.ones(0, 3)}
    local c, y1, y2 = Empty()(table.unpack(args))
    P.values(c, {3}, {1, 1, 1})
    T.eq(table.concat(y1.shape, ","), "0")
    T.eq(table.concat(y2.shape, ","), "0,1,3")
    local ep = torch.export.export(Empty(), args, {strict = strict})
    P.numbers(Empty(), ep, args)
    local _, u1, u2 = ep:module()(torch.ones(3), torch.ones(0, 3))
    T.eq(table.concat(u1.shape, ","), "0")
    T.eq(table.concat(u2.shape, ","), "0,1,3")
  end)
end)

T.test("scan: argument errors", function()
  T.checkerr("Init tensors must be provided", scan, function(c, x) return c, x end, {}, torch.ones(2))
  T.checkerr("All init leaves must be a Tensor", scan, function(c, x) return c, x end, {1}, torch.ones(2))
  T.checkerr("function expected", scan, 1, torch.ones(1), torch.ones(2))
end)

T.done()
