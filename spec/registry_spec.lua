-- spec/registry_spec.lua — devices come from the registry of backends (src/backend/backend.c):
-- their names, counts and the name syntax, and every layer above the backends reaches a
-- device only through its backend's table.
--
-- GPULUA_TEST_BACKEND=1 registers "testcpu", the cpu's table under another name: host memory
-- that the layers above treat as they treat an accelerator's (copies through to_host and
-- from_host, no direct reads). Without the variable the release build has no such device.
-- This spec starts its host again with the variable set and runs, on testcpu only, its own
-- checks below and the elementwise, reduction and matmul specs: a layer that bypassed the
-- registry (a device name parsed by hand, a "not cpu means cuda", a table sized for two
-- device types) fails there.
local h = require "spec.helper"
local gpu = h.gpu

local TEST = "testcpu"
local registered = gpu._device_name(TEST) ~= nil

-- the command that runs busted under this spec's own host: gpulua, or the stock lua5.4
-- loading ./gpu.so (LUA_CPATH is inherited)
local function busted_cmd()
  local busted = os.getenv("BUSTED") or "/usr/bin/busted"
  if os.getenv("GPULUA_HOST") == "lua5.4" then return "lua5.4 " .. busted end
  return (os.getenv("GPULUA_BIN") or "./gpulua") .. " " .. busted
end

if not registered then
  describe("the registry", function()
    it("lists the backends, the cpu first, with their devices and the name syntax", function()
      local list = gpu._devices()
      assert.equal("cpu", list[1].name)
      assert.equal("cpu", list[1].kind)
      assert.equal(1, list[1].count)
      local names = {}
      for _, b in ipairs(list) do names[#names + 1] = b.name end
      assert.equal("cpu,cuda", table.concat(names, ","))
      assert.equal("'cpu', 'cuda' or 'cuda:N'", gpu._device_syntax)
      local gpus = 0
      for _, b in ipairs(list) do if b.kind == "gpu" then gpus = gpus + b.count end end
      assert.equal(gpu.device_count(), gpus)
      assert.equal(#gpu.devices(), 1 + gpus)
    end)

    it("names devices through the backends' tables", function()
      assert.same({ "cpu", "cpu", "c" }, { gpu._device_name("cpu") })
      assert.equal("cuda:0", (gpu._device_name("cuda")))
      assert.equal("cuda:3", (gpu._device_name("cuda:3")))
      for _, bad in ipairs { "cpu:0", "cuda:", "cuda:x", "cuda:256", "gpu", "CPU" } do
        local name, why = gpu._device_name(bad)
        assert.is_nil(name)
        assert.equal(("unknown device '%s' (expected 'cpu', 'cuda' or 'cuda:N')"):format(bad), why)
      end
      h.fails({ "unknown device 'cuda:x'", "'cpu', 'cuda' or 'cuda:N'" }, gpu.zeros, 2, { device = "cuda:x" })
      if not gpu.is_available() then
        local _, why = gpu.is_available()
        local name, msg = gpu._device_name("cuda:1", true)
        assert.is_nil(name)
        assert.equal("device cuda:1 is not available (" .. why .. ")", msg)
      end
    end)

    it("has no test backend unless GPULUA_TEST_BACKEND asks for it", function()
      local _, why = gpu._device_name(TEST)
      assert.equal("unknown device 'testcpu' (expected 'cpu', 'cuda' or 'cuda:N')", why)
      h.fails({ "unknown device type 'testcpu'" }, gpu.devices, TEST)
    end)

    it("runs its own checks and the elementwise, reduction and matmul specs on testcpu", function()
      local specs = { "spec/registry_spec.lua", "spec/elementwise_spec.lua", "spec/reduce_spec.lua",
                      "spec/linalg_spec.lua" }
      local st, out, err = h.run("GPULUA_TEST_BACKEND=1 GPULUA_TEST_DEVICES=" .. TEST .. " " .. busted_cmd() ..
        " -o TAP " .. table.concat(specs, " "))
      local failed = {}
      for line in out:gmatch("[^\n]+") do
        if line:match("^not ok") then failed[#failed + 1] = line end
      end
      assert(#failed == 0 and st == 0, table.concat(failed, "\n") .. "\n" .. out:sub(-3000) .. err:sub(-2000))
      -- each spec ran its cases on testcpu (no case is left out by a device list that lacks it)
      local on = {}
      for line in out:gmatch("[^\n]+") do
        if line:match("^ok ") then
          for _, what in ipairs { "the registry on testcpu", "operators on testcpu", "reductions on testcpu",
                                  "matmul on testcpu" } do
            if line:find(what, 1, true) then on[what] = (on[what] or 0) + 1 end
          end
        end
      end
      assert.is_true((on["the registry on testcpu"] or 0) >= 5, out:sub(-2000))
      assert.is_true((on["operators on testcpu"] or 0) >= 3, out:sub(-2000))
      assert.is_true((on["reductions on testcpu"] or 0) >= 10, out:sub(-2000))
      assert.is_true((on["matmul on testcpu"] or 0) >= 5, out:sub(-2000))
    end)
  end)
  return
end

-- ---- with GPULUA_TEST_BACKEND=1: testcpu is a device like any other ----------------------------

describe("the registry on testcpu", function()
  local o = { device = TEST }

  it("is listed after the built-in backends, as a cpu", function()
    local list = gpu._devices()
    local last = list[#list]
    assert.same({ TEST, "cpu", false, 1 }, { last.name, last.kind, last.numbered, last.count })
    assert.equal("'cpu', 'cuda', 'cuda:N' or 'testcpu'", gpu._device_syntax)
    assert.same({ TEST, TEST, "c" }, { gpu._device_name(TEST) })
    local d = gpu.devices(TEST)
    assert.equal(1, #d)
    assert.same({ TEST, TEST }, { d[1].device, d[1].type })
    assert.is_number(d[1].cores)
    local cpus = gpu.devices("cpu")
    assert.equal(TEST, cpus[#cpus].device)
    h.fails({ "unknown device type 'tpu'", "'cpu', 'cuda', 'testcpu' or 'gpu'" }, gpu.devices, "tpu")
    h.fails({ "unknown device 'testcpu:0'" }, gpu.zeros, 1, { device = "testcpu:0" })
  end)

  it("makes arrays there, and ops keep them there", function()
    local x = gpu.arange(12, o):astype("float64"):reshape(3, 4)
    assert.equal(TEST, x.device)
    local results = {
      x + 1, x * x, -x, gpu.exp(x), x:sum(), x:sum(2), x:max(1), x:argmax(), x:cumsum(2), x:astype("float32"),
      x.T, x[2], x:matmul(x.T), gpu.where(x:gt(3), x, 0), x:sort(2), gpu.zeros_like(x), x:copy(),
      gpu.rand({ 2, 2 }, o), gpu.randn(3, o), gpu.full({ 2 }, 7, o), gpu.eye(3, o), gpu.linspace(0, 1, 5, o),
      gpu.array({ 1, 2, 3 }, o), gpu.concatenate({ x, x }),
    }
    for i, r in ipairs(results) do assert.equal(TEST, r.device, "result " .. i) end
    h.assert_close(x:to("cpu"):matmul(x:to("cpu").T), results[13]:to("cpu"))
    assert.equal(66, x:sum():item())
    assert.same({ 4, 5, 6, 7 }, x[2]:totable())
    local back = x:to("cpu")
    assert.equal("cpu", back.device)
    assert.equal(TEST, back:to(TEST).device)
    assert.equal((tostring(back):gsub("device=cpu", "device=testcpu")), tostring(x))
  end)

  it("refuses to mix devices as it does cpu and cuda", function()
    local x, c = gpu.arange(3, o), gpu.arange(3)
    h.fails({ "arrays are on different devices (testcpu and cpu); move one with :to('testcpu')" },
      function() return x + c end)
    h.fails({ "arrays are on different devices (cpu and testcpu); move one with :to('cpu')" },
      function() return c:matmul(x) end)
    h.fails({ "different devices", "testcpu" }, gpu.where, x:gt(0), c, x)
  end)

  it("has its own default device, generator and memory figures", function()
    local was = gpu.device()
    gpu.set_device(TEST)
    assert.equal(TEST, gpu.device())
    assert.equal(TEST, gpu.zeros(2).device)
    gpu.set_device(was)
    gpu.random.seed(11)
    local a = gpu.rand(5, o):to("cpu")
    gpu.random.seed(11)
    h.assert_close(gpu.rand(5), a, 0)              -- the same stream, a generator of its own
    local b = gpu.rand(5, o):to("cpu")
    local c = gpu.rand(5, o):to("cpu")
    assert.is_false(h.close(b, c, 0))
    local st = gpu.random.get_state(TEST)
    assert.equal(11, st.seed)
    local m = gpu.memory(TEST)
    assert.is_true(m.total > 0)
    gpu.synchronize(TEST)
    gpu.empty_cache(TEST)
  end)

  it("runs kernels compiled at run time and nn modules there", function()
    local k = gpu.ElementwiseKernel("float64 x, float64 y", "float64 z", "z = x * y + 1", "mul_add_one")
    local x = gpu.arange(4, o):astype("float64")
    local z = k(x, x)
    assert.equal(TEST, z.device)
    assert.same({ 1, 2, 5, 10 }, z:totable())
    local m = gpu.nn.Linear(3, 2):to(TEST)
    local y = m(gpu.ones({ 4, 3 }, o))
    assert.equal(TEST, y.device)
    assert.same({ 4, 2 }, y.shape)
    local raw = gpu.RawKernel('extern "C" __global__ void f() {}', "f")
    h.fails({ "runs on a GPU only; on the testcpu" }, raw, { 1 }, { 1 }, { x })
  end)
end)
