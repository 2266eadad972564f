-- The REPL's additions (lua/gpu/repl.lua, lua/gpu/help.lua, src/host/gpulua.c): Tab
-- completion, pretty printing, help, reports shown once, 0-d arrays. First the Lua
-- functions (both hosts), then gpulua's prompt on a pseudo-terminal (tools/pty.c types
-- the keys, Tab included) as a person at a terminal sees it.
local gpu = require "gpu"
local repl = require "gpu.repl"
local help = require "gpu.help"

local function has(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

describe("gpu.repl.candidates", function()
  it("completes gpu's fields, nested tables and the Lua parts not loaded yet", function()
    local env = { gpu = gpu }   -- under lua5.4 gpu is no global
    assert.are.same({ "gpu.random" }, repl.candidates("gpu.rando", env))
    assert.is_true(has(repl.candidates("gpu.n", env), "gpu.nn"))
    assert.is_true(has(repl.candidates("gpu.nn.Lin", env), "gpu.nn.Linear"))
  end)

  it("completes globals and keywords", function()
    local env = { print = print, printf = 1, pairs = pairs }
    assert.are.same({ "print", "printf" }, repl.candidates("pri", env))
    assert.are.same({ "while" }, repl.candidates("whi", env))
    assert.are.same({ "pairs" }, repl.candidates("pa", env))
  end)

  it("completes an array's methods after : and its properties after .", function()
    local env = { x = gpu.array({ 1, 2 }) }
    local m = repl.candidates("x:ma", env)
    assert.is_true(has(m, "x:matmul") and has(m, "x:max"))
    assert.is_false(has(repl.candidates("x:sh", env), "x:shape"))   -- a property is no method
    assert.is_true(has(repl.candidates("x.sh", env), "x.shape"))
    assert.are.same({ "x.T" }, repl.candidates("x.T", env))
    assert.is_true(has(repl.candidates("x.", env), "x.dtype"))
  end)

  it("follows __index while it is a table, and never calls anything", function()
    local calls = 0
    local base = { inherited = 1 }
    local obj = setmetatable({ own = 1 }, { __index = base })
    local lazy = setmetatable({}, { __index = function() calls = calls + 1 return 1 end })
    local env = { obj = obj, lazy = lazy }
    assert.are.same({ "obj.inherited", "obj.own" }, repl.candidates("obj.", env))
    assert.are.same({}, repl.candidates("lazy.", env))
    assert.are.same({}, repl.candidates("lazy.a.b", env))
    assert.are.equal(0, calls)
  end)

  it("after : lists only functions; nothing for what is not a name", function()
    local env = { t = { f = function() end, n = 1 }, s = "str" }
    env.t.__call = print
    assert.are.same({ "t:f" }, repl.candidates("t:", env))    -- no metamethods unless asked
    assert.are.same({ "t:__call" }, repl.candidates("t:_", env))
    assert.is_true(has(repl.candidates("s:up", env), "s:upper"))
    assert.is_true(has(repl.candidates("io.stdout:wr", { io = io }), "io.stdout:write"))
    assert.are.same({}, repl.candidates("nothere.x", env))
    assert.are.same({}, repl.candidates("1+", env))
  end)
end)

describe("gpu.repl.pretty", function()
  it("prints tables with the sequence first, sorted keys and quoted strings", function()
    assert.are.equal('{1, 2, a = 1, b = {2, 3}, ["end"] = true, ["not id"] = "x\\ny"}',
      repl.pretty({ 1, 2, b = { 2, 3 }, a = 1, ["not id"] = "x\ny", ["end"] = true }))
    assert.are.equal("{}", repl.pretty({}))
    assert.are.equal("{[1.5] = 1, [10] = 2}", repl.pretty({ [10] = 2, [1.5] = 1 }))
  end)

  it("marks cycles, and limits depth and items", function()
    local t = { 1 }
    t.self = t
    assert.are.equal("{1, self = <cycle>}", repl.pretty(t))
    assert.are.equal("{{{{...}}}}", repl.pretty({ { { { { 1 } } } } }))
    local big = {}
    for i = 1, repl.pretty_items + 5 do big[i] = 0 end
    local s = repl.pretty(big)
    assert.truthy(s:find("0,\n  ...\n}$"), s)
  end)

  it("prints strings, numbers, arrays and __tostring values as tostring does", function()
    for _, v in ipairs({ "a\nb", 1, 1.0, -0.0, 1e300, math.huge, true }) do
      assert.are.equal(tostring(v), repl.pretty(v))
    end
    local x = gpu.array({ 1, 2 })
    assert.are.equal(tostring(x), repl.pretty(x))
    local r = setmetatable({}, { __tostring = function() return "report" end })
    assert.are.equal("report", repl.pretty(r))
  end)

  it("lays a long table out one entry per line", function()
    local s = repl.pretty(gpu.memory())
    assert.truthy(s:match("^{\n  allocated = %d+,\n"), s)
    assert.truthy(repl.pretty({ shape = { 2, 3 } }) == "{shape = {2, 3}}")
    assert.are.equal("{\n  gpu.array([[0., 0.],\n             [0., 0.]], dtype=float32, device=cpu)\n}",
      repl.pretty({ gpu.zeros(2, 2) }))   -- an array's rows stay aligned inside a table
  end)
end)

describe("gpu.repl.print", function()
  it("leaves out a report printed during the evaluation, once", function()
    local out = {}
    local saved = _G.print
    _G.print = function(...) out[#out + 1] = table.concat({ ... }, "\t") end
    local ok, err = pcall(function()
      repl.print(repl.printed("text"), 2)
      repl.print("text")
    end)
    _G.print = saved
    assert(ok, err)
    assert.are.same({ "2", "text" }, out)
  end)
end)

describe("gpu.help", function()
  it("finds doc/API.md's entry by value and by name", function()
    assert.truthy(help.text(gpu.matmul):find("gpu.matmul(a, b)", 1, true))
    assert.truthy(help.text("gpu.matmul"):find("NumPy semantics", 1, true))
    assert.truthy(help.text("nn.Linear"):find("nn.Linear(in, out", 1, true))
    assert.truthy(help.text("Linear"):find("nn.Linear(in, out", 1, true))
    assert.truthy(help.text(gpu.nn.Linear):find("nn.Linear(in, out", 1, true))
    assert.truthy(help.text():find("Sections", 1, true))
    local nn = help.text(gpu.nn)    -- a part: its heading, first paragraph and entries
    assert.truthy(nn:find("^Neural networks %(gpu.nn%)\n"), nn)
    assert.truthy(nn:find("nn.Linear, nn.Dense", 1, true), nn)
    assert.truthy(help.text("optim"):find("^Optimizers %(gpu.optim%)\n"))
  end)

  it("names the nearest entries for an unknown name", function()
    local text, err = help.text("nn.Linaer")
    assert.is_nil(text)
    assert.truthy(err:find("no entry for 'nn.Linaer'", 1, true), err)
    assert.truthy(err:find("nn.Linear", 1, true), err)
    local _, err2 = help.text(print)
    assert.truthy(err2:find("is not a function or table of the gpu module", 1, true), err2)
  end)

  it("is gpu.help", function()
    assert.are.equal(help, gpu.help)
  end)
end)

describe("0-d arrays", function()
  it("print as gpu.array(...), never as a bare number", function()
    assert.are.equal("gpu.array(3., dtype=float32, device=cpu)", tostring(gpu.array(3.0)))
    assert.are.equal("gpu.array(3, dtype=int64, device=cpu)", tostring(gpu.array(3, { dtype = "int64" })))
    assert.are.equal("gpu.array(0.25, dtype=float64, device=cpu)", tostring(gpu.array(0.25, { dtype = "float64" })))
    assert.are.equal("gpu.array(true, dtype=bool, device=cpu)", tostring(gpu.array(true)))
  end)
end)

-- ---- gpulua's prompt on a pseudo-terminal --------------------------------------------------

local BIN = os.getenv("GPULUA_BIN") or "./gpulua"
local PTY = "build/tools/pty"

-- types `keys` into gpulua's REPL on a terminal; answers what the terminal showed (\r\n
-- as \n)
local function session(keys)
  local f = assert(io.open(PTY, "rb"), PTY .. " is missing: make build/tools/pty")
  f:close()
  local home = os.tmpname()
  os.remove(home)
  assert(os.execute("mkdir -p " .. home))
  local input = home .. "/keys"
  f = assert(io.open(input, "wb"))
  f:write(keys)
  f:close()
  local p = assert(io.popen(("env -u LUA_INIT -u LUA_INIT_5_4 HOME=%s TERM=dumb INPUTRC=/dev/null %s %s < %s 2>&1")
    :format(home, PTY, BIN, input)))
  local out = p:read("a")
  p:close()
  os.execute("rm -rf " .. home)
  return (out:gsub("\r\n", "\n"))
end

local function count(s, sub)
  local n, at = 0, 1
  while true do
    local i = s:find(sub, at, true)
    if not i then return n end
    n, at = n + 1, i + #sub
  end
end

describe("gpulua's REPL on a terminal", function()
  if os.getenv("GPULUA_HOST") == "lua5.4" then return end   -- the stock host has no gpulua prompt

  it("completes gpu.rando, x:ma, a global and a keyword with Tab", function()
    local out = session("x = gpu.array({1, 2})\ny = gpu.rando\t\nprint(y == gpu.random)\n" ..
                        "x:ma\t\t\21\nz = x:matm\t(x)\nwhi\t true do break end\npri\t('hi')\n")
    assert.truthy(out:find("> y = gpu.random\n> print(y == gpu.random)\ntrue\n", 1, true), out)
    assert.truthy(out:find("x:matmul", 1, true) and out:find("x:max ", 1, true), out)   -- the list after Tab Tab
    assert.truthy(out:find("> z = x:matmul(x)\n", 1, true), out)
    assert.truthy(out:find("> while true do break end\n", 1, true), out)
    assert.truthy(out:find("> print('hi')\nhi\n", 1, true), out)
  end)

  it("pretty-prints tables, with cycles marked, and 0-d arrays unmistakably", function()
    local out = session('t = {1, 2, a = {b = "x"}}; t.self = t\nt\ngpu.array(3)\ngpu.array(3, {dtype = "int64"})\n1, "s", {2, 3}\n')
    assert.truthy(out:find('\n{1, 2, a = {b = "x"}, self = <cycle>}\n', 1, true), out)
    assert.truthy(out:find("\ngpu.array(3., dtype=float32, device=cpu)\n", 1, true), out)
    assert.truthy(out:find("\ngpu.array(3, dtype=int64, device=cpu)\n", 1, true), out)
    assert.truthy(out:find("\n1\ts\t{2, 3}\n", 1, true), out)
  end)

  it("has help, and shows a printed report once", function()
    local out = session('help(gpu.matmul)\nhelp("nn.Linear")\nhelp("nn.Linaer")\n' ..
                        "m = gpu.nn.Sequential{gpu.nn.Linear(2, 3)}\nm:summary({2})\n")
    assert.truthy(out:find("\ngpu.matmul(a, b) (both)\n  NumPy semantics", 1, true), out)
    assert.truthy(out:find("\nnn.Linear(in, out", 1, true), out)
    assert.truthy(out:find("no entry for 'nn.Linaer' in doc/API.md; nearest: nn.Linear", 1, true), out)
    assert.are.equal(1, count(out, "Total params: 9"), out)
  end)
end)
