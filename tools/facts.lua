-- facts.lua — prints, as JSON, the lists C states once that tools outside Lua need: the
-- dtypes (gpu._dtypes: name, size, kind, aliases, in dtype order), the elementwise ops
-- with their kinds (gpu._jit.unary / gpu._jit.binary, from kernels/elem_ops.h) and
-- NumPy's aliases of ops (gpu._ops.aliases). The Python fixture generators read it:
--
--   ./gpulua tools/facts.lua
local gpu = require "gpu"

-- JSON of strings, numbers, booleans, lists (a table with [1], or one marked LIST) and
-- objects (keys sorted): enough for the tables below
local LIST = {}
local function json(v)
  local t = type(v)
  if t == "string" then return '"' .. v:gsub('[%c"\\]', function(c) return ("\\u%04x"):format(c:byte()) end) .. '"' end
  if t == "number" or t == "boolean" then return tostring(v) end
  if v[1] ~= nil or v[LIST] then
    local out = {}
    for i, x in ipairs(v) do out[i] = json(x) end
    return "[" .. table.concat(out, ", ") .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys)
  for i, k in ipairs(keys) do keys[i] = json(k) .. ": " .. json(v[k]) end
  return "{" .. table.concat(keys, ", ") .. "}"
end

local dtypes = {}
for i, d in ipairs(gpu._dtypes) do
  local aliases = table.move(d.aliases, 1, #d.aliases, 1, { [LIST] = true })
  dtypes[i] = { name = d.name, size = d.size, kind = d.kind, storage_only = d.storage_only, aliases = aliases }
end

local aliases = {}
for _, alias in ipairs(gpu._ops.aliases) do aliases[alias] = gpu._ops.aliases[alias] end

io.write(json({ dtypes = dtypes, unary = gpu._jit.unary, binary = gpu._jit.binary, aliases = aliases }), "\n")
