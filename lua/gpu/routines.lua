-- gpu.routines — the NumPy routines written in Lua over the dispatched ops (so both devices
-- and autograd come with them): einsum and the tensor products (gpu.routines.einsum),
-- diagonals, triangles and comparisons (gpu.routines.basic), the NaN-ignoring reductions
-- (gpu.routines.nan).
--
-- gpu.routines.names lists the names (gpu._routines: name -> whether x:f is a method too);
-- src/lua/lroutines.c installs stubs that require this part at the first call; loading it
-- replaces the stubs with the functions below.
local gpu = require "gpu"
local options = require "gpu.options"

-- f, whose errors name `name`: an error from an op it calls (which names that op, or '?'
-- for a method called by value) is raised again at the user's line as "name: <message>";
-- one that names the routine already passes unchanged.
local function guarded(name, f)
  local quoted, prefix = "'" .. name .. "'", name .. ":"
  return function(...)
    local res = table.pack(pcall(f, ...))
    if res[1] then return table.unpack(res, 2, res.n) end
    local msg = res[2]
    if type(msg) ~= "string" or msg:find(quoted, 1, true) or msg:find(prefix, 1, true) then error(msg, 0) end
    msg = msg:gsub("^lua/gpu/[%w_/]+%.lua:%d+: ", "")
    msg = msg:gsub("^bad argument #%d+ to '%?' %((.*)%)$", "%1"):gsub("^calling '%?' on bad self %((.*)%)$", "%1")
    error(prefix .. " " .. msg, options.user_level())
  end
end

local M = {}
for _, part in ipairs({ "basic", "einsum", "nan", "sets", "bins", "shape", "stats", "manip", "math", "tensor", "matrix" }) do
  for name, f in pairs(require("gpu.routines." .. part)) do
    if type(f) == "function" and gpu._routines[name] ~= nil then
      M[name] = options.counted(name, guarded(name, f), options.nparams(f))
    end
  end
end

for name, method in pairs(gpu._routines) do
  local f = M[name]
  assert(f, "gpu.routines.names lists " .. name .. ", which no part of gpu.routines defines")
  gpu[name] = f
  if method then gpu.methods[name] = f end
end

return M
