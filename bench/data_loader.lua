-- bench/data_loader.lua — an epoch of DataLoader over a dataset whose get does CPU-heavy
-- work per sample (a 28x28 image through a few hundred elementwise ops, as a chain of
-- random transforms would), with the batches made here (num_workers = 0) and by two
-- worker processes (num_workers = 2, started with the epoch, or persistent). Target on a
-- 2-core machine with both cores free: the workers' epoch >= 1.7x faster (ratio <= 1 / 1.7
-- against the column "gpulua num_workers=0"; each host has its own such column). A core
-- another program keeps busy leaves the two workers one core between them.
local gpu = require "gpu"

local impl = os.getenv("GPULUA_BENCH_IMPL") or (_G.gpu and "gpulua" or "lua5.4+gpu.so")
local quick = os.getenv("BENCH_QUICK") == "1"
local REPEATS = quick and 2 or 5
local N, BATCH, OPS = quick and 256 or 512, 32, 400
local function emit(...) io.write(table.concat({ ... }, "\t"), "\n"); io.flush() end

gpu.random.seed(0)
local images = gpu.rand({ N, 28, 28 }, { device = "cpu" })
local labels = gpu.random.randint(1, 10, { N }, { dtype = "int64", device = "cpu" })
local ds = setmetatable({}, { __len = function() return N end })
function ds.get(_, i)
  local x = images[i]
  for _ = 1, OPS do x = (x * 1.01 + 0.5):tanh() end     -- 3 elementwise ops a round
  return { x, labels[i] }
end

local function best_median(ts)
  table.sort(ts)
  return ts[1], ts[(#ts + 1) // 2]
end

local function case(name, col, opts)
  opts.batch_size, opts.shuffle = BATCH, true
  local loader = gpu.data.DataLoader(ds, opts)
  local function epoch()
    local n = 0
    for xb in loader:iter() do n = n + xb.shape[1] end
    assert(n == N)
  end
  epoch()                                                  -- warm-up
  local ts = {}
  for r = 1, REPEATS do
    local t = gpu.clock()
    epoch()
    ts[r] = gpu.clock() - t
  end
  local best, med = best_median(ts)
  emit("result", "data_loader", name, col, ("%.1f"):format(best * 1e9), ("%.1f"):format(med * 1e9),
    ("%.3f s/epoch"):format(best))
  return best
end

local name = ("epoch n=%d b%d, %d elementwise ops per 28x28 sample"):format(N, BATCH, 3 * OPS)
if impl == "gpulua" then                                   -- the report checks gpulua's row
  for _, c in ipairs { ", num_workers=2", ", num_workers=2 persistent" } do
    emit("target", "data_loader", name .. c, "max_ratio", ("%.4f"):format(1 / 1.7), "gpulua num_workers=0")
  end
end
local t0 = case(name .. ", num_workers=2", impl .. " num_workers=0", {})
case(name .. ", num_workers=2 persistent", impl .. " num_workers=0", {})
local t2 = case(name .. ", num_workers=2", impl, { num_workers = 2 })
local t2p = case(name .. ", num_workers=2 persistent", impl, { num_workers = 2, persistent_workers = true })
io.stderr:write(("data_loader (%s): num_workers=0 %.3f s, 2 workers %.3f s (%.2fx), persistent %.3f s (%.2fx)\n")
  :format(impl, t0, t2, t0 / t2, t2p, t0 / t2p))
