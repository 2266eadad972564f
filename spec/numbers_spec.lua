-- numbers_spec.lua — Lua numbers going into arrays: one rule on every path (full,
-- full_like, fill_, x[k] = v, x[mask] = v, index_put_, gpu.array, where, clip, arange,
-- linspace, randint, operators). An integer dtype takes the integers it holds and finite
-- floats whose truncation it holds; anything else (out of range, NaN, inf) is an error
-- naming the value and the dtype, and the array is left as it was. astype is not this
-- rule: it converts whole arrays as C casts do (wraps integers, saturates floats).
-- linspace: NumPy's values for ordinary ranges, and no overflow near ±DBL_MAX.
local h = require "spec.helper"
local gpu = h.gpu

local nan, inf = 0 / 0, math.huge

-- f fails with a message matching every pattern (plain strings).
local function fails(f, ...)
  local ok, e = pcall(f)
  assert.is_false(ok, "expected an error")
  e = tostring(e)
  for _, p in ipairs{ ... } do
    assert(e:find(p, 1, true), ("error %q does not mention %q"):format(e, p))
  end
  return e
end

for _, dev in ipairs(h.devices()) do
  local function A(t, dt) return gpu.array(t, { dtype = dt, device = dev }) end
  local function O(dt) return { dtype = dt, device = dev } end

  describe("numbers into integer arrays on " .. dev, function()
    it("full and full_like refuse values the dtype cannot hold", function()
      fails(function() return gpu.full(2, 300, O"uint8") end, "bad argument #2 to 'full'",
            "value 300 is out of range for uint8 (0..255)")
      fails(function() return gpu.full(2, -1, O"uint8") end, "value -1", "uint8")
      fails(function() return gpu.full(2, 1 << 40, O"int32") end,
            "value 1099511627776 is out of range for int32 (-2147483648..2147483647)")
      fails(function() return gpu.full(2, nan, O"int64") end, "'full'", "cannot convert NaN to int64")
      fails(function() return gpu.full(2, inf, O"int64") end, "cannot convert inf to int64")
      fails(function() return gpu.full(2, -inf, O"int32") end, "cannot convert -inf to int32")
      fails(function() return gpu.full(2, 2.0 ^ 63, O"int64") end, "out of range for int64")
      fails(function() return gpu.full(2, 256.0, O"uint8") end, "value 256 is out of range for uint8")
      fails(function() return gpu.full(2, -1.0, O"uint8") end, "value -1 is out of range for uint8")
      local u = A({ 1, 2 }, "uint8")
      fails(function() return gpu.full_like(u, 256) end, "bad argument #2 to 'full_like'", "256", "uint8")
      fails(function() return gpu.full_like(u, 7, { dtype = "int64" }):fill_(nan) end, "NaN", "int64")
      fails(function() return gpu.full_like(A({ 1.5 }, "float32"), 300, { dtype = "uint8" }) end, "300", "uint8")
    end)

    it("in-range values are stored exactly; fractions truncate toward zero", function()
      assert.same({ 255, 255 }, gpu.full(2, 255, O"uint8"):totable())
      assert.same({ 0 }, gpu.full(1, 0, O"uint8"):totable())
      assert.same({ -2147483648 }, gpu.full(1, -(1 << 31), O"int32"):totable())
      assert.same({ 2147483647 }, gpu.full(1, (1 << 31) - 1, O"int32"):totable())
      assert.same({ math.maxinteger }, gpu.full(1, math.maxinteger, O"int64"):totable())
      assert.same({ math.mininteger }, gpu.full(1, -2.0 ^ 63, O"int64"):totable())
      assert.same({ 255 }, gpu.full(1, 255.9, O"uint8"):totable())
      assert.same({ 0 }, gpu.full(1, -0.9, O"uint8"):totable())
      assert.same({ -2 }, gpu.full(1, -2.7, O"int32"):totable())
      assert.same({ 1 }, gpu.full(1, true, O"uint8"):totable())
      assert.same({ 7 }, gpu.full_like(A({ 1 }, "int32"), 7):totable())
    end)

    it("bool and float dtypes take every number", function()
      assert.same({ true, false }, { gpu.full(1, nan, O"bool"):item(), gpu.full(1, 0, O"bool"):item() })
      assert.same({ true }, gpu.full(1, 300, O"bool"):totable())
      assert.equal(inf, gpu.full(1, 1e6, O"float16"):item())           -- IEEE overflow
      assert.is_true(gpu.full(1, nan, O"float32"):item() ~= gpu.full(1, nan, O"float32"):item())
      assert.equal(2.0 ^ 62, gpu.full(1, 1 << 62, O"float64"):item())
    end)

    it("fill_ refuses and leaves the array as it was", function()
      local x = A({ 1, 2, 3 }, "uint8")
      fails(function() x:fill_(300) end, "fill_", "value 300 is out of range for uint8")
      fails(function() gpu.fill_(x, -1) end, "bad argument #2 to 'fill_'", "-1")
      fails(function() x:fill_(nan) end, "cannot convert NaN to uint8")
      assert.same({ 1, 2, 3 }, x:totable())
      local y = A({ 5, 6 }, "int64")
      fails(function() y:fill_(inf) end, "inf", "int64")
      fails(function() y:fill_(1e19) end, "value 1e+19 is out of range for int64")
      assert.same({ 5, 6 }, y:totable())
      assert.same({ 9, 9 }, y:fill_(9.5):totable())
    end)

    it("x[k] = v and slice assignment refuse and leave the array as it was", function()
      local x = A({ 1, 2, 3 }, "int32")
      fails(function() x[1] = 1 << 40 end, "bad argument #3", "value 1099511627776 is out of range for int32")
      fails(function() x[{ { 1, 2 } }] = nan end, "cannot convert NaN to int32")
      fails(function() x[":"] = -inf end, "cannot convert -inf to int32")
      assert.same({ 1, 2, 3 }, x:totable())
      local u = A({ { 1, 2 }, { 3, 4 } }, "uint8")
      fails(function() u[{ 2, 1 }] = 256 end, "256", "uint8")
      fails(function() u[1] = -1 end, "-1", "uint8")
      assert.same({ { 1, 2 }, { 3, 4 } }, u:totable())
      x[1] = -(1 << 31); u[{ 2, 2 }] = 255
      assert.same({ -2147483648, 2, 3 }, x:totable()); assert.same({ { 1, 2 }, { 3, 255 } }, u:totable())
    end)

    it("x[mask] = v refuses, even when the mask selects nothing", function()
      local x = A({ 0, 1, 0 }, "int64")
      fails(function() x[x:eq(0)] = nan end, "bad argument #3", "cannot convert NaN to int64")
      fails(function() x[x:eq(7)] = nan end, "NaN", "int64")
      local u = A({ 0, 1, 0 }, "uint8")
      fails(function() u[u:eq(0)] = 300 end, "300", "uint8")
      assert.same({ 0, 1, 0 }, x:totable()); assert.same({ 0, 1, 0 }, u:totable())
      u[u:eq(0)] = 200
      assert.same({ 200, 1, 200 }, u:totable())
    end)

    it("x[idx] = v and index_put_ with a number refuse", function()
      local x = A({ 1, 2, 3 }, "uint8")
      local idx = A({ 1, 3 }, "int64")
      fails(function() x[idx] = 256 end, "bad argument #3", "256", "uint8")
      fails(function() x:index_put_(1, idx, 300) end, "index_put_", "value 300 is out of range for uint8")
      fails(function() x:index_put_(1, idx, -1, { accumulate = true }) end, "-1", "uint8")
      fails(function() x:index_put_(1, A({}, "int64"), nan) end, "NaN", "uint8")       -- nothing selected
      assert.same({ 1, 2, 3 }, x:totable())
      x:index_put_(1, idx, 9)
      assert.same({ 9, 2, 9 }, x:totable())
    end)

    it("gpu.array from a table refuses and names the element", function()
      fails(function() return A({ 256, -1 }, "uint8") end, "bad argument #1 to 'array'", "element [1]",
            "value 256 is out of range for uint8 (0..255)")
      fails(function() return A({ 1, -1 }, "uint8") end, "element [2]", "value -1")
      fails(function() return A({ { 1, 2 }, { 3, nan } }, "int64") end, "element [2][2]", "cannot convert NaN to int64")
      fails(function() return A({ 1, 1 << 40 }, "int32") end, "element [2]", "int32")
      fails(function() return A({ inf }, "int64") end, "cannot convert inf to int64")
      fails(function() return A(300, "uint8") end, "'array'", "value 300 is out of range for uint8")
      assert.same({ 0, 255, 1 }, A({ 0, 255, 1.5 }, "uint8"):totable())
      assert.same({ math.mininteger, math.maxinteger }, A({ math.mininteger, math.maxinteger }, "int64"):totable())
      assert.same({ 1, 0 }, A({ true, false }, "int32"):totable())
      assert.same({ true, true }, A({ 300, nan }, "bool"):totable())
    end)

    it("where, clip and the operators refuse out-of-range Lua integers (NumPy 2)", function()
      local u = A({ 1, 2 }, "uint8")
      local c = A({ true, false }, "bool")
      fails(function() return gpu.where(c, u, 300) end, "where", "value 300 is out of range for uint8")
      fails(function() return gpu.where(c, A({ 1, 2 }, "int32"), 1 << 40) end, "int32")
      assert.same({ 1, 255 }, gpu.where(c, u, 255):totable())
      assert.equal("float64", gpu.where(c, u, nan).dtype)                     -- a float promotes
      fails(function() return u:clip(0, 300) end, "300", "uint8")
      fails(function() return u:clip(-1, 3) end, "-1", "uint8")
      assert.same({ 1, 2 }, u:clip(0, 255):totable())
      fails(function() return u + 300 end, "add", "value 300 is out of range for uint8 (0..255)")
      assert.same({ 1, 2 }, u:totable())
    end)

    it("arange, linspace and randint refuse ranges the dtype cannot hold", function()
      fails(function() return gpu.arange(0, 300, O"uint8") end, "arange", "value 299 is out of range for uint8")
      fails(function() return gpu.arange(250, 260, O"uint8") end, "uint8")
      fails(function() return gpu.arange(-1, 3, O"uint8") end, "value -1", "uint8")
      fails(function() return gpu.arange(0, 2.0 ^ 40, 2.0 ^ 38, O"int32") end, "int32")
      fails(function() return gpu.arange(1 << 60, (1 << 60) + 3, O"int32") end, "arange",
            "value 1152921504606846976 is out of range for int32")   -- the exact integer path
      assert.equal(256, gpu.arange(0, 256, O"uint8").size)
      assert.same({ 253, 254, 255 }, gpu.arange(253, 256, O"uint8"):totable())
      assert.same({ (1 << 60) + 2, (1 << 60) + 1 }, gpu.arange((1 << 60) + 2, 1 << 60, -1, O"int64"):totable())
      assert.equal(0, gpu.arange(300, 0, O"uint8").size)                   -- empty: nothing to hold
      fails(function() return gpu.linspace(0, 300, 4, O"uint8") end, "linspace", "value 300 is out of range for uint8")
      fails(function() return gpu.linspace(-1, 3, 4, O"uint8") end, "value -1")
      assert.same({ 0, 85, 170, 255 }, gpu.linspace(0, 255, 4, O"uint8"):totable())
      fails(function() return gpu.random.randint(0, 300, 2, O"uint8") end, "randint", "do not fit uint8")
    end)

    it("astype converts as C does: integers wrap, floats truncate and saturate, NaN gives 0", function()
      assert.same({ 44, 255, 0 }, A({ 300, -1, 256 }, "int64"):astype("uint8"):totable())
      assert.same({ 0 }, A({ 1 << 40 }, "int64"):astype("int32"):totable())
      assert.same({ 2147483647, -2147483648, 0, 2, -2 },
                  A({ 1e10, -1e10, nan, 2.7, -2.7 }, "float64"):astype("int32"):totable())
      assert.same({ 255, 0, 0 }, A({ 300.5, -3, nan }, "float32"):astype("uint8"):totable())
      assert.same({ math.maxinteger, math.mininteger }, A({ inf, -inf }, "float64"):astype("int64"):totable())
    end)
  end)

  describe("linspace values on " .. dev, function()
    -- NumPy 1.24's np.linspace(start, stop, n, dtype=dt), written out to 17 digits
    local cases = {
      { -1, 1, 7, "float64", { -1, -0.66666666666666674, -0.33333333333333337, 0, 0.33333333333333326, 0.66666666666666652, 1 } },
      { 0.1, 0.7, 7, "float64", { 0.10000000000000001, 0.20000000000000001, 0.29999999999999999, 0.40000000000000002, 0.5, 0.59999999999999998, 0.69999999999999996 } },
      { 0.001, 1000.0, 11, "float64", { 0.001, 100.0009, 200.0008, 300.00069999999994, 400.00059999999996, 500.00049999999999, 600.0003999999999, 700.00029999999992, 800.00019999999995, 900.00009999999997, 1000 } },
      { -2.5, 7.25, 9, "float64", { -2.5, -1.28125, -0.0625, 1.15625, 2.375, 3.59375, 4.8125, 6.03125, 7.25 } },
      { -1, 1, 7, "float32", { -1, -0.66666668653488159, -0.3333333432674408, 0, 0.3333333432674408, 0.66666668653488159, 1 } },
      { 0.1, 0.7, 7, "float32", { 0.10000000149011612, 0.20000000298023224, 0.30000001192092896, 0.40000000596046448, 0.5, 0.60000002384185791, 0.69999998807907104 } },
    }

    it("are NumPy's, bit for bit, with both ends exact", function()
      for _, c in ipairs(cases) do
        local got = gpu.linspace(c[1], c[2], c[3], O(c[4])):totable()
        for i, want in ipairs(c[5]) do
          assert(got[i] == want, ("linspace(%g, %g, %d, %s)[%d] = %.17g, NumPy %.17g"):format(
                 c[1], c[2], c[3], c[4], i, got[i], want))
        end
      end
    end)

    it("do not overflow when stop - start passes the largest double", function()
      local x = gpu.linspace(-1.7e308, 1.7e308, 5, O"float64"):totable()
      assert.equal(-1.7e308, x[1]); assert.equal(1.7e308, x[5]); assert.equal(0, x[3])
      assert(h.close(x, { -1.7e308, -8.5e307, 0, 8.5e307, 1.7e308 }, 1e-15))
      local y = gpu.linspace(1.7976931348623157e308, -1.7976931348623157e308, 3, O"float64"):totable()
      assert.same({ 1.7976931348623157e308, 0, -1.7976931348623157e308 }, y)
      local z = gpu.linspace(1.7e308, -1.7e308, 4, O"float64"):totable()
      assert(h.close(z, { 1.7e308, 1.7e308 / 3, -1.7e308 / 3, -1.7e308 }, 1e-15))
      local f = gpu.linspace(-1.7e308, 1.7e308, 5, O"float32"):totable()       -- beyond float32: ±inf, no NaN
      assert.same({ -inf, -inf, 0, inf, inf }, f)
      assert.same({ true, false, true }, gpu.linspace(-1.7e308, 1.7e308, 3, O"bool"):totable())
    end)
  end)
end
