-- gpu.optim.lbfgs: LBFGS, PyTorch's L-BFGS (torch.optim.LBFGS, after minFunc) with its
-- optional strong-Wolfe line search; gpu.optim loads it and exports the class.
--
--   local opt = gpu.optim.LBFGS(model:parameters(), {lr = 1, line_search_fn = "strong_wolfe"})
--   opt:step(function()
--     opt:zero_grad()
--     local loss = loss_fn(model(x), y)
--     loss:backward()
--     return loss
--   end)
--
-- One group only (as PyTorch). The parameters are seen as one flat vector (their
-- gradients concatenated in order); the state (d, t, old_dirs, old_stps, ro, H_diag,
-- prev_flat_grad, prev_loss, func_evals, n_iter) is kept under the first parameter, as
-- PyTorch keys it.
local gpu = require "gpu"
local autograd = require "gpu.autograd"
local options = require "gpu.options"

local raise, argerror, type_name = options.raise, options.argerror, options.type_name

local function dot(a, b) return (a * b):sum():item() end
local function absmax(a) return a:abs():max():item() end

-- _cubic_interpolate: the minimum of the cubic through (x1, f1, g1), (x2, f2, g2) in bounds
local function cubic_interpolate(x1, f1, g1, x2, f2, g2, lo, hi)
  if lo == nil then
    if x1 <= x2 then lo, hi = x1, x2 else lo, hi = x2, x1 end
  end
  local d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
  local d2_square = d1 * d1 - g1 * g2
  if d2_square >= 0 then
    local d2 = math.sqrt(d2_square)
    local min_pos
    if x1 <= x2 then min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2)) end
    return math.min(math.max(min_pos, lo), hi)
  end
  return (lo + hi) / 2
end

-- _strong_wolfe(obj, x, t, d, f, g, gtd) -> f_new, g_new, t, evals (PyTorch's, line for line)
local function strong_wolfe(obj, x, t, d, f, g, gtd)
  local c1, c2, tolerance_change, max_ls = 1e-4, 0.9, 1e-9, 25
  local d_norm = absmax(d)
  g = g:copy()
  local f_new, g_new = obj(x, t, d)
  local evals = 1
  local gtd_new = dot(g_new, d)
  local t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
  local done, ls_iter = false, 0
  local bracket, bracket_f, bracket_g, bracket_gtd
  while ls_iter < max_ls do
    if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev) then
      bracket, bracket_f, bracket_g, bracket_gtd = { t_prev, t }, { f_prev, f_new }, { g_prev, g_new:copy() },
        { gtd_prev, gtd_new }
      break
    end
    if math.abs(gtd_new) <= -c2 * gtd then
      bracket, bracket_f, bracket_g, done = { t }, { f_new }, { g_new }, true
      break
    end
    if gtd_new >= 0 then
      bracket, bracket_f, bracket_g, bracket_gtd = { t_prev, t }, { f_prev, f_new }, { g_prev, g_new:copy() },
        { gtd_prev, gtd_new }
      break
    end
    local min_step, max_step = t + 0.01 * (t - t_prev), t * 10
    local tmp = t
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, min_step, max_step)
    t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new:copy(), gtd_new
    f_new, g_new = obj(x, t, d)
    evals = evals + 1
    gtd_new = dot(g_new, d)
    ls_iter = ls_iter + 1
  end
  if ls_iter == max_ls then
    bracket, bracket_f, bracket_g = { 0, t }, { f, f_new }, { g, g_new }
  end
  local insuf_progress = false
  local low, high = 1, 2
  if bracket_f[1] > bracket_f[#bracket_f] then low, high = 2, 1 end
  while not done and ls_iter < max_ls do
    if math.abs(bracket[2] - bracket[1]) * d_norm < tolerance_change then break end
    t = cubic_interpolate(bracket[1], bracket_f[1], bracket_gtd[1], bracket[2], bracket_f[2], bracket_gtd[2])
    local bmax, bmin = math.max(bracket[1], bracket[2]), math.min(bracket[1], bracket[2])
    local eps = 0.1 * (bmax - bmin)
    if math.min(bmax - t, t - bmin) < eps then
      if insuf_progress or t >= bmax or t <= bmin then
        if math.abs(t - bmax) < math.abs(t - bmin) then t = bmax - eps else t = bmin + eps end
        insuf_progress = false
      else
        insuf_progress = true
      end
    else
      insuf_progress = false
    end
    f_new, g_new = obj(x, t, d)
    evals = evals + 1
    gtd_new = dot(g_new, d)
    ls_iter = ls_iter + 1
    if f_new > f + c1 * t * gtd or f_new >= bracket_f[low] then
      bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new:copy(), gtd_new
      if bracket_f[1] <= bracket_f[2] then low, high = 1, 2 else low, high = 2, 1 end
    else
      if math.abs(gtd_new) <= -c2 * gtd then
        done = true
      elseif gtd_new * (bracket[high] - bracket[low]) >= 0 then
        bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] =
          bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low]
      end
      bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new:copy(), gtd_new
    end
  end
  return bracket_f[low], bracket_g[low], bracket[low], evals
end

return function(def)
  local LBFGS = def.class("LBFGS", {
    lr = { type = "number", min = 0, default = 1 },
    max_iter = { type = "integer", min = 1, default = 20 },
    max_eval = { type = "integer", min = 1 },
    tolerance_grad = { type = "number", min = 0, default = 1e-7 },
    tolerance_change = { type = "number", min = 0, default = 1e-9 },
    history_size = { type = "integer", min = 1, default = 100 },
    line_search_fn = { choices = { "strong_wolfe" } },
  })
  LBFGS.single_group, LBFGS.flat_state = true, true
  def.fills[LBFGS] = function(g) if g.max_eval == nil then g.max_eval = g.max_iter * 5 // 4 end end

  local function flat_grad(params)
    local views = {}
    for i, p in ipairs(params) do
      local g = p.grad
      views[i] = g ~= nil and g:reshape(-1) or gpu.zeros(p.size, { dtype = p.dtype, device = p.device })
    end
    return #views == 1 and views[1]:copy() or gpu.concat(views, 1)
  end
  local function add_grad(params, t, d)
    local off = 0
    for _, p in ipairs(params) do
      local n = p.size
      if n > 0 then p:add_(d[{ { off + 1, off + n } }]:reshape(p.shape) * t) end
      off = off + n
    end
  end

  -- step(closure) -> the closure's first loss
  function LBFGS:step(closure)
    local fname = "LBFGS:step"
    if type(closure) ~= "function" and not (getmetatable(closure) or {}).__call then
      argerror(fname, 1, "a closure (a function that computes the loss, calls backward and returns it) expected, got %s",
        type_name(closure))
    end
    local params = self.params
    for _, p in ipairs(params) do
      if p.device ~= params[1].device or p.dtype ~= params[1].dtype then
        raise("%s: every parameter must be on one device with one dtype (as PyTorch), got %s %s and %s %s", fname,
          params[1].device, params[1].dtype, p.device, p.dtype)
      end
    end
    local run = function() return def.run_closure(closure) end
    local function value(l)
      if options.is_array(l) then return l:item() end
      if type(l) == "number" then return l end
      raise("%s: the closure returned %s, not the loss (an array or a number)", fname, type_name(l))
    end
    local group = self.param_groups[1]
    local lr, max_iter, max_eval = group.lr, group.max_iter, group.max_eval
    local tol_grad, tol_change, history_size = group.tolerance_grad, group.tolerance_change, group.history_size
    local state = self.state[1]
    if state == nil then state = { func_evals = 0, n_iter = 0 }; self.state[1] = state end
    self.step_count = self.step_count + 1

    local orig_loss = run()
    local loss = value(orig_loss)
    local was = autograd.set_grad_enabled(false)
    local ok, err = pcall(function()
      local current_evals = 1
      state.func_evals = state.func_evals + 1
      local g = flat_grad(params)
      if absmax(g) <= tol_grad then return end
      local d, t = state.d, state.t
      local old_dirs, old_stps, ro = state.old_dirs, state.old_stps, state.ro
      local H_diag, prev_g, prev_loss = state.H_diag, state.prev_flat_grad, state.prev_loss
      local n_iter = 0
      while n_iter < max_iter do
        n_iter = n_iter + 1
        state.n_iter = state.n_iter + 1
        if state.n_iter == 1 then
          d = -g
          old_dirs, old_stps, ro, H_diag = {}, {}, {}, 1
        else
          local y = g - prev_g
          local s = d * t
          local ys = dot(y, s)
          if ys > 1e-10 then
            if #old_dirs == history_size then
              table.remove(old_dirs, 1); table.remove(old_stps, 1); table.remove(ro, 1)
            end
            old_dirs[#old_dirs + 1], old_stps[#old_stps + 1], ro[#ro + 1] = y, s, 1 / ys
            H_diag = ys / dot(y, y)
          end
          local al = {}
          local q = -g
          for i = #old_dirs, 1, -1 do
            al[i] = dot(old_stps[i], q) * ro[i]
            q:sub_(old_dirs[i] * al[i])
          end
          local r = q * H_diag
          for i = 1, #old_dirs do
            local be_i = dot(old_dirs[i], r) * ro[i]
            r:add_(old_stps[i] * (al[i] - be_i))
          end
          d = r
        end
        prev_g = g:copy()
        prev_loss = loss
        if state.n_iter == 1 then t = math.min(1, 1 / g:abs():sum():item()) * lr else t = lr end
        local gtd = dot(g, d)
        if gtd > -tol_change then break end
        local ls_evals = 0
        local opt_cond = false
        if group.line_search_fn == "strong_wolfe" then
          local x_init = {}
          for i, p in ipairs(params) do x_init[i] = p:copy() end
          local function obj(x, step, dir)
            add_grad(params, step, dir)
            autograd.set_grad_enabled(true)
            local okc, l = pcall(run)
            autograd.set_grad_enabled(false)
            if not okc then error(l, 0) end
            local fv = value(l)
            local fg = flat_grad(params)
            for i, p in ipairs(params) do p[{}] = x[i] end
            return fv, fg
          end
          loss, g, t, ls_evals = strong_wolfe(obj, x_init, t, d, loss, g, gtd)
          add_grad(params, t, d)
          opt_cond = absmax(g) <= tol_grad
        else
          add_grad(params, t, d)
          if n_iter ~= max_iter then
            autograd.set_grad_enabled(true)
            local okc, l = pcall(run)
            autograd.set_grad_enabled(false)
            if not okc then error(l, 0) end
            loss = value(l)
            g = flat_grad(params)
            opt_cond = absmax(g) <= tol_grad
            ls_evals = 1
          end
        end
        current_evals = current_evals + ls_evals
        state.func_evals = state.func_evals + ls_evals
        if n_iter == max_iter or current_evals >= max_eval or opt_cond then break end
        if absmax(d * t) <= tol_change then break end
        if math.abs(loss - prev_loss) < tol_change then break end
      end
      state.d, state.t, state.old_dirs, state.old_stps, state.ro = d, t, old_dirs, old_stps, ro
      state.H_diag, state.prev_flat_grad, state.prev_loss = H_diag, prev_g, prev_loss
    end)
    autograd.set_grad_enabled(was)
    if not ok then error(err, 0) end
    return orig_loss
  end
  return { LBFGS = LBFGS }
end
