-- gpu.data: mini-batches and data sets.
--
--   for xb, yb in gpu.data.batches(x, y, 128, {shuffle = true}) do ... end
--   local loader = gpu.data.DataLoader(x, y, {batch_size = 128, shuffle = true, device = "cuda"})
--   for xb, yb in loader:iter() do ... end          -- or: for xb, yb in loader() do
--   local ds = gpu.data.fashion_mnist{scale = true} -- ds.train.x (60000, 28, 28) float32 in [0, 1]
--
-- Batches are gathered with take along the first axis (a shuffled epoch is one
-- permutation from gpu.random) and moved to 'device' when one is given.

local gpu = require "gpu"

local data = {}

local function is_array(v) return type(v) == "userdata" and v.shape ~= nil end

-- batches(x, y, batch_size [, {shuffle = false, drop_last = false, device =}]): an iterator
-- of (xb, yb); y may be nil.
function data.batches(x, y, bs, opts)
  if not is_array(x) then error("batches: x must be a gpu.array, got " .. type(x), 2) end
  if y ~= nil and not is_array(y) then error("batches: y must be a gpu.array or nil, got " .. type(y), 2) end
  if math.type(bs) ~= "integer" or bs < 1 then error("batches: batch_size must be a positive integer", 2) end
  if x.ndim == 0 then error("batches: x must have a first axis (got a 0-d array)", 2) end
  local n = x.shape[1]
  if y ~= nil and (y.ndim == 0 or y.shape[1] ~= n) then
    error(("batches: x has %d samples but y has %d"):format(n, y.ndim > 0 and y.shape[1] or 0), 2)
  end
  opts = opts or {}
  -- the shuffle's indices live where x does (take needs them there), a copy where y does
  local order = opts.shuffle and gpu.random.permutation(n, { device = x.device }) or nil
  local order_y = order and y ~= nil and y.device ~= x.device and order:to(y.device) or order
  local last = opts.drop_last and n - n % bs or n
  local device = opts.device
  local s = 1
  return function()
    if s > last then return nil end
    local e = math.min(last, s + bs - 1)
    local xb, yb
    if order then
      xb = x:take(order[{ { s, e } }], 1)
      yb = y and y:take(order_y[{ { s, e } }], 1)
    else
      xb = x[{ { s, e } }]
      yb = y and y[{ { s, e } }]
    end
    s = e + 1
    if device then
      xb = xb:to(device)
      yb = yb and yb:to(device)
    end
    return xb, yb
  end
end

-- DataLoader(x, y, {batch_size = 32, shuffle = false, drop_last = false, device =}):
-- each iter() (or call) is one epoch, reshuffled.
local DataLoader = {}
DataLoader.__index = DataLoader
DataLoader.__call = function(self) return self:iter() end
DataLoader.__len = function(self)
  local n = self.x.shape[1]
  return self.drop_last and n // self.batch_size or (n + self.batch_size - 1) // self.batch_size
end
function data.DataLoader(x, y, opts)
  opts = opts or {}
  local self = setmetatable({ x = x, y = y, batch_size = opts.batch_size or 32, shuffle = opts.shuffle or false,
                              drop_last = opts.drop_last or false, device = opts.device }, DataLoader)
  data.batches(x, y, self.batch_size)      -- checks the arguments now
  return self
end
function DataLoader:iter()
  return data.batches(self.x, self.y, self.batch_size,
                      { shuffle = self.shuffle, drop_last = self.drop_last, device = self.device })
end

-- ---- Fashion-MNIST --------------------------------------------------------------------------

data.fashion_mnist_classes = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                               "Sneaker", "Bag", "Ankle boot" }
data.fashion_mnist_path = "/usr/share/datasets/fashion-mnist"

local function find(dir, stem)
  for _, name in ipairs { stem .. ".gz", stem } do
    local p = dir .. "/" .. name
    local f = io.open(p, "rb")
    if f then f:close() return p end
  end
  error(("fashion_mnist: %s(.gz) not found in %s (install Debian's dataset-fashion-mnist, or pass {path =})")
    :format(stem, dir), 3)
end

-- fashion_mnist([{path =, scale = false, flatten = false, device =, limit =}]) ->
-- {train = {x =, y =}, test = {x =, y =}, classes = {...}}: images uint8 (N, 28, 28)
-- (float32 in [0, 1] with scale = true; (N, 784) with flatten = true), labels int64 1..10.
function data.fashion_mnist(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("fashion_mnist: an options table expected, got " .. type(opts), 2) end
  local dir = opts.path or os.getenv("FASHION_MNIST") or data.fashion_mnist_path
  local function part(img, lab)
    local x = gpu.load_idx(find(dir, img))
    local y = gpu.load_idx(find(dir, lab))
    if x.ndim ~= 3 or y.ndim ~= 1 or x.shape[1] ~= y.shape[1] then
      error(("fashion_mnist: %s has shape (%s) and %s (%s); expected (N, 28, 28) and (N)")
        :format(img, table.concat(x.shape, ","), lab, table.concat(y.shape, ",")), 3)
    end
    if opts.limit and opts.limit < x.shape[1] then
      x, y = x[{ { 1, opts.limit } }], y[{ { 1, opts.limit } }]
    end
    if y:max():item() > 9 then error("fashion_mnist: " .. lab .. " holds a label above 9", 3) end
    y = y:astype("int64") + 1
    if opts.scale then x = x:astype("float32") / 255 end
    if opts.flatten then x = x:reshape(x.shape[1], -1) end
    if opts.device then x, y = x:to(opts.device), y:to(opts.device) end
    return { x = x, y = y }
  end
  return {
    train = part("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    test = part("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
    classes = data.fashion_mnist_classes,
  }
end

data.load_idx = gpu.load_idx

return data
