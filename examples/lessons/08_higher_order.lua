-- examples/lessons/08_higher_order.lua — lesson 8: torch.cond and torch.map, ops that take
-- functions and keep them as subgraphs. Run: build/fxdb --lesson 8.
return {
  title = "Higher-order ops",
  {"A Lua if on a value specializes", [[
export traces one run: an `if` on a tensor's value in Lua takes one branch, and only that branch
is in the graph. To keep both, the choice must be an op of the graph: torch.cond.]],
  function()
    Branch = nn.Module:extend("Branch")
    function Branch:forward(x)
      return torch.cond(x:sum():gt(0), function(t) return t:sin() end,
                        function(t) return t:cos() end, {x})
    end
    m = Branch()
    x = torch.tensor({0.5, 1.0})
    ep = torch.export.export(m, {x})
    print(ep)
  end},
  {"Both branches are subgraphs", [[
Each branch was traced on its own into a subgraph (a get_attr submodule); the cond node picks one
at run time. Run with an input of each sign.]],
  function()
    print(fxdb.run(ep, {x}).outputs[1], "sin", x:sin())
    local neg = -x
    print(fxdb.run(ep, {neg}).outputs[1], "cos", neg:cos())
  end},
  {"torch.map", [[
map applies a function to each slice of its input along dim 0; the body is traced once, as a
subgraph, whatever the number of slices.]],
  function()
    Rows = nn.Module:extend("Rows")
    function Rows:forward(xs)
      return torch.map(function(r) return r * r:sum() end, xs)
    end
    ep = torch.export.export(Rows(), {torch.arange(6):float():view(3, 2)})
    print(ep)
  end},
}
