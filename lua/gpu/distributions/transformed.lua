-- TransformedDistribution (torch.distributions.TransformedDistribution) and Independent: a
-- distribution made of another one. TransformedDistribution(base, transforms) samples
-- base and maps each draw through the transforms in order; log_prob walks them back,
-- subtracting each log |det J|; cdf and icdf need monotone transforms of one variable
-- (their sign says whether the map reverses the order).
local gpu = require "gpu"
local options = require "gpu.options"
local C = require "gpu.distributions.core"
local T = require "gpu.distributions.transforms"

local raise, argerror, type_name = options.raise, options.argerror, options.type_name
local sum_rightmost = T.sum_rightmost

return function(M)
  local Distribution = C.Distribution

  -- ---- TransformedDistribution --------------------------------------------------------------

  local TD = C.class("TransformedDistribution", Distribution)
  C.TransformedDistribution = TD
  local P = TD._props
  local TDDECL = options.declare("gpu.distributions.TransformedDistribution", { validate_args = { type = "boolean" } },
    { example = "gpu.distributions.TransformedDistribution(gpu.distributions.Normal(0, 1), {}, %s)" })

  -- init(cls, base, transforms, o): a TransformedDistribution (or a class made from it)
  function C.transformed(cls, base, transforms, o)
    local shape = C.concat(base._batch, base._event)
    local ed = #base._event
    for _, t in ipairs(transforms) do ed = math.max(ed, t.event_dim) end
    if ed > #shape then
      raise("gpu.distributions.%s: a transform of event_dim %d needs a base distribution of at least %d dimensions, got shape %s",
        cls._name, ed, ed, options.shape_str(shape))
    end
    local batch, event = { table.unpack(shape, 1, #shape - ed) }, { table.unpack(shape, #shape - ed + 1) }
    local d = C.init(cls, o, batch, event, base._dtype, base._device)
    rawset(d, "base_dist", base)
    rawset(d, "transforms", transforms)
    return d
  end

  M.TransformedDistribution = options.counted("gpu.distributions.TransformedDistribution", function(base, transforms, opts)
    local fname = "gpu.distributions.TransformedDistribution"
    if not C.is_dist(base) then argerror(fname, 1, "base_distribution: a distribution expected, got %s", type_name(base)) end
    local list
    if T.is_transform(transforms) then list = { transforms }
    elseif type(transforms) == "table" and not options.is_array(transforms) then
      list = {}
      for i, t in ipairs(transforms) do
        if not T.is_transform(t) then argerror(fname, 2, "transforms: entry %d is not a transform (%s)", i, type_name(t)) end
        list[i] = t
      end
    else
      argerror(fname, 2, "transforms: a transform or a list of transforms expected, got %s", type_name(transforms))
    end
    return C.transformed(TD, base, list, TDDECL:check(opts, 3))
  end)

  TD.has_rsample = nil
  P.has_rsample = function(d) return d.base_dist.has_rsample end

  local function forward(d, x)
    for _, t in ipairs(d.transforms) do x = t(x) end
    return x
  end
  function TD:_rsample(s) return forward(self, self.base_dist:_rsample(s)) end
  function TD:_sample(s)
    local base = self.base_dist
    return forward(self, base.has_rsample and base:_rsample(s) or base:_sample(s))
  end
  function TD:rsample(sample_shape)
    if not self.has_rsample then return Distribution.rsample(self, sample_shape) end
    return self:_rsample(C.sample_shape(self._name .. ":rsample", sample_shape))
  end
  function TD:sample(sample_shape)
    local s = C.sample_shape(self._name .. ":sample", sample_shape)
    return gpu.no_grad(function() return self:_sample(s) end)
  end

  function TD:_support() return C.constraints.real end
  -- the base expanded to the new batch shape (and the base's own batch axes that are events here)
  function TD:_expand(shape)
    local base = self.base_dist
    local extra = { table.unpack(base._batch, #self._batch + 1) }
    return C.transformed(TD, base:expand(C.concat(shape, extra)), self.transforms, { validate_args = false })
  end

  function TD:log_prob(value)
    local y = C.value(self, "log_prob", value, self:_support())
    local ed = #self._event
    local lp = 0
    for i = #self.transforms, 1, -1 do
      local t = self.transforms[i]
      local x = t.inv(y)
      lp = lp - sum_rightmost(t:log_abs_det_jacobian(x, y), ed - t.event_dim)
      y = x
    end
    return lp + sum_rightmost(self.base_dist:log_prob(y), ed - #self.base_dist._event)
  end

  -- the sign of the whole map: +1, -1, or an error when it is not monotone
  local function monotone(d, fname)
    local s = 1
    for _, t in ipairs(d.transforms) do
      if t._sign_unknown or not t.bijective or t.event_dim ~= 0 then
        raise("gpu.distributions.%s:%s needs monotone transforms of one variable (%s is not)", d._name, fname, t._name)
      end
      s = s * t.sign
    end
    return s
  end

  function TD:cdf(value)
    local s = monotone(self, "cdf")
    local y = C.value(self, "cdf", value, self:_support())
    for i = #self.transforms, 1, -1 do y = self.transforms[i].inv(y) end
    local p = self.base_dist:cdf(y)
    return s == 1 and p or 1 - p
  end

  function TD:icdf(q)
    local s = monotone(self, "icdf")
    q = C.value(self, "icdf", q, C.constraints.unit_interval)
    if s == -1 then q = 1 - q end
    return forward(self, self.base_dist:icdf(q))
  end

  -- ---- Independent --------------------------------------------------------------------------

  local Ind = C.class("Independent", Distribution)
  C.Independent = Ind
  local IP = Ind._props
  local INDDECL = options.declare("gpu.distributions.Independent", { validate_args = { type = "boolean" } },
    { example = "gpu.distributions.Independent(gpu.distributions.Normal(gpu.zeros(2), 1), 1, %s)" })

  -- Independent(base, reinterpreted_batch_ndims): the last n batch axes of base read as event axes
  M.Independent = options.counted("gpu.distributions.Independent", function(base, n, opts)
    local fname = "gpu.distributions.Independent"
    if not C.is_dist(base) then argerror(fname, 1, "base_distribution: a distribution expected, got %s", type_name(base)) end
    if math.type(n) ~= "integer" then
      argerror(fname, 2, "reinterpreted_batch_ndims: an integer expected, got %s", type_name(n))
    end
    if n < 0 or n > #base._batch then
      raise("%s: reinterpreted_batch_ndims %d must be between 0 and the base's batch dimensions (%d, batch_shape %s)",
        fname, n, #base._batch, options.shape_str(base._batch))
    end
    local o = INDDECL:check(opts, 3)
    local nb = #base._batch - n
    local d = C.init(Ind, o, { table.unpack(base._batch, 1, nb) },
      C.concat({ table.unpack(base._batch, nb + 1) }, base._event), base._dtype, base._device)
    rawset(d, "base_dist", base)
    rawset(d, "reinterpreted_batch_ndims", n)
    return d
  end)

  Ind.has_rsample = nil
  IP.has_rsample = function(d) return d.base_dist.has_rsample end
  IP.mean = function(d) return d.base_dist.mean end
  IP.mode = function(d) return d.base_dist.mode end
  IP.variance = function(d) return d.base_dist.variance end
  function Ind:_support() return self.base_dist:_support() end
  function Ind:_rsample(s) return self.base_dist:_rsample(s) end
  function Ind:_sample(s) return self.base_dist:_sample(s) end
  function Ind:rsample(sample_shape) return self.base_dist:rsample(sample_shape) end
  function Ind:sample(sample_shape) return self.base_dist:sample(sample_shape) end
  function Ind:_expand(shape)
    local base = self.base_dist
    local extra = { table.unpack(base._batch, #base._batch - self.reinterpreted_batch_ndims + 1) }
    return M.Independent(base:expand(C.concat(shape, extra)), self.reinterpreted_batch_ndims, { validate_args = false })
  end
  function Ind:log_prob(value)
    return sum_rightmost(self.base_dist:log_prob(value), self.reinterpreted_batch_ndims)
  end
  function Ind:entropy()
    return sum_rightmost(self.base_dist:entropy(), self.reinterpreted_batch_ndims)
  end
end
