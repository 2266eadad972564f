-- spec/data_workers_spec.lua — DataLoader{num_workers = k}: batches made by forked worker
-- processes, as PyTorch's: the same batches as num_workers = 0, get_worker_info,
-- worker_init_fn, persistent workers, seeds, errors and deaths of workers, and workers
-- reaped however the loop ends.
local h = require "spec.helper"
local gpu = h.gpu
local data = gpu.data
local proc = gpu._worker

-- a process that has been reaped has no /proc entry (a zombie still has one)
local function gone(pid)
  local f = io.open("/proc/" .. pid .. "/stat")
  if f then f:close() end
  return f == nil
end

-- a map-style dataset of n samples {image, label, pid of the process that read it}
local function squares(n, extra)
  local ds = { n = n }
  function ds:get(i)
    if extra then extra(i) end
    return { gpu.full({ 2, 3 }, i * i, { dtype = "float32", device = "cpu" }), i, proc.getpid() }
  end
  return setmetatable(ds, { __len = function(self) return self.n end })
end

-- collate: the images stacked, the labels as an int64 array, the readers' pids as a list
local function collate(samples)
  local xs, ys, pids = {}, {}, {}
  for j, s in ipairs(samples) do xs[j], ys[j], pids[j] = s[1], s[2], s[3] end
  return { gpu.stack(xs, 1), gpu.array(ys, { dtype = "int64", device = "cpu" }), pids }
end

local function epoch_of(loader)
  local out, pids = {}, {}
  for xb, yb, p in loader:iter() do
    out[#out + 1] = { xb:totable(), yb:totable() }
    for _, pid in ipairs(p) do pids[pid] = true end
  end
  return out, pids
end

describe("DataLoader with workers", function()
  it("gives the batches of num_workers = 0, in the same order, for a shuffled dataset", function()
    local ds = squares(23)
    local opts = { batch_size = 4, shuffle = true, collate_fn = collate }
    gpu.random.seed(7)
    local want = epoch_of(data.DataLoader(ds, opts))
    opts.num_workers = 2
    gpu.random.seed(7)
    local got, pids = epoch_of(data.DataLoader(ds, opts))
    assert.are.same(want, got)
    assert.are.equal(6, #got)
    local me, n = proc.getpid(), 0
    for pid in pairs(pids) do
      n = n + 1
      assert.are_not.equal(me, pid)
      assert.is_true(gone(pid))          -- the epoch's end reaped the worker
    end
    assert.are.equal(2, n)
  end)

  it("runs default_collate, get_batch and a sampler's order in the workers too", function()
    local x = gpu.arange(20, { dtype = "float32", device = "cpu" }):reshape(10, 2)
    local y = gpu.arange(1, 11, { dtype = "int64", device = "cpu" })
    local ds = data.TensorDataset(x, y)
    local s = data.SubsetRandomSampler({ 3, 1, 9, 4, 7 })
    gpu.random.seed(3)
    local want = {}
    for xb, yb in data.DataLoader(ds, { batch_size = 2, sampler = s }):iter() do want[#want + 1] = { xb:totable(), yb:totable() } end
    gpu.random.seed(3)
    local got = {}
    for xb, yb in data.DataLoader(ds, { batch_size = 2, sampler = s, num_workers = 2, prefetch_factor = 1 }):iter() do
      got[#got + 1] = { xb:totable(), yb:totable() }
    end
    assert.are.same(want, got)
    -- a plain list of samples, default_collate, and the loop over the loader itself
    local list = {}
    for i = 1, 7 do list[i] = { value = i * 0.5, flag = i % 2 == 0 } end
    local seen = {}
    for b in data.DataLoader(list, { batch_size = 3, num_workers = 3 }) do
      assert.are.equal("float64", b.value.dtype)
      assert.are.equal("bool", b.flag.dtype)
      seen[#seen + 1] = b.value:totable()
    end
    assert.are.same({ { 0.5, 1, 1.5 }, { 2, 2.5, 3 }, { 3.5 } }, seen)
  end)

  it("gives strings, numbers and nested tables back as the collate_fn made them", function()
    local ds = setmetatable({}, { __len = function() return 5 end })
    function ds.get(_, i) return i end
    local loader = data.DataLoader(ds, { batch_size = 2, num_workers = 2, collate_fn = function(s)
      return { { text = "batch of " .. #s .. "\0\255", n = s[1], half = s[1] / 2, deep = { { ok = true } } } }
    end })
    local got = {}
    for b in loader:iter() do got[#got + 1] = b end
    assert.are.same({ text = "batch of 2\0\255", n = 1, half = 0.5, deep = { { ok = true } } }, got[1])
    assert.are.equal("integer", math.type(got[3].n))
    assert.are.equal(5, got[3].n)
  end)

  it("answers get_worker_info in the workers and nil here", function()
    assert.is_nil(data.get_worker_info())
    local ds = setmetatable({}, { __len = function() return 6 end })
    function ds.get(self, i)
      local wi = data.get_worker_info()
      return { i, wi.id, wi.num_workers, wi.seed, wi.dataset == self and 1 or 0 }
    end
    local loader = data.DataLoader(ds, { batch_size = 1, num_workers = 3, collate_fn = function(s) return s[1] end })
    local seeds = {}
    for i, id, k, seed, same in loader:iter() do
      assert.are.equal((i - 1) % 3 + 1, id)    -- batch r goes to worker (r - 1) % k + 1
      assert.are.equal(3, k)
      assert.are.equal(1, same)
      seeds[id] = seed
    end
    assert.are.equal(seeds[1] + 1, seeds[2])   -- base_seed + id
    assert.are.equal(seeds[1] + 2, seeds[3])
    assert.is_nil(data.get_worker_info())
  end)

  it("reseeds each worker: random transforms differ between workers, and a run repeats", function()
    local ds = setmetatable({}, { __len = function() return 4 end })
    function ds.get() return gpu.random.rand(3, { device = "cpu" }) end
    local function run()
      local out = {}
      for b in data.DataLoader(ds, { batch_size = 1, num_workers = 2 }):iter() do out[#out + 1] = b:totable() end
      return out
    end
    gpu.random.seed(11)
    local a = run()
    gpu.random.seed(11)
    local b = run()
    assert.are.same(a, b)
    assert.are_not.same(a[1], a[2])          -- workers 1 and 2: different streams
  end)

  it("calls worker_init_fn once in each worker, with ids 1..k", function()
    local ds = setmetatable({}, { __len = function() return 8 end })
    local calls = 0
    function ds.get(_, i) return { i, calls, data.get_worker_info().id } end
    local ids = {}
    local loader = data.DataLoader(ds, { batch_size = 2, num_workers = 2, collate_fn = function(s) return { s } end,
      worker_init_fn = function(id)
        calls = calls + 1
        assert(data.get_worker_info().id == id)
      end })
    for b in loader:iter() do
      for _, s in ipairs(b) do
        assert.are.equal(1, s[2])           -- the worker's own count: once, before any item
        ids[s[3]] = true
      end
    end
    assert.are.same({ true, true }, ids)
    assert.are.equal(0, calls)                -- never in the main process
  end)

  it("keeps persistent workers over epochs, and starts new ones per epoch otherwise", function()
    local ds = squares(6)
    local loader = data.DataLoader(ds, { batch_size = 2, num_workers = 2, persistent_workers = true, collate_fn = collate })
    local _, p1 = epoch_of(loader)
    local _, p2 = epoch_of(loader)
    assert.are.same(p1, p2)
    for pid in pairs(p1) do assert.is_false(gone(pid)) end
    -- a broken epoch leaves batches in flight: the next epoch is still whole
    for _ in loader:iter() do break end
    local b3 = epoch_of(loader)
    assert.are.equal(3, #b3)
    assert.are.same({ { 1, 2 } }, { b3[1][2] })
    -- one pool, one epoch at a time: an older loop that goes on is told why it cannot
    local older = loader:iter()
    older()
    local newer = loader:iter()
    assert.is_truthy(newer())
    local ok, err = pcall(older)
    assert.is_false(ok)
    assert.matches("data.DataLoader: this epoch's persistent workers went to a newer epoch", err, 1, true)
    assert.are.equal(3, #epoch_of(loader))
    older, newer = nil, nil
    loader._pool = nil                        -- the workers' pool is collected: they are reaped
    collectgarbage()
    collectgarbage()
    for pid in pairs(p1) do assert.is_true(gone(pid)) end
    local plain = data.DataLoader(ds, { batch_size = 2, num_workers = 2, collate_fn = collate })
    local _, q1 = epoch_of(plain)
    local _, q2 = epoch_of(plain)
    for pid in pairs(q1) do assert.is_nil(q2[pid]) end
  end)

  it("re-raises an error of the dataset naming the worker, the batch and the sample", function()
    local ds = squares(10, function(i) if i == 7 then error("no picture for 7") end end)
    local loader = data.DataLoader(ds, { batch_size = 2, num_workers = 2, collate_fn = collate })
    local ok, err = pcall(function() for _ in loader:iter() do end end)
    assert.is_false(ok)
    assert.matches("data.DataLoader: worker 2, batch 4, sample 7: ", err, 1, true)
    assert.matches("no picture for 7", err, 1, true)
    -- a batch that is not data: the worker says what it holds
    local bad = data.DataLoader(squares(4), { batch_size = 2, num_workers = 1, collate_fn = function()
      return { f = print }
    end })
    ok, err = pcall(function() for _ in bad:iter() do end end)
    assert.is_false(ok)
    assert.matches("data.DataLoader: worker 1, batch 1: ", err, 1, true)
    assert.matches("the batch.f is a function", err, 1, true)
    -- an error in worker_init_fn comes with the first batch that worker owes
    local init = data.DataLoader(squares(4), { batch_size = 2, num_workers = 2, collate_fn = collate,
      worker_init_fn = function(id) if id == 2 then error("cannot open the shard") end end })
    ok, err = pcall(function() for _ in init:iter() do end end)
    assert.is_false(ok)
    assert.matches("worker 2, batch 2, in worker_init_fn: ", err, 1, true)
    assert.matches("cannot open the shard", err, 1, true)
  end)

  it("says a worker died, never hangs, when one exits or is killed", function()
    local ds = squares(10, function(i) if i == 5 then proc.exit(3) end end)
    local loader = data.DataLoader(ds, { batch_size = 2, num_workers = 2, collate_fn = collate })
    local ok, err = pcall(function() for _ in loader:iter() do end end)
    assert.is_false(ok)
    assert.matches("data%.DataLoader: worker 1 %(pid %d+%) exited unexpectedly with status 3 while making batch 3", err)
    local killer = squares(6, function(i) if i == 3 then proc.kill(proc.getpid(), "KILL") end end)
    ok, err = pcall(function()
      for _ in data.DataLoader(killer, { batch_size = 1, num_workers = 2, collate_fn = collate }):iter() do end
    end)
    assert.is_false(ok)
    assert.matches("data%.DataLoader: worker 1 %(pid %d+%) was killed by signal 9 %(.-%) while making batch 3", err)
  end)

  it("times out on a worker slower than timeout", function()
    local ds = squares(4, function(i)
      if i == 2 then local t = os.time() + 3; while os.time() < t do end end
    end)
    local loader = data.DataLoader(ds, { batch_size = 1, num_workers = 2, collate_fn = collate, timeout = 0.5 })
    local t0 = os.time()
    local ok, err = pcall(function() for _ in loader:iter() do end end)
    assert.is_false(ok)
    assert.matches("data.DataLoader: timed out after 0.5 s waiting for batch 2 from worker 2", err, 1, true)
    assert.is_true(os.time() - t0 <= 2)
  end)

  it("reaps the workers when the loop is left by break or an error, or the iterator is collected", function()
    local ds = squares(40)
    local pids = {}
    local loader = data.DataLoader(ds, { batch_size = 2, num_workers = 2, collate_fn = collate })
    for _, _, p in loader:iter() do
      for _, pid in ipairs(p) do pids[pid] = true end
      break
    end
    for pid in pairs(pids) do assert.is_true(gone(pid)) end
    pids = {}
    local ok = pcall(function()
      for _, _, p in loader:iter() do
        for _, pid in ipairs(p) do pids[pid] = true end
        error("the loop's own error")
      end
    end)
    assert.is_false(ok)
    for pid in pairs(pids) do assert.is_true(gone(pid)) end
    pids = {}
    do
      local it = loader:iter()
      local _, _, p = it()
      for _, pid in ipairs(p) do pids[pid] = true end
    end
    collectgarbage()
    collectgarbage()
    for pid in pairs(pids) do assert.is_true(gone(pid)) end
  end)

  it("runs an IterableDataset in each worker, as PyTorch (shard it with get_worker_info)", function()
    local ds = data.IterableDataset(function()
      local wi = data.get_worker_info()
      local id, k = wi and wi.id or 1, wi and wi.num_workers or 1
      local i = id - k
      return function()
        i = i + k
        if i <= 7 then return i end
      end
    end)
    local got = {}
    for b in data.DataLoader(ds, { batch_size = 2, num_workers = 2 }):iter() do got[#got + 1] = b:totable() end
    -- worker 1 makes {1, 3}, {5, 7}; worker 2 {2, 4}, {6}; the batches come in turn
    assert.are.same({ { 1, 3 }, { 2, 4 }, { 5, 7 }, { 6 } }, got)
  end)

  it("accepts the worker options over arrays, making the batches here", function()
    local x = gpu.arange(12, { device = "cpu" }):reshape(6, 2)
    local n = 0
    for xb in data.DataLoader(x, nil, { batch_size = 4, num_workers = 2, pin_memory = true, timeout = 1 }) do
      n = n + xb.shape[1]
    end
    assert.are.equal(6, n)
  end)

  it("refuses misused worker options, naming data.DataLoader and the fault", function()
    local ds = squares(4)
    local function fails(opts, pattern)
      local ok, err = pcall(data.DataLoader, ds, opts)
      assert.is_false(ok)
      assert.matches("data.DataLoader", err, 1, true)
      assert.matches(pattern, err, 1, true)
    end
    fails({ num_workers = -1 }, "num_workers")
    fails({ num_workers = 1.5 }, "num_workers")
    fails({ prefetch_factor = 2 }, "prefetch_factor option could only be specified in multiprocessing")
    fails({ num_workers = 2, prefetch_factor = 0 }, "prefetch_factor")
    fails({ persistent_workers = true }, "persistent_workers option needs num_workers > 0")
    fails({ num_workers = 1, timeout = -1 }, "timeout")
    fails({ num_workers = 1, worker_init_fn = 3 }, "worker_init_fn")
    assert.is_truthy(data.DataLoader(ds, { pin_memory = true }))
  end)
end)
