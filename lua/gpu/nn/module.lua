-- gpu.nn.module: the Module base every layer derives from, the class() that makes layer
-- classes, the Sequential container and summary().
--
-- A module holds parameters (arrays that require grad, seen by optimizers), buffers
-- (arrays saved by state_dict but never trained: batch norm's running statistics) and
-- sub-modules, each in registration order. Everything that walks the tree (parameters,
-- modules, state_dict, to, train, summary) visits each module once, so a module shared
-- by two parents counts once; a module that would contain itself is refused when added.
--
-- The configuring calls (load_state_dict, to) check and prepare everything before they
-- change anything: they either succeed or leave the module as it was.

local gpu = require "gpu"
local autograd = require "gpu.autograd"
local options = require "gpu.options"

local is_array, raise, argerror, type_name = options.is_array, options.raise, options.argerror, options.type_name
local shape_str = options.shape_str
-- the device names as messages give them: "'cpu', 'cuda' or 'cuda:N'"
local DEVICE_WHAT = "a device name (" .. gpu._device_syntax .. ")"

local M = {}

-- ---- classes ----------------------------------------------------------------------------------

local Module = {}
Module.__index = Module
Module.__name = "Module"
M.Module = Module

-- is_module(v): v is a module instance (made by a class's constructor)
local function is_module(v) return type(v) == "table" and rawget(v, "_params") ~= nil end
M.is_module = is_module
options.guard_methods(Module, "Module", "model", is_module)

-- A new instance of class c: the constructor every class shares.
-- copy_args(v): plain tables copied (deeply), everything else (arrays, modules) as it is
local function copy_args(v)
  if type(v) ~= "table" or getmetatable(v) ~= nil or is_module(v) then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = copy_args(x) end
  return out
end

local function construct(c, ...)
  -- _default_dtype: the default dtype its parameters were made in (a whole-model file
  -- rebuilds the layer under it)
  local self = setmetatable({ _params = {}, _pnames = {}, _buffers = {}, _bnames = {}, _modules = {}, _mnames = {},
                              training = true, _default_dtype = gpu.get_default_dtype() }, c)
  -- the constructor's arguments, for model:save (nn/saving.lua)
  local args = table.pack(...)
  for i = 1, args.n do args[i] = copy_args(args[i]) end
  self._init_args = args
  if c.init then c.init(self, ...) end
  return self
end

M.registry = {}

-- class(name [, parent]): a layer class; calling it constructs (cls.init(self, ...)), and
-- calling an instance runs forward.
function M.class(name, parent)
  if type(name) ~= "string" then argerror("nn.class", 1, "a class name expected, got %s", type_name(name)) end
  parent = parent or Module
  if type(parent) ~= "table" or (parent ~= Module and rawget(parent, "__call") == nil) then
    argerror("nn.class", 2, "a module class expected as the parent, got %s", type_name(parent))
  end
  local cls = { __name = name }
  cls.__index = cls
  cls.__call = function(self, ...)
    -- symbolic tensors (Keras's functional API, nn/keras_functional.lua) record the call
    if M.symbolic_call ~= nil and M.has_symbolic(...) then return M.symbolic_call(self, ...) end
    if rawget(self, "_hooks") == nil then return self:forward(...) end
    return M.call_hooked(self, ...)
  end
  cls.__tostring = function(self) return self:repr() end
  -- self.name = module registers it as a sub-module, as PyTorch's Module.__setattr__ does
  -- (parameters() finds its parameters, state_dict names them "name.weight" ...); a field
  -- set a second time is a plain field again (use add_module to replace a sub-module)
  cls.__newindex = function(self, k, v)
    if type(k) == "string" and is_module(v) and rawget(self, "_modules") ~= nil and v ~= self then
      Module.add_module(self, k, v)
    end
    rawset(self, k, v)
  end
  setmetatable(cls, { __index = parent, __call = construct })
  -- the registry nn.load_model finds classes in by name (false: a name two classes share)
  if M.registry[name] == nil then M.registry[name] = cls else M.registry[name] = false end
  return options.guard_methods(cls, name, "model", is_module)
end

-- display_name(m): the name summaries and Keras's layer names use for m's class: the class's
-- display_name where a user-facing name is shared (Keras's LSTM beside PyTorch's, registered
-- apart for model files), else its class name
function M.display_name(m)
  local c = getmetatable(m)
  return c.display_name or c.__name
end

-- options_class(cname, keys, positional, init, forward, example [, required]): a layer class
-- whose constructor takes its options positionally (in the order of `positional`, a last
-- options table after them merged in) or as one table, checked against keys (declared as
-- nn.<cname>, its example call `gpu.nn.<cname>(<opts>)(<example>)`, the keys of the Lua
-- table text `required` filled in where the empty table leaves them out). The checked
-- options are self.opts, a `name` option is self.name; init(self, o, fname) completes it.
function M.options_class(cname, keys, positional, init, forward, example, required)
  local ctor = "%s"
  if required then
    ctor = ("(function(t) for k, v in pairs(%s) do if t[k] == nil then t[k] = v end end return t end)(%%s)"):format(required)
  end
  local decl = options.declare("nn." .. cname, keys, { example = ("gpu.nn.%s(%s)(%s)"):format(cname, ctor, example) })
  local cls = M.class(cname)
  function cls:init(first, ...)
    local opts = first
    if first ~= nil and (type(first) ~= "table" or getmetatable(first) ~= nil or first[1] ~= nil) then
      opts = {}
      local args = table.pack(first, ...)
      for i, k in ipairs(positional) do
        local v = args[i]
        -- an options table after the positional arguments: Dot(1, {normalize = true})
        if i > 1 and type(v) == "table" and getmetatable(v) == nil and v[1] == nil and i == args.n then
          for kk, vv in pairs(v) do opts[kk] = vv end
          break
        end
        opts[k] = v
      end
      local last = args[#positional + 1]
      if type(last) == "table" and getmetatable(last) == nil then for kk, vv in pairs(last) do opts[kk] = vv end end
    end
    local o = decl:check(opts, 1)
    self.opts = o
    if o.name then self.name = o.name end
    if init then init(self, o, "nn." .. cname) end
  end
  cls.forward = forward
  return cls
end

-- ---- layer options -------------------------------------------------------------------------

local floating = { float16 = true, bfloat16 = true, float32 = true, float64 = true }

-- The option keys dtype and device of a layer constructor (parameters are floating-point:
-- they require grad).
M.placement_keys = {
  dtype = { type = "dtype",
            check = function(v)
              return floating[options.dtype(v)] == true,
                "must be a floating-point dtype (parameters require grad), got '" .. v .. "'"
            end },
  device = { type = "device", what = DEVICE_WHAT },
}

-- with_placement(keys): keys plus dtype and device (a new table)
function M.with_placement(keys)
  local out = {}
  for k, v in pairs(keys) do out[k] = v end
  for k, v in pairs(M.placement_keys) do out[k] = v end
  return out
end

-- The creation options of a layer's parameters from its checked options o (no dtype: the
-- default dtype, gpu.get_default_dtype(), at construction, as PyTorch's layers).
function M.placement(o) return { dtype = o.dtype or gpu.get_default_dtype(), device = o.device or gpu.device() } end

-- register_affine(self, shape, p): a normalization's scale and shift, the parameters weight
-- (ones) and bias (zeros) of that shape, created with p (placement's table)
function M.register_affine(self, shape, p)
  self:register_parameter("weight", gpu.ones(shape, p))
  self:register_parameter("bias", gpu.zeros(shape, p))
end

-- ---- the tree --------------------------------------------------------------------------------

-- walk(m, fn): fn(module, prefix) for m and every sub-module, depth first in registration
-- order, each module once (prefix: its name path, "" for m, "1.", "1.conv." ...).
local function walk(m, fn, prefix, seen)
  prefix, seen = prefix or "", seen or {}
  if seen[m] then return end
  seen[m] = true
  fn(m, prefix)
  for _, n in ipairs(m._mnames) do
    local sub = m._modules[n]
    if sub ~= nil then walk(sub, fn, prefix .. n .. ".", seen) end
  end
end

-- {name, array} of every parameter (kind "_params") or buffer ("_buffers"), each array once
-- (all_names: an array under two names, a tied weight, is listed under each, as PyTorch's
-- state_dict lists it).
local function named(self, kind, all_names)
  local out, seen = {}, {}
  local names = kind == "_params" and "_pnames" or "_bnames"
  walk(self, function(m, prefix)
    for _, n in ipairs(m[names]) do
      local v = m[kind][n]
      if v ~= nil and (all_names or not seen[v]) then
        seen[v] = true
        out[#out + 1] = { prefix .. n, v }
      end
    end
  end)
  return out
end

local function check_name(fname, name)
  if type(name) ~= "string" or name == "" or name:find(".", 1, true) then
    argerror(fname, 1, "a name without '.' expected, got %s", type_name(name))
  end
end

function Module:register_parameter(name, p)
  check_name("Module:register_parameter", name)
  if p ~= nil then options.check_array(p, "Module:register_parameter", 2, "parameter") end
  if p ~= nil and not floating[p.dtype] then
    argerror("Module:register_parameter", 2, "a floating-point array expected (parameters require grad), got %s",
      p.dtype)
  end
  if p ~= nil and not p:is_leaf() then p = p:detach() end
  if self._params[name] == nil then self._pnames[#self._pnames + 1] = name end
  self._params[name] = p and p:requires_grad() or nil
  self[name] = self._params[name]
  return self._params[name]
end

-- register_buffer(name, v): an array state_dict saves and to() moves, but optimizers never see
function Module:register_buffer(name, v)
  check_name("Module:register_buffer", name)
  if v ~= nil then options.check_array(v, "Module:register_buffer", 2, "buffer") end
  if self._buffers[name] == nil then self._bnames[#self._bnames + 1] = name end
  self._buffers[name] = v
  self[name] = v
  return v
end

-- Whether 'inner' is m or one of m's sub-modules.
local function contains(m, inner)
  local found = false
  walk(m, function(x) if x == inner then found = true end end)
  return found
end

function Module:add_module(name, m)
  if math.type(name) == "integer" then name = tostring(name) end
  check_name("Module:add_module", name)
  if m ~= nil and not is_module(m) then
    argerror("Module:add_module", 2, "a module expected, got %s", type_name(m))
  end
  if m ~= nil and contains(m, self) then
    raise("Module:add_module: a module cannot contain itself (this %s would be inside itself)",
      getmetatable(self).__name)
  end
  if self._modules[name] == nil then self._mnames[#self._mnames + 1] = name end
  self._modules[name] = m
  return m
end

function Module:repr() return getmetatable(self).__name .. "()" end

function Module:forward(...)                -- whatever it is given: it refuses the call
  raise("%s: forward is not implemented (define %s:forward(x))", getmetatable(self).__name, getmetatable(self).__name)
end

-- named_parameters(): an ordered list of {name, array} pairs, also usable as
-- `for name, p in m:named_parameters() do`.
function Module:named_parameters()
  local list = named(self, "_params")
  local i = 0
  return setmetatable(list, { __call = function()
    i = i + 1
    local e = list[i]
    if e then return e[1], e[2] end
  end })
end

function Module:named_buffers() return named(self, "_buffers") end

-- A lazy layer (nn.LazyLinear ...) not yet called has no parameters to give: a list
-- without them (an optimizer's) would silently leave them out, so asking is an error.
function Module:parameters()
  walk(self, function(m, prefix)
    local lazy = rawget(m, "_uninitialized")
    if lazy then
      raise("%s%s: its parameters are made at its first call (their input size is read from the input): run a " ..
        "forward pass (a dummy batch) first, before building an optimizer", lazy, prefix ~= "" and (" (" .. prefix:sub(1, -2) .. ")") or "")
    end
  end)
  local out = {}
  for i, e in ipairs(named(self, "_params")) do out[i] = e[2] end
  return out
end

function Module:modules()
  local out = {}
  walk(self, function(m) out[#out + 1] = m end)
  return out
end

-- apply(fn): fn(m) for every sub-module, then for the module itself (PyTorch's order).
function Module:apply(fn)
  options.value(fn, { type = "callable" }, "Module:apply", 1, "fn")
  local list = self:modules()
  for i = #list, 1, -1 do fn(list[i]) end
  return self
end

function Module:num_parameters()
  local c = 0
  for _, p in ipairs(self:parameters()) do c = c + p.size end
  return c
end

function Module:zero_grad()
  for _, p in ipairs(self:parameters()) do p:set_grad(nil) end
  return self
end

-- Keras's trainable: m.trainable = false freezes m and its sub-modules: their parameters
-- leave trainable_weights() (what compile's optimizer takes, at the first batch), and a
-- frozen Keras BatchNormalization normalizes by its moving statistics in training too.
-- walk_frozen calls fn(m, frozen) for m and its sub-modules, frozen when m or a module
-- above it has trainable == false.
local function walk_frozen(m, fn, above, seen)
  seen = seen or {}
  if seen[m] then return end
  seen[m] = true
  local frozen = above or rawget(m, "trainable") == false
  fn(m, frozen)
  for _, n in ipairs(m._mnames) do
    local sub = m._modules[n]
    if sub ~= nil then walk_frozen(sub, fn, frozen, seen) end
  end
end

-- The parameters of the modules that are not frozen (trainable_weights) or of those that
-- are (non_trainable_weights), each once, in parameters()'s order.
local function weights_by(self, want_frozen)
  local frozen_of = {}
  walk_frozen(self, function(m, frozen) frozen_of[m] = frozen end)
  local out, seen = {}, {}
  walk(self, function(m)
    for _, n in ipairs(m._pnames) do
      local v = m._params[n]
      if v ~= nil and not seen[v] then
        seen[v] = true
        if frozen_of[m] == want_frozen then out[#out + 1] = v end
      end
    end
  end)
  return out
end
function Module:trainable_weights() return weights_by(self, false) end
function Module:non_trainable_weights() return weights_by(self, true) end

function Module:train(mode)
  if mode == nil then mode = true end
  options.value(mode, { type = "boolean" }, "Module:train", 1, "mode")
  walk_frozen(self, function(m, frozen)
    m.training = mode
    rawset(m, "_frozen", frozen or nil)
  end)
  return self
end

function Module:eval() return self:train(false) end

-- ---- devices ---------------------------------------------------------------------------------

-- The canonical name of a device argument ("cuda" is "cuda:0", as arrays name it),
-- refused with the reason when it is not a device this build and machine have.
local function device_arg(fname, device, argn)
  options.value(device, { type = "device", what = DEVICE_WHAT }, fname, argn or 1, "device")
  local name, why = gpu._device_name(device, true)
  if not name then argerror(fname, argn or 1, "%s", why) end
  return name
end
M.device_arg = device_arg

local TO = options.declare("Module:to", { device = { type = "device", what = DEVICE_WHAT }, dtype = { type = "dtype" } },
  { example = "gpu.nn.Linear(2, 2):to(%s)" })

-- to(device), to(dtype), to(device, dtype) or to{device =, dtype =}: the parameters and
-- buffers moved to the device, and the floating-point ones converted to the dtype (a
-- floating dtype; integer and bool buffers keep theirs, as PyTorch's). New arrays: make
-- optimizers after. An array already right stays the same array; one array in two places
-- (tied weights) stays one; every copy is made before any is swapped in, so a failure
-- leaves the module as it was.
function Module:to(a, b)
  local fname = "Module:to"
  local device, dtype
  if type(a) == "table" and not options.is_array(a) then
    if b ~= nil then argerror(fname, 2, "no argument expected after the options table") end
    local o = TO:check(a, 1)
    device, dtype = o.device, o.dtype
  elseif b == nil and options.dtype(a) then
    dtype = a
  else
    device, dtype = a, b
  end
  if device ~= nil then device = device_arg(fname, device) end
  if dtype ~= nil then
    local d = options.dtype(dtype)
    if not floating[d] then
      argerror(fname, b ~= nil and 2 or 1, "a floating-point dtype expected (float16, bfloat16, float32, float64), got %s",
        d and ("'" .. d .. "'") or type_name(dtype))
    end
    dtype = d
  end
  if device == nil and dtype == nil then
    if type(a) == "table" then return self end          -- to{}: nothing asked
    argerror(fname, 1, "a device or a dtype expected, got %s", type_name(a))
  end
  local moves, moved = {}, {}       -- moved: one copy per array, so tied weights stay tied
  autograd.no_grad(function()
    walk(self, function(m)
      for _, kind in ipairs { "_params", "_buffers" } do
        for n, v in pairs(m[kind]) do
          local dev, dt = device or v.device, (dtype and floating[v.dtype]) and dtype or v.dtype
          if v.device ~= dev or v.dtype ~= dt then
            moved[v] = moved[v] or options.call(fname, function() return v:to(dev):astype(dt) end)
            moves[#moves + 1] = { m, kind, n, moved[v] }
          end
        end
      end
    end)
  end)
  for _, mv in ipairs(moves) do
    if mv[2] == "_params" then mv[1]:register_parameter(mv[3], mv[4]) else mv[1]:register_buffer(mv[3], mv[4]) end
  end
  if device ~= nil then walk(self, function(m) m.device = device end) end
  return self
end

-- PyTorch's casts: every floating-point parameter and buffer to that dtype
function Module:double() return self:to("float64") end
function Module:float() return self:to("float32") end
function Module:half() return self:to("float16") end
function Module:bfloat16() return self:to("bfloat16") end

function Module:cuda() return self:to("cuda") end
function Module:cpu() return self:to("cpu") end

-- ---- state -----------------------------------------------------------------------------------

-- state_dict(): name -> array for every parameter and buffer
function Module:state_dict()
  local sd = {}
  for _, e in ipairs(named(self, "_params", true)) do sd[e[1]] = e[2] end
  for _, e in ipairs(named(self, "_buffers", true)) do sd[e[1]] = e[2] end
  return sd
end

local LOAD = options.declare("Module:load_state_dict", {
  strict = { type = "boolean", default = true },
  assign = { unsupported = "values are copied into the existing arrays" },
}, { example = "local m = gpu.nn.Linear(2, 2); m:load_state_dict(m:state_dict(), %s)" })

-- The faults of loading sd into the entries own ({name, array}): missing, unexpected and
-- mis-shaped names, as one message (nil when there are none).
local function state_faults(own, sd, strict)
  local missing, unexpected, misshaped, names = {}, {}, {}, {}
  for _, e in ipairs(own) do
    names[e[1]] = true
    local v = sd[e[1]]
    if v == nil then missing[#missing + 1] = e[1]
    elseif not is_array(v) or v:is_closed() then
      misshaped[#misshaped + 1] = ("%s (not an open array: %s)"):format(e[1], is_array(v) and "closed" or type_name(v))
    elseif shape_str(v.shape) ~= shape_str(e[2].shape) then
      misshaped[#misshaped + 1] = ("%s (expected %s, got %s)"):format(e[1], shape_str(e[2].shape), shape_str(v.shape))
    end
  end
  for k in pairs(sd) do if not names[k] then unexpected[#unexpected + 1] = tostring(k) end end
  table.sort(missing); table.sort(unexpected); table.sort(misshaped)
  local faults = {}
  if #misshaped > 0 then faults[#faults + 1] = "mis-shaped: " .. table.concat(misshaped, ", ") end
  if strict and #missing > 0 then faults[#faults + 1] = "missing: " .. table.concat(missing, ", ") end
  if strict and #unexpected > 0 then faults[#faults + 1] = "unexpected: " .. table.concat(unexpected, ", ") end
  return #faults > 0 and table.concat(faults, "; ") or nil
end

-- load_state_dict(sd [, {strict = true}]): copies values into the parameters and buffers.
-- Names the missing, unexpected and mis-shaped entries, and converts every value to its
-- array's device and dtype, before writing any.
function Module:load_state_dict(sd, opts, fname)
  fname = fname or "Module:load_state_dict"
  if type(sd) ~= "table" or is_array(sd) then
    argerror(fname, 1, "a state dict (name -> gpu.array) expected, got %s", type_name(sd))
  end
  local o = LOAD:check(opts, 2, fname)
  -- lazy layers not yet called take their sizes from the state (undone on a fault)
  local undo = {}
  walk(self, function(m, prefix)
    if rawget(m, "_uninitialized") and m.materialize_from then undo[#undo + 1] = m:materialize_from(sd, prefix) end
  end)
  local own = named(self, "_params", true)
  for _, e in ipairs(named(self, "_buffers", true)) do own[#own + 1] = e end
  local faults = state_faults(own, sd, o.strict)
  if faults then
    for _, f in ipairs(undo) do f() end
    raise("%s: %s", fname, faults)
  end
  local values = {}
  autograd.no_grad(function()
    for i, e in ipairs(own) do
      local v = sd[e[1]]
      if v ~= nil then
        values[i] = options.call(fname, function() return v:to(e[2].device):astype(e[2].dtype) end)
      end
    end
    for i, e in ipairs(own) do
      if values[i] ~= nil then e[2][{}] = values[i] end
    end
  end)
  return self
end

-- (save, save_weights and load_weights: nn/saving.lua)

-- load(path [, {strict = true}]): load_state_dict from a safetensors file
function Module:load(path, opts)
  options.value(path, { type = "string" }, "Module:load", 1, "path")
  LOAD:check(opts, 2, "Module:load")
  local sd = {}
  for k, v in pairs(options.call("Module:load", gpu.load_safetensors, path)) do
    if k:sub(1, 2) ~= "__" then sd[k] = v end         -- not a whole-model file's optimizer or arguments
  end
  return self:load_state_dict(sd, opts, "Module:load")
end

-- ---- forward hooks ---------------------------------------------------------------------------

-- The hooks of a module live in self._hooks = {pre = {...}, post = {...}} (absent until the
-- first one is registered, so a module without hooks is called as before).
local function add_hook(self, fname, kind, fn)
  options.value(fn, { type = "callable", what = "a function" }, fname, 1, "hook")
  local hooks = rawget(self, "_hooks")
  if hooks == nil then
    hooks = { pre = {}, post = {} }
    rawset(self, "_hooks", hooks)
  end
  local entry = { fn = fn }
  table.insert(hooks[kind], entry)
  return { remove = function()
    for i, e in ipairs(hooks[kind]) do if e == entry then table.remove(hooks[kind], i) break end end
  end }
end

-- register_forward_pre_hook(fn(module, inputs)): runs before forward with the list of its
-- arguments; a non-nil result (a list, or one value) replaces them. Returns a handle whose
-- remove() takes the hook off.
function Module:register_forward_pre_hook(fn)
  return add_hook(self, "Module:register_forward_pre_hook", "pre", fn)
end

-- register_forward_hook(fn(module, inputs, output)): runs after forward; a non-nil result
-- replaces the output. Returns a handle with remove().
function Module:register_forward_hook(fn)
  return add_hook(self, "Module:register_forward_hook", "post", fn)
end

-- A call of a module with hooks: the pre-hooks, forward, the hooks, in registration order.
function M.call_hooked(self, ...)
  local hooks = rawget(self, "_hooks")
  local args = table.pack(...)
  for _, e in ipairs({ table.unpack(hooks.pre) }) do
    local r = e.fn(self, args)
    if r ~= nil then
      if type(r) == "table" and not options.is_array(r) and not is_module(r) then args = table.pack(table.unpack(r))
      else args = table.pack(r) end
    end
  end
  local out = table.pack(self:forward(table.unpack(args, 1, args.n)))
  for _, e in ipairs({ table.unpack(hooks.post) }) do
    local r = e.fn(self, args, table.unpack(out, 1, out.n))
    if r ~= nil then out = table.pack(r) end
  end
  return table.unpack(out, 1, out.n)
end

-- ---- Keras's masks ------------------------------------------------------------------------

-- A Keras mask is an (N, T) bool array of the steps that count. A layer with a method
-- compute_mask(x, mask) makes the mask of its output (Masking, Embedding with mask_zero; a
-- recurrent layer hands its input's on with return_sequences); one with takes_mask = true is
-- called as forward(x, {mask = m}) when a mask reaches it (the recurrent layers,
-- GlobalAveragePooling1D); one with keeps_mask = true hands the mask on unchanged (Dense,
-- Dropout, Activation, TimeDistributed, LayerNormalization); any other layer ends it.
-- Sequential and Model pass it from layer to layer through call_masked: the layer's results
-- (a packed list) and the mask of its first output.
function M.call_masked(layer, x, mask)
  local out
  if mask ~= nil and layer.takes_mask then out = table.pack(layer(x, { mask = mask }))
  else out = table.pack(layer(x)) end
  local next_mask
  if layer.compute_mask ~= nil then next_mask = layer:compute_mask(x, mask)
  elseif layer.keeps_mask then next_mask = mask end
  return out, next_mask
end

-- ---- Sequential ------------------------------------------------------------------------------

-- Sequential{m1, m2, ...} or Sequential(m1, m2, ...)
local Sequential = M.class("Sequential")
M.Sequential = Sequential
function Sequential:init(first, ...)
  local list = (type(first) == "table" and getmetatable(first) == nil) and first or { first, ... }
  self.layers = {}
  for i, m in ipairs(list) do
    if not is_module(m) then argerror("nn.Sequential", i, "element #%d: a module expected, got %s", i, type_name(m)) end
    self:add(m)
  end
end
-- (model:save: the layers as they are now, also those added after construction)
function Sequential:get_config() return { self.layers, n = 1 } end
function Sequential:add(m)
  if not is_module(m) then argerror("Sequential:add", 1, "a module expected, got %s", type_name(m)) end
  self:add_module(tostring(#self.layers + 1), m)
  self.layers[#self.layers + 1] = m
  return self
end
-- model[i]: the i-th layer, 1-based as every Lua sequence (PyTorch's model[0] is model[1]
-- here); 0, a negative index or one past the end is nil, as in a table. #model: the
-- number of layers.
function Sequential.__index(self, k)
  if type(k) == "number" then
    local layers = rawget(self, "layers")
    return layers and layers[k]
  end
  return Sequential[k]
end
function Sequential.__len(self) return #(rawget(self, "layers") or {}) end
function Sequential:forward(x)
  local mask
  for i = 1, #self.layers do
    local layer = self.layers[i]
    if mask == nil and layer.compute_mask == nil then x = layer(x)
    else
      local out
      out, mask = M.call_masked(layer, x, mask)
      x = out[1]
    end
  end
  return x
end
function Sequential:repr()
  local parts = {}
  for i, m in ipairs(self.layers) do parts[i] = "  (" .. i .. "): " .. m:repr() end
  return "Sequential(\n" .. table.concat(parts, "\n") .. "\n)"
end

-- ---- summary ---------------------------------------------------------------------------------

local SUMMARY = options.declare("Module:summary", {
  quiet = { type = "boolean", default = false },
}, { example = "gpu.nn.Sequential{gpu.nn.Linear(2, 3)}:summary({2}, %s)" })

-- The batch-of-1 input shape {1, ...} summary runs: given, or the first layer's input_shape.
local function summary_shape(self, input_shape)
  local layers = self.layers or { self }
  if input_shape == nil then input_shape = layers[1] and layers[1].input_shape end
  if input_shape == nil then
    raise("Module:summary: the input shape is unknown (pass it, or give the first layer input_shape =)")
  end
  if math.type(input_shape) == "integer" then input_shape = { input_shape } end
  local ok = type(input_shape) == "table" and #input_shape > 0
  local s = { 1 }
  for i, d in ipairs(ok and input_shape or {}) do
    if math.type(d) ~= "integer" or d < 1 then ok = false end
    s[i + 1] = d
  end
  if not ok then
    argerror("Module:summary", 1, "input_shape must be a positive integer or a list of them, got %s",
      type_name(input_shape))
  end
  return s, layers
end

-- The rows {layer, output shape, parameter count} of one forward pass of zeros (no tape,
-- eval mode); the buffers (running statistics) are put back as they were.
local function summary_rows(self, s, layers)
  local device
  for _, p in ipairs(self:parameters()) do device = p.device break end
  local rows, total = { { "Layer (type)", "Output Shape", "Param #" } }, 0
  local saved = {}
  for _, e in ipairs(named(self, "_buffers")) do saved[#saved + 1] = { e[2], e[2]:copy() } end
  local was = self.training
  local ok, err = pcall(autograd.no_grad, function()
    self:eval()
    local x = gpu.zeros(s, { device = device })
    for i, m in ipairs(layers) do
      x = m(x)
      local os = x.shape
      os[1] = "None"
      local np = m:num_parameters()
      total = total + np
      rows[#rows + 1] = { ("%s (%s)"):format(i, M.display_name(m)), shape_str(os), tostring(np) }
    end
  end)
  self:train(was)
  autograd.no_grad(function() for _, b in ipairs(saved) do b[1][{}] = b[2] end end)
  if not ok then error(err, 0) end
  return rows, total
end

-- summary([input_shape] [, {quiet = false}]): a table of layers, output shapes and
-- parameter counts, from one forward pass of a batch of 1 (zeros). Prints it and returns
-- the text (at the prompt, once: gpu.repl.printed).
-- The summary's text: rows of three columns (the first the header) between rules, the total
-- after, and a title line first when given
function M.summary_text(rows, total, title)
  local w = { 0, 0, 0 }
  for _, r in ipairs(rows) do for j = 1, 3 do w[j] = math.max(w[j], #r[j]) end end
  local lines = { title }
  local rule = string.rep("-", w[1] + w[2] + w[3] + 6)
  for i, r in ipairs(rows) do
    lines[#lines + 1] = ("%-" .. w[1] .. "s   %-" .. w[2] .. "s   %" .. w[3] .. "s"):format(r[1], r[2], r[3])
    if i == 1 then lines[#lines + 1] = rule end
  end
  lines[#lines + 1] = rule
  lines[#lines + 1] = ("Total params: %d"):format(total)
  return table.concat(lines, "\n")
end

function Module:summary(input_shape, opts)
  local o = SUMMARY:check(opts, 2)
  local rows, total = summary_rows(self, summary_shape(self, input_shape))
  local text = M.summary_text(rows, total)
  if not o.quiet then print(text) require("gpu.repl").printed(text) end
  return text
end

return M
