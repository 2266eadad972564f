-- gpu.nn.fit_data: the data of Keras's fit, evaluate and predict when it is not (x, y)
-- arrays but a gpu.data.DataLoader or a Dataset (the protocol of gpu.data.dataset: #ds and
-- ds:get(i) or ds[i] giving an (x, y) sample). A dataset is wrapped in a DataLoader with
-- fit's batch_size and shuffle; a loader is used as it is (its own batch size, shuffle and
-- collate_fn). With distributed = true the loader gets a DistributedSampler (this rank's
-- share of the samples, a new shuffle each epoch), or the call is refused when the loader
-- cannot take one.
--
--   model:fit(gpu.data.TensorDataset(x, y), nil, {epochs = 3, batch_size = 64})
--   model:fit(loader, nil, {epochs = 3, validation_data = val_loader})
--   model:evaluate(val_ds), model:predict(loader)

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

-- is_source(v): a loader or something that may be a dataset (a table or userdata, not an
-- array and not a plain {x, y} pair of arrays); dataset.length checks the protocol.
function M.is_source(v)
  local t = type(v)
  if t ~= "table" and t ~= "userdata" or is_array(v) then return false end
  return not (t == "table" and getmetatable(v) == nil and is_array(v[1]))
end

-- samples(loader): how many samples one epoch of the loader gives (without drop_last's cut)
function M.samples(loader)
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
  if loader.sampler then return loader end
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

-- batches(fname, loader, device, need_y): one epoch's (xb, yb), checked (arrays with as
-- many rows each; yb only when need_y) and moved to device when one is given.
function M.batches(fname, loader, device, need_y)
  local nxt = loader:iter()
  local step = 0
  return function()
    -- a dataset that raises (a bad item, samples collate cannot stack) is named as fit's data
    local ok, xb, yb = pcall(nxt)
    if not ok then raise("%s: the loader's batch %d failed: %s", fname, step + 1, tostring(xb)) end
    if xb == nil then return nil end
    step = step + 1
    if not is_array(xb) then
      raise("%s: the loader's batch %d holds %s as its inputs, not an array (a dataset's samples must be "
        .. "(x, y) pairs of arrays or numbers: {x, y})", fname, step, type_name(xb))
    end
    if need_y then
      if yb == nil then
        raise("%s: the loader's batch %d has no targets (a dataset's samples must be (x, y) pairs: {x, y})", fname,
          step)
      elseif not is_array(yb) then
        raise("%s: the loader's batch %d holds %s as its targets, not an array", fname, step, type_name(yb))
      elseif xb.ndim == 0 or yb.ndim == 0 or xb.shape[1] ~= yb.shape[1] then
        raise("%s: the loader's batch %d has %s inputs and %s targets (one target per sample)", fname, step,
          options.shape_str(xb.shape), options.shape_str(yb.shape))
      end
    elseif xb.ndim == 0 then
      raise("%s: the loader's batch %d is a 0-d array (batches have samples along the first axis)", fname, step)
    end
    if device and xb.device ~= device then xb = xb:to(device) end
    if device and yb and is_array(yb) and yb.device ~= device then yb = yb:to(device) end
    return xb, need_y and yb or nil
  end
end

return M
