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
  vstack = false, hstack = false, dstack = false, column_stack = false, row_stack = false, block = false,
  array_split = false, hsplit = true, vsplit = true, dsplit = true, append = false, insert = false,
  delete = false, resize = false, trim_zeros = false, fliplr = true, flipud = true, rollaxis = false,
  broadcast_shapes = false, logspace = false, geomspace = false, tri = false, diagflat = false,
  indices = false, mgrid = false, ogrid = false, fromfunction = false, unravel_index = false,
  ravel_multi_index = false, tril_indices = false, triu_indices = false, diag_indices = false,
  fill_diagonal = false, ix_ = false, put = true, putmask = false, place = false, compress = false,
  choose = true, select = false,

  -- elementwise functions written over the ops (gpu.routines.math)
  ldexp = true, frexp = true, modf = false, divmod = false, float_power = true, unwrap = false,

  -- reductions, scans, sets and histograms (gpu.routines.stats, sets, bins)
  amax = true, amin = true, ptp = false, average = false, nanprod = false, nancumsum = false, nancumprod = false, ediff1d = false,
  std_mean = false, var_mean = false, aminmax = true, mode = true, cummax = true, cummin = true,
  logcumsumexp = true, kthvalue = true, unique_consecutive = true, cdist = false, dist = true,
  isin = false, in1d = false, intersect1d = false, union1d = false, setdiff1d = false, setxor1d = false,
  unique_values = false, unique_counts = false, unique_inverse = false, lexsort = false,
  histogram2d = false, histogramdd = false, histogram_bin_edges = false,

  -- PyTorch's tensor helpers (gpu.routines.tensor)
  masked_fill = true, masked_fill_ = true, index_add = true, index_add_ = true, index_copy = true,
  index_copy_ = true, index_fill = true, index_fill_ = true, scatter_reduce = true, scatter_reduce_ = true,
  tensor_split = true, chunk = true, unbind = true, narrow = true, unflatten = true,
  diag_embed = true, block_diag = false, cartesian_prod = false, combinations = false,
  type_as = true, view_as = true, reshape_as = true, expand_as = true,
  zero_ = true, copy_ = true, clamp = true, clamp_ = true, clip_ = true,
  normal_ = true, uniform_ = true, exponential_ = true, bernoulli_ = true,
  new_zeros = true, new_ones = true, new_full = true, new_empty = true,
  rand_like = false, randn_like = false, randint_like = false,

  -- matrix products and factorisations (gpu.routines.matrix)
  addmm = true, baddbmm = true, addmv = true, matrix_exp = true, cholesky_solve = true,

}
