-- reduce_more_spec.lua — the reductions and scans ptp, average, nanprod, nancumsum,
-- nancumprod, ediff1d (NumPy's), std_mean, var_mean, aminmax, cummax, cummin, logcumsumexp,
-- mode, kthvalue, unique_consecutive, cdist, dist (PyTorch's), and max, min and sort over an
-- axis returning the positions too (PyTorch's torch.max(x, dim)): against the fixtures of
-- tools/gen_reduce_more_fixtures.py on every device, their gradients (float64 gradcheck),
-- today's one-result forms, and every misuse's error.
local h = require "spec.helper"
local gpu = h.gpu
local ag = require "gpu.autograd"
local F = require "spec.fixture_cases"
local CASES = require "spec.fixtures.reduce_more.reduce"

local function r(...) return gpu.random.randn({ ... }, { dtype = "float64", device = "cpu" }) end

describe("reductions and scans against NumPy and PyTorch", function()
  for _, dev in ipairs(h.devices()) do
    for _, name in ipairs(F.names(CASES)) do
      it(name .. " on " .. dev, function()
        assert.is_true(F.run(CASES, dev, name) > 0)
      end)
    end
  end
  it("cover every name of the family", function()
    local have = {}
    for _, n in ipairs(F.names(CASES)) do have[n] = true end
    for _, n in ipairs({ "ptp", "average", "nanprod", "nancumsum", "nancumprod", "ediff1d", "std_mean", "var_mean",
      "aminmax", "cummax", "cummin", "logcumsumexp", "mode", "kthvalue", "unique_consecutive", "cdist", "dist",
      "max", "min", "sort" }) do
      assert(have[n], n .. " has no fixture case")
    end
  end)
end)

describe("max, min and sort over an axis", function()
  local x = gpu.array({ { 3, 1, 4 }, { 1, 5, 9 } }, { dtype = "float32" })
  it("return the values and the 1-based positions with an axis number (PyTorch's form)", function()
    local v, i = x:max(2)
    assert.same({ 4, 9 }, v:totable()); assert.same({ 3, 3 }, i:totable()); assert.equal("int64", i.dtype)
    v, i = gpu.min(x, -1, { keepdims = true })
    assert.same({ { 1 }, { 1 } }, v:totable()); assert.same({ { 2 }, { 1 } }, i:totable())
    v, i = x:sort(2, { descending = true })
    assert.same({ { 4, 3, 1 }, { 9, 5, 1 } }, v:totable()); assert.same({ { 3, 1, 2 }, { 3, 2, 1 } }, i:totable())
  end)
  it("keep today's one-result forms (no axis, a list of axes, sort without an axis)", function()
    assert.equal(1, select("#", x:max()))
    assert.equal(1, select("#", x:min({ 1, 2 })))
    assert.equal(1, select("#", x:max({ keepdims = true })))
    assert.equal(1, select("#", x:sort()))
    assert.equal(1, select("#", gpu.sort(x, { descending = true })))
    assert.equal(9, x:max():item())
    local v = x:max(1)                              -- NumPy's: the values
    assert.same({ 3, 5, 9 }, v:totable())
    assert.same({ { 1, 3, 4 }, { 1, 5, 9 } }, x:sort():totable())
  end)
  it("record the values for autograd, the positions as extra results", function()
    local w = r(3, 4):requires_grad_()
    local v, i = w:max(2)
    v:sum():backward()
    local g = { { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 } }
    for row = 1, 3 do g[row][i[row]] = 1 end
    h.assert_close(w.grad, gpu.array(g, { dtype = "float64" }), 0)
  end)
end)

describe("reduction gradients (float64)", function()
  local function check(fn, inputs)
    local ok, msg = ag.gradcheck(fn, inputs)
    assert(ok, msg)
  end
  it("flow through the NumPy reductions and scans", function()
    check(function(x) return gpu.ptp(x, 2) end, { r(3, 4) })
    check(function(x, w) return gpu.average(x, 2, { weights = w }) end, { r(3, 4), r(4):abs() + 0.5 })
    check(function(x) return gpu.nanprod(x, 1) end, { r(3, 4) })
    check(function(x) return gpu.nancumsum(x, 2) end, { r(3, 4) })
    check(function(x) return gpu.nancumprod(x) end, { r(3, 4) })
    check(function(x) return gpu.ediff1d(x, { to_end = { 1 } }) end, { r(3, 4) })
  end)
  it("flow through PyTorch's reductions and scans, to the positions they pick", function()
    check(function(x) local s, m = gpu.std_mean(x, 2); return s + m end, { r(3, 4) })
    check(function(x) local s, m = gpu.var_mean(x); return s * m end, { r(3, 4) })
    check(function(x) local a, b = gpu.aminmax(x, 1); return a * b end, { r(3, 4) })
    check(function(x) return (gpu.cummax(x, 2)) end, { r(3, 5) })
    check(function(x) return (gpu.cummin(x, 1)) end, { r(4, 3) })
    check(function(x) return gpu.logcumsumexp(x, 2) end, { r(3, 6) })
    check(function(x) return (gpu.mode(x, 2)) end, { r(3, 6) })
    check(function(x) return (gpu.kthvalue(x, 2, 2)) end, { r(3, 6) })
    check(function(x) return (x:max(2)) end, { r(3, 4) })
    check(function(x) return (x:sort(1)) end, { r(3, 4) })
  end)
  it("flow through cdist and dist, 0 at a zero distance (PyTorch's)", function()
    check(function(a, b) return gpu.cdist(a, b) end, { r(3, 2), r(4, 2) })
    check(function(a, b) return gpu.cdist(a, b, 1) end, { r(3, 2), r(4, 2) })
    check(function(a, b) return gpu.cdist(a, b, 3) end, { r(2, 3, 2), r(2, 4, 2) })
    check(function(a, b) return gpu.cdist(a, b, math.huge) end, { r(3, 2), r(4, 2) })
    check(function(a, b) return gpu.dist(a, b, 3) end, { r(3, 2), r(2) })
    local x = r(3, 2):requires_grad_()
    gpu.cdist(x, x):sum():backward()
    assert.is_false(gpu.isnan(x.grad):any():item())
  end)
end)

describe("reductions and scans, more", function()
  it("logcumsumexp stays finite far from the running maximum", function()
    local x = gpu.array({ -1000, 0, 1000 }, { dtype = "float32" })
    h.assert_close(gpu.logcumsumexp(x, 1), gpu.array({ -1000, 0, 1000 }), 1e-6)
  end)
  it("keep the float dtype and take 0-d and empty arrays as PyTorch does", function()
    local x32 = gpu.random.randn({ 3, 2 })
    for _, y in ipairs({ gpu.cdist(x32, x32), gpu.dist(x32, x32), gpu.logcumsumexp(x32, 1), (gpu.std_mean(x32)) }) do
      assert.equal("float32", y.dtype)
    end
    local v, i = gpu.cummax(gpu.array(2.5), 1)
    assert.equal(0, v.ndim); assert.equal(2.5, v:item()); assert.equal(1, i:item())
    v, i = gpu.cummin(gpu.zeros({ 0, 3 }), 1)
    assert.same({ 0, 3 }, v.shape); assert.same({ 0, 3 }, i.shape); assert.equal("int64", i.dtype)
  end)
  it("methods where PyTorch or NumPy has them", function()
    local x = gpu.array({ { 1, 2, 2 }, { 3, 3, 1 } })
    local v, i = x:mode()
    assert.same({ 2, 3 }, v:totable()); assert.same({ 3, 2 }, i:totable())
    v = x:kthvalue(1)
    assert.same({ 1, 1 }, v:totable())
    assert.same({ 1, 2, 3, 1 }, x:unique_consecutive():totable())
  end)
end)

describe("reduction and scan misuse", function()
  local x = gpu.ones({ 2, 3 })
  it("names the function and the fault", function()
    h.fails({ "ptp", "axis", "out of range" }, gpu.ptp, x, 3)
    h.fails({ "ptp", "zero-size" }, gpu.ptp, gpu.zeros(0))
    h.fails({ "ptp", "gpu.array expected" }, gpu.ptp, { 1, 2 })
    h.fails({ "ptp", "keepdim" }, gpu.ptp, x, 1, { keepdim = true })
    h.fails({ "average", "weights", "give an axis" }, gpu.average, x, nil, { weights = gpu.ones(3) })
    h.fails({ "average", "weights" }, gpu.average, x, 1, { weights = gpu.ones(3) })
    h.fails({ "average", "sum to zero" }, gpu.average, x, 2, { weights = gpu.zeros(3) })
    h.fails({ "nanprod", "dtype" }, gpu.nanprod, x, 1, { dtype = "float33" })
    h.fails({ "nancumsum", "out of range" }, gpu.nancumsum, x, -3)
    h.fails({ "ediff1d", "to_end" }, gpu.ediff1d, x, { to_end = { "a" } })
    h.fails({ "ediff1d", "to_begin" }, gpu.ediff1d, x, { to_begin = true })
    h.fails({ "std_mean", "float" }, gpu.std_mean, gpu.ones(3, { dtype = "int32" }))
    h.fails({ "var_mean", "correction", "unbiased" }, gpu.var_mean, x, 1, { correction = 1, unbiased = true })
    h.fails({ "var_mean", "correction" }, gpu.var_mean, x, 1, { correction = -1 })
    h.fails({ "aminmax", "empty" }, gpu.aminmax, gpu.zeros(0))
    h.fails({ "aminmax", "dim" }, gpu.aminmax, x, 1.5)
    h.fails({ "cummax", "dim must be an integer" }, gpu.cummax, x)
    h.fails({ "cummin", "out of range" }, gpu.cummin, x, 5)
    h.fails({ "cummax", "real" }, gpu.cummax, gpu.ones(2, { dtype = "complex64" }), 1)
    h.fails({ "logcumsumexp", "float" }, gpu.logcumsumexp, gpu.ones(3, { dtype = "int64" }), 1)
    h.fails({ "logcumsumexp", "dim must be an integer" }, gpu.logcumsumexp, x)
    h.fails({ "mode", "empty" }, gpu.mode, gpu.zeros({ 2, 0 }))
    h.fails({ "mode", "keepdims" }, gpu.mode, x, 1, { keepdims = true })
    h.fails({ "kthvalue", "k = 4", "out of range" }, gpu.kthvalue, x, 4)
    h.fails({ "kthvalue", "k must be an integer" }, gpu.kthvalue, x, "2")
    h.fails({ "unique_consecutive", "out of range" }, gpu.unique_consecutive, x, { dim = 3 })
    h.fails({ "unique_consecutive", "return_counts" }, gpu.unique_consecutive, x, { return_count = true })
    h.fails({ "cdist", "columns" }, gpu.cdist, gpu.ones(2, 3), gpu.ones(2, 4))
    h.fails({ "cdist", "at least 2 axes" }, gpu.cdist, gpu.ones(3), gpu.ones(2, 3))
    h.fails({ "cdist", "float" }, gpu.cdist, gpu.ones(2, 3, { dtype = "int32" }), gpu.ones(2, 3))
    h.fails({ "cdist", "p must be" }, gpu.cdist, gpu.ones(2, 3), gpu.ones(2, 3), -1)
    h.fails({ "dist", "p must be" }, gpu.dist, x, x, "2")
    h.fails({ "dist", "x2", "gpu.array expected" }, gpu.dist, x, 2)
  end)
  it("changes nothing", function()
    local y = gpu.array({ { 3, 0 / 0, 1 } })
    local before = tostring(y)
    gpu.nancumsum(y, 2); gpu.cummax(y, 2); gpu.mode(y); pcall(gpu.kthvalue, y, 9)
    assert.equal(before, tostring(y))
  end)
end)
