-- examples/lessons/02_views.lua — lesson 2: views share storage with their base; what that means
-- for a graph. Run: build/fxdb --lesson 2 (or :lesson 2 in the REPL).
return {
  title = "Views and aliasing",
  {"A view shares its base's storage", [[
Slicing, select, view, transpose, expand and friends do not copy: they return a view, a new
tensor header (sizes, strides, offset) over the same storage. Writing through the view changes
the base. Indexing in Lua is 0-based like Python: x[1] is the second row; x[{":", "1:3"}] is
x[:, 1:3].]],
  function()
    x = torch.arange(12):float():view(3, 4)
    row = x[1]
    cols = x[{":", "1:3"}]
    print("row  sizes", row.shape, "strides", table.concat(row:stride(), ","), "offset", row:storage_offset())
    print("cols sizes", cols.shape, "strides", table.concat(cols:stride(), ","), "offset", cols:storage_offset())
    row:fill_(-1)
    print(x)
  end},
  {"Views in a graph", [[
Each view op is a node of its own; the graph does not say which nodes share storage, the
schemas do: a view op's output aliases its input. Reading through views is harmless: nothing
changes. The exported graph keeps such view ops as they are.]],
  function()
    Pick = nn.Module:extend("Pick")
    function Pick:forward(x)
      local t = x:transpose(0, 1)
      return t[{"1:3"}]:sum(1)
    end
    ep = torch.export.export(Pick(), {x})
    for _, n in ipairs(ep.graph.nodes) do
      if n.op == "call_function" then
        print(string.format("%-10s %-22s view=%s", n.name, tostring(n.target), tostring(n.is_view)))
      end
    end
  end},
  {"Writing through a view of an input", [[
When forward writes through a view of one of its inputs, the write is a mutation of that input:
the program must hand the new value back, as a USER_INPUT_MUTATION output. Compare the raw graph
with the exported one: lesson 3 shows the rewrite step by step.]],
  function()
    Zero = nn.Module:extend("Zero")
    function Zero:forward(x)
      x[{":", 0}] = 0
      return x * 2
    end
    ep = torch.export.export(Zero(), {x:clone()})
    print(ep.raw_graph)
    print(ep)
  end},
}
