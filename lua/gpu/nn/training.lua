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
-- (N) of 1..C) or the largest target (y (N, C)), a 0-d array on pred's device. Only
-- shapes are checked here (the loss checks the labels' values: no wait for the device).
local function accuracy(pred, y)
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
local metrics = require "gpu.nn.metrics"
local metric_fns = { accuracy = accuracy, acc = accuracy }
local metric_names = { "acc", "accuracy" }
for _, name in ipairs(metrics.names) do metric_fns[name] = metrics[name]; metric_names[#metric_names + 1] = name end
table.sort(metric_names)

local function sorted_keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return out
end

-- name, choices -> "unknown <what> 'x'; did you mean 'y'? (expected one of ...)"
local function unknown(what, name, choices)
  local near = options.nearest(name, choices)
  raise("Module:compile: unknown %s '%s'%s (expected one of %s)", what, name,
    near and ("; did you mean '" .. near .. "'?") or "", table.concat(choices, ", "))
end

local function resolve_loss(loss)
  if type(loss) == "string" then
    local f = losses.losses[loss]
    if f == nil then unknown("loss", loss, sorted_keys(losses.losses)) end
    return loss, f
  end
  return "custom", function(p, y) return loss(p, y) end
end

local function resolve_optimizer(spec)
  if type(spec) == "string" then
    if optim.by_name(spec) == nil then unknown("optimizer", spec, optim.names) end
    return spec, nil
  end
  if not optim.is_optimizer(spec) then
    argerror("Module:compile", 1, "option 'optimizer' must be a name or an optimizer, got %s", type_name(spec))
  end
  return spec, spec
end

local function resolve_metrics(list)
  local out = {}
  for i, m in ipairs(list or {}) do
    if type(m) ~= "string" then
      argerror("Module:compile", 1, "metrics[%d] must be a metric name, got %s", i, type_name(m))
    end
    if metric_fns[m] == nil then unknown("metric", m, metric_names) end
    out[#out + 1] = { name = m == "acc" and "accuracy" or m, fn = metric_fns[m] }
  end
  return out
end

local COMPILE = options.declare("Module:compile", {
  optimizer = { type = "string|table", default = "rmsprop" },
  loss = { type = "string|callable", default = "sparse_categorical_crossentropy" },
  metrics = { type = "table" },
}, { example = "gpu.nn.Sequential{gpu.nn.Linear(2, 2)}:compile(%s)" })

-- compile{optimizer = "rmsprop", loss = "sparse_categorical_crossentropy", metrics = {}}, or
-- Keras's positional compile(optimizer [, loss [, metrics]]).
function Module:compile(opts, loss, metrics)
  if type(opts) == "string" or optim.is_optimizer(opts) then
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
  local metric_list = resolve_metrics(o.metrics)
  self._keras = { loss_name = loss_name, loss = loss_fn, opt_spec = opt_spec, optimizer = optimizer,
                  metrics = metric_list }
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
  local params = self:parameters()
  if #params == 0 then
    raise("Module:fit: the model has no parameters yet (give the first layer input_shape =, or call the model once)")
  end
  k.optimizer = optim.by_name(k.opt_spec)(params)
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
  for _, m in ipairs(k.metrics) do c[m.name] = 0 end
  return c
end

local function add_counts(k, counts, pred, yb)
  for _, m in ipairs(k.metrics) do counts[m.name] = counts[m.name] + m.fn(pred, yb) end
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

-- One pass over (x, y) without updates or tape: {loss =, <metric> = ...} as Lua numbers.
-- distributed: each rank passes over its share and the sums are added over the ranks.
-- x may be a DataLoader (y nil): its batches, each rank on its DistributedSampler share
-- when distributed (padded to equal shares, as torch's: a few samples may count twice).
local function run_eval(self, k, x, y, bs, distributed, fname)
  local loss_sum, counts = 0, new_counts(k)
  if fit_data.is_loader(x) then
    fname = fname or "Module:evaluate"
    local loader = distributed and fit_data.distributed(fname, x) or x
    local n = 0
    autograd.no_grad(function()
      for xb, yb in fit_data.batches(fname, loader, model_device(self), true) do
        local pred = self(xb)
        loss_sum = loss_sum + k.loss(pred, yb):item() * xb.shape[1]
        add_counts(k, counts, pred, yb)
        n = n + xb.shape[1]
      end
    end)
    local v = { loss_sum, n }
    for i, m in ipairs(k.metrics) do v[i + 2] = count_value(counts[m.name]) end
    if distributed then v = sum_over_ranks(v) end
    if v[2] == 0 then raise("%s: the loader gave no samples", fname) end
    local out = { loss = v[1] / v[2] }
    for i, m in ipairs(k.metrics) do out[m.name] = v[i + 2] / v[2] end
    return out
  end
  local n = x.shape[1]
  local xs, ys = x, y
  if distributed then
    local a, b = share(n)
    xs, ys = b >= a and x[{ { a, b } }] or nil, b >= a and y[{ { a, b } }] or nil
  end
  if xs then
    autograd.no_grad(function()
      for xb, yb in data.batches(xs, ys, bs, { device = model_device(self) }) do
        local pred = self(xb)
        loss_sum = loss_sum + k.loss(pred, yb):item() * xb.shape[1]
        add_counts(k, counts, pred, yb)
      end
    end)
  end
  if distributed then
    local v = { loss_sum }
    for i, m in ipairs(k.metrics) do v[i + 1] = count_value(counts[m.name]) end
    v = sum_over_ranks(v)
    loss_sum = v[1]
    for i, m in ipairs(k.metrics) do counts[m.name] = v[i + 1] end
  end
  local out = { loss = loss_sum / n }
  for _, m in ipairs(k.metrics) do out[m.name] = count_value(counts[m.name]) / n end
  return out
end

-- fn() in eval mode, the previous mode restored after (also when fn raises).
local function in_eval(self, fn)
  local was = self.training
  self:eval()
  local ok, r = pcall(fn)
  self:train(was)
  if not ok then error(r, 0) end
  return r
end

-- ---- progress --------------------------------------------------------------------------------
-- Keras's lines: on a terminal (verbose = 1) "Epoch 1/3", then a bar redrawn in place and
-- left as the epoch's line
--   469/469 [==============================] - 2.1s 4ms/step - loss: 0.5000 - accuracy: 0.8000
-- fitted to the terminal's width (a shorter bar, then no bar, then fewer fields); elsewhere
-- (verbose = 2, or output to a file or a pipe) one line per epoch:
--   Epoch 1/3 - 469/469 - 2.1s 4ms/step - loss: 0.5000 - accuracy: 0.8000

local P = {}
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
    out[i] = type(kv) == "string" and kv or ("%s: %.4f"):format(kv[1], kv[2])
  end
  return out
end

-- line(done, total, elapsed, vals [, width [, bar [, keep]]]): the progress line after
-- done of total steps, at most width characters (no limit when nil): with bar, a bar of
-- up to 30 columns, shortened to fit, dropped below 10; then the last fields are dropped,
-- and at last the line is cut. With keep (an epoch's last line, never redrawn: it may
-- wrap), the bar is fitted but every field stays.
function P.line(done, total, elapsed, vals, width, bar, keep)
  local head = ("%" .. #tostring(total) .. "d/%d"):format(done, total)
  local time = done < total and "ETA: " .. fmt_time(done > 0 and elapsed / done * (total - done) or 0)
    or fmt_time(elapsed) .. " " .. per_step(elapsed, total)
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

-- plain_line(epoch, epochs, steps, elapsed, vals): the one line of an epoch off a terminal.
function P.plain_line(epoch, epochs, steps, elapsed, vals)
  return P.header(epoch, epochs) .. " - " .. P.line(steps, steps, elapsed, vals)
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
  for _, m in ipairs(k.metrics) do vals[#vals + 1] = { m.name, count_value(counts[m.name]) / seen } end
  return vals
end

-- ---- fit -------------------------------------------------------------------------------------

local FIT = options.declare("Module:fit", {
  epochs = { type = "integer", min = 0, default = 1 },
  batch_size = { type = "integer", min = 1, default = 32 },
  shuffle = { type = "boolean", default = true },
  validation_split = { type = "number", min = 0, max = 1, min_open = true, max_open = true },
  validation_data = { type = "table", check = function(v)
    return fit_data.is_source(v) or #v == 2, "must be {x_val, y_val}, a DataLoader or a Dataset"
  end },
  verbose = { type = "integer|boolean|string", default = 1, what = "0, 1, 2, a boolean or 'auto'",
              check = function(v) return v == true or v == false or v == "auto" or v == 0 or v == 1 or v == 2 end },
  progress = { choices = { "bar", "plain" } },
  precision = { type = "string|boolean" },
  grad_scaler = { type = "table", check = function(v) return optim.is_grad_scaler(v), "must be a GradScaler" end },
  callbacks = { type = "table", what = "a list of callbacks" },
  distributed = { type = "boolean", default = false },
}, { example = "local m = gpu.nn.Sequential{gpu.nn.Linear(2, 2)}; m:compile{optimizer = 'sgd', loss = 'mse'}; " ..
     "m:fit(gpu.ones(4, 2), gpu.ones(4, 2), %s)" })

-- The plan of a fit from its checked options: data split, verbosity, precision.
local function fit_plan(self, x, y, o, loader)
  local run = { x = (not loader) and x or nil, y = y, loader = loader, epochs = o.epochs, bs = o.batch_size,
                shuffle = o.shuffle }
  local v = o.verbose
  run.verbose = (v == true or v == "auto") and 1 or v == false and 0 or v
  if o.precision ~= nil then
    run.amp_dtype = require("gpu.amp").dtype_name("Module:fit", o.precision, 3)
    if run.amp_dtype == "float16" then
      run.scaler = o.grad_scaler or self.grad_scaler or optim.GradScaler()
      self.grad_scaler = run.scaler
    end
  end
  if o.validation_data and fit_data.is_source(o.validation_data) then
    run.vloader = fit_data.loader_of("Module:fit (validation_data)", 3, o.validation_data, math.max(run.bs, 256), false)
  elseif o.validation_data then
    run.xv, run.yv = o.validation_data[1], o.validation_data[2]
    check_xy("Module:fit (validation_data)", run.xv, run.yv)
  elseif o.validation_split and run.loader then
    raise("Module:fit: validation_split needs arrays x, y (give validation_data = a DataLoader or Dataset)")
  elseif o.validation_split then
    local n = x.shape[1]
    local nv = math.floor(n * o.validation_split)
    if nv < 1 or nv >= n then raise("Module:fit: validation_split leaves no training or no validation samples") end
    -- Keras takes the last fraction, before shuffling
    run.xv, run.yv = x[{ { n - nv + 1, n } }], y[{ { n - nv + 1, n } }]
    run.x, run.y = x[{ { 1, n - nv } }], y[{ { 1, n - nv } }]
  end
  if run.loader then
    run.n, run.steps = fit_data.samples(run.loader), #run.loader
  else
    run.n = run.x.shape[1]
    run.steps = (run.n + run.bs - 1) // run.bs
  end
  if o.distributed then
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
      run.steps = #run.loader
    else
      run.sampler = data.DistributedSampler(run.n, { shuffle = run.shuffle })
      run.steps = (#run.sampler + run.bs - 1) // run.bs
    end
    if d.rank() ~= 1 then run.verbose = 0 end
  end
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
  if run.xv or run.vloader then
    history.val_loss = {}
    for _, m in ipairs(k.metrics) do history["val_" .. m.name] = {} end
  end
  -- Keras's history.history: the same lists by name, loss, metrics and val_*; behind a
  -- metatable, so that pairs(history) lists only the per-epoch lists as before
  local by_name = {}
  for name, list in pairs(history) do
    if name ~= "skipped" and type(list) == "table" then by_name[name] = list end
  end
  return setmetatable(history, { __index = { history = by_name } })
end

-- One optimisation step on (xb, yb): the predictions and the loss as a Lua number.
local function train_step(self, k, run, xb, yb, step, epoch)
  local pred, loss
  local net = run.net or self
  if run.amp_dtype then
    pred, loss = require("gpu.amp").autocast(run.amp_dtype, function()
      local p = net(xb)
      return p, k.loss(p, yb)
    end)
  else
    pred = net(xb)
    loss = k.loss(pred, yb)
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
  return pred, lv
end

-- One epoch of training: the mean loss and the metric counts (with fp16, the loss of the
-- skipped steps, inf or NaN, is left out of the mean).
local function train_epoch(self, k, run, epoch)
  local cbs = run.cbs
  local t0, last_draw = gpu.clock(), 0
  local seen, loss_sum, loss_n, step, counts = 0, 0, 0, 0, new_counts(k)
  local draw = run.width ~= nil
  if draw then io.write(P.header(epoch, run.epochs) .. "\n") end
  local batches
  if run.loader then           -- a DataLoader's batches (this rank's share when distributed)
    if run.dist_loader then run.loader:set_epoch(epoch) end
    batches = fit_data.batches("Module:fit", run.loader, model_device(self), true)
  else
    local x, y, shuffle = run.x, run.y, run.shuffle
    if run.sampler then          -- this rank's share of the epoch, in the sampler's order
      run.sampler:set_epoch(epoch)
      local idx = run.sampler:indices()
      x, y, shuffle = x:take(idx:to(x.device), 1), y:take(idx:to(y.device), 1), false
    end
    batches = data.batches(x, y, run.bs, { shuffle = shuffle, device = model_device(self) })
  end
  for xb, yb in batches do
    step = step + 1
    if cbs.batch_begin then cbs:call("on_train_batch_begin", step, {}) end
    local pred, lv = train_step(self, k, run, xb, yb, step, epoch)
    local nb = xb.shape[1]
    seen = seen + nb
    if not run.scaler or (lv == lv and lv ~= math.huge and lv ~= -math.huge) then
      loss_sum, loss_n = loss_sum + lv * nb, loss_n + nb
    end
    if #k.metrics > 0 then autograd.no_grad(add_counts, k, counts, pred, yb) end
    if cbs.batch_end then
      local logs = {}
      for _, kv in ipairs(shown(k, loss_n > 0 and loss_sum / loss_n or lv, counts, seen)) do logs[kv[1]] = kv[2] end
      cbs:call("on_train_batch_end", step, logs)
    end
    if self.stop_training then break end
    local now = draw and gpu.clock()
    if draw and now - last_draw > 0.1 and step < run.steps then     -- end_epoch draws the last
      last_draw = now
      local vals = shown(k, loss_sum / math.max(loss_n, 1), counts, seen)
      io.write(P.redraw(P.line(step, run.steps, now - t0, vals, run.width, true)))
      io.stdout:flush()
    end
  end
  if run.sampler or run.dist_loader then   -- the epoch's loss and metrics over every rank's samples
    local v = { loss_sum, loss_n }
    for i, m in ipairs(k.metrics) do v[i + 2] = count_value(counts[m.name]) end
    v = sum_over_ranks(v)
    loss_sum, loss_n = v[1], v[2]
    for i, m in ipairs(k.metrics) do counts[m.name] = v[i + 2] end
    seen = loss_n
  end
  return loss_sum / math.max(loss_n, 1), counts, gpu.clock() - t0, seen
end

-- Records epoch's results in history (validating first when there is validation data)
-- and prints its line.
local function end_epoch(self, k, run, history, epoch, loss, counts, elapsed, skipped, seen)
  local vals = shown(k, loss, counts, seen)
  history.loss[epoch] = loss
  for i, m in ipairs(k.metrics) do history[m.name][epoch] = vals[i + 1][2] end
  if run.xv or run.vloader then
    local r = in_eval(self, function()
      return run_eval(self, k, run.vloader or run.xv, run.yv, math.max(run.bs, 256), run.sampler ~= nil or run.dist_loader,
        "Module:fit (validation_data)")
    end)
    history.val_loss[epoch] = r.loss
    vals[#vals + 1] = { "val_loss", r.loss }
    for _, m in ipairs(k.metrics) do
      history["val_" .. m.name][epoch] = r[m.name]
      vals[#vals + 1] = { "val_" .. m.name, r[m.name] }
    end
  end
  local logs = {}
  for _, kv in ipairs(vals) do logs[kv[1]] = kv[2] end
  logs.lr = callbacks.get_lr(self)
  if run.verbose == 0 then return logs end
  if run.scaler then vals[#vals + 1] = ("skipped steps: %d (fp16 loss scale %g)"):format(skipped, run.scaler:get_scale()) end
  if run.width then io.write(P.redraw(P.line(run.steps, run.steps, elapsed, vals, run.width, true, true)) .. "\n")
  else io.write(P.plain_line(epoch, run.epochs, run.steps, elapsed, vals) .. "\n") end
  io.stdout:flush()
  return logs
end

-- fit(x, y [, {epochs = 1, batch_size = 32, shuffle = true, validation_split =,
-- validation_data = {xv, yv}, verbose = 1, progress = "bar"|"plain",
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
function Module:fit(x, y, opts)
  local k = compiled(self, "Module:fit")
  local loader
  if fit_data.is_source(x) then
    if y ~= nil then
      argerror("Module:fit", 2, "y must be nil when x is a DataLoader or a Dataset (its samples hold the targets), got %s",
        type_name(y))
    end
  else
    check_xy("Module:fit", x, y)
  end
  local o = FIT:check(opts, 3)
  if y == nil then loader = fit_data.loader_of("Module:fit", 1, x, o.batch_size, o.shuffle) end
  local run = fit_plan(self, x, y, o, loader)
  run.cbs = callbacks.list(o.callbacks, self)
  local history = new_history(k, run)
  self:train()
  self.stop_training = false
  run.cbs:begin(self)
  run.cbs:call("on_train_begin", {})
  local logs = {}
  for epoch = 1, run.epochs do
    run.cbs:call("on_epoch_begin", epoch, {})
    local skipped0 = run.scaler and run.scaler.skipped or 0
    local loss, counts, elapsed, seen = train_epoch(self, k, run, epoch)
    local skipped = run.scaler and run.scaler.skipped - skipped0 or 0
    if run.amp_dtype then history.skipped[epoch] = skipped end
    logs = end_epoch(self, k, run, history, epoch, loss, counts, elapsed, skipped, seen)
    run.cbs:call("on_epoch_end", epoch, logs)
    if self.stop_training then break end
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

local EVALUATE = options.declare("Module:evaluate", {
  batch_size = { type = "integer", min = 1, default = 256 },
  distributed = { type = "boolean", default = false },
  verbose = { type = "integer|boolean", default = false, what = "0, 1, 2 or a boolean",
              check = function(v) return v == true or v == false or v == 0 or v == 1 or v == 2 end },
}, { example = "local m = gpu.nn.Sequential{gpu.nn.Linear(2, 2)}; m:compile{optimizer = 'sgd', loss = 'mse'}; " ..
     "m:evaluate(gpu.ones(4, 2), gpu.ones(4, 2), %s)" })

-- evaluate(x, y [, {batch_size = 256, verbose = false}]) -> {loss =, <metric> =}
-- x may be a DataLoader or a Dataset of (x, y) samples (y nil), as in fit.
function Module:evaluate(x, y, opts)
  local k = compiled(self, "Module:evaluate")
  local source = fit_data.is_source(x)
  if source and y ~= nil then
    argerror("Module:evaluate", 2, "y must be nil when x is a DataLoader or a Dataset (its samples hold the targets), got %s",
      type_name(y))
  elseif not source then
    check_xy("Module:evaluate", x, y)
  end
  local o = EVALUATE:check(opts, 3)
  if source then x = fit_data.loader_of("Module:evaluate", 1, x, o.batch_size, false) end
  local r = in_eval(self, function() return run_eval(self, k, x, y, o.batch_size, o.distributed) end)
  if (o.verbose == true or (o.verbose ~= false and o.verbose > 0)) and not (o.distributed and dist().rank() ~= 1) then
    local parts = { ("loss: %.4f"):format(r.loss) }
    for _, m in ipairs(k.metrics) do parts[#parts + 1] = ("%s: %.4f"):format(m.name, r[m.name]) end
    print(table.concat(parts, " - "))
  end
  return r
end

local PREDICT = options.declare("Module:predict", {
  batch_size = { type = "integer", min = 1, default = 256 },
  distributed = { type = "boolean", default = false },
}, { example = "gpu.nn.Sequential{gpu.nn.Linear(2, 2)}:predict(gpu.ones(4, 2), %s)" })

-- The outputs of x (one array), in batches; x may be a DataLoader (its batches' inputs).
local function predict_rows(self, x, bs)
  local parts = in_eval(self, function()
    local out = {}
    autograd.no_grad(function()
      local batches = fit_data.is_loader(x) and fit_data.batches("Module:predict", x, model_device(self), false)
        or data.batches(x, nil, bs, { device = model_device(self) })
      for xb in batches do out[#out + 1] = self(xb) end
    end)
    return out
  end)
  if #parts == 0 then raise("Module:predict: the loader gave no batches") end
  if #parts == 1 then return parts[1] end
  return gpu.concat(parts, 1)
end

-- predict(x [, {batch_size = 256, distributed = false}]) -> the outputs, one array
-- distributed: each rank predicts its share, and every rank gets all the rows (all_gather).
-- x may be a DataLoader or a Dataset (the inputs of its samples; the outputs in its order).
function Module:predict(x, opts)
  local source = fit_data.is_source(x)
  if not source then check_xy("Module:predict", x, nil, true) end
  local o = PREDICT:check(opts, 2)
  if source then
    if o.distributed then
      raise("Module:predict: distributed = true takes an array x (the rows of every rank are gathered in order), "
        .. "not a DataLoader or a Dataset")
    end
    return predict_rows(self, fit_data.loader_of("Module:predict", 1, x, o.batch_size, false), o.batch_size)
  end
  if not o.distributed then return predict_rows(self, x, o.batch_size) end
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

-- progress: the line formatting, for the specs (and progress.terminal_width to replace)
return { progress = P }
