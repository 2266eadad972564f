-- gpu.check: the report behind `gpulua --check`.
--
-- require("gpu.check")() prints what the module was built with, whether CUDA
-- is usable (and why not), the devices, and the result of a tiny self-test
-- on each device; it returns true when every device passed.  Only the public
-- Lua API is used, so the report also works from a stock lua5.4 with gpu.so.

local gpu = require "gpu"

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

-- a nested table prints on one line, its own tables as {...}
local function inline(t)
  if next(t) == nil then return "-" end
  local parts = {}
  for _, k in ipairs(sorted_keys(t)) do
    local v = t[k]
    parts[#parts + 1] = tostring(k) .. "=" .. (type(v) == "table" and "{...}" or tostring(v))
  end
  return table.concat(parts, " ")
end

local function bytes(n)
  if type(n) ~= "number" then return "-" end
  if n >= 2^30 then return string.format("%.1f GiB", n / 2^30) end
  return string.format("%.0f MiB", n / 2^20)
end

local function capability(c)
  if type(c) == "table" then return table.concat(c, ".") end
  return c ~= nil and tostring(c) or "-"
end

local function deep_equal(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  if #a ~= #b then return false end
  for i = 1, #a do
    if not deep_equal(a[i], b[i]) then return false end
  end
  return true
end

-- raises on any fault; the caller reports it
local function selftest(dev)
  local x = gpu.array({1.5, 2, 3}, {device = dev})
  x:fill_(7)
  local got = x:to("cpu"):totable()
  if not deep_equal(got, {7, 7, 7}) then
    error("fill_(7) then to('cpu') gave {" .. inline(got) .. "}", 0)
  end
  local z = gpu.zeros({2, 3}, {device = dev, dtype = "float64"}):totable()
  if not deep_equal(z, {{0, 0, 0}, {0, 0, 0}}) then
    error("zeros({2, 3}) is not all zeros", 0)
  end
end

local function report_config()
  local ok, config = pcall(gpu.config)
  if not ok then
    print("config:   FAILED: " .. tostring(config))
    return 9
  end
  local keys, width = sorted_keys(config), 9
  for _, k in ipairs(keys) do width = math.max(width, #tostring(k) + 1) end
  for _, k in ipairs(keys) do
    local v = config[k]
    print(string.format("%-" .. width .. "s %s", tostring(k) .. ":",
                        type(v) == "table" and inline(v) or tostring(v)))
  end
  return width
end

local function check()
  print(string.format("gpulua %s (%s)", tostring(gpu.version), _VERSION))
  local width = report_config()

  local available, reason = gpu.is_available()
  print(string.format("%-" .. width .. "s %s", "cuda:", available and "available"
                      or "not available (" .. tostring(reason) .. ")"))

  local ok, devices = pcall(gpu.devices)
  if not ok then
    print("devices:  FAILED: " .. tostring(devices))
    return false
  end
  if #devices == 0 then
    print("devices:  none")
    return false
  end

  local all_passed = true
  print(string.format("%-3s %-8s %-28s %10s %5s  %s",
                      "#", "device", "name", "memory", "cap", "self-test"))
  for i, d in ipairs(devices) do
    local passed, err = pcall(selftest, d.device)
    all_passed = all_passed and passed
    print(string.format("%-3d %-8s %-28s %10s %5s  %s", i, tostring(d.device),
                        tostring(d.name), bytes(d.total_memory),
                        capability(d.capability),
                        passed and "ok" or "FAILED: " .. tostring(err)))
  end
  return all_passed
end

return require("gpu.options").counted("check", check)
