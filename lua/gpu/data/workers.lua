-- gpu.data.workers: the worker processes of DataLoader(dataset, {num_workers = k}), as
-- PyTorch's multi-process loading: k processes forked from this one (gpu._worker,
-- src/lua/lworker.c), each given batches of positions drawn here (the sampler and the
-- shuffle stay in the main process) and answering with the collated batch.
--
-- A worker is a copy of this process at the fork: it sees the dataset, the collate_fn and
-- worker_init_fn as they were then. It makes cpu arrays only, on one thread (fork keeps
-- neither a GPU context nor OpenMP's pool usable), reseeds gpu.random and math.random with
-- base_seed + id (the base seed drawn here when the workers start, so a run is the same
-- for the same gpu.random.manual_seed) and runs worker_init_fn(id), ids 1..k. A batch
-- travels as the bytes gpu.save would write for it (gpu.serialization.dumps: arrays as
-- dtype, shape and bytes, numbers, strings, booleans and tables of them; never code), over
-- one socket per worker; the main process rebuilds it and moves it to the loader's device.
--
-- Batch r goes to worker (r - 1) % k + 1 (the live ones in turn, for an IterableDataset),
-- at most k * prefetch_factor ahead of the loop, and comes back in order. The workers of
-- an epoch stop when it ends, when its loop is left (the iterator's closing value, or its
-- collection) or at the first error; persistent workers stay for the loader's next epoch.
local gpu = require "gpu"
local options = require "gpu.options"
local dataset = require "gpu.data.dataset"
local serialization = require "gpu.serialization"

local raise = options.raise
local proc = gpu._worker
local FNAME = "data.DataLoader"

local M = {}

-- get_worker_info(): in a worker, {id =, num_workers =, seed =, dataset =} (dataset: the
-- worker's copy); nil in the main process. Kept in gpu._worker, which there is one of per
-- Lua state however often this file is loaded.
function M.get_worker_info() return proc.info end

-- ---- the worker's side -----------------------------------------------------------------

-- The reply to one request msg: "B" and the batch's bytes, "D" (an IterableDataset's
-- stream has ended) or "E" and where, a newline and the error's message.
local function answer(loader, msg, state)
  local kind, no, rest = msg:match("^(%u) (%d+) ?(.*)$")
  local at = {}
  local ok, res = pcall(function()
    local b
    if kind == "M" then
      local idx = {}
      for i in rest:gmatch("%d+") do idx[#idx + 1] = math.tointeger(tonumber(i)) end
      b = dataset.fetch(loader.dataset, idx, loader, at)
    elseif kind == "N" then                     -- rest: the epoch, whose stream this is
      if state.epoch ~= rest then
        state.epoch, state.stream = rest, dataset.iterable_batches(loader.dataset, loader)
      end
      b = state.stream()
      if b == nil then return "D" end
    else
      error("a request the worker does not know: " .. msg:sub(1, 40))
    end
    return "B" .. serialization.dumps(b, FNAME, "the batch")
  end)
  if ok then return res end
  return "E" .. (at.sample and (", sample %d"):format(at.sample) or "") .. "\n" .. tostring(res)
end

local function worker_main(fd, loader, id, k, seed)
  proc.info = { id = id, num_workers = k, seed = seed, dataset = loader.dataset }
  gpu.set_device("cpu")
  gpu.random.seed(seed)
  math.randomseed(seed)
  local init_error
  if loader.worker_init_fn then
    local ok, err = pcall(loader.worker_init_fn, id)
    if not ok then init_error = "E, in worker_init_fn\n" .. tostring(err) end
  end
  local state = {}
  while true do
    local msg = proc.recv(fd)
    if msg == nil then return end               -- the main process closed its end
    if not proc.send(fd, init_error or answer(loader, msg, state)) then return end
  end
end

-- ---- the main process's side -------------------------------------------------------------

-- stop(pool): ends the workers (their sockets closed, so each leaves its loop; one still
-- busy after a moment is killed) and reaps them. Only in the process that started them: a
-- worker inherits the pool and may collect it.
local function stop(pool)
  if pool.stopped or proc.getpid() ~= pool.owner then return end
  pool.stopped = true
  for _, fd in ipairs(pool.fds) do proc.close(fd) end
  for _, pid in ipairs(pool.pids) do
    if proc.wait(pid, 1) == nil then
      proc.kill(pid, "KILL")
      proc.wait(pid, true)
    end
  end
end
local Pool = { __gc = stop, __close = stop }

-- start(loader) -> a pool of loader.num_workers workers
local function start(loader)
  local k = loader.num_workers
  local g = loader.generator
  local cpu = { device = "cpu" }
  local base = (g and g:randint(0, 0x7fffffff, 1, cpu) or gpu.random.randint(0, 0x7fffffff, 1, cpu))[1]
  local pool = setmetatable({ k = k, pids = {}, fds = {}, owner = proc.getpid(), pending = {}, base_seed = base },
    Pool)
  for id = 1, k do
    local pid, fd = proc.spawn()
    if pid == nil then
      stop(pool)
      raise("%s: could not start worker %d (%s)", FNAME, id, fd)
    end
    if pid == 0 then
      local ok, err = pcall(worker_main, fd, loader, id, k, base + id)
      if not ok then io.stderr:write(("%s: worker %d: %s\n"):format(FNAME, id, tostring(err))) end
      proc.exit(ok and 0 or 1)
    end
    pool.pids[id], pool.fds[id], pool.pending[id] = pid, fd, 0
  end
  return pool
end

-- The error of worker w whose reply to request 'what' did not come (why: recv's reason).
local function lost(pool, w, what, why, timeout)
  local pid = pool.pids[w]
  local msg
  if why == "timeout" then
    msg = ("timed out after %g s waiting for %s from worker %d"):format(timeout, what, w)
  elseif why == "eof" then
    local how, code, name = proc.wait(pid, 1)
    if how == "signaled" then
      msg = ("worker %d (pid %d) was killed by signal %d (%s) while making %s"):format(w, pid, code, name, what)
    elseif how == "exited" then
      msg = ("worker %d (pid %d) exited unexpectedly with status %d while making %s"):format(w, pid, code, what)
    else
      msg = ("worker %d (pid %d) closed its connection while making %s"):format(w, pid, what)
    end
  else
    msg = ("worker %d (pid %d): %s while waiting for %s"):format(w, pid, why, what)
  end
  stop(pool)
  raise("%s: %s", FNAME, msg)
end

-- The reply of worker w to its oldest request ('what': that request, for messages).
local function receive(pool, w, what, timeout)
  local msg, why = proc.recv(pool.fds[w], timeout)
  if msg == nil then lost(pool, w, what, why, timeout) end
  pool.pending[w] = pool.pending[w] - 1
  return msg
end

-- Replies a loop left behind (persistent workers), read and dropped before a new epoch.
local function drain(pool, timeout)
  for w = 1, pool.k do
    while pool.pending[w] > 0 do receive(pool, w, "a batch of the last epoch", timeout) end
  end
end

-- epoch(loader) -> next_batch, closing: the batches of one epoch over loader.dataset from
-- the loader's workers; closing is a to-be-closed value (and next_batch's state is
-- collected) that stops the epoch's workers or, when persistent, leaves them for the next.
function M.epoch(loader)
  local iterable = loader.iterable
  local positions = not iterable and dataset.index_batches(loader.dataset, loader)
  local pool = loader._pool
  if pool and not pool.stopped then
    local ok, err = pcall(drain, pool, loader.timeout)
    if not ok then
      stop(pool)
      pool = nil
      if not tostring(err):find("^" .. FNAME) then error(err, 0) end
    end
  end
  if pool == nil or pool.stopped then
    pool = start(loader)
    if loader.persistent_workers then loader._pool = pool end
  end
  local k, limit, timeout = pool.k, pool.k * loader.prefetch_factor, loader.timeout
  local device = loader.device and gpu._device_name(loader.device)
  local epoch_no = (loader._epochs or 0) + 1
  loader._epochs = epoch_no
  local queue, head, sent, live, turn, exhausted = {}, 1, 0, k, 0, false
  local active = {}
  for w = 1, k do active[w] = true end
  local st = { closed = false }
  pool.epoch = st                               -- a newer epoch over persistent workers takes them

  local function close()
    if st.closed then return end
    st.closed = true
    if not loader.persistent_workers or pool.stopped then stop(pool) end
  end
  setmetatable(st, { __gc = close })

  -- the next request and its worker, or nil when the epoch has none left
  local function next_request()
    if iterable then
      if live == 0 then return nil end
      repeat turn = turn % k + 1 until active[turn]
      sent = sent + 1
      return turn, ("N %d %d"):format(sent, epoch_no), ("batch %d"):format(sent)
    end
    local idx = positions()
    if idx == nil then return nil end
    sent = sent + 1
    return (sent - 1) % k + 1, ("M %d %s"):format(sent, table.concat(idx, ",")), ("batch %d"):format(sent)
  end

  local function step()
    while true do
      while not exhausted and sent - head + 1 < limit do
        local w, msg, what = next_request()
        if w == nil then exhausted = true break end
        -- a worker that is gone fails this send; its end-of-file is met and told (with the
        -- request it died on) when its oldest reply is read
        proc.send(pool.fds[w], msg)
        pool.pending[w] = pool.pending[w] + 1
        queue[sent] = { w = w, what = what }
      end
      local r = queue[head]
      if r == nil then return nil end
      queue[head] = nil
      head = head + 1
      local reply = receive(pool, r.w, r.what, timeout)
      local tag = reply:sub(1, 1)
      if tag == "B" then
        return dataset.deliver(serialization.loads(reply:sub(2)), device)
      elseif tag == "D" then
        if active[r.w] then active[r.w], live = false, live - 1 end
      else
        local where, text = reply:match("^E([^\n]*)\n(.*)$")
        stop(pool)
        raise("%s: worker %d, %s%s: %s", FNAME, r.w, r.what, where or "", text or reply)
      end
    end
  end

  local function next_batch()
    if st.closed then return nil end
    if pool.epoch ~= st then
      st.closed = true
      raise("%s: this epoch's persistent workers went to a newer epoch of the loader (loader:iter() was called " ..
        "again before this loop ended)", FNAME)
    end
    local res = table.pack(pcall(step))
    if not res[1] then
      close()
      error(res[2], 0)
    end
    if res[2] == nil then close() end
    return table.unpack(res, 2, res.n)
  end
  return next_batch, setmetatable({}, { __close = close })
end

return M
