-- spec/losses_more_spec.lua — Keras's focal, Poisson, MAPE, MSLE, cosine, log-cosh, hinge and
-- Dice losses and PyTorch's PoissonNLL, GaussianNLL, HingeEmbedding, SoftMargin,
-- MultiLabelSoftMargin, MultiMargin and probability-target cross-entropy, against
-- spec/fixtures/losses_more.lua (made by spec/fixtures/losses_more.py with Keras 3 in
-- float32 and PyTorch in float64), their gradients by float64 gradcheck, and misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local F = dofile("spec/fixtures/losses_more.lua")

local function A(name, dtype, dev)
  local a = F.arrays[name]
  local x = gpu.array(a.values, { dtype = dtype, device = dev }):reshape(table.unpack(a.shape))
  return name == "labels" and x:astype("int64") or x
end

local function opts_of(o, dtype, dev)
  local out, var = {}, nil
  for k, v in pairs(o) do
    if k == "var" then var = A(v, dtype, dev)
    elseif type(v) == "string" and F.arrays[v] then out[k] = A(v, dtype, dev)
    else out[k] = v end
  end
  return out, var
end

local function call(name, pred, target, o, var)
  if var then return nn[name](pred, target, var, o) end
  return nn[name](pred, target, o)
end

for _, dev in ipairs(h.devices()) do
  describe("more losses on " .. dev, function()
    for i, c in ipairs(F.cases) do
      local name, pred, target, o, want, src = table.unpack(c)
      it(("%s %d gives %s's value"):format(name, i, src == "keras" and "Keras" or "PyTorch"), function()
        -- Keras computes in float32: its inputs are the float32 roundings, its result float32's
        local dtype = src == "keras" and "float32" or "float64"
        local opts, var = opts_of(o, dtype, dev)
        local got = call(name, A(pred, dtype, dev), A(target, dtype, dev), opts, var):item()
        local tol = src == "keras" and 3e-6 or 1e-12
        assert(math.abs(got - want) <= tol * math.max(1, math.abs(want)),
          ("%s: %.10g, %s %.10g"):format(name, got, src, want))
      end)
    end

    it("are differentiable (float64 gradcheck)", function()
      for _, c in ipairs(F.cases) do
        local name, pred, target, o = table.unpack(c)
        if name ~= "dice" or o.axis then
          local opts, var = opts_of(o, "float64", dev)
          local x = A(pred, "float64", dev)
          local y = A(target, "float64", dev)
          local ok = gpu.autograd.gradcheck(function(p) return call(name, p, y, opts, var) end, { x })
          assert.is_true(ok, name)
        end
      end
    end)
  end)
end

describe("more losses", function()
  it("as modules and compile names", function()
    local x, y = A("real", "float64"), A("pm1", "float64")
    assert.equal(nn.soft_margin_loss(x, y):item(), nn.SoftMarginLoss()(x, y):item())
    assert.equal(nn.multi_margin_loss(x, A("labels")):item(), nn.MultiMarginLoss()(x, A("labels")):item())
    local v = A("var", "float64")
    assert.equal(nn.gaussian_nll_loss(x, y, v):item(), nn.GaussianNLLLoss()(x, y, v):item())
    for _, name in ipairs({ "binary_focal_crossentropy", "categorical_focal_crossentropy", "poisson", "mape", "msle",
                            "cosine_similarity", "logcosh", "hinge", "squared_hinge", "dice" }) do
      assert.is_function(nn.losses[name], name)
      gpu.nn.Sequential(gpu.nn.Linear(3, 3)):compile{ loss = name }
    end
  end)

  it("refuse misuse by name", function()
    local x = gpu.ones(4, 3)
    local cases = {
      { function() return nn.hinge(x, gpu.ones(4, 2)) end, "nn.hinge: input (4, 3) and target (4, 2) differ in shape" },
      { function() return nn.binary_focal_crossentropy(x, x, { gamma = -1 }) end, "gamma" },
      { function() return nn.multi_margin_loss(x, gpu.array({ 1, 2, 3, 4 })) end, "labels are 1-based (1..3)" },
      { function() return nn.multi_margin_loss(x, gpu.array({ 1, 2, 3, 1 }), { p = 3 }) end, "p" },
      { function() return nn.multi_margin_loss(x, gpu.array({ 1, 2, 3, 1 }), { weight = gpu.ones(2) }) end,
        "weight must hold one value per class (3)" },
      { function() return nn.gaussian_nll_loss(x, x, gpu.ones(2)) end, "var (2) does not fit input (4, 3)" },
      { function() return nn.gaussian_nll_loss(x, x, -gpu.ones(4, 3)) end, "var has negative entries" },
      { function() return nn.cross_entropy(x, gpu.full({ 4, 3 }, 1 / 3), { ignore_index = 0 }) end,
        "ignore_index applies to class labels" },
      { function() return nn.dice(x, x, { axis = "rows" }) end, "axis" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
    end
  end)
end)
