-- gpu.autograd.rules_complex: the rules of the ops that make, split and view complex arrays
-- (gpu.complex, polar, real, imag, conj, angle, view_as_real, view_as_complex), a table by
-- op name that gpu.autograd.rules takes into its own; the conventions are rules.lua's header
-- and rule_helpers.lua's "complex" section (PyTorch's: a complex array's gradient is
-- dL/dx + i dL/dy for z = x + iy).
--
-- The gradients are built from real parts and views (H.part: view_as_real and an index;
-- H.from_parts: stack and view_as_complex), so each is differentiable again.

local gpu = require "gpu"
local H = require "gpu.autograd.rule_helpers"
local tracked, is_complex, cj, part, from_parts = H.tracked, H.is_complex, H.conj, H.part, H.from_parts

local R = {}

-- complex(re, im) = re + i im: the parts of g go back to re and im (numbers take none)
R.complex = { saves = {}, backward = function(g, node)
  return tracked(node[1]) and part(g, 1) or nil, tracked(node[2]) and part(g, 2) or nil
end }

-- polar(r, t) = r (cos t + i sin t): with g = a + ib, dL/dr = a cos t + b sin t and
-- dL/dt = Re(conj(g) i y) = b Re(y) - a Im(y) (PyTorch's polar_backward; cos and sin of t
-- where r = 0, so r's gradient is exact there too)
R.polar = { uses_y = true, backward = function(g, node, y)
  local r, t = node[1], node[2]
  local a, b = part(g, 1), part(g, 2)
  local gr, gt
  if tracked(r) then
    if type(t) == "number" then gr = a * math.cos(t) + b * math.sin(t)
    else gr = a * t:cos() + b * t:sin() end
  end
  if tracked(t) then gt = b * part(y, 1) - a * part(y, 2) end
  return gr, gt
end }

-- x.real: g as the real part (the engine's cast to x's complex dtype adds the zero
-- imaginary part); x.imag: i g, zero for a real x (whose imag is zeros)
R.real = { saves = {}, backward = function(g) return g end }
R.imag = { saves = {}, backward = function(g, node)
  local x = node[1]
  if not is_complex(x) then return gpu.zeros_like(x) end
  return from_parts(gpu.zeros_like(g), g)
end }

R.conj = { saves = {}, backward = function(g) return cj(g) end }

-- angle(z) = atan2(Im z, Re z): g i z / |z|^2, 0 at 0; a real x's angle (0 or pi) is
-- piecewise constant
R.angle = { backward = function(g, node)
  local x = node[1]
  if not is_complex(x) then return gpu.zeros_like(x) end
  local re, im = part(x, 1), part(x, 2)
  local d = re * re + im * im
  d = gpu.where(d:eq(0), 1, d)
  return from_parts(-g * im / d, g * re / d)
end }

-- the views: (..., 2) real pairs and complex numbers are the same bytes, and so are the
-- gradients (dL/dx, dL/dy as a pair is dL/dx + i dL/dy)
R.view_as_real = { saves = {}, backward = function(g) return gpu.view_as_complex(g:contiguous()) end }
R.view_as_complex = { saves = {}, backward = function(g) return gpu.view_as_real(g) end }

return R
