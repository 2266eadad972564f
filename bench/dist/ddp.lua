-- bench/dist/ddp.lua — one epoch of a 784-256-10 MLP (SGD, global batch 128, 16384
-- synthetic samples) with nn.DistributedDataParallel: each of W ranks trains on its
-- n/W samples with batches of 128/W. Run under mpirun -np 1 and -np 2 by bench/dist/run.sh;
-- prints rank 1's epoch time (the best of 3 epochs after one warm-up).
local nn, d = gpu.nn, gpu.distributed
d.init()
local W, R = d.world_size(), d.rank()
local N, B = 16384, 128
gpu.random.seed(1)
local X = gpu.random.randn(N, 784, { device = "cpu" })
local Y = gpu.random.randint(1, 10, { N }, { dtype = "int64", device = "cpu" })
local per = N // W
local xs, ys = X[{ { (R - 1) * per + 1, R * per } }]:copy(), Y[{ { (R - 1) * per + 1, R * per } }]:copy()
local model = nn.Sequential { nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10) }
local ddp = nn.DistributedDataParallel(model)
local opt = gpu.optim.SGD(ddp:parameters(), { lr = 0.05 })
local bs = B // W
local function epoch()
  d.barrier()
  local t0 = gpu.clock()
  for s = 1, per, bs do
    local xb, yb = xs[{ { s, s + bs - 1 } }], ys[{ { s, s + bs - 1 } }]
    opt:zero_grad()
    nn.cross_entropy(ddp(xb), yb):backward()
    opt:step()
  end
  d.barrier()
  return gpu.clock() - t0
end
epoch()
local best = math.huge
for _ = 1, 3 do best = math.min(best, epoch()) end
if R == 1 then print(("%d\t%.4f"):format(W, best)) end
