-- spec/dist_spec.lua — gpu.distributed, nn.DistributedDataParallel, DistributedSampler and
-- fit{distributed = true}. The same file runs in the normal suites (a world of 1, no
-- launcher) and under `mpirun -np 2` / `-np 3` (tools/run-tests.sh, when mpirun is there):
-- every expectation is computed from the rank and the world's size. The last block starts
-- small mpirun jobs of its own (a failing rank, a timeout, the debug check) from a world of 1.
local h = require "spec.helper"
local gpu = h.gpu
local nn, d = gpu.nn, gpu.distributed

local R, W = d.init { timeout = 60 }
local ALL = h.dtypes()
local OPS = { "sum", "prod", "max", "min" }

-- rank r's values for a test: small integers, exact in every dtype; a complex dtype's are
-- {re, im} pairs (im = re % 3 - 1)
local function vals(r, n, dt)
  local t = {}
  for i = 1, n do
    if dt == "bool" then t[i] = (i + r) % 2 == 0 else t[i] = (i * r) % 5 + 1 end
    if gpu._dtypes[dt].kind == "complex" then t[i] = { t[i], t[i] % 3 - 1 } end
  end
  return t
end

-- an array of dtype dt holding vals' values (shape: vals', less the pairs' axis)
local function make(t, dt)
  if gpu._dtypes[dt].kind ~= "complex" then return gpu.array(t, { dtype = dt }) end
  return gpu.view_as_complex(gpu.array(t, { dtype = gpu._dtypes[dt].size == 8 and "float32" or "float64" }))
end

-- x's values as vals writes them
local function values(x)
  if gpu._dtypes[x.dtype].kind == "complex" then return gpu.view_as_real(x):totable() end
  return x:totable()
end

local function reduce_expected(op, n, dt)
  local out = {}
  for i = 1, n do
    local acc
    for r = 1, W do
      local v = vals(r, n, dt)[i]
      if dt == "bool" then
        if acc == nil then acc = v
        elseif op == "sum" or op == "max" then acc = acc or v
        else acc = acc and v end
      elseif acc == nil then acc = v
      elseif type(v) == "table" and op == "sum" then acc = { acc[1] + v[1], acc[2] + v[2] }
      elseif type(v) == "table" then acc = { acc[1] * v[1] - acc[2] * v[2], acc[1] * v[2] + acc[2] * v[1] }
      elseif op == "sum" then acc = acc + v
      elseif op == "prod" then acc = acc * v
      elseif op == "max" then acc = math.max(acc, v)
      else acc = math.min(acc, v) end
    end
    if dt == "uint8" then acc = acc % 256 end
    out[i] = type(acc) == "table" and { acc[1] + 0.0, acc[2] + 0.0 } or acc
  end
  return out
end

describe("gpu.distributed: the world", function()
  it("is initialized by init, with 1-based ranks", function()
    assert.is_true(d.is_initialized())
    assert.equal(R, d.rank())
    assert.equal(W, d.world_size())
    assert.is_true(R >= 1 and R <= W)
    assert.is_true(d.local_rank() >= 1 and d.local_rank() <= d.local_world_size())
    local engine = d.get_backend()
    assert.equal(W > 1 and "mpi" or (os.getenv("OMPI_COMM_WORLD_SIZE") and "mpi" or "local"), engine)
    assert.same({ R, W }, { d.init() })                -- again: the same world
    -- under Open MPI the synchronous calls are blocking ones under the watchdog thread
    assert.equal(engine == "mpi", d.stats().watchdog)
  end)

  it("refuses the nccl backend, unknown options and bad timeouts before anything", function()
    h.fails({ "init", "nccl", "not available" }, d.init, { backend = "nccl" })
    h.fails({ "init", "unknown option 'timout'" }, d.init, { timout = 3 })
    h.fails({ "init", "timeout" }, d.init, { timeout = 0 })
    h.fails({ "init", "timeout" }, d.init, { timeout = 0 / 0 })
  end)
end)

describe("gpu.distributed: collectives", function()
  it("all_reduce: every dtype and op, rank-dependent data, in place", function()
    for _, dt in ipairs(ALL) do
      for _, op in ipairs(OPS) do
        local x = make(vals(R, 5, dt), dt)
        if gpu._dtypes[dt].kind == "complex" and (op == "max" or op == "min") then
          h.fails({ "all_reduce", "op '" .. op .. "' is not defined for " .. dt }, d.all_reduce, x, { op = op })
          assert.same(vals(R, 5, dt), values(x))
        else
          local r = d.all_reduce(x, { op = op })
          assert.equal(x, r)
          local want = reduce_expected(op, 5, dt)
          if dt == "float16" or dt == "bfloat16" then h.assert_close(x:astype("float64"), want, 1e-2)
          else assert.same(want, values(x)) end
        end
      end
    end
  end)

  it("all_reduce: mean on floats, refused on integers", function()
    local x = gpu.array({ R, 2 * R }, { dtype = "float64" })
    d.all_reduce(x, { op = "mean" })
    h.assert_close(x, { (W + 1) / 2, W + 1 }, 1e-12)
    local xi = gpu.array({ R }, { dtype = "int32" })
    h.fails({ "all_reduce", "mean", "float" }, d.all_reduce, xi, { op = "mean" })
    assert.same({ R }, xi:totable())
    h.fails({ "all_reduce", "op", "avg" }, d.all_reduce, xi, { op = "avg" })
  end)

  it("all_reduce: a view with gaps is staged and written back; other elements kept", function()
    local base = gpu.array({ { R, -1 }, { 2 * R, -1 } }, { dtype = "float32" })
    local col = base[{ ":", 1 }]
    d.all_reduce(col)
    local s = W * (W + 1) / 2
    assert.same({ { s, -1 }, { 2 * s, -1 } }, base:totable())
    assert.is_true(d.stats().staged > 0)
  end)

  it("broadcast from every root, every dtype", function()
    for root = 1, W do
      for _, dt in ipairs(ALL) do
        local x = make(vals(R, 4, dt), dt)
        assert.equal(x, d.broadcast(x, root))
        assert.same(values(make(vals(root, 4, dt), dt)), values(x))
      end
    end
  end)

  it("all_gather: a new leading axis in rank order, every dtype", function()
    for _, dt in ipairs(ALL) do
      local x = make({ vals(R, 3, dt), vals(R + 10, 3, dt) }, dt)
      local g = d.all_gather(x)
      assert.same({ W, 2, 3 }, g.shape)
      for r = 1, W do
        assert.same(values(make({ vals(r, 3, dt), vals(r + 10, 3, dt) }, dt)), values(g[r]))
      end
    end
  end)

  it("reduce_scatter: rank r gets the reduction of every rank's x[r]", function()
    local x = gpu.zeros(W, 2, { dtype = "int64" })
    for r = 1, W do x[r] = gpu.array({ r * R, R }, { dtype = "int64" }) end
    local y = d.reduce_scatter(x)
    local s = W * (W + 1) // 2
    assert.same({ R * s, s }, y:totable())
    local m = d.reduce_scatter(x:astype("float32"), { op = "max" })
    assert.same({ R * W, W }, m:totable())
    h.fails({ "reduce_scatter", "one part per rank" }, d.reduce_scatter, gpu.zeros(W + 1, 2))
  end)

  it("gather to a root and scatter from it", function()
    for _, root in ipairs { 1, W } do
      local g = d.gather(gpu.array({ R, -R }, { dtype = "int32" }), root)
      if R == root then
        local want = {}
        for r = 1, W do want[r] = { r, -r } end
        assert.same(want, g:totable())
      else
        assert.is_nil(g)
      end
      local out = gpu.zeros(2, { dtype = "float64" })
      local parts = R == root and gpu.arange(2 * W, { dtype = "float64" }):reshape(W, 2) or nil
      assert.equal(out, d.scatter(out, parts, root))
      assert.same({ 2 * (R - 1), 2 * (R - 1) + 1 }, out:totable())
    end
    -- a collective: every rank calls it, every rank raises
    h.fails({ "scatter", "parts must be float32" }, d.scatter, gpu.zeros(2), R == 1 and gpu.zeros(W, 3) or nil, 1)
  end)

  it("send and recv around a ring (a world of 1 refuses)", function()
    if W == 1 then
      h.fails({ "send", "dst 1 is this rank itself" }, d.send, gpu.zeros(2), 1)
      h.fails({ "recv", "src", "out of range 1..1" }, d.recv, gpu.zeros(2), 2)
      return
    end
    local to, from = R % W + 1, (R - 2) % W + 1
    local got = gpu.zeros(3, { dtype = "int64" })
    local rq = d.recv(got, from, { async = true, tag = 5 })
    d.send(gpu.array({ R, R, R }, { dtype = "int64" }), to, { tag = 5 })
    rq:wait()
    assert.same({ from, from, from }, got:totable())
  end)

  it("async handles: wait, is_completed, the result after wait", function()
    local x = gpu.full({ 1000 }, R, { dtype = "float64" })
    local w = d.all_reduce(x, { async = true })
    assert.is_truthy(tostring(w):find("gpu.distributed.Work(all_reduce", 1, true))
    assert.is_true(w:wait())
    assert.is_true(w:is_completed())
    assert.equal(W * (W + 1) / 2, x[1000])
    local g, wg = d.all_gather(gpu.array({ R }), { async = true })
    wg:wait()
    assert.same({ W, 1 }, g.shape)
    d.barrier()
    d.barrier({ async = true }):wait()
  end)

  it("async handles hold their arrays: a close while the operation flies frees nothing under it", function()
    local n = 1 << 18                                   -- 1 MB of float32, from the caching allocator
    for _, staged in ipairs { false, true } do
      local x = gpu.full({ n }, R)
      local arg = staged and x:reshape(n / 2, 2)[{ ":", 1 }] or x    -- a view with gaps is staged
      local w = d.all_reduce(arg, { async = true })
      arg:close()
      if not x:is_closed() then x:close() end
      local others = {}
      for i = 1, 4 do others[i] = gpu.full({ n }, 7 + i) end   -- would reuse the freed block
      local ok, err = pcall(w.wait, w)
      if not ok then assert.is_truthy(tostring(err):find("array is closed", 1, true), tostring(err)) end
      for i = 1, 4 do
        assert.equal(7 + i, others[i]:min():item())
        assert.equal(7 + i, others[i]:max():item())
      end
    end
  end)

  it("refuses bad roots, ranks, ops and arguments on the calling rank, leaving them unchanged", function()
    local x = gpu.array({ 1, 2 })
    h.fails({ "bad argument #2 to 'gpu.distributed.broadcast'", "root 0 out of range 1.." .. W }, d.broadcast, x, 0)
    h.fails({ "broadcast", "root " .. (W + 1) .. " out of range" }, d.broadcast, x, W + 1)
    h.fails({ "gather", "root" }, d.gather, x, 1.5)
    h.fails({ "all_reduce", "op", "sum" }, d.all_reduce, x, { op = "add" })
    h.fails({ "all_reduce", "gpu.array expected" }, d.all_reduce, { 1, 2 })
    h.fails({ "all_reduce", "unknown option 'asynk'" }, d.all_reduce, x, { asynk = true })
    h.fails({ "send", "tag" }, d.send, x, 1, { tag = -1 })
    local closed = gpu.zeros(2); closed:close()
    h.fails({ "all_reduce", "closed" }, d.all_reduce, closed)
    local ro = gpu.ones(1):expand(3)
    h.fails({ "all_reduce" }, d.all_reduce, ro)
    assert.same({ 1, 2 }, x:totable())
    assert.same({ 1, 1, 1 }, ro:totable())
  end)
end)

-- Every rank describes its collective and the ranks compare the descriptions before any data
-- moves: a disagreement raises the same fault on every rank, leaves the arrays as they were,
-- and the next collective works. In a world of 1 there is nothing to disagree with: only
-- the collective afterwards runs.
describe("gpu.distributed: ranks that disagree", function()
  local function then_ok()
    local x = gpu.full({ 3 }, R, { dtype = "float64" })
    d.all_reduce(x)
    local s = W * (W + 1) / 2
    assert.same({ s, s, s }, x:totable())
  end
  local many = W > 1

  it("broadcast of different shapes raises on every rank, at the call when async, receivers untouched", function()
    if many then
      local x = R == 1 and gpu.full({ 2 }, 7) or gpu.zeros(6)
      local want = x:totable()
      h.fails({ "bad argument #1 to 'gpu.distributed.broadcast' (rank 2 has shape (6,), rank 1 has (2,))" },
        d.broadcast, x, 1)
      assert.same(want, x:totable())
      h.fails({ "broadcast", "rank 2 has shape (6,), rank 1 has (2,)" }, d.broadcast, x, 1, { async = true })
      assert.same(want, x:totable())
    end
    local y = gpu.full({ 2 }, R)
    d.broadcast(y, W, { async = true }):wait()
    assert.same({ W, W }, y:totable())
    then_ok()
  end)

  it("scatter into different shapes, and a root's bad parts, raise on every rank", function()
    if many then
      local out = gpu.full({ R == 1 and 2 or 3 }, -1)
      local parts = R == 1 and gpu.ones(W, 2) or nil
      h.fails({ "scatter", "rank 2 has shape (3,), rank 1 has (2,)" }, d.scatter, out, parts, 1)
      assert.same(R == 1 and { -1, -1 } or { -1, -1, -1 }, out:totable())
    end
    local out = gpu.full({ 2 }, -1)
    local parts = R == W and gpu.ones(W, 3) or nil
    local err = h.fails({ "scatter", "parts must be float32 (" .. W .. ",2), got float32 (" .. W .. ",3)" },
      d.scatter, out, parts, W)
    if R ~= W then assert.is_truthy(err:find("rank " .. W .. " raised in this call", 1, true), err) end
    assert.same({ -1, -1 }, out:totable())
    then_ok()
  end)

  it("a different root on each rank raises instead of returning local values", function()
    if many then
      local x = gpu.full({ 2 }, R)
      h.fails({ "bad argument #2 to 'gpu.distributed.broadcast' (rank 2 has root 2, rank 1 has root 1)" },
        d.broadcast, x, R)
      assert.same({ R, R }, x:totable())
      h.fails({ "gather", "rank 2 has root 2, rank 1 has root 1" }, d.gather, x, R)
      local out = gpu.zeros(2)
      h.fails({ "bad argument #3 to 'gpu.distributed.scatter' (rank 2 has root 2, rank 1 has root 1)" },
        d.scatter, out, gpu.ones(W, 2), R)
      assert.same({ 0, 0 }, out:totable())
    end
    then_ok()
  end)

  it("all_reduce, all_gather, reduce_scatter and gather of different shapes, dtypes or ops raise on every rank", function()
    if many then
      local x = gpu.full({ 1 + R }, R)
      local want = x:totable()
      h.fails({ "bad argument #1 to 'gpu.distributed.all_reduce' (rank 2 has shape (3,), rank 1 has (2,))" },
        d.all_reduce, x)
      h.fails({ "all_reduce", "rank 2 has shape (3,), rank 1 has (2,)" }, d.all_reduce, x, { async = true })
      assert.same(want, x:totable())
      h.fails({ "all_gather", "rank 2 has shape (3,), rank 1 has (2,)" }, d.all_gather, x)
      h.fails({ "gather", "rank 2 has shape (3,), rank 1 has (2,)" }, d.gather, x, 1)
      local y = gpu.full({ 2 }, R, { dtype = R == 1 and "float32" or "float64" })
      h.fails({ "bad argument #1 to 'gpu.distributed.all_reduce' (rank 2 has float64, rank 1 has float32)" },
        d.all_reduce, y)
      assert.same({ R, R }, y:totable())
      local z = gpu.full({ 2 }, R)
      h.fails({ "bad argument #2 to 'gpu.distributed.all_reduce' (rank 2 has op 'max', rank 1 has op 'sum')" },
        d.all_reduce, z, { op = R == 1 and "sum" or "max" })
      h.fails({ "all_reduce", "rank 2 has op 'mean', rank 1 has op 'sum'" }, d.all_reduce, z,
        { op = R == 1 and "sum" or "mean" })
      assert.same({ R, R }, z:totable())
      local p = gpu.ones(W, 2, { dtype = R == 1 and "int32" or "int64" })
      h.fails({ "reduce_scatter", "rank 2 has int64, rank 1 has int32" }, d.reduce_scatter, p)
      h.fails({ "reduce_scatter", "rank 2 has op 'min', rank 1 has op 'sum'" }, d.reduce_scatter, gpu.ones(W, 2),
        { op = R == 1 and "sum" or "min" })
    end
    then_ok()
  end)

  it("different collectives, or async on some ranks only, raise on every rank", function()
    if many then
      local x = gpu.full({ 2 }, R)
      local fn = R == 1 and function() return d.broadcast(x, 1) end or function() return d.all_reduce(x) end
      h.fails({ "rank 2 calls all_reduce, rank 1 calls broadcast" }, fn)
      assert.same({ R, R }, x:totable())
      fn = R == 1 and function() return d.barrier() end or function() return d.all_gather(x) end
      h.fails({ "rank 2 calls all_gather, rank 1 calls barrier" }, fn)
      h.fails({ "bad argument #2 to 'gpu.distributed.all_reduce' (rank 2's call is async, rank 1's is synchronous" },
        d.all_reduce, x, { async = R > 1 })
      assert.same({ R, R }, x:totable())
    end
    then_ok()
  end)

  it("a collective that a call hook makes between a collective's call and its body keeps both right", function()
    local x, y = gpu.full({ 2 }, R), gpu.full({ 3 }, R)
    local fired = 0
    debug.sethook(function()
      -- level 2: the function being called; the protected call of a collective calls itself
      local f, caller = debug.getinfo(2, "f"), debug.getinfo(3, "f")
      if f and caller and f.func == d.all_reduce and caller.func == d.all_reduce and fired == 0 then
        fired = fired + 1
        d.broadcast(y, W)
      end
    end, "c")
    local ok, err = pcall(d.all_reduce, x)
    debug.sethook()
    assert.is_true(ok, err)
    assert.equal(1, fired)
    assert.same({ W, W, W }, y:totable())
    local s = W * (W + 1) / 2
    assert.same({ s, s }, x:totable())
    then_ok()
  end)

  it("an argument error on one rank raises on every rank, naming that rank and its fault", function()
    if many then
      local x = gpu.full({ 2 }, R)
      local err = h.fails({ "broadcast", "root 0 out of range 1.." .. W }, d.broadcast, x, R == 2 and 0 or 1)
      if R ~= 2 then assert.is_truthy(err:find("rank 2 raised in this call", 1, true), err) end
      local closed = gpu.zeros(2)
      if R == W then closed:close() end
      h.fails({ "all_reduce", "closed" }, d.all_reduce, closed, { async = true })
      h.fails({ "all_gather", "unknown option 'asynk'" }, d.all_gather, x, R == 1 and { asynk = true } or nil)
      assert.same({ R, R }, x:totable())
    end
    then_ok()
  end)
end)

describe("gpu.distributed: DistributedSampler and DataLoader", function()
  it("gives each rank a disjoint share covering every sample, reshuffled by set_epoch", function()
    local n = 11
    local s = gpu.data.DistributedSampler(n, { seed = 4 })
    local per = (n + W - 1) // W
    assert.equal(per, #s)
    local all = d.all_gather(s:indices())
    local seen = {}
    for _, v in ipairs(h.flat(all)) do seen[v] = true end
    for i = 1, n do assert.is_true(seen[i], "sample " .. i) end
    local e0 = s:indices():totable()
    s:set_epoch(1)
    assert.are_not.same(e0, s:indices():totable())
    -- the order is the same on every rank: rank 1's order, broadcast, equals ours
    local mine = gpu.data.DistributedSampler(n, { seed = 4, num_replicas = W, rank = 1 }):indices()
    local first = mine:copy()
    d.broadcast(first, 1)
    assert.same(first:totable(), mine:totable())
    local dl = gpu.data.DistributedSampler(n, { shuffle = false, drop_last = true })
    assert.equal(n // W, #dl)
    assert.same(gpu.arange(R, (n // W) * W + 1, W, { dtype = "int64" }):totable(), dl:indices():totable())
    h.fails({ "data.DistributedSampler", "unknown option 'shufle'" }, gpu.data.DistributedSampler, 4, { shufle = true })
    h.fails({ "DistributedSampler", "rank 3 out of range 1..2" }, gpu.data.DistributedSampler, 4,
      { num_replicas = 2, rank = 3 })
  end)

  it("DataLoader{distributed = true} batches this rank's share", function()
    local x = gpu.arange(1, 13, { dtype = "int64" }):reshape(12, 1)
    local loader = gpu.data.DataLoader(x, nil, { batch_size = 2, distributed = true, shuffle = false })
    local got = {}
    for xb in loader do for _, v in ipairs(h.flat(xb)) do got[#got + 1] = v end end
    local want = gpu.data.DistributedSampler(12, { shuffle = false }):indices():totable()
    assert.same(want, got)
    assert.equal((#want + 1) // 2, #loader)
  end)
end)

-- an MLP in float64 from a seed, the same on every rank
local function mlp(seed)
  gpu.random.seed(seed)
  return nn.Sequential { nn.Linear(6, 8, { dtype = "float64" }), nn.Tanh(), nn.Linear(8, 3, { dtype = "float64" }) }
end

describe("nn.DistributedDataParallel", function()
  it("broadcasts rank 1's parameters, and training on slices equals one process on the batch", function()
    gpu.random.seed(3)
    local N = 6 * W
    local X = gpu.random.randn(N, 6, { dtype = "float64" })
    local Y = gpu.random.randint(1, 3, { N }, { dtype = "int64" })
    local m = mlp(100 + R)                            -- different on each rank before the wrapper
    local ddp = nn.DistributedDataParallel(m, { bucket_mb = 0.0002 })   -- several buckets
    assert.equal(m, ddp.module)
    assert.is_true(#ddp._buckets > 1)
    local ref = mlp(101)                              -- rank 1's
    for i, p in ipairs(m:parameters()) do h.assert_close(p, ref:parameters()[i], 0) end
    local opt = gpu.optim.SGD(ddp:parameters(), { lr = 0.2, momentum = 0.9 })
    local ropt = gpu.optim.SGD(ref:parameters(), { lr = 0.2, momentum = 0.9 })
    local xs, ys = X[{ { (R - 1) * 6 + 1, R * 6 } }], Y[{ { (R - 1) * 6 + 1, R * 6 } }]
    for _ = 1, 5 do
      opt:zero_grad(); nn.cross_entropy(ddp(xs), ys):backward(); opt:step()
      ropt:zero_grad(); nn.cross_entropy(ref(X), Y):backward(); ropt:step()
    end
    for i, p in ipairs(m:parameters()) do h.assert_close(p, ref:parameters()[i], 1e-5) end
  end)

  it("no_sync accumulates locally; the next backward averages the sum", function()
    gpu.random.seed(5)
    local X = gpu.random.randn(4 * W, 6, { dtype = "float64" })
    local Y = gpu.random.randint(1, 3, { 4 * W }, { dtype = "int64" })
    local m, ref = mlp(7), mlp(7)
    local ddp = nn.DistributedDataParallel(m)
    local a, b = (R - 1) * 4 + 1, R * 4
    ddp:no_sync(function() nn.cross_entropy(ddp(X[{ { a, a + 1 } }]), Y[{ { a, a + 1 } }]):backward() end)
    nn.cross_entropy(ddp(X[{ { a + 2, b } }]), Y[{ { a + 2, b } }]):backward()
    -- one process: the mean over ranks of each rank's two half-batch gradients
    for r = 1, W do
      local ra = (r - 1) * 4 + 1
      local l = (nn.cross_entropy(ref(X[{ { ra, ra + 1 } }]), Y[{ { ra, ra + 1 } }]) +
                 nn.cross_entropy(ref(X[{ { ra + 2, ra + 3 } }]), Y[{ { ra + 2, ra + 3 } }])) / W
      l:backward()
    end
    for i, p in ipairs(m:parameters()) do h.assert_close(p.grad, ref:parameters()[i].grad, 1e-10) end
  end)

  it("refuses a non-module, unknown options, and parameters made after wrapping", function()
    h.fails({ "nn.DistributedDataParallel", "a module expected" }, nn.DistributedDataParallel, 3)
    h.fails({ "nn.DistributedDataParallel", "unknown option 'bucket'" }, nn.DistributedDataParallel,
      nn.Linear(2, 2), { bucket = 1 })
    h.fails({ "device_ids" }, nn.DistributedDataParallel, nn.Linear(2, 2), { device_ids = { 1 } })
    local lazy = nn.Sequential { nn.Dense(2) }
    local ddp = nn.DistributedDataParallel(lazy)
    h.fails({ "made after it was wrapped" }, function() return ddp(gpu.ones(1, 3)) end)
  end)
end)

describe("gpu.autograd: the hooks DDP is built on", function()
  it("post-accumulate hooks see the accumulated .grad; queued callbacks run once after backward", function()
    local ag = gpu.autograd
    local p = gpu.array({ 1, 2 }, { dtype = "float64" }):requires_grad()
    local seen, order = {}, {}
    local hd = ag.register_post_accumulate_grad_hook(p, function(x)
      seen[#seen + 1] = x.grad:totable()
      order[#order + 1] = "hook"
      if #seen == 1 then ag.queue_callback(function() order[#order + 1] = "callback" end) end
    end)
    local _ = (p * p):sum():backward()
    _ = (p * 3):sum():backward()
    assert.same({ { 2, 4 }, { 5, 7 } }, seen)                  -- after accumulation: 2p, then 2p + 3
    assert.same({ "hook", "callback", "hook" }, order)
    hd.remove()
    _ = (p * p):sum():backward()
    assert.equal(2, #seen)
    h.fails({ "register_post_accumulate_grad_hook", "not a leaf" }, ag.register_post_accumulate_grad_hook,
      p * 2, function() end)
    h.fails({ "queue_callback", "a function expected" }, ag.queue_callback, 3)
  end)
end)

describe("fit{distributed = true}", function()
  it("keeps every rank's weights identical, averages the loss, and evaluate/predict combine the ranks", function()
    gpu.random.seed(11)
    local X = gpu.random.randn(30, 4)
    local Y = gpu.random.randint(1, 3, { 30 }, { dtype = "int64" })
    gpu.random.seed(20 + R)                           -- different initial weights per rank
    local m = nn.Sequential { nn.Dense(8, { activation = "relu" }), nn.Dense(3, { activation = "softmax" }) }
    m:compile { optimizer = "adam", loss = "sparse_categorical_crossentropy", metrics = { "accuracy" } }
    local hist = m:fit(X, Y, { epochs = 2, batch_size = 4, distributed = true, verbose = 0, validation_split = 0.2 })
    for _, p in ipairs(m:parameters()) do
      local g = d.all_gather(p)
      for r = 2, W do h.assert_close(g[r], g[1], 0) end
    end
    local losses = d.all_gather(gpu.array(hist.loss, { dtype = "float64" }))
    for r = 2, W do h.assert_close(losses[r], losses[1], 0) end
    local e, e1 = m:evaluate(X, Y, { distributed = true }), m:evaluate(X, Y)
    assert.is_true(math.abs(e.loss - e1.loss) < 1e-5)
    assert.is_true(math.abs(e.accuracy - e1.accuracy) < 1e-9)
    h.assert_close(m:predict(X, { distributed = true }), m:predict(X), 1e-6)
    h.fails({ "Module:fit", "unknown option 'distributd'" }, m.fit, m, X, Y, { distributd = true })
  end)

  it("over a TensorDataset or a DataLoader gives the arrays' numbers (the loader's sampler made distributed)", function()
    gpu.random.seed(13)
    local X = gpu.random.randn(30, 4)
    local Y = gpu.random.randint(1, 3, { 30 }, { dtype = "int64" })
    local function model()
      gpu.random.seed(21)
      local m = nn.Sequential { nn.Dense(3, { activation = "softmax", input_shape = { 4 } }) }
      m:compile { optimizer = "sgd", loss = "sparse_categorical_crossentropy", metrics = { "accuracy" } }
      return m
    end
    local o = { epochs = 2, batch_size = 4, distributed = true, verbose = 0 }
    local a, b, c = model(), model(), model()
    local ha = a:fit(X, Y, o)
    local hb = b:fit(gpu.data.TensorDataset(X, Y), nil, o)
    local hc = c:fit(gpu.data.DataLoader(gpu.data.TensorDataset(X, Y), { batch_size = 4, shuffle = true }), nil,
      { epochs = 2, distributed = true, verbose = 0 })
    for e = 1, 2 do
      assert.is_true(math.abs(ha.loss[e] - hb.loss[e]) < 1e-6, "dataset, epoch " .. e)
      assert.is_true(math.abs(ha.loss[e] - hc.loss[e]) < 1e-6, "loader, epoch " .. e)
      assert.is_true(math.abs(ha.accuracy[e] - hb.accuracy[e]) < 1e-9)
    end
    for i, p in ipairs(a:parameters()) do
      h.assert_close(b:parameters()[i], p, 1e-6)
      h.assert_close(c:parameters()[i], p, 1e-6)
    end
    local e1, e2 = a:evaluate(X, Y, { distributed = true }), a:evaluate(gpu.data.TensorDataset(X, Y), nil, { distributed = true })
    assert.is_true(math.abs(e1.loss - e2.loss) < 1e-5)
  end)

  it("writes checkpoints and CSV logs on rank 1 only", function()
    gpu.random.seed(12)
    local X = gpu.random.randn(16, 4)
    local Y = gpu.random.randint(1, 3, { 16 }, { dtype = "int64" })
    local m = nn.Sequential { nn.Dense(3, { activation = "softmax", input_shape = { 4 } }) }
    m:compile { optimizer = "sgd", loss = "sparse_categorical_crossentropy" }
    local dir = h.tmpdir()
    local ck, csv = dir .. "/model.safetensors", dir .. "/log.csv"
    m:fit(X, Y, { epochs = 1, batch_size = 4, distributed = true, verbose = 0,
                  callbacks = { nn.ModelCheckpoint(ck, { monitor = "loss" }), nn.CSVLogger(csv) } })
    local function exists(p) local f = io.open(p, "rb"); if f then f:close() end return f ~= nil end
    assert.equal(R == 1, exists(ck), "rank " .. R .. ": checkpoint")
    assert.equal(R == 1, exists(csv), "rank " .. R .. ": csv log")
    os.execute("rm -rf '" .. dir .. "'")
  end)
end)

-- ---- whole jobs, started from a world of 1 -----------------------------------------------------

local bin = os.getenv("GPULUA_BIN") or "./gpulua"
if not bin:find("/") then bin = "./" .. bin end
local mpirun = W == 1 and not os.getenv("OMPI_COMM_WORLD_SIZE") and h.run("command -v mpirun") == 0
-- ASan's leak check would report Open MPI's own allocations: whole jobs run unsanitized only
local asan = os.getenv("GPULUA_ASAN")
local MPIRUN = "mpirun --oversubscribe -np 2 " .. (io.popen("id -u"):read("l") == "0" and "--allow-run-as-root " or "")

describe("gpu.distributed: processes", function()
  it("gpulua -e '' and init() without a launcher never load MPI", function()
    local code, out = h.run(bin .. [[ -e 'for l in io.lines("/proc/self/maps") do if l:find("libmpi") then print(l) end end' ]])
    assert.equal(0, code)
    assert.equal("", out)
    code, out = h.run("env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK " .. bin .. [[ -e '
      print(gpu.distributed.init())
      for l in io.lines("/proc/self/maps") do if l:find("libmpi") then print(l) end end' ]])
    assert.equal(0, code)
    assert.equal("1\t1\n", out)
  end)

  local job = (mpirun and not asan) and it or pending
  job("a rank that raises ends the job, the others naming it and its message", function()
    local dir, name = h.tmpdir()
    local script = name("fail.lua")
    h.spit(script, [[
      local d = gpu.distributed
      d.init { timeout = 30 }
      if d.rank() == 2 then error("boom on purpose") end
      d.all_reduce(gpu.ones(3))
      print("not reached")]])
    local t0 = os.time()
    local code, out, err = h.run(MPIRUN .. bin .. " " .. script)
    os.execute("rm -rf " .. dir)
    assert.is_true(os.time() - t0 < 25)
    assert.are_not.equal(0, code)
    assert.is_falsy(out:find("not reached"))
    assert.is_truthy(err:find("boom on purpose", 1, true))
    assert.is_truthy(err:find("rank 2 failed: " .. script .. ":3: boom on purpose", 1, true), err)
  end)

  job("a collective that no other rank joins times out with a clear error", function()
    local dir, name = h.tmpdir()
    local script = name("hang.lua")
    h.spit(script, [[
      local d = gpu.distributed
      d.init { timeout = 1 }
      if d.rank() == 1 then d.all_reduce(gpu.ones(3)) else local t = os.time() while os.time() - t < 8 do end end]])
    local t0 = os.time()
    local code, _, err = h.run("GPULUA_DIST_TIMEOUT=100 " .. MPIRUN .. bin .. " " .. script)
    os.execute("rm -rf " .. dir)
    assert.is_true(os.time() - t0 < 8)
    assert.are_not.equal(0, code)
    assert.is_truthy(err:find("all_reduce timed out after 1 s on rank 1 of 2", 1, true), err)
  end)

  job("an async call whose peers never come ends the job at the timeout, as a synchronous one", function()
    local dir, name = h.tmpdir()
    local script = name("async.lua")
    h.spit(script, [[
      local d = gpu.distributed
      d.init { timeout = 1 }
      if d.rank() == 1 then
        local ok, e = pcall(function() d.all_reduce(gpu.ones(3), { async = true }):wait() end)
        io.stderr:write("caught: ", tostring(ok), " ", tostring(e), "\n")
        io.stderr:flush()
        error("ending the job")
      else
        local t = os.time() while os.time() - t < 8 do end
      end]])
    local t0 = os.time()
    local code, _, err = h.run(MPIRUN .. bin .. " " .. script)
    os.execute("rm -rf " .. dir)
    assert.is_true(os.time() - t0 < 8)
    assert.are_not.equal(0, code)
    -- the ranks compare their calls at the call, as a synchronous one: the job ends there
    assert.is_falsy(err:find("caught:", 1, true), err)
    assert.is_truthy(err:find("all_reduce timed out after 1 s on rank 1 of 2", 1, true), err)
  end)

  job("a rank that calls a collective alone with a bad argument ends the job at the timeout, naming its error", function()
    local dir, name = h.tmpdir()
    local script = name("alone.lua")
    h.spit(script, [[
      local d = gpu.distributed
      d.init { timeout = 1 }
      if d.rank() == 1 then pcall(d.broadcast, gpu.zeros(2), 0) else local t = os.time() while os.time() - t < 8 do end end]])
    local t0 = os.time()
    local code, _, err = h.run(MPIRUN .. bin .. " " .. script)
    os.execute("rm -rf " .. dir)
    assert.is_true(os.time() - t0 < 8)
    assert.are_not.equal(0, code)
    assert.is_truthy(err:find("broadcast (after this rank's error: bad argument #2 to 'gpu.distributed.broadcast' " ..
      "(root 0 out of range 1..2)) timed out after 1 s on rank 1 of 2", 1, true), err)
  end)

  job("ranks that disagree raise on every rank, and the job goes on", function()
    local dir, name = h.tmpdir()
    local script = name("disagree.lua")
    h.spit(script, [[
      local d = gpu.distributed
      d.init { timeout = 20 }
      local x = gpu.ones(1 + d.rank())
      local ok, e = pcall(d.all_reduce, x)
      print(d.rank(), ok, e, table.concat(x:totable(), " "))
      x = gpu.ones(2)
      d.all_reduce(x)
      print(d.rank(), table.concat(x:totable(), " "))]])
    local code, out, err = h.run(MPIRUN .. bin .. " " .. script)
    os.execute("rm -rf " .. dir)
    assert.equal(0, code, err)
    for r = 1, 2 do
      local e = "bad argument #1 to 'gpu.distributed.all_reduce' (rank 2 has shape (3,), rank 1 has (2,))"
      assert.is_truthy(out:find(r .. "\tfalse\t" .. e .. "\t" .. (r == 1 and "1.0 1.0" or "1.0 1.0 1.0"), 1, true), out)
      assert.is_truthy(out:find(r .. "\t2.0 2.0", 1, true), out)
    end
  end)
end)
