-- gpu.nn.training: Keras-style training on any module: compile, fit, evaluate, predict.
--
--   model:compile{optimizer = "adam", loss = "sparse_categorical_crossentropy", metrics = {"accuracy"}}
--   model:compile("adam", "sparse_categorical_crossentropy", {"accuracy"})     -- the same
--   local history = model:fit(x, y, {epochs = 10, batch_size = 32, validation_split = 0.1})
--
-- compile checks everything before it changes anything, so a failed compile leaves the
-- model configured as it was. Batches are moved to the parameters' device.

local gpu = require "gpu"
local autograd = require "gpu.autograd"
local optim = require "gpu.optim"
local data = require "gpu.data"
local losses = require "gpu.nn.losses"
local regularizers = require "gpu.nn.regularizers"
local Module = require("gpu.nn.module").Module
local callbacks = require "gpu.nn.callbacks"
local fit_data = require "gpu.nn.fit_data"
local options = require "gpu.options"
local raise, argerror, check_array, type_name = options.raise, options.argerror, options.check_array,
  options.type_name

-- ---- compile ---------------------------------------------------------------------------------

-- A metric's running count: a Lua number, or a 0-d array summed on the device, which is
-- read (one wait for the device) only when shown, not at every step.
local function count_value(c) return type(c) == "number" and c or c:item() end

-- accuracy(pred (N, C), y): the number of rows whose largest prediction is the label (y
-- (N) of 1..C) or the largest target (y (N, C)), a 0-d array on pred's device; for
-- predictions (N) or (N, 1), Keras's binary accuracy. Only shapes are checked here (the
-- loss checks the labels' values: no wait for the device).
local metrics = require "gpu.nn.metrics"
local function accuracy(pred, y)
  -- one output per sample: Keras's binary accuracy (pred > 0.5 against the 0/1 target)
  if pred.ndim == 1 or (pred.ndim == 2 and pred.shape[2] == 1) then return metrics.binary_accuracy(pred, y) end
  local n = pred.shape[1]
  if not options.is_array(y) or y.shape[1] ~= n or (y.ndim ~= 1 and options.shape_str(y.shape) ~=
      options.shape_str(pred.shape)) then
    raise("accuracy: expected labels (%d) or targets %s for predictions %s", n, options.shape_str(pred.shape),
      options.shape_str(pred.shape))
  end
  local p = pred:argmax(2)
  local want = y.ndim == 2 and y:argmax(2) or y:astype(p.dtype)
  return p:eq(want):sum()
end
-- accuracy picks labels or one-hot targets by y's shape; the others are Keras's (nn/metrics.lua)
local metric_fns = { accuracy = accuracy, acc = accuracy }
local metric_names = { "acc", "accuracy" }
for _, name in ipairs(metrics.names) do metric_fns[name] = metrics[name]; metric_names[#metric_names + 1] = name end
table.sort(metric_names)


-- name, choices -> "unknown <what> 'x'; did you mean 'y'? (expected one of ...)"
local function unknown(what, name, choices)
  local near = options.nearest(name, choices)
  raise("Module:compile: unknown %s '%s'%s (expected one of %s)", what, name,
    near and ("; did you mean '" .. near .. "'?") or "", table.concat(choices, ", "))
end

local function resolve_loss(loss)
  if type(loss) == "string" then
    local f = losses.losses[loss]
    if f == nil then unknown("loss", loss, options.sorted_keys(losses.losses)) end
    return loss, f
  end
  return "custom", function(p, y) return loss(p, y) end
end

local function resolve_optimizer(spec)
  if type(spec) == "string" then
    if optim.by_name(spec) == nil then unknown("optimizer", spec, optim.names) end
    return spec, nil
  end
  if optim.is_unbound(spec) then return spec, nil end          -- bound at the first batch
  if not optim.is_optimizer(spec) then
    argerror("Module:compile", 1, "option 'optimizer' must be a name or an optimizer, got %s", type_name(spec))
  end
  return spec, spec
end

-- ---- weighted metrics -------------------------------------------------------------------------

-- The per-sample values of the counting metrics a weighted metric can be made of (Keras's
-- MeanMetricWrapper: the value of each sample, its mean over the last axis): nn/metrics.lua's,
-- and accuracy's choice between them by the predictions' shape, as the counting accuracy's
local function last_mean(v)
  if v.dtype == "bool" then v = v:astype("float32") end
  if v.ndim >= 2 then return v:mean(v.ndim) end
  return v
end
local per_sample = {}
for _, name in ipairs { "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy", "mae", "mse" } do
  local f = metrics._values[name]
  per_sample[name] = function(pred, y) return last_mean(f(pred, y)) end
end
function per_sample.accuracy(pred, y)
  if pred.ndim == 1 or (pred.ndim == 2 and pred.shape[2] == 1) then return per_sample.binary_accuracy(pred, y) end
  if options.is_array(y) and y.ndim == 2 then return per_sample.categorical_accuracy(pred, y) end
  return per_sample.sparse_categorical_accuracy(pred, y)
end
per_sample.acc, per_sample.mean_absolute_error, per_sample.mean_squared_error = per_sample.accuracy, per_sample.mae,
  per_sample.mse

-- A counting metric weighed by the samples' weights: sum(value x weight) / sum(weight) over
-- the epoch (each sample's weight on each of its values past the batch axis), unweighted
-- (every weight 1) where a batch has none.
local function weighted_mean(name, fn)
  local total, count = 0, 0
  local o = { name = name }
  function o:update_state(y, pred, w)
    local v = fn(pred, y)
    if w == nil then
      total, count = total + v:sum():item(), count + v.size
      return
    end
    local shape = { w.shape[1] }
    for d = 2, v.ndim do shape[d] = 1 end
    local wb = w:astype(v.dtype):reshape(shape) * gpu.ones(v.shape, { dtype = v.dtype, device = v.device })
    total, count = total + (v * wb):sum():item(), count + wb:sum():item()
  end
  function o:result() return count > 0 and total / count or 0 end
  function o:reset_state() total, count = 0, 0 end
  return o
end

-- The metrics of compile: names of counting functions (metric_fns), and Keras's stateful
-- metrics (gpu.nn.keras_metrics) as objects or by snake_case name (a new object each).
-- weighted (compile's weighted_metrics): each gets the batch's sample weights (stateful
-- objects, the counting names as weighted means), named "weighted_<name>" where an
-- unweighted metric has its name, as Keras 3; names: the unweighted ones.
local function resolve_metrics(list, weighted, names)
  local out = {}
  local key = weighted and "weighted_metrics" or "metrics"
  local unweighted = names
  names = {}
  for i, m in ipairs(list or {}) do
    local entry
    if metrics.is_metric(m) then
      entry = { name = m.name, obj = m, spec = m.name }
    elseif type(m) ~= "string" then
      argerror("Module:compile", 1, "%s[%d] must be a metric name or a gpu.nn.metrics object, got %s", key, i,
        type_name(m))
    elseif weighted and per_sample[m] ~= nil then
      local name = m == "acc" and "accuracy" or m
      entry = { name = name, obj = weighted_mean(name, per_sample[m]), spec = m }
    elseif weighted and metric_fns[m] ~= nil then
      argerror("Module:compile", 1, "weighted_metrics[%d]: '%s' cannot be weighed by sample (give a gpu.nn.metrics "
        .. "object, or one of accuracy, binary_accuracy, categorical_accuracy, sparse_categorical_accuracy, mae, mse)",
        i, m)
    elseif metric_fns[m] ~= nil then
      entry = { name = m == "acc" and "accuracy" or m, fn = metric_fns[m], spec = m }
    elseif metrics.by_name[m] ~= nil then
      entry = { name = m, obj = metrics.by_name[m](), spec = m }
    else
      local choices = { table.unpack(metric_names) }
      for n in pairs(metrics.by_name) do choices[#choices + 1] = n end
      table.sort(choices)
      unknown("metric", m, choices)
    end
    if weighted then
      entry.weighted = true
      if unweighted[entry.name] then entry.name = "weighted_" .. entry.name end
      if unweighted[entry.obj] then
        raise("Module:compile: weighted_metrics[%d] is an object metrics holds too (give each list its own)", i)
      end
    end
    if names[entry.name] then raise("Module:compile: two metrics are named '%s' (give one another name)", entry.name) end
    names[entry.name] = true
    if entry.obj then names[entry.obj] = true end
    out[#out + 1] = entry
  end
  return out, names
end

local COMPILE = options.declare("Module:compile", {
  optimizer = { type = "string|table", default = "rmsprop" },
  loss = { type = "string|callable", default = "sparse_categorical_crossentropy" },
  metrics = { type = "table" },
  weighted_metrics = { type = "table" },
}, { example = "gpu.nn.Sequential{gpu.nn.Linear(2, 2)}:compile(%s)" })

-- compile{optimizer = "rmsprop", loss = "sparse_categorical_crossentropy", metrics = {}}, or
-- Keras's positional compile(optimizer [, loss [, metrics]]).
function Module:compile(opts, loss, metrics)
  if type(opts) == "string" or optim.is_optimizer(opts) or optim.is_unbound(opts) then
    opts = { optimizer = opts,
             loss = options.value(loss, COMPILE.keys.loss, "Module:compile", 2, "loss"),
             metrics = options.value(metrics, { type = "table", optional = true }, "Module:compile", 3, "metrics") }
  elseif loss ~= nil or metrics ~= nil then
    argerror("Module:compile", 1, "compile{optimizer =, loss =, metrics =} or compile(optimizer, loss, metrics) " ..
      "expected, got %s first", type_name(opts))
  end
  local o = COMPILE:check(opts, 1)
  local loss_name, loss_fn = resolve_loss(o.loss)
  local opt_spec, optimizer = resolve_optimizer(o.optimizer)
  local metric_list, taken = resolve_metrics(o.metrics)
  local weighted = resolve_metrics(o.weighted_metrics, true, taken)
  for _, e in ipairs(weighted) do metric_list[#metric_list + 1] = e end
  self._keras = { loss_name = loss_name, loss = loss_fn, opt_spec = opt_spec, optimizer = optimizer,
                  metrics = metric_list }
  -- Keras's model.optimizer: the object given (an unbound one becomes the optimizer at the
  -- first batch), or the one a name makes then
  rawset(self, "optimizer", type(opt_spec) ~= "string" and opt_spec or nil)
  return self
end

local function compiled(self, fname)
  local k = rawget(self, "_keras")
  if k == nil then raise("%s: call compile{optimizer =, loss =} first", fname) end
  return k
end

-- The optimizer, made at the first batch when compile named one (the parameters of a
-- model built at its first call exist only then).
local function optimizer_of(self, k)
  if k.optimizer then return k.optimizer end
  local params = self:trainable_weights()
  if #params == 0 then
    if #self:parameters() > 0 then
      raise("Module:fit: every parameter is frozen (trainable = false): nothing to train")
    end
    raise("Module:fit: the model has no parameters yet (give the first layer input_shape =, or call the model once)")
  end
  if optim.is_unbound(k.opt_spec) then
    k.optimizer = k.opt_spec:bind(params)
  elseif type(k.opt_spec) ~= "string" then    -- an unbound optimizer that another model bound first
    raise("Module:fit: the optimizer given to compile was bound to another model's parameters (give each model "
      .. "its own)")
  else
    k.optimizer = optim.by_name(k.opt_spec)(params)
  end
  rawset(self, "optimizer", k.optimizer)
  if k.pending_lr then k.optimizer.lr, k.pending_lr = k.pending_lr, nil end   -- set by a callback before
  return k.optimizer
end

-- ---- shared by fit, evaluate and predict -----------------------------------------------------

-- x (and y, unless y_optional and nil): arrays with one sample per row, as many of each.
local function check_xy(fname, x, y, y_optional)
  check_array(x, fname, 1, "x")
  if x.ndim == 0 or x.shape[1] == 0 then
    raise("%s: x has no samples (shape %s)", fname, options.shape_str(x.shape))
  end
  if y == nil and y_optional then return end
  check_array(y, fname, 2, "y")
  if y.ndim == 0 or x.shape[1] ~= y.shape[1] then
    raise("%s: x has %d samples but y has %d", fname, x.shape[1], y.ndim > 0 and y.shape[1] or 0)
  end
end

-- model_device(m): where the model's parameters are (nil before they exist)
local function model_device(m)
  for _, p in ipairs(m:parameters()) do return p.device end
end

local function new_counts(k)
  local c = {}
  for _, m in ipairs(k.metrics) do
    c[m.name] = 0
    if m.obj then m.obj:reset_state() end
  end
  return c
end

-- wb: the batch's sample weights (nil: none), which the weighted metrics take
local function add_counts(k, counts, pred, yb, wb)
  for _, m in ipairs(k.metrics) do
    if m.weighted then m.obj:update_state(yb, pred, wb)
    elseif m.obj then m.obj:update_state(yb, pred) else counts[m.name] = counts[m.name] + m.fn(pred, yb) end
  end
end

-- A metric's value over the samples seen: a count's mean, or a stateful metric's result
local function metric_value(m, counts, seen)
  if m.obj then return m.obj:result() end
  return count_value(counts[m.name]) / seen
end

-- Stateful metrics hold this rank's state only: they are refused with distributed data
local function no_stateful(k, fname)
  for _, m in ipairs(k.metrics) do
    if m.obj then
      raise("%s: the metric '%s' keeps a state of this process's samples; distributed fit and evaluate take " ..
        "the counting metrics (names such as 'accuracy') only", fname, m.name)
    end
  end
end

-- ---- distributed (fit/evaluate/predict with distributed = true) ------------------------------

local function dist()
  local d = gpu.distributed
  if not d.is_initialized() then d.init() end
  return d
end

-- This rank's contiguous share of n samples: rows a..b (b < a: none), exactly n in all.
local function share(n)
  local d = dist()
  local W, r = d.world_size(), d.rank()
  return (r - 1) * n // W + 1, r * n // W
end

-- Sums of Lua numbers over the ranks (float64, one all-reduce).
local function sum_over_ranks(values)
  local t = gpu.array(values, { dtype = "float64", device = "cpu" })
  dist().all_reduce(t)
  return t:totable()
end

-- One pass over the data without updates or tape: {loss =, <metric> = ...} as Lua numbers.
-- x: arrays (with y), a DataLoader, or a generator's reader (fit_data.reader; its next
-- batches). e = {fname, steps, steps_key, hint}: at most e.steps batches (arrays and a
-- loader from their start), Keras's warning when the data ends first (naming the option
-- e.steps_key), e.hint added to the error of a generator that gives no batch.
-- distributed: each rank passes over its share and the sums are added over the ranks (a
-- loader on its DistributedSampler share, padded to equal shares as torch's: a few
-- samples may count twice).
-- The sample_weight option of fit and evaluate (form: the data's form, x the inputs),
-- checked: one real weight per sample of arrays x, y.
local function checked_sample_weight(fname, w, form, x)
  if form ~= "arrays" then
    raise("%s: sample_weight needs arrays x, y (a DataLoader, a Dataset or a generator gives the weights "
      .. "with its batches, as their third value: x, y, w)", fname)
  end
  local n = x.shape[1]
  if w.ndim ~= 1 or w.shape[1] ~= n then
    argerror(fname, 3, "option 'sample_weight' must have one weight per sample (shape (%d)), got shape %s", n,
      options.shape_str(w.shape))
  end
  if w.dtype:match("^complex") or w.dtype == "bool" then
    argerror(fname, 3, "option 'sample_weight' must be a real array, got %s", w.dtype)
  end
  return w
end

local weighted_loss               -- below: Keras's loss of a batch with its samples' weights

-- e.sample_weight (arrays x, y only), or the weights a loader's or a generator's batches give
-- as their third value: each batch's loss is Keras's weighted one
local function run_eval(self, k, x, y, bs, distributed, e)
  e = e or {}
  local fname = e.fname or "Module:evaluate"
  local device = model_device(self)
  local nxt
  if fit_data.is_loader(x) then
    nxt = fit_data.batches(fname, distributed and fit_data.distributed(fname, x) or x, device, true)
  elseif type(x) == "table" and x.is_reader then
    nxt = fit_data.from_reader(x, device)
  else
    local xs, ys = x, y
    if distributed then
      local a, b = share(x.shape[1])
      xs, ys = b >= a and x[{ { a, b } }] or nil, b >= a and y[{ { a, b } }] or nil
    end
    nxt = xs and data.batches(xs, ys, bs, { device = device }) or function() end
  end
  local batches, state = fit_data.limit(nxt, e.steps)
  local loss_sum, n, counts = 0, 0, new_counts(k)
  local regularized = regularizers.has(self)
  local sw = e.sample_weight                   -- the batches are x's rows in order
  autograd.no_grad(function()
    for xb, yb, bw in batches do
      local pred = self(xb)
      local lv
      local wb = sw and sw[{ { n + 1, n + xb.shape[1] } }]:to(yb.device) or bw and bw:to(yb.device)
      if wb then lv = weighted_loss(k, pred, yb, wb, fname):item() else lv = k.loss(pred, yb):item() end
      if regularized then                     -- Keras's model.losses join evaluate's loss too
        local pen = regularizers.total(self)
        if pen then lv = lv + pen:item() end
      end
      loss_sum = loss_sum + lv * xb.shape[1]
      add_counts(k, counts, pred, yb, wb)
      n = n + xb.shape[1]
    end
  end)
  local v = { loss_sum, n }
  for i, m in ipairs(k.metrics) do v[i + 2] = m.obj and 0 or count_value(counts[m.name]) end
  if distributed then no_stateful(k, fname); v = sum_over_ranks(v) end
  if v[2] == 0 then
    if type(x) == "table" and x.is_reader then raise("%s: the generator gave no batches%s", fname, e.hint or "") end
    raise("%s: the %s gave no samples", fname, fit_data.is_loader(x) and "loader" or "data")
  end
  if state.short then
    fit_data.ran_out(fname, "the evaluation", ("%s = %d batches"):format(e.steps_key or "steps", e.steps))
  end
  local out = { loss = v[1] / v[2] }
  for i, m in ipairs(k.metrics) do out[m.name] = m.obj and m.obj:result() or v[i + 2] / v[2] end
  return out
end

-- fn() in eval mode, the previous mode restored after (also when fn raises).
local function in_eval(self, fn)
  local was = self.training
  self:eval()
  local res = table.pack(pcall(fn))
  self:train(was)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- ---- progress --------------------------------------------------------------------------------
-- Keras's lines: on a terminal (verbose = 1) "Epoch 1/3", then a bar redrawn in place and
-- left as the epoch's line
--   469/469 [==============================] - 2.1s 4ms/step - loss: 0.5000 - accuracy: 0.8000
-- fitted to the terminal's width (a shorter bar, then no bar, then fewer fields); elsewhere
-- (verbose = 2, or output to a file or a pipe) one line per epoch:
--   Epoch 1/3 - 469/469 - 2.1s 4ms/step - loss: 0.5000 - accuracy: 0.8000

local P = {}

-- A metric's value as shown: "%.4f", a list (per threshold or class) as "[a b c]"
function P.value(v)
  if type(v) ~= "table" then return ("%.4f"):format(v) end
  local parts = {}
  for i, x in ipairs(v) do parts[i] = ("%.4f"):format(x) end
  return "[" .. table.concat(parts, " ") .. "]"
end
local BAR, MIN_BAR = 30, 10      -- the bar's width, and the narrowest worth drawing

local function fmt_time(s)
  if s >= 3600 then return ("%dh%02dm"):format(s // 3600, (s % 3600) // 60) end
  if s >= 60 then return ("%dm%02ds"):format(s // 60, math.floor(s % 60)) end
  return ("%.1fs"):format(s)
end

local function per_step(elapsed, steps)
  local t = elapsed / math.max(steps, 1)
  if t >= 1 then return ("%.1fs/step"):format(t) end
  if t >= 1e-3 then return ("%dms/step"):format(math.floor(t * 1e3 + 0.5)) end
  return ("%dus/step"):format(math.floor(t * 1e6 + 0.5))
end

local function bar_text(done, total, w)
  local filled = math.floor(w * done / total)
  return "[" .. string.rep("=", filled) .. (filled < w and ">" or "") ..
    string.rep(".", math.max(0, w - filled - 1)) .. "]"
end

-- The shown values as text: {name, number} pairs, or a string shown as it is.
local function field_texts(vals)
  local out = {}
  for i, kv in ipairs(vals) do
    out[i] = type(kv) == "string" and kv or ("%s: %s"):format(kv[1], P.value(kv[2]))
  end
  return out
end

-- line(done, total, elapsed, vals [, width [, bar [, keep]]]): the progress line after
-- done of total steps, at most width characters (no limit when nil): with bar, a bar of
-- up to 30 columns, shortened to fit, dropped below 10; then the last fields are dropped,
-- and at last the line is cut. With keep (an epoch's last line, never redrawn: it may
-- wrap), the bar is fitted but every field stays, and the time is the epoch's (also when
-- it ended before total: the data ran out). total nil (or below done): not known (a
-- generator's first epoch): "12/Unknown", no bar, the time so far, as Keras shows it.
function P.line(done, total, elapsed, vals, width, bar, keep)
  if total ~= nil and total < done then total = nil end
  if total == nil then bar = false end
  local head = total and ("%" .. #tostring(total) .. "d/%d"):format(done, total) or ("%d/Unknown"):format(done)
  local time = total and done < total and not keep and "ETA: " .. fmt_time(done > 0 and elapsed / done * (total - done) or 0)
    or fmt_time(elapsed) .. " " .. per_step(elapsed, done)
  local fields = field_texts(vals)
  width = width or math.huge
  local function build(barw, nf)
    local parts = { barw and head .. " " .. bar_text(done, total, barw) or head, time }
    for i = 1, nf do parts[#parts + 1] = fields[i] end
    return table.concat(parts, " - ")
  end
  if bar then
    local room = width - #build(nil, #fields) - 3          -- " [" and "]"
    if room >= MIN_BAR then return build(math.min(BAR, room), #fields) end
  end
  if keep then return build(nil, #fields) end
  for nf = #fields, 0, -1 do
    local line = build(nil, nf)
    if #line <= width then return line end
  end
  return build(nil, 0):sub(1, width)
end

-- redraw(line): what rewrites the terminal's current line: back to its start, the text,
-- and the rest of the line cleared (a shorter line leaves no stale digits).
function P.redraw(line) return "\r" .. line .. "\27[K" end

function P.header(epoch, epochs) return ("Epoch %d/%d"):format(epoch, epochs) end

-- plain_line(epoch, epochs, steps, elapsed, vals [, total]): the one line of an epoch off a
-- terminal (total: the steps it was to take, when the data ran out first).
function P.plain_line(epoch, epochs, steps, elapsed, vals, total)
  return P.header(epoch, epochs) .. " - " .. P.line(steps, total or steps, elapsed, vals, nil, false, true)
end

-- terminal_width(): the columns a bar may use on io.stdout, nil when it is not a terminal
-- (or TERM=dumb, or GPULUA_PLAIN is set): the terminal's width (TIOCGWINSZ), else
-- $COLUMNS, else 80; one less, so that the cursor never wraps at the last column. The
-- specs replace it to draw as on a terminal.
function P.terminal_width()
  if not gpu.isatty(io.stdout) or os.getenv("TERM") == "dumb" or os.getenv("GPULUA_PLAIN") then return nil end
  return P.width()
end
function P.width()
  local cols = gpu.terminal_size(io.stdout) or math.tointeger(tonumber(os.getenv("COLUMNS") or ""))
  if cols == nil or cols < 2 then cols = 80 end
  return cols - 1
end

-- The {name, value} pairs a progress line shows: the loss, then each metric.
local function shown(k, loss, counts, seen)
  local vals = { { "loss", loss } }
  for _, m in ipairs(k.metrics) do vals[#vals + 1] = { m.name, metric_value(m, counts, seen) } end
  return vals
end

-- ---- fit -------------------------------------------------------------------------------------

local FIT = options.declare("Module:fit", {
  epochs = { type = "integer", min = 0, default = 1 },
  batch_size = { type = "integer", min = 1 },          -- 32, or with steps_per_epoch over arrays ceil(n / steps)
  shuffle = { type = "boolean", default = true },
  steps_per_epoch = { type = "integer", min = 1 },
  validation_split = { type = "number", min = 0, max = 1, min_open = true, max_open = true },
  validation_data = { type = "table|function", check = function(v)
    return fit_data.is_generator(v) or fit_data.is_source(v) or #v == 2,
      "must be {x_val, y_val}, a DataLoader, a Dataset or a generator"
  end },
  validation_steps = { type = "integer", min = 1 },
  verbose = { type = "integer|boolean|string", default = 1, what = "0, 1, 2, a boolean or 'auto'",
              check = function(v) return v == true or v == false or v == "auto" or v == 0 or v == 1 or v == 2 end },
  progress = { choices = { "bar", "plain" } },
  precision = { type = "string|boolean" },
  grad_scaler = { type = "table", check = function(v) return optim.is_grad_scaler(v), "must be a GradScaler" end },
  callbacks = { type = "table", what = "a list of callbacks" },
  distributed = { type = "boolean", default = false },
  initial_epoch = { type = "integer", min = 0, default = 0 },
  sample_weight = { type = "array" },
  class_weight = { type = "table", what = "a table of class label -> weight", check = function(v)
    for c, w in pairs(v) do
      if math.type(c) ~= "integer" or c < 0 then
        return false, "must have class labels as keys (1-based labels, or 0 and 1 for binary targets)"
      end
      if type(w) ~= "number" or w ~= w or w < 0 or w == math.huge then
        return false, ("must have finite weights >= 0 (class %d's is %s)"):format(c, tostring(w))
      end
    end
    return true
  end },
  validation_freq = { type = "integer|table", what = "an integer >= 1 or a list of epochs", check = function(v)
    if type(v) == "number" then return v >= 1, "must be >= 1" end
    local n = 0
    for _ in pairs(v) do n = n + 1 end
    if n == 0 or n ~= #v then return false, "must be a list of epoch numbers" end
    for i, e in ipairs(v) do
      if math.type(e) ~= "integer" or e < 1 then return false, ("entry %d must be an epoch number >= 1"):format(i) end
    end
    return true
  end },
}, { example = "local m = gpu.nn.Sequential{gpu.nn.Linear(2, 2)}; m:compile{optimizer = 'sgd', loss = 'mse'}; " ..
     "m:fit(gpu.ones(4, 2), gpu.ones(4, 2), %s)" })

-- The plan of a fit from its checked options: data split, verbosity, precision, and the
-- feed of each epoch's batches (fit_data's array_feed, loader_feed or generator_feed).
-- source: "arrays", "loader" (a DataLoader, or a Dataset in one) or "generator".
local function fit_plan(self, x, y, o, loader, source)
  local run = { x = source == "arrays" and x or nil, y = y, loader = loader, epochs = o.epochs,
                shuffle = o.shuffle, gen = source == "generator" and x or nil, vsteps = o.validation_steps }
  local v = o.verbose
  run.verbose = (v == true or v == "auto") and 1 or v == false and 0 or v
  if o.precision ~= nil then
    run.amp_dtype = require("gpu.amp").dtype_name("Module:fit", o.precision, 3)
    if run.amp_dtype == "float16" then
      run.scaler = o.grad_scaler or self.grad_scaler or optim.GradScaler()
      self.grad_scaler = run.scaler
    end
  end
  local vd = o.validation_data
  if vd and fit_data.is_generator(vd) then
    run.vgen = fit_data.reader("Module:fit (validation_data)", vd, true)
  elseif vd and fit_data.is_source(vd) then
    run.vloader = fit_data.loader_of("Module:fit (validation_data)", 3, vd, math.max(o.batch_size or 32, 256), false)
  elseif vd then
    run.xv, run.yv = vd[1], vd[2]
    check_xy("Module:fit (validation_data)", run.xv, run.yv)
  elseif o.validation_split and source ~= "arrays" then
    raise("Module:fit: validation_split needs arrays x, y (give validation_data = a DataLoader, a Dataset or a "
      .. "generator)")
  elseif o.validation_split then
    local n = x.shape[1]
    local nv = math.floor(n * o.validation_split)
    if nv < 1 or nv >= n then raise("Module:fit: validation_split leaves no training or no validation samples") end
    -- Keras takes the last fraction, before shuffling
    run.xv, run.yv = x[{ { n - nv + 1, n } }], y[{ { n - nv + 1, n } }]
    run.x, run.y = x[{ { 1, n - nv } }], y[{ { 1, n - nv } }]
    if o.sample_weight then run.sw_rows = { 1, n - nv } end
  end
  if o.class_weight and o.sample_weight then
    raise("Module:fit: give class_weight or sample_weight, not both (as Keras; fold the classes' weights into "
      .. "sample_weight)")
  end
  if o.class_weight then            -- as a list over the labels 0 .. the largest given
    local n = 0
    for c in pairs(o.class_weight) do n = math.max(n, c) end
    run.class_weight = {}
    for c = 0, n do run.class_weight[c + 1] = o.class_weight[c] or 1 end
  end
  if o.sample_weight then
    local w = checked_sample_weight("Module:fit", o.sample_weight, source, x)
    if run.sw_rows then                        -- validation_split: the last rows' weights weigh val_loss (Keras)
      run.val_sample_weight = w[{ { run.sw_rows[2] + 1, w.shape[1] } }]
      w = w[{ run.sw_rows }]
    end
    run.sample_weight, run.y_all = w, run.y
  end
  if o.validation_steps and not (run.vgen or run.vloader or run.xv) then
    raise("Module:fit: validation_steps needs validation_data (or validation_split)")
  end
  -- Keras's batch size: 32, or over arrays with steps_per_epoch the one that makes one pass
  -- of steps_per_epoch batches
  run.bs = o.batch_size or (source == "arrays" and o.steps_per_epoch and
    (run.x.shape[1] + o.steps_per_epoch - 1) // o.steps_per_epoch) or 32
  if o.distributed then
    if run.gen or run.vgen then
      raise("Module:fit: distributed = true takes arrays, a DataLoader or a Dataset, not a generator (each rank "
        .. "would need its own share of its batches)")
    end
    -- DistributedDataParallel around the model (made once: its hooks stay on the parameters),
    -- each rank on its DistributedSampler share, only rank 1 printing
    local d = dist()
    local ddp = rawget(self, "_ddp")
    if ddp == nil then
      -- layers that make their parameters at the first call (Dense without input_shape) are
      -- built first, on one sample, so that the wrapper sees and broadcasts every parameter
      local x1 = run.x
      if run.loader then x1 = fit_data.batches("Module:fit", run.loader, nil, true)() end
      if x1 == nil then raise("Module:fit: the loader gave no batches") end
      in_eval(self, function() autograd.no_grad(function() self(x1[{ { 1, 1 } }]:to(model_device(self) or x1.device)) end) end)
      ddp = require("gpu.nn.ddp").DistributedDataParallel(self)
      rawset(self, "_ddp", ddp)
    else
      gpu.no_grad(function() for _, p in ipairs(self:parameters()) do d.broadcast(p, 1) end end)
    end
    run.net = ddp
    if run.loader then        -- the loader's own sampler, made distributed
      run.loader, run.dist_loader = fit_data.distributed("Module:fit", run.loader), true
    else
      run.sampler = data.DistributedSampler(run.x.shape[1], { shuffle = run.shuffle })
    end
    if d.rank() ~= 1 then run.verbose = 0 end
  end
  local function device_of() return model_device(self) end
  if run.gen then
    run.feed = fit_data.generator_feed("Module:fit", run.gen, { steps = o.steps_per_epoch, device_of = device_of })
  elseif run.loader then
    run.feed = fit_data.loader_feed("Module:fit", run.loader, { steps = o.steps_per_epoch, device_of = device_of,
      set_epoch = run.dist_loader })
  else
    -- with sample_weight the feed gives each batch's row numbers in y's place (the batch's
    -- targets and weights are taken by them)
    local yfeed = run.sample_weight and gpu.arange(run.x.shape[1], { dtype = "int64", device = run.x.device }) + 1 or run.y
    run.feed = fit_data.array_feed(run.x, yfeed, { bs = run.bs, shuffle = run.shuffle, device_of = device_of,
      sampler = run.sampler, passes = run.epochs, steps = o.steps_per_epoch })
  end
  run.steps = run.feed.steps
  -- the bar's width when fit draws one (verbose = 1 on a terminal, or progress = "bar")
  if run.verbose == 1 and o.progress ~= "plain" then
    run.width = o.progress == "bar" and (P.terminal_width() or P.width()) or P.terminal_width()
  end
  return run
end

local function new_history(k, run)
  local history = { loss = {} }
  if run.amp_dtype then history.skipped = {}; history.precision = run.amp_dtype end
  for _, m in ipairs(k.metrics) do history[m.name] = {} end
  if run.xv or run.vloader or run.vgen then
    history.val_loss = {}
    for _, m in ipairs(k.metrics) do history["val_" .. m.name] = {} end
  end
  -- Keras's history.history: the same lists by name, loss, metrics and val_*; behind a
  -- metatable, so that pairs(history) lists only the per-epoch lists as before
  local by_name = {}
  for name, list in pairs(history) do
    if name ~= "skipped" and type(list) == "table" then by_name[name] = list end
  end
  -- Keras's history.epoch: the epochs run (1-based; from initial_epoch + 1)
  return setmetatable(history, { __index = { history = by_name, epoch = {} } })
end

-- The batch's weights (nil: none): sample_weight's rows of the batch (ids: their row
-- numbers in x) times class_weight's weight of each sample's label: the label itself (1-based
-- class labels, or a binary target's 0 or 1), or a one-hot target's column. A label that
-- class_weight leaves out weighs 1, as Keras's.
local function batch_weights(run, yb, ids)
  local w
  if run.sample_weight then w = run.sample_weight:take(ids:to(run.sample_weight.device)):to(yb.device) end
  if run.class_weight then
    local n = yb.shape[1]
    local labels = (yb.ndim >= 2 and yb.shape[yb.ndim] > 1) and gpu.argmax(yb:reshape(n, -1), 2)
      or gpu.round(yb:reshape(n)):astype("int64")
    local lookup = gpu.array(run.class_weight, { dtype = "float32", device = yb.device })   -- labels 0..#-1
    local known = gpu.logical_and(labels:ge(0), labels:lt(#run.class_weight))
    local cw = gpu.where(known, lookup:take(gpu.clip(labels, 0, #run.class_weight - 1) + 1), 1)
    w = w and w * cw or cw
  end
  return w
end

-- Keras's weighted loss: the loss of each sample (the mean over its other axes) times its
-- weight, summed and divided by the batch size (Keras's sum_over_batch_size).
function weighted_loss(k, pred, yb, w, fname)
  local per
  if k.loss_name == "custom" then per = k.loss(pred, yb) else per = losses.losses[k.loss_name](pred, yb, { reduction = "none" }) end
  if not options.is_array(per) or per.ndim == 0 or per.shape[1] ~= pred.shape[1] then
    raise("%s: sample_weight and class_weight need a loss with one value per sample (a loss by name, or a "
      .. "function returning shape (batch)); this one gave %s", fname or "Module:fit", options.is_array(per) and
        ("shape %s"):format(options.shape_str(per.shape)) or type_name(per))
  end
  if per.ndim > 1 then
    local axes = {}
    for d = 2, per.ndim do axes[#axes + 1] = d end
    per = per:mean(axes)
  end
  return (per * w:astype(per.dtype)):sum() / per.shape[1]
end

-- One optimisation step on (xb, yb) (wb: the samples' weights, or nil): the predictions
-- and the loss as a Lua number.
local function train_step(self, k, run, xb, yb, step, epoch, wb)
  local pred, loss
  local net = run.net or self
  local function loss_of(p)
    local l = wb and weighted_loss(k, p, yb, wb) or k.loss(p, yb)
    if run.regularized and options.is_array(l) then           -- Keras's model.losses join the loss
      local pen = regularizers.total(self)
      if pen then l = l + pen:astype(l.dtype) end
    end
    return l
  end
  if run.amp_dtype then
    pred, loss = require("gpu.amp").autocast(run.amp_dtype, function()
      local p = net(xb)
      return p, loss_of(p)
    end)
  else
    pred = net(xb)
    loss = loss_of(pred)
  end
  if not options.is_array(loss) then raise("Module:fit: the loss function returned %s, not an array", type_name(loss)) end
  local opt = optimizer_of(self, k)
  local lv = loss:item()
  if lv ~= lv and not run.scaler and not run.cbs.nan_ok then
    raise("Module:fit: the loss is NaN at step %d of epoch %d (lower the learning rate, or check the inputs)",
      step, epoch)
  end
  opt:zero_grad()
  if run.scaler then
    run.scaler:scale(loss):backward()
    run.scaler:step(opt)
    run.scaler:update()
  else
    loss:backward()
    opt:step()
  end
  if run.constrained then regularizers.constrain(self) end
  return pred, lv
end

-- One epoch of training: the mean loss, the metric counts, the time, the samples and the
-- steps (with fp16, the loss of the skipped steps, inf or NaN, is left out of the mean).
local function train_epoch(self, k, run, epoch)
  local cbs = run.cbs
  local t0, last_draw = gpu.clock(), 0
  local seen, loss_sum, loss_n, step, counts = 0, 0, 0, 0, new_counts(k)
  local draw = run.width ~= nil
  -- the bar's total: the epoch's steps, or (a generator without steps_per_epoch) the last
  -- epoch's count, nil in the first
  local total = run.feed.steps or run.feed.taken
  if draw then io.write(P.header(epoch, run.epochs) .. "\n") end
  for xb, yb, bw in run.feed:epoch(epoch) do
    step = step + 1
    if cbs.batch_begin then cbs:call("on_train_batch_begin", step, {}) end
    local wb
    if run.sample_weight then                 -- the feed gave the rows' numbers in y's place
      local ids = yb
      yb = run.y_all:take(ids:to(run.y_all.device), 1):to(xb.device)
      wb = batch_weights(run, yb, ids)
    elseif bw ~= nil then                     -- a loader's or a generator's batch x, y, w
      if run.class_weight then
        raise("Module:fit: give class_weight or sample weights in the batches, not both (as Keras; fold the classes' "
          .. "weights into the batches' weights)")
      end
      wb = bw:to(yb.device)
    elseif run.class_weight then
      wb = batch_weights(run, yb)
    end
    local pred, lv = train_step(self, k, run, xb, yb, step, epoch, wb)
    local nb = xb.shape[1]
    seen = seen + nb
    if not run.scaler or (lv == lv and lv ~= math.huge and lv ~= -math.huge) then
      loss_sum, loss_n = loss_sum + lv * nb, loss_n + nb
    end
    if #k.metrics > 0 then autograd.no_grad(add_counts, k, counts, pred, yb, wb) end
    if cbs.batch_end then
      local logs = {}
      for _, kv in ipairs(shown(k, loss_n > 0 and loss_sum / loss_n or lv, counts, seen)) do logs[kv[1]] = kv[2] end
      cbs:call("on_train_batch_end", step, logs)
    end
    if self.stop_training then break end
    local now = draw and gpu.clock()
    if draw and now - last_draw > 0.1 and (total == nil or step < total) then     -- end_epoch draws the last
      last_draw = now
      local vals = shown(k, loss_sum / math.max(loss_n, 1), counts, seen)
      io.write(P.redraw(P.line(step, total, now - t0, vals, run.width, true)))
      io.stdout:flush()
    end
  end
  if run.sampler or run.dist_loader then   -- the epoch's loss and metrics over every rank's samples
    no_stateful(k, "Module:fit")
    local v = { loss_sum, loss_n }
    for i, m in ipairs(k.metrics) do v[i + 2] = count_value(counts[m.name]) end
    v = sum_over_ranks(v)
    loss_sum, loss_n = v[1], v[2]
    for i, m in ipairs(k.metrics) do counts[m.name] = v[i + 2] end
    seen = loss_n
  end
  return loss_sum / math.max(loss_n, 1), counts, gpu.clock() - t0, seen, step
end

-- Records epoch's results in history (validating first when there is validation data)
-- and prints its line.
local function end_epoch(self, k, run, history, epoch, loss, counts, elapsed, skipped, seen, steps)
  local vals = shown(k, loss, counts, seen)
  history.epoch[#history.epoch + 1] = epoch
  history.loss[#history.loss + 1] = loss
  for i, m in ipairs(k.metrics) do table.insert(history[m.name], vals[i + 1][2]) end
  if (run.xv or run.vloader or run.vgen) and run.validate_at(epoch) then
    local r = in_eval(self, function()
      return run_eval(self, k, run.vgen or run.vloader or run.xv, run.yv, math.max(run.bs, 256),
        run.sampler ~= nil or run.dist_loader, { fname = "Module:fit (validation_data)", steps = run.vsteps,
          sample_weight = run.val_sample_weight,
          steps_key = "validation_steps", hint = run.vsteps
            and (" for epoch %d's validation (it is not restarted: give a generator of epochs x validation_steps "
              .. "batches)"):format(epoch)
            or (" for epoch %d's validation (it is not restarted: give validation_steps = n with a generator of "
              .. "epochs x n batches, or one that starts again after returning nil)"):format(epoch) })
    end)
    table.insert(history.val_loss, r.loss)
    vals[#vals + 1] = { "val_loss", r.loss }
    for _, m in ipairs(k.metrics) do
      table.insert(history["val_" .. m.name], r[m.name])
      vals[#vals + 1] = { "val_" .. m.name, r[m.name] }
    end
  end
  local logs = {}
  for _, kv in ipairs(vals) do logs[kv[1]] = kv[2] end
  logs.lr = callbacks.get_lr(self)
  if run.verbose == 0 then return logs end
  if run.scaler then vals[#vals + 1] = ("skipped steps: %d (fp16 loss scale %g)"):format(skipped, run.scaler:get_scale()) end
  local total = run.feed.steps or steps       -- more than steps: the data ran out in this epoch
  if run.width then io.write(P.redraw(P.line(steps, total, elapsed, vals, run.width, true, true)) .. "\n")
  else io.write(P.plain_line(epoch, run.epochs, steps, elapsed, vals, total) .. "\n") end
  io.stdout:flush()
  return logs
end

-- x's form for fit, evaluate and predict: "arrays", "generator" or "loader" (a DataLoader
-- or a Dataset); with a generator, a loader or a dataset, y must be nil, and an options
-- table in y's place is taken as the options (fit(gen, {epochs = 3})): y, opts, opts' argument.
local function data_form(fname, x, y, opts, y_optional)
  local form = fit_data.is_generator(x) and "generator" or fit_data.is_source(x) and "loader" or "arrays"
  local argn = 3
  if form ~= "arrays" then
    if opts == nil and type(y) == "table" and not options.is_array(y) and getmetatable(y) == nil then
      y, opts, argn = nil, y, 2
    end
    if y ~= nil then
      argerror(fname, 2, "y must be nil when x is a DataLoader, a Dataset or a generator (its batches hold the "
        .. "targets), got %s", type_name(y))
    end
  elseif not y_optional then
    check_xy(fname, x, y)
  end
  return form, y, opts, argn
end

-- fit(x, y [, {epochs = 1, batch_size = 32, shuffle = true, steps_per_epoch =, validation_split =,
-- validation_data = {xv, yv}, validation_steps =, verbose = 1, progress = "bar"|"plain",
-- (verbose: 0 silent, 1 a bar on a terminal and epoch lines elsewhere, 2 epoch lines;
-- progress = "bar" draws the bar off a terminal too, "plain" never)
-- precision = "float32"|"bf16"|"fp16", grad_scaler =, distributed = false}]) -> history
-- distributed = true: data-parallel over gpu.distributed's ranks (initialized if needed):
-- the model in a DistributedDataParallel (rank 1's weights to all, gradients averaged),
-- each rank on its DistributedSampler share, loss, metrics and validation summed over the
-- ranks, only rank 1 printing.
-- precision = "bf16"/"fp16" trains under gpu.autocast (float32 master weights); fp16 adds
-- a GradScaler (self.grad_scaler, or opts.grad_scaler) whose skipped steps (inf/NaN
-- gradients) are reported per epoch in history.skipped and in the progress line.
-- x may be a gpu.data.DataLoader or a Dataset of (x, y) samples, y then nil: a dataset is
-- batched with batch_size and shuffle, a loader as it was made; validation_data the same.
-- x may be a generator (a function or callable returning x, y per call, nil at the end):
-- steps_per_epoch batches per epoch, or until it returns nil (fit_data.lua says how each
-- form takes steps_per_epoch: Keras 2's rules); validation_data may be one too. A loader's
-- or a generator's batch x, y, w (Keras's sample_weight) weighs the loss and the
-- weighted_metrics as the sample_weight option does for arrays.
function Module:fit(x, y, opts)
  local k = compiled(self, "Module:fit")
  local form, argn
  form, y, opts, argn = data_form("Module:fit", x, y, opts)
  local o = FIT:check(opts, argn)
  local loader
  if form == "loader" then loader = fit_data.loader_of("Module:fit", 1, x, o.batch_size or 32, o.shuffle) end
  local run = fit_plan(self, x, y, o, loader, form)
  run.regularized, run.constrained = regularizers.has(self), regularizers.has(self, "constraint")
  run.cbs = callbacks.list(o.callbacks, self)
  local history = new_history(k, run)
  self:train()
  self.stop_training = false
  run.cbs:begin(self, { epochs = run.epochs, steps = run.steps, verbose = run.verbose })
  run.cbs:call("on_train_begin", {})
  local logs = {}
  local function ran_out()
    fit_data.ran_out("Module:fit", "training", run.steps and ("steps_per_epoch x epochs = %d x %d = %d batches")
      :format(run.steps, run.epochs, run.steps * run.epochs) or "a batch per epoch")
  end
  -- validation_freq: every n-th epoch, or the epochs listed (Keras's, 1-based here)
  local vf = o.validation_freq or 1
  local listed = {}
  if type(vf) == "table" then for _, e in ipairs(vf) do listed[e] = true end end
  run.validate_at = function(epoch) if type(vf) == "table" then return listed[epoch] == true end return epoch % vf == 0 end
  for epoch = o.initial_epoch + 1, run.epochs do
    if run.feed:exhausted(epoch) then ran_out() break end
    run.cbs:call("on_epoch_begin", epoch, {})
    local skipped0 = run.scaler and run.scaler.skipped or 0
    local loss, counts, elapsed, seen, steps = train_epoch(self, k, run, epoch)
    local skipped = run.scaler and run.scaler.skipped - skipped0 or 0
    if run.amp_dtype then table.insert(history.skipped, skipped) end
    logs = end_epoch(self, k, run, history, epoch, loss, counts, elapsed, skipped, seen, steps)
    run.cbs:call("on_epoch_end", epoch, logs)
    if self.stop_training then break end
    if run.feed.short then ran_out() break end
  end
  run.cbs:call("on_train_end", logs)
  if run.amp_dtype then
    local total = 0
    for _, s in ipairs(history.skipped) do total = total + s end
    history.skipped_steps = total
  end
  self.history = history
  return history
end

-- ---- evaluate, predict -----------------------------------------------------------------------

-- the options of evaluate and predict, with 'more'
local function eval_keys(more)
  local keys = {
    batch_size = { type = "integer", min = 1, default = 256 },
    steps = { type = "integer", min = 1 },
    distributed = { type = "boolean", default = false },
  }
  for k, v in pairs(more) do keys[k] = v end
  return keys
end

local EVALUATE = options.declare("Module:evaluate", eval_keys {
  sample_weight = { type = "array" },
  verbose = { type = "integer|boolean", default = false, what = "0, 1, 2 or a boolean",
              check = function(v) return v == true or v == false or v == 0 or v == 1 or v == 2 end },
}, { example = "local m = gpu.nn.Sequential{gpu.nn.Linear(2, 2)}; m:compile{optimizer = 'sgd', loss = 'mse'}; " ..
     "m:evaluate(gpu.ones(4, 2), gpu.ones(4, 2), %s)" })

-- evaluate(x, y [, {batch_size = 256, steps =, verbose = false, sample_weight =}]) -> {loss =, <metric> =}
-- sample_weight (arrays x, y): the loss is Keras's weighted one (the metrics are not weighed,
-- as Keras 3's compile metrics)
-- x may be a DataLoader, a Dataset of (x, y) samples or a generator (y nil), as in fit;
-- steps: at most that many batches (arrays and loaders from their start, a generator its
-- next ones; without steps, until it returns nil).
function Module:evaluate(x, y, opts)
  local k = compiled(self, "Module:evaluate")
  local form, argn
  form, y, opts, argn = data_form("Module:evaluate", x, y, opts)
  local o = EVALUATE:check(opts, argn)
  local sw = o.sample_weight and checked_sample_weight("Module:evaluate", o.sample_weight, form, x)
  if sw and o.distributed then raise("Module:evaluate: sample_weight is not supported with distributed = true") end
  if form == "generator" then
    if o.distributed then
      raise("Module:evaluate: distributed = true takes arrays, a DataLoader or a Dataset, not a generator")
    end
    x = fit_data.reader("Module:evaluate", x, true)
  elseif form == "loader" then
    x = fit_data.loader_of("Module:evaluate", 1, x, o.batch_size, false)
  end
  local r = in_eval(self, function()
    return run_eval(self, k, x, y, o.batch_size, o.distributed, { steps = o.steps, sample_weight = sw })
  end)
  if (o.verbose == true or (o.verbose ~= false and o.verbose > 0)) and not (o.distributed and dist().rank() ~= 1) then
    local parts = { ("loss: %.4f"):format(r.loss) }
    for _, m in ipairs(k.metrics) do parts[#parts + 1] = ("%s: %s"):format(m.name, P.value(r[m.name])) end
    print(table.concat(parts, " - "))
  end
  return r
end

local PREDICT = options.declare("Module:predict", eval_keys {}, { example = "gpu.nn.Sequential{gpu.nn.Linear(2, 2)}:predict(gpu.ones(4, 2), %s)" })

-- The outputs of x (one array), in batches of bs, at most steps of them; x may be a
-- DataLoader (its batches' inputs) or a generator's reader (its next batches' inputs).
local function predict_rows(self, x, bs, steps)
  local fname = "Module:predict"
  local parts, state = in_eval(self, function()
    local out = {}
    local nxt
    if fit_data.is_loader(x) then nxt = fit_data.batches(fname, x, model_device(self), false)
    elseif type(x) == "table" and x.is_reader then nxt = fit_data.from_reader(x, model_device(self))
    else nxt = data.batches(x, nil, bs, { device = model_device(self) }) end
    local batches, st = fit_data.limit(nxt, steps)
    autograd.no_grad(function()
      for xb in batches do out[#out + 1] = self(xb) end
    end)
    return out, st
  end)
  if #parts == 0 then raise("%s: the %s gave no batches", fname, fit_data.is_loader(x) and "loader" or "generator") end
  if state.short then fit_data.ran_out(fname, "the prediction", ("steps = %d batches"):format(steps)) end
  if #parts == 1 then return parts[1] end
  return gpu.concat(parts, 1)
end

-- predict(x [, {batch_size = 256, steps =, distributed = false}]) -> the outputs, one array
-- distributed: each rank predicts its share, and every rank gets all the rows (all_gather).
-- x may be a DataLoader or a Dataset (the inputs of its samples; the outputs in its order),
-- or a generator (x, or x, y, per call: its inputs; nil at the end); steps: at most that
-- many batches.
function Module:predict(x, opts)
  local gen = fit_data.is_generator(x)
  local source = not gen and fit_data.is_source(x)
  if not (gen or source) then check_xy("Module:predict", x, nil, true) end
  local o = PREDICT:check(opts, 2)
  if (gen or source) and o.distributed then
    raise("Module:predict: distributed = true takes an array x (the rows of every rank are gathered in order), "
      .. "not a DataLoader, a Dataset or a generator")
  end
  if gen then return predict_rows(self, fit_data.reader("Module:predict", x, false), o.batch_size, o.steps) end
  if source then
    return predict_rows(self, fit_data.loader_of("Module:predict", 1, x, o.batch_size, false), o.batch_size, o.steps)
  end
  if not o.distributed then return predict_rows(self, x, o.batch_size, o.steps) end
  if o.steps then raise("Module:predict: steps is not supported with distributed = true") end
  local d = dist()
  local n, W = x.shape[1], d.world_size()
  local a, b = share(n)
  local most = (n + W - 1) // W                 -- the largest share: every part padded to it
  local mine = predict_rows(self, x[{ { math.min(a, n), math.max(b, math.min(a, n)) } }], o.batch_size)
  if b < a then mine = mine[{ { 1, 0 } }] end    -- no rows of its own: only the shape
  local shape = mine.shape
  shape[1] = most
  local padded = gpu.zeros(shape, { dtype = mine.dtype, device = mine.device })
  if mine.shape[1] > 0 then padded[{ { 1, mine.shape[1] } }] = mine end
  local all = d.all_gather(padded)
  local parts = {}
  for r = 1, W do
    local ra, rb = (r - 1) * n // W + 1, r * n // W
    if rb >= ra then parts[#parts + 1] = all[r][{ { 1, rb - ra + 1 } }] end
  end
  return #parts == 1 and parts[1]:copy() or gpu.concat(parts, 1)
end

-- ---- Keras's batch methods and weights --------------------------------------------------------

-- train_on_batch(x, y) -> loss, {metric = value}: one optimizer step on one batch (the
-- metrics of that batch, reset first, as Keras's reset_metrics = true)
function Module:train_on_batch(x, y)
  local fname = "Module:train_on_batch"
  local k = compiled(self, fname)
  check_xy(fname, x, y)
  local dev = model_device(self)
  if dev then x, y = x:to(dev), y:to(dev) end
  local counts = new_counts(k)
  local run = { cbs = { }, net = self }
  local pred, lv = train_step(self, k, run, x, y, 1, 1)
  local out = {}
  if #k.metrics > 0 then
    autograd.no_grad(add_counts, k, counts, pred, y)
    for _, m in ipairs(k.metrics) do out[m.name] = metric_value(m, counts, x.shape[1]) end
  end
  return lv, out
end

-- test_on_batch(x, y) -> loss, {metric = value}: evaluate on one batch
function Module:test_on_batch(x, y)
  local fname = "Module:test_on_batch"
  local k = compiled(self, fname)
  check_xy(fname, x, y)
  local r = in_eval(self, function() return run_eval(self, k, x, y, x.shape[1], false, { fname = fname }) end)
  local loss = r.loss
  r.loss = nil
  return loss, r
end

-- predict_on_batch(x): the outputs of one batch (eval mode, nothing recorded)
function Module:predict_on_batch(x)
  local fname = "Module:predict_on_batch"
  check_xy(fname, x, nil, true)
  local dev = model_device(self)
  if dev then x = x:to(dev) end
  return in_eval(self, function() return autograd.no_grad(function() return self(x) end) end)
end

-- The arrays of Keras's weights: each module's parameters then buffers, modules in order
local function weight_list(self)
  local list = {}
  local seen = {}
  for _, m in ipairs(self:modules()) do
    for _, kind in ipairs({ { "_pnames", "_params" }, { "_bnames", "_buffers" } }) do
      for _, n in ipairs(rawget(m, kind[1]) or {}) do
        local v = rawget(m, kind[2])[n]
        if v ~= nil and not seen[v] then seen[v] = true; list[#list + 1] = v end
      end
    end
  end
  return list
end

-- get_weights() -> a list of copies (parameters and buffers, as Keras's model.weights)
function Module:get_weights()
  local out = {}
  for i, v in ipairs(weight_list(self)) do out[i] = v:detach():copy() end
  return out
end

-- set_weights(list): the weights from such a list, every shape checked before any is written
function Module:set_weights(list)
  local fname = "Module:set_weights"
  if type(list) ~= "table" or options.is_array(list) then argerror(fname, 1, "a list of arrays expected, got %s", type_name(list)) end
  local own = weight_list(self)
  if #list ~= #own then raise("%s: the model has %d weights, the list %d", fname, #own, #list) end
  local vals = {}
  for i, v in ipairs(own) do
    local w = list[i]
    if not options.is_array(w) then argerror(fname, 1, "entry %d is %s, not an array", i, type_name(w)) end
    if options.shape_str(w.shape) ~= options.shape_str(v.shape) then
      raise("%s: weight %d has shape %s, the model's %s", fname, i, options.shape_str(w.shape), options.shape_str(v.shape))
    end
    vals[i] = w:to(v.device):astype(v.dtype)
  end
  autograd.no_grad(function() for i, v in ipairs(own) do v[{}] = vals[i] end end)
end

-- count_params(): the number of parameter elements
function Module:count_params()
  local n = 0
  for _, p in ipairs(self:parameters()) do n = n + p.size end
  return n
end

-- progress: the line formatting, for the specs (and progress.terminal_width to replace)
return { progress = P }
