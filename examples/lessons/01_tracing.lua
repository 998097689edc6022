-- examples/lessons/01_tracing.lua — lesson 1: a module in Lua, eager calls, and the raw graph
-- export records. Run: build/fxdb --lesson 1 (or :lesson 1 in the REPL).
return {
  title = "Tracing and the raw graph",
  {"A module, called eagerly", [[
A model is an nn.Module written in Lua: `init` makes its parameters and submodules, `forward`
computes. Calling it runs fxdb's CPU kernels at once ("eager" mode), as PyTorch does.]],
  function()
    Net = nn.Module:extend("Net")
    function Net:init()
      self.fc = nn.Linear(3, 2)
    end
    function Net:forward(x)
      local y = self.fc(x)
      return y:relu() * 2
    end
    torch.manual_seed(3)
    m = Net()
    x = torch.tensor({{-1.0, 2.0, -3.0}})
    print(m)
    print(m(x))
  end},
  {"Export traces forward", [[
torch.export.export runs forward once on example inputs, with every op recorded instead of only
computed. The record is a graph of ATen ops, the operator set PyTorch's dispatcher runs: see
which ATen op each Lua call became. Inputs are placeholders, and the module's parameters are
lifted to inputs too (their names start with p_).]],
  function()
    ep = torch.export.export(m, {x})
    print(ep.raw_graph)
  end},
  {"Nodes carry metadata", [[
Every node has a name, an op kind (placeholder, call_function, output), a target (the ATen
overload), arguments, users, a type (dtype and shape), and meta: the value ("val", a meta tensor),
the Lua line that made it ("stack_trace") and the module it ran in ("nn_module_stack"). :node
%NAME prints one.]],
  function()
    for _, n in ipairs(ep.raw_graph.nodes) do
      print(string.format("%-12s %-14s %-26s %s", n.name, n.op, tostring(n.target), n.type or ""))
    end
    local lin = ep.raw_graph:find("aten.linear")[1]
    print("")
    print(lin.name .. " was made at: " .. (lin.meta.stack_trace:gsub("^.*/", "")))
    print(lin.name .. " ran in module: " .. lin.meta.nn_module_stack[#lin.meta.nn_module_stack].path)
  end},
  {"The exported program", [[
print(ep) shows the program as torch.export prints it: the graph as Python-like code with each
value's type, then the graph signature (what each input and output is). fxdb.explain (:explain)
compares it with the raw graph; lesson 3 is about what happens when they differ. Try :graph raw,
:code, :sig and :node %linear at the prompt.]],
  function()
    print(ep)
    print(fxdb.explain(ep))
  end},
}
