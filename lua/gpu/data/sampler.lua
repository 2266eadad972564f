-- gpu.data.sampler: torch.utils.data's samplers, the orders in which a DataLoader visits
-- its samples: SequentialSampler, RandomSampler, SubsetRandomSampler,
-- WeightedRandomSampler, and BatchSampler (a sampler's indices in lists of batch_size);
-- gpu.data exports them.
--
--   local s = gpu.data.WeightedRandomSampler({0.1, 0.9}, 100)
--   for xb, yb in gpu.data.DataLoader(x, y, {batch_size = 10, sampler = s}) do ... end
--
-- A sampler draws an epoch's order with indices() (1-based int64 positions on the CPU; a
-- random sampler draws anew on each call), iter() gives them as Lua integers and #s how
-- many an epoch has. DataLoader's sampler option takes any of them (and a
-- DistributedSampler), its batch_sampler option a BatchSampler.
local gpu = require "gpu"
local options = require "gpu.options"
local dataset = require "gpu.data.dataset"

local is_array, argerror, raise, type_name = options.is_array, options.argerror, options.raise, options.type_name
local M = {}

local generator_key = { type = "any", what = "a gpu.random.Generator", check = function(v)
  return type(v) == "userdata" or type(v) == "table", "must be a gpu.random.Generator"
end }

-- count(fname, src): how many samples src holds: src an integer >= 0, an array (its first
-- axis) or a dataset (#ds)
local function count(fname, src)
  if math.type(src) == "integer" then
    if src < 0 then argerror(fname, 1, "the number of samples must be >= 0, got %d", src) end
    return src
  end
  if is_array(src) then
    options.check_array(src, fname, 1, "data")
    if src.ndim == 0 then argerror(fname, 1, "data: the array is 0-d (its first axis holds the samples)") end
    return src.shape[1]
  end
  if type(src) == "table" or type(src) == "userdata" then return dataset.length(fname, 1, src) end
  argerror(fname, 1, "a dataset, an array or a number of samples expected, got %s", type_name(src))
end

-- a list of positive integers (a Lua list or a 1-D integer array) as a Lua list
local function positions(fname, argn, v, what)
  if is_array(v) then
    options.check_array(v, fname, argn, what)
    if v.ndim ~= 1 or (gpu._dtypes[v.dtype].kind ~= "int" and gpu._dtypes[v.dtype].kind ~= "uint") then
      argerror(fname, argn, "%s: a 1-D integer array or a list expected, got %s %s", what, v.dtype,
        options.shape_str(v.shape))
    end
    v = v:totable()
  elseif type(v) ~= "table" then
    argerror(fname, argn, "%s: a list of positions expected, got %s", what, type_name(v))
  end
  local out = {}
  for j, i in ipairs(v) do
    if math.type(i) ~= "integer" or i < 1 then
      argerror(fname, argn, "%s[%d] = %s is not a 1-based position", what, j, type_name(i))
    end
    out[j] = i
  end
  if #out ~= #v then argerror(fname, argn, "%s has holes (a list 1..n expected)", what) end
  return out
end

-- g's method name, or gpu.random's function, with args
local function draw(g, name, ...)
  if g then return g[name](g, ...) end
  return gpu.random[name](...)
end

local CPU = { device = "cpu" }
local function int64(list) return gpu.array(list, { dtype = "int64", device = "cpu" }) end

-- a sampler class: indices() and __len given, iter() and the guards added
local classes = {}
local function sampler_class(name)
  local cls = { __name = name }
  cls.__index = cls
  cls.__len = function(self) return self.num_samples end
  -- iter(): this epoch's indices as Lua integers
  function cls:iter()
    local idx, i = self:indices():totable(), 0
    return function()
      i = i + 1
      return idx[i]
    end
  end
  classes[cls] = true
  return cls
end

-- is_sampler(v): v is one of this file's samplers or a DistributedSampler (known by its
-- metatable's name, gpu.data's own class), BatchSampler aside
local function is_sampler(v)
  local mt = getmetatable(v)
  if classes[mt] then return true end
  return type(mt) == "table" and rawget(mt, "__name") == "DistributedSampler" and type(v.indices) == "function"
end
M.is_sampler = is_sampler

-- ---- SequentialSampler --------------------------------------------------------------------------

local Sequential = sampler_class("SequentialSampler")

-- SequentialSampler(data): 1..n, n the samples of data (a dataset, an array or a count)
function M.SequentialSampler(src)
  local n = count("data.SequentialSampler", src)
  return setmetatable({ n = n, num_samples = n }, Sequential)
end

function Sequential:indices() return gpu.arange(1, self.n + 1, { dtype = "int64", device = "cpu" }) end

-- ---- RandomSampler ------------------------------------------------------------------------------

local Random = sampler_class("RandomSampler")
local RANDOM = options.declare("data.RandomSampler", {
  replacement = { type = "boolean", default = false },
  num_samples = { type = "integer" },
  generator = generator_key,
}, { example = "gpu.data.RandomSampler(4, %s)" })

-- RandomSampler(data [, {replacement = false, num_samples = n, generator =}]): a new random
-- order each epoch: a permutation of 1..n (num_samples > n: permutations one after
-- another, the last cut, as PyTorch), or num_samples draws from 1..n with replacement
function M.RandomSampler(src, opts)
  local fname = "data.RandomSampler"
  local n = count(fname, src)
  local o = RANDOM:check(opts, 2)
  local ns = o.num_samples or n
  if ns < 1 then
    argerror(fname, o.num_samples and 2 or 1, "num_samples should be a positive integer value, but got num_samples=%d", ns)
  end
  if n == 0 then argerror(fname, 1, "the data has no samples to draw num_samples=%d from", ns) end
  return setmetatable({ n = n, num_samples = ns, replacement = o.replacement, generator = o.generator }, Random)
end

function Random:indices()
  local n, ns, g = self.n, self.num_samples, self.generator
  if self.replacement then return draw(g, "randint", 1, n, { ns }, CPU) end
  local parts = {}
  for _ = 1, ns // n do parts[#parts + 1] = draw(g, "permutation", n, CPU) end
  if ns % n > 0 then parts[#parts + 1] = draw(g, "permutation", n, CPU)[{ { 1, ns % n } }] end
  return #parts == 1 and parts[1] or gpu.concatenate(parts)
end

-- ---- SubsetRandomSampler ------------------------------------------------------------------------

local SubsetRandom = sampler_class("SubsetRandomSampler")
local SUBSET = options.declare("data.SubsetRandomSampler", { generator = generator_key },
  { example = "gpu.data.SubsetRandomSampler({1, 3}, %s)" })

-- SubsetRandomSampler(indices [, {generator =}]): the given positions in a new random
-- order each epoch
function M.SubsetRandomSampler(indices, opts)
  local list = positions("data.SubsetRandomSampler", 1, indices, "indices")
  local o = SUBSET:check(opts, 2)
  return setmetatable({ list = list, num_samples = #list, generator = o.generator }, SubsetRandom)
end

function SubsetRandom:indices()
  local n = #self.list
  if n == 0 then return int64({}) end
  return int64(self.list):take(draw(self.generator, "permutation", n, CPU), 1)
end

-- ---- WeightedRandomSampler ----------------------------------------------------------------------

local Weighted = sampler_class("WeightedRandomSampler")
local WEIGHTED = options.declare("data.WeightedRandomSampler", {
  replacement = { type = "boolean", default = true },
  generator = generator_key,
}, { example = "gpu.data.WeightedRandomSampler({1, 2}, 2, %s)" })

-- WeightedRandomSampler(weights, num_samples [, {replacement = true, generator =}]):
-- num_samples positions 1..#weights drawn with probabilities proportional to the weights
-- (gpu.multinomial), anew each epoch
function M.WeightedRandomSampler(weights, ns, opts)
  local fname = "data.WeightedRandomSampler"
  local w
  if is_array(weights) then
    options.check_array(weights, fname, 1, "weights")
    if weights.ndim ~= 1 or weights.dtype == "bool" or weights.dtype:find("complex") then
      argerror(fname, 1, "weights: a 1-D real array or a list of numbers expected, got %s %s", weights.dtype,
        options.shape_str(weights.shape))
    end
    w = weights:astype("float64"):to("cpu")
  elseif type(weights) == "table" then
    for i, v in ipairs(weights) do
      if type(v) ~= "number" then argerror(fname, 1, "weights[%d] must be a number, got %s", i, type_name(v)) end
    end
    if #weights == 0 then argerror(fname, 1, "weights is empty") end
    w = gpu.array(weights, { dtype = "float64", device = "cpu" })
  else
    argerror(fname, 1, "weights: a list of numbers or a 1-D array expected, got %s", type_name(weights))
  end
  if w.size == 0 then argerror(fname, 1, "weights is empty") end
  if not gpu.isfinite(w):all():item() or w:lt(0):any():item() then
    argerror(fname, 1, "weights must be finite and >= 0")
  end
  if w:sum():item() <= 0 then argerror(fname, 1, "weights sum to 0 (no position can be drawn)") end
  if math.type(ns) ~= "integer" or ns < 1 then
    argerror(fname, 2, "num_samples should be a positive integer value, but got num_samples=%s", type_name(ns))
  end
  local o = WEIGHTED:check(opts, 3)
  if not o.replacement and ns > w:gt(0):sum():item() then
    argerror(fname, 2, "num_samples = %d exceeds the %d positions of nonzero weight (draws without replacement)", ns,
      w:gt(0):sum():item())
  end
  return setmetatable({ weights = w, num_samples = ns, replacement = o.replacement, generator = o.generator }, Weighted)
end

function Weighted:indices()
  return gpu.multinomial(self.weights, self.num_samples, self.replacement, { generator = self.generator })
end

for cls in pairs(classes) do options.guard_methods(cls, cls.__name, "sampler", function(v) return getmetatable(v) == cls end) end

-- ---- BatchSampler -------------------------------------------------------------------------------

local Batch, is_batch_sampler = options.class("BatchSampler", "batch_sampler")
M.is_batch_sampler = is_batch_sampler
Batch.__len = function(self)
  local n = self.sampler and #self.sampler or #self.list
  return self.drop_last and n // self.batch_size or (n + self.batch_size - 1) // self.batch_size
end

-- BatchSampler(sampler, batch_size, drop_last): a sampler's indices (a sampler of
-- gpu.data, or a list of positions) in lists of batch_size, the last shorter or left out
-- with drop_last
function M.BatchSampler(sampler, bs, drop_last)
  local fname = "data.BatchSampler"
  local list
  if not is_sampler(sampler) then
    if type(sampler) ~= "table" and not is_array(sampler) then
      argerror(fname, 1, "sampler: a gpu.data sampler or a list of positions expected, got %s", type_name(sampler))
    end
    list = positions(fname, 1, sampler, "sampler")
    sampler = nil
  end
  if math.type(bs) ~= "integer" or bs < 1 then
    argerror(fname, 2, "batch_size should be a positive integer value, but got batch_size=%s", type_name(bs))
  end
  if type(drop_last) ~= "boolean" then
    argerror(fname, 3, "drop_last should be a boolean value, but got drop_last=%s", type_name(drop_last))
  end
  return setmetatable({ sampler = sampler, list = list, batch_size = bs, drop_last = drop_last }, Batch)
end

-- iter(): an iterator of this epoch's batches, each a list of positions
function Batch:iter()
  local idx = self.sampler and self.sampler:indices():totable() or self.list
  local bs, n = self.batch_size, #idx
  local last = self.drop_last and n - n % bs or n
  local s = 1
  return function()
    if s > last then return nil end
    local b = {}
    for i = s, math.min(last, s + bs - 1) do b[#b + 1] = idx[i] end
    s = s + bs
    return b
  end
end

-- batches(): this epoch's batches as a list
function Batch:batches()
  local out = {}
  for b in self:iter() do out[#out + 1] = b end
  return out
end

M.count = count
return M
