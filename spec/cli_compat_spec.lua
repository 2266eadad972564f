-- gpulua as `lua`, byte for byte: each invocation runs under $GPULUA_BIN and under the
-- stock lua5.4 with the same argv[0] (bash's `exec -a`), the same stdin, environment and
-- files, and stdout, stderr and the exit status must be identical.  The cases follow what
-- Lua 5.4's own testes/main.lua checks of the stand-alone interpreter (its -v check among
-- them), plus the REPL fed from a pipe.  Then gpulua's own additions, which appear only
-- where lua5.4 has nothing to say: -h/--help, --version, the banner line at a terminal.

local h = require "spec.helper"
local slurp = h.slurp
local spit = h.spit
local BIN = os.getenv("GPULUA_BIN") or "./gpulua"
local LUA = os.getenv("BUSTED_LUA") or "lua5.4"

local function q(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local function abspath(p)
  if p:sub(1, 1) == "/" or not p:find("/", 1, true) then return p end
  local h = assert(io.popen("pwd"))
  local dir = h:read("l")
  h:close()
  return dir .. "/" .. p
end

local GBIN = abspath(BIN)
local tmp

-- Run `prog` as argv[0] = "lua" inside tmp (so relative file names are the same for
-- both), with a clean LUA_* environment plus opts.env, stdin from opts.stdin.
local function run(prog, args, opts)
  opts = opts or {}
  local parts = { "cd", q(tmp), "&&", "env", "-u LUA_INIT", "-u LUA_INIT_5_4", "-u LUA_PATH",
                  "-u LUA_PATH_5_4", "-u LUA_CPATH", "-u LUA_CPATH_5_4", "HOME=" .. q(tmp) }
  for k, v in pairs(opts.env or {}) do parts[#parts + 1] = k .. "=" .. q(v) end
  parts[#parts + 1] = "bash -c 'exec -a lua \"$0\" \"$@\"'"
  parts[#parts + 1] = q(prog)
  for _, a in ipairs(args) do parts[#parts + 1] = q(a) end
  spit(tmp .. "/stdin", opts.stdin or "")
  local cmd = table.concat(parts, " ") .. " <stdin >out 2>err; echo $?"
  local p = assert(io.popen(cmd, "r"))
  local status = tonumber(p:read("a"):match("(%d+)%s*$"))
  p:close()
  return { status = status, out = slurp(tmp .. "/out"), err = slurp(tmp .. "/err") }
end

-- both interpreters, identical results; answers gpulua's
local function same(args, opts)
  local l = run(LUA, args, opts)
  local g = run(GBIN, args, opts)
  local what = table.concat(args, " ")
  assert.are.equal(l.out, g.out, "stdout of: lua " .. what)
  assert.are.equal(l.err, g.err, "stderr of: lua " .. what)
  assert.are.equal(l.status, g.status, "status of: lua " .. what)
  return g
end

describe("gpulua and lua5.4, byte for byte", function()
  before_each(function()
    local p = assert(io.popen("mktemp -d"))
    tmp = p:read("l")
    p:close()
  end)

  after_each(function()
    os.execute("rm -rf " .. q(tmp))
  end)

  it("-v, and -v before -e (testes/main.lua: banner then hello)", function()
    same({ "-v" })
    local g = same({ "-v", "-e", "print'hello'" })
    assert.truthy(g.out:find("PUC%-Rio\nhello"))
    same({ "-v", "-v" })
    same({ "-e", "print(1)", "-v" })
  end)

  it("stdin as a script: '-', no arguments, '-' with arguments", function()
    same({ "-" }, { stdin = "" })
    assert.are.equal("1\tnil\n", same({ "-" }, { stdin = "  print(\n1, a\n)\n" }).out)
    assert.are.equal("10\n2\n", same({}, { stdin = "print(10)\nprint(2)\n" }).out)
    assert.are.equal("-h\n", same({ "-", "-h" }, { stdin = "print(arg[1])" }).out)
    same({ "-", "a", "b" }, { stdin = "print(...) print(arg[0], arg[-1], #arg)" })
  end)

  it("the REPL from a pipe (-i): prompts, results, errors, continuation lines", function()
    local input = "1+1\nfor i = 1, 2 do\nprint(i * 10)\nend\n'a', nil, 3\n=7\nerror('oops')\n" ..
                  "x = = 1\nerror({})\n_PROMPT = 'P> '\nlocal t = {\n1 }\nreturn\n"
    local g = same({ "-i" }, { stdin = input })
    assert.truthy(g.out:find("^Lua 5%.4%.%d+  Copyright"))
    assert.falsy(g.out:find("gpulua", 1, true))
    same({ "-e", "_PROMPT='' _PROMPT2=''", "-i" }, { stdin = "(6*2-6) -- ===\na =\n10\nprint(a)\na" })
    same({ "-e", "_PROMPT='' _PROMPT2=''", "-i" }, { stdin = "a = [[b\nc\nd\ne]]\n=a" })
    same({ "-e", "local C = 0; _PROMPT = setmetatable({}, {__tostring = function() C = C + 1; return C end})",
           "-i" }, { stdin = " --\na = 2\n" })
    same({ "-e", "print=nil", "-i" }, { stdin = "10\n" })   -- error calling 'print'
    spit(tmp .. "/s.lua", "x = 5")
    same({ "-i", "s.lua", "arg1" }, { stdin = "x * 2, ...\n" })
  end)

  it("debug.debug reading stdin", function()
    same({ "-e", "require'debug'.debug()" }, { stdin = "io.stderr:write(1000)\ncont\n" })
  end)

  it("files with a byte-order mark and a first-line comment, good and bad", function()
    for _, text in ipairs({ "\xEF\xBB\xBF", "\xEF\xBB\xBFprint(3)", "\xEF\xBB\xBF# comment!!\nprint(3)",
                            "\xEF", "\xEF\xBB", "\xEFprint(3)", "#comment without newline",
                            "#comment\n" .. string.dump(load("print(3)")) }) do
      spit(tmp .. "/prog.lua", text)
      same({ "prog.lua" })
    end
  end)

  it("LUA_PATH, LUA_CPATH, their _5_4 forms and ';;'", function()
    spit(tmp .. "/p.lua", "print(package.path) print(package.cpath)")
    same({ "p.lua" }, { env = { LUA_PATH = "x", LUA_CPATH = "xuxu" } })
    same({ "p.lua" }, { env = { LUA_PATH = "x", LUA_PATH_5_4 = "y", LUA_CPATH = "x", LUA_CPATH_5_4 = "yacc" } })
    for _, p in ipairs({ ";", ";;", "a;;b", ";;b", "a;;", "a;b;;c" }) do
      same({ "p.lua" }, { env = { LUA_PATH = p } })
    end
    same({ "-E", "p.lua" }, { env = { LUA_PATH = "xxx", LUA_CPATH = "xxx", LUA_INIT = "error(10)" } })
  end)

  it("LUA_INIT: code, @file, LUA_INIT_5_4 first, its errors, its view of arg", function()
    spit(tmp .. "/p.lua", "print(X)")
    same({ "p.lua", "3.2" }, { env = { LUA_INIT = "X=tonumber(arg[1])" } })
    same({ "p.lua" }, { env = { LUA_INIT_5_4 = "X=10", LUA_INIT = "X=3" } })
    spit(tmp .. "/i.lua", "x = x or 10; print(x); x = x + 1")
    same({ "i.lua" }, { env = { LUA_INIT = "@i.lua" } })
    same({}, { env = { LUA_INIT = "error('msg')" } })
    same({ "-e", "" }, { env = { LUA_INIT = "@missing.lua" } })
  end)

  it("-l in its forms, and -e/-l in order", function()
    spit(tmp .. "/m1.lua", "print(1); a=2; return {x=15}")
    spit(tmp .. "/m2.lua", "print(a); print(_G['m1'].x)")
    assert.are.equal("1\n2\n15\n2\n15\n",
      same({ "-l", "m1", "-lm2", "-lstring", "-l", "io", "m2.lua" }, { env = { LUA_PATH = "?.lua;;" } }).out)
    spit(tmp .. "/p.lua", "print(str.upper'alo alo', m.max(10, 20))")
    assert.are.equal("0.0\nALO ALO\t20\n", same({ "-l", "str=string", "-lm=math", "-e", "print(m.sin(0))", "p.lua" }).out)
    same({ "-l", "nosuchmod" })
    same({ "-lnosuchmod", "-e", "print(1)" })
    assert.are.equal("1\n3\n", same({ "-eprint(1)", "-ea=3", "-e", "print(a)" }).out)
  end)

  it("the arg table: negative indices, '--', many arguments, messing it up", function()
    spit(tmp .. "/a.lua", "for i = -4, #arg + 1 do print(i, arg[i]) end print(...)")
    same({ "-e ", "--", "a.lua", "a", "b", "c" })
    same({ "-W", "-E", "a.lua", "-e", "x" })
    local many = {}
    for i = 1, 30 do many[i] = "a" .. i end
    same({ "a.lua", table.unpack(many) })
    assert.are.equal("100\n", same({ "-e", "arg[1] = 100", "-" }, { stdin = "print(...)" }).out)
    same({ "-e", "arg = 1", "-" }, { stdin = "" })
    same({ "--", "-x" })
  end)

  it("bad options: message, usage and status", function()
    for _, args in ipairs({ { "-h" }, { "-h" .. "x" }, { "-x" }, { "---" }, { "--x" }, { "-Ex" }, { "-vv" }, { "-iv" },
                            { "-Wx" }, { "-e" }, { "-l" }, { "-e", "-v" }, { "-l", "-e", "x" },
                            { "-v", "-x" }, { "-e", "print(1)", "-x" } }) do
      local g = same(args)
      assert.are.equal(1, g.status)
    end
  end)

  it("errors: syntax, runtime with traceback, error objects, a missing script", function()
    same({ "-e", "a" })
    same({ "-e", "x = = 1" })
    same({ "-e", "error('boom')" })
    same({ "-e", "error({})" })
    same({ "-e", "error(setmetatable({}, {__tostring = function() return 'obj' end}))" })
    same({ "-e", "error(nil)" })
    spit(tmp .. "/bad.lua", "local function f() error('boom') end\nf()\n")
    same({ "bad.lua" })
    spit(tmp .. "/m.lua", "m = setmetatable({x = 0}, {__tostring = function(x)\n" ..
                          "  return tostring(debug.getinfo(4).currentline + x.x) end})\nerror(m)\n")
    same({ "m.lua" })
    same({ "missing.lua" })
  end)

  it("warnings: off by default, -W, control messages, errors in finalizers", function()
    same({}, { stdin = "io.stderr:write(1); warn[[XXX]]" })
    spit(tmp .. "/w.lua", 'warn("@allow") warn("@off", "XXX", "@off") warn("@off") warn("@on", "YYY", "@on")\n' ..
                          'warn("@off") warn("@on") warn("", "@on") warn("@on") warn("Z", "Z", "Z")\n')
    same({ "-W", "w.lua" })
    spit(tmp .. "/f.lua", 'warn("@allow")\nu1 = setmetatable({}, {__gc = function () error("XYZ") end})\n')
    same({ "-W", "f.lua" })
  end)

  it("os.exit, closing the state or not, and to-be-closed variables", function()
    for _, code in ipairs({ "os.exit(nil, true)", "os.exit(0, true)", "os.exit(true, true)", "os.exit(1, true)",
                            "os.exit(false, true)", "os.exit(3)", "os.exit(false)",
                            "local x <close> = setmetatable({}, {__close = function() print('Ok') end}) os.exit(true, true)" }) do
      spit(tmp .. "/x.lua", code)
      same({ "x.lua" })
    end
    spit(tmp .. "/o.lua", "io.output('o.txt'); io.write('alo')")
    same({ "o.lua" })
    assert.are.equal("alo", slurp(tmp .. "/o.txt"))
  end)
end)

describe("gpulua's own options", function()
  before_each(function()
    local p = assert(io.popen("mktemp -d"))
    tmp = p:read("l")
    p:close()
  end)

  after_each(function()
    os.execute("rm -rf " .. q(tmp))
  end)

  it("--help: lua's usage, gpulua's options, the environment, the docs; status 0", function()
    local lua_usage = run(LUA, { "-x" }).err:match("\n(.*)$")   -- after "lua: unrecognized option"
    local help = run(GBIN, { "--help" })
    assert.are.equal(0, help.status)
    assert.are.equal("", help.err)
    assert.are.equal(lua_usage, help.out:sub(1, #lua_usage))
    for _, word in ipairs({ "--device", "--check", "--version", "--help", "GPULUA_DEVICE", "GPULUA_SYNC",
                            "GPULUA_MEMORY_LIMIT", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "LUA_INIT",
                            "Documentation: man ", "doc/API.md" }) do
      assert.truthy(help.out:find(word, 1, true), word .. " missing from --help")
    end
    -- the help wins over the rest, as --version does
    local g = run(GBIN, { "-e", "print('ran')", "--help" })
    assert.are.equal(0, g.status)
    assert.falsy(g.out:find("ran", 1, true))
  end)

  it("every GPULUA_* variable the code reads (C getenv, Lua os.getenv) is in --help", function()
    local help = run(GBIN, { "--help" }).out
    local src = assert(io.popen([[grep -rhoE 'getenv\("[A-Z_0-9]+"' src lua 2>/dev/null]]))
    local seen = 0
    for name in src:read("a"):gmatch('getenv%("([A-Z_0-9]+)"') do
      if name:find("^GPULUA_") then
        seen = seen + 1
        assert.truthy(help:find(name, 1, true), name .. " missing from --help")
      end
    end
    src:close()
    assert.truthy(seen >= 3, "the getenv calls under src/ and lua/ were not found")
  end)

  it("--version prints gpulua's version and Lua's, status 0", function()
    local g = run(GBIN, { "--version" })
    assert.are.equal(0, g.status)
    assert.are.equal("", g.err)
    assert.truthy(g.out:match("^gpulua %d+%.%d+%.%d+ %(Lua 5%.4%.%d+%)\n$"), g.out)
  end)

  it("the banner names gpulua's version and device only at a terminal", function()
    local have_script = os.execute("command -v script >/dev/null 2>&1")
    if not have_script then return pending("no script(1) for a pseudo-terminal") end
    spit(tmp .. "/in", "os.exit(0)\n")
    local p = assert(io.popen("cd " .. q(tmp) .. " && HOME=" .. q(tmp) .. " timeout 20 script -qec " ..
                              q(GBIN) .. " /dev/null < in"))
    local out = p:read("a")
    p:close()
    local v = run(GBIN, { "-e", "io.write(gpu.version, ' ', gpu.device())" }).out
    local version, device = v:match("^(%S+) (%S+)$")
    assert.truthy(out:find("PUC-Rio\r\ngpulua " .. version .. ", new arrays on " .. device, 1, true), out)
    -- a pipe on either side: no gpulua line (checked byte for byte above for -i)
    assert.are.equal(run(LUA, { "-i" }).out, run(GBIN, { "-i" }).out)
  end)
end)
