-- gpu.data: mini-batches and data sets; the Dataset protocol, TensorDataset, Subset,
-- random_split, IterableDataset and ConcatDataset (data/dataset.lua); the samplers
-- (data/sampler.lua; DistributedSampler here); a loader's worker processes and
-- get_worker_info (data/workers.lua); text corpora and CharVocab (data/text.lua);
-- image transforms (data/transforms.lua, gpu.data.transforms); Fashion-MNIST, MNIST and
-- CIFAR-10 from their files.
--
--   for xb, yb in gpu.data.batches(x, y, 128, {shuffle = true}) do ... end
--   local loader = gpu.data.DataLoader(x, y, {batch_size = 128, shuffle = true, device = "cuda"})
--   for xb, yb in loader do ... end                 -- an epoch (also loader:iter(), loader())
--   local ds = gpu.data.fashion_mnist{scale = true} -- ds.train.x (60000, 28, 28) float32 in [0, 1]
--   local s = gpu.data.WeightedRandomSampler(w, #w)  -- DataLoader(x, y, {sampler = s})
--
-- Batches are gathered with take along the first axis (a shuffled epoch is one
-- permutation from gpu.random) and moved to 'device' when one is given.

local gpu = require "gpu"
local options = require "gpu.options"
local dataset = require "gpu.data.dataset"
local sampling = require "gpu.data.sampler"
local workers = require "gpu.data.workers"

local data = {}
local raise, argerror, check_array, type_name = options.raise, options.argerror, options.check_array,
  options.type_name

local batch_keys = {
  shuffle = { type = "boolean", default = false },
  drop_last = { type = "boolean", default = false },
  device = { type = "device", what = "a device name (" .. gpu._device_syntax .. ")" },
}
local BATCHES = options.declare("data.batches", batch_keys,
  { example = "for _ in gpu.data.batches(gpu.ones(4, 2), nil, 2, %s) do end" })

-- Checks x, y (samples along the first axis, as many in each) and the batch size.
local function check_data(fname, x, y, bs, bs_argn)
  check_array(x, fname, 1, "x")
  if y ~= nil then check_array(y, fname, 2, "y") end
  options.value(bs, { type = "integer", min = 1 }, fname, bs_argn, "batch_size")
  if x.ndim == 0 then raise("%s: x must have a first axis (got a 0-d array)", fname) end
  local n = x.shape[1]
  if y ~= nil and (y.ndim == 0 or y.shape[1] ~= n) then
    raise("%s: x has %d samples but y has %d", fname, n, y.ndim > 0 and y.shape[1] or 0)
  end
end

-- The batches of one epoch over checked arguments and options o (o.sampler: a
-- DistributedSampler whose indices of this epoch are the samples, in its order).
local function epoch(x, y, bs, o)
  local n = x.shape[1]
  -- the shuffle's indices live where x does (take needs them there), a copy where y does
  if o.batch_sampler then
    local it = o.batch_sampler:iter()
    local device = o.device and gpu._device_name(o.device)
    return function()
      local idx = it()
      if idx == nil then return nil end
      dataset.check_order(idx, n, "batch_sampler")
      local xb = x:take(gpu.array(idx, { dtype = "int64", device = x.device }), 1)
      local yb = y and y:take(gpu.array(idx, { dtype = "int64", device = y.device }), 1)
      if device and xb.device ~= device then xb = xb:to(device) end
      if device and yb and yb.device ~= device then yb = yb:to(device) end
      return xb, yb
    end
  end
  local order
  if o.sampler then
    order = o.sampler:indices()
    if order.size > 0 and (order:min():item() < 1 or order:max():item() > n) then
      dataset.check_order(order:totable(), n, "sampler")
    end
    order = order:to(x.device)
    n = order.size
  else
    order = o.shuffle and (o.generator and o.generator:permutation(n, { device = x.device })
      or gpu.random.permutation(n, { device = x.device })) or nil
  end
  local order_y = order and y ~= nil and y.device ~= x.device and order:to(y.device) or order
  return dataset.ranges(n, bs, o, function(s, e, device)
    local xb, yb
    if order then
      xb = x:take(order[{ { s, e } }], 1)
      yb = y and y:take(order_y[{ { s, e } }], 1)
    else
      xb = x[{ { s, e } }]
      yb = y and y[{ { s, e } }]
    end
    if device and xb.device ~= device then xb = xb:to(device) end
    if device and yb and yb.device ~= device then yb = yb:to(device) end
    return xb, yb
  end)
end

-- batches(x, y, batch_size [, {shuffle = false, drop_last = false, device =}]): an iterator
-- of (xb, yb); y may be nil.
function data.batches(x, y, bs, opts)
  check_data("data.batches", x, y, bs, 3)
  return epoch(x, y, bs, BATCHES:check(opts, 4))
end

-- DataLoader(x, y, {batch_size = 32, shuffle = false, drop_last = false, device =}): an
-- epoch of batches, reshuffled each time, from
--   for xb, yb in loader do          -- the loader itself: each loop is a new epoch
--   for xb, yb in loader:iter() do   -- or loader(): an iterator of one epoch
-- #loader is the number of batches.
local DataLoader, is_loader = options.class("DataLoader", "loader")
data.is_loader = is_loader

local LOADER = options.declare("data.DataLoader", {
  batch_size = { type = "integer", min = 1, default = 32 },
  shuffle = batch_keys.shuffle, drop_last = batch_keys.drop_last, device = batch_keys.device,
  num_workers = { type = "integer", min = 0, default = 0 },
  prefetch_factor = { type = "integer", min = 1 },
  persistent_workers = { type = "boolean", default = false },
  worker_init_fn = { type = "callable", what = "a function(worker_id) run in each worker as it starts" },
  timeout = { type = "number", min = 0, default = 0 },
  pin_memory = { type = "boolean", default = false },
  collate_fn = { type = "callable", what = "a function(samples) -> batch (with a dataset)" },
  generator = { type = "any", what = "a gpu.random.Generator", check = function(v)
    return type(v) == "userdata" or type(v) == "table", "must be a gpu.random.Generator"
  end },
  sampler = { type = "any", what = "a gpu.data sampler", check = function(v)
    return sampling.is_sampler(v), "must be a gpu.data sampler (SequentialSampler, RandomSampler, ...)"
  end },
  batch_sampler = { type = "any", what = "a gpu.data.BatchSampler", check = function(v)
    return sampling.is_batch_sampler(v), "must be a gpu.data.BatchSampler"
  end },
  distributed = { type = "boolean", default = false },
  seed = { type = "integer", default = 0 },
}, { example = "gpu.data.DataLoader(gpu.ones(4, 2), nil, %s)" })

-- Lua's generic for calls its iterator with two arguments (the state and the control
-- value: nil, then the last xb), a plain loader() call with none; so __call tells
-- `for xb, yb in loader do` (a step of an epoch) from loader() (a new epoch's iterator).
-- The epochs in progress are kept by the last batch they gave (weak keys: a loop left
-- with break is collected), so nested and broken loops each go on with their own.
DataLoader.__call = function(self, ...)
  if select("#", ...) == 0 then return self:iter() end
  local _, last = ...
  local next_batch
  if last == nil then
    next_batch = self:iter()
  else
    next_batch = self._running[last]
    if next_batch == nil then raise("DataLoader: no epoch in progress gave that batch (use loader:iter())") end
    self._running[last] = nil
  end
  local xb, yb = next_batch()
  if xb ~= nil then self._running[xb] = next_batch end
  return xb, yb
end
-- pairs(loader) numbers an epoch's batches, as PyTorch's enumerate(loader):
-- `for i, xb, yb in pairs(loader) do`. ipairs reads loader[1], loader[2]... and would see no
-- batch at all, so an integer key is an error that says how to iterate.
DataLoader.__pairs = function(self)
  local next_batch, i = self:iter(), 0
  return function()
    local xb, yb = next_batch()
    if xb == nil then return nil end
    i = i + 1
    return i, xb, yb
  end, self, nil
end
DataLoader.__index = function(self, k)
  local v = DataLoader[k]
  if v == nil and math.type(k) == "integer" then
    raise("DataLoader: a loader has no batch [%d] (ipairs does not iterate it): use `for xb, yb in loader do`, " ..
      "or `for i, xb, yb in pairs(loader) do` to number the batches", k)
  end
  return v
end
DataLoader.__len = function(self)
  if self.batch_sampler then return #self.batch_sampler end
  if self.iterable then raise("DataLoader: a loader over an IterableDataset has no length (#loader)") end
  local n = self.sampler and #self.sampler or self.dataset and #self.dataset or self.x.shape[1]
  return self.drop_last and n // self.batch_size or (n + self.batch_size - 1) // self.batch_size
end

-- DataLoader(dataset [, opts]): over a dataset (gpu.data.dataset's protocol); its
-- batches are collated by collate_fn (default_collate) unless the dataset gathers them
-- itself (get_batch); a batch that is a list is unpacked: for xb, yb in loader do
-- With num_workers = k (> 0) k forked processes make the batches (gpu.data.workers:
-- prefetch_factor, persistent_workers, worker_init_fn, timeout, get_worker_info). Over
-- arrays x, y the worker options are accepted and change nothing: a batch is one take per
-- array, made here. pin_memory is accepted and changes nothing either (batches are copied
-- to 'device' as they come).
for _, k in ipairs { "TensorDataset", "Subset", "random_split", "default_collate", "IterableDataset", "ConcatDataset" } do
  data[k] = dataset[k]
end
for _, k in ipairs { "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
                     "BatchSampler" } do
  data[k] = sampling[k]
end

-- the worker options against one another, as PyTorch's DataLoader checks them
local function check_workers(o, argn)
  local fname = "data.DataLoader"
  if o.num_workers == 0 then
    if o.prefetch_factor ~= nil then
      argerror(fname, argn, "prefetch_factor option could only be specified in multiprocessing: let num_workers > 0 " ..
        "to enable multiprocessing, otherwise leave prefetch_factor out")
    end
    if o.persistent_workers then argerror(fname, argn, "persistent_workers option needs num_workers > 0") end
  end
  o.prefetch_factor = o.prefetch_factor or 2
end

-- the sampling options against one another and the data, as PyTorch's DataLoader checks
-- them (raw: the options as given, to tell a batch_size given from the default)
local function check_sampling(o, raw, argn, iterable)
  local fname = "data.DataLoader"
  check_workers(o, argn)
  if iterable then
    for _, k in ipairs { "sampler", "batch_sampler" } do
      if o[k] ~= nil then
        argerror(fname, argn, "DataLoader with IterableDataset: expected unspecified %s option, but got %s=%s", k, k,
          type_name(o[k]))
      end
    end
    if o.shuffle then
      argerror(fname, argn, "DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=true")
    end
    if o.distributed then argerror(fname, argn, "DataLoader with IterableDataset: distributed = true needs positions") end
    return
  end
  if o.sampler ~= nil and o.shuffle then argerror(fname, argn, "sampler option is mutually exclusive with shuffle") end
  if o.batch_sampler ~= nil and (type(raw) == "table" and raw.batch_size ~= nil or o.shuffle or o.sampler ~= nil
      or o.drop_last) then
    argerror(fname, argn, "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
  end
  if o.distributed and (o.sampler ~= nil or o.batch_sampler ~= nil) then
    argerror(fname, argn, "distributed = true makes the loader's DistributedSampler: it is mutually exclusive with "
      .. "sampler and batch_sampler")
  end
end
data.transforms = require "gpu.data.transforms"
local text = require "gpu.data.text"
for _, k in ipairs { "read_text", "list_text_files", "CharVocab" } do data[k] = text[k] end

function data.DataLoader(x, y, opts)
  if not options.is_array(x) and (type(x) == "table" or type(x) == "userdata") then
    if y ~= nil and opts ~= nil then argerror("data.DataLoader", 3, "DataLoader(dataset [, opts]) takes two arguments") end
    local o = LOADER:check(y, 2)
    if dataset.is_iterable(x) then
      check_sampling(o, y, 2, true)
      return setmetatable({ dataset = x, iterable = true, batch_size = o.batch_size, drop_last = o.drop_last,
                            device = o.device, collate_fn = o.collate_fn, generator = o.generator,
                            num_workers = o.num_workers, prefetch_factor = o.prefetch_factor,
                            persistent_workers = o.persistent_workers, worker_init_fn = o.worker_init_fn,
                            timeout = o.timeout, pin_memory = o.pin_memory,
                            _running = setmetatable({}, { __mode = "k" }) }, DataLoader)
    end
    check_sampling(o, y, 2)
    local n = dataset.length("data.DataLoader", 1, x)
    options.value(o.batch_size, { type = "integer", min = 1 }, "data.DataLoader", 2, "batch_size")
    -- distributed: this rank's share of the items, as for arrays (dataset.epoch reads the sampler)
    local sampler = o.distributed and data.DistributedSampler(n,
      { shuffle = o.shuffle, seed = o.seed, drop_last = o.drop_last }) or o.sampler
    return setmetatable({ dataset = x, n = n, batch_size = o.batch_size, shuffle = o.shuffle, drop_last = o.drop_last,
                          device = o.device, collate_fn = o.collate_fn, generator = o.generator, sampler = sampler,
                          batch_sampler = o.batch_sampler, num_workers = o.num_workers,
                          prefetch_factor = o.prefetch_factor, persistent_workers = o.persistent_workers,
                          worker_init_fn = o.worker_init_fn, timeout = o.timeout, pin_memory = o.pin_memory,
                          _running = setmetatable({}, { __mode = "k" }) }, DataLoader)
  end
  if type(y) == "table" and not options.is_array(y) and opts == nil then
    argerror("data.DataLoader", 2, "y: gpu.array or nil expected, got a table (DataLoader(x, y, opts): " ..
      "pass nil for y before the options)")
  end
  local o = LOADER:check(opts, 3)
  if o.collate_fn ~= nil then argerror("data.DataLoader", 3, "collate_fn needs a dataset (x, y batches are slices)") end
  check_sampling(o, opts, 3)
  check_data("data.DataLoader", x, y, o.batch_size, 3)
  -- distributed: this rank's share of the samples (a DistributedSampler; the loader's
  -- shuffle, seed and drop_last are the sampler's)
  local sampler = o.distributed and data.DistributedSampler(x.shape[1],
    { shuffle = o.shuffle, seed = o.seed, drop_last = o.drop_last }) or o.sampler
  return setmetatable({ x = x, y = y, batch_size = o.batch_size, shuffle = o.shuffle, drop_last = o.drop_last,
                        device = o.device, generator = o.generator, sampler = sampler, batch_sampler = o.batch_sampler,
                        num_workers = o.num_workers, prefetch_factor = o.prefetch_factor,
                        persistent_workers = o.persistent_workers, worker_init_fn = o.worker_init_fn,
                        timeout = o.timeout, pin_memory = o.pin_memory, _running = setmetatable({}, { __mode = "k" }) }, DataLoader)
end

-- set_epoch(e): the distributed sampler's epoch (a new shuffle, the same on every rank)
function DataLoader:set_epoch(e)
  if self.sampler and self.sampler.set_epoch then self.sampler:set_epoch(e) end
  return self
end

-- ---- DistributedSampler ----------------------------------------------------------------------

-- DistributedSampler(n [, {shuffle = true, seed = 0, drop_last = false, num_replicas =, rank =}]):
-- torch.utils.data.DistributedSampler over n samples: every rank takes every world_size-th
-- index of one order (a permutation of 1..n seeded by seed + epoch, the same on every rank,
-- or 1..n), so the ranks' shares are disjoint. Without drop_last the order is padded with
-- its first indices to a multiple of the world's size (some samples are seen twice); with
-- it the tail is dropped. num_replicas and rank (1-based) default to gpu.distributed's.
local Sampler = {}
Sampler.__index = Sampler
Sampler.__name = "DistributedSampler"
local function is_sampler(v) return getmetatable(v) == Sampler end
data.is_sampler = sampling.is_sampler

local SAMPLER = options.declare("data.DistributedSampler", {
  shuffle = { type = "boolean", default = true },
  seed = { type = "integer", default = 0 },
  drop_last = { type = "boolean", default = false },
  num_replicas = { type = "integer", min = 1 },
  rank = { type = "integer", min = 1 },
}, { example = "gpu.data.DistributedSampler(4, %s)" })

function data.DistributedSampler(n, opts)
  options.value(n, { type = "integer", min = 0 }, "data.DistributedSampler", 1, "n")
  local o = SAMPLER:check(opts, 2)
  local dist = gpu.distributed
  local W = o.num_replicas or (dist.is_initialized() and dist.world_size() or 1)
  local r = o.rank or (dist.is_initialized() and dist.rank() or 1)
  if r > W then argerror("data.DistributedSampler", 2, "rank %d out of range 1..%d", r, W) end
  local per = o.drop_last and n // W or (n + W - 1) // W
  return setmetatable({ n = n, shuffle = o.shuffle, seed = o.seed, drop_last = o.drop_last, num_replicas = W,
                        rank = r, num_samples = per, epoch = 0 }, Sampler)
end

Sampler.__len = function(self) return self.num_samples end

function Sampler:set_epoch(e)
  options.value(e, { type = "integer" }, "DistributedSampler:set_epoch", 1, "epoch")
  self.epoch = e
  return self
end

-- indices(): this rank's samples of the current epoch, 1-based (int64, cpu)
function Sampler:indices()
  local n, W, per = self.n, self.num_replicas, self.num_samples
  local total = per * W
  if per == 0 then return gpu.zeros(0, { dtype = "int64", device = "cpu" }) end
  local order = self.shuffle and gpu.random.Generator(self.seed + self.epoch):permutation(n, { device = "cpu" })
    or gpu.arange(1, n + 1, { dtype = "int64", device = "cpu" })
  if total > n then       -- pad with the first indices, as often as needed
    local reps = (total + n - 1) // n
    order = order:tile(reps)[{ { 1, total } }]
  elseif total < n then
    order = order[{ { 1, total } }]
  end
  return order[{ { self.rank, total, W } }]:copy()
end

-- iter(): the indices as Lua integers
function Sampler:iter()
  local idx, i = self:indices(), 0
  return function()
    i = i + 1
    if i <= idx.size then return idx[i] end
  end
end
options.guard_methods(Sampler, "DistributedSampler", "sampler", is_sampler)

-- iter(): an iterator of one epoch (reshuffled when shuffle is set), and a value to close:
-- `for xb, yb in loader:iter() do` stops the epoch's workers at once when the loop is left
-- (break, an error), where `for xb, yb in loader do` leaves them to the collector
function DataLoader:iter()
  if self.dataset and self.num_workers > 0 then
    local next_batch, closing = workers.epoch(self)
    return next_batch, nil, nil, closing
  end
  if self.iterable then return dataset.iterable_epoch(self.dataset, self) end
  if self.dataset then return dataset.epoch(self.dataset, self) end
  return epoch(self.x, self.y, self.batch_size, self)
end

-- get_worker_info(): in a DataLoader's worker process {id =, num_workers =, seed =,
-- dataset =} (ids 1..num_workers; seed: the one gpu.random was given there; dataset: the
-- worker's copy), nil in the main process (torch.utils.data.get_worker_info)
data.get_worker_info = workers.get_worker_info

-- ---- Fashion-MNIST --------------------------------------------------------------------------

data.fashion_mnist_classes = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                               "Sneaker", "Bag", "Ankle boot" }
data.fashion_mnist_path = "/usr/share/datasets/fashion-mnist"

-- missing(err): a loader's error says the file is not there (the loaders open only regular
-- files, so trying one is also how a FIFO is refused without blocking)
local function missing(err) return tostring(err):find("(No such file or directory)", 1, true) ~= nil end

-- load_named(fname, dir, stem, hint): the IDX file stem.gz or stem in dir and its path, else
-- an error naming both (hint: where the files come from) or the file's fault
local function load_named(fname, dir, stem, hint)
  for _, name in ipairs { stem .. ".gz", stem } do
    local p = dir .. "/" .. name
    local ok, x = pcall(gpu.load_idx, p)
    if ok then return x, p end
    if not missing(x) then raise("%s: %s", fname, x) end
  end
  raise("%s: %s(.gz) not found in %s (%s)", fname, stem, dir, hint)
end

-- finish(fname, x, y, o, what): a split of images x (uint8, samples first) and labels y
-- (0..9 as stored) as the loaders give it: the first o.limit, labels int64 1..10, scaled,
-- flattened, moved as o says (what: the labels' file, for errors)
local function finish(fname, x, y, o, what)
  if o.limit and o.limit < x.shape[1] then
    x, y = x[{ { 1, o.limit } }], y[{ { 1, o.limit } }]
  end
  if y.size > 0 and y:max():item() > 9 then raise("%s: %s holds a label above 9", fname, what) end
  y = y:astype("int64") + 1
  if o.scale then x = x:astype("float32") / 255 end
  if o.flatten then x = x:reshape(x.shape[1], -1) end
  if o.device then x, y = x:to(o.device), y:to(o.device) end
  return { x = x, y = y }
end

-- idx_split(fname, dir, img, lab, o, hint): the images and labels of one split from IDX
-- files (img and lab: the files' names less .gz), checked to be (N, H, W) and (N)
local function idx_split(fname, dir, img, lab, o, hint)
  local x, ip = load_named(fname, dir, img, hint)
  local y, lp = load_named(fname, dir, lab, hint)
  if x.ndim ~= 3 or y.ndim ~= 1 or x.shape[1] ~= y.shape[1] or x.dtype ~= "uint8" or y.dtype ~= "uint8" then
    raise("%s: %s is %s %s and %s %s %s; expected uint8 (N, H, W) images and uint8 (N) labels", fname, ip, x.dtype,
      options.shape_str(x.shape), lp, y.dtype, options.shape_str(y.shape))
  end
  return finish(fname, x, y, o, lp)
end

-- fashion_mnist([{path =, scale = false, flatten = false, device =, limit =}]) ->
-- {train = {x =, y =}, test = {x =, y =}, classes = {...}}: images uint8 (N, 28, 28)
-- (float32 in [0, 1] with scale = true; (N, 784) with flatten = true), labels int64 1..10.
local split_keys = {
  scale = { type = "boolean", default = false }, flatten = { type = "boolean", default = false },
  device = batch_keys.device, limit = { type = "integer", min = 1 },
}
local FASHION = options.declare("data.fashion_mnist", {
  path = "string", scale = split_keys.scale, flatten = split_keys.flatten, device = split_keys.device,
  limit = split_keys.limit,
}, { example = "local ok, err = pcall(gpu.data.fashion_mnist, %s); assert(ok or not err:find('option'), err)" })

function data.fashion_mnist(opts)
  opts = FASHION:check(opts, 1)
  local dir = opts.path or os.getenv("FASHION_MNIST") or data.fashion_mnist_path
  local fname, hint = "data.fashion_mnist", "install Debian's dataset-fashion-mnist, or pass {path =}"
  return {
    train = idx_split(fname, dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", opts, hint),
    test = idx_split(fname, dir, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", opts, hint),
    classes = data.fashion_mnist_classes,
  }
end

-- ---- MNIST, CIFAR-10 --------------------------------------------------------------------------

data.mnist_classes = { "0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
                       "8 - eight", "9 - nine" }
data.cifar10_classes = { "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck" }

local function split_decl(name)
  local keys = { train = { type = "boolean", default = true } }
  for k, v in pairs(split_keys) do keys[k] = v end
  return options.declare(name, keys, { example = "local ok, err = pcall(" .. "gpu." .. name ..
    ", '/nonexistent', %s); assert(not err:find('option'), err)" })
end
local MNIST, CIFAR = split_decl("data.mnist"), split_decl("data.cifar10")

-- mnist(folder [, {train = true, scale = false, flatten = false, limit =, device =}]) ->
-- {x =, y =, classes =}: the MNIST split in folder's IDX files (train-images-idx3-ubyte,
-- train-labels-idx1-ubyte, or t10k-... with train = false; each .gz or plain), as
-- fashion_mnist gives a split
function data.mnist(folder, opts)
  options.value(folder, { type = "string" }, "data.mnist", 1, "folder")
  local o = MNIST:check(opts, 2)
  local stem = o.train and "train" or "t10k"
  local s = idx_split("data.mnist", folder, stem .. "-images-idx3-ubyte", stem .. "-labels-idx1-ubyte", o,
    "MNIST's IDX files")
  s.classes = data.mnist_classes
  return s
end

local CIFAR_RECORD = 1 + 3 * 32 * 32

-- cifar10(folder [, {train = true, scale = false, flatten = false, limit =, device =}]) ->
-- {x =, y =, classes =}: CIFAR-10's binary version in folder (or its cifar-10-batches-bin):
-- data_batch_1.bin .. data_batch_5.bin (train) or test_batch.bin, each record one label
-- byte (0..9) and 3072 image bytes (C, H, W); images uint8 (N, 3, 32, 32), labels int64
-- 1..10
function data.cifar10(folder, opts)
  local fname = "data.cifar10"
  options.value(folder, { type = "string" }, fname, 1, "folder")
  local o = CIFAR:check(opts, 2)
  local names = o.train and { "data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                              "data_batch_5.bin" } or { "test_batch.bin" }
  local function read(p)
    local r, err = gpu._load_records(p, CIFAR_RECORD)
    if r == nil and missing(err) then return nil end
    if r == nil then raise("%s: %s (CIFAR-10 records are 1 label byte + 3072 image bytes)", fname, err) end
    local bad = r[{ {}, 1 }]:gt(9)
    if bad:any():item() then
      local k = bad:argmax():item()
      raise("%s: '%s' is malformed: record %d has label %d (CIFAR-10's labels are 0..9)", fname, p, k, r[{ k, 1 }])
    end
    return r
  end
  local dir = folder
  local first = read(dir .. "/" .. names[1])
  if first == nil then        -- the archive's own folder inside the one given
    first = read(dir .. "/cifar-10-batches-bin/" .. names[1])
    if first ~= nil then dir = dir .. "/cifar-10-batches-bin" end
  end
  local parts, have = {}, 0
  for i, name in ipairs(names) do
    local r = i == 1 and first or read(dir .. "/" .. name)
    if r == nil then
      raise("%s: %s not found in %s (CIFAR-10's binary version: data_batch_1..5.bin and test_batch.bin, here or in " ..
        "cifar-10-batches-bin)", fname, name, folder)
    end
    parts[i] = r
    have = have + r.shape[1]
    if o.limit and have >= o.limit then break end
  end
  local r = #parts == 1 and parts[1] or gpu.concatenate(parts, 1)
  local x = r[{ {}, { 2, CIFAR_RECORD } }]:reshape(r.shape[1], 3, 32, 32)
  local s = finish(fname, x, r[{ {}, 1 }]:copy(), o, "the labels")
  s.classes = data.cifar10_classes
  return s
end

data.load_idx = gpu.load_idx

return options.count_all("data.", data)
