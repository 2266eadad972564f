-- packed_spec.lua — nn.utils' packed sequences against torch 2 (spec/fixtures/packed.py):
-- pack_padded_sequence (unsorted lengths), pad_packed_sequence, pack_sequence, and LSTM, GRU and
-- RNN over a packed batch (outputs, final states, float64 gradients in the input and the
-- initial state); misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local U = nn.utils
local ag = require "gpu.autograd"
local X = require "spec.fixtures.packed"

local function a64(t) return gpu.array(t, { dtype = "float64" }) end
local x = a64(X.x)

describe("packed sequences against torch", function()
  it("pack_padded_sequence, pad_packed_sequence and pack_sequence", function()
    local p = U.pack_padded_sequence(x, X.lengths, { enforce_sorted = false })
    assert(h.close(p.data, a64(X.packed.data), 0))
    assert.same(X.packed.batch_sizes, p.batch_sizes:totable())
    assert.same(X.packed.sorted_indices, p.sorted_indices:totable())
    local back, lens = U.pad_packed_sequence(p)
    assert.same(X.lengths, lens:totable())
    for b, L in ipairs(X.lengths) do assert(h.close(back[{ { 1, L }, b }], x[{ { 1, L }, b }], 0)) end
    assert.equal(0, back[{ { 4, 5 }, 1 }]:abs():sum():item())
    local bf, _ = U.pad_packed_sequence(p, { batch_first = true, padding_value = -1, total_length = 7 })
    assert.same({ 3, 7, 2 }, bf.shape)
    assert.equal(-1, bf[1][7][1])
    local ps = U.pack_sequence({ x[{ { 1, 5 }, 2 }], x[{ { 1, 4 }, 3 }], x[{ { 1, 3 }, 1 }] })
    assert(h.close(ps.data, a64(X.pack_sequence.data), 0))
    assert.same(X.pack_sequence.batch_sizes, ps.batch_sizes:totable())
    assert.equal(U.rnn.pack_padded_sequence, U.pack_padded_sequence)
    -- batch_first input packs the same
    local p2 = U.pack_padded_sequence(x:transpose(1, 2), X.lengths, { batch_first = true, enforce_sorted = false })
    assert(h.close(p2.data, p.data, 0))
  end)

  for _, c in ipairs(X.cases) do
    it(c.kind .. " over a packed batch: outputs, final states, gradients", function()
      local o = { dtype = "float64" }
      for k, v in pairs(c.kw) do o[k] = v end
      local layer = nn[c.kind](2, 3, o)
      local sd = {}
      for k, v in pairs(c.state) do sd[k] = a64(v) end
      layer:load_state_dict(sd)
      local xi, h0 = x:copy():requires_grad(), a64(c.h0):requires_grad()
      local p = U.pack_padded_sequence(xi, X.lengths, { enforce_sorted = false })
      local out, st
      if c.kind == "LSTM" then out, st = layer(p, { h0, a64(c.c0) }) else out, st = layer(p, h0) end
      assert(getmetatable(out) == U.rnn.PackedSequence)
      assert(h.close(out.data, a64(c.data), 1e-12))
      local hn = c.kind == "LSTM" and st[1] or st
      assert(h.close(hn, a64(c.hn), 1e-12))
      if c.kind == "LSTM" then assert(h.close(st[2], a64(c.cn), 1e-12)) end
      local padded = U.pad_packed_sequence(out)
      assert(h.close(padded, a64(c.padded), 1e-12))
      local g = ag.grad((padded * a64(c.r)):sum() + (hn * a64(c.q)):sum(), { xi, h0 })
      assert(h.close(g[1], a64(c.gx), 1e-10))
      assert(h.close(g[2], a64(c.gh0), 1e-10))
    end)
  end

  it("misuse names the function and the fault", function()
    h.fails({ "pack_padded_sequence", "decreasing order" }, function() U.pack_padded_sequence(x, X.lengths) end)
    h.fails({ "pack_padded_sequence", "lengths has 2 entries" }, function() U.pack_padded_sequence(x, { 5, 4 }) end)
    h.fails({ "pack_padded_sequence", "lengths[1] must be an integer in 1..5" }, function() U.pack_padded_sequence(x, { 6, 4, 3 }) end)
    h.fails({ "pack_padded_sequence", "lengths" }, function() U.pack_padded_sequence(x, "5") end)
    h.fails({ "pack_padded_sequence", "unknown option" }, function() U.pack_padded_sequence(x, { 5, 4, 3 }, { sorted = true }) end)
    h.fails({ "pad_packed_sequence", "PackedSequence expected" }, function() U.pad_packed_sequence(x) end)
    local p = U.pack_padded_sequence(x, { 5, 4, 3 })
    h.fails({ "pad_packed_sequence", "total_length" }, function() U.pad_packed_sequence(p, { total_length = 3 }) end)
    h.fails({ "pack_sequence", "non-empty list" }, function() U.pack_sequence({}) end)
    h.fails({ "nn.LSTM", "packed data must be (steps, 4)" }, function() nn.LSTM(4, 3, { dtype = "float64" })(p) end)
    h.fails({ "nn.GRU", "packed batch of 3 sequences" }, function()
      nn.GRU(2, 3, { dtype = "float64" })(p, gpu.zeros(1, 2, 3, { dtype = "float64" }))
    end)
  end)
end)
