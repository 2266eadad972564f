-- dtype_matrix_spec.lua — every dtype (gpu._dtypes) through every op family (gpu._families)
-- on every device: each probe (an op or two of the family on small inputs) gives NumPy's
-- result (spec/fixtures/dtype_matrix.lua, made by tools/gen_matrix_fixtures.py: dtype,
-- shape and values), or the error the device's backend gives for a dtype it has no kernel
-- for ("sort is not supported for complex64 on cpu", what gpu._supports answers), or, where
-- NumPy itself refuses, a clear error naming the function. Nothing else: a wrong dtype, a
-- wrong value or an unclear error fails, and a crash ends the run.
local h = require "spec.helper"
local gpu = h.gpu
local M = require "spec.fixtures.dtype_matrix"

local function kind(dt) return gpu._dtypes[dt].kind end

-- the float dtype of a complex dtype's parts
local function part(dt) return gpu._dtypes[dt].size == 8 and "float32" or "float64" end

-- An array of dtype dt on dev from values as the fixture writes them (complex: re, im pairs).
local function make(vals, dt, dev, shape)
  local x
  if kind(dt) == "complex" then
    local t = {}
    for i = 1, #vals, 2 do t[#t + 1] = { vals[i], vals[i + 1] } end
    x = gpu.view_as_complex(gpu.array(t, { dtype = part(dt), device = dev }))
  else
    x = gpu.array(vals, { dtype = dt, device = dev })
  end
  return shape and x:reshape(shape) or x
end

-- x's values as the fixture writes them: flat, complex as (re, im) pairs
local function values(x)
  x = x:cpu()
  if kind(x.dtype) == "complex" then x = gpu.view_as_real(x) end
  return h.flat(x)
end

-- the tolerance of a result of dtype dt (its parts' for complex; integers exactly)
local TOL = { float16 = 2e-3, bfloat16 = 1e-2, float32 = 2e-6, float64 = 1e-12 }
local function tol(dt)
  if kind(dt) == "complex" then dt = part(dt) end
  return TOL[dt] or 0
end

local I64 = function(t, dev) return gpu.array(t, { dtype = "int64", device = dev }) end

-- The probes, by the fixture's names: (a, b, c, dt, dev) -> an array, a and b (2, 3) and
-- c (6,) the fixture's inputs in dt on dev.
local PROBES = {
  full = function(a, b, c, dt, dev) return gpu.full({ 2, 3 }, 7, { dtype = dt, device = dev }) end,
  eye = function(a, b, c, dt, dev) return gpu.eye(3, { dtype = dt, device = dev }) end,
  linspace = function(a, b, c, dt, dev) return gpu.linspace(0, 4, 5, { dtype = dt, device = dev }) end,
  arange = function(a, b, c, dt, dev) return gpu.arange(0, dt == "bool" and 2 or 5, 1, { dtype = dt, device = dev }) end,
  abs = function(a) return gpu.abs(a) end,
  neg = function(a) return -a end,
  exp = function(a) return gpu.exp(a) end,
  add = function(a, b) return a + b end,
  mul = function(a, b) return a * b end,
  sub = function(a, b) return a - b end,
  eq = function(a, b) return gpu.eq(a, b) end,
  sum = function(a) return a:sum() end,
  sum_axis = function(a) return a:sum(1) end,
  max = function(a) return a:max(2) end,
  mean = function(a) return a:mean(2) end,
  matmul = function(a, b) return a:matmul(b.T) end,
  take = function(a, b, c, dt, dev) return gpu.take(a:reshape(6), I64({ 6, 1, 3 }, dev)) end,
  concat = function(a, b) return gpu.concat({ a, b }, 1) end,
  stack = function(a, b) return gpu.stack({ a, b }, 2) end,
  mask = function(a, b, c, dt, dev, nonzero) return a:reshape(6)[nonzero] end,
  put = function(a, b, c, dt, dev)
    return gpu.zeros(6, { dtype = dt, device = dev }):index_put_(1, I64({ 1, 3 }, dev), b:reshape(6)[{ { 1, 2 } }])
  end,
  scatter_add = function(a, b, c, dt, dev)
    return gpu.zeros(6, { dtype = dt, device = dev }):index_put_(1, I64({ 1, 3, 1 }, dev), a:reshape(6)[{ { 1, 3 } }],
                                                                 { accumulate = true })
  end,
  where = function(a, b, c, dt, dev, nonzero) return gpu.where(nonzero:reshape(2, 3), a, b) end,
  sort = function(a) return (a:reshape(6):sort()) end,
  argsort = function(a) return a:reshape(6):argsort() end,
  kth = function(a) return a:reshape(6):partition(3)[{ { 3, 3 } }]:reshape({}) end,
  bincount = function(a, b, c) return gpu.bincount(c) end,
  histogram = function(a) return (gpu.histogram(a, { bins = 3 })) end,
  inv = function(a, b, c, dt, dev)
    local m = kind(dt) == "complex" and { 2, 0, 1, 0, 1, 0, 3, 0 } or { 2, 1, 1, 3 }
    return gpu.linalg.inv(make(m, dt, dev, { 2, 2 }))
  end,
}
for _, dst in ipairs(M.dtypes) do PROBES["astype_" .. dst] = function(a) return a:astype(dst) end end

-- Whether err is the refusal of dtype dt by family (op) on dev: gpu._supports says the
-- backend has no kernel for it, and err names the dtype as the backends do ("not supported
-- for <dt>", "<dt> is not supported") or as an op's own refusal of a kind ("needs a float
-- array, got <dt>").
local function refusal(family, op, dt, dev, err)
  err = tostring(err)
  local has = gpu._supports(family, dt, op, dev)
  if has then return false end
  return err:find("not supported for " .. dt, 1, true) ~= nil or err:find(dt .. " is not supported", 1, true) ~= nil
      or err:find("got " .. dt, 1, true) ~= nil
end

-- Runs probe 'name' on dtype dt on dev; nil when it meets its fixture entry, else the fault.
local function check(name, dt, dev)
  local p, want = M.probes[name], M.probes[name].want[dt]
  local inp = M.inputs[dt]
  local a, b, c = make(inp.a, dt, dev, { 2, 3 }), make(inp.b, dt, dev, { 2, 3 }), make(inp.c, dt, dev)
  local nonzero = {}
  for i = 1, #inp.c, kind(dt) == "complex" and 2 or 1 do
    nonzero[#nonzero + 1] = inp.c[i] ~= 0 and inp.c[i] ~= false
  end
  nonzero = gpu.array(nonzero, { dtype = "bool", device = dev })
  local ok, r = pcall(PROBES[name], a, b, c, dt, dev, nonzero)
  if want == "error" then                                  -- NumPy refuses: so must gpulua, clearly
    if ok then return "NumPy raises, gpulua gave " .. tostring(r) end
    if type(r) ~= "string" or #r == 0 then return "an error without a message" end
    return nil
  end
  if not ok then
    -- only a refusal of a dtype (dt, or the result's) the device's backend has no kernel for
    for _, named in ipairs { dt, want.dtype } do
      if refusal(p.family, p.op or nil, named, dev, r) then return nil end
    end
    return "error: " .. tostring(r)
  end
  if r.dtype ~= want.dtype then return ("dtype %s, want %s"):format(r.dtype, want.dtype) end
  if table.concat(r.shape, ",") ~= table.concat(want.shape, ",") then
    return ("shape (%s), want (%s)"):format(table.concat(r.shape, ","), table.concat(want.shape, ","))
  end
  local good, msg = h.close(values(r), want.values, tol(want.dtype))
  if not good then return msg end
end

local NAMES = {}
for name in pairs(M.probes) do NAMES[#NAMES + 1] = name end
table.sort(NAMES)

describe("every dtype through every op family", function()
  it("the fixture has a probe of every family and an entry for every dtype", function()
    local families = {}
    for _, p in pairs(M.probes) do families[p.family] = true end
    for _, f in ipairs(gpu._families) do
      if f ~= "random" and f ~= "conv" and f ~= "fused" then      -- below: no NumPy values
        assert.truthy(families[f], "no probe of family " .. f)
      end
    end
    assert.same(h.dtypes(), M.dtypes)
    for _, name in ipairs(NAMES) do assert.truthy(PROBES[name], "no Lua probe " .. name) end
  end)

  for _, dev in ipairs(h.devices()) do
    for _, family in ipairs(gpu._families) do
      local mine = {}
      for _, name in ipairs(NAMES) do if M.probes[name].family == family then mine[#mine + 1] = name end end
      if #mine > 0 then
        it(family .. " on " .. dev .. ": NumPy's result or the backend's refusal, every dtype", function()
          local bad = {}
          for _, name in ipairs(mine) do
            for _, dt in ipairs(M.dtypes) do
              local fault = check(name, dt, dev)
              if fault then bad[#bad + 1] = ("%s(%s): %s"):format(name, dt, fault) end
            end
          end
          assert.equal("", table.concat(bad, "\n"))
        end)
      end
    end

    -- the families whose results NumPy does not give: their dtype and values, or the
    -- backend's refusal. fn's result (the caller checks it), or nil after a refusal of dt
    -- (an op may run a dtype its backend lacks in another: im2col computes the halves in
    -- float32).
    local function refused_as_supports(family, dt, which, fn)
      local ok, r = pcall(fn)
      if ok then return r end
      assert(refusal(family, which, dt, dev, r), ("%s %s: %q is not a refusal of %s"):format(family, dt, tostring(r), dt))
    end

    it("random on " .. dev .. ": each distribution fills the dtypes it takes, refuses the rest", function()
      for _, dt in ipairs(M.dtypes) do
        local o = { dtype = dt, device = dev }
        local u = refused_as_supports("random", dt, "uniform", function() return gpu.random.rand(100, o) end)
        if u then
          assert.equal(dt, u.dtype)
          for _, v in ipairs(values(u)) do assert.is_true(v >= 0 and v < 1) end
        end
        local n = refused_as_supports("random", dt, "normal", function() return gpu.random.randn(100, o) end)
        if n then assert.equal(dt, n.dtype) end
        local i = refused_as_supports("random", dt, "randint", function() return gpu.random.randint(0, 9, 100, o) end)
        if i then
          assert.equal(dt, i.dtype)
          for _, v in ipairs(values(i)) do assert.is_true(v >= 0 and v <= 9) end
        end
        local bern = refused_as_supports("random", dt, "bernoulli", function() return gpu.random.bernoulli(1, 5, o) end)
        if bern then
          assert.equal(dt, bern.dtype)
          local one = kind(dt) == "complex" and { 1, 0, 1, 0, 1, 0, 1, 0, 1, 0 } or { 1, 1, 1, 1, 1 }
          if dt == "bool" then one = { true, true, true, true, true } end
          h.assert_close(values(bern), one, 0)
        end
      end
    end)

    it("conv and fused on " .. dev .. ": the dtypes their kernels take, the rest refused", function()
      for _, dt in ipairs(M.dtypes) do
        local x = gpu.ones({ 1, 1, 2, 2 }, { dtype = dt, device = dev })
        local cols = refused_as_supports("conv", dt, nil, function() return gpu.im2col(x, { kernel = 2 }) end)
        if cols then
          assert.equal(dt, cols.dtype)
          h.assert_close(values(cols), { 1, 1, 1, 1 }, 0)
        end
        local p, g = gpu.ones(3, { dtype = dt, device = dev }), gpu.full(3, 2, { dtype = dt, device = dev })
        local buf = gpu.zeros(3, { dtype = dt, device = dev })
        local stepped = refused_as_supports("fused", dt, nil, function()
          return gpu.fused.sgd_(p, g, buf, { lr = 0.25, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false,
                                             maximize = false, first = true })
        end)
        if stepped then h.assert_close(values(stepped), { 0.5, 0.5, 0.5 }, tol(dt)) end
      end
    end)
  end
end)
