-- spec/nn_errors_spec.lua — the Lua parts' errors: options checked (unknown keys with the
-- nearest known one, types, ranges, keys that are not supported), class labels checked
-- in one place, modules that would contain themselves refused, and no raw Lua error
-- ("attempt to index a nil value", "calling 'min' on bad self", "'for' step is zero")
-- escaping from inside lua/gpu for any argument.
local h = require "spec.helper"
local gpu = h.gpu
local nn, optim, data = gpu.nn, gpu.optim, gpu.data

-- The error f(...) raises (the spec fails when it raises none).
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(e)
end
-- Asserts f(...) raises an error containing each of the plain strings.
local function raises(f, args, ...)
  local e = err_of(f, table.unpack(args, 1, args.n or #args))
  for _, want in ipairs { ... } do assert.is_truthy(e:find(want, 1, true), ("%q not in %q"):format(want, e)) end
  return e
end
local I64 = { dtype = "int64" }
local function tiny_model()
  local m = nn.Sequential { nn.Linear(2, 2) }
  m:compile { optimizer = "sgd", loss = "mse" }
  return m
end

describe("options of the Lua parts", function()
  it("an unknown key names the function, the key and the nearest known key", function()
    local m = tiny_model()
    local x = gpu.ones(4, 2)
    local cases = {
      { nn.Dense, { 64, { activaton = "relu" } }, "bad argument #2 to 'nn.Dense' (unknown option 'activaton'; did you mean 'activation'?)" },
      { nn.Linear, { 2, 3, { bais = false } }, "bad argument #3 to 'nn.Linear' (unknown option 'bais'; did you mean 'bias'?)" },
      { nn.Conv2d, { 1, 2, 3, { strides = 2 } }, "'nn.Conv2d' (unknown option 'strides'; did you mean 'stride'?)" },
      { nn.BatchNorm2d, { 3, { momentun = 0.1 } }, "'nn.BatchNorm2d' (unknown option 'momentun'; did you mean 'momentum'?)" },
      { nn.Embedding, { 4, 2, { paddingidx = 1 } }, "'nn.Embedding' (unknown option 'paddingidx'; did you mean 'padding_idx'?)" },
      { nn.cross_entropy, { gpu.zeros(1, 2), gpu.ones({ 1 }, I64), { reducton = "sum" } },
        "unknown option 'reducton'; did you mean 'reduction'?" },
      { m.fit, { m, x, x, { epoch = 3 } }, "bad argument #3 to 'Module:fit' (unknown option 'epoch'; did you mean 'epochs'?)" },
      { m.fit, { m, x, x, { batchsize = 64 } }, "unknown option 'batchsize'; did you mean 'batch_size'?" },
      { m.predict, { m, x, { batch = 2 } }, "'Module:predict' (unknown option 'batch'" },
      { m.compile, { m, { optimiser = "adam" } }, "unknown option 'optimiser'; did you mean 'optimizer'?" },
      { optim.SGD, { m, { momentun = 0.9 } }, "'optim.SGD' (unknown option 'momentun'; did you mean 'momentum'?)" },
      { optim.Adam, { m, { beta = { 0.9, 0.99 } } }, "unknown option 'beta'; did you mean 'betas'?" },
      { data.DataLoader, { x, nil, { batchsize = 2 } }, "'data.DataLoader' (unknown option 'batchsize'; did you mean 'batch_size'?)" },
      { gpu.bench, { function() end, { warmups = 1 } }, "unknown option 'warmups'; did you mean 'warmup'?" },
    }
    for _, c in ipairs(cases) do raises(c[1], c[2], c[3]) end
  end)

  it("a wrong type or an out-of-range value names the option", function()
    local m = tiny_model()
    local x = gpu.ones(4, 2)
    local cases = {
      { nn.Linear, { 2, 3, { bias = "no" } }, "option 'bias' must be a boolean, got 'no'" },
      { nn.Linear, { 2, 3, { dtype = "int32" } }, "option 'dtype' must be a floating-point dtype" },
      { nn.Dense, { 4, { activation = "relux" } }, "got 'relux'; did you mean 'relu'?" },
      { optim.Adam, { m, { betas = { 1.5, 0.9 } } }, "option 'betas' must be a table of two numbers in [0, 1)" },
      { optim.Adam, { m, { betas = { 0.9 } } }, "option 'betas' must be a table of two numbers in [0, 1)" },
      { optim.Adam, { m, { eps = -1e-8 } }, "option 'eps' must be >= 0" },
      { optim.Adam, { m, { lr = 0 / 0 } }, "option 'lr' must not be NaN" },
      { optim.SGD, { m, { lr = -0.1 } }, "option 'lr' must be >= 0, got number -0.1" },
      { optim.SGD, { m, { weight_decay = -1 } }, "option 'weight_decay' must be >= 0" },
      { optim.RMSprop, { m, { momentum = -0.5 } }, "option 'momentum' must be >= 0" },
      { optim.SGD, { m, { nesterov = true } }, "nesterov momentum needs momentum > 0 and dampening = 0" },
      { m.fit, { m, x, x, { batch_size = 0 } }, "option 'batch_size' must be >= 1, got integer 0" },
      { m.fit, { m, x, x, { epochs = -1 } }, "option 'epochs' must be >= 0, got integer -1" },
      { m.fit, { m, x, x, { epochs = 1.5 } }, "option 'epochs' must be an integer, got number 1.5" },
      { m.fit, { m, x, x, { validation_split = 1 } }, "option 'validation_split' must be < 1" },
      { m.predict, { m, x, { batch_size = 0 } }, "'Module:predict' (option 'batch_size' must be >= 1, got integer 0)" },
      { m.evaluate, { m, x, x, { batch_size = 0 } }, "'Module:evaluate' (option 'batch_size' must be >= 1, got integer 0)" },
      { nn.Dropout, { 1.5 }, "option 'p' must be < 1, got number 1.5" },
      { nn.BatchNorm1d, { 2, { eps = -1 } }, "option 'eps' must be > 0" },
      { optim.GradScaler, { { growth_interval = 0 } }, "option 'growth_interval' must be >= 1" },
      { optim.StepLR, { optim.SGD(m), 0 }, "step_size must be >= 1, got integer 0" },
      { data.batches, { x, nil, 2, { device = "tpu" } }, "option 'device': unknown device 'tpu'" },
    }
    for _, c in ipairs(cases) do raises(c[1], c[2], c[3]) end
  end)

  it("an option PyTorch or Keras has but gpulua does not implement is an error, not ignored", function()
    local m = tiny_model()
    local x = gpu.ones(4, 2)
    raises(m.fit, { m, x, x, { callbacks = { 3 } } }, "callbacks[1] is integer 3, expected a callback")
    assert.equal(2, #data.DataLoader(x, nil, { batch_size = 2, num_workers = 0 }))
    raises(nn.Conv2d, { 1, 2, 3, { padding_mode = "reflect" } }, "option 'padding_mode' must be 'zeros'")
    raises(nn.Embedding, { 4, 2, { max_norm = 1 } }, "option 'max_norm' is not supported")
    raises(nn.BCELoss, { { weight = gpu.ones(3) } }, "option 'weight' is not supported")
    raises(nn.MaxPool2d, { 2, { ceil_mode = true } }, "option 'ceil_mode' is not supported")
    raises(m.load_state_dict, { m, m:state_dict(), { assign = true } }, "option 'assign' is not supported")
  end)

  it("every declaration of the Lua parts has an example that runs with {} and rejects an unknown key", function()
    -- every Lua part declares its options when it loads: load them all, so that what the
    -- specs before this one happened to load does not decide what is checked
    for name in pairs(package.preload) do
      if name:match("^gpu%.") then require(name) end
    end
    local n = 0
    local real_print, out = _G.print, io.output()
    local env = setmetatable({ gpu = gpu }, { __index = _G })     -- (stock lua5.4 has no global gpu)
    for name, d in pairs(gpu._options) do
      if d.lua then
        n = n + 1
        assert.is_string(d.example, name)
        _G.print = function() end
        io.output("/dev/null")
        local ok1, e1 = pcall(assert(load(d.example:format("{zz_unknown = 1}"), "=" .. name, "t", env)))
        local ok2, e2 = pcall(assert(load(d.example:format("{}"), "=" .. name, "t", env)))
        _G.print = real_print
        io.output(out)
        assert.is_false(ok1, name)
        assert.is_truthy(tostring(e1):find("unknown option 'zz_unknown'", 1, true), name .. ": " .. tostring(e1))
        assert.is_true(ok2, name .. ": " .. tostring(e2))
      end
    end
    assert.is_true(n >= 40, "only " .. n .. " Lua declarations")
  end)
end)

describe("class labels (one check for every label-taking function)", function()
  it("one_hot refuses 0, C + 1, -1 and 1.5 as the losses do", function()
    for _, bad in ipairs { { { 0 }, "found 0" }, { { 4 }, "found 4" }, { { -1 }, "found -1" } } do
      raises(nn.one_hot, { gpu.array(bad[1], I64), 3 }, "nn.one_hot: labels are 1-based (1..3); " .. bad[2])
      raises(nn.cross_entropy, { gpu.zeros(1, 3), gpu.array(bad[1], I64) }, "labels are 1-based (1..3); " .. bad[2])
    end
    raises(nn.one_hot, { gpu.array { 1.5 }, 3 }, "nn.one_hot: labels must be whole class numbers 1..3")
    raises(nn.cross_entropy, { gpu.zeros(1, 3), gpu.array { 1.5 } }, "labels must be whole class numbers 1..3")
    raises(nn.nll_loss, { gpu.zeros(1, 3), gpu.array({ 7 }, I64) }, "nn.nll_loss: labels are 1-based (1..3); found 7")
    raises(nn.one_hot, { gpu.array({ true }), 3 }, "labels must be an integer array, got bool")
    raises(nn.one_hot, { { 1, 2 }, 3 }, "bad argument #1 to 'nn.one_hot' (labels: a gpu.array of class numbers 1..3")
  end)

  it("one_hot takes labels of any shape, whole floats, and infers C from the largest label", function()
    h.assert_close(nn.one_hot(gpu.array { 1, 3 }, 3), { { 1, 0, 0 }, { 0, 0, 1 } })
    local t = nn.one_hot(gpu.array({ { 2 }, { 1 } }, { dtype = "int32" }))
    assert.same({ 2, 1, 2 }, t.shape)
    h.assert_close(t, { { { 0, 1 } }, { { 1, 0 } } })
    assert.same({ 0, 4 }, nn.one_hot(gpu.zeros({ 0 }, I64), 4).shape)
  end)

  it("Embedding's indices go through the same check", function()
    local e = nn.Embedding(5, 2)
    raises(e, { gpu.array({ 6 }, I64) }, "nn.Embedding: indices are 1-based (1..5); found 6")
    raises(e, { gpu.array { 1.0 } }, "nn.Embedding: indices must be an integer array, got float32")
    assert.same({ 0, 2 }, e(gpu.zeros({ 0 }, I64)).shape)           -- empty input: an empty result
    assert.same({ 2, 0, 2 }, e(gpu.zeros({ 2, 0 }, I64)).shape)
  end)
end)

describe("modules that would contain themselves", function()
  it("are refused by add and add_module, and nothing loops", function()
    local s = nn.Sequential { nn.Linear(2, 2) }
    raises(s.add, { s, s }, "Module:add_module: a module cannot contain itself")
    local outer = nn.Sequential { s }
    raises(s.add, { s, outer }, "cannot contain itself")
    raises(s.add_module, { s, "loop", outer }, "cannot contain itself")
    assert.equal(1, #s.layers)
    assert.equal(2, #s:parameters())
    assert.equal(3, #outer:modules())
    assert.matches("Total params: 6", outer:summary({ 2 }, { quiet = true }))
  end)

  it("a module shared by two parents counts once", function()
    local shared = nn.Linear(2, 2)
    local m = nn.Sequential { shared, nn.ReLU(), shared }
    assert.equal(2, #m:parameters())
    assert.equal(3, #m:modules())
    h.assert_close(m(gpu.ones(1, 2)), shared(shared(gpu.ones(1, 2)):relu()))
  end)
end)

describe("errors that used to surface as raw Lua messages", function()
  it("name the function and the fault", function()
    local m = tiny_model()
    local x = gpu.ones(4, 2)
    raises(nn.cross_entropy, { gpu.zeros(0, 3), gpu.zeros({ 0 }, I64) }, "nn.cross_entropy: the batch is empty (logits of shape (0, 3))")
    raises(nn.sparse_categorical_crossentropy, { gpu.zeros(0, 3), gpu.zeros({ 0 }, I64) }, "the batch is empty")
    raises(m.fit, { m, x, nil }, "bad argument #2 to 'Module:fit' (y: gpu.array expected, got nil)")
    raises(m.fit, { m, gpu.ones(0, 2), gpu.ones(0, 2) }, "Module:fit: x has no samples (shape (0, 2))")
    raises(m.fit, { m, x, gpu.ones(3, 2) }, "Module:fit: x has 4 samples but y has 3")
    raises(m.evaluate, { m, x }, "bad argument #2 to 'Module:evaluate' (y: gpu.array expected, got nil)")
    raises(m.predict, { m, 5 }, "bad argument #1 to 'Module:predict' (x: gpu.array expected, got integer 5)")
    local fresh = nn.Sequential { nn.Linear(2, 2) }
    raises(fresh.fit, { fresh, x, x }, "Module:fit: call compile")
    raises(nn.ReLU(), { 5 }, "bad argument #1 to 'nn.ReLU' (input: gpu.array expected, got integer 5)")
    raises(nn.softmax, { gpu.ones(3), 2 }, "bad argument #2 to 'nn.softmax' (axis 2 is out of range for an array of shape (3))")
    raises(m.load, { m, "/nonexistent/model.safetensors" }, "Module:load: gpu.load_safetensors:")
    local closed = gpu.ones(2, 2)
    closed:close()
    raises(m.load_state_dict, { m, { ["1.weight"] = closed, ["1.bias"] = gpu.ones(2) } }, "1.weight (not an open array: closed)")
    raises(nn.mse_loss, { closed, closed }, "bad argument #1 to 'nn.mse_loss' (input: the gpu.array is closed)")
  end)

  it("fit with epochs = 0 trains nothing and returns an empty history", function()
    local m = tiny_model()
    local w = m.layers[1].weight:copy()
    local hist = m:fit(gpu.ones(4, 2), gpu.ones(4, 2), { epochs = 0 })
    assert.same({}, hist.loss)
    h.assert_close(m.layers[1].weight, w)
  end)

  it("no argument makes a function of nn, optim or data raise a raw Lua error from inside lua/gpu", function()
    local closed = gpu.ones(2, 3)
    closed:close()
    local hostile = { n = 10, nil, 0, -1, 1.5, "x", {}, gpu.zeros(0), gpu.zeros(2, 3), closed, 0 / 0 }
    local raw = { "attempt to", "bad self", "'for' ", "table index is", "integer representation", "stack overflow" }
    local real_print = _G.print
    local function sweep(label, f)
      for i = 1, hostile.n do
        for j = 1, hostile.n do
          _G.print = function() end
          local ok, e = pcall(f, hostile[i], hostile[j])
          _G.print = real_print
          if not ok then
            e = tostring(e)
            for _, r in ipairs(raw) do assert.is_falsy(e:find(r, 1, true), label .. ": " .. e) end
            assert.is_falsy(e:find("^lua/gpu/"), label .. " raised inside the library: " .. e)
          end
        end
      end
    end
    for _, part in ipairs { { "nn", nn }, { "nn.init", nn.init }, { "optim", optim }, { "data", data } } do
      for k, v in pairs(part[2]) do
        local mt = type(v) == "table" and getmetatable(v)
        if (type(v) == "function" or (mt and mt.__call)) and k ~= "fashion_mnist" then sweep(part[1] .. "." .. k, v) end
      end
    end
    local m = tiny_model()
    for _, meth in ipairs { "fit", "evaluate", "predict", "compile", "summary", "load_state_dict", "to", "train",
                            "add_module", "register_parameter", "register_buffer", "apply" } do
      sweep("Module:" .. meth, function(a, b) return m[meth](m, a, b) end)
    end
    for _, layer in ipairs { nn.Linear(3, 2), nn.Dense(2), nn.Embedding(4, 2, { padding_idx = 1 }), nn.Conv2d(1, 2, 2),
                             nn.MaxPool2d(2), nn.BatchNorm1d(3), nn.Flatten(), nn.Dropout(), nn.CrossEntropyLoss(),
                             nn.MSELoss(), nn.Softmax() } do
      sweep(layer:repr(), function(a, b) return layer(a, b) end)
    end
  end)
end)
