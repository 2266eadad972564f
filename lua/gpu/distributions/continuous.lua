-- The continuous distributions of gpu.distributions, with PyTorch's parameters, formulas
-- and conventions: Normal Uniform Exponential Laplace Cauchy Gumbel LogNormal HalfNormal
-- Gamma Chi2 Beta Dirichlet StudentT. Samples come from gpu.random (the one Philox stream);
-- rsample is the reparameterised draw (a differentiable function of the parameters and
-- parameter-free noise), for Gamma, Chi2, Beta, Dirichlet and StudentT through the implicit
-- gradient of the gamma draw.
local gpu = require "gpu"
local C = require "gpu.distributions.core"
local T = require "gpu.distributions.transforms"

local K = C.constraints

local PI = math.pi
local LOG_SQRT_2PI = 0.5 * math.log(2 * PI)
local SQRT2 = math.sqrt(2)
local EULER = 0.57721566490153286061

return function(M)
  local TD = C.TransformedDistribution

  local function randn(d, s) return gpu.random.randn(d:_extended(s), d:_opts()) end
  local function rand(d, s) return gpu.random.rand(d:_extended(s), d:_opts()) end
  local function full(d, v) return gpu.full(d._batch, v, d:_opts()) end
  local function reparam(cls)
    cls.has_rsample = true
    function cls:rsample(sample_shape) return self:_rsample(C.sample_shape(self._name .. ":rsample", sample_shape)) end
  end
  -- the value argument of cdf/icdf/log_prob, checked
  local function val(d, fname, v, support) return C.value(d, fname, v, support) end
  local function prob(d, fname, q) return C.value(d, fname, q, K.unit_interval) end

  -- ---- Normal --------------------------------------------------------------------------------
  local Normal = C.family(M, "Normal", nil, { { "loc", K.real }, { "scale", K.positive } },
    { example = "gpu.distributions.Normal(0, 1, %s)" })
  reparam(Normal)
  local NP = Normal._props
  NP.mean = function(d) return d.loc end
  NP.mode = function(d) return d.loc end
  NP.stddev = function(d) return d.scale end
  NP.variance = function(d) return d.scale ^ 2 end
  function Normal:_support() return K.real end
  function Normal:_rsample(s) return self.loc + randn(self, s) * self.scale end
  function Normal:log_prob(value)
    local v = val(self, "log_prob", value)
    return -((v - self.loc) ^ 2) / (self.scale ^ 2 * 2) - self.scale:log() - LOG_SQRT_2PI
  end
  function Normal:cdf(value)
    local v = val(self, "cdf", value)
    return (gpu.erf((v - self.loc) / (self.scale * SQRT2)) + 1) * 0.5
  end
  function Normal:icdf(q)
    local p = prob(self, "icdf", q)
    local erfinv = C.special("Normal:icdf", "erfinv")
    return self.loc + self.scale * erfinv(p * 2 - 1) * SQRT2
  end
  function Normal:entropy() return self.scale:log() + (0.5 + LOG_SQRT_2PI) end

  -- ---- Uniform -------------------------------------------------------------------------------
  local Uniform = C.family(M, "Uniform", nil, { { "low", K.real }, { "high", K.real } }, {
    example = "gpu.distributions.Uniform(0, 1, %s)",
    post = function(d)
      C.check_param(d, "low", d.low, C.constraint("less than high", function(x) return x:lt(d.high) end))
    end,
  })
  reparam(Uniform)
  local UP = Uniform._props
  UP.mean = function(d) return (d.high + d.low) / 2 end
  UP.mode = function(d) return d.high * (0 / 0) end
  UP.variance = function(d) return (d.high - d.low) ^ 2 / 12 end
  UP.stddev = function(d) return (d.high - d.low) / math.sqrt(12) end
  function Uniform:_support()
    return C.constraint("the interval [low, high]", function(x) return gpu.logical_and(x:ge(self.low), x:le(self.high)) end)
  end
  function Uniform:_rsample(s) return self.low + rand(self, s) * (self.high - self.low) end
  function Uniform:log_prob(value)
    local v = val(self, "log_prob", value)
    local inside = gpu.logical_and(self.low:le(v), self.high:gt(v)):astype(self._dtype)
    return inside:log() - (self.high - self.low):log()
  end
  function Uniform:cdf(value)
    local v = val(self, "cdf", value)
    return gpu.clip((v - self.low) / (self.high - self.low), 0, 1)
  end
  function Uniform:icdf(q)
    local p = prob(self, "icdf", q)
    return p * (self.high - self.low) + self.low
  end
  function Uniform:entropy() return (self.high - self.low):log() end

  -- ---- Exponential ---------------------------------------------------------------------------
  local Exponential = C.family(M, "Exponential", nil, { { "rate", K.positive } },
    { example = "gpu.distributions.Exponential(1, %s)" })
  reparam(Exponential)
  local EP = Exponential._props
  EP.mean = function(d) return d.rate:reciprocal() end
  EP.mode = function(d) return gpu.zeros_like(d.rate) end
  EP.stddev = function(d) return d.rate:reciprocal() end
  EP.variance = function(d) return d.rate ^ -2 end
  function Exponential:_support() return K.nonnegative end
  function Exponential:_rsample(s) return -(-rand(self, s)):log1p() / self.rate end
  function Exponential:log_prob(value)
    local v = val(self, "log_prob", value)
    return self.rate:log() - self.rate * v
  end
  function Exponential:cdf(value)
    local v = val(self, "cdf", value)
    return 1 - (-self.rate * v):exp()
  end
  function Exponential:icdf(q)
    local p = prob(self, "icdf", q)
    return -(-p):log1p() / self.rate
  end
  function Exponential:entropy() return 1 - self.rate:log() end

  -- ---- Laplace -------------------------------------------------------------------------------
  local Laplace = C.family(M, "Laplace", nil, { { "loc", K.real }, { "scale", K.positive } },
    { example = "gpu.distributions.Laplace(0, 1, %s)" })
  reparam(Laplace)
  local LP = Laplace._props
  LP.mean = function(d) return d.loc end
  LP.mode = function(d) return d.loc end
  LP.variance = function(d) return d.scale ^ 2 * 2 end
  LP.stddev = function(d) return d.scale * SQRT2 end
  function Laplace:_support() return K.real end
  function Laplace:_rsample(s)
    local eps = gpu.finfo(self._dtype).eps
    local u = gpu.random.uniform(eps - 1, 1, self:_extended(s), self:_opts())
    return self.loc - self.scale * u:sign() * (-u:abs()):log1p()
  end
  function Laplace:log_prob(value)
    local v = val(self, "log_prob", value)
    return -(self.scale * 2):log() - (v - self.loc):abs() / self.scale
  end
  function Laplace:cdf(value)
    local v = val(self, "cdf", value)
    local z = v - self.loc
    return 0.5 - z:sign() * (-z:abs() / self.scale):expm1() * 0.5
  end
  function Laplace:icdf(q)
    local t = prob(self, "icdf", q) - 0.5
    return self.loc - self.scale * t:sign() * (t:abs() * -2):log1p()
  end
  function Laplace:entropy() return (self.scale * 2):log() + 1 end

  -- ---- Cauchy --------------------------------------------------------------------------------
  local Cauchy = C.family(M, "Cauchy", nil, { { "loc", K.real }, { "scale", K.positive } },
    { example = "gpu.distributions.Cauchy(0, 1, %s)" })
  reparam(Cauchy)
  local CP = Cauchy._props
  CP.mean = function(d) return full(d, 0 / 0) end
  CP.mode = function(d) return d.loc end
  CP.variance = function(d) return full(d, math.huge) end
  function Cauchy:_support() return K.real end
  function Cauchy:_rsample(s) return self.loc + ((rand(self, s) - 0.5) * PI):tan() * self.scale end
  function Cauchy:log_prob(value)
    local v = val(self, "log_prob", value)
    return -math.log(PI) - self.scale:log() - (((v - self.loc) / self.scale) ^ 2):log1p()
  end
  function Cauchy:cdf(value)
    local v = val(self, "cdf", value)
    return ((v - self.loc) / self.scale):atan() / PI + 0.5
  end
  function Cauchy:icdf(q)
    local p = prob(self, "icdf", q)
    return ((p - 0.5) * PI):tan() * self.scale + self.loc
  end
  function Cauchy:entropy() return self.scale:log() + math.log(4 * PI) end

  -- ---- Gumbel (PyTorch's: a TransformedDistribution of a Uniform) ------------------------------
  local Gumbel = C.family(M, "Gumbel", TD, { { "loc", K.real }, { "scale", K.positive } }, {
    example = "gpu.distributions.Gumbel(0, 1, %s)",
    post = function(d)
      local fi = gpu.finfo(d._dtype)
      rawset(d, "base_dist", M.Uniform(full(d, fi.tiny), full(d, 1 - fi.eps), { validate_args = false }))
      local exp_inv = T.ExpTransform().inv
      rawset(d, "transforms", { exp_inv, T.AffineTransform(0, -1), exp_inv, T.AffineTransform(d.loc, -d.scale) })
    end,
  })
  local GP = Gumbel._props
  GP.mean = function(d) return d.loc + d.scale * EULER end
  GP.mode = function(d) return d.loc end
  GP.stddev = function(d) return d.scale * (PI / math.sqrt(6)) end
  GP.variance = function(d) return (d.scale * (PI / math.sqrt(6))) ^ 2 end
  function Gumbel:_support() return K.real end
  function Gumbel:_rsample(s)
    local fi = gpu.finfo(self._dtype)
    local u = gpu.clip(rand(self, s), fi.tiny, 1 - fi.eps)
    return self.loc - self.scale * (-u:log()):log()
  end
  function Gumbel:log_prob(value)
    local v = val(self, "log_prob", value)
    local y = (self.loc - v) / self.scale
    return (y - y:exp()) - self.scale:log()
  end
  function Gumbel:cdf(value)
    local v = val(self, "cdf", value)
    return (-(-(v - self.loc) / self.scale):exp()):exp()
  end
  function Gumbel:icdf(q)
    local p = prob(self, "icdf", q)
    return self.loc - self.scale * (-p:log()):log()
  end
  function Gumbel:entropy() return self.scale:log() + (1 + EULER) end

  -- ---- LogNormal (exp of a Normal) -------------------------------------------------------------
  local LogNormal = C.family(M, "LogNormal", TD, { { "loc", K.real }, { "scale", K.positive } }, {
    example = "gpu.distributions.LogNormal(0, 1, %s)",
    post = function(d)
      rawset(d, "base_dist", M.Normal(d.loc, d.scale, { validate_args = false }))
      rawset(d, "transforms", { T.ExpTransform() })
    end,
  })
  local LNP = LogNormal._props
  LNP.mean = function(d) return (d.loc + d.scale ^ 2 / 2):exp() end
  LNP.mode = function(d) return (d.loc - d.scale ^ 2):exp() end
  LNP.variance = function(d)
    local s2 = d.scale ^ 2
    return s2:expm1() * (d.loc * 2 + s2):exp()
  end
  function LogNormal:_support() return K.positive end
  function LogNormal:_rsample(s) return self.base_dist:_rsample(s):exp() end
  function LogNormal:entropy() return self.base_dist:entropy() + self.loc end

  -- ---- HalfNormal (|Normal(0, scale)|) ---------------------------------------------------------
  local LOG2 = math.log(2)
  local HalfNormal = C.family(M, "HalfNormal", TD, { { "scale", K.positive } }, {
    example = "gpu.distributions.HalfNormal(1, %s)",
    post = function(d)
      rawset(d, "base_dist", M.Normal(0, d.scale, { validate_args = false }))
      rawset(d, "transforms", { T.AbsTransform() })
    end,
  })
  local HNP = HalfNormal._props
  HNP.mean = function(d) return d.scale * math.sqrt(2 / PI) end
  HNP.mode = function(d) return gpu.zeros_like(d.scale) end
  HNP.variance = function(d) return d.scale ^ 2 * (1 - 2 / PI) end
  function HalfNormal:_support() return K.nonnegative end
  function HalfNormal:_rsample(s) return self.base_dist:_rsample(s):abs() end
  function HalfNormal:log_prob(value)
    local v = val(self, "log_prob", value)
    local lp = self.base_dist:log_prob(v) + LOG2
    return gpu.where(v:ge(0), lp, -math.huge)
  end
  function HalfNormal:cdf(value)
    local v = val(self, "cdf", value)
    return self.base_dist:cdf(v) * 2 - 1
  end
  function HalfNormal:icdf(q)
    local p = prob(self, "icdf", q)
    return self.base_dist:icdf((p + 1) / 2)
  end
  function HalfNormal:entropy() return self.base_dist:entropy() - LOG2 end

  -- ---- Gamma, Chi2 ------------------------------------------------------------------------------
  local function xlogy(a, b)
    local f = C.special("xlogy", "xlogy")
    return f(a, b)
  end

  local Gamma = C.family(M, "Gamma", nil, { { "concentration", K.positive }, { "rate", K.positive } },
    { example = "gpu.distributions.Gamma(1, 1, %s)" })
  reparam(Gamma)
  C.Gamma = Gamma
  local GaP = Gamma._props
  GaP.mean = function(d) return d.concentration / d.rate end
  GaP.mode = function(d) return gpu.clip((d.concentration - 1) / d.rate, 0, nil) end
  GaP.variance = function(d) return d.concentration / d.rate ^ 2 end
  function Gamma:_support() return K.nonnegative end
  function Gamma:_rsample(s)
    local shape = self:_extended(s)
    local x = C.standard_gamma("Gamma:rsample", C.expand(self.concentration, shape))
    return gpu.clip(x / self.rate, gpu.finfo(self._dtype).tiny, nil)
  end
  function Gamma:log_prob(value)
    local v = val(self, "log_prob", value)
    local lgamma = C.special("Gamma:log_prob", "gammaln")
    local a, r = self.concentration, self.rate
    return xlogy(a, r) + xlogy(a - 1, v) - r * v - lgamma(a)
  end
  function Gamma:cdf(value)
    local v = val(self, "cdf", value)
    local gammainc = C.special("Gamma:cdf", "gammainc")
    return gammainc(self.concentration, self.rate * v)
  end
  function Gamma:entropy()
    local a = self.concentration
    local lgamma, digamma = C.special("Gamma:entropy", "gammaln"), C.special("Gamma:entropy", "digamma")
    return a - self.rate:log() + lgamma(a) + (1 - a) * digamma(a)
  end

  -- Chi2(df): Gamma(df / 2, 1 / 2)
  local Chi2 = C.family(M, "Chi2", Gamma, { { "df", K.positive } }, {
    example = "gpu.distributions.Chi2(1, %s)",
    post = function(d)
      rawset(d, "concentration", d.df * 0.5)
      rawset(d, "rate", gpu.full(d.df.shape, 0.5, d:_opts()))
    end,
  })
  Chi2._params = { "df" }

  -- ---- Dirichlet, Beta ---------------------------------------------------------------------------
  local Dirichlet = C.family(M, "Dirichlet", nil, { { "concentration", K.positive } },
    { example = "gpu.distributions.Dirichlet(gpu.ones(3), %s)", event = 1 })
  reparam(Dirichlet)
  local DP = Dirichlet._props
  DP.mean = function(d) return d.concentration / d.concentration:sum(-1, { keepdims = true }) end
  DP.mode = function(d)
    local a = gpu.clip(d.concentration - 1, 0, nil)
    local m = a / a:sum(-1, { keepdims = true })
    -- every alpha below 1: PyTorch's mode is the first vertex (the argmax of its all-NaN ratio)
    local low = d.concentration:lt(1):all(-1, { keepdims = true })
    local k = d.concentration.shape[d.concentration.ndim]
    local first = (gpu.arange(k, { device = d._device }):eq(0)):astype(d._dtype)
    return gpu.where(low, first, m)
  end
  DP.variance = function(d)
    local a = d.concentration
    local a0 = a:sum(-1, { keepdims = true })
    return a * (a0 - a) / (a0 ^ 2 * (a0 + 1))
  end
  function Dirichlet:_support() return K.simplex end
  function Dirichlet:_rsample(s)
    local shape = self:_extended(s)
    local g = C.standard_gamma("Dirichlet:rsample", C.expand(self.concentration, shape))
    local x = g / g:sum(-1, { keepdims = true })
    local fi = gpu.finfo(self._dtype)
    return gpu.clip(x, fi.tiny, 1 - fi.eps)
  end
  function Dirichlet:log_prob(value)
    local v = val(self, "log_prob", value)
    local lgamma = C.special("Dirichlet:log_prob", "gammaln")
    local a = self.concentration
    return xlogy(a - 1, v):sum(-1) + lgamma(a:sum(-1)) - lgamma(a):sum(-1)
  end
  function Dirichlet:entropy()
    local lgamma, digamma = C.special("Dirichlet:entropy", "gammaln"), C.special("Dirichlet:entropy", "digamma")
    local a = self.concentration
    local k = a.shape[a.ndim]
    local a0 = a:sum(-1)
    return lgamma(a):sum(-1) - lgamma(a0) - (k - a0) * digamma(a0) - ((a - 1) * digamma(a)):sum(-1)
  end

  local Beta = C.family(M, "Beta", nil, { { "concentration1", K.positive }, { "concentration0", K.positive } }, {
    example = "gpu.distributions.Beta(1, 1, %s)",
    post = function(d)
      rawset(d, "_dirichlet", M.Dirichlet(gpu.stack({ d.concentration1, d.concentration0 }, -1), { validate_args = false }))
    end,
  })
  reparam(Beta)
  local BP = Beta._props
  BP.mean = function(d) return d.concentration1 / (d.concentration1 + d.concentration0) end
  BP.mode = function(d) return C.last(d._dirichlet.mode, 1) end
  BP.variance = function(d)
    local t = d.concentration1 + d.concentration0
    return d.concentration1 * d.concentration0 / (t ^ 2 * (t + 1))
  end
  function Beta:_support() return K.unit_interval end
  function Beta:_rsample(s)
    return C.last(self._dirichlet:_rsample(s), 1)
  end
  function Beta:log_prob(value)
    local v = val(self, "log_prob", value)
    return self._dirichlet:log_prob(gpu.stack({ v, 1 - v }, -1))
  end
  function Beta:entropy() return self._dirichlet:entropy() end

  -- ---- StudentT ----------------------------------------------------------------------------------
  local StudentT = C.family(M, "StudentT", nil,
    { { "df", K.positive }, { "loc", K.real, default = 0 }, { "scale", K.positive, default = 1 } },
    { example = "gpu.distributions.StudentT(3, 0, 1, %s)" })
  reparam(StudentT)
  local SP = StudentT._props
  SP.mean = function(d) return gpu.where(d.df:gt(1), d.loc, 0 / 0) end
  SP.mode = function(d) return d.loc end
  SP.variance = function(d)
    local df = d.df
    local v = d.scale ^ 2 * df / (df - 2)
    v = gpu.where(df:gt(2), v, math.huge)
    return gpu.where(df:gt(1), v, 0 / 0)
  end
  function StudentT:_support() return K.real end
  function StudentT:_rsample(s)
    local shape = self:_extended(s)
    local x = randn(self, s)
    local z = C.standard_gamma("StudentT:rsample", C.expand(self.df * 0.5, shape)) * 2
    return self.loc + self.scale * x * (z / self.df):rsqrt()
  end
  function StudentT:log_prob(value)
    local v = val(self, "log_prob", value)
    local lgamma = C.special("StudentT:log_prob", "gammaln")
    local df = self.df
    local y = (v - self.loc) / self.scale
    local z = self.scale:log() + df:log() * 0.5 + 0.5 * math.log(PI) + lgamma(df * 0.5) - lgamma((df + 1) * 0.5)
    return (y ^ 2 / df):log1p() * ((df + 1) * -0.5) - z
  end
  function StudentT:entropy()
    local lgamma, digamma = C.special("StudentT:entropy", "gammaln"), C.special("StudentT:entropy", "digamma")
    local df = self.df
    local lbeta = lgamma(df * 0.5) + 0.5 * math.log(PI) - lgamma((df + 1) * 0.5)
    return self.scale:log() + (df + 1) * 0.5 * (digamma((df + 1) * 0.5) - digamma(df * 0.5)) + df:log() * 0.5 + lbeta
  end

end
