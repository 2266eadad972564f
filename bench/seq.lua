-- bench/seq.lua — issue 14's recurrent layers, one training step (forward, backward of the
-- sum of the outputs) of: the char-rnn LSTM (2 x 256, batch 32, 128 steps, input 64, the
-- examples/char_lm.lua --model lstm shape), a GRU of the same shape, and a ConvTranspose2d
-- (64 -> 32, 4x4, stride 2) on 16 x 64 x 32 x 32. Twin: bench/seq.py (PyTorch eager).
-- Target (issue 14): the LSTM step <= 0.8x PyTorch's CPU eager time at the same threads.
local gpu = require "gpu"
local B = dofile("bench/lib/bench.lua")
local nn = gpu.nn
local device = B.device

local function step(m, x)
  return function()
    local y = m(x)
    y:sum():backward()
    m:zero_grad()
  end
end

gpu.random.seed(0)
local x = gpu.random.randn({ 128, 32, 64 }, { device = device })
B.once("lstm 2x256 L128 N32 in64 train step", step(nn.LSTM(64, 256, { num_layers = 2, device = device }), x),
  { target_vs = "torch", ratio = "0.8000" })
B.once("gru 2x256 L128 N32 in64 train step", step(nn.GRU(64, 256, { num_layers = 2, device = device }), x))
local xt = gpu.random.randn({ 16, 64, 32, 32 }, { device = device })
B.once("convtranspose2d 64->32 k4 s2 16x32x32 train step",
  step(nn.ConvTranspose2d(64, 32, 4, { stride = 2, padding = 1, device = device }), xt))
