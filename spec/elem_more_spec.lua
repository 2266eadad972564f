-- spec/elem_more_spec.lua — NumPy's further elementwise names: the kernel rows (exp2 cbrt rint
-- sinc degrees radians frac signbit isposinf isneginf; logaddexp2 fmod fmax fmin copysign
-- nextafter heaviside gcd lcm) over wider values than elementwise_spec.lua's per-dtype
-- samples, and gpu.routines.math (ldexp frexp modf divmod float_power unwrap), against
-- NumPy (spec/fixtures/routines/elem_more.lua, tools/gen_elem_more_fixtures.py), on every
-- device; their misuse, aliases, methods, in-place forms and gradients.
local h = require "spec.helper"
local gpu = h.gpu
local ag = require "gpu.autograd"
local F = require "spec.fixtures.routines.elem_more"

local huge = math.huge

-- an argument of a case on device dev: {dtype, a = {shape, data}} as an array, else itself
local function arg_of(v, dev)
  if type(v) == "table" and v.dtype then
    local x = gpu.array(v.a.data, { dtype = v.dtype == "uint8" and "int64" or v.dtype, device = dev })
    if v.dtype == "uint8" then x = x:astype("uint8") end
    return x:reshape(v.a.shape)
  end
  return v
end

local TOL = { float64 = 1e-14, float32 = 2e-6, float16 = 1e-3 }

-- nil when got (a gpu array) is want ({dtype, a}) within its dtype's rounding: NaN for NaN,
-- infinities and the sign of zeros exactly, else relative to the larger magnitude
local function differs(got, want)
  if got.dtype ~= want.dtype then return ("dtype %s, want %s"):format(got.dtype, want.dtype) end
  local gs, ws = table.concat(got.shape, ","), table.concat(want.a.shape, ",")
  if gs ~= ws then return ("shape (%s), want (%s)"):format(gs, ws) end
  local g = got:astype(got.dtype == "bool" and "bool" or gpu._dtypes[got.dtype].kind == "float" and "float64" or "int64")
  g = g:reshape(-1):totable()
  local tol = TOL[got.dtype]
  for i, w in ipairs(want.a.data) do
    local v = g[i]
    local ok
    if tol == nil then
      ok = v == w
    elseif w ~= w then
      ok = v ~= v
    elseif w == huge or w == -huge or w == 0 then
      ok = v == w and (w ~= 0 or 1 / v == 1 / w)
    else
      ok = math.abs(v - w) <= tol * math.abs(w)
    end
    if not ok then return ("element %d: got %s, want %s"):format(i, tostring(v), tostring(w)) end
  end
end

for _, dev in ipairs(h.devices()) do
  describe("NumPy's further elementwise names on " .. dev .. " against NumPy", function()
    for i, c in ipairs(F) do
      it(("%d: %s"):format(i, c.fn), function()
        local args, n = {}, 0
        for k, v in pairs(c.args) do args[k] = arg_of(v, dev); n = math.max(n, k) end
        local res = table.pack(gpu[c.fn](table.unpack(args, 1, n)))
        assert.equal(#c.out, res.n, c.fn .. ": the number of results")
        for j, want in ipairs(c.out) do
          assert.equal(dev, res[j].device, c.fn)
          local d = differs(res[j], want)
          assert(d == nil, ("%s (case %d) result %d: %s"):format(c.fn, i, j, tostring(d)))
        end
      end)
    end

    it("the methods, the in-place forms and the aliases", function()
      local x = gpu.array({ -1.5, 0.25, 3 }, { dtype = "float64", device = dev })
      h.assert_close(x:exp2(), gpu.exp2(x), 0)
      h.assert_close(x:float_power(2), gpu.array({ 2.25, 0.0625, 9 }, { dtype = "float64" }), 0)
      h.assert_close(x:ldexp(2), x * 4, 0)
      local m, e = x:frexp()
      h.assert_close(gpu.ldexp(m, e), x, 0)
      h.assert_close(gpu.deg2rad(x), gpu.radians(x), 0)
      h.assert_close(gpu.rad2deg(x), gpu.degrees(x), 0)
      h.assert_close(x:rad2deg():deg2rad(), x, 1e-15)
      for _, pair in ipairs { { "arcsinh", "asinh" }, { "arccosh", "acosh" }, { "arctanh", "atanh" } } do
        assert.equal(gpu[pair[2]], gpu[pair[1]], pair[1])
      end
      local y = x:copy()
      y:fmod_(1)
      h.assert_close(y, gpu.fmod(x, 1), 0)
      y = x:copy()
      y:frac_()
      h.assert_close(y, x:frac(), 0)
      assert.same({ false, true, true }, gpu.array({ -1, 0, 7 }, { dtype = "int32", device = dev }):signbit():logical_not():totable())
      -- fmax/fmin of bools: or/and, as NumPy's
      local b1 = gpu.array({ true, true, false, false }, { device = dev })
      local b2 = gpu.array({ true, false, true, false }, { device = dev })
      assert.same({ true, true, true, false }, gpu.fmax(b1, b2):totable())
      assert.same({ true, false, false, false }, gpu.fmin(b1, b2):totable())
      -- the sign bit of a NaN is read as it is (NumPy's and PyTorch's)
      local nan = 0 / 0
      local nn = gpu.array({ nan, -nan }, { dtype = "float64", device = dev })
      local s = nn:signbit():totable()
      assert.are_not.equal(s[1], s[2])
    end)

    it("frexp and ldexp round-trip every float32 exponent, subnormals included", function()
      local v = {}
      for k = -149, 127 do v[#v + 1] = 1.375 * 2.0 ^ k end
      local x = gpu.array(v, { dtype = "float32", device = dev })
      local m, e = gpu.frexp(x)
      assert.equal("int32", e.dtype)
      h.assert_close(gpu.ldexp(m, e), x, 0)
      local a = m:abs()
      assert.truthy(a:ge(0.5):all():item() and a:lt(1):all():item())
    end)

    it("gradients in float64 (ldexp, frexp's mantissa, modf, float_power, unwrap, divmod)", function()
      local g = gpu.random.Generator(7)
      local x = g:uniform(0.3, 2.5, { 2, 3 }, { dtype = "float64", device = dev })
      local e = gpu.array({ 1, -2, 3 }, { dtype = "int32", device = dev })
      for name, fn in pairs {
        ldexp = function(t) return gpu.ldexp(t, e) end,
        frexp = function(t) return (gpu.frexp(t * 0.9)) end,
        modf = function(t) local f, i = gpu.modf(t * 1.3); return f + i * 0.5 end,
        float_power = function(t) return gpu.float_power(t, 2.5) + gpu.float_power(1.7, t) end,
        unwrap = function(t) return gpu.unwrap(t * 3, nil, 1) end,
        divmod = function(t) local q, r = gpu.divmod(t * 3, 0.7); return r + q end,
      } do
        local ok, msg = ag.gradcheck(fn, { x })
        assert(ok, name .. ": " .. tostring(msg))
      end
    end)
  end)
end

describe("misuse of NumPy's further elementwise names", function()
  local f32 = gpu.ones(3)
  local i64 = gpu.array({ 1, 2, 3 }, { dtype = "int64" })
  local c64 = gpu.ones(3, { dtype = "complex64" })

  it("the kernel rows refuse the dtypes NumPy and PyTorch refuse", function()
    h.fails({ "gcd", "integer", "float32" }, gpu.gcd, f32, f32)
    h.fails({ "lcm", "integer", "float64" }, gpu.lcm, i64, f32)      -- int64 and float32 promote to float64
    h.fails({ "gcd", "bool" }, gpu.gcd, gpu.array({ true }), gpu.array({ false }))
    h.fails({ "frac", "float", "int64" }, gpu.frac, i64)
    h.fails({ "nextafter", "float16" }, gpu.nextafter, gpu.ones(2, { dtype = "float16" }), 2)
    h.fails({ "nextafter", "int8" }, gpu.nextafter, gpu.ones(2, { dtype = "int8" }), gpu.ones(2, { dtype = "int8" }))
    h.fails({ "nextafter", "bfloat16" }, gpu.nextafter, gpu.ones(2, { dtype = "bfloat16" }), gpu.ones(2, { dtype = "bfloat16" }))
    h.fails({ "fmod", "bool" }, gpu.fmod, gpu.array({ true }), gpu.array({ true }))
    for _, name in ipairs { "exp2", "cbrt", "rint", "sinc", "degrees", "radians", "frac", "signbit", "isposinf", "isneginf" } do
      if name ~= "exp2" and name ~= "rint" then h.fails({ name, "complex64" }, gpu[name], c64) end
      h.fails({ "gpu.array expected", "string" }, gpu[name], "x")    -- (named as the op or its alias)
    end
    for _, name in ipairs { "logaddexp2", "fmod", "fmax", "fmin", "copysign", "nextafter", "heaviside" } do
      h.fails({ name, "complex64" }, gpu[name], c64, c64)
      h.fails({ name, "shape" }, gpu[name], gpu.ones(2), gpu.ones(3))
      h.fails({ name }, gpu[name], f32, "x")
    end
  end)

  it("an in-place form that fails leaves its array as it was", function()
    local x = gpu.array({ 1, 2, 3 }, { dtype = "int64" })
    h.fails({ "frac" }, x.frac_, x)
    h.fails({ "gcd" }, x.gcd_, x, gpu.ones(3))
    assert.same({ 1, 2, 3 }, x:totable())
    local y = gpu.array({ 1.5, 2.5 }, { dtype = "float64" })
    h.fails({ "fmod" }, y.fmod_, y, gpu.ones(3))
    assert.same({ 1.5, 2.5 }, y:totable())
  end)

  it("the routines name themselves and the fault", function()
    h.fails({ "ldexp", "#2", "integer", "1.5" }, gpu.ldexp, f32, 1.5)
    h.fails({ "ldexp", "#2", "integer array", "float32" }, gpu.ldexp, f32, f32)
    h.fails({ "ldexp", "#1", "gpu.array" }, gpu.ldexp, 2, i64)
    h.fails({ "ldexp", "#1", "real", "complex64" }, gpu.ldexp, c64, 1)
    h.fails({ "ldexp" }, gpu.ldexp, f32, gpu.array({ 1, 2 }, { dtype = "int32" }))
    h.fails({ "ldexp", "at most 2" }, gpu.ldexp, f32, 1, 2)
    h.fails({ "frexp", "#1", "gpu.array", "'x'" }, gpu.frexp, "x")
    h.fails({ "frexp", "real", "complex64" }, gpu.frexp, c64)
    h.fails({ "frexp", "at most 1" }, gpu.frexp, f32, 1)
    h.fails({ "modf", "#1", "gpu.array" }, gpu.modf, 1.5)
    h.fails({ "modf", "real" }, gpu.modf, c64)
    h.fails({ "divmod", "gpu.array", "integer 7" }, gpu.divmod, 7, 2)
    h.fails({ "divmod", "bool" }, gpu.divmod, gpu.array({ true }), gpu.array({ true }))
    h.fails({ "divmod", "shape" }, gpu.divmod, gpu.ones(2), gpu.ones(3))
    h.fails({ "float_power", "two numbers" }, gpu.float_power, 2, 3)
    h.fails({ "float_power", "#2", "gpu.array", "'x'" }, gpu.float_power, f32, "x")
    h.fails({ "unwrap", "#3", "out of range" }, gpu.unwrap, f32, nil, 2)
    h.fails({ "unwrap", "#3", "integer" }, gpu.unwrap, f32, nil, 1.5)
    h.fails({ "unwrap", "#2", "discont", "number" }, gpu.unwrap, f32, "x")
    h.fails({ "unwrap", "period", "positive" }, gpu.unwrap, f32, nil, 1, { period = 0 })
    h.fails({ "unwrap", "periods" }, gpu.unwrap, f32, nil, 1, { periods = 1 })
    h.fails({ "unwrap", "at least 1 axis" }, gpu.unwrap, gpu.array(1.5))
    h.fails({ "unwrap", "real" }, gpu.unwrap, c64)
  end)
end)
