-- spec/fixture_cases.lua — runs the generic fixture cases of
-- tools/gen_reduce_more_fixtures.py (spec/reduce_more_spec.lua, spec/sets_spec.lua):
-- each case calls gpu[fn](args..., opts) on a device and compares every result with the
-- fixture's (the shape, the dtype, the values within a tolerance by dtype; NaN at NaN).
local h = require "spec.helper"
local gpu = h.gpu

local M = {}

-- a fixture value as the call takes it: arrays on dev (recursively in lists and options)
local function build(v, dev)
  if type(v) ~= "table" then return v end
  if v.array then
    local a = v.array
    return gpu.array(#a.data > 0 and a.data or {}, { dtype = v.dtype, device = dev }):reshape(a.shape)
  end
  local out = {}
  for k, x in pairs(v) do out[k] = build(x, dev) end
  return out
end
M.build = build

local TOL = { float64 = 1e-10, float32 = 1e-5, float16 = 1e-2 }

local function compare(got, want, where)
  if want.array then
    assert(h.gpu.methods and type(got) == "userdata", where .. ": expected an array, got " .. type(got))
    assert(got.dtype == want.dtype, ("%s: dtype %s, expected %s"):format(where, got.dtype, want.dtype))
    local w = build(want, "cpu")
    local ok, msg = h.close(got:to("cpu"), w, TOL[want.dtype] or 0)
    assert(ok, where .. ": " .. tostring(msg))
    return
  end
  assert(type(got) == "table", where .. ": expected a list, got " .. type(got))
  assert(#got == #want, ("%s: %d results in the list, expected %d"):format(where, #got, #want))
  for i = 1, #want do compare(got[i], want[i], where .. "[" .. i .. "]") end
end

-- run(cases, dev [, only]): every case (of the function only, if given) on dev
function M.run(cases, dev, only)
  local n = 0
  for i, c in ipairs(cases) do
    if only == nil or c.fn == only then
      local args = build(c.args, dev)
      if c.opts then args[c.n + 1] = build(c.opts, dev) end
      local res = table.pack(gpu[c.fn](table.unpack(args, 1, c.n + (c.opts and 1 or 0))))
      local where = ("%s case %d on %s"):format(c.fn, i, dev)
      assert(res.n == #c.outs, ("%s: %d results, expected %d"):format(where, res.n, #c.outs))
      for k = 1, #c.outs do compare(res[k], c.outs[k], where .. " result " .. k) end
      n = n + 1
    end
  end
  return n
end

-- the function names the cases hold, sorted
function M.names(cases)
  local seen, list = {}, {}
  for _, c in ipairs(cases) do
    if not seen[c.fn] then seen[c.fn] = true; list[#list + 1] = c.fn end
  end
  table.sort(list)
  return list
end

return M
