-- gpu.nn.callbacks: Keras's training callbacks for fit{callbacks = {...}} (also gpu.nn.<Name>).
--
--   model:fit(x, y, {epochs = 100, validation_split = 0.1, callbacks = {
--     gpu.nn.EarlyStopping{monitor = "val_loss", patience = 5, restore_best_weights = true},
--     gpu.nn.ModelCheckpoint{path = "best.safetensors", save_best_only = true},
--     {on_epoch_end = function(self, epoch, logs) print(epoch, logs.loss) end},
--   }})
--
-- A callback is any table whose hooks fit calls as methods, each one optional:
-- on_train_begin(logs), on_train_end(logs), on_epoch_begin(epoch, logs), on_epoch_end(epoch,
-- logs), on_train_batch_begin / on_batch_begin(batch, logs), on_train_batch_end /
-- on_batch_end(batch, logs). Epochs and batches count from 1 (fit's "Epoch 1/3"; Keras
-- counts from 0). Before on_train_begin, fit sets cb.model to the model and cb.params to
-- {epochs =, steps = (an epoch's batches; nil when not known), verbose =}. Epoch logs hold
-- loss, the metrics, val_loss and val_<metric> (with validation data) and lr; batch logs
-- the epoch's running loss and metrics. Setting model.stop_training = true ends fit after
-- the current batch. Hooks run in the list's order, after the progress line is printed.
local gpu = require "gpu"
local options = require "gpu.options"

local raise, argerror, type_name = options.raise, options.argerror, options.type_name
local C = {}

C.hooks = { "on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end", "on_train_batch_begin",
            "on_batch_begin", "on_train_batch_end", "on_batch_end" }

-- ---- the learning rate of a fit ---------------------------------------------------------------

-- lr(model): the compiled optimizer's learning rate (its first group's), or before the
-- optimizer exists (compile{optimizer = "adam"} makes it at the first batch, once the
-- model is built) the one set for it or its Keras default
function C.get_lr(model)
  local k = rawget(model, "_keras")
  if k == nil then return nil end
  if k.optimizer then return k.optimizer.lr end
  if k.pending_lr then return k.pending_lr end
  if require("gpu.optim").is_unbound(k.opt_spec) then return k.opt_spec.lr end
  return require("gpu.optim").keras_lr[k.opt_spec]
end
function C.set_lr(model, lr)
  local k = rawget(model, "_keras")
  if k == nil then raise("set_lr: the model is not compiled") end
  if k.optimizer then k.optimizer.lr = lr else k.pending_lr = lr end
end

-- ---- the list fit runs ------------------------------------------------------------------------

local List = {}
List.__index = List

-- list(cbs, model): the checked callbacks of fit's option
function C.list(cbs, model)
  local list = {}
  for i, cb in ipairs(cbs or {}) do
    if type(cb) ~= "table" or options.is_array(cb) then
      argerror("Module:fit", 3, "callbacks[%d] is %s, expected a callback (a table with on_epoch_end = ... and the like)",
        i, type_name(cb))
    end
    local any = false
    for _, h in ipairs(C.hooks) do
      local f = cb[h]
      if f ~= nil then
        any = true
        if type(f) ~= "function" and not (getmetatable(f) or {}).__call then
          argerror("Module:fit", 3, "callbacks[%d].%s is %s, not a function", i, h, type_name(f))
        end
      end
    end
    if not any then
      argerror("Module:fit", 3, "callbacks[%d] has none of the hooks (%s)", i, table.concat(C.hooks, ", "))
    end
    list[i] = cb
  end
  local self = setmetatable({ cbs = list, model = model }, List)
  for _, cb in ipairs(list) do
    if cb.on_train_batch_end or cb.on_batch_end then self.batch_end = true end
    if cb.on_train_batch_begin or cb.on_batch_begin then self.batch_begin = true end
    if getmetatable(cb) == C.TerminateOnNaN then self.nan_ok = true end
  end
  return self
end

function List:call(hook, ...)
  for _, cb in ipairs(self.cbs) do
    local f = cb[hook]
    if f == nil and (hook == "on_train_batch_begin" or hook == "on_train_batch_end") then
      f = cb[hook:gsub("_train", "")]
    end
    if f ~= nil then f(cb, ...) end
  end
end

-- begin(model, params): cb.model and Keras's cb.params ({epochs =, steps =, verbose =};
-- steps: the batches of an epoch, nil when not known: a generator without steps_per_epoch)
function List:begin(model, params)
  for _, cb in ipairs(self.cbs) do cb.model, cb.params = model, params end
end

-- ---- helpers -----------------------------------------------------------------------------------

local function class(name, decl_keys, example)
  local cls = { __name = name }
  cls.__index = cls
  cls.decl = options.declare("nn." .. name, decl_keys, { example = example })
  setmetatable(cls, { __call = function(c, ...) return c.new(...) end })
  C[name] = cls
  return cls
end

-- mode "auto": "max" when the monitored name holds "acc" (Keras's rule), else "min"
local function resolve_mode(mode, monitor)
  if mode ~= "auto" then return mode end
  if monitor:find("acc", 1, true) or monitor:find("^fmeasure") then return "max" end
  return "min"
end

local function warn_missing(name, monitor, logs)
  local keys = {}
  for k in pairs(logs) do keys[#keys + 1] = k end
  table.sort(keys)
  io.stderr:write(("%s: the monitored '%s' is not in the logs (available: %s); skipped\n"):format(name, monitor,
    table.concat(keys, ", ")))
end

-- snapshot(model): copies of every parameter and buffer
local function snapshot(model)
  local out = {}
  for name, v in pairs(model:state_dict()) do out[name] = v:detach():copy() end
  return out
end

local monitor_keys = {
  monitor = { type = "string", default = "val_loss" },
  mode = { choices = { "auto", "min", "max" }, default = "auto" },
  verbose = { type = "integer|boolean", default = 0 },
}
local function with(keys)
  local out = {}
  for k, v in pairs(monitor_keys) do out[k] = v end
  for k, v in pairs(keys) do out[k] = v end
  return out
end
local function loud(v) return v == true or (type(v) == "number" and v > 0) end

-- ---- EarlyStopping -----------------------------------------------------------------------------

-- EarlyStopping{monitor = "val_loss", min_delta = 0, patience = 0, mode = "auto", baseline =,
-- restore_best_weights = false, start_from_epoch = 0, verbose = 0}: stops fit when the
-- monitored value has not improved by more than min_delta for patience epochs (never
-- after the first epoch); restore_best_weights puts back the best epoch's weights then.
local EarlyStopping = class("EarlyStopping", with {
  min_delta = { type = "number", default = 0 }, patience = { type = "integer", min = 0, default = 0 },
  baseline = { type = "number" }, restore_best_weights = { type = "boolean", default = false },
  start_from_epoch = { type = "integer", min = 0, default = 0 },
}, "gpu.nn.EarlyStopping(%s)")
function EarlyStopping.new(opts)
  local self = setmetatable(EarlyStopping.decl:check(opts, 1), EarlyStopping)
  self.mode = resolve_mode(self.mode, self.monitor)
  self.min_delta = math.abs(self.min_delta) * (self.mode == "min" and -1 or 1)
  return self
end
function EarlyStopping:improved(current, reference)
  if self.mode == "min" then return current - self.min_delta < reference end
  return current - self.min_delta > reference
end
function EarlyStopping:on_train_begin()
  self.wait, self.stopped_epoch, self.best_epoch, self.best_weights = 0, 0, 0, nil
  self.best = self.mode == "min" and math.huge or -math.huge
end
function EarlyStopping:on_epoch_end(epoch, logs)
  local current = logs[self.monitor]
  if current == nil then warn_missing("EarlyStopping", self.monitor, logs) return end
  if epoch <= self.start_from_epoch then return end
  if self.restore_best_weights and self.best_weights == nil then self.best_weights = snapshot(self.model) end
  self.wait = self.wait + 1
  if self:improved(current, self.best) then
    self.best, self.best_epoch = current, epoch
    if self.restore_best_weights then self.best_weights = snapshot(self.model) end
    if self.baseline == nil or self:improved(current, self.baseline) then self.wait = 0 end
    return
  end
  if self.wait >= self.patience and epoch > 1 then
    self.stopped_epoch = epoch
    self.model.stop_training = true
    if self.restore_best_weights and self.best_weights then
      if loud(self.verbose) then print(("Restoring model weights from the end of the best epoch: %d."):format(self.best_epoch)) end
      self.model:load_state_dict(self.best_weights)
    end
  end
end
function EarlyStopping:on_train_end()
  if self.stopped_epoch > 0 and loud(self.verbose) then print(("Epoch %d: early stopping"):format(self.stopped_epoch)) end
end

-- ---- ModelCheckpoint ---------------------------------------------------------------------------

-- format_path(path, epoch, logs): "{epoch}", "{epoch:02d}", "{val_loss:.2f}" filled in
-- (Python's format fields, as Keras's file paths: [0][width][.precision] then d, f, e, g
-- or s, width and precision up to 99); NaN and infinities read "nan", "inf", "-inf" as in
-- Python, and a field that must be an integer (d) refuses them.
function C.format_path(path, epoch, logs)
  return (path:gsub("{([%w_]+):?([^}]*)}", function(name, spec)
    local v = name == "epoch" and epoch or logs[name]
    if v == nil then raise("ModelCheckpoint: the path's field {%s} is neither epoch nor in the logs", name) end
    if spec == "" then return tostring(v) end
    local zero, width, prec, conv = spec:match("^(0?)(%d*)(%.?%d*)([dfegs])$")
    if not conv or prec == "." then raise("ModelCheckpoint: unsupported format {%s:%s}", name, spec) end
    if tonumber(width ~= "" and width or "0") > 99 or tonumber(prec:sub(2) ~= "" and prec:sub(2) or "0") > 99 then
      raise("ModelCheckpoint: format {%s:%s}: width and precision must be at most 99", name, spec)
    end
    if type(v) == "number" and conv ~= "s" and (v ~= v or v == math.huge or v == -math.huge) then
      local word = v ~= v and "nan" or v > 0 and "inf" or "-inf"
      if conv == "d" then raise("ModelCheckpoint: the path's field {%s:%s} needs an integer, got %s", name, spec, word) end
      return ("%" .. width .. "s"):format(word)
    end
    if conv == "d" then v = math.floor(v) end
    return ("%" .. zero .. width .. prec .. conv):format(v)
  end))
end

-- ModelCheckpoint{path, monitor = "val_loss", save_best_only = false, save_weights_only =
-- false, mode = "auto", initial_value_threshold =, verbose = 0}: saves the model (model:save:
-- architecture, weights and optimizer; save_weights_only: model:save_weights) at each
-- epoch's end, or only when the monitored value is better than any before
local ModelCheckpoint = class("ModelCheckpoint", with {
  path = { type = "string" }, filepath = { type = "string" },
  save_best_only = { type = "boolean", default = false }, save_weights_only = { type = "boolean", default = false },
  save_freq = { type = "string", choices = { "epoch" }, default = "epoch" },
  initial_value_threshold = { type = "number" },
}, "gpu.nn.ModelCheckpoint(('x'):rep(0) .. 'ckpt.safetensors', %s)")
function ModelCheckpoint.new(path, opts)
  if type(path) == "table" and opts == nil then opts, path = path, nil end
  local self = ModelCheckpoint.decl:check(opts, path and 2 or 1)
  self.path = path or self.path or self.filepath
  self.filepath = nil
  if type(self.path) ~= "string" then argerror("nn.ModelCheckpoint", 1, "a file path expected (path =)") end
  setmetatable(self, ModelCheckpoint)
  self.mode = resolve_mode(self.mode, self.monitor)
  self.best = self.initial_value_threshold or (self.mode == "min" and math.huge or -math.huge)
  return self
end
-- Under gpu.distributed (fit{distributed = true}) only rank 1 writes files: every rank sees
-- the same averaged logs, so the others keep the same state and write nothing.
local function writes_files()
  local dist = gpu.distributed
  return not (dist.is_initialized() and dist.rank() ~= 1)
end

function ModelCheckpoint:on_epoch_end(epoch, logs)
  local path = C.format_path(self.path, epoch, logs)
  if self.save_best_only then
    local current = logs[self.monitor]
    if current == nil then warn_missing("ModelCheckpoint", self.monitor, logs) return end
    local better = self.mode == "min" and current < self.best or self.mode == "max" and current > self.best
    if not better then return end
    if loud(self.verbose) then
      print(("Epoch %d: %s improved from %.5f to %.5f, saving model to %s"):format(epoch, self.monitor, self.best, current, path))
    end
    self.best = current
  elseif loud(self.verbose) then
    print(("Epoch %d: saving model to %s"):format(epoch, path))
  end
  if writes_files() then
    if self.save_weights_only then self.model:save_weights(path) else self.model:save(path) end
  end
  self.last_path = path
end

-- ---- LearningRateScheduler, ReduceLROnPlateau ------------------------------------------------------

-- LearningRateScheduler(fn [, {verbose = 0}]): at each epoch's start, lr = fn(epoch, lr)
-- (epoch from 1)
local LRS = class("LearningRateScheduler", { verbose = monitor_keys.verbose },
  "gpu.nn.LearningRateScheduler(function(e, lr) return lr end, %s)")
function LRS.new(fn, opts)
  if type(fn) ~= "function" and not (getmetatable(fn) or {}).__call then
    argerror("nn.LearningRateScheduler", 1, "a function(epoch, lr) -> lr expected, got %s", type_name(fn))
  end
  local self = setmetatable(LRS.decl:check(opts, 2), LRS)
  self.schedule = fn
  return self
end
function LRS:on_epoch_begin(epoch)
  local lr = self.schedule(epoch, C.get_lr(self.model))
  if type(lr) ~= "number" or lr ~= lr or lr < 0 then
    raise("LearningRateScheduler: the schedule returned %s for epoch %d, not a learning rate >= 0", type_name(lr), epoch)
  end
  C.set_lr(self.model, lr)
  if loud(self.verbose) then print(("Epoch %d: LearningRateScheduler setting learning rate to %s."):format(epoch, lr)) end
end

-- ReduceLROnPlateau{monitor = "val_loss", factor = 0.1, patience = 10, mode = "auto", min_delta
-- = 1e-4, cooldown = 0, min_lr = 0, verbose = 0}: Keras's (the optimizer's lr times factor
-- after patience epochs without an improvement by more than min_delta)
local Plateau = class("ReduceLROnPlateau", with {
  factor = { type = "number", min = 0, max = 1, max_open = true, default = 0.1 },
  patience = { type = "integer", min = 0, default = 10 }, min_delta = { type = "number", default = 1e-4 },
  cooldown = { type = "integer", min = 0, default = 0 }, min_lr = { type = "number", min = 0, default = 0 },
}, "gpu.nn.ReduceLROnPlateau(%s)")
function Plateau.new(opts)
  local self = setmetatable(Plateau.decl:check(opts, 1), Plateau)
  self.mode = resolve_mode(self.mode, self.monitor)
  return self
end
function Plateau:on_train_begin()
  self.best = self.mode == "min" and math.huge or -math.huge
  self.wait, self.cooldown_counter = 0, 0
end
function Plateau:on_epoch_end(epoch, logs)
  local current = logs[self.monitor]
  if current == nil then warn_missing("ReduceLROnPlateau", self.monitor, logs) return end
  if self.cooldown_counter > 0 then
    self.cooldown_counter = self.cooldown_counter - 1
    self.wait = 0
  end
  local better = self.mode == "min" and current < self.best - self.min_delta
    or self.mode == "max" and current > self.best + self.min_delta
  if better then
    self.best, self.wait = current, 0
  elseif self.cooldown_counter <= 0 then
    self.wait = self.wait + 1
    if self.wait >= self.patience then
      local old = C.get_lr(self.model)
      if old and old > self.min_lr then
        local new = math.max(old * self.factor, self.min_lr)
        C.set_lr(self.model, new)
        if loud(self.verbose) then print(("Epoch %d: ReduceLROnPlateau reducing learning rate to %s."):format(epoch, new)) end
        self.cooldown_counter, self.wait = self.cooldown, 0
      end
    end
  end
end

-- ---- CSVLogger, TerminateOnNaN ---------------------------------------------------------------------

-- shortest(v): the shortest decimal that reads back as v (Python's repr)
local function shortest(v)
  if math.type(v) == "integer" then return tostring(v) end
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" elseif v == -math.huge then return "-inf" end
  for p = 1, 17 do
    local s = ("%." .. p .. "g"):format(v)
    if tonumber(s) == v then return s end
  end
  return ("%.17g"):format(v)
end

-- CSVLogger(path [, {separator = ",", append = false}]): one row per epoch: epoch, then
-- the logs in sorted order, under a header row
local CSV = class("CSVLogger", { separator = { type = "string", default = "," },
  append = { type = "boolean", default = false } }, "gpu.nn.CSVLogger('log.csv', %s)")
function CSV.new(path, opts)
  options.value(path, { type = "string" }, "nn.CSVLogger", 1, "path")
  local self = setmetatable(CSV.decl:check(opts, 2), CSV)
  self.path = path
  return self
end
function CSV:on_train_begin()
  if not writes_files() then return end
  local existed = false
  if self.append then
    local f = io.open(self.path, "rb")
    if f then existed = (f:read(1) ~= nil); f:close() end
  end
  local f, err = io.open(self.path, self.append and "ab" or "wb")
  if f == nil then raise("CSVLogger: cannot write %s (%s)", self.path, err) end
  self.file, self.keys = f, nil
  self.header_done = existed
end
function CSV:on_epoch_end(epoch, logs)
  if self.file == nil then return end     -- not the writing rank
  if self.keys == nil then
    local keys = {}
    for k in pairs(logs) do keys[#keys + 1] = k end
    table.sort(keys)
    self.keys = keys
    if not self.header_done then
      self.file:write("epoch", self.separator, table.concat(keys, self.separator), "\n")
    end
  end
  local row = { tostring(epoch) }
  for _, k in ipairs(self.keys) do
    local v = logs[k]
    row[#row + 1] = type(v) == "number" and shortest(v) or (v == nil and "NA" or tostring(v))
  end
  self.file:write(table.concat(row, self.separator), "\n")
  self.file:flush()
end
function CSV:on_train_end()
  if self.file then self.file:close(); self.file = nil end
end

-- TerminateOnNaN(): stops fit at the first batch whose loss is NaN or infinite
local TerminateOnNaN = class("TerminateOnNaN", {}, "gpu.nn.TerminateOnNaN(%s)")
function TerminateOnNaN.new(opts)
  TerminateOnNaN.decl:check(opts, 1)
  return setmetatable({}, TerminateOnNaN)
end
function TerminateOnNaN:on_train_batch_end(batch, logs)
  local l = logs.loss
  if l ~= nil and (l ~= l or l == math.huge or l == -math.huge) then
    print(("Batch %d: Invalid loss, terminating training"):format(batch))
    self.model.stop_training = true
    self.terminated_at = batch
  end
end

-- LambdaCallback{on_epoch_begin =, on_epoch_end =, on_train_begin =, on_train_end =,
-- on_train_batch_begin =, on_train_batch_end =}: Keras's callback of plain functions, called
-- as Keras calls them, without self: f(epoch, logs), f(batch, logs), f(logs) (epochs and
-- batches from 1, as fit's other hooks)
local LAMBDA_HOOKS = { "on_epoch_begin", "on_epoch_end", "on_train_begin", "on_train_end", "on_train_batch_begin",
                       "on_train_batch_end", "on_batch_begin", "on_batch_end" }
local lambda_keys = {}
for _, h in ipairs(LAMBDA_HOOKS) do lambda_keys[h] = { type = "callable", what = "a function" } end
local LambdaCallback = class("LambdaCallback", lambda_keys,
  "gpu.nn.LambdaCallback(%s)")
function LambdaCallback.new(opts)
  local o = LambdaCallback.decl:check(opts, 1)
  local cb = setmetatable({}, LambdaCallback)
  for _, h in ipairs(LAMBDA_HOOKS) do
    local f = o[h]
    if f ~= nil then cb[h] = function(_, ...) return f(...) end end
  end
  return cb
end

-- Callback: a base to derive from (its hooks do nothing): local MyCb = setmetatable({}, {__index = gpu.nn.Callback})
C.Callback = {}
for _, h in ipairs { "on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end" } do
  C.Callback[h] = function() end
end

return options.count_all("nn.callbacks.", C)
