-- spec/complex_reduce_spec.lua — reductions, scans and sorts of complex arrays (sum mean
-- prod; var, std and norm with real results; max, min, argmax, argmin and sort in NumPy's
-- lexicographic order, NaN first to win or last to sort) and of the integer dtypes beside
-- int32/int64 (unsigned sums in uint64), and matmul, dot, vdot, inner, outer and einsum of
-- complex arrays, against NumPy (spec/fixtures/complex_reduce, made by
-- tools/gen_complex_reduce_fixtures.py), on every device.
local h = require "spec.helper"
local gpu = h.gpu

local REDUCE = dofile("spec/fixtures/complex_reduce/reduce.lua")
local PRODUCTS = dofile("spec/fixtures/complex_reduce/products.lua")

local PARTS = { complex64 = "float32", complex128 = "float64" }

-- A fixture array ({parts}, {ints}, {floats} or {bools}: see the generator) as dtype dt on dev.
local function make(entry, dt, dev)
  if entry.parts then
    local p = entry.parts
    return gpu.view_as_complex(gpu.array(p.data, { dtype = PARTS[dt], device = dev }):reshape(p.shape))
  end
  local a = entry.ints or entry.floats or entry.bools
  local base = entry.ints and "int64" or entry.bools and "bool" or dt
  return gpu.array(a.data, { dtype = base, device = dev }):reshape(a.shape):astype(dt)
end

-- Whether array r holds the fixture's want (dtype wdt): same dtype and shape, values within
-- a tolerance for floats (exact for integers and bools).
local function check(r, want, wdt, what)
  assert.equal(wdt, r.dtype, what .. ": dtype")
  local shape, data, got = nil, nil, nil
  if want.parts then
    shape = { table.unpack(want.parts.shape, 1, #want.parts.shape - 1) }
    data, got = want.parts.data, h.flat(gpu.view_as_real(r):cpu())
  elseif want.ints then
    shape, data, got = want.ints.shape, want.ints.data, h.flat(r:astype("int64"):cpu())
  else
    local a = want.floats or want.bools
    shape, data, got = a.shape, a.data, h.flat(r:cpu())
  end
  assert.same(shape, r.shape, what .. ": shape")
  local single = PARTS[wdt] == "float32" or wdt == "float32"
  local tol = (want.ints or want.bools) and 0 or single and 2e-5 or 1e-11
  local ok, msg = h.close(got, data, tol)
  assert(ok, what .. ": " .. tostring(msg))
end

local function describe_case(c)
  local ax = type(c.axis) == "table" and "{" .. table.concat(c.axis, ",") .. "}" or tostring(c.axis)
  local o = {}
  for k, v in pairs(c.opts) do o[#o + 1] = k .. "=" .. tostring(v) end
  table.sort(o)
  return ("%s(%s, axis %s%s)"):format(c.note, c.dtype, ax, #o > 0 and ", " .. table.concat(o, ", ") or "")
end

for _, dev in ipairs(h.devices()) do
  describe("reductions of complex and small integer arrays on " .. dev, function()
    it("give NumPy's values and dtypes", function()
      local n = 0
      for _, c in ipairs(REDUCE) do
        local x = make(c.x, c.dtype, dev)
        local r = gpu[c.fn](x, c.axis, c.opts)
        check(r, c.want, c.want_dtype, describe_case(c))
        n = n + 1
      end
      assert.is_true(n > 300)
    end)

    it("cover every complex and every integer dtype NumPy has", function()
      local seen = {}
      for _, c in ipairs(REDUCE) do seen[c.dtype] = true end
      for _, dt in ipairs(h.dtypes("uint", "int", "complex")) do
        if dt ~= "int32" and dt ~= "int64" then assert.is_true(seen[dt], dt) end
      end
    end)

    it("leave the input as it was", function()
      local x = gpu.view_as_complex(gpu.array({ { 1, 2 }, { -3, 0.5 }, { 0, 0 } }, { device = dev }))
      local before = gpu.view_as_real(x):totable()
      for _, f in ipairs({ "sum", "mean", "prod", "var", "std", "norm", "max", "min", "argmax", "argmin", "all", "any",
                           "cumsum", "cumprod", "sort", "argsort" }) do
        gpu[f](x)
        assert.same(before, gpu.view_as_real(x):totable(), f)
      end
    end)

    it("over non-contiguous views and broadcast views", function()
      local base = gpu.view_as_complex(gpu.random.randn(6, 5, 2, { device = dev, dtype = "float64" }))
      local t = base.T                                      -- (5, 6), strides (1, 5)
      local c = t:contiguous()
      for _, f in ipairs({ "sum", "mean", "prod", "var", "std", "norm", "max", "min", "argmax", "argmin" }) do
        for _, ax in ipairs({ 1, 2 }) do
          local a, b = t[f](t, ax), c[f](c, ax)
          if PARTS[a.dtype] then a, b = gpu.view_as_real(a), gpu.view_as_real(b) end
          h.assert_close(a, b, 1e-12)
        end
      end
      -- a broadcast axis of 2^40 repeats costs nothing
      local one = gpu.view_as_complex(gpu.array({ 0.5, -0.25 }, { device = dev, dtype = "float64" }))
      local big = one:reshape(1):expand(1 << 40)
      h.assert_close(gpu.view_as_real(big:sum()), { 0.5 * 2 ^ 40, -0.25 * 2 ^ 40 }, 1e-12)
      h.assert_close(gpu.view_as_real(big:mean()), { 0.5, -0.25 }, 1e-12)
      assert.equal(0, big:var():item())
      h.assert_close(big:norm(), math.sqrt(0.3125 * 2 ^ 40), 1e-12)
      assert.equal(1, big:argmax():item())
      -- prod over repeats: the power by squaring, (i)^(4k + 1) = i
      local i = gpu.view_as_complex(gpu.array({ 0, 1 }, { device = dev, dtype = "float64" })):reshape(1)
      h.assert_close(gpu.view_as_real(i:expand((1 << 40) + 1):prod()), { 0, 1 }, 1e-12)
    end)

    it("of empty arrays: the identities, NaN means, and errors where there is none (NumPy's)", function()
      local e = gpu.zeros({ 0, 3 }, { dtype = "complex64", device = dev })
      assert.same({ 0, 0 }, gpu.view_as_real(e:sum()):totable())
      assert.same({ 1, 0 }, gpu.view_as_real(e:prod()):totable())
      assert.same({ { 1, 0 }, { 1, 0 }, { 1, 0 } }, gpu.view_as_real(e:prod(1)):totable())
      assert.same({ 0, 3 }, e:cumprod(1).shape)
      local m = h.flat(gpu.view_as_real(e:mean()))
      assert.is_true(m[1] ~= m[1] and m[2] ~= m[2])
      assert.is_true(e:var():item() ~= e:var():item())
      assert.equal(0, e:norm():item())
      assert.is_true(e:all():item())
      assert.is_false(e:any():item())
      h.fails({ "max", "zero-size array" }, gpu.max, e)
      h.fails({ "argmin", "zero-size array" }, gpu.argmin, e)
      assert.same({ 0 }, e:max(2).shape)
    end)

    it("refuse what NumPy has no complex form of, naming the function", function()
      local x = gpu.view_as_complex(gpu.ones(3, 2, { device = dev }))
      h.fails({ "logsumexp", "complex64" }, gpu.logsumexp, x)
      h.fails({ "partition", "complex64" }, gpu.partition, x, 1)
      h.fails({ "sum", "bool" }, gpu.sum, x, nil, { dtype = "bool" })
      h.fails({ "mean", "int32" }, gpu.mean, x, nil, { dtype = "int32" })
      h.fails({ "sum", "axis 2 is out of range" }, gpu.sum, x, 2)
      h.fails({ "norm", "axis 2 is out of range" }, gpu.norm, x, 2)
    end)

    it("take NumPy's dtype option as a cast of the elements first", function()
      local x = gpu.view_as_complex(gpu.array({ { 1.5, 2 }, { 2.5, -1 } }, { device = dev }))
      assert.equal(4, x:sum(nil, { dtype = "float64" }):item())    -- the real parts
      assert.equal(3, x:sum(nil, { dtype = "int64" }):item())      -- each truncated
      local i32 = x:sum(nil, { dtype = "int32" })
      assert.equal("int32", i32.dtype)
      assert.equal(3, i32:item())
      assert.equal("int32", x:cumsum(nil, { dtype = "int32" }).dtype)
      assert.equal("complex64", gpu.array({ 1, 2 }, { device = dev }):mean(nil, { dtype = "complex64" }).dtype)
      local r = gpu.array({ 1, 2, 3 }, { device = dev }):cumsum(nil, { dtype = "complex128" })
      assert.equal("complex128", r.dtype)
      assert.same({ { 1, 0 }, { 3, 0 }, { 6, 0 } }, gpu.view_as_real(r):totable())
    end)
  end)

  describe("products of complex arrays on " .. dev, function()
    local function products(fns, want_count)
      local n = 0
      for _, c in ipairs(PRODUCTS) do
        if fns[c.fn] then
          local ops = {}
          for k, e in ipairs(c.operands) do ops[k] = make(e, c.dtypes[k], dev) end
          local what = c.fn .. (c.subs and (" " .. c.subs) or "") .. " of " .. table.concat(c.dtypes, ", ")
          local r = c.fn == "einsum" and gpu.einsum(c.subs, table.unpack(ops)) or gpu[c.fn](table.unpack(ops))
          check(r, c.want, c.want_dtype, what)
          n = n + 1
        end
      end
      assert.equal(want_count, n)
    end

    it("matmul, dot, inner and einsum give NumPy's values and dtypes", function()
      products({ matmul = true, dot = true, inner = true, einsum = true }, 46)
    end)

    for _, fn in ipairs({ "vdot", "outer" }) do
      it(fn .. " gives NumPy's values and dtypes", function()
        products({ [fn] = true }, fn == "vdot" and 4 or 2)
      end)
    end

    it("matmul of transposed and sliced complex operands without copies that change the answer", function()
      local a = gpu.view_as_complex(gpu.random.randn(5, 4, 2, { device = dev, dtype = "float64" }))
      local b = gpu.view_as_complex(gpu.random.randn(5, 3, 2, { device = dev, dtype = "float64" }))
      local want = gpu.matmul(a.T:contiguous(), b)
      h.assert_close(gpu.view_as_real(gpu.matmul(a.T, b)), gpu.view_as_real(want), 1e-12)
      local s = a[{ { 1, 5, 2 }, ":" }]                      -- rows 1, 3, 5
      h.assert_close(gpu.view_as_real(gpu.matmul(s, b[{ { 1, 4 }, ":" }])),
                     gpu.view_as_real(gpu.matmul(s:contiguous(), b[{ { 1, 4 }, ":" }]:contiguous())), 1e-12)
      -- K = 0: sums of nothing; an operand broadcast along K: K equal products
      local e = gpu.matmul(gpu.zeros(2, 0, { dtype = "complex64", device = dev }), gpu.zeros(0, 3, { dtype = "complex64", device = dev }))
      assert.same({ { { 0, 0 }, { 0, 0 }, { 0, 0 } }, { { 0, 0 }, { 0, 0 }, { 0, 0 } } }, gpu.view_as_real(e):totable())
      local one = gpu.view_as_complex(gpu.array({ 1, 2 }, { device = dev })):reshape(1, 1)
      local r = gpu.matmul(one:expand(1, 1000), one:expand(1000, 1))
      assert.same({ { { -3000, 4000 } } }, gpu.view_as_real(r):totable())   -- (1 + 2i)^2 * 1000
    end)
  end)
end
