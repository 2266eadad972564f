-- tools/bench_layer_norm.lua: LayerNorm on the cpu, the own fused kernels against oneDNN (gpu.dnn.layer_norm),
-- forward, backward and nn.LayerNorm through autograd, median ms; OMP_NUM_THREADS=n ./gpulua tools/bench_layer_norm.lua
-- beside /usr/bin/python3 tools/bench_layer_norm.py n (torch). bench/RESULTS.md has the figures.
local gpu = require("gpu")
local g = gpu.random.Generator(1)
local function t(f) local r = gpu.bench(f, {n = 300, warmup = 10, quiet = true}); return r.host.median / 1e3 end
for _, shp in ipairs { {4096, 128}, {32, 128, 128} } do
  local x = g:normal(0, 1, shp, {dtype="float32"})
  local D = shp[#shp]
  local w = g:normal(1, 0.2, {D}, {dtype="float32"})
  local b = g:normal(0, 0.2, {D}, {dtype="float32"})
  local dy = g:normal(0, 1, shp, {dtype="float32"})
  local x2 = x:reshape(-1, D); local dy2 = dy:reshape(-1, D)
  local y, m, r = gpu.fused.layer_norm(x2, w, b)
  local own_f = t(function() gpu.fused.layer_norm(x2, w, b) end)
  local dnn_f = t(function() gpu.dnn.layer_norm(x2, w, b) end)
  local own_b = t(function() gpu.fused.layer_norm_backward(dy2, x2, m, r, w) end)
  local dnn_b = t(function() gpu.dnn.layer_norm_backward(x2, dy2, w, m, r) end)
  -- the layer as nn uses it: forward + backward through autograd
  local mod = gpu.nn.LayerNorm(D)
  local xr = x:detach():requires_grad()
  local function step() local yy = mod(xr); yy:backward(dy); mod:zero_grad(); xr.grad = nil end
  gpu.dnn.enabled = true; local nn_on = t(step)
  gpu.dnn.enabled = false; local nn_off = t(step); gpu.dnn.enabled = true
  print(("%-12s fwd own %.3f onednn %.3f (x%.2f) | bwd own %.3f onednn %.3f (x%.2f) | nn.LayerNorm fwd+bwd onednn-fwd %.3f own %.3f (x%.2f) ms"):format(
    table.concat(shp, "x"), own_f, dnn_f, dnn_f / own_f, own_b, dnn_b, dnn_b / own_b, nn_on, nn_off, nn_on / nn_off))
end
