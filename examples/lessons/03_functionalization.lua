-- examples/lessons/03_functionalization.lua — lesson 3: in-place ops and functionalization, one
-- rewrite at a time, each explained from the records the export left in the graphs.
-- Run: build/fxdb --lesson 3 (or :lesson 3 in the REPL).
return {
  title = "In-place ops and functionalization, step by step",
  {"A module that updates its state", [[
A buffer is module state that is not a parameter (a running mean, a cache). This forward updates
its buffer in place three ways: directly, through a slice (a view), and through a row of that
slice (a view of a view). In eager mode the writes simply land in the buffer's storage.]],
  function()
    Acc = nn.Module:extend("Acc")
    function Acc:init()
      self:register_buffer("cache", torch.zeros(4, 3))
    end
    function Acc:forward(x)
      self.cache:mul_(0.5)
      local rows = self.cache[{"1:3"}]
      rows:add_(x)
      rows[0]:fill_(7)
      return self.cache:sum()
    end
    m = Acc()
    x = torch.ones(2, 3)
    print(m(x))
    print(m.cache)
  end},
  {"The raw graph keeps the in-place ops", [[
Tracing records exactly what ran: ops whose names end in "_" write into their first argument,
and slice/select make views that share the buffer's storage. A graph like this cannot be
reordered or compiled safely: the value of a node depends on writes that happen later through
other nodes. (The module's state is put back after export: export never changes a module.)]],
  function()
    m = Acc()
    ep = torch.export.export(m, {x})
    print(ep.raw_graph)
  end},
  {"Rewrite 1", [[
Functionalization replaces every in-place op by out-of-place ops, so that each value is computed
once and never changed. fxdb.explain(ep) (:explain) lists the rewrites from the program's own
records: each functional node knows the raw node it came from (meta.from_node) and, when it makes
a new version of a buffer, which version and through which view (meta.mutation).]],
  function()
    rewrites = fxdb.explain(ep)
    print(rewrites[1])
  end},
  {"Rewrite 2: a write through a view", [[
A view has no storage of its own, so a write through it is a write into its base. Functionally,
the new value of the view is computed out of place, and a *_scatter op (the inverse of the view
op) makes a new base with that value in the view's place.]],
  function()
    print(rewrites[2])
  end},
  {"Rewrite 3: a view of a view", [[
When the view is a view of another view, the new value is scattered back one level at a time,
up to the buffer. Later reads of the buffer use its newest version.]],
  function()
    print(rewrites[3])
  end},
  {"The functional program and its mutation output", [[
The buffer's last version leaves the graph as an extra output, marked BUFFER_MUTATION in the
signature: whoever runs the program stores it back into the buffer. :why cache walks the versions
with the Lua line of each write.]],
  function()
    print(ep)
    print(table.concat(rewrites.outputs, "\n"))
    print("")
    print(fxdb.provenance(ep, "cache"))
  end},
  {"Same numbers", [[
fxdb.check runs the module eagerly and the exported program on fxdb's interpreter, on the same
inputs, and compares the outputs and the buffer's new value.]],
  function()
    print(fxdb.check(m, ep, {x}))
  end},
}
