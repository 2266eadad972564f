-- select_spec.lua — the radix sort (every dtype, NaN, -0.0, ties, stability, long lanes),
-- partition / argpartition, histcounts and the routines over them (histogram, bincount,
-- quantiles, unique), against NumPy 1.24 fixtures (tools/gen_select_fixtures.py) and
-- against the sort itself for what NumPy leaves unspecified (a partition's other places).
local h = require "spec.helper"
local gpu = h.gpu

local F = {}
for _, name in ipairs { "sort", "partition", "hist", "quantile", "unique" } do
  F[name] = dofile("spec/fixtures/select/" .. name .. ".lua")
end

local function arr(t, dtype, dev)
  local data = t.data
  if dtype == "bool" then
    data = {}
    for i, v in ipairs(t.data) do data[i] = v ~= 0 and v ~= false end
  end
  return gpu.array(#data > 0 and data or {}, { dtype = dtype, device = dev }):reshape(t.shape)
end
local function want(t, dtype) return arr(t, dtype or "float64", "cpu") end

-- a and b equal element for element, the sign of zero included, NaN with NaN
local function same_bits(a, b)
  local fa, fb = h.flat(a:astype("float64")), h.flat(b:astype("float64"))
  assert.equal(#fb, #fa)
  for i = 1, #fa do
    local x, y = fa[i], fb[i]
    local ok = (x ~= x and y ~= y) or (x == y and (x ~= 0 or 1 / x == 1 / y))
    if not ok then error(("element %d: %s vs %s"):format(i, tostring(x), tostring(y)), 2) end
  end
end

for _, dev in ipairs(h.devices()) do
  describe("radix sort on " .. dev, function()
    it("matches NumPy's stable sort and argsort for every dtype, NaN, -0.0 and ties", function()
      for i, c in ipairs(F.sort) do
        local x = arr(c.x, c.dtype, dev)
        local ok, err = pcall(function()
          local s = x:sort(c.axis)
          assert.equal(c.dtype, s.dtype)
          same_bits(s:to("cpu"), want(c.sorted))
          assert.same(h.flat(want(c.argsort)), h.flat(x:argsort(c.axis)))
          assert.same(h.flat(want(c.argsort_desc)), h.flat(x:argsort(c.axis, { descending = true })))
          -- values and positions together, and the values by themselves, agree
          same_bits(x:sort(c.axis, { descending = true }):to("cpu"),
                    gpu.take_along_axis(x, x:argsort(c.axis, { descending = true }), c.axis):to("cpu"))
          -- a non-contiguous view sorts as its copy
          if x.ndim == 2 then
            local t = x:transpose(1, 2)
            same_bits(t:sort(3 - c.axis):to("cpu"), t:contiguous():sort(3 - c.axis):to("cpu"))
          end
        end)
        assert(ok, ("case %d (%s %s): %s"):format(i, c.dtype, table.concat(c.x.shape, "x"), tostring(err)))
      end
    end)

    it("sorts long lanes (several passes, the team on one lane) stably, bfloat16 too", function()
      for _, dt in ipairs { "float32", "float64", "bfloat16", "int32", "int64", "uint8" } do
        local n = 200003
        local x = (gpu.random.randn(n, { dtype = "float64", device = dev }) * 50):floor()
        if dt:match("float") then
          x = gpu.where(gpu.random.rand(n, { device = dev }):lt(0.05), 0 / 0, x)
          x = gpu.where(gpu.random.rand(n, { device = dev }):lt(0.05), -0.0, x)
        end
        x = dt == "uint8" and gpu.abs(x):clip(0, 255):astype(dt) or x:astype(dt)
        for _, desc in ipairs { false, true } do
          local o = { descending = desc }
          local s, p = x:sort(-1, o), x:argsort(-1, o)
          same_bits(s:to("cpu"), gpu.take(x, p):to("cpu"))
          local f = s:astype("float64")
          local a, b = f[{ { 1, n - 1 } }], f[{ { 2, n } }]
          local nan_a, nan_b = gpu.isnan(a), gpu.isnan(b)
          local ordered = desc and gpu.logical_or(gpu.ge(a, b), nan_a) or gpu.logical_or(gpu.le(a, b), nan_b)
          assert.is_true(ordered:all():item(), dt .. " order")
          local tie = gpu.logical_or(gpu.eq(a, b), gpu.logical_and(nan_a, nan_b))
          local rising = gpu.lt(p[{ { 1, n - 1 } }], p[{ { 2, n } }])
          assert.is_true(gpu.logical_or(gpu.logical_not(tie), rising):all():item(), dt .. " stable")
        end
      end
    end)
  end)

  describe("partition and argpartition on " .. dev, function()
    if dev ~= "cpu" then
      it("refuse cleanly before allocating (no kernel on " .. dev .. " yet)", function()
        h.fails({ "partition", "not supported" }, gpu.partition, gpu.ones(5, { device = dev }), 2)
        h.fails({ "histcounts", "not supported" }, gpu.histcounts, gpu.ones(5, { device = dev }), gpu.ones(3, { device = dev }))
      end)
      return
    end
    it("put the sorted value at each kth, none larger before, none smaller after (NumPy)", function()
      for i, c in ipairs(F.partition) do
        local ok, err = pcall(function()
          local x = arr(c.x, c.dtype, dev)
          local ax = c.axis
          local p, ip = x:partition(c.kth, ax), x:argpartition(c.kth, ax)
          assert.equal(c.dtype, p.dtype)
          assert.equal("int64", ip.dtype)
          same_bits(p, gpu.take_along_axis(x, ip, ax))                 -- one order for both
          h.assert_close(p:sort(ax):astype("float64"), x:sort(ax):astype("float64"), 0)   -- a permutation
          local n = x.shape[ax]
          local k0 = {}
          for j, k in ipairs(c.kth) do k0[j] = k < 0 and n + k + 1 or k end
          local at = p:index(ax, gpu.array(k0, { dtype = "int64" }))
          h.assert_close(at:astype("float64"), want(c.at), 0)
          local pf = p:astype("float64")
          for _, k in ipairs(k0) do
            local pivot = pf:index(ax, gpu.array({ k }, { dtype = "int64" }))
            local pos = gpu.arange(1, n + 1):reshape(ax == 1 and { n, 1 } or { 1, n })
            if x.ndim == 1 then pos = gpu.arange(1, n + 1) end
            local nanp = gpu.isnan(pivot)
            local before = gpu.logical_or(gpu.logical_or(pf:le(pivot), nanp), pos:ge(k))
            local after = gpu.logical_or(gpu.logical_or(pf:ge(pivot), gpu.isnan(pf)), pos:le(k))
            assert.is_true(before:all():item(), "before kth " .. k)
            assert.is_true(after:all():item(), "after kth " .. k)
          end
        end)
        assert(ok, ("case %d (%s): %s"):format(i, c.dtype, tostring(err)))
      end
    end)

    it("keep -0.0 and NaN payloads, take views, and refuse misuse naming the function", function()
      local x = gpu.array({ 0.0, -0.0, 0 / 0, -1, -0.0, 2 })
      local p = x:partition({ 2, 3 })
      h.assert_close(p:sort(), x:sort(), 0)
      assert.equal(3, #h.flat(gpu.masked_select(p, p:eq(0)):astype("float64")))
      local neg = 0
      for _, v in ipairs(h.flat(p:astype("float64"))) do if v == 0 and 1 / v < 0 then neg = neg + 1 end end
      assert.equal(2, neg)                                                -- both -0.0 kept
      local m = gpu.arange(12, { dtype = "float64" }):reshape(3, 4):transpose(1, 2)   -- a view
      h.assert_close(m:partition(2, 1):sort(1), m:sort(1), 0)
      h.fails({ "partition", "out of range" }, gpu.partition, gpu.ones(4), 5)
      h.fails({ "partition", "out of range" }, gpu.partition, gpu.ones(4), 0)
      h.fails({ "argpartition", "out of range" }, gpu.argpartition, gpu.ones(4), -5)
      h.fails({ "partition", "empty" }, gpu.partition, gpu.ones(4), {})
      h.fails({ "partition", "0-d" }, gpu.partition, gpu.array(1), 1)
      h.fails({ "partition", "axis" }, gpu.partition, gpu.ones(2, 2), 1, 3)
      h.fails({ "partition", "integer" }, gpu.partition, gpu.ones(4), "a")
      h.fails({ "partition", "kth" }, gpu.partition, gpu.ones(4), 1.5)
      local y = gpu.array({ 3, 1, 2 })
      pcall(gpu.partition, y, 7)
      assert.same({ 3, 1, 2 }, h.flat(y))                                  -- unchanged
      assert.same({ 0, 3 }, gpu.zeros(0, 3):partition(1).shape)
    end)
  end)

  describe("histogram, histcounts and bincount on " .. dev, function()
    it("count as NumPy: edges inclusive at the last, outside and NaN left out, weights", function()
      for i, c in ipairs(F.hist) do
        local ok, err = pcall(function()
          local x = arr(c.x, c.fn == "bincount" and "int64" or "float32", dev)
          local w = c.weights and arr(c.weights, "float64", dev) or nil
          if c.fn == "histogram" then
            local counts, edges = gpu.histogram(x, { bins = c.bins, range = c.range, weights = w })
            h.assert_close(edges:to("cpu"):astype("float64"), want(c.edges), 1e-6)
            h.assert_close(counts:to("cpu"):astype("float64"), want(c.counts), 1e-9)
          elseif c.fn == "histcounts" then
            if dev ~= "cpu" then return end
            local counts = gpu.histcounts(x, arr(c.edges, "float64", dev), { weights = w })
            assert.equal(w and "float64" or "int64", counts.dtype)
            h.assert_close(counts:astype("float64"), want(c.counts), 1e-9)
          else
            h.assert_close(gpu.bincount(x, { weights = w, minlength = c.minlength }):to("cpu"):astype("float64"),
                           want(c.counts), 1e-9)
          end
        end)
        assert(ok, ("case %d (%s): %s"):format(i, c.fn, tostring(err)))
      end
    end)

    if dev == "cpu" then
      it("histcounts takes any dtype and views, and refuses misuse", function()
        local x = gpu.array({ 1, 2, 2, 3, 9, 0 / 0 }, { dtype = "float64" })
        local e = gpu.array({ 0, 1, 2, 3 })
        assert.same({ 0, 1, 3 }, h.flat(gpu.histcounts(x, e)))
        assert.same({ 0, 1, 3 }, h.flat(gpu.histcounts(x, e, { uniform = true })))
        assert.same({ 0, 2, 1, 1 }, h.flat(gpu.histcounts(gpu.array({ 3, 1, 2, 1, 7, -1 }, { dtype = "int32" }), 4)))
        local v = gpu.arange(10, { dtype = "uint8" })[{ { 1, 10, 3 } }]            -- 0 3 6 9
        assert.same({ 1, 1, 0, 2 }, h.flat(gpu.histcounts(v, gpu.array({ 0, 2, 4, 6, 9 }))))
        h.fails({ "histcounts", "integer" }, gpu.histcounts, gpu.ones(3), 4)
        h.fails({ "histcounts", "edges" }, gpu.histcounts, gpu.ones(3), gpu.ones(1))
        h.fails({ "histcounts", "weights" }, gpu.histcounts, gpu.ones(3), gpu.ones(3), { weights = gpu.ones(2) })
        h.fails({ "histcounts", "unifrom" }, gpu.histcounts, gpu.ones(3), gpu.ones(3), { unifrom = true })
        h.fails({ "histcounts", ">= 0" }, gpu.histcounts, gpu.ones(3, { dtype = "int64" }), -1)
        h.fails({ "histcounts" }, gpu.histcounts, gpu.ones(3), "x")
        local closed = gpu.ones(3)
        closed:close()
        h.fails({ "histcounts", "closed" }, gpu.histcounts, gpu.ones(3), closed)
        h.fails({ "histcounts", "closed" }, gpu.histcounts, gpu.ones(3), gpu.ones(3), { weights = closed })
        h.fails({ "histogram", "monotonically" }, gpu.histogram, gpu.ones(3), { bins = gpu.array({ 0, 2, 1 }) })
      end)
    end
  end)

  describe("quantiles and unique through the selection on " .. dev, function()
    it("match NumPy for every method, NaN slices, equal and unequal NaN counts", function()
      for i, c in ipairs(F.quantile) do
        local ok, err = pcall(function()
          local x = arr(c.x, "float64", dev)
          local got
          if c.fn == "quantile" then got = gpu.quantile(x, c.q, { method = c.method })
          elseif c.fn == "median" then got = gpu.median(x, c.axis)
          elseif c.fn == "nanquantile" then got = gpu.nanquantile(x, c.q, c.axis, { method = c.method })
          else got = gpu.nanmedian(x, c.axis) end
          h.assert_close(got:to("cpu"), want(c.out), 1e-12)
        end)
        assert(ok, ("case %d (%s %s): %s"):format(i, c.fn, tostring(c.method), tostring(err)))
      end
    end)

    it("differentiate quantile through partition to the selected elements", function()
      local x = gpu.array({ 4, 1, 3, 2, 5, 0 }, { dtype = "float64", device = dev }):requires_grad()
      gpu.quantile(x, 0.3):backward()                             -- 1.5: between 1 and 2
      h.assert_close(x.grad:to("cpu"), gpu.array({ 0, 0.5, 0, 0.5, 0, 0 }, { dtype = "float64" }), 1e-12)
    end)

    it("unique matches NumPy with index, inverse and counts", function()
      local c = F.unique[1]
      local x = arr(c.x, "float32", dev)
      local u, idx, inv, cnt = gpu.unique(x, { return_index = true, return_inverse = true, return_counts = true })
      h.assert_close(u:to("cpu"):astype("float64"), want(c.values), 0)
      h.assert_close(gpu.unique(x):to("cpu"):astype("float64"), want(c.values), 0)
      assert.same(h.flat(want(c.inverse)), h.flat(inv:to("cpu"):astype("float64")))
      assert.same(h.flat(want(c.counts)), h.flat(cnt:to("cpu"):astype("float64")))
      -- NumPy's unsorted quicksort may report another of equal values' positions: check the value
      h.assert_close(gpu.take(x, idx):to("cpu"):astype("float64"), want(c.values), 0)
    end)
  end)
end
