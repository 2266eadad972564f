-- bench/dist/check.lua — what the ranks' comparison of their calls costs: an all_reduce
-- (float32, sum, in place, synchronous) with the comparison and without it
-- (gpu.distributed._compare(false)), in pairs of short blocks, one of each side in turn
-- first, so that the load of a shared machine hits both sides alike. For each size (1 MB,
-- the target's, and 8 bytes, where the comparison's own time shows) rank 1 prints each
-- side's best, lower-decile and median time per call over the blocks (a block's time is its
-- slowest rank's) and their ratios (with / without). On a loaded machine the times are
-- bimodal (both ranks running, or one descheduled): best and decile are the undisturbed.
-- usage: mpirun -np 2 ./gpulua bench/dist/check.lua [pairs] [calls_per_block]
local d = gpu.distributed
local R, W = d.init()
local npairs = tonumber(arg[1]) or 200
local calls = tonumber(arg[2]) or 10

local function block(x, on)
  d._compare(on)
  d.barrier()
  local t0 = gpu.clock()
  for _ = 1, calls do d.all_reduce(x) end
  local t = gpu.array({ (gpu.clock() - t0) / calls }, { dtype = "float64" })
  d._compare(true)
  d.all_reduce(t, { op = "max" })
  return t[1]
end

local function quantile(t, q)           -- t sorted
  local p = 1 + (#t - 1) * q
  local i = math.floor(p)
  return i >= #t and t[#t] or t[i] + (t[i + 1] - t[i]) * (p - i)
end

if R == 1 then
  print(("all_reduce, float32 sum, %d ranks, %d pairs of blocks of %d calls; us per call"):format(W, npairs, calls))
  print(("%8s | %9s %9s %9s | %9s %9s %9s | %6s %6s %6s"):format("bytes", "best", "decile", "median", "best",
    "decile", "median", "best", "decile", "median"))
  print(("%8s | %29s | %29s | %20s"):format("", "without the check", "with the check", "ratio with/without"))
end
for _, bytes in ipairs { 2 ^ 20, 8 } do
  local x = gpu.ones(bytes // 4, { dtype = "float32", device = "cpu" })
  for _ = 1, 3 do block(x, true); block(x, false) end      -- warm-up
  local on, off = {}, {}
  for p = 1, npairs do
    if p % 2 == 1 then on[p] = block(x, true); off[p] = block(x, false)
    else off[p] = block(x, false); on[p] = block(x, true) end
  end
  table.sort(on); table.sort(off)
  if R == 1 then
    local a = { off[1], quantile(off, 0.1), quantile(off, 0.5) }
    local b = { on[1], quantile(on, 0.1), quantile(on, 0.5) }
    print(("%8d | %9.2f %9.2f %9.2f | %9.2f %9.2f %9.2f | %6.3f %6.3f %6.3f"):format(bytes, a[1] * 1e6, a[2] * 1e6,
      a[3] * 1e6, b[1] * 1e6, b[2] * 1e6, b[3] * 1e6, b[1] / a[1], b[2] / a[2], b[3] / a[3]))
  end
end
