-- gpu.distributions.core: what every distribution of gpu.distributions shares (PyTorch's
-- torch.distributions.Distribution): the class of each one, its parameters (numbers or
-- arrays, one float dtype, one device, broadcast to the batch shape), the constraints that
-- validate_args checks (a parameter at construction, a value at log_prob and cdf), and the
-- shapes of samples. The distributions themselves are written in array ops, so a
-- parameter that requires grad gets gradients through rsample, log_prob, entropy, cdf,
-- icdf and kl_divergence by the ops' own rules.
local gpu = require "gpu"
local options = require "gpu.options"

local is_array, raise, argerror, type_name = options.is_array, options.raise, options.argerror, options.type_name
local shape_str = options.shape_str

local C = { default_validate = true }

-- ---- classes ---------------------------------------------------------------------------------

-- A distribution is a table whose metatable is its class. A class reads its properties
-- (mean, variance, batch_shape...) through getters in cls._props, its methods from itself
-- and then from its parent; instances hold their parameters as plain fields.
local CLASS = {}                                   -- class -> true
C.classes = {}                                     -- name -> class
local function is_dist(v)
  local mt = type(v) == "table" and getmetatable(v) or nil
  return mt ~= nil and CLASS[mt] == true
end
C.is_dist = is_dist

function C.class(name, parent)
  local cls = { _name = name, _parent = parent, _props = setmetatable({}, { __index = parent and parent._props }) }
  local props = cls._props
  cls.__index = function(_, k)
    local get = props[k]
    if get ~= nil then return get(_) end
    return cls[k]
  end
  cls.__name = "gpu.distributions." .. name
  cls.__tostring = function(d) return d:_describe() end
  setmetatable(cls, { __index = parent })
  CLASS[cls] = true
  C.classes[name] = cls
  return options.guard_methods(cls, name, "d", is_dist)
end

-- isinstance(d, cls): d's class is cls or derives from it
function C.isinstance(d, cls)
  local c = getmetatable(d)
  while c ~= nil do
    if c == cls then return true end
    c = rawget(c, "_parent")
  end
  return false
end

-- ---- numbers, dtypes, shapes -------------------------------------------------------------------

local function default_dtype()
  local get = rawget(gpu, "get_default_dtype")
  return get and get() or "float32"
end
local FLOATS = { float32 = true, float64 = true }
C.FLOATS = FLOATS

function C.broadcast(fname, shapes, what)
  local nd = 0
  for _, s in ipairs(shapes) do nd = math.max(nd, #s) end
  local out = {}
  for i = 1, nd do
    local n = 1
    for _, s in ipairs(shapes) do
      local d = s[#s - nd + i] or 1
      if d ~= 1 then
        if n ~= 1 and n ~= d then
          local strs = {}
          for k, sh in ipairs(shapes) do strs[k] = shape_str(sh) end
          raise("gpu.distributions.%s: %s of shapes %s cannot be broadcast together", fname, what or "parameters",
            table.concat(strs, " and "))
        end
        n = d
      end
    end
    out[i] = n
  end
  return out
end

function C.concat(...)
  local out = {}
  for _, t in ipairs { ... } do for _, v in ipairs(t) do out[#out + 1] = v end end
  return out
end

local function same(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end
C.same_shape = same

-- floats(fname, list): the parameters of a constructor, each {name, value, argn}: numbers and
-- arrays, made arrays of one float dtype (float64 when an array is, else the default) on one
-- device, broadcast to their common shape. Returns the arrays by name and that shape.
function C.floats(fname, list, opts)
  local dtype, device, first
  opts = opts or {}
  for _, p in ipairs(list) do
    local v = p[2]
    if is_array(v) then
      if v:is_closed() then argerror("gpu.distributions." .. fname, p[3], "%s: the gpu.array is closed", p[1]) end
      local k = gpu._dtypes[v.dtype].kind
      if k == "complex" then argerror("gpu.distributions." .. fname, p[3], "%s: a real array expected, got %s", p[1], v.dtype) end
      if device == nil then device, first = v.device, p[1]
      elseif v.device ~= device then
        raise("gpu.distributions.%s: parameter %s is on %s and %s on %s; use :to() to bring them together", fname,
          first, device, p[1], v.device)
      end
      if v.dtype == "float64" then dtype = "float64" elseif FLOATS[v.dtype] and dtype == nil then dtype = v.dtype end
    elseif type(v) ~= "number" and not (v == nil and p.optional) then
      argerror("gpu.distributions." .. fname, p[3], "%s: a number or a gpu.array expected, got %s", p[1], type_name(v))
    end
  end
  dtype = dtype or default_dtype()
  local out, shapes = {}, {}
  for _, p in ipairs(list) do
    local v = p[2]
    if type(v) == "number" then v = gpu.full({}, v, { dtype = dtype, device = device })
    elseif is_array(v) and v.dtype ~= dtype then v = v:astype(dtype) end
    if v ~= nil then
      if opts.min_ndim and v.ndim < opts.min_ndim then
        argerror("gpu.distributions." .. fname, p[3], "%s: an array of at least %d dimension%s expected, got %s", p[1],
          opts.min_ndim, opts.min_ndim == 1 and "" or "s", v.ndim == 0 and "a 0-d array or number" or v.ndim .. "-d")
      end
      out[p[1]] = v
      shapes[#shapes + 1] = v.shape
    end
  end
  if opts.no_broadcast then return out, nil, dtype, device or (next(out) and out[next(out)].device) end
  return out, C.broadcast(fname, shapes), dtype, device or (next(out) and out[next(out)].device)
end

-- last(x, i): x[..., i], the last axis dropped (differentiable: gpu.take)
function C.last(x, i)
  return gpu.take(x, gpu.full({}, i, { dtype = "int64", device = x.device }), -1)
end

function C.expand(x, shape)
  if same(x.shape, shape) then return x end
  return x:expand(shape)
end

-- sample_shape(fname, s): nil (one draw per batch element), a count, or a table of counts
function C.sample_shape(fname, s, what)
  what = what or "sample_shape"
  if s == nil then return {} end
  if math.type(s) == "integer" or (type(s) == "number" and s == math.floor(s)) then s = { s } end
  if type(s) ~= "table" or is_array(s) then
    argerror(fname, 1, "%s: a table of sizes or a size expected, got %s", what, type_name(s))
  end
  local out = {}
  for i, n in ipairs(s) do
    if math.type(n) ~= "integer" and not (type(n) == "number" and n == math.floor(n) and n >= 0 and n < 2 ^ 53) then
      argerror(fname, 1, "%s: entry %d must be an integer size, got %s", what, i, type_name(n))
    end
    if n < 0 then argerror(fname, 1, "%s: entry %d must be >= 0, got %d", what, i, n) end
    out[i] = math.tointeger(n)
  end
  if #out + 0 > (gpu._max_dims or 16) then argerror(fname, 1, "%s: too many dimensions (%d)", what, #out) end
  return out
end

-- ---- constraints -------------------------------------------------------------------------------

-- A constraint: text (as errors show it) and ok(x, d) -> a bool array, true where x meets it.
local function constraint(text, ok, extra)
  local c = { text = text, ok = ok }
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end
C.constraint = constraint

local K = {}
C.constraints = K
K.real = constraint("real", function(x) return x:eq(x) end)
K.positive = constraint("positive (> 0)", function(x) return x:gt(0) end)
K.nonnegative = constraint("nonnegative (>= 0)", function(x) return x:ge(0) end)
K.unit_interval = constraint("unit interval [0, 1]", function(x) return gpu.logical_and(x:ge(0), x:le(1)) end)
K.boolean = constraint("boolean (0 or 1)", function(x) return gpu.logical_or(x:eq(0), x:eq(1)) end, { discrete = true })
K.nonnegative_integer = constraint("nonnegative integer", function(x) return gpu.logical_and(x:ge(0), x:eq(x:floor())) end,
  { discrete = true })
K.real_vector = constraint("real vector", function(x) return x:eq(x):all(-1) end, { event_dim = 1 })
-- a vector of nonnegative numbers summing to 1 (within 1e-6, as PyTorch)
K.simplex = constraint("simplex (nonnegative, summing to 1)", function(x)
  return gpu.logical_and(x:ge(0):all(-1), (x:sum(-1) - 1):abs():lt(1e-6))
end, { event_dim = 1 })
K.positive_definite = constraint("positive definite", function(x)
  local sym = (x - x:transpose(-1, -2)):abs():le(1e-6 * (1 + x:abs())):all({ -2, -1 })
  if not pcall(gpu.linalg.cholesky, x) then return false end
  return sym
end, { event_dim = 2 })
K.lower_cholesky = constraint("lower Cholesky (lower triangular, positive diagonal)", function(x)
  local lower = x:eq(gpu.tril(x)):all({ -2, -1 })
  local diag = gpu.diagonal(x, 0, -2, -1):gt(0):all(-1)
  return gpu.logical_and(lower, diag)
end, { event_dim = 2 })
function K.greater_than(lo, text)
  return constraint(text or ("greater than " .. lo), function(x) return x:gt(lo) end)
end
-- [lo, hi) of two arrays (Uniform's support)
function K.half_open(lo, hi)
  return constraint("the interval [low, high)", function(x) return gpu.logical_and(x:ge(lo), x:lt(hi)) end)
end
-- {0, ..., n} (Binomial's support)
function K.integer_interval(n)
  return constraint("integers 0 to total_count", function(x)
    return gpu.logical_and(gpu.logical_and(x:ge(0), x:le(n)), x:eq(x:floor()))
  end, { discrete = true })
end
-- nonnegative integer vectors summing to at most n (Multinomial's support)
function K.multinomial(n)
  return constraint("nonnegative integer vectors summing to total_count", function(x)
    return gpu.logical_and(gpu.logical_and(x:ge(0), x:eq(x:floor())):all(-1), x:sum(-1):le(n))
  end, { discrete = true, event_dim = 1 })
end
K.one_hot = constraint("one-hot vectors", function(x)
  return gpu.logical_and(gpu.logical_or(x:eq(0), x:eq(1)):all(-1), x:sum(-1):eq(1))
end, { discrete = true, event_dim = 1 })
-- 1..K (Categorical's labels, 1-based as every index of gpulua)
function K.categories(k)
  return constraint(("labels 1 to %d"):format(k), function(x)
    return gpu.logical_and(gpu.logical_and(x:ge(1), x:le(k)), x:eq(x:floor()))
  end, { discrete = true })
end

local function all_true(b)
  return gpu.no_grad(function()
    if type(b) == "boolean" then return b end
    return b.size == 0 or b:all():item()
  end)
end

-- check_param(d, name, x, c): raises when validation is on and x breaks the constraint c
function C.check_param(d, name, x, c)
  if not d._validate then return end
  if not all_true(c.ok(x:detach(), d)) then
    raise("gpu.distributions.%s: expected parameter %s (gpu.array of shape %s) to satisfy the constraint %s, but found invalid values",
      d._name, name, shape_str(x.shape), c.text)
  end
end

-- ---- the base class ----------------------------------------------------------------------------

local Distribution = C.class("Distribution")
C.Distribution = Distribution
local P = Distribution._props

Distribution.has_rsample = false
Distribution.has_enumerate_support = false
P.batch_shape = function(d) return C.concat(d._batch) end
P.event_shape = function(d) return C.concat(d._event) end
P.stddev = function(d) return d.variance:sqrt() end
P.mean = function(d) raise("gpu.distributions.%s: mean is not implemented", d._name) end
P.mode = function(d) raise("gpu.distributions.%s: mode is not implemented", d._name) end
P.variance = function(d) raise("gpu.distributions.%s: variance is not implemented", d._name) end
P.dtype = function(d) return d._dtype end
P.device = function(d) return d._device end
P.support = function(d) return d:_support().text end

-- init(d, cls, opts, batch, event): the common fields of a new distribution
function C.init(cls, o, batch, event, dtype, device)
  local d = setmetatable({}, cls)
  rawset(d, "_name", cls._name)
  local v = o.validate_args
  if v == nil then v = C.default_validate end
  rawset(d, "_validate", v)
  rawset(d, "_batch", batch)
  rawset(d, "_event", event or {})
  rawset(d, "_dtype", dtype)
  rawset(d, "_device", device)
  return d
end

function Distribution:_describe()
  local parts = {}
  for _, name in ipairs(self._params or {}) do
    local v = rawget(self, name)
    if is_array(v) then parts[#parts + 1] = ("%s: %s"):format(name, shape_str(v.shape)) end
  end
  return ("%s(%s)"):format(self._name, table.concat(parts, ", "))
end

-- the shape of sample(sample_shape): sample_shape .. batch_shape .. event_shape
function Distribution:_extended(sample_shape)
  return C.concat(sample_shape, self._batch, self._event)
end

function Distribution:_opts()
  return { dtype = self._dtype, device = self._device }
end

function Distribution:rsample(sample_shape)
  raise("gpu.distributions.%s:rsample: the distribution is not reparameterizable (has_rsample is false); use sample",
    self._name)
end

function Distribution:sample(sample_shape)
  local s = C.sample_shape(self._name .. ":sample", sample_shape)
  if self.has_rsample then
    return gpu.no_grad(function() return self:_rsample(s) end)
  end
  return gpu.no_grad(function() return self:_sample(s) end)
end

-- what a family without the method answers (PyTorch's NotImplementedError); the
-- parameters are the method's, so a call with too many is refused as for the others
local function unimplemented(self, what) raise("gpu.distributions.%s:%s is not implemented (as in PyTorch)", self._name, what) end
function Distribution:log_prob(_) unimplemented(self, "log_prob") end
function Distribution:cdf(_) unimplemented(self, "cdf") end
function Distribution:icdf(_) unimplemented(self, "icdf") end
function Distribution:entropy() unimplemented(self, "entropy") end
function Distribution:enumerate_support(_) unimplemented(self, "enumerate_support") end

function Distribution:perplexity() return self:entropy():exp() end

-- expand(batch_shape): the distribution with its parameters broadcast (as views) to a
-- larger batch shape, as PyTorch's expand; validate_args as the original's
function Distribution:expand(batch_shape)
  local fname = self._name .. ":expand"
  local shape = C.sample_shape(fname, batch_shape, "batch_shape")
  local old = self._batch
  local ok = #shape >= #old
  for i = 1, #old do
    local a, b = old[#old - i + 1], shape[#shape - i + 1]
    if ok and a ~= b and a ~= 1 then ok = false end
  end
  if not ok then
    raise("gpu.distributions.%s: batch_shape %s cannot be expanded to %s", fname, shape_str(old), shape_str(shape))
  end
  local d = self:_expand(shape)
  rawset(d, "_validate", self._validate)
  return d
end

function Distribution:_expand(_)
  raise("gpu.distributions.%s:expand is not implemented", self._name)
end

-- value(d, fname, v, support): v (a number or an array) as an array of d's dtype on d's
-- device, whose shape broadcasts with batch_shape .. event_shape; with validation on, every
-- element must lie in support (a constraint; d's support by default)
function C.value(d, fname, v, support)
  local full = "gpu.distributions." .. d._name .. ":" .. fname
  if type(v) == "number" then v = gpu.full({}, v, d:_opts())
  elseif is_array(v) then
    if v:is_closed() then argerror(d._name .. ":" .. fname, 1, "value: the gpu.array is closed") end
    if v.device ~= d._device then
      raise("%s: the value is on %s and the distribution on %s; use :to()", full, v.device, d._device)
    end
    local kind = gpu._dtypes[v.dtype].kind
    if kind == "complex" then argerror(d._name .. ":" .. fname, 1, "value: a real array expected, got %s", v.dtype) end
    if v.dtype ~= d._dtype then v = v:astype(d._dtype) end
  else
    argerror(d._name .. ":" .. fname, 1, "value: a number or a gpu.array expected, got %s", type_name(v))
  end
  local want = C.concat(d._batch, d._event)
  local ev = #d._event
  local vs = v.shape
  if #vs < ev or not same({ table.unpack(vs, #vs - ev + 1) }, d._event) then
    if not (ev == 0) then
      raise("%s: the value's shape %s must end in the event shape %s", full, shape_str(vs), shape_str(d._event))
    end
  end
  -- broadcastable with the batch shape
  local nd = math.max(#vs, #want)
  for i = 1, nd do
    local a, b = vs[#vs - nd + i] or 1, want[#want - nd + i] or 1
    if a ~= b and a ~= 1 and b ~= 1 then
      raise("%s: the value's shape %s does not broadcast with batch_shape .. event_shape %s", full, shape_str(vs),
        shape_str(want))
    end
  end
  if d._validate then
    local c = support or d:_support()
    if not all_true(c.ok(v:detach(), d)) then
      raise("%s: expected value argument (gpu.array of shape %s) to be within the support (%s) of the distribution %s, but found invalid values",
        full, shape_str(vs), c.text, d:_describe())
    end
  end
  return v
end

-- ---- the constructors' arguments ---------------------------------------------------------------

-- args(fname, names, decl, ...): the positional parameters (names) of a constructor, then an
-- optional options table that may also name them ({logits = x}) and holds validate_args.
-- Returns the values by name and the read options.
function C.args(fname, names, decl, ...)
  local n = select("#", ...)
  local vals, o = {}, nil
  for i = 1, n do
    local v = select(i, ...)
    if type(v) == "table" and not is_array(v) and not is_dist(v) and not v._transform then
      if i ~= n then argerror("gpu.distributions." .. fname, i + 1, "nothing may follow the options table") end
      o = decl:check(v, i)
      for _, name in ipairs(names) do
        if o[name] ~= nil then
          if vals[name] ~= nil then
            argerror("gpu.distributions." .. fname, i, "%s given twice (as argument and as option)", name)
          end
          vals[name] = o[name]
        end
      end
      return vals, o
    end
    if i > #names then argerror("gpu.distributions." .. fname, i, "at most %d parameters expected, got %d", #names, i) end
    vals[names[i]] = v
  end
  return vals, decl:check(nil, n + 1)
end

-- probs or logits, exactly one (Bernoulli, Categorical, Binomial, Geometric...)
function C.one_of(fname, vals, a, b)
  if (vals[a] == nil) == (vals[b] == nil) then
    raise("gpu.distributions.%s: either %s or %s must be given, not %s", fname, a, b,
      vals[a] == nil and "neither" or "both")
  end
end

-- ---- what other parts supply ------------------------------------------------------------------

-- special(fname, name): gpu.special's function name (torch.special's), or gpu's own (under
-- PyTorch's other name: lgamma for gammaln)
local ALIASES = { gammaln = "lgamma" }
function C.special(fname, name)
  local ok, sp = pcall(function() return gpu.special end)
  local f = ok and type(sp) == "table" and sp[name] or nil
  if f == nil then f = gpu[name] end
  if f == nil and ALIASES[name] then return C.special(fname, ALIASES[name]) end
  if f == nil then raise("gpu.distributions.%s: needs gpu.special.%s, which this build lacks", fname, name) end
  return f
end

-- rng(fname, name): gpu.random's sampler name
function C.rng(fname, name)
  local f = gpu.random[name]
  if f == nil then raise("gpu.distributions.%s: needs gpu.random.%s, which this build lacks", fname, name) end
  return f
end

-- family(M, name, parent, params, spec) -> cls: a distribution whose parameters are all
-- floats (numbers or arrays): params lists {name, constraint [, default = number]} in
-- PyTorch's order; spec.event = 1 makes the last axis of the parameters the event (Dirichlet);
-- spec.example is the call gpu._options lists; spec.post(d) checks what is left.
function C.family(M, name, parent, params, spec)
  local cls = C.class(name, parent or C.Distribution)
  local keys, names = { validate_args = { type = "boolean" } }, {}
  for i, p in ipairs(params) do
    keys[p[1]] = { type = "number|array", what = "a number or a gpu.array" }
    names[i] = p[1]
  end
  local fname = "gpu.distributions." .. name
  local decl = options.declare(fname, keys, { example = spec.example })
  cls._params = names
  M[name] = options.counted(fname, function(...)
    local v, o = C.args(name, names, decl, ...)
    local list = {}
    for i, p in ipairs(params) do
      local x = v[p[1]]
      if x == nil then x = p.default end
      list[i] = { p[1], x, i }
    end
    local arrs, shape, dtype, device = C.floats(name, list, { min_ndim = spec.event })
    local batch, event = shape, {}
    if spec.event then
      batch, event = { table.unpack(shape, 1, #shape - 1) }, { shape[#shape] }
    end
    local d = C.init(cls, o, batch, event, dtype, device)
    for _, p in ipairs(params) do
      local x = C.expand(arrs[p[1]], shape)
      rawset(d, p[1], x)
      C.check_param(d, p[1], x, p[2])
    end
    if spec.post then spec.post(d) end
    return d
  end, #params + 1)
  local ctor = M[name]
  function cls:_expand(shape)
    local args = {}
    for i, p in ipairs(params) do args[i] = C.expand(rawget(self, p[1]), C.concat(shape, self._event)) end
    args[#args + 1] = { validate_args = false }
    return ctor(table.unpack(args))
  end
  return cls
end

-- mahalanobis(L, x): |L^-1 x|^2 over the last axis, for a lower-triangular L (..., n, n) and
-- x (..., n) whose batch axes broadcast
function C.mahalanobis(L, x)
  local batch = C.broadcast("mahalanobis", { { table.unpack(L.shape, 1, L.ndim - 2) }, { table.unpack(x.shape, 1, x.ndim - 1) } })
  local n = x.shape[x.ndim]
  local y = gpu.linalg.solve(C.expand(L, C.concat(batch, { n, n })), C.expand(x, C.concat(batch, { n })):unsqueeze(-1))
  return (y:squeeze(-1) ^ 2):sum(-1)
end

-- standard_gamma(fname, alpha): a Gamma(alpha, 1) draw per element of alpha (gpu.random's
-- sampler), differentiable in alpha as PyTorch's rsample: the implicit derivative
-- dx/dalpha = -(dF/dalpha) / f(x) of the gamma CDF F = gammainc(alpha, x) held at the drawn
-- quantile, dF/dalpha by a central difference in float64 (relative step 1e-5)
function C.standard_gamma(fname, alpha)
  local sg = C.rng(fname, "standard_gamma")
  local a = alpha:detach()
  local x = gpu.no_grad(function() return C.call_standard_gamma(sg, a) end)
  local ag = require "gpu.autograd"
  if not ag.tracked(alpha) then return x end
  local gammainc, lgamma = C.special(fname, "gammainc"), C.special(fname, "gammaln")
  return ag.record(x, { alpha }, function(g)
    local a64, x64 = a:astype("float64"), x:detach():astype("float64")
    local h = a64 * 1e-5
    local dF = (gammainc(a64 + h, x64) - gammainc(a64 - h, x64)) / (h * 2)
    local logpdf = (a64 - 1) * x64:log() - x64 - lgamma(a64)
    local dx = -dF / logpdf:exp()
    dx = gpu.where(dx:isfinite(), dx, 0)
    return g * dx:astype(g.dtype)
  end)
end

-- gpu.random's samplers called with arrays of parameters, one draw per element, in the
-- distribution's dtype
function C.call_standard_gamma(sg, a) return sg(a):astype(a.dtype) end
function C.sample_binomial(f, n, p) return f(n, p):astype(p.dtype) end
function C.sample_poisson(f, rate) return f(rate):astype(rate.dtype) end

return C
