-- gpu.optim.more: Rprop, ASGD and Adafactor (torch.optim's rules and state names) and Lion
-- (Keras's: torch.optim has none); gpu.optim loads it and exports each class.
--
--   local opt = gpu.optim.Rprop(model:parameters())
--   local opt = gpu.optim.Adafactor(model:parameters(), {lr = 1e-2})
--
-- Written with array ops (both devices, every float dtype); each update(group, p, g, st)
-- reads its options from the parameter group and keeps its state in st.
local gpu = require "gpu"

return function(def)
  local class, nonneg = def.class, def.nonneg
  local out = {}
  local function lr_key(default) return { type = "number", min = 0, default = default } end
  local maximize = { type = "boolean", default = false }
  local function pair_ok(lo, hi, what)
    return function(v)
      local a, b = v[1], v[2]
      local n = 0
      for _ in pairs(v) do n = n + 1 end
      if n ~= 2 or type(a) ~= "number" or type(b) ~= "number" then return false, "must be a table of two numbers" end
      if not (lo(a) and hi(b)) then return false, what end
      return true
    end
  end

  -- Rprop(params, {lr = 0.01, etas = {0.5, 1.2}, step_sizes = {1e-6, 50}, maximize = false}):
  -- each element's step grows by etas[2] while its gradient keeps its sign, shrinks by
  -- etas[1] when the sign flips (and that element does not move then); state prev,
  -- step_size, step
  out.Rprop = class("Rprop", { lr = lr_key(0.01),
    etas = { type = "table", default = { 0.5, 1.2 },
      check = pair_ok(function(a) return a > 0 and a < 1 end, function(b) return b > 1 end,
        "must be {etaminus, etaplus} with 0 < etaminus < 1 < etaplus") },
    step_sizes = { type = "table", default = { 1e-6, 50 },
      check = pair_ok(function(a) return a >= 0 end, function() return true end,
        "must be {min, max} with 0 <= min") },
    maximize = maximize },
    function(h, p, g, st)
      if st.prev == nil then st.prev, st.step_size, st.step = gpu.zeros_like(p), gpu.full_like(p, h.lr), 0 end
      st.step = st.step + 1
      if h.maximize then g = -g end
      local down, up = h.etas[1], h.etas[2]
      local s = (g * st.prev):sign()
      local factor = gpu.where(s:gt(0), gpu.full_like(p, up), gpu.where(s:lt(0), gpu.full_like(p, down), gpu.ones_like(p)))
      st.step_size:mul_(factor):maximum_(h.step_sizes[1]):minimum_(h.step_sizes[2])
      g = gpu.where(s:lt(0), 0, g):astype(p.dtype)
      p:sub_(g:sign():mul_(st.step_size))
      st.prev = g
    end)

  -- ASGD(params, {lr = 0.01, lambd = 1e-4, alpha = 0.75, t0 = 1e6, weight_decay = 0,
  -- maximize = false}): SGD with a decaying step eta = lr / (1 + lambd lr t)^alpha and the
  -- average ax of the iterates from step t0 on (st.ax; state eta, mu, ax, step)
  local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end
  out.ASGD = class("ASGD", { lr = lr_key(0.01), lambd = { type = "number", min = 0, default = 1e-4 },
    alpha = { type = "number", min = 0, default = 0.75 }, t0 = { type = "number", min = 0, default = 1e6 },
    weight_decay = nonneg, maximize = maximize },
    function(h, p, g, st)
      if st.ax == nil then st.ax, st.eta, st.mu, st.step = gpu.zeros_like(p), f32(h.lr), 1.0, 0 end
      st.step = st.step + 1
      if h.maximize then g = -g end
      if h.weight_decay ~= 0 then g = g + p * h.weight_decay end
      p:mul_(1 - h.lambd * st.eta)
      p:sub_(g * st.eta)
      if st.mu ~= 1 then st.ax:add_((p - st.ax):mul_(st.mu)) else st.ax = p:clone() end
      st.eta = f32(h.lr / (1 + h.lambd * h.lr * st.step) ^ h.alpha)
      st.mu = f32(1 / math.max(1, st.step - h.t0))
    end)

  -- Adafactor(params, {lr = 1e-2, beta2_decay = -0.8, eps = {false, 1e-3}, d = 1.0,
  -- weight_decay = 0, maximize = false}): PyTorch's Adafactor (no first moment; the second
  -- moment of a matrix kept as its row and column means, of a vector whole; the update
  -- clipped to RMS d and scaled by the parameter's RMS). eps[1] false (PyTorch's None): the
-- dtype's epsilon.
  -- State row_var, col_var (matrices and stacks of them) or variance (vectors), step.
  out.Adafactor = class("Adafactor", { lr = lr_key(1e-2),
    beta2_decay = { type = "number", max = 0, default = -0.8 },
    eps = { type = "table", default = { false, 1e-3 }, check = function(v)
      local e1, e2 = v[1], v[2]
      for k in pairs(v) do if k ~= 1 and k ~= 2 then return false, "must be {eps1, eps2}" end end
      if not ((not e1 or (type(e1) == "number" and e1 >= 0)) and type(e2) == "number" and e2 >= 0) then
        return false, "must be {eps1, eps2}: eps1 a number >= 0 or false (the dtype's epsilon), eps2 a number >= 0"
      end
      return true
    end },
    d = { type = "number", min = 1, default = 1.0 }, weight_decay = nonneg, maximize = maximize },
    function(h, p, g, st)
      local nd = p.ndim
      if st.step == nil then
        st.step = 0
        if nd > 1 then
          local rs, cs = { table.unpack(p.shape) }, { table.unpack(p.shape) }
          rs[nd], cs[nd - 1] = 1, 1
          st.row_var, st.col_var = gpu.zeros(rs, { dtype = p.dtype, device = p.device }),
            gpu.zeros(cs, { dtype = p.dtype, device = p.device })
        else
          st.variance = gpu.zeros_like(p)
        end
      end
      if h.maximize then g = -g end
      st.step = st.step + 1
      local t = st.step
      local eps1 = h.eps[1] or gpu.finfo(p.dtype).eps
      local beta = t ^ h.beta2_decay                  -- 1 - beta2_t
      local rho = math.min(h.lr, 1 / math.sqrt(t))
      local alpha = math.max(h.eps[2], p:norm():item() / math.sqrt(p.size)) * rho
      if h.weight_decay ~= 0 then p:mul_(1 - h.lr * h.weight_decay) end
      local v
      if nd > 1 then
        local g2 = g:square()
        local row = g2:mean(nd, { keepdims = true })
        local col = g2:mean(nd - 1, { keepdims = true })
        st.row_var:add_((row - st.row_var):mul_(beta))
        st.col_var:add_((col - st.col_var):mul_(beta))
        v = st.row_var:matmul(st.col_var):div_(st.row_var:mean(nd - 1, { keepdims = true }):maximum_(eps1))
      else
        st.variance:add_((g:square() - st.variance):mul_(beta))
        v = st.variance:clone()
      end
      local update = v:maximum_(eps1 * eps1):rsqrt_():mul_(g)
      local denom = math.max(1.0, update:norm():item() / (math.sqrt(update.size) * h.d))
      p:sub_(update:mul_(alpha / denom))
    end)

  def.state_shape(out.Adafactor, function(k, p)
    local shape, nd = { table.unpack(p.shape) }, p.ndim
    if k == "row_var" then shape[nd] = 1 elseif k == "col_var" then shape[nd - 1] = 1 end
    return shape
  end)

  -- Lion(params, {lr = 1e-3, betas = {0.9, 0.99}, weight_decay = 0}): Chen et al.'s sign
  -- momentum as Keras's: p -= lr (sign(beta1 m + (1 - beta1) g)), m = beta2 m + (1 - beta2) g,
  -- weight decay decoupled (p -= lr wd p, before the step); state exp_avg, step
  out.Lion = class("Lion", { lr = lr_key(1e-3),
    betas = { type = "table", default = { 0.9, 0.99 }, check = def.betas_ok }, weight_decay = nonneg,
    maximize = maximize },
    function(h, p, g, st)
      if st.exp_avg == nil then st.exp_avg, st.step = gpu.zeros_like(p), 0 end
      st.step = st.step + 1
      if h.maximize then g = -g end
      local b1, b2 = h.betas[1], h.betas[2]
      if h.weight_decay ~= 0 then p:mul_(1 - h.lr * h.weight_decay) end
      p:sub_((st.exp_avg * b1):add_(g * (1 - b1)):sign_():mul_(h.lr))
      st.exp_avg:mul_(b2):add_(g * (1 - b2))
    end)

  return out
end
