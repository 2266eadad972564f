-- spec/torch_layers_more_spec.lua — RReLU, EmbeddingBag, fold/unfold, max_unpool2d,
-- affine_grid, grid_sample, LazyLinear/LazyConv2d, nn.init.trunc_normal_ and
-- nn.utils.weight_norm against PyTorch (spec/fixtures/torch_layers_more.lua, made by
-- spec/fixtures/torch_layers_more.py in float64): values and the gradients of
-- sum(out * cos(k)), gradcheck, the random ones by their statistics, and misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local F = nn.functional
local FIX = dofile("spec/fixtures/torch_layers_more.lua")

-- inputs the fixture gives as integers (1-based positions), by name
local INTEGER = { i = true, o = true }

local function arr(t, dev, dtype)
  return gpu.array(t.values, { dtype = dtype or "float64", device = dev }):reshape(table.unpack(t.shape))
end

local function close(want, got, what, tol)
  assert.same(want.shape, got.shape, what)
  local g = got:to("cpu"):reshape(-1):totable()
  tol = tol or 1e-12
  for k, v in ipairs(want.values) do
    assert(math.abs(v - g[k]) <= tol * math.max(1, math.abs(v)), ("%s[%d]: %.17g, PyTorch %.17g"):format(what, k, g[k], v))
  end
end

-- the inputs of a case on dev (floating ones tracked) and the call as a function of them
local function setup(c, dev)
  local env = { F = F, nn = nn }
  for name, t in pairs(c.inputs) do
    env[name] = INTEGER[name] and arr(t, dev, "int64") or arr(t, dev):requires_grad()
  end
  if c.name:match("^weight_norm") then
    local dim = c.name:match("dim (%d)")
    local m = nn.utils.weight_norm(nn.Linear(3, 4, { dtype = "float64", device = dev }), { dim = dim and tonumber(dim) or false })
    local g = env.g
    if not dim then g = g:reshape() end
    m:load_state_dict({ weight_v = env.v, weight_g = g, bias = env.b })
    env.m = m
  end
  if c.name:match("^spectral_norm") then
    local conv = c.name:match("conv")
    local base = conv and nn.Conv2d(2, 3, 2, { dtype = "float64", device = dev }) or nn.Linear(3, 4, { dtype = "float64", device = dev })
    local m = nn.utils.spectral_norm(base)
    m:load_state_dict({ weight_orig = env.w, weight_u = env.u, weight_v = env.v, bias = m.bias:detach() * 0 })
    env.m = m
    local function call(what, eval)
      if eval then m:eval() end
      local y = m(env.x)
      return ({ out = y, u = m.weight_u, v = m.weight_v })[what]
    end
    env.sn_linear, env.sn_conv = call, function() return call("out") end
  end
  return env, assert(load("return " .. c.call, c.name, "t", env))
end

for _, dev in ipairs(h.devices()) do
  describe("torch layers (more) on " .. dev, function()
    for _, c in ipairs(FIX.cases) do
      it(c.name .. " gives PyTorch's values and gradients", function()
        local env, f = setup(c, dev)
        local y = f()
        assert.equal("float64", y.dtype)
        close(c.out, y, c.name)
        if c.grads then
          local w = gpu.arange(0, y.size, { dtype = "float64", device = dev }):cos():reshape(table.unpack(y.shape))
          ;(y * w):sum():backward()
          for name, want in pairs(c.grads) do
            local x = env[name]
            if env.m then
              x = ({ v = env.m.weight_v, g = env.m.weight_g, b = env.m.bias, w = env.m.weight_orig, x = env.x })[name]
            end
            local got = x.grad or gpu.zeros(x.shape, { dtype = "float64", device = dev })
            if name == "g" and env.m and got.ndim == 0 then got = got:reshape(1, 1) end
            close(want, got, c.name .. " d/d" .. name, 1e-11)
          end
        end
      end)
    end

    it("pass gradcheck (float64)", function()
      local pick = { "rrelu eval", "embedding_bag offsets max", "embedding_bag per_sample_weights", "unfold", "fold",
        "max_unpool2d", "affine_grid align_corners=False", "grid_sample bilinear zeros align_corners=False",
        "grid_sample bilinear border align_corners=True", "grid_sample bilinear reflection align_corners=False",
        "grid_sample bilinear reflection align_corners=True" }
      local by = {}
      for _, c in ipairs(FIX.cases) do by[c.name] = c end
      for _, name in ipairs(pick) do
        local c = by[name]
        local env, f = setup(c, dev)
        local diff = {}
        for k in pairs(c.grads) do diff[#diff + 1] = k end
        table.sort(diff)
        local inputs = {}
        for n, k in ipairs(diff) do inputs[n] = env[k]:detach() end
        local fn = function(...)
          local args = table.pack(...)
          for n, k in ipairs(diff) do env[k] = args[n] end
          return f()
        end
        assert.is_true(gpu.autograd.gradcheck(fn, inputs), name)
      end
    end)
  end)
end

describe("torch layers (more)", function()
  it("RReLU draws its slopes in [lower, upper] in training, the mean in eval", function()
    gpu.random.seed(3)
    local x = -gpu.ones(20000, { dtype = "float64" })
    local m = nn.RReLU(0.1, 0.3)
    local y = m(x)
    assert.is_true(y:max():item() <= -0.1 and y:min():item() >= -0.3)
    assert.near(-0.2, y:mean():item(), 0.005)
    assert.near(0.2 / math.sqrt(12), y:std():item(), 0.005)
    m:eval()
    assert.near(-0.2, m(x):max():item(), 1e-15)
    assert.equal(2, m(gpu.array({ 2.0 })):item())
    assert.near(-0.2, F.rrelu(gpu.array({ -1.0 }), { lower = 0.1, upper = 0.3, training = false }):item(), 1e-7)
    local d = F.rrelu(x, { training = true })
    assert.is_true(d:max():item() <= -1 / 8 + 1e-7 and d:min():item() >= -1 / 3 - 1e-7)
    assert.matches("RReLU%(lower=0.1, upper=0.3%)", tostring(m))
  end)

  it("EmbeddingBag draws N(0, 1) with the padding row zero, and forwards as embedding_bag", function()
    gpu.random.seed(4)
    local m = nn.EmbeddingBag(500, 40, { mode = "sum", padding_idx = -1, dtype = "float64" })
    assert.same({ 500, 40 }, m.weight.shape)
    assert.equal(500, m.padding_idx)
    assert.equal(0, m.weight[500]:abs():sum():item())
    assert.near(1, m.weight[{ { 1, 499 } }]:std():item(), 0.03)
    local i = gpu.array({ 3, 500, 7, 2 }, { dtype = "int64" })
    local o = gpu.array({ 1, 3 }, { dtype = "int64" })
    local p = gpu.array({ 0.5, 2, -1, 3 }, { dtype = "float64" })
    local y = m(i, o, p)
    h.assert_close(m.weight[3] * 0.5, y[1], 1e-12)
    h.assert_close(-m.weight[7] + 3 * m.weight[2], y[2], 1e-12)
    y:sum():backward()
    assert.equal(0, m.weight.grad[500]:abs():sum():item())
    local two = nn.EmbeddingBag(10, 3, { mode = "max" })(gpu.array({ { 1, 2 }, { 3, 3 } }, { dtype = "int64" }))
    assert.same({ 2, 3 }, two.shape)
    assert.equal("float32", two.dtype)
  end)

  it("Unfold and Fold are adjoint; fold(unfold(x)) counts each pixel's windows", function()
    local x = gpu.random.randn(1, 2, 5, 5, { dtype = "float64" })
    local u = nn.Unfold(3, 1, 1, 1)(x)
    assert.same({ 1, 18, 25 }, u.shape)
    local back = nn.Fold({ 5, 5 }, 3, 1, 1, 1)(u)
    local count = F.fold(F.unfold(gpu.ones(1, 2, 5, 5, { dtype = "float64" }), 3, { padding = 1 }), 5, 3, { padding = 1 })
    h.assert_close(x * count, back, 1e-12)
    assert.equal(9, count[{ 1, 1, 3, 3 }])
    assert.equal(4, count[{ 1, 1, 1, 1 }])
  end)

  it("MaxUnpool2d inverts MaxPool2d{return_indices = true} where the maxima were", function()
    local x = gpu.random.randn(2, 3, 6, 8)
    local y, idx = nn.MaxPool2d(2, { return_indices = true })(x)
    local up = nn.MaxUnpool2d(2)(y, idx)
    assert.same(x.shape, up.shape)
    h.assert_close(y, gpu.gather(up:reshape(2, 3, 48), 3, idx:reshape(2, 3, 12)):reshape(2, 3, 3, 4), 0)
    assert.equal(2 * 3 * 3 * 4, up:ne(0):sum():item())
    h.assert_close(up[1], F.max_unpool2d(y[1], idx[1], 2), 0)
  end)

  it("LazyLinear and LazyConv2d make their parameters at the first call, PyTorch's way", function()
    gpu.random.seed(5)
    local lin = nn.LazyLinear(300, { dtype = "float64" })
    assert.matches("LazyLinear%(<not yet called>%)", tostring(lin))
    local model = nn.Sequential(lin, nn.ReLU())
    local ok, err = pcall(function() return gpu.optim.SGD(model:parameters(), { lr = 0.1 }) end)
    assert.is_false(ok)
    assert.matches("nn.LazyLinear (1): its parameters are made at its first call", err, 1, true)
    assert.matches("run a forward pass (a dummy batch) first, before building an optimizer", err, 1, true)
    local y = model(gpu.ones(2, 400, { dtype = "float64" }))
    assert.same({ 2, 300 }, y.shape)
    assert.same({ 300, 400 }, lin.weight.shape)
    assert.same({ 300 }, lin.bias.shape)
    assert.equal(400, lin.in_features)
    assert.equal("float64", lin.weight.dtype)
    local bound = 1 / math.sqrt(400)
    assert.is_true(lin.weight:abs():max():item() <= bound)
    assert.near(bound / math.sqrt(3), lin.weight:std():item(), bound * 0.02)
    assert.equal(2, #model:parameters())
    h.assert_close(F.linear(gpu.ones(2, 400, { dtype = "float64" }), lin.weight, lin.bias):relu(), y, 1e-12)
    assert.matches("Linear%(400, 300%)", tostring(lin))
    local opt = gpu.optim.SGD(model:parameters(), { lr = 0.1 })
    model(gpu.ones(2, 400, { dtype = "float64" })):sum():backward()
    opt:step()

    local fresh = nn.Sequential(nn.LazyLinear(300, { dtype = "float64" }), nn.ReLU())
    local bad = { ["1.weight"] = gpu.ones(300, 400, { dtype = "float64" }) }
    assert.has_error(function() fresh:load_state_dict(bad) end, "Module:load_state_dict: missing: 1.bias")
    assert.matches("<not yet called>", tostring(fresh[1]))
    fresh:load_state_dict(model:state_dict())
    y = model(gpu.ones(2, 400, { dtype = "float64" }))
    h.assert_close(y, fresh(gpu.ones(2, 400, { dtype = "float64" })), 0)
    local path = os.tmpname()
    model:save(path)
    local back = nn.load_model(path)
    os.remove(path)
    h.assert_close(y, back(gpu.ones(2, 400, { dtype = "float64" })), 0)

    local conv = nn.LazyConv2d(4, 3, { padding = 1, bias = false })
    local out = conv(gpu.ones(2, 5, 6, 6))
    assert.same({ 2, 4, 6, 6 }, out.shape)
    assert.same({ 4, 5, 3, 3 }, conv.weight.shape)
    assert.is_nil(conv.bias)
    assert.equal(5, conv.in_channels)
    assert.is_true(conv.weight:abs():max():item() <= 1 / math.sqrt(45))
    h.assert_close(F.conv2d(gpu.ones(2, 5, 6, 6), conv.weight, nil, { padding = 1 }), out, 1e-6)
    local ok2, err2 = pcall(function() return conv(gpu.ones(2, 6, 6, 6)) end)
    assert.is_false(ok2)
    assert.matches("expected 5", err2)
    local g = nn.LazyConv2d(4, 3, { groups = 2 })
    g:load_state_dict({ weight = gpu.ones(4, 3, 3, 3), bias = gpu.zeros(4) })
    assert.equal(6, g.in_channels)
  end)

  it("trunc_normal_ draws a truncated normal (moments of SciPy's truncnorm, as torch's draws)", function()
    gpu.random.seed(6)
    for _, c in ipairs(FIX.trunc_normal) do
      local t = gpu.empty({ 200000 }, { dtype = "float64" })
      assert.equal(t, nn.init.trunc_normal_(t, { mean = c.mean, std = c.std, a = c.a, b = c.b }))
      assert.is_true(t:min():item() >= c.a and t:max():item() <= c.b)
      local se = c.want_std / math.sqrt(200000)
      assert.near(c.want_mean, t:mean():item(), 5 * se)
      assert.near(c.want_std, t:std():item(), 5 * se)
      assert.near(c.want_mean, c.torch_mean, 5 * se)
    end
    local w = nn.init.trunc_normal_(gpu.empty({ 1000 }), 0, 0.02, -0.04, 0.04)
    assert.equal("float32", w.dtype)
    assert.is_true(w:abs():max():item() <= 0.04)
    local d = nn.init.trunc_normal_(gpu.empty({ 100000 }, { dtype = "float64" }))
    assert.is_true(d:abs():max():item() <= 2)
  end)

  it("weight_norm keeps weight = g v / ||v|| through training; remove_weight_norm folds it back", function()
    gpu.random.seed(7)
    local m = nn.Linear(3, 4, { dtype = "float64" })
    local w0 = m.weight:clone()
    nn.utils.weight_norm(m)
    assert.is_nil(m._params.weight)
    assert.same({ 4, 1 }, m.weight_g.shape)
    assert.same({ 4, 3 }, m.weight_v.shape)
    h.assert_close(w0, m.weight, 1e-12)
    local names = {}
    for _, e in ipairs(m:named_parameters()) do names[#names + 1] = e[1] end
    table.sort(names)
    assert.same({ "bias", "weight_g", "weight_v" }, names)
    local opt = gpu.optim.SGD(m:parameters(), { lr = 0.5 })
    local x = gpu.random.randn(5, 3, { dtype = "float64" })
    m(x):square():sum():backward()
    opt:step()
    m(x)
    local v = m.weight_v
    h.assert_close(v * m.weight_g / v:square():sum(2, { keepdims = true }):sqrt(), m.weight, 1e-12)
    local w1 = m.weight:clone()
    nn.utils.remove_weight_norm(m)
    assert.is_nil(m.weight_g)
    h.assert_close(w1, m.weight, 1e-12)
    assert.equal(2, #m:parameters())
    local c = nn.utils.weight_norm(nn.Conv2d(2, 3, 2), { dim = 2 })
    assert.same({ 1, 2, 1, 1 }, c.weight_g.shape)
    local all = nn.utils.weight_norm(nn.Linear(2, 2), { dim = false })
    assert.equal(0, all.weight_g.ndim)
  end)

  it("spectral_norm brings the largest singular value to 1; eval keeps u and v; remove folds it back", function()
    gpu.random.seed(8)
    local m = nn.utils.spectral_norm(nn.Linear(6, 5, { dtype = "float64" }), { n_power_iterations = 30 })
    assert.is_nil(m._params.weight)
    assert.same({ 5 }, m.weight_u.shape)
    assert.same({ 6 }, m.weight_v.shape)
    local names = {}
    for _, e in ipairs(m:named_parameters()) do names[#names + 1] = e[1] end
    table.sort(names)
    assert.same({ "bias", "weight_orig" }, names)
    local x = gpu.random.randn(2, 6, { dtype = "float64" })
    m(x)
    local s = gpu.linalg.svd(m.weight, { compute_uv = false })
    assert.near(1, s:max():item(), 1e-8)
    m:eval()
    local u = m.weight_u:clone()
    m(x)
    h.assert_close(u, m.weight_u, 0)
    local w = m.weight:clone()
    nn.utils.remove_spectral_norm(m)
    h.assert_close(w, m.weight, 1e-12)
    assert.is_nil(m.weight_u)
    assert.equal(0, #m:named_buffers())
    local t = nn.utils.spectral_norm(nn.ConvTranspose2d(3, 2, 2))
    assert.same({ 2 }, t.weight_u.shape)
    assert.same({ 12 }, t.weight_v.shape)
  end)

  it("refuse misuse by name", function()
    local i64 = function(t) return gpu.array(t, { dtype = "int64" }) end
    local cases = {
      { function() return F.rrelu(gpu.ones(2), { lower = 0.5, upper = 0.1 }) end, "nn.rrelu: lower (0.5) must not exceed upper (0.1)" },
      { function() return nn.RReLU(0.5, 0.1) end, "nn.RReLU" },
      { function() return F.rrelu(gpu.ones(2), { slope = 1 }) end, "nn.rrelu" },
      { function() return F.rrelu(i64({ 1 })) end, "nn.rrelu" },
      { function() return F.rrelu(gpu.ones(2), nil, 3) end, "nn.rrelu" },
      { function() return F.embedding_bag(i64({ 1, 2 }), gpu.ones(3, 2)) end, "nn.embedding_bag: a 1-D input needs offsets" },
      { function() return F.embedding_bag(i64({ 1, 2 }), gpu.ones(3, 2), { offsets = i64({ 2 }) }) end, "offsets must start at 1" },
      { function() return F.embedding_bag(i64({ 1, 2 }), gpu.ones(3, 2), { offsets = i64({ 1, 4 }) }) end, "non-decreasing positions in 1..3" },
      { function() return F.embedding_bag(i64({ { 1, 4 } }), gpu.ones(3, 2)) end, "nn.embedding_bag" },
      { function() return F.embedding_bag(i64({ { 1, 2 } }), gpu.ones(3, 2), { mode = "mean", per_sample_weights = gpu.ones(1, 2) }) end,
        "per_sample_weights go with mode 'sum' only" },
      { function() return F.embedding_bag(i64({ { 1, 2 } }), gpu.ones(3, 2), { mode = "prod" }) end, "nn.embedding_bag" },
      { function() return F.embedding_bag(i64({ { 1, 2 } }), gpu.ones(3, 2), { offsets = i64({ 1 }) }) end, "offsets go with a 1-D input" },
      { function() return F.embedding_bag(gpu.ones(1, 2), gpu.ones(3, 2)) end, "input must be an integer array" },
      { function() return nn.EmbeddingBag(3, 2, { padding_idx = 4 }) end, "option 'padding_idx' must be in 1..3" },
      { function() return nn.EmbeddingBag(3, 2, { sparse = true }) end, "nn.EmbeddingBag" },
      { function() return nn.EmbeddingBag(0, 2) end, "nn.EmbeddingBag" },
      { function() return F.unfold(gpu.ones(1, 1, 2, 2), 3) end, "nn.unfold: the plane 2x2 (padded 2x2) is smaller than the kernel 3x3" },
      { function() return F.unfold(gpu.ones(2, 2), 1) end, "nn.unfold: expected (N, C, H, W) or (C, H, W)" },
      { function() return F.unfold(gpu.ones(1, 1, 4, 4), 2, { strides = 1 }) end, "nn.unfold" },
      { function() return F.fold(gpu.ones(1, 5, 9), { 4, 4 }, 2) end, "nn.fold: 5 rows are not a multiple of the kernel's 4 positions" },
      { function() return F.fold(gpu.ones(1, 4, 8), { 4, 4 }, 2) end, "nn.fold: expected 9 blocks (3x3) for the output 4x4, got 8" },
      { function() return nn.Unfold() end, "nn.Unfold: kernel_size is required" },
      { function() return nn.Fold{ kernel_size = 2 } end, "nn.Fold: output_size is required" },
      { function() return nn.Unfold{ kernel_size = 2, bogus = 1 } end, "nn.Unfold" },
      { function() return F.max_unpool2d(gpu.ones(1, 1, 2, 2), i64({ { { { 1, 2 }, { 3, 17 } } } }), 2) end,
        "nn.max_unpool2d: indices must be positions in 1..16 (the 4x4 output plane), got 1..17" },
      { function() return F.max_unpool2d(gpu.ones(1, 1, 2, 2), i64({ { { { 1, 2 }, { 3, 4 } } } }), 2, { output_size = { 6, 4 } }) end,
        "each must be between 2 and 6" },
      { function() return F.max_unpool2d(gpu.ones(1, 1, 2, 2), gpu.ones(1, 1, 2, 2), 2) end, "indices must be an integer array" },
      { function() return F.max_unpool2d(gpu.ones(1, 1, 2, 2), i64({ 1 }), 2) end, "indices must have the input's shape" },
      { function() return nn.MaxUnpool2d(2, { dilation = 2 }) end, "nn.MaxUnpool2d" },
      { function() return nn.LazyLinear(0) end, "nn.LazyLinear" },
      { function() return nn.LazyLinear(2, { bogus = 1 }) end, "nn.LazyLinear" },
      { function() return nn.LazyConv2d(2, 3)(gpu.ones(3, 4, 4)) end, "nn.LazyConv2d: expected (N, C, H, W)" },
      { function() return nn.LazyConv2d(2, 3, { padding_mode = "reflect" }) end, "nn.LazyConv2d" },
      { function() return F.affine_grid(gpu.zeros(1, 2, 3), { 2, 1, 3, 3 }) end, "nn.affine_grid: theta must be (2, 2, 3)" },
      { function() return F.affine_grid(gpu.zeros(1, 2, 3), { 1, 1, 3 }) end, "size {N, C, H, W} expected" },
      { function() return F.affine_grid(gpu.zeros(1, 2, 3), { 1, 1, 3, 3 }, { align = true }) end, "nn.affine_grid" },
      { function() return F.grid_sample(gpu.ones(1, 1, 2, 2), gpu.zeros(1, 2, 2, 3)) end, "nn.grid_sample: grid must be (1, Ho, Wo, 2)" },
      { function() return F.grid_sample(gpu.ones(1, 1, 2, 2), gpu.zeros(1, 2, 2, 2), { mode = "bicubic" }) end, "nn.grid_sample" },
      { function() return F.grid_sample(gpu.ones(1, 1, 2, 2), gpu.zeros(1, 2, 2, 2, { dtype = "float64" })) end, "one dtype" },
      { function() return F.grid_sample(gpu.ones(1, 1, 2, 2), gpu.zeros(1, 2, 2, 2), nil, 1) end, "nn.grid_sample" },
      { function() return nn.init.trunc_normal_(gpu.empty({ 2 }), { a = 1, b = -1 }) end, "bad argument #2 to 'nn.init.trunc_normal_' (a (1) must be below b (-1))" },
      { function() return nn.init.trunc_normal_(gpu.empty({ 2 }), { std = 0 }) end, "nn.init.trunc_normal_" },
      { function() return nn.init.trunc_normal_(gpu.empty({ 2 }, { dtype = "int32" })) end, "nn.init.trunc_normal_" },
      { function() return nn.utils.weight_norm(nn.ReLU()) end, "the module has no parameter 'weight'" },
      { function() return nn.utils.weight_norm(nn.Linear(2, 2), { dim = 3 }) end, "option 'dim' (3) is out of range" },
      { function() return nn.utils.weight_norm(nn.utils.weight_norm(nn.Linear(2, 2))) end, "'weight' already has weight norm" },
      { function() return nn.utils.weight_norm(gpu.ones(2)) end, "bad argument #1 to 'nn.utils.weight_norm' (a module expected, got gpu.array)" },
      { function() return nn.utils.remove_weight_norm(nn.Linear(2, 2)) end, "'weight' has no weight norm" },
      { function() return nn.utils.spectral_norm(nn.Linear(2, 2), { n_power_iterations = -1 }) end, "nn.utils.spectral_norm" },
      { function() return nn.utils.spectral_norm(nn.Linear(2, 2), { dim = 3 }) end, "option 'dim' (3) is out of range" },
      { function() return nn.utils.spectral_norm(nn.utils.spectral_norm(nn.Linear(2, 2))) end, "'weight' already has spectral norm" },
      { function() return nn.utils.spectral_norm(nn.ReLU()) end, "the module has no parameter 'weight'" },
      { function() return nn.utils.remove_spectral_norm(nn.Linear(2, 2)) end, "'weight' has no spectral norm" },
      { function() return nn.utils.spectral_norm(nn.Linear(2, 2), nil, 1) end, "nn.utils.spectral_norm" },
    }
    for n, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert(not ok, ("case %d (%s) did not fail"):format(n, c[2]))
      assert(tostring(err):find(c[2], 1, true), ("case %d: %q does not hold %q"):format(n, tostring(err), c[2]))
    end
  end)
end)
