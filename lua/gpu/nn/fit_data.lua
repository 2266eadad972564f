-- gpu.nn.fit_data: the data of Keras's fit, evaluate and predict: (x, y) arrays, a
-- gpu.data.DataLoader, a Dataset (the protocol of gpu.data.dataset: #ds and ds:get(i) or
-- ds[i] giving an (x, y) sample) or a generator (a function, a callable table or a
-- coroutine.wrap'ed function returning x, y per call and nil at the end). A dataset is
-- wrapped in a DataLoader with fit's batch_size and shuffle; a loader is used as it is
-- (its own batch size, shuffle and collate_fn). With distributed = true the loader gets a
-- DistributedSampler (this rank's share of the samples, a new shuffle each epoch), or the
-- call is refused when the loader cannot take one.
--
--   model:fit(gpu.data.TensorDataset(x, y), nil, {epochs = 3, batch_size = 64})
--   model:fit(loader, nil, {epochs = 3, validation_data = val_loader})
--   model:fit(gen, {epochs = 3, steps_per_epoch = 100, validation_data = val_gen, validation_steps = 10})
--   model:evaluate(val_ds), model:predict(loader), model:evaluate(gen, {steps = 10})
--
-- The feeds (array_feed, loader_feed, generator_feed) give each epoch's batches with
-- Keras 2's (tf.keras 2.x DataHandler's) rules for steps_per_epoch:
--   arrays      one stream of `epochs` passes, each newly shuffled; an epoch takes the
--               next steps_per_epoch batches of it (so passes run across epochs), and
--               fit stops, with a warning, when the stream ends first;
--   loader, dataset   restarted each epoch (Keras's Sequence): its first steps_per_epoch
--               batches; one that ends first ends the epoch and fit, with a warning;
--   generator   never restarted: an epoch takes the next steps_per_epoch batches, and a
--               generator that returns nil first ends the epoch and fit, with a warning.
--               Without steps_per_epoch, an epoch runs until it returns nil: a generator
--               that starts again after nil gives one pass per epoch; one that gives no
--               batch at the start of a later epoch is an error naming steps_per_epoch.

local data = require "gpu.data"
local dataset = require "gpu.data.dataset"
local options = require "gpu.options"

local raise, type_name, is_array = options.raise, options.type_name, options.is_array
local M = {}

-- is_loader(v): a gpu.data.DataLoader, known by its metatable's name: the specs' runner may
-- load gpu.data again (a fresh module table per spec file), so identity with this file's
-- gpu.data would miss loaders made through another instance.
function M.is_loader(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") == "DataLoader" and type(v.iter) == "function"
end

-- is_generator(v): a generator of batches: a function, or a callable table or userdata
-- that is no DataLoader and no array (a coroutine.wrap'ed function is a function).
function M.is_generator(v)
  if type(v) == "function" then return true end
  if (type(v) ~= "table" and type(v) ~= "userdata") or is_array(v) or M.is_loader(v) then return false end
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__call") ~= nil
end

-- is_source(v): a loader or something that may be a dataset (a table or userdata, not an
-- array and not a plain {x, y} pair of arrays); dataset.length checks the protocol.
function M.is_source(v)
  local t = type(v)
  if t ~= "table" and t ~= "userdata" or is_array(v) then return false end
  return not (t == "table" and getmetatable(v) == nil and is_array(v[1]))
end

-- samples(loader): how many samples one epoch of the loader gives (without drop_last's cut;
-- nil for an IterableDataset's, which has no length)
function M.samples(loader)
  if loader.iterable then return nil end
  if loader.batch_sampler then
    local bs = loader.batch_sampler
    return bs.sampler and #bs.sampler or #bs.list
  end
  if loader.sampler then return #loader.sampler end
  if loader.dataset then return #loader.dataset end
  return loader.x.shape[1]
end

-- loader_of(fname, argn, v, bs, shuffle): v itself when it is a DataLoader, else v as a
-- dataset in a DataLoader of batch size bs (shuffled or not).
function M.loader_of(fname, argn, v, bs, shuffle)
  local loader = v
  if not M.is_loader(v) then
    dataset.length(fname, argn, v)               -- a clear error for what is no dataset
    loader = data.DataLoader(v, { batch_size = bs, shuffle = shuffle })
  end
  if M.samples(loader) == 0 then options.argerror(fname, argn, "the %s has no samples", v == loader and "loader" or "dataset") end
  return loader
end

-- distributed(fname, loader): a loader over the same data and options whose sampler is a
-- DistributedSampler (the loader itself when it has one).
function M.distributed(fname, loader)
  local mt = getmetatable(loader.sampler)
  if mt and rawget(mt, "__name") == "DistributedSampler" then return loader end
  if loader.sampler or loader.batch_sampler or loader.iterable then
    raise("%s: distributed = true cannot take this DataLoader: it has its own %s (make the loader with "
      .. "distributed = true instead)", fname, loader.iterable and "IterableDataset" or
      loader.sampler and "sampler" or "batch_sampler")
  end
  if loader.generator ~= nil then
    raise("%s: distributed = true cannot take this DataLoader: it shuffles with its own generator, and a "
      .. "DistributedSampler shuffles by seed and epoch (make the loader without generator =, or with "
      .. "distributed = true)", fname)
  end
  local o = { batch_size = loader.batch_size, shuffle = loader.shuffle, drop_last = loader.drop_last,
              device = loader.device, collate_fn = loader.collate_fn, distributed = true }
  if loader.dataset then return data.DataLoader(loader.dataset, o) end
  o.collate_fn = nil
  return data.DataLoader(loader.x, loader.y, o)
end

-- check_batch(fname, what, k, xb, yb, need_y [, hint]): a batch's inputs (and targets when
-- need_y) as fit takes them, else an error naming the batch (what: "the loader", "the
-- generator"; hint: what its items must be, added to the errors about their form).
local function check_batch(fname, what, k, xb, yb, need_y, hint)
  hint = hint and " (" .. hint .. ")" or ""
  if not is_array(xb) then
    raise("%s: %s's batch %d holds %s as its inputs, not an array%s", fname, what, k, type_name(xb), hint)
  end
  if need_y then
    if yb == nil then
      raise("%s: %s's batch %d has no targets%s", fname, what, k, hint)
    elseif not is_array(yb) then
      raise("%s: %s's batch %d holds %s as its targets, not an array", fname, what, k, type_name(yb))
    elseif xb.ndim == 0 or yb.ndim == 0 or xb.shape[1] ~= yb.shape[1] then
      raise("%s: %s's batch %d has %s inputs and %s targets (one target per sample)", fname, what, k,
        options.shape_str(xb.shape), options.shape_str(yb.shape))
    end
  elseif xb.ndim == 0 then
    raise("%s: %s's batch %d is a 0-d array (batches have samples along the first axis)", fname, what, k)
  end
end

-- check_weights(fname, what, k, xb, wb): a batch's third value, Keras's sample weights:
-- one real weight per sample, shape (N)
local function check_weights(fname, what, k, xb, wb)
  if not is_array(wb) then
    raise("%s: %s's batch %d holds %s as its sample weights (its third value), not an array", fname, what, k,
      type_name(wb))
  end
  if wb.ndim ~= 1 or wb.shape[1] ~= xb.shape[1] then
    raise("%s: %s's batch %d has sample weights of shape %s for %d samples (one weight per sample: shape (%d))",
      fname, what, k, options.shape_str(wb.shape), xb.shape[1], xb.shape[1])
  end
  if wb.dtype == "bool" or wb.dtype:match("^complex") then
    raise("%s: %s's batch %d has sample weights of %s (they must be real numbers)", fname, what, k, wb.dtype)
  end
end

-- batches(fname, loader, device, need_y): one epoch's (xb, yb [, wb]), checked (arrays with
-- as many rows each; yb only when need_y, then the samples' weights wb when the batch has a
-- third value: a TensorDataset(x, y, w), samples {x, y, w}) and moved to device when one is
-- given.
function M.batches(fname, loader, device, need_y)
  local nxt = loader:iter()
  local step = 0
  return function()
    -- a dataset that raises (a bad item, samples collate cannot stack) is named as fit's data
    local ok, xb, yb, wb = pcall(nxt)
    if not ok then raise("%s: the loader's batch %d failed: %s", fname, step + 1, tostring(xb)) end
    if xb == nil then return nil end
    step = step + 1
    check_batch(fname, "the loader", step, xb, yb, need_y,
      "a dataset's samples must be (x, y) pairs of arrays or numbers: {x, y}, or {x, y, w} with a sample weight")
    if not need_y then return device and xb.device ~= device and xb:to(device) or xb end
    if wb ~= nil then check_weights(fname, "the loader", step, xb, wb) end
    return M.move(xb, yb, wb, device)
  end
end

-- ---- generators ----------------------------------------------------------------------------------

local DEAD = "cannot resume dead coroutine"

-- reader(fname, gen, need_y): r.next() -> the generator's next (xb, yb [, wb]), checked, or
-- nil at its end. A batch is x, y [, w] returned (or {x, y [, w]}), w the samples' weights
-- (Keras's (x, y, sample_weight)). A coroutine.wrap'ed generator that ended raises when
-- called again: that reads as its end too. reader.batches counts the batches it gave.
function M.reader(fname, gen, need_y)
  local r = { batches = 0, ended = false, is_reader = true }
  function r.next()
    local res = table.pack(pcall(gen))
    if not res[1] then
      local msg = tostring(res[2])
      if r.ended and msg:find(DEAD, 1, true) then return nil end
      raise("%s: the generator failed at its batch %d: %s", fname, r.batches + 1, msg)
    end
    local xb, yb, sw = res[2], res[3], res[4]
    if xb == nil then r.ended = true return nil end
    r.ended = false
    local k = r.batches + 1
    if type(xb) == "table" and getmetatable(xb) == nil and is_array(xb[1]) and res.n == 2 then
      xb, yb, sw = xb[1], xb[2], xb[3]                  -- a {x, y [, w]} list
    end
    check_batch(fname, "the generator", k, xb, yb, need_y,
      "a generator returns x, y [, sample_weight] per call and nil at the end")
    if not need_y then r.batches = k return xb end
    if sw ~= nil then check_weights(fname, "the generator", k, xb, sw) end
    r.batches = k
    return xb, yb, sw
  end
  return r
end

-- ---- the batches of each epoch (fit) --------------------------------------------------------------
-- A feed: feed:exhausted(epoch) answers, before the epoch begins, whether it has no batch
-- left (Keras's "input ran out of data"); feed:epoch(epoch) -> next() giving the epoch's
-- (xb, yb [, wb]), then nil; feed.steps, the batches of an epoch when known (nil: until the
-- generator returns nil); feed.taken, the batches the (last) epoch gave; feed.short, set
-- when the data ended before feed.steps. device_of() says where batches go (the model's
-- device, known once it is built).

-- move(xb, yb, wb, device): the batch on device (nil: where it is)
function M.move(xb, yb, wb, device)
  if device and xb.device ~= device then xb = xb:to(device) end
  if device and is_array(yb) and yb.device ~= device then yb = yb:to(device) end
  if device and wb and wb.device ~= device then wb = wb:to(device) end
  return xb, yb, wb
end
local move = M.move

-- array_feed(x, y, o): o = {bs, shuffle, device_of, sampler, passes, steps}: the stream of
-- o.passes passes over (x, y) (a new shuffle each; with a sampler, its share of pass k,
-- set_epoch(k)); o.steps batches per epoch (default one pass).
function M.array_feed(x, y, o)
  local rows = o.sampler and #o.sampler or x.shape[1]
  local per_pass = (rows + o.bs - 1) // o.bs
  local feed = { steps = o.steps or per_pass }
  local pass, left, it = 0, 0, nil
  local function next_batch()
    if left == 0 then
      if pass >= o.passes then return nil end
      pass, left = pass + 1, per_pass
      local xs, ys, shuffle = x, y, o.shuffle
      if o.sampler then                -- this rank's share of the pass, in the sampler's order
        o.sampler:set_epoch(pass)
        local idx = o.sampler:indices()
        xs, ys, shuffle = x:take(idx:to(x.device), 1), y:take(idx:to(y.device), 1), false
      end
      it = data.batches(xs, ys, o.bs, { shuffle = shuffle, device = o.device_of() })
    end
    left = left - 1
    return it()
  end
  function feed.exhausted() return left == 0 and pass >= o.passes end
  function feed.epoch() return (M.limit(next_batch, feed.steps, feed)) end
  return feed
end

-- loader_feed(fname, loader, o): o = {steps, device_of, set_epoch}: the loader from its
-- start each epoch (set_epoch(e) first when distributed), at most o.steps batches (an
-- IterableDataset's loader without o.steps: until its stream ends, as Keras's dataset of
-- unknown length).
function M.loader_feed(fname, loader, o)
  local feed = { steps = o.steps or (not loader.iterable and #loader or nil) }
  function feed.exhausted() return false end             -- (a loader with no samples is refused first)
  function feed.epoch(_, epoch)
    if o.set_epoch then loader:set_epoch(epoch) end
    return (M.limit(M.batches(fname, loader, o.device_of(), true), feed.steps, feed))
  end
  return feed
end

-- generator_feed(fname, gen, o): o = {steps, device_of}: the generator's batches, o.steps
-- per epoch, or until it returns nil.
function M.generator_feed(fname, gen, o)
  local r = M.reader(fname, gen, true)
  local feed = { steps = o.steps }
  local held                                        -- {xb, yb, wb} peeked by exhausted()
  local function next_batch()
    if held then
      local b = held
      held = nil
      return move(b[1], b[2], b[3], o.device_of())
    end
    local xb, yb, wb = r.next()
    if xb == nil then return nil end
    return move(xb, yb, wb, o.device_of())
  end
  -- before an epoch: peek at its first batch (kept for it)
  function feed.exhausted(_, epoch)
    local xb, yb, wb = r.next()
    if xb ~= nil then held = { xb, yb, wb } return false end
    if r.batches == 0 then raise("%s: the generator gave no batches (it returned nil at its first call)", fname) end
    if not o.steps then
      raise("%s: the generator gave no batch for epoch %d (it returned nil at once: it does not start again after "
        .. "epoch %d's %d batches); give steps_per_epoch = n with a generator of epochs x n batches (an endless "
        .. "one), or a generator that starts a new pass after returning nil", fname, epoch, epoch - 1, feed.taken or 0)
    end
    return true
  end
  function feed.epoch() return (M.limit(next_batch, feed.steps, feed)) end
  return feed
end

-- from_reader(r, device) -> next(): a reader's batches, moved to device
function M.from_reader(r, device)
  return function()
    local xb, yb, wb = r.next()
    if xb == nil then return nil end
    return move(xb, yb, wb, device)
  end
end

-- limit(nxt, steps [, state]) -> next, state: nxt's batches, at most steps of them (all
-- when nil); state.taken counts them (from 0 at each call), state.short is set when steps
-- were asked and nxt ended first.
function M.limit(nxt, steps, state)
  state = state or {}
  state.taken, state.short = 0, state.short or false
  return function()
    if steps and state.taken >= steps then return nil end
    local xb, yb, wb = nxt()
    if xb == nil then state.short = state.short or steps ~= nil return nil end
    state.taken = state.taken + 1
    return xb, yb, wb
  end, state
end

-- ran_out(fname, doing, need): Keras's warning when the data ended before the steps asked
-- ("training", "at least steps_per_epoch x epochs = 12 batches")
function M.ran_out(fname, doing, need)
  io.stderr:write(("%s: the input ran out of data; interrupting %s (make sure that it can give %s)\n")
    :format(fname, doing, need))
end

return M
