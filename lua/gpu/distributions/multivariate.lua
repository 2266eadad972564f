-- MultivariateNormal (torch.distributions.MultivariateNormal): a mean vector and one of a
-- covariance matrix, a precision matrix or the lower Cholesky factor of the covariance
-- (scale_tril), batched over leading axes. Everything is computed from scale_tril L:
-- rsample loc + L eps, log_prob through the triangular solve L y = x - loc (gpu.linalg),
-- differentiable in loc and the matrix through those ops' rules.
local gpu = require "gpu"
local options = require "gpu.options"
local C = require "gpu.distributions.core"

local K = C.constraints
local raise, argerror = options.raise, options.argerror
local LOG_2PI = math.log(2 * math.pi)

return function(M)
  local MVN = C.class("MultivariateNormal", C.Distribution)
  MVN._params = { "loc", "covariance_matrix", "precision_matrix", "scale_tril" }
  local names = MVN._params
  local fname = "gpu.distributions.MultivariateNormal"
  local decl = options.declare(fname, {
    loc = { type = "array" }, covariance_matrix = { type = "array" }, precision_matrix = { type = "array" },
    scale_tril = { type = "array" }, validate_args = { type = "boolean" },
  }, { example = "gpu.distributions.MultivariateNormal(gpu.zeros(2), gpu.eye(2), %s)" })

  M.MultivariateNormal = options.counted(fname, function(...)
    local v, o = C.args("MultivariateNormal", names, decl, ...)
    local which, count = nil, 0
    for _, k in ipairs { "covariance_matrix", "precision_matrix", "scale_tril" } do
      if v[k] ~= nil then which, count = k, count + 1 end
    end
    if count ~= 1 then
      raise("%s: exactly one of covariance_matrix, precision_matrix or scale_tril must be given, got %d", fname, count)
    end
    local argn = ({ covariance_matrix = 2, precision_matrix = 3, scale_tril = 4 })[which]
    local arrs, _, dtype, device = C.floats("MultivariateNormal", { { "loc", v.loc, 1 }, { which, v[which], argn } },
      { no_broadcast = true })
    local loc, m = arrs.loc, arrs[which]
    if loc.ndim < 1 then argerror(fname, 1, "loc: an array of at least 1 dimension expected, got a 0-d array or number") end
    if m.ndim < 2 then
      argerror(fname, argn, "%s: a matrix (at least 2 dimensions, with optional leading batch axes) expected, got %d-d", which, m.ndim)
    end
    local n = loc.shape[loc.ndim]
    if m.shape[m.ndim] ~= n or m.shape[m.ndim - 1] ~= n then
      raise("%s: %s of shape %s does not match loc's event size %d (a (..., %d, %d) matrix expected)", fname, which,
        options.shape_str(m.shape), n, n, n)
    end
    local batch = C.broadcast("MultivariateNormal", { { table.unpack(m.shape, 1, m.ndim - 2) }, { table.unpack(loc.shape, 1, loc.ndim - 1) } })
    local d = C.init(MVN, o, batch, { n }, dtype, device)
    C.check_param(d, "loc", loc, K.real_vector)
    C.check_param(d, which, m, which == "scale_tril" and K.lower_cholesky or K.positive_definite)
    rawset(d, "loc", C.expand(loc, C.concat(batch, { n })))
    local L
    if which == "scale_tril" then L = m
    elseif which == "covariance_matrix" then L = options.call(fname, gpu.linalg.cholesky, m)
    else L = options.call(fname, gpu.linalg.cholesky, gpu.linalg.inv(m)) end
    rawset(d, "_scale_tril", L)
    rawset(d, "_" .. which, m)
    return d
  end, 5)

  local P = MVN._props
  local function full_batch(d, x, tail) return C.expand(x, C.concat(d._batch, tail)) end
  local n_of = function(d) return d._event[1] end
  P.scale_tril = function(d) return full_batch(d, d._scale_tril, { n_of(d), n_of(d) }) end
  P.covariance_matrix = function(d)
    local c = rawget(d, "_covariance_matrix") or d._scale_tril:matmul(d._scale_tril:transpose(-1, -2))
    return full_batch(d, c, { n_of(d), n_of(d) })
  end
  P.precision_matrix = function(d)
    local p = rawget(d, "_precision_matrix") or gpu.linalg.inv(d._scale_tril:matmul(d._scale_tril:transpose(-1, -2)))
    return full_batch(d, p, { n_of(d), n_of(d) })
  end
  P.mean = function(d) return d.loc end
  P.mode = function(d) return d.loc end
  P.variance = function(d) return full_batch(d, (d._scale_tril ^ 2):sum(-1), { n_of(d) }) end

  MVN.has_rsample = true
  function MVN:rsample(sample_shape) return self:_rsample(C.sample_shape(self._name .. ":rsample", sample_shape)) end
  function MVN:_support() return K.real_vector end
  function MVN:_rsample(s)
    local eps = gpu.random.randn(self:_extended(s), self:_opts())
    return self.loc + self._scale_tril:matmul(eps:unsqueeze(-1)):squeeze(-1)
  end
  function MVN:_expand(shape)
    local n = n_of(self)
    return M.MultivariateNormal(C.expand(self.loc, C.concat(shape, { n })),
      { scale_tril = C.expand(self._scale_tril, C.concat(shape, { n, n })), validate_args = false })
  end
  local function half_log_det(d) return gpu.diagonal(d._scale_tril, 0, -2, -1):log():sum(-1) end
  function MVN:log_prob(value)
    local v = C.value(self, "log_prob", value)
    local m = C.mahalanobis(self._scale_tril, v - self.loc)
    return (m + n_of(self) * LOG_2PI) * -0.5 - half_log_det(self)
  end
  function MVN:entropy()
    local h = half_log_det(self) + 0.5 * n_of(self) * (1 + LOG_2PI)
    return C.expand(h, self._batch)
  end
end
