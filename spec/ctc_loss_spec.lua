-- spec/ctc_loss_spec.lua — nn.ctc_loss / nn.CTCLoss (lua/gpu/nn/losses.lua) against
-- torch.nn.functional.ctc_loss (spec/fixtures/ctc_loss.lua, made by
-- spec/fixtures/ctc_loss.py): values and gradients with respect to log_probs, then
-- gradcheck in float64 and misuse.
local h = require "spec.helper"
local gpu = h.gpu
local nn = gpu.nn
local F = dofile("spec/fixtures/ctc_loss.lua")

local function near(want, got, what, tol)
  tol = tol or 1e-10
  assert.equal(#want, #got, what)
  for i = 1, #want do
    local w, g = want[i], got[i]
    if w ~= w then
      assert(g ~= g, ("%s[%d]: %.17g, torch nan"):format(what, i, g))
    elseif w == math.huge then
      assert.equal(w, g, ("%s[%d]"):format(what, i))
    else
      assert(math.abs(w - g) <= tol * math.max(1, math.abs(w)), ("%s[%d]: %.17g, torch %.17g"):format(what, i, g, w))
    end
  end
end

local function inputs(c, dev)
  local lp = gpu.array(c.lp, { dtype = "float64", device = dev }):reshape(table.unpack(c.shape)):requires_grad()
  local tg = gpu.array(c.targets, { dtype = "int64", device = dev }):reshape(table.unpack(c.tshape))
  return lp, tg
end

for _, dev in ipairs(h.devices()) do
  describe("nn.ctc_loss on " .. dev, function()
    for _, c in ipairs(F) do
      it(c.name .. ": loss and gradient as torch's", function()
        local lp, tg = inputs(c, dev)
        local opts = { blank = c.blank, reduction = c.reduction, zero_infinity = c.zero_infinity }
        local loss = nn.ctc_loss(lp, tg, c.il, c.tl, opts)
        assert.equal("float64", loss.dtype)
        assert.equal(dev, loss.device)
        assert.equal(c.reduction == "none" and #c.shape == 3 and 1 or 0, loss.ndim)
        near(c.loss, loss:reshape(-1):totable(), c.name .. " loss")
        loss:sum():backward()
        near(c.grad, lp.grad:reshape(-1):totable(), c.name .. " gradient")
        -- the module, and the lengths as arrays
        local lp2 = lp:detach()
        local il = type(c.il) == "table" and gpu.array(c.il, { dtype = "int64" }) or c.il
        local tl = type(c.tl) == "table" and gpu.array(c.tl, { dtype = "int32" }) or c.tl
        near(c.loss, nn.CTCLoss(opts)(lp2, tg, il, tl):reshape(-1):totable(), c.name .. " module")
        assert.equal(nn.ctc_loss, nn.functional.ctc_loss)
      end)
    end

    it("passes gradcheck in float64 through a log_softmax", function()
      local g = gpu.random.Generator(5)
      local x = g:normal(0, 1, { 6, 2, 4 }, { dtype = "float64", device = dev })
      local tg = gpu.array({ { 2, 2, 3 }, { 4, 1, 1 } }, { dtype = "int64", device = dev })
      local tg4 = gpu.array({ { 1, 1, 3 }, { 3, 2, 2 } }, { dtype = "int64", device = dev })
      for _, r in ipairs({ "mean", "sum", "none" }) do
        local ok, msg = gpu.autograd.gradcheck(function(z)
          return nn.ctc_loss(nn.log_softmax(z, 3), tg, { 6, 5 }, { 3, 1 }, { blank = 1, reduction = r })
        end, { x })
        assert(ok, msg)
        ok, msg = gpu.autograd.gradcheck(function(z)
          return nn.ctc_loss(nn.log_softmax(z, 3), tg4, { 6, 4 }, { 2, 1 }, { blank = 4, reduction = r })
        end, { x })
        assert(ok, msg)
      end
    end)
  end)
end

describe("nn.ctc_loss", function()
  it("refuses misuse by name", function()
    local lp = nn.log_softmax(gpu.zeros(5, 2, 3), 3)
    local tg = gpu.array({ { 2, 3 }, { 3, 3 } })
    local cases = {
      { function() return nn.ctc_loss(lp, tg, { 5, 5 }, { 2, 2 }, { blank = 4 }) end, "blank 4 is not a class of 3" },
      { function() return nn.ctc_loss(lp, tg, { 5, 5 }, { 2, 2 }, { blanc = 1 }) end, "unknown option 'blanc'" },
      { function() return nn.ctc_loss(lp, tg, { 5, 5 }, { 2, 2 }, { reduction = "avg" }) end, "reduction" },
      { function() return nn.ctc_loss(lp, tg, { 5, 5 }, { 2, 2 }, { zero_infinity = 1 }) end, "zero_infinity" },
      { function() return nn.ctc_loss(lp, tg, { 5, 5 }, { 2, 2 }, {}, 1) end, "bad argument #6 to 'nn.ctc_loss'" },
      { function() return nn.ctc_loss(gpu.zeros(5, 3, 2, 1), tg, { 5 }, { 2 }) end, "(T, N, C) or (T, C)" },
      { function() return nn.ctc_loss(gpu.zeros(5, 2, 3, { dtype = "int32" }), tg, { 5, 5 }, { 2, 2 }) end,
        "log_probs must be a float array" },
      { function() return nn.ctc_loss(lp, "ab", { 5, 5 }, { 2, 2 }) end, "bad argument #2 to 'nn.ctc_loss'" },
      { function() return nn.ctc_loss(lp, tg, { 5, 6 }, { 2, 2 }) end, "input_lengths[2] must be a whole number in 0..5" },
      { function() return nn.ctc_loss(lp, tg, { 5 }, { 2, 2 }) end, "input_lengths must hold 2 lengths" },
      { function() return nn.ctc_loss(lp, tg, 5, { 2, 2 }) end, "input_lengths must be an array or a list" },
      { function() return nn.ctc_loss(lp, tg, { 5, 5 }, { 2, 1.5 }) end, "target_lengths[2] must be a whole number" },
      { function() return nn.ctc_loss(lp, tg, { 5, 5 }, { 2, 3 }) end, "target_lengths[2] = 3 is longer than" },
      { function() return nn.ctc_loss(lp, gpu.array({ 2, 3, 3 }), { 5, 5 }, { 2, 2 }) end, "add up to 4" },
      { function() return nn.ctc_loss(lp, gpu.array({ { 2, 4 }, { 3, 3 } }), { 5, 5 }, { 2, 2 }) end,
        "targets must be class numbers in 1..3, got 4" },
      { function() return nn.ctc_loss(lp, gpu.array({ { 2, 1 }, { 3, 3 } }), { 5, 5 }, { 2, 2 }) end,
        "targets hold the blank (1) in sample 1" },
      { function() return nn.ctc_loss(lp, gpu.zeros(2, 2, 2), { 5, 5 }, { 2, 2 }) end, "(N, S) padded or 1-d" },
      { function() return nn.CTCLoss{ blank = 0 } end, "blank" },
      { function() return nn.CTCLoss()(lp, tg, { 5, 5 }, { 2, 9 }) end, "CTCLoss" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(c[1])
      assert.is_false(ok, c[2])
      assert.matches(c[2], err, 1, true)
    end
  end)
end)
