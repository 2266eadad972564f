-- spec/conv_fft_spec.lua — gpu.convolve / gpu.correlate and nn.functional.conv1d with
-- method = "direct" | "fft" | "auto" (scipy.signal.convolve's), against NumPy
-- (spec/fixtures/conv_fft/*.lua, tools/gen_conv_fft_fixtures.py): real, complex, mixed and
-- integer operands in every mode; the methods against each other on long inputs; "auto"'s
-- choices; gradients through the transforms; the misuses.
local h = require "spec.helper"
local gpu = h.gpu
local ag = require "gpu.autograd"
local F = gpu.nn.functional
local CASES = require "spec.fixtures.conv_fft.convolve"
local CONV1D = require "spec.fixtures.conv_fft.conv1d"
local stats = require "gpu.routines.stats"

local METHODS = { "direct", "fft", "auto" }
local MODES = { "full", "same", "valid" }

-- a fixture array on dev: {shape, data} in dtype, or {complex = true, pairs} as complex128
local function load(t, dtype, dev)
  if t.complex then return gpu.view_as_complex(load(t.pairs, "float64", dev)) end
  return gpu.array(t.data, { dtype = dtype, device = dev }):reshape(t.shape)
end

-- the real numbers of an array (a complex one's pairs), on the cpu, to compare
local function reals(x)
  if gpu._dtypes[x.dtype].kind == "complex" then x = gpu.view_as_real(x) end
  return x:cpu()
end
local function expected(t) return t.complex and load(t.pairs, "float64", "cpu") or load(t, "float64", "cpu") end

local dtype_of = { float64 = { "float64", "float64" }, float32 = { "float32", "float32" }, int64 = { "int64", "int64" },
                   complex128 = { "complex128", "complex128" }, mixed = { "float64", "complex128" } }
local tol_of = { float64 = 1e-9, complex128 = 1e-9, mixed = 1e-9, float32 = 2e-4, int64 = 0 }
local out_dtype = { float64 = "float64", float32 = "float32", int64 = "float64", complex128 = "complex128",
                    mixed = "complex128" }

for _, dev in ipairs(h.devices()) do
  describe("convolve and correlate on " .. dev .. " against NumPy", function()
    for _, method in ipairs(METHODS) do
      it("method " .. method .. ": every kind, length and mode", function()
        for _, c in ipairs(CASES) do
          local dt = dtype_of[c.kind]
          local a, v = load(c.a, dt[1], dev), load(c.v, dt[2], dev)
          for _, fn in ipairs { "convolve", "correlate" } do
            for _, mode in ipairs(MODES) do
              local got = gpu[fn](a, v, mode, { method = method })
              local what = ("%s %s %s (%d, %d) %s"):format(fn, c.kind, mode, a.size, v.size, method)
              assert.equal(out_dtype[c.kind], got.dtype, what)
              local ok, msg = h.close(reals(got), expected(c[fn][mode]), tol_of[c.kind])
              assert(ok, what .. ": " .. tostring(msg))
            end
          end
        end
      end)
    end

    it("takes the options table third (the mode defaulted)", function()
      local a, v = gpu.arange(1, 6, { dtype = "float64", device = dev }), gpu.array({ 1, -1 }, { dtype = "float64", device = dev })
      h.assert_close(gpu.convolve(a, v, { method = "fft" }):cpu(), gpu.convolve(a, v):cpu(), 1e-12)
      h.assert_close(gpu.correlate(a, v, { method = "fft" }):cpu(), gpu.correlate(a, v, "valid"):cpu(), 1e-12)
    end)

    it("gives the same results by both methods on long operands (float64, float32, complex128)", function()
      local g = gpu.random.Generator(11)
      for _, dt in ipairs { "float64", "float32", "complex128" } do
        local function r(n)
          if dt == "complex128" then return gpu.view_as_complex(g:normal(0, 1, { n, 2 }, { dtype = "float64", device = dev })) end
          return g:normal(0, 1, { n }, { dtype = dt, device = dev })
        end
        local a, v = r(6007), r(701)
        for _, fn in ipairs { "convolve", "correlate" } do
          for _, mode in ipairs(MODES) do
            local d = gpu[fn](a, v, mode, { method = "direct" })
            local f = gpu[fn](v, a, mode, { method = "fft" })
            local d2 = gpu[fn](v, a, mode, { method = "direct" })
            local f2 = gpu[fn](a, v, mode, { method = "fft" })
            -- sums of 701 products of N(0, 1) numbers: errors relative to about sqrt(701)
            local tol = dt == "float32" and 2e-3 or 1e-9
            h.assert_close(reals(f2), reals(d), tol)
            h.assert_close(reals(f), reals(d2), tol)
          end
        end
      end
    end)

    it("keeps integer results exact through the transforms (rounded back, as SciPy's)", function()
      local a = gpu.arange(-500, 500, { dtype = "int64", device = dev }) * 3
      local v = gpu.arange(0, 300, { dtype = "int64", device = dev }) % 17 - 8
      for _, fn in ipairs { "convolve", "correlate" } do
        local d = gpu[fn](a, v, "full")
        local f = gpu[fn](a, v, "full", { method = "fft" })
        assert.equal("float64", f.dtype)
        assert(gpu.array_equal(d, f), fn)
      end
    end)
  end)
end

describe("convolve's method 'auto'", function()
  it("chooses by its cost model: short kernels direct, long ones and huge windows the transforms", function()
    local want = { { 10, 3, "direct" }, { 100, 30, "direct" }, { 1000, 10, "direct" }, { 100000, 3, "direct" },
                   { 1000, 30, "fft" }, { 30, 1000, "fft" }, { 300, 300, "fft" }, { 3000, 30, "fft" },
                   { 1 << 24, 4, "fft" } }                    -- 2^26 windowed elements: memory
    for _, c in ipairs(want) do
      assert.equal(c[3], stats.auto_method(c[1], c[2]), ("(%d, %d)"):format(c[1], c[2]))
    end
  end)

  it("keeps the direct method for integers whose sums of products could pass 2^52 (SciPy's guard)", function()
    -- (10000, 1000) is the transforms' by cost; they would round these sums
    local a, v = gpu.full(10000, 2 ^ 26, { dtype = "int64" }), gpu.full(1000, 2 ^ 26, { dtype = "int64" })
    local got = gpu.convolve(a, v, "full", { method = "auto" })
    assert.equal("fft", stats.auto_method(10000, 1000))
    assert.equal(2 ^ 52, got[1])
    assert.equal(1000 * 2 ^ 52, got[1000])
    assert(gpu.array_equal(got, gpu.convolve(a, v, "full", { method = "direct" })))
  end)
end)

-- ---- nn.functional.conv1d ------------------------------------------------------------------------

for _, dev in ipairs(h.devices()) do
  describe("nn.functional.conv1d on " .. dev .. " with method direct, fft, auto", function()
    for _, method in ipairs(METHODS) do
      it(method .. " against a NumPy reference (stride, padding, dilation, groups, unbatched)", function()
        for i, c in ipairs(CONV1D) do
          local x, w = load(c.x, "float64", dev), load(c.w, "float64", dev)
          local b = c.b and load(c.b, "float64", dev) or nil
          local y = F.conv1d(x, w, b, { stride = c.stride, padding = c.padding, dilation = c.dilation,
                                        groups = c.groups, method = method })
          local ok, msg = h.close(y:cpu(), expected(c.out), 1e-9)
          assert(ok, ("case %d (%s): %s"):format(i, method, tostring(msg)))
        end
      end)
    end

    it("fft equals direct in float32 and float16 within their precision", function()
      local g = gpu.random.Generator(5)
      for dt, tol in pairs { float32 = 1e-3, float16 = 5e-2 } do
        local x = g:normal(0, 1, { 2, 4, 500 }, { dtype = dt, device = dev })
        local w = g:normal(0, 0.1, { 4, 2, 41 }, { dtype = dt, device = dev })
        local b = g:normal(0, 1, { 4 }, { dtype = dt, device = dev })
        local o = { padding = 20, dilation = 2, stride = 3, groups = 2 }
        local d = F.conv1d(x, w, b, o)
        o.method = "fft"
        local f = F.conv1d(x, w, b, o)
        assert.equal(dt, f.dtype)
        h.assert_close(f:astype("float32"):cpu(), d:astype("float32"):cpu(), tol)
      end
    end)

    it("backpropagates through the transforms (float64 gradcheck of x, w and b)", function()
      local g = gpu.random.Generator(6)
      local x = g:normal(0, 1, { 2, 4, 12 }, { dtype = "float64", device = dev })
      local w = g:normal(0, 1, { 2, 2, 3 }, { dtype = "float64", device = dev })
      local b = g:normal(0, 1, { 2 }, { dtype = "float64", device = dev })
      local ok, msg = ag.gradcheck(function(xx, ww, bb)
        return F.conv1d(xx, ww, bb, { padding = 2, stride = 2, dilation = 2, groups = 2, method = "fft" })
      end, { x, w, b })
      assert(ok, msg)
    end)
  end)
end

describe("gradients through convolve's transforms", function()
  it("gradcheck of convolve and correlate with method fft (float64)", function()
    local g = gpu.random.Generator(8)
    for _, mode in ipairs(MODES) do
      local a, v = g:normal(0, 1, { 7 }, { dtype = "float64" }), g:normal(0, 1, { 4 }, { dtype = "float64" })
      assert(ag.gradcheck(function(x, y) return gpu.convolve(x, y, mode, { method = "fft" }) end, { a, v }))
      assert(ag.gradcheck(function(x, y) return gpu.correlate(y, x, mode, { method = "fft" }) end, { a, v }))
    end
  end)
end)

describe("conv methods: misuses", function()
  local x = gpu.ones(5)
  it("names the option and the choices", function()
    h.fails({ "convolve", "option 'method' must be one of direct, fft, auto, got 'ff'", "did you mean 'fft'" },
      gpu.convolve, x, x, "full", { method = "ff" })
    h.fails({ "bad argument #3 to 'correlate'", "method" }, gpu.correlate, x, x, { method = 1 })
    h.fails({ "convolve", "no argument expected after the options table" }, gpu.convolve, x, x, { method = "fft" }, {})
    h.fails({ "nn.conv1d", "option 'method' must be one of direct, fft, auto" }, F.conv1d, gpu.ones(1, 1, 4),
      gpu.ones(1, 1, 2), nil, { method = "fast" })
  end)
  it("refuses the transforms for integer conv1d operands, and mismatched dtypes", function()
    h.fails({ "nn.conv1d", "method 'fft' takes a floating-point input and weight of one dtype, got int64 and int64" },
      F.conv1d, gpu.ones(1, 1, 4, { dtype = "int64" }), gpu.ones(1, 1, 2, { dtype = "int64" }), nil, { method = "fft" })
    h.fails({ "nn.conv1d", "got float32 and float64" }, F.conv1d, gpu.ones(1, 1, 4),
      gpu.ones(1, 1, 2, { dtype = "float64" }), nil, { method = "fft" })
    h.fails({ "nn.conv1d", "shorter than the kernel" }, F.conv1d, gpu.ones(1, 1, 4), gpu.ones(1, 1, 3), nil,
      { method = "fft", dilation = 2 })
  end)
end)
