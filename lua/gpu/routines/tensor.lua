-- gpu.routines.tensor: PyTorch's tensor helpers.
local M = {}

return M
