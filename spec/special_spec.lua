-- spec/special_spec.lua — gpu.special (kernels/special.h through the elementwise ops) against
-- spec/fixtures/special.lua (spec/fixtures/gen_special_fixtures.py: exact values from mpmath,
-- SciPy's own): float64 to a few ulp of the exact value over each domain (the tails, poles,
-- +-0, +-inf, NaN), float32 to one float32 ulp of the exact value at the float32 input, and
-- to SciPy within SciPy's own error; then the names, PyTorch's dtypes, the functions written
-- over the ops, the errors, the gradients (float64 gradcheck) and cuda against the cpu.
local h = require "spec.helper"
local gpu = h.gpu
local S = gpu.special
local ag = require "gpu.autograd"

local FX = dofile("spec/fixtures/special.lua")

local function ulp(v)
  v = math.abs(v)
  if v < 2.2250738585072014e-308 then return 4.9406564584124654e-324 end
  return 2.0 ^ (math.floor(math.log(v, 2)) - 52)
end
local function ulp32(v)
  v = math.abs(v)
  if v < 1.1754943508222875e-38 then return 1.401298464324817e-45 end
  return 2.0 ^ (math.floor(math.log(v, 2)) - 23)
end
local function f32(v) return string.unpack("f", string.pack("f", v)) end

-- Per function: float64 ulps from the exact value; an absolute floor (where the function
-- crosses zero, relative accuracy is the zero's own problem: SciPy's and PyTorch's have the
-- same absolute error there); SciPy: relative distance allowed from SciPy's value, which is
-- that of SciPy's own error where it exceeds ours (measured against mpmath at 40 digits).
local TOL = {
  erfc = { ulps = 4, scipy = 1e-15 },
  erfcx = { ulps = 4, scipy = 1e-13 },            -- SciPy: exp(x^2) unsplit for x < 0 (500 ulp)
  erfinv = { ulps = 4, scipy = 1e-15 },
  erfcinv = { ulps = 4, scipy = 1e-15 },
  lgamma = { ulps = 4, abs = 1e-16, scipy = 1e-12 },  -- near the zeros at 1 and 2 (SciPy 5000 ulp)
  digamma = { ulps = 4, abs = 2e-15, scipy = 1e-12 },  -- the negative zeros: reflection (both)
  ndtr = { ulps = 4, scipy = 1e-13 },               -- SciPy: the rounding of x/sqrt 2 (x^2/2 ulp)
  ndtri = { ulps = 4, scipy = 1e-15 },
  log_ndtr = { ulps = 4, scipy = 1e-12 },
  i0 = { ulps = 8, scipy = 1e-14 },
  i0e = { ulps = 8, scipy = 1e-14 },
  i1 = { ulps = 8, scipy = 1e-14 },
  i1e = { ulps = 8, scipy = 1e-14 },
  entr = { ulps = 2, scipy = 1e-15 },
  logit = { ulps = 2, scipy = 1e-12 },              -- SciPy 1.10: log(x/(1-x)) near 1/2
  bessel_j0 = { ulps = 8, abs = 2e-16, scipy = 1e-10, scipy_abs = 1e-14 },  -- SciPy: pi/4 rounded into large x
  bessel_j1 = { ulps = 8, abs = 2e-16, scipy = 1e-10, scipy_abs = 1e-14 },
  exp1 = { ulps = 4, scipy = 1e-14 },
  expi = { ulps = 16, abs = 1e-16, scipy = 1e-13 },   -- SciPy: 200 ulp near 40
  xlogy = { ulps = 2, scipy = 1e-15 },
  xlog1py = { ulps = 2, scipy = 1e-15 },
  betaln = { ulps = 8, abs = 2e-15, scipy = 1e-8 },   -- SciPy: lgamma differences for one large argument
  beta = { ulps = 1000, scipy = 1e-12 },             -- big arguments: |log B| ulps of exp (both)
  zeta = { ulps = 16, scipy = 1e-13 },
  polygamma = { ulps = 16, abs = 1e-15, scipy = 1e-12 },
  gammainc = { ulps = 64, rel = 1e-12, abs = 1e-16, scipy = 1e-11 },  -- the far tails: the exponent's size
  gammaincc = { ulps = 64, rel = 1e-12, abs = 1e-16, scipy = 1e-11 },
  rel_entr = { ulps = 2, scipy = 1e-15 },
}

local function same_special(g, w)
  if w ~= w then return g ~= g end
  if w == math.huge or w == -math.huge then return g == w end
  return nil
end

local function check(label, got, want, tol, ulpf)
  local worst = 0
  for i = 1, #want do
    local g, w = got[i], want[i]
    local s = same_special(g, w)
    if s == false then error(("%s: element %d: %s, want %s"):format(label, i, tostring(g), tostring(w)), 2) end
    if s == nil then
      local allowed = tol.ulps * ulpf(w) + (tol.abs or 0) + (tol.rel or 0) * math.abs(w)
      if not (math.abs(g - w) <= allowed) then
        error(("%s: element %d: %.17g, want %.17g (%.3g ulp)"):format(label, i, g, w, math.abs(g - w) / ulpf(w)), 2)
      end
      worst = math.max(worst, math.abs(g - w) / ulpf(w))
    end
  end
  return worst
end

-- Against SciPy: within tol.scipy (relative, + the absolute floor) of SciPy's value wherever
-- SciPy's is itself that close to the exact one; where it is not (SciPy's own error: an
-- overflow to inf before the true overflow, a zero for a subnormal, the rounding of pi/4 into
-- a large argument, ...), at least as close to the exact value as SciPy's.
local function vs_scipy(name, got, scipy, exact, tol)
  local rel, abs = tol.scipy, tol.scipy_abs or tol.abs or 0
  local function near(a, b)
    local s = same_special(a, b)
    if s ~= nil then return s end
    return math.abs(a - b) <= rel * math.abs(b) + abs
  end
  local function err(a, b)
    local s = same_special(a, b)
    if s ~= nil then return s and 0 or math.huge end
    return math.abs(a - b)
  end
  local own = 0
  for i = 1, #exact do
    if near(scipy[i], exact[i]) then
      if not near(got[i], scipy[i]) then
        error(("%s vs SciPy: element %d: %.17g, SciPy %.17g"):format(name, i, got[i], scipy[i]), 2)
      end
    else
      own = own + 1
      if not (err(got[i], exact[i]) <= err(scipy[i], exact[i])) then
        error(("%s: element %d: %.17g is further from %.17g than SciPy's %.17g"):format(name, i, got[i], exact[i],
                                                                                         scipy[i]), 2)
      end
    end
  end
  return own
end

local function values(y) return y:astype("float64"):totable() end

describe("gpu.special: values", function()
  for _, dev in ipairs(h.devices()) do
    for name, c in pairs(FX.unary) do
      it(name .. " float64, float32 and SciPy on " .. dev, function()
        local tol = assert(TOL[name], name)
        local x = gpu.array(c.x, { dtype = "float64", device = dev })
        check(name .. " f64", values(S[name](x)), c.exact, tol, ulp)
        check(name .. " f64 (method)", values(x[name == "lgamma" and "lgamma" or name](x)), c.exact, tol, ulp)
        vs_scipy(name, values(S[name](x)), c.scipy, c.exact, tol)
        local x32 = x:astype("float32")
        local want = {}
        for i, v in ipairs(c.exact32) do want[i] = f32(v) end
        local y32 = S[name](x32)
        assert.equal("float32", y32.dtype)
        check(name .. " f32", values(y32), want, { ulps = 1 }, ulp32)
      end)
    end
    for name, c in pairs(FX.binary) do
      it(name .. " float64, float32 and SciPy on " .. dev, function()
        local tol = assert(TOL[name], name)
        local a = gpu.array(c.a, { dtype = "float64", device = dev })
        local b = gpu.array(c.b, { dtype = "float64", device = dev })
        local f = name == "polygamma" and gpu.polygamma or S[name]
        check(name .. " f64", values(f(a, b)), c.exact, tol, ulp)
        vs_scipy(name, values(f(a, b)), c.scipy, c.exact, tol)
        local want = {}
        for i, v in ipairs(c.exact32) do want[i] = f32(v) end
        local y32 = f(a:astype("float32"), b:astype("float32"))
        assert.equal("float32", y32.dtype)
        check(name .. " f32", values(y32), want, { ulps = 1, abs = (tol.abs or 0) }, ulp32)
      end)
    end
  end
end)

describe("gpu.special: digamma's block rows", function()
  it("give the bits of the element-by-element function (polygamma(0, x)), every branch", function()
    local g = gpu.random.Generator(5)
    local x = gpu.concat({ g:uniform(-30, 30, 3000, { dtype = "float64" }), g:uniform(0, 12, 3000, { dtype = "float64" }),
      gpu.array({ 0.0, -0.0, 0 / 0, 1 / 0, -1 / 0, -1, -2, 1, 2, 10, 9.999999999, 1e300, -1e-300, 1e-310 }, { dtype = "float64" }) })
    for _, dt in ipairs({ "float64", "float32" }) do
      local xx = x:astype(dt)
      local a, b = S.digamma(xx), gpu.polygamma(gpu.zeros(1, { dtype = dt }), xx)
      local same = gpu.logical_or(gpu.logical_and(a:eq(b), gpu.signbit(a):eq(gpu.signbit(b))),
        gpu.logical_and(a:isnan(), b:isnan()))
      assert.equal(xx.size, same:sum():item(), dt)
    end
  end)
end)

describe("gpu.special: names and dtypes", function()
  it("has torch.special's and SciPy's names, and the ops at gpu.*", function()
    for _, n in ipairs { "erf", "erfc", "erfcx", "erfinv", "erfcinv", "gammaln", "lgamma", "digamma", "psi",
                         "polygamma", "multigammaln", "zeta", "i0", "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr",
                         "logit", "expit", "xlogy", "xlog1py", "entr", "rel_entr", "beta", "betaln", "gammainc",
                         "gammaincc", "sinc", "bessel_j0", "bessel_j1", "j0", "j1", "exp1", "expi", "expm1",
                         "log1p" } do
      assert.is_function(S[n], n)
    end
    for _, n in ipairs { "erfc", "erfinv", "lgamma", "gammaln", "digamma", "polygamma", "i0", "xlogy", "logit",
                         "ndtri", "betaln" } do
      assert.is_function(gpu[n], n)
    end
    local x = gpu.array({ 0.25, 0.5, 2 }, { dtype = "float64" })
    assert.same(gpu.lgamma(x):totable(), gpu.gammaln(x):totable())
    assert.same(gpu.sigmoid(x):totable(), S.expit(x):totable())
    assert.same(gpu.digamma(x):totable(), S.psi(x):totable())
    assert.same(gpu.bessel_j0(x):totable(), S.j0(x):totable())
  end)

  it("integer and bool inputs compute in float32 (PyTorch's), the ops in NumPy's float", function()
    local i = gpu.array({ 1, 2, 3 }, { dtype = "int64" })
    assert.equal("float32", S.erfinv(i:astype("float64"):mul(0.25):astype("int64")).dtype)
    assert.equal("float32", S.lgamma(i).dtype)
    assert.equal("float32", S.digamma(gpu.array({ true, false })).dtype)
    assert.equal("float64", gpu.lgamma(i).dtype)                   -- the op: NumPy/SciPy's loop
    assert.equal("float32", S.xlogy(i, i).dtype)
    assert.equal("float64", S.xlogy(i, gpu.ones(3, { dtype = "float64" })).dtype)
    assert.equal("float16", S.xlogy(gpu.ones(3, { dtype = "float16" }), i).dtype)
    assert.equal("float32", S.xlogy(2, i).dtype)
    assert.equal("float16", S.ndtr(gpu.ones(2, { dtype = "float16" })).dtype)
    assert.equal("bfloat16", S.i0(gpu.ones(2, { dtype = "bfloat16" })).dtype)
    h.assert_close(S.lgamma(i), gpu.array({ 0, 0, math.log(2) }, { dtype = "float32" }), 1e-6)
  end)

  it("numbers on either side of a binary function", function()
    local x = gpu.array({ 0.5, 2, 4 }, { dtype = "float64" })
    h.assert_close(S.xlogy(2, x), x:log() * 2, 1e-15)
    h.assert_close(S.xlogy(x, 3), x * math.log(3), 1e-15)
    h.assert_close(S.zeta(2, x), gpu.polygamma(1, x), 1e-15)
    h.assert_close(S.gammainc(1, x), 1 - (-x):exp(), 1e-15)
  end)
end)

describe("gpu.special: the functions over the ops", function()
  it("polygamma(n, x) for n = 0 .. 4 (digamma, then the derivatives)", function()
    local x = gpu.array({ 0.3, 1, 2.5, 10 }, { dtype = "float64" })
    assert.same(S.digamma(x):totable(), S.polygamma(0, x):totable())
    -- psi'(1) = pi^2/6, psi''(1) = -2 zeta(3), psi'''(1) = pi^4/15
    local one = gpu.array({ 1 }, { dtype = "float64" })
    h.assert_close(S.polygamma(1, one), gpu.array({ math.pi ^ 2 / 6 }, { dtype = "float64" }), 1e-15)
    h.assert_close(S.polygamma(2, one), gpu.array({ -2 * 1.2020569031595942 }, { dtype = "float64" }), 1e-15)
    h.assert_close(S.polygamma(3, one), gpu.array({ math.pi ^ 4 / 15 }, { dtype = "float64" }), 1e-15)
  end)

  it("multigammaln against SciPy", function()
    local c = FX.multigammaln
    for i = 1, #c.a do
      local got = S.multigammaln(gpu.array({ c.a[i] }, { dtype = "float64" }), c.p[i]):item()
      assert(math.abs(got - c.scipy[i]) <= 1e-14 * math.abs(c.scipy[i]), ("multigammaln(%g, %d): %.17g, want %.17g")
             :format(c.a[i], c.p[i], got, c.scipy[i]))
    end
  end)

  it("betainc against the exact values and SciPy (1e-12 relative: the prefactor's exponent), float32 inputs", function()
    local c = FX.betainc
    local a, b = gpu.array(c.a, { dtype = "float64" }), gpu.array(c.b, { dtype = "float64" })
    local x = gpu.array(c.x, { dtype = "float64" })
    check("betainc", values(S.betainc(a, b, x)), c.exact, { ulps = 8, rel = 1e-12, abs = 1e-300 }, ulp)
    check("betainc vs SciPy", values(S.betainc(a, b, x)), c.scipy, { ulps = 8, rel = 1e-12, abs = 1e-300 }, ulp)
    local y32 = S.betainc(a:astype("float32"), b:astype("float32"), x:astype("float32"))
    assert.equal("float32", y32.dtype)
    h.assert_close(S.betainc(2, 3, gpu.array({ 0.25, 0.5 }, { dtype = "float64" })),
                   gpu.array({ 0.26171875, 0.6875 }, { dtype = "float64" }), 1e-15)          -- I_x(2, 3) = 1 - (1-x)^3 (1 + 3x)
    assert.same({ 2, 2 }, S.betainc(gpu.ones(2, 1), 1, gpu.array({ 0.5, 0.25 })).shape)
  end)

  it("logit's eps clamps to [eps, 1 - eps] (PyTorch's)", function()
    local x = gpu.array({ 0, 0.05, 0.3, 0.99, 1 }, { dtype = "float64" })
    local got = S.logit(x, 0.1):totable()
    local function lg(p) return math.log(p / (1 - p)) end
    local want = { lg(0.1), lg(0.1), lg(0.3), lg(0.9), lg(0.9) }
    for i = 1, 5 do assert(math.abs(got[i] - want[i]) < 1e-14, i) end
    assert.same({ -math.huge, math.huge }, S.logit(gpu.array({ 0, 1 }, { dtype = "float64" })):totable())
  end)

  it("sinc is gpu.sinc", function()
    if gpu.sinc == nil then return pending("gpu.sinc is the elem helper's (not in this branch)") end
    local x = gpu.array({ 0, 0.5, 1, 2.5 }, { dtype = "float64" })
    assert.same(gpu.sinc(x):totable(), S.sinc(x):totable())
  end)
end)

describe("gpu.special: errors", function()
  local x = gpu.array({ 0.25, 0.5 }, { dtype = "float64" })
  it("wrong types, counts and dtypes name the function and the fault", function()
    h.fails({ "gpu.special.erfinv", "gpu.array expected, got 'a'" }, S.erfinv, "a")
    h.fails({ "gpu.special.erfinv", "gpu.array expected, got number 0.5" }, S.erfinv, 0.5)
    h.fails({ "gpu.special.erfinv", "at most 1 argument" }, S.erfinv, x, 2)
    h.fails({ "gpu.special.xlogy", "at most 2 arguments" }, S.xlogy, x, x, x)
    h.fails({ "gpu.special.xlogy", "gpu.array or number expected, got table" }, S.xlogy, x, {})
    h.fails({ "gpu.special.xlogy", "at least one operand must be a gpu.array" }, S.xlogy, 1, 2)
    h.fails({ "gpu.special.erfinv", "not supported for complex128" }, S.erfinv, gpu.complex(x, x))
    h.fails({ "gpu.special.xlogy", "broadcast" }, S.xlogy, x, gpu.ones(3, { dtype = "float64" }))
    h.fails({ "gpu.special.betainc", "broadcast" }, S.betainc, x, x, gpu.ones(3, { dtype = "float64" }))
    h.fails({ "gpu.special.betainc", "at least one operand must be a gpu.array" }, S.betainc, 1, 2, 0.5)
    h.fails({ "gpu.special.betainc", "at most 3 arguments" }, S.betainc, x, x, x, x)
    local c = gpu.array({ 1 }, { dtype = "float64" })
    c:close()
    h.fails({ "gpu.special.ndtri", "closed" }, S.ndtri, c)
  end)

  it("polygamma's order, multigammaln's p and domain, logit's eps", function()
    h.fails({ "gpu.special.polygamma", "n: an integer >= 0 expected, got integer -1" }, S.polygamma, -1, x)
    h.fails({ "gpu.special.polygamma", "n: an integer >= 0 expected, got number 1.5" }, S.polygamma, 1.5, x)
    h.fails({ "gpu.special.polygamma", "gpu.array expected, got integer 2" }, S.polygamma, 1, 2)
    h.fails({ "gpu.special.multigammaln", "p: an integer >= 1 expected, got integer 0" }, S.multigammaln, x, 0)
    h.fails({ "gpu.special.multigammaln", "greater than (p - 1)/2" }, S.multigammaln, x, 3)
    h.fails({ "gpu.special.logit", "eps: a number in [0, 0.5] expected, got number 0.7" }, S.logit, x, 0.7)
    h.fails({ "gpu.special.logit", "eps: a number in [0, 0.5] expected, got 'a'" }, S.logit, x, "a")
    assert.same({ 0.25, 0.5 }, x:totable())                        -- nothing changed
  end)

  it("a derivative PyTorch does not have raises in backward, as PyTorch's", function()
    local a = gpu.array({ 1.5, 2.5 }, { dtype = "float64" }):requires_grad()
    local q = gpu.array({ 1.5, 2.5 }, { dtype = "float64" })
    h.fails({ "gammainc", "with respect to a", "not implemented" }, function()
      return ag.grad(gpu.gammainc(a, q):sum(), a)
    end)
    h.fails({ "zeta", "with respect to s", "not implemented" }, function()
      return ag.grad(gpu.zeta(a + 1, q):sum(), a)
    end)
  end)
end)

describe("gpu.special: gradients (float64, central differences)", function()
  local function P(...) return gpu.random.Generator(7):uniform(0.5, 1.5, { ... }, { dtype = "float64" }) end
  local cases = {
    { "multigammaln", function(a) return S.multigammaln(a + 2, 3) end, P(2, 3) },
    { "logit with eps", function(x) return S.logit(x * 0.5, 0.1) end, P(4) },
    { "polygamma(3, x)", function(x) return S.polygamma(3, x) end, P(4) },
    { "xlogy through gpu.special", function(x) return S.xlogy(x, x + 1) end, P(4) },
    { "log_ndtr far below", function(x) return S.log_ndtr(x * -20) end, P(3) },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local ok, msg = ag.gradcheck(c[2], { c[3] })
      assert(ok, msg)
    end)
  end
end)

describe("gpu.special on cuda against the cpu", function()
  local has_cuda = false
  for _, d in ipairs(h.devices()) do if d:match("^cuda") then has_cuda = true end end
  -- CUDA's libm (lgamma, erfc, exp, log, sin) is not glibc's: a few ulp apart
  local TOLS = { float64 = 1e-12, float32 = 2e-6 }
  it("every unary and binary fixture, float64 and float32", function()
    if not has_cuda then return pending("no GPU here") end
    for name, c in pairs(FX.unary) do
      for _, dt in ipairs { "float64", "float32" } do
        h.parity(function(x) return S[name](x) end, { gpu.array(c.x, { dtype = dt }) }, TOLS[dt])
      end
    end
    for name, c in pairs(FX.binary) do
      local f = name == "polygamma" and gpu.polygamma or S[name]
      for _, dt in ipairs { "float64", "float32" } do
        h.parity(function(a, b) return f(a, b) end, { gpu.array(c.a, { dtype = dt }), gpu.array(c.b, { dtype = dt }) },
                 TOLS[dt])
      end
    end
  end)
end)
