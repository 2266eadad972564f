-- cuda_spec.lua — the CUDA backend itself: transfers (direct and staged through the
-- pinned buffer), copies and conversions, fills, arange, the caching allocator,
-- synchronize, ops the backend does not have yet. Runs only where a GPU answers.
local h = require "spec.helper"
local gpu = h.gpu

if not gpu.is_available() then
  describe("cuda backend", function()
    pending("no usable CUDA device here")
  end)
  return
end

local dtypes = h.dtypes()

describe("cuda backend", function()
  it("round-trips every dtype through the device", function()
    for _, dt in ipairs(dtypes) do
      local vals = dt == "bool" and { true, false, true } or { 0, 1, 2, 100 }
      local x = gpu.array(vals, { dtype = dt, device = "cpu" })
      local y = x:to("cuda")
      assert.equal("cuda:0", y.device)
      assert.equal(dt, y.dtype)
      h.assert_close(y:to("cpu"), x, 0)
    end
  end)

  it("moves large arrays (staged through pinned memory) exactly, both ways", function()
    -- 3 MiB + a bit: not a multiple of the 4 MiB chunk, more than the 1 MiB direct limit
    for _, n in ipairs{ 786433, 3 * 1024 * 1024 + 7 } do
      local x = gpu.arange(n, { dtype = "float32", device = "cpu" })
      local y = x:to("cuda")
      local z = y:to("cpu")
      assert.equal(n, z.size)
      assert.equal(0, z[1]); assert.equal(n - 1, z[n]); assert.equal(12345, z[12346])
      h.assert_close(z[{ { 1, n, 997 } }], x[{ { 1, n, 997 } }], 0)
      h.assert_close(z[{ { n - 5000, n } }], x[{ { n - 5000, n } }], 0)
    end
  end)

  it("converts between every dtype pair exactly as the cpu does (saturating)", function()
    local src = { 0, 1.5, -2.5, 300, -1e10, 1e10, 0.1, 65504, 70000 }
    for _, from in ipairs{ "float32", "float64", "int64", "int32" } do
      local vals = {}
      for i, v in ipairs(src) do vals[i] = from:match("int") and math.floor(math.max(-2e9, math.min(2e9, v))) or v end
      local xc = gpu.array(vals, { dtype = from, device = "cpu" })
      local xg = xc:to("cuda")
      for _, to in ipairs(dtypes) do
        h.assert_close(xg:astype(to):to("cpu"), xc:astype(to), 0)
      end
    end
  end)

  it("copies strided views (transposed, sliced, negative steps if any) into contiguous arrays", function()
    local c = gpu.arange(60, { dtype = "float64", device = "cpu" }):reshape(3, 4, 5)
    local g = c:to("cuda")
    h.assert_close(g:permute(3, 1, 2):contiguous():to("cpu"), c:permute(3, 1, 2):contiguous(), 0)
    h.assert_close(g.T:to("cpu"), c.T, 0)
    h.assert_close(g[{ ":", { 2, 3 }, { 1, 5, 2 } }]:to("cpu"), c[{ ":", { 2, 3 }, { 1, 5, 2 } }], 0)
  end)

  it("fills any dtype and strided views", function()
    for _, dt in ipairs(dtypes) do
      local v = dt == "bool" and true or 7
      h.assert_close(gpu.full({ 3, 5 }, v, { dtype = dt, device = "cuda" }):to("cpu"),
                     gpu.full({ 3, 5 }, v, { dtype = dt, device = "cpu" }), 0)
      h.assert_close(gpu.zeros({ 4, 3 }, { dtype = dt, device = "cuda" }):to("cpu"),
                     gpu.zeros({ 4, 3 }, { dtype = dt, device = "cpu" }), 0)
    end
    local g = gpu.zeros({ 4, 6 }, { device = "cuda" })
    g[{ ":", { 1, 6, 2 } }]:fill_(3)
    local c = gpu.zeros({ 4, 6 }, { device = "cpu" })
    c[{ ":", { 1, 6, 2 } }]:fill_(3)
    h.assert_close(g:to("cpu"), c, 0)
  end)

  it("arange and linspace agree with the cpu bit for bit", function()
    for _, dt in ipairs(h.dtypes_except("bool")) do
      h.assert_close(gpu.arange(0, 200, 1.5, { dtype = dt, device = "cuda" }):to("cpu"),
                     gpu.arange(0, 200, 1.5, { dtype = dt, device = "cpu" }), 0)
    end
    h.assert_close(gpu.linspace(-1, 1, 101, { device = "cuda" }):to("cpu"),
                   gpu.linspace(-1, 1, 101, { device = "cpu" }), 0)
  end)

  it("item() and printing read back one element", function()
    local g = gpu.arange(10, { device = "cuda" })
    assert.equal(9, g[10])
    assert.equal(45, gpu.array({ 45 }, { device = "cuda" })[1])
    assert.truthy(tostring(g):find("9"))
  end)

  it("the caching allocator reuses freed blocks and empty_cache returns them", function()
    gpu.synchronize("cuda")
    collectgarbage(); collectgarbage()
    gpu.empty_cache("cuda")
    local m0 = gpu.memory("cuda")
    assert.equal(m0.allocated, m0.reserved)
    local x = gpu.zeros(1024 * 1024, { device = "cuda" })     -- 4 MiB: large pool
    local y = gpu.zeros(100, { device = "cuda" })             -- small pool
    local m1 = gpu.memory("cuda")
    assert.truthy(m1.allocated >= m0.allocated + 4 * 1024 * 1024 + 400)
    assert.truthy(m1.reserved >= m1.allocated)
    assert.truthy(m1.peak >= m1.allocated)
    assert.truthy(m1.total > 0 and m1.free > 0)
    x:close(); y:close()
    local m2 = gpu.memory("cuda")
    assert.equal(m0.allocated, m2.allocated)
    assert.equal(m1.reserved, m2.reserved)                   -- cached, not returned
    local z = gpu.zeros(1024 * 1024, { device = "cuda" })     -- served from the cache
    assert.equal(m1.reserved, gpu.memory("cuda").reserved)
    z:close()
    gpu.empty_cache("cuda")
    local m3 = gpu.memory("cuda")
    assert.equal(m3.allocated, m3.reserved)
  end)

  it("a loop of dropped arrays does not grow reserved memory", function()
    local before
    for i = 1, 200 do
      local t = gpu.zeros(3 * 1024 * 1024, { device = "cuda" }) + i
      t = nil
      if i == 20 then collectgarbage(); before = gpu.memory("cuda").reserved end
    end
    collectgarbage()
    assert.truthy(gpu.memory("cuda").reserved <= before + 64 * 1024 * 1024)
  end)

  it("a library's workspace that only garbage stands in the way of is had after the reclaim hook", function()
    -- under a 512 MiB pool: a (64 MiB) and big (128 MiB) live, 192 MiB of uncollected
    -- garbage, the result (64 MiB) fits; the copy of the strided operand cuBLAS cannot
    -- read (64 MiB more) does not until the hook empties the cache and collects
    local bin = os.getenv("GPULUA_BIN") or "./gpulua"
    local script = [[
      collectgarbage("stop")
      local a = gpu.random.rand(4096, 4096, { device = "cuda" })
      local big = gpu.random.rand(4096, 8192, { device = "cuda" })
      local b = big[{ ":", { 1, 8192, 2 } }]
      local junk = {}
      for i = 1, 3 do junk[i] = gpu.zeros(4096, 4096, { device = "cuda" }) end
      junk = nil
      local c = a:matmul(b)
      local want = a:matmul(b:contiguous())
      assert(((c - want):abs():max() / want:abs():max()):item() < 1e-5)
      print("reclaimed ok")
    ]]
    local code, out, err = h.run("GPULUA_MEMORY_LIMIT=512M " .. bin .. " -e '" .. script:gsub("'", "'\\''") .. "'")
    assert.equal(0, code, out .. err)
    assert.matches("reclaimed ok", out)
  end)

  it("an impossible allocation fails with 'out of memory' and the sizes, and leaves the device usable", function()
    local ok, err = pcall(gpu.zeros, 2 ^ 46, { dtype = "uint8", device = "cuda" })   -- 64 TiB
    assert.is_false(ok)
    assert.matches("out of memory on cuda:0", err)
    assert.matches("tried to allocate", err)
    h.assert_close((gpu.ones(3, { device = "cuda" }) * 2):to("cpu"), { 2, 2, 2 }, 0)
  end)

  it("synchronize works and ops the backend lacks say 'not supported on cuda:0'", function()
    gpu.synchronize("cuda")
    gpu.synchronize()
    local g = gpu.ones(3, { device = "cuda" })
    local ok, err = pcall(function() return gpu.matmul(gpu.ones(2, 2, { device = "cuda" }), gpu.ones(2, 2, { device = "cuda" })) end)
    if not ok then assert.truthy(err:find("cuda:0", 1, true), err) end
    h.assert_close(g:to("cpu"), { 1, 1, 1 }, 0)
  end)

  it("events time device work on the stream (cudaEvent), and close safely", function()
    local e0, e1 = gpu.event("cuda"), gpu.event("cuda")
    local x = gpu.ones(1 << 20, { device = "cuda" })
    e0:record()
    for _ = 1, 5 do x = x * 1.0001 end
    e1:record()
    local ms = e0:elapsed(e1)
    assert.is_number(ms)
    assert.is_true(ms >= 0 and ms < 10000, tostring(ms))
  end)

  it("matmul goes through cuBLAS: float32 IEEE by default, tf32 on request, sizes above one tile", function()
    local a = (gpu.arange(130 * 70, { device = "cpu" }):reshape(130, 70) % 17 - 8) / 8
    local b = (gpu.arange(70 * 90, { device = "cpu" }):reshape(70, 90) % 13 - 6) / 6
    local want = a:matmul(b)
    h.assert_close(a:to("cuda"):matmul(b:to("cuda")):to("cpu"), want, 1e-5)
    h.assert_close(a:to("cuda").T:contiguous().T:matmul(b:to("cuda")):to("cpu"), want, 1e-5)
    gpu.set_matmul_precision("tf32")
    assert.equal("tf32", gpu.get_matmul_precision())
    h.assert_close(a:to("cuda"):matmul(b:to("cuda")):to("cpu"), want, 1e-2)
    gpu.set_matmul_precision("highest")
    assert.equal("highest", gpu.get_matmul_precision())
    local a16 = a:astype("bfloat16")
    h.assert_close(a16:to("cuda"):matmul(b:astype("bfloat16"):to("cuda")):to("cpu"), a16:matmul(b:astype("bfloat16")), 1.6e-2)
  end)

  it("reductions and sorts of empty and one-element arrays", function()
    local z = gpu.zeros(0, 3, { device = "cuda" })
    h.assert_close(z:sum(1):to("cpu"), { 0, 0, 0 }, 0)
    h.assert_close(z:prod():to("cpu"), gpu.array(1), 0)
    assert.is_false(pcall(gpu.max, z))
    assert.equal(7, gpu.array(7, { device = "cuda" }):sort():item())
    assert.equal(7, gpu.array({ 7 }, { device = "cuda" }):sum():item())
  end)

  it("mixing devices is an error naming both", function()
    local ok, err = pcall(function() return gpu.ones(3, { device = "cuda" }) + gpu.ones(3, { device = "cpu" }) end)
    assert.is_false(ok)
    assert.matches("cuda:0", err); assert.matches("cpu", err)
  end)
end)
