-- examples/lessons/07_attribute_assignment.lua — lesson 7: assigning module attributes inside
-- forward, in strict and non-strict export. Run: build/fxdb --lesson 7.
return {
  title = "Attribute assignment: strict and non-strict",
  {"Assigning a registered buffer", [[
Replacing a registered buffer (self.buf = new tensor) is a buffer mutation, in both modes: the
new tensor is the buffer's next version.]],
  function()
    Swap = nn.Module:extend("Swap")
    function Swap:init()
      self:register_buffer("buf", torch.zeros(2))
    end
    function Swap:forward(x)
      self.buf = self.buf + x
      return self.buf * 1
    end
    ep = torch.export.export(Swap(), {torch.ones(2)})
    print(ep.graph_signature)
  end},
  {"A plain attribute, strict mode", [[
A tensor stored in a plain attribute is not state export can hand back. Strict mode refuses the
assignment where it happens: the error points at the assignment's Lua line.]],
  function()
    Plain = nn.Module:extend("Plain")
    function Plain:init()
      self.a = torch.zeros(2)
    end
    function Plain:forward(x)
      self.a = self.a + x
      return x * 2
    end
    function show_error(err) -- the fields of an export error object
      for _, k in ipairs{"kind", "message", "location", "source", "hint"} do
        print(string.format("%-9s %s", k .. ":", tostring(err[k])))
      end
    end
    local ok, err = pcall(torch.export.export, Plain(), {torch.ones(2)})
    show_error(err)
  end},
  {"Non-strict mode", [[
Non-strict export runs forward as ordinary code and judges the assignment afterwards, by
comparing the module's attributes with what they were; the message is PyTorch's. fxdb also notes
where each assignment happened, so the error points at the assignment, not at the export call.]],
  function()
    local ok, err = pcall(torch.export.export, Plain(), {torch.ones(2)}, {strict = false})
    show_error(err)
  end},
  {"The module is untouched", [[
A failed export leaves the module exactly as it was: the attribute still holds its old value.
The fix the hint names, register_buffer, turns the assignment into a buffer mutation.]],
  function()
    local p = Plain()
    pcall(torch.export.export, p, {torch.ones(2)})
    print("self.a after the failed export:", p.a)
  end},
}
