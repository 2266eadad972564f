-- gpu.bench(fn [, opts]) — times fn the way cupyx.profiler.benchmark does: host time of
-- each call, and on a GPU the device time between events recorded around it.
--
--   local r = gpu.bench(function() return a:matmul(b) end, {n = 100, warmup = 5})
--   -- prints:  fn : CPU:  812.4 us +/- 12.1 (min:  800.2 / max:  860.0) us  GPU-0: ...
--   r.host.median, r.device.min          -- microseconds; r.device is nil on the cpu
--   r.energy.joules_per_call, r.energy.source   -- where the machine has a counter, else
--   r.energy_why says why nothing was measured
--
-- Energy: the device's counter read before and after the timed calls (NVML's total energy
-- on an NVIDIA GPU, RAPL's package counters for the cpu), divided by n. The counters
-- update every 20-100 ms, so a loop shorter than that gives a coarse figure (r.energy.coarse).
--
-- opts: n (timed calls, default 100; also n_repeat), warmup (default 3; also n_warmup),
-- name (default "fn"), device (default gpu.device()), quiet (no printing), args (a
-- table of arguments for fn).
local gpu = require "gpu"
local options = require "gpu.options"

local function stats(t)
  local n, sum, sq = #t, 0, 0
  local sorted = {}
  for i, v in ipairs(t) do sorted[i] = v; sum = sum + v end
  table.sort(sorted)
  local mean = sum / n
  for _, v in ipairs(t) do sq = sq + (v - mean) ^ 2 end
  local median = n % 2 == 1 and sorted[(n + 1) // 2] or (sorted[n // 2] + sorted[n // 2 + 1]) / 2
  return { times = t, mean = mean, std = math.sqrt(sq / n), min = sorted[1], max = sorted[n], median = median }
end

local function fmt(label, s)
  return ("%s: %9.3f us +/- %.3f (min: %9.3f / max: %9.3f) us"):format(label, s.mean, s.std, s.min, s.max)
end

local function energy_text(r)
  if r.energy then
    return ("energy: %.4g J per call (%s%s)"):format(r.energy.joules_per_call, r.energy.source,
                                                     r.energy.coarse and ", under 0.2 s: coarse" or "")
  end
  return "energy: cannot measure (" .. r.energy_why .. ")"
end

local result_mt = {
  __tostring = function(r)
    local line = ("%-12s: %s"):format(r.name, fmt("CPU", r.host))
    if r.device then line = line .. "    " .. fmt(r.device_label, r.device) end
    return line .. "    " .. energy_text(r)
  end,
}

local BENCH = options.declare("bench", {
  n = { type = "integer", min = 1 }, n_repeat = { type = "integer", min = 1 },
  warmup = { type = "integer", min = 0 }, n_warmup = { type = "integer", min = 0 },
  name = { type = "string", default = "fn" }, device = "device", quiet = { type = "boolean", default = false },
  args = { type = "table", default = {} },
}, { example = "gpu.bench(function() end, %s)" })

local function bench(fn, opts)
  if type(fn) ~= "function" and not (getmetatable(fn) or {}).__call then
    error(("bad argument #1 to 'bench' (function expected, got %s)"):format(type(fn)), 2)
  end
  opts = BENCH:check(opts, 2)
  local n = opts.n or opts.n_repeat or 100
  local warmup = opts.warmup or opts.n_warmup or 3
  local device = opts.device or gpu.device()
  local args = opts.args
  local unpack = table.unpack
  for _ = 1, warmup do fn(unpack(args)) end
  gpu.synchronize(device)
  local on_gpu = device ~= "cpu"
  local e0, e1 = gpu.event(device), gpu.event(device)
  local clock = gpu.clock
  local host, dev = {}, {}
  local e_start, why = gpu._energy(device)
  local t_start = clock()
  for i = 1, n do
    if on_gpu then e0:record() end
    local t0 = clock()
    fn(unpack(args))
    local t1 = clock()
    host[i] = (t1 - t0) * 1e6
    if on_gpu then
      e1:record()
      dev[i] = e0:elapsed(e1) * 1e3
    end
  end
  local energy
  if e_start then
    gpu.synchronize(device)
    local e_end, source = gpu._energy(device)
    local seconds = clock() - t_start
    if e_end then
      energy = { joules_per_call = (e_end - e_start) / n, joules = e_end - e_start, seconds = seconds,
                 source = source, coarse = seconds < 0.2 }
    else
      why = source
    end
  end
  local r = setmetatable({
    name = opts.name,
    n = n,
    host = stats(host),
    device = on_gpu and stats(dev) or nil,
    device_label = on_gpu and ("GPU-" .. (device:match(":(%d+)$") or "0")) or nil,
    energy = energy,
    energy_why = not energy and why or nil,
  }, result_mt)
  if not opts.quiet then print(tostring(r)) require("gpu.repl").printed(r) end
  return r
end

return options.counted("bench", bench)
