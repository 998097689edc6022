-- examples/lessons/06_kv_cache.lua — lesson 6: index assignment, index_put_ and the KV cache of a
-- decoder. Run: build/fxdb --lesson 6 (or :lesson 6 in the REPL).
return {
  title = "Index assignment and the KV cache",
  {"x[...] = v in Lua", [[
Python's x[i, j] = v is written x[{i, j}] = v in Lua. With integers and slices it is a copy_
into a view; with a tensor index it is index_put_, as in PyTorch. Both are in-place writes.]],
  function()
    x = torch.zeros(2, 5)
    x[{":", "1:3"}] = torch.ones(2, 2)
    x[{0, torch.tensor({4})}] = 9
    print(x)
  end},
  {"A KV cache", [[
A decoder keeps the keys and values of past positions in buffers and writes the new position's
rows at each step. Here the position is a tensor input, so the write is an index_put_ on the
cache buffer.]],
  function()
    Cache = nn.Module:extend("Cache")
    function Cache:init()
      self:register_buffer("cache_k", torch.zeros(1, 6, 4))
    end
    function Cache:forward(k, pos)
      self.cache_k[{":", pos}] = k
      return self.cache_k:sum(1)
    end
    m = Cache()
    k = torch.ones(1, 1, 4)
    pos = torch.tensor({2})
    ep = torch.export.export(m, {k, pos})
    print(ep.raw_graph)
  end},
  {"Functionalized", [[
The in-place index_put_ becomes the functional index_put, whose result is the cache's next
version, returned as a BUFFER_MUTATION output.]],
  function()
    print(fxdb.explain(ep))
    print("")
    print(fxdb.provenance(ep, "cache_k"))
  end},
  {"Step after step", [[
Unlifted, the program writes into its own cache buffer on each call, one position after the
other.]],
  function()
    um = ep:module()
    for p = 0, 2 do um(torch.full({1, 1, 4}, p + 1, torch.float32), torch.tensor({p})) end
    print(um.cache_k)
    print(fxdb.check(Cache(), ep, {k, pos}))
  end},
}
