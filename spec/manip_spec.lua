-- The joining, splitting, building and indexing routines of lua/gpu/routines/manip.lua
-- (vstack ... select) and take's modes against NumPy (spec/fixtures/manip/cases.lua, made by
-- spec/fixtures/gen_manip_fixtures.py) on every device: values, dtypes, shapes, the
-- 1-based positions; then default dtypes, views, methods, gradients and every misuse's
-- error (an in-place routine that raises leaves its array unchanged).
local h = require "spec.helper"
local gpu = h.gpu
local ag = require "gpu.autograd"
local options = require "gpu.options"
local CASES = require "spec.fixtures.manip.cases"

local function is_fixture_array(t) return type(t) == "table" and t.dtype ~= nil and t.shape ~= nil and t.data ~= nil end

-- a fixture value with its arrays made on dev
local function decode(v, dev)
  if is_fixture_array(v) then
    return gpu.array(#v.data > 0 and v.data or {}, { dtype = v.dtype, device = dev }):reshape(v.shape)
  end
  if type(v) == "table" then
    local out = {}
    for k, x in pairs(v) do out[k] = decode(x, dev) end
    return out
  end
  return v
end

local function same(got, want, what)
  assert(options.is_array(got), what .. ": expected a gpu.array, got " .. type(got))
  assert(got.dtype == want.dtype, ("%s: dtype %s, NumPy's %s"):format(what, got.dtype, want.dtype))
  local ok, msg = h.close(got:to("cpu"), decode(want, "cpu"), 1e-12)
  assert(ok, what .. ": " .. tostring(msg))
end

local FUNS = {
  lin = function(i, j) return i * 10 + j end,
  poly = function(i, j) return i * i - 3 * j end,
  one = function(i) return i * 0.5 end,
}
-- the routines that make arrays: they take {device =} (and the fixtures' dtype)
local CREATES = { logspace = true, geomspace = true, tri = true, indices = true, fromfunction = true,
  tril_indices = true, triu_indices = true, diag_indices = true }
local IN_PLACE = { put = true, putmask = true, place = true, fill_diagonal = true }

local function run_case(c, dev)
  if c.fn == "mgrid" or c.fn == "ogrid" then
    local args = {}
    for i, r in ipairs(c.ranges) do
      args[i] = { table.unpack(r.r) }
      args[i].num = r.num
    end
    args[#args + 1] = { dtype = c.float and "float64" or nil, device = dev }
    return table.pack(gpu[c.fn](table.unpack(args)))
  end
  local args, n = decode(c.args, dev), c.n
  if c.fn == "fromfunction" then args[1] = FUNS[args[1]] end
  if c.opts or CREATES[c.fn] then
    local o = decode(c.opts or {}, dev)
    if CREATES[c.fn] then o.device = dev end
    n = n + 1
    args[n] = o
  end
  local r = table.pack(gpu[c.fn](table.unpack(args, 1, n)))
  if IN_PLACE[c.fn] then
    assert(rawequal(r[1], args[1]), c.fn .. " returns its array")
  end
  return r
end

local function check_case(i, c, dev)
  local what = ("case %d (%s) on %s"):format(i, c.fn, dev)
  local r = run_case(c, dev)
  if c.out then
    assert(r.n == 1, what .. ": one result expected, got " .. r.n)
    same(r[1], c.out, what)
  elseif c.list then
    assert(type(r[1]) == "table" and not options.is_array(r[1]), what .. ": a list expected")
    assert(#r[1] == #c.list, ("%s: %d pieces, NumPy %d"):format(what, #r[1], #c.list))
    for k, want in ipairs(c.list) do same(r[1][k], want, what .. " piece " .. k) end
  elseif c.multi then
    assert(r.n == #c.multi, ("%s: %d results, NumPy %d"):format(what, r.n, #c.multi))
    for k, want in ipairs(c.multi) do
      if c.kind == "numbers" then
        assert(math.type(r[k]) == "integer" and r[k] == want, ("%s: result %d is %s, NumPy %s"):format(what, k, tostring(r[k]), tostring(want)))
      else
        same(r[k], want, what .. " result " .. k)
      end
    end
  elseif c.kind == "shape" then
    assert.same(c.value, r[1], what)
  else
    assert(math.type(r[1]) == "integer" and r[1] == c.value, ("%s: %s, NumPy %s"):format(what, tostring(r[1]), tostring(c.value)))
  end
end

describe("manip routines against NumPy", function()
  it("cover every routine of the part", function()
    local have = {}
    for _, c in ipairs(CASES) do have[c.fn] = true end
    for name, f in pairs(require("gpu.routines.manip")) do
      if type(f) == "function" then assert(have[name], "no NumPy fixture for " .. name) end
    end
  end)
  for _, dev in ipairs(h.devices()) do
    it("give NumPy's results on " .. dev, function()
      local bad = {}
      for i, c in ipairs(CASES) do
        local ok, err = pcall(check_case, i, c, dev)
        if not ok then bad[#bad + 1] = tostring(err) end
      end
      assert(#bad == 0, #bad .. " cases differ:\n" .. table.concat(bad, "\n"))
    end)
  end
end)

describe("manip routines", function()
  it("make the library's default float dtype where NumPy makes float64, int64 indices", function()
    local f = gpu.empty(0).dtype
    assert.equal(f, gpu.logspace(0, 1, 3).dtype)
    assert.equal(f, gpu.geomspace(1, 8, 4).dtype)
    assert.equal(f, gpu.tri(3).dtype)
    assert.equal(f, gpu.mgrid({ 0, 1, num = 3 }).dtype)
    assert.equal(f, gpu.fromfunction(function(i) return i end, { 3 }).dtype)
    assert.equal("int64", gpu.mgrid({ 0, 3 }).dtype)
    assert.equal("int64", gpu.indices({ 2 }).dtype)
    assert.equal("bool", gpu.tri(2, 2, 0, { dtype = "bool" }).dtype)
    assert.equal(50, gpu.logspace(0, 1).size)
    assert.equal(50, gpu.geomspace(1, 2).size)
  end)

  it("give views where NumPy does (the splits, flips, rollaxis, trim_zeros)", function()
    local x = gpu.arange(8, { dtype = "float64" })
    local parts = gpu.array_split(x, { 3 })
    parts[2][1] = 100
    assert.equal(100, x[3])
    gpu.fliplr(x:reshape(2, 4))[{ 1, 1 }] = -1
    assert.equal(-1, x[4])
    local t = gpu.trim_zeros(gpu.array({ 0, 5, 0 }))
    assert.same({ 5 }, t:totable())
  end)

  it("write through a non-contiguous view into its base (put, putmask, place, fill_diagonal)", function()
    for _, dev in ipairs(h.devices()) do
      local base = gpu.zeros({ 3, 4 }, { dtype = "float64", device = dev })
      local t = base.T                                       -- (4, 3), not contiguous
      gpu.fill_diagonal(t, 1)
      gpu.put(t, { 4 }, 7)                                   -- t[2][1] = base[1][2]
      gpu.putmask(t, t:eq(1), 2)
      gpu.place(t, t:eq(0), { 0, 0, 0, 0, 0, 0, 5, 0 })     -- the 7th of t's 8 zeros: t[4][2]
      assert.same({ { 2, 7, 0, 0 }, { 0, 2, 0, 5 }, { 0, 0, 2, 0 } }, base:totable(), dev)
    end
  end)

  it("are methods where NumPy or PyTorch has them", function()
    local x = gpu.arange(6):reshape(2, 3)
    assert.same({ { 2, 1, 0 }, { 5, 4, 3 } }, x:fliplr():totable())
    assert.same({ { 3, 4, 5 }, { 0, 1, 2 } }, x:flipud():totable())
    assert.equal(3, #x:hsplit(3))
    assert.equal(2, #x:vsplit(2))
    assert.equal(2, #gpu.zeros(1, 1, 4):dsplit(2))
    local y = gpu.zeros(3)
    assert.equal(y, y:put(2, 5))
    assert.same({ 0, 5, 0 }, y:totable())
    assert.same({ 10, 2 }, gpu.array({ 2, 1 }, { dtype = "int64" }):choose({ gpu.array({ 1, 2 }), gpu.array({ 10, 20 }) }):totable())
  end)

  it("join arrays of several dtypes and devices as concat does", function()
    local a = gpu.array({ 1, 2 }, { dtype = "int32" })
    assert.equal("float64", gpu.vstack({ a, gpu.array({ 1, 2 }, { dtype = "float64" }) }).dtype)
    assert.equal("int32", gpu.hstack({ a, a }).dtype)
    assert.equal("bool", gpu.column_stack({ a:gt(1), a:gt(0) }).dtype)
  end)

  it("choose, select and put in every dtype", function()
    for _, dt in ipairs(h.dtypes("bool", "uint", "int", "float")) do
      local one = gpu.ones(3, { dtype = dt })
      local zero = gpu.zeros(3, { dtype = dt })
      local r = gpu.choose(gpu.array({ 1, 2, 1 }, { dtype = "int64" }), { zero, one })
      assert.equal(dt, r.dtype)
      assert.same({ false, true, false }, r:astype("bool"):totable(), dt)
      local s = gpu.select({ gpu.array({ true, false, true }) }, { one }, zero)
      assert.equal(dt, s.dtype)
      local p = gpu.zeros(3, { dtype = dt })
      gpu.put(p, { 3 }, one)
      assert.same({ false, false, true }, p:astype("bool"):totable(), dt)
    end
  end)
end)

describe("manip gradients (float64)", function()
  local function r(...) return gpu.random.randn({ ... }, { dtype = "float64", device = "cpu" }) end
  local function check(fn, inputs)
    local ok, msg = ag.gradcheck(fn, inputs)
    assert(ok, msg)
  end
  it("flow through the joins, splits, inserts, deletes, resize, choices and take's modes", function()
    check(function(a, b) return gpu.vstack({ a, b }) end, { r(3), r(2, 3) })
    check(function(a, b) return gpu.hstack({ a, b }) end, { r(2, 1), r(2, 2) })
    check(function(a, b) return gpu.dstack({ a, b }) end, { r(2), r(2) })
    check(function(a, b) return gpu.column_stack({ a, b }) end, { r(2), r(2, 2) })
    check(function(a, b, c) return gpu.block({ { a, b }, { c } }) end, { r(1, 2), r(1, 1), r(2, 3) })
    check(function(a) return gpu.array_split(a, { 2, 4 })[2] end, { r(5) })
    check(function(a) return gpu.vsplit(a, 2)[2] end, { r(4, 2) })
    check(function(a, v) return gpu.insert(a, { 1, 3 }, v, 2) end, { r(2, 3), r(2, 2) })
    check(function(a) return gpu.delete(a, { 2 }, 1) end, { r(3, 2) })
    check(function(a, b) return gpu.append(a, b) end, { r(2, 2), r(3) })
    check(function(a) return gpu.resize(a, { 3, 3 }) end, { r(2, 2) })
    check(function(a) return gpu.rollaxis(a, 3) end, { r(2, 3, 2) })
    check(function(a) return gpu.diagflat(a, 1) end, { r(2, 2) })
    check(function(a) return gpu.compress({ true, false, true }, a, 2) end, { r(2, 3) })
    local k = gpu.array({ { 1, 2 }, { 2, 1 } }, { dtype = "int64" })
    check(function(a, b) return gpu.choose(k, { a, b }) end, { r(2, 2), r(2, 2) })
    check(function(a, b) return gpu.select({ a:gt(0) }, { a }, b) end, { r(3), r(3) })
    local w = gpu.array({ 7, 0, -1, -6, 3, 7 }, { dtype = "int64" })
    check(function(a) return gpu.take(a, w, { mode = "wrap" }) end, { r(5) })
    check(function(a) return gpu.take(a, w, 2, { mode = "clip" }) end, { r(2, 5) })
    check(function(a) return gpu.fromfunction(function(i, j) return a * i + j end, { 2, 2 }, { dtype = "float64" }) end, { r(2, 2) })
  end)
end)

describe("manip misuse", function()
  local x = gpu.arange(6, { dtype = "float64" }):reshape(2, 3)
  local i64 = function(t) return gpu.array(t, { dtype = "int64" }) end

  it("names the routine and the fault", function()
    local F = h.fails
    F({ "vstack", "arrays must be a table" }, gpu.vstack, x)
    F({ "vstack", "need at least one array" }, gpu.vstack, {})
    F({ "vstack", "entry 2 is nil" }, gpu.vstack, { x, nil, x })
    F({ "hstack", "entry 2", "gpu.array expected, got integer 3" }, gpu.hstack, { x, 3 })
    F({ "vstack", "entry 2 has shape (1, 4)", "must agree" }, gpu.vstack, { x, gpu.zeros(4) })
    F({ "dstack", "must agree" }, gpu.dstack, { x, gpu.zeros(3, 2) })
    F({ "column_stack", "at most 1 argument" }, gpu.column_stack, { x }, 1)
    F({ "block", "list depths are mismatched" }, gpu.block, { x, { x } })
    F({ "block", "is empty" }, gpu.block, { {} })
    F({ "block", "must agree" }, gpu.block, { { x, gpu.zeros(3, 1) } })
    F({ "array_split", "at least 1" }, gpu.array_split, x, 0)
    F({ "array_split", "at most 1048576 sections" }, gpu.array_split, x, (1 << 53) + 1)
    F({ "unravel_index", "too many elements" }, gpu.unravel_index, 1, { 1 << 40, 1 << 40 })
    F({ "compress", "gpu.array expected" }, gpu.compress, { true }, { 1 })
    F({ "array_split", "positions are 1-based" }, gpu.array_split, x, { 0 })
    F({ "array_split", "entry 1 must be an integer" }, gpu.array_split, x, { 1.5 })
    F({ "array_split", "out of range" }, gpu.array_split, x, 2, 3)
    F({ "hsplit", "does not split into 2 equal" }, gpu.hsplit, x, 2)
    F({ "hsplit", "at least 1 axis" }, gpu.hsplit, gpu.array(1), 1)
    F({ "vsplit", "at least 2 axes" }, gpu.vsplit, gpu.zeros(4), 2)
    F({ "dsplit", "at least 3 axes" }, gpu.dsplit, x, 1)
    F({ "append", "values have 1 axes, arr 2" }, gpu.append, x, gpu.zeros(3), 1)
    F({ "append", "must be a gpu.array or a number" }, gpu.append, x, "a")
    F({ "insert", "position 5 is out of range" }, gpu.insert, x, 5, 1, 2)
    F({ "insert", "0 is not a position" }, gpu.insert, x, 0, 1)
    F({ "insert", "do not broadcast" }, gpu.insert, x, { 1, 2 }, gpu.zeros(3), 2)
    F({ "insert", "obj entry 1 must be an integer" }, gpu.insert, x, { "a" }, 1)
    F({ "insert", "integer array" }, gpu.insert, x, gpu.zeros(1), 1)
    F({ "delete", "out of range" }, gpu.delete, x, 4, 2)
    F({ "delete", "out of range" }, gpu.delete, x, i64({ 1, 0 }))
    F({ "delete", "integer or bool array" }, gpu.delete, x, gpu.zeros(1))
    F({ "delete", "bool obj must be 1-D" }, gpu.delete, x, gpu.array({ true }), 1)
    F({ "resize", "must be a size >= 0" }, gpu.resize, x, { -1 })
    F({ "trim_zeros", "1-D" }, gpu.trim_zeros, x)
    F({ "trim_zeros", "string of 'f' and 'b'" }, gpu.trim_zeros, gpu.zeros(2), "x")
    F({ "fliplr", "at least 2 axes" }, gpu.fliplr, gpu.zeros(2))
    F({ "flipud", "at least 1 axis" }, gpu.flipud, gpu.array(1))
    F({ "rollaxis", "start 5 is out of range" }, gpu.rollaxis, x, 1, 5)
    F({ "rollaxis", "axis 3 is out of range" }, gpu.rollaxis, x, 3)
    F({ "broadcast_shapes", "does not broadcast" }, gpu.broadcast_shapes, { 2 }, { 3 })
    F({ "broadcast_shapes", "size >= 0" }, gpu.broadcast_shapes, { -2 })
    F({ "logspace", "start must be a number" }, gpu.logspace, "a", 1)
    F({ "logspace", "unknown option 'bse'; did you mean 'base'?" }, gpu.logspace, 0, 1, 3, { bse = 2 })
    F({ "logspace", "num must be >= 0" }, gpu.logspace, 0, 1, -1)
    F({ "geomspace", "cannot include zero" }, gpu.geomspace, 0, 1)
    F({ "tri", "N must be an integer" }, gpu.tri, 1.5)
    F({ "tri", "sizes must be >= 0" }, gpu.tri, -1)
    F({ "tri", "unknown option" }, gpu.tri, 2, 2, 0, { dtyp = "float64" })
    F({ "diagflat", "gpu.array expected" }, gpu.diagflat, { 1, 2 })
    F({ "indices", "size >= 0" }, gpu.indices, { 2, -1 })
    F({ "indices", "option 'sparse' must be a boolean" }, gpu.indices, { 2 }, { sparse = 1 })
    F({ "mgrid", "at least one range" }, gpu.mgrid)
    F({ "mgrid", "step must not be zero" }, gpu.mgrid, { 0, 3, 0 })
    F({ "ogrid", "a range must be" }, gpu.ogrid, "a")
    F({ "mgrid", "give a step or num" }, gpu.mgrid, { 0, 3, 1, num = 2 })
    F({ "fromfunction", "f must be a function" }, gpu.fromfunction, 3, { 2 })
    F({ "unravel_index", "out of bounds" }, gpu.unravel_index, 7, { 2, 3 })
    F({ "unravel_index", "out of bounds" }, gpu.unravel_index, i64({ 1, 0 }), { 2, 3 })
    F({ "unravel_index", "integer array" }, gpu.unravel_index, gpu.zeros(2), { 2, 3 })
    F({ "unravel_index", "option 'order'" }, gpu.unravel_index, 1, { 2 }, { order = "K" })
    F({ "ravel_multi_index", "out of range 1 .. 3" }, gpu.ravel_multi_index, { 1, 4 }, { 2, 3 })
    F({ "ravel_multi_index", "multi_index has 1 entries, dims 2" }, gpu.ravel_multi_index, { 1 }, { 2, 3 })
    F({ "ravel_multi_index", "option 'mode'" }, gpu.ravel_multi_index, { 1, 1 }, { 2, 3 }, { mode = "wrp" })
    F({ "tril_indices", "n must be an integer" }, gpu.tril_indices, "3")
    F({ "triu_indices", "sizes must be >= 0" }, gpu.triu_indices, 3, 0, -1)
    F({ "diag_indices", "ndim must be in" }, gpu.diag_indices, 3, -1)
    F({ "ix_", "cross index must be 1-D" }, gpu.ix_, x)
    F({ "ix_", "integers or bools" }, gpu.ix_, gpu.zeros(2))
    F({ "compress", "past the axis' length" }, gpu.compress, { false, false, false, true }, x, 2)
    F({ "compress", "bool array" }, gpu.compress, gpu.zeros(2), x)
    F({ "compress", "entry 1 must be a boolean" }, gpu.compress, { 1 }, x)
    F({ "choose", "a out of range 1 .. 2" }, gpu.choose, i64({ 3 }), { 1, 2 })
    F({ "choose", "a out of range" }, gpu.choose, i64({ 0 }), { 1, 2 })
    F({ "choose", "integer array" }, gpu.choose, gpu.zeros(1), { 1, 2 })
    F({ "choose", "choices must not be empty" }, gpu.choose, i64({ 1 }), {})
    F({ "choose", "option 'mode'" }, gpu.choose, i64({ 1 }), { 1 }, { mode = "x" })
    F({ "select", "must agree" }, gpu.select, { x:gt(1) }, { x, x })
    F({ "select", "condition 1 must be a bool array" }, gpu.select, { x }, { x })
    F({ "select", "empty condition list" }, gpu.select, {}, {})
    F({ "take", "option 'mode' must be one of raise, wrap, clip" }, gpu.take, x, i64({ 1 }), { mode = "wrp" })
    F({ "take", "cannot take from an empty axis" }, gpu.take, gpu.zeros(0), i64({ 1 }), { mode = "wrap" })
    F({ "take", "nothing may follow the options table" }, gpu.take, x, i64({ 1 }), { mode = "clip" }, 1)
    F({ "take", "index 7 is out of range" }, gpu.take, x, i64({ 7 }), nil, { mode = "raise" })
  end)

  it("leaves the array unchanged when an in-place routine raises", function()
    local F = h.fails
    local function untouched(f, ...)
      local a = gpu.arange(6, { dtype = "float64" }):reshape(2, 3)
      local before = a:totable()
      f(a, ...)
      assert.same(before, a:totable())
    end
    untouched(function(a) F({ "put", "ind out of range" }, gpu.put, a, { 1, 7 }, 0) end)
    untouched(function(a) F({ "put", "ind out of range" }, gpu.put, a, { -7 }, 0) end)
    untouched(function(a) F({ "put", "cannot take values from an empty v" }, gpu.put, a, { 1 }, gpu.zeros(0)) end)
    untouched(function(a) F({ "put", "option 'mode'" }, gpu.put, a, 1, 0, { mode = "clp" }) end)
    untouched(function(a) F({ "putmask", "same size" }, gpu.putmask, a, gpu.array({ true }), 1) end)
    untouched(function(a) F({ "putmask", "bool array" }, gpu.putmask, a, a, 1) end)
    untouched(function(a) F({ "place", "cannot take values from an empty vals" }, gpu.place, a, a:gt(1), {}) end)
    untouched(function(a) F({ "fill_diagonal", "wrap must be a boolean" }, gpu.fill_diagonal, a, 1, 1) end)
    untouched(function(a) F({ "fill_diagonal", "at most 3 arguments" }, gpu.fill_diagonal, a, 1, true, 1) end)
    F({ "fill_diagonal", "at least 2 axes" }, gpu.fill_diagonal, gpu.zeros(3), 1)
    F({ "fill_diagonal", "same length" }, gpu.fill_diagonal, gpu.zeros(2, 2, 3), 1)
    local w = gpu.zeros(3, { dtype = "float64" }):requires_grad()
    F({ "put", "requires grad" }, gpu.put, w, 1, 1)
    assert.same({ 0, 0, 0 }, w:totable())
    gpu.no_grad(function() gpu.put(w, 1, 1) end)
    assert.same({ 1, 0, 0 }, w:detach():totable())
  end)
end)
