-- bench/lib/bench.lua — timing helpers for the Lua side of the benchmarks.
--
-- A case file (bench/<group>.lua) calls B.case(name, loop, opts) for each case;
-- `loop(n)` must run the operation n times.  The result is the time per
-- iteration in ns, best and median of several repeats, with the cost of an
-- empty Lua loop of the same length subtracted.  Lines go to stdout as
-- tab-separated records that bench/lib/report.py reads:
--   result <group> <case> <impl> <best_ns> <median_ns> <note>
--   target <group> <case> max_ns <value>
--   target <group> <case> max_ratio <ratio> <baseline>
-- Targets belong to a device: the issues' CPU targets (against NumPy, STREAM) are checked
-- on the cpu, the GPU ones (against CuPy, PyTorch on cuda) on cuda.
-- Times come from gpu.clock (monotonic wall time; os.clock would count the CPU time
-- of every OpenMP thread); each repeat runs long enough (>= 50 ms, 10 ms with
-- BENCH_QUICK=1) to be precise to well under 1 ns per iteration. Device work is
-- synchronised at the end of each repeat.
local B = {}

B.device = os.getenv("GPULUA_BENCH_DEVICE") or "cpu"
B.impl = os.getenv("GPULUA_BENCH_IMPL") or (_G.gpu and "gpulua" or "lua5.4+gpu.so")
B.group = arg and arg[0] and arg[0]:match("([^/]+)%.lua$") or "?"
local quick = os.getenv("BENCH_QUICK") == "1"
local MIN_TIME = quick and 0.01 or 0.05
local REPEATS = quick and 3 or 7

local gpu = require "gpu"
local clock = gpu.clock
local function sync() if B.device ~= "cpu" then gpu.synchronize(B.device) end end

local function time_once(loop, n)
  local t = clock()
  loop(n)
  sync()
  return clock() - t
end

-- n such that one repeat takes at least MIN_TIME
local function calibrate(loop)
  local n = 100
  while true do
    if time_once(loop, n) >= MIN_TIME then return n end
    n = n * 4
  end
end

-- the best and the median of REPEATS times
local function best_median(ts)
  table.sort(ts)
  return ts[1], ts[(REPEATS + 1) // 2]
end

local function per_iter(loop, n)
  local ts = {}
  for r = 1, REPEATS do ts[r] = time_once(loop, n) / n * 1e9 end
  return best_median(ts)
end

local function empty_loop(n) for _ = 1, n do end end
local overhead_n = calibrate(empty_loop)
local overhead = per_iter(empty_loop, overhead_n)      -- best case: subtract the least

local function emit(...)
  local t = table.pack(...)
  for i = 1, t.n do t[i] = tostring(t[i]):gsub("[\t\n]", " ") end
  io.write(table.concat(t, "\t"), "\n")
end

-- The device kind a target is for: "cpu" or "cuda" ("cuda:1" counts as "cuda").
local function on(device) return (device or "cpu") == B.device:match("^%a+") end

-- B.target(name, ratio, baseline [, device]): gpulua's time / baseline's must be <= ratio
-- (e.g. 0.5 for "twice as fast as numpy", 1.333 for "75% of STREAM") when the run is on
-- `device` (default "cpu"); a case may have several targets.
function B.target(name, ratio, baseline, device)
  if on(device) then emit("target", B.group, name, "max_ratio", ratio, baseline) end
end

-- one result line: best and median ns per iteration less the empty loop's; opts.impl names
-- another column than this host's own, opts.note is printed beside it
local function report(name, opts, best, med)
  local impl = opts.impl and (B.impl == "gpulua" and opts.impl or B.impl .. " " .. opts.impl) or B.impl
  emit("result", B.group, name, impl, string.format("%.1f", best - overhead),
       string.format("%.1f", med - overhead), opts.note or "")
  io.flush()
end

-- B.case(name, loop [, {target_ns = N, target_device = "cpu", note = "...", impl = "..."}])
-- (impl: report this loop under another column than gpulua's own, e.g. "untracked" for
-- a baseline of gpulua against itself)
function B.case(name, loop, opts)
  opts = opts or {}
  if opts.target_ns and on(opts.target_device) then emit("target", B.group, name, "max_ns", opts.target_ns) end
  local ok, err = pcall(loop, 1)                 -- a case that cannot run says why
  if not ok then
    emit("result", B.group, name, B.impl, "-", "-", "error: " .. tostring(err))
    return
  end
  collectgarbage()
  local n = calibrate(loop)
  report(name, opts, per_iter(loop, n))
end

-- B.pair(name, a, b): two loops of one case whose ratio is the point (a tracked op and the
-- same op untracked), each given as {loop, impl = ..., note = ...} as for B.case. Their
-- repeats alternate (a, b, a, b, ...), so a change of the machine's load during the run
-- reaches both alike instead of one: on a shared VM, cases timed a second apart differed
-- by more than the effect measured.
function B.pair(name, a, b)
  local cases = { a, b }
  for _, c in ipairs(cases) do
    local ok, err = pcall(c[1], 1)
    if not ok then
      emit("result", B.group, name, c.impl or B.impl, "-", "-", "error: " .. tostring(err))
      return
    end
  end
  collectgarbage()
  local ns, ts = {}, { {}, {} }
  for i, c in ipairs(cases) do ns[i] = calibrate(c[1]) end
  for r = 1, REPEATS do
    for i, c in ipairs(cases) do ts[i][r] = time_once(c[1], ns[i]) / ns[i] * 1e9 end
  end
  for i, c in ipairs(cases) do report(name, c, best_median(ts[i])) end
end

-- B.once(name, fn [, {target_vs = "numpy", ratio = 1.0, note = "...", min_time = 0.2}]):
-- for ops that take milliseconds to seconds a call: fn() runs the op once; each repeat
-- runs it enough times to last min_time (0.05 s with BENCH_QUICK=1), wall time per call,
-- no loop overhead subtracted. target_vs: gpulua's time / that baseline's must be <= ratio.
function B.once(name, fn, opts)
  opts = opts or {}
  if opts.target_vs then B.target(name, opts.ratio or 1.0, opts.target_vs, opts.target_device) end
  local ok, err = pcall(fn)
  if not ok then
    emit("result", B.group, name, B.impl, "-", "-", "error: " .. tostring(err))
    return
  end
  local min_time = quick and 0.05 or (opts.min_time or 0.2)
  local once = function(n) for _ = 1, n do fn() end end
  local iters = math.max(1, math.ceil(min_time / math.max(time_once(once, 1), 1e-7)))
  local ts = {}
  for r = 1, REPEATS do
    collectgarbage()
    ts[r] = time_once(once, iters) / iters
  end
  table.sort(ts)
  emit("result", B.group, name, B.impl, ("%.1f"):format(ts[1] * 1e9), ("%.1f"):format(ts[(REPEATS + 1) // 2] * 1e9),
       opts.note or "")
  io.flush()
end

return B
