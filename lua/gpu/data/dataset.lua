-- gpu.data.dataset: the Dataset protocol (torch.utils.data's map-style datasets),
-- TensorDataset, Subset, random_split, default_collate, and the batches of a DataLoader
-- over a dataset; gpu.data exports them.
--
-- A dataset is any table or object with a length (#ds: a list's length or __len) and
-- items 1..#ds got by ds:get(i) when it has a get method, else by ds[i] (a plain list,
-- or __index). An item (a sample) is an array, a number, a list of them ({x, y}, a tuple)
-- or a table of them by name ({image = x, label = y}). default_collate stacks the samples
-- of a batch field by field: arrays along a new first axis (gpu.stack), integers into an
-- int64 array, other numbers into a float64 array, booleans into a bool array.
--
--   local ds = gpu.data.TensorDataset(x, y)             -- ds:get(i) -> {x[i], y[i]}
--   local train, val = gpu.data.random_split(ds, {0.9, 0.1})
--   for xb, yb in gpu.data.DataLoader(train, {batch_size = 64, shuffle = true}) do ... end
--
-- A dataset may also have get_batch(indices) (a list of positions) returning the
-- collated batch at once: TensorDataset gathers its arrays with one take each, and a
-- Subset of such a dataset passes its positions through.
local gpu = require "gpu"
local options = require "gpu.options"

local is_array, raise, argerror, type_name = options.is_array, options.raise, options.argerror, options.type_name
local M = {}

-- ---- the protocol ----------------------------------------------------------------------------

-- length(fname, argn, ds): #ds, checked
local function length(fname, argn, ds)
  local t = type(ds)
  if t ~= "table" and t ~= "userdata" or is_array(ds) then
    argerror(fname, argn, "a dataset (a table or object with # and get(i) or [i]) expected, got %s", type_name(ds))
  end
  local ok, n = pcall(function() return #ds end)
  if not ok or math.type(n) ~= "integer" or n < 0 then
    argerror(fname, argn, "the dataset has no length (#ds must be an integer >= 0, got %s)",
      ok and type_name(n) or "an error: " .. tostring(n))
  end
  return n
end
M.length = length

-- item(ds, i): the sample at i by ds:get(i), else ds[i]
local function item(ds, i)
  local get = type(ds) == "table" and ds.get or nil
  if get == nil and type(ds) == "userdata" then
    local mt = getmetatable(ds)
    get = mt and type(mt.__index) == "table" and mt.__index.get or nil
  end
  local s
  if type(get) == "function" then s = get(ds, i) else s = ds[i] end
  if s == nil then raise("data: the dataset's item %d is nil (a dataset's items are 1..#ds)", i) end
  return s
end
M.item = item

local function is_plain_table(v) return type(v) == "table" and not is_array(v) end

-- default_collate(samples) -> the batch (as the samples are: an array, a list, a table by name)
function M.default_collate(samples)
  if type(samples) ~= "table" or is_array(samples) or samples[1] == nil then
    argerror("data.default_collate", 1, "a non-empty list of samples expected, got %s", type_name(samples))
  end
  local first = samples[1]
  if is_array(first) then
    for i, s in ipairs(samples) do
      if not is_array(s) or options.shape_str(s.shape) ~= options.shape_str(first.shape) then
        raise("data.default_collate: sample %d is %s, sample 1 an array of shape %s (a batch stacks equal shapes)", i,
          is_array(s) and "of shape " .. options.shape_str(s.shape) or type_name(s), options.shape_str(first.shape))
      end
    end
    return gpu.stack(samples, 1)
  elseif type(first) == "number" or type(first) == "boolean" then
    local all_int = true
    for i, s in ipairs(samples) do
      if type(s) ~= type(first) then
        raise("data.default_collate: sample %d is %s, sample 1 a %s", i, type_name(s), type(first))
      end
      if type(s) == "number" and math.type(s) ~= "integer" then all_int = false end
    end
    local dtype = type(first) == "boolean" and "bool" or all_int and "int64" or "float64"
    return gpu.array(samples, { dtype = dtype })
  elseif is_plain_table(first) then
    local out = {}
    for k in pairs(first) do
      local col = {}
      for i, s in ipairs(samples) do
        if not is_plain_table(s) or s[k] == nil then
          raise("data.default_collate: sample %d has no field %s (sample 1 has)", i, tostring(k))
        end
        col[i] = s[k]
      end
      out[k] = M.default_collate(col)
    end
    return out
  end
  raise("data.default_collate: a sample is %s; samples are arrays, numbers, booleans or tables of them", type_name(first))
end

-- The values a loader's loop gets from a collated batch: a list's entries, else the batch.
local function unpack_batch(b)
  if is_plain_table(b) and b[1] ~= nil then return table.unpack(b) end
  return b
end

local function to_device(b, device)
  if is_array(b) then return b.device ~= device and b:to(device) or b end
  if is_plain_table(b) then
    local out = {}
    for k, v in pairs(b) do out[k] = to_device(v, device) end
    return out
  end
  return b
end

-- ranges(n, bs, o, batch): an iterator over positions 1..n in runs of bs (the last one
-- shorter, or left out with o.drop_last); each step returns batch(s, e, device), s..e the
-- run and device o.device as arrays name it ("cuda" is "cuda:0") or nil. The loaders over
-- arrays (gpu.data) and over datasets share it.
function M.ranges(n, bs, o, batch)
  local last = o.drop_last and n - n % bs or n
  local device = o.device and gpu._device_name(o.device)
  local s = 1
  return function()
    if s > last then return nil end
    local e = math.min(last, s + bs - 1)
    local first = s
    s = e + 1
    return batch(first, e, device)
  end
end

-- fetch(ds, idx, o [, at]): the collated batch of ds's items at the positions idx (a list):
-- ds:get_batch(idx) when the dataset has one and no collate_fn is given, else collate_fn
-- (default_collate) of the items; at.sample is each position while its item is read (so an
-- error can name it)
function M.fetch(ds, idx, o, at)
  if o.collate_fn == nil and type(ds) == "table" and type(ds.get_batch) == "function" then
    return ds:get_batch(idx)
  end
  local samples = {}
  for j, i in ipairs(idx) do
    if at then at.sample = i end
    samples[j] = item(ds, i)
  end
  if at then at.sample = nil end
  return (o.collate_fn or M.default_collate)(samples)
end

-- deliver(b, device): the collated batch b moved to device (nil: where it is) and unpacked
-- as a loader's loop gets it
function M.deliver(b, device)
  if device then b = to_device(b, device) end
  return unpack_batch(b)
end

-- check_order(order, n): positions a sampler gave, each in 1..n
local function check_order(order, n, what)
  for _, i in ipairs(order) do
    if i < 1 or i > n then
      raise("DataLoader: the %s gave position %d, but the data has %d samples", what, i, n)
    end
  end
end
M.check_order = check_order

-- index_batches(ds, o): an iterator of the position lists of one epoch's batches over
-- dataset ds, o the loader's checked options (batch_size, shuffle, drop_last, generator;
-- sampler: its indices of this epoch are the items, in its order; batch_sampler: its lists
-- are the batches). A shuffle is drawn here, at once.
function M.index_batches(ds, o)
  local n = length("DataLoader", 1, ds)
  if o.batch_sampler then
    local it = o.batch_sampler:iter()
    return function()
      local idx = it()
      if idx ~= nil then check_order(idx, n, "batch_sampler") end
      return idx
    end
  end
  local order
  if o.sampler then
    order = o.sampler:indices():totable()
    check_order(order, n, "sampler")
    n = #order
  elseif o.shuffle and n > 0 then
    local perm = o.generator and o.generator:permutation(n) or gpu.random.permutation(n)
    order = perm:totable()
  end
  return M.ranges(n, o.batch_size, o, function(s, e)
    local idx = {}
    for i = s, e do idx[#idx + 1] = order and order[i] or i end
    return idx
  end)
end

-- epoch(ds, o): the batches of one epoch over dataset ds, o the loader's checked options
-- (index_batches's, collate_fn and device)
function M.epoch(ds, o)
  local batches = M.index_batches(ds, o)
  local device = o.device and gpu._device_name(o.device)
  return function()
    local idx = batches()
    if idx == nil then return nil end
    return M.deliver(M.fetch(ds, idx, o), device)
  end
end

-- ---- IterableDataset -------------------------------------------------------------------------

local IterableDataset, is_iterable = options.class("IterableDataset", "ds")
M.is_iterable = is_iterable

-- IterableDataset(make_iter): torch.utils.data.IterableDataset: a stream of samples with
-- no length and no positions; make_iter() (a function or a callable object) gives a fresh
-- iterator for each epoch, whose calls return the samples in turn and then nil.
--   local ds = gpu.data.IterableDataset(function()
--     local i = 0
--     return function() i = i + 1; if i <= 10 then return {gpu.full({2}, i), i} end end
--   end)
function M.IterableDataset(make_iter)
  local mt = getmetatable(make_iter)
  if type(make_iter) ~= "function" and not (type(mt) == "table" and rawget(mt, "__call") ~= nil) then
    argerror("data.IterableDataset", 1, "a function returning an iterator expected, got %s", type_name(make_iter))
  end
  return setmetatable({ make_iter = make_iter }, IterableDataset)
end

-- iter(): a new epoch's iterator of samples
function IterableDataset:iter()
  local it = self.make_iter()
  local mt = getmetatable(it)
  if type(it) ~= "function" and not (type(mt) == "table" and rawget(mt, "__call") ~= nil) then
    raise("IterableDataset:iter: the dataset's function returned %s, not an iterator (a function)", type_name(it))
  end
  return it
end

IterableDataset.__len = function()
  raise("IterableDataset: an iterable dataset has no length (#ds); iterate it with ds:iter()")
end

-- iterable_batches(ds, o): an iterator of the collated batches of one epoch over the
-- IterableDataset ds: batch_size samples at a time in the stream's order; the last
-- shorter, or left out with drop_last
function M.iterable_batches(ds, o)
  local it = ds:iter()
  local done = false
  return function()
    if done then return nil end
    local samples = {}
    while #samples < o.batch_size do
      local s = it()
      if s == nil then done = true break end
      samples[#samples + 1] = s
    end
    if #samples == 0 or (done and o.drop_last and #samples < o.batch_size) then return nil end
    return (o.collate_fn or M.default_collate)(samples)
  end
end

-- iterable_epoch(ds, o): iterable_batches moved to o.device and unpacked
function M.iterable_epoch(ds, o)
  local batches = M.iterable_batches(ds, o)
  local device = o.device and gpu._device_name(o.device)
  return function()
    local b = batches()
    if b == nil then return nil end
    return M.deliver(b, device)
  end
end

-- ---- ConcatDataset ---------------------------------------------------------------------------

local ConcatDataset = options.class("ConcatDataset", "ds")
ConcatDataset.__len = function(self) return self.n end

-- ConcatDataset({ds1, ds2, ...}): the datasets' items one after another: items 1..#ds1
-- are ds1's, then ds2's...; .datasets, .cumulative_sizes (as PyTorch)
function M.ConcatDataset(list)
  local fname = "data.ConcatDataset"
  if type(list) ~= "table" or is_array(list) or getmetatable(list) ~= nil or list[1] == nil then
    argerror(fname, 1, "a non-empty list of datasets expected, got %s", type_name(list))
  end
  local sizes, total = {}, 0
  for i, ds in ipairs(list) do
    if is_iterable(ds) then argerror(fname, 1, "datasets[%d]: ConcatDataset does not support IterableDataset", i) end
    local t = type(ds)
    if t ~= "table" and t ~= "userdata" or is_array(ds) then
      argerror(fname, 1, "datasets[%d]: a dataset expected, got %s", i, type_name(ds))
    end
    local ok, n = pcall(function() return #ds end)
    if not ok or math.type(n) ~= "integer" or n < 0 then
      argerror(fname, 1, "datasets[%d] has no length (#ds must be an integer >= 0)", i)
    end
    total = total + n
    sizes[i] = total
  end
  local datasets = table.move(list, 1, #list, 1, {})
  return setmetatable({ datasets = datasets, cumulative_sizes = sizes, n = total }, ConcatDataset)
end

function ConcatDataset:get(i)
  if math.type(i) ~= "integer" or i < 1 or i > self.n then
    raise("ConcatDataset:get: index %s is out of 1..%d", tostring(i), self.n)
  end
  local sizes = self.cumulative_sizes
  local lo, hi = 1, #sizes                      -- the first dataset whose cumulative size >= i
  while lo < hi do
    local mid = (lo + hi) // 2
    if sizes[mid] >= i then hi = mid else lo = mid + 1 end
  end
  return item(self.datasets[lo], i - (sizes[lo - 1] or 0))
end

-- ---- TensorDataset ---------------------------------------------------------------------------

local TensorDataset, is_tensor_dataset = options.class("TensorDataset", "ds")
TensorDataset.__len = function(self) return self.n end

-- TensorDataset(a, b, ...): arrays with as many rows each; ds:get(i) -> {a[i], b[i], ...}
-- (row views; a 1-D array's row is a 0-d array)
function M.TensorDataset(...)
  local arrays = table.pack(...)
  if arrays.n == 0 then argerror("data.TensorDataset", 1, "at least one array expected") end
  local n
  for i = 1, arrays.n do
    local a = options.check_array(arrays[i], "data.TensorDataset", i, "array #" .. i)
    if a.ndim == 0 then argerror("data.TensorDataset", i, "array #%d is 0-d (each needs a first axis)", i) end
    if n == nil then n = a.shape[1]
    elseif a.shape[1] ~= n then
      raise("data.TensorDataset: array #%d has %d rows, array #1 has %d (each must have as many)", i, a.shape[1], n)
    end
  end
  arrays.n = nil
  return setmetatable({ tensors = arrays, n = n }, TensorDataset)
end

function TensorDataset:get(i)
  if math.type(i) ~= "integer" or i < 1 or i > self.n then
    raise("TensorDataset:get: index %s is out of 1..%d", tostring(i), self.n)
  end
  local out = {}
  for k, a in ipairs(self.tensors) do
    local row = a[{ { i, i } }]
    local shape = {}
    for d = 2, a.ndim do shape[d - 1] = a.shape[d] end
    out[k] = row:reshape(shape)
  end
  return out
end

-- get_batch(indices): {a:take(indices), b:take(indices), ...}, one gather per array
function TensorDataset:get_batch(idx)
  local out, cache = {}, {}
  for k, a in ipairs(self.tensors) do
    local ix = cache[a.device]
    if ix == nil then
      ix = gpu.array(idx, { dtype = "int64", device = a.device })
      cache[a.device] = ix
    end
    out[k] = a:take(ix, 1)
  end
  return out
end

-- ---- Subset, random_split --------------------------------------------------------------------

local Subset, is_subset = options.class("Subset", "ds")
Subset.__len = function(self) return #self.indices end

-- Subset(dataset, indices): the items of dataset at indices (a list of 1-based positions
-- or an int64 array); subset:get(i) = dataset's item indices[i]
function M.Subset(ds, indices)
  local n = length("data.Subset", 1, ds)
  if is_array(indices) then
    options.check_array(indices, "data.Subset", 2, "indices")
    if indices.ndim ~= 1 or (indices.dtype ~= "int64" and indices.dtype ~= "int32") then
      argerror("data.Subset", 2, "indices: a 1-D integer array or a list expected, got %s %s", indices.dtype,
        options.shape_str(indices.shape))
    end
    indices = indices:totable()
  elseif type(indices) ~= "table" then
    argerror("data.Subset", 2, "indices: a list of positions expected, got %s", type_name(indices))
  end
  local list = {}
  for j, i in ipairs(indices) do
    if math.type(i) ~= "integer" or i < 1 or i > n then
      argerror("data.Subset", 2, "indices[%d] = %s is not a position in 1..%d", j, tostring(i), n)
    end
    list[j] = i
  end
  return setmetatable({ dataset = ds, indices = list }, Subset)
end

function Subset:get(i)
  local j = self.indices[i]
  if j == nil then raise("Subset:get: index %s is out of 1..%d", tostring(i), #self.indices) end
  return item(self.dataset, j)
end

function Subset:get_batch(idx)
  local base = {}
  for k, i in ipairs(idx) do base[k] = self.indices[i] end
  local ds = self.dataset
  if type(ds) == "table" and type(ds.get_batch) == "function" then return ds:get_batch(base) end
  local samples = {}
  for k, i in ipairs(base) do samples[k] = item(ds, i) end
  return M.default_collate(samples)
end

local SPLIT = options.declare("data.random_split", {
  generator = { type = "any", what = "a gpu.random.Generator", check = function(v)
    return type(v) == "userdata" or type(v) == "table", "must be a gpu.random.Generator"
  end },
}, { example = "gpu.data.random_split({1, 2, 3, 4}, {2, 2}, %s)" })

-- random_split(dataset, lengths [, {generator =}]) -> Subset, Subset, ...: lengths are
-- counts summing to #dataset, or fractions summing to 1 (each floor(n * f), the rest
-- given one each to the first subsets, as PyTorch); positions from one permutation
function M.random_split(ds, lengths, opts)
  local fname = "data.random_split"
  local n = length(fname, 1, ds)
  if type(lengths) ~= "table" or #lengths == 0 then
    argerror(fname, 2, "lengths: a list of counts or fractions expected, got %s", type_name(lengths))
  end
  local o = SPLIT:check(opts, 3)
  local counts, total, fractions = {}, 0, true
  for i, l in ipairs(lengths) do
    if type(l) ~= "number" or l ~= l or l < 0 then argerror(fname, 2, "lengths[%d] must be a number >= 0, got %s", i, type_name(l)) end
    if math.type(l) == "integer" and l > 1 then fractions = false end
    total = total + l
  end
  if fractions and math.abs(total - 1) < 1e-9 and not (#lengths == 1 and n == 1) then
    local sum = 0
    for i, f in ipairs(lengths) do counts[i] = math.floor(n * f); sum = sum + counts[i] end
    for i = 0, n - sum - 1 do
      local k = i % #counts + 1
      counts[k] = counts[k] + 1
    end
  else
    for i, l in ipairs(lengths) do
      if math.type(l) ~= "integer" then
        argerror(fname, 2, "lengths must be counts summing to %d or fractions summing to 1, got %s at %d", n,
          tostring(l), i)
      end
      counts[i] = l
    end
    if total ~= n then
      argerror(fname, 2, "the lengths sum to %s but the dataset has %d items", tostring(total), n)
    end
  end
  local perm = n > 0 and (o.generator and o.generator:permutation(n) or gpu.random.permutation(n)):totable() or {}
  local out, s = {}, 0
  for i, c in ipairs(counts) do
    local idx = {}
    for j = 1, c do idx[j] = perm[s + j] end
    s = s + c
    out[i] = setmetatable({ dataset = ds, indices = idx }, Subset)
  end
  return table.unpack(out)
end

M.TensorDataset_class, M.Subset_class = TensorDataset, Subset
return M
