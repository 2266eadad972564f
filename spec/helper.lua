-- spec/helper.lua — shared by every spec: the module, the devices to test on, and
-- tolerant comparisons.  local h = require "spec.helper"
local gpu = require "gpu"
local M = { gpu = gpu }

-- Devices the op specs run on: each backend of the registry that has a device here (the
-- cpu, cuda when one answers, testcpu where GPULUA_TEST_BACKEND registers it: see
-- spec/registry_spec.lua). GPULUA_TEST_DEVICES (comma-separated, e.g. "cuda") restricts the
-- list (make test-gpu sets it).
function M.devices()
  local want = os.getenv("GPULUA_TEST_DEVICES")
  local list = {}
  for _, b in ipairs(gpu._devices()) do
    if b.count > 0 then list[#list + 1] = b.name end
  end
  if want and want ~= "" then
    local out = {}
    for d in want:gmatch("[^,]+") do
      for _, have in ipairs(list) do if have == d then out[#out + 1] = d end end
    end
    return out
  end
  return list
end

-- The dtype names in C's order (gpu._dtypes, the rows of kernels/dtypes.h): all of them,
-- or those of the kinds named ("bool", "uint", "int", "float"). dtype_set: the same as a
-- set (name -> true). A spec that loops over dtypes reads them here, so a new dtype is
-- tested wherever the others are.
function M.dtypes(...)
  local kinds = {}
  for _, k in ipairs { ... } do kinds[k] = true end
  local out = {}
  for _, row in ipairs(gpu._dtypes) do
    if next(kinds) == nil or kinds[row.kind] then out[#out + 1] = row.name end
  end
  return out
end

function M.dtype_set(...)
  local set = {}
  for _, name in ipairs(M.dtypes(...)) do set[name] = true end
  return set
end

-- Every dtype name but those given, in C's order (the dtypes a test does not apply to).
function M.dtypes_except(...)
  local skip = {}
  for _, name in ipairs { ... } do skip[assert(gpu._dtypes[name], name).name] = true end
  local out = {}
  for _, name in ipairs(M.dtypes()) do if not skip[name] then out[#out + 1] = name end end
  return out
end

-- Asserts that 'data', a table of expected values keyed by dtype name, has an entry for
-- every dtype C has (or every one of the kinds named, as M.dtypes), so a dtype added to
-- kernels/dtypes.h fails here until it is given one.
function M.assert_covers_dtypes(data, what, ...)
  for _, name in ipairs(M.dtypes(...)) do
    assert(data[name] ~= nil, (what or "the data") .. " has no entry for dtype " .. name)
  end
end

-- A complex scalar (gpu.complex(re, im), an element of a complex array).
local COMPLEX = getmetatable(gpu.complex(0, 0))
local function is_complex_scalar(v) return getmetatable(v) == COMPLEX end
M.is_complex_scalar = is_complex_scalar

-- Flattens an array, a nested table or a number into a flat list of numbers/booleans
-- (complex scalars for a complex array).
local function flat(x, out)
  out = out or {}
  if type(x) == "userdata" and not is_complex_scalar(x) then x = x:totable() end
  if type(x) == "table" then
    for _, v in ipairs(x) do flat(v, out) end
  else
    out[#out + 1] = x
  end
  return out
end
M.flat = flat

local function num_close(a, b, tol)
  if type(a) == "boolean" or type(b) == "boolean" then return a == b end
  if is_complex_scalar(a) or is_complex_scalar(b) then      -- each part (a number: im 0)
    local ar, ai = is_complex_scalar(a) and a.re or a, is_complex_scalar(a) and a.im or 0
    local br, bi = is_complex_scalar(b) and b.re or b, is_complex_scalar(b) and b.im or 0
    return num_close(ar, br, tol) and num_close(ai, bi, tol)
  end
  if a ~= a then return b ~= b end                       -- NaN in the same places
  if a == b then return true end                         -- also equal infinities
  if a == math.huge or a == -math.huge or b == math.huge or b == -math.huge then return false end
  return math.abs(a - b) <= tol * (1 + math.abs(b))
end

-- close(a, b [, tol]): same shape (when both are arrays) and elements equal within
-- tol (relative + absolute). Returns true, or false and a message.
function M.close(a, b, tol)
  tol = tol or 1e-6
  if type(a) == "userdata" and type(b) == "userdata" and not is_complex_scalar(a) and not is_complex_scalar(b) then
    local sa, sb = table.concat(a.shape, ","), table.concat(b.shape, ",")
    if sa ~= sb then return false, ("shapes (%s) and (%s) differ"):format(sa, sb) end
  end
  local fa, fb = flat(a), flat(b)
  if #fa ~= #fb then return false, ("sizes %d and %d differ"):format(#fa, #fb) end
  for i = 1, #fa do
    if not num_close(fa[i], fb[i], tol) then
      return false, ("element %d: %s vs %s (tol %g)"):format(i, tostring(fa[i]), tostring(fb[i]), tol)
    end
  end
  return true
end

-- assert_close(a, b [, tol]) for use inside it() blocks.
function M.assert_close(a, b, tol)
  local ok, msg = M.close(a, b, tol)
  assert(ok, msg)
end

-- parity(fn, inputs [, tol]): runs fn on copies of the inputs on every device and
-- compares each device's result with the cpu's.
function M.parity(fn, inputs, tol)
  local ref
  for _, d in ipairs(M.devices()) do
    local args = {}
    for i, x in ipairs(inputs) do args[i] = type(x) == "userdata" and x:to(d) or x end
    local r = fn(table.unpack(args))
    if type(r) == "userdata" then r = r:to("cpu") end
    if ref == nil then ref = r else M.assert_close(r, ref, tol) end
  end
end

-- first_derivative(fn, inputs) -> first: first(x) is the gradient of a fixed weighting of
-- fn(x, inputs[2], ...) (a complex result weighted through its real pairs) with respect to
-- x, recorded (create_graph) also when called under no_grad: what a second-derivative check
-- hands to gradcheck, with first(inputs[1]) the first derivative itself.
function M.first_derivative(fn, inputs)
  local ag = require "gpu.autograd"
  local function reals(y) return gpu._dtypes[y.dtype].kind == "complex" and gpu.view_as_real(y) or y end
  local rest = { table.unpack(inputs, 2) }
  local y0 = reals(fn(table.unpack(inputs)))
  local w = gpu.random.Generator(3):uniform(0.5, 1.5, y0.shape, { dtype = "float64", device = y0.device })
  return function(x)
    return ag.enable_grad(function()
      return ag.grad((reals(fn(x, table.unpack(rest))) * w):sum(), x, { create_graph = true })
    end)
  end
end

-- fails(pieces, fn, ...): pcall(fn, ...) must fail with a message holding every piece
-- (plain text, not patterns); returns the message.
function M.fails(pieces, fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then error("expected an error", 2) end
  err = tostring(err)
  for _, p in ipairs(pieces) do
    if not err:find(p, 1, true) then error(("message %q lacks %q"):format(err, p), 2) end
  end
  return err
end

-- slurp(path): the file's bytes (an error if it cannot be read); spit(path, s) writes s.
function M.slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

function M.spit(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

-- values(dt, n, seed): n deterministic values of dtype dt on the cpu, in a few magnitudes
-- (floats in [-4, 4), integers in [-20, 20), uint8 around 128, bools about half true).
function M.values(dt, n, seed)
  local x = gpu.arange(n, { device = "cpu", dtype = "float64" })
  x = ((x * 0.7548776662 + seed * 0.1) % 1.0 - 0.5) * 8      -- in [-4, 4)
  if dt == "bool" then return x:gt(0) end
  if dt == "uint8" then return (x * 30 + 128):astype("uint8") end
  if dt:match("int") then return (x * 5):astype(dt) end
  return x:astype(dt)
end

-- tmpdir(): a new empty folder, and a function that names a file in it: name(s) given
-- as is, or (with no name) "<prefix><n>.<ext>" numbered from 1.
function M.tmpdir(prefix)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. dir))
  local n = 0
  return dir, function(name_or_ext, ext)
    if prefix == nil then return dir .. "/" .. name_or_ext end
    n = n + 1
    return ("%s/%s%d.%s"):format(dir, prefix, n, name_or_ext or ext or "png")
  end
end

-- Runs a shell command; returns its exit status, stdout and stderr.
function M.run(cmd)
  local out, err = os.tmpname(), os.tmpname()
  local ok, _, code = os.execute(cmd .. " >" .. out .. " 2>" .. err)
  local function take(p) local s = M.slurp(p); os.remove(p); return s end
  return ok and 0 or code, take(out), take(err)
end

-- threads_ok(source): runs the Lua source in a child gpulua (GPULUA_BIN, which make test
-- sets) with one and with two OpenMP threads; each run must exit 0 and print "ok" (what it
-- prints instead is the failure's message). false when there is no GPULUA_BIN (the caller
-- marks its spec pending).
function M.threads_ok(source)
  local bin = os.getenv("GPULUA_BIN")
  if not bin then return false end
  local f = os.tmpname()
  local fh = assert(io.open(f, "w"))
  fh:write(source)
  fh:close()
  for _, threads in ipairs({ 1, 2 }) do
    local rc, stdout, stderr = M.run("OMP_NUM_THREADS=" .. threads .. " " .. bin .. " " .. f)
    if rc ~= 0 or stdout ~= "ok" then
      os.remove(f)
      error(("%d thread(s): exit %s, %s%s"):format(threads, tostring(rc), stdout, stderr), 2)
    end
  end
  os.remove(f)
  return true
end

return M
