-- sizes_spec.lua — sizes that overflow. Element counts, byte sizes,
-- sums of extents and counts from ranges are formed with checked arithmetic
-- (src/core/checked.h): anything past the limits (2^62 elements, 2^62 bytes) raises
-- "<function>: array is too big (<n> elements of <dtype>)" before anything is allocated,
-- where it used to wrap (a small block written far past its end, an empty result, a
-- signed overflow). Every case here is refused by a check, so nothing huge is ever
-- allocated: the file runs in well under a second, also under `make test-asan`, where
-- ASan and UBSan make each of the old overflows fatal.
local h = require "spec.helper"
local gpu = h.gpu
local nn = require "gpu.nn"

local N62 = "4611686018427387904"              -- 2^62, exactly
local TWO62, TWO61, TWO40 = 1 << 62, 1 << 61, 1 << 40

-- too_big(f, fname, n, dtype): f raises "fname: array is too big (n elements of dtype)"
-- (never "bad argument": a result too big to exist is no one argument's fault).
local function too_big(f, fname, n, dtype)
  local ok, err = pcall(f)
  assert.is_false(ok, "expected an error")
  local want = ("%s: array is too big (%s elements of %s)"):format(fname, n, dtype)
  assert.truthy(err:find(want, 1, true), ("%q not in %q"):format(want, err))
  assert.falsy(err:find("bad argument", 1, true), err)
end

local function shape(x) return table.concat(x.shape, ",") end

for _, dev in ipairs(h.devices()) do
  local D = { device = dev }
  local function ones(...) return gpu.ones({...}, D) end
  -- a float32 view of 2^62 elements (16 EiB if it were made), and an int64 one
  local function huge() return ones(1, 1):expand(1 << 31, 1 << 31) end
  local function huge_i64() return gpu.ones(1, { dtype = "int64", device = dev }):expand(TWO62) end

  describe("sizes on " .. dev, function()
    describe("creation", function()
      it("refuses counts whose bytes pass 2^62, and counts past int64", function()
        too_big(function() return gpu.zeros(TWO62, D) end, "zeros", N62, "float32")
        too_big(function() return gpu.ones({ TWO61 }, { dtype = "int64", device = dev }) end, "ones", "2305843009213693952", "int64")
        too_big(function() return gpu.full({ TWO40, TWO40 }, 1, D) end, "full", "about 1.21e+24", "float32")
        too_big(function() return gpu.zeros(1 << 31, 1 << 31, 1 << 31, D) end, "zeros", "about 9.9e+27", "float32")
        -- a zero extent empties the array, but the others still make its strides
        too_big(function() return gpu.zeros(0, TWO62, TWO62, D) end, "zeros", "about 2.13e+37", "float32")
      end)

      it("empty(2^62) fails instead of succeeding with no storage", function()
        too_big(function() return gpu.empty(TWO62, D) end, "empty", N62, "float32")
        too_big(function() return gpu.empty(2 ^ 62, D) end, "empty", N62, "float32")
      end)

      it("the *_like forms and gpu.array of a huge view", function()
        too_big(function() return gpu.zeros_like(huge()) end, "zeros_like", N62, "float32")
        too_big(function() return gpu.empty_like(huge()) end, "empty_like", N62, "float32")
        too_big(function() return gpu.full_like(huge(), 2) end, "full_like", N62, "float32")
        too_big(function() return gpu.array(huge()) end, "array", N62, "float32")
      end)

      it("arange and linspace count their range before allocating", function()
        too_big(function() return gpu.arange(0, 2 ^ 62, 1.0, D) end, "arange", N62, "float32")
        too_big(function() return gpu.arange(0.0, 1e30, D) end, "arange", "about 1e+30", "float32")
        too_big(function() return gpu.arange(TWO62, D) end, "arange", N62, "int64")
        too_big(function() return gpu.arange(math.mininteger, math.maxinteger, D) end,
                "arange", "about 1.84e+19", "int64")
        too_big(function() return gpu.linspace(0, 1, TWO62, D) end, "linspace", N62, "float32")
      end)

      it("eye: a diagonal offset as far out as math.mininteger/maxinteger is no diagonal", function()
        for _, k in ipairs{ math.mininteger, math.mininteger + 1, -3, 3, math.maxinteger } do
          local e = gpu.eye(3, { k = k, device = dev })
          assert.equal("3,3", shape(e))
          assert.equal(0, e:sum():item())
        end
        assert.same({ { 0, 0, 0 }, { 0, 0, 0 }, { 1, 0, 0 } }, gpu.eye(3, { k = -2, device = dev }):totable())
        too_big(function() return gpu.eye(1 << 31, D) end, "eye", N62, "float32")
      end)
    end)

    describe("random arrays", function()
      it("fills refuse huge shapes (and blame no parameter)", function()
        too_big(function() return gpu.rand(TWO62, D) end, "rand", N62, "float32")
        too_big(function() return gpu.randn({ TWO62 }, D) end, "randn", N62, "float32")
        too_big(function() return gpu.random.uniform(0, 1, TWO62, D) end, "uniform", N62, "float32")
        too_big(function() return gpu.random.normal(0, 1, TWO62, D) end, "normal", N62, "float32")
        too_big(function() return gpu.random.randint(0, 9, TWO62, D) end, "randint", N62, "int64")
        too_big(function() return gpu.random.bernoulli(0.5, TWO62, 2, D) end, "bernoulli", "about 9.22e+18", "float32")
        local g = gpu.random.Generator(1)
        too_big(function() return g:rand(TWO62, D) end, "rand", N62, "float32")
      end)

      it("permutation and choice without replacement need n values", function()
        too_big(function() return gpu.random.permutation(TWO62, D) end, "permutation", N62, "int64")
        too_big(function() return gpu.random.choice(TWO62, 2, { replace = false, device = dev }) end,
                "choice", N62, "int64")
        -- with replacement nothing of size n is made
        local c = gpu.random.choice(TWO62, 2, D)
        assert.equal("2", shape(c))
        for _, v in ipairs(c:totable()) do assert.truthy(v >= 1 and v <= TWO62) end
      end)
    end)

    describe("huge broadcast views", function()
      it("stay views: no storage, right size and nbytes", function()
        local v = huge()
        assert.equal(TWO62, v.size)
        assert.equal(1, v[{ 12345, 1 << 30 }])
        assert.equal(2 ^ 64, v.nbytes)              -- past int64: the true number, a float
        assert.equal("float", math.type(v.nbytes))
        assert.equal(2 ^ 65, huge_i64().nbytes)
        assert.equal(4 * TWO40, ones(1):expand(TWO40).nbytes)
        assert.equal("integer", math.type(ones(1):expand(TWO40).nbytes))
      end)

      it("materialising one raises instead of writing past a small block", function()
        too_big(function() return huge() + 1 end, "add", N62, "float32")
        too_big(function() return -huge() end, "unm", N62, "float32")
        too_big(function() return huge():exp() end, "exp", N62, "float32")
        too_big(function() return huge():contiguous() end, "contiguous", N62, "float32")
        too_big(function() return huge():copy() end, "copy", N62, "float32")
        too_big(function() return huge():astype("float64") end, "astype", N62, "float64")
        too_big(function() return huge():totable() end, "totable", N62, "float32")
        too_big(function() return huge_i64():totable() end, "totable", N62, "int64")
        too_big(function() return huge():sub(huge_i64():reshape(1 << 31, 1 << 31)) end, "sub", N62, "float64")
      end)

      it("concat sums extents checked", function()
        local half = ones(1):expand(TWO61)
        too_big(function() return gpu.concat({ half, half }) end, "concat", N62, "float32")
        local full = ones(1):expand(TWO62)
        too_big(function() return gpu.concat({ full, full, full }) end, "concat", "about 1.38e+19", "float32")
        too_big(function() return gpu.stack({ half, half }) end, "stack", N62, "float32")
      end)

      it("outer and matmul with an empty inner axis", function()
        local a = ones(1):expand(1 << 31)
        too_big(function() return gpu.outer(a, a) end, "outer", N62, "float32")
        too_big(function() return gpu.outer(ones(1):expand(TWO40), ones(1):expand(TWO40)) end,
                "outer", "about 1.21e+24", "float32")
        local l, r = ones(1, 0):expand(1 << 31, 0), ones(0, 1):expand(0, 1 << 31)
        too_big(function() return gpu.matmul(l, r) end, "matmul", N62, "float32")
        too_big(function() return l:matmul(r) end, "matmul", N62, "float32")
        too_big(function() return gpu.dot(l, r) end, "dot", N62, "float32")
      end)

      it("reductions with a huge output", function()
        local col = ones(1, 1):expand(TWO62, 1)
        too_big(function() return col:sum(2) end, "sum", N62, "float32")
        too_big(function() return col:max(2) end, "max", N62, "float32")
        too_big(function() return col:argmax(2) end, "argmax", N62, "int64")
        too_big(function() return col:mean(2, { keepdims = true }) end, "mean", N62, "float32")
        too_big(function() return col:cumsum(1) end, "cumsum", N62, "float32")
      end)

      it("an index array that is a huge view is refused before it is read", function()
        local x = gpu.arange(5, D)
        too_big(function() return x:index(1, huge_i64()) end, "index", N62, "int64")
        too_big(function() return gpu.take(x, huge_i64()) end, "take", N62, "int64")
        too_big(function() return x[huge_i64()] end, "index", N62, "int64")
      end)

      it("totable of an empty array with huge extents is refused, not 2^62 empty tables", function()
        local ok, err = pcall(function() return gpu.zeros({ TWO62, 0 }, D):totable() end)
        assert.is_false(ok)
        assert.truthy(err:find("would make 4611686018427387905 empty tables (at most 16777216)", 1, true), err)
        assert.equal(1000, #gpu.zeros({ 1000, 0 }, D):totable())    -- small ones still work
        assert.same({}, gpu.zeros({ 0, TWO62 }, D):totable())
      end)

      it("tostring summarises without materialising", function()
        local s = tostring(huge())
        assert.truthy(s:find("[[1., 1., 1., ..., 1., 1., 1.],", 1, true), s)
        assert.truthy(s:find("...,\n", 1, true), s)
        assert.truthy(s:find("dtype=float32, device=" .. dev, 1, true), s)
        -- the last elements of each axis are the view's last ones
        local r = gpu.arange(10, D):reshape(1, 10):expand(TWO40, 10)
        assert.equal("gpu.array([[0, 1, 2, ..., 7, 8, 9],\n" ..
                     "           [0, 1, 2, ..., 7, 8, 9],\n" ..
                     "           [0, 1, 2, ..., 7, 8, 9],\n" ..
                     "           ...,\n" ..
                     "           [0, 1, 2, ..., 7, 8, 9],\n" ..
                     "           [0, 1, 2, ..., 7, 8, 9],\n" ..
                     "           [0, 1, 2, ..., 7, 8, 9]], dtype=int64, device=" .. dev .. ")", tostring(r))
        local m = gpu.arange(2000, D):reshape(40, 50)
        local t = tostring(m)
        assert.truthy(t:find("[[   0,    1,    2, ...,   47,   48,   49],", 1, true), t)
        assert.truthy(t:find("[1950, 1951, 1952, ..., 1997, 1998, 1999]]", 1, true), t)
      end)
    end)

    describe("tile, repeat and split", function()
      it("repeat counts are multiplied and summed checked", function()
        local x = ones(4)
        too_big(function() return gpu["repeat"](x, TWO61) end, "repeat", "about 9.22e+18", "float32")
        too_big(function() return x:repeat_interleave(TWO62) end, "repeat_interleave", "about 1.84e+19", "float32")
        local c = gpu.array({ TWO62, TWO62, TWO62 }, { dtype = "int64", device = dev })
        too_big(function() return gpu["repeat"](ones(3), c) end, "repeat", "about 1.38e+19", "float32")
        local c2 = gpu.array({ TWO61, TWO61 }, { dtype = "int64", device = dev })
        too_big(function() return gpu["repeat"](ones(2), c2) end, "repeat", N62, "float32")
        local m = ones(2, 3)
        too_big(function() return m:repeat_interleave(TWO61, 2) end, "repeat_interleave", "about 1.38e+19", "float32")
        assert.equal("2,6", shape(m:repeat_interleave(2, 2)))
      end)

      it("tile multiplies extents checked", function()
        too_big(function() return ones(4):tile(TWO62) end, "tile", "about 1.84e+19", "float32")
        too_big(function() return ones(2, 3):tile({ TWO62, 1 }) end, "tile", "about 2.77e+19", "float32")
        too_big(function() return ones(2):tile(TWO61) end, "tile", N62, "float32")
        assert.equal("2,6", shape(ones(2, 3):tile({ 1, 2 })))
      end)

      it("split sizes summing past 2^63 are an error, not a wrapped match", function()
        local x = gpu.arange(4, D)
        local ok, err = pcall(gpu.split, x, { TWO62, TWO62, TWO62, TWO62 })
        assert.is_false(ok)
        assert.truthy(err:find("section sizes add up to more than 2^63 but axis 1 has size 4", 1, true), err)
        -- 4 + 2^64 wraps to exactly 4
        ok, err = pcall(gpu.split, x, { 4, TWO62, TWO62, TWO62, TWO62 })
        assert.is_false(ok)
        assert.truthy(err:find("more than 2^63", 1, true), err)
        ok, err = pcall(gpu.split, gpu.zeros(0, D), TWO40)
        assert.is_false(ok)
        assert.truthy(err:find("more than a list can hold", 1, true), err)
        assert.equal(3, #gpu.split(gpu.zeros(0, D), 3))
      end)
    end)

    describe("slices", function()
      it("a step of math.mininteger or a huge one picks one element", function()
        assert.same({ 4 }, gpu.arange(5, D)[{ { 5, 1, math.mininteger } }]:totable())
        assert.same({ 0 }, gpu.arange(5, D)[{ { 1, 5, math.maxinteger } }]:totable())
        local m = gpu.arange(10, D):reshape(5, 2)
        assert.same({ { 0, 1 } }, m[{ { 1, 5, TWO62 } }]:totable())
        assert.same({ { 8, 9 } }, m[{ { 5, 1, math.mininteger } }]:totable())
        assert.same({ { 8, 9 }, { 4, 5 }, { 0, 1 } }, m[{ { 5, 1, -2 } }]:totable())
      end)

      it("views of an empty array with huge extents keep their offset (UBSan: bytes past int64)", function()
        local a = gpu.zeros({ 0, TWO62 }, D)
        for _, v in ipairs({ a:flip(), a[{ ":", { TWO61, -1 } }], a.T[TWO61], a.T:flip()[{ { 2, -1 } }] }) do
          assert.equal(0, v.size)
          assert.same({}, v:reshape(0):totable())     -- reads the view's data pointer
          assert.equal(0, (v + 1).size)
        end
      end)

      it("reshape of an empty array into extents whose product passes int64", function()
        too_big(function() return gpu.zeros(0, D):reshape(0, TWO62, TWO62) end, "reshape", "about 2.13e+37", "float32")
        too_big(function() return gpu.zeros(0, D):view(TWO62, 0, 4) end, "view", "about 1.84e+19", "float32")
        assert.equal("0,3", shape(gpu.zeros(0, D):reshape(-1, 3)))
      end)
    end)

    describe("im2col and col2im", function()
      it("columns whose count passes the limits", function()
        local x = ones(1, 1, 1, 1):expand(1, 1 << 30, 1 << 16, 1 << 16)
        too_big(function() return gpu.im2col(x, { kernel = 65536 }) end, "im2col", N62, "float32")
        local c = gpu.zeros(1, 1, 1, D)
        too_big(function() return gpu.col2im(c, { 1, 1, math.maxinteger, 1 }, { kernel = 1, padding = 1 }) end,
                "col2im", "9223372036854775807", "float32")
      end)
    end)

    describe("nn.one_hot", function()
      it("a huge C raises cleanly; C must be a count", function()
        local y = gpu.array({ 1, 3 }, { dtype = "int64", device = dev })
        too_big(function() return nn.one_hot(y, TWO62) end, "arange", N62, "int64")
        too_big(function() return nn.one_hot(y, 2 ^ 62) end, "arange", N62, "int64")
        too_big(function() return nn.one_hot(y, math.maxinteger) end, "arange", "9223372036854775807", "int64")
        local ok, err = pcall(nn.one_hot, y, 2.5)
        assert.is_false(ok)
        assert.truthy(err:find("nn.one_hot' (num_classes must be an integer, got number 2.5)", 1, true), err)
        assert.same({ { 1, 0, 0 }, { 0, 0, 1 } }, nn.one_hot(y, 3.0):totable())
      end)
    end)
  end)
end
