-- gpu.linalg: numpy.linalg. The factorizations are C ops over LAPACK (src/lua/llinalg.c,
-- registered in gpu._linalg under the rules names "linalg.<f>"); this file gathers them
-- and adds the functions made of them and of array ops, which are differentiable through
-- those ops' rules.
local gpu = require "gpu"

local M = {}
for k, f in pairs(gpu._linalg) do M[k] = f end

return M
