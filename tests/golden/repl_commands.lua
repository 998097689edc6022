-- tests/golden/repl_commands.lua — replaces the global `fxdb` with a recorder, so the transcript
-- checks how each ':' command parses its arguments and which fxdb function it calls with what,
-- independently of the real implementations.
local function show(v)
  if type(v) ~= "table" then
    return type(v) == "string" and string.format("%q", v) or tostring(v)
  end
  if v.name then return "<" .. v.name .. ">" end
  local ks = {}
  for k in pairs(v) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for _, k in ipairs(ks) do
    parts[#parts + 1] = (type(k) == "number" and "" or (k .. "=")) .. show(v[k])
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local recorder = {}
local verbs = {"export", "trace", "graph", "code", "sig", "node", "users", "inputs", "find",
  "provenance", "why", "guards", "render", "run", "check", "print", "step", "next", "finish", "continue", "break_on",
  "delete", "watch", "where", "diff", "report", "info", "until", "reverse_step", "set", "list",
  "display", "undisplay", "disable", "enable", "frame", "up", "down", "kill"}
for _, verb in ipairs(verbs) do
  recorder[verb] = function(...)
    local parts = {}
    for i = 1, select("#", ...) do parts[#parts + 1] = show((select(i, ...))) end
    print("fxdb." .. verb .. "(" .. table.concat(parts, ", ") .. ")")
    if verb == "graph" then return "graph of stage " .. tostring((...)) end
    if verb == "render" then return (select(2, ...)) or "graph.svg" end
  end
end
recorder.current = {name = "current program"}
fxdb = recorder

model = {name = "model", example_inputs = {1, 2}}
bare = {name = "bare"}
