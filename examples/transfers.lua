-- transfers.lua — what host<->device copies cost, and how keeping data on the device
-- avoids them (the seeds' "moving data between CPU and GPU is expensive: do it rarely
-- and in bulk").
--
-- gpulua never copies behind your back: an op mixing a cpu and a cuda array is an error
-- that says to use :to(). Every copy it does make is counted in gpu.stats():
-- h2d_bytes/h2d_copies (host to device), d2h_* (device to host), d2d_* (device to device).
-- Reading back is a copy too: x:totable(), x:item(), x[i] on a vector, print(x).
--
-- Run: ./gpulua examples/transfers.lua [--small]
local gpu = require "gpu"
local small = arg and arg[1] == "--small"
local n = small and 2^16 or 2^24                        -- elements (float32)
local steps = small and 5 or 20

local function counters(label)
  local s = gpu.stats()
  print(("  %-40s h2d %3d copies %12d bytes   d2h %3d copies %12d bytes"):format(
    label, s.h2d_copies, s.h2d_bytes, s.d2h_copies, s.d2h_bytes))
  return s
end

local ok, why = gpu.is_available()
local host = gpu.random.rand({n}, {device = "cpu"})
print(("%d float32 = %.1f MiB on the host"):format(n, host.nbytes / 2^20))

if not ok then
  print("no GPU (" .. tostring(why) .. "):")
  print("  every array lives in host memory, so there is nothing to copy; the counters stay 0.")
  gpu.reset_stats()
  local y = host
  for _ = 1, steps do y = (y * 1.0001 + 1):sqrt() end
  print(("  %d steps on the cpu, result[1] = %.4f"):format(steps, y[1]))
  local s = counters("after the loop")
  assert(s.h2d_bytes == 0 and s.d2h_bytes == 0)
  print("  on a GPU this example times one copy, then the same loop with and without copies.")
  print("transfers ok")
  return
end

local dev = gpu.device()
if dev == "cpu" then dev = "cuda:0" end

-- 1. the price of one copy each way
gpu.reset_stats()
local d = host:to(dev); gpu.synchronize(dev)
local up = gpu.bench(function() return host:to(dev) end, {n = steps, warmup = 1, quiet = true, device = dev})
local down = gpu.bench(function() return d:to("cpu") end, {n = steps, warmup = 1, quiet = true, device = dev})
local function gbps(us) return host.nbytes / (us * 1e-6) / 1e9 end
print(("host -> device: %8.3f ms  (%.1f GB/s)"):format(up.host.median / 1e3, gbps(up.host.median)))
print(("device -> host: %8.3f ms  (%.1f GB/s)"):format(down.host.median / 1e3, gbps(down.host.median)))

-- 2. the same work, copying every step versus staying on the device
local function step(x) return (x * 1.0001 + 1):sqrt() end
gpu.reset_stats()
local t0 = gpu.clock()
local y = host
for _ = 1, steps do y = step(y:to(dev)):to("cpu") end   -- the slow habit
local slow = gpu.clock() - t0
counters(("copy in and out every step (%d)"):format(steps))
gpu.reset_stats()
t0 = gpu.clock()
local z = host:to(dev)                                   -- once in
for _ = 1, steps do z = step(z) end
z = z:to("cpu")                                          -- once out
local fast = gpu.clock() - t0
counters("copy once, stay on the device")
print(("copying every step: %.3f ms, staying on the device: %.3f ms (%.1fx)"):format(slow * 1e3, fast * 1e3, slow / fast))
assert(math.abs(y[1] - z[1]) < 1e-3)

-- 3. no hidden transfers: mixing devices is an error, not a silent copy
local okmix, err = pcall(function() return host + d end)
print("cpu + cuda: " .. (okmix and "allowed?!" or tostring(err)))
print("transfers ok")
