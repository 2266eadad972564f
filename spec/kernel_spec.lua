-- spec/kernel_spec.lua — gpu.ElementwiseKernel, gpu.ReductionKernel, gpu.RawKernel /
-- RawModule: every parameter form, broadcasting, generic types, raw
-- parameters, outputs passed in, the loop index i, reductions over all and one axis,
-- compile errors, the misuse errors, and (in child processes with their own
-- XDG_CACHE_HOME) the fallback without a compiler and the disk cache: hit, stale key,
-- refused owner and modes, objects cut short, changed headers, stale temporaries.
-- Kernels compile with the system C compiler on the cpu; the cuda paths (NVRTC) are
-- spec/kernel_cuda_spec.lua's.
local h = require "spec.helper"
local gpu = h.gpu

local BIN = os.getenv("GPULUA_BIN") or "./gpulua"

local function arr(t, dt) return gpu.array(t, { dtype = dt or "float32" }) end

describe("gpu.ElementwiseKernel on cpu", function()
  local squared_diff = gpu.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "squared_diff")
  local squared_diff_generic = gpu.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff_generic")

  it("runs CuPy's squared_diff with broadcasting (typed and generic)", function()
    local x = gpu.arange(10, { dtype = "float32" }):reshape(2, 5)
    local y = gpu.arange(5, { dtype = "float32" })
    local want = (x - y) * (x - y)
    local z = squared_diff(x, y)
    assert.same({ 2, 5 }, z.shape)
    assert.equal("float32", z.dtype)
    h.assert_close(z, want, 0)
    h.assert_close(squared_diff_generic(x, y), want, 0)
    h.assert_close(squared_diff_generic(x, 5), (x - 5) * (x - 5), 0)   -- a Lua number for T
  end)

  it("binds T from the arrays (every real dtype) and converts typed inputs of another dtype", function()
    local twice = gpu.ElementwiseKernel("T x", "T y", "y = x + x", "twice")
    for _, dt in ipairs(h.dtypes("uint", "int", "float")) do
      local x = gpu.array({ 1, 2, 3, 4 }, { dtype = dt })
      local y = twice(x)
      assert.equal(dt, y.dtype)
      h.assert_close(y, x + x, 0)
    end
    -- user kernels take real dtypes; complex arrays are refused with the way around it
    for _, dt in ipairs(h.dtypes("complex")) do
      h.fails({ "ElementwiseKernel 'twice'", "'x' is " .. dt, "view_as_real", "gpu.fuse" }, twice,
        gpu.zeros({ 2 }, { dtype = dt }))
      h.fails({ "ReductionKernel 'sum_c'", "'x' is " .. dt },
        gpu.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "sum_c"), gpu.zeros({ 2 }, { dtype = dt }))
    end
    -- integer rows compute in their own type and wrap as NumPy: uint16 65535 * 2, int8 100 * 2
    local wrap = gpu.ElementwiseKernel("T x, T y", "T z", "z = x * y", "wrap_mul")
    assert.same({ 65535 - 1, 0 }, wrap(gpu.array({ 65535, 256 }, { dtype = "uint16" }), gpu.array({ 2, 256 }, { dtype = "uint16" })):totable())
    assert.same({ -56 }, wrap(gpu.array({ 100 }, { dtype = "int8" }), gpu.array({ 2 }, { dtype = "int8" })):totable())
    local b = gpu.array({ true, false }, { dtype = "bool" })
    local orb = gpu.ElementwiseKernel("T x", "T y", "y = !x", "negate_bool")
    assert.same({ false, true }, orb(b):totable())
    -- a typed float32 parameter given int64: converted as astype does
    local z = squared_diff(gpu.array({ 3, 4 }), gpu.array({ 1, 1 }, { dtype = "float64" }))
    assert.equal("float32", z.dtype)
    assert.same({ 4, 9 }, z:totable())
  end)

  it("walks strided and broadcast views (the strided loop) like contiguous arrays", function()
    gpu.random.seed(1)
    local x = gpu.randn(6, 5)
    local xt = x.T                                           -- (5, 6), not contiguous
    local y = gpu.randn(6)
    h.assert_close(squared_diff(xt, y), (xt - y) * (xt - y), 0)
    local sl = x[{ { 1, 6, 2 }, ":" }]
    h.assert_close(squared_diff(sl, sl:flip(1)), (sl - sl:flip(1)) ^ 2, 1e-6)
  end)

  it("gives i, the 0-based flat index of the output in C order", function()
    local iota = gpu.ElementwiseKernel("", "int64 y", "y = i", "iota")
    assert.same({ 0, 1, 2, 3, 4, 5 }, iota({ size = 6 }):totable())
    local idx = gpu.ElementwiseKernel("T x", "int64 y", "y = i", "index_of")
    assert.same({ { 0, 1, 2 }, { 3, 4, 5 } }, idx(gpu.zeros(2, 3)):totable())
    assert.same({ { 0, 1, 2 }, { 3, 4, 5 } }, idx(gpu.zeros(3, 2).T):totable())   -- strided: still C order
  end)

  it("indexes raw parameters by hand", function()
    local reverse = gpu.ElementwiseKernel("raw T x, int64 n", "T y", "y = x[n - 1 - i]", "reverse")
    local x = arr({ 1, 2, 3, 4, 5 })
    local y = gpu.zeros(5)
    local r = reverse(x, 5, y)
    assert.equal(y, r)
    assert.same({ 5, 4, 3, 2, 1 }, y:totable())
    local conv = gpu.ElementwiseKernel("raw T x, T w", "T y", "y = x[i] * w + x[i + 1] * (1 - w)", "lerp_next")
    local out = conv(arr({ 0, 10, 20, 30 }), gpu.full({ 3 }, 0.25))
    assert.same({ 7.5, 17.5, 27.5 }, out:totable())
  end)

  it("writes into outputs passed in, and several outputs", function()
    local divmod = gpu.ElementwiseKernel("int64 a, int64 b", "int64 q, int64 r", "q = a / b; r = a % b", "divmod_c")
    local q, r = divmod(gpu.array({ 7, 9 }), gpu.array({ 2, 4 }))
    assert.same({ 3, 2 }, q:totable())
    assert.same({ 1, 1 }, r:totable())
    local q2, r2 = gpu.zeros({ 2 }, { dtype = "int64" }), gpu.zeros({ 2 }, { dtype = "int64" })
    local a, b = divmod(gpu.array({ 7, 9 }), 3, q2, r2)
    assert.equal(q2, a)
    assert.equal(r2, b)
    assert.same({ 2, 3 }, q2:totable())
    local acc = gpu.ElementwiseKernel("T x", "T y", "y += x", "accumulate")
    local s = gpu.ones(3)
    acc(arr({ 1, 2, 3 }), s)
    assert.same({ 2, 3, 4 }, s:totable())
  end)

  it("is not differentiable: a tracked input is an error, gpu.no_grad runs it", function()
    local x = gpu.ones(3):requires_grad()
    h.fails({ "squared_diff", "is not differentiable" }, squared_diff, x, 1)
    local z = gpu.no_grad(function() return squared_diff(x, 1) end)
    assert.same({ 0, 0, 0 }, z:totable())
  end)

  it("takes a preamble", function()
    local k = gpu.ElementwiseKernel("T x", "T y", "y = cube(x)", "use_cube",
      { preamble = "static inline double cube(double v) { return v * v * v; }" })
    assert.same({ 8, 27 }, k(gpu.array({ 2, 3 }, { dtype = "float64" })):totable())
  end)

  it("raises a compile error with the compiler's log and the numbered source", function()
    local bad = gpu.ElementwiseKernel("T x", "T y", "y = no_such_function(x)", "bad_kernel")
    local msg = h.fails({ "ElementwiseKernel 'bad_kernel'", "no_such_function", "generated source", "kernel.c:" }, bad,
      gpu.ones(2))
    assert.truthy(msg:find("%d+| .*no_such_function"))
  end)

  it("refuses misuse with errors that name the kernel and leaves the arguments as they were", function()
    h.fails({ "gpu.ElementwiseKernel", "bad parameter 'float32'" }, gpu.ElementwiseKernel, "float32", "T y", "y = 1", "k")
    h.fails({ "gpu.ElementwiseKernel", "named twice" }, gpu.ElementwiseKernel, "T x, T x", "T y", "y = x", "k")
    h.fails({ "gpu.ElementwiseKernel", "bad parameter name 'for'" }, gpu.ElementwiseKernel, "T for", "T y", "y = 1", "k")
    h.fails({ "bad argument #1 to 'gpu.ElementwiseKernel' (in_params: 'int x': 'int' is a C name, not a dtype or a type placeholder (use the dtype int32))" },
      gpu.ElementwiseKernel, "int x", "int y", "y = x + 1", "k")
    h.fails({ "bad argument #2 to 'gpu.ElementwiseKernel'", "'double' is a C name", "float64" },
      gpu.ElementwiseKernel, "T x", "double y", "y = x", "k")
    h.fails({ "'size_t' is a C name" }, gpu.ElementwiseKernel, "size_t x", "T y", "y = x", "k")
    h.fails({ "bad argument #2 to 'gpu.ReductionKernel'", "'float' is a C name", "float32" },
      gpu.ReductionKernel, "T x", "float y", "x", "a + b", "y = a", "0", "r")
    h.fails({ "gpu.ElementwiseKernel", "at least one output" }, gpu.ElementwiseKernel, "T x", "", "x", "k")
    h.fails({ "gpu.ElementwiseKernel", "kernel name" }, gpu.ElementwiseKernel, "T x", "T y", "y = x", "not a name")
    h.fails({ "gpu.ElementwiseKernel", "body: string expected" }, gpu.ElementwiseKernel, "T x", "T y", 3, "k")
    h.fails({ "ElementwiseKernel", "unknown option 'preambel'" }, gpu.ElementwiseKernel, "T x", "T y", "y = x", "k",
      { preambel = "" })
    local x, y = gpu.ones(2, 3), gpu.ones(4)
    local x0, y0 = x:copy(), y:copy()
    h.fails({ "squared_diff", "2 arguments expected" }, squared_diff, x)
    h.fails({ "squared_diff", "do not broadcast" }, squared_diff, x, y)
    h.fails({ "squared_diff", "gpu.array or number expected" }, squared_diff, x, "a")
    local out = gpu.zeros(3)
    h.fails({ "squared_diff", "output 'z' has shape (3)" }, squared_diff, x, x, out)
    h.fails({ "squared_diff", "float32 but the array is float64" }, squared_diff, x, x, gpu.zeros({ 2, 3 }, { dtype = "float64" }))
    h.fails({ "output 'y'", "cannot tell the type T" }, gpu.ElementwiseKernel("float32 x", "T y", "y = x", "untyped"), x)
    local closed = gpu.ones(2)
    closed:close()
    h.fails({ "squared_diff", "closed" }, squared_diff, closed, 1)
    h.fails({ "squared_diff", "broadcast view" }, squared_diff, x, x, gpu.zeros(1, 3):expand(2, 3))
    h.fails({ "size", "{size = n}" }, gpu.ElementwiseKernel("", "int64 y", "y = i", "iota"))
    h.fails({ "unknown option 'sise'" }, gpu.ElementwiseKernel("", "int64 y", "y = i", "iota"), { sise = 2 })
    assert.same(x0:totable(), x:totable())
    assert.same(y0:totable(), y:totable())
    assert.same({ 0, 0, 0 }, out:totable())
  end)
end)

describe("gpu.ReductionKernel on cpu", function()
  local l2norm = gpu.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")

  it("runs CuPy's l2norm over all axes and one axis", function()
    gpu.random.seed(2)
    local x = gpu.randn(4, 5)
    h.assert_close(l2norm(x), (x * x):sum():sqrt(), 1e-5)
    h.assert_close(l2norm(x, { axis = 2 }), (x * x):sum(2):sqrt(), 1e-5)
    h.assert_close(l2norm(x, { axis = -2 }), (x * x):sum(1):sqrt(), 1e-5)
    local k = l2norm(x, { axis = 2, keepdims = true })
    assert.same({ 4, 1 }, k.shape)
    h.assert_close(l2norm(x, { axis = { 1, 2 } }), (x * x):sum():sqrt(), 1e-5)
    h.assert_close(l2norm(x.T, { axis = 1 }), (x * x):sum(2):sqrt(), 1e-5)   -- strided input
    local xd = x:double()
    assert.equal("float64", l2norm(xd).dtype)
  end)

  it("reduces long rows on several threads with the identity and reduce_type", function()
    local n = 300000
    local x = gpu.arange(n, { dtype = "int32" })
    local sum64 = gpu.ReductionKernel("T x", "int64 y", "x", "a + b", "y = a", "0", "sum64", { reduce_type = "int64" })
    assert.equal((n - 1) * n // 2, sum64(x):item())
    local maxk = gpu.ReductionKernel("T x", "T y", "x", "(a > b ? a : b)", "y = a", "-1", "max_k")
    assert.equal(n - 1, maxk(x):item())
    assert.equal(-1, maxk(gpu.zeros({ 0 }, { dtype = "int32" })):item())   -- empty: the identity
    local y = gpu.zeros({ 3 }, { dtype = "int64" })
    local r = sum64(gpu.ones({ 3, 4 }, { dtype = "int32" }), y, { axis = 2 })
    assert.equal(y, r)
    assert.same({ 4, 4, 4 }, y:totable())
  end)

  it("refuses misuse", function()
    h.fails({ "gpu.ReductionKernel", "at least one input" }, gpu.ReductionKernel, "", "T y", "x", "a + b", "y = a", "0", "r")
    h.fails({ "gpu.ReductionKernel", "parameter name 'a' is reserved" }, gpu.ReductionKernel, "T a", "T y", "a", "a + b", "y = a", "0", "r")
    h.fails({ "gpu.ReductionKernel", "reduce_type" }, gpu.ReductionKernel, "T x", "T y", "x", "a + b", "y = a", "0", "r",
      { reduce_type = "U" })
    local x = gpu.ones(2, 3)
    h.fails({ "l2norm", "axis 3 is out of range" }, l2norm, x, { axis = 3 })
    h.fails({ "l2norm", "axis -2 repeated" }, l2norm, x, { axis = { 1, -2 } })
    h.fails({ "l2norm", "unknown option 'keepdim'" }, l2norm, x, { keepdim = true })
    h.fails({ "l2norm", "output 'y' has shape (3)" }, l2norm, x, gpu.zeros(3), { axis = 2 })
    assert.same({ { 1, 1, 1 }, { 1, 1, 1 } }, x:totable())
  end)
end)

describe("gpu.RawKernel and gpu.RawModule", function()
  it("are CUDA only: on the cpu a clear error", function()
    local k = gpu.RawKernel([[extern "C" __global__ void f(float *x) { x[threadIdx.x] = 1; }]], "f")
    h.fails({ "RawKernel 'f'", "GPU only", "ElementwiseKernel" }, k, { 1 }, { 4 }, { gpu.zeros(4) })
    local m = gpu.RawModule([[extern "C" __global__ void g(float *x) {}]])
    h.fails({ "RawModule function 'g'", "GPU only" }, m:get_function("g"), { 1 }, { 1 }, { gpu.zeros(1) })
    h.fails({ "gpu.RawKernel", "code: string expected" }, gpu.RawKernel, 1, "f")
  end)
end)

-- ---- child processes: the compiler and the disk cache --------------------------------------

describe("kernels compiled in a fresh process", function()
  local dir
  before_each(function() dir = h.tmpdir() end)
  after_each(function() os.execute("chmod -R u+w " .. dir .. " 2>/dev/null; rm -rf " .. dir) end)

  local PROG = [[local gpu = require "gpu"
local k = gpu.ElementwiseKernel("T x", "T y", "y = x * 3 + %d", "thrice")
local y = k(gpu.arange(4))
io.write(gpu.kernel._last.origin, " ", tostring(gpu.kernel._last.on_disk), " ", table.concat(y:totable(), ","))]]
  local function child(env, extra)
    local src = h.tmpdir() .. "/prog.lua"
    h.spit(src, PROG:format(extra or 0))
    return h.run(("env XDG_CACHE_HOME=%s %s %s %s"):format(dir, env or "", BIN, src))
  end
  local function objects()
    local p = io.popen("ls " .. dir .. "/gpulua/kernels/*.so 2>/dev/null")
    local list = {}
    for l in p:lines() do list[#list + 1] = l end
    p:close()
    return list
  end

  it("compiles once, then the next process loads the object from the disk cache (0700)", function()
    local st, out = child()
    assert.equal(0, st)
    assert.equal("compiled true 0,3,6,9", out)
    st, out = child()
    assert.equal("disk true 0,3,6,9", out)
    local _, mode = h.run("stat -c %a " .. dir .. "/gpulua " .. dir .. "/gpulua/kernels")
    assert.equal("700\n700\n", mode)
    assert.equal(1, #objects())
  end)

  it("compiles again when the object's key does not match (a stale or replaced file)", function()
    child(nil, 1)
    local other = objects()[1]
    os.execute("mv " .. other .. " " .. dir .. "/other.so")
    child()                                            -- the kernel with + 0
    local mine = objects()[1]
    os.execute("cp " .. dir .. "/other.so " .. mine)   -- another kernel's object under its name
    local st, out = child()
    assert.equal(0, st)
    assert.equal("compiled true 0,3,6,9", out)
  end)

  it("never loads an object others can write, nor uses a directory others can write", function()
    child()
    local obj = objects()[1]
    os.execute("chmod 666 " .. obj)
    local _, out = child()
    assert.equal("compiled true 0,3,6,9", out)       -- replaced by a fresh, private one
    os.execute("chmod 777 " .. dir .. "/gpulua/kernels")
    _, out = child()
    assert.equal("compiled false 0,3,6,9", out)      -- compiled in a private temporary directory
  end)

  it("recompiles an object cut short or changed, never loading it (no SIGBUS)", function()
    child()
    local obj = objects()[1]
    local _, size = h.run("stat -c %s " .. obj)
    for _, n in ipairs({ 1000, 6000, 12000, tonumber(size) - 1 }) do
      assert(os.execute(("truncate -s %d %s"):format(n, obj)))
      local st, out, err = child()
      assert.equal(0, st, err)
      assert.equal("compiled true 0,3,6,9", out)
      st, out = child()
      assert.equal("disk true 0,3,6,9", out)
    end
    -- one byte changed inside the code: the seal's hash no longer matches
    assert(os.execute(("printf 'X' | dd of=%s bs=1 seek=4000 conv=notrunc 2>/dev/null"):format(obj)))
    local st, out = child()
    assert.equal(0, st)
    assert.equal("compiled true 0,3,6,9", out)
  end)

  it("keys on the headers a kernel includes: a changed header is compiled again", function()
    local hdr = dir .. "/k.h"
    local src = dir .. "/hdr.lua"
    h.spit(src, ([[local gpu = require "gpu"
local k = gpu.ElementwiseKernel("float64 x", "float64 y", "y = x * K", "scaled", { preamble = '#include "%s"\n' })
local y = k(gpu.ones(1, { dtype = "float64" }))
io.write(gpu.kernel._last.origin, " ", y[1])]]):format(hdr))
    local function run() return h.run(("env XDG_CACHE_HOME=%s %s %s"):format(dir, BIN, src)) end
    h.spit(hdr, "#define K 8.0\n")
    local st, out, err = run()
    assert.equal(0, st, err)
    assert.equal("compiled 8", out)
    _, out = run()
    assert.equal("disk 8", out)
    h.spit(hdr, "#define K 12.0\n")
    _, out = run()
    assert.equal("compiled 12", out)
    _, out = run()
    assert.equal("disk 12", out)
  end)

  it("removes the temporaries a killed process left once they are an hour old", function()
    child()
    local kdir = dir .. "/gpulua/kernels/"
    for _, name in ipairs({ "tmp-old-1-0.c", "tmp-old-1-0.log", "tmp-old-1-0.so", "tmp-new-1-0.c" }) do
      h.spit(kdir .. name, "x")
    end
    assert(os.execute(("touch -d '-2 hours' %stmp-old-1-0.*"):format(kdir)))
    local st, out = child(nil, 2)
    assert.equal(0, st)
    assert.equal("compiled true 2,5,8,11", out)
    local left = io.popen("ls " .. kdir):read("a")
    assert.is_nil(left:find("tmp-old", 1, true), left)
    assert.truthy(left:find("tmp-new-1-0.c", 1, true), left)
  end)

  it("never loads an object of another owner", function()
    local _, uid = h.run("id -u")
    if uid ~= "0\n" then
      pending("needs root to give a file to another user")
      return
    end
    child()
    os.execute("chown 65534 " .. objects()[1])
    local _, out = child()
    assert.equal("compiled true 0,3,6,9", out)
  end)

  it("without a compiler: a kernel raises naming it, gpu.fuse runs unfused after one notice", function()
    local st, _, err = child("CC=/nonexistent/cc")
    assert.are_not.equal(0, st)
    assert.truthy(err:find("no C compiler: '/nonexistent/cc'", 1, true), err)
    local src = dir .. "/fuse.lua"
    h.spit(src, [[local gpu = require "gpu"
local f = gpu.fuse(function(a, b) return a * b + 1 end)
local a, b = gpu.arange(3), gpu.arange(3)
local r1, r2 = f(a, b), f(a, b)
io.write(table.concat(r1:totable(), ","), " ", table.concat(r2:totable(), ","), " ", f.stats.unfused)]])
    local st2, out, err2 = h.run(("env XDG_CACHE_HOME=%s CC=/nonexistent/cc %s %s"):format(dir, BIN, src))
    assert.equal(0, st2)
    assert.equal("1,2,5 1,2,5 2", out)
    local _, notices = err2:gsub("no C compiler", "")
    assert.equal(1, notices)
  end)
end)
