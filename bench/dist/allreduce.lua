-- bench/dist/allreduce.lua — gpulua's gpu.distributed.all_reduce (float32, sum, in place)
-- over the sizes of bench/dist/allreduce.c, timed the same way. Prints
-- "size_bytes<TAB>seconds_per_call" on rank 1. Run by bench/dist/run.sh under mpirun.
local d = gpu.distributed
d.init()
local max_bytes = tonumber(arg[1]) or 256 * 2 ^ 20
local buf = gpu.ones(max_bytes // 4, { device = "cpu" })
local function barrier() d.barrier() end
local bytes = 1024
while bytes <= max_bytes do
  local x = buf[{ { 1, bytes // 4 } }]
  d.all_reduce(x)                                  -- warm-up
  barrier()
  local t0 = gpu.clock()
  d.all_reduce(x)
  local one = gpu.clock() - t0
  local iters = one > 0 and math.floor(0.5 / one) or 1000
  iters = math.max(3, math.min(2000, iters))
  local it = gpu.array({ iters }, { dtype = "int64" })
  d.broadcast(it, 1)
  iters = it[1]
  barrier()
  t0 = gpu.clock()
  for _ = 1, iters do d.all_reduce(x) end
  local t = (gpu.clock() - t0) / iters
  if d.rank() == 1 then print(("%d\t%.9f"):format(bytes, t)) end
  bytes = bytes * 4
end
