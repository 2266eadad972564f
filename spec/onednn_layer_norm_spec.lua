-- spec/onednn_layer_norm_spec.lua — LayerNorm through oneDNN on the cpu (gpu.dnn.layer_norm,
-- layer_norm_backward; src/backend/cpu/cpu_dnnl_norm.c) against the own fused kernel
-- (gpu.fused.layer_norm) on the same float32 inputs, outputs, statistics and gradients; nn's
-- LayerNorm choosing it for float32 only (gpu.profile); PyTorch's numbers (the layers
-- fixtures); the misuse errors; GPULUA_DNNL=0. Without oneDNN (GPULUA_DNNL=0, no libdnnl2)
-- the oneDNN entry points must refuse and nn's numbers stay the same.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn

local BIN = os.getenv("GPULUA_BIN") or "./gpulua"
local onednn = gpu.dnn.available("cpu", "float32", "layer_norm") == true
local fx = dofile("spec/fixtures/layers/torch.lua").norms.layer_norm
local G = gpu.random.Generator(21)
local f32 = { dtype = "float32" }

local function normal(shape, mean, sd) return G:normal(mean or 0, sd or 1, shape, f32) end

-- how many times nn called each layer-norm entry point during fn (nn looks them up at each call)
local function calls(fn)
  local counts = {}
  local saved = { dnn = gpu.dnn.layer_norm, fused = gpu.fused.layer_norm, dnn_b = gpu.dnn.layer_norm_backward,
                  fused_b = gpu.fused.layer_norm_backward }
  local function counting(name, f)
    return function(...)
      counts[name] = (counts[name] or 0) + 1
      return f(...)
    end
  end
  gpu.dnn.layer_norm = counting("dnn.layer_norm", saved.dnn)
  gpu.fused.layer_norm = counting("fused.layer_norm", saved.fused)
  gpu.dnn.layer_norm_backward = counting("dnn.layer_norm_backward", saved.dnn_b)
  gpu.fused.layer_norm_backward = counting("fused.layer_norm_backward", saved.fused_b)
  local ok, err = pcall(fn)
  gpu.dnn.layer_norm, gpu.fused.layer_norm = saved.dnn, saved.fused
  gpu.dnn.layer_norm_backward, gpu.fused.layer_norm_backward = saved.dnn_b, saved.fused_b
  assert(ok, err)
  return counts
end

describe("gpu.dnn.layer_norm (oneDNN) against the own fused kernel (float32)", function()
  if not onednn then
    it("refuses without oneDNN, naming why", function()
      h.fails({ "layer_norm", "not supported on cpu" }, gpu.dnn.layer_norm, gpu.ones({ 2, 3 }, f32))
      assert.matches("^own fused kernel %(", gpu.config().layer_norm)
    end)
    return
  end

  it("says which path nn's LayerNorm takes", function()
    assert.equal("onednn", gpu.config().layer_norm)
    gpu.dnn.enabled = false
    local s = gpu.config().layer_norm
    gpu.dnn.enabled = true
    assert.equal("own fused kernel (gpu.dnn.enabled is false)", s)
    assert.is_false((gpu.dnn.available("cpu", "float64", "layer_norm")))
  end)

  local shapes = { { 5, 7 }, { 3, 4, 128 }, { 4096, 128 }, { 2, 1 }, { 1, 513 }, { 6, 3, 2, 64 } }
  for _, s in ipairs(shapes) do
    local name = table.concat(s, "x")
    it("forward and backward agree on " .. name .. " (with and without weight, bias)", function()
      local D = s[#s]
      local x = normal(s, 0.5, 2)
      local w, b, dy = normal({ D }, 1, 0.3), normal({ D }, 0, 0.3), normal(s)
      for _, wb in ipairs { { w, b }, { w, nil }, { nil, b }, { nil, nil } } do
        local ww, bb = wb[1], wb[2]
        local y1, m1, r1 = gpu.fused.layer_norm(x, ww, bb, { eps = 1e-4 })
        local y2, m2, r2 = gpu.dnn.layer_norm(x, ww, bb, { eps = 1e-4 })
        h.assert_close(y2, y1, 1e-5)
        h.assert_close(m2, m1, 1e-5)
        h.assert_close(r2, r1, 1e-5)
        assert.same(m1.shape, m2.shape)
        local gx1, gw1, gb1 = gpu.fused.layer_norm_backward(dy, x, m1, r1, ww)
        local gx2, gw2, gb2 = gpu.dnn.layer_norm_backward(x, dy, ww, m2, r2, { eps = 1e-4 })
        h.assert_close(gx2, gx1, 1e-4)
        h.assert_close(gw2, gw1, 1e-4)
        h.assert_close(gb2, gb1, 1e-4)
      end
    end)
  end

  it("keeps its primitives in the shared cache: 80 shapes twice (past its 64 entries) agree every time", function()
    for pass = 1, 2 do
      for D = 1, 80 do
        local x = normal({ 3, D }, 0, 1)
        local y1 = gpu.fused.layer_norm(x)
        local y2, m2, r2 = gpu.dnn.layer_norm(x)
        assert(h.close(y2, y1, 1e-5), ("pass %d, D = %d"):format(pass, D))
        local gx = gpu.dnn.layer_norm_backward(x, x, nil, m2, r2)
        local gx1 = gpu.fused.layer_norm_backward(x, x, m2, r2, nil)
        assert(h.close(gx, gx1, 1e-4), ("backward: pass %d, D = %d"):format(pass, D))
      end
    end
  end)

  it("takes strided inputs and empty batches", function()
    local x = normal({ 16, 9 })
    local xt = x.T                                        -- (9, 16), not contiguous
    h.assert_close((gpu.dnn.layer_norm(xt)), (gpu.fused.layer_norm(xt)), 1e-5)
    local y, m, r = gpu.dnn.layer_norm(gpu.zeros({ 0, 5 }, f32))
    assert.same({ 0, 5 }, y.shape)
    assert.same({ 0 }, m.shape)
    local gx, gw, gb = gpu.dnn.layer_norm_backward(gpu.zeros({ 0, 5 }, f32), gpu.zeros({ 0, 5 }, f32), nil, m, r)
    assert.same({ 0, 5 }, gx.shape)
    assert.equal(0, gw:abs():sum():item() + gb:abs():sum():item())
  end)

  it("nn.LayerNorm takes it for float32 and the own kernel for float64, with the same numbers", function()
    local m = nn.LayerNorm({ 4, 32 })
    m.weight = normal({ 4, 32 }, 1, 0.2):requires_grad()
    m.bias = normal({ 4, 32 }, 0, 0.2):requires_grad()
    m:zero_grad()
    local x = normal({ 8, 4, 32 })
    local dy = normal({ 8, 4, 32 })
    local function step(enabled)
      gpu.dnn.enabled = enabled
      local ok, res = pcall(function()
        local xs = x:detach():requires_grad()
        local w, b = m.weight:detach():requires_grad(), m.bias:detach():requires_grad()
        local y
        local c = calls(function()
          y = nn.layer_norm(xs, { 4, 32 }, w, b)
          y:backward(dy)
        end)
        return { y:detach(), xs.grad, w.grad, b.grad, c }
      end)
      gpu.dnn.enabled = true
      assert(ok, res)
      return res
    end
    local a, o = step(true), step(false)
    assert.equal(1, a[5]["dnn.layer_norm"])
    assert.is_nil(a[5]["fused.layer_norm"])
    assert.equal(1, a[5]["dnn.layer_norm_backward"])       -- oneDNN's backward too (measured faster)
    assert.is_nil(a[5]["fused.layer_norm_backward"])
    assert.equal(1, o[5]["fused.layer_norm"])
    assert.equal(1, o[5]["fused.layer_norm_backward"])
    assert.is_nil(o[5]["dnn.layer_norm"])
    for i = 1, 4 do h.assert_close(a[i], o[i], 1e-4) end
    local c64 = calls(function() nn.LayerNorm(8, { dtype = "float64" })(gpu.ones({ 2, 8 }, { dtype = "float64" })) end)
    assert.equal(1, c64["fused.layer_norm"])
    assert.is_nil(c64["dnn.layer_norm"])
  end)

  it("gives PyTorch's LayerNorm (fixtures) in float32, values and gradients", function()
    local A = function(t) return gpu.array(t, f32) end
    local x, w, b = A(fx.x):requires_grad(), A(fx.w):requires_grad(), A(fx.b):requires_grad()
    local y = gpu.dnn.layer_norm(x:reshape(-1, 12), w:reshape(12), b:reshape(12), { eps = 1e-3 }):reshape(x.shape)
    h.assert_close(y, A(fx.y), 1e-5)
    y:backward(A(fx.gy))
    h.assert_close(x.grad, A(fx.gx), 1e-4)
    h.assert_close(w.grad, A(fx.gw), 1e-4)
    h.assert_close(b.grad, A(fx.gb), 1e-4)
    -- and oneDNN's own backward on the same statistics
    local _, mean, rstd = gpu.dnn.layer_norm(A(fx.x):reshape(-1, 12), A(fx.w):reshape(12), A(fx.b):reshape(12),
      { eps = 1e-3 })
    local gx, gw, gb = gpu.dnn.layer_norm_backward(A(fx.x):reshape(-1, 12), A(fx.gy):reshape(-1, 12),
      A(fx.w):reshape(12), mean, rstd, { eps = 1e-3 })
    h.assert_close(gx:reshape(x.shape), A(fx.gx), 1e-4)
    h.assert_close(gw:reshape(12), A(fx.gw):reshape(12), 1e-4)
    h.assert_close(gb:reshape(12), A(fx.gb):reshape(12), 1e-4)
  end)

  it("refuses misuse with errors naming the function, leaving the arguments unchanged", function()
    local x = normal({ 5, 7 })
    local before = x:copy()
    h.fails({ "layer_norm", "float64", "onednn" }, gpu.dnn.layer_norm, x:astype("float64"))
    h.fails({ "layer_norm", "input must be float32 or float64", "int32" }, gpu.dnn.layer_norm,
      gpu.ones({ 2, 3 }, { dtype = "int32" }))
    h.fails({ "layer_norm", "weight has shape (6,), expected (7,)" }, gpu.dnn.layer_norm, x, gpu.ones({ 6 }, f32))
    h.fails({ "layer_norm", "bias is float64, expected float32" }, gpu.dnn.layer_norm, x, nil,
      gpu.ones({ 7 }, { dtype = "float64" }))
    h.fails({ "layer_norm", "eps" }, gpu.dnn.layer_norm, x, nil, nil, { eps = -1 })
    h.fails({ "layer_norm", "unknown option" }, gpu.dnn.layer_norm, x, nil, nil, { epsilon = 1 })
    h.fails({ "layer_norm", "last axis" }, gpu.dnn.layer_norm, gpu.ones({ 3, 0 }, f32))
    h.fails({ "gpu.array expected" }, gpu.dnn.layer_norm, 3)
    local _, m, r = gpu.dnn.layer_norm(x)
    h.fails({ "layer_norm_backward", "grad_output has shape (5,6), expected (5,7)" }, gpu.dnn.layer_norm_backward,
      x, gpu.ones({ 5, 6 }, f32), nil, m, r)
    h.fails({ "layer_norm_backward", "mean has shape (4,), expected (5,)" }, gpu.dnn.layer_norm_backward,
      x, x, nil, gpu.ones({ 4 }, f32), r)
    h.fails({ "layer_norm_backward", "rstd is float64" }, gpu.dnn.layer_norm_backward,
      x, x, nil, m, r:astype("float64"))
    assert.is_true(h.close(x, before, 0))
  end)
end)

describe("GPULUA_DNNL=0 and LayerNorm", function()
  it("forces the own kernel, with the same numbers", function()
    local code = "gpu.random.seed(5); local x = gpu.randn(64, 48):astype('float32'); "
      .. "io.write(gpu.config().layer_norm, '|', tostring((gpu.dnn.available('cpu', 'float32', 'layer_norm'))), '|', "
      .. "('%.5f'):format((gpu.nn.layer_norm(x * 3 + 1, 48) * gpu.arange(48):astype('float32')):sum():item()))"
    local function run(env)
      return h.run((env or "") .. " " .. BIN .. " -e " .. "'" .. code:gsub("'", "'\\''") .. "'")
    end
    local st, off = run("GPULUA_DNNL=0")
    assert.equal(0, st)
    local path, avail, v = off:match("^(.-)|(.-)|(.*)$")
    assert.equal("own fused kernel (GPULUA_DNNL=0 turns oneDNN off)", path)
    assert.equal("false", avail)
    local st2, on = run()
    assert.equal(0, st2)
    local path2, _, v2 = on:match("^(.-)|(.-)|(.*)$")
    if onednn then assert.equal("onednn", path2) end
    assert.is_true(h.close(tonumber(v2), tonumber(v), 1e-5), on .. " vs " .. off)
  end)
end)
