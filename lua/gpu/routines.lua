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

local guarded = options.guarded

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
