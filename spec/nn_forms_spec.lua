-- spec/nn_forms_spec.lua — the call forms Keras and PyTorch users write (positional
-- activation, compile and learning rate; parameter lists from parameters() and
-- named_parameters(); loaders iterated directly), methods called with '.', and the
-- configuring calls (compile, load_state_dict, optimizer state, to) that either succeed
-- or leave the object exactly as it was.
local h = require "spec.helper"
local gpu = h.gpu
local nn, optim, data = gpu.nn, gpu.optim, gpu.data

local I64 = { dtype = "int64" }
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(e)
end
local function has(s, want) assert.is_truthy(s:find(want, 1, true), ("%q not in %q"):format(want, s)) end

-- A 2-class problem a small model learns in a few epochs.
local function problem()
  gpu.random.seed(11)
  local x = gpu.random.normal(0, 1, { 64, 2 })
  local y = (x[{ ":", 1 }] + x[{ ":", 2 }]):gt(0):astype("int64") + 1
  return x, y
end

describe("Keras's forms", function()
  it("Dense(units, activation [, opts]) takes the activation positionally", function()
    local d = nn.Dense(4, "relu")
    assert.equal("relu", d.activation_name)
    local d2 = nn.Dense(3, "softmax", { input_shape = { 2 } })
    assert.same({ 2, 3 }, d2.kernel.shape)
    h.assert_close(d2(gpu.ones(5, 2)):sum(2), gpu.ones(5), 1e-6)
    local d3 = nn.Dense(2, function(x) return x * 0 end, { input_shape = 2 })
    h.assert_close(d3(gpu.ones(1, 2)), { { 0, 0 } })
    has(err_of(nn.Dense, 4, "relu", { activation = "tanh" }), "activation given twice")
    has(err_of(nn.Dense, 4, "rleu"), "did you mean 'relu'?")
    assert.same({ 3, 2 }, nn.Dense(2, { input_dim = 3 }).kernel.shape)
    h.assert_close(nn.Dense(2, { input_shape = { 3 }, bias_initializer = "ones" }).bias, { 1, 1 })
  end)

  it("compile(optimizer, loss, metrics) is compile{optimizer =, loss =, metrics =}", function()
    local x, y = problem()
    local m = nn.Sequential { nn.Dense(8, "relu", { input_shape = { 2 } }), nn.Dense(2, "softmax") }
    m:compile("adam", "sparse_categorical_crossentropy", { "accuracy" })
    local hist = m:fit(x, y, { epochs = 2, verbose = 0 })
    assert.equal(2, #hist.accuracy)
    m:compile(optim.SGD(m, 0.1), "sparse_categorical_crossentropy")
    assert.is_nil(m:fit(x, y, { verbose = 0 }).accuracy)
    has(err_of(m.compile, m, "adam", 5), "bad argument #2 to 'Module:compile' (loss must be a string or a callable")
    has(err_of(m.compile, m, {}, "mse"), "compile{optimizer =, loss =, metrics =} or compile(optimizer, loss, metrics)")
  end)
end)

describe("PyTorch's forms", function()
  it("Opt(params, lr [, opts]): the learning rate positionally", function()
    local m = nn.Linear(2, 2)
    assert.equal(1e-3, optim.Adam(m:parameters(), 1e-3).lr)
    local o = optim.SGD(m:parameters(), 0.5, { momentum = 0.9 })
    assert.equal(0.5, o.lr); assert.equal(0.9, o.momentum)
    has(err_of(optim.Adam, m:parameters(), 1e-3, { lr = 1e-2 }), "lr given twice")
    has(err_of(optim.Adam, m:parameters(), -1), "bad argument #2 to 'optim.Adam' (lr must be >= 0, got integer -1)")
  end)

  it("parameters as a list, a module, named_parameters() pairs or its iterator object", function()
    local m = nn.Sequential { nn.Linear(2, 3), nn.Linear(3, 1) }
    local want = m:parameters()
    local named = {}
    for _, e in ipairs(m:named_parameters()) do named[#named + 1] = e end
    for _, params in ipairs { want, m, m:named_parameters(), named } do
      local o = optim.AdamW(params)
      assert.equal(#want, #o.params)
      for i, p in ipairs(want) do assert.equal(p, o.params[i]) end
    end
    has(err_of(optim.SGD, { want[1], want[1] }), "parameter #2 appears twice in the list")
    assert.equal(0.1, optim.SGD({ { params = want, lr = 0.1 } }).param_groups[1].lr)     -- a parameter group
    has(err_of(optim.SGD, m:state_dict()), "the optimizer was given no parameters (a table with no list part")
  end)

  it("schedules take their first hyper-parameter positionally", function()
    local o = optim.SGD({ gpu.ones(1):requires_grad() }, 1)
    local s = optim.StepLR(o, 2, { gamma = 0.5 })
    s:step(); s:step()
    assert.equal(0.5, o.lr)
    local c = optim.CosineAnnealingLR(optim.SGD({ gpu.ones(1):requires_grad() }, 1), 2)
    c:step(); c:step()
    assert.is_true(math.abs(c:get_last_lr()) < 1e-12)
    has(err_of(optim.StepLR, o, 2, { step_size = 3 }), "step_size given twice")
  end)

  it("Embedding{padding_idx}: the padding row starts at zero and gets no gradient", function()
    local e = nn.Embedding(4, 3, { padding_idx = 2, dtype = "float64" })
    h.assert_close(e.weight[2], { 0, 0, 0 })
    local idx = gpu.array({ 1, 2, 2, 4 }, I64)
    e(idx):sum():backward()
    h.assert_close(e.weight.grad, { { 1, 1, 1 }, { 0, 0, 0 }, { 0, 0, 0 }, { 1, 1, 1 } })
    assert.equal(4, nn.Embedding(4, 3, { padding_idx = -1 }).padding_idx)
    has(err_of(nn.Embedding, 4, 3, { padding_idx = 5 }), "option 'padding_idx' must be in 1..4")
  end)

  it("Linear(in, out, bias) takes bias positionally; NLLLoss is log_softmax's partner", function()
    assert.is_nil(nn.Linear(2, 3, false).bias)
    local z = gpu.array({ { 1, 2, 3 }, { 1, 1, 1 } }, { dtype = "float64" })
    local y = gpu.array({ 3, 1 }, I64)
    h.assert_close(nn.NLLLoss()(nn.log_softmax(z), y), nn.cross_entropy(z, y), 1e-12)
  end)
end)

describe("loaders iterated directly", function()
  local x = gpu.arange(1, 11):reshape(10, 1)
  local y = gpu.arange(1, 11)
  local function epoch_of(iter)
    local seen = {}
    for xb, yb in iter do
      h.assert_close(xb:reshape(xb.shape[1]), yb)
      for _, v in ipairs(yb:totable()) do seen[#seen + 1] = v end
    end
    return seen
  end

  it("for xb, yb in loader do: one epoch per loop, each covering every sample, reshuffled", function()
    gpu.random.seed(2)
    local loader = data.DataLoader(x, y, { batch_size = 4, shuffle = true })
    local a, b = epoch_of(loader), epoch_of(loader)
    assert.are_not.same(a, b)
    table.sort(a); table.sort(b)
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, a)
    assert.same(a, b)
    local plain = data.DataLoader(x, y, { batch_size = 3 })
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, epoch_of(plain))
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, epoch_of(plain()))           -- loader(): still an iterator
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, epoch_of(plain:iter()))
  end)

  it("a loop left with break, and loops nested over one loader, each go on with their own epoch", function()
    local loader = data.DataLoader(x, y, { batch_size = 5 })
    for _ in loader do break end
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, epoch_of(loader))
    local pairs_seen = 0
    for xb in loader do
      for xb2 in loader do pairs_seen = pairs_seen + xb.shape[1] * xb2.shape[1] end
    end
    assert.equal(100, pairs_seen)
    has(err_of(loader, nil, gpu.ones(1)), "no epoch in progress gave that batch")
  end)
end)

describe("methods called with '.'", function()
  it("say how to call them", function()
    local m = nn.Sequential { nn.Linear(2, 2) }
    local o = optim.SGD(m)
    local cases = {
      { m.parameters, "Module:parameters: use model:parameters() (a method: call it with ':')" },
      { m.fit, "Module:fit: use model:fit()" },
      { m.layers[1].forward, "Linear:forward: use model:forward()" },
      { o.step, "Optimizer:step: use opt:step()" },
      { optim.StepLR(o, 1).step, "StepLR:step: use scheduler:step()" },
      { optim.GradScaler().update, "GradScaler:update: use scaler:update()" },
      { data.DataLoader(gpu.ones(2, 1)).iter, "DataLoader:iter: use loader:iter()" },
    }
    for _, c in ipairs(cases) do has(err_of(c[1]), c[2]) end
    has(err_of(m.fit, gpu.ones(2, 2), gpu.ones(2, 2)), "Module:fit: use model:fit()")      -- self is an array
  end)
end)

describe("configuring calls either succeed or change nothing", function()
  it("a failed compile keeps the previous configuration: fit runs with it, metrics intact", function()
    local x, y = problem()
    local m = nn.Sequential { nn.Dense(4, "relu", { input_shape = { 2 } }), nn.Dense(2, "softmax") }
    m:compile { optimizer = "adam", loss = "sparse_categorical_crossentropy", metrics = { "accuracy" } }
    has(err_of(m.compile, m, { optimizer = "adamm" }), "unknown optimizer 'adamm'; did you mean 'adam'?")
    has(err_of(m.compile, m, { optimizer = "sgd", metrics = { "acuracy" } }), "unknown metric 'acuracy'; did you mean 'accuracy'?")
    has(err_of(m.compile, m, { loss = "sparse_categorical_crossentropyy" }), "did you mean 'sparse_categorical_crossentropy'?")
    has(err_of(m.compile, m, { optimizer = {} }), "option 'optimizer' must be a name or an optimizer")
    local hist = m:fit(x, y, { verbose = 0 })
    assert.equal(1, #hist.accuracy)
    assert.equal("Adam", getmetatable(m._keras.optimizer).__name)
  end)

  it("a failed load_state_dict writes nothing, also when a later value cannot be converted", function()
    local m = nn.Sequential { nn.Linear(2, 2), nn.BatchNorm1d(2) }
    local before = {}
    for k, v in pairs(m:state_dict()) do before[k] = v:copy() end
    local sd = {}
    for k, v in pairs(m:state_dict()) do sd[k] = gpu.full(v.shape, 7) end
    sd["2.running_var"] = gpu.ones(3)
    has(err_of(m.load_state_dict, m, sd), "mis-shaped: 2.running_var (expected (2), got (3))")
    sd["2.running_var"] = gpu.full({ 2 }, 7)
    -- a conversion failing after others succeeded (on a GPU: out of memory) writes nothing
    local astype, calls = gpu.methods.astype, 0
    gpu.methods.astype = function(...)
      calls = calls + 1
      if calls == 3 then error("simulated failure", 0) end
      return astype(...)
    end
    local e = err_of(m.load_state_dict, m, sd)
    gpu.methods.astype = astype
    has(e, "Module:load_state_dict: simulated failure")
    for k, v in pairs(m:state_dict()) do h.assert_close(v, before[k]) end
    has(err_of(m.load_state_dict, m, sd, { strict = "yes" }), "option 'strict' must be a boolean")
    for k, v in pairs(m:state_dict()) do h.assert_close(v, before[k]) end
    m:load_state_dict(sd)
    h.assert_close(m.layers[2].running_var, { 7, 7 })
  end)

  it("a failed optimizer load_state_dict keeps its hyper-parameters, step count and state", function()
    local p = gpu.ones(2, { dtype = "float64" }):requires_grad()
    local o = optim.Adam({ p }, 0.1)
    p:sum():backward(); o:step()
    local sd = o:state_dict()
    local bad = { step = 5, param_groups = { { lr = 0.5, betas = { 2, 0.9 } } }, state = sd.state }
    has(err_of(o.load_state_dict, o, bad), "'Adam:load_state_dict' (option 'betas' must be a table of two numbers")
    bad = { step = 5, param_groups = { { lr = 0.5 } }, state = { { step = 1, exp_avg = gpu.ones(3) } } }
    has(err_of(o.load_state_dict, o, bad), "exp_avg of parameter #1 has shape (3), the parameter (2)")
    bad = { step = 5, param_groups = { { lr = 0.5 } }, state = { [3] = {} } }
    has(err_of(o.load_state_dict, o, bad), "state for parameter #3, which does not exist")
    assert.equal(0.1, o.lr); assert.equal(1, o.step_count)
    assert.equal(sd.state[1].exp_avg, o.state[1].exp_avg)
    local s = optim.GradScaler()
    has(err_of(s.load_state_dict, s, { scale = 8, growth_interval = 0 }), "growth_interval must be >= 1")
    assert.equal(2.0 ^ 16, s:get_scale())
    s:load_state_dict { scale = 8, skipped = 2 }
    assert.equal(8, s:get_scale()); assert.equal(2, s.skipped)
  end)

  it("to(dtype), to(device, dtype), double(), half()... convert the floating parameters and buffers, ties kept", function()
    local e, lin = nn.Embedding(5, 3), nn.Linear(3, 5, { bias = false })
    lin:register_parameter("weight", e.weight)
    local bn = nn.BatchNorm1d(3)
    local m = nn.Sequential { e, nn.Linear(3, 3), bn, lin }
    assert.equal(m, m:double())
    assert.equal("float64", e.weight.dtype)
    assert.equal("float64", bn.running_var.dtype)
    assert.is_true(rawequal(e.weight, lin.weight))
    assert.equal(1, #m:parameters() - 4)                 -- the tied weight counted once
    m:half()
    assert.equal("float16", m.layers[2].bias.dtype)
    m:bfloat16()
    assert.equal("bfloat16", m.layers[2].weight.dtype)
    m:to("cpu", "float32")
    assert.equal("float32", m.layers[2].weight.dtype)
    m:to { dtype = gpu.float64 }
    local y = m(gpu.array({ 1, 2 }, { dtype = "int64" }))
    assert.equal("float64", y.dtype)
    m:float()
    assert.equal("float32", lin.weight.dtype)
    assert.is_true(gpu.autograd.requires_grad(lin.weight))
  end)

  it("a failed to(device) leaves every parameter and buffer where it was", function()
    local m = nn.Sequential { nn.Linear(2, 2), nn.BatchNorm1d(2) }
    local w, rm = m.layers[1].weight, m.layers[2].running_mean
    has(err_of(m.to, m, "cuda:7"), "'Module:to' (device cuda:7 is not available")
    has(err_of(m.to, m, "tpu"), "'Module:to' (unknown device 'tpu'")
    has(err_of(m.to, m, "int32"), "'Module:to' (a floating-point dtype expected")
    has(err_of(m.to, m, "cpu", "bool"), "bad argument #2 to 'Module:to' (a floating-point dtype expected")
    has(err_of(m.to, m, { dtype = "float64", device = "tpu" }), "'Module:to'")
    assert.equal(w, m.layers[1].weight)
    assert.equal(rm, m.layers[2].running_mean)
    assert.equal("cpu", w.device)
    assert.equal(m, m:to("cpu"))
    assert.equal(w, m.layers[1].weight)
  end)
end)
