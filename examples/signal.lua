-- examples/signal.lua — the FFT (gpu.fft, numpy.fft's names) on a signal and an image:
--  1. a noisy signal (tones of 5 and 12 Hz sampled at 1024 Hz, in Gaussian noise) low-pass
--     filtered: its rfft zeroed above 20 Hz, back with irfft; the error against the clean
--     signal before and after, and the tones found again as the spectrum's two peaks;
--  2. the spectrogram of a chirp (a tone sweeping from 20 to 400 Hz): Hann-windowed frames
--     gathered with take, one batched rfft along the last axis, the power in dB;
--  3. an image blurred in the frequency domain: rfft2, times a Gaussian's transfer function,
--     irfft2 — a periodic convolution at the cost of two FFTs whatever the kernel's width,
--     checked at one pixel against the direct sum with the kernel (the convolution theorem).
-- Writes, with gpu.plot (gnuplot) and gpu.image (libpng): signal_filter.png (the first second:
-- noisy, filtered, clean), signal_spectrum.png (the spectrum in dB before and after the
-- filter), signal_spectrogram.png and signal_blur.png (the image beside its blur).
--
--   gpulua examples/signal.lua [--device cpu|cuda] [--small] [--out DIR] [--image PNG]
-- --small: shorter signals and a smaller image (what the specs run), and the PNGs go to
-- $TMPDIR (or /tmp) unless --out says where (default: the current directory);
-- --image PNG: blur that picture (gray, RGB or RGBA; every channel) instead of a test pattern.
local gpu = require "gpu"
local F = gpu.fft

local device, small, out, image_path = gpu.device(), false, nil, nil
local i = 1
while arg and arg[i] do
  local a = arg[i]
  if a == "--device" then device = arg[i + 1]; i = i + 1
  elseif a == "--small" then small = true
  elseif a == "--out" then out = arg[i + 1]; i = i + 1
  elseif a == "--image" then image_path = arg[i + 1]; i = i + 1
  else error("signal: unknown option " .. a .. " (--device D, --small, --out DIR, --image PNG)") end
  i = i + 1
end
out = out or (small and (os.getenv("TMPDIR") or "/tmp") or ".")
local function path(name) return out .. "/" .. name end
local f32 = { dtype = "float32", device = device }
gpu.random.seed(0)

local function rms(a) return (a * a):mean():sqrt():item() end

-- ---- 1. low-pass filter --------------------------------------------------------------------
local fs = 1024                                    -- Hz: 5 and 12 Hz fall on whole bins
local n = small and 4096 or 65536                  -- samples (4 s or 64 s)
local t = gpu.arange(n, f32) / fs
local clean = (t * (2 * math.pi * 5)):sin() + (t * (2 * math.pi * 12)):sin() * 0.5
local x = clean + gpu.random.randn(n, f32) * 0.8

local X = F.rfft(x)                                -- complex64, n/2 + 1 bins
local freq = F.rfftfreq(n, 1 / fs, f32)           -- Hz of each bin
local cutoff = 20
local keep = freq:le(cutoff):astype("float32")     -- 1 up to the cutoff, 0 above
local Y = X * keep
local y = F.irfft(Y, n)                            -- back to n real samples
print(("signal: %d samples at %d Hz on %s; low-pass below %d Hz: rms error against the clean signal %.3f -> %.3f")
  :format(n, fs, device, cutoff, rms(x - clean), rms(y - clean)))

local mag = gpu.abs(X)                             -- a real array: |X|
local _, peaks = mag:topk(2)                       -- 1-based bins of the two strongest
local tones = {}
for k, b in ipairs(peaks:cpu():totable()) do tones[k] = (b - 1) * fs / n end
table.sort(tones)
print(("strongest tones: %g Hz and %g Hz"):format(tones[1], tones[2]))

local sec = { { 1, fs } }                          -- the first second
gpu.plot.plot({ { "noisy", t[sec], x[sec] }, { "low-passed", t[sec], y[sec] }, { "clean", t[sec], clean[sec] } },
  { file = path("signal_filter.png"), title = ("low-pass filter below %d Hz by rfft / irfft"):format(cutoff),
    xlabel = "s", width = 900, height = 400 })
local shown = { { 1, math.floor(60 * n / fs) + 1 } }      -- 0 .. 60 Hz
local function db(z) return (gpu.abs(z) + 1e-3):log10() * 20 end
gpu.plot.plot({ { "noisy", freq[shown], db(X)[shown] }, { "low-passed", freq[shown], db(Y)[shown] } },
  { file = path("signal_spectrum.png"), title = "spectrum", xlabel = "Hz", ylabel = "dB", width = 900, height = 400 })

-- ---- 2. spectrogram ------------------------------------------------------------------------
local m = small and 8192 or 65536
local tc = gpu.arange(m, f32) / fs
local T, f0, f1 = m / fs, 20, 400                  -- a linear chirp from f0 to f1 Hz over T s
local chirp = ((tc * f0 + tc * tc * ((f1 - f0) / (2 * T))) * (2 * math.pi)):sin()
  + gpu.random.randn(m, f32) * 0.3
local win, hop = 256, m // 256                 -- about 256 frames (overlapping), 129 bins
local frames = (m - win) // hop + 1
local starts = gpu.arange(frames, { device = device }):reshape(frames, 1) * hop
local idx = starts + gpu.arange(win, { device = device }):reshape(1, win) + 1      -- 1-based
local hann = 0.5 - (gpu.arange(win, f32) * (2 * math.pi / (win - 1))):cos() * 0.5   -- numpy.hanning
local S = F.rfft(gpu.take(chirp, idx) * hann)      -- (frames, win/2 + 1): one batched rfft
local power = gpu.abs(S)
local ridge = power:argmax(2):cpu():totable()      -- each frame's strongest bin
local function hz(b) return (b - 1) * fs / win end
local drift = (f1 - f0) * (win / 2) / m          -- the sweep over half a frame
print(("spectrogram: %d frames of %d samples; the chirp's peak moves from %g Hz to %g Hz (expected %.0f -> %.0f, in steps of %g Hz)")
  :format(frames, win, hz(ridge[1]), hz(ridge[#ridge]), f0 + drift, f1 - drift, fs / win))
local db_power = (power * power + 1e-6):log10() * 10
gpu.plot.imagesc(db_power.T:flip(1), { file = path("signal_spectrogram.png"), palette = "color",
  title = ("spectrogram of a chirp, %d to %d Hz (time across, 0 to %d Hz up)"):format(f0, f1, fs // 2),
  width = 900, height = 500 })

-- ---- 3. blur in the frequency domain -------------------------------------------------------
local img
if image_path then
  img = gpu.image.load(image_path, f32)             -- (C, H, W) in [0, 1]
else                                               -- a test pattern: checks and a disc
  local H = small and 64 or 256
  local r = gpu.arange(H, { device = device }):reshape(H, 1)
  local c = gpu.arange(H, { device = device }):reshape(1, H)
  local checks = ((r // (H // 8) + c // (H // 8)) % 2):astype("float32") * 0.5 + 0.25
  local disc = ((r - H / 2) ^ 2 + (c - H / 2) ^ 2):lt((H / 4) ^ 2)
  img = gpu.where(disc, 1.0, checks):reshape(1, H, H)
end
local H, W = img.shape[2], img.shape[3]
local sigma = small and 1.5 or 4                   -- pixels
local u = F.fftfreq(H, 1, f32):reshape(H, 1)      -- cycles per pixel
local v = F.rfftfreq(W, 1, f32):reshape(1, W // 2 + 1)
local gauss = ((u * u + v * v) * (-2 * math.pi ^ 2 * sigma ^ 2)):exp()      -- its transfer function
local blurred = F.irfft2(F.rfft2(img) * gauss, { H, W })      -- every channel at once

-- the convolution theorem at one pixel: the kernel is the inverse transform of `gauss`
-- (a periodic Gaussian centred on pixel (1, 1)); pixel (pi, pj) of the blur is the sum of
-- the image times that kernel flipped and moved to (pi, pj)
local kernel = F.irfft2(gauss, { H, W })
local pi, pj = H // 3 + 1, W // 3 + 1
local direct = (img[{ 1 }] * kernel:flip():roll(pi, 1):roll(pj, 2)):sum():item()
local steep = function(a) return (a[{ ":", ":", { 2, W } }] - a[{ ":", ":", { 1, W - 1 } }]):abs():max():item() end
print(("blur: %dx%d image, Gaussian sigma %g px by rfft2 / irfft2; pixel (%d, %d) %.5f, the direct sum %.5f; steepest step %.2f -> %.2f")
  :format(H, W, sigma, pi, pj, blurred[{ 1, pi, pj }], direct, steep(img), steep(blurred)))
gpu.image.save(path("signal_blur.png"), gpu.stack({ img, blurred }), { nrow = 2, padding = 4, pad_value = 1 })

print("wrote " .. table.concat({ path("signal_filter.png"), path("signal_spectrum.png"),
  path("signal_spectrogram.png"), path("signal_blur.png") }, ", "))
print("signal ok")
