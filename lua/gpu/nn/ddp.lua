-- gpu.nn.ddp: DistributedDataParallel, data-parallel training over gpu.distributed
-- (torch.nn.parallel.DistributedDataParallel).
--
--   gpu.distributed.init()
--   local ddp = nn.DistributedDataParallel(model)     -- rank 1's weights everywhere
--   local opt = gpu.optim.SGD(ddp:parameters(), {lr = 0.1})
--   opt:zero_grad(); nn.cross_entropy(ddp(x_of_this_rank), y):backward(); opt:step()
--
-- The parameters are grouped into buckets of about bucket_mb megabytes, in reverse order
-- of model:parameters() (the order backward reaches them). A post-accumulate hook on each
-- parameter copies its .grad into its bucket's flat buffer; when a bucket is full, and every
-- bucket before it has started, its all-reduce (mean) starts asynchronously, so the
-- communication of the last layers overlaps the backward of the first ones. When backward
-- has filled every .grad (an autograd callback), the buckets not started yet start (a
-- parameter that got no gradient on this rank contributes zeros), every all-reduce is
-- waited for, and each .grad becomes its average over the ranks. The buckets start in the
-- same order on every rank, whatever order the hooks fire in, so the collectives match.

local gpu = require "gpu"
local autograd = require "gpu.autograd"
local options = require "gpu.options"
local module = require "gpu.nn.module"

local raise = options.raise
local dist = gpu.distributed

local M = {}

local DDP = options.declare("nn.DistributedDataParallel", {
  bucket_mb = { type = "number", default = 25, min = 0, min_open = true },
  broadcast_buffers = { type = "boolean", default = true },
  find_unused_parameters = { type = "boolean", default = false },
  device_ids = { unsupported = "one process drives one device: the rank's default device (cuda:local_rank)" },
}, { example = "gpu.distributed.init(); gpu.nn.DistributedDataParallel(gpu.nn.Linear(2, 2), %s)" })

local DistributedDataParallel = module.class("DistributedDataParallel")
M.DistributedDataParallel = DistributedDataParallel

-- Buckets: parameters of one dtype and device, in reverse registration order, each bucket
-- at most bucket_mb (a parameter larger than that is a bucket of its own).
local function make_buckets(params, bucket_bytes)
  local buckets, cur, by_param = {}, nil, {}
  for i = #params, 1, -1 do
    local p = params[i]
    local bytes = p.size * gpu._dtypes[p.dtype].size
    if cur == nil or cur.dtype ~= p.dtype or cur.device ~= p.device or (cur.bytes + bytes > bucket_bytes and #cur.params > 0) then
      cur = { params = {}, offsets = {}, size = 0, bytes = 0, dtype = p.dtype, device = p.device }
      buckets[#buckets + 1] = cur
    end
    cur.params[#cur.params + 1] = p
    cur.offsets[#cur.offsets + 1] = cur.size
    cur.size = cur.size + p.size
    cur.bytes = cur.bytes + bytes
    by_param[p] = { cur, #cur.params }
  end
  for i, b in ipairs(buckets) do b.index = i end
  return buckets, by_param
end

function DistributedDataParallel:init(model, opts)
  local o = DDP:check(opts, 2)
  if not module.is_module(model) then
    options.argerror("nn.DistributedDataParallel", 1, "a module expected, got %s", options.type_name(model))
  end
  if not dist.is_initialized() then
    raise("nn.DistributedDataParallel: gpu.distributed is not initialized (call gpu.distributed.init() first)")
  end
  self:add_module("module", model)
  rawset(self, "module", model)
  rawset(self, "_opts", o)
  -- every rank starts from rank 1's parameters and buffers
  gpu.no_grad(function()
    for _, p in ipairs(model:parameters()) do dist.broadcast(p, 1) end
    for _, e in ipairs(model:named_buffers()) do dist.broadcast(e[2], 1) end
  end)
  local params = model:parameters()
  rawset(self, "_nparams", #params)
  local buckets, by_param = make_buckets(params, o.bucket_mb * 1024 * 1024)
  rawset(self, "_buckets", buckets)
  rawset(self, "_sync", true)
  local state = { ready = {}, started = 0, queued = false }
  rawset(self, "_state", state)
  local hooks = {}
  for _, p in ipairs(params) do
    local where = by_param[p]
    hooks[#hooks + 1] = autograd.register_post_accumulate_grad_hook(p, function(x)
      if not rawget(self, "_sync") then return end
      self:_ready(where[1], where[2], x)
    end)
  end
  rawset(self, "_grad_hooks", hooks)
end

-- Starts buckets in order while the next one is full.
function DistributedDataParallel:_start_ready()
  local st = rawget(self, "_state")
  local buckets = rawget(self, "_buckets")
  while st.started < #buckets do
    local b = buckets[st.started + 1]
    if (st.ready[b] or 0) < #b.params then return end
    st.started = st.started + 1
    if st.started == #buckets then
      -- the last bucket has nothing left to overlap with: the blocking call, which Open MPI
      -- runs faster than a request tested in a loop (doc/API.md, "Faults")
      dist.all_reduce(b.flat, { op = "mean" })
      b.work = nil
    else
      b.work = dist.all_reduce(b.flat, { op = "mean", async = true })
    end
  end
end

local function flat_of(b)
  if b.flat == nil then b.flat = gpu.zeros(b.size, { dtype = b.dtype, device = b.device }) end
  return b.flat
end

-- A parameter's gradient is complete: into its bucket; start what can start.
function DistributedDataParallel:_ready(b, k, p)
  local st = rawget(self, "_state")
  if not st.queued then
    st.queued = true
    autograd.queue_callback(function() self:_finish() end)
  end
  local flat = flat_of(b)
  local off, n = b.offsets[k], b.params[k].size
  flat[{ { off + 1, off + n } }] = p.grad:reshape(n)
  b.seen = b.seen or {}
  if not b.seen[k] then
    b.seen[k] = true
    st.ready[b] = (st.ready[b] or 0) + 1
  end
  self:_start_ready()
end

-- End of backward: start the rest (zeros for parameters without a gradient), wait for
-- all, and give each parameter its averaged gradient.
function DistributedDataParallel:_finish()
  local st = rawget(self, "_state")
  for _, b in ipairs(rawget(self, "_buckets")) do
    local flat = flat_of(b)
    b.seen = b.seen or {}
    for k, p in ipairs(b.params) do
      if not b.seen[k] then
        local off, n = b.offsets[k], p.size
        flat[{ { off + 1, off + n } }] = p.grad and p.grad:reshape(n) or 0
        b.seen[k] = true
        st.ready[b] = (st.ready[b] or 0) + 1
      end
    end
  end
  self:_start_ready()
  for _, b in ipairs(rawget(self, "_buckets")) do
    if b.work then b.work:wait() end
    b.work = nil
    for k, p in ipairs(b.params) do
      local off, n = b.offsets[k], p.size
      p.grad = b.flat[{ { off + 1, off + n } }]:reshape(p.shape):copy()
    end
    b.seen = nil
  end
  st.ready, st.started, st.queued = {}, 0, false
end

local function check_params(self)
  if #self.module:parameters() ~= rawget(self, "_nparams") then
    raise("nn.DistributedDataParallel: the model has parameters made after it was wrapped (a layer built at its "
      .. "first call?): call the model once before wrapping it")
  end
end

function DistributedDataParallel:forward(...)
  local o = rawget(self, "_opts")
  check_params(self)
  if o.broadcast_buffers and self.module.training then
    local bufs = self.module:named_buffers()
    if #bufs > 0 then gpu.no_grad(function() for _, e in ipairs(bufs) do dist.broadcast(e[2], 1) end end) end
  end
  local out = table.pack(self.module(...))
  check_params(self)
  return table.unpack(out, 1, out.n)
end

-- no_sync(fn, ...): fn(...) with the gradients accumulated locally, not averaged (gradient
-- accumulation); the next backward outside no_sync averages the accumulated .grad.
function DistributedDataParallel:no_sync(fn, ...)
  options.value(fn, { type = "callable" }, "DistributedDataParallel:no_sync", 1, "fn")
  rawset(self, "_sync", false)
  local res = table.pack(pcall(fn, ...))
  rawset(self, "_sync", true)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

function DistributedDataParallel:repr()
  return "DistributedDataParallel(" .. tostring(self.module) .. ")"
end

return M
