-- spec/distributions_spec.lua — gpu.distributions against PyTorch's torch.distributions:
-- log_prob, cdf, icdf, entropy, moments, shapes, enumerate_support and kl_divergence from the
-- fixtures of spec/fixtures/gen_distributions_fixtures.py (float64, on every device); the
-- samples' moments at a fixed seed; rsample's and log_prob's gradients (gradcheck); and the
-- errors of validate_args and of misuse.
local h = require "spec.helper"
local gpu = h.gpu
local D = gpu.distributions
local ag = require "gpu.autograd"
local F = dofile("spec/fixtures/distributions.lua")

local TOL = 1e-8

local has_special
function has_special(name)
  local ok, sp = pcall(function() return gpu.special end)
  if (ok and type(sp) == "table" and sp[name] ~= nil) or gpu[name] ~= nil then return true end
  return name == "gammaln" and has_special("lgamma")
end

-- a fixture's argument as the spec passes it: arrays of float64 on dev, integers as they are
local function arg(x, dev, dtype)
  if math.type(x) == "integer" then return x end
  if type(x) == "number" then return gpu.full({}, x, { dtype = dtype or "float64", device = dev }) end
  return gpu.array(x, { dtype = dtype or "float64", device = dev })
end

local function build(name, args, kw, dev, dtype)
  local a = {}
  for i, x in ipairs(args) do a[i] = arg(x, dev, dtype) end
  if kw then
    local o = {}
    for k, x in pairs(kw) do o[k] = arg(x, dev, dtype) end
    a[#a + 1] = o
  end
  return D[name](table.unpack(a, 1, #a))
end

local function close(got, want, what, tol)
  local ok, msg = h.close(got:to("cpu"), want, tol or TOL)
  assert(ok, what .. ": " .. tostring(msg))
end


-- what gpu.special must supply for a family's log_prob, entropy or kl (gpu.special lands
-- beside this part: a case whose function is missing is pending, not passed)
local NEEDS = {
  Gamma = { "gammaln", "digamma", "xlogy", "gammainc" }, Chi2 = { "gammaln", "digamma", "xlogy", "gammainc" },
  Beta = { "gammaln", "digamma", "xlogy" }, Dirichlet = { "gammaln", "digamma", "xlogy" },
  StudentT = { "gammaln", "digamma" }, Binomial = { "gammaln" }, Poisson = { "gammaln", "xlogy" },
  Multinomial = { "gammaln" }, Gumbel = { "gammaln" },
}
local function ready(...)
  for _, name in ipairs { ... } do
    for _, f in ipairs(NEEDS[name] or {}) do if not has_special(f) then return pending end end
  end
  return it
end

for _, dev in ipairs(h.devices()) do
  describe("gpu.distributions against PyTorch on " .. dev, function()
    for _, c in ipairs(F.cases) do
      local run = c.name == "Gumbel" and it or ready(c.name)
      run(c.label .. ": log_prob, cdf, entropy, moments and shapes", function()
        local d = build(c.name, c.args, c.kw, dev)
        assert.same(c.batch_shape, d.batch_shape)
        assert.same(c.event_shape, d.event_shape)
        assert.equal("float64", d.dtype)
        local v = gpu.array(c.value, { dtype = "float64", device = dev })
        close(d:log_prob(v), c.log_prob, "log_prob")
        if c.cdf then close(d:cdf(v), c.cdf, "cdf") end
        if c.entropy then close(d:entropy(), c.entropy, "entropy") end
        for _, p in ipairs { "mean", "mode", "variance", "stddev" } do
          if c[p] then close(d[p], c[p], p) end
        end
        if c.support then close(d:enumerate_support(), c.support, "enumerate_support") end
      end)
      run(c.label .. ": the same in float32 (within 1e-4)", function()
        local d = build(c.name, c.args, c.kw, dev, "float32")
        assert.equal("float32", d.dtype)
        local v = gpu.array(c.value, { dtype = "float32", device = dev })
        local lp = d:log_prob(v)
        assert.equal("float32", lp.dtype)
        close(lp, c.log_prob, "log_prob", 1e-4)
        if c.entropy then close(d:entropy(), c.entropy, "entropy", 1e-4) end
        if c.cdf then close(d:cdf(v), c.cdf, "cdf", 1e-4) end
      end)
      if c.icdf then
        local needs_erfinv = ({ Normal = true, LogNormal = true, HalfNormal = true })[c.name]
        local run_icdf = (needs_erfinv and not has_special("erfinv")) and pending or it
        run_icdf(c.label .. ": icdf", function()
          local d = build(c.name, c.args, c.kw, dev)
          close(d:icdf(gpu.array(c.q, { dtype = "float64", device = dev })), c.icdf, "icdf", 1e-7)
        end)
      end
    end

    for i, k in ipairs(F.kl) do
      local run = ready(k.p, k.q)
      if (k.p == "Uniform" or k.p == "Exponential") and k.q == "Gumbel" then run = it end
      if k.p == "Normal" and k.q == "Gumbel" or k.p == "Gumbel" and k.q == "Normal" then run = it end
      run(("kl_divergence(%s, %s) #%d"):format(k.p, k.q, i), function()
        local p, q = build(k.p, k.p_args, nil, dev), build(k.q, k.q_args, nil, dev)
        close(D.kl_divergence(p, q), k.kl, "kl")
      end)
    end
  end)

  -- moments of 20000 draws at seed 1: each sample mean within 5 standard errors of the mean
  -- (sd / sqrt(n)), each sample variance within 10% of the variance (15% for heavy tails), in
  -- float64; the draws lie in the support and have the shape sample_shape .. batch .. event
  describe("gpu.distributions' samples on " .. dev, function()
    local N = 20000
    local o = { dtype = "float64", device = dev }
    local function a(x) return gpu.array(x, o) end
    local cases = {
      { "Normal", function() return D.Normal(a { 0.5, -2 }, a { 1, 3 }) end },
      { "Uniform", function() return D.Uniform(a { 0, -1 }, a { 1, 3 }) end },
      { "Exponential", function() return D.Exponential(a { 0.5, 2 }) end },
      { "Laplace", function() return D.Laplace(a { 0, 1 }, a { 1, 0.5 }) end },
      { "Gumbel", function() return D.Gumbel(a { 0, 1 }, a { 1, 2 }) end },
      { "LogNormal", function() return D.LogNormal(a { 0, 0.5 }, a { 0.5, 0.25 }) end, 0.15 },
      { "HalfNormal", function() return D.HalfNormal(a { 1, 2.5 }) end },
      { "Bernoulli", function() return D.Bernoulli(a { 0.2, 0.7 }) end },
      { "Geometric", function() return D.Geometric(a { 0.3, 0.8 }) end },
      { "Categorical", function() return D.Categorical(a { { 0.2, 0.3, 0.5 } }) end, nil,
        function(x) return x:astype("float64") end, { 2.3 }, { 0.61 } },
      { "OneHotCategorical", function() return D.OneHotCategorical(a { 0.2, 0.3, 0.5 }) end },
      { "MultivariateNormal", function() return D.MultivariateNormal(a { 1, -1 }, a { { 2, 0.6 }, { 0.6, 1 } }) end },
      { "Gamma", function() return D.Gamma(a { 0.5, 3 }, a { 1, 2 }) end, nil, nil, nil, nil, "standard_gamma" },
      { "Chi2", function() return D.Chi2(a { 1, 5 }) end, 0.15, nil, nil, nil, "standard_gamma" },
      { "Beta", function() return D.Beta(a { 0.5, 2 }, a { 1.5, 3 }) end, nil, nil, nil, nil, "standard_gamma" },
      { "Dirichlet", function() return D.Dirichlet(a { 0.5, 1, 2 }) end, nil, nil, nil, nil, "standard_gamma" },
      { "StudentT", function() return D.StudentT(a { 5, 9 }, 0, a { 1, 2 }) end, 0.15, nil, nil, nil, "standard_gamma" },
      { "Poisson", function() return D.Poisson(a { 0.5, 4 }) end, nil, nil, nil, nil, "poisson" },
      { "Binomial", function() return D.Binomial(a { 5, 20 }, a { 0.3, 0.6 }) end, nil, nil, nil, nil, "binomial" },
      { "Multinomial", function() return D.Multinomial(6, a { 0.2, 0.3, 0.5 }) end },
    }
    for _, c in ipairs(cases) do
      local name, make, vtol, map, mean, var, needs = c[1], c[2], c[3] or 0.10, c[4], c[5], c[6], c[7]
      local run = (needs == nil or gpu.random[needs] ~= nil) and it or pending
      run(name .. ": moments of 20000 draws at seed 1", function()
        gpu.random.seed(1)
        local d = make()
        local x = d:sample({ N })
        assert.same(h.flat({ N, d.batch_shape, d.event_shape }), x.shape)
        assert.is_true(d:_support().ok(x, d):all():item(), name .. ": a draw outside the support")
        x = map and map(x) or x
        local m, v = x:mean(1):to("cpu"), x:var(1):to("cpu")
        local em = mean and gpu.array(mean, { dtype = "float64" }) or d.mean:to("cpu")
        local ev = var and gpu.array(var, { dtype = "float64" }) or d.variance:to("cpu")
        local fm, fv, fem, fev = h.flat(m), h.flat(v), h.flat(em), h.flat(ev)
        for i = 1, #fem do
          local se = math.sqrt(fev[i] / N)
          assert(math.abs(fm[i] - fem[i]) <= 5 * se + 1e-12,
            ("%s: mean %d is %g, expected %g (5 standard errors: %g)"):format(name, i, fm[i], fem[i], 5 * se))
          assert(math.abs(fv[i] - fev[i]) <= vtol * fev[i] + 1e-12,
            ("%s: variance %d is %g, expected %g (within %g%%)"):format(name, i, fv[i], fev[i], vtol * 100))
        end
      end)
    end

    local function z(v) return gpu.full({}, v, o) end
    -- Kolmogorov-Smirnov: 5000 draws at seed 2 against the family's own cdf, the statistic
    -- below 1.63 / sqrt(n) (the 1% critical value)
    for _, c in ipairs {
      { "Normal", function() return D.Normal(z(0.5), 2) end },
      { "Uniform", function() return D.Uniform(z(-1), 3) end },
      { "Exponential", function() return D.Exponential(z(1.5)) end },
      { "Laplace", function() return D.Laplace(z(1), 0.5) end },
      { "Cauchy", function() return D.Cauchy(z(-1), 2) end },
      { "Gumbel", function() return D.Gumbel(z(1), 2) end },
      { "LogNormal", function() return D.LogNormal(z(0.2), 0.7) end },
      { "HalfNormal", function() return D.HalfNormal(z(1.5)) end },
    } do
      it(c[1] .. ": Kolmogorov-Smirnov of 5000 draws at seed 2", function()
        gpu.random.seed(2)
        local d = c[2]()
        local n = 5000
        local x = d:sample(n):sort()
        local f = d:cdf(x)
        local i = gpu.arange(n, o) + 1
        local stat = gpu.maximum((i / n - f):max(), (f - (i - 1) / n):max()):item()
        assert(stat < 1.63 / math.sqrt(n), ("%s: KS statistic %g >= %g"):format(c[1], stat, 1.63 / math.sqrt(n)))
      end)
    end

    it("are the same draws for the same seed, and sample() takes a count or a shape", function()
      gpu.random.seed(7)
      local a1 = D.Normal(0, 1):sample({ 3, 2 })
      gpu.random.seed(7)
      local a2 = D.Normal(0, 1):sample({ 3, 2 })
      h.assert_close(a1, a2, 0)
      assert.same({ 5 }, D.Normal(0, 1):sample(5).shape)
      assert.same({}, D.Normal(0, 1):sample().shape)
      assert.same({ 0, 2 }, D.Normal(gpu.zeros(2), 1):sample({ 0 }).shape)
      assert.same({ 4, 2, 3 }, D.MultivariateNormal(gpu.zeros(2, 3), gpu.eye(3)):sample(4).shape)
      assert.equal("int64", D.Categorical(gpu.ones(3)):sample(2).dtype)
      assert.equal("float32", D.Bernoulli(0.5):sample(2).dtype)
    end)
  end)
end

-- ---- gradients ------------------------------------------------------------------------------------

describe("gpu.distributions' gradients", function()
  local o = { dtype = "float64" }
  local function a(x) return gpu.array(x, o) end
  local function check(fn, inputs)
    local ok, msg = ag.gradcheck(fn, inputs, { eps = 1e-6, tol = 1e-5 })
    assert(ok, msg)
  end

  it("flow through rsample (reparameterised draws) at a fixed seed", function()
    local function rs(make)
      return function(...)
        gpu.random.seed(11)
        return make(...):rsample({ 3 })
      end
    end
    check(rs(function(l, s) return D.Normal(l, s) end), { a { 0.5, -1 }, a { 1, 2 } })
    check(rs(function(l, s) return D.Laplace(l, s) end), { a { 0.5, -1 }, a { 1, 2 } })
    check(rs(function(l, s) return D.Cauchy(l, s) end), { a { 0.5, -1 }, a { 1, 2 } })
    check(rs(function(l, s) return D.Gumbel(l, s) end), { a { 0.5, -1 }, a { 1, 2 } })
    check(rs(function(l, s) return D.LogNormal(l, s) end), { a { 0.5, -1 }, a { 0.3, 0.5 } })
    check(rs(function(s) return D.HalfNormal(s) end), { a { 1, 2 } })
    check(rs(function(r) return D.Exponential(r) end), { a { 0.5, 2 } })
    check(rs(function(lo, hi) return D.Uniform(lo, hi) end), { a { 0, -1 }, a { 1, 2 } })
    -- a covariance made symmetric from any matrix m (cholesky reads one triangle only)
    local function cov(m) return (m + m.T) / 2 end
    check(rs(function(l, m) return D.MultivariateNormal(l, cov(m)) end), { a { 0.5, -1 }, a { { 2, 0.3 }, { 0.3, 1 } } })
  end)

  it("flow through log_prob, entropy, cdf, icdf and kl_divergence", function()
    local v = a { 0.3, -0.7 }
    check(function(l, s) return D.Normal(l, s):log_prob(v) end, { a { 0.5, -1 }, a { 1, 2 } })
    check(function(l, s) return D.Normal(l, s):cdf(v) end, { a { 0.5, -1 }, a { 1, 2 } })
    check(function(s) return D.Laplace(0, s):entropy() end, { a { 1, 2 } })
    check(function(l, s) return D.Cauchy(l, s):icdf(a { 0.2, 0.9 }) end, { a { 0.5, -1 }, a { 1, 2 } })
    check(function(p) return D.Categorical(p):log_prob(a { 2, 3 }) end, { a { { 0.2, 0.3, 0.5 }, { 0.1, 0.6, 0.3 } } })
    check(function(l) return D.Bernoulli(nil, l):entropy() end, { a { -0.5, 1.5 } })
    check(function(l1, s1, l2, s2) return D.kl_divergence(D.Normal(l1, s1), D.Normal(l2, s2)) end,
      { a { 0.5, -1 }, a { 1, 2 }, a { 0, 1 }, a { 1.5, 0.5 } })
    check(function(l, m) return D.MultivariateNormal(l, (m + m.T) / 2):log_prob(v) end,
      { a { 0.5, -1 }, a { { 2, 0.3 }, { 0.3, 1 } } })
  end)

  -- through gpu.special's rules (lgamma's derivative is digamma, xlogy's...)
  local run_sp = (has_special("gammaln") and has_special("digamma") and has_special("xlogy") and has_special("polygamma"))
    and it or pending
  run_sp("flow through the families made with special functions (Gamma, Beta, Dirichlet, StudentT, Poisson)", function()
    local pv = a { 0.4, 1.7 }
    check(function(c, r) return D.Gamma(c, r):log_prob(pv) end, { a { 0.5, 2 }, a { 1, 3 } })
    check(function(c, r) return D.Gamma(c, r):entropy() end, { a { 0.5, 2 }, a { 1, 3 } })
    check(function(c1, c0) return D.Beta(c1, c0):log_prob(a { 0.2, 0.6 }) end, { a { 0.5, 2 }, a { 1.5, 3 } })
    check(function(c) return D.Dirichlet(c):entropy() end, { a { { 0.5, 2, 1.2 } } })
    check(function(df, s) return D.StudentT(df, 0, s):log_prob(pv) end, { a { 2.5, 7 }, a { 1, 0.5 } })
    check(function(r) return D.Poisson(r):log_prob(a { 0, 3 }) end, { a { 0.5, 2 } })
    check(function(c1, c2) return D.kl_divergence(D.Gamma(c1, 1), D.Gamma(c2, 2)) end, { a { 0.5, 2 }, a { 1.5, 0.7 } })
  end)

  local run = gpu.random.standard_gamma and has_special("gammainc") and it or pending
  run("flow through Gamma's rsample (the implicit gradient of the draw)", function()
    -- d E[x] / d alpha = 1 / rate: the mean of 4000 draws' gradients within 5%
    gpu.random.seed(3)
    local alpha = a { 0.7, 2.5 }:requires_grad()
    local x = D.Gamma(alpha, 2):rsample({ 4000 })
    x:mean(1):sum():backward()
    local g = h.flat(alpha.grad)
    assert(math.abs(g[1] - 0.5) < 0.025 and math.abs(g[2] - 0.5) < 0.025, ("%g %g"):format(g[1], g[2]))
  end)
end)

-- ---- validation and misuse ------------------------------------------------------------------------

describe("gpu.distributions' errors", function()
  it("name the constructor and the parameter that breaks its constraint (validate_args)", function()
    h.fails({ "gpu.distributions.Normal", "parameter scale", "positive" }, D.Normal, 0, -1)
    h.fails({ "gpu.distributions.Normal", "parameter scale", "(2)" }, D.Normal, 0, gpu.array { 1, 0 })
    h.fails({ "gpu.distributions.Exponential", "parameter rate" }, D.Exponential, 0)
    h.fails({ "gpu.distributions.Bernoulli", "parameter probs", "[0, 1]" }, D.Bernoulli, 1.5)
    h.fails({ "gpu.distributions.Uniform", "parameter low", "less than high" }, D.Uniform, 2, 1)
    h.fails({ "gpu.distributions.Categorical", "parameter probs" }, D.Categorical, gpu.array { 0.5, -0.1 })
    h.fails({ "gpu.distributions.MultivariateNormal", "covariance_matrix", "positive definite" },
      D.MultivariateNormal, gpu.zeros(2), gpu.array { { 1, 2 }, { 2, 1 } })
    h.fails({ "gpu.distributions.MultivariateNormal", "scale_tril", "lower Cholesky" },
      D.MultivariateNormal, gpu.zeros(2), { scale_tril = gpu.array { { 1, 1 }, { 0, 1 } } })
    h.fails({ "gpu.distributions.Geometric", "parameter probs" }, D.Geometric, 0)
    h.fails({ "gpu.distributions.Normal", "parameter loc", "real" }, D.Normal, 0 / 0, 1)
    -- validate_args = false takes them
    assert.is_true(D.Normal(0, -1, { validate_args = false }):log_prob(0):isnan():item())
  end)

  it("check a value against the support in log_prob and cdf", function()
    h.fails({ "Exponential:log_prob", "support", "nonnegative" }, function() return D.Exponential(1):log_prob(-1) end)
    h.fails({ "Bernoulli:log_prob", "support", "boolean" }, function() return D.Bernoulli(0.5):log_prob(0.5) end)
    h.fails({ "Categorical:log_prob", "labels 1 to 3" }, function() return D.Categorical(gpu.ones(3)):log_prob(0) end)
    h.fails({ "Uniform:cdf", "support" }, function() return D.Uniform(0, 1):cdf(2) end)
    h.fails({ "Normal:icdf", "unit interval" }, function() return D.Normal(0, 1):icdf(1.5) end)
    h.fails({ "Normal:log_prob", "does not broadcast" }, function() return D.Normal(gpu.zeros(3), 1):log_prob(gpu.zeros(2)) end)
    h.fails({ "Dirichlet:log_prob", "event shape" }, function() return D.Dirichlet(gpu.ones(3)):log_prob(gpu.ones(2) / 2) end)
    -- without validation the formula runs as PyTorch's does (log(rate) - rate * value)
    assert.equal(1, D.Exponential(1, { validate_args = false }):log_prob(-1):item())
    assert.equal(-math.huge, D.Uniform(0, 1, { validate_args = false }):log_prob(2):item())
  end)

  it("refuse wrong arguments with the function's name", function()
    h.fails({ "bad argument #2 to 'gpu.distributions.Normal'", "scale: a number or a gpu.array expected" }, D.Normal, 0, "x")
    h.fails({ "bad argument #1 to 'gpu.distributions.Normal'", "loc" }, D.Normal)
    h.fails({ "bad argument #3 to 'gpu.distributions.Normal'", "unknown option 'validate'" }, D.Normal, 0, 1, { validate = true })
    h.fails({ "gpu.distributions.Normal", "at most 3 arguments" }, D.Normal, 0, 1, nil, 4)
    h.fails({ "gpu.distributions.Bernoulli", "either probs or logits", "both" }, D.Bernoulli, 0.5, 0)
    h.fails({ "gpu.distributions.Bernoulli", "either probs or logits", "neither" }, D.Bernoulli)
    h.fails({ "gpu.distributions.Categorical", "at least 1 dimension" }, D.Categorical, 0.5)
    h.fails({ "gpu.distributions.MultivariateNormal", "exactly one of" }, D.MultivariateNormal, gpu.zeros(2))
    h.fails({ "gpu.distributions.MultivariateNormal", "does not match" }, D.MultivariateNormal, gpu.zeros(3), gpu.eye(2))
    h.fails({ "gpu.distributions.Normal", "cannot be broadcast" }, D.Normal, gpu.zeros(2), gpu.ones(3))
    h.fails({ "gpu.distributions.Independent", "reinterpreted_batch_ndims" }, D.Independent, D.Normal(0, 1), 1)
    h.fails({ "gpu.distributions.TransformedDistribution", "transforms" }, D.TransformedDistribution, D.Normal(0, 1), 3)
    h.fails({ "gpu.distributions.Multinomial", "total_count" }, D.Multinomial, 2.5, gpu.ones(3))
    h.fails({ "Normal:sample", "sample_shape" }, function() return D.Normal(0, 1):sample({ -1 }) end)
    h.fails({ "Normal:sample", "sample_shape" }, function() return D.Normal(0, 1):sample("x") end)
    h.fails({ "sample: use d:sample()" }, function() local d = D.Normal(0, 1); return d.sample() end)
    h.fails({ "Bernoulli:rsample", "not reparameterizable" }, function() return D.Bernoulli(0.5):rsample() end)
    h.fails({ "kl_divergence", "no KL divergence", "(Normal, Categorical)" },
      D.kl_divergence, D.Normal(0, 1), D.Categorical(gpu.ones(2)))
    h.fails({ "bad argument #2 to 'gpu.distributions.kl_divergence'" }, D.kl_divergence, D.Normal(0, 1), 3)
    h.fails({ "Poisson:cdf is not implemented" }, function() return D.Poisson(1):cdf(1) end)
  end)

  it("keep parameters on one device and one float dtype", function()
    local d = D.Normal(gpu.zeros(2, { dtype = "float64" }), 1)
    assert.equal("float64", d.scale.dtype)
    assert.equal("float32", D.Normal(0, gpu.ones(2, { dtype = "int64" })).loc.dtype)
    for _, dev in ipairs(h.devices()) do
      if dev ~= "cpu" then
        h.fails({ "gpu.distributions.Normal", "use :to()" }, D.Normal, gpu.zeros(2), gpu.ones(2, { device = dev }))
      end
    end
  end)
end)

-- ---- transforms, Independent, TransformedDistribution ----------------------------------------------

describe("gpu.distributions' transforms", function()
  local o = { dtype = "float64" }
  it("invert and give log |det J| (against the Normal's change of variables)", function()
    local x = gpu.array({ -1.5, 0.2, 2 }, o)
    for _, t in ipairs { D.ExpTransform(), D.AffineTransform(1, -2), D.SigmoidTransform(), D.TanhTransform(),
      D.ComposeTransform { D.AffineTransform(0.5, 3), D.ExpTransform() } } do
      local y = t(x)
      h.assert_close(t.inv(y), x, 1e-9)
      -- log |dy/dx| by a central difference
      local e = 1e-6
      local num = ((t(x + e) - t(x - e)) / (2 * e)):abs():log()
      h.assert_close(t:log_abs_det_jacobian(x, y), num, 1e-5)
      h.assert_close(t.inv:log_abs_det_jacobian(y, x), -num, 1e-5)
    end
    local p = gpu.array({ 0.5, 4 }, o)
    h.assert_close(D.PowerTransform(2)(p), p ^ 2, 0)
  end)

  it("make a TransformedDistribution equal to its closed form (LogNormal, a flipped Exponential)", function()
    local td = D.TransformedDistribution(D.Normal(gpu.array({ 0.3, -1 }, o), 0.5), { D.ExpTransform() })
    local ln = D.LogNormal(gpu.array({ 0.3, -1 }, o), 0.5)
    local v = gpu.array({ 0.7, 2.5 }, o)
    h.assert_close(td:log_prob(v), ln:log_prob(v), 1e-12)
    h.assert_close(td:cdf(v), ln:cdf(v), 1e-12)
    -- y = -x of an Exponential: cdf(y) = 1 - F(-y)
    local flip = D.TransformedDistribution(D.Exponential(gpu.array({ 2 }, o)), D.AffineTransform(0, -1))
    h.assert_close(flip:cdf(gpu.array({ -0.5 }, o)), gpu.array({ math.exp(-1) }, o), 1e-12)
    h.assert_close(flip:log_prob(gpu.array({ -0.5 }, o)), gpu.array({ math.log(2) - 1 }, o), 1e-12)
    h.fails({ "needs monotone transforms" }, function() return D.TransformedDistribution(D.Normal(0, 1), D.AbsTransform()):cdf(1) end)
  end)

  it("reinterpret batch axes as event axes (Independent)", function()
    local base = D.Normal(gpu.zeros(4, 3, o), gpu.ones(4, 3, o))
    local ind = D.Independent(base, 1)
    assert.same({ 4 }, ind.batch_shape)
    assert.same({ 3 }, ind.event_shape)
    local v = gpu.random.Generator(1):randn({ 4, 3 }, o)
    h.assert_close(ind:log_prob(v), base:log_prob(v):sum(-1), 1e-12)
    h.assert_close(ind:entropy(), base:entropy():sum(-1), 1e-12)
    assert.same({ 2, 4, 3 }, ind:sample(2).shape)
    h.assert_close(D.kl_divergence(ind, D.Independent(D.Normal(gpu.ones(4, 3, o), 2), 1)),
      D.kl_divergence(base, D.Normal(gpu.ones(4, 3, o), 2)):sum(-1), 1e-12)
  end)

  it("look KL pairs up along the classes' parents, and take new ones (register_kl)", function()
    -- Chi2 is a Gamma: KL(Chi2, Gamma) is Gamma's
    if has_special("digamma") then
      h.assert_close(D.kl_divergence(D.Chi2(3), D.Gamma(2, 0.5)), D.kl_divergence(D.Gamma(1.5, 0.5), D.Gamma(2, 0.5)), 1e-6)
    end
    D.register_kl("Poisson", "Normal", function(p, _) return p.rate * 0 + 42 end)
    assert.equal(42, D.kl_divergence(D.Poisson(1), D.Normal(0, 1)):item())
  end)
end)

describe("gpu.distributions' functions", function()
  it("each declare what they take and refuse one argument more (as spec/arity_spec.lua checks gpu's)", function()
    local n = 0
    for name, f in pairs(D) do
      if type(f) == "function" then
        local k = gpu._arity(f)
        assert(k ~= nil, "gpu.distributions." .. name .. " declares no count")
        if k ~= math.huge then
          local ok, err = pcall(f, table.unpack({}, 1, k + 1))
          assert(not ok, name .. " accepted " .. (k + 1) .. " arguments")
          assert.matches(("bad argument #%d to 'gpu.distributions.%s' %%(at most %d arguments? expected"):format(k + 1, name, k),
            tostring(err))
        end
        n = n + 1
      end
    end
    assert.is_true(n >= 33, "only " .. n .. " functions")
  end)

  it("each have an entry in doc/API.md (gpu.help)", function()
    for name, f in pairs(D) do
      if type(f) == "function" then
        local t = require("gpu.help").text("gpu.distributions." .. name)
        assert(t and t:find(name, 1, true), "no doc/API.md entry for gpu.distributions." .. name)
      end
    end
  end)

  it("is a Lua part loaded on first use (gpu.distributions)", function()
    local code, out = h.run((os.getenv("GPULUA_BIN") or "./gpulua") ..
      [[ -e "io.write(tostring(package.loaded['gpu.distributions'] ~= nil), ' ', gpu.distributions.Normal(0, 1):log_prob(0):item() < 0 and 'ok' or 'no', ' ', tostring(package.loaded['gpu.distributions'] ~= nil))"]])
    assert.equal(0, code)
    assert.equal("false ok true", out)
  end)
end)

describe("gpu.distributions' other properties", function()
  it("give support, perplexity and has_rsample as PyTorch's", function()
    assert.equal("nonnegative (>= 0)", D.Exponential(1).support)
    assert.equal("real", D.Normal(0, 1).support)
    assert.is_true(D.Normal(0, 1).has_rsample)
    assert.is_false(D.Bernoulli(0.5).has_rsample)
    assert.is_true(D.LogNormal(0, 1).has_rsample)
    assert.is_true(D.Independent(D.Normal(gpu.zeros(2), 1), 1).has_rsample)
    local d = D.Categorical(gpu.array({ 0.25, 0.25, 0.25, 0.25 }, { dtype = "float64" }))
    h.assert_close(d:perplexity(), gpu.array(4, { dtype = "float64" }), 1e-12)
    assert.equal("gpu.distributions.Normal", getmetatable(D.Normal(0, 1)).__name)
    assert.equal("Normal(loc: (), scale: ())", tostring(D.Normal(0, 1)))
    assert.is_true(D.is_distribution(D.Normal(0, 1)))
    assert.is_false(D.is_distribution({}))
  end)

  it("take set_default_validate_args for the distributions made after it", function()
    D.set_default_validate_args(false)
    local ok, d = pcall(D.Normal, 0, -1)
    D.set_default_validate_args(true)
    assert.is_true(ok)
    assert.is_true(d:log_prob(0):isnan():item())
    h.fails({ "parameter scale" }, D.Normal, 0, -1)
    h.fails({ "bad argument #1 to 'gpu.distributions.set_default_validate_args'", "a boolean expected" },
      D.set_default_validate_args, 1)
  end)
end)

describe("gpu.distributions' expand", function()
  it("broadcasts the parameters to a larger batch shape, as PyTorch's expand", function()
    local o = { dtype = "float64" }
    local v = gpu.array({ { 0.1, 0.2, 0.3 }, { 0.4, 0.5, 0.6 } }, o)
    for _, make in ipairs {
      function() return D.Normal(gpu.array({ 0.5, 1, -1 }, o), 2) end,
      function() return D.Bernoulli(nil, gpu.array({ 0.5, 1, -1 }, o)) end,
      function() return D.Exponential(gpu.array({ 0.5, 1, 3 }, o)) end,
      function() return D.LogNormal(gpu.array({ 0.5, 1, -1 }, o), 0.5) end,
      function() return D.Gumbel(0, gpu.array({ 0.5, 1, 3 }, o)) end,
    } do
      local d = make()
      local e = d:expand({ 2, 3 })
      assert.same({ 2, 3 }, e.batch_shape)
      local value = d._name == "Bernoulli" and v:gt(0.3):astype("float64") or v
      h.assert_close(e:log_prob(value), d:log_prob(value), 1e-12)
      assert.same({ 4, 2, 3 }, e:sample(4).shape)
    end
    local c = D.Categorical(gpu.array({ 0.2, 0.3, 0.5 }, o)):expand({ 4 })
    assert.same({ 4 }, c.batch_shape)
    assert.same({ 4 }, c:sample().shape)
    local m = D.MultivariateNormal(gpu.zeros(2, o), gpu.eye(2, o)):expand({ 3 })
    assert.same({ 3 }, m.batch_shape)
    assert.same({ 5, 3, 2 }, m:sample(5).shape)
    local ind = D.Independent(D.Normal(gpu.zeros(2, o), 1), 1):expand({ 3 })
    assert.same({ 3 }, ind.batch_shape)
    assert.same({ 2 }, ind.event_shape)
    h.fails({ "Normal:expand", "cannot be expanded" }, function() return D.Normal(gpu.zeros(3), 1):expand({ 2 }) end)
    h.fails({ "Normal:expand", "batch_shape" }, function() return D.Normal(0, 1):expand("x") end)
  end)
end)
