-- gpu.autograd.rules_fft: the rules of gpu.fft's three C ops (src/lua/lfft.c), a table by op
-- name that gpu.autograd.rules takes into its own; the conventions are rules.lua's header.
-- Everything numpy.fft adds (n and s, the norms, hfft, the shifts) is array ops around these,
-- differentiable through their own rules.
--
-- PyTorch's conventions: the gradient of a real loss with respect to a complex array is the
-- conjugate Wirtinger derivative, so a linear map y = A x sends g back as A^H g, and a real
-- input takes the real part of that (the engine casts it to the input's dtype). For a
-- transform A = scale F over 'axes' (F unnormalised, F^H the opposite sign):
--   c2c   A^H g = c2c(g, axes, not inverse, scale)
--   r2c   (half of the spectrum of a real x) A^H g = the inverse c2c of g padded with zeros
--         back to n entries on the halved axis, whose real part the engine keeps
--   c2r   (the real signal of a conjugate-symmetric half spectrum) A^H g = r2c(g) with the
--         entries 1 .. n - m doubled (m = n // 2 + 1: each stands for itself and its
--         mirror image; entry 0, and n / 2 for an even n, do not)

local gpu = require "gpu"

local C = gpu._fft
local R = {}

local function axes_list(axes) return type(axes) == "table" and axes or { axes } end
local function pos(a, nd) return a < 0 and nd + a + 1 or a end

R["fft.c2c"] = { saves = {}, backward = function(g, node)
  return C.c2c(g, node[2], not node[3], node[4])
end }

R["fft.r2c"] = { saves = {}, backward = function(g, node)
  local x, axes = node[1], axes_list(node[2])
  local a = pos(axes[#axes], x.ndim)
  local n, m = x.shape[a], g.shape[a]
  if n > m then
    local shape = g.shape
    shape[a] = n - m
    g = gpu.concatenate({ g, gpu.zeros(shape, { dtype = g.dtype, device = g.device }) }, a)
  end
  return C.c2c(g, axes, true, node[3])
end }

-- z with its entries along axis a multiplied by the reals w: through the real and imaginary
-- parts (view_as_real), which takes the real kernels, unless z has no room for their axis
local function weighted(z, a, w)
  local shape = {}
  for i = 1, z.ndim do shape[i] = i == a and w.size or 1 end
  if z.ndim == gpu._max_dims then return z * w:reshape(shape) end
  shape[z.ndim + 1] = 1
  return gpu.view_as_complex(gpu.view_as_real(z) * w:reshape(shape))
end

R["fft.c2r"] = { saves = {}, backward = function(g, node)
  local x, axes = node[1], axes_list(node[2])
  local a = pos(axes[#axes], x.ndim)
  local n, m = node[3], x.shape[a]
  local gi = C.r2c(g, axes, node[4])
  if n - m < 1 then return gi end
  local w = gpu.ones(m, { dtype = gi.dtype == "complex64" and "float32" or "float64", device = g.device })
  w[{ { 2, n - m + 1 } }] = 2
  return weighted(gi, a, w)
end }

return R
