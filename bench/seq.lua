-- bench/seq.lua — recurrent layers, one training step (forward, backward of the
-- sum of the outputs) of: the char-rnn LSTM (2 x 256, batch 32, 128 steps, input 64, the
-- examples/char_lm.lua --model lstm shape), a GRU and an Elman RNN (tanh) of the same shape,
-- and a ConvTranspose2d (64 -> 32, 4x4, stride 2) on 16 x 64 x 32 x 32. The recurrent cases
-- run the path nn takes by default (float32 on the cpu: oneDNN's LSTM / GRU where the library
-- loads, gpu.config().rnn) and, as "fused loop", gpu.fused.lstm / gru (m.dnn = false). Case
-- names carry the thread count (OMP_NUM_THREADS, else the cores): bench/seq.py runs PyTorch
-- eager at the same count, so `OMP_NUM_THREADS=1 BENCH_GROUPS=seq sh bench/run.sh` gives the
-- 1-thread figures.
-- Target: the LSTM step <= 0.8x PyTorch's CPU eager time at the same threads.
local gpu = require "gpu"
local B = dofile("bench/lib/bench.lua")
local nn = gpu.nn
local device = B.device

local threads = tonumber(os.getenv("OMP_NUM_THREADS") or "") or gpu.devices("cpu")[1].cores
local T = (", %d thread%s"):format(threads, threads == 1 and "" or "s")

local function step(m, x)
  return function()
    local y = m(x)
    y:sum():backward()
    m:zero_grad()
  end
end

local function with(m, k, v) m[k] = v; return m end

gpu.random.seed(0)
local x = gpu.random.randn({ 128, 32, 64 }, { device = device })
local shape = " 2x256 L128 N32 in64 train step"
B.once("lstm" .. shape .. T, step(nn.LSTM(64, 256, { num_layers = 2, device = device }), x),
  { target_vs = "torch", ratio = "0.8000", note = "path: " .. gpu.config().rnn })
B.once("lstm" .. shape .. " (fused loop)" .. T,
  step(with(nn.LSTM(64, 256, { num_layers = 2, device = device }), "dnn", false), x))
B.once("gru" .. shape .. T, step(nn.GRU(64, 256, { num_layers = 2, device = device }), x),
  { note = "path: " .. gpu.config().rnn })
B.once("gru" .. shape .. " (fused loop)" .. T,
  step(with(nn.GRU(64, 256, { num_layers = 2, device = device }), "dnn", false), x))
B.once("rnn tanh" .. shape .. T, step(nn.RNN(64, 256, { num_layers = 2, device = device }), x))
local xt = gpu.random.randn({ 16, 64, 32, 32 }, { device = device })
B.once("convtranspose2d 64->32 k4 s2 16x32x32 train step" .. T,
  step(nn.ConvTranspose2d(64, 32, 4, { stride = 2, padding = 1, device = device }), xt))
