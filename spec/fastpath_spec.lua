-- fastpath_spec.lua — the CUDA fast paths against the cpu, where they differ from the general
-- kernels: 16-byte vector accesses of contiguous elementwise ops (sizes with and without a
-- tail, views that are or are not 16-byte aligned, scalar operands, in place, grids of more
-- than one block), full reductions of one contiguous run (a head before the first 16-byte
-- boundary, a tail, one block and many), and the vector stores of the random fills.
-- Runs only where a GPU answers (it compares the two devices).
local h = require "spec.helper"
local gpu = h.gpu

if not gpu.is_available() then
  describe("cuda fast paths", function()
    pending("no usable CUDA device here")
  end)
  return
end

local tol = { float32 = 1e-5, float64 = 1e-12, float16 = 2e-3, bfloat16 = 1.6e-2 }

local values = h.values

-- fn on the cpu operands and on their cuda copies: both fail, or agree within tol[dtype]
local function same(what, fn, args, t)
  local ok_c, rc = pcall(fn, table.unpack(args))
  local g = {}
  for i, a in ipairs(args) do g[i] = type(a) == "userdata" and a:to("cuda") or a end
  local ok_g, rg = pcall(fn, table.unpack(g))
  assert(ok_c == ok_g, what .. ": cpu " .. tostring(rc) .. ", cuda " .. tostring(rg))
  if not ok_c then return end
  assert.equal(rc.dtype, rg.dtype, what)
  local ok, msg = h.close(rg:to("cpu"), rc, t or tol[rc.dtype] or 0)
  assert(ok, what .. ": " .. tostring(msg))
end

local sizes = { 1, 3, 15, 16, 17, 1000, 300007 }

describe("cuda fast paths: elementwise", function()
  it("has a tolerance for every float dtype", function() h.assert_covers_dtypes(tol, "tol", "float") end)
  it("binary and unary ops over contiguous arrays of every size class", function()
    for _, dt in ipairs(h.dtypes()) do
      for _, n in ipairs(sizes) do
        local a, b = values(dt, n, 1), values(dt, n, 2)
        local w = dt .. " n=" .. n
        if dt ~= "bool" then
          same("add " .. w, function(x, y) return x + y end, { a, b })
          same("mul scalar " .. w, function(x) return x * 3 end, { a })
          same("sub scalar left " .. w, function(x) return 2 - x end, { a })
          same("maximum " .. w, function(x, y) return gpu.maximum(x, y) end, { a, b })
          same("abs " .. w, function(x) return gpu.abs(x) end, { a })
        end
        same("lt " .. w, function(x, y) return x:lt(y) end, { a, b })
        same("eq scalar " .. w, function(x) return x:eq(dt == "bool" and true or 1) end, { a })
        same("logical_not " .. w, function(x) return gpu.logical_not(x) end, { a })
        if dt:match("float") then
          same("exp " .. w, function(x) return gpu.exp(x) end, { a })
          same("div " .. w, function(x, y) return x / y end, { a, b })
          same("isnan " .. w, function(x) return gpu.isnan(x) end, { a })
        end
      end
    end
  end)

  it("views: offsets that break and keep 16-byte alignment, in-place ops", function()
    for _, dt in ipairs{ "float32", "float16", "float64", "uint8" } do
      local a, b = values(dt, 10007, 3), values(dt, 10007, 4)
      for _, off in ipairs{ 2, 3, 5, 9, 17 } do       -- element offsets into both operands
        local w = dt .. " offset " .. (off - 1)
        same("add " .. w, function(x, y) return x[{ { off, -1 } }] + y[{ { off, -1 } }] end, { a, b })
        same("add mixed offsets " .. w, function(x, y) return x[{ { off, -2 } }] + y[{ { 1, -1 - off } }] end, { a, b })
        same("neg " .. w, function(x) return -x[{ { off, -1 } }] end, { a })
        same("add_ in place " .. w, function(x, y)
          local z = x:copy(); local v = z[{ { off, -1 } }]; v:add_(y[{ { off, -1 } }]); return z
        end, { a, b })
      end
      same("add_ in place " .. dt, function(x, y) local z = x:copy(); z:add_(y); return z end, { a, b })
      same("mul_ scalar in place " .. dt, function(x) local z = x:copy(); z:mul_(2); return z end, { a })
    end
  end)
end)

describe("cuda fast paths: full reductions", function()
  it("every kind over contiguous runs with heads, tails, one block and many", function()
    for _, dt in ipairs(h.dtypes_except("bfloat16")) do
      for _, n in ipairs{ 1, 5, 33, 4097, 300007 } do
        local x = values(dt, n + 9, 5)
        for _, off in ipairs{ 1, 2, 4, 9 } do                  -- heads of 0 .. 8 elements
          local w = dt .. " n=" .. n .. " offset " .. (off - 1)
          local v = function(a) return a[{ { off, off + n - 1 } }] end
          for _, op in ipairs{ "sum", "max", "min", "all", "any", "argmax" } do
            same(op .. " " .. w, function(a) return v(a)[op](v(a)) end, { x }, 1e-5)
          end
          if dt:match("float") then
            for _, op in ipairs{ "mean", "var", "std", "logsumexp" } do
              same(op .. " " .. w, function(a) return v(a)[op](v(a)) end, { x }, dt == "float16" and 2e-3 or 1e-5)
            end
            same("norm 1 " .. w, function(a) return v(a):norm(nil, { ord = 1 }) end, { x }, 1e-5)
            same("norm 2 " .. w, function(a) return v(a):norm() end, { x }, 1e-5)
            same("norm inf " .. w, function(a) return v(a):norm(nil, { ord = math.huge }) end, { x }, 1e-5)
          end
        end
      end
    end
  end)

  it("NaN wins max and min, and sums are accurate over 2^24 + 3 float32", function()
    local x = values("float32", 100003, 6)
    x[50001] = 0 / 0
    same("max with NaN", function(a) return a:max() end, { x })
    same("min with NaN", function(a) return a:min() end, { x })
    same("sum with NaN", function(a) return a:sum() end, { x })
    local ones = gpu.ones((1 << 24) + 3, { device = "cpu" })
    same("sum of 2^24 + 3 ones", function(a) return a:sum() end, { ones }, 0)
  end)
end)

describe("cuda fast paths: random fills", function()
  local R = gpu.random
  local function both(f)
    local c = f(R.Generator(77), "cpu")
    local g = f(R.Generator(77), "cuda")
    return c, g:to("cpu")
  end
  it("vector stores give the cpu's numbers for every dtype and length", function()
    for _, n in ipairs{ 1, 2, 3, 4, 5, 8, 9, 1000003 } do
      for _, dt in ipairs{ "float32", "float64", "float16", "bfloat16" } do
        local c, g = both(function(gen, d) return gen:rand(n, { dtype = dt, device = d }) end)
        h.assert_close(g, c, 0)
        c, g = both(function(gen, d) return gen:randn(n, { dtype = dt, device = d }) end)
        h.assert_close(g, c, dt == "float64" and 1e-12 or (tol[dt] or 2e-6))
      end
      for _, dt in ipairs{ "int64", "int32", "uint8" } do
        local c, g = both(function(gen, d) return gen:randint(0, 200, n, { dtype = dt, device = d }) end)
        h.assert_close(g, c, 0)
      end
      for _, dt in ipairs{ "bool", "float32", "float64", "int64", "float16" } do
        local c, g = both(function(gen, d) return gen:bernoulli(0.3, n, { dtype = dt, device = d }) end)
        h.assert_close(g, c, 0)
      end
    end
  end)
end)
