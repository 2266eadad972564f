-- readonly_spec.lua — arrays whose elements overlap (broadcast views: expand, stride-0
-- axes) are read-only, as NumPy's broadcast views are: every in-place write refuses them
-- and leaves the base as it was; and x._version, the storage's write counter that
-- autograd reads, grows by one with each in-place write, through views too.
local h = require "spec.helper"
local gpu = h.gpu
local F = gpu.fused

local READONLY = "is a broadcast view whose elements overlap %(read%-only%): copy it first %(x:copy%(%)%)"

-- Every way of writing into an existing array x (4, 3) float32 on x's device.
local function writes(dev)
  local function ix(t) return gpu.array(t, { dtype = "int64", device = dev }) end
  local function full(...) return gpu.ones({ ... }, { device = dev }) end
  return {
    { "add_ number", function(x) x:add_(1) end },
    { "add_ array", function(x) x:add_(full(3)) end },
    { "add_ float64 (cast back)", function(x) x:add_(gpu.ones(3, { dtype = "float64", device = dev })) end },
    { "sub_", function(x) x:sub_(2) end },
    { "mul_", function(x) x:mul_(2) end },
    { "div_", function(x) gpu.div_(x, 2) end },
    { "maximum_", function(x) x:maximum_(5) end },
    { "pow_", function(x) x:pow_(2) end },
    { "exp_", function(x) x:exp_() end },
    { "neg_", function(x) x:neg_() end },
    { "sqrt_", function(x) x:sqrt_() end },
    { "relu_", function(x) x:relu_() end },
    { "fill_", function(x) x:fill_(7) end },
    { "x[i] = number", function(x) x[2] = 5 end },
    { "x[{i, j}] = number", function(x) x[{ 2, 3 }] = 5 end },
    { "x[range] = number", function(x) x[{ { 1, 2 } }] = 5 end },
    { "x[':'] = number", function(x) x[":"] = 5 end },
    { "x[{':', j}] = array", function(x) x[{ ":", 1 }] = gpu.zeros(4, { device = dev }) end },
    { "x[i] = array", function(x) x[1] = gpu.zeros(3, { device = dev }) end },
    { "x[mask] = number", function(x) x[full(4, 3):gt(0)] = 5 end },
    { "x[mask] = nothing selected", function(x) x[full(4, 3):lt(0)] = 5 end },
    { "x[mask] = array", function(x) x[gpu.array({ true, false, true, false }, { device = dev })] = full(3) * 2 end },
    { "x[idx] = number", function(x) x[ix { 1, 3 }] = 5 end },
    { "index_put_", function(x) x:index_put_(1, ix { 2 }, 9) end },
    { "index_put_ accumulate", function(x) x:index_put_(1, ix { 2, 2 }, full(2, 3), { accumulate = true }) end },
    { "index_put_ of no index", function(x) x:index_put_(2, ix {}, 9) end },
    { "gpu.random.shuffle", function(x) gpu.random.shuffle(x) end },
    { "x:shuffle()", function(x) x:shuffle() end },
    { "fused.sgd_", function(x) F.sgd_(x, full(4, 3), nil, { lr = 0.1 }) end },
    { "fused.adam_", function(x) F.adam_(x, full(4, 3), full(4, 3), full(4, 3), nil, { lr = 0.1, step = 1 }) end },
    { "fused.rmsprop_", function(x) F.rmsprop_(x, full(4, 3), full(4, 3), nil, nil, { lr = 0.1 }) end },
    { "fused.adagrad_", function(x) F.adagrad_(x, full(4, 3), full(4, 3), { lr = 0.1 }) end },
    { "fused.adadelta_", function(x) F.adadelta_(x, full(4, 3), full(4, 3), full(4, 3), { lr = 0.1 }) end },
    { "fused.adamax_", function(x) F.adamax_(x, full(4, 3), full(4, 3), full(4, 3), { lr = 0.1 }) end },
    { "fused.nadam_", function(x) F.nadam_(x, full(4, 3), full(4, 3), full(4, 3), { lr = 0.1 }) end },
    { "fused.radam_", function(x) F.radam_(x, full(4, 3), full(4, 3), full(4, 3), { lr = 0.1, step = 7 }) end },
  }
end

-- Overlapping views of a fresh base (returned with it): expand of a vector, a stride-0
-- inner axis, a 1-D expand, an expand of a sliced and transposed view.
local function overlapping(dev)
  local o = { device = dev }
  return {
    { "ones(3):expand(4, 3)", function() local b = gpu.ones(3, o); return b, b:expand(4, 3) end },
    { "ones(4, 1):expand(4, 3)", function() local b = gpu.ones(4, 1, o); return b, b:expand(4, 3) end },
    { "ones(6)[{1,6,2}]:expand(4, 3)",
      function() local b = gpu.ones(6, o); return b, b[{ { 1, 6, 2 } }]:expand(4, 3) end },
    { "arange(12):reshape(3, 4).T[1]:unsqueeze(1):expand(4, 3)",
      function() local b = gpu.arange(12, o):astype("float32"):reshape(3, 4); return b, b.T[1]:unsqueeze(1):expand(4, 3) end },
  }
end

for _, dev in ipairs(h.devices()) do
  describe("writes into broadcast views (" .. dev .. ")", function()
    for _, view in ipairs(overlapping(dev)) do
      it("refuse every in-place op on " .. view[1] .. ", leaving the base as it was", function()
        for _, w in ipairs(writes(dev)) do
          local base, x = view[2]()
          local before, v0 = base:totable(), base._version
          local ok, err = pcall(w[2], x)
          assert(not ok, w[1] .. " wrote into a broadcast view")
          assert(tostring(err):find(READONLY), w[1] .. ": " .. tostring(err))
          assert.same(before, base:totable(), w[1] .. " changed the base")
          assert.equal(v0, base._version, w[1] .. " counted a write it refused")
        end
      end)
    end

    it("name the function and the array in the error", function()
      local o = { device = dev }
      local x = gpu.ones(3, o):expand(4, 3)
      local function err(f) return select(2, pcall(f)) end
      assert.matches("add_: array " .. READONLY, err(function() x:add_(1) end))
      assert.matches("exp_: array " .. READONLY, err(function() x:exp_() end))
      assert.matches("fill_: array " .. READONLY, err(function() x:fill_(0) end))
      assert.matches("index_put_: array " .. READONLY,
        err(function() x:index_put_(1, gpu.array({ 1 }, { dtype = "int64", device = dev }), 0) end))
      assert.matches("sgd_: the parameter " .. READONLY, err(function() F.sgd_(x, x:copy(), nil, { lr = 1 }) end))
    end)

    it("refuse expanded optimizer state and running statistics", function()
      local o = { device = dev }
      local p, g = gpu.ones(3, o), gpu.ones(3, o)
      local st = gpu.zeros(1, o):expand(3)
      local function err(f) return select(2, pcall(f)) end
      assert.matches("sgd_: momentum_buffer " .. READONLY,
        err(function() F.sgd_(p, g, st, { lr = 0.1, momentum = 0.9 }) end))
      assert.matches("adam_: exp_avg_sq " .. READONLY,
        err(function() F.adam_(p, g, gpu.zeros(3, o), st, nil, { lr = 0.1, step = 1 }) end))
      assert.matches("rmsprop_: square_avg " .. READONLY, err(function() F.rmsprop_(p, g, st, nil, nil, { lr = 0.1 }) end))
      assert.matches("adagrad_: sum " .. READONLY, err(function() F.adagrad_(p, g, st) end))
      assert.matches("adadelta_: acc_delta " .. READONLY, err(function() F.adadelta_(p, g, gpu.zeros(3, o), st) end))
      assert.matches("adamax_: exp_inf " .. READONLY, err(function() F.adamax_(p, g, gpu.zeros(3, o), st) end))
      assert.matches("nadam_: exp_avg " .. READONLY, err(function() F.nadam_(p, g, st, gpu.zeros(3, o)) end))
      assert.matches("radam_: exp_avg_sq " .. READONLY, err(function() F.radam_(p, g, gpu.zeros(3, o), st) end))
      assert.same({ 1, 1, 1 }, p:totable())
      local x = gpu.ones(2, 3, 4, 4, o)
      assert.matches("batch_norm: running_mean " .. READONLY,
        err(function() gpu.dnn.batch_norm(x, gpu.ones(3, o), gpu.zeros(3, o), st, gpu.ones(3, o)) end))
      assert.matches("batch_norm: running_var " .. READONLY,
        err(function() gpu.dnn.batch_norm(x, gpu.ones(3, o), gpu.zeros(3, o), gpu.zeros(3, o), st) end))
    end)

    it("x:expand(400, 3000):add_(1) raises instead of racing", function()
      local b = gpu.ones(1, 3000, { device = dev })
      assert.matches(READONLY, select(2, pcall(function() b:expand(400, 3000):add_(1) end)))
      assert.equal(3000, b:sum():item())
    end)

    it("still read: math, reductions and copies of a broadcast view work", function()
      local b = gpu.array({ 1, 2, 3 }, { device = dev })
      local x = b:expand(4, 3)
      assert.equal(24, x:sum():item())
      assert.same({ { 2, 3, 4 }, { 2, 3, 4 }, { 2, 3, 4 }, { 2, 3, 4 } }, (x + 1):totable())
      local c = x:copy()
      c:add_(1)
      c[{ 1, 1 }] = 0
      assert.same({ { 0, 3, 4 }, { 2, 3, 4 }, { 2, 3, 4 }, { 2, 3, 4 } }, c:totable())
      local k = x:contiguous()
      k:mul_(2)
      assert.same({ 2, 4, 6 }, k[4]:totable())
      assert.same({ 1, 2, 3 }, b:totable())
    end)

    it("leave views without overlap writable: slices, steps, transposes, flips, size-1 expands", function()
      local o = { device = dev }
      local m = gpu.zeros(3, 4, o)
      m[{ 2, ":" }]:add_(1)                                  -- a row
      m.T[4]:fill_(5)                                         -- a column of the transpose
      m[{ ":", { 1, 3, 2 } }]:mul_(2)                         -- a stepped slice: columns 1 and 3
      m[{ 1, { 1, 3 } }]:flip():add_(gpu.array({ 1, 2, 3 }, o))
      assert.same({ { 3, 2, 1, 5 }, { 2, 1, 2, 5 }, { 0, 0, 0, 5 } }, m:totable())
      local r = gpu.zeros(1, 3, o)
      r:expand(1, 3):add_(1)                                  -- nothing repeated: writable
      r:expand(1, 1, 3):exp_()
      r:expand(-1, 3)[{ 1, 2 }] = 9
      h.assert_close(r, { { math.exp(1), 9, math.exp(1) } }, 1e-6)
      local e = gpu.zeros(3, o):expand(0, 3)                  -- no elements: nothing overlaps
      e:add_(1)
      e:fill_(2)
      assert.same({ 0, 0, 0 }, gpu.zeros(3, o):totable())
      local s = gpu.full({ 1 }, 4, o):expand(1)               -- one element
      s:add_(1)
      assert.equal(5, s:item())
    end)
  end)

  describe("x._version (" .. dev .. ")", function()
    local o = { device = dev }
    local function ix(t) return gpu.array(t, { dtype = "int64", device = dev }) end

    it("is an integer that grows by one with each in-place write", function()
      local x = gpu.zeros(4, 3, o)
      assert.equal("integer", math.type(x._version))
      for _, w in ipairs {
        function() x:add_(1) end,
        function() x:add_(gpu.ones(3, { dtype = "float64", device = dev })) end,
        function() x:exp_() end,
        function() x:fill_(2) end,
        function() x[1] = 3 end,
        function() x[{ 2, 2 }] = 3 end,
        function() x[":"] = gpu.ones(3, o) end,
        function() x[x:gt(0)] = 0 end,
        function() x[ix { 1 }] = 4 end,
        function() x:index_put_(2, ix { 1, 1 }, 1, { accumulate = true }) end,
        function() x:shuffle() end,
        function() F.sgd_(x, gpu.ones(4, 3, o), nil, { lr = 0.5 }) end,
      } do
        local v0 = x._version
        w()
        assert.equal(v0 + 1, x._version)
      end
    end)

    it("is shared by a storage's views: a write through one shows in the base", function()
      local x = gpu.zeros(3, 4, o)
      local row, col = x[2], x.T[1]
      local v0 = x._version
      row:add_(1)
      assert.equal(v0 + 1, x._version)
      col[2] = 7
      assert.equal(v0 + 2, x._version)
      assert.equal(x._version, row._version)
      assert.equal(x._version, x:reshape(12)._version)
      local c = x:copy()
      c:add_(1)
      assert.equal(v0 + 2, x._version)                        -- a copy has its own counter
    end)

    it("does not move on reads or on refused writes", function()
      local x = gpu.arange(6, o):astype("float32"):reshape(2, 3)
      local v0 = x._version
      local _ = { x + 1, x:sum(), x:exp(), x:totable(), x[{ 1, 2 }], x[1], x:copy(), x.T, x:reshape(6),
                  x[x:gt(2)], x:index(1, ix { 2 }), x:sort(), tostring(x) }
      assert.equal(v0, x._version)
      assert.is_false(pcall(x.add_, x, gpu.ones(4, o)))      -- shapes do not fit
      assert.is_false(pcall(function() x[{ 1, 1 }] = "a" end))
      assert.equal(v0, x._version)
    end)

    it("does not move when preparing an operand fails (the fuzzer's state check)", function()
      -- the bool operand is cast to float64 before the write: 2^65 bytes, too big
      local x = gpu.zeros({ 0, 1 << 31, 1 << 31 }, { dtype = "float64", device = dev })
      local v0 = x._version
      local ok, err = pcall(x.mul_, x, gpu.ones({ 1, 1 }, { dtype = "bool", device = dev }):expand(1 << 31, 1 << 31))
      assert.is_false(ok)
      assert.matches("array is too big", err)
      assert.equal(v0, x._version)
    end)

    it("cannot be assigned", function()
      local x = gpu.zeros(2, o)
      assert.matches("cannot assign field '_version'", select(2, pcall(function() x._version = 0 end)))
    end)
  end)
end
