-- gpu.nn.saving: whole-model files. model:save(path) writes one safetensors file with the
-- weights (under their state_dict names, as before), the architecture and the compiled
-- optimizer's state; gpu.nn.load_model(path) rebuilds the model from it.
--
--   model:save("model.safetensors")
--   local model, opt = gpu.nn.load_model("model.safetensors")   -- compiled again when it was
--
-- The architecture is data in the header's __metadata__ (JSON): for each module, its
-- class name and the arguments its constructor was called with (recorded by nn.class's
-- constructor), or what its class's get_config() returns; modules among the arguments
-- are saved the same way (a module given twice is one module again: tied weights stay
-- tied), arrays among them as tensors. Loading looks classes up by name in
-- nn.module's registry (every class made with nn.class) and calls them: it never runs
-- code from the file. A file from a newer format or naming a class this gpulua does not
-- have is an error naming it.
local gpu = require "gpu"
local options = require "gpu.options"
local module = require "gpu.nn.module"

local raise, argerror, type_name, is_array = options.raise, options.argerror, options.type_name, options.is_array
local Module, is_module = module.Module, module.is_module
local M = {}

M.FORMAT, M.VERSION = "gpulua.model", 1

-- ---- JSON (the subset the header needs; the reader is strict and runs nothing) -------------------

local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    local map = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r" }
    return map[c] or ("\\u%04x"):format(c:byte())
  end) .. '"'
end

local function json_encode(v)
  local t = type(v)
  if v == nil or v == M.null then return "null" end
  if t == "boolean" then return tostring(v) end
  if t == "number" then
    assert(math.type(v) == "integer", "json: floats are written as {$f = ...}")
    return tostring(v)
  end
  if t == "string" then return json_string(v) end
  if t == "table" then
    if v[1] ~= nil or next(v) == nil and getmetatable(v) == M.list_mt then
      local parts = {}
      for i = 1, (v.n or #v) do parts[i] = json_encode(v[i]) end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys)
    local parts = {}
    for i, k in ipairs(keys) do parts[i] = json_string(k) .. ":" .. json_encode(v[k]) end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  error("json: cannot write " .. t)
end
M.list_mt = {}
M.null = setmetatable({}, { __tostring = function() return "null" end })

local function json_decode(s, what)
  local pos = 1
  local function fail(msg) raise("nn.load_model: the %s is not valid JSON (%s at byte %d)", what, msg, pos) end
  local function ws() pos = s:find("[^ \t\r\n]", pos) or #s + 1 end
  local value
  local function str()
    local out = {}
    pos = pos + 1
    while true do
      local c = s:sub(pos, pos)
      if c == "" then fail("an unterminated string") end
      if c == '"' then pos = pos + 1 break end
      if c == "\\" then
        local e = s:sub(pos + 1, pos + 1)
        local map = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", n = "\n", t = "\t", r = "\r", b = "\b", f = "\f" }
        if map[e] then out[#out + 1] = map[e]; pos = pos + 2
        elseif e == "u" then
          local hex = s:sub(pos + 2, pos + 5)
          if not hex:match("^%x%x%x%x$") then fail("a bad \\u escape") end
          out[#out + 1] = utf8.char(tonumber(hex, 16)); pos = pos + 6
        else fail("a bad escape") end
      else
        out[#out + 1] = c; pos = pos + 1
      end
    end
    return table.concat(out)
  end
  function value(depth)
    if depth > 200 then fail("nesting too deep") end
    ws()
    local c = s:sub(pos, pos)
    if c == "{" then
      local t = {}
      pos = pos + 1; ws()
      if s:sub(pos, pos) == "}" then pos = pos + 1 return t end
      while true do
        ws()
        if s:sub(pos, pos) ~= '"' then fail("a key expected") end
        local k = str(); ws()
        if s:sub(pos, pos) ~= ":" then fail("':' expected") end
        pos = pos + 1
        t[k] = value(depth + 1); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == "}" then return t end
        if d ~= "," then fail("',' or '}' expected") end
      end
    elseif c == "[" then
      local t = setmetatable({}, M.list_mt)
      local n = 0
      pos = pos + 1; ws()
      if s:sub(pos, pos) == "]" then pos = pos + 1; t.n = 0 return t end
      while true do
        n = n + 1
        t[n] = value(depth + 1); ws()
        local d = s:sub(pos, pos); pos = pos + 1
        if d == "]" then t.n = n return t end
        if d ~= "," then fail("',' or ']' expected") end
      end
    elseif c == '"' then return str()
    elseif s:sub(pos, pos + 3) == "true" then pos = pos + 4 return true
    elseif s:sub(pos, pos + 4) == "false" then pos = pos + 5 return false
    elseif s:sub(pos, pos + 3) == "null" then pos = pos + 4 return nil
    else
      local num = s:match("^-?%d+", pos)
      if num == nil or s:match("^[%.eE]", pos + #num) then fail("an integer expected") end
      pos = pos + #num
      return math.tointeger(tonumber(num)) or fail("an integer out of range")
    end
  end
  local v = value(0)
  ws()
  if pos <= #s then fail("trailing text") end
  return v
end
M.json_encode, M.json_decode = json_encode, json_decode

-- ---- values: Lua data <-> JSON data ----------------------------------------------------------------

-- encode(v, ctx, where): JSON data for v; arrays go to ctx.tensors, modules to ctx.modules
local function encode(v, ctx, where)
  local t = type(v)
  if v == nil then return M.null end
  if t == "boolean" or t == "string" then return v end
  if t == "number" then
    if math.type(v) == "integer" then return v end
    return { ["$f"] = v ~= v and "nan" or v == math.huge and "inf" or v == -math.huge and "-inf" or ("%.17g"):format(v) }
  end
  if is_array(v) then
    local id = ctx.arrays[v]
    if id == nil then
      ctx.ntensors = ctx.ntensors + 1
      id = ctx.prefix .. ctx.ntensors
      ctx.arrays[v], ctx.tensors[id] = id, v:detach()
    end
    return { ["$tensor"] = id }
  end
  if is_module(v) then return { ["$module"] = ctx.module_id(v, where) } end
  local kind, args = require("gpu.nn.regularizers").config_of(v)
  if kind then                       -- a regularizer or a constraint: its kind and arguments
    return { ["$object"] = { kind = kind, args = encode(args, ctx, where) } }
  end
  if t == "table" and getmetatable(v) == nil then
    local n, count = #v, 0
    for _ in pairs(v) do count = count + 1 end
    if count == n then
      local out = setmetatable({ n = n }, M.list_mt)
      for i = 1, n do out[i] = encode(v[i], ctx, ("%s[%d]"):format(where, i)) end
      return { ["$list"] = out }
    end
    local out = {}
    for k, x in pairs(v) do
      if type(k) ~= "string" then
        raise("Module:save: %s is a table with a key %s that is neither a list position nor a name", where, tostring(k))
      end
      out[k] = encode(x, ctx, where .. "." .. k)
    end
    return { ["$map"] = out }
  end
  raise("Module:save: %s is %s, which a file cannot hold (give the class a get_config() that returns data)", where,
    type_name(v))
end

local function decode(v, ctx)
  if type(v) ~= "table" then return v end
  if v == M.null then return nil end
  if v["$f"] ~= nil then
    local s = v["$f"]
    if s == "nan" then return 0 / 0 elseif s == "inf" then return math.huge elseif s == "-inf" then return -math.huge end
    local x = type(s) == "string" and tonumber(s) or nil
    if x == nil then raise("nn.load_model: a bad number %s in the architecture", tostring(s)) end
    return x + 0.0
  end
  if v["$tensor"] ~= nil then
    local a = ctx.tensors[v["$tensor"]]
    if a == nil then raise("nn.load_model: the tensor %s the architecture names is not in the file", tostring(v["$tensor"])) end
    return a
  end
  if v["$module"] ~= nil then return ctx.module(v["$module"]) end
  if v["$object"] ~= nil then
    local o = v["$object"]
    local make = type(o) == "table" and require("gpu.nn.regularizers").maker(o.kind)
    if not make then raise("nn.load_model: an unknown object %s in the architecture", tostring(type(o) == "table" and o.kind)) end
    local args = decode(o.args, ctx)
    if type(args) ~= "table" then raise("nn.load_model: the object %s has no argument list", tostring(o.kind)) end
    return make(table.unpack(args))
  end
  if v["$list"] ~= nil then
    local out = {}
    for i = 1, (v["$list"].n or #v["$list"]) do out[i] = decode(v["$list"][i], ctx) end
    return out
  end
  if v["$map"] ~= nil then
    local out = {}
    for k, x in pairs(v["$map"]) do out[k] = decode(x, ctx) end
    return out
  end
  raise("nn.load_model: an unknown value in the architecture")
end

-- ---- the architecture ----------------------------------------------------------------------------

-- The input width a layer built at its first call was built for (nil: not built).
local function built_width(m)
  return rawget(m, "in_features") or rawget(m, "in_channels") or rawget(m, "features")
end

-- The constructor arguments of m: its class's get_config(m), else those it was made with.
local function config_args(m)
  local get = getmetatable(m).get_config
  if get then
    local args = get(m)
    return args, args.n or #args
  end
  local args = rawget(m, "_init_args")
  if args == nil then return nil end
  return args, args.n
end

-- architecture(model) -> JSON text, tensors of its array arguments (nil, why when it has none)
local function architecture(model)
  local ctx = { tensors = {}, arrays = {}, ntensors = 0, prefix = "__args__.", modules = {}, ids = {} }
  local ok, err = pcall(function()
    function ctx.module_id(m, where)
      if ctx.ids[m] then return ctx.ids[m] end
      local cls = getmetatable(m)
      local name = cls.__name
      if module.registry[name] ~= cls then
        raise("Module:save: %s is a %s, a class %s", where, name, module.registry[name] == false
          and "name two classes share (the file could not say which)" or "not made with nn.class (no registry entry)")
      end
      local id = #ctx.modules + 1
      ctx.ids[m] = id
      ctx.modules[id] = false
      local args, n = config_args(m)
      if args == nil then raise("Module:save: %s (%s) has no recorded constructor arguments", where, name) end
      local enc = setmetatable({ n = n }, M.list_mt)
      for i = 1, n do enc[i] = encode(args[i], ctx, ("%s (%s) argument #%d"):format(where, name, i)) end
      local entry = { class = name, args = enc, training = m.training, default_dtype = rawget(m, "_default_dtype") }
      -- a layer built at its first call (Dense, Keras's convolutions and BatchNormalization)
      -- is built again from its input width
      local width = built_width(m)
      if type(m.build) == "function" and math.type(width) == "integer" then entry.build = width end
      ctx.modules[id] = entry
      return id
    end
    ctx.root = ctx.module_id(model, "the model")
  end)
  if not ok then return nil, err end
  return json_encode({ root = ctx.root, modules = setmetatable(ctx.modules, M.list_mt) }), ctx.tensors
end

local function build(text, tensors)
  local arch = type(text) == "table" and text or json_decode(text, "architecture")
  if type(arch) ~= "table" or type(arch.modules) ~= "table" or math.type(arch.root) ~= "integer" then
    raise("nn.load_model: the architecture has no modules")
  end
  local made = {}
  local ctx = { tensors = tensors }
  function ctx.module(id)
    if made[id] then return made[id] end
    local e = arch.modules[id]
    if type(e) ~= "table" or type(e.class) ~= "string" then raise("nn.load_model: module #%s is not described", tostring(id)) end
    local cls = module.registry[e.class]
    if not cls then
      raise("nn.load_model: the file holds a layer '%s' that this gpulua does not have (a newer version, or a class " ..
        "the program must define with nn.class before loading)", e.class)
    end
    made[id] = false                                     -- (a module inside itself is refused below)
    local args = {}
    local n = type(e.args) == "table" and (e.args.n or #e.args) or 0
    for i = 1, n do args[i] = decode(e.args[i], ctx) end
    -- rebuilt under the default dtype it was made in (a file without one: the present one)
    local was = gpu.get_default_dtype()
    local dd = type(e.default_dtype) == "string" and e.default_dtype or was
    local okd, why = pcall(gpu.set_default_dtype, dd)
    if not okd then raise("nn.load_model: module #%s's default dtype: %s", tostring(id), tostring(why)) end
    local ok, m = pcall(cls, table.unpack(args, 1, n))
    gpu.set_default_dtype(was)
    if not ok then raise("nn.load_model: rebuilding %s failed: %s", e.class, tostring(m)) end
    if e.build and built_width(m) == nil and type(m.build) == "function" then m:build(e.build) end
    if e.training == false then m:eval() end
    made[id] = m
    return m
  end
  return ctx.module(arch.root)
end

-- ---- the optimizer -------------------------------------------------------------------------------

local function optimizer_entry(opt, tensors, model)
  local cls = getmetatable(opt)
  -- where each of the optimizer's parameters is in model:parameters()
  local pos, where = {}, {}
  for i, p in ipairs(model:parameters()) do pos[p] = i end
  for i, p in ipairs(opt.params) do
    where[i] = pos[p]
    if where[i] == nil then raise("Module:save: the optimizer's parameter #%d is not a parameter of the model", i) end
  end
  local ctx = { tensors = tensors, arrays = {}, ntensors = 0, prefix = "__optimizer__.",
                module_id = function() raise("Module:save: a module in the optimizer's state") end }
  local sd = opt:state_dict()
  local state = {}
  for i, s in pairs(sd.state) do state[tostring(i)] = encode(s, ctx, "the optimizer's state") end
  return { class = cls.__name, step = sd.step, groups = encode(sd.param_groups, ctx, "the optimizer's groups"),
           state = state, model_params = setmetatable(where, M.list_mt) }
end

local function optimizer_from(entry, tensors, params)
  local optim = require "gpu.optim"
  local cls = optim[entry.class]
  if type(cls) ~= "table" or not cls.hyper then
    raise("nn.load_model: the file's optimizer '%s' is not one of gpu.optim's", tostring(entry.class))
  end
  local ctx = { tensors = tensors, module = function() raise("nn.load_model: a module in the optimizer's state") end }
  local groups = decode(entry.groups, ctx)
  local specs = {}
  for gi, g in ipairs(groups) do
    local spec = { params = {} }
    for _, i in ipairs(g.params or {}) do
      local j = entry.model_params and entry.model_params[i] or i
      if math.type(j) ~= "integer" or params[j] == nil then
        raise("nn.load_model: the optimizer names parameter #%s, the model has %d", tostring(j), #params)
      end
      spec.params[#spec.params + 1] = params[j]
    end
    for k, v in pairs(g) do if k ~= "params" and k ~= "initial_lr" then spec[k] = v end end
    specs[gi] = spec
  end
  local opt = cls(specs)
  local state = {}
  for k, s in pairs(entry.state or {}) do state[math.tointeger(tonumber(k))] = decode(s, ctx) end
  opt:load_state_dict({ step = entry.step, param_groups = groups, state = state })
  return opt
end

-- ---- save, load ----------------------------------------------------------------------------------

local SAVE = options.declare("Module:save", {
  include_optimizer = { type = "boolean", default = true },
  optimizer = { type = "table", what = "an optimizer", check = function(v)
    return require("gpu.optim").is_optimizer(v), "must be an optimizer" end },
}, { example = "gpu.nn.Linear(2, 2):save(os.tmpname(), %s)" })

-- save(path [, {include_optimizer = true, optimizer =}]): weights, architecture, the
-- compiled optimizer (or the one given) and compile's settings in one safetensors file.
-- A model whose architecture cannot be written (a constructor argument that is a
-- function, a class not made by nn.class) is saved with its weights only, and the
-- header says why (load_model then raises that reason; model:load still reads it).
function Module:save(path, opts)
  options.value(path, { type = "string" }, "Module:save", 1, "path")
  local o = SAVE:check(opts, 2)
  local tensors = {}
  for k, v in pairs(self:state_dict()) do tensors[k] = v:detach() end
  local meta = { format = M.FORMAT, version = tostring(M.VERSION) }
  local arch, extra = architecture(self)
  if arch then
    meta.architecture = arch
    for k, v in pairs(extra) do tensors[k] = v end
  else
    meta.architecture_error = tostring(extra):gsub("^.-Module:save: ", "")
  end
  local k = rawget(self, "_keras")
  local opt = o.optimizer or (o.include_optimizer and k and k.optimizer) or nil
  if opt and o.include_optimizer ~= false then
    meta.optimizer = json_encode(optimizer_entry(opt, tensors, self))
  end
  if k then
    local names, weighted = {}, {}
    for _, m in ipairs(k.metrics) do
      local list = m.weighted and weighted or names
      list[#list + 1] = m.spec or m.name
    end
    meta.compile = json_encode({ loss = type(k.loss_name) == "string" and k.loss_name ~= "custom" and k.loss_name or nil,
      optimizer = type(k.opt_spec) == "string" and k.opt_spec or nil, metrics = setmetatable(names, M.list_mt),
      weighted_metrics = #weighted > 0 and setmetatable(weighted, M.list_mt) or nil })
  end
  options.call("Module:save", gpu.save_safetensors, path, tensors, meta)
  return self
end

-- to_json(): Keras's model.to_json(): the architecture without the weights, as JSON text
-- (nn.model_from_json rebuilds the model, its weights new). A constructor argument that is a
-- function, or an array, cannot be written there (m:save keeps arrays).
function Module:to_json()
  local arch, extra = architecture(self)
  if not arch then raise("Module:to_json: %s", (tostring(extra):gsub("^.-Module:save: ", ""))) end
  if next(extra) ~= nil then
    raise("Module:to_json: a constructor argument is an array, which the JSON text cannot hold (save the model "
      .. "whole with m:save(path))")
  end
  return ('{"format":%s,"version":%d,"architecture":%s}'):format(json_encode(M.FORMAT), M.VERSION, arch)
end

-- model_from_json(text) -> model: Keras's keras.models.model_from_json for to_json's text
function M.model_from_json(text)
  local fname = "nn.model_from_json"
  options.value(text, { type = "string" }, fname, 1, "text")
  local ok, res = pcall(function()
    local t = json_decode(text, "JSON text")
    if type(t) ~= "table" or t.format ~= M.FORMAT or type(t.architecture) ~= "table" then
      raise("nn.load_model: the text is not a model's JSON (Module:to_json's)")
    end
    local version = math.tointeger(t.version)
    if version == nil or version > M.VERSION then
      raise("nn.load_model: the text is model format %s; this gpulua reads up to %d", tostring(t.version), M.VERSION)
    end
    return build(t.architecture, {})
  end)
  if not ok then error((tostring(res):gsub("nn%.load_model: ", fname .. ": ", 1)), 0) end
  return res
end

-- save_weights(path): the state dict only (Keras's name; what save wrote before)
function Module:save_weights(path)
  options.value(path, { type = "string" }, "Module:save_weights", 1, "path")
  local sd = {}
  for k, v in pairs(self:state_dict()) do sd[k] = v:detach() end
  options.call("Module:save_weights", gpu.save_safetensors, path, sd)
  return self
end

-- load_weights(path [, {strict = true}]): as load (Keras's name)
function Module:load_weights(path, opts) return self:load(path, opts) end

local LOAD = options.declare("nn.load_model", {
  compile = { type = "boolean", default = true },
  device = { type = "device", what = "a device name (" .. gpu._device_syntax .. ")" },
}, { example = "local ok, err = pcall(gpu.nn.load_model, '/nonexistent', %s); assert(ok or not err:find('option'), err)" })

-- load_model(path [, {compile = true, device =}]) -> model, optimizer (nil when the file
-- holds none): the model rebuilt, its weights loaded, compiled again as it was (compile),
-- with the saved optimizer and its state; moved to device when given
function M.load_model(path, opts)
  local fname = "nn.load_model"
  options.value(path, { type = "string" }, fname, 1, "path")
  local o = LOAD:check(opts, 2)
  local tensors, meta = options.call(fname, gpu.load_safetensors, path)
  meta = meta or {}
  if meta.format ~= M.FORMAT then
    raise("%s: %s holds no model (weights only? read them with model:load(path))", fname, path)
  end
  local version = math.tointeger(tonumber(meta.version or ""))
  if version == nil then raise("%s: %s has no format version", fname, path) end
  if version > M.VERSION then
    raise("%s: %s was written by a newer gpulua (model format %d; this one reads up to %d)", fname, path, version,
      M.VERSION)
  end
  if meta.architecture == nil then
    raise("%s: %s holds weights but no architecture (%s); build the model and call model:load(path)", fname, path,
      meta.architecture_error or "not saved")
  end
  local model = build(meta.architecture, tensors)
  if o.device then model:to(o.device) end
  local sd = {}
  for k, v in pairs(tensors) do if k:sub(1, 2) ~= "__" then sd[k] = v end end
  model:load_state_dict(sd, nil, fname)
  local opt
  if meta.optimizer then
    opt = optimizer_from(json_decode(meta.optimizer, "optimizer"), tensors, model:parameters())
  end
  if o.compile and meta.compile then
    local c = json_decode(meta.compile, "compile settings")
    if c.loss then
      local metrics = {}
      for i = 1, (c.metrics and (c.metrics.n or #c.metrics) or 0) do metrics[i] = c.metrics[i] end
      local weighted
      if type(c.weighted_metrics) == "table" then
        weighted = {}
        for i = 1, (c.weighted_metrics.n or #c.weighted_metrics) do weighted[i] = c.weighted_metrics[i] end
      end
      model:compile { optimizer = opt or c.optimizer or "rmsprop", loss = c.loss, metrics = metrics,
                      weighted_metrics = weighted }
    end
  end
  return model, opt
end

return M
