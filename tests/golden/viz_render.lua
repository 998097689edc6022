-- tests/golden/viz_render.lua — :render inside a paused trace session draws the raw graph recorded
-- so far, and after the session the exported program. fxdb.render is wrapped: it renders for
-- real to a temporary .dot file and prints what it was given and what the DOT holds, so the
-- transcript stays free of file paths and layout coordinates.
dofile("tests/golden/dbg_model.lua")
local render = fxdb.render
function fxdb.render(g, file, opts)
  local is_ep = g.graph_signature ~= nil
  local nodes = is_ep and g.graph.nodes or g.nodes
  local tmp = os.tmpname()
  render(g, tmp .. ".dot", {depth = opts and opts.depth, progress = false})
  local f = assert(io.open(tmp .. ".dot"))
  local text = f:read("a")
  f:close()
  os.remove(tmp .. ".dot")
  os.remove(tmp)
  local what
  if is_ep then
    what = "DOT draws module.layers.0 as a box: " .. tostring(text:find('"module.layers.0"', 1, true) ~= nil)
  else
    local last = nodes[#nodes].name
    what = "last node " .. last .. " drawn: " .. tostring(text:find("\n%s*" .. last .. "%s*%[") ~= nil)
  end
  print(string.format("render %s of %d nodes to %s; %s", is_ep and "ExportedProgram" or "Graph",
                      #nodes, file, what))
  return file
end
