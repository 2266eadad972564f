-- promotion_spec.lua — result dtypes: NumPy 2 promotion (NEP 50) for all 15 dtypes.
--
-- src/core/dtype.c promotes by rules (gl_promote): two dtypes of one kind meet at the wider;
-- a signed and an unsigned integer at a signed type wider than the unsigned one (uint64 and
-- a signed one at float64); an integer and a float at a float that holds the integer's
-- values (8-bit: float16, 16-bit: float32, wider: float64); a complex and a real at the
-- complex type whose parts hold the real's (complex64 + float64 or int32 -> complex128).
-- bfloat16 is not in NumPy: its row follows float16's except that float16 + bfloat16 is
-- float32, as ml_dtypes and PyTorch (tools/gen_fixtures.py's BF16_WITH). The whole table is
-- README's generated promotion table; gpu.promote_types and gpu.result_type give it.
--
-- Exceptions: bool + bool is logical or and bool * bool logical and (bool results, as in
-- NumPy); bool - bool and -bool are errors (NumPy refuses both). a / b is float64 whenever
-- the promoted dtype is not a float or complex. Comparisons (lt le gt ge eq ne) always give
-- bool, computed in the promoted dtype.
--
-- Lua scalars are weak: they never widen an array of their own kind.
--   int array  op Lua integer -> the array's dtype (an integer out of its range is an
--                                error, like NumPy's OverflowError: uint8 + 300, uint8 + -1)
--   int array  op Lua float   -> float64              float array op any real -> unchanged
--   bool array op Lua integer -> int64                bool array op Lua float -> float64
--   any array  op Lua boolean -> the array's dtype    (bool array + true is logical or)
--   real array op complex     -> complex64 for float32 and the halves, else complex128
--   comparisons with an out-of-range Lua integer give the exact answer (uint8 < 300 is
--   true), as NumPy 2 does.
-- gpu.result_type looks at kinds only, as np.result_type: result_type("uint8", 300) is
-- uint8. The expectations come from NumPy (spec/fixtures/promotion.lua, made by
-- tools/gen_fixtures.py). An op a device has no kernel for in the promoted dtype is
-- refused with the message gpu._supports gives.
local h = require "spec.helper"
local gpu = h.gpu
local P = require "spec.fixtures.promotion"

local function fails(f, ...)
  local ok, err = pcall(f)
  assert.is_false(ok, "expected an error")
  assert.equal("string", type(err))
  for _, want in ipairs{...} do
    assert.truthy(err:find(want, 1, true), ("%q not in %q"):format(want, err))
  end
  return err
end

local function arr(dtype, dev, vals)
  return gpu.array(vals or {1, 0, 1}, {dtype = dtype, device = dev})
end

local binop = {
  add = function(a, b) return a + b end,
  sub = function(a, b) return a - b end,
  mul = function(a, b) return a * b end,
  div = function(a, b) return a / b end,
  lt = function(a, b) return gpu.lt(a, b) end,
  maximum = function(a, b) return gpu.maximum(a, b) end,
}

-- A complex Lua scalar 1+2i, where the module makes them (gpu.complex of two numbers);
-- nil before.
local function complex_scalar()
  local ok, z = pcall(function() return gpu.complex(1, 2) end)
  if ok and z ~= nil and getmetatable(z) ~= getmetatable(gpu.zeros(1)) then return z end
end

local scalars = { int = 3, float = 2.5, bool = true, neg = -1, big = 300, complex = complex_scalar() }

-- got (a dtype or "error" with message err) for op on dtypes promoting to ct, against want:
-- equal, or the op refused as gpu._supports says for ct on dev; nil, or the mismatch
local function mismatch(op, ct, dev, want, got, err)
  if got == want then return nil end
  if got == "error" and want ~= "error" then
    local ok, why = gpu._supports("binary", ct, op == "div" and not ct:match("float") and not ct:match("complex")
                                  and "div" or op, dev)
    if not ok and tostring(err):find(why, 1, true) then return nil end
  end
  return ("%s, want %s%s"):format(got, want, got == "error" and " (" .. tostring(err) .. ")" or "")
end

describe("promotion tables", function()
  it("gpu.promote_types and gpu.result_type: every pair of dtypes as NumPy", function()
    local bad = {}
    for _, a in ipairs(P.dtypes) do
      for _, b in ipairs(P.dtypes) do
        local want = P.promote[a][b]
        for _, got in ipairs { gpu.promote_types(a, b), gpu.result_type(a, b), gpu.result_type(gpu.zeros(1, { dtype = a }), b) } do
          if got ~= want then bad[#bad + 1] = ("%s with %s: %s, want %s"):format(a, b, got, want) end
        end
      end
    end
    assert.equal("", table.concat(bad, "; "))
  end)

  it("gpu.result_type: a dtype with a Lua scalar by kinds, and scalars alone, as NumPy", function()
    local bad = {}
    for _, d in ipairs(P.dtypes) do
      for name, s in pairs(scalars) do
        for _, got in ipairs { gpu.result_type(d, s), gpu.result_type(s, gpu.zeros(2, { dtype = d })) } do
          if got ~= P.weak_type[d][name] then
            bad[#bad + 1] = ("%s with %s: %s, want %s"):format(d, name, got, P.weak_type[d][name])
          end
        end
      end
    end
    for name, s in pairs(scalars) do assert.equal(P.alone[name], gpu.result_type(s), name) end
    assert.equal("", table.concat(bad, "; "))
    assert.equal("float64", gpu.result_type("int8", 3, 2.5))
    assert.equal("int64", gpu.result_type(true, 3))
    h.fails({ "result_type", "at least one" }, gpu.result_type)
    h.fails({ "result_type", "unknown dtype 'float8'" }, gpu.result_type, "float8")
    h.fails({ "promote_types", "unknown dtype" }, gpu.promote_types, "int32", "int128")
  end)
end)

for _, dev in ipairs(h.devices()) do
  describe("promotion on " .. dev, function()
    for _, op in ipairs{"add", "sub", "mul", "div", "lt", "maximum"} do
      it("array " .. op .. " array: every pair of dtypes as NumPy", function()
        local bad = {}
        for _, da in ipairs(P.dtypes) do
          for _, db in ipairs(P.dtypes) do
            local want = P.pairs[op][da][db]
            local ok, r = pcall(binop[op], arr(da, dev), arr(db, dev))
            local m = mismatch(op, P.promote[da][db], dev, want, ok and r.dtype or "error", r)
            if m then bad[#bad + 1] = ("%s %s %s: %s"):format(da, op, db, m) end
            if not ok then assert.truthy(tostring(r):find(op, 1, true), r) end
          end
        end
        assert.equal("", table.concat(bad, "; "))
      end)
    end

    for _, op in ipairs{"add", "mul", "div", "lt"} do
      it("array " .. op .. " Lua scalar (weak), on either side", function()
        local bad = {}
        for _, d in ipairs(P.dtypes) do
          for name, s in pairs(scalars) do
            local want = P.weak[op][d][name]
            for side = 1, 2 do
              local x = arr(d, dev)
              local ok, r
              if side == 1 then ok, r = pcall(binop[op], x, s) else ok, r = pcall(binop[op], s, x) end
              local m = mismatch(op, P.weak_type[d][name], dev, want, ok and r.dtype or "error", r)
              if m then bad[#bad + 1] = ("%s %s %s (side %d): %s"):format(d, op, tostring(s), side, m) end
            end
          end
        end
        assert.equal("", table.concat(bad, "; "))
      end)
    end

    it("the weak-scalar cases by value", function()
      local i32 = gpu.array({1, -2, 3}, {dtype = "int32", device = dev})
      local r = i32 + 5
      assert.equal("int32", r.dtype); assert.same({6, 3, 8}, r:totable())
      r = i32 + 2.5
      assert.equal("float64", r.dtype); assert.same({3.5, 0.5, 5.5}, r:totable())
      r = 2.5 * i32
      assert.equal("float64", r.dtype); assert.same({2.5, -5.0, 7.5}, r:totable())
      local f32 = gpu.array({1, 2}, {device = dev})
      r = f32 * 2.5
      assert.equal("float32", r.dtype); assert.same({2.5, 5.0}, r:totable())
      r = f32 * (1 << 40)
      assert.equal("float32", r.dtype)
      local b = gpu.array({true, false}, {device = dev})
      r = b + 1
      assert.equal("int64", r.dtype); assert.same({2, 1}, r:totable())
      r = b * 1.5
      assert.equal("float64", r.dtype); assert.same({1.5, 0.0}, r:totable())
      r = b + true
      assert.equal("bool", r.dtype); assert.same({true, true}, r:totable())
      local u8 = gpu.array({250, 3}, {dtype = "uint8", device = dev})
      r = u8 + 10
      assert.equal("uint8", r.dtype); assert.same({4, 13}, r:totable())      -- wraps, as NumPy
      r = u8 + 255
      assert.equal("uint8", r.dtype)
      local i64 = gpu.array({1}, {dtype = "int64", device = dev})
      assert.equal("int64", (i64 + math.maxinteger).dtype)
      assert.equal("float64", (i64 + 0.5).dtype)
    end)

    it("out-of-range Lua integers are errors naming the value and dtype (NumPy's OverflowError)", function()
      local u8 = gpu.array({1, 2}, {dtype = "uint8", device = dev})
      fails(function() return u8 + 300 end, "add", "300", "uint8")
      fails(function() return 300 + u8 end, "add", "300", "uint8")
      fails(function() return u8 - (-1) end, "sub", "-1", "uint8")
      fails(function() return u8 * 256 end, "mul", "256", "uint8")
      local i32 = gpu.array({1}, {dtype = "int32", device = dev})
      fails(function() return i32 + (1 << 31) end, "add", "int32")
      fails(function() return i32 + (-(1 << 31) - 1) end, "add", "int32")
      assert.same({1 - (1 << 31)}, (i32 + (-(1 << 31) + 0)):totable())
      assert.same({1, 2}, u8:totable())
    end)

    it("comparisons with out-of-range Lua integers are exact, as in NumPy 2", function()
      local u8 = gpu.array({0, 200, 255}, {dtype = "uint8", device = dev})
      assert.same({true, true, true}, u8:lt(300):totable())
      assert.same({false, false, false}, u8:eq(300):totable())
      assert.same({true, true, true}, u8:ne(-1):totable())
      assert.same({true, true, true}, u8:gt(-1):totable())
      assert.same({false, false, false}, u8:le(-1):totable())
      assert.same({true, true, true}, gpu.ge(u8, -5):totable())
      local i32 = gpu.array({-5, 7}, {dtype = "int32", device = dev})
      assert.same({true, true}, i32:lt(1 << 40):totable())
      assert.same({false, false}, i32:eq(-(1 << 40)):totable())
      assert.same({true, true}, i32:gt(math.mininteger):totable())
      assert.equal("bool", u8:lt(300).dtype)
    end)

    it("promoted values do not wrap or round in the narrower dtype", function()
      local u8 = gpu.array({200, 255}, {dtype = "uint8", device = dev})
      local i32 = gpu.array({100, 1}, {dtype = "int32", device = dev})
      local r = u8 + i32
      assert.equal("int32", r.dtype); assert.same({300, 256}, r:totable())
      local big = gpu.array({16777217, 3}, {dtype = "int32", device = dev})
      local f32 = gpu.array({0, 0.5}, {device = dev})
      r = big + f32
      assert.equal("float64", r.dtype); assert.same({16777217.0, 3.5}, r:totable())
      local f16 = gpu.array({2049, 1}, {dtype = "float16", device = dev})     -- 2049 rounds to 2048
      local bf = gpu.array({1, 3}, {dtype = "bfloat16", device = dev})
      r = f16 + bf
      assert.equal("float32", r.dtype); assert.same({2049.0, 4.0}, r:totable())
      local i64 = gpu.array({(1 << 53) + 1}, {dtype = "int64", device = dev})
      r = i64 * gpu.array({1}, {dtype = "float16", device = dev})
      assert.equal("float64", r.dtype)
      assert.same({false}, i64:eq((1 << 53) + 0):totable())                  -- int64 compare exact
      assert.same({true}, i64:eq(gpu.array({(1 << 53) + 1}, {dtype = "int64", device = dev})):totable())
    end)

    it("/ on integers and bools gives float64", function()
      local a = gpu.array({7, -7, 1}, {dtype = "int32", device = dev})
      local b = gpu.array({2, 2, 3}, {dtype = "int64", device = dev})
      local r = a / b
      assert.equal("float64", r.dtype)
      h.assert_close(r, {3.5, -3.5, 1 / 3}, 1e-15)
      r = a / 2
      assert.equal("float64", r.dtype); assert.same({3.5, -3.5, 0.5}, r:totable())
      r = 1 / gpu.array({4, 8}, {dtype = "uint8", device = dev})
      assert.equal("float64", r.dtype); assert.same({0.25, 0.125}, r:totable())
      r = gpu.array({true, false}, {device = dev}) / gpu.array({true, true}, {device = dev})
      assert.equal("float64", r.dtype); assert.same({1.0, 0.0}, r:totable())
      r = gpu.array({3}, {dtype = "float16", device = dev}) / 2
      assert.equal("float16", r.dtype); assert.same({1.5}, r:totable())
    end)
  end)
end
