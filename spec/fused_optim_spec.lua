-- spec/fused_optim_spec.lua — the fused steps of Adagrad, Adadelta, Adamax, NAdam and
-- RAdam (gpu.fused.adagrad_, adadelta_, adamax_, nadam_, radam_ and the optimizers that take
-- them). The fused kernel and the optimizers' array ops (fused = false) from the same inputs
-- over ten steps, every option that changes the rule, float32 and float64, a small and a large
-- (threaded) parameter: the same parameters and state. Then the routing (the kernel where
-- the parameter qualifies, the array ops where not, fused = true / false), one step of each
-- function against its formula in Lua numbers, and the errors, each naming the function.
-- (Against torch.optim: spec/train_optim_spec.lua, fixtures in float32 and float64.)
local h = require "spec.helper"
local gpu = h.gpu
local F, optim = gpu.fused, gpu.optim

local FUSED = { Adagrad = "adagrad_", Adadelta = "adadelta_", Adamax = "adamax_", NAdam = "nadam_", RAdam = "radam_" }

-- {class, options}: the defaults, then every option that enters the rule
local cases = {
  { "Adagrad", { lr = 0.1 } },
  { "Adagrad", { lr = 0.05, lr_decay = 0.1, weight_decay = 0.1, initial_accumulator_value = 0.2, eps = 1e-6,
                 maximize = true } },
  { "Adadelta", {} },
  { "Adadelta", { lr = 0.5, rho = 0.8, eps = 1e-4, weight_decay = 0.1, maximize = true } },
  { "Adadelta", { rho = 0 } },
  { "Adamax", { lr = 0.01 } },
  { "Adamax", { lr = 0.05, betas = { 0.8, 0.99 }, eps = 1e-6, weight_decay = 0.1, maximize = true } },
  { "NAdam", { lr = 0.01 } },
  { "NAdam", { lr = 0.05, betas = { 0.8, 0.99 }, eps = 1e-6, weight_decay = 0.1, momentum_decay = 0.01 } },
  { "RAdam", { lr = 0.01 } },                                        -- rectified from step 6 on
  { "RAdam", { lr = 0.05, betas = { 0.8, 0.9 }, eps = 1e-6, weight_decay = 0.1 } },   -- from step 6 on too
  { "RAdam", { betas = { 0.9, 0.6 } } },                             -- rho_inf = 4: never rectified
}

local function describe_case(c)
  local keys = {}
  for k, v in pairs(c[2]) do
    keys[#keys + 1] = k .. "=" .. (type(v) == "table" and "{" .. table.concat(v, ",") .. "}" or tostring(v))
  end
  table.sort(keys)
  return c[1] .. " {" .. table.concat(keys, ", ") .. "}"
end

-- The largest |a - b| over two arrays of the same shape (a Lua number).
local function max_diff(a, b) return (a:astype("float64") - b:astype("float64")):abs():max():item() end

-- calls(name, fn): fn() run with gpu.fused[name] counted; the count
local function calls(name, fn)
  local real, n = F[name], 0
  F[name] = function(...) n = n + 1; return real(...) end
  local ok, err = pcall(fn)
  F[name] = real
  if not ok then error(err, 0) end
  return n
end

for _, dev in ipairs(h.devices()) do
  describe("fused optimizer steps on " .. dev .. " equal the array ops", function()
    for _, dt in ipairs { "float32", "float64" } do
      local tol = dt == "float32" and 1e-5 or 1e-12
      for _, shape in ipairs { { 3, 5 }, { 200, 300 } } do
        for _, c in ipairs(cases) do
          it(("%s, %s (%d x %d), 10 steps"):format(describe_case(c), dt, shape[1], shape[2]), function()
            gpu.random.seed(5)
            local o = { dtype = dt, device = dev }
            local p0 = gpu.random.randn(shape, o)
            local grads = {}
            for s = 1, 10 do grads[s] = gpu.random.randn(shape, o) * (s % 3 == 0 and 0.01 or 1) end
            local pf, pa = p0:copy():requires_grad(), p0:copy():requires_grad()
            local opts_a = { fused = false }
            for k, v in pairs(c[2]) do opts_a[k] = v end
            local of, oa = optim[c[1]]({ pf }, c[2]), optim[c[1]]({ pa }, opts_a)
            local n = calls(FUSED[c[1]], function()
              for s = 1, 10 do
                pf:set_grad(grads[s]:copy()); pa:set_grad(grads[s]:copy())
                of:step(); oa:step()
              end
            end)
            assert.equal(10, n)                          -- the fused kernel ran for pf only
            assert.equal(dt, pf.dtype)
            local d = max_diff(pf, pa)
            assert(d <= tol * 10, ("max |p_fused - p_ops| = %g"):format(d))
            h.assert_close(pf, pa, tol)
            local sf, sa = of.state[1], oa.state[1]
            for k, v in pairs(sa) do
              if type(v) == "userdata" then
                h.assert_close(sf[k], v, tol)
              else
                assert.is_true(math.abs(sf[k] - v) <= 1e-15 * (1 + math.abs(v)), k)
              end
            end
            for k in pairs(sf) do assert.is_not_nil(sa[k], k) end
          end)
        end
      end
    end
  end)
end

describe("fused optimizer steps: routing", function()
  it("take the kernel for float parameters and the array ops for others, as fused = true/false say", function()
    local function one(name, dtype, opts)
      local p = gpu.ones(4, { dtype = dtype }):requires_grad()
      p:set_grad(gpu.full({ 4 }, 0.5, { dtype = dtype }))
      local opt = optim[name]({ p }, opts)
      return calls(FUSED[name], function() opt:step() end), p
    end
    for name in pairs(FUSED) do
      assert.equal(1, (one(name, "float64")))
      assert.equal(0, (one(name, "float64", { fused = false })))
      assert.equal(1, (one(name, "float32", { fused = true })))
      local n, p = one(name, "float16")                    -- no fused kernel for half: the array ops
      assert.equal(0, n)
      assert.is_true(p:astype("float32"):lt(1):all():item(), name .. " took no step")
      h.fails({ "optim." .. name .. ":step", "fused = true takes float32 or float64", "the parameter is float16" },
        one, name, "float16", { fused = true })
      h.fails({ "optim." .. name, "option 'fused' must be a boolean, got integer 1" }, optim[name], { gpu.ones(2):requires_grad() },
        { fused = 1 })
    end
    -- a gradient of another dtype than its parameter: the array ops
    local p = gpu.ones(3, { dtype = "float32" }):requires_grad()
    p:set_grad(gpu.full({ 3 }, 0.5, { dtype = "float64" }))
    local opt = optim.Adamax({ p }, { lr = 0.1 })
    assert.equal(0, calls("adamax_", function() opt:step() end))
    h.fails({ "optim.Adamax:step", "the gradient is float64, the parameter float32" }, function()
      optim.Adamax({ p }, { fused = true }):step()
    end)
    -- SGD, Adam, AdamW and RMSprop take the option too
    for name, fn in pairs { SGD = "sgd_", Adam = "adam_", AdamW = "adam_", RMSprop = "rmsprop_" } do
      local q = gpu.ones(3, { dtype = "float64" }):requires_grad()
      q:set_grad(gpu.ones(3, { dtype = "float64" }))
      local o1, o2 = optim[name]({ q }, { lr = 0.1 }), optim[name]({ q }, { lr = 0.1, fused = false })
      assert.equal(1, calls(fn, function() o1:step() end), name)
      assert.equal(0, calls(fn, function() o2:step() end), name)
    end
  end)

  it("keep fused = false / true in the state dict's groups and load it back", function()
    local p = gpu.ones(3, { dtype = "float64" }):requires_grad()
    local opt = optim.NAdam({ p }, { fused = false })
    local sd = opt:state_dict()
    assert.equal(false, sd.param_groups[1].fused)
    local o2 = optim.NAdam({ p })
    assert.is_nil(o2.fused)
    o2:load_state_dict(sd)
    assert.equal(false, o2.fused)
  end)
end)

for _, dev in ipairs(h.devices()) do
  describe("gpu.fused optimizer steps on " .. dev, function()
    local o = { dtype = "float64", device = dev }
    local function arr(t) return gpu.array(t, o) end
    local P, G = { 0.5, -1.5, 2.0 }, { 0.25, 0.5, -1.0 }

    it("adagrad_ is one Adagrad step (lr_decay, weight_decay, maximize)", function()
      local p, g, s = arr(P), arr(G), arr { 0.1, 0.1, 0.1 }
      assert.equal(p, F.adagrad_(p, g, s, { lr = 0.2, lr_decay = 0.5, weight_decay = 0.1, eps = 1e-3, step = 3,
        maximize = true }))
      local clr = 0.2 / (1 + 2 * 0.5)
      for i = 1, 3 do
        local gi = -G[i] + 0.1 * P[i]
        local si = 0.1 + gi * gi
        h.assert_close(s[i], si, 1e-14)
        h.assert_close(p[i], P[i] - clr * gi / (math.sqrt(si) + 1e-3), 1e-14)
      end
    end)

    it("adadelta_ is one Adadelta step", function()
      local p, g, sq, acc = arr(P), arr(G), arr { 0.2, 0.3, 0.4 }, arr { 0.01, 0.02, 0.03 }
      local sq0, acc0 = sq:totable(), acc:totable()
      F.adadelta_(p, g, sq, acc, { lr = 0.5, rho = 0.8, eps = 1e-4, weight_decay = 0.1 })
      for i = 1, 3 do
        local gi = G[i] + 0.1 * P[i]
        local s = 0.8 * sq0[i] + 0.2 * gi * gi
        local delta = math.sqrt(acc0[i] + 1e-4) / math.sqrt(s + 1e-4) * gi
        h.assert_close(sq[i], s, 1e-14)
        h.assert_close(acc[i], 0.8 * acc0[i] + 0.2 * delta * delta, 1e-14)
        h.assert_close(p[i], P[i] - 0.5 * delta, 1e-14)
      end
    end)

    it("adamax_ is one Adamax step (the infinity norm keeps the larger of b2 u and |g| + eps)", function()
      local p, g, m, u = arr(P), arr(G), arr { 0.1, -0.1, 0.2 }, arr { 1.0, 0.1, 0.5 }
      local m0, u0 = m:totable(), u:totable()
      F.adamax_(p, g, m, u, { lr = 0.1, beta1 = 0.8, beta2 = 0.9, eps = 1e-3, step = 2, maximize = true })
      for i = 1, 3 do
        local gi = -G[i]
        local mi = 0.8 * m0[i] + 0.2 * gi
        local ui = math.max(0.9 * u0[i], math.abs(gi) + 1e-3)
        h.assert_close(m[i], mi, 1e-14)
        h.assert_close(u[i], ui, 1e-14)
        h.assert_close(p[i], P[i] - 0.1 / (1 - 0.8 ^ 2) * mi / ui, 1e-14)
      end
    end)

    it("nadam_ is one NAdam step; mu_product defaults to the product of mu_1..mu_step", function()
      local function mu(t) return 0.9 * (1 - 0.5 * 0.96 ^ (t * 0.004)) end
      local prod = mu(1) * mu(2) * mu(3)
      local p, g, m, v = arr(P), arr(G), arr { 0.1, -0.1, 0.2 }, arr { 0.01, 0.02, 0.03 }
      local m0, v0 = m:totable(), v:totable()
      F.nadam_(p, g, m, v, { lr = 0.01, weight_decay = 0.1, step = 3, mu_product = prod })
      for i = 1, 3 do
        local gi = G[i] + 0.1 * P[i]
        local mi, vi = 0.9 * m0[i] + 0.1 * gi, 0.999 * v0[i] + 0.001 * gi * gi
        local denom = math.sqrt(vi / (1 - 0.999 ^ 3)) + 1e-8
        local want = P[i] - 0.01 * (1 - mu(3)) / (1 - prod) * gi / denom
          - 0.01 * mu(4) / (1 - prod * mu(4)) * mi / denom
        h.assert_close(p[i], want, 1e-13)
      end
      local q, m2, v2 = arr(P), arr { 0.1, -0.1, 0.2 }, arr { 0.01, 0.02, 0.03 }
      F.nadam_(q, g, m2, v2, { lr = 0.01, weight_decay = 0.1, step = 3 })
      h.assert_close(q, p, 1e-15)
    end)

    it("radam_ is one RAdam step, rectified or not", function()
      local function step(t)
        local p, g, m, v = arr(P), arr(G), arr { 0.1, -0.1, 0.2 }, arr { 0.01, 0.02, 0.03 }
        F.radam_(p, g, m, v, { lr = 0.1, beta1 = 0.8, beta2 = 0.9, step = t })
        local bc1, bc2 = 1 - 0.8 ^ t, 1 - 0.9 ^ t
        local rho_inf = 2 / 0.1 - 1
        local rho_t = rho_inf - 2 * t * 0.9 ^ t / bc2
        for i = 1, 3 do
          local mi, vi = 0.8 * ({ 0.1, -0.1, 0.2 })[i] + 0.2 * G[i], 0.9 * ({ 0.01, 0.02, 0.03 })[i] + 0.1 * G[i] ^ 2
          local want
          if rho_t > 5 then
            local r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            want = P[i] - 0.1 * r * math.sqrt(bc2) / bc1 * mi / (math.sqrt(vi) + 1e-8)
          else
            want = P[i] - 0.1 / bc1 * mi
          end
          h.assert_close(p[i], want, 1e-13)
        end
        return rho_t
      end
      assert.is_true(step(5) <= 5)
      assert.is_true(step(6) > 5)
    end)

    it("refuse wrong arguments with errors naming the function, leaving the arrays as they were", function()
      local f32 = { device = dev }
      local p, g, s1, s2 = gpu.ones(4, f32), gpu.ones(4, f32), gpu.zeros(4, f32), gpu.zeros(4, f32)
      local two = { "adadelta_", "adamax_", "nadam_", "radam_" }
      -- fails(pieces, name, p, g, sa, sb, opts): gpu.fused[name] called straight from pcall (so
      -- that the error can name it) with its state arrays (adagrad_ has one)
      local function fails(pieces, name, pp, gg, sa, sb, o)
        if name == "adagrad_" then return h.fails(pieces, F[name], pp, gg, sa, o) end
        return h.fails(pieces, F[name], pp, gg, sa, sb, o)
      end
      local function typed(dt) return gpu.ones(4, { dtype = dt, device = dev }) end
      for _, name in ipairs { "adagrad_", "adadelta_", "adamax_", "nadam_", "radam_" } do
        local fname = "fused." .. name
        fails({ fname, "gradient is float64, expected float32" }, name, p, g:astype("float64"), s1, s2)
        fails({ fname, "gradient has shape (2,), expected (4,)" }, name, p, gpu.ones(2, f32), s1, s2)
        fails({ fname, "has shape (3,), expected (4,)" }, name, p, g, gpu.zeros(3, f32), s2)
        fails({ fname, "is float64, expected float32 like the parameter" }, name, p, g,
          gpu.zeros(4, { dtype = "float64", device = dev }), s2)
        fails({ fname, "gpu.array expected, got nil" }, name, p, g, nil, s2)
        fails({ fname, "must be float32 or float64, got int32" }, name, typed("int32"), typed("int32"),
          typed("int32"), typed("int32"))
        fails({ fname, "must be float32 or float64, got float16" }, name, typed("float16"), typed("float16"),
          typed("float16"), typed("float16"))
        fails({ fname, "the parameter must be contiguous" }, name, gpu.ones({ 2, 2 }, f32).T,
          gpu.ones({ 2, 2 }, f32), gpu.zeros({ 2, 2 }, f32), gpu.zeros({ 2, 2 }, f32))
        fails({ fname, "unknown option 'lrr'; did you mean 'lr'?" }, name, p, g, s1, s2, { lrr = 1 })
        fails({ fname, "option 'lr' must be >= 0" }, name, p, g, s1, s2, { lr = -1 })
        fails({ fname, "option 'lr' must be finite" }, name, p, g, s1, s2, { lr = math.huge })
        fails({ fname, "option 'eps' must be" }, name, p, g, s1, s2, { eps = "small" })
      end
      h.fails({ "fused.adadelta_", "gpu.array expected, got nil" }, F.adadelta_, p, g, s1, nil)
      for _, name in ipairs(two) do
        h.fails({ "fused." .. name, "gpu.array expected, got table" }, F[name], p, g, s1, { lr = 1 })
      end
      h.fails({ "fused.adagrad_", "option 'step' must be >= 1, got integer 0" }, F.adagrad_, p, g, s1, { step = 0 })
      h.fails({ "fused.adagrad_", "unknown option 'initial_accumulator_value'" }, F.adagrad_, p, g, s1,
        { initial_accumulator_value = 1 })
      h.fails({ "fused.adadelta_", "option 'rho' must be <= 1" }, F.adadelta_, p, g, s1, s2, { rho = 1.5 })
      h.fails({ "fused.adamax_", "option 'beta2' must be < 1, got integer 1" }, F.adamax_, p, g, s1, s2, { beta2 = 1 })
      h.fails({ "fused.adamax_", "option 'maximize' must be a boolean" }, F.adamax_, p, g, s1, s2, { maximize = 1 })
      h.fails({ "fused.nadam_", "option 'mu_product' must be < 1" }, F.nadam_, p, g, s1, s2, { mu_product = 1 })
      h.fails({ "fused.nadam_", "option 'momentum_decay' must be >= 0" }, F.nadam_, p, g, s1, s2, { momentum_decay = -1 })
      h.fails({ "fused.nadam_", "unknown option 'maximize'" }, F.nadam_, p, g, s1, s2, { maximize = true })
      h.fails({ "fused.nadam_", "option 'mu_product' is needed past step 1000000" }, F.nadam_, p, g, s1, s2,
        { step = 2000000 })
      h.fails({ "fused.radam_", "option 'step' must be an integer" }, F.radam_, p, g, s1, s2, { step = 1.5 })
      h.fails({ "fused.radam_", "unknown option 'maximize'" }, F.radam_, p, g, s1, s2, { maximize = true })
      h.assert_close(p, { 1, 1, 1, 1 })
      h.assert_close(s1, { 0, 0, 0, 0 })
      h.assert_close(s2, { 0, 0, 0, 0 })
      if dev ~= "cpu" then
        h.fails({ "fused.adamax_", "is on cpu but the parameter is on " .. dev }, F.adamax_, p, g, gpu.zeros(4), s2)
      end
    end)
  end)
end
