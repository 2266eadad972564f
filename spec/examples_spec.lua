-- spec/examples_spec.lua — every example in examples/ runs (with --small) under the
-- gpulua binary as a subprocess, on each test device (GPULUA_DEVICE), exits 0 and prints
-- its key lines; and gpu.profile / gpu.range, which examples/profiling.lua shows off.
local h = require "spec.helper"
local gpu = h.gpu

local BIN = os.getenv("GPULUA_BIN") or "./gpulua"

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- runs `BIN examples/NAME.lua --small` with env; returns status, stdout + stderr
local function run_example(name, env)
  local parts = {}
  for k, v in pairs(env or {}) do parts[#parts + 1] = k .. "=" .. q(v) end
  parts[#parts + 1] = q(BIN)
  parts[#parts + 1] = q("examples/" .. name .. ".lua")
  parts[#parts + 1] = "--small 2>&1; echo \"exit=$?\""
  local p = assert(io.popen(table.concat(parts, " "), "r"))
  local out = p:read("a")
  p:close()
  local status = tonumber(out:match("exit=(%d+)%s*$"))
  return status, out
end

-- key lines each example must print (Lua patterns), on any device
local EXPECT = {
  arrays = { "a %+ a = gpu%.array%(%[ 2%.,  4%.,  6%.,  8%., 10%.%]",
             "sum of 2x%+1 over 1%.%.1000 = 1002000 %(expected 1002000%)",
             "float32 %* 2%.5 stays float32: float32", "arrays ok" },
  matmul = { "n = 100", "C = A %. B: shape 100x100, dtype float32", "100x100 matmul: [%d.]+ ms", "matmul ok" },
  check_gpu = { "CUDA available: %a+", "GPUs: %d+", "new arrays go to: ", "cuda_runtime",
                "blas", "self%-test on %S+: %(1%.%.3%)%^2 = {1%.0, 4%.0, 9%.0}", "check_gpu ok" },
  cpu_vs_gpu = { "op%s+cpu ms", "matmul 128x128%s+[%d.]+", "a %+ b %(16384%)%s+[%d.]+", "cpu_vs_gpu ok" },
  memory = { "ones%(n, n%) reuses the block", "after the block", "memory ok" },
  transfers = { "65536 float32 = 0%.2 MiB on the host", "transfers ok" },
  profiling = { "gpu%.profile on %S+: %d+ ops", "matmul%s+6%s+[%d.]+", "busiest op: %S+, %d+ calls", "profiling ok" },
  signal = { "rms error against the clean signal 0%.8%d+ %-> 0%.1%d+", "strongest tones: 5 Hz and 12 Hz",
             "spectrogram: 249 frames of 256 samples", "signal ok" },
  keras_functional = { "x_train shape: 600x28x28x1", "conv2d_1 %(Conv2D%)%s+%(None, 11, 11, 64%)%s+18496",
                       "Total params: 34826", "val_precision: [%d.]+", "Test accuracy: 0%.%d+",
                       "Test precision: [%d.]+, recall: [%d.]+", "keras_functional ok" },
  torch_cifar = { "data: %S+", "train: 600 images %dx%d+x%d+, test: 600, workers: 2", "epoch 1/1: loss [%d.]+ %(19 batches",
                  "test accuracy 0%.%d+ %(600 images%)" },
}
local NAMES = { "arrays", "matmul", "check_gpu", "cpu_vs_gpu", "memory", "transfers", "profiling", "signal",
                "keras_functional", "torch_cifar" }

describe("examples", function()
  for _, dev in ipairs(h.devices()) do
    for _, name in ipairs(NAMES) do
      it(name .. ".lua runs on " .. dev, function()
        local status, out = run_example(name, { GPULUA_DEVICE = dev })
        assert.are.equal(0, status, out)
        for _, pat in ipairs(EXPECT[name]) do
          assert.is_truthy(out:find(pat), ("%s: no line matching %q in:\n%s"):format(name, pat, out))
        end
        assert.is_falsy(out:find("stack traceback"), out)
      end)
    end
  end

  it("torch_cifar.lua saves a whole-state checkpoint each epoch and resumes from it", function()
    local path = os.tmpname()
    local function run(extra)
      local p = assert(io.popen(("%s examples/torch_cifar.lua --small --workers 1 --checkpoint %s %s 2>&1; echo \"exit=$?\"")
        :format(q(BIN), q(path), extra)))
      local out = p:read("a")
      p:close()
      assert.is_truthy(out:find("exit=0", 1, true), out)
      return out
    end
    run("")
    local state = gpu.load(path)
    assert.are.equal(1, state.epoch)
    assert.is_truthy(state.model and state.optimizer and state.scheduler)
    local out = run("--epochs 2 --resume")
    os.remove(path)
    assert.is_truthy(out:find("resumed from " .. path .. " after epoch 1 (lr 0.005)", 1, true), out)
    assert.is_truthy(out:find("epoch 2/2: loss", 1, true), out)
    assert.is_falsy(out:find("epoch 1/2", 1, true), out)
  end)

  it("check_gpu.lua reports the device GPULUA_DEVICE chose", function()
    local status, out = run_example("check_gpu", { GPULUA_DEVICE = "cpu" })
    assert.are.equal(0, status, out)
    assert.is_truthy(out:find("GPULUA_DEVICE=cpu", 1, true), out)
    assert.is_truthy(out:find("new arrays go to: cpu  (from GPULUA_DEVICE)", 1, true), out)
  end)

  it("check_gpu.lua says why there is no GPU when CUDA_VISIBLE_DEVICES hides them all", function()
    local status, out = run_example("check_gpu", { CUDA_VISIBLE_DEVICES = "" , GPULUA_DEVICE = "" })
    assert.are.equal(0, status, out)
    assert.is_truthy(out:find("CUDA available: false (", 1, true), out)
    assert.is_truthy(out:find("new arrays go to: cpu  (no GPU, so the CPU)", 1, true), out)
  end)

  it("the no-GPU paths explain themselves", function()
    if gpu.is_available() then return end
    local _, out = run_example("cpu_vs_gpu")
    assert.is_truthy(out:find("one column: there is no usable GPU here", 1, true), out)
    _, out = run_example("memory")
    assert.is_truthy(out:find("out of memory: this part needs a GPU", 1, true), out)
    _, out = run_example("transfers")
    assert.is_truthy(out:find("h2d   0 copies            0 bytes   d2h   0 copies            0 bytes", 1, true), out)
  end)

  it("a failing example exits non-zero (the runner can tell)", function()
    local tmp = os.tmpname()
    local f = assert(io.open(tmp, "w")); f:write("error('boom')\n"); f:close()
    local p = assert(io.popen(q(BIN) .. " " .. q(tmp) .. " 2>&1; echo \"exit=$?\""))
    local out = p:read("a"); p:close(); os.remove(tmp)
    assert.are_not.equal("0", out:match("exit=(%d+)"))
  end)
end)

describe("gpu.profile", function()
  for _, dev in ipairs(h.devices()) do
    it("counts calls per op, sorted by time, on " .. dev, function()
      local a = gpu.ones({64, 64}, {device = dev})
      local report, r1, r2 = gpu.profile(function(x, k)
        local s
        for _ = 1, 3 do s = x:matmul(x) + k end
        local t = gpu.exp(s)
        return t:sum():item(), "done"
      end, {quiet = true, args = {a, 1}, device = dev})
      assert.are.equal("done", r2)
      h.assert_close(r1, 64 * 64 * math.exp(65), 1e-4)
      assert.are.equal(3, report.ops.matmul.calls)
      assert.are.equal(3, report.ops["+"].calls)
      assert.are.equal(1, report.ops.exp.calls)
      assert.are.equal(1, report.ops.sum.calls)
      assert.are.equal(dev, report.device)
      local total = 0
      for i, row in ipairs(report.rows) do
        total = total + row.calls
        assert.is_true(row.host_ms >= 0)
        if i > 1 then
          local prev = report.rows[i - 1]
          assert.is_true((prev.device_ms or prev.host_ms) >= (row.device_ms or row.host_ms))
        end
        if dev == "cpu" then assert.is_nil(row.device_ms) else assert.is_number(row.device_ms) end
      end
      assert.are.equal(total, report.total.calls)
      assert.is_truthy(tostring(report):find("^gpu%.profile on " .. dev))
      assert.is_truthy(tostring(report):find("\nmatmul%s+3 "))
    end)

    it("counts bytes copied between devices on " .. dev, function()
      local a = gpu.ones({1000}, {device = dev})
      local report = gpu.profile(function() return a:to("cpu"):to(dev) end, {quiet = true, device = dev})
      local want = dev == "cpu" and 0 or 2 * 4000
      assert.are.equal(want, report.total.bytes)
    end)
  end

  it("puts every function back, also when fn raises", function()
    local before_add, before_meta = gpu.add, getmetatable(gpu.zeros(1)).__add
    local before_method = gpu.methods.matmul
    local ok, err = pcall(gpu.profile, function() gpu.add(gpu.ones(2), 1); error("boom") end, {quiet = true})
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("boom"))
    assert.are.equal(before_add, gpu.add)
    assert.are.equal(before_meta, getmetatable(gpu.zeros(1)).__add)
    assert.are.equal(before_method, gpu.methods.matmul)
    -- and a later profile counts from zero
    local r = gpu.profile(function() return gpu.ones(2) + 1 end, {quiet = true})
    assert.are.equal(1, r.ops["+"].calls)
  end)

  it("keeps the op's name in errors raised inside fn", function()
    local ok, err = pcall(gpu.profile, function() gpu.matmul(gpu.ones(2, 3), gpu.ones(2, 3)) end, {quiet = true})
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("'matmul'"), err)
  end)

  it("counts only the outermost op, and recovers after an op fails inside pcall", function()
    local r = gpu.profile(function()
      pcall(gpu.matmul, gpu.ones(2, 3), gpu.ones(2, 3))      -- fails: not counted
      return gpu.ones(2) + gpu.ones(2)
    end, {quiet = true})
    assert.is_nil(r.ops.matmul)
    assert.are.equal(1, r.ops["+"].calls)
  end)

  it("prints the table unless quiet", function()
    local lines = {}
    local real = _G.print
    _G.print = function(...) lines[#lines + 1] = table.concat({...}, "\t") end
    local ok, err = pcall(gpu.profile, function() return gpu.ones(3):exp() end)
    _G.print = real
    assert.is_true(ok, err)
    assert.is_truthy(lines[1] and lines[1]:find("\nexp%s+1 "), lines[1])
  end)

  it("rejects what is not a function or options", function()
    local ok, err = pcall(gpu.profile, 3)
    assert.is_false(ok)
    assert.is_truthy(err:find("bad argument #1 to 'profile' (function expected, got number)", 1, true), err)
    ok, err = pcall(gpu.profile, function() end, {colour = true})
    assert.is_false(ok)
    assert.is_truthy(err:find("unknown option 'colour'", 1, true), err)
    ok, err = pcall(gpu.profile, function() end, 5)
    assert.is_false(ok)
    assert.is_truthy(err:find("bad argument #2 to 'profile'", 1, true), err)
  end)
end)

describe("gpu.range", function()
  it("calls fn with the arguments and returns all its results", function()
    local a, b, c = gpu.range("step", function(x, y) return x + y, "two", nil end, 1, 2)
    assert.are.equal(3, a)
    assert.are.equal("two", b)
    assert.is_nil(c)
    assert.are.equal(0, select("#", gpu.range("empty", function() end)))
  end)

  it("passes an error from fn through unchanged and can be used again", function()
    local obj = {}
    local ok, err = pcall(gpu.range, "bad", function() error(obj) end)
    assert.is_false(ok)
    assert.are.equal(obj, err)
    assert.are.equal(5, gpu.range("again", function() return 5 end))
  end)

  it("nests", function()
    local v = gpu.range("outer", function()
      return gpu.range("inner", function() return gpu.ones(2):sum():item() end)
    end)
    assert.are.equal(2, v)
  end)

  it("accepts a callable table", function()
    local t = setmetatable({}, {__call = function(_, x) return x * 2 end})
    assert.are.equal(8, gpu.range("callable", t, 4))
  end)

  it("rejects a missing name or function", function()
    local ok, err = pcall(gpu.range)
    assert.is_false(ok)
    assert.is_truthy(err:find("bad argument #1 to .-range.- %(string expected, got no value%)"), err)
    ok, err = pcall(gpu.range, "x", 3)
    assert.is_false(ok)
    assert.is_truthy(err:find("bad argument #2 to .-range.- %(function expected, got number%)"), err)
  end)
end)
