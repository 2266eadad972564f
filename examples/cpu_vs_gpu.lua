-- cpu_vs_gpu.lua — the same operations timed on each device with gpu.bench, and the
-- speed-up of the GPU over the CPU (the seeds' "compare CuPy with NumPy"). The inputs are
-- made once per device from the same seed; only the op is timed (no copies).
--
-- Expect the GPU to lose on tiny arrays (a launch costs microseconds) and win by one or
-- two orders of magnitude on big matmuls and elementwise math. Speed is half of it: where
-- the machine has an energy counter (NVML on an NVIDIA GPU, RAPL on the CPU) the joules per
-- call are printed too, and where it has none the script says so.
--
-- Run: ./gpulua examples/cpu_vs_gpu.lua [--small]
local gpu = require "gpu"
local small = arg and arg[1] == "--small"
local N = small and 128 or 2048                   -- matrix side
local E = small and 2^14 or 2^24                  -- elements for the elementwise ops
local reps = small and 3 or 10

local ok, why = gpu.is_available()
local devices = {"cpu"}
if ok then devices[2] = "cuda:0" end

local cases = {
  { ("matmul %dx%d"):format(N, N), function(d)
      local a, b = gpu.random.rand({N, N}, {device = d}), gpu.random.rand({N, N}, {device = d})
      return function() return a:matmul(b) end
    end },
  { ("a + b (%d)"):format(E), function(d)
      local a, b = gpu.random.rand({E}, {device = d}), gpu.random.rand({E}, {device = d})
      return function() return a + b end
    end },
  { ("exp(a) (%d)"):format(E), function(d)
      local a = gpu.random.rand({E}, {device = d})
      return function() return gpu.exp(a) end
    end },
  { ("sum(a) (%d)"):format(E), function(d)
      local a = gpu.random.rand({E}, {device = d})
      return function() return a:sum() end
    end },
  { "a + b (1000), tiny", function(d)
      local a, b = gpu.random.rand({1000}, {device = d}), gpu.random.rand({1000}, {device = d})
      return function() return a + b end
    end },
}

-- the time of one call in ms: device time on a GPU (events), host time on the CPU; and
-- gpu.bench's energy (nil and why where the device has no counter)
local function time(fn, d)
  local r = gpu.bench(fn, {n = reps, warmup = 1, device = d, quiet = true})
  return (r.device or r.host).median / 1e3, r.energy, r.energy_why
end

if ok then
  print(("%-26s %12s %12s %9s"):format("op", "cpu ms", "cuda:0 ms", "speed-up"))
else
  print(("%-26s %12s"):format("op", "cpu ms"))
end
local missing = {}
local joules, no_energy = {}, {}
for _, c in ipairs(cases) do
  local name, make = c[1], c[2]
  local t = {}
  joules[#joules + 1] = { name = name }
  for i, d in ipairs(devices) do
    gpu.random.seed(0)
    local fine, ms, energy, why = pcall(function() return time(make(d), d) end)
    if fine then
      t[i] = ms
      if energy then joules[#joules][i] = energy.joules_per_call else no_energy[d] = why end
    else
      missing[#missing + 1] = ("%s on %s: %s"):format(name, d, tostring(ms))
    end
  end
  local function col(v) return v and ("%12.3f"):format(v) or ("%12s"):format("-") end
  if ok then
    print(("%-26s %s %s %9s"):format(name, col(t[1]), col(t[2]),
          (t[1] and t[2]) and ("%.1fx"):format(t[1] / t[2]) or "-"))
  else
    print(("%-26s %s"):format(name, col(t[1])))
  end
end
for _, m in ipairs(missing) do print("  - " .. m) end

-- energy per call where a device has a counter; a plain word where it has none
local measured = false
for i in ipairs(devices) do for _, j in ipairs(joules) do measured = measured or j[i] ~= nil end end
if measured then
  print(("\n%-26s %s"):format("energy per call (J)", table.concat(devices, "     ")))
  for _, j in ipairs(joules) do
    local cols = {}
    for i in ipairs(devices) do cols[i] = j[i] and ("%10.3g"):format(j[i]) or ("%10s"):format("-") end
    print(("%-26s %s"):format(j.name, table.concat(cols, " ")))
  end
end
for _, d in ipairs(devices) do
  if no_energy[d] then print(("energy on %s: cannot measure (%s)"):format(d, no_energy[d])) end
end
if not ok then
  print("one column: there is no usable GPU here (" .. tostring(why) .. ").")
  print("Run this on a machine where `gpulua --check` lists a cuda device to see the speed-up.")
end
print("cpu_vs_gpu ok")
