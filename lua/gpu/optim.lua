-- gpu.optim: SGD (momentum, Nesterov, weight decay), Adam, AdamW, RMSprop; Adagrad,
-- Adadelta, Adamax, NAdam, RAdam (optim/adaptive.lua), LBFGS (optim/lbfgs.lua); parameter
-- groups in each; the learning-rate schedules (optim/lr_scheduler.lua).
--
--   local opt = gpu.optim.Adam(model:parameters(), {lr = 1e-3})
--   opt:zero_grad(); loss:backward(); opt:step()
--   local opt = gpu.optim.SGD({{params = body:parameters()}, {params = head:parameters(), lr = 0.1}}, {lr = 0.01})
--
-- The update rules are PyTorch's (torch.optim). A float32/float64 contiguous parameter
-- is updated by one fused kernel (gpu.fused.sgd_/adam_/rmsprop_/adagrad_/adadelta_/
-- adamax_/nadam_/radam_: one pass over p, its gradient and state); any other goes through
-- in-place array ops (p:sub_, m:mul_ ...), which compute the same rule. The option
-- fused = false takes the array ops always; fused = true makes a parameter that cannot
-- take the kernel an error (default: the kernel where it can). A parameter without a
-- .grad is skipped. Steps record nothing on the autograd tape.

local gpu = require "gpu"
local autograd = require "gpu.autograd"
local options = require "gpu.options"

local is_array, raise, argerror, type_name = options.is_array, options.raise, options.argerror, options.type_name

local optim = {}
local fused = gpu.fused
local fusable_dtype = { float32 = true, float64 = true }
-- p can take the fused step: a float contiguous array whose gradient matches it (nil and
-- why when not).
local function fusable(p, g)
  if not fusable_dtype[p.dtype] then return nil, ("the parameter is %s"):format(p.dtype) end
  if g.dtype ~= p.dtype then return nil, ("the gradient is %s, the parameter %s"):format(g.dtype, p.dtype) end
  if g.device ~= p.device then return nil, ("the gradient is on %s, the parameter on %s"):format(g.device, p.device) end
  if not p:is_contiguous() then return nil, "the parameter is not contiguous" end
  return true
end

-- use_fused(name, group, p, g): whether p's step goes through the fused kernel: where it
-- can, unless the group says fused = false; fused = true where it cannot is an error.
local function use_fused(name, group, p, g)
  if group.fused == false then return false end
  local ok, why = fusable(p, g)
  if ok then return true end
  if group.fused then
    raise("optim.%s:step: fused = true takes float32 or float64 contiguous parameters whose gradient has their "
      .. "dtype and device, but %s (shape %s)", name, why, options.shape_str(p.shape))
  end
  return false
end
-- the option every fusable optimizer declares: nil (the kernel where it can), true, false
local fused_key = { type = "boolean" }

local Optimizer = {}
Optimizer.__index = Optimizer
Optimizer.__name = "Optimizer"
optim.Optimizer = Optimizer

-- is_optimizer(v): v is an optimizer made by one of the classes here
local function is_optimizer(v) return type(v) == "table" and rawget(v, "params") ~= nil and rawget(v, "state") ~= nil end
optim.is_optimizer = is_optimizer
options.guard_methods(Optimizer, "Optimizer", "opt", is_optimizer)

-- The parameters of one list: arrays, a module (anything with :parameters()), or the
-- {name, array} pairs of named_parameters(); seen holds those of earlier groups.
local function param_list(fname, params, seen, where)
  if type(params) == "table" and type(params.parameters) == "function" then params = params:parameters() end
  if is_array(params) then params = { params } end                       -- PyTorch takes a lone tensor too
  if type(params) ~= "table" then
    argerror(fname, 1, "%sa list of parameters (or a module, or named_parameters()) expected, got %s", where,
      type_name(params))
  end
  local list = {}
  for i, p in ipairs(params) do
    if type(p) == "table" and not is_array(p) and p.params ~= nil then
      argerror(fname, 1, "%sparameter #%d is a parameter group: give either groups or parameters, not both", where, i)
    end
    if type(p) == "table" and is_array(p[2]) then p = p[2] end           -- {name, p} from named_parameters()
    if not is_array(p) then argerror(fname, 1, "%sparameter #%d is %s, expected gpu.array", where, i, type_name(p)) end
    if p:is_closed() then argerror(fname, 1, "%sparameter #%d is a closed array", where, i) end
    if seen[p] then argerror(fname, 1, "%sparameter #%d appears twice in the list", where, i) end
    seen[p], list[i] = true, p
  end
  return list
end

-- is_group(v): a parameter group {params = ..., <option> = ...}
local function is_group(v) return type(v) == "table" and not is_array(v) and rawget(v, "params") ~= nil end

-- The groups of params: {{params = list, opts = the group's own options}, ...}; one group
-- (no options of its own) for a plain list.
local function group_specs(fname, params)
  local seen, specs = {}, {}
  if type(params) == "table" and not is_array(params) and is_group(params[1]) then
    for gi, g in ipairs(params) do
      if not is_group(g) then
        argerror(fname, 1, "entry #%d is %s, expected a parameter group {params = ..., <option> = ...} like entry #1",
          gi, type_name(g))
      end
      local own = {}
      for k, v in pairs(g) do if k ~= "params" then own[k] = v end end
      specs[gi] = { params = param_list(fname, g.params, seen, ("parameter group #%d: "):format(gi)), opts = own }
    end
  else
    specs[1] = { params = param_list(fname, params, seen, ""), opts = {} }
  end
  local n = 0
  for _, s in ipairs(specs) do n = n + #s.params end
  if n == 0 then
    raise("%s: the optimizer was given no parameters (%s; build or call the model first)", fname,
      type(params) == "table" and next(params) == nil and "an empty list" or "a table with no list part")
  end
  return specs
end

-- opts with Keras's learning_rate taken as lr (argn: the table's argument position).
local function lr_alias(fname, opts, argn)
  if type(opts) ~= "table" or rawget(opts, "learning_rate") == nil then return opts end
  if rawget(opts, "lr") ~= nil then argerror(fname, argn, "options 'lr' and 'learning_rate' both given (they are one option)") end
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  o.lr, o.learning_rate = o.learning_rate, nil
  return o
end

-- The options of a construction: PyTorch's positional learning rate Opt(params, 1e-3 [, opts])
-- or an options table; checked against the class's declaration.
local function construction_options(cls, fname, lr, opts)
  if type(lr) == "table" and opts == nil then return cls.decl:check(lr_alias(fname, lr, 2), 2) end
  opts = lr_alias(fname, opts, 3)
  if lr ~= nil then
    options.value(lr, cls.decl.keys.lr, fname, 2, "lr")
    if type(opts) == "table" and opts.lr ~= nil then argerror(fname, 3, "lr given twice") end
    local o = cls.decl:check(opts, 3)
    o.lr = lr
    return o
  end
  return cls.decl:check(opts, 3)
end

-- class -> function(fname, o): the rules between options (SGD's nesterov), raising
local rules = {}
-- class -> function(group, p, g, st): one parameter's step, the group's options as fields
local update_fn = {}
-- class -> function(group): options computed from others (LBFGS's max_eval)
local fills = {}

local function copy_value(v) return type(v) == "table" and { table.unpack(v) } or v end

-- A group's options: the defaults o, overridden by the group's own (checked) options.
local function group_options(cls, fname, o, own, gi)
  local given = cls.decl:check(own, 1, gi and ("%s (parameter group #%d)"):format(fname, gi) or fname)
  local group = {}
  for _, k in ipairs(cls.hyper) do
    if own[k] ~= nil then group[k] = copy_value(given[k]) else group[k] = copy_value(o[k]) end
  end
  if fills[cls] then fills[cls](group) end
  if rules[cls] then rules[cls](gi and ("%s (parameter group #%d)"):format(fname, gi) or fname, group) end
  return group
end

-- ---- optimizers waiting for their parameters ----------------------------------------------------

-- Opt{lr = ...} with options alone (Keras's keras.optimizers.Adam(learning_rate = ...)): an
-- optimizer without parameters yet, which compile{optimizer =} binds to the model's at its
-- first batch (bind turns this very table into the optimizer, so the caller's reference and
-- model.optimizer are it). Its options read and write as an optimizer's (opt.lr); its
-- methods say that it has no parameters yet.
local Unbound = options.class_table("Optimizer (unbound)")
local function is_unbound(v) return getmetatable(v) == Unbound end
optim.is_unbound = is_unbound

Unbound.__index = function(t, k)
  local cls, o = rawget(t, "_cls"), rawget(t, "_opts")
  if k == "learning_rate" then k = "lr" end
  if cls.hyper_set[k] then return o[k] end
  if k == "bind" then return Unbound.bind end
  if type(cls[k]) == "function" then
    return function()
      raise("optim.%s:%s: this optimizer has no parameters yet (made with options alone: give it to "
        .. "compile{optimizer =}, or make it with gpu.optim.%s(model:parameters(), opts))", cls.__name, k, cls.__name)
    end
  end
  return nil
end
Unbound.__newindex = function(t, k, v)
  local cls = rawget(t, "_cls")
  if k == "learning_rate" then k = "lr" end
  if not cls.hyper_set[k] then raise("optim.%s: '%s' is not an option of %s", cls.__name, tostring(k), cls.__name) end
  local given = {}
  for key, val in pairs(rawget(t, "_given")) do given[key] = val end
  given[k] = v
  local o = cls.decl:check(given, 1)            -- checked as a construction would
  rawset(t, "_given", given)
  rawset(t, "_opts", o)
end

-- bind(params): makes the optimizer over params in this table (an error when it was bound before).
function Unbound.bind(t, params)
  if not is_unbound(t) then raise("optim: this optimizer is already bound to parameters (give each model its own)") end
  local cls = rawget(t, "_cls")
  local real = cls(params, rawget(t, "_given"))
  setmetatable(t, nil)
  for k in pairs({ _cls = 1, _opts = 1, _given = 1 }) do rawset(t, k, nil) end
  for k, v in pairs(real) do rawset(t, k, v) end
  return setmetatable(t, getmetatable(real))
end

-- Whether construct's arguments are options alone: a table with keys, no list part, no
-- arrays among its values (a state_dict is no options), no parameters (an empty table stays
-- "no parameters", which says so).
local function options_alone(params, lr, opts)
  if lr ~= nil or opts ~= nil or type(params) ~= "table" or is_array(params) or getmetatable(params) ~= nil
    or rawget(params, 1) ~= nil or rawget(params, "params") ~= nil or next(params) == nil then
    return false
  end
  for _, v in pairs(params) do if is_array(v) then return false end end
  return true
end

local function construct(cls, params, lr, opts)
  local fname = "optim." .. cls.__name
  if options_alone(params, lr, opts) then
    local given = lr_alias(fname, params, 1)
    local o = cls.decl:check(given, 1)
    if rules[cls] then
      local group = {}
      for _, k in ipairs(cls.hyper) do group[k] = copy_value(o[k]) end
      if fills[cls] then fills[cls](group) end
      rules[cls](fname, group)
    end
    return setmetatable({ _cls = cls, _opts = o, _given = given }, Unbound)
  end
  local specs = group_specs(fname, params)
  local o = construction_options(cls, fname, lr, opts)
  local groups, flat = {}, {}
  for gi, s in ipairs(specs) do
    local g = group_options(cls, fname, o, s.opts, #specs > 1 and gi or nil)
    g.params = s.params
    for _, p in ipairs(s.params) do flat[#flat + 1] = p end
    groups[gi] = g
  end
  if cls.single_group and #groups > 1 then
    raise("%s: parameter groups are not supported (PyTorch's %s takes one group too)", fname, cls.__name)
  end
  local defaults = {}
  for _, k in ipairs(cls.hyper) do defaults[k] = copy_value(o[k]) end
  return setmetatable({ params = flat, state = {}, step_count = 0, param_groups = groups, defaults = defaults }, cls)
end

-- The option keys every optimizer shares.
local nonneg = { type = "number", min = 0, default = 0 }
local function betas_ok(v)
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  local ok = n == 2
  for i = 1, 2 do
    local b = v[i]
    ok = ok and type(b) == "number" and b >= 0 and b < 1
  end
  return ok, "must be a table of two numbers in [0, 1)"
end

-- class(name, keys [, update]): an optimizer class, called as Opt(params [, lr] [, opts])
-- or Opt({{params = ..., lr = ...}, {params = ...}} [, lr] [, opts]); keys declares its
-- hyper-parameters with their defaults (each group's options, what state_dict saves).
-- opt.<option> reads the first group's value, and setting it sets every group's.
local function class(name, keys, update)
  local cls = { __name = name }
  cls.decl = options.declare("optim." .. name, keys,
    { example = ("gpu.optim.%s({gpu.ones(2):requires_grad()}, %%s)"):format(name) })
  cls.hyper, cls.hyper_set = {}, {}
  for k, spec in pairs(keys) do
    if not spec.unsupported then cls.hyper[#cls.hyper + 1] = k; cls.hyper_set[k] = true end
  end
  table.sort(cls.hyper)
  cls.__index = function(t, k)
    local v = cls[k]
    if v ~= nil or not cls.hyper_set[k] then return v end
    local groups = rawget(t, "param_groups")
    return groups and groups[1] and groups[1][k]
  end
  cls.__newindex = function(t, k, v)
    local groups = rawget(t, "param_groups")
    if cls.hyper_set[k] and groups then
      for _, g in ipairs(groups) do g[k] = copy_value(v) end
    else
      rawset(t, k, v)
    end
  end
  update_fn[cls] = update
  setmetatable(cls, { __index = Optimizer, __call = construct })
  return options.guard_methods(cls, name, "opt", is_optimizer)
end

function Optimizer:zero_grad()
  for _, p in ipairs(self.params) do p:set_grad(nil) end
end

-- add_param_group{params = ..., <option> = ...}: one more group, the defaults for what it omits
function Optimizer:add_param_group(group)
  local cls = getmetatable(self)
  local fname = cls.__name .. ":add_param_group"
  if not is_group(group) then argerror(fname, 1, "a parameter group {params = ..., <option> = ...} expected, got %s",
    type_name(group)) end
  if cls.single_group then raise("%s: %s takes one parameter group", fname, cls.__name) end
  local seen = {}
  for _, p in ipairs(self.params) do seen[p] = true end
  local own = {}
  for k, v in pairs(group) do if k ~= "params" then own[k] = v end end
  local list = param_list(fname, group.params, seen, "")
  if #list == 0 then raise("%s: the group has no parameters", fname) end
  local g = group_options(cls, fname, self.defaults, own, #self.param_groups + 1)
  g.params = list
  self.param_groups[#self.param_groups + 1] = g
  for _, p in ipairs(list) do self.params[#self.params + 1] = p end
  return self
end

-- run_closure(closure): the closure's loss, computed with the tape on
local function run_closure(closure)
  local was = autograd.set_grad_enabled(true)
  local ok, loss = pcall(closure)
  autograd.set_grad_enabled(was)
  if not ok then error(loss, 0) end
  return loss
end

-- step([closure]): one step of every parameter with a gradient; with a closure (which
-- re-evaluates the model and returns the loss, as PyTorch's), it is called first (with
-- the tape on) and its loss returned.
function Optimizer:step(closure)
  local loss
  if closure ~= nil then
    if type(closure) ~= "function" and not (getmetatable(closure) or {}).__call then
      argerror(getmetatable(self).__name .. ":step", 1, "a closure (function) or nothing expected, got %s",
        type_name(closure))
    end
    loss = run_closure(closure)
  end
  self.step_count = self.step_count + 1
  local update = update_fn[getmetatable(self)]
  local was = autograd.set_grad_enabled(false)
  local ok, err = pcall(function()
    local i = 0
    for _, group in ipairs(self.param_groups) do
      for _, p in ipairs(group.params) do
        i = i + 1
        local g = p.grad
        if g ~= nil then
          local st = self.state[i]
          if st == nil then st = {}; self.state[i] = st end
          update(group, p, g, st)
        end
      end
    end
  end)
  autograd.set_grad_enabled(was)
  if not ok then error(err, 0) end
  return loss
end

-- state_dict(): PyTorch's layout: state keyed by parameter index (1-based, counted over the
-- groups in order), param_groups with each group's options and its parameters' indices;
-- and the step count. The arrays are the optimizer's own (copy them to keep a snapshot).
function Optimizer:state_dict()
  local cls = getmetatable(self)
  local groups, i = {}, 0
  for gi, g in ipairs(self.param_groups) do
    local c = { params = {} }
    for _, k in ipairs(cls.hyper) do c[k] = copy_value(g[k]) end
    if g.initial_lr ~= nil then c.initial_lr = g.initial_lr end
    for j = 1, #g.params do i = i + 1; c.params[j] = i end
    groups[gi] = c
  end
  local st = {}
  for k, s in pairs(self.state) do
    local c = {}
    for kk, v in pairs(s) do c[kk] = type(v) == "table" and not is_array(v) and { table.unpack(v) } or v end
    st[k] = c
  end
  return { step = self.step_count, param_groups = groups, state = st }
end

-- The state of parameter i from a checkpoint, its arrays copied or moved where the
-- parameter is (nil and why when it does not fit). cls.flat_state: the state's arrays are
-- flat (LBFGS), not of the parameter's shape; state_shape_fn[cls](k, p): the shape of state
-- k where it is not the parameter's (Adafactor's row and column statistics).
local state_shape_fn = setmetatable({}, { __mode = "k" })
local function loaded_state(cls, p, i, s)
  if type(s) ~= "table" then return nil, ("the state of parameter #%d is %s, not a table"):format(i, type_name(s)) end
  local c = {}
  for k, v in pairs(s) do
    if is_array(v) then
      local want = state_shape_fn[cls] and state_shape_fn[cls](k, p) or p.shape
      if not cls.flat_state and options.shape_str(v.shape) ~= options.shape_str(want) then
        return nil, ("%s of parameter #%d has shape %s, the parameter %s%s"):format(k, i, options.shape_str(v.shape),
          options.shape_str(p.shape), want ~= p.shape and (" (it should be " .. options.shape_str(want) .. ")") or "")
      end
      c[k] = v.device == p.device and v:copy() or v:to(p.device)
    elseif type(v) == "table" then
      local list = {}
      for j, a in ipairs(v) do list[j] = is_array(a) and (a.device == p.device and a:copy() or a:to(p.device)) or a end
      c[k] = list
    else
      c[k] = v
    end
  end
  return c
end

-- load_state_dict(sd): options, step count and state from state_dict(); all of it is
-- checked and copied before any is taken, so a bad one leaves the optimizer as it was.
function Optimizer:load_state_dict(sd)
  local cls = getmetatable(self)
  local fname = cls.__name .. ":load_state_dict"
  if type(sd) ~= "table" or type(sd.state) ~= "table" then
    argerror(fname, 1, "an optimizer state dict ({step =, param_groups =, state =}) expected, got %s", type_name(sd))
  end
  local sgroups = sd.param_groups or { {} }
  if type(sgroups) ~= "table" then argerror(fname, 1, "param_groups must be a list, got %s", type_name(sgroups)) end
  if #sgroups ~= #self.param_groups then
    raise("%s: the state dict has %d parameter groups, the optimizer %d", fname, #sgroups, #self.param_groups)
  end
  local new_groups = {}
  for gi, hp in ipairs(sgroups) do
    if type(hp) ~= "table" then raise("%s: parameter group #%d is %s, not a table", fname, gi, type_name(hp)) end
    local own = {}
    for k, v in pairs(hp) do if k ~= "params" and k ~= "initial_lr" then own[k] = v end end
    if hp.params ~= nil and (type(hp.params) ~= "table" or #hp.params ~= #self.param_groups[gi].params) then
      raise("%s: parameter group #%d has %s parameters, the optimizer's %d", fname, gi,
        type(hp.params) == "table" and tostring(#hp.params) or "no list of", #self.param_groups[gi].params)
    end
    local g = group_options(cls, fname, self.param_groups[gi], own, #sgroups > 1 and gi or nil)
    if hp.initial_lr ~= nil then
      g.initial_lr = options.value(hp.initial_lr, { type = "number", min = 0 }, fname, 1, "initial_lr")
    end
    new_groups[gi] = g
  end
  local step = options.value(sd.step, { type = "integer", min = 0, default = 0 }, fname, 1, "step")
  local state = {}
  for i, s in pairs(sd.state) do
    local p = math.type(i) == "integer" and self.params[i] or nil
    if p == nil then raise("%s: state for parameter #%s, which does not exist", fname, tostring(i)) end
    local c, why = loaded_state(cls, p, i, s)
    if c == nil then raise("%s: %s", fname, why) end
    state[i] = c
  end
  for gi, g in ipairs(new_groups) do
    local old = self.param_groups[gi]
    for k, v in pairs(g) do old[k] = v end
  end
  self.step_count, self.state = step, state
  return self
end

-- SGD(params, {lr = 0.01, momentum = 0, dampening = 0, weight_decay = 0, nesterov = false})
local SGD = class("SGD", { lr = { type = "number", min = 0, default = 0.01 }, momentum = nonneg,
  dampening = { type = "number", default = 0 }, weight_decay = nonneg,
  nesterov = { type = "boolean", default = false }, maximize = { type = "boolean", default = false },
  fused = fused_key })
optim.SGD = SGD
rules[SGD] = function(fname, o)
  if o.nesterov and (o.momentum <= 0 or o.dampening ~= 0) then
    raise("%s: nesterov momentum needs momentum > 0 and dampening = 0", fname)
  end
end
update_fn[SGD] = function(self, p, g, st)
  if use_fused("SGD", self, p, g) then
    local first = false
    if self.momentum ~= 0 and st.momentum_buffer == nil then
      st.momentum_buffer = gpu.zeros_like(p)
      first = true
    end
    fused.sgd_(p, g, st.momentum_buffer, { lr = self.lr, momentum = self.momentum, dampening = self.dampening,
      weight_decay = self.weight_decay, nesterov = self.nesterov, maximize = self.maximize, first = first })
    return
  end
  if self.maximize then g = -g end
  if self.weight_decay ~= 0 then g = g + p * self.weight_decay end
  if self.momentum ~= 0 then
    local buf = st.momentum_buffer
    if buf == nil then
      buf = g:copy()
      st.momentum_buffer = buf
    else
      buf:mul_(self.momentum):add_(g * (1 - self.dampening))
    end
    if self.nesterov then g = g + buf * self.momentum else g = buf end
  end
  p:sub_(g * self.lr)
end

-- Adam(params, {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0, amsgrad = false})
local function adam_update(self, p, g, st, decoupled)
  local b1, b2 = self.betas[1], self.betas[2]
  if use_fused(decoupled and "AdamW" or "Adam", self, p, g) then
    if st.exp_avg == nil then
      st.exp_avg, st.exp_avg_sq, st.step = gpu.zeros_like(p), gpu.zeros_like(p), 0
    end
    st.step = st.step + 1
    if self.amsgrad and st.max_exp_avg_sq == nil then st.max_exp_avg_sq = gpu.zeros_like(p) end
    fused.adam_(p, g, st.exp_avg, st.exp_avg_sq, self.amsgrad and st.max_exp_avg_sq or nil, { lr = self.lr,
      beta1 = b1, beta2 = b2, eps = self.eps, weight_decay = self.weight_decay, step = st.step,
      decoupled = decoupled, amsgrad = self.amsgrad, maximize = self.maximize })
    return
  end
  if self.maximize then g = -g end
  if self.weight_decay ~= 0 then
    if decoupled then p:mul_(1 - self.lr * self.weight_decay)
    else g = g + p * self.weight_decay end
  end
  local m, v = st.exp_avg, st.exp_avg_sq
  if m == nil then
    m = gpu.zeros_like(p)
    v = gpu.zeros_like(p)
    st.exp_avg, st.exp_avg_sq, st.step = m, v, 0
  end
  st.step = st.step + 1
  local t = st.step
  m:mul_(b1):add_(g * (1 - b1))
  v:mul_(b2):add_(g:square():mul_(1 - b2))
  local bc1 = 1 - b1 ^ t
  local bc2 = 1 - b2 ^ t
  local vv = v
  if self.amsgrad then
    if st.max_exp_avg_sq == nil then st.max_exp_avg_sq = v:copy() else st.max_exp_avg_sq:maximum_(v) end
    vv = st.max_exp_avg_sq
  end
  local denom = vv:sqrt():mul_(1 / math.sqrt(bc2)):add_(self.eps)
  p:sub_(m:div(denom):mul_(self.lr / bc1))
end

-- Adam's and AdamW's keys, with AdamW's weight decay default
local function adam_keys(weight_decay)
  return { lr = { type = "number", min = 0, default = 1e-3 },
           betas = { type = "table", default = { 0.9, 0.999 }, check = betas_ok },
           eps = { type = "number", min = 0, default = 1e-8 },
           weight_decay = { type = "number", min = 0, default = weight_decay },
           amsgrad = { type = "boolean", default = false }, maximize = { type = "boolean", default = false },
           fused = fused_key }
end
local Adam = class("Adam", adam_keys(0))
optim.Adam = Adam
update_fn[Adam] = function(self, p, g, st) adam_update(self, p, g, st, false) end

local AdamW = class("AdamW", adam_keys(1e-2))
optim.AdamW = AdamW
update_fn[AdamW] = function(self, p, g, st) adam_update(self, p, g, st, true) end

-- RMSprop(params, {lr = 0.01, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0, centered = false})
local RMSprop = class("RMSprop", { lr = { type = "number", min = 0, default = 0.01 },
  alpha = { type = "number", min = 0, default = 0.99 }, eps = { type = "number", min = 0, default = 1e-8 },
  weight_decay = nonneg, momentum = nonneg, centered = { type = "boolean", default = false },
  maximize = { unsupported = "RMSprop has no maximize here" }, fused = fused_key })
optim.RMSprop = RMSprop
update_fn[RMSprop] = function(self, p, g, st)
  local sq = st.square_avg
  if sq == nil then
    sq = gpu.zeros_like(p)
    st.square_avg = sq
    if self.momentum > 0 then st.momentum_buffer = gpu.zeros_like(p) end
    if self.centered then st.grad_avg = gpu.zeros_like(p) end
  end
  if use_fused("RMSprop", self, p, g) then
    fused.rmsprop_(p, g, sq, st.momentum_buffer, st.grad_avg, { lr = self.lr, alpha = self.alpha, eps = self.eps,
      weight_decay = self.weight_decay, momentum = self.momentum, centered = self.centered })
    return
  end
  if self.weight_decay ~= 0 then g = g + p * self.weight_decay end
  sq:mul_(self.alpha):add_(g:square():mul_(1 - self.alpha))
  local avg
  if self.centered then
    st.grad_avg:mul_(self.alpha):add_(g * (1 - self.alpha))
    avg = (sq - st.grad_avg:square()):sqrt():add_(self.eps)
  else
    avg = sq:sqrt():add_(self.eps)
  end
  if self.momentum > 0 then
    local buf = st.momentum_buffer
    buf:mul_(self.momentum):add_(g / avg)
    p:sub_(buf * self.lr)
  else
    p:sub_((g / avg):mul_(self.lr))
  end
end

-- Keras names (compile{optimizer = "adam"}), with Keras's default learning rates.
local keras_defaults = {
  sgd = function(params) return SGD(params, { lr = 0.01 }) end,
  adam = function(params) return Adam(params, { lr = 1e-3, eps = 1e-7 }) end,
  adamw = function(params) return AdamW(params, { lr = 1e-3, eps = 1e-7, weight_decay = 4e-3 }) end,
  rmsprop = function(params) return RMSprop(params, { lr = 1e-3, alpha = 0.9, eps = 1e-7 }) end,
}
optim.names = { "adam", "adamw", "rmsprop", "sgd" }
optim.keras_lr = { sgd = 0.01, adam = 1e-3, adamw = 1e-3, rmsprop = 1e-3 }     -- (the learning rates above)
-- by_name(name): a function params -> the optimizer Keras's name stands for, or nil
function optim.by_name(name)
  return type(name) == "string" and keras_defaults[string.lower(name)] or nil
end

-- ---- more optimizers (lua/gpu/optim/adaptive.lua, more.lua, lbfgs.lua) --------------------------------------

local def = { class = class, nonneg = nonneg, betas_ok = betas_ok, fills = fills, run_closure = run_closure,
              use_fused = use_fused, fused_key = fused_key,
              state_shape = function(cls, f) state_shape_fn[cls] = f end }
for _, part in ipairs { "gpu.optim.adaptive", "gpu.optim.more", "gpu.optim.lbfgs" } do
  for name, cls in pairs(require(part)(def)) do optim[name] = cls end
end

-- ---- schedules and loss scaling (lua/gpu/optim/) -------------------------------------------------

optim.lr_scheduler = require "gpu.optim.lr_scheduler"
for name, cls in pairs(optim.lr_scheduler) do
  if type(cls) == "table" then optim[name] = cls end
end
optim.GradScaler = require "gpu.optim.grad_scaler"
function optim.is_grad_scaler(v) return getmetatable(v) == optim.GradScaler end

-- gpu.optim.swa_utils (lua/gpu/optim/swa_utils.lua) builds on gpu.nn: loaded at first use
setmetatable(optim, { __index = function(t, k)
  if k ~= "swa_utils" then return nil end
  local m = require "gpu.optim.swa_utils"
  rawset(t, k, m)
  return m
end })

return options.count_all("optim.", optim)
