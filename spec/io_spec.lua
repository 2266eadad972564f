-- spec/io_spec.lua — arrays in and out of files: .npy/.npz (against files NumPy wrote,
-- spec/fixtures/npy, made by tools/gen_npy_fixtures.py), safetensors, text; atomic
-- saves; hostile files (truncated, lying, oversized) and the fuzzers' finds.
local h = require "spec.helper"
local slurp = h.slurp
local spit = h.spit
local gpu = h.gpu

local FIX = "spec/fixtures/npy/"
local expected = dofile(FIX .. "expected.lua")

local tmpdir, tmp = h.tmpdir()
local function listdir(d)
  local p = io.popen("ls -A " .. d)
  local out = {}
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  table.sort(out)
  return out
end

-- the array matches an expected.lua entry: dtype, shape, values (exactly; a complex
-- array's as its (re, im) pairs)
local function check(x, e)
  assert.are.equal(e.dtype, x.dtype)
  assert.are.same(e.shape, x.shape)
  if gpu._dtypes[x.dtype].kind == "complex" then x = gpu.view_as_real(x) end
  h.assert_close(x, e.values, 0)
end

-- a's elements equal b's, bit for bit where they are numbers (complex as (re, im) pairs)
local function same_values(a, b)
  assert.are.equal(a.dtype, b.dtype)
  assert.are.same(a.shape, b.shape)
  if gpu._dtypes[a.dtype].kind == "complex" then a, b = gpu.view_as_real(a), gpu.view_as_real(b) end
  h.assert_close(a:cpu(), b:cpu(), 0)
end

local fails = h.fails

-- an .npy v1 file with the given header dict and data bytes (header padded as NumPy)
local function npy(dict, data)
  local hl = #dict + 1
  local pad = 64 - (10 + hl) % 64
  return "\x93NUMPY\1\0" .. string.pack("<I2", hl + pad) .. dict .. (" "):rep(pad) .. "\n" .. (data or "")
end

local npy_names = {}
for name in pairs(expected) do
  if name:match("%.npy$") then npy_names[#npy_names + 1] = name end
end
table.sort(npy_names)

describe("gpu.load of files NumPy wrote", function()
  for _, d in ipairs(h.devices()) do
    for _, name in ipairs(npy_names) do
      it(name .. " on " .. d, function()
        local x = gpu.load(FIX .. name, { device = d })
        assert.are.equal(d == "cpu" and "cpu" or "cuda:0", x.device)
        check(x:cpu(), expected[name])
      end)
    end
  end

  it("reads Fortran order as the logical array, contiguous", function()
    local x = gpu.load(FIX .. "float32_fortran.npy")
    assert.is_true(x:is_contiguous())
    assert.are.equal(1.5 * 4, x[{ 2, 1 }])               -- row 2, column 1 of arange(12)*1.5 (3,4)
    local y = gpu.load(FIX .. "int64_fortran_3d.npy")
    assert.are.equal(1 * 12 + 2 * 4 + 3, y[{ 2, 3, 4 }])
  end)

  it("byte-swaps big-endian data", function()
    h.assert_close(gpu.load(FIX .. "float32_be.npy"), gpu.load(FIX .. "float32.npy"), 0)
    h.assert_close(gpu.load(FIX .. "int64_be.npy"), gpu.load(FIX .. "int64.npy"), 0)
    h.assert_close(gpu.load(FIX .. "float16_be.npy"), gpu.load(FIX .. "float16.npy"), 0)
  end)

  it("converts with {dtype=}", function()
    local x = gpu.load(FIX .. "int32.npy", { dtype = "float64" })
    assert.are.equal("float64", x.dtype)
    h.assert_close(x, expected["int32.npy"].values, 0)
  end)
end)

describe("gpu.save writes what np.save writes", function()
  for _, d in ipairs(h.devices()) do
    -- every fixture np.save wrote from a C-ordered little-endian array, byte for byte
    for _, name in ipairs(npy_names) do
      if not name:match("_be%.npy$") and not name:match("fortran") then
        it(name .. " from " .. d, function()
          local x = gpu.load(FIX .. name, { device = d })
          gpu.save(tmp("out.npy"), x)
          assert.are.equal(slurp(FIX .. name), slurp(tmp("out.npy")))
        end)
      end
    end
    it("C order and little-endian whatever the source, from " .. d, function()
      gpu.save(tmp("be.npy"), gpu.load(FIX .. "int64_be.npy", { device = d }))
      assert.are.equal(slurp(FIX .. "int64.npy"), slurp(tmp("be.npy")))
      local x = gpu.load(FIX .. "float32_fortran.npy", { device = d })
      x:save(tmp("f.npy"))                                       -- the method form
      local y = gpu.load(tmp("f.npy"))
      check(y, expected["float32_fortran.npy"])
    end)
    it("views (transposed, sliced) as their logical array, from " .. d, function()
      local x = gpu.arange(12, { dtype = "int32", device = d }):reshape(3, 4)
      local v = x.T[{ { 2, 4 }, ":" }]
      gpu.save(tmp("v.npy"), v)
      h.assert_close(gpu.load(tmp("v.npy")), v:cpu(), 0)
    end)
  end

  it("a file saved from any device loads on the cpu", function()
    for _, d in ipairs(h.devices()) do
      local x = gpu.arange(7, { dtype = "float16", device = d })
      gpu.save(tmp("dev.npy"), x)
      local y = gpu.load(tmp("dev.npy"), { device = "cpu" })
      assert.are.equal("cpu", y.device)
      h.assert_close(y, x:cpu(), 0)
    end
  end)

  it("round-trips every dtype", function()
    for _, dt in ipairs(h.dtypes()) do
      local x = gpu.array({ { 1, 0, 3 }, { 0, 5, 6 } }, { dtype = dt })
      gpu.save(tmp(dt .. ".npy"), x)
      local y = gpu.load(tmp(dt .. ".npy"))
      assert.are.equal(dt, y.dtype)
      h.assert_close(y, x, 0)
    end
  end)

  it("round-trips an empty array whose other extent is 2^62, the largest one; refuses one more", function()
    local x = gpu.empty({ 0, 2 ^ 62 })
    gpu.save(tmp("wide.npy"), x)
    local y = gpu.load(tmp("wide.npy"))
    assert.same({ 0, 2 ^ 62 }, y.shape)
    local bytes = slurp(tmp("wide.npy")):gsub("4611686018427387904", "4611686018427387905")
    spit(tmp("wider.npy"), bytes)
    h.fails({ "gpu.load", "dimension too large" }, gpu.load, tmp("wider.npy"))
  end)
end)

describe("npz", function()
  for _, d in ipairs(h.devices()) do
    for _, file in ipairs { "stored.npz", "deflated.npz" } do
      it("loads NumPy's " .. file .. " on " .. d, function()
        local t = gpu.loadz(FIX .. file, { device = d })
        for _, n in ipairs { "a", "b", "c", "d", "e" } do check(t[n]:cpu(), expected["npz:" .. n]) end
        local u = gpu.load(FIX .. file)                           -- load dispatches on the magic
        check(u.b, expected["npz:b"])
      end)
    end
    it("savez and savez_compressed round-trip from " .. d, function()
      local t = { w = gpu.arange(6, { device = d }):reshape(2, 3), ["name with space"] = gpu.array({ true, false }),
                  e = gpu.zeros({ 0, 2 }, { dtype = "int64", device = d }),
                  z = gpu.view_as_complex(gpu.array({ { 1, -2 }, { 0.5, 3 } }, { dtype = "float64", device = d })),
                  u = gpu.array({ 65535, 0 }, { dtype = "uint16", device = d }) }
      gpu.savez(tmp("s.npz"), t)
      gpu.savez_compressed(tmp("c.npz"), t)
      gpu.savez(tmp("c2.npz"), t, { compressed = true })
      for _, f in ipairs { "s.npz", "c.npz", "c2.npz" } do
        local u = gpu.loadz(tmp(f))
        for k, v in pairs(t) do same_values(u[k], v) end
      end
      -- each member is the .npy np.save would write
      local raw = slurp(tmp("s.npz"))
      gpu.save(tmp("w.npy"), t.w)
      assert.is_truthy(raw:find(slurp(tmp("w.npy")), 1, true))
      assert.is_true(#slurp(tmp("c.npz")) < #raw)
    end)
  end
  it("rejects keys that are not strings and values that are not arrays", function()
    local x = gpu.ones(2)
    fails({ "savez", "names must be strings" }, gpu.savez, tmp("k.npz"), { x })
    fails({ "savez", "'a' is not a gpu.array" }, gpu.savez, tmp("k.npz"), { a = 1 })
    assert.is_nil(io.open(tmp("k.npz")))
    h.assert_close(x, { 1, 1 }, 0)
  end)
end)

describe("safetensors", function()
  for _, d in ipairs(h.devices()) do
    it("loads a file with metadata on " .. d, function()
      local t, meta = gpu.load_safetensors(FIX .. "model.safetensors", { device = d })
      for _, n in ipairs { "w", "b", "h", "i", "u", "z" } do check(t[n]:cpu(), expected["st:" .. n]) end
      assert.are.same({ format = "pt", note = "caf\u{e9}" }, meta)
    end)
    it("round-trips every dtype it has a name for and the metadata from " .. d, function()
      local t = {}
      for _, row in ipairs(gpu._dtypes) do
        local x = gpu.array({ { 1, 0 }, { 3, 1 } }, { dtype = row.name, device = d })
        if row.safetensors then
          t[row.name] = x
        else                                   -- complex128: none in the format
          fails({ "save_safetensors", "tensor 'x': safetensors has no dtype for " .. row.name },
                gpu.save_safetensors, tmp("none.safetensors"), { x = x })
        end
      end
      assert.is_nil(io.open(tmp("none.safetensors")))
      t.cplx = gpu.view_as_complex(gpu.array({ { 1.5, -2 }, { 0, 0.25 } }, { device = d }))
      t.empty = gpu.zeros({ 0 }, { device = d })
      t.scalar = gpu.full({}, 7, { dtype = "int64", device = d })
      gpu.save_safetensors(tmp("m.safetensors"), t, { ["quote\"key"] = "line\nbreak", v = "1" })
      local u, meta = gpu.load_safetensors(tmp("m.safetensors"))
      for k, v in pairs(t) do same_values(u[k], v) end
      assert.are.same({ ["quote\"key"] = "line\nbreak", v = "1" }, meta)
      local raw = slurp(tmp("m.safetensors"))
      assert.are.equal(0, string.unpack("<I8", raw) % 8)      -- header padded to 8 bytes
    end)
  end
  it("refuses a tensor named __metadata__ and metadata that is not strings", function()
    fails({ "__metadata__" }, gpu.save_safetensors, tmp("x.st"), { __metadata__ = gpu.ones(1) })
    fails({ "metadata must map strings to strings" }, gpu.save_safetensors, tmp("x.st"), { a = gpu.ones(1) }, { k = 1 })
  end)
end)

describe("text", function()
  it("loadtxt reads CSV with comments, blank lines and skipped rows", function()
    local x = gpu.loadtxt(FIX .. "table.csv", { delimiter = ",", skip = 2, dtype = "float64" })
    check(x, expected["table.csv"])
  end)
  it("complex and uint64 text as NumPy writes and reads it", function()
    for _, c in ipairs { { "savetxt_complex.txt", "savetxt:z", {} }, { "savetxt_uint64.txt", "savetxt:u64", { fmt = "%d" } } } do
      local e = expected[c[2]]
      local x = gpu.loadtxt(FIX .. c[1], { dtype = e.dtype })
      check(x, e)
      gpu.savetxt(tmp("t.txt"), x, c[3])
      assert.are.equal(slurp(FIX .. c[1]), slurp(tmp("t.txt")))          -- byte for byte np.savetxt's
    end
    spit(tmp("c.txt"), "1+2j (1-2j) 3j -2.5 1e3+-1e-2J (nan+infj)\n")
    local z = gpu.loadtxt(tmp("c.txt"), { dtype = "complex64" })
    h.assert_close(gpu.view_as_real(z), { 1, 2, 1, -2, 0, 3, -2.5, 0, 1e3, -1e-2, 0 / 0, 1 / 0 }, 1e-7)
    fails({ "loadtxt", "column 2: '1+2' is not a complex number" }, function()
      spit(tmp("c.txt"), "1 1+2\n")
      return gpu.loadtxt(tmp("c.txt"), { dtype = "complex128" })
    end)
    fails({ "savetxt", "an integer format for complex64" }, gpu.savetxt, tmp("c.txt"), z, { fmt = "%d" })
    fails({ "loadtxt", "line 2, column 1: 9223372036854775808 out of range of uint32" },
          gpu.loadtxt, FIX .. "savetxt_uint64.txt", { dtype = "uint32" })
  end)
  it("loadtxt reads NumPy's savetxt output, whitespace-separated", function()
    check(gpu.loadtxt(FIX .. "savetxt_default.txt", { dtype = "float64" }), expected["savetxt:t"])
    local y = gpu.loadtxt(FIX .. "savetxt_csv.txt", { delimiter = ",", dtype = "int64" })
    assert.are.same({ 2, 3 }, y.shape)
    h.assert_close(y, { 1, -2, 3, 4, 5, -6 }, 0)
  end)
  it("squeezes a single row or column as NumPy does", function()
    spit(tmp("row.txt"), "1 2 3\n")
    assert.are.same({ 3 }, gpu.loadtxt(tmp("row.txt")).shape)
    spit(tmp("col.txt"), "1\n2\n")
    assert.are.same({ 2 }, gpu.loadtxt(tmp("col.txt")).shape)
    spit(tmp("one.txt"), "5\n")
    assert.are.equal(0, gpu.loadtxt(tmp("one.txt")).ndim)
    spit(tmp("none.txt"), "# nothing\n")
    assert.are.same({ 0 }, gpu.loadtxt(tmp("none.txt")).shape)
  end)
  it("savetxt writes what np.savetxt writes", function()
    for _, d in ipairs(h.devices()) do
      local t = gpu.load(FIX .. "float64.npy", { device = d }) * 0 + gpu.array({ { 1.5, -2.0, 3.25 }, { 4.0, 5.5, -6.125 } }, { dtype = "float64", device = d })
      gpu.savetxt(tmp("t.txt"), t)
      assert.are.equal(slurp(FIX .. "savetxt_default.txt"), slurp(tmp("t.txt")))
      t:astype("int64"):savetxt(tmp("t.csv"), { fmt = "%d", delimiter = "," })
      assert.are.equal(slurp(FIX .. "savetxt_csv.txt"), slurp(tmp("t.csv")))
    end
  end)
  it("savetxt checks the format and the array's rank", function()
    local x = gpu.ones(2, 2)
    fails({ "savetxt", "%s" }, gpu.savetxt, tmp("bad.txt"), x, { fmt = "%s" })
    fails({ "savetxt", "more than one conversion" }, gpu.savetxt, tmp("bad.txt"), x, { fmt = "%f %f" })
    fails({ "savetxt", "no conversion" }, gpu.savetxt, tmp("bad.txt"), x, { fmt = "x" })
    fails({ "savetxt", "1-D or 2-D" }, gpu.savetxt, tmp("bad.txt"), gpu.ones(2, 2, 2))
    fails({ "savetxt", "unknown option 'fnt'" }, gpu.savetxt, tmp("bad.txt"), x, { fnt = "%d" })
    assert.is_nil(io.open(tmp("bad.txt")))
  end)
  it("loadtxt names the line of a ragged row or a bad number", function()
    spit(tmp("ragged.txt"), "1 2\n3 4 5\n")
    fails({ "gpu.loadtxt: '" .. tmp("ragged.txt") .. "': line 2: 3 columns where earlier rows have 2" }, gpu.loadtxt, tmp("ragged.txt"))
    spit(tmp("nan.csv"), "1,x\n")
    fails({ "line 1, column 2: 'x' is not a decimal number" }, gpu.loadtxt, tmp("nan.csv"), { delimiter = "," })
    spit(tmp("empty.csv"), "1,,2\n")
    fails({ "line 1, column 2: empty field" }, gpu.loadtxt, tmp("empty.csv"), { delimiter = "," })
    spit(tmp("big.txt"), "300\n")
    fails({ "out of range of uint8" }, gpu.loadtxt, tmp("big.txt"), { dtype = "uint8" })
    spit(tmp("long.txt"), ("1"):rep(500) .. "\n")
    fails({ "field too long" }, gpu.loadtxt, tmp("long.txt"))
  end)
end)

describe("saves are atomic", function()
  it("a failed save leaves the existing file and no temporary", function()
    local dir = tmp("atomic")
    os.execute("mkdir -p " .. dir .. "/target.npy")              -- rename over a directory fails
    local x = gpu.ones(3)
    fails({ "gpu.save: '" .. dir .. "/target.npy'" }, gpu.save, dir .. "/target.npy", x)
    assert.are.same({ "target.npy" }, listdir(dir))
    fails({ "gpu.savez: '" .. dir .. "/target.npy'" }, gpu.savez, dir .. "/target.npy", { x = x })
    fails({ "gpu.save_safetensors" }, gpu.save_safetensors, dir .. "/target.npy", { x = x })
    fails({ "gpu.savetxt" }, gpu.savetxt, dir .. "/target.npy", x)
    assert.are.same({ "target.npy" }, listdir(dir))
    h.assert_close(x, { 1, 1, 1 }, 0)
    fails({ "gpu.save: '" .. dir .. "/no/such/dir.npy': cannot create" }, gpu.save, dir .. "/no/such/dir.npy", x)
  end)
  it("a save replaces an existing file whole", function()
    gpu.save(tmp("r.npy"), gpu.ones(1000))
    gpu.save(tmp("r.npy"), gpu.zeros(2))
    h.assert_close(gpu.load(tmp("r.npy")), { 0, 0 }, 0)
  end)
end)

describe("hostile .npy files", function()
  local good = slurp(FIX .. "float32.npy")
  local function bad(bytes, pieces)
    local p = tmp("bad.npy")
    spit(p, bytes)
    table.insert(pieces, 1, "gpu.load: '" .. p .. "': ")
    return fails(pieces, gpu.load, p)
  end
  it("truncated data names the sizes", function()
    bad(good:sub(1, -5), { "truncated data (expected 24 bytes, found 20)" })
    bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }", ("\0"):rep(12)),
        { "truncated data (expected 4000 bytes, found 12)" })
  end)
  it("truncated header, wrong magic, empty file, missing file", function()
    bad(good:sub(1, 30), { "truncated header" })
    bad(good:sub(1, 7), { "truncated header" })
    bad("hello, world", { "not a .npy file (bad magic)" })
    bad("", { "bad magic" })
    fails({ "gpu.load: '" .. tmp("missing.npy") .. "': cannot open (No such file or directory)" }, gpu.load, tmp("missing.npy"))
    fails({ "gpu.load: '" .. tmpdir .. "': not a regular file" }, gpu.load, tmpdir)
  end)
  it("oversized header and unsupported versions", function()
    bad("\x93NUMPY\2\0" .. string.pack("<I4", 0x7fffffff) .. "{}", { "oversized header (2147483647 bytes" })
    bad("\x93NUMPY\1\0" .. string.pack("<I2", 0xffff) .. "{}", { "truncated header (expected 65535 bytes" })
    bad("\x93NUMPY\9\0" .. ("\0"):rep(60), { "unsupported .npy version 9.0" })
  end)
  it("size mismatches, huge shapes and lying dtypes", function()
    bad(good .. "xxxx", { "size mismatch (shape (2,3) of float32 needs 24 data bytes, found 28)" })
    bad(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", good:sub(-24)), { "truncated data (expected 48 bytes, found 24)" })
    bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }", "x"), { "bad header" })
    bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", "x"), { "bad header" })
    bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", "x"), { "dimension too large" })
    bad(npy("{'descr': '<c32', 'fortran_order': False, 'shape': (1,), }", ("\0"):rep(32)), { "unsupported dtype '<c32'" })
    bad(npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", ("\0"):rep(8)), { "unsupported dtype '|O'" })
    bad(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", ("\0"):rep(4)), { "structured" })
    bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,2,3,4,5,6,7,8,9), }", ""), { "more than 8 dimensions" })
  end)
  it("malformed header dicts", function()
    bad(npy("{'descr': '<f4', 'shape': (1,), }", "aaaa"), { "missing 'fortran_order'" })
    bad(npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", "aaaa"), { "fortran_order" })
    bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "aaaa"), { "unknown key 'x'" })
    bad(npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "aaaa"), { "twice" })
    bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "aaaa"), { "non-negative" })
    bad(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1), }", "aaaa"), { "expected a tuple" })
    bad(npy("{'descr': '<f4 ", ""), { "bad header" })
    bad(npy("[]", ""), { "expected a dict" })
  end)
  it("bool bytes other than 0 and 1 load as true", function()
    local p = tmp("b.npy")
    spit(p, npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", "\0\2\255"))
    local x = gpu.load(p)
    assert.are.same({ false, true, true }, x:totable())
    assert.are.equal(2, x:sum():item())
  end)
end)

describe("hostile .npz files", function()
  local stored, deflated = slurp(FIX .. "stored.npz"), slurp(FIX .. "deflated.npz")
  local function bad(bytes, pieces)
    local p = tmp("bad.npz")
    spit(p, bytes)
    table.insert(pieces, 1, "gpu.loadz: '" .. p .. "': ")
    return fails(pieces, gpu.loadz, p)
  end
  it("truncated archives", function()
    bad(stored:sub(1, #stored // 2), { "truncated zip" })
    bad(stored:sub(1, -2), { "zip" })
    bad("PK\3\4", { "zip" })
    bad("not a zip at all, not a zip at all", { "not a zip file (bad magic)" })
  end)
  it("corrupt deflate data and CRC mismatches", function()
    -- flip a byte in the middle of the first member's compressed bytes
    local i = 30 + #"a.npy" + 20 + 10
    local c = deflated:sub(1, i - 1) .. string.char(deflated:byte(i) ~ 0xff) .. deflated:sub(i + 1)
    bad(c, { "member 'a.npy'" })
    -- a stored member's data changed: the CRC catches it
    local j = stored:find("\x93NUMPY", 1, true) + 130
    local s = stored:sub(1, j - 1) .. string.char(stored:byte(j) ~ 1) .. stored:sub(j + 1)
    bad(s, { "member 'a.npy': CRC mismatch" })
  end)
  it("a member claiming more than its bytes can inflate to", function()
    -- central directory entry of the first member: uncompressed size at +24
    local cd = deflated:find("PK\1\2", 1, true)
    local z = deflated:sub(1, cd + 23) .. string.pack("<I4", 0xfffffff0) .. deflated:sub(cd + 28)
    bad(z, { "member 'a.npy': size 4294967280 cannot inflate from" })
  end)
  it("members sharing bytes (a small file claiming many arrays)", function()
    local cd1 = stored:find("PK\1\2", 1, true)
    local cd2 = stored:find("PK\1\2", cd1 + 1, true)
    local s = stored:sub(1, cd2 + 41) .. string.pack("<I4", 0) .. stored:sub(cd2 + 46)
    bad(s, { "overlap" })
  end)
  it("a member that is not an .npy names the member", function()
    local cd = stored:find("\x93NUMPY", 1, true)
    local s = stored:sub(1, cd - 1) .. "X" .. stored:sub(cd + 1)
    bad(s, { "member 'a.npy'" })
  end)
end)

describe("hostile safetensors files", function()
  local function st(header, data)
    return string.pack("<I8", #header) .. header .. (data or "")
  end
  local function bad(bytes, pieces)
    local p = tmp("bad.safetensors")
    spit(p, bytes)
    table.insert(pieces, 1, "gpu.load_safetensors: '" .. p .. "': ")
    return fails(pieces, gpu.load_safetensors, p)
  end
  local T = '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
  it("accepts the minimal good file this suite corrupts", function()
    local p = tmp("good.safetensors")
    spit(p, st(T, ("\0"):rep(8)))
    assert.are.same({ 2 }, gpu.load_safetensors(p).a.shape)
  end)
  it("truncated, oversized and not-JSON headers", function()
    bad("abc", { "truncated file" })
    bad(string.pack("<I8", 1 << 40) .. "{}", { "oversized header" })
    bad(string.pack("<I8", 100) .. "{}", { "truncated header (expected 100 bytes, found 2)" })
    bad(st("[]"), { "not a safetensors file" })
    bad(st('{"a":'), { "bad JSON header" })
    bad(st('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}'), { "bad JSON header" })
    bad(st('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} x', ("\0"):rep(8)), { "text after the object" })
    bad(st('{"a\\q":{}}'), { "bad escape" })
    bad(st('{"\\ud800":{}}'), { "unpaired surrogate" })
    bad(st('{"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}}'), { "expected an integer" })
    bad(st('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":' .. ("["):rep(100) .. ("]"):rep(100) .. '}}'), { "nested too deeply" })
  end)
  it("offsets that overlap, leave gaps, run backwards or past the data", function()
    bad(st('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', ("\0"):rep(8)),
        { "overlapping data_offsets" })
    bad(st('{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', ("\0"):rep(8)), { "gap in the data" })
    bad(st('{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}', ("\0"):rep(8)), { "run backwards" })
    bad(st(T, ("\0"):rep(4)), { "tensor 'a': truncated data" })
    bad(st(T, ("\0"):rep(12)), { "size mismatch (tensors cover 8 data bytes, the file has 12)" })
  end)
  it("shapes that disagree with the bytes, unknown dtypes, missing keys", function()
    bad(st('{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', ("\0"):rep(8)), { "tensor 'a': size mismatch" })
    bad(st('{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}}', ("\0"):rep(8)), { "tensor 'a'" })
    bad(st('{"a":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}}', ("\0"):rep(8)), { "unsupported dtype 'F8_E4M3'" })
    bad(st('{"a":{"dtype":"F32","shape":[2]}}', ("\0"):rep(8)), { "missing 'data_offsets'" })
    bad(st('{"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}', ("\0"):rep(8)), { "twice" })
    bad(st('{"__metadata__":{"k":1},' .. T:sub(2), ("\0"):rep(8)), { "not a string" })
  end)
end)

describe("io argument errors", function()
  it("name the function and the fault", function()
    fails({ "bad argument #1 to", "string expected" }, gpu.load, nil)
    fails({ "to 'gpu.load' (unknown option 'devise'; did you mean 'device'?)" }, gpu.load, FIX .. "int32.npy", { devise = "cpu" })
    fails({ "bad argument #2", "gpu.array expected" }, gpu.save, tmp("x.npy"), 42)
    fails({ "option 'skip' must be >= 0, got integer -1" }, gpu.loadtxt, FIX .. "table.csv", { skip = -1 })
    fails({ "option 'delimiter' must be one character" }, gpu.loadtxt, FIX .. "table.csv", { delimiter = ",," })
    local x = gpu.ones(2)
    x:close()
    fails({ "closed" }, gpu.save, tmp("closed.npy"), x)
  end)
end)

-- every input the fuzzers found that crashed or hung a parser, kept as a file: loading it
-- must fail cleanly (or succeed), never crash
describe("fuzzer finds", function()
  local loaders = { npy = gpu.load, npz = gpu.loadz, st = gpu.load_safetensors, txt = gpu.loadtxt, idx = gpu.load_idx,
                    png = gpu.image.load }
  for _, name in ipairs(listdir("spec/fixtures/fuzz")) do
    local kind = name:match("^(%a+)%-")
    if loaders[kind] then
      it(name, function()
        local ok, err = pcall(loaders[kind], "spec/fixtures/fuzz/" .. name)
        if not ok then assert.is_truthy(tostring(err):find("'spec/fixtures/fuzz/" .. name .. "'", 1, true), tostring(err)) end
      end)
    end
  end
end)

describe("gpu.isatty", function()
  it("is false for a file, and refuses what is not an open Lua file", function()
    local f = io.tmpfile()
    assert.is_false(gpu.isatty(f))
    f:close()
    local ok, err = pcall(gpu.isatty, f)
    assert.is_false(ok)
    assert.matches("the file is closed", err, 1, true)
    ok, err = pcall(gpu.isatty, 1)
    assert.is_false(ok)
    assert.matches("FILE* expected, got number", err, 1, true)
  end)
end)
