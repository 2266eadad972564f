-- spec/onednn_spec.lua — the cpu's library path under nn's layers (oneDNN: convolution in
-- its three directions, pooling, batch norm; src/backend/cpu/cpu_dnnl_*.c) against nn's own
-- path (im2col + GEMM, array ops) on the same float32 inputs: values and gradients, the
-- geometry oneDNN pads asymmetrically, groups, NaN, ties, the running statistics, the
-- primitive cache past its size; float64 staying on im2col; GPULUA_DNNL=0 and the lazy load.
-- Without oneDNN (GPULUA_DNNL=0, no libdnnl2) both paths are nn's own and the comparisons
-- still run.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn

local BIN = os.getenv("GPULUA_BIN") or "./gpulua"
local onednn = gpu.dnn.available("cpu", "float32") == true
local G = gpu.random.Generator(14)

local function normal(...) return G:normal(0, 1, { ... }) end

-- f(inputs...) -> y, run on both paths: y and the gradients of sum(y * dy) for every input
-- (dy fixed), as a list {y, grad1, grad2, ...}
local function run(enabled, f, inputs, dy)
  gpu.dnn.enabled = enabled
  local ok, res = pcall(function()
    local xs = {}
    for i, v in ipairs(inputs) do xs[i] = v:detach():requires_grad() end
    local y = f(table.unpack(xs))
    y:backward(dy or gpu.random.Generator(5):normal(0, 1, y.shape))
    local out = { y:detach() }
    for i, v in ipairs(xs) do out[i + 1] = v.grad end
    return out
  end)
  gpu.dnn.enabled = true
  assert(ok, res)
  return res
end

local function same_both_ways(f, inputs, tol)
  local a, b = run(true, f, inputs), run(false, f, inputs)
  assert.equal(#b, #a)
  for i = 1, #a do
    local ok, msg = h.close(a[i], b[i], tol or 1e-4)
    assert(ok, (i == 1 and "output" or "gradient " .. (i - 1)) .. ": " .. tostring(msg))
  end
  return a
end

-- how many times each dnn function ran during fn (the dispatch's names, gpu.profile's table)
local function dnn_calls(fn)
  local counts = {}
  local p = gpu.profile(fn, { quiet = true })
  for _, row in ipairs(p.rows) do
    if row.name:find("^dnn%.") and row.name ~= "dnn.available" then counts[row.name] = row.calls end
  end
  return counts
end

describe("oneDNN on the cpu against nn's own path (float32)", function()
  it("says which path it takes", function()
    if os.getenv("GPULUA_DNNL") == "0" then
      assert.is_false(onednn)
      assert.matches("GPULUA_DNNL=0", gpu.config().conv)
    elseif onednn then
      assert.equal("onednn", gpu.config().conv)
    else
      return pending("oneDNN (libdnnl2) is not loadable here: " .. tostring(select(2, gpu.dnn.available("cpu"))))
    end
  end)

  describe("conv2d, forward and both gradients", function()
    local cases = {
      { "3x3 padding 1", { 4, 3, 9, 9 }, { 5, 3, 3, 3 }, { padding = 1 } },
      { "stride 2 on odd sizes (the last rows never read)", { 2, 4, 10, 11 }, { 6, 4, 3, 3 }, { stride = 2 } },
      { "stride, padding and dilation", { 2, 4, 9, 9 }, { 6, 4, 2, 3 }, { stride = { 2, 1 }, padding = { 1, 2 }, dilation = 2 } },
      { "groups, 1x1", { 2, 4, 8, 8 }, { 6, 2, 1, 1 }, { groups = 2 } },
      { "depthwise-like groups with stride 3", { 3, 6, 7, 7 }, { 9, 2, 3, 3 }, { groups = 3, padding = 1, stride = 3 } },
      { "one input channel (the bench CNN's first layer)", { 8, 1, 28, 28 }, { 32, 1, 3, 3 }, { padding = 1 } },
      { "a kernel as large as the padded input", { 2, 3, 4, 5 }, { 2, 3, 6, 7 }, { padding = { 1, 1 } } },
    }
    for _, c in ipairs(cases) do
      it(c[1], function()
        local x, w, b = normal(table.unpack(c[2])), normal(table.unpack(c[3])), normal(c[3][1])
        same_both_ways(function(x, w, b) return nn.conv2d(x, w, b, c[4]) end, { x, w, b })
      end)
    end

    it("gpu.dnn's three directions directly, against im2col's", function()
      local x, w = normal(3, 4, 11, 10), normal(8, 2, 3, 3)
      local o = { stride = 2, padding = 1, groups = 2 }
      local y = nn.conv2d(x, w, nil, o)
      local dy = normal(table.unpack(y.shape))
      local xr, wr = x:detach():requires_grad(), w:detach():requires_grad()
      gpu.dnn.enabled = false
      local gx, gw = table.unpack(gpu.autograd.grad((nn.conv2d(xr, wr, nil, o) * dy):sum(), { xr, wr }))
      gpu.dnn.enabled = true
      if not onednn then return end
      local dnn = gpu.dnn
      h.assert_close(dnn.conv2d(x, w, o), y, 1e-4)
      h.assert_close(dnn.conv2d_backward_data(dy, w, x.shape, o), gx, 1e-4)
      h.assert_close(dnn.conv2d_backward_filter(x, dy, w.shape, o), gw, 1e-4)
    end)

    it("a layer and a training step take the library path where it is there", function()
      local m = nn.Sequential { nn.Conv2d(2, 4, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
                                nn.BatchNorm2d(4), nn.AvgPool2d(2) }
      local x = normal(2, 2, 8, 8)
      local calls = dnn_calls(function() m(x):sum():backward() end)
      if onednn then
        assert.is_truthy(calls["dnn.conv2d"], "dnn.conv2d did not run")
        assert.is_truthy(calls["dnn.max_pool2d"], "dnn.max_pool2d did not run")
        assert.is_truthy(calls["dnn.avg_pool2d"], "dnn.avg_pool2d did not run")
        assert.is_truthy(calls["dnn.batch_norm"], "dnn.batch_norm did not run")
      else
        assert.same({}, calls)
      end
    end)

    it("float64 and autocast's halves stay on im2col + GEMM, unchanged", function()
      local x, w = normal(2, 3, 7, 7):astype("float64"), normal(4, 3, 3, 3):astype("float64")
      local calls = dnn_calls(function() return nn.conv2d(x, w, nil, { padding = 1 }) end)
      assert.is_nil(calls["dnn.conv2d"])
      local y64 = nn.conv2d(x, w, nil, { padding = 1 })
      gpu.dnn.enabled = false
      local ref = nn.conv2d(x, w, nil, { padding = 1 })
      gpu.dnn.enabled = true
      assert.is_true((y64 - ref):abs():max():item() == 0)
      local x32, w32 = x:astype("float32"), w:astype("float32")
      local function half() return nn.conv2d(x32, w32) end
      local yb
      calls = dnn_calls(function() yb = gpu.autocast("bfloat16", half) end)
      assert.is_nil(calls["dnn.conv2d"])
      gpu.dnn.enabled = false
      local rb = gpu.autocast("bfloat16", half)
      gpu.dnn.enabled = true
      assert.is_true((yb - rb):abs():max():item() == 0)
    end)

    it("many shapes in turn: the primitive cache evicts and rebuilds, results stay right", function()
      local w = normal(3, 2, 3, 3)
      for round = 1, 2 do
        for s = 3, 72 do
          local x = G:normal(0, 1, { 1, 2, s, 3 })
          local y = nn.conv2d(x, w)
          gpu.dnn.enabled = false
          local ref = nn.conv2d(x, w)
          gpu.dnn.enabled = true
          local ok, msg = h.close(y, ref, 1e-4)
          assert(ok, ("round %d, height %d: %s"):format(round, s, msg))
        end
      end
    end)
  end)

  describe("pooling", function()
    local x = normal(2, 3, 9, 8)
    for _, c in ipairs {
      { "max 2", true, 2, {} }, { "max 3 stride 2 padding 1", true, 3, { stride = 2, padding = 1 } },
      { "max 3x2 stride 1", true, { 3, 2 }, { stride = 1 } },
      { "avg 2", false, 2, {} }, { "avg 3 stride 2 padding 1", false, 3, { stride = 2, padding = 1 } },
      { "avg 2x3 stride (1, 2) padding (1, 1)", false, { 2, 3 }, { stride = { 1, 2 }, padding = 1 } },
    } do
      it(c[1], function()
        local f = c[2] and nn.max_pool2d or nn.avg_pool2d
        same_both_ways(function(x) return f(x, c[3], c[4]) end, { x }, 1e-5)
      end)
    end

    it("max: NaN propagates, ties and padding send the gradient where nn's own path does", function()
      local nan = 0 / 0
      local xn = gpu.array({ { { { 1, nan, 3, 4 }, { 5, 6, 7, 8 }, { 1, 2, 3, 4 }, { nan, 0, 0, nan } } } })
      local a = same_both_ways(function(x) return nn.max_pool2d(x, 2) end, { xn }, 0)
      assert.is_true(a[1][{ 1, 1, 1, 1 }] ~= a[1][{ 1, 1, 1, 1 }])
      local ones = gpu.ones(1, 2, 5, 5)
      same_both_ways(function(x) return nn.max_pool2d(x, 3, { stride = 1, padding = 1 }) end, { ones }, 0)
      local neg = gpu.full({ 1, 1, 4, 4 }, -math.huge)
      same_both_ways(function(x) return nn.max_pool2d(x, 2) end, { neg }, 0)
    end)
  end)

  describe("batch norm", function()
    it("training: output, gradients, and the running statistics", function()
      local x, w, b = normal(4, 3, 5, 6), normal(3), normal(3)
      local stats = {}
      for _, on in ipairs { true, false } do
        local rm, rv = gpu.zeros(3) + 0.5, gpu.ones(3) * 2
        stats[#stats + 1] = { rm, rv }
        run(on, function(x, w, b) return nn.batch_norm(x, rm, rv, w, b, true, 0.2, 1e-3) end, { x, w, b })
      end
      h.assert_close(stats[1][1], stats[2][1], 1e-5)
      h.assert_close(stats[1][2], stats[2][2], 1e-5)
      same_both_ways(function(x, w, b) return nn.batch_norm(x, nil, nil, w, b, true) end, { x, w, b })
    end)

    it("(N, C) and (N, C, L) inputs, and evaluation with the running statistics", function()
      local rm, rv = normal(4), normal(4):abs() + 0.5
      for _, shape in ipairs { { 6, 4 }, { 3, 4, 7 }, { 2, 4, 3, 3 } } do
        local x, w, b = normal(table.unpack(shape)), normal(4), normal(4)
        same_both_ways(function(x, w, b) return nn.batch_norm(x, nil, nil, w, b, true) end, { x, w, b })
        same_both_ways(function(x, w, b) return nn.batch_norm(x, rm, rv, w, b, false) end, { x, w, b })
      end
    end)

    it("a BatchNorm2d layer keeps PyTorch's running statistics through oneDNN", function()
      local m = nn.BatchNorm2d(3)
      local x = normal(4, 3, 4, 4)
      m(x)
      local mean, var = x:mean({ 1, 3, 4 }), x:var({ 1, 3, 4 }, { ddof = 1 })
      h.assert_close(m.running_mean, mean * 0.1, 1e-5)
      h.assert_close(m.running_var, var * 0.1 + 0.9, 1e-5)
    end)
  end)
end)

describe("oneDNN's loading and GPULUA_DNNL", function()
  local function lua(code, env)
    return h.run((env or "") .. " " .. BIN .. " -e " .. "'" .. code:gsub("'", "'\\''") .. "'")
  end

  it("gpulua -e '' does not load the library; the first convolution does", function()
    local maps = "local n = 0; for l in io.lines('/proc/self/maps') do if l:find('libdnnl', 1, true) then n = n + 1 end end; "
    local st, out = lua(maps .. "print(n)")
    assert.equal(0, st)
    assert.equal("0", out:match("%S+"))
    if not onednn then return end
    local st2, out2 = lua("gpu.nn.conv2d(gpu.ones(1, 1, 3, 3), gpu.ones(1, 1, 2, 2)); " .. maps .. "print(n > 0)")
    assert.equal(0, st2)
    assert.equal("true", out2:match("%S+"))
  end)

  it("GPULUA_DNNL=0 forces im2col + GEMM, with the same numbers", function()
    local code = "gpu.random.seed(3); local x, w = gpu.randn(2, 3, 8, 8), gpu.randn(4, 3, 3, 3); "
      .. "io.write(gpu.config().conv, ' ', tostring((gpu.dnn.available('cpu'))), ' ', "
      .. "('%.5f'):format(gpu.nn.conv2d(x, w, nil, {padding = 1}):sum():item()))"
    local st, off = lua(code, "GPULUA_DNNL=0")
    assert.equal(0, st)
    assert.matches("^im2col %+ BLAS %(cpu; GPULUA_DNNL=0 turns oneDNN off%) false ", off)
    local st2, on = lua(code)
    assert.equal(0, st2)
    assert.is_true(h.close(tonumber(on:match("(%S+)$")), tonumber(off:match("(%S+)$")), 1e-5), on .. " vs " .. off)
    if onednn then assert.matches("^onednn true ", on) end
  end)

  it("GPULUA_DNNL_REFUSE=1: a convolution oneDNN refuses runs im2col + GEMM inside its path", function()
    if not onednn then return pending("no oneDNN here") end
    local code = "gpu.random.seed(5); local x, w = gpu.randn(3, 4, 11, 10):requires_grad(), gpu.randn(6, 2, 3, 2):requires_grad(); "
      .. "local y = gpu.nn.conv2d(x, w, nil, {stride = {2, 3}, padding = {1, 2}, dilation = {1, 2}, groups = 2}); "
      .. "local n = 0; for _, r in ipairs(gpu.profile(function() end, {quiet = true}).rows) do n = n + 1 end; "
      .. "(y * y):sum():backward(); io.write(gpu.config().conv, ' ', ('%.4f %.4f %.4f'):format((y * y):sum():item(), "
      .. "(x.grad * x.grad):sum():item(), (w.grad * w.grad):sum():item()))"
    local st, a = lua(code, "GPULUA_DNNL_REFUSE=1")
    local st2, b = lua(code, "GPULUA_DNNL=0")
    assert.equal(0, st)
    assert.equal(0, st2)
    assert.matches("^onednn ", a)
    local na, nb = {}, {}
    for v in a:gmatch("%d+%.%d+") do na[#na + 1] = tonumber(v) end
    for v in b:gmatch("%d+%.%d+") do nb[#nb + 1] = tonumber(v) end
    assert.equal(3, #na)
    assert.is_true(h.close(na, nb, 1e-5), a .. " vs " .. b)
  end)

  it("GPULUA_DNNL_POOL=1 takes oneDNN's own pooling, with nn's numbers", function()
    if not onednn then return pending("no oneDNN here") end
    local code = "gpu.random.seed(4); local x = gpu.randn(2, 3, 9, 8):requires_grad(); "
      .. "local a = gpu.nn.max_pool2d(x, 3, {stride = 2, padding = 1}); local b = gpu.nn.avg_pool2d(x, 3, {stride = 2, padding = 1}); "
      .. "local y = (a * a):sum() + (b * b):sum(); y:backward(); io.write(('%.4f %.4f'):format(y:item(), (x.grad * x.grad):sum():item()))"
    local st, a = lua(code, "GPULUA_DNNL_POOL=1")
    local st2, b = lua(code, "GPULUA_DNNL=0")
    assert.equal(0, st)
    assert.equal(0, st2)
    local a1, a2 = a:match("(%S+) (%S+)")
    local b1, b2 = b:match("(%S+) (%S+)")
    assert.is_true(h.close(tonumber(a1), tonumber(b1), 1e-5) and h.close(tonumber(a2), tonumber(b2), 1e-5), a .. " vs " .. b)
  end)
end)
