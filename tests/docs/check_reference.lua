-- tests/docs/check_reference.lua — docs/API.md against what the program registers.
-- Layer: tests. Run by tests/docs/run.sh as: fxdb check_reference.lua CMD... (the colon-command
-- names, from ":complete :"). Prints one "ok - " / "not ok - " line per check and
-- "N passed, N failed".
local pass, fail = 0, 0
local function check(ok, what)
  if ok then pass = pass + 1 else fail = fail + 1 end
  print((ok and "ok - " or "not ok - ") .. what)
end

-- 1. every colon command has an entry
local missing = {}
for _, c in ipairs(arg) do
  if not fxdb.help(c) then missing[#missing + 1] = c end
end
check(#arg > 30 and #missing == 0, #arg .. " commands have an entry in docs/API.md" ..
  (#missing > 0 and (": missing " .. table.concat(missing, " ")) or ""))

-- 2. every public function and table of torch, nn, torch.export and fxdb has an entry
local function walk(prefix, t)
  local miss = {}
  local n = 0
  for k, v in pairs(t) do
    if type(k) == "string" and k:sub(1, 1) ~= "_" then
      n = n + 1
      if not fxdb.help(prefix .. "." .. k) then miss[#miss + 1] = prefix .. "." .. k end
    end
  end
  table.sort(miss)
  check(#miss == 0, n .. " names of " .. prefix .. " have an entry" ..
    (#miss > 0 and (": missing " .. table.concat(miss, " ")) or ""))
end
walk("torch", torch)
walk("nn", nn)
walk("torch.export", torch.export)
-- fxdb's data fields (the current program, module, inputs) are state, not API
local saved = {fxdb.current, fxdb.current_module, fxdb.current_args}
fxdb.current, fxdb.current_module, fxdb.current_args = nil, nil, nil
walk("fxdb", fxdb)
fxdb.current, fxdb.current_module, fxdb.current_args = saved[1], saved[2], saved[3]

-- 3. every name an entry documents exists (no entry outlives what it describes)
local f = assert(io.open(arg[0]:gsub("tests/docs/check_reference.lua$", "") .. "docs/API.md"))
local text = f:read("a")
f:close()
local commands = {}
for _, c in ipairs(arg) do commands[c] = true end
local stale = {}
local count = 0
for heading in text:gmatch("\n### ([^\n]+)") do
  for name in heading:gmatch("[^,]+") do
    name = name:match("^%s*(.-)%s*$")
    count = count + 1
    local exists
    if name:sub(1, 1) == ":" then
      exists = commands[name]
    else
      local v = _G
      for part in name:gmatch("[^.]+") do v = type(v) == "table" and rawget(v, part) or nil end
      exists = v ~= nil
    end
    if not exists then stale[#stale + 1] = name end
  end
end
check(count > 250 and #stale == 0, count .. " documented names exist" ..
  (#stale > 0 and (": unknown " .. table.concat(stale, " ")) or ""))

print(pass .. " passed, " .. fail .. " failed")
os.exit(fail == 0 and 0 or 1)
