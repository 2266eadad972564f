-- spec/amp_spec.lua — mixed precision: gpu.autocast (half-precision matmul with float32
-- master weights, gradients through the casts), gpu.optim.GradScaler (dynamic loss
-- scaling: skip on inf/NaN, back off, grow), model:fit{precision =}, and
-- examples/mixed_precision.lua --small as a subprocess.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local optim = gpu.optim

local BIN = os.getenv("GPULUA_BIN") or "./gpulua"

-- half-precision tolerances (relative + absolute, see h.close): bf16 keeps 8 bits, fp16 11
local TOL = { bfloat16 = 2e-2, float16 = 4e-3 }

describe("mixed precision", function()
  for _, dev in ipairs(h.devices()) do
    describe("on " .. dev, function()
      local function randn(...) return gpu.randn({ ... }, { device = dev }) end

      describe("autocast", function()
        it("computes matmul in the half dtype inside, float32 outside, restores after", function()
          gpu.random.seed(1)
          local a, b = randn(8, 32), randn(32, 5)
          local ref = a:matmul(b)
          for _, name in ipairs { "bf16", "bfloat16", "fp16", "float16" } do
            local d = (name:find("b") and "bfloat16" or "float16")
            local inside, y1, y2, y3 = gpu.autocast(name, function(k)
              assert.equal(7, k)
              return gpu.amp.get_autocast_dtype(), a:matmul(b), gpu.matmul(a, b), gpu.dot(a, b)
            end, 7)
            assert.equal(d, inside)
            for _, y in ipairs { y1, y2, y3 } do
              assert.equal("float32", y.dtype)
              h.assert_close(y, ref, TOL[d])
            end
            -- the half computation is visible: bf16 operands round, so the product differs
            if d == "bfloat16" then assert.is_true((y1 - ref):abs():max():item() > 0) end
            -- equals the explicit cast-matmul-cast
            h.assert_close(y1, a:astype(d):matmul(b:astype(d)):astype("float32"), 0)
            assert.is_nil(gpu.amp.get_autocast_dtype())
            assert.is_false(gpu.amp.is_autocast_enabled())
            assert.equal(0, (a:matmul(b) - ref):abs():max():item())
          end
        end)

        it("nests, and float32 turns it off inside", function()
          local seen = {}
          gpu.autocast("fp16", function()
            seen[1] = gpu.amp.get_autocast_dtype()
            gpu.autocast("bf16", function() seen[2] = gpu.amp.get_autocast_dtype() end)
            seen[3] = gpu.amp.get_autocast_dtype()
            gpu.autocast("float32", function() seen[4] = gpu.amp.get_autocast_dtype() or "off" end)
            seen[5] = gpu.amp.get_autocast_dtype()
          end)
          assert.same({ "float16", "bfloat16", "float16", "off", "float16" }, seen)
          assert.is_nil(gpu.amp.get_autocast_dtype())
        end)

        it("restores the previous state after an error and re-raises it", function()
          local ok, err = pcall(gpu.autocast, "bf16", function()
            gpu.autocast("fp16", function() error("inner failure") end)
          end)
          assert.is_false(ok)
          assert.matches("inner failure", err)
          assert.is_nil(gpu.amp.get_autocast_dtype())
          ok, err = gpu.autocast("fp16", function()
            local ok2, e2 = pcall(gpu.autocast, "bf16", function() error("x") end)
            return gpu.amp.get_autocast_dtype(), e2
          end)
          assert.equal("float16", ok)
          -- a shape error inside still names matmul and the fault
          local a = randn(2, 3)
          ok, err = pcall(gpu.autocast, "bf16", function() return a:matmul(randn(4, 2)) end)
          assert.is_false(ok)
          assert.matches("matmul", err)
          assert.matches("do not align", err)
          assert.is_nil(gpu.amp.get_autocast_dtype())
          assert.same({ 2, 3 }, a.shape)
          assert.equal("float32", a.dtype)
        end)

        it("rejects bad dtype names and a missing function", function()
          for _, bad in ipairs { "int8", "float64", "half-ish", 3, true } do
            local ok, err = pcall(gpu.autocast, bad, function() end)
            assert.is_false(ok)
            assert.matches("autocast: unknown precision", err)
          end
          local ok, err = pcall(gpu.autocast, "bf16")
          assert.is_false(ok)
          assert.matches("autocast: a function expected", err)
          assert.is_nil(gpu.amp.get_autocast_dtype())
        end)

        it("leaves elementwise ops, reductions and non-float matmuls alone", function()
          local a = randn(4, 4)
          local r = gpu.autocast("bf16", function()
            return { (a * 3):sum(), a:exp(), gpu.ones({ 2, 2 }, { dtype = "int32", device = dev }):matmul(
              gpu.ones({ 2, 2 }, { dtype = "int32", device = dev })) }
          end)
          assert.equal("float32", r[1].dtype)
          assert.equal((a * 3):sum():item(), r[1]:item())
          h.assert_close(r[2], a:exp(), 0)
          assert.equal("int32", r[3].dtype)
        end)

        it("gradients reach float32 parameters (matmul, Linear, Dense)", function()
          gpu.random.seed(2)
          local x = randn(6, 10)
          for _, d in ipairs { "bfloat16", "float16" } do
            -- gpu.matmul with a leaf weight: the casts are recorded
            local w = randn(10, 3):requires_grad()
            local loss = gpu.autocast(d, function() return (x:matmul(w)):square():sum() end)
            assert.equal("float32", loss.dtype)
            loss:backward()
            assert.equal("float32", w.grad.dtype)
            local w32 = w:detach():requires_grad()
            x:matmul(w32):square():sum():backward()
            h.assert_close(w.grad, w32.grad, 5 * TOL[d])
            -- nn.Linear and nn.Dense: float32 weights, float32 grads close to float32 training
            gpu.random.seed(5)
            local lin = nn.Linear(10, 4):to(dev)
            gpu.random.seed(5)
            local ref = nn.Linear(10, 4):to(dev)
            local out = gpu.autocast(d, function() return lin(x) end)
            assert.equal("float32", out.dtype)
            out:square():sum():backward()
            ref(x):square():sum():backward()
            assert.equal("float32", lin.weight.dtype)
            assert.equal("float32", lin.weight.grad.dtype)
            assert.equal("float32", lin.bias.grad.dtype)
            h.assert_close(lin.weight.grad, ref.weight.grad, 5 * TOL[d])
            h.assert_close(lin.bias.grad, ref.bias.grad, 5 * TOL[d])
            local dense = nn.Dense(3, { input_shape = { 10 } }):to(dev)
            gpu.autocast(d, function() return dense(x) end):sum():backward()
            assert.equal("float32", dense.kernel.grad.dtype)
            h.assert_close(dense.kernel.grad, x:sum(1):reshape(10, 1):expand(10, 3), 5 * TOL[d])
          end
        end)
      end)

      describe("GradScaler", function()
        local function setup()
          local p = gpu.ones({ 3 }, { device = dev }):requires_grad()
          local opt = optim.SGD({ p }, { lr = 0.1 })
          return p, opt
        end

        it("scales the loss and unscales the gradients before the step", function()
          local p, opt = setup()
          local s = optim.GradScaler { init_scale = 1024 }
          assert.equal(1024, s:get_scale())
          local loss = (p * 2):sum()
          local scaled = s:scale(loss)
          assert.equal(1024 * 6, scaled:item())
          opt:zero_grad(); scaled:backward()
          assert.is_true(s:step(opt))
          s:update()
          h.assert_close(p:detach(), gpu.full({ 3 }, 1 - 0.2, { device = dev }), 1e-6)
          assert.equal(0, s.skipped)
          assert.equal(1024, s:get_scale())
        end)

        it("skips a step with an inf or NaN gradient and backs off the scale", function()
          for _, bad in ipairs { math.huge, 0 / 0 } do
            local p, opt = setup()
            local s = optim.GradScaler { init_scale = 2 ^ 16, backoff_factor = 0.25 }
            opt:zero_grad()
            s:scale((p * bad):sum()):backward()
            assert.is_false(s:step(opt))
            s:update()
            assert.equal(1, s.skipped)
            assert.equal(2 ^ 14, s:get_scale())
            h.assert_close(p:detach(), gpu.ones({ 3 }, { device = dev }), 0)   -- unchanged
            -- the next clean step runs
            opt:zero_grad()
            s:scale(p:sum()):backward()
            assert.is_true(s:step(opt))
            s:update()
            assert.equal(1, s.skipped)
            h.assert_close(p:detach(), gpu.full({ 3 }, 0.9, { device = dev }), 1e-6)
          end
        end)

        it("finds an inf in any of several gradients (one flag read per device)", function()
          for bad = 1, 3 do
            local ps = {}
            for i = 1, 3 do ps[i] = gpu.ones({ 2, i }, { device = dev }):requires_grad() end
            local opt = optim.SGD(ps, { lr = 0.1 })
            local s = optim.GradScaler { init_scale = 4 }
            local loss = ps[1]:sum() + ps[2]:sum() * 2 + ps[3]:sum() * 3
            loss = loss + (ps[bad] * math.huge):sum()
            opt:zero_grad(); s:scale(loss):backward()
            assert.is_false(s:step(opt), "inf in parameter " .. bad)
            s:update()
            assert.equal(1, s.skipped)
            opt:zero_grad(); s:scale(ps[1]:sum() + ps[2]:sum() + ps[3]:sum()):backward()
            assert.is_true(s:step(opt))
            h.assert_close(ps[3]:detach(), gpu.full({ 2, 3 }, 0.9, { device = dev }), 1e-6)
          end
        end)

        it("an fp16 overflow under autocast is caught and skipped", function()
          local w = gpu.full({ 4, 1 }, 1, { device = dev }):requires_grad()
          local x = gpu.full({ 2, 4 }, 100, { device = dev })
          local opt = optim.SGD({ w }, { lr = 0.01 })
          local s = optim.GradScaler { init_scale = 2 ^ 16 }
          local loss = gpu.autocast("fp16", function() return x:matmul(w):sum() end)
          opt:zero_grad(); s:scale(loss):backward()    -- 100 * 2 * 65536 overflows float16
          assert.is_false(s:step(opt))
          s:update()
          assert.equal(1, s.skipped)
          assert.equal(2 ^ 15, s:get_scale())
        end)

        it("grows the scale after growth_interval clean steps", function()
          local p, opt = setup()
          local s = optim.GradScaler { init_scale = 8, growth_factor = 2, growth_interval = 3 }
          local scales = {}
          for i = 1, 7 do
            opt:zero_grad(); s:scale(p:sum()):backward(); s:step(opt); s:update()
            scales[i] = s:get_scale()
          end
          assert.same({ 8, 8, 16, 16, 16, 32, 32 }, scales)
          -- an inf resets the count
          opt:zero_grad(); s:scale((p * math.huge):sum()):backward(); s:step(opt); s:update()
          assert.equal(16, s:get_scale())
          assert.equal(1, s.skipped)
          local sd = s:state_dict()
          local s2 = optim.GradScaler():load_state_dict(sd)
          assert.equal(16, s2:get_scale())
          assert.equal(1, s2.skipped)
        end)

        it("disabled, it passes through", function()
          local p, opt = setup()
          local s = optim.GradScaler { enabled = false }
          local loss = p:sum()
          assert.equal(loss, s:scale(loss))
          opt:zero_grad(); loss:backward()
          assert.is_true(s:step(opt)); s:update()
          assert.equal(1, s:get_scale())
        end)

        it("rejects bad options and arguments", function()
          local cases = {
            { { init_scale = -1 }, "'optim.GradScaler' (option 'init_scale' must be > 0, got integer -1)" },
            { { growth_factor = 0.5 }, "'optim.GradScaler' (option 'growth_factor' must be > 1, got number 0.5)" },
            { { backoff_factor = 2 }, "'optim.GradScaler' (option 'backoff_factor' must be < 1, got integer 2)" },
            { { growth_interval = 1.5 }, "'optim.GradScaler' (option 'growth_interval' must be an integer, got number 1.5)" },
            { { scale = 3 }, "'optim.GradScaler' (unknown option 'scale'" },
          }
          for _, c in ipairs(cases) do
            local ok, err = pcall(optim.GradScaler, c[1])
            assert.is_false(ok)
            assert.matches(c[2], err, 1, true)
          end
          local s = optim.GradScaler()
          local ok, err = pcall(s.scale, s, 3)
          assert.is_false(ok); assert.matches("bad argument #1 to 'GradScaler:scale' (loss: gpu.array expected", err, 1, true)
          ok, err = pcall(s.step, s, {})
          assert.is_false(ok); assert.matches("bad argument #1 to 'GradScaler:step' (an optimizer expected", err, 1, true)
          assert.equal(gpu.amp.GradScaler, optim.GradScaler)
        end)
      end)

      describe("fit{precision =}", function()
        local function problem()
          gpu.random.seed(3)
          local x = gpu.random.normal(0, 1, { 256, 2 }, { device = dev })
          local y = (x[{ ":", 1 }] + x[{ ":", 2 }]):gt(0):astype("int64") + 1
          local m = nn.Sequential { nn.Dense(16, { activation = "relu", input_shape = { 2 } }),
                                    nn.Dense(2, { activation = "softmax" }) }
          m:to(dev)
          m:compile { optimizer = optim.Adam(m:parameters(), { lr = 0.05 }),
                      loss = "sparse_categorical_crossentropy", metrics = { "accuracy" } }
          return m, x, y
        end

        for _, prec in ipairs { "bf16", "fp16" } do
          it(prec .. " converges, keeps float32 weights and reports skipped steps", function()
            local m, x, y = problem()
            local hist = m:fit(x, y, { epochs = 8, batch_size = 32, verbose = 0, precision = prec })
            assert.equal(8, #hist.loss)
            assert.is_true(hist.loss[8] < hist.loss[1])
            assert.is_true(hist.accuracy[8] > 0.9, "accuracy " .. hist.accuracy[8])
            assert.equal(8, #hist.skipped)
            assert.equal("number", type(hist.skipped_steps))
            for _, p in ipairs(m:parameters()) do assert.equal("float32", p.dtype) end
            if prec == "fp16" then
              assert.is_not_nil(m.grad_scaler)
              assert.equal(m.grad_scaler.skipped, hist.skipped_steps)
            end
            assert.is_nil(gpu.amp.get_autocast_dtype())
          end)
        end

        it("fp16 skips the steps whose gradients overflow and says so", function()
          local m, x, y = problem()
          -- a scale far above float16's range: the first steps overflow and back off
          m.grad_scaler = optim.GradScaler { init_scale = 2.0 ^ 40 }
          local lines = {}
          local write = io.write
          io.write = function(...) lines[#lines + 1] = table.concat({ ... }) end
          local ok, hist = pcall(m.fit, m, x, y, { epochs = 2, batch_size = 32, verbose = 2, precision = "fp16" })
          io.write = write
          assert.is_true(ok, hist)
          assert.is_true(hist.skipped_steps >= 1, "skipped " .. tostring(hist.skipped_steps))
          assert.equal(hist.skipped_steps, hist.skipped[1] + hist.skipped[2])
          assert.is_true(m.grad_scaler:get_scale() < 2.0 ^ 40)
          local out = table.concat(lines)
          assert.matches("skipped steps: " .. hist.skipped[1], out, 1, true)
          assert.is_true(hist.loss[2] == hist.loss[2])   -- no NaN in the reported loss
        end)

        it("rejects a bad precision", function()
          local m, x, y = problem()
          local ok, err = pcall(m.fit, m, x, y, { verbose = 0, precision = "int8" })
          assert.is_false(ok)
          assert.matches("fit: unknown precision 'int8'", err, 1, true)
          assert.is_nil(gpu.amp.get_autocast_dtype())
        end)
      end)

      it("examples/mixed_precision.lua --small runs", function()
        local p = assert(io.popen(("GPULUA_DEVICE=%s %s examples/mixed_precision.lua --small 2>&1; echo \"exit=$?\"")
          :format(dev, BIN), "r"))
        local out = p:read("a")
        p:close()
        assert.equal("0", out:match("exit=(%d+)%s*$"), out)
        assert.is_falsy(out:find("stack traceback"), out)
        assert.matches("autocast %+ GradScaler", out)
        assert.matches("skipped steps: %d+", out)
        assert.matches("fit{precision = \"bf16\"}", out, 1, true)
        if dev == "cpu" then assert.matches("emulated", out) end
        assert.matches("mixed_precision ok", out, 1, true)
      end)
    end)
  end
end)
