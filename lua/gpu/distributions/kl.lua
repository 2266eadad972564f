-- kl_divergence(p, q) for the pairs PyTorch registers among gpu.distributions' families
-- (torch.distributions.kl), and register_kl(P, Q, fn) for more. A pair is looked up along
-- both classes' parents (Chi2 is a Gamma, LogNormal a TransformedDistribution), the
-- nearest p class first. Written in array ops: differentiable in both distributions.
local gpu = require "gpu"
local options = require "gpu.options"
local C = require "gpu.distributions.core"
local T = require "gpu.distributions.transforms"

local raise, argerror, type_name = options.raise, options.argerror, options.type_name
local EULER = 0.57721566490153286061
local INF = math.huge

return function(M, classes)
  local registry = {}                              -- class p -> class q -> fn

  local function class_of(name) return classes[name] end

  -- register_kl(P, Q, fn): fn(p, q) computes KL(p || q) for instances of the classes named
  -- (or given) P and Q and their subclasses
  function M.register_kl(P, Q, fn)
    local function cls(v, argn)
      local c = type(v) == "string" and class_of(v) or (type(v) == "table" and rawget(v, "_name") and v) or nil
      if c == nil then argerror("gpu.distributions.register_kl", argn, "a distribution class or its name expected, got %s", type_name(v)) end
      return c
    end
    local cp, cq = cls(P, 1), cls(Q, 2)
    if type(fn) ~= "function" then argerror("gpu.distributions.register_kl", 3, "a function expected, got %s", type_name(fn)) end
    registry[cp] = registry[cp] or {}
    registry[cp][cq] = fn
  end

  local function lookup(p, q)
    local cp = getmetatable(p)
    while cp ~= nil do
      local row = registry[cp]
      if row then
        local cq = getmetatable(q)
        while cq ~= nil do
          if row[cq] then return row[cq] end
          cq = rawget(cq, "_parent")
        end
      end
      cp = rawget(cp, "_parent")
    end
  end

  function M.kl_divergence(p, q)
    if not C.is_dist(p) then argerror("gpu.distributions.kl_divergence", 1, "p: a distribution expected, got %s", type_name(p)) end
    if not C.is_dist(q) then argerror("gpu.distributions.kl_divergence", 2, "q: a distribution expected, got %s", type_name(q)) end
    local fn = lookup(p, q)
    if fn == nil then
      raise("gpu.distributions.kl_divergence: no KL divergence is registered for (%s, %s)", p._name, q._name)
    end
    if p._device ~= q._device then
      raise("gpu.distributions.kl_divergence: p is on %s and q on %s; use :to()", p._device, q._device)
    end
    return fn(p, q)
  end

  local function sp(name) return C.special("kl_divergence", name) end
  local function reg(a, b, fn) M.register_kl(a, b, fn) end
  local function where(c, a, b) return gpu.where(c, a, b) end

  reg("Bernoulli", "Bernoulli", function(p, q)
    local t1 = p.probs * (gpu.softplus(-q.logits) - gpu.softplus(-p.logits))
    t1 = where(q.probs:eq(0), INF, t1)
    t1 = where(p.probs:eq(0), 0, t1)
    local t2 = (1 - p.probs) * (gpu.softplus(q.logits) - gpu.softplus(p.logits))
    t2 = where(q.probs:eq(1), INF, t2)
    t2 = where(p.probs:eq(1), 0, t2)
    return t1 + t2
  end)

  reg("Beta", "Beta", function(p, q)
    local lgamma, digamma = sp("gammaln"), sp("digamma")
    local sp_, sq = p.concentration1 + p.concentration0, q.concentration1 + q.concentration0
    local t1 = lgamma(q.concentration1) + lgamma(q.concentration0) + lgamma(sp_)
    local t2 = lgamma(p.concentration1) + lgamma(p.concentration0) + lgamma(sq)
    local t3 = (p.concentration1 - q.concentration1) * digamma(p.concentration1)
    local t4 = (p.concentration0 - q.concentration0) * digamma(p.concentration0)
    local t5 = (sq - sp_) * digamma(sp_)
    return t1 - t2 + t3 + t4 + t5
  end)

  reg("Binomial", "Binomial", function(p, q)
    local less = gpu.no_grad(function() return p.total_count:lt(q.total_count):any():item() end)
    if less then raise("gpu.distributions.kl_divergence: Binomial with p.total_count < q.total_count is not implemented (as in PyTorch)") end
    local n = p.total_count
    local kl = n * (p.probs * (p.logits - q.logits) + (-p.probs):log1p() - (-q.probs):log1p())
    return where(p.total_count:gt(q.total_count), INF, kl)
  end)

  local function categorical(p, q)
    local t = p.probs * (p.logits - q.logits)
    t = where(q.probs:eq(0), INF, t)
    t = where(p.probs:eq(0), 0, t)
    return t:sum(-1)
  end
  reg("Categorical", "Categorical", categorical)
  reg("OneHotCategorical", "OneHotCategorical", function(p, q) return categorical(p._categorical, q._categorical) end)

  reg("Dirichlet", "Dirichlet", function(p, q)
    local lgamma, digamma = sp("gammaln"), sp("digamma")
    local a, b = p.concentration, q.concentration
    local sa, sb = a:sum(-1), b:sum(-1)
    local t1 = lgamma(sa) - lgamma(sb)
    local t2 = (lgamma(a) - lgamma(b)):sum(-1)
    local t3 = a - b
    local t4 = digamma(a) - digamma(sa):unsqueeze(-1)
    return t1 - t2 + (t3 * t4):sum(-1)
  end)

  reg("Exponential", "Exponential", function(p, q)
    local r = q.rate / p.rate
    return -r:log() + r - 1
  end)

  reg("Gamma", "Gamma", function(p, q)
    local lgamma, digamma = sp("gammaln"), sp("digamma")
    local t1 = q.concentration * (p.rate / q.rate):log()
    local t2 = lgamma(q.concentration) - lgamma(p.concentration)
    local t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    local t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4
  end)

  reg("Gumbel", "Gumbel", function(p, q)
    local lgamma = sp("gammaln")
    local ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    local t1 = -ct1:log() - ct2 + ct3
    local t2 = ct1 * EULER
    local t3 = (ct2 + lgamma(ct1 + 1) - ct3):exp()
    return t1 + t2 + t3 - (1 + EULER)
  end)

  reg("Geometric", "Geometric", function(p, q)
    return -p:entropy() - (-q.probs):log1p() / p.probs - q.logits
  end)

  reg("HalfNormal", "HalfNormal", function(p, q)
    local v = (p.scale / q.scale) ^ 2
    return (v - 1 - v:log()) * 0.5
  end)

  reg("Laplace", "Laplace", function(p, q)
    local ratio = p.scale / q.scale
    local diff = (p.loc - q.loc):abs()
    return -ratio:log() + diff / q.scale + ratio * (-diff / p.scale):exp() - 1
  end)

  reg("Normal", "Normal", function(p, q)
    local v = (p.scale / q.scale) ^ 2
    local t1 = ((p.loc - q.loc) / q.scale) ^ 2
    return (v + t1 - 1 - v:log()) * 0.5
  end)

  reg("Poisson", "Poisson", function(p, q)
    return p.rate * (p.rate:log() - q.rate:log()) - (p.rate - q.rate)
  end)

  reg("Uniform", "Uniform", function(p, q)
    local r = ((q.high - q.low) / (p.high - p.low)):log()
    return where(gpu.logical_or(q.low:gt(p.low), q.high:lt(p.high)), INF, r)
  end)

  reg("Cauchy", "Cauchy", function(p, q)
    local t1 = ((p.scale + q.scale) ^ 2 + (p.loc - q.loc) ^ 2):log()
    local t2 = (p.scale * q.scale * 4):log()
    return t1 - t2
  end)

  reg("MultivariateNormal", "MultivariateNormal", function(p, q)
    if not C.same_shape(p._event, q._event) then
      raise("gpu.distributions.kl_divergence: MultivariateNormals of different event shapes %s and %s",
        options.shape_str(p._event), options.shape_str(q._event))
    end
    local n = p._event[1]
    local diag = function(L) return gpu.diagonal(L, 0, -2, -1) end
    local half1 = diag(q._scale_tril):log():sum(-1) - diag(p._scale_tril):log():sum(-1)
    local batch = C.broadcast("kl_divergence", { q._scale_tril.shape, p._scale_tril.shape }, "scale_tril")
    local ql, pl = C.expand(q._scale_tril, batch), C.expand(p._scale_tril, batch)
    local term2 = (gpu.linalg.solve(ql, pl) ^ 2):sum({ -2, -1 })
    local term3 = C.mahalanobis(q._scale_tril, q.loc - p.loc)
    return half1 + (term2 + term3 - n) * 0.5
  end)

  reg("TransformedDistribution", "TransformedDistribution", function(p, q)
    local same = #p.transforms == #q.transforms
    for i = 1, #p.transforms do same = same and T.same(p.transforms[i], q.transforms[i]) end
    if not same then raise("gpu.distributions.kl_divergence: TransformedDistributions of different transforms are not implemented (as in PyTorch)") end
    if not C.same_shape(p._event, q._event) then
      raise("gpu.distributions.kl_divergence: TransformedDistributions of different event shapes are not implemented (as in PyTorch)")
    end
    local kl = M.kl_divergence(p.base_dist, q.base_dist)
    return T.sum_rightmost(kl, #p._event - #p.base_dist._event)
  end)

  reg("Independent", "Independent", function(p, q)
    if p.reinterpreted_batch_ndims ~= q.reinterpreted_batch_ndims then
      raise("gpu.distributions.kl_divergence: Independents of different reinterpreted_batch_ndims are not implemented (as in PyTorch)")
    end
    return T.sum_rightmost(M.kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
  end)

  -- the pairs whose KL is infinite (p's support reaches where q has no mass)
  local function infinity(p, _) return gpu.full(p._batch, INF, p:_opts()) end
  for _, pair in ipairs {
    { "Exponential", "Beta" }, { "Exponential", "Uniform" }, { "Gamma", "Beta" }, { "Gamma", "Uniform" },
    { "Gumbel", "Beta" }, { "Gumbel", "Exponential" }, { "Gumbel", "Gamma" }, { "Gumbel", "Uniform" },
    { "Laplace", "Beta" }, { "Laplace", "Exponential" }, { "Laplace", "Gamma" }, { "Laplace", "Uniform" },
    { "Normal", "Beta" }, { "Normal", "Exponential" }, { "Normal", "Gamma" }, { "Normal", "Uniform" },
    { "Poisson", "Bernoulli" }, { "Poisson", "Binomial" },
  } do reg(pair[1], pair[2], infinity) end

  reg("Bernoulli", "Poisson", function(p, q)
    return -p:entropy() - (p.probs * q.rate:log() - q.rate)
  end)

  local function x_log_x(x) return x * x:log() end

  reg("Beta", "Exponential", function(p, q)
    return -p:entropy() - q.rate:log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))
  end)
  reg("Beta", "Gamma", function(p, q)
    local lgamma, digamma = sp("gammaln"), sp("digamma")
    local a, b = p.concentration1, p.concentration0
    local t2 = lgamma(q.concentration) - q.concentration * q.rate:log()
    local t3 = (q.concentration - 1) * (digamma(a) - digamma(a + b))
    local t4 = q.rate * a / (a + b)
    return -p:entropy() + t2 - t3 + t4
  end)
  reg("Beta", "Normal", function(p, q)
    local a, b = p.concentration1, p.concentration0
    local e = a / (a + b)
    local var = q.scale ^ 2
    local t2 = (var * (2 * math.pi)):log() * 0.5
    local t3 = (e * (1 - e) / (a + b + 1) + e ^ 2) * 0.5
    return -p:entropy() + t2 + (t3 - q.loc * e + q.loc ^ 2 * 0.5) / var
  end)
  reg("Beta", "Uniform", function(p, q)
    local r = -p:entropy() + (q.high - q.low):log()
    return where(gpu.logical_or(q.low:gt(0), q.high:lt(1)), INF, r)
  end)

  reg("Exponential", "Gamma", function(p, q)
    local lgamma = sp("gammaln")
    local ratio = q.rate / p.rate
    return -q.concentration * ratio:log() + ratio + lgamma(q.concentration) + q.concentration * EULER - (1 + EULER)
  end)
  reg("Exponential", "Gumbel", function(p, q)
    local sr = p.rate * q.scale
    local lsr = q.loc / q.scale
    return sr:log() - 1 - lsr + lsr:exp() * sr / (sr + 1) + sr:reciprocal()
  end)
  reg("Exponential", "Normal", function(p, q)
    local var = q.scale ^ 2
    local r2 = p.rate ^ 2
    local t1 = (r2 * var * (2 * math.pi)):log() * 0.5
    return t1 - 1 + (r2:reciprocal() - q.loc / p.rate + q.loc ^ 2 * 0.5) / var
  end)

  reg("Gamma", "Exponential", function(p, q)
    return -p:entropy() - q.rate:log() + q.rate * p.concentration / p.rate
  end)
  reg("Gamma", "Gumbel", function(p, q)
    local lgamma, digamma = sp("gammaln"), sp("digamma")
    local a = p.concentration
    local bs = p.rate * q.scale
    local lsr = q.loc / q.scale
    local t1 = (a - 1) * digamma(a) - lgamma(a) - a
    local t2 = bs:log() + a / bs
    local t3 = lsr:exp() * (bs:reciprocal() + 1) ^ -a - lsr
    return t1 + t2 + t3
  end)
  reg("Gamma", "Normal", function(p, q)
    local lgamma, digamma = sp("gammaln"), sp("digamma")
    local a = p.concentration
    local var = q.scale ^ 2
    local b2 = p.rate ^ 2
    local t1 = (b2 * var * (2 * math.pi)):log() * 0.5 - a - lgamma(a)
    local t2 = (a ^ 2 + a) * 0.5 / b2
    local t3 = q.loc * a / p.rate
    return t1 + (a - 1) * digamma(a) + (t2 - t3 + q.loc ^ 2 * 0.5) / var
  end)

  reg("Gumbel", "Normal", function(p, q)
    local r = p.scale / q.scale
    local t1 = (r / math.sqrt(2 * math.pi)):log()
    local t2 = (r * (math.pi * 0.5)) ^ 2 / 3
    local t3 = ((p.loc + p.scale * EULER - q.loc) / q.scale) ^ 2 * 0.5
    return -t1 + t2 + t3 - (EULER + 1)
  end)

  reg("Laplace", "Normal", function(p, q)
    local var = q.scale ^ 2
    local ratio = p.scale ^ 2 / var
    local t1 = (ratio * (2 / math.pi)):log() * 0.5
    return -t1 + ratio + (p.loc ^ 2 * 0.5 - p.loc * q.loc + q.loc ^ 2 * 0.5) / var - 1
  end)

  reg("Normal", "Gumbel", function(p, q)
    local msr = p.loc / q.scale
    local vr = (p.scale / q.scale) ^ 2
    local lsr = q.loc / q.scale
    local t1 = vr:log() * 0.5
    local t2 = msr - lsr
    local t3 = (-msr + vr * 0.5 + lsr):exp()
    return -t1 + t2 + t3 - 0.5 * (1 + math.log(2 * math.pi))
  end)
  reg("Normal", "Laplace", function(p, q)
    local diff = p.loc - q.loc
    local ratio = p.scale / q.scale
    local dr = diff / p.scale
    local t2 = p.scale * math.sqrt(2 / math.pi) * ((dr ^ 2) * -0.5):exp()
    local t3 = diff * gpu.erf(dr * math.sqrt(0.5))
    return -ratio:log() + (t2 + t3) / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))
  end)

  reg("Uniform", "Beta", function(p, q)
    local lgamma = sp("gammaln")
    local c = p.high - p.low
    local t1 = c:log()
    local t2 = (q.concentration1 - 1) * (x_log_x(p.high) - x_log_x(p.low) - c) / c
    local t3 = (q.concentration0 - 1) * (x_log_x(1 - p.high) - x_log_x(1 - p.low) + c) / c
    local t4 = lgamma(q.concentration1) + lgamma(q.concentration0) - lgamma(q.concentration1 + q.concentration0)
    return where(gpu.logical_or(p.high:gt(1), p.low:lt(0)), INF, t3 + t4 - t1 - t2)
  end)
  reg("Uniform", "Exponential", function(p, q)
    local r = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate):log()
    return where(p.low:lt(0), INF, r)
  end)
  reg("Uniform", "Gamma", function(p, q)
    local lgamma = sp("gammaln")
    local c = p.high - p.low
    local t2 = lgamma(q.concentration) - q.concentration * q.rate:log()
    local t3 = (1 - q.concentration) * (x_log_x(p.high) - x_log_x(p.low) - c) / c
    local t4 = q.rate * (p.high + p.low) / 2
    return where(p.low:lt(0), INF, -c:log() + t2 + t3 + t4)
  end)
  reg("Uniform", "Gumbel", function(p, q)
    local c = q.scale / (p.high - p.low)
    local hd, ld = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    local t1 = c:log() + (hd + ld) * 0.5
    local t2 = c * ((-hd):exp() - (-ld):exp())
    return t1 - t2
  end)
  reg("Uniform", "Normal", function(p, q)
    local c = p.high - p.low
    local t1 = (q.scale * math.sqrt(math.pi * 2) / c):log()
    local t2 = c ^ 2 / 12
    local t3 = ((p.high + p.low - q.loc * 2) / 2) ^ 2
    return t1 + (t2 + t3) * 0.5 / q.scale ^ 2
  end)
end
