-- spec/kernel_cuda_spec.lua — the CUDA side of the run-time kernels without a GPU: the CUDA source that
-- gpu.ElementwiseKernel, ReductionKernel and gpu.fuse generate for cuda arrays, compiled by
-- NVRTC for sm_90 (the H200's architecture) through the internal gpu._jit.cuda_compile,
-- which needs libnvrtc only (no driver, no device). The sources come from the kernels'
-- own calls on cpu arrays with gpu.kernel._capture set: the calls bind, broadcast and
-- allocate as usual, then hand over the CUDA source instead of compiling the C one.
-- Covered: every parameter form (typed, generic, raw, scalars, several outputs, outputs
-- passed in, i, preamble), every real dtype (complex parameters are refused: user kernels
-- take real dtypes), reductions (one source serves all axes and one axis: the reduced axes
-- are the launch's geometry), fused expressions of every fusable op on every dtype, complex
-- included (as fuse_spec's ops; Lua-number operands on float32, int32 and complex64 only,
-- to keep the run short), a compile error (NVRTC's log with the user's line), and the disk
-- cache in child processes (hit, stale key, an image cut short, a source that includes
-- files, refused modes and owner).
-- Pending where NVRTC cannot be loaded (a CPU-only build, the lua5.4 host with a CPU
-- gpu.so). The launches on a device run in the last block only where a cuda device is
-- present (never run while this was written).
local h = require "spec.helper"
local gpu = h.gpu

local BIN = os.getenv("GPULUA_BIN") or "./gpulua"
local ARCH = "sm_90"
local nvrtc, why = gpu._jit.nvrtc_version()

-- The CUDA sources fn's kernel calls generate (nothing is compiled or launched)
local function capture(fn)
  local K = require "gpu.kernel"
  K._capture = {}
  local ok, err = pcall(fn)
  local list, seen = {}, {}
  for _, src in ipairs(K._capture) do      -- (a kernel called again with the same types: one source)
    if not seen[src] then list[#list + 1] = src end
    seen[src] = true
  end
  K._capture = nil
  if not ok then error(err, 0) end
  return list
end

local compiled = { n = 0, ms = {} }

-- Compiles every source for sm_90; each must give a cubin.
local function compile_all(list, what)
  assert(#list > 0, what .. ": no kernel source was generated")
  for k, src in ipairs(list) do
    local mod, origin, ms, _, bytes, key, ptx = gpu._jit.cuda_compile(src, ARCH)
    assert(mod, ("%s, kernel %d: %s"):format(what, k, tostring(origin)))
    assert(bytes > 1000, what .. ": an image of " .. tostring(bytes) .. " bytes")
    assert.is_false(ptx)
    assert.truthy(key:find("arch=" .. ARCH, 1, true))
    compiled.n = compiled.n + 1
    if origin == "compiled" then compiled.ms[#compiled.ms + 1] = ms end
  end
end

local DTYPES = h.dtypes()
local REAL = h.dtypes("bool", "uint", "int", "float")

local function sample(dt, shape)
  if dt == "bool" then return gpu.zeros(shape):lt(0.5) end
  return gpu.ones(shape, { dtype = dt })
end

local function sorted_keys(t)
  local k = {}
  for name in pairs(t) do k[#k + 1] = name end
  table.sort(k)
  return k
end

-- the ops that run unfused on these operands (the others are gpulua's own refusals)
local function working(names, args)
  local list = {}
  for _, name in ipairs(names) do
    if pcall(gpu[name], table.unpack(args)) then list[#list + 1] = name end
  end
  return list
end

-- One fused kernel per batch of at most 8 ops (each op one output, its numbers parameters
-- too: gpu._jit.max_args bounds them); returns the sources.
local function fused_sources(names, call, args)
  local list = {}
  for first = 1, #names, 8 do
    local batch = { table.unpack(names, first, math.min(first + 7, #names)) }
    local f = gpu.fuse(function(...)
      local out = {}
      for i, name in ipairs(batch) do out[i] = call(name, ...) end
      return table.unpack(out, 1, #batch)
    end)
    local got = capture(function() f(table.unpack(args)) end)
    assert(f.stats.fused == 1, "ran unfused: " .. tostring(f.why))
    for _, s in ipairs(got) do list[#list + 1] = s end
  end
  return list
end

if not nvrtc then
  describe("CUDA kernels compiled by NVRTC", function()
    pending("NVRTC cannot be loaded here: " .. tostring(why))
  end)
  return
end

describe("CUDA source of ElementwiseKernel, compiled by NVRTC " .. nvrtc .. " for " .. ARCH, function()
  it("compiles every parameter form", function()
    local sd = gpu.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "squared_diff")
    local sdg = gpu.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff_generic")
    local x = gpu.arange(10, { dtype = "float32" }):reshape(2, 5)
    local y = gpu.arange(5, { dtype = "float32" })
    local list = capture(function()
      sd(x, y)
      sdg(x, 5)                                                         -- a Lua number for T
      sd(gpu.array({ 3, 4 }), gpu.array({ 1, 1 }, { dtype = "float64" })) -- typed inputs converted
      gpu.ElementwiseKernel("", "int64 y", "y = i", "iota")({ size = 6 })
      gpu.ElementwiseKernel("T x", "int64 y", "y = i", "index_of")(gpu.zeros(3, 2).T)
      gpu.ElementwiseKernel("raw T x, int64 n", "T y", "y = x[n - 1 - i]", "reverse")(gpu.ones(5), 5, gpu.zeros(5))
      gpu.ElementwiseKernel("raw T x, T w", "T y", "y = x[i] * w + x[i + 1] * (1 - w)", "lerp_next")(gpu.ones(4),
        gpu.full({ 3 }, 0.25))
      gpu.ElementwiseKernel("int64 a, int64 b", "int64 q, int64 r", "q = a / b; r = a % b", "divmod_c")(
        gpu.array({ 7, 9 }), 3, gpu.zeros({ 2 }, { dtype = "int64" }), gpu.zeros({ 2 }, { dtype = "int64" }))
      gpu.ElementwiseKernel("T x", "T y", "y += x", "accumulate")(gpu.ones(3), gpu.ones(3))
      -- on cuda a preamble's functions are device functions: GL_JIT_FN is one on both devices
      gpu.ElementwiseKernel("T x", "T y", "y = cube(x)", "use_cube",
        { preamble = "GL_JIT_FN double cube(double v) { return v * v * v; }" })(gpu.ones(2, { dtype = "float64" }))
    end)
    assert.equal(9, #list)     -- (squared_diff given float64 converts it first: the same source)
    assert.truthy(list[1]:find('extern "C" __global__ void squared_diff_contig(', 1, true))
    assert.truthy(list[1]:find('extern "C" __global__ void squared_diff_strided(const gl_jit_geom _gl_g', 1, true))
    compile_all(list, "ElementwiseKernel")
  end)

  it("compiles a generic kernel of each real dtype (halves widen to float), refuses complex", function()
    local twice = gpu.ElementwiseKernel("T x", "T y", "y = x + x", "twice")
    local place, n = {}, 0                                    -- dtype -> its kernel's place in list
    local list = capture(function()
      for _, dt in ipairs(REAL) do
        if dt ~= "bool" then
          twice(gpu.ones(4, { dtype = dt }))
          n = n + 1
          place[dt] = n
        end
      end
      gpu.ElementwiseKernel("T x", "T y", "y = !x", "negate_bool")(sample("bool", { 2 }))
    end)
    assert.equal(#REAL, #list)
    assert.truthy(list[place.float16]:find("gl_f32_to_f16", 1, true))    -- float16's store
    compile_all(list, "twice")
    for _, dt in ipairs(h.dtypes("complex")) do
      h.fails({ "ElementwiseKernel 'twice'", "'x' is " .. dt, "view_as_real" }, twice, gpu.ones(4, { dtype = dt }))
    end
  end)

  it("raises a compile error with NVRTC's log and the line of the user's body", function()
    local bad = gpu.ElementwiseKernel("T x", "T y", "y = no_such_function(x)", "bad_kernel")
    local src = capture(function() bad(gpu.ones(2)) end)[1]
    local line
    local n = 0
    for l in (src .. "\n"):gmatch("([^\n]*)\n") do
      n = n + 1
      if l:find("no_such_function", 1, true) then line = line or n end
    end
    assert.truthy(line)
    local K = require "gpu.kernel"
    local msg = h.fails({ "ElementwiseKernel 'bad_kernel'", "NVRTC failed", "no_such_function", "generated source" },
      K._compile_cuda, "ElementwiseKernel 'bad_kernel'", src, ARCH)
    assert.truthy(msg:find("kernel.cu(" .. line .. ")", 1, true), msg)
    assert.truthy(msg:find(("%4d| y = no_such_function"):format(line), 1, true), msg)
  end)
end)

describe("CUDA source of ReductionKernel, compiled by NVRTC for " .. ARCH, function()
  it("compiles l2norm, reduce_type and every dtype's sum (one source serves every axis)", function()
    local l2norm = gpu.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    local x = gpu.ones(4, 5)
    local list = capture(function()
      l2norm(x)
      l2norm(x, { axis = 2, keepdims = true })
      l2norm(x:double(), { axis = 1 })
      gpu.ReductionKernel("T x", "int64 y", "x", "a + b", "y = a", "0", "sum64", { reduce_type = "int64" })(
        gpu.ones({ 3, 4 }, { dtype = "int32" }), gpu.zeros({ 3 }, { dtype = "int64" }), { axis = 2 })
      gpu.ReductionKernel("T x", "T y", "x", "(a > b ? a : b)", "y = a", "-1", "max_k")(gpu.zeros({ 0 }, { dtype = "int32" }))
    end)
    -- the same roles and dtypes on another axis give the same source: 2 l2norm sources, not 3
    assert.equal(4, #list)
    assert.truthy(list[1]:find('extern "C" __global__ void l2norm_reduce(', 1, true))
    local sum = gpu.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "sum_t")
    local sums = capture(function()
      for _, dt in ipairs(REAL) do sum(sample(dt, { 3, 4 }), { axis = 1 }) end
    end)
    assert.equal(#REAL, #sums)
    h.fails({ "ReductionKernel 'sum_t'", "'x' is complex64" }, sum, sample("complex64", { 3 }))
    for _, s in ipairs(sums) do list[#list + 1] = s end
    compile_all(list, "ReductionKernel")
  end)
end)

describe("CUDA source of gpu.fuse's kernels, compiled by NVRTC for " .. ARCH, function()
  for _, dt in ipairs(DTYPES) do
    it("compiles every fusable unary and binary op of " .. dt, function()
      local x = sample(dt, { 3, 7 })
      local un = working(sorted_keys(gpu._jit.unary), { x })
      local xb, yb = sample(dt, { 2, 3, 4 }), sample(dt, { 4 })
      local bin = working(sorted_keys(gpu._jit.binary), { xb, yb })
      if dt == "bool" then   -- on bool only the predicates, logical and comparison ops fuse
        local keep = {}
        for _, n in ipairs(un) do if gpu._jit.unary[n] == "UP" or gpu._jit.unary[n] == "UL" then keep[#keep + 1] = n end end
        un = keep
        keep = {}
        for _, n in ipairs(bin) do if gpu._jit.binary[n] == "BC" or gpu._jit.binary[n] == "BL" then keep[#keep + 1] = n end end
        bin = keep
      end
      local list = fused_sources(un, function(name, a) return a[name](a) end, { x })
      for _, s in ipairs(fused_sources(bin, function(name, a, b) return gpu[name](a, b) end, { xb, yb })) do
        list[#list + 1] = s
      end
      if dt == "float32" or dt == "int32" or dt == "complex64" then
        local s = dt == "int32" and 3 or 2.5
        local with = working(bin, { xb, s })
        for _, src in ipairs(fused_sources(with, function(name, a) return gpu[name](a, s) end, { xb })) do list[#list + 1] = src end
        for _, src in ipairs(fused_sources(with, function(name, a) return gpu[name](s, a) end, { xb })) do list[#list + 1] = src end
      end
      compile_all(list, "fused " .. dt)
    end)
  end

  it("compiles operators, where, astype, mixed dtypes and the fused reductions", function()
    local a, b = sample("float32", { 4, 5 }), sample("float16", { 5 })
    local i, j = sample("int32", { 4, 5 }), sample("uint8", { 4, 1 })
    local f = gpu.fuse(function(p, q, r, s)
      return (p * q + r) / 3 - s, -p % 2 ^ q, r // (s + 1), gpu.where(p:gt(q), p, r), (p + 1):astype("int32"),
        (r & 12) | (s ~ 3), r << 2, p:half() * 0.1, (p + q:sigmoid()):double()
    end)
    local list = capture(function() f(a, b, i, j) end)
    assert.equal(1, f.stats.fused, f.why)
    for _, dt in ipairs({ "float32", "float64", "int32", "int64" }) do
      for _, op in ipairs({ "sum", "mean", "prod", "max", "min" }) do
        local r = gpu.fuse(function(p, q)
          local e = p * 2 + q
          return e[op](e, 1, { keepdims = true })
        end)
        for _, s in ipairs(capture(function() r(sample(dt, { 3, 4 }), sample(dt, { 4 })) end)) do list[#list + 1] = s end
        assert.equal(r.stats.fused, 1, r.why)
      end
    end
    assert.equal(21, #list)
    compile_all(list, "fused")
  end)
end)

describe("RawKernel source, compiled by NVRTC for " .. ARCH, function()
  it("compiles CuPy's my_add as written (no prelude), and reports its errors", function()
    local src = [[
extern "C" __global__
void my_add(const float* x1, const float* x2, float* y) {
    int tid = blockDim.x * blockIdx.x + threadIdx.x;
    y[tid] = x1[tid] + x2[tid];
}]]
    local mod, origin, _, _, bytes = gpu._jit.cuda_compile(src, ARCH, true)
    assert(mod, origin)
    assert.truthy(bytes > 1000)
    local m2, err = gpu._jit.cuda_compile(src:gsub("x2%[tid%]", "x3[tid]"), ARCH, true)
    assert.is_nil(m2)
    assert.truthy(err:find("kernel.cu(4)", 1, true), err)
    assert.truthy(err:find('"x3" is undefined', 1, true), err)
    h.fails({ "gpu._jit.cuda_compile", "bad architecture 'sm_x'" }, gpu._jit.cuda_compile, src, "sm_x")
  end)

  it("falls back to PTX for an architecture newer than NVRTC knows (the driver compiles it at load)", function()
    local src = 'extern "C" __global__ void newer(float *y) { y[threadIdx.x] = 2; }'
    local mod, origin, _, _, bytes, key, ptx = gpu._jit.cuda_compile(src, "sm_990", true)
    assert(mod, origin)
    assert.is_true(ptx)
    assert.truthy(key:find("arch=sm_990", 1, true))
    assert.truthy(bytes > 100)
    local _, again = gpu._jit.cuda_compile(src, "sm_990", true)
    assert.equal("memory", again)
  end)

  it("refuses a device target that is not there, and a launch of cpu arrays", function()
    local src = 'extern "C" __global__ void k(float *y) {}'
    local ok, err = pcall(gpu._jit.cuda_compile, src, "cuda:7")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuda:7 is not available", 1, true), tostring(err))
    local mod = assert(gpu._jit.cuda_compile('extern "C" __global__ void k_contig(long long n, float *y) {}', ARCH, true))
    h.fails({ "gpu._jit.cuda_launch", "on the cpu" }, gpu._jit.cuda_launch, mod, "k", "o", { gpu.zeros(2) })
  end)
end)

-- ---- the disk cache, in child processes with their own XDG_CACHE_HOME --------------------

describe("the NVRTC disk cache", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() os.execute("chmod -R u+w " .. dir .. " 2>/dev/null; rm -rf " .. dir) end)

  local PROG = [[local gpu = require "gpu"
local src = 'extern "C" __global__ void k(float *y) { y[threadIdx.x] = %d; }'
local mod, origin, ms, on_disk = gpu._jit.cuda_compile(src, "sm_90", true)
if not mod then error(origin) end
io.write(origin, " ", tostring(on_disk), " ", string.format("%%.3f", ms))]]
  local function child(extra)
    local src = h.tmpdir() .. "/prog.lua"
    h.spit(src, PROG:format(extra or 0))
    local st, out, err = h.run(("env XDG_CACHE_HOME=%s %s %s"):format(dir, BIN, src))
    assert(st == 0, err)
    local origin, on_disk, ms = out:match("^(%S+) (%S+) (%S+)$")
    return origin .. " " .. on_disk, tonumber(ms)
  end
  local function images()
    local p = io.popen("ls " .. dir .. "/gpulua/kernels/*.cubin 2>/dev/null")
    local list = {}
    for l in p:lines() do list[#list + 1] = l end
    p:close()
    return list
  end
  local usable = h.run(("%s -e 'assert(require(\"gpu\")._jit.nvrtc_version())'"):format(BIN)) == 0

  it("compiles once, then the next process finds the cubin (0700 directory), and reports the cost", function()
    if not usable then return pending(BIN .. " cannot load NVRTC (set GPULUA_BIN to the CUDA build)") end
    local what, first = child()
    assert.equal("compiled true", what)
    local hits = {}
    for r = 1, 5 do
      local w, ms = child()
      assert.equal("disk true", w)
      hits[r] = ms
    end
    table.sort(hits)
    io.stderr:write(("\n[NVRTC disk cache] first compile %.1f ms; a later process's cache hit %.3f ms (median of 5)\n")
      :format(first, hits[3]))
    assert.truthy(hits[3] < 20, "a cache hit cost " .. hits[3] .. " ms")
    local _, mode = h.run("stat -c %a " .. dir .. "/gpulua " .. dir .. "/gpulua/kernels " .. images()[1])
    assert.equal("700\n700\n600\n", mode)
    assert.equal(1, #images())
  end)

  it("compiles again when the file's key does not match (a stale or replaced image)", function()
    if not usable then return pending(BIN .. " cannot load NVRTC") end
    child(1)
    local other = images()[1]
    os.execute("mv " .. other .. " " .. dir .. "/other.cubin")
    child()
    local mine = images()[1]
    os.execute("cp " .. dir .. "/other.cubin " .. mine)   -- another kernel's image under its name
    assert.equal("compiled true", (child()))
    assert.equal("disk true", (child()))                  -- and rewrote it
    -- NVRTC's version, remembered per library file: a record of another file is not believed
    local p = io.popen("ls " .. dir .. "/gpulua/kernels/nvrtc-*.version")
    local vf = p:read("l")
    p:close()
    assert.truthy(vf)
    h.spit(vf, "/elsewhere/libnvrtc.so.13 1 1\n9.9\n")
    assert.equal("disk true", (child()))                  -- NVRTC asked again: the same key
    assert.falsy(h.slurp(vf):find("/elsewhere", 1, true))
  end)

  it("compiles again when the image was cut short or changed (its seal does not hold)", function()
    if not usable then return pending(BIN .. " cannot load NVRTC") end
    child()
    local img = images()[1]
    local _, size = h.run("stat -c %s " .. img)
    for _, n in ipairs({ 100, math.floor(tonumber(size) / 2), tonumber(size) - 1 }) do
      assert(os.execute(("truncate -s %d %s"):format(n, img)))
      assert.equal("compiled true", (child()))
      assert.equal("disk true", (child()))
    end
    assert(os.execute(("printf 'X' | dd of=%s bs=1 seek=%d conv=notrunc 2>/dev/null"):format(img, tonumber(size) // 2)))
    assert.equal("compiled true", (child()))
  end)

  it("keeps a source that includes files out of the disk cache (a changed header is read again)", function()
    if not usable then return pending(BIN .. " cannot load NVRTC") end
    local hdr = dir .. "/k.h"
    h.spit(hdr, "#define K 8.0f\n")
    local prog = dir .. "/inc.lua"
    h.spit(prog, ([[local gpu = require "gpu"
local src = '# /* a comment */ include "%s"\nextern "C" __global__ void k(float *y) { y[threadIdx.x] = K; }'
local mod, origin, _, on_disk = gpu._jit.cuda_compile(src, "sm_90", true)
if not mod then error(origin) end
io.write(origin, " ", tostring(on_disk))]]):format(hdr))
    for _ = 1, 2 do
      local st, out, err = h.run(("env XDG_CACHE_HOME=%s %s %s"):format(dir, BIN, prog))
      assert.equal(0, st, err)
      assert.equal("compiled false", out)
    end
    assert.equal(0, #images())
    assert.equal("compiled true", (child()))             -- a source without one is cached
    assert.equal("disk true", (child()))
  end)

  it("never loads an image others can write, nor uses a directory others can write", function()
    if not usable then return pending(BIN .. " cannot load NVRTC") end
    child()
    os.execute("chmod 666 " .. images()[1])
    assert.equal("compiled true", (child()))
    os.execute("chmod 777 " .. dir .. "/gpulua/kernels")
    assert.equal("compiled false", (child()))
  end)

  it("never loads an image of another owner", function()
    if not usable then return pending(BIN .. " cannot load NVRTC") end
    local _, uid = h.run("id -u")
    if uid ~= "0\n" then return pending("needs root to give a file to another user") end
    child()
    os.execute("chown 65534 " .. images()[1])
    assert.equal("compiled true", (child()))
  end)
end)

-- The NVRTC first-compile times of this run (kernels not found in a cache)
describe("NVRTC compile time", function()
  it("is reported (median of this run's compiles)", function()
    if #compiled.ms == 0 then return pending("every kernel came from the cache this run") end
    table.sort(compiled.ms)
    io.stderr:write(("\n[NVRTC] %d kernels, %d compiled now: median %.0f ms, max %.0f ms\n"):format(compiled.n,
      #compiled.ms, compiled.ms[(#compiled.ms + 1) // 2], compiled.ms[#compiled.ms]))
    assert.truthy(compiled.n > 0)
  end)
end)

-- ---- on a device -------------------------------

for _, dev in ipairs(h.devices()) do
  if dev ~= "cpu" then
    describe("kernels compiled at run time on " .. dev, function()
      it("run ElementwiseKernel, ReductionKernel and fuse with the cpu's results", function()
        gpu.random.seed(3)
        local x, y = gpu.randn(6, 5), gpu.randn(5)
        local sd = gpu.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff_generic")
        h.assert_close(sd(x:to(dev), y:to(dev)):to("cpu"), sd(x, y), 1e-6)
        h.assert_close(sd(x.T:to(dev), 2):to("cpu"), sd(x.T, 2), 1e-6)              -- strided
        local iota = gpu.ElementwiseKernel("T x", "int64 y", "y = i", "index_of")
        assert.same(iota(x.T):totable(), iota(x:to(dev).T):to("cpu"):totable())
        local l2 = gpu.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
        h.assert_close(l2(x:to(dev)):to("cpu"), l2(x), 1e-5)
        h.assert_close(l2(x:to(dev), { axis = 2, keepdims = true }):to("cpu"), l2(x, { axis = 2, keepdims = true }), 1e-5)
        local big = gpu.arange(300000, { dtype = "int32" })
        local sum64 = gpu.ReductionKernel("T x", "int64 y", "x", "a + b", "y = a", "0", "sum64", { reduce_type = "int64" })
        assert.equal(sum64(big):item(), sum64(big:to(dev)):item())
        local f = gpu.fuse(function(a, b) return (a * b + 1):exp() - a end)
        local g = gpu.fuse(function(a, b) return ((a * b + 1):exp()):sum(2) end)
        h.assert_close(f(x:to(dev), y:to(dev)):to("cpu"), f(x, y), 1e-6)
        h.assert_close(g(x:to(dev), y:to(dev)):to("cpu"), g(x, y), 1e-5)
        assert.equal(2, f.stats.fused, f.why)                                      -- cpu and cuda both fused
        assert.equal(2, g.stats.fused, g.why)
        h.fails({ "arrays on cpu and " .. dev }, sd, x, y:to(dev))
      end)
      it("runs RawKernel (CuPy's my_add)", function()
        local add = gpu.RawKernel([[extern "C" __global__ void my_add(const float* x1, const float* x2, float* y) {
  int tid = blockDim.x * blockIdx.x + threadIdx.x;
  y[tid] = x1[tid] + x2[tid];
}]], "my_add")
        local a, b = gpu.arange(25, { dtype = "float32", device = dev }), gpu.ones(25, { dtype = "float32", device = dev })
        local out = gpu.zeros(25, { dtype = "float32", device = dev })
        add({ 5 }, { 5 }, { a, b, out })
        assert.same((gpu.arange(25) + 1):totable(), out:to("cpu"):totable())
      end)
      it("runs RawKernel with more than 48 KiB of dynamic shared memory (opted into per function)", function()
        -- 96 KiB of floats: each block stages its slice, sums it from shared memory
        local n = 96 * 1024 // 4
        local k = gpu.RawKernel([[extern "C" __global__ void big_shared(const float* x, float* y, int n) {
  extern __shared__ float buf[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = x[i];
  __syncthreads();
  if (threadIdx.x == 0) { float s = 0; for (int i = 0; i < n; i++) s += buf[i]; y[blockIdx.x] = s; }
}]], "big_shared")
        local x = gpu.ones(n, { dtype = "float32", device = dev })
        local y = gpu.zeros(2, { dtype = "float32", device = dev })
        k({ 2 }, { 256 }, { x, y, { n, "int32" } }, { shared_mem = n * 4 })
        assert.same({ n, n }, y:to("cpu"):totable())
        -- past the device's opt-in limit: a clear error, not a failed launch
        h.fails({ "shared_mem", "more than this device allows" }, k, { 1 }, { 32 }, { x, y, { n, "int32" } },
          { shared_mem = 4 * 1024 * 1024 })
      end)
    end)
  end
end
