-- gpu.nn.keras_functional: Keras's functional model building. nn.Input(shape) is a symbolic
-- tensor; calling a layer on symbolic tensors records the call and gives symbolic outputs
-- (their shapes found by running the layer once on zeros, in eval mode and without
-- recording: a layer that builds itself at its first call is built then); nn.Model(inputs,
-- outputs) is a module that replays the recorded calls on arrays, so compile, fit,
-- evaluate, predict, state_dict and save work on it as on any module.
--
--   local inputs = nn.Input({784})
--   local x = nn.Dense(64, "relu")(inputs)
--   local outputs = nn.Dense(10, "softmax")(x)
--   local model = nn.Model(inputs, outputs)
--
-- Also the layers that make graphs useful: Activation, Reshape, Permute, RepeatVector,
-- Lambda, Rescaling, and the merges Concatenate, Add, Subtract, Multiply, Average, Maximum,
-- Minimum, Dot (called on a list: nn.Add()({a, b})).
local gpu = require "gpu"
local options = require "gpu.options"
local module = require "gpu.nn.module"
local F = require "gpu.nn.functional"

local raise, argerror, type_name, shape_str, check_array = options.raise, options.argerror, options.type_name,
  options.shape_str, options.check_array
local class, is_module = module.class, module.is_module

local K = {}

-- ---- symbolic tensors -------------------------------------------------------------------------

local KT = options.class_table("KerasTensor")
KT.__index = KT
local function is_kt(v) return getmetatable(v) == KT end
K.is_keras_tensor = is_kt

local function shape_text(t)
  local parts = { t.batch_size and tostring(t.batch_size) or "None" }
  for _, n in ipairs(t.shape) do parts[#parts + 1] = tostring(n) end
  return "(" .. table.concat(parts, ", ") .. (#parts == 1 and ",)" or ")")
end
KT.__tostring = function(t)
  return ("<KerasTensor shape=%s, dtype=%s, name=%s>"):format(shape_text(t), t.dtype, t.name)
end

local counters = {}
local function unique(base)
  local n = counters[base]
  counters[base] = (n or 0) + 1
  return n == nil and base or ("%s_%d"):format(base, n)
end

local INPUT = options.declare("nn.Input", { dtype = { type = "dtype", default = "float32" },
  batch_size = { type = "integer", min = 1 }, name = { type = "string" } }, { example = "gpu.nn.Input({4}, %s)" })

local enable_symbolic          -- (below: module calls start looking for symbolic tensors)

-- Input(shape [, {dtype = "float32", batch_size, name}]): shape without the batch axis
function K.Input(shape, opts)
  if type(shape) ~= "table" or options.is_array(shape) then
    argerror("nn.Input", 1, "a shape (a list of sizes, without the batch) expected, got %s", type_name(shape))
  end
  for i, n in ipairs(shape) do
    if math.type(n) ~= "integer" or n < 0 then argerror("nn.Input", 1, "shape[%d] must be an integer >= 0, got %s", i, type_name(n)) end
  end
  local o = INPUT:check(opts, 2)
  -- from the first Input on, module calls look for symbolic tensors (before it, a layer
  -- call pays nothing for the functional API)
  enable_symbolic()
  return setmetatable({ shape = { table.unpack(shape) }, dtype = o.dtype, batch_size = o.batch_size,
                        name = o.name or unique("input_layer"), node = nil }, KT)
end

-- the dummy array standing for a symbolic tensor: zeros of batch 2 (or its batch size)
local function dummy(t)
  local shape = { t.batch_size or 2 }
  for _, n in ipairs(t.shape) do shape[#shape + 1] = n end
  return gpu.zeros(shape, { dtype = t.dtype })
end

-- args with symbolic tensors (or lists of them) replaced through f
local function map_args(args, f)
  local out = { n = args.n }
  for i = 1, args.n do
    local a = args[i]
    if is_kt(a) then out[i] = f(a)
    elseif type(a) == "table" and getmetatable(a) == nil and is_kt(a[1]) then
      local l = {}
      for j, x in ipairs(a) do
        if not is_kt(x) then raise("a list of symbolic tensors holds %s at %d", type_name(x), j) end
        l[j] = f(x)
      end
      out[i] = l
    else out[i] = a end
  end
  return out
end

local function has_kt(...)
  for i = 1, select("#", ...) do
    local a = select(i, ...)
    if is_kt(a) or (type(a) == "table" and getmetatable(a) == nil and is_kt(a[1])) then return true end
  end
  return false
end
K.has_keras_tensor = has_kt

-- a layer called on symbolic tensors: run once on dummies (eval, no recording), the
-- outputs made symbolic with a node {layer, args}
local function symbolic_call(layer, ...)
  local args = table.pack(...)
  local dummies = map_args(args, dummy)
  local modes = {}
  for _, m in ipairs(layer:modules()) do modes[m] = m.training; m.training = false end
  local res = table.pack(pcall(gpu.no_grad, function() return layer(table.unpack(dummies, 1, dummies.n)) end))
  for m, t in pairs(modes) do m.training = t end
  if not res[1] then
    local msg = tostring(res[2]):gsub("^lua/gpu/[%w_/]+%.lua:%d+: ", "")
    raise("%s called on symbolic tensors: %s", tostring(getmetatable(layer).__name), msg)
  end
  local node = { layer = layer, args = args }
  local outs = {}
  for i = 2, res.n do
    local y = res[i]
    if not options.is_array(y) then
      raise("%s called on symbolic tensors gave %s, not an array", tostring(getmetatable(layer).__name), type_name(y))
    end
    local shape = {}
    for d = 2, y.ndim do shape[#shape + 1] = y.shape[d] end
    outs[#outs + 1] = setmetatable({ shape = shape, dtype = y.dtype, node = node, index = i - 1,
      name = unique(module.display_name(layer):lower()) }, KT)
  end
  node.outputs = outs
  return table.unpack(outs)
end
enable_symbolic = function() module.has_symbolic, module.symbolic_call = has_kt, symbolic_call end

-- ---- Model ----------------------------------------------------------------------------------

local function snake(name) return (name:gsub("(%l)(%u)", "%1_%2"):gsub("(%u)(%u%l)", "%1_%2"):lower()) end

local MODEL = options.declare("nn.Model", { name = { type = "string" } },
  { example = "(function(o) local i = gpu.nn.Input({2}) return gpu.nn.Model(i, gpu.nn.Dense(1)(i), o) end)(%s)" })

local Model = class("Model")
K.Model = Model

local function kt_list(fname, argn, v, what)
  if is_kt(v) then return { v }, true end
  if type(v) ~= "table" or getmetatable(v) ~= nil or #v == 0 then
    argerror(fname, argn, "%s: a symbolic tensor (nn.Input or a layer's output) or a list of them expected, got %s",
      what, type_name(v))
  end
  for i, t in ipairs(v) do
    if not is_kt(t) then argerror(fname, argn, "%s[%d] is %s, not a symbolic tensor", what, i, type_name(t)) end
  end
  return { table.unpack(v) }, false
end

-- The graph as data (get_config; what to_json, save and load_model write): the inputs'
-- shapes, each call (its layer, its arguments with the symbolic tensors as numbers: the
-- inputs 1..#inputs, then each call's outputs in order) and the outputs' numbers.
function Model.get_config(self)
  local g = rawget(self, "_graph")
  local id, ins, nodes, outs = {}, {}, {}, {}
  for i, t in ipairs(g.inputs) do
    id[t] = i
    ins[i] = { shape = t.shape, dtype = t.dtype, batch_size = t.batch_size, name = t.name }
  end
  local next_id = #g.inputs
  local function arg_of(a)
    if is_kt(a) then return { tensor = id[a] } end
    if type(a) == "table" and getmetatable(a) == nil and is_kt(a[1]) then
      local l = {}
      for j, x in ipairs(a) do l[j] = id[x] end
      return { tensors = l }
    end
    return { value = a }
  end
  for k, node in ipairs(g.order) do
    local args = {}
    for i = 1, node.args.n do args[i] = arg_of(node.args[i]) end
    local o = {}
    for j, t in ipairs(node.outputs) do next_id = next_id + 1; id[t] = next_id; o[j] = next_id end
    nodes[k] = { layer = node.layer, args = args, nargs = node.args.n, outputs = o }
  end
  for i, t in ipairs(g.outputs) do outs[i] = id[t] end
  return { { graph = { inputs = ins, nodes = nodes, outputs = outs, single_in = g.single_in, single_out = g.single_out },
             name = self.name }, n = 1 }
end

-- Model{graph =, name =} (get_config's): the inputs made again and the calls replayed on them
local function replay(fname, config)
  local g = config.graph
  local bad = function(what) raise("%s: the saved graph %s", fname, what) end
  if type(g.inputs) ~= "table" or type(g.nodes) ~= "table" or type(g.outputs) ~= "table" then bad("is not a graph") end
  local tensor = {}
  for i, t in ipairs(g.inputs) do
    if type(t) ~= "table" or type(t.shape) ~= "table" then bad(("input %d has no shape"):format(i)) end
    tensor[i] = K.Input(t.shape, { dtype = t.dtype, batch_size = t.batch_size, name = t.name })
  end
  local function get(k)
    local t = tensor[k]
    if t == nil then bad(("names a tensor %s made by no earlier call"):format(tostring(k))) end
    return t
  end
  for k, node in ipairs(g.nodes) do
    if type(node) ~= "table" or not is_module(node.layer) or type(node.args) ~= "table" then bad(("call %d is not described"):format(k)) end
    local args = {}
    for i = 1, math.tointeger(node.nargs) or #node.args do
      local a = node.args[i]
      if type(a) ~= "table" then args[i] = nil
      elseif a.tensor ~= nil then args[i] = get(a.tensor)
      elseif a.tensors ~= nil then
        local l = {}
        for j, x in ipairs(a.tensors) do l[j] = get(x) end
        args[i] = l
      else args[i] = a.value end
    end
    local res = table.pack(node.layer(table.unpack(args, 1, math.tointeger(node.nargs) or #node.args)))
    for j, o in ipairs(type(node.outputs) == "table" and node.outputs or {}) do tensor[o] = res[j] end
  end
  local ins, outs = {}, {}
  for i = 1, #g.inputs do ins[i] = tensor[i] end
  for i, k in ipairs(g.outputs) do outs[i] = get(k) end
  return (g.single_in and #ins == 1) and ins[1] or ins, (g.single_out and #outs == 1) and outs[1] or outs
end

-- Model(inputs, outputs [, {name}]): inputs nn.Input tensors (one or a list), outputs
-- symbolic tensors computed from them
function Model:init(inputs, outputs, opts)
  local fname = "nn.Model"
  if outputs == nil and opts == nil and type(inputs) == "table" and getmetatable(inputs) == nil
      and type(inputs.graph) == "table" then                  -- get_config's form (load_model, model_from_json)
    opts = { name = inputs.name }
    inputs, outputs = replay(fname, inputs)
  end
  local ins, single_in = kt_list(fname, 1, inputs, "inputs")
  local outs, single_out = kt_list(fname, 2, outputs, "outputs")
  local o = MODEL:check(opts, 3)
  for i, t in ipairs(ins) do
    if t.node ~= nil then argerror(fname, 1, "inputs[%d] (%s) is a layer's output, not an nn.Input", i, t.name) end
  end
  -- the nodes in the order they were called (depth first from the outputs)
  local is_input, order, seen, visiting = {}, {}, {}, {}
  for _, t in ipairs(ins) do is_input[t] = true end
  local function visit(t)
    if is_input[t] then return end
    local node = t.node
    if node == nil then
      raise("%s: the outputs depend on the input %s, which is not among the model's inputs", fname, t.name)
    end
    if seen[node] then return end
    if visiting[node] then raise("%s: the graph has a cycle", fname) end
    visiting[node] = true
    for i = 1, node.args.n do
      local a = node.args[i]
      if is_kt(a) then visit(a)
      elseif type(a) == "table" and getmetatable(a) == nil and is_kt(a[1]) then for _, x in ipairs(a) do visit(x) end end
    end
    visiting[node] = nil
    seen[node] = true
    order[#order + 1] = node
  end
  for _, t in ipairs(outs) do visit(t) end
  -- each layer once, under Keras's names (its own name option, else the snake-cased class
  -- with a counter)
  local names, used, layer_list = {}, {}, {}
  for _, node in ipairs(order) do
    local layer = node.layer
    if names[layer] == nil then
      local base = type(rawget(layer, "name")) == "string" and layer.name or snake(module.display_name(layer))
      local name, k = base, 0
      while used[name] do k = k + 1; name = ("%s_%d"):format(base, k) end
      used[name], names[layer] = true, name
      layer_list[#layer_list + 1] = layer
      self:add_module(name, layer)
    end
  end
  rawset(self, "_graph", { inputs = ins, outputs = outs, order = order, names = names, layers = layer_list,
    single_in = single_in, single_out = single_out })
  self.name = o.name or unique("functional")
end

-- forward(x) / forward(x1, x2, ...) / forward({x1, x2}): the recorded calls replayed
function Model:forward(...)
  local g = rawget(self, "_graph")
  local fname = "nn.Model"
  local args = table.pack(...)
  local values = {}
  if args.n == 1 and type(args[1]) == "table" and getmetatable(args[1]) == nil then args = args[1]; args.n = #args end
  if args.n ~= #g.inputs then
    raise("%s: the model takes %d input%s, got %d", fname, #g.inputs, #g.inputs == 1 and "" or "s", args.n)
  end
  for i, t in ipairs(g.inputs) do
    local x = args[i]
    check_array(x, fname, i, "input " .. t.name)
    local ok = x.ndim == #t.shape + 1
    for d, n in ipairs(t.shape) do ok = ok and x.shape[d + 1] == n end
    if not ok then
      raise("%s: input %s expects shape %s, got %s", fname, t.name, shape_text(t), shape_str(x.shape))
    end
    values[t] = x
  end
  local masks = {}          -- Keras's step masks, by symbolic tensor (module.call_masked)
  for _, node in ipairs(g.order) do
    local a = map_args(node.args, function(t) return values[t] end)
    local src = node.args.n == 1 and is_kt(node.args[1]) and node.args[1] or nil
    local res
    if src ~= nil and (masks[src] ~= nil or node.layer.compute_mask ~= nil) then
      res, masks[node.outputs[1]] = module.call_masked(node.layer, a[1], masks[src])
    else
      res = table.pack(node.layer(table.unpack(a, 1, a.n)))
    end
    for i, t in ipairs(node.outputs) do values[t] = res[i] end
  end
  local out = {}
  for i, t in ipairs(g.outputs) do out[i] = values[t] end
  return table.unpack(out)
end

-- get_layer(name): the layer of that name (summary's first column)
function Model:get_layer(name)
  local g = rawget(self, "_graph")
  for layer, n in pairs(g.names) do if n == name then return layer end end
  raise("Model:get_layer: no layer named '%s'", tostring(name))
end

local SUMMARY = options.declare("Model:summary", { quiet = { type = "boolean", default = false } },
  { example = "(function(o) o.quiet = true; local i = gpu.nn.Input({2}) return gpu.nn.Model(i, gpu.nn.Dense(1)(i)):summary(o) end)(%s)" })

-- summary([{quiet}]): Keras's table: each layer's name (type), output shape, parameters
function Model:summary(opts)
  local o = SUMMARY:check(opts, 1)
  local g = rawget(self, "_graph")
  local rows = { { "Layer (type)", "Output Shape", "Param #" } }
  for _, t in ipairs(g.inputs) do rows[#rows + 1] = { ("%s (InputLayer)"):format(t.name), shape_text(t), "0" } end
  local total, shown = 0, {}
  for _, node in ipairs(g.order) do
    local layer = node.layer
    local n = 0
    if not shown[layer] then
      for _, p in ipairs(layer:parameters()) do n = n + p.size end
      total = total + n
    end
    shown[layer] = true
    local outs = {}
    for _, t in ipairs(node.outputs) do outs[#outs + 1] = shape_text(t) end
    rows[#rows + 1] = { ("%s (%s)"):format(g.names[layer], module.display_name(layer)), table.concat(outs, ", "), tostring(n) }
  end
  local text = module.summary_text(rows, total, ("Model: \"%s\""):format(self.name))
  if not o.quiet then print(text) end
  return text
end

function Model:repr() return ("Model(%s, %d layers)"):format(self.name, #rawget(self, "_graph").layers) end

-- ---- Keras's graph layers -------------------------------------------------------------------

local function simple(cname, keys, positional, init, forward, example, required)
  local cls = module.options_class(cname, keys, positional, init, forward, example, required)
  K[cname] = cls
  return cls
end

local name_key = { type = "string" }

-- Keras's activation names
local acts = {
  relu = F.relu, sigmoid = F.sigmoid, tanh = F.tanh, gelu = F.gelu, softplus = F.softplus,
  softmax = function(x) return F.softmax(x, -1) end, log_softmax = function(x) return F.log_softmax(x, -1) end,
  leaky_relu = F.leaky_relu, linear = function(x) return x end, exponential = function(x) return x:exp() end,
  softsign = function(x) return x / (x:abs() + 1) end, swish = function(x) return x * x:sigmoid() end,
  silu = function(x) return x * x:sigmoid() end, relu6 = function(x) return x:clip(0, 6) end,
  hard_sigmoid = function(x) return (x * (1 / 6) + 0.5):clip(0, 1) end,
  elu = function(x) return gpu.where(x:gt(0), x, x:minimum(0):expm1()) end,
  selu = function(x)
    return gpu.where(x:gt(0), x, x:minimum(0):expm1() * 1.6732632423543772) * 1.0507009873554805
  end,
  mish = function(x) return x * x:softplus():tanh() end,
}
local act_names = {}
for k in pairs(acts) do act_names[#act_names + 1] = k end
table.sort(act_names)

simple("Activation", { activation = { type = "string|callable", choices = act_names }, name = name_key }, { "activation" },
  function(self, o, fname)
    if o.activation == nil then raise("%s: an activation is required", fname) end
    self.fn = acts[o.activation] or o.activation
  end, function(self, x) return self.fn(check_array(x, "nn.Activation", 1, "input")) end, "gpu.ones(2, 3)",
  "{ activation = 'relu' }")
K.Activation.keeps_mask = true         -- a Keras step mask goes on through it (module.call_masked)

-- Reshape(target_shape): each sample to target_shape (one entry may be -1)
simple("Reshape", { target_shape = { type = "table" }, name = name_key }, { "target_shape" }, function(self, o, fname)
  if o.target_shape == nil then raise("%s: target_shape is required", fname) end
end, function(self, x)
  check_array(x, "nn.Reshape", 1, "input")
  local shape = { x.shape[1] }
  for _, n in ipairs(self.opts.target_shape) do shape[#shape + 1] = n end
  return x:reshape(table.unpack(shape))
end, "gpu.ones(2, 6)", "{ target_shape = { 2, 3 } }")

-- Permute(dims): the sample axes reordered, 1-based as Keras's (axis 1 is the first after the batch)
simple("Permute", { dims = { type = "table" }, name = name_key }, { "dims" }, function(self, o, fname)
  if o.dims == nil then raise("%s: dims is required", fname) end
  local seen = {}
  for i, d in ipairs(o.dims) do
    if math.type(d) ~= "integer" or d < 1 or d > #o.dims or seen[d] then
      raise("%s: dims must be a permutation of 1..%d, got %s at %d", fname, #o.dims, tostring(d), i)
    end
    seen[d] = true
  end
end, function(self, x)
  check_array(x, "nn.Permute", 1, "input")
  local dims = self.opts.dims
  if x.ndim ~= #dims + 1 then raise("nn.Permute: expected samples of %d axes, got input %s", #dims, shape_str(x.shape)) end
  local perm = { 1 }
  for _, d in ipairs(dims) do perm[#perm + 1] = d + 1 end
  return x:permute(perm)
end, "gpu.ones(2, 3, 4)", "{ dims = { 2, 1 } }")

-- RepeatVector(n): (N, D) -> (N, n, D)
simple("RepeatVector", { n = { type = "integer", min = 1 }, name = name_key }, { "n" }, function(self, o, fname)
  if o.n == nil then raise("%s: n is required", fname) end
end, function(self, x)
  check_array(x, "nn.RepeatVector", 1, "input")
  if x.ndim ~= 2 then raise("nn.RepeatVector: expected (N, D), got %s", shape_str(x.shape)) end
  return x:unsqueeze(2):expand(x.shape[1], self.opts.n, x.shape[2]):contiguous()
end, "gpu.ones(2, 3)", "{ n = 2 }")

-- Lambda(fn): fn(x) as a layer (no parameters)
simple("Lambda", { ["function"] = { type = "callable" }, name = name_key }, { "function" }, function(self, o, fname)
  if o["function"] == nil then raise("%s: a function is required", fname) end
end, function(self, ...) return self.opts["function"](...) end, "gpu.ones(2, 3)", "{ ['function'] = function(x) return x end }")

-- Rescaling(scale [, offset = 0]): x * scale + offset
simple("Rescaling", { scale = { type = "number" }, offset = { type = "number", default = 0 }, name = name_key },
  { "scale", "offset" }, function(self, o, fname)
    if o.scale == nil then raise("%s: scale is required", fname) end
  end, function(self, x) return check_array(x, "nn.Rescaling", 1, "input") * self.opts.scale + self.opts.offset end,
  "gpu.ones(2, 3)", "{ scale = 0.5 }")

-- merges: called on a list of arrays of one shape (Concatenate: equal but on axis)
local function merge_inputs(fname, list, ...)
  if select("#", ...) > 0 or type(list) ~= "table" or options.is_array(list) then
    list = { list, ... }
  end
  if #list < 2 then raise("%s: a list of at least 2 inputs expected, got %d", fname, #list) end
  for i, x in ipairs(list) do check_array(x, fname, 1, "inputs[" .. i .. "]") end
  return list
end
local function same_shapes(fname, list)
  for i = 2, #list do
    if shape_str(list[i].shape) ~= shape_str(list[1].shape) then
      raise("%s: inputs of one shape expected, got %s and %s", fname, shape_str(list[1].shape), shape_str(list[i].shape))
    end
  end
end
local function merge(cname, combine)
  simple(cname, { name = name_key }, {}, nil, function(self, list, ...)
    local fname = "nn." .. cname
    local xs = merge_inputs(fname, list, ...)
    same_shapes(fname, xs)
    return combine(xs)
  end, "{gpu.ones(2, 3), gpu.ones(2, 3)}")
end
merge("Add", function(xs) local y = xs[1] for i = 2, #xs do y = y + xs[i] end return y end)
merge("Subtract", function(xs)
  if #xs ~= 2 then raise("nn.Subtract: exactly 2 inputs expected, got %d", #xs) end
  return xs[1] - xs[2]
end)
merge("Multiply", function(xs) local y = xs[1] for i = 2, #xs do y = y * xs[i] end return y end)
merge("Average", function(xs) local y = xs[1] for i = 2, #xs do y = y + xs[i] end return y / #xs end)
merge("Maximum", function(xs) local y = xs[1] for i = 2, #xs do y = gpu.maximum(y, xs[i]) end return y end)
merge("Minimum", function(xs) local y = xs[1] for i = 2, #xs do y = gpu.minimum(y, xs[i]) end return y end)

-- Concatenate{axis = -1}: along a sample axis (1-based after the batch, as Keras's; -1 the last)
simple("Concatenate", { axis = { type = "integer", default = -1 }, name = name_key }, { "axis" }, nil,
  function(self, list, ...)
    local fname = "nn.Concatenate"
    local xs = merge_inputs(fname, list, ...)
    local nd = xs[1].ndim
    local ax = self.opts.axis
    ax = ax < 0 and nd + 1 + ax or ax + 1
    if ax < 2 or ax > nd then raise("%s: axis %d is out of range for inputs %s", fname, self.opts.axis, shape_str(xs[1].shape)) end
    for i = 2, #xs do
      local ok = xs[i].ndim == nd
      for d = 1, nd do ok = ok and (d == ax or xs[i].shape[d] == xs[1].shape[d]) end
      if not ok then raise("%s: inputs %s and %s do not fit along axis %d", fname, shape_str(xs[1].shape), shape_str(xs[i].shape), self.opts.axis) end
    end
    return gpu.concat(xs, ax)
  end, "{gpu.ones(2, 3), gpu.ones(2, 1)}")

-- Dot{axes, normalize = false}: the dot product of two (N, D) inputs along the feature axis (N, 1)
simple("Dot", { axes = { type = "integer", default = -1 }, normalize = { type = "boolean", default = false }, name = name_key },
  { "axes" }, nil, function(self, list, ...)
    local fname = "nn.Dot"
    local xs = merge_inputs(fname, list, ...)
    if #xs ~= 2 then raise("%s: exactly 2 inputs expected, got %d", fname, #xs) end
    local a, b = xs[1], xs[2]
    local nd = a.ndim
    local ax = self.opts.axes < 0 and nd + 1 + self.opts.axes or self.opts.axes + 1
    if ax < 2 or ax > nd or b.ndim ~= nd or a.shape[ax] ~= b.shape[ax] then
      raise("%s: inputs %s and %s cannot be multiplied along axis %d", fname, shape_str(a.shape), shape_str(b.shape), self.opts.axes)
    end
    if self.opts.normalize then
      a = a / a:square():sum(ax, { keepdims = true }):maximum(1e-12):sqrt()
      b = b / b:square():sum(ax, { keepdims = true }):maximum(1e-12):sqrt()
    end
    local y = (a * b):sum(ax)
    return y.ndim == 1 and y:reshape(y.shape[1], 1) or y
  end, "{gpu.ones(2, 3), gpu.ones(2, 3)}")

-- Keras's activations by name, for the other Keras layer files (behind the metatable, so
-- that nn's export of this table's entries leaves them out)
setmetatable(K, { __index = { _helpers = { acts = acts, act_names = act_names } } })

return K
