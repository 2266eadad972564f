-- spec/reduce_spec.lua — reductions and scans: sum prod mean var std max min argmax
-- argmin all any norm logsumexp cumsum cumprod. Expected values are worked by hand
-- (small cases), by NumPy (noted), or by a plain-Lua reference in double precision
-- (ref_reduce below) over many shapes, axes and layouts.
local h = require "spec.helper"
local gpu = h.gpu

local NAN, INF = 0 / 0, math.huge

-- ---- a plain-Lua reference ------------------------------------------------------------

-- deterministic pseudo-random numbers (an LCG), so failures reproduce
local function lcg(seed)
  local s = seed
  return function()
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648
  end
end

local function prod(t) local p = 1; for _, v in ipairs(t) do p = p * v end; return p end

-- nested table of the given shape filled by f(i) (i = 1.. in C order)
local function build(shape, f)
  local i = 0
  local function rec(d)
    if d > #shape then i = i + 1; return f(i) end
    local t = {}
    for k = 1, shape[d] do t[k] = rec(d + 1) end
    return t
  end
  return rec(1)
end

-- flat list (C order) of an array's elements, as Lua numbers
local function flat(a) return h.flat(a) end

-- Reduces a flat list of the given shape over 'axes' (a set of 1-based axes) with
-- fold(list_of_values) -> value; returns the flat list of results (C order over the
-- kept axes).
local function ref_reduce(vals, shape, axes, fold)
  local nd = #shape
  local strides = {}
  local s = 1
  for d = nd, 1, -1 do strides[d] = s; s = s * shape[d] end
  local kept, red = {}, {}
  for d = 1, nd do if axes[d] then red[#red + 1] = d else kept[#kept + 1] = d end end
  local out = {}
  local function each(dims, k, base, fn)
    if k > #dims then return fn(base) end
    local d = dims[k]
    for i = 0, shape[d] - 1 do each(dims, k + 1, base + i * strides[d], fn) end
  end
  each(kept, 1, 0, function(base)
    local list = {}
    each(red, 1, base, function(off) list[#list + 1] = vals[off + 1] end)
    out[#out + 1] = fold(list)
  end)
  return out
end

local folds = {}
function folds.sum(l) local s = 0; for _, v in ipairs(l) do s = s + v end; return s end
function folds.prod(l) local s = 1; for _, v in ipairs(l) do s = s * v end; return s end
function folds.mean(l) return folds.sum(l) / #l end
function folds.var(l)
  local m = folds.mean(l); local s = 0
  for _, v in ipairs(l) do s = s + (v - m) ^ 2 end
  return s / #l
end
function folds.std(l) return math.sqrt(folds.var(l)) end
function folds.max(l) local m = -INF; for _, v in ipairs(l) do if v ~= v then return NAN end; m = math.max(m, v) end; return m end
function folds.min(l) local m = INF; for _, v in ipairs(l) do if v ~= v then return NAN end; m = math.min(m, v) end; return m end
function folds.argmax(l) local b = 1; for i, v in ipairs(l) do if v ~= v then return i end; if v > l[b] then b = i end end; return b end
function folds.argmin(l) local b = 1; for i, v in ipairs(l) do if v ~= v then return i end; if v < l[b] then b = i end end; return b end
function folds.all(l) for _, v in ipairs(l) do if v == 0 then return false end end; return true end
function folds.any(l) for _, v in ipairs(l) do if v ~= 0 then return true end end; return false end
function folds.norm(l) local s = 0; for _, v in ipairs(l) do s = s + v * v end; return math.sqrt(s) end
function folds.logsumexp(l)
  local m = folds.max(l)
  if m ~= m then return NAN end
  local sh = (m == INF or m == -INF) and 0 or m
  local s = 0
  for _, v in ipairs(l) do s = s + math.exp(v - sh) end
  return math.log(s) + sh
end

local function axis_set(axes, nd)
  local set = {}
  if axes == nil then for d = 1, nd do set[d] = true end; return set end
  if type(axes) == "number" then axes = { axes } end
  for _, a in ipairs(axes) do set[a < 0 and a + nd + 1 or a] = true end
  return set
end

local function shape_str(a) return "(" .. table.concat(a.shape, ",") .. ")" end

-- Each device; ops that the device does not support yet are pending there, not failures.
local function each_device(fn)
  for _, d in ipairs(h.devices()) do
    local ok, err = pcall(gpu.sum, gpu.zeros(2, { device = d }))
    if ok then fn(d)
    else
      describe("on " .. d, function()
        pending("reductions on " .. d .. ": " .. tostring(err))
      end)
    end
  end
end

each_device(function(dev)
  local function A(t, dt) return gpu.array(t, { dtype = dt or "float32", device = dev }) end

  describe("reductions on " .. dev, function()
    local x
    before_each(function() x = A({ { 1, 2, 3 }, { 4, 5, 6 } }) end)

    it("sum over all, one axis, a table of axes, negative axes and keepdims", function()
      local s = x:sum()
      assert.equal(0, s.ndim)
      assert.equal(dev, s.device:sub(1, #dev))
      assert.equal(21, s:item())
      h.assert_close(x:sum(1), A({ 5, 7, 9 }))
      h.assert_close(x:sum(2), A({ 6, 15 }))
      h.assert_close(x:sum(-1), A({ 6, 15 }))
      h.assert_close(x:sum(-2), A({ 5, 7, 9 }))
      h.assert_close(x:sum({ 1, 2 }), A(21))
      h.assert_close(x:sum({ 2, 1 }), A(21))
      h.assert_close(x:sum(-1, { keepdims = true }), A({ { 6 }, { 15 } }))
      h.assert_close(x:sum({ keepdims = true }), A({ { 21 } }))
      h.assert_close(x:sum(nil, { keepdims = true }), A({ { 21 } }))
      h.assert_close(gpu.sum(x, 2), x:sum(2))
      assert.is_true(x:sum() < 22)
      assert.is_true(20 < x:sum())
    end)

    it("an empty table of axes reduces nothing (NumPy's axis=())", function()
      local s = gpu.array({ { 1, 2 } }, { dtype = "int32", device = dev }):sum({})
      assert.same({ 1, 2 }, s.shape)
      assert.equal("int64", s.dtype)
      assert.same({ { 1, 2 } }, s:totable())
    end)

    it("prod, mean, var, std (ddof), hand-computed", function()
      assert.equal(720, x:prod():item())
      h.assert_close(x:prod(1), A({ 4, 10, 18 }))
      h.assert_close(x:prod(2), A({ 6, 120 }))
      assert.equal(3.5, x:mean():item())
      h.assert_close(x:mean(1), A({ 2.5, 3.5, 4.5 }))
      h.assert_close(x:var(), A(35 / 12), 1e-6)
      h.assert_close(x:var(1), A({ 2.25, 2.25, 2.25 }))
      h.assert_close(x:var(2, { ddof = 1 }), A({ 1, 1 }))
      h.assert_close(x:var(nil, { ddof = 1 }), A(3.5))
      h.assert_close(x:std(), A(math.sqrt(35 / 12)), 1e-6)
      h.assert_close(x:std(1, { ddof = 1 }), A({ math.sqrt(4.5), math.sqrt(4.5), math.sqrt(4.5) }), 1e-6)
      h.assert_close(gpu.std(x, 2, { keepdims = true }), A({ { math.sqrt(2 / 3) }, { math.sqrt(2 / 3) } }), 1e-6)
    end)

    it("max, min, argmax, argmin (1-based positions)", function()
      assert.equal(6, x:max():item())
      assert.equal(1, x:min():item())
      h.assert_close(x:max(1), A({ 4, 5, 6 }))
      h.assert_close(x:min(2), A({ 1, 4 }))
      local am = x:argmax()
      assert.equal(0, am.ndim)
      assert.equal("int64", am.dtype)
      assert.equal(6, am:item())
      assert.equal(1, x:argmin():item())
      assert.same({ 2, 2, 2 }, x:argmax(1):totable())
      assert.same({ 3, 3 }, x:argmax(2):totable())
      assert.same({ 1, 1, 1 }, x:argmin(1):totable())
      assert.same({ { 1 }, { 1 } }, x:argmin(-1, { keepdims = true }):totable())
      -- ties keep the first position (NumPy)
      assert.equal(2, A({ 1, 5, 5, 2 }):argmax():item())
      assert.equal(1, A({ 0, 5, 0 }):argmin():item())
      -- argmax of the transpose counts along the transposed axes
      assert.same({ 3, 3 }, x.T:argmax(1):totable())
    end)

    it("all and any (NaN counts as true)", function()
      local b = A({ { 1, 0, 1 }, { 1, 1, 1 } })
      assert.is_false(b:all():item())
      assert.is_true(b:any():item())
      assert.same({ true, false, true }, b:all(1):totable())
      assert.same({ false, true }, b:all(2):totable())
      assert.same({ true, true }, b:any(2):totable())
      assert.is_false(A({ 0, 0 }):any():item())
      assert.is_true(A({ NAN, 1 }):all():item())
      assert.equal("bool", b:all().dtype)
      local bb = gpu.array({ true, false }, { device = dev })
      assert.is_false(bb:all():item())
      assert.is_true(bb:any():item())
    end)

    it("norm: Frobenius by default, vector orders over an axis, matrix 1/inf norms", function()
      h.assert_close(x:norm(), A(math.sqrt(91)), 1e-6)
      h.assert_close(x:norm({ 1, 2 }), A(math.sqrt(91)), 1e-6)
      h.assert_close(x:norm(2), A({ math.sqrt(14), math.sqrt(77) }), 1e-6)
      h.assert_close(x:norm(2, { ord = 1 }), A({ 6, 15 }))
      h.assert_close(x:norm(1, { ord = math.huge }), A({ 4, 5, 6 }))
      h.assert_close(x:norm(1, { ord = -math.huge }), A({ 1, 2, 3 }))
      h.assert_close(x:norm(2, { ord = 2 }), A({ math.sqrt(14), math.sqrt(77) }), 1e-6)
      h.assert_close(x:norm(2, { ord = 3 }), A({ 36 ^ (1 / 3), 405 ^ (1 / 3) }), 1e-6)
      h.assert_close(A({ 0, 2, 0, -1 }):norm(nil, { ord = 0 }), A(2))
      h.assert_close(A({ 3, -4 }):norm(nil, { ord = 1 }), A(7))
      h.assert_close(A({ 3, -4 }):norm(), A(5))
      -- matrix norms (NumPy: ord=1 max column sum 9, inf max row sum 15, -1 min column sum 5)
      h.assert_close(x:norm(nil, { ord = 1 }), A(9))
      h.assert_close(x:norm(nil, { ord = math.huge }), A(15))
      h.assert_close(x:norm(nil, { ord = -1 }), A(5))
      h.assert_close(x:norm({ 2, 1 }, { ord = 1 }), A(15))
      h.assert_close(x:norm(nil, { ord = 1, keepdims = true }), A({ { 9 } }))
      h.assert_close(x:norm(nil, { ord = "fro" }), A(math.sqrt(91)), 1e-6)
    end)

    it("logsumexp is max-shifted (no overflow) and handles infinities like scipy", function()
      -- NumPy: log(sum(exp(1..6))) = 6.456193316...
      h.assert_close(x:logsumexp(), A(6.4561933), 1e-6)
      h.assert_close(x:logsumexp(2), A({ 3.4076059, 6.4076059 }), 1e-6)
      h.assert_close(x:logsumexp(1, { keepdims = true }), A({ { 4.0485873, 5.0485873, 6.0485873 } }), 1e-6)
      h.assert_close(A({ 1000, 1000 }):logsumexp(), A(1000 + math.log(2)), 1e-6)
      h.assert_close(A({ -1000, -1000 }):logsumexp(), A(-1000 + math.log(2)), 1e-6)
      assert.equal(-INF, A({ -INF, -INF }):logsumexp():item())
      assert.equal(INF, A({ INF, 1 }):logsumexp():item())
      assert.equal(INF, A({ INF, -INF }):logsumexp():item())
      local n = A({ NAN, 1 }):logsumexp():item()
      assert.is_true(n ~= n)
      assert.equal(-INF, A({}):logsumexp():item())
    end)

    it("cumsum and cumprod: flattened without an axis, else along it", function()
      h.assert_close(x:cumsum(), A({ 1, 3, 6, 10, 15, 21 }))
      h.assert_close(x:cumsum(1), A({ { 1, 2, 3 }, { 5, 7, 9 } }))
      h.assert_close(x:cumsum(2), A({ { 1, 3, 6 }, { 4, 9, 15 } }))
      h.assert_close(x:cumsum(-1), A({ { 1, 3, 6 }, { 4, 9, 15 } }))
      h.assert_close(x:cumprod(), A({ 1, 2, 6, 24, 120, 720 }))
      h.assert_close(x:cumprod(1), A({ { 1, 2, 3 }, { 4, 10, 18 } }))
      h.assert_close(gpu.cumprod(x, 2), A({ { 1, 2, 6 }, { 4, 20, 120 } }))
      h.assert_close(x.T:cumsum(2), A({ { 1, 5 }, { 2, 7 }, { 3, 9 } }))
      h.assert_close(x.T:cumsum(), A({ 1, 5, 7, 12, 15, 21 }))
      local c = gpu.array({ 1, 2, 3 }, { dtype = "int32", device = dev }):cumsum()
      assert.equal("int64", c.dtype)
      assert.same({ 1, 3, 6 }, c:totable())
      h.assert_close(x:cumsum(2, { dtype = "float64" }), gpu.array({ { 1, 3, 6 }, { 4, 9, 15 } }, { dtype = "float64" }))
      assert.equal("float64", x:cumsum(nil, { dtype = "float64" }).dtype)
      local e = A({}):cumsum()
      assert.same({ 0 }, e.shape)
      -- long lines and wide rows (chunked paths)
      local ones = gpu.ones(5000, { device = dev })
      assert.equal(5000, ones:cumsum():totable()[5000])
      local w = gpu.ones(3, 5000, { device = dev }):cumsum(1)
      assert.same({ 3, 3 }, { w[{ 3, 1 }], w[{ 3, 5000 }] })
    end)

    it("0-d input: reductions give 0-d, cumsum gives 1-D", function()
      local z = A(5)
      assert.equal(5, z:sum():item())
      assert.equal(0, z:sum().ndim)
      assert.equal(5, z:max():item())
      assert.equal(1, z:argmax():item())
      assert.equal(0, z:var():item())
      assert.equal(5, z:norm():item())
      assert.same({ 1 }, z:cumsum().shape)
      assert.same({ 5 }, z:cumsum():totable())
      assert.equal(0, z:sum({ keepdims = true }).ndim)
    end)

    it("size-1 axes and size-0 axes", function()
      h.assert_close(A({ { 1, 2, 3 } }):sum(1), A({ 1, 2, 3 }))
      h.assert_close(A({ { 1 }, { 2 } }):sum(2), A({ 1, 2 }))
      h.assert_close(A({ { 1 }, { 2 } }):max(2, { keepdims = true }), A({ { 1 }, { 2 } }))
      assert.same({ 1, 1 }, A({ { 7 } }):argmax(2, { keepdims = true }).shape)
      assert.equal(1, A({ { 7 } }):argmax(2):item())
      local e = gpu.zeros(0, 3, { device = dev })
      assert.equal(0, A({}):sum():item())
      assert.equal(1, A({}):prod():item())
      local m = A({}):mean():item()
      assert.is_true(m ~= m)
      local v = A({}):var():item()
      assert.is_true(v ~= v)
      assert.equal(0, A({}):norm():item())
      assert.is_true(A({}):all():item())
      assert.is_false(A({}):any():item())
      h.assert_close(e:sum(1), A({ 0, 0, 0 }))
      h.assert_close(e:prod(1), A({ 1, 1, 1 }))
      assert.same({ 0 }, e:sum(2).shape)
      assert.same({ 0 }, e:max(2).shape)           -- nothing to reduce: no error (NumPy)
      assert.same({ 0 }, e:argmax(2).shape)
      assert.same({ 1, 3 }, e:sum(1, { keepdims = true }).shape)
      assert.same({ 0, 3 }, e:cumsum(1).shape)
    end)

    it("result dtypes follow NumPy", function()
      local dts = h.dtypes()
      local isint, isuint = h.dtype_set("bool", "uint", "int"), h.dtype_set("uint")
      local real = { complex64 = "float32", complex128 = "float64" }
      for _, dt in ipairs(dts) do
        local a = gpu.ones(2, 3, { dtype = dt, device = dev })
        -- NumPy 2: unsigned sums in uint64, bool and signed in int64; a complex array's
        -- var, std and norm are real
        local sumdt = isuint[dt] and "uint64" or isint[dt] and "int64" or dt
        local fdt = isint[dt] and "float64" or dt
        for _, f in ipairs({ "sum", "prod", "cumsum", "cumprod" }) do
          assert.equal(sumdt, a[f](a).dtype, f .. " of " .. dt)
          assert.equal(sumdt, a[f](a, 1).dtype, f .. "(1) of " .. dt)
        end
        for _, f in ipairs({ "mean", "var", "std", "norm", "logsumexp" }) do
          local want = f ~= "mean" and real[fdt] or fdt
          if f == "logsumexp" and real[dt] then
            h.fails({ "logsumexp", "not supported for " .. dt }, a.logsumexp, a)
          else
            assert.equal(want, a[f](a).dtype, f .. " of " .. dt)
            assert.equal(want, a[f](a, 2).dtype, f .. "(2) of " .. dt)
          end
        end
        for _, f in ipairs({ "max", "min" }) do assert.equal(dt, a[f](a).dtype, f .. " of " .. dt) end
        for _, f in ipairs({ "argmax", "argmin" }) do assert.equal("int64", a[f](a, 1).dtype, f .. " of " .. dt) end
        for _, f in ipairs({ "all", "any" }) do assert.equal("bool", a[f](a, 2).dtype, f .. " of " .. dt) end
        -- and the values: 6 ones (a complex one's parts: 6 and 0)
        local function value(r) return real[dt] and gpu.view_as_real(r):totable() or r:item() end
        assert.same(real[dt] and { 6, 0 } or 6, value(a:sum()), "sum of " .. dt)
        assert.same(real[dt] and { 1, 0 } or 1, value(a:mean()), "mean of " .. dt)
        assert.same(real[dt] and { 1, 0 } or 1, real[dt] and value(a:max()) or a:max():item() == true and 1 or a:max():item(), "max of " .. dt)
      end
      assert.equal("float64", x:sum(nil, { dtype = "float64" }).dtype)
      assert.equal("float32", gpu.ones(3, { dtype = "int32", device = dev }):mean(nil, { dtype = "float32" }).dtype)
      assert.equal("float64", x:mean(nil, { dtype = "float64" }).dtype)
      assert.equal(3.5, x:mean(nil, { dtype = "float64" }):item())
      local i = x:sum(nil, { dtype = "int32" })
      assert.equal("int32", i.dtype)
      assert.equal(21, i:item())
      -- a float summed as ints truncates each element first (NumPy's unsafe cast)
      assert.equal(2, A({ 1.5, 1.5 }):sum(nil, { dtype = "int64" }):item())
    end)

    it("integers are exact and wrap like NumPy's int64", function()
      local big = gpu.array({ 2 ^ 53, 1, 1 }, { dtype = "int64", device = dev })
      assert.equal(math.tointeger(2 ^ 53) + 2, big:sum():item())
      local i32 = gpu.array({ 2147483647, 2147483647 }, { dtype = "int32", device = dev })
      assert.equal(4294967294, i32:sum():item())
      assert.equal(300, gpu.array({ 200, 100 }, { dtype = "uint8", device = dev }):sum():item())
      assert.equal(2, gpu.array({ true, false, true }, { device = dev }):sum():item())
      local wrap = gpu.array({ math.maxinteger, 1 }, { dtype = "int64", device = dev })
      assert.equal(math.mininteger, wrap:sum():item())
      assert.equal(-2, gpu.array({ math.maxinteger, 2 }, { dtype = "int64", device = dev }):prod():item())
      assert.equal(math.maxinteger, wrap:max():item())
      assert.equal(2, wrap:argmin():item())
      h.assert_close(gpu.array({ 1, 2 }, { dtype = "int64", device = dev }):mean(), gpu.array(1.5, { dtype = "float64" }))
      assert.equal(3, gpu.array({ { 1, 5 }, { 7, 2 } }, { dtype = "int32", device = dev }):argmax():item())
    end)

    it("float16 and bfloat16 accumulate in float32", function()
      -- 1000 x float16(0.1) = 99.976 in float32, 100 once rounded to float16; summing
      -- in float16 itself would drift far off
      local a = gpu.full({ 1000 }, 0.1, { dtype = "float16", device = dev })
      assert.equal(100, a:sum():item())
      assert.equal("float16", a:sum().dtype)
      h.assert_close(a:mean(), gpu.array(0.1, { dtype = "float16" }), 1e-3)
      local b = gpu.full({ 4096 }, 1, { dtype = "bfloat16", device = dev })
      assert.equal(4096, b:sum():item())         -- bfloat16 steps are 32 at 4096
      assert.equal(4096, b:cumsum():totable()[4096])
    end)

    it("NaN and infinities propagate like NumPy", function()
      local function isnan(v) return v ~= v end
      local n = A({ 1, NAN, 3 })
      assert.is_true(isnan(n:sum():item()))
      assert.is_true(isnan(n:max():item()))
      assert.is_true(isnan(n:min():item()))
      assert.is_true(isnan(n:mean():item()))
      assert.equal(2, n:argmax():item())
      assert.equal(2, n:argmin():item())
      assert.equal(2, A({ 1, NAN, NAN }):argmax():item())
      assert.is_true(isnan(A({ INF, -INF }):sum():item()))
      assert.equal(INF, A({ INF, 1 }):max():item())
      assert.equal(-INF, A({ -INF, -INF }):max():item())
      assert.equal(1, A({ INF, 1 }):argmax():item())
      assert.equal(INF, A({ 1e30, 1e30 }):prod():item())
      -- long vectors (the vectorised fast path, then the exact one) and rows
      for _, pos in ipairs({ 1, 37, 5000, 9999 }) do
        local v = gpu.zeros(10000, { device = dev })
        v[pos] = NAN
        assert.is_true(isnan(v:max():item()), "max, NaN at " .. pos)
        assert.is_true(isnan(v:min():item()), "min, NaN at " .. pos)
        assert.equal(pos, v:argmax():item(), "argmax, NaN at " .. pos)
        assert.equal(pos, v:argmin():item(), "argmin, NaN at " .. pos)
        v[pos] = INF
        assert.equal(INF, v:max():item())
        assert.equal(pos, v:argmax():item())
        v[pos] = -INF
        assert.equal(-INF, v:min():item())
        assert.equal(0, v:max():item())
        assert.equal(pos, v:argmin():item())
        assert.equal(pos == 1 and 2 or 1, v:argmax():item())
      end
      local m = gpu.zeros(100, 64, { device = dev })
      m[{ 40, 3 }] = NAN
      m[{ 50, 5 }] = INF
      local cm = m:max(1)
      assert.is_true(isnan(cm[3]))
      assert.equal(INF, cm[5])
      assert.equal(0, cm[4])
      assert.equal(40, m:argmax(1)[3])
      assert.equal(50, m:argmax(1)[5])
      assert.equal(1, m:argmax(1)[4])
      assert.is_true(isnan(m:sum(1)[3]))
      assert.equal(0, m:sum(1)[4])
    end)

    it("float32 sums are pairwise: 1e7 x 0.1 within 1e-6 of 1e6", function()
      local a = gpu.full({ 10000000 }, 0.1, { device = dev })
      local s = a:sum():item()
      assert.is_true(math.abs(s - 1e6) / 1e6 < 1e-6, "sum = " .. s)
      assert.is_true(math.abs(a:mean():item() - 0.1) < 1e-7)
      -- down the columns too (the outer shape: rows accumulate pairwise)
      local c = gpu.full({ 1000000, 4 }, 0.1, { device = dev }):sum(1)
      for _, v in ipairs(c:totable()) do assert.is_true(math.abs(v - 1e5) / 1e5 < 1e-6, "column sum = " .. v) end
      -- a transposed and a strided view go through the generic paths
      local t = gpu.full({ 4, 1000000 }, 0.1, { device = dev }).T:sum(1)
      for _, v in ipairs(t:totable()) do assert.is_true(math.abs(v - 1e5) / 1e5 < 1e-6, "transposed sum = " .. v) end
    end)

    it("var is two-pass (no cancellation around a large mean)", function()
      local a = A({ 10000, 10001, 10002, 10003, 10004, 10005, 10006, 10007, 10008, 10009 })
      assert.equal(8.25, a:var():item())
      local b = gpu.full({ 100000 }, 1e4, { device = dev }) + gpu.arange(100000, { device = dev }) % 2
      h.assert_close(b:var(), A(0.25), 1e-5)
    end)

    it("non-contiguous inputs: transposed, sliced with steps, broadcast views", function()
      h.assert_close(x.T:sum(1), A({ 6, 15 }))
      h.assert_close(x.T:sum(2), A({ 5, 7, 9 }))
      h.assert_close(x.T:max(2), A({ 4, 5, 6 }))
      local s = x[{ ":", { 1, 3, 2 } }]                 -- columns 1 and 3
      h.assert_close(s:sum(), A(14))
      h.assert_close(s:sum(1), A({ 5, 9 }))
      h.assert_close(s:mean(2), A({ 2, 5 }))
      local e = A({ 1, 2, 3 }):expand(4, 3)
      h.assert_close(e:sum(1), A({ 4, 8, 12 }))
      h.assert_close(e:sum(), A(24))
      h.assert_close(e:var(1), A({ 0, 0, 0 }))
      h.assert_close(e:cumsum(1)[4], A({ 4, 8, 12 }))
      local c = A({ { 1 }, { 2 } }):expand(2, 1000)
      h.assert_close(c:sum(2), A({ 1000, 2000 }))
    end)

    describe("over broadcast views, the repeats are counted, not looped over", function()
      local ops = { "sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin", "all", "any", "norm", "logsumexp" }

      it("equal the reductions of their contiguous copies", function()
        local iscomplex = h.dtype_set("complex")
        -- a complex result compared through its parts
        local function parts(r) return iscomplex[r.dtype] and gpu.view_as_real(r) or r end
        for _, dt in ipairs(h.dtypes_except("bfloat16")) do
          local x = gpu.arange(1, 7, { device = dev }):reshape(2, 1, 3):astype(dt):expand(2, 300, 3)
          if iscomplex[dt] then   -- parts of both signs (the products' powers turn), |x| < 1
            x = gpu.view_as_complex((gpu.arange(-5, 7, { device = dev, dtype = dt == "complex64" and "float32" or "float64" }) / 8)
              :reshape(2, 1, 3, 2)):expand(2, 300, 3)
          end
          local c = x:contiguous()
          for _, f in ipairs(ops) do if not (iscomplex[dt] and f == "logsumexp") then
            local options = ({ sum = { {}, { dtype = "uint8" }, { dtype = "int32" } }, prod = { {}, { dtype = "uint8" } },
              var = { {}, { ddof = 1 }, { ddof = 600 } }, norm = { {}, { ord = 0 }, { ord = 3 }, { ord = math.huge } } })[f] or { {} }
            local axes = (f == "argmax" or f == "argmin") and { false, 1, 2, 3 } or { false, 1, 2, 3, { 1, 2 }, { 2, 3 } }
            for _, ax in ipairs(axes) do
              for _, o in ipairs(options) do
                if not (o.ord and ax ~= 1 and ax ~= 2 and ax ~= 3) then   -- ord: a vector norm
                  local what = ("%s %s axis %s %s"):format(f, dt, type(ax) == "table" and table.concat(ax, ",") or tostring(ax),
                    tostring(o.dtype or o.ddof or o.ord))
                  local ok, msg = h.close(parts(x[f](x, ax or nil, o)), parts(c[f](c, ax or nil, o)),
                                          dt == "float16" and 1e-2 or 1e-5)
                  assert(ok, what .. ": " .. tostring(msg))
                end
              end
            end
          end end
        end
      end)

      it("of 2^40 and 2^62 elements take no time", function()
        for _, x in ipairs({ gpu.full(1, 2.0, { device = dev }):expand(1 << 40),
                             gpu.full({ 1, 1 }, 2.0, { device = dev }):expand(1 << 31, 1 << 31) }) do
          local n, t0 = x.size, gpu.clock()
          assert.are.equal(2.0 * n, x:sum():item())
          assert.are.equal(math.huge, x:prod():item())
          assert.are.equal(2, x:mean():item())
          assert.are.equal(0, x:var():item())
          assert.are.equal(0, x:std(nil, { ddof = 1 }):item())
          assert.are.equal(2, x:max():item())
          assert.are.equal(1, x:argmin():item())
          assert.is_true(x:all():item())
          h.assert_close(x:norm(), A(2 * math.sqrt(n)), 1e-6)
          h.assert_close(x:logsumexp(), A(2 + math.log(n)), 1e-6)
          assert.is_true(gpu.clock() - t0 < 1)
        end
      end)

      it("integers wrap as the loop would; float16 counts do not overflow", function()
        local x = gpu.full(1, 3, { dtype = "int32", device = dev }):expand((1 << 40) + 5)
        assert.are.equal(15, x:sum(nil, { dtype = "int32" }):item())        -- 3 * (2^40 + 5) mod 2^32
        assert.are.equal(3 * ((1 << 40) + 5), x:sum():item())
        for _, dt in ipairs({ "int32", "uint8" }) do                          -- x^r mod 2^b
          assert.are.equal(x:prod(nil, { dtype = "int64" }):astype(dt):item(), x:prod(nil, { dtype = dt }):item(), dt)
        end
        local z = gpu.zeros(1, { dtype = "float16", device = dev }):expand(1 << 40)
        assert.are.equal(0, z:sum():item())
        assert.are.equal(0, z:norm():item())
        h.assert_close(gpu.ones(1, { dtype = "float16", device = dev }):expand(1 << 20):logsumexp(), A(1 + math.log(1 << 20)), 1e-3)
        -- an odd count past the float's digits (2^24, 2^53) keeps a negative product's sign
        for _, dt in ipairs({ "float32", "float64", "float16" }) do
          local m = gpu.full(1, -1.0, { dtype = dt, device = dev })
          assert.are.equal(-1, m:expand((1 << 60) + 1):prod():item(), dt)
          assert.are.equal(1, m:expand(1 << 60):prod():item(), dt)
        end
      end)
    end)

    it("agrees with a plain-Lua reference over shapes, axes, layouts and dtypes", function()
      local rnd = lcg(7)
      local cases = {
        { shape = { 5 } }, { shape = { 3, 4 } }, { shape = { 2, 3, 4 } }, { shape = { 4, 1, 5 } },
        { shape = { 70, 3 } }, { shape = { 3, 70 } }, { shape = { 2, 3, 2, 5 } }, { shape = { 17, 130 } },
        -- a narrow contiguous kept axis inside the reduced run (the interleaved vectors)
        { shape = { 70, 2 } }, { shape = { 40, 16 } }, { shape = { 5, 33, 4 } },
      }
      local ops = { "sum", "prod", "mean", "var", "std", "max", "min", "all", "any", "norm", "logsumexp" }
      for _, c in ipairs(cases) do
        local nd = #c.shape
        local t = build(c.shape, function() return math.floor(rnd() * 9) / 4 - 1 end)
        local base = A(t)
        -- layouts: contiguous, a permuted copy viewed back (non-contiguous), and float64
        local perm = {}
        for d = 1, nd do perm[d] = nd + 1 - d end
        local ti = build(c.shape, function() return math.floor(rnd() * 7) - 3 end)
        local layouts = {
          { name = "contiguous", arr = base, tol = 1e-5, vals = flat(t) },
          { name = "permuted view", arr = base:permute(perm):contiguous():permute(perm), tol = 1e-5, vals = flat(t) },
          { name = "float64", arr = base:astype("float64"), tol = 1e-12, vals = flat(t) },
          { name = "int32", arr = A(ti, "int32"), tol = 1e-12, vals = flat(ti) },
          { name = "int64 view", arr = A(ti, "int64"):permute(perm):contiguous():permute(perm), tol = 1e-12, vals = flat(ti) },
        }
        local axis_choices = { false, 1, -1 }
        if nd >= 2 then axis_choices[#axis_choices + 1] = { 1, nd } end
        if nd >= 3 then axis_choices[#axis_choices + 1] = { nd, 2 } end
        for _, L in ipairs(layouts) do
          local vals = L.vals
          for _, ax in ipairs(axis_choices) do
            local axes = ax or nil
            for _, op in ipairs(ops) do
              local got = L.arr[op](L.arr, axes)
              local want = ref_reduce(vals, c.shape, axis_set(axes, nd), folds[op])
              local ok, msg = h.close(flat(got), want, L.tol * 10)
              assert(ok, ("%s %s of %s, axes %s: %s"):format(L.name, op, table.concat(c.shape, "x"),
                                                              type(ax) == "table" and table.concat(ax, ",") or tostring(ax), msg))
            end
            if type(ax) ~= "table" then
              for _, op in ipairs({ "argmax", "argmin" }) do
                local got = L.arr[op](L.arr, axes)
                local want
                if axes == nil then want = { folds[op](vals) }
                else want = ref_reduce(vals, c.shape, axis_set(axes, nd), folds[op]) end
                assert.same(want, flat(got), ("%s %s of %s"):format(L.name, op, shape_str(L.arr)))
              end
            end
          end
        end
      end
    end)

    it("large arrays (threaded paths) agree with the reference", function()
      local rnd = lcg(11)
      for _, shape in ipairs({ { 300, 301 }, { 3, 40000 }, { 40000, 3 }, { 2, 200, 150 } }) do
        local t = build(shape, function() return math.floor(rnd() * 1000) / 100 end)
        local a = A(t, "float64")
        local vals = flat(t)
        for _, ax in ipairs({ false, 1, -1 }) do
          local axes = ax or nil
          for _, op in ipairs({ "sum", "mean", "var", "max", "min", "argmax", "norm", "logsumexp" }) do
            local want = axes == nil and (op == "argmax" and { folds.argmax(vals) } or { folds[op](vals) })
                         or ref_reduce(vals, shape, axis_set(axes, #shape), folds[op])
            local ok, msg = h.close(flat(a[op](a, axes)), want, 1e-9)
            assert(ok, ("%s of %s axis %s: %s"):format(op, table.concat(shape, "x"), tostring(ax), msg))
            local a32 = a:astype("float32")
            if op ~= "argmax" then
              ok, msg = h.close(flat(a32[op](a32, axes)), want, 1e-5)
              assert(ok, ("float32 %s of %s axis %s: %s"):format(op, table.concat(shape, "x"), tostring(ax), msg))
            end
          end
        end
        local cs = flat(a:cumsum(1))
        local n1 = shape[1]
        local rest = #vals // n1
        local acc = {}
        for i = 1, #vals do
          local k = (i - 1) % rest + 1
          acc[k] = (acc[k] or 0) + vals[i]
          assert(math.abs(cs[i] - acc[k]) < 1e-9 * (1 + math.abs(acc[k])), "cumsum(1) element " .. i)
        end
      end
    end)

    it("threaded paths agree with one thread (child processes, OMP_NUM_THREADS=1 and 2)", function()
      local bin = os.getenv("GPULUA_BIN")
      if dev ~= "cpu" or not bin then return pending("needs GPULUA_BIN (set by make test)") end
      local f = os.tmpname()
      local fh = io.open(f, "w")
      fh:write([[
        local out = {}
        local function add(a)
          for _, v in ipairs(a:astype("float64"):reshape(-1):totable()) do out[#out + 1] = v end
        end
        for _, dt in ipairs({ "float64", "float32" }) do
          for _, shape in ipairs({ { 300, 301 }, { 100, 1000 }, { 20, 50, 100 } }) do
            local n = 1
            for _, e in ipairs(shape) do n = n * e end
            local x = (gpu.arange(n, { dtype = dt }) % 97):reshape(shape) / 7 - 6
            for _, op in ipairs({ "sum", "mean", "var", "max", "min", "argmax", "norm", "logsumexp", "prod", "any" }) do
              add(x[op](x)); add(x[op](x, 1)); add(x[op](x, -1))
            end
            add(x:sum({ 1, #shape })); add(x:cumsum(1)); add(x:cumsum(-1)); add(x.T:sum(1))
          end
        end
        for i = 1, #out do io.write(string.format("%.17g\n", out[i])) end
      ]])
      fh:close()
      local special = { inf = INF, ["-inf"] = -INF, nan = NAN, ["-nan"] = NAN }
      local function run(threads)
        local rc, stdout, stderr = h.run("OMP_NUM_THREADS=" .. threads .. " " .. bin .. " " .. f)
        assert.equal(0, rc, stderr)
        local vals = {}
        for line in stdout:gmatch("[^\n]+") do vals[#vals + 1] = special[line] or tonumber(line) end
        return vals
      end
      local one, two = run(1), run(2)
      os.remove(f)
      assert.is_true(#one > 100000)
      assert.equal(#one, #two)
      local ok, msg = h.close(two, one, 1e-5)
      assert(ok, msg)
    end)

    describe("errors name the function and the fault, inputs unchanged", function()
      local function fails(pattern, f, ...)
        local before = x:totable()
        local ok, err = pcall(f, ...)
        assert.is_false(ok)
        assert.matches(pattern, err)
        assert.same(before, x:totable())
      end

      it("axis out of range, zero, repeated, not an integer", function()
        fails("sum.*axis 3 is out of range", gpu.sum, x, 3)
        fails("sum.*axis 0 is out of range", gpu.sum, x, 0)
        fails("sum.*axis %-3 is out of range", gpu.sum, x, -3)
        fails("sum.*axis 5 is out of range", gpu.sum, x, { 1, 5 })
        fails("sum.*repeated axis 1", gpu.sum, x, { 1, 1 })
        fails("mean.*repeated axis 2", gpu.mean, x, { 2, -1 })
        fails("max.*axis must be an integer", gpu.max, x, 1.5)
        fails("sum.*axis must be an integer, a table of integers or nil", gpu.sum, x, "1")
        fails("cumsum.*axis 3 is out of range", gpu.cumsum, x, 3)
        fails("sum.*axis 1 is out of range: a 0%-d array has no axes", gpu.sum, gpu.array(1, { device = dev }), 1)
      end)

      it("reductions without an identity over nothing", function()
        fails("max.*zero%-size array to reduction 'max' which has no identity", gpu.max, gpu.zeros(0, { device = dev }))
        fails("min.*zero%-size array to reduction 'min' which has no identity", gpu.min, gpu.zeros(0, 3, { device = dev }), 1)
        fails("argmax.*zero%-size array to reduction 'argmax'", gpu.argmax, gpu.zeros(0, { device = dev }))
        fails("norm.*zero%-size array", gpu.norm, gpu.zeros(0, { device = dev }), nil, { ord = math.huge })
      end)

      it("argmax/argmin/cumsum take one axis, not a table", function()
        fails("argmax.*one axis %(a number%) expected, not a table", gpu.argmax, x, { 1, 2 })
        fails("argmin.*one axis %(a number%) expected", gpu.argmin, x, { 1 })
        fails("cumsum.*one axis %(a number%) expected", gpu.cumsum, x, { 1 })
      end)

      it("options: unknown, wrong types, impossible dtypes", function()
        fails("sum.*unknown option 'foo'", gpu.sum, x, nil, { foo = 1 })
        fails("sum.*unknown option 'foo'", gpu.sum, x, { foo = 1 })
        fails("max.*unknown option 'dtype'", gpu.max, x, 1, { dtype = "float64" })
        fails("sum.*unknown option 'ddof'", gpu.sum, x, 1, { ddof = 1 })
        fails("sum.*keepdims' must be a boolean", gpu.sum, x, 1, { keepdims = 1 })
        fails("sum.*unknown dtype 'float8'", gpu.sum, x, nil, { dtype = "float8" })
        fails("sum.*cannot accumulate in bool", gpu.sum, x, nil, { dtype = "bool" })
        fails("mean.*needs a float or complex dtype", gpu.mean, x, nil, { dtype = "int32" })
        fails("var.*option 'ddof' must be >= 0, got integer %-1", gpu.var, x, nil, { ddof = -1 })
        fails("norm.*option 'ord' must be one of fro, nuc, got 'max'", gpu.norm, x, nil, { ord = "max" })
        fails("norm.*nuclear norm is a matrix norm", gpu.norm, gpu.ones(3, { device = dev }), nil, { ord = "nuc" })
        fails("norm.*ord needs one axis", gpu.norm, gpu.zeros(2, 2, 2, { device = dev }), nil, { ord = 1 })
        fails("sum.*options table expected", gpu.sum, x, 1, 5)
        fails("sum.*unexpected argument", gpu.sum, x, { keepdims = true }, {})
        fails("bad argument #4 to 'gpu.sum' %(at most 3 arguments expected, got 4%)", gpu.sum, x, 1, {}, 3)
      end)

      it("non-array input", function()
        fails("sum.*gpu.array expected, got number", gpu.sum, 3)
        fails("argmax.*gpu.array expected, got table", gpu.argmax, { 1, 2 })
        fails("cumsum.*gpu.array expected, got no value", gpu.cumsum)
        local c = gpu.zeros(2, { device = dev })
        c:close()
        fails("sum.*closed", gpu.sum, c)
      end)
    end)
  end)
end)
