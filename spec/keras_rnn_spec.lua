-- keras_rnn_spec.lua — Keras's LSTM, GRU and SimpleRNN (nn.LSTM / nn.GRU with one integer)
-- and Masking against Keras 3 (spec/fixtures/keras_rnn.py): outputs and states
-- (return_sequences, return_state, go_backwards, activations, reset_after, an initial state)
-- and the gradients of sum(y * r) in the input and every weight; padded sequences masked
-- through each layer, GlobalAveragePooling1D, Sequential and Model; one SGD epoch under fit;
-- misuse; PyTorch's nn.LSTM(input_size, hidden_size) unchanged.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local ag = require "gpu.autograd"
local F = require "spec.fixtures.keras_rnn"

local function arr(t, dt) return gpu.array(t, { dtype = dt or "float32" }) end
local x0, xp = arr(F.x), arr(F.xp)
local step_mask = arr(F.step_mask, "bool")

local function layer_of(c)
  local opts = {}
  for k, v in pairs(c.kw) do opts[k] = v end
  return nn[c.kind](c.units, opts)
end

local function describe_case(i, c)
  local t = {}
  for k, v in pairs(c.kw) do t[#t + 1] = k .. "=" .. tostring(v) end
  table.sort(t)
  return ("%s #%d (%s%s%s)"):format(c.kind, i, table.concat(t, ", "), c.masked and ", masked" or "",
    c.initial_state and ", initial_state" or "")
end

describe("Keras's recurrent layers against Keras 3", function()
  for i, c in ipairs(F.cases) do
    it(describe_case(i, c) .. ": outputs, input and weight gradients", function()
      local l = layer_of(c)
      local xin = c.masked and xp or x0
      l(xin)                                         -- builds it
      local names = {}
      for _, e in ipairs(l:named_parameters()) do names[#names + 1] = e[1] end
      assert.same(c.names, names)
      local ws = {}
      for j, w in ipairs(c.weights) do ws[j] = arr(w) end
      l:set_weights(ws)
      local x = xin:copy():requires_grad()
      local opts = {}
      if c.masked then opts.mask = step_mask end
      if c.initial_state then
        opts.initial_state = {}
        for j, s in ipairs(c.initial_state) do opts.initial_state[j] = arr(s) end
      end
      local outs = table.pack(l(x, opts))
      assert.equal(#c.outs, outs.n)
      local total
      for j, want in ipairs(c.outs) do
        assert(h.close(outs[j], arr(want), 2e-5), "output " .. j)
        local term = (outs[j] * arr(c.rs[j])):sum()
        total = total and total + term or term
      end
      local params = l:parameters()
      local g = ag.grad(total, { x, table.unpack(params) })
      assert(h.close(g[1], arr(c.gx), 5e-5), "input gradient")
      for j = 1, #params do assert(h.close(g[j + 1], arr(c.gw[j]), 1e-4), "gradient of " .. names[j]) end
    end)
  end

  it("the fused loops agree with the step loop (float64): outputs, states and gradients", function()
    local xd = x0:astype("float64")
    for _, c in ipairs {
      { "LSTM", {} }, { "LSTM", { return_sequences = true, go_backwards = true } }, { "LSTM", { use_bias = false } },
      { "GRU", {} }, { "GRU", { return_sequences = true, go_backwards = true } }, { "GRU", { use_bias = false } },
      { "SimpleRNN", { return_sequences = true } }, { "SimpleRNN", { activation = "relu", go_backwards = true } },
    } do
      local opts = { return_state = true, dtype = "float64" }
      for k, v in pairs(c[2]) do opts[k] = v end
      local l = nn[c[1]](3, opts)
      l(xd)
      if l.bias then gpu.no_grad(function() l.bias[{}] = gpu.random.normal(0, 0.5, l.bias.shape, { dtype = "float64" }) end) end
      local s0 = { gpu.random.normal(0, 1, { 3, 3 }, { dtype = "float64" }) }
      if c[1] == "LSTM" then s0[2] = gpu.random.normal(0, 1, { 3, 3 }, { dtype = "float64" }) end
      local function run(fused)
        l.fused = fused
        local x = xd:copy():requires_grad()
        local outs = table.pack(l(x, { initial_state = s0 }))
        local total = outs[1]:square():sum()
        for j = 2, outs.n do total = total + outs[j]:sum() * j end
        local g = ag.grad(total, { x, table.unpack(l:parameters()) })
        return outs, g
      end
      local fname = c[1] == "SimpleRNN" and "rnn" or c[1]:lower()
      local fused_fn, calls = gpu.fused[fname], 0
      gpu.fused[fname] = function(...) calls = calls + 1 return fused_fn(...) end
      local ok, o1, g1 = pcall(run, true)
      gpu.fused[fname] = fused_fn
      assert(ok, o1)
      assert.equal(1, calls, c[1] .. " took the fused loop")
      local o2, g2 = run(false)
      for j = 1, o1.n do assert(h.close(o1[j], o2[j], 1e-12), c[1] .. " output " .. j) end
      for j = 1, #g1 do assert(h.close(g1[j], g2[j], 1e-11), c[1] .. " gradient " .. j) end
    end
  end)

  it("Keras's default weights: shapes, unit_forget_bias, GRU's (2, 3 units) bias", function()
    local l = nn.LSTM(3, { input_shape = { 5, 4 } })
    local w = l:get_weights()
    assert.same({ 4, 12 }, w[1].shape)
    assert.same({ 3, 12 }, w[2].shape)
    assert.same({ 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0 }, w[3]:totable())
    local eye = gpu.matmul(w[2], w[2]:transpose(1, 2))          -- orthonormal rows
    assert(h.close(eye, gpu.eye(3), 1e-5))
    assert.same({ 2, 6 }, nn.GRU(2, { input_shape = { 5, 4 } }).bias.shape)
    assert.same({ 6 }, nn.GRU(2, { input_shape = { 5, 4 }, reset_after = false }).bias.shape)
    assert.same({ 3, 2 }, nn.SimpleRNN(2)(x0).shape)
    assert.is_nil(nn.SimpleRNN(2, { use_bias = false, input_shape = { 5, 4 } }).bias)
  end)
end)

describe("Keras's Masking against Keras 3", function()
  it("zeros the masked steps and computes the step mask", function()
    local m = nn.Masking()
    assert(h.close(m(xp), arr(F.masked_x), 0))
    assert.same(F.step_mask, m:compute_mask(xp):totable())
    assert(h.close(nn.Masking(5.0)(arr(F.x5)), arr(F.masked5), 0))
  end)

  it("Sequential(Masking, LSTM, GlobalAveragePooling1D) and the same functional Model", function()
    local lstm = nn.LSTM(3, { return_sequences = true })
    local model = nn.Sequential { nn.Masking(), lstm, nn.GlobalAveragePooling1D() }
    model(xp)
    local ws = {}
    for j, w in ipairs(F.pool.weights) do ws[j] = arr(w) end
    lstm:set_weights(ws)
    assert(h.close(model(xp), arr(F.pool.y), 2e-5))
    local inp = nn.Input({ 5, 4 })
    local lstm2 = nn.LSTM(3, { return_sequences = true })
    local out = nn.GlobalAveragePooling1D()(lstm2(nn.Masking()(inp)))
    local fm = nn.Model(inp, out)
    lstm2:set_weights(ws)
    assert(h.close(fm(xp), arr(F.pool.y), 2e-5))
    assert.equal(lstm2, fm:get_layer("lstm"))               -- Keras's layer name
  end)

  it("GlobalAveragePooling1D averages the unmasked steps only", function()
    local gap = nn.GlobalAveragePooling1D()
    assert(h.close(gap(xp, { mask = step_mask }), arr(F.gap_y), 1e-6))
    local gapf = nn.GlobalAveragePooling1D({ data_format = "channels_first" })
    assert(h.close(gapf(xp:transpose(2, 3), { mask = step_mask }), arr(F.gap_y), 1e-6))
    assert(h.close(gap(xp), xp:mean(2), 1e-6))
  end)

  it("a mask goes on through Dense and ends at a layer that does not take it", function()
    local seen
    local probe = nn.LSTM(2, { return_sequences = true })
    local m = nn.Sequential { nn.Masking(), nn.Dense(4), probe }
    m(xp)
    local plain = probe(m[2](m[1](xp)))
    local masked = probe(m[2](m[1](xp)), { mask = step_mask })
    assert(h.close(m(xp), masked, 1e-6))
    seen = (m(xp) - plain):abs():max():item()
    assert.is_true(seen > 0)
    local td = nn.Sequential { nn.Masking(), nn.TimeDistributed(m[2]), nn.LayerNormalization(), probe }
    local ln = nn.LayerNormalization()
    assert(h.close(td(xp), probe(ln(m[2](m[1](xp))), { mask = step_mask }), 1e-6))
    local m2 = nn.Sequential { nn.Masking(), nn.Flatten(), nn.Dense(2) }
    assert.same({ 3, 2 }, m2(xp).shape)
  end)

  it("one SGD epoch of Sequential(Masking, LSTM, Dense) under fit", function()
    local m = nn.Sequential { nn.Masking(), nn.LSTM(3), nn.Dense(1) }
    m(xp)
    local w0 = {}
    for j, w in ipairs(F.fit.w0) do w0[j] = arr(w) end
    m:set_weights(w0)
    m:compile { optimizer = gpu.optim.SGD { learning_rate = 0.1 }, loss = "mse" }
    local hist = m:fit(xp, arr(F.fit.y), { epochs = 1, batch_size = 3, shuffle = false, verbose = 0 })
    assert(math.abs(hist.loss[1] - F.fit.loss) < 1e-5 * math.max(1, math.abs(F.fit.loss)))
    for j, w in ipairs(m:get_weights()) do assert(h.close(w, arr(F.fit.w1[j]), 2e-5), "weight " .. j) end
  end)
end)

describe("Keras's Embedding(mask_zero = true) against Keras 3", function()
  local E = require "spec.fixtures.keras_embedding_mask"
  local ids = gpu.array(E.ids, { dtype = "int64" })
  -- the fixture's layers: gpulua's table is Keras's without its row 0 (ids are 1-based here, 0
  -- the padding)
  local function layers_of(c)
    local emb = nn.Embedding(#c.embeddings, #c.embeddings[1], { mask_zero = true })
    gpu.no_grad(function() emb.weight[{}] = arr(c.embeddings) end)
    local opts = {}
    for k, v in pairs(c.kw) do opts[k] = v end
    local rnn = nn[c.kind](c.units, opts)
    rnn:build(#c.embeddings[1])
    local ws = {}
    for j, w in ipairs(c.rnn_weights) do ws[j] = arr(w) end
    rnn:set_weights(ws)
    return emb, rnn
  end

  it("the mask is ids ~= 0, and 0 looks up zeros", function()
    local emb = layers_of(E.cases[1])
    for _, c in ipairs(E.cases) do assert.same(c.mask, emb:compute_mask(ids):totable()) end
    local y = emb(ids)
    assert.same({ 3, 5, 3 }, y.shape)
    assert.equal(0, y[{ 2, 4 }]:abs():sum():item())
    assert.is_nil(nn.Embedding(5, 3):compute_mask(ids))
    assert.equal("Embedding(5, 3, mask_zero=True)", tostring(emb))
  end)

  for _, c in ipairs(E.cases) do
    it(c.kind .. ": Sequential and a functional Model give Keras's outputs, states and embedding gradients", function()
      local emb, rnn = layers_of(c)
      local seq = nn.Sequential { emb, rnn }
      assert(h.close(seq(ids), arr(c.outs[1]), 2e-5), "Sequential")
      local inp = nn.Input({ 5 }, { dtype = "int64" })
      local outs = table.pack(rnn(emb(inp)))
      local model = nn.Model(inp, outs.n == 1 and outs[1] or { table.unpack(outs, 1, outs.n) })
      local ys = table.pack(model(ids))
      assert.equal(#c.outs, ys.n)
      local total
      for j, want in ipairs(c.outs) do
        assert(h.close(ys[j], arr(want), 2e-5), "Model output " .. j)
        local term = (ys[j] * arr(c.rs[j])):sum()
        total = total and total + term or term
      end
      local g = ag.grad(total, { emb.weight })
      assert(h.close(g[1], arr(c.g_embeddings), 1e-4), "embedding gradient")
      -- the same layers without the mask: the padded steps count, other numbers
      assert.is_true((rnn(emb(ids)) - seq(ids)):abs():max():item() > 1e-4)
    end)
  end

  it("one fit epoch and a model file keep the mask", function()
    local c = E.cases[2]
    local emb, rnn = layers_of(c)
    local m = nn.Sequential { emb, rnn, nn.Dense(1) }
    local y0 = m(ids)
    local path = os.tmpname()
    m:save(path)
    local m2 = nn.load_model(path)
    os.remove(path)
    assert.is_true(m2[1].mask_zero)
    assert(h.close(m2(ids), y0, 1e-6))
    m:compile { optimizer = gpu.optim.SGD { learning_rate = 0.1 }, loss = "mse" }
    local hist = m:fit(ids, gpu.ones(3, 1), { epochs = 1, batch_size = 3, shuffle = false, verbose = 0 })
    assert.is_true(hist.loss[1] == hist.loss[1])
  end)

  it("misuse names the layer and the fault", function()
    local emb = nn.Embedding(5, 3, { mask_zero = true })
    h.fails({ "nn.Embedding", "0 the padding", "(0..5)", "found 6" }, function() emb(gpu.array({ { 1, 6 } }, { dtype = "int64" })) end)
    h.fails({ "nn.Embedding", "0 the padding", "found -1" }, function() emb(gpu.array({ { -1, 2 } }, { dtype = "int64" })) end)
    h.fails({ "nn.Embedding", "mask_zero", "boolean" }, function() nn.Embedding(5, 3, { mask_zero = 1 }) end)
    h.fails({ "nn.Embedding:compute_mask", "indices" }, function() emb:compute_mask("x") end)
    h.fails({ "nn.Embedding", "1-based (1..5)", "found 0" }, function() nn.Embedding(5, 3)(gpu.array({ 0 }, { dtype = "int64" })) end)
  end)
end)

-- Keras 3's cells written out step by step, with the dropout masks given: im (input, one
-- per gate or one for all) and rm (recurrent, one (N, U) per gate); the sequence (N, T, U).
local function manual_run(kind, reset_after, w, x, U, im, rm)
  local N, T = x.shape[1], x.shape[2]
  local W, R, b = w[1], w[2], w[3]
  local function blk(a, g) return a[{ ":", { (g - 1) * U + 1, g * U } }] end
  local function vblk(v, g) return v[{ { (g - 1) * U + 1, g * U } }] end
  local G = kind == "LSTM" and 4 or kind == "GRU" and 3 or 1
  local bi, br = b, nil
  if kind == "GRU" and reset_after then bi, br = b[1], b[2] end
  local h = gpu.zeros(N, U)
  local c = gpu.zeros(N, U)
  local outs = {}
  for t = 1, T do
    local xt = x[{ ":", t }]
    local xg, rg = {}, {}
    for g = 1, G do
      local xin = im and xt * im[math.min(g, #im)][{ ":", 1 }] or xt
      xg[g] = gpu.matmul(xin, blk(W, g)) + vblk(bi, g)
      rg[g] = rm and h * rm[g] or h
    end
    if kind == "LSTM" then
      local z = {}
      for g = 1, 4 do z[g] = xg[g] + gpu.matmul(rg[g], blk(R, g)) end
      c = gpu.sigmoid(z[2]) * c + gpu.sigmoid(z[1]) * gpu.tanh(z[3])
      h = gpu.sigmoid(z[4]) * gpu.tanh(c)
    elseif kind == "GRU" then
      local hz, hr, hh
      if reset_after then
        hz = gpu.matmul(rg[1], blk(R, 1)) + vblk(br, 1)
        hr = gpu.matmul(rg[2], blk(R, 2)) + vblk(br, 2)
        local z, r = gpu.sigmoid(xg[1] + hz), gpu.sigmoid(xg[2] + hr)
        hh = gpu.tanh(xg[3] + r * (gpu.matmul(rg[3], blk(R, 3)) + vblk(br, 3)))
        h = z * h + (1 - z) * hh
      else
        local z = gpu.sigmoid(xg[1] + gpu.matmul(rg[1], blk(R, 1)))
        local r = gpu.sigmoid(xg[2] + gpu.matmul(rg[2], blk(R, 2)))
        hh = gpu.tanh(xg[3] + gpu.matmul(r * rg[3], blk(R, 3)))
        h = z * h + (1 - z) * hh
      end
    else
      h = gpu.tanh(xg[1] + gpu.matmul(rg[1], R))
    end
    outs[t] = h
  end
  return gpu.stack(outs, 2)
end

describe("Keras's recurrent_dropout", function()
  local cases = {
    { "LSTM", {} }, { "GRU", {} }, { "GRU", { reset_after = false } }, { "SimpleRNN", {} },
    { "LSTM", { dropout = 0.3 } }, { "GRU", { dropout = 0.3 } },
  }
  local function make(kind, extra, rate)
    local o = { return_sequences = true, recurrent_dropout = rate }
    for k, v in pairs(extra) do o[k] = v end
    local l = nn[kind](3, o)
    l(x0)
    if l.bias then gpu.no_grad(function() l.bias[{}] = gpu.random.normal(0, 0.5, l.bias.shape) end) end
    return l
  end

  it("changes nothing in inference: the layer without it, same weights", function()
    for _, c in ipairs(cases) do
      local l = make(c[1], c[2], 0.4)
      local ref = nn[c[1]](3, { return_sequences = true, reset_after = c[2].reset_after })
      ref(x0)
      ref:set_weights(l:get_weights())
      l:eval()
      assert(h.close(l(x0), ref(x0), 0), c[1])
    end
  end)

  it("in training: one mask per gate for the whole sequence, Keras 3's cells step by step, with gradients", function()
    for _, c in ipairs(cases) do
      local kind, rate = c[1], 0.4
      local l = make(kind, c[2], rate)
      local G = kind == "LSTM" and 4 or kind == "GRU" and 3 or 1
      local w = l:get_weights()
      gpu.random.seed(11)
      local x = x0:copy():requires_grad()
      local y = l(x)
      gpu.random.seed(11)                        -- the same draws, in the layer's order
      local N, F_, U = 3, 4, 3
      local im, rm
      if c[2].dropout then
        im = {}
        for g = 1, G do im[g] = gpu.random.bernoulli(1 - c[2].dropout, { N, 1, F_ }) * (1 / (1 - c[2].dropout)) end
      end
      rm = {}
      for g = 1, G do rm[g] = gpu.random.bernoulli(1 - rate, { N, U }) * (1 / (1 - rate)) end
      local tw = {}
      for j, a in ipairs(w) do tw[j] = a:copy():requires_grad() end
      local xm = x0:copy():requires_grad()
      local want = manual_run(kind, c[2].reset_after ~= false, tw, xm, U, im, rm)
      local label = kind .. (c[2].reset_after == false and " reset_after=false" or "") .. (c[2].dropout and " dropout" or "")
      assert(h.close(y, want, 1e-5), label)
      -- masks redrawn at each step, or one mask for all gates, would not give this
      assert.is_true((y - l:eval()(x0)):abs():max():item() > 1e-3, label)
      l:train()
      local r = gpu.random.normal(0, 1, y.shape)
      local params = l:parameters()
      local g = ag.grad((y * r):sum(), { x, table.unpack(params) })
      local gw = ag.grad((want * r):sum(), { xm, table.unpack(tw) })
      for j = 1, #g do
        assert.is_true(g[j]:isfinite():all():item() and g[j]:abs():max():item() > 0, label .. " gradient " .. j)
        assert(h.close(g[j], gw[j], 1e-4), label .. " gradient " .. j)
      end
    end
  end)

  it("reproducible under gpu.random.seed, different across seeds", function()
    local l = make("LSTM", {}, 0.5)
    gpu.random.seed(3)
    local a = l(x0)
    gpu.random.seed(3)
    assert(h.close(l(x0), a, 0))
    gpu.random.seed(4)
    assert.is_true((l(x0) - a):abs():max():item() > 1e-4)
  end)

  it("takes 0 <= rate < 1, in Bidirectional and model files too", function()
    for _, bad in ipairs { -0.1, 1, 1.5 } do
      h.fails({ "nn.GRU (Keras)", "recurrent_dropout" }, function() nn.GRU(2, { recurrent_dropout = bad }) end)
    end
    h.fails({ "nn.LSTM (Keras)", "recurrent_dropout", "number" }, function() nn.LSTM(2, { recurrent_dropout = "0.2" }) end)
    local b = nn.Bidirectional(nn.LSTM(2, { recurrent_dropout = 0.25 }))
    assert.equal(0.25, b.backward_layer.opts.recurrent_dropout)
    local m = nn.Sequential { nn.SimpleRNN(2, { recurrent_dropout = 0.3 }), nn.Dense(1) }
    m:eval()
    local y = m(x0)
    local path = os.tmpname()
    m:save(path)
    local m2 = nn.load_model(path)
    os.remove(path)
    assert.equal(0.3, m2[1].opts.recurrent_dropout)
    m2:eval()
    assert(h.close(m2(x0), y, 1e-6))
  end)
end)

describe("Keras's recurrent layers", function()
  it("keep PyTorch's nn.LSTM(input_size, hidden_size) and nn.GRU", function()
    local m = nn.LSTM(10, 20)
    assert.equal(nn.LSTM, getmetatable(m))
    assert.same({ 80, 10 }, m.weight_ih_l0.shape)
    local g = nn.GRU(4, 3, { batch_first = true })
    assert.equal(nn.GRU, getmetatable(g))
    local out, hn = g(x0)
    assert.same({ 3, 5, 3 }, out.shape)
    assert.same({ 1, 3, 3 }, hn.shape)
    assert.not_equal(nn.LSTM, getmetatable(nn.LSTM(20)))
  end)

  it("save and load a model of them", function()
    local m = nn.Sequential { nn.Masking(), nn.GRU(3, { return_sequences = true }), nn.SimpleRNN(2), nn.Dense(1) }
    local y = m(xp)
    local path = os.tmpname()
    m:save(path)
    local m2 = nn.load_model(path)
    os.remove(path)
    assert(h.close(m2(xp), y, 1e-6))
  end)

  it("misuse names the layer and the fault", function()
    h.fails({ "nn.LSTM", "units" }, function() nn.LSTM(0) end)
    h.fails({ "nn.SimpleRNN", "units" }, function() nn.SimpleRNN(2.5) end)
    h.fails({ "nn.SimpleRNN", "units" }, function() nn.SimpleRNN() end)
    h.fails({ "nn.GRU (Keras)", "unknown option", "unroll" }, function() nn.GRU(2, { unroll = true }) end)
    h.fails({ "nn.LSTM", "num_layers", "PyTorch" }, function() nn.LSTM(2, { num_layers = 2 }) end)
    h.fails({ "nn.SimpleRNN (Keras)", "activation" }, function() nn.SimpleRNN(2, { activation = "tanhh" }) end)
    h.fails({ "nn.SimpleRNN", "options table" }, function() nn.SimpleRNN(2, "relu") end)
    h.fails({ "LSTM(2)", "3-D", "(3, 4)" }, function() nn.LSTM(2)(gpu.ones(3, 4)) end)
    local l = nn.GRU(2)
    l(x0)
    h.fails({ "GRU(2)", "expected 4 features, got 3" }, function() l(gpu.ones(3, 5, 3)) end)
    h.fails({ "GRU(2)", "mask", "(3, 5)" }, function() l(x0, { mask = gpu.ones(3, 4) }) end)
    h.fails({ "GRU(2)", "initial_state", "1 state" }, function() l(x0, { initial_state = { gpu.zeros(3, 2), gpu.zeros(3, 2) } }) end)
    h.fails({ "GRU(2)", "initial_state[1]", "(3, 2)" }, function() l(x0, { initial_state = gpu.zeros(3, 3) }) end)
    h.fails({ "GRU(2)", "unknown option" }, function() l(x0, { masks = step_mask }) end)
    h.fails({ "nn.Masking", "mask_value" }, function() nn.Masking("0") end)
    h.fails({ "nn.Masking", "2 or more axes" }, function() nn.Masking()(gpu.ones(3)) end)
    h.fails({ "nn.GlobalAveragePooling1D", "mask must be (N, L) = (3, 5)" },
      function() nn.GlobalAveragePooling1D()(xp, { mask = gpu.ones(3, 4) }) end)
    h.fails({ "nn.GlobalMaxPooling1D", "at most 1 argument" }, function() nn.GlobalMaxPooling1D()(xp, {}) end)
  end)
end)
