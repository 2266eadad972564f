-- Ctrl-C stops one long op: the gpulua binary runs an op that would
-- take seconds or hours, gets SIGINT ~0.3 s into it, and must end within a second with
-- "<op>: interrupted"; in the REPL the next line still runs. Every case starts
-- $GPULUA_BIN (./gpulua-asan under make test-asan) as a subprocess on the cpu, so the
-- specs are the same under either host.

local BIN = os.getenv("GPULUA_BIN") or "./gpulua"
-- the target is 0.5 s; CI is a loaded shared machine, and ASan slows every loop down
local LIMIT_MS = os.getenv("GPULUA_ASAN") and 2500 or 1000

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end

local tmp

-- Runs `BIN args...` in the background with 'stdin' as its input; once the program has
-- created the file READY (the code does it just before its long op), waits 'delay'
-- seconds and sends SIGINT. Answers the exit status, the milliseconds from the signal to
-- the exit, stdout and stderr.
local function interrupt(args, opts)
  opts = opts or {}
  local ready = tmp .. "/ready"
  local parts = { "env -u LUA_INIT -u LUA_INIT_5_4", q(BIN), "--device cpu" }
  for _, a in ipairs(args) do parts[#parts + 1] = q(a:gsub("READY", ready)) end
  local stdin = tmp .. "/stdin"
  local f = assert(io.open(stdin, "wb"))
  f:write(((opts.stdin or ""):gsub("READY", ready)))
  f:close()
  local sh = table.concat(parts, " ") .. " <" .. q(stdin) .. " >" .. q(tmp .. "/out") ..
             " 2>" .. q(tmp .. "/err") .. " & pid=$!\n" ..
             "i=0; while [ ! -e " .. q(ready) .. " ] && [ $i -lt 6000 ] && kill -0 $pid 2>/dev/null; do" ..
             " sleep 0.01; i=$((i + 1)); done\n" ..
             "sleep " .. (opts.delay or 0.3) .. "\n" ..
             "t0=$(date +%s%N); kill -INT $pid\n" ..
             -- an op that does not stop is killed after 10 s, so a failure cannot hang the
             -- suite; the watchdog ends soon after the program (and keeps off the pipe)
             "( i=0; while [ $i -lt 100 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done;" ..
             " kill -KILL $pid 2>/dev/null ) >/dev/null 2>&1 &\n" ..
             "wait $pid; rc=$?; t1=$(date +%s%N)\n" ..
             "echo $rc $(( (t1 - t0) / 1000000 ))\n"
  local p = assert(io.popen(sh, "r"))
  local status, ms = p:read("a"):match("(%d+) (%d+)")
  p:close()
  return { status = tonumber(status), ms = tonumber(ms), out = slurp(tmp .. "/out"),
           err = slurp(tmp .. "/err") }
end

-- one op under `gpulua -e`: READY, then the op
local function op_case(setup, op)
  return interrupt({ "-e", setup .. "; io.open('READY', 'w'):close(); " .. op .. "; print('finished')" })
end

local function assert_stopped(r, name)
  assert.are.equal(1, r.status, r.err)
  assert.truthy(r.err:find(": " .. name .. ": interrupted\n", 1, true), r.err)
  assert.are.equal("", r.out)
  assert.truthy(r.ms < LIMIT_MS, ("%s stopped %d ms after SIGINT (limit %d)"):format(name, r.ms, LIMIT_MS))
end

describe("SIGINT during one long op", function()
  before_each(function()
    local p = assert(io.popen("mktemp -d"))
    tmp = p:read("l")
    p:close()
  end)
  after_each(function() os.execute("rm -rf " .. q(tmp)) end)

  -- a broadcast axis that is reduced is counted, not looped over; one that is kept is not
  it("stops a reduction over 2^36 elements of an expanded view", function()
    assert_stopped(op_case("local x = gpu.random.rand(4096):expand(2^24, 4096)", "x:sum(2)"), "sum")
  end)

  it("stops an elementwise op between spans of its rows", function()
    -- 2^30 results (4 GiB, written lazily): seconds of work
    assert_stopped(op_case("local x = gpu.ones(1):expand(2^30)", "x:tanh()"), "tanh")
  end)

  it("stops a copy with conversion", function()
    assert_stopped(op_case("local x = gpu.ones(1):expand(2^30)", "x:astype('float16')"), "astype")
  end)

  -- 8e10 multiply-adds (seconds), in panels of K about 50 ms each
  local mm_setup = "local a = gpu.ones({2000, 20000}, {dtype = 'float64'}); local b = a.T:contiguous()"

  it("stops a big matmul between BLAS panels", function()
    assert_stopped(op_case(mm_setup, "a:matmul(b)"), "matmul")
  end)

  -- 5e7 float64 keys: about 1 s of radix passes (fewer could finish inside the 0.3 s before
  -- the signal; the sort looks for Ctrl-C between passes, so each pass must stay well under
  -- the limit)
  it("stops a sort inside its passes", function()
    assert_stopped(op_case("local x = gpu.random.rand(5e7, {dtype = 'float64'})", "x:sort()"), "sort")
  end)

  -- float32 values alone sort by buckets (about 0.6 s for 2.5e8 here): it looks for Ctrl-C
  -- after its scatter and between buckets
  it("stops a bucketed sort of float32 values", function()
    assert_stopped(op_case("local x = gpu.random.rand(2.5e8)", "x:sort()"), "sort")
  end)

  it("a Ctrl-C in Lua code leaves no request behind for the next op", function()
    local r = op_case("local ok", "ok = pcall(function() while true do end end); print(ok, gpu.ones(3):sum():item())")
    assert.are.equal(0, r.status, r.err)
    assert.are.equal("false\t3.0\nfinished\n", r.out)
  end)

  it("raises one catchable error: inputs intact, output released, the next op runs", function()
    local r = op_case(mm_setup .. "; local before = gpu.memory().allocated",
      "local ok, e = pcall(function() return a:matmul(b) end); print(ok, e); " ..
      "print(gpu.memory().allocated == before, a:sum():item(), b:sum():item(), gpu.ones(4):sum():item())")
    assert.are.equal(0, r.status, r.err)
    assert.truthy(r.out:find("^false\t[^\n]*matmul: interrupted\ntrue\t40000000%.0\t40000000%.0\t4%.0\nfinished\n$"),
                  r.out)
    assert.are.equal("", r.err)
  end)
end)

describe("SIGINT in the REPL", function()
  before_each(function()
    local p = assert(io.popen("mktemp -d"))
    tmp = p:read("l")
    p:close()
  end)
  after_each(function() os.execute("rm -rf " .. q(tmp)) end)

  it("stops the long op of one line; the next line runs", function()
    local r = interrupt({ "-i" }, {
      stdin = "io.open('READY', 'w'):close(); x = gpu.random.rand(4096):expand(2^24, 4096):sum(2)\nprint('alive')\n" })
    assert.are.equal(0, r.status, r.err)
    assert.truthy(r.err:find("sum: interrupted\n", 1, true), r.err)
    assert.truthy(r.out:find("\nalive\n", 1, true), r.out)
    assert.truthy(r.ms < LIMIT_MS, r.ms)
  end)

  it("a Ctrl-C between ops makes one error, not a failed op on the next line", function()
    local r = interrupt({ "-i" }, {
      stdin = "io.open('READY', 'w'):close(); while true do end\nprint(gpu.ones(3):sum():item())\n" })
    assert.are.equal(0, r.status, r.err)
    assert.truthy(r.err:find("interrupted!", 1, true), r.err)
    assert.falsy(r.err:find("sum: interrupted", 1, true), r.err)
    assert.truthy(r.out:find("\n3.0\n", 1, true), r.out)
  end)
end)

-- The panels that make a big gemm interruptible must give the product one BLAS call
-- gives: on small-integer data every sum is exact, so the panelled product equals the
-- sum (or the stack) of products small enough to be one call each.
describe("a gemm in panels", function()
  local gpu = require "gpu"
  local function ints(dt, ...) return gpu.random.randint(0, 2, { ... }):astype(dt) end
  local function same(x, y) return (x - y):abs():max():item() == 0 end

  for _, dt in ipairs({ "float32", "float64" }) do
    it("of K (2.3e9 multiply-adds) equals the sum of two halves of K, " .. dt, function()
      gpu.random.seed(7)
      local a, b = ints(dt, 64, 40000), ints(dt, 40000, 900)
      local half = a[{ ":", { 1, 20000 } }]:matmul(b[{ { 1, 20000 }, ":" }]) +
                   a[{ ":", { 20001, 40000 } }]:matmul(b[{ { 20001, 40000 }, ":" }])
      assert.is_true(same(a:matmul(b), half))
      local at = a.T:contiguous().T                  -- a transposed layout
      assert.is_true(same(at:matmul(b), half))
      local a3 = gpu.stack({ a, a })                 -- batched, b broadcast
      assert.is_true(same(a3:matmul(b)[2], half))
    end)
  end

  it("of rows (K too short for panels of K) equals products of row blocks", function()
    gpu.random.seed(8)
    local a, b = ints("float32", 4000, 300), ints("float32", 300, 2000)
    local c = a:matmul(b)
    assert.is_true(same(c[{ { 1, 2000 }, ":" }], a[{ { 1, 2000 }, ":" }]:matmul(b)))
    assert.is_true(same(c[{ { 2001, 4000 }, ":" }], a[{ { 2001, 4000 }, ":" }]:matmul(b)))
    local ct = b.T:matmul(a.T)                       -- the columns form
    assert.is_true(same(ct[{ ":", { 2001, 4000 } }], b.T:matmul(a[{ { 2001, 4000 }, ":" }].T)))
  end)
end)
