-- spec/more_layers_spec.lua — the layers and functional forms of lua/gpu/nn/more_layers.lua
-- against PyTorch (spec/fixtures/more_layers.lua, made by spec/fixtures/more_layers.py in
-- float64), their gradients by gradcheck, the random ones by their statistics, and misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local F = nn.functional
local CASES = dofile("spec/fixtures/more_layers.lua")

-- the module a case's call uses as m, made as PyTorch's was (weights loaded after)
local MAKE = {
  InstanceNorm2d = function(dev) return nn.InstanceNorm2d(3, { affine = true, track_running_stats = true, dtype = "float64", device = dev }) end,
  Bilinear = function(dev) return nn.Bilinear(3, 4, 2, { dtype = "float64", device = dev }) end,
  RNNCell = function(dev) return nn.RNNCell(3, 4, { dtype = "float64", device = dev }) end,
  GRUCell = function(dev) return nn.GRUCell(3, 4, { dtype = "float64", device = dev }) end,
  LSTMCell = function(dev) return nn.LSTMCell(3, 4, { dtype = "float64", device = dev }) end,
}

local function arr(t, dev) return gpu.array(t.values, { dtype = "float64", device = dev }):reshape(table.unpack(t.shape)) end

local function run(c, dev, inputs)
  local env = { F = F, nn = nn, x = inputs[1], y = inputs[2], z = inputs[3] }
  if MAKE[c.name] then
    local m = MAKE[c.name](dev)
    local sd = {}
    for k, w in pairs(c.weights) do sd[k] = arr(w, dev) end
    m:load_state_dict(sd, { strict = false })
    env.m = m
  end
  local f = assert(load("return " .. c.call, c.name, "t", env))
  return table.pack(f()), env.m
end

local function close(want, got, what)
  local g = got:to("cpu"):reshape(-1):totable()
  assert.same(want.shape, got.shape, what)
  for i, v in ipairs(want.values) do
    assert(math.abs(v - g[i]) <= 1e-12 * math.max(1, math.abs(v)), ("%s[%d]: %.17g, PyTorch %.17g"):format(what, i, g[i], v))
  end
end

for _, dev in ipairs(h.devices()) do
  describe("more layers on " .. dev, function()
    for _, c in ipairs(CASES) do
      it(c.name .. " gives PyTorch's result", function()
        local inputs = {}
        for i, t in ipairs(c.inputs) do inputs[i] = arr(t, dev) end
        if c.name == "embedding" then inputs[1] = inputs[1]:astype("int64") end
        local res, m = run(c, dev, inputs)
        close(c.outputs[1], res[1], c.name)
        if c.name == "LSTMCell" then close(c.outputs[2], res[2], "LSTMCell c") end
        if c.name == "InstanceNorm2d" then
          close(c.outputs[2], m.running_mean, "running_mean")
          close(c.outputs[3], m.running_var, "running_var")
        end
      end)
    end

    it("are differentiable (float64 gradcheck)", function()
      for _, c in ipairs(CASES) do
        if c.name ~= "embedding" and c.name ~= "InstanceNorm2d" then
          local inputs = {}
          for i, t in ipairs(c.inputs) do inputs[i] = arr(t, dev) end
          local fn = function(a)
            local ins = { a, inputs[2], inputs[3] }
            return (run(c, dev, ins))[1]
          end
          assert.is_true(gpu.autograd.gradcheck(fn, { inputs[1] }), c.name)
        end
      end
    end)
  end)
end

describe("more layers", function()
  it("drop whole channels, keep the mean, and pass through in eval", function()
    gpu.random.seed(1)
    local x = gpu.ones(40, 50, 6, 6)
    local y = F.dropout2d(x, 0.3)
    local per_channel = y:sum({ 3, 4 }):reshape(-1):totable()
    local zeros, kept = 0, 0
    for _, v in ipairs(per_channel) do
      if v == 0 then zeros = zeros + 1 else kept = kept + 1; assert.near(36 / 0.7, v, 1e-4) end
    end
    assert.near(0.3, zeros / #per_channel, 0.03)          -- 2000 channels: 3 standard errors ~ 0.03
    local d = nn.Dropout1d(0.5)
    d:eval()
    assert.equal(x, d(x))
    local a = nn.AlphaDropout(0.2)(gpu.random.randn(200000, { dtype = "float64" }))
    assert.near(0, a:mean():item(), 0.01)
    assert.near(1, a:std():item(), 0.01)
    local g = F.gumbel_softmax(gpu.zeros(1000, 4, { dtype = "float64" }), { hard = true })
    assert.same({ 1 }, g:sum(2):max({ 1 }):reshape(1):totable())
    local counts = g:sum(1):totable()
    for _, v in ipairs(counts) do assert.near(250, v, 50) end
  end)

  it("ParameterList and ParameterDict hold parameters under PyTorch's names", function()
    local pl = nn.ParameterList({ gpu.ones(2), gpu.zeros(3) })
    pl:append(gpu.ones(1))
    assert.equal(3, #pl)
    assert.equal(3, pl[2].shape[1])
    local sd = pl:state_dict()
    assert.is_not_nil(sd["0"]); assert.is_not_nil(sd["2"])
    local pd = nn.ParameterDict({ b = gpu.ones(2), a = gpu.zeros(1) })
    assert.same({ "a", "b" }, (function() local k = {} for n in pairs(pd:state_dict()) do k[#k + 1] = n end table.sort(k) return k end)())
    local outer = nn.Sequential(nn.Linear(2, 2))
    outer.extra = pl
    assert.equal(2 + 3, #outer:parameters())
  end)

  it("refuse misuse by name", function()
    local cases = {
      { function() return F.glu(gpu.ones(2, 3)) end, "nn.glu: dim 2 has 3 elements, an odd number" },
      { function() return F.softmin(gpu.ones(2), 3) end, "nn.softmin: dim 3 is out of range" },
      { function() return nn.Threshold(0.1)(gpu.ones(2)) end, "threshold and value are required" },
      { function() return nn.ReflectionPad1d(4)(gpu.ones(1, 1, 3)) end, "reflect padding (4, 4) must be smaller" },
      { function() return nn.ZeroPad2d({ 1, 2, 3 })(gpu.ones(1, 1, 2, 2)) end, "padding must have 4 entries, got 3" },
      { function() return F.pad(gpu.ones(2), { 1 }) end, "an even list" },
      { function() return nn.ChannelShuffle(4)(gpu.ones(1, 6, 2, 2)) end, "6 channels are not divisible by 4 groups" },
      { function() return nn.InstanceNorm2d(3)(gpu.ones(2, 4, 2, 2)) end, "expected 3 channels, got 4" },
      { function() return nn.InstanceNorm2d(3)(gpu.ones(2, 2)) end, "expected an input of 3 or 4 dimensions" },
      { function() return nn.Bilinear(2, 3, 4)(gpu.ones(5, 3), gpu.ones(5, 3)) end, "expected inputs (..., 2) and (..., 3)" },
      { function() return nn.LSTMCell(3, 4)(gpu.ones(2, 3), gpu.ones(2, 4)) end, "{h, c} expected" },
      { function() return nn.GRUCell(3, 4)(gpu.ones(2, 3), gpu.ones(3, 4)) end, "hx must be (2, 4), got (3, 4)" },
      { function() return nn.RNNCell(3, 4, { nonlinearity = "gelu" }) end, "nonlinearity" },
      { function() return F.embedding(gpu.array({ 0, 1 }), gpu.ones(3, 2)) end, "1-based" },
      { function() return F.dropout(gpu.ones(2), { p = 1.5 }) end, "p" },
      { function() return nn.ParameterList({ gpu.ones(2) })[5] end, "ParameterList: index 5 out of 1..1" },
      { function() return nn.ParameterDict({ [1] = gpu.ones(2) }) end, "names must be strings" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
    end
  end)
end)

describe("functional forms count their arguments", function()
  it("an extra argument is an error naming the function", function()
    h.fails({ "nn.glu", "at most 2 arguments" }, function() gpu.nn.functional.glu(gpu.ones(2, 4), 2, 3) end)
    h.fails({ "nn.softmin", "at most" }, function() gpu.nn.functional.softmin(gpu.ones(2, 4), 2, 3, 4) end)
  end)
end)
