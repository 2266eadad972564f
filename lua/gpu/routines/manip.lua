-- gpu.routines.manip: NumPy's joining, splitting, building and indexing routines.
local M = {}

return M
