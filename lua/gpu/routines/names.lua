-- The NumPy routines gpu.routines defines, as gpu.f and, where the value is true, as the
-- method x:f too (NumPy or PyTorch has it). src/lua/lroutines.c reads this table when the
-- module opens (as gpu._routines) and installs a stub under each name that loads
-- gpu.routines at the first call, so `gpulua -e ''` does not compile the routines.
return {
  einsum = false, tensordot = false, kron = false, inner = false, vdot = false,
  isclose = true, allclose = true, array_equal = false,
  diagonal = true, trace = true, diag = false, triu = true, tril = true,
  nansum = true, nanmean = true, nanmax = false, nanmin = false, nanvar = false, nanstd = false,
  nanargmax = false, nanargmin = false,
  unique = true, nonzero = true, argwhere = true, count_nonzero = true, flatnonzero = false,
  searchsorted = true, digitize = false, bincount = false, histogram = false,
  pad = false, meshgrid = false, take_along_axis = false, put_along_axis = false, gather = true,
  scatter = true, scatter_add = true, atleast_1d = false, atleast_2d = false, atleast_3d = false,
  broadcast_to = true, broadcast_arrays = false, swapaxes = true, moveaxis = true, rot90 = true,
  nan_to_num = true,
  quantile = false, percentile = false, median = false, nanmedian = false, nanquantile = false,
  nanpercentile = false, cov = false, corrcoef = false,
  diff = true, gradient = false, convolve = false, correlate = false, interp = false, trapz = false,
  -- joining, splitting, building and indexing (gpu.routines.manip)

  -- elementwise functions written over the ops (gpu.routines.math)
  ldexp = true, frexp = true, modf = false, divmod = false, float_power = true, unwrap = false,

  -- reductions, scans, sets and histograms (gpu.routines.stats, sets, bins)

  -- PyTorch's tensor helpers (gpu.routines.tensor)

  -- matrix products and factorisations (gpu.routines.matrix)

}
