-- gpu.profile(fn [, opts]) — runs fn once and reports, per op, how often it was called,
-- the host time, the device time and the bytes copied between host and device, sorted
-- by time (the busiest op first). The report is printed and returned, followed by fn's
-- own results:
--
--   local report = gpu.profile(function()
--     local c = a:matmul(b)
--     return (c + 1):sum()
--   end)
--   -- gpu.profile on cpu: 3 ops, 3 calls, 12.851 ms host
--   -- op              calls     host ms   device ms       bytes
--   -- matmul              1      12.510           -           0
--   -- ...
--   report.rows[1].name, report.ops.matmul.calls, report.total.host_ms
--
-- How: during fn the module's functions (gpu.f, gpu.random.f, ...), the array methods
-- (x:f) and the array metamethods (operators, x[i], x[i] = v, tostring) are replaced by
-- wrappers that time each call; everything is put back when fn returns or raises (the
-- error then goes on, unchanged). Only the outermost op of a nest is counted, so Lua
-- parts that call other ops are not counted twice. Host time is gpu.clock around the
-- call; on a GPU the device time is between two gpu.event records around it, and the
-- profiler waits for the second one, so every op is synchronised (a profiled run is
-- slower than a plain one; compare ops with each other, not with gpu.bench). Bytes are
-- the growth of gpu.stats()'s h2d, d2h and d2d byte counters during the call.
--
-- opts: quiet (no printing), args (a table of arguments for fn), device (whose events
-- time the device; default gpu.device()).
local gpu = require "gpu"
local options = require "gpu.options"

-- not ops: the clock, the counters and the machinery that reads them
local SKIP = {
  profile = true, range = true, bench = true, check = true, clock = true, event = true,
  stats = true, reset_stats = true, synchronize = true, device = true, set_device = true,
  is_available = true, device_count = true, devices = true, memory = true,
  memory_allocated = true, max_memory_allocated = true, memory_reserved = true, terminal_size = true,
  empty_cache = true, config = true, methods = true, version = true,
}

local META = {
  "__add", "__sub", "__mul", "__div", "__idiv", "__mod", "__pow", "__unm", "__band",
  "__bor", "__bxor", "__shl", "__shr", "__bnot", "__lt", "__le", "__len", "__index",
  "__newindex", "__tostring",
}
local META_LABEL = {
  __add = "+", __sub = "-", __mul = "*", __div = "/", __idiv = "//", __mod = "%",
  __pow = "^", __unm = "unary -", __band = "&", __bor = "|", __bxor = "~", __shl = "<<",
  __shr = ">>", __bnot = "unary ~", __lt = "<", __le = "<=", __len = "#x",
  __index = "x[i]", __newindex = "x[i] = v", __tostring = "tostring",
}

local KEYWORDS = {}
for w in ([[and break do else elseif end false for function goto if in local nil not or
            repeat return then true until while]]):gmatch("%a+") do KEYWORDS[w] = true end

-- A wrapper calls the original through a local named after the op, so an error raised
-- inside it still reads "bad argument #1 to 'matmul' (...)". One compiled factory per
-- name, kept for later profiles.
local factories = {}
local TEMPLATE = [[
local %s, prof, label = ...
local pass = prof.pass
return function(...)
  if prof.depth > 0 then return pass(%s(...)) end
  local guard <close> = prof.guard
  prof.depth = 1
  local s0, t0 = prof.before()
  return prof.after(label, s0, t0, %s(...))
end
]]

local function factory(name)
  if not name:match("^[%a_][%w_]*$") or KEYWORDS[name] then name = "op" end
  local f = factories[name]
  if not f then
    f = assert(load(TEMPLATE:format(name, name, name), "=gpu.profile(" .. name .. ")"))
    factories[name] = f
  end
  return f
end

local function moved(s)
  return s.h2d_bytes + s.d2h_bytes + s.d2d_bytes
end

local function fmt_ms(v) return v and ("%11.3f"):format(v) or ("%11s"):format("-") end

local report_mt = {
  __tostring = function(r)
    local lines = {}
    local head = ("gpu.profile on %s: %d ops, %d calls, %.3f ms host"):format(
      r.device, #r.rows, r.total.calls, r.total.host_ms)
    if r.total.device_ms then head = head .. (", %.3f ms device"):format(r.total.device_ms) end
    lines[1] = head .. (", %d bytes moved"):format(r.total.bytes)
    local width = 14
    for _, row in ipairs(r.rows) do width = math.max(width, #row.name) end
    lines[2] = ("%-" .. width .. "s %7s %11s %11s %13s"):format("op", "calls", "host ms", "device ms", "bytes")
    for _, row in ipairs(r.rows) do
      lines[#lines + 1] = ("%-" .. width .. "s %7d %s %s %13d"):format(
        row.name, row.calls, fmt_ms(row.host_ms), fmt_ms(row.device_ms), row.bytes)
    end
    return table.concat(lines, "\n")
  end,
}

local function is_callable(f)
  return type(f) == "function" or (type(f) == "table" and (getmetatable(f) or {}).__call ~= nil)
end

local PROFILE = options.declare("profile", {
  quiet = { type = "boolean", default = false }, args = { type = "table", default = {} }, device = "device",
}, { example = "gpu.profile(function() end, %s)" })

local function profile(fn, opts)
  if not is_callable(fn) then
    error(("bad argument #1 to 'profile' (function expected, got %s)"):format(type(fn)), 2)
  end
  opts = PROFILE:check(opts, 2)
  local args = opts.args
  local device = opts.device or gpu.device()
  local on_gpu = device ~= "cpu"
  local e0, e1
  if on_gpu then e0, e1 = gpu.event(device), gpu.event(device) end

  local clock, stats = gpu.clock, gpu.stats
  local rows = {}            -- label -> row
  local prof = { depth = 0 }
  prof.guard = setmetatable({}, { __close = function() prof.depth = 0 end })
  function prof.pass(...) return ... end
  function prof.before()
    local s0 = moved(stats())
    if on_gpu then e0:record() end
    return s0, clock()
  end
  function prof.after(label, s0, t0, ...)
    local t1 = clock()
    local dev_ms
    if on_gpu then e1:record(); dev_ms = e0:elapsed(e1) end
    local row = rows[label]
    if not row then
      row = { name = label, calls = 0, host_ms = 0, device_ms = on_gpu and 0 or nil, bytes = 0 }
      rows[label] = row
    end
    row.calls = row.calls + 1
    row.host_ms = row.host_ms + (t1 - t0) * 1e3
    if dev_ms then row.device_ms = row.device_ms + dev_ms end
    row.bytes = row.bytes + (moved(stats()) - s0)
    return ...
  end

  -- swap in the wrappers, remembering what to put back
  local saved = {}
  local function wrap(t, key, label)
    local orig = rawget(t, key)
    if type(orig) ~= "function" then return end
    saved[#saved + 1] = { t, key, orig }
    local w = factory(key:gsub("^__", ""))(orig, prof, label)
    if key == "__index" then        -- method and property look-ups are not ops
      local op = w
      w = function(x, k)
        if type(k) == "string" and k ~= ":" then return orig(x, k) end
        return op(x, k)
      end
    end
    rawset(t, key, w)
  end
  local names = {}
  for k in pairs(gpu) do names[#names + 1] = k end
  for _, k in ipairs(names) do
    local v = rawget(gpu, k)
    if type(k) == "string" and not SKIP[k] then
      if type(v) == "function" then
        wrap(gpu, k, k)
      elseif type(v) == "table" and getmetatable(v) == nil then   -- gpu.random, gpu.linalg
        local sub = {}
        for sk in pairs(v) do sub[#sub + 1] = sk end
        for _, sk in ipairs(sub) do
          if type(sk) == "string" then wrap(v, sk, k .. "." .. sk) end
        end
      end
    end
  end
  local methods = rawget(gpu, "methods")
  local mnames = {}
  for k in pairs(methods) do mnames[#mnames + 1] = k end
  for _, k in ipairs(mnames) do
    if type(k) == "string" and not SKIP[k] then wrap(methods, k, k) end
  end
  for _, mt in ipairs(gpu._metatables) do      -- both kinds of array (larray.c's light ones)
    for _, k in ipairs(META) do wrap(mt, k, META_LABEL[k]) end
  end

  local function restore()
    for i = #saved, 1, -1 do
      local s = saved[i]
      rawset(s[1], s[2], s[3])
    end
  end
  local t_start = clock()
  local res = table.pack(pcall(fn, table.unpack(args)))
  local wall = (clock() - t_start) * 1e3
  restore()
  if not res[1] then error(res[2], 0) end

  local list, total = {}, { calls = 0, host_ms = 0, device_ms = on_gpu and 0 or nil, bytes = 0, wall_ms = wall }
  for _, row in pairs(rows) do
    list[#list + 1] = row
    total.calls = total.calls + row.calls
    total.host_ms = total.host_ms + row.host_ms
    if on_gpu then total.device_ms = total.device_ms + row.device_ms end
    total.bytes = total.bytes + row.bytes
  end
  table.sort(list, function(a, b)
    local ta, tb = a.device_ms or a.host_ms, b.device_ms or b.host_ms
    if ta ~= tb then return ta > tb end
    return a.name < b.name
  end)
  local report = setmetatable({ rows = list, total = total, device = device }, report_mt)
  report.ops = {}
  for _, row in ipairs(list) do report.ops[row.name] = row end
  if not opts.quiet then print(tostring(report)) require("gpu.repl").printed(report) end
  return report, table.unpack(res, 2, res.n)
end

return options.counted("profile", profile)
