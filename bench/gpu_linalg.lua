-- bench/gpu_linalg.lua — gpu.linalg on a GPU (cuSOLVER) for the target (">= 0.9x
-- torch.linalg's" speed), one line each:  RESULT gpulua <op>_<dtype>_<n> <seconds>
-- ops: solve (b n x n), inv, cholesky, qr, svd, eigh; n = 256 and 1024; float32 and
-- float64; wall time (the drivers read their info codes back, so each call ends
-- synchronised), best of 3 after one warm-up call. Twin: bench/gpu_linalg.py (PyTorch),
-- which also prints the table of both.
local gpu = require "gpu"
local L = gpu.linalg
local dev = os.getenv("GPULUA_BENCH_DEVICE") or "cuda"

local function best(n, f)
  f()
  gpu.synchronize(dev)
  local b = math.huge
  for _ = 1, n do
    local t0 = gpu.clock()
    f()
    gpu.synchronize(dev)
    b = math.min(b, gpu.clock() - t0)
  end
  return b
end

for _, dt in ipairs({ "float32", "float64" }) do
  for _, n in ipairs({ 256, 1024 }) do
    local G = gpu.random.Generator(n)
    local a = G:uniform(-1, 1, { n, n }, { dtype = dt, device = dev }) + gpu.eye(n, { dtype = dt, device = dev }) * n
    local spd = a:matmul(a.T)
    local b = G:uniform(-1, 1, { n, n }, { dtype = dt, device = dev })
    local cases = {
      solve = function() return L.solve(a, b) end,
      inv = function() return L.inv(a) end,
      cholesky = function() return L.cholesky(spd) end,
      qr = function() return L.qr(a) end,
      svd = function() return L.svd(a, { full_matrices = false }) end,
      eigh = function() return L.eigh(spd) end,
    }
    for _, op in ipairs({ "solve", "inv", "cholesky", "qr", "svd", "eigh" }) do
      local ok, t = pcall(best, 3, cases[op])
      if ok then print(("RESULT gpulua %s_%s_%d %.6f"):format(op, dt, n, t))
      else print(("FAILED gpulua %s_%s_%d %s"):format(op, dt, n, tostring(t))) end
      io.stdout:flush()
    end
  end
end
