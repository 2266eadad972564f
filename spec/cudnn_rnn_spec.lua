-- spec/cudnn_rnn_spec.lua — cuDNN's RNN under nn.RNN/LSTM/GRU on cuda (gpu.dnn.rnn,
-- rnn_backward; src/ops/dnn_rnn.c, src/backend/cuda/cuda_cudnn_rnn.c). On the cpu: the layers
-- keep their own loop (gpu.dnn.rnn is never called), the op refuses with the reason, and every
-- misuse the op checks before it asks for the device is an error naming it. With a GPU: each
-- layer on cuda through cuDNN against the same layer on the cpu (outputs, final states and every
-- gradient), and against its own loop on cuda (m.cudnn = false). Pending without a GPU.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local Rec = require "gpu.nn.recurrent"

local have_cuda = false
for _, d in ipairs(h.devices()) do if d == "cuda" then have_cuda = true end end

-- how many times gpu.dnn.rnn ran during fn (layers look it up at each call)
local function dnn_rnn_calls(fn)
  local n, real = 0, gpu.dnn.rnn
  gpu.dnn.rnn = function(...) n = n + 1; return real(...) end
  local ok, err = pcall(fn)
  gpu.dnn.rnn = real
  assert(ok, err)
  return n
end

local CASES = {
  { "LSTM", 3, 4, { num_layers = 2, bidirectional = true } },
  { "LSTM", 3, 5, { batch_first = true } },
  { "GRU", 4, 3, { num_layers = 2 } },
  { "GRU", 2, 4, { bidirectional = true, batch_first = true, bias = false } },
  { "RNN", 3, 4, { num_layers = 3, nonlinearity = "relu" } },
  { "RNN", 3, 4, { bidirectional = true } },
}

-- m's output, final state(s) and the gradients of every input and parameter for a fixed
-- upstream gradient, as a list of arrays on the cpu
local function run(m, x, seed)
  local xs = x:detach():requires_grad()
  local out, st = m(xs)
  local states = m.mode == "LSTM" and st or { st }
  local G = gpu.random.Generator(seed)
  local loss = (out * G:normal(0, 1, out.shape, { dtype = out.dtype }):to(out.device)):sum()
  for _, s in ipairs(states) do loss = loss + (s * G:normal(0, 1, s.shape, { dtype = s.dtype }):to(s.device)):sum() end
  m:zero_grad()
  loss:backward()
  local res = { out:detach():cpu(), xs.grad:cpu() }
  for _, s in ipairs(states) do res[#res + 1] = s:detach():cpu() end
  for _, p in ipairs(m:parameters()) do res[#res + 1] = p.grad:cpu() end
  return res
end

describe("cuDNN's RNN on the cpu", function()
  it("is not there: the layers keep their own loop and never call gpu.dnn.rnn", function()
    -- "rnn" on the cpu is oneDNN's layer-by-layer LSTM/GRU (gpu.dnn.lstm / gru), not a whole network
    local ok = gpu.dnn.available("cpu", "float32", "rnn")
    local whole, why = gpu.dnn.available("cpu", "float32", "rnn_net")
    assert.is_false(whole)
    assert.is_string(why)
    if ok then
      h.fails({ "gpu.dnn.rnn", "rnn is not supported on cpu", "one at a time" }, gpu.dnn.rnn, gpu.ones(1, 1, 2),
        gpu.ones(12), gpu.zeros(1, 1, 2), nil, { mode = "rnn_tanh" })
    end
    for _, c in ipairs(CASES) do
      gpu.random.seed(3)
      local m = nn[c[1]](c[2], c[3], c[4])
      local x = gpu.random.normal(0, 1, c[4].batch_first and { 2, 5, c[2] } or { 5, 2, c[2] })
      assert.is_false(Rec._cudnn.ok(m, x))
      assert.equal(0, dnn_rnn_calls(function() run(m, x, 1) end))
    end
    h.fails({ "gpu.dnn.rnn", "rnn is not supported on cpu" }, gpu.dnn.rnn, gpu.ones(1, 1, 2), gpu.ones(12),
      gpu.zeros(1, 1, 2), nil, { mode = "rnn_tanh" })
  end)

  it("refuses misuse with errors naming rnn, leaving the arguments unchanged", function()
    local x, h0 = gpu.ones(3, 2, 4), gpu.zeros(1, 2, 5)
    local w = gpu.ones(4 * 5 * 4 + 4 * 5 * 5 + 2 * 20)            -- an LSTM 4 -> 5, one layer
    local before = w:copy()
    h.fails({ "rnn", "input must be (seq, batch, input_size)" }, gpu.dnn.rnn, gpu.ones(3, 4), w, h0, h0)
    h.fails({ "rnn", "input must be a float array, got int32" }, gpu.dnn.rnn, gpu.ones({ 3, 2, 4 }, { dtype = "int32" }), w,
      h0, h0)
    h.fails({ "rnn", "h0 has shape (2,2,5), expected (1,2,5)" }, gpu.dnn.rnn, x, w, gpu.zeros(2, 2, 5), h0)
    h.fails({ "rnn", "an LSTM needs c0" }, gpu.dnn.rnn, x, w, h0, nil)
    h.fails({ "rnn", "c0 is for an LSTM only" }, gpu.dnn.rnn, x, gpu.ones(3 * 5 * 4 + 3 * 5 * 5 + 30), h0, h0, { mode = "gru" })
    h.fails({ "rnn", "the flat weights has shape (299,), expected (220,)" }, gpu.dnn.rnn, x, gpu.ones(299), h0, h0)
    h.fails({ "rnn", "the flat weights has shape (290,), expected (180,)" }, gpu.dnn.rnn, x, gpu.ones(290), h0, h0,
      { bias = false })
    h.fails({ "rnn", "h0 is float32, expected float64" }, gpu.dnn.rnn, x:astype("float64"), w:astype("float64"), h0, h0)
    h.fails({ "gpu.dnn.rnn", "option 'mode' must be one of" }, gpu.dnn.rnn, x, w, h0, h0, { mode = "lstm2" })
    h.fails({ "gpu.dnn.rnn", "num_layers" }, gpu.dnn.rnn, x, w, h0, h0, { num_layers = 0 })
    h.fails({ "gpu.dnn.rnn", "unknown option 'dropout'" }, gpu.dnn.rnn, x, w, h0, h0, { dropout = 0.5 })
    local out = gpu.zeros(3 * 2 * 5 + 2 * 10)
    h.fails({ "rnn_backward", "the forward ran without training = true" }, gpu.dnn.rnn_backward, out, out,
      gpu.zeros({ 0 }, { dtype = "uint8" }), x, w, h0, h0)
    h.fails({ "rnn_backward", "reserve must be the forward's uint8 reserve" }, gpu.dnn.rnn_backward, out, out,
      gpu.zeros(4), x, w, h0, h0)
    h.fails({ "rnn_backward", "the incoming gradient has shape (3,), expected (50,)" }, gpu.dnn.rnn_backward,
      gpu.zeros(3), out, gpu.zeros({ 4 }, { dtype = "uint8" }), x, w, h0, h0)
    assert.is_true(h.close(w, before, 0))
  end)
end)

describe("cuDNN's RNN against the cpu and the own loop (needs a GPU)", function()
  if not have_cuda then
    pending("needs a cuda device (cuDNN's RNN has never run on a GPU: doc/UNVERIFIED.md)")
    return
  end
  for _, c in ipairs(CASES) do
    local name = ("%s(%d, %d, %s)"):format(c[1], c[2], c[3], (function()
      local t = {}
      for k, v in pairs(c[4]) do t[#t + 1] = k .. "=" .. tostring(v) end
      table.sort(t)
      return table.concat(t, ", ")
    end)())
    for _, dt in ipairs { "float32", "float64" } do
      it(name .. " in " .. dt .. ": cuda (cuDNN) = cpu = cuda's own loop", function()
        gpu.random.seed(5)
        local m = nn[c[1]](c[2], c[3], c[4])
        if dt == "float64" then m:to("cpu", "float64") end
        local x = gpu.random.normal(0, 1, c[4].batch_first and { 2, 5, c[2] } or { 5, 2, c[2] }):astype(dt)
        local ref = run(m, x, 9)
        m:to("cuda")
        local xc = x:to("cuda")
        assert.is_true(Rec._cudnn.ok(m, c[4].batch_first and xc:transpose(1, 2) or xc))
        local got
        assert.equal(1, dnn_rnn_calls(function() got = run(m, xc, 9) end))
        m.cudnn = false
        local own
        assert.equal(0, dnn_rnn_calls(function() own = run(m, xc, 9) end))
        local tol = dt == "float32" and 1e-4 or 1e-10
        assert.equal(#ref, #got)
        for i = 1, #ref do
          local ok, msg = h.close(got[i], ref[i], tol)
          assert(ok, ("result %d (cuDNN vs cpu): %s"):format(i, tostring(msg)))
          ok, msg = h.close(got[i], own[i], tol)
          assert(ok, ("result %d (cuDNN vs own loop on cuda): %s"):format(i, tostring(msg)))
        end
      end)
    end
  end

  it("takes the given states, unbatched inputs, eval without a tape, and keeps dropout to the own loop", function()
    gpu.random.seed(6)
    local m = nn.LSTM(3, 4, { num_layers = 2 }):to("cuda")
    local x = gpu.random.normal(0, 1, { 5, 3 }):to("cuda")           -- unbatched
    local h0, c0 = gpu.random.normal(0, 1, { 2, 4 }):to("cuda"), gpu.random.normal(0, 1, { 2, 4 }):to("cuda")
    local out, st = m(x, { h0, c0 })
    m.cudnn = false
    local out2, st2 = m(x, { h0, c0 })
    h.assert_close(out:cpu(), out2:cpu(), 1e-5)
    h.assert_close(st[1]:cpu(), st2[1]:cpu(), 1e-5)
    h.assert_close(st[2]:cpu(), st2[2]:cpu(), 1e-5)
    m.cudnn = nil
    gpu.no_grad(function() assert.equal(1, dnn_rnn_calls(function() m(x) end)) end)
    local d = nn.GRU(3, 4, { num_layers = 2, dropout = 0.5 }):to("cuda")
    assert.equal(0, dnn_rnn_calls(function() d(x) end))               -- dropout in training: own loop
    d:eval()
    assert.equal(1, dnn_rnn_calls(function() d(x) end))
  end)
end)
