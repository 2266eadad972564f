-- The discrete distributions of gpu.distributions: Bernoulli Geometric Binomial Poisson
-- Categorical OneHotCategorical Multinomial, parameterised as PyTorch's by probs or logits
-- (exactly one; the other is computed on first use). Categorical's labels are 1-based, as
-- every index in gpulua: sample gives 1..K and log_prob takes 1..K (PyTorch's 0..K-1).
local gpu = require "gpu"
local options = require "gpu.options"
local C = require "gpu.distributions.core"

local K = C.constraints
local raise = options.raise

return function(M)
  local Distribution = C.Distribution

  local function rand(d, s) return gpu.random.rand(d:_extended(s), d:_opts()) end

  -- PyTorch's probs_to_logits: probs clamped to [eps, 1 - eps] first
  local function clamp_probs(p)
    local eps = gpu.finfo(p.dtype).eps
    return gpu.clip(p, eps, 1 - eps)
  end
  local function binary_logits(p)
    local q = clamp_probs(p)
    return q:log() - (-q):log1p()
  end
  local function bce_with_logits(logits, target) return gpu.softplus(logits) - logits * target end

  -- binary(name, params, spec): a family with probs or logits of one event (Bernoulli,
  -- Geometric, Binomial); spec.leading lists parameters before them ({name, constraint, default})
  local function binary(name, spec)
    local cls = C.class(name, Distribution)
    local leading = spec.leading or {}
    local names, keys = {}, { validate_args = { type = "boolean" } }
    for i, p in ipairs(leading) do names[i] = p[1] end
    names[#names + 1], names[#names + 2] = "probs", "logits"
    for _, n in ipairs(names) do keys[n] = { type = "number|array", what = "a number or a gpu.array" } end
    local fname = "gpu.distributions." .. name
    local decl = options.declare(fname, keys, { example = spec.example })
    cls._params = names
    M[name] = options.counted(fname, function(...)
      local v, o = C.args(name, names, decl, ...)
      C.one_of(name, v, "probs", "logits")
      local list = {}
      for i, p in ipairs(leading) do
        local x = v[p[1]]
        if x == nil then x = p.default end
        list[i] = { p[1], x, i }
      end
      local which = v.probs ~= nil and "probs" or "logits"
      list[#list + 1] = { which, v[which], #leading + (which == "probs" and 1 or 2) }
      local arrs, shape, dtype, device = C.floats(name, list)
      local d = C.init(cls, o, shape, {}, dtype, device)
      for _, p in ipairs(leading) do
        rawset(d, p[1], C.expand(arrs[p[1]], shape))
        C.check_param(d, p[1], d[p[1]], p[2])
      end
      rawset(d, which, C.expand(arrs[which], shape))
      rawset(d, "_given", which)
      C.check_param(d, which, d[which], which == "probs" and (spec.probs or K.unit_interval) or K.real)
      return d
    end, #names + 1)
    local ctor = M[name]
    function cls:_expand(shape)
      local o = { validate_args = false }
      local args = {}
      for i, p in ipairs(leading) do args[i] = C.expand(rawget(self, p[1]), shape) end
      o[self._given] = C.expand(rawget(self, self._given), shape)
      args[#args + 1] = o
      return ctor(table.unpack(args))
    end
    local P = cls._props
    P.probs = function(d)
      local p = d.logits:sigmoid()
      rawset(d, "probs", p)
      return p
    end
    P.logits = function(d)
      local l = binary_logits(d.probs)
      rawset(d, "logits", l)
      return l
    end
    return cls
  end

  -- ---- Bernoulli -------------------------------------------------------------------------------
  local Bernoulli = binary("Bernoulli", { example = "gpu.distributions.Bernoulli(0.5, %s)" })
  local BP = Bernoulli._props
  BP.mean = function(d) return d.probs end
  BP.mode = function(d)
    local m = d.probs:ge(0.5):astype(d._dtype)
    return gpu.where(d.probs:eq(0.5), 0 / 0, m)
  end
  BP.variance = function(d) return d.probs * (1 - d.probs) end
  Bernoulli.has_enumerate_support = true
  function Bernoulli:_support() return K.boolean end
  function Bernoulli:_sample(s) return rand(self, s):lt(self.probs):astype(self._dtype) end
  function Bernoulli:log_prob(value)
    local v = C.value(self, "log_prob", value)
    return -bce_with_logits(self.logits, v)
  end
  function Bernoulli:entropy() return bce_with_logits(self.logits, self.probs) end
  -- enumerate_support([expand = true]): the values 0 and 1, along a new first axis
  function Bernoulli:enumerate_support(expand)
    local shape = { 2 }
    for _ = 1, #self._batch do shape[#shape + 1] = 1 end
    local v = gpu.arange(2, self:_opts()):reshape(shape)
    if expand == false then return v end
    return v:expand(C.concat({ 2 }, self._batch))
  end

  -- ---- Geometric (failures before the first success) ---------------------------------------------
  local Geometric = binary("Geometric", { example = "gpu.distributions.Geometric(0.5, %s)",
    probs = C.constraint("the interval (0, 1]", function(x) return gpu.logical_and(x:gt(0), x:le(1)) end) })
  local GP = Geometric._props
  GP.mean = function(d) return d.probs:reciprocal() - 1 end
  GP.mode = function(d) return gpu.zeros_like(d.probs) end
  GP.variance = function(d) return (d.probs:reciprocal() - 1) / d.probs end
  function Geometric:_support() return K.nonnegative_integer end
  function Geometric:_sample(s)
    local u = gpu.clip(rand(self, s), gpu.finfo(self._dtype).tiny, nil)
    return (u:log() / (-self.probs):log1p()):floor()
  end
  function Geometric:log_prob(value)
    local v = C.value(self, "log_prob", value)
    local p = self.probs
    -- p = 1 and v = 0: 0 * log(0) is 0 (the first trial succeeds surely)
    local q = gpu.where(gpu.logical_and(p:eq(1), v:eq(0)), 0, p)
    return v * (-q):log1p() + p:log()
  end
  function Geometric:entropy() return bce_with_logits(self.logits, self.probs) / self.probs end

  -- ---- Binomial --------------------------------------------------------------------------------
  local Binomial = binary("Binomial", { example = "gpu.distributions.Binomial(10, 0.5, %s)",
    leading = { { "total_count", K.nonnegative_integer, default = 1 } } })
  local BiP = Binomial._props
  BiP.mean = function(d) return d.total_count * d.probs end
  BiP.mode = function(d) return gpu.minimum(((d.total_count + 1) * d.probs):floor(), d.total_count) end
  BiP.variance = function(d) return d.total_count * d.probs * (1 - d.probs) end
  Binomial.has_enumerate_support = true
  function Binomial:_support() return K.integer_interval(self.total_count) end
  function Binomial:_sample(s)
    local shape = self:_extended(s)
    local binomial = C.rng("Binomial:sample", "binomial")
    return C.sample_binomial(binomial, C.expand(self.total_count, shape), C.expand(self.probs, shape))
  end
  function Binomial:log_prob(value)
    local v = C.value(self, "log_prob", value)
    local lgamma = C.special("Binomial:log_prob", "gammaln")
    local n, l = self.total_count, self.logits
    local clamp_by_zero = (gpu.clip(l, 0, nil) + l - gpu.clip(l, nil, 0)) / 2
    local norm = n * clamp_by_zero + n * (-l:abs()):exp():log1p() - lgamma(n + 1)
    return v * l - lgamma(v + 1) - lgamma(n - v + 1) - norm
  end
  function Binomial:enumerate_support(expand)
    local n = gpu.no_grad(function() return self.total_count:max():item() end)
    local n0 = gpu.no_grad(function() return self.total_count:min():item() end)
    if n ~= n0 then raise("gpu.distributions.Binomial:enumerate_support: inhomogeneous total_count is not supported") end
    local shape = { n + 1 }
    for _ = 1, #self._batch do shape[#shape + 1] = 1 end
    local v = gpu.arange(n + 1, self:_opts()):reshape(shape)
    if expand == false then return v end
    return v:expand(C.concat({ n + 1 }, self._batch))
  end
  function Binomial:entropy()
    local n = gpu.no_grad(function() return self.total_count:max():item() end)
    local n0 = gpu.no_grad(function() return self.total_count:min():item() end)
    if n ~= n0 then raise("gpu.distributions.Binomial:entropy: inhomogeneous total_count is not supported (as in PyTorch)") end
    local lp = self:log_prob(self:enumerate_support(false))
    return -(lp:exp() * lp):sum(1)
  end

  -- ---- Poisson ---------------------------------------------------------------------------------
  local Poisson = C.family(M, "Poisson", nil, { { "rate", K.nonnegative } },
    { example = "gpu.distributions.Poisson(1, %s)" })
  local PP = Poisson._props
  PP.mean = function(d) return d.rate end
  PP.mode = function(d) return d.rate:floor() end
  PP.variance = function(d) return d.rate end
  function Poisson:_support() return K.nonnegative_integer end
  function Poisson:_sample(s)
    local poisson = C.rng("Poisson:sample", "poisson")
    return C.sample_poisson(poisson, C.expand(self.rate, self:_extended(s)))
  end
  function Poisson:log_prob(value)
    local v = C.value(self, "log_prob", value)
    local lgamma, xlogy = C.special("Poisson:log_prob", "gammaln"), C.special("Poisson:log_prob", "xlogy")
    return xlogy(v, self.rate) - self.rate - lgamma(v + 1)
  end

  -- ---- Categorical -----------------------------------------------------------------------------
  local CATKEYS = { probs = { type = "array" }, logits = { type = "array" }, validate_args = { type = "boolean" } }
  -- categorical(cls, name, ...): probs or logits of at least one axis, the last the K categories
  local function categorical(cls, name, decl, ...)
    local v, o = C.args(name, { "probs", "logits" }, decl, ...)
    C.one_of(name, v, "probs", "logits")
    local which = v.probs ~= nil and "probs" or "logits"
    local arrs, shape, dtype, device = C.floats(name, { { which, v[which], which == "probs" and 1 or 2 } }, { min_ndim = 1 })
    local x = arrs[which]
    local d = C.init(cls, o, { table.unpack(shape, 1, #shape - 1) }, {}, dtype, device)
    rawset(d, "_num_events", shape[#shape])
    if which == "probs" then
      C.check_param(d, "probs", x, C.constraint("nonnegative, with a positive sum", function(p)
        return gpu.logical_and(p:ge(0):all(-1), p:sum(-1):gt(0))
      end))
      rawset(d, "probs", x / x:sum(-1, { keepdims = true }))
      rawset(d, "_given", "probs")
    else
      C.check_param(d, "logits", x, K.real_vector)
      rawset(d, "logits", x - x:logsumexp(-1, { keepdims = true }))
      rawset(d, "_given", "logits")
    end
    return d
  end
  -- the Categorical of expand(shape): its normalised parameter broadcast
  local function expand_categorical(cat, shape)
    local o = { validate_args = false }
    o[cat._given] = C.expand(rawget(cat, cat._given), C.concat(shape, { cat._num_events }))
    return o
  end

  local Categorical = C.class("Categorical", Distribution)
  C.Categorical = Categorical
  Categorical._params = { "probs", "logits" }
  local CATDECL = options.declare("gpu.distributions.Categorical", CATKEYS,
    { example = "gpu.distributions.Categorical(gpu.ones(3), %s)" })
  M.Categorical = options.counted("gpu.distributions.Categorical", function(...)
    return categorical(Categorical, "Categorical", CATDECL, ...)
  end, 3)
  local CaP = Categorical._props
  CaP.probs = function(d)
    local p = gpu.softmax and gpu.softmax(d.logits, -1) or d.logits:exp()
    rawset(d, "probs", p)
    return p
  end
  CaP.logits = function(d)
    local l = clamp_probs(d.probs):log()
    rawset(d, "logits", l)
    return l
  end
  CaP.param_shape = function(d) return d.probs.shape end
  CaP.mean = function(d) return gpu.full(d._batch, 0 / 0, d:_opts()) end
  CaP.variance = function(d) return gpu.full(d._batch, 0 / 0, d:_opts()) end
  CaP.mode = function(d) return d.probs:argmax(-1) end
  Categorical.has_enumerate_support = true
  function Categorical:_support() return K.categories(self._num_events) end
  -- one label per draw: the count of cumulative probabilities at or below a uniform draw, plus 1
  function Categorical:_sample(s)
    local shape = C.concat(s, self._batch, { 1 })
    local u = gpu.random.rand(shape, self:_opts())
    local cdf = self.probs:cumsum(-1)
    local k = u:ge(cdf):sum(-1) + 1
    return gpu.minimum(k, self._num_events):astype("int64")
  end
  function Categorical:log_prob(value)
    local v = C.value(self, "log_prob", value)
    local idx = v:astype("int64"):unsqueeze(-1)
    local lg = self.logits
    local shape = C.broadcast("Categorical:log_prob", { idx.shape, lg.shape }, "the value and logits")
    local ishape = C.concat(shape)
    ishape[#ishape] = 1
    return gpu.take_along_axis(C.expand(lg, shape), C.expand(idx, ishape), -1):squeeze(-1)
  end
  function Categorical:_expand(shape) return M.Categorical(expand_categorical(self, shape)) end
  function Categorical:entropy()
    local l = gpu.clip(self.logits, gpu.finfo(self._dtype).min, nil)
    return -(l * self.probs):sum(-1)
  end
  -- enumerate_support([expand = true]): the labels 1..K along a new first axis (int64)
  function Categorical:enumerate_support(expand)
    local k = self._num_events
    local shape = { k }
    for _ = 1, #self._batch do shape[#shape + 1] = 1 end
    local v = (gpu.arange(k, { dtype = "int64", device = self._device }) + 1):reshape(shape)
    if expand == false then return v end
    return v:expand(C.concat({ k }, self._batch))
  end

  -- ---- OneHotCategorical -----------------------------------------------------------------------
  local OneHot = C.class("OneHotCategorical", Distribution)
  OneHot._params = { "probs", "logits" }
  local OHDECL = options.declare("gpu.distributions.OneHotCategorical", CATKEYS,
    { example = "gpu.distributions.OneHotCategorical(gpu.ones(3), %s)" })
  M.OneHotCategorical = options.counted("gpu.distributions.OneHotCategorical", function(...)
    local cat = categorical(Categorical, "OneHotCategorical", OHDECL, ...)
    local d = C.init(OneHot, { validate_args = cat._validate }, cat._batch, { cat._num_events }, cat._dtype, cat._device)
    rawset(d, "_categorical", cat)
    return d
  end, 3)
  local OP = OneHot._props
  OP.probs = function(d) return d._categorical.probs end
  OP.logits = function(d) return d._categorical.logits end
  OP.mean = function(d) return d._categorical.probs end
  OP.variance = function(d)
    local p = d._categorical.probs
    return p * (1 - p)
  end
  local function one_hot(labels, k, opts)
    local ar = gpu.arange(k, { dtype = "int64", device = opts.device }) + 1
    return labels:unsqueeze(-1):eq(ar):astype(opts.dtype)
  end
  OP.mode = function(d) return one_hot(d._categorical.mode, d._event[1], d:_opts()) end
  OneHot.has_enumerate_support = true
  function OneHot:_support() return K.one_hot end
  function OneHot:_sample(s) return one_hot(self._categorical:_sample(s), self._event[1], self:_opts()) end
  function OneHot:log_prob(value)
    local v = C.value(self, "log_prob", value)
    return self._categorical:log_prob(v:argmax(-1))
  end
  function OneHot:_expand(shape) return M.OneHotCategorical(expand_categorical(self._categorical, shape)) end
  function OneHot:entropy() return self._categorical:entropy() end
  function OneHot:enumerate_support(expand)
    local k = self._event[1]
    local shape = { k }
    for _ = 1, #self._batch do shape[#shape + 1] = 1 end
    shape[#shape + 1] = k
    local v = gpu.eye(k, self:_opts()):reshape(shape)
    if expand == false then return v end
    return v:expand(C.concat({ k }, self._batch, { k }))
  end

  -- ---- Multinomial -----------------------------------------------------------------------------
  local Multinomial = C.class("Multinomial", Distribution)
  Multinomial._params = { "probs", "logits" }
  local MNDECL = options.declare("gpu.distributions.Multinomial", {
    total_count = { type = "integer", min = 0 }, probs = { type = "array" }, logits = { type = "array" },
    validate_args = { type = "boolean" } }, { example = "gpu.distributions.Multinomial(10, gpu.ones(3), %s)" })
  M.Multinomial = options.counted("gpu.distributions.Multinomial", function(...)
    local v, o = C.args("Multinomial", { "total_count", "probs", "logits" }, MNDECL, ...)
    local n = v.total_count
    if n == nil then n = 1 end
    if math.type(n) ~= "integer" then
      options.argerror("gpu.distributions.Multinomial", 1, "total_count: an integer expected, got %s", options.type_name(n))
    end
    if n < 0 then options.argerror("gpu.distributions.Multinomial", 1, "total_count: must be >= 0, got %d", n) end
    local cat = categorical(Categorical, "Multinomial", MNDECL, v.probs, v.logits, { validate_args = o.validate_args })
    local d = C.init(Multinomial, o, cat._batch, { cat._num_events }, cat._dtype, cat._device)
    rawset(d, "_categorical", cat)
    rawset(d, "total_count", n)
    return d
  end, 4)
  local MP = Multinomial._props
  MP.probs = function(d) return d._categorical.probs end
  MP.logits = function(d) return d._categorical.logits end
  MP.mean = function(d) return d._categorical.probs * d.total_count end
  MP.variance = function(d)
    local p = d._categorical.probs
    return p * (1 - p) * d.total_count
  end
  function Multinomial:_support() return K.multinomial(self.total_count) end
  -- total_count labels per draw, counted per category
  function Multinomial:_sample(s)
    local k = self._event[1]
    local labels = self._categorical:_sample(C.concat(s, { self.total_count }))   -- (s..., n, batch...)
    local counts = one_hot(labels, k, self:_opts())
    return counts:sum(#s + 1)
  end
  function Multinomial:_expand(shape)
    local o = expand_categorical(self._categorical, shape)
    o.total_count = self.total_count
    return M.Multinomial(o)
  end
  function Multinomial:log_prob(value)
    local v = C.value(self, "log_prob", value)
    local lgamma = C.special("Multinomial:log_prob", "gammaln")
    local l = self._categorical.logits
    l = gpu.where(gpu.logical_and(v:eq(0), l:eq(-math.huge)), 0, l)
    return lgamma(v:sum(-1) + 1) - lgamma(v + 1):sum(-1) + (l * v):sum(-1)
  end
  function Multinomial:entropy()
    local lgamma = C.special("Multinomial:entropy", "gammaln")
    local n = self.total_count
    local term1 = self._categorical:entropy() * n - lgamma(gpu.full({}, n + 1, self:_opts()))
    if n == 0 then return term1 end
    local b = M.Binomial(n, self._categorical.probs, { validate_args = false })
    local range = b:enumerate_support(false)[{ { 2, n + 1 } }]    -- (n, 1, ..., 1): the counts 1..n
    local bp = b:log_prob(range):exp()
    local w = lgamma(range + 1)
    return term1 + (bp * w):sum(1):sum(-1)
  end

end
