-- examples/lessons/04_buffers_signature.lua — lesson 4: parameters, buffers, constants and the
-- graph signature. Run: build/fxdb --lesson 4 (or :lesson 4 in the REPL).
return {
  title = "Buffers and the graph signature",
  {"Kinds of module state", [[
A module holds parameters (trained weights), buffers (state that is not trained: persistent ones
are saved in the state_dict, non-persistent ones are not) and plain tensor attributes. export
lifts all of them to inputs of the graph, and the graph signature records what each input is.]],
  function()
    Norm = nn.Module:extend("Norm")
    function Norm:init(n)
      self.weight = nn.Parameter(torch.ones(n))
      self:register_buffer("running_mean", torch.zeros(n))
      self:register_buffer("steps", torch.zeros(1, torch.int64), {persistent = false})
      self.scale = torch.tensor(0.5)
    end
    function Norm:forward(x)
      local mean = x:mean(0)
      self.running_mean:mul_(0.9):add_(mean * 0.1)
      self.steps:add_(1)
      return (x - self.running_mean) * self.weight * self.scale
    end
    m = Norm(3)
    for _, p in ipairs(m:named_parameters()) do print("parameter  " .. p[1], p[2].shape) end
    for _, b in ipairs(m:named_buffers()) do print("buffer     " .. b[1], b[2].shape) end
    print("state_dict keys:")
    local keys = {}
    for k in pairs(m:state_dict()) do keys[#keys + 1] = k end
    table.sort(keys)
    print("  " .. table.concat(keys, ", "))
  end},
  {"The signature", [[
Input specs come in a fixed order: parameters, buffers, constants, then user inputs, each with
its kind, its name in the graph (p_, b_, c_ prefixes) and its target (the attribute path).
Output specs list mutations first (one per mutated buffer or input, in input order), then the
user outputs.]],
  function()
    torch.manual_seed(0)
    x = torch.randn(4, 3)
    ep = torch.export.export(m, {x})
    print(ep.graph_signature)
    for i, s in ipairs(ep.graph_signature.input_specs) do
      print(string.format("input %d  %-22s %-16s target=%s", i - 1, s.arg.name, s.kind, tostring(s.target)))
    end
    for i, s in ipairs(ep.graph_signature.output_specs) do
      print(string.format("output %d %-22s %-16s target=%s", i - 1, s.arg.name, s.kind, tostring(s.target)))
    end
  end},
  {"State values travel with the program", [[
The exported program carries the state's values: ep.state_dict holds parameters and persistent
buffers, ep.constants the non-persistent buffers and lifted tensor constants. Running the
program passes them in as the first inputs.]],
  function()
    local function keys(t)
      local k = {}
      for name in pairs(t) do k[#k + 1] = name end
      table.sort(k)
      return table.concat(k, ", ")
    end
    print("state_dict: " .. keys(ep.state_dict))
    print("constants:  " .. keys(ep.constants))
    local r = fxdb.run(ep, {x})
    print("user output:", r.outputs[1]:sum())
    for _, spec in ipairs(ep.graph_signature.output_specs) do
      if spec.kind == "BUFFER_MUTATION" then print("new value of " .. spec.target .. ":", r.mutations[spec.target]) end
    end
  end},
}
