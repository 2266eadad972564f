-- bench/fft.lua — gpu.fft (FFTW on the cpu, cuFFT on cuda) on five single-precision
-- transforms: a complex64 fft of 2^20, an rfft of 2^20 float32, a batch of 1024 ffts of
-- 1024 along the last axis, an fft2 of 2048x2048 and a prime length, 1,000,003.
-- Targets: >= 2x NumPy's speed (time ratio <= 0.5, against Debian's NumPy and PyPI's
-- newest) and within 1.2x of FFTW's own plan on the cpu (bench/fftw_direct.c: FFTW_MEASURE,
-- all cores, no allocation); >= 0.9x cupy.fft's speed on cuda. Twin: bench/fft.py
-- (numpy.fft, scipy.fft, torch.fft, pyFFTW, and the C program). Wall time per call with the
-- result allocated each time, best and median of repeats of >= 0.2 s (B.once); each
-- case's first calls, which make its plans, are not timed: on the cpu a case runs 6 s
-- first, past the 4 s of runs after which FFTW measures a layout (what a program that
-- uses a layout repeatedly gets; a layout measured in an earlier run starts measured).
package.path = "bench/lib/?.lua;" .. package.path
local gpu = require "gpu"
local B = require "bench"

local opts = { device = B.device }
local g = gpu.random.Generator(0)
local function real(...) return g:uniform(0, 1, { ... }, opts) end
-- complex64 with real and imaginary parts uniform in [0, 1): float32 pairs viewed as complex
local function cplx(...)
  local shape = { ... }
  shape[#shape + 1] = 2
  return gpu.view_as_complex(g:uniform(0, 1, shape, opts))
end

-- a build without gpu.fft (or without complex dtypes) reports each case's error and goes on
local okf, F = pcall(function() return gpu.fft end)
if not okf or F == nil then
  local why = "gpu.fft is missing: " .. tostring(F)
  F = setmetatable({}, { __index = function() error(why, 0) end })
end

-- seconds of runs on the cpu before timing: past cpu_fft.c's MEASURE_AFTER_S (4 s)
local WARM_S = 6

-- run(name, make, op): times op(x) on the input x = make(), made once outside the timing
local function run(name, make, op)
  B.target(name, 0.5, "numpy")
  B.target(name, 0.5, "pypi numpy")
  B.target(name, 1.2, "FFTW")
  B.target(name, 1 / 0.9, "cupy", "cuda")
  local okx, x = pcall(make)
  -- warm up to the steady state, which is timed, as fftw_direct.c times its plan: the first
  -- call makes the plan; on the cpu, a layout whose runs have taken 4 s is planned again
  -- with FFTW_MEASURE (src/backend/cpu/cpu_fft.c), and the wisdom kept for later runs
  if okx then
    local t0 = os.time()
    for i = 1, math.huge do
      pcall(op, x)
      if i >= 3 and (B.device ~= "cpu" or os.time() - t0 >= WARM_S) then break end
    end
  end
  B.once(name, okx and function() return op(x) end or function() error(x, 0) end)
end

run("fft: 2^20 complex64", function() return cplx(1 << 20) end, function(x) return F.fft(x) end)
run("rfft: 2^20 float32", function() return real(1 << 20) end, function(x) return F.rfft(x) end)
run("fft: 1024x1024 complex64, last axis", function() return cplx(1024, 1024) end, function(x) return F.fft(x) end)
run("fft2: 2048x2048 complex64", function() return cplx(2048, 2048) end, function(x) return F.fft2(x) end)
run("fft: 1000003 (prime) complex64", function() return cplx(1000003) end, function(x) return F.fft(x) end)
