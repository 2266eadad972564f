-- parity_spec.lua — every elementwise op on the cpu and on cuda from the same host-made
-- inputs, over contiguous, transposed, sliced and broadcast operands and every dtype:
-- results must agree within a tolerance set by the result's dtype, NaN and inf in the
-- same places, and an (op, dtype) the cpu refuses must be refused on cuda too.
-- Runs only where a GPU answers (whatever GPULUA_TEST_DEVICES says: it needs both).
local h = require "spec.helper"
local gpu = h.gpu

if not gpu.is_available() then
  describe("cpu/cuda parity", function()
    pending("no usable CUDA device here")
  end)
  return
end

-- every elementwise op and dtype C has (kernels/elem_ops.h, kernels/dtypes.h)
local unary, binary = gpu._ops.unary, gpu._ops.binary
local dtypes = {}
for _, d in ipairs(gpu._dtypes) do dtypes[#dtypes + 1] = d.name end

-- tolerance by the result's dtype: a few ulps of float32/float64 (the GPU's libm is not
-- glibc), one ulp of the storage types after rounding
local tol = { float32 = 1e-5, float64 = 1e-12, float16 = 2e-3, bfloat16 = 1.6e-2, complex64 = 1e-5, complex128 = 1e-12 }
local function kind(dt) return gpu._dtypes[dt].kind end

-- deterministic inputs with the values that matter: NaN, infinities, signed zeros,
-- integers of both signs, small and moderate magnitudes
local function values(dt, n, seed)
  local out, s = {}, seed
  local specials = { 0 / 0, math.huge, -math.huge, -0.0, 0.0, 1.0, -1.0, 0.5 }
  for i = 1, n do
    s = (s * 1103515245 + 12345) % 2147483648
    local r = s / 2147483648
    if dt == "bool" then out[i] = r < 0.5
    elseif kind(dt) == "uint" then out[i] = math.floor(r * 256)
    elseif kind(dt) == "int" then out[i] = math.floor(r * 41) - 20
    elseif i <= #specials and seed % 2 == 1 then out[i] = specials[i]
    else out[i] = (r - 0.5) * 10 end
  end
  return out
end

local function input(dt, seed)          -- (6, 7) on the cpu
  if kind(dt) == "complex" then            -- parts as two float inputs' values
    local part = dt == "complex64" and "float32" or "float64"
    local re, im, t = values(part, 42, seed), values(part, 42, seed + 2), {}
    for i = 1, 42 do t[i] = { re[i], im[i] } end
    return gpu.view_as_complex(gpu.array(t, { dtype = part, device = "cpu" })):reshape(6, 7)
  end
  return gpu.array(values(dt, 42, seed), { dtype = dt, device = "cpu" }):reshape(6, 7)
end

-- layouts: each takes the (6, 7) base and returns the operand to use
local layouts = {
  contiguous = function(x) return x end,
  transposed = function(x) return x.T end,
  sliced = function(x) return x[{ { 2, 6, 2 }, { 7, 1, -2 } }] end,
  broadcast = function(x) return x[{ { 1, 1 }, ":" }]:expand(6, 7) end,
}
local layout_names = { "contiguous", "transposed", "sliced", "broadcast" }

-- runs fn on both devices; both must fail, or both succeed and agree. A name ending in
-- "~" takes a looser tolerance: sums of many float32 terms with cancellation, where
-- both devices are accurate relative to the sum of magnitudes but not to the result.
local function same(what, fn, ...)
  local args = { ... }
  local loose = what:sub(-1) == "~"
  local ok_c, rc = pcall(fn, table.unpack(args))
  for i, a in ipairs(args) do if type(a) == "userdata" then args[i] = a:to("cuda") end end
  local ok_g, rg = pcall(fn, table.unpack(args))
  assert(ok_c == ok_g, what .. ": cpu " .. (ok_c and "succeeded" or "failed (" .. tostring(rc) .. ")")
         .. " but cuda " .. (ok_g and "succeeded" or "failed (" .. tostring(rg) .. ")"))
  if not ok_c then return end
  assert.equal("cuda:0", rg.device)
  assert.equal(rc.dtype, rg.dtype, what)
  rg = rg:to("cpu")
  local t = tol[rc.dtype]
  if kind(rc.dtype) == "complex" then rc, rg = gpu.view_as_real(rc:contiguous()), gpu.view_as_real(rg:contiguous()) end
  local ok, msg = h.close(rg, rc, loose and 1e-3 or t or 0)
  assert(ok, what .. ": " .. tostring(msg))
end

describe("cpu/cuda parity", function()
  for _, op in ipairs(unary) do
    it("unary " .. op, function()
      for _, dt in ipairs(dtypes) do
        local base = input(dt, 7)
        for _, lname in ipairs(layout_names) do
          same(op .. " " .. dt .. " " .. lname, function(x) return gpu[op](layouts[lname](x)) end, base)
        end
      end
    end)
  end

  for _, op in ipairs(binary) do
    it("binary " .. op, function()
      for _, dt in ipairs(dtypes) do
        local a, b = input(dt, 7), input(dt, 10)
        for _, lname in ipairs(layout_names) do
          local L = layouts[lname]
          same(op .. " " .. dt .. " " .. lname, function(x, y) return gpu[op](L(x), L(y)) end, a, b)
        end
        -- row broadcast, array op scalar, scalar op array
        same(op .. " " .. dt .. " row", function(x, y) return gpu[op](x, y[{ { 3, 3 }, ":" }]) end, a, b)
        local sc = dt == "bool" and true or ((kind(dt) == "int" or kind(dt) == "uint") and 3 or 2.5)
        same(op .. " " .. dt .. " scalar right", function(x) return gpu[op](x, sc) end, a)
        same(op .. " " .. dt .. " scalar left", function(x) return gpu[op](sc, x) end, a)
      end
    end)
  end

  it("mixed-dtype binary ops promote the same way", function()
    local pairs_ = { { "int32", "float32" }, { "uint8", "int64" }, { "float16", "bfloat16" },
                     { "bool", "float64" }, { "int64", "float16" } }
    for _, p in ipairs(pairs_) do
      same("add " .. p[1] .. "+" .. p[2], function(x, y) return x + y end, input(p[1], 3), input(p[2], 5))
      same("div " .. p[1] .. "/" .. p[2], function(x, y) return x / y end, input(p[1], 3), input(p[2], 5))
    end
  end)

  it("in-place ops and where", function()
    for _, dt in ipairs(dtypes) do
      local c = input("bool", 11)
      local a, b = input(dt, 7), input(dt, 10)
      same("where " .. dt, function(k, x, y) return gpu.where(k, x, y) end, c, a, b)
      same("where " .. dt .. " transposed", function(k, x, y) return gpu.where(k.T, x.T, y.T) end, c, a, b)
      local s = dt == "bool" and false or 1
      same("where " .. dt .. " scalars", function(k, x) return gpu.where(k, x, s) end, c, a)
      same("where " .. dt .. " broadcast", function(k, x) return gpu.where(k[{ { 1, 1 }, ":" }], s, x) end, c, a)
    end
    same("add_ on a transposed view", function(x, y) local z = x:copy(); z.T:add_(y.T); return z end,
         input("float32", 7), input("float32", 10))
    same("neg_", function(x) local z = x:copy(); z:neg_(); return z end, input("int64", 7))
  end)

  it("astype between every dtype pair agrees bit for bit", function()
    for _, from in ipairs(dtypes) do
      for _, to in ipairs(dtypes) do
        same(from .. "->" .. to, function(x) return x:astype(to) end, input(from, 7))
        same(from .. "->" .. to .. " transposed", function(x) return x.T:astype(to) end, input(from, 7))
      end
    end
  end)
end)

-- The second half of the backend: reductions, scans, matmul (cuBLAS and the integer
-- kernel), gather/scatter/mask selection, sort/argsort/topk, from the same host inputs.
describe("cpu/cuda parity: reductions, scans, matmul, indexing, sort", function()
  local axes = { { "all" }, { "axis 1", 1 }, { "axis -1 keepdims", -1, { keepdims = true } }, { "axes {1,2}", { 1, 2 } } }
  local reductions = { "std" }                 -- var's square root, and every reduction C has
  table.move(gpu._ops.reductions, 1, #gpu._ops.reductions, 2, reductions)
  for _, op in ipairs(reductions) do
    it("reduction " .. op, function()
      for _, dt in ipairs(dtypes) do
        for _, ln in ipairs(layout_names) do
          for _, ax in ipairs(axes) do
            same(op .. " " .. dt .. " " .. ln .. " " .. ax[1], function(x) return x[op](x, ax[2], ax[3]) end,
                 layouts[ln](input(dt, 3)))
          end
        end
      end
    end)
  end

  it("reductions: var ddof, norm orders, long rows (block and multi-part paths)", function()
    local x = input("float32", 5)
    same("var ddof=1", function(v) return v:var(2, { ddof = 1 }) end, x)
    for _, ord in ipairs{ 1, 2, 3, 0, math.huge, -math.huge } do
      same("norm ord " .. ord, function(v) return v:norm(2, { ord = ord }) end, x)
    end
    local big = gpu.array(values("float32", 300000, 8), { device = "cpu" })
    for _, op in ipairs{ "sum", "mean", "var", "max", "argmin", "logsumexp", "norm" } do
      same(op .. " of 300000", function(v) return v[op](v) end, big)
      -- 1e5 terms in [-5, 5] sum to about +-1e3 with rounding near 1e-4: "~" tolerance
      same(op .. " over a long axis" .. (op == "sum" and "~" or ""), function(v) return v:reshape(3, 100000)[op](v:reshape(3, 100000), 2) end, big)
      same(op .. " over a slow axis", function(v) return v:reshape(1000, 300)[op](v:reshape(1000, 300), 1) end, big)
    end
    local ones = gpu.ones(1 << 24, { device = "cpu" })
    same("sum of 2^24 ones is exact", function(v) return v:sum() end, ones)
  end)

  it("scans cumsum and cumprod along each axis", function()
    for _, dt in ipairs(dtypes) do
      for _, ln in ipairs(layout_names) do
        for _, op in ipairs{ "cumsum", "cumprod" } do
          for _, a in ipairs{ 1, 2 } do
            same(op .. " " .. dt .. " " .. ln .. " axis " .. a, function(x) return x[op](x, a) end,
                 layouts[ln](input(dt, 4)))
          end
        end
      end
    end
    local long = gpu.array(values("float64", 5000, 6), { dtype = "float64", device = "cpu" })
    same("cumsum of a long line (block scan)", function(x) return x:cumsum() end, long)
  end)

  it("matmul: every dtype, transposed and sliced operands, batches and broadcast batches", function()
    for _, dt in ipairs(dtypes) do
      local a, b = input(dt, 2), input(dt, 4)                 -- (6, 7) each, no NaN/inf
      same("matmul " .. dt, function(x, y) return x:matmul(y) end, a, b.T)
      same("matmul " .. dt .. " a^T a", function(x, y) return x.T:matmul(y) end, a, b)
      same("matmul " .. dt .. " sliced", function(x, y) return x[{ { 1, 6, 2 }, { 7, 1, -1 } }]:matmul(y) end, a, b.T)
      same("matmul " .. dt .. " vector", function(x, y) return x:matmul(y[1]) end, a, b)
      local ba = gpu.array(values(dt, 84, 6), { dtype = dt, device = "cpu" }):reshape(2, 6, 7)
      local bb = gpu.array(values(dt, 84, 8), { dtype = dt, device = "cpu" }):reshape(2, 7, 6)
      same("batched " .. dt, function(x, y) return x:matmul(y) end, ba, bb)
      same("batched " .. dt .. " transposed", function(x, y) return x:matmul(y:permute(1, 3, 2)) end, ba, ba)
      same("broadcast batch " .. dt, function(x, y) return x:matmul(y) end, ba, b.T)
      same("broadcast batch left " .. dt, function(x, y) return x:matmul(y) end, a, bb)
    end
    gpu.set_matmul_precision("tf32")
    local ok, err = pcall(same, "tf32 matmul", function(x, y) return x:matmul(y) end, input("float32", 2), input("float32", 4).T)
    gpu.set_matmul_precision("highest")
    -- tf32 keeps 10 mantissa bits: allowed to miss the float32 tolerance, never to fail
    assert(ok or tostring(err):find("element"), tostring(err))
  end)

  it("take, index_put_ (plain and accumulate), masks", function()
    local I = function(t) return gpu.array(t, { dtype = "int64", device = "cpu" }) end
    for _, dt in ipairs(dtypes) do
      for _, ln in ipairs(layout_names) do
        local x = layouts[ln](input(dt, 5))
        same("take axis 1 " .. dt .. " " .. ln, function(v, i) return gpu.take(v, i, 1) end, x, I{ 3, 1, 1, -1 })
        same("take axis 2 " .. dt .. " " .. ln, function(v, i) return gpu.take(v, i, 2) end, x, I{ -1, 2 })
        same("mask " .. dt .. " " .. ln, function(v) return v[v:ne(v[{ 1, 1 }])] end, x)
      end
      same("index_put_ " .. dt, function(v, i, s) return v:copy():index_put_(2, i, s) end,
           input(dt, 2), I{ 3, 3, 1 }, input(dt, 4)[{ ":", { 1, 3 } }])
      same("index_put_ accumulate " .. dt, function(v, i, s) return v:copy():index_put_(2, i, s, { accumulate = true }) end,
           input(dt, 2), I{ 3, 3, 1, 3 }, input(dt, 4)[{ ":", { 1, 4 } }])
      same("index_put_ accumulate axis 1 " .. dt, function(v, i, s) return v:copy():index_put_(1, i, s, { accumulate = true }) end,
           input(dt, 2), I{ 2, 2, 6 }, input(dt, 4)[{ { 1, 3 }, ":" }])
    end
  end)

  it("sort, argsort, topk: every dtype and layout, both orders, NaN last, stable", function()
    for _, dt in ipairs(dtypes) do
      for _, ln in ipairs(layout_names) do
        local x = layouts[ln](input(dt, 7))
        for _, a in ipairs{ 1, 2 } do
          for _, desc in ipairs{ false, true } do
            local o = { descending = desc }
            same("sort " .. dt .. " " .. ln .. " " .. a, function(v) return v:sort(a, o) end, x)
            same("argsort " .. dt .. " " .. ln .. " " .. a, function(v) return v:argsort(a, o) end, x)
          end
        end
        same("topk " .. dt .. " " .. ln, function(v) return (v:topk(3)) end, x)
        same("topk indices " .. dt .. " " .. ln, function(v) return select(2, v:topk(3)) end, x)
      end
    end
    local long = gpu.array(values("float32", 70000, 9), { device = "cpu" })
    same("argsort of one long lane", function(v) return v:argsort() end, long)
    same("sort of many lanes", function(v) return v:reshape(700, 100):sort(2, { descending = true }) end, long)
  end)
end)
