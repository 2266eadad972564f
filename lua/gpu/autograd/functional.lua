-- gpu.autograd.functional: torch.autograd.functional's jacobian, hessian, vjp, jvp, hvp and
-- vhp, over gpu.autograd.grad (reverse mode; jvp by the double-vjp trick). inputs is an array
-- or a list of arrays (then the results are lists); func takes them as its arguments and
-- returns an array or a list of arrays. The inputs are used as detached copies: func's
-- graph is its own, and nothing is accumulated into any .grad.
--
--   local J = gpu.autograd.functional.jacobian(function(x) return x:exp() end, x)  -- (n, n)
local gpu = require "gpu"
local options = require "gpu.options"
local autograd = require "gpu.autograd"

local raise, argerror, is_array, type_name = options.raise, options.argerror, options.is_array, options.type_name

local F = {}

-- the inputs as a list of detached arrays requiring grad, and whether they were one array
local function prepare(fname, inputs)
  local single = is_array(inputs)
  local list = single and { inputs } or inputs
  if type(list) ~= "table" or #list == 0 then
    argerror(fname, 2, "inputs must be an array or a non-empty list of arrays, got %s", type_name(inputs))
  end
  local out = {}
  for i, x in ipairs(list) do
    if not is_array(x) then argerror(fname, 2, "inputs[%d] is %s, not an array", i, type_name(x)) end
    if not x.dtype:match("float") and not x.dtype:match("complex") then
      argerror(fname, 2, "inputs[%d] is %s: differentiation needs floating-point inputs", i, x.dtype)
    end
    out[i] = x:detach():copy():requires_grad()
  end
  return out, single
end

-- func's outputs as a list, and whether it returned one array
local function outputs_of(fname, func, xs)
  local res = table.pack(autograd.enable_grad(func, table.unpack(xs)))
  local v = res[1]
  if res.n == 1 and is_array(v) then return { v }, true end
  local list = res.n > 1 and { table.unpack(res, 1, res.n) } or v
  if type(list) ~= "table" then raise("%s: func returned %s, not an array or a list of arrays", fname, type_name(v)) end
  for i, y in ipairs(list) do
    if not is_array(y) then raise("%s: func's output #%d is %s, not an array", fname, i, type_name(y)) end
  end
  return list, false
end

-- grads of outs (with grad_outputs vs) with respect to xs, zeros where unused
local function grads(outs, xs, vs, create)
  local used = {}
  for i, y in ipairs(outs) do if autograd.requires_grad(y) then used[#used + 1] = i end end
  local res = {}
  if #used > 0 then
    local o, g = {}, {}
    for k, i in ipairs(used) do o[k], g[k] = outs[i], vs[i] end
    res = autograd.grad(o, xs, { grad_outputs = g, create_graph = create, retain_graph = true, allow_unused = true })
  end
  local out = {}
  for i, x in ipairs(xs) do out[i] = res[i] or gpu.zeros_like(x) end
  return out
end

-- the gradients, with respect to wrt, of the arrays gs (a first derivative, recorded) along
-- vs: sum_i vs[i] . d gs[i] / d wrt (nil entries where nothing depends on wrt)
local function grad_along(gs, vs, wrt, create)
  local tracked, gv = {}, {}
  for i, gi in ipairs(gs) do
    if autograd.requires_grad(gi) then tracked[#tracked + 1] = gi; gv[#gv + 1] = vs[i] end
  end
  if #tracked == 0 then return {} end
  return autograd.grad(tracked, wrt, { grad_outputs = gv, create_graph = create, allow_unused = true })
end

local function vectors(fname, v, like, argn, what)
  if v == nil then
    for i, y in ipairs(like) do
      if y.size ~= 1 then
        raise("%s: %s is needed unless func's outputs have one element (output #%d has shape (%s))", fname, what, i,
          table.concat(y.shape, ","))
      end
    end
    local out = {}
    for i, y in ipairs(like) do out[i] = gpu.ones_like(y) end
    return out
  end
  local list = is_array(v) and { v } or v
  if type(list) ~= "table" or #list ~= #like then argerror(fname, argn, "%s must match func's %d outputs", what, #like) end
  for i, a in ipairs(list) do
    if not is_array(a) or options.shape_str(a.shape) ~= options.shape_str(like[i].shape) then
      argerror(fname, argn, "%s[%d] must have shape %s", what, i, options.shape_str(like[i].shape))
    end
  end
  return list
end

local OPTS = { create_graph = { type = "boolean", default = false }, strict = { type = "boolean", default = false } }
local function declare(name, extra, example)
  local keys = {}
  for k, v in pairs(OPTS) do keys[k] = v end
  for k, v in pairs(extra or {}) do keys[k] = v end
  return options.declare("autograd.functional." .. name, keys, { example = example })
end
local X = "gpu.ones(2, {dtype = 'float64'})"

local function give(list, single) if single then return list[1] end return list end

local VJP = declare("vjp", nil, "gpu.autograd.functional.vjp(function(x) return x:sum() end, " .. X .. ", nil, %s)")
-- vjp(func, inputs [, v] [, {create_graph}]) -> outputs, v^T J (one per input)
function F.vjp(func, inputs, v, opts)
  local fname = "autograd.functional.vjp"
  options.value(func, { type = "callable" }, fname, 1, "func")
  if type(v) == "table" and not is_array(v) and v[1] == nil and opts == nil then v, opts = nil, v end
  local o = VJP:check(opts, 4)
  local xs, single = prepare(fname, inputs)
  local outs, single_out = outputs_of(fname, func, xs)
  local vs = vectors(fname, v, outs, 3, "v")
  local g = grads(outs, xs, vs, o.create_graph)
  local shown = {}
  for i, y in ipairs(outs) do shown[i] = o.create_graph and y or y:detach() end
  return give(shown, single_out), give(g, single)
end

local JVP = declare("jvp", nil, "gpu.autograd.functional.jvp(function(x) return x * 2 end, " .. X .. ", " .. X .. ", %s)")
-- jvp(func, inputs [, v] [, {create_graph}]) -> outputs, J v (one per output); v one per
-- input (inputs of one element: ones by default)
function F.jvp(func, inputs, v, opts)
  local fname = "autograd.functional.jvp"
  options.value(func, { type = "callable" }, fname, 1, "func")
  if type(v) == "table" and not is_array(v) and v[1] == nil and opts == nil then v, opts = nil, v end
  local o = JVP:check(opts, 4)
  local xs, single = prepare(fname, inputs)
  local outs, single_out = outputs_of(fname, func, xs)
  local vs = vectors(fname, v, xs, 3, "v")
  -- J v = d/du (u^T J) v: the vjp with a dummy u, differentiated in u along v
  local us = {}
  for i, y in ipairs(outs) do us[i] = gpu.zeros_like(y):requires_grad() end
  local res = grad_along(grads(outs, xs, us, true), vs, us, o.create_graph)
  local out, shown = {}, {}
  for i, y in ipairs(outs) do
    out[i] = res[i] or gpu.zeros_like(y)
    shown[i] = o.create_graph and y or y:detach()
  end
  return give(shown, single_out), give(out, single_out)
end

local JAC = declare("jacobian", { vectorize = { type = "boolean", default = false },
  strategy = { choices = { "reverse-mode", "forward-mode" }, default = "reverse-mode" } },
  "gpu.autograd.functional.jacobian(function(x) return x * 2 end, " .. X .. ", %s)")
-- jacobian(func, inputs [, {create_graph}]) -> J of shape output.shape .. input.shape (lists
-- over outputs, then inputs, where either is a list), one vjp per output element
function F.jacobian(func, inputs, opts)
  local fname = "autograd.functional.jacobian"
  options.value(func, { type = "callable" }, fname, 1, "func")
  local o = JAC:check(opts, 3)
  local xs, single = prepare(fname, inputs)
  local outs, single_out = outputs_of(fname, func, xs)
  local result = {}
  for i, y in ipairs(outs) do
    local rows = {}
    for j = 1, #xs do rows[j] = {} end
    for e = 1, math.max(y.size, 0) do
      local onehot = gpu.zeros({ y.size }, { dtype = y.dtype, device = y.device })
      onehot[e] = 1
      local vs = {}
      for k, yy in ipairs(outs) do vs[k] = k == i and onehot:reshape(table.unpack(y.shape)) or gpu.zeros_like(yy) end
      local g = grads({ y }, xs, { vs[i] }, o.create_graph)
      for j = 1, #xs do rows[j][e] = g[j]:reshape(-1) end
    end
    local per_in = {}
    for j, x in ipairs(xs) do
      local shape = {}
      for _, n in ipairs(y.shape) do shape[#shape + 1] = n end
      for _, n in ipairs(x.shape) do shape[#shape + 1] = n end
      local m = y.size > 0 and gpu.stack(rows[j], 1) or gpu.zeros({ 0, x.size }, { dtype = x.dtype, device = x.device })
      per_in[j] = m:reshape(table.unpack(shape))
    end
    result[i] = give(per_in, single)
  end
  return give(result, single_out)
end

local HESS = declare("hessian", { vectorize = { type = "boolean", default = false },
  outer_jacobian_strategy = { choices = { "reverse-mode", "forward-mode" }, default = "reverse-mode" } },
  "gpu.autograd.functional.hessian(function(x) return (x * x):sum() end, " .. X .. ", %s)")
-- hessian(func, inputs [, {create_graph}]) -> H (input.shape .. input.shape; a list of lists
-- for several inputs) of a func with one scalar output
function F.hessian(func, inputs, opts)
  local fname = "autograd.functional.hessian"
  options.value(func, { type = "callable" }, fname, 1, "func")
  local o = HESS:check(opts, 3)
  local xs, single = prepare(fname, inputs)
  local gradient = function(...)
    local args = { ... }
    local outs = outputs_of(fname, func, args)
    if #outs ~= 1 or outs[1].size ~= 1 then raise("%s: func must return one array of one element", fname) end
    local g = grads(outs, args, { gpu.ones_like(outs[1]) }, true)
    return table.unpack(g)
  end
  return F.jacobian(function(...) return gradient(...) end, single and xs[1] or xs, { create_graph = o.create_graph })
end

local HVP = declare("hvp", nil, "gpu.autograd.functional.hvp(function(x) return (x * x):sum() end, " .. X .. ", " .. X .. ", %s)")
-- hvp(func, inputs, v [, {create_graph}]) -> func(inputs), H v; vhp -> func(inputs), v^T H
-- (the same for the symmetric Hessians of twice-differentiable funcs)
function F.hvp(func, inputs, v, opts)
  local fname = "autograd.functional.hvp"
  options.value(func, { type = "callable" }, fname, 1, "func")
  local o = HVP:check(opts, 4)
  local xs, single = prepare(fname, inputs)
  local outs = outputs_of(fname, func, xs)
  if #outs ~= 1 or outs[1].size ~= 1 then raise("%s: func must return one array of one element", fname) end
  local vs = vectors(fname, v, xs, 3, "v")
  local res = grad_along(grads(outs, xs, { gpu.ones_like(outs[1]) }, true), vs, xs, o.create_graph)
  local out = {}
  for i, x in ipairs(xs) do out[i] = res[i] or gpu.zeros_like(x) end
  return o.create_graph and outs[1] or outs[1]:detach(), give(out, single)
end
F.vhp = F.hvp

return options.count_all("autograd.functional.", F)
