-- elementwise_spec.lua — operators, broadcasting, strided operands, integer and float
-- division, bitwise ops, comparisons, unary and binary math, where/clip/lerp, in-place
-- forms and the errors of all of them. Expected values are computed by hand, by Lua, or
-- by NumPy (spec/fixtures/unary.lua and binary.lua, made by tools/gen_fixtures.py).
local h = require "spec.helper"
local gpu = h.gpu
local U = require "spec.fixtures.unary"
local B = require "spec.fixtures.binary"

local huge, nan = math.huge, 0 / 0

local function fails(f, ...)
  local ok, err = pcall(f)
  assert.is_false(ok, "expected an error")
  assert.equal("string", type(err))
  for _, want in ipairs{...} do
    assert.truthy(err:find(want, 1, true), ("%q not in %q"):format(want, err))
  end
  return err
end

-- rel_close(got, want, rtol, atol): elementwise |got - want| <= rtol |want| + atol, NaN
-- in the same places, infinities equal. Returns true or false and the first mismatch.
local function rel_close(got, want, rtol, atol, label)
  local g, w = h.flat(got), h.flat(want)
  if #g ~= #w then return false, ("%s: %d elements, want %d"):format(label or "", #g, #w) end
  for i = 1, #w do
    local a, b = g[i], w[i]
    local ok
    if type(b) == "boolean" then ok = a == b
    elseif b ~= b then ok = a ~= a
    elseif b == huge or b == -huge then ok = a == b
    else ok = a == a and math.abs(a - b) <= rtol * math.abs(b) + (atol or 0) end
    if not ok then
      return false, ("%s element %d: got %.17g, want %.17g"):format(label or "", i, a, b)
    end
  end
  return true
end
local function assert_rel(got, want, rtol, atol, label)
  local ok, msg = rel_close(got, want, rtol, atol, label)
  assert(ok, msg)
end

-- nested(shape, f): a nested Lua table of the given 2-D shape with f(i, j) at i, j.
local function nested(r, c, f)
  local t = {}
  for i = 1, r do t[i] = {} for j = 1, c do t[i][j] = f(i, j) end end
  return t
end

local function luafloordiv(a, b) return a // b end      -- Lua floors like Python
local FLT_MAX = 3.4028234663852886e38

-- the unary ops checked against NumPy's numbers (spec/fixtures/unary.lua): float math (kind
-- UF) and same-dtype math (US); the last block below wants every such op of C's here
local float_fns = {"exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt",
  "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
  "asinh", "acosh", "atanh", "sigmoid", "softplus", "gelu", "erf", "angle",
  "exp2", "cbrt", "rint", "sinc", "degrees", "radians"}
local same_fns = {"abs", "neg", "sign", "square", "relu", "floor", "ceil", "round", "trunc", "conj",
  "frac"}
-- the special functions (gpu.special, kernels/special.h; spec/special_spec.lua tests their
-- domains): float math too
for _, f in ipairs {"erfc", "erfcx", "erfinv", "erfcinv", "lgamma", "digamma", "ndtr", "ndtri", "log_ndtr",
                    "i0", "i0e", "i1", "i1e", "entr", "logit", "bessel_j0", "bessel_j1", "exp1", "expi"} do
  float_fns[#float_fns + 1] = f
end

for _, dev in ipairs(h.devices()) do
  local function A(t, dtype) return gpu.array(t, {dtype = dtype, device = dev}) end

  describe("operators on " .. dev, function()
    local a = A(nested(3, 4, function(i, j) return (i - 1) * 4 + j end), "float64")
    local b = A(nested(3, 4, function(i, j) return j - i * 0.5 end), "float64")
    local ops = {
      { "+", function(x, y) return x + y end },
      { "-", function(x, y) return x - y end },
      { "*", function(x, y) return x * y end },
      { "/", function(x, y) return x / y end },
      { "//", function(x, y) return x // y end },
      { "%", function(x, y) return x % y end },
      { "^", function(x, y) return x ^ y end },
    }

    for _, o in ipairs(ops) do
      it(o[1] .. " between arrays and with Lua numbers on either side", function()
        local f = o[2]
        local ta, tb = a:totable(), b:totable()
        local r = f(a, b)
        assert.equal("float64", r.dtype)
        assert.same({3, 4}, r.shape)
        assert_rel(r, nested(3, 4, function(i, j) return f(ta[i][j], tb[i][j]) end), 1e-14, 0, o[1])
        assert_rel(f(a, 2.5), nested(3, 4, function(i, j) return f(ta[i][j], 2.5) end), 1e-14, 0, o[1] .. " n")
        assert_rel(f(3, a), nested(3, 4, function(i, j) return f(3, ta[i][j]) end), 1e-14, 0, "n " .. o[1])
        assert_rel(f(-1.5, b), nested(3, 4, function(i, j) return f(-1.5, tb[i][j]) end), 1e-14, 0, "n " .. o[1])
        -- operands are unchanged
        assert.same(ta, a:totable())
      end)
    end

    it("unary minus, number - array, number / array, 2 ^ array", function()
      local x = A({1, -2, 0.5, 0}, "float32")
      assert.same({-1, 2, -0.5, 0}, (-x):totable())
      assert.same({9, 12, 9.5, 10}, (10 - x):totable())
      assert.same({1, -0.5, 2, huge}, (1 / x):totable())
      assert_rel(2 ^ x, {2, 0.25, 2 ^ 0.5, 1}, 1e-7)
      local i = A({0, 1, 5, 10}, "int64")
      local p = 2 ^ i
      assert.equal("int64", p.dtype)                 -- int ^ int stays int, as NumPy
      assert.same({1, 2, 32, 1024}, p:totable())
      assert.same({1, 3, 243, 59049}, (3 ^ i):totable())
      assert.same({0, -1, -5, -10}, (-i):totable())
      assert.equal("float32", (2 ^ x).dtype)
    end)

    it("integer operators wrap like NumPy", function()
      local i32 = A({2147483647, -2147483648, 65536}, "int32")
      assert.same({-2147483648, 2147483647, 65537}, (i32 + A({1, -1, 1}, "int32")):totable())
      assert.same({-2, 0, 0}, (i32 * A({2, 2, 65536}, "int32")):totable())
      assert.same({-2147483647, -2147483648, -65536}, (-i32):totable())
      local u8 = A({0, 255, 16}, "uint8")
      assert.same({255, 254, 15}, (u8 - 1):totable())
      assert.same({0, 1, 0}, (u8 * u8):totable())
      assert.same({0, 1, 240}, (-u8):totable())
      local i64 = A({math.maxinteger, math.mininteger}, "int64")
      assert.same({math.mininteger, math.maxinteger}, (i64 + A({1, -1}, "int64")):totable())
    end)
  end)

  describe("broadcasting on " .. dev, function()
    it("(3,1) with (1,4) and (4,) with (3,4), both directions", function()
      local c = A({{1}, {2}, {3}}, "float64")
      local r = A({{10, 20, 30, 40}}, "float64")
      local want = nested(3, 4, function(i, j) return i + 10 * j end)
      assert.same(want, (c + r):totable())
      assert.same(want, (r + c):totable())
      assert.same(nested(3, 4, function(i, j) return i - 10 * j end), (c - r):totable())
      assert.same(nested(3, 4, function(i, j) return 10 * j - i end), (r - c):totable())
      local v = A({1, 2, 3, 4}, "float64")
      local m = A(nested(3, 4, function(i, j) return 100 * i end), "float64")
      assert.same(nested(3, 4, function(i, j) return 100 * i - j end), (m - v):totable())
      assert.same(nested(3, 4, function(i, j) return j - 100 * i end), (v - m):totable())
      assert.same({2, 4, 3}, (A({{{1, 2, 3}}, {{4, 5, 6}}}) + A({{1}, {2}, {3}, {4}})).shape)
    end)

    it("0-d arrays with anything", function()
      local z = A(5, "float64")
      local m = A({{1, 2, 3}, {4, 5, 6}}, "float64")
      assert.same({{6, 7, 8}, {9, 10, 11}}, (z + m):totable())
      assert.same({{-4, -3, -2}, {-1, 0, 1}}, (m - z):totable())
      local zz = z * A(2, "float64")
      assert.equal(0, zz.ndim)
      assert.equal(10, zz:item())
      assert.equal(0, (z + 1).ndim)
      assert.equal(-5, (-z):item())
    end)

    it("size-0 axes", function()
      local r = A({}, "float32"):reshape(0, 3) + A({{1, 2, 3}})
      assert.same({0, 3}, r.shape); assert.equal(0, r.size)
      r = gpu.zeros({3, 0}, {device = dev}) * gpu.ones({3, 1}, {device = dev})
      assert.same({3, 0}, r.shape)
      r = gpu.zeros({0}, {device = dev}) + A(1)
      assert.same({0}, r.shape)
      r = gpu.zeros({2, 0, 4}, {device = dev}):exp()
      assert.same({2, 0, 4}, r.shape)
      r = gpu.zeros({0}, {device = dev}):lt(1)
      assert.equal("bool", r.dtype); assert.same({0}, r.shape)
      fails(function() return gpu.zeros({0}, {device = dev}) + gpu.zeros({2}, {device = dev}) end, "(0,)", "(2,)")
    end)
  end)

  describe("strided operands on " .. dev, function()
    -- non-contiguous operands (transposed, sliced with steps, expanded) give the same
    -- result as the contiguous computation
    local function same_as_contiguous(f, x, y)
      local want = f(x:contiguous(), type(y) == "userdata" and y:contiguous() or y)
      local got = f(x, y)
      assert.same(want.shape, got.shape)
      assert.equal(want.dtype, got.dtype)
      assert_rel(got, want, 0, 0)
    end
    local binf = {
      function(x, y) return x + y end, function(x, y) return x * y end,
      function(x, y) return x - y end, function(x, y) return gpu.maximum(x, y) end,
      function(x, y) return x:lt(y) end, function(x, y) return x // y end,
    }

    it("transposed, stepped and expanded operands", function()
      local x = gpu.arange(24, {device = dev}):astype("float64"):reshape(4, 6)
      local y = gpu.arange(24, {device = dev}):astype("float64"):reshape(6, 4) * 0.5 + 1
      for _, f in ipairs(binf) do
        same_as_contiguous(f, x.T, y)                             -- (6,4) transposed + contiguous
        same_as_contiguous(f, y, x.T)
        same_as_contiguous(f, x.T, x.T)
        same_as_contiguous(f, x[{{1, 4, 2}, {2, 6, 2}}], y[{{1, 6, 3}, {1, 3}}])   -- (2,3) steps
        same_as_contiguous(f, A({1, 2, 3}, "float64"):expand(4, 3), x[{":", {1, 6, 2}}])
        same_as_contiguous(f, x[{":", {6, 1, -1}}], 3)          -- negative step, scalar
      end
      same_as_contiguous(function(u) return u:exp() end, x.T[{{2, 6, 2}}])
      same_as_contiguous(function(u) return -u end, x[{{4, 1, -1}}])
      same_as_contiguous(function(u) return u:sqrt() end, A({4, 9}, "float64"):expand(3, 2))
    end)

    it("large strided operands (threaded path) match the contiguous result", function()
      local x = gpu.arange(300 * 200, {device = dev}):astype("float32"):reshape(300, 200)
      local y = gpu.arange(200, {device = dev}):astype("float32")
      same_as_contiguous(function(u, v) return u + v end, x.T, y:reshape(200, 1))
      same_as_contiguous(function(u, v) return u * v end, x[{":", {1, 200, 2}}], y[{{1, 200, 2}}])
      same_as_contiguous(function(u, v) return u - v end, y:reshape(200, 1):expand(200, 300), x.T)
      same_as_contiguous(function(u) return u:sin() end, x.T)
      local big = x.T + 1
      assert.equal(1.0, big[{1, 1}])
      assert.equal(200.0 * 299 + 200, big[{200, 300}])
    end)
  end)

  describe("floor division and modulo on " .. dev, function()
    it("floats floor like Python, with negative operands", function()
      local fa, fb = A(B.fa, "float64"), A(B.fb, "float64")
      assert_rel(fa // fb, B.float.floordiv, 0, 0, "//")
      assert_rel(fa % fb, B.float.mod, 0, 0, "%")
      assert.same({-4, 3, 3, -4}, (A({-7.5, 7.5, -7.5, 7.5}) // A({2, 2, -2, -2})):totable())
      assert.same({0.5, 1.5, -1.5, -0.5}, (A({-7.5, 7.5, -7.5, 7.5}) % A({2, 2, -2, -2})):totable())
      -- Lua's own // and % agree with these for floats
      for i = 1, 4 do
        local p, q = ({-7.5, 7.5, -7.5, 7.5})[i], ({2, 2, -2, -2})[i]
        assert.equal(luafloordiv(p, q), (A({p}, "float64") // q):item())
        assert.equal(p % q, (A({p}, "float64") % q):item())
      end
    end)

    it("float division by zero gives ±inf and nan", function()
      local x = A({-1, 0, 1, nan}, "float32")
      assert_rel(x / 0, {-huge, nan, huge, nan}, 0)
      assert_rel(x // 0, {-huge, nan, huge, nan}, 0)
      assert_rel(x % 0, {nan, nan, nan, nan}, 0)
      assert_rel(x / A({-0.0}, "float32"), {huge, nan, -huge, nan}, 0)
    end)

    it("integers floor like Python; x // 0 and x % 0 are 0; MIN // -1 wraps", function()
      local ia, ib = A(B.ia, "int64"), A(B.ib, "int64")
      assert.same(B.int.floordiv, (ia // ib):totable())
      assert.same(B.int.mod, (ia % ib):totable())
      for k, want in pairs(B.int) do
        assert.same(want, gpu[k](ia, ib):totable(), k)
      end
      local a32, b32 = A(B.ia32, "int32"), A(B.ib32, "int32")
      for k, want in pairs(B.int32) do
        local r = gpu[k](a32, b32)
        assert.equal("int32", r.dtype)
        assert.same(want, r:totable(), k)
      end
      assert.same({-2147483648}, (A({-2147483648}, "int32") // -1):totable())
      assert.same({0}, (A({-2147483648}, "int32") % -1):totable())
      assert.same({0, 0, 0}, (A({-7, 0, 7}, "int32") // 0):totable())
      assert.same({0, 0, 0}, (A({-7, 0, 7}, "int32") % 0):totable())
      assert.same({28, 0, 36}, (A({200, 0, 255}, "uint8") // 7):totable())
      assert.same({4, 0, 3}, (A({200, 0, 255}, "uint8") % 7):totable())
      assert.same({0}, (A({200}, "uint8") // A({0}, "uint8")):totable())
      -- Lua's own integer // and % agree (except that Lua raises on zero)
      for x = -7, 7 do
        for _, y in ipairs{-3, -2, -1, 1, 2, 3} do
          assert.equal(x // y, (A({x}, "int64") // y):item())
          assert.equal(x % y, (A({x}, "int64") % y):item())
          assert.equal(x // y, (x // A({y}, "int32")):item())
        end
      end
    end)
  end)

  describe("bitwise ops on " .. dev, function()
    it("& | ~ on int arrays, with numbers, and mixed int dtypes", function()
      local a, b = A({12, -1, 0, 5}, "int32"), A({10, 7, 3, -6}, "int32")
      assert.same({8, 7, 0, 0}, (a & b):totable())
      assert.same({14, -1, 3, -1}, (a | b):totable())
      assert.same({6, -8, 3, -1}, (a ~ b):totable())
      assert.same({-13, 0, -1, -6}, (~a):totable())
      assert.same({4, 4, 0, 4}, (a & 4):totable())
      assert.same({13, -1, 1, 5}, (1 | a):totable())
      assert.same({12 ~ 255, -256, 255, 5 ~ 255}, (a ~ 255):totable())
      local u = A({0xF0, 0x0F}, "uint8")
      assert.same({0x0F, 0xF0}, (~u):totable())
      assert.equal("uint8", (u & u).dtype)
      local r = u | A({256, 1}, "int64")
      assert.equal("int64", r.dtype); assert.same({0x1F0, 0x0F}, r:totable())
      assert.same({8, 7, 0, 0}, gpu.bitwise_and(a, b):totable())
      assert.same({-13, 0, -1, -6}, a:bitwise_not():totable())
      assert.equal("int32", (a & true).dtype)
    end)

    it("on bool arrays: & | ~ give bool, ~bool is logical not", function()
      local p, q = A({true, true, false, false}), A({true, false, true, false})
      for _, r in ipairs{p & q, p | q, p ~ q, ~p} do assert.equal("bool", r.dtype) end
      assert.same({true, false, false, false}, (p & q):totable())
      assert.same({true, true, true, false}, (p | q):totable())
      assert.same({false, true, true, false}, (p ~ q):totable())
      assert.same({false, false, true, true}, (~p):totable())
      assert.same({true, true, false, false}, (p & true):totable())
      assert.same({false, false, false, false}, (p & false):totable())
      local r = p & A({3, 1, 1, 0}, "int32")
      assert.equal("int32", r.dtype); assert.same({1, 1, 0, 0}, r:totable())
    end)

    it("shifts, including counts >= the bit width and negative counts (as NumPy)", function()
      local i32 = A({1, 1, 1, 1, -8, 8, -8, 8}, "int32")
      local n = A({0, 31, 32, 40, 1, 1, 40, 40}, "int32")
      assert.same({1, -2147483648, 0, 0, -16, 16, 0, 0}, (i32 << n):totable())
      assert.same({1, 0, 0, 0, -4, 4, -1, 0}, (i32 >> n):totable())
      assert.same({-1, 0}, (A({-8, 8}, "int32") >> -1):totable())
      assert.same({0, 0}, (A({-8, 8}, "int32") << -1):totable())
      local i64 = A({1, 1, 1, -1}, "int64")
      assert.same({1 << 62, math.mininteger, 0, -2}, (i64 << A({62, 63, 64, 1}, "int64")):totable())
      assert.same({-1}, (A({math.mininteger}, "int64") >> 64):totable())
      local u8 = A({1, 255, 128}, "uint8")
      assert.same({128, 0, 0}, (u8 << A({7, 8, 1}, "uint8")):totable())
      assert.same({0, 1, 0}, (u8 >> A({1, 7, 9}, "uint8")):totable())
      assert.same({2, 4, 8}, (1 << A({1, 2, 3}, "int32")):totable())
      assert.same({4, 2, 1}, gpu.right_shift(8, A({1, 2, 3}, "int64")):totable())
    end)

    it("float operands are errors naming the op and the dtype", function()
      local f = A({1.5}, "float32")
      fails(function() return f & f end, "bitwise_and", "float32")
      fails(function() return f | A({1}, "int32") end, "bitwise_or", "float64")
      fails(function() return A({1}, "int32") ~ f end, "bitwise_xor", "float64")
      fails(function() return ~A({1}, "float64") end, "bitwise_not", "float64")
      fails(function() return A({1}, "int32") & 2.5 end, "bitwise_and", "float64")
      fails(function() return f << 1 end, "left_shift", "float32")
      fails(function() return A({1}, "float16") >> 1 end, "right_shift", "float16")
      assert.same({2}, (A({true}) << 1):totable())          -- bool with an integer is int64
      fails(function() return A({true}) << A({true}) end, "left_shift", "bool")
      fails(function() return gpu.bitwise_and(A({1}, "bfloat16"), 1) end, "bitwise_and", "bfloat16")
      assert.same({1.5}, f:totable())
    end)
  end)

  describe("comparisons and logic on " .. dev, function()
    it("lt le gt ge eq ne return bool arrays", function()
      local a, b = A({1, 2, 3}, "float32"), A({2, 2, 2}, "int32")
      local want = {
        lt = {true, false, false}, le = {true, true, false}, gt = {false, false, true},
        ge = {false, true, true}, eq = {false, true, false}, ne = {true, false, true},
      }
      for op, w in pairs(want) do
        local r = a[op](a, b)
        assert.equal("bool", r.dtype)
        assert.same(w, r:totable(), op)
        assert.same(w, gpu[op](a, b):totable(), op)
        assert.same(w, gpu[op](a, 2):totable(), op)
      end
      assert.same({false, false, true}, gpu.lt(2, a):totable())        -- number on the left
      assert.same({true, false, false}, gpu.less(a, 2):totable())
      assert.same({true, false}, A({true, false}):eq(true):totable())
      assert.same({false, true, false}, A({1, 2, 3}, "int64"):eq(A({2}, "uint8")):totable())
      assert.same({{true, true}, {false, true}}, gpu.le(A({{1}, {3}}), A({2, 3})):totable())
    end)

    it("with NaN every comparison is false except ne", function()
      local x = A({nan, 1, nan}, "float64")
      local y = A({1, nan, nan}, "float64")
      for _, op in ipairs{"lt", "le", "gt", "ge", "eq"} do
        assert.same({false, false, false}, gpu[op](x, y):totable(), op)
        assert.same({false, false, false}, gpu[op](x, nan):totable(), op)
      end
      assert.same({true, true, true}, gpu.ne(x, y):totable())
      assert.same({true, true, true}, x:ne(nan):totable())
      assert.same({false, false, false}, A({nan, nan, nan}, "float16"):eq(A({nan}, "bfloat16")):totable())
    end)

    it("logical_and/or/xor/not take truthiness (NaN is true) and give bool", function()
      local x = A({0, 1, -2, nan}, "float32")
      local y = A({0, 0, 3, 0}, "int32")
      assert.same({false, false, true, false}, gpu.logical_and(x, y):totable())
      assert.same({false, true, true, true}, gpu.logical_or(x, y):totable())
      assert.same({false, true, false, true}, gpu.logical_xor(x, y):totable())
      assert.same({true, false, false, false}, x:logical_not():totable())
      assert.same({false, true}, A({true, false}):logical_not():totable())
      assert.same({false, true, true, true}, x:logical_or(false):totable())
      assert.equal("bool", A({1, 0}, "uint8"):logical_not().dtype)
    end)
  end)

  describe("unary math on " .. dev, function()
    local all = {}
    for _, f in ipairs(float_fns) do all[#all + 1] = f end
    for _, f in ipairs(same_fns) do all[#all + 1] = f end

    it("float64 values as NumPy (1e-12 relative), NaN and inf included", function()
      local x = A(U.x, "float64")
      for _, f in ipairs(all) do
        local r = gpu[f](x)
        assert.equal("float64", r.dtype, f)
        assert_rel(r, U[f].f64, 1e-12, 1e-300, f)
        assert_rel(x[f](x), U[f].f64, 1e-12, 1e-300, f)
      end
      assert_rel(x, U.x, 0, 0, "input")
    end)

    it("float32 values as NumPy (1e-6 relative), NaN and inf included", function()
      local x = A(U.x32, "float32")
      for _, f in ipairs(all) do
        local r = x[f](x)
        assert.equal("float32", r.dtype, f)
        local want = {}
        for i, v in ipairs(U[f].f32) do                    -- the float32 range
          want[i] = v > FLT_MAX and huge or v < -FLT_MAX and -huge or v
        end
        assert_rel(r, want, 1e-6, 1e-44, f)
      end
    end)

    it("float16 and bfloat16 inputs compute in float32 and keep their dtype", function()
      for _, d in ipairs{"float16", "bfloat16"} do
        local tol = d == "float16" and 2e-3 or 1e-2
        local x = A({-2.5, -0.5, 0, 0.25, 0.75, 1.5, 3, 1e3, huge, -huge, nan}, d)
        local x64 = x:astype("float64")
        for _, f in ipairs(all) do
          local r = x[f](x)
          assert.equal(d, r.dtype, f)
          local want = x64[f](x64):astype(d):astype("float64")  -- the float64 result, rounded to d
          assert_rel(r:astype("float64"), want, tol, 1e-7, d .. " " .. f)
        end
      end
    end)

    it("integer inputs: float functions give float64 (int32/int64) or float16 (uint8/bool)", function()
      local want = { int32 = "float64", int64 = "float64", uint8 = "float16", bool = "float16" }
      for d, fd in pairs(want) do
        local x = d == "bool" and A({true, false, true}) or A({1, 0, 4}, d)
        for _, f in ipairs(float_fns) do
          local r = x[f](x)
          assert.equal(fd, r.dtype, d .. " " .. f)
          local ref = x:astype(fd)[f](x:astype(fd))
          assert_rel(r:astype("float64"), ref:astype("float64"), 0, 0, d .. " " .. f)
        end
      end
      assert_rel(A({1, 4, 9}, "int64"):sqrt(), {1, 2, 3}, 0)
      assert_rel(A({0, 1}, "uint8"):exp(), {1, 2.71875}, 0)          -- e in float16
      assert_rel(A({2}, "int32"):log(), {math.log(2)}, 1e-15)
    end)

    it("integer inputs: abs neg sign square relu floor ceil round trunc stay exact", function()
      local x = A({-7, 0, 5, -2147483648, 2147483647}, "int32")
      assert.same({7, 0, 5, -2147483648, 2147483647}, x:abs():totable())    -- abs(MIN) wraps
      assert.same({7, 0, -5, -2147483648, -2147483647}, x:neg():totable())
      assert.same({-1, 0, 1, -1, 1}, x:sign():totable())
      assert.same({49, 0, 25, 0, 1}, x:square():totable())
      assert.same({0, 0, 5, 0, 2147483647}, x:relu():totable())
      for _, f in ipairs{"floor", "ceil", "round", "trunc"} do
        local r = x[f](x)
        assert.equal("int32", r.dtype)
        assert.same(x:totable(), r:totable())
      end
      local big = A({math.maxinteger, -3}, "int64")
      assert.same({math.maxinteger, 3}, big:abs():totable())
      assert.same({1, 9}, big:square():totable())
      assert.same({0, 1, 255}, A({0, 255, 1}, "uint8"):abs():neg():totable())
      assert.same({true, false}, A({true, false}):abs():totable())
      assert.equal("bool", A({true}):square().dtype)
    end)

    it("round is half to even; floor/ceil/trunc on negatives", function()
      local x = A({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 3.5000001}, "float64")
      assert_rel(x:round(), {0, 2, 2, -0, -2, -2, 2, 4}, 0)
      local y = A({-1.5, -0.2, 0.2, 1.5}, "float32")
      assert.same({-2, -1, 0, 1}, y:floor():totable())
      assert.same({-1, -0.0, 1, 2}, y:ceil():totable())
      assert.same({-1, -0.0, 0, 1}, y:trunc():totable())
      assert.same({0, 2, 2, -0.0, -2, -2}, A({0.5, 1.5, 2.5, -0.5, -1.5, -2.5}, "float16"):round():totable())
    end)

    it("isnan isinf isfinite give bool for every dtype", function()
      local x = A({0, nan, huge, -huge, -1}, "float32")
      assert.same({false, true, false, false, false}, x:isnan():totable())
      assert.same({false, false, true, true, false}, x:isinf():totable())
      assert.same({true, false, false, false, true}, x:isfinite():totable())
      for _, d in ipairs{"float64", "float16", "bfloat16"} do
        local y = x:astype(d)
        assert.same({false, true, false, false, false}, y:isnan():totable(), d)
        assert.same({false, false, true, true, false}, y:isinf():totable(), d)
        assert.same({true, false, false, false, true}, gpu.isfinite(y):totable(), d)
      end
      for _, d in ipairs{"int32", "int64", "uint8", "bool"} do
        local y = A({1, 0}, d)
        assert.same({false, false}, y:isnan():totable(), d)
        assert.same({false, false}, y:isinf():totable(), d)
        assert.same({true, true}, y:isfinite():totable(), d)
        assert.equal("bool", y:isfinite().dtype)
      end
    end)

    it("edge values: sign keeps NaN, relu of NaN is NaN, sigmoid/softplus/gelu saturate", function()
      local x = A({nan, -huge, huge, -1000, 1000}, "float32")
      assert_rel(x:sign(), {nan, -1, 1, -1, 1}, 0)
      assert_rel(x:relu(), {nan, 0, huge, 0, 1000}, 0)
      assert_rel(x:sigmoid(), {nan, 0, 1, 0, 1}, 0)
      assert_rel(x:softplus(), {nan, 0, huge, 0, 1000}, 0)
      assert_rel(x:gelu(), {nan, 0, huge, 0, 1000}, 0)
      assert_rel(x:tanh(), {nan, -1, 1, -1, 1}, 0)
      assert_rel(x:exp(), {nan, 0, huge, 0, huge}, 0)
      assert_rel(A({-1, 0, -0.0}, "float64"):log(), {nan, -huge, -huge}, 0)
      assert_rel(A({-1, 0}, "float64"):sqrt(), {nan, 0}, 0)
      assert_rel(A({0, -0.0}, "float32"):reciprocal(), {huge, -huge}, 0)
      assert_rel(A({0}, "float32"):rsqrt(), {huge}, 0)
    end)
  end)

  describe("binary math on " .. dev, function()
    it("float64 values as NumPy: + - * / // % ^ maximum minimum atan2 hypot logaddexp", function()
      local fa, fb = A(B.fa, "float64"), A(B.fb, "float64")
      for k, want in pairs(B.float) do
        assert_rel(gpu[k](fa, fb), want, 1e-15, 1e-300, k)
        assert_rel(fa[k](fa, fb), want, 1e-15, 1e-300, k)
      end
      local a32, b32 = fa:astype("float32"), fb:astype("float32")
      for _, k in ipairs{"atan2", "hypot", "maximum", "minimum", "pow", "logaddexp"} do
        local r = gpu[k](a32, b32)
        assert.equal("float32", r.dtype)
        local want = {}
        for i, v in ipairs(B.float[k]) do want[i] = v > FLT_MAX and huge or v end
        assert_rel(r, want, 1e-6, 1e-38, k .. " float32")
      end
    end)

    it("maximum/minimum propagate NaN from either side", function()
      local x, y = A({nan, 1, 2, -huge}), A({1, nan, 3, 0})
      assert_rel(gpu.maximum(x, y), {nan, nan, 3, 0}, 0)
      assert_rel(gpu.minimum(x, y), {nan, nan, 2, -huge}, 0)
      assert_rel(y:maximum(nan), {nan, nan, nan, nan}, 0)
      assert.same({3, 5}, gpu.maximum(A({3, -1}, "int32"), A({2, 5}, "int32")):totable())
      assert.same({true, false}, gpu.maximum(A({true, false}), A({false, false})):totable())
      assert.same({false, false}, gpu.minimum(A({true, false}), A({false, true})):totable())
    end)

    it("integer pow is exact and wraps; negative exponents give the truncated result", function()
      local r = A(B.pa, "int64") ^ A(B.pb, "int64")
      assert.equal("int64", r.dtype)
      assert.same(B.ipow, r:totable())
      -- NumPy raises for negative integer exponents; gpulua gives trunc(a ^ b) (see elem.h)
      local e = A({2, 1, -1, -1, 0, 5}, "int32") ^ A({-1, -5, -3, -2, -1, -2}, "int32")
      assert.same({0, 1, -1, 1, 0, 0}, e:totable())
      assert.same({1, 27, 0}, (A({1, 3, 0}, "uint8") ^ A({0, 3, 2}, "uint8")):totable())
      assert.same({0}, (A({2}, "uint8") ^ 8):totable())                 -- 256 wraps
      assert.same({math.mininteger}, (A({2}, "int64") ^ 63):totable())
      assert.same({-8}, (A({-2}, "int32") ^ 3):totable())
    end)

    it("float pow with special values", function()
      local r = A({-8, 0, 2, -2, nan, 1}, "float64") ^ A({1 / 3, -1, 0.5, 2, 0, nan}, "float64")
      assert_rel(r, {nan, huge, math.sqrt(2), 4, 1, 1}, 1e-15)
      assert_rel(A({4}, "float32") ^ -0.5, {0.5}, 0)
    end)

    it("where over large arrays (threaded, vector loops) agrees with arithmetic selection", function()
      gpu.random.seed(11)
      local o = { device = dev }
      local c = gpu.rand({ 300, 4, 97 }, o):gt(0.5)
      local cf = c:astype("float64")
      local a = gpu.randn({ 300, 1, 97 }, { dtype = "float64", device = dev })   -- broadcast along axis 2
      local b = gpu.randn({ 300, 4, 97 }, { dtype = "float64", device = dev })
      local cases = {
        { gpu.where(c, a, b), cf * a + (1 - cf) * b },
        { gpu.where(c, a, -2), cf * a + (1 - cf) * -2 },
        { gpu.where(c, 3, b), cf * 3 + (1 - cf) * b },
        { gpu.where(c, 3, -2), cf * 3 + (1 - cf) * -2 },
        { gpu.where(c, b:transpose(2, 3):contiguous():transpose(2, 3), 0), cf * b },   -- strided operand
        { gpu.where(c:reshape(-1), b:reshape(-1), 0), (cf * b):reshape(-1) },   -- one long row
      }
      for i, p in ipairs(cases) do
        assert.equal(0, (p[1] - p[2]):abs():max():item(), "case " .. i)
      end
      local i8 = gpu.where(c, gpu.ones({ 300, 4, 97 }, { dtype = "uint8", device = dev }), 0)
      assert.equal(c:astype("int64"):sum():item(), i8:astype("int64"):sum():item())
    end)

    it("where picks by a condition, with arrays or numbers, broadcasting", function()
      local c = A({true, false, true})
      assert.same({1, 20, 3}, gpu.where(c, A({1, 2, 3}), A({10, 20, 30})):totable())
      assert.same({1, -1, 1}, gpu.where(c, 1, -1):totable())
      assert.same({7, 2, 7}, gpu.where(c, 7, A({1, 2, 3}, "int32")):totable())
      assert.equal("int32", gpu.where(c, 7, A({1, 2, 3}, "int32")).dtype)
      assert.equal("float64", gpu.where(c, A({1}, "int32"), A({2}, "float32")).dtype)
      assert.same({{1, 0, 1}, {1, 0, 1}}, gpu.where(c, A({{1}, {1}}), 0):totable())
      assert.same({0.5, 2, 0.5}, gpu.where(A({1, 0, 2}, "int32"), 0.5, A({1, 2, 3})):totable())
      local x = A({-1, 2, -3})
      assert.same({0, 2, 0}, gpu.where(x:gt(0), x, 0):totable())
      assert.same({0, 2, 0}, x:gt(0):where(x, 0):totable())
      assert.same({true, false, true}, gpu.where(c, true, false):totable())
      fails(function() return gpu.where(c, A({1, 2})) end, "where")
      fails(function() return gpu.where(c, A({1, 2}), 0) end, "where", "(3,)", "(2,)")
      fails(function() return gpu.where(c, "a", 0) end, "where", "got string")
    end)

    it("clip with one or both bounds (nil for none), NaN stays NaN", function()
      local x = A({-5, 0, 5, nan})
      assert_rel(x:clip(-1, 1), {-1, 0, 1, nan}, 0)
      assert_rel(x:clip(nil, 1), {-5, 0, 1, nan}, 0)
      assert_rel(x:clip(-1), {-1, 0, 5, nan}, 0)
      assert_rel(gpu.clip(x, -1, nil), {-1, 0, 5, nan}, 0)
      assert_rel(x:clip(A({0, 0, 0, 0}), A({1, 2, 3, 4})), {0, 0, 3, nan}, 0)
      local i = A({-5, 0, 5}, "int32")
      assert.same({-1, 0, 1}, i:clip(-1, 1):totable())
      assert.equal("int32", i:clip(-1, 1).dtype)
      fails(function() return x:clip() end, "clip")
      fails(function() return x:clip("a", 1) end, "clip")
    end)

    it("lerp(a, b, w) = a + w (b - a), w a number or an array", function()
      local a, b = A({0, 10, -4}), A({10, 20, 4})
      assert.same({5, 15, 0}, gpu.lerp(a, b, 0.5):totable())
      assert.same({0, 10, -4}, a:lerp(b, 0):totable())
      assert.same({10, 20, 4}, a:lerp(b, 1):totable())
      assert.same({2.5, 20, 4}, gpu.lerp(a, b, A({0.25, 1, 1})):totable())
      assert.same({{0, 10, -4}, {10, 20, 4}}, gpu.lerp(a, b, A({{0}, {1}})):totable())
    end)
  end)

  describe("in-place forms on " .. dev, function()
    it("modify the receiver and return it", function()
      local x = A({1, 2, 3})
      local view = x[{{2, 3}}]
      for _, case in ipairs{
        { "add_", 1, {2, 3, 4} }, { "sub_", 0.5, {1.5, 2.5, 3.5} }, { "mul_", 2, {3, 5, 7} },
        { "div_", 2, {1.5, 2.5, 3.5} }, { "pow_", 2, {2.25, 6.25, 12.25} },
        { "maximum_", 3, {3, 6.25, 12.25} }, { "floordiv_", 2, {1, 3, 6} }, { "mod_", 4, {1, 3, 2} },
      } do
        local r = x[case[1]](x, case[2])
        assert.is_true(rawequal(x, r), case[1])
        assert.same(case[3], x:totable(), case[1])
      end
      assert.same({3, 2}, view:totable())                 -- views see the change
      local y = A({0, 1}, "float64")
      assert.is_true(rawequal(y, y:exp_()))
      assert_rel(y, {1, math.exp(1)}, 1e-15)
      y:neg_():abs_():sqrt_()
      assert_rel(y, {1, math.sqrt(math.exp(1))}, 1e-15)
      local i = A({1, -2}, "int32")
      i:add_(2):mul_(A({3, 3}, "int64")):neg_()
      assert.same({-9, 0}, i:totable())
      assert.equal("int32", i.dtype)
      local b = A({1, 6}, "int32")
      b:bitwise_and_(4):left_shift_(1)
      assert.same({0, 8}, b:totable())
      -- comparisons have no in-place form (their result is bool)
      assert.is_nil(x.lt_)
    end)

    it("same_kind casting: int:add_(2.5) and int:div_ are errors, float32:add_(float64) works", function()
      local i = A({1, 2}, "int32")
      fails(function() return i:add_(2.5) end, "add_", "float64", "int32")
      fails(function() return i:div_(2) end, "div_", "float64", "int32")
      fails(function() return i:add_(A({1}, "float32")) end, "add_", "int32")
      fails(function() return i:exp_() end, "exp_", "int32", "float64")
      fails(function() return A({1}, "uint8"):add_(A({1}, "int32")) end, "add_", "int32", "uint8")
      fails(function() return A({true}):add_(1) end, "add_", "int64", "bool")
      assert.same({1, 2}, i:totable())
      local f = A({1, 2})
      f:add_(A({0.5, 1e-10}, "float64"))
      assert.equal("float32", f.dtype)
      assert.same({1.5, 2}, f:totable())
      local h16 = A({1}, "float16")
      h16:mul_(A({3}, "float64"))
      assert.same({3}, h16:totable())
      local i64 = A({5}, "int64")
      i64:add_(A({7}, "uint8")):add_(A({true}))
      assert.same({13}, i64:totable())
    end)

    it("the other operand broadcasts, but the result may not outgrow the receiver", function()
      local m = A({{1, 2, 3}, {4, 5, 6}})
      m:add_(A({10, 20, 30}))
      assert.same({{11, 22, 33}, {14, 25, 36}}, m:totable())
      m:mul_(A({{1}, {0}}))
      assert.same({{11, 22, 33}, {0, 0, 0}}, m:totable())
      local r = A({{1, 2, 3}})
      fails(function() return r:add_(A({{1}, {2}})) end, "add_", "(2,3)", "(1,3)")
      fails(function() return A({1, 2, 3}):add_(A({{1, 2, 3}})) end, "add_", "(1,3)", "(3,)")
      fails(function() return A({1, 2, 3}):add_(A({1, 2})) end, "add_", "(3,)", "(2,)")
      assert.same({{1, 2, 3}}, r:totable())
    end)

    it("overlapping operands behave as if the other operand were copied first (NumPy)", function()
      local x = gpu.arange(6, {device = dev}):astype("float32")
      x[{{2, 5}}]:add_(x[{{1, 4}}])
      assert.same({0, 1, 3, 5, 7, 5}, x:totable())
      x = gpu.arange(6, {device = dev}):astype("float32")
      x[{{1, 4}}]:add_(x[{{2, 5}}])
      assert.same({1, 3, 5, 7, 4, 5}, x:totable())
      local m = gpu.arange(9, {device = dev}):astype("float64"):reshape(3, 3)
      m:add_(m.T)
      assert.same({{0, 4, 8}, {4, 8, 12}, {8, 12, 16}}, m:totable())
      local y = A({1, 2, 3})
      y:mul_(y)                                            -- same layout: no copy needed
      assert.same({1, 4, 9}, y:totable())
      local z = gpu.arange(5, {device = dev}):astype("float32")
      z[{{2, 5}}]:neg_()
      z[{{1, 4}}]:sub_(z[{{5, 2, -1}}])
      assert.same({4, 2, 0, -2, -4}, z:totable())
    end)
  end)

  describe("errors on " .. dev, function()
    local x = A({1, 2, 3})
    it("shapes that cannot broadcast name both shapes", function()
      fails(function() return x + A({1, 2}) end, "add", "(3,)", "(2,)")
      fails(function() return A({{1, 2}, {3, 4}, {5, 6}}) * A({{1, 2, 3}}) end, "mul", "(3,2)", "(1,3)")
      fails(function() return gpu.maximum(x, A({{1, 2}})) end, "maximum", "(3,)", "(1,2)")
      fails(function() return x:lt(A({1, 2})) end, "lt", "(3,)", "(2,)")
    end)

    it("bool - bool and -bool are refused", function()
      local b = A({true, false})
      fails(function() return b - b end, "sub", "bool")
      fails(function() return gpu.sub(b, A({true})) end, "sub", "bool")
      fails(function() return -b end, "bool", "logical_not")
      fails(function() return b:neg() end, "neg", "bool")
      fails(function() return b // b end, "floordiv", "bool")
      fails(function() return b % b end, "mod", "bool")
      fails(function() return b ^ b end, "pow", "bool")
      assert.same({true, false}, b:totable())
    end)

    it("operands that are not arrays or numbers", function()
      fails(function() return x + "a" end, "add", "got string")
      fails(function() return "a" + x end, "add", "got string")
      fails(function() return x + {} end, "add", "got table")
      fails(function() return x * print end, "mul", "got function")
      fails(function() return gpu.add(x) end, "add", "got no value")
      fails(function() return gpu.add(x, nil) end, "add", "got nil")
      fails(function() return x:add_("1") end, "add_", "got string")
      fails(function() return gpu.exp(3) end, "exp", "gpu.array expected")
      fails(function() return gpu.exp("x") end, "exp", "gpu.array expected")
      fails(function() return gpu.lt({}, x) end, "lt", "got table")
      assert.same({1, 2, 3}, x:totable())
    end)

    it("both operands numbers", function()
      fails(function() return gpu.add(1, 2) end, "add", "array")
      fails(function() return gpu.maximum(1, 2) end, "maximum", "array")
      fails(function() return gpu.lt(1, 2) end, "lt", "array")
    end)

    it("closed arrays", function()
      local c = A({1, 2})
      c:close()
      fails(function() return c + 1 end, "add", "closed")
      fails(function() return 1 + c end, "add", "closed")
      fails(function() return x + c end, "add", "closed")
      fails(function() return c:exp() end, "exp", "closed")
      fails(function() return -c end, "closed")
      fails(function() return c:add_(1) end, "add_", "closed")
      fails(function() return x:add_(c) end, "add_", "closed")
      fails(function() return gpu.where(c, 1, 2) end, "where", "closed")
      assert.same({1, 2, 3}, x:totable())
    end)
  end)
end

-- ---- every op on every dtype -------------------------------------------------------------
-- The fixtures' dtypes tables (tools/gen_fixtures.py): each unary op on inputs of each
-- dtype, each binary op on pairs of each dtype, against NumPy (gpulua's own ops against
-- their float64 formula rounded to the dtype): the result's dtype and values, or an error
-- naming the op and the dtype where gpulua refuses the pair. Complex elements are {re, im}
-- pairs (arrays made through view_as_complex), uint64 the int64 of the same bits.

local REAL_OF = { complex64 = "float32", complex128 = "float64" }
-- relative tolerances of a result dtype against NumPy's (complex: relative to |w|)
local RTOL = { float16 = 2e-3, bfloat16 = 1e-2, float32 = 3e-6, float64 = 1e-13, complex64 = 3e-6, complex128 = 1e-13 }

-- an array of dtype dt on dev from fixture values
local function from_fixture(vals, dt, dev)
  if REAL_OF[dt] then
    if #vals == 0 then return gpu.zeros({ 0 }, { dtype = dt, device = dev }) end
    return gpu.view_as_complex(gpu.array(vals, { dtype = REAL_OF[dt], device = dev }))
  end
  if dt == "uint64" then return gpu.array(vals, { dtype = "int64", device = dev }):astype("uint64") end
  return gpu.array(vals, { dtype = dt, device = dev })
end

-- an array's values as the fixtures write them
local function to_fixture(r)
  if REAL_OF[r.dtype] then return gpu.view_as_real(r):totable() end
  if r.dtype == "uint64" then return r:astype("int64"):totable() end
  return r:totable()
end

local function same_num(g, w, rtol, scale)
  if w ~= w then return g ~= g end
  if w == huge or w == -huge then return g == w end
  return g == g and math.abs(g - w) <= rtol * scale + 1e-300
end

-- nil, or the first difference between got and the fixture's values want (result dtype dt)
local function differs(got, want, dt)
  local rtol = RTOL[dt]
  for i, w in ipairs(want) do
    local g = got[i]
    if REAL_OF[dt] then
      local scale = 0                  -- |w| over the finite parts
      for _, p in ipairs(w) do if p == p and p ~= huge and p ~= -huge then scale = scale + p * p end end
      scale = math.sqrt(scale)
      if not (same_num(g[1], w[1], rtol, scale) and same_num(g[2], w[2], rtol, scale)) then
        return ("element %d: got %.17g%+.17gi, want %.17g%+.17gi"):format(i, g[1], g[2], w[1], w[2])
      end
    elseif rtol then
      if not same_num(g, w, rtol, math.abs(w)) then return ("element %d: got %.17g, want %.17g"):format(i, g, w) end
    elseif g ~= w then
      return ("element %d: got %s, want %s"):format(i, tostring(g), tostring(w))
    end
  end
end

local function check_result(ok, r, want, what, op, dt)
  if want == "error" then
    assert(not ok, what .. ": expected an error")
    assert(type(r) == "string" and r:find(op, 1, true) and r:find(dt, 1, true), what .. ": error " .. tostring(r))
    return
  end
  assert(ok, what .. ": " .. tostring(r))
  assert(r.dtype == want.dtype, ("%s: dtype %s, want %s"):format(what, r.dtype, want.dtype))
  local d = differs(to_fixture(r), want.v, want.dtype)
  assert(d == nil, what .. ": " .. tostring(d))
end

for _, dev in ipairs(h.devices()) do
  describe("every elementwise op on every dtype on " .. dev .. " (NumPy's fixtures)", function()
    for _, row in ipairs(gpu._dtypes) do
      local dt = row.name
      it("unary ops of " .. dt, function()
        local F = U.dtypes[dt]
        assert(F, "no unary fixture for " .. dt)
        local x = from_fixture(F.x, dt, dev)
        for op, want in pairs(F.ops) do
          local ok, r = pcall(gpu[op], x)
          check_result(ok, r, want, op .. "(" .. dt .. ")", op, dt)
        end
      end)
      it("binary ops of " .. dt, function()
        local F = B.dtypes[dt]
        assert(F, "no binary fixture for " .. dt)
        local a = from_fixture(F.a, dt, dev)
        for op, want in pairs(F.ops) do
          local bv = op == "pow" and F.b_pow or op:find("shift") and F.b_shift or F.b
          local ok, r = pcall(gpu[op], a, from_fixture(bv, dt, dev))
          check_result(ok, r, want, op .. "(" .. dt .. ", " .. dt .. ")", op, dt)
        end
      end)
    end
  end)
end

-- every elementwise math op C has (kernels/elem_ops.h, as gpu._jit lists it) is checked
-- above against NumPy: a new op needs its reference in tools/gen_fixtures.py and its
-- fixture (/usr/bin/python3 tools/gen_fixtures.py), and a unary one its place in the lists
describe("the NumPy fixtures", function()
  it("cover every op of C's on every dtype of C's", function()
    for _, row in ipairs(gpu._dtypes) do
      for name in pairs(gpu._jit.unary) do
        assert.truthy(U.dtypes[row.name] and U.dtypes[row.name].ops[name], ("no unary fixture for %s on %s"):format(name, row.name))
      end
      for name in pairs(gpu._jit.binary) do
        assert.truthy(B.dtypes[row.name] and B.dtypes[row.name].ops[name], ("no binary fixture for %s on %s"):format(name, row.name))
      end
    end
  end)

  it("cover every unary (UF, US) and binary (BA, BD) math op of C's", function()
    local listed = {}
    for _, f in ipairs(float_fns) do listed[f] = "UF" end
    for _, f in ipairs(same_fns) do listed[f] = "US" end
    for name, kind in pairs(gpu._jit.unary) do
      if kind == "UF" or kind == "US" then
        assert.truthy(U[name], "no fixture for " .. name .. " in spec/fixtures/unary.lua (tools/gen_fixtures.py)")
        assert.equal(kind, listed[name], name .. " is not in elementwise_spec.lua's float_fns / same_fns")
      end
    end
    for name, kind in pairs(gpu._jit.binary) do
      if kind == "BA" or kind == "BD" then
        assert.truthy(B.float[name], "no fixture for " .. name .. " in spec/fixtures/binary.lua (tools/gen_fixtures.py)")
      end
    end
  end)
end)
