-- gpu.routines.matrix: matrix products and factorisations written over the dispatched ops.
local M = {}

return M
