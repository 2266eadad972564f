-- memory.lua — watching and managing memory (the seeds' "GPU memory is much smaller than
-- host memory: watch it and avoid out-of-memory errors").
--
-- * gpu.memory([device]) gives {allocated, reserved, peak, free, total} in bytes.
-- * Freed blocks stay cached ("reserved") and serve the next allocation of that size
--   without asking the driver (cudaMalloc) or the OS for fresh pages; gpu.empty_cache()
--   gives them back. Host arrays use the same kind of cache.
-- * Lua's collector does not see device memory, so free big arrays yourself when you
--   can: x:close(), or `local x <close> = ...` (freed at the end of the block).
-- * An allocation that fails empties the cache, runs a full collection and tries once
--   more; only then does it raise "out of memory ... (allocated, reserved, free)", an
--   ordinary Lua error you can catch with pcall and recover from.
-- * GPULUA_MEMORY_LIMIT=1G (or 0.5 for half the GPU) caps gpulua's pool on each GPU.
--
-- Run: GPULUA_MEMORY_LIMIT=1G ./gpulua examples/memory.lua [--small]
local gpu = require "gpu"
local small = arg and arg[1] == "--small"

local dev = gpu.device()
local function mib(n) return ("%.1f MiB"):format(n / 2^20) end
local function show(label)
  local m = gpu.memory(dev)
  print(("  %-34s allocated %10s  reserved %10s  peak %10s"):format(label, mib(m.allocated), mib(m.reserved), mib(m.peak)))
end

print("device: " .. dev)
local m = gpu.memory(dev)
print(("total %s, free %s"):format(mib(m.total), mib(m.free)))

-- 1. caching: a freed block is reused by the next allocation of its size
local n = small and 256 or 4096                       -- n x n float32
gpu.empty_cache(dev)
gpu.reset_stats()
show("start")
local a = gpu.zeros(n, n)
show(("zeros(%d, %d)"):format(n, n))
a:close()                                              -- freed now, the block stays cached
show("a:close()")
local b = gpu.ones(n, n)
show("ones(n, n) reuses the block")
local s = gpu.stats()
if dev == "cpu" then
  print(("  host allocations %d, served from the cache %d"):format(s.host_allocs, s.host_cache_hits))
else
  print(("  device allocations %d, served from the cache %d, cudaMalloc calls %d"):format(s.allocs, s.cache_hits, s.device_mallocs))
end
b:close()
gpu.empty_cache(dev)
show("b:close(); gpu.empty_cache()")

-- 2. <close>: freed at the end of the block, whatever the collector thinks
do
  local tmp <close> = gpu.empty(n, n)
  show("inside a block with <close>")
end
show("after the block")

-- 3. out of memory, caught and recovered from
if dev == "cpu" then
  print("out of memory: this part needs a GPU (host memory is virtual and overcommitted:")
  print("  the kernel, not gpulua, decides when it runs out). Run it where gpu.is_available().")
else
  local limit = os.getenv("GPULUA_MEMORY_LIMIT")
  local kept, err = {}, nil
  if limit then
    print("filling the pool up to GPULUA_MEMORY_LIMIT=" .. limit .. " in 256 MiB steps")
    for _ = 1, 4096 do
      local ok, x = pcall(gpu.empty, 64 * 2^20)         -- 64 Mi float32 = 256 MiB
      if not ok then err = x; break end
      kept[#kept + 1] = x
    end
  else
    print("GPULUA_MEMORY_LIMIT is not set: asking for twice the GPU's memory at once")
    local ok, x = pcall(gpu.empty, math.floor(m.total / 2))   -- float32: 2 x total bytes
    if not ok then err = x end
  end
  print(("caught after %d blocks: %s"):format(#kept, tostring(err)))
  assert(err and tostring(err):find("out of memory"), "expected an out-of-memory error")
  for i, x in ipairs(kept) do x:close(); kept[i] = nil end
  gpu.empty_cache(dev)
  show("after freeing what we held")
  local ok2 = pcall(gpu.ones, 1024, 1024)
  print("recovered: a new 4 MiB array " .. (ok2 and "works" or "still fails"))
  assert(ok2)
end
print("memory ok")
