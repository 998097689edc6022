-- examples/lessons/05_unlift.lua — lesson 5: unlifting: the state goes back into the module and
-- each mutation output becomes a copy_ (what ExecuTorch runs). Run: build/fxdb --lesson 5.
return {
  title = "Unlift and copy_ back (the ExecuTorch view)",
  {"A counter with a buffer", [[
The exported program is pure: the buffer comes in as an input and its new value goes out as a
BUFFER_MUTATION output. Something has to store that value back.]],
  function()
    Counter = nn.Module:extend("Counter")
    function Counter:init()
      self:register_buffer("count", torch.zeros(3))
    end
    function Counter:forward(x)
      self.count:add_(x)
      return self.count * 2
    end
    m = Counter()
    ep = torch.export.export(m, {torch.ones(3)})
    print(ep)
  end},
  {"ep:module(): unlifted", [[
ep:module() builds a module again: the lifted inputs become attributes read with get_attr, and
each mutation output becomes an aten.copy_ of the new value into the attribute, at the end of
the graph. Calling it updates its own buffer, as the eager module did. A runtime that keeps
state in place (ExecuTorch does) runs this form.]],
  function()
    um = ep:module()
    print(um.graph)
    print(um(torch.ones(3)))
    print(um(torch.ones(3)))
    print("count after two calls:", um.count)
  end},
  {"Reinplacing", [[
The functional add plus the final copy_ cost a second buffer and a copy. A reinplace pass turns
the functional op back into an in-place op when nothing reads the old value afterwards, and
drops the copy_ it makes redundant. fxdb.reinplace(ep) returns that module.]],
  function()
    rm = fxdb.reinplace(ep)
    print(rm.graph)
    print(rm(torch.ones(3)), rm.count)
  end},
}
