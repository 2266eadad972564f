-- spec/random_spec.lua — gpu.random: statistics with fixed seeds, reproducibility,
-- generators and their state, known answers, CPU/GPU equality, errors.
-- Known answers: the raw Philox4x32-10 words are Random123's published test vector
-- (counter 0, key 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8); the other pinned values were
-- computed with an independent Python/NumPy implementation of the mapping documented in
-- kernels/philox.h (uniform = (w >> 8) * 2^-24, randint = lo + (x * m >> 64), Box-Muller).
local h = require "spec.helper"
local gpu = h.gpu
local R = gpu.random

local function flat(x) return h.flat(x) end

local function mean_var(t)
  local s, s2 = 0, 0
  for _, v in ipairs(t) do s = s + v; s2 = s2 + v * v end
  local m = s / #t
  return m, s2 / #t - m * m
end

-- erf (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7) for the normal CDF
local function erf(x)
  local s = x < 0 and -1 or 1
  x = math.abs(x)
  local t = 1 / (1 + 0.3275911 * x)
  local y = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * math.exp(-x * x)
  return s * y
end
local function phi(x) return 0.5 * (1 + erf(x / math.sqrt(2))) end

local function equal_tables(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

for _, dev in ipairs(h.devices()) do
  local on = { device = dev }
  local function opts(t) t = t or {}; t.device = dev; return t end

  describe("random statistics on " .. dev, function()
    before_each(function() R.seed(20261130) end)

    it("rand: float32 in [0, 1), mean 1/2, variance 1/12, flat histogram", function()
      local x = R.rand(100000, on)
      assert.are.equal("float32", x.dtype)
      assert.are.equal(dev, x.device:match("^%a+"))
      local t = flat(x)
      local lo, hi = math.huge, -math.huge
      for _, v in ipairs(t) do lo = math.min(lo, v); hi = math.max(hi, v) end
      assert.is_true(lo >= 0 and hi < 1)
      local m, v = mean_var(t)
      assert.is_true(math.abs(m - 0.5) < 0.005, "mean " .. m)
      assert.is_true(math.abs(v - 1 / 12) < 0.002, "variance " .. v)
      -- chi-square over 100 bins: 99 degrees of freedom, 0.1% critical value 148.2
      local bins, n = {}, #t
      for i = 1, 100 do bins[i] = 0 end
      for _, u in ipairs(t) do local b = math.floor(u * 100) + 1; bins[b] = bins[b] + 1 end
      local chi2, e = 0, n / 100
      for i = 1, 100 do chi2 = chi2 + (bins[i] - e) ^ 2 / e end
      assert.is_true(chi2 < 148.2, "chi-square " .. chi2)
    end)

    it("rand in float64, float16 and bfloat16 stays in [0, 1)", function()
      for _, dt in ipairs({ "float64", "float16", "bfloat16" }) do
        local x = R.rand(20000, opts{ dtype = dt })
        assert.are.equal(dt, x.dtype)
        local t = flat(x)
        local hi, lo = -1, 2
        for _, v in ipairs(t) do hi = math.max(hi, v); lo = math.min(lo, v) end
        assert.is_true(lo >= 0 and hi < 1, dt .. ": " .. lo .. " .. " .. hi)
        local m = mean_var(t)
        assert.is_true(math.abs(m - 0.5) < 0.01, dt .. " mean " .. m)
      end
    end)

    it("uniform(lo, hi) and shapes as varargs or a table", function()
      local x = R.uniform(-3, 5, 200, 50, on)
      assert.are.same({ 200, 50 }, x.shape)
      local t = flat(x)
      local m = mean_var(t)
      for _, v in ipairs(t) do assert.is_true(v >= -3 and v < 5) end
      assert.is_true(math.abs(m - 1) < 0.05, "mean " .. m)
      assert.are.same({ 4, 5 }, R.uniform(0, 1, { 4, 5 }, on).shape)
      assert.are.same({ 2, 3 }, gpu.rand({ 2, 3 }, on).shape)
      assert.are.equal(0, R.rand(on).ndim)
      h.assert_close(R.uniform(2, 2, 5, on), { 2, 2, 2, 2, 2 })
    end)

    it("randn: mean 0, std 1, Kolmogorov-Smirnov against the normal CDF", function()
      for _, dt in ipairs({ "float32", "float64" }) do
        local n = 50000
        local z = R.randn(n, opts{ dtype = dt })
        assert.are.equal(dt, z.dtype)
        local m, v = mean_var(flat(z))
        assert.is_true(math.abs(m) < 0.015, dt .. " mean " .. m)
        assert.is_true(math.abs(v - 1) < 0.02, dt .. " variance " .. v)
        local s = flat(z:cpu():sort())
        local d = 0
        for i = 1, n do
          local f = phi(s[i])
          d = math.max(d, math.abs(f - (i - 1) / n), math.abs(f - i / n))
        end
        -- 1% critical value of the KS statistic: 1.628 / sqrt(n)
        assert.is_true(d < 1.628 / math.sqrt(n), dt .. " KS D = " .. d)
      end
    end)

    it("normal(mean, std) scales, and float16/bfloat16 normals exist", function()
      local m, v = mean_var(flat(R.normal(10, 2, 40000, on)))
      assert.is_true(math.abs(m - 10) < 0.05, "mean " .. m)
      assert.is_true(math.abs(math.sqrt(v) - 2) < 0.05, "std " .. math.sqrt(v))
      for _, dt in ipairs({ "float16", "bfloat16" }) do
        local z = R.randn(10000, opts{ dtype = dt })
        assert.are.equal(dt, z.dtype)
        local mm, vv = mean_var(flat(z))
        assert.is_true(math.abs(mm) < 0.05 and math.abs(vv - 1) < 0.06, dt)
      end
    end)

    it("randint covers both ends, inclusive, evenly", function()
      local x = R.randint(1, 6, 60000, on)
      assert.are.equal("int64", x.dtype)
      local c = {}
      for _, v in ipairs(flat(x)) do
        assert.is_true(math.type(v) == "integer" and v >= 1 and v <= 6)
        c[v] = (c[v] or 0) + 1
      end
      for k = 1, 6 do assert.is_true(math.abs(c[k] - 10000) < 400, k .. ": " .. tostring(c[k])) end
      local y = R.randint(-2, 2, 1000, opts{ dtype = "int32" })
      assert.are.equal("int32", y.dtype)
      local seen = {}
      for _, v in ipairs(flat(y)) do seen[v] = true end
      assert.are.same({ [-2] = true, [-1] = true, [0] = true, [1] = true, [2] = true }, seen)
      h.assert_close(R.randint(7, 7, 4, on), { 7, 7, 7, 7 })
      -- the whole int64 range and ranges above 2^32 (128-bit draws)
      local big = flat(R.randint(math.mininteger, math.maxinteger, 1000, on))
      local neg = 0
      for _, v in ipairs(big) do if v < 0 then neg = neg + 1 end end
      assert.is_true(neg > 400 and neg < 600, "negatives " .. neg)
      for _, v in ipairs(flat(R.randint(0, 2 ^ 40, 1000, on))) do assert.is_true(v >= 0 and v <= 2 ^ 40) end
    end)

    it("randint fills every integer dtype over its whole range", function()
      for _, dt in ipairs(h.dtypes("uint", "int")) do
        local row = gpu._dtypes[dt]
        local x = R.randint(row.min, row.max, 4000, opts{ dtype = dt })   -- uint64's max: the float 2^64
        assert.are.equal(dt, x.dtype)
        local upper, seen = 0, {}
        for _, v in ipairs(flat(x)) do
          assert.is_true(v >= row.min and v <= row.max, dt .. ": " .. tostring(v))
          if v > row.min / 2 + row.max / 2 then upper = upper + 1 end
          seen[v] = true
        end
        assert.is_true(upper > 1800 and upper < 2200, dt .. ": " .. upper .. " in the upper half")
        if row.size == 1 then assert.is_true(seen[row.min] and seen[row.max], dt .. ": both ends") end
      end
      -- uint64 bounds past 2^63 - 1 are floats (2^63 .. 2^64 - 2048 exact)
      for _, v in ipairs(flat(R.randint(2 ^ 63, 2 ^ 63 + 4096, 200, opts{ dtype = "uint64" }))) do
        assert.is_true(v >= 2 ^ 63 and v <= 2 ^ 63 + 4096)
      end
    end)

    it("permutation is a permutation of 1..n; permutation(x) shuffles a copy", function()
      local p = flat(R.permutation(1000, on))
      local s = {}
      for i, v in ipairs(p) do s[i] = v end
      table.sort(s)
      for i = 1, 1000 do assert.are.equal(i, s[i]) end
      local moved = 0
      for i = 1, 1000 do if p[i] ~= i then moved = moved + 1 end end
      assert.is_true(moved > 900)
      assert.are.equal(0, R.permutation(0, on).size)
      assert.are.same({ 1 }, flat(R.permutation(1, on)))
      local x = gpu.arange(12):reshape(6, 2):to(dev)
      local y = R.permutation(x)
      h.assert_close(x, gpu.arange(12):reshape(6, 2))          -- unchanged
      local rows = {}
      for _, r in ipairs(y:totable()) do
        assert.are.equal(r[1] + 1, r[2]); rows[#rows + 1] = r[1]
      end
      table.sort(rows)
      assert.are.same({ 0, 2, 4, 6, 8, 10 }, rows)
    end)

    it("shuffle works in place along the first axis", function()
      local x = gpu.arange(40):reshape(20, 2):to(dev)
      local r = R.shuffle(x)
      assert.are.equal(x, r)
      local firsts = {}
      for _, row in ipairs(x:totable()) do
        assert.are.equal(row[1] + 1, row[2]); firsts[#firsts + 1] = row[1]
      end
      local moved = 0
      for i, v in ipairs(firsts) do if v ~= 2 * (i - 1) then moved = moved + 1 end end
      assert.is_true(moved > 10)
      table.sort(firsts)
      for i, v in ipairs(firsts) do assert.are.equal(2 * (i - 1), v) end
      x:shuffle()                                              -- the method form
      assert.are.equal(20, #x)
    end)

    it("bernoulli frequencies, p a number or an array", function()
      local b = R.bernoulli(0.3, 100000, on)
      assert.are.equal("float32", b.dtype)
      local m = mean_var(flat(b))
      assert.is_true(math.abs(m - 0.3) < 0.006, "mean " .. m)
      h.assert_close(R.bernoulli(0, 5, on), { 0, 0, 0, 0, 0 })
      h.assert_close(R.bernoulli(1, 5, on), { 1, 1, 1, 1, 1 })
      local p = gpu.array({ 0, 1, 0.5 }):to(dev)
      local bp = R.bernoulli(p, 4000, 3, { dtype = "bool" })
      assert.are.equal("bool", bp.dtype)
      local ones = 0
      for _, row in ipairs(bp:totable()) do
        assert.are.equal(false, row[1]); assert.are.equal(true, row[2])
        if row[3] then ones = ones + 1 end
      end
      assert.is_true(math.abs(ones - 2000) < 150, "p = 0.5: " .. ones)
      assert.are.same({ 3 }, p:bernoulli().shape)              -- shape and device from p
    end)

    it("choice with and without replacement", function()
      local c = flat(R.choice(10, 10, { replace = false, device = dev }))
      table.sort(c)
      assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, c)
      local w = flat(R.choice(3, 3000, on))
      local cnt = {}
      for _, v in ipairs(w) do cnt[v] = (cnt[v] or 0) + 1 end
      for k = 1, 3 do assert.is_true(math.abs(cnt[k] - 1000) < 150) end
      local x = gpu.array({ { 1, 1 }, { 2, 2 }, { 3, 3 } }):to(dev)
      local rows = R.choice(x, 2, { replace = false })
      assert.are.same({ 2, 2 }, rows.shape)
      local r = rows:totable()
      assert.are_not.equal(r[1][1], r[2][1])
      assert.are.equal(r[1][1], r[1][2])
    end)

    it("choice of no samples from an empty population is empty, as NumPy's", function()
      for _, replace in ipairs({ true, false }) do
        local c = R.choice(0, 0, { replace = replace, device = dev })
        assert.are.same({ 0 }, c.shape)
        assert.are.equal("int64", c.dtype)
        assert.are.same({ 0, 3 }, R.choice(gpu.zeros(0, 3):to(dev), 0, { replace = replace }).shape)
      end
      local ok, err = pcall(R.choice, 0, 1, { device = dev })
      assert.is_false(ok)
      assert.matches("choice: cannot choose from an empty population", err)
    end)
  end)

  describe("random reproducibility on " .. dev, function()
    it("the same seed gives the same numbers, another seed others", function()
      R.seed(7); local a = flat(R.rand(100, on)); local ai = flat(R.randint(1, 100, 50, on))
      R.seed(7); local b = flat(R.rand(100, on)); local bi = flat(R.randint(1, 100, 50, on))
      R.seed(8); local c = flat(R.rand(100, on))
      assert.is_true(equal_tables(a, b))
      assert.is_true(equal_tables(ai, bi))
      assert.is_false(equal_tables(a, c))
    end)

    it("the offset advances by whole counter blocks", function()
      R.seed(3); local all = flat(R.rand(8, on))
      R.seed(3); local x = flat(R.rand(4, on)); local y = flat(R.rand(4, on))
      for i = 1, 4 do assert.are.equal(all[i], x[i]); assert.are.equal(all[4 + i], y[i]) end
      assert.are.same({ seed = 3, offset = 2 }, R.get_state(dev))
      R.rand(5, on)                                            -- 5 floats: 2 blocks
      assert.are.equal(4, R.get_state(dev).offset)
      R.randint(1, 6, 3, on)                                   -- 2 words each: 2 blocks
      assert.are.equal(6, R.get_state(dev).offset)
      R.randn(3, opts{ dtype = "float64" })                    -- 2 per block
      assert.are.equal(8, R.get_state(dev).offset)
    end)

    it("get_state / set_state restore the stream", function()
      R.seed(11)
      R.rand(10, on)
      local st = R.get_state(dev)
      local a = flat(R.randn(20, on))
      R.rand(3, on)
      R.set_state(st, dev)
      assert.is_true(equal_tables(a, flat(R.randn(20, on))))
    end)

    it("Generator objects are independent streams with their own state", function()
      local g1 = R.Generator(5)
      local a = flat(g1:rand(10, on))
      R.seed(5)
      local g2 = R.Generator(5)
      R.rand(100, on)                                          -- the default stream moves
      local g3 = R.Generator(6)
      g3:rand(50, on)
      assert.is_true(equal_tables(a, flat(g2:rand(10, on))))   -- g2 untouched by the others
      assert.is_true(equal_tables(a, flat(R.Generator(5):rand(10, on))))
      R.seed(5)
      assert.is_true(equal_tables(a, flat(R.rand(10, on))))    -- default with seed 5: the same
      local st = g1:get_state()
      assert.are.same({ seed = 5, offset = 3 }, st)
      local b = flat(g1:randint(1, 1000, 10, on))
      g1:set_state(st)
      assert.is_true(equal_tables(b, flat(g1:randint(1, 1000, 10, on))))
      g1:seed(5)
      assert.is_true(equal_tables(a, flat(g1:rand(10, on))))
      assert.matches("gpu.Generator", tostring(g1))
      local p = flat(g1:permutation(10, on))
      assert.are.equal(10, #p)
      assert.are.equal("number", type(R.seed()))               -- a fresh seed, returned
    end)
  end)

  describe("random known answers on " .. dev, function()
    it("raw Philox words match Random123's test vector (counter 0, key 0)", function()
      R.seed(0)
      -- m = 2^32: the value is the top word of each 64-bit draw, w0 and w2 of block 0
      assert.are.same({ 0x6627e8d5, 0xbc57ac4c }, flat(R.randint(0, 4294967295, 2, on)))
    end)

    it("the first outputs for seed 42 are pinned", function()
      R.seed(42)
      assert.are.same({ 0.6129598617553711, 0.4685865044593811, 0.07323169708251953, 0.3408614993095398 },
                      flat(R.rand(4, on)))
      R.seed(42)
      assert.are.same({ 0.6129598811894158, 0.07323173744158384 }, flat(R.rand(2, opts{ dtype = "float64" })))
      R.seed(42)
      assert.are.same({ 4, 1, 6, 4, 5, 4 }, flat(R.randint(1, 6, 6, on)))
      R.seed(42)
      h.assert_close(R.randn(4, on), { -0.9701898041897792, 0.19401904601976838, -1.2356201461754905, 1.9239271539184188 }, 2e-6)
      R.seed(42)
      h.assert_close(R.randn(2, opts{ dtype = "float64" }), { 0.886497505901441, 0.4393560694379266 }, 1e-13)
      R.seed(42)
      assert.are.same({ 7, 2, 10, 1, 9, 5, 6, 4, 8, 3 }, flat(R.permutation(10, on)))
      R.seed(42)
      assert.are.same({ 7, 2, 10, 1 }, flat(R.choice(10, 4, { replace = false, device = dev })))
    end)
  end)

  describe("random errors on " .. dev, function()
    local function fails(pattern, f)
      local ok, err = pcall(f)
      assert.is_false(ok)
      assert.matches(pattern, tostring(err))
    end

    it("name the function and the fault, and leave the state alone", function()
      R.seed(1)
      local st = R.get_state(dev)
      fails("uniform.*lo %(3%) is greater than hi %(1%)", function() return R.uniform(3, 1, 5, on) end)
      fails("rand.*negative dimension", function() return R.rand(-1, on) end)
      fails("randint.*lo %(5%) is greater than hi %(2%)", function() return R.randint(5, 2, 3, on) end)
      fails("randint.*lo must be an integer", function() return R.randint(1.5, 3, 2, on) end)
      fails("randint.*hi must be an integer", function() return R.randint(1, 3.5, 2, on) end)
      fails("randint.*do not fit int32", function() return R.randint(0, 2 ^ 40, 2, opts{ dtype = "int32" }) end)
      fails("randint.*bounds %-1%.%.3 do not fit uint64", function() return R.randint(-1, 3, 2, opts{ dtype = "uint64" }) end)
      fails("randint.*lo %(9223372036854775808%) is greater than hi %(5%)",
            function() return R.randint(2 ^ 63, 5, 2, opts{ dtype = "uint64" }) end)
      fails("randint.*do not fit uint16", function() return R.randint(0, 65536, 2, opts{ dtype = "uint16" }) end)
      fails("bernoulli.*p must lie in %[0, 1%]", function() return R.bernoulli(1.5, 3, on) end)
      fails("bernoulli.*p must lie in %[0, 1%]", function() return R.bernoulli(-0.1, 3, on) end)
      fails("bernoulli.*p must lie in %[0, 1%]", function() return R.bernoulli(0 / 0, 3, on) end)
      local p = gpu.array({ 0.5, 2 }):to(dev)
      fails("bernoulli.*probabilities must lie in %[0, 1%]", function() return R.bernoulli(p) end)
      h.assert_close(p, { 0.5, 2 })
      fails("choice.*cannot take 5 samples from 3 without replacement", function() return R.choice(3, 5, { replace = false, device = dev }) end)
      fails("permutation.*n must be >= 0", function() return R.permutation(-2, on) end)
      fails("normal.*std must be finite and >= 0", function() return R.normal(0, -1, 3, on) end)
      fails("rand: dtype int32 is not supported for uniform numbers", function() return R.rand(3, opts{ dtype = "int32" }) end)
      fails("randn: dtype int64 is not supported for normal numbers", function() return R.randn(3, opts{ dtype = "int64" }) end)
      fails("randint: dtype float32 is not supported for random integers", function() return R.randint(1, 3, 2, opts{ dtype = "float32" }) end)
      fails("unknown dtype 'nope'", function() return R.rand(3, opts{ dtype = "nope" }) end)
      fails("shuffle.*0%-d", function() return R.shuffle(gpu.array(1):to(dev)) end)
      fails("seed must be an integer", function() return R.seed(1.5) end)
      fails("Generator expected", function() return R.Generator(1).rand(3) end)
      assert.are.same(st, R.get_state(dev))
    end)

    it("a choice that fails after its draw leaves the state alone", function()
      local x = gpu.ones({ 1, 1, 1 }, on):expand(1 << 20, 1 << 21, 1 << 21)   -- 2^62 elements
      local st = R.get_state(dev)
      fails("choice: array is too big", function() return x:choice(1 << 21) end)
      assert.are.same(st, R.get_state(dev))
    end)
  end)
end

-- The same seed and call sequence give the same numbers on the CPU and on the GPU: bit
-- for bit for uniforms, integers, permutations and Bernoulli draws; normals up to the
-- last bits of log/sqrt/sin/cos. Runs wherever a GPU answers.
describe("random CPU/GPU equality", function()
  local has_cuda = false
  for _, d in ipairs(h.devices()) do if d == "cuda" then has_cuda = true end end
  if not has_cuda then
    pending("no GPU here: CPU/GPU equality runs where gpu.is_available()")
    return
  end
  local function both(f)
    local gc, gg = R.Generator(1234), R.Generator(1234)
    local c = f(gc, "cpu")
    local g = f(gg, "cuda")
    assert.are.same(gc:get_state(), gg:get_state())
    return c, g:cpu()
  end
  it("uniforms, integers, bernoulli and permutations are bit-identical", function()
    for _, dt in ipairs({ "float32", "float64", "float16", "bfloat16" }) do
      for _, n in ipairs({ 1, 7, 1001, 65536 + 3 }) do
        local c, g = both(function(gen, d) gen:rand(5, { device = d }); return gen:uniform(-2, 3, n, { dtype = dt, device = d }) end)
        assert.is_true(equal_tables(flat(c), flat(g)), dt .. " n=" .. n)
      end
    end
    for _, b in ipairs({ { 1, 6 }, { -1000, 2 ^ 31 }, { math.mininteger, math.maxinteger }, { 0, 2 ^ 40 } }) do
      local c, g = both(function(gen, d) return gen:randint(b[1], b[2], 4099, { device = d }) end)
      assert.is_true(equal_tables(flat(c), flat(g)), "randint " .. b[1] .. ".." .. b[2])
    end
    local c, g = both(function(gen, d) return gen:randint(0, 200, 999, { dtype = "int32", device = d }) end)
    assert.is_true(equal_tables(flat(c), flat(g)))
    c, g = both(function(gen, d) return gen:bernoulli(0.37, 5003, { device = d }) end)
    assert.is_true(equal_tables(flat(c), flat(g)))
    local p = gpu.rand(3001)
    c, g = both(function(gen, d) return gen:bernoulli(p:to(d), { dtype = "bool" }) end)
    assert.is_true(equal_tables(flat(c), flat(g)))
    c, g = both(function(gen, d) return gen:permutation(5000, { device = d }) end)
    assert.is_true(equal_tables(flat(c), flat(g)))
    -- default generators: seed() seeds every device alike
    R.seed(99); local a = flat(R.rand(1000, { device = "cpu" }))
    R.seed(99); local b = flat(R.rand(1000, { device = "cuda" }))
    assert.is_true(equal_tables(a, b))
  end)
  it("normals agree to float rounding", function()
    for _, dt in ipairs({ "float32", "float64" }) do
      local c, g = both(function(gen, d) return gen:normal(1, 3, 100003, { dtype = dt, device = d }) end)
      h.assert_close(g, c, dt == "float64" and 1e-12 or 2e-6)
    end
  end)
end)
