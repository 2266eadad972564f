-- PyTorch's tensor helpers (lua/gpu/routines/tensor.lua, x.mT / x.H / x.mH and x:stride() in
-- src/lua) against PyTorch (spec/fixtures/tensor/*.lua, made by
-- spec/fixtures/gen_tensor_fixtures.py), float32 and float64 on every device; the in-place
-- forms against the out-of-place ones, views, random fills (moments at a fixed seed),
-- gradients (gradcheck in float64) and every misuse's error.
local h = require "spec.helper"
local gpu = h.gpu
local ag = require "gpu.autograd"
local MF = require "spec.fixtures.tensor.masked_fill"
local IX = require "spec.fixtures.tensor.index"
local SR = require "spec.fixtures.tensor.scatter_reduce"
local SP = require "spec.fixtures.tensor.split"
local BU = require "spec.fixtures.tensor.build"

local function arr(t, dtype, dev)
  if type(t.data[1]) == "boolean" then dtype = "bool" end
  return gpu.array(#t.data > 0 and t.data or {}, { dtype = dtype, device = dev }):reshape(t.shape)
end

local function want(t, dtype)
  local d = type(t.data[1]) == "boolean" and "bool" or (dtype or "float64")
  return gpu.array(#t.data > 0 and t.data or {}, { dtype = d }):reshape(t.shape)
end

local TOL = { float32 = 1e-5, float64 = 1e-12, int64 = 0 }

local function expect(got, t, dtype)
  h.assert_close(got:to("cpu"), want(t, dtype == "int64" and "int64" or nil), TOL[dtype])
end

-- runs call(case, dtype, dev) for every case, float32 and float64 (or the case's own
-- dtype), on every device; a failure names the case
local function each_case(list, call)
  for _, dev in ipairs(h.devices()) do
    for i, c in ipairs(list) do
      for _, dtype in ipairs(c.dtype and { c.dtype } or { "float32", "float64" }) do
        local ok, err = pcall(call, c, dtype, dev)
        assert(ok, ("%s case %d (%s, %s): %s"):format(c.fn, i, dtype, dev, tostring(err)))
      end
    end
  end
end

local function i64(t, dev) return gpu.array(t, { dtype = "int64", device = dev }) end

local NAMES = {
  masked_fill = true, masked_fill_ = true, index_add = true, index_add_ = true, index_copy = true,
  index_copy_ = true, index_fill = true, index_fill_ = true, scatter_reduce = true, scatter_reduce_ = true,
  tensor_split = true, chunk = true, unbind = true, narrow = true, unflatten = true,
  diag_embed = true, block_diag = false, cartesian_prod = false, combinations = false,
  type_as = true, view_as = true, reshape_as = true, expand_as = true,
  zero_ = true, copy_ = true, clamp = true, clamp_ = true, clip_ = true,
  normal_ = true, uniform_ = true, exponential_ = true, bernoulli_ = true,
  new_zeros = true, new_ones = true, new_full = true, new_empty = true,
  rand_like = false, randn_like = false, randint_like = false,
}

describe("the tensor helpers' names", function()
  it("are functions gpu.f and, where PyTorch has the method, x:f", function()
    local x = gpu.ones(2)
    for name, method in pairs(NAMES) do
      assert.equal("function", type(gpu[name]), name)
      assert.equal(method, gpu._routines[name], name)
      if method then assert.equal(gpu[name], x[name], name) end
    end
  end)
end)

describe("masked_fill", function()
  it("gives PyTorch's results (mask broadcast, values cast to x's dtype)", function()
    each_case(MF, function(c, dtype, dev)
      local x = arr(c.x, dtype, dev)
      local mask = arr(c.mask, "bool", dev)
      expect(gpu.masked_fill(x, mask, c.value), c.out, dtype)
      if #c.x.shape == #c.out.shape then                 -- in place where the shape stays x's
        local y = x:copy()
        assert.equal(y, y:masked_fill_(mask, c.value))
        expect(y, c.out, dtype)
      end
    end)
  end)

  it("takes a 0-d array value, and a boolean for bool arrays", function()
    for _, dev in ipairs(h.devices()) do
      local x = gpu.array({ 1, 2, 3 }, { device = dev })
      local m = gpu.array({ true, false, true }, { device = dev })
      h.assert_close(x:masked_fill(m, gpu.array(9, { dtype = "float64", device = dev })):to("cpu"), gpu.array({ 9, 2, 9 }))
      local b = gpu.zeros(3, { dtype = "bool", device = dev })
      assert.same({ true, false, true }, b:masked_fill(m, true):totable())
      local z = gpu.zeros(3, { dtype = "complex64", device = dev }):masked_fill(m, gpu.complex(1, -2))
      h.assert_close(gpu.view_as_real(z):to("cpu"), gpu.array({ { 1, -2 }, { 0, 0 }, { 1, -2 } }))
      h.fails({ "masked_fill", "a complex value for a float32 array" }, gpu.masked_fill, x, m, gpu.complex(1, 1))
    end
  end)
end)

describe("index_add, index_copy, index_fill", function()
  it("give PyTorch's results, and their in-place forms the same", function()
    each_case(IX, function(c, dtype, dev)
      local x = arr(c.x, dtype, dev)
      local idx = arr(c.index, "int64", dev)
      local y = x:copy()
      if c.fn == "index_add" then
        local src = arr(c.source, dtype, dev)
        local opts = c.alpha ~= 1 and { alpha = c.alpha } or nil
        expect(gpu.index_add(x, c.dim, idx, src, opts), c.out, dtype)
        assert.equal(y, y:index_add_(c.dim, idx, src, opts))
      elseif c.fn == "index_copy" then
        local src = arr(c.source, dtype, dev)
        expect(x:index_copy(c.dim, idx, src), c.out, dtype)
        assert.equal(y, y:index_copy_(c.dim, idx, src))
      else
        expect(x:index_fill(c.dim, idx, c.value), c.out, dtype)
        assert.equal(y, y:index_fill_(c.dim, idx, c.value))
      end
      expect(y, c.out, dtype)
    end)
  end)

  it("take int32 indices, integer arrays and non-contiguous x", function()
    for _, dev in ipairs(h.devices()) do
      local x = gpu.arange(12, { device = dev }):reshape(3, 4)
      local idx = gpu.array({ 4, 1 }, { dtype = "int32", device = dev })
      assert.same({ { 1, 1, 2, 4 }, { 5, 5, 6, 8 }, { 9, 9, 10, 12 } },
        x:index_add(2, idx, gpu.ones(3, 2, { dtype = "int64", device = dev })):totable())
      local t = gpu.zeros(4, 3, { device = dev })
      local v = t.T                                       -- (3, 4), not contiguous
      v:index_fill_(2, i64({ 2 }, dev), 5)
      assert.same({ 5, 5, 5 }, t[2]:totable())
      v:index_copy_(1, i64({ 3 }, dev), gpu.full({ 1, 4 }, 7, { device = dev }))
      assert.same({ 0, 0, 7 }, t[1]:totable())
    end
  end)
end)

describe("scatter_reduce", function()
  it("gives PyTorch's results for sum, prod, mean, amax, amin with and without include_self", function()
    each_case(SR, function(c, dtype, dev)
      local x, src = arr(c.x, dtype, dev), arr(c.src, dtype, dev)
      local idx = arr(c.index, "int64", dev)
      local opts = { include_self = c.include_self }
      expect(gpu.scatter_reduce(x, c.dim, idx, src, c.reduce, opts), c.out, dtype)
      local y = x:copy()
      assert.equal(y, y:scatter_reduce_(c.dim, idx, src, c.reduce, opts))
      expect(y, c.out, dtype)
    end)
  end)

  it("has PyTorch's gradients (x and src, ties shared, zeros in prod)", function()
    local n = 0
    for i, c in ipairs(SR) do
      if c.gx then
        n = n + 1
        local x, src = arr(c.x, "float64", "cpu"):requires_grad(), arr(c.src, "float64", "cpu"):requires_grad()
        local out = gpu.scatter_reduce(x, c.dim, arr(c.index, "int64", "cpu"), src, c.reduce, { include_self = c.include_self })
        ag.backward((out * arr(c.w, "float64", "cpu")):sum())
        local ok, err = pcall(function()
          h.assert_close(x.grad, want(c.gx), 1e-12)
          h.assert_close(src.grad, want(c.gsrc), 1e-12)
        end)
        assert(ok, ("case %d (%s, include_self %s): %s"):format(i, c.reduce, tostring(c.include_self), tostring(err)))
      end
    end
    assert.equal(34, n)
  end)

  it("takes for amax / amin the element a stable sort by value puts last (NaN wins, ties go to the last)", function()
    -- a plain loop over the elements in order is the reference; many elements into few
    -- positions, so the cpu's pass may split them among threads
    local nan = 0 / 0
    local function reference(n, idx, src, max, self)
      local out, seen = {}, {}
      for k = 1, n do out[k] = self[k] end
      local function take(v, c)
        if c ~= c then return v ~= v end
        if max then return not (v < c) end
        return not (v > c)
      end
      for j = 1, #idx do
        local k = idx[j] > 0 and idx[j] or idx[j] + n + 1
        if not seen[k] or take(src[j], out[k]) then out[k] = src[j] end
        seen[k] = true
      end
      return out, seen
    end
    -- a position that gets only elements equal to the kernel's start value is still one
    local ends = gpu.scatter_reduce(gpu.full(3, 5), 1, i64({ 1, 1, 3 }, "cpu"), gpu.array({ -1 / 0, -1 / 0, 2 }), "amax",
      { include_self = false })
    assert.same({ -1 / 0, 5, 2 }, ends:totable())
    local vals = { -2, -0.0, 0.0, 1, 1, 3, nan, 2.5, -1 / 0, 1 / 0 }
    local g = gpu.random.Generator(7)
    for _, m in ipairs({ 9, 70000, 5 }) do
      local n = m == 9 and 4 or m == 5 and 3 or 50
      local pos = g:randint(1, n, m, { dtype = "int64" }):totable()
      for j = 1, m, 3 do pos[j] = pos[j] - n - 1 end                  -- negatives count from the end
      local pick = g:randint(1, #vals, m, { dtype = "int64" }):totable()
      local src = {}
      for j = 1, m do src[j] = vals[pick[j]] end
      for _, dtype in ipairs({ "float32", "float64", "int64" }) do
        local s = {}
        for j = 1, m do
          local finite = src[j] == src[j] and math.abs(src[j]) < math.huge
          s[j] = dtype == "int64" and (finite and math.floor(src[j]) or 7) or src[j]
        end
        for _, reduce in ipairs({ "amax", "amin" }) do
          local got = gpu.scatter_reduce(gpu.zeros(n, { dtype = dtype }), 1, gpu.array(pos, { dtype = "int64" }),
            gpu.array(s, { dtype = dtype }), reduce, { include_self = false }):totable()
          local zeros = {}
          for k = 1, n do zeros[k] = 0 end
          local want_ = reference(n, pos, s, reduce == "amax", zeros)
          for k = 1, n do
            local a, b = got[k], want_[k]
            local same = (a ~= a and b ~= b) or (a == b and (a ~= 0 or 1 / a == 1 / b))
            assert(same, ("%s %s m=%d position %d: %s, want %s"):format(reduce, dtype, m, k, tostring(a), tostring(b)))
          end
        end
      end
    end
  end)

  it("passes gradcheck, src larger than index included", function()
    local idx = i64({ { 1, 3 }, { 3, 3 } }, "cpu")
    for _, reduce in ipairs({ "sum", "prod", "mean", "amax", "amin" }) do
      for _, inc in ipairs({ true, false }) do
        local ok, msg = ag.gradcheck(function(x, s) return gpu.scatter_reduce(x, 2, idx, s, reduce, { include_self = inc }) end,
          { gpu.random.Generator(1):normal(0, 1, { 2, 3 }, { dtype = "float64" }),
            gpu.random.Generator(2):normal(0, 1, { 2, 4 }, { dtype = "float64" }) })
        assert(ok, reduce .. " " .. tostring(inc) .. ": " .. tostring(msg))
      end
    end
  end)
end)

describe("tensor_split, chunk, unbind, narrow, unflatten, unfold", function()
  it("give PyTorch's pieces", function()
    each_case(SP, function(c, dtype, dev)
      local x = arr(c.x, dtype, dev)
      local got
      if c.fn == "tensor_split" then got = x:tensor_split(c.what, c.dim)
      elseif c.fn == "chunk" then got = x:chunk(c.chunks, c.dim)
      elseif c.fn == "unbind" then got = x:unbind(c.dim)
      elseif c.fn == "narrow" then got = x:narrow(c.dim, c.start, c.length)
      elseif c.fn == "unflatten" then got = x:unflatten(c.dim, c.sizes)
      else got = x:unfold(c.dim, c.size, c.step) end
      if c.out.shape then
        expect(got, c.out, dtype)
      else
        assert.equal(#c.out, #got)
        for k = 1, #got do expect(got[k], c.out[k], dtype) end
      end
    end)
  end)

  it("give views: a write into a piece shows in x", function()
    for _, dev in ipairs(h.devices()) do
      local x = gpu.zeros(4, 3, { device = dev })
      x:tensor_split({ 1 }, 1)[2]:fill_(1)
      x:chunk(3, 2)[3]:fill_(2)
      x:unbind(1)[1]:fill_(3)
      x:narrow(1, -1, 1):fill_(4)
      assert.same({ { 3, 3, 3 }, { 1, 1, 2 }, { 1, 1, 2 }, { 4, 4, 4 } }, x:totable())
      assert.same({ 2, 3 }, gpu.tensor_split(x, gpu.array({ 2 }, { dtype = "int64" }))[2].shape)
      local u = gpu.arange(1, 8, { device = dev }):reshape(1, 7)
      u:unfold(2, 2, 3):fill_(0)                             -- windows apart: writable
      assert.same({ { 0, 0, 3, 0, 0, 6, 7 } }, u:totable())
      assert.same({ 7, 2, 1 }, u:unfold(2, 3, 2):stride())
      h.fails({ "broadcast view whose elements overlap" }, function() u:unfold(2, 3, 2):fill_(1) end)
      assert.same({ { 0, 0, 3, 0, 0, 6, 7 } }, u:totable())
    end
  end)

  it("are differentiable", function()
    local function r(...) return gpu.random.randn({ ... }, { dtype = "float64" }) end
    local function check(fn, inputs) local ok, msg = ag.gradcheck(fn, inputs); assert(ok, msg) end
    check(function(x) return x:tensor_split({ 1, 3 }, 2)[2] * 2 end, { r(2, 5) })
    check(function(x) return x:chunk(2, 1)[2] end, { r(3, 2) })
    check(function(x) return x:unbind(2)[3] end, { r(2, 3) })
    check(function(x) return x:narrow(2, 2, 2) end, { r(2, 4) })
    check(function(x) return x:unflatten(2, { 2, 3 }) end, { r(2, 6) })
    check(function(x) return x:unfold(2, 3, 1) end, { r(2, 5) })
  end)
end)

describe("diag_embed, block_diag, cartesian_prod, combinations", function()
  it("give PyTorch's results", function()
    each_case(BU, function(c, dtype, dev)
      local got
      if c.fn == "diag_embed" then
        got = gpu.diag_embed(arr(c.x, dtype, dev), c.offset, c.dim1, c.dim2)
      elseif c.fn == "combinations" then
        got = gpu.combinations(arr(c.x, dtype, dev), c.r, c.with_replacement)
      else
        local xs = {}
        for k, t in ipairs(c.xs) do xs[k] = arr(t, dtype, dev) end
        got = gpu[c.fn](table.unpack(xs))
      end
      expect(got, c.out, dtype)
    end)
  end)

  it("promote dtypes as PyTorch (block_diag, cartesian_prod)", function()
    local a, b = gpu.ones(1, { dtype = "int64" }), gpu.ones(2, { dtype = "float32" })
    assert.equal("float32", gpu.block_diag(a, b).dtype)
    assert.equal("float32", gpu.cartesian_prod(a, b).dtype)
    assert.equal("int64", gpu.block_diag(a, a).dtype)
  end)

  it("are differentiable", function()
    local function r(...) return gpu.random.randn({ ... }, { dtype = "float64" }) end
    local function check(fn, inputs) local ok, msg = ag.gradcheck(fn, inputs); assert(ok, msg) end
    check(function(x) return gpu.diag_embed(x, 1, 1, 3) end, { r(2, 3) })
    check(function(x) return gpu.diag_embed(x, -2) end, { r(3) })
    check(function(a, b) return gpu.block_diag(a, b) end, { r(2, 2), r(3) })
    check(function(a, b) return gpu.cartesian_prod(a, b) end, { r(2), r(3) })
    check(function(x) return gpu.combinations(x, 2) end, { r(4) })
  end)
end)

describe("masked_fill, index_add, index_copy, index_fill gradients", function()
  local function r(...) return gpu.random.randn({ ... }, { dtype = "float64" }) end
  local function check(fn, inputs) local ok, msg = ag.gradcheck(fn, inputs); assert(ok, msg) end
  it("pass gradcheck", function()
    local mask = gpu.array({ { true, false, true }, { false, false, true } })
    local idx = i64({ 3, 1, 3 }, "cpu")
    check(function(x) return x:masked_fill(mask, 2) end, { r(2, 3) })
    check(function(x, v) return x:masked_fill(mask, v) end, { r(2, 3), r() })
    check(function(x, s) return x:index_add(2, idx, s, { alpha = 1.5 }) end, { r(2, 4), r(2, 3) })
    check(function(x, s) return x:index_copy(1, i64({ 3, 1 }, "cpu"), s) end, { r(3, 2), r(2, 2) })
    check(function(x) return x:index_fill(2, idx, -1) end, { r(2, 4) })
    check(function(x, v) return x:index_fill(1, i64({ 2 }, "cpu"), v) end, { r(3, 2), r() })
  end)
end)

describe("in-place forms and autograd", function()
  it("refuse a leaf that requires grad, as the dispatched in-place ops do, and change nothing", function()
    local x = gpu.ones(2, 3, { dtype = "float64" }):requires_grad()
    local idx = i64({ 1 }, "cpu")
    local m = gpu.array({ true, false, true })
    local calls = {
      masked_fill_ = function() x:masked_fill_(m, 0) end,
      index_add_ = function() x:index_add_(1, idx, gpu.ones(1, 3, { dtype = "float64" })) end,
      index_copy_ = function() x:index_copy_(1, idx, gpu.ones(1, 3, { dtype = "float64" })) end,
      index_fill_ = function() x:index_fill_(1, idx, 0) end,
      scatter_reduce_ = function() x:scatter_reduce_(1, i64({ { 1 } }, "cpu"), gpu.ones(1, 1, { dtype = "float64" }), "sum") end,
      zero_ = function() x:zero_() end,
      copy_ = function() x:copy_(gpu.zeros(3)) end,
      clamp_ = function() x:clamp_(0, 0.5) end,
      clip_ = function() x:clip_(0, 0.5) end,
      normal_ = function() x:normal_() end,
      uniform_ = function() x:uniform_() end,
      exponential_ = function() x:exponential_() end,
      bernoulli_ = function() x:bernoulli_() end,
    }
    for name, f in pairs(calls) do
      h.fails({ name .. ": a leaf array that requires grad is used in an in-place op" }, f)
      h.assert_close(x:detach(), gpu.ones(2, 3, { dtype = "float64" }))
    end
    gpu.no_grad(function() x:zero_() end)
    assert.equal(0, x:detach():sum():item())
  end)

  it("record a non-leaf's in-place forms with their out-of-place forms' gradients", function()
    local idx = i64({ 3, 1 }, "cpu")
    local m = gpu.array({ true, false, true })
    local forms = {
      masked_fill = function(y, s) return y:masked_fill_(m, s:sum()) end,
      index_add = function(y, s) return y:index_add_(2, idx, s, { alpha = 1.5 }) end,
      index_copy = function(y, s) return y:index_copy_(2, idx, s) end,
      index_fill = function(y, s) return y:index_fill_(2, idx, s:sum()) end,
      scatter_reduce = function(y, s) return y:scatter_reduce_(2, i64({ { 2, 2 }, { 1, 3 } }, "cpu"), s, "amax") end,
      copy = function(y, s) return y:copy_(s:narrow(2, 1, 1)) end,
      clamp = function(y) return y:clamp_(-0.5, 0.5) end,
    }
    local outs = {
      masked_fill = function(x, s) return x:masked_fill(m, s:sum()) end,
      index_add = function(x, s) return x:index_add(2, idx, s, { alpha = 1.5 }) end,
      index_copy = function(x, s) return x:index_copy(2, idx, s) end,
      index_fill = function(x, s) return x:index_fill(2, idx, s:sum()) end,
      scatter_reduce = function(x, s) return x:scatter_reduce(2, i64({ { 2, 2 }, { 1, 3 } }, "cpu"), s, "amax") end,
      copy = function(x, s) return x * 0 + s:narrow(2, 1, 1) end,
      clamp = function(x) return x:clamp(-0.5, 0.5) end,
    }
    local w = gpu.array({ { 1, 2, 3 }, { 4, 5, 6 } }, { dtype = "float64" })
    for name, fi in pairs(forms) do
      local x0 = gpu.array({ { 0.3, -0.9, 0.7 }, { 0.1, 1.2, -0.2 } }, { dtype = "float64" })
      local s0 = gpu.array({ { 0.5, -0.25 }, { 2, 0.75 } }, { dtype = "float64" })
      local x, s = x0:copy():requires_grad(), s0:copy():requires_grad()
      local y = x * 1
      assert.is_true(rawequal(y, fi(y, s)), name)
      ;(y * w):sum():backward()
      local x2, s2 = x0:copy():requires_grad(), s0:copy():requires_grad()
      local want = outs[name](x2, s2)
      h.assert_close(want:detach(), y:detach())
      ;(want * w):sum():backward()
      h.assert_close(x2.grad, x.grad)
      if s2.grad then h.assert_close(s2.grad, s.grad) else assert.is_nil(s.grad, name) end
    end
    -- the random fills and zero_: x's old values get no gradient, the array stays tracked
    for _, name in ipairs { "zero_", "normal_", "uniform_", "exponential_", "bernoulli_" } do
      local x = gpu.ones(2, 3, { dtype = "float64" }):requires_grad()
      local y = x * 1
      y[name](y)
      assert.is_true(gpu.autograd.requires_grad(y), name)
      ;(y * x):sum():backward()
      h.assert_close(y:detach(), x.grad)
    end
  end)

  it("refuse a broadcast view and leave it as it was", function()
    local x = gpu.ones(3):expand(2, 3)
    h.fails({ "broadcast view" }, function() x:zero_() end)
    h.fails({ "broadcast view" }, function() x:masked_fill_(gpu.array({ true, true, true }), 0) end)
    local state = gpu.random.get_state()
    for _, name in ipairs({ "normal_", "uniform_", "exponential_", "bernoulli_" }) do
      h.fails({ name .. ": array is a broadcast view" }, x[name], x)
    end
    assert.same(state, gpu.random.get_state())              -- nothing drawn
    assert.equal(6, x:sum():item())
  end)

  it("refuse to make more views than a table should hold", function()
    local big = gpu.ones(1, 1):expand(1 << 31, 1 << 31)
    h.fails({ "unbind: would make 2147483648 views" }, gpu.unbind, big)
    h.fails({ "chunk: would make 2147483648 views" }, gpu.chunk, big, 1 << 31)
    h.fails({ "tensor_split: would make 1099511627776 views" }, gpu.tensor_split, gpu.ones(3), 1 << 40)
    h.fails({ "combinations: 100 elements taken 50 at a time make more than" }, gpu.combinations, gpu.ones(100), 50)
  end)
end)

describe("zero_, copy_, clamp, clamp_, clip_", function()
  it("write in place and return x", function()
    for _, dev in ipairs(h.devices()) do
      local x = gpu.arange(6.0, { device = dev }):reshape(2, 3)
      assert.equal(x, x:clamp_(1, 4))
      assert.same({ { 1, 1, 2 }, { 3, 4, 4 } }, x:totable())
      assert.same({ { 2, 2, 2 }, { 3, 4, 4 } }, x:clip_(2):totable())
      assert.same({ { 1, 1, 1 }, { 1, 1, 1 } }, gpu.clamp(x, nil, 1):totable())
      assert.equal(x, x:copy_(gpu.array({ 7, 8, 9 }, { dtype = "int64" })))   -- broadcast, cast, from the cpu
      assert.same({ { 7, 8, 9 }, { 7, 8, 9 } }, x:totable())
      assert.equal("float32", x.dtype)
      assert.equal(x, x:zero_())
      assert.equal(0, x:abs():sum():item())
      local t = gpu.zeros(3, 2, { device = dev })
      t.T:copy_(gpu.arange(6, { device = dev }):reshape(2, 3))
      assert.same({ { 0, 3 }, { 1, 4 }, { 2, 5 } }, t:totable())
      local i = gpu.array({ -3, 5, 9 }, { dtype = "int32", device = dev })
      assert.same({ 0, 5, 6 }, i:clamp_(0, 6):totable())
    end
  end)
end)

describe("views and likenesses", function()
  it("x.mT, x.H, x.mH transpose the last two axes, H and mH conjugated; x:stride()", function()
    local x = gpu.arange(24.0):reshape(2, 3, 4)
    assert.same({ 2, 4, 3 }, x.mT.shape)
    assert.same({ 12, 1, 4 }, x.mT:stride())
    h.assert_close(x.mT, gpu.swapaxes(x, 2, 3))
    local m = gpu.array({ { 1, 2, 3 }, { 4, 5, 6 } })
    h.assert_close(m.H, m.T)
    h.assert_close(m.mH, m.T)
    local z = gpu.complex(m, -m)
    h.assert_close(gpu.view_as_real(z.H:contiguous()), gpu.view_as_real(gpu.complex(m.T, m.T):contiguous()))
    h.assert_close(gpu.view_as_real(z.mT:contiguous()), gpu.view_as_real(gpu.complex(m.T, -m.T):contiguous()))
    assert.equal(3, gpu.array(3).mT:item())
    x.mT[{ 1, 1, 2 }] = -1                                -- a view: x[1][2][1] changes
    assert.equal(-1, x[{ 1, 2, 1 }])
    assert.same({ 12, 4, 1 }, x:stride())
    assert.equal(4, x:stride(2))
    assert.equal(1, x:stride(-1))
    assert.same({ 1, 4, 12 }, x.T:stride())
    assert.same({ 0, 1 }, gpu.ones(3):expand(2, 3):stride())
    assert.same({}, gpu.array(1):stride())
    h.fails({ "x.H is only for 0-d and 2-D arrays, got 3 axes" }, function() return x.H end)
    h.fails({ "x.mT needs a 0-d array or at least 2 axes" }, function() return gpu.ones(3).mT end)
    h.fails({ "x.mH needs" }, function() return gpu.ones(3).mH end)
    h.fails({ "axis 4 is out of range" }, function() return x:stride(4) end)
    h.fails({ "a 0-d array has no axis" }, function() return gpu.array(1):stride(1) end)
    local ok, msg = ag.gradcheck(function(a) return a.mT * 2 end, { gpu.random.randn({ 2, 2, 3 }, { dtype = "float64" }) })
    assert(ok, msg)
    ok, msg = ag.gradcheck(function(a) return a.H end, { gpu.random.randn({ 2, 3 }, { dtype = "float64" }) })
    assert(ok, msg)
    -- complex: the gradient through x.H and x.mH is the one through x:conj().T
    local re, im = gpu.random.randn({ 2, 3 }, { dtype = "float64" }), gpu.random.randn({ 2, 3 }, { dtype = "float64" })
    local c = gpu.complex(gpu.random.randn({ 3, 2 }, { dtype = "float64" }), gpu.random.randn({ 3, 2 }, { dtype = "float64" }))
    local grads = {}
    for k, f in ipairs({ function(z) return z.H end, function(z) return z.mH end, function(z) return z:conj().T end }) do
      local z = gpu.complex(re, im):requires_grad()
      gpu.real(gpu.sum(f(z) * c)):backward()
      grads[k] = gpu.view_as_real(z.grad)
    end
    h.assert_close(grads[1], grads[3], 1e-12)
    h.assert_close(grads[2], grads[3], 1e-12)
  end)

  it("type_as, view_as, reshape_as, expand_as", function()
    local x = gpu.arange(6.0):reshape(2, 3)
    local other = gpu.zeros(3, 2, { dtype = "int32" })
    assert.equal("int32", x:type_as(other).dtype)
    assert.equal(x, x:type_as(gpu.zeros(1)))
    assert.same({ 3, 2 }, x:view_as(other).shape)
    assert.same({ 3, 2 }, x.T:reshape_as(other).shape)
    assert.same({ { 0, 1, 2 }, { 0, 1, 2 } }, gpu.arange(3):expand_as(x):totable())
    assert.same({ 4, 2, 3 }, x:expand_as(gpu.zeros(4, 2, 3)).shape)
  end)

  it("new_zeros, new_ones, new_full, new_empty take x's dtype and device", function()
    for _, dev in ipairs(h.devices()) do
      local x = gpu.ones(2, { dtype = "int32", device = dev })
      local z = x:new_zeros(2, 3)
      assert.same({ 2, 3 }, z.shape)
      assert.equal("int32", z.dtype)
      assert.equal(dev, z.device)
      assert.same({ 1, 1 }, x:new_ones({ 2 }):totable())
      assert.equal("float64", x:new_ones({ 2 }, { dtype = "float64" }).dtype)
      assert.equal("float64", x:new_zeros(3, { dtype = "float64" }).dtype)
      assert.same({ 7, 7, 7 }, x:new_full({ 3 }, 7):totable())
      assert.same({ 4, 1 }, x:new_empty(4, 1).shape)
      assert.same({}, x:new_full({}, 2).shape)
    end
  end)
end)

describe("random fills and *_like", function()
  local N = 200000
  local function moments(x)
    local m = x:astype("float64"):mean():item()
    return m, ((x:astype("float64") - m) ^ 2):mean():item()
  end

  it("draw from the named distributions (moments within 5 standard errors at a fixed seed)", function()
    gpu.random.seed(11)
    for _, dev in ipairs(h.devices()) do
      local x = gpu.empty(N, { dtype = "float64", device = dev })
      local function near(v, target, se) assert(math.abs(v - target) < 5 * se, ("%g vs %g"):format(v, target)) end
      local m, v = moments(x:normal_(2, 3))
      near(m, 2, 3 / math.sqrt(N)); near(v, 9, 9 * math.sqrt(2 / N))
      m, v = moments(x:uniform_(-1, 3))
      near(m, 1, math.sqrt(16 / 12 / N)); near(v, 16 / 12, 0.01)
      assert.is_true(x:min():item() >= -1 and x:max():item() < 3)
      m, v = moments(x:exponential_(4))
      near(m, 0.25, 0.25 / math.sqrt(N)); near(v, 1 / 16, 1 / 16 * math.sqrt(8 / N))
      assert.is_true(x:min():item() >= 0)
      m = moments(x:bernoulli_(0.3))
      near(m, 0.3, math.sqrt(0.21 / N))
      local b = gpu.zeros(N, { dtype = "bool", device = dev }):bernoulli_(0.5)
      near(b:astype("float64"):mean():item(), 0.5, math.sqrt(0.25 / N))
      local p = gpu.array({ 0, 1 }, { device = dev })
      assert.same({ { 0, 1 }, { 0, 1 } }, gpu.zeros(2, 2, { dtype = "int64", device = dev }):bernoulli_(p):totable())
      m, v = moments(gpu.randn_like(x))
      near(m, 0, 1 / math.sqrt(N)); near(v, 1, math.sqrt(2 / N))
      m = moments(gpu.rand_like(x))
      near(m, 0.5, math.sqrt(1 / 12 / N))
      local r = gpu.randint_like(gpu.zeros(N, { dtype = "int32", device = dev }), -2, 3)
      assert.equal("int32", r.dtype)
      assert.equal(-2, r:min():item())
      assert.equal(2, r:max():item())
      near(moments(r), 0, math.sqrt(2 / N))
      local f = gpu.randint_like(gpu.zeros(1000, { device = dev }), 4)
      assert.equal("float32", f.dtype)
      assert.is_true(f:min():item() == 0 and f:max():item() == 3)
    end
  end)

  it("keep x's dtype, follow the seed and take a generator", function()
    local x = gpu.zeros(5, { dtype = "float16" })
    assert.equal("float16", x:normal_().dtype)
    gpu.random.seed(3)
    local a = gpu.zeros(5):uniform_():totable()
    gpu.random.seed(3)
    assert.same(a, gpu.zeros(5):uniform_():totable())
    local g1, g2 = gpu.random.Generator(9), gpu.random.Generator(9)
    assert.same(gpu.zeros(4):normal_(0, 1, { generator = g1 }):totable(), g2:normal(0, 1, { 4 }):totable())
    assert.same(gpu.rand_like(gpu.zeros(3), { generator = gpu.random.Generator(4) }):totable(),
      gpu.random.Generator(4):rand({ 3 }):totable())
    assert.equal("float64", gpu.rand_like(gpu.zeros(2), { dtype = "float64" }).dtype)
    assert.equal("int32", gpu.randint_like(gpu.zeros(2), 5, nil, { dtype = "int32" }).dtype)
    assert.equal("int16", gpu.randint_like(gpu.zeros(2), 5, { dtype = "int16" }).dtype)
    assert.equal("uint8", gpu.randint_like(gpu.zeros(2), 1, 5, { dtype = "uint8" }).dtype)
  end)
end)

describe("misuse", function()
  it("is an error naming the function and the fault, and changes nothing", function()
    local x = gpu.arange(6.0):reshape(2, 3)
    local before = x:totable()
    local idx = i64({ 1 }, "cpu")
    h.fails({ "masked_fill", "mask must be a bool array" }, gpu.masked_fill, x, gpu.ones(2, 3), 0)
    h.fails({ "masked_fill", "does not broadcast" }, gpu.masked_fill, x, gpu.array({ true, false }), 0)
    h.fails({ "masked_fill", "mask of shape (4, 2) does not broadcast" }, gpu.masked_fill, x, gpu.zeros(4, 2, { dtype = "bool" }), 0)
    h.fails({ "masked_fill_", "does not broadcast to x's shape" }, x.masked_fill_, x, gpu.zeros(4, 2, 3, { dtype = "bool" }), 0)
    h.fails({ "masked_fill", "value must be a number or a 0-d array" }, gpu.masked_fill, x, x:gt(1), "a")
    h.fails({ "masked_fill", "0-d array" }, gpu.masked_fill, x, x:gt(1), gpu.ones(2))
    h.fails({ "masked_fill", "gpu.array expected" }, gpu.masked_fill, 3, x:gt(1), 0)
    h.fails({ "index_add", "index must be int64 or int32" }, gpu.index_add, x, 1, gpu.ones(1), gpu.ones(1, 3))
    h.fails({ "index_add", "out of range", "1-based" }, gpu.index_add, x, 1, i64({ 0 }, "cpu"), gpu.ones(1, 3))
    h.fails({ "index_add", "out of range" }, gpu.index_add, x, 1, i64({ 3 }, "cpu"), gpu.ones(1, 3))
    h.fails({ "index_add", "source must have shape (1, 3)" }, gpu.index_add, x, 1, idx, gpu.ones(2, 3))
    h.fails({ "index_add", "same dtype" }, gpu.index_add, x, 1, idx, gpu.ones(1, 3, { dtype = "float64" }))
    h.fails({ "index_add", "axis 3 is out of range" }, gpu.index_add, x, 3, idx, gpu.ones(1, 3))
    h.fails({ "index_add", "unknown option 'alpa'" }, gpu.index_add, x, 1, idx, gpu.ones(1, 3), { alpa = 2 })
    h.fails({ "index_add", "index must be 1-D" }, gpu.index_add, x, 1, i64({ { 1 } }, "cpu"), gpu.ones(1, 3))
    h.fails({ "index_add_", "at most 5 arguments" }, x.index_add_, x, 1, idx, gpu.ones(1, 3), nil, 1)
    h.fails({ "index_copy_", "source must have shape" }, x.index_copy_, x, 2, idx, gpu.ones(2, 3))
    h.fails({ "index_fill_", "value must be a number" }, x.index_fill_, x, 2, idx, {})
    h.fails({ "index_fill", "x must have at least 1 axis" }, gpu.index_fill, gpu.array(1), 1, idx, 0)
    local si = i64({ { 1, 2 } }, "cpu")
    h.fails({ "scatter_reduce", "reduce must be one of" }, gpu.scatter_reduce, x, 2, si, x, "max")
    h.fails({ "scatter_reduce", "unknown option 'includeself'" }, gpu.scatter_reduce, x, 2, si, x, "sum", { includeself = false })
    h.fails({ "scatter_reduce", "src must be at least index's shape" }, gpu.scatter_reduce, x, 2, si, gpu.ones(1, 1), "sum")
    h.fails({ "scatter_reduce", "same dtype" }, gpu.scatter_reduce, x, 2, si, x:double(), "sum")
    h.fails({ "scatter_reduce", "out of range" }, gpu.scatter_reduce, x, 2, i64({ { 4 } }, "cpu"), x, "sum")
    h.fails({ "scatter_reduce_", "index must have x's 2 axes" }, x.scatter_reduce_, x, 2, idx, x, "sum")
    local v3 = gpu.zeros(3)
    for _, r in ipairs({ "sum", "mean", "prod", "amax" }) do
      h.fails({ "scatter_reduce", "is out of range for axis 1 with size 3" }, gpu.scatter_reduce, v3, 1, i64({ 1, 4 }, "cpu"),
        gpu.ones(2), r)
      h.fails({ "scatter_reduce_", "is out of range for axis 1 with size 3" }, v3.scatter_reduce_, v3, 1, i64({ -4 }, "cpu"),
        gpu.ones(1), r)
    end
    assert.same({ 0, 0, 0 }, v3:totable())
    assert.same({ 1, 0, 2 }, gpu.scatter_reduce(v3, 1, gpu.array({ -1, 1, -1 }, { dtype = "int32" }), gpu.ones(3), "sum"):totable())
    assert.same({ 1, 0, 5 }, gpu.scatter_reduce(v3, 1, i64({ -1, 1, 3 }, "cpu"), gpu.array({ 5, 1, 2 }), "amax"):totable())
    h.fails({ "tensor_split", "at least 1" }, x.tensor_split, x, 0)
    h.fails({ "tensor_split", "integer or a list" }, x.tensor_split, x, "a")
    h.fails({ "tensor_split", "position 2 must be an integer" }, x.tensor_split, x, { 1, 1.5 })
    h.fails({ "chunk", "chunks must be" }, x.chunk, x, 0)
    h.fails({ "unbind", "axis 3 is out of range" }, x.unbind, x, 3)
    h.fails({ "narrow", "runs past the end" }, x.narrow, x, 2, 2, 3)
    h.fails({ "narrow", "start 5 is out of range" }, x.narrow, x, 2, 5, 0)
    h.fails({ "narrow", "length must be" }, x.narrow, x, 2, 1, -1)
    h.fails({ "unflatten", "multiply to 4" }, x.unflatten, x, 2, { 2, 2 })
    h.fails({ "unflatten", "only one size may be -1" }, x.unflatten, x, 2, { -1, -1 })
    h.fails({ "unflatten", "non-empty list" }, x.unflatten, x, 2, {})
    h.fails({ "unfold", "larger than dim 2's size 3" }, gpu.unfold, x, 2, 4, 1)
    h.fails({ "unfold", "step must be >= 1" }, gpu.unfold, x, 2, 2, 0)
    h.fails({ "unfold", "size must be >= 0" }, gpu.unfold, x, 2, -1, 1)
    h.fails({ "unfold", "axis 3 is out of range" }, gpu.unfold, x, 3, 1, 1)
    h.fails({ "unfold", "size must be an integer" }, gpu.unfold, x, 1, 0.5, 1)
    h.fails({ "diag_embed", "same axis" }, gpu.diag_embed, x, 0, 1, -3)
    h.fails({ "diag_embed", "offset must be an integer" }, gpu.diag_embed, x, 0.5)
    h.fails({ "block_diag", "at most 2 axes" }, gpu.block_diag, gpu.ones(1, 1, 1))
    h.fails({ "cartesian_prod", "must be 1-D" }, gpu.cartesian_prod, x)
    h.fails({ "cartesian_prod", "at least one array" }, gpu.cartesian_prod)
    h.fails({ "combinations", "x must be 1-D" }, gpu.combinations, x)
    h.fails({ "combinations", "r must be >= 0" }, gpu.combinations, gpu.ones(3), -1)
    h.fails({ "combinations", "with_replacement must be a boolean" }, gpu.combinations, gpu.ones(3), 2, 1)
    h.fails({ "view_as", "other: gpu.array expected" }, x.view_as, x, { 3, 2 })
    h.fails({ "expand_as", "does not expand to" }, x.expand_as, x, gpu.ones(3, 3))
    h.fails({ "copy_", "does not broadcast to x's shape" }, x.copy_, x, gpu.ones(3, 3))
    h.fails({ "clamp_", "at least one of min and max" }, x.clamp_, x)
    h.fails({ "normal_", "floating-point" }, gpu.zeros(2, { dtype = "int64" }).normal_, gpu.zeros(2, { dtype = "int64" }))
    h.fails({ "normal_", "std must be >= 0" }, x.normal_, x, 0, -1)
    h.fails({ "normal_", "mean must be a number" }, x.normal_, x, "a")
    h.fails({ "uniform_", "from (2) must be <= to (1)" }, x.uniform_, x, 2, 1)
    h.fails({ "exponential_", "lambd must be > 0" }, x.exponential_, x, 0)
    h.fails({ "bernoulli_", "p must be in [0, 1]" }, x.bernoulli_, x, 1.5)
    local state = gpu.random.get_state()
    h.fails({ "bernoulli_", "does not expand to" }, x.bernoulli_, x, gpu.ones(4))
    h.fails({ "bernoulli_", "p must be in [0, 1]" }, x.bernoulli_, x, gpu.array({ 0.5, 2, 0 }))
    assert.same(state, gpu.random.get_state())
    h.fails({ "normal_", "must be a gpu.random.Generator" }, x.normal_, x, 0, 1, { generator = {} })
    h.fails({ "bad argument #2 to 'new_zeros'", "size must be an integer >= 0" }, gpu.new_zeros, x, -1)
    h.fails({ "bad argument #3 to 'new_ones'", "size must be an integer >= 0" }, gpu.new_ones, x, 2, 0.5)
    h.fails({ "bad argument #2 to 'new_full'", "shape entry 2 must be a size" }, gpu.new_full, x, { 1, -1 }, 0)
    h.fails({ "new_zeros", "unknown option 'dtyp'" }, x.new_zeros, x, 2, { dtyp = "float64" })
    h.fails({ "new_full", "value must be a number" }, x.new_full, x, { 2 }, "a")
    h.fails({ "rand_like", "floating-point" }, gpu.rand_like, gpu.zeros(2, { dtype = "int64" }))
    h.fails({ "randn_like", "floating-point dtype, got int32" }, gpu.randn_like, x, { dtype = "int32" })
    h.fails({ "randint_like", "nothing may follow the options" }, gpu.randint_like, x, 3, {}, {})
    h.fails({ "randint_like", "high must be an integer" }, gpu.randint_like, x, 0, 1e300)
    h.fails({ "randn_like", "unknown option" }, gpu.randn_like, x, { devce = "cpu" })
    h.fails({ "randint_like", "high (2) must be greater than low (2)" }, gpu.randint_like, x, 2, 2)
    h.fails({ "randint_like", "high must be an integer" }, gpu.randint_like, x, 0.5)
    assert.same(before, x:totable())
  end)
end)

-- On the cpu, index_add and scatter_reduce's sum into a 1-D x add through the raw positions
-- in per-thread sums (cpu_index.c's gl_cpu_scatter_add; in place, in order, where x is not
-- small beside the index), and amax / amin run per-thread running values folded in order:
-- against loops in Lua, with one and two threads (child processes), every dtype of the
-- adds, negative positions, and a position out of range leaving x as it was on both paths.
describe("the cpu's scatters into a 1-D x", function()
  it("agree with a loop in order, with one and two threads", function()
    local ran = h.threads_ok([==[
      local fails = {}
      local function check(ok, what) if not ok then fails[#fails + 1] = what end end
      local g = gpu.random.Generator(5)
      local m = 70000
      for _, n in ipairs({ 50, 100000 }) do              -- per-thread sums; in place
        local pos = g:randint(1, n, m, { dtype = "int64" }):totable()
        for j = 2, m, 5 do pos[j] = pos[j] - n - 1 end   -- negatives count from the end
        local ipos = gpu.array(pos, { dtype = "int64" })
        local base = g:randint(-40, 40, m, { dtype = "int64" }):totable()
        for _, dt in ipairs({ "float32", "float64", "int32", "int64" }) do
          local x0 = gpu.arange(n, { dtype = dt }) % 7
          local want = x0:astype("float64"):totable()
          for j = 1, m do
            local k = pos[j] > 0 and pos[j] or pos[j] + n + 1
            want[k] = want[k] + base[j] / (dt:find("float") and 4 or 1)
          end
          local src = gpu.array(base, { dtype = "float64" }) / (dt:find("float") and 4 or 1)
          src = src:astype(dt)
          for _, how in ipairs({ "index_add", "sum" }) do
            local got = how == "index_add" and gpu.index_add(x0, 1, ipos, src)
              or gpu.scatter_reduce(x0, 1, ipos, src, "sum")
            got = got:astype("float64"):totable()
            local ok = true
            for k = 1, n do ok = ok and got[k] == want[k] end      -- quarters: exact in float32 too
            check(ok, ("%s %s n=%d"):format(how, dt, n))
          end
          -- a position out of range (late in the index: after adds were made) leaves x as it was
          for _, bad in ipairs({ n + 1, -n - 1, 0 }) do
            local p2 = ipos:copy()
            p2[m - 3] = bad
            local y = x0:copy()
            local ok, err = pcall(function() y:index_add_(1, p2, src) end)
            check(not ok and tostring(err):find("index " .. bad .. " is out of range for axis 1 with size " .. n, 1, true),
              ("error %s %s n=%d: %s"):format(dt, bad, n, tostring(err)))
            check(gpu.all(y:eq(x0)):item(), ("unchanged %s %s n=%d"):format(dt, bad, n))
          end
        end
      end
      -- amax / amin: NaN wins, ties (-0, +0 too) go to the last element
      local vals = { -2, -0.0, 0.0, 1, 1, 3, 0 / 0, 2.5, -1 / 0, 1 / 0 }
      local n = 40
      local pos = g:randint(1, n, m, { dtype = "int64" }):totable()
      local pick = g:randint(1, #vals, m, { dtype = "int64" }):totable()
      local s = {}
      for j = 1, m do s[j] = (pick[j] ~= 7 or j % 97 == 0) and vals[pick[j]] or 1 end   -- few NaNs
      for _, max in ipairs({ true, false }) do
        local out, seen = {}, {}
        for j = 1, m do
          local k, v, c = pos[j], s[j], out[pos[j]]
          local take = not seen[k] or (c ~= c and v ~= v) or (c == c and (max and not (v < c) or not max and not (v > c)))
          if take then out[k] = v end
          seen[k] = true
        end
        local got = gpu.scatter_reduce(gpu.zeros(n), 1, gpu.array(pos, { dtype = "int64" }), gpu.array(s),
          max and "amax" or "amin", { include_self = false }):totable()
        for k = 1, n do
          local a, b = got[k], out[k] or 0
          check((a ~= a and b ~= b) or (a == b and (a ~= 0 or 1 / a == 1 / b)), ("%s position %d: %s, want %s"):format(
            max and "amax" or "amin", k, tostring(a), tostring(b)))
        end
      end
      io.write(#fails == 0 and "ok" or table.concat(fails, "\n"))
    ]==])
    if not ran then return pending("needs GPULUA_BIN (set by make test)") end
  end)
end)
