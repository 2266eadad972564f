-- spec/files_spec.lua — what a path may be: every loader reads only
-- a regular file (a FIFO, a directory or a device is refused, naming the path, before a
-- read could block), /proc files are read to their end, loadtxt takes decimal numbers
-- only and locates every bad field, saves write through symbolic links and keep the
-- file's mode but never replace what is not a regular file, and whatever a save writes
-- its load reads back: every dtype, 0-d, empty and non-contiguous arrays.
local h = require "spec.helper"
local spit = h.spit
local gpu = h.gpu

local BIN = os.getenv("GPULUA_BIN") or "./gpulua"

local tmpdir, tmp = h.tmpdir()

local function sh(cmd)          -- the first line a shell command prints
  local p = io.popen(cmd .. " 2>&1")
  local s = p:read("l")
  p:close()
  return s
end

local fails = h.fails

local loaders = { "load", "loadz", "load_safetensors", "loadtxt", "load_idx" }

describe("loaders read only regular files", function()
  it("refuse a FIFO at once, naming the path (in a subprocess: a regression hangs only it)", function()
    local fifo = tmp("fifo")
    assert.is_true(os.execute("mkfifo " .. fifo))
    -- each loader's result on its own line; `timeout` ends the child if one blocks
    local script = tmp("fifo.lua")
    spit(script, ([[
      io.stdout:setvbuf("line")
      for _, f in ipairs({ "%s" }) do
        local ok, err = pcall(gpu[f], %q)
        print(f, ok, err)
      end
      print(pcall(gpu.save, %q, gpu.ones(2)))
      print("done")
    ]]):format(table.concat(loaders, '", "'), fifo, fifo))
    local code, out, err = h.run("timeout 10 " .. BIN .. " " .. script)
    assert.are.equal(0, code, "the subprocess failed or blocked: " .. out .. err)
    for _, f in ipairs(loaders) do
      local want = ("%s\tfalse\tgpu.%s: '%s': not a regular file (a FIFO)"):format(f, f, fifo)
      assert.is_truthy(out:find(want, 1, true), ("%q lacks %q"):format(out, want))
    end
    assert.is_truthy(out:find("gpu.save: '" .. fifo .. "': not a regular file (a FIFO): refusing to replace it", 1, true), out)
    assert.is_truthy(out:find("\ndone\n", 1, true), out)
    assert.are.equal("fifo", sh("stat -c %F " .. fifo):match("fifo"))     -- still a FIFO
  end)
  it("refuse a directory", function()
    for _, f in ipairs(loaders) do
      fails({ "gpu." .. f .. ": '" .. tmpdir .. "': not a regular file (a directory)" }, gpu[f], tmpdir)
    end
  end)
  it("refuse a device", function()
    for _, f in ipairs(loaders) do
      fails({ "gpu." .. f .. ": '/dev/zero': not a regular file (a character device)" }, gpu[f], "/dev/zero")
    end
  end)
  it("read a /proc file to its end (stat says its size is 0)", function()
    -- a file of words: a clean error, never the empty array a size-0 mapping gave
    fails({ "gpu.loadtxt: '/proc/self/status': line 1, column 1: 'Name:' is not a decimal number" },
          gpu.loadtxt, "/proc/self/status")
    fails({ "gpu.load: '/proc/self/status': not a .npy file" }, gpu.load, "/proc/self/status")
    local f = io.open("/proc/sys/kernel/pid_max")
    if f then
      local want = tonumber(f:read("a"))
      f:close()
      local x = gpu.loadtxt("/proc/sys/kernel/pid_max", { dtype = "int64" })
      assert.are.equal(0, x.ndim)
      assert.are.equal(want, x:item())
    end
  end)
end)

describe("loadtxt reads decimal numbers only", function()
  local function bad(text, pieces, opts)
    local p = tmp("bad.txt")
    spit(p, text)
    table.insert(pieces, 1, "gpu.loadtxt: '" .. p .. "': ")
    return fails(pieces, gpu.loadtxt, p, opts)
  end
  local csv = { delimiter = "," }
  it("refuses hex and other strtod extensions, at the field's line and column", function()
    bad("1 2\n3 0x1A\n", { "line 2, column 2: '0x1A' is not a decimal number" })
    bad("0x1p3\n", { "line 1, column 1: '0x1p3' is not a decimal number" })
    bad("1 nan(7)\n", { "line 1, column 2: 'nan(7)' is not a decimal number" })
    bad("1e\n", { "'1e' is not a decimal number" })
    bad(". 1\n", { "line 1, column 1: '.' is not a decimal number" })
    bad("1,0x10\n", { "line 1, column 2: '0x10' is not a decimal number" }, { delimiter = ",", dtype = "int64" })
    bad("1 2\0003\n", { "line 1, column 2: a NUL byte in a field" })
  end)
  it("refuses an empty field and a trailing delimiter", function()
    bad("1,2\n1,,2\n", { "line 2, column 2: empty field" }, csv)
    bad("1,2,\n", { "line 1, column 3: empty field (the line ends with ',')" }, csv)
    bad("1;2\n3;4;\n", { "line 2, column 3: empty field (the line ends with ';')" }, { delimiter = ";" })
    bad(",1\n", { "line 1, column 1: empty field" }, csv)
    bad("1, ,2\n", { "line 1, column 2: empty field" }, csv)
  end)
  it("names the line of a ragged row and the field of a bad value", function()
    bad("1 2\n3\n", { "line 2: 1 columns where earlier rows have 2" })
    bad("1,2\n3,4,5\n", { "line 2: 3 columns where earlier rows have 2" }, csv)
    bad("1 2\n3 1.5\n", { "line 2, column 2: '1.5' is not an integer in range of int32" }, { dtype = "int32" })
    bad("1\n256\n", { "line 2, column 1: 256 out of range of uint8" }, { dtype = "uint8" })
    bad(("1"):rep(200), { "line 1, column 1: field too long (200 bytes, at most 127)" })
  end)
  it("reads what NumPy's loadtxt reads: signs, points, exponents, nan and inf", function()
    spit(tmp("ok.txt"), "+1.5 -2 .5 3.\n1e3 -2.5E-1 nan -inf\nInfinity NaN +INF 7\n")
    local x = gpu.loadtxt(tmp("ok.txt"), { dtype = "float64" })
    h.assert_close(x, { { 1.5, -2, 0.5, 3 }, { 1000, -0.25, 0 / 0, -math.huge }, { math.huge, 0 / 0, math.huge, 7 } }, 0)
    spit(tmp("ints.csv"), "1, -2 ,+3\n1e2,4.0,9223372036854775807\n")
    h.assert_close(gpu.loadtxt(tmp("ints.csv"), { delimiter = ",", dtype = "int64" }),
                   { { 1, -2, 3 }, { 100, 4, math.maxinteger } }, 0)
  end)
end)

describe("saves", function()
  local savers = {
    save = function(p, x) gpu.save(p, x) end,
    savez = function(p, x) gpu.savez(p, { x = x }) end,
    save_safetensors = function(p, x) gpu.save_safetensors(p, { x = x }) end,
    savetxt = function(p, x) gpu.savetxt(p, x) end,
  }
  local function mode(p) return sh("stat -c %a " .. p) end
  it("keep an existing file's mode (a 0600 file stays 0600)", function()
    for name, save in pairs(savers) do
      local p = tmp("private-" .. name)
      save(p, gpu.ones(2))
      os.execute("chmod 600 " .. p)
      save(p, gpu.zeros(3))
      assert.are.equal("600", mode(p), name)
      os.execute("chmod 640 " .. p)
      save(p, gpu.zeros(3))
      assert.are.equal("640", mode(p), name)
    end
    -- a new file gets 0666 less the umask
    local p = tmp("new.npy")
    os.execute("umask 027; " .. BIN .. " -e 'gpu.save(\"" .. p .. "\", gpu.ones(1))'")
    assert.are.equal("640", mode(p))
  end)
  it("write through a symbolic link to its target, keeping the link", function()
    for name, save in pairs(savers) do
      os.execute("mkdir -p " .. tmp("real"))
      local target, link = tmp("real/" .. name), tmp("link-" .. name)
      save(target, gpu.ones(2))
      os.execute("chmod 600 " .. target .. "; ln -sfn real/" .. name .. " " .. link)
      save(link, gpu.zeros(4))
      assert.are.equal("symbolic link", sh("stat -c %F " .. link), name)
      assert.are.equal("600", mode(target), name)
      if name == "save" then h.assert_close(gpu.load(target), { 0, 0, 0, 0 }, 0) end
    end
    local list = sh("ls -A " .. tmp("real") .. " | grep -c tmp-")
    assert.are.equal("0", list)                                   -- no temporary left
  end)
  it("refuse to replace a directory, a FIFO or a dangling link, and leave it as it was", function()
    os.execute("mkdir -p " .. tmp("adir") .. "; mkfifo " .. tmp("afifo") .. "; ln -sfn nothing " .. tmp("dangling"))
    for name, save in pairs(savers) do
      fails({ "gpu." .. name .. ": '" .. tmp("adir") .. "': not a regular file (a directory): refusing to replace it" },
            save, tmp("adir"), gpu.ones(2))
      fails({ "gpu." .. name .. ": '" .. tmp("afifo") .. "': not a regular file (a FIFO): refusing to replace it" },
            save, tmp("afifo"), gpu.ones(2))
      fails({ "gpu." .. name .. ": '" .. tmp("dangling") .. "': a symbolic link to a missing file" },
            save, tmp("dangling"), gpu.ones(2))
    end
    assert.are.equal("directory", sh("stat -c %F " .. tmp("adir")))
    assert.are.equal("fifo", sh("stat -c %F " .. tmp("afifo")))
    assert.are.equal("symbolic link", sh("stat -c %F " .. tmp("dangling")))
    assert.are.equal("0", sh("ls -A " .. tmpdir .. " | grep -c tmp-"))
  end)
end)

-- the values of a dtype: extremes and fractions each format must keep exactly
local values = {
  bool = { true, false, false, true, true, false, true, true, false, false, true, false },
  uint8 = { 0, 255, 1, 128, 7, 254, 3, 99, 100, 17, 64, 200 },
  int32 = { -2147483648, 2147483647, 0, -1, 1, 65536, -65536, 7, 8, 9, 10, 11 },
  int8 = { -128, 127, 0, -1, 1, 64, -64, 7, 8, 9, 10, 11 },
  int16 = { -32768, 32767, 0, -1, 1, 256, -256, 7, 8, 9, 10, 11 },
  uint16 = { 0, 65535, 1, 32768, 7, 65534, 3, 99, 100, 17, 64, 200 },
  uint32 = { 0, 4294967295, 1, 2147483648, 7, 4294967294, 3, 99, 100, 17, 64, 200 },
  int64 = { math.mininteger, math.maxinteger, 0, -1, 1, 1 << 40, -(1 << 40), 7, 8, 9, 10, 11 },
  uint64 = { 0, 2 ^ 64 - 2048, 1, 2 ^ 63, math.maxinteger, 1 << 40, 3, 99, 100, 17, 64, 200 },
  float16 = { 1.5, -65504, 65504, 2 ^ -24, -0.25, 0, 1 / 0, -1 / 0, 0 / 0, 3, 1024, -7.5 },
  bfloat16 = { 1.5, -2 ^ 100, 2 ^ -100, 0.25, -0.25, 0, 1 / 0, -1 / 0, 0 / 0, 3, 256, -7.5 },
  float32 = { 1.5, -3.4028234663852886e38, 1.1754943508222875e-38, 0.1, -0.25, 0, 1 / 0, -1 / 0, 0 / 0, 3, 1e10, -7.5 },
  float64 = { math.pi, -1.7976931348623157e308, 5e-324, 0.1, -0.25, 0, 1 / 0, -1 / 0, 0 / 0, 3, 1e300, -7.5 },
  -- (re, im) pairs
  complex64 = { { 1.5, -2 }, { -3.4028234663852886e38, 0 }, { 0, 1.1754943508222875e-38 }, { 0.1, 0.2 },
                { 1 / 0, -1 / 0 }, { 0 / 0, 1 }, { -0.25, 0 / 0 }, { 3, 3 }, { 0, 0 }, { -7.5, 1e10 }, { 1, 0 }, { 0, -1 } },
  complex128 = { { math.pi, -math.pi }, { -1.7976931348623157e308, 5e-324 }, { 0.1, 0.2 }, { 1 / 0, 0 / 0 },
                 { 0, -0.0 }, { -0.25, 1e300 }, { 3, 3 }, { 0, 0 }, { -7.5, 1 }, { 1, 0 }, { 0, -1 }, { 2, 2 } },
}

local function is_complex(dt) return gpu._dtypes[dt].kind == "complex" end

-- an array of dtype dt from values' entries (a complex dtype's from (re, im) pairs)
local function make(v, dt)
  if not is_complex(dt) then return gpu.array(v, { dtype = dt }) end
  return gpu.view_as_complex(gpu.array(v, { dtype = gpu._dtypes[dt].size == 8 and "float32" or "float64" }))
end

-- the arrays of one dtype a round trip must keep: 1-D, 0-d, empty (0,3), transposed,
-- sliced with a step (the last two not contiguous)
local function cases(dt)
  local v = values[dt]
  local m = make(v, dt):reshape(3, 4)
  return {
    { "1-D", make(v, dt) },
    { "0-d", make({ v[2] }, dt):reshape({}) },
    { "(0,3)", gpu.zeros({ 0, 3 }, { dtype = dt }) },
    { "transposed", m.T },
    { "sliced", m[{ { 1, 3, 2 }, { 2, 4, 2 } }] },
  }
end

local function same(got, want, what)
  assert.are.equal(want.dtype, got.dtype, what)
  assert.are.same(want.shape, got.shape, what)
  if is_complex(want.dtype) then got, want = gpu.view_as_real(got), gpu.view_as_real(want) end
  h.assert_close(got, want, 0)
end

describe("what a save writes its load reads back", function()
  it("has values for every dtype", function() h.assert_covers_dtypes(values, "values") end)
  for _, dt in ipairs(h.dtypes()) do
    it(dt .. " in .npy, .npz (stored and deflated) and safetensors (where the format has " .. dt .. ")", function()
      for _, c in ipairs(cases(dt)) do
        local what, x = dt .. " " .. c[1], c[2]
        if c[1] == "transposed" or c[1] == "sliced" then assert.is_false(x:is_contiguous(), what) end
        gpu.save(tmp("rt.npy"), x)
        same(gpu.load(tmp("rt.npy")), x, what .. " .npy")
        gpu.savez(tmp("rt.npz"), { a = x, b = x })
        local z = gpu.loadz(tmp("rt.npz"))
        same(z.a, x, what .. " .npz")
        same(z.b, x, what .. " .npz")
        gpu.savez_compressed(tmp("rtc.npz"), { a = x })
        same(gpu.load(tmp("rtc.npz")).a, x, what .. " compressed .npz")
        if gpu._dtypes[dt].safetensors then
          gpu.save_safetensors(tmp("rt.safetensors"), { a = x })
          same(gpu.load_safetensors(tmp("rt.safetensors")).a, x, what .. " safetensors")
        else
          fails({ "safetensors has no dtype for " .. dt }, gpu.save_safetensors, tmp("rt.safetensors"), { a = x })
        end
      end
    end)
  end
end)

describe("empty archives", function()
  it("savez and save_safetensors of no arrays load back as empty tables", function()
    gpu.savez(tmp("none.npz"), {})
    assert.are.same({}, gpu.load(tmp("none.npz")))      -- a zip of no members starts "PK\5\6"
    assert.are.same({}, gpu.loadz(tmp("none.npz")))
    gpu.save_safetensors(tmp("none.safetensors"), {})
    local t, meta = gpu.load_safetensors(tmp("none.safetensors"))
    assert.are.same({}, t)
    assert.are.same({}, meta)
  end)
end)

describe("wrapped error messages", function()
  -- a message made of a callee's message used to be formatted into its own buffer
  it("say the fault once: 'bad header (array is too big ...)'", function()
    local dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }"
    local pad = 64 - (10 + #dict + 1) % 64
    spit(tmp("huge.npy"), "\x93NUMPY\1\0" .. string.pack("<I2", #dict + 1 + pad) .. dict .. (" "):rep(pad) .. "\n")
    local err = fails({ "gpu.load: '" .. tmp("huge.npy") .. "': bad header (array is too big (about 1.21e+24 elements))" },
                      gpu.load, tmp("huge.npy"))
    assert.is_nil(err:find("bad header (bad header", 1, true), err)
    local hdr = '{"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,0]}}'
    spit(tmp("huge.safetensors"), string.pack("<I8", #hdr) .. hdr)
    fails({ "gpu.load_safetensors: '" .. tmp("huge.safetensors") .. "': tensor 'a': array is too big (about 1.21e+24 elements)" },
          gpu.load_safetensors, tmp("huge.safetensors"))
  end)
end)
