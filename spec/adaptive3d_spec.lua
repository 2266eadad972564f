-- adaptive3d_spec.lua — volumetric adaptive pooling against torch 2 and Keras 3's global
-- pooling of steps and volumes (spec/fixtures/adaptive3d.py): nn.functional's
-- adaptive_avg_pool3d and adaptive_max_pool3d (values, indices and gradients in float64),
-- the modules AdaptiveAvgPool3d / AdaptiveMaxPool3d, Keras's GlobalAveragePooling1D/3D and
-- GlobalMaxPooling1D/3D; misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local F = nn.functional
local ag = require "gpu.autograd"
local X = require "spec.fixtures.adaptive3d"

local function a64(t) return gpu.array(t, { dtype = "float64" }) end

describe("adaptive volumetric pooling against torch", function()
  for i, c in ipairs(X.torch) do
    local out = type(c.out) == "table" and ("{%s}"):format(table.concat((function()
      local t = {}
      for j = 1, 3 do t[j] = tostring(c.out[j]) end
      return t
    end)(), ", ")) or tostring(c.out)
    it(("%s #%d, output_size %s: values, indices and gradients (float64)"):format(c.op, i, out), function()
      local x = a64(X.x):requires_grad()
      local y, idx
      if c.idx then y, idx = F[c.op](x, c.out, true) else y = F[c.op](x, c.out) end
      assert(h.close(y, a64(c.y), 1e-12))
      if c.idx then
        assert.same(gpu.array(c.idx, { dtype = "int64" }):totable(), (idx - 1):totable())
        assert(h.close(F[c.op](x, c.out), y, 0))
      end
      local g = ag.grad((y * a64(c.r)):sum(), { x })
      assert(h.close(g[1], a64(c.grad), 1e-12))
    end)
  end

  it("the modules compute the functional forms; unbatched inputs; float32", function()
    local x = a64(X.x)
    assert(h.close(nn.AdaptiveAvgPool3d({ 2, 4, 3 })(x), F.adaptive_avg_pool3d(x, { 2, 4, 3 }), 0))
    local m = nn.AdaptiveMaxPool3d(3, { return_indices = true })
    local y, i = m(x)
    local y2, i2 = F.adaptive_max_pool3d(x, 3, true)
    assert(h.close(y, y2, 0))
    assert.same(i2:totable(), i:totable())
    assert(h.close(F.adaptive_avg_pool3d(x[1], { 2, 4, 3 }), F.adaptive_avg_pool3d(x, { 2, 4, 3 })[1], 1e-15))
    assert(h.close(F.adaptive_max_pool3d(x[1], 2), F.adaptive_max_pool3d(x, 2)[1], 0))
    local x32 = x:astype("float32")
    assert.equal("float32", F.adaptive_avg_pool3d(x32, 2).dtype)
    assert(h.close(F.adaptive_avg_pool3d(x32, { 2, 4, 3 }), F.adaptive_avg_pool3d(x, { 2, 4, 3 }):astype("float32"), 1e-5))
    assert.equal("AdaptiveAvgPool3d(output_size=(2, 4, 3))", tostring(nn.AdaptiveAvgPool3d({ 2, 4, 3 })))
    assert.equal("AdaptiveMaxPool3d(output_size=3)", tostring(nn.AdaptiveMaxPool3d(3)))
  end)

  it("gradcheck through the averaging matrices and the gathered windows", function()
    gpu.random.seed(3)
    local x = gpu.random.randn(1, 2, 3, 4, 5, { dtype = "float64" })
    assert(ag.gradcheck(function(v) return F.adaptive_avg_pool3d(v, { 2, 3, 3 }) end, { x }))
    assert(ag.gradcheck(function(v) return F.adaptive_max_pool3d(v, { 2, 3, 3 }) end, { x }))
  end)

  it("misuse names the function and the fault", function()
    local x = gpu.ones(1, 1, 2, 2, 2)
    h.fails({ "nn.adaptive_avg_pool3d: expected a 5-D input (N, C, D, H, W) or a 4-D one (C, D, H, W), got (2, 2)" },
      F.adaptive_avg_pool3d, gpu.ones(2, 2), 1)
    h.fails({ "nn.adaptive_max_pool3d: output_size entries must be positive integers, got 0" }, F.adaptive_max_pool3d, x, { 1, 0, 1 })
    h.fails({ "nn.adaptive_avg_pool3d: output_size must be an integer or a table of 3, got '2'" }, F.adaptive_avg_pool3d, x, "2")
    h.fails({ "return_indices must be a boolean, got integer 1" }, F.adaptive_max_pool3d, x, 1, 1)
    h.fails({ "output_size" }, nn.AdaptiveAvgPool3d, 0)
    h.fails({ "gpu.array expected" }, F.adaptive_avg_pool3d, {}, 1)
  end)
end)

describe("Keras's global pooling of steps and volumes against Keras 3", function()
  for i, c in ipairs(X.keras) do
    local kw = {}
    for k, v in pairs(c.kw) do kw[#kw + 1] = ("%s=%s"):format(k, tostring(v)) end
    it(("%s #%d {%s}"):format(c.kind, i, table.concat(kw, ", ")), function()
      local x = gpu.array(c.nd == 1 and X.xk1 or X.xk3, { dtype = "float32" })
      local o = next(c.kw) and c.kw or nil
      local y = nn[c.kind](o)(x)
      assert(h.close(y, gpu.array(c.y, { dtype = "float32" }), 1e-6))
    end)
  end

  it("refuses inputs of the wrong rank and unknown options, naming the layer", function()
    h.fails({ "nn.GlobalAveragePooling1D: expected a 3-D input (N, L, C) or (N, C, L), got (2, 3)" },
      nn.GlobalAveragePooling1D(), gpu.ones(2, 3))
    h.fails({ "nn.GlobalMaxPooling3D: expected a 5-D input (N, D, H, W, C) or (N, C, D, H, W), got (1, 2, 2, 2)" },
      nn.GlobalMaxPooling3D(), gpu.ones(1, 2, 2, 2))
    h.fails({ "unknown option 'keep_dims'" }, nn.GlobalMaxPooling1D, { keep_dims = true })
  end)
end)
