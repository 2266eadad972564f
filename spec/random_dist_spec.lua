-- spec/random_dist_spec.lua — NumPy's Generator distributions on gpu.random (the samplers of
-- kernels/random_dist.h and the compositions of lua/gpu/random/more.lua): statistics at a
-- fixed seed against SciPy's laws (spec/fixtures/random_dist.lua, written by
-- spec/fixtures/gen_random_dist.py), shapes, dtypes and defaults, reproducibility, CPU/GPU
-- equality, misuse.
--
-- The statistical tests, per case, on n = 20000 draws of Generator(1000 + case number):
--   mean      |sample mean - mean| <= 5 sqrt(var / n)         (where var is finite)
--   variance  |sample var - var| <= 6 se_var                   (where the kurtosis is finite)
--   shape     Pearson's chi-square over 20 equiprobable bins (continuous laws, bins from
--             SciPy's ppf) or integer bins expecting >= 20 draws each: below the 0.999
--             quantile of chi-square with bins - 1 degrees of freedom.
local h = require "spec.helper"
local gpu = h.gpu
local R = gpu.random
local F = dofile("spec/fixtures/random_dist.lua")

local flat, fails = h.flat, h.fails

local function mean_var(t)
  local s = 0
  for _, v in ipairs(t) do s = s + v end
  local m = s / #t
  local s2 = 0
  for _, v in ipairs(t) do s2 = s2 + (v - m) ^ 2 end
  return m, s2 / (#t - 1)
end

-- Pearson's statistic of the draws t against bins: continuous (q: inner edges, equal
-- probabilities) or integer (lo: first values, p: probabilities).
local function chi2(t, c)
  local counts, expect = {}, {}
  if c.q then
    local q = c.q
    for i = 1, #q + 1 do counts[i] = 0; expect[i] = #t / (#q + 1) end
    for _, v in ipairs(t) do
      local a, b = 1, #q + 1                    -- the bin: first edge above v
      while a < b do
        local m = (a + b) // 2
        if v < q[m] then b = m else a = m + 1 end
      end
      counts[a] = counts[a] + 1
    end
  else
    local lo = c.lo
    for i = 1, #lo do counts[i] = 0; expect[i] = #t * c.p[i] end
    for _, v in ipairs(t) do
      local a, b = 1, #lo
      while a < b do
        local m = (a + b + 1) // 2
        if v >= lo[m] then a = m else b = m - 1 end
      end
      counts[a] = counts[a] + 1
    end
  end
  local s = 0
  for i = 1, #counts do s = s + (counts[i] - expect[i]) ^ 2 / expect[i] end
  return s
end

local function draw(g, name, args, n, opts)
  local a = {}
  for i, v in ipairs(args) do a[i] = v end
  a[#a + 1] = n
  a[#a + 1] = opts
  return g[name](g, table.unpack(a, 1, #args + 2))
end

describe("random distributions: statistics against SciPy", function()
  for i, c in ipairs(F.cases) do
    it(("%s(%s)"):format(c.name, table.concat(c.args, ", ")), function()
      local g = R.Generator(1000 + i)
      local x = draw(g, c.name, c.args, F.n, { dtype = c.q and "float64" or nil })
      assert.equals(c.q and "float64" or "int64", x.dtype)
      assert.are.same({ F.n }, x.shape)
      local t = flat(x)
      if c.mean then
        local m, v = mean_var(t)
        local tol = 5 * math.sqrt(c.var / F.n)
        assert(math.abs(m - c.mean) <= tol, ("mean %g, expected %g +- %g"):format(m, c.mean, tol))
        if c.se_var then
          assert(math.abs(v - c.var) <= 6 * c.se_var, ("variance %g, expected %g +- %g"):format(v, c.var, 6 * c.se_var))
        end
      end
      local s = chi2(t, c)
      assert(s < c.crit, ("chi-square %g >= %g (0.999 quantile)"):format(s, c.crit))
    end)
  end
end)

-- The stream as kernels/random_dist.h documents it, read by an independent Python
-- implementation (spec/fixtures/gen_random_dist.py): exponential reads the first value of
-- each element's block, poisson(8.5) about ten (subsequences 0 to 4).
describe("random distributions: known answers", function()
  for _, d in ipairs(h.devices()) do
    it("exponential and poisson on " .. d, function()
      local K = F.known
      local x = R.Generator(K.seed):exponential(2.5, #K.exponential, { dtype = "float64", device = d })
      h.assert_close(x:cpu(), gpu.array(K.exponential, { dtype = "float64" }), 1e-14)
      assert.are.same(K.poisson, flat(R.Generator(K.seed):poisson(8.5, #K.poisson, { device = d })))
    end)
  end
end)

describe("random distributions: shapes, dtypes, parameters", function()
  it("NumPy's defaults and a shape as varargs or a table", function()
    local g = R.Generator(1)
    assert.are.same({ 2, 3 }, g:gamma(2, nil, 2, 3).shape)
    assert.are.same({ 2, 3 }, g:gamma(2, 1, { 2, 3 }).shape)
    assert.are.same({}, g:poisson().shape)              -- lam = 1, one draw (0-d)
    assert.equals("int64", g:poisson(3, 4).dtype)
    assert.equals("float32", g:gamma(2, 1, 4).dtype)
    assert.equals("float64", g:beta(2, 3, 4, { dtype = "float64" }).dtype)
    assert.equals("float32", g:binomial(5, 0.5, 4, { dtype = "float32" }).dtype)
    assert.equals("int32", g:geometric(0.5, 4, { dtype = "int32" }).dtype)
    for _, nm in ipairs({ "standard_exponential", "standard_cauchy" }) do
      assert.are.same({ 3 }, g[nm](g, 3).shape)
    end
    assert.are.same({ 3 }, R.exponential(nil, 3).shape)
    assert.are.same({ 3 }, R.gumbel(nil, nil, 3).shape)
  end)

  it("array parameters broadcast, and give the shape and dtype without a size", function()
    local g = R.Generator(5)
    local a = gpu.array({ 0.5, 1, 30 }, { dtype = "float64" })
    local x = g:standard_gamma(a)
    assert.equals("float64", x.dtype)
    assert.are.same({ 3 }, x.shape)
    local y = g:gamma(a, gpu.array({ { 1 }, { 2 } }))
    assert.are.same({ 2, 3 }, y.shape)
    assert.are.same({ 4, 3 }, g:beta(a, 2, 4, 3).shape)
    -- each element follows its own parameters: a huge shape against a tiny one
    local big = flat(g:poisson(gpu.array({ 0, 1e6 }, { dtype = "float64" }), 2000, 2))
    for k = 1, #big, 2 do
      assert.equals(0, big[k])
      assert(big[k + 1] > 9.9e5 and big[k + 1] < 1.01e6)
    end
    local b = flat(g:binomial(gpu.array({ 0, 7, 1e9 }), gpu.array({ 0.5, 1, 0 })))
    assert.are.same({ 0, 7, 0 }, b)
    fails({ "gamma", "shape" }, function() return g:gamma(a, 1, 4, 2) end)
    assert.are.same({ 0 }, g:beta(gpu.zeros(0), 1).shape)   -- no elements: nothing to check or draw
  end)

  it("is reproducible and advances the generator by one block per element", function()
    local a, b = R.Generator(9), R.Generator(9)
    assert.are.same(flat(a:gamma(0.3, 1, 100)), flat(b:gamma(0.3, 1, 100)))
    assert.equals(100, a:get_state().offset)
    assert.are_not.same(flat(a:poisson(100, 50)), flat(a:poisson(100, 50)))
    R.seed(3); local c = flat(R.binomial(100, 0.3, 50))
    R.seed(3); local d = flat(R.binomial(100, 0.3, 50))
    assert.are.same(c, d)
  end)

  it("gives one parameter for all the same numbers as that parameter in an array", function()
    -- the cpu makes a law's constants once for one parameter and reads words made ahead:
    -- neither may change a draw (every branch of poisson and binomial, gamma's boost)
    local n = 5000
    local function both(law, ...)
      local args = table.pack(...)
      local arrays = {}
      for i = 1, args.n do arrays[i] = gpu.full(n, args[i], { dtype = "float64" }) end
      local numbers = { table.unpack(args, 1, args.n) }
      numbers[args.n + 1] = n
      numbers[args.n + 2] = { dtype = law == "gamma" and "float64" or "int64" }   -- (as the arrays give)
      local ga, gb = R.Generator(11), R.Generator(11)
      local a = ga[law](ga, table.unpack(numbers, 1, args.n + 2))
      local b = gb[law](gb, table.unpack(arrays, 1, args.n))
      assert.are.same(flat(a:astype("float64")), flat(b:astype("float64")), law)
    end
    both("poisson", 0.5); both("poisson", 4); both("poisson", 9.5); both("poisson", 150)
    both("binomial", 20, 0.3); both("binomial", 20, 0.8); both("binomial", 1000, 0.4); both("binomial", 0, 0.5)
    both("gamma", 2.5, 1); both("gamma", 0.3, 2)
  end)

  it("special values: gamma(0) = 0, beta with tiny parameters in [0, 1], weibull(0) = 0", function()
    local g = R.Generator(11)
    assert.are.same({ 0, 0, 0 }, flat(g:standard_gamma(0, 3)))
    assert.are.same({ 0, 0 }, flat(g:weibull(0, 2)))
    for _, v in ipairs(flat(g:beta(1e-3, 1e-3, 500, { dtype = "float64" }))) do
      assert(v >= 0 and v <= 1 and v == v)
    end
    for _, v in ipairs(flat(g:vonmises(3, 0.5, 500, { dtype = "float64" }))) do
      assert(v >= -math.pi and v <= math.pi)
    end
    for _, v in ipairs(flat(g:triangular(0, 0, 1, 200))) do assert(v >= 0 and v <= 1) end
    -- vonmises around mu (the fixture cases have mu = 0): the circular mean direction
    local x = g:vonmises(1, 3, 20000, { dtype = "float64" })
    local dir = math.atan(gpu.sin(x):mean():item(), gpu.cos(x):mean():item())
    assert(math.abs(dir - 1) < 0.02, "direction " .. dir)
  end)
end)

describe("random distributions: compositions", function()
  it("dirichlet: rows on the simplex with the right means (both algorithms)", function()
    for _, alpha in ipairs({ { 2, 3, 5 }, { 0.05, 0.02, 0.08 } }) do
      local g = R.Generator(21)
      local x = g:dirichlet(alpha, 20000, { dtype = "float64" })
      assert.are.same({ 20000, 3 }, x.shape)
      local s = flat(x:sum(2))
      for _, v in ipairs(s) do assert(math.abs(v - 1) < 1e-12) end
      local a0 = alpha[1] + alpha[2] + alpha[3]
      local m = flat(x:mean(1))
      for j = 1, 3 do
        local mu = alpha[j] / a0
        local sd = math.sqrt(mu * (1 - mu) / (a0 + 1) / 20000)
        assert(math.abs(m[j] - mu) < 5 * sd, ("dirichlet mean %g vs %g"):format(m[j], mu))
      end
    end
    -- the first component of dirichlet({2, 3, 5}) is beta(2, 8): chi-square over 20 bins
    local x = R.Generator(22):dirichlet({ 2, 3, 5 }, 20000, { dtype = "float64" })
    local first = {}
    for r, row in ipairs(x:totable()) do first[r] = row[1] end
    local s = chi2(first, { q = F.dirichlet_q1 })
    assert(s < 43.82, "chi-square " .. s)                -- 19 degrees of freedom, 0.999
    local g = R.Generator(2)
    assert.are.same({ 4, 2, 3 }, g:dirichlet(gpu.array({ { 1, 2, 3 }, { 4, 5, 6 } }), 4).shape)
    assert.equals("float32", g:dirichlet({ 1, 1 }).dtype)
  end)

  it("multinomial: counts sum to n, means n p; chi-square of the first category", function()
    local g = R.Generator(31)
    local p = { 0.2, 0.3, 0.5 }
    local x = g:multinomial(10, p, 20000)
    assert.equals("int64", x.dtype)
    assert.are.same({ 20000, 3 }, x.shape)
    for _, v in ipairs(flat(x:sum(2))) do assert.equals(10, v) end
    local m = flat(x:astype("float64"):mean(1))
    for j = 1, 3 do
      local sd = math.sqrt(10 * p[j] * (1 - p[j]) / 20000)
      assert(math.abs(m[j] - 10 * p[j]) < 5 * sd)
    end
    -- the first count is binomial(10, 0.2): chi-square over 0, 1, 2, 3, 4, >= 5 (5 degrees
    -- of freedom, 0.999 quantile 20.52)
    local counts, pmf = { 0, 0, 0, 0, 0, 0 }, {}
    for _, row in ipairs(x:totable()) do
      local b = math.min(row[1], 5) + 1
      counts[b] = counts[b] + 1
    end
    local rest, c = 1, 1
    for v = 0, 4 do
      pmf[v + 1] = c * 0.2 ^ v * 0.8 ^ (10 - v)
      rest = rest - pmf[v + 1]
      c = c * (10 - v) / (v + 1)
    end
    pmf[6] = rest
    local s = 0
    for b = 1, 6 do s = s + (counts[b] - 20000 * pmf[b]) ^ 2 / (20000 * pmf[b]) end
    assert(s < 20.52, "chi-square " .. s)
    local y = g:multinomial(gpu.array({ 5, 100 }), { 0.5, 0.5 })
    assert.are.same({ 2, 2 }, y.shape)
    local t = flat(y:sum(2))
    assert.are.same({ 5, 100 }, t)
  end)

  it("multivariate_normal: mean and covariance (eigh and cholesky)", function()
    for _, method in ipairs({ "svd", "cholesky" }) do
      local g = R.Generator(41)
      local cov = { { 2, 0.8 }, { 0.8, 1 } }
      local x = g:multivariate_normal({ 1, -2 }, cov, 20000, { method = method, dtype = "float64" })
      assert.are.same({ 20000, 2 }, x.shape)
      local m = flat(x:mean(1))
      assert(math.abs(m[1] - 1) < 5 * math.sqrt(2 / 20000))
      assert(math.abs(m[2] + 2) < 5 * math.sqrt(1 / 20000))
      local c = x - x:mean(1)
      local s = (gpu.matmul(c:transpose(), c) / 20000):totable()
      assert(math.abs(s[1][2] - 0.8) < 0.06, "cov " .. s[1][2])
      assert(math.abs(s[1][1] - 2) < 0.1, "var " .. s[1][1])
      assert(math.abs(s[2][2] - 1) < 0.05, "var " .. s[2][2])
    end
  end)

  it("permuted: each slice a permutation, independently, all orders equally likely", function()
    local g = R.Generator(51)
    local x = gpu.arange(1, 41):reshape(4, 10)
    local y = g:permuted(x, 2)
    assert.are.same({ 4, 10 }, y.shape)
    local rows = y:totable()
    local differ = false
    for r = 1, 4 do
      local s = {}
      for _, v in ipairs(rows[r]) do s[#s + 1] = v end
      table.sort(s)
      for k = 1, 10 do assert.equals((r - 1) * 10 + k, s[k]) end
      if r > 1 then
        for k = 1, 10 do if rows[r][k] - rows[1][k] ~= (r - 1) * 10 then differ = true end end
      end
    end
    assert.is_true(differ)                 -- rows are not shuffled alike
    -- the 6 orders of 3 elements are equally likely: chi-square, 5 degrees of freedom < 20.52
    local seen = {}
    for _, r in ipairs(g:permuted(gpu.arange(3):expand(12000, 3), 2):totable()) do
      local key = r[1] * 9 + r[2] * 3 + r[3]
      seen[key] = (seen[key] or 0) + 1
    end
    local s, nkeys = 0, 0
    for _, cnt in pairs(seen) do s = s + (cnt - 2000) ^ 2 / 2000; nkeys = nkeys + 1 end
    assert.equals(6, nkeys)
    assert(s < 20.52, "chi-square " .. s)
    local z = flat(g:permuted(x))
    table.sort(z)
    for k = 1, 40 do assert.equals(k, z[k]) end
    assert.are.same(x.shape, g:permuted(x, 1).shape)
  end)

  it("choice with p, with and without replacement", function()
    local g = R.Generator(61)
    local p = { 0.1, 0.0, 0.6, 0.3 }
    local x = g:choice(4, 20000, { p = p })
    local counts = { 0, 0, 0, 0 }
    for _, v in ipairs(flat(x)) do counts[v] = counts[v] + 1 end
    assert.equals(0, counts[2])
    local s = 0
    for j, pj in ipairs(p) do if pj > 0 then s = s + (counts[j] - 20000 * pj) ^ 2 / (20000 * pj) end end
    assert(s < 13.82, "chi-square " .. s)            -- 2 degrees of freedom, 0.999
    -- without replacement: distinct, never a zero-probability entry; first-draw frequencies
    local first = { 0, 0, 0, 0 }
    for _ = 1, 300 do
      local y = flat(g:choice(4, 3, { p = p, replace = false }))
      table.sort(y)
      assert.are.same({ 1, 3, 4 }, y)
    end
    for _ = 1, 2000 do
      local y = g:choice(4, 1, { p = p, replace = false }):item()
      first[y] = first[y] + 1
    end
    assert(math.abs(first[3] / 2000 - 0.6) < 5 * math.sqrt(0.24 / 2000))
    local rows = g:choice(gpu.arange(10, 14), 5, { p = p })
    for _, v in ipairs(flat(rows)) do assert(v ~= 11) end
  end)

  it("gpu.multinomial and gpu.poisson (PyTorch's)", function()
    local g = R.Generator(71)
    local w = gpu.array({ { 1, 0, 3 }, { 0, 2, 2 } })
    local x = gpu.multinomial(w, 2000, true, { generator = g })
    assert.are.same({ 2, 2000 }, x.shape)
    assert.equals("int64", x.dtype)
    local r = x:totable()
    local c1 = 0
    for _, v in ipairs(r[1]) do assert(v == 1 or v == 3); if v == 1 then c1 = c1 + 1 end end
    for _, v in ipairs(r[2]) do assert(v == 2 or v == 3) end
    assert(math.abs(c1 / 2000 - 0.25) < 5 * math.sqrt(0.25 * 0.75 / 2000))
    local y = w:multinomial(2, { generator = g })
    for _, row in ipairs(y:totable()) do assert(row[1] ~= row[2]) end
    local lam = gpu.array({ 0.5, 4, 100 })
    local z = gpu.poisson(lam:expand(3000, 3):contiguous(), { generator = g })
    assert.equals("float32", z.dtype)
    local m = flat(z:mean(1))
    for j, l in ipairs({ 0.5, 4, 100 }) do assert(math.abs(m[j] - l) < 5 * math.sqrt(l / 3000)) end
    local a, b = R.Generator(3), R.Generator(3)
    assert.are.same(flat(gpu.poisson(lam, { generator = a })), flat(b:poisson(lam, nil, { dtype = "float32" })))
  end)
end)

describe("random distributions: misuse", function()
  local g = R.Generator(1)
  it("names the function and the parameter; draws nothing", function()
    local st = g:get_state()
    fails({ "gamma", "shape must be >= 0" }, function() return g:gamma(-1) end)
    fails({ "beta", "a (a number or an array) is required" }, function() return g:beta() end)
    fails({ "beta", "b must be > 0" }, function() return g:beta(1, 0) end)
    fails({ "poisson", "lam must be" }, function() return g:poisson(-2) end)
    fails({ "binomial", "n must be an integer >= 0" }, function() return g:binomial(2.5, 0.5) end)
    fails({ "binomial", "p must be in [0, 1]" }, function() return g:binomial(3, 1.5) end)
    fails({ "binomial", "p must not be NaN" }, function() return g:binomial(3, 0 / 0) end)
    fails({ "geometric", "p must be in (0, 1]" }, function() return g:geometric(0) end)
    fails({ "hypergeometric", "nsample (9) is greater than ngood + nbad (5)" }, function() return g:hypergeometric(2, 3, 9) end)
    fails({ "triangular", "left <= mode <= right" }, function() return g:triangular(0, 2, 1) end)
    fails({ "zipf", "a must be > 1" }, function() return g:zipf(1) end)
    fails({ "logseries", "p must be in [0, 1)" }, function() return g:logseries(1) end)
    fails({ "wald", "scale must be > 0" }, function() return g:wald(1, 0) end)
    fails({ "gamma", "shape must be a number or an array, got string" }, function() return g:gamma("x") end)
    fails({ "gamma", "dtype int64 is not supported by gamma" }, function() return g:gamma(2, 1, 3, { dtype = "int64" }) end)
    fails({ "poisson", "unknown option" }, function() return g:poisson(2, 3, { dtyp = "int32" }) end)
    fails({ "poisson", "lam must be" }, function() return g:poisson(gpu.array({ 1, -1 })) end)
    fails({ "gamma" }, function() return g:gamma(1, 1, 3, {}, 5) end)
    -- a size whose product passes 2^63 (an array parameter too): refused, not wrapped
    fails({ "lognormal", "array is too big" }, function() return g:lognormal(0, 1, { 1 << 62, 4 }) end)
    fails({ "lognormal", "array is too big" }, function()
      return g:lognormal(gpu.arange(10):astype("float64")[{ { 1, 10, 3 } }], 0, { 1 << 62, 4 })
    end)
    assert.are.same(st, g:get_state())
  end)

  it("compositions check their arguments", function()
    fails({ "dirichlet", "alpha must be >= 0" }, function() return g:dirichlet({ 1, -1 }) end)
    fails({ "dirichlet", "alpha (a list or an array) is required" }, function() return g:dirichlet() end)
    fails({ "multinomial", "pvals must lie in [0, 1]" }, function() return g:multinomial(3, { 0.5, 1.5 }) end)
    fails({ "multinomial", "sum of pvals" }, function() return g:multinomial(3, { 0.7, 0.7, 0 }) end)
    fails({ "multivariate_normal", "cov must be 2 x 2" }, function() return g:multivariate_normal({ 0, 0 }, { { 1 } }) end)
    fails({ "multivariate_normal", "method must be" }, function() return g:multivariate_normal({ 0 }, { { 1 } }, 2, { method = "qr" }) end)
    fails({ "permuted", "x must be an array" }, function() return g:permuted(5) end)
    fails({ "permuted", "axis 3 is out of range" }, function() return g:permuted(gpu.zeros(2, 2), 3) end)
    fails({ "choice", "p must be 1-D with 3 entries" }, function() return g:choice(3, 2, { p = { 0.5, 0.5 } }) end)
    fails({ "choice", "probabilities do not sum to 1" }, function() return g:choice(2, 2, { p = { 0.5, 0.6 } }) end)
    fails({ "choice", "fewer non-zero entries" }, function() return g:choice(3, 3, { p = { 0.5, 0.5, 0 }, replace = false }) end)
    fails({ "multinomial", "without replacement" }, gpu.multinomial, gpu.ones(3), 4)
    fails({ "multinomial", "fewer than 2 non-zero weights" }, gpu.multinomial, gpu.array({ { 1, 1 }, { 0, 1 } }), 2)
    fails({ "multinomial", "weights must be >= 0" }, gpu.multinomial, gpu.array({ 1, -1 }), 1)
    fails({ "multinomial", "unknown option" }, gpu.multinomial, gpu.ones(3), 1, false, { gen = 1 })
    fails({ "poisson", "rates must be a float array" }, gpu.poisson, gpu.array({ 1, 2 }, { dtype = "int64" }))
    fails({ "poisson", "must be a gpu.random.Generator" }, gpu.poisson, gpu.ones(2), { generator = 3 })
  end)
end)

-- Same seed, same numbers on the CPU and the GPU: integers bit for bit, floats to the last
-- bits of log/exp/sqrt/cos (the samplers run kernels/random_dist.h on both).
describe("random distributions: CPU/GPU equality", function()
  local has_cuda = false
  for _, d in ipairs(h.devices()) do if d == "cuda" then has_cuda = true end end
  if not has_cuda then
    pending("no GPU here: CPU/GPU equality runs where gpu.is_available()")
    return
  end
  local function both(f)
    local gc, gg = R.Generator(77), R.Generator(77)
    local c = f(gc, "cpu")
    local g = f(gg, "cuda")
    assert.are.same(gc:get_state(), gg:get_state())
    return c, g:cpu()
  end
  it("every sampler of the fixture cases", function()
    for _, c in ipairs(F.cases) do
      local a, b = both(function(gen, d)
        return draw(gen, c.name, c.args, 5003, { dtype = c.q and "float64" or nil, device = d })
      end)
      if c.q then h.assert_close(b, a, 1e-9) else assert.are.same(flat(a), flat(b)) end
    end
  end)
  it("array parameters and the compositions", function()
    local a = gpu.rand(1000, { dtype = "float64" }) * 5
    local x, y = both(function(gen, d) return gen:standard_gamma(a:to(d)) end)
    h.assert_close(y, x, 1e-9)
    x, y = both(function(gen, d) return gen:binomial(100, a:to(d) / 5) end)
    assert.are.same(flat(x), flat(y))
    x, y = both(function(gen, d) return gen:dirichlet(gpu.array({ 1, 2, 3 }, { dtype = "float64", device = d }), 100) end)
    h.assert_close(y, x, 1e-9)
    x, y = both(function(gen, d) return gen:multinomial(20, gpu.array({ 0.2, 0.8 }, { device = d }), 100) end)
    assert.are.same(flat(x), flat(y))
    x, y = both(function(gen, d) return gen:permuted(gpu.arange(1, 100, { device = d })) end)
    assert.are.same(flat(x), flat(y))
    x, y = both(function(gen, d) return gen:choice(5, 100, { p = { 0.1, 0.2, 0.3, 0.2, 0.2 }, device = d }) end)
    assert.are.same(flat(x), flat(y))
  end)
end)
