-- spec/attention_bwd_spec.lua — gpu.fused.attention_backward (FlashAttention-2's backward:
-- the probabilities recomputed tile by tile from the forward's logsumexp) and the rule of
-- gpu.fused.attention that uses it for first-order gradients. Values and gradients against
-- PyTorch 1.13 (spec/fixtures/attention/torch.lua, written by tools/gen_attention_fixtures.py:
-- the composite softmax(q k^T scale) v, causal and not, L != S, Ev != E, float32 and float64,
-- batches of heads, a row without keys, a MultiheadAttention and a TransformerEncoderLayer);
-- the create_graph path (array ops) agrees; the memory of the backward stays below one (L, S)
-- matrix; the query chunks of a thread team sum to the same gradients; every misuse is an
-- error naming the function.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local ag = require "gpu.autograd"
local fx = dofile("spec/fixtures/attention/torch.lua")
local BIN = os.getenv("GPULUA_BIN") or "./gpulua"

local FN = "fused.attention_backward"
local function T(t, dtype, dev) return gpu.array(t.data, { dtype = dtype, device = dev }):reshape(t.shape) end
local function tol_of(dtype) return dtype == "float64" and 1e-10 or 3e-5 end
local function opts_of(c) return { scale = c.scale, is_causal = c.causal } end

-- how many times gpu.fused.attention and gpu.fused.attention_backward ran during fn (the
-- rule and nn call them through the module table; gpu.profile counts only outermost ops)
local function calls(fn)
  local n, real = {}, {}
  for _, name in ipairs { "attention", "attention_backward" } do
    real[name] = gpu.fused[name]
    gpu.fused[name] = function(...)
      n["fused." .. name] = (n["fused." .. name] or 0) + 1
      return real[name](...)
    end
  end
  local ok, err = pcall(fn)
  for name, f in pairs(real) do gpu.fused[name] = f end
  if not ok then error(err, 0) end
  return n
end

for _, dev in ipairs(h.devices()) do
  describe("gpu.fused.attention_backward on " .. dev, function()
    for _, c in ipairs(fx.cases) do
      it(c.name .. " (" .. c.dtype .. (c.causal and ", causal" or "") .. "): values and gradients match PyTorch",
        function()
          local tol = tol_of(c.dtype)
          local q, k, v, gy = T(c.q, c.dtype, dev), T(c.k, c.dtype, dev), T(c.v, c.dtype, dev), T(c.gy, c.dtype, dev)
          local out, lse = gpu.fused.attention(q, k, v, opts_of(c))
          h.assert_close(out, T(c.y, "float64"), tol)
          h.assert_close(lse, T(c.lse, "float64"), tol)
          if c.dead then
            -- the row of a query without keys: lse -inf, its out NaN (softmax over nothing)
            local idx = {}
            for i = 1, lse.ndim - 1 do idx[i] = ":" end
            idx[lse.ndim] = c.dead
            lse[idx] = -math.huge
            idx[lse.ndim + 1] = ":"
            out[idx] = 0 / 0
          end
          local gq, gk, gv = gpu.fused.attention_backward(gy, q, k, v, out, lse, opts_of(c))
          assert.equal(c.dtype, gq.dtype)
          assert.same(q.shape, gq.shape); assert.same(k.shape, gk.shape); assert.same(v.shape, gv.shape)
          h.assert_close(gq, T(c.gq, "float64"), tol)
          h.assert_close(gk, T(c.gk, "float64"), tol)
          h.assert_close(gv, T(c.gv, "float64"), tol)
          if c.dead then
            for _, a in ipairs { gq, gk, gv } do assert.is_true(a:isfinite():all():item()) end
          end
        end)
    end

    it("autograd: first-order gradients through the fused backward, create_graph through array ops, both PyTorch's",
      function()
        for _, c in ipairs(fx.cases) do
          if not c.dead then
            local tol = tol_of(c.dtype)
            local function leaves()
              return T(c.q, c.dtype, dev):requires_grad(), T(c.k, c.dtype, dev):requires_grad(),
                T(c.v, c.dtype, dev):requires_grad()
            end
            local gy = T(c.gy, c.dtype, dev)
            local q, k, v = leaves()
            local n = calls(function()
              local y = gpu.fused.attention(q, k, v, opts_of(c))
              ;(y * gy):sum():backward()
            end)
            assert.equal(1, n["fused.attention_backward"], c.name)
            h.assert_close(q.grad, T(c.gq, "float64"), tol)
            h.assert_close(k.grad, T(c.gk, "float64"), tol)
            h.assert_close(v.grad, T(c.gv, "float64"), tol)
            local q2, k2, v2 = leaves()
            local g2
            n = calls(function()
              local y = gpu.fused.attention(q2, k2, v2, opts_of(c))
              g2 = ag.grad((y * gy):sum(), { q2, k2, v2 }, { create_graph = true })
            end)
            assert.is_nil(n["fused.attention_backward"], c.name)
            h.assert_close(g2[1], T(c.gq, "float64"), tol)
            h.assert_close(g2[2], T(c.gk, "float64"), tol)
            h.assert_close(g2[3], T(c.gv, "float64"), tol)
          end
        end
      end)

    it("rows without keys (S = 0) get zero gradients, not NaN", function()
      local o = { dtype = "float64", device = dev }
      local q = gpu.ones({ 2, 3, 4 }, o):requires_grad()
      local k, v = gpu.ones({ 2, 0, 4 }, o):requires_grad(), gpu.ones({ 2, 0, 5 }, o):requires_grad()
      local y, lse = gpu.fused.attention(q, k, v)
      assert.is_true(lse:eq(-math.huge):all():item())
      local gq, gk, gv = gpu.fused.attention_backward(gpu.ones({ 2, 3, 5 }, o), q:detach(), k:detach(), v:detach(),
        y:detach(), lse)
      h.assert_close(gq, gpu.zeros({ 2, 3, 4 }, o), 0)
      assert.same({ 2, 0, 4 }, gk.shape); assert.same({ 2, 0, 5 }, gv.shape)
      y:sum():backward()                       -- a NaN loss: its gradient still flows as ones
      h.assert_close(q.grad, gpu.zeros({ 2, 3, 4 }, o), 0)
    end)

    it("takes views (non-contiguous operands) and an expanded gradient", function()
      local g = gpu.random.Generator(4)
      local o = { dtype = "float64", device = dev }
      local q = g:normal(0, 1, { 2, 3, 6 }, o):swapaxes(-1, -2)        -- (2, 6, 3), transposed
      local k = g:normal(0, 1, { 2, 5, 3 }, o)
      local v = g:normal(0, 1, { 5, 2, 4 }, o):swapaxes(1, 2)          -- (2, 5, 4)
      local out, lse = gpu.fused.attention(q, k, v, { is_causal = true })
      local gy = gpu.ones({ 1, 1, 4 }, o):expand(2, 6, 4)
      local a = { gpu.fused.attention_backward(gy, q, k, v, out, lse, { is_causal = true }) }
      local b = { gpu.fused.attention_backward(gy:contiguous(), q:contiguous(), k, v:contiguous(), out, lse,
        { is_causal = true }) }
      for i = 1, 3 do h.assert_close(a[i], b[i], 0) end
    end)

    it("refuses misuse, naming the function and the fault", function()
      local o = { device = dev }
      local q, k, v = gpu.ones({ 2, 3, 4 }, o), gpu.ones({ 2, 5, 4 }, o), gpu.ones({ 2, 5, 6 }, o)
      local out, lse = gpu.fused.attention(q, k, v)
      local g = gpu.ones({ 2, 3, 6 }, o)
      local bwd = gpu.fused.attention_backward
      h.fails({ FN, "gpu.array expected, got nil" }, bwd, nil, q, k, v, out, lse)
      h.fails({ FN, "bad argument #6", "gpu.array expected, got number" }, bwd, g, q, k, v, out, 1)
      h.fails({ FN, "query (2,3,4), key (2,4,4) and value (2,5,6)" }, bwd, g, q, gpu.ones({ 2, 4, 4 }, o), v, out, lse)
      h.fails({ FN, "same leading axes" }, bwd, g, q, gpu.ones({ 3, 5, 4 }, o), gpu.ones({ 3, 5, 6 }, o), out, lse)
      h.fails({ FN, "the gradient must have the output's shape (2,3,6), got (2,3,5)" }, bwd, gpu.ones({ 2, 3, 5 }, o),
        q, k, v, out, lse)
      h.fails({ FN, "out must have the output's shape (2,3,6), got (3,6)" }, bwd, g, q, k, v, gpu.ones({ 3, 6 }, o), lse)
      h.fails({ FN, "lse must have shape (2,3)", "got (2,3,1)" }, bwd, g, q, k, v, out, lse:unsqueeze(-1))
      h.fails({ FN, "query must be float16, bfloat16, ", "got int64" }, bwd, g:astype("int64"), q:astype("int64"),
        k:astype("int64"), v:astype("int64"), out:astype("int64"), lse:astype("int64"))
      h.fails({ FN, "key is float64, expected float32 like query" }, bwd, g, q, k:astype("float64"), v, out, lse)
      h.fails({ FN, "the gradient is float64, expected float32 like query" }, bwd, g:astype("float64"), q, k, v, out,
        lse)
      h.fails({ FN, "lse is float64, expected float32 (the forward's, for a float32 query)" }, bwd, g, q, k, v, out,
        lse:astype("float64"))
      h.fails({ FN, "unknown option 'causal'" }, bwd, g, q, k, v, out, lse, { causal = true })
      h.fails({ FN, "is_causal" }, bwd, g, q, k, v, out, lse, { is_causal = 1 })
      h.fails({ FN, "'scale' must be finite" }, bwd, g, q, k, v, out, lse, { scale = math.huge })
      h.fails({ FN, "not differentiable" }, bwd, g:requires_grad(), q, k, v, out, lse)
      local other = "cpu"
      if dev == "cpu" then other = gpu.is_available() and "cuda" or nil end
      if other then
        h.fails({ FN, "is on", "(move it with :to())" }, bwd, g:to(other), q, k, v, out, lse)
        h.fails({ FN, "is on", "(move it with :to())" }, bwd, g, q, k, v, out, lse:to(other))
      end
    end)

    it("float16 and bfloat16: lse in float32, values and gradients the float32 ones rounded (PyTorch's inputs)",
      function()
        local c = fx.cases[3]                         -- causal_L_gt_S: float32 inputs, causal, L > S
        assert.equal("causal_L_gt_S", c.name)
        for _, dt in ipairs { "float16", "bfloat16" } do
          -- the float32 reference from the half-rounded inputs (what the kernels compute from)
          local qh, kh, vh, gh = T(c.q, dt, dev), T(c.k, dt, dev), T(c.v, dt, dev), T(c.gy, dt, dev)
          local q32, k32, v32, g32 = qh:astype("float32"), kh:astype("float32"), vh:astype("float32"),
            gh:astype("float32")
          local o32, l32 = gpu.fused.attention(q32, k32, v32, opts_of(c))
          local out, lse = gpu.fused.attention(qh, kh, vh, opts_of(c))
          assert.equal(dt, out.dtype); assert.equal("float32", lse.dtype)
          local tol = dt == "float16" and 2e-3 or 1e-2
          h.assert_close(out:astype("float32"), o32, tol)
          h.assert_close(lse, l32, 1e-5)
          local w = { gpu.fused.attention_backward(g32, q32, k32, v32, o32, l32, opts_of(c)) }
          local got = { gpu.fused.attention_backward(gh, qh, kh, vh, out, lse, opts_of(c)) }
          for i = 1, 3 do
            assert.equal(dt, got[i].dtype)
            h.assert_close(got[i]:astype("float32"), w[i], tol * 4)
          end
          h.fails({ FN, "lse is float16, expected float32 (the forward's, for a float16 query)" },
            gpu.fused.attention_backward, gh:astype("float16"), qh:astype("float16"), kh:astype("float16"),
            vh:astype("float16"), out:astype("float16"), lse:astype("float16"), opts_of(c))
          -- through autograd: the rule hands the float32 lse back
          local q, k, v = qh:requires_grad(), kh:requires_grad(), vh:requires_grad()
          ;(gpu.fused.attention(q, k, v, opts_of(c)) * gh):sum():backward()
          for i, x in ipairs { q, k, v } do h.assert_close(x.grad, got[i], 0) end
        end
      end)

    it("MultiheadAttention and TransformerEncoderLayer without masks (the fused path) give PyTorch's gradients",
      function()
        local function sd(t)
          local r = {}
          for name, a in pairs(t) do r[name] = T(a, "float64", dev) end
          return r
        end
        local f = fx.layers.mha
        local m = nn.MultiheadAttention(8, 2, { batch_first = true, dtype = "float64", device = dev })
        m:load_state_dict(sd(f.sd))
        local x = T(f.x, "float64", dev):requires_grad()
        local y
        local n = calls(function()
          y = m(x, x, x, { need_weights = false })
          ;(y * T(f.gy, "float64", dev)):sum():backward()
        end)
        assert.equal(1, n["fused.attention"]); assert.equal(1, n["fused.attention_backward"])
        h.assert_close(y, T(f.y, "float64"), 1e-12)
        h.assert_close(x.grad, T(f.gx, "float64"), 1e-10)
        h.assert_close(m.in_proj_weight.grad, T(f.g_in_proj_weight, "float64"), 1e-10)
        h.assert_close(m.in_proj_bias.grad, T(f.g_in_proj_bias, "float64"), 1e-10)
        h.assert_close(m.out_proj.weight.grad, T(f.g_out_proj_weight, "float64"), 1e-10)

        local fe = fx.layers.encoder
        local layer = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, dropout = 0, batch_first = true,
          norm_first = true, activation = "gelu", dtype = "float64", device = dev })
        layer:load_state_dict(sd(fe.sd))
        local xe = T(fe.x, "float64", dev):requires_grad()
        local gy = T(fe.gy, "float64", dev)
        n = calls(function()
          y = layer(xe)
          ;(y * gy):sum():backward()
        end)
        assert.equal(1, n["fused.attention_backward"])
        h.assert_close(y, T(fe.y, "float64"), 1e-11)
        h.assert_close(xe.grad, T(fe.gx, "float64"), 1e-9)
        h.assert_close(layer.linear1.weight.grad, T(fe.g_linear1, "float64"), 1e-9)
        h.assert_close(layer.self_attn.in_proj_weight.grad, T(fe.g_in_proj_weight, "float64"), 1e-9)
        -- the same layer's gradients through the array-op path (create_graph) agree
        local xe2 = T(fe.x, "float64", dev):requires_grad()
        local gx2 = ag.grad((layer(xe2) * gy):sum(), xe2, { create_graph = true })
        h.assert_close(gx2, xe.grad, 1e-11)

        -- is_causal (no other mask): MultiheadAttention hands the flag to the fused op; PyTorch's
        -- numbers are the layer's with a causal src_mask
        local fc = fx.layers.encoder_causal
        layer:zero_grad()
        local xc = T(fc.x, "float64", dev):requires_grad()
        n = calls(function()
          y = layer(xc, { is_causal = true })
          ;(y * T(fc.gy, "float64", dev)):sum():backward()
        end)
        assert.equal(1, n["fused.attention"]); assert.equal(1, n["fused.attention_backward"])
        h.assert_close(y, T(fc.y, "float64"), 1e-11)
        h.assert_close(xc.grad, T(fc.gx, "float64"), 1e-9)
        h.assert_close(layer.linear1.weight.grad, T(fc.g_linear1, "float64"), 1e-9)
        h.assert_close(layer.self_attn.in_proj_weight.grad, T(fc.g_in_proj_weight, "float64"), 1e-9)
        -- with a key padding mask as well, the causal mask is an array again (the composite path)
        local kpm = gpu.zeros({ 2, 24 }, { dtype = "bool", device = dev })
        n = calls(function() layer(T(fc.x, "float64", dev), { is_causal = true, src_key_padding_mask = kpm }) end)
        assert.is_nil(n["fused.attention"])
      end)
  end)
end

describe("gpu.fused.attention_backward on the cpu", function()
  -- one process per measurement: gpu.memory().peak only grows
  local dir, name = h.tmpdir()
  local function run(env, code)
    local script = name("s.lua")
    h.spit(script, code)
    local status, out, err = h.run(("%s %s %s"):format(env, BIN, script))
    assert(status == 0, err)
    return out
  end
  teardown(function() os.execute("rm -rf " .. dir) end)

  it("never holds an (L, S) matrix: the memory it takes stays far below one, the composite's does not", function()
    -- L = S = 2048, float64: one (L, S) matrix is 32 MiB; the fused backward's tiles, slabs and
    -- gradients come to about 1.5 MiB
    local code = [[
      local gpu = require "gpu"
      local ag = require "gpu.autograd"
      local g = gpu.random.Generator(1)
      local o = { dtype = "float64" }
      local q = g:normal(0, 1, { 1, 2048, 8 }, o):requires_grad()
      local k = g:normal(0, 1, { 1, 2048, 8 }, o):requires_grad()
      local v = g:normal(0, 1, { 1, 2048, 8 }, o):requires_grad()
      local y = gpu.fused.attention(q, k, v, { is_causal = true })
      local loss = y:sum()
      local before = gpu.memory().allocated
      if arg_mode == "fused" then loss:backward() else ag.grad(loss, { q, k, v }, { create_graph = true }) end
      io.write(string.format("%d", gpu.memory().peak - before))
    ]]
    local fused = tonumber(run("", "arg_mode = 'fused'; " .. code))
    local composite = tonumber(run("", "arg_mode = 'composite'; " .. code))
    local LS = 2048 * 2048 * 8
    assert(fused < LS / 8, ("the fused backward took %d bytes (an (L, S) matrix is %d)"):format(fused, LS))
    assert(composite > LS, ("the composite took %d bytes only"):format(composite))
  end)

  it("sums the query chunks of a team to the gradients of one thread (1 and 2 threads, one head)", function()
    local code = [[
      local gpu = require "gpu"
      local g = gpu.random.Generator(2)
      local o = { dtype = "float64" }
      local q, k = g:normal(0, 1, { 1, 300, 16 }, o), g:normal(0, 1, { 1, 280, 16 }, o)
      local v, gy = g:normal(0, 1, { 1, 280, 24 }, o), g:normal(0, 1, { 1, 300, 24 }, o)
      local out, lse = gpu.fused.attention(q, k, v, { is_causal = true })
      local gq, gk, gv = gpu.fused.attention_backward(gy, q, k, v, out, lse, { is_causal = true })
      gpu.savez(path, { gq = gq, gk = gk, gv = gv })
    ]]
    local p1, p2 = name("t1.npz"), name("t2.npz")
    run("OMP_NUM_THREADS=1", ("path = %q; "):format(p1) .. code)
    run("OMP_NUM_THREADS=2", ("path = %q; "):format(p2) .. code)
    local a, b = gpu.load(p1), gpu.load(p2)
    -- the reference: the rule's create_graph path (array ops) in this process
    local g = gpu.random.Generator(2)
    local o = { dtype = "float64" }
    local q, k = g:normal(0, 1, { 1, 300, 16 }, o):requires_grad(), g:normal(0, 1, { 1, 280, 16 }, o):requires_grad()
    local v, gy = g:normal(0, 1, { 1, 280, 24 }, o):requires_grad(), g:normal(0, 1, { 1, 300, 24 }, o)
    local y = gpu.fused.attention(q, k, v, { is_causal = true })
    local wq, wk, wv = table.unpack(ag.grad((y * gy):sum(), { q, k, v }, { create_graph = true }))
    for _, r in ipairs { a, b } do
      h.assert_close(r.gq, wq, 1e-11); h.assert_close(r.gk, wk, 1e-11); h.assert_close(r.gv, wv, 1e-11)
    end
  end)
end)
