-- keras_bidi_spec.lua — Keras's Bidirectional over nn.LSTM(units), nn.GRU(units) and
-- nn.SimpleRNN against Keras 3 (spec/fixtures/keras_bidi.py): every merge_mode,
-- return_sequences, return_state, a mask of padded steps; outputs and the gradients of
-- sum(y * r) in the input and every weight; in Sequential after Masking; saved whole;
-- misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local ag = require "gpu.autograd"
local F = require "spec.fixtures.keras_bidi"

local function arr(t, dt) return gpu.array(t, { dtype = dt or "float32" }) end
local x0, xp, step_mask = arr(F.x), arr(F.xp), arr(F.step_mask, "bool")

local function layer_of(c)
  local o = {}
  for k, v in pairs(c.kw) do o[k] = v end
  return nn.Bidirectional(nn[c.kind](c.units, o), { merge_mode = c.merge_mode })
end

describe("Keras's Bidirectional against Keras 3", function()
  for i, c in ipairs(F.cases) do
    local kw = {}
    for k, v in pairs(c.kw) do kw[#kw + 1] = k .. "=" .. tostring(v) end
    table.sort(kw)
    it(("%s #%d (%s, merge_mode %s%s): outputs and gradients"):format(c.kind, i, table.concat(kw, ", "), c.merge_mode,
      c.masked and ", masked" or ""), function()
      local l = layer_of(c)
      local xin = c.masked and xp or x0
      l(xin)
      local ws = {}
      for j, w in ipairs(c.weights) do ws[j] = arr(w) end
      l:set_weights(ws)
      local x = xin:copy():requires_grad()
      local outs = table.pack(l(x, c.masked and { mask = step_mask } or nil))
      assert.equal(#c.outs, outs.n)
      local total
      for j, want in ipairs(c.outs) do
        assert(h.close(outs[j], arr(want), 2e-5), "output " .. j)
        local term = (outs[j] * arr(c.rs[j])):sum()
        total = total and total + term or term
      end
      local params = l:parameters()
      assert.equal(#c.gw, #params)
      local g = ag.grad(total, { x, table.unpack(params) })
      assert(h.close(g[1], arr(c.gx), 5e-5), "input gradient")
      for j = 1, #params do assert(h.close(g[j + 1], arr(c.gw[j]), 1e-4), "weight gradient " .. j) end
    end)
  end

  it("takes Masking's mask in a Sequential, saves whole, and names its layers as Keras", function()
    local c = F.cases[#F.cases - 1]                             -- LSTM, return_sequences, masked
    local bi = layer_of(c)
    local m = nn.Sequential { nn.Masking(), bi }
    m(xp)
    local ws = {}
    for j, w in ipairs(c.weights) do ws[j] = arr(w) end
    bi:set_weights(ws)
    assert(h.close(m(xp), arr(c.outs[1]), 2e-5))
    local path = os.tmpname()
    m:save(path)
    local back = nn.load_model(path)
    os.remove(path)
    assert(h.close(back(xp), m(xp), 0))
    local i = nn.Input({ 4, 2 })
    local fm = nn.Model(i, nn.Bidirectional(nn.GRU(2))(i))
    assert.is_truthy(fm:get_layer("bidirectional"))
    assert.equal("Bidirectional(GRU(2), merge_mode=concat)", tostring(nn.Bidirectional(nn.GRU(2))))
  end)

  it("a backward_layer of one's own, and initial states for both directions", function()
    local f, b = nn.SimpleRNN(2, { return_sequences = true }), nn.SimpleRNN(2, { return_sequences = true, go_backwards = true })
    local bi = nn.Bidirectional(f, { backward_layer = b, merge_mode = "none" })
    local y1, y2 = bi(x0)
    assert(h.close(y1, f(x0), 0))
    assert(h.close(y2, b(x0):flip(2), 0))
    local s = nn.Bidirectional(nn.GRU(2, { return_state = true }))
    local h0 = { gpu.ones(3, 2), gpu.zeros(3, 2) }
    local y, hf, hb = s(x0, { initial_state = h0 })
    assert.same({ 3, 4 }, y.shape)
    assert(h.close(hf, s.forward_layer(x0, { initial_state = { h0[1] } }), 1e-6))
    assert.same({ 3, 2 }, hb.shape)
  end)

  it("misuse names the layer and the fault", function()
    h.fails({ "nn.Bidirectional", "a Keras recurrent layer expected" }, nn.Bidirectional, nn.Dense(2))
    h.fails({ "nn.Bidirectional", "a Keras recurrent layer expected" }, nn.Bidirectional, nn.LSTM(2, 3))
    h.fails({ "nn.Bidirectional", "unknown option 'merge'" }, nn.Bidirectional, nn.LSTM(2), { merge = "sum" })
    h.fails({ "nn.Bidirectional", "merge_mode" }, nn.Bidirectional, nn.LSTM(2), { merge_mode = "max" })
    h.fails({ "nn.Bidirectional", "go_backwards must be true" }, nn.Bidirectional, nn.LSTM(2),
      { backward_layer = nn.LSTM(2) })
    h.fails({ "nn.Bidirectional", "return_sequences" }, nn.Bidirectional, nn.LSTM(2),
      { backward_layer = nn.LSTM(2, { go_backwards = true, return_sequences = true }) })
    h.fails({ "initial_state must list" }, nn.Bidirectional(nn.GRU(2)), x0, { initial_state = { gpu.ones(3, 2) } })
  end)
end)
