-- gpu.optim.adaptive: the adaptive-rate optimizers Adagrad, Adadelta, Adamax, NAdam and
-- RAdam (torch.optim's rules); gpu.optim loads it and exports each class.
--
--   local opt = gpu.optim.Adagrad(model:parameters(), {lr = 0.01})
--   local opt = gpu.optim.NAdam({{params = enc:parameters()}, {params = head:parameters(), lr = 1e-2}})
--
-- Each update(group, p, g, st) reads its options from the parameter group and keeps its
-- state in st (PyTorch's state names: sum, square_avg, acc_delta, exp_avg, exp_inf,
-- exp_avg_sq, mu_product, step). A float32/float64 contiguous parameter takes one fused
-- kernel (gpu.fused.adagrad_ ...: one pass over p, its gradient and state); any other the
-- array ops below, which compute the same rule (fused = false: the array ops always).
local gpu = require "gpu"

return function(def)
  local class, nonneg, betas_ok, use_fused, fused_key = def.class, def.nonneg, def.betas_ok, def.use_fused,
    def.fused_key
  local fused = gpu.fused
  local out = {}
  local function lr_key(default) return { type = "number", min = 0, default = default } end
  local maximize = { type = "boolean", default = false }
  local betas = { type = "table", default = { 0.9, 0.999 }, check = betas_ok }
  local eps = function(default) return { type = "number", min = 0, default = default } end

  -- the gradient with maximize and (coupled) weight decay applied: a new array or g itself
  local function grad_of(h, p, g)
    if h.maximize then g = -g end
    if h.weight_decay ~= 0 then g = g + p * h.weight_decay end
    return g
  end

  -- Adagrad(params, {lr = 0.01, lr_decay = 0, weight_decay = 0, initial_accumulator_value = 0,
  -- eps = 1e-10, maximize = false})
  out.Adagrad = class("Adagrad", { lr = lr_key(0.01), lr_decay = nonneg, weight_decay = nonneg,
    initial_accumulator_value = nonneg, eps = eps(1e-10), maximize = maximize, fused = fused_key },
    function(h, p, g, st)
      if st.sum == nil then st.sum, st.step = gpu.full_like(p, h.initial_accumulator_value), 0 end
      st.step = st.step + 1
      if use_fused("Adagrad", h, p, g) then
        fused.adagrad_(p, g, st.sum, { lr = h.lr, lr_decay = h.lr_decay, weight_decay = h.weight_decay, eps = h.eps,
          step = st.step, maximize = h.maximize })
        return
      end
      g = grad_of(h, p, g)
      local clr = h.lr / (1 + (st.step - 1) * h.lr_decay)
      st.sum:add_(g:square())
      p:sub_((g / st.sum:sqrt():add_(h.eps)):mul_(clr))
    end)

  -- Adadelta(params, {lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0, maximize = false})
  out.Adadelta = class("Adadelta", { lr = lr_key(1.0), rho = { type = "number", min = 0, max = 1, default = 0.9 },
    eps = eps(1e-6), weight_decay = nonneg, maximize = maximize, fused = fused_key },
    function(h, p, g, st)
      if st.square_avg == nil then st.square_avg, st.acc_delta, st.step = gpu.zeros_like(p), gpu.zeros_like(p), 0 end
      st.step = st.step + 1
      if use_fused("Adadelta", h, p, g) then
        fused.adadelta_(p, g, st.square_avg, st.acc_delta, { lr = h.lr, rho = h.rho, eps = h.eps,
          weight_decay = h.weight_decay, maximize = h.maximize })
        return
      end
      g = grad_of(h, p, g)
      local rho = h.rho
      st.square_avg:mul_(rho):add_(g:square():mul_(1 - rho))
      local std = (st.square_avg + h.eps):sqrt()
      local delta = (st.acc_delta + h.eps):sqrt():div_(std):mul_(g)
      st.acc_delta:mul_(rho):add_(delta:square():mul_(1 - rho))
      p:sub_(delta:mul_(h.lr))
    end)

  -- Adamax(params, {lr = 2e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0, maximize = false})
  out.Adamax = class("Adamax", { lr = lr_key(2e-3), betas = betas, eps = eps(1e-8), weight_decay = nonneg,
    maximize = maximize, fused = fused_key },
    function(h, p, g, st)
      if st.exp_avg == nil then st.exp_avg, st.exp_inf, st.step = gpu.zeros_like(p), gpu.zeros_like(p), 0 end
      st.step = st.step + 1
      local b1, b2 = h.betas[1], h.betas[2]
      if use_fused("Adamax", h, p, g) then
        fused.adamax_(p, g, st.exp_avg, st.exp_inf, { lr = h.lr, beta1 = b1, beta2 = b2, eps = h.eps,
          weight_decay = h.weight_decay, step = st.step, maximize = h.maximize })
        return
      end
      g = grad_of(h, p, g)
      st.exp_avg:mul_(b1):add_(g * (1 - b1))
      st.exp_inf:mul_(b2):maximum_(g:abs():add_(h.eps))
      local clr = h.lr / (1 - b1 ^ st.step)
      p:sub_((st.exp_avg / st.exp_inf):mul_(clr))
    end)

  -- NAdam(params, {lr = 2e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0,
  -- momentum_decay = 4e-3}): Dozat's rule as PyTorch 2 computes it (mu_product_next =
  -- mu_product * mu_next; PyTorch 1.13 multiplied mu in twice there, a bug fixed since).
  out.NAdam = class("NAdam", { lr = lr_key(2e-3), betas = betas, eps = eps(1e-8), weight_decay = nonneg,
    momentum_decay = { type = "number", min = 0, default = 4e-3 }, fused = fused_key },
    function(h, p, g, st)
      if st.exp_avg == nil then
        st.exp_avg, st.exp_avg_sq, st.step, st.mu_product = gpu.zeros_like(p), gpu.zeros_like(p), 0, 1.0
      end
      st.step = st.step + 1
      local t, b1, b2 = st.step, h.betas[1], h.betas[2]
      local mu = b1 * (1 - 0.5 * 0.96 ^ (t * h.momentum_decay))
      st.mu_product = st.mu_product * mu
      if use_fused("NAdam", h, p, g) then
        fused.nadam_(p, g, st.exp_avg, st.exp_avg_sq, { lr = h.lr, beta1 = b1, beta2 = b2, eps = h.eps,
          weight_decay = h.weight_decay, momentum_decay = h.momentum_decay, step = t, mu_product = st.mu_product })
        return
      end
      g = grad_of(h, p, g)
      local bc2 = 1 - b2 ^ t
      local mu_next = b1 * (1 - 0.5 * 0.96 ^ ((t + 1) * h.momentum_decay))
      local mu_product_next = st.mu_product * mu_next
      st.exp_avg:mul_(b1):add_(g * (1 - b1))
      st.exp_avg_sq:mul_(b2):add_(g:square():mul_(1 - b2))
      local denom = (st.exp_avg_sq / bc2):sqrt():add_(h.eps)
      p:sub_((g / denom):mul_(h.lr * (1 - mu) / (1 - st.mu_product)))
      p:sub_((st.exp_avg / denom):mul_(h.lr * mu_next / (1 - mu_product_next)))
    end)

  -- RAdam(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0})
  out.RAdam = class("RAdam", { lr = lr_key(1e-3), betas = betas, eps = eps(1e-8), weight_decay = nonneg,
    fused = fused_key },
    function(h, p, g, st)
      if st.exp_avg == nil then st.exp_avg, st.exp_avg_sq, st.step = gpu.zeros_like(p), gpu.zeros_like(p), 0 end
      st.step = st.step + 1
      local t, b1, b2 = st.step, h.betas[1], h.betas[2]
      if use_fused("RAdam", h, p, g) then
        fused.radam_(p, g, st.exp_avg, st.exp_avg_sq, { lr = h.lr, beta1 = b1, beta2 = b2, eps = h.eps,
          weight_decay = h.weight_decay, step = t })
        return
      end
      g = grad_of(h, p, g)
      st.exp_avg:mul_(b1):add_(g * (1 - b1))
      st.exp_avg_sq:mul_(b2):add_(g:square():mul_(1 - b2))
      local bc1, bc2 = 1 - b1 ^ t, 1 - b2 ^ t
      local rho_inf = 2 / (1 - b2) - 1
      local rho_t = rho_inf - 2 * t * b2 ^ t / bc2
      if rho_t > 5 then
        local rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        local adaptive = st.exp_avg_sq:sqrt():add_(h.eps)
        p:sub_((st.exp_avg / adaptive):mul_(h.lr * rect * math.sqrt(bc2) / bc1))
      else
        p:sub_(st.exp_avg * (h.lr / bc1))
      end
    end)

  return out
end
