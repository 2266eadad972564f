-- spec/fft_spec.lua — gpu.fft against numpy.fft (spec/fixtures/fft/*.lua, made by
-- tools/gen_fft_fixtures.py): every function, every norm, odd, even and prime lengths, n and
-- s padding and cropping, axes, batches, empty and size-1 axes, non-contiguous inputs
-- (transposed, strided, reversed, broadcast, permuted), the dtypes NumPy 2 gives; then the
-- frequencies and shifts, the errors, the gradients (float64, against central differences)
-- and, where a GPU answers, cuda against the cpu.
local h = require "spec.helper"
local gpu = h.gpu
local F = gpu.fft
local ag = require "gpu.autograd"

local FIX = "spec/fixtures/fft/"
local ONE_AXIS = { fft = true, ifft = true, rfft = true, irfft = true, hfft = true, ihfft = true }

-- a fixture array (shape, dtype, re [, im]) on dev
local function array_of(a, dev)
  local shape = a.shape
  local function part(t)
    if #t == 0 then return gpu.zeros(shape, { dtype = "float64", device = dev }) end
    return gpu.array(t, { dtype = "float64", device = dev }):reshape(shape)
  end
  if a.im == nil then return part(a.re):astype(a.dtype) end
  return gpu.view_as_complex(gpu.stack({ part(a.re), part(a.im) }, -1):contiguous()):astype(a.dtype)
end

-- x seen through a fixture's view
local function viewed(x, v)
  if v == nil then return x end
  if v[1] == "T" then return x.T end
  if v[1] == "expand" then return x:expand(v[2]) end
  if v[1] == "permute" then return x:permute(v[2]) end
  local key = {}
  for i = 1, x.ndim do key[i] = ":" end
  key[v[2]] = { v[3], v[4], v[5] }
  return x[key]
end

-- y's values as float64 reals, the real and imaginary parts on a last axis for complex
local function reals(y)
  if y.dtype:match("^complex") then return gpu.view_as_real(y:astype("complex128")) end
  return y:astype("float64")
end
local function expected(a)
  local y = array_of(a, "cpu")
  return a.im and gpu.view_as_real(y:astype("complex128")) or y:astype("float64")
end

local function call(c, x)
  local opts = c.norm and { norm = c.norm } or nil
  if ONE_AXIS[c.fn] then return F[c.fn](x, c.n, c.axis, opts) end
  return F[c.fn](x, c.s, c.axes, opts)
end

local function describe_case(c)
  local t = { c.fn, c.x.dtype, "(" .. table.concat(c.x.shape, ",") .. ")" }
  if c.view then t[#t + 1] = "view " .. c.view[1] end
  if c.n then t[#t + 1] = "n=" .. c.n end
  if c.axis then t[#t + 1] = "axis=" .. c.axis end
  if c.s then t[#t + 1] = "s={" .. table.concat(c.s, ",") .. "}" end
  if c.axes then t[#t + 1] = "axes={" .. table.concat(c.axes, ",") .. "}" end
  if c.norm then t[#t + 1] = "norm=" .. c.norm end
  return table.concat(t, " ")
end

local FILES = { "c2c", "r2c", "hfft", "fftn", "rfftn", "views", "dtypes" }

for _, dev in ipairs(h.devices()) do
  describe("gpu.fft on " .. dev .. " against NumPy", function()
    for _, file in ipairs(FILES) do
      it(file, function()
        for i, c in ipairs(dofile(FIX .. file .. ".lua")) do
          local x = viewed(array_of(c.x, dev), c.view)
          local ok, y = pcall(call, c, x)
          local what = ("%s case %d: %s"):format(file, i, describe_case(c))
          assert(ok, what .. ": " .. tostring(y))
          assert.equal(c.y.dtype, y.dtype, what)
          assert.equal(dev, y.device, what)
          local ok2, msg = h.close(reals(y):to("cpu"), expected(c.y), c.tol)
          assert(ok2, what .. ": " .. tostring(msg))
        end
      end)
    end

    it("leaves its input as it was (c2r transforms a copy; views keep their strides)", function()
      local x = array_of({ shape = { 3, 5 }, dtype = "complex128",
                           re = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 },
                           im = { 1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 8 } }, dev)
      local before = gpu.view_as_real(x):copy()
      F.irfftn(x)
      F.irfft(x.T, 6)
      F.fft2(x.T)
      h.assert_close(gpu.view_as_real(x), before, 0)
    end)

    it("round trips: ifft(fft(x)), irfft(rfft(x), n), irfftn(rfftn(x), s) for every norm", function()
      local G = gpu.random.Generator(3)
      for _, dt in ipairs { "float32", "float64" } do
        local tol = dt == "float32" and 1e-5 or 1e-12
        for _, n in ipairs { 1, 2, 7, 16, 97 } do
          local x = G:uniform(-1, 1, { 3, n }, { dtype = dt, device = dev })
          for _, norm in ipairs { "backward", "ortho", "forward" } do
            local o = { norm = norm }
            local back = F.ifft(F.fft(x, nil, nil, o), nil, nil, o)
            h.assert_close(reals(back), gpu.view_as_real(x:astype("complex128")), tol)
            h.assert_close(F.irfft(F.rfft(x, nil, nil, o), n, nil, o), x, tol)
          end
        end
        local x = G:uniform(-1, 1, { 2, 5, 6 }, { dtype = dt, device = dev })
        h.assert_close(F.irfftn(F.rfftn(x, nil, { 2, 3 }), { 5, 6 }, { 2, 3 }), x, tol * 10)
      end
    end)

    it("a prime length past FFTW's codelets (Rader / Bluestein) and a long one", function()
      local G = gpu.random.Generator(9)
      for _, n in ipairs { 1009, 4099, 65536 } do
        local x = G:uniform(-1, 1, { n }, { dtype = "float64", device = dev })
        local X = F.rfft(x)
        -- Parseval: sum x^2 = (X0^2 + 2 sum |Xk|^2 (+ Nyquist)) / n
        local a2 = gpu.view_as_real(X):square():sum(-1)
        local w = gpu.full({ X.shape[1] }, 2, { dtype = "float64", device = dev })
        w[1] = 1
        if n % 2 == 0 then w[X.shape[1]] = 1 end
        local lhs, rhs = (x * x):sum():item(), (a2 * w):sum():item() / n
        assert(math.abs(lhs - rhs) <= 1e-9 * lhs, ("n = %d: %g vs %g"):format(n, lhs, rhs))
        h.assert_close(F.irfft(X, n), x, 1e-12)
      end
    end)
  end)
end

describe("gpu.fft frequencies and shifts against NumPy", function()
  local fix = dofile(FIX .. "helpers.lua")
  it("fftfreq and rfftfreq (float64 by default, dtype and device options)", function()
    for fn, cases in pairs(fix.freq) do
      for _, c in ipairs(cases) do
        local y = F[fn](c.n, c.d)
        assert.equal("float64", y.dtype)
        h.assert_close(y, array_of(c.y, "cpu"), 1e-15)
      end
    end
    local y = F.fftfreq(4, { dtype = "float32" })
    assert.equal("float32", y.dtype)
    h.assert_close(y, { 0, 0.25, -0.5, -0.25 }, 0)
    h.assert_close(F.rfftfreq(5, 0.5, { device = "cpu" }), { 0, 0.4, 0.8 }, 1e-15)
  end)

  it("fftshift and ifftshift over every axis, one, several, negative", function()
    for _, dev in ipairs(h.devices()) do
      local x = array_of(fix.shift_x, dev)
      for fn, cases in pairs(fix.shift) do
        for _, c in ipairs(cases) do
          local y = F[fn](x, c.axes)
          h.assert_close(y:to("cpu"), array_of(c.y, "cpu"), 0)
          h.assert_close(F[fn == "fftshift" and "ifftshift" or "fftshift"](y, c.axes), x, 0)
        end
      end
    end
  end)
end)

describe("gpu.fft errors", function()
  local x = gpu.ones(4, 6)
  it("names the function and the fault", function()
    h.fails({ "gpu.fft.fft", "gpu.array expected, got" }, F.fft, { 1, 2 })
    h.fails({ "gpu.fft.fft", "invalid number of data points (0)" }, F.fft, x, 0)
    h.fails({ "gpu.fft.rfft", "invalid number of data points (-3)" }, F.rfft, x, -3)
    h.fails({ "gpu.fft.ifft", "n must be an integer" }, F.ifft, x, 2.5)
    h.fails({ "gpu.fft.fft", "axis 3 is out of bounds for a 2-dimensional array" }, F.fft, x, nil, 3)
    h.fails({ "gpu.fft.fft", "axis -3 is out of bounds" }, F.fft, x, nil, -3)
    h.fails({ "gpu.fft.fft", "axis 0 is out of bounds" }, F.fft, x, nil, 0)
    h.fails({ "gpu.fft.fft", "axis -1 is out of bounds for a 0-dimensional array" }, F.fft, gpu.array(1))
    h.fails({ "gpu.fft.fft2", "axis -2 is out of bounds for a 1-dimensional array" }, F.fft2, gpu.ones(4))
    h.fails({ "gpu.fft.fftn", "axis 2 is repeated" }, F.fftn, x, nil, { 2, -1 })
    h.fails({ "gpu.fft.fftn", "s has 2 entries but there are 1 axes" }, F.fftn, x, { 2, 3 }, { 1 })
    h.fails({ "gpu.fft.rfftn", "s has 3 entries for a 2-dimensional array" }, F.rfftn, x, { 2, 3, 4 })
    h.fails({ "gpu.fft.ifftn", "invalid number of data points (0)" }, F.ifftn, x, { 0, 2 })
    h.fails({ "gpu.fft.fft", "invalid number of data points (0)" }, F.fft, gpu.ones(3, 0))
    h.fails({ "gpu.fft.irfft", "invalid number of data points (0)" }, F.irfft, gpu.ones(3, 1))
    h.fails({ "gpu.fft.fft", "norm", "backward" }, F.fft, x, { norm = "orthogonal" })
    h.fails({ "gpu.fft.fft", "unknown option 'nrom'" }, F.fft, x, { nrom = "ortho" })
    h.fails({ "gpu.fft.fft", "no argument expected after the options table" }, F.fft, x, { norm = "ortho" }, 1)
    h.fails({ "gpu.fft.rfft", "a real array expected, got complex64" }, F.rfft, F.fft(x))
    h.fails({ "gpu.fft.rfftn", "at least one axis is needed" }, F.rfftn, x, nil, {})
    h.fails({ "gpu.fft.fftn", "axes must be an integer or a table of integers" }, F.fftn, x, nil, "1")
    h.fails({ "gpu.fft.fftfreq", "invalid number of data points (0)" }, F.fftfreq, 0)
    h.fails({ "gpu.fft.fftfreq", "d must be a nonzero number" }, F.fftfreq, 4, 0)
    h.fails({ "gpu.fft.fftshift", "axis 3 is out of bounds" }, F.fftshift, x, 3)
    h.fails({ "gpu.fft.fft", "at most 4 arguments expected" }, F.fft, x, 4, 1, {}, 1)
  end)

  it("refuses an unsupported dtype and closed arrays, and the C ops check what they take", function()
    local c = gpu.ones(3)
    c:close()
    h.fails({ "gpu.fft.fft", "closed" }, F.fft, c)
    h.fails({ "c2c", "axes expected" }, gpu._fft.c2c, x, nil, false, 1)
    h.fails({ "c2r", "37 points take 19" }, gpu._fft.c2r, x, { 2 }, 37, 1)
    h.fails({ "c2c", "finite" }, gpu._fft.c2c, x, { 1 }, false, 0 / 0)
  end)

  it("fftn over no axes is the input as complex (NumPy gives it unchanged)", function()
    local y = F.fftn(x, nil, {})
    assert.equal("complex64", y.dtype)
    h.assert_close(reals(y), gpu.view_as_real(x:astype("complex128")), 0)
  end)
end)

-- The rules (lua/gpu/autograd/rules_fft.lua) are the adjoints of the transforms: for random
-- x and g, <g, T x> = <T^H g, x> in the real inner product of the real and imaginary parts.
describe("gpu.fft's autograd rules are the transforms' adjoints", function()
  local R = require "gpu.autograd.rules_fft"
  local C = gpu._fft
  local G = gpu.random.Generator(5)
  local vr = gpu.view_as_real
  local function re(...) return G:uniform(-1, 1, { ... }, { dtype = "float64" }) end
  local function cx(...)
    local shape = { ... }
    shape[#shape + 1] = 2
    return gpu.view_as_complex(G:uniform(-1, 1, shape, { dtype = "float64" }))
  end
  local function dot(a, b) return (a * b):sum():item() end
  local function node(...) return { ... } end
  local function same(a, b) assert(math.abs(a - b) <= 1e-12 * (1 + math.abs(a)), ("%.17g vs %.17g"):format(a, b)) end
  it("c2c, forward and inverse, over two of three axes", function()
    for _, inverse in ipairs { false, true } do
      local x, g, axes = cx(3, 5, 4), cx(3, 5, 4), { 1, 3 }
      local gx = R["fft.c2c"].backward(g, node(x, axes, inverse, 0.37))
      same(dot(vr(g), vr(C.c2c(x, axes, inverse, 0.37))), dot(vr(gx), vr(x)))
    end
  end)
  it("r2c (the real part of the rule's result), even and odd n", function()
    for _, n in ipairs { 6, 7 } do
      local x, axes = re(2, 3, n), { 2, 3 }
      local y = C.r2c(x, axes, 0.5)
      local g = cx(table.unpack(y.shape))
      local gx = R["fft.r2c"].backward(g, node(x, axes, 0.5))
      same(dot(vr(g), vr(y)), dot(vr(gx):take(gpu.array({ 1 }, { dtype = "int64" }), -1):squeeze(-1), x))
    end
  end)
  it("c2r, even and odd n", function()
    for _, n in ipairs { 6, 7 } do
      local m = n // 2 + 1
      local x, axes = cx(2, 3, m), { 1, 3 }
      local y = C.c2r(x, axes, n, 0.25)
      local g = re(table.unpack(y.shape))
      local gx = R["fft.c2r"].backward(g, node(x, axes, n, 0.25))
      same(dot(g, y), dot(vr(gx), vr(x)))
    end
  end)
end)

describe("gpu.fft gradients (float64, central differences)", function()
  local G = gpu.random.Generator(11)
  local function S(...) return G:uniform(-1, 1, { ... }, { dtype = "float64" }) end
  -- real losses of complex intermediates, each through one transform family
  local cases = {
    { "fft, ortho, padded", function(x) return gpu.view_as_real(F.fft(x, 7, nil, { norm = "ortho" })) end, S(2, 5) },
    { "ifft2 cropped", function(x) return gpu.view_as_real(F.ifft2(x, { 2, 3 })) end, S(3, 4) },
    { "fftn over axes 1 and 3", function(x) return gpu.view_as_real(F.fftn(x, nil, { 1, 3 })) end, S(2, 2, 3) },
    { "rfft, odd n", function(x) return gpu.view_as_real(F.rfft(x, 5)) end, S(2, 6) },
    { "rfftn, forward", function(x) return gpu.view_as_real(F.rfftn(x, nil, nil, { norm = "forward" })) end, S(3, 4) },
    { "irfft, even n", function(x) return F.irfft(F.fft(x), 6) end, S(2, 4) },
    { "irfft, odd n", function(x) return F.irfft(F.fft(x), 5, nil, { norm = "ortho" }) end, S(3) },
    { "irfftn over two axes", function(x) return F.irfftn(F.fftn(x), { 3, 4 }) end, S(3, 3) },
    { "hfft", function(x) return F.hfft(F.fft(x), 5) end, S(3) },
    { "ihfft", function(x) return gpu.view_as_real(F.ihfft(x)) end, S(5) },
    { "fftshift of a spectrum", function(x) return gpu.view_as_real(F.fftshift(F.fft(x))) end, S(5) },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local ok, msg = ag.gradcheck(c[2], { c[3] })
      assert(ok, msg)
    end)
  end
end)

describe("gpu.fft on cuda against the cpu", function()
  local has_cuda = false
  for _, d in ipairs(h.devices()) do if d:match("^cuda") then has_cuda = true end end
  it("every fixture case, both devices agree", function()
    if not has_cuda then return pending("no GPU here") end
    for _, file in ipairs(FILES) do
      for _, c in ipairs(dofile(FIX .. file .. ".lua")) do
        local a = call(c, viewed(array_of(c.x, "cpu"), c.view))
        local b = call(c, viewed(array_of(c.x, "cuda"), c.view))
        h.assert_close(reals(b):to("cpu"), reals(a), c.tol)
      end
    end
  end)
end)

describe("gpu.fft's planner setting", function()
  it("refuses a GPULUA_FFTW_PLANNER that is neither estimate nor measure, naming it", function()
    local bin = os.getenv("GPULUA_BIN") or "./gpulua"
    local code, out, err = h.run("GPULUA_FFTW_PLANNER=bogus " .. bin ..
      " -e 'local ok, e = pcall(gpu.fft.fft, gpu.ones(8)) print(ok, e)'")
    assert.equal(0, code, err)
    assert.matches("false", out, 1, true)
    assert.matches("GPULUA_FFTW_PLANNER: 'bogus' is neither estimate nor measure", out, 1, true)
    code, out, err = h.run("GPULUA_FFTW_PLANNER=estimate " .. bin .. " -e 'print(gpu.fft.fft(gpu.ones(4))[1])'")
    assert.equal(0, code, err)
    assert.matches("4", out, 1, true)
  end)

  it("keeps what measuring found in $XDG_CACHE_HOME/gpulua/fftw, sealed and private, and reads it back", function()
    local bin = os.getenv("GPULUA_BIN") or "./gpulua"
    local dir = os.tmpname()
    os.remove(dir)
    local folder = dir .. "/gpulua/fftw"
    local prog = " -e 'print(gpu.fft.fft(gpu.arange(1, 65))[1].re)'"
    local function run(planner)
      local code, out, err = h.run("XDG_CACHE_HOME=" .. dir .. " GPULUA_FFTW_PLANNER=" .. planner .. " " .. bin .. prog)
      assert.equal(0, code, err)
      assert.matches("^2080", out)
    end
    local function wisdom()
      local p = io.popen("ls " .. folder .. " 2>/dev/null")
      local names = p:read("a")
      p:close()
      return names:match("wisdom%-%a+%-%x+")
    end
    run("estimate")                                     -- estimate mode writes nothing
    assert.is_nil(wisdom())
    run("measure")
    local name = assert(wisdom(), "no wisdom file in " .. folder)
    local f = assert(io.open(folder .. "/" .. name, "rb"))
    local body = f:read("a")
    f:close()
    assert.matches("fftw", body, 1, true)
    assert.matches("\ngpulua%-sealed %x+ %x+\n$", body)
    local p = io.popen("stat -c %a " .. folder .. " " .. folder .. "/" .. name)
    assert.equal("700\n600\n", p:read("a"))
    p:close()
    f = assert(io.open(folder .. "/" .. name, "ab"))       -- a damaged file is not read
    f:write("(fftw-3.3 garbage")
    f:close()
    run("estimate")
    run("measure")                                      -- and is replaced by a whole one
    f = assert(io.open(folder .. "/" .. name, "rb"))
    assert.matches("\ngpulua%-sealed %x+ %x+\n$", f:read("a"))
    f:close()
    os.execute("rm -rf '" .. dir .. "'")
  end)
end)
