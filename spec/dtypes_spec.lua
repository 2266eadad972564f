-- spec/dtypes_spec.lua — the dtypes as kernels/dtypes.h lists them, seen from Lua: every
-- name and alias, and the (op, dtype) pairs a device has no kernel for, each refused with
-- a message that names the op, the dtype and (where the device decides) the device,
-- before anything is allocated.
local h = require "spec.helper"
local gpu = h.gpu
local F = gpu.fused
local R = gpu.random

local DTYPES = h.dtypes()
local FLOATS = h.dtype_set("float")
local INTS = h.dtype_set("uint", "int")
local COMPLEX = h.dtype_set("complex")

-- Allocation requests so far (host and device) and the bytes live arrays hold on dev.
local function allocation_state(dev)
  collectgarbage()
  collectgarbage()
  local s = gpu.stats()
  return (s.allocs or 0) + (s.host_allocs or 0), gpu.memory(dev).allocated
end

-- fn() raises an error containing 'text' (plain) and allocates nothing on the way.
local function refused_clean(dev, text, fn)
  local n0, b0 = allocation_state(dev)
  local ok, err = pcall(fn)
  local n1, b1 = allocation_state(dev)
  assert.is_false(ok, "expected an error containing: " .. text)
  assert.matches(text, tostring(err), 1, true)
  assert.equal(n0, n1, "allocations made before the refusal: " .. tostring(err))
  assert.equal(b0, b1, "bytes left allocated by the refusal: " .. tostring(err))
end

describe("dtypes", function()
  it("are named by their rows and aliases", function()
    for _, dt in ipairs(DTYPES) do assert.equal(dt, gpu.zeros(1, { dtype = dt }).dtype) end
    local aliases = { float = "float32", fp32 = "float32", double = "float64", fp64 = "float64", half = "float16",
                      fp16 = "float16", bf16 = "bfloat16", int = "int32", long = "int64", byte = "uint8",
                      short = "int16", ushort = "uint16", cfloat = "complex64", cdouble = "complex128" }
    for alias, dt in pairs(aliases) do
      assert.equal(dt, gpu.zeros(1, { dtype = alias }).dtype, alias)
      assert.equal(dt, gpu[alias], "gpu." .. alias)            -- PyTorch's constants: gpu.cfloat
    end
    for _, row in ipairs(gpu._dtypes) do
      assert.equal(row.name, gpu[row.name])
      for _, alias in ipairs(row.aliases) do assert.equal(row.name, aliases[alias], "alias " .. alias) end
    end
  end)

  it("describe themselves as numpy.iinfo and numpy.finfo do", function()
    local bits = { int8 = 8, uint8 = 8, int16 = 16, uint16 = 16, int32 = 32, uint32 = 32, int64 = 64, uint64 = 64 }
    for _, dt in ipairs(h.dtypes("uint", "int")) do
      local i = gpu.iinfo(dt)
      assert.same({ bits[dt], gpu._dtypes[dt].min, gpu._dtypes[dt].max, dt }, { i.bits, i.min, i.max, i.dtype })
    end
    assert.same({ -128, 127 }, { gpu.iinfo("int8").min, gpu.iinfo(gpu.zeros(1, { dtype = "int8" })).max })
    assert.equal(65535, gpu.iinfo("uint16").max)
    assert.equal(2 ^ 64, gpu.iinfo("uint64").max)            -- 2^64 - 1 rounds to 2^64 as a float
    -- numpy.finfo's values (bfloat16: ml_dtypes'); complex: its parts'
    local want = {
      float16 = { 16, 2 ^ -10, 65504, 2 ^ -14, 3, 1e-3, "float16" },
      bfloat16 = { 16, 2 ^ -7, 3.3895313892515355e38, 2 ^ -126, 2, 1e-2, "bfloat16" },
      float32 = { 32, 2 ^ -23, 3.4028234663852886e38, 2 ^ -126, 6, 1e-6, "float32" },
      float64 = { 64, 2 ^ -52, 1.7976931348623157e308, 2 ^ -1022, 15, 1e-15, "float64" },
    }
    want.complex64, want.complex128 = want.float32, want.float64
    for _, dt in ipairs(h.dtypes("float", "complex")) do
      local f = gpu.finfo(dt)
      assert.same(want[dt], { f.bits, f.eps, f.max, f.tiny, f.precision, f.resolution, f.dtype }, dt)
      assert.equal(-f.max, f.min)
      assert.equal(f.tiny, f.smallest_normal)
    end
    h.fails({ "iinfo", "float32 is not an integer dtype" }, gpu.iinfo, "float32")
    h.fails({ "iinfo", "bool is not an integer dtype" }, gpu.iinfo, "bool")
    h.fails({ "finfo", "int8 is not a float or complex dtype" }, gpu.finfo, "int8")
    h.fails({ "finfo", "unknown dtype 'float8'" }, gpu.finfo, "float8")
  end)

  it("are listed in full, in table order, when a name is unknown", function()
    local ok, err = pcall(gpu.zeros, 1, { dtype = "float8" })
    assert.is_false(ok)
    assert.matches("unknown dtype 'float8' (expected one of " .. table.concat(DTYPES, ", ") .. ")", tostring(err), 1, true)
    ok = pcall(gpu.zeros, 1, { dtype = "" })
    assert.is_false(ok)
  end)

  for _, dev in ipairs(h.devices()) do
    describe("on " .. dev, function()
      local function arr(dt, shape) return gpu.ones(shape or { 2, 2 }, { dtype = dt, device = dev }) end

      it("refuses random floats into integer and bool dtypes, naming what they take", function()
        for _, dt in ipairs(DTYPES) do
          if not FLOATS[dt] then
            local o = { dtype = dt, device = dev }
            local want = ("dtype %s is not supported for %%s numbers on %s (expected float16, bfloat16, float32 or float64)")
                         :format(dt, dev)
            refused_clean(dev, want:format("uniform"), function() return R.rand(4, o) end)
            refused_clean(dev, want:format("normal"), function() return R.randn(4, o) end)
            refused_clean(dev, want:format("uniform"), function() return R.uniform(0, 1, 4, o) end)
          end
        end
      end)

      it("refuses random integers into float, complex and bool dtypes, naming what they take", function()
        local ints = h.dtypes("uint", "int")
        local takes = table.concat(ints, ", ", 1, #ints - 1) .. " or " .. ints[#ints]
        for _, dt in ipairs(DTYPES) do
          local o = { dtype = dt, device = dev }
          if INTS[dt] then
            assert.equal(dt, R.randint(0, 3, { 4 }, o).dtype)
          else
            refused_clean(dev, ("randint: dtype %s is not supported for random integers on %s (expected %s)")
                                 :format(dt, dev, takes), function() return R.randint(0, 3, { 4 }, o) end)
          end
        end
      end)

      it("fills bernoulli draws into every dtype", function()
        for _, dt in ipairs(DTYPES) do
          local x = R.bernoulli(1, { 3 }, { dtype = dt, device = dev })
          assert.equal(dt, x.dtype)
          h.assert_close(gpu._dtypes[dt].kind == "complex" and gpu.view_as_real(x) or x:astype("float64"),
                         gpu._dtypes[dt].kind == "complex" and { { 1, 0 }, { 1, 0 }, { 1, 0 } } or { 1, 1, 1 })
        end
      end)

      it("refuses fused optimizer steps and cross-entropy outside float32 and float64", function()
        for _, dt in ipairs(DTYPES) do
          if dt ~= "float32" and dt ~= "float64" then
            local p, g = arr(dt, 4), arr(dt, 4)
            refused_clean(dev, "must be float32 or float64, got " .. dt, function() return F.sgd_(p, g) end)
            local lab = gpu.array({ 1, 2 }, { dtype = "int64", device = dev })
            local z = arr(dt, { 2, 3 })
            refused_clean(dev, "logits must be float32 or float64, got " .. dt, function() return F.cross_entropy(z, lab) end)
          end
        end
      end)

      it("refuses im2col on integer and bool arrays, and runs the halves in float32", function()
        for _, dt in ipairs(DTYPES) do
          local x = arr(dt, { 1, 1, 2, 2 })
          if FLOATS[dt] then
            assert.equal(dt, gpu.im2col(x, { kernel = 2 }).dtype)
          else
            refused_clean(dev, "im2col needs a float array, got " .. dt, function() return gpu.im2col(x, { kernel = 2 }) end)
          end
        end
      end)

      it("refuses elementwise ops on dtypes their kind does not take", function()
        for _, dt in ipairs(DTYPES) do
          local x = arr(dt)
          if FLOATS[dt] then
            refused_clean(dev, "bitwise_not needs integer or bool arrays, got " .. dt, function() return x:bitwise_not() end)
            refused_clean(dev, "bitwise_and needs integer or bool arrays, got " .. dt, function() return x:bitwise_and(x) end)
          end
          if COMPLEX[dt] then      -- refused by the op's kind or by the backend, naming op and dtype
            for _, op in ipairs { "bitwise_not", "bitwise_and", "left_shift" } do
              local err = h.fails({ op, dt }, function()
                if op == "bitwise_not" then return x:bitwise_not() end
                return x[op](x, x)
              end)
              assert.truthy(err:find("needs integer", 1, true) or err:find("is not supported for " .. dt, 1, true), err)
            end
          elseif not INTS[dt] then
            refused_clean(dev, "left_shift needs integer arrays, got " .. dt, function() return x:left_shift(x) end)
          end
        end
        local b = arr("bool")
        refused_clean(dev, "negation of a bool array is not supported", function() return -b end)
        refused_clean(dev, "sub is not supported for bool arrays", function() return b - b end)
        refused_clean(dev, "sub is not supported for bool arrays", function() return b:sub_(b) end)
      end)

      it("refuses reductions into dtypes they cannot compute in", function()
        local x = arr("int32")
        refused_clean(dev, "mean needs a float or complex dtype, got int32", function() return x:mean(nil, { dtype = "int32" }) end)
        refused_clean(dev, "sum cannot accumulate in bool", function() return x:sum(nil, { dtype = "bool" }) end)
      end)

      it("runs every other op family in every dtype, or refuses it as its backend says", function()
        -- (op, the family and op gpu._supports asks, the result's dtype)
        local ops = {
          { function(x) return x:sort() end, "sort" },
          { function(x) return x:matmul(x) end, "matmul" },
          { function(x) return x:max() end, "reduce", "max" },
          { function(x) return x:eq(x) end, "binary", "eq", "bool" },
        }
        for _, dt in ipairs(DTYPES) do
          local x = arr(dt)
          assert.equal(dt, x:copy().dtype)
          assert.equal(dt, gpu.arange(0, 3, 1, { dtype = dt, device = dev }).dtype)
          assert.equal(dt, gpu.where(gpu.ones(2, 2, { dtype = "bool", device = dev }), x, x).dtype)
          for _, o in ipairs(ops) do
            local ok, why = gpu._supports(o[2], dt, o[3], dev)
            if ok then assert.equal(o[4] or dt, o[1](x).dtype)
            else refused_clean(dev, why, function() return o[1](x) end) end
          end
        end
      end)
    end)
  end
end)
