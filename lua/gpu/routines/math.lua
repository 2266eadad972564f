-- gpu.routines.math: elementwise functions NumPy and PyTorch define, written over the dispatched ops.
local M = {}

return M
