-- spec/serialization_spec.lua — gpu.save(path, t) of a Lua table and gpu.load of it
-- (lua/gpu/serialization.lua): every kind of value back exactly, a training run resumed
-- from a checkpoint equal bit for bit to one never interrupted, and every misuse and
-- foreign or damaged file refused by name, leaving files as they were.
local h = require "spec.helper"
local gpu = h.gpu
local nn, optim = gpu.nn, gpu.optim

local function tmp()
  local p = os.tmpname()
  os.remove(p)
  return p .. ".pt"
end

local function bytes(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local b = f:read("a")
  f:close()
  return b
end

-- a float's 8 bytes: -0.0, NaN's sign and every last bit compared
local function bits(x) return string.pack("<d", x) end

local function same_array(a, b)
  assert.equal(a.dtype, b.dtype)
  assert.same(a.shape, b.shape)
  local function raw(x)
    if x.dtype:match("^complex") then x = gpu.view_as_real(x) end
    if x.dtype == "bfloat16" or x.dtype == "float16" then x = x:astype("float32") end
    return x:contiguous():totable()
  end
  assert.same(raw(a), raw(b))
end

describe("gpu.save and gpu.load of a table", function()
  it("give back every kind of value exactly", function()
    local path = tmp()
    local floats = { 0.1, -0.0, 1 / 0, -1 / 0, 5e-324, 1.7976931348623157e308, -(2 ^ 53) + 0.5, 1 / 3 }
    local arrays = {}
    for _, dt in ipairs(gpu._dtype_names or { "bool", "uint8", "int8", "int16", "uint16", "int32", "uint32", "int64",
      "uint64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128" }) do
      arrays[dt] = gpu.arange(6):reshape(2, 3):astype(dt)
    end
    local all_bytes = {}
    for b = 0, 255 do all_bytes[#all_bytes + 1] = string.char(b) end
    local t = {
      int = 42, maxint = math.maxinteger, minint = math.mininteger, floats = floats, nan = 0 / 0, mnan = -(0 / 0),
      str = table.concat(all_bytes), empty = "", yes = true, no = false,
      [7] = "seven", [2.5] = "two and a half", [true] = "true key", [-3] = { nested = { deeper = { 1, 2, 3 } } },
      arrays = arrays, scalar = gpu.array(3.5, { dtype = "float64" }), none = gpu.zeros(0, 4),
      view = gpu.arange(12):reshape(3, 4):transpose(1, 2), emptytable = {},
    }
    t.again = t.arrays.float32                            -- one array twice: one array back
    gpu.save(path, t)
    local u = gpu.load(path)
    assert.equal(42, u.int)
    assert.equal("integer", math.type(u.maxint))
    assert.equal(math.maxinteger, u.maxint)
    assert.equal(math.mininteger, u.minint)
    for i, x in ipairs(floats) do
      assert.equal("float", math.type(u.floats[i]))
      assert.equal(bits(x), bits(u.floats[i]))
    end
    assert.equal(bits(t.nan), bits(u.nan))
    assert.equal(bits(t.mnan), bits(u.mnan))
    assert.equal(t.str, u.str)
    assert.equal("", u.empty)
    assert.is_true(u.yes)
    assert.is_false(u.no)
    assert.equal("seven", u[7])
    assert.equal("two and a half", u[2.5])
    assert.equal("true key", u[true])
    assert.same({ 1, 2, 3 }, u[-3].nested.deeper)
    assert.same({}, u.emptytable)
    for dt, x in pairs(arrays) do same_array(x, u.arrays[dt]) end
    same_array(t.scalar, u.scalar)
    same_array(t.none, u.none)
    same_array(t.view, u.view)
    assert.equal(u.arrays.float32, u.again)
    os.remove(path)
  end)

  it("writes a safetensors file: each distinct array once, the table as metadata", function()
    local path = tmp()
    local w = gpu.ones(2, 2)
    gpu.save(path, { a = w, b = w, c = { w }, n = 1 })
    local tensors, meta = gpu.load_safetensors(path)
    local names = {}
    for k in pairs(tensors) do names[#names + 1] = k end
    assert.same({ "0" }, names)
    assert.equal("1", meta["gpulua.format"])
    assert.matches('^%["t",%[', meta["gpulua.tree"])
    os.remove(path)
  end)

  it("loads onto the device asked for", function()
    local path = tmp()
    gpu.save(path, { x = gpu.ones(3) })
    assert.equal("cpu", gpu.load(path, { device = "cpu" }).x.device)
    os.remove(path)
  end)

  it("resumes a training run that equals the uninterrupted one bit for bit", function()
    local function setup()
      gpu.random.seed(7)
      local m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.25), nn.Linear(8, 1))
      local opt = optim.Adam(m:parameters(), { lr = 0.05 })
      local sched = optim.lr_scheduler.StepLR(opt, { step_size = 2, gamma = 0.5 })
      return m, opt, sched
    end
    local function step(m, opt, sched)
      local x, y = gpu.random.randn(16, 4), gpu.random.randn(16, 1)
      opt:zero_grad()
      local loss = ((m(x) - y) ^ 2):mean()
      loss:backward()
      opt:step()
      sched:step()
    end
    local m1, o1, s1 = setup()
    for _ = 1, 6 do step(m1, o1, s1) end
    local want = m1:state_dict()

    local path = tmp()
    local m2, o2, s2 = setup()
    for _ = 1, 3 do step(m2, o2, s2) end
    gpu.save(path, { model = m2:state_dict(), optimizer = o2:state_dict(), scheduler = s2:state_dict(), epoch = 3,
      rng = gpu.random.get_state() })
    for _ = 1, 5 do step(m2, o2, s2) end                  -- the run goes on, then is lost

    local m3, o3, s3 = setup()
    local ck = gpu.load(path)
    m3:load_state_dict(ck.model)
    o3:load_state_dict(ck.optimizer)
    s3:load_state_dict(ck.scheduler)
    gpu.random.set_state(ck.rng)
    assert.equal(3, ck.epoch)
    for _ = ck.epoch + 1, 6 do step(m3, o3, s3) end
    local got = m3:state_dict()
    for k, v in pairs(want) do
      assert.same(v:totable(), got[k]:totable(), k)              -- float32 values: exact
    end
    os.remove(path)
  end)

  it("refuses what it cannot save, by where it is, and leaves the file as it was", function()
    local path = tmp()
    gpu.save(path, { keep = 1 })
    local before = bytes(path)
    local closed = gpu.ones(2)
    closed:close()
    local cycle = { a = {} }
    cycle.a.b = cycle
    local deep = {}
    local d = deep
    for _ = 1, 250 do d.x = {} d = d.x end
    local cases = {
      { { f = print }, "gpu.save: value.f is a function" },
      { { co = coroutine.create(print) }, "gpu.save: value.co is a thread" },
      { { x = { [{}] = 1 } }, "gpu.save: value.x has a key that is a table" },
      { { [gpu.ones(1)] = 1 }, "gpu.save: value has a key that is a gpu.array" },
      { { m = nn.Linear(2, 2) }, "gpu.save: value.m is an object (a table with a metatable)" },
      { { c = closed }, "gpu.save: value.c is a closed array" },
      { cycle, "gpu.save: value.a.b contains itself (a cycle)" },
      { deep, "is nested deeper than 200 tables" },
      { { ["odd key"] = { io.stdout } }, 'gpu.save: value["odd key"][1] is a userdata' },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(gpu.save, path, c[1])
      assert.is_false(ok)
      assert.matches(c[2], err, 1, true)
      assert.equal(before, bytes(path))
    end
    local ok, err = pcall(gpu.save, path, {}, {})
    assert.is_false(ok)
    assert.matches("at most 2 arguments expected, got 3", err, 1, true)
    ok, err = pcall(gpu.save, "/nonexistent-dir/x.pt", { 1 })
    assert.is_false(ok)
    assert.matches("gpu.save:", err, 1, true)
    os.remove(path)
  end)

  it("refuses a file it did not write or that was damaged, naming the fault", function()
    local path = tmp()
    gpu.save_safetensors(path, { w = gpu.ones(2) })
    local ok, err = pcall(gpu.load, path)
    assert.is_false(ok)
    assert.matches("is a safetensors file that gpu.save did not write (no gpulua tree); gpu.load_safetensors reads its arrays",
      err, 1, true)
    local function tree(t, tensors, format)
      gpu.save_safetensors(path, tensors or {}, { ["gpulua.format"] = format or "1", ["gpulua.tree"] = t })
      local ok2, e = pcall(gpu.load, path)
      assert.is_false(ok2)
      return e
    end
    assert.matches("in gpulua's format 2, which this version does not read (it reads 1)", tree('["i","1"]', nil, "2"), 1, true)
    local damaged = {
      { '["q","1"]', 'an unknown tag "q"' },
      { '["a","7"]', 'an array "7" that the file does not hold' },
      { '["i","1e3"]', 'a bad integer "1e3"' },
      { '["i","99999999999999999999"]', 'a bad integer' },
      { '["f","0.1"]', 'a bad float "0.1"' },
      { '["s","\\u0100"]', "a \\u escape past \\u00ff" },
      { '["t",[["s","a"]]]', "a table whose entries are not key, value pairs" },
      { '["t",[["s","a"],true,["s","a"],false]]', "a key twice" },
      { '["t",[["f","nan"],true]]', "a key that is NaN" },
      { '["t",[["t",[]],true]]', "a key that is a table or an array" },
      { '["s","abc"', "a list without ',' or ']'" },
      { '["s","abc"] x', "text after the end" },
      { string.rep("[", 300), "nesting deeper than 200" },
      { "", "an early end" },
    }
    for _, c in ipairs(damaged) do
      local e = tree(c[1])
      assert.matches("its gpulua tree is damaged (" .. c[2], e, 1, true)
    end
    assert.matches('an array "0" that the tree does not name', tree('["i","1"]', { ["0"] = gpu.ones(1) }), 1, true)
    os.remove(path)
  end)

  it("leaves the other files' loads as they were", function()
    local path = tmp() .. ".npy"
    gpu.save(path, gpu.arange(3))
    assert.same({ 0, 1, 2 }, gpu.load(path):totable())
    os.remove(path)
    path = tmp() .. ".npz"
    gpu.savez(path, { a = gpu.ones(2) })
    assert.same({ 1, 1 }, gpu.load(path).a:totable())
    os.remove(path)
  end)

  it("dumps gives gpu.save's bytes as a string, and loads the value back (cpu arrays)", function()
    local ser = require "gpu.serialization"
    local value = { x = gpu.arange(6, { dtype = "int16", device = "cpu" }):reshape(2, 3), s = "a\0b", n = 3, f = 0.25,
                    list = { true, { gpu.ones(2, { dtype = "bool", device = "cpu" }) } } }
    local b = ser.dumps(value)
    local path = tmp()
    gpu.save(path, value)
    assert.are.equal(bytes(path), b)
    os.remove(path)
    local back = ser.loads(b)
    assert.are.equal("int16", back.x.dtype)
    assert.same({ { 0, 1, 2 }, { 3, 4, 5 } }, back.x:totable())
    assert.same({ "a\0b", 3, 0.25, true }, { back.s, back.n, back.f, back.list[1] })
    assert.same({ true, true }, back.list[2][1]:totable())
    local ok, err = pcall(ser.dumps, { f = print }, "my.caller", "batch")
    assert.is_false(ok)
    assert.matches("my.caller: batch.f is a function", err, 1, true)
    ok, err = pcall(ser.loads, "not safetensors at all")
    assert.is_false(ok)
    assert.matches("serialization.loads: ", err, 1, true)
    ok, err = pcall(ser.loads, gpu._safetensors_bytes({ a = gpu.ones(1) }))
    assert.is_false(ok)
    assert.matches("serialization.loads: '(bytes)' is a safetensors file that gpu.save did not write", err, 1, true)
  end)
end)
