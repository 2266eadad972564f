-- gpu.autograd.rules_special: the rules of the special functions' ops (kernels/special.h
-- through kernels/elem_ops.h), a table by op name that gpu.autograd.rules takes into its own;
-- the conventions are rules.lua's header. PyTorch's derivatives where PyTorch has the
-- function, the same formulas (SciPy's own functions, which PyTorch lacks, take the
-- textbook derivative where it is an elementary expression of ops gpulua has, else are
-- not differentiable). Where PyTorch raises "the derivative for ... is not implemented"
-- (zeta's s, the incomplete gammas' a), backward raises the same.

local gpu = require "gpu"
local H = require "gpu.autograd.rule_helpers"
local tracked = H.tracked

local R = {}

local SQRT_PI, SQRT_2PI = math.sqrt(math.pi), math.sqrt(2 * math.pi)

local function unary(name, fn, opts)
  local rule = { backward = function(g, node, y) return fn(g, node[1], y) end }
  if opts then for k, v in pairs(opts) do rule[k] = v end end
  R[name] = rule
end
local function binary(name, fn, opts)
  local rule = { backward = function(g, node, y) return fn(g, node[1], node[2], y) end }
  if opts then for k, v in pairs(opts) do rule[k] = v end end
  R[name] = rule
end
local function not_implemented(name, what)
  error(("the derivative for '%s' with respect to %s is not implemented (as in PyTorch)"):format(name, what), 0)
end

unary("erfc", function(g, x) return g * (-(x * x)):exp() * (-2 / SQRT_PI) end)
unary("erfcx", function(g, x, y) return g * (x * y * 2 - 2 / SQRT_PI) end, { uses_y = true })
unary("erfinv", function(g, x, y) return g * (y * y):exp() * (SQRT_PI / 2) end, { saves = {}, uses_y = true })
unary("lgamma", function(g, x) return g * x:digamma() end)
unary("digamma", function(g, x) return g * gpu.polygamma(1, x) end)
unary("ndtr", function(g, x) return g * (x * x * -0.5):exp() * (1 / SQRT_2PI) end)
unary("ndtri", function(g, x, y) return g * (y * y * 0.5):exp() * SQRT_2PI end, { saves = {}, uses_y = true })
unary("log_ndtr", function(g, x, y) return g * (x * x * -0.5 - y):exp() * (1 / SQRT_2PI) end, { uses_y = true })
unary("logit", function(g, x) return g / (x * (1 - x)) end)
unary("entr", function(g, x) return g * -(x:log() + 1) end)
unary("i0", function(g, x) return g * x:i1() end)
unary("i0e", function(g, x, y) return g * (x:i1e() - x:sign() * y) end, { uses_y = true })
-- i1' = i0 - i1/x, 1/2 at 0 (PyTorch's)
unary("i1", function(g, x, y)
  return g * gpu.where(x:eq(0), 0.5, x:i0() - y / gpu.where(x:eq(0), 1, x))
end, { uses_y = true })
unary("i1e", function(g, x, y)
  return g * gpu.where(x:eq(0), 0.5, x:i0e() - y * (x:sign() + 1 / gpu.where(x:eq(0), 1, x)))
end, { uses_y = true })
unary("bessel_j0", function(g, x) return -g * x:bessel_j1() end)
unary("bessel_j1", function(g, x, y)
  return g * gpu.where(x:eq(0), 0.5, x:bessel_j0() - y / gpu.where(x:eq(0), 1, x))
end, { uses_y = true })
-- SciPy's only: E1' = -e^-x / x, Ei' = e^x / x
unary("exp1", function(g, x) return -g * (-x):exp() / x end)
unary("expi", function(g, x) return g * x:exp() / x end)
R.erfcinv = false                                                      -- not in PyTorch

-- xlogy: d/da = log b (0 where a = 0 and b <= 0, PyTorch's mask), d/db = a / b
binary("xlogy", function(g, a, b)
  local ga, gb
  if tracked(a) then ga = g * gpu.where(gpu.logical_and(gpu.eq(a, 0), gpu.le(b, 0)), 0, gpu.log(b)) end
  if tracked(b) then gb = g * a / b end
  return ga, gb
end)
binary("xlog1py", function(g, a, b)
  local ga, gb
  if tracked(a) then ga = g * gpu.where(gpu.logical_and(gpu.eq(a, 0), gpu.le(b, -1)), 0, gpu.log1p(b)) end
  if tracked(b) then gb = g * a / (b + 1) end
  return ga, gb
end)
-- polygamma(n, x): x only (n is an order)
binary("polygamma", function(g, n, x) return nil, g * gpu.polygamma(n + 1, x) end)
-- zeta(s, q): d/dq = -s zeta(s + 1, q); s has none in PyTorch
binary("zeta", function(g, s, q)
  if tracked(s) then not_implemented("zeta", "s") end
  return nil, -g * s * gpu.zeta(s + 1, q)
end)
-- the regularised incomplete gammas: d/dx P = e^-x x^(a-1) / Gamma(a) = -d/dx Q
local function igam_dx(a, x)
  local lga = type(a) == "number" and gpu.full_like(x, a):lgamma() or gpu.lgamma(a)
  return ((a - 1) * gpu.log(x) - x - lga):exp()
end
binary("gammainc", function(g, a, x)
  if tracked(a) then not_implemented("gammainc", "a") end
  return nil, g * igam_dx(a, x)
end)
binary("gammaincc", function(g, a, x)
  if tracked(a) then not_implemented("gammaincc", "a") end
  return nil, -g * igam_dx(a, x)
end)
-- log B(a, b) and B(a, b) (SciPy's): d/da log B = psi(a) - psi(a + b)
binary("betaln", function(g, a, b)
  local s = gpu.digamma(a + b)
  return tracked(a) and g * (gpu.digamma(a) - s) or nil, tracked(b) and g * (gpu.digamma(b) - s) or nil
end)
binary("beta", function(g, a, b, y)
  local s = gpu.digamma(a + b)
  return tracked(a) and g * y * (gpu.digamma(a) - s) or nil, tracked(b) and g * y * (gpu.digamma(b) - s) or nil
end, { uses_y = true })
-- rel_entr(x, y) = x log(x / y) (SciPy's): d/dx = log(x / y) + 1, d/dy = -x / y
binary("rel_entr", function(g, a, b)
  return tracked(a) and g * ((a / b):log() + 1) or nil, tracked(b) and -g * a / b or nil
end)

return R
