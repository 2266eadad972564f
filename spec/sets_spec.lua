-- sets_spec.lua — isin, in1d, intersect1d, union1d, setdiff1d, setxor1d, unique_values,
-- unique_counts, unique_inverse, lexsort, histogram_bin_edges, histogram2d, histogramdd:
-- against the NumPy 2 fixtures of tools/gen_reduce_more_fixtures.py on every device, a
-- larger isin against a plain Lua count, and every misuse's error.
local h = require "spec.helper"
local gpu = h.gpu
local F = require "spec.fixture_cases"
local CASES = require "spec.fixtures.reduce_more.sets"

describe("sets and histograms against NumPy", function()
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
    for _, n in ipairs({ "isin", "in1d", "intersect1d", "union1d", "setdiff1d", "setxor1d", "unique_values",
      "unique_counts", "unique_inverse", "lexsort", "histogram_bin_edges", "histogram2d", "histogramdd" }) do
      assert(have[n], n .. " has no fixture case")
    end
  end)
end)

describe("set functions, more", function()
  it("isin agrees with a plain lookup by table (small integer range) and by sort (else)", function()
    local g = gpu.random.Generator(5)
    local function check(e, t)
      local inset = {}
      for _, v in ipairs(t:totable()) do inset[v] = true end
      local got = gpu.isin(e, t):totable()
      local n = 0
      for k, v in ipairs(e:totable()) do
        assert.equal(inset[v] == true, got[k])
        if got[k] then n = n + 1 end
      end
      assert(n > 0 and n < e.size, "a test with both answers")
    end
    check(g:randint(0, 499, { 2000 }, { dtype = "int64" }), g:randint(0, 499, { 300 }, { dtype = "int64" }))
    local spread = g:randint(0, 399, { 300 }, { dtype = "int64" }) * 1000000007
    check(gpu.concat({ spread[{ { 1, 100 } }], g:randint(0, 399, { 500 }, { dtype = "int64" }) * 1000000007 }), spread)
    local f = gpu.floor(g:rand({ 400 }, { dtype = "float64" }) * 300) / 4
    check(f, f[{ { 1, 150 } }] + 0.25)
    check(g:randint(-5, 5, { 50 }, { dtype = "int8" }), g:randint(0, 3, { 4 }, { dtype = "int64" }))
  end)
  it("isin's lookup table leaves out the values beyond its range, the extremes of int64 too", function()
    local v = gpu.array({ math.mininteger, math.maxinteger, -3, 5, 7, 1 << 62, 4 }, { dtype = "int64" })
    assert.same({ false, false, true, true, true, false, false },
      gpu.isin(v, gpu.array({ 5, 6, 7, -3 }, { dtype = "int64" })):totable())
    assert.same({ false, true, true },
      gpu.isin(gpu.array({ -128, 127, 5 }, { dtype = "int8" }), gpu.array({ 5, 127 }, { dtype = "uint8" })):totable())
    assert.same({ true, false }, gpu.isin(gpu.array({ 1 << 62, 0 }, { dtype = "int64" }),
      gpu.array({ 1 << 62, math.mininteger }, { dtype = "int64" })):totable())
    assert.same({ false, false, true }, gpu.isin(gpu.array({ -(1 << 62), 1 << 62, 5 }, { dtype = "int64" }),
      gpu.array({ 5, 6 }, { dtype = "int64" })):totable())
  end)
  it("take empty arrays and mixed dtypes", function()
    local empty = gpu.zeros(0, { dtype = "int64" })
    assert.same({ 0 }, gpu.isin(empty, gpu.ones(3)).shape)
    assert.same({ false, false }, gpu.isin(gpu.ones(2), empty):totable())
    local v, i1, i2 = gpu.intersect1d(empty, gpu.ones(3), { return_indices = true })
    assert.same({ 0 }, v.shape); assert.same({ 0 }, i1.shape); assert.equal("int64", i2.dtype)
    assert.same({ 1, 1.5, 2 }, gpu.union1d(gpu.array({ 2, 1 }, { dtype = "int32" }), gpu.array({ 1.5 }, { dtype = "float64" })):totable())
    assert.same({ 0 }, gpu.setxor1d(empty, empty).shape)
    local u, c = gpu.unique_counts(empty)
    assert.same({ 0 }, u.shape); assert.same({ 0 }, c.shape)
  end)
  it("histogramdd's counts sum to the values in range", function()
    local s = gpu.random.Generator(2):randn({ 500, 2 }, { dtype = "float64" })
    local hist, edges = gpu.histogramdd(s, { bins = { 4, 5 } })
    assert.same({ 4, 5 }, hist.shape); assert.equal(2, #edges)
    assert.equal(500, hist:sum():item())
    local h2 = gpu.histogram2d(s[{ ":", 1 }], s[{ ":", 2 }], { bins = { 4, 5 } })
    h.assert_close(h2, hist, 0)
  end)
end)

describe("set and histogram misuse", function()
  local x = gpu.ones(3)
  it("names the function and the fault", function()
    h.fails({ "isin", "test_elements", "gpu.array expected" }, gpu.isin, x, { 1, 2 })
    h.fails({ "isin", "complex" }, gpu.isin, gpu.ones(2, { dtype = "complex64" }), x)
    h.fails({ "isin", "kind" }, gpu.isin, x, x, { kind = "hash" })
    h.fails({ "isin", "inverted" }, gpu.isin, x, x, { inverted = true })
    h.fails({ "in1d", "ar1" }, gpu.in1d, 3, x)
    h.fails({ "intersect1d", "return_indices" }, gpu.intersect1d, x, x, { return_indices = 1 })
    h.fails({ "union1d", "ar2", "gpu.array expected" }, gpu.union1d, x, nil)
    h.fails({ "setdiff1d", "assume_unique" }, gpu.setdiff1d, x, x, { assume_uniq = true })
    h.fails({ "setxor1d", "complex" }, gpu.setxor1d, x, gpu.ones(2, { dtype = "complex128" }))
    h.fails({ "unique_values", "gpu.array expected" }, gpu.unique_values, "x")
    h.fails({ "unique_inverse", "gpu.array expected" }, gpu.unique_inverse, {})
    h.fails({ "lexsort", "keys[2]", "shape" }, gpu.lexsort, { gpu.ones(3), gpu.ones(4) })
    h.fails({ "lexsort", "at least one" }, gpu.lexsort, {})
    h.fails({ "lexsort", "out of range" }, gpu.lexsort, { gpu.ones(3) }, 2)
    h.fails({ "lexsort", "keys" }, gpu.lexsort, 5)
    h.fails({ "lexsort", "2048 keys", "at most 1024" }, gpu.lexsort, gpu.zeros({ 2048, 2 }))
    h.fails({ "histogramdd", "9 dimensions", "at most 8" }, gpu.histogramdd, gpu.zeros({ 4, 9 }))
    h.fails({ "histogram_bin_edges", "bins" }, gpu.histogram_bin_edges, x, { bins = "stone" })
    h.fails({ "histogram_bin_edges", "bins", ">= 1" }, gpu.histogram_bin_edges, x, { bins = 0 })
    h.fails({ "histogram_bin_edges", "weighted" }, gpu.histogram_bin_edges, x, { bins = "auto", weights = x })
    h.fails({ "histogram_bin_edges", "monotonically" }, gpu.histogram_bin_edges, x, { bins = gpu.array({ 2, 1 }) })
    h.fails({ "histogram_bin_edges", "range" }, gpu.histogram_bin_edges, x, { range = { 2, 1 } })
    h.fails({ "histogram2d", "1-D of one length" }, gpu.histogram2d, x, gpu.ones(4))
    h.fails({ "histogram2d", "bins", "one entry per dimension" }, gpu.histogram2d, x, x, { bins = { 1, 2, 3 } })
    h.fails({ "histogram2d", "weights" }, gpu.histogram2d, x, x, { weights = gpu.ones(2) })
    h.fails({ "histogramdd", "sample" }, gpu.histogramdd, gpu.ones(2, 2, 2))
    h.fails({ "histogramdd", "range", "per dimension" }, gpu.histogramdd, gpu.ones(3, 2), { range = { { 0, 1 } } })
    h.fails({ "histogramdd", "bins" }, gpu.histogramdd, gpu.ones(3, 2), { bins = { 2, "x" } })
    h.fails({ "histogramdd", "density" }, gpu.histogramdd, gpu.ones(3, 2), { density = 1 })
  end)
end)
