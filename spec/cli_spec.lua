-- The gpulua command as a drop-in for lua5.4: options, `arg`, LUA_INIT,
-- exit statuses, error reports and the REPL, compared with the stock
-- interpreter where they must agree; then the extras (--version, --device,
-- --check).  Runs ./gpulua (relative to the repo root) as a subprocess.

-- GPULUA_BIN lets a sanitizer build (./gpulua-asan) run the same specs
local BIN = os.getenv("GPULUA_BIN") or "./gpulua"
local LUA = os.getenv("BUSTED_LUA") or "lua5.4"   -- the stock interpreter (a path on the GPU machine)
local BIN_PAT = BIN:gsub("%p", "%%%0")

local function q(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function spit(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

local tmp   -- a fresh directory per test

-- Run `prog args...` with opts.stdin (a string), opts.env (name -> value),
-- opts.unset (list of names); answer {status, out, err}.  Every LUA_* variable
-- is cleared unless given, so the caller's environment cannot leak in.
local function run(prog, args, opts)
  opts = opts or {}
  local parts = { "env", "-u LUA_INIT", "-u LUA_INIT_5_4", "-u LUA_PATH",
                  "-u LUA_PATH_5_4", "-u LUA_CPATH", "-u LUA_CPATH_5_4" }
  for _, name in ipairs(opts.unset or {}) do parts[#parts + 1] = "-u " .. name end
  for k, v in pairs(opts.env or {}) do parts[#parts + 1] = k .. "=" .. q(v) end
  parts[#parts + 1] = prog
  for _, a in ipairs(args) do parts[#parts + 1] = q(a) end
  local stdin = tmp .. "/stdin"
  spit(stdin, opts.stdin or "")
  local cmd = table.concat(parts, " ") .. " <" .. q(stdin) ..
              " >" .. q(tmp .. "/out") .. " 2>" .. q(tmp .. "/err") .. "; echo $?"
  local p = assert(io.popen(cmd, "r"))
  local status = tonumber(p:read("a"):match("%d+"))
  p:close()
  return { status = status, out = slurp(tmp .. "/out"), err = slurp(tmp .. "/err") }
end

-- run both interpreters; program names in the output are made neutral
local function both(args, opts)
  local g = run(BIN, args, opts)
  local l = run(LUA, args, opts)
  local function neutral(s) return (s:gsub(BIN_PAT, "PROG"):gsub("lua5%.4", "PROG")) end
  for _, r in ipairs({ g, l }) do
    r.out, r.err = neutral(r.out), neutral(r.err)
  end
  return g, l
end

local function assert_same(args, opts)
  local g, l = both(args, opts)
  assert.are.equal(l.out, g.out)
  assert.are.equal(l.err, g.err)
  assert.are.equal(l.status, g.status)
  return g
end

local function first_line(s) return (s:match("^[^\n]*")) end

describe("gpulua command", function()
  before_each(function()
    local p = assert(io.popen("mktemp -d"))
    tmp = p:read("l")
    p:close()
    assert.truthy(tmp and #tmp > 0)
  end)

  after_each(function()
    os.execute("rm -rf " .. q(tmp))
  end)

  it("exists at " .. BIN, function()
    assert.are.equal(0, run(BIN, { "-e", "" }).status)
  end)

  describe("agrees with lua5.4 on", function()
    it("-e, glued or not, several in order", function()
      local g = assert_same({ "-e", "print(1+1)", "-eprint('x')", "-e", "io.write(_VERSION)" })
      assert.are.equal("2\nx\nLua 5.4", g.out)
    end)

    it("-v (Lua's banner line only)", function()
      local g = assert_same({ "-v" })
      assert.are.equal(0, g.status)
      assert.are.equal(g.out, first_line(g.out) .. "\n")
    end)

    it("-l mod and -l g=mod", function()
      spit(tmp .. "/mymod.lua", "return { answer = 42 }")
      local env = { LUA_PATH = tmp .. "/?.lua" }
      local g = assert_same({ "-l", "mymod", "-lg=mymod", "-e", "print(mymod.answer, g.answer, g == mymod)" },
                            { env = env })
      assert.are.equal("42\t42\ttrue\n", g.out)
      g = assert_same({ "-l", "nosuchmod" }, { env = env })
      assert.are.equal(1, g.status)
    end)

    it("LUA_INIT as code, LUA_INIT as @file, LUA_INIT_5_4 first", function()
      local g = assert_same({ "-e", "print(x)" }, { env = { LUA_INIT = "x = 'code'" } })
      assert.are.equal("code\n", g.out)
      spit(tmp .. "/init.lua", "x = 'file'")
      g = assert_same({ "-e", "print(x)" }, { env = { LUA_INIT = "@" .. tmp .. "/init.lua" } })
      assert.are.equal("file\n", g.out)
      g = assert_same({ "-e", "print(x)" }, { env = { LUA_INIT = "x = 'old'", LUA_INIT_5_4 = "x = 'new'" } })
      assert.are.equal("new\n", g.out)
      g = assert_same({ "-e", "print(x)" }, { env = { LUA_INIT = "error('in init')" } })
      assert.are.equal(1, g.status)
      assert.truthy(g.err:find("LUA_INIT:1: in init", 1, true))
    end)

    it("-E ignoring LUA_INIT and LUA_PATH", function()
      spit(tmp .. "/mymod.lua", "return 1")
      local env = { LUA_INIT = "x = 'init'", LUA_PATH = tmp .. "/?.lua" }
      local g = assert_same({ "-E", "-e", "print(x, pcall(require, 'mymod'))" }, { env = env })
      assert.truthy(g.out:find("^nil\tfalse\t"))
    end)

    it("the arg table, negative indices included", function()
      spit(tmp .. "/s.lua", "print(...) for i = -4, 4 do print(i, arg[i]) end")
      local g = assert_same({ "-e", "x=1", tmp .. "/s.lua", "a", "b c" })
      assert.truthy(g.out:find("0\t" .. tmp .. "/s.lua\n", 1, true))
      assert.truthy(g.out:find("-3\tPROG\n", 1, true))
      assert_same({ "-e", "for i = -3, 3 do print(i, arg[i]) end" })
    end)

    it("a script from stdin through '-'", function()
      local g = assert_same({ "-", "x", "y" }, { stdin = "print('stdin', ...) print(arg[0], arg[-1])" })
      assert.are.equal("stdin\tx\ty\n-\tPROG\n", g.out)
      g = assert_same({}, { stdin = "print('plain stdin')" })
      assert.are.equal("plain stdin\n", g.out)
    end)

    it("'--' ending the options", function()
      spit(tmp .. "/s.lua", "print(arg[-1], ...)")
      local g = assert_same({ "--", tmp .. "/s.lua", "-e", "x" })
      assert.are.equal("--\t-e\tx\n", g.out)
      g = assert_same({ "--", "-x" })  -- a script named -x
      assert.are.equal(1, g.status)
    end)

    it("a script that errors: status 1, message and traceback", function()
      spit(tmp .. "/bad.lua", "local function f() error('boom') end\nf()\n")
      local g = assert_same({ tmp .. "/bad.lua" })
      assert.are.equal(1, g.status)
      assert.are.equal("PROG: " .. tmp .. "/bad.lua:1: boom\nstack traceback:",
                       g.err:match("^[^\n]*\n[^\n]*"))
      assert_same({ "-e", "error({})" })
      assert_same({ "-e", "error(setmetatable({}, {__tostring = function() return 'obj' end}))" })
      assert_same({ "-e", "x = = 1" })
      assert_same({ tmp .. "/missing.lua" })
    end)

    it("SIGINT during a call: 'interrupted!' with a traceback, status 1", function()
      for _, prog in ipairs({ BIN, LUA }) do
        local sh = prog .. " -e 'while true do end' 2>" .. q(tmp .. "/err") ..
                   " & pid=$!; sleep 0.3; kill -INT $pid; wait $pid; echo $?"
        local p = assert(io.popen(sh, "r"))
        local status = tonumber(p:read("a"):match("%d+"))
        p:close()
        assert.are.equal(1, status)
        local err = slurp(tmp .. "/err")
        assert.truthy(err:find(": interrupted!\nstack traceback:", 1, false), err)
      end
    end)

    it("os.exit statuses", function()
      assert.are.equal(3, assert_same({ "-e", "os.exit(3)" }).status)
      assert.are.equal(1, assert_same({ "-e", "os.exit(false)" }).status)
    end)

    it("warnings with -W", function()
      local g = assert_same({ "-W", "-e", "warn('hello')" })
      assert.truthy(g.err:find("hello", 1, true))
      g = assert_same({ "-e", "warn('hello')" })
      assert.are.equal("", g.err)
    end)

    it("bad usage: message and status", function()
      for _, args in ipairs({ { "-x" }, { "-e" }, { "-l" }, { "-vx" }, { "--bogus" }, { "-e", "-v" } }) do
        local g = assert_same(args)   -- the whole usage too: gpulua's options are in --help
        assert.are.equal(1, g.status)
      end
      local g = run(BIN, { "-x" })
      assert.are.equal(BIN .. ": unrecognized option '-x'\nusage: " .. BIN .. " [options] [script [args]]",
                       g.err:match("^[^\n]*\n[^\n]*"))
      assert.truthy(run(BIN, { "-e" }).err:find("'-e' needs argument", 1, true))
    end)

    it("the REPL on stdin: bare expressions print, statements continue", function()
      local input = "1+1\nfor i = 1, 2 do\nprint(i * 10)\nend\n'a', nil, 3\n=7\nerror('oops')\n" ..
                    "_PROMPT = 'P> '\nlocal t = {\n1 }\n"
      local opts = { stdin = input, env = { HOME = tmp } }
      local g, l = both({ "-i" }, opts)
      assert.are.equal(0, g.status)
      -- gpulua's own banner line is for terminals only
      assert.are.equal(l.out, g.out)
      assert.truthy(g.out:find("\n2\n", 1, true))
      assert.truthy(g.out:find("\n10\n20\n", 1, true))
      assert.truthy(g.out:find("\na\tnil\t3\n", 1, true))
      assert.truthy(g.out:find("P> ", 1, true))
      assert.are.equal(l.err, g.err)
      assert.truthy(g.err:find("^stdin:1: oops"))
    end)

    it("the REPL after a script, with -i", function()
      spit(tmp .. "/s.lua", "x = 5")
      local g = run(BIN, { "-i", tmp .. "/s.lua" }, { stdin = "x * 2\n", env = { HOME = tmp } })
      assert.are.equal(0, g.status)
      assert.truthy(g.out:find("\n10\n", 1, true))
    end)
  end)

  describe("REPL history", function()
    it("is appended to ~/.gpulua_history", function()
      run(BIN, { "-i" }, { stdin = "x = 1\n", env = { HOME = tmp } })
      run(BIN, { "-i" }, { stdin = "1 + 2\n", env = { HOME = tmp } })
      assert.are.equal("x = 1\n1 + 2\n", slurp(tmp .. "/.gpulua_history"))
    end)

    it("is skipped without HOME, and an unwritable one is ignored", function()
      local g = run(BIN, { "-i" }, { stdin = "1 + 2\n", unset = { "HOME" } })
      assert.are.equal(0, g.status)
      assert.truthy(g.out:find("\n3\n", 1, true))
      g = run(BIN, { "-i" }, { stdin = "1 + 2\n", env = { HOME = tmp .. "/does/not/exist" } })
      assert.are.equal(0, g.status)
      assert.truthy(g.out:find("\n3\n", 1, true))
      assert.are.equal("", g.err)
    end)
  end)

  describe("gpu module", function()
    it("is the global gpu and require 'gpu'", function()
      local g = run(BIN, { "-e", "assert(gpu == require('gpu')); assert(package.loaded.gpu == gpu)" })
      assert.are.equal("", g.err)
      assert.are.equal(0, g.status)
    end)

    it("is opened under -E too", function()
      assert.are.equal(0, run(BIN, { "-E", "-e", "assert(type(gpu) == 'table')" }).status)
    end)

    it("starts without loading CUDA or BLAS", function()
      local g = run(BIN, { "-e", [[
        for l in io.lines("/proc/self/maps") do
          if l:find("libcuda", 1, true) or l:find("openblas", 1, true) or l:find("cublas", 1, true) then
            print(l)
          end
        end]] })
      assert.are.equal(0, g.status)
      assert.are.equal("", g.out)
    end)
  end)

  describe("extras", function()
    it("--version prints gpulua <version> (Lua 5.4.x)", function()
      local v = run(BIN, { "-e", "io.write(gpu.version)" }).out
      assert.truthy(#v > 0)
      local g = run(BIN, { "--version" })
      assert.are.equal(0, g.status)
      assert.truthy(g.out:match("^gpulua %S+ %(Lua 5%.4%.%d+%)\n$"), g.out)
      assert.are.equal("gpulua " .. v .. " ", g.out:sub(1, #v + 8))
    end)

    it("-v adds no gpulua line (Lua's test suite wants the banner then the -e output)", function()
      local g = run(BIN, { "-v", "-e", "print'hello'" })
      assert.truthy(g.out:find("^Lua 5%.4%.%d+  Copyright [^\n]*PUC%-Rio\nhello\n$"), g.out)
    end)

    it("--device cpu and --device=cpu work", function()
      local g = run(BIN, { "--device", "cpu", "-e", "print(gpu.device())" })
      assert.are.equal("", g.err)
      assert.are.equal(0, g.status)
      assert.are.equal("cpu\n", g.out)
      g = run(BIN, { "--device=cpu", "-e", "print(gpu.device())" })
      assert.are.equal(0, g.status)
      assert.are.equal("cpu\n", g.out)
    end)

    it("--device applies before the script runs", function()
      spit(tmp .. "/s.lua", "print(gpu.device(), ...)")
      local g = run(BIN, { "--device", "cpu", tmp .. "/s.lua", "--device", "x" })
      assert.are.equal(0, g.status)
      assert.are.equal("cpu\t--device\tx\n", g.out)
    end)

    it("--device bogus fails with status 1 and a message", function()
      local g = run(BIN, { "--device", "bogus", "-e", "print('ran')" })
      assert.are.equal(1, g.status)
      assert.are.equal("", g.out)
      assert.truthy(g.err:find("^" .. BIN_PAT .. ": "), g.err)
      g = run(BIN, { "--device" })
      assert.are.equal(1, g.status)
      assert.truthy(g.err:find("'--device' needs argument", 1, true))
    end)

    it("--check passes on this machine and reports each device", function()
      local g = run(BIN, { "--check" })
      assert.are.equal("", g.err)
      assert.are.equal(0, g.status, g.out)
      assert.truthy(g.out:find("cpu", 1, true))
      assert.truthy(g.out:find("ok\n", 1, true))
      assert.falsy(g.out:find("FAILED", 1, true))
    end)

    it("--check fails when a device's self-test fails", function()
      local g = run(BIN, { "-e", [[
        gpu.array = function() error("broken") end
        local ok = require("gpu.check")()
        os.exit(ok and 0 or 1)]] })
      assert.are.equal(1, g.status, g.out .. g.err)
      assert.truthy(g.out:find("FAILED: ", 1, true))
      -- and through the option: LUA_INIT runs first
      g = run(BIN, { "--check" }, { env = { LUA_INIT = "gpu.zeros = function() error('broken') end" } })
      assert.are.equal(1, g.status, g.out .. g.err)
      assert.truthy(g.out:find("FAILED: .*broken"))
    end)
  end)
end)
